//! The server half on loopback: our client against it for the whole flow, and raw HTTP
//! requests for every rule a client could break (Host, Origin, bearer, sessions, versions,
//! content types, sizes).

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{Method, Request, StatusCode};
use http_body_util::{BodyExt as _, Full};
use hyper_util::client::legacy::Client as Raw;
use hyper_util::rt::TokioExecutor;
use mcp_http::{HttpConfig, HttpServerConfig, Incoming};
use mcp_protocol::schema::{
    CallToolParams, CallToolResult, ClientRequest, ContentBlock, Implementation,
    ListChangedCapability, ListToolsResult, ServerNotification, Tool, method,
};
use mcp_protocol::{
    ClientConfig, Era, ErrorObject, ProtocolVersion, RawJson, RequestOptions, ServerConfig,
};
use mcp_session::{Handler, RequestContext};
use serde_json::{Value, json};

struct Tools;

impl Handler for Tools {
    async fn handle(
        &self,
        request: ClientRequest,
        context: RequestContext,
    ) -> Result<RawJson, ErrorObject> {
        match request {
            ClientRequest::ListTools(_) => {
                let mut work = Tool::new("work".into());
                work.input_schema = Some(work_schema());
                // An annotation on a number: a stateless-era client must drop this tool.
                let mut bad = Tool::new("bad".into());
                bad.input_schema = Some(json!({
                    "type": "object",
                    "properties": {"n": {"type": "number", "x-mcp-header": "N"}},
                }));
                Ok(RawJson::encode(&ListToolsResult::new(vec![work, bad])).unwrap())
            }
            ClientRequest::CallTool(p) if p.name == "announce" => {
                // Unprompted: goes to the standalone stream.
                context
                    .peer
                    .unrelated()
                    .notify("notifications/tools/list_changed", None)
                    .unwrap();
                Ok(
                    RawJson::encode(&CallToolResult::new(vec![ContentBlock::text("announced")]))
                        .unwrap(),
                )
            }
            ClientRequest::CallTool(p) if p.name == "broadcast" => {
                // To every session and listen stream of the server.
                context
                    .sessions
                    .notify("notifications/tools/list_changed", None);
                Ok(
                    RawJson::encode(&CallToolResult::new(vec![ContentBlock::text("told")]))
                        .unwrap(),
                )
            }
            ClientRequest::CallTool(_) => {
                for step in 1..=3 {
                    context.progress(step, Some(3), None);
                }
                Ok(
                    RawJson::encode(&CallToolResult::new(vec![ContentBlock::text("worked")]))
                        .unwrap(),
                )
            }
            _ => Err(ErrorObject::new(-32601, "no".into())),
        }
    }

    fn tool_schema(&self, name: &str) -> Option<RawJson> {
        (name == "work").then(|| RawJson::encode(&work_schema()).unwrap())
    }
}

/// The `inputSchema` of the tool `work`: `region` is mirrored in `Mcp-Param-Region`.
fn work_schema() -> Value {
    json!({
        "type": "object",
        "properties": {"region": {"type": "string", "x-mcp-header": "Region"}},
    })
}

fn server_config() -> HttpServerConfig {
    let mut server = ServerConfig::new(Implementation::new("half".into(), "1".into()));
    let mut tools = ListChangedCapability::new();
    tools.list_changed = Some(true);
    server.capabilities.tools = Some(tools);
    HttpServerConfig::new(server)
}

async fn start(config: HttpServerConfig) -> String {
    let (listener, addr) = mcp_http::bind("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    tokio::spawn(mcp_http::serve_http(listener, config, Tools));
    format!("http://127.0.0.1:{}/mcp", addr.port())
}

fn session() -> ClientConfig {
    ClientConfig::new(Implementation::new("it".into(), "0".into()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_client_against_our_server_over_sse_and_json() {
    for json in [false, true] {
        let mut config = server_config();
        config.json_response = json;
        let url = start(config).await;
        let client = mcp_http::connect(HttpConfig::new("half", url), session())
            .await
            .unwrap();
        let mut inbox = client.take_incoming().unwrap();
        assert_eq!(client.server_info().implementation.name, "half");
        assert_eq!(client.list_all_tools().await.unwrap()[0].name, "work");

        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let params = CallToolParams::new("work".into());
        let result = client
            .request_with_progress::<method::CallTool>(&params, RequestOptions::DEFAULT, Some(tx))
            .await
            .unwrap();
        assert_eq!(result.content, vec![ContentBlock::text("worked")]);
        if !json {
            // Progress travels on the request's own SSE stream, before the answer.
            let mut steps = Vec::new();
            while let Ok(p) = rx.try_recv() {
                steps.push(p.progress.as_u64().unwrap());
            }
            assert_eq!(steps, [1, 2, 3]);
        }

        // An unprompted notification arrives on the standalone GET stream.
        let announce = CallToolParams::new("announce".into());
        client
            .call_tool(announce, RequestOptions::DEFAULT)
            .await
            .unwrap();
        let note = tokio::time::timeout(Duration::from_secs(5), async {
            loop {
                if let Some(Incoming::Notification(n)) = inbox.recv().await {
                    return n;
                }
            }
        })
        .await
        .unwrap();
        assert!(matches!(note, ServerNotification::ToolListChanged(_)));
        assert!(client.close().await.contains("HTTP 200"));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_client_against_our_server_in_the_stateless_era() {
    let mut config = server_config();
    config.server.supported_versions = ProtocolVersion::KNOWN.to_vec();
    let url = start(config).await;
    // Pinned: this test is about the stateless era's wire, not about finding the era out.
    let mut session = session();
    session.supported_versions = vec![ProtocolVersion::V2026_07_28];
    let client = mcp_http::connect(HttpConfig::new("half", url), session)
        .await
        .unwrap();
    assert_eq!(client.server_info().era, Era::Stateless);

    // The tool with an invalid x-mcp-header annotation is dropped, the other kept.
    let tools = client.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["work"]);

    // The call mirrors `region` in Mcp-Param-Region, which the server checks (-32020 without).
    let mut params = CallToolParams::new("work".into());
    params.arguments = json!({"region": "eu-west"}).as_object().cloned();
    let result = client
        .call_tool(params, RequestOptions::DEFAULT)
        .await
        .unwrap();
    assert_eq!(result.content, vec![ContentBlock::text("worked")]);
    client.close().await;
}

/// A raw HTTP exchange, for the rules our own client never breaks; the body as JSON.
async fn raw(
    url: &str,
    method: Method,
    headers: &[(&str, &str)],
    body: &str,
) -> (StatusCode, http::HeaderMap, Value) {
    let (status, headers, text) = raw_text(url, method, headers, body).await;
    (
        status,
        headers,
        serde_json::from_str(&text).unwrap_or(Value::Null),
    )
}

/// A raw HTTP exchange whose response is read whole as text (an SSE stream that ends).
async fn raw_text(
    url: &str,
    method: Method,
    headers: &[(&str, &str)],
    body: &str,
) -> (StatusCode, http::HeaderMap, String) {
    let client = Raw::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
    let mut req = Request::new(Full::new(Bytes::from(body.to_owned())));
    *req.method_mut() = method;
    *req.uri_mut() = url.parse().unwrap();
    for (k, v) in headers {
        let name = http::HeaderName::from_bytes(k.as_bytes()).unwrap();
        req.headers_mut().insert(name, v.parse().unwrap());
    }
    let resp = client.request(req).await.unwrap();
    let (status, headers) = (resp.status(), resp.headers().clone());
    let bytes = resp.into_body().collect().await.unwrap().to_bytes();
    (status, headers, String::from_utf8(bytes.to_vec()).unwrap())
}

const ACCEPT: (&str, &str) = ("accept", "application/json, text/event-stream");
const JSON: (&str, &str) = ("content-type", "application/json");

fn init() -> String {
    json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}).to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_rule_a_client_can_break() {
    let mut config = server_config();
    config.json_response = true;
    config.max_body_bytes = 1000;
    let url = start(config).await;
    let list = json!({"jsonrpc":"2.0","id":2,"method":"tools/list"}).to_string();

    // DNS rebinding: a foreign Host or Origin is refused before anything else.
    let (s, _, _) = raw(
        &url,
        Method::POST,
        &[ACCEPT, JSON, ("host", "evil.example")],
        &init(),
    )
    .await;
    assert_eq!(s, StatusCode::FORBIDDEN);
    let (s, _, body) = raw(
        &url,
        Method::POST,
        &[ACCEPT, JSON, ("origin", "http://evil.example")],
        &init(),
    )
    .await;
    assert_eq!(s, StatusCode::FORBIDDEN);
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("Origin")
    );
    let (s, _, _) = raw(
        &url,
        Method::POST,
        &[ACCEPT, JSON, ("origin", "http://localhost:5173")],
        &init(),
    )
    .await;
    assert_eq!(s, StatusCode::OK, "a loopback origin is fine");

    // Media types, sizes, parse errors.
    let (s, _, _) = raw(
        &url,
        Method::POST,
        &[ACCEPT, ("content-type", "text/plain")],
        &init(),
    )
    .await;
    assert_eq!(s, StatusCode::UNSUPPORTED_MEDIA_TYPE);
    let (s, _, _) = raw(
        &url,
        Method::POST,
        &[("accept", "application/json"), JSON],
        &init(),
    )
    .await;
    assert_eq!(s, StatusCode::NOT_ACCEPTABLE);
    let (s, _, _) = raw(&url, Method::POST, &[ACCEPT, JSON], &"x".repeat(2000)).await;
    assert_eq!(s, StatusCode::PAYLOAD_TOO_LARGE);
    let (s, _, body) = raw(&url, Method::POST, &[ACCEPT, JSON], "{not json").await;
    assert_eq!(
        (s, body["error"]["code"].clone()),
        (StatusCode::BAD_REQUEST, json!(-32700))
    );

    // Sessions: none outside initialize, unknown ones are 404, the id is unguessable.
    let (s, _, _) = raw(&url, Method::POST, &[ACCEPT, JSON], &list).await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    let (s, _, _) = raw(
        &url,
        Method::POST,
        &[ACCEPT, JSON, ("mcp-session-id", "nope")],
        &list,
    )
    .await;
    assert_eq!(s, StatusCode::NOT_FOUND);
    let (s, headers, body) = raw(&url, Method::POST, &[ACCEPT, JSON], &init()).await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(body["result"]["protocolVersion"], "2025-11-25");
    let sid = headers["mcp-session-id"].to_str().unwrap().to_owned();
    assert_eq!(sid.len(), 32, "128 bits as hex: {sid}");
    let with_session = [ACCEPT, JSON, ("mcp-session-id", sid.as_str())];
    let note = json!({"jsonrpc":"2.0","method":"notifications/initialized"}).to_string();
    let (s, _, _) = raw(&url, Method::POST, &with_session, &note).await;
    assert_eq!(
        s,
        StatusCode::ACCEPTED,
        "a notification is accepted with 202"
    );
    let (s, _, body) = raw(&url, Method::POST, &with_session, &list).await;
    assert_eq!(
        (s, body["result"]["tools"][0]["name"].clone()),
        (StatusCode::OK, json!("work"))
    );

    // A bad MCP-Protocol-Version is refused.
    let bad_version = [
        ACCEPT,
        JSON,
        ("mcp-session-id", sid.as_str()),
        ("mcp-protocol-version", "1999-01-01"),
    ];
    let (s, _, _) = raw(&url, Method::POST, &bad_version, &list).await;
    assert_eq!(s, StatusCode::BAD_REQUEST);

    // GET needs a session (one standalone stream at a time is checked below). Other methods
    // are 405.
    let (s, _, _) = raw(&url, Method::GET, &[("accept", "text/event-stream")], "").await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    let (s, headers, _) = raw(&url, Method::PUT, &with_session, "").await;
    assert_eq!(s, StatusCode::METHOD_NOT_ALLOWED);
    assert!(headers.contains_key("allow"));

    // DELETE ends the session; it is 404 from then on.
    let (s, _, _) = raw(&url, Method::DELETE, &with_session, "").await;
    assert_eq!(s, StatusCode::OK);
    let (s, _, _) = raw(&url, Method::POST, &with_session, &list).await;
    assert_eq!(s, StatusCode::NOT_FOUND);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bearer_token_is_required_when_configured() {
    let mut config = server_config();
    config.bearer_token = Some("s3cret-token".into());
    let url = start(config).await;
    let (s, headers, _) = raw(&url, Method::POST, &[ACCEPT, JSON], &init()).await;
    assert_eq!(s, StatusCode::UNAUTHORIZED);
    assert_eq!(headers["www-authenticate"], "Bearer");
    let (s, _, _) = raw(
        &url,
        Method::POST,
        &[ACCEPT, JSON, ("authorization", "Bearer wrong")],
        &init(),
    )
    .await;
    assert_eq!(s, StatusCode::UNAUTHORIZED);
    let mut client = HttpConfig::new("half", url);
    client.auth = Some(Arc::new(
        mcp_http::StaticAuth::bearer("s3cret-token").unwrap(),
    ));
    let client = mcp_http::connect(client, session()).await.unwrap();
    // Both tools: the handshake era does not screen x-mcp-header annotations.
    assert_eq!(client.list_all_tools().await.unwrap().len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_sessions_expire_and_the_client_is_told() {
    let mut config = server_config();
    config.session_idle_timeout = Duration::from_millis(200);
    let url = start(config).await;
    let client = mcp_http::connect(HttpConfig::new("half", url), session())
        .await
        .unwrap();
    // Wait until the sweeper has ended the idle session.
    tokio::time::sleep(Duration::from_millis(600)).await;
    let err = client.list_all_tools().await.unwrap_err();
    assert!(err.to_string().contains("HTTP 404"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_standalone_stream_at_a_time_and_batches_from_2025_03_26() {
    let mut config = server_config();
    config.json_response = true;
    let url = start(config).await;
    let init = json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"march","version":"1"}}}).to_string();
    let (s, headers, body) = raw(&url, Method::POST, &[ACCEPT, JSON], &init).await;
    assert_eq!(
        (s, body["result"]["protocolVersion"].clone()),
        (StatusCode::OK, json!("2025-03-26"))
    );
    let sid = headers["mcp-session-id"].to_str().unwrap().to_owned();
    let with_session = [ACCEPT, JSON, ("mcp-session-id", sid.as_str())];
    let note = json!({"jsonrpc":"2.0","method":"notifications/initialized"}).to_string();
    raw(&url, Method::POST, &with_session, &note).await;

    // A 2025-03-26 client may batch: every answer comes back, in one JSON array.
    let batch = json!([{"jsonrpc":"2.0","id":5,"method":"tools/list"},{"jsonrpc":"2.0","id":6,"method":"ping"}]).to_string();
    let (s, _, body) = raw(&url, Method::POST, &with_session, &batch).await;
    assert_eq!(s, StatusCode::OK);
    let mut ids: Vec<i64> = body
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["id"].as_i64().unwrap())
        .collect();
    ids.sort_unstable();
    assert_eq!(ids, [5, 6]);

    // The standalone stream: the first GET holds it, a second one is refused with 409.
    let client = Raw::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
    let get = || {
        let mut req = Request::new(Full::new(Bytes::new()));
        *req.uri_mut() = url.parse().unwrap();
        req.headers_mut()
            .insert("accept", "text/event-stream".parse().unwrap());
        req.headers_mut()
            .insert("mcp-session-id", sid.parse().unwrap());
        req
    };
    let first = client.request(get()).await.unwrap();
    assert_eq!(first.status(), StatusCode::OK);
    assert_eq!(first.headers()["content-type"], "text/event-stream");
    let second = client.request(get()).await.unwrap();
    assert_eq!(second.status(), StatusCode::CONFLICT);
    drop(first);
}

/// The `_meta` of a stateless-era request.
fn meta(version: &str) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": version,
        "io.modelcontextprotocol/clientCapabilities": {},
    })
}

/// A stateless-era request body.
fn stateless(id: u32, method: &str, mut params: Value) -> String {
    params["_meta"] = meta("2026-07-28");
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string()
}

const MODERN: (&str, &str) = ("mcp-protocol-version", "2026-07-28");

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_stateless_era_on_the_same_endpoint() {
    let mut config = server_config();
    config.server.supported_versions = ProtocolVersion::KNOWN.to_vec();
    let url = start(config).await;
    let discover = stateless(1, "server/discover", json!({}));

    // Answered without a session, in one JSON body, completed with what the era requires.
    let (s, headers, body) = raw(
        &url,
        Method::POST,
        &[ACCEPT, JSON, MODERN, ("mcp-method", "server/discover")],
        &discover,
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{body}");
    assert!(!headers.contains_key("mcp-session-id"));
    assert_eq!(body["result"]["supportedVersions"][0], "2026-07-28");
    assert_eq!(body["result"]["resultType"], "complete");
    assert_eq!(body["result"]["cacheScope"], "private");
    assert_eq!(
        body["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "half"
    );

    // Headers that disagree with the body: 400 and HeaderMismatch, with the request's id.
    let mut mismatched: Value = serde_json::from_str(&discover).unwrap();
    mismatched["params"]["_meta"] = meta("v999.0.0");
    let refusals = [
        (vec![MODERN], discover.clone(), -32020, "no Mcp-Method"),
        (
            vec![MODERN, ("mcp-method", "tools/list")],
            discover.clone(),
            -32020,
            "another Mcp-Method",
        ),
        (
            vec![MODERN, ("mcp-method", "server/discover")],
            mismatched.to_string(),
            -32020,
            "header and _meta disagree",
        ),
        (
            vec![
                ("mcp-protocol-version", "v999.0.0"),
                ("mcp-method", "server/discover"),
            ],
            mismatched.to_string(),
            -32022,
            "an unknown version is the stateless path's to refuse",
        ),
        (
            vec![MODERN, ("mcp-method", "server/discover")],
            json!({"jsonrpc":"2.0","id":1,"method":"server/discover","params":{}}).to_string(),
            -32602,
            "no _meta",
        ),
    ];
    for (extra, body, code, why) in refusals {
        let mut headers = vec![ACCEPT, JSON];
        headers.extend(extra);
        let (s, _, answer) = raw(&url, Method::POST, &headers, &body).await;
        assert_eq!(s, StatusCode::BAD_REQUEST, "{why}: {answer}");
        assert_eq!(answer["error"]["code"], code, "{why}: {answer}");
        assert_eq!(answer["id"], 1, "{why}");
    }
    let (s, _, answer) = raw(
        &url,
        Method::POST,
        &[ACCEPT, JSON, MODERN, ("mcp-method", "initialize")],
        &stateless(1, "initialize", json!({})),
    )
    .await;
    assert_eq!(
        (s, answer["error"]["code"].clone()),
        (StatusCode::NOT_FOUND, json!(-32601))
    );

    // A tool argument marked x-mcp-header must come mirrored in its header.
    let call = stateless(
        2,
        "tools/call",
        json!({"name": "work", "arguments": {"region": "eu-west"}}),
    );
    let call_headers = [
        ACCEPT,
        JSON,
        MODERN,
        ("mcp-method", "tools/call"),
        ("mcp-name", "work"),
    ];
    let (s, _, answer) = raw(&url, Method::POST, &call_headers, &call).await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "{answer}");
    assert_eq!(answer["error"]["code"], -32020);

    // With it, the call streams its progress on its own SSE response, then the answer.
    let mut with_param = call_headers.to_vec();
    with_param.push(("mcp-param-region", "eu-west"));
    let mut progressed: Value = serde_json::from_str(&call).unwrap();
    progressed["params"]["_meta"]["progressToken"] = json!("p");
    let (s, headers, text) =
        raw_text(&url, Method::POST, &with_param, &progressed.to_string()).await;
    assert_eq!(s, StatusCode::OK, "{text}");
    assert_eq!(headers["content-type"], "text/event-stream");
    assert_eq!(text.matches("notifications/progress").count(), 3, "{text}");
    assert!(text.contains(r#""resultType":"complete""#), "{text}");

    // No standalone stream in this era.
    let (s, _, _) = raw(
        &url,
        Method::GET,
        &[("accept", "text/event-stream"), MODERN],
        "",
    )
    .await;
    assert_eq!(s, StatusCode::METHOD_NOT_ALLOWED);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listen_stream_hears_what_another_request_announces() {
    let mut config = server_config();
    config.server.supported_versions = ProtocolVersion::KNOWN.to_vec();
    let url = start(config).await;
    let client = Raw::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
    let listen = stateless(
        7,
        "subscriptions/listen",
        json!({"notifications": {"toolsListChanged": true, "promptsListChanged": true}}),
    );
    let mut req = Request::new(Full::new(Bytes::from(listen)));
    *req.method_mut() = Method::POST;
    *req.uri_mut() = url.parse().unwrap();
    for (k, v) in [ACCEPT, JSON, MODERN, ("mcp-method", "subscriptions/listen")] {
        req.headers_mut().insert(k, v.parse().unwrap());
    }
    let resp = client.request(req).await.unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    let mut body = resp.into_body();
    let mut text = String::new();
    let mut next_event = async || -> String {
        loop {
            if let Some(end) = text.find("\n\n") {
                let event: String = text.drain(..end + 2).collect();
                return event;
            }
            let frame = tokio::time::timeout(Duration::from_secs(5), body.frame())
                .await
                .expect("the listen stream went quiet")
                .expect("the listen stream ended")
                .unwrap();
            if let Ok(data) = frame.into_data() {
                text.push_str(std::str::from_utf8(&data).unwrap());
            }
        }
    };
    let ack = next_event().await;
    assert!(
        ack.contains("notifications/subscriptions/acknowledged"),
        "{ack}"
    );
    assert!(
        ack.contains("toolsListChanged") && !ack.contains("promptsListChanged"),
        "only what the server declared is honoured: {ack}"
    );

    let (s, _, answer) = raw(
        &url,
        Method::POST,
        &[
            ACCEPT,
            JSON,
            MODERN,
            ("mcp-method", "tools/call"),
            ("mcp-name", "broadcast"),
        ],
        &stateless(8, "tools/call", json!({"name": "broadcast"})),
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{answer}");
    let change = next_event().await;
    assert!(
        change.contains("notifications/tools/list_changed"),
        "{change}"
    );
    assert!(
        change.contains(r#""io.modelcontextprotocol/subscriptionId":7"#),
        "{change}"
    );
}
