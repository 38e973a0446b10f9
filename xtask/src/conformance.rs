//! `cargo xtask conformance`: the official MCP conformance suite is the judge. It installs
//! Node 22 and the two pinned suites from the npm registry into `target/tools/`, builds
//! `mcp-conformance-client` and `mcp-conformance-server`, and runs every scenario of every
//! leg on its own (`--scenario`), so that exit codes and time-outs count. A leg's
//! expected failures live in `conformance/expected-failures/<leg>.txt`; the run fails on a
//! failure that is not listed there and on a listed one that passed (a stale entry). A
//! scenario that passes with nothing checked proves nothing, so it fails too unless
//! `conformance/expected-unchecked/<leg>.txt` lists it with its reason and issue; and results
//! that cannot be read are a failure, never zero checks. A check the suite adds to every
//! scenario (`wire-schema-valid`) does not count as judging the scenario's subject. Both lists
//! only shrink: an entry whose scenario passes (or judges something) fails the run until it is
//! removed. A full run also says which scenarios of the suites no leg runs, each with its
//! reason from `conformance/not-run.txt` (one without fails the run), and writes
//! `docs/conformance.md`. The extension server legs run their scenarios a few at a time.
//! This file is long because installing the suites, running each leg scenario by scenario, judging
//! the results against the expected lists and writing the page all read the same leg definitions.

use std::fmt::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use xshell::{Shell, cmd};

use crate::{flags, project_root};

/// A child module in a file beside this one (the crate keeps no `conformance/` folder).
#[path = "conformance_authorization.rs"]
mod authorization_server;

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
    /// The suite's authorization-server scenarios, against the provider our gateway is tested
    /// with (`conformance_authorization.rs`).
    AuthorizationServer,
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
    /// How many of its scenarios run at once. Each scenario opens its own connections and
    /// sessions, so a server leg's scenarios may share the server; the older legs stay one at
    /// a time, as they were measured.
    concurrency: usize,
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
        concurrency: 1,
    },
    Leg {
        name: "client-next-2025-03-26",
        role: Role::Client,
        suite: NEXT,
        spec: Some("2025-03-26"),
        tag: Some("2025-03-26"),
        target: Target::Direct,
        negotiate: false,
        concurrency: 1,
    },
    Leg {
        name: "client-next-2025-11-25",
        role: Role::Client,
        suite: NEXT,
        spec: Some("2025-11-25"),
        tag: Some("2025-11-25"),
        target: Target::Direct,
        negotiate: false,
        concurrency: 1,
    },
    Leg {
        name: "client-next-2026-07-28",
        role: Role::Client,
        suite: NEXT,
        spec: Some("2026-07-28"),
        tag: Some("2026-07-28"),
        target: Target::Direct,
        negotiate: false,
        concurrency: 1,
    },
    Leg {
        name: "client-next-2026-07-28-negotiated",
        role: Role::Client,
        suite: NEXT,
        spec: Some("2026-07-28"),
        tag: Some("2026-07-28"),
        target: Target::Direct,
        negotiate: true,
        concurrency: 1,
    },
    Leg {
        name: "client-next-extensions",
        role: Role::Client,
        suite: NEXT,
        spec: None,
        tag: Some("extension"),
        target: Target::Direct,
        negotiate: false,
        concurrency: 1,
    },
    Leg {
        name: "server-stable",
        role: Role::Server,
        suite: STABLE,
        spec: None,
        tag: None,
        target: Target::Direct,
        negotiate: false,
        concurrency: 1,
    },
    Leg {
        name: "server-next-2025-11-25",
        role: Role::Server,
        suite: NEXT,
        spec: Some("2025-11-25"),
        tag: Some("2025-11-25"),
        target: Target::Direct,
        negotiate: false,
        concurrency: 1,
    },
    Leg {
        name: "server-next-2026-07-28",
        role: Role::Server,
        suite: NEXT,
        spec: Some("2026-07-28"),
        tag: Some("2026-07-28"),
        target: Target::Direct,
        negotiate: false,
        concurrency: 1,
    },
    Leg {
        name: "server-next-extensions",
        role: Role::Server,
        suite: NEXT,
        spec: None,
        tag: Some("extension"),
        target: Target::Direct,
        negotiate: false,
        concurrency: 4,
    },
    Leg {
        name: "server-stable-gateway",
        role: Role::Server,
        suite: STABLE,
        spec: None,
        tag: None,
        target: Target::Gateway,
        negotiate: false,
        concurrency: 1,
    },
    Leg {
        name: "server-next-2026-07-28-gateway",
        role: Role::Server,
        suite: NEXT,
        spec: Some("2026-07-28"),
        tag: Some("2026-07-28"),
        target: Target::Gateway,
        negotiate: true,
        concurrency: 1,
    },
    Leg {
        name: "server-next-2025-11-25-gateway",
        role: Role::Server,
        suite: NEXT,
        spec: Some("2025-11-25"),
        tag: Some("2025-11-25"),
        target: Target::Gateway,
        negotiate: true,
        concurrency: 1,
    },
    Leg {
        name: "server-next-extensions-gateway",
        role: Role::Server,
        suite: NEXT,
        spec: None,
        tag: Some("extension"),
        target: Target::Gateway,
        negotiate: true,
        concurrency: 4,
    },
    Leg {
        name: "authorization-server-oidc-provider",
        role: Role::AuthorizationServer,
        suite: NEXT,
        spec: None,
        tag: None,
        target: Target::Direct,
        negotiate: false,
        concurrency: 1,
    },
];

/// How one scenario went.
struct Outcome {
    scenario: String,
    /// Checks that succeeded.
    passed: u32,
    /// Checks that failed or warned (the suite counts a warning as a failure).
    failed: u32,
    /// Of the checks that succeeded, those the suite runs in every scenario whatever it is
    /// about ([`GENERIC_CHECKS`]): they alone judge nothing of the scenario's subject.
    generic: u32,
    /// Checks the suite skipped (what they judge was not there to judge).
    skipped: u32,
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

    /// The checks that succeeded on the scenario's own subject.
    fn judged(&self) -> u32 {
        self.passed - self.generic
    }

    /// Passed with nothing of its subject judged: every check of its own was skipped or
    /// informational (a generic check such as `wire-schema-valid` may have passed).
    fn unchecked(&self) -> bool {
        self.ok() && self.judged() == 0
    }
}

/// Checks the suite adds to scenarios whatever they are about: `wire-schema-valid` validates
/// every message the implementation sent against the spec's schema. A skills scenario against
/// a server without skills skips all its own checks and passes this one.
const GENERIC_CHECKS: &[&str] = &["wire-schema-valid"];

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
            _ => vec![Role::Client, Role::Server, Role::AuthorizationServer],
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
        let mut problems = Vec::new();
        // Every scenario each suite has, to say on the page which ones no leg ran.
        let mut catalogues = Vec::new();
        for (version, script) in &suites {
            catalogues.push((*version, catalogue(sh, &node, script)?));
        }
        for leg in legs {
            let script = suites
                .iter()
                .find(|(v, _)| *v == leg.suite)
                .map(|(_, s)| s.clone())
                .context("suite not installed")?;
            let suite_catalogue = catalogues
                .iter()
                .find(|(v, _)| *v == leg.suite)
                .map(|(_, c)| c.as_slice())
                .context("suite not listed")?;
            let mut scenarios = list(suite_catalogue, leg)?;
            if let Some(only) = &self.scenario {
                scenarios.retain(|s| s == only);
                if scenarios.is_empty() {
                    continue;
                }
            }
            let expected = listed(&root, EXPECTED_FAILURES, leg.name)?;
            let unchecked = listed(&root, EXPECTED_UNCHECKED, leg.name)?;
            eprintln!(
                "==> conformance {} ({SUITE}@{}{}): {} scenarios{}",
                leg.name,
                leg.suite,
                leg.spec
                    .map(|s| format!(", --spec-version {s}"))
                    .unwrap_or_default(),
                scenarios.len(),
                if leg.concurrency > 1 {
                    format!(", {} at a time", leg.concurrency)
                } else {
                    String::new()
                }
            );
            for (list, entries) in [
                (EXPECTED_FAILURES, &expected),
                (EXPECTED_UNCHECKED, &unchecked),
            ] {
                for (scenario, reason) in entries {
                    eprintln!("    pending ({list}): {scenario}: {reason}");
                }
            }
            let mut server = match leg.role {
                Role::Server => Some(Server::start(&bin, leg, &out.join(leg.name))?),
                Role::Client | Role::AuthorizationServer => None,
            };
            let run_scenario = |scenario: &str| -> anyhow::Result<Outcome> {
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
                Ok(outcome)
            };
            let leg_started = Instant::now();
            let outcomes = if leg.role == Role::AuthorizationServer {
                let dir = out.join(leg.name);
                let outcomes = authorization_server::run(sh, &node, &script, &scenarios, &dir)?;
                outcomes
                    .into_iter()
                    .map(|mut o| {
                        let reason = |list: &[(String, String)]| {
                            list.iter()
                                .find(|(s, _)| *s == o.scenario)
                                .map(|(_, r)| r.clone())
                        };
                        o.expected = reason(&expected);
                        o.unchecked_reason = reason(&unchecked);
                        eprintln!("    {}", line(&o));
                        o
                    })
                    .collect()
            } else {
                in_parallel(&scenarios, leg.concurrency, run_scenario)?
            };
            if let Some(gone) = server.as_mut().and_then(Server::gone) {
                problems.push(format!(
                    "{}: {gone} while the leg ran (its stderr: target/conformance/{}/server.log)",
                    leg.name, leg.name
                ));
            }
            drop(server);
            eprintln!("    {}: {} s", leg.name, leg_started.elapsed().as_secs());
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
            let reasons = listed_not_run(&root)?;
            let not_run = not_run(&catalogues, &results, &reasons);
            for n in &not_run {
                if n.reason.is_none() {
                    problems.push(format!(
                        "{SUITE}@{}: no leg runs the {} scenario {}; run it, or say why not in conformance/{NOT_RUN}",
                        n.suite, n.role, n.scenario
                    ));
                }
            }
            for (scenario, _) in &reasons {
                if !not_run.iter().any(|n| &n.scenario == scenario) {
                    problems.push(format!(
                        "conformance/{NOT_RUN} names {scenario}, which a leg runs or no suite has (a stale entry): remove it from the list"
                    ));
                }
            }
            let date = cmd!(sh, "date -u +%Y-%m-%d").read()?;
            let page = render(&results, &not_run, node_version.trim(), &date);
            let path = root.join("docs/conformance.md");
            let committed = std::fs::read_to_string(&path).unwrap_or_default();
            stale = !same_results(&committed, &page);
            std::fs::write(&path, page)?;
            eprintln!("==> wrote docs/conformance.md");
        }
        verdict(&results, problems, started.elapsed())?;
        if self.check && stale {
            bail!(
                "docs/conformance.md showed other results than this run: commit the page it wrote"
            );
        }
        Ok(())
    }
}

/// The summary, and an error naming every unexpected failure and stale entry.
fn verdict(results: &[LegResult], mut problems: Vec<String>, took: Duration) -> anyhow::Result<()> {
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
                    "{}: {} PASSED but is listed in conformance/{EXPECTED_FAILURES}/{}.txt as not yet built: remove it from the list",
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
                    "{}: {} JUDGED {} check(s) but is listed in conformance/{EXPECTED_UNCHECKED}/{}.txt as checking nothing yet: remove it from the list",
                    r.leg.name, o.scenario, o.judged(), r.leg.name
                )),
                _ => {}
            }
        }
        for (list, s) in &r.unknown {
            problems.push(format!(
                "{}: conformance/{list}/{}.txt names {s}, which the leg does not run (a stale entry): remove it from the list",
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
        generic: checks.generic,
        skipped: checks.skipped,
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
    /// Of `passed`, the [`GENERIC_CHECKS`].
    generic: u32,
    skipped: u32,
    /// Whether any `checks.json` was there.
    found: bool,
}

/// Adds up the statuses in every `checks.json` under `dir`: SUCCESS passes, FAILURE and
/// WARNING fail (the suite fails a scenario on either); SKIPPED is counted apart; INFO does
/// not count. A
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
                        Some("SUCCESS") => {
                            checks.passed += 1;
                            if check["id"]
                                .as_str()
                                .is_some_and(|id| GENERIC_CHECKS.contains(&id))
                            {
                                checks.generic += 1;
                            }
                        }
                        Some("FAILURE" | "WARNING") => checks.failed += 1,
                        Some("SKIPPED") => checks.skipped += 1,
                        Some(_) => {}
                        None => bail!("{}: a check without a status: {check}", path.display()),
                    }
                }
            }
        }
    }
    Ok(checks)
}

/// One scenario of a suite's `list`: the heading it is under (`Client`, `Server`,
/// `Authorization server`), its name and its tags.
struct Listed {
    role: String,
    name: String,
    tags: Vec<String>,
}

/// Every scenario the suite's `list` names, under each of its headings.
fn catalogue(sh: &Shell, node: &Path, script: &Path) -> anyhow::Result<Vec<Listed>> {
    let text = cmd!(sh, "{node} {script} list").quiet().read()?;
    Ok(parse_catalogue(&text))
}

fn parse_catalogue(text: &str) -> Vec<Listed> {
    let mut role = None;
    let mut all = Vec::new();
    for line in text.lines() {
        if !line.starts_with(' ') {
            // "Client scenarios (test against a client):"
            role = line
                .split_once(" scenarios")
                .map(|(heading, _)| heading.to_owned());
            continue;
        }
        let (Some(role), Some(rest)) = (&role, line.trim().strip_prefix("- ")) else {
            continue;
        };
        let (name, tags) = rest.split_once(' ').unwrap_or((rest, ""));
        let tags = tags
            .trim()
            .trim_start_matches('[')
            .trim_end_matches(']')
            .split(',')
            .filter(|t| !t.is_empty())
            .map(str::to_owned)
            .collect();
        all.push(Listed {
            role: role.clone(),
            name: name.to_owned(),
            tags,
        });
    }
    all
}

/// The scenarios of a leg: its role's section of the suite's list, filtered by tag.
fn list(catalogue: &[Listed], leg: &Leg) -> anyhow::Result<Vec<String>> {
    let heading = match leg.role {
        Role::Client => "Client",
        Role::Server => "Server",
        Role::AuthorizationServer => "Authorization server",
    };
    let names: Vec<String> = catalogue
        .iter()
        .filter(|l| l.role == heading)
        .filter(|l| leg.tag.is_none_or(|t| l.tags.iter().any(|x| x == t)))
        .map(|l| l.name.clone())
        .collect();
    if names.is_empty() {
        bail!("the suite listed no scenarios for {}", leg.name);
    }
    Ok(names)
}

/// A scenario of a suite that no leg ran, and why (from [`NOT_RUN`]).
struct NotRun {
    suite: &'static str,
    role: String,
    scenario: String,
    reason: Option<String>,
}

/// Where a scenario no leg runs is explained: one scenario a line, then why.
const NOT_RUN: &str = "not-run.txt";

/// The scenarios of each suite that no leg of a full run ran, with the reasons given for them.
fn not_run(
    catalogues: &[(&'static str, Vec<Listed>)],
    results: &[LegResult],
    reasons: &[(String, String)],
) -> Vec<NotRun> {
    let mut missing = Vec::new();
    for (suite, catalogue) in catalogues {
        for l in catalogue {
            let ran = results.iter().any(|r| {
                r.leg.suite == *suite
                    && r.outcomes.iter().any(|o| o.scenario == l.name)
                    && (matches!(r.leg.role, Role::Client) == (l.role == "Client"))
            });
            if !ran {
                missing.push(NotRun {
                    suite,
                    role: l.role.to_lowercase(),
                    scenario: l.name.clone(),
                    reason: reasons
                        .iter()
                        .find(|(s, _)| *s == l.name)
                        .map(|(_, r)| r.clone()),
                });
            }
        }
    }
    missing
}

/// `conformance/not-run.txt`: the scenarios no leg runs, each with why. A missing file is an
/// empty list.
fn listed_not_run(root: &Path) -> anyhow::Result<Vec<(String, String)>> {
    let path = root.join("conformance").join(NOT_RUN);
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
        if reason.trim().is_empty() {
            bail!("{}:{}: an entry needs its reason", path.display(), n + 1);
        }
        entries.push((scenario.to_owned(), reason.trim().to_owned()));
    }
    Ok(entries)
}

/// Runs `run` on every scenario, `concurrency` at a time, and returns the outcomes in the
/// scenarios' order. The first error ends the run once the scenarios under way are done.
fn in_parallel(
    scenarios: &[String],
    concurrency: usize,
    run: impl Fn(&str) -> anyhow::Result<Outcome> + Sync,
) -> anyhow::Result<Vec<Outcome>> {
    let next = std::sync::atomic::AtomicUsize::new(0);
    let done: std::sync::Mutex<Vec<(usize, anyhow::Result<Outcome>)>> = Default::default();
    std::thread::scope(|scope| {
        for _ in 0..concurrency.max(1) {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    let Some(scenario) = scenarios.get(i) else {
                        break;
                    };
                    let outcome = run(scenario);
                    let failed = outcome.is_err();
                    done.lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .push((i, outcome));
                    if failed {
                        // No new scenario starts after an error.
                        next.store(scenarios.len(), std::sync::atomic::Ordering::SeqCst);
                    }
                }
            });
        }
    });
    let mut done = done
        .into_inner()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    done.sort_by_key(|(i, _)| *i);
    done.into_iter().map(|(_, outcome)| outcome).collect()
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
        // A scenario the suite itself judges nothing of, whatever it runs against, waits on
        // no issue of ours; the reason says so in those words.
        let suites_own = list == EXPECTED_UNCHECKED && reason.starts_with(SUITES_OWN_SKIP);
        if !names_an_issue(reason) && !suites_own {
            bail!(
                "{}:{}: an entry needs a reason that names the open issue building what it lacks, as `issue <number>`{}",
                path.display(),
                n + 1,
                if list == EXPECTED_UNCHECKED {
                    format!(
                        ", or starts {SUITES_OWN_SKIP:?} when the suite skips every check whatever it runs against"
                    )
                } else {
                    String::new()
                }
            );
        }
        entries.push((scenario.to_owned(), reason.to_owned()));
    }
    Ok(entries)
}

/// How an expected-unchecked entry's reason starts when the suite skips every check of the
/// scenario whatever it runs against (its `run` only reports a SKIPPED check).
const SUITES_OWN_SKIP: &str = "the suite itself skips";

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
    /// Starts the target; `dir` receives the server's stderr and the gateway's file, home and
    /// log.
    fn start(bin: &Path, leg: &Leg, dir: &Path) -> anyhow::Result<Self> {
        let port = crate::interop::free_port()?;
        std::fs::create_dir_all(dir)?;
        // What it says on the way out, if it dies under a scenario.
        let stderr = std::fs::File::create(dir.join("server.log"))?;
        let child = Command::new(bin.join("mcp-conformance-server"))
            .args(["--port", &port.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr)
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

impl Server {
    /// Which process of the target exited by itself, and how, if one did: a server that dies
    /// under a scenario fails the scenarios after it for a reason that is not theirs.
    fn gone(&mut self) -> Option<String> {
        let names = ["mcp-conformance-server", "mcp-host serve"];
        self.children
            .iter_mut()
            .zip(names)
            .find_map(|(child, name)| match child.try_wait() {
                Ok(Some(status)) => Some(format!("{name} exited ({status})")),
                _ => None,
            })
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
fn render(results: &[LegResult], not_run: &[NotRun], node: &str, date: &str) -> String {
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
         that failed count FAILURE and WARNING; skipped ones count SKIPPED; INFO is not counted.\n\
         A scenario that passes with none of its own checks counted (every one skipped or\n\
         informational; the generic `wire-schema-valid`, which validates whatever we sent, does not\n\
         count as its own) judged nothing: it is shown as \"passed, nothing checked\", and the\n\
         summary counts it apart; it fails the run unless `conformance/expected-unchecked/<leg>.txt`\n\
         lists it with the open issue that builds what the suite needs to judge it (or says the\n\
         suite itself skips it). A scenario not yet built is listed in\n\
         `conformance/expected-failures/<leg>.txt` with the open issue that builds what it needs:\n\
         it may fail without failing the run, and it fails the run once it passes, until it is\n\
         taken off the list. Both lists are under Pending below.\n"
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
            (Role::AuthorizationServer, _) => {
                "authorization server scenarios, run against npm's `oidc-provider` as `xtask/oidc/peer.mjs` configures it: the authorization server `cargo xtask interop` logs in to our gateway through and whose tokens the gateway's `auth` block is tested with. mcp-host ships no authorization server: this judges that provider as we set it up (a public client registered beforehand for the suite, Chromium going through its login and consent pages), not mcp-host"
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
            "| scenario | result | checks passed | checks failed | checks skipped | note |\n| --- | --- | --- | --- | --- | --- |"
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
                "| `{}` | {result} | {} | {} | {} | {} |",
                o.scenario,
                o.passed,
                o.failed,
                o.skipped,
                note.replace('|', "\\|")
            );
        }
    }
    let _ = writeln!(s, "\n## Pending\n");
    let pending: Vec<String> = results
        .iter()
        .flat_map(|r| {
            r.outcomes.iter().filter_map(|o| {
                let (what, reason) = match (&o.expected, &o.unchecked_reason) {
                    (Some(reason), _) => ("not yet built, may fail", reason),
                    (None, Some(reason)) => ("judges nothing yet", reason),
                    (None, None) => return None,
                };
                let result = if o.ok() { "passed" } else { "failed" };
                Some(format!(
                    "- `{}`, `{}` ({what}; {result} this run): {reason}",
                    r.leg.name, o.scenario
                ))
            })
        })
        .collect();
    if pending.is_empty() {
        let _ = writeln!(
            s,
            "None: no scenario is listed as not yet built or as judging nothing yet."
        );
    } else {
        let _ = writeln!(
            s,
            "Listed in `conformance/expected-failures/` (not yet built) or `conformance/expected-unchecked/`\n\
             (judges nothing yet), each with why.\n"
        );
        for p in pending {
            let _ = writeln!(s, "{p}");
        }
    }
    let _ = writeln!(s, "\n## Not run\n");
    if not_run.is_empty() {
        let _ = writeln!(s, "None: some leg runs every scenario of both suites.");
    } else {
        let _ = writeln!(
            s,
            "The scenarios of the suites that no leg runs, each with why (`conformance/not-run.txt`).\n"
        );
        for n in not_run {
            let _ = writeln!(
                s,
                "- `{}` ({} scenario of {SUITE}@{}): {}",
                n.scenario,
                n.role,
                n.suite,
                n.reason.as_deref().unwrap_or("no reason given")
            );
        }
    }
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
            generic: 0,
            skipped: 0,
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
                Vec::new(),
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
            Vec::new(),
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
        let page = render(&results, &[], "v22", "2026-01-01");
        assert!(
            page.contains(
                "| `client-next-extensions` | 0.2.0-alpha.12 | none | 3 | 2 | 1 | 1 | 1 |"
            ),
            "{page}"
        );
        assert!(page.contains("| `skipped` | passed, nothing checked | 0 | 0 | 0 |"));
        assert!(page.contains("| `judged` | passed | 9 | 0 | 0 |"));
        assert!(page.contains("| `missing` | failed | 9 | 3 | 0 | issue 99: not built |"));
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
        let page = render(&leg(1), &[], "v22.1.0", "2026-01-01");
        assert!(same_results(
            &page,
            &render(&leg(1), &[], "v24.0.0", "2026-02-02")
        ));
        assert!(!same_results(
            &page,
            &render(&leg(2), &[], "v22.1.0", "2026-01-01")
        ));
        assert!(!same_results("", &page));
    }

    fn leg_named(name: &str) -> &'static Leg {
        LEGS.iter().find(|l| l.name == name).unwrap()
    }

    #[test]
    fn a_pass_of_the_generic_check_alone_judged_nothing() {
        // sep-2640-skills-manifest against a server without skills: five checks skipped, and
        // wire-schema-valid passed.
        let generic_only = Outcome {
            generic: 1,
            skipped: 5,
            ..outcome("sep-2640-skills-manifest", 1, 0, None)
        };
        assert!(generic_only.ok());
        assert!(generic_only.unchecked());
        let judged = Outcome {
            generic: 1,
            ..outcome("tasks-lifecycle", 9, 0, None)
        };
        assert!(!judged.unchecked());
        assert_eq!(judged.judged(), 8);
        let dir = std::env::temp_dir().join(format!("xtask-generic-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("checks.json"),
            r#"[{"id":"wire-schema-valid","status":"SUCCESS"},{"id":"a","status":"SKIPPED"},{"id":"b","status":"SKIPPED"}]"#,
        )
        .unwrap();
        let checks = count_checks(&dir).unwrap();
        assert_eq!((checks.passed, checks.generic, checks.skipped), (1, 1, 2));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_scenario_not_yet_built_may_fail_and_must_leave_the_list_once_it_passes() {
        let run = |outcome: Outcome| {
            verdict(
                &[LegResult {
                    leg: leg_named("server-next-extensions"),
                    outcomes: vec![outcome],
                    unknown: Vec::new(),
                }],
                Vec::new(),
                Duration::ZERO,
            )
        };
        let pending = Some("issue 26: no tasks yet");
        assert!(run(outcome("tasks-lifecycle", 1, 8, pending)).is_ok());
        let passed = run(outcome("tasks-lifecycle", 9, 0, pending)).unwrap_err();
        let said = format!("{passed:#}");
        assert!(said.contains("1 unexpected result"), "{said}");
        // Not listed: its failure fails the run.
        assert!(run(outcome("tasks-lifecycle", 1, 8, None)).is_err());
        // Listed as judging nothing, yet failing: that fails the run too.
        let failing_unchecked = Outcome {
            unchecked_reason: Some("issue 26: no skills yet".to_owned()),
            ..outcome("sep-2640-skills-manifest", 0, 1, None)
        };
        assert!(run(failing_unchecked).is_err());
    }

    #[test]
    fn the_page_lists_what_is_pending_and_what_no_leg_runs() {
        let results = [LegResult {
            leg: leg_named("server-next-extensions"),
            outcomes: vec![
                outcome("tasks-lifecycle", 1, 8, Some("issue 26: no tasks yet")),
                outcome("tasks-wire-fields", 4, 0, None),
            ],
            unknown: Vec::new(),
        }];
        let catalogue = parse_catalogue(
            "Server scenarios (test against a server):\n  - tasks-lifecycle [extension]\n  - tasks-wire-fields [extension]\n\n\
             Client scenarios (test against a client):\n  - initialize [2025-06-18,2025-11-25]\n\n\
             Authorization server scenarios (test against an authorization server):\n  - authorization-code-grant [2025-03-26]\n",
        );
        assert_eq!(catalogue.len(), 4);
        assert_eq!(catalogue[3].role, "Authorization server");
        assert_eq!(catalogue[0].tags, ["extension"]);
        let reasons = [("authorization-code-grant".to_owned(), "no AS".to_owned())];
        let missing = not_run(&[(NEXT, catalogue)], &results, &reasons);
        let names: Vec<_> = missing.iter().map(|n| n.scenario.as_str()).collect();
        assert_eq!(names, ["initialize", "authorization-code-grant"]);
        assert!(missing[0].reason.is_none());
        let page = render(&results, &missing, "v22", "2026-01-01");
        assert!(
            page.contains("- `server-next-extensions`, `tasks-lifecycle` (not yet built, may fail; failed this run): issue 26: no tasks yet"),
            "{page}"
        );
        assert!(!page.contains("`tasks-wire-fields` (not yet built"));
        assert!(page.contains(
            "- `authorization-code-grant` (authorization server scenario of @modelcontextprotocol/conformance@0.2.0-alpha.12): no AS"
        ));
        let empty = render(&results[..0], &[], "v22", "2026-01-01");
        assert!(empty.contains("## Not run\n\nNone: some leg runs every scenario of both suites."));
        assert!(empty.contains("## Pending\n\nNone:"));
    }

    #[test]
    fn only_the_unchecked_list_may_blame_the_suite_itself() {
        let root = std::env::temp_dir().join(format!("xtask-lists-{}", std::process::id()));
        let entry = "tasks-status-notifications the suite itself skips it: pending a rewrite\n";
        for list in [EXPECTED_FAILURES, EXPECTED_UNCHECKED] {
            std::fs::create_dir_all(root.join("conformance").join(list)).unwrap();
            std::fs::write(root.join(format!("conformance/{list}/leg.txt")), entry).unwrap();
        }
        let unchecked = listed(&root, EXPECTED_UNCHECKED, "leg").unwrap();
        assert_eq!(unchecked[0].0, "tasks-status-notifications");
        assert!(listed(&root, EXPECTED_FAILURES, "leg").is_err());
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn scenarios_run_at_once_come_back_in_order() {
        let scenarios: Vec<String> = (0..9).map(|i| format!("s{i}")).collect();
        let started = std::sync::atomic::AtomicUsize::new(0);
        let outcomes = in_parallel(&scenarios, 4, |s| {
            started.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            Ok(outcome(s, 1, 0, None))
        })
        .unwrap();
        let names: Vec<_> = outcomes.iter().map(|o| o.scenario.clone()).collect();
        assert_eq!(names, scenarios);
        assert_eq!(started.into_inner(), 9);
        let failing = in_parallel(&scenarios, 1, |s| {
            if s == "s2" {
                anyhow::bail!("broken")
            }
            Ok(outcome(s, 1, 0, None))
        });
        assert!(failing.is_err());
    }

    #[test]
    fn a_server_that_died_under_the_leg_is_named() {
        let mut alive = Server {
            children: vec![Command::new("sleep").arg("30").spawn().unwrap()],
            url: String::new(),
        };
        assert_eq!(alive.gone(), None);
        let mut died = Command::new("sh").args(["-c", "exit 3"]).spawn().unwrap();
        died.wait().unwrap();
        alive.children.push(died);
        let said = alive.gone().unwrap();
        assert!(said.starts_with("mcp-host serve exited"), "{said}");
        assert!(said.contains('3'), "{said}");
    }
}
