//! `cargo xtask bench`: our crates beside the official SDKs (issue 11). Installs what is
//! missing into `target/tools/` (the TypeScript SDK from the npm registry at the pin the
//! interop checks use, with Node when the machine's is too old; the Python SDK from PyPI into
//! a virtual environment), builds `bench/` (a cargo workspace of its own, with rmcp) in release
//! into `target/bench/`, and runs its driver, which writes `docs/benchmarks.md`.
//!
//! Not part of `cargo xtask ci`: timings on a shared machine are no pass/fail.

use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};
use xshell::{Shell, cmd};

use crate::{flags, project_root};

/// The Python SDK, pinned.
const PY_SDK: &str = "mcp";
const PY_SDK_VERSION: &str = "2.3.0";
/// The TypeScript SDK needs Node 18 or newer.
const MIN_NODE_MAJOR: u32 = 18;

impl flags::Bench {
    pub(crate) fn run(self, sh: &Shell) -> anyhow::Result<()> {
        let root = project_root();
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
        let python = python_sdk(sh, &tools)?;

        eprintln!("==> building bench/ in release (rmcp included) into target/bench");
        let manifest = root.join("bench/Cargo.toml");
        cmd!(sh, "cargo build --release --manifest-path {manifest}")
            .env("CARGO_TARGET_DIR", root.join("target/bench"))
            .run()
            .context("building bench/ failed")?;

        let exe = root.join("target/bench/release/mcp-bench");
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
        eprintln!("==> running the benchmark (progress below; under 15 minutes on 2 cores)");
        cmd!(sh, "{exe} {args...}")
            .run()
            .context("the benchmark failed")?;
        Ok(())
    }
}

/// A Python with the pinned SDK: a virtual environment under `tools`, or, where the machine
/// has no `venv` module, the SDK installed with `pip --target` and a small launcher at the
/// same place that puts it on `PYTHONPATH`.
fn python_sdk(sh: &Shell, tools: &Path) -> anyhow::Result<PathBuf> {
    let venv = tools.join("pybench");
    let python = venv.join("bin/python");
    if installed_version(sh, &python).as_deref() == Some(PY_SDK_VERSION) {
        return Ok(python);
    }
    let spec = format!("{PY_SDK}=={PY_SDK_VERSION}");
    eprintln!("==> installing {spec} from PyPI into {}", venv.display());
    let _ = std::fs::remove_dir_all(&venv);
    if cmd!(sh, "python3 -m venv {venv}").run().is_ok() {
        cmd!(
            sh,
            "{python} -m pip install --quiet --disable-pip-version-check {spec}"
        )
        .run()
        .with_context(|| format!("pip could not install {spec}"))?;
    } else {
        eprintln!("==> no venv module: pip install --target instead");
        let _ = std::fs::remove_dir_all(&venv);
        let site = tools.join("pybench-site");
        cmd!(
            sh,
            "python3 -m pip install --quiet --disable-pip-version-check --upgrade --target {site} {spec}"
        )
        .run()
        .with_context(|| format!("pip could not install {spec}; is python3 with pip installed?"))?;
        std::fs::create_dir_all(venv.join("bin"))?;
        let launcher = format!(
            "#!/bin/sh\nPYTHONPATH='{}' exec python3 \"$@\"\n",
            site.display()
        );
        std::fs::write(&python, launcher)?;
        cmd!(sh, "chmod +x {python}").run()?;
    }
    match installed_version(sh, &python) {
        Some(v) if v == PY_SDK_VERSION => Ok(python),
        other => bail!("after installing {spec}, {PY_SDK} is at {other:?}"),
    }
}

fn installed_version(sh: &Shell, python: &Path) -> Option<String> {
    if !python.exists() {
        return None;
    }
    let probe = format!("import importlib.metadata as m; print(m.version('{PY_SDK}'))");
    cmd!(sh, "{python} -c {probe}")
        .quiet()
        .ignore_stderr()
        .read()
        .ok()
        .map(|v| v.trim().to_owned())
}
