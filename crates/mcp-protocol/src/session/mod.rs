//! The session state machines: the client side a host runs for each server, and the server
//! side a gateway runs for each client. Both share the request bookkeeping in `pending`.
//!
//! Neither reads the clock: every call that depends on time takes `now`.

mod client;
mod input;
mod pending;
mod server;
mod stateless_server;
mod task_progress;

#[cfg(test)]
mod tests;

pub use client::{ClientConfig, ClientEvent, ClientSession, ServerInfo, decode_result};
pub use pending::RequestOptions;
pub use server::{ClientInfo, Reply, RequestHandler, ServerConfig, ServerEvent, ServerSession};
pub use stateless_server::missing_capability_error;
