//! Integration tests of mcp-protocol, through its public API only, driven by the data files
//! under the workspace `fixtures/` folder and checked with insta snapshots.

// JSON-RPC messages, one per file: fixtures/jsonrpc/{ok,err}.
mod messages;
// Lifecycle transcripts run against a client or a server session: fixtures/lifecycle/{ok,err}.
mod lifecycle;
