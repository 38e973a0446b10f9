//! What every mode shares: the host, the file, the call log, and upstream calls with the
//! permission policy, progress and cancellation carried across the hop.

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::{Arc, Mutex, Weak};
use std::time::Instant;

use mcp_host::{CallError, CallOptions, ExposedTool, Host, Relayed, ServerState, ToolOutput};
use mcp_protocol::schema::{
    CallToolParams, CallToolResult, Implementation, ProgressParams, TASKS_EXTENSION_ID,
    TaskSupport, Tool, meta_key,
};
use mcp_protocol::{Era, ErrorObject, JsonObject, RawJson};
use mcp_session::RequestContext;
use tokio::sync::{mpsc, oneshot};

use crate::call_log::CallLog;
use crate::file::GatewayFile;
use crate::metrics::{CallOutcome, Metrics};
use crate::reply;
use crate::routes::Routes;
use crate::rules::Refusal;
use crate::suspend::{self, Outcome, Suspensions, Turn, take_retry};
use crate::sync::lock;
use crate::tasks::{self, RunAs};
use crate::trace::{self, Target, Tracer};
use crate::upstream_state::{self, Upstreams};

/// What every request handler sees.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) host: Host,
    /// The file as last loaded (meta mode's reload replaces it); read it with
    /// [`file`](Self::file).
    pub(crate) file: Mutex<Arc<GatewayFile>>,
    pub(crate) path: PathBuf,
    /// What the file was first read with; a reload reads it again with the same.
    pub(crate) env: mcp_host::config::Env,
    pub(crate) oauth: Option<mcp_host::oauth::OAuthContext>,
    pub(crate) log: CallLog,
    pub(crate) routes: Arc<Routes>,
    pub(crate) implementation: Implementation,
    /// The upstream set as it changes at run time (see `upstreams`).
    pub(crate) upstreams: Upstreams,
    /// What `GET /metrics` shows of the gateway (`metrics.rs`).
    pub(crate) metrics: Metrics,
    /// The gateway's OpenTelemetry spans (`trace/`).
    pub(crate) traces: Tracer,
    /// Itself, for a 2026-07-28 client's call, which runs in a task of its own so that it can
    /// wait suspended while its client answers `input_required` (`suspend.rs`).
    pub(crate) me: Weak<Shared>,
    /// Those calls, waiting for their clients' retries, in every mode.
    pub(crate) suspensions: Arc<Suspensions>,
    /// The gateway's own tasks, for its clients in every mode (`tasks.rs`).
    pub(crate) tasks: mcp_session::Tasks,
    /// The counters of the rules' rate limits (`rules/`).
    pub(crate) rates: Box<dyn crate::rules::RateStore>,
    /// The HTTP server's token checks, when the file has `auth`: what a reload gives a new
    /// block to.
    pub(crate) auth: std::sync::OnceLock<Arc<crate::auth::Guard>>,
}

impl Shared {
    /// The file as last loaded.
    pub(crate) fn file(&self) -> Arc<GatewayFile> {
        Arc::clone(&lock(&self.file))
    }

    /// Replaces the file (meta mode's reload).
    pub(crate) fn set_file(&self, file: GatewayFile) {
        *lock(&self.file) = Arc::new(file);
    }

    /// Calls an upstream tool for the client request in `context`: the permission policy,
    /// progress passed back to the client under its own token, cancellation when the client
    /// cancels (the handler's future is dropped), the upstream's requests routed back to this
    /// client, and one line in the call log with `label`, the latency and the outcome.
    ///
    /// `retry` is what a 2026-07-28 client's retry of the mode's own tool call carried
    /// ([`retry_fields`]): the upstream's questions reach that client as `input_required`
    /// ([`Called::InputRequired`]), and its retry resumes the call, as in passthrough mode.
    ///
    /// The mode's own tool supports tasks (optional): a client that asks for one (`asked`,
    /// its call's `task` member, or in 2026-07-28 the extension it declared) gets the call run
    /// as a task of the gateway's ([`Called::Task`]).
    #[allow(clippy::too_many_arguments)]
    pub(crate) async fn call_tool(
        &self,
        label: &str,
        server: &str,
        tool: &str,
        arguments: JsonObject,
        retry: JsonObject,
        asked: bool,
        context: &RequestContext,
    ) -> Result<Called, CallError> {
        // The file's rules for this caller (`rules/`): a hidden tool is an unknown one.
        match self.admit(context, label, server, tool).await {
            Ok(()) => {}
            Err(Refusal::Hidden) => {
                return Err(CallError::UnknownTool {
                    name: tool.to_owned(),
                });
            }
            Err(Refusal::Refused(result)) => return Ok(Called::Refused(result)),
        }
        let mut params = CallToolParams::new(tool.to_owned());
        params.arguments = Some(arguments);
        params.extra = retry;
        let failed = |message: String| CallError::Failed {
            server: server.to_owned(),
            what: tool.to_owned(),
            message,
        };
        let own = Some(TaskSupport::Optional);
        match self.relay(label, server, params, context, asked, own).await {
            Ok(Outcome::Task(raw)) => Ok(Called::Task(raw)),
            Ok(Outcome::Done(Ok(Relayed::Complete(output)))) => Ok(Called::Output(output)),
            Ok(Outcome::Done(Ok(Relayed::InputRequired(raw))) | Outcome::InputRequired(raw)) => {
                reply::without_server_info(raw)
                    .map(Called::InputRequired)
                    .map_err(|e| failed(e.message))
            }
            Ok(Outcome::Done(Ok(_))) => Err(failed(
                "the upstream's answer is of a kind this gateway does not know".to_owned(),
            )),
            Ok(Outcome::Done(Err(e))) => Err(e),
            Err(e) => Err(failed(e.message)),
        }
    }

    /// Relays a tool call for the client of `context`. A 2026-07-28 client's call runs in a
    /// task of its own: the upstream's requests mid-call come back to it as `input_required`,
    /// and its retry (whose `requestState` is the gateway's) resumes the call (`suspend.rs`).
    /// A retry carrying the upstream's own `requestState` goes to the upstream as it came.
    ///
    /// A call the client wants as a task (`asked`: its `task` member; see [`tasks::run_as`])
    /// runs as a task of the gateway's instead, and the client is answered with it
    /// ([`Outcome::Task`]): a handshake client's at once; a 2026-07-28 client's once the
    /// upstream made its task, when the upstream's tool may be one (`tasks.rs`). `support` is
    /// the called tool's task support when it is the mode's own (`None`: the upstream tool's,
    /// as listed).
    pub(crate) async fn relay(
        &self,
        label: &str,
        server: &str,
        mut params: CallToolParams,
        context: &RequestContext,
        asked: bool,
        support: Option<TaskSupport>,
    ) -> Result<Outcome, ErrorObject> {
        let upstream = self.task_support(server, &params.name);
        let run_as = tasks::run_as(context, asked, support.as_ref().unwrap_or(&upstream));
        let stateless = context.era == Some(Era::Stateless);
        // The upstream decides when its task begins, and the gateway's with it.
        let until_upstream_task =
            run_as == RunAs::Task && stateless && upstream != TaskSupport::Forbidden;
        match run_as {
            RunAs::Task if !until_upstream_task => {
                let owned = self
                    .me
                    .upgrade()
                    .ok_or_else(|| reply::internal("the gateway is shutting down"))?;
                let (label, server) = (label.to_owned(), server.to_owned());
                let call: tasks::UpstreamCall = Box::new(move |call_context: RequestContext| {
                    Box::pin(async move {
                        owned
                            .relay_call(&label, &server, params, &call_context)
                            .await
                    })
                });
                return tasks::start(&self.tasks, context, call).map(Outcome::Task);
            }
            RunAs::Refused => return Err(mcp_session::Tasks::required_error()),
            RunAs::Task | RunAs::Call => {}
        }
        let owned = self.me.upgrade();
        let Some(owned) = owned.filter(|_| stateless) else {
            return Ok(Outcome::Done(
                self.relay_call(label, server, params, context).await,
            ));
        };
        let retry = take_retry(&mut params.extra);
        let tool = params.name.clone();
        let (told, started) = if until_upstream_task {
            let (told, started) = oneshot::channel();
            (Some(told), Some(started))
        } else {
            (None, None)
        };
        let (label, owned_server, call_context) =
            (label.to_owned(), server.to_owned(), context.clone());
        let start = move || -> Pin<Box<dyn Future<Output = _> + Send>> {
            let call = async move {
                owned
                    .relay_call(&label, &owned_server, params, &call_context)
                    .await
            };
            match told {
                Some(told) => Box::pin(suspend::until_task(told, call)),
                None => Box::pin(call),
            }
        };
        let track = |asks: &_, turn| match turn {
            Turn::Suspended => self.routes.suspended(asks),
            Turn::Resumed => self.routes.resumed(asks, &context.peer),
        };
        let adopt = |running| tasks::adopt(&self.tasks, context, running, server, &tool);
        let bound = self.bound(context, server, &tool);
        self.suspensions
            .run(retry, start, started, &track, &adopt, bound)
            .await
    }

    /// Whose a stateless call is, and what resumes it for a retry relayed from another
    /// replica (which has no stream here): what the upstream writes goes to this request's
    /// peer, whose stream has ended by then (so nowhere), and a task it becomes is this
    /// request's caller's (`suspend::Bound`).
    fn bound(&self, context: &RequestContext, server: &str, tool: &str) -> suspend::Bound {
        let (routes, peer) = (Arc::clone(&self.routes), context.peer.clone());
        let (store, owner) = (self.tasks.clone(), context.clone());
        let (server, tool) = (server.to_owned(), tool.to_owned());
        suspend::Bound {
            caller: context.session_name.clone(),
            track: Arc::new(move |asks, turn| match turn {
                Turn::Suspended => routes.suspended(asks),
                Turn::Resumed => routes.resumed(asks, &peer),
            }),
            adopt: Arc::new(move |running| tasks::adopt(&store, &owner, running, &server, &tool)),
        }
    }

    /// The task support of `server`'s tool `tool`, as the upstream listed it.
    fn task_support(&self, server: &str, tool: &str) -> TaskSupport {
        self.host
            .catalog()
            .server_tools(server)
            .find(|t| t.tool == tool)
            .map_or(TaskSupport::Forbidden, |t| tasks::support_of(&t.source))
    }

    /// [`call_tool`](Self::call_tool) with everything else the client sent (`params`: its
    /// `inputResponses`, `requestState` and `_meta`, already prepared for the upstream by
    /// [`upstream_meta`](Self::upstream_meta)). A stateless client gets the upstream's
    /// `input_required` result as it came, since it answers and retries itself; a handshake
    /// client is asked through the way back instead, and sees only the final result.
    pub(crate) async fn relay_call(
        &self,
        label: &str,
        server: &str,
        mut params: CallToolParams,
        context: &RequestContext,
    ) -> Result<Relayed, CallError> {
        let tool = params.name.clone();
        let started = Instant::now();
        // A tool resolved from the catalogue (or a category's list) may belong to an upstream
        // that is coming back (restarted by a reload, or lost and about to be reconnected):
        // the call waits for it as for one still connecting, and then goes, or fails with the
        // state it is in.
        // A ready one (nearly every call) is told by its state alone, without its status.
        if self.host.server_state(server) != Some(ServerState::Ready)
            && self
                .host
                .server_status(server)
                .is_some_and(|s| upstream_state::is_coming(&s))
        {
            self.upstreams.settle(&self.host, &[server]).await;
        }
        let route = self.routes.track(server, context);
        let mut options = CallOptions::default();
        let forward = context.progress_token.clone().map(|token| {
            let (tx, mut rx) = mpsc::unbounded_channel::<ProgressParams>();
            options = CallOptions::default().progress(tx);
            let peer = context.peer.clone();
            tokio::spawn(async move {
                while let Some(mut params) = rx.recv().await {
                    params.progress_token = token.clone();
                    params.meta = None;
                    if let Ok(raw) = RawJson::encode(&params) {
                        let _ = peer.notify("notifications/progress", Some(raw));
                    }
                }
            })
        });
        if context.era == Some(Era::Stateless) {
            options = options.passing_input_required();
        }
        // The upstream's requests and log entries that say they belong to this call come
        // back with its tag, and reach this client only (routes.rs).
        options = options.related(route.tag());
        if let Some(started) = suspend::task_wanted() {
            options = options.as_task();
            if let Some(started) = started {
                options = options.telling_task_started(started);
            }
        }
        let span = self.traces.upstream(
            &self.host,
            server,
            "tools/call",
            Some(Target::Tool(&tool)),
            &mut params.meta,
        );
        let outcome = self.host.relay_call(server, params, options).await;
        if let Some(span) = span {
            span.end(trace::call_outcome(&outcome));
        }
        drop(route);
        if let Some(task) = forward {
            // The sender went with the call; the task ends once it has passed on the rest.
            let _ = task.await;
        }
        let took = started.elapsed();
        self.metrics
            .tool_call(server, &tool, took, CallOutcome::of(&outcome));
        if self.log.is_on() {
            let ms = took.as_millis();
            let result = match &outcome {
                Ok(Relayed::Complete(out)) if out.is_tool_error() => "tool error".to_owned(),
                Ok(Relayed::Complete(_)) => "ok".to_owned(),
                Ok(_) => "input required".to_owned(),
                Err(e) => format!("failed: {e}"),
            };
            self.log.call(
                context.session,
                server,
                &format!("call {label} {server}/{tool} {ms} ms {result}"),
            );
        }
        outcome
    }

    /// The `_meta` of a request relayed to `server` for the client of `context`, from the
    /// `_meta` that client sent: without its progress token (the gateway asks for progress
    /// under its own) and without the stateless era's envelope (the upstream session adds its
    /// own). A stateless upstream also hears what that client declared and the log level it
    /// wants, since the gateway answers the upstream's input requests by asking that client:
    /// the upstream must not ask for what it cannot give.
    pub(crate) fn upstream_meta(
        &self,
        server: &str,
        context: &RequestContext,
        meta: Option<JsonObject>,
    ) -> Option<JsonObject> {
        let mut meta = meta.unwrap_or_default();
        let level = meta
            .get(meta_key::LOG_LEVEL)
            .cloned()
            .or_else(|| self.routes.log_level(context.session));
        meta.remove("progressToken");
        meta.retain(|key, _| !key.starts_with(meta_key::PREFIX));
        let stateless = self
            .host
            .client(server)
            .is_ok_and(|c| c.server_info().era == Era::Stateless);
        if stateless {
            if let Some(capabilities) = context
                .client
                .as_ref()
                .and_then(|c| serde_json::to_value(&c.capabilities).ok())
            {
                // Whether a call runs as the upstream's task is the host's to say (it declares
                // the tasks extension on the calls it runs as tasks, and follows them): the
                // client's declaration would let the upstream answer a plain call with a task
                // nobody follows.
                let mut capabilities = capabilities;
                if let Some(extensions) = capabilities
                    .get_mut("extensions")
                    .and_then(serde_json::Value::as_object_mut)
                {
                    extensions.remove(TASKS_EXTENSION_ID);
                }
                meta.insert(meta_key::CLIENT_CAPABILITIES.to_owned(), capabilities);
            }
            if let Some(level) = level {
                meta.insert(meta_key::LOG_LEVEL.to_owned(), level);
            }
        }
        (!meta.is_empty()).then_some(meta)
    }
}

/// What an upstream tool call gives a mode's own tool call.
#[derive(Debug)]
pub(crate) enum Called {
    /// The upstream's result.
    Output(ToolOutput),
    /// The upstream asked the client something: the client's answer is this `input_required`
    /// result, and its retry of the same call, with the answers, resumes it.
    InputRequired(RawJson),
    /// The client asked for a task: the call runs as a task of the gateway's, and this
    /// result announces it.
    Task(RawJson),
    /// The file's rules refused the call (`deny`, or a rate limit): this tool error says why.
    Refused(CallToolResult),
}

/// The multi round-trip fields of a 2026-07-28 client's retry of a mode's own tool call
/// (`inputResponses` and `requestState`), which go along with the upstream call it makes;
/// nothing else the client sent beside its arguments does.
pub(crate) fn retry_fields(extra: &JsonObject) -> JsonObject {
    ["inputResponses", "requestState"]
        .into_iter()
        .filter_map(|key| Some((key.to_owned(), extra.get(key)?.clone())))
        .collect()
}

/// A tool as the upstream lists it: the catalogue's copy with its input schema put back.
pub(crate) fn listed_tool(exposed: &ExposedTool) -> Tool {
    let mut tool = (*exposed.source).clone();
    tool.input_schema = Some((*exposed.parameters).clone());
    tool
}
