//! The client side of a session: what a host runs for each server it talks to.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use crate::error::Error;
use crate::jsonrpc::{
    DecodeError, Decoded, ErrorObject, ErrorResponse, Message, Notification, RawJson, Request,
    RequestId, Response, code,
};
use crate::schema::{
    ClientCapabilities, CreateMessageParams, ElicitParams, Implementation, InitializeParams,
    InitializeResult, NotificationMethod, ProgressParams, RequestMethod, ServerCapabilities,
    ServerNotification, ServerRequest, method, supported_versions,
};
use crate::session::pending::{Core, Matched, RequestOptions};
use crate::version::{Era, ProtocolVersion};

/// How a client session introduces itself and how long it waits.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ClientConfig {
    /// Sent as `clientInfo`.
    pub client_info: Implementation,
    /// Sent as `capabilities`; server requests for anything absent here are refused.
    pub capabilities: ClientCapabilities,
    /// The version offered in `initialize`.
    pub protocol_version: ProtocolVersion,
    /// The versions the client accepts in the server's answer.
    pub supported_versions: Vec<ProtocolVersion>,
    /// The hard timeout of a request whose options name none, `initialize` included.
    pub request_timeout: Duration,
}

impl ClientConfig {
    /// A client that declares no capabilities, offers 2025-11-25 and accepts every
    /// handshake-era version, with a 60-second request timeout.
    pub fn new(client_info: Implementation) -> Self {
        Self {
            client_info,
            capabilities: ClientCapabilities::new(),
            protocol_version: ProtocolVersion::LATEST_HANDSHAKE,
            supported_versions: ProtocolVersion::HANDSHAKE.to_vec(),
            request_timeout: Duration::from_secs(60),
        }
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
}

/// Something the caller of a [`ClientSession`] must act on, from [`ClientSession::poll_event`].
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ClientEvent {
    /// The handshake finished; requests may be sent.
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

/// The lifecycle of a client session.
///
/// ```text
///            initialize()            result, version ok          close() / transport end
///   Idle ───────────────> Initializing ───────────────> Operating ───────────────> Closed
///                            │  │  error with data.supported: retry once ↺
///                            │  └─ version unsupported, error, timeout ────────────> Closed
/// ```
#[derive(Debug)]
enum State {
    Idle,
    Initializing {
        id: RequestId,
        offered: ProtocolVersion,
        retried: bool,
    },
    Operating(Box<ServerInfo>),
    Closed,
}

/// The sans-IO client session: it allocates ids, tracks requests and their deadlines, answers
/// pings, refuses what the host did not declare, and never reads the clock.
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

    /// How many requests are waiting for an answer.
    pub fn in_flight(&self) -> usize {
        self.core.pending_len()
    }

    /// Starts the handshake by queueing `initialize`.
    pub fn initialize(&mut self, now: Instant) -> Result<RequestId, Error> {
        match self.state {
            State::Idle => {}
            State::Closed => return Err(self.closed_error()),
            _ => return Err(Error::ApiMisuse("initialize was already sent".to_owned())),
        }
        let offered = self.config.protocol_version.clone();
        let id = self.send_initialize(now, offered.clone())?;
        self.state = State::Initializing {
            id: id.clone(),
            offered,
            retried: false,
        };
        Ok(id)
    }

    fn send_initialize(
        &mut self,
        now: Instant,
        version: ProtocolVersion,
    ) -> Result<RequestId, Error> {
        let params = InitializeParams::new(
            version,
            self.config.capabilities.clone(),
            self.config.client_info.clone(),
        );
        let params = RawJson::encode(&params).map_err(|e| Error::ApiMisuse(e.to_string()))?;
        self.core.send_request(
            now,
            <method::Initialize as RequestMethod>::METHOD,
            Some(params),
            RequestOptions::DEFAULT,
            self.config.request_timeout,
        )
    }

    /// Sends a request by method name with raw parameters, as a proxy does.
    ///
    /// Only `ping` may go before the handshake finishes; `initialize` is sent by
    /// [`initialize`](Self::initialize) alone.
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
        match &self.state {
            State::Operating(_) => {}
            State::Closed => return Err(self.closed_error()),
            _ if method == <method::Ping as RequestMethod>::METHOD => {}
            _ => {
                return Err(Error::ApiMisuse(format!(
                    "{method} cannot be sent before the handshake has finished"
                )));
            }
        }
        if params.as_ref().is_some_and(|p| !p.is_object()) {
            return Err(Error::ApiMisuse(format!(
                "{method} params must be a JSON object"
            )));
        }
        self.core
            .send_request(now, method, params, options, self.config.request_timeout)
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

    /// Cancels a request in flight: the server is told, the request fails with
    /// [`Error::Cancelled`], and a late answer is dropped. `initialize` cannot be cancelled.
    /// Returns `false` if the request had already ended.
    pub fn cancel(&mut self, id: &RequestId, reason: Option<&str>) -> Result<bool, Error> {
        if let State::Initializing { id: init, .. } = &self.state
            && init == id
        {
            return Err(Error::ApiMisuse(
                "initialize must not be cancelled".to_owned(),
            ));
        }
        let Some(p) = self.core.abandon(id, reason, true) else {
            return Ok(false);
        };
        self.events.push_back(ClientEvent::Response {
            id: id.clone(),
            method: p.method.clone(),
            outcome: Err(Error::Cancelled { method: p.method }),
        });
        Ok(true)
    }

    /// Fails a request whose answer the transport could not deliver (a response line over the
    /// size limit, say): it ends with [`Error::Transport`] and a reply that still comes is
    /// dropped. The server is not told; it has already answered. Returns `false` if the request
    /// was not in flight.
    pub fn fail(&mut self, id: &RequestId, detail: &str) -> bool {
        if let State::Initializing { id: init, .. } = &self.state
            && init == id
        {
            let _ = self.core.abandon(id, None, false);
            self.close_with(Error::Transport {
                method: "initialize".to_owned(),
                detail: detail.to_owned(),
            });
            return true;
        }
        let Some(p) = self.core.abandon(id, None, false) else {
            return false;
        };
        self.events.push_back(ClientEvent::Response {
            id: id.clone(),
            method: p.method.clone(),
            outcome: Err(Error::Transport {
                method: p.method,
                detail: detail.to_owned(),
            }),
        });
        true
    }

    /// Answers a server request that [`ClientEvent::Request`] delivered. Returns `false` if
    /// the server has withdrawn it (the answer is dropped, as the spec asks).
    pub fn respond(&mut self, id: &RequestId, result: RawJson) -> Result<bool, Error> {
        if self.core.inbound.remove(id).is_none() {
            return Ok(false);
        }
        self.core.push_result(id.clone(), result);
        Ok(true)
    }

    /// Refuses a server request that [`ClientEvent::Request`] delivered.
    pub fn respond_error(&mut self, id: &RequestId, error: ErrorObject) -> Result<bool, Error> {
        if self.core.inbound.remove(id).is_none() {
            return Ok(false);
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
        for (id, p) in self.core.drain_pending() {
            self.events.push_back(ClientEvent::Response {
                id,
                method: p.method,
                outcome: Err(ended.clone()),
            });
        }
        self.core.inbound.clear();
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

    /// Ends a request with its answer, advancing the handshake if it was `initialize`.
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
        if let State::Initializing { id: init, .. } = &self.state
            && *init == id
        {
            self.finish_initialize(now, outcome);
            return;
        }
        self.events.push_back(ClientEvent::Response {
            id,
            method: pending.method,
            outcome,
        });
    }

    fn finish_initialize(&mut self, now: Instant, outcome: Result<RawJson, Error>) {
        let State::Initializing {
            offered, retried, ..
        } = &self.state
        else {
            return;
        };
        let (offered, retried) = (offered.clone(), *retried);
        let raw = match outcome {
            Ok(raw) => raw,
            Err(Error::Rpc { method, error }) => {
                // A server that does not support our version may list the ones it does.
                let mutual = ProtocolVersion::best_mutual(
                    supported_versions(error.data.as_ref()),
                    &self.config.supported_versions,
                );
                match mutual {
                    Some(version) if !retried && version != offered => {
                        match self.send_initialize(now, version.clone()) {
                            Ok(id) => {
                                self.state = State::Initializing {
                                    id,
                                    offered: version,
                                    retried: true,
                                };
                            }
                            Err(e) => self.close_with(e),
                        }
                    }
                    _ => self.close_with(Error::Rpc { method, error }),
                }
                return;
            }
            Err(other) => return self.close_with(other),
        };
        let result: InitializeResult = match raw.decode() {
            Ok(result) => result,
            Err(e) => {
                return self.close_with(Error::InvalidResult {
                    method: "initialize".to_owned(),
                    detail: e.to_string(),
                });
            }
        };
        if !ProtocolVersion::client_accepts(
            &result.protocol_version,
            &self.config.supported_versions,
        ) {
            return self.close_with(Error::VersionMismatch {
                requested: offered,
                offered: result.protocol_version,
            });
        }
        let info = ServerInfo {
            protocol_version: result.protocol_version,
            capabilities: result.capabilities,
            implementation: result.server_info,
            instructions: result.instructions,
        };
        self.core
            .outbox
            .push_back(Message::Notification(Notification {
                method: <method::Initialized as NotificationMethod>::METHOD.to_owned(),
                params: None,
            }));
        self.state = State::Operating(Box::new(info.clone()));
        self.events.push_back(ClientEvent::Ready(info));
    }

    fn handle_request(&mut self, request: Request) {
        let Request { id, method, params } = request;
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
                    self.events.push_back(ClientEvent::Progress { id, params });
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
    /// `notifications/cancelled`. A timed-out `initialize` ends the session.
    pub fn handle_timeout(&mut self, now: Instant) {
        for id in self.core.expired(now) {
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
            self.events.push_back(ClientEvent::Response {
                id,
                method: p.method,
                outcome: Err(error),
            });
        }
    }

    /// The next message to send.
    #[must_use]
    pub fn poll_transmit(&mut self) -> Option<Message> {
        self.core.outbox.pop_front()
    }

    /// When [`handle_timeout`](Self::handle_timeout) must be called next.
    #[must_use]
    pub fn poll_timeout(&mut self) -> Option<Instant> {
        self.core.poll_timeout()
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
