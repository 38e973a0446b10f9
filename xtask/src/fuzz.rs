//! `cargo xtask fuzz`: the fuzz targets of `fuzz/` (issue 20 §5), each run for a while with
//! libFuzzer, and `xtask ci`'s short run of them all.
//!
//! `fuzz/` is a cargo workspace of its own (like `bench/`), so libfuzzer-sys never reaches the
//! product crates' lock file or `cargo deny`. It is built here with plain `cargo build` and
//! libFuzzer's coverage flags, as cargo-fuzz would, so that nothing has to be installed:
//!
//! - with a `nightly` toolchain (through rustup) the build adds AddressSanitizer;
//! - otherwise it uses the stable toolchain with the same coverage instrumentation and no
//!   sanitizer (cargo-fuzz's `--sanitizer none`); the product crates forbid `unsafe`, so the
//!   sanitizer guards only their dependencies.
//!
//! The build goes to `target/fuzz/<mode>/`, and `--target` keeps the flags off build scripts
//! and proc-macros; the main build's cache is never touched. Each target reads the committed
//! corpus in `fuzz/corpus/<target>/` and writes what it finds to `target/fuzz/corpus/<target>/`,
//! so generated inputs are never committed by accident. A crash, a timeout or a leak fails the
//! command with the input's path (kept under `target/fuzz/artifacts/`) and how to replay it.

use std::fs;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use xshell::{Shell, cmd};

use crate::{bounded, flags, project_root, target_dir};

/// Every target in `fuzz/fuzz_targets/`.
pub(crate) const TARGETS: &[&str] = &[
    "jsonrpc",
    "sse",
    "ndjson",
    "www_authenticate",
    "config",
    "headers",
];

/// Seconds per target when `--seconds` is not given.
const DEFAULT_SECONDS: u64 = 300;

/// Seconds per target in `xtask ci`: six targets and the build stay within a few minutes.
pub(crate) const CI_SECONDS: u64 = 10;

/// Seconds one input may take before libFuzzer reports it as a hang.
const INPUT_TIMEOUT: u64 = 10;

/// libFuzzer's coverage instrumentation, as cargo-fuzz passes it; every flag is stable.
const COVERAGE_FLAGS: &[&str] = &[
    "-Cpasses=sancov-module",
    "-Cllvm-args=-sanitizer-coverage-level=4",
    "-Cllvm-args=-sanitizer-coverage-inline-8bit-counters",
    "-Cllvm-args=-sanitizer-coverage-pc-table",
    "-Cllvm-args=-sanitizer-coverage-trace-compares",
    "--cfg",
    "fuzzing",
];

impl flags::Fuzz {
    pub(crate) fn run(self, sh: &Shell) -> anyhow::Result<()> {
        let targets: Vec<&str> = match &self.target {
            Some(name) => match TARGETS.iter().find(|t| **t == name) {
                Some(t) => vec![*t],
                None => bail!(
                    "no fuzz target `{name}`; the targets are {}",
                    TARGETS.join(", ")
                ),
            },
            None => TARGETS.to_vec(),
        };
        let seconds = self.seconds.unwrap_or(DEFAULT_SECONDS);
        run(sh, &targets, seconds, self.stable)
    }
}

/// `xtask ci`'s step: every target for [`CI_SECONDS`].
pub(crate) fn ci(sh: &Shell) -> anyhow::Result<()> {
    eprintln!("==> fuzz ({CI_SECONDS} s per target)");
    run(sh, TARGETS, CI_SECONDS, false)
}

/// How the targets are built.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Mode {
    /// Nightly with AddressSanitizer.
    NightlyAsan,
    /// The default toolchain (stable), coverage only.
    Stable,
}

impl Mode {
    fn detect(sh: &Shell, force_stable: bool) -> Self {
        let nightly = !force_stable
            && cmd!(sh, "rustc +nightly --version")
                .quiet()
                .ignore_stderr()
                .read()
                .is_ok();
        if nightly {
            Self::NightlyAsan
        } else {
            Self::Stable
        }
    }

    fn name(self) -> &'static str {
        match self {
            Self::NightlyAsan => "nightly-asan",
            Self::Stable => "stable",
        }
    }

    fn rustflags(self) -> String {
        let mut flags = COVERAGE_FLAGS.join(" ");
        if self == Self::NightlyAsan {
            flags.push_str(" -Zsanitizer=address");
        }
        flags
    }
}

/// What one target's run came to.
#[derive(Debug, PartialEq)]
struct Stats {
    execs_per_sec: u64,
    runs: u64,
}

fn run(sh: &Shell, targets: &[&str], seconds: u64, force_stable: bool) -> anyhow::Result<()> {
    let root = project_root();
    let mode = Mode::detect(sh, force_stable);
    let out = target_dir().join("fuzz");
    let build_dir = out.join(mode.name());
    let host = host_triple(sh)?;
    eprintln!(
        "==> building fuzz/ ({}) into {}",
        mode.name(),
        build_dir.display()
    );
    // Stable mode uses the machine's default toolchain, rustup or not.
    let toolchain: &[&str] = match mode {
        Mode::NightlyAsan => &["+nightly"],
        Mode::Stable => &[],
    };
    // Not `--locked`: a dependency a product crate adds must not break this build; cargo
    // records it in fuzz/Cargo.lock, next to the versions already pinned there.
    let manifest = root.join("fuzz/Cargo.toml");
    let started = Instant::now();
    let built = cmd!(
        sh,
        "cargo {toolchain...} build --release --bins --manifest-path {manifest} --target {host}"
    )
    .env("CARGO_TARGET_DIR", &build_dir)
    .env("RUSTFLAGS", mode.rustflags())
    .run();
    built.context("building fuzz/ failed")?;
    eprintln!("    built in {} s", started.elapsed().as_secs());

    let bins = build_dir.join(&host).join("release");
    let mut rows = Vec::new();
    for &target in targets {
        let stats = run_target(&root, &out, &bins, target, seconds)?;
        eprintln!(
            "    {target}: {} execs/s ({} runs in {seconds} s)",
            stats.execs_per_sec, stats.runs
        );
        rows.push((target, stats));
    }
    eprintln!(
        "==> fuzz: no crash ({}, {seconds} s per target)",
        mode.name()
    );
    for (target, stats) in rows {
        eprintln!("    {target:<18} {:>9} execs/s", stats.execs_per_sec);
    }
    Ok(())
}

fn run_target(
    root: &Path,
    out: &Path,
    bins: &Path,
    target: &str,
    seconds: u64,
) -> anyhow::Result<Stats> {
    eprintln!("==> fuzz {target} for {seconds} s");
    let corpus = out.join("corpus").join(target);
    let artifacts = out.join("artifacts").join(target);
    let logs = out.join("logs");
    for dir in [&corpus, &artifacts, &logs] {
        fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let seeds = root.join("fuzz/corpus").join(target);
    let log_path = logs.join(format!("{target}.log"));
    let log = fs::File::create(&log_path)?;
    let exe = bins.join(target);
    let mut command = std::process::Command::new(&exe);
    command
        .arg(&corpus)
        .arg(&seeds)
        .arg(format!("-max_total_time={seconds}"))
        .arg(format!("-timeout={INPUT_TIMEOUT}"))
        .arg("-print_final_stats=1")
        .arg(format!("-artifact_prefix={}/", artifacts.display()))
        .stdout(log.try_clone()?)
        .stderr(log);
    let child = bounded::spawn(&mut command, &format!("fuzz target {target}"))?;
    // libFuzzer stops itself; the margin covers loading the corpus and a slow last input.
    let limit = Duration::from_secs(seconds + 120);
    let status = bounded::wait(child, limit)?;
    let text = fs::read_to_string(&log_path).unwrap_or_default();
    match status {
        Some(s) if s.success() => stats(&text).with_context(|| {
            format!(
                "fuzz target {target}: no final stats in {}",
                log_path.display()
            )
        }),
        Some(s) => {
            for line in failure(&text) {
                eprintln!("    | {line}");
            }
            match artifact(&text) {
                Some(input) => bail!(
                    "fuzz target {target} failed ({s}): the input is kept at {input}\n\
                     reproduce: {} {input}\n\
                     the whole log: {}",
                    exe.display(),
                    log_path.display()
                ),
                None => bail!(
                    "fuzz target {target} failed ({s}) without writing an input; see {}",
                    log_path.display()
                ),
            }
        }
        None => bail!(
            "fuzz target {target} did not stop within {} s and was killed; see {}",
            limit.as_secs(),
            log_path.display()
        ),
    }
}

/// libFuzzer's `-print_final_stats=1` lines.
fn stats(log: &str) -> Option<Stats> {
    let value = |key: &str| {
        log.lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|rest| rest.trim_start_matches(':').trim().parse().ok())
    };
    Some(Stats {
        execs_per_sec: value("stat::average_exec_per_sec")?,
        runs: value("stat::number_of_executed_units")?,
    })
}

/// The lines that say why a run failed: the panic with its message (before the backtrace),
/// and libFuzzer's own error and summary.
fn failure(log: &str) -> Vec<&str> {
    let lines: Vec<&str> = log.lines().collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        if line.contains("panicked at") {
            out.extend(
                lines[i..]
                    .iter()
                    .take_while(|l| !l.starts_with("stack backtrace") && !l.starts_with("note:"))
                    .take(12)
                    .copied(),
            );
        } else if line.contains("ERROR: libFuzzer") || line.starts_with("SUMMARY:") {
            out.push(*line);
        }
    }
    out
}

/// The input libFuzzer kept: `Test unit written to <path>`.
fn artifact(log: &str) -> Option<String> {
    log.lines()
        .rev()
        .find_map(|l| l.split_once("Test unit written to "))
        .map(|(_, path)| path.trim().to_owned())
}

fn host_triple(sh: &Shell) -> anyhow::Result<String> {
    let version = cmd!(sh, "rustc -vV").read()?;
    version
        .lines()
        .find_map(|l| l.strip_prefix("host: "))
        .map(str::to_owned)
        .context("`rustc -vV` names no host")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn final_stats_and_the_kept_input_are_read_from_the_log() {
        let done = "#5471782\tDONE   cov: 6 ft: 6 corp: 1/1b lim: 4096 exec/s: 1367945 rss: 27Mb\n\
                    Done 5471782 runs in 4 second(s)\n\
                    stat::number_of_executed_units: 5471782\n\
                    stat::average_exec_per_sec:     1367945\n\
                    stat::new_units_added:          0\n";
        assert_eq!(
            stats(done),
            Some(Stats {
                execs_per_sec: 1367945,
                runs: 5471782
            })
        );
        assert_eq!(stats("INFO: Seed: 1\n"), None);
        let crash = "thread '<unnamed>' panicked at fuzz_targets/jsonrpc.rs:57:13:\n\
                     ==1== ERROR: libFuzzer: deadly signal\n\
                     artifact_prefix='/t/fuzz/artifacts/jsonrpc/'; Test unit written to /t/fuzz/artifacts/jsonrpc/crash-506f\n\
                     Base64: eyJqc29u\n";
        assert_eq!(
            artifact(crash).as_deref(),
            Some("/t/fuzz/artifacts/jsonrpc/crash-506f")
        );
        assert_eq!(artifact(done), None);
        let log = "INFO: Seed: 1\n\
                   thread '<unnamed>' (7) panicked at fuzz_targets/headers.rs:124:14:\n\
                   a changed header passed: ()\n\
                   stack backtrace:\n   0: rust_begin_unwind\n\
                   ==7== ERROR: libFuzzer: deadly signal\n\
                   SUMMARY: libFuzzer: deadly signal\n";
        assert_eq!(
            failure(log),
            [
                "thread '<unnamed>' (7) panicked at fuzz_targets/headers.rs:124:14:",
                "a changed header passed: ()",
                "==7== ERROR: libFuzzer: deadly signal",
                "SUMMARY: libFuzzer: deadly signal",
            ]
        );
    }

    #[test]
    fn every_target_has_a_source_and_a_committed_corpus() {
        let root = project_root();
        let manifest = fs::read_to_string(root.join("fuzz/Cargo.toml")).unwrap();
        for target in TARGETS {
            let source = root.join(format!("fuzz/fuzz_targets/{target}.rs"));
            assert!(source.exists(), "{}", source.display());
            assert!(
                manifest.contains(&format!("name = \"{target}\"")),
                "fuzz/Cargo.toml has no [[bin]] {target}"
            );
            let count =
                fs::read_dir(root.join("fuzz/corpus").join(target)).map_or(0, |d| d.count());
            assert!(count > 0, "fuzz/corpus/{target} is empty");
        }
        let sources = fs::read_dir(root.join("fuzz/fuzz_targets"))
            .unwrap()
            .count();
        assert_eq!(
            sources,
            TARGETS.len(),
            "a target in fuzz_targets/ is not in TARGETS"
        );
    }
}
