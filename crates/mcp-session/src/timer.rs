//! The timer task both cores share: it sleeps until the session's next deadline, fires it, and
//! ends with the session. It holds the core only weakly, so it never keeps a connection alive.

use std::sync::{Arc, Weak};
use std::time::Instant;

use tokio::sync::Notify;

/// What the timer task needs of a core.
pub(crate) trait Deadlines: Send + Sync + 'static {
    /// Records, as the deadline the task sleeps until, and returns the session's next deadline;
    /// `None` once the session is closed, which ends the task.
    fn arm(&self) -> Option<Option<Instant>>;

    /// The deadline has passed: feeds `handle_timeout` to the session.
    fn fire(self: Arc<Self>);
}

/// Whether the task must be woken after a change: for a deadline earlier than the one it sleeps
/// until, or for a closed session, so that the task ends.
pub(crate) fn must_wake(armed: Option<Instant>, next: Option<Instant>, closed: bool) -> bool {
    closed || (next.is_some() && (armed.is_none() || next < armed))
}

/// Runs until the session is closed or the core is gone. `wake` is the core's
/// [`Notify`], held here apart from the core.
pub(crate) async fn run<C: Deadlines>(core: Weak<C>, wake: Arc<Notify>) {
    loop {
        // Created before the deadline is read: a wake-up from then on is not missed (and one
        // given before it was polled left a permit).
        let woken = wake.notified();
        let deadline = {
            let Some(core) = core.upgrade() else { return };
            let Some(deadline) = core.arm() else { return };
            deadline
        };
        let sleep = async {
            match deadline {
                Some(at) => tokio::time::sleep_until(tokio::time::Instant::from_std(at)).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            () = sleep => {
                if let Some(core) = core.upgrade() {
                    core.fire();
                }
            }
            () = woken => {}
        }
    }
}
