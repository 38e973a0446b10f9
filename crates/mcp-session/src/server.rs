//! The server side on tokio, over any transport: a [`Handler`] answers each client request,
//! polled first on the thread that read it and, if it must wait, in a task of its own (a slow
//! tool never holds the others; a cancelled request's task is aborted; a handler that panics
//! answers with an internal error), and a [`ServerTransport`] carries what the session sends.
//! `mcp-stdio` serves one client on stdin and stdout with it; `mcp-http` one per HTTP session,
//! and one per request in the 2026-07-28 stateless era.
//! This file is long because it is one driver around one lock: the core, the handler's tasks
//! and waiters, the [`Peer`] that reaches the core and the registry of cores all act on the
//! same state; what stands alone (the timer, the task runtime) is already a module of its own.
//!
//! The cores of one server share a [`Sessions`] registry, so that a handler can tell every
//! client at once that its tools changed: each handshake-era session on its own stream, each
//! stateless `subscriptions/listen` stream whose filter asks for it.

use std::collections::HashMap;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::task::{Context, Poll, Waker};
use std::time::Instant;

use mcp_protocol::schema::{
    ClientNotification, ClientRequest, ProgressParams, ProgressToken, RequestMethod,
    SubscriptionFilter,
};
use mcp_protocol::{
    ClientInfo, DecodeError, Decoded, Era, ErrorObject, Message, RawJson, Request, RequestId,
    RequestOptions, ServerConfig, ServerEvent, ServerSession, code, decode_result,
};
use tokio::sync::{Notify, oneshot};
use tokio::task::AbortHandle;

use crate::core::now;
use crate::timer;

/// Answers the requests of one client. Implemented by the gateway and by test servers.
pub trait Handler: Send + Sync + 'static {
    /// Handles one request. The result is sent as the answer; an `Err` is sent as a JSON-RPC
    /// error; a panic is answered as an internal error. If the client cancels, the future is
    /// dropped. It is first polled where the request was read, so that an answer ready at once
    /// leaves without a task: work that blocks the thread belongs in `spawn_blocking`, or it
    /// holds the connection's other requests until its first `.await`.
    fn handle(
        &self,
        request: ClientRequest,
        context: RequestContext,
    ) -> impl Future<Output = Result<RawJson, ErrorObject>> + Send;

    /// A notification the session does not handle itself arrived (`roots/list_changed`, or
    /// one this crate does not know). A proxy passes it on; most servers ignore it.
    fn notified(&self, session: SessionKey, notification: ClientNotification) {
        let _ = (session, notification);
    }

    /// The client finished the handshake (`notifications/initialized`): who it is, the version
    /// agreed and what it offers. A server that logs its sessions says so here; the stateless
    /// era has no handshake, and this is never called for it.
    fn initialized(&self, session: SessionKey, client: &ClientInfo) {
        let _ = (session, client);
    }

    /// A stateless-era client opened a `subscriptions/listen` stream carrying `filter` (the
    /// part this server honours), which the session serves itself; `sessions` is the registry
    /// that stream joined. A proxy subscribes upstream here to the resources the stream asks
    /// for, since the era has no `resources/subscribe`. By default nothing is done.
    fn listening(&self, session: SessionKey, filter: &SubscriptionFilter, sessions: &Sessions) {
        let _ = (session, filter, sessions);
    }

    /// The session ended (the client left, closed it, or broke the protocol): a handler that
    /// keeps state per session ([`RequestContext::session`]) drops it here.
    fn closed(&self, session: SessionKey) {
        let _ = session;
    }

    /// The `inputSchema` of a tool this server offers, by name, if the handler knows it. In
    /// the stateless era over HTTP a client mirrors the arguments a schema marks with
    /// `x-mcp-header` into `Mcp-Param-*` headers, and the transport checks them against the
    /// body with this schema before the call reaches [`handle`](Self::handle). `None` (the
    /// default) checks only the standard headers.
    fn tool_schema(&self, name: &str) -> Option<RawJson> {
        let _ = name;
        None
    }

    /// Adjusts the configuration a new session starts from (in the stateless era, each
    /// request), for a server whose offer changes over its life: a gateway declares what its
    /// upstreams offer once they have connected, not what it knew when it began to serve. By
    /// default the configuration the server was given is kept.
    fn configure(&self, config: &mut ServerConfig) {
        let _ = config;
    }
}

/// Names one client session for the life of the process, so that a handler serving many
/// sessions (over HTTP) can keep state per session. Never reused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SessionKey(u64);

impl SessionKey {
    pub(crate) fn next() -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        Self(NEXT.fetch_add(1, Ordering::Relaxed))
    }
}

impl std::fmt::Display for SessionKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "session-{}", self.0)
    }
}

/// Carries what a server session sends. Called with the session locked; must not block.
pub trait ServerTransport: Send + Sync + 'static {
    /// Sends one message. `related` is the client request it belongs to: the one it answers,
    /// or the one whose handler sent it (progress, a sampling request); `None` for what the
    /// server sends unprompted (list changes). Over HTTP this picks the stream.
    fn send(&self, message: Message, related: Option<&RequestId>);

    /// The client withdrew a request (it cancelled it): no answer will be sent for it, so
    /// whatever waits for one can end (over HTTP, the request's stream). Called with the
    /// session locked; must not block.
    fn withdrawn(&self, id: &RequestId) {
        let _ = id;
    }

    /// Why a request to the client tied to `related` (as in [`send`](Self::send)) could not
    /// reach it now, if it could not: the request then fails at once with
    /// [`Error::Transport`](mcp_protocol::Error::Transport) and this reason, and is not sent,
    /// rather than wait for its timeout. Over HTTP, a request whose own answer is one JSON
    /// body needs the client's standalone stream. Called with the session locked; must not
    /// block.
    fn undeliverable(&self, related: Option<&RequestId>) -> Option<String> {
        let _ = related;
        None
    }

    /// Called after every change that may have sent something, once the session lock is
    /// released: a transport that writes without waiting makes its system call here, so that
    /// the lock is not held across it.
    fn flush(&self) {}
}

/// What a handler knows about the request it handles, and its way back to the client.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct RequestContext {
    /// The request's id.
    pub id: RequestId,
    /// The client's progress token, if it asked for progress.
    pub progress_token: Option<ProgressToken>,
    /// The client, for progress, notifications and requests tied to this request.
    pub peer: Peer,
    /// The session the request came in on.
    pub session: SessionKey,
    /// Who the client is and what it declared: in `initialize` (requests are handled only
    /// after it), or in the stateless era in this request's own `_meta`, which holds for this
    /// request only. A proxy forwards a server's sampling or elicitation request only to a
    /// client that offered it; a stateless handler that needs an undeclared capability answers
    /// [`missing_capability_error`](mcp_protocol::missing_capability_error) (-32021).
    pub client: Option<Arc<ClientInfo>>,
    /// The era of the session: in the stateless one the handler may not send requests to the
    /// client ([`Peer::request`] fails) and asks for input with an `input_required` result.
    pub era: Option<Era>,
    /// Every session of this server, for notifications all clients must hear.
    pub sessions: Sessions,
    /// Who the transport authenticated for the request (an HTTP server checking OAuth access
    /// tokens), for rules per caller; `None` where nothing authenticates (stdio).
    pub caller: Option<Identity>,
    /// The name every replica of the server gives what the request belongs to
    /// ([`CoreOptions::name`]): a sealed session (a digest of its id) or, in the stateless era,
    /// the caller the transport authenticated (a digest of its subject). Tasks are bound to it
    /// (the spec binds tasks to the authorization context), and state kept outside this
    /// process, such as tasks another replica answers for, is kept under it. `None` where a
    /// session lives in one process only and nobody is authenticated.
    pub session_name: Option<Arc<str>>,
}

/// What a transport learnt about who sent a request, opaque to the session: the transport's
/// authenticator decides its type and the handler reads it back with
/// [`downcast_ref`](Self::downcast_ref), so that this crate knows nothing of tokens.
#[derive(Clone)]
pub struct Identity(Arc<dyn std::any::Any + Send + Sync>);

impl Identity {
    /// Wraps what the authenticator found.
    pub fn new<T: std::any::Any + Send + Sync>(found: T) -> Self {
        Self(Arc::new(found))
    }

    /// What the authenticator found, if it is a `T`.
    pub fn downcast_ref<T: std::any::Any>(&self) -> Option<&T> {
        self.0.downcast_ref()
    }
}

// It may hold claims of a token: their content is the handler's to show or not.
impl std::fmt::Debug for Identity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Identity(..)")
    }
}

impl RequestContext {
    /// Reports progress, if the client asked for it; otherwise does nothing.
    pub fn progress(&self, progress: u64, total: Option<u64>, message: Option<&str>) {
        let Some(token) = &self.progress_token else {
            return;
        };
        let mut params = ProgressParams::new(token.clone(), progress.into());
        params.total = total.map(Into::into);
        params.message = message.map(str::to_owned);
        if let Ok(raw) = RawJson::encode(&params) {
            let _ = self.peer.notify("notifications/progress", Some(raw));
        }
    }
}

/// The sessions of one server, shared by its cores: [`notify`](Self::notify) tells every
/// client at once (list changes). Cores join when they start and leave when they end.
#[derive(Clone, Default)]
pub struct Sessions {
    members: Arc<Mutex<Vec<Weak<dyn Link>>>>,
    /// The configuration the handler last gave a new session ([`Handler::configure`]): the
    /// next session whose configuration is the same shares it instead of keeping a copy.
    configured: Arc<Mutex<Option<Arc<ServerConfig>>>>,
}

impl std::fmt::Debug for Sessions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sessions").finish_non_exhaustive()
    }
}

impl Sessions {
    /// An empty registry, for a server whose cores should share one.
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether `other` is a handle on this same registry: for a handler served by several
    /// servers at once (stdio and HTTP), which keeps one handle per server.
    pub fn same(&self, other: &Sessions) -> bool {
        Arc::ptr_eq(&self.members, &other.members)
    }

    /// `base` as the handler adjusts it for a new session, shared with the session before it
    /// when it is the same as that one's: a gateway works its offer out afresh for each
    /// session, and it seldom changes; a transport that hands each session a copy of its
    /// configuration gets them shared too.
    fn configured<H: Handler>(&self, handler: &H, base: Arc<ServerConfig>) -> Arc<ServerConfig> {
        let mut config = Arc::unwrap_or_clone(base);
        handler.configure(&mut config);
        let mut last = self
            .configured
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        match &*last {
            Some(shared) if **shared == config => Arc::clone(shared),
            _ => {
                let config = Arc::new(config);
                *last = Some(Arc::clone(&config));
                config
            }
        }
    }

    fn join(&self, link: Weak<dyn Link>) {
        let mut members = self.members.lock().unwrap_or_else(PoisonError::into_inner);
        members.retain(|m| m.strong_count() > 0);
        members.push(link);
    }

    /// Sends a notification unprompted only to the stateless era's `subscriptions/listen`
    /// streams whose filter asks for it, not to handshake-era sessions: for a resource update,
    /// which a handshake client gets only if it subscribed (the caller tells those itself).
    /// Returns how many sessions took it.
    pub fn notify_listening(&self, method: &str, params: Option<RawJson>) -> usize {
        let live: Vec<Arc<dyn Link>> = {
            let mut members = self.members.lock().unwrap_or_else(PoisonError::into_inner);
            members.retain(|m| m.strong_count() > 0);
            members.iter().filter_map(Weak::upgrade).collect()
        };
        live.iter()
            .filter(|link| link.notify_listening(method, params.clone()))
            .count()
    }

    /// Sends a notification unprompted to every live session: in the handshake era on its
    /// own stream (refused where the handshake is not over, which is skipped); in the
    /// stateless era to the `subscriptions/listen` streams whose filter asks for it. Returns
    /// how many sessions took it.
    pub fn notify(&self, method: &str, params: Option<RawJson>) -> usize {
        let live: Vec<Arc<dyn Link>> = {
            let mut members = self.members.lock().unwrap_or_else(PoisonError::into_inner);
            members.retain(|m| m.strong_count() > 0);
            members.iter().filter_map(Weak::upgrade).collect()
        };
        live.iter()
            .filter(|link| link.notify(None, method, params.clone()).is_ok())
            .count()
    }
}

/// How a [`ServerCore`] starts: [`ServerCore::with_options`].
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct CoreOptions {
    sessions: Option<Sessions>,
    stateless: bool,
    name: Option<Arc<str>>,
}

impl CoreOptions {
    /// A dual-era session of its own, in no shared registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Joins the registry the server's other cores share.
    pub fn sessions(mut self, sessions: &Sessions) -> Self {
        self.sessions = Some(sessions.clone());
        self
    }

    /// Speaks only the stateless era ([`ServerSession::stateless`]): for a transport that
    /// already knows the request is one (an HTTP `MCP-Protocol-Version` that is not a
    /// handshake version).
    pub fn stateless(mut self) -> Self {
        self.stateless = true;
        self
    }

    /// The name every replica gives the session (a digest of its sealed id, never the id; in
    /// the stateless era, of the authenticated subject), which its requests carry
    /// ([`RequestContext::session_name`]): its tasks are bound to it, and what state the
    /// replicas share about it is kept under it.
    pub fn name(mut self, name: impl Into<Arc<str>>) -> Self {
        self.name = Some(name.into());
        self
    }
}

/// What [`Peer`] needs of the core, without the handler's type.
trait Link: Send + Sync {
    fn notify(
        &self,
        related: Option<&RequestId>,
        method: &str,
        params: Option<RawJson>,
    ) -> mcp_protocol::Result<()>;
    fn request(
        &self,
        related: Option<&RequestId>,
        method: &str,
        params: Option<RawJson>,
        options: RequestOptions,
    ) -> mcp_protocol::Result<(
        RequestId,
        oneshot::Receiver<Result<RawJson, mcp_protocol::Error>>,
    )>;
    /// [`request`](Self::request), but kept waiting for its answer even when no stream can
    /// carry it now ([`Held`]).
    fn request_held(
        &self,
        related: Option<&RequestId>,
        method: &str,
        params: Option<RawJson>,
        options: RequestOptions,
    ) -> mcp_protocol::Result<Held>;
    /// Sends `request` as it is, tied to `related`; whether a stream took it.
    fn forward(&self, related: Option<&RequestId>, request: Request) -> bool;
    /// Gives up request `id` (see [`Peer::withdraw`]).
    fn withdraw(&self, related: Option<&RequestId>, id: &RequestId, reason: &str);
    /// [`notify`](Self::notify) unprompted, only in the stateless era; whether it was sent.
    fn notify_listening(&self, method: &str, params: Option<RawJson>) -> bool;
}

/// Withdraws a request to the client that nobody waits for any more ([`Peer::request_raw`]).
struct WithdrawOnDrop<'a> {
    peer: &'a Peer,
    /// The request, until its answer came.
    id: Option<RequestId>,
}

impl Drop for WithdrawOnDrop<'_> {
    fn drop(&mut self) {
        if let Some(id) = self.id.take() {
            self.peer
                .withdraw(&id, "the server no longer waits for this request");
        }
    }
}

/// A request to the client that waits for its answer whether or not a stream carried it
/// ([`Peer::request_held`]): a task's question, which a later `tasks/result` may carry.
pub(crate) struct Held {
    /// Its id, which the client's answer carries.
    pub(crate) id: RequestId,
    /// Whether a stream took it as it was sent.
    pub(crate) delivered: bool,
    /// The answer, once it comes (or the request fails: timeout, session closed).
    pub(crate) answer: oneshot::Receiver<Result<RawJson, mcp_protocol::Error>>,
}

/// The client as seen from a server: send it notifications and requests.
#[derive(Clone)]
pub struct Peer {
    link: Weak<dyn Link>,
    related: Option<RequestId>,
}

impl std::fmt::Debug for Peer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Peer")
            .field("related", &self.related)
            .finish_non_exhaustive()
    }
}

impl Peer {
    fn link(&self) -> mcp_protocol::Result<Arc<dyn Link>> {
        self.link
            .upgrade()
            .ok_or_else(|| mcp_protocol::Error::Closed("the client went away".to_owned()))
    }

    /// Sends a notification; refused before the handshake ends (except log entries) and for
    /// capabilities this server did not declare.
    pub fn notify(&self, method: &str, params: Option<RawJson>) -> mcp_protocol::Result<()> {
        self.link()?.notify(self.related.as_ref(), method, params)
    }

    /// Sends a request to the client (sampling, elicitation, roots, ping) and waits for its
    /// typed answer.
    pub async fn request<M: RequestMethod>(
        &self,
        params: &M::Params,
        options: RequestOptions,
    ) -> mcp_protocol::Result<M::Result> {
        let params =
            RawJson::encode(params).map_err(|e| mcp_protocol::Error::ApiMisuse(e.to_string()))?;
        let raw = self.request_raw(M::METHOD, Some(params), options).await?;
        decode_result::<M>(&raw)
    }

    /// Sends a request by method name with raw parameters and waits for the raw result: for
    /// a proxy, which passes on what it does not need to understand.
    pub async fn request_raw(
        &self,
        method: &str,
        params: Option<RawJson>,
        options: RequestOptions,
    ) -> mcp_protocol::Result<RawJson> {
        let (id, answer) = self
            .link()?
            .request(self.related.as_ref(), method, params, options)?;
        // Dropped before its answer (the handler gave up waiting, or was aborted because its
        // own caller withdrew the request it serves), the request is withdrawn from the
        // client too, so that nobody goes on answering a question nobody waits for.
        let mut waiting = WithdrawOnDrop {
            peer: self,
            id: Some(id),
        };
        let outcome = answer
            .await
            .map_err(|_| mcp_protocol::Error::Closed("the client went away".to_owned()));
        waiting.id = None;
        outcome?
    }

    /// Sends a request and keeps waiting for its answer even when no stream can carry it now
    /// (over HTTP: the request it is tied to has no open stream, and the client no standalone
    /// one), instead of failing at once: [`forward_request`](Self::forward_request) may carry
    /// it later, on another request's stream, under the same id.
    pub(crate) fn request_held(
        &self,
        method: &str,
        params: Option<RawJson>,
        options: RequestOptions,
    ) -> mcp_protocol::Result<Held> {
        self.link()?
            .request_held(self.related.as_ref(), method, params, options)
    }

    /// Sends `request`, made elsewhere, as it is, on this peer's way to the client (over HTTP
    /// the stream of the request this peer is tied to, else the standalone stream): whether a
    /// stream took it. Nothing waits for its answer here: whoever made it does (a task's
    /// question held by the task store, or by another replica of the server whose name the id
    /// carries, where the client's answer is relayed), so that a `tasks/result` carries the
    /// questions of a task that runs elsewhere. Unchecked by the session (the one that made
    /// the request checked the client may be asked it).
    pub fn forward_request(&self, request: Request) -> bool {
        self.link()
            .is_ok_and(|link| link.forward(self.related.as_ref(), request))
    }

    /// Gives up request `id` that this peer sent ([`request_held`](Self::request_held)) and
    /// whose answer nobody waits for any more: the client is told with
    /// `notifications/cancelled` (on this peer's way), the session stops waiting, and a late
    /// answer is dropped. Nothing when it is answered or given up already.
    pub(crate) fn withdraw(&self, id: &RequestId, reason: &str) {
        if let Ok(link) = self.link() {
            link.withdraw(self.related.as_ref(), id, reason);
        }
    }

    /// The request this peer is tied to, if any.
    pub(crate) fn related(&self) -> Option<&RequestId> {
        self.related.as_ref()
    }

    /// The same client, for messages not tied to any request (they go to the standalone
    /// stream over HTTP).
    pub fn unrelated(&self) -> Self {
        Self {
            link: self.link.clone(),
            related: None,
        }
    }

    /// The same client, for messages tied to request `id` (tests of the task runtime, which
    /// stand in for a `tasks/result` request).
    #[cfg(test)]
    pub(crate) fn related_to(&self, id: RequestId) -> Self {
        Self {
            link: self.link.clone(),
            related: Some(id),
        }
    }
}

struct State {
    session: ServerSession,
    tasks: HashMap<RequestId, AbortHandle>,
    waiters: HashMap<RequestId, oneshot::Sender<Result<RawJson, mcp_protocol::Error>>>,
    /// The deadline the timer task sleeps until; it is woken only for an earlier one.
    armed: timer::Armed,
    /// What the client declared, once known; shared with every request's context.
    client: Option<Arc<ClientInfo>>,
    /// What the handler must hear once the lock is released.
    tell: Vec<Tell>,
    /// Who sent the messages being received ([`ServerCore::receive_as`]).
    caller: Option<Identity>,
}

/// A call to the handler, made outside the session lock, in the order the session raised it.
// Moved once, into a vector that lives for one `with_session`: boxing a request buys nothing.
#[allow(clippy::large_enum_variant)]
enum Tell {
    Start {
        id: RequestId,
        request: ClientRequest,
        context: RequestContext,
    },
    Notified(ClientNotification),
    Listening(SubscriptionFilter),
    Initialized(Box<ClientInfo>),
    Closed,
}

/// A handler's answer in the making, boxed once so that it can move into a task after its
/// first poll.
type Answer = Pin<Box<dyn Future<Output = Result<RawJson, ErrorObject>> + Send>>;

/// Polls a handler's answer; a handler that panics answers with an internal error, so that
/// its client is not left waiting until its timeout (the panic itself is reported by the
/// process's panic hook, as for any task).
fn poll_answer(answer: &mut Answer, cx: &mut Context<'_>) -> Poll<Result<RawJson, ErrorObject>> {
    match std::panic::catch_unwind(AssertUnwindSafe(|| answer.as_mut().poll(cx))) {
        Ok(poll) => poll,
        Err(_) => Poll::Ready(Err(ErrorObject::new(
            code::INTERNAL_ERROR,
            "the server's handler for this request failed (it panicked)".to_owned(),
        ))),
    }
}

/// One client's session on the server side: a transport feeds it what arrives.
pub struct ServerCore<H: Handler> {
    state: Mutex<State>,
    handler: Arc<H>,
    transport: Box<dyn ServerTransport>,
    wake_timer: Arc<Notify>,
    /// Where the timer task runs once the session has a deadline (`timer`).
    runtime: tokio::runtime::Handle,
    me: Weak<Self>,
    key: SessionKey,
    sessions: Sessions,
    /// [`CoreOptions::name`].
    name: Option<Arc<str>>,
}

impl<H: Handler> std::fmt::Debug for ServerCore<H> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerCore").finish_non_exhaustive()
    }
}

impl<H: Handler> ServerCore<H> {
    /// A session waiting for `initialize` (or a first stateless-era request, if `config`
    /// speaks that era), answering with `handler`, sending through `transport`.
    pub fn new(
        config: impl Into<Arc<ServerConfig>>,
        handler: Arc<H>,
        transport: impl ServerTransport,
    ) -> Arc<Self> {
        Self::with_options(config, handler, transport, CoreOptions::new())
    }

    /// [`new`](Self::new) with options: a registry shared with the server's other cores, the
    /// stateless era from the start. Sessions of one registry share their configuration (what
    /// [`Handler::configure`] makes of `config`) while it does not change.
    pub fn with_options(
        config: impl Into<Arc<ServerConfig>>,
        handler: Arc<H>,
        transport: impl ServerTransport,
        options: CoreOptions,
    ) -> Arc<Self> {
        let sessions = options.sessions.unwrap_or_default();
        let config = sessions.configured(&*handler, config.into());
        let session = if options.stateless {
            ServerSession::stateless(config)
        } else {
            ServerSession::new(config)
        };
        let core = Arc::new_cyclic(|me| Self {
            state: Mutex::new(State {
                session,
                tasks: HashMap::new(),
                waiters: HashMap::new(),
                armed: timer::Armed::default(),
                client: None,
                tell: Vec::new(),
                caller: None,
            }),
            handler,
            transport: Box::new(transport),
            wake_timer: Arc::new(Notify::new()),
            runtime: tokio::runtime::Handle::current(),
            me: me.clone(),
            key: SessionKey::next(),
            sessions,
            name: options.name,
        });
        let link: Weak<dyn Link> = core.me.clone();
        core.sessions.join(link);
        core
    }

    /// The registry this core belongs to.
    pub fn sessions(&self) -> &Sessions {
        &self.sessions
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// This session's key, as handlers see it in [`RequestContext::session`].
    pub fn key(&self) -> SessionKey {
        self.key
    }

    /// A peer not tied to any request: for list changes and log entries.
    pub fn peer(&self) -> Peer {
        let link: Weak<dyn Link> = self.me.clone();
        Peer {
            link,
            related: None,
        }
    }

    /// Applies `f` to the session, then starts handlers, wakes waiters and sends what was
    /// queued, tagging each message with the request it belongs to.
    fn with_session<R>(&self, related: Option<&RequestId>, f: impl FnOnce(&mut State) -> R) -> R {
        let (r, tell) = self.with_session_locked(related, f);
        self.transport.flush();
        for t in tell {
            match t {
                Tell::Start {
                    id,
                    request,
                    context,
                } => self.start(id, request, context),
                Tell::Notified(n) => self.handler.notified(self.key, n),
                Tell::Listening(filter) => {
                    self.handler.listening(self.key, &filter, &self.sessions);
                }
                Tell::Initialized(client) => self.handler.initialized(self.key, &client),
                Tell::Closed => self.handler.closed(self.key),
            }
        }
        r
    }

    fn with_session_locked<R>(
        &self,
        related: Option<&RequestId>,
        f: impl FnOnce(&mut State) -> R,
    ) -> (R, Vec<Tell>) {
        let mut guard = self.lock();
        let state = &mut *guard;
        let r = f(state);
        self.dispatch(state);
        while let Some(message) = state.session.poll_transmit() {
            let answered = match &message {
                Message::Response(r) => Some(r.id.clone()),
                Message::Error(e) => e.id.clone(),
                _ => None,
            };
            self.transport.send(message, answered.as_ref().or(related));
        }
        if state
            .armed
            .wake_if_needed(&mut state.session, &self.wake_timer)
        {
            timer::start(self.me.clone(), &self.wake_timer, &self.runtime);
        }
        (r, std::mem::take(&mut state.tell))
    }

    fn dispatch(&self, state: &mut State) {
        while let Some(event) = state.session.poll_event() {
            match event {
                ServerEvent::Request { id, request } => {
                    let era = state.session.era();
                    let client = if era == Some(Era::Stateless) {
                        state.session.request_client(&id).cloned().map(Arc::new)
                    } else {
                        if state.client.is_none() {
                            state.client = state.session.client_info().cloned().map(Arc::new);
                        }
                        state.client.clone()
                    };
                    let context = RequestContext {
                        id: id.clone(),
                        progress_token: request.progress_token(),
                        peer: Peer {
                            link: self.me.clone(),
                            related: Some(id.clone()),
                        },
                        session: self.key,
                        client,
                        era,
                        sessions: self.sessions.clone(),
                        caller: state.caller.clone(),
                        session_name: self.name.clone(),
                    };
                    state.tell.push(Tell::Start {
                        id,
                        request,
                        context,
                    });
                }
                ServerEvent::Cancelled { id, .. } => {
                    if let Some(task) = state.tasks.remove(&id) {
                        task.abort();
                    }
                    self.transport.withdrawn(&id);
                }
                ServerEvent::Response { id, outcome, .. } => {
                    if let Some(waiter) = state.waiters.remove(&id) {
                        let _ = waiter.send(outcome);
                    }
                }
                ServerEvent::Closed(_) => {
                    state.waiters.clear();
                    for (_, task) in state.tasks.drain() {
                        task.abort();
                    }
                    state.tell.push(Tell::Closed);
                }
                ServerEvent::Notification(notification) => {
                    state.tell.push(Tell::Notified(notification));
                }
                ServerEvent::Listening { filter, .. } => {
                    state.tell.push(Tell::Listening(filter));
                }
                ServerEvent::Initialized(client) => {
                    state.tell.push(Tell::Initialized(Box::new(client)));
                }
                // Progress on our own requests, client notifications and
                // diagnostics need nothing from the runtime.
                _ => {}
            }
        }
    }

    /// Runs the handler for one request, outside the lock. Its first poll happens here, on
    /// the thread that read the request: most tools answer at once, and their answer then
    /// leaves without a task, a wake-up or a hop to another worker thread (on two cores that
    /// hop was most of a short call's cost). A handler that must wait goes on in a task of its
    /// own, which a cancellation aborts: a slow tool never holds the others. A handler that
    /// blocks the thread before its first `.await` does hold this connection's reader, as it
    /// would hold a worker thread anyway: blocking work belongs in `spawn_blocking`.
    fn start(&self, id: RequestId, request: ClientRequest, context: RequestContext) {
        let handler = Arc::clone(&self.handler);
        let mut answer: Answer = Box::pin(async move { handler.handle(request, context).await });
        let mut first = Context::from_waker(Waker::noop());
        if let Poll::Ready(outcome) = poll_answer(&mut answer, &mut first) {
            self.finish(&id, outcome);
            return;
        }
        // The first poll saw only a no-op waker; the task polls again at once, which
        // registers its own. The lock is held until the task is recorded, so that its answer,
        // however soon it comes, finds it there to remove.
        let mut state = self.lock();
        if !state.session.is_awaited(&id) {
            // Cancelled, or the session ended, while the handler ran: nobody wants the answer.
            return;
        }
        let me = self.me.clone();
        let task_id = id.clone();
        let task = tokio::spawn(async move {
            let outcome = std::future::poll_fn(|cx| poll_answer(&mut answer, cx)).await;
            if let Some(core) = me.upgrade() {
                core.finish(&task_id, outcome);
            }
        });
        state.tasks.insert(id, task.abort_handle());
    }

    /// Sends a handler's answer.
    fn finish(&self, id: &RequestId, outcome: Result<RawJson, ErrorObject>) {
        self.with_session(Some(id), |state| {
            state.tasks.remove(id);
            let _ = match outcome {
                Ok(result) => state.session.respond(id, result),
                Err(error) => state.session.respond_error(id, error),
            };
        });
    }

    /// A frame arrived: decodes it and feeds the session.
    pub fn receive_frame(&self, bytes: &[u8]) {
        match mcp_protocol::decode(bytes) {
            Ok(decoded) => self.receive(decoded),
            Err(error) => self.receive_invalid(error),
        }
    }

    /// A decoded frame arrived.
    pub fn receive(&self, decoded: Decoded) {
        self.with_session(None, |state| state.session.handle_decoded(now(), decoded));
    }

    /// A decoded frame arrived from `caller`, as the transport authenticated it: the
    /// requests it holds are handled with it in their [`RequestContext::caller`]. Requests
    /// are dispatched under the same lock, so a concurrent message of another caller cannot
    /// lend them its identity.
    pub fn receive_as(&self, decoded: Decoded, caller: Option<Identity>) {
        self.with_session(None, |state| {
            state.caller = caller;
            state.session.handle_decoded(now(), decoded);
        });
    }

    /// A frame arrived that did not decode.
    pub fn receive_invalid(&self, error: DecodeError) {
        self.with_session(None, |state| state.session.handle_invalid(error));
    }

    /// The client is gone: handlers are aborted, waiting requests fail.
    pub fn close(&self, reason: &str) {
        self.with_session(None, |state| state.session.close(reason));
    }

    /// The era the session is in, once its first request has told.
    pub fn era(&self) -> Option<Era> {
        self.lock().session.era()
    }

    /// Whether the client has finished the handshake.
    pub fn is_operating(&self) -> bool {
        self.lock().session.is_operating()
    }

    /// The protocol version the session settled on, once `initialize` has been answered.
    pub fn protocol_version(&self) -> Option<mcp_protocol::ProtocolVersion> {
        self.lock()
            .session
            .client_info()
            .map(|c| c.protocol_version.clone())
    }
}

impl<H: Handler> Link for ServerCore<H> {
    fn notify(
        &self,
        related: Option<&RequestId>,
        method: &str,
        params: Option<RawJson>,
    ) -> mcp_protocol::Result<()> {
        self.with_session(related, |state| {
            state.session.notify_for(related, method, params)
        })
    }

    fn notify_listening(&self, method: &str, params: Option<RawJson>) -> bool {
        self.with_session(None, |state| {
            state.session.era() == Some(Era::Stateless)
                && state.session.notify_for(None, method, params).is_ok()
        })
    }

    fn request(
        &self,
        related: Option<&RequestId>,
        method: &str,
        params: Option<RawJson>,
        options: RequestOptions,
    ) -> mcp_protocol::Result<(
        RequestId,
        oneshot::Receiver<Result<RawJson, mcp_protocol::Error>>,
    )> {
        let (tx, rx) = oneshot::channel();
        self.with_session(related, |state| {
            if let Some(detail) = self.transport.undeliverable(related) {
                return Err(mcp_protocol::Error::Transport {
                    method: method.to_owned(),
                    detail,
                });
            }
            let id = state.session.send_request(now(), method, params, options)?;
            state.waiters.insert(id.clone(), tx);
            Ok((id, rx))
        })
    }

    fn request_held(
        &self,
        related: Option<&RequestId>,
        method: &str,
        params: Option<RawJson>,
        options: RequestOptions,
    ) -> mcp_protocol::Result<Held> {
        let (tx, answer) = oneshot::channel();
        self.with_session(related, |state| {
            let delivered = self.transport.undeliverable(related).is_none();
            // Sent as any request (the transport drops what no stream carries), and waited for.
            let id = state.session.send_request(now(), method, params, options)?;
            state.waiters.insert(id.clone(), tx);
            Ok(Held {
                id,
                delivered,
                answer,
            })
        })
    }

    fn forward(&self, related: Option<&RequestId>, request: Request) -> bool {
        self.with_session(related, |_| {
            if self.transport.undeliverable(related).is_some() {
                return false;
            }
            self.transport.send(Message::Request(request), related);
            true
        })
    }

    fn withdraw(&self, related: Option<&RequestId>, id: &RequestId, reason: &str) {
        self.with_session(related, |state| {
            state.waiters.remove(id);
            state.session.cancel_request(id, reason);
        });
    }
}

impl<H: Handler> timer::Deadlines for ServerCore<H> {
    fn arm(&self) -> Option<Instant> {
        let state = &mut *self.lock();
        state.armed.arm(&mut state.session)
    }

    fn fire(self: Arc<Self>) {
        self.with_session(None, |state| state.session.handle_timeout(now()));
    }
}
