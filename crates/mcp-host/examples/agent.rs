//! An agent in one page: what an application built on `mcp-host` does between its model and
//! the user's MCP servers.
//!
//! 1. Load the user's configuration, as `mcp-host` does (the global file, then the project's;
//!    a project's server runs only if the user approved it with `mcp-host trust`).
//! 2. Start the host: every enabled server at once.
//! 3. Build the model's tool list from the catalogue: the servers' tools and, beside them, the
//!    resource and prompt operations (`list_resources`, `read_resource`, `get_prompt`, …), so
//!    that the model reads a resource by calling a tool.
//! 4. Take the model's tool calls (here a scripted model: a fixed script, no network), run
//!    each through the permission hook and the host, and append the result to the history as
//!    an ordinary tool result: nothing a server returns reaches the model any other way.
//! 5. Print the history as JSON: `{"tools": [...], "history": [...]}`.
//!
//! The permission hook reads freely (every resource and prompt operation is allowed) and runs
//! only the tools in [`ALLOWED_TOOLS`]; the script ends by asking for a tool outside that list,
//! which is denied and never reaches the server, and then for an allowed one again.
//!
//! The script is written against the testkit's fake server (`echo`, `crash`, `fake://hello`,
//! the `greet` prompt); `crates/mcp-host/tests/agent.rs` runs this example against it. With
//! other servers, the calls that name what they do not offer come back as tool errors, which
//! is what a model would read too.
//!
//! `cargo run -p mcp-host --example agent` (set `MCP_HOST_CONFIG` to try another file).

// A command-line example that reports on its standard output.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::error::Error;
use std::sync::Arc;

use mcp_host::config::{self, ConfigPaths};
use mcp_host::permission::{CallRequest, Decision, Policy};
use mcp_host::trust::TrustStore;
use mcp_host::{CallKind, CallOptions, Catalog, Host, ModelTool, Operation, error_result, setup};
use mcp_protocol::JsonObject;
use mcp_protocol::schema::{CallToolResult, Implementation};
use serde_json::{Value, json};

/// The tools this agent's user allows the model to run without asking.
const ALLOWED_TOOLS: &[&str] = &["echo"];

/// The permission hook: reading resources and getting prompts is allowed; a tool runs only if
/// the user allowed it. The configuration's own rules still apply on top (a `deny` there
/// wins).
#[derive(Debug)]
struct ReadFreelyRunWhatIsAllowed;

impl Policy for ReadFreelyRunWhatIsAllowed {
    fn decide(&self, call: &CallRequest<'_>) -> Decision {
        match call.kind {
            CallKind::Operation(_) => Decision::Allow,
            _ if ALLOWED_TOOLS.contains(&call.tool) => Decision::Allow,
            _ => Decision::Deny,
        }
    }
}

/// What the scripted model picks, as a model picks from the tools it was offered.
#[derive(Debug, Clone, Copy)]
enum Pick {
    /// A resource or prompt operation of the first server that offers it.
    Operation(Operation),
    /// A server's tool by the name the server gave it.
    Tool(&'static str),
}

/// One step of the script: what to call, and its arguments from the history so far (as a
/// model would take a URI from a listing it read).
struct Step {
    pick: Pick,
    arguments: fn(&[Value]) -> Value,
}

/// The scripted model: list the resources, read the first one, list the prompts and get the
/// first one, run `echo`, try `crash` (denied), run `echo` again.
fn script() -> Vec<Step> {
    vec![
        Step {
            pick: Pick::Operation(Operation::ListResources),
            arguments: |_| json!({}),
        },
        Step {
            pick: Pick::Operation(Operation::ReadResource),
            arguments: |history| json!({ "uri": first_listed(history, "uri") }),
        },
        Step {
            pick: Pick::Operation(Operation::ListPrompts),
            arguments: |_| json!({}),
        },
        Step {
            pick: Pick::Operation(Operation::GetPrompt),
            arguments: |history| json!({ "name": first_listed(history, "name"), "arguments": {"name": "agent"} }),
        },
        Step {
            pick: Pick::Tool("echo"),
            arguments: |_| json!({ "message": "hello from the model" }),
        },
        Step {
            pick: Pick::Tool("crash"),
            arguments: |_| json!({}),
        },
        Step {
            pick: Pick::Tool("echo"),
            arguments: |_| json!({ "message": "still here" }),
        },
    ]
}

/// The `field` of the first item of the latest listing in the history (a listing's second
/// text block is its items as JSON).
fn first_listed(history: &[Value], field: &str) -> Value {
    history
        .iter()
        .rev()
        .filter(|e| e["role"] == "tool")
        .find_map(|e| {
            let items = e["content"][1]["text"].as_str()?;
            let items: Value = serde_json::from_str(items).ok()?;
            Some(items[0][field].clone())
        })
        .unwrap_or(Value::Null)
}

/// The exposed name the model would call for `pick`, from the tools it was offered.
fn choose(catalog: &Catalog, pick: Pick) -> String {
    let found = catalog.model_tools().find(|t| match (pick, t) {
        (Pick::Operation(op), ModelTool::Operation(o)) => o.operation == op,
        (Pick::Tool(name), ModelTool::Tool(t)) => t.tool == name,
        _ => false,
    });
    match found {
        Some(t) => t.name().to_owned(),
        // A model that names a tool it was not offered; the host says so.
        None => match pick {
            Pick::Operation(op) => op.slug().to_owned(),
            Pick::Tool(name) => name.to_owned(),
        },
    }
}

/// A tool result as the history keeps it: the content blocks as the host bounded them.
fn tool_entry(id: &str, name: &str, result: &CallToolResult) -> Value {
    let content: Vec<Value> = result
        .content
        .iter()
        .map(|b| serde_json::to_value(b).unwrap_or(Value::Null))
        .collect();
    json!({
        "role": "tool",
        "tool_call_id": id,
        "name": name,
        "is_error": result.is_tool_error(),
        "content": content,
    })
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    // 1. The user's configuration.
    let (paths, env) = ConfigPaths::from_process()?;
    let loaded = config::load(&paths, &env);
    for problem in &loaded.problems {
        eprintln!("{problem}");
    }
    let approvals = TrustStore::default_path(&paths)
        .map(TrustStore::new)
        .and_then(|store| store.approvals(&paths.project_dir).ok())
        .unwrap_or_default();
    // No OAuth context: a server that needs a login waits for `mcp-host login`.
    let entries = setup::entries(&loaded, None, &approvals);
    let info = Implementation::new("agent-example".into(), env!("CARGO_PKG_VERSION").into());
    let options = setup::host_options(&loaded, info, Arc::new(ReadFreelyRunWhatIsAllowed));

    // 2. The host.
    let host = Host::new(options);
    host.start(entries).await;
    for s in host.status() {
        eprintln!("server {}: {}", s.id, s.state);
    }

    // 3. The model's tool list: names, descriptions and schemas, tools and operations alike.
    let catalog = host.catalog();
    let tools: Vec<Value> = catalog
        .model_tools()
        .map(|t| {
            json!({
                "name": t.name(),
                "description": t.description(),
                "input_schema": t.parameters(),
            })
        })
        .collect();

    // 4. The conversation: the user's message, then each of the model's calls and its result.
    let mut history = vec![json!({
        "role": "user",
        "content": "Read the first resource and the first prompt, then say hello.",
    })];
    for (n, step) in script().into_iter().enumerate() {
        let id = format!("call_{n}");
        let name = choose(&catalog, step.pick);
        let arguments = (step.arguments)(&history);
        history.push(json!({
            "role": "assistant",
            "tool_calls": [{"id": id, "name": name, "arguments": arguments}],
        }));
        let arguments: JsonObject = match arguments {
            Value::Object(map) => map,
            _ => JsonObject::new(),
        };
        // The permission hook runs inside `call`: a denied call never reaches the server and
        // comes back as an error the model reads, like any other failure.
        let result = match host.call(&name, arguments, CallOptions::default()).await {
            Ok(output) => output.result,
            Err(e) => error_result(&e),
        };
        history.push(tool_entry(&id, &name, &result));
    }
    host.shutdown().await;

    // 5. The history.
    let names: Vec<&Value> = tools.iter().map(|t| &t["name"]).collect();
    let out = json!({ "tools": names, "history": history });
    println!("{}", serde_json::to_string_pretty(&out)?);
    Ok(())
}
