//! The HTTP client against a small scripted MCP server on loopback, over plain HTTP and over
//! HTTPS with a test CA: headers, sessions, SSE answers, 404 expiry, 401 and the auth hook,
//! HTTP errors, and certificate checks. (Real peers are in `cargo xtask interop` and the
//! conformance runs.)

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Method, Request, Response, StatusCode};
use http_body_util::{BodyExt as _, Full};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use mcp_http::{AuthHook, Challenge, HttpConfig};
use mcp_protocol::schema::{CallToolParams, Implementation};
use mcp_protocol::{ClientConfig, RequestOptions};
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;

/// One request the server saw.
#[derive(Debug, Clone)]
struct Seen {
    method: Method,
    headers: HeaderMap,
    body: Value,
}

#[derive(Default)]
struct Script {
    seen: Mutex<Vec<Seen>>,
    /// Every request with a session id gets 404.
    expired: AtomicBool,
    /// The `Authorization` the server requires, if any.
    token: Mutex<Option<String>>,
    /// `tools/call` answers 500 with a plain body.
    broken_calls: AtomicBool,
    /// `tools/call` sends only a priming event (retry 100 ms) and closes; the answer waits
    /// for the GET that resumes the stream.
    cut_calls: AtomicBool,
    /// The id of the call whose stream was cut.
    cut_call: Mutex<Option<Value>>,
}

impl Script {
    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }

    fn answer(&self, method: Method, headers: HeaderMap, body: Value) -> Response<Full<Bytes>> {
        self.seen.lock().unwrap().push(Seen {
            method: method.clone(),
            headers: headers.clone(),
            body: body.clone(),
        });
        let reply = |status: StatusCode, ctype: &str, text: String| {
            let mut r = Response::new(Full::new(Bytes::from(text)));
            *r.status_mut() = status;
            if !ctype.is_empty() {
                r.headers_mut()
                    .insert("content-type", HeaderValue::from_str(ctype).unwrap());
            }
            r.headers_mut()
                .insert("mcp-session-id", HeaderValue::from_static("sess-1"));
            r
        };
        if let Some(token) = self.token.lock().unwrap().clone()
            && headers.get("authorization").and_then(|v| v.to_str().ok()) != Some(token.as_str())
        {
            let mut r = reply(StatusCode::UNAUTHORIZED, "", String::new());
            r.headers_mut().insert(
                "www-authenticate",
                HeaderValue::from_static(r#"Bearer resource_metadata="http://localhost/.well-known/oauth-protected-resource""#),
            );
            return r;
        }
        if self.expired.load(Ordering::SeqCst) && headers.contains_key("mcp-session-id") {
            return reply(StatusCode::NOT_FOUND, "", String::new());
        }
        match method {
            Method::GET if headers.contains_key("last-event-id") => {
                let id = self.cut_call.lock().unwrap().take();
                let result = json!({"jsonrpc":"2.0","id":id,"result":{"content":[{"type":"text","text":"resumed"}]}});
                return reply(
                    StatusCode::OK,
                    "text/event-stream",
                    format!("id: r1\ndata: {result}\n\n"),
                );
            }
            Method::GET => return reply(StatusCode::METHOD_NOT_ALLOWED, "", String::new()),
            Method::DELETE => return reply(StatusCode::OK, "", String::new()),
            _ => {}
        }
        let id = body.get("id").cloned();
        match body["method"].as_str() {
            Some("initialize") => reply(
                StatusCode::OK,
                "application/json",
                json!({"jsonrpc":"2.0","id":id,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"scripted","version":"1"}}}).to_string(),
            ),
            Some("tools/list") => reply(
                StatusCode::OK,
                "application/json",
                json!({"jsonrpc":"2.0","id":id,"result":{"tools":[{"name":"echo","inputSchema":{"type":"object"}}]}}).to_string(),
            ),
            Some("tools/call") if self.cut_calls.load(Ordering::SeqCst) => {
                *self.cut_call.lock().unwrap() = id;
                reply(StatusCode::OK, "text/event-stream", "id: cut-1\nretry: 100\ndata:\n\n".to_owned())
            }
            Some("tools/call") if self.broken_calls.load(Ordering::SeqCst) => {
                reply(StatusCode::INTERNAL_SERVER_ERROR, "text/plain", "boom".to_owned())
            }
            Some("tools/call") => {
                // The answer comes on an SSE stream: a priming event, a log entry, the result.
                let log = json!({"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"working"}});
                let result = json!({"jsonrpc":"2.0","id":id,"result":{"content":[{"type":"text","text":"done"}]}});
                let stream = format!("id: e0\nretry: 100\ndata:\n\nevent: message\nid: e1\ndata: {log}\n\nevent: message\nid: e2\ndata: {result}\n\n");
                reply(StatusCode::OK, "text/event-stream", stream)
            }
            _ if id.is_none() => reply(StatusCode::ACCEPTED, "", String::new()),
            _ => reply(StatusCode::OK, "application/json", json!({"jsonrpc":"2.0","id":id,"result":{}}).to_string()),
        }
    }
}

/// Serves the script on loopback, over TLS when an acceptor is given; returns the port.
async fn serve(script: Arc<Script>, tls: Option<TlsAcceptor>) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else {
                return;
            };
            let script = Arc::clone(&script);
            let tls = tls.clone();
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |req: Request<Incoming>| {
                    let script = Arc::clone(&script);
                    async move {
                        let (parts, body) = req.into_parts();
                        let bytes = body
                            .collect()
                            .await
                            .map(|b| b.to_bytes())
                            .unwrap_or_default();
                        let json = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
                        Ok::<_, Infallible>(script.answer(parts.method, parts.headers, json))
                    }
                });
                let builder = hyper::server::conn::http1::Builder::new();
                match tls {
                    Some(tls) => {
                        if let Ok(stream) = tls.accept(tcp).await {
                            let _ = builder
                                .serve_connection(TokioIo::new(stream), service)
                                .await;
                        }
                    }
                    None => {
                        let _ = builder.serve_connection(TokioIo::new(tcp), service).await;
                    }
                }
            });
        }
    });
    port
}

fn session() -> ClientConfig {
    ClientConfig::new(Implementation::new("it".into(), "0".into()))
}

fn echo() -> CallToolParams {
    CallToolParams::new("echo".into())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn headers_session_sse_answers_and_delete() {
    let script = Arc::new(Script::default());
    let port = serve(Arc::clone(&script), None).await;
    let mut config = HttpConfig::new("scripted", format!("http://127.0.0.1:{port}/mcp"));
    config.headers = vec![("X-Api-Key".into(), "k-123".into())];
    let client = mcp_http::connect(config, session()).await.unwrap();
    let mut inbox = client.take_incoming().unwrap();
    assert_eq!(client.list_all_tools().await.unwrap().len(), 1);
    let result = client
        .call_tool(echo(), RequestOptions::DEFAULT)
        .await
        .unwrap();
    assert_eq!(
        format!("{:?}", result.content),
        r#"[Text(TextContent { text: "done", annotations: None, meta: None, extra: {} })]"#
    );
    // The log entry on the call's stream reached the host.
    assert!(matches!(
        inbox.try_recv(),
        Ok(mcp_http::Incoming::Notification(_))
    ));
    assert!(client.close().await.contains("session deleted"));

    let seen = script.seen();
    let init = &seen[0];
    assert_eq!(init.body["method"], "initialize");
    assert_eq!(
        init.headers["accept"],
        "application/json, text/event-stream"
    );
    assert_eq!(init.headers["content-type"], "application/json");
    assert!(
        !init.headers.contains_key("mcp-session-id"),
        "no session id before the server gives one"
    );
    assert!(
        !init.headers.contains_key("mcp-protocol-version"),
        "no version header before it is negotiated"
    );
    for s in &seen[1..] {
        assert_eq!(
            s.headers["mcp-session-id"], "sess-1",
            "{:?} {}",
            s.method, s.body
        );
        assert_eq!(
            s.headers["mcp-protocol-version"], "2025-11-25",
            "{:?} {}",
            s.method, s.body
        );
    }
    for s in &seen {
        assert_eq!(
            s.headers["x-api-key"], "k-123",
            "static headers go on every request"
        );
    }
    let order: Vec<String> = seen
        .iter()
        .map(|s| format!("{} {}", s.method, s.body["method"].as_str().unwrap_or("")))
        .collect();
    assert_eq!(
        order,
        [
            "POST initialize",
            "POST notifications/initialized",
            "GET ",
            "POST tools/list",
            "POST tools/call",
            "DELETE ",
        ]
    );
    assert_eq!(seen[2].headers["accept"], "text/event-stream");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_404_on_the_session_ends_it_with_a_clear_error() {
    let script = Arc::new(Script::default());
    let port = serve(Arc::clone(&script), None).await;
    let client = mcp_http::connect(
        HttpConfig::new("scripted", format!("http://127.0.0.1:{port}/mcp")),
        session(),
    )
    .await
    .unwrap();
    script.expired.store(true, Ordering::SeqCst);
    let err = client
        .call_tool(echo(), RequestOptions::DEFAULT)
        .await
        .unwrap_err();
    assert!(err.is_closed(), "{err}");
    assert!(
        err.to_string().contains("ended the session (HTTP 404)"),
        "{err}"
    );
    assert!(client.is_closed());
    assert!(client.list_all_tools().await.unwrap_err().is_closed());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_errors_fail_the_request_and_the_connection_lives() {
    let script = Arc::new(Script::default());
    let port = serve(Arc::clone(&script), None).await;
    let client = mcp_http::connect(
        HttpConfig::new("scripted", format!("http://127.0.0.1:{port}/mcp")),
        session(),
    )
    .await
    .unwrap();
    script.broken_calls.store(true, Ordering::SeqCst);
    let err = client
        .call_tool(echo(), RequestOptions::DEFAULT)
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("HTTP 500 Internal Server Error: boom"),
        "{err}"
    );
    script.broken_calls.store(false, Ordering::SeqCst);
    assert!(
        client
            .call_tool(echo(), RequestOptions::DEFAULT)
            .await
            .is_ok()
    );
}

/// A hook whose first token is stale; told of the 401, it switches to a fresh one.
struct Refreshing {
    fresh: AtomicBool,
    challenges: AtomicUsize,
    last: Mutex<Option<Challenge>>,
}

impl AuthHook for Refreshing {
    fn authorization(&self) -> Option<HeaderValue> {
        let token = if self.fresh.load(Ordering::SeqCst) {
            "Bearer fresh"
        } else {
            "Bearer stale"
        };
        Some(HeaderValue::from_static(token))
    }

    fn challenged(&self, challenge: Challenge) -> Pin<Box<dyn Future<Output = bool> + Send + '_>> {
        self.challenges.fetch_add(1, Ordering::SeqCst);
        *self.last.lock().unwrap() = Some(challenge);
        self.fresh.store(true, Ordering::SeqCst);
        Box::pin(async { true })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_401_goes_to_the_auth_hook_and_the_request_is_sent_again() {
    let script = Arc::new(Script::default());
    *script.token.lock().unwrap() = Some("Bearer fresh".into());
    let port = serve(Arc::clone(&script), None).await;
    let hook = Arc::new(Refreshing {
        fresh: AtomicBool::new(false),
        challenges: AtomicUsize::new(0),
        last: Mutex::new(None),
    });
    let mut config = HttpConfig::new("scripted", format!("http://127.0.0.1:{port}/mcp"));
    config.auth = Some(hook.clone());
    let client = mcp_http::connect(config, session()).await.unwrap();
    assert_eq!(hook.challenges.load(Ordering::SeqCst), 1);
    let challenge = hook.last.lock().unwrap().clone().unwrap();
    assert_eq!(challenge.status, StatusCode::UNAUTHORIZED);
    assert!(
        challenge.www_authenticate[0]
            .to_str()
            .unwrap()
            .contains("resource_metadata=")
    );
    assert!(client.list_all_tools().await.is_ok());

    // Without a hook that can help, a 401 is a clear error that names the challenge.
    *script.token.lock().unwrap() = Some("Bearer other".into());
    let err = client.list_all_tools().await.unwrap_err();
    assert!(err.to_string().contains("HTTP 401"), "{err}");
}

/// A CA and a `localhost` certificate it signed, for an HTTPS server the client must verify.
fn test_pki() -> (String, TlsAcceptor) {
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
    (ca.pem(), TlsAcceptor::from(Arc::new(config)))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn https_with_a_private_ca_and_certificate_checks() {
    let (ca_pem, acceptor) = test_pki();
    let script = Arc::new(Script::default());
    let port = serve(Arc::clone(&script), Some(acceptor)).await;
    let url = format!("https://localhost:{port}/mcp");

    let mut trusted = HttpConfig::new("tls", url.clone());
    trusted.extra_roots_pem = vec![ca_pem.into_bytes()];
    let client = mcp_http::connect(trusted, session()).await.unwrap();
    assert_eq!(client.list_all_tools().await.unwrap().len(), 1);
    client.close().await;

    // Without the CA the certificate is refused, and the error says so.
    let err = mcp_http::connect(HttpConfig::new("tls", url), session())
        .await
        .unwrap_err();
    let message = err.to_string();
    assert!(
        message.contains("invalid peer certificate: UnknownIssuer"),
        "{message}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_configuration_is_refused_before_any_connection() {
    let err = mcp_http::connect(HttpConfig::new("x", "ftp://example.com/mcp"), session())
        .await
        .unwrap_err();
    assert!(err.to_string().starts_with("server `x`: "), "{err}");
    let mut config = HttpConfig::new("x", "http://127.0.0.1:1/mcp");
    config.headers = vec![("X-Secret".into(), "line\nbreak-s3cr3t".into())];
    let err = mcp_http::connect(config, session()).await.unwrap_err();
    assert!(
        err.to_string().contains("X-Secret") && !err.to_string().contains("s3cr3t"),
        "{err}"
    );
    // Nothing listens on port 1: a clear connection error naming the server and the cause.
    let err = mcp_http::connect(HttpConfig::new("down", "http://127.0.0.1:1/mcp"), session())
        .await
        .unwrap_err();
    assert!(err.to_string().starts_with("server `down`: "), "{err}");
    assert!(err.to_string().contains("Connection refused"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_cut_before_the_answer_is_resumed_with_last_event_id() {
    let script = Arc::new(Script::default());
    script.cut_calls.store(true, Ordering::SeqCst);
    let port = serve(Arc::clone(&script), None).await;
    let client = mcp_http::connect(
        HttpConfig::new("scripted", format!("http://127.0.0.1:{port}/mcp")),
        session(),
    )
    .await
    .unwrap();
    let result = client
        .call_tool(echo(), RequestOptions::DEFAULT)
        .await
        .unwrap();
    assert_eq!(
        format!("{:?}", result.content[0]),
        r#"Text(TextContent { text: "resumed", annotations: None, meta: None, extra: {} })"#
    );
    let resume = script
        .seen()
        .into_iter()
        .find(|s| s.method == Method::GET && s.headers.contains_key("last-event-id"))
        .expect("a GET resumed the stream");
    assert_eq!(resume.headers["last-event-id"], "cut-1");
    assert_eq!(resume.headers["mcp-session-id"], "sess-1");
    assert_eq!(resume.headers["accept"], "text/event-stream");
}
