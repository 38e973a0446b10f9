//! How a host behaves ([`HostOptions`]: limits, backoff, who decides about calls) and the
//! consumer's answers to what servers ask of the host ([`ServerRequestHandler`]).

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use mcp_protocol::schema::{
    ClientCapabilities, Implementation, Root, ServerNotification, ServerRequest,
};
use mcp_protocol::{ErrorObject, RawJson};

use crate::catalog::CatalogLimits;
use crate::config::DEFAULT_MAX_CONNECTIONS;
use crate::permission::{Policy, Prompter};

/// Answers the server requests a consumer chose to support (sampling, elicitation). Declared
/// to servers only when registered; without one, the session refuses these requests itself.
pub trait ServerRequestHandler: Send + Sync + 'static {
    /// The capabilities to declare (`sampling`, `elicitation`, and `roots` when the host has
    /// no roots of its own: configured roots win).
    fn capabilities(&self) -> ClientCapabilities;

    /// Answers `request` from `server`: the raw result, or a JSON-RPC error.
    fn handle<'a>(
        &'a self,
        server: &'a str,
        request: ServerRequest,
    ) -> Pin<Box<dyn Future<Output = Result<RawJson, ErrorObject>> + Send + 'a>>;

    /// Answers `request` from `server`, which the server said belongs to the call tagged
    /// `related` ([`CallOptions::related`](crate::CallOptions::related)): it came on that
    /// call's Streamable HTTP response stream, or that call's `input_required` result asked
    /// it. `None` when nothing said (a stdio server's request, one on the standalone stream,
    /// an untagged call's). By default the same as [`handle`](Self::handle).
    fn handle_related<'a>(
        &'a self,
        server: &'a str,
        request: ServerRequest,
        related: Option<u64>,
    ) -> Pin<Box<dyn Future<Output = Result<RawJson, ErrorObject>> + Send + 'a>> {
        let _ = related;
        self.handle(server, request)
    }

    /// Offers a notification `server` wrote during the call tagged `related` (a log entry on
    /// that call's response stream, say), in the order the server sent it: before any request
    /// it sent after it is handed to [`handle_related`](Self::handle_related). `true` when the
    /// handler took it, and then no [`HostEvent::Notification`](crate::HostEvent) is emitted
    /// for it: a proxy delivers it on the call's own stream before that stream can end. By
    /// default nothing is taken.
    fn take_related(&self, server: &str, notification: &ServerNotification, related: u64) -> bool {
        let _ = (server, notification, related);
        false
    }
}

/// How the host behaves: limits, backoff, who decides about calls.
#[non_exhaustive]
pub struct HostOptions {
    /// Sent as `clientInfo`.
    pub client_info: Implementation,
    /// At most this many servers run at once (default 64); the rest wait in `connecting`,
    /// admitted in the order [`Host::start`](crate::Host::start) was given them as running
    /// ones stop, and say so ([`ServerStatus::waiting`](crate::ServerStatus::waiting)).
    pub max_connections: usize,
    /// Bounds on tool metadata.
    pub catalog_limits: CatalogLimits,
    /// The first wait before reconnecting; it doubles up to `reconnect_max`.
    pub reconnect_initial: Duration,
    /// The longest wait between reconnection attempts.
    pub reconnect_max: Duration,
    /// How many reconnection attempts in a row before the server stays in `error`.
    pub reconnect_attempts: u32,
    /// The hard cap of a call, whatever progress says.
    pub max_call_duration: Duration,
    /// Decides about every call.
    pub policy: Arc<dyn Policy>,
    /// Asks a person when the policy says so; without one, such calls are denied.
    pub prompter: Option<Arc<dyn Prompter>>,
    /// The roots offered to servers; `None` declares no `roots` capability of the host's own
    /// (a [`ServerRequestHandler`] may declare and answer it).
    pub roots: Option<Vec<Root>>,
    /// Sampling and elicitation, when the consumer supports them.
    pub requests: Option<Arc<dyn ServerRequestHandler>>,
    /// Where the era each server spoke is remembered between runs
    /// ([`setup::era_file`](crate::setup::era_file) gives the usual place), so that a server
    /// that ignores the `server/discover` probe costs its timeout once, not on every start.
    /// `None`, the default, remembers only for this host's life.
    pub era_file: Option<PathBuf>,
    /// Where the tasks this host starts are kept ([`setup::task_file`](crate::setup::task_file)
    /// gives the usual place), so that another process (`mcp-host tasks`) can ask about them
    /// and a host started again asks each server about its unfinished ones. `None`, the
    /// default, keeps them for this host's life.
    pub task_file: Option<PathBuf>,
}

impl std::fmt::Debug for HostOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostOptions")
            .field("client_info", &self.client_info.name)
            .field("max_connections", &self.max_connections)
            .field("prompter", &self.prompter.is_some())
            .field("roots", &self.roots.as_ref().map(Vec::len))
            .field("requests", &self.requests.is_some())
            .finish_non_exhaustive()
    }
}

impl HostOptions {
    /// Options with the defaults: 64 connections, reconnect after 0.5 s doubling to 30 s for
    /// 10 attempts, 10-minute call cap, every call asked about (and denied, with no
    /// prompter), no roots, no sampling or elicitation.
    pub fn new(client_info: Implementation, policy: Arc<dyn Policy>) -> Self {
        Self {
            client_info,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            catalog_limits: CatalogLimits::default(),
            reconnect_initial: Duration::from_millis(500),
            reconnect_max: Duration::from_secs(30),
            reconnect_attempts: 10,
            max_call_duration: Duration::from_secs(600),
            policy,
            prompter: None,
            roots: None,
            requests: None,
            era_file: None,
            task_file: None,
        }
    }
}
