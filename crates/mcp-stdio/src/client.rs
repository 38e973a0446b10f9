//! The stdio transport of the client: a reader task that splits the server's stdout into
//! frames for the `mcp-session` core, a writer that sends what the session queues, and a
//! supervisor that owns the process. The protocol is the session's; this module moves bytes.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use mcp_protocol::{ClientConfig, ClientSession};
use mcp_session::{Client, Core, Pending, Sending, Transport};
use tokio::io::{AsyncRead, AsyncReadExt as _, AsyncWrite};
use tokio::net::unix::pipe;
use tokio::sync::{Notify, watch};

use crate::child::{self, StderrLog, StdioConfig};
use crate::codec::{Line, LineDecoder, encode_line};
use crate::error::{Error, Result};
use crate::outbox::{self, Outbox};

/// Starts the server described by `config` and initializes a session with it.
///
/// Fails if the server cannot start, or does not complete the handshake within the session's
/// request timeout; the process is then ended before this returns, and the error carries its
/// exit status and last words on stderr (configured secrets redacted).
///
/// Dropping every handle of the returned client without
/// [`close`](mcp_session::Client::close) kills the server's process group at once (SIGKILL),
/// and ends the tasks that read and write its pipes, closing our ends; `close` ends it
/// politely.
pub async fn spawn(config: StdioConfig, session: ClientConfig) -> Result<Client> {
    let spawned = child::spawn(&config)?;
    let pipe = spawned
        .stdin
        .into_owned_fd()
        .and_then(pipe::Sender::from_owned_fd)
        .map_err(|source| {
            child::kill_group_now(spawned.pgid);
            Error::Io {
                server: config.name.clone(),
                context: "preparing the server's stdin",
                source,
            }
        })?;
    let (exited_tx, exited) = watch::channel(None);
    let inner = Arc::new(Inner {
        out: Arc::new(Outbox::new(Some(pipe))),
        stderr: Some(spawned.stderr),
        exited,
        shutdown: Notify::new(),
        dropped: Notify::new(),
        pgid: Some(spawned.pgid),
    });
    let pending = Pending::new(&config.name, session, StdioTransport(Arc::clone(&inner)));
    let core = Arc::clone(pending.core());
    tokio::spawn(supervise(
        spawned.child,
        spawned.pgid,
        spawned.guard,
        Arc::clone(&inner),
        exited_tx,
        config.close_timeout,
        config.term_timeout,
    ));
    tokio::spawn(outbox::write_direct(Arc::clone(&inner.out)));
    tokio::spawn(read_loop(
        spawned.stdout,
        core,
        Arc::clone(&inner),
        config.max_line_bytes,
    ));
    let guard = Arc::new(DropGuard {
        inner,
        pgid: Some(spawned.pgid),
    });
    Ok(pending.connect(guard).await?)
}

/// Runs a session over any byte streams: an in-process server, a socket, a test pipe.
///
/// Dropping every handle of the returned client without
/// [`close`](mcp_session::Client::close) ends the connection as `close` does: the writer
/// writes what is queued, then shuts `writer` down (the peer reads the end of its input), and
/// the reader stops reading. Both are dropped as their tasks end.
pub async fn connect<R, W>(
    name: &str,
    reader: R,
    writer: W,
    session: ClientConfig,
    max_line_bytes: usize,
) -> Result<Client>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (exited_tx, exited) = watch::channel(None);
    let inner = Arc::new(Inner {
        out: Arc::new(Outbox::new(None)),
        stderr: None,
        exited,
        shutdown: Notify::new(),
        dropped: Notify::new(),
        pgid: None,
    });
    let pending = Pending::new(name, session, StdioTransport(Arc::clone(&inner)));
    let core = Arc::clone(pending.core());
    let out = Arc::clone(&inner.out);
    tokio::spawn(async move {
        outbox::write_stream(writer, out).await;
        let _ = exited_tx.send(Some("closed".to_owned()));
    });
    tokio::spawn(read_loop(reader, core, Arc::clone(&inner), max_line_bytes));
    Ok(pending
        .connect(Arc::new(DropGuard { inner, pgid: None }))
        .await?)
}

/// What the transport shares with its tasks.
struct Inner {
    /// Frames for the server's stdin. With a pipe, the caller that queued a frame behind
    /// nothing writes it once the session lock is released; the writer task writes the rest,
    /// and closes stdin when the host closes.
    out: Arc<Outbox<pipe::Sender>>,
    stderr: Option<Arc<StderrLog>>,
    /// How the connection ended, once it has (the process's exit status).
    exited: watch::Receiver<Option<String>>,
    /// Asks the supervisor to shut the process down.
    shutdown: Notify,
    /// Tells the reader that every client handle is gone.
    dropped: Notify,
    /// The server's process group, for a child process: what [`Transport::kill`] kills.
    pgid: Option<i32>,
}

/// The transport the `mcp-session` core drives.
struct StdioTransport(Arc<Inner>);

impl Transport for StdioTransport {
    fn transmit(&self, _core: &Arc<Core>, session: &mut ClientSession, _: &mut Vec<Sending>) {
        self.0.out.push(|bytes| {
            while let Some(message) = session.poll_transmit() {
                encode_line(&message, bytes);
            }
        });
    }

    fn flush(&self) {
        self.0.out.flush();
    }

    fn end_reason(&self, what: &str) -> String {
        let mut reason = what.to_owned();
        if let Some(status) = self.0.exited.borrow().as_ref() {
            reason = format!("{what} (server exited: {status})");
        }
        if let Some(stderr) = &self.0.stderr {
            let tail = stderr.tail(5);
            if !tail.is_empty() {
                reason = format!("{reason}; stderr: {}", truncate(&tail, 600));
            }
        }
        reason
    }

    fn stderr(&self) -> String {
        self.0.stderr.as_ref().map(|s| s.text()).unwrap_or_default()
    }

    fn kill(&self) {
        // The supervisor then sees the server end, sweeps the group and ends the keeper.
        if let Some(pgid) = self.0.pgid {
            child::kill_group_now(pgid);
        }
    }

    fn close(&self) -> Pin<Box<dyn Future<Output = String> + Send + '_>> {
        let inner = Arc::clone(&self.0);
        Box::pin(async move {
            inner.out.close();
            inner.shutdown.notify_one();
            let mut exited = inner.exited.clone();
            let status = exited
                .wait_for(Option::is_some)
                .await
                .ok()
                .and_then(|s| s.clone());
            status.unwrap_or_else(|| "unknown".to_owned())
        })
    }
}

fn truncate(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// Ends the connection when the last client handle goes away without `close`: kills the
/// server's group at once (a child process), and ends the tasks: the writer writes what is
/// queued (or finds the pipe broken) and closes the server's input, the reader stops.
struct DropGuard {
    inner: Arc<Inner>,
    /// The server's process group, for a child process.
    pgid: Option<i32>,
}

impl Drop for DropGuard {
    fn drop(&mut self) {
        if let Some(pgid) = self.pgid {
            child::kill_group_now(pgid);
        }
        self.inner.out.close();
        self.inner.dropped.notify_one();
    }
}

/// Reads frames until the stream ends, then ends the session with the reason; or until every
/// client handle is gone.
async fn read_loop<R: AsyncRead + Unpin>(
    mut reader: R,
    core: Arc<Core>,
    inner: Arc<Inner>,
    max_line: usize,
) {
    let mut decoder = LineDecoder::new(max_line);
    let end = loop {
        let read = tokio::select! {
            // Straight into the decoder's buffer: a large answer is copied by nobody on its
            // way from the pipe to the session.
            read = reader.read_buf(decoder.read_buffer(64 << 10)) => read,
            // Nobody is left to take what the server says.
            () = inner.dropped.notified() => return,
        };
        match read {
            Ok(0) => break "the server closed its stdout".to_owned(),
            Ok(_) => {
                decoder.appended();
                while let Some(line) = decoder.next_line() {
                    match line {
                        Line::Frame(bytes) => core.receive_frame(&bytes),
                        Line::Oversize { head, len } => {
                            core.diagnostic(format!(
                                "discarded a stdout line of {len} bytes, over the limit of {max_line} bytes"
                            ));
                            if let Some(id) = mcp_protocol::sniff_id(&head) {
                                core.fail_request(
                                    &id,
                                    &format!("the response was {len} bytes, over the limit of {max_line} bytes"),
                                );
                            }
                        }
                    }
                }
            }
            Err(e) => break format!("reading the server's stdout failed: {e}"),
        }
        if core.is_closed() {
            return;
        }
    };
    // Give the supervisor a moment to learn the exit status, and the stderr reader to take
    // the server's last words, for a better message: on a loaded machine either may lag the
    // end of stdout.
    let mut exited = inner.exited.clone();
    let stderr = inner.stderr.clone();
    let _ = tokio::time::timeout(Duration::from_millis(500), async {
        let _ = exited.wait_for(Option::is_some).await;
        if let Some(log) = stderr {
            log.drained().await;
        }
    })
    .await;
    core.end(&end);
}

/// Owns the process: reports its exit, and on the host's word shuts it down with its group.
/// Holds the group's guard (its keeper) until the group has been shut down; dropped with the
/// runtime, the guard makes the keeper kill the group.
async fn supervise(
    mut child: tokio::process::Child,
    pgid: i32,
    guard: child::Guard,
    inner: Arc<Inner>,
    exited: watch::Sender<Option<String>>,
    close_timeout: Duration,
    term_timeout: Duration,
) {
    let status = tokio::select! {
        status = child.wait() => {
            // It ended on its own (a crash, or it closed by itself). Say so at once, for the
            // error message, then end whatever it left behind in its group.
            let status = child::describe(status);
            let _ = exited.send(Some(status.clone()));
            child::sweep_group(pgid, guard.keeper_pid(), term_timeout).await;
            status
        }
        () = inner.shutdown.notified() => {
            // The writer closes stdin once it has flushed; then the polite sequence.
            child::shutdown(&mut child, pgid, guard.keeper_pid(), close_timeout, term_timeout)
                .await
        }
    };
    exited.send_if_modified(|current| {
        let changed = current.is_none();
        current.get_or_insert(status);
        changed
    });
    guard.end().await;
}
