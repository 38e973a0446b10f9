//! Answering `tasks/*` at a replica that shares its tasks: from its own store first, and for a
//! task it does not hold, from the record another replica wrote, for that task's owner only;
//! a `tasks/result` there carries the questions the record holds for the client.

use std::collections::HashSet;

use mcp_protocol::schema::{ClientRequest, ExperimentalTask, TaskStatus};
use mcp_protocol::{Era, ErrorObject, RawJson, Request, RequestId, code};
use mcp_session::{Peer, RequestContext, Tasks};

use super::{MAX_RECORD, Stored, TaskShare, encode};

/// Whether the caller of `context` owns `stored`, as at the replica that runs it: the same
/// session (by its name among replicas) in the handshake era; in 2026-07-28 the same
/// authenticated caller (by a digest of its subject), or anyone who knows the id of a task
/// nobody authenticated made.
pub(super) fn owns(stored: &Stored, context: &RequestContext) -> bool {
    if context.era == Some(Era::Stateless) {
        return stored.owner.as_deref() == context.session_name.as_deref();
    }
    match (&stored.owner, &context.session_name) {
        (Some(owner), Some(name)) => owner.as_str() == &**name,
        _ => false,
    }
}

pub(super) fn too_large(stored: &Stored) -> ErrorObject {
    ErrorObject::new(
        code::INTERNAL_ERROR,
        format!(
            "the task's result ({} bytes) is larger than the replicas share ({MAX_RECORD} bytes): only the gateway replica that ran it holds it",
            stored.too_large.unwrap_or_default()
        ),
    )
}

/// `tasks/get`'s answer from a record, in the caller's era's form.
pub(super) fn get_answer(stored: &Stored, stateless: bool) -> Result<RawJson, ErrorObject> {
    if stateless {
        if stored.task.status == TaskStatus::Completed && stored.task.result.is_none() {
            return Err(too_large(stored));
        }
        let mut task = stored.task.clone();
        task.result_type = Some("complete".to_owned());
        return encode(&task);
    }
    encode(&ExperimentalTask::from_task(&stored.task.info()))
}

/// Answers `tasks/*`: from this replica's store first, as without sharing; a task it does not
/// hold is looked for in `share`, when the replicas share one.
pub(crate) async fn answer(
    share: Option<&TaskShare>,
    tasks: &Tasks,
    request: &ClientRequest,
    context: &RequestContext,
) -> Option<Result<RawJson, ErrorObject>> {
    let local = tasks.answer(request, context).await?;
    let Some(share) = share else {
        return Some(local);
    };
    let id = match request {
        ClientRequest::GetTask(p) | ClientRequest::CancelTask(p) => &p.task_id,
        ClientRequest::GetTaskPayload(p) => &p.task_id,
        ClientRequest::UpdateTask(p) => &p.task_id,
        ClientRequest::ListTasks(_) => {
            return Some(match local {
                Ok(raw) => share.list(raw, context).await,
                Err(e) => Err(e),
            });
        }
        _ => return Some(local),
    };
    // Only an id this replica does not hold is looked for elsewhere; every other answer
    // (another session's task, a method the era lacks) stands.
    match &local {
        Err(e) if e.code == code::INVALID_PARAMS && tasks.status(id).is_none() => {}
        _ => return Some(local),
    }
    match share.remote(request, id, context).await {
        Some(answer) => Some(answer),
        None => Some(local),
    }
}

/// Sends the questions `stored` holds for its client (a handshake task waiting for answers
/// that its standalone stream did not take: its `input_requests`, keyed by the ids of the
/// requests that wait there) on `peer`'s stream, those not in `carried` yet, and notes them
/// there. An id that names no replica (`<16 hex digits>.<n>`, as every request of a replica
/// with sealed sessions is named) is left: the client's answer to it would stay at the replica
/// it reached, where nothing waits for it. (Not only the record's replica: a gateway served
/// twice asks through each serve's own name.)
pub(super) fn carry(stored: &Stored, peer: &Peer, carried: &mut HashSet<String>) {
    if stored.task.status != TaskStatus::InputRequired {
        return;
    }
    let Some(questions) = &stored.task.input_requests else {
        return;
    };
    let names_a_replica = |id: &str| {
        id.split_once('.').is_some_and(|(replica, _)| {
            replica.len() == 16 && replica.bytes().all(|b| b.is_ascii_hexdigit())
        })
    };
    for (id, question) in questions {
        if !names_a_replica(id) || carried.contains(id) {
            continue;
        }
        let request = Request {
            id: RequestId::String(id.clone()),
            method: question.method.clone(),
            params: question.params.clone(),
        };
        if peer.forward_request(request) {
            carried.insert(id.clone());
        }
    }
}
