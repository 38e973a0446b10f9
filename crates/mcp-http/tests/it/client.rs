//! The HTTP client against the testkit's fake HTTP server on loopback, over plain HTTP and
//! over HTTPS with a test CA: headers, sessions, SSE answers, 404 expiry, 401 and the auth
//! hook, HTTP errors, resumption, and certificate checks. (Faults one at a time are in
//! `faults.rs`; real peers are in `cargo xtask interop` and the conformance runs.)

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use http::{HeaderValue, Method, StatusCode};
use mcp_http::{AuthHook, Challenge, HttpConfig};
use mcp_protocol::schema::{CallToolParams, Implementation};
use mcp_protocol::{ClientConfig, RequestOptions};
use mcp_testkit::fake_http::{FakeHttp, Fault};

/// A handshake-era client: these tests check that era's wire (sessions, the GET stream,
/// resumption); the stateless era's is checked against our own server (`server.rs`), by the
/// conformance suite and by the interop run.
fn session() -> ClientConfig {
    let mut config = ClientConfig::new(Implementation::new("it".into(), "0".into()));
    config.supported_versions = mcp_protocol::ProtocolVersion::HANDSHAKE.to_vec();
    config
}

fn echo() -> CallToolParams {
    CallToolParams::new("echo".into())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn headers_session_sse_answers_and_delete() {
    let fake = FakeHttp::start().await;
    let mut config = HttpConfig::new("fake", fake.url.clone());
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
        r#"[Text(TextContent { text: "called", annotations: None, meta: None, extra: {} })]"#
    );
    // The log entry on the call's stream reached the host.
    assert!(matches!(
        inbox.try_recv(),
        Ok(mcp_http::Incoming::Notification(_))
    ));
    // The host can read the session id; the client's debug form does not show it.
    assert_eq!(client.session_id().as_deref(), Some("fake-session"));
    let shown = format!("{client:?}");
    assert!(!shown.contains("fake-session"), "{shown}");
    assert!(client.close().await.contains("session deleted"));

    let seen = fake.seen();
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
            s.headers["mcp-session-id"], "fake-session",
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
    let fake = FakeHttp::start().await;
    let client = mcp_http::connect(HttpConfig::new("fake", fake.url.clone()), session())
        .await
        .unwrap();
    // A host waiting for the end while the session is alive hears it, with the reason.
    let waiting = tokio::spawn({
        let client = client.clone();
        async move { client.closed().await }
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(
        !waiting.is_finished(),
        "closed() waits while the session lives"
    );
    fake.set_fault(Fault::ExpireSession);
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
    let ended = tokio::time::timeout(Duration::from_secs(5), waiting)
        .await
        .expect("closed() resolves once the session has ended")
        .unwrap();
    assert!(ended.contains("ended the session (HTTP 404)"), "{ended}");
    assert!(client.list_all_tools().await.unwrap_err().is_closed());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_errors_fail_the_request_and_the_connection_lives() {
    let fake = FakeHttp::start().await;
    let client = mcp_http::connect(HttpConfig::new("fake", fake.url.clone()), session())
        .await
        .unwrap();
    fake.set_fault(Fault::ServerError);
    let err = client
        .call_tool(echo(), RequestOptions::DEFAULT)
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("HTTP 503 Service Unavailable: overloaded"),
        "{err}"
    );
    fake.set_fault(Fault::None);
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
    let fake = FakeHttp::start().await;
    fake.require_authorization(Some("Bearer fresh"));
    let hook = Arc::new(Refreshing {
        fresh: AtomicBool::new(false),
        challenges: AtomicUsize::new(0),
        last: Mutex::new(None),
    });
    let mut config = HttpConfig::new("fake", fake.url.clone());
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
    fake.require_authorization(Some("Bearer other"));
    let err = client.list_all_tools().await.unwrap_err();
    assert!(err.to_string().contains("HTTP 401"), "{err}");
}

/// A hook that binds its token to each request, as DPoP does: a header naming the method and
/// URL, new for every request.
struct PerRequest {
    made: Mutex<Vec<(Method, String)>>,
}

impl AuthHook for PerRequest {
    fn authorization(&self) -> Option<HeaderValue> {
        Some(HeaderValue::from_static("Bearer not-this-one"))
    }

    fn headers_for(&self, method: &Method, uri: &http::Uri) -> http::HeaderMap {
        let mut made = self.made.lock().unwrap();
        made.push((method.clone(), uri.to_string()));
        let mut headers = http::HeaderMap::new();
        headers.insert("authorization", HeaderValue::from_static("DPoP bound"));
        let proof = format!("{method} {uri} #{}", made.len());
        headers.insert("dpop", HeaderValue::from_str(&proof).unwrap());
        headers
    }

    fn challenged(&self, _: Challenge) -> Pin<Box<dyn Future<Output = bool> + Send + '_>> {
        Box::pin(async { false })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_request_gets_the_hooks_headers_for_its_method_and_url() {
    let fake = FakeHttp::start().await;
    fake.require_authorization(Some("DPoP bound"));
    let hook = Arc::new(PerRequest {
        made: Mutex::new(Vec::new()),
    });
    let mut config = HttpConfig::new("fake", fake.url.clone());
    config.headers = vec![("DPoP".into(), "configured".into())];
    config.auth = Some(hook.clone());
    let client = mcp_http::connect(config, session()).await.unwrap();
    assert!(client.list_all_tools().await.is_ok());
    let made = hook.made.lock().unwrap().clone();
    assert!(made.contains(&(Method::POST, fake.url.clone())), "{made:?}");
    let proofs: Vec<String> = fake
        .seen()
        .iter()
        .filter(|s| s.method == Method::POST)
        .map(|s| {
            let all: Vec<_> = s.headers.get_all("dpop").iter().collect();
            assert_eq!(all.len(), 1, "the hook's value replaces the configured one");
            all[0].to_str().unwrap().to_owned()
        })
        .collect();
    assert!(proofs.len() >= 3, "initialize, initialized, tools/list");
    let mut distinct = proofs.clone();
    distinct.dedup();
    assert_eq!(distinct, proofs, "one per request");
    client.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn https_with_a_private_ca_and_certificate_checks() {
    let (ca_pem, acceptor) = mcp_testkit::fake_http::test_pki();
    let fake = FakeHttp::start_with(Some(acceptor)).await;
    let url = fake.url.clone();

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
    let fake = FakeHttp::start().await;
    fake.set_fault(Fault::CloseAfterPriming);
    let client = mcp_http::connect(HttpConfig::new("fake", fake.url.clone()), session())
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
    let resume = fake
        .seen()
        .into_iter()
        .find(|s| s.method == Method::GET && s.headers.contains_key("last-event-id"))
        .expect("a GET resumed the stream");
    assert_eq!(resume.headers["last-event-id"], "1");
    assert_eq!(resume.headers["mcp-session-id"], "fake-session");
    assert_eq!(resume.headers["accept"], "text/event-stream");
}

/// Every text an error shows: its `Display` and `Debug`, and those of each of its causes.
fn shown_texts(error: &(dyn std::error::Error + 'static)) -> Vec<String> {
    let mut texts = Vec::new();
    let mut next = Some(error);
    while let Some(e) = next {
        texts.push(e.to_string());
        texts.push(format!("{e:?}"));
        next = e.source();
    }
    texts
}

/// Asserts that no text of `error` (see [`shown_texts`]) holds any of `secrets`.
fn assert_hides(error: &mcp_http::Error, secrets: &[&str]) {
    for text in shown_texts(error) {
        for secret in secrets {
            assert!(!text.contains(secret), "{secret:?} shows in {text:?}");
        }
    }
}

/// A loopback server that reads each request (head, and a body of `Content-Length`), keeps
/// its head, writes `reply` as it is and closes the connection. Returns the port and the heads.
async fn raw_server(reply: &'static [u8]) -> (u16, Arc<Mutex<Vec<String>>>) {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let heads = Arc::new(Mutex::new(Vec::new()));
    let kept = Arc::clone(&heads);
    tokio::spawn(async move {
        while let Ok((mut tcp, _)) = listener.accept().await {
            let kept = Arc::clone(&kept);
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 4096];
                let head_end = loop {
                    if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                        break i + 4;
                    }
                    match tcp.read(&mut chunk).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    }
                };
                let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
                let length: usize = head
                    .lines()
                    .find_map(|l| {
                        let (name, value) = l.split_once(':')?;
                        name.eq_ignore_ascii_case("content-length")
                            .then(|| value.trim().parse().ok())?
                    })
                    .unwrap_or(0);
                kept.lock().unwrap().push(head);
                // The whole body is read first: closing on unread bytes would be a reset.
                while buf.len() < head_end + length {
                    match tcp.read(&mut chunk).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    }
                }
                let _ = tcp.write_all(reply).await;
                let _ = tcp.shutdown().await;
            });
        }
    });
    (port, heads)
}

/// A key in a configured URL's query or userinfo shows in no error and no `Debug`: not when
/// the URL is refused before any connection, and not when a connection is made and fails
/// later (an HTTP error with a body, a response cut short, a refused connection). Each error
/// is checked whole: `Display`, `Debug`, and every cause in its source chain.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_in_the_url_stays_out_of_errors_and_debug() {
    let config = HttpConfig::new("keyed", "https://user:pw1@api.example/mcp?key=SECRET1");
    let shown = format!("{config:?}");
    assert!(shown.contains("https://api.example/mcp"), "{shown}");
    assert!(
        !shown.contains("SECRET1") && !shown.contains("pw1"),
        "{shown}"
    );

    // Refused before any connection.
    let err = mcp_http::connect(
        HttpConfig::new("keyed", "ftp://u:pw2@x.example/mcp?key=SECRET2"),
        session(),
    )
    .await
    .unwrap_err();
    assert!(
        err.to_string().contains("is not an http or https URL"),
        "{err}"
    );
    assert_hides(&err, &["SECRET2", "pw2"]);

    // A connection is made, and fails after the request went out. Each case is what the
    // server does, its answer, and a part of the error that shows the failure is the one meant;
    // the server saw the key, so it was in the URL sent.
    let cases: [(&str, &[u8], &str); 4] = [
        (
            "an HTTP error with a body",
            b"HTTP/1.1 500 Internal Server Error\r\n\
              content-type: text/plain\r\ncontent-length: 16\r\n\r\nthe server broke",
            "the server broke",
        ),
        (
            // 404 to the initialize POST: the HTTP+SSE fallback GETs the same URL, and fails too.
            "an HTTP error that makes the client try the old transport",
            b"HTTP/1.1 404 Not Found\r\n\
              content-type: text/plain\r\ncontent-length: 13\r\n\r\nno such thing",
            "HTTP+SSE fallback failed",
        ),
        (
            "a response cut short",
            b"HTTP/1.1 200 OK\r\n\
              content-type: application/json\r\ncontent-length: 1000\r\n\r\n{\"jsonrpc\":\"2.0\",",
            "reading the answer failed",
        ),
        (
            "a connection closed before any response",
            b"",
            "POST failed",
        ),
    ];
    for (what, reply, expected) in cases {
        let (port, heads) = raw_server(reply).await;
        let url = format!("http://user:pw3@127.0.0.1:{port}/mcp?api_key=SECRET3");
        let err = mcp_http::connect(HttpConfig::new("keyed", url), session())
            .await
            .unwrap_err();
        assert!(err.to_string().contains(expected), "{what}: {err}");
        let heads = heads.lock().unwrap().clone();
        assert!(
            heads
                .iter()
                .any(|h| h.contains("/mcp?api_key=SECRET3 HTTP/1.1")),
            "{what}: the server saw {heads:?}"
        );
        assert_hides(&err, &["SECRET3", "pw3"]);
    }

    // Nothing listens on the port any more: the connection is refused.
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let url = format!("http://user:pw4@127.0.0.1:{port}/mcp?api_key=SECRET4");
    let err = mcp_http::connect(HttpConfig::new("keyed", url), session())
        .await
        .unwrap_err();
    assert_hides(&err, &["SECRET4", "pw4"]);
    assert!(
        shown_texts(&err).iter().any(|t| t.contains("refused")),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_era_cache_is_the_configs_own_and_shared_by_its_clones() {
    // A handshake-era server: the first negotiating connection probes with server/discover,
    // and remembers the answer in its config's cache.
    let fake = FakeHttp::start().await;
    let negotiating = ClientConfig::new(Implementation::new("it".into(), "0".into()));
    let probes = || {
        fake.seen()
            .iter()
            .filter(|s| s.body["method"] == "server/discover")
            .count()
    };
    let mine = HttpConfig::new("fake", fake.url.clone());
    for (config, probed) in [
        (mine.clone(), 1),
        // A clone shares the cache: no probe.
        (mine.clone(), 1),
        // Another config has its own, empty cache: it probes.
        (HttpConfig::new("fake", fake.url.clone()), 2),
    ] {
        let client = mcp_http::connect(config, negotiating.clone())
            .await
            .unwrap();
        assert_eq!(client.server_info().era, mcp_protocol::Era::Handshake);
        client.close().await;
        assert_eq!(
            probes(),
            probed,
            "{:?}",
            fake.seen()
                .iter()
                .map(|s| s.body["method"].clone())
                .collect::<Vec<_>>()
        );
    }
}
