//! `mcp-host budget`.
