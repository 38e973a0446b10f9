//! The gateway rows (issue 25 sections 1 and 4a): one hop between our client and our server.
//! The same upstream (`mcp-bench server ours stdio`) behind each gateway, the same client
//! (ours, over Streamable HTTP) in front: ours (`mcp-host serve --gateway F --http`),
//! supergateway, the TypeScript `mcp-proxy` and the Python `mcp-proxy`, beside the client
//! straight to the server over HTTP and over stdio (whose two p50s added are the floor of a
//! hop: what a gateway cannot beat, since it is a client of one and a server of the other).
//!
//! Two workloads: `call` (the driver's, against each gateway's URL) and `crowd`, run here by
//! `mcp-bench crowd <spec>`: a client process that opens `count` sessions (each with its
//! standalone GET stream, as a client that listens does), says so on stdout at one session
//! and at all of them, waiting each time for a line on stdin while the driver reads the
//! gateway's resident set, then times calls on one of them with the others still connected.
//! Each crowd runs against a gateway started for it alone, so that its memory is its own.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use mcp_http::{EraCache, HttpConfig};
use mcp_protocol::ClientConfig;
use mcp_protocol::schema::Implementation;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};

use crate::driver::{CellKey, Imp, Results};
use crate::workload::{self, Spec};

/// What stands between the client and the server in a row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Hop {
    /// No hop: the client starts the server over stdio.
    DirectStdio,
    /// No hop: the client posts to the server's own HTTP endpoint.
    DirectHttp,
    /// `mcp-host serve --gateway F --http`, passthrough.
    Ours,
    /// supergateway, stdio to stateful Streamable HTTP.
    Supergateway,
    /// The TypeScript `mcp-proxy` (npm), stdio to Streamable HTTP.
    ProxyTs,
    /// The Python `mcp-proxy` (PyPI), stdio to Streamable HTTP.
    ProxyPy,
}

use Hop::{DirectHttp, DirectStdio, Ours, ProxyPy, ProxyTs, Supergateway};

/// The rows, in the page's order.
pub(crate) const HOPS: [Hop; 6] = [
    DirectStdio,
    DirectHttp,
    Ours,
    Supergateway,
    ProxyTs,
    ProxyPy,
];
/// The gateways proper.
pub(crate) const GATEWAYS: [Hop; 4] = [Ours, Supergateway, ProxyTs, ProxyPy];
/// Clients connected in the crowd of every HTTP row.
pub(crate) const CROWD: usize = 1_000;
/// Sessions held on our gateway for its bytes per session.
pub(crate) const MANY_SESSIONS: usize = 10_000;
/// The goals of issue 25.
pub(crate) const GOAL_P50_OF_FLOOR: f64 = 1.15;
pub(crate) const GOAL_RATE_OF_DIRECT: f64 = 0.6;
pub(crate) const GOAL_BYTES_PER_SESSION: f64 = 2048.0;
/// The variable that pins our client to the handshake era (2025-11-25) in every gateway row:
/// every gateway here speaks it, and it is the era in which a gateway keeps a session per
/// client (a 2026-07-28 client has none to keep), which is what the crowds measure.
pub(crate) const ERA_VAR: &str = "MCP_BENCH_ERA";
/// The pinned peers, installed by `cargo xtask bench`.
pub(crate) const SUPERGATEWAY: &str = "supergateway 4.0.0 (npm)";
pub(crate) const PROXY_TS: &str = "mcp-proxy 6.7.19 (npm)";
pub(crate) const PROXY_PY: &str = "mcp-proxy 0.13.0 (PyPI)";

impl Hop {
    pub(crate) fn label(self) -> &'static str {
        match self {
            DirectStdio => "none: ours → ours over stdio",
            DirectHttp => "none: ours → ours over HTTP",
            Ours => "ours (`mcp-host serve --gateway`)",
            Supergateway => "supergateway",
            ProxyTs => "mcp-proxy (TypeScript)",
            ProxyPy => "mcp-proxy (Python)",
        }
    }

    /// The transport field of the rows' cells: a name no other row uses.
    pub(crate) fn key(self) -> &'static str {
        match self {
            DirectStdio => "gw:direct-stdio",
            DirectHttp => "gw:direct-http",
            Ours => "gw:ours",
            Supergateway => "gw:supergateway",
            ProxyTs => "gw:mcp-proxy-ts",
            ProxyPy => "gw:mcp-proxy-py",
        }
    }

    /// The key of this row's cell of `workload` with `count` clients.
    pub(crate) fn cell(self, workload: &'static str, count: usize) -> CellKey {
        (workload, self.key(), Imp::Ours, Imp::Ours, count)
    }
}

/// Where the gateways are; `None` when the driver was not told (the rows are then left out).
#[derive(Debug, Clone, Default)]
pub(crate) struct Peers {
    pub(crate) mcp_host: Option<PathBuf>,
    /// supergateway's `dist/index.js`.
    pub(crate) supergateway: Option<PathBuf>,
    /// The TypeScript mcp-proxy's `dist/bin/mcp-proxy.mjs`.
    pub(crate) proxy_ts: Option<PathBuf>,
    /// The Python mcp-proxy's console script.
    pub(crate) proxy_py: Option<PathBuf>,
}

impl Peers {
    /// Takes `--mcp-host`, `--supergateway`, `--mcp-proxy-ts` and `--mcp-proxy-py`; false for
    /// another flag.
    pub(crate) fn flag(
        &mut self,
        flag: &str,
        value: impl FnOnce() -> anyhow::Result<String>,
    ) -> anyhow::Result<bool> {
        let slot = match flag {
            "--mcp-host" => &mut self.mcp_host,
            "--supergateway" => &mut self.supergateway,
            "--mcp-proxy-ts" => &mut self.proxy_ts,
            "--mcp-proxy-py" => &mut self.proxy_py,
            _ => return Ok(false),
        };
        *slot = Some(PathBuf::from(value()?));
        Ok(true)
    }
}

/// What the rows need of the driver's setup.
pub(crate) struct Setup<'a> {
    pub(crate) exe: &'a Path,
    pub(crate) node: &'a str,
    pub(crate) peers: &'a Peers,
    pub(crate) warmup_ms: u64,
    pub(crate) measure_ms: u64,
    pub(crate) reps: usize,
    pub(crate) quick: bool,
}

/// A gateway (or our HTTP server) running on a loopback port, killed when dropped.
struct Running {
    child: tokio::process::Child,
    port: u16,
    _dir: TempDir,
}

struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A command line run with the open-file limit raised: 10,000 sessions are 20,000 sockets.
fn unlimited(argv: &[String]) -> tokio::process::Command {
    let mut c = tokio::process::Command::new("sh");
    c.args(["-c", "ulimit -n 65536 2>/dev/null; exec \"$@\"", "sh"]);
    c.args(argv);
    c
}

impl Setup<'_> {
    /// The upstream every gateway starts: our benchmark server over stdio.
    fn upstream(&self) -> Vec<String> {
        vec![
            self.exe.display().to_string(),
            "server".into(),
            "ours".into(),
            "stdio".into(),
        ]
    }

    async fn start(&self, hop: Hop) -> anyhow::Result<Running> {
        let port = std::net::TcpListener::bind("127.0.0.1:0")?
            .local_addr()?
            .port();
        let dir = std::env::temp_dir().join(format!("mcp-bench-gw-{}-{port}", std::process::id()));
        std::fs::create_dir_all(&dir)?;
        let dir = TempDir(dir);
        let missing = || format!("no path for {} (a flag of `mcp-bench run`)", hop.label());
        let upstream = self.upstream();
        let argv: Vec<String> = match hop {
            DirectStdio => bail!("the stdio row runs no server of its own"),
            DirectHttp => vec![
                self.exe.display().to_string(),
                "server".into(),
                "ours".into(),
                "http".into(),
                "--port".into(),
                port.to_string(),
            ],
            Ours => {
                let file = dir.0.join("gateway.json");
                let gateway = json!({
                    "mode": "passthrough",
                    "mcpServers": {"bench": {
                        "command": upstream[0],
                        "args": &upstream[1..],
                        "permission": {"default": "allow"},
                    }},
                });
                std::fs::write(&file, serde_json::to_vec_pretty(&gateway)?)?;
                let mcp_host = self.peers.mcp_host.as_ref().with_context(missing)?;
                vec![
                    mcp_host.display().to_string(),
                    "serve".into(),
                    "--gateway".into(),
                    file.display().to_string(),
                    "--http".into(),
                    format!("127.0.0.1:{port}"),
                    "--max-connections".into(),
                    (4 * MANY_SESSIONS).to_string(),
                    "--max-sessions".into(),
                    (4 * MANY_SESSIONS).to_string(),
                ]
            }
            Supergateway => {
                let script = self.peers.supergateway.as_ref().with_context(missing)?;
                vec![
                    self.node.to_owned(),
                    script.display().to_string(),
                    "--stdio".into(),
                    upstream.join(" "),
                    "--outputTransport".into(),
                    "streamableHttp".into(),
                    "--stateful".into(),
                    "--port".into(),
                    port.to_string(),
                    "--streamableHttpPath".into(),
                    "/mcp".into(),
                    "--logLevel".into(),
                    "none".into(),
                ]
            }
            ProxyTs => {
                let script = self.peers.proxy_ts.as_ref().with_context(missing)?;
                let mut argv = vec![
                    self.node.to_owned(),
                    script.display().to_string(),
                    "--port".into(),
                    port.to_string(),
                    "--host".into(),
                    "127.0.0.1".into(),
                    "--server".into(),
                    "stream".into(),
                    "--".into(),
                ];
                argv.extend(upstream);
                argv
            }
            ProxyPy => {
                let script = self.peers.proxy_py.as_ref().with_context(missing)?;
                let mut argv = vec![
                    script.display().to_string(),
                    "--port".into(),
                    port.to_string(),
                    "--host".into(),
                    "127.0.0.1".into(),
                    "--log-level".into(),
                    "WARNING".into(),
                    "--".into(),
                ];
                argv.extend(upstream);
                argv
            }
        };
        let child = unlimited(&argv)
            .env("HOME", &dir.0)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .with_context(|| format!("starting {}", hop.label()))?;
        let end = Instant::now() + Duration::from_secs(60);
        loop {
            if tokio::net::TcpStream::connect(("127.0.0.1", port))
                .await
                .is_ok()
            {
                break;
            }
            if Instant::now() > end {
                bail!("{} did not listen on port {port} within 60 s", hop.label());
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        Ok(Running {
            child,
            port,
            _dir: dir,
        })
    }

    fn client(&self, role: &str, spec: &Value) -> tokio::process::Command {
        let argv = [
            self.exe.display().to_string(),
            role.to_owned(),
            "ours".to_owned(),
            spec.to_string(),
        ];
        let mut c = unlimited(&argv);
        c.env(ERA_VAR, "handshake");
        c.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        c
    }
}

fn url(port: u16) -> String {
    format!("http://127.0.0.1:{port}/mcp")
}

/// Every gateway row, each workload's cells interleaved per repetition.
pub(crate) async fn all(setup: &Setup<'_>, results: &mut Results) {
    if setup.peers.mcp_host.is_none() {
        eprintln!("gateway rows: left out (no --mcp-host)");
        return;
    }
    // The call rows: every gateway running for the whole group.
    let mut running = BTreeMap::new();
    for hop in &HOPS[1..] {
        match setup.start(*hop).await {
            Ok(r) => {
                running.insert(hop.key(), r);
            }
            Err(e) => eprintln!("gateway rows: {e:#}"),
        }
    }
    for rep in 0..setup.reps {
        for hop in HOPS {
            let t = Instant::now();
            let outcome = call(setup, hop, running.get(hop.key()).map(|r| r.port)).await;
            report(rep, "call", hop, 1, &outcome, t);
            results
                .entry(hop.cell("call", 1))
                .or_default()
                .push(outcome);
        }
    }
    drop(running);
    // The crowds: a gateway of its own each time.
    let crowd = if setup.quick { 50 } else { CROWD };
    for rep in 0..setup.reps {
        for hop in &HOPS[1..] {
            let t = Instant::now();
            let outcome = crowd_cell(setup, *hop, crowd, true).await;
            report(rep, "crowd", *hop, crowd, &outcome, t);
            results
                .entry(hop.cell("crowd", CROWD))
                .or_default()
                .push(outcome);
        }
    }
    // Our gateway's bytes per idle session, holding no connection: once, it is memory, not
    // time.
    let many = if setup.quick { 500 } else { MANY_SESSIONS };
    let t = Instant::now();
    let outcome = crowd_cell(setup, Ours, many, false).await;
    report(0, "crowd", Ours, many, &outcome, t);
    results
        .entry(Ours.cell("crowd", MANY_SESSIONS))
        .or_default()
        .push(outcome);
}

fn report(
    rep: usize,
    what: &str,
    hop: Hop,
    count: usize,
    outcome: &Result<Value, String>,
    t: Instant,
) {
    eprintln!(
        "[{rep}] gateway {what} {} x{count}: {} ({:.1} s)",
        hop.label(),
        match outcome {
            Ok(v) => v.to_string(),
            Err(e) => format!("FAILED: {e}"),
        },
        t.elapsed().as_secs_f64()
    );
}

async fn call(setup: &Setup<'_>, hop: Hop, port: Option<u16>) -> Result<Value, String> {
    let mut spec = json!({
        "workload": "call",
        "concurrency": [1, 16],
        "warmup_ms": setup.warmup_ms,
        "measure_ms": setup.measure_ms,
        "count": 1,
    });
    if hop == DirectStdio {
        spec["transport"] = json!("stdio");
        spec["server"] = json!(setup.upstream());
    } else {
        let Some(port) = port else {
            return Err(format!("{} is not running", hop.label()));
        };
        spec["transport"] = json!("http");
        spec["url"] = json!(url(port));
    }
    let mut command = setup.client("client", &spec);
    command.stdin(Stdio::null());
    let output = match tokio::time::timeout(Duration::from_secs(120), command.output()).await {
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
            failure(&String::from_utf8_lossy(&output.stderr))
        )),
    }
}

/// Why a client failed, in one line, from its standard error: anyhow's `Error: …` and its
/// causes, or else the last line (a panic's). With `RUST_BACKTRACE` set, as it may be in the
/// environment the driver inherits, anyhow prints the error's backtrace after it, whose last
/// line is a frame of thread creation (`clone3.S`): that was once the whole reason the page
/// gave for a failed crowd.
fn failure(stderr: &str) -> String {
    let mut lines = stderr.lines().map(str::trim);
    let Some(error) = lines.find_map(|l| l.strip_prefix("Error: ")) else {
        return stderr.lines().last().unwrap_or_default().trim().to_owned();
    };
    let mut said = error.to_owned();
    // The causes follow `Caused by:`, one a line (numbered `0: …` when there are several),
    // until the backtrace; a cause that repeats what was said (its error's text includes
    // its source's) is said once.
    let mut causes = false;
    for line in lines.take_while(|l| !l.starts_with("Stack backtrace")) {
        if line == "Caused by:" {
            causes = true;
            continue;
        }
        let cause = match line.split_once(": ") {
            Some((n, rest)) if n.parse::<u32>().is_ok() => rest,
            _ => line,
        };
        if causes && !cause.is_empty() && !said.contains(cause) {
            said.push_str(": ");
            said.push_str(cause);
        }
    }
    said
}

/// A gateway started for this crowd alone: its resident set (and its process tree's: the
/// upstreams it started) at one client and at `count`, then calls timed with all connected.
async fn crowd_cell(
    setup: &Setup<'_>,
    hop: Hop,
    count: usize,
    streams: bool,
) -> Result<Value, String> {
    crowd_at(setup, hop, count, streams)
        .await
        .map_err(|e| format!("{e:#}"))
}

async fn crowd_at(
    setup: &Setup<'_>,
    hop: Hop,
    count: usize,
    streams: bool,
) -> anyhow::Result<Value> {
    let running = setup.start(hop).await?;
    let pid = running.child.id().context("the gateway has exited")?;
    let spec = json!({
        "transport": "http",
        "workload": "crowd",
        "url": url(running.port),
        "count": count,
        "warmup_ms": setup.warmup_ms,
        "measure_ms": setup.measure_ms,
        "streams": streams,
    });
    let mut child = setup
        .client("crowd", &spec)
        .spawn()
        .context("starting the crowd")?;
    let mut stdin = child.stdin.take().context("no stdin")?;
    let mut lines = BufReader::new(child.stdout.take().context("no stdout")?).lines();
    let stderr = child.stderr.take();
    let mut at = Vec::new();
    let outcome = tokio::time::timeout(Duration::from_secs(600), async {
        loop {
            let Some(line) = lines.next_line().await? else {
                bail!("the crowd ended early");
            };
            let v: Value =
                serde_json::from_str(&line).with_context(|| format!("the crowd said {line}"))?;
            if let Some(n) = v["connected"].as_u64() {
                // Let the gateway settle as an idle one would.
                tokio::time::sleep(Duration::from_millis(500)).await;
                let (own, tree) = rss_kib(pid);
                at.push(json!({"clients": n, "rss_kib": own, "tree_rss_kib": tree}));
                stdin.write_all(b"go\n").await?;
                stdin.flush().await?;
            } else {
                return Ok(v);
            }
        }
    })
    .await;
    let outcome = match outcome {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(e),
        Err(_) => Err(anyhow::anyhow!("timed out after 600 s")),
    };
    let _ = child.kill().await;
    let mut v = match outcome {
        Ok(v) => v,
        Err(e) => {
            let mut text = String::new();
            if let Some(mut err) = stderr {
                let _ = tokio::io::AsyncReadExt::read_to_string(&mut err, &mut text).await;
            }
            bail!("{e:#}: {}", failure(&text))
        }
    };
    v["at"] = json!(at);
    Ok(v)
}

/// The resident set of `pid` and of it with every descendant, in KiB, from `/proc`.
fn rss_kib(pid: u32) -> (u64, u64) {
    let mut children: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
    if let Ok(dir) = std::fs::read_dir("/proc") {
        for entry in dir.flatten() {
            let Some(p) = entry
                .file_name()
                .to_str()
                .and_then(|s| s.parse::<u32>().ok())
            else {
                continue;
            };
            let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
            // The field after the command (which may hold spaces) is the state, then the parent.
            let ppid = stat
                .rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().nth(1))
                .and_then(|s| s.parse::<u32>().ok());
            if let Some(ppid) = ppid {
                children.entry(ppid).or_default().push(p);
            }
        }
    }
    let one = |p: u32| {
        std::fs::read_to_string(format!("/proc/{p}/status"))
            .unwrap_or_default()
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .unwrap_or(0)
    };
    // `sh` execs the gateway, so `pid` is the gateway itself.
    let own = one(pid);
    let mut tree = 0;
    let mut stack = vec![pid];
    while let Some(p) = stack.pop() {
        tree += one(p);
        stack.extend(children.get(&p).into_iter().flatten());
    }
    (own, tree)
}

/// `mcp-bench crowd ours <spec>`: opens `count` sessions of the handshake era, 64 at a time,
/// each with its standalone stream when the spec's `streams` says so; prints `{"connected": 1}` and `{"connected": count}`, each time waiting
/// for a line on stdin; then times calls, one in flight, on the first session while the
/// others stay connected, and prints the phase.
///
/// Without streams the sessions after the first are idle ones that hold no connection of
/// their own ([`idle_sessions`]): our client's sessions would each keep their pooled
/// connections (two, for seconds), and the gateway's resident set would count those
/// (hyper's buffers, 16 KiB each) as the sessions' cost.
pub(crate) async fn crowd(spec: &Spec, streams: bool) -> anyhow::Result<Value> {
    let eras = EraCache::new();
    let connect = |i: usize| {
        let mut config = HttpConfig::new(format!("c{i}"), spec.url.clone());
        config.eras = eras.clone();
        config.standalone_stream = streams;
        let mut session =
            ClientConfig::new(Implementation::new("mcp-bench".into(), "0.0.0".into()));
        session.supported_versions = mcp_protocol::ProtocolVersion::HANDSHAKE.to_vec();
        async move {
            mcp_http::connect(config, session)
                .await
                .with_context(|| format!("session {i}"))
        }
    };
    let mut stdin = BufReader::new(tokio::io::stdin()).lines();
    let first = Arc::new(connect(0).await?);
    println!("{}", json!({"connected": 1}));
    stdin.next_line().await?;
    let mut held = Vec::with_capacity(spec.count);
    let mut idle = None;
    let mut next = 1;
    if !streams && spec.count > 1 {
        idle = Some(idle_sessions(&spec.url, spec.count - 1).await?);
        next = spec.count;
    }
    while next < spec.count {
        let mut batch = tokio::task::JoinSet::new();
        while batch.len() < 64 && next < spec.count {
            batch.spawn(connect(next));
            next += 1;
        }
        while let Some(joined) = batch.join_next().await {
            held.push(joined??);
        }
    }
    if spec.count > 1 {
        let idle_count = idle.as_ref().map_or(0, |(_, n)| *n);
        println!("{}", json!({"connected": held.len() + idle_count + 1}));
        stdin.next_line().await?;
    }
    workload::phase(&first, 1, spec.warmup, false).await?;
    let (mut lat, secs) = workload::phase(&first, 1, spec.measure, false).await?;
    let phase = workload::summary(1, &mut lat, secs);
    drop(held);
    drop(idle);
    Ok(json!({ "phases": [phase] }))
}

/// Begins `count` sessions of the handshake era (`initialize`, then
/// `notifications/initialized`) one after the other over one kept-alive connection, and
/// leaves them idle, as clients between calls that hold no connection. The connection stays
/// open until the sender returned is dropped: one for all of them, so that what the gateway
/// holds per session is what the sessions cost.
async fn idle_sessions(
    url: &str,
    count: usize,
) -> anyhow::Result<(
    hyper::client::conn::http1::SendRequest<http_body_util::Full<bytes::Bytes>>,
    usize,
)> {
    use http_body_util::BodyExt as _;
    let uri: hyper::Uri = url.parse().context("the gateway's URL")?;
    let authority = uri.authority().context("no host in the URL")?.to_string();
    let stream = tokio::net::TcpStream::connect(&authority)
        .await
        .with_context(|| format!("connecting to {authority}"))?;
    stream.set_nodelay(true)?;
    let (mut sender, conn) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream)).await?;
    tokio::spawn(conn);
    let post = |session: Option<&str>, body: &'static str| {
        let mut request = hyper::Request::post(uri.clone())
            .header(hyper::header::HOST, &authority)
            .header(hyper::header::CONTENT_TYPE, "application/json")
            .header(hyper::header::ACCEPT, "application/json, text/event-stream");
        if let Some(id) = session {
            request = request
                .header("mcp-session-id", id)
                .header("mcp-protocol-version", "2025-11-25");
        }
        request.body(http_body_util::Full::new(bytes::Bytes::from_static(
            body.as_bytes(),
        )))
    };
    for i in 0..count {
        // The connection is ready again once it has read the last answer whole.
        sender.ready().await?;
        let answer = sender
            .send_request(post(
                None,
                r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"mcp-bench","version":"0.0.0"}}}"#,
            )?)
            .await
            .with_context(|| format!("idle session {i}: initialize"))?;
        let id = answer
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let status = answer.status();
        // The answer is read whole, so that the connection is free for the next request.
        let body = answer.into_body().collect().await?.to_bytes();
        let Some(id) = id.filter(|_| status.is_success()) else {
            bail!(
                "idle session {i}: initialize answered {status}: {}",
                String::from_utf8_lossy(&body)
            );
        };
        sender.ready().await?;
        let answer = sender
            .send_request(post(
                Some(&id),
                r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            )?)
            .await
            .with_context(|| format!("idle session {i}: initialized"))?;
        let status = answer.status();
        answer.into_body().collect().await?;
        if status != hyper::StatusCode::ACCEPTED {
            bail!("idle session {i}: notifications/initialized answered {status}");
        }
    }
    Ok((sender, count))
}
