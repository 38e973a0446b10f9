//! How the gateway says something failed: the one idiom of every mode.
//!
//! A failure a model can act on (an unknown category or tool, a server that is down, a call
//! the permission rules refuse) is a tool error whose text starts with its kind (seed 004
//! §2), made by [`tool_error`]. A failure of the protocol itself is a JSON-RPC error, made by
//! [`internal`], [`invalid_params`] and [`method_not_found`]. A name a client or an upstream
//! sent is cleaned and bounded (`clean_text`) before a message quotes it.

use mcp_host::{CallError, ServerState, ServerStatus};
use mcp_protocol::schema::{
    CallToolResult, ContentBlock, ListChangedCapability, ServerCapabilities, meta_key,
};
use mcp_protocol::{ErrorObject, JsonObject, RawJson, code};

/// The gateway's own failures, as seed 004 §2 names them: the first word of the tool error's
/// text, so that a model (and a script) can tell them apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ErrorKind {
    UnknownCategory,
    UnknownTool,
    ToolDisabled,
    UpstreamUnavailable,
    UpstreamCallError,
    /// The permission rules (or `unattended`) refused the call; it never reached the upstream.
    PermissionDenied,
    /// The gateway file's rules allow the caller fewer calls a minute; the error says when
    /// to try again (`retryAfterSeconds`).
    RateLimited,
    SchemaFetchError,
    InvalidArguments,
}

impl ErrorKind {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::UnknownCategory => "UnknownCategory",
            Self::UnknownTool => "UnknownTool",
            Self::ToolDisabled => "ToolDisabled",
            Self::UpstreamUnavailable => "UpstreamUnavailable",
            Self::UpstreamCallError => "UpstreamCallError",
            Self::PermissionDenied => "PermissionDenied",
            Self::RateLimited => "RateLimited",
            Self::SchemaFetchError => "SchemaFetchError",
            Self::InvalidArguments => "InvalidArguments",
        }
    }
}

/// A tool error result (`isError: true`) saying `kind: message`, with the kind also in
/// `structuredContent.error` for programs.
pub(crate) fn tool_error(kind: ErrorKind, message: &str) -> CallToolResult {
    let mut result = CallToolResult::new(vec![ContentBlock::text(format!(
        "{}: {message}",
        kind.as_str()
    ))]);
    result.is_error = Some(true);
    result.structured_content =
        Some(serde_json::json!({"error": {"kind": kind.as_str(), "message": message}}));
    result
}

/// The kind of a failed upstream call.
pub(crate) fn call_error_kind(error: &CallError) -> ErrorKind {
    match error {
        CallError::UnknownServer { .. } | CallError::NotReady { .. } => {
            ErrorKind::UpstreamUnavailable
        }
        CallError::UnknownTool { .. } => ErrorKind::UnknownTool,
        CallError::Denied { .. } => ErrorKind::PermissionDenied,
        _ => ErrorKind::UpstreamCallError,
    }
}

/// The tool error for a failed upstream call: its kind, then what the host said.
pub(crate) fn call_error_result(error: &CallError) -> CallToolResult {
    tool_error(call_error_kind(error), &error.to_string())
}

/// The `UpstreamUnavailable` tool error for a configured server that is not ready.
pub(crate) fn not_ready(server: &str, status: &ServerStatus) -> CallToolResult {
    let why = status
        .last_error
        .as_deref()
        .map(|e| format!(": {e}"))
        .unwrap_or_default();
    // A server the host will connect again is said to be, so that the caller may try later.
    let coming =
        if crate::upstream_state::is_coming(status) && status.state != ServerState::Connecting {
            ", reconnecting"
        } else {
            ""
        };
    tool_error(
        ErrorKind::UpstreamUnavailable,
        &format!(
            "server `{server}` is not ready (state {}{coming}){why}",
            status.state
        ),
    )
}

/// What category and meta modes declare: tools only, a list that never changes.
pub(crate) fn tools_only_capabilities() -> ServerCapabilities {
    let mut tools = ListChangedCapability::new();
    tools.list_changed = Some(false);
    let mut capabilities = ServerCapabilities::default();
    capabilities.tools = Some(tools);
    declare_tasks(&mut capabilities);
    capabilities
}

/// Declares tasks to the gateway's clients in both forms: 2025-11-25's `tasks` member and
/// the 2026-07-28 extension.
pub(crate) fn declare_tasks(caps: &mut ServerCapabilities) {
    if let serde_json::Value::Object(tasks) =
        serde_json::json!({"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}})
    {
        caps.tasks = Some(tasks);
    }
    if let serde_json::Value::Object(extensions) = caps
        .extra
        .entry("extensions")
        .or_insert_with(|| serde_json::Value::Object(JsonObject::new()))
    {
        extensions.insert(
            mcp_protocol::schema::TASKS_EXTENSION_ID.to_owned(),
            serde_json::json!({}),
        );
    }
}

/// Encodes a result for the session; a value that cannot be encoded becomes an internal
/// error rather than a panic.
pub(crate) fn encode(value: &impl serde::Serialize) -> Result<RawJson, ErrorObject> {
    RawJson::encode(value).map_err(|e| internal(e.to_string()))
}

/// A stateless upstream's result without its `_meta` `serverInfo`: the client's server is the
/// gateway, whose own the session adds, so that it does not change from one result to the
/// next (or say which upstream answered).
pub(crate) fn without_server_info(result: RawJson) -> Result<RawJson, ErrorObject> {
    if !result.get().contains(meta_key::SERVER_INFO) {
        return Ok(result);
    }
    let mut object: JsonObject = result.decode().map_err(|e| internal(e.to_string()))?;
    if let Some(serde_json::Value::Object(meta)) = object.get_mut("_meta") {
        meta.remove(meta_key::SERVER_INFO);
        if meta.is_empty() {
            object.remove("_meta");
        }
    }
    encode(&object)
}

/// What a mode's own tool call answers: a result, or an answer sent as it is: the
/// `input_required` result of an upstream call that asked its 2026-07-28 client something,
/// or the task the gateway runs the call as ([`Called`](crate::shared::Called)).
#[derive(Debug)]
pub(crate) enum ToolReply {
    Result(CallToolResult),
    Raw(RawJson),
}

impl From<CallToolResult> for ToolReply {
    fn from(result: CallToolResult) -> Self {
        Self::Result(result)
    }
}

impl ToolReply {
    /// The reply as the client's `tools/call` result.
    pub(crate) fn encode(self) -> Result<RawJson, ErrorObject> {
        match self {
            Self::Result(result) => encode(&result),
            Self::Raw(raw) => Ok(raw),
        }
    }
}

/// A -32603 internal error saying `what`.
pub(crate) fn internal(what: impl std::fmt::Display) -> ErrorObject {
    ErrorObject::new(code::INTERNAL_ERROR, what.to_string())
}

/// A -32602 invalid-params error saying `what`.
pub(crate) fn invalid_params(what: impl std::fmt::Display) -> ErrorObject {
    ErrorObject::new(code::INVALID_PARAMS, what.to_string())
}

/// A -32601 method-not-found error saying `what`.
pub(crate) fn method_not_found(what: impl std::fmt::Display) -> ErrorObject {
    ErrorObject::new(code::METHOD_NOT_FOUND, what.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gateway_errors_name_their_kind_first() {
        let r = tool_error(ErrorKind::UnknownCategory, "no category `x`");
        assert_eq!(r.is_error, Some(true));
        let json = serde_json::to_value(&r).expect("encodes");
        assert_eq!(
            json["content"][0]["text"],
            "UnknownCategory: no category `x`"
        );
        assert_eq!(
            json["structuredContent"]["error"]["kind"],
            "UnknownCategory"
        );
    }
}
