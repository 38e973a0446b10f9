//! Unit tests of the JSON-RPC envelope.
