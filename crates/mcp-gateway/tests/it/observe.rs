//! `GET /metrics`, `/healthz` and `/readyz` on the HTTP gateway: counts that move with the
//! calls made, label values escaped, no token or session id in the page, the token required
//! when one is configured, and readiness that follows an upstream as it becomes ready.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use mcp_gateway::Gateway;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;

use crate::support::{TempDir, call, load_and_start, plain_client};

const TOKEN: &str = "front-door-secret";

/// The fake stdio server as an upstream entry, with these flags.
fn fake(args: &[String]) -> Value {
    json!({
        "command": mcp_testkit::fake_server().display().to_string(),
        "args": args,
        "permission": {"default": "allow"},
    })
}

/// Starts a passthrough gateway over `servers` with the file's other fields `extra`.
async fn start(dir: &TempDir, servers: Value, extra: Value) -> Gateway {
    let mut file = json!({
        "mode": "passthrough",
        "mcpServers": servers,
        "logFile": dir.path().join("gateway.log"),
    });
    if let (Value::Object(file), Value::Object(extra)) = (&mut file, extra) {
        file.extend(extra);
    }
    let path = dir.path().join("gateway.json");
    std::fs::write(&path, serde_json::to_vec_pretty(&file).unwrap()).unwrap();
    load_and_start(&path).await
}

/// Serves `gateway` over HTTP behind [`TOKEN`]; returns its address.
async fn serve(gateway: &Gateway) -> SocketAddr {
    let (listener, addr) = mcp_http::bind("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let mut config = mcp_http::HttpServerConfig::new(gateway.server_config());
    config.bearer_token = Some(TOKEN.to_owned());
    let served = gateway.clone();
    tokio::spawn(async move {
        let _ = served.serve_http(listener, config).await;
    });
    addr
}

/// Our client over HTTP, with the token.
async fn client(addr: SocketAddr) -> mcp_session::Client {
    let mut config = mcp_http::HttpConfig::new("gateway", format!("http://{addr}/mcp"));
    config.auth = Some(Arc::new(mcp_http::StaticAuth::bearer(TOKEN).unwrap()));
    mcp_http::connect(config, plain_client("observe-test"))
        .await
        .unwrap()
}

/// One request on a connection of its own: the status, the head and the body.
async fn http(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &str,
    body: &str,
) -> (u16, String, String) {
    let request = format!(
        "{method} {path} HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n{headers}content-length: {}\r\n\r\n{body}",
        body.len()
    );
    let mut tcp = TcpStream::connect(addr).await.unwrap();
    tcp.write_all(request.as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), tcp.read_to_end(&mut raw))
        .await
        .expect("the answer came")
        .unwrap();
    let raw = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = raw.split_once("\r\n\r\n").unwrap_or((&raw, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    (status, head.to_owned(), body.to_owned())
}

/// Waits until `/readyz` says 200 (the upstreams connect in the background), probing at most
/// 60 times; returns the last answer's status and body.
async fn wait_ready(addr: SocketAddr) -> (u16, String) {
    let mut last = (0, String::new());
    for _ in 0..60 {
        let (status, _, body) = http(addr, "GET", "/readyz", &bearer(), "").await;
        last = (status, body);
        if status == 200 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    last
}

fn bearer() -> String {
    format!("authorization: Bearer {TOKEN}\r\n")
}

/// The page, with the token.
async fn metrics(addr: SocketAddr) -> String {
    let (status, head, body) = http(addr, "GET", "/metrics", &bearer(), "").await;
    assert_eq!(status, 200, "{head}\n{body}");
    assert!(
        head.to_ascii_lowercase()
            .contains("content-type: text/plain; version=0.0.4"),
        "{head}"
    );
    body
}

/// The value of the sample written exactly as `series` (name and labels), if there is one.
fn sample(page: &str, series: &str) -> Option<f64> {
    page.lines().find_map(|line| {
        let value = line.strip_prefix(series)?.strip_prefix(' ')?;
        value.parse().ok()
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_count_what_clients_do_and_hold_no_token_or_session_id() {
    let dir = TempDir::new("metrics");
    let gateway = start(&dir, json!({"fake": fake(&[])}), json!({})).await;
    let addr = serve(&gateway).await;
    wait_ready(addr).await;

    // The token is wanted for the page and for readiness; health is for anyone.
    let (status, _, _) = http(addr, "GET", "/metrics", "", "").await;
    assert_eq!(status, 401);
    let (status, _, _) = http(addr, "GET", "/readyz", "", "").await;
    assert_eq!(status, 401);
    let (status, _, body) = http(addr, "GET", "/healthz", "", "").await;
    assert_eq!((status, body.as_str()), (200, "ok\n"));

    let before = metrics(addr).await;
    let calls_ok = "mcp_gateway_requests_total{method=\"tools/call\",outcome=\"ok\"}";
    let echo_count =
        "mcp_gateway_tool_call_duration_seconds_count{upstream=\"fake\",tool=\"echo\"}";
    assert!(
        before.contains("# TYPE mcp_gateway_requests_total counter"),
        "{before}"
    );
    assert_eq!(sample(&before, "mcp_http_sessions"), Some(0.0), "{before}");
    assert_eq!(
        sample(
            &before,
            "mcp_gateway_upstreams{upstream=\"fake\",state=\"ready\"}"
        ),
        Some(1.0),
        "{before}"
    );
    assert_eq!(sample(&before, calls_ok), None, "{before}");
    assert_eq!(sample(&before, echo_count), None, "{before}");

    // A session of our own, to know its id.
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"}}})
    .to_string();
    let headers = format!(
        "{}content-type: application/json\r\naccept: application/json, text/event-stream\r\n",
        bearer()
    );
    let (status, head, _) = http(addr, "POST", "/mcp", &headers, &init).await;
    assert_eq!(status, 200, "{head}");
    let session_id = head
        .lines()
        .find_map(|l| {
            let (name, value) = l.split_once(':')?;
            name.eq_ignore_ascii_case("mcp-session-id")
                .then(|| value.trim().to_owned())
        })
        .expect("a session id");
    assert_eq!(session_id.len(), 32, "{session_id}");

    let client = client(addr).await;
    for _ in 0..2 {
        call(&client, "echo", json!({"message": "hi"})).await;
    }
    let after = metrics(addr).await;
    assert_eq!(sample(&after, calls_ok), Some(2.0), "{after}");
    assert_eq!(sample(&after, echo_count), Some(2.0), "{after}");
    assert_eq!(
        sample(
            &after,
            "mcp_gateway_tool_calls_total{upstream=\"fake\",tool=\"echo\",outcome=\"ok\"}"
        ),
        Some(2.0),
        "{after}"
    );
    assert_eq!(
        sample(
            &after,
            "mcp_gateway_tool_call_duration_seconds_bucket{upstream=\"fake\",tool=\"echo\",le=\"+Inf\"}"
        ),
        Some(2.0),
        "{after}"
    );
    assert_eq!(sample(&after, "mcp_http_sessions"), Some(2.0), "{after}");
    assert!(
        sample(&after, "mcp_http_request_bytes_total").unwrap() > 0.0,
        "{after}"
    );
    assert!(
        sample(&after, "mcp_http_response_bytes_total").unwrap()
            > sample(&before, "mcp_http_response_bytes_total").unwrap(),
        "{after}"
    );
    assert!(
        sample(
            &after,
            "mcp_http_requests_total{method=\"POST\",code=\"200\"}"
        )
        .unwrap()
            >= 3.0,
        "{after}"
    );
    assert_eq!(sample(&after, "mcp_gateway_ready"), Some(1.0), "{after}");
    // Neither the token nor a session id is anywhere in the page.
    assert!(!after.contains(TOKEN), "{after}");
    assert!(!after.contains(&session_id), "{after}");
    gateway.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_name_with_a_quote_a_backslash_and_a_newline_is_escaped() {
    let dir = TempDir::new("metrics-escape");
    let name = "we\"ird\\na\nme";
    let tools = dir.path().join("tools.json");
    std::fs::write(
        &tools,
        serde_json::to_vec(&json!([{"name": name, "inputSchema": {"type": "object"}}])).unwrap(),
    )
    .unwrap();
    let args = ["--tools-file".to_owned(), tools.display().to_string()];
    let gateway = start(&dir, json!({"fake": fake(&args)}), json!({})).await;
    let addr = serve(&gateway).await;
    wait_ready(addr).await;
    let client = client(addr).await;
    let listed = client.list_all_tools().await.unwrap();
    let shown = listed
        .iter()
        .find(|t| t.name.starts_with("we"))
        .map(|t| t.name.clone())
        .expect("the tool is listed");
    call(&client, &shown, json!({})).await;
    let page = metrics(addr).await;
    let escaped = "{upstream=\"fake\",tool=\"we\\\"ird\\\\na\\nme\"}";
    assert_eq!(
        sample(
            &page,
            &format!("mcp_gateway_tool_call_duration_seconds_count{escaped}")
        ),
        Some(1.0),
        "{page}"
    );
    // The raw name, with its line break, never starts a line of its own.
    assert!(!page.lines().any(|l| l.starts_with("me\"")), "{page}");
    gateway.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readyz_turns_200_once_a_slow_upstream_is_ready() {
    let dir = TempDir::new("readyz");
    // It takes two seconds before it reads `initialize`, each time it is started.
    let slow = fake(&["--startup-delay-ms".to_owned(), "2000".to_owned()]);
    let gateway = start(
        &dir,
        json!({"fake": fake(&[]), "slow": slow}),
        json!({"ready": ["fake", "slow"]}),
    )
    .await;
    let addr = serve(&gateway).await;
    let (status, body) = wait_ready(addr).await;
    assert_eq!(status, 200, "{body}");

    // It crashes in a call; the host starts it again, and it is slow again.
    let client = client(addr).await;
    let crashed = call_raw(&client, "mcp__slow__crash").await;
    assert!(crashed.is_err() || crashed.is_ok_and(|r| r.is_error == Some(true)));
    let (status, _, body) = http(addr, "GET", "/readyz", &bearer(), "").await;
    assert_eq!(status, 503, "{body}");
    let body: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(body["ready"], false, "{body}");
    assert_eq!(body["rule"], json!(["fake", "slow"]), "{body}");
    // Waiting to be started again (`error`, with the reason), or being started.
    let state = body["notReady"][0]["state"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert_eq!(body["notReady"][0]["upstream"], "slow", "{body}");
    assert_eq!(body["notReady"].as_array().map(Vec::len), Some(1), "{body}");
    assert!(["error", "connecting"].contains(&state.as_str()), "{body}");
    let page = metrics(addr).await;
    assert_eq!(sample(&page, "mcp_gateway_ready"), Some(0.0), "{page}");
    assert_eq!(
        sample(
            &page,
            &format!("mcp_gateway_upstreams{{upstream=\"slow\",state=\"{state}\"}}")
        ),
        Some(1.0),
        "{page}"
    );
    assert_eq!(
        sample(
            &page,
            "mcp_gateway_upstreams{upstream=\"slow\",state=\"ready\"}"
        ),
        Some(0.0),
        "{page}"
    );

    let (status, body) = wait_ready(addr).await;
    assert_eq!(status, 200, "{body}");
    let body: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(body["ready"], true, "{body}");
    assert_eq!(body["notReady"], json!([]), "{body}");
    gateway.shutdown().await;
}

/// Calls `tool` with no arguments; the protocol error, if any, is returned.
async fn call_raw(
    client: &mcp_session::Client,
    tool: &str,
) -> Result<mcp_protocol::schema::CallToolResult, mcp_session::Error> {
    let params = mcp_protocol::schema::CallToolParams::new(tool.to_owned());
    client
        .call_tool(params, mcp_protocol::RequestOptions::DEFAULT)
        .await
}
