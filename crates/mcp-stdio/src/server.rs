//! The server half: MCP on stdin and stdout (logs belong on stderr), for the gateway and for
//! any program that wants to be an MCP server. The handler runtime is `mcp-session`'s; this
//! module moves the lines.
//!
//! One pipe is one session, in either era: with a configuration that names a stateless
//! version (`ServerConfig::dual_era`) a client that sends `_meta` instead of `initialize` is
//! served statelessly on the same pipe, its `subscriptions/listen` streams included.

use std::sync::{Arc, Mutex, PoisonError};

use mcp_protocol::{Message, RequestId, ServerConfig};
use mcp_session::{Handler, ServerCore, ServerTransport};
use tokio::io::{AsyncRead, AsyncReadExt as _, AsyncWrite};
use tokio::sync::Notify;

use crate::codec::{Line, LineDecoder, encode_line};
use crate::streams::{self, Output};

/// Serves one client on this process's stdin and stdout until stdin ends.
///
/// It serves in a task of its own on the runtime's worker threads; dropping this future ends
/// it. The runtime must have I/O enabled (`enable_io`, or `enable_all` as `#[tokio::main]`
/// does): tokio panics when a pipe or socket is put on a runtime without a reactor. When stdin and stdout are pipes or sockets (as every host starts a server) they are
/// read and written on tokio's reactor, not through tokio's blocking thread pool. This never
/// makes descriptors 0 and 1 non-blocking for anyone else (see the `streams` module). A
/// terminal or a file keeps tokio's `stdin()` and `stdout()`.
pub async fn serve_stdio<H: Handler>(config: ServerConfig, handler: H) -> std::io::Result<()> {
    let (input, output) = streams::open();
    let sink = match output {
        Output::Tokio(stdout) => Sink::Stream(Box::new(stdout)),
        other => Sink::Direct(Arc::new(other)),
    };
    // The loop runs as a task of its own, on a worker thread, not in the caller's future: a
    // consumer awaits this in `#[tokio::main]`, whose future runs on the main thread, outside
    // the worker pool. There every request read woke a worker to run its handler, and every
    // answer woke the main thread again: three threads and two futex wake-ups per call. On a
    // worker, the handler the loop spawns, and then the writer task, run next on the same
    // thread.
    let mut task = AbortOnDrop(tokio::spawn(serve_on(
        config,
        input,
        sink,
        handler,
        8 << 20,
    )));
    match (&mut task.0).await {
        Ok(result) => result,
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        Err(e) => Err(std::io::Error::other(e)),
    }
}

/// Ends a task when the future that spawned it is dropped: dropping `serve_stdio`'s future
/// stops serving, as it did when the loop ran in the future itself, and dropping the loop
/// stops its writer task.
struct AbortOnDrop<T>(tokio::task::JoinHandle<T>);

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Serves one client over any byte streams until the reader ends. Lines over
/// `max_line_bytes` are discarded.
///
/// The loop runs in this future. On the multi-threaded runtime, spawn it (`tokio::spawn`)
/// rather than awaiting it in `#[tokio::main]`'s future, which runs outside the worker
/// threads: each message would then cross threads twice ([`serve_stdio`] does this itself).
pub async fn serve<R, W, H>(
    config: ServerConfig,
    reader: R,
    writer: W,
    handler: H,
    max_line_bytes: usize,
) -> std::io::Result<()>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin + Send + 'static,
    H: Handler,
{
    serve_on(
        config,
        reader,
        Sink::Stream(Box::new(writer)),
        handler,
        max_line_bytes,
    )
    .await
}

/// Where the lines go.
enum Sink {
    /// Any stream: only the writer task writes, a batch of queued lines at a time.
    Stream(Box<dyn AsyncWrite + Unpin + Send>),
    /// A pipe or socket that can be written without waiting, on the reactor (never
    /// `Output::Tokio`, which cannot).
    Direct(Arc<Output>),
}

async fn serve_on<R, H>(
    config: ServerConfig,
    mut reader: R,
    sink: Sink,
    handler: H,
    max_line_bytes: usize,
) -> std::io::Result<()>
where
    R: AsyncRead + Unpin,
    H: Handler,
{
    let out = Arc::new(Outgoing {
        buffer: Mutex::default(),
        wake: Notify::new(),
    });
    let core = ServerCore::new(config, Arc::new(handler), LineTransport(Arc::clone(&out)));
    // Aborted if this future is dropped: detached, the task would hold the writer open (the
    // client would never see the stream end) and wait forever for lines.
    let mut writer_task = AbortOnDrop(match sink {
        Sink::Direct(output) => tokio::spawn(direct_write_loop(output, Arc::clone(&out))),
        Sink::Stream(writer) => tokio::spawn(write_loop(writer, Arc::clone(&out))),
    });
    let mut decoder = LineDecoder::new(max_line_bytes);
    let mut chunk = vec![0u8; 64 << 10];
    let result = loop {
        match reader.read(&mut chunk).await {
            Ok(0) => break Ok(()),
            Ok(n) => {
                decoder.push(&chunk[..n]);
                while let Some(line) = decoder.next_line() {
                    match line {
                        Line::Frame(bytes) => core.receive_frame(&bytes),
                        // An answer is owed if it was a request, but its id is lost with the
                        // line; the client's own timeout ends that request.
                        Line::Oversize { .. } => {}
                    }
                }
            }
            Err(e) => break Err(e),
        }
    };
    core.close("the client closed the connection");
    out.lock().closing = true;
    out.wake.notify_one();
    let _ = (&mut writer_task.0).await;
    result
}

#[derive(Default)]
struct Buffer {
    bytes: Vec<u8>,
    /// How much of `bytes` a direct output has already written: the rest is still owed. A
    /// large answer leaves in many writes, and moving the rest forward after each would copy
    /// it over and over.
    written: usize,
    closing: bool,
    /// A write failed: the client is gone, and what is queued is dropped.
    broken: bool,
}

/// Lines waiting for the writer task, in order.
struct Outgoing {
    buffer: Mutex<Buffer>,
    wake: Notify,
}

impl Outgoing {
    fn lock(&self) -> std::sync::MutexGuard<'_, Buffer> {
        self.buffer.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Every message becomes a line on stdout; stdio has one stream, so `related` is not needed.
struct LineTransport(Arc<Outgoing>);

impl ServerTransport for LineTransport {
    fn send(&self, message: Message, _related: Option<&RequestId>) {
        let mut b = self.0.lock();
        if b.broken {
            return;
        }
        encode_line(&message, &mut b.bytes);
        self.0.wake.notify_one();
    }
}

/// Writes what fits of the queued bytes without waiting (the lock is held, so the bytes
/// leave in order); a failed write marks the output broken.
fn write_now(output: &Output, b: &mut Buffer) {
    match output.try_write(&b.bytes[b.written..]) {
        Some(Ok(n)) => {
            b.written += n;
            if b.written == b.bytes.len() {
                b.bytes.clear();
                b.written = 0;
            }
        }
        Some(Err(e)) if e.kind() == std::io::ErrorKind::WouldBlock => {}
        Some(Err(_)) => {
            b.broken = true;
            b.bytes.clear();
            b.written = 0;
        }
        None => {}
    }
}

/// Writes whatever is queued, all of it in one write, until the reader ends.
async fn write_loop(writer: Box<dyn AsyncWrite + Unpin + Send>, out: Arc<Outgoing>) {
    crate::writer::write_batches(writer, &out.wake, || {
        let mut b = out.lock();
        (std::mem::take(&mut b.bytes), b.closing)
    })
    .await;
}

/// Writes what is queued as the output takes it, until the reader ends and all is out.
async fn direct_write_loop(output: Arc<Output>, out: Arc<Outgoing>) {
    loop {
        let (pending, closing) = {
            let b = out.lock();
            (!b.bytes.is_empty() && !b.broken, b.closing)
        };
        if pending {
            if output.writable().await.is_err() {
                out.lock().broken = true;
                continue;
            }
            write_now(&output, &mut out.lock());
            continue;
        }
        if closing {
            return;
        }
        out.wake.notified().await;
    }
}
