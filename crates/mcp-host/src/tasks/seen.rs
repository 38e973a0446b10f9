//! A task as one answer showed it, whatever the era's shape, how long to wait before asking
//! again, and how long to ask a server to keep a task.

use std::collections::BTreeMap;
use std::time::Duration;

use mcp_protocol::JsonObject;
use mcp_protocol::schema::{
    CreateTaskResult, DetailedTask, ExperimentalTask, InputRequest, TaskStatus,
};
use serde_json::Value;

/// The shortest wait between two polls, whatever the server suggests: a server that says `0`
/// is not polled in a busy loop.
pub(crate) const MIN_POLL: Duration = Duration::from_millis(100);
/// The longest wait between two polls, whatever the server suggests, so that an end is seen
/// within seconds.
pub(crate) const MAX_POLL: Duration = Duration::from_secs(5);
/// The wait between polls when the server suggests none.
pub(crate) const DEFAULT_POLL: Duration = Duration::from_secs(1);

/// How much longer than the host's longest call it asks a server to keep a task.
const TTL_BEYOND_LONGEST_CALL: Duration = Duration::from_secs(60 * 60);

/// The time to live, in milliseconds, the host asks for when it creates a task (2025-11-25
/// `task.ttl`; the 2026-07-28 extension leaves it to the server): the host's longest call
/// (`max_call_duration`) and an hour more, so that a task a call left at its longest wait is
/// still there for `mcp-host tasks result` to fetch, and not kept for ever after.
pub(crate) fn requested_ttl(max_call_duration: Duration) -> u64 {
    let ttl = max_call_duration.saturating_add(TTL_BEYOND_LONGEST_CALL);
    u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX)
}

/// A task as one answer showed it, whatever the era.
#[derive(Debug, Clone)]
pub(crate) struct Seen {
    pub(crate) task_id: String,
    pub(crate) status: TaskStatus,
    pub(crate) status_message: Option<String>,
    pub(crate) ttl_ms: Option<u64>,
    pub(crate) poll_interval_ms: Option<u64>,
    /// 2026-07-28: the result of a completed task.
    pub(crate) result: Option<JsonObject>,
    /// 2026-07-28: the error of a failed task (code, message, data).
    pub(crate) error: Option<(i64, String, Option<Value>)>,
    /// 2026-07-28: what the task waits for.
    pub(crate) input_requests: BTreeMap<String, InputRequest>,
}

impl Seen {
    pub(crate) fn from_experimental(task: ExperimentalTask) -> Self {
        Self {
            task_id: task.task_id,
            status: task.status,
            status_message: task.status_message,
            ttl_ms: task.ttl,
            poll_interval_ms: task.poll_interval,
            result: None,
            error: None,
            input_requests: BTreeMap::new(),
        }
    }

    pub(crate) fn from_created(task: CreateTaskResult) -> Self {
        Self {
            task_id: task.task_id,
            status: task.status,
            status_message: task.status_message,
            ttl_ms: task.ttl_ms,
            poll_interval_ms: task.poll_interval_ms,
            result: None,
            error: None,
            input_requests: BTreeMap::new(),
        }
    }

    pub(crate) fn from_detailed(task: DetailedTask) -> Self {
        Self {
            task_id: task.task_id,
            status: task.status,
            status_message: task.status_message,
            ttl_ms: task.ttl_ms,
            poll_interval_ms: task.poll_interval_ms,
            result: task.result,
            error: task.error.map(|e| (e.code, e.message, e.data)),
            input_requests: task.input_requests.unwrap_or_default(),
        }
    }

    /// The wait before the next poll: the server's suggestion within bounds.
    pub(crate) fn poll_interval(&self) -> Duration {
        self.poll_interval_ms
            .map_or(DEFAULT_POLL, Duration::from_millis)
            .clamp(MIN_POLL, MAX_POLL)
    }
}
