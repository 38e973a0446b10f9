//! The task store, mirrored for the other replicas of a server so that any of them answers
//! `tasks/*` for a task whose work runs here ([`Tasks::mirror_to`]): every change of a task is
//! given to a [`TaskMirror`] as a [`TaskRecord`], and [`Tasks::cancel_relayed`] and
//! [`Tasks::update_relayed`] act for a replica that checked its caller may.

use std::sync::Arc;
use std::time::Duration;

use mcp_protocol::schema::{DetailedTask, TaskStatus, UpdateTaskParams};
use tokio::time::Instant;

use super::{Caller, Entry, Tasks};
use crate::server::SessionKey;

/// A task as it stands after a change, for a store other replicas of the server read
/// ([`TaskMirror`]): they answer `tasks/*` for it from there while the work runs here.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct TaskRecord {
    /// Who alone may see it
    /// ([`RequestContext::session_name`](crate::RequestContext::session_name)): the handshake
    /// session's name, or in the stateless era the authenticated caller's; `None` for a
    /// stateless task of nobody authenticated, where knowing the id is what lets a client see
    /// it.
    pub owner: Option<Arc<str>>,
    /// Whether its owner can list it (`tasks/list`): a handshake session's task. The stateless
    /// era has no `tasks/list`, so a store keeps no list of a caller's tasks for it, which
    /// nobody would read and which, for a caller that never stops making tasks, would only grow.
    pub listed: bool,
    /// Everything `tasks/get` shows in either era: its result when completed, its error when
    /// failed, its pending input requests while input is required. A handshake session's
    /// client is asked by requests of their own instead: for its task these are the questions
    /// its standalone stream did not take, keyed by the ids of those requests, which wait for
    /// their answers here, so that a `tasks/result` at another replica sends them as they are
    /// ([`Peer::forward_request`](crate::Peer::forward_request)).
    pub task: DetailedTask,
    /// How long the store should keep it: what is left of its TTL.
    pub keep: Duration,
}

/// Told of every change of every task of a [`Tasks`] (created, input required, working
/// again, ended), in order, so that the replicas of a server can answer for each other's
/// tasks. Called with the store locked: it must not block (queue the write).
pub trait TaskMirror: Send + Sync + 'static {
    /// `record` is the task as it now stands.
    fn changed(&self, record: TaskRecord);
}

impl Tasks {
    /// Tells `mirror` of every change of every task from now on (once: false if one is set
    /// already), so that other replicas answer for them.
    pub fn mirror_to(&self, mirror: Arc<dyn TaskMirror>) -> bool {
        self.shared.mirror.set(mirror).is_ok()
    }

    /// Tells the mirror, if any, how `entry` stands. A handshake session's task whose session
    /// has no name among replicas stays here: no other replica could tell its owner.
    pub(super) fn mirror(&self, id: &str, entry: &Entry) {
        let Some(mirror) = self.shared.mirror.get() else {
            return;
        };
        if entry.owner.is_some() && entry.owner_name.is_none() {
            return;
        }
        let options = &self.shared.options;
        mirror.changed(TaskRecord {
            owner: entry.owner_name.clone(),
            listed: entry.owner.is_some(),
            task: entry.detailed(id, options.ttl, options.poll_interval),
            keep: entry.expires.saturating_duration_since(Instant::now()),
        });
    }

    /// Cancels task `id` for another replica, which checked that its caller may (`tasks/cancel`
    /// there): as [`answer`](Self::answer)'s cancel, without an owner to compare. Whether the
    /// task was running and is now cancelled.
    pub fn cancel_relayed(&self, id: &str) -> bool {
        let mut store = self.lock();
        let Some(entry) = store.get_mut(id) else {
            return false;
        };
        if entry.status.is_terminal() {
            return false;
        }
        if let Some(abort) = &entry.abort {
            abort.abort();
        }
        entry.pending.clear();
        entry.transition(TaskStatus::Cancelled);
        self.announce(id, entry);
        true
    }

    /// Gives a stateless-era task the input responses its client sent another replica (the
    /// `tasks/update` there, `params`), as [`answer`](Self::answer)'s update would. A
    /// handshake session's task takes none: that era has no `tasks/update`.
    pub fn update_relayed(&self, params: &UpdateTaskParams) -> bool {
        let (id, responses) = (params.task_id.as_str(), &params.input_responses);
        let owner = match self.lock().get(id) {
            Some(entry) if entry.owner.is_none() => entry.owner_name.clone(),
            _ => return false,
        };
        let caller = Caller {
            stateless: true,
            session: SessionKey::next(),
            declares_extension: true,
            peer: None,
            request_peer: None,
            progress_token: None,
            name: owner,
        };
        self.update(id, &caller, responses).is_ok()
    }
}
