//! The supervisor of one server: connect, serve, and after a lost connection reconnect with a
//! doubling wait, up to the configured number of attempts. One task per server, started by
//! [`Host::start`](crate::Host::start); what it learns goes into the server's
//! [`Slot`](crate::shared::Slot).

pub(crate) mod serve;

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::SystemTime;

use mcp_session::Client;

use self::serve::{adapt, serve};
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
    let client = crate::transport::open(entry, connect, session, &inner.transports).await?;
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
    let exposed = adapt(inner, slot, tools);
    Ok((client, exposed))
}

/// Runs one server for as long as it is configured: connect, serve, and after a lost
/// connection reconnect with a doubling wait, up to the configured number of attempts.
pub(crate) async fn supervise(
    inner: Arc<Inner>,
    slot: Arc<Slot>,
    ready: tokio::sync::oneshot::Sender<()>,
) {
    let mut ready = Some(ready);
    let Ok(_permit) = inner.permits.clone().try_acquire_owned() else {
        let max = inner.options.max_connections;
        inner.set_state(
            &slot,
            ServerState::Error,
            Some((
                Phase::Limit,
                format!(
                    "maximum connections ({max}) reached: raise mcp.max_connections or disable a server"
                ),
            )),
        );
        return;
    };
    let mut delay = inner.options.reconnect_initial;
    let mut was_connected = false;
    loop {
        if slot.stop.load(Ordering::SeqCst) {
            return;
        }
        inner.set_state(&slot, ServerState::Connecting, None);
        match connect_once(&inner, &slot).await {
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
                    s.reconnect_attempts = 0;
                }
                was_connected = true;
                delay = inner.options.reconnect_initial;
                inner.set_state(&slot, ServerState::Ready, None);
                inner.catalog_changed(&slot.entry.id);
                if let Some(ready) = ready.take() {
                    let _ = ready.send(());
                }
                let reason = serve(&inner, &slot, &client).await;
                {
                    let mut s = lock(&slot.state);
                    s.client = None;
                    s.info = None;
                    s.tools.clear();
                    s.operations.clear();
                }
                if slot.stop.load(Ordering::SeqCst) {
                    return;
                }
                inner.set_state(
                    &slot,
                    ServerState::Error,
                    Some((Phase::Connection, format!("connection lost: {reason}"))),
                );
                inner.catalog_changed(&slot.entry.id);
            }
            Err(failure) => {
                let state = if failure.auth_required {
                    ServerState::AuthRequired
                } else {
                    ServerState::Error
                };
                inner.set_state(&slot, state, Some((failure.phase, failure.message)));
                if let Some(ready) = ready.take() {
                    let _ = ready.send(());
                }
                // A server that never connected is not retried on its own: its configuration
                // or its program is wrong, and retrying would only repeat the error.
                if !was_connected || failure.auth_required {
                    return;
                }
            }
        }
        let attempts = {
            let mut s = lock(&slot.state);
            s.reconnect_attempts += 1;
            s.reconnect_attempts
        };
        if attempts > inner.options.reconnect_attempts {
            let (phase, error) = lock(&slot.state)
                .last_error
                .clone()
                .unwrap_or((Phase::Connection, String::new()));
            inner.set_state(
                &slot,
                ServerState::Error,
                Some((
                    phase,
                    format!(
                        "gave up after {} reconnection attempts: {error}",
                        inner.options.reconnect_attempts
                    ),
                )),
            );
            return;
        }
        tokio::time::sleep(delay).await;
        delay = (delay * 2).min(inner.options.reconnect_max);
    }
}
