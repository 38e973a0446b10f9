//! The supervisor of one server: connect, serve, and after a lost connection reconnect with a
//! doubling wait, up to the configured number of attempts. One task per server, started by
//! [`Host::start`](crate::Host::start); what it learns goes into the server's
//! [`Slot`](crate::shared::Slot).

mod lifecycle;
pub(crate) mod serve;

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Instant, SystemTime};

use mcp_session::Client;

use self::lifecycle::{Action, Lifecycle, Retry, Unexpected, Why};
use self::serve::{adapt, serve};
use crate::admission::Ticket;
use crate::catalog::ExposedTool;
use crate::operation::server_operations;
use crate::shared::{Inner, Slot, lock};
use crate::status::{Phase, ServerState};
use crate::transport::Failure;

/// Connects once: transport, handshake, tool list. The handshake's own timeout is the
/// server's request timeout, so a hung server fails promptly.
async fn connect_once(inner: &Inner, slot: &Slot) -> Result<(Client, Vec<ExposedTool>), Failure> {
    let entry = &slot.entry;
    let mut session = inner.session.clone();
    session.request_timeout = entry.request_timeout;
    session.ping_interval = entry.ping_interval;
    session.ping_timeout = entry.ping_timeout;
    if let Some(version) = &entry.protocol_version {
        session.protocol_version = version.clone();
        session.supported_versions = vec![version.clone()];
    }
    let connect = entry.connect.clone().map_err(|u| Failure {
        phase: u.phase,
        message: u.message,
        auth_required: false,
    })?;
    let fail = |phase: Phase, message: String| Failure {
        phase,
        message,
        auth_required: false,
    };
    let client = open(inner, entry, connect, session).await?;
    let has_tools = client.server_info().capabilities.tools.is_some();
    let tools = if has_tools {
        match client.list_all_tools().await {
            Ok(tools) => tools,
            Err(e) => {
                client.close().await;
                return Err(fail(Phase::Tools, format!("tools/list: {e}")));
            }
        }
    } else {
        Vec::new()
    };
    let exposed = adapt(inner, slot, &client, tools);
    Ok((client, exposed))
}

/// Opens the connection, skipping the `server/discover` probe for a server remembered to
/// speak the handshake era, and remembers the era it spoke. If a connection made on what was
/// remembered fails, the memory is dropped and the server probed at once: it may have been
/// upgraded to the stateless era, whose servers refuse `initialize`.
// With neither transport, `Connect` has no values, so nothing after its use runs.
#[cfg_attr(not(any(feature = "stdio", feature = "http")), allow(unused_variables))]
async fn open(
    inner: &Inner,
    entry: &crate::entry::ServerEntry,
    connect: crate::entry::Connect,
    mut session: mcp_protocol::ClientConfig,
) -> Result<Client, Failure> {
    let key = crate::eras::key(entry);
    let remembered = match &key {
        Some(key) => inner.eras.known(key).await == Some(mcp_protocol::Era::Handshake),
        None => false,
    };
    let probing = session.clone();
    if remembered {
        session.cached_era = Some(mcp_protocol::Era::Handshake);
    }
    let mut opened =
        crate::transport::open(entry, connect.clone(), session, &inner.transports).await;
    if let (Some(key), Err(failure)) = (&key, &opened)
        && remembered
        && !failure.auth_required
    {
        tracing::info!(server = %entry.id, "connecting as the handshake-era server it was failed ({}); probing its era again", failure.message);
        inner.eras.learned(key, &entry.id, None).await;
        opened = crate::transport::open(entry, connect, probing, &inner.transports).await;
    }
    if let (Some(key), Ok(client)) = (&key, &opened) {
        inner
            .eras
            .learned(key, &entry.id, Some(client.server_info().era))
            .await;
    }
    opened
}

/// Runs one server for as long as it is configured: a thin loop around its [`Lifecycle`],
/// which decides when to connect, when to try again and when to give up. This task feeds it
/// what happened (with the time, from tokio's clock, which tests may pause) and does what it
/// says: sets the state with the words for it, connects, serves a connection until it ends,
/// sleeps until the lifecycle's timeout.
pub(crate) async fn supervise(
    inner: Arc<Inner>,
    slot: Arc<Slot>,
    ticket: Option<Ticket>,
    ready: tokio::sync::oneshot::Sender<()>,
) {
    let mut ready = Some(ready);
    // Held while this server runs; dropped when this task ends, it admits the next in line.
    let (mut _permit, mut queued) = match ticket {
        Some(Ticket::Admitted(permit)) => (Some(permit), None),
        Some(Ticket::Waiting(turn)) => (None, Some(turn)),
        None => (None, None),
    };
    let options = &inner.options;
    let mut lifecycle = Lifecycle::new(Retry {
        initial: options.reconnect_initial,
        max: options.reconnect_max,
        attempts: options.reconnect_attempts,
    });
    // The words for the failure the last input reported, for the state it leads to.
    let mut failure: Option<Failure> = None;
    let mut lost: Option<String> = None;
    // A connection just made, to serve once its state is said.
    let mut connected: Option<Client> = None;
    let fed = |result: Result<(), Unexpected>| {
        if let Err(e) = result {
            tracing::error!(server = %slot.entry.id, "{e}");
        }
    };
    fed(lifecycle.handle_start(now(), queued.is_none()));
    loop {
        if let Some(action) = lifecycle.poll_action() {
            if slot.stop.load(Ordering::SeqCst) {
                fed(lifecycle.handle_stop(now()));
                continue;
            }
            match action {
                Action::SetState { state, why } => {
                    {
                        let mut s = lock(&slot.state);
                        s.reconnect_attempts = lifecycle.attempts();
                        // Set with the state, before its event: whoever sees `error` also
                        // sees that the server is coming back.
                        s.reconnect_at = lifecycle
                            .poll_timeout()
                            .map(|at| SystemTime::now() + at.saturating_duration_since(now()));
                        s.waiting = (why == Some(Why::Limit)).then(|| {
                            format!(
                                "waiting: connection limit {} reached (mcp.max_connections); starts when a running server stops",
                                inner.admission.limit()
                            )
                        });
                    }
                    let error = why.filter(|why| *why != Why::Limit).map(|why| {
                        let text = match why {
                            Why::Limit => String::new(),
                            Why::Failed(_) => failure.take().map(|f| f.message).unwrap_or_default(),
                            Why::Lost => {
                                format!("connection lost: {}", lost.take().unwrap_or_default())
                            }
                        };
                        (why.phase(), text)
                    });
                    if state == ServerState::Ready || why == Some(Why::Lost) {
                        inner.set_state_and_catalog(&slot, state, error);
                    } else {
                        inner.set_state(&slot, state, error);
                    }
                    // Waiting for a turn is settled too: it may last as long as the host.
                    if (state != ServerState::Connecting || why == Some(Why::Limit))
                        && let Some(ready) = ready.take()
                    {
                        let _ = ready.send(());
                    }
                }
                Action::Connect => match connect_once(&inner, &slot).await {
                    Ok((client, tools)) => {
                        {
                            let mut s = lock(&slot.state);
                            s.info = Some(client.server_info().clone());
                            s.client = Some(client.clone());
                            s.tools = tools;
                            // What the server declared now counts until the next connection.
                            s.operations = server_operations(
                                &slot.entry.id,
                                &client.server_info().capabilities,
                                slot.entry.expose_resources,
                                slot.entry.expose_prompts,
                            );
                            s.last_connected_at = Some(SystemTime::now());
                        }
                        connected = Some(client);
                        fed(lifecycle.handle_connected(now()));
                    }
                    Err(f) => {
                        let (phase, auth_required) = (f.phase, f.auth_required);
                        failure = Some(f);
                        fed(lifecycle.handle_connect_failed(now(), phase, auth_required));
                    }
                },
                Action::GiveUp { attempts, phase } => {
                    let error = lock(&slot.state)
                        .last_error
                        .clone()
                        .map(|(_, error)| error)
                        .unwrap_or_default();
                    inner.set_state(
                        &slot,
                        ServerState::Error,
                        Some((
                            phase,
                            format!("gave up after {attempts} reconnection attempts: {error}"),
                        )),
                    );
                }
            }
            continue;
        }
        if let Some(client) = connected.take() {
            let reason = serve(&inner, &slot, &client).await;
            // The connection ended by itself: there is nothing left to close.
            drop(lock(&slot.state).disconnect());
            if slot.stop.load(Ordering::SeqCst) {
                fed(lifecycle.handle_stop(now()));
            } else {
                lost = Some(reason);
                fed(lifecycle.handle_lost(now()));
            }
            continue;
        }
        if let Some(turn) = queued.take() {
            match turn.await {
                Ok(permit) => {
                    _permit = Some(permit);
                    fed(lifecycle.handle_admitted(now()));
                }
                // The host is gone: nobody will admit this server.
                Err(_) => return,
            }
            continue;
        }
        let Some(at) = lifecycle.poll_timeout() else {
            // Finished or stopped: nothing will happen again.
            return;
        };
        tokio::time::sleep_until(tokio::time::Instant::from_std(at)).await;
        fed(lifecycle.handle_timeout(now()));
    }
}

/// The supervisors' clock: tokio's, so that a test that pauses time pauses it here too.
fn now() -> Instant {
    tokio::time::Instant::now().into_std()
}
