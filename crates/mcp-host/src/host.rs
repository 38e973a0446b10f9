//! The connection manager (seed 000 §6, seed 003): every enabled server connects at once and
//! is then watched by its own task, which keeps its state, its tools and its connection, and
//! reconnects with a capped backoff when the connection is lost. One server's trouble never
//! reaches another: each has its own task, timeouts and state, and the catalogue is rebuilt
//! from whatever is ready.

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::{Duration, SystemTime};

#[cfg(feature = "http")]
use mcp_http::HttpConfig;
use mcp_protocol::schema::{
    CallToolParams, CallToolResult, ClientCapabilities, ContentBlock, GetPromptParams,
    GetPromptResult, Implementation, ListRootsResult, ListenParams, ProgressParams, Prompt,
    ReadResourceResult, RequestMethod, Resource, ResourceTemplate, ResourceUriParams, Root,
    RootsCapability, ServerNotification, ServerRequest, SubscriptionFilter, is_input_required,
    method, method::CallTool,
};
use mcp_protocol::{
    ClientConfig, Era, ErrorObject, JsonObject, ProtocolVersion, RawJson, RequestOptions, Secrets,
    ServerInfo, decode_result,
};
use mcp_session::{Client, Incoming};
#[cfg(feature = "stdio")]
use mcp_stdio::StdioConfig;
use tokio::sync::{Semaphore, broadcast, mpsc};

use crate::bound::bound_result;
use crate::catalog::{Catalog, CatalogLimits, Diagnostic, ExposedTool, ModelTool, ToolFilter};
use crate::config::{
    DEFAULT_MAX_CONNECTIONS, DEFAULT_MAX_RESULT_BYTES, DEFAULT_PING_INTERVAL, DEFAULT_PING_TIMEOUT,
    DEFAULT_REQUEST_TIMEOUT,
};
use crate::error::CallError;
#[cfg(feature = "oauth")]
use crate::oauth::OAuthHook;
use crate::operation::{ExposedOperation, Operation, server_operations};
use crate::permission::{CallKind, CallRequest, Decision, Policy, Prompter, ServerRules, combine};
use crate::redact::Redactor;

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
    /// `stdio`, `http` or `sse`, as configuration files and the status view spell it.
    fn kind(&self) -> &'static str {
        match self {
            #[cfg(feature = "stdio")]
            Self::Stdio(_) => "stdio",
            #[cfg(feature = "http")]
            Self::Http(c) if c.protocol == mcp_http::HttpProtocol::LegacySse => "sse",
            #[cfg(feature = "http")]
            Self::Http(_) => "http",
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
    /// `stdio`, `http` or `sse`, for the status view.
    pub transport: String,
    /// A disabled server is listed with state `disabled` and never started.
    pub enabled: bool,
    /// How to connect; `Err` holds why the entry cannot be used (a missing secret, a project
    /// server the user has not trusted), and the server is listed in state `error` with it.
    pub connect: Result<Connect, Unusable>,
    /// How long a request (`initialize` included) waits for its answer; for a tool call, the
    /// idle timeout (progress restarts it, up to [`HostOptions::max_call_duration`]).
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
    /// counts as lost: calls in flight fail ([`CallError::Failed`], saying the server stopped
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
    /// (`expose_resources`, on by default; see [`Operation`]).
    pub expose_resources: bool,
    /// Offer the prompt operations as tools when the server declares `prompts`
    /// (`expose_prompts`, on by default).
    pub expose_prompts: bool,
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
    fn with(id: String, transport: &str, connect: Result<Connect, Unusable>) -> Self {
        Self {
            id,
            source: "api".to_owned(),
            transport: transport.to_owned(),
            enabled: true,
            connect,
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
            ping_interval: (transport != "stdio").then_some(DEFAULT_PING_INTERVAL),
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
        }
    }
}

impl ServerEntry {
    /// A server the configuration names but that cannot be started (`why`: a missing secret,
    /// an invalid entry, a project server not trusted): listed in state `error` with that
    /// message and `phase`, never connected.
    pub fn unusable(id: impl Into<String>, transport: &str, phase: Phase, why: String) -> Self {
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
    /// The host's connection limit was reached before this server's turn.
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
    /// `stdio`, `http` or `sse`.
    pub transport: String,
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
    pub era: Option<&'static str>,
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
    /// When the OAuth access token expires, if the server uses OAuth and the time is known.
    pub token_expires_at: Option<SystemTime>,
}

/// Answers the server requests a consumer chose to support (sampling, elicitation). Declared
/// to servers only when registered; without one, the session refuses these requests itself.
pub trait RequestHandler: Send + Sync + 'static {
    /// The capabilities to declare (`sampling`, `elicitation`, and `roots` when the host has
    /// no roots of its own: configured roots win).
    fn capabilities(&self) -> ClientCapabilities;

    /// Answers `request` from `server`: the raw result, or a JSON-RPC error.
    fn handle<'a>(
        &'a self,
        server: &'a str,
        request: ServerRequest,
    ) -> Pin<Box<dyn Future<Output = Result<RawJson, ErrorObject>> + Send + 'a>>;
}

/// How the host behaves: limits, backoff, who decides about calls.
#[non_exhaustive]
pub struct HostOptions {
    /// Sent as `clientInfo`.
    pub client_info: Implementation,
    /// At most this many servers connected at once (seed 003: 10); the rest are in `error`.
    pub max_connections: usize,
    /// Bounds on tool metadata.
    pub catalog_limits: CatalogLimits,
    /// The first wait before reconnecting; it doubles up to `reconnect_max`.
    pub reconnect_initial: Duration,
    /// The longest wait between reconnection attempts.
    pub reconnect_max: Duration,
    /// How many reconnection attempts in a row before the server stays in `error`.
    pub reconnect_attempts: u32,
    /// The hard cap of a call, whatever progress says.
    pub max_call_duration: Duration,
    /// Decides about every call.
    pub policy: Arc<dyn Policy>,
    /// Asks a person when the policy says so; without one, such calls are denied.
    pub prompter: Option<Arc<dyn Prompter>>,
    /// The roots offered to servers; `None` declares no `roots` capability of the host's own
    /// (a [`RequestHandler`] may declare and answer it).
    pub roots: Option<Vec<Root>>,
    /// Sampling and elicitation, when the consumer supports them.
    pub requests: Option<Arc<dyn RequestHandler>>,
}

impl std::fmt::Debug for HostOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostOptions")
            .field("client_info", &self.client_info.name)
            .field("max_connections", &self.max_connections)
            .field("prompter", &self.prompter.is_some())
            .field("roots", &self.roots.as_ref().map(Vec::len))
            .field("requests", &self.requests.is_some())
            .finish_non_exhaustive()
    }
}

impl HostOptions {
    /// Options with the defaults: 10 connections, reconnect after 0.5 s doubling to 30 s for
    /// 10 attempts, 10-minute call cap, every call asked about (and denied, with no
    /// prompter), no roots, no sampling or elicitation.
    pub fn new(client_info: Implementation, policy: Arc<dyn Policy>) -> Self {
        Self {
            client_info,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            catalog_limits: CatalogLimits::default(),
            reconnect_initial: Duration::from_millis(500),
            reconnect_max: Duration::from_secs(30),
            reconnect_attempts: 10,
            max_call_duration: Duration::from_secs(600),
            policy,
            prompter: None,
            roots: None,
            requests: None,
        }
    }
}

/// Something that happened on a server, for subscribers ([`Host::subscribe`]).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum HostEvent {
    /// The server moved to `state`.
    State {
        /// The server id.
        server: String,
        /// Its new state.
        state: ServerState,
    },
    /// The server's tools in the catalogue changed (connected, lost, refreshed).
    Catalog {
        /// The server id.
        server: String,
    },
    /// A notification from the server (log message, list change, progress, resource update).
    Notification {
        /// The server id.
        server: String,
        /// The notification.
        notification: ServerNotification,
    },
    /// Something the server did wrong that did not end the connection.
    Diagnostic {
        /// The server id.
        server: String,
        /// What happened.
        message: String,
    },
}

impl HostEvent {
    /// The server it is about.
    pub fn server(&self) -> &str {
        match self {
            Self::State { server, .. }
            | Self::Catalog { server }
            | Self::Notification { server, .. }
            | Self::Diagnostic { server, .. } => server,
        }
    }

    /// Its kind, for filtering: `state`, `catalog`, `diagnostic`, or the notification's
    /// method without its `notifications/` prefix (`tools/list_changed`, `message`, …).
    pub fn kind(&self) -> &str {
        match self {
            Self::State { .. } => "state",
            Self::Catalog { .. } => "catalog",
            Self::Diagnostic { .. } => "diagnostic",
            Self::Notification { notification, .. } => {
                let method = notification.method();
                method.strip_prefix("notifications/").unwrap_or(method)
            }
        }
    }
}

/// A subscriber's stream of events, filtered by server and kind (seed 003's notification
/// dispatcher).
#[derive(Debug)]
pub struct Subscription {
    rx: broadcast::Receiver<HostEvent>,
    servers: Option<BTreeSet<String>>,
    kinds: Option<BTreeSet<String>>,
    missed: u64,
}

impl Subscription {
    /// The next matching event; `None` once the host is gone. A subscriber that falls behind
    /// skips what it missed and can tell from [`missed`](Self::missed).
    pub async fn recv(&mut self) -> Option<HostEvent> {
        loop {
            match self.rx.recv().await {
                Ok(event) => {
                    let server_ok = self
                        .servers
                        .as_ref()
                        .is_none_or(|s| s.contains(event.server()));
                    let kind_ok = self.kinds.as_ref().is_none_or(|k| k.contains(event.kind()));
                    if server_ok && kind_ok {
                        return Some(event);
                    }
                }
                Err(broadcast::error::RecvError::Lagged(n)) => self.missed += n,
                Err(broadcast::error::RecvError::Closed) => return None,
            }
        }
    }

    /// How many events were skipped because this subscriber was too slow.
    pub fn missed(&self) -> u64 {
        self.missed
    }
}

/// The result of a call that reached the server and came back: a tool result, possibly a
/// tool error (`isError`), bounded.
///
/// It is the server's data as the server sent it, not redacted: a tool's answer may hold
/// what the user asked it for (a value that matches a configured secret, or a short one that
/// is a common word), redaction would corrupt structured content and encoded blobs, and a
/// server that means to pass a secret on can encode it. The host's own texts about a server
/// (its errors, which [`error_result`] turns into a tool error, its status, its logs) hide
/// the server's secrets.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ToolOutput {
    /// The result, bounded; cuts are marked inside it.
    pub result: CallToolResult,
    /// Whether the host cut anything.
    pub truncated: bool,
}

impl ToolOutput {
    /// Whether the tool reported a failure (`isError: true`): an answer for the model, not a
    /// failure of the host.
    pub fn is_tool_error(&self) -> bool {
        self.result.is_tool_error()
    }
}

/// Options of one call.
#[derive(Debug, Default)]
#[non_exhaustive]
pub struct CallOptions {
    /// Receives the server's progress notifications (and asks the server for them).
    pub progress: Option<mpsc::UnboundedSender<ProgressParams>>,
    /// The idle timeout instead of the server's `request_timeout`.
    pub timeout: Option<Duration>,
    /// For [`Host::relay_call`]: hand a stateless server's `input_required` result back as
    /// it came, for the client we relay for to answer, instead of answering its input
    /// requests through the host's [`RequestHandler`]. [`Host::call_tool`] ignores it.
    pub pass_input_required: bool,
}

/// What a relayed tool call ([`Host::relay_call`]) came back with.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Relayed {
    /// The call finished: the tool's result, bounded like any call's.
    Complete(ToolOutput),
    /// The server needs input first (the stateless era's multi round-trip): its result as it
    /// came, `inputRequests` and `requestState` untouched, for the relayed client to answer
    /// and call again with `inputResponses` and the same `requestState`.
    InputRequired(RawJson),
}

impl CallOptions {
    /// Hands `input_required` results back (see
    /// [`pass_input_required`](Self::pass_input_required)).
    pub fn passing_input_required(mut self) -> Self {
        self.pass_input_required = true;
        self
    }

    /// Waits at most `timeout` without an answer or progress, instead of the server's
    /// `request_timeout`.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Delivers the server's progress notifications to `progress`.
    pub fn progress(mut self, progress: mpsc::UnboundedSender<ProgressParams>) -> Self {
        self.progress = Some(progress);
        self
    }
}

/// The host: the servers, their connections, the catalogue, the policy. Cheap to clone; every
/// clone is the same host.
///
/// Dropping the last clone without [`shutdown`](Self::shutdown) kills every stdio server's
/// process group at once (SIGKILL, from the dropping thread: no task needs to run, the runtime
/// need not shut down), ends every connection and stops every reconnection.
#[derive(Clone, Debug)]
pub struct Host {
    inner: Arc<Inner>,
    /// Shared by the clones only, never by the host's own tasks (which hold `inner`): its drop
    /// is the drop of the last clone.
    _owner: Arc<Owner>,
}

/// Ends the servers when the last [`Host`] clone is dropped (see [`Owner::drop`]).
struct Owner(Arc<Inner>);

impl std::fmt::Debug for Owner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Owner")
    }
}

impl Drop for Owner {
    /// Every supervisor and connection task holds `Inner`, so nothing would end by itself:
    /// each slot is stopped (no reconnection), its supervisor aborted (a server still being
    /// started is killed as the aborted task drops its half-made client), and its client
    /// killed now, whoever else holds a handle of it: the group is gone before this returns.
    fn drop(&mut self) {
        let slots = std::mem::take(&mut *lock(&self.0.slots));
        for slot in slots.into_values() {
            slot.stop.store(true, Ordering::SeqCst);
            if let Some(task) = lock(&slot.task).take() {
                task.abort();
            }
            let client = {
                let mut s = lock(&slot.state);
                s.tools.clear();
                s.operations.clear();
                s.info = None;
                s.client.take()
            };
            if let Some(client) = client {
                client.kill();
            }
        }
    }
}

struct Inner {
    options: HostOptions,
    session: ClientConfig,
    slots: Mutex<BTreeMap<String, Arc<Slot>>>,
    catalog: RwLock<Arc<Catalog>>,
    /// Serializes catalogue rebuilds so that a slow one never overwrites a newer one.
    rebuild: Mutex<()>,
    permits: Arc<Semaphore>,
    events: broadcast::Sender<HostEvent>,
    /// What the connections to every server share (the HTTP era cache).
    transports: crate::transport::Shared,
}

impl std::fmt::Debug for Inner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Host")
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

/// One configured server and its supervisor.
struct Slot {
    entry: ServerEntry,
    /// Keeps this server's secrets out of every text the host forms or keeps about it.
    redactor: Redactor,
    state: Mutex<SlotState>,
    stop: AtomicBool,
    task: Mutex<Option<tokio::task::JoinHandle<()>>>,
    /// The resource URIs the host's consumer subscribed to on this server. They outlive a
    /// connection: a new one subscribes to them again (handshake era) or listens for them
    /// (stateless era).
    resources: Mutex<BTreeSet<String>>,
    /// Wakes the stateless era's listen task when `resources` changed, to listen again with
    /// the new filter.
    relisten: tokio::sync::Notify,
}

#[derive(Default)]
struct SlotState {
    state: Option<ServerState>,
    last_error: Option<(Phase, String)>,
    last_connected_at: Option<SystemTime>,
    client: Option<Client>,
    info: Option<ServerInfo>,
    tools: Vec<ExposedTool>,
    /// Its operations, fixed by the capabilities it declared at connect.
    operations: Vec<ExposedOperation>,
    diagnostics: Vec<String>,
    reconnect_attempts: u32,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// How many events wait for a slow subscriber before it starts missing them.
const EVENT_BUFFER: usize = 1024;
/// How many diagnostics a server keeps for its status.
const DIAGNOSTICS_KEPT: usize = 32;

impl Host {
    /// A host with no servers yet.
    pub fn new(options: HostOptions) -> Self {
        let mut session = ClientConfig::new(options.client_info.clone());
        let mut capabilities = options
            .requests
            .as_ref()
            .map(|r| r.capabilities())
            .unwrap_or_default();
        // Configured roots are the host's own answer; without them, a request handler that
        // declares `roots` (a gateway passing its client's on) answers `roots/list`.
        if options.roots.is_some() {
            let mut roots = RootsCapability::new();
            roots.list_changed = Some(false);
            capabilities.roots = Some(roots);
        }
        session.capabilities = capabilities;
        let (events, _) = broadcast::channel(EVENT_BUFFER);
        let inner = Arc::new(Inner {
            permits: Arc::new(Semaphore::new(options.max_connections)),
            options,
            session,
            slots: Mutex::new(BTreeMap::new()),
            catalog: RwLock::new(Arc::new(Catalog::default())),
            rebuild: Mutex::new(()),
            events,
            transports: crate::transport::Shared::default(),
        });
        Self {
            _owner: Arc::new(Owner(Arc::clone(&inner))),
            inner,
        }
    }

    /// Starts every enabled server in `entries` at once and returns when each has settled
    /// (ready, failed, or waiting for authorization). Servers already running under the same
    /// id are stopped first. A server that hangs fails after its `request_timeout`.
    pub async fn start(&self, entries: Vec<ServerEntry>) {
        let mut settled = Vec::new();
        for entry in entries {
            let old = lock(&self.inner.slots).remove(&entry.id);
            if let Some(old) = old {
                stop_slot(&old).await;
            }
            let state = SlotState {
                diagnostics: entry.notes.clone(),
                ..SlotState::default()
            };
            let redactor = Redactor::new(&entry);
            let slot = Arc::new(Slot {
                redactor,
                entry,
                state: Mutex::new(state),
                stop: AtomicBool::new(false),
                task: Mutex::new(None),
                resources: Mutex::new(BTreeSet::new()),
                relisten: tokio::sync::Notify::new(),
            });
            lock(&self.inner.slots).insert(slot.entry.id.clone(), slot.clone());
            if !slot.entry.enabled {
                self.inner.set_state(&slot, ServerState::Disabled, None);
                continue;
            }
            self.inner.set_state(&slot, ServerState::Connecting, None);
            let (ready_tx, ready_rx) = tokio::sync::oneshot::channel();
            let task = tokio::spawn(supervise(self.inner.clone(), slot.clone(), ready_tx));
            *lock(&slot.task) = Some(task);
            settled.push(ready_rx);
        }
        for ready in settled {
            let _ = ready.await;
        }
    }

    /// Applies a new configuration (seed 003's reload): servers no longer listed are stopped
    /// and removed, every listed one is started again with its new entry. Returns when all
    /// have settled.
    pub async fn reload(&self, entries: Vec<ServerEntry>) {
        let keep: BTreeSet<String> = entries.iter().map(|e| e.id.clone()).collect();
        let gone: Vec<String> = lock(&self.inner.slots)
            .keys()
            .filter(|id| !keep.contains(*id))
            .cloned()
            .collect();
        for id in gone {
            self.remove(&id).await;
        }
        self.start(entries).await;
    }

    /// Stops every server and ends their connections (stdio servers are ended politely, then
    /// killed).
    pub async fn shutdown(&self) {
        let slots: Vec<_> = std::mem::take(&mut *lock(&self.inner.slots))
            .into_values()
            .collect();
        // Every server ends at once: a slow one does not hold the others.
        let mut stops = tokio::task::JoinSet::new();
        for slot in slots {
            stops.spawn(async move { stop_slot(&slot).await });
        }
        while stops.join_next().await.is_some() {}
        self.inner.rebuild_catalog();
    }

    /// Stops one server and removes it; `false` if there was none with that id.
    pub async fn remove(&self, id: &str) -> bool {
        let slot = lock(&self.inner.slots).remove(id);
        match slot {
            Some(slot) => {
                stop_slot(&slot).await;
                self.inner.catalog_changed(id);
                true
            }
            None => false,
        }
    }

    /// Logs in to an OAuth-protected server now (through the OAuth context's user agent) and
    /// reconnects it.
    pub async fn login(&self, id: &str) -> Result<(), CallError> {
        let slot = self.inner.slot(id)?;
        let Some(oauth) = slot.oauth() else {
            return Err(CallError::NoOAuth {
                server: id.to_owned(),
            });
        };
        oauth.login().await.map_err(|e| {
            self.inner.shown(CallError::Failed {
                server: id.to_owned(),
                what: "login".to_owned(),
                message: e.to_string(),
            })
        })?;
        self.restart(id).await
    }

    /// Forgets an OAuth server's tokens, here and in the token store, and disconnects it.
    pub async fn logout(&self, id: &str) -> Result<(), CallError> {
        let slot = self.inner.slot(id)?;
        let Some(oauth) = slot.oauth() else {
            return Err(CallError::NoOAuth {
                server: id.to_owned(),
            });
        };
        oauth.logout().await.map_err(|message| CallError::Failed {
            server: id.to_owned(),
            what: "logout".to_owned(),
            message,
        })?;
        stop_slot(&slot).await;
        self.inner.set_state(
            &slot,
            ServerState::AuthRequired,
            Some((Phase::Authorization, "logged out".to_owned())),
        );
        self.inner.catalog_changed(id);
        Ok(())
    }

    /// Stops and starts one server again with the same entry, and waits until it settles.
    pub async fn restart(&self, id: &str) -> Result<(), CallError> {
        let slot = self.inner.slot(id)?;
        self.start(vec![slot.entry.clone()]).await;
        Ok(())
    }

    /// Every server's status, ordered by id; never waits for a server (it answers while calls
    /// run).
    pub fn status(&self) -> Vec<ServerStatus> {
        let slots: Vec<_> = lock(&self.inner.slots).values().cloned().collect();
        slots.iter().map(|s| s.status()).collect()
    }

    /// One server's status.
    pub fn server_status(&self, id: &str) -> Option<ServerStatus> {
        let slot = lock(&self.inner.slots).get(id).cloned();
        slot.map(|s| s.status())
    }

    /// The catalogue as it is now. It is replaced whole when a server's tools change, so a
    /// caller holding it sees one consistent set; the next call to `catalog` sees the update.
    pub fn catalog(&self) -> Arc<Catalog> {
        self.inner
            .catalog
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Events from the servers named in `servers` (all when `None`) of the kinds in `kinds`
    /// (all when `None`; see [`HostEvent::kind`]).
    pub fn subscribe(&self, servers: Option<&[&str]>, kinds: Option<&[&str]>) -> Subscription {
        let set = |names: &[&str]| names.iter().map(|s| (*s).to_owned()).collect();
        Subscription {
            rx: self.inner.events.subscribe(),
            servers: servers.map(set),
            kinds: kinds.map(set),
            missed: 0,
        }
    }

    /// The values never to be shown about `server` (its configured and inherited secrets,
    /// its current tokens), for a consumer that quotes what the server said through
    /// [`client`](Self::client), as a proxy passing errors on does: the host's own errors,
    /// statuses and logs already hide them. Empty for an unknown server.
    pub fn secrets(&self, server: &str) -> Secrets {
        let slot = lock(&self.inner.slots).get(server).cloned();
        slot.map(|s| s.redactor.secrets()).unwrap_or_default()
    }

    /// The connected client of a ready server, for operations this API does not cover.
    pub fn client(&self, server: &str) -> Result<Client, CallError> {
        self.inner.ready_client(server)
    }

    /// Calls the tool or operation behind an exposed name (see [`Catalog::model_tools`]):
    /// what an agent does with each tool call its model makes.
    pub async fn call(
        &self,
        exposed: &str,
        arguments: JsonObject,
        options: CallOptions,
    ) -> Result<ToolOutput, CallError> {
        let target = {
            let catalog = self.catalog();
            match catalog.lookup(exposed) {
                Some(ModelTool::Tool(t)) => (t.server.clone(), Err(t.tool.clone())),
                Some(ModelTool::Operation(o)) => (o.server.clone(), Ok(o.operation)),
                None => {
                    return Err(CallError::UnknownTool {
                        name: exposed.to_owned(),
                    });
                }
            }
        };
        match target {
            (server, Ok(operation)) => {
                self.call_operation(&server, operation, arguments, options)
                    .await
            }
            (server, Err(tool)) => self.call_tool(&server, &tool, arguments, options).await,
        }
    }

    /// Runs a resource or prompt operation on `server` as a tool call: the arguments checked
    /// against its schema (a wrong one is a tool error for the model), the permission check
    /// with [`CallKind::Operation`], the server's timeout, cancellation when the future is
    /// dropped, and the result bounded like any tool's. Only an operation the catalogue offers
    /// for the server runs (its capability declared at connect, its setting on).
    pub async fn call_operation(
        &self,
        server: &str,
        operation: Operation,
        arguments: JsonObject,
        options: CallOptions,
    ) -> Result<ToolOutput, CallError> {
        let slot = self.inner.slot(server)?;
        let method = operation.method();
        let offered = lock(&slot.state)
            .operations
            .iter()
            .any(|o| o.operation == operation);
        if !offered {
            self.inner.ready_client(server)?;
            return Err(CallError::Failed {
                server: server.to_owned(),
                what: method.to_owned(),
                message: "not offered: the server did not declare the capability, or its expose_resources or expose_prompts setting is off".to_owned(),
            });
        }
        let args = match crate::operation::parse_args(operation, &arguments) {
            Ok(args) => args,
            Err(why) => {
                let mut result = CallToolResult::new(vec![ContentBlock::text(format!(
                    "{method} was not sent: {why}"
                ))]);
                result.is_error = Some(true);
                return Ok(ToolOutput {
                    result,
                    truncated: false,
                });
            }
        };
        let request = CallRequest {
            server,
            tool: method,
            arguments: &arguments,
            kind: CallKind::Operation(operation),
        };
        self.inner.permit(&slot, &request).await?;
        let client = self.inner.ready_client(server)?;
        let idle = options.timeout.unwrap_or(slot.entry.request_timeout);
        let request_options = RequestOptions::DEFAULT
            .timeout(self.inner.options.max_call_duration.max(idle))
            .idle_timeout(idle);
        let mut result = crate::operation::run(&client, operation, args, request_options)
            .await
            .map_err(|e| self.inner.session_error(server, method, e))?;
        let truncated = bound_result(&mut result, slot.entry.max_result_bytes);
        Ok(ToolOutput { result, truncated })
    }

    /// Calls `tool` on `server` after the permission check. A denied call never reaches the
    /// server. Dropping the future cancels the call: the server is sent
    /// `notifications/cancelled` and its late answer is dropped.
    pub async fn call_tool(
        &self,
        server: &str,
        tool: &str,
        arguments: JsonObject,
        mut options: CallOptions,
    ) -> Result<ToolOutput, CallError> {
        let mut params = CallToolParams::new(tool.to_owned());
        params.arguments = Some(arguments);
        options.pass_input_required = false;
        match self.relay_call(server, params, options).await? {
            Relayed::Complete(output) => Ok(output),
            // Only asked for with `pass_input_required`, which is off here.
            Relayed::InputRequired(_) => Err(CallError::Failed {
                server: server.to_owned(),
                what: tool.to_owned(),
                message: "the server asked for input that was not answered".to_owned(),
            }),
        }
    }

    /// Calls a tool on behalf of a client of ours, as a gateway does: `params` carries, beside
    /// the name and arguments, what that client sent with its call (`inputResponses` and
    /// `requestState` of a retry; in `_meta`, the capabilities it declared and the log level
    /// it wants, which a stateless server then sees as the caller's). The permission rules
    /// apply to every call, retries included. With
    /// [`passing_input_required`](CallOptions::passing_input_required) an `input_required`
    /// result comes back as it came.
    pub async fn relay_call(
        &self,
        server: &str,
        mut params: CallToolParams,
        options: CallOptions,
    ) -> Result<Relayed, CallError> {
        let slot = self.inner.slot(server)?;
        let arguments = params.arguments.take().unwrap_or_default();
        let tool = params.name.clone();
        let tool = tool.as_str();
        let request = CallRequest {
            server,
            tool,
            arguments: &arguments,
            kind: CallKind::Tool,
        };
        self.inner.permit(&slot, &request).await?;
        let client = self.inner.ready_client(server)?;
        params.arguments = Some(arguments);
        let idle = options.timeout.unwrap_or(slot.entry.request_timeout);
        let mut request_options = RequestOptions::DEFAULT
            .timeout(self.inner.options.max_call_duration.max(idle))
            .idle_timeout(idle);
        if options.progress.is_some() {
            request_options = request_options.with_progress();
        }
        if options.pass_input_required {
            request_options = request_options.passing_input_required();
        }
        let failed = |e| self.inner.session_error(server, tool, e);
        let encoded = RawJson::encode(&params).map_err(|e| CallError::Failed {
            server: server.to_owned(),
            what: tool.to_owned(),
            message: format!("the call's parameters cannot be encoded: {e}"),
        })?;
        let raw = client
            .request_raw(
                <CallTool as RequestMethod>::METHOD,
                Some(encoded),
                request_options,
                options.progress,
            )
            .await
            .map_err(failed)?;
        if is_input_required(&raw) {
            return Ok(Relayed::InputRequired(raw));
        }
        let mut result = decode_result::<CallTool>(&raw).map_err(|e| {
            self.inner.shown(CallError::Failed {
                server: server.to_owned(),
                what: tool.to_owned(),
                message: e.to_string(),
            })
        })?;
        let truncated = bound_result(&mut result, slot.entry.max_result_bytes);
        Ok(Relayed::Complete(ToolOutput { result, truncated }))
    }

    /// Lists a ready server's tools again and swaps them into the catalogue: for a consumer
    /// that keeps them longer than a session would (a gateway's schema cache with a lifetime),
    /// since servers may change their tools without saying so. On failure the old list stays.
    pub async fn refresh_tools(&self, server: &str) -> Result<(), CallError> {
        let slot = self.inner.slot(server)?;
        let client = self.inner.ready_client(server)?;
        relist_tools(&self.inner, &slot, &client)
            .await
            .map_err(|e| self.inner.session_error(server, "tools/list", e))
    }

    /// The resources of a ready server, every page.
    pub async fn list_resources(&self, server: &str) -> Result<Vec<Resource>, CallError> {
        let client = self.inner.ready_client(server)?;
        client
            .list_all_resources()
            .await
            .map_err(|e| self.inner.session_error(server, "resources/list", e))
    }

    /// The resource templates of a ready server, every page.
    pub async fn list_resource_templates(
        &self,
        server: &str,
    ) -> Result<Vec<ResourceTemplate>, CallError> {
        let client = self.inner.ready_client(server)?;
        client.list_all_resource_templates().await.map_err(|e| {
            self.inner
                .session_error(server, "resources/templates/list", e)
        })
    }

    /// Reads one resource.
    pub async fn read_resource(
        &self,
        server: &str,
        uri: &str,
    ) -> Result<ReadResourceResult, CallError> {
        let client = self.inner.ready_client(server)?;
        client
            .read_resource(uri)
            .await
            .map_err(|e| self.inner.session_error(server, "resources/read", e))
    }

    /// Asks `server` to say when the resource at `uri` changes: a
    /// [`HostEvent::Notification`] with `notifications/resources/updated` follows each change.
    /// The way differs by era and the host hides it: `resources/subscribe` in the handshake
    /// era, the URI added to the `subscriptions/listen` filter in the stateless one (which has
    /// no such method). The subscription outlives the connection: a reconnection takes it up
    /// again.
    pub async fn subscribe_resource(&self, server: &str, uri: &str) -> Result<(), CallError> {
        let slot = self.inner.slot(server)?;
        let client = self.inner.ready_client(server)?;
        let info = client.server_info();
        if info
            .capabilities
            .resources
            .as_ref()
            .and_then(|r| r.subscribe)
            != Some(true)
        {
            return Err(CallError::Failed {
                server: server.to_owned(),
                what: "resources/subscribe".to_owned(),
                message: "the server does not offer resource subscriptions".to_owned(),
            });
        }
        if info.era == Era::Handshake {
            about_resource::<method::Subscribe>(&client, uri)
                .await
                .map_err(|e| self.inner.session_error(server, "resources/subscribe", e))?;
        }
        if lock(&slot.resources).insert(uri.to_owned()) {
            slot.relisten.notify_one();
        }
        Ok(())
    }

    /// Ends a [`subscribe_resource`](Self::subscribe_resource); the URI is forgotten even if
    /// the server cannot be told (it is not connected, or refuses). A URI that was not
    /// subscribed to is left alone: the server is not bothered.
    pub async fn unsubscribe_resource(&self, server: &str, uri: &str) -> Result<(), CallError> {
        let slot = self.inner.slot(server)?;
        if !lock(&slot.resources).remove(uri) {
            return Ok(());
        }
        slot.relisten.notify_one();
        let client = self.inner.ready_client(server)?;
        if client.server_info().era == Era::Handshake {
            about_resource::<method::Unsubscribe>(&client, uri)
                .await
                .map_err(|e| self.inner.session_error(server, "resources/unsubscribe", e))?;
        }
        Ok(())
    }

    /// The prompts of a ready server, every page.
    pub async fn list_prompts(&self, server: &str) -> Result<Vec<Prompt>, CallError> {
        let client = self.inner.ready_client(server)?;
        client
            .list_all_prompts()
            .await
            .map_err(|e| self.inner.session_error(server, "prompts/list", e))
    }

    /// Gets one prompt with its arguments filled in.
    pub async fn get_prompt(
        &self,
        server: &str,
        name: &str,
        arguments: BTreeMap<String, String>,
    ) -> Result<GetPromptResult, CallError> {
        let client = self.inner.ready_client(server)?;
        let mut params = GetPromptParams::new(name.to_owned());
        if !arguments.is_empty() {
            params.arguments = Some(arguments.into_iter().collect());
        }
        client
            .get_prompt(params)
            .await
            .map_err(|e| self.inner.session_error(server, "prompts/get", e))
    }
}

/// Stops a slot's supervisor and closes its connection.
async fn stop_slot(slot: &Slot) {
    slot.stop.store(true, Ordering::SeqCst);
    let task = lock(&slot.task).take();
    if let Some(task) = task {
        task.abort();
        let _ = task.await;
    }
    let client = {
        let mut s = lock(&slot.state);
        s.tools.clear();
        s.operations.clear();
        s.info = None;
        s.client.take()
    };
    if let Some(client) = client {
        client.close().await;
    }
}

impl Slot {
    fn status(&self) -> ServerStatus {
        let s = lock(&self.state);
        ServerStatus {
            id: self.entry.id.clone(),
            transport: self.entry.transport.clone(),
            source: self.entry.source.clone(),
            enabled: self.entry.enabled,
            state: s.state.unwrap_or(ServerState::Connecting),
            tools: s.tools.len(),
            operations: s.operations.iter().map(|o| o.operation).collect(),
            last_error: s.last_error.as_ref().map(|(_, e)| e.clone()),
            last_error_phase: s.last_error.as_ref().map(|(p, _)| *p),
            last_connected_at: s.last_connected_at,
            protocol_version: s
                .info
                .as_ref()
                .map(|i| i.protocol_version.as_str().to_owned()),
            era: s.info.as_ref().map(|i| match i.era {
                Era::Stateless => "stateless",
                _ => "handshake",
            }),
            negotiation: s.info.as_ref().map(|i| i.negotiation.clone()),
            server_info: s.info.as_ref().map(|i| i.implementation.clone()),
            session_id: s.client.as_ref().and_then(Client::session_id),
            diagnostics: s.diagnostics.clone(),
            reconnect_attempts: s.reconnect_attempts,
            token_expires_at: self
                .oauth()
                .and_then(|h| h.expires_at_ms())
                .map(|ms| SystemTime::UNIX_EPOCH + Duration::from_millis(ms)),
        }
    }

    /// The server's OAuth hook, if it has one.
    #[cfg(feature = "oauth")]
    fn oauth(&self) -> Option<Arc<OAuthHook>> {
        self.entry.oauth.clone()
    }

    /// Without OAuth in the build, no server has a hook.
    #[cfg(not(feature = "oauth"))]
    fn oauth(&self) -> Option<crate::features::NoOAuth> {
        None
    }

    /// Keeps a diagnostic, its secrets redacted, and returns it as kept: what may be shown
    /// and logged.
    fn diagnostic(&self, text: &str) -> String {
        let text = self.redactor.text(text);
        let mut s = lock(&self.state);
        if s.diagnostics.len() == DIAGNOSTICS_KEPT {
            s.diagnostics.remove(0);
        }
        s.diagnostics.push(text.clone());
        text
    }
}

impl Inner {
    /// Asks the configuration, the policy and, where they ask, the prompter about `request`:
    /// `Ok` only if the call may be sent. The one permission check of tools and operations.
    async fn permit(&self, slot: &Slot, request: &CallRequest<'_>) -> Result<(), CallError> {
        let decision = combine(
            slot.entry.rules.decide_call(request),
            self.options.policy.decide(request),
        );
        let denied = |reason: &str| CallError::Denied {
            server: request.server.to_owned(),
            tool: request.tool.to_owned(),
            reason: reason.to_owned(),
        };
        let allowed = match decision {
            Decision::Allow => true,
            Decision::Deny => false,
            Decision::Ask => match &self.options.prompter {
                Some(prompter) => prompter.confirm(request).await,
                None => {
                    return Err(denied(
                        "the policy asks for confirmation and no one can be asked",
                    ));
                }
            },
        };
        if allowed {
            Ok(())
        } else {
            Err(denied("refused by the permission policy"))
        }
    }

    /// A failed session request to `server`, as a [`CallError`] whose texts hide the
    /// server's secrets.
    fn session_error(&self, server: &str, what: &str, error: mcp_session::Error) -> CallError {
        self.shown(CallError::from_session(server, what, error))
    }

    /// `error`, about one server, with that server's secrets redacted: every error the host
    /// forms from what a server said goes through here before a consumer sees it.
    fn shown(&self, error: CallError) -> CallError {
        let slot = error
            .server()
            .and_then(|server| lock(&self.slots).get(server).cloned());
        match slot {
            Some(slot) => slot.redactor.error(error),
            None => error,
        }
    }

    fn slot(&self, server: &str) -> Result<Arc<Slot>, CallError> {
        lock(&self.slots)
            .get(server)
            .cloned()
            .ok_or_else(|| CallError::UnknownServer {
                server: server.to_owned(),
            })
    }

    fn ready_client(&self, server: &str) -> Result<Client, CallError> {
        let slot = self.slot(server)?;
        let s = lock(&slot.state);
        match (&s.client, s.state) {
            (Some(client), Some(ServerState::Ready)) => Ok(client.clone()),
            (_, state) => Err(CallError::NotReady {
                server: server.to_owned(),
                state: state.unwrap_or(ServerState::Connecting),
                last_error: s.last_error.as_ref().map(|(_, e)| e.clone()),
            }),
        }
    }

    /// Sets a server's state; an error's text is kept (and logged) with the server's secrets
    /// redacted.
    fn set_state(&self, slot: &Slot, state: ServerState, error: Option<(Phase, String)>) {
        let error = error.map(|(phase, text)| (phase, slot.redactor.text(&text)));
        {
            let mut s = lock(&slot.state);
            s.state = Some(state);
            if let Some(error) = &error {
                s.last_error = Some(error.clone());
            }
        }
        match &error {
            Some((phase, error)) => {
                tracing::warn!(server = %slot.entry.id, state = state.as_str(), phase = phase.as_str(), %error, "server state")
            }
            None => tracing::info!(server = %slot.entry.id, state = state.as_str(), "server state"),
        }
        let _ = self.events.send(HostEvent::State {
            server: slot.entry.id.clone(),
            state,
        });
    }

    /// Builds the catalogue from every ready server's tools and swaps it in.
    fn rebuild_catalog(&self) {
        let _serial = lock(&self.rebuild);
        let slots: Vec<_> = lock(&self.slots).values().cloned().collect();
        let mut servers = BTreeMap::new();
        let mut operations = BTreeMap::new();
        for slot in slots {
            let s = lock(&slot.state);
            if s.state == Some(ServerState::Ready) {
                servers.insert(slot.entry.id.clone(), s.tools.clone());
                operations.insert(slot.entry.id.clone(), s.operations.clone());
            }
        }
        let catalog = Arc::new(Catalog::build_with_operations(servers, operations));
        *self.catalog.write().unwrap_or_else(PoisonError::into_inner) = catalog;
    }

    /// A server's tools changed (it connected, was lost, refreshed its list, was removed):
    /// rebuilds the catalogue and tells subscribers.
    fn catalog_changed(&self, server: &str) {
        self.rebuild_catalog();
        self.emit(HostEvent::Catalog {
            server: server.to_owned(),
        });
    }

    fn emit(&self, event: HostEvent) {
        let _ = self.events.send(event);
    }
}

/// Why one connection attempt failed.
pub(crate) struct Failure {
    pub(crate) phase: Phase,
    pub(crate) message: String,
    pub(crate) auth_required: bool,
}

/// Connects once: transport, handshake, tool list. The handshake's own timeout is the
/// server's request timeout, so a hung server fails promptly.
async fn connect_once(inner: &Inner, slot: &Slot) -> Result<(Client, Vec<ExposedTool>), Failure> {
    let entry = &slot.entry;
    let mut session = inner.session.clone();
    session.request_timeout = entry.request_timeout;
    session.ping_interval = entry.ping_interval;
    session.ping_timeout = entry.ping_timeout;
    if let Some(version) = &entry.protocol_version {
        session.protocol_version = version.clone();
        session.supported_versions = vec![version.clone()];
    }
    let connect = entry.connect.clone().map_err(|u| Failure {
        phase: u.phase,
        message: u.message,
        auth_required: false,
    })?;
    let fail = |phase: Phase, message: String| Failure {
        phase,
        message,
        auth_required: false,
    };
    let client = crate::transport::open(entry, connect, session, &inner.transports).await?;
    let has_tools = client.server_info().capabilities.tools.is_some();
    let tools = if has_tools {
        match client.list_all_tools().await {
            Ok(tools) => tools,
            Err(e) => {
                client.close().await;
                return Err(fail(Phase::Tools, format!("tools/list: {e}")));
            }
        }
    } else {
        Vec::new()
    };
    let exposed = adapt(inner, slot, tools);
    Ok((client, exposed))
}

fn adapt(inner: &Inner, slot: &Slot, tools: Vec<mcp_protocol::schema::Tool>) -> Vec<ExposedTool> {
    let (exposed, diagnostics) = crate::catalog::adapt_server_tools(
        &slot.entry.id,
        tools,
        &slot.entry.filter,
        &inner.options.catalog_limits,
    );
    for Diagnostic { tool, message, .. } in diagnostics {
        let text = slot.diagnostic(&format!("tool `{tool}`: {message}"));
        tracing::warn!(server = %slot.entry.id, "{text}");
        inner.emit(HostEvent::Diagnostic {
            server: slot.entry.id.clone(),
            message: text,
        });
    }
    exposed
}

/// Runs one server for as long as it is configured: connect, serve, and after a lost
/// connection reconnect with a doubling wait, up to the configured number of attempts.
async fn supervise(inner: Arc<Inner>, slot: Arc<Slot>, ready: tokio::sync::oneshot::Sender<()>) {
    let mut ready = Some(ready);
    let Ok(_permit) = inner.permits.clone().try_acquire_owned() else {
        let max = inner.options.max_connections;
        inner.set_state(
            &slot,
            ServerState::Error,
            Some((
                Phase::Limit,
                format!(
                    "maximum connections ({max}) reached: raise mcp.max_connections or disable a server"
                ),
            )),
        );
        return;
    };
    let mut delay = inner.options.reconnect_initial;
    let mut was_connected = false;
    loop {
        if slot.stop.load(Ordering::SeqCst) {
            return;
        }
        inner.set_state(&slot, ServerState::Connecting, None);
        match connect_once(&inner, &slot).await {
            Ok((client, tools)) => {
                {
                    let mut s = lock(&slot.state);
                    s.info = Some(client.server_info().clone());
                    s.client = Some(client.clone());
                    s.tools = tools;
                    // What the server declared now counts until the next connection.
                    s.operations = server_operations(
                        &slot.entry.id,
                        &client.server_info().capabilities,
                        slot.entry.expose_resources,
                        slot.entry.expose_prompts,
                    );
                    s.last_connected_at = Some(SystemTime::now());
                    s.reconnect_attempts = 0;
                }
                was_connected = true;
                delay = inner.options.reconnect_initial;
                inner.set_state(&slot, ServerState::Ready, None);
                inner.catalog_changed(&slot.entry.id);
                if let Some(ready) = ready.take() {
                    let _ = ready.send(());
                }
                let reason = serve(&inner, &slot, &client).await;
                {
                    let mut s = lock(&slot.state);
                    s.client = None;
                    s.info = None;
                    s.tools.clear();
                    s.operations.clear();
                }
                if slot.stop.load(Ordering::SeqCst) {
                    return;
                }
                inner.set_state(
                    &slot,
                    ServerState::Error,
                    Some((Phase::Connection, format!("connection lost: {reason}"))),
                );
                inner.catalog_changed(&slot.entry.id);
            }
            Err(failure) => {
                let state = if failure.auth_required {
                    ServerState::AuthRequired
                } else {
                    ServerState::Error
                };
                inner.set_state(&slot, state, Some((failure.phase, failure.message)));
                if let Some(ready) = ready.take() {
                    let _ = ready.send(());
                }
                // A server that never connected is not retried on its own: its configuration
                // or its program is wrong, and retrying would only repeat the error.
                if !was_connected || failure.auth_required {
                    return;
                }
            }
        }
        let attempts = {
            let mut s = lock(&slot.state);
            s.reconnect_attempts += 1;
            s.reconnect_attempts
        };
        if attempts > inner.options.reconnect_attempts {
            let (phase, error) = lock(&slot.state)
                .last_error
                .clone()
                .unwrap_or((Phase::Connection, String::new()));
            inner.set_state(
                &slot,
                ServerState::Error,
                Some((
                    phase,
                    format!(
                        "gave up after {} reconnection attempts: {error}",
                        inner.options.reconnect_attempts
                    ),
                )),
            );
            return;
        }
        tokio::time::sleep(delay).await;
        delay = (delay * 2).min(inner.options.reconnect_max);
    }
}

/// Serves one connection until it ends: notifications to subscribers (and list changes to the
/// catalogue), server requests to the consumer's handler or the roots list. Returns why it
/// ended.
async fn serve(inner: &Arc<Inner>, slot: &Arc<Slot>, client: &Client) -> String {
    let Some(mut incoming) = client.take_incoming() else {
        return client.closed().await;
    };
    let server = slot.entry.id.clone();
    // A stateless server says what changed only on a subscriptions/listen stream; it ends
    // with this connection.
    let _listening = listen(slot, client).map(AbortOnDrop);
    // OAuth tokens are refreshed ahead of expiry while connected; the timer ends with this.
    #[cfg(feature = "oauth")]
    let _refreshing = (slot.entry.oauth.clone())
        .map(|hook| AbortOnDrop(tokio::spawn(crate::refresh::keep_fresh(hook))));
    resubscribe(slot, client);
    loop {
        let item = tokio::select! {
            item = incoming.recv() => item,
            reason = client.closed() => return reason,
        };
        let Some(item) = item else {
            return client.closed().await;
        };
        match item {
            Incoming::Notification(notification) => {
                let relist = match &notification {
                    ServerNotification::ToolListChanged(_) => Some("tools/list_changed"),
                    // A change made after the tools were listed but before the server had the
                    // listen stream was told to nobody: the list is taken again once the
                    // server acknowledges the stream (at each listen, so after a reconnect
                    // too).
                    ServerNotification::SubscriptionsAcknowledged(ack)
                        if ack.notifications.tools_list_changed == Some(true) =>
                    {
                        Some("the subscriptions/listen acknowledgement")
                    }
                    _ => None,
                };
                if let Some(why) = relist
                    && let Err(e) = relist_tools(inner, slot, client).await
                {
                    // The change is never ignored silently.
                    let message = slot.diagnostic(&format!(
                        "tools/list after {why} failed, keeping the old list: {e}"
                    ));
                    tracing::warn!(server = %slot.entry.id, "{message}");
                    inner.emit(HostEvent::Diagnostic {
                        server: slot.entry.id.clone(),
                        message,
                    });
                }
                inner.emit(HostEvent::Notification {
                    server: server.clone(),
                    notification,
                });
            }
            Incoming::Request { id, request } => {
                let inner = inner.clone();
                let client = client.clone();
                let server = server.clone();
                tokio::spawn(async move {
                    let outcome = answer(&inner, &server, request).await;
                    let _ = client.respond(&id, outcome);
                });
            }
            Incoming::Cancelled { .. } => {}
            Incoming::Diagnostic(message) => {
                let message = slot.diagnostic(&message);
                inner.emit(HostEvent::Diagnostic {
                    server: server.clone(),
                    message,
                });
            }
            // Kinds added to the session later are not lost silently.
            other => {
                slot.diagnostic(&format!("unhandled message from the session: {other:?}"));
            }
        }
    }
}

/// Aborts a task when dropped.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// How long one `subscriptions/listen` request may stay open before it is opened again.
const LISTEN_SPAN: Duration = Duration::from_secs(24 * 60 * 60);

/// In the stateless era, keeps a `subscriptions/listen` request open for the list changes the
/// server offers and the resources the consumer subscribed to: its notifications reach
/// [`serve`] like any other. When the subscriptions change it listens again with the new
/// filter; if the stream ends it is opened again, after a pause that doubles up to a minute
/// while it keeps failing. `None` when the server offers nothing to listen for.
fn listen(slot: &Arc<Slot>, client: &Client) -> Option<tokio::task::JoinHandle<()>> {
    let info = client.server_info();
    if info.era != Era::Stateless {
        return None;
    }
    let caps = &info.capabilities;
    let mut base = SubscriptionFilter::new();
    let changes = |c: Option<bool>| c.filter(|on| *on);
    base.tools_list_changed = changes(caps.tools.as_ref().and_then(|t| t.list_changed));
    base.prompts_list_changed = changes(caps.prompts.as_ref().and_then(|p| p.list_changed));
    base.resources_list_changed = changes(caps.resources.as_ref().and_then(|r| r.list_changed));
    let subscribes = caps.resources.as_ref().and_then(|r| r.subscribe) == Some(true);
    let lists = base.tools_list_changed.is_some()
        || base.prompts_list_changed.is_some()
        || base.resources_list_changed.is_some();
    if !lists && !subscribes {
        return None;
    }
    let (slot, client) = (Arc::clone(slot), client.clone());
    Some(tokio::spawn(async move {
        let server = slot.entry.id.clone();
        let mut pause = Duration::from_secs(1);
        loop {
            let mut filter = base.clone();
            let resources: Vec<String> = lock(&slot.resources).iter().cloned().collect();
            if !resources.is_empty() {
                filter.resource_subscriptions = Some(resources);
            }
            if !lists && filter.resource_subscriptions.is_none() {
                slot.relisten.notified().await;
                continue;
            }
            let began = tokio::time::Instant::now();
            let params = ListenParams::new(filter);
            let listening = client
                .request::<method::Listen>(&params, RequestOptions::DEFAULT.timeout(LISTEN_SPAN));
            let ended = tokio::select! {
                ended = listening => ended,
                // Dropping the request cancels it (on HTTP, closes its stream).
                () = slot.relisten.notified() => continue,
            };
            if client.is_closed() {
                return;
            }
            if let Err(e) = ended {
                let e = slot.redactor.text(&e.to_string());
                tracing::debug!(server = %server, "subscriptions/listen ended: {e}");
            }
            if began.elapsed() > Duration::from_secs(60) {
                pause = Duration::from_secs(1);
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(Duration::from_secs(60));
        }
    }))
}

/// Sends the handshake era's `resources/subscribe` or `resources/unsubscribe` for `uri`.
async fn about_resource<M>(client: &Client, uri: &str) -> Result<(), mcp_session::Error>
where
    M: RequestMethod<Params = ResourceUriParams>,
{
    let params = ResourceUriParams::new(uri.to_owned());
    client
        .request::<M>(&params, RequestOptions::DEFAULT)
        .await?;
    Ok(())
}

/// In the handshake era, subscribes a new connection to the resources the consumer subscribed
/// to before it; a refusal is a diagnostic of the server, and the URI stays wanted.
fn resubscribe(slot: &Arc<Slot>, client: &Client) {
    if client.server_info().era != Era::Handshake {
        return;
    }
    let uris: Vec<String> = lock(&slot.resources).iter().cloned().collect();
    if uris.is_empty() {
        return;
    }
    let (slot, client) = (Arc::clone(slot), client.clone());
    tokio::spawn(async move {
        for uri in uris {
            if let Err(e) = about_resource::<method::Subscribe>(&client, &uri).await {
                slot.diagnostic(&format!(
                    "resources/subscribe {uri} again after reconnecting failed: {e}"
                ));
            }
        }
    });
}

/// Lists a server's tools again and swaps them into the catalogue; on failure the old list
/// stays.
async fn relist_tools(
    inner: &Arc<Inner>,
    slot: &Arc<Slot>,
    client: &Client,
) -> Result<(), mcp_session::Error> {
    let tools = client.list_all_tools().await?;
    let exposed = adapt(inner, slot, tools);
    lock(&slot.state).tools = exposed;
    inner.catalog_changed(&slot.entry.id);
    Ok(())
}

/// Answers a server request: roots from the configured list (if any), the rest from the
/// consumer's handler. The session refuses what was not declared before it gets here.
async fn answer(
    inner: &Inner,
    server: &str,
    request: ServerRequest,
) -> Result<RawJson, ErrorObject> {
    let internal =
        |e: serde_json::Error| ErrorObject::new(mcp_protocol::code::INTERNAL_ERROR, e.to_string());
    match request {
        ServerRequest::ListRoots(_) if inner.options.roots.is_some() => {
            let roots = inner.options.roots.clone().unwrap_or_default();
            RawJson::encode(&ListRootsResult::new(roots)).map_err(internal)
        }
        ServerRequest::Ping(_) => RawJson::encode(&JsonObject::new()).map_err(internal),
        other => match &inner.options.requests {
            Some(handler) => handler.handle(server, other).await,
            None => Err(ErrorObject::new(
                mcp_protocol::code::METHOD_NOT_FOUND,
                format!("{} is not supported by this host", other.method()),
            )),
        },
    }
}

/// A tool error result for the model, from any failure: what a consumer sends back when a
/// call was denied or failed, so that the model reads one kind of answer.
pub fn error_result(error: &CallError) -> CallToolResult {
    let mut result = CallToolResult::new(vec![ContentBlock::text(error.to_string())]);
    result.is_error = Some(true);
    result
}
