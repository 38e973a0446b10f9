//! A fake Streamable HTTP server, in process, that misbehaves on demand at the HTTP layer: a
//! 404 for a session it gave out, 5xx answers, a connection reset in the middle of an SSE
//! stream, a stream closed right after its priming event, a slow trickle of bytes. It records
//! every request it sees, so that tests can check what the client sent.

use std::collections::VecDeque;
use std::future::Future as _;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Method, Request, Response, StatusCode};
use http_body::{Body, Frame};
use http_body_util::BodyExt as _;
use hyper::body::Incoming;
use serde_json::{Value, json};
use tokio::net::TcpListener;

/// What the server does wrong, from now on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Fault {
    /// Nothing: a well-behaved server.
    #[default]
    None,
    /// Every request that carries the session id gets 404, as if the session had ended.
    ExpireSession,
    /// `tools/call` gets 503 with a plain-text body.
    ServerError,
    /// `tools/call`'s SSE stream sends its priming event and half an event, then the
    /// connection is reset; a GET with `Last-Event-ID` then delivers the answer.
    ResetMidStream,
    /// `tools/call`'s SSE stream sends its priming event (retry 100 ms) and ends; a GET with
    /// `Last-Event-ID` then delivers the answer.
    CloseAfterPriming,
    /// As [`Fault::CloseAfterPriming`], but every resuming GET ends at once with no event, so
    /// the stream keeps dropping.
    KeepDropping,
    /// `tools/call`'s answer comes one byte every 2 ms.
    Trickle,
    /// `tools/call`'s stream sends its priming event and then nothing, ever.
    Hang,
    /// `tools/call`'s stream carries an event whose data is not JSON, then the answer.
    Garbage,
    /// `tools/call`'s answer is 64 KiB of text, with its id first.
    Huge,
    /// The next two messages that wait for no answer (notifications, responses) get 503 with
    /// `Retry-After: 0`, as a busy server or a balancer in front of a dying one answers; the
    /// third is taken.
    BusyTwice,
}

/// One request the server saw.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Seen {
    /// The HTTP method.
    pub method: Method,
    /// The headers.
    pub headers: HeaderMap,
    /// The body as JSON (`Null` when it was not JSON).
    pub body: Value,
}

#[derive(Default)]
struct State {
    /// The `Authorization` value every request must carry, if any.
    token: Mutex<Option<String>>,
    fault: Mutex<Fault>,
    seen: Mutex<Vec<Seen>>,
    /// The id of a call whose stream was cut, answered by the resuming GET.
    cut: Mutex<Option<Value>>,
    /// How many messages [`Fault::BusyTwice`] has refused.
    busy: Mutex<u32>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The running fake. It stops with the runtime.
#[derive(Clone)]
pub struct FakeHttp {
    /// The MCP endpoint, `http://127.0.0.1:<port>/mcp`.
    pub url: String,
    state: Arc<State>,
}

impl std::fmt::Debug for FakeHttp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FakeHttp")
            .field("url", &self.url)
            .finish_non_exhaustive()
    }
}

impl FakeHttp {
    /// Starts the fake on a free loopback port.
    pub async fn start() -> Self {
        Self::start_with(None).await
    }

    /// Starts the fake on a free loopback port, behind TLS when an acceptor is given (the
    /// URL then says `https://localhost`).
    pub async fn start_with(tls: Option<tokio_rustls::TlsAcceptor>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let state = Arc::new(State::default());
        let serving = Arc::clone(&state);
        let scheme = if tls.is_some() {
            "https://localhost"
        } else {
            "http://127.0.0.1"
        };
        crate::serve::spawn_http1(listener, tls, move |req| {
            let state = Arc::clone(&serving);
            async move { answer(&state, req).await }
        });
        Self {
            url: format!("{scheme}:{port}/mcp"),
            state,
        }
    }

    /// From now on every request must carry exactly this `Authorization` value (401 with a
    /// `WWW-Authenticate` challenge otherwise); `None` lifts the requirement.
    pub fn require_authorization(&self, value: Option<&str>) {
        *lock(&self.state.token) = value.map(str::to_owned);
    }

    /// Changes what the server does wrong.
    pub fn set_fault(&self, fault: Fault) {
        *lock(&self.state.fault) = fault;
    }

    /// Every request seen so far.
    pub fn seen(&self) -> Vec<Seen> {
        lock(&self.state.seen).clone()
    }
}

/// A response body that sends its chunks with a pause between them, and may end with an error
/// (hyper then resets the connection instead of ending the body).
#[derive(Debug)]
pub struct Scripted {
    chunks: VecDeque<Bytes>,
    pause: Duration,
    fail_at_end: bool,
    sleep: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl Body for Scripted {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, std::io::Error>>> {
        if let Some(sleep) = self.sleep.as_mut() {
            if sleep.as_mut().poll(cx).is_pending() {
                return Poll::Pending;
            }
            self.sleep = None;
        }
        match self.chunks.pop_front() {
            Some(chunk) => {
                if !self.pause.is_zero() {
                    let pause = self.pause;
                    self.sleep = Some(Box::pin(tokio::time::sleep(pause)));
                }
                Poll::Ready(Some(Ok(Frame::data(chunk))))
            }
            None if self.fail_at_end => Poll::Ready(Some(Err(std::io::Error::new(
                std::io::ErrorKind::ConnectionReset,
                "reset by the fake",
            )))),
            None => Poll::Ready(None),
        }
    }
}

fn respond(
    status: StatusCode,
    ctype: &str,
    chunks: Vec<Bytes>,
    pause: Duration,
    fail_at_end: bool,
) -> Response<Scripted> {
    let mut r = Response::new(Scripted {
        chunks: chunks.into(),
        pause,
        fail_at_end,
        sleep: None,
    });
    *r.status_mut() = status;
    if !ctype.is_empty() {
        r.headers_mut()
            .insert("content-type", HeaderValue::from_str(ctype).unwrap());
    }
    r.headers_mut()
        .insert("mcp-session-id", HeaderValue::from_static("fake-session"));
    r
}

fn whole(status: StatusCode, ctype: &str, body: String) -> Response<Scripted> {
    respond(
        status,
        ctype,
        vec![Bytes::from(body)],
        Duration::ZERO,
        false,
    )
}

async fn answer(state: &State, req: Request<Incoming>) -> Response<Scripted> {
    let (parts, body) = req.into_parts();
    let bytes = body
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let body: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    lock(&state.seen).push(Seen {
        method: parts.method.clone(),
        headers: parts.headers.clone(),
        body: body.clone(),
    });
    if let Some(token) = lock(&state.token).clone()
        && parts
            .headers
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            != Some(token.as_str())
    {
        let mut r = whole(StatusCode::UNAUTHORIZED, "", String::new());
        r.headers_mut().insert(
            "www-authenticate",
            HeaderValue::from_static(r#"Bearer resource_metadata="http://localhost/.well-known/oauth-protected-resource""#),
        );
        return r;
    }
    let fault = *lock(&state.fault);
    if fault == Fault::ExpireSession && parts.headers.contains_key("mcp-session-id") {
        return whole(StatusCode::NOT_FOUND, "", String::new());
    }
    match parts.method {
        Method::GET if parts.headers.contains_key("last-event-id") => {
            if fault == Fault::KeepDropping {
                return whole(StatusCode::OK, "text/event-stream", String::new());
            }
            let id = lock(&state.cut).take();
            let result = json!({"jsonrpc":"2.0","id":id,"result":{"content":[{"type":"text","text":"resumed"}]}});
            return whole(
                StatusCode::OK,
                "text/event-stream",
                format!("id: r1\ndata: {result}\n\n"),
            );
        }
        Method::GET => return whole(StatusCode::METHOD_NOT_ALLOWED, "", String::new()),
        Method::DELETE => return whole(StatusCode::OK, "", String::new()),
        _ => {}
    }
    let id = body.get("id").cloned();
    match body["method"].as_str() {
        Some("initialize") => whole(
            StatusCode::OK,
            "application/json",
            json!({"jsonrpc":"2.0","id":id,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"fake-http","version":"0"}}}).to_string(),
        ),
        Some("tools/list") => whole(
            StatusCode::OK,
            "application/json",
            json!({"jsonrpc":"2.0","id":id,"result":{"tools":[{"name":"echo","inputSchema":{"type":"object"}}]}}).to_string(),
        ),
        Some("tools/call") => call(state, fault, id),
        _ if id.is_none() && fault == Fault::BusyTwice && *lock(&state.busy) < 2 => {
            *lock(&state.busy) += 1;
            let mut r = whole(StatusCode::SERVICE_UNAVAILABLE, "text/plain", "busy".to_owned());
            r.headers_mut()
                .insert("retry-after", HeaderValue::from_static("0"));
            r
        }
        _ if id.is_none() => whole(StatusCode::ACCEPTED, "", String::new()),
        _ => whole(StatusCode::OK, "application/json", json!({"jsonrpc":"2.0","id":id,"result":{}}).to_string()),
    }
}

fn call(state: &State, fault: Fault, id: Option<Value>) -> Response<Scripted> {
    let result =
        json!({"jsonrpc":"2.0","id":id,"result":{"content":[{"type":"text","text":"called"}]}});
    let event = format!("event: message\nid: 2\ndata: {result}\n\n");
    let priming = Bytes::from_static(b"id: 1\nretry: 100\ndata:\n\n");
    match fault {
        Fault::ServerError => whole(
            StatusCode::SERVICE_UNAVAILABLE,
            "text/plain",
            "overloaded, try later".to_owned(),
        ),
        Fault::CloseAfterPriming | Fault::KeepDropping => {
            *lock(&state.cut) = id;
            respond(
                StatusCode::OK,
                "text/event-stream",
                vec![priming],
                Duration::ZERO,
                false,
            )
        }
        Fault::ResetMidStream => {
            *lock(&state.cut) = id;
            let half = Bytes::copy_from_slice(&event.as_bytes()[..event.len() / 2]);
            respond(
                StatusCode::OK,
                "text/event-stream",
                vec![priming, half],
                Duration::from_millis(5),
                true,
            )
        }
        Fault::Hang => respond(
            StatusCode::OK,
            "text/event-stream",
            vec![priming, Bytes::from_static(b": still here\n")],
            Duration::from_secs(24 * 3600),
            false,
        ),
        Fault::Huge => {
            let text = "x".repeat(64 << 10);
            let result =
                json!({"jsonrpc":"2.0","id":id,"result":{"content":[{"type":"text","text":text}]}});
            let event = format!("event: message\nid: 2\ndata: {result}\n\n");
            respond(
                StatusCode::OK,
                "text/event-stream",
                vec![priming, Bytes::from(event)],
                Duration::ZERO,
                false,
            )
        }
        Fault::Garbage => {
            let garbage = Bytes::from_static(b"event: message\ndata: this is not JSON-RPC\n\n");
            respond(
                StatusCode::OK,
                "text/event-stream",
                vec![priming, garbage, Bytes::from(event)],
                Duration::ZERO,
                false,
            )
        }
        Fault::Trickle => {
            let all = [&priming[..], event.as_bytes()].concat();
            let chunks = all.iter().map(|b| Bytes::copy_from_slice(&[*b])).collect();
            respond(
                StatusCode::OK,
                "text/event-stream",
                chunks,
                Duration::from_millis(2),
                false,
            )
        }
        _ => {
            // A log entry on the way, as a working server sends.
            let log = json!({"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"working"}});
            let log = Bytes::from(format!("event: message\nid: 1a\ndata: {log}\n\n"));
            respond(
                StatusCode::OK,
                "text/event-stream",
                vec![priming, log, Bytes::from(event)],
                Duration::ZERO,
                false,
            )
        }
    }
}

/// A CA and a `localhost` certificate it signed, for an HTTPS server the client must verify.
pub fn test_pki() -> (String, tokio_rustls::TlsAcceptor) {
    use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair};
    let mut ca_params = CertificateParams::new(Vec::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = CertifiedIssuer::self_signed(ca_params, KeyPair::generate().unwrap()).unwrap();
    let leaf_key = KeyPair::generate().unwrap();
    let leaf = CertificateParams::new(vec!["localhost".into()])
        .unwrap()
        .signed_by(&leaf_key, &ca)
        .unwrap();
    let key = rustls::pki_types::PrivateKeyDer::try_from(leaf_key.serialize_der()).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![leaf.der().clone()], key)
        .unwrap();
    (ca.pem(), tokio_rustls::TlsAcceptor::from(Arc::new(config)))
}
