//! The gateway's OpenTelemetry spans (issue 22 §6): the client's `traceparent` in `_meta`
//! continued through the gateway to the upstream, and a collector that is dead or hangs never
//! slowing or failing a call. With the private feature `__otlp_receiver` (run by
//! `cargo xtask interop`), the spans are also exported to a real OTLP receiver, the official
//! protobuf definitions behind `xtask/interop/otlp-receiver.py`, which parses them strictly.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_gateway::{Gateway, GatewayOptions, TraceExport};
use mcp_protocol::schema::{CallToolParams, ClientRequest, Implementation, ServerCapabilities};
use mcp_protocol::{ErrorObject, JsonObject, RawJson, RequestOptions, ServerConfig, code};
use mcp_session::{Client, Handler, RequestContext};
use serde_json::{Value, json};

use crate::support::{TempDir, over_http, plain_client};

/// The client's own span, as a tracing client would put it in `_meta`.
const TRACE: &str = "0af7651916cd43dd8448eb211c80319c";
const CLIENT_SPAN: &str = "b7ad6b7169203331";
/// An argument no span may carry.
const ARGUMENT: &str = "do-not-export-this-argument";

/// An upstream that keeps the `_meta` of every `tools/call` it is sent: `echo` answers, `fail`
/// answers a tool error.
#[derive(Clone, Default)]
struct Recorder {
    metas: Arc<Mutex<Vec<JsonObject>>>,
}

impl Recorder {
    fn metas(&self) -> Vec<JsonObject> {
        self.metas.lock().unwrap().clone()
    }
}

impl Handler for Recorder {
    async fn handle(
        &self,
        request: ClientRequest,
        _: RequestContext,
    ) -> Result<RawJson, ErrorObject> {
        let result = match request {
            ClientRequest::ListTools(_) => json!({"tools": [
                {"name": "echo", "inputSchema": {"type": "object"}},
                {"name": "fail", "inputSchema": {"type": "object"}},
            ]}),
            ClientRequest::CallTool(p) => {
                self.metas
                    .lock()
                    .unwrap()
                    .push(p.meta.clone().unwrap_or_default());
                let failed = p.name == "fail";
                json!({"content": [{"type": "text", "text": "done"}], "isError": failed})
            }
            other => {
                return Err(ErrorObject::new(
                    code::METHOD_NOT_FOUND,
                    other.method().to_owned(),
                ));
            }
        };
        Ok(RawJson::encode(&result).unwrap())
    }
}

/// The recorder over Streamable HTTP on a loopback port; returns its URL.
async fn start_recorder(recorder: Recorder) -> String {
    let (listener, addr) = mcp_http::bind("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let mut config = ServerConfig::new(Implementation::new("rec".into(), "0".into()));
    config.capabilities =
        serde_json::from_value::<ServerCapabilities>(json!({"tools": {}})).unwrap();
    tokio::spawn(async move {
        let _ =
            mcp_http::serve_http(listener, mcp_http::HttpServerConfig::new(config), recorder).await;
    });
    format!("http://{addr}/mcp")
}

/// A passthrough gateway in front of the recorder, exporting its spans to `traces`.
async fn start(dir: &TempDir, upstream: &str, traces: Option<TraceExport>) -> Gateway {
    let file = json!({
        "mode": "passthrough",
        "mcpServers": {"rec": {"type": "http", "url": upstream, "permission": {"default": "allow"}}},
        "logFile": dir.path().join("gateway.log"),
    });
    let path = dir.path().join("gateway.json");
    std::fs::write(&path, serde_json::to_vec_pretty(&file).unwrap()).unwrap();
    let loaded = mcp_gateway::load(&path, &mcp_host::config::Env::new(), None).unwrap();
    let mut options = GatewayOptions::new();
    options.traces = traces;
    let gateway = Gateway::start(loaded, options).await.unwrap();
    for _ in 0..1000 {
        let status = gateway.host().server_status("rec").unwrap();
        if status.state == mcp_host::ServerState::Ready {
            return gateway;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!(
        "the upstream is not ready: {:?}",
        gateway.host().server_status("rec")
    );
}

/// Calls `tool` with the client's trace context in `_meta`; a protocol error fails the test.
async fn traced_call(client: &Client, tool: &str, flags: &str) -> Value {
    let mut params = CallToolParams::new(tool.to_owned());
    params.arguments = json!({"text": ARGUMENT}).as_object().cloned();
    params.meta = json!({
        "traceparent": format!("00-{TRACE}-{CLIENT_SPAN}-{flags}"),
        "tracestate": "vendor=opaque",
    })
    .as_object()
    .cloned();
    let result = tokio::time::timeout(
        Duration::from_secs(30),
        client.call_tool(params, RequestOptions::DEFAULT),
    )
    .await
    .unwrap_or_else(|_| panic!("{tool}: no answer in 30 s"))
    .unwrap_or_else(|e| panic!("{tool}: {e}"));
    serde_json::to_value(result).unwrap()
}

/// The trace and parent span ids of an upstream request's `traceparent`.
fn parent_of(meta: &JsonObject) -> (String, String, String) {
    let parent = meta["traceparent"].as_str().unwrap();
    let parts: Vec<&str> = parent.split('-').collect();
    assert_eq!(parts.len(), 4, "{parent}");
    assert_eq!(parts[0], "00", "{parent}");
    (
        parts[1].to_owned(),
        parts[2].to_owned(),
        parts[3].to_owned(),
    )
}

/// Waits (up to 20 s) until `done` holds of the gateway's span counts.
async fn wait_for_stats(gateway: &Gateway, done: impl Fn(mcp_gateway::TraceStats) -> bool) {
    for _ in 0..1000 {
        if done(gateway.trace_stats()) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("span counts still {:?}", gateway.trace_stats());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_an_export_the_clients_context_reaches_the_upstream_unchanged() {
    let dir = TempDir::new("traces-off");
    let recorder = Recorder::default();
    let upstream = start_recorder(recorder.clone()).await;
    let gateway = start(&dir, &upstream, None).await;
    let client = over_http(&gateway, plain_client("traces")).await;
    traced_call(&client, "echo", "01").await;
    let metas = recorder.metas();
    assert_eq!(metas.len(), 1);
    assert_eq!(
        metas[0]["traceparent"],
        format!("00-{TRACE}-{CLIENT_SPAN}-01")
    );
    assert_eq!(metas[0]["tracestate"], "vendor=opaque");
    assert_eq!(gateway.trace_stats(), mcp_gateway::TraceStats::default());
}

/// The context a client instrumented at the HTTP layer sends in headers only.
const HEADER_TRACE: &str = "5bf92f3577b34da6a3ce929d0e0e4737";
const HEADER_SPAN: &str = "10f067aa0ba902b8";

/// A client over HTTP whose every POST carries `traceparent` and `tracestate` headers.
async fn header_client(gateway: &Gateway) -> Client {
    let url = crate::support::serve_http(gateway, None).await;
    let mut config = mcp_http::HttpConfig::new("gateway", url);
    config.headers = vec![
        (
            "traceparent".to_owned(),
            format!("00-{HEADER_TRACE}-{HEADER_SPAN}-01"),
        ),
        ("tracestate".to_owned(), "by=header".to_owned()),
    ];
    mcp_http::connect(config, plain_client("traces-by-header"))
        .await
        .unwrap()
}

/// Calls `echo` with no `_meta`.
async fn plain_call(client: &Client) {
    let mut params = CallToolParams::new("echo".to_owned());
    params.arguments = json!({"text": ARGUMENT}).as_object().cloned();
    let result = client
        .call_tool(params, RequestOptions::DEFAULT)
        .await
        .unwrap();
    assert_ne!(result.is_error, Some(true));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_traceparent_header_stands_in_for_a_missing_meta_context() {
    let dir = TempDir::new("traces-header");
    let recorder = Recorder::default();
    let upstream = start_recorder(recorder.clone()).await;
    let gateway = start(&dir, &upstream, None).await;
    let client = header_client(&gateway).await;
    plain_call(&client).await;
    // `_meta` wins over the header.
    traced_call(&client, "echo", "01").await;
    let metas = recorder.metas();
    assert_eq!(metas.len(), 2);
    assert_eq!(
        metas[0]["traceparent"],
        format!("00-{HEADER_TRACE}-{HEADER_SPAN}-01")
    );
    assert_eq!(metas[0]["tracestate"], "by=header");
    assert_eq!(
        metas[1]["traceparent"],
        format!("00-{TRACE}-{CLIENT_SPAN}-01")
    );
    assert_eq!(metas[1]["tracestate"], "vendor=opaque");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_collector_that_never_answers_slows_and_fails_no_call() {
    // A collector that accepts connections and never answers: the worst kind of dead.
    let hole = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = hole.local_addr().unwrap();
    let held = Arc::new(Mutex::new(Vec::new()));
    let keep = Arc::clone(&held);
    std::thread::spawn(move || {
        for stream in hole.incoming().flatten() {
            keep.lock().unwrap().push(stream);
        }
    });
    let mut export = TraceExport::new(format!("http://{addr}/v1/traces"));
    export.max_queue = 4;
    export.max_batch = 4;
    export.schedule_delay = Duration::from_millis(10);
    export.timeout = Duration::from_secs(3600);

    let dir = TempDir::new("traces-dead");
    let recorder = Recorder::default();
    let upstream = start_recorder(recorder.clone()).await;
    let gateway = start(&dir, &upstream, Some(export)).await;
    let client = over_http(&gateway, plain_client("traces")).await;
    const CALLS: usize = 40;
    let mut answered = 0;
    for _ in 0..CALLS {
        let result = traced_call(&client, "echo", "01").await;
        assert_eq!(result["content"][0]["text"], "done", "{result}");
        answered += 1;
    }
    assert_eq!(answered, CALLS);
    // Every call still carried a trace context upstream: the client's trace, the gateway's
    // own span as the parent.
    let metas = recorder.metas();
    assert_eq!(metas.len(), CALLS);
    for meta in &metas {
        let (trace, span, flags) = parent_of(meta);
        assert_eq!(trace, TRACE);
        assert_ne!(
            span, CLIENT_SPAN,
            "the gateway's span is the upstream's parent"
        );
        assert_eq!(flags, "01");
    }
    // Two spans a call, four held at most while one export hangs: the rest were dropped and
    // counted, none exported.
    wait_for_stats(&gateway, |s| s.dropped >= (2 * CALLS - 8) as u64).await;
    assert_eq!(gateway.trace_stats().exported, 0);
    assert!(!held.lock().unwrap().is_empty(), "the collector was tried");
}

/// A collector that takes every export (200, `{}`) and counts them: enough to see when spans
/// leave; their content is the real receiver's to check.
fn accepting_collector() -> (String, Arc<std::sync::atomic::AtomicUsize>) {
    use std::io::{BufRead as _, Read as _, Write as _};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1/traces", listener.local_addr().unwrap());
    let posts = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = Arc::clone(&posts);
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut reader = std::io::BufReader::new(&stream);
            let mut length = 0;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                if let Some((name, value)) = line.split_once(':')
                    && name.eq_ignore_ascii_case("content-length")
                {
                    length = value.trim().parse().unwrap_or(0);
                }
            }
            let mut body = vec![0; length];
            if reader.read_exact(&mut body).is_ok() {
                counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            }
            let _ = (&stream).write_all(
                b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}",
            );
        }
    });
    (url, posts)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_sends_the_spans_still_queued() {
    let (url, posts) = accepting_collector();
    let mut export = TraceExport::new(url);
    // Nothing would leave on schedule while the test runs.
    export.schedule_delay = Duration::from_secs(3600);
    let dir = TempDir::new("traces-flush");
    let recorder = Recorder::default();
    let upstream = start_recorder(recorder.clone()).await;
    let gateway = start(&dir, &upstream, Some(export)).await;
    let client = over_http(&gateway, plain_client("traces")).await;
    traced_call(&client, "echo", "01").await;
    assert_eq!(gateway.trace_stats().exported, 0, "still queued");
    gateway.shutdown().await;
    assert_eq!(gateway.trace_stats().exported, 2, "the call's two spans");
    assert_eq!(posts.load(std::sync::atomic::Ordering::SeqCst), 1);
}

#[cfg(feature = "__otlp_receiver")]
mod receiver {
    //! The spans as a real OTLP receiver gets them.

    use std::io::BufRead as _;
    use std::process::{Child, Command, Stdio};

    use super::*;

    /// The receiver process, killed when the test ends.
    struct Receiver {
        child: Child,
        port: u16,
    }

    impl Receiver {
        fn start() -> Self {
            let python = std::env::var("MCP_OTLP_PYTHON")
                .expect("MCP_OTLP_PYTHON: the Python `cargo xtask interop` installs");
            let script = std::env::var("MCP_OTLP_RECEIVER")
                .expect("MCP_OTLP_RECEIVER: xtask/interop/otlp-receiver.py");
            let mut child = Command::new(python)
                .arg(script)
                .stdout(Stdio::piped())
                .spawn()
                .unwrap();
            let mut line = String::new();
            std::io::BufReader::new(child.stdout.take().unwrap())
                .read_line(&mut line)
                .unwrap();
            let port = line
                .trim()
                .strip_prefix("listening ")
                .unwrap_or_else(|| panic!("the receiver said {line:?}"))
                .parse()
                .unwrap();
            Self { child, port }
        }

        async fn received(&self) -> Value {
            let fetcher = mcp_http::Fetcher::new(mcp_http::FetchOptions::new()).unwrap();
            let request = http::Request::get(format!("http://127.0.0.1:{}/spans", self.port))
                .body(Vec::new())
                .unwrap();
            let response = fetcher.send(request).await.unwrap();
            serde_json::from_slice(response.body()).unwrap()
        }
    }

    impl Drop for Receiver {
        fn drop(&mut self) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }

    /// The one span of `kind` (2 server, 3 client) named `name` in `trace`.
    fn one<'a>(spans: &'a [Value], trace: &str, kind: i64, name: &str) -> &'a Value {
        let found: Vec<&Value> = spans
            .iter()
            .filter(|s| s["traceId"] == trace && s["kind"] == kind && s["name"] == name)
            .collect();
        assert_eq!(found.len(), 1, "{kind} {name} in {spans:#?}");
        found[0]
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn spans_join_the_clients_trace_in_a_real_otlp_receiver() {
        let receiver = Receiver::start();
        let mut export = TraceExport::new(format!("http://127.0.0.1:{}/v1/traces", receiver.port));
        export.schedule_delay = Duration::from_millis(20);
        export.service_name = "gateway-under-test".to_owned();
        export.headers = vec![("x-api-key".to_owned(), "collector-secret".to_owned())];

        let dir = TempDir::new("traces-otlp");
        let recorder = Recorder::default();
        let upstream = start_recorder(recorder.clone()).await;
        let gateway = start(&dir, &upstream, Some(export)).await;
        let client = over_http(&gateway, plain_client("traces")).await;
        traced_call(&client, "echo", "01").await;
        let failed = traced_call(&client, "fail", "01").await;
        assert_eq!(failed["isError"], true);
        // A client that does not sample its trace gets no spans, and its context goes on.
        traced_call(&client, "echo", "00").await;
        // A client that sends its context in HTTP headers only.
        plain_call(&header_client(&gateway).await).await;

        wait_for_stats(&gateway, |s| s.exported >= 6).await;
        let received = receiver.received().await;
        assert_eq!(received["errors"], json!([]), "the receiver refused some");
        let spans = received["spans"].as_array().unwrap().clone();
        let ours: Vec<Value> = spans
            .iter()
            .filter(|s| s["traceId"] == TRACE)
            .cloned()
            .collect();
        assert_eq!(ours.len(), 4, "two spans for each sampled call: {spans:#?}");
        let servers: Vec<&Value> = ours.iter().filter(|s| s["kind"] == 2).collect();
        let clients: Vec<&Value> = ours.iter().filter(|s| s["kind"] == 3).collect();
        assert_eq!((servers.len(), clients.len()), (2, 2));

        let server = one(&ours, TRACE, 2, "tools/call echo");
        let upstream_span = clients
            .iter()
            .find(|c| c["parentSpanId"] == server["spanId"])
            .expect("a client span under the server span");
        assert_eq!(server["parentSpanId"], CLIENT_SPAN);
        assert_eq!(server["traceState"], "vendor=opaque");
        assert_eq!(server["resource"]["service.name"], "gateway-under-test");
        assert_eq!(server["status"], 0);
        let a = &server["attributes"];
        assert_eq!(a["mcp.method.name"], "tools/call");
        assert_eq!(a["gen_ai.tool.name"], "echo");
        assert_eq!(a["gen_ai.operation.name"], "execute_tool");
        assert_eq!(a["network.transport"], "tcp");
        assert!(
            a["jsonrpc.request.id"]
                .as_str()
                .is_some_and(|id| !id.is_empty()),
            "{a}"
        );
        // The gateway's own name for the session, never the `Mcp-Session-Id` header, which
        // lets whoever holds it use the session.
        assert!(
            a["mcp.session.id"]
                .as_str()
                .is_some_and(|id| id.starts_with("session-")),
            "{a}"
        );
        let header = client.session_id().expect("an HTTP session has an id");
        assert!(!received["bodies"].to_string().contains(&header));
        assert!(
            a["mcp.protocol.version"]
                .as_str()
                .is_some_and(|v| v.starts_with("20")),
            "{a}"
        );
        assert_eq!(a.get("error.type"), None);

        assert_eq!(upstream_span["name"], "tools/call echo");
        let c = &upstream_span["attributes"];
        assert_eq!(c["mcp.method.name"], "tools/call");
        assert_eq!(c["gen_ai.tool.name"], "echo");
        assert_eq!(c["network.transport"], "tcp");
        assert!(
            c["mcp.protocol.version"]
                .as_str()
                .is_some_and(|v| v.starts_with("20")),
            "{c}"
        );

        // The upstream continued the trace under the gateway's client span.
        let metas = recorder.metas();
        assert_eq!(metas.len(), 4);
        let (trace, parent, flags) = parent_of(&metas[0]);
        assert_eq!((trace.as_str(), flags.as_str()), (TRACE, "01"));
        assert_eq!(parent, upstream_span["spanId"].as_str().unwrap());
        assert_eq!(metas[0]["tracestate"], "vendor=opaque");

        // A tool error is an error on both spans.
        let failed_server = one(&ours, TRACE, 2, "tools/call fail");
        let failed_client = one(&ours, TRACE, 3, "tools/call fail");
        for span in [failed_server, failed_client] {
            assert_eq!(span["attributes"]["error.type"], "tool_error", "{span}");
            assert_eq!(span["status"], 2, "{span}");
        }
        assert_eq!(failed_client["parentSpanId"], failed_server["spanId"]);

        // The header's context is the parent when `_meta` has none.
        let by_header = one(&spans, HEADER_TRACE, 2, "tools/call echo");
        assert_eq!(by_header["parentSpanId"], HEADER_SPAN);
        assert_eq!(by_header["traceState"], "by=header");
        let under = one(&spans, HEADER_TRACE, 3, "tools/call echo");
        assert_eq!(under["parentSpanId"], by_header["spanId"]);
        let (trace, parent, _) = parent_of(&recorder.metas()[3]);
        assert_eq!(
            (trace.as_str(), parent.as_str()),
            (HEADER_TRACE, under["spanId"].as_str().unwrap())
        );

        // The unsampled call: its own context went upstream as it was, and nothing recorded.
        assert_eq!(
            metas[2]["traceparent"],
            format!("00-{TRACE}-{CLIENT_SPAN}-00")
        );
        // Arguments and the collector's header value appear in no export (checked where
        // the spans are: the bodies the receiver took).
        let bodies = received["bodies"].to_string();
        assert!(
            bodies.contains("tools/call echo"),
            "the bodies are the exports"
        );
        assert!(!bodies.contains(ARGUMENT), "an argument was exported");
        assert!(!bodies.contains("collector-secret"));
    }
}
