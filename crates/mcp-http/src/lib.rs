//! MCP over Streamable HTTP (spec `basic/transports.mdx#streamable-http`).
//!
//! - [`sse`]: a hand-written, I/O-free Server-Sent Events decoder and encoder with a size limit
//!   (no SSE or eventsource crate).
//! - [`connect`]: the client, a transport for `mcp-session` over hyper. Every message is its own
//!   POST with `Accept: application/json, text/event-stream`; an answer comes as JSON or as an
//!   SSE stream, which is resumed by GET with `Last-Event-ID` after the server's `retry` if it
//!   drops before the answer. `MCP-Session-Id` is kept and sent; a 404 on it ends the session
//!   (the host starts a new one); `MCP-Protocol-Version` goes on every request after the
//!   handshake; DELETE ends the session on close. Connections are pooled, kept alive, and use
//!   `TCP_NODELAY`; bodies are always read to the end so connections are reused.
//!   The session probes with `server/discover` first: against a 2026-07-28 server each request
//!   is its own POST with the version of its `_meta` and the headers that mirror its body
//!   (`Mcp-Method`, `Mcp-Name`, `Mcp-Param-*`, made by the crate's own codec for both halves),
//!   with no session id, GET stream or DELETE, and cancelling a request closes its stream.
//!   An origin found to speak the handshake era is remembered in the config's [`EraCache`],
//!   a value its consumer owns and may share (a host shares one among its servers), so that
//!   the next connection skips the probe. What each answer means (JSON or SSE, a 202, a
//!   challenge and its retry budget, a 404 on the session, the HTTP+SSE fallback) is decided
//!   by a pure function apart from the I/O.
//! - [`AuthHook`]: supplies the authorization headers of each request (`Authorization`, and
//!   for DPoP a proof naming the request's method and URL) and hears about 401 and 403 with
//!   their `WWW-Authenticate` challenge and `DPoP-Nonce`. This crate knows nothing of OAuth.
//! - [`Fetcher`]: plain HTTP requests (`http::Request<Vec<u8>>` in, `http::Response<Vec<u8>>`
//!   out) beside the MCP transport, for an OAuth layer's metadata, registration and token
//!   requests: same TLS and connector, no redirects followed, a bounded body, one deadline, and
//!   errors ([`FetchError`]) that never quote a header value, a body or a query string. With
//!   an [`AddressPolicy`] (the request-forgery rules of the MCP security best practices, over
//!   [`AddressClass`]es) it connects only to the addresses the policy allows, checked after
//!   name resolution on every connection, and uses plain `http` only between loopback
//!   addresses.
//! - [`serve_http`] (with [`bind`] and [`HttpServerConfig`]): the server half, for the gateway
//!   and for tests. One endpoint; each session is an `mcp-session` `ServerCore` answering with
//!   the caller's `Handler`; `Origin` and `Host` are checked strictly against DNS rebinding, an
//!   optional bearer token is required, or an [`Authenticator`] the application supplies
//!   (OAuth access tokens: it knows nothing of OAuth) judges every request, and bodies are
//!   bounded. A POST whose
//!   `MCP-Protocol-Version` is not a handshake-era version is one stateless-era request with
//!   its own short-lived core. The server does not end on an `accept()` error, and bounds what
//!   a client can make it hold: header and body deadlines, connections, sessions, and the
//!   unread bytes of each response stream, each session and the whole server (a stream past
//!   them is cut, [`StreamCut`]); each limit is a field of [`HttpServerConfig`].
//!
//! # Optional features
//!
//! All three are on by default; `full` turns on every one.
//!
//! - `client`: [`connect`], [`Fetcher`], [`AuthHook`] and the address policy.
//! - `server`: [`serve_http`], [`bind`] and [`HttpServerConfig`].
//! - `tls` (implies `client`): `https` URLs, through rustls with ring and Mozilla's roots
//!   (webpki-roots). Without it the client speaks plain `http` only, which is all a consumer
//!   that talks to loopback servers needs; an `https` URL then fails at connection with an
//!   error that names this feature.
//!
//! [`sse`] and the header constants are always there.
//!
//! # Stability
//!
//! Pre-1.0: the API may change between minor versions.

#[cfg(feature = "client")]
mod client;
mod error;
// Shared by both halves: each uses its part of it, and with neither only the constants are used.
#[cfg_attr(not(all(feature = "client", feature = "server")), allow(dead_code))]
mod headers;
#[cfg(feature = "server")]
pub mod metrics;
#[cfg(feature = "server")]
mod server;
pub mod sse;

// The public interface is:
#[cfg(feature = "client")]
pub use client::{
    AddressClass, AddressPolicy, AuthHook, Challenge, EraCache, FetchError, FetchOptions, Fetcher,
    HttpConfig, HttpProtocol, Refusal, StaticAuth, connect, may_reach, may_use_plain_http,
};
pub use error::{Error, Result};
pub use headers::{LAST_EVENT_ID, PROTOCOL_VERSION, SESSION_ID};
pub use mcp_session::{Client, Incoming};
#[cfg(feature = "server")]
pub use server::{
    Authenticator, HttpServerConfig, Inbox, KEY_LEN, LocalShare, Observer, Readiness, ResponseBody,
    SealError, SessionSeal, SessionShare, SessionState, ShareError, ShareFuture, SseBody,
    StreamCut, Verdict, bind, serve_http,
};
