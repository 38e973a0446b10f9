//! Meta-tool mode (seed 003).

use mcp_protocol::schema::{ClientRequest, ServerCapabilities};
use mcp_protocol::{ErrorObject, RawJson};
use mcp_session::RequestContext;

use crate::server::Shared;

pub(crate) fn capabilities() -> ServerCapabilities {
    serde_json::from_value(serde_json::json!({"tools": {"listChanged": false}})).unwrap_or_default()
}

pub(crate) fn startup_report(_shared: &Shared) -> Vec<String> {
    Vec::new()
}

pub(crate) async fn handle(
    _shared: &Shared,
    request: ClientRequest,
    _context: RequestContext,
) -> Result<RawJson, ErrorObject> {
    Err(ErrorObject::new(
        mcp_protocol::code::METHOD_NOT_FOUND,
        format!("{} is not served yet", request.method()),
    ))
}
