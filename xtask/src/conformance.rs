//! `cargo xtask conformance`: the official MCP conformance suite is the judge. It installs
//! Node 22 and the two pinned suites from the npm registry into `target/tools/`, builds
//! `mcp-conformance-client` and `mcp-conformance-server`, and runs every scenario of every
//! leg on its own (`--scenario`), so that exit codes and time-outs count. A leg's
//! expected failures live in `conformance/expected-failures/<leg>.txt`; the run fails on a
//! failure that is not listed there and on a listed one that passed (a stale entry). A
//! scenario that passes with nothing checked proves nothing, so it fails too unless
//! `conformance/expected-unchecked/<leg>.txt` lists it with its reason and issue; and results
//! that cannot be read are a failure, never zero checks. After a full run it writes
//! `docs/conformance.md`.
//! This file is long because installing the suites, running each leg scenario by scenario, judging
//! the results against the expected lists and writing the page all read the same leg definitions.

use std::fmt::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use xshell::{Shell, cmd};

use crate::{flags, project_root};

/// The suite's npm package and its two pinned releases.
const SUITE: &str = "@modelcontextprotocol/conformance";
const STABLE: &str = "0.1.16";
const NEXT: &str = "0.2.0-alpha.12";
/// The suite needs Node 22 or newer; the npm registry ships it as a package.
const NODE_MAJOR: u32 = 22;
/// The suite's own time-out of a client scenario, in milliseconds (its default).
const CLIENT_TIMEOUT_MS: &str = "30000";
/// Our time-out of one scenario run, whatever the suite does: a hang cannot stall CI.
const HARD_TIMEOUT: Duration = Duration::from_secs(120);

/// Which side of the protocol a leg judges.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Role {
    Client,
    Server,
}

/// What the server legs run against.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Target {
    /// `mcp-conformance-server` itself.
    Direct,
    /// `mcp-host serve --http` in passthrough mode in front of `mcp-conformance-server`: the
    /// gateway must be as invisible as the suite can tell.
    Gateway,
}

/// One run of a set of scenarios: a suite, a role, a spec version, a selection.
struct Leg {
    name: &'static str,
    role: Role,
    suite: &'static str,
    /// `--spec-version`, or none (each scenario at its default wire).
    spec: Option<&'static str>,
    /// Scenarios whose tag list holds this (a version or `extension`); `None` for all.
    tag: Option<&'static str>,
    target: Target,
    /// A client leg whose client is not told the revision (the suite always sets
    /// `MCP_CONFORMANCE_PROTOCOL_VERSION`; this leg unsets it), so it negotiates the era by
    /// itself, as a host does with a server it knows nothing about. On a gateway leg, the
    /// gateway's upstream connection negotiates its era (the dual-era upstream then speaks the
    /// stateless one) instead of being pinned to 2025-11-25.
    negotiate: bool,
}

const LEGS: &[Leg] = &[
    Leg {
        name: "client-stable",
        role: Role::Client,
        suite: STABLE,
        spec: None,
        tag: None,
        target: Target::Direct,
        negotiate: false,
    },
    Leg {
        name: "client-next-2025-11-25",
        role: Role::Client,
        suite: NEXT,
        spec: Some("2025-11-25"),
        tag: Some("2025-11-25"),
        target: Target::Direct,
        negotiate: false,
    },
    Leg {
        name: "client-next-2026-07-28",
        role: Role::Client,
        suite: NEXT,
        spec: Some("2026-07-28"),
        tag: Some("2026-07-28"),
        target: Target::Direct,
        negotiate: false,
    },
    Leg {
        name: "client-next-2026-07-28-negotiated",
        role: Role::Client,
        suite: NEXT,
        spec: Some("2026-07-28"),
        tag: Some("2026-07-28"),
        target: Target::Direct,
        negotiate: true,
    },
    Leg {
        name: "client-next-extensions",
        role: Role::Client,
        suite: NEXT,
        spec: None,
        tag: Some("extension"),
        target: Target::Direct,
        negotiate: false,
    },
    Leg {
        name: "server-stable",
        role: Role::Server,
        suite: STABLE,
        spec: None,
        tag: None,
        target: Target::Direct,
        negotiate: false,
    },
    Leg {
        name: "server-next-2025-11-25",
        role: Role::Server,
        suite: NEXT,
        spec: Some("2025-11-25"),
        tag: Some("2025-11-25"),
        target: Target::Direct,
        negotiate: false,
    },
    Leg {
        name: "server-next-2026-07-28",
        role: Role::Server,
        suite: NEXT,
        spec: Some("2026-07-28"),
        tag: Some("2026-07-28"),
        target: Target::Direct,
        negotiate: false,
    },
    Leg {
        name: "server-stable-gateway",
        role: Role::Server,
        suite: STABLE,
        spec: None,
        tag: None,
        target: Target::Gateway,
        negotiate: false,
    },
    Leg {
        name: "server-next-2026-07-28-gateway",
        role: Role::Server,
        suite: NEXT,
        spec: Some("2026-07-28"),
        tag: Some("2026-07-28"),
        target: Target::Gateway,
        negotiate: true,
    },
    Leg {
        name: "server-next-2025-11-25-gateway",
        role: Role::Server,
        suite: NEXT,
        spec: Some("2025-11-25"),
        tag: Some("2025-11-25"),
        target: Target::Gateway,
        negotiate: true,
    },
];

/// How one scenario went.
struct Outcome {
    scenario: String,
    /// Checks that succeeded.
    passed: u32,
    /// Checks that failed or warned (the suite counts a warning as a failure).
    failed: u32,
    /// Exit status, time-out or missing results, when that alone failed the scenario.
    trouble: Option<String>,
    /// The expected-failures entry's reason, if the leg lists the scenario.
    expected: Option<String>,
    /// The expected-unchecked entry's reason, if the leg lists the scenario as one the suite
    /// judges nothing of yet.
    unchecked_reason: Option<String>,
}

impl Outcome {
    fn ok(&self) -> bool {
        self.failed == 0 && self.trouble.is_none()
    }

    /// Passed with no check judged: every check was skipped or informational.
    fn unchecked(&self) -> bool {
        self.ok() && self.passed == 0
    }
}

struct LegResult {
    leg: &'static Leg,
    outcomes: Vec<Outcome>,
    /// Entries of either list that name a scenario this leg does not have, with the list.
    unknown: Vec<(&'static str, String)>,
}

/// The two lists a leg may keep under `conformance/`: one scenario a line, with its reason.
const EXPECTED_FAILURES: &str = "expected-failures";
const EXPECTED_UNCHECKED: &str = "expected-unchecked";

impl flags::Conformance {
    pub(crate) fn run(self, sh: &Shell) -> anyhow::Result<()> {
        let started = Instant::now();
        if let Some(suite) = &self.suite
            && suite != "stable"
            && suite != "next"
        {
            bail!("--suite is `stable` or `next`, not {suite:?}");
        }
        let roles = match (self.client, self.server) {
            (true, false) => vec![Role::Client],
            (false, true) => vec![Role::Server],
            _ => vec![Role::Client, Role::Server],
        };
        let legs: Vec<&'static Leg> = LEGS
            .iter()
            .filter(|l| roles.contains(&l.role))
            .filter(|l| match self.suite.as_deref() {
                Some("stable") => l.suite == STABLE,
                Some("next") => l.suite == NEXT,
                _ => true,
            })
            .filter(|l| self.leg.as_deref().is_none_or(|only| l.name == only))
            .collect();
        if legs.is_empty() {
            bail!(
                "no leg matches; the legs are {:?}",
                LEGS.iter().map(|l| l.name).collect::<Vec<_>>()
            );
        }
        let full = legs.len() == LEGS.len() && self.scenario.is_none();

        let root = project_root();
        let tools = root.join("target/tools");
        let node = crate::interop::node(sh, &tools, NODE_MAJOR)?;
        let node_version = cmd!(sh, "{node} --version").read()?;
        let mut suites = Vec::new();
        for version in [STABLE, NEXT] {
            if legs.iter().any(|l| l.suite == version) {
                suites.push((
                    version,
                    crate::interop::npm_package(
                        sh,
                        &tools.join(format!("conformance-{version}")),
                        SUITE,
                        version,
                        "dist/index.js",
                    )?,
                ));
            }
        }
        eprintln!("==> building the binaries (mcp-conformance, and mcp-host for the gateway legs)");
        // With mcp-host (mcp-cli) for the gateway legs.
        let bin = crate::binaries::build(sh)?;
        let out = root.join("target/conformance");

        let mut results = Vec::new();
        for leg in legs {
            let script = suites
                .iter()
                .find(|(v, _)| *v == leg.suite)
                .map(|(_, s)| s.clone())
                .context("suite not installed")?;
            let mut scenarios = list(sh, &node, &script, leg)?;
            if let Some(only) = &self.scenario {
                scenarios.retain(|s| s == only);
                if scenarios.is_empty() {
                    continue;
                }
            }
            let expected = listed(&root, EXPECTED_FAILURES, leg.name)?;
            let unchecked = listed(&root, EXPECTED_UNCHECKED, leg.name)?;
            eprintln!(
                "==> conformance {} ({SUITE}@{}{}): {} scenarios",
                leg.name,
                leg.suite,
                leg.spec
                    .map(|s| format!(", --spec-version {s}"))
                    .unwrap_or_default(),
                scenarios.len()
            );
            let server = match leg.role {
                Role::Server => Some(Server::start(&bin, leg, &out.join(leg.name))?),
                Role::Client => None,
            };
            let mut outcomes = Vec::new();
            for scenario in &scenarios {
                let dir = out.join(leg.name).join(scenario.replace('/', "__"));
                let mut outcome = match &server {
                    Some(server) => run_one(&node, &script, leg, scenario, &dir, |c| {
                        c.args(["server", "--url", &server.url]);
                    })?,
                    None => {
                        let client = bin.join("mcp-conformance-client");
                        // The suite splits the command on spaces and runs it in a shell.
                        let command = if leg.negotiate {
                            format!(
                                "env -u MCP_CONFORMANCE_PROTOCOL_VERSION {}",
                                client.display()
                            )
                        } else {
                            client.display().to_string()
                        };
                        run_one(&node, &script, leg, scenario, &dir, |c| {
                            c.args(["client", "--command", &command])
                                .args(["--timeout", CLIENT_TIMEOUT_MS]);
                        })?
                    }
                };
                let reason = |list: &[(String, String)]| {
                    list.iter()
                        .find(|(s, _)| s == scenario)
                        .map(|(_, r)| r.clone())
                };
                outcome.expected = reason(&expected);
                outcome.unchecked_reason = reason(&unchecked);
                eprintln!("    {}", line(&outcome));
                outcomes.push(outcome);
            }
            drop(server);
            let unknown = if self.scenario.is_none() {
                let unknown_in = |list: &'static str, entries: &[(String, String)]| {
                    entries
                        .iter()
                        .filter(|(s, _)| !scenarios.contains(s))
                        .map(|(s, _)| (list, s.clone()))
                        .collect::<Vec<_>>()
                };
                let mut unknown = unknown_in(EXPECTED_FAILURES, &expected);
                unknown.extend(unknown_in(EXPECTED_UNCHECKED, &unchecked));
                unknown
            } else {
                Vec::new()
            };
            results.push(LegResult {
                leg,
                outcomes,
                unknown,
            });
        }

        if let Some(only) = &self.scenario
            && results.is_empty()
        {
            bail!("no leg run here has a scenario named {only:?}; `list` of the suite names them");
        }
        let mut stale = false;
        if full {
            let date = cmd!(sh, "date -u +%Y-%m-%d").read()?;
            let page = render(&results, node_version.trim(), &date);
            let path = root.join("docs/conformance.md");
            let committed = std::fs::read_to_string(&path).unwrap_or_default();
            stale = !same_results(&committed, &page);
            std::fs::write(&path, page)?;
            eprintln!("==> wrote docs/conformance.md");
        }
        verdict(&results, started.elapsed())?;
        if self.check && stale {
            bail!(
                "docs/conformance.md showed other results than this run: commit the page it wrote"
            );
        }
        Ok(())
    }
}

/// The summary, and an error naming every unexpected failure and stale entry.
fn verdict(results: &[LegResult], took: Duration) -> anyhow::Result<()> {
    let mut problems = Vec::new();
    let (mut passed, mut failed) = (0, 0);
    for r in results {
        for o in &r.outcomes {
            if o.ok() {
                passed += 1;
            } else {
                failed += 1;
            }
            match (o.ok(), &o.expected) {
                (false, None) => problems.push(format!("{}: {}", r.leg.name, line(o))),
                (true, Some(_)) => problems.push(format!(
                    "{}: {} passed but is listed in conformance/{EXPECTED_FAILURES}/{}.txt (a stale entry)",
                    r.leg.name, o.scenario, r.leg.name
                )),
                _ => {}
            }
            match (o.unchecked(), &o.unchecked_reason) {
                (true, None) => problems.push(format!(
                    "{}: {} passed with nothing checked, which proves nothing; make it judge something, or list it in conformance/{EXPECTED_UNCHECKED}/{}.txt with its reason and issue",
                    r.leg.name, o.scenario, r.leg.name
                )),
                (false, Some(_)) if o.ok() => problems.push(format!(
                    "{}: {} had checks judged but is listed in conformance/{EXPECTED_UNCHECKED}/{}.txt (a stale entry)",
                    r.leg.name, o.scenario, r.leg.name
                )),
                _ => {}
            }
        }
        for (list, s) in &r.unknown {
            problems.push(format!(
                "{}: conformance/{list}/{}.txt names {s}, which the leg does not run (a stale entry)",
                r.leg.name, r.leg.name
            ));
        }
    }
    let expected = results
        .iter()
        .flat_map(|r| &r.outcomes)
        .filter(|o| !o.ok() && o.expected.is_some())
        .count();
    let unchecked = results
        .iter()
        .flat_map(|r| &r.outcomes)
        .filter(|o| o.unchecked())
        .count();
    eprintln!(
        "==> conformance: {passed} scenarios passed ({unchecked} with nothing checked), {failed} failed ({expected} expected), in {} s",
        took.as_secs()
    );
    if problems.is_empty() {
        return Ok(());
    }
    for p in &problems {
        eprintln!("    {p}");
    }
    bail!(
        "conformance: {} unexpected result(s); see above and target/conformance/",
        problems.len()
    )
}

fn line(o: &Outcome) -> String {
    let mut s = format!(
        "{} {}: {} checks passed, {} failed",
        if o.ok() { "ok  " } else { "FAIL" },
        o.scenario,
        o.passed,
        o.failed
    );
    if let Some(t) = &o.trouble {
        let _ = write!(s, "; {t}");
    }
    if let Some(reason) = &o.expected {
        let _ = write!(s, " (expected: {reason})");
    }
    if let Some(reason) = &o.unchecked_reason {
        let _ = write!(s, " (nothing checked, expected: {reason})");
    }
    s
}

/// Runs one scenario with the suite, under [`HARD_TIMEOUT`], and reads its checks.
fn run_one(
    node: &Path,
    script: &Path,
    leg: &Leg,
    scenario: &str,
    dir: &Path,
    role_args: impl FnOnce(&mut Command),
) -> anyhow::Result<Outcome> {
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir)?;
    let log = std::fs::File::create(dir.join("run.log"))?;
    let mut command = Command::new(node);
    command.arg(script);
    role_args(&mut command);
    command.args(["--scenario", scenario]).arg("-o").arg(dir);
    if let Some(spec) = leg.spec {
        command.args(["--spec-version", spec]);
    }
    // Its own process group, so that a time-out ends the client it started too.
    command
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log);
    let child = crate::bounded::spawn(&mut command, "the conformance suite")?;
    let status = crate::bounded::wait(child, HARD_TIMEOUT)?;
    let (checks, unreadable) = match count_checks(dir) {
        Ok(checks) => (checks, None),
        Err(e) => (Checks::default(), Some(format!("{e:#}"))),
    };
    let trouble = match status {
        None => Some(format!("timed out after {} s", HARD_TIMEOUT.as_secs())),
        Some(_) if unreadable.is_some() => unreadable,
        Some(s) if !s.success() && checks.failed == 0 => Some(format!("the suite exited with {s}")),
        Some(_) if !checks.found => Some("no checks.json was written".to_owned()),
        Some(_) => None,
    };
    Ok(Outcome {
        scenario: scenario.to_owned(),
        passed: checks.passed,
        failed: checks.failed,
        trouble,
        expected: None,
        unchecked_reason: None,
    })
}

/// The checks of one scenario run.
#[derive(Default)]
struct Checks {
    passed: u32,
    failed: u32,
    /// Whether any `checks.json` was there.
    found: bool,
}

/// Adds up the statuses in every `checks.json` under `dir`: SUCCESS passes, FAILURE and
/// WARNING fail (the suite fails a scenario on either); INFO and SKIPPED do not count. A
/// folder or file that cannot be read, or a file that is not an array of checks each with a
/// status, is an error: results we cannot read are not zero checks.
fn count_checks(dir: &Path) -> anyhow::Result<Checks> {
    let mut checks = Checks::default();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let entries = std::fs::read_dir(&d).with_context(|| format!("reading {}", d.display()))?;
        for entry in entries {
            let path = entry
                .with_context(|| format!("reading {}", d.display()))?
                .path();
            if path.is_dir() {
                stack.push(path);
            } else if path.file_name().is_some_and(|n| n == "checks.json") {
                checks.found = true;
                let text = std::fs::read_to_string(&path)
                    .with_context(|| format!("reading {}", path.display()))?;
                let list: Vec<serde_json::Value> = serde_json::from_str(&text)
                    .with_context(|| format!("{} is not a JSON array", path.display()))?;
                for check in &list {
                    match check["status"].as_str() {
                        Some("SUCCESS") => checks.passed += 1,
                        Some("FAILURE" | "WARNING") => checks.failed += 1,
                        Some(_) => {}
                        None => bail!("{}: a check without a status: {check}", path.display()),
                    }
                }
            }
        }
    }
    Ok(checks)
}

/// The scenarios of a leg, from the suite's `list`: its role's section, filtered by tag.
fn list(sh: &Shell, node: &Path, script: &Path, leg: &Leg) -> anyhow::Result<Vec<String>> {
    let text = cmd!(sh, "{node} {script} list").quiet().read()?;
    let heading = match leg.role {
        Role::Client => "Client scenarios",
        Role::Server => "Server scenarios",
    };
    let mut inside = false;
    let mut names = Vec::new();
    for line in text.lines() {
        if !line.starts_with(' ') {
            inside = line.starts_with(heading);
            continue;
        }
        let Some(rest) = line.trim().strip_prefix("- ") else {
            continue;
        };
        if !inside {
            continue;
        }
        let (name, tags) = rest.split_once(' ').unwrap_or((rest, ""));
        let tags: Vec<&str> = tags
            .trim()
            .trim_start_matches('[')
            .trim_end_matches(']')
            .split(',')
            .collect();
        if leg.tag.is_none_or(|t| tags.contains(&t)) {
            names.push(name.to_owned());
        }
    }
    if names.is_empty() {
        bail!("the suite listed no scenarios for {}", leg.name);
    }
    Ok(names)
}

/// `conformance/<list>/<leg>.txt` (`list` is [`EXPECTED_FAILURES`] or [`EXPECTED_UNCHECKED`]):
/// one scenario a line, then the reason, which names the open issue that builds what is
/// missing. `#` starts a comment. A missing file is an empty list.
fn listed(root: &Path, list: &str, leg: &str) -> anyhow::Result<Vec<(String, String)>> {
    let path = root
        .join("conformance")
        .join(list)
        .join(format!("{leg}.txt"));
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
    };
    let mut entries = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (scenario, reason) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
        let reason = reason.trim();
        if !names_an_issue(reason) {
            bail!(
                "{}:{}: an entry needs a reason that names the open issue building what it lacks, as `issue <number>`",
                path.display(),
                n + 1
            );
        }
        entries.push((scenario.to_owned(), reason.to_owned()));
    }
    Ok(entries)
}

/// Whether an expected failure's reason names an issue by its number: `issue 10`, the word on
/// its own, then the number. "no open issue yet" does not: a failure nobody is building is a
/// failure to fix or to open an issue for, not one to expect.
fn names_an_issue(reason: &str) -> bool {
    let lower = reason.to_ascii_lowercase();
    lower.match_indices("issue").any(|(at, word)| {
        let before = lower[..at].chars().next_back();
        let after = &lower[at + word.len()..];
        let digits = after.trim_start_matches(' ');
        before.is_none_or(|c| !c.is_ascii_alphanumeric())
            && digits.len() < after.len()
            && digits.starts_with(|c: char| c.is_ascii_digit())
    })
}

/// `mcp-conformance-server` on a free loopback port (and, for the gateway target,
/// `mcp-host serve` in front of it), ended when dropped.
struct Server {
    children: Vec<std::process::Child>,
    url: String,
}

impl Server {
    /// Starts the target; `dir` receives the gateway's file, home and log.
    fn start(bin: &Path, leg: &Leg, dir: &Path) -> anyhow::Result<Self> {
        let port = crate::interop::free_port()?;
        let child = Command::new(bin.join("mcp-conformance-server"))
            .args(["--port", &port.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .context("starting mcp-conformance-server")?;
        let mut server = Self {
            children: vec![child],
            // localhost, not 127.0.0.1: the DNS-rebinding scenario needs a local name.
            url: format!("http://localhost:{port}/mcp"),
        };
        crate::interop::wait_listening(port, "mcp-conformance-server")?;
        if leg.target == Target::Gateway {
            std::fs::create_dir_all(dir.join("home"))?;
            let file = dir.join("gateway.json");
            let mut upstream = serde_json::json!({
                "description": "mcp-conformance-server",
                "type": "http",
                "url": format!("http://127.0.0.1:{port}/mcp"),
            });
            if !leg.negotiate {
                // Pinned to the handshake era, as upstreams were before they spoke both.
                upstream["protocol_version"] = "2025-11-25".into();
            }
            let gateway = serde_json::json!({
                "mode": "passthrough",
                "mcpServers": {"everything": upstream},
                "logFile": dir.join("gateway.log"),
            });
            std::fs::write(&file, serde_json::to_vec_pretty(&gateway)?)?;
            let front = crate::interop::free_port()?;
            let child = Command::new(bin.join("mcp-host"))
                .arg("serve")
                .arg("--gateway")
                .arg(&file)
                .args(["--http", &format!("127.0.0.1:{front}")])
                .env("HOME", dir.join("home"))
                .env_remove("MCP_HOST_CONFIG")
                .env_remove("XDG_CONFIG_HOME")
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .context("starting mcp-host serve")?;
            server.children.push(child);
            server.url = format!("http://localhost:{front}/mcp");
            crate::interop::wait_listening(front, "mcp-host serve")?;
            // The gateway listens before its upstream is ready; a scenario starts once the
            // upstream has joined, which the gateway logs.
            wait_logged(&dir.join("gateway.log"), "upstream everything: ready")?;
        }
        Ok(server)
    }
}

/// Waits (up to a minute) until the file at `log` holds `line`.
fn wait_logged(log: &Path, line: &str) -> anyhow::Result<()> {
    for _ in 0..1200 {
        if std::fs::read_to_string(log).is_ok_and(|text| text.contains(line)) {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    anyhow::bail!("{} never said {line:?}", log.display())
}

impl Drop for Server {
    fn drop(&mut self) {
        // The gateway first, so it never sees its upstream vanish under a running scenario.
        for child in self.children.iter_mut().rev() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Whether two renderings of `docs/conformance.md` show the same results: the run's date and
/// Node version may differ.
fn same_results(a: &str, b: &str) -> bool {
    let results = |page: &str| -> Vec<String> {
        page.lines()
            .filter(|l| !l.starts_with("- Date: ") && !l.starts_with("- Node: "))
            .map(str::to_owned)
            .collect()
    };
    results(a) == results(b)
}

/// `docs/conformance.md`, from a full run.
fn render(results: &[LegResult], node: &str, date: &str) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "# Conformance results\n\n\
         <!-- Generated by `cargo xtask conformance`; do not edit. -->\n\n\
         The official suite, `{SUITE}`, is the judge of protocol behaviour.\n\
         `cargo xtask conformance` installs the pinned suites and Node from the npm registry, builds\n\
         `mcp-conformance-client` (which acts through `mcp-host`) and `mcp-conformance-server` (an\n\
         everything-style server on `mcp-session` and `mcp-http`'s server half), runs every scenario\n\
         of every leg on its own, and writes this page. The `-gateway` legs run the server scenarios\n\
         through `mcp-host serve --http` in passthrough mode in front of `mcp-conformance-server`.\n\
         The `-negotiated` leg runs the client without `MCP_CONFORMANCE_PROTOCOL_VERSION`, so it\n\
         chooses the era by itself, as a host does with a server it knows nothing about.\n\n\
         - Suites: `{SUITE}@{STABLE}` (stable) and `{SUITE}@{NEXT}` (next).\n\
         - Node: {node}.\n\
         - Date: {date}.\n\n\
         A scenario passes when the suite exits 0 within its time-out and no check is a FAILURE or a\n\
         WARNING (the suite fails a scenario on either). Checks that passed count SUCCESS; checks\n\
         that failed count FAILURE and WARNING; INFO and SKIPPED are not counted. A scenario that\n\
         passes with no check counted (every check skipped or informational) judged nothing: it\n\
         is shown as \"passed, nothing checked\", and the summary counts it apart; it fails the run\n\
         unless `conformance/expected-unchecked/<leg>.txt` lists it with the open issue that builds\n\
         what the suite needs to judge it. An expected failure is listed in\n\
         `conformance/expected-failures/<leg>.txt` with the open issue that builds what it needs.\n"
    );
    let _ = writeln!(s, "## Summary\n");
    let _ = writeln!(
        s,
        "| leg | suite | `--spec-version` | scenarios | passed | of them nothing checked | failed | of them expected |\n| --- | --- | --- | --- | --- | --- | --- | --- |"
    );
    for r in results {
        let passed = r.outcomes.iter().filter(|o| o.ok()).count();
        let unchecked = r.outcomes.iter().filter(|o| o.unchecked()).count();
        let failed = r.outcomes.len() - passed;
        let expected = r
            .outcomes
            .iter()
            .filter(|o| !o.ok() && o.expected.is_some())
            .count();
        let _ = writeln!(
            s,
            "| `{}` | {} | {} | {} | {passed} | {unchecked} | {failed} | {expected} |",
            r.leg.name,
            r.leg.suite,
            r.leg.spec.unwrap_or("none"),
            r.outcomes.len(),
        );
    }
    for r in results {
        let role = match (r.leg.role, r.leg.target) {
            (Role::Client, _) if r.leg.negotiate => {
                "client scenarios, run with `mcp-conformance-client` without `MCP_CONFORMANCE_PROTOCOL_VERSION` (it negotiates the era)"
            }
            (Role::Client, _) => "client scenarios, run with `mcp-conformance-client`",
            (Role::Server, Target::Direct) => {
                "server scenarios, run against `mcp-conformance-server`"
            }
            (Role::Server, Target::Gateway) if r.leg.negotiate => {
                "server scenarios, run through `mcp-host serve --http` in passthrough mode in front of `mcp-conformance-server`, the upstream connection negotiating its era (stateless)"
            }
            (Role::Server, Target::Gateway) => {
                "server scenarios, run through `mcp-host serve --http` in passthrough mode in front of `mcp-conformance-server`, the upstream connection pinned to 2025-11-25"
            }
        };
        let selection = match r.leg.tag {
            Some("extension") => "the extension scenarios".to_owned(),
            Some(tag) => format!("the scenarios tagged {tag}"),
            None => "every scenario".to_owned(),
        };
        let _ = writeln!(
            s,
            "\n## `{}`\n\n{SUITE}@{}, {selection}; {role}{}.\n",
            r.leg.name,
            r.leg.suite,
            r.leg
                .spec
                .map(|v| format!(", `--spec-version {v}`"))
                .unwrap_or_default()
        );
        let _ = writeln!(
            s,
            "| scenario | result | checks passed | checks failed | note |\n| --- | --- | --- | --- | --- |"
        );
        for o in &r.outcomes {
            let result = if o.unchecked() {
                "passed, nothing checked"
            } else if o.ok() {
                "passed"
            } else {
                "failed"
            };
            let mut note = o
                .expected
                .clone()
                .or_else(|| o.unchecked_reason.clone())
                .unwrap_or_default();
            if let Some(t) = &o.trouble {
                if !note.is_empty() {
                    note.push_str("; ");
                }
                note.push_str(t);
            }
            let _ = writeln!(
                s,
                "| `{}` | {result} | {} | {} | {} |",
                o.scenario,
                o.passed,
                o.failed,
                note.replace('|', "\\|")
            );
        }
    }
    let _ = writeln!(
        s,
        "\n## Not run\n\n\
         - The server extension scenarios of {NEXT} (`tasks-*`, `sep-2640-skills-*`): no issue builds\n  \
         those extensions yet."
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome(scenario: &str, passed: u32, failed: u32, expected: Option<&str>) -> Outcome {
        Outcome {
            scenario: scenario.to_owned(),
            passed,
            failed,
            trouble: None,
            expected: expected.map(str::to_owned),
            unchecked_reason: None,
        }
    }

    fn extensions() -> &'static Leg {
        LEGS.iter()
            .find(|l| l.name == "client-next-extensions")
            .unwrap()
    }

    #[test]
    fn a_pass_with_nothing_checked_fails_unless_listed() {
        let run = |outcome: Outcome| {
            verdict(
                &[LegResult {
                    leg: extensions(),
                    outcomes: vec![outcome],
                    unknown: Vec::new(),
                }],
                Duration::ZERO,
            )
        };
        assert!(run(outcome("judged", 3, 0, None)).is_ok());
        assert!(run(outcome("skipped", 0, 0, None)).is_err());
        let listed = |passed| Outcome {
            unchecked_reason: Some("issue 26: no Skills yet".to_owned()),
            ..outcome("skipped", passed, 0, None)
        };
        assert!(run(listed(0)).is_ok());
        // Listed, yet the suite judged it: the entry is stale.
        assert!(run(listed(2)).is_err());
        let stale = verdict(
            &[LegResult {
                leg: extensions(),
                outcomes: Vec::new(),
                unknown: vec![(EXPECTED_UNCHECKED, "gone".to_owned())],
            }],
            Duration::ZERO,
        );
        assert!(stale.is_err());
    }

    #[test]
    fn results_that_cannot_be_read_are_an_error_not_zero_checks() {
        let dir = std::env::temp_dir().join(format!("xtask-checks-{}", std::process::id()));
        let nested = dir.join("scenario");
        std::fs::create_dir_all(&nested).unwrap();
        let file = nested.join("checks.json");
        std::fs::write(
            &file,
            r#"[{"status":"SUCCESS"},{"status":"INFO"},{"status":"WARNING"}]"#,
        )
        .unwrap();
        let checks = count_checks(&dir).unwrap();
        assert_eq!((checks.passed, checks.failed, checks.found), (1, 1, true));
        for bad in ["", "{", r#"{"status":"SUCCESS"}"#, r#"[{"name":"x"}]"#] {
            std::fs::write(&file, bad).unwrap();
            assert!(count_checks(&dir).is_err(), "{bad:?}");
        }
        assert!(count_checks(&dir.join("missing")).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_pass_with_nothing_checked_is_counted_apart() {
        let leg = LEGS
            .iter()
            .find(|l| l.name == "client-next-extensions")
            .unwrap();
        let results = [LegResult {
            leg,
            outcomes: vec![
                outcome("judged", 9, 0, None),
                outcome("skipped", 0, 0, None),
                outcome("missing", 9, 3, Some("issue 99: not built")),
            ],
            unknown: Vec::new(),
        }];
        let page = render(&results, "v22", "2026-01-01");
        assert!(
            page.contains(
                "| `client-next-extensions` | 0.2.0-alpha.12 | none | 3 | 2 | 1 | 1 | 1 |"
            ),
            "{page}"
        );
        assert!(page.contains("| `skipped` | passed, nothing checked | 0 | 0 |"));
        assert!(page.contains("| `judged` | passed | 9 | 0 |"));
        assert!(page.contains("| `missing` | failed | 9 | 3 | issue 99: not built |"));
    }

    #[test]
    fn an_expected_failure_names_its_issue_by_number() {
        assert!(names_an_issue("issue 10: no 2026-07-28 envelope yet"));
        assert!(names_an_issue("built by Issue 7"));
        for reason in [
            "",
            "no open issue yet: needs an issue",
            "issue: none",
            "issue10",
            "tissue 5",
            "issue #",
        ] {
            assert!(!names_an_issue(reason), "{reason:?}");
        }
    }

    #[test]
    fn the_committed_page_is_stale_only_when_results_differ() {
        let leg = |passed| {
            [LegResult {
                leg: &LEGS[0],
                outcomes: vec![outcome("initialize", passed, 0, None)],
                unknown: Vec::new(),
            }]
        };
        let page = render(&leg(1), "v22.1.0", "2026-01-01");
        assert!(same_results(
            &page,
            &render(&leg(1), "v24.0.0", "2026-02-02")
        ));
        assert!(!same_results(
            &page,
            &render(&leg(2), "v22.1.0", "2026-01-01")
        ));
        assert!(!same_results("", &page));
    }
}
