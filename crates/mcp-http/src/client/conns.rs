//! The connections the Streamable HTTP transport POSTs over: a small HTTP/1 checkout of our
//! own, over hyper's low-level connection and our [`Connector`].
//!
//! The caller that sent a request gets back, with the answer, the [`Lease`] of its
//! connection. Once it has read the answer to the end it [releases](Lease::release) it: that
//! waits until hyper's connection task has taken the end of the answer and can carry another
//! request, then puts the connection among the idle ones, before the caller goes on. So the
//! caller's next request finds it there, whatever order the runtime runs tasks in.
//!
//! hyper-util's pool, which the other requests of this crate use, returns a connection from a
//! task of its own once hyper's connection task has run, and meanwhile races each checkout
//! against a new connection, keeping the loser. On a one-threaded runtime the caller's next
//! request came first, found nothing idle and opened a connection; with 256 calls in flight a
//! client held more than 512 connections and our own server refused the rest.
//!
//! A connection not read to its end (an SSE answer dropped midway, an error, a cancelled
//! request) is not released: dropping its lease closes it. Idle connections are let go after
//! [`POOL_IDLE`](super::POOL_IDLE), at most [`POOL_MAX_IDLE`](super::POOL_MAX_IDLE) are kept.

use std::fmt;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use bytes::Bytes;
use http::header::HOST;
use http::{HeaderValue, Request, Response, Uri};
use http_body_util::{BodyExt as _, Full};
use hyper::body::Incoming;
use hyper::client::conn::http1::{self, SendRequest};
use tokio::time::Instant;

use super::tls::Connector;

type BoxError = Box<dyn std::error::Error + Send + Sync>;
type Sender = SendRequest<Full<Bytes>>;

/// The connections to one origin, shared by the clones of a transport.
#[derive(Clone)]
pub(crate) struct Conns(Arc<Shared>);

struct Shared {
    connector: Connector,
    /// `scheme://authority/`, what the connector is asked to reach.
    target: Uri,
    /// The `Host` header of every request.
    host: Option<HeaderValue>,
    idle_for: Duration,
    max_idle: usize,
    idle: Mutex<Idle>,
    /// Set when this server kept an SSE stream open after its answer ([`LINGER`]).
    lingers: AtomicBool,
}

/// The idle connections, newest last, each with when it became idle.
#[derive(Default)]
struct Idle {
    senders: Vec<(Sender, Instant)>,
    /// Whether a task is letting go of the connections idle too long.
    reaping: bool,
}

/// Why a request got no answer: the connection could not be made, or the exchange on it
/// failed (the cause says how).
#[derive(Debug)]
pub(crate) enum SendError {
    Connect(BoxError),
    Send(hyper::Error),
}

impl fmt::Display for SendError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Connect(_) => f.write_str("could not connect"),
            Self::Send(_) => f.write_str("the exchange failed"),
        }
    }
}

impl std::error::Error for SendError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Connect(e) => Some(e.as_ref()),
            Self::Send(e) => Some(e),
        }
    }
}

/// The connection a request went out on, held while its answer is read.
pub(crate) struct Lease {
    sender: Sender,
    conns: Conns,
}

impl Lease {
    /// The answer was read to its end: once hyper's connection task can take another request
    /// on this connection, it becomes idle for the next one. A connection that closed instead
    /// (the server said `Connection: close`) is let go.
    pub(crate) async fn release(mut self) {
        if self.sender.ready().await.is_ok() {
            self.conns.put(self.sender);
        }
    }

    /// The answer to a POST came on an SSE stream, which the server should end right after
    /// it (spec `basic/transports.mdx`: after the JSON-RPC response has been sent, the server
    /// SHOULD terminate the SSE stream); the connection is released once it has ended. Only
    /// after an answer (`answered`) is the end waited for, and for at most [`LINGER`]: from a
    /// server that keeps its streams open past that, this stream and the next ones are finished
    /// by a task of their own instead (their connections come back later, if at all), until one
    /// such stream is seen ending within [`LINGER`] again. A stream that goes on, or ends with
    /// an error, loses its connection (dropping the body closes it). What follows an answer on
    /// its stream is not read.
    pub(crate) async fn release_at_end(self, mut body: Incoming, answered: bool) {
        match end_now(&mut body) {
            Some(true) => return self.release().await,
            Some(false) => return,
            None if !answered => return,
            None => {}
        }
        let lingers = &self.conns.0.lingers;
        if !lingers.load(Ordering::Relaxed) {
            match tokio::time::timeout(LINGER, body.frame()).await {
                Ok(None) => return self.release().await,
                Ok(Some(_)) => return,
                Err(_) => lingers.store(true, Ordering::Relaxed),
            }
        }
        tokio::spawn(async move {
            let waited = Instant::now();
            if let Ok(None) = tokio::time::timeout(self.conns.0.idle_for, body.frame()).await {
                if waited.elapsed() < LINGER {
                    self.conns.0.lingers.store(false, Ordering::Relaxed);
                }
                self.release().await;
            }
        });
    }
}

/// How long a caller that got its answer on an SSE stream waits for the stream's end. The
/// end is usually in hyper's hands with the answer (our server writes both at once), and comes
/// as soon as hyper's connection task has run; this only bounds the wait for a server that
/// keeps its streams open, which then costs it once.
const LINGER: Duration = Duration::from_millis(50);

/// Whether `body` has ended, looked at without waiting: `None` when that is not known yet.
fn end_now(body: &mut Incoming) -> Option<bool> {
    let mut cx = Context::from_waker(Waker::noop());
    match http_body::Body::poll_frame(Pin::new(body), &mut cx) {
        Poll::Ready(None) => Some(true),
        Poll::Ready(Some(_)) => Some(false),
        Poll::Pending => None,
    }
}

impl Conns {
    /// Connections to the origin of `url`, made by `connector`.
    pub(crate) fn new(
        connector: Connector,
        url: &Uri,
        idle_for: Duration,
        max_idle: usize,
    ) -> Self {
        let mut target = http::uri::Parts::default();
        target.scheme = url.scheme().cloned();
        target.authority = url.authority().cloned();
        target.path_and_query = Some(http::uri::PathAndQuery::from_static("/"));
        let target = Uri::from_parts(target).unwrap_or_else(|_| url.clone());
        let host = url.authority().and_then(|a| {
            let https = url.scheme_str() == Some("https");
            let default = if https { 443 } else { 80 };
            let text = match a.port_u16() {
                Some(port) if port != default => format!("{}:{port}", a.host()),
                _ => a.host().to_owned(),
            };
            HeaderValue::from_str(&text).ok()
        });
        Self(Arc::new(Shared {
            connector,
            target,
            host,
            idle_for,
            max_idle,
            idle: Mutex::default(),
            lingers: AtomicBool::new(false),
        }))
    }

    fn idle(&self) -> MutexGuard<'_, Idle> {
        self.0.idle.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Sends `req` (to this origin) on an idle connection or a new one. A request that an idle
    /// connection could not take (the server closed it meanwhile, and hyper gives the request
    /// back unsent) goes once more, on a new connection.
    pub(crate) async fn send(
        &self,
        mut req: Request<Full<Bytes>>,
    ) -> Result<(Response<Incoming>, Lease), SendError> {
        if let Some(host) = &self.0.host {
            req.headers_mut()
                .entry(HOST)
                .or_insert_with(|| host.clone());
        }
        // HTTP/1 to an origin server: the request line carries the path only.
        let path = req
            .uri()
            .path_and_query()
            .cloned()
            .unwrap_or_else(|| http::uri::PathAndQuery::from_static("/"));
        *req.uri_mut() = Uri::from(path);
        let mut reused = self.checkout();
        loop {
            let was_idle = reused.is_some();
            let mut sender = match reused.take() {
                Some(sender) => sender,
                None => self.connect().await?,
            };
            match sender.try_send_request(req).await {
                Ok(resp) => {
                    let lease = Lease {
                        sender,
                        conns: self.clone(),
                    };
                    return Ok((resp, lease));
                }
                Err(mut e) => match e.take_message() {
                    Some(unsent) if was_idle => req = unsent,
                    _ => return Err(SendError::Send(e.into_error())),
                },
            }
        }
    }

    /// The newest idle connection still fresh and open, if any.
    fn checkout(&self) -> Option<Sender> {
        let mut idle = self.idle();
        let now = Instant::now();
        while let Some((sender, since)) = idle.senders.pop() {
            if now.saturating_duration_since(since) < self.0.idle_for && sender.is_ready() {
                return Some(sender);
            }
        }
        None
    }

    /// A new connection, its task spawned.
    async fn connect(&self) -> Result<Sender, SendError> {
        let mut connector = self.0.connector.clone();
        std::future::poll_fn(|cx| tower_service::Service::poll_ready(&mut connector, cx))
            .await
            .map_err(SendError::Connect)?;
        let io = tower_service::Service::call(&mut connector, self.0.target.clone())
            .await
            .map_err(SendError::Connect)?;
        let (sender, connection) = http1::handshake(io)
            .await
            .map_err(|e| SendError::Connect(e.into()))?;
        tokio::spawn(async move {
            // How it ended reaches the request that was on it, if any.
            let _ = connection.await;
        });
        Ok(sender)
    }

    /// Keeps an idle connection for the next request, unless enough are kept already.
    fn put(&self, sender: Sender) {
        let mut idle = self.idle();
        if idle.senders.len() >= self.0.max_idle {
            // Dropping the sender closes the connection.
            return;
        }
        idle.senders.push((sender, Instant::now()));
        if !idle.reaping {
            idle.reaping = true;
            tokio::spawn(reap(Arc::downgrade(&self.0)));
        }
    }
}

/// Lets go of the connections idle too long, until none is idle or the transport is gone.
async fn reap(shared: Weak<Shared>) {
    loop {
        let next = {
            let Some(shared) = shared.upgrade() else {
                return;
            };
            let mut idle = shared.idle.lock().unwrap_or_else(PoisonError::into_inner);
            let now = Instant::now();
            let idle_for = shared.idle_for;
            idle.senders.retain(|(sender, since)| {
                now.saturating_duration_since(*since) < idle_for && !sender.is_closed()
            });
            match idle.senders.iter().map(|(_, since)| *since).min() {
                Some(oldest) => oldest + idle_for,
                None => {
                    idle.reaping = false;
                    return;
                }
            }
        };
        tokio::time::sleep_until(next).await;
    }
}
