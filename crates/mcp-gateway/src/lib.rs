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
//! The gateway serves both eras of MCP to its clients, whatever era each upstream speaks: in
//! passthrough mode a stateless upstream's `input_required` results reach a stateless client
//! as they came, and a handshake client is asked on its call's stream instead. The fourth
//! pair is bridged too: a handshake upstream's mid-call request for a stateless client
//! suspends the upstream call, the client is answered `input_required`, and its retry's
//! answers resume the call (at most 256 suspended calls, each for at most 300 s). Category and
//! meta modes do not bridge it yet: there such a request is refused, saying why.
//!
//! Tasks are the gateway's own in every mode: a client's task-augmented call runs as a task of
//! the gateway's whose work is the upstream call, and `tasks/*` are answered from the
//! gateway's store under its own ids, each handshake client seeing only its session's tasks.
//!
//! Each client sees only its own traffic: an upstream's request or log entry that came on a
//! call's Streamable HTTP response stream (or that call's `input_required`) goes to that call's
//! client only; when nothing says whose it is and calls of several clients wait on the
//! upstream, a request is refused and a log entry dropped.
//!
//! [`file`](mod@file) reads the gateway file and generates its JSON Schema; [`budget`] measures what
//! each way of exposing the tools costs a model.
//!
//! Each request it serves, and each request it sends upstream for it, is an OpenTelemetry
//! span, exported over OTLP when [`GatewayOptions::traces`] says where
//! ([`TraceExport::from_env`] reads the standard `OTEL_*` variables); the client's trace
//! context in `_meta` is continued, and passed on upstream.
//!
//! # Cancel safety
//!
//! A client that cancels its request cancels the upstream call it waits on: the handler's
//! future is dropped, and with it the host's call, so the upstream is sent
//! `notifications/cancelled`. Dropping [`Gateway::serve_http`]'s future stops serving but not
//! the upstream servers: keep a clone of [`Gateway::host`] to shut them down, as
//! `mcp-host serve` does.
//!
//! # Optional features
//!
//! None yet; `full` is accepted for uniformity. `__otlp_receiver` is private: it compiles the
//! trace tests that need the OTLP receiver `cargo xtask interop` installs.
//!
//! # Stability
//!
//! Pre-1.0: the API may change between minor versions.

mod args;
mod auth;
pub mod budget;
mod cache;
mod call_log;
mod cluster;
pub mod file;
mod glob;
mod metrics;
mod mode;
mod reload;
mod reply;
mod routes;
mod rules;
mod server;
mod shared;
pub mod store;
mod suspend;
mod sync;
mod tasks;
mod tool_name;
mod trace;
mod upstream_state;
mod upstreams;

// The public interface is:
pub use auth::{AuthBlock, IntrospectionBlock};
pub use cache::DEFAULT_CACHE_TTL;
pub use call_log::open_log_file;
pub use cluster::{ClusterBlock, DEFAULT_MAX_SESSION_AGE};
pub use file::{FileError, GatewayFile, Loaded, Mode, Ready, ReadyRule, load, schema, upstreams};
pub use reload::Reloaded;
pub use rules::{Effect, Per, RateLimit, Rule, When};
pub use server::{Gateway, GatewayOptions};
pub use trace::{TraceExport, TraceStats};
