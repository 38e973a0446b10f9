//! `cargo xtask ci`: everything CI checks, in the order that fails fastest.

use std::time::{Duration, Instant};

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
        let mut times = Times::default();
        times.run("format", || {
            step("format", || cmd!(sh, "cargo fmt --all -- --check").run())
        })?;
        // Every target of every crate linted once, with the workspace's features.
        times.run("clippy", || {
            step("clippy", || {
                cmd!(sh, "cargo clippy --workspace --all-targets -- -D warnings").run()
            })
        })?;
        // Then each package's libraries and binaries on their own, with their default features
        // and no dev-dependencies, so that feature unification cannot hide a missing feature
        // (rustls' admin/clippy); the combinations of optional features follow in `features`.
        times.run("clippy per package", || {
            for (package, targets) in package_targets(sh)? {
                step(&format!("clippy {package} ({})", targets.join(" ")), || {
                    cmd!(
                        sh,
                        "cargo clippy --package {package} {targets...} -- -D warnings"
                    )
                    .run()
                })?;
            }
            Ok(())
        })?;
        eprintln!("==> test");
        let (passed, failed) = times.run("test", || {
            // The binaries first, with the tests' features (so the tests' build reuses it),
            // and the testkit's taken from there rather than built again in a folder of
            // their own (mcp-testkit's lib.rs).
            let bins = crate::binaries::build(sh)?;
            run_tests(sh, &bins)
        })?;
        // Each crate with optional features, built with the combinations a consumer picks
        // (after the tests, whose dependencies its few tests reuse).
        times.run("features", || crate::features::ci(sh))?;
        times.run("doc", || {
            step("doc", || {
                cmd!(sh, "cargo doc --workspace --no-deps")
                    .env("RUSTDOCFLAGS", "-D warnings")
                    .run()
            })
        })?;
        // After `doc`, whose dependency metadata rustdoc's JSON output reuses.
        times.run("external types", || crate::external_types::ci(sh))?;
        // The product crates as crates.io would take them (seconds: no build).
        times.run("publish", || crate::publish::check(sh, false))?;
        // The fuzz targets, briefly: a short run catches a broken property or harness.
        times.run("fuzz", || crate::fuzz::ci(sh))?;
        times.run("interop", || {
            flags::Interop {
                long: false,
                tasks: false,
                oidc: false,
            }
            .run(sh)
        })?;
        // The Secret Service keyring (gnome-keyring on a bus of its own): seconds once built;
        // the kernel keyring is covered by the ordinary tests.
        times.run("keyring", || crate::keyring::run(sh))?;
        times.run("netfault", || {
            flags::Netfault {
                steady_seconds: None,
            }
            .run(sh)
        })?;
        // Instructions per `tools/call` through each layer against the committed baseline
        // (issue 25 §5): counts, not time, so added work fails whatever the machine's mood.
        times.run("callgrind", || flags::Callgrind { bless: false }.run(sh))?;
        // The gateway under 40 clients for 30 s while its upstreams are killed in turn (the
        // long run, `cargo xtask soak`, is not part of `ci`).
        times.run("soak", || crate::soak::short(sh))?;
        times.run("conformance", || {
            flags::Conformance {
                client: false,
                server: false,
                suite: None,
                scenario: None,
                leg: None,
                check: true,
            }
            .run(sh)
        })?;
        times.run("deny", || {
            ensure_cargo_deny(sh)?;
            step("deny", || {
                cmd!(sh, "cargo deny --all-features check bans licenses sources").run()
            })?;
            advisories(sh)
        })?;
        // Three gateway replicas behind nginx sharing one Redis, 30 clients for 25 s while a
        // replica is killed, then mcp-cli's Redis tests (the long run, `cargo xtask cluster`,
        // is not part of `ci`). Last, so that a failure here hides no other step's result.
        times.run("cluster", || crate::cluster::short(sh))?;
        times.report();
        // The last line is the plain summary that CI reads.
        eprintln!("xtask ci: all checks passed");
        println!("ci: {passed} passed, {failed} failed");
        Ok(())
    }
}

/// How long each step took, printed as it ends and again at the end, so that a CI log shows
/// where the time goes.
#[derive(Default)]
struct Times(Vec<(&'static str, Duration)>);

impl Times {
    fn run<T>(
        &mut self,
        name: &'static str,
        f: impl FnOnce() -> anyhow::Result<T>,
    ) -> anyhow::Result<T> {
        let started = Instant::now();
        let outcome = f();
        let took = started.elapsed();
        eprintln!("<== {name}: {} s", took.as_secs());
        self.0.push((name, took));
        outcome
    }

    fn report(&self) {
        let total: Duration = self.0.iter().map(|(_, t)| *t).sum();
        eprintln!("==> times (s):");
        for (name, took) in &self.0 {
            eprintln!("    {name:<20} {:>5}", took.as_secs());
        }
        eprintln!("    {:<20} {:>5}", "total", total.as_secs());
    }
}

fn step(name: &str, f: impl FnOnce() -> xshell::Result<()>) -> anyhow::Result<()> {
    eprintln!("==> {name}");
    f().with_context(|| format!("xtask ci: step `{name}` failed"))
}

/// Each workspace member with the target flags of what it ships: `--lib` and/or `--bins`.
fn package_targets(sh: &Shell) -> anyhow::Result<Vec<(String, Vec<&'static str>)>> {
    let json = cmd!(sh, "cargo metadata --format-version 1 --no-deps").read()?;
    let meta: serde_json::Value = serde_json::from_str(&json)?;
    let mut out = Vec::new();
    for package in meta["packages"]
        .as_array()
        .context("cargo metadata has no packages")?
    {
        let name = package["name"]
            .as_str()
            .context("a package without a name")?;
        let kinds: Vec<&str> = package["targets"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|t| t["kind"].as_array().into_iter().flatten())
            .filter_map(serde_json::Value::as_str)
            .collect();
        let mut targets = Vec::new();
        if kinds
            .iter()
            .any(|k| matches!(*k, "lib" | "rlib" | "proc-macro"))
        {
            targets.push("--lib");
        }
        if kinds.contains(&"bin") {
            targets.push("--bins");
        }
        if !targets.is_empty() {
            out.push((name.to_owned(), targets));
        }
    }
    out.sort();
    Ok(out)
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
/// reach only the package registries cannot fetch it. "Could not fetch" and "found something"
/// both exit 1, so they are told apart by cargo-deny's JSON output: a summary line appears only
/// when the check ran. An advisory found fails the gate with its text; a database that cannot
/// be fetched falls back to a copy on disk, and with none the check says plainly that it did
/// not run.
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
    let check = |offline: &[&str]| -> anyhow::Result<Advisories> {
        let out = cmd!(
            sh,
            "cargo deny --format json --all-features check {offline...} advisories"
        )
        .quiet()
        .ignore_status()
        .output()?;
        Ok(judge_advisories(
            out.status.success(),
            &String::from_utf8_lossy(&out.stderr),
        ))
    };
    let verdict = match check(&[])? {
        Advisories::Unfetchable(why) if has_db => {
            eprintln!(
                "==> deny advisories: the database cannot be fetched ({why}); the copy on disk"
            );
            check(&["--disable-fetch"])?
        }
        other => other,
    };
    match verdict {
        Advisories::Clean => {
            eprintln!("==> deny advisories: ok");
            Ok(())
        }
        Advisories::Unfetchable(why) => {
            eprintln!(
                "==> deny advisories: not run, the RustSec database cannot be fetched from this network and none is on disk ({why})"
            );
            Ok(())
        }
        Advisories::Found(found) => {
            eprintln!("==> deny advisories: {} found", found.len());
            for f in &found {
                eprintln!("    {f}");
            }
            anyhow::bail!(
                "xtask ci: step `deny advisories` failed: {} found",
                found.len()
            )
        }
        Advisories::Broken(output) => {
            eprintln!("{output}");
            anyhow::bail!(
                "xtask ci: step `deny advisories` failed, and not for want of the database"
            )
        }
    }
}

/// What one run of `cargo deny --format json check advisories` said.
#[derive(Debug, PartialEq)]
enum Advisories {
    Clean,
    /// Error diagnostics, each as `code: message`.
    Found(Vec<String>),
    /// The database could not be fetched, with cargo-deny's reason.
    Unfetchable(String),
    /// Any other failure, with the whole output.
    Broken(String),
}

/// Reads cargo-deny's JSON lines (`log`, `diagnostic`, `summary`).
fn judge_advisories(success: bool, stderr: &str) -> Advisories {
    let lines: Vec<serde_json::Value> = stderr
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let found: Vec<String> = lines
        .iter()
        .filter(|l| l["type"] == "diagnostic" && l["fields"]["severity"] == "error")
        .map(|l| {
            format!(
                "{}: {}",
                l["fields"]["code"].as_str().unwrap_or("error"),
                l["fields"]["message"].as_str().unwrap_or("(no message)")
            )
        })
        .collect();
    let ran = lines.iter().any(|l| l["type"] == "summary");
    let fetch_error = lines.iter().find_map(|l| {
        let message = l["fields"]["message"].as_str()?;
        (l["type"] == "log"
            && l["fields"]["level"] == "ERROR"
            && message.contains("failed to fetch advisory database"))
        .then(|| message.lines().next().unwrap_or(message).to_owned())
    });
    match (success, found.is_empty(), ran, fetch_error) {
        (_, false, _, _) => Advisories::Found(found),
        (true, true, true, _) => Advisories::Clean,
        (false, true, false, Some(why)) => Advisories::Unfetchable(why),
        _ => Advisories::Broken(stderr.to_owned()),
    }
}

/// Runs `cargo test --workspace`, echoing its output, and adds up the `test result:` lines.
fn run_tests(sh: &Shell, testkit_bins: &std::path::Path) -> anyhow::Result<(u64, u64)> {
    use std::io::BufRead as _;
    use std::process::{Command, Stdio};

    let mut child = Command::new("cargo")
        .args(["test", "--workspace"])
        .current_dir(sh.current_dir())
        .env("CARGO_INCREMENTAL", "0")
        .env("MCP_TESTKIT_BIN_DIR", testkit_bins)
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

#[cfg(test)]
mod tests {
    use super::*;

    const SUMMARY_CLEAN: &str = r#"{"type":"summary","fields":{"advisories":{"errors":0,"warnings":0,"notes":0,"helps":0}}}"#;

    #[test]
    fn an_advisory_found_is_told_apart_from_a_database_out_of_reach() {
        let found = format!(
            "{}\n{}\n",
            r#"{"type":"diagnostic","fields":{"severity":"error","code":"vulnerability","message":"Use-after-free in foo"}}"#,
            r#"{"type":"summary","fields":{"advisories":{"errors":1,"warnings":0,"notes":0,"helps":0}}}"#
        );
        assert_eq!(
            judge_advisories(false, &found),
            Advisories::Found(vec!["vulnerability: Use-after-free in foo".to_owned()])
        );
        let unfetchable = r#"{"type":"log","fields":{"timestamp":"t","level":"ERROR","message":"failed to fetch advisory database https://github.com/RustSec/advisory-db with cli: exit status 128\nfatal: unable to access"}}"#;
        assert_eq!(
            judge_advisories(false, unfetchable),
            Advisories::Unfetchable(
                "failed to fetch advisory database https://github.com/RustSec/advisory-db with cli: exit status 128".to_owned()
            )
        );
        assert_eq!(judge_advisories(true, SUMMARY_CLEAN), Advisories::Clean);
        // A failure that is neither: a broken config, a crash, no output at all.
        for broken in [
            r#"{"type":"log","fields":{"level":"ERROR","message":"failed to parse deny.toml"}}"#,
            "thread 'main' panicked",
            "",
        ] {
            assert!(
                matches!(judge_advisories(false, broken), Advisories::Broken(_)),
                "{broken:?}"
            );
        }
        // Success without a summary did not check anything.
        assert!(matches!(judge_advisories(true, ""), Advisories::Broken(_)));
    }
}
