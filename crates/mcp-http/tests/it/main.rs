//! Integration tests of mcp-http, driven by the data files under the workspace `fixtures/`.

// Test code: an unwrap that fails is a failed test, with its location.
#![allow(clippy::unwrap_used)]

// Raw SSE streams, one per file: fixtures/sse/{ok,err}.
mod sse_fixtures;
// The client against a scripted server on loopback, over HTTP and HTTPS.
mod client;
// The server half on loopback: our client against it, and raw requests for every rule.
mod server;
// The server half against abusive clients: bodies that never come, too many sessions, loose
// credentials and hosts.
mod abuse;
// The client against the testkit's fake HTTP server, one HTTP-layer fault at a time.
mod faults;
// Who drives a call's POST: its caller, with no task of ours per call.
mod caller;
// The plain-request `Fetcher` (for OAuth) against a tiny server on loopback, HTTP and HTTPS.
mod fetch;
// The client's own connections against a server that leaves its SSE streams open after
// their answers.
mod conns;
