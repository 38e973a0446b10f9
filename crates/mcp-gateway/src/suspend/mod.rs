//! The fourth pair of eras (issue 22 §5): a handshake-era upstream asks its client something
//! (sampling, elicitation, roots) in the middle of a call that a 2026-07-28 client made. That
//! client cannot be sent a request mid-call; what it understands is a multi round-trip result
//! (`input_required`, SPEC-2026.md row 12), after which it calls again with the answers.
//!
//! So the upstream call is suspended: it keeps running in a task of its own, its request
//! waits, and the client's call is answered `input_required` with the upstream's request
//! under a key and a `requestState` naming the suspension. The client's retry carries that
//! state and the answers: the waiting upstream request is answered, and the call is awaited
//! again (to its result, or to the next question).
//!
//! A call its client wants as a task (a 2026-07-28 client that declared the tasks extension,
//! calling a tool the upstream may run as its task) runs the same way until the upstream
//! answers with a task: the host says so mid-call
//! ([`CallOptions::task_started`](mcp_host::CallOptions::task_started)), and the call, still
//! running, becomes a task of the gateway's (`tasks.rs`) that the client is answered with. So
//! the client sees the upstream's rounds as they came (its `input_required` first, SEP-2663's
//! composition), and a task only once the upstream made one.
//!
//! A client that never retries must not hold anything for long: at most
//! [`MAX_SUSPENDED`] calls wait at once (past that the upstream's request is refused, saying
//! why), and each waits at most [`SUSPEND_FOR`], after which the upstream's request is
//! answered with an error saying the client did not answer, and the call goes on without it.
//!
//! A suspension is bound to its caller (the name every replica gives it,
//! `RequestContext::session_name`): a retry by another caller finds nothing. With `cluster`
//! and a `store` the `requestState` names the replica holding the suspension and is sealed
//! with the session key ([`Elsewhere::state`]), so that a state no replica made is refused
//! where it arrives, at no cost to Redis or the replica it names; a retry that reaches
//! another replica is relayed to that one ([`Elsewhere`], `cluster/resume/`), which resumes it
//! here ([`Suspensions::resume_relayed`]).

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::{Duration, Instant};

use mcp_host::{CallError, Relayed, TaskRecord};
use mcp_protocol::schema::ServerRequest;
use mcp_protocol::{ErrorObject, JsonObject, RawJson};
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

use crate::reply;
use crate::sync::lock;

/// How many calls may wait for their clients' answers at once.
pub(crate) const MAX_SUSPENDED: usize = 256;

/// How long a suspended call waits for its client's retry.
pub(crate) const SUSPEND_FOR: Duration = Duration::from_secs(300);

/// What the gateway's own `requestState` values start with: a retry carrying another one is
/// the upstream's own multi round-trip, passed on as it came.
pub(crate) const STATE_PREFIX: &str = "mcp-gateway/suspended/";

/// An upstream's request for the client of a suspended call, and where its answer goes.
#[derive(Debug)]
pub(crate) struct Ask {
    pub(crate) request: ServerRequest,
    pub(crate) answer: oneshot::Sender<Result<RawJson, ErrorObject>>,
}

tokio::task_local! {
    /// Where the upstream's requests go while the call run in this task waits on it; set
    /// around the call, read by `Routes::track`.
    static ASKS: mpsc::Sender<Ask>;
}

tokio::task_local! {
    /// Set around an upstream call that is, or may become, a gateway task's work (`tasks.rs`),
    /// read by `Shared::relay_call`: whom to tell when the upstream made its task, if anyone.
    static IN_TASK: Mutex<Option<oneshot::Sender<TaskRecord>>>;
}

/// Runs `call` as the work of a gateway task: its upstream call runs as the upstream's task
/// where the tool allows one, so that the upstream's status and questions reach the client's
/// task instead of being lost to a plain call that cannot ask.
pub(crate) fn in_task<F: Future>(call: F) -> impl Future<Output = F::Output> {
    IN_TASK.scope(Mutex::new(None), call)
}

/// Runs `call` as one its client wants as a task: like [`in_task`], and `started` is told
/// when the upstream made its task, which is when the gateway's begins ([`Running`]).
pub(crate) fn until_task<F: Future>(
    started: oneshot::Sender<TaskRecord>,
    call: F,
) -> impl Future<Output = F::Output> {
    IN_TASK.scope(Mutex::new(Some(started)), call)
}

/// For the call running in this task: `None` when it is a plain call; else it runs as the
/// upstream's task where the tool allows one, and whom to tell when it does ([`until_task`]),
/// given once.
pub(crate) fn task_wanted() -> Option<Option<oneshot::Sender<TaskRecord>>> {
    IN_TASK.try_with(|started| lock(started).take()).ok()
}

/// The ask channel of the suspendable call running in this task, if it is one.
pub(crate) fn current_asks() -> Option<mpsc::Sender<Ask>> {
    ASKS.try_with(Clone::clone).ok()
}

/// Runs `call` with the upstream's requests for it sent to `asks`, whatever era its client
/// speaks: a task of the gateway's (`tasks.rs`) answers them through the task.
pub(crate) fn asking<F: Future>(
    asks: mpsc::Sender<Ask>,
    call: F,
) -> impl Future<Output = F::Output> {
    ASKS.scope(asks, call)
}

/// The relayed call, running apart from the client's request so that it outlives it.
type Call = JoinHandle<Result<Relayed, CallError>>;

/// [`Suspensions::run`]'s `track`, owned.
pub(crate) type Track = Arc<dyn Fn(&mpsc::Sender<Ask>, Turn) + Send + Sync>;

/// [`Suspensions::run`]'s `adopt`, owned.
pub(crate) type AdoptOwned = Arc<dyn Fn(Running) -> Result<RawJson, ErrorObject> + Send + Sync>;

/// Whose a call is, and what resumes it for a retry relayed from another replica: made with
/// the call's first request, kept while it waits.
pub(crate) struct Bound {
    /// The name every replica gives the caller (`RequestContext::session_name`: a digest of
    /// the authenticated subject; `None` where nobody is authenticated): a retry by another
    /// caller finds nothing, as if the state were unknown.
    pub(crate) caller: Option<Arc<str>>,
    /// `track` for a relayed retry, which has no stream here: the call's first request's.
    pub(crate) track: Track,
    /// `adopt` for a relayed retry, with the call's first request's context (its caller's).
    pub(crate) adopt: AdoptOwned,
}

/// Where a retry naming a suspension held by another replica goes (`cluster/resume/`): it
/// comes back with the call's outcome there, as [`Suspensions::run`] would have given it.
pub(crate) trait Elsewhere: Send + Sync {
    /// The `requestState` of the suspension `body` (`<n>-<secret>`) held at this replica:
    /// it names this replica ([`holder_of`]) and `resume` tells it from one no replica made;
    /// `None` when it cannot be made (no randomness).
    fn state(&self, body: &str) -> Option<String>;

    /// Resumes `state`, held by replica `holder`, with the client's `responses`, for `caller`.
    fn resume<'a>(
        &'a self,
        holder: &'a str,
        state: &'a str,
        responses: JsonObject,
        caller: Option<&'a str>,
    ) -> Pin<Box<dyn Future<Output = Result<Outcome, ErrorObject>> + Send + 'a>>;
}

/// What became of a retry relayed here ([`Suspensions::resume_relayed`]).
#[derive(Debug)]
pub(crate) enum RelayedRetry {
    /// It resumed the call: its outcome.
    Resumed(Result<Outcome, ErrorObject>),
    /// The same retry (same state, same caller) was relayed before and resumed the call;
    /// `written`: its outcome was written already.
    Taken { written: bool },
    /// No call of this caller waits under the state.
    Unknown,
}

/// How long a relayed retry is remembered after its outcome was written, so that the same
/// retry relayed again is answered that outcome (`cluster/resume/` keeps it as long).
pub(crate) const RESUMED_FOR: Duration = Duration::from_secs(60);

/// How many states resumed by relayed retries are remembered once their outcomes were
/// written: past it, the oldest of those are forgotten first (the same retry relayed again
/// then finds the outcome in the store, which the holder never replaces). Those still
/// running are all remembered; each is a call in flight.
const MAX_TAKEN: usize = 4 * MAX_SUSPENDED;

/// Forgets the states of `taken` whose outcome was written, oldest first, until at most
/// `room` are left (or none written is).
fn forget_oldest_written(taken: &mut HashMap<String, Taken>, room: usize) {
    if taken.len() <= room {
        return;
    }
    let mut written: Vec<(Instant, String)> = taken
        .iter()
        .filter_map(|(state, t)| Some((t.written?, state.clone())))
        .collect();
    written.sort_unstable();
    for (_, state) in written.into_iter().take(taken.len() - room) {
        taken.remove(&state);
    }
}

/// A state resumed by a relayed retry: its caller, and when its outcome was written.
struct Taken {
    caller: Option<Arc<str>>,
    written: Option<Instant>,
}

/// A call whose client was answered `input_required`, waiting for its retry.
struct Suspended {
    call: Call,
    /// The sending half, by which the call's in-flight record is found again on a retry.
    tx: mpsc::Sender<Ask>,
    asks: mpsc::Receiver<Ask>,
    /// The upstream's requests the client was asked, by key.
    pending: Vec<(String, oneshot::Sender<Result<RawJson, ErrorObject>>)>,
    /// For a call its client wants as a task ([`until_task`]): told when the upstream made
    /// its task; `None` for another call, or once the call said it will make none.
    started: Option<oneshot::Receiver<TaskRecord>>,
    /// Whose it is, and what resumes it for a relayed retry.
    bound: Bound,
}

/// A call whose upstream made its task, still running: what the gateway's task that takes
/// it over needs (`tasks::adopt`).
#[derive(Debug)]
pub(crate) struct Running {
    /// The call; dropping it does not stop it (the taker aborts it when its task ends early).
    pub(crate) call: Call,
    /// Where the upstream's requests for the call's client arrive from now on.
    pub(crate) asks: mpsc::Receiver<Ask>,
}

/// What makes the gateway's task of a call whose upstream made its task, and answers with the
/// result announcing it.
pub(crate) type Adopt<'a> = &'a (dyn Fn(Running) -> Result<RawJson, ErrorObject> + Sync);

/// The calls waiting for their clients' retries.
pub(crate) struct Suspensions {
    waiting: Mutex<HashMap<String, Suspended>>,
    next: AtomicU64,
    /// How long each waits: [`SUSPEND_FOR`] but in tests.
    ttl: Duration,
    /// Where a retry naming another replica is relayed, with `cluster` and `store`.
    elsewhere: OnceLock<Arc<dyn Elsewhere>>,
    /// The states resumed by relayed retries, by state (lock after `waiting`, never before).
    taken: Mutex<HashMap<String, Taken>>,
}

impl Default for Suspensions {
    fn default() -> Self {
        Self {
            waiting: Mutex::new(HashMap::new()),
            next: AtomicU64::new(0),
            ttl: SUSPEND_FOR,
            elsewhere: OnceLock::new(),
            taken: Mutex::new(HashMap::new()),
        }
    }
}

/// The replica a gateway `requestState` names (`<replica>.<sealed>` after the prefix), if
/// it names one: hex digits only, as replicas are named, since it becomes part of a channel's
/// name.
pub(crate) fn holder_of(state: &str) -> Option<&str> {
    let (replica, _) = state.strip_prefix(STATE_PREFIX)?.split_once('.')?;
    let named = !replica.is_empty()
        && replica.len() <= 32
        && replica.bytes().all(|b| b.is_ascii_hexdigit());
    named.then_some(replica)
}

/// The call in `waiting` under `state`, taken out when it is `caller`'s; another's stays.
fn take_from(
    waiting: &mut HashMap<String, Suspended>,
    state: &str,
    caller: Option<&str>,
) -> Option<Suspended> {
    let mine = waiting
        .get(state)
        .is_some_and(|s| s.bound.caller.as_deref() == caller);
    if mine { waiting.remove(state) } else { None }
}

/// The answer to a retry whose state no call of its caller waits under.
fn no_call() -> ErrorObject {
    reply::invalid_params(
        "requestState: no call of this gateway waits under it (it ended, or expired)".to_owned(),
    )
}

/// Gives each of the suspension's pending upstream requests the client's answer to it.
fn answer_pending(suspended: &mut Suspended, responses: &JsonObject) {
    for (key, answer) in suspended.pending.drain(..) {
        let outcome = match responses.get(&key) {
            Some(result) => RawJson::encode(result).map_err(|e| reply::internal(e.to_string())),
            None => Err(reply::invalid_params(format!(
                "the client in front of the gateway retried without inputResponses.{key}"
            ))),
        };
        let _ = answer.send(outcome);
    }
}

impl std::fmt::Debug for Suspensions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Suspensions")
            .field("waiting", &lock(&self.waiting).len())
            .finish_non_exhaustive()
    }
}

/// Which turn a suspendable call takes, for [`Suspensions::run`]'s `track`.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Turn {
    /// Its client is about to be answered `input_required`.
    Suspended,
    /// Its client's retry resumed it.
    Resumed,
}

/// How a suspendable call came back to the client's request.
#[derive(Debug)]
pub(crate) enum Outcome {
    /// The call ended.
    Done(Result<Relayed, CallError>),
    /// The upstream asked: the client's answer is this `input_required` result.
    InputRequired(RawJson),
    /// The call runs as a task of the gateway's (`tasks.rs`): the client's answer is this
    /// result announcing it.
    Task(RawJson),
}

/// A `requestState` and `inputResponses` taken out of a retry's parameters when the state is
/// the gateway's own; otherwise the parameters are left as they are.
pub(crate) fn take_retry(extra: &mut JsonObject) -> Option<(String, JsonObject)> {
    let ours = extra
        .get("requestState")
        .and_then(Value::as_str)
        .is_some_and(|s| s.starts_with(STATE_PREFIX));
    if !ours {
        return None;
    }
    let state = extra
        .remove("requestState")
        .and_then(|s| s.as_str().map(str::to_owned))?;
    let responses = match extra.remove("inputResponses") {
        Some(Value::Object(responses)) => responses,
        _ => JsonObject::new(),
    };
    Some((state, responses))
}

impl Suspensions {
    /// Runs a call for a 2026-07-28 client, or resumes the one its retry names: `start` begins
    /// the call (its future runs in a task of its own, where the upstream's requests reach
    /// this module); `retry` is [`take_retry`]'s.
    /// `track` is told a call's ask channel when the call is suspended (before its client is
    /// answered `input_required`) and when it is resumed (before its requests are answered),
    /// so that what the upstream writes meanwhile is kept and travels on the retry's stream.
    /// `started`, for a call begun here that its client wants as a task ([`until_task`]), is
    /// told when the upstream made its task: then the client's answer is `adopt`'s.
    /// `bound` says whose the request is (a retry resumes only a call of the same caller)
    /// and, for a call begun here, what resumes it for a retry relayed from another replica.
    pub(crate) async fn run<F>(
        self: &Arc<Self>,
        retry: Option<(String, JsonObject)>,
        start: F,
        started: Option<oneshot::Receiver<TaskRecord>>,
        track: &(dyn Fn(&mpsc::Sender<Ask>, Turn) + Sync),
        adopt: Adopt<'_>,
        bound: Bound,
    ) -> Result<Outcome, ErrorObject>
    where
        F: FnOnce() -> Pin<Box<dyn Future<Output = Result<Relayed, CallError>> + Send + 'static>>,
    {
        let suspended = match retry {
            Some((state, responses)) => {
                let caller = bound.caller.as_deref();
                let Some(mut suspended) = self.take(&state, caller) else {
                    // Held by a replica (another, or this one for a retry relayed here
                    // before): the holder answers, through the store.
                    if let (Some(holder), Some(elsewhere)) =
                        (holder_of(&state), self.elsewhere.get())
                    {
                        return elsewhere.resume(holder, &state, responses, caller).await;
                    }
                    return Err(no_call());
                };
                track(&suspended.tx, Turn::Resumed);
                answer_pending(&mut suspended, &responses);
                suspended
            }
            None => {
                let (tx, asks) = mpsc::channel(8);
                let call = tokio::spawn(ASKS.scope(tx.clone(), start()));
                Suspended {
                    call,
                    tx,
                    asks,
                    pending: Vec::new(),
                    started,
                    bound,
                }
            }
        };
        self.wait(suspended, track, adopt).await
    }

    /// Has `elsewhere` make the states from now on (naming this replica), and relays retries
    /// naming another (or this one's, no longer waiting) to it.
    pub(crate) fn share(&self, elsewhere: Arc<dyn Elsewhere>) {
        let _ = self.elsewhere.set(elsewhere);
    }

    /// Takes the call waiting under `state` when it is `caller`'s; another's stays.
    fn take(&self, state: &str, caller: Option<&str>) -> Option<Suspended> {
        take_from(&mut lock(&self.waiting), state, caller)
    }

    /// A retry relayed from another replica (`cluster/resume/`) for the call waiting here
    /// under `state`: resumed at most once, whatever number of times it is relayed (one relayed
    /// again while the first runs, or after its outcome was written, is [`RelayedRetry::Taken`]).
    pub(crate) async fn resume_relayed(
        self: &Arc<Self>,
        state: &str,
        responses: &JsonObject,
        caller: Option<&str>,
    ) -> RelayedRetry {
        let found = {
            let mut waiting = lock(&self.waiting);
            let found = take_from(&mut waiting, state, caller);
            let mut taken = lock(&self.taken);
            if found.is_some() {
                taken.retain(|_, t| t.written.is_none_or(|at| at.elapsed() < RESUMED_FOR));
                forget_oldest_written(&mut taken, MAX_TAKEN - 1);
                // Always remembered while it runs: relayed again meanwhile and answered
                // unknown, that answer would be written first (the outcome key is never
                // replaced) and stand in for the call's outcome.
                taken.insert(
                    state.to_owned(),
                    Taken {
                        caller: caller.map(Arc::from),
                        written: None,
                    },
                );
            } else if let Some(t) = taken.get(state)
                && t.caller.as_deref() == caller
            {
                return RelayedRetry::Taken {
                    written: t.written.is_some(),
                };
            }
            found
        };
        let Some(mut suspended) = found else {
            return RelayedRetry::Unknown;
        };
        let (track, adopt) = (
            Arc::clone(&suspended.bound.track),
            Arc::clone(&suspended.bound.adopt),
        );
        track(&suspended.tx, Turn::Resumed);
        answer_pending(&mut suspended, responses);
        RelayedRetry::Resumed(self.wait(suspended, &*track, &*adopt).await)
    }

    /// The outcome of the relayed retry that resumed `state` was written: the same retry
    /// relayed again is told so, for [`RESUMED_FOR`].
    pub(crate) fn written(&self, state: &str) {
        if let Some(taken) = lock(&self.taken).get_mut(state) {
            taken.written = Some(Instant::now());
        }
    }

    /// Waits for the call to end or to ask; an ask suspends it. Once its upstream made its
    /// task, the call is `adopt`'s.
    async fn wait(
        self: &Arc<Self>,
        mut suspended: Suspended,
        track: &(dyn Fn(&mpsc::Sender<Ask>, Turn) + Sync),
        adopt: Adopt<'_>,
    ) -> Result<Outcome, ErrorObject> {
        let first = tokio::select! {
            // First: the host says so before it follows the task, so before any question the
            // task asks, and the call may end at once after it (a task that is done at once).
            biased;
            _record = started(&mut suspended.started) => {
                let running = Running { call: suspended.call, asks: suspended.asks };
                return adopt(running).map(Outcome::Task);
            }
            ended = &mut suspended.call => {
                return ended
                    .map(Outcome::Done)
                    .map_err(|e| reply::internal(format!("the upstream call stopped: {e}")));
            }
            Some(ask) = suspended.asks.recv() => ask,
        };
        let mut asks = vec![first];
        while let Ok(more) = suspended.asks.try_recv() {
            asks.push(more);
        }
        let state = if lock(&self.waiting).len() >= MAX_SUSPENDED {
            Err(format!(
                "{MAX_SUSPENDED} calls already wait for their clients' answers; this one's request is refused"
            ))
        } else {
            random_hex()
                .and_then(|secret| {
                    let body = format!("{}-{secret}", self.next.fetch_add(1, Ordering::Relaxed));
                    match self.elsewhere.get() {
                        Some(elsewhere) => elsewhere.state(&body),
                        None => Some(format!("{STATE_PREFIX}{body}")),
                    }
                })
                .ok_or_else(|| {
                    "the system's random generator failed, so no requestState could be made; this request is refused".to_owned()
                })
        };
        let state = match state {
            Ok(state) => state,
            Err(why) => {
                for ask in asks {
                    let _ = ask.answer.send(Err(reply::internal(why.clone())));
                }
                // The call goes on without its client's answer.
                return Box::pin(self.wait(suspended, track, adopt)).await;
            }
        };
        let mut requests = JsonObject::new();
        for (i, ask) in asks.into_iter().enumerate() {
            let key = format!("upstream-{i}");
            let params = ask
                .request
                .encode_params()
                .ok()
                .flatten()
                .and_then(|p| p.decode::<Value>().ok());
            let mut request = json!({ "method": ask.request.method() });
            if let Some(params) = params {
                request["params"] = params;
            }
            requests.insert(key.clone(), request);
            suspended.pending.push((key, ask.answer));
        }
        let result = json!({
            "resultType": "input_required",
            "inputRequests": requests,
            "requestState": state,
        });
        track(&suspended.tx, Turn::Suspended);
        lock(&self.waiting).insert(state.clone(), suspended);
        self.expire_later(state);
        RawJson::encode(&result)
            .map(Outcome::InputRequired)
            .map_err(|e| reply::internal(e.to_string()))
    }

    /// After [`SUSPEND_FOR`], answers a suspension still waiting with an error to the
    /// upstream, and lets its call go on without the client.
    fn expire_later(self: &Arc<Self>, state: String) {
        let weak: Weak<Self> = Arc::downgrade(self);
        let ttl = self.ttl;
        tokio::spawn(async move {
            tokio::time::sleep(ttl).await;
            let Some(this) = weak.upgrade() else {
                return;
            };
            let Some(suspended) = lock(&this.waiting).remove(&state) else {
                return;
            };
            for (_, answer) in suspended.pending {
                let _ = answer.send(Err(reply::internal(format!(
                    "the client in front of the gateway did not answer within {} s (it was asked with input_required and never retried)",
                    ttl.as_secs()
                ))));
            }
            // Dropping the receiver refuses the call's later requests; the call itself ends
            // on its own, its result unread.
        });
    }

    /// How many calls wait for their clients' retries.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        lock(&self.waiting).len()
    }
}

/// The upstream's task, once the call made one; never, for a call that will make none (its
/// sender dropped unsent, which empties `started` so that it is not polled again).
async fn started(started: &mut Option<oneshot::Receiver<TaskRecord>>) -> TaskRecord {
    if let Some(told) = started.as_mut() {
        let told = told.await;
        *started = None;
        if let Ok(record) = told {
            return record;
        }
    }
    std::future::pending().await
}

/// 128 bits from the operating system's generator, in hex: a `requestState` a client did not
/// see cannot be guessed, so one client cannot resume another's suspended call by trying.
fn random_hex() -> Option<String> {
    use ring::rand::{SecureRandom as _, SystemRandom};
    let mut bytes = [0u8; 16];
    SystemRandom::new().fill(&mut bytes).ok()?;
    Some(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

#[cfg(test)]
mod tests;
