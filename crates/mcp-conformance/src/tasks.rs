//! The tools of the suite's `tasks-*` scenarios (the 2026-07-28 extension
//! `io.modelcontextprotocol/tasks`, SEP-2663), run as tasks by `mcp-session`'s [`Tasks`]:
//! the store, the statuses, `tasks/get`, `tasks/update`, `tasks/cancel` and the gating on the
//! declared extension are the library's; this module only says which call becomes a task and
//! what its work does.
//!
//! - `greet`: never a task.
//! - `slow_compute` (`optional`): sleeps `seconds`, then answers; a task when the request may
//!   have one, synchronous otherwise.
//! - `failing_job` (`required`): a tool error after a moment, as a completed task; without the
//!   extension, -32021 naming it.
//! - `protocol_error_job` (`optional`): fails with a JSON-RPC error, so the task is `failed`.
//! - `confirm_delete`, `multi_input` (`optional`): ask for one input, or for two at once, by
//!   `tasks/update`.
//! - `test_tool_with_task` (`required`): the MRTR composition: an `input_required` result
//!   asking for `user_name` first, then, on the retry that answers it, a task whose result
//!   names the user.
//!
//! In the handshake era (2025-11-25) a call made with a `task` member becomes a task of that
//! form, and the input tools' questions go to the client as elicitation requests tied to the
//! task.

use std::collections::BTreeMap;
use std::time::Duration;

use mcp_protocol::schema::{CallToolParams, InputRequest};
use mcp_protocol::{Era, ErrorObject, RawJson, code};
use mcp_session::{RequestContext, TaskContext, Tasks};
use serde_json::{Value, json};

use crate::server::text;

/// The tools this module serves, with their `execution.taskSupport`.
const TOOLS: &[(&str, &str)] = &[
    ("slow_compute", "optional"),
    ("failing_job", "required"),
    ("protocol_error_job", "optional"),
    ("confirm_delete", "optional"),
    ("multi_input", "optional"),
    ("test_tool_with_task", "required"),
];

/// Whether `name` is one of this module's task tools (`greet` is served with the others).
pub(crate) fn is_task_tool(name: &str) -> bool {
    TOOLS.iter().any(|(tool, _)| *tool == name)
}

/// The entries of `tools/list` for the tasks scenarios.
pub(crate) fn tools() -> Vec<Value> {
    let schema = |props: Value| json!({"type": "object", "properties": props});
    let mut tools = vec![json!({
        "name": "greet",
        "description": "Says hello, synchronously",
        "inputSchema": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
    })];
    for (name, support) in TOOLS {
        let (description, input) = match *name {
            "slow_compute" => (
                "Sleeps for `seconds`, then answers",
                schema(json!({"seconds": {"type": "number"}, "label": {"type": "string"}})),
            ),
            "failing_job" => ("Reports a tool error after a moment", schema(json!({}))),
            "protocol_error_job" => ("Fails with a protocol error", schema(json!({}))),
            "confirm_delete" => (
                "Asks for confirmation before deleting `filename`",
                schema(json!({"filename": {"type": "string"}})),
            ),
            "multi_input" => ("Asks for two inputs at once", schema(json!({}))),
            _ => (
                "Asks for the user's name, then runs as a task",
                schema(json!({})),
            ),
        };
        tools.push(json!({
            "name": name,
            "description": description,
            "inputSchema": input,
            "execution": {"taskSupport": support},
        }));
    }
    tools
}

/// `greet`'s answer.
pub(crate) fn greet(name: &str) -> Value {
    text(&format!("Hello, {name}!"))
}

/// Calls one of the task tools: as a task when the request may have one, else synchronously
/// (or -32021/-32601 for a tool that must be a task).
pub(crate) async fn call(
    tasks: &Tasks,
    params: CallToolParams,
    context: RequestContext,
) -> Result<RawJson, ErrorObject> {
    let stateless = context.era == Some(Era::Stateless);
    let as_task = Tasks::accepts(&context, params.task.as_ref());
    let args = params.arguments.clone().unwrap_or_default();
    let required = TOOLS
        .iter()
        .any(|(tool, support)| *tool == params.name && *support == "required");
    if required && !as_task {
        return Err(if stateless {
            Tasks::required_error()
        } else {
            ErrorObject::new(
                code::METHOD_NOT_FOUND,
                format!("{} runs only as a task: call it with `task`", params.name),
            )
        });
    }
    let name = params.name.clone();
    match name.as_str() {
        "test_tool_with_task" => {
            let answered = params
                .extra
                .get("inputResponses")
                .and_then(|r| r.get("user_name"))
                .and_then(|a| a.get("content"))
                .and_then(|c| c.get("name"))
                .and_then(Value::as_str)
                .map(str::to_owned);
            let Some(user) = answered else {
                let ask = json!({
                    "resultType": "input_required",
                    "inputRequests": {"user_name": elicit("What is your name?", "name", "string")},
                });
                return encode(&ask);
            };
            tasks.create(&context, move |_task| async move {
                encode(&text(&format!("Hello, {user}! Your task is done.")))
            })
        }
        "confirm_delete" | "multi_input" if as_task => {
            let filename = args
                .get("filename")
                .and_then(Value::as_str)
                .unwrap_or("file")
                .to_owned();
            tasks.create(&context, move |task| async move {
                if name == "confirm_delete" {
                    confirm(task, filename).await
                } else {
                    both(task).await
                }
            })
        }
        "confirm_delete" | "multi_input" => {
            encode(&text("This tool asks for input only as a task."))
        }
        _ if as_task => tasks.create(&context, move |_task| work(name, args)),
        _ => work(name, args).await,
    }
}

/// What `slow_compute`, `failing_job` and `protocol_error_job` do.
async fn work(name: String, args: mcp_protocol::JsonObject) -> Result<RawJson, ErrorObject> {
    match name.as_str() {
        "slow_compute" => {
            let seconds = args
                .get("seconds")
                .and_then(Value::as_f64)
                .unwrap_or(0.0)
                .clamp(0.0, 3_600.0);
            let label = args.get("label").and_then(Value::as_str).unwrap_or("");
            tokio::time::sleep(Duration::from_secs_f64(seconds)).await;
            encode(&text(&format!("Computed {label} in {seconds}s")))
        }
        "failing_job" => {
            tokio::time::sleep(Duration::from_millis(300)).await;
            encode(&json!({
                "content": [{"type": "text", "text": "failing_job failed, as it always does"}],
                "isError": true,
            }))
        }
        _ => Err(ErrorObject::new(
            code::INTERNAL_ERROR,
            "protocol_error_job failed with a protocol error, as it always does".to_owned(),
        )),
    }
}

/// `confirm_delete`: one question, then the verdict.
async fn confirm(task: TaskContext, filename: String) -> Result<RawJson, ErrorObject> {
    let question = format!("Delete {filename}?");
    let mut asked = BTreeMap::new();
    asked.insert(
        "confirm".to_owned(),
        request(elicit(&question, "confirm", "boolean"))?,
    );
    let answers = task.input(asked).await.unwrap_or_default();
    let accepted = answers
        .get("confirm")
        .and_then(|a| a.decode::<Value>().ok())
        .is_some_and(|a| a.get("action").and_then(Value::as_str) == Some("accept"));
    let verdict = if accepted { "Deleted" } else { "Kept" };
    encode(&text(&format!("{verdict} {filename}")))
}

/// `multi_input`: two questions pending at once, answered in any order.
async fn both(task: TaskContext) -> Result<RawJson, ErrorObject> {
    let one = |key: &str, question: &str, field: &str, kind: &str| {
        request(elicit(question, field, kind)).map(|r| BTreeMap::from([(key.to_owned(), r)]))
    };
    let name = one("name", "Your name?", "name", "string")?;
    let sure = one("confirm", "Are you sure?", "confirm", "boolean")?;
    let (a, b) = tokio::join!(task.input(name), task.input(sure));
    let answered = a.into_iter().chain(b).flatten().count();
    encode(&text(&format!("multi_input got {answered} answers")))
}

/// An `elicitation/create` input request for one field.
fn elicit(message: &str, field: &str, kind: &str) -> Value {
    json!({
        "method": "elicitation/create",
        "params": {
            "mode": "form",
            "message": message,
            "requestedSchema": {"type": "object", "properties": {field: {"type": kind}}, "required": [field]},
        },
    })
}

fn request(value: Value) -> Result<InputRequest, ErrorObject> {
    serde_json::from_value(value).map_err(|e| ErrorObject::new(code::INTERNAL_ERROR, e.to_string()))
}

fn encode(value: &Value) -> Result<RawJson, ErrorObject> {
    RawJson::encode(value).map_err(|e| ErrorObject::new(code::INTERNAL_ERROR, e.to_string()))
}
