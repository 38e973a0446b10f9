//! The log of `mcp-host` (issue 22 §6): `-v`/`-q` and `RUST_LOG` choose what it shows for
//! every command, `serve --log-format json` writes one JSON object per line, timestamps are
//! RFC 3339 in UTC, a stdio server's stderr is logged with its id, the gateway logs sessions,
//! reads and prompts, and no secret, argument or result ever reaches a line.

use std::io::{BufRead, Read as _, Write as _};

use serde_json::{Value, json};

use super::*;

/// A secret in the upstream's environment, which it prints on stderr.
const ENV_SECRET: &str = "env-secret-Zq8LwT3v";
/// The gateway's bearer token.
const TOKEN: &str = "bearer-token-Hk29xPq7";
/// An argument of a tool call and of a prompt: never logged.
const ARGUMENT: &str = "argument-Vm4nR2";

/// A passthrough gateway file in front of the demo server, started through `/bin/sh` so that
/// it first writes two lines on stderr (one with its secret). The file has two warnings: its
/// `categories` (ignored in this mode) and an unknown permission field.
fn gateway_file(dir: &Path) -> PathBuf {
    let file = json!({
        "mode": "passthrough",
        "categories": {"c": {"description": "ignored in passthrough", "server": "demo"}},
        "mcpServers": {
            "demo": {
                "command": "/bin/sh",
                "args": ["-c",
                         "echo 'hello from the upstream' >&2; echo \"my key is $UPSTREAM_SECRET\" >&2; exec \"$0\" demo-server",
                         bin()],
                "env": {"UPSTREAM_SECRET": ENV_SECRET},
                "permission": {"default": "allow", "colour": "blue"}
            }
        }
    });
    let path = dir.join("gateway.json");
    std::fs::write(&path, serde_json::to_vec_pretty(&file).unwrap()).unwrap();
    path
}

fn send(stdin: &mut std::process::ChildStdin, message: &Value) {
    let mut line = serde_json::to_vec(message).unwrap();
    line.push(b'\n');
    stdin.write_all(&line).unwrap();
    stdin.flush().unwrap();
}

fn answer(stdout: &mut impl BufRead, id: u64) -> Value {
    loop {
        let mut line = String::new();
        assert!(stdout.read_line(&mut line).unwrap() > 0, "stdout ended");
        let message: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("stdout carries something else than MCP ({e}): {line:?}"));
        if message["id"] == id {
            return message;
        }
    }
}

/// `mcp-host serve` over stdio with `flags` (and `RUST_LOG` if given): a client initializes,
/// reads a resource, gets a prompt and calls a tool (arguments [`ARGUMENT`]), then leaves.
/// Everything on stderr.
fn serve_session(user: &User, file: &Path, flags: &[&str], rust_log: Option<&str>) -> String {
    let mut args = vec!["serve", "--gateway", file.to_str().unwrap()];
    args.extend(flags);
    let mut command = user.command(&args);
    if let Some(filter) = rust_log {
        command.env("RUST_LOG", filter);
    }
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let stderr = child.stderr.take().unwrap();
    let stderr = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = BufReader::new(stderr).read_to_string(&mut text);
        text
    });
    send(
        &mut stdin,
        &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "logs-test", "version": "1.2.3"}}}),
    );
    answer(&mut stdout, 1);
    send(
        &mut stdin,
        &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    );
    // Waits for the upstream: its tools are listed once it is ready.
    let mut listed = false;
    for _ in 0..200 {
        send(
            &mut stdin,
            &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
        );
        let tools = answer(&mut stdout, 2);
        if tools["result"]["tools"]
            .as_array()
            .is_some_and(|t| !t.is_empty())
        {
            listed = true;
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(listed, "the upstream never became ready");
    send(
        &mut stdin,
        &json!({"jsonrpc": "2.0", "id": 3, "method": "resources/read",
                "params": {"uri": "demo://notes/shopping"}}),
    );
    let read = answer(&mut stdout, 3);
    assert!(read["result"]["contents"][0]["text"].is_string(), "{read}");
    send(
        &mut stdin,
        &json!({"jsonrpc": "2.0", "id": 4, "method": "prompts/get",
                "params": {"name": "review", "arguments": {"topic": ARGUMENT}}}),
    );
    let prompt = answer(&mut stdout, 4);
    assert!(prompt.to_string().contains(ARGUMENT), "{prompt}");
    send(
        &mut stdin,
        &json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
                "params": {"name": "echo", "arguments": {"text": ARGUMENT}}}),
    );
    let called = answer(&mut stdout, 5);
    assert_eq!(called["result"]["content"][0]["text"], ARGUMENT, "{called}");
    drop(stdin);
    let mut rest = String::new();
    stdout.read_to_string(&mut rest).unwrap();
    assert!(rest.trim().is_empty(), "more on stdout: {rest:?}");
    let status = child.wait().unwrap();
    let stderr = stderr.join().unwrap();
    assert_eq!(status.code(), Some(0), "{stderr}");
    stderr
}

/// Whether `text` is an RFC 3339 date-time in UTC (`YYYY-MM-DDTHH:MM:SS[.fraction]Z`), each
/// field in its range (day by month, leap years included).
fn is_rfc3339_utc(text: &str) -> bool {
    let b = text.as_bytes();
    let digits = |r: std::ops::Range<usize>| -> Option<u32> {
        let s = text.get(r)?;
        s.bytes()
            .all(|c| c.is_ascii_digit())
            .then(|| s.parse().ok())?
    };
    let (Some(year), Some(month), Some(day), Some(h), Some(m), Some(s)) = (
        digits(0..4),
        digits(5..7),
        digits(8..10),
        digits(11..13),
        digits(14..16),
        digits(17..19),
    ) else {
        return false;
    };
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || b[10] != b'T' {
        return false;
    }
    if b[13] != b':' || b[16] != b':' || *b.last().unwrap() != b'Z' {
        return false;
    }
    let fraction = &text[19..text.len() - 1];
    let digits_after_dot = |f: &str| {
        f.strip_prefix('.')
            .is_some_and(|d| !d.is_empty() && d.bytes().all(|c| c.is_ascii_digit()))
    };
    if !fraction.is_empty() && !digits_after_dot(fraction) {
        return false;
    }
    let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    let days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days).contains(&day) && h < 24 && m < 60 && s < 60
}

#[test]
fn the_timestamp_check_is_strict() {
    assert!(is_rfc3339_utc("2026-11-26T17:04:18.123456Z"));
    assert!(is_rfc3339_utc("2024-02-29T00:00:00Z"));
    for bad in [
        "1764176658.123 mcp-host",
        "1764176658.123",
        "2026-11-26 17:04:18Z",
        "2026-11-26T17:04:18.123456",
        "2026-11-26T17:04:18+01:00",
        "2026-02-29T00:00:00Z",
        "2026-13-01T00:00:00Z",
        "2026-11-26T24:00:00Z",
        "2026-11-26T17:04:18.Z",
    ] {
        assert!(!is_rfc3339_utc(bad), "{bad}");
    }
}

/// The lines of `stderr` at `level` (text format: `TIMESTAMP LEVEL TARGET: ...`).
fn at_level<'a>(stderr: &'a str, level: &str) -> Vec<&'a str> {
    stderr
        .lines()
        .filter(|l| l.split_whitespace().nth(1) == Some(level))
        .collect()
}

#[test]
fn serve_logs_sessions_reads_prompts_calls_and_upstream_stderr_with_rfc3339_times() {
    let user = User::new();
    let file = gateway_file(user.project.path());
    let stderr = serve_session(&user, &file, &[], None);
    for line in stderr.lines() {
        let stamp = line.split_whitespace().next().unwrap_or_default();
        assert!(is_rfc3339_utc(stamp), "not an RFC 3339 time: {line:?}");
    }
    let has = |text: &str| {
        assert!(stderr.contains(text), "no {text:?} in:\n{stderr}");
    };
    has("INFO mcp_gateway: client logs-test 1.2.3 initialized (protocol 2025-06-18)");
    has("INFO mcp_gateway: resources/read demo://notes/shopping ");
    has("INFO mcp_gateway: prompts/get review ");
    has("INFO mcp_gateway: call echo demo/echo ");
    // The call's line names its client's session (the gateway's own) and its server as
    // fields, as the session's other lines do.
    let call = stderr
        .lines()
        .find(|l| l.contains("INFO mcp_gateway: call echo demo/echo "))
        .unwrap_or_default();
    assert!(
        call.contains(" session=\"session-") && call.ends_with(" server=\"demo\""),
        "{call}"
    );
    has("INFO mcp_gateway: client closed session=\"session-");
    // The upstream's stderr, with its id; its secret redacted.
    has("INFO mcp_stdio::stderr: hello from the upstream server=\"demo\"");
    has("INFO mcp_stdio::stderr: my key is [redacted] server=\"demo\"");
    // The file's warnings, each said once.
    has("WARN mcp_gateway: categories: ignored in mode `passthrough`");
    has("field `permission.colour`: unknown field, ignored");
    assert!(!stderr.contains("warning: warning:"), "{stderr}");
    assert!(!stderr.contains("WARN mcp_gateway: warning:"), "{stderr}");
    // Arguments and results are not logged, nor is the secret.
    assert!(!stderr.contains(ARGUMENT), "{stderr}");
    assert!(!stderr.contains("milk"), "a result was logged: {stderr}");
    assert!(!stderr.contains(ENV_SECRET), "{stderr}");
    // At the default level nothing below info.
    assert!(at_level(&stderr, "DEBUG").is_empty(), "{stderr}");
}

#[test]
fn v_q_and_rust_log_change_what_serve_logs() {
    let user = User::new();
    let file = gateway_file(user.project.path());

    // -v: the requests at debug, on top of the info lines.
    let verbose = serve_session(&user, &file, &["-v"], None);
    assert!(
        verbose.contains("INFO mcp_stdio::stderr: hello from the upstream"),
        "{verbose}"
    );
    assert!(
        verbose.contains("DEBUG mcp_gateway: request prompts/get"),
        "{verbose}"
    );
    assert!(!at_level(&verbose, "INFO").is_empty(), "{verbose}");

    // -q: warnings only.
    let quiet = serve_session(&user, &file, &["-q"], None);
    assert!(
        quiet.contains("WARN mcp_gateway: categories: ignored"),
        "{quiet}"
    );
    assert!(at_level(&quiet, "INFO").is_empty(), "{quiet}");

    // -qqq: nothing at all (the session above ran: serve_session checked its answers).
    let silent = serve_session(&user, &file, &["-qqq"], None);
    assert_eq!(silent, "", "-qqq logged");

    // RUST_LOG: a target switched off, another raised; its own level yields to the flags.
    let filtered = serve_session(
        &user,
        &file,
        &[],
        Some("mcp_stdio::stderr=off,mcp_gateway=debug"),
    );
    assert!(
        filtered.contains("DEBUG mcp_gateway: request tools/call"),
        "{filtered}"
    );
    assert!(filtered.contains("INFO mcp_gateway: client logs-test"));
    assert!(!filtered.contains("mcp_stdio::stderr"), "{filtered}");
    let flags_win = serve_session(&user, &file, &["-q"], Some("debug"));
    assert!(flags_win.contains("WARN mcp_gateway"), "{flags_win}");
    assert!(at_level(&flags_win, "DEBUG").is_empty(), "{flags_win}");
    assert!(at_level(&flags_win, "INFO").is_empty(), "{flags_win}");
}

#[test]
fn serve_log_format_json_writes_one_object_per_line_with_the_fields() {
    let user = User::new();
    let file = gateway_file(user.project.path());
    let stderr = serve_session(&user, &file, &["--log-format", "json"], None);
    let lines: Vec<Value> = stderr
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l:?}")))
        .collect();
    assert!(lines.len() >= 5, "{stderr}");
    for line in &lines {
        for key in ["level", "target", "message"] {
            assert!(line[key].is_string(), "no {key}: {line}");
        }
        assert!(line["fields"].is_object(), "no fields: {line}");
        let stamp = line["timestamp"].as_str().unwrap_or_default();
        assert!(is_rfc3339_utc(stamp), "not an RFC 3339 time: {line}");
    }
    let find = |target: &str, message: &str| {
        lines
            .iter()
            .find(|l| l["target"] == target && l["message"].as_str().unwrap().contains(message))
            .unwrap_or_else(|| panic!("no {target} {message:?} in:\n{stderr}"))
    };
    let upstream = find("mcp_stdio::stderr", "hello from the upstream");
    assert_eq!(upstream["level"], "INFO");
    assert_eq!(upstream["fields"]["server"], "demo");
    let session = find("mcp_gateway", "client logs-test 1.2.3 initialized");
    assert!(
        session["fields"]["session"]
            .as_str()
            .unwrap()
            .starts_with("session-"),
        "{session}"
    );
    let read = find("mcp_gateway", "resources/read demo://notes/shopping");
    assert_eq!(read["fields"]["session"], session["fields"]["session"]);
    let warning = find("mcp_gateway", "categories: ignored");
    assert_eq!(warning["level"], "WARN");
    assert!(!stderr.contains(ARGUMENT), "{stderr}");
}

#[test]
fn other_commands_log_only_errors_unless_asked() {
    let user = User::new();
    user.write_global(&json!({"version": 1, "mcp": {"servers": {"noisy": {
        "transport": "stdio",
        "command": "/bin/sh",
        "args": ["-c", "echo 'noisy says hi' >&2; exec \"$0\" demo-server", bin()]
    }}}}));
    // Presence first: the server ran and listed its tools, and at -vv its stderr is shown.
    let loud = user.run(&["tools", "-vv"]);
    loud.code(0).out_has("echo");
    loud.err_has("INFO mcp_stdio::stderr: noisy says hi server=\"noisy\"");
    let quiet = user.run(&["tools"]);
    quiet.code(0).out_has("echo");
    assert!(!quiet.stderr.contains("noisy says hi"), "{quiet:#?}");
    // RUST_LOG picks the target alone.
    let picked = user.run_with(&["tools"], "RUST_LOG", "mcp_stdio=info");
    picked.code(0).err_has("noisy says hi");
    assert!(!picked.stderr.contains("mcp_host::shared"), "{picked:#?}");
}

/// The gateway over HTTP with a bearer token, at the most verbose level, in front of an
/// upstream with a secret in its environment: neither secret appears anywhere in the log,
/// which shows the traffic (presence first).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_token_or_secret_reaches_the_log_at_the_most_verbose_level() {
    let user = User::new();
    let file = gateway_file(user.project.path());
    let served = Serving::spawn(
        user.command(&[
            "serve",
            "--gateway",
            file.to_str().unwrap(),
            "--http",
            "127.0.0.1:0",
            "--bearer-token-env",
            "GATEWAY_TOKEN",
            "-vv",
        ])
        .env("GATEWAY_TOKEN", TOKEN)
        .env("RUST_LOG", "trace"),
    );
    let mut config = mcp_http::HttpConfig::new("gateway", served.url());
    config.headers = vec![("Authorization".into(), format!("Bearer {TOKEN}"))];
    // A client of the handshake era: its session is logged.
    let mut session = mcp_protocol::ClientConfig::new(mcp_protocol::schema::Implementation::new(
        "logs-http".into(),
        "0".into(),
    ));
    session.supported_versions = mcp_protocol::ProtocolVersion::HANDSHAKE.to_vec();
    let client = mcp_http::connect(config, session).await.unwrap();
    let mut ready = false;
    for _ in 0..200 {
        if !client.list_all_tools().await.unwrap().is_empty() {
            ready = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert!(ready, "the upstream never became ready");
    client.read_resource("demo://notes/shopping").await.unwrap();
    let mut params = mcp_protocol::schema::CallToolParams::new("echo".into());
    params.arguments = json!({"text": ARGUMENT}).as_object().cloned();
    client
        .call_tool(params, mcp_protocol::RequestOptions::DEFAULT)
        .await
        .unwrap();
    client.close().await;
    // The session's end is logged: then stop.
    let log = served.stop();
    for text in [
        "listening on",
        "client logs-http 0 initialized",
        "resources/read demo://notes/shopping",
        "call echo demo/echo",
        "DEBUG mcp_gateway: request tools/call",
        "my key is [redacted] server=\"demo\"",
    ] {
        assert!(log.contains(text), "no {text:?} in:\n{log}");
    }
    for secret in [TOKEN, ENV_SECRET, ARGUMENT] {
        assert!(!log.contains(secret), "{secret} logged:\n{log}");
    }
}

/// `budget --gateway` says each of the file's warnings once (it said `warning: warning:` for
/// the configuration's problems).
#[test]
fn budget_says_each_warning_of_a_gateway_file_once() {
    let user = User::new();
    let file = gateway_file(user.project.path());
    let run = user.run(&["budget", "--gateway", file.to_str().unwrap()]);
    run.code(0)
        .err_has("mcp-host: warning: categories: ignored in mode `passthrough`")
        .err_has("field `permission.colour`: unknown field, ignored");
    assert!(!run.stderr.contains("warning: warning:"), "{run:#?}");
}
