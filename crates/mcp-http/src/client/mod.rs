//! The Streamable HTTP client (spec `basic/transports.mdx#streamable-http`, SPEC.md §4): a
//! transport for `mcp-session`. Every message is its own POST; a request's answer comes back as
//! JSON or as an SSE stream, which is resumed with a GET and `Last-Event-ID` if it drops before
//! the answer; the optional standalone GET stream carries what the server sends unprompted.
//! This file is long because one transport type drives every exchange (the POST, its JSON or SSE
//! answer, resumption, the standalone stream, the stateless era); the decisions (`answer`), the
//! eras, fetching, the legacy transport, the address policy and TLS are already modules of their
//! own.

mod answer;
mod auth;
mod conns;
mod eras;
mod fetch;
mod legacy;
mod policy;
mod tls;

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use bytes::Bytes;
use http::header::{ACCEPT, CONTENT_TYPE, HeaderName, HeaderValue};
use http::{HeaderMap, Method, Request, StatusCode, Uri};
use http_body_util::{BodyExt as _, Full, Limited};
use hyper::body::Incoming as Body;
use hyper_util::client::legacy::Client as Pool;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use mcp_protocol::schema::{CancelledParams, NotificationMethod, RequestMethod, method};
use mcp_protocol::{ClientConfig, ClientSession, Decoded, Era, Message, RequestId};
use mcp_session::{Client, Core, Pending, Sending, Transport};
use tokio::sync::{mpsc, oneshot, watch};

pub use auth::{AuthHook, Challenge, StaticAuth};
pub use eras::EraCache;
pub use fetch::{FetchError, FetchOptions, Fetcher};
pub use policy::{AddressClass, AddressPolicy, Refusal, may_reach, may_use_plain_http};

use self::answer::{ErrorBody, Next, PostError, Resume};
use crate::error::{Error, Result};
use crate::headers::{self, LAST_EVENT_ID, PROTOCOL_VERSION, SESSION_ID, ToolHeaders};
use crate::sse;

/// `DPoP-Nonce` (RFC 9449 §9), handed to the auth hook with a challenge.
const DPOP_NONCE: HeaderName = HeaderName::from_static("dpop-nonce");

const ACCEPT_BOTH: HeaderValue = HeaderValue::from_static("application/json, text/event-stream");
const ACCEPT_SSE: HeaderValue = HeaderValue::from_static("text/event-stream");
const JSON: HeaderValue = HeaderValue::from_static("application/json");

/// TCP keepalive on every client connection: the first probe after this much idleness...
const KEEPALIVE_IDLE: Duration = Duration::from_secs(15);
/// ...then one probe this often...
const KEEPALIVE_INTERVAL: Duration = Duration::from_secs(5);
/// ...and after this many unanswered probes the kernel fails the connection. So a stream
/// whose server vanished without a reset (a 2026-07-28 `subscriptions/listen` stream, which
/// has no ping; a standalone GET stream; a call's SSE answer) or a pooled idle connection to
/// it fails within about 30 s of silence instead of waiting for data that cannot come.
const KEEPALIVE_RETRIES: u32 = 3;

/// How long an idle pooled connection is kept for the next request. Below every server's own
/// idle limit that we know of (ours closes a kept-alive connection after 10 s, Node's HTTP
/// server after 5 s): a client that reuses a connection just as the server closes it gets a
/// reset on a POST it cannot safely send again (a soak of 560,000 calls lost 3 that way with
/// 90 s here), so the client lets go first.
const POOL_IDLE: Duration = Duration::from_secs(4);

/// How many idle connections the pool keeps per origin; one returned beyond that is closed.
/// A request that finds no idle connection opens a new one even if a busy one is about to come
/// back (hyper-util races the two and keeps the loser), so under many calls in flight the
/// spares pile up: at 256 in flight a client held more than 512 connections, our own server's
/// limit, and was refused. Capping the spares keeps it near the calls in flight plus this.
const POOL_MAX_IDLE: usize = 32;

/// How to reach one Streamable HTTP server.
#[derive(Clone)]
#[non_exhaustive]
pub struct HttpConfig {
    /// The server's name, used in every error and diagnostic.
    pub name: String,
    /// The MCP endpoint, such as `http://127.0.0.1:3001/mcp`.
    pub url: String,
    /// Headers sent on every request. Values may be secrets: they are never shown.
    pub headers: Vec<(String, String)>,
    /// Supplies `Authorization` and hears about 401 and 403.
    pub auth: Option<Arc<dyn AuthHook>>,
    /// How long to wait for a TCP connection.
    pub connect_timeout: Duration,
    /// How long a notification's or a response's POST may take (a request's own timeout is
    /// the session's).
    pub post_timeout: Duration,
    /// The largest JSON body or SSE event accepted.
    pub max_message_bytes: usize,
    /// Open the standalone GET stream after the handshake (a 405 answer means the server has
    /// none, which is fine).
    pub standalone_stream: bool,
    /// How long to wait before resuming a dropped stream when the server named no `retry`.
    pub default_retry: Duration,
    /// How many times in a row a dropped stream is resumed without any event arriving.
    pub max_resumptions: u32,
    /// PEM certificates trusted beside Mozilla's roots for `https` URLs (a private CA).
    pub extra_roots_pem: Vec<Vec<u8>>,
    /// Which HTTP transport the server speaks; by default, found out as the spec says.
    pub protocol: HttpProtocol,
    /// Where the era this server's origin spoke is remembered, so that a later connection
    /// skips the `server/discover` probe. Fresh by default (nothing remembered beyond this
    /// config and its clones); a consumer that connects to many servers shares one among them.
    pub eras: EraCache,
}

/// The two HTTP transports of MCP.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum HttpProtocol {
    /// Streamable HTTP, and if the initialize POST is refused with 400, 404 or 405, the
    /// deprecated HTTP+SSE transport (spec `basic/transports.mdx#backwards-compatibility`).
    #[default]
    Auto,
    /// Streamable HTTP only (2025-03-26 and later).
    Streamable,
    /// The deprecated HTTP+SSE transport of 2024-11-05 only: a GET stream whose `endpoint`
    /// event names where to POST.
    LegacySse,
}

impl HttpConfig {
    /// A server at `url`, with default limits: 10 s to connect, 30 s per notification POST,
    /// 8 MiB messages, the standalone stream on, 1 s default retry, 5 resumptions.
    pub fn new(name: impl Into<String>, url: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            url: url.into(),
            headers: Vec::new(),
            auth: None,
            connect_timeout: Duration::from_secs(10),
            post_timeout: Duration::from_secs(30),
            max_message_bytes: 8 << 20,
            standalone_stream: true,
            default_retry: Duration::from_secs(1),
            max_resumptions: 5,
            extra_roots_pem: Vec::new(),
            protocol: HttpProtocol::Auto,
            eras: EraCache::new(),
        }
    }
}

/// A configured URL as `Debug` shows it: no userinfo, no query (either may hold a key).
fn shown(url: &str) -> String {
    url.parse::<Uri>()
        .map_or_else(|_| "[not a URL]".to_owned(), |u| fetch::redacted(&u))
}

impl std::fmt::Debug for HttpConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let headers: Vec<String> = self
            .headers
            .iter()
            .map(|(k, _)| format!("{k}: [redacted]"))
            .collect();
        f.debug_struct("HttpConfig")
            .field("name", &self.name)
            .field("url", &shown(&self.url))
            .field("headers", &headers)
            .field("auth", &self.auth.is_some())
            .finish_non_exhaustive()
    }
}

/// Connects to the server described by `config` and starts a session with it, in the era the
/// server speaks: the session probes with `server/discover` and falls back to `initialize`
/// (see `mcp_protocol::ClientSession`). A server found to speak the handshake era is
/// remembered per origin in `config.eras`, so that later connections sharing that cache skip
/// the probe; it is probed again if it stops answering as one.
pub async fn connect(config: HttpConfig, mut session: ClientConfig) -> Result<Client> {
    let base = Base::new(&config)?;
    let origin = eras::origin(base.url());
    let eras = config.eras.clone();
    // Only a negotiated era says what the server speaks: a client pinned to one era learns
    // nothing, and must not teach the cache (a pin to 2025-11-25 against a server that speaks
    // both would make every later connection skip the probe).
    let negotiating = [Era::Handshake, Era::Stateless].iter().all(|era| {
        session
            .supported_versions
            .iter()
            .any(|v| v.era() == Some(*era))
    });
    if negotiating && session.cached_era.is_none() && eras.known(&origin) == Some(Era::Handshake) {
        session.cached_era = Some(Era::Handshake);
    }
    let connected = match config.protocol {
        HttpProtocol::Streamable => streamable(base, config, session).await.map_err(|(e, _)| e),
        HttpProtocol::LegacySse => legacy::connect(base, config, handshake_only(session)).await,
        HttpProtocol::Auto => match streamable(base.clone(), config.clone(), session.clone()).await
        {
            Ok(client) => Ok(client),
            // The spec's fallback: a server that refuses the initialize POST with 400, 404 or
            // 405 may speak the deprecated HTTP+SSE transport at the same URL.
            Err((error, Some(status))) => {
                let server = config.name.clone();
                legacy::connect(base, config, handshake_only(session))
                    .await
                    .map_err(|legacy| Error::Config {
                        server,
                        reason: format!(
                            "{error}; the initialize POST got HTTP {status}, and the HTTP+SSE fallback failed too: {legacy}"
                        ),
                    })
            }
            Err((error, None)) => Err(error),
        },
    };
    if let Ok(client) = &connected
        && negotiating
    {
        eras.learned(origin, client.server_info().era);
    }
    connected
}

/// The deprecated HTTP+SSE transport is 2024-11-05's: no stateless era to probe for.
fn handshake_only(mut session: ClientConfig) -> ClientConfig {
    session
        .supported_versions
        .retain(|v| v.era() == Some(Era::Handshake));
    session
}

/// The connection pool every HTTP client of this crate uses (the MCP transports and
/// [`Fetcher`]), so they share one TLS configuration and one connector: plain TCP or rustls
/// with Mozilla's roots plus `extra_roots_pem`, `TCP_NODELAY`, TCP keepalive, idle connections
/// kept [`POOL_IDLE`], at most [`POOL_MAX_IDLE`] of them; with a `policy`, only the addresses
/// it allows are connected to. Fails on a CA PEM that cannot be used.
pub(crate) fn pool(
    connect_timeout: Duration,
    extra_roots_pem: &[Vec<u8>],
    policy: Option<AddressPolicy>,
) -> Result<Pool<tls::Connector, Full<Bytes>>, String> {
    let connector = connector(connect_timeout, extra_roots_pem, policy)?;
    Ok(pooled(connector))
}

/// hyper-util's pool over `connector`, idle connections kept as [`pool`] says.
fn pooled(connector: tls::Connector) -> Pool<tls::Connector, Full<Bytes>> {
    Pool::builder(TokioExecutor::new())
        .pool_idle_timeout(POOL_IDLE)
        .pool_max_idle_per_host(POOL_MAX_IDLE)
        .build(connector)
}

/// The connector every client connection is made with (see [`pool`]).
fn connector(
    connect_timeout: Duration,
    extra_roots_pem: &[Vec<u8>],
    policy: Option<AddressPolicy>,
) -> Result<tls::Connector, String> {
    let mut connector = HttpConnector::new();
    connector.set_nodelay(true);
    connector.set_connect_timeout(Some(connect_timeout));
    connector.set_keepalive(Some(KEEPALIVE_IDLE));
    connector.set_keepalive_interval(Some(KEEPALIVE_INTERVAL));
    connector.set_keepalive_retries(Some(KEEPALIVE_RETRIES));
    let tls = tls::client_config(extra_roots_pem)?;
    Ok(tls::Connector::new(connector, tls, policy))
}

/// What every HTTP request of a connection shares: the endpoint, the static headers, the
/// authorization hook, and the connections: the POSTs of the Streamable HTTP transport go
/// over [`conns::Conns`], which hands a connection back before its caller goes on; the rest
/// (streams held open by GET, the DELETE, the deprecated transport) over hyper-util's pool,
/// where a connection taken for a long stream or a rare request costs nothing of that.
#[derive(Clone)]
pub(crate) struct Base {
    url: Uri,
    headers: HeaderMap,
    pool: Pool<tls::Connector, Full<Bytes>>,
    conns: conns::Conns,
    auth: Option<Arc<dyn AuthHook>>,
}

impl Base {
    fn new(config: &HttpConfig) -> Result<Self> {
        let invalid = |reason: String| Error::Config {
            server: config.name.clone(),
            reason,
        };
        let url: Uri = config
            .url
            .parse()
            .map_err(|e| invalid(format!("invalid URL: {e}")))?;
        if !matches!(url.scheme_str(), Some("http" | "https")) || url.host().is_none() {
            return Err(invalid(format!(
                "{:?} is not an http or https URL",
                fetch::redacted(&url)
            )));
        }
        let mut headers = HeaderMap::new();
        for (k, v) in &config.headers {
            let name = HeaderName::from_bytes(k.as_bytes())
                .map_err(|_| invalid(format!("invalid header name {k:?}")))?;
            // The value is not quoted: it may be a secret.
            let mut value = HeaderValue::from_str(v)
                .map_err(|_| invalid(format!("invalid value for header {k:?}")))?;
            value.set_sensitive(true);
            headers.append(name, value);
        }
        let connector =
            connector(config.connect_timeout, &config.extra_roots_pem, None).map_err(invalid)?;
        let conns = conns::Conns::new(connector.clone(), &url, POOL_IDLE, POOL_MAX_IDLE);
        Ok(Self {
            url,
            headers,
            pool: pooled(connector),
            conns,
            auth: config.auth.clone(),
        })
    }

    /// A request with the static headers and the current `Authorization`.
    pub(crate) fn request(
        &self,
        method: Method,
        uri: &Uri,
        accept: HeaderValue,
        body: Option<Bytes>,
    ) -> Request<Full<Bytes>> {
        let auth = self
            .auth
            .as_ref()
            .map(|a| a.headers_for(&method, uri))
            .unwrap_or_default();
        let mut req = Request::new(Full::new(body.clone().unwrap_or_default()));
        *req.method_mut() = method;
        *req.uri_mut() = uri.clone();
        let h = req.headers_mut();
        h.extend(self.headers.clone());
        h.insert(ACCEPT, accept);
        if body.is_some() {
            h.insert(CONTENT_TYPE, JSON);
        }
        for name in auth.keys() {
            h.remove(name);
        }
        for (name, value) in &auth {
            let mut value = value.clone();
            value.set_sensitive(true);
            h.append(name.clone(), value);
        }
        req
    }

    /// The endpoint.
    pub(crate) fn url(&self) -> &Uri {
        &self.url
    }

    /// The connection pool.
    pub(crate) fn pool(&self) -> &Pool<tls::Connector, Full<Bytes>> {
        &self.pool
    }

    /// The connections the transport's POSTs go over.
    fn conns(&self) -> &conns::Conns {
        &self.conns
    }
}

/// Streamable HTTP. On failure, also says whether the initialize POST was refused with a
/// status that suggests the deprecated transport.
async fn streamable(
    base: Base,
    config: HttpConfig,
    session: ClientConfig,
) -> Result<Client, (Error, Option<StatusCode>)> {
    let (queue_tx, queue_rx) = mpsc::unbounded_channel();
    let (closed_tx, closed) = watch::channel(false);
    let inner = Arc::new(Inner {
        base,
        config,
        ids: Mutex::new(Ids::default()),
        queue: queue_tx,
        closing: AtomicBool::new(false),
        closed_tx,
        closed,
        init_refused: Mutex::new(None),
        tool_headers: Mutex::default(),
        in_flight: Mutex::default(),
        queued: AtomicU64::new(0),
        sent: watch::Sender::new(0),
        handshake_done: AtomicBool::new(false),
    });
    let pending = Pending::new(
        &inner.config.name,
        session,
        HttpTransport(Arc::clone(&inner)),
    );
    tokio::spawn(send_loop(
        Arc::clone(&inner),
        Arc::clone(pending.core()),
        queue_rx,
    ));
    match pending.connect(Arc::new(())).await {
        Ok(client) => Ok(client),
        Err(e) => {
            let refused = *inner
                .init_refused
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            Err((Error::Client(e), refused))
        }
    }
}

/// The headers that identify the session: learned from the server, sent on every request.
#[derive(Default)]
struct Ids {
    session: Option<HeaderValue>,
    version: Option<HeaderValue>,
}

struct Inner {
    base: Base,
    config: HttpConfig,
    ids: Mutex<Ids>,
    queue: mpsc::UnboundedSender<Outgoing>,
    closing: AtomicBool,
    closed_tx: watch::Sender<bool>,
    /// Flips to `true` when the host closes: streams stop, nothing is resumed.
    closed: watch::Receiver<bool>,
    /// Set when the initialize POST got 400, 404 or 405: the deprecated transport may answer.
    init_refused: Mutex<Option<StatusCode>>,
    /// The stateless era's `Mcp-Param-*` headers, by tool, from the last `tools/list`.
    tool_headers: Mutex<HashMap<String, ToolHeaders>>,
    /// The stateless era's requests in flight: cancelling one drops its sender, which ends
    /// its exchange and so closes its stream.
    in_flight: Mutex<HashMap<RequestId, oneshot::Sender<()>>>,
    /// How many messages were handed to the send loop...
    queued: AtomicU64,
    /// ...and how many of them it has sent (or, for a request, started). A request its caller
    /// drives in the handshake era waits until those queued before it are sent, so that it
    /// never overtakes a notification or a response.
    sent: watch::Sender<u64>,
    /// Set by the send loop once the handshake is over (and the standalone stream opened):
    /// from then on a request's POST is driven by its caller.
    handshake_done: AtomicBool,
}

/// A message to POST, with the version it was stamped with in the stateless era (`None` in
/// the handshake era, whose own rules apply).
struct Outgoing {
    message: Message,
    stamped: Option<HeaderValue>,
}

impl Inner {
    fn ids(&self) -> MutexGuard<'_, Ids> {
        self.ids.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn in_flight(&self) -> MutexGuard<'_, HashMap<RequestId, oneshot::Sender<()>>> {
        self.in_flight
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn is_closing(&self) -> bool {
        self.closing.load(Ordering::SeqCst)
    }

    /// A stateless-era POST: no session, the stamped version, and the headers that mirror
    /// the body (`Mcp-Method`, `Mcp-Name`, `Mcp-Param-*`).
    fn stateless_request(
        &self,
        body: Bytes,
        version: &HeaderValue,
        mirrored: &[(HeaderName, HeaderValue)],
    ) -> Request<Full<Bytes>> {
        let mut req = self
            .base
            .request(Method::POST, self.base.url(), ACCEPT_BOTH, Some(body));
        let h = req.headers_mut();
        h.insert(PROTOCOL_VERSION, version.clone());
        for (name, value) in mirrored {
            h.insert(name.clone(), value.clone());
        }
        req
    }

    /// The headers that mirror a stateless-era request's body.
    fn mirrored(&self, message: &Message) -> Vec<(HeaderName, HeaderValue)> {
        let Message::Request(request) = message else {
            return Vec::new();
        };
        // Only the methods `Mcp-Name` mirrors need their params read.
        let params: Option<serde_json::Value> = headers::name_field(&request.method)
            .and_then(|_| request.params.as_ref()?.decode().ok());
        let mut out = headers::standard_headers(&request.method, params.as_ref());
        if request.method == <method::CallTool as RequestMethod>::METHOD
            && let Some(params) = &params
            && let Some(name) = params.get("name").and_then(|n| n.as_str())
        {
            let tools = self
                .tool_headers
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            if let Some(tool) = tools.get(name) {
                let arguments = params.get("arguments").cloned().unwrap_or_default();
                out.extend(tool.param_headers(&arguments));
            }
        }
        out
    }

    /// A `tools/list` answer in the stateless era: tools whose `x-mcp-header` annotations are
    /// invalid are dropped (the server could not check their headers), with a diagnostic each;
    /// the others' `Mcp-Param-*` headers are remembered.
    fn screen_tools(&self, core: &Arc<Core>, message: Message) -> Message {
        let Message::Response(mut response) = message else {
            return message;
        };
        let Ok(mut result) = response.result.decode::<serde_json::Value>() else {
            return Message::Response(response);
        };
        let Some(tools) = result.get_mut("tools") else {
            return Message::Response(response);
        };
        let dropped = headers::retain_valid_tools(tools);
        for tool in &dropped {
            core.diagnostic(tool.to_string());
        }
        let mut known = self
            .tool_headers
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        for tool in tools.as_array().into_iter().flatten() {
            let (Some(name), Some(schema)) = (
                tool.get("name").and_then(|n| n.as_str()),
                tool.get("inputSchema"),
            ) else {
                continue;
            };
            match ToolHeaders::from_schema(schema) {
                Ok(h) if !h.is_empty() => {
                    known.insert(name.to_owned(), h);
                }
                _ => {
                    known.remove(name);
                }
            }
        }
        drop(known);
        // Re-encoding goes through `Value`, which sorts keys and turns integers beyond 64 bits
        // into floats: only a list that lost a tool is rewritten, and the usual one reaches
        // the session as the server sent it.
        if !dropped.is_empty()
            && let Ok(raw) = mcp_protocol::RawJson::encode(&result)
        {
            response.result = raw;
        }
        Message::Response(response)
    }

    /// A request to the endpoint with every header the session needs.
    fn request(
        &self,
        method: Method,
        accept: HeaderValue,
        body: Option<Bytes>,
        last_event_id: Option<&str>,
    ) -> Request<Full<Bytes>> {
        let mut req = self.base.request(method, self.base.url(), accept, body);
        let h = req.headers_mut();
        {
            let ids = self.ids();
            if let Some(s) = &ids.session {
                h.insert(SESSION_ID, s.clone());
            }
            if let Some(v) = &ids.version {
                h.insert(PROTOCOL_VERSION, v.clone());
            }
        }
        if let Some(id) = last_event_id.and_then(|id| HeaderValue::from_str(id).ok()) {
            h.insert(LAST_EVENT_ID, id);
        }
        req
    }
}

/// The transport the `mcp-session` core drives.
struct HttpTransport(Arc<Inner>);

impl Transport for HttpTransport {
    /// The `MCP-Session-Id` learned on the initialize answer: a credential-like value, kept in
    /// a sensitive `HeaderValue` and handed out only here.
    fn session_id(&self) -> Option<String> {
        let ids = self.0.ids();
        ids.session
            .as_ref()
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    }

    /// A request's POST is handed back to be driven by its caller ([`Sending`]) in the
    /// stateless era, and in the handshake era once the server has answered `initialize`
    /// (the POST then waits for the handshake's end and for what was queued before it);
    /// everything else goes to the send loop, in order. So a caller's call returns only once
    /// its POST's connection can carry the next one ([`conns::Lease`]).
    fn transmit(&self, core: &Arc<Core>, session: &mut ClientSession, sending: &mut Vec<Sending>) {
        let inner = &self.0;
        let stamped = session
            .stamped_version()
            .and_then(|v| HeaderValue::from_str(v.as_str()).ok());
        while let Some(message) = session.poll_transmit() {
            // Once the handshake is done, every request carries the negotiated version.
            if message.method() == Some(<method::Initialized as NotificationMethod>::METHOD)
                && let Some(info) = session.server_info()
                && let Ok(v) = HeaderValue::from_str(info.protocol_version.as_str())
            {
                inner.ids().version = Some(v);
            }
            let message = match (message, &stamped) {
                (Message::Request(request), Some(version)) => {
                    let id = request.id.clone();
                    let exchange = stateless_post(inner, core, request, version.clone());
                    sending.push(Sending::new(id, exchange));
                    continue;
                }
                (Message::Request(request), None) if session.server_info().is_some() => {
                    if inner.is_closing() {
                        continue;
                    }
                    let id = request.id.clone();
                    sending.push(Sending::new(id, after_queued(inner, core, request)));
                    continue;
                }
                (message, _) => message,
            };
            inner.queued.fetch_add(1, Ordering::SeqCst);
            let _ = inner.queue.send(Outgoing {
                message,
                stamped: stamped.clone(),
            });
        }
    }

    fn close(&self) -> Pin<Box<dyn Future<Output = String> + Send + '_>> {
        let inner = Arc::clone(&self.0);
        Box::pin(async move {
            if inner.closing.swap(true, Ordering::SeqCst) {
                return "closed".to_owned();
            }
            let _ = inner.closed_tx.send(true);
            // A client that no longer needs its session says so; 405 means the server does
            // not let clients end sessions, which is fine.
            let has_session = inner.ids().session.is_some();
            if !has_session {
                return "closed".to_owned();
            }
            let req = inner.request(Method::DELETE, ACCEPT_BOTH, None, None);
            match tokio::time::timeout(inner.config.post_timeout, inner.base.pool().request(req))
                .await
            {
                Ok(Ok(resp)) => {
                    let status = resp.status();
                    let _ = resp.into_body().collect().await;
                    format!("session deleted (HTTP {})", status.as_u16())
                }
                Ok(Err(e)) => format!("closed; deleting the session failed: {}", chain(&e)),
                Err(_) => "closed; deleting the session timed out".to_owned(),
            }
        })
    }
}

/// Sends the queued messages in order. Until the handshake is over, and for notifications and
/// responses, each POST completes before the next starts, so the server sees them in order;
/// requests after the handshake run concurrently (and, once nothing is queued before them,
/// skip this loop: their callers drive their POSTs). In the stateless era every request is
/// its own POST from the start, driven by its caller, and a cancellation closes the
/// request's stream instead of being sent (streamable-http §Cancellation); nothing else goes
/// to the server.
async fn send_loop(
    inner: Arc<Inner>,
    core: Arc<Core>,
    mut queue: mpsc::UnboundedReceiver<Outgoing>,
) {
    while let Some(outgoing) = queue.recv().await {
        send_queued(&inner, &core, outgoing).await;
        inner.sent.send_modify(|sent| *sent += 1);
    }
}

/// Sends one message of the send loop's.
async fn send_queued(inner: &Arc<Inner>, core: &Arc<Core>, outgoing: Outgoing) {
    let Outgoing { message, stamped } = outgoing;
    if inner.is_closing() {
        return;
    }
    if let Some(version) = stamped {
        return stateless_send(inner, core, message, version);
    }
    let is_request = matches!(message, Message::Request(_));
    let finishes_handshake =
        message.method() == Some(<method::Initialized as NotificationMethod>::METHOD);
    if is_request && inner.handshake_done.load(Ordering::SeqCst) {
        tokio::spawn(post(Arc::clone(inner), Arc::clone(core), message, None));
    } else {
        post(Arc::clone(inner), Arc::clone(core), message, None).await;
    }
    if finishes_handshake {
        if inner.config.standalone_stream {
            // The stream is open before the first request goes out, so that the server
            // knows where to send what is not an answer; a server slow to answer the GET
            // delays the first request by at most a second.
            let (opened_tx, opened) = oneshot::channel();
            tokio::spawn(standalone_stream(
                Arc::clone(inner),
                Arc::clone(core),
                opened_tx,
            ));
            let _ = tokio::time::timeout(Duration::from_secs(1), opened).await;
        }
        inner.handshake_done.store(true, Ordering::SeqCst);
    }
}

/// A handshake-era request's exchange, for its caller to drive: it waits until the handshake
/// is over and the send loop has sent what was queued before it, then POSTs.
fn after_queued(
    inner: &Arc<Inner>,
    core: &Arc<Core>,
    request: mcp_protocol::Request,
) -> impl Future<Output = ()> + Send + 'static {
    let ticket = inner.queued.load(Ordering::SeqCst);
    let (inner, core) = (Arc::clone(inner), Arc::clone(core));
    async move {
        let mut sent = inner.sent.subscribe();
        let mut closed = inner.closed.clone();
        let turn = |sent: &u64| *sent >= ticket && inner.handshake_done.load(Ordering::SeqCst);
        tokio::select! {
            biased;
            r = sent.wait_for(turn) => if r.is_err() { return },
            _ = closed.wait_for(|c| *c) => return,
        }
        if inner.is_closing() {
            return;
        }
        post(inner, core, Message::Request(request), None).await;
    }
}

/// A stateless-era request's exchange, for its caller to drive (or a task, if none does): it
/// ends when the POST does, when it is dropped, or when the request is cancelled (its entry in
/// `in_flight` dropped), and in each case its stream is closed.
fn stateless_post(
    inner: &Arc<Inner>,
    core: &Arc<Core>,
    request: mcp_protocol::Request,
    version: HeaderValue,
) -> impl Future<Output = ()> + Send + 'static {
    let (cancel, cancelled) = oneshot::channel();
    let id = request.id.clone();
    inner.in_flight().insert(id.clone(), cancel);
    let (inner, core) = (Arc::clone(inner), Arc::clone(core));
    async move {
        let _entry = InFlight {
            inner: Arc::clone(&inner),
            id,
        };
        tokio::select! {
            () = post(inner, core, Message::Request(request), Some(version)) => {}
            _ = cancelled => {}
        }
    }
}

/// A stateless-era request's entry in `in_flight`, removed however its exchange ends.
struct InFlight {
    inner: Arc<Inner>,
    id: RequestId,
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.inner.in_flight().remove(&self.id);
    }
}

/// One stateless-era message of the send loop's: a cancellation closes its request's stream;
/// anything else stays here. (Requests do not come this way: their callers drive them.)
fn stateless_send(inner: &Arc<Inner>, core: &Arc<Core>, message: Message, version: HeaderValue) {
    match message {
        Message::Request(request) => {
            tokio::spawn(stateless_post(inner, core, request, version));
        }
        Message::Notification(n)
            if n.method == <method::Cancelled as NotificationMethod>::METHOD =>
        {
            let cancelled: Option<CancelledParams> =
                n.params.as_ref().and_then(|p| p.decode().ok());
            if let Some(id) = cancelled.and_then(|c| c.request_id) {
                // Dropping the sender ends the exchange.
                drop(inner.in_flight().remove(&id));
            }
        }
        other => core.diagnostic(format!(
            "{} is not sent: MCP 2026-07-28 defines no client notifications or responses over HTTP",
            describe(&other)
        )),
    }
}

/// What a POST was for, to say what failed.
fn describe(message: &Message) -> String {
    match message {
        Message::Request(r) => r.method.clone(),
        Message::Notification(n) => n.method.clone(),
        Message::Response(_) => "a response".to_owned(),
        Message::Error(_) => "an error response".to_owned(),
    }
}

/// POSTs one message and routes what comes back; `stamped` is the version of a stateless-era
/// request. What an answer means is [`answer::decide`]'s; this sends, reads and delivers.
async fn post(inner: Arc<Inner>, core: Arc<Core>, message: Message, stamped: Option<HeaderValue>) {
    let id = match &message {
        Message::Request(r) => Some(r.id.clone()),
        _ => None,
    };
    let what = describe(&message);
    let is_init = message.method() == Some(<method::Initialize as RequestMethod>::METHOD);
    // A stateless-era tools/list answer is screened for invalid header annotations.
    let screened =
        stamped.is_some() && message.method() == Some(<method::ListTools as RequestMethod>::METHOD);
    let mirrored = match &stamped {
        Some(_) => inner.mirrored(&message),
        None => Vec::new(),
    };
    let fail = |error: PostError| match &id {
        Some(id) => {
            core.fail_request(id, &error.to_string());
        }
        None => core.diagnostic(format!("{what}: {error}")),
    };
    let body = Bytes::from(message.encode());
    let mut retries = answer::Retries::default();
    loop {
        let req = match &stamped {
            Some(version) => inner.stateless_request(body.clone(), version, &mirrored),
            None => inner.request(Method::POST, ACCEPT_BOTH, Some(body.clone()), None),
        };
        let sent = inner.base.conns().send(req);
        // A request's answer may take as long as the session allows; the session times it out,
        // and closing the connection stops the wait.
        let resp = if id.is_some() {
            let mut closed = inner.closed.clone();
            tokio::select! {
                r = sent => r.map_err(|e| PostError::Send(chain(&e))),
                _ = closed.wait_for(|c| *c) => return,
            }
        } else {
            match tokio::time::timeout(inner.config.post_timeout, sent).await {
                Ok(r) => r.map_err(|e| PostError::Send(chain(&e))),
                Err(_) => Err(PostError::Timeout(inner.config.post_timeout)),
            }
        };
        let sent = answer::Sent {
            request: id.is_some(),
            initialize: is_init,
            stateless: stamped.is_some(),
            has_session: inner.ids().session.is_some(),
            has_auth: inner.config.auth.is_some(),
        };
        let (resp, lease) = match resp {
            Ok(answer) => answer,
            Err(e) => match retries.after_lost(sent) {
                Some(wait) => {
                    core.diagnostic(format!("{what}: {e}; sending it again in {wait:?}"));
                    tokio::time::sleep(wait).await;
                    continue;
                }
                None => return fail(e),
            },
        };
        let status = resp.status();
        let decision = answer::decide(sent, retries, status, resp.headers());
        if let Some(session) = decision.session {
            inner.ids().session = Some(session);
        }
        if decision.succeeded
            && let Some(hook) = &inner.config.auth
        {
            hook.succeeded();
        }
        match decision.next {
            Next::ReadSse => {
                let body = resp.into_body();
                return stream(inner, core, body, Some(lease), id, screened).await;
            }
            Next::ReadJson => {
                match read_body(resp.into_body(), inner.config.max_message_bytes).await {
                    Ok(bytes) if bytes.is_empty() => fail(PostError::EmptyBody),
                    Ok(bytes) if screened => match mcp_protocol::decode(&bytes) {
                        Ok(Decoded::Single(m)) => {
                            let m = inner.screen_tools(&core, m);
                            core.receive(Decoded::Single(m));
                        }
                        Ok(other) => core.receive(other),
                        Err(e) => core.receive_invalid(e),
                    },
                    Ok(bytes) => core.receive_frame(&bytes),
                    Err(e) => return fail(e),
                }
                // Read to its end: the connection is idle again before the caller goes on.
                return lease.release().await;
            }
            Next::Done => return drain(resp.into_body(), lease).await,
            Next::Later(wait) => {
                drain(resp.into_body(), lease).await;
                core.diagnostic(format!(
                    "{what}: HTTP {status}; sending it again in {wait:?}"
                ));
                retries.waited();
                tokio::time::sleep(wait).await;
            }
            Next::Fail(error) => {
                drain(resp.into_body(), lease).await;
                return fail(error);
            }
            Next::Challenge {
                challenge,
                retry,
                refused,
            } => {
                drain(resp.into_body(), lease).await;
                if let Some(hook) = &inner.config.auth
                    && hook.challenged(challenge).await
                {
                    retries.spend(retry);
                    continue;
                }
                return fail(refused);
            }
            Next::SessionEnded => {
                drain(resp.into_body(), lease).await;
                // Everything in flight fails, and the host starts anew.
                return core.end(&PostError::SessionEnded.to_string());
            }
            Next::Refused { fallback } => {
                if fallback {
                    *inner
                        .init_refused
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner) = Some(status);
                }
                let text = match read_body(resp.into_body(), 64 << 10).await {
                    Ok(text) => {
                        lease.release().await;
                        text
                    }
                    Err(_) => Bytes::new(),
                };
                return match answer::error_body(status, &text, id.as_ref()) {
                    ErrorBody::Answer(m) => core.receive(Decoded::Single(m)),
                    // No JSON-RPC answer: to the era probe that is a handshake-era server.
                    ErrorBody::Reject(error) => match &id {
                        Some(id) => {
                            core.reject_request(id, &error.to_string());
                        }
                        None => fail(error),
                    },
                };
            }
        }
    }
}

/// An error with its causes, `outer: inner: innermost`: hyper's own message ("client error
/// (Connect)") says little without them (a refused connection, an unknown certificate issuer).
fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let more = cause.to_string();
        if !text.contains(&more) {
            text = format!("{text}: {more}");
        }
        source = cause.source();
    }
    text
}

/// Reads an answer whose body says nothing to its end, then lets its connection be used again.
async fn drain(body: Body, lease: conns::Lease) {
    if body.collect().await.is_ok() {
        lease.release().await;
    }
}

async fn read_body(body: Body, limit: usize) -> Result<Bytes, PostError> {
    match Limited::new(body, limit).collect().await {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(e) => Err(PostError::Read {
            cause: e.to_string(),
            limit,
        }),
    }
}

/// Reads an SSE stream to its end, resuming it with GET and `Last-Event-ID` when it drops
/// before the answer to `request` came (or, for the standalone stream, whenever it drops).
/// `lease` is the connection of a POST's stream: it is used again if the stream ends with
/// the answer, as the spec says it should ([`conns::Lease::release_at_end`]).
async fn stream(
    inner: Arc<Inner>,
    core: Arc<Core>,
    mut body: Body,
    mut lease: Option<conns::Lease>,
    request: Option<RequestId>,
    screened: bool,
) {
    let max = inner.config.max_message_bytes;
    let mut decoder = sse::Decoder::new(max);
    let mut quiet_resumptions = 0;
    loop {
        let (answered, got_events, ended) = read_events(
            &inner,
            &core,
            &mut body,
            &mut decoder,
            request.as_ref(),
            screened,
        )
        .await;
        if answered || core.is_closed() || inner.is_closing() {
            if let Some(lease) = lease.take() {
                lease.release_at_end(body, answered).await;
            }
            return;
        }
        if let Some(lease) = lease.take() {
            // The stream ended, or broke, before the answer: it is resumed by GET.
            lease.release_at_end(body, false).await;
        }
        quiet_resumptions = if got_events { 0 } else { quiet_resumptions + 1 };
        let what = request
            .as_ref()
            .map_or("the standalone stream".to_owned(), |id| {
                format!("request {id}")
            });
        let Some(last) = decoder.last_event_id().map(str::to_owned) else {
            if let Some(id) = &request {
                core.fail_request(id, &format!("the SSE stream ended ({ended}) before the answer, and it gave no event id to resume from"));
            }
            return;
        };
        if quiet_resumptions > inner.config.max_resumptions {
            if let Some(id) = &request {
                core.fail_request(
                    id,
                    &format!(
                        "the SSE stream kept dropping ({ended}); gave up after {} resumptions",
                        inner.config.max_resumptions
                    ),
                );
            } else {
                core.diagnostic(format!(
                    "{what}: gave up resuming after {} attempts",
                    inner.config.max_resumptions
                ));
            }
            return;
        }
        // The server's `retry` is respected exactly; without one, our default.
        let wait = decoder
            .retry_ms()
            .map_or(inner.config.default_retry, Duration::from_millis);
        let mut closed = inner.closed.clone();
        tokio::select! {
            () = tokio::time::sleep(wait) => {}
            _ = closed.wait_for(|c| *c) => return,
        }
        if let Some(id) = &request
            && !core.is_awaiting(id)
        {
            // Cancelled or timed out meanwhile (a server ends the stream of a cancelled
            // request): nothing left to resume for.
            return;
        }
        let req = inner.request(Method::GET, ACCEPT_SSE, None, Some(&last));
        match inner.base.pool().request(req).await {
            Ok(resp) => {
                let status = resp.status();
                let has_session = inner.ids().session.is_some();
                match answer::resume(status, has_session) {
                    Resume::Read => {
                        body = resp.into_body();
                        decoder = sse::Decoder::resuming(max, Some(last), decoder.retry_ms());
                        continue;
                    }
                    Resume::SessionEnded => {
                        let _ = resp.into_body().collect().await;
                        return core.end(&PostError::SessionEnded.to_string());
                    }
                    Resume::Lost => {
                        let _ = resp.into_body().collect().await;
                    }
                }
                if let Some(id) = &request {
                    core.fail_request(
                        id,
                        &format!("resuming the SSE stream from {last:?} failed: HTTP {status}"),
                    );
                }
                return;
            }
            Err(e) => {
                if let Some(id) = &request {
                    core.fail_request(
                        id,
                        &format!("resuming the SSE stream failed: {}", chain(&e)),
                    );
                }
                return;
            }
        }
    }
}

/// Feeds the events of one HTTP response to the core. Returns whether the answer to
/// `request` came, whether any event came, and how the body ended.
async fn read_events(
    inner: &Inner,
    core: &Arc<Core>,
    body: &mut Body,
    decoder: &mut sse::Decoder,
    request: Option<&RequestId>,
    screened: bool,
) -> (bool, bool, String) {
    let mut answered = false;
    let mut got_events = false;
    let mut closed = inner.closed.clone();
    loop {
        let frame = tokio::select! {
            frame = body.frame() => frame,
            _ = closed.wait_for(|c| *c) => return (false, got_events, "closed".to_owned()),
        };
        let data = match frame {
            None => return (answered, got_events, "the server closed it".to_owned()),
            Some(Err(e)) => return (answered, got_events, format!("read error: {e}")),
            Some(Ok(frame)) => match frame.into_data() {
                Ok(data) => data,
                Err(_) => continue,
            },
        };
        decoder.push(&data);
        while let Some(event) = decoder.next_event() {
            got_events = true;
            let event = match event {
                Ok(event) => event,
                Err(e) => {
                    // An answer too large to deliver fails its request now rather than at
                    // its timeout, when its id is within reach.
                    if let sse::Error::TooLarge { head, .. } = &e
                        && let Some(id) = mcp_protocol::sniff_id(head)
                    {
                        core.fail_request(&id, &e.to_string());
                        if Some(&id) == request {
                            answered = true;
                        }
                    }
                    core.diagnostic(e.to_string());
                    continue;
                }
            };
            // A priming event carries only an id to resume from; other event types are not ours.
            if event.data.is_empty() || event.event != "message" {
                continue;
            }
            match mcp_protocol::decode(event.data.as_bytes()) {
                Ok(decoded) => {
                    if let (
                        Some(want),
                        Decoded::Single(m @ (Message::Response(_) | Message::Error(_))),
                    ) = (request, &decoded)
                        && m.id() == Some(want)
                    {
                        answered = true;
                    }
                    match decoded {
                        Decoded::Single(m @ Message::Response(_)) if screened && answered => {
                            let m = inner.screen_tools(core, m);
                            core.receive(Decoded::Single(m));
                        }
                        // What comes on a request's stream belongs to that request (SPEC.md
                        // §4.3): the session hands it over with the caller's tag of it.
                        other => match request {
                            Some(under) => core.receive_under(other, under),
                            None => core.receive(other),
                        },
                    }
                }
                Err(e) => core.receive_invalid(e),
            }
        }
        if answered {
            // The answer is in; what follows on this stream is drained by hyper when dropped.
            return (true, true, "answered".to_owned());
        }
    }
}

/// The optional GET stream for server-initiated messages. 405 means there is none.
async fn standalone_stream(inner: Arc<Inner>, core: Arc<Core>, opened: oneshot::Sender<()>) {
    let req = inner.request(Method::GET, ACCEPT_SSE, None, None);
    let answer = inner.base.pool().request(req).await;
    let _ = opened.send(());
    match answer {
        Ok(resp) if resp.status() == StatusCode::OK => {
            stream(inner, core, resp.into_body(), None, None, false).await
        }
        Ok(resp) => {
            let status = resp.status();
            let _ = resp.into_body().collect().await;
            if status != StatusCode::METHOD_NOT_ALLOWED {
                core.diagnostic(format!(
                    "the standalone GET stream was refused: HTTP {status}"
                ));
            }
        }
        Err(e) => core.diagnostic(format!("the standalone GET stream failed: {}", chain(&e))),
    }
}

#[cfg(test)]
mod pool_tests {
    use super::POOL_IDLE;

    #[test]
    fn idle_connections_are_let_go_before_a_server_closes_them() {
        #[cfg(feature = "server")]
        {
            let info = mcp_protocol::schema::Implementation::new("t".into(), "1".into());
            let config = mcp_protocol::ServerConfig::new(info);
            let ours = crate::server::HttpServerConfig::new(config).header_read_timeout;
            assert!(
                POOL_IDLE < ours,
                "{POOL_IDLE:?} is not below our server's {ours:?}"
            );
        }
        let node = std::time::Duration::from_secs(5);
        assert!(
            POOL_IDLE < node,
            "{POOL_IDLE:?} is not below Node's {node:?}"
        );
    }
}
