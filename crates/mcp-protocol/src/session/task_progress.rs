//! Progress tokens that outlive their request: a `tools/call` answered with a task keeps its
//! progress token valid until the task reaches a terminal status (MCP 2025-11-25 tasks, and
//! the 2026-07-28 extension `io.modelcontextprotocol/tasks`), so the server's progress
//! notifications still reach the caller after the call's response came.
//!
//! The table is bounded in count and in time: a server cannot make the client keep tokens
//! for tasks it never finishes.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use crate::jsonrpc::{RawJson, RequestId};
use crate::schema::{ProgressToken, RELATED_TASK_META_KEY, RESULT_TYPE_TASK, TaskStatus};

/// At most this many tokens are kept for tasks; the oldest goes first.
pub(crate) const KEPT_AT_MOST: usize = 64;
/// A token is kept no longer than this, or than the task's own time to live when shorter.
pub(crate) const KEPT_FOR_AT_MOST: Duration = Duration::from_secs(24 * 60 * 60);

#[derive(Debug)]
struct Kept {
    token: ProgressToken,
    id: RequestId,
    task_id: String,
    until: Instant,
}

/// The tokens kept for tasks, oldest first.
#[derive(Debug, Default)]
pub(crate) struct TaskProgress {
    kept: VecDeque<Kept>,
}

/// What a result says of a task: its id, its status, how long it is kept.
#[derive(Debug, serde::Deserialize)]
struct Peek {
    #[serde(rename = "resultType", default)]
    result_type: Option<String>,
    #[serde(rename = "taskId", default)]
    task_id: Option<String>,
    #[serde(default)]
    status: Option<TaskStatus>,
    #[serde(rename = "ttlMs", default)]
    ttl_ms: Option<u64>,
    #[serde(default)]
    ttl: Option<u64>,
    /// 2025-11-25's `CreateTaskResult`: the task in a member of its own.
    #[serde(default)]
    task: Option<Box<Peek>>,
}

fn peek(raw: &RawJson) -> Option<Peek> {
    raw.decode::<Peek>().ok()
}

/// The task a `tools/call` result announces, with how long it is kept (milliseconds).
pub(crate) fn announced_task(raw: &RawJson) -> Option<(String, Option<u64>)> {
    let p = peek(raw)?;
    if p.result_type.as_deref() == Some(RESULT_TYPE_TASK) {
        return Some((p.task_id?, p.ttl_ms));
    }
    let task = p.task?;
    Some((task.task_id?, task.ttl))
}

/// The task a `tasks/get` or `tasks/cancel` result (or a status notification's params) shows
/// in a terminal status.
pub(crate) fn terminal_task(raw: &RawJson) -> Option<String> {
    let p = peek(raw)?;
    p.status.filter(TaskStatus::is_terminal).and(p.task_id)
}

/// The task a `tasks/result` answer (2025-11-25) belongs to, by its related-task `_meta`: the
/// answer comes only once the task reached a terminal status.
pub(crate) fn finished_task(raw: &RawJson) -> Option<String> {
    let value = raw.decode::<serde_json::Value>().ok()?;
    let id = value
        .get("_meta")?
        .get(RELATED_TASK_META_KEY)?
        .get("taskId")?;
    id.as_str().map(str::to_owned)
}

impl TaskProgress {
    /// Keeps `token`, which request `id` carried, until task `task_id` ends, its time to
    /// live (`ttl_ms`) passes, or [`KEPT_FOR_AT_MOST`], whichever comes first.
    pub(crate) fn keep(
        &mut self,
        now: Instant,
        token: ProgressToken,
        id: RequestId,
        task_id: String,
        ttl_ms: Option<u64>,
    ) {
        self.expire(now);
        let life = ttl_ms.map_or(KEPT_FOR_AT_MOST, |ms| {
            Duration::from_millis(ms).min(KEPT_FOR_AT_MOST)
        });
        if self.kept.len() >= KEPT_AT_MOST {
            self.kept.pop_front();
        }
        self.kept.push_back(Kept {
            token,
            id,
            task_id,
            until: now + life,
        });
    }

    /// The request a kept token belongs to, if it is still kept at `now`.
    pub(crate) fn route(&mut self, now: Instant, token: &ProgressToken) -> Option<RequestId> {
        self.expire(now);
        self.kept
            .iter()
            .find(|k| &k.token == token)
            .map(|k| k.id.clone())
    }

    /// Whether the token of request `id` is still kept.
    pub(crate) fn holds(&self, id: &RequestId) -> bool {
        self.kept.iter().any(|k| &k.id == id)
    }

    /// Lets go of the token of task `task_id`, which ended.
    pub(crate) fn task_ended(&mut self, task_id: &str) {
        self.kept.retain(|k| k.task_id != task_id);
    }

    /// Lets go of the token of request `id`: its caller is gone.
    pub(crate) fn release(&mut self, id: &RequestId) {
        self.kept.retain(|k| &k.id != id);
    }

    /// Lets go of every token.
    pub(crate) fn clear(&mut self) {
        self.kept.clear();
    }

    fn expire(&mut self, now: Instant) {
        self.kept.retain(|k| k.until > now);
    }
}
