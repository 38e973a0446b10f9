//! `mcp-host serve`: the gateway over stdio and HTTP, as a client runs it.
