//! mcp-testkit's own tests, one binary: the fakes checked with raw HTTP requests.

// Test code: an unwrap that fails is a failed test, with its location.
#![allow(clippy::unwrap_used)]

// The fake authorization server and protected MCP endpoint, step by step.
mod fake_auth;
