//! What a task's work holds: [`TaskContext`], its way to ask the client for input (by
//! `tasks/update` in the stateless era, by requests tied to the task in the handshake era),
//! report progress and set its status message.

use std::collections::BTreeMap;

use mcp_protocol::schema::{InputRequest, ProgressParams, TaskStatus};
use mcp_protocol::{ErrorObject, RawJson, code};

use super::Tasks;
use super::questions::Settling;

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
    /// client one after the other, each tied to the task by the related-task `_meta`: on the
    /// stream of a `tasks/result` waiting on the task, else unprompted, and unless the
    /// standalone stream took it, on the stream of every later `tasks/result`, at this replica
    /// or another; see `questions/mod.rs`). The task is `input_required` while any key of any caller
    /// is unanswered, then `working` again. Returns the answers by key (an `ElicitResult`, a
    /// `CreateMessageResult`, ... as the client sent it); `None` if the task was forgotten or
    /// ended meanwhile, or a handshake client answered one with an error.
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
        // The keys are given up if this wait ends without their answers, or is dropped.
        let mut settling = Settling::new(self, &keys);
        if let Some(peer) = peer {
            let mut answers = BTreeMap::new();
            for (key, request) in asked {
                // An error gives up the keys not asked yet with it.
                let answer = self.ask_session(&peer, &key, request).await.ok()?;
                answers.insert(key, answer);
            }
            settling.armed = false;
            return Some(answers);
        }
        loop {
            {
                let mut store = self.tasks.lock();
                let entry = store.get_mut(&self.id)?;
                if entry.status.is_terminal() {
                    return None;
                }
                if keys.iter().all(|k| entry.answers.contains_key(k)) {
                    settling.armed = false;
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

    /// Asks the client one question, `request` under `key`, as [`input`](Self::input) does,
    /// and returns its answer, or why there is none: in the handshake era a client's JSON-RPC
    /// error answer comes back as it was sent (a client that declines to be asked says why),
    /// where [`input`](Self::input) has only `None`.
    pub async fn ask(&self, key: String, request: InputRequest) -> Result<RawJson, ErrorObject> {
        let ended = || {
            ErrorObject::new(
                code::INTERNAL_ERROR,
                "the task ended before its client answered".to_owned(),
            )
        };
        let peer = self
            .tasks
            .lock()
            .get(&self.id)
            .ok_or_else(ended)?
            .peer
            .clone();
        if let Some(peer) = peer {
            return self.ask_session(&peer, &key, request).await;
        }
        let mut answers = self
            .input(BTreeMap::from([(key.clone(), request)]))
            .await
            .ok_or_else(ended)?;
        answers.remove(&key).ok_or_else(|| {
            ErrorObject::new(
                code::INTERNAL_ERROR,
                "the task's client sent no answer".to_owned(),
            )
        })
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
