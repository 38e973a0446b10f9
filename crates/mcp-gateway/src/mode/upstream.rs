//! Which upstreams a passthrough request may go to, and what an upstream's error becomes for
//! the client. Passthrough mode and its skills (`skills.rs`, which passthrough calls) both
//! need them, so they live in this leaf rather than in either.

use mcp_protocol::schema::ServerCapabilities;
use mcp_protocol::{ErrorObject, Secrets};
use mcp_session::Client;

use crate::reply;
use crate::shared::Shared;

/// Whether names are namespaced: more than one upstream is configured (whether or not they are
/// up, so that a name does not change when one goes down).
pub(super) fn is_multi(shared: &Shared) -> bool {
    shared.host.server_count() > 1
}

/// The ready upstreams and their sessions.
pub(super) fn ready(shared: &Shared) -> Vec<(String, Client)> {
    // The host gives a server's client only while it is ready.
    shared
        .host
        .server_ids()
        .into_iter()
        .filter_map(|id| shared.host.client(&id).ok().map(|c| (id, c)))
        .collect()
}

/// The ready upstreams whose capabilities pass `has`.
pub(super) fn ready_with(
    shared: &Shared,
    has: fn(&ServerCapabilities) -> bool,
) -> Vec<(String, Client)> {
    ready(shared)
        .into_iter()
        .filter(|(_, c)| has(&c.server_info().capabilities))
        .collect()
}

/// An upstream's error as the client gets it: a JSON-RPC error as the upstream sent it, other
/// failures as an internal error naming the upstream, the upstream's secrets redacted.
pub(super) fn upstream_error(
    server: &str,
    secrets: &Secrets,
    e: &mcp_session::Error,
) -> ErrorObject {
    match e.protocol() {
        mcp_protocol::Error::Rpc { error, .. } => {
            let mut error = error.clone();
            error.message = secrets.redact(&error.message);
            if let Some(data) = &mut error.data {
                secrets.redact_json(data);
            }
            error
        }
        other => reply::internal(secrets.redact(&format!("upstream server `{server}`: {other}"))),
    }
}
