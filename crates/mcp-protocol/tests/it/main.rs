//! Integration tests of mcp-protocol, through its public API only, driven by the data files
//! under the workspace `fixtures/` folder and checked with insta snapshots.

// Test code: an unwrap that fails is a failed test, with its location.
#![allow(clippy::unwrap_used)]

// JSON-RPC messages, one per file: fixtures/jsonrpc/{ok,err}.
mod messages;
// Lifecycle transcripts run against a client or a server session: fixtures/lifecycle/{ok,err}.
mod lifecycle;
