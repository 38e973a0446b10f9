//! The page's sections for the gateway rows (`gateways.rs`) and time to ready (`ready.rs`),
//! each with the goals of issue 25 marked met or not.

use std::fmt::Write as _;

use serde_json::Value;

use crate::driver::{CellKey, Results};
use crate::gateways::{
    CROWD, GATEWAYS, GOAL_BYTES_PER_SESSION, GOAL_P50_OF_FLOOR, GOAL_RATE_OF_DIRECT, HOPS, Hop,
    MANY_SESSIONS, PROXY_PY, PROXY_TS, SUPERGATEWAY,
};
use crate::ready::{self, CELLS, GOAL_ADDED, LATE, SERVERS};

/// The median of `metric` over the runs that gave one, and the first failure if none did.
fn median(
    results: &Results,
    key: CellKey,
    metric: impl Fn(&Value) -> Option<f64>,
) -> Result<f64, String> {
    let Some(runs) = results.get(&key) else {
        return Err("not run".into());
    };
    let mut values: Vec<f64> = runs
        .iter()
        .filter_map(|r| r.as_ref().ok())
        .filter_map(metric)
        .collect();
    values.sort_by(f64::total_cmp);
    match values.get(values.len() / 2) {
        Some(v) => Ok(*v),
        None => Err(runs
            .iter()
            .find_map(|r| r.as_ref().err().cloned())
            .unwrap_or_else(|| "no data".into())),
    }
}

fn phase(c: u64, what: &'static str) -> impl Fn(&Value) -> Option<f64> {
    move |v| {
        let p = v["phases"].as_array()?.iter().find(|p| p["c"] == c)?;
        if what == "rate" {
            Some(p["calls"].as_f64()? / p["secs"].as_f64()?)
        } else {
            p[what].as_f64()
        }
    }
}

/// The resident set (`field`) at the crowd's first checkpoint (one client) or its last (all).
fn at(last: bool, field: &'static str) -> impl Fn(&Value) -> Option<f64> {
    move |v| {
        let points = v["at"].as_array()?;
        let point = if last { points.last() } else { points.first() };
        point?[field].as_f64()
    }
}

fn us(v: f64) -> String {
    if v < 1000.0 {
        format!("{v:.0} µs")
    } else if v < 100_000.0 {
        format!("{:.2} ms", v / 1000.0)
    } else if v < 1_000_000.0 {
        format!("{:.0} ms", v / 1000.0)
    } else {
        format!("{:.2} s", v / 1e6)
    }
}

fn mib(kib: f64) -> String {
    format!("{:.1} MiB", kib / 1024.0)
}

fn shown(value: &Result<f64, String>, base: Option<f64>, show: fn(f64) -> String) -> String {
    match (value, base) {
        (Ok(v), Some(b)) if b > 0.0 => format!("{} ×{:.2}", show(*v), v / b),
        (Ok(v), _) => show(*v),
        (Err(e), _) => format!("failed: {}", short(e)),
    }
}

fn short(e: &str) -> String {
    let e = e.replace('|', "/").replace('\n', " ");
    if e.chars().count() > 100 {
        format!("{}…", e.chars().take(100).collect::<String>())
    } else {
        e
    }
}

/// One line of a goals table.
fn goal(
    w: &mut String,
    what: &str,
    measured: Option<(f64, String)>,
    bound: &str,
    met: impl Fn(f64) -> bool,
) {
    let (text, verdict) = match measured {
        Some((v, text)) => (text, if met(v) { "met" } else { "**not met**" }),
        None => ("no data".to_owned(), "**not measured**"),
    };
    let _ = writeln!(w, "| {what} | {text} | {bound} | {verdict} |");
}

/// Bytes per idle session on our gateway: its own resident set at `MANY_SESSIONS` clients
/// less at one, over the sessions added.
fn bytes_per_session(results: &Results, key: CellKey) -> Result<f64, String> {
    let runs = results.get(&key).ok_or("not run")?;
    let v = runs.iter().find_map(|r| r.as_ref().ok()).ok_or_else(|| {
        runs.iter()
            .find_map(|r| r.as_ref().err().cloned())
            .unwrap_or_default()
    })?;
    let points = v["at"].as_array().ok_or("no checkpoints")?;
    let (Some(first), Some(last)) = (points.first(), points.last()) else {
        return Err("no checkpoints".into());
    };
    let (n0, n1) = (first["clients"].as_f64(), last["clients"].as_f64());
    let (r0, r1) = (first["rss_kib"].as_f64(), last["rss_kib"].as_f64());
    match (n0, n1, r0, r1) {
        (Some(n0), Some(n1), Some(r0), Some(r1)) if n1 > n0 => Ok((r1 - r0) * 1024.0 / (n1 - n0)),
        _ => Err("one checkpoint only".into()),
    }
}

pub(crate) fn gateways(w: &mut String, results: &Results) {
    if !results.keys().any(|k| k.1.starts_with("gw:")) {
        return;
    }
    let _ = writeln!(w, "## The gateway: one hop between a client and a server\n");
    let _ = writeln!(
        w,
        "The same upstream (our benchmark server over stdio, started by the gateway) behind each gateway and the same client (ours, over Streamable HTTP, pinned to the 2025-11-25 handshake era, which every gateway here speaks and in which a gateway keeps a session per client) in front: ours is `mcp-host serve --gateway F --http` in passthrough mode; beside it {SUPERGATEWAY} (`--stateful`, stdio to Streamable HTTP, which starts one upstream per session), {PROXY_TS} and {PROXY_PY} (each one upstream for every session), with their defaults otherwise. Rows marked none are our client straight to our server; the floor of a hop is their two p50s added, what a gateway (a server of one and a client of the other) cannot beat. Calls as in the call rows, one gateway process for all of them. For memory, a gateway is started afresh and one client process opens sessions on it, each with its standalone GET stream as a listening client keeps; the resident set is the gateway's (in brackets, with the processes it started: the upstreams) half a second after the 1st and the {CROWD}th session opened; then calls one at a time on one session while all stay connected. `×N` is the value over ours's.\n"
    );
    let _ = writeln!(
        w,
        "| between client and server | p50, 1 in flight | calls/s, 16 | RSS, 1 client | RSS, {CROWD} clients | p50, 1 in flight, {CROWD} connected | p99, 1 in flight, {CROWD} connected |"
    );
    let _ = writeln!(w, "| --- | --- | --- | --- | --- | --- | --- |");
    let p50 = |hop: Hop| median(results, hop.cell("call", 1), phase(1, "p50_us"));
    let floor = match (p50(Hop::DirectHttp), p50(Hop::DirectStdio)) {
        (Ok(a), Ok(b)) => Ok(a + b),
        (Err(e), _) | (_, Err(e)) => Err(e),
    };
    let ours_p50 = p50(Hop::Ours).ok();
    let _ = writeln!(
        w,
        "| floor of a hop: none over HTTP + none over stdio, p50 | {} | n/a | n/a | n/a | n/a | n/a |",
        shown(&floor, ours_p50, us)
    );
    for hop in HOPS {
        let mut line = format!("| {} |", hop.label());
        let call = hop.cell("call", 1);
        let ours_call = Hop::Ours.cell("call", 1);
        for (c, what, show) in [(1, "p50_us", us as fn(f64) -> String), (16, "rate", rate)] {
            let b = median(results, ours_call, phase(c, what)).ok();
            let _ = write!(
                line,
                " {} |",
                shown(&median(results, call, phase(c, what)), b, show)
            );
        }
        if hop == Hop::DirectStdio {
            let _ = write!(line, " n/a: no server of its own | n/a | n/a | n/a |");
        } else {
            let key = hop.cell("crowd", CROWD);
            let ours_key = Hop::Ours.cell("crowd", CROWD);
            for last in [false, true] {
                let own = median(results, key, at(last, "rss_kib"));
                let tree = median(results, key, at(last, "tree_rss_kib"));
                let b = median(results, ours_key, at(last, "rss_kib")).ok();
                let mut text = shown(&own, b, mib);
                if let Ok(t) = tree {
                    let _ = write!(text, " ({})", mib(t));
                }
                let _ = write!(line, " {text} |");
            }
            for what in ["p50_us", "p99_us"] {
                let b = median(results, ours_key, phase(1, what)).ok();
                let _ = write!(
                    line,
                    " {} |",
                    shown(&median(results, key, phase(1, what)), b, us)
                );
            }
        }
        let _ = writeln!(w, "{line}");
    }
    let _ = writeln!(w);
    let bytes = bytes_per_session(results, Hop::Ours.cell("crowd", MANY_SESSIONS));
    let _ = writeln!(
        w,
        "Bytes per idle session of our gateway: its resident set with {MANY_SESSIONS} handshake-era sessions that hold no connection (initialized one after the other over one kept-alive connection, then quiet, as clients between calls) less with one, over the sessions added: {}. With its GET stream open, each also holds a connection: the crowd above gives {} per client for ours ({CROWD} clients less one).\n",
        match &bytes {
            Ok(b) => format!("{b:.0} bytes"),
            Err(e) => format!("not measured ({})", short(e)),
        },
        match bytes_per_session(results, Hop::Ours.cell("crowd", CROWD)) {
            Ok(b) => format!("{b:.0} bytes"),
            Err(e) => format!("no figure ({})", short(&e)),
        }
    );
    let _ = writeln!(w, "Goals of issue 25 for the gateway:\n");
    let _ = writeln!(w, "| goal | measured | bar | |");
    let _ = writeln!(w, "| --- | --- | --- | --- |");
    let ratio = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => Some((a / b, format!("×{:.2}", a / b))),
        _ => None,
    };
    goal(
        w,
        "ours p50 ÷ the floor of a hop",
        ratio(ours_p50, floor.clone().ok()),
        &format!("≤ ×{GOAL_P50_OF_FLOOR}"),
        |r| r <= GOAL_P50_OF_FLOOR,
    );
    let rate16 = |hop: Hop| median(results, hop.cell("call", 1), phase(16, "rate")).ok();
    goal(
        w,
        "ours calls/s at 16 ÷ none over HTTP",
        ratio(rate16(Hop::Ours), rate16(Hop::DirectHttp)),
        &format!("≥ ×{GOAL_RATE_OF_DIRECT}"),
        |r| r >= GOAL_RATE_OF_DIRECT,
    );
    goal(
        w,
        &format!("bytes per idle session, {MANY_SESSIONS} sessions"),
        bytes.ok().map(|b| (b, format!("{b:.0} bytes"))),
        &format!("≤ {GOAL_BYTES_PER_SESSION:.0} bytes"),
        |b| b <= GOAL_BYTES_PER_SESSION,
    );
    for hop in GATEWAYS.into_iter().skip(1) {
        let theirs = p50(hop).ok();
        let _ = writeln!(
            w,
            "| (for comparison) {} p50 ÷ the floor of a hop | {} | none | |",
            hop.label(),
            ratio(theirs, floor.clone().ok()).map_or("no data".into(), |r| r.1)
        );
    }
    let _ = writeln!(w);
    let _ = writeln!(w, "{WHERE_THE_HOP_GOES}");
}

/// What the goals' limit is, measured by hand rather than by this run (so its figures are
/// those of the commit it names), kept here so that the page says it after every run.
const WHERE_THE_HOP_GOES: &str = "\
Where a call through our gateway goes, measured by hand near febcd59 rather than by this run: release builds, our client at 16 in flight, `perf record -e cpu-clock`, `perf record -e syscalls:sys_enter_futex --call-graph dwarf` and `strace -c` on the gateway process, and the CPU time of the gateway and of its upstream read from `/proc` per call.
The gateway process spends about 30 µs of CPU a call, our HTTP server alone (none over HTTP) about 14 µs, and the stdio upstream 6 to 9 µs.
On two cores shared by the client, the gateway and its upstream, calls/s at 16 is bound by their CPU per call added up, and the hop adds about 23 µs a call to the direct path's.
mcp-gateway's and mcp-host's own functions (the tool's lookup, the rules, the routes, the metrics, the call's log line) are about 5% of the gateway's CPU; the kernel is 46%, and malloc, free and memmove 14%.
Per call the gateway makes one `recvfrom` and one `writev` (the HTTP request and its answer, as the direct server does), about two `write`s (the request on the upstream's stdin, and the call's log line on standard error, which the gateway's log promises at the default level), and about three `futex` calls, where the direct server makes 0.03.
Those are the two worker threads meeting on locks that every call takes: the upstream session's one lock (`mcp_session::core::Core`, taken by each call to send its request and by the stdio reader for each answer), the stdio outbox's (`mcp_stdio::outbox::Outbox::push`), the log writer's, and glibc's malloc arena locks when a buffer made on one worker is grown or freed on the other; each lock met is a thread put to sleep and woken.
What would move it: calls to one stdio upstream that do not meet on one mutex (a session core whose callers hand their requests over without the lock its reader holds, or one upstream session per worker thread), an allocator with per-thread caches for buffers freed on another thread, and the transports' own task hops (issue 25 §2).
In the callgrind layer below, whose hop has a stateless client and a stateless HTTP upstream (unlike the rows above), the gateway costs about 404,000 instructions a call beyond its two HTTP round trips.
Its largest shares there are the server configuration built again for each stateless request (`Handler::configure` and `Sessions::configured`, about 44,000), the stateless session's close (about 23,000), the upstream's result decoded and encoded again (about 24,000), and the tool's schema encoded for the HTTP half's header check (about 14,000).
";

fn rate(v: f64) -> String {
    format!("{v:.0}/s")
}

pub(crate) fn ready(w: &mut String, results: &Results) {
    if !results.keys().any(|k| k.0 == "ready") {
        return;
    }
    let _ = writeln!(
        w,
        "## Time to ready: {SERVERS} servers that start like real ones\n"
    );
    let _ = writeln!(
        w,
        "Half of them the benchmark's TypeScript SDK server launched through `npx` (`npx node server.mjs`), half its Python SDK server through the Python interpreter, all started at once; ready means initialized with their tools listed. Ours is `mcp_host::Host::start` until every server is ready and in the catalogue. The floor is a bare harness that starts the same processes at once and writes initialize, initialized and tools/list to their pipes, reading the answers, with no MCP library: what the servers themselves take on this machine. Then the same again with one Python server started {} s late, so that it is the slowest by far: what we add must not grow with it. Each server alone is timed through the harness too; on two cores, twenty start-ups at once share the CPU, so the floor lies between the longest alone and the sum.\n",
        LATE.as_secs()
    );
    let _ = writeln!(w, "| run | wall |");
    let _ = writeln!(w, "| --- | --- |");
    let wall = |cell: &'static str| median(results, ready::key(cell), |v| v["wall_us"].as_f64());
    for (cell, what) in CELLS {
        let _ = writeln!(w, "| {what} | {} |", shown(&wall(cell), None, us));
    }
    let (ts, py) = (wall("ready:alone-ts"), wall("ready:alone-py"));
    if let (Ok(ts), Ok(py)) = (&ts, &py) {
        let half = (SERVERS / 2) as f64;
        let _ = writeln!(
            w,
            "| each alone: sum over the {SERVERS} ({} × {half:.0} + {} × {half:.0}) | {} |",
            us(*ts),
            us(*py),
            us(half * (ts + py))
        );
        let _ = writeln!(w, "| each alone: the longest | {} |", us(ts.max(*py)));
    }
    let _ = writeln!(w);
    let added = |ours: &'static str, raw: &'static str| match (wall(ours), wall(raw)) {
        (Ok(o), Ok(r)) if r > 0.0 => Some((
            (o - r) / r,
            format!("{:+.1}% ({})", 100.0 * (o - r) / r, signed(o - r)),
        )),
        _ => None,
    };
    let _ = writeln!(w, "| goal | measured | bar | |");
    let _ = writeln!(w, "| --- | --- | --- | --- |");
    let base = added("ready:ours", "ready:raw");
    goal(
        w,
        "what ours adds to the floor, all at once",
        base.clone(),
        &format!("< {:.0}%", GOAL_ADDED * 100.0),
        |r| r < GOAL_ADDED,
    );
    let late = added("ready:ours-late", "ready:raw-late");
    let late_abs = match (
        wall("ready:ours-late"),
        wall("ready:raw-late"),
        wall("ready:ours"),
        wall("ready:raw"),
    ) {
        (Ok(ol), Ok(rl), Ok(o), Ok(r)) if r > 0.0 => {
            Some((((ol - rl) - (o - r)) / r, signed((ol - rl) - (o - r))))
        }
        _ => None,
    };
    goal(
        w,
        &format!("what ours adds, one server {} s late", LATE.as_secs()),
        late,
        &format!("< {:.0}%", GOAL_ADDED * 100.0),
        |r| r < GOAL_ADDED,
    );
    goal(
        w,
        "growth of what ours adds with the late server (late less on time), over the floor",
        late_abs.map(|(r, s)| (r, format!("{s} ({:+.1}%)", 100.0 * r))),
        &format!("< {:.0}%", GOAL_ADDED * 100.0),
        |r| r < GOAL_ADDED,
    );
    let _ = writeln!(w);
}

fn signed(v: f64) -> String {
    if v < 0.0 {
        format!("−{}", us(-v))
    } else {
        format!("+{}", us(v))
    }
}
