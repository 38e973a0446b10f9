//! What one call takes and gives back: [`CallOptions`], a bounded [`ToolOutput`], a relayed
//! call's [`Relayed`] outcome, and [`error_result`] for a call that produced no result.

use std::time::Duration;

use mcp_protocol::RawJson;
use mcp_protocol::schema::{CallToolResult, ContentBlock, ProgressParams};
use tokio::sync::{mpsc, oneshot};

use crate::TaskRecord;
use crate::error::CallError;

/// The result of a call that reached the server and came back: a tool result, possibly a
/// tool error (`isError`), bounded.
///
/// It is the server's data as the server sent it, not redacted: a tool's answer may hold
/// what the user asked it for (a value that matches a configured secret, or a short one that
/// is a common word), redaction would corrupt structured content and encoded blobs, and a
/// server that means to pass a secret on can encode it. The host's own texts about a server
/// (its errors, which [`error_result`] turns into a tool error, its status, its logs) hide
/// the server's secrets.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ToolOutput {
    /// The result, bounded; cuts are marked inside it.
    pub result: CallToolResult,
    /// Whether the host cut anything.
    pub truncated: bool,
}

impl ToolOutput {
    /// An output made elsewhere and carried here: a gateway replica answering a retry with
    /// the result of a call another replica ran (`result` already bounded there).
    pub fn new(result: CallToolResult, truncated: bool) -> Self {
        Self { result, truncated }
    }

    /// Whether the tool reported a failure (`isError: true`): an answer for the model, not a
    /// failure of the host.
    pub fn is_tool_error(&self) -> bool {
        self.result.is_tool_error()
    }
}

/// Options of one call.
#[derive(Debug, Default)]
#[non_exhaustive]
pub struct CallOptions {
    /// Receives the server's progress notifications (and asks the server for them).
    pub progress: Option<mpsc::UnboundedSender<ProgressParams>>,
    /// The idle timeout instead of the server's `request_timeout`.
    pub timeout: Option<Duration>,
    /// For [`Host::relay_call`](crate::Host::relay_call): hand a stateless server's `input_required` result back as
    /// it came, for the client we relay for to answer, instead of answering its input
    /// requests through the host's [`ServerRequestHandler`](crate::ServerRequestHandler). [`Host::call_tool`](crate::Host::call_tool) ignores it.
    pub pass_input_required: bool,
    /// For [`Host::relay_call`](crate::Host::relay_call): a tag of the consumer's choosing,
    /// given back with what the server sends about this call when it says so (its requests
    /// to the [`ServerRequestHandler`](crate::ServerRequestHandler)'s
    /// [`handle_related`](crate::ServerRequestHandler::handle_related), its notifications in
    /// [`HostEvent::Notification`](crate::HostEvent::Notification)): a gateway relaying for
    /// several clients tells by it whose call the server is asking or writing about.
    pub related: Option<u64>,
    /// Run a tool whose `execution.taskSupport` is `optional` as a task, on a server that runs
    /// tasks: a consumer that is itself serving the call as a task (a gateway) wants the
    /// server's task, with its status and input, not a plain call that cannot ask.
    pub as_task: bool,
    /// For [`Host::relay_call`](crate::Host::relay_call): told the server's task the moment
    /// the server answers the call with one, before the host follows it to its end. A
    /// consumer that serves the call as a task of its own (a gateway) starts its task then
    /// and not before, so that what came earlier (a stateless server's `input_required`
    /// rounds, with [`pass_input_required`](Self::pass_input_required)) reaches its client
    /// as a plain call's would. Dropped unsent when the call ends without a task.
    pub task_started: Option<oneshot::Sender<TaskRecord>>,
}

/// What a relayed tool call ([`Host::relay_call`](crate::Host::relay_call)) came back with.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Relayed {
    /// The call finished: the tool's result, bounded like any call's.
    Complete(ToolOutput),
    /// The server needs input first (the stateless era's multi round-trip): its result as it
    /// came, `inputRequests` and `requestState` untouched, for the relayed client to answer
    /// and call again with `inputResponses` and the same `requestState`.
    InputRequired(RawJson),
}

impl CallOptions {
    /// Hands `input_required` results back (see
    /// [`pass_input_required`](Self::pass_input_required)).
    pub fn passing_input_required(mut self) -> Self {
        self.pass_input_required = true;
        self
    }

    /// Waits at most `timeout` without an answer or progress, instead of the server's
    /// `request_timeout`.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Tags the call (see [`related`](Self::related)).
    pub fn related(mut self, tag: u64) -> Self {
        self.related = Some(tag);
        self
    }

    /// Runs an optional task tool as a task (see [`as_task`](Self::as_task)).
    pub fn as_task(mut self) -> Self {
        self.as_task = true;
        self
    }

    /// Tells `started` of the server's task once the server makes one (see
    /// [`task_started`](Self::task_started)).
    pub fn telling_task_started(mut self, started: oneshot::Sender<TaskRecord>) -> Self {
        self.task_started = Some(started);
        self
    }

    /// Delivers the server's progress notifications to `progress`.
    pub fn progress(mut self, progress: mpsc::UnboundedSender<ProgressParams>) -> Self {
        self.progress = Some(progress);
        self
    }
}

/// A tool error result for the model, from any failure: what a consumer sends back when a
/// call was denied or failed, so that the model reads one kind of answer.
pub fn error_result(error: &CallError) -> CallToolResult {
    let mut result = CallToolResult::new(vec![ContentBlock::text(error.to_string())]);
    result.is_error = Some(true);
    result
}
