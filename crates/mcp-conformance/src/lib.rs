//! Support for running the official MCP conformance suite against our crates: the
//! `mcp-conformance-client` binary acts as each client scenario expects, through the public
//! API of `mcp-host` (with its OAuth), as a consumer would. The xtask that installs and runs the suite is its
//! own issue; until then the suite is run by hand (see `docs/conformance.md`).

/// The scenario the harness runs, from `MCP_CONFORMANCE_SCENARIO`.
pub fn scenario() -> String {
    std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default()
}

/// The scenario's context, from `MCP_CONFORMANCE_CONTEXT` (a JSON object: credentials the
/// suite hands the client, as a user would configure them); empty when unset or not JSON.
pub fn context() -> serde_json::Map<String, serde_json::Value> {
    std::env::var("MCP_CONFORMANCE_CONTEXT")
        .ok()
        .and_then(|text| serde_json::from_str(&text).ok())
        .unwrap_or_default()
}
