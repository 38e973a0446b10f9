//! The input a 2026-07-28 task asks for (`input_required` with its `inputRequests`): each
//! question answered through the host's request handler, all at once, and the answers sent
//! with `tasks/update`.

use std::collections::BTreeSet;
use std::sync::Arc;

use mcp_protocol::JsonObject;
use mcp_protocol::schema::ServerRequest;
use serde_json::Value;

use super::{Seen, TaskCall, id_params};
use crate::error::CallError;

/// Answers the input requests (2026-07-28) not answered yet through the host's request
/// handler, and sends the answers with `tasks/update`.
pub(super) async fn answer_inputs(
    call: &TaskCall<'_>,
    seen: &Seen,
    answered: &mut BTreeSet<String>,
) -> Result<(), CallError> {
    let task_id = seen.task_id.as_str();
    // Every question is asked at once, as the server asked them: a person (or the client a
    // gateway relays for) sees them together, and one slow answer holds up no other.
    let mut pending = tokio::task::JoinSet::new();
    for (key, input) in &seen.input_requests {
        if answered.contains(key) {
            continue;
        }
        let request = ServerRequest::decode(&input.method, input.params.as_ref()).map_err(|e| {
            call.failed(
                Some(task_id),
                "input",
                format!("inputRequests.{key}: invalid {} params: {e}", input.method),
            )
        })?;
        let (inner, server, related) =
            (Arc::clone(call.inner), call.server.to_owned(), call.related);
        let key = key.clone();
        pending.spawn(async move {
            let answer = crate::server_requests::answer(&inner, &server, request, related).await;
            (key, answer)
        });
    }
    let mut responses = JsonObject::new();
    while let Some(joined) = pending.join_next().await {
        let (key, answer) = joined.map_err(|e| {
            call.failed(
                Some(task_id),
                "input",
                format!("an input request stopped: {e}"),
            )
        })?;
        let answer = answer.map_err(|e| {
            call.failed(
                Some(task_id),
                "input",
                format!("inputRequests.{key} was not answered: {}", e.message),
            )
        })?;
        let value = answer
            .decode::<Value>()
            .map_err(|e| call.failed(Some(task_id), "input", e.to_string()))?;
        responses.insert(key, value);
    }
    if responses.is_empty() {
        return Ok(());
    }
    answered.extend(responses.keys().cloned());
    let mut params = id_params(task_id);
    params.insert("inputResponses".into(), Value::Object(responses));
    call.send("tasks/update", params, task_id, "tasks/update", call.idle)
        .await
        .map(|_| ())
}
