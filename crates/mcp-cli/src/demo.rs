//! `mcp-host demo` and the server it runs. The demo needs no configuration and no network: it
//! starts this same program as a stdio MCP server (`mcp-host demo-server`, hidden) and walks
//! through what a host does, with the renderers the real commands use. The demo server is
//! also what the command line's tests run against, over stdio and over HTTP.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use mcp_host::permission::{AskAlways, Decision, ServerRules};
use mcp_host::{Connect, Host, HostOptions, ServerEntry};
use mcp_protocol::schema::{
    CallToolResult, ClientRequest, CompletionReference, ContentBlock, GetPromptResult,
    Implementation, ListChangedCapability, ListPromptsResult, ListResourceTemplatesResult,
    ListResourcesResult, ListToolsResult, Prompt, PromptArgument, PromptMessage,
    ReadResourceResult, Resource, ResourceContents, ResourceTemplate, ResourcesCapability, Role,
    Tool,
};
use mcp_protocol::{ErrorObject, JsonObject, RawJson, ServerConfig, code};
use mcp_session::{Handler, RequestContext};
use mcp_stdio::StdioConfig;
use serde_json::{Value, json};

use crate::exit::{Code, Failure};
use crate::live;
use crate::output::Out;

/// The demo's server id.
const DEMO: &str = "demo";

/// `mcp-host demo`.
pub(crate) async fn run(out: &Out) -> Result<(), Failure> {
    let exe = std::env::current_exe()
        .map_err(|e| Failure::new(Code::Other, format!("cannot find this program: {e}")))?;
    let step = |n: u32, what: &str| {
        if !out.is_json() {
            out.text(&format!("\n== {n}. {what}"));
        }
    };
    if !out.is_json() {
        out.text("mcp-host demo: a host and a bundled MCP server, no configuration, no network.");
    }

    step(
        1,
        "connect: start the demo server over stdio, initialize, list its tools",
    );
    let mut entry = ServerEntry::new(
        DEMO,
        Connect::Stdio(StdioConfig::new(
            DEMO,
            exe.display().to_string(),
            ["demo-server"],
        )),
    );
    entry.source = "demo".to_owned();
    // The policy a user would write: reading is fine, deleting is not.
    entry.rules = ServerRules::new(
        Decision::Ask,
        BTreeMap::from([
            ("add".to_owned(), Decision::Allow),
            ("echo".to_owned(), Decision::Allow),
            ("stats".to_owned(), Decision::Allow),
            ("delete_note".to_owned(), Decision::Deny),
        ]),
    );
    let host = Host::new(HostOptions::new(live::client_info(), Arc::new(AskAlways)));
    live::connect(&host, vec![entry], live::SpinnerText::Count).await;

    step(2, "status: the /mcp view");
    let statuses = host.status();
    live::show_statuses(out, &statuses);
    if let Some(s) = statuses.first()
        && s.state != mcp_host::ServerState::Ready
    {
        host.shutdown().await;
        return Err(live::not_ready(s));
    }

    step(
        3,
        "tools: what a model is offered, under stable exposed names",
    );
    live::show_tools(out, &host, None)?;

    step(4, "a permitted call: add 2 + 3 (allowed by the policy)");
    let args = |v: Value| -> JsonObject {
        v.as_object()
            .cloned()
            .unwrap_or_default()
            .into_iter()
            .collect()
    };
    live::call_on(out, &host, DEMO, "add", args(json!({"a": 2, "b": 3})), None).await?;

    step(
        5,
        "a denied call: delete_note (denied by the policy; the server never sees it)",
    );
    match live::call_on(
        out,
        &host,
        DEMO,
        "delete_note",
        args(json!({"name": "shopping"})),
        None,
    )
    .await
    {
        Err(f) if f.code == Code::Denied => out.text(&format!("denied: {}", f.message)),
        Err(f) => return Err(f),
        Ok(()) => {
            return Err(Failure::new(
                Code::Other,
                "the demo's denied call went through",
            ));
        }
    }
    live::call_on(out, &host, DEMO, "stats", JsonObject::new(), None).await?;

    step(6, "a resource read: demo://notes/shopping");
    live::read_on(out, &host, DEMO, "demo://notes/shopping").await?;

    step(7, "shutdown: end the server politely");
    host.shutdown().await;
    let running = host.status().len();
    if out.is_json() {
        out.json(&serde_json::json!({ "stopped": DEMO, "servers_running": running }));
    } else {
        out.text(&format!(
            "stopped `{DEMO}`; servers still running: {running}"
        ));
    }
    if !out.is_json() {
        out.text("\nnext: `mcp-host add <id> <url>` or `mcp-host add <id> -- <command>`, then `mcp-host test <id>`; `mcp-host --help` lists every command");
    }
    Ok(())
}

/// `mcp-host demo-server`: serves the demo on stdio, or on Streamable HTTP at `http`.
pub(crate) async fn serve(http: Option<SocketAddr>) -> Result<(), Failure> {
    let config = server_config();
    let io = |e: std::io::Error| Failure::new(Code::Other, format!("demo server: {e}"));
    match http {
        None => mcp_stdio::serve_stdio(config, DemoServer::default())
            .await
            .map_err(io),
        Some(addr) => {
            let (listener, bound) = mcp_http::bind(addr).await.map_err(io)?;
            // The address, for whoever started us on port 0.
            eprintln!("demo server listening on http://{bound}/mcp");
            let mut http = mcp_http::HttpServerConfig::new(config);
            // Asked to listen on one address of a network, it answers requests naming that
            // address: an IP literal in `Host` cannot be rebound to another server by DNS.
            let ip = bound.ip();
            if !ip.is_loopback() && !ip.is_unspecified() {
                http.allowed_hosts.push(match ip {
                    std::net::IpAddr::V4(v4) => v4.to_string(),
                    std::net::IpAddr::V6(v6) => format!("[{v6}]"),
                });
            }
            mcp_http::serve_http(listener, http, DemoServer::default())
                .await
                .map_err(io)
        }
    }
}

fn server_config() -> ServerConfig {
    let mut config = ServerConfig::new(Implementation::new(
        "mcp-host-demo".into(),
        env!("CARGO_PKG_VERSION").into(),
    ));
    config.capabilities.tools = Some(ListChangedCapability::new());
    config.capabilities.resources = Some(ResourcesCapability::new());
    config.capabilities.prompts = Some(ListChangedCapability::new());
    config.capabilities.completions = Some(JsonObject::new());
    config.instructions =
        Some("A demo server: a few tools, notes as resources, one prompt.".into());
    config
}

/// The demo server: `echo`, `add`, `slow` (progress), `fail`, `delete_note`, `stats`; notes as
/// resources; a `review` prompt; completions of both. It counts the tool calls it receives, so a denied call can
/// be shown never to arrive.
#[derive(Debug, Default)]
struct DemoServer {
    calls: AtomicU64,
}

/// What the `review` prompt's `topic` argument completes to.
const TOPICS: [&str; 3] = ["gateways", "servers", "tokens"];

const NOTES: [(&str, &str); 2] = [
    ("shopping", "milk\neggs\ncoffee"),
    ("ideas", "an MCP host that is safe with untrusted servers"),
];

fn tool(name: &str, description: &str, schema: Value) -> Tool {
    let mut t = Tool::new(name.into());
    t.description = Some(description.into());
    t.input_schema = Some(schema);
    t
}

fn encode<T: serde::Serialize>(value: &T) -> Result<RawJson, ErrorObject> {
    RawJson::encode(value)
        .map_err(|e| ErrorObject::new(code::INTERNAL_ERROR, format!("encoding failed: {e}")))
}

fn text_result(text: impl Into<String>) -> CallToolResult {
    CallToolResult::new(vec![ContentBlock::text(text.into())])
}

impl Handler for DemoServer {
    async fn handle(
        &self,
        request: ClientRequest,
        context: RequestContext,
    ) -> Result<RawJson, ErrorObject> {
        match request {
            ClientRequest::ListTools(_) => encode(&ListToolsResult::new(vec![
                tool(
                    "echo",
                    "Returns its text.",
                    json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}),
                ),
                tool(
                    "add",
                    "Adds two numbers.",
                    json!({"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}, "required": ["a", "b"]}),
                ),
                tool(
                    "slow",
                    "Takes `seconds` (default 2), reporting progress every `step_ms`.",
                    json!({"type": "object", "properties": {"seconds": {"type": "number"}, "step_ms": {"type": "integer"}}}),
                ),
                tool(
                    "fail",
                    "Always reports a tool error.",
                    json!({"type": "object"}),
                ),
                tool(
                    "delete_note",
                    "Deletes a note (the demo's policy denies it).",
                    json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}),
                ),
                tool(
                    "stats",
                    "How many tool calls this server has received.",
                    json!({"type": "object"}),
                ),
            ])),
            ClientRequest::CallTool(p) => {
                let n = self.calls.fetch_add(1, Ordering::SeqCst) + 1;
                let args = p.arguments.unwrap_or_default();
                let number = |k: &str| args.get(k).and_then(Value::as_f64);
                let result = match p.name.as_str() {
                    "echo" => {
                        text_result(args.get("text").and_then(Value::as_str).unwrap_or_default())
                    }
                    "add" => match (number("a"), number("b")) {
                        (Some(a), Some(b)) => {
                            let mut r = text_result(format!("{a} + {b} = {}", a + b));
                            r.structured_content = Some(json!({ "sum": a + b }));
                            r
                        }
                        _ => error_result("`a` and `b` must be numbers"),
                    },
                    "slow" => {
                        let total_ms =
                            (number("seconds").unwrap_or(2.0).clamp(0.0, 600.0) * 1000.0) as u64;
                        let step = args
                            .get("step_ms")
                            .and_then(Value::as_u64)
                            .unwrap_or(250)
                            .max(10);
                        let steps = (total_ms / step).max(1);
                        for i in 1..=steps {
                            tokio::time::sleep(Duration::from_millis(step)).await;
                            context.progress(i, Some(steps), Some("working"));
                        }
                        text_result(format!("done after {total_ms} ms"))
                    }
                    "fail" => error_result("this tool always fails"),
                    "delete_note" => {
                        text_result("deleted (the demo server does not really delete)")
                    }
                    "stats" => text_result(format!(
                        "this server has received {n} tool call(s), this one included"
                    )),
                    other => {
                        return Err(ErrorObject::new(
                            code::INVALID_PARAMS,
                            format!("unknown tool `{other}`"),
                        ));
                    }
                };
                encode(&result)
            }
            ClientRequest::ListResources(_) => encode(&ListResourcesResult::new(
                NOTES
                    .iter()
                    .map(|(name, _)| {
                        let mut r = Resource::new(format!("demo://notes/{name}"), (*name).into());
                        r.mime_type = Some("text/plain".into());
                        r
                    })
                    .collect(),
            )),
            ClientRequest::ListResourceTemplates(_) => {
                let mut t = ResourceTemplate::new("demo://notes/{name}".into(), "note".into());
                t.description = Some("A note by name.".into());
                encode(&ListResourceTemplatesResult::new(vec![t]))
            }
            ClientRequest::ReadResource(p) => {
                let name = p.uri.strip_prefix("demo://notes/").unwrap_or_default();
                match NOTES.iter().find(|(n, _)| *n == name) {
                    Some((_, text)) => {
                        let mut c = ResourceContents::new(p.uri.clone());
                        c.mime_type = Some("text/plain".into());
                        c.text = Some((*text).into());
                        encode(&ReadResourceResult::new(vec![c]))
                    }
                    None => Err(ErrorObject::new(
                        code::RESOURCE_NOT_FOUND,
                        format!("no resource `{}`", p.uri),
                    )),
                }
            }
            ClientRequest::ListPrompts(_) => {
                let mut topic = PromptArgument::new("topic".into());
                topic.required = Some(true);
                let mut prompt = Prompt::new("review".into());
                prompt.description = Some("Asks for a review of a topic.".into());
                prompt.arguments = Some(vec![topic]);
                encode(&ListPromptsResult::new(vec![prompt]))
            }
            ClientRequest::GetPrompt(p) if p.name == "review" => {
                let topic = p
                    .arguments
                    .as_ref()
                    .and_then(|a| a.get("topic"))
                    .cloned()
                    .ok_or_else(|| {
                        ErrorObject::new(
                            code::INVALID_PARAMS,
                            "argument `topic` is required".into(),
                        )
                    })?;
                let message = PromptMessage::new(
                    Role::User,
                    ContentBlock::text(format!("Please review {topic}.")),
                );
                encode(&GetPromptResult::new(vec![message]))
            }
            ClientRequest::GetPrompt(p) => Err(ErrorObject::new(
                code::INVALID_PARAMS,
                format!("unknown prompt `{}`", p.name),
            )),
            ClientRequest::Complete(p) => {
                let choices: &[&str] = match (&p.reference, p.argument.name.as_str()) {
                    (CompletionReference::Prompt(r), "topic") if r.name == "review" => &TOPICS,
                    (CompletionReference::Resource(r), "name")
                        if r.uri == "demo://notes/{name}" =>
                    {
                        &NOTES.map(|(name, _)| name)
                    }
                    _ => &[],
                };
                let values: Vec<&str> = choices
                    .iter()
                    .copied()
                    .filter(|c| c.starts_with(p.argument.value.as_str()))
                    .collect();
                encode(&json!({"completion": {"values": values, "hasMore": false}}))
            }
            _ => Err(ErrorObject::new(
                code::METHOD_NOT_FOUND,
                "not supported by the demo server".into(),
            )),
        }
    }
}

fn error_result(text: &str) -> CallToolResult {
    let mut r = text_result(text);
    r.is_error = Some(true);
    r
}
