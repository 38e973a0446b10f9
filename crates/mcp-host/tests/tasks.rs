//! The host as a task client (issue 26), against an in-process server of both eras that keeps
//! its own tasks: a tool that requires a task is exposed and its call runs as one, polled to
//! its end with its status on the call's progress channel; an optional one runs as a task when
//! the entry or the caller's wait says so; a dropped call cancels its task; input a task needs
//! is answered through the host's handler; a failed task names the server, the tool and the
//! phase; the tasks are kept on disk and a new host asks about the unfinished ones.

// Test code: an unwrap that fails is a failed test, with its location.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_host::permission::AllowAll;
use mcp_host::{CallOptions, Connect, Host, HostEvent, HostOptions, ServerEntry, ServerState};
use mcp_protocol::schema::{
    ClientRequest, ContentBlock, Implementation, ServerCapabilities, TASKS_EXTENSION_ID,
    TaskStatus, declares_tasks_extension,
};
use mcp_protocol::{Era, ErrorObject, JsonObject, RawJson, RequestOptions, code};
use mcp_session::{Handler, RequestContext};
use serde_json::{Value, json};
use tokio::sync::Notify;

/// One task the server runs.
struct Job {
    tool: String,
    name: String,
    status: &'static str,
    message: Option<String>,
    /// Polls left before a `build` completes.
    polls_left: u32,
    /// Released by the test: a `slow` task completes on its next poll.
    released: bool,
    /// The answer an `ask` task got.
    answer: Option<String>,
    /// How many times `tasks/get` asked about it.
    polled: u32,
}

#[derive(Default)]
struct State {
    next: u32,
    jobs: BTreeMap<String, Job>,
    /// Task ids `tasks/cancel` named.
    cancelled: Vec<String>,
    /// Tool names of calls answered without a task.
    plain: Vec<String>,
    /// Release every `slow` task.
    release_slow: bool,
}

/// The server: `build` (required: completes after two polls), `forever` (required: never ends
/// unless cancelled), `slow` (required: ends once released), `ask` (required: needs a name
/// first), `broken` (required: fails with a protocol error), `maybe` (optional) and `plain`.
#[derive(Clone, Default)]
struct Jobs {
    state: Arc<Mutex<State>>,
    changed: Arc<Notify>,
}

fn tool(name: &str, support: Option<&str>) -> Value {
    let mut tool = json!({"name": name, "inputSchema": {"type": "object"}});
    if let Some(support) = support {
        tool["execution"] = json!({"taskSupport": support});
    }
    tool
}

fn text_result(text: &str) -> Value {
    json!({"content": [{"type": "text", "text": text}]})
}

impl Jobs {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap()
    }

    /// The task as the era shows it, with what `tasks/get` inlines in 2026-07-28.
    fn show(&self, id: &str, era: Option<Era>, detailed: bool) -> Value {
        let state = self.state();
        let job = &state.jobs[id];
        let mut task = json!({
            "taskId": id,
            "status": job.status,
            "createdAt": "2026-11-26T10:00:00Z",
            "lastUpdatedAt": "2026-11-26T10:00:01Z",
        });
        if let Some(message) = &job.message {
            task["statusMessage"] = json!(message);
        }
        if era == Some(Era::Stateless) {
            task["ttlMs"] = json!(3_600_000);
            task["pollIntervalMs"] = json!(100);
            if detailed {
                match (job.status, job.tool.as_str()) {
                    ("completed", _) => task["result"] = self.result_of(job),
                    ("failed", _) => {
                        task["error"] = json!({"code": -32603, "message": "disk full"});
                    }
                    ("input_required", _) => {
                        task["inputRequests"] = json!({"who": {
                            "method": "elicitation/create",
                            "params": {"message": "who builds?", "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}}},
                        }});
                    }
                    _ => {}
                }
            }
        } else {
            task["ttl"] = json!(3_600_000);
            task["pollInterval"] = json!(100);
        }
        task
    }

    fn result_of(&self, job: &Job) -> Value {
        match job.tool.as_str() {
            "ask" => text_result(&format!(
                "answered by {}",
                job.answer.as_deref().unwrap_or("nobody")
            )),
            "maybe" => text_result("maybe as a task"),
            _ => text_result(&format!("built {}", job.name)),
        }
    }

    /// Moves a task on by one poll.
    fn poll(&self, id: &str) {
        let mut state = self.state();
        let release = state.release_slow;
        let Some(job) = state.jobs.get_mut(id) else {
            return;
        };
        if job.status != "working" {
            return;
        }
        match job.tool.as_str() {
            "build" | "maybe" => {
                if job.polls_left == 0 {
                    job.status = "completed";
                    job.message = None;
                } else {
                    job.polls_left -= 1;
                }
            }
            "slow" if release || job.released => job.status = "completed",
            "ask" if job.answer.is_none() => job.status = "input_required",
            "ask" => job.status = "completed",
            "broken" => job.status = "failed",
            _ => {}
        }
    }

    fn create(&self, tool: &str, name: &str) -> String {
        let mut state = self.state();
        state.next += 1;
        let id = format!("task-{}", state.next);
        state.jobs.insert(
            id.clone(),
            Job {
                tool: tool.to_owned(),
                name: name.to_owned(),
                status: "working",
                message: Some("compiling".to_owned()),
                polls_left: 2,
                released: false,
                answer: None,
                polled: 0,
            },
        );
        drop(state);
        self.changed.notify_waiters();
        id
    }

    /// Waits until `check` holds of the state.
    async fn until(&self, mut check: impl FnMut(&State) -> bool) {
        loop {
            let changed = self.changed.notified();
            if check(&self.state()) {
                return;
            }
            tokio::time::timeout(Duration::from_secs(10), changed)
                .await
                .expect("the server's state did not change as expected");
        }
    }
}

fn task_id_of(params: &Value) -> String {
    params["taskId"].as_str().unwrap_or_default().to_owned()
}

impl Handler for Jobs {
    async fn handle(
        &self,
        request: ClientRequest,
        context: RequestContext,
    ) -> Result<RawJson, ErrorObject> {
        let era = context.era;
        let not_found = |id: &str| ErrorObject::new(code::INVALID_PARAMS, format!("no task {id}"));
        let value = match request {
            ClientRequest::ListTools(_) => json!({"tools": [
                tool("build", Some("required")),
                tool("forever", Some("required")),
                tool("slow", Some("required")),
                tool("ask", Some("required")),
                tool("broken", Some("required")),
                tool("maybe", Some("optional")),
                tool("plain", None),
            ]}),
            ClientRequest::CallTool(call) => {
                let asked = match era {
                    Some(Era::Stateless) => context
                        .client
                        .as_ref()
                        .and_then(|c| serde_json::to_value(&c.capabilities).ok())
                        .and_then(|c| c.as_object().cloned())
                        .is_some_and(|c| declares_tasks_extension(&c)),
                    _ => call.task.is_some(),
                };
                let name = call
                    .arguments
                    .as_ref()
                    .and_then(|a| a.get("name"))
                    .and_then(Value::as_str)
                    .unwrap_or("it")
                    .to_owned();
                let optional = call.name == "maybe" || call.name == "plain";
                if !asked || call.name == "plain" {
                    if !optional {
                        return Err(ErrorObject::new(
                            code::METHOD_NOT_FOUND,
                            format!("{} runs only as a task", call.name),
                        ));
                    }
                    self.state().plain.push(call.name.clone());
                    self.changed.notify_waiters();
                    text_result(&format!("{} plain", call.name))
                } else {
                    let id = self.create(&call.name, &name);
                    let task = self.show(&id, era, false);
                    match era {
                        Some(Era::Stateless) => {
                            let mut task = task;
                            task["resultType"] = json!("task");
                            task
                        }
                        _ => json!({"task": task}),
                    }
                }
            }
            ClientRequest::GetTask(params) => {
                let id = params.task_id.clone();
                if !self.state().jobs.contains_key(&id) {
                    return Err(not_found(&id));
                }
                self.poll(&id);
                if let Some(job) = self.state().jobs.get_mut(&id) {
                    job.polled += 1;
                }
                self.changed.notify_waiters();
                self.show(&id, era, true)
            }
            ClientRequest::UpdateTask(params) => {
                let id = params.task_id.clone();
                let answer = params
                    .input_responses
                    .get("who")
                    .map(|r| r["content"]["name"].as_str().unwrap_or("nobody").to_owned());
                let mut state = self.state();
                let Some(job) = state.jobs.get_mut(&id) else {
                    return Err(not_found(&id));
                };
                job.answer = answer;
                job.status = "working";
                json!({})
            }
            ClientRequest::CancelTask(params) => {
                let id = params.task_id.clone();
                {
                    let mut state = self.state();
                    let Some(job) = state.jobs.get_mut(&id) else {
                        return Err(not_found(&id));
                    };
                    job.status = "cancelled";
                    state.cancelled.push(id.clone());
                }
                self.changed.notify_waiters();
                match era {
                    Some(Era::Stateless) => json!({}),
                    _ => self.show(&id, era, false),
                }
            }
            ClientRequest::ListTasks(_) => {
                let ids: Vec<String> = self.state().jobs.keys().cloned().collect();
                let tasks: Vec<Value> = ids.iter().map(|id| self.show(id, era, false)).collect();
                json!({"tasks": tasks})
            }
            ClientRequest::GetTaskPayload(params) => {
                let id = task_id_of(&serde_json::to_value(&params).unwrap());
                let (tool, status) = {
                    let state = self.state();
                    let Some(job) = state.jobs.get(&id) else {
                        return Err(not_found(&id));
                    };
                    (job.tool.clone(), job.status)
                };
                if tool == "ask" && status == "input_required" {
                    let ask = json!({"message": "who builds?", "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}}});
                    let answer = context
                        .peer
                        .request_raw(
                            "elicitation/create",
                            RawJson::encode(&ask).ok(),
                            RequestOptions::DEFAULT,
                        )
                        .await
                        .map_err(|e| ErrorObject::new(code::INTERNAL_ERROR, e.to_string()))?;
                    let name = answer.decode::<Value>().unwrap()["content"]["name"]
                        .as_str()
                        .unwrap_or("nobody")
                        .to_owned();
                    let mut state = self.state();
                    let job = state.jobs.get_mut(&id).unwrap();
                    job.answer = Some(name);
                    job.status = "completed";
                }
                let state = self.state();
                let job = &state.jobs[&id];
                match job.status {
                    "failed" => {
                        return Err(ErrorObject::new(code::INTERNAL_ERROR, "disk full".into()));
                    }
                    "completed" => self.result_of(job),
                    other => {
                        return Err(ErrorObject::new(
                            code::INTERNAL_ERROR,
                            format!("this test server does not block ({other})"),
                        ));
                    }
                }
            }
            other => {
                return Err(ErrorObject::new(
                    code::METHOD_NOT_FOUND,
                    other.method().to_owned(),
                ));
            }
        };
        Ok(RawJson::encode(&value).unwrap())
    }
}

/// Serves `jobs` over Streamable HTTP in both eras; returns entries pinned to 2025-11-25
/// (`old`) and free to settle on 2026-07-28 (`new`).
async fn serve(jobs: Jobs) -> (ServerEntry, ServerEntry) {
    let mut server =
        mcp_protocol::ServerConfig::dual_era(Implementation::new("jobs".into(), "1".into()));
    let capabilities = json!({
        "tools": {},
        "tasks": {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}},
        "extensions": {TASKS_EXTENSION_ID: {}},
    });
    server.capabilities = serde_json::from_value::<ServerCapabilities>(capabilities).unwrap();
    let (listener, addr) = mcp_http::bind("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    tokio::spawn(mcp_http::serve_http(
        listener,
        mcp_http::HttpServerConfig::new(server),
        jobs,
    ));
    let url = format!("http://127.0.0.1:{}/mcp", addr.port());
    let entry = |id: &str| {
        let mut entry = ServerEntry::new(
            id,
            Connect::Http(mcp_http::HttpConfig::new(id, url.clone())),
        );
        entry.request_timeout = Duration::from_secs(10);
        entry
    };
    let mut old = entry("old");
    old.protocol_version = Some(mcp_protocol::ProtocolVersion::V2025_11_25);
    (old, entry("new"))
}

/// Answers elicitation with the name `Ada`.
struct Names;

impl mcp_host::ServerRequestHandler for Names {
    fn capabilities(&self) -> mcp_protocol::schema::ClientCapabilities {
        serde_json::from_value(json!({"elicitation": {"form": {}}})).unwrap()
    }

    fn handle<'a>(
        &'a self,
        _server: &'a str,
        request: mcp_protocol::schema::ServerRequest,
    ) -> std::pin::Pin<Box<dyn Future<Output = Result<RawJson, ErrorObject>> + Send + 'a>> {
        Box::pin(async move {
            assert_eq!(request.method(), "elicitation/create");
            Ok(RawJson::encode(&json!({"action": "accept", "content": {"name": "Ada"}})).unwrap())
        })
    }
}

fn options() -> HostOptions {
    let mut o = HostOptions::new(
        Implementation::new("tasks-test".into(), "0".into()),
        Arc::new(AllowAll),
    );
    o.requests = Some(Arc::new(Names));
    o
}

fn args(name: &str) -> JsonObject {
    let mut args = JsonObject::new();
    args.insert("name".into(), json!(name));
    args
}

fn text(output: &mcp_host::ToolOutput) -> String {
    output
        .result
        .content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text(t) => Some(t.text.as_str()),
            _ => None,
        })
        .collect()
}

async fn started(entries: Vec<ServerEntry>, options: HostOptions) -> Host {
    let ids: Vec<String> = entries.iter().map(|e| e.id.clone()).collect();
    let host = Host::new(options);
    host.start(entries).await;
    for id in ids {
        let status = host.server_status(&id).unwrap();
        assert_eq!(status.state, ServerState::Ready, "{status:?}");
    }
    host
}

/// In each era: the tools that require a task are in the catalogue, marked; a call of one
/// runs as a task to its result, its status on the call's progress channel; the task is kept;
/// an optional tool runs plainly unless the entry or the caller's longer wait says otherwise.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn required_and_optional_tools_run_as_tasks_in_both_eras() {
    let jobs = Jobs::default();
    let (old, new) = serve(jobs.clone()).await;
    let mut eager = new.clone();
    eager.id = "eager".into();
    eager.optional_tools_as_tasks = true;
    let host = started(vec![old, new, eager], options()).await;
    assert_eq!(host.server_status("old").unwrap().era, Some(Era::Handshake));
    assert_eq!(host.server_status("new").unwrap().era, Some(Era::Stateless));
    for server in ["old", "new"] {
        let catalog = host.catalog();
        let tools: Vec<_> = catalog.server_tools(server).collect();
        let build = tools.iter().find(|t| t.tool == "build").unwrap();
        assert!(build.runs_as_task, "{server}");
        assert!(
            build.description.contains("runs as a task"),
            "{}",
            build.description
        );
        let maybe = tools.iter().find(|t| t.tool == "maybe").unwrap();
        assert!(!maybe.runs_as_task);

        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let output = host
            .call_tool(
                server,
                "build",
                args(server),
                CallOptions::default().progress(tx),
            )
            .await
            .unwrap();
        assert_eq!(text(&output), format!("built {server}"));
        let mut said = Vec::new();
        while let Ok(p) = rx.try_recv() {
            said.push(p.message.unwrap_or_default());
        }
        assert_eq!(
            said,
            ["task working: compiling", "task completed"],
            "{server}"
        );
        let kept = host.tasks().await;
        let task = kept
            .iter()
            .find(|t| t.server == server && t.tool == "build")
            .unwrap_or_else(|| panic!("{kept:?}"));
        assert_eq!(task.state, TaskStatus::Completed);

        // Optional: plainly by default; as a task when the caller waits longer than the
        // server's request timeout.
        let plain = host
            .call_tool(server, "maybe", JsonObject::new(), CallOptions::default())
            .await
            .unwrap();
        assert_eq!(text(&plain), "maybe plain");
        let long = host
            .call_tool(
                server,
                "maybe",
                JsonObject::new(),
                CallOptions::default().timeout(Duration::from_secs(60)),
            )
            .await
            .unwrap();
        assert_eq!(text(&long), "maybe as a task");
    }
    let eager = host
        .call_tool("eager", "maybe", JsonObject::new(), CallOptions::default())
        .await
        .unwrap();
    assert_eq!(text(&eager), "maybe as a task");
    // A tool that allows no task is never sent as one.
    let plain = host
        .call_tool("eager", "plain", JsonObject::new(), CallOptions::default())
        .await
        .unwrap();
    assert_eq!(text(&plain), "plain plain");
    assert_eq!(jobs.state().plain, ["maybe", "maybe", "plain"]);
    host.shutdown().await;
}

/// Dropping a call whose task has not ended sends `tasks/cancel` for it, in each era.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_call_cancels_its_task() {
    let jobs = Jobs::default();
    let (old, new) = serve(jobs.clone()).await;
    let host = started(vec![old, new], options()).await;
    for (n, server) in ["old", "new"].into_iter().enumerate() {
        let call = host.call_tool(server, "forever", args("x"), CallOptions::default());
        // Polled once: the host has the task's id.
        let created = jobs.until(|s| s.jobs.values().filter(|j| j.polled > 0).count() > n);
        tokio::select! {
            _ = call => panic!("a task that never ends ended"),
            () = created => {}
        }
        // The call's future is gone: its task is cancelled.
        jobs.until(|s| s.cancelled.len() > n).await;
        let state = jobs.state();
        let id = &state.cancelled[n];
        assert_eq!(state.jobs[id].tool, "forever");
        assert_eq!(state.jobs[id].status, "cancelled");
    }
    host.shutdown().await;
}

/// A task that needs input gets it from the host's request handler: through `tasks/result`
/// in 2025-11-25, through `tasks/update` in 2026-07-28.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_that_needs_input_is_answered_by_the_handler() {
    let jobs = Jobs::default();
    let (old, new) = serve(jobs.clone()).await;
    let host = started(vec![old, new], options()).await;
    for server in ["old", "new"] {
        // Bounded, so that a host that never answers fails here instead of hanging.
        let call = host.call_tool(server, "ask", JsonObject::new(), CallOptions::default());
        let output = tokio::time::timeout(Duration::from_secs(10), call)
            .await
            .expect("the task's input was never answered")
            .unwrap();
        assert_eq!(text(&output), "answered by Ada", "{server}");
    }
    host.shutdown().await;
}

/// A task that fails is an error naming the server, the tool, the task and the phase, with
/// what the server said.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_task_names_the_server_the_tool_and_the_phase() {
    let jobs = Jobs::default();
    let (old, new) = serve(jobs.clone()).await;
    let host = started(vec![old, new], options()).await;
    for server in ["old", "new"] {
        let error = host
            .call_tool(server, "broken", JsonObject::new(), CallOptions::default())
            .await
            .unwrap_err()
            .to_string();
        assert!(error.contains(&format!("server `{server}`")), "{error}");
        assert!(error.contains("broken (task task-"), "{error}");
        assert!(error.contains("disk full"), "{error}");
        let phase = if server == "old" {
            "tasks/result"
        } else {
            "result"
        };
        assert!(error.contains(&format!(", {phase})")), "{error}");
    }
    host.shutdown().await;
}

/// Tasks are kept on disk: a call that outlives the host's longest call leaves its task
/// running and kept; a new host with the same file asks the server about it when it connects
/// (seeing it completed), fetches its result, and cancels another by id.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tasks_are_kept_on_disk_and_a_new_host_picks_them_up() {
    let dir = mcp_testkit::TempDir::new("tasks-kept");
    let file = dir.path().join("tasks.json");
    let jobs = Jobs::default();
    let (old, new) = serve(jobs.clone()).await;
    let mut first = options();
    first.task_file = Some(file.clone());
    first.max_call_duration = Duration::from_millis(250);
    let host = started(vec![old.clone(), new.clone()], first).await;
    for server in ["old", "new"] {
        let error = host
            .call_tool(server, "slow", args(server), CallOptions::default())
            .await
            .unwrap_err()
            .to_string();
        assert!(error.contains("keeps running"), "{error}");
        assert!(
            error.contains(&format!("mcp-host tasks result {server}")),
            "{error}"
        );
    }
    host.shutdown().await;
    assert!(jobs.state().cancelled.is_empty());
    let kept = std::fs::read_to_string(&file).unwrap();
    assert!(
        kept.contains("\"slow\"") && kept.contains("\"working\""),
        "{kept}"
    );

    // The server finishes them while no host runs.
    jobs.state().release_slow = true;
    let mut second = options();
    second.task_file = Some(file.clone());
    let host = Host::new(second);
    let mut events = host.subscribe(None, Some(&["task"]));
    host.start(vec![old, new]).await;
    let mut completed = BTreeMap::new();
    while completed.len() < 2 {
        let event = tokio::time::timeout(Duration::from_secs(10), events.recv())
            .await
            .expect("the kept tasks were not asked about")
            .unwrap();
        if let HostEvent::Task { server, task } = event
            && task.state == TaskStatus::Completed
        {
            completed.insert(server, task);
        }
    }
    for (server, task) in &completed {
        assert_eq!(task.tool, "slow");
        let output = host
            .task_result(server, &task.task_id, CallOptions::default())
            .await
            .unwrap();
        assert_eq!(text(&output), format!("built {server}"));
        let status = host.task(server, &task.task_id).await.unwrap();
        assert_eq!(status.state, TaskStatus::Completed);
    }
    let listed = host.tasks().await;
    assert_eq!(listed.len(), 2, "{listed:?}");
    assert!(listed.iter().all(|t| t.state == TaskStatus::Completed));

    // Cancelled by id, as `mcp-host tasks cancel` does; 2025-11-25 also lists tasks.
    for server in ["old", "new"] {
        let id = jobs.create("forever", "x");
        let cancelled = host.cancel_task(server, &id).await.unwrap();
        assert_eq!(cancelled.state, TaskStatus::Cancelled, "{server}");
        assert!(jobs.state().cancelled.contains(&id));
    }
    let listed = host.server_tasks("old").await.unwrap();
    assert!(
        listed
            .iter()
            .any(|t| t.tool == "slow" && t.state == TaskStatus::Completed),
        "{listed:?}"
    );
    let error = host.server_tasks("new").await.unwrap_err().to_string();
    assert!(error.contains("do not list their tasks"), "{error}");
    host.shutdown().await;
}
