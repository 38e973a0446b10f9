//! Tasks served by the gateway itself (issue 26), in every mode: a client's task-augmented
//! `tools/call` becomes a task of the gateway's own store ([`mcp_session::Tasks`]), whose work
//! is the upstream call through the host, as any call of that client would be (permissions,
//! progress, the call log, metrics; the host runs it as an upstream task when the upstream
//! tool requires one, and polls it).
//!
//! When its task begins depends on the client's era. A handshake client asked for one with
//! the `task` member, so it is answered with the task at once ([`start`]). A 2026-07-28
//! client leaves it to the server: a call of a tool the upstream may run as its task goes as
//! a suspendable call (`suspend.rs`) until the upstream answers with its task, and only then
//! becomes the gateway's ([`adopt`]), so that the upstream's `input_required` rounds before it
//! reach the client as they came (SEP-2663's composition of the two). A tool the upstream
//! never runs as a task, made one by a mode's own `call-*` tool, is a task at once.
//!
//! Ids are the gateway's, never the upstream's: a client learns no upstream task id, and
//! `tasks/*` are answered from the gateway's store, where a handshake client sees only its
//! own session's tasks (the runtime's owner check) and a 2026-07-28 client only a task whose
//! 128-bit id it was given, and with `auth` only its own caller's (the transport names the
//! request by a digest of the caller's subject, and the runtime binds the task to it). Cancelling a task drops its upstream call, which cancels it
//! upstream (and the upstream's task with it). With `cluster` and `store`, the other replicas
//! answer for the task too, from what this one writes to Redis (`cluster/tasks.rs`).
//!
//! What the upstream asks mid-task (sampling, elicitation) reaches the task's client: a
//! 2026-07-28 client sees it as the task's `input_required` (its `inputRequests` in
//! `tasks/get`) and answers with `tasks/update`; a handshake client, which has a session to be
//! asked on, is sent the request itself, tagged with the task (the related-task `_meta`).

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};

use mcp_host::{CallError, Relayed};
use mcp_protocol::schema::{InputRequest, RELATED_TASK_META_KEY, TaskSupport, Tool, ToolExecution};
use mcp_protocol::{Era, ErrorObject, JsonObject, RawJson, RequestOptions};
use mcp_session::{RequestContext, TaskContext, Tasks};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::reply::{self, call_error_result, encode};
use crate::suspend::{self, Ask, Running};

/// How long the gateway waits for its client to answer an upstream's request during a task:
/// a person may be answering it.
const ASK_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(600);

/// How a client's tool call runs.
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
pub(crate) enum RunAs {
    /// As a call, answered when the upstream answers.
    Call,
    /// As a task of the gateway's.
    Task,
    /// Refused: a 2026-07-28 client that did not declare the tasks extension calls a tool
    /// that runs only as a task (-32021 naming the extension).
    Refused,
}

/// How the call in `context` runs, for a tool whose task support is `support`: a
/// 2026-07-28 client that declared the extension gets a task for a tool that supports one
/// (the server decides there, and a `task` member is ignored); a handshake client asks for one
/// with the `task` member (`asked`), for any tool, since the task is the gateway's.
pub(crate) fn run_as(context: &RequestContext, asked: bool, support: &TaskSupport) -> RunAs {
    let accepts = Tasks::accepts(context, None);
    match (context.era == Some(Era::Stateless), support) {
        (true, TaskSupport::Required | TaskSupport::Optional) if accepts => RunAs::Task,
        (true, TaskSupport::Required) => RunAs::Refused,
        (true, _) => RunAs::Call,
        (false, _) if asked => RunAs::Task,
        (false, _) => RunAs::Call,
    }
}

/// The task support of an upstream tool, as the upstream listed it.
pub(crate) fn support_of(tool: &Tool) -> TaskSupport {
    match tool
        .execution
        .as_ref()
        .and_then(|e| e.task_support.as_deref())
    {
        Some("required") => TaskSupport::Required,
        Some("optional") => TaskSupport::Optional,
        _ => TaskSupport::Forbidden,
    }
}

/// Marks one of a mode's own tools (`call-category-tool`, `call-tool`) as one a client may
/// run as a task.
pub(crate) fn optional(tool: &mut Tool) {
    let mut execution = ToolExecution::new();
    execution.task_support = Some("optional".to_owned());
    tool.execution = Some(execution);
}

/// The upstream call a task runs, given the context it runs in (the client's, made to
/// outlive its request); the caller (`Shared::relay`) makes it, so that this module needs
/// nothing of the gateway but the store.
pub(crate) type UpstreamCall = Box<
    dyn FnOnce(RequestContext) -> Pin<Box<dyn Future<Output = Result<Relayed, CallError>> + Send>>
        + Send,
>;

/// The upstream call a task runs, begun: [`UpstreamCall`]'s future, or an adopted one's.
type Begun = Pin<Box<dyn Future<Output = Result<Relayed, CallError>> + Send>>;

/// Starts `call` for the client of `context` as a task of the gateway's store, and returns
/// the result announcing it (the client's era's form).
pub(crate) fn start(
    store: &Tasks,
    context: &RequestContext,
    call: UpstreamCall,
) -> Result<RawJson, ErrorObject> {
    let stateless = context.era == Some(Era::Stateless);
    // The call outlives the client's request: what concerns it goes to the client's session
    // (a handshake client's progress), never to the request's stream, which has ended.
    let mut call_context = context.clone();
    call_context.peer = context.peer.unrelated();
    if stateless {
        // A stateless request's stream is gone; and the upstream's questions come back here
        // through the ask channel (the host answers them), not as an `input_required` result
        // the client would have to retry.
        call_context.progress_token = None;
        call_context.era = Some(Era::Handshake);
    }
    let (asks_tx, asks) = mpsc::channel::<Ask>(8);
    let begun: Begun = Box::pin(suspend::asking(
        asks_tx,
        suspend::in_task(call(call_context)),
    ));
    let context = context.clone();
    store.create(&context.clone(), move |task| {
        run(begun, asks, context, task)
    })
}

/// Makes a task of the gateway's store of a call of the client of `context` whose upstream
/// made its task meanwhile (`suspend.rs`), and returns the result announcing it. The call,
/// `server`'s `tool`, goes on as the task's work; the upstream's questions from now on are
/// the task's. It is stopped when the task ends first (cancelled), or cannot be made.
pub(crate) fn adopt(
    store: &Tasks,
    context: &RequestContext,
    running: Running,
    server: &str,
    tool: &str,
) -> Result<RawJson, ErrorObject> {
    let Running { call, asks } = running;
    let call = Aborting(call);
    let (server, tool) = (server.to_owned(), tool.to_owned());
    let begun: Begun = Box::pin(async move {
        let mut call = call;
        (&mut call.0).await.unwrap_or_else(|e| {
            Err(CallError::Failed {
                server,
                what: tool,
                message: format!("the upstream call stopped in the gateway: {e}"),
            })
        })
    });
    let context = context.clone();
    store.create(&context.clone(), move |task| {
        run(begun, asks, context, task)
    })
}

/// A spawned call that stops when its handle is dropped.
struct Aborting(tokio::task::JoinHandle<Result<Relayed, CallError>>);

impl Drop for Aborting {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// A task's work: the upstream call, with what the upstream asks meanwhile (arriving on
/// `asks`) passed to the task's client; its result (or the failure as a tool error) is the
/// task's.
async fn run(
    call: Begun,
    mut asks: mpsc::Receiver<Ask>,
    context: RequestContext,
    task: TaskContext,
) -> Result<RawJson, ErrorObject> {
    let stateless = context.era == Some(Era::Stateless);
    tokio::pin!(call);
    let next = AtomicU64::new(0);
    let outcome = loop {
        tokio::select! {
            outcome = &mut call => break outcome,
            Some(ask) = asks.recv() => {
                let key = format!("upstream-{}", next.fetch_add(1, Ordering::Relaxed));
                let (task, context) = (task.clone(), context.clone());
                // Each in a task of its own, so that several questions are pending at once.
                tokio::spawn(async move {
                    let answer = if stateless {
                        ask_in_task(&task, key, &ask).await
                    } else {
                        ask_on_session(&task, &context, &ask).await
                    };
                    let _ = ask.answer.send(answer);
                });
            }
        }
    };
    match outcome {
        Ok(Relayed::Complete(out)) => reply::without_server_info(encode(&out.result)?),
        Ok(_) => Err(reply::internal(
            "the upstream's answer is of a kind this gateway does not know",
        )),
        // The upstream's own JSON-RPC error fails the task with it.
        Err(CallError::Rpc {
            code,
            message,
            data,
            ..
        }) => {
            let mut error = ErrorObject::new(code, message);
            error.data = data;
            Err(error)
        }
        Err(e) => encode(&call_error_result(&e)),
    }
}

/// Asks a 2026-07-28 client through the task: `input_required` with the upstream's request
/// under `key`, answered by its `tasks/update`.
async fn ask_in_task(task: &TaskContext, key: String, ask: &Ask) -> Result<RawJson, ErrorObject> {
    let params = ask
        .request
        .encode_params()
        .map_err(|e| reply::internal(e.to_string()))?;
    let mut request = json!({ "method": ask.request.method() });
    if let Some(params) = params {
        request["params"] = params
            .decode::<Value>()
            .map_err(|e| reply::internal(e.to_string()))?;
    }
    let request: InputRequest =
        serde_json::from_value(request).map_err(|e| reply::internal(e.to_string()))?;
    let mut answers = task
        .input(BTreeMap::from([(key.clone(), request)]))
        .await
        .ok_or_else(|| reply::internal("the task ended before its client answered"))?;
    answers
        .remove(&key)
        .ok_or_else(|| reply::internal("the task's client sent no answer"))
}

/// Asks a handshake client on its session, the request tied to the task by the related-task
/// `_meta`.
async fn ask_on_session(
    task: &TaskContext,
    context: &RequestContext,
    ask: &Ask,
) -> Result<RawJson, ErrorObject> {
    let method = ask.request.method();
    let params = ask
        .request
        .encode_params()
        .map_err(|e| reply::internal(e.to_string()))?;
    let mut params = match params.map(|p| p.decode::<Value>()) {
        Some(Ok(Value::Object(params))) => params,
        _ => JsonObject::new(),
    };
    if let Value::Object(meta) = params
        .entry("_meta")
        .or_insert_with(|| Value::Object(JsonObject::new()))
    {
        meta.insert(
            RELATED_TASK_META_KEY.to_owned(),
            json!({"taskId": task.id()}),
        );
    }
    let params = RawJson::encode(&params).map_err(|e| reply::internal(e.to_string()))?;
    context
        .peer
        .unrelated()
        .request_raw(
            method,
            Some(params),
            RequestOptions::DEFAULT.timeout(ASK_TIMEOUT),
        )
        .await
        .map_err(|e| match e {
            mcp_protocol::Error::Rpc { error, .. } => error,
            other => reply::internal(format!(
                "{method}: the gateway's client did not answer: {other}"
            )),
        })
}
