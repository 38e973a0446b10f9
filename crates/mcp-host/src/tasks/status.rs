//! `notifications/tasks/status` (MCP 2025-11-25) for the tasks this host follows: a status a
//! server announces reaches the call polling that task at once, so that the call need not
//! wait for its next poll, and its polls may back off.
//!
//! Only a task this host follows on the server that sent the notification is updated: a
//! notification naming any other task id (another server's task, another session's, or one
//! this host does not follow now) is not acted on.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use mcp_protocol::RawJson;
use mcp_protocol::schema::ExperimentalTask;
use tokio::sync::watch;

/// The notification's method.
pub(crate) const METHOD: &str = "notifications/tasks/status";

type Key = (String, String);

/// The tasks followed now, by server and task id. Cheap to clone; clones share the table.
#[derive(Debug, Clone, Default)]
pub(crate) struct StatusWatch {
    followed: Arc<Mutex<HashMap<Key, watch::Sender<Option<ExperimentalTask>>>>>,
}

/// One followed task: its announced statuses arrive on `statuses`; dropping it stops
/// following.
pub(crate) struct Following {
    pub(crate) statuses: watch::Receiver<Option<ExperimentalTask>>,
    key: Key,
    watch: StatusWatch,
}

impl Drop for Following {
    fn drop(&mut self) {
        self.watch
            .followed
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&self.key);
    }
}

impl StatusWatch {
    /// Follows `task_id` on `server` while the returned value lives.
    pub(crate) fn follow(&self, server: &str, task_id: &str) -> Following {
        let key = (server.to_owned(), task_id.to_owned());
        let (tx, statuses) = watch::channel(None);
        self.followed
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(key.clone(), tx);
        Following {
            statuses,
            key,
            watch: self.clone(),
        }
    }

    /// Whether a call of this host follows `task_id` on `server` now.
    pub(crate) fn is_followed(&self, server: &str, task_id: &str) -> bool {
        self.followed
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains_key(&(server.to_owned(), task_id.to_owned()))
    }

    /// Hands a status notification `server` sent to the call following its task. Returns
    /// whether one was: `false` for a task not followed on that server, or params that are no
    /// task.
    pub(crate) fn announced(&self, server: &str, params: Option<&RawJson>) -> bool {
        let Some(task) = params.and_then(|p| p.decode::<ExperimentalTask>().ok()) else {
            return false;
        };
        let key = (server.to_owned(), task.task_id.clone());
        let followed = self.followed.lock().unwrap_or_else(PoisonError::into_inner);
        match followed.get(&key) {
            Some(tx) => {
                tx.send_replace(Some(task));
                true
            }
            None => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use mcp_protocol::schema::TaskStatus;
    use serde_json::json;

    use super::*;

    fn status(task_id: &str, status: &str) -> RawJson {
        RawJson::encode(&json!({"taskId": task_id, "status": status,
            "createdAt": "2026-01-01T00:00:00Z", "lastUpdatedAt": "2026-01-01T00:00:00Z"}))
        .unwrap()
    }

    #[test]
    fn only_a_followed_task_of_the_sending_server_is_updated() {
        let watch = StatusWatch::default();
        let following = watch.follow("a", "t-1");
        assert!(watch.announced("a", Some(&status("t-1", "working"))));
        assert_eq!(
            following
                .statuses
                .borrow()
                .as_ref()
                .map(|t| t.status.clone()),
            Some(TaskStatus::Working)
        );
        // Another server naming the same id, an id not followed, params that are no task.
        assert!(!watch.announced("b", Some(&status("t-1", "completed"))));
        assert!(!watch.announced("a", Some(&status("t-2", "completed"))));
        assert!(!watch.announced("a", Some(&RawJson::encode(&json!({"x": 1})).unwrap())));
        assert_eq!(
            following
                .statuses
                .borrow()
                .as_ref()
                .map(|t| t.status.clone()),
            Some(TaskStatus::Working)
        );
        drop(following);
        assert!(!watch.announced("a", Some(&status("t-1", "completed"))));
    }
}
