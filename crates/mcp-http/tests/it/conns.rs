//! The connections the client POSTs over, against a server written by hand on loopback that
//! does what ours never does: keep a call's SSE stream open after its answer. Each connection
//! is numbered in the order it was accepted, and every request is logged with the number of
//! the connection it came on.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_http::HttpConfig;
use mcp_protocol::schema::{CallToolParams, ContentBlock, Implementation};
use mcp_protocol::{ClientConfig, RequestOptions};
use tokio::io::{AsyncRead, AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;

/// A request as the server saw it: the connection's number and the JSON-RPC method (or the
/// HTTP method when there is no body).
type Seen = Arc<Mutex<Vec<(usize, String)>>>;

struct Server {
    url: String,
    seen: Seen,
    /// The server's own runtime, so that it goes on while the client's thread is blocked.
    _rt: tokio::runtime::Runtime,
}

impl Server {
    /// Answers `initialize` and notifications as a handshake-era server does, and each
    /// `tools/call` with an SSE stream that carries the answer and is never ended.
    fn start() -> Self {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let seen = Seen::default();
        let listener = rt.block_on(tokio::net::TcpListener::bind("127.0.0.1:0"));
        let listener = listener.unwrap();
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        let kept = Arc::clone(&seen);
        rt.spawn(async move {
            let mut number = 0;
            while let Ok((tcp, _)) = listener.accept().await {
                number += 1;
                tokio::spawn(connection(number, tcp, Arc::clone(&kept)));
            }
        });
        Self { url, seen, _rt: rt }
    }

    /// The `tools/call`s seen, by connection number.
    fn calls(&self) -> Vec<usize> {
        let seen = self.seen.lock().unwrap();
        seen.iter()
            .filter(|(_, method)| method == "tools/call")
            .map(|(conn, _)| *conn)
            .collect()
    }
}

/// Serves the requests of one connection in turn until the client closes it or a call's
/// stream holds it.
async fn connection(number: usize, mut tcp: TcpStream, seen: Seen) {
    let mut buf = Vec::new();
    while let Some((head, body)) = read_request(&mut tcp, &mut buf).await {
        let method = serde_json::from_slice::<serde_json::Value>(&body)
            .ok()
            .and_then(|v| v["method"].as_str().map(str::to_owned))
            .unwrap_or_else(|| head.split(' ').next().unwrap_or("").to_owned());
        seen.lock().unwrap().push((number, method.clone()));
        let id = serde_json::from_slice::<serde_json::Value>(&body)
            .ok()
            .map(|v| v["id"].clone())
            .unwrap_or_default();
        let reply = match method.as_str() {
            "initialize" => json_reply(&serde_json::json!({
                "jsonrpc": "2.0", "id": id, "result": {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "by-hand", "version": "1"},
                }
            })),
            "tools/call" => {
                let answer = serde_json::json!({
                    "jsonrpc": "2.0", "id": id,
                    "result": {"content": [{"type": "text", "text": format!("on {number}")}]},
                });
                let event = format!("event: message\ndata: {answer}\n\n");
                let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\
                            mcp-session-id: s-1\r\ntransfer-encoding: chunked\r\n\r\n";
                let chunk = format!("{:x}\r\n{event}\r\n", event.len());
                let _ = tcp.write_all(format!("{head}{chunk}").as_bytes()).await;
                // The stream is never ended: the connection is held until the client lets
                // it go.
                let mut rest = [0u8; 64];
                while matches!(tcp.read(&mut rest).await, Ok(n) if n > 0) {}
                return;
            }
            m if m.starts_with("notifications/") => {
                "HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\n\r\n".to_owned()
            }
            "DELETE" => "HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n".to_owned(),
            _ => "HTTP/1.1 405 Method Not Allowed\r\ncontent-length: 0\r\n\r\n".to_owned(),
        };
        if tcp.write_all(reply.as_bytes()).await.is_err() {
            return;
        }
    }
}

fn json_reply(message: &serde_json::Value) -> String {
    let body = message.to_string();
    format!(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nmcp-session-id: s-1\r\n\
         content-length: {}\r\n\r\n{body}",
        body.len()
    )
}

/// The next request's head and body, or `None` when the connection ends first.
async fn read_request(
    tcp: &mut (impl AsyncRead + Unpin),
    buf: &mut Vec<u8>,
) -> Option<(String, Vec<u8>)> {
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        match tcp.read(&mut chunk).await {
            Ok(0) | Err(_) => return None,
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
    while buf.len() < head_end + length {
        match tcp.read(&mut chunk).await {
            Ok(0) | Err(_) => return None,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
    let body = buf[head_end..head_end + length].to_vec();
    buf.drain(..head_end + length);
    Some((head, body))
}

/// A handshake-era client without the standalone stream, so that the only connections are
/// the POSTs'.
fn config(url: &str) -> (HttpConfig, ClientConfig) {
    let mut http = HttpConfig::new("by-hand", url);
    http.standalone_stream = false;
    http.protocol = mcp_http::HttpProtocol::Streamable;
    let mut session = ClientConfig::new(Implementation::new("it".into(), "0".into()));
    session.supported_versions = mcp_protocol::ProtocolVersion::HANDSHAKE.to_vec();
    (http, session)
}

fn text(result: &mcp_protocol::schema::CallToolResult) -> String {
    match result.content.as_slice() {
        [ContentBlock::Text(t)] => t.text.clone(),
        other => panic!("not one text: {other:?}"),
    }
}

/// A server that keeps each call's SSE stream open after the answer: every call is answered
/// (the client waits for the stream's end only briefly, and never again once it has seen this
/// server linger), and no call goes on a connection whose stream is still open.
#[test]
fn calls_to_a_server_that_keeps_its_streams_open_are_answered_each_on_a_free_connection() {
    let server = Server::start();
    let client_rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    client_rt.block_on(calls_on_lingering_streams(&server));
}

async fn calls_on_lingering_streams(server: &Server) {
    let (http, session) = config(&server.url);
    let client = mcp_http::connect(http, session).await.unwrap();
    const CALLS: usize = 5;
    let mut answers = Vec::new();
    for i in 0..CALLS {
        // A bound that only turns a hang into a failure.
        let call = client.call_tool(
            CallToolParams::new(format!("c{i}")),
            RequestOptions::DEFAULT,
        );
        let answer = tokio::time::timeout(Duration::from_secs(60), call)
            .await
            .unwrap_or_else(|_| panic!("call {i} was never answered"))
            .unwrap();
        answers.push(text(&answer));
    }
    // The handshake's connection (1) took the first call; each call after it needed a new
    // connection, since every earlier one still carries an open stream.
    assert_eq!(answers, ["on 1", "on 2", "on 3", "on 4", "on 5"]);
    assert_eq!(server.calls(), [1, 2, 3, 4, 5]);
    drop(client);
}
