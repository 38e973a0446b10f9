//! A 2026-07-28 client's retry of a suspended call (`suspend/`) at any replica, with
//! `cluster` and `store` (issue 24 §3): the call waits in the memory of the replica that
//! suspended it, whose name its `requestState` carries (`<replica>.<sealed n-secret>`), and
//! a retry that reaches another replica is relayed to that one through Redis, which resumes
//! the call and writes its outcome back for the relaying replica to answer with.
//!
//! - channel `<prefix>:resumes:<replica>`: what other replicas send this one, sealed with the
//!   session key under the channel's name: a retry to resume (its state, the client's
//!   `inputResponses`, the caller it came from and the replica waiting for the outcome), and
//!   the notice that an outcome this replica waits for was written.
//! - `<prefix>:resumed:<digest of the state and the caller>`: the call's outcome (its result,
//!   its error, its next `input_required`, or the task it became), sealed under the key's own
//!   name, kept [`RESUMED_FOR`]; written with the notice in one script ([`WRITE_OUTCOME`]),
//!   never replacing one written before.
//!
//! A state is sealed with the session key under the holder's name ([`ResumeShare::state`]):
//! one no replica made (forged, or naming a replica it was not made by) is refused where it
//! arrives, before Redis is asked anything, so that it costs neither Redis nor the replica it
//! names anything. Only a state a replica made reaches the holder, and the outcome key of one
//! is written once for each caller that retries it.
//!
//! A `PUBLISH` is delivered at most once, so the relaying replica does not only wait for the
//! notice: it also reads the key, [`POLL`] after the relay and then less and less often (to
//! [`POLL_MAX`]), and a notice lost costs that much time, never the outcome. It waits
//! [`SUSPEND_FOR`] at most, and at most [`MAX_RELAYED`] retries wait at a replica at once.
//! Each read also looks for the holder's heartbeat (`cluster::tasks`'): missing at every
//! read for [`BEAT_MISSED_FOR`], the holder is taken for gone, as when nobody heard the relay. The holder resumes a call at most once
//! (`Suspensions::resume_relayed`): the same retry relayed again, while the first runs or
//! after its outcome was written, is answered that outcome. A `PUBLISH` nobody heard means
//! the holder is gone, and the call with it: the client is told so at once.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use mcp_host::redis::{Redis, RedisError, Reply, Subscription};
use mcp_host::{CallError, Relayed, ToolOutput};
use mcp_http::SessionSeal;
use mcp_protocol::schema::CallToolResult;
use mcp_protocol::{ErrorObject, JsonObject, RawJson, code};
use serde_json::{Value, json};
use tokio::sync::watch;

use crate::suspend::{
    Elsewhere, Outcome, RESUMED_FOR, RelayedRetry, STATE_PREFIX, SUSPEND_FOR, Suspensions,
    holder_of,
};
use crate::sync::lock;

/// How long after the relay a replica waiting for an outcome first reads its key, in case
/// the notice was lost; each read after waits twice as long, to [`POLL_MAX`].
const POLL: Duration = Duration::from_millis(500);

/// The longest between two reads of the key of an outcome that was not there.
const POLL_MAX: Duration = Duration::from_secs(5);

/// How long a holder's heartbeat must be missing, read after read, for a relaying replica to
/// take it for gone while it waits: longer than the 5 s between beats, so that a beat late
/// (or one not yet made by a holder that started while Redis was down) is not taken for it.
const BEAT_MISSED_FOR: Duration = Duration::from_secs(6);

/// How many relayed retries may wait at a replica at once: past it, a retry is refused
/// saying so, rather than each one more polling Redis for up to [`SUSPEND_FOR`].
pub(crate) const MAX_RELAYED: usize = 4 * crate::suspend::MAX_SUSPENDED;

/// Writes an outcome (KEYS[1]: ARGV[1], for ARGV[2] ms) unless one is there, and tells the
/// replica waiting for it (PUBLISH ARGV[4] on channel ARGV[3]); how many heard.
const WRITE_OUTCOME: &str = r"
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2], 'NX')
return redis.call('PUBLISH', ARGV[3], ARGV[4])
";

/// How long a holder keeps trying to write an outcome while Redis does not take it.
const WRITE_FOR: Duration = Duration::from_secs(30);

/// The relaying and the resuming of retries through the store: one per replica.
pub(crate) struct ResumeShare {
    redis: Redis,
    prefix: String,
    seal: Arc<SessionSeal>,
    /// This replica's name (the seal's).
    replica: String,
    /// The calls waiting here.
    suspensions: Weak<Suspensions>,
    /// Where a retry relayed here is resumed (the listener is a thread of its own).
    runtime: tokio::runtime::Handle,
    /// The outcomes this replica waits for, by key: told when their notice comes.
    waiters: Mutex<HashMap<String, watch::Sender<()>>>,
    /// One permit for each relayed retry that may wait here ([`MAX_RELAYED`]).
    relayed: Arc<tokio::sync::Semaphore>,
}

impl std::fmt::Debug for ResumeShare {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResumeShare")
            .field("redis", &self.redis)
            .field("replica", &self.replica)
            .finish_non_exhaustive()
    }
}

/// A digest of `text`, 128 bits in hex: what keys name instead of a state, which is a secret.
fn digest(text: &str) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, text.as_bytes());
    digest.as_ref()[..16]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The answer to a retry whose holder is gone.
fn gone(holder: &str) -> ErrorObject {
    ErrorObject::new(
        code::INVALID_PARAMS,
        format!(
            "requestState: the gateway replica holding this call ({holder}) is gone, and the call with it; call the tool again"
        ),
    )
}

fn store_error(phase: &str, e: impl std::fmt::Display) -> ErrorObject {
    ErrorObject::new(
        code::INTERNAL_ERROR,
        format!(
            "{phase}: the gateway's shared store of suspended calls cannot be used now, so this retry cannot reach the replica holding its call: {e}"
        ),
    )
}

/// Runs a blocking Redis call on tokio's blocking pool.
async fn blocking<T: Send + 'static>(
    phase: &'static str,
    work: impl FnOnce() -> Result<T, RedisError> + Send + 'static,
) -> Result<T, ErrorObject> {
    super::on_blocking_pool(work)
        .await
        .map_err(|e| store_error(phase, e))
}

/// Removes a waiter's entry once nobody waits for that key any more.
struct Waiting<'a> {
    share: &'a ResumeShare,
    key: String,
    told: Option<watch::Receiver<()>>,
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        let mut waiters = lock(&self.share.waiters);
        drop(self.told.take());
        if waiters
            .get(&self.key)
            .is_some_and(|tx| tx.receiver_count() == 0)
        {
            waiters.remove(&self.key);
        }
    }
}

impl ResumeShare {
    /// Starts relaying retries: this replica's channel is subscribed to before this returns
    /// (when Redis answers), and `suspensions` names this replica in its states and sends
    /// retries naming another here.
    pub(crate) fn start(
        redis: Redis,
        prefix: &str,
        seal: Arc<SessionSeal>,
        suspensions: &Arc<Suspensions>,
    ) -> std::io::Result<Arc<Self>> {
        let share = Arc::new(Self {
            redis,
            prefix: prefix.to_owned(),
            replica: seal.replica().to_owned(),
            seal,
            suspensions: Arc::downgrade(suspensions),
            runtime: tokio::runtime::Handle::current(),
            waiters: Mutex::new(HashMap::new()),
            relayed: Arc::new(tokio::sync::Semaphore::new(MAX_RELAYED)),
        });
        let channel = share.channel(&share.replica);
        let first = match share.redis.subscribe(&[&channel]) {
            Ok(subscription) => Some(subscription),
            Err(e) => {
                tracing::warn!(target: "mcp_gateway", "suspended calls: retries relayed by other replicas cannot be received yet: {e}");
                None
            }
        };
        let listener = Arc::clone(&share);
        std::thread::Builder::new()
            .name("mcp-resumes".to_owned())
            .spawn(move || listener.listen(&channel, first))?;
        suspensions.share(Arc::clone(&share) as Arc<dyn Elsewhere>);
        Ok(share)
    }

    /// What a state's body is sealed under: the holder's name, so that a body sealed for one
    /// replica does not pass for another's.
    fn state_name(&self, holder: &str) -> String {
        format!("{STATE_PREFIX}{holder}")
    }

    /// Whether `state`, naming `holder`, was made by a replica sharing the keys
    /// ([`Elsewhere::state`]) for that holder.
    fn made_by_a_replica(&self, holder: &str, state: &str) -> bool {
        let Some(sealed) = state
            .strip_prefix(STATE_PREFIX)
            .and_then(|rest| rest.strip_prefix(holder))
            .and_then(|rest| rest.strip_prefix('.'))
        else {
            return false;
        };
        // A body is about 40 bytes; anything much longer is nobody's.
        if sealed.len() > 256 {
            return false;
        }
        URL_SAFE_NO_PAD
            .decode(sealed)
            .ok()
            .and_then(|bytes| self.seal.open_record(&self.state_name(holder), &bytes))
            .is_some()
    }

    fn channel(&self, replica: &str) -> String {
        format!("{}:resumes:{replica}", self.prefix)
    }

    /// Where the outcome of `state`'s retry by `caller` is written: a caller other than the
    /// call's has a key of its own, which only ever holds "unknown".
    fn outcome_key(&self, state: &str, caller: Option<&str>) -> String {
        let caller = caller.map_or_else(|| "-".to_owned(), |c| format!("+{c}"));
        format!(
            "{}:resumed:{}",
            self.prefix,
            digest(&format!("{state}\n{caller}"))
        )
    }

    fn listen(self: &Arc<Self>, channel: &str, first: Option<Subscription>) {
        let what = "retries relayed by other replicas (suspended calls)";
        super::share::listen(
            &self.redis,
            channel,
            what,
            first,
            || true,
            |payload| {
                self.heard(channel, payload);
                true
            },
        );
    }

    /// What another replica sent: a retry to resume here, or the notice of an outcome.
    fn heard(self: &Arc<Self>, channel: &str, payload: &[u8]) {
        let Some(plain) = self.seal.open_record(channel, payload) else {
            return;
        };
        let Ok(message) = serde_json::from_slice::<Value>(&plain) else {
            return;
        };
        let text = |name: &str| message.get(name).and_then(Value::as_str).map(str::to_owned);
        match text("op").as_deref() {
            Some("ready") => {
                if let Some(key) = text("key")
                    && let Some(tx) = lock(&self.waiters).get(&key)
                {
                    tx.send_replace(());
                }
            }
            Some("resume") => {
                let (Some(state), Some(reply_to)) = (text("state"), text("replyTo")) else {
                    return;
                };
                let responses = match message.get("responses") {
                    Some(Value::Object(responses)) => responses.clone(),
                    _ => JsonObject::new(),
                };
                let caller = text("caller");
                let this = Arc::clone(self);
                self.runtime.spawn(async move {
                    this.resume_here(&state, &responses, caller.as_deref(), &reply_to)
                        .await;
                });
            }
            _ => {}
        }
    }

    /// Resumes the call waiting here under `state` for a retry relayed by `reply_to`, and
    /// writes its outcome for it.
    async fn resume_here(
        &self,
        state: &str,
        responses: &JsonObject,
        caller: Option<&str>,
        reply_to: &str,
    ) {
        let Some(suspensions) = self.suspensions.upgrade() else {
            return;
        };
        let key = self.outcome_key(state, caller);
        let outcome = match suspensions.resume_relayed(state, responses, caller).await {
            RelayedRetry::Resumed(outcome) => outcome,
            // Relayed again while the first runs: its outcome, when written, is this one's.
            RelayedRetry::Taken { written: false } => return,
            // Relayed again once its outcome was written: the key holds it; say so now.
            RelayedRetry::Taken { written: true } => {
                self.notify(&key, reply_to).await;
                return;
            }
            RelayedRetry::Unknown => Err(crate::reply::invalid_params(
                "requestState: no call of this gateway waits under it (it ended, or expired)"
                    .to_owned(),
            )),
        };
        self.write(&key, &encode(&outcome), reply_to).await;
        suspensions.written(state);
    }

    /// Tells `reply_to` that the outcome under `key` is there.
    async fn notify(&self, key: &str, reply_to: &str) {
        let channel = self.channel(reply_to);
        let plain = json!({"op": "ready", "key": key}).to_string();
        let Some(sealed) = self.seal.seal_record(&channel, plain.as_bytes()) else {
            return;
        };
        let redis = self.redis.clone();
        let _ = blocking("PUBLISH", move || redis.publish(&channel, &sealed)).await;
    }

    /// Writes `outcome` under `key` and tells `reply_to`, trying again while Redis does not
    /// take it (for [`WRITE_FOR`]): the relaying replica reads the key until it is there.
    async fn write(&self, key: &str, outcome: &Value, reply_to: &str) {
        let channel = self.channel(reply_to);
        let notice = json!({"op": "ready", "key": key}).to_string();
        let sealed = serde_json::to_vec(outcome)
            .ok()
            .and_then(|plain| self.seal.seal_record(key, &plain));
        let (Some(sealed), Some(notice)) =
            (sealed, self.seal.seal_record(&channel, notice.as_bytes()))
        else {
            tracing::warn!(target: "mcp_gateway", "suspended calls: a relayed retry's outcome could not be sealed (no randomness); the replica that relayed it will say it got none");
            return;
        };
        let ttl = RESUMED_FOR.as_millis().to_string();
        let deadline = tokio::time::Instant::now() + WRITE_FOR;
        let mut pause = Duration::from_millis(100);
        loop {
            let (redis, key, channel) = (self.redis.clone(), key.to_owned(), channel.clone());
            let (sealed, notice, ttl) = (sealed.clone(), notice.clone(), ttl.clone());
            let written = blocking("EVAL", move || {
                redis.eval(
                    WRITE_OUTCOME,
                    &[&key],
                    &[&sealed, ttl.as_bytes(), channel.as_bytes(), &notice],
                )
            })
            .await;
            match written {
                Ok(_) => return,
                Err(e) if tokio::time::Instant::now() >= deadline => {
                    tracing::warn!(target: "mcp_gateway", "suspended calls: a relayed retry's outcome could not be written for the replica that relayed it: {}", e.message);
                    return;
                }
                Err(_) => {
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(Duration::from_secs(5));
                }
            }
        }
    }

    /// The outcome under `key`, if one was written that this replica can open.
    async fn read(&self, key: &str) -> Result<Option<Result<Outcome, ErrorObject>>, ErrorObject> {
        let (redis, read) = (self.redis.clone(), key.to_owned());
        let Some(bytes) = blocking("GET", move || redis.get(&read)).await? else {
            return Ok(None);
        };
        Ok(self.opened(key, &bytes))
    }

    /// The outcome sealed in `bytes` under `key`, if this replica can open it.
    fn opened(&self, key: &str, bytes: &[u8]) -> Option<Result<Outcome, ErrorObject>> {
        self.seal
            .open_record(key, bytes)
            .and_then(|plain| serde_json::from_slice::<Value>(&plain).ok())
            .and_then(|value| decode(&value))
    }

    /// [`read`](Self::read), and whether `holder`'s heartbeat is there, in one `MGET`.
    async fn read_watching(
        &self,
        key: &str,
        holder: &str,
    ) -> Result<(Option<Result<Outcome, ErrorObject>>, bool), ErrorObject> {
        let (redis, read) = (self.redis.clone(), key.to_owned());
        let beat = super::heartbeat_key(&self.prefix, holder);
        let reply = blocking("MGET", move || {
            redis.command(&[b"MGET", read.as_bytes(), beat.as_bytes()])
        })
        .await?;
        let Reply::Array(Some(mut values)) = reply else {
            return Err(store_error("MGET", "Redis answered other than two values"));
        };
        let alive = matches!(values.pop(), Some(Reply::Bulk(Some(_))));
        let outcome = match values.pop() {
            Some(Reply::Bulk(Some(bytes))) => self.opened(key, &bytes),
            _ => None,
        };
        Ok((outcome, alive))
    }

    /// Relays a retry to `holder`: how many heard it.
    async fn relay(&self, holder: &str, message: &Value) -> Result<i64, ErrorObject> {
        super::publish_sealed(&self.redis, &self.seal, self.channel(holder), message)
            .await
            .map_err(|e| store_error("PUBLISH", e))
    }

    /// Told when a notice for `key` comes, from now on.
    fn waiting(&self, key: &str) -> Waiting<'_> {
        let told = lock(&self.waiters)
            .entry(key.to_owned())
            .or_insert_with(|| watch::channel(()).0)
            .subscribe();
        Waiting {
            share: self,
            key: key.to_owned(),
            told: Some(told),
        }
    }

    async fn resume_at(
        &self,
        holder: &str,
        state: &str,
        responses: JsonObject,
        caller: Option<&str>,
    ) -> Result<Outcome, ErrorObject> {
        if !self.made_by_a_replica(holder, state) {
            return Err(crate::reply::invalid_params(
                "requestState: no call of this gateway waits under it (no replica of it made it)"
                    .to_owned(),
            ));
        }
        let Ok(_permit) = Arc::clone(&self.relayed).try_acquire_owned() else {
            return Err(ErrorObject::new(
                code::INTERNAL_ERROR,
                format!(
                    "{MAX_RELAYED} retries already wait here for the replicas holding their calls; retry this one later"
                ),
            ));
        };
        let key = self.outcome_key(state, caller);
        // Listening before anything is sent, so that no notice falls before it.
        let mut waiting = self.waiting(&key);
        // The same retry sent again once its outcome was written: that outcome.
        if let Some(outcome) = self.read(&key).await? {
            return outcome;
        }
        let message = json!({
            "op": "resume", "state": state, "responses": responses,
            "caller": caller, "replyTo": self.replica,
        });
        if self.relay(holder, &message).await? == 0 {
            return Err(gone(holder));
        }
        let deadline = tokio::time::Instant::now() + SUSPEND_FOR;
        let mut failed = None;
        let mut poll = POLL;
        // Since when the holder's heartbeat has been missing at every read.
        let mut unheard: Option<tokio::time::Instant> = None;
        loop {
            if let Some(told) = waiting.told.as_mut() {
                let _ = tokio::time::timeout(poll, told.changed()).await;
            }
            poll = (poll * 2).min(POLL_MAX);
            match self.read_watching(&key, holder).await {
                Ok((Some(outcome), _)) => return outcome,
                Ok((None, true)) => unheard = None,
                Ok((None, false)) => {
                    let since = *unheard.get_or_insert_with(tokio::time::Instant::now);
                    // Missing for a beat's interval: not a beat late, the holder stopped
                    // (killed mid-resume), and the call with it, as the tasks take it.
                    if since.elapsed() >= BEAT_MISSED_FOR {
                        return Err(gone(holder));
                    }
                }
                // Redis may come back before the holder gives up writing.
                Err(e) => failed = Some(e),
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(failed.unwrap_or_else(|| {
                    ErrorObject::new(
                        code::INTERNAL_ERROR,
                        format!(
                            "the gateway replica holding this call ({holder}) gave no outcome within {} s",
                            SUSPEND_FOR.as_secs()
                        ),
                    )
                }));
            }
        }
    }
}

impl Elsewhere for ResumeShare {
    fn state(&self, body: &str) -> Option<String> {
        let sealed = self
            .seal
            .seal_record(&self.state_name(&self.replica), body.as_bytes())?;
        let state = format!(
            "{STATE_PREFIX}{}.{}",
            self.replica,
            URL_SAFE_NO_PAD.encode(sealed)
        );
        // What every replica reads the holder from.
        (holder_of(&state) == Some(self.replica.as_str())).then_some(state)
    }

    fn resume<'a>(
        &'a self,
        holder: &'a str,
        state: &'a str,
        responses: JsonObject,
        caller: Option<&'a str>,
    ) -> std::pin::Pin<Box<dyn Future<Output = Result<Outcome, ErrorObject>> + Send + 'a>> {
        Box::pin(self.resume_at(holder, state, responses, caller))
    }
}

/// An outcome as it crosses Redis. A call's error keeps its kind where the modes tell kinds
/// apart (the upstream's own JSON-RPC error, a timeout); any other is carried as a failure
/// with its message.
pub(crate) fn encode(outcome: &Result<Outcome, ErrorObject>) -> Value {
    match outcome {
        Err(error) => json!({"error": error}),
        Ok(Outcome::InputRequired(raw)) => json!({"inputRequired": raw}),
        Ok(Outcome::Task(raw)) => json!({"task": raw}),
        Ok(Outcome::Done(Ok(Relayed::Complete(out)))) => {
            json!({"complete": out.result, "truncated": out.truncated})
        }
        Ok(Outcome::Done(Ok(Relayed::InputRequired(raw)))) => json!({"upstreamInputRequired": raw}),
        Ok(Outcome::Done(Ok(_))) => json!({"error": crate::reply::internal(
            "the upstream's answer is of a kind this gateway does not know".to_owned(),
        )}),
        Ok(Outcome::Done(Err(e))) => json!({"failed": call_error(e)}),
    }
}

fn call_error(e: &CallError) -> Value {
    match e {
        CallError::Rpc {
            server,
            what,
            code,
            message,
            data,
        } => json!({"kind": "rpc", "server": server, "what": what, "code": code,
            "message": message, "data": data}),
        CallError::Timeout {
            server,
            what,
            waited_ms,
        } => json!({"kind": "timeout", "server": server, "what": what,
            "waitedMs": u64::try_from(*waited_ms).unwrap_or(u64::MAX)}),
        CallError::Failed {
            server,
            what,
            message,
        } => json!({"kind": "failed", "server": server, "what": what, "message": message}),
        CallError::Session {
            server,
            what,
            source,
        } => json!({"kind": "failed", "server": server, "what": what,
            "message": source.to_string()}),
        other => json!({"kind": "failed", "server": other.server().unwrap_or_default(),
            "what": "tools/call", "message": other.to_string()}),
    }
}

/// [`encode`]'s counterpart; `None` for what it never writes.
pub(crate) fn decode(value: &Value) -> Option<Result<Outcome, ErrorObject>> {
    let raw = |name: &str| value.get(name).and_then(|v| RawJson::encode(v).ok());
    if let Some(error) = value.get("error") {
        return Some(Err(serde_json::from_value(error.clone()).ok()?));
    }
    if let Some(raw) = raw("inputRequired") {
        return Some(Ok(Outcome::InputRequired(raw)));
    }
    if let Some(raw) = raw("task") {
        return Some(Ok(Outcome::Task(raw)));
    }
    if let Some(raw) = raw("upstreamInputRequired") {
        return Some(Ok(Outcome::Done(Ok(Relayed::InputRequired(raw)))));
    }
    if let Some(result) = value.get("complete") {
        let result: CallToolResult = serde_json::from_value(result.clone()).ok()?;
        let truncated = value.get("truncated").and_then(Value::as_bool)?;
        return Some(Ok(Outcome::Done(Ok(Relayed::Complete(ToolOutput::new(
            result, truncated,
        ))))));
    }
    let failed = value.get("failed")?;
    let text = |name: &str| Some(failed.get(name)?.as_str()?.to_owned());
    let (server, what) = (text("server")?, text("what")?);
    let error = match failed.get("kind")?.as_str()? {
        "rpc" => CallError::Rpc {
            server,
            what,
            code: failed.get("code")?.as_i64()?,
            message: text("message")?,
            data: failed.get("data").filter(|d| !d.is_null()).cloned(),
        },
        "timeout" => CallError::Timeout {
            server,
            what,
            waited_ms: u128::from(failed.get("waitedMs")?.as_u64()?),
        },
        _ => CallError::Failed {
            server,
            what,
            message: text("message")?,
        },
    };
    Some(Ok(Outcome::Done(Err(error))))
}

#[cfg(test)]
mod tests;
