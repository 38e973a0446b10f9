//! The gateway as an MCP server: one [`Host`] holds the upstream connections for every
//! client in front (one over stdio, any number over HTTP), and each request is answered by
//! the mode's module (`category`, `passthrough`, `meta`).
//!
//! What all modes share lives here: the permission policy for unattended calls, the call log,
//! upstream calls with progress and cancellation carried across the hop, and the way back
//! for an upstream's own requests (sampling, elicitation, roots). Those go to the client whose
//! call is in flight on that upstream, and only if that client declared the capability;
//! otherwise the upstream gets an error saying why (SPEC.md §10).

use std::collections::{BTreeSet, HashMap};
use std::future::Future;
use std::io::Write as _;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant, SystemTime};

use mcp_host::permission::{CallRequest, Decision, Policy};
use mcp_host::{
    CallError, CallOptions, Host, HostOptions, Relayed, RequestHandler, ServerStatus, ToolOutput,
};
use mcp_protocol::schema::{
    CallToolParams, CallToolResult, ClientCapabilities, ClientNotification, ClientRequest,
    ContentBlock, ElicitationCapability, Implementation, ListChangedCapability, ProgressParams,
    RootsCapability, SamplingCapability, ServerCapabilities, ServerRequest, meta_key,
};
use mcp_protocol::{
    ClientInfo, Era, ErrorObject, JsonObject, RawJson, RequestOptions, ServerConfig,
};
use mcp_session::{Handler, Peer, RequestContext, SessionKey, Sessions};
use tokio::sync::mpsc;

use crate::file::{GatewayFile, Loaded, Mode, Unattended};

/// How long an upstream's schemas are cached by default (seed 004 §5.2).
pub const DEFAULT_CACHE_TTL: Duration = Duration::from_secs(600);

/// How a gateway runs, beyond its file.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct GatewayOptions {
    /// Who the gateway is to its clients and to the upstream servers.
    pub implementation: Implementation,
    /// Where the per-call log goes when the file names no `logFile`: `None` is standard error.
    pub log_file: Option<PathBuf>,
}

impl GatewayOptions {
    /// `mcp-host-gateway` with this crate's version, logging to standard error.
    pub fn new() -> Self {
        Self {
            implementation: Implementation::new(
                "mcp-host-gateway".to_owned(),
                env!("CARGO_PKG_VERSION").to_owned(),
            ),
            log_file: None,
        }
    }
}

impl Default for GatewayOptions {
    fn default() -> Self {
        Self::new()
    }
}

/// The gateway: cheap to clone, every clone the same gateway. Serve it with
/// [`serve_stdio`](Gateway::serve_stdio) or [`serve_http`](Gateway::serve_http).
#[derive(Clone, Debug)]
pub struct Gateway {
    pub(crate) shared: Arc<Shared>,
}

/// What every request handler sees.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) host: Host,
    pub(crate) mode: Mode,
    /// The file as last loaded (meta mode's reload replaces it).
    file: Mutex<Arc<GatewayFile>>,
    pub(crate) path: PathBuf,
    /// What the file was first read with; a reload reads it again with the same.
    pub(crate) env: mcp_host::config::Env,
    pub(crate) oauth: Option<mcp_host::oauth::OAuthContext>,
    pub(crate) ttl: Duration,
    pub(crate) log: CallLog,
    pub(crate) routes: Arc<Routes>,
    /// When each upstream's tools were last listed, for the cache lifetime.
    listed: Mutex<HashMap<String, Instant>>,
    pub(crate) implementation: Implementation,
    /// Passthrough mode's routing tables (which upstream listed which resource).
    pub(crate) passthrough: crate::passthrough::State,
}

/// Locks `m`; a panic elsewhere while it was held leaves data that is still usable here.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Gateway {
    /// Starts the upstream servers of `loaded` and returns once each has settled (ready,
    /// failed or waiting for authorization); one that fails is reported and retried like any
    /// host server, and never stops the gateway. Logs the start-up summary.
    pub async fn start(loaded: Loaded, options: GatewayOptions) -> std::io::Result<Self> {
        let Loaded {
            path,
            file,
            mode,
            entries,
            warnings,
            env,
            oauth,
        } = loaded;
        let log_path = file.log_file.clone().or(options.log_file.clone());
        let log = CallLog::open(log_path.as_deref())?;
        let routes = Arc::new(Routes::default());
        let unattended = file.unattended.unwrap_or_default();
        let mut host_options = HostOptions::new(
            options.implementation.clone(),
            Arc::new(UnattendedPolicy(unattended)),
        );
        host_options.requests = Some(Arc::new(Forwarder {
            routes: Arc::clone(&routes),
        }));
        let host = Host::new(host_options);
        let shared = Arc::new(Shared {
            host,
            mode,
            ttl: file
                .cache_ttl_seconds
                .map_or(DEFAULT_CACHE_TTL, Duration::from_secs),
            file: Mutex::new(Arc::new(file)),
            path,
            env,
            oauth,
            log,
            routes,
            listed: Mutex::new(HashMap::new()),
            implementation: options.implementation,
            passthrough: crate::passthrough::State::default(),
        });
        for warning in &warnings {
            shared.log.line(&format!("warning: {warning}"));
        }
        shared.host.start(entries).await;
        shared.mark_all_listed();
        for status in shared.host.status() {
            let error = status
                .last_error
                .as_deref()
                .map(|e| format!(": {e}"))
                .unwrap_or_default();
            // The gateway has no browser: a person logs in to the upstream beforehand.
            let hint = if status.state == mcp_host::ServerState::AuthRequired {
                format!(
                    "; log in with `mcp-host login --gateway {} {}`",
                    shared.path.display(),
                    status.id
                )
            } else {
                String::new()
            };
            shared.log.line(&format!(
                "upstream {}: {} ({} tools){error}{hint}",
                status.id, status.state, status.tools
            ));
        }
        let gateway = Self { shared };
        gateway.startup_report();
        if mode == Mode::Passthrough {
            crate::passthrough::start_relay(&gateway.shared);
        }
        Ok(gateway)
    }

    /// The start-up summary of the mode (seed 004 §8).
    fn startup_report(&self) {
        let report = match self.shared.mode {
            Mode::Category => crate::category::startup_report(&self.shared),
            Mode::Passthrough => crate::passthrough::startup_report(&self.shared),
            Mode::Meta => crate::meta::startup_report(&self.shared),
        };
        for line in report {
            self.shared.log.line(&line);
        }
    }

    /// The host holding the upstream connections, for status views and tests.
    pub fn host(&self) -> &Host {
        &self.shared.host
    }

    /// The mode it serves.
    pub fn mode(&self) -> Mode {
        self.shared.mode
    }

    /// Who the gateway is and what it offers, for `initialize`.
    pub fn server_config(&self) -> ServerConfig {
        let mut config = ServerConfig::dual_era(self.shared.implementation.clone());
        config.capabilities = match self.shared.mode {
            Mode::Category => crate::category::capabilities(),
            Mode::Passthrough => crate::passthrough::capabilities(&self.shared),
            Mode::Meta => crate::meta::capabilities(),
        };
        config.instructions = match self.shared.mode {
            Mode::Category => Some(crate::category::instructions(&self.shared)),
            Mode::Passthrough => crate::passthrough::instructions(&self.shared),
            Mode::Meta => None,
        };
        config
    }

    /// Serves one client on this process's stdin and stdout until stdin ends, then stops the
    /// upstream servers.
    pub async fn serve_stdio(self) -> std::io::Result<()> {
        let config = self.server_config();
        let host = self.shared.host.clone();
        let result = mcp_stdio::serve_stdio(config, self).await;
        host.shutdown().await;
        result
    }

    /// Serves any number of clients over Streamable HTTP on `listener` (bind it to
    /// `127.0.0.1`), until the task is dropped or accepting fails.
    pub async fn serve_http(
        self,
        listener: tokio::net::TcpListener,
        mut http: mcp_http::HttpServerConfig,
    ) -> std::io::Result<()> {
        http.server = self.server_config();
        mcp_http::serve_http(listener, http, self).await
    }

    /// Stops the upstream servers.
    pub async fn shutdown(&self) {
        self.shared.host.shutdown().await;
    }
}

impl Handler for Gateway {
    async fn handle(
        &self,
        request: ClientRequest,
        context: RequestContext,
    ) -> Result<RawJson, ErrorObject> {
        self.shared.routes.register(&context);
        match self.shared.mode {
            Mode::Category => crate::category::handle(&self.shared, request, context).await,
            Mode::Passthrough => crate::passthrough::handle(&self.shared, request, context).await,
            Mode::Meta => crate::meta::handle(&self.shared, request, context).await,
        }
    }

    fn notified(&self, session: SessionKey, notification: ClientNotification) {
        if self.shared.mode == Mode::Passthrough {
            crate::passthrough::notified(&self.shared, session, notification);
        }
    }

    fn closed(&self, session: SessionKey) {
        self.shared.routes.closed(session);
    }

    fn tool_schema(&self, name: &str) -> Option<RawJson> {
        match self.shared.mode {
            Mode::Passthrough => crate::passthrough::tool_schema(&self.shared, name),
            // Their own tools mirror no argument into a header.
            Mode::Category | Mode::Meta => None,
        }
    }
}

impl Shared {
    /// The file as last loaded.
    pub(crate) fn file(&self) -> Arc<GatewayFile> {
        Arc::clone(&lock(&self.file))
    }

    /// Replaces the file (meta mode's reload).
    pub(crate) fn set_file(&self, file: GatewayFile) {
        *lock(&self.file) = Arc::new(file);
    }

    fn mark_all_listed(&self) {
        let now = Instant::now();
        let mut listed = lock(&self.listed);
        for status in self.host.status() {
            listed.insert(status.id, now);
        }
    }

    /// Lists `server`'s tools again if the cached list is older than the lifetime. A failed
    /// refresh keeps the old list and is returned for the caller to report.
    pub(crate) async fn refresh_if_stale(&self, server: &str) -> Result<(), CallError> {
        let stale = lock(&self.listed)
            .get(server)
            .is_none_or(|at| at.elapsed() >= self.ttl);
        if !stale {
            return Ok(());
        }
        self.host.refresh_tools(server).await?;
        lock(&self.listed).insert(server.to_owned(), Instant::now());
        Ok(())
    }

    /// Forgets when `server`'s tools were listed (its connection changed or it said its list
    /// changed, and the host listed them again).
    pub(crate) fn mark_listed(&self, server: &str) {
        lock(&self.listed).insert(server.to_owned(), Instant::now());
    }

    /// Calls an upstream tool for the client request in `context`: the permission policy,
    /// progress passed back to the client under its own token, cancellation when the client
    /// cancels (the handler's future is dropped), the upstream's requests routed back to this
    /// client, and one line in the call log with `label`, the latency and the outcome.
    pub(crate) async fn call_tool(
        &self,
        label: &str,
        server: &str,
        tool: &str,
        arguments: JsonObject,
        context: &RequestContext,
    ) -> Result<ToolOutput, CallError> {
        let mut params = CallToolParams::new(tool.to_owned());
        params.arguments = Some(arguments);
        match self.relay_call(label, server, params, context).await? {
            Relayed::Complete(output) => Ok(output),
            // A stateless client's upstream asked for input: category and meta modes answer
            // with a result of their own, which cannot carry the upstream's questions.
            _ => Err(CallError::Failed {
                server: server.to_owned(),
                what: tool.to_owned(),
                message: "the upstream asked for input, which this mode cannot pass on to a client of the 2026-07-28 era".to_owned(),
            }),
        }
    }

    /// [`call_tool`](Self::call_tool) with everything else the client sent (`params`: its
    /// `inputResponses`, `requestState` and `_meta`, already prepared for the upstream by
    /// [`upstream_meta`](Self::upstream_meta)). A stateless client gets the upstream's
    /// `input_required` result as it came, since it answers and retries itself; a handshake
    /// client is asked through the way back instead, and sees only the final result.
    pub(crate) async fn relay_call(
        &self,
        label: &str,
        server: &str,
        params: CallToolParams,
        context: &RequestContext,
    ) -> Result<Relayed, CallError> {
        let tool = params.name.clone();
        let started = Instant::now();
        let _route = self.routes.track(server, context);
        let mut options = CallOptions::default();
        let forward = context.progress_token.clone().map(|token| {
            let (tx, mut rx) = mpsc::unbounded_channel::<ProgressParams>();
            options = CallOptions::default().progress(tx);
            let peer = context.peer.clone();
            tokio::spawn(async move {
                while let Some(mut params) = rx.recv().await {
                    params.progress_token = token.clone();
                    params.meta = None;
                    if let Ok(raw) = RawJson::encode(&params) {
                        let _ = peer.notify("notifications/progress", Some(raw));
                    }
                }
            })
        });
        if context.era == Some(Era::Stateless) {
            options = options.passing_input_required();
        }
        let outcome = self.host.relay_call(server, params, options).await;
        if let Some(task) = forward {
            // The sender went with the call; the task ends once it has passed on the rest.
            let _ = task.await;
        }
        let ms = started.elapsed().as_millis();
        let result = match &outcome {
            Ok(Relayed::Complete(out)) if out.is_tool_error() => "tool error".to_owned(),
            Ok(Relayed::Complete(_)) => "ok".to_owned(),
            Ok(_) => "input required".to_owned(),
            Err(e) => format!("failed: {e}"),
        };
        self.log
            .line(&format!("call {label} {server}/{tool} {ms} ms {result}"));
        outcome
    }

    /// The `_meta` of a request relayed to `server` for the client of `context`, from the
    /// `_meta` that client sent: without its progress token (the gateway asks for progress
    /// under its own) and without the stateless era's envelope (the upstream session adds its
    /// own). A stateless upstream also hears what that client declared and the log level it
    /// wants, since the gateway answers the upstream's input requests by asking that client:
    /// the upstream must not ask for what it cannot give.
    pub(crate) fn upstream_meta(
        &self,
        server: &str,
        context: &RequestContext,
        meta: Option<JsonObject>,
    ) -> Option<JsonObject> {
        let mut meta = meta.unwrap_or_default();
        let level = meta
            .get(meta_key::LOG_LEVEL)
            .cloned()
            .or_else(|| self.routes.log_level(context.session));
        meta.remove("progressToken");
        meta.retain(|key, _| !key.starts_with(meta_key::PREFIX));
        let stateless = self
            .host
            .client(server)
            .is_ok_and(|c| c.server_info().era == Era::Stateless);
        if stateless {
            if let Some(capabilities) = context
                .client
                .as_ref()
                .and_then(|c| serde_json::to_value(&c.capabilities).ok())
            {
                meta.insert(meta_key::CLIENT_CAPABILITIES.to_owned(), capabilities);
            }
            if let Some(level) = level {
                meta.insert(meta_key::LOG_LEVEL.to_owned(), level);
            }
        }
        (!meta.is_empty()).then_some(meta)
    }
}

/// The gateway's own failures, as seed 004 §2 names them: the first word of the tool error's
/// text, so that a model (and a script) can tell them apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ErrorKind {
    UnknownCategory,
    UnknownTool,
    ToolDisabled,
    UpstreamUnavailable,
    UpstreamCallError,
    /// The permission rules (or `unattended`) refused the call; it never reached the upstream.
    PermissionDenied,
    SchemaFetchError,
    InvalidArguments,
}

impl ErrorKind {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::UnknownCategory => "UnknownCategory",
            Self::UnknownTool => "UnknownTool",
            Self::ToolDisabled => "ToolDisabled",
            Self::UpstreamUnavailable => "UpstreamUnavailable",
            Self::UpstreamCallError => "UpstreamCallError",
            Self::PermissionDenied => "PermissionDenied",
            Self::SchemaFetchError => "SchemaFetchError",
            Self::InvalidArguments => "InvalidArguments",
        }
    }
}

/// A tool error result (`isError: true`) saying `kind: message`, with the kind also in
/// `structuredContent.error` for programs.
pub(crate) fn tool_error(kind: ErrorKind, message: &str) -> CallToolResult {
    let mut result = CallToolResult::new(vec![ContentBlock::text(format!(
        "{}: {message}",
        kind.as_str()
    ))]);
    result.is_error = Some(true);
    result.structured_content =
        Some(serde_json::json!({"error": {"kind": kind.as_str(), "message": message}}));
    result
}

/// The kind of a failed upstream call.
pub(crate) fn call_error_kind(error: &CallError) -> ErrorKind {
    match error {
        CallError::UnknownServer { .. } | CallError::NotReady { .. } => {
            ErrorKind::UpstreamUnavailable
        }
        CallError::UnknownTool { .. } => ErrorKind::UnknownTool,
        CallError::Denied { .. } => ErrorKind::PermissionDenied,
        _ => ErrorKind::UpstreamCallError,
    }
}

/// The tool error for a failed upstream call: its kind, then what the host said.
pub(crate) fn call_error_result(error: &CallError) -> CallToolResult {
    tool_error(call_error_kind(error), &error.to_string())
}

/// The `UpstreamUnavailable` tool error for a configured server that is not ready.
pub(crate) fn not_ready(server: &str, status: &ServerStatus) -> CallToolResult {
    let why = status
        .last_error
        .as_deref()
        .map(|e| format!(": {e}"))
        .unwrap_or_default();
    tool_error(
        ErrorKind::UpstreamUnavailable,
        &format!(
            "server `{server}` is not ready (state {}){why}",
            status.state
        ),
    )
}

/// What category and meta modes declare: tools only, a list that never changes.
pub(crate) fn tools_only_capabilities() -> ServerCapabilities {
    let mut tools = ListChangedCapability::new();
    tools.list_changed = Some(false);
    let mut capabilities = ServerCapabilities::default();
    capabilities.tools = Some(tools);
    capabilities
}

/// Encodes a result for the session; a value that cannot be encoded becomes an internal
/// error rather than a panic.
pub(crate) fn encode(value: &impl serde::Serialize) -> Result<RawJson, ErrorObject> {
    RawJson::encode(value)
        .map_err(|e| ErrorObject::new(mcp_protocol::code::INTERNAL_ERROR, e.to_string()))
}

/// Where the start-up summary and the per-call lines go: standard error or a file, never
/// standard output (over stdio it carries MCP). Lines carry no arguments or results, only
/// names, timings and outcomes.
pub(crate) struct CallLog {
    sink: Mutex<Box<dyn std::io::Write + Send>>,
}

impl std::fmt::Debug for CallLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallLog").finish_non_exhaustive()
    }
}

impl CallLog {
    fn open(path: Option<&std::path::Path>) -> std::io::Result<Self> {
        let sink: Box<dyn std::io::Write + Send> = match path {
            Some(path) => Box::new(open_private(path).map_err(|e| {
                std::io::Error::new(
                    e.kind(),
                    format!("gateway log file {}: {e}", path.display()),
                )
            })?),
            None => Box::new(std::io::stderr()),
        };
        Ok(Self {
            sink: Mutex::new(sink),
        })
    }

    /// Writes one line, prefixed with the time and `mcp-host gateway:`. A failed write is
    /// dropped: the log never stops a call.
    pub(crate) fn line(&self, text: &str) {
        let secs = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64());
        let text = mcp_host::catalog::clean_text(text, 4096).replace('\n', " ");
        let mut sink = lock(&self.sink);
        let _ = writeln!(sink, "{secs:.3} mcp-host gateway: {text}");
        let _ = sink.flush();
    }
}

/// Opens the log file for appending, only its owner may read it: created with mode 0600, and
/// an existing regular file open to others is tightened to 0600 (through the open file, so a
/// path swapped meanwhile changes nothing else). The log names servers, tools and errors,
/// which are the user's business. Something other than a regular file (a terminal,
/// `/dev/null`) is written as it is.
fn open_private(path: &std::path::Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::{OpenOptionsExt as _, PermissionsExt as _};
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(path)?;
    let meta = file.metadata()?;
    if meta.is_file() && meta.permissions().mode() & 0o077 != 0 {
        file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    }
    Ok(file)
}

/// The permission policy where the configuration says `ask` and no one can be asked. It
/// only ever fills in for `ask`: a `deny` from the policy would also override the file's
/// `allow` rules (a denial from either side wins), so `deny` here is `ask`, which the host
/// refuses since the gateway has no one to ask.
#[derive(Debug)]
struct UnattendedPolicy(Unattended);

impl Policy for UnattendedPolicy {
    fn decide(&self, _: &CallRequest<'_>) -> Decision {
        match self.0 {
            Unattended::Allow => Decision::Allow,
            Unattended::Deny => Decision::Ask,
        }
    }
}

/// One client in front of the gateway.
#[derive(Debug)]
pub(crate) struct Downstream {
    /// Its peer for messages tied to no request.
    pub(crate) peer: Peer,
    /// What it declared.
    pub(crate) client: Option<Arc<ClientInfo>>,
    /// Resource URIs it subscribed to (passthrough).
    pub(crate) subscriptions: BTreeSet<String>,
    /// The level it set with `logging/setLevel`, which requests relayed for it carry to a
    /// stateless upstream (that era has no such method; the level travels per request).
    pub(crate) log_level: Option<serde_json::Value>,
}

/// A client request that is waiting on an upstream.
#[derive(Debug, Clone)]
struct InFlight {
    id: u64,
    session: SessionKey,
    /// The peer tied to the client's request, so an upstream's request travels on its stream.
    peer: Peer,
    client: Option<Arc<ClientInfo>>,
    /// Whether the request came in the stateless era, where nothing may be sent to the client
    /// mid-request.
    stateless: bool,
}

/// The clients in front, and which of their requests wait on which upstream.
#[derive(Debug, Default)]
pub(crate) struct Routes {
    pub(crate) sessions: Mutex<HashMap<SessionKey, Downstream>>,
    inflight: Mutex<HashMap<String, Vec<InFlight>>>,
    next: AtomicU64,
    /// The session registry of each server in front (one gateway may be served over stdio
    /// and HTTP at once), known from their first request: notifications for all clients go
    /// through them, so a stateless client's `subscriptions/listen` stream hears them too,
    /// filtered as it asked.
    registries: Mutex<Vec<Sessions>>,
}

impl Routes {
    /// Remembers the client of `context` (on its first request).
    fn register(&self, context: &RequestContext) {
        {
            let mut registries = lock(&self.registries);
            if !registries.iter().any(|r| r.same(&context.sessions)) {
                registries.push(context.sessions.clone());
            }
        }
        let mut sessions = lock(&self.sessions);
        sessions
            .entry(context.session)
            .or_insert_with(|| Downstream {
                peer: context.peer.unrelated(),
                client: context.client.clone(),
                subscriptions: BTreeSet::new(),
                log_level: None,
            });
    }

    /// Sends a notification to every client, through the registries of the servers in front
    /// (handshake sessions on their streams, stateless ones on their listen streams).
    pub(crate) fn broadcast(&self, method: &str, params: Option<RawJson>) {
        let registries = lock(&self.registries).clone();
        for registry in registries {
            registry.notify(method, params.clone());
        }
    }

    /// Records the level a client set with `logging/setLevel`.
    pub(crate) fn set_log_level(&self, session: SessionKey, level: serde_json::Value) {
        if let Some(d) = lock(&self.sessions).get_mut(&session) {
            d.log_level = Some(level);
        }
    }

    /// The level a client set with `logging/setLevel`, if any.
    fn log_level(&self, session: SessionKey) -> Option<serde_json::Value> {
        lock(&self.sessions)
            .get(&session)
            .and_then(|d| d.log_level.clone())
    }

    fn closed(&self, session: SessionKey) {
        lock(&self.sessions).remove(&session);
        for calls in lock(&self.inflight).values_mut() {
            calls.retain(|c| c.session != session);
        }
    }

    /// Records that the request in `context` waits on `server` until the guard is dropped.
    pub(crate) fn track(self: &Arc<Self>, server: &str, context: &RequestContext) -> Tracked {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        lock(&self.inflight)
            .entry(server.to_owned())
            .or_default()
            .push(InFlight {
                id,
                session: context.session,
                peer: context.peer.clone(),
                client: context.client.clone(),
                stateless: context.era == Some(Era::Stateless),
            });
        Tracked {
            routes: Arc::clone(self),
            server: server.to_owned(),
            id,
        }
    }

    /// Where an upstream's request goes: the latest client request waiting on that upstream,
    /// else the only client (unprompted requests, such as `roots/list` after start-up).
    fn target(&self, server: &str) -> Result<(Peer, Option<Arc<ClientInfo>>), &'static str> {
        if let Some(call) = lock(&self.inflight)
            .get(server)
            .and_then(|calls| calls.last())
        {
            if call.stateless {
                return Err(
                    "the client waiting on it speaks the stateless era, where a request cannot reach it mid-call (the upstream would have to answer input_required)",
                );
            }
            return Ok((call.peer.clone(), call.client.clone()));
        }
        let sessions = lock(&self.sessions);
        if sessions.len() == 1 {
            return sessions
                .values()
                .next()
                .map(|d| (d.peer.clone(), d.client.clone()))
                .ok_or("no client of the gateway is waiting on it");
        }
        Err("no client of the gateway is waiting on it")
    }

    /// The client request waiting on `server` most recently, if any: its peer, so that what
    /// the upstream says about that call (a log entry) travels on the request's stream.
    pub(crate) fn waiting_on(&self, server: &str) -> Option<Peer> {
        lock(&self.inflight)
            .get(server)
            .and_then(|calls| calls.last())
            .map(|call| call.peer.clone())
    }
}

/// Removes its in-flight record when dropped (the call ended or was cancelled).
#[derive(Debug)]
pub(crate) struct Tracked {
    routes: Arc<Routes>,
    server: String,
    id: u64,
}

impl Drop for Tracked {
    fn drop(&mut self) {
        if let Some(calls) = lock(&self.routes.inflight).get_mut(&self.server) {
            calls.retain(|c| c.id != self.id);
        }
    }
}

/// Answers the upstream servers' requests by passing them to a client in front that declared
/// the capability. The gateway declares sampling, both elicitation modes and roots upstream,
/// since which clients will come is not known when the upstreams connect.
struct Forwarder {
    routes: Arc<Routes>,
}

/// How long a forwarded request may wait: a person may be answering it.
const FORWARD_TIMEOUT: Duration = Duration::from_secs(600);

impl RequestHandler for Forwarder {
    fn capabilities(&self) -> ClientCapabilities {
        let mut capabilities = ClientCapabilities::new();
        capabilities.sampling = Some(SamplingCapability::new());
        capabilities.elicitation = serde_json::from_value::<ElicitationCapability>(
            serde_json::json!({"form": {}, "url": {}}),
        )
        .ok();
        let mut roots = RootsCapability::new();
        roots.list_changed = Some(true);
        capabilities.roots = Some(roots);
        capabilities
    }

    fn handle<'a>(
        &'a self,
        server: &'a str,
        request: ServerRequest,
    ) -> Pin<Box<dyn Future<Output = Result<RawJson, ErrorObject>> + Send + 'a>> {
        Box::pin(async move {
            let method = request.method().to_owned();
            let (peer, client) = self.routes.target(server).map_err(|why| {
                ErrorObject::new(
                    mcp_protocol::code::METHOD_NOT_FOUND,
                    format!("{method} from server `{server}` cannot be passed on: {why}"),
                )
            })?;
            refuse_undeclared(&request, client.as_ref().map(|c| &c.capabilities))?;
            let params = request
                .encode_params()
                .map_err(|e| ErrorObject::new(mcp_protocol::code::INVALID_PARAMS, e.to_string()))?;
            peer.request_raw(
                &method,
                params,
                RequestOptions::DEFAULT.timeout(FORWARD_TIMEOUT),
            )
            .await
            .map_err(|e| match e {
                mcp_protocol::Error::Rpc { error, .. } => error,
                other => ErrorObject::new(
                    mcp_protocol::code::INTERNAL_ERROR,
                    format!("{method}: the gateway's client did not answer: {other}"),
                ),
            })
        })
    }
}

/// SPEC.md §10: a request the client did not declare support for is refused here, with
/// -32601 (or -32602 for an elicitation mode it did not declare, read as the protocol's own
/// client session reads it: `{}` declares form only).
fn refuse_undeclared(
    request: &ServerRequest,
    capabilities: Option<&ClientCapabilities>,
) -> Result<(), ErrorObject> {
    let missing = |what: &str| {
        Err(ErrorObject::new(
            mcp_protocol::code::METHOD_NOT_FOUND,
            format!("the client in front of the gateway does not support {what}"),
        ))
    };
    match request {
        ServerRequest::CreateMessage(_)
            if capabilities.and_then(|c| c.sampling.as_ref()).is_none() =>
        {
            return missing("sampling");
        }
        ServerRequest::ListRoots(_) if capabilities.and_then(|c| c.roots.as_ref()).is_none() => {
            return missing("roots");
        }
        ServerRequest::Elicit(params) => {
            let Some(declared) = capabilities.and_then(|c| c.elicitation.as_ref()) else {
                return missing("elicitation");
            };
            let supported = if params.is_url_mode() {
                declared.supports_url()
            } else {
                declared.supports_form()
            };
            if !supported {
                return Err(ErrorObject::new(
                    mcp_protocol::code::INVALID_PARAMS,
                    format!(
                        "the client in front of the gateway does not support elicitation mode `{}`",
                        params.mode.as_deref().unwrap_or("form")
                    ),
                ));
            }
        }
        _ => {}
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caps(json: serde_json::Value) -> ClientCapabilities {
        serde_json::from_value(json).expect("capabilities")
    }

    fn elicit(mode: Option<&str>) -> ServerRequest {
        let mut params = serde_json::json!({"message": "m", "requestedSchema": {"type": "object", "properties": {}}});
        if let Some(mode) = mode {
            params["mode"] = mode.into();
            params["url"] = "https://example.invalid/x".into();
            params["elicitationId"] = "e1".into();
        }
        let raw = RawJson::encode(&params).expect("encodes");
        ServerRequest::decode("elicitation/create", Some(&raw)).expect("decodes")
    }

    #[test]
    fn sampling_is_refused_to_a_client_without_it() {
        let raw = RawJson::encode(&serde_json::json!({"messages": [], "maxTokens": 10}))
            .expect("encodes");
        let request = ServerRequest::decode("sampling/createMessage", Some(&raw)).expect("decodes");
        let e =
            refuse_undeclared(&request, Some(&caps(serde_json::json!({})))).expect_err("refused");
        assert_eq!(e.code, mcp_protocol::code::METHOD_NOT_FOUND);
        refuse_undeclared(&request, Some(&caps(serde_json::json!({"sampling": {}}))))
            .expect("declared");
    }

    #[test]
    fn elicitation_modes_follow_the_declaration() {
        let (form, url) = (elicit(None), elicit(Some("url")));
        let empty = caps(serde_json::json!({"elicitation": {}}));
        refuse_undeclared(&form, Some(&empty)).expect("{} is form");
        let e = refuse_undeclared(&url, Some(&empty)).expect_err("no url");
        assert_eq!(e.code, mcp_protocol::code::INVALID_PARAMS);
        assert!(e.message.contains("`url`"), "{}", e.message);
        let both = caps(serde_json::json!({"elicitation": {"form": {}, "url": {}}}));
        refuse_undeclared(&url, Some(&both)).expect("url declared");
        let url_only = caps(serde_json::json!({"elicitation": {"url": {}}}));
        refuse_undeclared(&form, Some(&url_only)).expect_err("no form");
        let e = refuse_undeclared(&form, None).expect_err("nothing declared");
        assert_eq!(e.code, mcp_protocol::code::METHOD_NOT_FOUND);
    }

    #[test]
    fn gateway_errors_name_their_kind_first() {
        let r = tool_error(ErrorKind::UnknownCategory, "no category `x`");
        assert_eq!(r.is_error, Some(true));
        let json = serde_json::to_value(&r).expect("encodes");
        assert_eq!(
            json["content"][0]["text"],
            "UnknownCategory: no category `x`"
        );
        assert_eq!(
            json["structuredContent"]["error"]["kind"],
            "UnknownCategory"
        );
    }
}
