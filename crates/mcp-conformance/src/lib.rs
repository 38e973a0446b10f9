//! Support for running the official MCP conformance suite against our crates, built on them
//! the way a consumer would use them:
//!
//! - `mcp-conformance-client <url>` acts as each client scenario expects, through the public
//!   API of `mcp-host` (with its OAuth);
//! - `mcp-conformance-server [--port N]` serves the everything-style [`server`] over
//!   `mcp-http`'s Streamable HTTP server half, for the server scenarios.
//!
//! `cargo xtask conformance` installs the pinned suites and runs both (see
//! `docs/conformance.md`, which it writes).

mod input_required;
pub mod server;
mod skills;
mod tasks;

/// Runs a binary's body on a two-thread runtime, then exits: 0 on success, else 1 with the
/// error on stderr, since the suite judges a client by its exit code.
// The binaries' one way to report: stderr, which the suite keeps with the run.
#[allow(clippy::print_stderr)]
pub fn exit_with(name: &str, body: impl Future<Output = Result<(), String>>) -> ! {
    let outcome = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())
        .and_then(|rt| rt.block_on(body));
    match outcome {
        Ok(()) => std::process::exit(0),
        Err(e) => {
            eprintln!("{name}: {e}");
            std::process::exit(1)
        }
    }
}

/// The scenario the harness runs, from `MCP_CONFORMANCE_SCENARIO`.
pub fn scenario() -> String {
    std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default()
}

/// The protocol revision the harness asks for, from `MCP_CONFORMANCE_PROTOCOL_VERSION` (set by
/// the 0.2 suites; the stable suite leaves it unset, and the client then negotiates).
pub fn protocol_version() -> Option<mcp_protocol::ProtocolVersion> {
    std::env::var("MCP_CONFORMANCE_PROTOCOL_VERSION")
        .ok()
        .filter(|v| !v.is_empty())
        .map(|v| mcp_protocol::ProtocolVersion::parse(&v))
}

/// The scenario's context, from `MCP_CONFORMANCE_CONTEXT` (a JSON object: credentials the
/// suite hands the client, as a user would configure them); empty when unset or not JSON.
pub fn context() -> serde_json::Map<String, serde_json::Value> {
    std::env::var("MCP_CONFORMANCE_CONTEXT")
        .ok()
        .and_then(|text| serde_json::from_str(&text).ok())
        .unwrap_or_default()
}
