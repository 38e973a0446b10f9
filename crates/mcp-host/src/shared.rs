//! The state a [`Host`](crate::Host) and its supervisor tasks share: the host's [`Inner`]
//! (options, servers, catalogue, events) and one [`Slot`] per configured server (its entry,
//! state, connection and task). The facade and the supervisors both read and change it; it
//! imports neither.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::{Duration, SystemTime};

use mcp_protocol::{ClientConfig, ServerInfo};
use mcp_session::Client;
use tokio::sync::broadcast;

use crate::catalog::{Catalog, ExposedTool};
use crate::entry::ServerEntry;
use crate::error::CallError;
use crate::events::HostEvent;
#[cfg(feature = "oauth")]
use crate::oauth::OAuthHook;
use crate::operation::ExposedOperation;
use crate::options::HostOptions;
use crate::permission::{CallRequest, Decision, combine};
use crate::redact::Redactor;
use crate::status::{Phase, ServerState, ServerStatus};

pub(crate) struct Inner {
    pub(crate) options: HostOptions,
    pub(crate) session: ClientConfig,
    pub(crate) slots: Mutex<BTreeMap<String, Arc<Slot>>>,
    pub(crate) catalog: RwLock<Arc<Catalog>>,
    /// Serializes catalogue rebuilds so that a slow one never overwrites a newer one.
    pub(crate) rebuild: Mutex<()>,
    /// The connection limit: who runs, and who waits for a turn in configuration order.
    pub(crate) admission: Arc<crate::admission::Admission>,
    pub(crate) events: broadcast::Sender<HostEvent>,
    /// What the connections to every server share (the HTTP era cache).
    pub(crate) transports: crate::transport::Shared,
    /// The era each server spoke before (on disk, with [`HostOptions::era_file`]).
    pub(crate) eras: crate::eras::EraMemory,
    /// The tasks this host started (on disk, with [`HostOptions::task_file`]).
    pub(crate) tasks: crate::tasks::store::TaskStore,
}

impl std::fmt::Debug for Inner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Host")
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

/// One configured server and its supervisor.
pub(crate) struct Slot {
    pub(crate) entry: ServerEntry,
    /// Keeps this server's secrets out of every text the host forms or keeps about it.
    pub(crate) redactor: Redactor,
    pub(crate) state: Mutex<SlotState>,
    pub(crate) stop: AtomicBool,
    pub(crate) task: Mutex<Option<tokio::task::JoinHandle<()>>>,
    /// The resource URIs the host's consumer subscribed to on this server. They outlive a
    /// connection: a new one subscribes to them again (handshake era) or listens for them
    /// (stateless era).
    pub(crate) resources: Mutex<BTreeSet<String>>,
    /// Wakes the stateless era's listen task when `resources` changed, to listen again with
    /// the new filter.
    pub(crate) relisten: tokio::sync::Notify,
}

#[derive(Default)]
pub(crate) struct SlotState {
    pub(crate) state: Option<ServerState>,
    pub(crate) last_error: Option<(Phase, String)>,
    pub(crate) last_connected_at: Option<SystemTime>,
    pub(crate) client: Option<Client>,
    pub(crate) info: Option<ServerInfo>,
    pub(crate) tools: Vec<ExposedTool>,
    /// Its operations, fixed by the capabilities it declared at connect.
    pub(crate) operations: Vec<ExposedOperation>,
    pub(crate) diagnostics: Vec<String>,
    pub(crate) reconnect_attempts: u32,
    /// When the supervisor tries to connect again, while it waits to (see
    /// [`ServerStatus::reconnect_at`]).
    pub(crate) reconnect_at: Option<SystemTime>,
    /// Why an enabled server is not connecting yet (the connection limit), while it waits.
    pub(crate) waiting: Option<String>,
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// How many events wait for a slow subscriber before it starts missing them.
pub(crate) const EVENT_BUFFER: usize = 1024;
/// How many diagnostics a server keeps for its status.
const DIAGNOSTICS_KEPT: usize = 32;

/// Stops a slot's supervisor and closes its connection.
pub(crate) async fn stop_slot(slot: &Slot) {
    slot.stop.store(true, Ordering::SeqCst);
    let task = lock(&slot.task).take();
    if let Some(task) = task {
        task.abort();
        let _ = task.await;
    }
    let client = lock(&slot.state).disconnect();
    if let Some(client) = client {
        client.close().await;
    }
}

impl SlotState {
    /// Forgets the connection: its tools, operations and server info go with it, and the
    /// client is handed back for the caller to end (politely, or by killing it).
    pub(crate) fn disconnect(&mut self) -> Option<Client> {
        self.tools.clear();
        self.operations.clear();
        self.info = None;
        self.client.take()
    }
}

impl Slot {
    pub(crate) fn status(&self) -> ServerStatus {
        let s = lock(&self.state);
        ServerStatus {
            id: self.entry.id.clone(),
            transport: self.entry.transport,
            source: self.entry.source.clone(),
            enabled: self.entry.enabled,
            state: s.state.unwrap_or(ServerState::Connecting),
            tools: s.tools.len(),
            operations: s.operations.iter().map(|o| o.operation).collect(),
            last_error: s.last_error.as_ref().map(|(_, e)| e.clone()),
            last_error_phase: s.last_error.as_ref().map(|(p, _)| *p),
            last_connected_at: s.last_connected_at,
            protocol_version: s
                .info
                .as_ref()
                .map(|i| i.protocol_version.as_str().to_owned()),
            era: s.info.as_ref().map(|i| i.era),
            negotiation: s.info.as_ref().map(|i| i.negotiation.clone()),
            server_info: s.info.as_ref().map(|i| i.implementation.clone()),
            session_id: s.client.as_ref().and_then(Client::session_id),
            diagnostics: s.diagnostics.clone(),
            reconnect_attempts: s.reconnect_attempts,
            reconnect_at: s.reconnect_at,
            waiting: s.waiting.clone(),
            token_expires_at: self
                .oauth()
                .and_then(|h| h.expires_at_ms())
                .map(|ms| SystemTime::UNIX_EPOCH + Duration::from_millis(ms)),
        }
    }

    /// The server's OAuth hook, if it has one.
    #[cfg(feature = "oauth")]
    pub(crate) fn oauth(&self) -> Option<Arc<OAuthHook>> {
        self.entry.oauth.clone()
    }

    /// Without OAuth in the build, no server has a hook.
    #[cfg(not(feature = "oauth"))]
    pub(crate) fn oauth(&self) -> Option<crate::features::NoOAuth> {
        None
    }

    /// Keeps a diagnostic, its secrets redacted, and returns it as kept: what may be shown
    /// and logged.
    pub(crate) fn diagnostic(&self, text: &str) -> String {
        let text = self.redactor.text(text);
        let mut s = lock(&self.state);
        if s.diagnostics.len() == DIAGNOSTICS_KEPT {
            s.diagnostics.remove(0);
        }
        s.diagnostics.push(text.clone());
        text
    }
}

impl Inner {
    /// Asks the configuration, the policy and, where they ask, the prompter about `request`:
    /// `Ok` only if the call may be sent. The one permission check of tools and operations.
    pub(crate) async fn permit(
        &self,
        slot: &Slot,
        request: &CallRequest<'_>,
    ) -> Result<(), CallError> {
        let decision = combine(
            slot.entry.rules.decide_call(request),
            self.options.policy.decide(request),
        );
        let denied = |reason: &str| CallError::Denied {
            server: request.server.to_owned(),
            tool: request.tool.to_owned(),
            reason: reason.to_owned(),
        };
        let allowed = match decision {
            Decision::Allow => true,
            Decision::Deny => false,
            Decision::Ask => match &self.options.prompter {
                Some(prompter) => prompter.confirm(request).await,
                None => {
                    return Err(denied(
                        "the policy asks for confirmation and no one can be asked",
                    ));
                }
            },
        };
        if allowed {
            Ok(())
        } else {
            Err(denied("refused by the permission policy"))
        }
    }

    /// A failed session request to `server`, as a [`CallError`] whose texts hide the
    /// server's secrets.
    pub(crate) fn session_error(
        &self,
        server: &str,
        what: &str,
        error: mcp_session::Error,
    ) -> CallError {
        self.shown(CallError::from_session(server, what, error))
    }

    /// `error`, about one server, with that server's secrets redacted: every error the host
    /// forms from what a server said goes through here before a consumer sees it.
    pub(crate) fn shown(&self, error: CallError) -> CallError {
        let slot = error
            .server()
            .and_then(|server| lock(&self.slots).get(server).cloned());
        match slot {
            Some(slot) => slot.redactor.error(error),
            None => error,
        }
    }

    pub(crate) fn slot(&self, server: &str) -> Result<Arc<Slot>, CallError> {
        lock(&self.slots)
            .get(server)
            .cloned()
            .ok_or_else(|| CallError::UnknownServer {
                server: server.to_owned(),
            })
    }

    pub(crate) fn ready_client(&self, server: &str) -> Result<Client, CallError> {
        let slot = self.slot(server)?;
        let s = lock(&slot.state);
        match (&s.client, s.state) {
            (Some(client), Some(ServerState::Ready)) => Ok(client.clone()),
            (_, state) => Err(CallError::NotReady {
                server: server.to_owned(),
                state: state.unwrap_or(ServerState::Connecting),
                last_error: s.last_error.as_ref().map(|(_, e)| e.clone()),
            }),
        }
    }

    /// Sets a server's state; an error's text is kept (and logged) with the server's secrets
    /// redacted.
    pub(crate) fn set_state(
        &self,
        slot: &Slot,
        state: ServerState,
        error: Option<(Phase, String)>,
    ) {
        self.record_state(slot, state, error);
        self.emit_state(slot, state);
    }

    /// Sets the state of a server whose tools change with it (it became ready, or was lost):
    /// the catalogue is rebuilt before the state is announced, so that whoever sees the state
    /// also sees the catalogue that goes with it, never the one before.
    pub(crate) fn set_state_and_catalog(
        &self,
        slot: &Slot,
        state: ServerState,
        error: Option<(Phase, String)>,
    ) {
        self.record_state(slot, state, error);
        self.rebuild_catalog();
        self.emit_state(slot, state);
        self.emit(HostEvent::Catalog {
            server: slot.entry.id.clone(),
        });
    }

    fn record_state(&self, slot: &Slot, state: ServerState, error: Option<(Phase, String)>) {
        let error = error.map(|(phase, text)| (phase, slot.redactor.text(&text)));
        {
            let mut s = lock(&slot.state);
            s.state = Some(state);
            if let Some(error) = &error {
                s.last_error = Some(error.clone());
            }
        }
        match &error {
            Some((phase, error)) => {
                tracing::warn!(server = %slot.entry.id, state = state.as_str(), phase = phase.as_str(), %error, "server state")
            }
            None => tracing::info!(server = %slot.entry.id, state = state.as_str(), "server state"),
        }
    }

    fn emit_state(&self, slot: &Slot, state: ServerState) {
        let _ = self.events.send(HostEvent::State {
            server: slot.entry.id.clone(),
            state,
        });
    }

    /// Builds the catalogue from every ready server's tools and swaps it in.
    pub(crate) fn rebuild_catalog(&self) {
        let _serial = lock(&self.rebuild);
        let slots: Vec<_> = lock(&self.slots).values().cloned().collect();
        let mut servers = BTreeMap::new();
        let mut operations = BTreeMap::new();
        for slot in slots {
            let s = lock(&slot.state);
            if s.state == Some(ServerState::Ready) {
                servers.insert(slot.entry.id.clone(), s.tools.clone());
                operations.insert(slot.entry.id.clone(), s.operations.clone());
            }
        }
        let catalog = Arc::new(Catalog::build_with_operations(servers, operations));
        *self.catalog.write().unwrap_or_else(PoisonError::into_inner) = catalog;
    }

    /// A server's tools changed (it connected, was lost, refreshed its list, was removed):
    /// rebuilds the catalogue and tells subscribers.
    pub(crate) fn catalog_changed(&self, server: &str) {
        self.rebuild_catalog();
        self.emit(HostEvent::Catalog {
            server: server.to_owned(),
        });
    }

    pub(crate) fn emit(&self, event: HostEvent) {
        let _ = self.events.send(event);
    }
}
