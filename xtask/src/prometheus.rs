//! The HTTP gateway's `GET /metrics` read by a real parser: `mcp-host serve --gateway --http`
//! with a bearer token, in front of the bundled demo server, and `xtask/interop/metrics-check.py`
//! with `prometheus_client` (pinned, from PyPI, in a virtual environment under
//! `target/tools/prometheus-client`) making an MCP session and two calls by hand, then parsing
//! the page with `text_string_to_metric_families` and checking families, types and counts.
//! Run by `cargo xtask interop`.

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use xshell::{Shell, cmd};

use crate::bounded::{self, PEER_STEP};
use crate::interop::{free_port, pip_package, wait_listening};
use crate::project_root;

/// The pinned parser.
const PACKAGE: &str = "prometheus-client";
const VERSION: &str = "0.26.0";

/// Runs the check.
pub(crate) fn run(sh: &Shell, tools: &Path) -> anyhow::Result<()> {
    let python = python(sh, tools)?;
    let mcp_host = crate::target_dir().join("debug/mcp-host");
    let dir = tools.join("interop-metrics");
    let _ = std::fs::remove_dir_all(&dir);
    let home = dir.join("home");
    std::fs::create_dir_all(&home)?;
    let file = dir.join("gateway.json");
    let gateway_file = serde_json::json!({
        "mode": "passthrough",
        "mcpServers": {
            "demo": {
                "description": "mcp-host's bundled demo server",
                "command": mcp_host.display().to_string(),
                "args": ["demo-server"],
                "permission": {"default": "allow"}
            }
        },
        "logFile": dir.join("gateway.log"),
    });
    std::fs::write(&file, serde_json::to_vec_pretty(&gateway_file)?)?;
    let port = free_port()?;
    let token = "metrics-check-token";
    eprintln!("==> {PACKAGE}=={VERSION} parses mcp-host serve --gateway --http's /metrics");
    let mut gateway = std::process::Command::new(&mcp_host)
        .args(["serve", "--gateway"])
        .arg(&file)
        .args(["--http", &format!("127.0.0.1:{port}")])
        .args(["--bearer-token-env", "MCP_METRICS_CHECK_TOKEN"])
        .env("MCP_METRICS_CHECK_TOKEN", token)
        .env("HOME", &home)
        .env("MCP_HOST_CONFIG", "")
        .env("XDG_CONFIG_HOME", "")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .context("starting mcp-host serve --gateway --http")?;
    let script = project_root().join("xtask/interop/metrics-check.py");
    let base = format!("http://127.0.0.1:{port}");
    let outcome = wait_listening(port, "the gateway").and_then(|()| {
        bounded::run(
            cmd!(sh, "{python} {script} {base} {token}"),
            "the /metrics check with prometheus_client",
            PEER_STEP,
        )
    });
    let _ = gateway.kill();
    let _ = gateway.wait();
    outcome
}

/// A Python with the pinned parser, under `tools` ([`pip_package`]).
fn python(sh: &Shell, tools: &Path) -> anyhow::Result<PathBuf> {
    pip_package(sh, &tools.join("prometheus-client"), PACKAGE, VERSION)
}
