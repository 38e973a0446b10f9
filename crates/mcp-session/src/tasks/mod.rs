//! Tasks on the server side: a [`Handler`](crate::Handler) answers a request with "this runs
//! as a task" ([`Tasks::create`]), and the runtime keeps the task, answers `tasks/*` for it
//! ([`Tasks::answer`]) and tells the client when its status changes.
//!
//! A server keeps one [`Tasks`] (cloneable; clones share the store) in its handler, and
//! serves both forms the protocol has had, by the era of the request that asks:
//!
//! - 2026-07-28, the extension `io.modelcontextprotocol/tasks` (SEP-2663): a `tools/call`
//!   whose request declared the extension in its `_meta` client capabilities may be answered
//!   with the flat `CreateTaskResult`; `tasks/get` inlines the result, the error or the
//!   pending input requests; `tasks/update` delivers input responses; `tasks/cancel` is an
//!   empty acknowledgement, also for a task already finished. A request that did not declare
//!   the extension gets -32021 naming it, and `tasks/result` and `tasks/list` get -32601.
//!   Task ids are 128 random bits from the OS generator: the era has no session, so knowing
//!   the id is what lets a client see the task, unless the transport authenticated its
//!   caller ([`RequestContext::session_name`]): then it is that caller's alone, as the spec
//!   binds tasks to the authorization context.
//! - 2025-11-25 experimental tasks: a request made with a `task` member may be answered with
//!   `{task}`; `tasks/get`, `tasks/result` (waits for a terminal status), `tasks/list` and
//!   `tasks/cancel` see only the tasks of the session that made them, and
//!   `notifications/tasks/status` goes to that session on each status change, as progress
//!   does (with the original request's token) until the task ends.
//!
//! ```text
//!            +--> input_required --+
//!            |          ^          |
//!   working -+----------+----------+--> completed | failed | cancelled
//! ```
//!
//! A task's work returning `Ok` completes it (a tool error is a completed task whose result
//! says `isError`); returning `Err`, or panicking, fails it with that JSON-RPC error;
//! `tasks/cancel` aborts the work and the task is cancelled. A terminal task never changes
//! again. A task is kept for its TTL from creation and never less (it is then forgotten and,
//! if still running, aborted); the store is bounded: when it holds its capacity of live
//! tasks a new one is refused (-32603) rather than an old one dropped before its time.

mod context;
mod mirror;
mod questions;
#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use mcp_protocol::schema::{
    ClientRequest, CreateTaskResult, DetailedTask, EmptyResult, ExperimentalCreateTaskResult,
    ExperimentalListTasksResult, ExperimentalTask, InputRequest, ProgressToken,
    RELATED_TASK_META_KEY, TASKS_EXTENSION_ID, TaskError, TaskInfo, TaskStatus,
    capabilities_declare_tasks,
};
use mcp_protocol::{Era, ErrorObject, JsonObject, RawJson, code, missing_capability_error};
use serde_json::{Value, json};
use tokio::sync::watch;
use tokio::task::AbortHandle;
use tokio::time::Instant;

use crate::server::{Peer, RequestContext, SessionKey};

pub use context::TaskContext;
pub use mirror::{TaskMirror, TaskRecord};

/// How a server keeps its tasks: [`Tasks::new`].
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct TaskOptions {
    ttl: Duration,
    poll_interval: Duration,
    capacity: usize,
}

impl Default for TaskOptions {
    fn default() -> Self {
        Self {
            ttl: Duration::from_secs(600),
            poll_interval: Duration::from_millis(500),
            capacity: 1024,
        }
    }
}

impl TaskOptions {
    /// Ten minutes of retention, polling every 500 ms suggested, 1,024 live tasks at most.
    pub fn new() -> Self {
        Self::default()
    }

    /// How long a task is kept after its creation (its `ttlMs`); a client may rely on it.
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.ttl = ttl;
        self
    }

    /// The polling interval suggested to clients (`pollIntervalMs`).
    pub fn poll_interval(mut self, interval: Duration) -> Self {
        self.poll_interval = interval;
        self
    }

    /// How many tasks may be kept at once, so that clients cannot grow the store without end.
    pub fn capacity(mut self, capacity: usize) -> Self {
        self.capacity = capacity;
        self
    }
}

/// A server's tasks: create them from a handler, answer `tasks/*` with them. Clones share one
/// store, so a handler serving many sessions (HTTP) keeps one.
///
/// A server whose `build` tool may take long runs it as a task: it answers at once, and the
/// client polls `tasks/get` for the result instead of holding a request open. (The server's
/// capabilities declare `tasks` or the extension `io.modelcontextprotocol/tasks`, or the
/// session refuses `tasks/*` before the handler sees them.)
///
/// ```
/// use mcp_protocol::schema::{CallToolResult, ClientRequest, ContentBlock};
/// use mcp_protocol::{ErrorObject, RawJson, code};
/// use mcp_session::{Handler, RequestContext, TaskContext, Tasks};
///
/// #[derive(Default)]
/// struct Builder {
///     tasks: Tasks,
/// }
///
/// impl Handler for Builder {
///     async fn handle(
///         &self,
///         request: ClientRequest,
///         context: RequestContext,
///     ) -> Result<RawJson, ErrorObject> {
///         if let Some(answer) = self.tasks.answer(&request, &context).await {
///             return answer;
///         }
///         match request {
///             ClientRequest::CallTool(call) if call.name == "build" => {
///                 let work = |task: TaskContext| async move {
///                     task.progress(1, Some(2), Some("compiling"));
///                     let done = CallToolResult::new(vec![ContentBlock::text("built")]);
///                     RawJson::encode(&done)
///                         .map_err(|e| ErrorObject::new(code::INTERNAL_ERROR, e.to_string()))
///                 };
///                 if Tasks::accepts(&context, call.task.as_ref()) {
///                     self.tasks.create(&context, work)
///                 } else {
///                     // `taskSupport: "required"`: this client cannot run it (-32021).
///                     Err(Tasks::required_error())
///                 }
///             }
///             _ => Err(ErrorObject::new(code::METHOD_NOT_FOUND, "not here".into())),
///         }
///     }
/// }
/// ```
#[derive(Clone)]
pub struct Tasks {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Tasks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tasks")
            .field("options", &self.shared.options)
            .finish_non_exhaustive()
    }
}

impl Default for Tasks {
    fn default() -> Self {
        Self::new(TaskOptions::default())
    }
}

struct Shared {
    options: TaskOptions,
    store: Mutex<HashMap<String, Entry>>,
    /// Where each change of a task is told, for other replicas ([`Tasks::mirror_to`]).
    mirror: OnceLock<Arc<dyn TaskMirror>>,
}

/// One task as the store keeps it.
struct Entry {
    /// The handshake session that made it, which alone may see it; `None` in the stateless
    /// era, where the id is the only key.
    owner: Option<SessionKey>,
    /// That session's name among replicas ([`RequestContext::session_name`]), if it has one;
    /// in the stateless era, the authenticated caller's, which alone may then see the task.
    owner_name: Option<Arc<str>>,
    status: TaskStatus,
    status_message: Option<String>,
    created_at: String,
    last_updated_at: String,
    expires: Instant,
    result: Option<JsonObject>,
    error: Option<TaskError>,
    /// Input requests not answered yet, by key.
    pending: BTreeMap<String, InputRequest>,
    /// A handshake task's questions sent to its client and not answered yet, by key, with
    /// the streams that carried each (`questions/mod.rs`).
    questions: BTreeMap<String, questions::Question>,
    /// Answers not taken by the work yet, by key.
    answers: BTreeMap<String, Value>,
    /// Bumped on every change, for whoever waits on the task (input, `tasks/result`).
    changed: watch::Sender<u64>,
    abort: Option<AbortHandle>,
    /// The handshake session, for status notifications and progress.
    peer: Option<Peer>,
    /// The latest `tasks/result` waiting on the task (handshake era): the task's requests to
    /// the client go on its stream.
    result_waiter: Option<Peer>,
    progress_token: Option<ProgressToken>,
}

impl Entry {
    /// Moves to `to`; a terminal task never moves, and nothing moves back to `working` but
    /// from `input_required`. Returns whether it moved.
    fn transition(&mut self, to: TaskStatus) -> bool {
        let allowed = match (&self.status, &to) {
            (from, _) if from.is_terminal() => false,
            (TaskStatus::Working, TaskStatus::InputRequired)
            | (TaskStatus::InputRequired, TaskStatus::Working) => true,
            (_, to) => to.is_terminal(),
        };
        if allowed {
            self.status = to;
            self.last_updated_at = timestamp(SystemTime::now());
            self.changed.send_modify(|n| *n += 1);
        }
        allowed
    }

    /// The task's members both eras show, each era writing them in its own names.
    fn info(&self, id: &str, ttl: Duration, poll: Duration) -> TaskInfo {
        let mut task = TaskInfo::new(
            id.to_owned(),
            self.status.clone(),
            self.created_at.clone(),
            self.last_updated_at.clone(),
        );
        task.ttl_ms = Some(millis(ttl));
        task.poll_interval_ms = Some(millis(poll));
        task.status_message = self.status_message.clone();
        task
    }

    fn experimental(&self, id: &str, ttl: Duration, poll: Duration) -> ExperimentalTask {
        ExperimentalTask::from_task(&self.info(id, ttl, poll))
    }

    fn detailed(&self, id: &str, ttl: Duration, poll: Duration) -> DetailedTask {
        let mut task = DetailedTask::from_task(&self.info(id, ttl, poll));
        match self.status {
            TaskStatus::Completed => task.result = self.result.clone(),
            TaskStatus::Failed => task.error = self.error.clone(),
            // A handshake client is asked by requests of their own: what its record shows
            // is those the standalone stream did not take, for a `tasks/result` elsewhere.
            TaskStatus::InputRequired if self.owner.is_some() => {
                task.input_requests = Some(self.held_questions());
            }
            TaskStatus::InputRequired => task.input_requests = Some(self.pending.clone()),
            _ => {}
        }
        task
    }
}

/// Who asks, as the store needs it: built from a [`RequestContext`].
#[derive(Debug, Clone)]
pub(crate) struct Caller {
    pub(crate) stateless: bool,
    pub(crate) session: SessionKey,
    pub(crate) declares_extension: bool,
    pub(crate) peer: Option<Peer>,
    /// The peer tied to the request itself (handshake era), for what goes on its stream.
    pub(crate) request_peer: Option<Peer>,
    pub(crate) progress_token: Option<ProgressToken>,
    /// The session's name among replicas, or the authenticated caller's in the stateless era.
    pub(crate) name: Option<Arc<str>>,
}

impl Caller {
    pub(crate) fn of(context: &RequestContext) -> Self {
        let stateless = context.era == Some(Era::Stateless);
        let declares_extension = context
            .client
            .as_ref()
            .is_some_and(|c| capabilities_declare_tasks(&c.capabilities));
        Self {
            stateless,
            session: context.session,
            declares_extension,
            peer: (!stateless).then(|| context.peer.unrelated()),
            request_peer: (!stateless).then(|| context.peer.clone()),
            progress_token: context.progress_token.clone(),
            name: context.session_name.clone(),
        }
    }

    fn owner(&self) -> Option<SessionKey> {
        (!self.stateless).then_some(self.session)
    }
}

impl Tasks {
    /// An empty store.
    pub fn new(options: TaskOptions) -> Self {
        Self {
            shared: Arc::new(Shared {
                options,
                store: Mutex::new(HashMap::new()),
                mirror: OnceLock::new(),
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, Entry>> {
        let mut store = self
            .shared
            .store
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let now = Instant::now();
        store.retain(|_, entry| {
            let keep = entry.expires > now;
            if !keep && let Some(abort) = &entry.abort {
                abort.abort();
            }
            keep
        });
        store
    }

    /// Whether the request in `context` may be answered with a task: in the stateless era
    /// when it declared the tasks extension, in the handshake era when its params carried a
    /// `task` member (`task_param`; the requester asks for tasks there).
    pub fn accepts(context: &RequestContext, task_param: Option<&JsonObject>) -> bool {
        if context.era == Some(Era::Stateless) {
            Caller::of(context).declares_extension
        } else {
            task_param.is_some()
        }
    }

    /// The error for a request that can be served only as a task but did not declare the
    /// tasks extension: -32021 with `requiredCapabilities.extensions` naming it.
    pub fn required_error() -> ErrorObject {
        let mut missing = JsonObject::new();
        missing.insert("extensions".to_owned(), json!({ TASKS_EXTENSION_ID: {} }));
        missing_capability_error(missing)
    }

    /// Runs `work` as a task for the request in `context` and returns the result that
    /// announces it (the flat `CreateTaskResult` in the stateless era, `{task}` in the
    /// handshake era). The task exists before this returns, so a `tasks/get` that follows
    /// at once finds it. Refused (-32603) when the store is full. Must be called within a
    /// tokio runtime: the work runs in a task of its own.
    pub fn create<F, Fut>(&self, context: &RequestContext, work: F) -> Result<RawJson, ErrorObject>
    where
        F: FnOnce(TaskContext) -> Fut,
        Fut: Future<Output = Result<RawJson, ErrorObject>> + Send + 'static,
    {
        self.create_for(&Caller::of(context), work)
    }

    pub(crate) fn create_for<F, Fut>(
        &self,
        caller: &Caller,
        work: F,
    ) -> Result<RawJson, ErrorObject>
    where
        F: FnOnce(TaskContext) -> Fut,
        Fut: Future<Output = Result<RawJson, ErrorObject>> + Send + 'static,
    {
        let internal = |message: String| ErrorObject::new(code::INTERNAL_ERROR, message);
        let id = self.mint()?;
        let options = &self.shared.options;
        let announced = {
            let mut store = self.lock();
            if store.len() >= options.capacity {
                return Err(internal(format!(
                    "this server holds its limit of {} tasks; try again later",
                    options.capacity
                )));
            }
            let now = timestamp(SystemTime::now());
            let (changed, _) = watch::channel(0);
            let entry = Entry {
                owner: caller.owner(),
                owner_name: caller.name.clone(),
                status: TaskStatus::Working,
                status_message: None,
                created_at: now.clone(),
                last_updated_at: now,
                expires: Instant::now() + options.ttl,
                result: None,
                error: None,
                pending: BTreeMap::new(),
                questions: BTreeMap::new(),
                answers: BTreeMap::new(),
                changed,
                abort: None,
                peer: caller.peer.clone(),
                result_waiter: None,
                progress_token: caller.progress_token.clone(),
            };
            let announced = if caller.stateless {
                let info = entry.info(&id, options.ttl, options.poll_interval);
                RawJson::encode(&CreateTaskResult::from_task(&info))
            } else {
                let task = entry.experimental(&id, options.ttl, options.poll_interval);
                RawJson::encode(&ExperimentalCreateTaskResult::new(task))
            }
            .map_err(|e| internal(e.to_string()))?;
            self.mirror(&id, &entry);
            store.insert(id.clone(), entry);
            announced
        };
        let context = TaskContext {
            id: id.clone(),
            tasks: self.clone(),
        };
        let running = tokio::spawn(work(context));
        let abort = running.abort_handle();
        if let Some(entry) = self.lock().get_mut(&id) {
            entry.abort = Some(abort);
        }
        let tasks = self.clone();
        tokio::spawn(async move {
            let outcome = match running.await {
                Ok(outcome) => outcome,
                // Cancelled: the task already says so.
                Err(e) if e.is_cancelled() => return,
                Err(_) => Err(internal(
                    "the server's task failed (its work panicked)".to_owned(),
                )),
            };
            tasks.finish(&id, outcome);
        });
        Ok(announced)
    }

    /// A fresh id: 128 bits from the OS generator, in hex.
    fn mint(&self) -> Result<String, ErrorObject> {
        let mut bytes = [0u8; 16];
        getrandom::getrandom(&mut bytes).map_err(|_| {
            ErrorObject::new(
                code::INTERNAL_ERROR,
                "the OS random generator failed; no task id".to_owned(),
            )
        })?;
        Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
    }

    /// The work ended: the task completes with its result or fails with its error, unless it
    /// already ended (cancelled).
    fn finish(&self, id: &str, outcome: Result<RawJson, ErrorObject>) {
        let mut store = self.lock();
        let Some(entry) = store.get_mut(id) else {
            return;
        };
        let status = match outcome.map(|raw| raw.decode::<JsonObject>()) {
            Ok(Ok(result)) => {
                entry.result = Some(result);
                TaskStatus::Completed
            }
            Ok(Err(e)) => {
                entry.error = Some(TaskError::new(
                    code::INTERNAL_ERROR,
                    format!("the task's result is not a JSON object: {e}"),
                ));
                TaskStatus::Failed
            }
            Err(error) => {
                let mut failed = TaskError::new(error.code, error.message);
                failed.data = error.data;
                entry.error = Some(failed);
                TaskStatus::Failed
            }
        };
        entry.pending.clear();
        if entry.transition(status) {
            self.announce(id, entry);
        }
    }

    /// Tells the owning handshake session that a task's status changed, and the mirror.
    fn announce(&self, id: &str, entry: &Entry) {
        self.mirror(id, entry);
        let Some(peer) = &entry.peer else {
            return;
        };
        let options = &self.shared.options;
        let task = entry.experimental(id, options.ttl, options.poll_interval);
        if let Ok(raw) = RawJson::encode(&task) {
            let _ = peer.notify("notifications/tasks/status", Some(raw));
        }
    }

    /// A task's status, if the store has it: for a server that reports on its own tasks.
    pub fn status(&self, id: &str) -> Option<TaskStatus> {
        self.lock().get(id).map(|e| e.status.clone())
    }

    /// Answers a `tasks/*` request; `None` for any other request, which the handler answers
    /// itself: a handler that creates tasks calls this first (see [`Tasks`]).
    pub async fn answer(
        &self,
        request: &ClientRequest,
        context: &RequestContext,
    ) -> Option<Result<RawJson, ErrorObject>> {
        self.answer_for(request, &Caller::of(context)).await
    }

    pub(crate) async fn answer_for(
        &self,
        request: &ClientRequest,
        caller: &Caller,
    ) -> Option<Result<RawJson, ErrorObject>> {
        let (method, id) = match request {
            ClientRequest::GetTask(p) => ("tasks/get", &p.task_id),
            ClientRequest::UpdateTask(p) => ("tasks/update", &p.task_id),
            ClientRequest::CancelTask(p) => ("tasks/cancel", &p.task_id),
            ClientRequest::GetTaskPayload(p) => ("tasks/result", &p.task_id),
            ClientRequest::ListTasks(_) => ("tasks/list", &String::new()),
            _ => return None,
        };
        if caller.stateless {
            if matches!(method, "tasks/result" | "tasks/list") {
                return Some(Err(ErrorObject::new(
                    code::METHOD_NOT_FOUND,
                    format!("Method not found: {method} (the tasks extension removed it)"),
                )));
            }
            if !caller.declares_extension {
                return Some(Err(Self::required_error()));
            }
        }
        let encode = |r: Result<RawJson, serde_json::Error>| {
            r.map_err(|e| ErrorObject::new(code::INTERNAL_ERROR, e.to_string()))
        };
        let answer = match request {
            ClientRequest::GetTask(_) => self.get(id, caller).and_then(encode),
            ClientRequest::UpdateTask(p) => {
                self.update(id, caller, &p.input_responses).and_then(encode)
            }
            ClientRequest::CancelTask(_) => self.cancel(id, caller).and_then(encode),
            ClientRequest::GetTaskPayload(_) => self.payload(id, caller).await,
            _ => self.list(caller).and_then(encode),
        };
        Some(answer)
    }

    /// The entry `id` if `caller` may see it; -32602 otherwise, as for an id never issued.
    fn visible<'a>(
        store: &'a mut HashMap<String, Entry>,
        id: &str,
        caller: &Caller,
    ) -> Result<&'a mut Entry, ErrorObject> {
        match store.get_mut(id) {
            // A handshake session's task is its own; a stateless one is its authenticated
            // caller's, or anyone's who knows the id when nobody was.
            Some(entry)
                if entry.owner.is_some() && entry.owner == caller.owner()
                    || entry.owner.is_none() && entry.owner_name == caller.name =>
            {
                Ok(entry)
            }
            _ => Err(ErrorObject::new(
                code::INVALID_PARAMS,
                format!("unknown task id {id:?} (never issued here, or expired)"),
            )),
        }
    }

    fn get(
        &self,
        id: &str,
        caller: &Caller,
    ) -> Result<Result<RawJson, serde_json::Error>, ErrorObject> {
        let options = &self.shared.options;
        let mut store = self.lock();
        let entry = Self::visible(&mut store, id, caller)?;
        Ok(if caller.stateless {
            let mut task = entry.detailed(id, options.ttl, options.poll_interval);
            task.result_type = Some("complete".to_owned());
            RawJson::encode(&task)
        } else {
            RawJson::encode(&entry.experimental(id, options.ttl, options.poll_interval))
        })
    }

    fn update(
        &self,
        id: &str,
        caller: &Caller,
        responses: &BTreeMap<String, Value>,
    ) -> Result<Result<RawJson, serde_json::Error>, ErrorObject> {
        let mut store = self.lock();
        let entry = Self::visible(&mut store, id, caller)?;
        let mut answered = false;
        for (key, value) in responses {
            // An answer to nothing pending (unknown, or already answered) is ignored.
            if entry.pending.remove(key).is_some() {
                entry.answers.insert(key.clone(), value.clone());
                answered = true;
            }
        }
        if answered {
            if entry.pending.is_empty() {
                if entry.transition(TaskStatus::Working) {
                    self.announce(id, entry);
                }
            } else {
                entry.changed.send_modify(|n| *n += 1);
                self.mirror(id, entry);
            }
        }
        Ok(RawJson::encode(&EmptyResult::new()))
    }

    fn cancel(
        &self,
        id: &str,
        caller: &Caller,
    ) -> Result<Result<RawJson, serde_json::Error>, ErrorObject> {
        let options = &self.shared.options;
        let mut store = self.lock();
        let entry = Self::visible(&mut store, id, caller)?;
        if entry.status.is_terminal() {
            if caller.stateless {
                // The extension makes cancelling an ended task an acknowledgement too.
                return Ok(RawJson::encode(&EmptyResult::new()));
            }
            return Err(ErrorObject::new(
                code::INVALID_PARAMS,
                format!("task {id:?} has already ended ({})", entry.status),
            ));
        }
        if let Some(abort) = &entry.abort {
            abort.abort();
        }
        entry.pending.clear();
        entry.transition(TaskStatus::Cancelled);
        self.announce(id, entry);
        Ok(if caller.stateless {
            RawJson::encode(&EmptyResult::new())
        } else {
            RawJson::encode(&entry.experimental(id, options.ttl, options.poll_interval))
        })
    }

    /// `tasks/result` (2025-11-25): waits for a terminal status, then answers what the
    /// original request would have, tied to the task by the related-task `_meta`.
    async fn payload(&self, id: &str, caller: &Caller) -> Result<RawJson, ErrorObject> {
        let mut changed = {
            let mut store = self.lock();
            let entry = Self::visible(&mut store, id, caller)?;
            let changed = entry.changed.subscribe();
            if caller.request_peer.is_some() {
                // The task's requests to the client may go on this request's stream now.
                entry.result_waiter = caller.request_peer.clone();
                entry.changed.send_modify(|n| *n += 1);
            }
            changed
        };
        let _waiting = questions::Waiting {
            tasks: self,
            id,
            by: caller
                .request_peer
                .as_ref()
                .and_then(|p| p.related().cloned()),
        };
        loop {
            {
                let mut store = self.lock();
                let entry = Self::visible(&mut store, id, caller)?;
                // The questions the standalone stream did not take go on this one.
                if let Some(waiter) = &caller.request_peer {
                    entry.carry_held(waiter);
                }
                if let Some(answer) = ended_payload(
                    id,
                    &entry.status,
                    Some(entry.result.clone().unwrap_or_default()),
                    entry.error.as_ref(),
                ) {
                    return answer;
                }
            }
            if changed.changed().await.is_err() {
                return Err(ErrorObject::new(
                    code::INVALID_PARAMS,
                    format!("unknown task id {id:?} (expired)"),
                ));
            }
        }
    }

    fn list(&self, caller: &Caller) -> Result<Result<RawJson, serde_json::Error>, ErrorObject> {
        let options = &self.shared.options;
        let store = self.lock();
        let mut tasks: Vec<ExperimentalTask> = store
            .iter()
            .filter(|(_, e)| e.owner.is_some() && e.owner == caller.owner())
            .map(|(id, e)| e.experimental(id, options.ttl, options.poll_interval))
            .collect();
        tasks.sort_by(|a, b| a.created_at.cmp(&b.created_at));
        Ok(RawJson::encode(&ExperimentalListTasksResult::new(tasks)))
    }
}

/// Milliseconds, saturating.
fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// An ISO 8601 UTC timestamp with milliseconds, as `createdAt` and `lastUpdatedAt` carry.
/// `tasks/result`'s answer for a task that has ended as `status`: its `result` with the
/// related-task meta added, its error, or the error of a cancelled task; `None` while it has
/// not ended. One answer wherever a task is read, so that a replica answering for another's
/// task (the gateway's shared tasks) answers as the replica that ran it.
pub fn ended_payload(
    id: &str,
    status: &TaskStatus,
    result: Option<JsonObject>,
    error: Option<&TaskError>,
) -> Option<Result<RawJson, ErrorObject>> {
    match status {
        TaskStatus::Completed => {
            let mut result = result.unwrap_or_default();
            let meta = result
                .entry("_meta")
                .or_insert_with(|| Value::Object(JsonObject::new()));
            if let Value::Object(meta) = meta {
                meta.insert(RELATED_TASK_META_KEY.to_owned(), json!({"taskId": id}));
            }
            Some(
                RawJson::encode(&result)
                    .map_err(|e| ErrorObject::new(code::INTERNAL_ERROR, e.to_string())),
            )
        }
        TaskStatus::Failed => {
            let error = error.cloned().unwrap_or_else(|| {
                TaskError::new(code::INTERNAL_ERROR, "the task failed".to_owned())
            });
            let mut object = ErrorObject::new(error.code, error.message);
            object.data = error.data;
            Some(Err(object))
        }
        TaskStatus::Cancelled => Some(Err(ErrorObject::new(
            code::INTERNAL_ERROR,
            format!("task {id:?} was cancelled"),
        ))),
        _ => None,
    }
}

pub(crate) fn timestamp(at: SystemTime) -> String {
    let since = at.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = since.as_secs();
    let days = i64::try_from(secs / 86_400).unwrap_or(0);
    let rem = secs % 86_400;
    // Days since 1970-01-01 to a civil date (the proleptic Gregorian calendar).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3_600,
        rem % 3_600 / 60,
        rem % 60,
        since.subsec_millis()
    )
}
