//! The connection core every transport shares: the session behind a lock, the callers waiting
//! for answers, the host's inbox, and the timer. A transport feeds it what arrives and sends
//! what it queues; nothing here touches a socket or a process.

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Instant;

use mcp_protocol::schema::{ProgressParams, ServerNotification, ServerRequest};
use mcp_protocol::{
    ClientConfig, ClientEvent, ClientSession, DecodeError, Decoded, ErrorObject, RawJson,
    RequestId, ServerInfo,
};
use tokio::sync::{Notify, mpsc, oneshot, watch};

use crate::timer;

/// How many undelivered notifications and server requests wait for the host before new ones
/// are dropped (notifications, counted) or refused (requests).
const INCOMING_CAPACITY: usize = 256;
/// How many diagnostics are kept.
const DIAGNOSTICS_KEPT: usize = 64;

/// Something from the server for the host, taken from
/// [`Client::take_incoming`](crate::Client::take_incoming).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
// Moved once, through a channel; boxing the request would buy nothing.
#[allow(clippy::large_enum_variant)]
pub enum Incoming {
    /// A request for a capability the host declared; answer with
    /// [`Client::respond`](crate::Client::respond).
    Request {
        /// The id to answer with.
        id: RequestId,
        /// The request.
        request: ServerRequest,
        /// The tag of the request of ours it belongs to, when the caller tagged that request
        /// ([`Client::request_raw_tagged`](crate::Client::request_raw_tagged)) and the server
        /// said which it belongs to: it came on that request's Streamable HTTP response stream,
        /// or it is one of the inputs that request's `input_required` result asked for.
        related: Option<u64>,
    },
    /// The server withdrew a request; do not answer it.
    Cancelled {
        /// The withdrawn request.
        id: RequestId,
    },
    /// A notification: a log entry, a list change, a resource update.
    Notification(ServerNotification),
    /// A notification that belongs to a request of ours the caller tagged (it came on that
    /// request's response stream): a log entry the server wrote while serving it, say. Only
    /// a tagged request's notifications arrive this way; the rest come as
    /// [`Notification`](Self::Notification).
    RelatedNotification {
        /// The notification.
        notification: ServerNotification,
        /// The tag the caller gave the request.
        related: u64,
    },
    /// Something the server did wrong that did not end the connection.
    Diagnostic(String),
}

/// The rest of sending one request, handed back by a transport whose sending is more than a
/// write: a Streamable HTTP POST, and the stream that brings its answer. The caller waiting for
/// that request's answer drives it in its own task, so a call crosses no task of ours on its
/// way out and back (only the connection's own, hyper's); a request nobody waits on that way
/// (the handshake, a retry the session makes by itself) runs on a task of its own. Dropping it
/// abandons the exchange, as dropping the caller's future cancels the request.
pub struct Sending {
    id: RequestId,
    exchange: Pin<Box<dyn Future<Output = ()> + Send>>,
}

impl Sending {
    /// The exchange that carries the request `id` and delivers its answer to the core.
    pub fn new(id: RequestId, exchange: impl Future<Output = ()> + Send + 'static) -> Self {
        Self {
            id,
            exchange: Box::pin(exchange),
        }
    }
}

impl std::fmt::Debug for Sending {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sending")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

/// What a transport does for the core. Every method is called with the session locked and
/// must not block: a transport hands bytes to its own tasks, or hands back what its caller
/// drives ([`Sending`]).
pub trait Transport: Send + Sync + 'static {
    /// Sends everything the session has queued (`session.poll_transmit()` until `None`), in
    /// order. The core calls this after every change that may queue a message. A request
    /// whose sending must be awaited may be pushed to `sending` instead of started: the core
    /// gives it to the caller waiting for its answer, or to a task of its own.
    fn transmit(&self, core: &Arc<Core>, session: &mut ClientSession, sending: &mut Vec<Sending>);

    /// Called after every [`transmit`](Self::transmit), once the session lock is released:
    /// a transport that writes without waiting makes its system call here, so that the lock
    /// is not held across it (callers and the reader of a busy connection queue on it).
    fn flush(&self) {}

    /// Adds what the transport knows about why the connection ended (an exit status, the
    /// server's last words on stderr) to `what`.
    fn end_reason(&self, what: &str) -> String {
        what.to_owned()
    }

    /// What the server wrote on its error stream recently, if the transport has one.
    fn stderr(&self) -> String {
        String::new()
    }

    /// The session id the server assigned, if the transport has sessions (Streamable HTTP).
    ///
    /// A credential-like value: whoever holds it can act in the session. An implementation
    /// never puts it in an error, a diagnostic, an end reason or a `Debug` output.
    fn session_id(&self) -> Option<String> {
        None
    }

    /// Ends the connection politely once the session is closed (stdio: close stdin and end the
    /// process; HTTP: delete the session). Resolves to how it ended.
    fn close(&self) -> Pin<Box<dyn Future<Output = String> + Send + '_>>;

    /// Ends the connection at once, without waiting and without the polite sequence of
    /// [`close`](Self::close): stdio kills the server's process group (SIGKILL). Called from
    /// `Drop` implementations, so it must not block. The default does nothing: a transport
    /// without a process ends when its tasks and handles are dropped.
    fn kill(&self) {}
}

/// Where a caller waits for its answer.
pub(crate) type Waiter = oneshot::Sender<Result<RawJson, mcp_protocol::Error>>;

/// The locked part of the core.
pub(crate) struct State {
    pub(crate) session: ClientSession,
    pub(crate) waiters: HashMap<RequestId, Waiter>,
    /// Answers taken from `waiters`, handed over once the lock is released: waking a caller
    /// may wake a thread, and the lock is not held across that.
    answered: Vec<(Waiter, Result<RawJson, mcp_protocol::Error>)>,
    /// What the transport handed back to be driven, taken once the lock is released.
    sending: Vec<Sending>,
    pub(crate) progress: HashMap<RequestId, mpsc::UnboundedSender<ProgressParams>>,
    /// The caller's tags of requests in flight, by the id `send_request` gave them.
    pub(crate) tags: HashMap<RequestId, u64>,
    /// While a frame is fed in: the id of the request of ours whose response stream carried
    /// it, as the transport knows it.
    arrived_under: Option<RequestId>,
    ready: Option<oneshot::Sender<Result<ServerInfo, mcp_protocol::Error>>>,
    incoming: mpsc::Sender<Incoming>,
    pub(crate) diagnostics: VecDeque<String>,
    pub(crate) dropped_notifications: u64,
    /// Set once, with the reason, when the session ends.
    closed: watch::Sender<Option<String>>,
    /// The deadline the timer task sleeps until; it is woken only for an earlier one.
    armed: timer::Armed,
}

impl State {
    fn diagnostic(&mut self, text: String) {
        if self.diagnostics.len() == DIAGNOSTICS_KEPT {
            self.diagnostics.pop_front();
        }
        self.diagnostics.push_back(text.clone());
        let _ = self.incoming.try_send(Incoming::Diagnostic(text));
    }

    /// The caller's tag of the request a server message belongs to: an input request's own
    /// (`input`), else the one whose response stream carried the frame.
    fn related(&self, input: Option<&RequestId>) -> Option<u64> {
        let behind = |id: &RequestId| self.session.request_behind(id);
        let by_input = input
            .map(behind)
            .filter(|logical| Some(logical) != input)
            .and_then(|logical| self.tags.get(&logical).copied());
        by_input.or_else(|| {
            self.arrived_under
                .as_ref()
                .and_then(|under| self.tags.get(&behind(under)).copied())
        })
    }

    /// Delivers what the session has to say to whoever waits for it.
    pub(crate) fn dispatch(&mut self) {
        while let Some(event) = self.session.poll_event() {
            match event {
                ClientEvent::Ready(info) => {
                    if let Some(ready) = self.ready.take() {
                        let _ = ready.send(Ok(info));
                    }
                }
                ClientEvent::Response { id, outcome, .. } => {
                    // A call answered with a task keeps its progress channel until the task
                    // ends (the session says how long).
                    if !self.session.keeps_task_progress(&id) {
                        self.progress.remove(&id);
                    }
                    self.tags.remove(&id);
                    if let Some(waiter) = self.waiters.remove(&id) {
                        self.answered.push((waiter, outcome));
                    }
                }
                ClientEvent::Progress { id, params } => {
                    if let Some(tx) = self.progress.get(&id)
                        && tx.send(params).is_err()
                        && !self.waiters.contains_key(&id)
                    {
                        // The caller of a call answered with a task stopped listening.
                        self.progress.remove(&id);
                        self.session.release_task_progress(&id);
                    }
                }
                ClientEvent::Request { id, request } => {
                    let related = self.related(Some(&id));
                    let item = Incoming::Request {
                        id: id.clone(),
                        request,
                        related,
                    };
                    if let Err(e) = self.incoming.try_send(item) {
                        let why = match e {
                            mpsc::error::TrySendError::Full(_) => "the host is busy",
                            mpsc::error::TrySendError::Closed(_) => {
                                "the host does not handle server requests"
                            }
                        };
                        let error =
                            ErrorObject::new(mcp_protocol::code::INTERNAL_ERROR, why.to_owned());
                        let _ = self.session.respond_error(&id, error);
                    }
                }
                ClientEvent::RequestCancelled { id, .. } => {
                    let _ = self.incoming.try_send(Incoming::Cancelled { id });
                }
                ClientEvent::Notification(n) => {
                    let item = match self.related(None) {
                        Some(related) => Incoming::RelatedNotification {
                            notification: n,
                            related,
                        },
                        None => Incoming::Notification(n),
                    };
                    if self.incoming.try_send(item).is_err() {
                        self.dropped_notifications += 1;
                    }
                }
                ClientEvent::Diagnostic(d) => self.diagnostic(d),
                ClientEvent::Closed(error) => {
                    let reason = match &error {
                        mcp_protocol::Error::Closed(reason) => reason.clone(),
                        other => other.to_string(),
                    };
                    self.closed.send_replace(Some(reason));
                    if let Some(ready) = self.ready.take() {
                        let _ = ready.send(Err(error));
                    }
                }
                // Events added to the session later are not lost silently.
                other => self.diagnostic(format!("unhandled session event: {other:?}")),
            }
        }
        // Let go of the channels of tasks that ended (or whose tokens the session dropped).
        if !self.progress.is_empty() {
            let (session, waiters) = (&self.session, &self.waiters);
            self.progress
                .retain(|id, _| waiters.contains_key(id) || session.keeps_task_progress(id));
        }
    }
}

/// The shared core of one connection. Transports hold it (as `Arc<Core>`) to feed it what
/// arrives; [`Client`](crate::Client) handles hold it to make requests.
pub struct Core {
    pub(crate) name: String,
    state: Mutex<State>,
    transport: Box<dyn Transport>,
    wake_timer: Arc<Notify>,
    /// Where the timer task runs once the session has a deadline (`timer`).
    runtime: tokio::runtime::Handle,
    closed: watch::Receiver<Option<String>>,
    /// Set when the transport ended the session through [`end`](Self::end): its reason then
    /// already says what the transport knows, and must not be completed a second time.
    ended_by_transport: std::sync::atomic::AtomicBool,
}

impl std::fmt::Debug for Core {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Core")
            .field("server", &self.name)
            .finish_non_exhaustive()
    }
}

/// The clock: tokio's, so that tests can pause and advance it.
pub(crate) fn now() -> Instant {
    tokio::time::Instant::now().into_std()
}

impl Core {
    /// A core for one server, with the transport that carries its bytes. Also returns the
    /// inbox for [`Client::take_incoming`](crate::Client::take_incoming).
    pub(crate) fn new(
        name: &str,
        session: ClientConfig,
        transport: Box<dyn Transport>,
    ) -> (Arc<Self>, mpsc::Receiver<Incoming>) {
        let (incoming, inbox) = mpsc::channel(INCOMING_CAPACITY);
        let (closed_tx, closed) = watch::channel(None);
        let core = Arc::new(Self {
            name: name.to_owned(),
            state: Mutex::new(State {
                session: ClientSession::new(session),
                waiters: HashMap::new(),
                answered: Vec::new(),
                sending: Vec::new(),
                progress: HashMap::new(),
                tags: HashMap::new(),
                arrived_under: None,
                ready: None,
                incoming,
                diagnostics: VecDeque::new(),
                dropped_notifications: 0,
                closed: closed_tx,
                armed: timer::Armed::default(),
            }),
            transport,
            wake_timer: Arc::new(Notify::new()),
            runtime: tokio::runtime::Handle::current(),
            closed,
            ended_by_transport: std::sync::atomic::AtomicBool::new(false),
        });
        (core, inbox)
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The server's name, for errors.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Applies `f` to the session, then delivers events, sends what was queued, and re-arms
    /// the timer: the one way anything changes the session.
    pub(crate) fn with_session<R>(self: &Arc<Self>, f: impl FnOnce(&mut State) -> R) -> R {
        let (r, sending) = self.with_session_sending(f);
        self.start(sending);
        r
    }

    /// [`with_session`](Self::with_session), handing back what the transport left to be
    /// driven instead of starting it: for a caller that drives its own request's.
    pub(crate) fn with_session_sending<R>(
        self: &Arc<Self>,
        f: impl FnOnce(&mut State) -> R,
    ) -> (R, Vec<Sending>) {
        let (r, answered, sending) = {
            let mut guard = self.lock();
            let state = &mut *guard;
            let r = f(state);
            state.dispatch();
            self.transport
                .transmit(self, &mut state.session, &mut state.sending);
            if state
                .armed
                .wake_if_needed(&mut state.session, &self.wake_timer)
            {
                timer::start(Arc::downgrade(self), &self.wake_timer, &self.runtime);
            }
            (
                r,
                std::mem::take(&mut state.answered),
                std::mem::take(&mut state.sending),
            )
        };
        self.transport.flush();
        for (waiter, outcome) in answered {
            let _ = waiter.send(outcome);
        }
        (r, sending)
    }

    /// Runs exchanges no caller drives, each on a task of its own. Without a runtime to run
    /// them on (a handle used after its runtime ended), their requests fail now rather than at
    /// their timeouts.
    pub(crate) fn start(self: &Arc<Self>, sending: Vec<Sending>) {
        for Sending { id, exchange } in sending {
            match tokio::runtime::Handle::try_current() {
                Ok(runtime) => drop(runtime.spawn(exchange)),
                Err(_) => {
                    self.fail_request(&id, "there is no tokio runtime to send it on");
                }
            }
        }
    }

    /// Splits off the exchange of request `id`, starting the others.
    pub(crate) fn own_sending(
        self: &Arc<Self>,
        id: &RequestId,
        mut sending: Vec<Sending>,
    ) -> Option<Pin<Box<dyn Future<Output = ()> + Send>>> {
        let own = sending
            .iter()
            .position(|s| &s.id == id)
            .map(|i| sending.remove(i).exchange);
        self.start(sending);
        own
    }

    /// Starts the handshake; the answer arrives through `ready`.
    pub(crate) fn initialize(
        self: &Arc<Self>,
        ready: oneshot::Sender<Result<ServerInfo, mcp_protocol::Error>>,
    ) -> Result<(), mcp_protocol::Error> {
        self.with_session(|state| {
            state.ready = Some(ready);
            state.session.initialize(now()).map(|_| ())
        })
    }

    /// A frame arrived: decodes it and feeds the session.
    pub fn receive_frame(self: &Arc<Self>, bytes: &[u8]) {
        match mcp_protocol::decode(bytes) {
            Ok(decoded) => self.receive(decoded),
            Err(error) => self.receive_invalid(error),
        }
    }

    /// A decoded frame arrived.
    pub fn receive(self: &Arc<Self>, decoded: Decoded) {
        self.with_session(|state| state.session.handle_decoded(now(), decoded));
    }

    /// A decoded frame arrived on the response stream of our request `under` (Streamable
    /// HTTP): what the server sends there belongs to that request, and is delivered with the
    /// caller's tag of it.
    pub fn receive_under(self: &Arc<Self>, decoded: Decoded, under: &RequestId) {
        self.with_session(|state| {
            state.arrived_under = Some(under.clone());
            state.session.handle_decoded(now(), decoded);
            state.dispatch();
            state.arrived_under = None;
        });
    }

    /// A frame arrived that did not decode.
    pub fn receive_invalid(self: &Arc<Self>, error: DecodeError) {
        self.with_session(|state| state.session.handle_invalid(now(), error));
    }

    /// The answer to a request cannot be delivered (too large, lost with its stream): the
    /// request fails with `detail`.
    pub fn fail_request(self: &Arc<Self>, id: &RequestId, detail: &str) -> bool {
        self.with_session(|state| state.session.fail(id, detail))
    }

    /// The server refused a request without a JSON-RPC answer (an HTTP status whose body is
    /// no JSON-RPC error): to the `server/discover` probe that means a handshake-era server,
    /// so the session falls back to `initialize`; any other request fails with `detail`.
    pub fn reject_request(self: &Arc<Self>, id: &RequestId, detail: &str) -> bool {
        self.with_session(|state| state.session.reject(now(), id, detail))
    }

    /// Records something the host may want to see, that did not end the connection.
    pub fn diagnostic(self: &Arc<Self>, text: String) {
        self.lock().diagnostic(text);
    }

    /// The connection ended (`what` says how); everything in flight fails with the reason,
    /// completed by what the transport knows.
    pub fn end(self: &Arc<Self>, what: &str) {
        self.ended_by_transport
            .store(true, std::sync::atomic::Ordering::SeqCst);
        let reason = self.transport.end_reason(what);
        self.with_session(|state| state.session.close(&reason));
    }

    /// Whether a request still waits for its answer: a transport about to resume the stream
    /// that would carry it checks first (the caller may have cancelled, or timed out).
    pub fn is_awaiting(&self, id: &RequestId) -> bool {
        self.lock().session.is_in_flight(id)
    }

    /// Whether the session has ended.
    pub fn is_closed(&self) -> bool {
        self.lock().session.is_closed()
    }

    /// Resolves when the session ends, to why it ended: what a host waits on to reconnect.
    pub async fn closed(&self) -> String {
        let mut rx = self.closed.clone();
        let reason = match rx.wait_for(Option::is_some).await {
            Ok(reason) => reason.clone(),
            // The sender lives as long as the core, so this cannot happen while `self` does.
            Err(_) => None,
        };
        reason.unwrap_or_else(|| "the connection ended".to_owned())
    }

    /// The negotiated protocol version, once the handshake is done.
    pub fn protocol_version(&self) -> Option<mcp_protocol::ProtocolVersion> {
        self.lock()
            .session
            .server_info()
            .map(|i| i.protocol_version.clone())
    }

    pub(crate) fn transport(&self) -> &dyn Transport {
        self.transport.as_ref()
    }

    pub(crate) fn end_reason(&self, what: &str) -> String {
        self.transport.end_reason(what)
    }

    /// Completes the reason of a session the protocol closed (a timed-out `initialize`) with
    /// what the transport knows; a reason the transport already gave is left as it is.
    pub(crate) fn complete_reason(&self, reason: String) -> String {
        if self
            .ended_by_transport
            .load(std::sync::atomic::Ordering::SeqCst)
        {
            reason
        } else {
            self.transport.end_reason(&reason)
        }
    }
}

impl timer::Deadlines for Core {
    fn arm(&self) -> Option<Instant> {
        let state = &mut *self.lock();
        state.armed.arm(&mut state.session)
    }

    fn fire(self: Arc<Self>) {
        self.with_session(|state| state.session.handle_timeout(now()));
    }
}
