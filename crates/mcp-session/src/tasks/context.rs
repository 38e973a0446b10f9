//! What a task's work holds: [`TaskContext`], its way to ask the client for input (by
//! `tasks/update` in the stateless era, by requests tied to the task in the handshake era),
//! report progress and set its status message.

use std::collections::BTreeMap;

use mcp_protocol::schema::{InputRequest, ProgressParams, RELATED_TASK_META_KEY, TaskStatus};
use mcp_protocol::{JsonObject, RawJson, RequestOptions};
use serde_json::{Value, json};

use super::Tasks;
use crate::server::Peer;

/// What a task's work gets: its id, and its way to ask for input and report progress.
#[derive(Clone)]
pub struct TaskContext {
    pub(super) id: String,
    pub(super) tasks: Tasks,
}

impl std::fmt::Debug for TaskContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskContext")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

impl TaskContext {
    /// The task's id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Asks the client for input (SEP-2322 requests, by keys this work chooses, unique within
    /// the task) and waits for all of the answers, which come by `tasks/update`, one key or
    /// several at a time (in the handshake era, as the answers to requests sent to the
    /// client, each tied to the task by the related-task `_meta`). The task is `input_required` while any key of any caller is
    /// unanswered, then `working` again. Returns the answers by key (an `ElicitResult`, a
    /// `CreateMessageResult`, ... as the client sent it); `None` if the task was forgotten or
    /// ended meanwhile.
    pub async fn input(
        &self,
        requests: BTreeMap<String, InputRequest>,
    ) -> Option<BTreeMap<String, RawJson>> {
        let keys: Vec<String> = requests.keys().cloned().collect();
        let asked = requests.clone();
        let (mut changed, peer) = {
            let mut store = self.tasks.lock();
            let entry = store.get_mut(&self.id)?;
            entry.pending.extend(requests);
            let rx = entry.changed.subscribe();
            if entry.transition(TaskStatus::InputRequired) {
                self.tasks.announce(&self.id, entry);
            } else {
                self.tasks.mirror(&self.id, entry);
            }
            (rx, entry.peer.clone())
        };
        if let Some(peer) = peer {
            return self.ask_session(&peer, asked).await;
        }
        loop {
            {
                let mut store = self.tasks.lock();
                let entry = store.get_mut(&self.id)?;
                if entry.status.is_terminal() {
                    return None;
                }
                if keys.iter().all(|k| entry.answers.contains_key(k)) {
                    return Some(
                        keys.iter()
                            .filter_map(|k| entry.answers.remove_entry(k))
                            .filter_map(|(k, v)| Some((k, RawJson::encode(&v).ok()?)))
                            .collect(),
                    );
                }
            }
            changed.changed().await.ok()?;
        }
    }

    /// In the handshake era the client has no `tasks/update`: each input request goes to it as
    /// a request of its own, tied to the task by the related-task `_meta`, one after the other:
    /// on the stream of a `tasks/result` that waits on the task (as 2025-11-25 has it), else
    /// unprompted, and when that cannot reach the client now, once a `tasks/result` comes. The
    /// task is `working` again once all are answered. `None` if one was not.
    async fn ask_session(
        &self,
        peer: &Peer,
        asked: BTreeMap<String, InputRequest>,
    ) -> Option<BTreeMap<String, RawJson>> {
        let mut answers = BTreeMap::new();
        for (key, request) in asked {
            let mut params: JsonObject = match &request.params {
                Some(raw) => raw.decode().ok()?,
                None => JsonObject::new(),
            };
            let meta = params
                .entry("_meta")
                .or_insert_with(|| Value::Object(JsonObject::new()));
            if let Value::Object(meta) = meta {
                meta.insert(RELATED_TASK_META_KEY.to_owned(), json!({"taskId": self.id}));
            }
            let params = RawJson::encode(&params).ok()?;
            let answer = loop {
                // A `tasks/result` waiting on the task carries the request on its own stream;
                // else it goes unprompted (over HTTP, on the standalone stream).
                let (waiter, mut changed) = {
                    let store = self.tasks.lock();
                    let entry = store.get(&self.id)?;
                    (entry.result_waiter.clone(), entry.changed.subscribe())
                };
                let via = waiter.as_ref().unwrap_or(peer);
                let sent = via
                    .request_raw(
                        &request.method,
                        Some(params.clone()),
                        RequestOptions::DEFAULT,
                    )
                    .await;
                match sent {
                    Ok(answer) => break answer,
                    // Nowhere to send it now: wait for a `tasks/result` to carry it.
                    Err(mcp_protocol::Error::Transport { .. }) if waiter.is_none() => {
                        changed.changed().await.ok()?;
                    }
                    Err(_) => return None,
                }
            };
            answers.insert(key, answer);
        }
        let mut store = self.tasks.lock();
        let entry = store.get_mut(&self.id)?;
        for key in answers.keys() {
            entry.pending.remove(key);
        }
        if entry.pending.is_empty() && entry.transition(TaskStatus::Working) {
            self.tasks.announce(&self.id, entry);
        }
        Some(answers)
    }

    /// Reports progress with the token of the request that created the task, if it had one,
    /// until the task ends (2025-11-25 sessions; a stateless request's stream is gone).
    pub fn progress(&self, progress: u64, total: Option<u64>, message: Option<&str>) {
        let store = self.tasks.lock();
        let Some(entry) = store.get(&self.id) else {
            return;
        };
        let (Some(peer), Some(token)) = (&entry.peer, &entry.progress_token) else {
            return;
        };
        if entry.status.is_terminal() {
            return;
        }
        let mut params = ProgressParams::new(token.clone(), progress.into());
        params.total = total.map(Into::into);
        params.message = message.map(str::to_owned);
        if let Ok(raw) = RawJson::encode(&params) {
            let _ = peer.notify("notifications/progress", Some(raw));
        }
    }

    /// Sets the sentence for people that `tasks/get` shows.
    pub fn status_message(&self, message: &str) {
        if let Some(entry) = self.tasks.lock().get_mut(&self.id) {
            entry.status_message = Some(message.to_owned());
            self.tasks.mirror(&self.id, entry);
        }
    }
}
