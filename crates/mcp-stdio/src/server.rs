//! The server half: MCP on stdin and stdout (logs belong on stderr), for the gateway and for
//! any program that wants to be an MCP server. The handler runtime is `mcp-session`'s; this
//! module moves the lines.
//!
//! One pipe is one session, in either era: with a configuration that names a stateless
//! version (`ServerConfig::dual_era`) a client that sends `_meta` instead of `initialize` is
//! served statelessly on the same pipe, its `subscriptions/listen` streams included.

use std::sync::Arc;

use mcp_protocol::{Message, RequestId, ServerConfig};
use mcp_session::{Handler, ServerCore, ServerTransport};
use tokio::io::{AsyncRead, AsyncReadExt as _, AsyncWrite};

use crate::codec::{Line, LineDecoder, encode_line};
use crate::outbox::{self, Outbox};
use crate::streams::{self, DirectOutput, Output};

/// How many bytes of answers may wait unsent before the server stops taking requests: 8 MiB.
/// A client that writes requests and never reads its answers is then no longer read (its
/// writes block once the pipe is full) instead of making this process hold every answer.
/// What is already being answered still adds its answer, so the most held is this, plus
/// the answers of the requests in flight, plus (on a stream that is not a pipe or socket) the
/// batch being written.
const MAX_UNSENT_BYTES: usize = 8 << 20;

/// Serves one client on this process's stdin and stdout until stdin ends.
///
/// It serves in a task of its own on the runtime's worker threads; dropping this future ends
/// it.
///
/// Answers that the client does not read are held up to a bound (8 MiB, plus the answers of
/// the requests already in flight): beyond it, no more requests are read until the client
/// reads, so a client that never reads cannot make this process grow. No answer is dropped.
///
/// When stdin and stdout are pipes or sockets (as every host starts a server) they are read
/// and written on tokio's reactor, not through tokio's blocking thread pool. This never makes
/// descriptors 0 and 1 non-blocking for anyone else (see the `streams` module). A terminal
/// or a file keeps tokio's `stdin()` and `stdout()`.
///
/// # Panics
///
/// When the runtime has no I/O driver (it was built without `enable_io` or `enable_all`;
/// `#[tokio::main]` enables it) and stdin or stdout is a pipe or socket: tokio panics when
/// one is put on a runtime without a reactor.
pub async fn serve_stdio<H: Handler>(config: ServerConfig, handler: H) -> std::io::Result<()> {
    let (input, output) = streams::open();
    let sink = match output {
        Output::Tokio(stdout) => Sink::Stream(Box::new(stdout)),
        Output::Direct(direct) => Sink::Direct(direct),
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
/// `max_line_bytes` are discarded. As in [`serve_stdio`], no more requests are read while
/// more than 8 MiB of answers wait for the writer to take them.
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
    /// A pipe or socket that can be written without waiting, on the reactor.
    Direct(DirectOutput),
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
    let (out, writer) = match sink {
        Sink::Direct(output) => (
            Arc::new(Outbox::bounded(Some(output), MAX_UNSENT_BYTES)),
            None,
        ),
        Sink::Stream(writer) => (
            Arc::new(Outbox::bounded(None, MAX_UNSENT_BYTES)),
            Some(writer),
        ),
    };
    let core = ServerCore::new(config, Arc::new(handler), LineTransport(Arc::clone(&out)));
    // Aborted if this future is dropped: detached, the task would hold the writer open (the
    // client would never see the stream end) and wait forever for lines.
    let mut writer_task = AbortOnDrop(match writer {
        None => tokio::spawn(outbox::write_direct(Arc::clone(&out))),
        Some(writer) => tokio::spawn(outbox::write_stream(writer, Arc::clone(&out))),
    });
    let mut decoder = LineDecoder::new(max_line_bytes);
    let result = loop {
        // Each line read is taken only once the answers waiting are under the bound: one
        // read may hold a thousand small requests, each of whose answers may be large. While
        // the client does not read, neither does this loop, and its writes block instead.
        loop {
            out.room().await;
            match decoder.next_line() {
                Some(Line::Frame(bytes)) => core.receive_frame(&bytes),
                // An answer is owed if it was a request, but its id is lost with the line;
                // the client's own timeout ends that request.
                Some(Line::Oversize { .. }) => {}
                None => break,
            }
        }
        // Straight into the decoder's buffer, with no copy on the way.
        match reader.read_buf(decoder.read_buffer(64 << 10)).await {
            Ok(0) => break Ok(()),
            Ok(_) => decoder.appended(),
            Err(e) => break Err(e),
        }
    };
    core.close("the client closed the connection");
    out.close();
    let _ = (&mut writer_task.0).await;
    result
}

/// Every message becomes a line on stdout; stdio has one stream, so `related` is not needed.
/// An answer is written as soon as its session lock is released (see [`Outbox`]).
struct LineTransport(Arc<Outbox<DirectOutput>>);

impl ServerTransport for LineTransport {
    fn send(&self, message: Message, _related: Option<&RequestId>) {
        self.0.push(|bytes| encode_line(&message, bytes));
    }

    fn flush(&self) {
        self.0.flush();
    }
}
