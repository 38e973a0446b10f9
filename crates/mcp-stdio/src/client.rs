//! The client: a cloneable handle over a connection driven by two tasks. The reader task
//! feeds stdout lines and timer ticks to the `mcp-protocol` session; the writer task sends what
//! the session queues, coalescing every queued message into one write. The session does the
//! protocol; this module moves bytes and time.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Instant;

use mcp_protocol::schema::{
    CallToolParams, CallToolResult, GetPromptParams, GetPromptResult, ListPromptsResult,
    ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, PaginatedParams,
    ProgressParams, Prompt, ReadResourceResult, RequestMethod, Resource, ResourceTemplate,
    ResourceUriParams, ServerNotification, ServerRequest, Tool, method,
};
use mcp_protocol::{
    ClientConfig, ClientEvent, ClientSession, ErrorObject, RawJson, RequestId, RequestOptions,
    ServerInfo, decode, decode_result,
};
use tokio::io::{AsyncRead, AsyncReadExt as _, AsyncWrite, AsyncWriteExt as _};
use tokio::sync::{Notify, mpsc, oneshot, watch};

use crate::child::{self, StderrLog, StdioConfig};
use crate::clock::{self, now};
use crate::codec::{Line, LineDecoder, encode_line, sniff_id};
use crate::error::{Error, Result};

/// How many undelivered notifications and server requests wait for the host before new ones
/// are dropped (notifications) or refused (requests).
const INCOMING_CAPACITY: usize = 256;
/// How many diagnostics are kept.
const DIAGNOSTICS_KEPT: usize = 64;
/// The most pages a `list_all_*` call follows, so that a server that never ends its
/// pagination cannot hold a host forever.
const MAX_PAGES: usize = 10_000;

/// Something from the server for the host, taken from [`Client::take_incoming`].
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
// Moved once, through a channel; boxing the request would buy nothing.
#[allow(clippy::large_enum_variant)]
pub enum Incoming {
    /// A request for a capability the host declared; answer with [`Client::respond`].
    Request {
        /// The id to answer with.
        id: RequestId,
        /// The request.
        request: ServerRequest,
    },
    /// The server withdrew a request; do not answer it.
    Cancelled {
        /// The withdrawn request.
        id: RequestId,
    },
    /// A notification: a log entry, a list change, a resource update.
    Notification(ServerNotification),
    /// Something the server did wrong that did not end the connection.
    Diagnostic(String),
}

struct State {
    session: ClientSession,
    waiters: HashMap<RequestId, oneshot::Sender<Result<RawJson, mcp_protocol::Error>>>,
    progress: HashMap<RequestId, mpsc::UnboundedSender<ProgressParams>>,
    ready: Option<oneshot::Sender<Result<ServerInfo, mcp_protocol::Error>>>,
    incoming: mpsc::Sender<Incoming>,
    diagnostics: VecDeque<String>,
    dropped_notifications: u64,
    /// Set once the host asked to close: the writer closes stdin when it has flushed.
    closing: bool,
    /// The deadline the reader's timer is armed for; a new request wakes the reader only if
    /// its deadline is earlier.
    armed: Option<Instant>,
}

impl State {
    fn diagnostic(&mut self, text: String) {
        if self.diagnostics.len() == DIAGNOSTICS_KEPT {
            self.diagnostics.pop_front();
        }
        self.diagnostics.push_back(text.clone());
        let _ = self.incoming.try_send(Incoming::Diagnostic(text));
    }

    /// Delivers what the session has to say to whoever waits for it.
    fn dispatch(&mut self) {
        while let Some(event) = self.session.poll_event() {
            match event {
                ClientEvent::Ready(info) => {
                    if let Some(ready) = self.ready.take() {
                        let _ = ready.send(Ok(info));
                    }
                }
                ClientEvent::Response { id, outcome, .. } => {
                    self.progress.remove(&id);
                    if let Some(waiter) = self.waiters.remove(&id) {
                        let _ = waiter.send(outcome);
                    }
                }
                ClientEvent::Progress { id, params } => {
                    if let Some(tx) = self.progress.get(&id) {
                        let _ = tx.send(params);
                    }
                }
                ClientEvent::Request { id, request } => {
                    if let Err(e) = self.incoming.try_send(Incoming::Request {
                        id: id.clone(),
                        request,
                    }) {
                        let why = match e {
                            mpsc::error::TrySendError::Full(_) => "the host is busy",
                            mpsc::error::TrySendError::Closed(_) => {
                                "the host does not handle server requests"
                            }
                        };
                        let error =
                            ErrorObject::new(mcp_protocol::code::INTERNAL_ERROR, why.to_owned());
                        let _ = self.session.respond_error(&id, error);
                    }
                }
                ClientEvent::RequestCancelled { id, .. } => {
                    let _ = self.incoming.try_send(Incoming::Cancelled { id });
                }
                ClientEvent::Notification(n) => {
                    if self.incoming.try_send(Incoming::Notification(n)).is_err() {
                        self.dropped_notifications += 1;
                    }
                }
                ClientEvent::Diagnostic(d) => self.diagnostic(d),
                ClientEvent::Closed(error) => {
                    if let Some(ready) = self.ready.take() {
                        let _ = ready.send(Err(error));
                    }
                }
                // Events added to the session later are not lost silently.
                other => self.diagnostic(format!("unhandled session event: {other:?}")),
            }
        }
    }
}

/// What the handles share with the driver tasks.
struct Shared {
    name: String,
    state: Mutex<State>,
    /// Encoded frames not yet written, in order. Locked after `state`, never before it.
    out: Mutex<Outgoing>,
    wake_writer: Notify,
    wake_reader: Notify,
    stderr: Option<Arc<StderrLog>>,
    max_line: usize,
    /// How the server process ended, once it has.
    exited: watch::Receiver<Option<String>>,
    /// Asks the supervisor to shut the process down.
    shutdown: Notify,
}

/// The write side. With a pipe, any task writes at once when nothing is queued ahead of it
/// (a non-blocking write: no task hop, and nothing half-written if its future is dropped);
/// whatever does not fit waits for the writer task. With any other stream, only the writer
/// task writes.
struct Outgoing {
    pending: Vec<u8>,
    pipe: Option<Arc<tokio::net::unix::pipe::Sender>>,
    /// Set when the writer could not write: the reader has gone.
    broken: bool,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn out(&self) -> MutexGuard<'_, Outgoing> {
        self.out.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Sends what the session has queued: written at once when it can be, else handed to the
    /// writer task. Called with the state locked, so that frames keep their order.
    fn flush(&self, state: &mut State) {
        let mut out = self.out();
        let was_empty = out.pending.is_empty();
        while let Some(message) = state.session.poll_transmit() {
            encode_line(&message, &mut out.pending);
        }
        if out.pending.is_empty() || out.broken {
            return;
        }
        if was_empty && let Some(pipe) = out.pipe.clone() {
            match pipe.try_write(&out.pending) {
                Ok(n) => {
                    out.pending.drain(..n);
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(_) => out.broken = true,
            }
        }
        if !out.pending.is_empty() {
            self.wake_writer.notify_one();
        }
    }

    /// Wakes the reader if the session's next deadline is earlier than the armed one.
    fn rearm(&self, state: &mut State) {
        let next = state.session.poll_timeout();
        if next.is_some() && (state.armed.is_none() || next < state.armed) {
            self.wake_reader.notify_one();
        }
    }

    fn protocol(&self, source: mcp_protocol::Error) -> Error {
        Error::Protocol {
            server: self.name.clone(),
            source: Box::new(source),
        }
    }

    /// Why the connection ended, with the server's last words on stderr.
    fn end_reason(&self, what: &str) -> String {
        let mut reason = what.to_owned();
        if let Some(status) = self.exited.borrow().as_ref() {
            reason = format!("{what} (server exited: {status})");
        }
        if let Some(stderr) = &self.stderr {
            let tail = stderr.tail(5);
            if !tail.is_empty() {
                reason = format!("{reason}; stderr: {}", truncate(&tail, 600));
            }
        }
        reason
    }
}

fn truncate(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// Kills the server group when the last handle goes away without [`Client::close`].
struct ProcessGuard {
    pgid: Option<i32>,
}

impl Drop for ProcessGuard {
    fn drop(&mut self) {
        if let Some(pgid) = self.pgid {
            child::kill_group_now(pgid);
        }
    }
}

/// A connection to one MCP server: cheap to clone, usable from many tasks at once.
///
/// Dropping every handle without [`close`](Self::close) kills the server's process group at
/// once (SIGKILL); `close` ends it politely.
///
/// # Cancel safety
///
/// Dropping a request future before it completes cancels the request: the server is sent
/// `notifications/cancelled` and a late answer is dropped.
#[derive(Clone)]
pub struct Client {
    shared: Arc<Shared>,
    info: Arc<ServerInfo>,
    _guard: Arc<ProcessGuard>,
    incoming: Arc<Mutex<Option<mpsc::Receiver<Incoming>>>>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("server", &self.shared.name)
            .field("protocol_version", &self.info.protocol_version)
            .finish_non_exhaustive()
    }
}

impl Client {
    /// Starts the server described by `config`, and initializes a session with it.
    ///
    /// Fails if the server cannot start, or does not complete the handshake within the
    /// session's request timeout; the process is then ended before this returns.
    pub async fn spawn(config: StdioConfig, session: ClientConfig) -> Result<Self> {
        let spawned = child::spawn(&config)?;
        let (exit_tx, exit_rx) = watch::channel(None);
        let (shared, incoming) = Self::shared(
            &config.name,
            session,
            Some(spawned.stderr),
            config.max_line_bytes,
            exit_rx,
        );
        let pgid = spawned.pgid;
        tokio::spawn(supervise(
            spawned.child,
            pgid,
            Arc::clone(&shared),
            exit_tx,
            config.close_timeout,
            config.term_timeout,
        ));
        let guard = Arc::new(ProcessGuard { pgid: Some(pgid) });
        let pipe = spawned
            .stdin
            .into_owned_fd()
            .and_then(tokio::net::unix::pipe::Sender::from_owned_fd)
            .map_err(|source| Error::Io {
                server: config.name.clone(),
                context: "preparing the server's stdin",
                source,
            })?;
        Self::start(
            (shared, incoming),
            spawned.stdout,
            Writer::Pipe(pipe),
            guard,
        )
        .await
    }

    /// Runs a session over any byte streams: an in-process server, a socket, a test pipe.
    pub async fn connect<R, W>(
        name: &str,
        reader: R,
        writer: W,
        session: ClientConfig,
        max_line_bytes: usize,
    ) -> Result<Self>
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let (exit_tx, exit_rx) = watch::channel(None);
        let (shared, incoming) = Self::shared(name, session, None, max_line_bytes, exit_rx);
        // Without a process there is nothing to supervise; closing closes the writer.
        let closer = Arc::clone(&shared);
        tokio::spawn(async move {
            closer.shutdown.notified().await;
            let _ = exit_tx.send(Some("closed".to_owned()));
        });
        let writer = Writer::Stream(Box::new(writer));
        Self::start(
            (shared, incoming),
            reader,
            writer,
            Arc::new(ProcessGuard { pgid: None }),
        )
        .await
    }

    fn shared(
        name: &str,
        session: ClientConfig,
        stderr: Option<Arc<StderrLog>>,
        max_line: usize,
        exited: watch::Receiver<Option<String>>,
    ) -> (Arc<Shared>, mpsc::Receiver<Incoming>) {
        let (incoming_tx, incoming_rx) = mpsc::channel(INCOMING_CAPACITY);
        let shared = Arc::new(Shared {
            name: name.to_owned(),
            state: Mutex::new(State {
                session: ClientSession::new(session),
                waiters: HashMap::new(),
                progress: HashMap::new(),
                ready: None,
                incoming: incoming_tx,
                diagnostics: VecDeque::new(),
                dropped_notifications: 0,
                closing: false,
                armed: None,
            }),
            out: Mutex::new(Outgoing {
                pending: Vec::new(),
                pipe: None,
                broken: false,
            }),
            wake_writer: Notify::new(),
            wake_reader: Notify::new(),
            stderr,
            max_line,
            exited,
            shutdown: Notify::new(),
        });
        (shared, incoming_rx)
    }

    async fn start<R: AsyncRead + Unpin + Send + 'static>(
        (shared, incoming): (Arc<Shared>, mpsc::Receiver<Incoming>),
        reader: R,
        writer: Writer,
        guard: Arc<ProcessGuard>,
    ) -> Result<Self> {
        let (ready_tx, ready_rx) = oneshot::channel();
        {
            let mut state = shared.lock();
            state.ready = Some(ready_tx);
            state
                .session
                .initialize(now())
                .map_err(|e| shared.protocol(e))?;
        }
        tokio::spawn(read_loop(reader, Arc::clone(&shared)));
        match writer {
            Writer::Pipe(pipe) => {
                shared.out().pipe = Some(Arc::new(pipe));
                tokio::spawn(pipe_write_loop(Arc::clone(&shared)));
            }
            Writer::Stream(stream) => {
                tokio::spawn(stream_write_loop(stream, Arc::clone(&shared)));
            }
        }
        {
            let mut state = shared.lock();
            shared.flush(&mut state);
        }
        let outcome = ready_rx.await.unwrap_or_else(|_| {
            Err(mcp_protocol::Error::Closed(
                "the connection ended".to_owned(),
            ))
        });
        let client = |info| Self {
            shared: Arc::clone(&shared),
            info: Arc::new(info),
            _guard: Arc::clone(&guard),
            incoming: Arc::new(Mutex::new(Some(incoming))),
        };
        match outcome {
            Ok(info) => Ok(client(info)),
            Err(error) => {
                let error = shared.protocol(with_reason(error, &shared));
                close_shared(&shared).await;
                Err(error)
            }
        }
    }

    /// The server's name, as configured.
    pub fn name(&self) -> &str {
        &self.shared.name
    }

    /// What the server said in the handshake: version, capabilities, identity, instructions.
    pub fn server_info(&self) -> &ServerInfo {
        &self.info
    }

    /// The receiver of notifications, server requests and diagnostics. It can be taken once;
    /// until it is, notifications are dropped (and counted) and server requests refused.
    pub fn take_incoming(&self) -> Option<mpsc::Receiver<Incoming>> {
        self.incoming
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
    }

    /// What the server wrote on stderr most recently, with configured secrets redacted.
    pub fn stderr(&self) -> String {
        self.shared
            .stderr
            .as_ref()
            .map(|s| s.text())
            .unwrap_or_default()
    }

    /// The most recent diagnostics: lines that were not JSON-RPC, oversized lines, answers to
    /// nothing.
    pub fn diagnostics(&self) -> Vec<String> {
        self.shared.lock().diagnostics.iter().cloned().collect()
    }

    /// How many notifications were dropped because the host did not take them in time.
    pub fn dropped_notifications(&self) -> u64 {
        self.shared.lock().dropped_notifications
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
            self.shared
                .protocol(mcp_protocol::Error::ApiMisuse(e.to_string()))
        })?;
        if progress.is_some() {
            options = options.with_progress();
        }
        let raw = self
            .request_raw(M::METHOD, Some(params), options, progress)
            .await?;
        decode_result::<M>(&raw).map_err(|e| self.shared.protocol(e))
    }

    /// Sends a request by name with raw parameters, and returns the raw result: for a proxy.
    pub async fn request_raw(
        &self,
        method: &str,
        params: Option<RawJson>,
        options: RequestOptions,
        progress: Option<mpsc::UnboundedSender<ProgressParams>>,
    ) -> Result<RawJson> {
        let (tx, rx) = oneshot::channel();
        let id = {
            let mut state = self.shared.lock();
            let id = state
                .session
                .send_request(now(), method, params, options)
                .map_err(|e| self.shared.protocol(with_reason(e, &self.shared)))?;
            state.waiters.insert(id.clone(), tx);
            if let Some(p) = progress {
                state.progress.insert(id.clone(), p);
            }
            self.shared.flush(&mut state);
            self.shared.rearm(&mut state);
            id
        };
        let mut guard = CancelOnDrop {
            shared: &self.shared,
            id: Some(id),
        };
        let outcome = rx.await;
        guard.id = None;
        match outcome {
            Ok(Ok(raw)) => Ok(raw),
            Ok(Err(e)) => Err(self.shared.protocol(e)),
            Err(_) => Err(self.shared.protocol(mcp_protocol::Error::Closed(
                self.shared.end_reason("the connection ended"),
            ))),
        }
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

    /// Every resource, following `nextCursor` to the end.
    pub async fn list_all_resources(&self) -> Result<Vec<Resource>> {
        self.paginate::<method::ListResources, _>(|r| (r.resources, r.next_cursor))
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

    /// Every prompt, following `nextCursor` to the end.
    pub async fn list_all_prompts(&self) -> Result<Vec<Prompt>> {
        self.paginate::<method::ListPrompts, _>(|r| (r.prompts, r.next_cursor))
            .await
    }

    /// Gets a prompt filled in with `params.arguments`.
    pub async fn get_prompt(&self, params: GetPromptParams) -> Result<GetPromptResult> {
        self.request::<method::GetPrompt>(&params, RequestOptions::DEFAULT)
            .await
    }

    /// One page of `resources/list`.
    pub async fn list_resources(&self, cursor: Option<String>) -> Result<ListResourcesResult> {
        self.request::<method::ListResources>(&page(cursor), RequestOptions::DEFAULT)
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

    /// One page of `prompts/list`.
    pub async fn list_prompts(&self, cursor: Option<String>) -> Result<ListPromptsResult> {
        self.request::<method::ListPrompts>(&page(cursor), RequestOptions::DEFAULT)
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
        let mut seen = std::collections::HashSet::new();
        for _ in 0..MAX_PAGES {
            let (items, next) = split(
                self.request::<M>(&page(cursor), RequestOptions::DEFAULT)
                    .await?,
            );
            all.extend(items);
            match next {
                None => return Ok(all),
                Some(next) if !seen.insert(next.clone()) => {
                    return Err(self.shared.protocol(mcp_protocol::Error::Protocol(format!(
                        "{} repeated the cursor {next:?}; stopped after {} items",
                        M::METHOD,
                        all.len()
                    ))));
                }
                Some(next) => cursor = Some(next),
            }
        }
        Err(self.shared.protocol(mcp_protocol::Error::Protocol(format!(
            "{} did not end after {MAX_PAGES} pages",
            M::METHOD
        ))))
    }

    /// Answers a server request delivered as [`Incoming::Request`]. Returns `false` if the
    /// server withdrew it meanwhile.
    pub fn respond(&self, id: &RequestId, outcome: Result<RawJson, ErrorObject>) -> Result<bool> {
        let mut state = self.shared.lock();
        let sent = match outcome {
            Ok(result) => state.session.respond(id, result),
            Err(error) => state.session.respond_error(id, error),
        }
        .map_err(|e| self.shared.protocol(e))?;
        self.shared.flush(&mut state);
        Ok(sent)
    }

    /// Ends the session and the server: close stdin, wait, SIGTERM, wait, SIGKILL, reap,
    /// for the whole process group. Requests in flight fail. Returns how the server exited.
    pub async fn close(&self) -> String {
        close_shared(&self.shared).await
    }
}

fn page(cursor: Option<String>) -> PaginatedParams {
    let mut p = PaginatedParams::new();
    p.cursor = cursor;
    p
}

fn with_reason(error: mcp_protocol::Error, shared: &Shared) -> mcp_protocol::Error {
    match error {
        mcp_protocol::Error::Closed(reason) => {
            mcp_protocol::Error::Closed(shared.end_reason(&reason))
        }
        other => other,
    }
}

async fn close_shared(shared: &Arc<Shared>) -> String {
    {
        let mut state = shared.lock();
        state.closing = true;
        state.session.close("closed by the host");
        state.dispatch();
    }
    shared.wake_writer.notify_one();
    shared.wake_reader.notify_one();
    shared.shutdown.notify_one();
    let mut exited = shared.exited.clone();
    let status = exited
        .wait_for(Option::is_some)
        .await
        .ok()
        .and_then(|s| s.clone());
    status.unwrap_or_else(|| "unknown".to_owned())
}

/// Cancels a request whose future was dropped before its answer came.
struct CancelOnDrop<'a> {
    shared: &'a Shared,
    id: Option<RequestId>,
}

impl Drop for CancelOnDrop<'_> {
    fn drop(&mut self) {
        if let Some(id) = self.id.take() {
            let mut state = self.shared.lock();
            state.waiters.remove(&id);
            state.progress.remove(&id);
            let _ = state
                .session
                .cancel(&id, Some("the host dropped the request"));
            // The session reports the cancellation as an event; nobody waits for it now.
            state.dispatch();
            self.shared.flush(&mut state);
        }
    }
}

/// Reads stdout lines and fires timers until the stream ends.
async fn read_loop<R: AsyncRead + Unpin>(mut reader: R, shared: Arc<Shared>) {
    let mut decoder = LineDecoder::new(shared.max_line);
    let mut chunk = vec![0u8; 64 << 10];
    let end = loop {
        let deadline = {
            let mut state = shared.lock();
            let deadline = state.session.poll_timeout();
            state.armed = deadline;
            deadline
        };
        let timer = clock::sleep_until(deadline);
        tokio::select! {
            read = reader.read(&mut chunk) => match read {
                Ok(0) => break "the server closed its stdout".to_owned(),
                Ok(n) => {
                    decoder.push(&chunk[..n]);
                    let mut state = shared.lock();
                    while let Some(line) = decoder.next_line() {
                        handle_line(&mut state, line, shared.max_line);
                    }
                    state.dispatch();
                    shared.flush(&mut state);
                }
                Err(e) => break format!("reading the server's stdout failed: {e}"),
            },
            () = timer => {
                let mut state = shared.lock();
                state.session.handle_timeout(now());
                state.dispatch();
                shared.flush(&mut state);
            }
            () = shared.wake_reader.notified() => {
                if shared.lock().session.is_closed() {
                    return;
                }
            }
        }
    };
    // Give the supervisor a moment to learn the exit status, for a better message.
    let mut exited = shared.exited.clone();
    let _ = tokio::time::timeout(
        std::time::Duration::from_millis(200),
        exited.wait_for(Option::is_some),
    )
    .await;
    let reason = shared.end_reason(&end);
    let mut state = shared.lock();
    state.session.close(&reason);
    state.dispatch();
}

fn handle_line(state: &mut State, line: Line, max: usize) {
    let t = now();
    match line {
        Line::Frame(bytes) => match decode(&bytes) {
            Ok(decoded) => state.session.handle_decoded(t, decoded),
            Err(error) => state.session.handle_invalid(t, error),
        },
        Line::Oversize { head, len } => {
            state.diagnostic(format!(
                "discarded a stdout line of {len} bytes, over the limit of {max} bytes"
            ));
            if let Some(id) = sniff_id(&head) {
                state.session.fail(
                    &id,
                    &format!("the response was {len} bytes, over the limit of {max} bytes"),
                );
            }
        }
    }
}

/// How frames reach the server.
enum Writer {
    /// A child's stdin: written without blocking, from any task.
    Pipe(tokio::net::unix::pipe::Sender),
    /// Any other stream: written by the writer task alone.
    Stream(Box<dyn AsyncWrite + Unpin + Send>),
}

/// Writes what callers could not write at once, and closes the pipe when the host closes.
async fn pipe_write_loop(shared: Arc<Shared>) {
    loop {
        let (pipe, has_pending, closing) = {
            let mut state = shared.lock();
            let closing = state.closing;
            let mut out = shared.out();
            while let Some(message) = state.session.poll_transmit() {
                encode_line(&message, &mut out.pending);
            }
            (
                out.pipe.clone(),
                !out.pending.is_empty() && !out.broken,
                closing,
            )
        };
        let Some(pipe) = pipe else { return };
        if has_pending {
            if pipe.writable().await.is_err() {
                shared.out().broken = true;
                continue;
            }
            let mut out = shared.out();
            match pipe.try_write(&out.pending) {
                Ok(n) => {
                    out.pending.drain(..n);
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                // The server is gone; the reader sees the end of stdout and reports it.
                Err(_) => out.broken = true,
            }
            continue;
        }
        if closing {
            // Closing the server's stdin is the first step of a polite shutdown. Callers only
            // borrow the pipe under the lock, so this is the last handle.
            shared.out().pipe = None;
            return;
        }
        shared.wake_writer.notified().await;
    }
}

/// Sends whatever is queued, all of it in one write, until the host closes.
async fn stream_write_loop(mut writer: Box<dyn AsyncWrite + Unpin + Send>, shared: Arc<Shared>) {
    loop {
        let (buf, closing) = {
            let mut state = shared.lock();
            let closing = state.closing;
            let mut out = shared.out();
            while let Some(message) = state.session.poll_transmit() {
                encode_line(&message, &mut out.pending);
            }
            (std::mem::take(&mut out.pending), closing)
        };
        if !buf.is_empty() {
            if writer.write_all(&buf).await.is_err() || writer.flush().await.is_err() {
                break;
            }
            continue;
        }
        if closing {
            break;
        }
        shared.wake_writer.notified().await;
    }
    let _ = writer.shutdown().await;
}

/// Owns the process: reports its exit, and on the host's word shuts it down with its group.
async fn supervise(
    mut child: tokio::process::Child,
    pgid: i32,
    shared: Arc<Shared>,
    exited: watch::Sender<Option<String>>,
    close_timeout: std::time::Duration,
    term_timeout: std::time::Duration,
) {
    let status = tokio::select! {
        status = child.wait() => {
            // It ended on its own (a crash, or it closed by itself). Say so at once, for the
            // error message, then end whatever it left behind in its group.
            let status = child::describe(status);
            let _ = exited.send(Some(status.clone()));
            child::sweep_group(pgid, term_timeout).await;
            status
        }
        () = shared.shutdown.notified() => {
            // The writer closes stdin once it has flushed; then the polite sequence.
            child::shutdown(&mut child, pgid, close_timeout, term_timeout).await
        }
    };
    exited.send_if_modified(|current| {
        let changed = current.is_none();
        current.get_or_insert(status);
        changed
    });
    shared.wake_reader.notify_one();
}
