//! The gateway's own tasks across replicas (issue 24 §3), with `cluster` and `store`: a task
//! runs at the replica that took its call (its work is an upstream call there, tied to that
//! process), and every change of it is written to Redis, sealed with the session keys, so
//! that `tasks/get`, `tasks/result`, `tasks/list` and `tasks/cancel` (and `tasks/update` in
//! 2026-07-28) are answered at any replica, for the task's owner only. A cancel or an update
//! is relayed to the replica that runs the task, on its channel.
//!
//! Keys (every name a digest, so that `KEYS` shows neither a session id nor a task id, which
//! in 2026-07-28 is what lets a client see its task):
//!
//! - `<prefix>:task:<digest of the task id>`: the task as it stands (status, result or error,
//!   pending input requests: for a handshake task, the questions its standalone stream did not
//!   take, by the ids of the requests waiting there, which a `tasks/result` at another replica
//!   sends on its stream), its owner (the session's name: a digest of its sealed id; none
//!   in 2026-07-28) and the replica that runs it, sealed under the key's own name; it expires
//!   with the task's TTL. A record over [`MAX_RECORD`] bytes is kept without its result.
//!   Every write of it goes through one script, [`WRITE_TASK`], which refuses to replace a
//!   record once a terminal one was written: a task in a terminal status never changes.
//! - `<prefix>:task-ended:<digest of the task id>`: set by that script, beside a terminal
//!   record and with its TTL, so that the script can tell without opening the sealed record.
//! - `<prefix>:tasks-of:<session name>`: a set of the digests of a session's tasks, for
//!   `tasks/list` (handshake era), expiring a TTL after its last task was written. A task whose
//!   record is gone (expired) leaves it at the session's next `tasks/list`, and meanwhile a few
//!   members picked at random are looked at as each task is written ([`LIST_TASK`]).
//! - `<prefix>:replica:<replica>`: the replica's heartbeat, written every 5 s to live 15 s
//!   while the share lives (its threads end when it is dropped, and the beats with them). A
//!   task whose replica's heartbeat lapsed is reported failed by the others: its work went with
//!   that process, and without this a client would poll a `working` task until its TTL.
//! - channel `<prefix>:tasks:<replica>`: cancels and updates relayed to that replica (sealed).
//!   The client's answers to a handshake task's questions cross as every answer to a
//!   replica's request does (`mcp_http`'s relay, on `<prefix>:answers:<replica>`).
//!
//! The replica that runs a task answers for it from its own memory, as without a store.

mod answer;
mod pending;

use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use mcp_host::redis::{Redis, RedisError, Reply, Subscription};
use mcp_http::SessionSeal;
use mcp_protocol::schema::{
    ClientRequest, DetailedTask, EmptyResult, ExperimentalListTasksResult, ExperimentalTask,
    TaskError, TaskStatus, UpdateTaskParams,
};
use mcp_protocol::{Era, ErrorObject, RawJson, code};
use mcp_session::{RequestContext, TaskMirror, TaskRecord, Tasks};
use serde_json::{Value, json};

pub(crate) use answer::answer;
use answer::{carry, get_answer, owns, too_large};
use pending::Pending;

/// How often a replica writes its heartbeat.
const HEARTBEAT_EVERY: Duration = Duration::from_secs(5);

/// How long a heartbeat lasts: two missed, and the replica's tasks are taken for lost.
const HEARTBEAT_TTL: Duration = Duration::from_secs(15);

/// The largest record kept whole, in bytes of JSON: a bigger result stays at its replica.
pub(crate) const MAX_RECORD: usize = 1 << 20;

/// How long a handshake client's `tasks/cancel` at another replica waits for the running
/// replica to write how the task ended.
const CANCEL_WAIT: Duration = Duration::from_secs(2);

/// How often it looks meanwhile.
const CANCEL_POLL: Duration = Duration::from_millis(50);

/// Writes a task's record (KEYS[1]) unless a terminal one was written before (its marker,
/// KEYS[2], is there): ARGV[1] the sealed record, ARGV[2] its TTL in milliseconds (`0`: keep
/// the record's own, and write nothing if there is none, as `SET … KEEPTTL XX`), ARGV[3] `1`
/// when the record is terminal (the marker is set too, with the same TTL). 1 when written, 0
/// when refused. One script, so that whichever terminal write comes first wins, whatever
/// replica makes it and however late the other arrives.
const WRITE_TASK: &str = r"
if redis.call('EXISTS', KEYS[2]) == 1 then return 0 end
local ttl = tonumber(ARGV[2])
if ttl == 0 then
  ttl = redis.call('PTTL', KEYS[1])
  if ttl <= 0 then return 0 end
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ttl)
if ARGV[3] == '1' then redis.call('SET', KEYS[2], '1', 'PX', ttl) end
return 1
";

/// Lists a task in its session's set (KEYS[1]): ARGV[1] the task's digest, ARGV[2] how long
/// the set lives from now, in milliseconds, ARGV[3] what its tasks' keys begin with. A few
/// members picked at random whose records are gone (expired) leave the set on the way: each
/// task is written at least twice (made, ended), so for a session that makes tasks all its
/// life the set holds its live tasks and a share of dead ones in proportion, not every task it
/// ever made. (It reads keys it is not given: a single Redis, as the gateway's store is.)
const LIST_TASK: &str = r"
redis.call('SADD', KEYS[1], ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
for _, member in ipairs(redis.call('SRANDMEMBER', KEYS[1], 3)) do
  if redis.call('EXISTS', ARGV[3] .. member) == 0 then
    redis.call('SREM', KEYS[1], member)
  end
end
return 1
";

/// The most tasks the writer remembers it was refused for (to say so once per task).
const MAX_REFUSED: usize = 1024;

/// The tasks' share of the store: where their records are written and read, and where
/// cancels and updates are relayed.
pub(crate) struct TaskShare {
    redis: Redis,
    prefix: String,
    seal: Arc<SessionSeal>,
    /// This replica's name (the seal's: the one its requests to clients carry).
    replica: String,
    /// Records to write, by the writer thread: the latest of each task.
    writes: Arc<Pending<TaskRecord>>,
}

impl std::fmt::Debug for TaskShare {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskShare")
            .field("redis", &self.redis)
            .field("replica", &self.replica)
            .finish_non_exhaustive()
    }
}

/// The writer thread ends with the share, at once.
impl Drop for TaskShare {
    fn drop(&mut self) {
        self.writes.close();
    }
}

/// A task as another replica wrote it.
#[derive(Debug, Clone)]
struct Stored {
    replica: String,
    owner: Option<String>,
    task: DetailedTask,
    /// The size of a result that was not kept (over [`MAX_RECORD`]).
    too_large: Option<u64>,
}

/// Writes each change of a task to the store, through the writer thread.
struct Mirror(Arc<Pending<TaskRecord>>);

impl TaskMirror for Mirror {
    fn changed(&self, record: TaskRecord) {
        self.0.push(record.task.task_id.clone(), record);
    }
}

/// A digest of `text`, 128 bits in hex: what keys name instead of ids.
fn digest(text: &str) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, text.as_bytes());
    digest.as_ref()[..16]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn store_error(phase: &str, e: impl std::fmt::Display) -> ErrorObject {
    ErrorObject::new(
        code::INTERNAL_ERROR,
        format!("{phase}: the gateway's shared task store cannot be used now: {e}"),
    )
}

fn encode<T: serde::Serialize>(value: &T) -> Result<RawJson, ErrorObject> {
    RawJson::encode(value).map_err(|e| ErrorObject::new(code::INTERNAL_ERROR, e.to_string()))
}

fn unknown(id: &str) -> ErrorObject {
    ErrorObject::new(
        code::INVALID_PARAMS,
        format!("unknown task id {id:?} (never issued here, or expired)"),
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

impl TaskShare {
    /// Starts sharing `tasks`: every change of them is written to `redis` under `prefix`
    /// (by a thread of its own, in order, with this replica's heartbeat), and what other
    /// replicas relay to `seal`'s replica is heard (subscribed before this returns, when
    /// Redis answers). The first heartbeat and the subscription are made on tokio's blocking
    /// pool, never on the runtime's threads; the two threads end once the share is dropped
    /// (the heartbeat with them, so that the other replicas then take its tasks for lost).
    pub(crate) async fn start(
        redis: Redis,
        prefix: &str,
        seal: Arc<SessionSeal>,
        tasks: &Tasks,
    ) -> std::io::Result<Arc<Self>> {
        let writes = Arc::default();
        let share = Arc::new(Self {
            redis,
            prefix: prefix.to_owned(),
            replica: seal.replica().to_owned(),
            seal,
            writes,
        });
        let channel = share.channel(&share.replica);
        // The heartbeat first, so that a task made at once is not taken for lost.
        let first = {
            let (share, channel) = (Arc::clone(&share), channel.clone());
            tokio::task::spawn_blocking(move || {
                if let Err(e) = share.beat() {
                    tracing::warn!(target: "mcp_gateway", "tasks: {e}");
                }
                match share.redis.subscribe(&[&channel]) {
                    Ok(subscription) => Some(subscription),
                    Err(e) => {
                        tracing::warn!(target: "mcp_gateway", "tasks: cancels relayed by other replicas cannot be received yet: {e}");
                        None
                    }
                }
            })
            .await
            .map_err(std::io::Error::other)?
        };
        let (writer, writes) = (Arc::downgrade(&share), Arc::clone(&share.writes));
        std::thread::Builder::new()
            .name("mcp-tasks-store".to_owned())
            .spawn(move || Self::write_loop(&writer, &writes))?;
        let (listener, redis) = (Arc::downgrade(&share), share.redis.clone());
        let relayed_to = tasks.clone();
        std::thread::Builder::new()
            .name("mcp-tasks-relay".to_owned())
            .spawn(move || Self::listen(&listener, &redis, &channel, &relayed_to, first))?;
        tasks.mirror_to(Arc::new(Mirror(Arc::clone(&share.writes))));
        Ok(share)
    }

    fn task_key(&self, id: &str) -> String {
        format!("{}:task:{}", self.prefix, digest(id))
    }

    fn ended_key(&self, id: &str) -> String {
        format!("{}:task-ended:{}", self.prefix, digest(id))
    }

    /// Writes `sealed` as task `id`'s record through [`WRITE_TASK`], for `keep` (zero: for
    /// what is left of the record's TTL, and only if there is one): whether it was written
    /// (false: a terminal record was there first).
    fn write_record(
        redis: &Redis,
        keys: [&str; 2],
        sealed: &[u8],
        keep: Duration,
        terminal: bool,
    ) -> Result<bool, RedisError> {
        let ttl = u64::try_from(keep.as_millis()).unwrap_or(u64::MAX);
        // A TTL under a millisecond is one, not "keep the record's".
        let ttl = if keep.is_zero() { 0 } else { ttl.max(1) }.to_string();
        let terminal: &[u8] = if terminal { b"1" } else { b"0" };
        match redis.eval(WRITE_TASK, &keys, &[sealed, ttl.as_bytes(), terminal])? {
            Reply::Integer(written) => Ok(written == 1),
            _ => Err(RedisError::Unexpected {
                at: redis.address(),
                phase: "EVAL".to_owned(),
                what: "a reply other than an integer",
            }),
        }
    }

    fn index_key(&self, owner: &str) -> String {
        format!("{}:tasks-of:{owner}", self.prefix)
    }

    fn heartbeat_key(&self, replica: &str) -> String {
        super::heartbeat_key(&self.prefix, replica)
    }

    fn channel(&self, replica: &str) -> String {
        format!("{}:tasks:{replica}", self.prefix)
    }

    /// Says this replica is alive, for [`HEARTBEAT_TTL`].
    fn beat(&self) -> Result<(), String> {
        let key = self.heartbeat_key(&self.replica);
        self.redis
            .set(&key, b"1", Some(HEARTBEAT_TTL))
            .map_err(|e| format!("this replica's heartbeat cannot be written: {e}"))
    }

    /// The writer thread, for as long as the share lives: each task's latest record, and
    /// the heartbeat every [`HEARTBEAT_EVERY`].
    /// While Redis fails, one warning says so (not one per task change) and one line says
    /// when it answers again; a change not written is not retried, since the next one writes
    /// the whole task.
    /// It holds the share only while it writes, so that dropping the share closes `writes`
    /// and the thread ends at once.
    fn write_loop(share: &Weak<Self>, writes: &Pending<TaskRecord>) {
        let mut last_beat = Instant::now();
        let mut failing = false;
        // Tasks whose change was refused (another replica recorded them ended first), so
        // that it is said once per task; bounded, as a task that never ends here could stay.
        let mut refused = HashSet::new();
        loop {
            // Until the next beat is due, not a whole period: a write may take a while.
            let until_beat = HEARTBEAT_EVERY.saturating_sub(last_beat.elapsed());
            let record = writes.next(until_beat);
            let Some(share) = share.upgrade() else {
                return;
            };
            let mut outcome = None;
            if last_beat.elapsed() >= HEARTBEAT_EVERY {
                outcome = Some(share.beat());
                last_beat = Instant::now();
            }
            if let Some(record) = record {
                let written = share.write(&record, &mut refused).map_err(|e| {
                    format!("a task's state cannot be written for other replicas: {e}")
                });
                outcome = Some(outcome.unwrap_or(Ok(())).and(written));
            }
            match outcome {
                Some(Err(e)) if !failing => {
                    tracing::warn!(target: "mcp_gateway", "tasks: {e} (said once until Redis answers again)");
                    failing = true;
                }
                Some(Ok(())) if failing => {
                    tracing::info!(target: "mcp_gateway", "tasks: Redis answers again; task changes are written for other replicas");
                    failing = false;
                }
                _ => {}
            }
        }
    }

    /// The sealed bytes of `stored` under `key`, without its result when too large.
    fn sealed(&self, key: &str, stored: &Stored) -> Result<Vec<u8>, String> {
        let mut value = json!({
            "replica": stored.replica,
            "owner": stored.owner,
            "task": stored.task,
        });
        if let Some(size) = stored.too_large {
            value["resultTooLarge"] = json!(size);
        }
        let mut plain = serde_json::to_vec(&value).map_err(|e| e.to_string())?;
        if plain.len() > MAX_RECORD {
            let size = plain.len();
            if let Some(task) = value.get_mut("task").and_then(Value::as_object_mut) {
                task.remove("result");
            }
            value["resultTooLarge"] = json!(size);
            plain = serde_json::to_vec(&value).map_err(|e| e.to_string())?;
        }
        self.seal
            .seal_record(key, &plain)
            .ok_or_else(|| "no randomness to seal it with".to_owned())
    }

    fn write(&self, record: &TaskRecord, refused: &mut HashSet<String>) -> Result<(), String> {
        if record.keep.is_zero() {
            return Ok(());
        }
        let key = self.task_key(&record.task.task_id);
        let stored = Stored {
            replica: self.replica.clone(),
            owner: record.owner.as_deref().map(str::to_owned),
            task: record.task.clone(),
            too_large: None,
        };
        let sealed = self.sealed(&key, &stored)?;
        let ended = self.ended_key(&record.task.task_id);
        let written = Self::write_record(
            &self.redis,
            [&key, &ended],
            &sealed,
            record.keep,
            record.task.status.is_terminal(),
        )
        .map_err(|e| e.to_string())?;
        if !written {
            // Another replica recorded the task ended first (failed, when this one's
            // heartbeat lapsed): that stands. Said once per task.
            let id = &record.task.task_id;
            if !refused.contains(id) {
                tracing::warn!(target: "mcp_gateway", "tasks: a task's change ({}) was not written for other replicas: another replica recorded it ended first (this replica's heartbeat had lapsed), and an ended task does not change", record.task.status);
                if refused.len() >= MAX_REFUSED {
                    refused.clear();
                }
                refused.insert(id.clone());
            }
            if record.task.status.is_terminal() {
                // Its last change here: nothing more of it comes to be refused.
                refused.remove(id);
            }
            return Ok(());
        }
        if let Some(owner) = stored.owner.as_ref().filter(|_| record.listed) {
            let index = self.index_key(owner);
            let member = digest(&record.task.task_id);
            let ttl = record
                .task
                .ttl_ms
                .unwrap_or_else(|| u64::try_from(record.keep.as_millis()).unwrap_or(u64::MAX))
                .max(1)
                .to_string();
            let tasks = format!("{}:task:", self.prefix);
            self.redis
                .eval(
                    LIST_TASK,
                    &[&index],
                    &[member.as_bytes(), ttl.as_bytes(), tasks.as_bytes()],
                )
                .map_err(|e| e.to_string())?;
        }
        Ok(())
    }

    /// The listener thread: cancels and updates other replicas relay here, for as long as
    /// the share lives; a broken subscription is made again.
    fn listen(
        share: &Weak<Self>,
        redis: &Redis,
        channel: &str,
        tasks: &Tasks,
        first: Option<Subscription>,
    ) {
        let what = "cancels and updates relayed by other replicas (tasks)";
        super::share::listen(
            redis,
            channel,
            what,
            first,
            || share.strong_count() > 0,
            |payload| match share.upgrade() {
                Some(share) => {
                    share.relayed(channel, payload, tasks);
                    true
                }
                None => false,
            },
        );
    }

    /// Acts on what another replica relayed: a cancel or an update of a task of this one.
    fn relayed(&self, channel: &str, payload: &[u8], tasks: &Tasks) {
        let Some(plain) = self.seal.open_record(channel, payload) else {
            return;
        };
        let Ok(message) = serde_json::from_slice::<Value>(&plain) else {
            return;
        };
        let Some(id) = message.get("id").and_then(Value::as_str) else {
            return;
        };
        match message.get("op").and_then(Value::as_str) {
            Some("cancel") => {
                tasks.cancel_relayed(id);
            }
            Some("update") => {
                let responses: BTreeMap<String, Value> = message
                    .get("responses")
                    .and_then(|r| serde_json::from_value(r.clone()).ok())
                    .unwrap_or_default();
                tasks.update_relayed(&UpdateTaskParams::new(id.to_owned(), responses));
            }
            _ => {}
        }
    }

    /// Relays `message` to `replica`: how many heard it (0: that replica is gone).
    async fn relay(&self, replica: &str, message: &Value) -> Result<i64, ErrorObject> {
        super::publish_sealed(&self.redis, &self.seal, self.channel(replica), message)
            .await
            .map_err(|e| store_error("PUBLISH", e))
    }

    /// The record of task `id`, if there is one this replica can open.
    async fn fetch(&self, id: &str) -> Result<Option<Stored>, ErrorObject> {
        let key = self.task_key(id);
        let redis = self.redis.clone();
        let read = key.clone();
        let Some(bytes) = blocking("GET", move || redis.get(&read)).await? else {
            return Ok(None);
        };
        Ok(self.open(&key, &bytes))
    }

    fn open(&self, key: &str, bytes: &[u8]) -> Option<Stored> {
        let plain = self.seal.open_record(key, bytes)?;
        let value: Value = serde_json::from_slice(&plain).ok()?;
        Some(Stored {
            replica: value.get("replica")?.as_str()?.to_owned(),
            owner: value
                .get("owner")
                .and_then(Value::as_str)
                .map(str::to_owned),
            task: serde_json::from_value(value.get("task")?.clone()).ok()?,
            too_large: value.get("resultTooLarge").and_then(Value::as_u64),
        })
    }

    /// Task `id` as its owner may see it: `None` when there is none, or it is another's.
    /// A task still running at a replica whose heartbeat lapsed is failed first (and so
    /// recorded).
    async fn visible(
        &self,
        id: &str,
        context: &RequestContext,
    ) -> Result<Option<Stored>, ErrorObject> {
        let Some(mut stored) = self.fetch(id).await? else {
            return Ok(None);
        };
        if !owns(&stored, context) {
            return Ok(None);
        }
        if !stored.task.status.is_terminal() && !self.alive(&stored.replica).await? {
            self.lapsed(id, &mut stored).await?;
        }
        Ok(Some(stored))
    }

    /// Whether `replica`'s heartbeat is there (this replica is alive, whatever it says).
    async fn alive(&self, replica: &str) -> Result<bool, ErrorObject> {
        if replica == self.replica {
            return Ok(true);
        }
        let (redis, key) = (self.redis.clone(), self.heartbeat_key(replica));
        Ok(blocking("GET", move || redis.get(&key)).await?.is_some())
    }

    /// Fails `stored`, whose replica stopped, and records it so (for what is left of its
    /// TTL), unless a terminal record was written meanwhile: then `stored` becomes that one.
    async fn lapsed(&self, id: &str, stored: &mut Stored) -> Result<(), ErrorObject> {
        let mut failed = stored.clone();
        failed.task.status = TaskStatus::Failed;
        failed.task.input_requests = None;
        failed.task.error = Some(TaskError::new(
            code::INTERNAL_ERROR,
            format!(
                "the gateway replica that ran this task stopped (no heartbeat for {} s); its work is lost",
                HEARTBEAT_TTL.as_secs()
            ),
        ));
        let (key, ended) = (self.task_key(id), self.ended_key(id));
        let sealed = self
            .sealed(&key, &failed)
            .map_err(|e| store_error("EVAL", e))?;
        let redis = self.redis.clone();
        let written = blocking("EVAL", move || {
            Self::write_record(&redis, [&key, &ended], &sealed, Duration::ZERO, true)
        })
        .await?;
        if written {
            *stored = failed;
        } else {
            // It ended first: that stands (or it expired: then it is failed, as before).
            *stored = self.fetch(id).await?.unwrap_or(failed);
        }
        Ok(())
    }

    /// Answers a `tasks/*` request for a task this replica does not hold; `None` when the
    /// store has none the caller may see (the local answer, unknown id, stands).
    async fn remote(
        &self,
        request: &ClientRequest,
        id: &str,
        context: &RequestContext,
    ) -> Option<Result<RawJson, ErrorObject>> {
        let stored = match self.visible(id, context).await {
            Ok(Some(stored)) => stored,
            Ok(None) => return None,
            Err(e) => return Some(Err(e)),
        };
        let stateless = context.era == Some(Era::Stateless);
        Some(match request {
            ClientRequest::GetTask(_) => get_answer(&stored, stateless),
            ClientRequest::CancelTask(_) => self.cancel(id, stored, stateless).await,
            ClientRequest::UpdateTask(p) => {
                let message = json!({"op": "update", "id": id, "responses": p.input_responses});
                match self.relay(&stored.replica, &message).await {
                    Ok(0) if !stored.task.status.is_terminal() => {
                        // Nobody listens there: the replica is gone, and the task with it,
                        // as for a cancel; the answer is an ended task's (responses ignored).
                        let mut stored = stored;
                        match self.lapsed(id, &mut stored).await {
                            Ok(()) => encode(&EmptyResult::new()),
                            Err(e) => Err(e),
                        }
                    }
                    Ok(_) => encode(&EmptyResult::new()),
                    Err(e) => Err(e),
                }
            }
            ClientRequest::GetTaskPayload(_) => self.payload(id, stored, context).await,
            _ => return None,
        })
    }

    async fn cancel(
        &self,
        id: &str,
        mut stored: Stored,
        stateless: bool,
    ) -> Result<RawJson, ErrorObject> {
        if !stored.task.status.is_terminal() {
            let heard = self
                .relay(&stored.replica, &json!({"op": "cancel", "id": id}))
                .await?;
            if heard > 0 {
                if stateless {
                    return encode(&EmptyResult::new());
                }
                // The answer says how the task ended: cancelled, or as it ended just before
                // the cancel reached it, once the running replica wrote it.
                if let Some(ended) = self.ended(id).await
                    && ended.task.status != TaskStatus::Cancelled
                {
                    stored = ended;
                } else {
                    let mut info = stored.task.info();
                    info.status = TaskStatus::Cancelled;
                    return encode(&ExperimentalTask::from_task(&info));
                }
            }
            // Nobody listens there: the replica is gone, and the task with it.
            self.lapsed(id, &mut stored).await?;
        }
        if stateless {
            // The extension makes cancelling an ended task an acknowledgement too.
            return encode(&EmptyResult::new());
        }
        Err(ErrorObject::new(
            code::INVALID_PARAMS,
            format!("task {id:?} has already ended ({})", stored.task.status),
        ))
    }

    /// Task `id` once its record reads a terminal status, looked at every [`CANCEL_POLL`]
    /// for [`CANCEL_WAIT`] at most; `None` when it did not end meanwhile or cannot be read.
    async fn ended(&self, id: &str) -> Option<Stored> {
        let deadline = tokio::time::Instant::now() + CANCEL_WAIT;
        while tokio::time::Instant::now() < deadline {
            match self.fetch(id).await {
                Ok(Some(stored)) if stored.task.status.is_terminal() => return Some(stored),
                Ok(Some(_)) => {}
                _ => return None,
            }
            tokio::time::sleep(CANCEL_POLL).await;
        }
        None
    }

    /// `tasks/result` (handshake era) for a task of another replica: polls the store at the
    /// task's suggested interval until it ends, and meanwhile sends the questions the record
    /// holds for the client (those the session's standalone stream did not take) on this
    /// request's stream, each once.
    async fn payload(
        &self,
        id: &str,
        mut stored: Stored,
        context: &RequestContext,
    ) -> Result<RawJson, ErrorObject> {
        let mut carried = HashSet::new();
        loop {
            carry(&stored, &context.peer, &mut carried);
            if stored.task.status == TaskStatus::Completed && stored.task.result.is_none() {
                return Err(too_large(&stored));
            }
            if let Some(answer) = mcp_session::ended_payload(
                id,
                &stored.task.status,
                stored.task.result.clone(),
                stored.task.error.as_ref(),
            ) {
                return answer;
            }
            let every = stored
                .task
                .poll_interval_ms
                .map_or(Duration::from_millis(500), Duration::from_millis)
                .clamp(Duration::from_millis(100), Duration::from_secs(5));
            tokio::time::sleep(every).await;
            stored = self
                .visible(id, context)
                .await?
                .ok_or_else(|| unknown(id))?;
        }
    }

    /// The session's tasks held by other replicas, beside `local` (this replica's).
    async fn list(&self, local: RawJson, context: &RequestContext) -> Result<RawJson, ErrorObject> {
        let Some(owner) = context.session_name.as_deref().map(str::to_owned) else {
            return Ok(local);
        };
        let mut listed: ExperimentalListTasksResult = local
            .decode()
            .map_err(|e| ErrorObject::new(code::INTERNAL_ERROR, e.to_string()))?;
        let (redis, index) = (self.redis.clone(), self.index_key(&owner));
        let tasks = format!("{}:task:", self.prefix);
        let found = blocking("SMEMBERS", move || {
            let members = match redis.command(&[b"SMEMBERS", index.as_bytes()])? {
                Reply::Array(Some(members)) => members,
                _ => return Ok(Vec::new()),
            };
            let keys: Vec<String> = members
                .into_iter()
                .filter_map(|m| match m {
                    Reply::Bulk(Some(m)) => String::from_utf8(m).ok(),
                    _ => None,
                })
                .map(|m| format!("{tasks}{m}"))
                .collect();
            if keys.is_empty() {
                return Ok(Vec::new());
            }
            let mut args: Vec<&[u8]> = vec![b"MGET"];
            args.extend(keys.iter().map(|k| k.as_bytes()));
            let values = match redis.command(&args)? {
                Reply::Array(Some(values)) => values,
                _ => Vec::new(),
            };
            let mut found = Vec::new();
            let mut gone: Vec<&[u8]> = vec![b"SREM", index.as_bytes()];
            for (key, value) in keys.iter().zip(values) {
                match value {
                    Reply::Bulk(Some(bytes)) => found.push((key.clone(), bytes)),
                    // Expired: it leaves the session's set.
                    _ => gone.extend(key.strip_prefix(&tasks).map(str::as_bytes)),
                }
            }
            if gone.len() > 2 {
                redis.command(&gone)?;
            }
            Ok(found)
        })
        .await?;
        for (key, bytes) in found {
            let Some(stored) = self.open(&key, &bytes) else {
                continue;
            };
            let known = listed
                .tasks
                .iter()
                .any(|t| t.task_id == stored.task.task_id);
            if stored.owner.as_deref() == Some(owner.as_str()) && !known {
                listed
                    .tasks
                    .push(ExperimentalTask::from_task(&stored.task.info()));
            }
        }
        listed.tasks.sort_by(|a, b| a.created_at.cmp(&b.created_at));
        encode(&listed)
    }
}

#[cfg(test)]
mod tests;
