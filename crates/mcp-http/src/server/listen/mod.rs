//! The accept loop and each connection's HTTP/1.1 driver, with the limits that keep one
//! misbehaving or hostile client from taking the server down:
//!
//! - An `accept()` error never ends the loop. A per-connection error (the client reset the
//!   connection before it was accepted) is retried at once; any other (`EMFILE`, `ENFILE`,
//!   `ENOBUFS`: the process or the system is out of something) is retried after a back-off
//!   that doubles from [`MIN_BACKOFF`] to [`MAX_BACKOFF`] and starts over after a success.
//!   Connections the kernel queued meanwhile stay in its backlog and are served once there is
//!   room again.
//! - At most [`max_connections`](super::HttpServerConfig::max_connections) connections are
//!   served at once. One past the limit is answered `503` with `Connection: close` by a
//!   short-lived driver (at most [`OVERFLOW_CONNECTIONS`] of those at once; beyond them a
//!   connection is closed unanswered).
//! - Every connection has hyper's header-read timeout, which also bounds how long a kept-alive
//!   connection may sit idle between requests; the body deadline is the request handler's
//!   (`HttpServer::read_body`).

use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use http::header::{HeaderValue, RETRY_AFTER};
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt as _, Limited};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use mcp_session::Handler;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpStream};

use super::{HttpServer, ResponseBody, rpc_error};

/// The first wait after an `accept()` error that is not the client's.
pub(super) const MIN_BACKOFF: Duration = Duration::from_millis(5);
/// The longest wait between two `accept()` attempts while errors last.
pub(super) const MAX_BACKOFF: Duration = Duration::from_secs(1);
/// How many connections past the limit may be in the middle of their `503` at once.
const OVERFLOW_CONNECTIONS: usize = 64;
/// How long a connection past the limit is given to send its request before it is closed.
const OVERFLOW_DEADLINE: Duration = Duration::from_secs(2);
/// How much of the body of a request past the limit is read (and dropped) before its `503`
/// goes out, so that closing the connection does not reset it under the client's feet.
const OVERFLOW_BODY: usize = 64 << 10;

/// Where connections come from: a TCP listener, or in tests one that fails on purpose.
pub(super) trait Listener: Send {
    type Io: AsyncRead + AsyncWrite + Unpin + Send + 'static;
    fn accept(&mut self) -> impl Future<Output = io::Result<Self::Io>> + Send;
}

impl Listener for TcpListener {
    type Io = TcpStream;

    async fn accept(&mut self) -> io::Result<TcpStream> {
        let (tcp, _) = TcpListener::accept(self).await?;
        let _ = tcp.set_nodelay(true);
        Ok(tcp)
    }
}

/// The HTTP/1.1 settings every connection is served with.
pub(super) fn builder(header_read_timeout: Duration) -> http1::Builder {
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(header_read_timeout);
    builder
}

/// Whether an `accept()` error is about one connection only, so that the next may be
/// accepted at once.
fn is_connection_error(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::ConnectionRefused
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::Interrupted
    )
}

/// Accepts and serves connections for as long as it is polled; it never returns.
pub(super) async fn serve<H: Handler, L: Listener>(
    mut listener: L,
    server: Arc<HttpServer<H>>,
) -> Infallible {
    let overflow = Arc::new(tokio::sync::Semaphore::new(OVERFLOW_CONNECTIONS));
    let mut backoff: Option<Duration> = None;
    loop {
        let io = match listener.accept().await {
            Ok(io) => {
                backoff = None;
                io
            }
            Err(e) => {
                server.accept_errors.fetch_add(1, Ordering::AcqRel);
                if !is_connection_error(&e) {
                    let wait = backoff.map_or(MIN_BACKOFF, |b| (b * 2).min(MAX_BACKOFF));
                    backoff = Some(wait);
                    tokio::time::sleep(wait).await;
                }
                continue;
            }
        };
        match Arc::clone(&server.connections).try_acquire_owned() {
            Ok(permit) => {
                let server = Arc::clone(&server);
                tokio::spawn(async move {
                    let handler = Arc::clone(&server);
                    let service = hyper::service::service_fn(move |req| {
                        let server = Arc::clone(&handler);
                        // Boxed: hyper sets aside room for one service future per connection
                        // for as long as the connection lives (some 3.7 KB for ours), so every
                        // idle kept-alive connection and every open event stream held it.
                        // Boxed, that room is a pointer, and the future's own memory lives only
                        // while its request is answered.
                        Box::pin(async move { Ok::<_, Infallible>(server.respond(req).await) })
                    });
                    let _ = server
                        .http1
                        .serve_connection(TokioIo::new(io), service)
                        .await;
                    drop(permit);
                });
            }
            Err(_) => {
                server
                    .metrics
                    .connections_refused
                    .fetch_add(1, Ordering::Relaxed);
                let Ok(permit) = Arc::clone(&overflow).try_acquire_owned() else {
                    continue;
                };
                let limit = server.config.max_connections;
                tokio::spawn(async move {
                    let mut builder = builder(OVERFLOW_DEADLINE);
                    builder.keep_alive(false);
                    let service = hyper::service::service_fn(move |req| async move {
                        Ok::<_, Infallible>(too_many_connections(req, limit).await)
                    });
                    let _ = tokio::time::timeout(
                        OVERFLOW_DEADLINE,
                        builder.serve_connection(TokioIo::new(io), service),
                    )
                    .await;
                    drop(permit);
                });
            }
        }
    }
}

/// The `503` of a connection past the limit.
async fn too_many_connections(req: Request<Incoming>, limit: usize) -> Response<ResponseBody> {
    let _ = tokio::time::timeout(
        OVERFLOW_DEADLINE,
        Limited::new(req.into_body(), OVERFLOW_BODY).collect(),
    )
    .await;
    let mut r = rpc_error(
        StatusCode::SERVICE_UNAVAILABLE,
        super::SERVER_BUSY,
        &format!(
            "Service Unavailable: the server has {limit} connections open, its limit \
             (max_connections); try again later"
        ),
    );
    r.headers_mut()
        .insert(RETRY_AFTER, HeaderValue::from_static("1"));
    r
}

#[cfg(test)]
mod tests;
