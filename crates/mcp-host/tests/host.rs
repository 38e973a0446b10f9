//! The connection manager against real child processes (the testkit's fake server): many
//! servers at once with broken ones among them, permissions, timeouts, cancellation, bounded
//! results, list changes, reconnection, server requests.
//! This file is long because its cases share one set of helpers around real child processes, and
//! each behaviour named here is a test of its own.

// Test code: an unwrap that fails is a failed test, with its location.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use mcp_host::permission::{AllowAll, CallRequest, ServerRules};
use mcp_host::{
    CallError, CallOptions, Connect, Decision, Host, HostEvent, HostOptions, Phase, Policy,
    Prompter, ServerEntry, ServerState, Unusable,
};
use mcp_protocol::JsonObject;
use mcp_protocol::schema::{ContentBlock, Implementation, Root};
use mcp_stdio::StdioConfig;
use serde_json::json;

fn fake(id: &str, flags: &[&str]) -> ServerEntry {
    let mut config = StdioConfig::new(
        id,
        mcp_testkit::fake_server().display().to_string(),
        flags.iter().copied(),
    );
    config.close_timeout = Duration::from_millis(300);
    config.term_timeout = Duration::from_millis(300);
    let mut entry = ServerEntry::new(id, Connect::Stdio(config));
    entry.request_timeout = Duration::from_secs(10);
    entry
}

fn options(policy: impl Policy) -> HostOptions {
    let mut o = HostOptions::new(
        Implementation::new("host-test".into(), "0".into()),
        Arc::new(policy),
    );
    o.max_connections = 64;
    o.reconnect_initial = Duration::from_millis(50);
    o
}

fn args(value: serde_json::Value) -> JsonObject {
    match value {
        serde_json::Value::Object(map) => map,
        _ => JsonObject::new(),
    }
}

fn text(result: &mcp_protocol::schema::CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text(t) => Some(t.text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Waits until the status of `id` satisfies `done`.
async fn wait_until(host: &Host, id: &str, done: impl Fn(&mcp_host::ServerStatus) -> bool) {
    for _ in 0..400 {
        if done(&host.server_status(id).unwrap()) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("{id} never got there: {:?}", host.server_status(id));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_servers_at_once_five_broken() {
    let host = Host::new(options(AllowAll));
    let mut entries: Vec<ServerEntry> = (0..15)
        .map(|i| fake(&format!("good{i:02}"), &["--tools", "3"]))
        .collect();
    let mut hung = fake("hung", &["--hang-initialize"]);
    hung.request_timeout = Duration::from_millis(500);
    entries.push(hung);
    entries.push(fake("exits", &["--exit-on-start", "7"]));
    entries.push(fake(
        "garbage",
        &["--garbage-on-start", "--exit-on-start", "1"],
    ));
    let mut missing = fake("missing", &[]);
    missing.connect = Ok(Connect::Stdio(StdioConfig::new(
        "missing",
        "/nonexistent/mcp-server",
        ["x"],
    )));
    entries.push(missing);
    let mut unresolved = fake("unresolved", &[]);
    unresolved.connect = Err(Unusable {
        phase: Phase::Configuration,
        message: "env `API_TOKEN`: the variable `API_TOKEN` is not set".to_owned(),
    });
    entries.push(unresolved);
    let mut disabled = fake("off", &[]);
    disabled.enabled = false;
    entries.push(disabled);

    tokio::time::timeout(Duration::from_secs(60), host.start(entries))
        .await
        .expect("a hung server does not hold the others");

    let status = host.status();
    assert_eq!(status.len(), 21);
    // What a gateway asks on every call, without the statuses, agrees with them: the same
    // ids in the same order, their number, and each one's state (ready, error, disabled).
    let ids: Vec<String> = status.iter().map(|s| s.id.clone()).collect();
    assert_eq!(host.server_ids(), ids);
    assert_eq!(host.server_count(), 21);
    for s in &status {
        assert_eq!(host.server_state(&s.id), Some(s.state), "{}", s.id);
    }
    assert_eq!(host.server_state("nobody"), None);
    let ready: Vec<_> = status
        .iter()
        .filter(|s| s.state == ServerState::Ready)
        .collect();
    assert_eq!(ready.len(), 15, "{status:#?}");
    for s in &ready {
        assert_eq!(s.tools, 18 + 3, "{}", s.id);
        assert!(s.last_connected_at.is_some());
        assert_eq!(s.protocol_version.as_deref(), Some("2025-11-25"));
    }
    let error = |id: &str| {
        let s = host.server_status(id).unwrap();
        assert_eq!(s.state, ServerState::Error, "{s:?}");
        s.last_error.unwrap()
    };
    assert!(error("hung").contains("timed out"), "{}", error("hung"));
    assert!(
        error("exits").contains("exit status: 7"),
        "{}",
        error("exits")
    );
    // The exit status and the stderr tail are said once, not once per layer.
    assert_eq!(
        error("exits").matches("exit status: 7").count(),
        1,
        "{}",
        error("exits")
    );
    assert_eq!(
        error("exits").matches("stderr:").count(),
        1,
        "{}",
        error("exits")
    );
    assert!(
        error("garbage").contains("exit status: 1"),
        "{}",
        error("garbage")
    );
    assert!(
        error("missing").contains("/nonexistent/mcp-server"),
        "{}",
        error("missing")
    );
    assert!(error("unresolved").contains("API_TOKEN"));
    // The step each failed at is told apart without reading the text.
    let phase = |id: &str| host.server_status(id).unwrap().last_error_phase;
    assert_eq!(phase("unresolved"), Some(Phase::Configuration));
    for id in ["hung", "exits", "garbage", "missing"] {
        assert_eq!(phase(id), Some(Phase::Connect), "{id}");
    }
    assert_eq!(phase("off"), None);
    assert_eq!(
        host.server_status("off").unwrap().state,
        ServerState::Disabled
    );
    assert_eq!(host.catalog().len(), 15 * 21);
    host.shutdown().await;
    assert!(host.status().is_empty());
    assert!(host.catalog().is_empty());
}

/// Fifteen servers under a limit of ten: the first ten in the order given run, the last five
/// wait in `connecting` and say why (never `error`), the same five on every run; when a
/// running one is removed, the first waiting one starts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_the_connection_limit_servers_wait_in_order_and_start_as_others_stop() {
    // Given in an order that is not the ids' order: the order given is what counts.
    let ids: Vec<String> = (0..15).rev().map(|i| format!("s{i:02}")).collect();
    for _run in 0..3 {
        let mut o = options(AllowAll);
        o.max_connections = 10;
        let host = Host::new(o);
        host.start(ids.iter().map(|id| fake(id, &[])).collect())
            .await;
        let state = |id: &str| host.server_status(id).unwrap();
        for id in &ids[..10] {
            let s = state(id);
            assert_eq!(s.state, ServerState::Ready, "{s:?}");
            assert_eq!(s.waiting, None);
        }
        for id in &ids[10..] {
            let s = state(id);
            assert_eq!(s.state, ServerState::Connecting, "{s:?}");
            assert_eq!(host.server_state(id), Some(ServerState::Connecting), "{id}");
            assert_eq!(s.last_error, None, "{s:?}");
            let waiting = s.waiting.unwrap();
            assert!(
                waiting.starts_with("waiting: connection limit 10 reached"),
                "{waiting}"
            );
        }
        // One running server goes: the first in line takes its place, the others still wait.
        assert!(host.remove(&ids[0]).await);
        wait_until(&host, &ids[10], |s| s.state == ServerState::Ready).await;
        assert_eq!(state(&ids[10]).waiting, None);
        for id in &ids[11..] {
            assert!(state(id).waiting.is_some(), "{id}");
        }
        host.shutdown().await;
    }
}

/// Counts how often it is asked, and answers as told.
struct Asker {
    asked: AtomicUsize,
    answer: bool,
}

impl Prompter for Asker {
    fn confirm<'a>(
        &'a self,
        call: &'a CallRequest<'a>,
    ) -> std::pin::Pin<Box<dyn Future<Output = bool> + Send + 'a>> {
        assert_eq!(call.server, "s");
        assert!(call.arguments.contains_key("message"));
        self.asked.fetch_add(1, Ordering::SeqCst);
        Box::pin(async move { self.answer })
    }
}

struct AskEverything;
impl Policy for AskEverything {
    fn decide(&self, _: &CallRequest<'_>) -> Decision {
        Decision::Ask
    }
}

/// The pid the fake server `s` reports. `crash` ends the server and the host starts another,
/// so the same pid before and after a `crash` call means the call never reached the server.
async fn upstream_pid(host: &Host) -> String {
    let out = host
        .call_tool("s", "pid", JsonObject::new(), CallOptions::default())
        .await
        .unwrap_or_else(|e| panic!("the server cannot tell its pid: {e}"));
    let pid = text(&out.result);
    assert!(pid.split(' ').all(|n| n.parse::<i64>().is_ok()), "{pid}");
    pid
}

/// The fake server `s` with `pid` allowed by configuration and `crash` as `crash` says.
fn fake_with_crash(crash: Decision) -> ServerEntry {
    let mut entry = fake("s", &[]);
    entry.rules = ServerRules::new(
        Decision::Ask,
        [
            ("pid".to_owned(), Decision::Allow),
            ("crash".to_owned(), crash),
        ]
        .into_iter()
        .collect(),
    );
    entry
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_denied_call_never_reaches_the_server() {
    // The observable moves when a call does reach the server: an allowed `crash` ends it, and
    // the server the host starts again reports another pid.
    let host = Host::new(options(AllowAll));
    host.start(vec![fake_with_crash(Decision::Allow)]).await;
    let pid = upstream_pid(&host).await;
    let connected_before = host.server_status("s").unwrap().last_connected_at;
    let err = host
        .call_tool("s", "crash", JsonObject::new(), CallOptions::default())
        .await
        .unwrap_err();
    assert!(matches!(err, CallError::Session { .. }), "{err}");
    wait_until(&host, "s", |s| {
        s.state == ServerState::Ready && s.last_connected_at > connected_before
    })
    .await;
    assert_ne!(
        upstream_pid(&host).await,
        pid,
        "the crash reached the server"
    );
    host.shutdown().await;

    // Denied by the person asked: the server keeps its pid, so it never saw the call.
    let asker = Arc::new(Asker {
        asked: AtomicUsize::new(0),
        answer: false,
    });
    let mut o = options(AskEverything);
    o.prompter = Some(asker.clone());
    let host = Host::new(o);
    host.start(vec![fake_with_crash(Decision::Ask)]).await;
    let pid = upstream_pid(&host).await;
    let err = host
        .call_tool(
            "s",
            "crash",
            args(json!({"message": "x"})),
            CallOptions::default(),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, CallError::Denied { .. }), "{err}");
    assert!(err.never_sent());
    assert_eq!(asker.asked.load(Ordering::SeqCst), 1);
    // As a tool error for the model, through the normal result path.
    let for_model = mcp_host::error_result(&err);
    assert!(for_model.is_tool_error());
    assert!(text(&for_model).contains("denied"));
    assert_eq!(upstream_pid(&host).await, pid);
    assert_eq!(host.server_status("s").unwrap().state, ServerState::Ready);
    host.shutdown().await;

    // Denied by configuration, whatever the consumer's policy says.
    let host = Host::new(options(AllowAll));
    host.start(vec![fake_with_crash(Decision::Deny)]).await;
    let pid = upstream_pid(&host).await;
    let err = host
        .call_tool("s", "crash", JsonObject::new(), CallOptions::default())
        .await
        .unwrap_err();
    assert!(matches!(err, CallError::Denied { .. }), "{err}");
    assert_eq!(upstream_pid(&host).await, pid);
    let ok = host
        .call_tool(
            "s",
            "echo",
            args(json!({"message": "still here"})),
            CallOptions::default(),
        )
        .await
        .unwrap();
    assert_eq!(text(&ok.result), "still here");
    host.shutdown().await;

    // With no one to ask, an `ask` is a denial.
    let host = Host::new(options(AskEverything));
    host.start(vec![fake_with_crash(Decision::Ask)]).await;
    let pid = upstream_pid(&host).await;
    let err = host
        .call_tool("s", "crash", JsonObject::new(), CallOptions::default())
        .await
        .unwrap_err();
    assert!(err.to_string().contains("no one can be asked"), "{err}");
    assert_eq!(upstream_pid(&host).await, pid);
    host.shutdown().await;
}

async fn cancellations(host: &Host) -> String {
    let out = host
        .call_tool("s", "stats", JsonObject::new(), CallOptions::default())
        .await
        .unwrap();
    text(&out.result)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timeout_and_cancellation_tell_the_server() {
    let host = Host::new(options(AllowAll));
    host.start(vec![fake("s", &[])]).await;
    let options = CallOptions::default().timeout(Duration::from_millis(300));
    let err = host
        .call_tool("s", "hang", JsonObject::new(), options)
        .await
        .unwrap_err();
    assert!(matches!(err, CallError::Timeout { .. }), "{err}");
    assert!(!err.never_sent());
    assert!(err.to_string().contains("server `s`"), "{err}");
    let mut seen = String::new();
    for _ in 0..50 {
        seen = cancellations(&host).await;
        if seen == "cancelled=1" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(seen, "cancelled=1");

    // Dropping the call's future cancels it.
    let call = host.call_tool("s", "hang", JsonObject::new(), CallOptions::default());
    assert!(
        tokio::time::timeout(Duration::from_millis(200), call)
            .await
            .is_err()
    );
    for _ in 0..50 {
        seen = cancellations(&host).await;
        if seen == "cancelled=2" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(seen, "cancelled=2");
    assert_eq!(host.server_status("s").unwrap().state, ServerState::Ready);
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_outcomes_and_a_bounded_result() {
    let host = Host::new(options(AllowAll));
    let mut entry = fake("s", &[]);
    entry.max_result_bytes = 1000;
    host.start(vec![entry]).await;

    // The tool failed: a result, flagged.
    let out = host
        .call_tool(
            "s",
            "no_such_tool",
            JsonObject::new(),
            CallOptions::default(),
        )
        .await
        .unwrap();
    assert!(out.is_tool_error());
    // The server answered with a JSON-RPC error.
    let err = host.read_resource("s", "other://x").await.unwrap_err();
    assert!(matches!(err, CallError::Rpc { code: -32002, .. }), "{err}");

    // Oversized: cut with a marker.
    let out = host
        .call_tool(
            "s",
            "huge",
            args(json!({"bytes": 100_000})),
            CallOptions::default(),
        )
        .await
        .unwrap();
    assert!(out.truncated);
    let t = text(&out.result);
    assert!(t.len() < 1200, "{}", t.len());
    assert!(t.contains("bytes cut by the host"), "{t}");

    // A transport failure, then the host reconnects by itself.
    let connected_before = host.server_status("s").unwrap().last_connected_at;
    let err = host
        .call_tool("s", "crash", JsonObject::new(), CallOptions::default())
        .await
        .unwrap_err();
    assert!(matches!(err, CallError::Session { .. }), "{err}");
    // The kind is kept: the connection ended under the call, which a retry may get past.
    assert!(err.is_transport() && err.is_transient(), "{err:?}");
    assert!(!err.is_protocol_violation() && !err.is_auth(), "{err:?}");
    assert!(err.to_string().contains("exit status: 3"), "{err}");
    // Down, then back by itself: a new connection, the loss kept as the last error.
    wait_until(&host, "s", |s| {
        s.state == ServerState::Ready && s.last_connected_at > connected_before
    })
    .await;
    let status = host.server_status("s").unwrap();
    assert!(
        status
            .last_error
            .as_deref()
            .unwrap()
            .contains("connection lost"),
        "{status:?}"
    );
    assert_eq!(status.last_error_phase, Some(Phase::Connection));
    let out = host
        .call_tool(
            "s",
            "echo",
            args(json!({"message": "back"})),
            CallOptions::default(),
        )
        .await
        .unwrap();
    assert_eq!(text(&out.result), "back");
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_changed_refreshes_the_catalogue() {
    let host = Host::new(options(AllowAll));
    host.start(vec![fake("s", &[]), fake("other", &[])]).await;
    let before = host.catalog();
    assert_eq!(before.server_tools("s").count(), 18);
    let mut events = host.subscribe(Some(&["s"]), Some(&["catalog", "tools/list_changed"]));
    let exposed = before
        .server_tools("s")
        .find(|t| t.tool == "grow")
        .unwrap()
        .name
        .clone();
    host.call(&exposed, JsonObject::new(), CallOptions::default())
        .await
        .unwrap();
    let mut kinds = Vec::new();
    while kinds.len() < 2 {
        let event = tokio::time::timeout(Duration::from_secs(10), events.recv())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(event.server(), "s");
        kinds.push(event.kind().to_owned());
        if let HostEvent::Catalog { .. } = event {
            break;
        }
    }
    assert!(kinds.contains(&"catalog".to_owned()), "{kinds:?}");
    let after = host.catalog();
    assert_eq!(after.server_tools("s").count(), 19);
    assert!(after.server_tools("s").any(|t| t.tool == "tool_00000"));
    // The snapshot taken before is unchanged; names of other tools did not move.
    assert_eq!(before.server_tools("s").count(), 18);
    assert_eq!(after.resolve(&exposed).unwrap().tool, "grow");
    assert_eq!(after.server_tools("other").count(), 18);
    host.shutdown().await;
}

/// What the fake server `s` read back when its tool `tool` (`sample`, `elicit` or `roots`)
/// sent its request to the host under `id`: the host's answer, the whole frame as the server
/// received it.
async fn answer_to(host: &Host, tool: &str, id: serde_json::Value) -> serde_json::Value {
    let out = host
        .call_tool(
            "s",
            tool,
            args(json!({ "request_id": id })),
            CallOptions::default(),
        )
        .await
        .unwrap();
    let frame = text(&out.result);
    serde_json::from_str(&frame)
        .unwrap_or_else(|e| panic!("{tool}: the server read no JSON-RPC frame ({e}): {frame}"))
}

/// The refusal a client session sends for a server request whose capability it did not
/// declare (mcp-protocol's `undeclared_server_requests_are_refused`).
fn refused(id: serde_json::Value, message: &str) -> serde_json::Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": message}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_requests_fail_closed_unless_offered() {
    // Nothing declared: each request is refused as method not found, under its own id (string
    // and integer ids alike).
    let host = Host::new(options(AllowAll));
    host.start(vec![fake("s", &[])]).await;
    for (tool, id, message) in [
        ("sample", json!("sample-1"), "Sampling not supported"),
        ("elicit", json!(4242), "Elicitation not supported"),
        ("roots", json!("roots-1"), "Roots not supported"),
    ] {
        assert_eq!(
            answer_to(&host, tool, id.clone()).await,
            refused(id, message),
            "{tool}"
        );
    }
    host.shutdown().await;

    // Roots configured: roots/list is answered with them, under its id; the rest is still
    // refused.
    let mut o = options(AllowAll);
    o.roots = Some(vec![Root::new("file:///work/project".into())]);
    let host = Host::new(o);
    host.start(vec![fake("s", &[])]).await;
    assert_eq!(
        answer_to(&host, "roots", json!("roots-2")).await,
        json!({"jsonrpc": "2.0", "id": "roots-2", "result": {"roots": [{"uri": "file:///work/project"}]}})
    );
    assert_eq!(
        answer_to(&host, "sample", json!(77)).await,
        refused(json!(77), "Sampling not supported")
    );
    assert_eq!(
        answer_to(&host, "elicit", json!("elicit-2")).await,
        refused(json!("elicit-2"), "Elicitation not supported")
    );
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resources_and_prompts() {
    let host = Host::new(options(AllowAll));
    host.start(vec![fake("s", &[])]).await;
    let resources = host.list_resources("s").await.unwrap();
    assert_eq!(resources[0].uri, "fake://hello");
    let templates = host.list_resource_templates("s").await.unwrap();
    assert_eq!(templates[0].uri_template, "fake://{name}");
    let read = host.read_resource("s", "fake://hello").await.unwrap();
    assert_eq!(
        read.contents[0].text.as_deref(),
        Some("contents of fake://hello")
    );
    let prompts = host.list_prompts("s").await.unwrap();
    assert_eq!(prompts[0].name, "greet");
    let got = host
        .get_prompt(
            "s",
            "greet",
            [("name".to_owned(), "Ada".to_owned())]
                .into_iter()
                .collect(),
        )
        .await
        .unwrap();
    assert!(format!("{:?}", got.messages[0]).contains("Hello, Ada!"));
    let err = host.list_prompts("nope").await.unwrap_err();
    assert!(matches!(err, CallError::UnknownServer { .. }));
    host.shutdown().await;
}

/// Answers sampling requests with a fixed message, and declares only sampling.
struct Sampler;

impl mcp_host::ServerRequestHandler for Sampler {
    fn capabilities(&self) -> mcp_protocol::schema::ClientCapabilities {
        let mut c = mcp_protocol::schema::ClientCapabilities::new();
        c.sampling = Some(mcp_protocol::schema::SamplingCapability::new());
        c
    }

    fn handle<'a>(
        &'a self,
        server: &'a str,
        request: mcp_protocol::schema::ServerRequest,
    ) -> std::pin::Pin<
        Box<
            dyn Future<Output = Result<mcp_protocol::RawJson, mcp_protocol::ErrorObject>>
                + Send
                + 'a,
        >,
    > {
        Box::pin(async move {
            assert_eq!(server, "s");
            assert_eq!(request.method(), "sampling/createMessage");
            let answer = json!({"role": "assistant", "content": {"type": "text", "text": "sampled by the host"}, "model": "test"});
            Ok(mcp_protocol::RawJson::encode(&answer).unwrap())
        })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_registered_handler_answers_what_it_declared_and_reload_applies_a_new_list() {
    let mut o = options(AllowAll);
    o.requests = Some(Arc::new(Sampler));
    let host = Host::new(o);
    host.start(vec![fake("s", &[]), fake("old", &[])]).await;
    assert_eq!(
        answer_to(&host, "sample", json!("sample-3")).await,
        json!({"jsonrpc": "2.0", "id": "sample-3", "result": {"role": "assistant", "content": {"type": "text", "text": "sampled by the host"}, "model": "test"}})
    );
    // Elicitation and roots were not declared: still refused by the session, never reaching
    // the handler (which fails on anything but sampling).
    assert_eq!(
        answer_to(&host, "elicit", json!(5)).await,
        refused(json!(5), "Elicitation not supported")
    );
    assert_eq!(
        answer_to(&host, "roots", json!("roots-3")).await,
        refused(json!("roots-3"), "Roots not supported")
    );

    host.reload(vec![fake("s", &[]), fake("new", &[])]).await;
    let ids: Vec<_> = host.status().into_iter().map(|s| s.id).collect();
    assert_eq!(ids, ["new", "s"]);
    assert!(host.catalog().server_tools("old").next().is_none());
    assert_eq!(host.catalog().server_tools("new").count(), 18);
    host.shutdown().await;
}

/// A server on our HTTP half that speaks both eras: `grow` adds a tool and announces it to
/// every session and listen stream.
#[derive(Clone, Default)]
struct Growing(Arc<AtomicUsize>);

impl mcp_session::Handler for Growing {
    async fn handle(
        &self,
        request: mcp_protocol::schema::ClientRequest,
        context: mcp_session::RequestContext,
    ) -> Result<mcp_protocol::RawJson, mcp_protocol::ErrorObject> {
        use mcp_protocol::schema::{CallToolResult, ClientRequest, ListToolsResult, Tool};
        match request {
            ClientRequest::ListTools(_) => {
                let mut tools = vec![Tool::new("grow".into())];
                for i in 0..self.0.load(Ordering::SeqCst) {
                    tools.push(Tool::new(format!("grown_{i}")));
                }
                Ok(mcp_protocol::RawJson::encode(&ListToolsResult::new(tools)).unwrap())
            }
            ClientRequest::CallTool(_) => {
                self.0.fetch_add(1, Ordering::SeqCst);
                context
                    .sessions
                    .notify("notifications/tools/list_changed", None);
                let done = CallToolResult::new(vec![ContentBlock::text("grown")]);
                Ok(mcp_protocol::RawJson::encode(&done).unwrap())
            }
            other => Err(mcp_protocol::ErrorObject::new(
                -32601,
                format!("no {}", other.method()),
            )),
        }
    }
}

/// A server of both eras whose tools may change (it declares `tools.listChanged`).
fn changing_tools(name: &str) -> mcp_protocol::ServerConfig {
    let mut server =
        mcp_protocol::ServerConfig::dual_era(Implementation::new(name.into(), "1".into()));
    let mut tools = mcp_protocol::schema::ListChangedCapability::new();
    tools.list_changed = Some(true);
    server.capabilities.tools = Some(tools);
    server
}

/// Serves `handler` on our HTTP half as `server` says (both eras) and returns two entries
/// for it: `pinned` to 2025-11-25 and `free` to negotiate.
async fn dual_era_server(
    server: mcp_protocol::ServerConfig,
    handler: impl mcp_session::Handler,
) -> (ServerEntry, ServerEntry) {
    let (listener, addr) = mcp_http::bind("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    tokio::spawn(mcp_http::serve_http(
        listener,
        mcp_http::HttpServerConfig::new(server),
        handler,
    ));
    let url = format!("http://127.0.0.1:{}/mcp", addr.port());
    let entry = |id: &str| {
        ServerEntry::new(
            id,
            Connect::Http(mcp_http::HttpConfig::new(id, url.clone())),
        )
    };
    let mut pinned = entry("pinned");
    pinned.protocol_version = Some(mcp_protocol::ProtocolVersion::V2025_11_25);
    (pinned, entry("free"))
}

/// The era cache is the host's own: a handshake-era server found out by one connection is
/// remembered for the next connection to its origin from the same host (no probe), and not by
/// another host, which probes for itself.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_remembers_the_era_of_an_origin_and_another_host_does_not() {
    let server = mcp_protocol::ServerConfig::new(Implementation::new("old".into(), "1".into()));
    let (_, free) = dual_era_server(server, Growing::default()).await;
    let entry = |id: &str| {
        let Connect::Http(mut config) = free.connect.clone().unwrap() else {
            unreachable!("dual_era_server makes HTTP entries")
        };
        config.name = id.to_owned();
        ServerEntry::new(id, Connect::Http(config))
    };
    let remembered = "this server spoke the handshake era before; ";
    let negotiation = |host: &Host, id: &str| {
        let status = host.server_status(id).unwrap();
        assert_eq!(status.state, ServerState::Ready, "{status:?}");
        assert_eq!(status.era, Some(mcp_protocol::Era::Handshake), "{status:?}");
        status.negotiation.unwrap()
    };
    let first = Host::new(options(AllowAll));
    first.start(vec![entry("a")]).await;
    let probed = negotiation(&first, "a");
    assert!(!probed.starts_with(remembered), "{probed}");
    first.start(vec![entry("b")]).await;
    let skipped = negotiation(&first, "b");
    assert!(skipped.starts_with(remembered), "{skipped}");

    let second = Host::new(options(AllowAll));
    second.start(vec![entry("a")]).await;
    let again = negotiation(&second, "a");
    assert!(!again.starts_with(remembered), "{again}");
    first.shutdown().await;
    second.shutdown().await;
}

/// One server that speaks both eras, two connections to it: left to itself the host settles on
/// 2026-07-28 and says why; pinned to 2025-11-25 it speaks the handshake, and the pin does not
/// make the other connection skip its probe. A tools change reaches both: the stateless one
/// through its `subscriptions/listen` stream.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_eras_at_one_server_and_list_changes_in_each() {
    let server = changing_tools("both");
    let grown = Growing::default();
    let (pinned, free) = dual_era_server(server, grown.clone()).await;
    let host = Host::new(options(AllowAll));
    // The pinned one first, so that a cache it wrongly taught would show.
    host.start(vec![pinned]).await;
    host.start(vec![free]).await;

    let free = host.server_status("free").unwrap();
    assert_eq!(free.state, ServerState::Ready, "{free:?}");
    assert_eq!(free.era, Some(mcp_protocol::Era::Stateless));
    assert_eq!(free.protocol_version.as_deref(), Some("2026-07-28"));
    assert_eq!(
        free.negotiation.as_deref(),
        Some("server/discover listed 2026-07-28")
    );
    let pinned = host.server_status("pinned").unwrap();
    assert_eq!(pinned.era, Some(mcp_protocol::Era::Handshake));
    assert_eq!(
        pinned.negotiation.as_deref(),
        Some("the configuration pins 2025-11-25; initialize agreed on 2025-11-25")
    );

    let grow = host
        .catalog()
        .server_tools("free")
        .find(|t| t.tool == "grow")
        .unwrap()
        .name
        .clone();
    let output = host
        .call(&grow, JsonObject::new(), CallOptions::default())
        .await
        .unwrap();
    assert_eq!(text(&output.result), "grown");
    wait_until(&host, "free", |s| s.tools == 2).await;
    wait_until(&host, "pinned", |s| s.tools == 2).await;
    assert_eq!(grown.0.load(Ordering::SeqCst), 1);
    host.shutdown().await;
}

/// A server whose tools change with no word: each `tools/list` finds one more tool than the
/// last (as if one were added between any two lists, told to no listen stream yet open).
#[derive(Clone, Default)]
struct ChangesUntold(Arc<AtomicUsize>);

impl mcp_session::Handler for ChangesUntold {
    async fn handle(
        &self,
        request: mcp_protocol::schema::ClientRequest,
        _context: mcp_session::RequestContext,
    ) -> Result<mcp_protocol::RawJson, mcp_protocol::ErrorObject> {
        use mcp_protocol::schema::{ClientRequest, ListToolsResult, Tool};
        match request {
            ClientRequest::ListTools(_) => {
                let n = self.0.fetch_add(1, Ordering::SeqCst) + 1;
                let tools = (0..n).map(|i| Tool::new(format!("t{i}"))).collect();
                Ok(mcp_protocol::RawJson::encode(&ListToolsResult::new(tools)).unwrap())
            }
            other => Err(mcp_protocol::ErrorObject::new(
                -32601,
                format!("no {}", other.method()),
            )),
        }
    }
}

/// A change made between the host's first `tools/list` and the moment the server has its
/// listen stream is told to nobody: the host lists the tools again once the stream is
/// acknowledged, so the catalogue does not keep the stale list until the next change.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tools_are_listed_again_once_the_listen_stream_is_acknowledged() {
    let server = changing_tools("untold");
    let lists = ChangesUntold::default();
    let (_, free) = dual_era_server(server, lists.clone()).await;
    let host = Host::new(options(AllowAll));
    host.start(vec![free]).await;
    assert_eq!(
        host.server_status("free").unwrap().era,
        Some(mcp_protocol::Era::Stateless)
    );
    wait_until(&host, "free", |s| s.tools == 2).await;
    assert_eq!(
        lists.0.load(Ordering::SeqCst),
        2,
        "listed at connect and after the ack"
    );
    host.shutdown().await;
}

/// A server on our HTTP half that speaks both eras and offers resource subscriptions: `touch`
/// announces a change of the resource at its `uri` argument to every session and listen
/// stream; `resources/subscribe` (the handshake era's) is counted.
#[derive(Clone, Default)]
struct Watched {
    subscribes: Arc<AtomicUsize>,
}

impl mcp_session::Handler for Watched {
    async fn handle(
        &self,
        request: mcp_protocol::schema::ClientRequest,
        context: mcp_session::RequestContext,
    ) -> Result<mcp_protocol::RawJson, mcp_protocol::ErrorObject> {
        use mcp_protocol::schema::{CallToolResult, ClientRequest, ListToolsResult, Tool};
        let raw = |v: serde_json::Value| Ok(mcp_protocol::RawJson::encode(&v).unwrap());
        match request {
            ClientRequest::ListTools(_) => Ok(mcp_protocol::RawJson::encode(
                &ListToolsResult::new(vec![Tool::new("touch".into())]),
            )
            .unwrap()),
            ClientRequest::Subscribe(_) | ClientRequest::Unsubscribe(_) => {
                self.subscribes.fetch_add(1, Ordering::SeqCst);
                raw(json!({}))
            }
            ClientRequest::CallTool(call) => {
                let uri = call.arguments.unwrap_or_default()["uri"].clone();
                let params = mcp_protocol::RawJson::encode(&json!({ "uri": uri })).unwrap();
                context
                    .sessions
                    .notify("notifications/resources/updated", Some(params));
                let done = CallToolResult::new(vec![ContentBlock::text("touched")]);
                Ok(mcp_protocol::RawJson::encode(&done).unwrap())
            }
            other => Err(mcp_protocol::ErrorObject::new(
                -32601,
                format!("no {}", other.method()),
            )),
        }
    }
}

/// The URI of the next `notifications/resources/updated` among `events`, waiting at most 10 s.
async fn next_update(events: &mut mcp_host::Subscription) -> String {
    loop {
        let event = tokio::time::timeout(Duration::from_secs(10), events.recv())
            .await
            .expect("an update within 10 s")
            .expect("events");
        if let HostEvent::Notification {
            notification: mcp_protocol::schema::ServerNotification::ResourceUpdated(p),
            ..
        } = event
        {
            return p.uri;
        }
    }
}

/// `Host::subscribe_resource` hides how each era subscribes: the handshake connection sends
/// `resources/subscribe`; the stateless one (which has no such method) listens for the URI,
/// hears its changes and only its, and stops hearing them once unsubscribed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resource_subscriptions_in_both_eras() {
    let mut server =
        mcp_protocol::ServerConfig::dual_era(Implementation::new("watched".into(), "1".into()));
    let mut resources = mcp_protocol::schema::ResourcesCapability::new();
    resources.subscribe = Some(true);
    server.capabilities.resources = Some(resources);
    server.capabilities.tools = Some(mcp_protocol::schema::ListChangedCapability::new());
    let watched = Watched::default();
    let (pinned, free) = dual_era_server(server, watched.clone()).await;
    let host = Host::new(options(AllowAll));
    host.start(vec![pinned, free]).await;
    assert_eq!(
        host.server_status("free").unwrap().era,
        Some(mcp_protocol::Era::Stateless)
    );
    assert_eq!(
        host.server_status("pinned").unwrap().era,
        Some(mcp_protocol::Era::Handshake)
    );

    host.subscribe_resource("pinned", "test://a").await.unwrap();
    assert_eq!(watched.subscribes.load(Ordering::SeqCst), 1);
    host.subscribe_resource("free", "test://a").await.unwrap();
    assert_eq!(
        watched.subscribes.load(Ordering::SeqCst),
        1,
        "the stateless connection must not send resources/subscribe"
    );
    host.unsubscribe_resource("pinned", "test://never")
        .await
        .unwrap();
    assert_eq!(
        watched.subscribes.load(Ordering::SeqCst),
        1,
        "a URI never subscribed to is not unsubscribed from the server"
    );

    let mut events = host.subscribe(Some(&["free"]), None);
    let touch = |uri: &str| {
        let host = host.clone();
        let mut args = JsonObject::new();
        args.insert("uri".into(), json!(uri));
        async move {
            host.call_tool("pinned", "touch", args, CallOptions::default())
                .await
                .unwrap();
        }
    };
    // The listen stream may still be reopening with the new filter: touch until it hears.
    let heard = async {
        loop {
            touch("test://a").await;
            if let Ok(uri) =
                tokio::time::timeout(Duration::from_millis(500), next_update(&mut events)).await
            {
                return uri;
            }
        }
    };
    assert_eq!(
        tokio::time::timeout(Duration::from_secs(20), heard)
            .await
            .unwrap(),
        "test://a"
    );
    // Drain what the retries above may have left, then check that b is filtered out: the
    // next update heard after touching b and then a is a's.
    while tokio::time::timeout(Duration::from_millis(300), next_update(&mut events))
        .await
        .is_ok()
    {}
    touch("test://b").await;
    touch("test://a").await;
    assert_eq!(next_update(&mut events).await, "test://a");

    host.unsubscribe_resource("free", "test://a").await.unwrap();
    host.subscribe_resource("free", "test://c").await.unwrap();
    let heard = async {
        loop {
            touch("test://a").await;
            touch("test://c").await;
            if let Ok(uri) =
                tokio::time::timeout(Duration::from_millis(500), next_update(&mut events)).await
                && uri == "test://c"
            {
                return;
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(20), heard)
        .await
        .unwrap();
    while tokio::time::timeout(Duration::from_millis(300), next_update(&mut events))
        .await
        .is_ok()
    {}
    touch("test://a").await;
    touch("test://c").await;
    assert_eq!(
        next_update(&mut events).await,
        "test://c",
        "no longer subscribed to a"
    );
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn login_logout_and_restart_fail_with_typed_errors() {
    let host = Host::new(options(AllowAll));
    host.start(vec![fake("s", &[])]).await;
    for err in [
        host.login("s").await.unwrap_err(),
        host.logout("s").await.unwrap_err(),
    ] {
        assert!(
            matches!(&err, CallError::NoOAuth { server } if server == "s"),
            "{err:?}"
        );
        assert!(err.never_sent());
    }
    let err = host.restart("nope").await.unwrap_err();
    assert!(matches!(err, CallError::UnknownServer { .. }), "{err:?}");
    host.restart("s").await.unwrap();
    assert_eq!(host.server_status("s").unwrap().state, ServerState::Ready);
    host.shutdown().await;
}

/// A fresh directory for one test's files.
fn scratch(tag: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("mcp-host-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// How many requests of `method` the fake server logged to `log`.
fn requests(log: &std::path::Path, method: &str) -> usize {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter(|line| *line == method)
        .count()
}

/// One connection of a host that remembers eras in `file`: ready, in the handshake era.
async fn connect_remembering(file: &std::path::Path, entry: ServerEntry) -> mcp_host::ServerStatus {
    let mut o = options(AllowAll);
    o.era_file = Some(file.to_owned());
    let host = Host::new(o);
    let id = entry.id.clone();
    host.start(vec![entry]).await;
    let status = host.server_status(&id).unwrap();
    host.shutdown().await;
    assert_eq!(status.state, ServerState::Ready, "{status:?}");
    status
}

/// A server that ignores requests it does not know never answers the `server/discover`
/// probe: the first connection waits out the probe (bounded by the request timeout) and
/// remembers the era on disk, so that the next host's connection sends no probe at all; a
/// changed configuration is another server, probed again. Counted from the requests the
/// server logged.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_era_is_remembered_on_disk_and_a_changed_configuration_probes_again() {
    let dir = scratch("eras");
    let (file, log) = (dir.join("eras.json"), dir.join("requests.log"));
    let log_arg = log.display().to_string();
    let deaf = |extra: &[&str]| {
        let mut flags = vec!["--ignore-unknown", "--log-requests", log_arg.as_str()];
        flags.extend_from_slice(extra);
        let mut entry = fake("deaf", &flags);
        // The probe waits at most this long, not its own 10 s.
        entry.request_timeout = Duration::from_millis(1000);
        entry
    };
    let first = connect_remembering(&file, deaf(&[])).await;
    assert_eq!(requests(&log, "server/discover"), 1);
    assert_eq!(requests(&log, "initialize"), 1);
    let probed = first.negotiation.unwrap();
    assert!(
        probed.starts_with("no answer to server/discover within"),
        "{probed}"
    );
    assert!(
        std::fs::read_to_string(&file)
            .unwrap()
            .contains("\"handshake\"")
    );

    let second = connect_remembering(&file, deaf(&[])).await;
    assert_eq!(requests(&log, "initialize"), 2);
    assert_eq!(
        requests(&log, "server/discover"),
        1,
        "the second connection probed"
    );
    let remembered = second.negotiation.unwrap();
    assert!(
        remembered.starts_with("this server spoke the handshake era before"),
        "{remembered}"
    );

    connect_remembering(&file, deaf(&["--tools", "1"])).await;
    assert_eq!(requests(&log, "initialize"), 3);
    assert_eq!(
        requests(&log, "server/discover"),
        2,
        "a changed entry was not probed"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A server remembered as a handshake-era one that now speaks only 2026-07-28 (upgraded under
/// the same command line) refuses `initialize`: the host probes it at once, connects in the
/// new era, and remembers that instead.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_upgraded_since_it_was_remembered_is_probed_again() {
    let dir = scratch("eras-upgrade");
    let (file, log) = (dir.join("eras.json"), dir.join("requests.log"));
    let log_arg = log.display().to_string();
    let server = |stateless: bool| {
        let mut entry = fake("up", &["--log-requests", log_arg.as_str()]);
        let Ok(Connect::Stdio(config)) = &mut entry.connect else {
            unreachable!("fake makes stdio entries")
        };
        config.env = vec![(
            "FAKE_STATELESS".to_owned(),
            if stateless { "1" } else { "0" }.to_owned(),
        )];
        entry
    };
    let old = connect_remembering(&file, server(false)).await;
    assert_eq!(old.era, Some(mcp_protocol::Era::Handshake));
    assert_eq!(requests(&log, "server/discover"), 1);
    let new = connect_remembering(&file, server(true)).await;
    assert_eq!(new.era, Some(mcp_protocol::Era::Stateless), "{new:?}");
    // Initialize on the remembered era first, then the probe that found the new one.
    assert_eq!(requests(&log, "initialize"), 2);
    assert_eq!(requests(&log, "server/discover"), 2);
    assert!(
        std::fs::read_to_string(&file)
            .unwrap()
            .contains("\"stateless\"")
    );
    // And the next connection goes straight to the probe's answer.
    let again = connect_remembering(&file, server(true)).await;
    assert_eq!(again.era, Some(mcp_protocol::Era::Stateless));
    assert_eq!(requests(&log, "initialize"), 2);
    let _ = std::fs::remove_dir_all(&dir);
}
