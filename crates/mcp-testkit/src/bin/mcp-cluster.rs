//! The client side of `cargo xtask cluster`: the OAuth-protected upstream the replicas share,
//! many clients of both eras calling tools through nginx, one replica killed halfway, and the
//! judgement. xtask installs and starts nginx, Redis and the replicas (and starts a killed
//! replica again); it may not depend on the product crates, this binary may.
//!
//! Started first, it serves the testkit's fake authorization server and protected MCP endpoint
//! (`fake_auth`: access tokens living `--token-lifetime` seconds, a new refresh token at each
//! refresh and the old one refused from then on), prints `upstream URL` on stdout, and waits
//! for a line on stdin saying the replicas are up.
//!
//! Then `--clients` clients (our own Streamable HTTP client) connect through `--url`: the even
//! ones in the 2025-11-25 era (a handshake, an `Mcp-Session-Id`, the standalone GET stream),
//! the odd ones in the 2026-07-28 era (stateless). Each calls, in turn, `sleep` (a few ms) on
//! `fake`, the stdio upstream every replica runs, `echo` on `remote`, the protected one, and
//! `ask` on `asker`, a Streamable HTTP upstream this binary also serves (printed as `asker
//! URL`), which asks the client a name in the middle of the call, on the call's own stream (so
//! the gateway knows whose call it is; a stdio server's question says no such thing, and the
//! gateway refuses to guess while several clients' calls wait there). A 2025-11-25 client
//! answers on a POST of its own, a 2026-07-28 client by calling again with the answer (the
//! gateway suspended the call), and nginx sends either to whichever replica is next, so the
//! answer must cross to the replica holding the call. Each client answers with a name of that
//! call's own, and the result must be `<name> answered by <name>`.
//! At half time the first replica of `--replicas` is killed with SIGKILL (xtask starts it
//! again); its memory and the others' (`VmRSS`) are sampled every 2 s.
//!
//! The rules, each a `FAIL:` line and exit code 1 when broken:
//! - a failed call is allowed only if it was on the killed replica and its error is one a
//!   client may retry: nginx's `502`/`504` for a request the replica never answered, the
//!   connection closing under the call, or a retry told that the replica holding its
//!   suspended call is gone, or the resumption of a call's stream that another replica
//!   refuses (it held none of it). It must end within 2 s of the kill (in flight when
//!   the replica died, or sent to it by nginx on a kept-alive connection in the moment before
//!   nginx saw that connection close), and nginx's log of failed answers (`--failed-log`)
//!   must show every `5xx` on the killed replica;
//! - sessions lost: 0 (a 2025-11-25 session whose id stopped working: `404`);
//! - token refreshes at the authorization server: none refused, no refresh token presented
//!   twice, and one per token lifetime (the gateway refreshes at half a token's lifetime, so
//!   between `elapsed / lifetime` and `elapsed / (lifetime / 2)`, one either side);
//! - calls were made after the kill, and the killed replica answered again.
//!
//! Prints a report and one `{"cluster": ...}` JSON line.

#![allow(clippy::print_stderr, clippy::print_stdout, clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::io::BufRead as _;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mcp_http::HttpConfig;
use mcp_protocol::schema::{CallToolParams, ClientRequest, ContentBlock, Implementation};
use mcp_protocol::{
    ClientConfig, ErrorObject, JsonObject, ProtocolVersion, RawJson, RequestOptions, ServerConfig,
    code,
};
use mcp_testkit::fake_auth::{FakeAuth, FakeAuthOptions};
use serde_json::json;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

struct Args {
    url: String,
    replicas: Vec<u16>,
    clients: usize,
    seconds: f64,
    token_lifetime: u64,
    failed_log: String,
    call_ms: u64,
}

fn args() -> Args {
    let mut a = Args {
        url: String::new(),
        replicas: Vec::new(),
        clients: 100,
        seconds: 120.0,
        token_lifetime: 20,
        failed_log: String::new(),
        call_ms: 5,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it.next().unwrap_or_default();
        match flag.as_str() {
            "--url" => a.url = value,
            "--replicas" => {
                a.replicas = value.split(',').map(|p| p.parse().unwrap()).collect();
            }
            "--clients" => a.clients = value.parse().unwrap(),
            "--seconds" => a.seconds = value.parse().unwrap(),
            "--token-lifetime" => a.token_lifetime = value.parse().unwrap(),
            "--failed-log" => a.failed_log = value,
            "--call-ms" => a.call_ms = value.parse().unwrap(),
            other => panic!("mcp-cluster: unknown flag {other}"),
        }
    }
    assert!(
        !a.url.is_empty() && !a.replicas.is_empty(),
        "--url and --replicas are required"
    );
    a
}

/// When the replica was killed and when it answered again.
#[derive(Default)]
struct Kill {
    at: Option<Instant>,
}

#[derive(Default)]
struct Tally {
    made: AtomicU64,
    made_after_kill: AtomicU64,
    failed_allowed: AtomicU64,
    failed_bad: AtomicU64,
    /// Failures of calls that began after the kill and ended within [`KILL_GRACE`].
    sent_after_kill: AtomicU64,
    sessions: AtomicU64,
    sessions_lost: AtomicU64,
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
    let lifetime = Duration::from_secs(a.token_lifetime);
    let fake = FakeAuth::start(FakeAuthOptions {
        access_token_lifetime: lifetime,
        refresh_tokens: true,
        rotate_refresh_tokens: true,
        ..FakeAuthOptions::default()
    })
    .await;
    let born = Instant::now();
    println!("upstream {}", fake.url());
    println!("asker {}", start_asker().await);
    // Wait for xtask: the login is done and the replicas are up.
    let go = tokio::task::spawn_blocking(|| {
        let mut line = String::new();
        std::io::stdin().lock().read_line(&mut line).map(|_| line)
    })
    .await
    .unwrap()
    .unwrap_or_default();
    assert_eq!(go.trim(), "go", "mcp-cluster: expected `go` on stdin");

    let tally = Arc::new(Tally::default());
    let kill = Arc::new(Mutex::new(Kill::default()));
    let stop = Arc::new(AtomicBool::new(false));
    let start = Instant::now();
    eprintln!("mcp-cluster: {} clients through {}", a.clients, a.url);
    let mut tasks = Vec::new();
    for i in 0..a.clients {
        let (tally, kill, stop) = (tally.clone(), kill.clone(), stop.clone());
        let url = a.url.clone();
        let call_ms = a.call_ms;
        tasks.push(tokio::spawn(async move {
            client_loop(i, &url, call_ms, &tally, &kill, &stop).await;
        }));
    }

    // The replicas' memory, sampled until the end; the first one killed at half time.
    let deadline = start + Duration::from_secs_f64(a.seconds);
    let kill_at = start + Duration::from_secs_f64(a.seconds / 2.0);
    let victim = a.replicas[0];
    let mut rss_max = vec![0u64; a.replicas.len()];
    let mut killed = false;
    let mut back_after: Option<Duration> = None;
    let mut made_at_kill = 0;
    while Instant::now() < deadline {
        let next = (Instant::now() + Duration::from_secs(2)).min(deadline);
        let next = if killed { next } else { next.min(kill_at) };
        tokio::time::sleep_until(tokio::time::Instant::from_std(next)).await;
        for (i, port) in a.replicas.iter().enumerate() {
            if let Some(pid) = replica_pid(*port) {
                rss_max[i] = rss_max[i].max(rss_kib(pid));
            }
        }
        if !killed && Instant::now() >= kill_at {
            killed = true;
            let pid = replica_pid(victim);
            let Some(pid) = pid else {
                println!("FAIL: no process found for the replica on port {victim}");
                return false;
            };
            made_at_kill = tally.made.load(Ordering::Relaxed);
            kill.lock().unwrap().at = Some(Instant::now());
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid as i32),
                nix::sys::signal::Signal::SIGKILL,
            );
            eprintln!(
                "mcp-cluster: {:.0} s: killed the replica on port {victim} (pid {pid}); {made_at_kill} calls so far",
                start.elapsed().as_secs_f64()
            );
            let killed_at = Instant::now();
            let (port, tx) = (victim, tokio::sync::oneshot::channel::<Duration>());
            let (tx, rx) = tx;
            tokio::spawn(async move {
                loop {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    if readyz(port).await == Some(200) {
                        let _ = tx.send(killed_at.elapsed());
                        return;
                    }
                }
            });
            back_after =
                tokio::time::timeout(deadline.saturating_duration_since(Instant::now()), rx)
                    .await
                    .ok()
                    .and_then(Result::ok);
            if let Some(took) = back_after {
                eprintln!(
                    "mcp-cluster: the replica on port {victim} was ready again {:.1} s after the kill",
                    took.as_secs_f64()
                );
            }
        }
    }
    stop.store(true, Ordering::Relaxed);
    for task in tasks {
        let _ = task.await;
    }
    let elapsed = start.elapsed().as_secs_f64();
    let rss_end: Vec<u64> = a
        .replicas
        .iter()
        .map(|p| replica_pid(*p).map_or(0, rss_kib))
        .collect();
    for (max, end) in rss_max.iter_mut().zip(&rss_end) {
        *max = (*max).max(*end);
    }

    // What the authorization server saw.
    let refreshes: Vec<_> = fake
        .seen()
        .into_iter()
        .filter(|r| {
            r.path.ends_with("/token") && r.form("grant_type").as_deref() == Some("refresh_token")
        })
        .collect();
    let refused = refreshes.iter().filter(|r| r.status != 200).count();
    let mut presented: BTreeMap<String, usize> = BTreeMap::new();
    for r in &refreshes {
        *presented
            .entry(r.form("refresh_token").unwrap_or_default())
            .or_default() += 1;
    }
    let repeated: usize = presented.values().map(|n| n - 1).sum();
    // The MCP requests the protected upstream refused, by method and by whether they carried
    // a token at all (counts only: no token is shown).
    let refused_mcp: Vec<_> = fake
        .seen_at("/mcp")
        .into_iter()
        .filter(|r| r.status == 401)
        .collect();
    let unauthorized = refused_mcp.len();
    let mut unauthorized_by: BTreeMap<String, usize> = BTreeMap::new();
    for r in &refused_mcp {
        let carried = if r.headers.contains_key(http::header::AUTHORIZATION) {
            "with a token"
        } else {
            "without a token"
        };
        *unauthorized_by
            .entry(format!("{} {carried}", r.method))
            .or_default() += 1;
    }
    let span = born.elapsed().as_secs_f64();
    let life = lifetime.as_secs_f64();
    let expiries = (span / life).floor() as usize;
    let (fewest, most) = (
        expiries.saturating_sub(1),
        (span / (life / 2.0)).ceil() as usize + 1,
    );

    // nginx's failed answers, by replica.
    let log = std::fs::read_to_string(&a.failed_log).unwrap_or_default();
    let mut by_status: BTreeMap<String, u64> = BTreeMap::new();
    let mut server_errors_elsewhere = 0;
    for line in log.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let (Some(status), Some(upstream)) = (fields.get(1), fields.get(3)) else {
            continue;
        };
        // After nginx's retries the last address is the replica that answered (or failed).
        let last = upstream.rsplit(',').next().unwrap_or(upstream).trim();
        let on_victim = last.ends_with(&format!(":{victim}"));
        *by_status
            .entry(format!(
                "{status} from {}",
                if on_victim {
                    "the killed replica"
                } else {
                    last
                }
            ))
            .or_default() += 1;
        if status.starts_with('5') && !on_victim {
            server_errors_elsewhere += 1;
        }
    }

    let made = tally.made.load(Ordering::Relaxed);
    let after = tally.made_after_kill.load(Ordering::Relaxed);
    let allowed = tally.failed_allowed.load(Ordering::Relaxed);
    let bad = tally.failed_bad.load(Ordering::Relaxed);
    let sessions = tally.sessions.load(Ordering::Relaxed);
    let lost = tally.sessions_lost.load(Ordering::Relaxed);
    println!(
        "cluster: {} replicas behind nginx, {} clients ({} in 2025-11-25 sessions, {} in 2026-07-28), {elapsed:.0} s, the replica on port {victim} killed at {:.0} s",
        a.replicas.len(),
        a.clients,
        a.clients.div_ceil(2),
        a.clients / 2,
        a.seconds / 2.0
    );
    println!(
        "  calls made:      {made} ({:.0}/s), {after} after the kill",
        made as f64 / elapsed
    );
    let sent_after = tally.sent_after_kill.load(Ordering::Relaxed);
    println!(
        "  calls failed:    {} ({allowed} on the killed replica: {} in flight when it died, {sent_after} sent to it by nginx in the moment after; {bad} otherwise)",
        allowed + bad,
        allowed.saturating_sub(sent_after)
    );
    for (text, (count, ok)) in tally.errors.lock().unwrap().iter() {
        println!(
            "    {count:>6} x {} {text}",
            if *ok { "allowed" } else { "NOT ALLOWED" }
        );
    }
    println!("  sessions:        {sessions} opened (2025-11-25), {lost} lost");
    println!(
        "  token refreshes: {} ({refused} refused, {repeated} refresh tokens presented twice), tokens living {} s over {span:.0} s: {expiries} expiries, {fewest} to {most} refreshes expected; {unauthorized} MCP requests answered 401 {unauthorized_by:?}",
        refreshes.len(),
        a.token_lifetime
    );
    match back_after {
        Some(t) => println!(
            "  killed replica:  ready again {:.1} s after the kill",
            t.as_secs_f64()
        ),
        None => println!("  killed replica:  never ready again"),
    }
    for (i, port) in a.replicas.iter().enumerate() {
        println!(
            "  replica :{port}:  RSS {} KiB at the end, {} KiB at most",
            rss_end[i], rss_max[i]
        );
    }
    println!("  nginx, answers of 400 or more: {by_status:?}");
    println!(
        "{}",
        json!({"cluster": {
            "replicas": a.replicas.len(), "clients": a.clients, "seconds": elapsed,
            "calls_made": made, "calls_after_kill": after,
            "calls_failed_allowed": allowed, "calls_failed_other": bad,
            "calls_failed_sent_after_kill": sent_after,
            "sessions": sessions, "sessions_lost": lost,
            "token_refreshes": refreshes.len(), "token_refreshes_refused": refused,
            "refresh_tokens_presented_twice": repeated, "token_lifetime_s": a.token_lifetime,
            "expiries": expiries, "mcp_401": unauthorized, "mcp_401_by": unauthorized_by,
            "killed_ready_again_s": back_after.map(|t| t.as_secs_f64()),
            "rss_kib_end": rss_end, "rss_kib_max": rss_max,
            "nginx_failed": by_status,
        }})
    );
    let mut ok = true;
    let mut fail = |why: String| {
        println!("FAIL: {why}");
        ok = false;
    };
    if bad > 0 {
        fail(format!(
            "{bad} calls failed that were not in flight on the killed replica with a retryable error"
        ));
    }
    if server_errors_elsewhere > 0 {
        fail(format!(
            "nginx answered {server_errors_elsewhere} server errors from replicas that were not killed"
        ));
    }
    if lost > 0 {
        fail(format!("{lost} sessions lost (their id got 404)"));
    }
    if refused > 0 || repeated > 0 {
        fail(format!(
            "{refused} token refreshes refused, {repeated} refresh tokens presented twice"
        ));
    }
    if refreshes.len() < fewest || refreshes.len() > most {
        fail(format!(
            "{} token refreshes, not one per token lifetime ({fewest} to {most})",
            refreshes.len()
        ));
    }
    if !killed || back_after.is_none() {
        fail("the killed replica never answered again".to_owned());
    }
    if after == 0 || made <= made_at_kill {
        fail("no calls were made after the kill".to_owned());
    }
    ok
}

/// A client's life: connect, call until told to stop; a lost session is counted and replaced.
async fn client_loop(
    i: usize,
    url: &str,
    call_ms: u64,
    tally: &Tally,
    kill: &Mutex<Kill>,
    stop: &AtomicBool,
) {
    let stateless = i % 2 == 1;
    let mut turn = i;
    'connect: while !stop.load(Ordering::Relaxed) {
        let mut session =
            ClientConfig::new(Implementation::new(format!("cluster-{i}"), "0".into()));
        let era = if stateless {
            ProtocolVersion::V2026_07_28
        } else {
            ProtocolVersion::V2025_11_25
        };
        let version = era.to_string();
        session.protocol_version = era.clone();
        session.supported_versions = vec![era];
        session.request_timeout = Duration::from_secs(30);
        session.capabilities.elicitation = serde_json::from_value(json!({"form": {}})).ok();
        let began = Instant::now();
        let client = match mcp_http::connect(
            HttpConfig::new(format!("cluster-{i}"), url.to_owned()),
            session,
        )
        .await
        {
            Ok(c) => c,
            Err(e) => {
                // A connection is a call too: its failure is judged like one, and a
                // session whose id got 404 before its handshake ended is lost as well.
                tally.made.fetch_add(1, Ordering::Relaxed);
                let text = e.to_string();
                if text.contains("HTTP 404") {
                    tally.sessions.fetch_add(1, Ordering::Relaxed);
                    tally.sessions_lost.fetch_add(1, Ordering::Relaxed);
                }
                judge_failure(tally, kill, "connect", began, &text);
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue 'connect;
            }
        };
        if !stateless {
            tally.sessions.fetch_add(1, Ordering::Relaxed);
        }
        let asked = Arc::new(Mutex::new(String::new()));
        answer_elicitations(&client, Arc::clone(&asked));
        while !stop.load(Ordering::Relaxed) {
            let name = format!("c{i}t{turn}");
            let (tool, args) = match turn % 3 {
                0 => ("mcp__fake__sleep", json!({"ms": call_ms})),
                1 => ("mcp__remote__echo", json!({"message": name})),
                _ => ("mcp__asker__ask", json!({"name": name})),
            };
            name.clone_into(&mut asked.lock().unwrap());
            turn += 1;
            let mut params = CallToolParams::new(tool.into());
            params.arguments = match args {
                serde_json::Value::Object(m) => Some(m.into_iter().collect::<JsonObject>()),
                _ => None,
            };
            let began = Instant::now();
            let outcome = client.call_tool(params, RequestOptions::DEFAULT).await;
            tally.made.fetch_add(1, Ordering::Relaxed);
            if kill.lock().unwrap().at.is_some_and(|k| began >= k) {
                tally.made_after_kill.fetch_add(1, Ordering::Relaxed);
            }
            let text_of = |result: &mcp_protocol::schema::CallToolResult| {
                result
                    .content
                    .iter()
                    .filter_map(|b| match b {
                        ContentBlock::Text(t) => Some(t.text.clone()),
                        _ => None,
                    })
                    .collect::<Vec<_>>()
                    .join(" ")
            };
            let error = match outcome {
                // The answer that reached the call must be this call's, wherever it went.
                Ok(result)
                    if result.is_error != Some(true)
                        && tool == "mcp__asker__ask"
                        && text_of(&result) != format!("{name} answered by {name}") =>
                {
                    Some(format!(
                        "ask ended without this call's answer {name}: {}",
                        text_of(&result)
                    ))
                }
                Ok(result) if result.is_error != Some(true) => None,
                Ok(result) => Some(text_of(&result)),
                Err(e) => Some(e.to_string()),
            };
            let Some(text) = error else { continue };
            if text.contains("ended the session (HTTP 404)") || client.is_closed() {
                tally.sessions_lost.fetch_add(1, Ordering::Relaxed);
                note(
                    tally,
                    &format!("[{tool}, {version}] session lost: {}", shape(&text)),
                    false,
                );
                tally.failed_bad.fetch_add(1, Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue 'connect;
            }
            judge_failure(tally, kill, &format!("{tool}, {version}"), began, &text);
        }
    }
}

/// Answers each elicitation that reaches `client` (on a call's stream, or among the inputs of
/// an `input_required` result) with the name its call in flight expects back.
fn answer_elicitations(client: &mcp_session::Client, name: Arc<Mutex<String>>) {
    let Some(mut incoming) = client.take_incoming() else {
        return;
    };
    let client = client.clone();
    tokio::spawn(async move {
        while let Some(item) = incoming.recv().await {
            if let mcp_session::Incoming::Request { id, request, .. } = item {
                let answer = if request.method() == "elicitation/create" {
                    json!({"action": "accept", "content": {"name": *name.lock().unwrap()}})
                } else {
                    json!({})
                };
                let _ = client.respond(&id, Ok(RawJson::encode(&answer).unwrap()));
            }
        }
    });
}

/// The `asker` upstream: `ask {name}` asks its client `who answers for <name>?` on the call's
/// own response stream and returns `<name> answered by <the name that came back>`.
#[derive(Clone)]
struct Asker;

impl mcp_session::Handler for Asker {
    async fn handle(
        &self,
        request: ClientRequest,
        context: mcp_session::RequestContext,
    ) -> Result<RawJson, ErrorObject> {
        let result = match request {
            ClientRequest::ListTools(_) => json!({"tools": [{"name": "ask", "inputSchema":
                {"type": "object", "properties": {"name": {"type": "string"}}}}]}),
            ClientRequest::CallTool(p) if p.name == "ask" => {
                let name = p
                    .arguments
                    .as_ref()
                    .and_then(|a| a.get("name"))
                    .and_then(serde_json::Value::as_str)
                    .unwrap_or_default()
                    .to_owned();
                let elicit = json!({
                    "message": format!("who answers for {name}?"),
                    "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}},
                });
                let answer = context
                    .peer
                    .request_raw(
                        "elicitation/create",
                        RawJson::encode(&elicit).ok(),
                        RequestOptions::DEFAULT,
                    )
                    .await
                    .map_err(|e| ErrorObject::new(code::INTERNAL_ERROR, e.to_string()))?;
                let by = answer
                    .decode::<serde_json::Value>()
                    .ok()
                    .and_then(|v| v["content"]["name"].as_str().map(str::to_owned))
                    .unwrap_or_else(|| "nobody".to_owned());
                json!({"content": [{"type": "text", "text": format!("{name} answered by {by}")}]})
            }
            other => {
                return Err(ErrorObject::new(
                    code::METHOD_NOT_FOUND,
                    other.method().to_owned(),
                ));
            }
        };
        RawJson::encode(&result).map_err(|e| ErrorObject::new(code::INTERNAL_ERROR, e.to_string()))
    }
}

/// Serves [`Asker`] over Streamable HTTP on a loopback port; returns its URL.
async fn start_asker() -> String {
    let mut config = ServerConfig::new(Implementation::new("asker".into(), "0".into()));
    config.capabilities = serde_json::from_value(json!({"tools": {}})).unwrap();
    let (listener, addr) = mcp_http::bind("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let mut http = mcp_http::HttpServerConfig::new(config);
    // Every replica's sessions, and their calls in flight, come here.
    http.max_sessions = 10_000;
    tokio::spawn(async move {
        let _ = mcp_http::serve_http(listener, http, Asker).await;
    });
    format!("http://{addr}/mcp")
}

/// How long after the kill a failure may still be the killed replica's: nginx may send a
/// request on a kept-alive connection to it in the moment before it sees the connection
/// closed (the request then reached the dead replica: `502`, tied to it by nginx's log).
const KILL_GRACE: Duration = Duration::from_secs(2);

/// Counts one failure: allowed only with a retryable error, for a call in flight when the
/// replica was killed, or begun after it and failed within [`KILL_GRACE`].
fn judge_failure(tally: &Tally, kill: &Mutex<Kill>, what: &str, began: Instant, text: &str) {
    let ended = Instant::now();
    let at = kill.lock().unwrap().at;
    let in_flight = at.is_some_and(|k| began <= k && ended >= k);
    let just_after = at.is_some_and(|k| began > k && ended <= k + KILL_GRACE);
    let allowed = (in_flight || just_after) && retryable(text);
    if allowed && just_after {
        tally.sent_after_kill.fetch_add(1, Ordering::Relaxed);
    }
    let counter = if allowed {
        &tally.failed_allowed
    } else {
        &tally.failed_bad
    };
    counter.fetch_add(1, Ordering::Relaxed);
    note(tally, &format!("[{what}] {}", shape(text)), allowed);
}

/// An error a client may retry: the balancer's `502`/`504` for a request a dead replica never
/// answered, the connection to the balancer closing under the request, the resumption of
/// a call's SSE answer cut with the replica, refused by the replica it reached (a stream is
/// held by the replica that opened it: docs/gateway.md, "Many replicas"), or the retry of a
/// call suspended at the killed replica, which another replica says is gone.
fn retryable(text: &str) -> bool {
    [
        "HTTP 502",
        "HTTP 504",
        "connection closed",
        "Connection reset",
        "resuming the SSE stream",
        "is gone, and the call with it",
    ]
    .iter()
    .any(|s| text.contains(s))
}

fn note(tally: &Tally, shape: &str, allowed: bool) {
    let mut errors = tally.errors.lock().unwrap();
    let entry = errors.entry(shape.to_owned()).or_insert((0, allowed));
    entry.0 += 1;
    entry.1 &= allowed;
}

/// An error text on one line (an HTML body cut at its first tag's line) with its numbers
/// blanked, so that alike errors count together.
fn shape(text: &str) -> String {
    text.lines()
        .next()
        .unwrap_or_default()
        .chars()
        .map(|c| if c.is_ascii_digit() { '#' } else { c })
        .take(240)
        .collect()
}

/// `GET /readyz` on a replica: its status, if it answers.
async fn readyz(port: u16) -> Option<u16> {
    let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .ok()?;
    let request =
        format!("GET /readyz HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.ok()?;
    let mut answer = Vec::new();
    tokio::time::timeout(Duration::from_secs(5), stream.read_to_end(&mut answer))
        .await
        .ok()?
        .ok()?;
    String::from_utf8_lossy(&answer)
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
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

/// The live `mcp-host serve` listening on `port` (`--http 127.0.0.1:<port>`).
fn replica_pid(port: u16) -> Option<u32> {
    let address = format!("127.0.0.1:{port}");
    mcp_testkit::procs::live()
        .into_iter()
        .find(|p| {
            p.program == "mcp-host"
                && p.argv.iter().any(|a| a == "serve")
                && p.has("--http", &address)
        })
        .map(|p| p.pid)
}
