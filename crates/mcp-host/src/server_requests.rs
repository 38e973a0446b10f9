//! The host's answer to a server's request (sampling, elicitation, roots, ping), one place
//! for the connection's requests (`supervisor::serve`) and for the input requests of a task
//! (`tasks`), which a 2026-07-28 server asks in its `tasks/get` answer instead of sending.

use mcp_protocol::schema::{ListRootsResult, ServerRequest};
use mcp_protocol::{ErrorObject, JsonObject, RawJson};

use crate::shared::Inner;

/// Answers a server request: roots from the configured list (if any), the rest from the
/// consumer's handler. The session refuses what was not declared before it gets here; a
/// task's input requests are the requests a handshake-era server would have sent.
pub(crate) async fn answer(
    inner: &Inner,
    server: &str,
    request: ServerRequest,
    related: Option<u64>,
) -> Result<RawJson, ErrorObject> {
    let internal =
        |e: serde_json::Error| ErrorObject::new(mcp_protocol::code::INTERNAL_ERROR, e.to_string());
    match request {
        ServerRequest::ListRoots(_) if inner.options.roots.is_some() => {
            let roots = inner.options.roots.clone().unwrap_or_default();
            RawJson::encode(&ListRootsResult::new(roots)).map_err(internal)
        }
        ServerRequest::Ping(_) => RawJson::encode(&JsonObject::new()).map_err(internal),
        other => match &inner.options.requests {
            Some(handler) => handler.handle_related(server, other, related).await,
            None => Err(ErrorObject::new(
                mcp_protocol::code::METHOD_NOT_FOUND,
                format!("{} is not supported by this host", other.method()),
            )),
        },
    }
}
