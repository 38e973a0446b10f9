//! The write side both halves share: frames queue in order in one buffer and leave the
//! cheapest way the output allows.
//!
//! A pipe or a socket on the reactor (a [`Direct`] output) is written without waiting by
//! whoever queued a frame behind nothing, right after it lets go of its session lock
//! ([`Outbox::flush`]): no task hop, no wake-up, and each answer leaves as soon as it exists,
//! so that the peer works on it while this side goes on with the next. What does not fit
//! waits for the writer task, which waits for the output to drain. Any other stream has only
//! the writer task, which writes every batch queued meanwhile in one write.

use std::future::Future;
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tokio::io::{AsyncWrite, AsyncWriteExt as _};
use tokio::net::unix::pipe;
use tokio::sync::Notify;

/// An output that takes bytes without waiting, and says when it can take more.
pub(crate) trait Direct: Send + Sync + 'static {
    /// Writes what fits now; `WouldBlock` when nothing does.
    fn try_write(&self, buf: &[u8]) -> io::Result<usize>;
    /// Resolves when a write may succeed.
    fn writable(&self) -> impl Future<Output = io::Result<()>> + Send;
}

impl Direct for pipe::Sender {
    fn try_write(&self, buf: &[u8]) -> io::Result<usize> {
        pipe::Sender::try_write(self, buf)
    }

    fn writable(&self) -> impl Future<Output = io::Result<()>> + Send {
        pipe::Sender::writable(self)
    }
}

/// Frames waiting to be written, in order, and the ways they leave.
pub(crate) struct Outbox<D> {
    queue: Mutex<Queue<D>>,
    /// Set when a frame was queued behind nothing on a direct output: the next
    /// [`flush`](Outbox::flush) writes it, and the writer task is not woken for it.
    owed: AtomicBool,
    wake: Notify,
}

struct Queue<D> {
    bytes: Vec<u8>,
    /// How much of `bytes` is already written: a large frame leaves in many writes, and
    /// moving the rest forward after each would copy it over and over. The written part is
    /// dropped when the queue empties, or by [`compact`](Self::compact).
    written: usize,
    /// The direct output; the writer task drops it (closing a pipe) once closing is done.
    direct: Option<Arc<D>>,
    closing: bool,
    /// A write failed: the peer is gone, and what is queued or pushed later is dropped.
    broken: bool,
}

impl<D> Queue<D> {
    fn pending(&self) -> bool {
        self.written < self.bytes.len() && !self.broken
    }

    fn forget(&mut self) {
        self.bytes.clear();
        self.written = 0;
    }

    /// Drops the written part once it is as long as the rest: a queue that never quite
    /// empties (a peer that reads about as fast as frames come) then holds its backlog, not
    /// everything it ever sent. Each byte moved was paid for by a byte written.
    fn compact(&mut self) {
        if self.written > 0 && self.written >= self.bytes.len() - self.written {
            self.bytes.drain(..self.written);
            self.written = 0;
        }
    }
}

impl<D: Direct> Queue<D> {
    /// Writes what fits without waiting; the lock is held, so bytes leave in order.
    fn write_now(&mut self) {
        let Some(direct) = &self.direct else {
            return;
        };
        match direct.try_write(&self.bytes[self.written..]) {
            Ok(n) => {
                self.written += n;
                if self.written == self.bytes.len() {
                    self.forget();
                }
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(_) => {
                self.broken = true;
                self.forget();
            }
        }
    }
}

impl<D: Direct> Outbox<D> {
    /// An outbox writing to `direct`, or (`None`) only through [`write_stream`].
    pub(crate) fn new(direct: Option<D>) -> Self {
        Self {
            queue: Mutex::new(Queue {
                bytes: Vec::new(),
                written: 0,
                direct: direct.map(Arc::new),
                closing: false,
                broken: false,
            }),
            owed: AtomicBool::new(false),
            wake: Notify::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Queue<D>> {
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Queues what `fill` appends, after what is queued. Never writes: called with a session
    /// locked, it leaves the system call to [`flush`](Self::flush).
    pub(crate) fn push(&self, fill: impl FnOnce(&mut Vec<u8>)) {
        let mut q = self.lock();
        if q.broken {
            return;
        }
        let was_empty = !q.pending();
        q.compact();
        fill(&mut q.bytes);
        if !q.pending() {
            return;
        }
        if was_empty && q.direct.is_some() {
            self.owed.store(true, Ordering::Release);
        } else if !self.owed.load(Ordering::Acquire) {
            self.wake.notify_one();
        }
    }

    /// Writes what [`push`](Self::push) left owed, without waiting; what does not fit goes to
    /// the writer task.
    pub(crate) fn flush(&self) {
        if !self.owed.swap(false, Ordering::AcqRel) {
            return;
        }
        let mut q = self.lock();
        q.write_now();
        if q.pending() {
            self.wake.notify_one();
        }
    }

    /// No more frames: the writer task writes what is queued, then ends.
    pub(crate) fn close(&self) {
        self.lock().closing = true;
        self.wake.notify_one();
    }
}

/// The writer task of a direct output: writes what could not be written at once, as the
/// output drains, until closed; then drops the output, which for a pipe whose last handle
/// this is closes it (the first step of a polite shutdown of a server).
pub(crate) async fn write_direct<D: Direct>(outbox: Arc<Outbox<D>>) {
    loop {
        let (direct, pending, closing) = {
            let q = outbox.lock();
            (q.direct.clone(), q.pending(), q.closing)
        };
        let Some(direct) = direct else { return };
        if pending {
            if direct.writable().await.is_err() {
                let mut q = outbox.lock();
                q.broken = true;
                q.forget();
                continue;
            }
            outbox.lock().write_now();
            continue;
        }
        if closing {
            outbox.lock().direct = None;
            return;
        }
        outbox.wake.notified().await;
    }
}

/// The writer task of any other stream: every batch queued meanwhile in one write, until
/// closed or a write fails; then shuts the writer down, which ends the stream for the peer.
pub(crate) async fn write_stream<D: Direct, W: AsyncWrite + Unpin>(
    mut writer: W,
    outbox: Arc<Outbox<D>>,
) {
    loop {
        let (batch, closing) = {
            let mut q = outbox.lock();
            let batch = std::mem::take(&mut q.bytes);
            q.written = 0;
            (batch, q.closing)
        };
        if !batch.is_empty() {
            if writer.write_all(&batch).await.is_err() || writer.flush().await.is_err() {
                let mut q = outbox.lock();
                q.broken = true;
                q.forget();
                break;
            }
            continue;
        }
        if closing {
            break;
        }
        outbox.wake.notified().await;
    }
    let _ = writer.shutdown().await;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A peer that takes at most `per_write` bytes a write, and counts them.
    struct Slow {
        per_write: usize,
        taken: std::sync::atomic::AtomicUsize,
    }

    impl Direct for Slow {
        fn try_write(&self, buf: &[u8]) -> io::Result<usize> {
            let n = buf.len().min(self.per_write);
            self.taken.fetch_add(n, Ordering::Relaxed);
            Ok(n)
        }

        fn writable(&self) -> impl Future<Output = io::Result<()>> + Send {
            std::future::ready(Ok(()))
        }
    }

    #[test]
    fn a_queue_that_never_empties_keeps_only_what_is_unwritten() {
        let outbox = Outbox::new(Some(Slow {
            per_write: 100,
            taken: 0.into(),
        }));
        // Each round queues 100 bytes and writes 100: the backlog stays at 900 bytes, and
        // the queue never empties, however long this goes on.
        outbox.push(|b| b.extend_from_slice(&[b'x'; 1000]));
        outbox.flush();
        for _ in 0..10_000 {
            outbox.push(|b| b.extend_from_slice(&[b'y'; 100]));
            outbox.lock().write_now();
        }
        let q = outbox.lock();
        let direct = q.direct.as_ref().unwrap();
        assert_eq!(direct.taken.load(Ordering::Relaxed), 100 * 10_001);
        assert_eq!(q.bytes.len() - q.written, 900, "the backlog");
        assert!(
            q.bytes.len() <= 2 * 900,
            "{} bytes kept for a backlog of 900",
            q.bytes.len()
        );
    }
}
