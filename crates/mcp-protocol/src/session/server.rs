//! The server side of a session, for the gateway: it answers `initialize` and `ping` itself,
//! refuses what the handshake does not allow yet, and routes every other request to its caller
//! as a typed [`ClientRequest`].
//! This file is long because it is one state machine: the handshake, request routing and both eras'
//! checks are transitions of the same `ServerSession` state, and splitting them would spread one
//! transition table over several files (the stateless era's result rules are already in
//! `stateless_server.rs`).
//!
//! The same session speaks the 2026-07-28 stateless era: a request that carries its protocol
//! version in `_meta` (or any request but `initialize` and `ping` before a handshake) moves it
//! there. Each request then stands alone: the session checks its `_meta`, answers
//! `server/discover` and `subscriptions/listen` itself, and completes every result with what
//! the era requires (`stateless_server.rs`).

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::error::Error;
use crate::jsonrpc::{
    DecodeError, Decoded, ErrorObject, ErrorResponse, Message, Notification, RawJson, Request,
    RequestId, Response, code,
};
use crate::schema::{
    AcknowledgedParams, CacheScope, ClientCapabilities, ClientNotification, ClientRequest,
    Implementation, InitializeParams, InitializeResult, ListenParams, NotificationMethod,
    ProgressParams, RequestMethod, ServerCapabilities, SkillsCapability, SubscriptionFilter,
    capabilities_declare_tasks, is_removed, meta_key, method,
};
use crate::session::pending::{Core, Matched, RequestOptions, with_meta};
use crate::session::stateless_server::{self as stateless, Declared, Listen};
use crate::version::{Era, ProtocolVersion};
use crate::wire::JsonObject;

/// The -32600 answer to a request whose id an unanswered request of the session holds.
const ID_IN_USE: &str = "request id is already in use by an unanswered request";

/// How a server session introduces itself. Sessions hold it shared ([`Arc`]): a server with
/// thousands of sessions keeps one copy of what is the same for all of them.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ServerConfig {
    /// Sent as `serverInfo`.
    pub server_info: Implementation,
    /// Sent as `capabilities`; requests for features absent here are refused with -32601.
    pub capabilities: ServerCapabilities,
    /// Sent as `instructions`.
    pub instructions: Option<String>,
    /// The versions this server speaks; the newest handshake-era one is chosen when the
    /// client's is not here. A stateless-era version here (2026-07-28) makes the server speak
    /// that era too, on the same session.
    pub supported_versions: Vec<ProtocolVersion>,
    /// The timeout of requests the server sends (sampling, elicitation, roots, ping).
    pub request_timeout: Duration,
    /// The `ttlMs` a stateless-era list or read result gets when the handler set none: how
    /// long a client may reuse it. 0, the default, means stale at once.
    pub cache_ttl_ms: u64,
    /// The `cacheScope` a stateless-era list or read result gets when the handler set none.
    /// Private by default: a shared cache may never serve it to another user.
    pub cache_scope: CacheScope,
    /// What the ids of requests this server sends begin with, making them strings
    /// (`<prefix><n>`) instead of numbers. Replicas of one server each take a prefix of their
    /// own, so that an answer that reaches the wrong replica names the one that waits for it,
    /// and two replicas serving one session never send the client the same id.
    pub request_id_prefix: Option<String>,
}

impl ServerConfig {
    /// A server offering nothing yet, speaking every handshake-era version.
    pub fn new(server_info: Implementation) -> Self {
        Self {
            server_info,
            capabilities: ServerCapabilities::new(),
            instructions: None,
            supported_versions: ProtocolVersion::HANDSHAKE.to_vec(),
            request_timeout: Duration::from_secs(60),
            cache_ttl_ms: 0,
            cache_scope: CacheScope::Private,
            request_id_prefix: None,
        }
    }

    /// The same server speaking both eras: every known version, the stateless 2026-07-28 one
    /// included.
    pub fn dual_era(server_info: Implementation) -> Self {
        let mut config = Self::new(server_info);
        config.supported_versions = ProtocolVersion::KNOWN.to_vec();
        config
    }
}

/// What the client told us: in the handshake, or in the `_meta` of one stateless-era request
/// (which holds for that request only).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ClientInfo {
    /// The negotiated version, or the one the request declared.
    pub protocol_version: ProtocolVersion,
    /// What the client offers.
    pub capabilities: ClientCapabilities,
    /// Who the client is. A stateless-era request need not say (`clientInfo` is a SHOULD
    /// there); its name and version are then empty.
    pub implementation: Implementation,
}

/// Something the caller of a [`ServerSession`] must act on.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ServerEvent {
    /// The client finished the handshake.
    Initialized(ClientInfo),
    /// A request to handle; answer with [`ServerSession::respond`] or
    /// [`ServerSession::respond_error`].
    Request {
        /// The id to answer with.
        id: RequestId,
        /// The request, routed by method.
        request: ClientRequest,
    },
    /// The client withdrew a request; stop working on it. An answer would be dropped.
    Cancelled {
        /// The withdrawn request.
        id: RequestId,
        /// The client's reason.
        reason: Option<String>,
    },
    /// A request we sent to the client ended.
    Response {
        /// Its id.
        id: RequestId,
        /// Its method.
        method: String,
        /// The raw result, or the failure.
        outcome: Result<RawJson, Error>,
    },
    /// Progress on a request we sent to the client.
    Progress {
        /// Its id.
        id: RequestId,
        /// The notification.
        params: ProgressParams,
    },
    /// A notification the session does not handle itself (`roots/list_changed`, unknown ones).
    Notification(ClientNotification),
    /// A stateless-era client opened a `subscriptions/listen` stream, which the session serves
    /// itself: what it carries (the part of the filter this server honours). A proxy learns
    /// here which resources to subscribe to upstream, since the era has no
    /// `resources/subscribe`.
    Listening {
        /// The listen request, whose id tags every notification on the stream.
        id: RequestId,
        /// What the stream carries.
        filter: SubscriptionFilter,
    },
    /// The client did something wrong that did not end the session.
    Diagnostic(String),
    /// The session ended.
    Closed(Error),
}

/// What a [`RequestHandler`] does with a request.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Reply {
    /// Answer now with this result.
    Result(RawJson),
    /// Answer now with this error.
    Error(ErrorObject),
    /// The handler answers later with [`ServerSession::respond`] (an async handler, an
    /// upstream call in flight).
    Later,
}

/// Handles routed requests for [`ServerSession::dispatch`]: the simple way to write a server
/// whose answers are at hand. A handler that must wait on I/O returns [`Reply::Later`].
pub trait RequestHandler {
    /// Handles one request; `id` is what a later [`ServerSession::respond`] needs.
    fn handle(&mut self, id: &RequestId, request: ClientRequest) -> Reply;
}

/// The lifecycle of a server session.
///
/// ```text
///                  initialize                  notifications/initialized        close()
///   AwaitingInitialize ──────> AwaitingInitialized ───────────────────> Operating ──────> Closed
///   (only initialize and ping)  (requests accepted, none sent but ping and logging)
///          │
///          │ a request with `_meta` protocolVersion, or any but initialize and ping
///          │ (only if the config has a stateless version)                close()
///          └──────────────────────────────────────────────────> Stateless ──────> Closed
///            (ServerSession::stateless starts here)   (every request checked on its own)
/// ```
#[derive(Debug)]
enum State {
    AwaitingInitialize,
    AwaitingInitialized(Box<ClientInfo>),
    Operating(Box<ClientInfo>),
    Stateless(Box<Stateless>),
    Closed,
}

/// What a stateless-era session keeps: only what its unanswered requests declared, and its
/// open `subscriptions/listen` streams.
#[derive(Debug, Default)]
struct Stateless {
    requests: HashMap<RequestId, Declared>,
    listens: Vec<Listen>,
}

/// The sans-IO server session. Drive it like [`ClientSession`](crate::ClientSession):
/// transmit, timer, events, after every input.
#[derive(Debug)]
pub struct ServerSession {
    config: Arc<ServerConfig>,
    state: State,
    core: Core,
    events: VecDeque<ServerEvent>,
}

impl ServerSession {
    /// A session waiting for `initialize`. Give it an `Arc` that the server's other sessions
    /// share, or a config of its own.
    pub fn new(config: impl Into<Arc<ServerConfig>>) -> Self {
        let config = config.into();
        Self {
            core: Core::with_id_prefix(config.request_id_prefix.clone()),
            config,
            state: State::AwaitingInitialize,
            events: VecDeque::new(),
        }
    }

    /// A session that speaks only the stateless era: no handshake, every request carries its
    /// own `_meta`. Over HTTP, a request whose `MCP-Protocol-Version` is not a handshake-era
    /// version gets one of these.
    pub fn stateless(config: impl Into<Arc<ServerConfig>>) -> Self {
        let mut session = Self::new(config);
        session.state = State::Stateless(Box::default());
        session
    }

    /// The client's handshake, once `initialize` has arrived.
    pub fn client_info(&self) -> Option<&ClientInfo> {
        match &self.state {
            State::AwaitingInitialized(info) | State::Operating(info) => Some(info),
            _ => None,
        }
    }

    /// The era the session is in, once the first request has told: `None` before.
    pub fn era(&self) -> Option<Era> {
        match &self.state {
            State::AwaitingInitialized(_) | State::Operating(_) => Some(Era::Handshake),
            State::Stateless(_) => Some(Era::Stateless),
            State::AwaitingInitialize | State::Closed => None,
        }
    }

    /// What the client declared for an unanswered request: its own `_meta` in the stateless
    /// era, the handshake otherwise. A handler decides by this whether it may use a client
    /// capability (and answers -32021 when the request did not declare it).
    pub fn request_client(&self, id: &RequestId) -> Option<&ClientInfo> {
        match &self.state {
            State::Stateless(s) => s.requests.get(id).map(|d| &d.client),
            _ => self.client_info(),
        }
    }

    /// Whether the client has sent `notifications/initialized`.
    pub fn is_operating(&self) -> bool {
        matches!(self.state, State::Operating(_))
    }

    /// Whether the session has ended.
    pub fn is_closed(&self) -> bool {
        matches!(self.state, State::Closed)
    }

    /// Whether a client request still waits for its answer: not answered, not withdrawn by
    /// the client, not lost with the session. A runtime that hands a request to a task after
    /// other work uses it to skip one the client cancelled in between.
    pub fn is_awaited(&self, id: &RequestId) -> bool {
        self.core.inbound.contains_key(id)
    }

    /// Feeds one decoded frame. A batch is accepted only from a 2025-03-26 client.
    pub fn handle_decoded(&mut self, now: Instant, decoded: Decoded) {
        if matches!(self.state, State::Closed) {
            return;
        }
        match decoded {
            Decoded::Single(message) => self.handle_message(now, message),
            Decoded::Batch(items) => {
                let allowed = self
                    .client_info()
                    .is_some_and(|c| c.protocol_version.allows_batches());
                if !allowed {
                    self.core.push_error(
                        None,
                        code::INVALID_REQUEST,
                        "JSON-RPC batches are not allowed in this protocol version",
                    );
                    return;
                }
                for item in items {
                    match item {
                        Ok(message) => self.handle_message(now, message),
                        Err(err) => self.handle_invalid(err),
                    }
                }
            }
        }
    }

    /// Feeds a frame that did not decode: it is answered with -32700 or -32600 when an answer
    /// is owed.
    pub fn handle_invalid(&mut self, error: DecodeError) {
        if matches!(self.state, State::Closed) {
            return;
        }
        if let Some(response) = error.to_response() {
            self.core.outbox.push_back(response);
        }
        self.events.push_back(ServerEvent::Diagnostic(format!(
            "dropped a frame from the client: {error}"
        )));
    }

    /// Feeds one message from the client.
    pub fn handle_message(&mut self, now: Instant, message: Message) {
        if matches!(self.state, State::Closed) {
            return;
        }
        match message {
            Message::Request(request) => self.handle_request(request),
            Message::Notification(notification) => self.handle_notification(now, notification),
            Message::Response(Response { id, result }) => self.finish(id, Ok(result)),
            Message::Error(ErrorResponse {
                id: Some(id),
                error,
            }) => {
                let method = self.core.method_of(&id).unwrap_or_default().to_owned();
                self.finish(id, Err(Error::Rpc { method, error }));
            }
            Message::Error(ErrorResponse { id: None, error }) => {
                self.events.push_back(ServerEvent::Diagnostic(format!(
                    "client could not read a message we sent: {error}"
                )))
            }
        }
    }

    fn finish(&mut self, id: RequestId, outcome: Result<RawJson, Error>) {
        match self.core.match_response(&id) {
            Matched::Pending(id, p) => self.events.push_back(ServerEvent::Response {
                id,
                method: p.method,
                outcome,
            }),
            Matched::Late => {}
            Matched::Unknown => self.events.push_back(ServerEvent::Diagnostic(format!(
                "client answered request {id}, which is not in flight"
            ))),
        }
    }

    fn handle_request(&mut self, request: Request) {
        let Request { id, method, params } = request;
        if matches!(self.state, State::AwaitingInitialize)
            && stateless::speaks_stateless(&self.config)
            && (declares_version(params.as_ref())
                || !matches!(method.as_str(), "initialize" | "ping"))
        {
            self.state = State::Stateless(Box::default());
        }
        if matches!(self.state, State::Stateless(_)) {
            self.handle_stateless(id, method, params);
            return;
        }
        // Before ping and initialize, which are answered at once and never recorded: an answer
        // to one must not name the id of a request still in flight.
        if self.is_awaited(&id) {
            self.core
                .push_error(Some(id), code::INVALID_REQUEST, ID_IN_USE);
            return;
        }
        if method == <method::Ping as RequestMethod>::METHOD {
            self.core.push_result(id, RawJson::empty_object());
            return;
        }
        if method == <method::Initialize as RequestMethod>::METHOD {
            self.handle_initialize(id, params.as_ref());
            return;
        }
        if matches!(self.state, State::AwaitingInitialize) {
            self.core.push_error(
                Some(id),
                code::INVALID_REQUEST,
                format!("{method} sent before initialize"),
            );
            return;
        }
        if let Some(request) = self.route(&id, &method, params.as_ref()) {
            self.events.push_back(ServerEvent::Request { id, request });
        }
    }

    /// Decodes a request for the caller, or answers it: -32602 for params its method cannot
    /// read, -32601 for a feature this server did not declare, -32600 for an id still in use.
    /// A request that passes is recorded as unanswered.
    fn route(
        &mut self,
        id: &RequestId,
        method: &str,
        params: Option<&RawJson>,
    ) -> Option<ClientRequest> {
        let (refusal, message) = match ClientRequest::decode(method, params) {
            Err(e) => (
                code::INVALID_PARAMS,
                format!("invalid {method} params: {e}"),
            ),
            Ok(routed) if !self.offers(&routed) => (
                code::METHOD_NOT_FOUND,
                format!("Method not found: {method}"),
            ),
            Ok(routed) => {
                if self.core.accept_inbound(id, method) {
                    return Some(routed);
                }
                (code::INVALID_REQUEST, ID_IN_USE.to_owned())
            }
        };
        self.core.push_error(Some(id.clone()), refusal, message);
        None
    }

    /// One stateless-era request: its `_meta` first (-32602, -32022), then the methods the
    /// era removed (-32601), then `server/discover` and `subscriptions/listen`, which the
    /// session answers, then everything else, routed as in the handshake era.
    fn handle_stateless(&mut self, id: RequestId, method: String, params: Option<RawJson>) {
        let declared = match stateless::read_meta(params.as_ref()) {
            Ok(declared) => declared,
            Err(why) => {
                self.core.push_error(
                    Some(id),
                    code::INVALID_PARAMS,
                    format!("Invalid params: {why}"),
                );
                return;
            }
        };
        let version = &declared.client.protocol_version;
        if !stateless::speaks(&self.config, version) {
            let error = stateless::unsupported_version(&self.config, version);
            self.core.push_error_object(Some(id), error);
            return;
        }
        if is_removed(&method) {
            self.core.push_error(
                Some(id),
                code::METHOD_NOT_FOUND,
                format!("Method not found: {method}"),
            );
            return;
        }
        if method == <method::Discover as RequestMethod>::METHOD {
            match stateless::discover_result(&self.config) {
                Ok(result) => self.core.push_result(id, result),
                Err(error) => self.core.push_error_object(Some(id), error),
            }
            return;
        }
        let Some(routed) = self.route(&id, &method, params.as_ref()) else {
            return;
        };
        let State::Stateless(state) = &mut self.state else {
            return;
        };
        if let ClientRequest::Listen(params) = routed {
            self.listen(id, &params);
            return;
        }
        state.requests.insert(id.clone(), declared);
        self.events.push_back(ServerEvent::Request {
            id,
            request: routed,
        });
    }

    /// Opens a `subscriptions/listen` stream: the acknowledgement goes first, with the part of
    /// the filter this server honours; the request stays unanswered until the client ends it.
    fn listen(&mut self, id: RequestId, params: &ListenParams) {
        let State::Stateless(state) = &mut self.state else {
            return;
        };
        let filter = stateless::honoured(&self.config, &params.notifications);
        let mut ack = AcknowledgedParams::new(filter.clone());
        ack.meta = Some(stateless::subscription_meta(&id));
        self.events.push_back(ServerEvent::Listening {
            id: id.clone(),
            filter: filter.clone(),
        });
        state.listens.push(Listen { id, filter });
        self.core.push_notification(
            <method::SubscriptionsAcknowledged as NotificationMethod>::METHOD,
            &ack,
        );
    }

    /// Whether the request is for a feature this server declared.
    fn offers(&self, request: &ClientRequest) -> bool {
        let caps = &self.config.capabilities;
        match request {
            ClientRequest::ListTools(_) | ClientRequest::CallTool(_) => caps.tools.is_some(),
            ClientRequest::ListResources(_)
            | ClientRequest::ListResourceTemplates(_)
            | ClientRequest::ReadResource(_) => caps.resources.is_some(),
            ClientRequest::Subscribe(_) | ClientRequest::Unsubscribe(_) => caps
                .resources
                .as_ref()
                .and_then(|r| r.subscribe)
                .unwrap_or(false),
            ClientRequest::ListPrompts(_) | ClientRequest::GetPrompt(_) => caps.prompts.is_some(),
            ClientRequest::Complete(_) => caps.completions.is_some(),
            ClientRequest::SetLevel(_) => caps.logging.is_some(),
            ClientRequest::Discover(_) | ClientRequest::Listen(_) => {
                self.era() == Some(Era::Stateless)
            }
            // Tasks are offered by `capabilities.tasks` (2025-11-25) or the tasks extension
            // (2026-07-28); the extension removed `tasks/result` and `tasks/list`.
            ClientRequest::GetTask(_)
            | ClientRequest::UpdateTask(_)
            | ClientRequest::CancelTask(_) => {
                caps.tasks.is_some() || capabilities_declare_tasks(caps)
            }
            ClientRequest::GetTaskPayload(_) | ClientRequest::ListTasks(_) => {
                caps.tasks.is_some() && self.era() != Some(Era::Stateless)
            }
            // The skills extension (SEP-2640): offered by declaring it, the directory read
            // only with `directoryRead`.
            ClientRequest::ListSkills(_) | ClientRequest::GetSkill(_) => {
                SkillsCapability::of(caps).is_some()
            }
            ClientRequest::ReadDirectory(_) => SkillsCapability::of(caps)
                .and_then(|s| s.directory_read)
                .unwrap_or(false),
            ClientRequest::Other { .. } => false,
            // initialize and ping are answered before routing.
            _ => true,
        }
    }

    fn handle_initialize(&mut self, id: RequestId, params: Option<&RawJson>) {
        if !matches!(self.state, State::AwaitingInitialize) {
            self.core.push_error(
                Some(id),
                code::INVALID_REQUEST,
                "initialize was already received",
            );
            return;
        }
        let params: InitializeParams = match crate::schema::decode_params(params) {
            Ok(p) => p,
            Err(e) => {
                self.core.push_error(
                    Some(id),
                    code::INVALID_PARAMS,
                    format!("invalid initialize params: {e}"),
                );
                return;
            }
        };
        let handshake: Vec<ProtocolVersion> = self
            .config
            .supported_versions
            .iter()
            .filter(|v| v.era() == Some(Era::Handshake))
            .cloned()
            .collect();
        let version = ProtocolVersion::server_selects(&params.protocol_version, &handshake);
        let mut result = InitializeResult::new(
            version.clone(),
            self.config.capabilities.clone(),
            self.config.server_info.clone(),
        );
        result.instructions = self.config.instructions.clone();
        match RawJson::encode(&result) {
            Ok(raw) => self.core.push_result(id, raw),
            Err(e) => {
                self.core
                    .push_error(Some(id), code::INTERNAL_ERROR, e.to_string());
                return;
            }
        }
        self.state = State::AwaitingInitialized(Box::new(ClientInfo {
            protocol_version: version,
            capabilities: params.capabilities,
            implementation: params.client_info,
        }));
    }

    fn handle_notification(&mut self, now: Instant, notification: Notification) {
        let Notification { method, params } = notification;
        let routed = match ClientNotification::decode(&method, params.as_ref()) {
            Ok(routed) => routed,
            Err(e) => {
                self.events.push_back(ServerEvent::Diagnostic(format!(
                    "dropped {method} with invalid params: {e}"
                )));
                return;
            }
        };
        match routed {
            ClientNotification::Initialized(_) => {
                let state = std::mem::replace(&mut self.state, State::Closed);
                self.state = match state {
                    State::AwaitingInitialized(info) => {
                        self.events
                            .push_back(ServerEvent::Initialized((*info).clone()));
                        State::Operating(info)
                    }
                    other => {
                        self.events.push_back(ServerEvent::Diagnostic(
                            "notifications/initialized out of place; ignored".to_owned(),
                        ));
                        other
                    }
                };
            }
            ClientNotification::Cancelled(params) => {
                if let Some(id) = params.request_id
                    && self.core.inbound.remove(&id).is_some()
                {
                    self.forget(&id);
                    self.events.push_back(ServerEvent::Cancelled {
                        id,
                        reason: params.reason,
                    });
                }
            }
            ClientNotification::Progress(params) => {
                if let Some(id) = self.core.progress(now, &params.progress_token) {
                    self.events.push_back(ServerEvent::Progress { id, params });
                }
            }
            other => self.events.push_back(ServerEvent::Notification(other)),
        }
    }

    /// Hands every request waiting in the event queue to `handler` and sends the replies it
    /// gives now. Other events stay queued, in order, for [`poll_event`](Self::poll_event).
    pub fn dispatch<H: RequestHandler + ?Sized>(&mut self, handler: &mut H) -> Result<(), Error> {
        let events = std::mem::take(&mut self.events);
        for event in events {
            let ServerEvent::Request { id, request } = event else {
                self.events.push_back(event);
                continue;
            };
            match handler.handle(&id, request) {
                Reply::Result(result) => {
                    self.respond(&id, result)?;
                }
                Reply::Error(error) => {
                    self.respond_error(&id, error)?;
                }
                Reply::Later => {}
            }
        }
        Ok(())
    }

    /// Answers a request. Returns `false` when the client withdrew it (the answer is dropped).
    ///
    /// In the stateless era the result gains `resultType` (`complete` unless it says
    /// `input_required`), `_meta` `serverInfo`, and on list and read methods `ttlMs` and
    /// `cacheScope`, each only where the result has none; an input-required result on a
    /// method that may not return one is sent as an internal error instead.
    pub fn respond(&mut self, id: &RequestId, result: RawJson) -> Result<bool, Error> {
        if !result.is_object() {
            return Err(Error::ApiMisuse(
                "a result must be a JSON object".to_owned(),
            ));
        }
        let Some(method) = self.core.inbound.remove(id) else {
            return Ok(false);
        };
        if self.forget(id) {
            match stateless::decorate(&self.config, &method, &result) {
                Ok(result) => self.core.push_result(id.clone(), result),
                Err(error) => self.core.push_error_object(Some(id.clone()), error),
            }
        } else {
            self.core.push_result(id.clone(), result);
        }
        Ok(true)
    }

    /// Answers a request with an error.
    pub fn respond_error(&mut self, id: &RequestId, error: ErrorObject) -> Result<bool, Error> {
        if self.core.inbound.remove(id).is_none() {
            return Ok(false);
        }
        self.forget(id);
        self.core.push_error_object(Some(id.clone()), error);
        Ok(true)
    }

    /// Drops what a stateless request declared, and its listen stream if it was one. Whether
    /// the session is in the stateless era.
    fn forget(&mut self, id: &RequestId) -> bool {
        let State::Stateless(state) = &mut self.state else {
            return false;
        };
        state.requests.remove(id);
        state.listens.retain(|l| &l.id != id);
        true
    }

    /// Sends a request to the client: `ping` at any time; sampling, elicitation and roots only
    /// once operating and only if the client declared them.
    pub fn send_request(
        &mut self,
        now: Instant,
        method: &str,
        params: Option<RawJson>,
        options: RequestOptions,
    ) -> Result<RequestId, Error> {
        let info = match &self.state {
            State::Closed => return Err(Error::Closed("the session has ended".to_owned())),
            State::Stateless(_) => {
                return Err(Error::ApiMisuse(format!(
                    "{method} cannot be sent in the stateless era: answer with an \
                     input_required result instead"
                )));
            }
            State::Operating(info) => Some(info),
            _ => None,
        };
        let ping = method == <method::Ping as RequestMethod>::METHOD;
        if !ping {
            let Some(info) = info else {
                return Err(Error::ApiMisuse(format!(
                    "{method} cannot be sent before the client has sent notifications/initialized"
                )));
            };
            let caps = &info.capabilities;
            let declared = match method {
                "sampling/createMessage" => caps.sampling.is_some(),
                "elicitation/create" => caps.elicitation.is_some(),
                "roots/list" => caps.roots.is_some(),
                _ => true,
            };
            if !declared {
                return Err(Error::ApiMisuse(format!(
                    "the client did not declare the capability {method} needs"
                )));
            }
        }
        self.core.send_request(
            now,
            method,
            params,
            options,
            self.config.request_timeout,
            None,
        )
    }

    /// Sends a notification. Before the handshake ends only log entries may go; list_changed
    /// and log entries need their capability declared.
    pub fn notify(&mut self, method: &str, params: Option<RawJson>) -> Result<(), Error> {
        self.notify_for(None, method, params)
    }

    /// Sends a notification on behalf of a request (`related`, the one a handler is
    /// answering), or of none. In the handshake era this is [`notify`](Self::notify).
    ///
    /// In the stateless era a notification goes only where a request asked for it: progress
    /// and other request-bound notifications with their request; a log entry only if its
    /// request set `_meta` `logLevel` and the entry is at least that severe; list changes and
    /// resource updates to every open `subscriptions/listen` stream whose filter carries
    /// them, each copy tagged with that stream's `subscriptionId`. What nobody asked for is
    /// dropped, which is not an error.
    pub fn notify_for(
        &mut self,
        related: Option<&RequestId>,
        method: &str,
        params: Option<RawJson>,
    ) -> Result<(), Error> {
        if matches!(self.state, State::Closed) {
            return Err(Error::Closed("the session has ended".to_owned()));
        }
        let logging = method == <method::LoggingMessage as NotificationMethod>::METHOD;
        if let State::Stateless(state) = &self.state {
            self.check_declared(method)?;
            let mut out = Vec::new();
            if stateless::is_listened(method) {
                for listen in &state.listens {
                    if stateless::carries(&listen.filter, method, params.as_ref()) {
                        let meta = stateless::subscription_meta(&listen.id);
                        out.push(Some(with_meta(params.as_ref(), None, Some(&meta))?));
                    }
                }
            } else {
                let declared = related.and_then(|id| state.requests.get(id));
                let wanted = match declared {
                    None => false,
                    Some(_) if !logging => true,
                    Some(d) => d
                        .log_rank
                        .is_some_and(|least| log_rank(params.as_ref()) >= least),
                };
                if wanted {
                    out.push(params);
                }
            }
            for params in out {
                self.core
                    .outbox
                    .push_back(Message::Notification(Notification {
                        method: method.to_owned(),
                        params,
                    }));
            }
            return Ok(());
        }
        if !self.is_operating() && !logging {
            return Err(Error::ApiMisuse(format!(
                "{method} cannot be sent before the client has sent notifications/initialized"
            )));
        }
        self.check_declared(method)?;
        self.core
            .outbox
            .push_back(Message::Notification(Notification {
                method: method.to_owned(),
                params,
            }));
        Ok(())
    }

    /// Refuses a notification that needs a capability this server did not declare.
    fn check_declared(&self, method: &str) -> Result<(), Error> {
        let caps = &self.config.capabilities;
        let declared = match method {
            "notifications/message" => caps.logging.is_some(),
            "notifications/tools/list_changed" => {
                caps.tools.as_ref().and_then(|t| t.list_changed) == Some(true)
            }
            "notifications/prompts/list_changed" => {
                caps.prompts.as_ref().and_then(|t| t.list_changed) == Some(true)
            }
            "notifications/resources/list_changed" => {
                caps.resources.as_ref().and_then(|t| t.list_changed) == Some(true)
            }
            "notifications/resources/updated" => {
                caps.resources.as_ref().and_then(|t| t.subscribe) == Some(true)
            }
            _ => true,
        };
        if !declared {
            return Err(Error::ApiMisuse(format!(
                "{method} needs a capability this server did not declare"
            )));
        }
        Ok(())
    }

    /// Ends the session; requests we sent fail with [`Error::Closed`].
    pub fn close(&mut self, reason: &str) {
        if matches!(self.state, State::Closed) {
            return;
        }
        self.state = State::Closed;
        let ended = Error::Closed(reason.to_owned());
        for (id, p) in self.core.drain_pending() {
            self.events.push_back(ServerEvent::Response {
                id,
                method: p.method,
                outcome: Err(ended.clone()),
            });
        }
        self.core.inbound.clear();
        self.events.push_back(ServerEvent::Closed(ended));
    }

    /// Gives up request `id` sent to the client, whose answer nobody waits for any more (a
    /// task's question once the task ended, or once its work stopped waiting): it is
    /// forgotten, a late answer is dropped, and the client is told with
    /// `notifications/cancelled`, so that it stops asking its user. No event is raised: whoever
    /// gives it up knows. Whether it was pending.
    pub fn cancel_request(&mut self, id: &RequestId, reason: &str) -> bool {
        self.core.abandon(id, Some(reason), true).is_some()
    }

    /// Fails requests we sent whose deadline has passed.
    pub fn handle_timeout(&mut self, now: Instant) {
        for id in self.core.expired(now) {
            if let Some(p) = self.core.abandon(&id, Some("timed out"), true) {
                let error = p.timeout(now);
                self.events.push_back(ServerEvent::Response {
                    id,
                    method: p.method,
                    outcome: Err(error),
                });
            }
        }
    }

    /// The next message to send.
    #[must_use]
    pub fn poll_transmit(&mut self) -> Option<Message> {
        let message = self.core.outbox.pop_front();
        if message.is_none() {
            release_spare(&mut self.core.outbox);
        }
        message
    }

    /// When [`handle_timeout`](Self::handle_timeout) must be called next.
    #[must_use]
    pub fn poll_timeout(&mut self) -> Option<Instant> {
        self.core.poll_timeout()
    }

    /// The next event for the caller.
    #[must_use]
    pub fn poll_event(&mut self) -> Option<ServerEvent> {
        let event = self.events.pop_front();
        if event.is_none() {
            release_spare(&mut self.events);
        }
        event
    }
}

/// Gives back the room of a queue that was drained: a session spends most of its life idle
/// between calls, and a queue keeps the room of its busiest moment (an event is over half a
/// kilobyte, and the first one takes room for four), which a server holding thousands of
/// idle sessions would pay for each of them. Taking it again costs one allocation per burst.
fn release_spare<T>(queue: &mut VecDeque<T>) {
    if queue.is_empty() && queue.capacity() > 0 {
        *queue = VecDeque::new();
    }
}

/// Whether a request's params carry `_meta` `protocolVersion`: the mark of a stateless-era
/// request.
fn declares_version(params: Option<&RawJson>) -> bool {
    params
        .and_then(|p| p.decode::<JsonObject>().ok())
        .and_then(|p| match p.get("_meta") {
            Some(serde_json::Value::Object(meta)) => {
                Some(meta.contains_key(meta_key::PROTOCOL_VERSION))
            }
            _ => None,
        })
        .unwrap_or(false)
}

/// The severity rank of a `notifications/message` entry; one without a readable level ranks
/// as the most severe.
fn log_rank(params: Option<&RawJson>) -> usize {
    let level = params
        .and_then(|p| p.decode::<JsonObject>().ok())
        .and_then(|p| {
            p.get("level")
                .and_then(serde_json::Value::as_str)
                .map(str::to_owned)
        });
    level.map_or(usize::MAX, |l| stateless::level_rank(&l))
}
