//! The server half: MCP on stdin and stdout (logs belong on stderr), for the gateway and for
//! any program that wants to be an MCP server. Each request runs in its own task, so a slow
//! tool never holds the others; a cancelled request's task is aborted.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use mcp_protocol::schema::{ClientRequest, ProgressParams, ProgressToken, RequestMethod};
use mcp_protocol::{
    ErrorObject, RawJson, RequestId, RequestOptions, ServerConfig, ServerEvent, ServerSession,
    decode, decode_result,
};
use tokio::io::{AsyncRead, AsyncReadExt as _, AsyncWrite, AsyncWriteExt as _};
use tokio::sync::{Notify, oneshot};
use tokio::task::AbortHandle;

use crate::clock::{self, now};
use crate::codec::{Line, LineDecoder, encode_line};

/// Answers the requests of one client. Implemented by the gateway and by test servers.
pub trait Handler: Send + Sync + 'static {
    /// Handles one request. The result is sent as the answer; an `Err` is sent as a
    /// JSON-RPC error. If the client cancels, the future is dropped.
    fn handle(
        &self,
        request: ClientRequest,
        context: RequestContext,
    ) -> impl Future<Output = Result<RawJson, ErrorObject>> + Send;
}

/// What a handler knows about the request it handles, and its way back to the client.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct RequestContext {
    /// The request's id.
    pub id: RequestId,
    /// The client's progress token, if it asked for progress.
    pub progress_token: Option<ProgressToken>,
    /// The client, for progress, notifications and requests.
    pub peer: Peer,
}

impl RequestContext {
    /// Reports progress, if the client asked for it; otherwise does nothing.
    pub fn progress(&self, progress: u64, total: Option<u64>, message: Option<&str>) {
        let Some(token) = &self.progress_token else {
            return;
        };
        let mut params = ProgressParams::new(token.clone(), progress.into());
        params.total = total.map(Into::into);
        params.message = message.map(str::to_owned);
        if let Ok(raw) = RawJson::encode(&params) {
            let _ = self.peer.notify("notifications/progress", Some(raw));
        }
    }
}

struct State {
    session: ServerSession,
    tasks: HashMap<RequestId, AbortHandle>,
    waiters: HashMap<RequestId, oneshot::Sender<Result<RawJson, mcp_protocol::Error>>>,
}

struct Shared {
    state: Mutex<State>,
    wake_writer: Notify,
    wake_reader: Notify,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The client as seen from a server: send it notifications and requests.
#[derive(Clone)]
pub struct Peer {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Peer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Peer").finish_non_exhaustive()
    }
}

impl Peer {
    /// Sends a notification; refused before the handshake ends (except log entries) and for
    /// capabilities this server did not declare.
    pub fn notify(&self, method: &str, params: Option<RawJson>) -> mcp_protocol::Result<()> {
        self.shared.lock().session.notify(method, params)?;
        self.shared.wake_writer.notify_one();
        Ok(())
    }

    /// Sends a request to the client (sampling, elicitation, roots, ping) and waits for its
    /// typed answer.
    pub async fn request<M: RequestMethod>(
        &self,
        params: &M::Params,
        options: RequestOptions,
    ) -> mcp_protocol::Result<M::Result> {
        let params =
            RawJson::encode(params).map_err(|e| mcp_protocol::Error::ApiMisuse(e.to_string()))?;
        let (tx, rx) = oneshot::channel();
        {
            let mut state = self.shared.lock();
            let id = state
                .session
                .send_request(now(), M::METHOD, Some(params), options)?;
            state.waiters.insert(id, tx);
        }
        self.shared.wake_writer.notify_one();
        self.shared.wake_reader.notify_one();
        let raw = rx
            .await
            .map_err(|_| mcp_protocol::Error::Closed("the client went away".to_owned()))??;
        decode_result::<M>(&raw)
    }
}

/// Serves one client on this process's stdin and stdout until stdin ends.
pub async fn serve_stdio<H: Handler>(config: ServerConfig, handler: H) -> std::io::Result<()> {
    serve(
        config,
        tokio::io::stdin(),
        tokio::io::stdout(),
        handler,
        8 << 20,
    )
    .await
}

/// Serves one client over any byte streams until the reader ends. Lines over `max_line_bytes`
/// are discarded.
pub async fn serve<R, W, H>(
    config: ServerConfig,
    mut reader: R,
    writer: W,
    handler: H,
    max_line_bytes: usize,
) -> std::io::Result<()>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin + Send + 'static,
    H: Handler,
{
    let shared = Arc::new(Shared {
        state: Mutex::new(State {
            session: ServerSession::new(config),
            tasks: HashMap::new(),
            waiters: HashMap::new(),
        }),
        wake_writer: Notify::new(),
        wake_reader: Notify::new(),
    });
    let handler = Arc::new(handler);
    let writer_task = tokio::spawn(write_loop(writer, Arc::clone(&shared)));
    let mut decoder = LineDecoder::new(max_line_bytes);
    let mut chunk = vec![0u8; 64 << 10];
    let result = loop {
        let deadline = shared.lock().session.poll_timeout();
        let timer = clock::sleep_until(deadline);
        tokio::select! {
            read = reader.read(&mut chunk) => match read {
                Ok(0) => break Ok(()),
                Ok(n) => {
                    decoder.push(&chunk[..n]);
                    let mut state = shared.lock();
                    while let Some(line) = decoder.next_line() {
                        let t = now();
                        match line {
                            Line::Frame(bytes) => match decode(&bytes) {
                                Ok(decoded) => state.session.handle_decoded(t, decoded),
                                Err(error) => state.session.handle_invalid(error),
                            },
                            // An answer is owed if it was a request, but its id is lost with
                            // the line; the client's own timeout ends that request.
                            Line::Oversize { .. } => {}
                        }
                    }
                    dispatch(&mut state, &shared, &handler);
                }
                Err(e) => break Err(e),
            },
            () = timer => {
                let mut state = shared.lock();
                state.session.handle_timeout(now());
                dispatch(&mut state, &shared, &handler);
            }
            () = shared.wake_reader.notified() => {}
        }
        shared.wake_writer.notify_one();
    };
    {
        let mut state = shared.lock();
        state.session.close("the client closed the connection");
        for (_, task) in state.tasks.drain() {
            task.abort();
        }
        dispatch(&mut state, &shared, &handler);
    }
    shared.wake_writer.notify_one();
    let _ = writer_task.await;
    result
}

fn dispatch<H: Handler>(state: &mut State, shared: &Arc<Shared>, handler: &Arc<H>) {
    while let Some(event) = state.session.poll_event() {
        match event {
            ServerEvent::Request { id, request } => {
                let progress_token = request.progress_token();
                let context = RequestContext {
                    id: id.clone(),
                    progress_token,
                    peer: Peer {
                        shared: Arc::clone(shared),
                    },
                };
                let handler = Arc::clone(handler);
                let shared = Arc::clone(shared);
                let task_id = id.clone();
                let task = tokio::spawn(async move {
                    let outcome = handler.handle(request, context).await;
                    let mut state = shared.lock();
                    state.tasks.remove(&task_id);
                    let _ = match outcome {
                        Ok(result) => state.session.respond(&task_id, result),
                        Err(error) => state.session.respond_error(&task_id, error),
                    };
                    drop(state);
                    shared.wake_writer.notify_one();
                });
                state.tasks.insert(id, task.abort_handle());
            }
            ServerEvent::Cancelled { id, .. } => {
                if let Some(task) = state.tasks.remove(&id) {
                    task.abort();
                }
            }
            ServerEvent::Response { id, outcome, .. } => {
                if let Some(waiter) = state.waiters.remove(&id) {
                    let _ = waiter.send(outcome);
                }
            }
            ServerEvent::Closed(_) => {
                state.waiters.clear();
            }
            // Initialized, progress on our requests, notifications and diagnostics need no
            // action from the transport; a handler that wants them can ask for a richer API.
            _ => {}
        }
    }
}

async fn write_loop<W: AsyncWrite + Unpin>(mut writer: W, shared: Arc<Shared>) {
    let mut buf = Vec::with_capacity(8192);
    loop {
        let closed = {
            let mut state = shared.lock();
            while let Some(message) = state.session.poll_transmit() {
                encode_line(&message, &mut buf);
            }
            state.session.is_closed()
        };
        if !buf.is_empty() {
            if writer.write_all(&buf).await.is_err() || writer.flush().await.is_err() {
                break;
            }
            buf.clear();
            continue;
        }
        if closed {
            break;
        }
        shared.wake_writer.notified().await;
    }
    let _ = writer.shutdown().await;
}
