//! What subscribers hear about servers: [`HostEvent`]s, through a filtered [`Subscription`].

use std::collections::BTreeSet;

use mcp_protocol::schema::ServerNotification;
use tokio::sync::broadcast;

use crate::status::ServerState;

/// Something that happened on a server, for subscribers ([`Host::subscribe`](crate::Host::subscribe)).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum HostEvent {
    /// The server moved to `state`.
    State {
        /// The server id.
        server: String,
        /// Its new state.
        state: ServerState,
    },
    /// The server's tools in the catalogue changed (connected, lost, refreshed).
    Catalog {
        /// The server id.
        server: String,
    },
    /// A notification from the server (log message, list change, progress, resource update).
    Notification {
        /// The server id.
        server: String,
        /// The notification.
        notification: ServerNotification,
        /// The [`CallOptions::related`](crate::CallOptions::related) tag of the call it
        /// belongs to, when the server said (it came on that call's Streamable HTTP response
        /// stream): a log entry written while serving one consumer's call, for that consumer.
        related: Option<u64>,
    },
    /// A task the host runs on the server changed status (or was first seen): a long tool
    /// call's progress, for a consumer that shows it beside the call.
    Task {
        /// The server id.
        server: String,
        /// The task as the host keeps it now.
        task: crate::tasks::store::TaskRecord,
    },
    /// Something the server did wrong that did not end the connection.
    Diagnostic {
        /// The server id.
        server: String,
        /// What happened.
        message: String,
    },
}

impl HostEvent {
    /// The server it is about.
    pub fn server(&self) -> &str {
        match self {
            Self::State { server, .. }
            | Self::Catalog { server }
            | Self::Notification { server, .. }
            | Self::Task { server, .. }
            | Self::Diagnostic { server, .. } => server,
        }
    }

    /// Its kind, for filtering: `state`, `catalog`, `diagnostic`, or the notification's
    /// method without its `notifications/` prefix (`tools/list_changed`, `message`, …).
    pub fn kind(&self) -> &str {
        match self {
            Self::State { .. } => "state",
            Self::Catalog { .. } => "catalog",
            Self::Diagnostic { .. } => "diagnostic",
            Self::Task { .. } => "task",
            Self::Notification { notification, .. } => {
                let method = notification.method();
                method.strip_prefix("notifications/").unwrap_or(method)
            }
        }
    }
}

/// A subscriber's stream of events, filtered by server and kind (seed 003's notification
/// dispatcher).
#[derive(Debug)]
pub struct Subscription {
    rx: broadcast::Receiver<HostEvent>,
    servers: Option<BTreeSet<String>>,
    kinds: Option<BTreeSet<String>>,
    missed: u64,
}

impl Subscription {
    /// A subscriber of `rx`'s events from `servers` (all when `None`) of `kinds` (all when
    /// `None`).
    pub(crate) fn new(
        rx: broadcast::Receiver<HostEvent>,
        servers: Option<BTreeSet<String>>,
        kinds: Option<BTreeSet<String>>,
    ) -> Self {
        Self {
            rx,
            servers,
            kinds,
            missed: 0,
        }
    }

    /// The next matching event; `None` once the host is gone. A subscriber that falls behind
    /// skips what it missed and can tell from [`missed`](Self::missed).
    pub async fn recv(&mut self) -> Option<HostEvent> {
        loop {
            match self.rx.recv().await {
                Ok(event) => {
                    let server_ok = self
                        .servers
                        .as_ref()
                        .is_none_or(|s| s.contains(event.server()));
                    let kind_ok = self.kinds.as_ref().is_none_or(|k| k.contains(event.kind()));
                    if server_ok && kind_ok {
                        return Some(event);
                    }
                }
                Err(broadcast::error::RecvError::Lagged(n)) => self.missed += n,
                Err(broadcast::error::RecvError::Closed) => return None,
            }
        }
    }

    /// How many events were skipped because this subscriber was too slow.
    pub fn missed(&self) -> u64 {
        self.missed
    }
}
