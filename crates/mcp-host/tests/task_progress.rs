//! Progress a server sends for a task after its `tools/call` was answered with the task
//! reaches the caller's progress channel (the call's progress token is valid until the task
//! reaches a terminal status), against mcp-session's task runtime (`TaskContext::progress`)
//! over Streamable HTTP, MCP 2025-11-25; and a status the server announces with
//! `notifications/tasks/status` is taken at once, without waiting for the next poll. The host
//! asks for a time to live tied to its longest call.

// Test code: an unwrap that fails is a failed test, with its location.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use mcp_host::permission::AllowAll;
use mcp_host::{CallOptions, Connect, Host, HostOptions, ServerEntry, ServerState};
use mcp_protocol::schema::{
    CallToolResult, ClientRequest, ContentBlock, Implementation, ServerCapabilities,
};
use mcp_protocol::{ErrorObject, JsonObject, RawJson, code};
use mcp_session::{Handler, RequestContext, TaskOptions, Tasks};
use serde_json::json;
use tokio::sync::watch;

/// `build` runs only as a task: once `go` reaches 1 it reports progress with the call's
/// token, and once `go` reaches 2 it completes.
#[derive(Clone)]
struct Builder {
    tasks: Tasks,
    go: Arc<watch::Sender<u8>>,
    /// How many `tasks/get` came.
    polls: Arc<AtomicUsize>,
    /// The time to live the last call asked for.
    ttl: Arc<std::sync::Mutex<Option<u64>>>,
}

impl Handler for Builder {
    async fn handle(
        &self,
        request: ClientRequest,
        context: RequestContext,
    ) -> Result<RawJson, ErrorObject> {
        if matches!(request, ClientRequest::GetTask(_)) {
            self.polls.fetch_add(1, Ordering::SeqCst);
        }
        if let Some(answer) = self.tasks.answer(&request, &context).await {
            return answer;
        }
        match request {
            ClientRequest::ListTools(_) => RawJson::encode(&json!({"tools": [{
                "name": "build", "inputSchema": {"type": "object"},
                "execution": {"taskSupport": "required"}}]}))
            .map_err(|e| ErrorObject::new(code::INTERNAL_ERROR, e.to_string())),
            ClientRequest::CallTool(call) => {
                if !Tasks::accepts(&context, call.task.as_ref()) {
                    return Err(Tasks::required_error());
                }
                *self.ttl.lock().unwrap() = call.task.as_ref().and_then(|t| t.get("ttl")?.as_u64());
                let mut go = self.go.subscribe();
                self.tasks.create(&context, move |task| async move {
                    let _ = go.wait_for(|n| *n >= 1).await;
                    task.progress(1, Some(2), Some("linking"));
                    let _ = go.wait_for(|n| *n >= 2).await;
                    let done = CallToolResult::new(vec![ContentBlock::text("built")]);
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

async fn serve(builder: Builder) -> ServerEntry {
    let mut server =
        mcp_protocol::ServerConfig::dual_era(Implementation::new("builder".into(), "1".into()));
    server.capabilities = serde_json::from_value::<ServerCapabilities>(json!({
        "tools": {},
        "tasks": {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}},
    }))
    .unwrap();
    let (listener, addr) = mcp_http::bind("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    tokio::spawn(mcp_http::serve_http(
        listener,
        mcp_http::HttpServerConfig::new(server),
        builder,
    ));
    let url = format!("http://127.0.0.1:{}/mcp", addr.port());
    let mut entry = ServerEntry::new("b", Connect::Http(mcp_http::HttpConfig::new("b", url)));
    entry.request_timeout = Duration::from_secs(10);
    entry.protocol_version = Some(mcp_protocol::ProtocolVersion::V2025_11_25);
    entry
}

/// The server's progress, sent after the call was answered with a task, reaches the caller
/// between the task's statuses.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_after_the_task_answer_reaches_the_caller() {
    let go = Arc::new(watch::channel(0u8).0);
    let ttl = Arc::new(std::sync::Mutex::new(None));
    let entry = serve(Builder {
        tasks: Tasks::default(),
        go: Arc::clone(&go),
        polls: Arc::default(),
        ttl: Arc::clone(&ttl),
    })
    .await;
    let host = Host::new(HostOptions::new(
        Implementation::new("progress-test".into(), "0".into()),
        Arc::new(AllowAll),
    ));
    host.start(vec![entry]).await;
    assert_eq!(host.server_status("b").unwrap().state, ServerState::Ready);

    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let call = {
        let host = host.clone();
        tokio::spawn(async move {
            host.call_tool(
                "b",
                "build",
                JsonObject::new(),
                CallOptions::default().progress(tx),
            )
            .await
        })
    };
    let mut said = Vec::new();
    let mut next = async || {
        let p = tokio::time::timeout(Duration::from_secs(10), rx.recv())
            .await
            .expect("progress within 10 s")
            .expect("the channel is open");
        p.message.unwrap_or_default()
    };
    // The host's own report that the task was created: the call has been answered.
    said.push(next().await);
    assert_eq!(said, ["task working"]);
    go.send_replace(1);
    said.push(next().await);
    assert_eq!(said, ["task working", "linking"], "the server's progress");
    go.send_replace(2);
    let output = call.await.unwrap().unwrap();
    assert_eq!(output.result.content.len(), 1);
    // The host asked for its longest call (10 minutes by default) and an hour more.
    assert_eq!(*ttl.lock().unwrap(), Some((600 + 3600) * 1000));
    host.shutdown().await;
}

/// The server suggests polling once a minute (the host waits 5 s at most); the task's
/// completion, announced with `notifications/tasks/status`, ends the call with no poll at all.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_announced_status_is_taken_without_waiting_for_a_poll() {
    let go = Arc::new(watch::channel(0u8).0);
    let polls = Arc::new(AtomicUsize::new(0));
    let entry = serve(Builder {
        tasks: Tasks::new(TaskOptions::new().poll_interval(Duration::from_secs(60))),
        go: Arc::clone(&go),
        polls: Arc::clone(&polls),
        ttl: Arc::default(),
    })
    .await;
    let host = Host::new(HostOptions::new(
        Implementation::new("status-test".into(), "0".into()),
        Arc::new(AllowAll),
    ));
    host.start(vec![entry]).await;
    assert_eq!(host.server_status("b").unwrap().state, ServerState::Ready);
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let call = {
        let host = host.clone();
        tokio::spawn(async move {
            host.call_tool(
                "b",
                "build",
                JsonObject::new(),
                CallOptions::default().progress(tx),
            )
            .await
        })
    };
    let mut said = Vec::new();
    for step in 1..=2 {
        let p = rx.recv().await.expect("the channel is open");
        said.push(p.message.unwrap_or_default());
        go.send_replace(step);
    }
    let output = call.await.unwrap().unwrap();
    assert_eq!(output.result.content.len(), 1);
    while let Ok(p) = rx.try_recv() {
        said.push(p.message.unwrap_or_default());
    }
    assert_eq!(said, ["task working", "linking", "task completed"]);
    assert_eq!(polls.load(Ordering::SeqCst), 0, "no tasks/get was needed");
    host.shutdown().await;
}
