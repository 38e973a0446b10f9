//! Time to ready (issue 25 section 4b): twenty servers that start like real ones, ten Node
//! servers launched through `npx` and ten Python servers through their interpreter (the
//! benchmark's TypeScript and Python SDK servers), all started at once.
//!
//! Ours is `mcp_host::Host::start` until every server is ready and its tools are in the
//! catalogue. Beside it, the floor: a bare harness that starts the same twenty processes at
//! once and speaks the least JSON-RPC that makes a session (initialize, initialized,
//! tools/list) over their pipes, with no MCP library. What we add is ours minus the floor,
//! and it must not grow with the slowest server: the same two runs again with one Python
//! server started two seconds late (`sleep 2` before it), so that it is the slowest by far.
//! The servers' own start-up, each alone through the harness, is shown beside (sum and max).
//!
//! `mcp-bench ready <ours|raw> <spec>`: `spec` is `{"servers": [[argv...], ...]}`; prints
//! `{"wall_us": N}`.

use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail, ensure};
use mcp_host::permission::AllowAll;
use mcp_host::{Connect, Host, HostOptions, ServerEntry, ServerState};
use mcp_protocol::schema::Implementation;
use mcp_stdio::StdioConfig;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};

use crate::driver::{CellKey, Imp, Results};

/// Servers started at once.
pub(crate) const SERVERS: usize = 20;
/// How late the slowest server of the second pair of runs starts.
pub(crate) const LATE: Duration = Duration::from_secs(2);
/// What we may add to the floor.
pub(crate) const GOAL_ADDED: f64 = 0.05;

/// The cells, in the page's order: (key, what it is).
pub(crate) const CELLS: [(&str, &str); 6] = [
    ("ready:alone-ts", "one Node server alone (npx), the harness"),
    ("ready:alone-py", "one Python server alone, the harness"),
    ("ready:raw", "twenty at once, the harness (floor)"),
    ("ready:ours", "twenty at once, ours (`Host::start`)"),
    (
        "ready:raw-late",
        "twenty at once, one 2 s late, the harness (floor)",
    ),
    ("ready:ours-late", "twenty at once, one 2 s late, ours"),
];

pub(crate) fn key(cell: &'static str) -> CellKey {
    ("ready", cell, Imp::Ours, Imp::Ours, SERVERS)
}

/// What the runs need of the driver's setup.
pub(crate) struct Setup<'a> {
    pub(crate) exe: &'a Path,
    pub(crate) bench: &'a Path,
    pub(crate) sdk: &'a Path,
    pub(crate) python: &'a Path,
    pub(crate) reps: usize,
}

impl Setup<'_> {
    fn ts(&self) -> Vec<String> {
        vec![
            "npx".into(),
            "node".into(),
            self.bench.join("ts/server.mjs").display().to_string(),
            self.sdk.display().to_string(),
            "stdio".into(),
        ]
    }

    fn py(&self) -> Vec<String> {
        vec![
            self.python.display().to_string(),
            self.bench.join("py/server.py").display().to_string(),
            "stdio".into(),
        ]
    }

    fn twenty(&self, late: bool) -> Vec<Vec<String>> {
        let mut servers = Vec::new();
        for i in 0..SERVERS {
            let mut argv = if i % 2 == 0 { self.ts() } else { self.py() };
            if late && i == SERVERS - 1 {
                let mut wrapped = vec![
                    "sh".into(),
                    "-c".into(),
                    format!("sleep {}; exec \"$@\"", LATE.as_secs()),
                    "sh".into(),
                ];
                wrapped.append(&mut argv);
                argv = wrapped;
            }
            servers.push(argv);
        }
        servers
    }

    async fn one(&self, how: &str, servers: Vec<Vec<String>>) -> Result<Value, String> {
        let spec = json!({ "servers": servers }).to_string();
        let output = tokio::process::Command::new(self.exe)
            .args(["ready", how, &spec])
            .stdin(Stdio::null())
            .kill_on_drop(true)
            .output();
        let output = match tokio::time::timeout(Duration::from_secs(120), output).await {
            Ok(Ok(o)) => o,
            Ok(Err(e)) => return Err(e.to_string()),
            Err(_) => return Err("timed out after 120 s".into()),
        };
        let stdout = String::from_utf8_lossy(&output.stdout);
        match stdout.lines().rev().find(|l| l.starts_with('{')) {
            Some(line) if output.status.success() => {
                serde_json::from_str(line).map_err(|e| e.to_string())
            }
            _ => Err(format!(
                "{}: {}",
                output.status,
                String::from_utf8_lossy(&output.stderr)
                    .lines()
                    .last()
                    .unwrap_or_default()
            )),
        }
    }
}

/// Every cell once per repetition, interleaved.
pub(crate) async fn all(setup: &Setup<'_>, results: &mut Results) {
    for rep in 0..setup.reps {
        for (cell, what) in CELLS {
            let t = Instant::now();
            let outcome = match cell {
                "ready:alone-ts" => setup.one("raw", vec![setup.ts()]).await,
                "ready:alone-py" => setup.one("raw", vec![setup.py()]).await,
                "ready:raw" => setup.one("raw", setup.twenty(false)).await,
                "ready:ours" => setup.one("ours", setup.twenty(false)).await,
                "ready:raw-late" => setup.one("raw", setup.twenty(true)).await,
                _ => setup.one("ours", setup.twenty(true)).await,
            };
            eprintln!(
                "[{rep}] ready {what}: {} ({:.1} s)",
                match &outcome {
                    Ok(v) => v.to_string(),
                    Err(e) => format!("FAILED: {e}"),
                },
                t.elapsed().as_secs_f64()
            );
            results.entry(key(cell)).or_default().push(outcome);
        }
    }
}

/// `mcp-bench ready <ours|raw> <spec>`.
pub(crate) async fn run(how: &str, spec: &str) -> anyhow::Result<Value> {
    let spec: Value = serde_json::from_str(spec).context("the spec is not JSON")?;
    let servers: Vec<Vec<String>> = serde_json::from_value(spec["servers"].clone())?;
    ensure!(!servers.is_empty(), "no servers");
    let start = Instant::now();
    let guard = match how {
        "ours" => ours(&servers).await?,
        "raw" => {
            raw(&servers).await?;
            None
        }
        other => bail!("unknown way `{other}`"),
    };
    let wall = start.elapsed();
    if let Some(host) = guard {
        host.shutdown().await;
    }
    Ok(json!({ "wall_us": wall.as_micros() as u64 }))
}

async fn ours(servers: &[Vec<String>]) -> anyhow::Result<Option<Host>> {
    let mut options = HostOptions::new(
        Implementation::new("mcp-bench".into(), "0.0.0".into()),
        Arc::new(AllowAll),
    );
    options.max_connections = servers.len();
    let host = Host::new(options);
    let mut entries = Vec::new();
    for (i, argv) in servers.iter().enumerate() {
        let (program, args) = argv.split_first().context("an empty command")?;
        let id = format!("s{i}");
        let config = StdioConfig::new(&id, program, args.iter().cloned());
        entries.push(ServerEntry::new(id, Connect::Stdio(config)));
    }
    host.start(entries).await;
    for s in host.status() {
        if s.state != ServerState::Ready {
            bail!("{} is not ready: {:?}", s.id, s.last_error);
        }
    }
    let tools = host.catalog().len();
    ensure!(tools == 2 * servers.len(), "{tools} tools in the catalogue");
    Ok(Some(host))
}

/// The floor: each process started, then initialize, initialized and tools/list written to
/// its stdin and their answers read from its stdout, all at once.
async fn raw(servers: &[Vec<String>]) -> anyhow::Result<()> {
    let mut set = tokio::task::JoinSet::new();
    for argv in servers {
        let (program, args) = argv.split_first().context("an empty command")?;
        let mut child = tokio::process::Command::new(program)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .with_context(|| format!("starting {program}"))?;
        set.spawn(async move {
            let mut stdin = child.stdin.take().context("no stdin")?;
            let mut lines = BufReader::new(child.stdout.take().context("no stdout")?).lines();
            let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "mcp-bench", "version": "0.0.0"}}});
            stdin
                .write_all(format!("{initialize}\n").as_bytes())
                .await?;
            answer(&mut lines, 1).await?;
            let rest = concat!(
                r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
                "\n",
                r#"{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}"#,
                "\n"
            );
            stdin.write_all(rest.as_bytes()).await?;
            let list = answer(&mut lines, 2).await?;
            let tools = list["result"]["tools"].as_array().map_or(0, Vec::len);
            ensure!(tools == 2, "{tools} tools listed");
            Ok::<_, anyhow::Error>(child)
        });
    }
    let mut children = Vec::new();
    while let Some(joined) = set.join_next().await {
        children.push(joined??);
    }
    Ok(())
}

async fn answer(
    lines: &mut tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
    id: u64,
) -> anyhow::Result<Value> {
    while let Some(line) = lines.next_line().await? {
        let Ok(v) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        if v["id"] == id {
            return Ok(v);
        }
    }
    bail!("the server closed its stdout before answering request {id}")
}
