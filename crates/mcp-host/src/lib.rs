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
//! Each transport and OAuth can be left out, so that a consumer compiles only what it uses: an
//! editor that runs local stdio servers needs no HTTP, TLS or OAuth. All are on by default;
//! `full` turns on every one.
//!
//! - `stdio`: local servers started as child processes (`mcp-stdio`): [`Connect::Stdio`].
//! - `http`: remote servers over Streamable HTTP or HTTP+SSE, plain `http` only (`mcp-http`'s
//!   client): [`Connect::Http`].
//! - `tls` (implies `http`): `https` URLs, through rustls.
//! - `oauth` (implies `tls`): OAuth 2.1 for HTTP servers: [`oauth`], [`auth_store`], logins;
//!   and [`inbound`], access tokens checked for a server that serves (the gateway).
//!   Without it, [`oauth::OAuthContext`] is a type with no values, so that
//!   [`setup::entries`] keeps one signature in every build (pass `None`).
//! - `keyring`: the OS keyring ([`keyring`]): `{"keyring": "NAME"}` references and OAuth
//!   tokens kept there; the kernel keyring on Linux, the Keychain on macOS, the Credential
//!   Manager on Windows.
//! - `secret-service` (implies `keyring`): the freedesktop Secret Service on Linux, over zbus.
//!
//! A configuration file is shared between builds, so it is read in full whatever was left
//! out: a server whose transport (or `https`, or `oauth` settings) needs a feature this build
//! does not have is listed in state `error` at [`Phase::Configuration`], with a message that
//! names the server and the feature; nothing panics.
//!
//! # Stability
//!
//! Pre-1.0: the API may change between minor versions.

mod admission;
#[cfg(feature = "oauth")]
pub mod auth_store;
mod bound;
mod call;
pub mod catalog;
pub mod config;
#[cfg(feature = "oauth")]
mod device_login;
mod elicit;
mod entry;
mod eras;
mod error;
mod events;
pub mod export;
mod features;
mod fs;
mod host;
#[cfg(feature = "oauth")]
pub mod inbound;
#[cfg(feature = "keyring")]
pub mod keyring;
#[cfg(feature = "oauth")]
mod loopback;
#[cfg(feature = "oauth")]
pub mod oauth;
/// OAuth, left out of this build (the `oauth` feature).
#[cfg(not(feature = "oauth"))]
pub mod oauth {
    /// OAuth was left out of this build (the `oauth` feature), so no context can exist: the
    /// only value of an `Option<&OAuthContext>` is `None`. It exists so that
    /// [`setup::entries`](crate::setup::entries) has one signature in every build.
    #[derive(Debug)]
    pub enum OAuthContext {}
}
pub mod operation;
mod options;
pub mod permission;
#[cfg(feature = "oauth")]
mod reach;
mod redact;
pub mod redis;
#[cfg(feature = "oauth")]
mod refresh;
mod server_requests;
pub mod setup;
mod shared;
pub mod skills;
mod status;
mod supervisor;
mod tasks;
mod transport;
pub mod trust;

// The public interface is:
pub use bound::bound_result;
pub use call::{CallOptions, Relayed, ToolOutput, error_result};
pub use catalog::{Catalog, ExposedTool, ModelTool};
pub use config::{ConfiguredServer, DEFAULT_MAX_RESULT_BYTES, LoadedConfig};
pub use elicit::AcceptDefaults;
pub use entry::{Connect, ServerEntry, Unusable};
pub use error::{CallError, Cause};
pub use events::{HostEvent, Subscription};
pub use host::Host;
pub use operation::{ExposedOperation, Operation};
pub use options::{HostOptions, ServerRequestHandler};
pub use permission::{CallKind, Decision, Policy, Prompter};
pub use status::{Phase, ServerState, ServerStatus, TransportKind};
pub use tasks::TaskRecord;
