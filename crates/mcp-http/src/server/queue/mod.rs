//! Bounded response buffers. What the server has produced for a client but the client has not
//! read yet waits in one [`channel`] per response stream; its bytes count against three limits
//! at once: the stream's own, its session's and the whole server's ([`Limits`]). A stream that
//! would pass any of them is cut: what it holds is dropped at once, its sender refuses
//! everything after, and its receiver reports [`StreamCut`], on which the response is aborted.
//! A client that does not read can therefore never make the server's memory grow past the
//! server's limit, and one such client cannot use up more than its session's share.
//!
//! The senders are synchronous (a session's transport cannot wait), so there is no
//! back-pressure to the handler: a slow reader is cut, never waited for.

use std::collections::VecDeque;
use std::future::poll_fn;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, Waker};

use bytes::Bytes;

/// How many bytes a group of streams (a session's, the server's) may hold at once, and how
/// many they hold now.
#[derive(Debug)]
pub(crate) struct Budget {
    used: AtomicUsize,
    limit: usize,
    /// How many streams this budget has cut, for tests and diagnostics.
    cuts: AtomicU64,
}

impl Budget {
    pub(crate) fn new(limit: usize) -> Arc<Self> {
        Arc::new(Self {
            used: AtomicUsize::new(0),
            limit,
            cuts: AtomicU64::new(0),
        })
    }

    /// Takes `n` bytes if they fit.
    fn take(&self, n: usize) -> bool {
        self.used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |used| {
                used.checked_add(n).filter(|&total| total <= self.limit)
            })
            .is_ok()
    }

    fn give(&self, n: usize) {
        self.used.fetch_sub(n, Ordering::AcqRel);
    }

    /// The bytes held now by the streams of this budget.
    pub(crate) fn used(&self) -> usize {
        self.used.load(Ordering::Acquire)
    }

    /// How many streams were cut because this budget (or their own limit) was spent.
    #[cfg(test)]
    pub(crate) fn cuts(&self) -> u64 {
        self.cuts.load(Ordering::Acquire)
    }
}

/// The limits one stream's bytes count against.
#[derive(Debug, Clone)]
pub(crate) struct Limits {
    /// The stream's own limit. One item always fits in an empty stream, so that an answer
    /// larger than this limit still reaches a client that reads; the session's and the
    /// server's budgets still count it.
    pub(crate) stream: usize,
    /// Its session's budget, shared by the session's streams.
    pub(crate) session: Arc<Budget>,
    /// The server's budget, shared by every stream.
    pub(crate) server: Arc<Budget>,
}

/// What a stream carries, with its size.
pub(crate) trait Weigh {
    /// The bytes it holds, as counted against the limits.
    fn weight(&self) -> usize;
}

impl Weigh for Bytes {
    fn weight(&self) -> usize {
        self.len()
    }
}

/// The response was aborted: the client did not read it fast enough, and what it did not
/// read passed a limit on what the server may hold for it.
#[derive(Debug, Clone, Copy, thiserror::Error)]
#[error("the response stream was cut: the client did not read what the server had buffered for it")]
pub struct StreamCut(());

struct State<T> {
    items: VecDeque<T>,
    /// The bytes of `items`.
    bytes: usize,
    /// The sender is gone: the stream ends once `items` is read.
    finished: bool,
    /// The receiver is gone: nothing more is kept.
    abandoned: bool,
    cut: bool,
    waker: Option<Waker>,
}

struct Shared<T> {
    state: Mutex<State<T>>,
    limits: Limits,
}

impl<T> Shared<T> {
    fn lock(&self) -> MutexGuard<'_, State<T>> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Drops what is held and gives its bytes back.
    fn release_all(&self, state: &mut State<T>) {
        state.items.clear();
        self.limits.session.give(state.bytes);
        self.limits.server.give(state.bytes);
        state.bytes = 0;
    }
}

/// A bounded stream with one sender and one receiver.
pub(crate) fn channel<T: Weigh>(limits: Limits) -> (Sender<T>, Receiver<T>) {
    let shared = Arc::new(Shared {
        state: Mutex::new(State {
            items: VecDeque::new(),
            bytes: 0,
            finished: false,
            abandoned: false,
            cut: false,
            waker: None,
        }),
        limits,
    });
    (
        Sender {
            shared: Arc::clone(&shared),
        },
        Receiver { shared },
    )
}

/// The producing end; dropping it ends the stream after what it holds.
pub(crate) struct Sender<T: Weigh> {
    shared: Arc<Shared<T>>,
}

impl<T: Weigh> Sender<T> {
    /// Queues `item`, or cuts the stream if it does not fit. Returns whether it was queued.
    pub(crate) fn send(&self, item: T) -> bool {
        let n = item.weight();
        let limits = &self.shared.limits;
        let mut state = self.shared.lock();
        if state.abandoned || state.cut {
            return false;
        }
        let fits_stream = state.items.is_empty()
            || state
                .bytes
                .checked_add(n)
                .is_some_and(|total| total <= limits.stream);
        let taken_session = fits_stream && limits.session.take(n);
        let taken_server = taken_session && limits.server.take(n);
        if !taken_server {
            if taken_session {
                limits.session.give(n);
            }
            self.shared.release_all(&mut state);
            state.cut = true;
            // Counted where it was spent: the session's (and the stream's own) budget, or the
            // server's.
            if taken_session {
                limits.server.cuts.fetch_add(1, Ordering::AcqRel);
            } else {
                limits.session.cuts.fetch_add(1, Ordering::AcqRel);
            }
            if let Some(waker) = state.waker.take() {
                waker.wake();
            }
            return false;
        }
        state.bytes += n;
        state.items.push_back(item);
        if let Some(waker) = state.waker.take() {
            waker.wake();
        }
        true
    }

    /// Whether nothing sent will be read: the client went away, or the stream was cut.
    pub(crate) fn is_closed(&self) -> bool {
        let state = self.shared.lock();
        state.abandoned || state.cut
    }
}

impl<T: Weigh> Drop for Sender<T> {
    fn drop(&mut self) {
        let mut state = self.shared.lock();
        state.finished = true;
        if let Some(waker) = state.waker.take() {
            waker.wake();
        }
    }
}

/// The consuming end: the response body. Dropping it drops what it held.
pub(crate) struct Receiver<T: Weigh> {
    shared: Arc<Shared<T>>,
}

impl<T: Weigh> Receiver<T> {
    /// The next item; `Ok(None)` once the sender is gone and everything was read.
    pub(crate) fn poll_recv(&mut self, cx: &mut Context<'_>) -> Poll<Result<Option<T>, StreamCut>> {
        let mut state = self.shared.lock();
        if state.cut {
            return Poll::Ready(Err(StreamCut(())));
        }
        if let Some(item) = state.items.pop_front() {
            let n = item.weight();
            state.bytes -= n;
            self.shared.limits.session.give(n);
            self.shared.limits.server.give(n);
            return Poll::Ready(Ok(Some(item)));
        }
        if state.finished {
            return Poll::Ready(Ok(None));
        }
        state.waker = Some(cx.waker().clone());
        Poll::Pending
    }

    /// [`poll_recv`](Self::poll_recv) as a future; cancel-safe (an item is taken only when
    /// it is returned).
    pub(crate) async fn recv(&mut self) -> Result<Option<T>, StreamCut> {
        poll_fn(|cx| self.poll_recv(cx)).await
    }
}

impl<T: Weigh> Drop for Receiver<T> {
    fn drop(&mut self) {
        let mut state = self.shared.lock();
        state.abandoned = true;
        self.shared.release_all(&mut state);
    }
}

#[cfg(test)]
mod tests;
