//! `mcp-bench run`: every row of the benchmark, implementations interleaved per repetition
//! (A B C, A B C, ...) so that drift of a shared machine lands on all of them alike, then
//! the medians rendered into the page.
//!
//! Each measurement is one client process: it starts its stdio server itself (as a host
//! does) or connects to an HTTP server the driver keeps running for the group, runs one
//! workload and prints one JSON line.
//!
//! Flags: `--out PATH` (the page), `--node NODE`, `--sdk PREFIX` (the TypeScript SDK's npm
//! prefix), `--python PYTHON` (the venv with the Python SDK), `--quick` (one short
//! repetition: a smoke run), `--reps N`, `--note TEXT` (said at the top of the page); the
//! gateway rows' `--mcp-host`, `--supergateway`, `--mcp-proxy-ts`, `--mcp-proxy-py`
//! (`gateways.rs`), and `--only` (some rows alone, for iterating on them): `gateways`,
//! `ready`, or a comma-separated list of cells `WORKLOAD[:TRANSPORT[:CLIENT-SERVER]]` by
//! their keys (`big:stdio:ours-ours`, `call:http:ts-ours`, `list:http`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use serde_json::{Value, json};

use crate::render;

/// An implementation: a client, a server, or both.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Imp {
    /// The floor: `cat`, or a minimal hyper echo, with a minimal client.
    Raw,
    Ours,
    Rmcp,
    Ts,
    Py,
    /// A diagnostic, not a consumer's default: ours on tokio's one-threaded runtime, client
    /// and server.
    OursLocal,
}

impl Imp {
    pub(crate) fn label(self) -> &'static str {
        match self {
            Self::Raw => "floor",
            Self::Ours => "ours",
            Self::OursLocal => "ours (one thread)",
            Self::Rmcp => "rmcp",
            Self::Ts => "TypeScript",
            Self::Py => "Python",
        }
    }

    fn key(self) -> &'static str {
        match self {
            Self::Raw => "raw",
            Self::Ours | Self::OursLocal => "ours",
            Self::Rmcp => "rmcp",
            Self::Ts => "ts",
            Self::Py => "py",
        }
    }
}

use Imp::{Ours, OursLocal, Py, Raw, Rmcp, Ts};

/// The MCP pairs (client, server): each SDK with itself, and ours against each of the
/// others both ways (ours→theirs measures our client, theirs→ours our server). The floor is
/// not one: it has no tools and no big result.
pub(crate) const MCP_PAIRS: &[(Imp, Imp)] = &[
    (Ours, Ours),
    (Rmcp, Rmcp),
    (Ts, Ts),
    (Py, Py),
    (Ours, Rmcp),
    (Rmcp, Ours),
    (Ours, Ts),
    (Ts, Ours),
    (Ours, Py),
    (Py, Ours),
];

/// The call rows' pairs: the floor, [`MCP_PAIRS`], then the diagnostic that shows what
/// limits ours.
pub(crate) fn call_pairs() -> Vec<(Imp, Imp)> {
    let mut pairs = vec![(Raw, Raw)];
    pairs.extend_from_slice(MCP_PAIRS);
    pairs.push((OursLocal, OursLocal));
    pairs
}

/// The connect row's pairs over stdio: each SDK with itself, ours against rmcp both ways, and ours
/// against the TypeScript SDK both ways. Ours → Python and Python → ours are left out: with
/// 20 servers the row would time 20 Python interpreters starting on two cores (Python →
/// Python shows that), for about a minute of the budget.
pub(crate) const CONNECT_PAIRS: &[(Imp, Imp)] = &[
    (Ours, Ours),
    (Rmcp, Rmcp),
    (Ts, Ts),
    (Py, Py),
    (Ours, Rmcp),
    (Rmcp, Ours),
    (Ours, Ts),
    (Ts, Ours),
];

/// The clients whose memory is measured, each holding connections to our server (the
/// server's size does not count: it is another process).
pub(crate) const CLIENTS: &[Imp] = &[Ours, Rmcp, Ts, Py];

/// How many generated tools the `tools/list` row lists.
pub(crate) const LIST_TOOLS: usize = 10_000;
/// How many servers the connect and memory rows hold.
pub(crate) const MANY: usize = 20;

/// Where everything is.
struct Setup {
    exe: PathBuf,
    bench: PathBuf,
    node: String,
    sdk: PathBuf,
    python: PathBuf,
    warmup_ms: u64,
    measure_ms: u64,
    reps: usize,
    /// The gateways of the gateway rows, and `--only` (see the module doc).
    peers: crate::gateways::Peers,
    quick: bool,
    only: Option<String>,
}

impl Setup {
    /// The command line of a stdio server, or of an HTTP one on `port`.
    fn server(&self, imp: Imp, http: Option<u16>, tools: usize) -> Vec<String> {
        let mut argv: Vec<String> = match imp {
            Raw if http.is_none() => return vec!["cat".into()],
            Raw | Ours | Rmcp | OursLocal => vec![
                self.exe.display().to_string(),
                "server".into(),
                imp.key().into(),
            ],
            Ts => vec![
                self.node.clone(),
                self.bench.join("ts/server.mjs").display().to_string(),
                self.sdk.display().to_string(),
            ],
            Py => vec![
                self.python.display().to_string(),
                self.bench.join("py/server.py").display().to_string(),
            ],
        };
        match http {
            None => argv.push("stdio".into()),
            Some(port) => argv.extend(["http".into(), "--port".into(), port.to_string()]),
        }
        if tools > 0 && imp != Raw {
            argv.extend(["--tools".into(), tools.to_string()]);
        }
        argv
    }

    fn client(&self, imp: Imp, spec: &Value) -> tokio::process::Command {
        let spec = spec.to_string();
        let mut command = match imp {
            Raw | Ours | Rmcp | OursLocal => {
                let mut c = tokio::process::Command::new(&self.exe);
                c.args(["client", imp.key()]);
                c
            }
            Ts => {
                let mut c = tokio::process::Command::new(&self.node);
                c.arg(self.bench.join("ts/client.mjs")).arg(&self.sdk);
                c
            }
            Py => {
                let mut c = tokio::process::Command::new(&self.python);
                c.arg(self.bench.join("py/client.py"));
                c
            }
        };
        command.arg(spec);
        command
    }
}

/// One measured cell: a row of a table, run once per repetition.
#[derive(Debug, Clone)]
pub(crate) struct Cell {
    /// `call`, `big`, `list`, `connect` or `idle`.
    pub(crate) workload: &'static str,
    pub(crate) transport: &'static str,
    pub(crate) client: Imp,
    pub(crate) server: Imp,
    /// For `connect` and `idle`: connections held.
    pub(crate) count: usize,
}

/// Every repetition's JSON line of a cell, or why it failed.
pub(crate) type Results = BTreeMap<CellKey, Vec<Result<Value, String>>>;
pub(crate) type CellKey = (&'static str, &'static str, Imp, Imp, usize);

impl Cell {
    /// Whether `--only`'s `pick` (`WORKLOAD[:TRANSPORT[:CLIENT-SERVER]]`, by the keys the
    /// command lines use: `raw`, `ours`, `rmcp`, `ts`, `py`) names this cell. The diagnostic
    /// pair is `ours1-ours1`.
    fn is_picked(&self, pick: &str) -> bool {
        let key = |imp: Imp| match imp {
            OursLocal => "ours1",
            other => other.key(),
        };
        let mut parts = pick.split(':');
        let pair = format!("{}-{}", key(self.client), key(self.server));
        [self.workload, self.transport, pair.as_str()]
            .into_iter()
            .zip(&mut parts)
            .all(|(mine, asked)| mine == asked)
    }

    pub(crate) fn key(&self) -> CellKey {
        (
            self.workload,
            self.transport,
            self.client,
            self.server,
            self.count,
        )
    }
}

/// HTTP servers the driver keeps running for a group of cells.
struct HttpServers {
    running: BTreeMap<Imp, (tokio::process::Child, u16)>,
}

impl HttpServers {
    async fn start(setup: &Setup, imps: &[Imp], tools: usize) -> anyhow::Result<Self> {
        let mut running = BTreeMap::new();
        for &imp in imps {
            let port = free_port()?;
            let argv = setup.server(imp, Some(port), tools);
            let child = tokio::process::Command::new(&argv[0])
                .args(&argv[1..])
                .envs(diagnostics(None, Some(imp)))
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .kill_on_drop(true)
                .spawn()
                .with_context(|| format!("starting the {} HTTP server", imp.label()))?;
            running.insert(imp, (child, port));
        }
        for (imp, (_, port)) in &running {
            wait_listening(*port, imp.label()).await?;
        }
        Ok(Self { running })
    }

    fn url(&self, imp: Imp) -> anyhow::Result<String> {
        match self.running.get(&imp) {
            Some((_, port)) => Ok(format!("http://127.0.0.1:{port}/mcp")),
            None => bail!("no {} HTTP server is running", imp.label()),
        }
    }
}

/// The environment of a diagnostic client (which passes it on to the stdio server it
/// starts) or HTTP server; none for the others.
fn diagnostics(client: Option<Imp>, server: Option<Imp>) -> Vec<(&'static str, &'static str)> {
    let mut env = Vec::new();
    if client == Some(OursLocal) || server == Some(OursLocal) {
        env.push(("MCP_BENCH_RT", "current"));
    }
    env
}

fn free_port() -> anyhow::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

async fn wait_listening(port: u16, what: &str) -> anyhow::Result<()> {
    let end = Instant::now() + Duration::from_secs(60);
    while Instant::now() < end {
        if tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_ok()
        {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    bail!("the {what} HTTP server did not listen on port {port} within 60 s")
}

pub(crate) fn run(args: &[String]) -> anyhow::Result<()> {
    let mut out = None;
    let mut node = "node".to_owned();
    let mut sdk = None;
    let mut python = None;
    let mut quick = false;
    let mut reps = None;
    let mut note = String::new();
    let mut peers = crate::gateways::Peers::default();
    let mut only = None;
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        let mut value = || {
            it.next()
                .cloned()
                .with_context(|| format!("{flag} needs a value"))
        };
        match flag.as_str() {
            "--out" => out = Some(PathBuf::from(value()?)),
            "--node" => node = value()?,
            "--sdk" => sdk = Some(PathBuf::from(value()?)),
            "--python" => python = Some(PathBuf::from(value()?)),
            "--reps" => reps = Some(value()?.parse()?),
            "--note" => note = value()?,
            "--quick" => quick = true,
            "--only" => only = Some(value()?),
            other => {
                if !peers.flag(other, value)? {
                    bail!("unknown flag {other}")
                }
            }
        }
    }
    let bench = Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf();
    let setup = Setup {
        exe: std::env::current_exe()?,
        bench: bench.clone(),
        node,
        sdk: sdk.context("--sdk is required")?,
        python: python.context("--python is required")?,
        warmup_ms: if quick { 50 } else { 150 },
        measure_ms: if quick { 200 } else { 500 },
        reps: reps.unwrap_or(if quick { 1 } else { 3 }),
        peers,
        quick,
        only,
    };
    let started = Instant::now();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let results = rt.block_on(all(&setup))?;
    let took = started.elapsed();
    let page = render::page(&render::Context {
        results: &results,
        versions: versions(&setup, &bench)?,
        machine: machine(),
        reps: setup.reps,
        warmup_ms: setup.warmup_ms,
        measure_ms: setup.measure_ms,
        took,
        quick,
        note,
    });
    match out {
        Some(path) => {
            std::fs::write(&path, page).with_context(|| format!("writing {}", path.display()))?;
            eprintln!("wrote {} after {:.0} s", path.display(), took.as_secs_f64());
        }
        None => print!("{page}"),
    }
    Ok(())
}

fn cells(workload: &'static str, transport: &'static str, pairs: &[(Imp, Imp)]) -> Vec<Cell> {
    pairs
        .iter()
        .map(|&(client, server)| Cell {
            workload,
            transport,
            client,
            server,
            count: if matches!(workload, "connect") {
                MANY
            } else {
                1
            },
        })
        .collect()
}

fn memory_cells(transport: &'static str) -> Vec<Cell> {
    [1, MANY]
        .into_iter()
        .flat_map(|count| {
            CLIENTS.iter().map(move |&client| Cell {
                workload: "idle",
                transport,
                client,
                server: Ours,
                count,
            })
        })
        .collect()
}

async fn all(setup: &Setup) -> anyhow::Result<Results> {
    let mut results = Results::new();
    let only = setup.only.as_deref();
    if only.is_none_or(|o| o == "gateways") {
        let gateways = crate::gateways::Setup {
            exe: &setup.exe,
            node: &setup.node,
            peers: &setup.peers,
            warmup_ms: setup.warmup_ms,
            measure_ms: setup.measure_ms,
            reps: setup.reps,
            quick: setup.quick,
        };
        crate::gateways::all(&gateways, &mut results).await;
    }
    if only.is_none_or(|o| o == "ready") {
        let ready = crate::ready::Setup {
            exe: &setup.exe,
            bench: &setup.bench,
            sdk: &setup.sdk,
            python: &setup.python,
            reps: setup.reps,
        };
        crate::ready::all(&ready, &mut results).await;
    }
    if matches!(only, Some("gateways" | "ready")) {
        return Ok(results);
    }
    let chosen = |cells: Vec<Cell>| -> Vec<Cell> {
        cells
            .into_iter()
            .filter(|c| only.is_none_or(|o| o.split(',').any(|pick| c.is_picked(pick))))
            .collect()
    };
    let servers = [Raw, Ours, Rmcp, Ts, Py, OursLocal];

    let stdio: Vec<Cell> = chosen(
        [
            cells("call", "stdio", &call_pairs()),
            cells("big", "stdio", MCP_PAIRS),
            cells("connect", "stdio", CONNECT_PAIRS),
            memory_cells("stdio"),
        ]
        .concat(),
    );
    group(setup, &stdio, None, 0, &mut results).await;
    let list = chosen(cells("list", "stdio", MCP_PAIRS));
    group(setup, &list, None, LIST_TOOLS, &mut results).await;

    let http: Vec<Cell> = chosen(
        [
            cells("call", "http", &call_pairs()),
            cells("big", "http", MCP_PAIRS),
            cells("connect", "http", MCP_PAIRS),
            memory_cells("http"),
        ]
        .concat(),
    );
    if !http.is_empty() {
        let running = HttpServers::start(setup, &servers, 0).await?;
        group(setup, &http, Some(&running), 0, &mut results).await;
    }
    let list = chosen(cells("list", "http", MCP_PAIRS));
    if !list.is_empty() {
        let running = HttpServers::start(setup, &servers[1..5], LIST_TOOLS).await?;
        group(setup, &list, Some(&running), LIST_TOOLS, &mut results).await;
    }
    Ok(results)
}

/// Runs `cells` workload by workload, each workload's cells interleaved per repetition.
async fn group(
    setup: &Setup,
    cells: &[Cell],
    http: Option<&HttpServers>,
    tools: usize,
    results: &mut Results,
) {
    let mut workloads: Vec<&str> = cells.iter().map(|c| c.workload).collect();
    workloads.dedup();
    for workload in workloads {
        let these: Vec<&Cell> = cells.iter().filter(|c| c.workload == workload).collect();
        for rep in 0..setup.reps {
            for cell in &these {
                let t = Instant::now();
                let outcome = measure(setup, cell, http, tools)
                    .await
                    .map_err(|e| format!("{e:#}"));
                eprintln!(
                    "[{rep}] {} {} {}→{} x{}: {} ({:.1} s)",
                    cell.workload,
                    cell.transport,
                    cell.client.label(),
                    cell.server.label(),
                    cell.count,
                    match &outcome {
                        Ok(v) => v.to_string(),
                        Err(e) => format!("FAILED: {e}"),
                    },
                    t.elapsed().as_secs_f64()
                );
                results.entry(cell.key()).or_default().push(outcome);
            }
        }
    }
}

async fn measure(
    setup: &Setup,
    cell: &Cell,
    http: Option<&HttpServers>,
    tools: usize,
) -> anyhow::Result<Value> {
    let mut spec = json!({
        "transport": cell.transport,
        "workload": cell.workload,
        "concurrency": [1, 16, 256],
        "warmup_ms": setup.warmup_ms,
        "measure_ms": setup.measure_ms,
        "count": cell.count,
        "tools": tools,
    });
    match http {
        None => spec["server"] = json!(setup.server(cell.server, None, tools)),
        Some(servers) => {
            let mut url = servers.url(cell.server)?;
            if cell.server == Raw {
                url = url.trim_end_matches("mcp").to_owned();
            }
            spec["url"] = json!(url);
        }
    }
    let mut command = setup.client(cell.client, &spec);
    let server = (cell.transport == "stdio").then_some(cell.server);
    command
        .envs(diagnostics(Some(cell.client), server))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let output = tokio::time::timeout(Duration::from_secs(120), command.output())
        .await
        .context("timed out after 120 s")??;
    let stdout = String::from_utf8_lossy(&output.stdout);
    let line = stdout.lines().rev().find(|l| l.starts_with('{'));
    match (output.status.success(), line) {
        (true, Some(line)) => Ok(serde_json::from_str(line)?),
        _ => {
            // The line that names the error, else the last one.
            let stderr = String::from_utf8_lossy(&output.stderr);
            let lines: Vec<&str> = stderr
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .collect();
            let why = lines
                .iter()
                .rev()
                .find(|l| l.contains("Error") || l.contains("error"))
                .or(lines.last())
                .map_or("", |l| l.trim_start_matches(['|', ' ']));
            bail!("{}: {why}", output.status)
        }
    }
}

/// What ran: each implementation's version, and the runtimes'.
fn versions(setup: &Setup, bench: &Path) -> anyhow::Result<Vec<(String, String)>> {
    let lock = std::fs::read_to_string(bench.join("Cargo.lock"))?;
    let rmcp = lock
        .split("[[package]]")
        .find(|p| p.contains("name = \"rmcp\""))
        .and_then(|p| p.lines().find_map(|l| l.strip_prefix("version = ")))
        .map(|v| v.trim_matches('"').to_owned())
        .unwrap_or_else(|| "?".into());
    let sdk: Value = serde_json::from_str(
        &std::fs::read_to_string(
            setup
                .sdk
                .join("node_modules/@modelcontextprotocol/sdk/package.json"),
        )
        .unwrap_or_default(),
    )
    .unwrap_or_default();
    let run = |program: &str, args: &[&str]| {
        std::process::Command::new(program)
            .args(args)
            .output()
            .ok()
            .map(|o| {
                String::from_utf8_lossy(if o.stdout.is_empty() {
                    &o.stderr
                } else {
                    &o.stdout
                })
                .trim()
                .to_owned()
            })
            .unwrap_or_else(|| "?".into())
    };
    let python = setup.python.display().to_string();
    let commit = run(
        "git",
        &[
            "-C",
            &bench.display().to_string(),
            "rev-parse",
            "--short",
            "HEAD",
        ],
    );
    Ok(vec![
        (
            "ours".into(),
            format!("this repository's crates at commit {commit} (path dependencies)"),
        ),
        ("rmcp".into(), format!("rmcp {rmcp} (crates.io)")),
        (
            "TypeScript".into(),
            format!(
                "@modelcontextprotocol/sdk {} (npm) on Node {}",
                sdk["version"].as_str().unwrap_or("?"),
                run(&setup.node, &["--version"])
            ),
        ),
        (
            "Python".into(),
            format!(
                "mcp {} (PyPI) on {}",
                run(
                    &python,
                    &[
                        "-c",
                        "import importlib.metadata as m; print(m.version('mcp'))"
                    ]
                ),
                run(&python, &["--version"])
            ),
        ),
    ])
}

/// CPU model, cores, kernel and memory, from /proc.
fn machine() -> String {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find_map(|l| l.strip_prefix("model name"))
        .map(|m| m.trim_start_matches([' ', '\t', ':']).to_owned())
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = std::thread::available_parallelism().map_or(0, usize::from);
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let mem_kib: u64 = std::fs::read_to_string("/proc/meminfo")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0);
    format!(
        "{model}, {cores} cores, {:.0} GiB of memory, Linux {}",
        mem_kib as f64 / (1024.0 * 1024.0),
        kernel.trim()
    )
}
