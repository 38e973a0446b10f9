//! Interop with a real peer: the official TypeScript "everything" server, over stdio or over
//! Streamable HTTP, through the same `mcp-session` API. Run by `cargo xtask interop`, which
//! installs the server (pinned), starts it when it speaks HTTP, and runs:
//!
//! `mcp-interop stdio <node> <path to dist/index.js>` or `mcp-interop http <url>`
//!
//! and, against a server of the Python SDK that speaks MCP 2026-07-28
//! (`xtask/interop/stateless-server.py`), `mcp-interop stateless-stdio <python> <script>` or
//! `mcp-interop stateless-http <url>`: the client must choose the stateless era by itself and
//! answer a multi round-trip elicitation.
//!
//! Exits non-zero, saying what failed, if any check fails.

#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::time::{Duration, Instant};

use mcp_http::HttpConfig;
use mcp_protocol::schema::{
    CallToolParams, CallToolResult, ContentBlock, ElicitationCapability, GetPromptParams,
    Implementation, ServerRequest, method,
};
use mcp_protocol::{ClientConfig, Era, ErrorObject, RawJson, RequestOptions};
use mcp_session::{Client, Incoming};
use mcp_stdio::StdioConfig;
use serde_json::json;

type Check = Result<(), String>;

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build();
    let outcome = match rt {
        Ok(rt) => rt.block_on(run()),
        Err(e) => Err(e.to_string()),
    };
    match outcome {
        Ok(()) => println!("interop: all checks passed"),
        Err(e) => {
            eprintln!("interop: FAILED: {e}");
            std::process::exit(1);
        }
    }
}

fn ensure(ok: bool, what: impl Into<String>) -> Check {
    if ok { Ok(()) } else { Err(what.into()) }
}

fn texts(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| match c {
            ContentBlock::Text(t) => Some(t.text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn call(name: &str, args: serde_json::Value) -> CallToolParams {
    let mut p = CallToolParams::new(name.to_owned());
    p.arguments = args.as_object().cloned();
    p
}

/// Calls `name` with `args` and checks that its text answer contains `wanted`.
async fn answers(client: &Client, name: &str, args: serde_json::Value, wanted: &str) -> Check {
    let result = client
        .call_tool(call(name, args), RequestOptions::DEFAULT)
        .await
        .map_err(|e| e.to_string())?;
    ensure(
        texts(&result).contains(wanted),
        format!("{name} answered {:?}", texts(&result)),
    )
}

async fn run() -> Check {
    let usage = "usage: mcp-interop [stateless-]stdio <program> <server script> | mcp-interop [stateless-]http <url>";
    let mut args = std::env::args().skip(1);
    let mode = args.next().ok_or(usage)?;
    let started = Instant::now();
    // `stateless-*` is the Python SDK's server, where the user answers an elicitation.
    let (transport, stateless) = match mode.strip_prefix("stateless-") {
        Some(transport) => (transport, true),
        None => (mode.as_str(), false),
    };
    let name = if stateless { "python" } else { "everything" };
    let mut session = ClientConfig::new(Implementation::new(
        "mcp-host-interop".into(),
        "0.1.0".into(),
    ));
    if stateless {
        session.capabilities.elicitation = Some(ElicitationCapability::new());
    }
    let client = match transport {
        "stdio" => {
            let program = args.next().ok_or(usage)?;
            let script = args.next().ok_or(usage)?;
            let config = StdioConfig::new(name, program, [script, "stdio".to_owned()]);
            mcp_stdio::spawn(config, session)
                .await
                .map_err(|e| e.to_string())?
        }
        "http" => {
            let url = args.next().ok_or(usage)?;
            mcp_http::connect(HttpConfig::new(name, url), session)
                .await
                .map_err(|e| e.to_string())?
        }
        _ => return Err(usage.to_owned()),
    };
    if stateless {
        stateless_checks(&client, started).await
    } else {
        checks(&client, transport == "stdio", started).await
    }
}

/// Against a server that speaks both eras: the session must settle on 2026-07-28 without
/// being told, and a tool that asks the user must work through `input_required` results.
async fn stateless_checks(client: &Client, started: Instant) -> Check {
    let info = client.server_info();
    println!(
        "connected to {} speaking {} ({:?} era: {}) in {:?}",
        info.implementation.name,
        info.protocol_version,
        info.era,
        info.negotiation,
        started.elapsed()
    );
    ensure(
        info.era == Era::Stateless,
        format!("the stateless era was chosen, not {:?}", info.era),
    )?;
    // The user, who confirms whatever is asked and counts the questions.
    let mut incoming = client.take_incoming().ok_or("no incoming channel")?;
    let asked = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let answering = {
        let (client, asked) = (client.clone(), asked.clone());
        tokio::spawn(async move {
            while let Some(item) = incoming.recv().await {
                if let Incoming::Request { id, request, .. } = item {
                    let answer = match request {
                        ServerRequest::Elicit(_) => {
                            asked.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                            RawJson::encode(
                                &json!({"action": "accept", "content": {"confirmed": true}}),
                            )
                            .map_err(|e| ErrorObject::new(-32603, e.to_string()))
                        }
                        other => Err(ErrorObject::new(
                            -32601,
                            format!("{} is not answered here", other.method()),
                        )),
                    };
                    let _ = client.respond(&id, answer);
                }
            }
        })
    };
    let e = |e: mcp_session::Error| e.to_string();
    let tools = client.list_all_tools().await.map_err(e)?;
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    ensure(
        names.contains(&"echo") && names.contains(&"confirm"),
        format!("echo and confirm are listed: {names:?}"),
    )?;
    answers(
        client,
        "echo",
        json!({"text": "hello from mcp-host"}),
        "hello from mcp-host",
    )
    .await?;
    answers(
        client,
        "confirm",
        json!({"action": "deploy"}),
        "deploy: confirmed",
    )
    .await?;
    ensure(
        asked.load(std::sync::atomic::Ordering::SeqCst) == 1,
        "the user was asked exactly once",
    )?;
    println!("stateless: echo and a multi round-trip elicitation passed");
    answering.abort();
    client.close().await;
    Ok(())
}

async fn checks(client: &Client, stdio: bool, started: Instant) -> Check {
    let info = client.server_info();
    println!(
        "connected to {} {} speaking {} in {:?}",
        info.implementation.name,
        info.implementation.version,
        info.protocol_version,
        started.elapsed()
    );
    let e = |e: mcp_session::Error| e.to_string();

    let tools = client.list_all_tools().await.map_err(e)?;
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    println!("{} tools: {}", tools.len(), names.join(", "));
    ensure(
        names.contains(&"echo") && names.contains(&"get-sum"),
        "echo and get-sum are listed",
    )?;

    answers(
        client,
        "echo",
        json!({"message": "hello from mcp-host"}),
        "hello from mcp-host",
    )
    .await?;

    answers(client, "get-sum", json!({"a": 2, "b": 3}), "5").await?;

    let image = client
        .call_tool(call("get-tiny-image", json!({})), RequestOptions::DEFAULT)
        .await
        .map_err(e)?;
    ensure(
        image
            .content
            .iter()
            .any(|c| matches!(c, ContentBlock::Image(_))),
        "get-tiny-image returns an image block",
    )?;

    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let long = call(
        "trigger-long-running-operation",
        json!({"duration": 1, "steps": 3}),
    );
    let options = RequestOptions::DEFAULT.timeout(Duration::from_secs(30));
    client
        .request_with_progress::<method::CallTool>(&long, options, Some(tx))
        .await
        .map_err(e)?;
    let mut progress = 0;
    while rx.try_recv().is_ok() {
        progress += 1;
    }
    println!("long-running operation reported progress {progress} times");
    ensure(progress >= 1, "progress notifications arrive")?;

    // The host's environment does not leak: xtask sets a canary that must not reach a server
    // we start.
    if stdio {
        let env = client
            .call_tool(call("get-env", json!({})), RequestOptions::DEFAULT)
            .await
            .map_err(e)?;
        ensure(
            !texts(&env).contains("MCP_INTEROP_CANARY"),
            "the host's environment is filtered",
        )?;
        ensure(texts(&env).contains("PATH"), "allowed variables are passed")?;
    }

    let resources = client.list_all_resources().await.map_err(e)?;
    println!("{} resources", resources.len());
    let first = resources.first().ok_or("no resources")?;
    let read = client.read_resource(&first.uri).await.map_err(e)?;
    ensure(
        !read.contents.is_empty(),
        format!("reading {} returns contents", first.uri),
    )?;

    let prompts = client.list_all_prompts().await.map_err(e)?;
    ensure(
        prompts.iter().any(|p| p.name == "args-prompt"),
        "args-prompt is listed",
    )?;
    let mut get = GetPromptParams::new("args-prompt".into());
    get.arguments = Some(
        [
            ("city".to_owned(), "Kyoto".to_owned()),
            ("state".to_owned(), "Kansai".to_owned()),
        ]
        .into(),
    );
    let prompt = client.get_prompt(get).await.map_err(e)?;
    ensure(!prompt.messages.is_empty(), "args-prompt has messages")?;

    let status = client.close().await;
    println!("closed: {status}");
    Ok(())
}
