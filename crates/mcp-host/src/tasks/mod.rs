//! The host as a task client: a tool call that outlives a request, run as a task the server
//! keeps, polled until it ends, in both forms the protocol has had.
//!
//! - 2025-11-25 (experimental tasks): a server that declares `tasks.requests.tools.call` is
//!   sent `tools/call` with a `task` member, answers `{task}`, and is polled with `tasks/get`;
//!   the result comes from `tasks/result` (which also carries the server's requests while the
//!   task needs input, answered like any server request), `tasks/cancel` stops it.
//! - 2026-07-28 (the extension `io.modelcontextprotocol/tasks`): the call declares the
//!   extension in its per-request capabilities and the server decides whether to answer with
//!   a task (`resultType: "task"`); `tasks/get` inlines the result, the error, or the input
//!   requests, which the host answers through its request handler and sends with
//!   `tasks/update`; `tasks/cancel` asks the server to stop.
//!
//! A tool whose `execution.taskSupport` is `required` always runs as a task; an `optional`
//! one when its server's `optional_tools_as_tasks` says so, or when the caller's wait
//! ([`CallOptions::timeout`](crate::CallOptions::timeout)) is longer than the server's
//! request timeout, which a plain call could not outlive. The host polls at the interval
//! the server suggests, bounded to [`MIN_POLL`]..[`MAX_POLL`], reports each status change on
//! the call's progress channel and as a [`HostEvent::Task`](crate::HostEvent::Task), and sends
//! `tasks/cancel` when the call's future is dropped. A call that reaches the host's
//! `max_call_duration` leaves its task running and says how to fetch the result later.
//!
//! Every task is kept in a [`TaskRecord`] (on disk with
//! [`HostOptions::task_file`](crate::HostOptions::task_file)), so that another process, such
//! as `mcp-host tasks`, can ask about it, and a host that connects to a server asks again
//! about that server's unfinished tasks.

pub(crate) mod store;

#[cfg(test)]
use std::collections::BTreeMap;
use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mcp_protocol::schema::{
    CallToolParams, CallToolResult, CreateTaskResult, DetailedTask, ExperimentalCreateTaskResult,
    ExperimentalListTasksResult, ExperimentalTask, ExperimentalTasksCapability, ProgressParams,
    ProgressToken, ServerCapabilities, TASKS_EXTENSION_ID, TaskStatus, TaskSupport, Tool,
    is_input_required, meta_key,
};
use mcp_protocol::{Era, JsonObject, RawJson, RequestOptions, ServerInfo};
use mcp_session::Client;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::Relayed;
use crate::catalog::clean_text;
use crate::error::CallError;
use crate::events::HostEvent;
use crate::shared::Inner;

mod input;
mod seen;
pub(crate) mod status;

#[cfg(test)]
use seen::{DEFAULT_POLL, MIN_POLL};
use seen::{MAX_POLL, Seen, requested_ttl};
pub(crate) use store::TASKS_FILE_NAME;
pub use store::TaskRecord;

/// Whether the server runs `tools/call` as a task in the era it speaks: 2025-11-25's
/// `tasks.requests.tools.call`, or 2026-07-28's extension under `capabilities.extensions`.
pub(crate) fn server_runs_tasks(info: &ServerInfo) -> bool {
    runs_tasks(info.era, &info.capabilities)
}

fn runs_tasks(era: Era, capabilities: &ServerCapabilities) -> bool {
    match era {
        Era::Handshake => capabilities
            .tasks
            .as_ref()
            .and_then(|t| serde_json::from_value::<ExperimentalTasksCapability>(json!(t)).ok())
            .is_some_and(|t| t.supports_tool_calls()),
        _ => serde_json::to_value(capabilities)
            .ok()
            .and_then(|v| v.as_object().cloned())
            .is_some_and(|c| mcp_protocol::schema::declares_tasks_extension(&c)),
    }
}

/// A tool's `execution.taskSupport`; absent (or a value this host does not know) is
/// `forbidden`.
pub(crate) fn task_support(tool: &Tool) -> TaskSupport {
    match tool
        .execution
        .as_ref()
        .and_then(|e| e.task_support.as_deref())
    {
        Some("required") => TaskSupport::Required,
        Some("optional") => TaskSupport::Optional,
        _ => TaskSupport::Forbidden,
    }
}

/// Whether a call of a tool with `support` on `entry`'s server runs as a task: never unless
/// the server runs tasks; always when the tool requires it; for an optional one, when the
/// server's entry says so, the caller asks (`asked`), or the caller waits (`wait`) longer
/// than its request timeout.
pub(crate) fn wants_task(
    entry: &crate::entry::ServerEntry,
    support: &TaskSupport,
    wait: Option<Duration>,
    asked: bool,
    info: &ServerInfo,
) -> bool {
    server_runs_tasks(info)
        && (wants(entry, support, wait) || (asked && *support == TaskSupport::Optional))
}

/// [`wants_task`] for a server that runs tasks.
fn wants(entry: &crate::entry::ServerEntry, support: &TaskSupport, wait: Option<Duration>) -> bool {
    match support {
        TaskSupport::Required => true,
        TaskSupport::Optional => {
            entry.optional_tools_as_tasks || wait.is_some_and(|w| w > entry.request_timeout)
        }
        _ => false,
    }
}

/// Who runs one call, and for whom: the server, the tool (for messages), the connection and
/// the caller's progress channel.
pub(crate) struct TaskCall<'a> {
    pub(crate) inner: &'a Arc<Inner>,
    pub(crate) server: &'a str,
    pub(crate) tool: &'a str,
    pub(crate) client: Client,
    /// How long one request may wait (the server's request timeout, or the caller's).
    pub(crate) idle: Duration,
    pub(crate) progress: Option<mpsc::UnboundedSender<ProgressParams>>,
    pub(crate) related: Option<u64>,
}

impl TaskCall<'_> {
    fn era(&self) -> Era {
        self.client.server_info().era
    }

    /// An error about this call's task in `phase`, naming the server, the tool and the task.
    fn failed(&self, task_id: Option<&str>, phase: &str, message: String) -> CallError {
        self.inner.shown(CallError::Failed {
            server: self.server.to_owned(),
            what: self.what(task_id, phase),
            message,
        })
    }

    fn what(&self, task_id: Option<&str>, phase: &str) -> String {
        match task_id {
            Some(id) => format!("{} (task {}, {phase})", self.tool, clean_text(id, 128)),
            None => format!("{} (as a task, {phase})", self.tool),
        }
    }

    fn session_error(
        &self,
        task_id: Option<&str>,
        phase: &str,
        e: mcp_session::Error,
    ) -> CallError {
        self.inner
            .session_error(self.server, &self.what(task_id, phase), e)
    }

    /// Sends a task method (`tasks/get`, `tasks/result`, `tasks/update`, `tasks/cancel`)
    /// with the per-request capabilities 2026-07-28 needs.
    async fn send(
        &self,
        method: &str,
        mut params: JsonObject,
        task_id: &str,
        phase: &str,
        timeout: Duration,
    ) -> Result<RawJson, CallError> {
        if self.era() != Era::Handshake {
            declare_extension(&mut params, self.inner);
        }
        let encoded = RawJson::encode(&params)
            .map_err(|e| self.failed(Some(task_id), phase, e.to_string()))?;
        let options = RequestOptions::DEFAULT
            .timeout(timeout)
            .idle_timeout(timeout);
        self.client
            .request_raw_tagged(method, Some(encoded), options, None, self.related)
            .await
            .map_err(|e| self.session_error(Some(task_id), phase, e))
    }

    /// `tasks/get`, read in the era's shape.
    async fn get(&self, task_id: &str) -> Result<Seen, CallError> {
        let raw = self
            .send(
                "tasks/get",
                id_params(task_id),
                task_id,
                "tasks/get",
                self.idle,
            )
            .await?;
        let decoded = match self.era() {
            Era::Handshake => raw
                .decode::<ExperimentalTask>()
                .map(Seen::from_experimental),
            _ => raw.decode::<DetailedTask>().map(Seen::from_detailed),
        };
        decoded.map_err(|e| {
            self.failed(
                Some(task_id),
                "tasks/get",
                format!("the answer is not a task: {e}"),
            )
        })
    }
}

/// `{taskId}`.
fn id_params(task_id: &str) -> JsonObject {
    let mut params = JsonObject::new();
    params.insert("taskId".into(), json!(task_id));
    params
}

/// Puts the host's capabilities, with the tasks extension, into `params._meta` as the
/// request's own client capabilities (2026-07-28): the session keeps them instead of its
/// session-wide ones, so that only the calls the host runs as tasks may be answered with one.
fn declare_extension(params: &mut JsonObject, inner: &Inner) {
    let mut capabilities = serde_json::to_value(&inner.session.capabilities)
        .ok()
        .and_then(|v| v.as_object().cloned())
        .unwrap_or_default();
    let extensions = capabilities
        .entry("extensions")
        .or_insert_with(|| json!({}));
    if let Some(extensions) = extensions.as_object_mut() {
        extensions.insert(TASKS_EXTENSION_ID.to_owned(), json!({}));
    }
    let meta = params.entry("_meta").or_insert_with(|| json!({}));
    if let Some(meta) = meta.as_object_mut() {
        meta.insert(
            meta_key::CLIENT_CAPABILITIES.to_owned(),
            Value::Object(capabilities),
        );
    }
}

/// What a relayed call's consumer wants of [`call`] besides the result
/// ([`CallOptions`](crate::CallOptions)' fields of the same names).
pub(crate) struct TaskAnswer {
    /// A stateless server's `input_required` comes back as it came.
    pub(crate) pass_input_required: bool,
    /// Told the task once the server made it.
    pub(crate) started: Option<tokio::sync::oneshot::Sender<TaskRecord>>,
}

/// Runs `params` as a task: creates it, keeps it, follows it to its end and returns its
/// result. A server that answers with a plain result instead is taken at its word, and one
/// that needs input first (`input_required`) too, when `answer` passes it on.
pub(crate) async fn call(
    call: &TaskCall<'_>,
    params: CallToolParams,
    answer: TaskAnswer,
) -> Result<Relayed, CallError> {
    let era = call.era();
    let mut body = match serde_json::to_value(&params) {
        Ok(Value::Object(body)) => body,
        other => {
            let why = other
                .err()
                .map_or("not an object".to_owned(), |e| e.to_string());
            return Err(call.failed(None, "tools/call", format!("cannot be encoded: {why}")));
        }
    };
    match era {
        Era::Handshake => {
            let ttl = requested_ttl(call.inner.options.max_call_duration);
            body.insert("task".into(), json!({ "ttl": ttl }));
        }
        _ => declare_extension(&mut body, call.inner),
    }
    let encoded =
        RawJson::encode(&body).map_err(|e| call.failed(None, "tools/call", e.to_string()))?;
    let mut options = RequestOptions::DEFAULT
        .timeout(call.idle)
        .idle_timeout(call.idle);
    if call.progress.is_some() {
        options = options.with_progress();
    }
    let passing = answer.pass_input_required && era != Era::Handshake;
    if passing {
        options = options.passing_input_required();
    }
    let raw = call
        .client
        .request_raw_tagged(
            "tools/call",
            Some(encoded),
            options,
            call.progress.clone(),
            call.related,
        )
        .await
        .map_err(|e| call.session_error(None, "tools/call", e))?;
    if passing && is_input_required(&raw) {
        return Ok(Relayed::InputRequired(raw));
    }
    let created = match era {
        Era::Handshake => match raw.decode::<ExperimentalCreateTaskResult>() {
            Ok(created) => Some(Seen::from_experimental(created.task)),
            Err(_) => None,
        },
        _ if CreateTaskResult::is_task(&raw) => Some(
            raw.decode::<CreateTaskResult>()
                .map(Seen::from_created)
                .map_err(|e| {
                    call.failed(None, "tools/call", format!("not a task it announced: {e}"))
                })?,
        ),
        _ => None,
    };
    let Some(created) = created else {
        return raw
            .decode::<CallToolResult>()
            .map(complete)
            .map_err(|e| call.failed(None, "tools/call", e.to_string()));
    };
    let mut record = record_of(call.server, call.tool, &created, None);
    // Dropping the call from here on cancels the task, unless it ended or was let go.
    let mut guard = CancelOnDrop {
        client: call.client.clone(),
        inner: Arc::clone(call.inner),
        record: Some(record.clone()),
        era,
    };
    // Followed before it is kept, so that nothing asks about it as about a task left behind.
    let following = call
        .inner
        .tasks
        .statuses
        .follow(call.server, &created.task_id);
    keep(call.inner, &mut record, &created).await;
    if let Some(started) = answer.started {
        let _ = started.send(record.clone());
    }
    let deadline = Instant::now() + call.inner.options.max_call_duration;
    let outcome = follow(call, created, &mut record, Some(deadline), following).await;
    if !matches!(outcome, Err(Followed::Aborted(_))) {
        guard.record = None;
    }
    match outcome {
        Ok(result) => Ok(complete(result)),
        Err(Followed::Left(e) | Followed::Aborted(e)) => Err(e),
    }
}

/// A result as a relayed call's, not yet bounded.
fn complete(result: CallToolResult) -> Relayed {
    Relayed::Complete(crate::ToolOutput {
        result,
        truncated: false,
    })
}

/// Why following a task stopped without a result.
enum Followed {
    /// The task still runs (time ran out here): leave it, the result can be fetched later.
    Left(CallError),
    /// Something failed while the task may still run: cancel it if the call is ours.
    Aborted(CallError),
}

/// Polls `seen`'s task to its end, answering what it asks on the way, and fetches its result;
/// `following` brings the statuses its server announces.
async fn follow(
    call: &TaskCall<'_>,
    mut seen: Seen,
    record: &mut TaskRecord,
    deadline: Option<Instant>,
    mut following: status::Following,
) -> Result<CallToolResult, Followed> {
    let task_id = seen.task_id.clone();
    let mut answered = BTreeSet::new();
    let mut reports = 0u64;
    // The statuses the server announces for this task (2025-11-25) come at once; once one
    // came, polls are only a safety net and wait the longest.
    let mut heard = false;
    loop {
        if record.state != seen.status || reports == 0 {
            reports += 1;
            report(call, &seen, reports);
        }
        keep(call.inner, record, &seen).await;
        if seen.status.is_terminal() {
            return finish(call, seen).await.map_err(Followed::Left);
        }
        if seen.status == TaskStatus::InputRequired {
            match call.era() {
                // tasks/result delivers the server's requests (answered as any server request)
                // and blocks until the end.
                Era::Handshake => {
                    return result_of(call, &task_id, deadline)
                        .await
                        .map_err(Followed::Aborted);
                }
                _ => input::answer_inputs(call, &seen, &mut answered)
                    .await
                    .map_err(Followed::Aborted)?,
            }
        }
        let wait = if heard {
            MAX_POLL
        } else {
            seen.poll_interval()
        };
        if deadline.is_some_and(|d| Instant::now() + wait > d) {
            return Err(Followed::Left(call.failed(
                Some(&task_id),
                "waiting",
                format!(
                    "still {} after the host's longest call; it keeps running, and `mcp-host tasks result {} {}` fetches its result later",
                    seen.status,
                    call.server,
                    clean_text(&task_id, 128)
                ),
            )));
        }
        tokio::select! {
            () = tokio::time::sleep(wait) => {
                seen = call.get(&task_id).await.map_err(Followed::Aborted)?;
            }
            Ok(()) = following.statuses.changed() => {
                let announced = following.statuses.borrow_and_update().clone();
                if let Some(task) = announced {
                    heard = true;
                    seen = Seen::from_experimental(task);
                }
            }
        }
    }
}

/// The result of a task that ended: 2025-11-25 asks `tasks/result`, 2026-07-28 has it inline.
async fn finish(call: &TaskCall<'_>, seen: Seen) -> Result<CallToolResult, CallError> {
    let task_id = seen.task_id.as_str();
    if seen.status == TaskStatus::Cancelled {
        return Err(call.failed(Some(task_id), "result", "the task was cancelled".to_owned()));
    }
    if call.era() == Era::Handshake {
        return result_of(call, task_id, None).await;
    }
    if let Some((code, message, data)) = seen.error {
        return Err(call.inner.shown(CallError::Rpc {
            server: call.server.to_owned(),
            what: call.what(Some(task_id), "result"),
            code,
            message,
            data,
        }));
    }
    match seen.result {
        Some(result) => serde_json::from_value::<CallToolResult>(Value::Object(result))
            .map_err(|e| call.failed(Some(task_id), "result", e.to_string())),
        None => Err(call.failed(
            Some(task_id),
            "result",
            format!("the task is {} but carries no result", seen.status),
        )),
    }
}

/// `tasks/result` (2025-11-25): waits for the end (until `deadline`, else the host's longest
/// call) and gives the tool's result, or the error the call would have had.
async fn result_of(
    call: &TaskCall<'_>,
    task_id: &str,
    deadline: Option<Instant>,
) -> Result<CallToolResult, CallError> {
    let wait = deadline.map_or(call.inner.options.max_call_duration, |d| {
        d.saturating_duration_since(Instant::now())
    });
    let raw = call
        .send(
            "tasks/result",
            id_params(task_id),
            task_id,
            "tasks/result",
            wait.max(call.idle),
        )
        .await?;
    raw.decode::<CallToolResult>()
        .map_err(|e| call.failed(Some(task_id), "tasks/result", e.to_string()))
}

/// Tells the caller's progress channel and the host's subscribers where the task is.
fn report(call: &TaskCall<'_>, seen: &Seen, n: u64) {
    let mut text = format!("task {}", seen.status);
    if let Some(message) = &seen.status_message {
        text.push_str(": ");
        text.push_str(&clean_text(message, 512));
    }
    if let Some(progress) = &call.progress {
        let mut params = ProgressParams::new(
            ProgressToken(mcp_protocol::RequestId::String(format!(
                "task/{}",
                clean_text(&seen.task_id, 128)
            ))),
            serde_json::Number::from(n),
        );
        params.message = Some(text);
        let _ = progress.send(params);
    }
}

/// The record of `seen`, updating `before` when there is one.
fn record_of(server: &str, tool: &str, seen: &Seen, before: Option<&TaskRecord>) -> TaskRecord {
    let now = store::now();
    let created = before.map_or(now, |b| b.created);
    TaskRecord {
        server: server.to_owned(),
        tool: before.map_or_else(|| tool.to_owned(), |b| b.tool.clone()),
        task_id: seen.task_id.clone(),
        state: seen.status.clone(),
        status_message: seen.status_message.as_deref().map(|m| clean_text(m, 512)),
        created,
        updated: now,
        expires: seen
            .ttl_ms
            .map(|ms| created.saturating_add(ms.div_ceil(1000))),
        poll_interval_ms: seen.poll_interval_ms,
    }
}

/// Keeps what `seen` says of `record`'s task, when it changed, and tells subscribers.
async fn keep(inner: &Inner, record: &mut TaskRecord, seen: &Seen) {
    let next = record_of(&record.server, &record.tool, seen, Some(record));
    let changed = next.state != record.state
        || next.status_message != record.status_message
        || inner.tasks.get(&next.server, &next.task_id).await.is_none();
    *record = next;
    if changed {
        inner.tasks.put(record.clone()).await;
        inner.emit(HostEvent::Task {
            server: record.server.clone(),
            task: record.clone(),
        });
    }
}

/// Sends `tasks/cancel` for a task whose call was dropped before it ended.
struct CancelOnDrop {
    client: Client,
    inner: Arc<Inner>,
    record: Option<TaskRecord>,
    era: Era,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        let Some(record) = self.record.take() else {
            return;
        };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let (client, inner, era) = (self.client.clone(), Arc::clone(&self.inner), self.era);
        runtime.spawn(async move {
            let _ = cancel_with(&inner, &client, era, record).await;
        });
    }
}

/// `tasks/cancel`, and the task kept as the server says it is now.
async fn cancel_with(
    inner: &Arc<Inner>,
    client: &Client,
    era: Era,
    mut record: TaskRecord,
) -> Result<TaskRecord, CallError> {
    let call = TaskCall {
        inner,
        server: &record.server.clone(),
        tool: &record.tool.clone(),
        client: client.clone(),
        idle: request_timeout(inner, &record.server),
        progress: None,
        related: None,
    };
    let raw = call
        .send(
            "tasks/cancel",
            id_params(&record.task_id),
            &record.task_id.clone(),
            "tasks/cancel",
            call.idle,
        )
        .await?;
    // 2025-11-25 answers the task; 2026-07-28 an empty acknowledgement, the status coming on
    // the next tasks/get.
    let seen = match era {
        Era::Handshake => raw
            .decode::<ExperimentalTask>()
            .ok()
            .map(Seen::from_experimental),
        _ => call.get(&record.task_id).await.ok(),
    };
    if let Some(seen) = seen {
        keep(inner, &mut record, &seen).await;
    }
    Ok(record)
}

fn request_timeout(inner: &Inner, server: &str) -> Duration {
    inner
        .slot(server)
        .map_or(crate::config::DEFAULT_REQUEST_TIMEOUT, |s| {
            s.entry.request_timeout
        })
}

/// A call on `server` about a task the caller names.
fn about<'a>(
    inner: &'a Arc<Inner>,
    server: &'a str,
    tool: &'a str,
) -> Result<TaskCall<'a>, CallError> {
    let client = inner.ready_client(server)?;
    if !server_runs_tasks(client.server_info()) {
        return Err(CallError::Failed {
            server: server.to_owned(),
            what: "tasks".to_owned(),
            message: "the server does not run tasks (it declared no task capability)".to_owned(),
        });
    }
    Ok(TaskCall {
        inner,
        server,
        tool,
        client,
        idle: request_timeout(inner, server),
        progress: None,
        related: None,
    })
}

/// The record of `task_id` on `server`: the one kept, or a new one.
async fn record_for(inner: &Inner, server: &str, task_id: &str) -> TaskRecord {
    match inner.tasks.get(server, task_id).await {
        Some(record) => record,
        None => TaskRecord {
            server: server.to_owned(),
            tool: String::new(),
            task_id: task_id.to_owned(),
            state: TaskStatus::Working,
            status_message: None,
            created: store::now(),
            updated: store::now(),
            expires: None,
            poll_interval_ms: None,
        },
    }
}

/// Asks `server` where `task_id` is now, and keeps the answer.
pub(crate) async fn status(
    inner: &Arc<Inner>,
    server: &str,
    task_id: &str,
) -> Result<TaskRecord, CallError> {
    let mut record = record_for(inner, server, task_id).await;
    let tool = record.tool.clone();
    let call = about(inner, server, &tool)?;
    let seen = call.get(task_id).await?;
    keep(inner, &mut record, &seen).await;
    Ok(record)
}

/// Waits for `task_id` on `server` to end, answering what it asks, and gives its result.
pub(crate) async fn result(
    inner: &Arc<Inner>,
    server: &str,
    task_id: &str,
    progress: Option<mpsc::UnboundedSender<ProgressParams>>,
) -> Result<CallToolResult, CallError> {
    let mut record = record_for(inner, server, task_id).await;
    let tool = record.tool.clone();
    let mut call = about(inner, server, &tool)?;
    call.progress = progress;
    let following = inner.tasks.statuses.follow(server, task_id);
    let seen = call.get(task_id).await?;
    match follow(&call, seen, &mut record, None, following).await {
        Ok(result) => Ok(result),
        Err(Followed::Left(e) | Followed::Aborted(e)) => Err(e),
    }
}

/// Cancels `task_id` on `server`.
pub(crate) async fn cancel(
    inner: &Arc<Inner>,
    server: &str,
    task_id: &str,
) -> Result<TaskRecord, CallError> {
    let record = record_for(inner, server, task_id).await;
    let tool = record.tool.clone();
    let call = about(inner, server, &tool)?;
    let era = call.era();
    cancel_with(inner, &call.client, era, record).await
}

/// The server's own list of its tasks (`tasks/list`, 2025-11-25 only: the 2026-07-28
/// extension has none), every page.
pub(crate) async fn list(inner: &Arc<Inner>, server: &str) -> Result<Vec<TaskRecord>, CallError> {
    let call = about(inner, server, "")?;
    if call.era() != Era::Handshake {
        return Err(call.failed(
            None,
            "tasks/list",
            "servers of MCP 2026-07-28 do not list their tasks".to_owned(),
        ));
    }
    let mut out = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..64 {
        let mut params = JsonObject::new();
        if let Some(cursor) = &cursor {
            params.insert("cursor".into(), json!(cursor));
        }
        let raw = call
            .send("tasks/list", params, "", "tasks/list", call.idle)
            .await?;
        let page = raw
            .decode::<ExperimentalListTasksResult>()
            .map_err(|e| call.failed(None, "tasks/list", e.to_string()))?;
        for task in page.tasks {
            let seen = Seen::from_experimental(task);
            let before = inner.tasks.get(server, &seen.task_id).await;
            out.push(record_of(server, "", &seen, before.as_ref()));
        }
        match page.next_cursor {
            Some(next) if Some(&next) != cursor.as_ref() => cursor = Some(next),
            _ => break,
        }
    }
    Ok(out)
}

/// Asks a server that just connected about the tasks kept for it that had not ended, so that
/// a host started again picks up where the last one stopped.
pub(crate) async fn resume(inner: Arc<Inner>, server: String, client: Client) {
    if !server_runs_tasks(client.server_info()) {
        return;
    }
    let unfinished: Vec<TaskRecord> = inner
        .tasks
        .all()
        .await
        .into_iter()
        // A task a call of this host follows now needs no asking.
        .filter(|t| t.server == server && !t.state.is_terminal())
        .filter(|t| !inner.tasks.statuses.is_followed(&server, &t.task_id))
        .collect();
    for mut record in unfinished {
        let tool = record.tool.clone();
        let call = TaskCall {
            inner: &inner,
            server: &server,
            tool: &tool,
            client: client.clone(),
            idle: request_timeout(&inner, &server),
            progress: None,
            related: None,
        };
        match call.get(&record.task_id).await {
            Ok(seen) => keep(&inner, &mut record, &seen).await,
            Err(e) => tracing::warn!(server = %server, "a kept task could not be asked about: {e}"),
        }
    }
}

#[cfg(test)]
mod tests;
