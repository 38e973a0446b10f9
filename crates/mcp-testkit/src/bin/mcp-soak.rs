//! The client side of `cargo xtask soak`: many HTTP clients calling tools through a running
//! gateway for a while, killing one upstream server process at a fixed interval, and judging
//! what happened. xtask builds the binaries, starts the gateway and runs this; it may not
//! depend on the product crates, this binary may.
//!
//! Each client is our own Streamable HTTP client (`mcp_http::connect`) with a session of its
//! own (2025-11-25), calling `sleep` on the upstreams in turn (`mcp__<id>__sleep`, a few ms, so
//! that calls are in flight when an upstream dies). An upstream is killed with SIGKILL, found
//! as the process whose program is `mcp-fake-server` and whose arguments carry its marker
//! (`--page-size 10<n>` for `up<n>`); the gateway's host starts it again.
//!
//! A failed call is allowed only if it was made to an upstream that had just been killed and
//! had not answered again yet, and its error names that upstream; any other failure fails the
//! run. The gateway's resident memory and open files are read from /proc after a warm-up and
//! at the end, and must stay within the tolerance printed with them.
//!
//! Flags: `--url URL --gateway-pid PID --upstreams N --clients N --seconds S --kill-every S
//! --warmup S --call-ms MS`. Prints a report and one `{"soak": ...}` JSON line; exits 1 when
//! the run fails.

#![allow(clippy::print_stderr, clippy::print_stdout, clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mcp_http::HttpConfig;
use mcp_protocol::schema::{CallToolParams, ContentBlock, Implementation};
use mcp_protocol::{ClientConfig, JsonObject, ProtocolVersion, RequestOptions};
use serde_json::json;

/// How much the gateway's resident memory may grow from the end of the warm-up to the end:
/// a quarter, plus 16 MiB for allocator slack.
const RSS_GROWTH: f64 = 1.25;
const RSS_SLACK_KIB: u64 = 16 * 1024;
/// How many more files the gateway may hold open at the end than after the warm-up.
const FD_SLACK: u64 = 16;

struct Args {
    url: String,
    gateway_pid: u32,
    upstreams: usize,
    clients: usize,
    seconds: f64,
    kill_every: f64,
    warmup: f64,
    call_ms: u64,
}

fn args() -> Args {
    let mut a = Args {
        url: String::new(),
        gateway_pid: 0,
        upstreams: 4,
        clients: 200,
        seconds: 600.0,
        kill_every: 60.0,
        warmup: 20.0,
        call_ms: 5,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it.next().unwrap_or_default();
        match flag.as_str() {
            "--url" => a.url = value,
            "--gateway-pid" => a.gateway_pid = value.parse().unwrap(),
            "--upstreams" => a.upstreams = value.parse().unwrap(),
            "--clients" => a.clients = value.parse().unwrap(),
            "--seconds" => a.seconds = value.parse().unwrap(),
            "--kill-every" => a.kill_every = value.parse().unwrap(),
            "--warmup" => a.warmup = value.parse().unwrap(),
            "--call-ms" => a.call_ms = value.parse().unwrap(),
            other => panic!("mcp-soak: unknown flag {other}"),
        }
    }
    assert!(
        !a.url.is_empty() && a.gateway_pid != 0,
        "--url and --gateway-pid are required"
    );
    a
}

/// What is known of one upstream's outages.
#[derive(Default, Clone, Copy)]
struct Outage {
    /// When it was last killed.
    killed: Option<Instant>,
    /// When a call made after that kill first succeeded.
    recovered: Option<Instant>,
}

#[derive(Default)]
struct Tally {
    made: AtomicU64,
    failed_allowed: AtomicU64,
    failed_bad: AtomicU64,
    /// Error texts of the failures, with how often each was seen (numbers blanked).
    errors: Mutex<BTreeMap<String, (u64, bool)>>,
}

fn main() {
    let a = args();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let ok = rt.block_on(run(a));
    std::process::exit(if ok { 0 } else { 1 });
}

async fn run(a: Args) -> bool {
    let names: Vec<String> = (0..a.upstreams).map(|i| format!("up{i}")).collect();
    let outages = Arc::new(Mutex::new(vec![Outage::default(); a.upstreams]));
    let tally = Arc::new(Tally::default());
    let stop = Arc::new(AtomicBool::new(false));
    let start = Instant::now();
    eprintln!("mcp-soak: connecting {} clients to {}", a.clients, a.url);
    let mut clients = Vec::new();
    for i in 0..a.clients {
        let mut session = ClientConfig::new(Implementation::new(format!("soak-{i}"), "0".into()));
        session.protocol_version = ProtocolVersion::V2025_11_25;
        session.supported_versions = vec![ProtocolVersion::V2025_11_25];
        session.request_timeout = Duration::from_secs(30);
        let client =
            mcp_http::connect(HttpConfig::new(format!("soak-{i}"), a.url.clone()), session)
                .await
                .unwrap_or_else(|e| panic!("client {i} could not connect: {e}"));
        clients.push(client);
    }
    eprintln!(
        "mcp-soak: {} clients connected in {:.1} s",
        a.clients,
        start.elapsed().as_secs_f64()
    );
    let mut tasks = Vec::new();
    for (i, client) in clients.into_iter().enumerate() {
        let (names, outages, tally, stop) =
            (names.clone(), outages.clone(), tally.clone(), stop.clone());
        let call_ms = a.call_ms;
        tasks.push(tokio::spawn(async move {
            let mut turn = i;
            while !stop.load(Ordering::Relaxed) {
                let up = turn % names.len();
                turn += 1;
                let began = Instant::now();
                let mut args = JsonObject::new();
                args.insert("ms".into(), json!(call_ms));
                let mut params = CallToolParams::new(format!("mcp__{}__sleep", names[up]));
                params.arguments = Some(args);
                let outcome = client.call_tool(params, RequestOptions::DEFAULT).await;
                let error = match outcome {
                    Ok(result) if result.is_error != Some(true) => None,
                    Ok(result) => Some(
                        result
                            .content
                            .iter()
                            .filter_map(|b| match b {
                                ContentBlock::Text(t) => Some(t.text.clone()),
                                _ => None,
                            })
                            .collect::<Vec<_>>()
                            .join(" "),
                    ),
                    Err(e) => Some(e.to_string()),
                };
                tally.made.fetch_add(1, Ordering::Relaxed);
                let ended = Instant::now();
                let mut outages = outages.lock().unwrap();
                let outage = &mut outages[up];
                match error {
                    None => {
                        if outage.killed.is_some_and(|k| began >= k) && outage.recovered.is_none() {
                            outage.recovered = Some(ended);
                        }
                    }
                    Some(text) => {
                        // In flight on (or made to) an upstream that was killed and had not
                        // answered again when the call began, and saying which upstream.
                        let allowed = outage.killed.is_some_and(|k| ended >= k)
                            && outage.recovered.is_none_or(|r| began <= r)
                            && text.contains(&names[up]);
                        drop(outages);
                        let counter = if allowed {
                            &tally.failed_allowed
                        } else {
                            &tally.failed_bad
                        };
                        counter.fetch_add(1, Ordering::Relaxed);
                        let shape: String = text
                            .chars()
                            .map(|c| if c.is_ascii_digit() { '#' } else { c })
                            .take(240)
                            .collect();
                        // The upstream's own name is kept: it is what the check looks for.
                        let shape = shape.replace("up#", &names[up]);
                        let mut errors = tally.errors.lock().unwrap();
                        let entry = errors
                            .entry(format!("[{}] {shape}", names[up]))
                            .or_insert((0, allowed));
                        entry.0 += 1;
                        entry.1 &= allowed;
                    }
                }
            }
        }));
    }

    let warmup = Duration::from_secs_f64(a.warmup.min(a.seconds / 4.0));
    tokio::time::sleep(warmup).await;
    let (rss_start, fds_start) = (rss_kib(a.gateway_pid), open_files(a.gateway_pid));
    let made_at_warmup = tally.made.load(Ordering::Relaxed);
    eprintln!(
        "mcp-soak: after {:.0} s of warm-up: RSS {rss_start} KiB, {fds_start} open files, {made_at_warmup} calls",
        warmup.as_secs_f64()
    );
    let deadline = start + Duration::from_secs_f64(a.seconds);
    let mut kills = 0usize;
    let mut rss_max = rss_start;
    loop {
        let next_kill = start + Duration::from_secs_f64(a.kill_every * (kills + 1) as f64);
        if next_kill >= deadline {
            break;
        }
        tokio::time::sleep_until(tokio::time::Instant::from_std(next_kill)).await;
        let up = kills % a.upstreams;
        let pids = upstream_pids(up);
        assert!(!pids.is_empty(), "no process found for upstream up{up}");
        {
            let mut outages = outages.lock().unwrap();
            outages[up] = Outage {
                killed: Some(Instant::now()),
                recovered: None,
            };
        }
        for pid in &pids {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(*pid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
        kills += 1;
        rss_max = rss_max.max(rss_kib(a.gateway_pid));
        eprintln!(
            "mcp-soak: {:.0} s: killed up{up} (pid {pids:?}); {} calls so far, RSS {} KiB, {} open files",
            start.elapsed().as_secs_f64(),
            tally.made.load(Ordering::Relaxed),
            rss_kib(a.gateway_pid),
            open_files(a.gateway_pid),
        );
    }
    tokio::time::sleep_until(tokio::time::Instant::from_std(deadline)).await;
    stop.store(true, Ordering::Relaxed);
    for task in tasks {
        let _ = task.await;
    }
    let (rss_end, fds_end) = (rss_kib(a.gateway_pid), open_files(a.gateway_pid));
    rss_max = rss_max.max(rss_end);
    let made = tally.made.load(Ordering::Relaxed);
    let allowed = tally.failed_allowed.load(Ordering::Relaxed);
    let bad = tally.failed_bad.load(Ordering::Relaxed);
    let recovered = outages
        .lock()
        .unwrap()
        .iter()
        .filter(|o| o.killed.is_some())
        .all(|o| o.recovered.is_some());
    let rss_limit = (rss_start as f64 * RSS_GROWTH) as u64 + RSS_SLACK_KIB;
    let fd_limit = fds_start + FD_SLACK;
    let elapsed = start.elapsed().as_secs_f64();
    println!(
        "soak: {} clients, {} upstreams, {elapsed:.0} s, {kills} upstream kills",
        a.clients, a.upstreams
    );
    println!("  calls made:    {made} ({:.0}/s)", made as f64 / elapsed);
    println!(
        "  calls failed:  {} ({allowed} in flight on a killed upstream, {bad} elsewhere)",
        allowed + bad
    );
    for (text, (count, ok)) in tally.errors.lock().unwrap().iter() {
        println!(
            "    {count:>6} x {} {text}",
            if *ok { "allowed" } else { "NOT ALLOWED" }
        );
    }
    println!(
        "  RSS:           {rss_start} KiB after warm-up, {rss_end} KiB at the end, {rss_max} KiB at most (limit {rss_limit} KiB)"
    );
    println!("  open files:    {fds_start} after warm-up, {fds_end} at the end (limit {fd_limit})");
    println!(
        "{}",
        json!({"soak": {
            "clients": a.clients, "upstreams": a.upstreams, "seconds": elapsed, "kills": kills,
            "calls_made": made, "calls_failed_allowed": allowed, "calls_failed_other": bad,
            "rss_kib_start": rss_start, "rss_kib_end": rss_end, "rss_kib_max": rss_max,
            "open_files_start": fds_start, "open_files_end": fds_end,
        }})
    );
    let mut ok = true;
    let mut fail = |why: String| {
        println!("FAIL: {why}");
        ok = false;
    };
    if bad > 0 {
        fail(format!(
            "{bad} calls failed that were not in flight on a killed upstream"
        ));
    }
    if !recovered {
        fail("a killed upstream never answered again".to_owned());
    }
    if rss_end > rss_limit {
        fail(format!(
            "RSS grew from {rss_start} KiB to {rss_end} KiB, past {rss_limit} KiB"
        ));
    }
    if fds_end > fd_limit {
        fail(format!(
            "open files grew from {fds_start} to {fds_end}, past {fd_limit}"
        ));
    }
    if made <= made_at_warmup {
        fail("no calls were made after the warm-up".to_owned());
    }
    ok
}

/// VmRSS of `pid`, in KiB.
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// How many files `pid` holds open.
fn open_files(pid: u32) -> u64 {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count() as u64)
}

/// The live processes of upstream `up<n>`: program `mcp-fake-server`, marker `--page-size
/// 10<n>`.
fn upstream_pids(n: usize) -> Vec<i32> {
    let marker = format!("10{n}");
    mcp_testkit::procs::live()
        .into_iter()
        .filter(|p| p.program == "mcp-fake-server" && p.has("--page-size", &marker))
        .filter_map(|p| i32::try_from(p.pid).ok())
        .collect()
}
