//! The conformance binaries' building blocks, checked with our own client before the suite
//! judges them: the everything server over Streamable HTTP on loopback.

// Test code: an unwrap that fails is a failed test, with its location.
#![allow(clippy::unwrap_used)]

mod server;
