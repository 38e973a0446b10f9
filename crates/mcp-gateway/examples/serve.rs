//! A gateway in a few lines, what `mcp-host serve --gateway FILE` does without its command
//! line: read a gateway file, start its upstream servers through one host, and serve MCP on
//! this process's standard input and output until the client leaves.
//!
//! ```text
//! cargo run -p mcp-gateway --example serve -- GATEWAY.json
//! ```
//!
//! `GATEWAY.json` is a gateway file (`docs/gateway.md`; `mcp-host gateway schema` prints its
//! JSON Schema), for example
//! `{"mode": "category", "mcpServers": {"files": {"command": "…", "categories": ["files"]}}}`.
//! Standard output carries MCP only: problems go to standard error.

use std::error::Error;
use std::path::PathBuf;

use mcp_gateway::{Gateway, GatewayOptions};
use mcp_host::config::Env;

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    let Some(file) = std::env::args_os().nth(1).map(PathBuf::from) else {
        return Err("usage: serve GATEWAY.json".into());
    };
    // No OAuth context (`mcp-host serve` passes this user's token store): fine for upstreams
    // that need no login.
    let loaded = mcp_gateway::load(&file, &Env::from_process(), None)?;
    let gateway = Gateway::start(loaded, GatewayOptions::new()).await?;
    // Returns when the client closes standard input; the upstream servers are stopped.
    gateway.serve_stdio().await?;
    Ok(())
}
