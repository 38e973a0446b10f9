//! What the gateway keeps about its upstream set beyond the host, held by `Shared` and used by
//! `upstreams` (a leaf, so that neither imports the other), and the wait for an upstream that
//! is coming ([`Upstreams::settle`]), which a call needs wherever it is made.

use std::collections::{BTreeSet, HashMap};
use std::sync::Mutex;
use std::time::Duration;

use mcp_host::{Host, HostEvent, ServerState, ServerStatus};

use crate::sync::lock;

/// How long a request waits for an upstream that is coming when its entry says nothing
/// (the host's default request timeout).
const DEFAULT_WAIT: Duration = Duration::from_secs(30);

/// What the gateway knows of its upstream set beyond the host: how long each may be waited
/// for, and the lock that keeps two reloads from interleaving.
#[derive(Debug, Default)]
pub(crate) struct Upstreams {
    pub(crate) timeouts: Mutex<HashMap<String, Duration>>,
    pub(crate) reloading: tokio::sync::Mutex<()>,
    /// Becomes `true` once every upstream of the file at start-up has settled once and the
    /// start-up summary is logged.
    pub(crate) started: tokio::sync::watch::Sender<bool>,
}

impl Upstreams {
    /// Waits until each of `servers` has settled (see [`has_settled`]), or until the longest
    /// of their request timeouts has passed.
    pub(crate) async fn settle(&self, host: &Host, servers: &[&str]) {
        // Subscribed before the first look, so that no change between the two is missed.
        let mut events = host.subscribe(Some(servers), Some(&["state", "catalog"]));
        let mut cataloged = BTreeSet::new();
        let all =
            |cataloged: &BTreeSet<String>| servers.iter().all(|s| has_settled(host, s, cataloged));
        if all(&cataloged) {
            return;
        }
        let wait = {
            let timeouts = lock(&self.timeouts);
            servers
                .iter()
                .filter_map(|s| timeouts.get(*s).copied())
                .max()
                .unwrap_or(DEFAULT_WAIT)
        };
        let _ = tokio::time::timeout(wait, async {
            while !all(&cataloged) {
                match events.recv().await {
                    Some(HostEvent::Catalog { server, .. }) => {
                        cataloged.insert(server);
                    }
                    Some(_) => {}
                    None => return,
                }
            }
        })
        .await;
    }
}

/// Whether an upstream is coming: connecting (at start-up, after a reload that restarted it,
/// or in a reconnection attempt), or lost and waiting for the host's supervisor to connect it
/// again. A request for it waits rather than fail at once.
pub(crate) fn is_coming(status: &ServerStatus) -> bool {
    match status.state {
        ServerState::Connecting => true,
        ServerState::Error => status.reconnect_at.is_some(),
        _ => false,
    }
}

/// Whether upstream `id` has settled: it is no longer coming ([`is_coming`]), and if it is
/// ready, its tools are in the catalogue (the host says it is ready just before it rebuilds
/// the catalogue; a catalogue event for it, in `cataloged`, says the rebuild is done). One
/// that is gone has settled too.
pub(crate) fn has_settled(host: &Host, id: &str, cataloged: &BTreeSet<String>) -> bool {
    match host.server_status(id) {
        None => true,
        Some(status) if is_coming(&status) => false,
        Some(status) if status.state == ServerState::Ready => {
            status.tools == 0
                || cataloged.contains(id)
                || host.catalog().server_tools(id).next().is_some()
        }
        Some(_) => true,
    }
}
