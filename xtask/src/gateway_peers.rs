//! The gateway with real peers on both sides, for 2026-07-28 clients (issue 22 §5): the Python
//! SDK's client in its default era (`xtask/interop/gateway-stateless-client.py`) in front of
//! `mcp-host serve --gateway --http` in passthrough mode, the TypeScript "everything" server
//! (handshake era, over stdio) behind it. The client's `subscriptions/listen` stream gets the
//! upstream's resource updates, and the upstream's mid-call sampling reaches it as
//! `input_required`. Run by `cargo xtask interop`.

use std::path::Path;

use anyhow::Context as _;
use xshell::{Shell, cmd};

use crate::bounded::{self, PEER_STEP};
use crate::interop::{free_port, python_sdk, wait_listening};
use crate::project_root;

/// Runs the check.
pub(crate) fn run(sh: &Shell, node: &Path, script: &Path, tools: &Path) -> anyhow::Result<()> {
    let python = python_sdk(sh, tools)?;
    let mcp_host = crate::target_dir().join("debug/mcp-host");
    let dir = tools.join("interop-gateway-stateless");
    let _ = std::fs::remove_dir_all(&dir);
    let home = dir.join("home");
    std::fs::create_dir_all(&home)?;
    let file = dir.join("gateway.json");
    let gateway_file = serde_json::json!({
        "mode": "passthrough",
        "mcpServers": {
            "everything": {
                "command": node.display().to_string(),
                "args": [script.display().to_string(), "stdio"],
                "permission": {"default": "allow"}
            }
        },
        "logFile": dir.join("gateway.log"),
    });
    std::fs::write(&file, serde_json::to_vec_pretty(&gateway_file)?)?;
    let port = free_port()?;
    eprintln!(
        "==> the Python SDK's 2026-07-28 client through mcp-host serve --gateway (passthrough)"
    );
    let mut gateway = std::process::Command::new(&mcp_host)
        .args(["serve", "--gateway"])
        .arg(&file)
        .args(["--http", &format!("127.0.0.1:{port}")])
        .env("HOME", &home)
        .env("MCP_HOST_CONFIG", "")
        .env("XDG_CONFIG_HOME", "")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .context("starting mcp-host serve --gateway --http")?;
    let client = project_root().join("xtask/interop/gateway-stateless-client.py");
    let url = format!("http://127.0.0.1:{port}/mcp");
    let outcome = wait_listening(port, "the gateway").and_then(|()| {
        bounded::run(
            cmd!(sh, "{python} {client} {url}"),
            "the Python SDK's 2026-07-28 client through the gateway",
            PEER_STEP,
        )
        .with_context(|| format!("gateway log: {}", dir.join("gateway.log").display()))
    });
    let _ = gateway.kill();
    let _ = gateway.wait();
    outcome
}
