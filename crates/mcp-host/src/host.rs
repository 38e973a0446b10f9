//! The [`Host`] facade: what a consumer holds. It starts, reloads and stops servers (each
//! then run by its own supervisor task, see `supervisor`), reports their status, and makes
//! the calls: permission check, the server's timeouts, cancellation on drop, bounded results.
//! One server's trouble never reaches another: each has its own task, timeouts and state, and
//! the catalogue is rebuilt from whatever is ready.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use mcp_protocol::schema::{
    CallToolParams, CallToolResult, ContentBlock, GetPromptParams, GetPromptResult, Prompt,
    ReadResourceResult, RequestMethod, Resource, ResourceTemplate, RootsCapability,
    SkillsCapability, is_input_required, method, method::CallTool,
};
use mcp_protocol::{
    ClientConfig, Era, JsonObject, RawJson, RequestOptions, Secrets, decode_result,
};
use mcp_session::Client;
use tokio::sync::broadcast;

use crate::bound::bound_result;
use crate::call::{CallOptions, Relayed, ToolOutput};
use crate::catalog::{Catalog, ModelTool};
use crate::entry::ServerEntry;
use crate::error::CallError;
use crate::events::Subscription;
use crate::operation::Operation;
use crate::options::HostOptions;
use crate::permission::{CallKind, CallRequest};
use crate::redact::Redactor;
use crate::shared::{EVENT_BUFFER, Inner, Slot, SlotState, lock, stop_slot};
use crate::status::{Phase, ServerState, ServerStatus};
use crate::supervisor::serve::{about_resource, relist_tools};
use crate::supervisor::supervise;

/// The host: the servers, their connections, the catalogue, the policy. Cheap to clone; every
/// clone is the same host.
///
/// Dropping the last clone without [`shutdown`](Self::shutdown) kills every stdio server's
/// process group at once (SIGKILL, from the dropping thread: no task needs to run, the runtime
/// need not shut down), ends every connection and stops every reconnection.
#[derive(Clone, Debug)]
pub struct Host {
    pub(crate) inner: Arc<Inner>,
    /// Shared by the clones only, never by the host's own tasks (which hold `inner`): its drop
    /// is the drop of the last clone.
    _owner: Arc<Owner>,
}

/// Ends the servers when the last [`Host`] clone is dropped (see [`Owner::drop`]).
struct Owner(Arc<Inner>);

impl std::fmt::Debug for Owner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Owner")
    }
}

impl Drop for Owner {
    /// Every supervisor and connection task holds `Inner`, so nothing would end by itself:
    /// each slot is stopped (no reconnection), its supervisor aborted (a server still being
    /// started is killed as the aborted task drops its half-made client), and its client
    /// killed now, whoever else holds a handle of it: the group is gone before this returns.
    fn drop(&mut self) {
        let slots = std::mem::take(&mut *lock(&self.0.slots));
        for slot in slots.into_values() {
            slot.stop.store(true, Ordering::SeqCst);
            if let Some(task) = lock(&slot.task).take() {
                task.abort();
            }
            let client = lock(&slot.state).disconnect();
            if let Some(client) = client {
                client.kill();
            }
        }
    }
}

impl Host {
    /// A host with no servers yet.
    pub fn new(options: HostOptions) -> Self {
        let mut session = ClientConfig::new(options.client_info.clone());
        let mut capabilities = options
            .requests
            .as_ref()
            .map(|r| r.capabilities())
            .unwrap_or_default();
        // Configured roots are the host's own answer; without them, a request handler that
        // declares `roots` (a gateway passing its client's on) answers `roots/list`.
        if options.roots.is_some() {
            let mut roots = RootsCapability::new();
            roots.list_changed = Some(false);
            capabilities.roots = Some(roots);
        }
        // The host lists and loads skills (`list_skills`, `load_skill`), so it says so
        // (SEP-2133): a server may serve skills only to a client that declared the extension.
        SkillsCapability::declare_client(&mut capabilities);
        session.capabilities = capabilities;
        let (events, _) = broadcast::channel(EVENT_BUFFER);
        let inner = Arc::new(Inner {
            admission: crate::admission::Admission::new(options.max_connections),
            eras: crate::eras::EraMemory::new(options.era_file.clone()),
            tasks: crate::tasks::store::TaskStore::new(options.task_file.clone()),
            options,
            session,
            slots: Mutex::new(BTreeMap::new()),
            catalog: RwLock::new(Arc::new(Catalog::default())),
            rebuild: Mutex::new(()),
            events,
            transports: crate::transport::Shared::default(),
        });
        Self {
            _owner: Arc::new(Owner(Arc::clone(&inner))),
            inner,
        }
    }

    /// Starts every enabled server in `entries` at once and returns when each has settled
    /// (ready, failed, or waiting for authorization). Servers already running under the same
    /// id are stopped first. A server that hangs fails after its `request_timeout`.
    ///
    /// The first entry takes its place in the server set (replacing the server of the same
    /// id) when the future is first polled, before anything is awaited, and so does a removal
    /// ([`remove`](Self::remove)): a caller that changes one id many times in a row (a storm
    /// of reloads) polls each change once in order, then lets them finish in any order.
    pub async fn start(&self, entries: Vec<ServerEntry>) {
        let mut settled = Vec::new();
        for entry in entries {
            let state = SlotState {
                diagnostics: entry.notes.clone(),
                ..SlotState::default()
            };
            let redactor = Redactor::new(&entry);
            let slot = Arc::new(Slot {
                redactor,
                entry,
                state: Mutex::new(state),
                stop: AtomicBool::new(false),
                task: Mutex::new(None),
                resources: Mutex::new(BTreeSet::new()),
                relisten: tokio::sync::Notify::new(),
            });
            // The new slot takes the old one's place in one step (listed as connecting), and
            // only then does the old one stop: a server restarted with a new entry is never
            // missing from the status meanwhile.
            let old = lock(&self.inner.slots).insert(slot.entry.id.clone(), slot.clone());
            if let Some(old) = old {
                stop_slot(&old).await;
            }
            if !slot.entry.enabled {
                self.inner.set_state(&slot, ServerState::Disabled, None);
                continue;
            }
            self.inner.set_state(&slot, ServerState::Connecting, None);
            let (ready_tx, ready_rx) = tokio::sync::oneshot::channel();
            // Admitted (or queued) here, in the order of `entries`, not as the tasks happen to
            // run: the same servers wait on every run. An entry that cannot be used never
            // connects and takes no turn.
            let ticket = slot
                .entry
                .connect
                .is_ok()
                .then(|| self.inner.admission.enter());
            let task = tokio::spawn(supervise(
                self.inner.clone(),
                slot.clone(),
                ticket,
                ready_tx,
            ));
            *lock(&slot.task) = Some(task);
            settled.push(ready_rx);
        }
        for ready in settled {
            let _ = ready.await;
        }
    }

    /// Applies a new configuration (seed 003's reload): servers no longer listed are stopped
    /// and removed, every listed one is started again with its new entry. Returns when all
    /// have settled.
    pub async fn reload(&self, entries: Vec<ServerEntry>) {
        let keep: BTreeSet<String> = entries.iter().map(|e| e.id.clone()).collect();
        let gone: Vec<String> = lock(&self.inner.slots)
            .keys()
            .filter(|id| !keep.contains(*id))
            .cloned()
            .collect();
        for id in gone {
            self.remove(&id).await;
        }
        self.start(entries).await;
    }

    /// Stops every server and ends their connections (stdio servers are ended politely, then
    /// killed).
    pub async fn shutdown(&self) {
        let slots: Vec<_> = std::mem::take(&mut *lock(&self.inner.slots))
            .into_values()
            .collect();
        // Every server ends at once: a slow one does not hold the others.
        let mut stops = tokio::task::JoinSet::new();
        for slot in slots {
            stops.spawn(async move { stop_slot(&slot).await });
        }
        while stops.join_next().await.is_some() {}
        self.inner.rebuild_catalog();
    }

    /// Stops one server and removes it; `false` if there was none with that id.
    pub async fn remove(&self, id: &str) -> bool {
        let slot = lock(&self.inner.slots).remove(id);
        match slot {
            Some(slot) => {
                stop_slot(&slot).await;
                self.inner.catalog_changed(id);
                true
            }
            None => false,
        }
    }

    /// Logs in to an OAuth-protected server now (through the OAuth context's user agent) and
    /// reconnects it.
    pub async fn login(&self, id: &str) -> Result<(), CallError> {
        let slot = self.inner.slot(id)?;
        let Some(oauth) = slot.oauth() else {
            return Err(CallError::NoOAuth {
                server: id.to_owned(),
            });
        };
        // The OAuth error is kept as the source: its kind (transient or not) reaches the caller.
        oauth
            .login()
            .await
            .map_err(|e| self.inner.shown(CallError::login_failed(id, e)))?;
        self.restart(id).await
    }

    /// Forgets an OAuth server's tokens, here and in the token store, and disconnects it.
    pub async fn logout(&self, id: &str) -> Result<(), CallError> {
        let slot = self.inner.slot(id)?;
        let Some(oauth) = slot.oauth() else {
            return Err(CallError::NoOAuth {
                server: id.to_owned(),
            });
        };
        oauth.logout().await.map_err(|e| CallError::Failed {
            server: id.to_owned(),
            what: "logout".to_owned(),
            message: e.to_string(),
        })?;
        stop_slot(&slot).await;
        self.inner.set_state(
            &slot,
            ServerState::AuthRequired,
            Some((Phase::Authorization, "logged out".to_owned())),
        );
        self.inner.catalog_changed(id);
        Ok(())
    }

    /// Stops and starts one server again with the same entry, and waits until it settles.
    pub async fn restart(&self, id: &str) -> Result<(), CallError> {
        let slot = self.inner.slot(id)?;
        self.start(vec![slot.entry.clone()]).await;
        Ok(())
    }

    /// Every server's status, ordered by id; never waits for a server (it answers while calls
    /// run).
    pub fn status(&self) -> Vec<ServerStatus> {
        let slots: Vec<_> = lock(&self.inner.slots).values().cloned().collect();
        slots.iter().map(|s| s.status()).collect()
    }

    /// One server's status.
    pub fn server_status(&self, id: &str) -> Option<ServerStatus> {
        let slot = lock(&self.inner.slots).get(id).cloned();
        slot.map(|s| s.status())
    }

    /// Every server's id, ordered: the ids [`status`](Self::status) lists, without building
    /// each status (which copies its error, diagnostics and peer information), for a caller
    /// that resolves names against the servers on every call, as a gateway does.
    pub fn server_ids(&self) -> Vec<String> {
        lock(&self.inner.slots).keys().cloned().collect()
    }

    /// How many servers the host holds: `status().len()`, without building the statuses.
    pub fn server_count(&self) -> usize {
        lock(&self.inner.slots).len()
    }

    /// One server's state, as its [`server_status`](Self::server_status) says it, without
    /// building the rest of the status: what a caller checks on every call.
    pub fn server_state(&self, id: &str) -> Option<ServerState> {
        let slot = lock(&self.inner.slots).get(id).cloned()?;
        let state = lock(&slot.state).state;
        Some(state.unwrap_or(ServerState::Connecting))
    }

    /// The catalogue as it is now. It is replaced whole when a server's tools change, so a
    /// caller holding it sees one consistent set; the next call to `catalog` sees the update.
    pub fn catalog(&self) -> Arc<Catalog> {
        self.inner
            .catalog
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Events from the servers named in `servers` (all when `None`) of the kinds in `kinds`
    /// (all when `None`; see [`HostEvent::kind`](crate::HostEvent::kind)).
    pub fn subscribe(&self, servers: Option<&[&str]>, kinds: Option<&[&str]>) -> Subscription {
        let set = |names: &[&str]| names.iter().map(|s| (*s).to_owned()).collect();
        Subscription::new(
            self.inner.events.subscribe(),
            servers.map(set),
            kinds.map(set),
        )
    }

    /// The values never to be shown about `server` (its configured and inherited secrets,
    /// its current tokens), for a consumer that quotes what the server said through
    /// [`client`](Self::client), as a proxy passing errors on does: the host's own errors,
    /// statuses and logs already hide them. Empty for an unknown server.
    pub fn secrets(&self, server: &str) -> Secrets {
        let slot = lock(&self.inner.slots).get(server).cloned();
        slot.map(|s| s.redactor.secrets()).unwrap_or_default()
    }

    /// The connected client of a ready server, for operations this API does not cover.
    pub fn client(&self, server: &str) -> Result<Client, CallError> {
        self.inner.ready_client(server)
    }

    /// Calls the tool or operation behind an exposed name (see [`Catalog::model_tools`]):
    /// what an agent does with each tool call its model makes.
    pub async fn call(
        &self,
        exposed: &str,
        arguments: JsonObject,
        options: CallOptions,
    ) -> Result<ToolOutput, CallError> {
        let target = {
            let catalog = self.catalog();
            match catalog.lookup(exposed) {
                Some(ModelTool::Tool(t)) => (t.server.clone(), Err(t.tool.clone())),
                Some(ModelTool::Operation(o)) => (o.server.clone(), Ok(o.operation)),
                None => {
                    return Err(CallError::UnknownTool {
                        name: exposed.to_owned(),
                    });
                }
            }
        };
        match target {
            (server, Ok(operation)) => {
                self.call_operation(&server, operation, arguments, options)
                    .await
            }
            (server, Err(tool)) => self.call_tool(&server, &tool, arguments, options).await,
        }
    }

    /// Runs a resource or prompt operation on `server` as a tool call: the arguments checked
    /// against its schema (a wrong one is a tool error for the model), the permission check
    /// with [`CallKind::Operation`], the server's timeout, cancellation when the future is
    /// dropped, and the result bounded like any tool's. Only an operation the catalogue offers
    /// for the server runs (its capability declared at connect, its setting on).
    pub async fn call_operation(
        &self,
        server: &str,
        operation: Operation,
        arguments: JsonObject,
        options: CallOptions,
    ) -> Result<ToolOutput, CallError> {
        let slot = self.inner.slot(server)?;
        let method = operation.method();
        let offered = lock(&slot.state)
            .operations
            .iter()
            .any(|o| o.operation == operation);
        if !offered {
            self.inner.ready_client(server)?;
            return Err(CallError::Failed {
                server: server.to_owned(),
                what: method.to_owned(),
                message: "not offered: the server did not declare the capability, or its expose_resources or expose_prompts setting is off".to_owned(),
            });
        }
        let args = match crate::operation::parse_args(operation, &arguments) {
            Ok(args) => args,
            Err(why) => {
                let mut result = CallToolResult::new(vec![ContentBlock::text(format!(
                    "{method} was not sent: {why}"
                ))]);
                result.is_error = Some(true);
                return Ok(ToolOutput {
                    result,
                    truncated: false,
                });
            }
        };
        let request = CallRequest {
            server,
            tool: method,
            arguments: &arguments,
            kind: CallKind::Operation(operation),
        };
        self.inner.permit(&slot, &request).await?;
        let client = self.inner.ready_client(server)?;
        let idle = options.timeout.unwrap_or(slot.entry.request_timeout);
        let request_options = RequestOptions::DEFAULT
            .timeout(self.inner.options.max_call_duration.max(idle))
            .idle_timeout(idle);
        let mut result = crate::operation::run(&client, operation, args, request_options)
            .await
            .map_err(|e| self.inner.session_error(server, method, e))?;
        let truncated = bound_result(&mut result, slot.entry.max_result_bytes);
        Ok(ToolOutput { result, truncated })
    }

    /// Calls `tool` on `server` after the permission check. A denied call never reaches the
    /// server. Dropping the future cancels the call: the server is sent
    /// `notifications/cancelled` and its late answer is dropped.
    pub async fn call_tool(
        &self,
        server: &str,
        tool: &str,
        arguments: JsonObject,
        mut options: CallOptions,
    ) -> Result<ToolOutput, CallError> {
        let mut params = CallToolParams::new(tool.to_owned());
        params.arguments = Some(arguments);
        options.pass_input_required = false;
        match self.relay_call(server, params, options).await? {
            Relayed::Complete(output) => Ok(output),
            // Only asked for with `pass_input_required`, which is off here.
            Relayed::InputRequired(_) => Err(CallError::Failed {
                server: server.to_owned(),
                what: tool.to_owned(),
                message: "the server asked for input that was not answered".to_owned(),
            }),
        }
    }

    /// Calls a tool on behalf of a client of ours, as a gateway does: `params` carries, beside
    /// the name and arguments, what that client sent with its call (`inputResponses` and
    /// `requestState` of a retry; in `_meta`, the capabilities it declared and the log level
    /// it wants, which a stateless server then sees as the caller's). The permission rules
    /// apply to every call, retries included. With
    /// [`passing_input_required`](CallOptions::passing_input_required) an `input_required`
    /// result comes back as it came.
    pub async fn relay_call(
        &self,
        server: &str,
        mut params: CallToolParams,
        options: CallOptions,
    ) -> Result<Relayed, CallError> {
        let slot = self.inner.slot(server)?;
        let arguments = params.arguments.take().unwrap_or_default();
        let tool = params.name.clone();
        let tool = tool.as_str();
        let request = CallRequest {
            server,
            tool,
            arguments: &arguments,
            kind: CallKind::Tool,
        };
        self.inner.permit(&slot, &request).await?;
        let client = self.inner.ready_client(server)?;
        params.arguments = Some(arguments);
        let idle = options.timeout.unwrap_or(slot.entry.request_timeout);
        let support = lock(&slot.state)
            .tools
            .iter()
            .find(|t| t.tool == tool)
            .map(|t| crate::tasks::task_support(&t.source));
        if let Some(support) = support
            && crate::tasks::wants_task(
                &slot.entry,
                &support,
                options.timeout,
                options.as_task,
                client.server_info(),
            )
        {
            let call = crate::tasks::TaskCall {
                inner: &self.inner,
                server,
                tool,
                client,
                idle,
                progress: options.progress,
                related: options.related,
            };
            let answer = crate::tasks::TaskAnswer {
                pass_input_required: options.pass_input_required,
                started: options.task_started,
            };
            return match crate::tasks::call(&call, params, answer).await? {
                Relayed::Complete(ToolOutput { mut result, .. }) => {
                    let truncated = bound_result(&mut result, slot.entry.max_result_bytes);
                    Ok(Relayed::Complete(ToolOutput { result, truncated }))
                }
                other => Ok(other),
            };
        }
        let mut request_options = RequestOptions::DEFAULT
            .timeout(self.inner.options.max_call_duration.max(idle))
            .idle_timeout(idle);
        if options.progress.is_some() {
            request_options = request_options.with_progress();
        }
        if options.pass_input_required {
            request_options = request_options.passing_input_required();
        }
        let failed = |e| self.inner.session_error(server, tool, e);
        let encoded = RawJson::encode(&params).map_err(|e| CallError::Failed {
            server: server.to_owned(),
            what: tool.to_owned(),
            message: format!("the call's parameters cannot be encoded: {e}"),
        })?;
        let raw = client
            .request_raw_tagged(
                <CallTool as RequestMethod>::METHOD,
                Some(encoded),
                request_options,
                options.progress,
                options.related,
            )
            .await
            .map_err(failed)?;
        if is_input_required(&raw) {
            return Ok(Relayed::InputRequired(raw));
        }
        let mut result = decode_result::<CallTool>(&raw).map_err(|e| {
            self.inner.shown(CallError::Failed {
                server: server.to_owned(),
                what: tool.to_owned(),
                message: e.to_string(),
            })
        })?;
        let truncated = bound_result(&mut result, slot.entry.max_result_bytes);
        Ok(Relayed::Complete(ToolOutput { result, truncated }))
    }

    /// The tasks this host (or, with [`HostOptions::task_file`], any host of the user)
    /// started and still keeps, as last seen: expired ones are dropped.
    pub async fn tasks(&self) -> Vec<crate::TaskRecord> {
        self.inner.tasks.all().await
    }

    /// Asks `server` where its task `task_id` is now (`tasks/get`), and keeps the answer.
    pub async fn task(&self, server: &str, task_id: &str) -> Result<crate::TaskRecord, CallError> {
        crate::tasks::status(&self.inner, server, task_id).await
    }

    /// Waits for `server`'s task `task_id` to end, answering its input requests as any
    /// server request, and gives its result, bounded like a call's: for a task started by
    /// another process, or a call that gave up waiting. Status changes go to `progress`.
    pub async fn task_result(
        &self,
        server: &str,
        task_id: &str,
        options: CallOptions,
    ) -> Result<ToolOutput, CallError> {
        let slot = self.inner.slot(server)?;
        let mut result =
            crate::tasks::result(&self.inner, server, task_id, options.progress).await?;
        let truncated = bound_result(&mut result, slot.entry.max_result_bytes);
        Ok(ToolOutput { result, truncated })
    }

    /// Asks `server` to cancel its task `task_id` (`tasks/cancel`), and keeps the status it
    /// reports then.
    pub async fn cancel_task(
        &self,
        server: &str,
        task_id: &str,
    ) -> Result<crate::TaskRecord, CallError> {
        crate::tasks::cancel(&self.inner, server, task_id).await
    }

    /// The tasks `server` itself lists (`tasks/list`; MCP 2025-11-25 only, since the
    /// 2026-07-28 extension has no list), whoever started them.
    pub async fn server_tasks(&self, server: &str) -> Result<Vec<crate::TaskRecord>, CallError> {
        crate::tasks::list(&self.inner, server).await
    }

    /// Lists a ready server's tools again and swaps them into the catalogue: for a consumer
    /// that keeps them longer than a session would (a gateway's schema cache with a lifetime),
    /// since servers may change their tools without saying so. On failure the old list stays.
    pub async fn refresh_tools(&self, server: &str) -> Result<(), CallError> {
        let slot = self.inner.slot(server)?;
        let client = self.inner.ready_client(server)?;
        relist_tools(&self.inner, &slot, &client)
            .await
            .map_err(|e| self.inner.session_error(server, "tools/list", e))
    }

    /// The resources of a ready server, every page.
    pub async fn list_resources(&self, server: &str) -> Result<Vec<Resource>, CallError> {
        let client = self.inner.ready_client(server)?;
        client
            .list_all_resources()
            .await
            .map_err(|e| self.inner.session_error(server, "resources/list", e))
    }

    /// The resource templates of a ready server, every page.
    pub async fn list_resource_templates(
        &self,
        server: &str,
    ) -> Result<Vec<ResourceTemplate>, CallError> {
        let client = self.inner.ready_client(server)?;
        client.list_all_resource_templates().await.map_err(|e| {
            self.inner
                .session_error(server, "resources/templates/list", e)
        })
    }

    /// Reads one resource.
    pub async fn read_resource(
        &self,
        server: &str,
        uri: &str,
    ) -> Result<ReadResourceResult, CallError> {
        let client = self.inner.ready_client(server)?;
        client
            .read_resource(uri)
            .await
            .map_err(|e| self.inner.session_error(server, "resources/read", e))
    }

    /// Asks `server` to say when the resource at `uri` changes: a
    /// [`HostEvent::Notification`](crate::HostEvent::Notification) with `notifications/resources/updated` follows each change.
    /// The way differs by era and the host hides it: `resources/subscribe` in the handshake
    /// era, the URI added to the `subscriptions/listen` filter in the stateless one (which has
    /// no such method). The subscription outlives the connection: a reconnection takes it up
    /// again.
    pub async fn subscribe_resource(&self, server: &str, uri: &str) -> Result<(), CallError> {
        let slot = self.inner.slot(server)?;
        let client = self.inner.ready_client(server)?;
        let info = client.server_info();
        if info
            .capabilities
            .resources
            .as_ref()
            .and_then(|r| r.subscribe)
            != Some(true)
        {
            return Err(CallError::Failed {
                server: server.to_owned(),
                what: "resources/subscribe".to_owned(),
                message: "the server does not offer resource subscriptions".to_owned(),
            });
        }
        if info.era == Era::Handshake {
            about_resource::<method::Subscribe>(&client, uri)
                .await
                .map_err(|e| self.inner.session_error(server, "resources/subscribe", e))?;
        }
        if lock(&slot.resources).insert(uri.to_owned()) {
            slot.relisten.notify_one();
        }
        Ok(())
    }

    /// Ends a [`subscribe_resource`](Self::subscribe_resource); the URI is forgotten even if
    /// the server cannot be told (it is not connected, or refuses). A URI that was not
    /// subscribed to is left alone: the server is not bothered.
    pub async fn unsubscribe_resource(&self, server: &str, uri: &str) -> Result<(), CallError> {
        let slot = self.inner.slot(server)?;
        if !lock(&slot.resources).remove(uri) {
            return Ok(());
        }
        slot.relisten.notify_one();
        let client = self.inner.ready_client(server)?;
        if client.server_info().era == Era::Handshake {
            about_resource::<method::Unsubscribe>(&client, uri)
                .await
                .map_err(|e| self.inner.session_error(server, "resources/unsubscribe", e))?;
        }
        Ok(())
    }

    /// The prompts of a ready server, every page.
    pub async fn list_prompts(&self, server: &str) -> Result<Vec<Prompt>, CallError> {
        let client = self.inner.ready_client(server)?;
        client
            .list_all_prompts()
            .await
            .map_err(|e| self.inner.session_error(server, "prompts/list", e))
    }

    /// Gets one prompt with its arguments filled in.
    pub async fn get_prompt(
        &self,
        server: &str,
        name: &str,
        arguments: BTreeMap<String, String>,
    ) -> Result<GetPromptResult, CallError> {
        let client = self.inner.ready_client(server)?;
        let mut params = GetPromptParams::new(name.to_owned());
        if !arguments.is_empty() {
            params.arguments = Some(arguments.into_iter().collect());
        }
        client
            .get_prompt(params)
            .await
            .map_err(|e| self.inner.session_error(server, "prompts/get", e))
    }
}
