//! The workloads, written once for the Rust clients over a small [`Imp`] trait: what a spec
//! asks for, the loops that time it, and the JSON line that reports it. `bench/ts/client.mjs`
//! and `bench/py/client.py` are line-for-line ports of these loops.

use std::any::Any;
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail, ensure};
use serde_json::{Value, json};
use tokio::task::JoinSet;

/// The size of the `big` tool's text.
pub(crate) const BIG_BYTES: usize = 1 << 20;
/// What the `echo` tool is called with, and answers.
pub(crate) const ECHO_TEXT: &str = "hello";
/// Page size of `tools/list` when a server serves generated tools.
pub(crate) const PAGE_SIZE: usize = 500;

/// One client run, as the driver asks for it.
#[derive(Debug, Clone)]
pub(crate) struct Spec {
    /// `stdio` or `http`.
    pub(crate) transport: String,
    /// For stdio: the server's command line.
    pub(crate) server: Vec<String>,
    /// For HTTP: the endpoint.
    pub(crate) url: String,
    /// `call`, `big`, `list`, `connect` or `idle`.
    pub(crate) workload: String,
    /// For `call`: the concurrency levels, in order.
    pub(crate) concurrency: Vec<usize>,
    pub(crate) warmup: Duration,
    pub(crate) measure: Duration,
    /// For `connect` and `idle`: how many connections.
    pub(crate) count: usize,
    /// For `list`: how many tools the server has.
    pub(crate) tools: usize,
}

impl Spec {
    pub(crate) fn parse(text: &str) -> anyhow::Result<Self> {
        let v: Value = serde_json::from_str(text).context("the spec is not JSON")?;
        let s = |k: &str| v[k].as_str().unwrap_or_default().to_owned();
        let n = |k: &str| v[k].as_u64().unwrap_or(0);
        Ok(Self {
            transport: s("transport"),
            server: v["server"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|x| x.as_str().map(str::to_owned))
                        .collect()
                })
                .unwrap_or_default(),
            url: s("url"),
            workload: s("workload"),
            concurrency: v["concurrency"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|x| x.as_u64().map(|c| c as usize))
                        .collect()
                })
                .unwrap_or_default(),
            warmup: Duration::from_millis(n("warmup_ms")),
            measure: Duration::from_millis(n("measure_ms")),
            count: n("count") as usize,
            tools: n("tools") as usize,
        })
    }

    pub(crate) fn is_stdio(&self) -> bool {
        self.transport == "stdio"
    }

    /// The stdio server's program and arguments.
    pub(crate) fn command(&self) -> anyhow::Result<(&str, &[String])> {
        match self.server.split_first() {
            Some((program, args)) => Ok((program, args)),
            None => bail!("a stdio spec needs a server command"),
        }
    }
}

/// One open connection of a client implementation.
pub(crate) trait Conn: Send + Sync + 'static {
    /// Calls `echo` (or `big` when `big`), returning the length of the answer's text.
    fn call(&self, big: bool) -> impl Future<Output = anyhow::Result<usize>> + Send;
    /// Lists every tool, following the cursors; returns how many.
    fn list_all(&self) -> impl Future<Output = anyhow::Result<usize>> + Send;
    /// Ends the connection politely.
    fn close(self) -> impl Future<Output = ()> + Send;
}

/// A client implementation.
pub(crate) trait Imp {
    type Conn: Conn;

    /// Connects and initializes one session.
    fn connect(spec: Spec) -> impl Future<Output = anyhow::Result<Self::Conn>> + Send;

    /// Connects `spec.count` sessions at once and lists each one's tools; returns what keeps
    /// them open and how many tools were listed in all. By default, `connect` on a task each.
    fn connect_many(
        spec: Spec,
    ) -> impl Future<Output = anyhow::Result<(Box<dyn Any + Send>, usize)>> + Send {
        async move {
            let mut set = JoinSet::new();
            for _ in 0..spec.count {
                let spec = spec.clone();
                set.spawn(async move {
                    let conn = Self::connect(spec).await?;
                    let tools = conn.list_all().await?;
                    Ok::<_, anyhow::Error>((conn, tools))
                });
            }
            let mut conns = Vec::new();
            let mut tools = 0;
            while let Some(joined) = set.join_next().await {
                let (conn, n) = joined??;
                conns.push(conn);
                tools += n;
            }
            Ok((Box::new(conns) as Box<dyn Any + Send>, tools))
        }
    }
}

/// Runs the spec's workload with implementation `I` and returns its JSON line.
pub(crate) async fn run<I: Imp>(spec: &Spec) -> anyhow::Result<Value> {
    match spec.workload.as_str() {
        "call" => {
            let conn = Arc::new(I::connect(spec.clone()).await?);
            let mut phases = Vec::new();
            for &c in &spec.concurrency {
                phase(&conn, c, spec.warmup, false).await?;
                let (mut lat, secs) = phase(&conn, c, spec.measure, false).await?;
                phases.push(summary(c, &mut lat, secs));
            }
            close(conn).await;
            Ok(json!({ "phases": phases }))
        }
        "big" | "list" => {
            let big = spec.workload == "big";
            let conn = I::connect(spec.clone()).await?;
            // What the connected client holds before the first run, and (below) the most
            // it ever held: the peak minus this is what the payloads cost it.
            let connected = rss_kib()?;
            let mut lat = Vec::new();
            let start = Instant::now();
            // At least three runs, then until the measuring time is up.
            while lat.len() < 3 || start.elapsed() < spec.measure {
                let t = Instant::now();
                let n = if big {
                    conn.call(true).await?
                } else {
                    conn.list_all().await?
                };
                lat.push(t.elapsed().as_nanos() as u64);
                let want = if big { BIG_BYTES } else { spec.tools + 2 };
                ensure!(n == want, "got {n}, expected {want}");
            }
            let peak = status_kib("VmHWM")?;
            conn.close().await;
            let runs = lat.len();
            lat.sort_unstable();
            Ok(json!({
                "runs": runs,
                "p50_us": pct(&lat, 50),
                "p90_us": pct(&lat, 90),
                "max_us": pct(&lat, 100),
                "connected_kib": connected,
                "peak_kib": peak,
            }))
        }
        "connect" => {
            let start = Instant::now();
            let (held, tools) = I::connect_many(spec.clone()).await?;
            let wall = start.elapsed();
            ensure!(tools == spec.count * 2, "listed {tools} tools in all");
            drop(held);
            Ok(json!({ "wall_us": wall.as_micros() as u64 }))
        }
        "idle" => {
            let (held, _) = I::connect_many(spec.clone()).await?;
            // Let start-up garbage settle, as a host that has been idle a moment would.
            tokio::time::sleep(Duration::from_millis(500)).await;
            let rss = rss_kib()?;
            drop(held);
            Ok(json!({ "rss_kib": rss }))
        }
        other => bail!("unknown workload `{other}`"),
    }
}

async fn close<C: Conn>(conn: Arc<C>) {
    if let Ok(conn) = Arc::try_unwrap(conn) {
        conn.close().await;
    }
}

/// `c` tasks calling `echo` in a loop until `length` has passed; every latency in
/// nanoseconds, and the seconds from the start to the last answer.
pub(crate) async fn phase<C: Conn>(
    conn: &Arc<C>,
    c: usize,
    length: Duration,
    big: bool,
) -> anyhow::Result<(Vec<u64>, f64)> {
    let start = Instant::now();
    let deadline = start + length;
    let mut set = JoinSet::new();
    for _ in 0..c {
        let conn = Arc::clone(conn);
        set.spawn(async move {
            let mut lat = Vec::new();
            while Instant::now() < deadline {
                let t = Instant::now();
                let n = conn.call(big).await?;
                lat.push(t.elapsed().as_nanos() as u64);
                let want = if big { BIG_BYTES } else { ECHO_TEXT.len() };
                ensure!(n == want, "the call answered {n} bytes, expected {want}");
            }
            Ok::<_, anyhow::Error>((lat, Instant::now()))
        });
    }
    let mut all = Vec::new();
    let mut end = start;
    while let Some(joined) = set.join_next().await {
        let (lat, done) = joined??;
        all.extend(lat);
        end = end.max(done);
    }
    Ok((all, (end - start).as_secs_f64()))
}

/// A phase's JSON: concurrency, calls, seconds, p50 and p99 in microseconds.
pub(crate) fn summary(c: usize, lat: &mut [u64], secs: f64) -> Value {
    lat.sort_unstable();
    json!({
        "c": c,
        "calls": lat.len(),
        "secs": secs,
        "p50_us": pct(lat, 50),
        "p99_us": pct(lat, 99),
    })
}

/// The `p`th percentile (nearest rank) of sorted nanoseconds, in microseconds.
pub(crate) fn pct(sorted: &[u64], p: usize) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() - 1) * p).div_ceil(100);
    sorted[i] as f64 / 1000.0
}

/// This process's resident set size, from `/proc/self/status`.
pub(crate) fn rss_kib() -> anyhow::Result<u64> {
    status_kib("VmRSS")
}

/// A size of this process from `/proc/self/status`, in KiB: `VmRSS` (resident now) or
/// `VmHWM` (the most it was ever resident: its peak).
pub(crate) fn status_kib(field: &str) -> anyhow::Result<u64> {
    let status = std::fs::read_to_string("/proc/self/status")?;
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .with_context(|| format!("no {field} in /proc/self/status"))
}

/// The generated tools a server with `--tools N` lists after `echo` and `big`: the same
/// names, descriptions and schemas in every implementation.
pub(crate) fn generated_tool(i: usize) -> (String, String, Value) {
    (
        format!("tool_{i:05}"),
        format!("Generated tool number {i} of the tools/list benchmark."),
        json!({"type": "object", "properties": {"value": {"type": "string"}}}),
    )
}

/// The schemas of `echo` and `big`.
pub(crate) fn echo_schema() -> Value {
    json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]})
}

pub(crate) fn big_schema() -> Value {
    json!({"type": "object"})
}

/// The page of `total` items that starts at `cursor` (an offset), and the next cursor.
pub(crate) fn page(cursor: Option<&str>, total: usize) -> (std::ops::Range<usize>, Option<String>) {
    let start = cursor
        .and_then(|c| c.parse::<usize>().ok())
        .unwrap_or(0)
        .min(total);
    let end = (start + PAGE_SIZE).min(total);
    (start..end, (end < total).then(|| end.to_string()))
}
