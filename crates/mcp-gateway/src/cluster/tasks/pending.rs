//! What waits for the task share's writer thread: the latest change of each task only.

use std::collections::{HashMap, VecDeque};
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

/// Changes waiting to be written, by task, oldest task first. Each change is the whole task,
/// so one replaces the change of its task still waiting: while Redis is slow or cut off (each
/// write waiting out the client's timeouts), what waits is bounded by the tasks alive, not by
/// how often they change (a task reporting progress, say), and a task's latest state is still
/// the one written.
pub(super) struct Pending<T> {
    waiting: Mutex<Waiting<T>>,
    ready: Condvar,
}

struct Waiting<T> {
    /// Each task waiting, once, in the order its first waiting change came.
    order: VecDeque<String>,
    latest: HashMap<String, T>,
    /// Nobody writes any more ([`Pending::close`]).
    closed: bool,
}

impl<T> Default for Pending<T> {
    fn default() -> Self {
        Self {
            waiting: Mutex::new(Waiting {
                order: VecDeque::new(),
                latest: HashMap::new(),
                closed: false,
            }),
            ready: Condvar::new(),
        }
    }
}

impl<T> Pending<T> {
    fn lock(&self) -> MutexGuard<'_, Waiting<T>> {
        self.waiting.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// `change` of task `task`, in place of the one of that task still waiting. Never blocks
    /// on the writer (it is called with the task store locked).
    pub(super) fn push(&self, task: String, change: T) {
        let mut waiting = self.lock();
        if waiting.closed {
            return;
        }
        if waiting.latest.insert(task.clone(), change).is_none() {
            waiting.order.push_back(task);
        }
        drop(waiting);
        self.ready.notify_one();
    }

    /// The next change to write, waiting at most `wait` for one; `None` at once when closed.
    pub(super) fn next(&self, wait: Duration) -> Option<T> {
        let waiting = self.lock();
        let (mut waiting, _) = self
            .ready
            .wait_timeout_while(waiting, wait, |w| w.order.is_empty() && !w.closed)
            .unwrap_or_else(PoisonError::into_inner);
        if waiting.closed {
            return None;
        }
        let task = waiting.order.pop_front()?;
        waiting.latest.remove(&task)
    }

    /// Nobody writes any more (the share is gone): what waits is dropped, what comes is
    /// ignored, and a writer waiting in [`next`](Self::next) returns at once.
    pub(super) fn close(&self) {
        let mut waiting = self.lock();
        waiting.closed = true;
        waiting.order.clear();
        waiting.latest.clear();
        drop(waiting);
        self.ready.notify_all();
    }
}
