//! The authorization-server leg of `cargo xtask conformance`. mcp-host ships no authorization
//! server; the one judged here is npm's `oidc-provider` as `xtask/oidc/peer.mjs` configures it,
//! the same configuration `cargo xtask interop`'s oidc-provider leg logs in through and whose
//! tokens the gateway's `auth` block is tested against there. So the leg checks that the
//! authorization server our gateway is tested with is a conforming one, as we set it up.
//!
//! The suite's `authorization` command runs both scenarios in one process (the code grant
//! reads the endpoints the metadata scenario found), as a pre-registered public client
//! (`conformance-suite`, PKCE, its loopback callback as redirect URI). It prints the
//! authorization address for a person to open; here the peer script's Chromium goes through
//! the provider's login and consent pages from it, up to the suite's callback.

use std::io::{BufRead as _, BufReader, Write as _};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use anyhow::Context as _;
use xshell::{Shell, cmd};

use super::{Checks, HARD_TIMEOUT, Outcome, count_checks};
use crate::bounded::{self, PEER_STEP};
use crate::interop::{free_port, wait_listening};

/// The client the provider knows beforehand for the suite (`peer.mjs serve --suite-callback`).
const CLIENT_ID: &str = "conformance-suite";

/// Runs the suite's authorization-server scenarios against the provider and returns the
/// outcomes of `scenarios` (those asked for; the suite runs both either way). `dir` receives
/// the provider's log, the suite's output and its results.
pub(super) fn run(
    sh: &Shell,
    node: &Path,
    script: &Path,
    scenarios: &[String],
    dir: &Path,
) -> anyhow::Result<Vec<Outcome>> {
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir)?;
    crate::login::chromium(sh)?;
    let oidc = crate::project_root().join("target/tools/oidc");
    let peer = crate::oidc::install(sh, &oidc)?;
    let (auth_port, mcp_port, callback) = (free_port()?, free_port()?, free_port()?);
    let issuer = format!("http://127.0.0.1:{auth_port}");
    let log = std::fs::File::create(dir.join("provider.log"))?;
    let mut provider = Command::new(node)
        .arg(&peer)
        .args(["serve", &auth_port.to_string(), &mcp_port.to_string()])
        .args(["--suite-callback", &callback.to_string()])
        .current_dir(&oidc)
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        .spawn()
        .context("starting oidc-provider")?;
    let outcome = wait_listening(auth_port, "oidc-provider")
        .and_then(|()| wait_listening(mcp_port, "the MCP server behind oidc-provider"))
        .and_then(|()| {
            suite(
                Suite {
                    node,
                    script,
                    peer: &peer,
                    oidc: &oidc,
                    issuer: &issuer,
                    // Tokens for a resource the provider serves: the peer's MCP server.
                    resource: &format!("http://127.0.0.1:{mcp_port}/mcp"),
                    callback,
                },
                dir,
            )
        });
    let _ = provider.kill();
    let _ = provider.wait();
    let (status, results) = outcome?;
    let mut outcomes: Vec<Outcome> = scenarios.iter().map(|s| judge(s, &results)).collect();
    // The suite exits 1 when a check failed; an exit no failed check explains (or a time-out)
    // fails every scenario of the run.
    let trouble = match status {
        None => Some(format!("timed out after {} s", HARD_TIMEOUT.as_secs())),
        Some(s) if !s.success() && outcomes.iter().all(|o| o.failed == 0) => {
            Some(format!("the suite exited with {s}"))
        }
        Some(_) => None,
    };
    for o in &mut outcomes {
        if o.trouble.is_none() {
            o.trouble.clone_from(&trouble);
        }
    }
    Ok(outcomes)
}

/// What the suite's run needs.
struct Suite<'a> {
    node: &'a Path,
    script: &'a Path,
    peer: &'a Path,
    oidc: &'a Path,
    issuer: &'a str,
    resource: &'a str,
    callback: u16,
}

/// Runs the suite's `authorization` command, has the browser go through the provider's pages
/// from the address it prints, and returns its exit status (`None`: timed out) and the folder
/// of its results.
fn suite(
    s: Suite<'_>,
    dir: &Path,
) -> anyhow::Result<(Option<std::process::ExitStatus>, std::path::PathBuf)> {
    let results = dir.join("results");
    let mut command = Command::new(s.node);
    command
        .arg(s.script)
        .args(["authorization", "--url", s.issuer, "--client-id", CLIENT_ID])
        .args(["--port", &s.callback.to_string(), "--resource", s.resource])
        .arg("-o")
        .arg(&results)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(dir.join("suite.stderr.log"))?);
    let mut child = bounded::spawn(
        &mut command,
        "the conformance suite's authorization command",
    )?;
    let stdout = child.stdout.take().context("stdout was piped")?;
    let mut copy = std::fs::File::create(dir.join("run.log"))?;
    let (lines, shown) = mpsc::channel();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = writeln!(copy, "{line}");
            let _ = lines.send(line);
        }
    });
    let prefix = format!("{}/auth?", s.issuer);
    let address = loop {
        match shown.recv_timeout(Duration::from_secs(60)) {
            Ok(line) if line.starts_with(&prefix) => break Some(line),
            Ok(_) => {}
            // Ended (or silent) before asking for a login: its results say why.
            Err(_) => break None,
        }
    };
    if let Some(address) = address {
        let (node, peer) = (s.node, s.peer);
        let sh = Shell::new()?;
        sh.change_dir(s.oidc);
        let page = bounded::read(
            cmd!(sh, "{node} {peer} browse {address}"),
            "the provider's pages in Chromium",
            PEER_STEP,
        );
        if let Err(e) = page {
            let _ = bounded::wait(child, Duration::ZERO);
            return Err(e);
        }
    }
    let status = bounded::wait(child, HARD_TIMEOUT)?;
    let _ = reader.join();
    Ok((status, results))
}

/// The outcome of one scenario from the suite's results folder: the suite writes each to
/// `authorization-server-<scenario>-<time>/checks.json`. Results that are missing or cannot
/// be read fail it.
fn judge(scenario: &str, results: &Path) -> Outcome {
    let prefix = format!("authorization-server-{scenario}-");
    let found = std::fs::read_dir(results)
        .ok()
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(&prefix))
        });
    let (checks, trouble) = match found.as_deref().map(count_checks) {
        Some(Ok(checks)) => (checks, None),
        Some(Err(e)) => (Checks::default(), Some(format!("{e:#}"))),
        None => (
            Checks::default(),
            Some(format!("no results of {scenario} in {}", results.display())),
        ),
    };
    Outcome {
        scenario: scenario.to_owned(),
        passed: checks.passed,
        failed: checks.failed,
        generic: checks.generic,
        skipped: checks.skipped,
        trouble,
        expected: None,
        unchecked_reason: None,
    }
}
