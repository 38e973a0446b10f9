//! The write side both halves share: frames queue in order in one buffer and leave the
//! cheapest way the output allows.
//!
//! A pipe or a socket on the reactor (a [`Direct`] output) is written without waiting by
//! whoever queued a frame behind nothing, right after it lets go of its session lock
//! ([`Outbox::flush`]): no task hop, no wake-up, and each answer leaves as soon as it exists,
//! so that the peer works on it while this side goes on with the next. What does not fit
//! waits for the writer task, which waits for the output to drain. Any other stream has only
//! the writer task, which writes every batch queued meanwhile in one write.
//!
//! An outbox may be bounded ([`Outbox::bounded`]): it still takes every frame pushed (a frame
//! is an answer owed, and dropping one would lose it), but says when more than its bound is
//! unsent, and [`Outbox::room`] waits until it is not. The server half waits there before it
//! takes the next request, so a client that never reads stops being read instead of making
//! this process hold every answer.

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
    /// A partial write tells the reactor that the pipe is full (see [`write_some`]).
    fn try_write(&self, buf: &[u8]) -> io::Result<usize> {
        write_some(self, buf, |buf| {
            nix::unistd::write(self, buf).map_err(io::Error::from)
        })
    }

    fn writable(&self) -> impl Future<Output = io::Result<()>> + Send {
        pipe::Sender::writable(self)
    }
}

/// Writes what fits of `buf` with `write` on `sender`'s registration. When only part of it
/// fitted, the pipe or socket is full, and the reactor is told so as if the write had failed
/// with `WouldBlock`: tokio forgets that an output is writable only on that error, so the
/// writer task's next `writable()` would return at once, and its write would fail, one
/// system call wasted each time a frame larger than the pipe is handed over (a 1 MiB answer
/// in 64 KiB pieces wasted 16). A reader that drains the pipe meanwhile raises a new event,
/// which clearing does not lose.
pub(crate) fn write_some(
    sender: &pipe::Sender,
    buf: &[u8],
    write: impl FnOnce(&[u8]) -> io::Result<usize>,
) -> io::Result<usize> {
    let mut took = 0;
    let written = sender.try_io(|| {
        took = write(buf)?;
        if took < buf.len() {
            Err(io::ErrorKind::WouldBlock.into())
        } else {
            Ok(took)
        }
    });
    match written {
        Err(e) if e.kind() == io::ErrorKind::WouldBlock && took > 0 => Ok(took),
        other => other,
    }
}

/// Frames waiting to be written, in order, and the ways they leave.
pub(crate) struct Outbox<D> {
    queue: Mutex<Queue<D>>,
    /// Set when a frame was queued behind nothing on a direct output: the next
    /// [`flush`](Outbox::flush) writes it, and the writer task is not woken for it.
    owed: AtomicBool,
    wake: Notify,
    /// The most unsent bytes [`room`](Outbox::room) lets pass; `usize::MAX` for none.
    limit: usize,
    /// Whether more than `limit` bytes are unsent: changed under the queue's lock, read
    /// without it by [`room`](Outbox::room), which is on the path of every request read.
    full: AtomicBool,
    /// Woken when the unsent bytes fall back to `limit`, or the output breaks.
    drained: Notify,
}

struct Queue<D> {
    bytes: Vec<u8>,
    /// How much of `bytes` is already written: a large frame leaves in many writes, and
    /// moving the rest forward after each would copy it over and over. The written part is
    /// dropped when the queue empties, or by [`compact`](Self::compact).
    written: usize,
    /// Bytes the stream writer task took out of `bytes` and is writing: unsent still.
    in_writer: usize,
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

    /// Bytes pushed and not yet written (none once the output broke: they never will be).
    fn unsent(&self) -> usize {
        if self.broken {
            0
        } else {
            self.bytes.len() - self.written + self.in_writer
        }
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
    /// An outbox writing to `direct`, or (`None`) only through [`write_stream`], with no
    /// bound: the client half's, whose frames are its own caller's requests.
    pub(crate) fn new(direct: Option<D>) -> Self {
        Self::bounded(direct, usize::MAX)
    }

    /// An outbox whose [`room`](Self::room) waits while more than `limit` bytes are unsent.
    pub(crate) fn bounded(direct: Option<D>, limit: usize) -> Self {
        Self {
            queue: Mutex::new(Queue {
                bytes: Vec::new(),
                written: 0,
                in_writer: 0,
                direct: direct.map(Arc::new),
                closing: false,
                broken: false,
            }),
            owed: AtomicBool::new(false),
            wake: Notify::new(),
            limit,
            full: AtomicBool::new(false),
            drained: Notify::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Queue<D>> {
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Records whether `q` is over the bound, after any change to it (called with its lock
    /// held, so the flag follows the queue's changes in order); wakes [`room`](Self::room)
    /// when it no longer is.
    fn note_size(&self, q: &Queue<D>) {
        let full = q.unsent() > self.limit;
        if self.full.swap(full, Ordering::AcqRel) && !full {
            self.drained.notify_one();
        }
    }

    /// Resolves once no more than the bound is unsent (at once when it is not over, or the
    /// output broke: nothing will wait in it then). Only one task waits here: the reader.
    pub(crate) async fn room(&self) {
        while self.full.load(Ordering::Acquire) {
            // A wake-up between the load and this wait is kept by `notify_one` as a permit.
            self.drained.notified().await;
        }
    }

    /// Bytes pushed and not yet written.
    #[cfg(test)]
    pub(crate) fn unsent(&self) -> usize {
        self.lock().unsent()
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
        self.note_size(&q);
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
        self.note_size(&q);
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
                outbox.note_size(&q);
                continue;
            }
            let mut q = outbox.lock();
            q.write_now();
            outbox.note_size(&q);
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
            q.in_writer = batch.len();
            (batch, q.closing)
        };
        if !batch.is_empty() {
            let failed = writer.write_all(&batch).await.is_err() || writer.flush().await.is_err();
            let mut q = outbox.lock();
            q.in_writer = 0;
            if failed {
                q.broken = true;
                q.forget();
            }
            outbox.note_size(&q);
            if failed {
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

    /// A peer that takes only the bytes it was allowed, and would block on the rest.
    #[derive(Default)]
    struct Gate {
        allowed: std::sync::atomic::AtomicUsize,
    }

    impl Direct for Gate {
        fn try_write(&self, buf: &[u8]) -> io::Result<usize> {
            let n = buf.len().min(self.allowed.load(Ordering::Relaxed));
            if n == 0 {
                return Err(io::ErrorKind::WouldBlock.into());
            }
            self.allowed.fetch_sub(n, Ordering::Relaxed);
            Ok(n)
        }

        fn writable(&self) -> impl Future<Output = io::Result<()>> + Send {
            std::future::pending()
        }
    }

    /// What the writer task does once the output is writable.
    fn drain(outbox: &Outbox<Gate>, allow: usize) {
        let mut q = outbox.lock();
        if let Some(gate) = &q.direct {
            gate.allowed.store(allow, Ordering::Relaxed);
        }
        q.write_now();
        outbox.note_size(&q);
    }

    #[test]
    fn a_bounded_outbox_keeps_every_frame_and_has_room_only_under_its_bound() {
        let waker = std::task::Waker::noop();
        let mut cx = std::task::Context::from_waker(waker);
        let outbox = Outbox::bounded(Some(Gate::default()), 1000);

        // Under the bound there is room at once.
        outbox.push(|b| b.extend_from_slice(&[b'a'; 600]));
        outbox.flush();
        assert!(std::pin::pin!(outbox.room()).poll(&mut cx).is_ready());

        // Over it, the frame is kept all the same, and room waits.
        outbox.push(|b| b.extend_from_slice(&[b'b'; 600]));
        outbox.flush();
        assert_eq!(outbox.unsent(), 1200);
        let mut room = std::pin::pin!(outbox.room());
        assert!(room.as_mut().poll(&mut cx).is_pending());
        drain(&outbox, 100);
        assert_eq!(outbox.unsent(), 1100);
        assert!(room.as_mut().poll(&mut cx).is_pending());

        // Written down to the bound, there is room again.
        drain(&outbox, 100);
        assert_eq!(outbox.unsent(), 1000);
        assert!(room.as_mut().poll(&mut cx).is_ready());

        // A broken output holds nothing back: nothing will wait in it.
        outbox.push(|b| b.extend_from_slice(&[b'c'; 600]));
        assert!(std::pin::pin!(outbox.room()).poll(&mut cx).is_pending());
        outbox.lock().broken = true;
        outbox.note_size(&outbox.lock());
        assert!(std::pin::pin!(outbox.room()).poll(&mut cx).is_ready());
    }

    #[tokio::test]
    async fn a_stream_outbox_counts_the_batch_being_written() {
        // A stream that takes nothing until the other end reads: the batch the writer task
        // holds is unsent, and room waits for it.
        let (ours, mut theirs) = tokio::io::duplex(64);
        let outbox = Arc::new(Outbox::<Gate>::bounded(None, 1000));
        let writer = tokio::spawn(write_stream(ours, Arc::clone(&outbox)));
        outbox.push(|b| b.extend_from_slice(&[b'x'; 5000]));
        while !outbox.lock().bytes.is_empty() {
            tokio::task::yield_now().await;
        }
        // The writer task holds the batch now, the queue is empty, and it is unsent still.
        assert_eq!(outbox.unsent(), 5000);
        let mut room = std::pin::pin!(outbox.room());
        let waker = std::task::Waker::noop();
        assert!(
            room.as_mut()
                .poll(&mut std::task::Context::from_waker(waker))
                .is_pending()
        );
        let mut read = vec![0u8; 5000];
        tokio::io::AsyncReadExt::read_exact(&mut theirs, &mut read)
            .await
            .unwrap();
        room.await;
        outbox.close();
        writer.await.unwrap();
        assert_eq!(outbox.unsent(), 0);
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
