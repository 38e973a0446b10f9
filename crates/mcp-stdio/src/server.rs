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

/// Serves one client on this process's stdin and stdout until stdin ends.
pub async fn serve_stdio<H: Handler>(config: ServerConfig, handler: H) -> std::io::Result<()> {
    serve(
        config,
        tokio::io::stdin(),
        tokio::io::stdout(),
        handler,
        8 << 20,
    )
    .await
}

/// Serves one client over any byte streams until the reader ends. Lines over
/// `max_line_bytes` are discarded.
pub async fn serve<R, W, H>(
    config: ServerConfig,
    mut reader: R,
    writer: W,
    handler: H,
    max_line_bytes: usize,
) -> std::io::Result<()>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin + Send + 'static,
    H: Handler,
{
    let out = Arc::new(Outgoing::default());
    let core = ServerCore::new(config, Arc::new(handler), LineTransport(Arc::clone(&out)));
    let writer_task = tokio::spawn(write_loop(writer, Arc::clone(&out)));
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
    let _ = writer_task.await;
    result
}

#[derive(Default)]
struct Buffer {
    bytes: Vec<u8>,
    closing: bool,
}

/// Lines waiting for the writer task, in order.
#[derive(Default)]
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
        encode_line(&message, &mut self.0.lock().bytes);
        self.0.wake.notify_one();
    }
}

/// Writes whatever is queued, all of it in one write, until the reader ends.
async fn write_loop<W: AsyncWrite + Unpin>(writer: W, out: Arc<Outgoing>) {
    crate::writer::write_batches(writer, &out.wake, || {
        let mut b = out.lock();
        (std::mem::take(&mut b.bytes), b.closing)
    })
    .await;
}
