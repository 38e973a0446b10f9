//! The server half against clients that abuse it on purpose, in raw HTTP over loopback:
//! bodies that never come, too many sessions, credentials and hosts written to slip through.
//! (Accept errors, slow headers, too many connections and unread answers are tested inside
//! the crate, where the counters are: `server/listen/tests.rs`, `server/queue/tests.rs`.)

use std::net::SocketAddr;
use std::time::Duration;

use mcp_http::HttpServerConfig;
use mcp_protocol::schema::{ClientRequest, Implementation};
use mcp_protocol::{ErrorObject, RawJson, ServerConfig};
use mcp_session::{Handler, RequestContext};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;

/// Answers no request: the handshake is all these tests need.
struct Nothing;

impl Handler for Nothing {
    async fn handle(
        &self,
        _request: ClientRequest,
        _context: RequestContext,
    ) -> Result<RawJson, ErrorObject> {
        Err(ErrorObject::new(-32601, "nothing here".into()))
    }
}

async fn start(configure: impl FnOnce(&mut HttpServerConfig)) -> SocketAddr {
    let mut config = HttpServerConfig::new(ServerConfig::new(Implementation::new(
        "abused".into(),
        "1".into(),
    )));
    configure(&mut config);
    let (listener, addr) = mcp_http::bind("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    tokio::spawn(mcp_http::serve_http(listener, config, Nothing));
    addr
}

const INIT: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}"#;

/// Sends `head` (the request line and headers, without the blank line) and `body` on a new
/// connection, and returns what the server answers: its head and whatever of its body came
/// with it, or empty if it closed the connection. Waits at most 5 s.
async fn exchange(addr: SocketAddr, head: &str, body: &str) -> String {
    let mut tcp = TcpStream::connect(addr).await.unwrap();
    tcp.write_all(format!("{head}\r\n\r\n{body}").as_bytes())
        .await
        .unwrap();
    let mut answer = Vec::new();
    while !String::from_utf8_lossy(&answer).contains("\r\n\r\n") {
        let mut buf = vec![0u8; 4096];
        let n = tokio::time::timeout(Duration::from_secs(5), tcp.read(&mut buf))
            .await
            .expect("the server neither answered nor closed the connection")
            .unwrap_or(0);
        if n == 0 {
            break;
        }
        answer.extend_from_slice(&buf[..n]);
        // The rest of a short body, if it is on its way.
        tokio::time::sleep(Duration::from_millis(20)).await;
        if let Ok(Ok(more)) =
            tokio::time::timeout(Duration::from_millis(50), tcp.read(&mut buf)).await
        {
            answer.extend_from_slice(&buf[..more]);
        }
    }
    String::from_utf8_lossy(&answer).into_owned()
}

/// A POST of `body` with `extra` headers, its `content-length` the body's.
async fn post(addr: SocketAddr, extra: &str, body: &str) -> String {
    let head = format!(
        "POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n\
         accept: application/json, text/event-stream\r\n{extra}content-length: {}",
        body.len()
    );
    exchange(addr, &head, body).await
}

fn session_id(answer: &str) -> &str {
    answer
        .lines()
        .find_map(|l| l.strip_prefix("mcp-session-id: "))
        .unwrap_or_else(|| panic!("no session id in {answer}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_declared_past_the_limit_is_refused_before_it_comes() {
    let addr = start(|_| {}).await;
    // 10 GB declared, nothing sent: refused at once, without waiting for the body.
    let head = "POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n\
                accept: application/json, text/event-stream\r\ncontent-length: 10000000000";
    let answer = exchange(addr, head, "").await;
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_that_stops_coming_is_timed_out() {
    let addr = start(|c| c.body_read_timeout = Duration::from_millis(200)).await;
    let head = "POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n\
                accept: application/json, text/event-stream\r\ncontent-length: 100";
    let answer = exchange(addr, head, r#"{"jsonrpc""#).await;
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains("did not arrive in time"), "{answer}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_past_the_limit_are_refused_with_the_reason() {
    let addr = start(|c| c.max_sessions = 2).await;
    let first = post(addr, "", INIT).await;
    assert!(first.starts_with("HTTP/1.1 200"), "{first}");
    let second = post(addr, "", INIT).await;
    assert!(second.starts_with("HTTP/1.1 200"), "{second}");
    let third = post(addr, "", INIT).await;
    assert!(third.starts_with("HTTP/1.1 503"), "{third}");
    assert!(third.contains("holds 2 sessions"), "{third}");
    assert!(third.contains("max_sessions"), "{third}");

    // Ending one makes room for the next.
    let head = format!(
        "DELETE /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\nmcp-session-id: {}",
        session_id(&first)
    );
    let deleted = exchange(addr, &head, "").await;
    assert!(deleted.starts_with("HTTP/1.1 200"), "{deleted}");
    let fourth = post(addr, "", INIT).await;
    assert!(fourth.starts_with("HTTP/1.1 200"), "{fourth}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bearer_scheme_is_read_without_case() {
    let addr = start(|c| c.bearer_token = Some("s3cret-token".into())).await;
    let refused = post(addr, "authorization: bearer wrong-token\r\n", INIT).await;
    assert!(refused.starts_with("HTTP/1.1 401"), "{refused}");
    for scheme in ["Bearer", "bearer", "BEARER"] {
        let extra = format!("authorization: {scheme} s3cret-token\r\n");
        let answer = post(addr, &extra, INIT).await;
        assert!(answer.starts_with("HTTP/1.1 200"), "{scheme}: {answer}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_or_origin_that_only_starts_like_loopback_is_refused() {
    let addr = start(|_| {}).await;
    let request = |host: &str, origin: &str| {
        format!(
            "POST /mcp HTTP/1.1\r\nhost: {host}\r\n{origin}content-type: application/json\r\n\
             accept: application/json, text/event-stream\r\ncontent-length: {}",
            INIT.len()
        )
    };
    let ok = exchange(addr, &request("[::1]:8080", ""), INIT).await;
    assert!(ok.starts_with("HTTP/1.1 200"), "{ok}");
    let ok = exchange(
        addr,
        &request("[::1]", "origin: http://[::1]:3000\r\n"),
        INIT,
    )
    .await;
    assert!(ok.starts_with("HTTP/1.1 200"), "{ok}");
    for (host, origin) in [
        ("[::1]evil.example", ""),
        ("localhost:80evil", ""),
        ("[::1]", "origin: http://[::1]evil.example\r\n"),
        ("[::1]", "origin: http://localhost@evil.example\r\n"),
    ] {
        let answer = exchange(addr, &request(host, origin), INIT).await;
        assert!(
            answer.starts_with("HTTP/1.1 403"),
            "{host} {origin}: {answer}"
        );
    }
}

/// docs/gateway.md: "a JSON (not SSE) answer to a batch is held until its last answer and
/// counts against the stream's limit, past which the POST gets an error instead of its
/// answers"; "One message always fits in an empty stream". Which error depends on timing:
/// `500` when the answers passed the limit while being gathered, `503` when they came faster
/// than they were gathered and the stream itself was cut.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_json_batch_answer_past_the_stream_limit_is_refused() {
    let addr = start(|c| {
        c.json_response = true;
        c.max_stream_buffer_bytes = 100;
    })
    .await;
    let init = INIT.replace("2025-11-25", "2025-03-26");
    let first = post(addr, "", &init).await;
    assert!(first.starts_with("HTTP/1.1 200"), "{first}");
    let session = format!("mcp-session-id: {}\r\n", session_id(&first));
    let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    let accepted = post(addr, &session, initialized).await;
    assert!(accepted.starts_with("HTTP/1.1 202"), "{accepted}");

    let request = |id: u32| format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/list"}}"#);
    // One answer (about 80 bytes) fits; a batch of one is answered whole.
    let one = post(addr, &session, &format!("[{}]", request(2))).await;
    assert!(one.starts_with("HTTP/1.1 200"), "{one}");
    assert!(one.contains(r#"[{"jsonrpc":"2.0","id":2,"#), "{one}");
    // Three answers together pass the 100 bytes.
    let batch = format!("[{},{},{}]", request(3), request(4), request(5));
    let three = post(addr, &session, &batch).await;
    let refused = (three.starts_with("HTTP/1.1 500") && three.contains("max_stream_buffer_bytes"))
        || (three.starts_with("HTTP/1.1 503") && three.contains("too many unread answers"));
    assert!(refused, "{three}");
    assert!(!three.contains(r#""id":3"#), "{three}");
}

/// docs/gateway.md: a body that does not arrive in time gets "`408`, and the connection is
/// closed": the answer says `connection: close`, and the server ends the connection.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_that_stops_coming_closes_the_connection() {
    let addr = start(|c| c.body_read_timeout = Duration::from_millis(200)).await;
    let mut tcp = TcpStream::connect(addr).await.unwrap();
    tcp.write_all(
        b"POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n\
          accept: application/json, text/event-stream\r\ncontent-length: 100\r\n\r\n{\"jsonrpc\"",
    )
    .await
    .unwrap();
    let mut answer = Vec::new();
    tokio::time::timeout(Duration::from_secs(5), tcp.read_to_end(&mut answer))
        .await
        .expect("the connection was not closed")
        .unwrap();
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains("connection: close"), "{answer}");
}
