//! The sans-IO core of the Model Context Protocol: the JSON-RPC 2.0 envelope, the MCP
//! 2025-11-25 types a host or a gateway touches and what the 2026-07-28 revision adds
//! ([`schema`]'s stateless types), protocol versions and their negotiation, and the client and
//! server session state machines, each speaking both eras.
//!
//! mcp-protocol contains no I/O: it opens no file, socket or process, spawns no thread, and
//! never reads the clock or an OS random number generator. Every call that depends on time
//! takes `now`; every message to send is handed back through `poll_transmit`. The transports
//! (`mcp-stdio`, `mcp-http`) move the bytes and the time; this crate does the protocol.
//!
//! # Entry points
//!
//! - [`decode`] and [`Message::encode`]: frames to messages and back. Payloads stay raw
//!   ([`RawJson`]) until the code that knows their type decodes them.
//! - [`ClientSession`]: what a host runs for each server, in whichever era the server speaks
//!   (the 2025-11-25 handshake, or the stateless 2026-07-28 revision with `server/discover`,
//!   the per-request `_meta` envelope and multi round-trip results). [`ServerSession`]: what a
//!   gateway runs for each client.
//! - [`schema`]: the wire types, and [`schema::method`] markers tying each request to its one
//!   result type. A proxy that passes multi round-trip results through
//!   ([`RequestOptions::passing_input_required`]) tells them apart with
//!   [`schema::is_input_required`].
//! - [`SkillCatalog`]: the server half of the skills extension (SEP-2640), a server's skills
//!   in memory with their digests, sizes and frontmatter computed from the files, answering
//!   `skills/list`, `skills/get`, `resources/directory/read` and the reads of skill files.
//! - [`frontmatter`]: the one reader of a `SKILL.md`'s YAML frontmatter, which the catalog
//!   lists and a host compares field by field with what a server listed.
//! - [`ProtocolVersion`]: the known revisions as an enumerated set.
//! - [`Secrets`]: the values no text quoting a peer may show; the transports and the host run
//!   what they show or log through it.
//!
//! # Example
//!
//! A client session driven by hand; a transport does exactly this in a loop. The client speaks
//! both eras, so it first asks `server/discover`; this server is a 2025-11-25 one, which does
//! not know the method, so the session falls back to the `initialize` handshake by itself.
//!
//! ```
//! use std::time::Instant;
//! use mcp_protocol::schema::Implementation;
//! use mcp_protocol::{ClientConfig, ClientEvent, ClientSession, Era, decode};
//!
//! let now = Instant::now();
//! let info = Implementation::new("my-host".into(), "1.0.0".into());
//! let mut session = ClientSession::new(ClientConfig::new(info));
//! session.initialize(now).unwrap();
//!
//! // The transport writes this frame to the server...
//! let probe = session.poll_transmit().unwrap();
//! assert_eq!(probe.method(), Some("server/discover"));
//!
//! // ...and feeds the server's answers back.
//! let unknown = br#"{"jsonrpc":"2.0","id":0,"error":{"code":-32601,"message":"Method not found"}}"#;
//! session.handle_decoded(now, decode(unknown).unwrap());
//! assert_eq!(session.poll_transmit().unwrap().method(), Some("initialize"));
//! let answer = br#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25",
//!     "capabilities":{"tools":{}},"serverInfo":{"name":"s","version":"1"}}}"#;
//! session.handle_decoded(now, decode(answer).unwrap());
//! let Some(ClientEvent::Ready(server)) = session.poll_event() else { panic!() };
//! assert_eq!(server.era, Era::Handshake);
//! // notifications/initialized is next on the wire.
//! assert_eq!(session.poll_transmit().unwrap().method(), Some("notifications/initialized"));
//! ```
//!
//! Every wire type keeps the members it does not know in `extra`, so that a message decoded
//! and encoded again loses nothing.
//!
//! # Optional features
//!
//! None yet; `full` is accepted for uniformity with the other crates.
//!
//! # Stability
//!
//! Pre-1.0: the API may change between minor versions. Every public enum and struct that may
//! grow is `#[non_exhaustive]`.
//!
//! Spec: <https://modelcontextprotocol.io/specification/2025-11-25>.

mod error;
mod json_out;
mod jsonrpc;
mod redact;
mod scan;
pub mod schema;
mod session;
mod skills;
mod version;
mod wire;

// The public interface is:
pub use error::{Error, Result};
pub use jsonrpc::{
    DecodeError, DecodeErrorKind, Decoded, ErrorObject, ErrorResponse, Message, Notification,
    RAW_EXCERPT_LIMIT, RawJson, Request, RequestId, Response, code, decode, decode_message,
    sniff_id,
};
pub use redact::Secrets;
pub use session::{
    ClientConfig, ClientEvent, ClientInfo, ClientSession, Reply, RequestHandler, RequestOptions,
    ServerConfig, ServerEvent, ServerInfo, ServerSession, decode_result, missing_capability_error,
};
pub use skills::{SkillCatalog, SkillError, frontmatter};
pub use version::{Era, ProtocolVersion};
pub use wire::JsonObject;
