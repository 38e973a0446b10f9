//! Where each server stands, as the status view and `--json` show it: its [`ServerState`],
//! the [`Phase`] at which it last failed, and the whole [`ServerStatus`]. A leaf module: the
//! errors, the events and the facade all speak of states, and none of them is needed here.

use std::time::SystemTime;

use mcp_protocol::Era;
use mcp_protocol::schema::Implementation;

use crate::operation::Operation;

/// The step at which a server failed, so that a consumer can act on a failure (an exit code, a
/// hint, a retry) without reading its message, which is for a person.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Phase {
    /// The entry cannot be used as written: a missing secret, a transport without settings,
    /// an entry the file got wrong. Retrying does not help; editing the configuration does.
    Configuration,
    /// The entry comes from a project file the user has not approved, so it is not run.
    Trust,
    /// The host's connection limit was reached before this server's turn (it waits; see
    /// [`ServerStatus::waiting`]).
    Limit,
    /// Starting the process or opening the connection, the handshake, or authorization.
    Connect,
    /// Listing the tools after the handshake.
    Tools,
    /// The connection was lost after it had been made.
    Connection,
    /// The user logged out; the server waits for a login.
    Authorization,
}

impl Phase {
    /// The name used in status output and `--json`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Configuration => "configuration",
            Self::Trust => "trust",
            Self::Limit => "limit",
            Self::Connect => "connect",
            Self::Tools => "tools",
            Self::Connection => "connection",
            Self::Authorization => "authorization",
        }
    }
}

impl std::fmt::Display for Phase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where a server stands (seed 000 §5.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ServerState {
    /// Configured off; never started.
    Disabled,
    /// Starting, initializing, or listing its tools (also between reconnection attempts).
    Connecting,
    /// The server wants OAuth authorization that has not been given yet.
    AuthRequired,
    /// Connected, with its tools in the catalogue.
    Ready,
    /// Failed; `last_error` says why.
    Error,
}

impl ServerState {
    /// The name used in status output and `--json`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Disabled => "disabled",
            Self::Connecting => "connecting",
            Self::AuthRequired => "auth_required",
            Self::Ready => "ready",
            Self::Error => "error",
        }
    }
}

impl std::fmt::Display for ServerState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One server as the `/mcp` view shows it. Holds no secret: errors are built without values.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ServerStatus {
    /// The server id.
    pub id: String,
    /// How the host reaches it.
    pub transport: TransportKind,
    /// `project`, `global`, or wherever the entry came from.
    pub source: String,
    /// Whether the configuration enables it.
    pub enabled: bool,
    /// Its state.
    pub state: ServerState,
    /// How many of its tools are in the catalogue.
    pub tools: usize,
    /// The resource and prompt operations offered for it as tools, while it is ready.
    pub operations: Vec<Operation>,
    /// The latest failure, if any (kept after a recovery until the next one).
    pub last_error: Option<String>,
    /// The step at which `last_error` happened.
    pub last_error_phase: Option<Phase>,
    /// When the last successful connection was made.
    pub last_connected_at: Option<SystemTime>,
    /// The negotiated protocol version, while connected.
    pub protocol_version: Option<String>,
    /// The era spoken, while connected: `handshake` (2025-11-25 and before: `initialize`,
    /// sessions) or `stateless` (2026-07-28: `server/discover`, a `_meta` envelope on every
    /// request).
    pub era: Option<Era>,
    /// How the era was chosen, for a person (which probe answered what, or that the
    /// configuration pins it). Contains server text: clean it before showing it.
    pub negotiation: Option<String>,
    /// The server's name and version as it reported them (untrusted), while connected.
    pub server_info: Option<Implementation>,
    /// The transport's session id (Streamable HTTP's `Mcp-Session-Id`), while connected: to
    /// match this connection with the server's logs. It lets whoever holds it use the session,
    /// so views show only its start.
    pub session_id: Option<String>,
    /// What the catalogue left out or changed, and other things the user should know.
    pub diagnostics: Vec<String>,
    /// Reconnection attempts since the connection was lost.
    pub reconnect_attempts: u32,
    /// When the supervisor connects again on its own, while a server in `error` waits for its
    /// next reconnection attempt (after a lost connection, or a failed attempt after one);
    /// `None` when nothing will be tried. A consumer may wait for such a server (it is coming
    /// back) rather than report it down: the gateway does, for a call that arrives meanwhile.
    pub reconnect_at: Option<SystemTime>,
    /// Why an enabled server in `connecting` has not started yet, while it waits for its
    /// turn: "waiting: connection limit 10 reached". Past the host's limit
    /// ([`HostOptions::max_connections`](crate::HostOptions::max_connections)) servers wait
    /// in configuration order and start as others stop, rather than fail.
    pub waiting: Option<String>,
    /// When the OAuth access token expires, if the server uses OAuth and the time is known.
    pub token_expires_at: Option<SystemTime>,
}

/// How the host reaches a server, without the details (command, URL) that may hold a
/// secret: what a status view shows and a consumer branches on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TransportKind {
    /// A local program on stdin/stdout.
    Stdio,
    /// Streamable HTTP (with the spec's fallback to HTTP+SSE).
    Http,
    /// The deprecated HTTP+SSE transport only.
    Sse,
    /// A configuration entry too broken to say which (it is listed in state `error`).
    Unknown,
}

impl TransportKind {
    /// `stdio`, `http` or `sse`, as configuration files and the `/mcp` view spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Stdio => "stdio",
            Self::Http => "http",
            Self::Sse => "sse",
            Self::Unknown => "unknown",
        }
    }
}

impl std::fmt::Display for TransportKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
