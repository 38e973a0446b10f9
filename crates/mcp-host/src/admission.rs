//! The host's connection limit as a queue: at most `limit` servers run at once, and the ones
//! past it wait in the order they were started (the configuration's order), each admitted
//! when a running one stops for good. A semaphore raced by tasks spawned together would admit
//! a different set on each run; this decides at start, synchronously, in order.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::oneshot;

/// The limit and who waits for it. Shared by the host and every permit.
#[derive(Debug)]
pub(crate) struct Admission {
    limit: usize,
    queue: Mutex<Queue>,
}

#[derive(Debug)]
struct Queue {
    /// Permits not held by anyone.
    free: usize,
    /// The servers waiting for one, first come first served.
    waiting: VecDeque<oneshot::Sender<Permit>>,
}

/// A server's right to run, given back (to the next in line) when dropped.
#[derive(Debug)]
pub(crate) struct Permit {
    /// `None` once handed over: dropping it then gives back nothing.
    admission: Option<Arc<Admission>>,
}

/// What [`Admission::enter`] gives: a permit now, or a place in the line.
#[derive(Debug)]
pub(crate) enum Ticket {
    /// Admitted at once.
    Admitted(Permit),
    /// Past the limit: the permit comes through this when the server's turn comes.
    Waiting(oneshot::Receiver<Permit>),
}

impl Admission {
    /// A limit of `limit` servers at once.
    pub(crate) fn new(limit: usize) -> Arc<Self> {
        Arc::new(Self {
            limit,
            queue: Mutex::new(Queue {
                free: limit,
                waiting: VecDeque::new(),
            }),
        })
    }

    /// The limit, for the words that explain a wait.
    pub(crate) fn limit(&self) -> usize {
        self.limit
    }

    /// Enters a server: admitted if a permit is free and nobody waits, else queued after the
    /// ones already waiting.
    pub(crate) fn enter(self: &Arc<Self>) -> Ticket {
        let mut queue = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
        if queue.free > 0 && queue.waiting.is_empty() {
            queue.free -= 1;
            return Ticket::Admitted(Permit {
                admission: Some(Arc::clone(self)),
            });
        }
        let (tx, rx) = oneshot::channel();
        queue.waiting.push_back(tx);
        Ticket::Waiting(rx)
    }

    /// A permit came back: to the first one still waiting, or to the free ones.
    fn release(self: &Arc<Self>) {
        let mut queue = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
        while let Some(next) = queue.waiting.pop_front() {
            let permit = Permit {
                admission: Some(Arc::clone(self)),
            };
            match next.send(permit) {
                Ok(()) => return,
                // That server was stopped while it waited: the next one's turn. The permit
                // comes back unused and must not be given back twice.
                Err(mut unused) => unused.admission = None,
            }
        }
        queue.free += 1;
    }
}

impl Drop for Permit {
    fn drop(&mut self) {
        if let Some(admission) = self.admission.take() {
            admission.release();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Admission, Ticket};

    fn admitted(ticket: &Ticket) -> bool {
        matches!(ticket, Ticket::Admitted(_))
    }

    #[test]
    fn past_the_limit_servers_wait_and_are_admitted_in_order() {
        let admission = Admission::new(2);
        let a = admission.enter();
        let b = admission.enter();
        let c = admission.enter();
        let d = admission.enter();
        let e = admission.enter();
        assert!(admitted(&a) && admitted(&b));
        let (Ticket::Waiting(mut c), Ticket::Waiting(d), Ticket::Waiting(mut e)) = (c, d, e) else {
            panic!("past the limit of 2, servers wait");
        };
        assert!(c.try_recv().is_err());
        // `d` is stopped while it waits; `a` stops: `c` is next.
        drop(d);
        drop(a);
        let c = c.try_recv().unwrap();
        assert!(e.try_recv().is_err());
        // `b` stops: `d` is gone, so `e`.
        drop(b);
        let e = e.try_recv().unwrap();
        // A newcomer waits: nobody stopped.
        assert!(!admitted(&admission.enter()));
        drop((c, e));
        // The newcomer gave up its place when its ticket was dropped: both permits are free.
        assert!(admitted(&admission.enter()));
    }
}
