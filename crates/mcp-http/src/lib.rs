//! MCP over Streamable HTTP (spec `basic/transports.mdx#streamable-http`).
//!
//! Today this crate holds the foundation: [`sse`], a hand-written, I/O-free Server-Sent Events
//! decoder and encoder with a size limit (no SSE or eventsource crate). The client over hyper
//! and the server half for the gateway are built on it next.
//!
//! # Optional features
//!
//! None yet; `full` is accepted for uniformity.
//!
//! # Stability
//!
//! Pre-1.0: the API may change between minor versions.

pub mod sse;
