//! The gateway's traces against a real OTLP receiver: the official OTLP protobuf definitions
//! (`opentelemetry-proto` from PyPI, pinned) behind `xtask/interop/otlp-receiver.py`, which
//! parses what the gateway exports strictly. Installs them into a virtual environment under
//! target/tools/otlp-proto, then runs the gateway's receiver tests
//! (`cargo test -p mcp-gateway --features __otlp_receiver --test it traces::`), which start the
//! receiver themselves. Part of `xtask interop`.

use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};
use xshell::{Shell, cmd};

use crate::project_root;

/// The pinned OTLP definitions (and, through them, `protobuf`).
const PROTO: &str = "opentelemetry-proto";
const PROTO_VERSION: &str = "1.45.2";

pub(crate) fn run(sh: &Shell, tools: &Path) -> anyhow::Result<()> {
    let python = otlp_python(sh, tools)?;
    let receiver = project_root().join("xtask/interop/otlp-receiver.py");
    eprintln!("==> the gateway's spans into an OTLP receiver of {PROTO}=={PROTO_VERSION}");
    cmd!(
        sh,
        "cargo test -p mcp-gateway --features __otlp_receiver --test it traces::"
    )
    .env("MCP_OTLP_PYTHON", &python)
    .env("MCP_OTLP_RECEIVER", &receiver)
    .run()
    .context("the gateway's trace tests against the OTLP receiver failed")
}

/// A Python with the pinned OTLP definitions, in a virtual environment of its own beside the
/// Python SDK's (`interop::python_sdk`); reinstalled only when the version differs.
pub(crate) fn otlp_python(sh: &Shell, tools: &Path) -> anyhow::Result<PathBuf> {
    let home = tools.join("otlp-proto");
    let python = home.join("bin/python");
    if installed(sh, &python).as_deref() == Some(PROTO_VERSION) {
        return Ok(python);
    }
    let spec = format!("{PROTO}=={PROTO_VERSION}");
    eprintln!("==> installing {spec} from PyPI into {}", home.display());
    let _ = std::fs::remove_dir_all(&home);
    let quiet = ["--quiet", "--disable-pip-version-check"];
    cmd!(sh, "python3 -m venv {home}")
        .run()
        .context("python3 -m venv failed; is python3 with venv here?")?;
    cmd!(sh, "{python} -m pip install {quiet...} {spec}")
        .run()
        .with_context(|| format!("pip could not install {spec}"))?;
    match installed(sh, &python) {
        Some(v) if v == PROTO_VERSION => Ok(python),
        other => bail!("after installing {spec}, {PROTO} is at {other:?}"),
    }
}

fn installed(sh: &Shell, python: &Path) -> Option<String> {
    if !python.exists() {
        return None;
    }
    let probe = format!("import importlib.metadata as m; print(m.version('{PROTO}'))");
    cmd!(sh, "{python} -c {probe}")
        .quiet()
        .ignore_stderr()
        .read()
        .ok()
        .map(|v| v.trim().to_owned())
}
