//! What the server tells those who run it: `GET /healthz` (200 while it serves), `GET /readyz`
//! (200 or 503, as the application behind it says) and `GET /metrics` (the Prometheus text
//! format: the server's own counters here, then the application's families, from its
//! [`Observer`]).
//!
//! `/metrics` and `/readyz` are checked like the MCP endpoint (`Host`, `Origin`, the bearer
//! token when one is configured): they name upstream servers and tools and show what clients
//! do. `/healthz` says only that the process serves, so it is answered to anyone, as load
//! balancers and orchestrators probe it without credentials. Nothing here carries a session id
//! or a token: the server's series have no labels a client picks but the HTTP method, folded
//! to the three it serves.

use std::collections::BTreeMap;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use bytes::Bytes;
use http::header::{CONTENT_TYPE, HeaderValue};
use http::{Method, Request, Response, StatusCode};
use http_body::{Body, Frame, SizeHint};
use http_body_util::Full;
use hyper::body::Incoming;
use mcp_session::Handler;

use crate::metrics::{self, Exposition, Kind};

use super::{HttpServer, ResponseBody, lock};

/// What the application behind the server says about itself, for `/metrics` and `/readyz`.
pub trait Observer: Send + Sync + 'static {
    /// Appends the application's metric families to the page (after the server's own).
    fn metrics(&self, out: &mut Exposition);

    /// Whether the application is ready for traffic, read fresh on every `/readyz`.
    fn readiness(&self) -> Readiness;
}

/// The answer of `/readyz`: 200 when ready, else 503, with a JSON body saying why.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Readiness {
    /// Whether to answer 200.
    pub ready: bool,
    /// The body, JSON text; it must hold no secret, since whoever may probe reads it.
    pub body: String,
}

impl Readiness {
    /// A readiness with its JSON body.
    pub fn new(ready: bool, body: String) -> Self {
        Self { ready, body }
    }
}

/// The server's own counters; gauges (connections, sessions, buffered bytes) are read from
/// the server's state when the page is written.
#[derive(Debug, Default)]
pub(super) struct HttpMetrics {
    /// Answers by the request's method and the answer's status.
    responses: Mutex<BTreeMap<(&'static str, u16), u64>>,
    /// Request body bytes read.
    pub(super) bytes_in: AtomicU64,
    /// Response body bytes written to clients.
    bytes_out: Arc<AtomicU64>,
    /// Connections answered 503 (or closed) past `max_connections`.
    pub(super) connections_refused: AtomicU64,
    /// `initialize` calls answered 503 past `max_sessions`.
    pub(super) sessions_refused: AtomicU64,
}

/// The observability paths.
const HEALTHZ: &str = "/healthz";
const READYZ: &str = "/readyz";
const METRICS: &str = "/metrics";

impl<H: Handler> HttpServer<H> {
    /// Answers one request and counts it: its method and status, and its body's bytes as the
    /// client reads them.
    pub(super) async fn respond(
        self: Arc<Self>,
        req: Request<Incoming>,
    ) -> Response<Counted<ResponseBody>> {
        let method = match *req.method() {
            Method::GET => "GET",
            Method::POST => "POST",
            Method::DELETE => "DELETE",
            _ => "other",
        };
        let metrics = Arc::clone(&self);
        let response = match self.observe(&req) {
            Some(answer) => answer,
            None => self.handle(req).await,
        };
        *lock(&metrics.metrics.responses)
            .entry((method, response.status().as_u16()))
            .or_default() += 1;
        let counter = Arc::clone(&metrics.metrics.bytes_out);
        response.map(|body| Counted { body, counter })
    }

    /// The answer of an observability path, or `None` for any other request.
    fn observe(&self, req: &Request<Incoming>) -> Option<Response<ResponseBody>> {
        let path = req.uri().path();
        if path == self.config.path || ![HEALTHZ, READYZ, METRICS].contains(&path) {
            return None;
        }
        if req.method() != Method::GET && req.method() != Method::HEAD {
            let mut r = super::plain(StatusCode::METHOD_NOT_ALLOWED, "use GET");
            r.headers_mut()
                .insert(http::header::ALLOW, HeaderValue::from_static("GET, HEAD"));
            return Some(r);
        }
        if path == HEALTHZ {
            return Some(text(StatusCode::OK, "text/plain", "ok\n".to_owned()));
        }
        if let Some(refusal) = self.check_security(req) {
            return Some(refusal);
        }
        if path == READYZ {
            let readiness = match &self.config.observer {
                Some(observer) => observer.readiness(),
                None => Readiness::new(true, "{\"ready\":true}".to_owned()),
            };
            let status = if readiness.ready {
                StatusCode::OK
            } else {
                StatusCode::SERVICE_UNAVAILABLE
            };
            return Some(text(status, "application/json", readiness.body));
        }
        let mut out = Exposition::new();
        self.write_metrics(&mut out);
        if let Some(observer) = &self.config.observer {
            observer.metrics(&mut out);
        }
        Some(text(StatusCode::OK, metrics::CONTENT_TYPE, out.into_text()))
    }

    /// The server's own families.
    fn write_metrics(&self, out: &mut Exposition) {
        let m = &self.metrics;
        let name = "mcp_http_requests_total";
        out.family(
            name,
            Kind::Counter,
            "HTTP requests answered, by method and status code.",
        );
        for ((method, code), n) in lock(&m.responses).iter() {
            out.sample(
                name,
                &[("method", method), ("code", &code.to_string())],
                *n as f64,
            );
        }
        let counter = |out: &mut Exposition, name: &str, help: &str, v: &AtomicU64| {
            out.family(name, Kind::Counter, help).sample(
                name,
                &[],
                v.load(Ordering::Relaxed) as f64,
            );
        };
        let gauge = |out: &mut Exposition, name: &str, help: &str, v: usize| {
            out.family(name, Kind::Gauge, help)
                .sample(name, &[], v as f64);
        };
        counter(
            out,
            "mcp_http_request_bytes_total",
            "Request body bytes read.",
            &m.bytes_in,
        );
        counter(
            out,
            "mcp_http_response_bytes_total",
            "Response body bytes sent.",
            &m.bytes_out,
        );
        let open = self
            .config
            .max_connections
            .saturating_sub(self.connections.available_permits());
        gauge(
            out,
            "mcp_http_connections",
            "Connections being served.",
            open,
        );
        counter(
            out,
            "mcp_http_connections_refused_total",
            "Connections refused past max_connections.",
            &m.connections_refused,
        );
        counter(
            out,
            "mcp_http_accept_errors_total",
            "Failed accept() calls (retried).",
            &self.accept_errors,
        );
        let sessions = lock(&self.sessions).len();
        gauge(
            out,
            "mcp_http_sessions",
            "Client sessions open (handshake era).",
            sessions,
        );
        counter(
            out,
            "mcp_http_sessions_refused_total",
            "initialize requests refused past max_sessions.",
            &m.sessions_refused,
        );
        gauge(
            out,
            "mcp_http_buffered_bytes",
            "Bytes of response streams not yet read by their clients.",
            self.buffer.used(),
        );
    }
}

/// A response with a text body.
fn text(status: StatusCode, content_type: &'static str, body: String) -> Response<ResponseBody> {
    let mut r = Response::new(http_body_util::Either::Left(Full::new(Bytes::from(body))));
    *r.status_mut() = status;
    r.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    r.headers_mut().insert(
        http::header::CACHE_CONTROL,
        HeaderValue::from_static("no-store"),
    );
    r
}

/// A response body that adds the bytes of each data frame to a counter as it goes out.
pub(super) struct Counted<B> {
    body: B,
    counter: Arc<AtomicU64>,
}

impl<B: Body<Data = Bytes> + Unpin> Body for Counted<B> {
    type Data = Bytes;
    type Error = B::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let polled = Pin::new(&mut self.body).poll_frame(cx);
        if let Poll::Ready(Some(Ok(frame))) = &polled
            && let Some(data) = frame.data_ref()
        {
            self.counter.fetch_add(data.len() as u64, Ordering::Relaxed);
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

impl HttpMetrics {
    /// Counts an `initialize` refused past `max_sessions`.
    pub(super) fn refused_session(&self) {
        self.sessions_refused.fetch_add(1, Ordering::Relaxed);
    }
}
