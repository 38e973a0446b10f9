//! This process's stdin and stdout for [`serve_stdio`](crate::serve_stdio), on tokio's reactor
//! when they are pipes or sockets, which is how every MCP host starts a server.
//!
//! tokio's own `stdin()` and `stdout()` hand every read and every write to the blocking thread
//! pool: a thread hop and a wake-up per message each way. A pipe or a socket can instead be
//! read and written without blocking and waited on with epoll, like any socket.
//!
//! Non-blocking mode is a flag of the open file description, which every process that
//! inherited the descriptor shares (the host's shell, a child of ours, and our own
//! `std::io::stdout()`, where a full pipe would then make `println!` fail). So it is never
//! set on descriptors 0 and 1:
//!
//! - a pipe (FIFO) is reopened through `/proc/self/fd/N`, which gives this process a new
//!   open file description of the same pipe, non-blocking for us alone. rmcp's
//!   `stdio_pipes` does the same; Node's libuv, by contrast, sets `O_NONBLOCK` on the
//!   inherited descriptions, and the Python SDK reads in worker threads;
//! - a socket (Node's `child_process` gives a server socket pairs) cannot be reopened, so it
//!   is read and written with `recv`/`send` and `MSG_DONTWAIT`, which do not wait whatever
//!   the description's flag says;
//! - anything else (a terminal, a regular file, `/dev/null`), or a Linux without `/proc`,
//!   keeps tokio's `stdin()` and `stdout()`: epoll refuses regular files, and a terminal is
//!   shared with the shell.

use std::fs::File;
use std::io;
use std::os::fd::{AsFd as _, AsRawFd as _, BorrowedFd, OwnedFd};
use std::os::unix::fs::{FileTypeExt as _, OpenOptionsExt as _};
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use nix::sys::socket::{MsgFlags, recv, send};
use tokio::io::{AsyncRead, ReadBuf};
use tokio::net::unix::pipe;

use crate::outbox::{Direct, write_some};

/// What stdin or stdout is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Fifo,
    Socket,
    Other,
}

fn kind(fd: BorrowedFd<'_>) -> Kind {
    let Ok(meta) = fd
        .try_clone_to_owned()
        .map(File::from)
        .and_then(|f| f.metadata())
    else {
        return Kind::Other;
    };
    let ty = meta.file_type();
    if ty.is_fifo() {
        Kind::Fifo
    } else if ty.is_socket() {
        Kind::Socket
    } else {
        Kind::Other
    }
}

/// The read side of stdin.
pub(crate) enum Input {
    Pipe(pipe::Receiver),
    Socket(SocketIn),
    Tokio(tokio::io::Stdin),
}

/// The write side of stdout.
pub(crate) enum Output {
    /// On the reactor: written without waiting.
    Direct(DirectOutput),
    /// Written through the blocking pool.
    Tokio(tokio::io::Stdout),
}

/// Stdout on the reactor.
pub(crate) enum DirectOutput {
    Pipe(pipe::Sender),
    Socket(SocketOut),
}

/// Stdin and stdout, each on the reactor when it can be, each independently of the other.
/// Must be called within a tokio runtime.
pub(crate) fn open() -> (Input, Output) {
    let stdin = io::stdin();
    let stdout = io::stdout();
    let input = match kind(stdin.as_fd()) {
        Kind::Fifo => reopen(0, false)
            .and_then(|fd| pipe::Receiver::from_owned_fd(fd).ok())
            .map(Input::Pipe),
        Kind::Socket => SocketIn::new(stdin.as_fd()).map(Input::Socket),
        Kind::Other => None,
    };
    let output = match kind(stdout.as_fd()) {
        // The pipe keeps its capacity: growing it (F_SETPIPE_SZ) sped a 1 MiB answer up by a
        // fifth, but Linux charges pipe memory to the user, and once a user's share is spent
        // every new pipe of theirs, a shell's included, gets a single page.
        Kind::Fifo => reopen(1, true)
            .and_then(|fd| pipe::Sender::from_owned_fd(fd).ok())
            .map(DirectOutput::Pipe),
        Kind::Socket => SocketOut::new(stdout.as_fd()).map(DirectOutput::Socket),
        Kind::Other => None,
    };
    (
        input.unwrap_or_else(|| Input::Tokio(tokio::io::stdin())),
        output.map_or_else(|| Output::Tokio(tokio::io::stdout()), Output::Direct),
    )
}

/// `MSG_NOSIGNAL` where there is one: a client gone away is an error value, never SIGPIPE.
/// macOS has none (a Rust program ignores SIGPIPE unless told otherwise, and tokio's
/// `stdout()` would raise it just the same).
#[cfg(target_os = "linux")]
const NO_SIGPIPE: MsgFlags = MsgFlags::MSG_NOSIGNAL;
#[cfg(not(target_os = "linux"))]
const NO_SIGPIPE: MsgFlags = MsgFlags::empty();

/// Descriptor `n` of this process opened again, non-blocking, on a description of its own;
/// `None` where `/proc` is missing, or (for writing) when the pipe has no reader left.
fn reopen(n: i32, write: bool) -> Option<OwnedFd> {
    let file = std::fs::OpenOptions::new()
        .read(!write)
        .write(write)
        .custom_flags(nix::libc::O_NONBLOCK | nix::libc::O_CLOEXEC)
        .open(format!("/proc/self/fd/{n}"))
        .ok()?;
    // Whatever was reopened must still be a pipe (not, say, a path that changed meanwhile).
    (kind(file.as_fd()) == Kind::Fifo).then(|| file.into())
}

impl Direct for DirectOutput {
    fn try_write(&self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Self::Pipe(p) => write_some(p, buf, |buf| {
                nix::unistd::write(p, buf).map_err(io::Error::from)
            }),
            Self::Socket(s) => s.try_send(buf),
        }
    }

    async fn writable(&self) -> io::Result<()> {
        match self {
            Self::Pipe(p) => p.writable().await,
            Self::Socket(s) => s.0.writable().await,
        }
    }
}

impl AsyncRead for Input {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Self::Pipe(p) => Pin::new(p).poll_read(cx, buf),
            Self::Socket(s) => s.poll_recv(cx, buf),
            Self::Tokio(t) => Pin::new(t).poll_read(cx, buf),
        }
    }
}

/// Stdin as a socket on the reactor, read only with `recv` and `MSG_DONTWAIT`, so that the
/// blocking flag it shares with other processes is never touched.
///
/// tokio has no safe registration for a descriptor that stays blocking, so a socket is
/// registered as a pipe end (epoll does not tell them apart). Only the registration, the
/// readiness and `close` of that pipe type are used, never its reads and writes, which would
/// expect the flag set. A TCP socket, as inetd gives one, works the same.
pub(crate) struct SocketIn(pipe::Receiver);

/// Stdout as a socket on the reactor, written only with `send` and `MSG_DONTWAIT` (see
/// [`SocketIn`]).
pub(crate) struct SocketOut(pipe::Sender);

impl SocketIn {
    /// A duplicate of `fd` registered with the reactor for reading; `None` if either step
    /// fails.
    fn new(fd: BorrowedFd<'_>) -> Option<Self> {
        let owned = fd.try_clone_to_owned().ok()?;
        pipe::Receiver::from_owned_fd_unchecked(owned)
            .ok()
            .map(Self)
    }

    fn poll_recv(&self, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let socket = &self.0;
        let fd = socket.as_raw_fd();
        loop {
            ready!(socket.poll_read_ready(cx))?;
            let unfilled = buf.initialize_unfilled();
            match socket
                .try_io(|| recv(fd, unfilled, MsgFlags::MSG_DONTWAIT).map_err(io::Error::from))
            {
                Ok(n) => {
                    buf.advance(n);
                    return Poll::Ready(Ok(()));
                }
                // Not readable after all: `try_io` cleared the readiness; wait again.
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
    }
}

impl SocketOut {
    /// A duplicate of `fd` registered with the reactor for writing; `None` if either step
    /// fails.
    fn new(fd: BorrowedFd<'_>) -> Option<Self> {
        let owned = fd.try_clone_to_owned().ok()?;
        pipe::Sender::from_owned_fd_unchecked(owned).ok().map(Self)
    }

    fn try_send(&self, buf: &[u8]) -> io::Result<usize> {
        let fd = self.0.as_raw_fd();
        write_some(&self.0, buf, |buf| {
            send(fd, buf, MsgFlags::MSG_DONTWAIT | NO_SIGPIPE).map_err(io::Error::from)
        })
    }
}

#[cfg(test)]
mod tests {
    use std::future::Future;
    use std::pin::pin;
    use std::task::Waker;

    use super::*;

    /// Whether `output` reports itself writable now, without waiting.
    fn writable_now(output: &impl Direct) -> bool {
        let mut cx = Context::from_waker(Waker::noop());
        pin!(output.writable()).poll(&mut cx).is_ready()
    }

    /// Writes more than `output` holds, and checks that it then waits for its reader (which
    /// `drain` reads `n` bytes from) instead of being written again at once.
    async fn fill_and_drain<F: Future<Output = ()>>(
        output: &impl Direct,
        drain: impl FnOnce(usize) -> F,
    ) {
        // The reactor learns that the new output is writable.
        output.writable().await.unwrap();
        assert!(writable_now(output));

        // More than a pipe or socket holds: part of it is written, and the output is full.
        let frame = vec![b'x'; 16 << 20];
        let took = output.try_write(&frame).unwrap();
        assert!(took > 0 && took < frame.len(), "took {took} bytes");
        assert!(
            !writable_now(output),
            "a full output must wait for its reader, not be written again at once"
        );

        // Once the reader takes what is there, the rest can be written.
        drain(took).await;
        output.writable().await.unwrap();
        assert!(output.try_write(&frame[took..]).unwrap() > 0);
    }

    #[tokio::test]
    async fn a_write_that_fills_the_pipe_leaves_it_waiting_for_the_reader() {
        let (sender, mut receiver) = pipe::pipe().unwrap();
        let output = DirectOutput::Pipe(sender);
        // Borrowed: the reader stays open for the last write.
        let reader = &mut receiver;
        fill_and_drain(&output, |n| async move {
            let mut read = vec![0; n];
            tokio::io::AsyncReadExt::read_exact(reader, &mut read)
                .await
                .unwrap();
        })
        .await;
    }

    #[tokio::test]
    async fn a_write_that_fills_a_child_s_stdin_leaves_it_waiting_for_the_reader() {
        // The client half writes a server's stdin through `pipe::Sender` itself.
        let (sender, mut receiver) = pipe::pipe().unwrap();
        let reader = &mut receiver;
        fill_and_drain(&sender, |n| async move {
            let mut read = vec![0; n];
            tokio::io::AsyncReadExt::read_exact(reader, &mut read)
                .await
                .unwrap();
        })
        .await;
    }

    #[tokio::test]
    async fn a_send_that_fills_the_socket_leaves_it_waiting_for_the_reader() {
        let (ours, theirs) = std::os::unix::net::UnixStream::pair().unwrap();
        let output = DirectOutput::Socket(SocketOut::new(ours.as_fd()).unwrap());
        let reader = &theirs;
        fill_and_drain(&output, |n| async move {
            let mut read = vec![0; n];
            io::Read::read_exact(&mut &*reader, &mut read).unwrap();
        })
        .await;
    }
}
