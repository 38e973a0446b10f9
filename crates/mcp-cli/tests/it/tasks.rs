//! `mcp-host tasks …` after the process that started the task is gone: a `call` of a tool that
//! requires a task, killed while the task runs, leaves it in `tasks.json`; `tasks list` asks
//! the server about it again, `tasks result` waits for and prints its result, `tasks cancel`
//! cancels another. The server is mcp-session's task runtime over Streamable HTTP, in the
//! era the host chooses by itself (2026-07-28, where knowing a task's id is what lets a
//! client see it).

use std::sync::Arc;
use std::time::Duration;

use mcp_protocol::schema::{
    CallToolResult, ClientRequest, ContentBlock, Implementation, ServerCapabilities, TaskStatus,
};
use mcp_protocol::{ErrorObject, RawJson, code};
use mcp_session::{Handler, RequestContext, TaskOptions, Tasks};
use serde_json::{Value, json};

use crate::User;

/// `build` completes once the test opens the gate; `sleep` never ends by itself. Both run
/// only as tasks.
#[derive(Clone)]
struct Jobs {
    tasks: Tasks,
    gate: Arc<tokio::sync::watch::Sender<bool>>,
}

impl Handler for Jobs {
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
                let tool = |name: &str| json!({"name": name, "inputSchema": {"type": "object"}, "execution": {"taskSupport": "required"}});
                RawJson::encode(&json!({"tools": [tool("build"), tool("sleep")]}))
                    .map_err(|e| ErrorObject::new(code::INTERNAL_ERROR, e.to_string()))
            }
            ClientRequest::CallTool(call) => {
                if !Tasks::accepts(&context, call.task.as_ref()) {
                    return Err(Tasks::required_error());
                }
                let mut gate = self.gate.subscribe();
                let sleeps = call.name == "sleep";
                self.tasks.create(&context, move |task| async move {
                    task.status_message("compiling");
                    if sleeps {
                        std::future::pending::<()>().await;
                    }
                    let _ = gate.wait_for(|open| *open).await;
                    let done = CallToolResult::new(vec![ContentBlock::text("built at last")]);
                    RawJson::encode(&done)
                        .map_err(|e| ErrorObject::new(code::INTERNAL_ERROR, e.to_string()))
                })
            }
            other => Err(ErrorObject::new(
                code::METHOD_NOT_FOUND,
                other.method().to_owned(),
            )),
        }
    }
}

/// Serves the jobs on a loopback port; returns the URL and the gate.
async fn serve(tasks: Tasks) -> (String, Arc<tokio::sync::watch::Sender<bool>>) {
    let mut server =
        mcp_protocol::ServerConfig::dual_era(Implementation::new("jobs".into(), "1".into()));
    server.capabilities = serde_json::from_value::<ServerCapabilities>(json!({
        "tools": {},
        "tasks": {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}},
        "extensions": {"io.modelcontextprotocol/tasks": {}},
    }))
    .unwrap();
    let gate = Arc::new(tokio::sync::watch::channel(false).0);
    let jobs = Jobs {
        tasks,
        gate: Arc::clone(&gate),
    };
    let (listener, addr) = mcp_http::bind("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    tokio::spawn(mcp_http::serve_http(
        listener,
        mcp_http::HttpServerConfig::new(server),
        jobs,
    ));
    (format!("http://127.0.0.1:{}/mcp", addr.port()), gate)
}

/// Starts `mcp-host call jobs TOOL`, waits until it has kept the task it started, kills it,
/// and returns the task's id.
fn started_then_killed(u: &User, tool: &str, tasks: &Tasks) -> String {
    let file = u.global_file().with_file_name("tasks.json");
    let before = std::fs::read_to_string(&file).unwrap_or_default();
    let mut child = u
        .command(&["call", "jobs", tool, "--yes"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut id = None;
    let found = mcp_testkit::wait_until(Duration::from_secs(20), || {
        let now = std::fs::read_to_string(&file).unwrap_or_default();
        let Ok(kept) = serde_json::from_str::<Value>(&now) else {
            return false;
        };
        id = kept["tasks"].as_array().and_then(|tasks| {
            tasks
                .iter()
                .filter(|t| t["tool"] == tool && !before.contains(t["taskId"].as_str().unwrap()))
                .find_map(|t| t["taskId"].as_str().map(str::to_owned))
        });
        id.is_some()
    });
    let _ = child.kill();
    let _ = child.wait();
    assert!(
        found,
        "`mcp-host call jobs {tool}` kept no task in {file:?}"
    );
    let id = id.unwrap();
    // The server runs it, and nobody cancelled it with the process.
    assert_eq!(tasks.status(&id), Some(TaskStatus::Working));
    id
}

#[test]
fn tasks_outlive_the_process_that_started_them() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let tasks = Tasks::new(TaskOptions::new().poll_interval(Duration::from_millis(100)));
    let (url, gate) = runtime.block_on(serve(tasks.clone()));
    let u = User::new();
    u.write_global(&json!({"version": 1, "mcp": {"servers": {"jobs": {
        "transport": "http", "url": url,
    }}}}));
    let tools = u.run(&["tools", "jobs"]);
    tools.code(0).out_has("runs as a task");

    let build = started_then_killed(&u, "build", &tasks);
    let list = u.run(&["tasks", "list", "--json"]);
    let listed = list.code(0).json();
    assert_eq!(listed["tasks"][0]["taskId"], build.as_str(), "{listed}");
    assert_eq!(listed["tasks"][0]["tool"], "build");
    assert_eq!(listed["tasks"][0]["status"], "working");
    assert_eq!(listed["tasks"][0]["statusMessage"], "compiling");

    // It ends while no process of ours runs: `tasks list` asks the server again.
    gate.send_replace(true);
    assert!(mcp_testkit::wait_until(Duration::from_secs(10), || {
        tasks.status(&build) == Some(TaskStatus::Completed)
    }));
    let listed = u.run(&["tasks", "list", "--json"]).code(0).json();
    assert_eq!(listed["tasks"][0]["status"], "completed", "{listed}");
    u.run(&["tasks", "result", "jobs", &build])
        .code(0)
        .out_has("built at last");
    u.run(&["tasks", "get", "jobs", &build])
        .code(0)
        .out_has("completed");

    let sleep = started_then_killed(&u, "sleep", &tasks);
    u.run(&["tasks", "cancel", "jobs", &sleep])
        .code(0)
        .out_has("cancelled");
    assert_eq!(tasks.status(&sleep), Some(TaskStatus::Cancelled));
    let listed = u.run(&["tasks", "list", "jobs", "--json"]).code(0).json();
    let mut statuses: Vec<(&str, &str)> = listed["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["tool"].as_str().unwrap(), t["status"].as_str().unwrap()))
        .collect();
    statuses.sort_unstable();
    assert_eq!(statuses, [("build", "completed"), ("sleep", "cancelled")]);

    // A task the server does not know is an error naming the server and the phase.
    let unknown = u.run(&["tasks", "get", "jobs", "no-such-task"]);
    assert_ne!(unknown.code, 0);
    assert!(
        unknown.stderr.contains("server `jobs`") && unknown.stderr.contains("tasks/get"),
        "{}",
        unknown.stderr
    );
}
