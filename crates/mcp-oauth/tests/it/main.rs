//! mcp-oauth's integration tests, one binary: the driver against an in-memory fake
//! ([`fake`]), and properties of the parsers ([`proptests`]).

// Test code: an unwrap that fails is a failed test, with its location.
#![allow(clippy::unwrap_used)]

mod authorizer;
mod device;
mod fake;
mod proptests;
mod redirect;
