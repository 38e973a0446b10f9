//! The client side of a session: what a host runs for each server it talks to. How the era
//! is found is `negotiate.rs`; the stateless era's multi round-trip requests are
//! `round_trip.rs`; when to ping a silent server is `liveness.rs`.
//! This file is long because it is one state machine, `ClientSession`: requests, answers,
//! cancellation, notifications and time-outs are transitions of the same state (era negotiation,
//! round trips and liveness are already split out).

mod liveness;
mod negotiate;
mod round_trip;

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use crate::error::Error;
use crate::jsonrpc::{
    DecodeError, Decoded, ErrorObject, ErrorResponse, Message, Notification, RawJson, Request,
    RequestId, Response, code,
};
use crate::schema::{
    ClientCapabilities, CreateMessageParams, DiscoverResult, ElicitParams, Envelope,
    Implementation, InitializeParams, InitializeResult, LoggingLevel, NotificationMethod,
    ProgressParams, RequestMethod, ResultType, ServerCapabilities, ServerNotification,
    ServerRequest, is_removed, may_need_input, meta_key, method, supported_versions,
};
use crate::session::client::liveness::{Liveness, Verdict};
use crate::session::input::Inputs;
use crate::session::pending::{Core, Matched, Pending, RequestOptions};
use crate::session::task_progress::{self, TaskProgress};
use crate::version::{Era, ProtocolVersion};
use crate::wire::JsonObject;

/// How a client session introduces itself and how long it waits.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ClientConfig {
    /// Sent as `clientInfo`.
    pub client_info: Implementation,
    /// Sent as `capabilities` (in `initialize`, or in every request's `_meta`); server
    /// requests for anything absent here are refused.
    pub capabilities: ClientCapabilities,
    /// The version offered in `initialize` when the server speaks the handshake era.
    pub protocol_version: ProtocolVersion,
    /// The versions the client speaks. Both eras listed: the session finds out which one the
    /// server speaks (`server/discover` first, `initialize` if that fails). One era only: the
    /// era is pinned and never negotiated.
    pub supported_versions: Vec<ProtocolVersion>,
    /// The hard timeout of a request whose options name none, `initialize` included.
    pub request_timeout: Duration,
    /// How long the `server/discover` probe may go unanswered before the server is taken
    /// for a handshake-era one (a server that ignores unknown methods never answers); at
    /// most [`request_timeout`](Self::request_timeout), whatever is set here.
    pub probe_timeout: Duration,
    /// The era this server spoke before (a transport's cache, per origin or per process):
    /// [`Era::Handshake`] skips the probe, and the session probes anyway if `initialize`
    /// is answered as only a stateless server would.
    pub cached_era: Option<Era>,
    /// The stateless era's per-request log level: without one, the server sends no log
    /// entries. The handshake era uses `logging/setLevel` instead.
    pub log_level: Option<LoggingLevel>,
    /// In the handshake era, ping the server once it has been silent this long, to find out
    /// that it (or the network to it) is gone before the next request would. `None`, the
    /// default, never pings; zero is taken as `None`. The 2026-07-28 era has no `ping`, so
    /// this does nothing there.
    pub ping_interval: Option<Duration>,
    /// How long such a ping may go unanswered, with nothing else heard from the server,
    /// before the session ends and every request in flight fails with
    /// [`Error::Unresponsive`].
    pub ping_timeout: Duration,
}

impl ClientConfig {
    /// A client that declares no capabilities and speaks every known version of both eras,
    /// offering 2025-11-25 to a handshake-era server, with a 60-second request timeout and a
    /// 10-second probe, and no liveness pings (a 10-second ping deadline once they are turned
    /// on).
    pub fn new(client_info: Implementation) -> Self {
        Self {
            client_info,
            capabilities: ClientCapabilities::new(),
            protocol_version: ProtocolVersion::LATEST_HANDSHAKE,
            supported_versions: ProtocolVersion::KNOWN.to_vec(),
            request_timeout: Duration::from_secs(60),
            probe_timeout: Duration::from_secs(10),
            cached_era: None,
            log_level: None,
            ping_interval: None,
            ping_timeout: Duration::from_secs(10),
        }
    }

    /// The newest stateless-era version the client speaks, if any.
    fn stateless_offer(&self) -> Option<ProtocolVersion> {
        self.newest(Era::Stateless)
    }

    /// The version to offer in `initialize`: the configured one if the client speaks it, else
    /// the newest handshake-era one it speaks.
    fn handshake_offer(&self) -> Option<ProtocolVersion> {
        let preferred = &self.protocol_version;
        if preferred.era() == Some(Era::Handshake) && self.supported_versions.contains(preferred) {
            return Some(preferred.clone());
        }
        self.newest(Era::Handshake)
    }

    fn newest(&self, era: Era) -> Option<ProtocolVersion> {
        self.speaks(era).max().cloned()
    }

    fn speaks(&self, era: Era) -> impl Iterator<Item = &ProtocolVersion> {
        self.supported_versions
            .iter()
            .filter(move |v| v.era() == Some(era))
    }
}

/// What the server told us in the handshake.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ServerInfo {
    /// The negotiated version.
    pub protocol_version: ProtocolVersion,
    /// What the server offers.
    pub capabilities: ServerCapabilities,
    /// Who the server is (untrusted).
    pub implementation: Implementation,
    /// The server's hint for the model (untrusted).
    pub instructions: Option<String>,
    /// The era the session speaks with this server.
    pub era: Era,
    /// How that era was chosen, for a person: "server/discover listed 2026-07-28", "the
    /// configuration pins 2025-06-18", "server/discover failed (-32601 …); initialize
    /// agreed on 2025-11-25".
    pub negotiation: String,
}

/// Something the caller of a [`ClientSession`] must act on, from [`ClientSession::poll_event`].
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ClientEvent {
    /// The handshake (or, in the stateless era, `server/discover`) finished; requests may be
    /// sent.
    Ready(ServerInfo),
    /// A request we sent ended: a result to decode by its method's type, or why it failed.
    Response {
        /// The request's id.
        id: RequestId,
        /// The request's method.
        method: String,
        /// The raw result, or the failure.
        outcome: Result<RawJson, Error>,
    },
    /// Progress on a request we sent.
    Progress {
        /// The request's id.
        id: RequestId,
        /// The notification.
        params: ProgressParams,
    },
    /// The server asks for something the client declared: answer with
    /// [`ClientSession::respond`] or [`ClientSession::respond_error`].
    Request {
        /// The request's id, to answer with.
        id: RequestId,
        /// The request.
        request: ServerRequest,
    },
    /// The server withdrew a request it had sent us; do not answer it.
    RequestCancelled {
        /// The withdrawn request's id.
        id: RequestId,
        /// The server's reason.
        reason: Option<String>,
    },
    /// A notification for the host: log entries, list changes, resource updates.
    Notification(ServerNotification),
    /// The server did something wrong that did not end the session; worth logging.
    Diagnostic(String),
    /// The session ended; every request in flight has failed.
    Closed(Error),
}

/// The lifecycle of a client session, both eras (SPEC-2026 §2).
///
/// ```text
///            initialize()   modern supportedVersions (or -32022 naming one: re-probe once)
///   Idle ──> Discovering ───────────────────────────────────────────────> Operating(stateless)
///    │          │ any other answer, a refusal without JSON-RPC, no answer in time
///    │          v                         result, version ok
///    └────> Initializing ───────────────────────────────────> Operating(handshake)
///  (handshake  │  -32022 naming a stateless version: probe again, once ↑
///   only, or   └─ version unsupported, error, timeout ─────────────────────> Closed
///   cached)
/// ```
#[derive(Debug)]
enum State {
    Idle,
    /// `server/discover` is out: the era is not known yet (or is, when pinned).
    Discovering {
        id: RequestId,
        offered: ProtocolVersion,
        retried: bool,
    },
    Initializing {
        id: RequestId,
        offered: ProtocolVersion,
        retried: bool,
    },
    Operating(Box<ServerInfo>),
    Closed,
}

/// The sans-IO client session: it allocates ids, tracks requests and their deadlines, answers
/// pings (and, if asked, pings a silent server), refuses what the host did not declare, and
/// never reads the clock.
///
/// Drive it like this, after any input (`handle_*`, a command) or when the timer fires:
/// 1. send every [`poll_transmit`](Self::poll_transmit) message;
/// 2. arm a timer for [`poll_timeout`](Self::poll_timeout) and call
///    [`handle_timeout`](Self::handle_timeout) when it fires;
/// 3. act on every [`poll_event`](Self::poll_event).
#[derive(Debug)]
pub struct ClientSession {
    config: ClientConfig,
    era: Era,
    state: State,
    core: Core,
    events: VecDeque<ClientEvent>,
    /// Why the session ended, for every later call that finds it closed.
    closed_reason: Option<String>,
    /// How the era is being chosen so far, for [`ServerInfo::negotiation`].
    negotiation: String,
    /// Whether `initialize` was answered as only a stateless server would, and the session
    /// probed again: once only, so that two confused servers cannot loop.
    reprobed: bool,
    /// The stateless era's multi round-trip requests and the input they wait for.
    inputs: Inputs,
    /// When the server was last heard from, and the liveness ping in flight.
    liveness: Liveness,
    /// Progress tokens of calls answered with a task, valid until the task ends.
    task_progress: TaskProgress,
}

impl ClientSession {
    /// A session in the handshake era that has sent nothing yet.
    pub fn new(config: ClientConfig) -> Self {
        Self {
            config,
            era: Era::Handshake,
            state: State::Idle,
            core: Core::default(),
            events: VecDeque::new(),
            closed_reason: None,
            negotiation: String::new(),
            reprobed: false,
            inputs: Inputs::default(),
            liveness: Liveness::default(),
            task_progress: TaskProgress::default(),
        }
    }

    /// The version the requests now queued carry in `_meta` (and, over HTTP, in
    /// `MCP-Protocol-Version`): the probe's while discovering, the negotiated one in the
    /// stateless era; `None` in the handshake era, whose transports follow its own rules.
    pub fn stamped_version(&self) -> Option<&ProtocolVersion> {
        match &self.state {
            State::Discovering { offered, .. } => Some(offered),
            State::Operating(info) if info.era == Era::Stateless => Some(&info.protocol_version),
            _ => None,
        }
    }

    /// The era the session speaks.
    pub fn era(&self) -> Era {
        self.era
    }

    /// The server's handshake answer, once the session is operating.
    pub fn server_info(&self) -> Option<&ServerInfo> {
        match &self.state {
            State::Operating(info) => Some(info),
            _ => None,
        }
    }

    /// Whether requests may be sent.
    pub fn is_ready(&self) -> bool {
        matches!(self.state, State::Operating(_))
    }

    /// Whether the session has ended.
    pub fn is_closed(&self) -> bool {
        matches!(self.state, State::Closed)
    }

    /// How many requests are waiting for an answer (or, in the stateless era, for the input
    /// their retry needs).
    pub fn in_flight(&self) -> usize {
        self.core.pending_len() + self.inputs.waiting_len()
    }

    /// Starts the session: the `server/discover` probe when the client speaks the stateless
    /// era, else (or when the cache says the server speaks the handshake era) `initialize`.
    pub fn initialize(&mut self, now: Instant) -> Result<RequestId, Error> {
        match self.state {
            State::Idle => {}
            State::Closed => return Err(self.closed_error()),
            _ => return Err(Error::ApiMisuse("initialize was already sent".to_owned())),
        }
        let stateless = self.config.stateless_offer();
        let handshake = self.config.handshake_offer();
        match (stateless, handshake) {
            (Some(version), None) => {
                self.negotiation = format!("the configuration pins {version}");
                self.probe(now, version, false)
            }
            (Some(version), Some(_)) if self.config.cached_era != Some(Era::Handshake) => {
                self.probe(now, version, false)
            }
            (_, Some(version)) => {
                self.negotiation = if self.config.cached_era == Some(Era::Handshake) {
                    "this server spoke the handshake era before; ".to_owned()
                } else if self.config.supported_versions.len() == 1 {
                    format!("the configuration pins {version}; ")
                } else {
                    String::new()
                };
                self.start_initialize(now, version)
            }
            (None, None) => Err(Error::ApiMisuse(
                "the client supports no protocol version this crate knows".to_owned(),
            )),
        }
    }

    /// The stateless era's per-request `_meta` members.
    fn envelope(&self, version: &ProtocolVersion) -> JsonObject {
        let mut meta = JsonObject::new();
        let mut put = |key: &str, value: serde_json::Result<serde_json::Value>| {
            // Our own types always encode: they have string keys only.
            if let Ok(value) = value {
                meta.insert(key.to_owned(), value);
            }
        };
        put(meta_key::PROTOCOL_VERSION, serde_json::to_value(version));
        put(
            meta_key::CLIENT_CAPABILITIES,
            serde_json::to_value(&self.config.capabilities),
        );
        put(
            meta_key::CLIENT_INFO,
            serde_json::to_value(&self.config.client_info),
        );
        if let Some(level) = &self.config.log_level {
            put(meta_key::LOG_LEVEL, serde_json::to_value(level));
        }
        meta
    }

    /// Sends a request by method name with raw parameters, as a proxy does.
    ///
    /// Only `ping` may go before the handshake finishes; `initialize` is sent by
    /// [`initialize`](Self::initialize) alone. In the stateless era the session adds the
    /// `_meta` envelope, but keeps a `clientCapabilities` or `logLevel` the params already
    /// carry there: a proxy declares what its own client can answer and wants to hear.
    pub fn send_request(
        &mut self,
        now: Instant,
        method: &str,
        params: Option<RawJson>,
        options: RequestOptions,
    ) -> Result<RequestId, Error> {
        if method == <method::Initialize as RequestMethod>::METHOD {
            return Err(Error::ApiMisuse(
                "initialize is sent by ClientSession::initialize".to_owned(),
            ));
        }
        let stateless = match &self.state {
            State::Operating(info) => {
                (info.era == Era::Stateless).then(|| info.protocol_version.clone())
            }
            State::Closed => return Err(self.closed_error()),
            State::Idle | State::Initializing { .. }
                if method == <method::Ping as RequestMethod>::METHOD =>
            {
                None
            }
            _ => {
                return Err(Error::ApiMisuse(format!(
                    "{method} cannot be sent before the handshake has finished"
                )));
            }
        };
        if params.as_ref().is_some_and(|p| !p.is_object()) {
            return Err(Error::ApiMisuse(format!(
                "{method} params must be a JSON object"
            )));
        }
        let Some(version) = stateless else {
            return self.core.send_request(
                now,
                method,
                params,
                options,
                self.config.request_timeout,
                None,
            );
        };
        if is_removed(method) {
            return Err(Error::ApiMisuse(format!(
                "{method} does not exist in MCP {version}"
            )));
        }
        let envelope = self.envelope(&version);
        let kept = (may_need_input(method) && !options.pass_input_required).then(|| params.clone());
        let id = self.core.send_request(
            now,
            method,
            params,
            options,
            self.config.request_timeout,
            Some(&envelope),
        )?;
        if let Some(params) = kept {
            self.inputs.track(id.clone(), method, params, options);
        }
        Ok(id)
    }

    /// Sends a typed request; decode its [`ClientEvent::Response`] with
    /// [`decode_result::<M>`](crate::decode_result).
    pub fn request<M: RequestMethod>(
        &mut self,
        now: Instant,
        params: &M::Params,
        options: RequestOptions,
    ) -> Result<RequestId, Error> {
        let params = RawJson::encode(params).map_err(|e| Error::ApiMisuse(e.to_string()))?;
        self.send_request(now, M::METHOD, Some(params), options)
    }

    /// Sends a notification (`notifications/roots/list_changed`, or one we do not know).
    pub fn notify<N: NotificationMethod>(&mut self, params: &N::Params) -> Result<(), Error> {
        if !self.is_ready() {
            return Err(Error::ApiMisuse(format!(
                "{} cannot be sent before the handshake has finished",
                N::METHOD
            )));
        }
        if self.era == Era::Stateless
            && N::METHOD == <method::RootsListChanged as NotificationMethod>::METHOD
        {
            return Err(Error::ApiMisuse(
                "notifications/roots/list_changed does not exist in MCP 2026-07-28".to_owned(),
            ));
        }
        if N::METHOD == <method::RootsListChanged as NotificationMethod>::METHOD
            && self
                .config
                .capabilities
                .roots
                .as_ref()
                .and_then(|r| r.list_changed)
                != Some(true)
        {
            return Err(Error::ApiMisuse(
                "roots list_changed needs the roots.listChanged capability".to_owned(),
            ));
        }
        self.core.push_notification(N::METHOD, params);
        Ok(())
    }

    /// Whether progress for request `id` still reaches its caller after the request's answer
    /// came: a `tools/call` answered with a task keeps its progress token until the task
    /// reaches a terminal status (seen in a `tasks/get` or `tasks/cancel` answer, a
    /// `tasks/result` answer, or a status notification), its time to live passes, or it is
    /// one of the oldest beyond a bound.
    pub fn keeps_task_progress(&self, id: &RequestId) -> bool {
        self.task_progress.holds(id)
    }

    /// Lets go of the progress token kept for request `id`'s task: its caller is gone.
    pub fn release_task_progress(&mut self, id: &RequestId) {
        self.task_progress.release(id);
    }

    /// Keeps the progress token of a `tools/call` answered with a task, and lets go of a
    /// task's token when a `tasks/get` or `tasks/cancel` answer shows it ended.
    fn track_task_progress(
        &mut self,
        now: Instant,
        logical: &RequestId,
        pending: &Pending,
        outcome: &Result<RawJson, Error>,
    ) {
        let Ok(raw) = outcome else {
            return;
        };
        match pending.method.as_str() {
            "tools/call" => {
                if let Some(token) = &pending.progress_token
                    && let Some((task_id, ttl_ms)) = task_progress::announced_task(raw)
                {
                    self.task_progress
                        .keep(now, token.clone(), logical.clone(), task_id, ttl_ms);
                }
            }
            "tasks/get" | "tasks/cancel" => {
                if let Some(task_id) = task_progress::terminal_task(raw) {
                    self.task_progress.task_ended(&task_id);
                }
            }
            "tasks/result" => {
                if let Some(task_id) = task_progress::finished_task(raw) {
                    self.task_progress.task_ended(&task_id);
                }
            }
            _ => {}
        }
    }

    /// Cancels a request in flight: the server is told, the request fails with
    /// [`Error::Cancelled`], and a late answer is dropped. `initialize` cannot be cancelled.
    /// Returns `false` if the request had already ended.
    pub fn cancel(&mut self, id: &RequestId, reason: Option<&str>) -> Result<bool, Error> {
        if let State::Initializing { id: init, .. } | State::Discovering { id: init, .. } =
            &self.state
            && init == id
        {
            return Err(Error::ApiMisuse(
                "initialize must not be cancelled".to_owned(),
            ));
        }
        if self.inputs.is_waiting(id) {
            // Nothing is on the wire: the server forgot the request when it asked for input.
            let method = self
                .inputs
                .get_mut(id)
                .map(|t| t.method.clone())
                .unwrap_or_default();
            let unanswered = self.inputs.forget(id);
            self.withdraw_inputs(unanswered);
            self.events.push_back(ClientEvent::Response {
                id: id.clone(),
                method: method.clone(),
                outcome: Err(Error::Cancelled { method }),
            });
            return Ok(true);
        }
        let wire = self.inputs.wire_of(id);
        let Some(p) = self.core.abandon(&wire, reason, true) else {
            return Ok(false);
        };
        let (logical, _) = self.inputs.end(&wire);
        self.events.push_back(ClientEvent::Response {
            id: logical,
            method: p.method.clone(),
            outcome: Err(Error::Cancelled { method: p.method }),
        });
        Ok(true)
    }

    /// Tells the caller to drop input requests it was handed and that nobody waits for now.
    fn withdraw_inputs(&mut self, ids: Vec<RequestId>) {
        for id in ids {
            if self.core.inbound.remove(&id).is_some() {
                self.events.push_back(ClientEvent::RequestCancelled {
                    id,
                    reason: Some("the request that needed this input has ended".to_owned()),
                });
            }
        }
    }

    /// Whether a request we sent still waits for its answer: not answered, not cancelled, not
    /// timed out. A transport does not resume a stream for one that is over.
    pub fn is_in_flight(&self, id: &RequestId) -> bool {
        self.core.method_of(id).is_some()
    }

    /// The request of ours that `id` belongs to, as the caller of
    /// [`send_request`](Self::send_request) knows it: for the wire id of a multi round-trip
    /// retry, the first send's id; for an input request this session handed over
    /// ([`ClientEvent::Request`]), the request whose `input_required` result asked it; for any
    /// other id of ours, itself. A proxy uses it to tell which of its callers a server's
    /// message is about (the id of the request whose stream carried it, or an input request).
    pub fn request_behind(&self, id: &RequestId) -> RequestId {
        match self.inputs.asked_for(id) {
            Some(logical) => logical.clone(),
            None => self.inputs.logical(id),
        }
    }

    /// Fails a request whose answer the transport could not deliver (a response line over the
    /// size limit, say): it ends with [`Error::Transport`] and a reply that still comes is
    /// dropped. The server is not told; it has already answered. Returns `false` if the request
    /// was not in flight.
    pub fn fail(&mut self, id: &RequestId, detail: &str) -> bool {
        if let State::Initializing { id: init, .. } | State::Discovering { id: init, .. } =
            &self.state
            && init == id
        {
            let method = self.core.method_of(id).unwrap_or("initialize").to_owned();
            let _ = self.core.abandon(id, None, false);
            self.close_with(Error::Transport {
                method,
                detail: detail.to_owned(),
            });
            return true;
        }
        if self.liveness.is_ping(id) {
            // No answer will come; the ping's deadline decides, by what is heard until then.
            return self.core.method_of(id).is_some();
        }
        let Some(p) = self.core.abandon(id, None, false) else {
            return false;
        };
        let (logical, _) = self.inputs.end(id);
        self.events.push_back(ClientEvent::Response {
            id: logical,
            method: p.method.clone(),
            outcome: Err(Error::Transport {
                method: p.method,
                detail: detail.to_owned(),
            }),
        });
        true
    }

    /// Fails a request the server refused without a JSON-RPC answer (an HTTP 400, 404 or 405
    /// whose body is no JSON-RPC error, say). To the `server/discover` probe that is the
    /// answer of a handshake-era server, so the session falls back to `initialize`; any other
    /// request fails as [`fail`](Self::fail) would. Returns `false` if the request was not in
    /// flight.
    pub fn reject(&mut self, now: Instant, id: &RequestId, detail: &str) -> bool {
        if let State::Discovering { id: probe, .. } = &self.state
            && probe == id
        {
            let _ = self.core.abandon(id, None, false);
            self.fall_back(now, format!("server/discover was refused ({detail})"));
            return true;
        }
        self.fail(id, detail)
    }

    /// Answers a server request that [`ClientEvent::Request`] delivered. Returns `false` if
    /// the server has withdrawn it (the answer is dropped, as the spec asks).
    ///
    /// In the stateless era the request may be one of the inputs a multi round-trip request
    /// waits for; once all are answered, that request is sent again with them.
    pub fn respond(
        &mut self,
        now: Instant,
        id: &RequestId,
        result: RawJson,
    ) -> Result<bool, Error> {
        if self.core.inbound.remove(id).is_none() {
            return Ok(false);
        }
        if let Some((logical, key)) = self.inputs.take_asked(id) {
            let value: serde_json::Value = result
                .decode()
                .map_err(|e| Error::ApiMisuse(format!("the answer is not JSON: {e}")))?;
            let ready = match self.inputs.get_mut(&logical) {
                Some(t) => {
                    t.answers.insert(key, value);
                    t.waiting.is_empty()
                }
                None => false,
            };
            if ready {
                self.retry(now, &logical);
            }
            return Ok(true);
        }
        self.core.push_result(id.clone(), result);
        Ok(true)
    }

    /// Refuses a server request that [`ClientEvent::Request`] delivered. In the stateless era,
    /// refusing an input fails the request that needed it with [`Error::InputUnavailable`].
    pub fn respond_error(&mut self, id: &RequestId, error: ErrorObject) -> Result<bool, Error> {
        if self.core.inbound.remove(id).is_none() {
            return Ok(false);
        }
        if let Some((logical, key)) = self.inputs.take_asked(id) {
            let method = self
                .inputs
                .get_mut(&logical)
                .map(|t| t.method.clone())
                .unwrap_or_default();
            let unanswered = self.inputs.forget(&logical);
            self.withdraw_inputs(unanswered);
            self.events.push_back(ClientEvent::Response {
                id: logical,
                method: method.clone(),
                outcome: Err(Error::InputUnavailable {
                    method,
                    detail: format!("{key}: {}", error.message),
                }),
            });
            return Ok(true);
        }
        self.core.push_error_object(Some(id.clone()), error);
        Ok(true)
    }

    /// Ends the session: every request in flight fails with [`Error::Closed`].
    pub fn close(&mut self, reason: &str) {
        self.close_with(Error::Closed(reason.to_owned()));
    }

    fn close_with(&mut self, error: Error) {
        if matches!(self.state, State::Closed) {
            return;
        }
        self.state = State::Closed;
        let ended = match &error {
            Error::Closed(reason) => Error::Closed(reason.clone()),
            other => Error::Closed(other.to_string()),
        };
        if let Error::Closed(reason) = &ended {
            self.closed_reason = Some(reason.clone());
        }
        self.task_progress.clear();
        for (id, p) in self.core.drain_pending() {
            if self.liveness.is_ping(&id) {
                // Nobody waits for it.
                continue;
            }
            let (logical, _) = self.inputs.end(&id);
            self.events.push_back(ClientEvent::Response {
                id: logical,
                method: p.method,
                outcome: Err(ended.clone()),
            });
        }
        for (logical, method, _) in self.inputs.drain_waiting() {
            self.events.push_back(ClientEvent::Response {
                id: logical,
                method,
                outcome: Err(ended.clone()),
            });
        }
        self.core.inbound.clear();
        self.liveness.clear();
        self.events.push_back(ClientEvent::Closed(error));
    }

    fn closed_error(&self) -> Error {
        Error::Closed(
            self.closed_reason
                .clone()
                .unwrap_or_else(|| "the session has ended".to_owned()),
        )
    }

    /// Feeds one decoded frame: a message, or a batch from a 2025-03-26 server.
    pub fn handle_decoded(&mut self, now: Instant, decoded: Decoded) {
        if matches!(self.state, State::Closed) {
            return;
        }
        self.liveness.heard(now);
        match decoded {
            Decoded::Single(message) => self.handle_message(now, message),
            Decoded::Batch(items) => {
                let allowed = match &self.state {
                    State::Operating(info) => info.protocol_version.allows_batches(),
                    _ => false,
                };
                if !allowed {
                    self.events.push_back(ClientEvent::Diagnostic(
                        "server sent a JSON-RPC batch, which only 2025-03-26 allows; processing it anyway".to_owned(),
                    ));
                }
                for item in items {
                    match item {
                        Ok(message) => self.handle_message(now, message),
                        Err(err) => self.handle_invalid(now, err),
                    }
                }
            }
        }
    }

    /// Feeds a frame that did not decode. A request we cannot read is answered with the
    /// JSON-RPC error; a broken answer to one of our requests fails that request.
    pub fn handle_invalid(&mut self, now: Instant, error: DecodeError) {
        if matches!(self.state, State::Closed) {
            return;
        }
        // Even a frame we cannot read shows the server is there.
        self.liveness.heard(now);
        // Only a request we cannot read is answered: the server is waiting for that answer.
        // A line of log text on stdout gets no "Parse error" back, which would only add noise.
        let owed = error.kind == crate::jsonrpc::DecodeErrorKind::InvalidRequest;
        if let Some(response) = error.to_response().filter(|_| owed) {
            self.core.outbox.push_back(response);
        } else if let Some(id) = error.id.clone().filter(|_| !error.has_method)
            && self.core.method_of(&id).is_some()
        {
            let failure = Error::Protocol(error.to_string());
            self.finish(now, id, Err(failure));
            return;
        }
        self.events.push_back(ClientEvent::Diagnostic(format!(
            "dropped a frame from the server: {error}"
        )));
    }

    /// Feeds one message from the server.
    pub fn handle_message(&mut self, now: Instant, message: Message) {
        if matches!(self.state, State::Closed) {
            return;
        }
        self.liveness.heard(now);
        match message {
            Message::Response(Response { id, result }) => self.finish(now, id, Ok(result)),
            Message::Error(ErrorResponse {
                id: Some(id),
                error,
            }) => {
                let method = self.core.method_of(&id).unwrap_or_default().to_owned();
                self.finish(now, id, Err(Error::Rpc { method, error }));
            }
            Message::Error(ErrorResponse { id: None, error }) => {
                self.events.push_back(ClientEvent::Diagnostic(format!(
                    "server could not read a message we sent: {error}"
                )));
            }
            Message::Request(request) => self.handle_request(request),
            Message::Notification(notification) => self.handle_notification(now, notification),
        }
    }

    /// Ends a request with its answer, advancing the handshake if it was `initialize` or the
    /// probe, and driving a multi round-trip request to its retry.
    fn finish(&mut self, now: Instant, id: RequestId, outcome: Result<RawJson, Error>) {
        let pending = match self.core.match_response(&id) {
            Matched::Pending(_, p) => p,
            Matched::Late => return,
            Matched::Unknown => {
                self.events.push_back(ClientEvent::Diagnostic(format!(
                    "server answered request {id}, which is not in flight"
                )));
                return;
            }
        };
        if self.liveness.is_ping(&id) {
            // Any answer, an error too, shows the server is there; nobody else waits for it.
            self.liveness.answered();
            return;
        }
        match &self.state {
            State::Initializing { id: init, .. } if *init == id => {
                return self.finish_initialize(now, outcome);
            }
            State::Discovering { id: probe, .. } if *probe == id => {
                return self.finish_discover(now, outcome);
            }
            _ => {}
        }
        let mut outcome = outcome;
        if self.era == Era::Stateless
            && let Ok(raw) = &outcome
        {
            match Envelope::peek(raw).map(|e| e.result_type) {
                Ok(ResultType::Complete) => {}
                // A task (the extension `io.modelcontextprotocol/tasks`): the server runs the
                // request and its caller polls for the answer, which it asked for by declaring
                // the extension on the request.
                Ok(ResultType::Other(t)) if t == crate::schema::RESULT_TYPE_TASK => {}
                // The caller drives this one's retries itself (a proxy).
                Ok(ResultType::InputRequired)
                    if may_need_input(&pending.method) && !self.inputs.tracks(&id) => {}
                Ok(ResultType::InputRequired) => {
                    let raw = raw.clone();
                    return self.input_required(now, id, &pending.method, &raw);
                }
                Ok(other) => {
                    outcome = Err(Error::InvalidResult {
                        method: pending.method.clone(),
                        detail: format!("unknown resultType {:?}", other.as_str()),
                    });
                }
                Err(e) => {
                    outcome = Err(Error::InvalidResult {
                        method: pending.method.clone(),
                        detail: e.to_string(),
                    });
                }
            }
        }
        let (logical, unanswered) = self.inputs.end(&id);
        self.withdraw_inputs(unanswered);
        self.track_task_progress(now, &logical, &pending, &outcome);
        self.events.push_back(ClientEvent::Response {
            id: logical,
            method: pending.method,
            outcome,
        });
    }

    fn handle_request(&mut self, request: Request) {
        let Request { id, method, params } = request;
        if self.era == Era::Stateless {
            // The stateless era has no server-to-client requests: input comes by
            // `input_required` results, and ping is gone.
            self.core.push_error(
                Some(id),
                code::METHOD_NOT_FOUND,
                format!("{method}: MCP 2026-07-28 has no server-to-client requests"),
            );
            return;
        }
        if method == <method::Ping as RequestMethod>::METHOD {
            self.core.push_result(id, RawJson::empty_object());
            return;
        }
        if !self.is_ready() {
            self.core.push_error(
                Some(id),
                code::INVALID_REQUEST,
                format!("{method} sent before the handshake finished; only ping is allowed"),
            );
            return;
        }
        let routed = match ServerRequest::decode(&method, params.as_ref()) {
            Ok(routed) => routed,
            Err(e) => {
                self.core.push_error(
                    Some(id),
                    code::INVALID_PARAMS,
                    format!("invalid {method} params: {e}"),
                );
                return;
            }
        };
        if let Err((code, message)) = self.check_declared(&routed) {
            self.core.push_error(Some(id), code, message);
            return;
        }
        if !self.core.accept_inbound(&id, &method) {
            self.events.push_back(ClientEvent::Diagnostic(format!(
                "server reused request id {id} while it was still unanswered; ignored"
            )));
            return;
        }
        self.events.push_back(ClientEvent::Request {
            id,
            request: routed,
        });
    }

    /// Fail closed: a server request is delivered only for a capability the host declared.
    fn check_declared(&self, request: &ServerRequest) -> Result<(), (i64, String)> {
        let caps = &self.config.capabilities;
        match request {
            ServerRequest::ListRoots(_) if caps.roots.is_none() => {
                Err((code::METHOD_NOT_FOUND, "Roots not supported".to_owned()))
            }
            ServerRequest::CreateMessage(params) => check_sampling(caps, params),
            ServerRequest::Elicit(params) => check_elicitation(caps, params),
            ServerRequest::Other { method, .. } => Err((
                code::METHOD_NOT_FOUND,
                format!("Method not found: {method}"),
            )),
            _ => Ok(()),
        }
    }

    fn handle_notification(&mut self, now: Instant, notification: Notification) {
        let Notification { method, params } = notification;
        let routed = match ServerNotification::decode(&method, params.as_ref()) {
            Ok(routed) => routed,
            Err(e) => {
                self.events.push_back(ClientEvent::Diagnostic(format!(
                    "dropped {method} with invalid params: {e}"
                )));
                return;
            }
        };
        match routed {
            ServerNotification::Progress(params) => {
                if let Some(id) = self.core.progress(now, &params.progress_token) {
                    let id = self.inputs.logical(&id);
                    self.events.push_back(ClientEvent::Progress { id, params });
                } else if let Some(id) = self.task_progress.route(now, &params.progress_token) {
                    self.events.push_back(ClientEvent::Progress { id, params });
                }
            }
            // A task's status (2025-11-25 `notifications/tasks/status`, the 2026-07-28
            // extension's `notifications/tasks`): a terminal one ends its progress token. The
            // notification goes on to the caller all the same.
            ServerNotification::Other { method, params }
                if method == "notifications/tasks/status" || method == "notifications/tasks" =>
            {
                if let Some(task_id) = params.as_ref().and_then(task_progress::terminal_task) {
                    self.task_progress.task_ended(&task_id);
                }
                self.events
                    .push_back(ClientEvent::Notification(ServerNotification::Other {
                        method,
                        params,
                    }));
            }
            // On stdio a stateless server ends a `subscriptions/listen` stream by cancelling
            // it, and cancels nothing else.
            ServerNotification::Cancelled(params) if self.era == Era::Stateless => {
                if let Some(id) = params.request_id
                    && self.core.method_of(&id) == Some(<method::Listen as RequestMethod>::METHOD)
                {
                    self.finish(now, id, Ok(RawJson::empty_object()));
                }
            }
            ServerNotification::Cancelled(params) => {
                if let Some(id) = params.request_id
                    && self.core.inbound.remove(&id).is_some()
                {
                    self.events.push_back(ClientEvent::RequestCancelled {
                        id,
                        reason: params.reason,
                    });
                }
            }
            other => self.events.push_back(ClientEvent::Notification(other)),
        }
    }

    /// Fails every request whose deadline has passed, telling the server with
    /// `notifications/cancelled`. A timed-out `initialize` ends the session. In the handshake
    /// era with [`ClientConfig::ping_interval`] set, also pings a server silent for that long,
    /// and ends the session if such a ping's deadline passes with nothing heard since it was
    /// sent.
    pub fn handle_timeout(&mut self, now: Instant) {
        for id in self.core.expired(now) {
            if self.liveness.is_ping(&id) {
                let _ = self.core.abandon(&id, None, false);
                if let Verdict::Gone { silent, waited } = self.liveness.unanswered(now) {
                    self.close_unresponsive(silent, waited);
                    return;
                }
                continue;
            }
            if matches!(&self.state, State::Discovering { id: probe, .. } if *probe == id) {
                if let Some(p) = self.core.abandon(&id, None, false) {
                    self.finish_discover(now, Err(p.timeout(now)));
                }
                continue;
            }
            let is_init =
                matches!(&self.state, State::Initializing { id: init, .. } if *init == id);
            // initialize must not be cancelled, so no notification for it.
            let Some(p) = self.core.abandon(&id, Some("timed out"), !is_init) else {
                continue;
            };
            let error = p.timeout(now);
            if is_init {
                self.close_with(error);
                return;
            }
            let (logical, _) = self.inputs.end(&id);
            self.events.push_back(ClientEvent::Response {
                id: logical,
                method: p.method,
                outcome: Err(error),
            });
        }
        if let Some(due) = self.ping_due()
            && due <= now
        {
            let options = RequestOptions::DEFAULT.timeout(self.config.ping_timeout);
            let ping = <method::Ping as RequestMethod>::METHOD;
            let default = self.config.request_timeout;
            if let Ok(id) = self
                .core
                .send_request(now, ping, None, options, default, None)
            {
                self.liveness.sent(id, now);
            }
        }
    }

    /// When the next liveness ping is due: only while operating in the handshake era, with
    /// pings turned on and none in flight.
    fn ping_due(&self) -> Option<Instant> {
        let interval = self.config.ping_interval.filter(|i| !i.is_zero())?;
        match &self.state {
            State::Operating(info) if info.era == Era::Handshake => self.liveness.due(interval),
            _ => None,
        }
    }

    /// Ends the session because the server stopped answering: every request in flight fails
    /// with [`Error::Unresponsive`], which says how long it was silent.
    fn close_unresponsive(&mut self, silent: Duration, waited: Duration) {
        let (silent_ms, waited_ms) = (silent.as_millis(), waited.as_millis());
        self.task_progress.clear();
        for (id, p) in self.core.drain_pending() {
            let (logical, _) = self.inputs.end(&id);
            self.events.push_back(ClientEvent::Response {
                id: logical,
                method: p.method.clone(),
                outcome: Err(Error::Unresponsive {
                    method: p.method,
                    silent_ms,
                    waited_ms,
                }),
            });
        }
        self.close(&format!(
            "the server stopped answering: nothing heard for {silent_ms} ms, and a ping went unanswered for {waited_ms} ms"
        ));
    }

    /// The next message to send.
    #[must_use]
    pub fn poll_transmit(&mut self) -> Option<Message> {
        self.core.outbox.pop_front()
    }

    /// When [`handle_timeout`](Self::handle_timeout) must be called next: a request's
    /// deadline, or when a liveness ping is due.
    #[must_use]
    pub fn poll_timeout(&mut self) -> Option<Instant> {
        let deadline = self.core.poll_timeout();
        match (deadline, self.ping_due()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The next event for the caller.
    #[must_use]
    pub fn poll_event(&mut self) -> Option<ClientEvent> {
        self.events.pop_front()
    }
}

fn check_sampling(
    caps: &ClientCapabilities,
    params: &CreateMessageParams,
) -> Result<(), (i64, String)> {
    let Some(sampling) = &caps.sampling else {
        return Err((code::METHOD_NOT_FOUND, "Sampling not supported".to_owned()));
    };
    if (params.tools.is_some() || params.tool_choice.is_some()) && sampling.tools.is_none() {
        return Err((
            code::INVALID_PARAMS,
            "tools in sampling requests are not supported (sampling.tools not declared)".to_owned(),
        ));
    }
    Ok(())
}

fn check_elicitation(
    caps: &ClientCapabilities,
    params: &ElicitParams,
) -> Result<(), (i64, String)> {
    let Some(elicitation) = &caps.elicitation else {
        return Err((
            code::METHOD_NOT_FOUND,
            "Elicitation not supported".to_owned(),
        ));
    };
    let declared = if params.is_url_mode() {
        elicitation.supports_url()
    } else {
        elicitation.supports_form()
    };
    if !declared {
        let mode = params.mode.as_deref().unwrap_or("form");
        return Err((
            code::INVALID_PARAMS,
            format!("elicitation mode {mode:?} is not supported"),
        ));
    }
    Ok(())
}

/// Decodes the result of a request by the type its method defines.
pub fn decode_result<M: RequestMethod>(raw: &RawJson) -> Result<M::Result, Error> {
    raw.decode().map_err(|e| Error::InvalidResult {
        method: M::METHOD.to_owned(),
        detail: e.to_string(),
    })
}
