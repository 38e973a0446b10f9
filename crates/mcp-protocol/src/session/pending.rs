//! The bookkeeping both session roles share: id allocation, the table of requests in flight
//! with their deadlines and progress tokens, requests received and not yet answered, and the
//! outgoing queue.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, HashSet, VecDeque};
use std::time::{Duration, Instant};

use crate::error::Error;
use crate::jsonrpc::{
    ErrorObject, ErrorResponse, Message, Notification, RawJson, RequestId, Response,
};
use crate::schema::{CancelledParams, ProgressToken, meta_key};
use crate::wire::JsonObject;

/// How long a request may wait, and whether progress keeps it alive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct RequestOptions {
    /// The hard cap: the request fails this long after it was sent, whatever progress says.
    /// `None` takes the session's default.
    pub timeout: Option<Duration>,
    /// When set, the request also fails after this long without a response or a progress
    /// notification; each progress notification restarts it, never past `timeout`.
    pub idle_timeout: Option<Duration>,
    /// Ask the peer for progress: a `progressToken` is added to `params._meta`.
    pub progress: bool,
    /// In the stateless era, hand an `input_required` result to the caller as it came instead
    /// of driving the retries: for a proxy whose own client answers the inputs and retries
    /// (with `inputResponses` and `requestState` in the parameters it passes on).
    pub pass_input_required: bool,
}

impl RequestOptions {
    /// The session defaults: its timeout, no idle timeout, no progress.
    pub const DEFAULT: Self = Self {
        timeout: None,
        idle_timeout: None,
        progress: false,
        pass_input_required: false,
    };

    /// Sets the hard timeout.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Sets the idle timeout, which progress restarts.
    pub fn idle_timeout(mut self, idle: Duration) -> Self {
        self.idle_timeout = Some(idle);
        self
    }

    /// Asks for progress notifications.
    pub fn with_progress(mut self) -> Self {
        self.progress = true;
        self
    }

    /// Passes `input_required` results through to the caller (see
    /// [`pass_input_required`](Self::pass_input_required)).
    pub fn passing_input_required(mut self) -> Self {
        self.pass_input_required = true;
        self
    }
}

impl Default for RequestOptions {
    fn default() -> Self {
        Self::DEFAULT
    }
}

impl Pending {
    /// The error of this request timing out at `now`.
    pub(crate) fn timeout(&self, now: Instant) -> Error {
        Error::Timeout {
            method: self.method.clone(),
            waited_ms: now.saturating_duration_since(self.sent_at).as_millis(),
        }
    }
}

#[derive(Debug)]
pub(crate) struct Pending {
    pub(crate) method: String,
    pub(crate) sent_at: Instant,
    /// When the request fails now: the idle deadline or the hard one, whichever comes first.
    pub(crate) deadline: Instant,
    hard_deadline: Instant,
    idle: Option<Duration>,
    pub(crate) progress_token: Option<ProgressToken>,
}

/// Remembers at most this many ids of requests we gave up on, to drop their late replies
/// quietly rather than report them as unknown.
const ABANDONED_MEMORY: usize = 1024;

#[derive(Debug, Default)]
pub(crate) struct Core {
    next_id: i64,
    /// When set, ids are `<prefix><n>` strings (`ServerConfig::request_id_prefix`).
    id_prefix: Option<String>,
    pending: HashMap<RequestId, Pending>,
    /// Deadlines, earliest first; entries whose request is gone or whose deadline moved are
    /// skipped lazily.
    deadlines: BinaryHeap<Reverse<(Instant, RequestId)>>,
    progress: HashMap<ProgressToken, RequestId>,
    abandoned: HashSet<RequestId>,
    abandoned_order: VecDeque<RequestId>,
    /// Requests from the peer that we have not answered yet, by id, with their method.
    pub(crate) inbound: HashMap<RequestId, String>,
    pub(crate) outbox: VecDeque<Message>,
}

/// What became of a response that arrived.
#[derive(Debug)]
pub(crate) enum Matched {
    /// It answers this request.
    Pending(RequestId, Pending),
    /// It answers a request we cancelled or that timed out: drop it.
    Late,
    /// It answers nothing we sent.
    Unknown,
}

impl Core {
    /// No request sent yet; ids will begin with `prefix` when one is given.
    pub(crate) fn with_id_prefix(prefix: Option<String>) -> Self {
        Self {
            id_prefix: prefix,
            ..Self::default()
        }
    }

    /// Registers a request and queues it. `params._meta` gains a progress token if asked, and
    /// the members of `envelope` (the stateless era's per-request fields) if given.
    pub(crate) fn send_request(
        &mut self,
        now: Instant,
        method: &str,
        params: Option<RawJson>,
        options: RequestOptions,
        default_timeout: Duration,
        envelope: Option<&JsonObject>,
    ) -> Result<RequestId, Error> {
        let id = match &self.id_prefix {
            Some(prefix) => RequestId::String(format!("{prefix}{}", self.next_id)),
            None => RequestId::Number(self.next_id),
        };
        let token = options.progress.then(|| ProgressToken(id.clone()));
        let params = if token.is_some() || envelope.is_some() {
            Some(with_meta(params.as_ref(), token.as_ref(), envelope)?)
        } else {
            params
        };
        self.next_id += 1;
        let hard_deadline = now + options.timeout.unwrap_or(default_timeout);
        let deadline = match options.idle_timeout {
            Some(idle) => (now + idle).min(hard_deadline),
            None => hard_deadline,
        };
        if let Some(t) = &token {
            self.progress.insert(t.clone(), id.clone());
        }
        self.pending.insert(
            id.clone(),
            Pending {
                method: method.to_owned(),
                sent_at: now,
                deadline,
                hard_deadline,
                idle: options.idle_timeout,
                progress_token: token,
            },
        );
        self.deadlines.push(Reverse((deadline, id.clone())));
        self.outbox
            .push_back(Message::Request(crate::jsonrpc::Request {
                id: id.clone(),
                method: method.to_owned(),
                params,
            }));
        Ok(id)
    }

    pub(crate) fn method_of(&self, id: &RequestId) -> Option<&str> {
        self.pending.get(id).map(|p| p.method.as_str())
    }

    /// Takes the request a response answers.
    pub(crate) fn match_response(&mut self, id: &RequestId) -> Matched {
        match self.remove(id) {
            Some(p) => Matched::Pending(id.clone(), p),
            None if self.abandoned.contains(id) => Matched::Late,
            None => Matched::Unknown,
        }
    }

    fn remove(&mut self, id: &RequestId) -> Option<Pending> {
        let p = self.pending.remove(id)?;
        if let Some(t) = &p.progress_token {
            self.progress.remove(t);
        }
        Some(p)
    }

    /// Gives up on a request: it is forgotten, its late reply will be dropped, and the peer is
    /// told with `notifications/cancelled` when `notify` is set.
    pub(crate) fn abandon(
        &mut self,
        id: &RequestId,
        reason: Option<&str>,
        notify: bool,
    ) -> Option<Pending> {
        let p = self.remove(id)?;
        if self.abandoned_order.len() == ABANDONED_MEMORY
            && let Some(old) = self.abandoned_order.pop_front()
        {
            self.abandoned.remove(&old);
        }
        self.abandoned.insert(id.clone());
        self.abandoned_order.push_back(id.clone());
        if notify {
            let mut params = CancelledParams::new();
            params.request_id = Some(id.clone());
            params.reason = reason.map(str::to_owned);
            self.push_notification("notifications/cancelled", &params);
        }
        Some(p)
    }

    /// Routes a progress notification to its request and restarts that request's idle
    /// timeout. Returns the request's id, or `None` for a token no active request holds.
    pub(crate) fn progress(&mut self, now: Instant, token: &ProgressToken) -> Option<RequestId> {
        let id = self.progress.get(token)?.clone();
        let p = self.pending.get_mut(&id)?;
        if let Some(idle) = p.idle {
            let next = (now + idle).min(p.hard_deadline);
            if next != p.deadline {
                p.deadline = next;
                self.deadlines.push(Reverse((next, id.clone())));
            }
        }
        Some(id)
    }

    /// The earliest deadline of a request in flight.
    pub(crate) fn poll_timeout(&mut self) -> Option<Instant> {
        while let Some(Reverse((at, id))) = self.deadlines.peek() {
            match self.pending.get(id) {
                Some(p) if p.deadline == *at => return Some(*at),
                _ => {
                    self.deadlines.pop();
                }
            }
        }
        None
    }

    /// The ids of every request whose deadline has passed, earliest first. They stay in the
    /// table until the session abandons them.
    pub(crate) fn expired(&mut self, now: Instant) -> Vec<RequestId> {
        let mut out = Vec::new();
        while let Some(at) = self.poll_timeout() {
            if at > now {
                break;
            }
            if let Some(Reverse((_, id))) = self.deadlines.pop() {
                out.push(id);
            }
        }
        out
    }

    /// Every request still in flight, for failing them when the session ends.
    pub(crate) fn drain_pending(&mut self) -> Vec<(RequestId, Pending)> {
        self.progress.clear();
        self.deadlines.clear();
        let mut all: Vec<_> = self.pending.drain().collect();
        all.sort_by(|a, b| a.0.cmp(&b.0));
        all
    }

    pub(crate) fn pending_len(&self) -> usize {
        self.pending.len()
    }

    pub(crate) fn push_notification<T: serde::Serialize>(&mut self, method: &str, params: &T) {
        // Our own parameter types always encode: they have string keys only.
        let params = RawJson::encode(params).ok();
        self.outbox.push_back(Message::Notification(Notification {
            method: method.to_owned(),
            params,
        }));
    }

    pub(crate) fn push_result(&mut self, id: RequestId, result: RawJson) {
        self.outbox
            .push_back(Message::Response(Response { id, result }));
    }

    pub(crate) fn push_error(
        &mut self,
        id: Option<RequestId>,
        code: i64,
        message: impl Into<String>,
    ) {
        self.push_error_object(id, ErrorObject::new(code, message.into()));
    }

    pub(crate) fn push_error_object(&mut self, id: Option<RequestId>, error: ErrorObject) {
        self.outbox
            .push_back(Message::Error(ErrorResponse { id, error }));
    }

    /// Accepts a request from the peer for the caller to answer later. A reused id of a
    /// request still unanswered is refused.
    pub(crate) fn accept_inbound(&mut self, id: &RequestId, method: &str) -> bool {
        if self.inbound.contains_key(id) {
            return false;
        }
        self.inbound.insert(id.clone(), method.to_owned());
        true
    }
}

/// A request's params as an object to add members to; none is an empty one.
pub(crate) fn params_object(params: Option<&RawJson>) -> Result<JsonObject, Error> {
    match params {
        Some(raw) => raw
            .decode()
            .map_err(|e| Error::ApiMisuse(format!("params must be a JSON object: {e}"))),
        None => Ok(JsonObject::new()),
    }
}

/// The envelope members a caller may set itself in `_meta`: a proxy speaks for its own
/// client, whose declared capabilities and wanted log level are what the server must see.
/// The protocol version and the client's identity stay the session's.
const CALLER_MAY_SET: [&str; 2] = [meta_key::CLIENT_CAPABILITIES, meta_key::LOG_LEVEL];

/// Adds `_meta.progressToken` and the envelope's members to a params object, creating both
/// if needed: one decode and one encode, whatever is added. A member of [`CALLER_MAY_SET`]
/// already in the params is kept.
pub(crate) fn with_meta(
    params: Option<&RawJson>,
    token: Option<&ProgressToken>,
    envelope: Option<&JsonObject>,
) -> Result<RawJson, Error> {
    let mut obj = params_object(params)?;
    let meta = obj
        .entry("_meta")
        .or_insert_with(|| serde_json::Value::Object(JsonObject::new()));
    let serde_json::Value::Object(meta) = meta else {
        return Err(Error::ApiMisuse(
            "params `_meta` must be an object".to_owned(),
        ));
    };
    if let Some(token) = token {
        meta.insert(
            "progressToken".to_owned(),
            serde_json::to_value(token).unwrap_or(serde_json::Value::Null),
        );
    }
    for (key, value) in envelope.into_iter().flatten() {
        if CALLER_MAY_SET.contains(&key.as_str()) && meta.contains_key(key) {
            continue;
        }
        meta.insert(key.clone(), value.clone());
    }
    RawJson::encode(&obj).map_err(|e| Error::ApiMisuse(e.to_string()))
}
