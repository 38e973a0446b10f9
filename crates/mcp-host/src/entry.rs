//! What the host needs to run one server, whatever file it came from: how to reach it
//! ([`Connect`]), its settings ([`ServerEntry`]), or why it cannot be started ([`Unusable`]).

#[cfg(feature = "oauth")]
use std::sync::Arc;
use std::time::Duration;

#[cfg(feature = "http")]
use mcp_http::HttpConfig;
use mcp_protocol::ProtocolVersion;
#[cfg(feature = "stdio")]
use mcp_stdio::StdioConfig;

use crate::catalog::ToolFilter;
use crate::config::{
    DEFAULT_MAX_RESULT_BYTES, DEFAULT_PING_INTERVAL, DEFAULT_PING_TIMEOUT, DEFAULT_REQUEST_TIMEOUT,
};
#[cfg(feature = "oauth")]
use crate::oauth::OAuthHook;
use crate::permission::ServerRules;
use crate::status::{Phase, TransportKind};

/// How to reach one server: the transport's own configuration, secrets already resolved.
/// `Debug` shows no secret: the transports' configurations show variable and header names
/// without values, and the URL without user information or query (which may carry a key).
/// Each variant is there when its transport's feature is (`stdio`, `http`).
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum Connect {
    /// A local program over stdio.
    #[cfg(feature = "stdio")]
    Stdio(StdioConfig),
    /// A remote server over Streamable HTTP (or the legacy HTTP+SSE transport, as the config
    /// says).
    #[cfg(feature = "http")]
    Http(HttpConfig),
}

impl Connect {
    /// How it reaches the server, for the status view.
    fn kind(&self) -> TransportKind {
        match self {
            #[cfg(feature = "stdio")]
            Self::Stdio(_) => TransportKind::Stdio,
            #[cfg(feature = "http")]
            Self::Http(c) if c.protocol == mcp_http::HttpProtocol::LegacySse => TransportKind::Sse,
            #[cfg(feature = "http")]
            Self::Http(_) => TransportKind::Http,
            #[cfg(not(any(feature = "stdio", feature = "http")))]
            _ => match *self {},
        }
    }
}

/// Everything the host needs to run one server, whatever file it came from.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ServerEntry {
    /// The server id: `^[a-zA-Z0-9_-]{1,64}$`.
    pub id: String,
    /// Where it was configured (`project`, `global`), for the status view.
    pub source: String,
    /// How the host reaches it, for the status view.
    pub transport: TransportKind,
    /// A disabled server is listed with state `disabled` and never started.
    pub enabled: bool,
    /// How to connect; `Err` holds why the entry cannot be used (a missing secret, a project
    /// server the user has not trusted), and the server is listed in state `error` with it.
    pub connect: Result<Connect, Unusable>,
    /// How long a request (`initialize` included) waits for its answer; for a tool call, the
    /// idle timeout (progress restarts it, up to [`HostOptions::max_call_duration`](crate::HostOptions::max_call_duration)).
    pub request_timeout: Duration,
    /// Which tools to offer.
    pub filter: ToolFilter,
    /// The permission rules of this server's tools.
    pub rules: ServerRules,
    /// Ping the server after this much silence, so that one gone without a word (packets
    /// dropped, no reset) is found and reconnected to before the next call would hang on it;
    /// `None` never pings. The handshake era only: 2026-07-28 has no ping (there the TCP
    /// keepalive of `mcp-http`'s connections finds a dead stream).
    pub ping_interval: Option<Duration>,
    /// How long such a ping may go unanswered, with nothing else heard, before the connection
    /// counts as lost: calls in flight fail ([`CallError::Failed`](crate::CallError::Failed), saying the server stopped
    /// answering and for how long) and the server is reconnected with the usual backoff.
    pub ping_timeout: Duration,
    /// The largest result passed on, in bytes.
    pub max_result_bytes: usize,
    /// What the user should know about this entry from the start (a setting that was not
    /// taken as written); shown with the server's diagnostics.
    pub notes: Vec<String>,
    /// OAuth for an HTTP server: supplies `Authorization`, logs in on a 401, refreshes.
    #[cfg(feature = "oauth")]
    pub oauth: Option<Arc<OAuthHook>>,
    /// A protocol revision to speak instead of negotiating (the configuration's
    /// `protocol_version`): it is the only one offered and the only one accepted, for a
    /// server that mishandles negotiation or a test that must run one revision.
    pub protocol_version: Option<ProtocolVersion>,
    /// Offer the resource operations as tools when the server declares `resources`
    /// (`expose_resources`, on by default; see [`Operation`](crate::Operation)).
    pub expose_resources: bool,
    /// Offer the prompt operations as tools when the server declares `prompts`
    /// (`expose_prompts`, on by default).
    pub expose_prompts: bool,
    /// Run the tools that may run as tasks (`execution.taskSupport` `optional`) as tasks
    /// on every call (`optional_tools_as_tasks`, off by default), for a server whose
    /// optional ones are the long ones. A `required` one always runs as a task; an optional
    /// one also does when the caller waits longer than `request_timeout`.
    pub optional_tools_as_tasks: bool,
}

impl ServerEntry {
    /// An enabled server with the defaults: 30 s timeout, every tool, ask before each call,
    /// 1 MiB results; an HTTP server is pinged after 30 s of silence and given 10 s to answer,
    /// a stdio one is not pinged.
    pub fn new(id: impl Into<String>, connect: Connect) -> Self {
        let transport = connect.kind();
        Self::with(id.into(), transport, Ok(connect))
    }

    /// An entry with the defaults, whatever `connect` holds.
    fn with(id: String, transport: TransportKind, connect: Result<Connect, Unusable>) -> Self {
        Self {
            id,
            source: "api".to_owned(),
            transport,
            enabled: true,
            connect,
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
            ping_interval: (transport != TransportKind::Stdio).then_some(DEFAULT_PING_INTERVAL),
            ping_timeout: DEFAULT_PING_TIMEOUT,
            filter: ToolFilter::default(),
            rules: ServerRules::default(),
            max_result_bytes: DEFAULT_MAX_RESULT_BYTES,
            notes: Vec::new(),
            #[cfg(feature = "oauth")]
            oauth: None,
            protocol_version: None,
            expose_resources: true,
            expose_prompts: true,
            optional_tools_as_tasks: false,
        }
    }
}

impl ServerEntry {
    /// A server the configuration names but that cannot be started (`why`: a missing secret,
    /// an invalid entry, a project server not trusted): listed in state `error` with that
    /// message and `phase`, never connected.
    pub fn unusable(
        id: impl Into<String>,
        transport: TransportKind,
        phase: Phase,
        why: String,
    ) -> Self {
        let why = Unusable {
            phase,
            message: why,
        };
        Self::with(id.into(), transport, Err(why))
    }
}

/// Why an entry cannot be started at all.
#[derive(Debug, Clone)]
pub struct Unusable {
    /// [`Phase::Configuration`] or [`Phase::Trust`].
    pub phase: Phase,
    /// What is wrong and what to do, for a person; it names no secret value.
    pub message: String,
}
