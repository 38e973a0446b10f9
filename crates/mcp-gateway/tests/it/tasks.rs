//! Tasks through the gateway (issue 26): a client's task-augmented call becomes a task of the
//! gateway's, whose work is the upstream call (here an upstream task, since the upstream's
//! tools require one); clients of both eras, over a pipe and over HTTP, at once, each see only
//! their own tasks, under the gateway's ids, never the upstream's; a cancel reaches the
//! upstream; the upstream's questions reach the task's client; category and meta modes run
//! their `call-*` tools as tasks too; a 2026-07-28 client sees the upstream's `input_required`
//! round before the task the upstream makes after it (SEP-2663's composition).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_gateway::Gateway;
use mcp_protocol::schema::{ClientRequest, Implementation, ServerCapabilities};
use mcp_protocol::{ClientConfig, ErrorObject, RawJson, RequestOptions, ServerConfig, code};
use mcp_session::{Client, Handler, RequestContext, TaskContext, Tasks};
use serde_json::{Value, json};

use crate::support::{TempDir, answer_requests, load_and_start, over_http, over_pipe};

const TASKS: &str = "io.modelcontextprotocol/tasks";

/// An upstream whose tools run only as tasks of its own (`mcp_session::Tasks`): `build` ends
/// at once, `wait` runs until cancelled, `ask` asks its client a question first, `compose`
/// answers `input_required` first (a multi round-trip result, when the call is stateless) and
/// makes its task only on the retry that answers it.
#[derive(Clone, Default)]
struct Worker {
    tasks: Tasks,
    /// The ids of the tasks it created, in order.
    created: Arc<Mutex<Vec<String>>>,
}

impl Handler for Worker {
    async fn handle(
        &self,
        request: ClientRequest,
        context: RequestContext,
    ) -> Result<RawJson, ErrorObject> {
        if let Some(answer) = self.tasks.answer(&request, &context).await {
            return answer;
        }
        match request {
            ClientRequest::ListTools(_) => {
                let tool = |name: &str| {
                    json!({"name": name, "description": name, "inputSchema": {"type": "object"},
                           "execution": {"taskSupport": "required"}})
                };
                let tools =
                    json!({"tools": [tool("build"), tool("wait"), tool("ask"), tool("compose")]});
                Ok(RawJson::encode(&tools).unwrap())
            }
            ClientRequest::CallTool(call) => {
                if !Tasks::accepts(&context, call.task.as_ref()) {
                    return Err(Tasks::required_error());
                }
                let what = call
                    .arguments
                    .as_ref()
                    .and_then(|a| a.get("what"))
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned();
                if call.name == "compose" && !call.extra.contains_key("inputResponses") {
                    let asked = json!({
                        "resultType": "input_required",
                        "inputRequests": {"who": {"method": "elicitation/create", "params": {
                            "mode": "form", "message": "Who is it for?",
                            "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}},
                        }}},
                        "requestState": "compose-round-1",
                    });
                    return Ok(RawJson::encode(&asked).unwrap());
                }
                let who = call
                    .extra
                    .get("inputResponses")
                    .and_then(|r| r["who"]["content"]["name"].as_str())
                    .unwrap_or_default()
                    .to_owned();
                let created = match call.name.as_str() {
                    "compose" => self.tasks.create(&context, move |_| async move {
                        Ok(text(&format!("composed for {who}")))
                    }),
                    "build" => self.tasks.create(&context, move |_| async move {
                        Ok(text(&format!("built {what}")))
                    }),
                    "wait" => self.tasks.create(&context, |_| async {
                        tokio::time::sleep(Duration::from_secs(600)).await;
                        Ok(text("waited"))
                    }),
                    _ => self.tasks.create(&context, ask),
                }?;
                let value: Value = created.decode().unwrap();
                let id = value["taskId"]
                    .as_str()
                    .or(value["task"]["taskId"].as_str())
                    .unwrap()
                    .to_owned();
                self.created.lock().unwrap().push(id);
                Ok(created)
            }
            other => Err(ErrorObject::new(
                code::METHOD_NOT_FOUND,
                other.method().to_owned(),
            )),
        }
    }
}

/// `ask`'s work: one elicitation, then a greeting with the name given.
async fn ask(task: TaskContext) -> Result<RawJson, ErrorObject> {
    let question = serde_json::from_value(json!({
        "method": "elicitation/create",
        "params": {"mode": "form", "message": "Your name?",
                   "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}}},
    }))
    .unwrap();
    let answers = task
        .input(BTreeMap::from([("name".to_owned(), question)]))
        .await
        .unwrap_or_default();
    let name = answers
        .get("name")
        .and_then(|a| a.decode::<Value>().ok())
        .and_then(|a| a["content"]["name"].as_str().map(str::to_owned))
        .unwrap_or_default();
    Ok(text(&format!("hello {name}")))
}

fn text(s: &str) -> RawJson {
    RawJson::encode(&json!({"content": [{"type": "text", "text": s}]})).unwrap()
}

/// Serves `worker` over Streamable HTTP on loopback, declaring tasks in both forms.
async fn serve(worker: Worker) -> String {
    let mut config = ServerConfig::dual_era(Implementation::new("worker".into(), "1".into()));
    config.capabilities = serde_json::from_value::<ServerCapabilities>(json!({
        "tools": {},
        "tasks": {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}},
        "extensions": {TASKS: {}},
    }))
    .unwrap();
    let (listener, addr) = mcp_http::bind("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    tokio::spawn(async move {
        let _ =
            mcp_http::serve_http(listener, mcp_http::HttpServerConfig::new(config), worker).await;
    });
    format!("http://{addr}/mcp")
}

async fn gateway(dir: &TempDir, mode: Value) -> (Gateway, Worker) {
    let worker = Worker::default();
    let url = serve(worker.clone()).await;
    let mut file = json!({
        "mcpServers": {"up": {"type": "http", "url": url, "permission": {"default": "allow"}}},
        "logFile": dir.path().join("gateway.log"),
    });
    if let (Some(file), Value::Object(mode)) = (file.as_object_mut(), mode) {
        file.extend(mode);
    }
    let path = dir.path().join("gateway.json");
    std::fs::write(&path, serde_json::to_vec_pretty(&file).unwrap()).unwrap();
    (load_and_start(&path).await, worker)
}

/// A client of `era` that runs tasks: in 2026-07-28 it declares the extension, in the
/// handshake era it asks with the `task` member (see [`create`]).
fn client(era: &str, tasks: bool) -> ClientConfig {
    let mut config = ClientConfig::new(Implementation::new(format!("{era}-client"), "0".into()));
    if era == "handshake" {
        config.supported_versions = mcp_protocol::ProtocolVersion::HANDSHAKE.to_vec();
    }
    let mut capabilities = json!({"elicitation": {}, "sampling": {}});
    if tasks {
        capabilities["extensions"] = json!({TASKS: {}});
    }
    config.capabilities = serde_json::from_value(capabilities).unwrap();
    config
}

fn stateless(client: &Client) -> bool {
    client.server_info().era == mcp_protocol::Era::Stateless
}

async fn raw(client: &Client, method: &str, params: Value) -> Result<Value, ErrorObject> {
    raw_with(client, method, params, RequestOptions::DEFAULT).await
}

/// [`raw`] with `options` (an `input_required` result comes back only when they say so).
async fn raw_with(
    client: &Client,
    method: &str,
    params: Value,
    options: RequestOptions,
) -> Result<Value, ErrorObject> {
    let params = RawJson::encode(&params).unwrap();
    match client
        .request_raw(method, Some(params), options, None)
        .await
    {
        Ok(raw) => Ok(raw.decode::<Value>().unwrap()),
        Err(e) => match e.protocol() {
            mcp_protocol::Error::Rpc { error, .. } => Err(error.clone()),
            other => panic!("{method}: not a JSON-RPC error: {other}"),
        },
    }
}

/// Calls `tool` as a task and returns the gateway's task id.
async fn create(client: &Client, tool: &str, arguments: Value) -> String {
    let mut params = json!({"name": tool, "arguments": arguments});
    if !stateless(client) {
        params["task"] = json!({"ttl": 60_000});
    }
    let created = raw(client, "tools/call", params).await.unwrap();
    let id = if stateless(client) {
        assert_eq!(created["resultType"], "task", "{created}");
        created["taskId"].as_str()
    } else {
        created["task"]["taskId"].as_str()
    };
    id.unwrap_or_else(|| panic!("no task: {created}"))
        .to_owned()
}

/// Polls `tasks/get` until the task is in `status` (at most 30 s); returns the last answer.
async fn until(client: &Client, id: &str, status: &str) -> Value {
    let mut got = Value::Null;
    for _ in 0..600 {
        got = raw(client, "tasks/get", json!({"taskId": id}))
            .await
            .unwrap();
        if got["status"] == status {
            return got;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("task {id} never became {status}: {got}");
}

/// The task's result: inlined in `tasks/get` (2026-07-28), from `tasks/result` (handshake).
async fn result_of(client: &Client, id: &str) -> Value {
    let done = until(client, id, "completed").await;
    if stateless(client) {
        done["result"].clone()
    } else {
        raw(client, "tasks/result", json!({"taskId": id}))
            .await
            .unwrap()
    }
}

fn first_text(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clients_of_both_eras_run_their_own_tasks_and_see_no_other() {
    let dir = TempDir::new("tasks-own");
    let (gateway, worker) = gateway(&dir, json!({"mode": "passthrough"})).await;
    // Each era's form declared (2026-07-28's discover has no `tasks` member).
    let clients = [
        over_pipe(&gateway, client("handshake", true)).await,
        over_http(&gateway, client("handshake", true)).await,
        over_pipe(&gateway, client("stateless", true)).await,
        over_http(&gateway, client("stateless", true)).await,
    ];
    for c in &clients {
        let caps = serde_json::to_value(&c.server_info().capabilities).unwrap();
        assert_eq!(caps["extensions"][TASKS], json!({}), "{caps}");
        if !stateless(c) {
            assert!(
                caps["tasks"]["requests"]["tools"]["call"].is_object(),
                "{caps}"
            );
        }
    }
    assert!(!stateless(&clients[0]) && !stateless(&clients[1]));
    assert!(stateless(&clients[2]) && stateless(&clients[3]));
    // The upstream's tool is listed as it requires: a task.
    let listed = raw(&clients[3], "tools/list", json!({})).await.unwrap();
    assert_eq!(listed["tools"][0]["execution"]["taskSupport"], "required");

    // Each at once: a task, polled, its result.
    let runs: Vec<_> = clients
        .iter()
        .enumerate()
        .map(|(n, c)| {
            let c = c.clone();
            tokio::spawn(async move {
                let id = create(&c, "build", json!({"what": format!("client {n}")})).await;
                let result = result_of(&c, &id).await;
                assert_eq!(first_text(&result), format!("built client {n}"), "{result}");
                id
            })
        })
        .collect();
    let mut ids = Vec::new();
    for run in runs {
        ids.push(run.await.unwrap());
    }
    // The gateway's own ids: none is an upstream's, and each client's is its own.
    let upstream = worker.created.lock().unwrap().clone();
    assert_eq!(upstream.len(), 4, "each call ran as an upstream task");
    for id in &ids {
        assert!(!upstream.contains(id), "{id} is the upstream's");
    }

    // A handshake client cannot see, update or cancel another client's task.
    let (a, b) = (&clients[0], &clients[1]);
    let running = create(a, "wait", json!({})).await;
    let seen = raw(a, "tasks/get", json!({"taskId": running}))
        .await
        .unwrap();
    assert_eq!(seen["status"], "working");
    for other in [b, &clients[2], &clients[3]] {
        for method in ["tasks/get", "tasks/cancel"] {
            let refused = raw(other, method, json!({"taskId": running}))
                .await
                .unwrap_err();
            assert_eq!(refused.code, code::INVALID_PARAMS, "{method}");
        }
    }
    let refused = raw(
        &clients[2],
        "tasks/update",
        json!({"taskId": running, "inputResponses": {}}),
    )
    .await
    .unwrap_err();
    assert_eq!(refused.code, code::INVALID_PARAMS);
    // b's list has its own task and not a's.
    let listed = raw(b, "tasks/list", json!({})).await.unwrap();
    let listed: Vec<&str> = listed["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["taskId"].as_str())
        .collect();
    assert_eq!(listed, [ids[1].as_str()]);
    // Still a's, still running.
    let seen = raw(a, "tasks/get", json!({"taskId": running}))
        .await
        .unwrap();
    assert_eq!(seen["status"], "working");
    // An upstream task id means nothing to the gateway's clients.
    let upstream_id = worker.created.lock().unwrap().last().unwrap().clone();
    for c in &clients {
        let refused = raw(c, "tasks/get", json!({"taskId": upstream_id}))
            .await
            .unwrap_err();
        assert_eq!(refused.code, code::INVALID_PARAMS);
    }
}

/// Waits until the upstream's task `id` is cancelled (at most 10 s).
async fn cancelled_upstream(worker: &Worker, id: &str) {
    for _ in 0..200 {
        if worker.tasks.status(id) == Some(mcp_protocol::schema::TaskStatus::Cancelled) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!(
        "the upstream's task {id} is {:?}, not cancelled",
        worker.tasks.status(id)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_task_is_cancelled_upstream() {
    let dir = TempDir::new("tasks-cancel");
    let (gateway, worker) = gateway(&dir, json!({"mode": "passthrough"})).await;
    for c in [
        over_http(&gateway, client("handshake", true)).await,
        over_http(&gateway, client("stateless", true)).await,
    ] {
        let id = create(&c, "wait", json!({})).await;
        until(&c, &id, "working").await;
        // The upstream task exists once the host has made it, and the host follows it once
        // the upstream's answer announcing it has arrived: from then on dropping the call
        // cancels it. (A call dropped while that answer is still on its way leaves the
        // upstream's task to its own expiry: the host does not know its id yet.)
        let upstream_id = loop {
            let last = worker.created.lock().unwrap().last().cloned();
            if let Some(last) = last.filter(|l| {
                worker.tasks.status(l) == Some(mcp_protocol::schema::TaskStatus::Working)
            }) && gateway
                .host()
                .tasks()
                .await
                .iter()
                .any(|t| t.task_id == last)
            {
                break last;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        raw(&c, "tasks/cancel", json!({"taskId": id}))
            .await
            .unwrap();
        let got = raw(&c, "tasks/get", json!({"taskId": id})).await.unwrap();
        assert_eq!(got["status"], "cancelled");
        cancelled_upstream(&worker, &upstream_id).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_upstreams_question_reaches_the_tasks_client() {
    let dir = TempDir::new("tasks-input");
    let (gateway, _worker) = gateway(&dir, json!({"mode": "passthrough"})).await;
    // 2026-07-28: the task is input_required with the upstream's question; tasks/update
    // answers it.
    let c = over_http(&gateway, client("stateless", true)).await;
    let id = create(&c, "ask", json!({})).await;
    let waiting = until(&c, &id, "input_required").await;
    let requests = waiting["inputRequests"].as_object().unwrap();
    let (key, request) = requests.iter().next().unwrap();
    assert_eq!(request["method"], "elicitation/create", "{waiting}");
    assert_eq!(request["params"]["message"], "Your name?");
    let answer = json!({"action": "accept", "content": {"name": "Grace"}});
    raw(
        &c,
        "tasks/update",
        json!({"taskId": id, "inputResponses": {key: answer}}),
    )
    .await
    .unwrap();
    assert_eq!(first_text(&result_of(&c, &id).await), "hello Grace");
    // Handshake: the client is asked on its session.
    let c = over_pipe(&gateway, client("handshake", true)).await;
    answer_requests(&c);
    let id = create(&c, "ask", json!({})).await;
    assert_eq!(first_text(&result_of(&c, &id).await), "hello Ada");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stateless_client_without_tasks_is_refused_a_task_only_tool() {
    let dir = TempDir::new("tasks-refused");
    let (gateway, worker) = gateway(&dir, json!({"mode": "passthrough"})).await;
    let c = over_http(&gateway, client("stateless", false)).await;
    let refused = raw(&c, "tools/call", json!({"name": "build", "arguments": {}}))
        .await
        .unwrap_err();
    assert_eq!(refused.code, -32021, "{refused:?}");
    assert_eq!(
        refused.data.unwrap()["requiredCapabilities"]["extensions"][TASKS],
        json!({})
    );
    assert!(worker.created.lock().unwrap().is_empty());
    // A handshake client that does not ask for a task still gets the tool's result: the host
    // runs the upstream task and polls it.
    let c = over_http(&gateway, client("handshake", false)).await;
    let done = raw(
        &c,
        "tools/call",
        json!({"name": "build", "arguments": {"what": "x"}}),
    )
    .await
    .unwrap();
    assert_eq!(first_text(&done), "built x");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn category_and_meta_modes_run_their_calls_as_tasks() {
    let category = json!({
        "mode": "category",
        "categories": {"work": {"description": "Work.", "server": "up", "tools": {"includeNames": ["build"]}}},
    });
    let meta = json!({"mode": "meta"});
    for (name, mode, tool, arguments) in [
        (
            "category",
            category,
            "call-category-tool",
            json!({"category": "work", "name": "build", "args": {"what": "cat"}}),
        ),
        (
            "meta",
            meta,
            "call-tool",
            json!({"server": "up", "tool": "build", "arguments": {"what": "cat"}}),
        ),
    ] {
        let dir = TempDir::new(&format!("tasks-{name}"));
        let (gateway, worker) = gateway(&dir, mode).await;
        for era in ["handshake", "stateless"] {
            let c = over_http(&gateway, client(era, true)).await;
            let caps = serde_json::to_value(&c.server_info().capabilities).unwrap();
            assert_eq!(caps["extensions"][TASKS], json!({}), "{name} {era}: {caps}");
            let listed = raw(&c, "tools/list", json!({})).await.unwrap();
            let own = listed["tools"]
                .as_array()
                .unwrap()
                .iter()
                .find(|t| t["name"] == tool)
                .unwrap();
            assert_eq!(own["execution"]["taskSupport"], "optional", "{name}");
            let id = create(&c, tool, arguments.clone()).await;
            let result = result_of(&c, &id).await;
            assert_eq!(first_text(&result), "built cat", "{name} {era}: {result}");
        }
        assert_eq!(worker.created.lock().unwrap().len(), 2, "{name}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stateless_client_sees_the_upstreams_input_round_before_its_task() {
    let dir = TempDir::new("tasks-compose");
    let (gateway, worker) = gateway(&dir, json!({"mode": "passthrough"})).await;
    let c = over_http(&gateway, client("stateless", true)).await;
    // Round 1: the upstream's input_required, as it came, and no task anywhere yet.
    let call = json!({"name": "compose", "arguments": {}});
    let passing = RequestOptions::DEFAULT
        .passing_input_required()
        .timeout(Duration::from_secs(30));
    let round1 = raw_with(&c, "tools/call", call.clone(), passing)
        .await
        .unwrap();
    assert_eq!(round1["resultType"], "input_required", "{round1}");
    assert_eq!(round1["requestState"], "compose-round-1", "{round1}");
    assert_eq!(
        round1["inputRequests"]["who"]["params"]["message"], "Who is it for?",
        "{round1}"
    );
    assert!(round1.get("taskId").is_none(), "{round1}");
    assert!(worker.created.lock().unwrap().is_empty());
    // Round 2 answers it: now the upstream makes its task, and the client gets the gateway's.
    let mut retry = call;
    retry["requestState"] = round1["requestState"].clone();
    retry["inputResponses"] = json!({"who": {"action": "accept", "content": {"name": "Lin"}}});
    let round2 = raw_with(&c, "tools/call", retry, passing).await.unwrap();
    assert_eq!(round2["resultType"], "task", "{round2}");
    assert!(round2.get("requestState").is_none(), "{round2}");
    assert!(round2.get("inputRequests").is_none(), "{round2}");
    let id = round2["taskId"].as_str().unwrap().to_owned();
    let upstream = worker.created.lock().unwrap().clone();
    assert_eq!(upstream.len(), 1, "one upstream task, made on round 2");
    assert!(!upstream.contains(&id), "{id} is the upstream's");
    // Its result carries the answer given in round 1.
    assert_eq!(first_text(&result_of(&c, &id).await), "composed for Lin");
}

/// With `cluster` and `store` a gateway is one replica among others (its name in the ids it
/// sends, the channels it hears, the heartbeat its tasks live by): a second `serve_http` of
/// it is an error at once, not a second replica holding the same tasks and suspended calls,
/// and the first goes on serving.
#[tokio::test]
async fn a_gateway_with_cluster_and_store_serves_http_once() {
    let dir = TempDir::new("tasks-served-once");
    let file = json!({
        "mode": "passthrough",
        "mcpServers": {},
        "logFile": dir.path().join("gateway.log"),
        "cluster": {"sessionKeys": ["MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="]},
        // Nothing listens there: the shares start all the same, and say so.
        "store": {"redis": "redis://127.0.0.1:1"},
    });
    let path = dir.path().join("gateway.json");
    std::fs::write(&path, serde_json::to_vec(&file).unwrap()).unwrap();
    let gateway = load_and_start(&path).await;
    let serve = |gateway: Gateway| async move {
        let (listener, addr) = mcp_http::bind("127.0.0.1:0".parse().unwrap())
            .await
            .unwrap();
        let config = mcp_http::HttpServerConfig::new(gateway.server_config());
        (addr, tokio::spawn(gateway.serve_http(listener, config)))
    };
    let (addr, first) = serve(gateway.clone()).await;
    // The first serves: a request is answered (after the shares started).
    let status = loop {
        if let Some(status) = status_of(addr, "GET /nowhere").await {
            break status;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert!(status.starts_with("HTTP/1.1 404"), "{status}");
    let (_, second) = serve(gateway.clone()).await;
    let refused = tokio::time::timeout(Duration::from_secs(30), second)
        .await
        .expect("the second serve ends at once")
        .unwrap()
        .expect_err("a second serve with cluster and store");
    assert!(
        refused.to_string().contains("serves one listener"),
        "{refused}"
    );
    assert!(!first.is_finished());
    let status = status_of(addr, "GET /nowhere").await.unwrap();
    assert!(status.starts_with("HTTP/1.1 404"), "{status}");
    first.abort();
}

/// The status line of a bare HTTP/1.1 request to `addr`, or `None` when it is not answered.
async fn status_of(addr: std::net::SocketAddr, request_line: &str) -> Option<String> {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let mut stream = tokio::net::TcpStream::connect(addr).await.ok()?;
    let request = format!("{request_line} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.ok()?;
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).await.ok()?;
    let answer = String::from_utf8_lossy(&answer);
    answer
        .lines()
        .next()
        .map(str::to_owned)
        .filter(|l| !l.is_empty())
}
