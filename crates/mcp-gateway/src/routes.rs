//! The way back: which client in front of the gateway an upstream's own request (sampling,
//! elicitation, roots) goes to, and the notifications every client hears.
//!
//! An upstream's request goes to the client whose call it belongs to, and only if that client
//! declared the capability; otherwise the upstream gets an error saying why (SPEC.md §10).
//! Which call it belongs to, the upstream says when it can: each relayed call is tagged with
//! its in-flight record's id, and the host gives the tag back with a request that came on that
//! call's Streamable HTTP response stream (or that its `input_required` result asked). When
//! nothing says (a stdio upstream, the standalone stream), it goes to the one client whose
//! calls wait on that upstream; with calls of several clients waiting it is refused, since
//! guessing would show one client another's request.

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mcp_host::ServerRequestHandler;
use mcp_protocol::schema::{
    ClientCapabilities, ElicitationCapability, RootsCapability, SamplingCapability,
    ServerNotification, ServerRequest,
};
use mcp_protocol::{ClientInfo, Era, ErrorObject, RawJson, RequestOptions};
use mcp_session::{Peer, RequestContext, SessionKey, Sessions};
use tokio::sync::{mpsc, oneshot};

use crate::reply;
use crate::suspend::{self, Ask};
use crate::sync::lock;

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
    /// For a stateless client's call run suspendable (`suspend`): where the upstream's
    /// requests go, to come back to the client as `input_required`.
    asks: Option<mpsc::Sender<Ask>>,
    /// While that call is suspended (its client answered `input_required`, its retry not yet
    /// come), what its upstream writes, for the retry's stream; `None` otherwise.
    held: Option<Vec<(String, Option<RawJson>)>>,
}

/// How many notifications a suspended call keeps for its retry; past it they are dropped.
const MAX_HELD: usize = 64;

/// The clients in front, and which of their requests wait on which upstream.
#[derive(Debug, Default)]
pub(crate) struct Routes {
    pub(crate) sessions: Mutex<HashMap<SessionKey, Downstream>>,
    inflight: Mutex<HashMap<String, Vec<InFlight>>>,
    /// Calls that ended lately, by tag: the client's peer for messages tied to no request, and
    /// when. What the upstream wrote during a call travels apart from its answer through the
    /// host, and may come just after it; it still belongs to that client.
    ended: Mutex<Ended<Peer>>,
    next: AtomicU64,
    /// The session registry of each server in front (one gateway may be served over stdio
    /// and HTTP at once), known from their first request: notifications for all clients go
    /// through them, so a stateless client's `subscriptions/listen` stream hears them too,
    /// filtered as it asked.
    registries: Mutex<Vec<Sessions>>,
}

impl Routes {
    /// Remembers the session registry of a server in front.
    pub(crate) fn join(&self, sessions: &Sessions) {
        let mut registries = lock(&self.registries);
        if !registries.iter().any(|r| r.same(sessions)) {
            registries.push(sessions.clone());
        }
    }

    /// Sends a resource update to the stateless clients whose `subscriptions/listen` stream
    /// asks for its URI (handshake clients that subscribed are told on their own peers).
    pub(crate) fn notify_listening(&self, method: &str, params: Option<RawJson>) {
        let registries = lock(&self.registries).clone();
        for registry in registries {
            registry.notify_listening(method, params.clone());
        }
    }

    /// Remembers the client of `context` (on its first request).
    pub(crate) fn register(&self, context: &RequestContext) {
        self.join(&context.sessions);
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
    pub(crate) fn log_level(&self, session: SessionKey) -> Option<serde_json::Value> {
        lock(&self.sessions)
            .get(&session)
            .and_then(|d| d.log_level.clone())
    }

    pub(crate) fn closed(&self, session: SessionKey) {
        lock(&self.sessions).remove(&session);
        // A call with an ask channel (a task of the gateway's, a suspended call) outlives the
        // request that started it: its record goes when the call ends (`Tracked`).
        for calls in lock(&self.inflight).values_mut() {
            calls.retain(|c| c.session != session || c.asks.is_some());
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
                asks: suspend::current_asks(),
                held: None,
            });
        Tracked {
            routes: Arc::clone(self),
            server: server.to_owned(),
            id,
        }
    }

    /// A call (the one whose upstream requests go to `asks`) is being suspended: its client is
    /// about to be answered `input_required`, which ends the call's stream, so what its
    /// upstream writes from now on is held for the retry's stream. Told before the answer is
    /// written, so that nothing written meanwhile falls between the two streams.
    pub(crate) fn suspended(&self, asks: &mpsc::Sender<Ask>) {
        for call in lock(&self.inflight).values_mut().flatten() {
            if call.asks.as_ref().is_some_and(|a| a.same_channel(asks)) && call.held.is_none() {
                call.held = Some(Vec::new());
            }
        }
    }

    /// A suspended call (the one whose upstream requests go to `asks`) was resumed by its
    /// client's retry: what its upstream said meanwhile, and says next, goes on the retry's
    /// stream (`peer`).
    pub(crate) fn resumed(&self, asks: &mpsc::Sender<Ask>, peer: &Peer) {
        for call in lock(&self.inflight).values_mut().flatten() {
            if call.asks.as_ref().is_some_and(|a| a.same_channel(asks)) {
                call.peer = peer.clone();
                for (method, params) in call.held.take().unwrap_or_default() {
                    let _ = call.peer.notify(&method, params);
                }
            }
        }
    }

    /// The call tagged `tag` (see [`Tracked::tag`]) while it waits on its upstream.
    fn call(&self, tag: u64) -> Option<InFlight> {
        lock(&self.inflight)
            .values()
            .flatten()
            .find(|c| c.id == tag)
            .cloned()
    }

    /// Sends what an upstream wrote during the call tagged `tag` (see [`Tracked::tag`]) to
    /// that call's client: on the call's own stream while it waits (kept for the retry's
    /// stream while the call is suspended), to that client's unrelated peer for a moment after
    /// it ended ([`LATE_ENTRY`]). `false` once it is long over: the caller drops it, for it is
    /// nobody else's.
    pub(crate) fn notify_call(&self, tag: u64, method: &str, params: Option<RawJson>) -> bool {
        {
            let mut inflight = lock(&self.inflight);
            if let Some(call) = inflight.values_mut().flatten().find(|c| c.id == tag) {
                match &mut call.held {
                    Some(held) if held.len() < MAX_HELD => held.push((method.to_owned(), params)),
                    Some(_) => {
                        tracing::debug!("{method} dropped: {MAX_HELD} already wait for a retry")
                    }
                    None => {
                        let _ = call.peer.notify(method, params);
                    }
                }
                return true;
            }
        }
        let late = lock(&self.ended).get(tag, Instant::now()).cloned();
        match late {
            Some(peer) => {
                let _ = peer.notify(method, params);
                true
            }
            None => false,
        }
    }

    /// Where an upstream's request that the upstream tied to the call tagged `tag` goes: that
    /// call's client, on the call's stream.
    fn target_of_call(&self, tag: u64) -> Result<Target, &'static str> {
        match self.call(tag) {
            Some(call) => Target::of(call),
            None => Err("the call it belongs to has ended"),
        }
    }

    /// Where an upstream's request goes: the client whose requests wait on that upstream, when
    /// they are all one client's; else the only client (unprompted requests, such as
    /// `roots/list` after start-up). When requests of several clients wait on the upstream,
    /// nothing says which of them the request belongs to, and it is refused rather than
    /// guessed: one client must never see, or answer, what another's call asked.
    fn target(&self, server: &str) -> Result<Target, &'static str> {
        match self.waiting(server) {
            Waiting::Ambiguous => {
                return Err(
                    "calls of more than one client wait on this server, and nothing says which of them it belongs to",
                );
            }
            Waiting::One(call) => return Target::of(call),
            Waiting::Nobody => {}
        }
        let sessions = lock(&self.sessions);
        if sessions.len() == 1 {
            return sessions
                .values()
                .next()
                .map(|d| Target::Peer(d.peer.clone(), d.client.clone()))
                .ok_or("no client of the gateway is waiting on it");
        }
        Err("no client of the gateway is waiting on it")
    }

    /// Who waits on `server`: its latest request, when every request waiting there is one
    /// client's.
    fn waiting(&self, server: &str) -> Waiting {
        let inflight = lock(&self.inflight);
        let Some(calls) = inflight.get(server).filter(|c| !c.is_empty()) else {
            return Waiting::Nobody;
        };
        let Some(latest) = calls.last() else {
            return Waiting::Nobody;
        };
        if calls.iter().any(|c| c.session != latest.session) {
            return Waiting::Ambiguous;
        }
        Waiting::One(latest.clone())
    }

    /// Where what an upstream says about a call (a log entry) goes: `Some(peer)` of the one
    /// client whose requests wait on `server`, so that it travels on the request's stream;
    /// `Some(None)` when nobody waits; `None` when several clients wait and it cannot be known
    /// whose it is (the caller drops it rather than guess).
    pub(crate) fn waiting_on(&self, server: &str) -> Option<Option<Peer>> {
        match self.waiting(server) {
            Waiting::One(call) => Some(Some(call.peer)),
            Waiting::Nobody => Some(None),
            Waiting::Ambiguous => None,
        }
    }
}

/// Why a stateless client is not sent an upstream's request.
const STATELESS: &str = "the client waiting on it speaks the stateless era, where a request cannot reach it mid-call (the upstream would have to answer input_required)";

/// How long after a call a log entry its upstream tied to it is still passed on.
const LATE_ENTRY: Duration = Duration::from_secs(1);

/// What is kept of the calls that ended within [`LATE_ENTRY`], by tag. A call that ends
/// forgets those that ended before the window from the oldest on, stopping at the first still
/// in it, so the work is what expired: a sweep of every entry on each call (as a `retain`
/// over the map did) cost as many clock reads per call as calls ended in the last second,
/// which was most of the gateway's CPU at 16 calls in flight.
#[derive(Debug)]
struct Ended<T> {
    by_tag: HashMap<u64, (T, Instant)>,
    /// Tags in the order they ended; each entry's time is never earlier than the one before,
    /// since both are taken under the lock that holds this.
    order: VecDeque<u64>,
}

impl<T> Default for Ended<T> {
    fn default() -> Self {
        Self {
            by_tag: HashMap::new(),
            order: VecDeque::new(),
        }
    }
}

impl<T> Ended<T> {
    /// Drops what ended [`LATE_ENTRY`] or more before `now`.
    fn forget_before(&mut self, now: Instant) {
        while let Some(tag) = self.order.front() {
            match self.by_tag.get(tag) {
                Some((_, at)) if now.duration_since(*at) < LATE_ENTRY => break,
                _ => {
                    self.by_tag.remove(tag);
                    self.order.pop_front();
                }
            }
        }
    }

    /// Keeps `value` for the call `tag`, which ended at `at` (not earlier than any kept).
    fn insert(&mut self, tag: u64, value: T, at: Instant) {
        if self.by_tag.insert(tag, (value, at)).is_none() {
            self.order.push_back(tag);
        }
    }

    /// What is kept for `tag`, if it ended within [`LATE_ENTRY`] of `now`.
    fn get(&self, tag: u64, now: Instant) -> Option<&T> {
        self.by_tag
            .get(&tag)
            .filter(|(_, at)| now.duration_since(*at) < LATE_ENTRY)
            .map(|(value, _)| value)
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.by_tag.len()
    }
}

/// Where an upstream's request goes.
enum Target {
    /// A handshake client: sent on this peer.
    Peer(Peer, Option<Arc<ClientInfo>>),
    /// A stateless client's suspendable call, or a task of the gateway's: it comes back to the
    /// client as `input_required` (or as the task's client sees it).
    Suspend(mpsc::Sender<Ask>, Option<Arc<ClientInfo>>),
}

impl Target {
    fn of(call: InFlight) -> Result<Self, &'static str> {
        // A call that has an ask channel (a stateless client's suspendable call, or a task
        // of the gateway's for a client of either era) is asked through it.
        match (call.stateless, call.asks) {
            (_, Some(asks)) => Ok(Self::Suspend(asks, call.client)),
            (false, None) => Ok(Self::Peer(call.peer, call.client)),
            (true, None) => Err(STATELESS),
        }
    }

    fn client(&self) -> Option<&Arc<ClientInfo>> {
        match self {
            Self::Peer(_, client) | Self::Suspend(_, client) => client.as_ref(),
        }
    }
}

/// Who waits on one upstream.
enum Waiting {
    Nobody,
    /// Requests of one client only: its latest.
    One(InFlight),
    /// Requests of more than one client.
    Ambiguous,
}

/// Removes its in-flight record when dropped (the call ended or was cancelled).
#[derive(Debug)]
pub(crate) struct Tracked {
    routes: Arc<Routes>,
    server: String,
    id: u64,
}

impl Tracked {
    /// The tag the upstream call carries ([`mcp_host::CallOptions::related`]), by which the
    /// host says which call an upstream's request or log entry belongs to.
    pub(crate) fn tag(&self) -> u64 {
        self.id
    }
}

impl Drop for Tracked {
    fn drop(&mut self) {
        let ended = lock(&self.routes.inflight)
            .get_mut(&self.server)
            .and_then(|calls| {
                let at = calls.iter().position(|c| c.id == self.id)?;
                Some(calls.remove(at))
            });
        let mut recent = lock(&self.routes.ended);
        let now = Instant::now();
        recent.forget_before(now);
        if let Some(call) = ended {
            recent.insert(self.id, call.peer.unrelated(), now);
        }
    }
}

/// Answers the upstream servers' requests by passing them to a client in front that declared
/// the capability. The gateway declares sampling, both elicitation modes and roots upstream,
/// since which clients will come is not known when the upstreams connect.
pub(crate) struct Forwarder {
    pub(crate) routes: Arc<Routes>,
    /// Whether an upstream's log entries written during a call go to that call's client
    /// (passthrough mode, which relays logging); the other modes do not relay them.
    pub(crate) relay_logs: bool,
}

/// How long a forwarded request may wait: a person may be answering it.
const FORWARD_TIMEOUT: Duration = Duration::from_secs(600);

impl ServerRequestHandler for Forwarder {
    /// A log entry or an elicitation's completion written during a relayed call goes to that
    /// call's client, at once and in order: were it left to the event stream, the request
    /// that follows it could end the call's stream first (a 2026-07-28 client's call ends
    /// with `input_required`), and the entry would be lost.
    fn take_related(&self, server: &str, notification: &ServerNotification, related: u64) -> bool {
        if !self.relay_logs {
            return false;
        }
        let (ServerNotification::LoggingMessage(_) | ServerNotification::ElicitationComplete(_)) =
            notification
        else {
            return false;
        };
        let method = notification.method();
        let params = notification.encode_params().ok().flatten();
        if !self.routes.notify_call(related, method, params) {
            tracing::debug!(server = %server, "{method} dropped: the call it belongs to is over");
        }
        true
    }

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
        self.handle_related(server, request, None)
    }

    fn handle_related<'a>(
        &'a self,
        server: &'a str,
        request: ServerRequest,
        related: Option<u64>,
    ) -> Pin<Box<dyn Future<Output = Result<RawJson, ErrorObject>> + Send + 'a>> {
        Box::pin(async move {
            let method = request.method().to_owned();
            let target = match related {
                Some(tag) => self.routes.target_of_call(tag),
                None => self.routes.target(server),
            };
            let target = target.map_err(|why| {
                reply::method_not_found(format!(
                    "{method} from server `{server}` cannot be passed on: {why}"
                ))
            })?;
            refuse_undeclared(&request, target.client().map(|c| &c.capabilities))?;
            let peer = match target {
                Target::Peer(peer, _) => peer,
                Target::Suspend(asks, _) => {
                    let (answer, answered) = oneshot::channel();
                    let gone = || {
                        reply::internal(format!(
                            "{method}: the call it belongs to ended before its client answered"
                        ))
                    };
                    asks.send(Ask { request, answer })
                        .await
                        .map_err(|_| gone())?;
                    return answered.await.map_err(|_| gone())?;
                }
            };
            let params = request
                .encode_params()
                .map_err(|e| reply::invalid_params(e.to_string()))?;
            peer.request_raw(
                &method,
                params,
                RequestOptions::DEFAULT.timeout(FORWARD_TIMEOUT),
            )
            .await
            .map_err(|e| match e {
                mcp_protocol::Error::Rpc { error, .. } => error,
                other => reply::internal(format!(
                    "{method}: the gateway's client did not answer: {other}"
                )),
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
        Err(reply::method_not_found(format!(
            "the client in front of the gateway does not support {what}"
        )))
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
                return Err(reply::invalid_params(format!(
                    "the client in front of the gateway does not support elicitation mode `{}`",
                    params.mode.as_deref().unwrap_or("form")
                )));
            }
        }
        _ => {}
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ended_calls_are_forgotten_once_late_oldest_first() {
        let t0 = Instant::now();
        let mut ended: Ended<u64> = Ended::default();
        for tag in 0..1000u64 {
            ended.insert(tag, tag, t0 + Duration::from_millis(tag));
        }
        assert_eq!(ended.len(), 1000);
        // 1.5 s on, the calls that ended in the first half second are past the window.
        let now = t0 + Duration::from_millis(1500);
        assert_eq!(ended.get(501, now), Some(&501));
        assert_eq!(
            ended.get(500, now),
            None,
            "past the window even before it is swept"
        );
        ended.forget_before(now);
        assert_eq!(ended.len(), 499);
        assert_eq!(ended.order.len(), 499);
        assert_eq!(ended.order.front(), Some(&501));
        assert_eq!(ended.get(501, now), Some(&501));
        assert_eq!(ended.get(999, now), Some(&999));
        // Another call ending later keeps its place at the back.
        ended.insert(1000, 1000, now);
        ended.forget_before(t0 + Duration::from_millis(2100));
        assert_eq!(ended.order.front(), Some(&1000));
        assert_eq!(ended.len(), 1);
    }

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
}
