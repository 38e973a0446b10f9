//! Passthrough mode: the upstream servers' tools, resources, prompts, completion and logging,
//! as they are, for a client that wants the gateway to be invisible (one place to configure
//! servers, OAuth and permission rules, one connection for the client).
//! This file is long because one `Mode` answers every method family the gateway passes on (tools,
//! prompts, resources and their templates, completion, logging, subscriptions), each with its
//! routing back to an upstream, and the families share the mode's upstream state and lookups.
//!
//! With one upstream nothing is renamed. With several, tool and prompt names become
//! `mcp__<server>__<name>` (seed 004 §11) and are resolved back on the way in; resources keep
//! their URIs and are routed to the upstream that listed them (or whose template matches),
//! asking each in turn when none did. Lists are answered in one page, every upstream page
//! followed.
//!
//! Tools come from the host's catalogue (so the file's tool filters and the permission rules
//! apply), calls go through [`Shared::call_tool`]; everything else is passed on raw, so fields
//! this crate does not know survive. The client's own credentials never reach an upstream:
//! the upstream connections are the host's, with the host's OAuth.
//!
//! Notifications go the other way: list changes to every client (`tools/list_changed` when
//! the host's catalogue changed, which covers an upstream's own notice and a reconnection),
//! `resources/updated` to the clients that subscribed to that URI, log entries to the client
//! whose call is waiting on that upstream, else to all.
//!
//! The file is a little over 800 lines: the request handlers and the routing helpers they
//! share (which upstream to ask, relaying as sent, paging) read best side by side, and no
//! other module needs the helpers.

use std::collections::{BTreeSet, HashMap};
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mcp_host::{CallError, HostEvent, Relayed, ServerState};
use mcp_protocol::schema::{
    CallToolParams, ClientNotification, ClientRequest, EmptyParams, ListChangedCapability,
    ListToolsResult, ResourcesCapability, ServerCapabilities, ServerNotification,
    TASKS_EXTENSION_ID, method,
};
use mcp_protocol::{Era, ErrorObject, JsonObject, RawJson, RequestOptions, Secrets};
use mcp_session::{Client, Peer, RequestContext, SessionKey};
use serde_json::{Value, json};

use super::upstream::{is_multi, ready, ready_with, upstream_error};
use super::{Answer, Mode, skills};
use crate::file;
use crate::reply::{self, call_error_result, encode};
use crate::rules::Refusal;
use crate::shared::{Shared, listed_tool};
use crate::suspend::Outcome;
use crate::sync::lock;
use crate::tool_name::{self, designates};
use crate::trace;
use crate::upstream_state;
use crate::upstreams::{self, Change};

/// How many pages of one upstream list are followed before the rest is dropped.
const MAX_PAGES: usize = 100;

/// What passthrough mode remembers between requests: which upstream listed which resource
/// URI and which resource template, to route reads, subscriptions and completions.
#[derive(Debug, Default)]
struct State {
    resources: Mutex<HashMap<String, String>>,
    templates: Mutex<HashMap<String, String>>,
    /// The client of the last call that ended on each upstream, and when: a log entry the
    /// upstream sent during that call may be relayed only after its answer (they travel
    /// separately through the host), and belongs to that client all the same.
    ended: Mutex<HashMap<String, (Peer, Instant)>>,
    /// The resource URIs each stateless client's `subscriptions/listen` streams ask for, by
    /// session (over HTTP a stream is a session of its own, which ends with it).
    listens: Mutex<HashMap<SessionKey, Vec<String>>>,
    /// Taken by each upstream subscribe and unsubscribe, so that they happen in the order
    /// decided: an unsubscribe for a stream that closed never undoes a subscription made for
    /// a client that came meanwhile.
    subscribing: tokio::sync::Mutex<()>,
    /// Which upstream listed each skill, for several upstreams (see [`skills`]).
    skills: skills::SkillRoutes,
}

/// Passthrough mode, with its own state: the routing tables, shared with the task that
/// relays the upstreams' notifications.
#[derive(Debug, Default)]
pub(crate) struct PassthroughMode {
    state: Arc<State>,
}

impl Mode for PassthroughMode {
    fn kind(&self) -> file::Mode {
        file::Mode::Passthrough
    }

    fn capabilities(&self, shared: &Shared) -> ServerCapabilities {
        capabilities(shared)
    }

    fn instructions(&self, shared: &Shared) -> Option<String> {
        instructions(shared)
    }

    fn begin(&self, shared: &Arc<Shared>) {
        start_relay(shared, Arc::clone(&self.state));
    }

    fn start(&self, shared: &Arc<Shared>) -> Vec<String> {
        startup_report(shared)
    }

    /// Names change with the number of upstreams, and a removed upstream's resources and
    /// prompts go without an event of their own: every list is said to have changed.
    fn reloaded(&self, shared: &Shared, change: &Change, _before: &file::GatewayFile) {
        if !change.is_empty() {
            for list in ["tools", "resources", "prompts"] {
                broadcast(shared, &format!("notifications/{list}/list_changed"), None);
            }
        }
    }

    fn handle<'a>(
        &'a self,
        shared: &'a Shared,
        request: ClientRequest,
        context: RequestContext,
    ) -> Answer<'a> {
        Box::pin(handle(&self.state, shared, request, context))
    }

    fn notified(&self, shared: &Shared, session: SessionKey, notification: ClientNotification) {
        notified(shared, session, notification);
    }

    fn tool_schema(&self, shared: &Shared, name: &str) -> Option<RawJson> {
        tool_schema(shared, name)
    }

    fn listening(&self, shared: &Arc<Shared>, session: SessionKey, uris: Vec<String>) {
        lock(&self.state.listens)
            .entry(session)
            .or_default()
            .extend(uris.iter().cloned());
        let (shared, state) = (Arc::clone(shared), Arc::clone(&self.state));
        tokio::spawn(async move { subscribe_upstream(&shared, &state, uris).await });
    }

    fn closed(&self, shared: &Arc<Shared>, session: SessionKey) {
        let mut gone: BTreeSet<String> = lock(&self.state.listens)
            .remove(&session)
            .unwrap_or_default()
            .into_iter()
            .collect();
        if let Some(d) = lock(&shared.routes.sessions).get(&session) {
            gone.extend(d.subscriptions.iter().cloned());
        }
        if gone.is_empty() {
            return;
        }
        let (shared, state) = (Arc::clone(shared), Arc::clone(&self.state));
        tokio::spawn(async move {
            for uri in gone {
                let _turn = state.subscribing.lock().await;
                unsubscribe_if_unwanted(&shared, &state, &uri, Some(session)).await;
            }
        });
    }
}

/// Whether a client other than `except` still wants updates of `uri`: a handshake client
/// subscribed to it, or a stateless client's listen stream asks for it. The upstream
/// subscription is held while one does (a count over every client's subscriptions and
/// streams), and given up after the last.
fn wanted(shared: &Shared, state: &State, uri: &str, except: Option<SessionKey>) -> bool {
    let other = |key: &SessionKey| Some(*key) != except;
    let subscribed = lock(&shared.routes.sessions)
        .iter()
        .any(|(key, d)| other(key) && d.subscriptions.contains(uri));
    subscribed
        || lock(&state.listens)
            .iter()
            .any(|(key, uris)| other(key) && uris.iter().any(|u| u == uri))
}

/// Unsubscribes upstream from `uri` unless a client other than `except` still wants it
/// ([`wanted`]). Called with `State::subscribing` held, so that no subscription made
/// meanwhile is undone.
async fn unsubscribe_if_unwanted(
    shared: &Shared,
    state: &State,
    uri: &str,
    except: Option<SessionKey>,
) {
    if wanted(shared, state, uri, except) {
        return;
    }
    // No client wants the updates any more: the upstream may stop sending them.
    for id in resource_candidates(state, shared, uri, has_subscribe) {
        if let Err(e) = shared.host.unsubscribe_resource(&id, uri).await {
            shared
                .log
                .line(&format!("upstream {id}: resources/unsubscribe failed: {e}"));
        }
    }
}

/// Subscribes upstream to the resources a stateless client's `subscriptions/listen` stream
/// asks for, through the host (which subscribes the way each upstream's era has), so that
/// their updates reach the gateway to be passed on. A refusal is logged: the stream stays
/// open for the rest. A stream that closed before its turn subscribes to nothing.
async fn subscribe_upstream(shared: &Shared, state: &State, uris: Vec<String>) {
    for uri in uris {
        let _turn = state.subscribing.lock().await;
        if !wanted(shared, state, &uri, None) {
            continue;
        }
        let candidates = resource_candidates(state, shared, &uri, has_subscribe);
        let uri = &uri;
        let subscribed = first_ok(&candidates, "resources/subscribe", |id| async move {
            shared
                .host
                .subscribe_resource(&id, uri)
                .await
                .map_err(host_error)
        })
        .await;
        if let Err(e) = subscribed {
            shared.log.line(&format!(
                "subscriptions/listen: {uri} not subscribed upstream: {}",
                e.message
            ));
        }
    }
}

/// How long after a call a log entry from its upstream is still taken to be about it.
const LATE_ENTRY: Duration = Duration::from_secs(1);

/// Every configured upstream, ready or not, by id.
fn configured(shared: &Shared) -> Vec<String> {
    shared.host.server_ids()
}

fn has_resources(c: &ServerCapabilities) -> bool {
    c.resources.is_some()
}

fn has_prompts(c: &ServerCapabilities) -> bool {
    c.prompts.is_some()
}

fn has_completions(c: &ServerCapabilities) -> bool {
    c.completions.is_some()
}

fn has_logging(c: &ServerCapabilities) -> bool {
    c.logging.is_some()
}

fn has_subscribe(c: &ServerCapabilities) -> bool {
    c.resources.as_ref().and_then(|r| r.subscribe) == Some(true)
}

fn list_changed() -> ListChangedCapability {
    let mut c = ListChangedCapability::new();
    c.list_changed = Some(true);
    c
}

/// The union of the ready upstreams' capabilities, with `listChanged` everywhere since the
/// gateway relays changes (and says so when an upstream comes or goes). With none ready, tools,
/// resources and prompts, so that a client that stays connected can use a later connection.
/// While an upstream is still connecting, what it will offer is not known yet: everything the
/// gateway can relay is declared, and a request no ready upstream can answer gets an error.
fn capabilities(shared: &Shared) -> ServerCapabilities {
    let connecting = shared
        .host
        .server_ids()
        .iter()
        .any(|id| shared.host.server_state(id) == Some(ServerState::Connecting));
    let ready: Vec<ServerCapabilities> = ready(shared)
        .iter()
        .map(|(_, c)| c.server_info().capabilities.clone())
        .collect();
    if connecting {
        return everything();
    }
    let mut caps = ServerCapabilities::default();
    let none = ready.is_empty();
    if none || ready.iter().any(|c| c.tools.is_some()) {
        caps.tools = Some(list_changed());
    }
    if none || ready.iter().any(has_prompts) {
        caps.prompts = Some(list_changed());
    }
    if none || ready.iter().any(has_resources) {
        let mut r = ResourcesCapability::new();
        r.list_changed = Some(true);
        r.subscribe = ready.iter().any(has_subscribe).then_some(true);
        caps.resources = Some(r);
    }
    if ready.iter().any(has_completions) {
        caps.completions = Some(JsonObject::new());
    }
    if ready.iter().any(has_logging) {
        caps.logging = Some(JsonObject::new());
    }
    if let [(_, only)] = ready_upstreams(shared).as_slice()
        && let Some(Value::Object(relayed)) = relayed_extensions(&only.server_info().capabilities)
        && let Value::Object(declared) = caps
            .extra
            .entry(EXTENSIONS)
            .or_insert_with(|| Value::Object(JsonObject::new()))
    {
        for (id, settings) in relayed {
            declared.entry(id).or_insert(settings);
        }
    }
    skills::declare(shared, &mut caps);
    reply::declare_tasks(&mut caps);
    caps
}

/// The capability member (SEP-2133) that declares extensions by identifier.
const EXTENSIONS: &str = "extensions";

/// The `capabilities.extensions` of the one upstream, as the gateway declares them: each
/// extension is relayed whole (its requests go to the upstream as sent, see [`handle`]) except
/// the tasks one: tasks are the gateway's own (`tasks.rs`), since every client's calls reach
/// the upstream as the gateway's and a task id must stay with the client that started it.
/// `None` when nothing is left to declare.
fn relayed_extensions(upstream: &ServerCapabilities) -> Option<Value> {
    let mut extensions = upstream.extra.get(EXTENSIONS)?.as_object()?.clone();
    extensions.remove(TASKS_EXTENSION_ID);
    (!extensions.is_empty()).then_some(Value::Object(extensions))
}

/// The configured upstreams, with their sessions, when every one of them is ready.
fn ready_upstreams(shared: &Shared) -> Vec<(String, Client)> {
    let ready = ready(shared);
    if ready.len() == configured(shared).len() {
        ready
    } else {
        Vec::new()
    }
}

/// Every capability the gateway relays.
fn everything() -> ServerCapabilities {
    let mut caps = ServerCapabilities::default();
    caps.tools = Some(list_changed());
    caps.prompts = Some(list_changed());
    let mut r = ResourcesCapability::new();
    r.list_changed = Some(true);
    r.subscribe = Some(true);
    caps.resources = Some(r);
    caps.completions = Some(JsonObject::new());
    caps.logging = Some(JsonObject::new());
    skills::declare_while_connecting(&mut caps);
    reply::declare_tasks(&mut caps);
    caps
}

/// The upstreams' instructions: as they are for one, each under its server's id for several.
fn instructions(shared: &Shared) -> Option<String> {
    let multi = is_multi(shared);
    let parts: Vec<String> = ready(shared)
        .into_iter()
        .filter_map(|(id, c)| {
            let text = c.server_info().instructions.clone()?;
            Some(if multi { format!("{id}: {text}") } else { text })
        })
        .collect();
    (!parts.is_empty()).then(|| parts.join("\n\n"))
}

/// The start-up summary.
fn startup_report(shared: &Shared) -> Vec<String> {
    let status = shared.host.status();
    let up = status
        .iter()
        .filter(|s| s.state == ServerState::Ready)
        .count();
    let naming = if status.len() > 1 {
        "names namespaced as mcp__<server>__<name>"
    } else {
        "names unchanged"
    };
    vec![format!(
        "passthrough: {} upstream server(s), {up} ready, {} tools; {naming}",
        status.len(),
        shared.host.catalog().len()
    )]
}

/// Relays the upstreams' notifications to the clients in front, for as long as the gateway
/// lives.
fn start_relay(shared: &Arc<Shared>, state: Arc<State>) {
    let mut events = shared.host.subscribe(None, None);
    let weak = Arc::downgrade(shared);
    tokio::spawn(async move {
        while let Some(event) = events.recv().await {
            let Some(shared) = weak.upgrade() else {
                break;
            };
            relay(&shared, &state, event);
        }
    });
}

fn relay(shared: &Shared, state: &State, event: HostEvent) {
    match event {
        // Also what follows an upstream's own tools/list_changed: the host lists the tools
        // again first, so a client that asks at once sees the new list.
        HostEvent::Catalog { .. } => broadcast(shared, "notifications/tools/list_changed", None),
        HostEvent::State {
            state: ServerState::Ready,
            ..
        } => {
            broadcast(shared, "notifications/resources/list_changed", None);
            broadcast(shared, "notifications/prompts/list_changed", None);
        }
        HostEvent::Notification {
            server,
            notification,
            related,
        } => {
            let method = notification.method().to_owned();
            let params = notification.encode_params().ok().flatten();
            match notification {
                ServerNotification::ResourceListChanged(_)
                | ServerNotification::PromptListChanged(_) => broadcast(shared, &method, params),
                ServerNotification::ResourceUpdated(p) => {
                    let peers: Vec<_> = lock(&shared.routes.sessions)
                        .values()
                        .filter(|d| d.subscriptions.contains(&p.uri))
                        .map(|d| d.peer.clone())
                        .collect();
                    for peer in peers {
                        let _ = peer.notify(&method, params.clone());
                    }
                    // A 2026-07-28 client asked for it on its subscriptions/listen stream.
                    shared.routes.notify_listening(&method, params);
                }
                // The upstream said whose call it was written during: the host handed it to the
                // gateway's Forwarder in order (`take_related` in routes.rs), which sent it to
                // that call's client only; it is not an event.
                ServerNotification::LoggingMessage(_)
                | ServerNotification::ElicitationComplete(_)
                    if related.is_some() => {}
                ServerNotification::LoggingMessage(_)
                | ServerNotification::ElicitationComplete(_) => {
                    let recent = || {
                        lock(&state.ended)
                            .get(&server)
                            .filter(|(_, at)| at.elapsed() < LATE_ENTRY)
                            .map(|(peer, _)| peer.clone())
                    };
                    match shared.routes.waiting_on(&server).map(|w| w.or_else(recent)) {
                        Some(Some(peer)) => {
                            let _ = peer.notify(&method, params);
                        }
                        Some(None) => broadcast(shared, &method, params),
                        // Several clients' calls wait on it: whose entry this is cannot be
                        // known, and another client must not read it.
                        None => {
                            tracing::debug!(server = %server, "{method} dropped: calls of several clients wait on this server");
                        }
                    }
                }
                // Progress is passed on by the call it belongs to; tools/list_changed by the
                // catalogue event above.
                _ => {}
            }
        }
        _ => {}
    }
}

fn broadcast(shared: &Shared, method: &str, params: Option<RawJson>) {
    shared.routes.broadcast(method, params);
}

/// A client notification: its roots changed, which every upstream is told (the gateway
/// answers their `roots/list` by asking the client).
fn notified(shared: &Shared, _session: SessionKey, notification: ClientNotification) {
    if let ClientNotification::RootsListChanged(_) = notification {
        for (id, client) in ready(shared) {
            if let Err(e) = client.notify::<method::RootsListChanged>(&EmptyParams::new()) {
                shared.log.line(&format!(
                    "upstream {id}: roots/list_changed not passed on: {e}"
                ));
            }
        }
    }
}

/// Answers one client request.
async fn handle(
    state: &State,
    shared: &Shared,
    request: ClientRequest,
    context: RequestContext,
) -> Result<RawJson, ErrorObject> {
    let method = request.method().to_owned();
    // Tool lists and calls, nearly every request, read their own typed parameters: the
    // generic JSON copy is only for the requests relayed as JSON.
    let mut params = match &request {
        ClientRequest::ListTools(_) | ClientRequest::CallTool(_) => Value::Null,
        other => params_of(other)?,
    };
    match request {
        ClientRequest::ListTools(_) => list_tools(shared, &context),
        ClientRequest::CallTool(call) => call_tool(state, shared, call, &context).await,
        ClientRequest::ListResources(_) => {
            let lists = gather(shared, has_resources, &method, "resources").await?;
            let mut map = lock(&state.resources);
            let mut all = Vec::new();
            for (id, items) in permitted_lists(shared, &context, lists) {
                for item in items {
                    if let Some(uri) = item.get("uri").and_then(Value::as_str) {
                        map.insert(uri.to_owned(), id.clone());
                    }
                    all.push(item);
                }
            }
            encode(&json!({ "resources": all }))
        }
        ClientRequest::ListResourceTemplates(_) => {
            let lists = gather(shared, has_resources, &method, "resourceTemplates").await?;
            let mut map = lock(&state.templates);
            let mut all = Vec::new();
            for (id, items) in permitted_lists(shared, &context, lists) {
                for item in items {
                    if let Some(t) = item.get("uriTemplate").and_then(Value::as_str) {
                        map.insert(t.to_owned(), id.clone());
                    }
                    all.push(item);
                }
            }
            encode(&json!({ "resourceTemplates": all }))
        }
        ClientRequest::ReadResource(p) => {
            let candidates = permitted(
                shared,
                &context,
                resource_candidates(state, shared, &p.uri, has_resources),
                has_resources,
            )
            .ok_or_else(|| resource_not_found(&context, &p.uri))?;
            let (id, result) =
                first_answer(shared, &candidates, &method, &params, &context).await?;
            lock(&state.resources).insert(p.uri, id);
            Ok(result)
        }
        ClientRequest::Subscribe(p) => {
            let _turn = state.subscribing.lock().await;
            // Through the host, which subscribes the way the upstream's era has.
            let candidates = permitted(
                shared,
                &context,
                resource_candidates(state, shared, &p.uri, has_subscribe),
                has_subscribe,
            )
            .ok_or_else(|| resource_not_found(&context, &p.uri))?;
            // The client is taken as subscribed before the upstream is asked: an update the
            // upstream sends as soon as it has taken the subscribe reaches the client, instead
            // of finding nobody subscribed while the upstream's answer is on its way. Given up
            // again if no upstream takes it (unless the client was subscribed already).
            let added = lock(&shared.routes.sessions)
                .get_mut(&context.session)
                .is_some_and(|d| d.subscriptions.insert(p.uri.clone()));
            let uri = &p.uri;
            let subscribed = first_ok(&candidates, &method, |id| async move {
                shared
                    .host
                    .subscribe_resource(&id, uri)
                    .await
                    .map_err(host_error)
            })
            .await;
            if let Err(e) = subscribed {
                if added && let Some(d) = lock(&shared.routes.sessions).get_mut(&context.session) {
                    d.subscriptions.remove(&p.uri);
                }
                return Err(e);
            }
            encode(&json!({}))
        }
        ClientRequest::Unsubscribe(p) => {
            let _turn = state.subscribing.lock().await;
            if let Some(d) = lock(&shared.routes.sessions).get_mut(&context.session) {
                d.subscriptions.remove(&p.uri);
            }
            unsubscribe_if_unwanted(shared, state, &p.uri, None).await;
            encode(&json!({}))
        }
        ClientRequest::ListPrompts(_) => {
            let multi = is_multi(shared);
            let lists = gather(shared, has_prompts, &method, "prompts").await?;
            let mut all = Vec::new();
            for (id, items) in permitted_lists(shared, &context, lists) {
                for mut item in items {
                    if multi && let Some(name) = item.get("name").and_then(Value::as_str) {
                        item["name"] = Value::String(tool_name::prefixed(&id, name));
                    }
                    all.push(item);
                }
            }
            encode(&json!({ "prompts": all }))
        }
        ClientRequest::GetPrompt(p) => {
            let (server, name) = resolve_prompt(shared, &p.name)?;
            if !shared.may_use_upstream(&context, &server) {
                return Err(unknown_prompt(&p.name));
            }
            params["name"] = Value::String(name);
            forward(shared, &server, &method, &params, &context).await
        }
        ClientRequest::Complete(_) => {
            let candidates: Vec<String> = match params["ref"]["type"].as_str() {
                Some("ref/prompt") => {
                    let name = params["ref"]["name"].as_str().unwrap_or_default();
                    let (server, name) = resolve_prompt(shared, name)?;
                    params["ref"]["name"] = Value::String(name);
                    vec![server]
                        .into_iter()
                        .filter(|id| shared.may_use_upstream(&context, id))
                        .collect()
                }
                _ => {
                    let uri = params["ref"]["uri"].as_str().unwrap_or_default();
                    template_candidates(state, shared, uri)
                        .into_iter()
                        .filter(|id| shared.may_use_upstream(&context, id))
                        .collect()
                }
            };
            // A ready upstream that declared no completions is not asked: it may refuse with
            // -32601 (rmcp 3.11 does, rust-sdk #1446), and the client was told the gateway
            // completes. With no one left to ask, the answer is that there are no suggestions.
            let ready = ready(shared);
            let candidates: Vec<String> = candidates
                .into_iter()
                .filter(|id| {
                    ready
                        .iter()
                        .find(|(r, _)| r == id)
                        .is_none_or(|(_, c)| has_completions(&c.server_info().capabilities))
                })
                .collect();
            if candidates.is_empty() {
                return encode(&json!({"completion": {"values": [], "hasMore": false}}));
            }
            let (_, result) = first_answer(shared, &candidates, &method, &params, &context).await?;
            Ok(result)
        }
        ClientRequest::SetLevel(p) => {
            // A stateless upstream has no setLevel: the level goes with each request relayed
            // for this client instead (Shared::upstream_meta).
            if let Ok(level) = serde_json::to_value(&p.level) {
                shared.routes.set_log_level(context.session, level);
            }
            let targets = ready_with(shared, has_logging)
                .into_iter()
                .filter(|(_, c)| c.server_info().era != Era::Stateless);
            let single = !is_multi(shared);
            for (id, _) in targets {
                if let Err(e) = forward(shared, &id, &method, &params, &context).await {
                    if single {
                        return Err(e);
                    }
                    shared.log.line(&format!(
                        "upstream {id}: logging/setLevel failed: {}",
                        e.message
                    ));
                }
            }
            encode(&json!({}))
        }
        other if skills::handles(shared, other.method()) => {
            skills::handle(&state.skills, shared, other.method(), &params, &context).await
        }
        other => relay_other(shared, other, &params, &context).await,
    }
}

/// A request of no family this mode routes itself (an extension's, such as the skills
/// extension's `skills/list`): with one upstream, which declared an extension the gateway
/// relays ([`relayed_extensions`]), it goes there as sent, since nothing is renamed; with
/// several, which of them it is for cannot be told, and it is not found. Tasks requests are
/// never relayed here: the gateway answers them from its own store (`tasks.rs`).
async fn relay_other(
    shared: &Shared,
    request: ClientRequest,
    params: &Value,
    context: &RequestContext,
) -> Result<RawJson, ErrorObject> {
    let method = request.method();
    let is_task = matches!(
        request,
        ClientRequest::GetTask(_)
            | ClientRequest::UpdateTask(_)
            | ClientRequest::CancelTask(_)
            | ClientRequest::GetTaskPayload(_)
            | ClientRequest::ListTasks(_)
    );
    let only = match ready_upstreams(shared).as_slice() {
        [(id, client)] if relayed_extensions(&client.server_info().capabilities).is_some() => {
            Some(id.clone())
        }
        _ => None,
    };
    match only {
        Some(id) if !is_task && shared.may_use_upstream(context, &id) => {
            forward(shared, &id, method, params, context).await
        }
        _ => Err(reply::method_not_found(format!(
            "Method not found: {method}"
        ))),
    }
}

/// The request's parameters as JSON, `_meta` included (what goes upstream of it is
/// [`Shared::upstream_meta`]'s choice).
fn params_of(request: &ClientRequest) -> Result<Value, ErrorObject> {
    let raw = request
        .encode_params()
        .map_err(|e| reply::invalid_params(e.to_string()))?;
    match raw {
        Some(raw) => raw
            .decode::<Value>()
            .map_err(|e| reply::invalid_params(e.to_string())),
        None => Ok(json!({})),
    }
}

/// The upstream and its own name behind a namespaced prompt name: the longest configured id
/// that fits (see [`tool_name::split`]).
fn split_namespaced(shared: &Shared, name: &str) -> Option<(String, String)> {
    let ids = configured(shared);
    tool_name::split(name, ids.iter().map(String::as_str))
        .map(|(server, own)| (server.to_owned(), own.to_owned()))
}

/// The tools of the catalogue as the upstreams listed them: the schema back in place, the
/// name as [`tool_name::shown`] shows it, namespaced when there are several upstreams.
fn list_tools(shared: &Shared, context: &RequestContext) -> Result<RawJson, ErrorObject> {
    let catalog = shared.host.catalog();
    let multi = is_multi(shared);
    let ids = configured(shared);
    let tools = catalog
        .tools()
        .iter()
        // An upstream being removed (a reload) leaves the catalogue once it has stopped; its
        // tools are gone from the start.
        .filter(|t| ids.contains(&t.server))
        // What the file's rules hide from this caller.
        .filter(|t| shared.sees(context, &t.server, &t.tool))
        .map(|t| {
            let mut tool = listed_tool(t);
            let shown = tool_name::shown(&t.tool);
            tool.name = if multi {
                tool_name::prefixed(&t.server, &shown)
            } else {
                shown.into_owned()
            };
            tool
        })
        .collect();
    encode(&ListToolsResult::new(tools))
}

/// The upstream and tool (as the upstream names it) behind a name the client used: the name
/// shown for it with one upstream; with several, the namespaced name (each reading of it in
/// turn, see [`tool_name::splits`]), or a bare name that only one upstream has.
fn resolve_tool(shared: &Shared, name: &str) -> Option<(String, String)> {
    let catalog = shared.host.catalog();
    let ids = configured(shared);
    if is_multi(shared) {
        for (server, own) in tool_name::splits(name, ids.iter().map(String::as_str)) {
            if let Some(t) = catalog
                .server_tools(server)
                .find(|t| designates(&t.tool, own))
            {
                return Some((t.server.clone(), t.tool.clone()));
            }
        }
    }
    let mut found = catalog
        .tools()
        .iter()
        .filter(|t| ids.contains(&t.server) && designates(&t.tool, name));
    let first = found.next()?;
    found
        .next()
        .is_none()
        .then(|| (first.server.clone(), first.tool.clone()))
}

async fn call_tool(
    state: &State,
    shared: &Shared,
    call: CallToolParams,
    context: &RequestContext,
) -> Result<RawJson, ErrorObject> {
    let mut resolved = resolve_tool(shared, &call.name);
    if resolved.is_none() {
        // Its upstream may be one still connecting, or restarting after it was lost: wait
        // for it, then look again.
        let waiting = connecting_for(shared, &call.name);
        if !waiting.is_empty() {
            let waiting: Vec<&str> = waiting.iter().map(String::as_str).collect();
            upstreams::settle(shared, &waiting).await;
            resolved = resolve_tool(shared, &call.name);
            let down = waiting.iter().find_map(|s| {
                shared
                    .host
                    .server_status(s)
                    .filter(|st| st.state != ServerState::Ready)
            });
            if let (None, Some(status)) = (&resolved, down) {
                return encode(&reply::not_ready(&status.id, &status));
            }
        }
    }
    let unknown =
        || reply::invalid_params(format!("Unknown tool: {}", tool_name::quoted(&call.name)));
    let Some((server, tool)) = resolved else {
        return Err(unknown());
    };
    let label = call.name.clone();
    // The file's rules for this caller (`rules/`): a hidden tool gets the very answer of a
    // name no upstream has.
    match shared.admit(context, &label, &server, &tool).await {
        Ok(()) => {}
        Err(Refusal::Hidden) => return Err(unknown()),
        Err(Refusal::Refused(result)) => return encode(&result),
    }
    // Everything else the client sent goes along: a retry's `inputResponses` and
    // `requestState`, and fields this crate does not know.
    let mut params = CallToolParams::new(tool);
    params.arguments = call.arguments;
    params.extra = call.extra;
    params.meta = shared.upstream_meta(&server, context, call.meta);
    let asked = call.task.is_some();
    let outcome = match shared
        .relay(&label, &server, params, context, asked, None)
        .await?
    {
        Outcome::Done(outcome) => outcome,
        Outcome::InputRequired(raw) | Outcome::Task(raw) => return Ok(raw),
    };
    lock(&state.ended).insert(server, (context.peer.unrelated(), Instant::now()));
    match outcome {
        Ok(Relayed::Complete(out)) => reply::without_server_info(encode(&out.result)?),
        Ok(Relayed::InputRequired(raw)) => reply::without_server_info(raw),
        Ok(_) => Err(reply::internal(
            "the upstream's answer is of a kind this gateway does not know".to_owned(),
        )),
        // The upstream's own JSON-RPC error, as it sent it.
        Err(e @ CallError::Rpc { .. }) => Err(host_error(e)),
        Err(e) => encode(&call_error_result(&e)),
    }
}

/// The upstreams that are coming (connecting, or lost and about to be connected again) a
/// tool name the catalogue does not know may belong to: with several upstreams, the one its
/// prefix names (any coming one for a bare name); with one, that one.
fn connecting_for(shared: &Shared, name: &str) -> Vec<String> {
    let connecting: Vec<String> = shared
        .host
        .status()
        .into_iter()
        .filter(upstream_state::is_coming)
        .map(|s| s.id)
        .collect();
    if is_multi(shared) {
        let ids = configured(shared);
        let named: Vec<&str> = tool_name::splits(name, ids.iter().map(String::as_str))
            .into_iter()
            .map(|(server, _)| server)
            .collect();
        if !named.is_empty() {
            return connecting
                .into_iter()
                .filter(|id| named.contains(&id.as_str()))
                .collect();
        }
    }
    connecting
}

/// The `inputSchema` of the upstream tool a client calls by `name`, for the HTTP half to
/// check the `Mcp-Param-*` headers the client mirrored from its `x-mcp-header` arguments.
fn tool_schema(shared: &Shared, name: &str) -> Option<RawJson> {
    let (server, tool) = resolve_tool(shared, name)?;
    let catalog = shared.host.catalog();
    let found = catalog.server_tools(&server).find(|t| t.tool == tool)?;
    RawJson::encode(&*found.parameters).ok()
}

/// The upstream and its own prompt name behind a name the client used.
fn resolve_prompt(shared: &Shared, name: &str) -> Result<(String, String), ErrorObject> {
    if !is_multi(shared) {
        let only = configured(shared)
            .into_iter()
            .next()
            .ok_or_else(no_upstream)?;
        return Ok((only, name.to_owned()));
    }
    split_namespaced(shared, name).ok_or_else(|| unknown_prompt(name))
}

/// The answer to a prompt name no upstream has, and to one of an upstream the caller may not
/// use (the rules), alike: the caller cannot tell the two apart.
fn unknown_prompt(name: &str) -> ErrorObject {
    reply::invalid_params(format!(
        "Unknown prompt: {} (prompts are named mcp__<server>__<name>)",
        tool_name::quoted(name)
    ))
}

/// The answer to a resource none of the upstreams the caller may use can have, whether
/// another upstream has it or not: the era's "not found" (-32002 before 2026-07-28, -32602
/// since).
fn resource_not_found(context: &RequestContext, uri: &str) -> ErrorObject {
    let code = if context.era == Some(Era::Stateless) {
        mcp_protocol::code::INVALID_PARAMS
    } else {
        mcp_protocol::code::RESOURCE_NOT_FOUND
    };
    ErrorObject::new(
        code,
        format!("Resource not found: {}", tool_name::quoted(uri)),
    )
}

/// The candidates for a URI that the caller of `context` may use (the file's rules). When the
/// URI was routed only to upstreams it may not use, the ones a URI nobody listed is asked of
/// (every ready upstream that `has` the capability, of those it may use), so that the answer
/// is the one for a resource that does not exist; `None` when it may use none of those either.
fn permitted(
    shared: &Shared,
    context: &RequestContext,
    candidates: Vec<String>,
    has: fn(&ServerCapabilities) -> bool,
) -> Option<Vec<String>> {
    let usable = |ids: Vec<String>| -> Vec<String> {
        ids.into_iter()
            .filter(|id| shared.may_use_upstream(context, id))
            .collect()
    };
    let mut kept = usable(candidates);
    if kept.is_empty() && is_multi(shared) {
        kept = usable(
            ready_with(shared, has)
                .into_iter()
                .map(|(id, _)| id)
                .collect(),
        );
    }
    (!kept.is_empty()).then_some(kept)
}

/// The upstreams' lists that the caller of `context` may see (the file's rules).
fn permitted_lists(
    shared: &Shared,
    context: &RequestContext,
    lists: Vec<(String, Vec<Value>)>,
) -> impl Iterator<Item = (String, Vec<Value>)> {
    lists
        .into_iter()
        .filter(move |(id, _)| shared.may_use_upstream(context, id))
}

fn no_upstream() -> ErrorObject {
    reply::internal("the gateway has no upstream server".to_owned())
}

/// Where a resource URI may live: the only upstream; the one that listed it or whose template
/// matches it; else every ready upstream that can (`has`), to be asked in turn.
fn resource_candidates(
    state: &State,
    shared: &Shared,
    uri: &str,
    has: fn(&ServerCapabilities) -> bool,
) -> Vec<String> {
    if !is_multi(shared) {
        return configured(shared);
    }
    if let Some(id) = lock(&state.resources).get(uri) {
        return vec![id.clone()];
    }
    if let Some(id) = state.skills.upstream_of(uri) {
        return vec![id];
    }
    let by_template: Vec<String> = lock(&state.templates)
        .iter()
        .filter(|(t, _)| template_matches(t, uri))
        .map(|(_, id)| id.clone())
        .collect();
    if !by_template.is_empty() {
        return by_template;
    }
    ready_with(shared, has)
        .into_iter()
        .map(|(id, _)| id)
        .collect()
}

/// Where a completion for a resource template goes: the upstream that listed the template,
/// else every ready upstream that completes.
fn template_candidates(state: &State, shared: &Shared, template: &str) -> Vec<String> {
    if !is_multi(shared) {
        return configured(shared);
    }
    if let Some(id) = lock(&state.templates).get(template) {
        return vec![id.clone()];
    }
    ready_with(shared, has_completions)
        .into_iter()
        .map(|(id, _)| id)
        .collect()
}

/// Whether `uri` fits an RFC 6570 template at the simple level upstreams use: literal text and
/// `{name}` expressions, each standing for one or more characters.
fn template_matches(template: &str, uri: &str) -> bool {
    let mut rest = uri;
    let mut pieces = template.split('{');
    let Some(head) = pieces.next() else {
        return false;
    };
    let Some(after) = rest.strip_prefix(head) else {
        return false;
    };
    rest = after;
    for piece in pieces {
        let Some((_, literal)) = piece.split_once('}') else {
            return false;
        };
        if literal.is_empty() {
            // A variable at the end (or followed by another): it takes the rest.
            if rest.is_empty() {
                return false;
            }
            rest = "";
            continue;
        }
        match rest.get(1..).and_then(|r| r.find(literal)) {
            Some(at) => rest = &rest[at + 1 + literal.len()..],
            None => return false,
        }
    }
    rest.is_empty()
}

/// Sends `method` to each candidate in turn as it is; the first answer wins.
async fn first_answer(
    shared: &Shared,
    candidates: &[String],
    method: &str,
    params: &Value,
    context: &RequestContext,
) -> Result<(String, RawJson), ErrorObject> {
    first_ok(candidates, method, |id| async move {
        forward(shared, &id, method, params, context).await
    })
    .await
}

/// Asks each candidate in turn with `ask`; the first success wins. With none succeeding, the
/// first upstream's error (usually "not found").
async fn first_ok<T, F, Fut>(
    candidates: &[String],
    method: &str,
    mut ask: F,
) -> Result<(String, T), ErrorObject>
where
    F: FnMut(String) -> Fut,
    Fut: Future<Output = Result<T, ErrorObject>>,
{
    let mut first_error = None;
    for id in candidates {
        match ask(id.clone()).await {
            Ok(result) => return Ok((id.clone(), result)),
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    Err(first_error.unwrap_or_else(|| {
        reply::invalid_params(format!("{method}: no upstream server can answer it"))
    }))
}

/// Sends `method` to one upstream as it is and returns its result as it is; its JSON-RPC
/// error likewise. Dropping the future (the client cancelled) cancels the upstream request.
async fn forward(
    shared: &Shared,
    server: &str,
    method: &str,
    params: &Value,
    context: &RequestContext,
) -> Result<RawJson, ErrorObject> {
    let client = shared
        .host
        .client(server)
        .map_err(|e| reply::internal(e.to_string()))?;
    let mut params = params.clone();
    let meta = match params.as_object_mut().and_then(|p| p.remove("_meta")) {
        Some(Value::Object(meta)) => Some(meta),
        _ => None,
    };
    let mut meta = shared.upstream_meta(server, context, meta);
    let target = trace::Target::of(method, &params);
    let span = shared
        .traces
        .upstream(&shared.host, server, method, target, &mut meta);
    if let Some(meta) = meta {
        params["_meta"] = Value::Object(meta);
    }
    let params = RawJson::encode(&params).map_err(|e| reply::internal(e.to_string()))?;
    // A stateless client answers an upstream's input requests itself and retries with them
    // (the retry's `inputResponses` and `requestState` are in `params`, passed on as sent).
    let options = if context.era == Some(Era::Stateless) {
        RequestOptions::DEFAULT.passing_input_required()
    } else {
        RequestOptions::DEFAULT
    };
    let result = client
        .request_raw(method, Some(params), options, None)
        .await;
    if let Some(span) = span {
        span.end(trace::request_outcome(&result));
    }
    let result = result.map_err(|e| upstream_error(server, &shared.host.secrets(server), &e))?;
    reply::without_server_info(result)
}

/// A failed host operation as the client's error: the upstream's own JSON-RPC error as it
/// sent it, else an internal error saying what the host said.
fn host_error(e: CallError) -> ErrorObject {
    match e {
        CallError::Rpc {
            code,
            message,
            data,
            ..
        } => {
            let mut error = ErrorObject::new(code, message);
            error.data = data;
            error
        }
        other => reply::internal(other.to_string()),
    }
}

/// Every ready upstream's full list under `key` (all pages), for the upstreams that declared
/// the feature. With one upstream its failure is the answer; with several, a failing one is
/// left out and logged.
async fn gather(
    shared: &Shared,
    has: fn(&ServerCapabilities) -> bool,
    method: &str,
    key: &str,
) -> Result<Vec<(String, Vec<Value>)>, ErrorObject> {
    let single = !is_multi(shared);
    let mut out = Vec::new();
    for (id, client) in ready_with(shared, has) {
        let secrets = shared.host.secrets(&id);
        match list_all(&id, &secrets, &client, method, key).await {
            Ok(items) => out.push((id, items)),
            Err(e) if single => return Err(e),
            Err(e) => shared
                .log
                .line(&format!("upstream {id}: {method} failed: {}", e.message)),
        }
    }
    Ok(out)
}

async fn list_all(
    server: &str,
    secrets: &Secrets,
    client: &Client,
    method: &str,
    key: &str,
) -> Result<Vec<Value>, ErrorObject> {
    let mut all = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..MAX_PAGES {
        let params = cursor
            .as_ref()
            .map(|c| RawJson::encode(&json!({ "cursor": c })))
            .transpose()
            .map_err(|e| reply::internal(e.to_string()))?;
        let raw = client
            .request_raw(method, params, RequestOptions::DEFAULT, None)
            .await
            .map_err(|e| upstream_error(server, secrets, &e))?;
        let mut page = raw
            .decode::<Value>()
            .map_err(|e| reply::internal(format!("upstream server `{server}`: {method}: {e}")))?;
        if let Some(Value::Array(items)) = page.get_mut(key).map(Value::take) {
            all.extend(items);
        }
        match page.get("nextCursor").and_then(Value::as_str) {
            Some(next) if cursor.as_deref() != Some(next) => cursor = Some(next.to_owned()),
            _ => return Ok(all),
        }
    }
    Ok(all)
}

#[cfg(test)]
mod tests {
    use super::template_matches;

    #[test]
    fn templates_match_simple_expressions() {
        assert!(template_matches(
            "test://template/{id}/data",
            "test://template/7/data"
        ));
        assert!(!template_matches(
            "test://template/{id}/data",
            "test://template//data"
        ));
        assert!(!template_matches(
            "test://template/{id}/data",
            "test://other/7/data"
        ));
        assert!(template_matches("fake://{name}", "fake://hello"));
        assert!(!template_matches("fake://{name}", "fake://"));
        assert!(template_matches("file:///{a}/{b}.txt", "file:///x/y.txt"));
    }
}
