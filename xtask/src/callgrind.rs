//! `cargo xtask callgrind`: instructions per `tools/call` round trip through each layer, counted
//! by `valgrind --tool=callgrind` and compared with `xtask/callgrind-baseline.txt` (issue 25
//! section 5). Time on a shared 2-core machine drifts by 15% run to run; instruction counts do
//! not, so a change that adds work to a call shows here whatever the machine's mood.
//!
//! The program measured is mcp-gateway's `examples/callgrind.rs` (debug, the build the tests
//! use), one layer per run: the codec alone, stdio over an in-memory pipe, HTTP over loopback,
//! and the gateway hop (an HTTP client through a passthrough gateway to an HTTP upstream).
//! callgrind counts only inside its `measured_calls`, so setup and the first call are left out.
//!
//! Run to run, the codec's count is the same to the instruction; the layers with a runtime,
//! sockets and hash maps seeded at random move by about 0.1% (seen: stdio 0.03%, HTTP 0.07%,
//! the gateway 0.12%), well inside the tolerance. `--bless` writes the baseline from this run.
//! Valgrind is Debian's, installed with apt-get when missing.

use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};
use xshell::{Shell, cmd};

use crate::{flags, project_root};

/// The layers, in the order of the table.
const LAYERS: [&str; 4] = ["protocol", "stdio", "http", "gateway"];

/// Calls per counted run: enough that a call's share of anything occasional is small.
const CALLS: u64 = 20;

/// How much more work per call than the baseline fails the check, in percent.
const TOLERANCE_PERCENT: f64 = 2.0;

impl flags::Callgrind {
    pub(crate) fn run(self, sh: &Shell) -> anyhow::Result<()> {
        let valgrind = valgrind(sh)?;
        let bins = crate::binaries::build(sh)?;
        let exe = bins.join("examples/callgrind");
        let baseline_path = project_root().join("xtask/callgrind-baseline.txt");
        let baseline = match std::fs::read_to_string(&baseline_path) {
            Ok(text) => parse_baseline(&text)?,
            Err(_) if self.bless => Vec::new(),
            Err(e) => {
                return Err(e).with_context(|| format!("reading {}", baseline_path.display()));
            }
        };
        let mut measured = Vec::new();
        for layer in LAYERS {
            let count = count(sh, &valgrind, &exe, layer)?;
            measured.push((layer.to_owned(), count / CALLS));
        }
        let verdict = judge(&measured, &baseline);
        eprintln!("{}", verdict.table);
        if self.bless {
            let mut text = String::from(
                "# Instructions per tools/call round trip, debug build, written by \
                 `cargo xtask callgrind --bless`.\n",
            );
            for (layer, per_call) in &measured {
                text.push_str(&format!("{layer} {per_call}\n"));
            }
            std::fs::write(&baseline_path, text)?;
            eprintln!("wrote {}", baseline_path.display());
            return Ok(());
        }
        if !verdict.failures.is_empty() {
            bail!(
                "more instructions per call than the baseline allows ({TOLERANCE_PERCENT}%): {}; \
                 if the work is wanted, run `cargo xtask callgrind --bless` and say why in the commit",
                verdict.failures.join(", ")
            );
        }
        Ok(())
    }
}

/// Debian's valgrind: the installed one, else installed now with apt-get (as the login leg
/// installs chromium).
fn valgrind(sh: &Shell) -> anyhow::Result<PathBuf> {
    let path = PathBuf::from("/usr/bin/valgrind");
    if path.exists() {
        return Ok(path);
    }
    eprintln!("==> installing valgrind with apt-get");
    let _frontend = sh.push_env("DEBIAN_FRONTEND", "noninteractive");
    let wait = ["-o", "DPkg::Lock::Timeout=300"];
    let install = || {
        cmd!(
            sh,
            "apt-get install -y --no-install-recommends {wait...} valgrind"
        )
        .run()
    };
    if install().is_err() {
        cmd!(sh, "apt-get update {wait...}")
            .run()
            .context("apt-get update failed: valgrind cannot be installed")?;
        install().context("apt-get could not install valgrind (run as root on Debian)")?;
    }
    anyhow::ensure!(
        path.exists(),
        "apt-get installed valgrind, but {path:?} is missing"
    );
    Ok(path)
}

/// Instructions counted in `measured_calls` for `CALLS` calls through `layer`.
fn count(sh: &Shell, valgrind: &Path, exe: &Path, layer: &str) -> anyhow::Result<u64> {
    let calls = CALLS.to_string();
    let output = cmd!(
        sh,
        "{valgrind} --tool=callgrind --callgrind-out-file=/dev/null --collect-atstart=no --toggle-collect=*measured_calls* {exe} {layer} {calls}"
    )
    .ignore_status()
    .output()?;
    let stderr = String::from_utf8_lossy(&output.stderr);
    if !output.status.success() {
        bail!("callgrind of the {layer} layer failed:\n{stderr}");
    }
    collected(&stderr).with_context(|| format!("no count in callgrind's output:\n{stderr}"))
}

/// The `Collected : N` of callgrind's summary.
fn collected(stderr: &str) -> Option<u64> {
    stderr
        .lines()
        .find_map(|l| l.split_once("Collected :"))
        .and_then(|(_, n)| n.trim().parse().ok())
}

fn parse_baseline(text: &str) -> anyhow::Result<Vec<(String, u64)>> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| {
            let (layer, n) = l
                .split_once(' ')
                .with_context(|| format!("a baseline line is `layer count`: {l:?}"))?;
            Ok((layer.to_owned(), n.trim().parse()?))
        })
        .collect()
}

/// The section `cargo xtask bench` adds to docs/benchmarks.md: the committed baseline, which
/// `xtask ci` holds every change to, so the page shows the counts CI checks.
pub(crate) fn page_section() -> anyhow::Result<String> {
    let path = project_root().join("xtask/callgrind-baseline.txt");
    let text =
        std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    let baseline = parse_baseline(&text)?;
    let mut out = format!(
        "\n## Instructions per call (callgrind)\n\n\
         Instructions per `tools/call` round trip through each layer, counted by \
         `valgrind --tool=callgrind` in the debug build (`cargo xtask callgrind`; the program is \
         `crates/mcp-gateway/examples/callgrind.rs`, one thread, {CALLS} calls counted after one \
         uncounted). Unlike the timings above, a count repeats run to run (within about 0.1%), \
         so `cargo xtask ci` checks every change against these, the committed baseline \
         (`xtask/callgrind-baseline.txt`): {TOLERANCE_PERCENT}% more work per call in any layer \
         fails CI until the baseline is renewed with `--bless` and the commit says why.\n\n\
         | layer | what a call crosses | instructions per call |\n| --- | --- | --- |\n"
    );
    for (layer, count) in &baseline {
        let what = match layer.as_str() {
            "protocol" => "request and result encoded and decoded (mcp-protocol), no session",
            "stdio" => "client and server sessions over an in-memory pipe (mcp-stdio)",
            "http" => "client and server over loopback TCP (mcp-http)",
            "gateway" => "the http client through a passthrough gateway to an http upstream",
            _ => "",
        };
        out.push_str(&format!("| {layer} | {what} | {count} |\n"));
    }
    Ok(out)
}

/// The table to print, and the layers over the tolerance.
struct Verdict {
    table: String,
    failures: Vec<String>,
}

fn judge(measured: &[(String, u64)], baseline: &[(String, u64)]) -> Verdict {
    let mut table = format!(
        "{:<10} {:>14} {:>14} {:>8}\n",
        "layer", "instr/call", "baseline", "change"
    );
    let mut failures = Vec::new();
    for (layer, now) in measured {
        let base = baseline.iter().find(|(l, _)| l == layer).map(|(_, n)| *n);
        let change = base.map(|b| (*now as f64 - b as f64) * 100.0 / b as f64);
        table.push_str(&format!(
            "{layer:<10} {now:>14} {:>14} {:>8}\n",
            base.map_or("-".to_owned(), |b| b.to_string()),
            change.map_or("-".to_owned(), |c| format!("{c:+.2}%")),
        ));
        match change {
            Some(c) if c > TOLERANCE_PERCENT => failures.push(format!("{layer} {c:+.2}%")),
            None => failures.push(format!("{layer} has no baseline")),
            _ => {}
        }
    }
    Verdict { table, failures }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_layer_over_the_tolerance_fails_and_one_within_or_under_passes() {
        let baseline = parse_baseline("# comment\nprotocol 1000\nstdio 1000\nhttp 1000\n").unwrap();
        assert_eq!(baseline.len(), 3);
        let measured = [
            ("protocol".to_owned(), 1019),
            ("stdio".to_owned(), 1021),
            ("http".to_owned(), 500),
            ("gateway".to_owned(), 10),
        ];
        let verdict = judge(&measured, &baseline);
        assert_eq!(
            verdict.failures,
            ["stdio +2.10%", "gateway has no baseline"]
        );
        assert!(verdict.table.contains("protocol"), "{}", verdict.table);
        assert_eq!(
            collected("==1== Events    : Ir\n==1== Collected : 2044682\n"),
            Some(2044682)
        );
    }
}
