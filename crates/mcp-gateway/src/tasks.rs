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
//! What the upstream asks mid-task (sampling, elicitation) reaches the task's client, and the
//! task is `input_required` until it is answered: a 2026-07-28 client sees the question in
//! `tasks/get` (its `inputRequests`) and answers with `tasks/update`; a handshake client, which
//! has a session to be asked on, is sent the request itself, tagged with the task (the
//! related-task `_meta`), on the stream of a `tasks/result` waiting on the task, else on its
//! standalone stream, and unless the standalone stream took it, on the stream of every
//! `tasks/result` it sends while the question waits, here or at another replica (which reads
//! the question in the task's record).

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};

use mcp_host::{CallError, Relayed};
use mcp_protocol::schema::{InputRequest, TaskSupport, Tool, ToolExecution};
use mcp_protocol::{Era, ErrorObject, RawJson};
use mcp_session::{RequestContext, TaskContext, Tasks};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::reply::{self, call_error_result, encode};
use crate::suspend::{self, Ask, Running};

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
    store.create(context, move |task| run(begun, asks, task))
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
    store.create(context, move |task| run(begun, asks, task))
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
    task: TaskContext,
) -> Result<RawJson, ErrorObject> {
    tokio::pin!(call);
    let next = AtomicU64::new(0);
    let outcome = loop {
        tokio::select! {
            outcome = &mut call => break outcome,
            Some(ask) = asks.recv() => {
                let key = format!("upstream-{}", next.fetch_add(1, Ordering::Relaxed));
                let task = task.clone();
                // Each in a task of its own, so that several questions are pending at once.
                tokio::spawn(async move {
                    let answer = ask_client(&task, key, &ask).await;
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

/// Asks the task's client the upstream's request under `key`: a 2026-07-28 client through the
/// task (`input_required` with the request, answered by its `tasks/update`); a handshake client
/// by the request itself, tied to the task by the related-task `_meta`, on the stream of a
/// `tasks/result` waiting on the task, at this replica or, through the task's record, at
/// another (`mcp_session`'s task questions), and its JSON-RPC error answer as it came.
async fn ask_client(task: &TaskContext, key: String, ask: &Ask) -> Result<RawJson, ErrorObject> {
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
    task.ask(key, request).await
}
