//! The sans-IO core of the Model Context Protocol: the JSON-RPC 2.0 envelope, the MCP
//! 2025-11-25 types a host or a gateway touches, protocol versions and their negotiation, and
//! the client and server session state machines.
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
//! - [`ClientSession`]: what a host runs for each server. [`ServerSession`]: what a gateway
//!   runs for each client.
//! - [`schema`]: the wire types, and [`schema::method`] markers tying each request to its one
//!   result type.
//! - [`ProtocolVersion`]: the known revisions as an enumerated set.
//!
//! # Example
//!
//! A client session driven by hand; a transport does exactly this in a loop.
//!
//! ```
//! use std::time::Instant;
//! use mcp_protocol::schema::Implementation;
//! use mcp_protocol::{ClientConfig, ClientEvent, ClientSession, decode};
//!
//! let now = Instant::now();
//! let info = Implementation::new("my-host".into(), "1.0.0".into());
//! let mut session = ClientSession::new(ClientConfig::new(info));
//! session.initialize(now).unwrap();
//!
//! // The transport writes this frame to the server...
//! let initialize = session.poll_transmit().unwrap().encode();
//! assert!(initialize.starts_with(br#"{"jsonrpc":"2.0","id":0,"method":"initialize""#));
//!
//! // ...and feeds the server's answer back.
//! let answer = br#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25",
//!     "capabilities":{"tools":{}},"serverInfo":{"name":"s","version":"1"}}}"#;
//! session.handle_decoded(now, decode(answer).unwrap());
//! assert!(matches!(session.poll_event(), Some(ClientEvent::Ready(_))));
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
mod jsonrpc;
pub mod schema;
mod session;
mod version;
mod wire;

// The public interface is:
pub use error::{Error, Result};
pub use jsonrpc::{
    DecodeError, DecodeErrorKind, Decoded, ErrorObject, ErrorResponse, Message, Notification,
    RAW_EXCERPT_LIMIT, RawJson, Request, RequestId, Response, code, decode, decode_message,
    sniff_id,
};
pub use session::{
    ClientConfig, ClientEvent, ClientInfo, ClientSession, Reply, RequestHandler, RequestOptions,
    ServerConfig, ServerEvent, ServerInfo, ServerSession, decode_result,
};
pub use version::{Era, ProtocolVersion};
pub use wire::JsonObject;
