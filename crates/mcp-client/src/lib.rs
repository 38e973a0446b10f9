//! The client side of an MCP connection, over any transport: the cloneable [`Client`] handle
//! with its typed API (tools with pagination, calls with timeouts, progress and cancellation,
//! resources, prompts, answers to server requests), and the [`Core`] a transport feeds.
//!
//! `mcp-protocol`'s session does the protocol; this crate runs it on tokio: it keeps the
//! session behind a lock, wakes callers when their answers come, fires the session's deadlines,
//! and hands the host notifications and server requests. It touches no socket or process: a
//! transport ([`Transport`]) sends what the session queues and feeds the core what arrives.
//! `mcp-stdio` and `mcp-http` are such transports, so a host sees one `Client` whatever the
//! server speaks over.
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

// The public interface is:
pub use client::{Client, Pending};
pub use core::{Core, Incoming, Transport};
pub use error::{Error, Result};
