//! The gateway's passthrough mode, in process, in front of the testkit's fake stdio server and
//! of an in-process Streamable HTTP server (`Mem`, for logging, completion and subscriptions),
//! talked to by our own client over a pipe (as over stdio) and over Streamable HTTP.
//! This file is long because passthrough forwards every method family, and each family has its own
//! end-to-end case over the same in-process upstreams.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use mcp_protocol::schema::{
    CallToolParams, ClientRequest, ElicitationCapability, Implementation, ServerCapabilities,
    ServerNotification, method,
};
use mcp_protocol::{ClientConfig, ErrorObject, RawJson, RequestOptions, ServerConfig, code};
use mcp_session::{Client, Handler, Incoming, RequestContext};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::support::{
    Asking, TempDir, able_client, answer_requests, call, http_upstream as http, over_http,
    over_pipe, serve_http, start_passthrough as start, text,
};

/// The fake stdio server as an upstream entry, with these flags.
fn fake(args: &[&str]) -> Value {
    json!({
        "command": mcp_testkit::fake_server().display().to_string(),
        "args": args,
        "permission": {"default": "allow"},
    })
}

fn plain_client() -> ClientConfig {
    crate::support::plain_client("passthrough-test")
}

async fn raw(client: &Client, method: &str, params: Value) -> Result<Value, ErrorObject> {
    let params = RawJson::encode(&params).unwrap();
    match client
        .request_raw(method, Some(params), RequestOptions::DEFAULT, None)
        .await
    {
        Ok(raw) => Ok(raw.decode::<Value>().unwrap()),
        Err(e) => match e.protocol() {
            mcp_protocol::Error::Rpc { error, .. } => Err(error.clone()),
            other => panic!("{method}: not a JSON-RPC error: {other}"),
        },
    }
}

/// Waits (up to 5 s) for a notification of `method`, skipping the others.
async fn notification(rx: &mut mpsc::Receiver<Incoming>, method: &str) -> ServerNotification {
    let wait = async {
        loop {
            match rx.recv().await {
                Some(Incoming::Notification(n)) if n.method() == method => return n,
                Some(_) => {}
                None => panic!("the session ended before {method}"),
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(5), wait)
        .await
        .unwrap_or_else(|_| panic!("no {method} within 5 s"))
}

/// Whether a notification of `method` arrives within `wait`.
async fn arrives(rx: &mut mpsc::Receiver<Incoming>, method: &str, wait: Duration) -> bool {
    tokio::time::timeout(wait, async {
        loop {
            match rx.recv().await {
                Some(Incoming::Notification(n)) if n.method() == method => return,
                Some(_) => {}
                None => std::future::pending::<()>().await,
            }
        }
    })
    .await
    .is_ok()
}

/// Everything a single fake upstream offers, through `client`, names unchanged.
async fn exercise_one_fake(client: &Client) {
    let caps = &client.server_info().capabilities;
    assert!(caps.tools.as_ref().and_then(|t| t.list_changed) == Some(true));
    assert!(caps.resources.is_some() && caps.prompts.is_some() && caps.logging.is_some());

    // Every tool in one page, as the upstream named and described them, schemas included.
    let listed = raw(client, "tools/list", json!({})).await.unwrap();
    assert!(listed.get("nextCursor").is_none(), "{listed}");
    let tools = listed["tools"].as_array().unwrap();
    assert!(
        tools.len() > 20,
        "the fake's tools and the 5 generated ones"
    );
    let echo = tools.iter().find(|t| t["name"] == "echo").unwrap();
    assert_eq!(echo["inputSchema"]["type"], "object");
    assert!(tools.iter().any(|t| t["name"] == "tool_00004"));

    assert_eq!(
        text(&call(client, "echo", json!({"message": "hi"})).await),
        "hi"
    );
    let unknown = raw(
        client,
        "tools/call",
        json!({"name": "nope", "arguments": {}}),
    )
    .await
    .unwrap_err();
    assert_eq!(unknown.code, code::INVALID_PARAMS);

    let resources = raw(client, "resources/list", json!({})).await.unwrap();
    assert_eq!(resources["resources"][0]["uri"], "fake://hello");
    let read = raw(client, "resources/read", json!({"uri": "fake://hello"}))
        .await
        .unwrap();
    assert_eq!(read["contents"][0]["text"], "contents of fake://hello");
    // The upstream's own error, code and all.
    let missing = raw(client, "resources/read", json!({"uri": "other://x"}))
        .await
        .unwrap_err();
    assert_eq!(missing.code, code::RESOURCE_NOT_FOUND);
    let templates = raw(client, "resources/templates/list", json!({}))
        .await
        .unwrap();
    assert_eq!(
        templates["resourceTemplates"][0]["uriTemplate"],
        "fake://{name}"
    );

    let prompts = raw(client, "prompts/list", json!({})).await.unwrap();
    assert_eq!(prompts["prompts"][0]["name"], "greet");
    let prompt = raw(
        client,
        "prompts/get",
        json!({"name": "greet", "arguments": {"name": "Ada"}}),
    )
    .await
    .unwrap();
    assert_eq!(prompt["messages"][0]["content"]["text"], "Hello, Ada!");

    raw(client, "ping", json!({})).await.unwrap();

    // Progress comes back under the client's own token.
    let (tx, mut rx) = mpsc::unbounded_channel();
    let mut params = CallToolParams::new("progress".to_owned());
    params.arguments = json!({"steps": 3, "delay_ms": 10}).as_object().cloned();
    let result = client
        .request_with_progress::<method::CallTool>(&params, RequestOptions::DEFAULT, Some(tx))
        .await
        .unwrap();
    assert_eq!(text(&result), "3 steps");
    let mut seen = Vec::new();
    while let Ok(p) = rx.try_recv() {
        seen.push(serde_json::to_value(&p.progress).unwrap());
    }
    assert_eq!(seen, [json!(1), json!(2), json!(3)]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_upstream_passes_through_unchanged_over_pipe_and_http() {
    let dir = TempDir::new("one");
    let gateway = start(
        &dir,
        json!({"fake": fake(&["--tools", "5", "--page-size", "4"])}),
    )
    .await;
    exercise_one_fake(&over_pipe(&gateway, plain_client()).await).await;
    exercise_one_fake(&over_http(&gateway, plain_client()).await).await;
    gateway.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upstream_requests_reach_only_a_client_that_declared_them() {
    let dir = TempDir::new("requests");
    let gateway = start(&dir, json!({"fake": fake(&[])})).await;
    for over_http_too in [false, true] {
        let (able, plain) = if over_http_too {
            (
                over_http(&gateway, able_client()).await,
                over_http(&gateway, plain_client()).await,
            )
        } else {
            (
                over_pipe(&gateway, able_client()).await,
                over_pipe(&gateway, plain_client()).await,
            )
        };
        answer_requests(&able);
        let sampled = text(&call(&able, "sample", json!({})).await);
        assert!(sampled.contains("sampled by the client"), "{sampled}");
        let elicited = text(&call(&able, "elicit", json!({})).await);
        assert!(elicited.contains("Ada"), "{elicited}");

        // The upstream reports the whole frame it read back for a request sent under the id
        // it is given: method not found, under that id.
        for (tool, id, what) in [
            ("sample", json!("sample-1"), "sampling"),
            ("elicit", json!(4242), "elicitation"),
        ] {
            let answer = text(&call(&plain, tool, json!({ "request_id": id })).await);
            let frame: Value = serde_json::from_str(&answer)
                .unwrap_or_else(|e| panic!("{tool}: no JSON-RPC frame ({e}): {answer}"));
            let message = format!("the client in front of the gateway does not support {what}");
            assert_eq!(
                frame,
                json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": message}}),
                "{tool}"
            );
        }
    }
    gateway.shutdown().await;
}

/// Answers every request from the gateway with `label` as the elicited name, counting them:
/// which client was asked, and how often.
fn answer_as(client: &Client, label: &'static str) -> Arc<AtomicUsize> {
    let asked = Arc::new(AtomicUsize::new(0));
    let mut incoming = client.take_incoming().unwrap();
    let (client, count) = (client.clone(), Arc::clone(&asked));
    tokio::spawn(async move {
        while let Some(item) = incoming.recv().await {
            if let Incoming::Request { id, .. } = item {
                count.fetch_add(1, Ordering::SeqCst);
                let result = json!({"action": "accept", "content": {"name": label}});
                let _ = client.respond(&id, Ok(RawJson::encode(&result).unwrap()));
            }
        }
    });
    asked
}

/// Calls of two clients wait on one upstream at once: its elicitation cannot be tied to either
/// call (a stdio upstream's request carries no link to the request it serves), so the gateway
/// refuses it rather than guess, and neither client is asked; with only one client's calls
/// waiting, the request reaches that client and no other.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_request_is_refused_when_several_clients_wait_on_it() {
    let dir = TempDir::new("two-clients");
    let gateway = start(&dir, json!({"fake": fake(&[])})).await;
    for over_http_too in [false, true] {
        let (a, b) = if over_http_too {
            (
                over_http(&gateway, able_client()).await,
                over_http(&gateway, able_client()).await,
            )
        } else {
            (
                over_pipe(&gateway, able_client()).await,
                over_pipe(&gateway, able_client()).await,
            )
        };
        let (asked_a, asked_b) = (answer_as(&a, "client-a"), answer_as(&b, "client-b"));
        // Present first: with nobody else waiting, B's elicitation reaches B.
        let answered = text(&call(&b, "elicit", json!({})).await);
        assert!(answered.contains("client-b"), "{answered}");
        assert_eq!(
            (
                asked_a.load(Ordering::SeqCst),
                asked_b.load(Ordering::SeqCst)
            ),
            (0, 1)
        );

        // A's call waits on the upstream while B's asks.
        let waiting = {
            let a = a.clone();
            tokio::spawn(async move { text(&call(&a, "sleep", json!({"ms": 5000})).await) })
        };
        tokio::time::sleep(Duration::from_millis(1500)).await;
        let refused = text(&call(&b, "elicit", json!({})).await);
        assert!(
            refused.contains("calls of more than one client wait on this server"),
            "{refused}"
        );
        assert!(!refused.contains("client-"), "{refused}");
        assert_eq!(waiting.await.unwrap(), "slept");
        assert_eq!(
            (
                asked_a.load(Ordering::SeqCst),
                asked_b.load(Ordering::SeqCst)
            ),
            (0, 1)
        );
    }
    gateway.shutdown().await;
}

/// A 2026-07-28 client has no server-to-client requests: a stdio upstream's request during its
/// call comes back to it as `input_required` (the gateway suspends the upstream call), and the
/// answer of its retry reaches the upstream (issue 22 §5, the fourth pair).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_request_reaches_a_stateless_client_as_input_required() {
    let dir = TempDir::new("stateless-requests");
    let gateway = start(&dir, json!({"fake": fake(&[])})).await;
    // The same declaration in the handshake era gets the request on the call's stream.
    let handshake = over_http(&gateway, able_client()).await;
    answer_requests(&handshake);
    let sampled = text(&call(&handshake, "sample", json!({})).await);
    assert!(sampled.contains("sampled by the client"), "{sampled}");
    drop(handshake);

    let mut config = able_client();
    config.supported_versions = mcp_protocol::ProtocolVersion::KNOWN.to_vec();
    let stateless = over_http(&gateway, config).await;
    assert_eq!(stateless.server_info().era, mcp_protocol::Era::Stateless);
    answer_requests(&stateless);
    // Our session's multi round-trip driver answers the input_required and retries.
    let sampled = text(&call(&stateless, "sample", json!({})).await);
    assert!(sampled.contains("sampled by the client"), "{sampled}");
    gateway.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_call_is_cancelled_upstream() {
    let dir = TempDir::new("cancel");
    let gateway = start(&dir, json!({"fake": fake(&[])})).await;
    let client = over_http(&gateway, plain_client()).await;
    let params = CallToolParams::new("hang".to_owned());
    let hung = client
        .call_tool(
            params,
            RequestOptions::DEFAULT.timeout(Duration::from_millis(300)),
        )
        .await;
    assert!(hung.is_err_and(|e| e.is_timeout()));
    // The client's cancellation ends the gateway's handler, which cancels the upstream call.
    let mut stats = String::new();
    for _ in 0..50 {
        stats = text(&call(&client, "stats", json!({})).await);
        if stats == "cancelled=1" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(stats, "cancelled=1");
    gateway.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_list_change_reaches_every_client() {
    let dir = TempDir::new("changed");
    let gateway = start(&dir, json!({"fake": fake(&[])})).await;
    let a = over_pipe(&gateway, plain_client()).await;
    let b = over_http(&gateway, plain_client()).await;
    let mut a_in = a.take_incoming().unwrap();
    let mut b_in = b.take_incoming().unwrap();
    let before = a.list_all_tools().await.unwrap().len();
    b.list_all_tools().await.unwrap();
    assert_eq!(text(&call(&a, "grow", json!({})).await), "one more tool");
    notification(&mut a_in, "notifications/tools/list_changed").await;
    notification(&mut b_in, "notifications/tools/list_changed").await;
    // The host listed the tools again before saying so.
    assert_eq!(b.list_all_tools().await.unwrap().len(), before + 1);
    gateway.shutdown().await;
}

/// An in-process upstream over Streamable HTTP with what the fake lacks: log entries,
/// completion, resource subscriptions and updates.
#[derive(Clone, Default)]
struct Mem;

fn mem_config() -> ServerConfig {
    let mut config = ServerConfig::new(Implementation::new("mem".into(), "0".into()));
    config.capabilities = serde_json::from_value::<ServerCapabilities>(json!({
        "tools": {}, "resources": {"subscribe": true}, "prompts": {},
        "completions": {}, "logging": {},
    }))
    .unwrap();
    config.instructions = Some("mem keeps things in memory".into());
    config
}

fn tool_text(s: &str) -> Value {
    json!({"content": [{"type": "text", "text": s}]})
}

impl Handler for Mem {
    async fn handle(
        &self,
        request: ClientRequest,
        context: RequestContext,
    ) -> Result<RawJson, ErrorObject> {
        let result = match request {
            ClientRequest::ListTools(_) => json!({"tools": [
                {"name": "log", "inputSchema": {"type": "object"}},
                {"name": "touch", "inputSchema": {"type": "object", "properties": {"uri": {"type": "string"}}}},
            ]}),
            ClientRequest::CallTool(p) => match p.name.as_str() {
                "log" => {
                    let entry = json!({"level": "info", "logger": "mem", "data": "hello from mem"});
                    let _ = context
                        .peer
                        .notify("notifications/message", RawJson::encode(&entry).ok());
                    tool_text("logged")
                }
                "touch" => {
                    let uri = p
                        .arguments
                        .as_ref()
                        .and_then(|a| a.get("uri"))
                        .cloned()
                        .unwrap_or_default();
                    let _ = context.peer.unrelated().notify(
                        "notifications/resources/updated",
                        RawJson::encode(&json!({"uri": uri})).ok(),
                    );
                    tool_text("touched")
                }
                other => return Err(ErrorObject::new(code::INVALID_PARAMS, other.to_owned())),
            },
            ClientRequest::ListResources(_) => {
                json!({"resources": [{"uri": "mem://a", "name": "a"}]})
            }
            ClientRequest::ListResourceTemplates(_) => {
                json!({"resourceTemplates": [{"uriTemplate": "mem://{name}", "name": "mem"}]})
            }
            ClientRequest::ReadResource(p) if p.uri.starts_with("mem://") => {
                json!({"contents": [{"uri": p.uri, "text": format!("mem holds {}", p.uri)}]})
            }
            ClientRequest::ReadResource(p) => {
                return Err(ErrorObject::new(
                    code::RESOURCE_NOT_FOUND,
                    format!("not mine: {}", p.uri),
                ));
            }
            ClientRequest::Subscribe(_) | ClientRequest::Unsubscribe(_) => json!({}),
            ClientRequest::ListPrompts(_) => json!({"prompts": [{"name": "greet"}]}),
            ClientRequest::GetPrompt(_) => json!({"messages": [
                {"role": "user", "content": {"type": "text", "text": "mem greets"}}
            ]}),
            ClientRequest::Complete(p) => json!({"completion": {
                "values": [format!("mem-{}", p.argument.value)], "hasMore": false
            }}),
            ClientRequest::SetLevel(_) => json!({}),
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

async fn start_mem() -> String {
    let (listener, addr) = mcp_http::bind("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    tokio::spawn(async move {
        let _ = mcp_http::serve_http(listener, mcp_http::HttpServerConfig::new(mem_config()), Mem)
            .await;
    });
    format!("http://{addr}/mcp")
}

/// `Mem` without the completions capability, refusing `completion/complete` with `-32601` as
/// an rmcp 3.11 server does for a capability it did not declare (rust-sdk #1446).
#[derive(Clone, Default)]
struct NoCompletions;

impl Handler for NoCompletions {
    async fn handle(
        &self,
        request: ClientRequest,
        context: RequestContext,
    ) -> Result<RawJson, ErrorObject> {
        match request {
            ClientRequest::Complete(_) => Err(ErrorObject::new(
                code::METHOD_NOT_FOUND,
                "completion/complete".into(),
            )),
            other => Mem.handle(other, context).await,
        }
    }
}

async fn start_no_completions() -> String {
    let mut config = mem_config();
    config.capabilities.completions = None;
    let (listener, addr) = mcp_http::bind("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    tokio::spawn(async move {
        let config = mcp_http::HttpServerConfig::new(config);
        let _ = mcp_http::serve_http(listener, config, NoCompletions).await;
    });
    format!("http://{addr}/mcp")
}

/// The gateway declares completions when one upstream does; a completion for a prompt of
/// another, which declared none, is the empty answer the gateway's declaration promises, never
/// that upstream's `-32601` (found with an rmcp 3.11 client: `cargo xtask bench --gateway-check`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_completion_for_an_upstream_without_completions_is_empty_not_refused() {
    let dir = TempDir::new("no-completions");
    let upstreams = json!({
        "mem": http(&start_mem().await),
        "strict": http(&start_no_completions().await),
    });
    let gateway = start(&dir, upstreams).await;
    let client = over_http(&gateway, plain_client()).await;
    assert!(client.server_info().capabilities.completions.is_some());
    let complete = |name: &str| json!({"ref": {"type": "ref/prompt", "name": name}, "argument": {"name": "x", "value": "pa"}});
    let mem = raw(&client, "completion/complete", complete("mcp__mem__greet"))
        .await
        .unwrap();
    assert_eq!(mem["completion"]["values"], json!(["mem-pa"]));
    let strict = raw(
        &client,
        "completion/complete",
        complete("mcp__strict__greet"),
    )
    .await;
    match strict {
        Ok(answer) => assert_eq!(answer["completion"]["values"], json!([])),
        Err(e) => panic!("completion for the upstream without completions: {e:?}"),
    }
    gateway.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn logging_completion_and_subscriptions_pass_through() {
    let dir = TempDir::new("mem");
    let gateway = start(&dir, json!({"mem": http(&start_mem().await)})).await;
    let a = over_http(&gateway, plain_client()).await;
    let b = over_pipe(&gateway, plain_client()).await;
    assert_eq!(
        a.server_info().instructions.as_deref(),
        Some("mem keeps things in memory")
    );
    let caps = &a.server_info().capabilities;
    assert!(caps.completions.is_some() && caps.logging.is_some());
    assert_eq!(
        caps.resources.as_ref().and_then(|r| r.subscribe),
        Some(true)
    );
    let mut a_in = a.take_incoming().unwrap();
    let mut b_in = b.take_incoming().unwrap();

    raw(&a, "logging/setLevel", json!({"level": "info"}))
        .await
        .unwrap();
    let completed = raw(
        &a,
        "completion/complete",
        json!({"ref": {"type": "ref/prompt", "name": "greet"}, "argument": {"name": "x", "value": "pa"}}),
    )
    .await
    .unwrap();
    assert_eq!(completed["completion"]["values"][0], "mem-pa");

    // A log entry goes to the client whose call it belongs to.
    b.list_all_tools().await.unwrap();
    assert_eq!(text(&call(&a, "log", json!({})).await), "logged");
    let ServerNotification::LoggingMessage(entry) =
        notification(&mut a_in, "notifications/message").await
    else {
        unreachable!()
    };
    assert_eq!(entry.data, "hello from mem");
    assert!(
        !arrives(
            &mut b_in,
            "notifications/message",
            Duration::from_millis(300)
        )
        .await
    );

    // resources/updated reaches the subscribed client only.
    raw(&a, "resources/subscribe", json!({"uri": "mem://a"}))
        .await
        .unwrap();
    call(&b, "touch", json!({"uri": "mem://a"})).await;
    let ServerNotification::ResourceUpdated(updated) =
        notification(&mut a_in, "notifications/resources/updated").await
    else {
        unreachable!()
    };
    assert_eq!(updated.uri, "mem://a");
    assert!(
        !arrives(
            &mut b_in,
            "notifications/resources/updated",
            Duration::from_millis(300)
        )
        .await
    );
    raw(&a, "resources/unsubscribe", json!({"uri": "mem://a"}))
        .await
        .unwrap();
    call(&b, "touch", json!({"uri": "mem://a"})).await;
    assert!(
        !arrives(
            &mut a_in,
            "notifications/resources/updated",
            Duration::from_millis(300)
        )
        .await
    );
    gateway.shutdown().await;
}

/// `Mem`, whose subscribe sends an update of the URI at once and answers only when the test
/// lets it (`release`): the update reaches the gateway before the upstream's answer, every
/// time, which is the window a subscribed client must not fall into.
#[derive(Clone, Default)]
struct Announcing {
    release: Arc<tokio::sync::Notify>,
}

impl Handler for Announcing {
    async fn handle(
        &self,
        request: ClientRequest,
        context: RequestContext,
    ) -> Result<RawJson, ErrorObject> {
        match request {
            ClientRequest::Subscribe(p) => {
                let _ = context.peer.unrelated().notify(
                    "notifications/resources/updated",
                    RawJson::encode(&json!({"uri": p.uri})).ok(),
                );
                self.release.notified().await;
                Ok(RawJson::encode(&json!({})).unwrap())
            }
            other => Mem.handle(other, context).await,
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_update_sent_before_the_upstream_answers_the_subscribe_reaches_the_client() {
    let dir = TempDir::new("announcing");
    let upstream = Announcing::default();
    let release = Arc::clone(&upstream.release);
    let (listener, addr) = mcp_http::bind("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    tokio::spawn(async move {
        let config = mcp_http::HttpServerConfig::new(mem_config());
        let _ = mcp_http::serve_http(listener, config, upstream).await;
    });
    let gateway = start(&dir, json!({"mem": http(&format!("http://{addr}/mcp"))})).await;
    let client = over_http(&gateway, plain_client()).await;
    let mut incoming = client.take_incoming().unwrap();
    let subscribing = {
        let client = client.clone();
        tokio::spawn(
            async move { raw(&client, "resources/subscribe", json!({"uri": "mem://a"})).await },
        )
    };
    // The update comes while the upstream has not answered yet: the client was taken as
    // subscribed before the upstream was asked (before, the update found nobody subscribed
    // and was dropped).
    let ServerNotification::ResourceUpdated(updated) =
        notification(&mut incoming, "notifications/resources/updated").await
    else {
        unreachable!()
    };
    assert_eq!(updated.uri, "mem://a");
    release.notify_one();
    subscribing.await.unwrap().unwrap();
    gateway.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn several_upstreams_are_namespaced_and_routed() {
    let dir = TempDir::new("several");
    let gateway = start(
        &dir,
        json!({"fake": fake(&[]), "mem": http(&start_mem().await)}),
    )
    .await;
    for client in [
        over_pipe(&gateway, plain_client()).await,
        over_http(&gateway, plain_client()).await,
    ] {
        let tools = client.list_all_tools().await.unwrap();
        assert!(tools.iter().all(|t| t.name.starts_with("mcp__")));
        assert!(tools.iter().any(|t| t.name == "mcp__fake__echo"));
        assert!(tools.iter().any(|t| t.name == "mcp__mem__log"));
        assert_eq!(
            text(&call(&client, "mcp__fake__echo", json!({"message": "ns"})).await),
            "ns"
        );
        // A bare name that only one upstream has resolves too.
        assert_eq!(
            text(&call(&client, "touch", json!({"uri": "mem://b"})).await),
            "touched"
        );

        let prompts = raw(&client, "prompts/list", json!({})).await.unwrap();
        let names: Vec<&str> = prompts["prompts"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|p| p["name"].as_str())
            .collect();
        assert_eq!(names, ["mcp__fake__greet", "mcp__mem__greet"]);
        let got = raw(&client, "prompts/get", json!({"name": "mcp__mem__greet"}))
            .await
            .unwrap();
        assert_eq!(got["messages"][0]["content"]["text"], "mem greets");
        let got = raw(&client, "prompts/get", json!({"name": "mcp__fake__greet"}))
            .await
            .unwrap();
        assert_eq!(got["messages"][0]["content"]["text"], "Hello, world!");

        // Resources keep their URIs and go to the upstream that listed them (or whose
        // template fits), else to whichever has them.
        let listed = raw(&client, "resources/list", json!({})).await.unwrap();
        assert_eq!(listed["resources"].as_array().unwrap().len(), 2);
        let read = raw(&client, "resources/read", json!({"uri": "fake://hello"}))
            .await
            .unwrap();
        assert_eq!(read["contents"][0]["text"], "contents of fake://hello");
        let read = raw(&client, "resources/read", json!({"uri": "mem://zzz"}))
            .await
            .unwrap();
        assert_eq!(read["contents"][0]["text"], "mem holds mem://zzz");
        let completed = raw(
            &client,
            "completion/complete",
            json!({"ref": {"type": "ref/prompt", "name": "mcp__mem__greet"}, "argument": {"name": "x", "value": "q"}}),
        )
        .await
        .unwrap();
        assert_eq!(completed["completion"]["values"][0], "mem-q");
    }
    gateway.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_upstream_down_leaves_the_other_working() {
    let dir = TempDir::new("down");
    let gateway = start(
        &dir,
        json!({"fake": fake(&[]), "broken": fake(&["--exit-on-start", "3"])}),
    )
    .await;
    let client = over_http(&gateway, plain_client()).await;
    let tools = client.list_all_tools().await.unwrap();
    assert!(tools.iter().any(|t| t.name == "mcp__fake__echo"));
    assert!(!tools.iter().any(|t| t.name.starts_with("mcp__broken__")));
    assert_eq!(
        text(&call(&client, "mcp__fake__echo", json!({"message": "up"})).await),
        "up"
    );
    let refused = raw(
        &client,
        "tools/call",
        json!({"name": "mcp__broken__echo", "arguments": {}}),
    )
    .await
    .unwrap_err();
    assert_eq!(refused.code, code::INVALID_PARAMS);
    let read = raw(&client, "resources/read", json!({"uri": "fake://hello"}))
        .await
        .unwrap();
    assert_eq!(read["contents"][0]["text"], "contents of fake://hello");
    gateway.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_upstream_ready_still_declares_tools_resources_and_prompts() {
    let dir = TempDir::new("none");
    let gateway = start(&dir, json!({"broken": fake(&["--exit-on-start", "3"])})).await;
    let client = over_pipe(&gateway, plain_client()).await;
    let caps = &client.server_info().capabilities;
    assert!(caps.tools.is_some() && caps.resources.is_some() && caps.prompts.is_some());
    assert!(client.list_all_tools().await.unwrap().is_empty());
    gateway.shutdown().await;
}

/// SPEC.md §10: the token a client presents to an HTTP gateway (`--bearer-token-env`) is the
/// gateway's own and never reaches an upstream.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_clients_token_is_not_passed_upstream() {
    let upstream = mcp_testkit::fake_http::FakeHttp::start().await;
    let dir = TempDir::new("token");
    let gateway = start(&dir, json!({"up": http(&upstream.url)})).await;
    let url = serve_http(&gateway, Some("front-door-secret")).await;

    let refused = mcp_http::connect(
        mcp_http::HttpConfig::new("gateway", url.clone()),
        plain_client(),
    )
    .await;
    assert!(refused.is_err(), "the gateway wants its token");

    let mut config = mcp_http::HttpConfig::new("gateway", url);
    config.auth = Some(Arc::new(
        mcp_http::StaticAuth::bearer("front-door-secret").unwrap(),
    ));
    let client = mcp_http::connect(config, plain_client()).await.unwrap();
    let tools = client.list_all_tools().await.unwrap();
    assert_eq!(tools[0].name, "echo");
    call(&client, "echo", json!({})).await;

    let seen = upstream.seen();
    assert!(seen.iter().any(|s| s.body["method"] == "tools/call"));
    for s in &seen {
        assert!(
            s.headers.get("authorization").is_none(),
            "the upstream saw an Authorization header: {:?}",
            s.headers
        );
        assert!(
            !format!("{:?}", s.headers).contains("front-door-secret"),
            "the client's token reached the upstream"
        );
    }
    gateway.shutdown().await;
}

/// A stateless client in front, a stateless upstream behind: the upstream's `input_required`
/// reaches the client as it came, the client's answer and the upstream's `requestState` go
/// back, the upstream hears the client's own capabilities (not the gateway's), and the answer
/// names the gateway as its server, not the upstream.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn input_required_passes_through_between_stateless_peers() {
    let (asking, url) = Asking::serve().await;
    let dir = TempDir::new("asking");
    let gateway = start(&dir, json!({"asking": http(&url)})).await;

    // Our client left to negotiate (the stateless era), declaring form elicitation only.
    let mut config = ClientConfig::new(Implementation::new("front".into(), "0".into()));
    config.capabilities.elicitation =
        serde_json::from_value::<ElicitationCapability>(json!({"form": {}})).ok();
    let client = over_http(&gateway, config).await;
    assert_eq!(client.server_info().era, mcp_protocol::Era::Stateless);
    let mut incoming = client.take_incoming().unwrap();
    let answering = {
        let client = client.clone();
        tokio::spawn(async move {
            while let Some(item) = incoming.recv().await {
                if let Incoming::Request { id, .. } = item {
                    let yes = RawJson::encode(&json!({"action": "accept", "content": {}})).unwrap();
                    let _ = client.respond(&id, Ok(yes));
                }
            }
        })
    };

    let result = call(&client, "ask", json!({})).await;
    assert_eq!(text(&result), "confirmed");
    let server = &result.meta.as_ref().unwrap()["io.modelcontextprotocol/serverInfo"];
    assert_eq!(server["name"], "mcp-host-gateway", "{server}");

    let seen = asking.0.lock().unwrap().clone();
    assert_eq!(seen.len(), 2, "the first call and its retry: {seen:?}");
    for meta in &seen {
        assert_eq!(
            meta["io.modelcontextprotocol/clientCapabilities"],
            json!({"elicitation": {"form": {}}}),
            "{meta}"
        );
    }
    answering.abort();
    gateway.shutdown().await;
}

/// An upstream's hostile tool name is listed cleaned, bounded and namespaced, and calling it
/// by that name reaches the upstream under its own. The upstream's id holds `__`, so its
/// names are read with the longest configured id (`fake__evil`, not `fake`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hostile_tool_name_is_shown_safely_and_still_callable() {
    use crate::support::{assert_reached_hostile, assert_shown_safely, hostile_fake_args};
    let dir = TempDir::new("passthrough-hostile");
    let args = hostile_fake_args(dir.path());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let gateway = start(&dir, json!({"fake": fake(&[]), "fake__evil": fake(&args)})).await;
    for client in [
        over_pipe(&gateway, plain_client()).await,
        over_http(&gateway, plain_client()).await,
    ] {
        let tools = client.list_all_tools().await.unwrap();
        assert!(tools.iter().any(|t| t.name == "mcp__fake__echo"));
        assert!(tools.iter().any(|t| t.name == "mcp__fake__evil__echo"));
        let hostile: Vec<&str> = tools
            .iter()
            .map(|t| t.name.as_str())
            .filter(|n| n.starts_with("mcp__fake__evil__mcp__"))
            .collect();
        let [shown] = hostile.as_slice() else {
            panic!("one hostile tool: {hostile:.80?}");
        };
        assert_shown_safely(shown, "mcp__fake__evil__");
        let result = call(&client, shown, json!({"k": "v"})).await;
        assert_reached_hostile(&result);
        // `fake__evil`'s own echo, and `fake`'s, each under its own prefix.
        let result = call(&client, "mcp__fake__evil__echo", json!({"message": "evil"})).await;
        assert_eq!(text(&result), "evil");
        let result = call(&client, "mcp__fake__echo", json!({"message": "plain"})).await;
        assert_eq!(text(&result), "plain");
        // The name as the upstream sent it is not one the gateway shows; the error quotes it
        // cleaned and bounded.
        let raw_name = format!("mcp__fake__evil__{}", crate::support::hostile_name());
        let refused = raw(
            &client,
            "tools/call",
            json!({"name": raw_name, "arguments": {}}),
        )
        .await
        .unwrap_err();
        assert_eq!(refused.code, code::INVALID_PARAMS);
        crate::support::assert_quoted_safely(&refused.message);
    }
    gateway.shutdown().await;
}
