//! The host side of MCP: it reads which servers the user configured, connects to all of them
//! at once, keeps each one's state, turns their tools into a catalogue an agent can offer a
//! model under stable names, asks a permission policy before every call, and bounds what comes
//! back. A server is untrusted: one that hangs, crashes or lies harms only itself.
//!
//! # Entry points
//!
//! - [`Host`]: [`start`](Host::start)ed with [`ServerEntry`]s and [`HostOptions`], which
//!   [`setup`] makes from the files [`config`] reads. It calls tools ([`call`](Host::call) by
//!   exposed name, [`call_tool`](Host::call_tool), and [`relay_call`](Host::relay_call) for a
//!   proxy relaying its own client's call), reads resources and prompts, subscribes to
//!   resources in either era, and reports what servers say through
//!   [`subscribe`](Host::subscribe).
//! - [`Catalog`]: the tools of the ready servers under stable exposed names, and the
//!   resource and prompt [`Operation`]s offered beside them as tools, so that a model reads a
//!   resource or gets a prompt by a tool call whose result stays in its history.
//! - [`Policy`] and [`Prompter`]: the permission hook, asked before every call.
//!
//! # Server processes
//!
//! A stdio server never outlives the host that started it, by default. [`Host::shutdown`]
//! ends each one politely; dropping the [`Host`] (its last clone) kills each server's process
//! group at once, from the dropping thread, with no task or runtime needing to run; and should
//! the process end without either (a panic, a signal it does not catch, SIGKILL,
//! the OOM killer), the keeper that `mcp-stdio` puts at the head of each group kills the group
//! when its pipe from this process closes. A host that exits on a signal should await
//! `mcp_stdio::termination_signal` (or call `mcp_stdio::kill_all_servers`) and exit with
//! `128 + n`, as `mcp-host` does. `mcp-host ps` lists the server processes of every host of
//! the user, library hosts included.
//!
//! # Cancel safety
//!
//! Dropping a call's future cancels the call: the server is sent `notifications/cancelled`
//! and its late answer is dropped.
//!
//! # Optional features
//!
//! None yet; `full` is accepted for uniformity.
//!
//! # Stability
//!
//! Pre-1.0: the API may change between minor versions.

pub mod auth_store;
mod bound;
pub mod catalog;
pub mod config;
mod device_login;
mod elicit;
mod error;
pub mod export;
mod fs;
mod host;
mod loopback;
pub mod oauth;
pub mod operation;
pub mod permission;
mod reach;
mod redact;
mod refresh;
pub mod setup;
pub mod trust;

// The public interface is:
pub use bound::bound_result;
pub use catalog::{Catalog, ExposedTool, ModelTool};
pub use config::{DEFAULT_MAX_RESULT_BYTES, LoadedConfig, ServerConfig};
pub use elicit::AcceptDefaults;
pub use error::CallError;
pub use host::{
    CallOptions, Connect, Host, HostEvent, HostOptions, Phase, Relayed, RequestHandler,
    ServerEntry, ServerState, ServerStatus, Subscription, ToolOutput, Unusable, error_result,
};
pub use operation::{ExposedOperation, Operation};
pub use permission::{CallKind, Decision, Policy, Prompter};
