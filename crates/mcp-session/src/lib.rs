//! MCP sessions on tokio, over any transport, for both roles.
//!
//! - The client side: the cloneable [`Client`] handle with its typed API (tools with
//!   pagination, calls with timeouts, progress and cancellation, resources, prompts, answers to
//!   server requests), and the [`Core`] a client transport feeds.
//! - The server side: a [`Handler`] answers each request (polled first where the request
//!   was read, then in a task of its own if it must wait), and a
//!   [`ServerCore`] runs one client's session for a server transport, in either era. The cores
//!   of one server share [`Sessions`], through which a notification reaches every client:
//!   handshake sessions on their streams, stateless ones on their `subscriptions/listen`
//!   streams.
//! - Tasks on the server side: [`Tasks`] runs a request as a task for a handler that says so
//!   ([`Tasks::create`]), keeps it for its TTL, and answers `tasks/*` for it, in both forms
//!   (the 2026-07-28 extension and the 2025-11-25 experimental tasks).
//! - Skills on the server side (SEP-2640): [`load_skills`] reads a folder of skills (blocking,
//!   at startup) into `mcp-protocol`'s `SkillCatalog`, which a [`Handler`] asks first
//!   (`SkillCatalog::handle`) to answer `skills/list`, `skills/get`,
//!   `resources/directory/read` and the reads of skill files.
//!
//! `mcp-protocol`'s sessions do the protocol; this crate runs them on tokio: it keeps a session
//! behind a lock, wakes callers when their answers come, fires the session's deadlines, and
//! hands the host notifications and server requests (or the handler client requests). It
//! touches no socket or process: a transport ([`Transport`], [`ServerTransport`]) sends what
//! the session queues and feeds the core what arrives. `mcp-stdio` and `mcp-http` are such
//! transports, so a host sees one `Client`, and a server one `Handler`, whatever the wire.
//!
//! # Example
//!
//! A server's [`Handler`] with one tool, `echo`. A transport runs it for each client that
//! connects (`mcp_stdio::serve` over any byte streams, `mcp_http::serve_http` over HTTP); the
//! client side is a [`Client`] from `mcp_stdio::spawn`, `mcp_stdio::connect` or
//! `mcp_http::connect`. `mcp-stdio`'s `examples/pipe.rs` runs both halves of this in one
//! process.
//!
//! ```
//! use mcp_protocol::schema::{CallToolResult, ClientRequest, ContentBlock, ListToolsResult, Tool};
//! use mcp_protocol::{ErrorObject, RawJson, code};
//! use mcp_session::{Handler, RequestContext};
//!
//! struct Echo;
//!
//! impl Handler for Echo {
//!     async fn handle(
//!         &self,
//!         request: ClientRequest,
//!         _context: RequestContext,
//!     ) -> Result<RawJson, ErrorObject> {
//!         let internal = |e: &dyn std::fmt::Display| ErrorObject::new(code::INTERNAL_ERROR, e.to_string());
//!         match request {
//!             ClientRequest::ListTools(_) => {
//!                 RawJson::encode(&ListToolsResult::new(vec![Tool::new("echo".into())]))
//!                     .map_err(|e| internal(&e))
//!             }
//!             ClientRequest::CallTool(call) if call.name == "echo" => {
//!                 let text = call
//!                     .arguments
//!                     .and_then(|a| a.get("text")?.as_str().map(str::to_owned))
//!                     .unwrap_or_default();
//!                 RawJson::encode(&CallToolResult::new(vec![ContentBlock::text(text)]))
//!                     .map_err(|e| internal(&e))
//!             }
//!             _ => Err(ErrorObject::new(code::METHOD_NOT_FOUND, "not here".into())),
//!         }
//!     }
//! }
//! ```
//!
//! # Cancel safety
//!
//! Dropping a request future cancels the request: the server is sent `notifications/cancelled`
//! and a late answer is dropped.
//!
//! # Optional features
//!
//! None yet; `full` is accepted for uniformity.
//!
//! # Stability
//!
//! Pre-1.0: the API may change between minor versions.

mod client;
mod core;
mod error;
mod server;
mod skills;
mod tasks;
mod timer;

// The public interface is:
pub use client::{Client, Pending};
pub use core::{Core, Incoming, Sending, Transport};
pub use error::{Error, Result};
pub use server::{
    CoreOptions, Handler, Identity, Peer, RequestContext, ServerCore, ServerTransport, SessionKey,
    Sessions,
};
pub use skills::load_skills;
pub use tasks::{TaskContext, TaskMirror, TaskOptions, TaskRecord, Tasks, ended_payload};
