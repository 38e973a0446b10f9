//! `cargo xtask bench`: our crates beside the official SDKs (issue 11). Installs what is
//! missing into `target/tools/` (the TypeScript SDK from the npm registry and the Python SDK
//! from PyPI, both at the pins the interop checks use, with Node when the machine's is too
//! old), builds `bench/` (a cargo workspace of its own, with rmcp) in release into
//! `target/bench/`, and runs its driver, which writes `docs/benchmarks.md`.
//!
//! Not part of `cargo xtask ci`: timings on a shared machine are no pass/fail.
//!
//! The gateway rows also install supergateway and the TypeScript `mcp-proxy` from the npm
//! registry and the Python `mcp-proxy` from PyPI (pinned below), and build `mcp-host` in
//! release beside the benchmark.
//!
//! `--gateway-check` measures nothing: it builds the same binary and runs its check of our
//! gateway between rmcp peers (bench/src/gateway_check.rs), which is a pass/fail.

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use xshell::{Shell, cmd};

use crate::{flags, project_root};

/// The TypeScript SDK needs Node 18 or newer.
const MIN_NODE_MAJOR: u32 = 18;

/// The gateways the gateway rows put beside ours (issue 25 section 1), pinned: the two from
/// the npm registry (package, version, entry script) and the one from PyPI.
const SUPERGATEWAY: (&str, &str, &str) = ("supergateway", "4.0.0", "dist/index.js");
const MCP_PROXY_TS: (&str, &str, &str) = ("mcp-proxy", "6.7.19", "dist/bin/mcp-proxy.mjs");
const MCP_PROXY_PY: (&str, &str) = ("mcp-proxy", "0.13.0");

impl flags::Bench {
    pub(crate) fn run(self, sh: &Shell) -> anyhow::Result<()> {
        let root = project_root();
        if self.gateway_check {
            return gateway_check(sh, &root);
        }
        let tools = root.join("target/tools");
        let node = crate::interop::node(sh, &tools, MIN_NODE_MAJOR)?;
        let sdk = tools.join("sdk");
        crate::interop::npm_package(
            sh,
            &sdk,
            crate::interop::SDK,
            crate::interop::SDK_VERSION,
            "package.json",
        )?;
        let python = crate::interop::python_sdk(sh, &tools)?;
        let mut gateways = Vec::new();
        for (flag, dir, (name, version, entry)) in [
            ("--supergateway", "gw-supergateway", SUPERGATEWAY),
            ("--mcp-proxy-ts", "gw-mcp-proxy", MCP_PROXY_TS),
        ] {
            let script = crate::interop::npm_package(sh, &tools.join(dir), name, version, entry)?;
            gateways.extend([flag.to_owned(), script.display().to_string()]);
        }
        let (name, version) = MCP_PROXY_PY;
        let proxy_py =
            crate::interop::pip_package(sh, &tools.join("gw-mcp-proxy-py"), name, version)?;
        let script = proxy_py.with_file_name("mcp-proxy");
        gateways.extend(["--mcp-proxy-py".to_owned(), script.display().to_string()]);

        let mcp_host = build_mcp_host(sh, &root)?;
        gateways.extend(["--mcp-host".to_owned(), mcp_host.display().to_string()]);
        let exe = build(sh, &root)?;
        let out = self
            .out
            .map(PathBuf::from)
            .unwrap_or_else(|| root.join("docs/benchmarks.md"));
        let mut args = vec![
            "run".to_owned(),
            "--out".to_owned(),
            out.display().to_string(),
            "--node".to_owned(),
            node.display().to_string(),
            "--sdk".to_owned(),
            sdk.display().to_string(),
            "--python".to_owned(),
            python.display().to_string(),
        ];
        if self.quick {
            args.push("--quick".to_owned());
        }
        if let Some(reps) = self.reps {
            args.extend(["--reps".to_owned(), reps.to_string()]);
        }
        if let Some(note) = self.note {
            args.extend(["--note".to_owned(), note]);
        }
        if let Some(only) = self.only {
            args.extend(["--only".to_owned(), only]);
        }
        args.extend(gateways);
        eprintln!("==> running the benchmark (progress below; under 15 minutes on 2 cores)");
        cmd!(sh, "{exe} {args...}")
            .run()
            .context("the benchmark failed")?;
        // The page ends with the instruction counts CI holds each change to (issue 25 §5).
        let mut page = std::fs::read_to_string(&out)?;
        page.push_str(&crate::callgrind::page_section()?);
        std::fs::write(&out, page)?;
        Ok(())
    }
}

/// Builds `bench/` in release into `target/bench/` and returns its binary.
fn build(sh: &Shell, root: &Path) -> anyhow::Result<PathBuf> {
    eprintln!("==> building bench/ in release (rmcp included) into target/bench");
    let manifest = root.join("bench/Cargo.toml");
    cmd!(sh, "cargo build --release --manifest-path {manifest}")
        .env("CARGO_TARGET_DIR", root.join("target/bench"))
        .run()
        .context("building bench/ failed")?;
    Ok(root.join("target/bench/release/mcp-bench"))
}

/// `mcp-host` in release (as a user installs it) into `target/bench/`, for the gateway rows.
fn build_mcp_host(sh: &Shell, root: &Path) -> anyhow::Result<PathBuf> {
    eprintln!("==> building mcp-host in release into target/bench");
    let manifest = root.join("Cargo.toml");
    cmd!(
        sh,
        "cargo build --release --manifest-path {manifest} -p mcp-cli --bin mcp-host"
    )
    .env("CARGO_TARGET_DIR", root.join("target/bench"))
    .run()
    .context("building mcp-host in release failed")?;
    Ok(root.join("target/bench/release/mcp-host"))
}

/// `--gateway-check`: our gateway between an rmcp client and an rmcp upstream, over stdio and
/// Streamable HTTP (issue 25 section 6; rmcp 3.11 refuses methods of capabilities a server did
/// not declare). Needs neither Node nor Python; the `mcp-host` is the workspace's debug build.
fn gateway_check(sh: &Shell, root: &Path) -> anyhow::Result<()> {
    let bins = crate::binaries::build(sh)?;
    let exe = build(sh, root)?;
    let mcp_host = bins.join("mcp-host");
    eprintln!("==> rmcp client -> mcp-host serve -> rmcp upstream");
    cmd!(sh, "{exe} gateway-check {mcp_host}")
        .run()
        .context("our gateway between rmcp peers failed")?;
    Ok(())
}
