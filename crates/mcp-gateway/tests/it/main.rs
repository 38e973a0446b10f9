//! The gateway in front of testkit upstream servers, over stdio and Streamable HTTP, talked to
//! by our own client session as a client in front of it would.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod category;
mod env;
mod extensions;
mod isolation;
mod live;
mod meta;
mod observe;
mod passthrough;
mod promises;
mod restarts;
mod skills;
mod stateless_clients;
mod support;
mod tasks;
mod traces;
mod withdrawn;
