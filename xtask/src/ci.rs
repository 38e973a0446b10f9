//! `cargo xtask ci`: everything CI checks, in the order that fails fastest.

use anyhow::Context as _;
use xshell::{Shell, cmd};

use crate::flags;

/// The cargo-deny release we install when it is missing.
const CARGO_DENY_VERSION: &str = "0.20.2";

impl flags::Ci {
    pub(crate) fn run(self, sh: &Shell) -> anyhow::Result<()> {
        // A clean run builds once, so incremental caches would only take disk (gigabytes of it),
        // and CI machines can be short of disk.
        sh.set_var("CARGO_INCREMENTAL", "0");
        step("format", || cmd!(sh, "cargo fmt --all -- --check").run())?;
        // Per package, so that feature unification cannot hide a missing feature (rustls'
        // admin/clippy).
        for package in workspace_packages(sh)? {
            step(&format!("clippy {package}"), || {
                cmd!(
                    sh,
                    "cargo clippy --package {package} --all-targets -- -D warnings"
                )
                .run()
            })?;
        }
        eprintln!("==> test");
        let (passed, failed) = run_tests(sh)?;
        step("doc", || {
            cmd!(sh, "cargo doc --workspace --no-deps")
                .env("RUSTDOCFLAGS", "-D warnings")
                .run()
        })?;
        flags::Interop {}.run(sh)?;
        flags::Conformance {
            client: false,
            server: false,
            suite: None,
            scenario: None,
            leg: None,
            check: true,
        }
        .run(sh)?;
        ensure_cargo_deny(sh)?;
        step("deny", || {
            cmd!(sh, "cargo deny --all-features check bans licenses sources").run()
        })?;
        advisories(sh)?;
        // The last line is the plain summary that CI reads.
        eprintln!("xtask ci: all checks passed");
        println!("ci: {passed} passed, {failed} failed");
        Ok(())
    }
}

fn step(name: &str, f: impl FnOnce() -> xshell::Result<()>) -> anyhow::Result<()> {
    eprintln!("==> {name}");
    f().with_context(|| format!("xtask ci: step `{name}` failed"))
}

/// Names of the workspace members, from `cargo metadata`.
pub(crate) fn workspace_packages(sh: &Shell) -> anyhow::Result<Vec<String>> {
    let json = cmd!(sh, "cargo metadata --format-version 1 --no-deps").read()?;
    let meta: serde_json::Value = serde_json::from_str(&json)?;
    let mut names: Vec<String> = meta["packages"]
        .as_array()
        .context("cargo metadata has no packages")?
        .iter()
        .filter_map(|p| p["name"].as_str().map(str::to_owned))
        .collect();
    names.sort();
    Ok(names)
}

fn ensure_cargo_deny(sh: &Shell) -> anyhow::Result<()> {
    if cmd!(sh, "cargo deny --version")
        .quiet()
        .ignore_stderr()
        .ignore_stdout()
        .run()
        .is_ok()
    {
        return Ok(());
    }
    step("install cargo-deny", || {
        cmd!(
            sh,
            "cargo install cargo-deny --locked --version {CARGO_DENY_VERSION}"
        )
        .run()
    })
}

/// The advisory check needs the RustSec database, which is fetched from GitHub; machines that
/// reach only the package registries cannot fetch it. It runs when a copy is already on disk,
/// and says plainly when it cannot run.
fn advisories(sh: &Shell) -> anyhow::Result<()> {
    let home = std::env::var_os("CARGO_HOME")
        .map(std::path::PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| std::path::PathBuf::from(h).join(".cargo")));
    let has_db = home
        .map(|h| h.join("advisory-dbs"))
        .and_then(|d| std::fs::read_dir(d).ok())
        .is_some_and(|mut entries| {
            entries.any(|e| e.is_ok_and(|e| e.path().join(".git").exists()))
        });
    if cmd!(sh, "cargo deny --all-features check advisories")
        .quiet()
        .ignore_stderr()
        .run()
        .is_ok()
    {
        eprintln!("==> deny advisories: ok");
        return Ok(());
    }
    if has_db {
        step("deny advisories (offline)", || {
            cmd!(
                sh,
                "cargo deny --all-features check --disable-fetch advisories"
            )
            .run()
        })
    } else {
        eprintln!(
            "==> deny advisories: not run, the RustSec database cannot be fetched from this network"
        );
        Ok(())
    }
}

/// Runs `cargo test --workspace`, echoing its output, and adds up the `test result:` lines.
fn run_tests(sh: &Shell) -> anyhow::Result<(u64, u64)> {
    use std::io::BufRead as _;
    use std::process::{Command, Stdio};

    let mut child = Command::new("cargo")
        .args(["test", "--workspace"])
        .current_dir(sh.current_dir())
        .env("CARGO_INCREMENTAL", "0")
        .stdout(Stdio::piped())
        .spawn()
        .context("starting cargo test")?;
    let (mut passed, mut failed) = (0, 0);
    if let Some(out) = child.stdout.take() {
        for line in std::io::BufReader::new(out).lines() {
            let line = line?;
            println!("{line}");
            if let Some(rest) = line.strip_prefix("test result: ") {
                passed += count(rest, " passed");
                failed += count(rest, " failed");
            }
        }
    }
    let status = child.wait()?;
    if !status.success() {
        anyhow::bail!("xtask ci: step `test` failed ({passed} passed, {failed} failed)");
    }
    Ok((passed, failed))
}

/// The number before `what` in a `test result:` line such as `ok. 37 passed; 0 failed; ...`.
fn count(line: &str, what: &str) -> u64 {
    line.split(';')
        .find_map(|part| {
            part.trim()
                .trim_start_matches("ok. ")
                .trim_start_matches("FAILED. ")
                .strip_suffix(what.trim_start())
        })
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(0)
}
