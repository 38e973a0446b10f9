//! Support for running the official MCP conformance suite against our crates: the
//! `mcp-conformance-client` binary acts as each client scenario expects, through the public
//! API of `mcp-http` and `mcp-session` only. The xtask that installs and runs the suite is its
//! own issue; until then the suite is run by hand (see `docs/conformance.md`).

/// The scenario the harness runs, from `MCP_CONFORMANCE_SCENARIO`.
pub fn scenario() -> String {
    std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default()
}
