//! The upstream set as it changes while the gateway runs. The gateway serves before any
//! upstream is ready: start-up and a reload of the file are the same step, a change of the
//! set ([`apply`]): upstreams added are started, removed ones stopped, changed ones restarted,
//! unchanged ones left alone, all in the background. Each joins when it is ready, and the
//! mode tells the clients in front with `list_changed` (passthrough from the host's events,
//! see `mode::passthrough`; category mode when the file's categories change).
//!
//! What needs one upstream (a call, a category's definitions) waits for it while it is still
//! connecting, or lost and about to be connected again by the host's supervisor, up to its
//! request timeout ([`settle`]); then it is answered from the state the upstream is in, whose
//! errors name it and that state.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::task::{Context, Waker};

use mcp_host::{HostEvent, ServerEntry, ServerState};
use serde_json::Value;

use crate::file::GatewayFile;
use crate::shared::Shared;
use crate::sync::lock;
use crate::upstream_state::has_settled;

/// How the upstream set changed, by id.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Change {
    pub(crate) added: Vec<String>,
    pub(crate) removed: Vec<String>,
    pub(crate) changed: Vec<String>,
}

impl Change {
    /// Whether the set is as it was.
    pub(crate) fn is_empty(&self) -> bool {
        self.added.is_empty() && self.removed.is_empty() && self.changed.is_empty()
    }

    /// Every upstream that is started by the change.
    fn started(&self) -> BTreeSet<&str> {
        self.added
            .iter()
            .chain(&self.changed)
            .map(String::as_str)
            .collect()
    }
}

/// How `new` differs from `old` in `mcpServers`: an entry is changed when any of its fields is
/// (compared as written, so `${VAR}` references count as their text).
pub(crate) fn diff(old: &GatewayFile, new: &GatewayFile) -> Change {
    let as_json = |file: &GatewayFile| -> HashMap<String, Value> {
        file.mcp_servers
            .iter()
            .map(|(id, s)| (id.clone(), serde_json::to_value(s).unwrap_or(Value::Null)))
            .collect()
    };
    let (old, new) = (as_json(old), as_json(new));
    let mut change = Change::default();
    for (id, entry) in &new {
        match old.get(id) {
            None => change.added.push(id.clone()),
            Some(before) if before != entry => change.changed.push(id.clone()),
            Some(_) => {}
        }
    }
    change.removed = old
        .keys()
        .filter(|id| !new.contains_key(*id))
        .cloned()
        .collect();
    change.added.sort();
    change.changed.sort();
    change.removed.sort();
    change
}

/// Applies `change` with the host's `entries` for the new file: the removed upstreams are
/// stopped and the added and changed ones started, in the background. Returns once the host
/// lists every added one, as `connecting` (or `disabled`), so that a client that asks at once
/// sees the whole set.
pub(crate) async fn apply(shared: &Shared, entries: Vec<ServerEntry>, change: &Change) {
    let started = change.started();
    {
        let mut timeouts = lock(&shared.upstreams.timeouts);
        for id in &change.removed {
            timeouts.remove(id);
        }
        for entry in &entries {
            timeouts.insert(entry.id.clone(), entry.request_timeout);
        }
    }
    let (added, changed): (Vec<ServerEntry>, Vec<ServerEntry>) = entries
        .into_iter()
        .filter(|e| started.contains(e.id.as_str()))
        .partition(|e| change.added.contains(&e.id));
    let waited: Vec<String> = added.iter().map(|e| e.id.clone()).collect();
    let mut events = shared.host.subscribe(None, Some(&["state"]));
    // Each in a task of its own, so that stopping one upstream holds up no other; the host
    // returns when the started ones have settled, which nothing here waits for. One start
    // per upstream, the added ones first in the file's order (the host admits them in the
    // order their places are taken).
    for id in change.removed.clone() {
        let host = shared.host.clone();
        in_place(async move {
            host.remove(&id).await;
        });
    }
    for entry in added.into_iter().chain(changed) {
        let host = shared.host.clone();
        in_place(async move { host.start(vec![entry]).await });
    }
    let listed = |shared: &Shared| {
        waited
            .iter()
            .all(|id| shared.host.server_status(id).is_some())
    };
    // The host lists a new upstream as it takes it, before its first await.
    while !listed(shared) {
        if events.recv().await.is_none() {
            return;
        }
    }
}

/// Runs a change of the host's server set (a start or a removal of one upstream) in a task
/// of its own, after polling it once here: the host takes or gives up the upstream's place
/// before its first await, so the places change in the order of the reloads (which run one
/// at a time), however the tasks are then scheduled. Spawned as they were, a restart from an
/// earlier reload could take its place after a later reload's, and leave the upstream running
/// an entry the file no longer has, or a removal could remove the upstream added back after
/// it (a storm of SIGHUPs and file changes did both).
fn in_place(change: impl Future<Output = ()> + Send + 'static) {
    let mut change = Box::pin(change);
    let mut first = Context::from_waker(Waker::noop());
    if change.as_mut().poll(&mut first).is_pending() {
        // The task polls it again at once, with a waker of its own.
        tokio::spawn(change);
    }
}

/// Waits until each of `servers` has settled (see [`Upstreams::settle`]), or until the
/// longest of their request timeouts has passed.
pub(crate) async fn settle(shared: &Shared, servers: &[&str]) {
    shared.upstreams.settle(&shared.host, servers).await;
}

/// Logs each of `servers` once it has settled (left `connecting`), with its state, tools and
/// error; then, once all have, the lines of `after`, and says so on `done` if given. Ends
/// early if the gateway goes away.
pub(crate) fn report_when_settled(
    shared: &Arc<Shared>,
    servers: Vec<String>,
    after: impl FnOnce(&Arc<Shared>) -> Vec<String> + Send + 'static,
    done: Option<tokio::sync::watch::Sender<bool>>,
) {
    let weak = Arc::downgrade(shared);
    let mut events = shared.host.subscribe(None, Some(&["state", "catalog"]));
    tokio::spawn(async move {
        let mut pending: BTreeSet<String> = servers.into_iter().collect();
        let mut cataloged = BTreeSet::new();
        loop {
            let Some(shared) = weak.upgrade() else {
                return;
            };
            pending.retain(|id| {
                if !has_settled(&shared.host, id, &cataloged) {
                    return true;
                }
                // One removed before it settled has nothing to say.
                if let Some(status) = shared.host.server_status(id) {
                    log_status(&shared, &status);
                }
                false
            });
            if pending.is_empty() {
                for line in after(&shared) {
                    shared.log.line(&line);
                }
                if let Some(done) = done {
                    done.send_replace(true);
                }
                return;
            }
            drop(shared);
            match events.recv().await {
                Some(HostEvent::Catalog { server, .. }) => {
                    cataloged.insert(server);
                }
                Some(_) => {}
                None => return,
            }
        }
    });
}

/// One upstream's line in the log: its state, its tool count and its last error.
fn log_status(shared: &Shared, status: &mcp_host::ServerStatus) {
    let error = status
        .last_error
        .as_deref()
        .map(|e| format!(": {e}"))
        .unwrap_or_default();
    // The gateway has no browser: a person logs in to the upstream beforehand.
    let hint = if status.state == ServerState::AuthRequired {
        format!(
            "; log in with `mcp-host login --gateway {} {}`",
            shared.path.display(),
            status.id
        )
    } else {
        String::new()
    };
    shared.log.line(&format!(
        "upstream {}: {} ({} tools){error}{hint}",
        status.id, status.state, status.tools
    ));
}
