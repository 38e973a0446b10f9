//! Tasks: a request whose answer comes later, polled by id, in both of the forms the protocol
//! has had.
//!
//! - 2025-11-25 (experimental, `basic/utilities/tasks.mdx`, `schema/2025-11-25/schema.ts`): a
//!   requester asks for a task with a `task` member in the request's params; the receiver
//!   answers [`ExperimentalCreateTaskResult`] (`{task}`), and the requester polls `tasks/get`,
//!   fetches the answer with `tasks/result`, lists with `tasks/list` and cancels with
//!   `tasks/cancel`. Support is declared in `capabilities.tasks`
//!   ([`ExperimentalTasksCapability`], [`ExperimentalClientTasksCapability`]).
//! - 2026-07-28, the extension [`TASKS_EXTENSION_ID`] (SEP-2663): declared under
//!   `capabilities.extensions`; the server alone decides to run a `tools/call` as a task and
//!   answers the flat [`CreateTaskResult`] (`resultType: "task"`); `tasks/get` answers a
//!   [`DetailedTask`] that inlines the result, the error or the pending input requests;
//!   `tasks/update` delivers input responses, `tasks/cancel` asks to stop; `tasks/result` and
//!   `tasks/list` do not exist there (-32601).
//!
//! A task id is minted by the server and is untrusted data to a client; to a server an id a
//! client sends is only a key to look up, never a path or a command.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::jsonrpc::RawJson;
use crate::schema::stateless::InputRequest;
use crate::wire::{JsonObject, wire_str_enum, wire_struct};

/// The extension identifier of 2026-07-28 tasks, the key under `capabilities.extensions` on
/// both sides.
pub const TASKS_EXTENSION_ID: &str = "io.modelcontextprotocol/tasks";

/// The `_meta` key (2025-11-25) that ties a message to the task it belongs to
/// ([`RelatedTaskMetadata`]). The 2026-07-28 extension does not put it on an inlined result:
/// the task id is already at the root of `tasks/get`'s answer.
pub const RELATED_TASK_META_KEY: &str = "io.modelcontextprotocol/related-task";

/// The `resultType` of a [`CreateTaskResult`], an extension value beside `complete` and
/// `input_required`.
pub const RESULT_TYPE_TASK: &str = "task";

/// A task shape built from another's members: the four every shape requires, the status
/// message, and the two durations, which each era names its own way (`ttl`/`pollInterval` in
/// 2025-11-25, `ttlMs`/`pollIntervalMs` in 2026-07-28). `_meta` stays with the message the
/// task came in.
macro_rules! task_from {
    ($to:ident { $ttl:ident, $poll:ident } <- $from:ident { $from_ttl:ident, $from_poll:ident }) => {{
        let mut to = $to::new(
            $from.task_id.clone(),
            $from.status.clone(),
            $from.created_at.clone(),
            $from.last_updated_at.clone(),
        );
        to.$ttl = $from.$from_ttl;
        to.$poll = $from.$from_poll;
        to.status_message = $from.status_message.clone();
        to
    }};
}

wire_str_enum! {
    /// Where a task is in its life (`schema.ts` `TaskStatus`, the same five values in both
    /// forms).
    ///
    /// ```text
    ///            +--> input_required --+
    ///            |          ^          |
    ///   working -+----------+----------+--> completed | failed | cancelled
    /// ```
    ///
    /// The last three are terminal: a task never leaves them.
    pub enum TaskStatus {
        /// Running.
        Working = "working",
        /// Waiting for the requester to answer input requests.
        InputRequired = "input_required",
        /// Finished; the result (which may be a tool error) is available.
        Completed = "completed",
        /// Ended by a protocol-level error, not by a tool error.
        Failed = "failed",
        /// Ended because the requester cancelled it.
        Cancelled = "cancelled",
    }
}

impl TaskStatus {
    /// Whether the task can no longer change: its answer (or error) is final.
    pub fn is_terminal(&self) -> bool {
        matches!(self, Self::Completed | Self::Failed | Self::Cancelled)
    }
}

wire_str_enum! {
    /// Whether a tool may run as a task (`schema.ts` `ToolExecution.taskSupport`); absent
    /// means `forbidden`.
    pub enum TaskSupport {
        /// Never a task.
        Forbidden = "forbidden",
        /// A task when the requester (2025-11-25) or the server (2026-07-28) chooses.
        Optional = "optional",
        /// Only as a task: a client that cannot run tasks cannot call it (-32021 in
        /// 2026-07-28).
        Required = "required",
    }
}

// ---------------------------------------------------------------------------------------------
// 2026-07-28: the `io.modelcontextprotocol/tasks` extension.
// ---------------------------------------------------------------------------------------------

wire_struct! {
    /// A task as the 2026-07-28 extension shows it (SEP-2663 `Task`): the members every task
    /// message carries. Durations carry their unit in their name.
    pub struct TaskInfo {
        required {
            /// The id the server minted.
            task_id: String = "taskId",
            /// Where the task is.
            status: TaskStatus = "status",
            /// When the task was created, ISO 8601.
            created_at: String = "createdAt",
            /// When its status last changed, ISO 8601.
            last_updated_at: String = "lastUpdatedAt",
        }
        optional {
            /// How long, in milliseconds from creation, the server keeps the task; absent (or
            /// `null`) means no limit.
            ttl_ms: u64 = "ttlMs",
            /// How often, in milliseconds, the server suggests polling.
            poll_interval_ms: u64 = "pollIntervalMs",
            /// A sentence for people about the current status. Untrusted.
            status_message: String = "statusMessage",
            /// Protocol metadata.
            meta: JsonObject = "_meta",
        }
    }
}

wire_struct! {
    /// The answer to a `tools/call` that the server runs as a task (2026-07-28): a result and a
    /// task at once, flat, `resultType: "task"`. It never carries the task's result, error,
    /// input requests or a `requestState`: those belong to `tasks/get`.
    pub struct CreateTaskResult {
        required {
            /// `task`.
            result_type: String = "resultType",
            /// The task.
            task_id: String = "taskId",
            /// Where it is (normally `working`).
            status: TaskStatus = "status",
            /// When it was created, ISO 8601.
            created_at: String = "createdAt",
            /// When its status last changed, ISO 8601.
            last_updated_at: String = "lastUpdatedAt",
        }
        optional {
            /// How long, in milliseconds, the server keeps it.
            ttl_ms: u64 = "ttlMs",
            /// The suggested polling interval in milliseconds.
            poll_interval_ms: u64 = "pollIntervalMs",
            /// A sentence for people. Untrusted.
            status_message: String = "statusMessage",
            /// Result metadata.
            meta: JsonObject = "_meta",
        }
    }
}

impl TaskInfo {
    /// The common form of a 2025-11-25 task: the same members, its `ttl` and `pollInterval`
    /// read as `ttlMs` and `pollIntervalMs` (both are milliseconds), so that code that follows
    /// a task handles one type whatever the era. `_meta` stays with the message it came in.
    pub fn from_experimental(task: &ExperimentalTask) -> Self {
        task_from!(TaskInfo { ttl_ms, poll_interval_ms } <- task { ttl, poll_interval })
    }
}

impl CreateTaskResult {
    /// The answer that announces `task`.
    pub fn from_task(task: &TaskInfo) -> Self {
        let mut created = Self::new(
            RESULT_TYPE_TASK.to_owned(),
            task.task_id.clone(),
            task.status.clone(),
            task.created_at.clone(),
            task.last_updated_at.clone(),
        );
        created.ttl_ms = task.ttl_ms;
        created.poll_interval_ms = task.poll_interval_ms;
        created.status_message = task.status_message.clone();
        created
    }

    /// Whether a result announces a task: `resultType` is `task`. A client reads a
    /// `tools/call` answer with this before decoding it as its method's type.
    pub fn is_task(result: &RawJson) -> bool {
        #[derive(serde::Deserialize)]
        struct Peek<'a> {
            #[serde(rename = "resultType", borrow, default)]
            result_type: Option<std::borrow::Cow<'a, str>>,
        }
        result
            .decode::<Peek<'_>>()
            .is_ok_and(|p| p.result_type.as_deref() == Some(RESULT_TYPE_TASK))
    }
}

wire_struct! {
    /// The JSON-RPC error a failed task carries (`code`, `message`, `data`).
    pub struct TaskError {
        required {
            /// The JSON-RPC error code.
            code: i64 = "code",
            /// A sentence about the error. Untrusted.
            message: String = "message",
        }
        optional {
            /// More about it.
            data: Value = "data",
        }
    }
}

wire_struct! {
    /// The answer to `tasks/get` (2026-07-28): the task, and by status what the requester
    /// needs next: `result` when completed (the original method's result, a tool error
    /// included), `error` when failed, `inputRequests` while input is required.
    pub struct DetailedTask {
        required {
            /// The task.
            task_id: String = "taskId",
            /// Where it is.
            status: TaskStatus = "status",
            /// When it was created, ISO 8601.
            created_at: String = "createdAt",
            /// When its status last changed, ISO 8601.
            last_updated_at: String = "lastUpdatedAt",
        }
        optional {
            /// `complete`: the answer to `tasks/get` is itself complete.
            result_type: String = "resultType",
            /// How long, in milliseconds, the server keeps it.
            ttl_ms: u64 = "ttlMs",
            /// The suggested polling interval in milliseconds.
            poll_interval_ms: u64 = "pollIntervalMs",
            /// A sentence for people. Untrusted.
            status_message: String = "statusMessage",
            /// The original request's result, when completed.
            result: JsonObject = "result",
            /// The protocol error, when failed.
            error: TaskError = "error",
            /// What the task waits for, by a key the server chose, while input is required.
            input_requests: BTreeMap<String, InputRequest> = "inputRequests",
            /// Result metadata.
            meta: JsonObject = "_meta",
        }
    }
}

impl DetailedTask {
    /// The answer to `tasks/get` with `task`'s members and nothing of what its status calls
    /// for yet: the caller adds the `result`, `error` or `inputRequests`.
    pub fn from_task(task: &TaskInfo) -> Self {
        task_from!(DetailedTask { ttl_ms, poll_interval_ms } <- task { ttl_ms, poll_interval_ms })
    }

    /// The task's common members.
    pub fn info(&self) -> TaskInfo {
        let task = self;
        task_from!(TaskInfo { ttl_ms, poll_interval_ms } <- task { ttl_ms, poll_interval_ms })
    }
}

wire_struct! {
    /// Parameters of `tasks/get` and `tasks/cancel` (both forms) and of `tasks/result`
    /// (2025-11-25). On Streamable HTTP, 2026-07-28, the `Mcp-Name` header carries `taskId`.
    pub struct TaskIdParams {
        required {
            /// The task.
            task_id: String = "taskId",
        }
        optional {
            /// Protocol metadata.
            meta: JsonObject = "_meta",
        }
    }
}

wire_struct! {
    /// Parameters of `tasks/update` (2026-07-28): answers to some or all of the task's pending
    /// input requests, by the keys the server chose. The answer is an empty
    /// `{resultType: "complete"}`; the task's new state is seen on the next `tasks/get`.
    pub struct UpdateTaskParams {
        required {
            /// The task.
            task_id: String = "taskId",
            /// The results (an `ElicitResult`, a `CreateMessageResult`, a `ListRootsResult`),
            /// by input request key.
            input_responses: BTreeMap<String, Value> = "inputResponses",
        }
        optional {
            /// Protocol metadata.
            meta: JsonObject = "_meta",
        }
    }
}

// ---------------------------------------------------------------------------------------------
// 2025-11-25: experimental tasks.
// ---------------------------------------------------------------------------------------------

wire_struct! {
    /// A task as 2025-11-25 shows it (`schema.ts` `Task`). Unlike [`TaskInfo`] its durations
    /// are `ttl` and `pollInterval`, in milliseconds.
    pub struct ExperimentalTask {
        required {
            /// The id the receiver minted.
            task_id: String = "taskId",
            /// Where the task is.
            status: TaskStatus = "status",
            /// When it was created, ISO 8601.
            created_at: String = "createdAt",
            /// When its status last changed, ISO 8601.
            last_updated_at: String = "lastUpdatedAt",
        }
        optional {
            /// How long, in milliseconds from creation, the receiver keeps it; absent (or
            /// `null`) means no limit.
            ttl: u64 = "ttl",
            /// The suggested polling interval in milliseconds.
            poll_interval: u64 = "pollInterval",
            /// A sentence for people. Untrusted.
            status_message: String = "statusMessage",
            /// Protocol metadata.
            meta: JsonObject = "_meta",
        }
    }
}

impl ExperimentalTask {
    /// `task` as 2025-11-25 writes it: `ttlMs` and `pollIntervalMs` become `ttl` and
    /// `pollInterval`, the rest is the same. `_meta` stays with the message it came in.
    pub fn from_task(task: &TaskInfo) -> Self {
        task_from!(ExperimentalTask { ttl, poll_interval } <- task { ttl_ms, poll_interval_ms })
    }
}

wire_struct! {
    /// The `task` member of a 2025-11-25 request's params: the requester asks for a task and
    /// may say how long to keep it.
    pub struct TaskMetadata {
        required {}
        optional {
            /// The retention wanted, in milliseconds.
            ttl: u64 = "ttl",
        }
    }
}

wire_struct! {
    /// The value of [`RELATED_TASK_META_KEY`]: the task a message belongs to.
    pub struct RelatedTaskMetadata {
        required {
            /// The task.
            task_id: String = "taskId",
        }
        optional {}
    }
}

wire_struct! {
    /// The answer to a 2025-11-25 request made with a `task` member: the task, nested.
    pub struct ExperimentalCreateTaskResult {
        required {
            /// The task created.
            task: ExperimentalTask = "task",
        }
        optional {
            /// Result metadata.
            meta: JsonObject = "_meta",
        }
    }
}

wire_struct! {
    /// The result of `tasks/list` (2025-11-25).
    pub struct ExperimentalListTasksResult {
        required {
            /// This page of tasks.
            tasks: Vec<ExperimentalTask> = "tasks",
        }
        optional {
            /// The cursor of the next page; absent on the last.
            next_cursor: String = "nextCursor",
            /// Result metadata.
            meta: JsonObject = "_meta",
        }
    }
}

wire_struct! {
    /// `capabilities.tasks` of a 2025-11-25 server: which task methods it answers and which of
    /// its requests may run as tasks. Each member is declared by being present.
    pub struct ExperimentalTasksCapability {
        required {}
        optional {
            /// `tasks/list`.
            list: JsonObject = "list",
            /// `tasks/cancel`.
            cancel: JsonObject = "cancel",
            /// The requests that may be tasks: `{tools: {call: {}}}`.
            requests: ExperimentalTaskRequests = "requests",
        }
    }
}

impl ExperimentalTasksCapability {
    /// Whether `tools/call` may be run as a task.
    pub fn supports_tool_calls(&self) -> bool {
        self.requests
            .as_ref()
            .and_then(|r| r.tools.as_ref())
            .is_some_and(|t| t.contains_key("call"))
    }
}

wire_struct! {
    /// The `requests` member of the 2025-11-25 tasks capabilities, for both sides: the server
    /// names `tools.call`, the client `sampling.createMessage` and `elicitation.create`.
    pub struct ExperimentalTaskRequests {
        required {}
        optional {
            /// `{call: {}}` (server).
            tools: JsonObject = "tools",
            /// `{createMessage: {}}` (client).
            sampling: JsonObject = "sampling",
            /// `{create: {}}` (client).
            elicitation: JsonObject = "elicitation",
        }
    }
}

/// `capabilities.tasks` of a 2025-11-25 client: the same shape as the server's, naming the
/// client's own requests.
pub type ExperimentalClientTasksCapability = ExperimentalTasksCapability;

/// Whether a capability object (a client's or a server's, as JSON) declares the 2026-07-28
/// tasks extension under `extensions`.
pub fn declares_tasks_extension(capabilities: &JsonObject) -> bool {
    capabilities
        .get("extensions")
        .and_then(Value::as_object)
        .is_some_and(|e| e.contains_key(TASKS_EXTENSION_ID))
}

/// Whether a capability set (a client's or a server's) declares the 2026-07-28 tasks extension,
/// whether this crate keeps `extensions` as a member of its own or among the unknown ones.
pub fn capabilities_declare_tasks<T: serde::Serialize>(capabilities: &T) -> bool {
    serde_json::to_value(capabilities)
        .ok()
        .and_then(|v| v.as_object().map(declares_tasks_extension))
        .unwrap_or(false)
}

/// The `extensions` member that declares the tasks extension, `{"io.modelcontextprotocol/tasks":
/// {}}`, to put under a capability object's `extensions`.
pub fn tasks_extension_entry() -> (String, Value) {
    (
        TASKS_EXTENSION_ID.to_owned(),
        Value::Object(JsonObject::new()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    // The 2026 create result is flat and carries the unit-suffixed durations; the 2025 task keeps
    // its own names, and neither leaks the other's.
    #[test]
    fn each_form_writes_its_own_member_names() {
        let mut info = TaskInfo::new(
            "t1".into(),
            TaskStatus::Working,
            "2026-01-01T00:00:00Z".into(),
            "2026-01-01T00:00:00Z".into(),
        );
        info.ttl_ms = Some(60_000);
        info.poll_interval_ms = Some(500);
        let created = serde_json::to_value(CreateTaskResult::from_task(&info)).unwrap();
        assert_eq!(created["resultType"], "task");
        assert_eq!(created["taskId"], "t1");
        assert_eq!(created["ttlMs"], 60_000);
        assert!(created.get("task").is_none() && created.get("ttl").is_none());
        let raw = RawJson::encode(&created).unwrap();
        assert!(CreateTaskResult::is_task(&raw));

        let old: ExperimentalTask = serde_json::from_value(serde_json::json!({
            "taskId": "t2", "status": "input_required", "createdAt": "x", "lastUpdatedAt": "y",
            "ttl": null, "pollInterval": 100
        }))
        .unwrap();
        assert_eq!(old.status, TaskStatus::InputRequired);
        assert!(!old.status.is_terminal() && TaskStatus::Cancelled.is_terminal());
        assert_eq!((old.ttl, old.poll_interval), (None, Some(100)));
    }

    /// One task written in each era's shapes through the shared `TaskInfo`: every member
    /// name and value exactly as each form has it on the wire, and back.
    #[test]
    fn one_task_in_both_eras_shapes_is_written_exactly_as_each_era_writes_it() {
        let mut info = TaskInfo::new(
            "t1".into(),
            TaskStatus::InputRequired,
            "2026-01-01T00:00:00Z".into(),
            "2026-01-01T00:00:05Z".into(),
        );
        info.ttl_ms = Some(60_000);
        info.poll_interval_ms = Some(500);
        info.status_message = Some("waiting".into());
        let old = ExperimentalTask::from_task(&info);
        assert_eq!(
            serde_json::to_value(&old).unwrap(),
            serde_json::json!({
                "taskId": "t1", "status": "input_required",
                "createdAt": "2026-01-01T00:00:00Z", "lastUpdatedAt": "2026-01-01T00:00:05Z",
                "ttl": 60_000, "pollInterval": 500, "statusMessage": "waiting"
            })
        );
        assert_eq!(TaskInfo::from_experimental(&old), info);
        let mut detailed = DetailedTask::from_task(&info);
        detailed.input_requests = Some(BTreeMap::new());
        assert_eq!(
            serde_json::to_value(&detailed).unwrap(),
            serde_json::json!({
                "taskId": "t1", "status": "input_required",
                "createdAt": "2026-01-01T00:00:00Z", "lastUpdatedAt": "2026-01-01T00:00:05Z",
                "ttlMs": 60_000, "pollIntervalMs": 500, "statusMessage": "waiting",
                "inputRequests": {}
            })
        );
        assert_eq!(detailed.info(), info);
        assert_eq!(
            serde_json::to_value(CreateTaskResult::from_task(&info)).unwrap(),
            serde_json::json!({
                "resultType": "task", "taskId": "t1", "status": "input_required",
                "createdAt": "2026-01-01T00:00:00Z", "lastUpdatedAt": "2026-01-01T00:00:05Z",
                "ttlMs": 60_000, "pollIntervalMs": 500, "statusMessage": "waiting"
            })
        );
        // Absent members stay absent in both.
        let bare = TaskInfo::new("t2".into(), TaskStatus::Working, "a".into(), "b".into());
        let expected = serde_json::json!({
            "taskId": "t2", "status": "working", "createdAt": "a", "lastUpdatedAt": "b"
        });
        assert_eq!(
            serde_json::to_value(ExperimentalTask::from_task(&bare)).unwrap(),
            expected
        );
        assert_eq!(
            serde_json::to_value(DetailedTask::from_task(&bare)).unwrap(),
            expected
        );
    }

    #[test]
    fn the_extension_is_read_from_extensions_only() {
        let caps: JsonObject = serde_json::from_value(serde_json::json!({
            "extensions": {TASKS_EXTENSION_ID: {}}, "tasks": {}
        }))
        .unwrap();
        assert!(declares_tasks_extension(&caps));
        let old: JsonObject = serde_json::from_value(serde_json::json!({"tasks": {}})).unwrap();
        assert!(!declares_tasks_extension(&old));
    }
}
