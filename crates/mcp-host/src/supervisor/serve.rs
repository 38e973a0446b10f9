//! One connection while it lasts: notifications to subscribers (and tool-list changes to the
//! catalogue), server requests to the consumer's handler, the stateless era's
//! `subscriptions/listen` stream and the handshake era's resource subscriptions taken up again.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use mcp_protocol::schema::{
    ListenParams, RequestMethod, ResourceUriParams, ServerNotification, SubscriptionFilter, method,
};
use mcp_protocol::{Era, RequestId, RequestOptions};
use mcp_session::{Client, Incoming};

use crate::catalog::{Diagnostic, ExposedTool};
use crate::events::HostEvent;
use crate::server_requests::answer;
use crate::shared::{Inner, Slot, lock};

/// Serves one connection until it ends: notifications to subscribers (and list changes to the
/// catalogue), server requests to the consumer's handler or the roots list. Returns why it
/// ended.
pub(super) async fn serve(inner: &Arc<Inner>, slot: &Arc<Slot>, client: &Client) -> String {
    let Some(mut incoming) = client.take_incoming() else {
        return client.closed().await;
    };
    let server = slot.entry.id.clone();
    // A stateless server says what changed only on a subscriptions/listen stream; it ends
    // with this connection.
    let _listening = listen(slot, client).map(AbortOnDrop);
    // OAuth tokens are refreshed ahead of expiry while connected; the timer ends with this.
    #[cfg(feature = "oauth")]
    let _refreshing = (slot.entry.oauth.clone())
        .map(|hook| AbortOnDrop(tokio::spawn(crate::refresh::keep_fresh(hook))));
    resubscribe(slot, client);
    // The tasks a host before this one left unfinished on this server are asked about again.
    let _resuming = AbortOnDrop(tokio::spawn(crate::tasks::resume(
        Arc::clone(inner),
        server.clone(),
        client.clone(),
    )));
    // The server's requests being answered, by id: one it withdraws (`notifications/
    // cancelled`) stops being answered, and what its answer waited on is withdrawn in turn
    // (a gateway's question to its own client, say).
    let mut answering: HashMap<RequestId, tokio::task::AbortHandle> = HashMap::new();
    loop {
        let item = tokio::select! {
            item = incoming.recv() => item,
            reason = client.closed() => return reason,
        };
        let Some(item) = item else {
            return client.closed().await;
        };
        let (item, related) = match item {
            Incoming::RelatedNotification {
                notification,
                related,
            } => (Incoming::Notification(notification), Some(related)),
            other => (other, None),
        };
        // A task's status (2025-11-25) goes to the call following that task on this server,
        // whoever else takes the notification.
        if let Incoming::Notification(ServerNotification::Other { method, params }) = &item
            && method == crate::tasks::status::METHOD
        {
            inner.tasks.statuses.announced(&server, params.as_ref());
        }
        match item {
            // The consumer takes what belongs to one of its calls before anything the server
            // sent later is handled, so that a log entry written before a request is never
            // overtaken by it.
            Incoming::Notification(notification)
                if related.is_some_and(|tag| {
                    inner
                        .options
                        .requests
                        .as_ref()
                        .is_some_and(|h| h.take_related(&server, &notification, tag))
                }) => {}
            Incoming::Notification(notification) => {
                let relist = match &notification {
                    ServerNotification::ToolListChanged(_) => Some("tools/list_changed"),
                    // A change made after the tools were listed but before the server had the
                    // listen stream was told to nobody: the list is taken again once the
                    // server acknowledges the stream (at each listen, so after a reconnect
                    // too).
                    ServerNotification::SubscriptionsAcknowledged(ack)
                        if ack.notifications.tools_list_changed == Some(true) =>
                    {
                        Some("the subscriptions/listen acknowledgement")
                    }
                    _ => None,
                };
                if let Some(why) = relist
                    && let Err(e) = relist_tools(inner, slot, client).await
                {
                    // The change is never ignored silently.
                    let message = slot.diagnostic(&format!(
                        "tools/list after {why} failed, keeping the old list: {e}"
                    ));
                    tracing::warn!(server = %slot.entry.id, "{message}");
                    inner.emit(HostEvent::Diagnostic {
                        server: slot.entry.id.clone(),
                        message,
                    });
                }
                inner.emit(HostEvent::Notification {
                    server: server.clone(),
                    notification,
                    related,
                });
            }
            Incoming::Request {
                id,
                request,
                related,
            } => {
                let inner = inner.clone();
                let client = client.clone();
                let server = server.clone();
                let key = id.clone();
                let task = tokio::spawn(async move {
                    let outcome = answer(&inner, &server, request, related).await;
                    let _ = client.respond(&id, outcome);
                });
                answering.retain(|_, task| !task.is_finished());
                answering.insert(key, task.abort_handle());
            }
            Incoming::Cancelled { id } => {
                if let Some(task) = answering.remove(&id) {
                    task.abort();
                }
            }
            Incoming::Diagnostic(message) => {
                let message = slot.diagnostic(&message);
                inner.emit(HostEvent::Diagnostic {
                    server: server.clone(),
                    message,
                });
            }
            // Kinds added to the session later are not lost silently.
            other => {
                slot.diagnostic(&format!("unhandled message from the session: {other:?}"));
            }
        }
    }
}

/// Aborts a task when dropped.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// How long one `subscriptions/listen` request may stay open before it is opened again.
const LISTEN_SPAN: Duration = Duration::from_secs(24 * 60 * 60);

/// In the stateless era, keeps a `subscriptions/listen` request open for the list changes the
/// server offers and the resources the consumer subscribed to: its notifications reach
/// [`serve`] like any other. When the subscriptions change it listens again with the new
/// filter; if the stream ends it is opened again, after a pause that doubles up to a minute
/// while it keeps failing. `None` when the server offers nothing to listen for.
fn listen(slot: &Arc<Slot>, client: &Client) -> Option<tokio::task::JoinHandle<()>> {
    let info = client.server_info();
    if info.era != Era::Stateless {
        return None;
    }
    let caps = &info.capabilities;
    let mut base = SubscriptionFilter::new();
    let changes = |c: Option<bool>| c.filter(|on| *on);
    base.tools_list_changed = changes(caps.tools.as_ref().and_then(|t| t.list_changed));
    base.prompts_list_changed = changes(caps.prompts.as_ref().and_then(|p| p.list_changed));
    base.resources_list_changed = changes(caps.resources.as_ref().and_then(|r| r.list_changed));
    let subscribes = caps.resources.as_ref().and_then(|r| r.subscribe) == Some(true);
    let lists = base.tools_list_changed.is_some()
        || base.prompts_list_changed.is_some()
        || base.resources_list_changed.is_some();
    if !lists && !subscribes {
        return None;
    }
    let (slot, client) = (Arc::clone(slot), client.clone());
    Some(tokio::spawn(async move {
        let server = slot.entry.id.clone();
        let mut pause = Duration::from_secs(1);
        loop {
            let mut filter = base.clone();
            let resources: Vec<String> = lock(&slot.resources).iter().cloned().collect();
            if !resources.is_empty() {
                filter.resource_subscriptions = Some(resources);
            }
            if !lists && filter.resource_subscriptions.is_none() {
                slot.relisten.notified().await;
                continue;
            }
            let began = tokio::time::Instant::now();
            let params = ListenParams::new(filter);
            let listening = client
                .request::<method::Listen>(&params, RequestOptions::DEFAULT.timeout(LISTEN_SPAN));
            let ended = tokio::select! {
                ended = listening => ended,
                // Dropping the request cancels it (on HTTP, closes its stream).
                () = slot.relisten.notified() => continue,
            };
            if client.is_closed() {
                return;
            }
            if let Err(e) = ended {
                let e = slot.redactor.text(&e.to_string());
                tracing::debug!(server = %server, "subscriptions/listen ended: {e}");
            }
            if began.elapsed() > Duration::from_secs(60) {
                pause = Duration::from_secs(1);
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(Duration::from_secs(60));
        }
    }))
}

/// Sends the handshake era's `resources/subscribe` or `resources/unsubscribe` for `uri`.
pub(crate) async fn about_resource<M>(client: &Client, uri: &str) -> Result<(), mcp_session::Error>
where
    M: RequestMethod<Params = ResourceUriParams>,
{
    let params = ResourceUriParams::new(uri.to_owned());
    client
        .request::<M>(&params, RequestOptions::DEFAULT)
        .await?;
    Ok(())
}

/// In the handshake era, subscribes a new connection to the resources the consumer subscribed
/// to before it; a refusal is a diagnostic of the server, and the URI stays wanted.
fn resubscribe(slot: &Arc<Slot>, client: &Client) {
    if client.server_info().era != Era::Handshake {
        return;
    }
    let uris: Vec<String> = lock(&slot.resources).iter().cloned().collect();
    if uris.is_empty() {
        return;
    }
    let (slot, client) = (Arc::clone(slot), client.clone());
    tokio::spawn(async move {
        for uri in uris {
            if let Err(e) = about_resource::<method::Subscribe>(&client, &uri).await {
                slot.diagnostic(&format!(
                    "resources/subscribe {uri} again after reconnecting failed: {e}"
                ));
            }
        }
    });
}

/// Lists a server's tools again and swaps them into the catalogue; on failure the old list
/// stays.
pub(crate) async fn relist_tools(
    inner: &Arc<Inner>,
    slot: &Arc<Slot>,
    client: &Client,
) -> Result<(), mcp_session::Error> {
    let tools = client.list_all_tools().await?;
    let exposed = adapt(inner, slot, client, tools);
    lock(&slot.state).tools = exposed;
    inner.catalog_changed(&slot.entry.id);
    Ok(())
}

/// The tools of `slot`'s server as the catalogue offers them, each diagnostic kept and told.
pub(super) fn adapt(
    inner: &Inner,
    slot: &Slot,
    client: &Client,
    tools: Vec<mcp_protocol::schema::Tool>,
) -> Vec<ExposedTool> {
    let tasks = crate::tasks::server_runs_tasks(client.server_info());
    let (exposed, diagnostics) = crate::catalog::adapt_server_tools_with_tasks(
        &slot.entry.id,
        tools,
        &slot.entry.filter,
        &inner.options.catalog_limits,
        tasks,
    );
    for Diagnostic { tool, message, .. } in diagnostics {
        let text = slot.diagnostic(&format!("tool `{tool}`: {message}"));
        tracing::warn!(server = %slot.entry.id, "{text}");
        inner.emit(HostEvent::Diagnostic {
            server: slot.entry.id.clone(),
            message: text,
        });
    }
    exposed
}
