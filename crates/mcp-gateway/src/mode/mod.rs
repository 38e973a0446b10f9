//! One trait per mode, in the manner of hyper's `Http1Transaction` (`proto/h1/mod.rs`) with
//! its roles in `role.rs`: the server in `server.rs` asks the mode it was started with, and
//! never branches on which mode that is.
//!
//! Each mode keeps its own state: category and meta modes a [`ListCache`](crate::cache::ListCache)
//! of when each upstream's tools were listed, passthrough mode its routing tables. What
//! they share (the host, the file, upstream calls, the way back, replies, tool names) is in
//! leaf modules that import no mode.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use mcp_protocol::schema::{ClientNotification, ClientRequest, ServerCapabilities};
use mcp_protocol::{ErrorObject, RawJson};
use mcp_session::{RequestContext, SessionKey};

use crate::file::{self, GatewayFile};
use crate::shared::Shared;
use crate::upstreams::Change;

pub(crate) mod category;
pub(crate) mod meta;
pub(crate) mod passthrough;
mod skills;
mod upstream;

/// The answer to one client request, boxed so that the server can hold any mode.
pub(crate) type Answer<'a> =
    Pin<Box<dyn Future<Output = Result<RawJson, ErrorObject>> + Send + 'a>>;

/// What a mode does for the server in front of it.
pub(crate) trait Mode: fmt::Debug + Send + Sync + 'static {
    /// Which mode this is, as the file names it.
    fn kind(&self) -> file::Mode;

    /// What it declares to a client in `initialize`.
    fn capabilities(&self, shared: &Shared) -> ServerCapabilities;

    /// The instructions it gives a client in `initialize`, if any.
    fn instructions(&self, shared: &Shared) -> Option<String>;

    /// Runs once as the gateway starts, before any upstream is ready (passthrough starts
    /// relaying the host's events); by default nothing.
    fn begin(&self, shared: &Arc<Shared>) {
        let _ = shared;
    }

    /// Runs once the first upstreams have settled; returns the lines of its start-up summary.
    fn start(&self, shared: &Arc<Shared>) -> Vec<String>;

    /// The gateway file was reloaded: the upstream set changed by `change`, and `before` is
    /// the file it replaced. A mode whose lists changed tells its clients; by default nothing.
    fn reloaded(&self, shared: &Shared, change: &Change, before: &GatewayFile) {
        let _ = (shared, change, before);
    }

    /// A stateless-era client's `subscriptions/listen` stream (in `session`, which ends with
    /// the stream over HTTP) asks for updates of `uris` (that era has no
    /// `resources/subscribe`); by default nothing is done.
    fn listening(&self, shared: &Arc<Shared>, session: SessionKey, uris: Vec<String>) {
        let _ = (shared, session, uris);
    }

    /// A client session ended (a listen stream closed, a handshake client left), before the
    /// gateway forgets it: what only it wanted upstream may be given up; by default nothing.
    fn closed(&self, shared: &Arc<Shared>, session: SessionKey) {
        let _ = (shared, session);
    }

    /// Answers one client request.
    fn handle<'a>(
        &'a self,
        shared: &'a Shared,
        request: ClientRequest,
        context: RequestContext,
    ) -> Answer<'a>;

    /// Hears a client notification; by default nothing is done with it.
    fn notified(&self, shared: &Shared, session: SessionKey, notification: ClientNotification) {
        let _ = (shared, session, notification);
    }

    /// The `inputSchema` of the tool a client calls by `name`, for the HTTP half to check
    /// `Mcp-Param-*` headers; by default none (the mode's own tools mirror no argument).
    fn tool_schema(&self, shared: &Shared, name: &str) -> Option<RawJson> {
        let _ = (shared, name);
        None
    }
}
