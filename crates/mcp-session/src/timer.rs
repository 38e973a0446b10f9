//! The timer both cores share: a task that sleeps until the session's next deadline, fires it,
//! and ends with the session or once it has no deadline left, holding the core only weakly so
//! that it never keeps a connection alive; and [`Armed`], the deadline the task sleeps until,
//! kept beside the session so that a core wakes the task only for an earlier one, and starts
//! one only when there is a deadline and none runs. A session with nothing in flight (a
//! server's idle client, between calls) has no task: a gateway holding thousands of them
//! would pay for a sleeping task each.

use std::sync::{Arc, Weak};
use std::time::Instant;

use mcp_protocol::{ClientSession, ServerSession};
use tokio::sync::Notify;

/// What the timer task needs of a core.
pub(crate) trait Deadlines: Send + Sync + 'static {
    /// Records, as the deadline the task sleeps until, and returns the session's next deadline;
    /// `None` once the session is closed or has no deadline, which ends the task. Implemented
    /// with [`Armed::arm`] under the core's lock.
    fn arm(&self) -> Option<Instant>;

    /// The deadline has passed: feeds `handle_timeout` to the session.
    fn fire(self: Arc<Self>);
}

/// What the timer needs of a session, client or server.
pub(crate) trait Clocked {
    fn poll_timeout(&mut self) -> Option<Instant>;
    fn is_closed(&self) -> bool;
}

impl Clocked for ClientSession {
    fn poll_timeout(&mut self) -> Option<Instant> {
        ClientSession::poll_timeout(self)
    }
    fn is_closed(&self) -> bool {
        ClientSession::is_closed(self)
    }
}

impl Clocked for ServerSession {
    fn poll_timeout(&mut self) -> Option<Instant> {
        ServerSession::poll_timeout(self)
    }
    fn is_closed(&self) -> bool {
        ServerSession::is_closed(self)
    }
}

/// The deadline the timer task sleeps until, and whether a task runs. It lives in a core's
/// locked state beside the session: all are read and written under the same lock, so a change
/// never misses a wake-up, and a task that ends for want of a deadline is never counted on by
/// the change that brings the next one.
#[derive(Debug, Default)]
pub(crate) struct Armed {
    at: Option<Instant>,
    running: bool,
}

impl Armed {
    /// For [`Deadlines::arm`]: records the session's next deadline as the one slept until and
    /// returns it; `None` once the session is closed or has no deadline, and the task ends.
    pub(crate) fn arm(&mut self, session: &mut impl Clocked) -> Option<Instant> {
        self.at = if session.is_closed() {
            None
        } else {
            session.poll_timeout()
        };
        self.running = self.at.is_some();
        self.at
    }

    /// After a change to the session: wakes the task for a deadline earlier than the one it
    /// sleeps until, or for a closed session, so that the task ends. Returns whether the
    /// caller must [`start`] a task: the session has a deadline and no task runs.
    #[must_use]
    pub(crate) fn wake_if_needed(&mut self, session: &mut impl Clocked, wake: &Notify) -> bool {
        let next = session.poll_timeout();
        let closed = session.is_closed();
        if !self.running {
            // The task arms itself when it starts, with this deadline or a later change's.
            self.running = next.is_some() && !closed;
            self.at = next;
            return self.running;
        }
        if must_wake(self.at, next, closed) {
            wake.notify_one();
        }
        false
    }
}

/// Whether the task must be woken after a change: for a deadline earlier than the one it sleeps
/// until, or for a closed session, so that the task ends.
fn must_wake(armed: Option<Instant>, next: Option<Instant>, closed: bool) -> bool {
    closed || (next.is_some() && (armed.is_none() || next < armed))
}

/// Starts the timer task of `core`, which wakes it through `wake`, on `runtime` (the core's,
/// since the change that brings a deadline may be made on any thread).
pub(crate) fn start<C: Deadlines>(
    core: Weak<C>,
    wake: &Arc<Notify>,
    runtime: &tokio::runtime::Handle,
) {
    runtime.spawn(run(core, Arc::clone(wake)));
}

/// Runs until the session is closed, has no deadline left, or the core is gone. `wake` is the
/// core's [`Notify`], held here apart from the core.
async fn run<C: Deadlines>(core: Weak<C>, wake: Arc<Notify>) {
    loop {
        // Created before the deadline is read: a wake-up from then on is not missed (and one
        // given before it was polled left a permit).
        let woken = wake.notified();
        let deadline = {
            let Some(core) = core.upgrade() else { return };
            let Some(deadline) = core.arm() else { return };
            deadline
        };
        tokio::select! {
            () = tokio::time::sleep_until(tokio::time::Instant::from_std(deadline)) => {
                if let Some(core) = core.upgrade() {
                    core.fire();
                }
            }
            () = woken => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use std::future::Future as _;
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    use super::*;

    /// A session whose next deadline and end the test sets.
    #[derive(Default)]
    struct Fake {
        next: Option<Instant>,
        closed: bool,
    }

    impl Clocked for Fake {
        fn poll_timeout(&mut self) -> Option<Instant> {
            self.next
        }
        fn is_closed(&self) -> bool {
            self.closed
        }
    }

    /// Whether `wake` holds a permit, taking it.
    fn woken(wake: &Notify) -> bool {
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        std::pin::pin!(wake.notified()).poll(&mut cx).is_ready()
    }

    #[test]
    fn a_task_starts_for_a_first_deadline_and_only_an_earlier_one_or_the_end_wakes_it() {
        let t0 = Instant::now();
        let t1 = t0 + Duration::from_secs(1);
        let wake = Notify::new();
        let mut armed = Armed::default();
        let mut session = Fake::default();
        assert!(
            !armed.wake_if_needed(&mut session, &wake),
            "no deadline: no task"
        );
        assert!(!woken(&wake), "no deadline: nothing to wake for");
        session.next = Some(t1);
        assert!(
            armed.wake_if_needed(&mut session, &wake),
            "a first deadline"
        );
        assert!(!woken(&wake), "a task is started, not woken");
        assert!(
            !armed.wake_if_needed(&mut session, &wake),
            "one task at a time"
        );
        // The task's first `arm`.
        assert_eq!(armed.arm(&mut session), Some(t1));
        assert!(!armed.wake_if_needed(&mut session, &wake));
        assert!(!woken(&wake), "the deadline already slept until");
        session.next = Some(t1 + Duration::from_secs(1));
        assert!(!armed.wake_if_needed(&mut session, &wake));
        assert!(!woken(&wake), "a later deadline waits for the armed one");
        session.next = Some(t0);
        assert!(!armed.wake_if_needed(&mut session, &wake));
        assert!(woken(&wake), "an earlier deadline");
        // The deadline passed and the session has no other: the task ends...
        session.next = None;
        assert_eq!(armed.arm(&mut session), None);
        // ...and the next deadline starts another.
        session.next = Some(t1);
        assert!(
            armed.wake_if_needed(&mut session, &wake),
            "a deadline again"
        );
        assert_eq!(armed.arm(&mut session), Some(t1));
        session.closed = true;
        assert!(!armed.wake_if_needed(&mut session, &wake));
        assert!(woken(&wake), "the end, so that the task ends");
        assert_eq!(armed.arm(&mut session), None);
        assert!(
            !armed.wake_if_needed(&mut session, &wake),
            "a closed session starts no task"
        );
    }

    /// A core around [`Fake`] that counts how often its deadline fired.
    struct Core {
        state: Mutex<(Armed, Fake)>,
        fired: AtomicUsize,
    }

    impl Deadlines for Core {
        fn arm(&self) -> Option<Instant> {
            let (armed, session) = &mut *self.state.lock().unwrap();
            armed.arm(session)
        }

        fn fire(self: Arc<Self>) {
            self.fired.fetch_add(1, Ordering::SeqCst);
            let (_, session) = &mut *self.state.lock().unwrap();
            session.next = None;
        }
    }

    #[tokio::test(start_paused = true)]
    async fn the_task_fires_the_deadline_and_ends_with_the_session() {
        let at = tokio::time::Instant::now().into_std() + Duration::from_secs(5);
        let session = Fake {
            next: Some(at),
            closed: false,
        };
        let core = Arc::new(Core {
            state: Mutex::new((Armed::default(), session)),
            fired: AtomicUsize::new(0),
        });
        let wake = Arc::new(Notify::new());
        let task = tokio::spawn(run(Arc::downgrade(&core), Arc::clone(&wake)));
        tokio::time::sleep(Duration::from_secs(4)).await;
        assert_eq!(core.fired.load(Ordering::SeqCst), 0, "not before its time");
        tokio::time::sleep(Duration::from_secs(2)).await;
        assert_eq!(core.fired.load(Ordering::SeqCst), 1);
        tokio::time::timeout(Duration::from_secs(1), task)
            .await
            .expect("the task ends once the session has no deadline")
            .unwrap();
        assert!(!core.state.lock().unwrap().0.running);
    }

    #[tokio::test(start_paused = true)]
    async fn the_task_ends_with_the_session() {
        let at = tokio::time::Instant::now().into_std() + Duration::from_secs(5);
        let session = Fake {
            next: Some(at),
            closed: false,
        };
        let core = Arc::new(Core {
            state: Mutex::new((Armed::default(), session)),
            fired: AtomicUsize::new(0),
        });
        let wake = Arc::new(Notify::new());
        let task = tokio::spawn(run(Arc::downgrade(&core), Arc::clone(&wake)));
        tokio::time::sleep(Duration::from_secs(1)).await;
        core.state.lock().unwrap().1.closed = true;
        wake.notify_one();
        tokio::time::timeout(Duration::from_secs(1), task)
            .await
            .expect("the task ends with the session")
            .unwrap();
        assert_eq!(core.fired.load(Ordering::SeqCst), 0, "ended, not fired");
    }
}
