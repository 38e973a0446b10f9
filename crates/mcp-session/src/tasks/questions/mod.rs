//! A handshake-era task's questions to its client (2025-11-25 has no `tasks/update`): each is a
//! request of the server's to the client, tied to the task by the related-task `_meta`, sent on
//! the stream of a `tasks/result` waiting on the task, else unprompted (over HTTP, the
//! standalone stream), where it waits for its answer under its id whether or not a stream took
//! it. A question the standalone stream did not take goes, as it is, on the stream of every
//! `tasks/result` that waits on the task, once each: here ([`Tasks`]'s `tasks/result`), or at
//! another replica of the server, which reads it in the task's record ([`TaskRecord`]'s
//! `input_requests`, keyed by the request's id) and sends it with [`Peer::forward_request`].
//! So a client whose `tasks/result` was cut (a proxy's timeout) is asked again on the next,
//! wherever it lands, and its answer, wherever it is POSTed, answers the request that waits
//! here (a replica's request ids name it, and answers cross to it). One the standalone stream
//! took is not sent again: a client that reads that stream and then calls `tasks/result`, as a
//! task's `input_required` tells it to, would ask its user twice.
//!
//! [`TaskRecord`]: super::TaskRecord

use std::collections::BTreeMap;
use std::time::Duration;

use mcp_protocol::schema::{InputRequest, RELATED_TASK_META_KEY, TaskStatus};
use mcp_protocol::{ErrorObject, JsonObject, RawJson, Request, RequestId, RequestOptions, code};
use serde_json::{Value, json};
use tokio::sync::watch;
use tokio::time::Instant;

use super::{Entry, TaskContext, Tasks};
use crate::server::Peer;

/// A question of a handshake task, asked and not answered yet.
pub(super) struct Question {
    /// The request as it was sent: its id, method and params (with the related-task meta).
    request: Request,
    /// The session's standalone stream took it (or the session has no other way: stdio).
    unprompted: bool,
    /// The `tasks/result` requests here whose streams carried it, while they wait.
    carried_by: Vec<RequestId>,
}

fn internal(message: String) -> ErrorObject {
    ErrorObject::new(code::INTERNAL_ERROR, message)
}

fn ended() -> ErrorObject {
    internal("the task ended before its client answered".to_owned())
}

/// `params` with the related-task `_meta` naming task `id`.
fn tied_to(params: Option<&RawJson>, id: &str) -> Result<RawJson, ErrorObject> {
    let mut params: JsonObject = match params {
        Some(raw) => raw
            .decode()
            .map_err(|e| internal(format!("the task's question has bad params: {e}")))?,
        None => JsonObject::new(),
    };
    let meta = params
        .entry("_meta")
        .or_insert_with(|| Value::Object(JsonObject::new()));
    if let Value::Object(meta) = meta {
        meta.insert(RELATED_TASK_META_KEY.to_owned(), json!({"taskId": id}));
    }
    RawJson::encode(&params).map_err(|e| internal(e.to_string()))
}

/// The text of a request id, as a record's `input_requests` keys it.
fn key_of(id: &RequestId) -> String {
    match id {
        RequestId::String(s) => s.clone(),
        RequestId::Number(n) => n.to_string(),
    }
}

impl Entry {
    /// The questions the standalone stream did not take, keyed by their request's id: a
    /// handshake task's `input_requests` in its record, for a `tasks/result` at another
    /// replica.
    pub(super) fn held_questions(&self) -> BTreeMap<String, InputRequest> {
        self.questions
            .values()
            .filter(|q| !q.unprompted)
            .map(|q| {
                let mut request = InputRequest::new(q.request.method.clone());
                request.params = q.request.params.clone();
                (key_of(&q.request.id), request)
            })
            .collect()
    }

    /// Sends on `waiter`'s stream (a `tasks/result` waiting on the task) the questions the
    /// standalone stream did not take and that stream has not carried yet.
    pub(super) fn carry_held(&mut self, waiter: &Peer) {
        let Some(by) = waiter.related() else {
            return;
        };
        for question in self.questions.values_mut() {
            if !question.unprompted
                && !question.carried_by.contains(by)
                && waiter.forward_request(question.request.clone())
            {
                question.carried_by.push(by.clone());
            }
        }
    }

    /// The `tasks/result` `by` stopped waiting: its stream carries nothing more.
    pub(super) fn release(&mut self, by: &RequestId) {
        for question in self.questions.values_mut() {
            question.carried_by.retain(|id| id != by);
        }
    }
}

impl Tasks {
    /// Tells whoever waits on task `id`, and the mirror, that its questions changed.
    pub(super) fn questions_changed(&self, id: &str, entry: &Entry) {
        entry.changed.send_modify(|n| *n += 1);
        self.mirror(id, entry);
    }
}

/// Returns once task `id` ended or is forgotten.
async fn until_ended(tasks: &Tasks, id: &str, changed: &mut watch::Receiver<u64>) {
    loop {
        if tasks
            .lock()
            .get(id)
            .is_none_or(|entry| entry.status.is_terminal())
        {
            return;
        }
        if changed.changed().await.is_err() {
            return;
        }
    }
}

impl TaskContext {
    /// Asks the handshake client `request` under `key` (see the module doc) and waits for its
    /// answer: the client's result, its JSON-RPC error as it came, or why none came (the task
    /// ended, the session closed, the task's life ran out).
    pub(super) async fn ask_session(
        &self,
        session: &Peer,
        key: &str,
        request: InputRequest,
    ) -> Result<RawJson, ErrorObject> {
        let method = request.method.clone();
        let params = tied_to(request.params.as_ref(), &self.id)?;
        let (held, mut changed, via) = {
            let mut store = self.tasks.lock();
            let entry = store.get_mut(&self.id).ok_or_else(ended)?;
            if entry.status.is_terminal() {
                return Err(ended());
            }
            let waiter = entry.result_waiter.clone();
            let via = waiter.as_ref().unwrap_or(session);
            // It waits as long as the task lives, whatever carries it.
            let life = entry
                .expires
                .saturating_duration_since(Instant::now())
                .max(Duration::from_secs(1));
            let held = via
                .request_held(
                    &method,
                    Some(params.clone()),
                    RequestOptions::DEFAULT.timeout(life),
                )
                .map_err(|e| internal(format!("{method}: the task cannot ask its client: {e}")))?;
            let question = Question {
                request: Request {
                    id: held.id.clone(),
                    method: method.clone(),
                    params: Some(params),
                },
                unprompted: held.delivered && via.related().is_none(),
                carried_by: via
                    .related()
                    .filter(|_| held.delivered)
                    .into_iter()
                    .cloned()
                    .collect(),
            };
            entry.pending.insert(key.to_owned(), request);
            entry.questions.insert(key.to_owned(), question);
            if entry.transition(TaskStatus::InputRequired) {
                self.tasks.announce(&self.id, entry);
            } else {
                self.tasks.questions_changed(&self.id, entry);
            }
            (held, entry.changed.subscribe(), via.clone())
        };
        let settling = Settling::new(self, &[key]);
        // Unanswered when the task ends or the work stops waiting, the client is told to stop
        // asking (before, it was told only at the task's TTL, when the request timed out).
        let withdrawing = Withdrawing {
            via,
            id: held.id.clone(),
        };
        let answer = tokio::select! {
            answer = held.answer => Some(answer),
            () = until_ended(&self.tasks, &self.id, &mut changed) => None,
        };
        drop(withdrawing);
        drop(settling);
        match answer {
            None => Err(ended()),
            Some(Ok(Ok(answer))) => Ok(answer),
            Some(Ok(Err(mcp_protocol::Error::Rpc { error, .. }))) => Err(error),
            Some(Ok(Err(other))) => Err(internal(format!(
                "{method}: the task's client did not answer: {other}"
            ))),
            Some(Err(_)) => Err(internal(format!(
                "{method}: the task's client went away before it answered"
            ))),
        }
    }

    /// Forgets the questions under `keys` (answered, or given up): the task is `working`
    /// again once none is pending.
    pub(super) fn settle(&self, keys: &[&str]) {
        let mut store = self.tasks.lock();
        let Some(entry) = store.get_mut(&self.id) else {
            return;
        };
        for key in keys {
            entry.pending.remove(*key);
            entry.questions.remove(*key);
            entry.answers.remove(*key);
        }
        if entry.status.is_terminal() {
            return;
        }
        if entry.pending.is_empty() && entry.transition(TaskStatus::Working) {
            self.tasks.announce(&self.id, entry);
        } else {
            self.tasks.questions_changed(&self.id, entry);
        }
    }
}

/// Settles questions ([`TaskContext::settle`]) when it is dropped: when they are answered or
/// given up, and also when the work stops waiting for them first (a timeout or a `select!`
/// around [`TaskContext::ask`] or [`TaskContext::input`] drops the wait). Without it, such a
/// question stayed pending until the task ended: the task `input_required` while its work went
/// on, and every `tasks/result`, here or at another replica, asking the client again.
pub(super) struct Settling<'a> {
    context: &'a TaskContext,
    keys: Vec<String>,
    /// Cleared when the wait ended with the questions settled otherwise.
    pub(super) armed: bool,
}

impl<'a> Settling<'a> {
    pub(super) fn new<K: AsRef<str>>(context: &'a TaskContext, keys: &[K]) -> Self {
        Self {
            context,
            keys: keys.iter().map(|k| k.as_ref().to_owned()).collect(),
            armed: true,
        }
    }
}

impl Drop for Settling<'_> {
    fn drop(&mut self) {
        if self.armed {
            let keys: Vec<&str> = self.keys.iter().map(String::as_str).collect();
            self.context.settle(&keys);
        }
    }
}

/// Withdraws a question from the client when it is dropped ([`Peer::withdraw`]): nothing
/// once it is answered, or once it timed out (the session gave it up then).
struct Withdrawing {
    via: Peer,
    id: RequestId,
}

impl Drop for Withdrawing {
    fn drop(&mut self) {
        self.via
            .withdraw(&self.id, "the task ended or stopped waiting for the answer");
    }
}

/// Forgets a `tasks/result` as the task's way to the client when it ends or is dropped.
pub(super) struct Waiting<'a> {
    pub(super) tasks: &'a Tasks,
    pub(super) id: &'a str,
    /// The `tasks/result`'s id, when its stream may carry the task's requests.
    pub(super) by: Option<RequestId>,
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        let Some(by) = &self.by else {
            return;
        };
        let mut store = self.tasks.lock();
        let Some(entry) = store.get_mut(self.id) else {
            return;
        };
        // A later `tasks/result` took its place: that one stays the way.
        if entry.result_waiter.as_ref().and_then(Peer::related) == Some(by) {
            entry.result_waiter = None;
        }
        entry.release(by);
    }
}

#[cfg(test)]
mod tests;
