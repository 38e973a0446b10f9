//! The host side of `cargo xtask netfault`: one `Host` with one Streamable HTTP server, driven
//! step by step from standard input while xtask breaks the network between them.
//!
//! `netfault --url URL [--ping-interval-ms N] [--ping-timeout-ms N] [--request-timeout-ms N]
//! [--protocol-version V]`. It prints `ready` once connected and an `echo` call has succeeded,
//! then answers each line of standard input:
//!
//! - `steady SECONDS`: calls `echo` five times, then stays idle for SECONDS while pings come
//!   and go, and fails if the server's state leaves `ready` meanwhile (`steady ok ...`);
//! - `call`: starts `slow` (60 s, progress every 200 ms) and prints `in-flight` once its
//!   first progress arrived, so its SSE stream is open;
//! - `partitioned`: the network is now cut; waits for the state to leave `ready` and for the
//!   call in flight to fail, prints both with the milliseconds since this line was read
//!   (`noticed ms=… state=… phase=… error=…`, `call-failed ms=… error=…`), and checks that
//!   the call's error names the server and says it stopped answering;
//! - `healed`: the network is back; waits for `ready` again and for an `echo` call to
//!   succeed (`recovered ms=…`).
//!
//! Every check that fails ends the process with a message on standard error and status 1;
//! xtask adds the time limits and the network.

// A command-line driver that reports on its standard output.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::io::BufRead as _;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mcp_host::permission::{CallRequest, Decision, Policy};
use mcp_host::{CallOptions, Connect, Host, HostEvent, HostOptions, ServerEntry, ServerState};
use mcp_http::HttpConfig;
use mcp_protocol::schema::{ContentBlock, Implementation};
use mcp_protocol::{JsonObject, ProtocolVersion};
use tokio::sync::mpsc;

/// The one server's id, which every error must name.
const SERVER: &str = "faraway";

/// Every call goes ahead: the permission rules are not what this drives.
struct AllowAll;

impl Policy for AllowAll {
    fn decide(&self, _: &CallRequest<'_>) -> Decision {
        Decision::Allow
    }
}

struct Args {
    url: String,
    ping_interval_ms: u64,
    ping_timeout_ms: u64,
    request_timeout_ms: u64,
    protocol_version: Option<String>,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        url: String::new(),
        ping_interval_ms: 1000,
        ping_timeout_ms: 2000,
        request_timeout_ms: 30_000,
        protocol_version: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it.next().ok_or_else(|| format!("{flag} needs a value"))?;
        let number = || {
            value
                .parse::<u64>()
                .map_err(|_| format!("{flag}: not a number"))
        };
        match flag.as_str() {
            "--url" => args.url = value.clone(),
            "--ping-interval-ms" => args.ping_interval_ms = number()?,
            "--ping-timeout-ms" => args.ping_timeout_ms = number()?,
            "--request-timeout-ms" => args.request_timeout_ms = number()?,
            "--protocol-version" => args.protocol_version = Some(value.clone()),
            other => return Err(format!("unknown flag {other}")),
        }
    }
    if args.url.is_empty() {
        return Err("--url is required".to_owned());
    }
    Ok(args)
}

fn fail(message: String) -> ! {
    eprintln!("netfault driver: {message}");
    std::process::exit(1)
}

fn arguments(value: serde_json::Value) -> JsonObject {
    match value {
        serde_json::Value::Object(map) => map,
        _ => JsonObject::new(),
    }
}

/// The text of a result's content.
fn text(output: &mcp_host::ToolOutput) -> String {
    output
        .result
        .content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text(t) => Some(t.text.as_str()),
            _ => None,
        })
        .collect()
}

async fn echo(host: &Host, what: &str) -> Result<(), String> {
    let out = host
        .call_tool(
            SERVER,
            "echo",
            arguments(serde_json::json!({"text": what})),
            CallOptions::default(),
        )
        .await
        .map_err(|e| format!("echo failed: {e}"))?;
    if text(&out) != what {
        return Err(format!("echo answered {:?}, not {what:?}", text(&out)));
    }
    Ok(())
}

/// Waits for the server to reach `want` (by its events), at most `limit`.
async fn wait_state(
    host: &Host,
    events: &mut mcp_host::Subscription,
    want: impl Fn(ServerState) -> bool,
    limit: Duration,
) -> Result<ServerState, String> {
    if let Some(s) = host.server_status(SERVER)
        && want(s.state)
    {
        return Ok(s.state);
    }
    let found = tokio::time::timeout(limit, async {
        while let Some(event) = events.recv().await {
            if let HostEvent::State { state, .. } = event
                && want(state)
            {
                return Some(state);
            }
        }
        None
    })
    .await;
    match found {
        Ok(Some(state)) => Ok(state),
        Ok(None) => Err("the host went away".to_owned()),
        Err(_) => Err(format!(
            "no such state change within {} s (state {:?}, last error {:?})",
            limit.as_secs(),
            host.server_status(SERVER).map(|s| s.state),
            host.server_status(SERVER).and_then(|s| s.last_error)
        )),
    }
}

fn main() {
    let args = parse_args().unwrap_or_else(|e| fail(e));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap_or_else(|e| fail(format!("no runtime: {e}")));
    if let Err(e) = runtime.block_on(run(args)) {
        fail(e);
    }
}

async fn run(args: Args) -> Result<(), String> {
    let mut options = HostOptions::new(
        Implementation::new("netfault".into(), "0".into()),
        Arc::new(AllowAll),
    );
    options.reconnect_initial = Duration::from_millis(250);
    options.reconnect_max = Duration::from_secs(1);
    options.reconnect_attempts = 1000;
    let host = Host::new(options);
    let mut http = HttpConfig::new(SERVER, &args.url);
    http.connect_timeout = Duration::from_secs(2);
    let mut entry = ServerEntry::new(SERVER, Connect::Http(http));
    entry.request_timeout = Duration::from_millis(args.request_timeout_ms);
    entry.ping_interval = Some(Duration::from_millis(args.ping_interval_ms));
    entry.ping_timeout = Duration::from_millis(args.ping_timeout_ms);
    entry.protocol_version = args.protocol_version.as_deref().map(ProtocolVersion::parse);
    let mut events = host.subscribe(Some(&[SERVER]), Some(&["state"]));
    host.start(vec![entry]).await;
    wait_state(
        &host,
        &mut events,
        |s| s == ServerState::Ready,
        Duration::from_secs(20),
    )
    .await
    .map_err(|e| format!("connecting: {e}"))?;
    echo(&host, "hello").await?;
    // From here on, only what happens after the connection was made.
    let mut events = host.subscribe(Some(&[SERVER]), Some(&["state"]));
    let era = host
        .server_status(SERVER)
        .and_then(|s| s.era)
        .map_or("unknown", mcp_protocol::Era::as_str);
    println!("ready era={era}");

    // Standard input is read on a thread of its own: a blocking read must not hold a worker.
    let (lines_tx, mut lines) = mpsc::unbounded_channel::<String>();
    std::thread::spawn(move || {
        for line in std::io::stdin().lock().lines() {
            let Ok(line) = line else { break };
            if lines_tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut call: Option<
        tokio::task::JoinHandle<Result<mcp_host::ToolOutput, mcp_host::CallError>>,
    > = None;
    while let Some(line) = lines.recv().await {
        let mut words = line.split_whitespace();
        match (words.next(), words.next()) {
            (Some("steady"), Some(seconds)) => {
                let seconds: u64 = seconds.parse().map_err(|_| "steady SECONDS".to_owned())?;
                let began = Instant::now();
                for i in 0..5 {
                    echo(&host, &format!("steady {i}"))
                        .await
                        .map_err(|e| format!("under latency and loss: {e}"))?;
                }
                let calls_ms = began.elapsed().as_millis();
                let left = wait_state(
                    &host,
                    &mut events,
                    |s| s != ServerState::Ready,
                    Duration::from_secs(seconds),
                )
                .await;
                if let Ok(state) = left {
                    let status = host.server_status(SERVER);
                    return Err(format!(
                        "under latency and loss the server left ready for {state}: {:?}",
                        status.and_then(|s| s.last_error)
                    ));
                }
                println!("steady ok calls=5 calls_ms={calls_ms} idle_s={seconds}");
            }
            (Some("call"), None) => {
                let (progress_tx, mut progress) = mpsc::unbounded_channel();
                let h = host.clone();
                call = Some(tokio::spawn(async move {
                    h.call_tool(
                        SERVER,
                        "slow",
                        arguments(serde_json::json!({"seconds": 60, "step_ms": 200})),
                        CallOptions::default().progress(progress_tx),
                    )
                    .await
                }));
                tokio::time::timeout(Duration::from_secs(10), progress.recv())
                    .await
                    .map_err(|_| "no progress from the slow call within 10 s".to_owned())?;
                println!("in-flight");
            }
            (Some("partitioned"), None) => {
                let began = Instant::now();
                let Some(call) = call.take() else {
                    return Err("partitioned before any call".to_owned());
                };
                let state = wait_state(
                    &host,
                    &mut events,
                    |s| s != ServerState::Ready,
                    Duration::from_secs(90),
                )
                .await
                .map_err(|e| format!("the outage went unnoticed: {e}"))?;
                let noticed_ms = began.elapsed().as_millis();
                let status = host.server_status(SERVER);
                let phase = status
                    .as_ref()
                    .and_then(|s| s.last_error_phase)
                    .map_or("none", |p| p.as_str());
                let error = status.and_then(|s| s.last_error).unwrap_or_default();
                println!("noticed ms={noticed_ms} state={state} phase={phase} error={error}");
                let outcome = tokio::time::timeout(Duration::from_secs(90), call)
                    .await
                    .map_err(|_| "the call in flight hung past 90 s".to_owned())?
                    .map_err(|e| format!("the call's task failed: {e}"))?;
                let error = match outcome {
                    Ok(out) => return Err(format!("the call succeeded: {}", text(&out))),
                    Err(e) => e.to_string(),
                };
                println!(
                    "call-failed ms={} error={error}",
                    began.elapsed().as_millis()
                );
                if !error.contains(&format!("server `{SERVER}`")) || !error.contains("slow") {
                    return Err(format!(
                        "the call's error does not name the server and the tool: {error}"
                    ));
                }
            }
            (Some("healed"), None) => {
                let began = Instant::now();
                wait_state(
                    &host,
                    &mut events,
                    |s| s == ServerState::Ready,
                    Duration::from_secs(60),
                )
                .await
                .map_err(|e| format!("no reconnection after the partition healed: {e}"))?;
                echo(&host, "again")
                    .await
                    .map_err(|e| format!("after reconnecting: {e}"))?;
                println!("recovered ms={}", began.elapsed().as_millis());
            }
            (Some("quit"), None) => break,
            _ => return Err(format!("unknown command {line:?}")),
        }
    }
    host.shutdown().await;
    Ok(())
}
