//! An MCP server in front of many: `mcp-host serve --gateway <file>`.
//!
//! A model that sees every tool of every server pays for all of their definitions in every
//! request. The gateway serves MCP itself, over stdio or Streamable HTTP, and holds the
//! upstream servers through one `mcp-host` [`Host`](mcp_host::Host), with its connection
//! management, permission rules and OAuth. Three modes:
//!
//! - **category** (seed 004): two tools, `get-category-tools` and `call-category-tool`; the
//!   first one's description lists the categories, and a category's tool definitions are
//!   loaded only when the model asks for them;
//! - **passthrough**: the upstream tools, resources, prompts, completion, logging and
//!   notifications as they are (namespaced when there are several upstreams), with the
//!   upstreams' own requests passed to the client that can answer them;
//! - **meta** (seed 003): tools about the servers, for agents that cannot load tools
//!   dynamically.
//!
//! [`file`](mod@file) reads the gateway file and generates its JSON Schema; [`budget`] measures what
//! each way of exposing the tools costs a model.
//!
//! # Optional features
//!
//! None yet; `full` is accepted for uniformity.
//!
//! # Stability
//!
//! Pre-1.0: the API may change between minor versions.

mod args;
pub mod budget;
mod category;
pub mod file;
mod meta;
mod passthrough;
mod server;

// The public interface is:
pub use file::{FileError, GatewayFile, Loaded, Mode, load, schema};
pub use server::{DEFAULT_CACHE_TTL, Gateway, GatewayOptions};
