//! Passthrough mode.

use mcp_protocol::schema::{ClientNotification, ClientRequest, ServerCapabilities};
use mcp_protocol::{ErrorObject, RawJson};
use mcp_session::{RequestContext, SessionKey};

use crate::server::Shared;

pub(crate) fn capabilities(_shared: &Shared) -> ServerCapabilities {
    ServerCapabilities::default()
}

pub(crate) fn instructions(_shared: &Shared) -> Option<String> {
    None
}

pub(crate) fn startup_report(_shared: &Shared) -> Vec<String> {
    Vec::new()
}

pub(crate) fn start_relay(_shared: &std::sync::Arc<Shared>) {}

pub(crate) fn notified(_shared: &Shared, _session: SessionKey, _notification: ClientNotification) {}

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
