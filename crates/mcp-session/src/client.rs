//! The client handle: cheap to clone, usable from many tasks at once, the same over every
//! transport.

use std::any::Any;
use std::collections::HashSet;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering, fence};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll, Wake, Waker};

use mcp_protocol::schema::{
    CallToolParams, CallToolResult, GetPromptParams, GetPromptResult, ListPromptsResult,
    ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, NotificationMethod,
    PaginatedParams, ProgressParams, Prompt, ReadResourceResult, RequestMethod, Resource,
    ResourceTemplate, ResourceUriParams, SkillEntry, Tool, method,
};
use mcp_protocol::{
    ClientConfig, ErrorObject, RawJson, RequestId, RequestOptions, ServerInfo, decode_result,
};
use tokio::sync::{mpsc, oneshot};

use crate::core::{Core, Incoming, Transport, now};
use crate::error::{Error, Result};

/// The most pages a `list_all_*` call follows, so that a server that never ends its
/// pagination cannot hold a host forever.
const MAX_PAGES: usize = 10_000;

/// A connection to one MCP server.
///
/// # Cancel safety
///
/// Dropping a request future before it completes cancels the request: the server is told
/// (`notifications/cancelled`) and a late answer is dropped.
#[derive(Clone)]
pub struct Client {
    core: Arc<Core>,
    info: Arc<ServerInfo>,
    inbox: Arc<Mutex<Option<mpsc::Receiver<Incoming>>>>,
    /// Whatever the transport must keep alive as long as a handle exists (a process guard).
    _keep: Arc<dyn Any + Send + Sync>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("server", &self.core.name)
            .field("protocol_version", &self.info.protocol_version)
            .finish_non_exhaustive()
    }
}

/// A connection before its handshake: a transport builds one, starts its own tasks with
/// [`core`](Self::core), then calls [`connect`](Self::connect).
#[derive(Debug)]
pub struct Pending {
    core: Arc<Core>,
    inbox: mpsc::Receiver<Incoming>,
}

impl Pending {
    /// A connection to the server `name` over `transport`, not yet initialized.
    pub fn new(name: &str, session: ClientConfig, transport: impl Transport) -> Self {
        let (core, inbox) = Core::new(name, session, Box::new(transport));
        Self { core, inbox }
    }

    /// The core, for the transport's tasks to feed.
    pub fn core(&self) -> &Arc<Core> {
        &self.core
    }

    /// Runs the handshake. On failure the transport is closed before this returns, and the
    /// error says why, with what the transport knows (exit status, stderr).
    pub async fn connect(self, keep: Arc<dyn Any + Send + Sync>) -> Result<Client> {
        let (ready_tx, ready_rx) = oneshot::channel();
        let core = self.core;
        if let Err(e) = core.initialize(ready_tx) {
            return Err(Error::new(&core.name, e));
        }
        let outcome = ready_rx.await.unwrap_or_else(|_| {
            Err(mcp_protocol::Error::Closed(
                "the connection ended".to_owned(),
            ))
        });
        match outcome {
            Ok(info) => Ok(Client {
                core,
                info: Arc::new(info),
                inbox: Arc::new(Mutex::new(Some(self.inbox))),
                _keep: keep,
            }),
            Err(error) => {
                let error = Error::new(&core.name, with_reason(error, &core));
                close(&core).await;
                Err(error)
            }
        }
    }
}

impl Client {
    /// The server's name, as configured.
    pub fn name(&self) -> &str {
        &self.core.name
    }

    /// What the server said in the handshake: version, capabilities, identity, instructions.
    pub fn server_info(&self) -> &ServerInfo {
        &self.info
    }

    /// The receiver of notifications, server requests and diagnostics. It can be taken once;
    /// until it is, notifications are dropped (and counted) and, once 256 wait, server requests
    /// are refused.
    pub fn take_incoming(&self) -> Option<mpsc::Receiver<Incoming>> {
        self.inbox
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
    }

    /// What the server wrote on its error stream recently (stdio: stderr), with configured
    /// secrets redacted.
    pub fn stderr(&self) -> String {
        self.core.transport().stderr()
    }

    /// The most recent diagnostics: frames that were not JSON-RPC, oversized frames, answers
    /// to nothing.
    pub fn diagnostics(&self) -> Vec<String> {
        self.core.lock().diagnostics.iter().cloned().collect()
    }

    /// How many notifications were dropped because the host did not take them in time.
    pub fn dropped_notifications(&self) -> u64 {
        self.core.lock().dropped_notifications
    }

    /// The session id the server assigned, for transports with sessions (Streamable HTTP's
    /// `Mcp-Session-Id`); `None` over stdio and the deprecated HTTP+SSE transport.
    ///
    /// Treat it like a credential: whoever holds it can act in the session, so do not log it
    /// or show it whole. It is never part of this crate's errors, diagnostics or `Debug`
    /// output.
    pub fn session_id(&self) -> Option<String> {
        self.core.transport().session_id()
    }

    /// Whether the connection has ended.
    pub fn is_closed(&self) -> bool {
        self.core.is_closed()
    }

    /// Resolves when the session ends, to why it ended: over stdio the server exited or closed
    /// its output (with the exit status and stderr tail); over Streamable HTTP the server ended
    /// the session (404); over HTTP+SSE the event stream ended; the server broke the protocol;
    /// or [`close`](Self::close) was called. Resolves at once if the session has already ended.
    /// A host waits on it to mark the server down and reconnect.
    ///
    /// A Streamable HTTP server that cannot be reached fails each request but does not end the
    /// session, so this does not resolve for it.
    pub async fn closed(&self) -> String {
        self.core.closed().await
    }

    /// Sends a request and decodes its result by the method's type.
    pub async fn request<M: RequestMethod>(
        &self,
        params: &M::Params,
        options: RequestOptions,
    ) -> Result<M::Result> {
        self.request_with_progress::<M>(params, options, None).await
    }

    /// Like [`request`](Self::request), delivering progress notifications to `progress`
    /// (which asks the server for them).
    pub async fn request_with_progress<M: RequestMethod>(
        &self,
        params: &M::Params,
        mut options: RequestOptions,
        progress: Option<mpsc::UnboundedSender<ProgressParams>>,
    ) -> Result<M::Result> {
        let params = RawJson::encode(params).map_err(|e| {
            Error::new(
                &self.core.name,
                mcp_protocol::Error::ApiMisuse(e.to_string()),
            )
        })?;
        if progress.is_some() {
            options = options.with_progress();
        }
        let raw = self
            .request_raw(M::METHOD, Some(params), options, progress)
            .await?;
        decode_result::<M>(&raw).map_err(|e| Error::new(&self.core.name, e))
    }

    /// Sends a request by name with raw parameters and returns the raw result: for a proxy.
    pub async fn request_raw(
        &self,
        method: &str,
        params: Option<RawJson>,
        options: RequestOptions,
        progress: Option<mpsc::UnboundedSender<ProgressParams>>,
    ) -> Result<RawJson> {
        self.request_raw_tagged(method, params, options, progress, None)
            .await
    }

    /// [`request_raw`](Self::request_raw) with a tag of the caller's choosing, given back
    /// with what the server sends about this request ([`Incoming::Request`]'s `related`,
    /// [`Incoming::RelatedNotification`]): a proxy relaying for several clients over one
    /// connection tells by it whose request a server's elicitation or log entry is about.
    ///
    /// [`Incoming::Request`]: crate::Incoming::Request
    /// [`Incoming::RelatedNotification`]: crate::Incoming::RelatedNotification
    pub async fn request_raw_tagged(
        &self,
        method: &str,
        params: Option<RawJson>,
        options: RequestOptions,
        progress: Option<mpsc::UnboundedSender<ProgressParams>>,
        tag: Option<u64>,
    ) -> Result<RawJson> {
        let (tx, mut rx) = oneshot::channel();
        let (sent, sending) = self.core.with_session_sending(|state| {
            let id = state.session.send_request(now(), method, params, options)?;
            state.waiters.insert(id.clone(), tx);
            if let Some(p) = progress {
                state.progress.insert(id.clone(), p);
            }
            if let Some(tag) = tag {
                state.tags.insert(id.clone(), tag);
            }
            Ok(id)
        });
        let exchange = match &sent {
            Ok(id) => self.core.own_sending(id, sending),
            Err(_) => {
                self.core.start(sending);
                None
            }
        };
        let id = sent.map_err(|e| Error::new(&self.core.name, with_reason(e, &self.core)))?;
        let mut guard = CancelOnDrop {
            core: &self.core,
            id: Some(id),
        };
        // The caller drives its request's exchange (an HTTP POST) itself, until the answer
        // comes, whichever way it comes; if the exchange ends first (the answer delivered, or
        // the request failed, or its stream gone to be resumed elsewhere), the answer is
        // awaited alone.
        let outcome = match exchange {
            Some(exchange) => answer_while_driving(exchange, &mut rx).await,
            None => rx.await,
        };
        guard.id = None;
        match outcome {
            Ok(Ok(raw)) => Ok(raw),
            Ok(Err(e)) => Err(Error::new(&self.core.name, e)),
            Err(_) => Err(Error::new(
                &self.core.name,
                mcp_protocol::Error::Closed(self.core.end_reason("the connection ended")),
            )),
        }
    }

    /// Sends a notification (`notifications/roots/list_changed`): for a host whose roots
    /// changed, or a proxy passing on its own client's notice.
    pub fn notify<N: NotificationMethod>(&self, params: &N::Params) -> Result<()> {
        self.core
            .with_session(|state| state.session.notify::<N>(params))
            .map_err(|e| Error::new(&self.core.name, e))
    }

    /// One page of `tools/list`.
    pub async fn list_tools(&self, cursor: Option<String>) -> Result<ListToolsResult> {
        self.request::<method::ListTools>(&page(cursor), RequestOptions::DEFAULT)
            .await
    }

    /// Every tool, following `nextCursor` to the end.
    pub async fn list_all_tools(&self) -> Result<Vec<Tool>> {
        self.paginate::<method::ListTools, _>(|r| (r.tools, r.next_cursor))
            .await
    }

    /// Calls a tool. A tool that fails reports `is_error: Some(true)` in an `Ok` result; an
    /// `Err` is a protocol or transport failure.
    pub async fn call_tool(
        &self,
        params: CallToolParams,
        options: RequestOptions,
    ) -> Result<CallToolResult> {
        self.request::<method::CallTool>(&params, options).await
    }

    /// One page of `resources/list`.
    pub async fn list_resources(&self, cursor: Option<String>) -> Result<ListResourcesResult> {
        self.request::<method::ListResources>(&page(cursor), RequestOptions::DEFAULT)
            .await
    }

    /// Every resource, following `nextCursor` to the end.
    pub async fn list_all_resources(&self) -> Result<Vec<Resource>> {
        self.paginate::<method::ListResources, _>(|r| (r.resources, r.next_cursor))
            .await
    }

    /// One page of `resources/templates/list`.
    pub async fn list_resource_templates(
        &self,
        cursor: Option<String>,
    ) -> Result<ListResourceTemplatesResult> {
        self.request::<method::ListResourceTemplates>(&page(cursor), RequestOptions::DEFAULT)
            .await
    }

    /// Every resource template, following `nextCursor` to the end.
    pub async fn list_all_resource_templates(&self) -> Result<Vec<ResourceTemplate>> {
        self.paginate::<method::ListResourceTemplates, _>(|r| (r.resource_templates, r.next_cursor))
            .await
    }

    /// Reads a resource.
    pub async fn read_resource(&self, uri: &str) -> Result<ReadResourceResult> {
        self.request::<method::ReadResource>(
            &ResourceUriParams::new(uri.to_owned()),
            RequestOptions::DEFAULT,
        )
        .await
    }

    /// One page of `prompts/list`.
    pub async fn list_prompts(&self, cursor: Option<String>) -> Result<ListPromptsResult> {
        self.request::<method::ListPrompts>(&page(cursor), RequestOptions::DEFAULT)
            .await
    }

    /// Every prompt, following `nextCursor` to the end.
    pub async fn list_all_prompts(&self) -> Result<Vec<Prompt>> {
        self.paginate::<method::ListPrompts, _>(|r| (r.prompts, r.next_cursor))
            .await
    }

    /// Every skill a server lists (`skills/list` of the skills extension), following
    /// `nextCursor` to the end. An entry is whole on its page, so pages simply add up.
    pub async fn list_all_skills(&self) -> Result<Vec<SkillEntry>> {
        self.paginate::<method::ListSkills, _>(|r| (r.skills, r.next_cursor))
            .await
    }

    /// Gets a prompt filled in with `params.arguments`.
    pub async fn get_prompt(&self, params: GetPromptParams) -> Result<GetPromptResult> {
        self.request::<method::GetPrompt>(&params, RequestOptions::DEFAULT)
            .await
    }

    async fn paginate<M, T>(
        &self,
        split: impl Fn(M::Result) -> (Vec<T>, Option<String>),
    ) -> Result<Vec<T>>
    where
        M: RequestMethod<Params = PaginatedParams>,
    {
        let mut all = Vec::new();
        let mut cursor = None;
        let mut seen = HashSet::new();
        for _ in 0..MAX_PAGES {
            let (items, next) = split(
                self.request::<M>(&page(cursor), RequestOptions::DEFAULT)
                    .await?,
            );
            all.extend(items);
            match next {
                None => return Ok(all),
                Some(next) if !seen.insert(next.clone()) => {
                    return Err(Error::new(
                        &self.core.name,
                        mcp_protocol::Error::Protocol(format!(
                            "{} repeated the cursor {next:?}; stopped after {} items",
                            M::METHOD,
                            all.len()
                        )),
                    ));
                }
                Some(next) => cursor = Some(next),
            }
        }
        Err(Error::new(
            &self.core.name,
            mcp_protocol::Error::Protocol(format!(
                "{} did not end after {MAX_PAGES} pages",
                M::METHOD
            )),
        ))
    }

    /// Answers a server request delivered as [`Incoming::Request`]. Returns `false` if the
    /// server withdrew it meanwhile.
    pub fn respond(&self, id: &RequestId, outcome: Result<RawJson, ErrorObject>) -> Result<bool> {
        self.core
            .with_session(|state| match outcome {
                Ok(result) => state.session.respond(now(), id, result),
                Err(error) => state.session.respond_error(id, error),
            })
            .map_err(|e| Error::new(&self.core.name, e))
    }

    /// Ends the session and the connection; requests in flight fail. Returns how it ended
    /// (for stdio, the server's exit status).
    pub async fn close(&self) -> String {
        close(&self.core).await
    }

    /// Ends the connection at once, without waiting: a stdio server's process group is killed
    /// (SIGKILL) now, whoever else holds a handle of this client; requests in flight then fail
    /// as the connection ends. A Streamable HTTP or HTTP+SSE connection is not affected: it
    /// ends when its last handle is dropped. For a host that is being dropped and cannot wait
    /// for [`close`](Self::close).
    pub fn kill(&self) {
        self.core.transport().kill();
    }
}

fn page(cursor: Option<String>) -> PaginatedParams {
    let mut p = PaginatedParams::new();
    p.cursor = cursor;
    p
}

/// A session that ended says why, with what the transport knows.
fn with_reason(error: mcp_protocol::Error, core: &Core) -> mcp_protocol::Error {
    match error {
        mcp_protocol::Error::Closed(reason) => {
            mcp_protocol::Error::Closed(core.complete_reason(reason))
        }
        other => other,
    }
}

async fn close(core: &Arc<Core>) -> String {
    core.with_session(|state| state.session.close("closed by the host"));
    core.transport().close().await
}

/// Where a caller waits for its answer.
type Answer = oneshot::Receiver<std::result::Result<RawJson, mcp_protocol::Error>>;

/// Drives a request's exchange and waits for the request's answer. The answer usually comes
/// through the exchange, which then ends right after (letting go of what carried it, say an
/// HTTP connection back to its pool): the answer is returned once the exchange has ended. An
/// answer that comes another way (on another stream, or as a timeout or the end of the
/// session) is returned at once, and the exchange is dropped.
///
/// An answer the exchange itself delivers, while this task is polling it, does not wake this
/// task: the answer is looked at right after anyway, and waking a task that is running makes
/// tokio hand it to another worker thread (a yield), which is a context switch per call.
/// Answers delivered any other way wake it as usual.
async fn answer_while_driving(
    exchange: Pin<Box<dyn Future<Output = ()> + Send>>,
    answer: &mut Answer,
) -> std::result::Result<std::result::Result<RawJson, mcp_protocol::Error>, oneshot::error::RecvError>
{
    let quiet = Arc::new(Quiet {
        polling_exchange: AtomicBool::new(false),
        woken_outside: AtomicBool::new(false),
        task: Mutex::new(None),
    });
    let quiet_waker = Waker::from(Arc::clone(&quiet));
    let mut exchange = Some(exchange);
    // The answer the exchange delivered, kept until the exchange has ended.
    let mut kept = None;
    std::future::poll_fn(|cx| {
        {
            let mut task = quiet.task.lock().unwrap_or_else(PoisonError::into_inner);
            if !task.as_ref().is_some_and(|t| t.will_wake(cx.waker())) {
                *task = Some(cx.waker().clone());
            }
        }
        if let Some(running) = exchange.as_mut() {
            quiet.polling_exchange.store(true, Ordering::SeqCst);
            let ended = running.as_mut().poll(cx).is_ready();
            quiet.polling_exchange.store(false, Ordering::SeqCst);
            // Pairs with the fence in `Quiet::wake_by_ref`: an answer delivered while the flag
            // was up is seen by the poll below.
            fence(Ordering::SeqCst);
            if ended {
                exchange = None;
            }
        }
        if kept.is_none() {
            let Poll::Ready(outcome) =
                Pin::new(&mut *answer).poll(&mut Context::from_waker(&quiet_waker))
            else {
                return Poll::Pending;
            };
            if exchange.is_none() || quiet.woken_outside.load(Ordering::SeqCst) {
                return Poll::Ready(outcome);
            }
            kept = Some(outcome);
        }
        match (&exchange, kept.take()) {
            (None, Some(outcome)) => Poll::Ready(outcome),
            // The exchange delivered the answer and is ending; it wakes this task when it can
            // go on.
            (_, outcome) => {
                kept = outcome;
                Poll::Pending
            }
        }
    })
    .await
}

/// The waker the answer's channel holds while its caller drives the exchange: it passes wakes
/// on to the caller's task, except while that task is polling the exchange.
struct Quiet {
    polling_exchange: AtomicBool,
    /// Set by a wake that came while the exchange was not being polled: the answer came
    /// another way.
    woken_outside: AtomicBool,
    task: Mutex<Option<Waker>>,
}

impl Wake for Quiet {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        fence(Ordering::SeqCst);
        if self.polling_exchange.load(Ordering::SeqCst) {
            return;
        }
        self.woken_outside.store(true, Ordering::SeqCst);
        let task = self.task.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(task) = task.as_ref() {
            task.wake_by_ref();
        }
    }
}

/// Cancels a request whose future was dropped before its answer came.
struct CancelOnDrop<'a> {
    core: &'a Arc<Core>,
    id: Option<RequestId>,
}

impl Drop for CancelOnDrop<'_> {
    fn drop(&mut self) {
        if let Some(id) = self.id.take() {
            self.core.with_session(|state| {
                state.waiters.remove(&id);
                state.progress.remove(&id);
                state.tags.remove(&id);
                let _ = state
                    .session
                    .cancel(&id, Some("the host dropped the request"));
            });
        }
    }
}
