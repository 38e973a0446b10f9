//! No configured secret shows, even when a server echoes it: a stdio server quotes its key in
//! its JSON-RPC errors, another the host's token it inherited, and an HTTP server quotes the
//! header it was sent in its error body. Each secret is first shown to have reached its
//! server, and each error is shown to have come through (with `[redacted]` where the secret
//! was), before the secret is looked for in every output: `status --json`, `test`, `call`,
//! and the gateway's answers and log file.

use std::io::{BufRead, Read as _, Write as _};
use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt as _;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use super::*;

/// The configured environment value a stdio server is given.
const ENV_KEY: &str = "sk-env-planted-7d1c93";
/// A value of the host's own environment, which a server that inherits everything gets.
const HOST_TOKEN: &str = "host-token-planted-91f3a7";
/// The configured header value an HTTP server is sent.
const HEADER_KEY: &str = "hdr-planted-52bb0e4a";

/// A loopback HTTP server that answers every request with 500 and a body quoting the
/// `X-Api-Key` it was sent: once whole, and once across byte 300 (where the host's quote of
/// an error body is cut). Returns its address and every request it read.
fn echoing_server() -> (String, Arc<Mutex<String>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let seen = Arc::new(Mutex::new(String::new()));
    let log = seen.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut head = String::new();
            let mut length = 0;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 {
                    break;
                }
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = v.trim().parse().unwrap_or(0);
                }
                head.push_str(&line);
                if line == "\r\n" {
                    break;
                }
            }
            let mut body = vec![0; length];
            let _ = reader.read_exact(&mut body);
            log.lock().unwrap().push_str(&head);
            let key = head
                .lines()
                .find_map(|l| {
                    let (name, value) = l.split_once(':')?;
                    name.eq_ignore_ascii_case("x-api-key")
                        .then(|| value.trim().to_owned())
                })
                .unwrap_or_default();
            // The second time, the key starts at byte 290: the first ten bytes of it would
            // be quoted before the cut.
            let mut text = format!("upstream refused the key {key}; ");
            let pad = 289usize.saturating_sub(text.len());
            text.push_str(&".".repeat(pad));
            text.push_str(&format!(" {key} and more"));
            let _ = write!(
                stream,
                "HTTP/1.1 500 Internal Server Error\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{text}",
                text.len()
            );
        }
    });
    (addr, seen)
}

/// A stdio server that writes the key it was given (the variable `var`) to `proof`, then
/// becomes the fake server with `flags`.
fn proving(proof: &Path, var: &str, flags: &[&str]) -> Vec<String> {
    let script =
        format!("printf %s \"${var}\" > \"$0\" && f=\"$1\" && shift && exec \"$f\" \"$@\"");
    let mut args = vec![
        "-c".to_owned(),
        script,
        proof.display().to_string(),
        mcp_testkit::fake_server().display().to_string(),
    ];
    args.extend(flags.iter().map(|f| (*f).to_owned()));
    args
}

/// Asserts that no secret is in `text`.
#[track_caller]
fn hides_all(what: &str, text: &str) {
    for secret in [ENV_KEY, HOST_TOKEN, HEADER_KEY] {
        assert!(!text.contains(secret), "{what} shows {secret:?}:\n{text}");
        // Nor the first half of one, where a quote was cut.
        let half = &secret[..secret.len() / 2];
        assert!(
            !text.contains(half),
            "{what} shows part of {secret:?}:\n{text}"
        );
    }
}

#[test]
fn no_secret_shows_in_status_test_or_call() {
    let u = User::new();
    let dir = u.project.path();
    let (remote, requests) = echoing_server();
    let env_proof = dir.join("env-received");
    let host_proof = dir.join("host-received");
    u.write_global(&json!({"version": 1, "mcp": {"servers": {
        // Connects, then fails every call with an error quoting its key.
        "leaky": {"transport": "stdio", "command": "/bin/sh",
                  "args": proving(&env_proof, "FAKE_API_KEY", &["--leak-env", "FAKE_API_KEY"]),
                  "env": {"FAKE_API_KEY": ENV_KEY},
                  "permission": {"default": "allow"}},
        // Fails its tools/list with an error quoting the host's token it inherited.
        "inherits": {"transport": "stdio", "command": "/bin/sh", "inherit_env": true,
                     "args": proving(&host_proof, "HOST_TOKEN",
                                     &["--leak-env", "HOST_TOKEN", "--fail-tools-list-after", "0"])},
        "remote": {"transport": "http", "url": format!("http://{remote}/mcp"),
                   "headers": {"X-Api-Key": HEADER_KEY}, "request_timeout_ms": 5000},
    }}}));

    let status = u.run_with(&["status", "--json"], "HOST_TOKEN", HOST_TOKEN);
    // Each secret reached its server.
    assert_eq!(std::fs::read_to_string(&env_proof).unwrap(), ENV_KEY);
    assert_eq!(std::fs::read_to_string(&host_proof).unwrap(), HOST_TOKEN);
    assert!(
        requests
            .lock()
            .unwrap()
            .to_ascii_lowercase()
            .contains(&format!("x-api-key: {HEADER_KEY}\r\n")),
        "the header did not reach the server"
    );
    // The errors came through, the secrets cut out.
    let v = status.code(0).json();
    let error = |id: &str| {
        v["servers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["id"] == id)
            .unwrap_or_else(|| panic!("no {id} in {v}"))["last_error"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    };
    assert!(
        error("inherits").contains("the key \"[redacted]\" was refused"),
        "{v}"
    );
    assert!(
        error("remote").contains("upstream refused the key [redacted]"),
        "{v}"
    );
    hides_all("status --json", &format!("{status:?}"));

    let test = u.run_with(&["test", "inherits"], "HOST_TOKEN", HOST_TOKEN);
    assert_ne!(test.code, 0, "{test:#?}");
    assert!(
        test.stderr.contains("[redacted]") || test.stdout.contains("[redacted]"),
        "{test:#?}"
    );
    hides_all("test inherits", &format!("{test:?}"));
    let test = u.run(&["test", "remote", "--json"]);
    assert_ne!(test.code, 0, "{test:#?}");
    assert!(
        format!("{test:?}").contains("upstream refused the key [redacted]"),
        "{test:#?}"
    );
    hides_all("test remote", &format!("{test:?}"));

    let call = u.run(&[
        "call",
        "leaky",
        "echo",
        "--args",
        r#"{"message": "hi"}"#,
        "--yes",
    ]);
    assert_ne!(call.code, 0, "{call:#?}");
    assert!(
        call.stderr.contains("the key \"[redacted]\" was refused"),
        "{call:#?}"
    );
    hides_all("call", &format!("{call:?}"));
}

/// Sends one JSON-RPC line.
fn send(stdin: &mut std::process::ChildStdin, message: &Value) {
    let mut line = serde_json::to_vec(message).unwrap();
    line.push(b'\n');
    stdin.write_all(&line).unwrap();
    stdin.flush().unwrap();
}

/// Reads stdout lines until the answer to `id`.
fn answer(stdout: &mut impl BufRead, id: u64) -> Value {
    loop {
        let mut line = String::new();
        assert!(stdout.read_line(&mut line).unwrap() > 0, "stdout ended");
        let message: Value = serde_json::from_str(&line).unwrap();
        if message["id"] == id {
            return message;
        }
    }
}

#[test]
fn no_secret_shows_in_the_gateways_answers_or_log_and_the_log_is_private() {
    let u = User::new();
    let dir = u.project.path();
    let (remote, requests) = echoing_server();
    let env_proof = dir.join("env-received");
    let log = dir.join("gateway.log");
    let file = json!({
        "mode": "meta",
        "logFile": log,
        "unattended": "allow",
        "mcpServers": {
            "leaky": {"description": "quotes its key in errors", "command": "/bin/sh",
                      "args": proving(&env_proof, "FAKE_API_KEY", &["--leak-env", "FAKE_API_KEY"]),
                      "env": {"FAKE_API_KEY": ENV_KEY},
                      "permission": {"default": "allow"}},
            "broken": {"description": "fails its tools/list", "command": mcp_testkit::fake_server(),
                       "args": ["--leak-env", "FAKE_API_KEY", "--fail-tools-list-after", "0"],
                       "env": {"FAKE_API_KEY": ENV_KEY}},
            "remote": {"description": "quotes its header", "url": format!("http://{remote}/mcp"),
                       "headers": {"X-Api-Key": HEADER_KEY}},
        }
    });
    let path = dir.join("gateway.json");
    std::fs::write(&path, serde_json::to_vec_pretty(&file).unwrap()).unwrap();
    let mut child = u
        .command(&["serve", "--gateway", path.to_str().unwrap()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    send(
        &mut stdin,
        &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "secrets-test", "version": "0"}}}),
    );
    answer(&mut stdout, 1);
    send(
        &mut stdin,
        &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    );
    // The gateway answers before its upstreams have settled: ask until none is connecting.
    let mut id = 100;
    let listed = loop {
        id += 1;
        send(
            &mut stdin,
            &json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
                "name": "list-servers", "arguments": {}}}),
        );
        let listed = answer(&mut stdout, id);
        if !listed.to_string().contains(r#""state":"connecting""#) || id > 1000 {
            break listed;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    send(
        &mut stdin,
        &json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
            "name": "call-tool",
            "arguments": {"server": "leaky", "tool": "echo", "arguments": {"message": "hi"}}}}),
    );
    let called = answer(&mut stdout, 3);
    drop(stdin);
    let mut rest = String::new();
    stdout.read_to_string(&mut rest).unwrap();
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    child.wait().unwrap();

    // Each secret reached its server.
    assert_eq!(std::fs::read_to_string(&env_proof).unwrap(), ENV_KEY);
    assert!(
        requests
            .lock()
            .unwrap()
            .to_ascii_lowercase()
            .contains(&format!("x-api-key: {HEADER_KEY}\r\n")),
        "the header did not reach the server"
    );
    // The errors came through, the secrets cut out.
    let listed_text = listed.to_string();
    assert!(
        listed_text.contains(r#"the key \\\"[redacted]\\\" was refused"#)
            || listed_text.contains(r#"the key \"[redacted]\" was refused"#),
        "{listed}"
    );
    assert!(
        listed_text.contains("upstream refused the key [redacted]"),
        "{listed}"
    );
    let called_text = called.to_string();
    assert!(called_text.contains("[redacted]"), "{called}");
    let logged = std::fs::read_to_string(&log).unwrap();
    assert!(logged.contains("upstream broken"), "{logged}");
    assert!(logged.contains("[redacted]"), "{logged}");
    for (what, text) in [
        ("list-servers", &listed_text),
        ("call-tool", &called_text),
        ("the log file", &logged),
        ("stderr", &stderr),
        ("stdout", &rest),
    ] {
        hides_all(what, text);
    }
    // Only the user may read the log.
    let mode = std::fs::metadata(&log).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "the log file's mode is {mode:o}");
}

#[test]
fn a_gateway_log_file_open_to_others_is_made_private() {
    let u = User::new();
    let dir = u.project.path();
    let log = dir.join("gateway.log");
    std::fs::write(&log, "earlier\n").unwrap();
    std::fs::set_permissions(&log, std::fs::Permissions::from_mode(0o644)).unwrap();
    let file = json!({"mode": "meta", "logFile": log, "mcpServers": {}});
    let path = dir.join("gateway.json");
    std::fs::write(&path, serde_json::to_vec_pretty(&file).unwrap()).unwrap();
    let mut child = u
        .command(&["serve", "--gateway", path.to_str().unwrap()])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdin.take());
    let status = child.wait().unwrap();
    let logged = std::fs::read_to_string(&log).unwrap();
    assert!(status.success(), "{logged}");
    // It ran and wrote to the same file, after what was there.
    assert!(
        logged.starts_with("earlier\n") && logged.contains(" mcp_gateway: "),
        "{logged}"
    );
    let mode = std::fs::metadata(&log).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "the log file's mode is {mode:o}");
}
