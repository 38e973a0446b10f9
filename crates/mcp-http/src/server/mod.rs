//! The Streamable HTTP server half (spec `basic/transports.mdx#streamable-http`, SPEC.md §4.8
//! and §10, seed 002), for the gateway: one endpoint; POST answers a request with an SSE stream
//! (or JSON) and anything else with 202; GET opens the standalone stream or answers 405;
//! sessions with unguessable ids that DELETE or idleness end (404 afterwards, 400 without
//! one); `Origin` and `Host` checked against DNS rebinding (403, `security.rs`); an optional
//! bearer token; bodies bounded in size and time; connections and sessions capped (503), and
//! accept errors retried (`listen`); the unread bytes of every response stream bounded per
//! stream, session and server (`queue`). Each session is an `mcp-session` `ServerCore` answering with the caller's
//! `Handler`. A handler's request to the client goes on its own request's stream, or on the
//! standalone one when that cannot carry it (a JSON answer), or fails at once when neither can.
//! This file is long because the routing of the one endpoint (POST, GET and DELETE, sessions, their
//! streams and the answers they owe) works on one piece of shared state; what stands alone is
//! already a module of its own.
//!
//! The same endpoint serves the 2026-07-28 stateless era (`stateless.rs`): a POST whose
//! `MCP-Protocol-Version` is not a handshake-era version is one request with its own
//! short-lived session, no session id, whatever the configuration; its session refuses it
//! (-32022) unless the configuration names that version.

mod auth;
mod body;
mod listen;
mod observe;
mod queue;
mod routes;
mod seal;
mod security;
mod stateless;
mod trace_headers;

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::header::{ACCEPT, ALLOW, CONTENT_TYPE, HOST, HeaderValue, ORIGIN, WWW_AUTHENTICATE};
use http::{Method, Request, Response, StatusCode};
use http_body::Body as _;
use http_body_util::{BodyExt as _, Full, Limited};
use hyper::body::Incoming;
use mcp_protocol::{DecodeError, Decoded, Message, ProtocolVersion, RequestId, ServerConfig};
use mcp_session::{CoreOptions, Handler, ServerCore, Sessions};
use tokio::net::TcpListener;

use self::queue::{Budget, Limits};
use self::routes::{RoutedTransport, Routes, StreamTx};

use crate::headers::{PROTOCOL_VERSION, SESSION_ID};
use crate::sse;

pub use auth::{Authenticator, Verdict};
pub use body::SseBody;
pub use observe::{Observer, Readiness};
pub use queue::StreamCut;
pub use seal::{
    Inbox, KEY_LEN, LocalShare, SealError, SessionSeal, SessionShare, SessionState, ShareError,
    ShareFuture,
};

/// The body of every answer: a whole JSON body, or an SSE stream.
pub type ResponseBody = http_body_util::Either<Full<Bytes>, SseBody>;

/// How the HTTP server half behaves.
#[derive(Clone)]
#[non_exhaustive]
pub struct HttpServerConfig {
    /// The MCP server: identity, capabilities, versions.
    pub server: ServerConfig,
    /// The endpoint's path.
    pub path: String,
    /// Host names accepted in `Host` (any port). Anything else is refused with 403: a page on
    /// another site cannot reach a local server through DNS rebinding.
    pub allowed_hosts: Vec<String>,
    /// Origins accepted in `Origin` when present, such as `http://localhost:3000`; loopback
    /// origins are always accepted.
    pub allowed_origins: Vec<String>,
    /// When set, every request must carry `Authorization: Bearer <token>`. A secret.
    pub bearer_token: Option<String>,
    /// When set, every request to the endpoint is judged by it (OAuth access tokens, say),
    /// and a session is kept for the caller that started it; its public documents are served
    /// beside the endpoint (`auth.rs`).
    pub authenticator: Option<Arc<dyn Authenticator>>,
    /// The largest request body accepted (413 beyond; at once when `Content-Length` says so).
    pub max_body_bytes: usize,
    /// How long a request body may take to arrive, from the end of its headers (408 after).
    pub body_read_timeout: Duration,
    /// How long a request's headers may take to arrive; it also bounds how long a kept-alive
    /// connection may sit idle between requests. The connection is closed after it.
    pub header_read_timeout: Duration,
    /// How many connections are served at once; one more is answered 503 and closed.
    pub max_connections: usize,
    /// How many sessions may live at once; an `initialize` past it is answered 503.
    pub max_sessions: usize,
    /// A session unused for this long ends (404 afterwards).
    pub session_idle_timeout: Duration,
    /// How many bytes one response stream (a POST's answers, a GET stream) may hold that its
    /// client has not read yet; past it the stream is cut (the response is aborted). One
    /// message always fits in an empty stream, so a large answer still reaches a client that
    /// reads.
    pub max_stream_buffer_bytes: usize,
    /// How many unread bytes the streams of one session may hold together; past it the stream
    /// that overflows is cut.
    pub max_session_buffer_bytes: usize,
    /// How many unread bytes every stream of the server may hold together; past it the stream
    /// that overflows is cut.
    pub max_buffer_bytes: usize,
    /// Answer requests with one JSON body instead of an SSE stream.
    pub json_response: bool,
    /// Offer the standalone GET stream (405 otherwise).
    pub standalone_stream: bool,
    /// The `retry` sent in the priming event of each stream, in milliseconds.
    pub retry_ms: u64,
    /// Put a POST's W3C `traceparent` and `tracestate` headers into the `params._meta` of
    /// each request it carries that has no `traceparent` there, where MCP carries trace
    /// context, for a server that traces (the gateway); off by default.
    pub trace_headers: bool,
    /// The application's metrics and readiness, for `GET /metrics` and `GET /readyz`
    /// (without one, `/metrics` has the server's own series and `/readyz` is always 200).
    pub observer: Option<Arc<dyn Observer>>,
    /// When set, session ids are sealed with these keys (`seal`): any replica holding them
    /// serves any session, and ends of sessions are shared through its store. Without it, ids
    /// are random and a session lives in this process only.
    pub sealed_sessions: Option<Arc<SessionSeal>>,
    /// How long a POST's SSE head waits for the stream's first event to leave with it in one
    /// write ([`HEAD_WAIT`]; tests lengthen it).
    pub(crate) head_wait: Duration,
}

/// How long a POST's SSE head waits for the stream's first event. A call answered sooner
/// (most are) leaves whole in one write: head, priming event, answer and the stream's end.
/// A longer one gets its head and priming event then, as the spec asks for them
/// ("immediately"): a handler that never answers, or a cancelled request, which gets no
/// answer, must not leave its POST without a head.
const HEAD_WAIT: Duration = Duration::from_millis(50);

impl HttpServerConfig {
    /// Loopback hosts only, no bearer token, 4 MiB bodies that arrive within 30 s, headers
    /// within 10 s, 512 connections, 1024 sessions that end after 30 idle minutes, 8 MiB
    /// unread per stream, 32 MiB per session and 256 MiB in all, SSE answers, the standalone
    /// stream on, `/mcp`.
    pub fn new(server: ServerConfig) -> Self {
        Self {
            server,
            path: "/mcp".to_owned(),
            allowed_hosts: vec![
                "localhost".to_owned(),
                "127.0.0.1".to_owned(),
                "[::1]".to_owned(),
            ],
            allowed_origins: Vec::new(),
            bearer_token: None,
            authenticator: None,
            max_body_bytes: 4 << 20,
            body_read_timeout: Duration::from_secs(30),
            header_read_timeout: Duration::from_secs(10),
            max_connections: 512,
            max_sessions: 1024,
            session_idle_timeout: Duration::from_secs(30 * 60),
            max_stream_buffer_bytes: 8 << 20,
            max_session_buffer_bytes: 32 << 20,
            max_buffer_bytes: 256 << 20,
            json_response: false,
            standalone_stream: true,
            retry_ms: 1000,
            trace_headers: false,
            observer: None,
            sealed_sessions: None,
            head_wait: HEAD_WAIT,
        }
    }
}

impl std::fmt::Debug for HttpServerConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpServerConfig")
            .field("path", &self.path)
            .field("allowed_hosts", &self.allowed_hosts)
            .field("allowed_origins", &self.allowed_origins)
            .field(
                "bearer_token",
                &self.bearer_token.as_ref().map(|_| "[redacted]"),
            )
            .field("authenticator", &self.authenticator.is_some())
            .field("max_body_bytes", &self.max_body_bytes)
            .field("body_read_timeout", &self.body_read_timeout)
            .field("header_read_timeout", &self.header_read_timeout)
            .field("max_connections", &self.max_connections)
            .field("max_sessions", &self.max_sessions)
            .field("session_idle_timeout", &self.session_idle_timeout)
            .field("max_stream_buffer_bytes", &self.max_stream_buffer_bytes)
            .field("max_session_buffer_bytes", &self.max_session_buffer_bytes)
            .field("max_buffer_bytes", &self.max_buffer_bytes)
            .field("trace_headers", &self.trace_headers)
            .field("observer", &self.observer.is_some())
            .field("sealed_sessions", &self.sealed_sessions)
            .finish_non_exhaustive()
    }
}

/// Serves MCP over HTTP on `listener` until the task is dropped. Bind it to `127.0.0.1` for a
/// local server.
///
/// It never ends on its own: a failed `accept()` (out of file descriptors, say) is retried
/// after a back-off, and the connections the kernel queued meanwhile are served once it
/// succeeds. The `Result` is there for callers that treat serving as fallible; it is never
/// an `Err`.
pub async fn serve_http<H: Handler>(
    listener: TcpListener,
    config: HttpServerConfig,
    handler: H,
) -> std::io::Result<()> {
    let server = HttpServer::new(config, handler);
    match serve_on(listener, server).await {}
}

/// [`serve_http`] over any [`listen::Listener`], with the server already made.
async fn serve_on<H: Handler, L: listen::Listener>(
    listener: L,
    server: Arc<HttpServer<H>>,
) -> Infallible {
    let sweeper = AbortOnDrop(tokio::spawn(sweep_idle(Arc::downgrade(&server))));
    let never = listen::serve(listener, server).await;
    drop(sweeper);
    never
}

/// Stops a background task when its owner is dropped.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// The JSON-RPC code of a refusal for lack of room (connections, sessions): an
/// implementation-defined server error, as JSON-RPC 2.0 §5.1 reserves -32000 to -32099 for.
const SERVER_BUSY: i64 = -32000;

/// Binds `addr` (use `127.0.0.1:0` for any free loopback port) and returns the listener and
/// the address it got, for [`serve_http`].
pub async fn bind(addr: SocketAddr) -> std::io::Result<(TcpListener, SocketAddr)> {
    let listener = TcpListener::bind(addr).await?;
    let local = listener.local_addr()?;
    Ok((listener, local))
}

/// One session: its core, its routes, when it was last used.
struct Session<H: Handler> {
    core: Arc<ServerCore<H>>,
    routes: Arc<Routes>,
    last_used: Mutex<Instant>,
    /// Who started it, when an authenticator said ([`auth::Allowed::subject`]): only they
    /// may use it.
    subject: Option<String>,
    /// The unread bytes of the session's streams
    /// ([`HttpServerConfig::max_session_buffer_bytes`]).
    buffer: Arc<Budget>,
    /// With sealed ids, the logging level this replica's core was last told for the session
    /// (`seal::kept`): a level its client set at another replica is told before the next
    /// request. A lock held while it is told, so that no request of the session overtakes it.
    /// Boxed, and only with sealed ids: a server holding thousands of idle sessions pays a
    /// pointer for each, not the lock.
    level: Option<Box<tokio::sync::Mutex<Option<String>>>>,
    /// With sealed ids, the resource subscriptions this replica's core was told for the
    /// session (`seal::subs`), so that those made or dropped at another replica are told
    /// here when this replica holds the session's standalone stream. Boxed and only with
    /// sealed ids, as `level`.
    subs: Option<Box<tokio::sync::Mutex<seal::subs::Told>>>,
}

/// The server: its sessions, by id, and what bounds its connections and buffers.
struct HttpServer<H: Handler> {
    config: HttpServerConfig,
    handler: Arc<H>,
    sessions: Mutex<HashMap<String, Arc<Session<H>>>>,
    /// Every core, handshake sessions and stateless requests alike, for notifications that
    /// all clients must hear.
    registry: Sessions,
    /// One permit per connection served ([`HttpServerConfig::max_connections`]).
    connections: Arc<tokio::sync::Semaphore>,
    /// The unread bytes of every response stream ([`HttpServerConfig::max_buffer_bytes`]).
    buffer: Arc<Budget>,
    /// How every connection is served (header timeout, timer).
    http1: hyper::server::conn::http1::Builder,
    /// How many `accept()` calls failed.
    accept_errors: AtomicU64,
    /// What `/metrics` counts (`observe`).
    metrics: observe::HttpMetrics,
    /// How many sessions this server made or revived: with sealed ids, each copy's number
    /// is in its event ids (`Routes::with_event_prefix`).
    copies: AtomicU64,
    /// The runtime the server was made on: what other replicas relay arrives on the share's
    /// own thread, and work it starts (`seal::subs`) is spawned here.
    runtime: Option<tokio::runtime::Handle>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl<H: Handler> HttpServer<H> {
    fn new(mut config: HttpServerConfig, handler: H) -> Arc<Self> {
        // A replica names itself in the ids of the requests it sends, so that an answer
        // POSTed to another replica finds it (`seal::relay`).
        if let Some(seal) = &config.sealed_sessions {
            config.server.request_id_prefix = Some(seal.request_id_prefix());
        }
        let server = Arc::new(Self {
            connections: Arc::new(tokio::sync::Semaphore::new(config.max_connections)),
            buffer: Budget::new(config.max_buffer_bytes),
            http1: listen::builder(config.header_read_timeout),
            accept_errors: AtomicU64::new(0),
            metrics: observe::HttpMetrics::default(),
            copies: AtomicU64::new(0),
            runtime: tokio::runtime::Handle::try_current().ok(),
            config,
            handler: Arc::new(handler),
            sessions: Mutex::new(HashMap::new()),
            registry: Sessions::new(),
        });
        server.listen_for_answers();
        server
    }

    /// The limits of a new stream of a session whose budget is `session`.
    fn limits(&self, session: &Arc<Budget>) -> Limits {
        Limits {
            stream: self.config.max_stream_buffer_bytes,
            session: Arc::clone(session),
            server: Arc::clone(&self.buffer),
        }
    }

    async fn handle(self: Arc<Self>, req: Request<Incoming>) -> Response<ResponseBody> {
        if req.uri().path() != self.config.path {
            return self.document(&req);
        }
        if let Some(refusal) = self.check_security(&req) {
            return refusal;
        }
        let caller = match self.authenticate(&req).await {
            Ok(caller) => caller,
            Err(refusal) => return refusal,
        };
        match *req.method() {
            Method::POST => self.post(req, caller).await,
            Method::GET => self.get(&req, caller.as_ref()).await,
            Method::DELETE => self.delete(&req, caller.as_ref()).await,
            _ => {
                let mut r = plain(StatusCode::METHOD_NOT_ALLOWED, "use POST, GET or DELETE");
                r.headers_mut()
                    .insert(ALLOW, HeaderValue::from_static("GET, POST, DELETE"));
                r
            }
        }
    }

    /// Host, Origin and bearer token.
    fn check_security(&self, req: &Request<Incoming>) -> Option<Response<ResponseBody>> {
        let host = req
            .headers()
            .get(HOST)
            .and_then(|h| h.to_str().ok())
            .unwrap_or("");
        if !security::host_allowed(host, &self.config.allowed_hosts) {
            return Some(rpc_error(
                StatusCode::FORBIDDEN,
                -32600,
                "Forbidden: Host not allowed",
            ));
        }
        if let Some(origin) = req.headers().get(ORIGIN) {
            let origin = origin.to_str().unwrap_or("");
            if !security::origin_allowed(origin, &self.config.allowed_origins) {
                return Some(rpc_error(
                    StatusCode::FORBIDDEN,
                    -32600,
                    "Forbidden: Origin not allowed",
                ));
            }
        }
        if let Some(token) = &self.config.bearer_token {
            let given = req
                .headers()
                .get(http::header::AUTHORIZATION)
                .map(HeaderValue::as_bytes)
                .unwrap_or_default();
            if !security::bearer_matches(given, token.as_bytes()) {
                let mut r = rpc_error(StatusCode::UNAUTHORIZED, -32600, "Unauthorized");
                r.headers_mut()
                    .insert(WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
                return Some(r);
            }
        }
        None
    }

    /// The session a request names, if its caller is the one who started it. With sealed ids
    /// (`seal`), the id must open, be young enough and not have ended at any replica; a
    /// session this process does not hold is revived from it.
    async fn session_of(
        &self,
        headers: &http::HeaderMap,
        caller: Option<&auth::Allowed>,
    ) -> Result<(String, Arc<Session<H>>), NoSession> {
        let id = headers
            .get(&SESSION_ID)
            .and_then(|v| v.to_str().ok())
            .ok_or(NoSession::Missing)?;
        let subject = caller.map(|c| c.subject.as_str());
        let found = lock(&self.sessions).get(id).cloned();
        let (session, level) = match &self.config.sealed_sessions {
            None => (found.ok_or(NoSession::Unknown)?, None),
            Some(seal) => {
                let opened = seal.open(id, seal::unix_now()).ok_or(NoSession::Unknown)?;
                if opened.subject.as_deref() != subject {
                    return Err(NoSession::Unknown);
                }
                // Whether it ended, and the level its client set, in one round trip.
                let state = seal
                    .share()
                    .state(&seal::share_key(id))
                    .await
                    .map_err(|_| NoSession::StoreDown)?;
                if state.ended {
                    if let Some(ended) = lock(&self.sessions).remove(id) {
                        ended.core.close("the client ended the session");
                        lock(&ended.routes.state).close_all();
                    }
                    return Err(NoSession::Unknown);
                }
                let session = match found {
                    Some(session) => session,
                    None => self.revive(id, opened)?,
                };
                seal::initialized_elsewhere(&session.core);
                (session, state.level)
            }
        };
        // Another caller's session is, to this one, no session at all.
        if session.subject.as_deref() != subject {
            return Err(NoSession::Unknown);
        }
        *lock(&session.last_used) = Instant::now();
        if let Some(level) = level {
            self.apply_level(&session, &level, caller.map(|c| c.caller.clone()))
                .await;
        }
        Ok((id.to_owned(), session))
    }

    async fn post(
        self: Arc<Self>,
        req: Request<Incoming>,
        caller: Option<auth::Allowed>,
    ) -> Response<ResponseBody> {
        let ctype = req
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        if !ctype.trim_start().starts_with("application/json") {
            return rpc_error(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                -32600,
                "Content-Type must be application/json",
            );
        }
        let accept = req
            .headers()
            .get(ACCEPT)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        if !(accept.contains("application/json") && accept.contains("text/event-stream")) {
            return rpc_error(
                StatusCode::NOT_ACCEPTABLE,
                -32600,
                "Accept must list both application/json and text/event-stream",
            );
        }
        if stateless::is_stateless(req.headers()) {
            return self.post_stateless(req, caller).await;
        }
        let existing = if req.headers().contains_key(&SESSION_ID) {
            Some(self.session_of(req.headers(), caller.as_ref()).await)
        } else {
            None
        };
        let version = req
            .headers()
            .get(&PROTOCOL_VERSION)
            .and_then(|v| v.to_str().ok())
            .map(ProtocolVersion::parse);
        let trace = self
            .config
            .trace_headers
            .then(|| trace_headers::read(req.headers()))
            .flatten();
        let bytes = match self.read_body(req.into_body()).await {
            Ok(bytes) => bytes,
            Err(refusal) => return refusal,
        };
        let decoded = match mcp_protocol::decode(&bytes) {
            Ok(decoded) => decoded,
            Err(e) => return undecodable(&e),
        };
        let decoded = match &trace {
            Some(trace) => trace.apply(decoded),
            None => decoded,
        };
        let is_initialize =
            matches!(&decoded, Decoded::Single(Message::Request(r)) if r.method == "initialize");
        let (session_id, session) = match existing {
            Some(Ok(found)) => found,
            Some(Err(refusal)) => return refusal.response(self.config.max_sessions),
            None if is_initialize => match self.new_session(caller.as_ref(), &decoded) {
                Ok(created) => created,
                Err(refusal) => return refusal.response(self.config.max_sessions),
            },
            None => {
                return rpc_error(
                    StatusCode::BAD_REQUEST,
                    -32600,
                    "Bad Request: no MCP-Session-Id header",
                );
            }
        };
        if let Some(version) = version
            && !(version.is_known() && self.config.server.supported_versions.contains(&version))
        {
            return rpc_error(
                StatusCode::BAD_REQUEST,
                -32600,
                &format!("Bad Request: unsupported MCP-Protocol-Version {version}"),
            );
        }
        // Refused here, not by the session: the session would answer with one error that no
        // stream of this POST carries, and leave the POST waiting for its requests' answers.
        let batch = matches!(decoded, Decoded::Batch(_));
        if batch
            && !session
                .core
                .protocol_version()
                .is_some_and(|v| v.allows_batches())
        {
            return no_batches();
        }
        // A level the client sets is recorded for every replica before the session hears it.
        if let Err(e) = self.record_level(&session_id, &session, &decoded).await {
            return e.response();
        }
        // A lone subscribe is judged by the session first, and recorded only if it took it.
        let judged = self
            .judge_subscribe(
                &session_id,
                &session,
                decoded,
                caller.as_ref().map(|c| c.caller.clone()),
            )
            .await;
        let (decoded, answered) = match judged {
            Ok(seal::subs::Judged::Not(decoded)) => (decoded, None),
            Ok(seal::subs::Judged::Answered(answer)) => (Decoded::Batch(Vec::new()), Some(answer)),
            Err(e) => return e.response(),
        };
        // The other subscribes and unsubscribes are recorded before the session hears them,
        // and the replica holding its stream is told.
        if let Err(e) = self
            .record_subscriptions(&session_id, &session, &decoded)
            .await
        {
            return e.response();
        }
        // Answers to requests another replica sent go there; the rest stays here.
        let decoded = match self.relay_answers(&session_id, decoded).await {
            Ok(Some(rest)) => rest,
            Ok(None) if answered.is_none() => {
                return with_session_id(empty(StatusCode::ACCEPTED), &session_id);
            }
            Ok(None) => Decoded::Batch(Vec::new()),
            Err(e) => return not_relayed(e),
        };
        let identity = caller.map(|c| c.caller);
        if answered.is_none() && !owes_answers(&decoded) {
            session.core.receive_as(decoded, identity);
            return with_session_id(empty(StatusCode::ACCEPTED), &session_id);
        }
        // One stream answers every request of this POST; it ends with the last answer.
        let (tx, mut rx) = queue::channel(self.limits(&session.buffer));
        let stream = Arc::new(StreamTx {
            tx,
            json: self.config.json_response,
        });
        let (priming, rest) = {
            let mut routes = lock(&session.routes.state);
            // The priming event's id comes first in the session's order, whenever it is sent.
            let priming = (!self.config.json_response).then(|| routes.next_event_id());
            let rest = match &answered {
                // The session answered already: its answer is all the stream carries.
                Some(answer) => {
                    routes.deliver(&stream, answer);
                    None
                }
                None => routes.claim(decoded, &stream),
            };
            (priming, rest)
        };
        drop(stream);
        if let Some(rest) = rest {
            session.core.receive_as(rest, identity);
        }
        let response = match priming {
            // A batch is answered with an array, even of one; each SSE event carries one.
            None => body::json_from(rx, batch, self.config.max_stream_buffer_bytes).await,
            Some(id) => {
                // The head waits for the stream's first event, for at most `head_wait`, and
                // leaves with the priming event and that event in one write; for a call that
                // streams nothing, that event is its answer, and the stream's end follows in
                // the same write. Sent at once, the head and the priming event took a write
                // (and a wake-up of the client) of their own. (`recv` is cancel-safe: an
                // event that comes after the wait stays in `rx`.)
                let mut first = Vec::with_capacity(body::FRAME_ROOM);
                sse::encode_priming(&mut first, &id, Some(self.config.retry_ms));
                let mut ended = false;
                if let Ok(Ok(Some(event))) =
                    tokio::time::timeout(self.config.head_wait, rx.recv()).await
                {
                    first.extend_from_slice(&event);
                    // What else is in already goes too; a stream that has ended with it (a
                    // call answered at once) leaves whole, with its length, so that the client
                    // knows it ended with its last byte and can send its next request on the
                    // connection at once. As a chunked stream, its end is a chunk of its own,
                    // which hyper's client reads only once the answer has been taken: a turn
                    // of its connection task, and a timer of ours meanwhile.
                    let mut cx = Context::from_waker(Waker::noop());
                    while let Poll::Ready(next) = rx.poll_recv(&mut cx) {
                        match next {
                            Ok(Some(event)) => first.extend_from_slice(&event),
                            Ok(None) => {
                                ended = true;
                                break;
                            }
                            Err(_) => break,
                        }
                    }
                }
                if ended {
                    sse_response_whole(Bytes::from(first))
                } else {
                    sse_response(SseBody::starting_with(Bytes::from(first), rx))
                }
            }
        };
        with_session_id(response, &session_id)
    }

    /// A POST's body, at most `max_body_bytes` (413 beyond, and at once when its
    /// `Content-Length` says so), within `body_read_timeout` (408 after).
    async fn read_body(&self, body: Incoming) -> Result<Bytes, Response<ResponseBody>> {
        let too_large = || {
            rpc_error(
                StatusCode::PAYLOAD_TOO_LARGE,
                -32600,
                "the request body is too large",
            )
        };
        let limit = self.config.max_body_bytes;
        if usize::try_from(body.size_hint().lower()).map_or(true, |declared| declared > limit) {
            return Err(too_large());
        }
        let read = Limited::new(body, limit).collect();
        match tokio::time::timeout(self.config.body_read_timeout, read).await {
            Ok(Ok(collected)) => {
                let bytes = collected.to_bytes();
                self.metrics
                    .bytes_in
                    .fetch_add(bytes.len() as u64, Ordering::Relaxed);
                Ok(bytes)
            }
            Ok(Err(_)) => Err(too_large()),
            Err(_) => {
                let mut r = rpc_error(
                    StatusCode::REQUEST_TIMEOUT,
                    -32600,
                    "the request body did not arrive in time",
                );
                r.headers_mut()
                    .insert(http::header::CONNECTION, HeaderValue::from_static("close"));
                Err(r)
            }
        }
    }

    /// A new session, or the answer that refuses it: the server holds `max_sessions`
    /// already (503), or the OS gives no randomness for its id (500).
    fn new_session(
        &self,
        caller: Option<&auth::Allowed>,
        initialize: &Decoded,
    ) -> Result<(String, Arc<Session<H>>), NoNewSession> {
        let limit = self.config.max_sessions;
        if lock(&self.sessions).len() >= limit {
            self.metrics.refused_session();
            return Err(NoNewSession::Full);
        }
        let subject = caller.map(|c| c.subject.clone());
        let id = match &self.config.sealed_sessions {
            None => session_id().map_err(|_| NoNewSession::NoRandomness)?,
            Some(seal) => {
                let Decoded::Single(Message::Request(request)) = initialize else {
                    return Err(NoNewSession::NoRandomness);
                };
                let initialize = seal::initialize_kept(request.params.as_ref())
                    .ok_or(NoNewSession::NoRandomness)?;
                seal.seal(&seal::Opened {
                    made: seal::unix_now(),
                    subject: subject.clone(),
                    initialize,
                })
                .ok_or(NoNewSession::NoRandomness)?
            }
        };
        let name = self
            .config
            .sealed_sessions
            .as_ref()
            .map(|_| seal::share_key(&id));
        let session = self.make_session(subject, name);
        {
            // Checked again under the lock that inserts: two `initialize` calls at once must
            // not both take the last place.
            let mut sessions = lock(&self.sessions);
            if sessions.len() >= limit {
                drop(sessions);
                session.core.close("the server has too many sessions");
                self.metrics.refused_session();
                return Err(NoNewSession::Full);
            }
            sessions.insert(id.clone(), Arc::clone(&session));
        }
        Ok((id, session))
    }

    /// A session this process does not hold, made again from its sealed id: its core is
    /// told the sealed `initialize` and `notifications/initialized` (their answers go
    /// nowhere: no stream is open yet), so it serves as the one the client began elsewhere.
    fn revive(&self, id: &str, opened: seal::Opened) -> Result<Arc<Session<H>>, NoSession> {
        if lock(&self.sessions).len() >= self.config.max_sessions {
            self.metrics.refused_session();
            return Err(NoSession::Full);
        }
        let session = self.make_session(opened.subject, Some(seal::share_key(id)));
        session
            .core
            .receive(Decoded::Single(Message::Request(mcp_protocol::Request {
                id: RequestId::String("revived".to_owned()),
                method: "initialize".to_owned(),
                params: Some(opened.initialize),
            })));
        session.core.receive(Decoded::Single(Message::Notification(
            mcp_protocol::Notification {
                method: "notifications/initialized".to_owned(),
                params: None,
            },
        )));
        let mut sessions = lock(&self.sessions);
        // Two requests of one session may revive it at once: the first kept wins.
        if let Some(kept) = sessions.get(id) {
            let kept = Arc::clone(kept);
            drop(sessions);
            session.core.close("revived twice");
            return Ok(kept);
        }
        sessions.insert(id.to_owned(), Arc::clone(&session));
        Ok(session)
    }

    /// A session's state, before anything reached its core. A sealed session is `name`d by
    /// the digest of its id, the same at every replica (what the handler keeps about it in a
    /// shared store is kept under it).
    fn make_session(&self, subject: Option<String>, name: Option<String>) -> Arc<Session<H>> {
        // With sealed ids, each copy of a session this replica makes names its events apart.
        let event_prefix = self.config.sealed_sessions.as_ref().map(|seal| {
            let copy = self.copies.fetch_add(1, Ordering::Relaxed);
            format!("{}.{copy}.", seal.replica())
        });
        let routes = Arc::new(Routes::with_event_prefix(event_prefix));
        let mut options = CoreOptions::new().sessions(&self.registry);
        if let Some(name) = name {
            options = options.name(name);
        }
        let core = ServerCore::with_options(
            self.config.server.clone(),
            Arc::clone(&self.handler),
            RoutedTransport(Arc::clone(&routes)),
            options,
        );
        Arc::new(Session {
            core,
            routes,
            last_used: Mutex::new(Instant::now()),
            subject,
            buffer: Budget::new(self.config.max_session_buffer_bytes),
            level: self
                .config
                .sealed_sessions
                .is_some()
                .then(|| Box::new(tokio::sync::Mutex::new(None))),
            subs: self
                .config
                .sealed_sessions
                .is_some()
                .then(|| Box::new(tokio::sync::Mutex::new(seal::subs::Told::default()))),
        })
    }

    async fn get(
        &self,
        req: &Request<Incoming>,
        caller: Option<&auth::Allowed>,
    ) -> Response<ResponseBody> {
        let accept = req
            .headers()
            .get(ACCEPT)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        if !accept.contains("text/event-stream") {
            return rpc_error(
                StatusCode::NOT_ACCEPTABLE,
                -32600,
                "Accept must list text/event-stream",
            );
        }
        if !self.config.standalone_stream || stateless::is_stateless(req.headers()) {
            let mut r = plain(StatusCode::METHOD_NOT_ALLOWED, "no standalone stream");
            r.headers_mut()
                .insert(ALLOW, HeaderValue::from_static("POST, DELETE"));
            return r;
        }
        let (id, session) = match self.session_of(req.headers(), caller).await {
            Ok(found) => found,
            Err(refusal) => return refusal.response(self.config.max_sessions),
        };
        if let Some(last) = req
            .headers()
            .get("last-event-id")
            .and_then(|v| v.to_str().ok())
            && !lock(&session.routes.state).resumable_here(last)
        {
            return rpc_error(
                StatusCode::CONFLICT,
                -32600,
                "Last-Event-ID names an event of a call's stream that another replica held; no replica keeps another's events, so that call's answer cannot come here: call again",
            );
        }
        // The session's updates come from this replica's upstreams now: it subscribes for
        // what the client subscribed to at any replica, and is told of later changes.
        if let Err(e) = self
            .hold_stream(&id, &session, caller.map(|c| c.caller.clone()))
            .await
        {
            return e.response();
        }
        let (tx, rx) = queue::channel(self.limits(&session.buffer));
        {
            let mut routes = lock(&session.routes.state);
            if routes
                .standalone
                .as_ref()
                .is_some_and(|s| !s.tx.is_closed())
            {
                return rpc_error(
                    StatusCode::CONFLICT,
                    -32600,
                    "a standalone stream is already open",
                );
            }
            let event = routes.next_standalone_event_id();
            let mut priming = Vec::new();
            sse::encode_priming(&mut priming, &event, Some(self.config.retry_ms));
            tx.send(Bytes::from(priming));
            routes.standalone = Some(Arc::new(StreamTx { tx, json: false }));
        }
        let mut r = Response::new(http_body_util::Either::Right(SseBody::new(rx)));
        r.headers_mut()
            .insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
        with_session_id(r, &id)
    }

    async fn delete(
        &self,
        req: &Request<Incoming>,
        caller: Option<&auth::Allowed>,
    ) -> Response<ResponseBody> {
        let (id, session) = match self.session_of(req.headers(), caller).await {
            Ok(found) => found,
            Err(refusal) => return refusal.response(self.config.max_sessions),
        };
        // Every replica is told first: a session is ended everywhere or not at all.
        if let Some(seal) = &self.config.sealed_sessions
            && seal
                .share()
                .end(&seal::share_key(&id), seal.max_age())
                .await
                .is_err()
        {
            return NoSession::StoreDown.response(self.config.max_sessions);
        }
        lock(&self.sessions).remove(&id);
        session.core.close("the client ended the session");
        lock(&session.routes.state).close_all();
        empty(StatusCode::OK)
    }
}

/// Whether a POST must be answered: it holds a request, or (in a batch) an item that did not
/// decode but is owed an error naming its id.
fn owes_answers(decoded: &Decoded) -> bool {
    match decoded {
        Decoded::Single(m) => owed_id(Ok(m)).is_some(),
        Decoded::Batch(items) => items.iter().any(|item| owed_id(item.as_ref()).is_some()),
    }
}

/// The id an item of a POST is answered under, if it is owed an answer on the POST's stream:
/// a request's, or that of an item that did not decode but names its id and a method (an
/// invalid request), which JSON-RPC 2.0 §6 answers with the rest of its batch.
fn owed_id<'a>(item: Result<&'a Message, &'a DecodeError>) -> Option<&'a RequestId> {
    match item {
        Ok(Message::Request(r)) => Some(&r.id),
        Ok(_) => None,
        Err(e) => e.to_response().and(e.id.as_ref()),
    }
}

/// Why a request has no session to go to.
#[derive(Debug, Clone, Copy)]
enum NoSession {
    /// It named none (400).
    Missing,
    /// It named one that ended or never was (404): the client must start a new one.
    Unknown,
    /// It named a sealed one this process would revive, but holds `max_sessions` (503).
    Full,
    /// The store the replicas share did not answer whether it ended (503): it is not served
    /// until it does, since it may have ended elsewhere.
    StoreDown,
}

impl NoSession {
    fn response(self, limit: usize) -> Response<ResponseBody> {
        match self {
            Self::Full => NoNewSession::Full.response(limit),
            Self::StoreDown => {
                let mut r = rpc_error(
                    StatusCode::SERVICE_UNAVAILABLE,
                    SERVER_BUSY,
                    "Service Unavailable: the session store did not answer",
                );
                r.headers_mut()
                    .insert(http::header::RETRY_AFTER, HeaderValue::from_static("1"));
                r
            }
            Self::Missing => rpc_error(
                StatusCode::BAD_REQUEST,
                -32600,
                "Bad Request: no MCP-Session-Id header",
            ),
            Self::Unknown => rpc_error(StatusCode::NOT_FOUND, -32600, "Session not found"),
        }
    }
}

/// 503 (the client may send its answer again) or 500 for an answer that could not be passed
/// to the replica that waits for it: never a 202 for an answer that went nowhere.
fn not_relayed(e: seal::NotRelayed) -> Response<ResponseBody> {
    match e {
        seal::NotRelayed::StoreDown => {
            let mut r = rpc_error(
                StatusCode::SERVICE_UNAVAILABLE,
                SERVER_BUSY,
                "Service Unavailable: the answer could not be passed to the replica that waits \
                 for it (the session store did not answer)",
            );
            r.headers_mut()
                .insert(http::header::RETRY_AFTER, HeaderValue::from_static("1"));
            r
        }
        seal::NotRelayed::NoRandomness => rpc_error(
            StatusCode::INTERNAL_SERVER_ERROR,
            mcp_protocol::code::INTERNAL_ERROR,
            "no randomness to seal the answer with",
        ),
    }
}

/// Ends sessions nobody used for the configured time.
async fn sweep_idle<H: Handler>(server: std::sync::Weak<HttpServer<H>>) {
    loop {
        let Some(s) = server.upgrade() else { return };
        let timeout = s.config.session_idle_timeout;
        let expired: Vec<Arc<Session<H>>> = {
            let mut sessions = lock(&s.sessions);
            let ids: Vec<String> = sessions
                .iter()
                .filter(|(_, session)| lock(&session.last_used).elapsed() >= timeout)
                .map(|(id, _)| id.clone())
                .collect();
            ids.iter().filter_map(|id| sessions.remove(id)).collect()
        };
        for session in expired {
            session.core.close("the session expired");
            lock(&session.routes.state).close_all();
        }
        drop(s);
        tokio::time::sleep((timeout / 4).clamp(Duration::from_millis(50), Duration::from_secs(60)))
            .await;
    }
}

/// An unguessable session id: 128 bits from the OS, as visible ASCII.
fn session_id() -> std::io::Result<String> {
    session_id_from(std::fs::File::open("/dev/urandom")?)
}

/// A session id from 16 bytes of `random`. Without them there is no id: one that is merely
/// unique (a clock, a counter) could be guessed, and whoever guesses it acts in the session.
fn session_id_from(mut random: impl std::io::Read) -> std::io::Result<String> {
    let mut bytes = [0u8; 16];
    random.read_exact(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

fn with_session_id(mut r: Response<ResponseBody>, id: &str) -> Response<ResponseBody> {
    if let Ok(v) = HeaderValue::from_str(id) {
        r.headers_mut().insert(SESSION_ID, v);
    }
    r
}

/// Why an `initialize` gets no session.
#[derive(Debug, Clone, Copy)]
enum NoNewSession {
    /// The server holds [`HttpServerConfig::max_sessions`] already (503).
    Full,
    /// The OS gave no randomness for its id (500).
    NoRandomness,
}

impl NoNewSession {
    fn response(self, limit: usize) -> Response<ResponseBody> {
        match self {
            Self::Full => {
                let mut r = rpc_error(
                    StatusCode::SERVICE_UNAVAILABLE,
                    SERVER_BUSY,
                    &format!(
                        "Service Unavailable: the server holds {limit} sessions, its limit \
                         (max_sessions); end unused sessions with DELETE or wait for idle ones \
                         to expire"
                    ),
                );
                r.headers_mut()
                    .insert(http::header::RETRY_AFTER, HeaderValue::from_static("5"));
                r
            }
            Self::NoRandomness => rpc_error(
                StatusCode::INTERNAL_SERVER_ERROR,
                mcp_protocol::code::INTERNAL_ERROR,
                "no randomness for a session id",
            ),
        }
    }
}

/// 400 for a batch in a protocol version that has none (any but 2025-03-26), with the -32600
/// error, without id, that the session would answer it with.
fn no_batches() -> Response<ResponseBody> {
    rpc_error(
        StatusCode::BAD_REQUEST,
        mcp_protocol::code::INVALID_REQUEST,
        "JSON-RPC batches are not allowed in this protocol version",
    )
}

/// 400 for a body that did not decode, with the JSON-RPC error it is owed when there is one.
fn undecodable(e: &DecodeError) -> Response<ResponseBody> {
    match e.to_response() {
        Some(message) => json_response(StatusCode::BAD_REQUEST, &message),
        None => rpc_error(StatusCode::BAD_REQUEST, e.code(), "Parse error"),
    }
}

/// A `200` SSE response.
fn sse_response(body: SseBody) -> Response<ResponseBody> {
    sse_headers(Response::new(http_body_util::Either::Right(body)))
}

/// A `200` SSE response whose every event is known: sent with its `Content-Length`.
fn sse_response_whole(events: Bytes) -> Response<ResponseBody> {
    sse_headers(Response::new(http_body_util::Either::Left(Full::new(
        events,
    ))))
}

fn sse_headers(mut r: Response<ResponseBody>) -> Response<ResponseBody> {
    r.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    r.headers_mut().insert(
        http::header::CACHE_CONTROL,
        HeaderValue::from_static("no-cache"),
    );
    r
}

fn empty(status: StatusCode) -> Response<ResponseBody> {
    let mut r = Response::new(http_body_util::Either::Left(Full::new(Bytes::new())));
    *r.status_mut() = status;
    r
}

fn plain(status: StatusCode, text: &'static str) -> Response<ResponseBody> {
    let mut r = Response::new(http_body_util::Either::Left(Full::new(Bytes::from_static(
        text.as_bytes(),
    ))));
    *r.status_mut() = status;
    r
}

fn json_response(status: StatusCode, message: &Message) -> Response<ResponseBody> {
    let mut r = Response::new(http_body_util::Either::Left(Full::new(Bytes::from(
        message.encode(),
    ))));
    *r.status_mut() = status;
    r.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    r
}

/// An HTTP error with a JSON-RPC error body without id, as the spec allows.
fn rpc_error(status: StatusCode, code: i64, message: &str) -> Response<ResponseBody> {
    let error = mcp_protocol::ErrorObject::new(code, message.to_owned());
    json_response(
        status,
        &Message::Error(mcp_protocol::ErrorResponse { id: None, error }),
    )
}

#[cfg(test)]
mod tests;
