//! `mcp-bench gateway-check <mcp-host>`: our gateway between rmcp on both sides (issue 25
//! section 6), over stdio and over Streamable HTTP.
//!
//! rmcp 3.11 answers `-32601` to a method of a capability its server did not declare (rust-sdk
//! #1446: `prompts/list`, `resources/list`, `completion/complete`... used to get an empty
//! answer), and an rmcp client is strict about what a server sends it. So the gateway is put
//! in front of two upstreams, an rmcp server with tools only (`mcp-bench server rmcp stdio`)
//! and our demo server (tools, resources and a prompt), and an rmcp client with no
//! capabilities of its own initializes with it, lists and calls both upstreams' tools, and
//! uses every capability the gateway declares (prompts, resources, logging, completion).
//! Everything the gateway sends the client is recorded: a request for a capability the client
//! did not declare (it declares none) or a notification for one the gateway did not declare
//! fails the check, as does a `-32601` from the rmcp upstream reaching the gateway's log.
//!
//! Run by `cargo xtask bench --gateway-check`; each transport takes about a second.

// Sampling, roots and logging are deprecated by SEP-2577 in rmcp, and still what a handshake
// gateway may send or be asked: the check must name them.
#![allow(deprecated)]

use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context as _, bail, ensure};
use rmcp::model::{
    CallToolRequestParams, CancelledNotificationParam, ClientConfig, ContentBlock,
    CreateMessageRequestParams, CreateMessageResult, CustomNotification, CustomRequest,
    CustomResult, ElicitRequestParams, ElicitResult, GetPromptRequestParams, ListRootsResult,
    LoggingLevel, LoggingMessageNotificationParam, ProgressNotificationParam,
    ReadResourceRequestParams, ResourceUpdatedNotificationParam, ServerCapabilities,
    SetLevelRequestParams, TaskStatusNotificationParams,
};
use rmcp::service::{NotificationContext, RequestContext, RunningService};
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientHandler, ErrorData, RoleClient, ServiceExt as _};
use serde_json::json;
use tokio::io::{AsyncBufReadExt as _, AsyncRead, BufReader};

/// How long one step may take before the check calls it stuck.
const STEP: Duration = Duration::from_secs(20);

pub(crate) fn run(args: &[String]) -> anyhow::Result<()> {
    let [mcp_host] = args else {
        bail!("usage: mcp-bench gateway-check <path of mcp-host>");
    };
    let bench = std::env::current_exe().context("finding mcp-bench itself")?;
    let dir = std::env::temp_dir().join(format!("mcp-bench-gateway-check-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let file = dir.join("gateway.json");
    let allow = json!({"default": "allow"});
    let gateway = json!({
        "mode": "passthrough",
        "mcpServers": {
            "rmcp": {"command": bench, "args": ["server", "rmcp", "stdio"], "permission": allow},
            "demo": {"command": mcp_host, "args": ["demo-server"], "permission": allow},
        }
    });
    std::fs::write(&file, serde_json::to_vec_pretty(&gateway)?)?;
    let result = crate::runtime()?.block_on(async {
        let host = Path::new(mcp_host);
        stdio(host, &file, &dir).await.context("over stdio")?;
        http(host, &file, &dir)
            .await
            .context("over Streamable HTTP")
    });
    let _ = std::fs::remove_dir_all(&dir);
    result
}

/// What the gateway sent the client: one line per request or notification.
#[derive(Clone, Default)]
struct Recorder(Arc<Mutex<Vec<String>>>);

impl Recorder {
    fn push(&self, what: String) {
        if let Ok(mut seen) = self.0.lock() {
            seen.push(what);
        }
    }

    fn seen(&self) -> Vec<String> {
        self.0.lock().map(|s| s.clone()).unwrap_or_default()
    }

    /// A server request to a client that declared no capability is refused, and recorded.
    fn refuse<T>(&self, method: &str) -> Result<T, ErrorData> {
        self.push(format!("request {method}"));
        Err(ErrorData::new(
            rmcp::model::ErrorCode::METHOD_NOT_FOUND,
            format!("{method}: the client declared no such capability"),
            None,
        ))
    }
}

impl ClientHandler for Recorder {
    fn get_info(&self) -> ClientConfig {
        // No roots, sampling, elicitation or extensions: nothing may be asked of this client.
        ClientConfig::default()
    }

    async fn create_message(
        &self,
        _: CreateMessageRequestParams,
        _: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        self.refuse("sampling/createMessage")
    }

    async fn list_roots(
        &self,
        _: RequestContext<RoleClient>,
    ) -> Result<ListRootsResult, ErrorData> {
        self.refuse("roots/list")
    }

    async fn create_elicitation(
        &self,
        _: ElicitRequestParams,
        _: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        self.refuse("elicitation/create")
    }

    async fn on_custom_request(
        &self,
        request: CustomRequest,
        _: RequestContext<RoleClient>,
    ) -> Result<CustomResult, ErrorData> {
        self.refuse(&request.method)
    }

    async fn on_cancelled(
        &self,
        _: CancelledNotificationParam,
        _: NotificationContext<RoleClient>,
    ) {
        self.push("notification notifications/cancelled".into());
    }

    async fn on_progress(&self, _: ProgressNotificationParam, _: NotificationContext<RoleClient>) {
        self.push("notification notifications/progress".into());
    }

    async fn on_logging_message(
        &self,
        _: LoggingMessageNotificationParam,
        _: NotificationContext<RoleClient>,
    ) {
        self.push("notification notifications/message".into());
    }

    async fn on_resource_updated(
        &self,
        _: ResourceUpdatedNotificationParam,
        _: NotificationContext<RoleClient>,
    ) {
        self.push("notification notifications/resources/updated".into());
    }

    async fn on_resource_list_changed(&self, _: NotificationContext<RoleClient>) {
        self.push("notification notifications/resources/list_changed".into());
    }

    async fn on_tool_list_changed(&self, _: NotificationContext<RoleClient>) {
        self.push("notification notifications/tools/list_changed".into());
    }

    async fn on_prompt_list_changed(&self, _: NotificationContext<RoleClient>) {
        self.push("notification notifications/prompts/list_changed".into());
    }

    async fn on_task_status(
        &self,
        _: TaskStatusNotificationParams,
        _: NotificationContext<RoleClient>,
    ) {
        self.push("notification notifications/tasks/status".into());
    }

    async fn on_custom_notification(
        &self,
        notification: CustomNotification,
        _: NotificationContext<RoleClient>,
    ) {
        self.push(format!("notification {}", notification.method));
    }
}

/// Whether the gateway may send this notification, by what it declared. `cancelled` and
/// `progress` need no capability (the client sent no progress token, so `progress` is
/// still wrong, and said so by `check`).
fn declared(caps: &ServerCapabilities, method: &str) -> bool {
    let list_changed = |c: Option<Option<bool>>| c.flatten() == Some(true);
    match method {
        "notifications/cancelled" => true,
        "notifications/message" => caps.logging.is_some(),
        "notifications/tools/list_changed" => {
            list_changed(caps.tools.as_ref().map(|t| t.list_changed))
        }
        "notifications/prompts/list_changed" => {
            list_changed(caps.prompts.as_ref().map(|p| p.list_changed))
        }
        "notifications/resources/list_changed" => {
            list_changed(caps.resources.as_ref().map(|r| r.list_changed))
        }
        _ => false,
    }
}

async fn stdio(mcp_host: &Path, file: &Path, dir: &Path) -> anyhow::Result<()> {
    let mut command = tokio::process::Command::new(mcp_host);
    command
        .arg("serve")
        .arg("--gateway")
        .arg(file)
        .arg("-vv")
        .env("HOME", dir);
    let (transport, stderr) = TokioChildProcess::builder(command)
        .stderr(Stdio::piped())
        .spawn()
        .context("starting mcp-host serve")?;
    let log = keep(stderr);
    let recorder = Recorder::default();
    let client = tokio::time::timeout(STEP, recorder.clone().serve(transport))
        .await
        .context("initialize timed out")?
        .context("initialize")?;
    let outcome = exercise(&client, &recorder).await;
    let _ = client.cancel().await;
    check("stdio", outcome, &log)
}

async fn http(mcp_host: &Path, file: &Path, dir: &Path) -> anyhow::Result<()> {
    let mut child = tokio::process::Command::new(mcp_host)
        .arg("serve")
        .arg("--gateway")
        .arg(file)
        .args(["--http", "127.0.0.1:0", "-vv"])
        .env("HOME", dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .context("starting mcp-host serve --http")?;
    let log = keep(child.stderr.take());
    let url = tokio::time::timeout(STEP, async {
        loop {
            if let Some(url) = text(&log)
                .lines()
                .find_map(|l| l.split_once("listening on ").map(|(_, rest)| rest))
                .and_then(|rest| rest.split_whitespace().next())
            {
                return url.to_owned();
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .with_context(|| format!("no address in the gateway's log: {}", text(&log)))?;
    let recorder = Recorder::default();
    let client = tokio::time::timeout(
        STEP,
        recorder
            .clone()
            .serve(StreamableHttpClientTransport::from_uri(url)),
    )
    .await
    .context("initialize timed out")?
    .context("initialize")?;
    let outcome = exercise(&client, &recorder).await;
    let _ = client.cancel().await;
    let _ = child.kill().await;
    check("http", outcome, &log)
}

/// The gateway's standard error, kept as it comes.
fn keep(stderr: Option<impl AsyncRead + Unpin + Send + 'static>) -> Arc<Mutex<String>> {
    let log = Arc::new(Mutex::new(String::new()));
    if let Some(stderr) = stderr {
        let log = log.clone();
        tokio::spawn(async move {
            let mut lines = BufReader::new(stderr).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                if let Ok(mut log) = log.lock() {
                    log.push_str(&line);
                    log.push('\n');
                }
            }
        });
    }
    log
}

fn text(log: &Arc<Mutex<String>>) -> String {
    log.lock().map(|l| l.clone()).unwrap_or_default()
}

/// What one transport's run found.
struct Outcome {
    steps: Vec<String>,
    caps: ServerCapabilities,
    seen: Vec<String>,
    error: Option<anyhow::Error>,
}

async fn exercise(client: &RunningService<RoleClient, Recorder>, recorder: &Recorder) -> Outcome {
    let caps = client
        .peer_info()
        .map(|i| i.capabilities.clone())
        .unwrap_or_default();
    let mut steps = Vec::new();
    let error = tokio::time::timeout(STEP * 2, steps_of(client, &caps, &mut steps))
        .await
        .unwrap_or_else(|_| Err(anyhow::anyhow!("a step timed out")))
        .err();
    // A notification sent along the last answer may trail it by a moment.
    tokio::time::sleep(Duration::from_millis(100)).await;
    Outcome {
        steps,
        caps,
        seen: recorder.seen(),
        error,
    }
}

async fn steps_of(
    client: &RunningService<RoleClient, Recorder>,
    caps: &ServerCapabilities,
    steps: &mut Vec<String>,
) -> anyhow::Result<()> {
    ensure!(caps.tools.is_some(), "the gateway declared no tools");
    // Both upstreams connect while the gateway already answers: wait for both tools lists.
    let names = tokio::time::timeout(STEP, async {
        loop {
            let names: Vec<String> = client
                .list_all_tools()
                .await?
                .into_iter()
                .map(|t| t.name.to_string())
                .collect();
            if ["mcp__rmcp__echo", "mcp__demo__echo"]
                .iter()
                .all(|n| names.iter().any(|m| m == n))
            {
                return anyhow::Ok(names);
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .context("the two upstreams' tools never were listed")??;
    steps.push(format!("tools/list: {} tools", names.len()));

    for tool in ["mcp__rmcp__echo", "mcp__demo__echo"] {
        let args = json!({"text": "through the gateway"});
        let result = client
            .call_tool(
                CallToolRequestParams::new(tool)
                    .with_arguments(args.as_object().cloned().unwrap_or_default()),
            )
            .await
            .with_context(|| format!("tools/call {tool}"))?;
        let text = result
            .content
            .first()
            .and_then(ContentBlock::as_text)
            .map(|t| t.text.clone())
            .unwrap_or_default();
        ensure!(
            text.contains("through the gateway") && result.is_error != Some(true),
            "tools/call {tool} answered {result:?}"
        );
        steps.push(format!("tools/call {tool}: {text:?}"));
    }

    if caps.prompts.is_some() {
        let prompts = client.list_all_prompts().await.context("prompts/list")?;
        ensure!(
            prompts.iter().any(|p| p.name == "mcp__demo__review"),
            "prompts/list lacks the demo's prompt: {prompts:?}"
        );
        let got = client
            .get_prompt(
                GetPromptRequestParams::new("mcp__demo__review").with_arguments(
                    json!({"topic": "gateways"})
                        .as_object()
                        .cloned()
                        .unwrap_or_default(),
                ),
            )
            .await
            .context("prompts/get")?;
        steps.push(format!(
            "prompts/list: {} prompts; prompts/get: {} messages",
            prompts.len(),
            got.messages.len()
        ));
    }

    if caps.resources.is_some() {
        let resources = client
            .list_all_resources()
            .await
            .context("resources/list")?;
        let first = resources
            .first()
            .context("resources/list is empty, and the demo serves notes")?;
        let read = client
            .read_resource(ReadResourceRequestParams::new(first.uri.clone()))
            .await
            .context("resources/read")?;
        let templates = client
            .list_all_resource_templates()
            .await
            .context("resources/templates/list")?;
        steps.push(format!(
            "resources/list: {}; resources/read {}: {} contents; resources/templates/list: {}",
            resources.len(),
            first.uri,
            read.contents.len(),
            templates.len()
        ));
    }

    if caps.logging.is_some() {
        client
            .set_level(SetLevelRequestParams::new(LoggingLevel::Info))
            .await
            .context("logging/setLevel")?;
        steps.push("logging/setLevel info".into());
    }

    if caps.completions.is_some() {
        let done = client
            .complete_prompt_argument("mcp__demo__review", "topic", "ga", None)
            .await
            .context("completion/complete")?;
        steps.push(format!("completion/complete: {} values", done.values.len()));
    }
    Ok(())
}

fn check(transport: &str, outcome: Outcome, log: &Arc<Mutex<String>>) -> anyhow::Result<()> {
    let log = text(log);
    for step in &outcome.steps {
        eprintln!("gateway-check {transport}: {step}");
    }
    for seen in &outcome.seen {
        eprintln!("gateway-check {transport}: the gateway sent {seen}");
    }
    if let Some(error) = outcome.error {
        bail!("{error:#}\nthe gateway's log:\n{log}");
    }
    let undeclared: Vec<&String> = outcome
        .seen
        .iter()
        .filter(|s| match s.strip_prefix("notification ") {
            Some(method) => !declared(&outcome.caps, method),
            None => true,
        })
        .collect();
    ensure!(
        undeclared.is_empty(),
        "the gateway sent what the capabilities do not allow: {undeclared:?}\nthe gateway's log:\n{log}"
    );
    // The rmcp upstream refuses every method it did not declare (#1446): the gateway must not
    // have asked it one. The log is real (it holds the upstreams' start) before it is searched.
    ensure!(
        log.contains("rmcp"),
        "the gateway's log never names the rmcp upstream:\n{log}"
    );
    let refused: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("-32601") || l.to_lowercase().contains("method not found"))
        .collect();
    ensure!(
        refused.is_empty(),
        "an upstream refused a method the gateway sent it: {refused:?}"
    );
    eprintln!("gateway-check {transport}: ok");
    Ok(())
}
