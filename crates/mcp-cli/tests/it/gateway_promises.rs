//! Sentences of `docs/gateway.md` about `mcp-host serve --http` that no other test held (the
//! audit of issue 22): `--allow-unauthenticated` off loopback, the `Host` check wherever the
//! gateway listens, and the flags that change its limits.

use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::time::Duration;

use super::*;

/// An empty meta-mode gateway file: nothing to start, so the gateway listens at once.
fn empty_gateway(dir: &Path) -> PathBuf {
    let path = dir.join("gateway.json");
    std::fs::write(&path, r#"{"mode": "meta", "mcpServers": {}}"#).unwrap();
    path
}

/// `mcp-host serve --gateway FILE --http …` (an empty gateway file) with `args` after it.
fn serving(user: &User, args: &[&str], env: &[(&str, &str)]) -> Serving {
    serving_with(user, &empty_gateway(user.project.path()), args, env)
}

/// As [`serving`], with the gateway file at `file`.
fn serving_with(user: &User, file: &Path, args: &[&str], env: &[(&str, &str)]) -> Serving {
    let mut all = vec!["serve", "--gateway", file.to_str().unwrap()];
    all.extend(args);
    Serving::spawn(user.command(&all).envs(env.iter().copied()))
}

// Raw requests, for the rules of the HTTP layer.
impl Serving {
    /// A connection to the gateway on 127.0.0.1.
    fn connect(&self) -> TcpStream {
        let tcp = TcpStream::connect(("127.0.0.1", self.port())).unwrap();
        tcp.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        tcp
    }

    /// `method /mcp` with `host` as its `Host` and `extra` header lines, on a connection of
    /// its own that the request closes: the whole answer.
    fn request(&self, method: &str, host: &str, extra: &str, body: &str) -> String {
        let mut tcp = self.connect();
        write!(
            tcp,
            "{method} /mcp HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\n{extra}Content-Length: {}\r\n\
             Connection: close\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        let mut answer = Vec::new();
        let _ = tcp.read_to_end(&mut answer);
        String::from_utf8_lossy(&answer).into_owned()
    }

    /// An `initialize` POST with `host` as its `Host`.
    fn initialize(&self, host: &str, extra: &str) -> String {
        let body = r#"{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"}}}"#;
        self.request("POST", host, extra, body)
    }
}

/// The status code of an HTTP answer.
fn status(answer: &str) -> u16 {
    answer
        .strip_prefix("HTTP/1.1 ")
        .and_then(|rest| rest.get(..3))
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("not an HTTP answer: {answer:?}"))
}

/// "`--http` on an address that is not loopback … is refused unless `--allow-unauthenticated`
/// is given"; "only loopback `Host` headers are accepted", wherever it listens and whatever
/// token a client presents: a client elsewhere needs a proxy that sends a loopback `Host`.
#[test]
fn off_loopback_it_serves_when_allowed_and_still_only_to_loopback_hosts() {
    let user = User::new();
    let open = serving(
        &user,
        &["--http", "0.0.0.0:0", "--allow-unauthenticated"],
        &[],
    );
    assert!(
        !open.said.contains("without authentication"),
        "{}",
        open.said
    );
    let loopback = format!("127.0.0.1:{}", open.port());
    assert_eq!(status(&open.initialize(&loopback, "")), 200);
    let elsewhere = format!("192.0.2.7:{}", open.port());
    assert_eq!(status(&open.initialize(&elsewhere, "")), 403);
    drop(open);

    let token = ("GATEWAY_TOKEN", "t0ken-8c1d");
    let guarded = serving(
        &user,
        &["--http", "0.0.0.0:0", "--bearer-token-env", token.0],
        &[token],
    );
    let bearer = format!("Authorization: Bearer {}\r\n", token.1);
    let loopback = format!("localhost:{}", guarded.port());
    assert_eq!(status(&guarded.initialize(&loopback, &bearer)), 200);
    assert_eq!(status(&guarded.initialize(&loopback, "")), 401);
    let elsewhere = format!("gateway.example:{}", guarded.port());
    assert_eq!(status(&guarded.initialize(&elsewhere, &bearer)), 403);
    drop(guarded);

    // `--allowed-host` names the name remote clients use; it adds to loopback, nothing else.
    let named = serving(
        &user,
        &[
            "--http",
            "0.0.0.0:0",
            "--bearer-token-env",
            token.0,
            "--allowed-host",
            "gateway.example",
        ],
        &[token],
    );
    let by_name = format!("gateway.example:{}", named.port());
    assert_eq!(status(&named.initialize(&by_name, &bearer)), 200);
    assert_eq!(status(&named.initialize(&by_name, "")), 401);
    let loopback = format!("127.0.0.1:{}", named.port());
    assert_eq!(status(&named.initialize(&loopback, &bearer)), 200);
    let other = format!("evil.example:{}", named.port());
    assert_eq!(status(&named.initialize(&other, &bearer)), 403);
}

/// `--max-connections N`, `--max-sessions N` and `--session-idle-timeout-secs S` reach the
/// server: one connection more is answered `503` with the reason, one session more is
/// refused naming `max_sessions`, and an idle session ends (its id then gets `404`), which
/// makes room for another.
#[test]
fn the_limit_flags_reach_the_server() {
    let user = User::new();
    let one = serving(
        &user,
        &["--http", "127.0.0.1:0", "--max-connections", "1"],
        &[],
    );
    let held = one.connect();
    let host = format!("127.0.0.1:{}", one.port());
    let refused = one.request("GET", &host, "", "");
    assert_eq!(status(&refused), 503, "{refused}");
    assert!(refused.contains("max_connections"), "{refused}");
    assert!(
        refused.to_lowercase().contains("retry-after: 1"),
        "{refused}"
    );
    drop(held);
    drop(one);

    let sessions = serving(
        &user,
        &[
            "--http",
            "127.0.0.1:0",
            "--max-sessions",
            "1",
            "--session-idle-timeout-secs",
            "1",
        ],
        &[],
    );
    let host = format!("127.0.0.1:{}", sessions.port());
    let first = sessions.initialize(&host, "");
    assert_eq!(status(&first), 200, "{first}");
    let id = first
        .lines()
        .find_map(|l| {
            l.to_lowercase()
                .starts_with("mcp-session-id:")
                .then(|| l.split_once(':').unwrap().1.trim().to_owned())
        })
        .unwrap_or_else(|| panic!("no session id: {first}"));
    let second = sessions.initialize(&host, "");
    assert_eq!(status(&second), 503, "{second}");
    assert!(second.contains("max_sessions"), "{second}");

    // Idle for a second, the session ends: that makes room (asking for a session does not
    // use the one there is), and its id is unknown from then on.
    let mut again = 0;
    for _ in 0..100 {
        std::thread::sleep(Duration::from_millis(100));
        again = status(&sessions.initialize(&host, ""));
        if again == 200 {
            break;
        }
    }
    assert_eq!(again, 200, "the idle session never made room");
    let ping = r#"{"jsonrpc": "2.0", "id": 2, "method": "ping"}"#;
    let with_id = format!("Mcp-Session-Id: {id}\r\n");
    assert_eq!(
        status(&sessions.request("POST", &host, &with_id, ping)),
        404
    );
}

/// Over stdio: `initialize`, then each of `calls` (a `tools/call` of a meta tool) in turn, and
/// the results; the gateway is then left to exit.
fn over_stdio(user: &User, file: &Path, calls: &[serde_json::Value]) -> Vec<serde_json::Value> {
    use serde_json::json;
    let mut child = user
        .command(&["serve", "--gateway", file.to_str().unwrap()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut exchange = |id: u64, method: &str, params: serde_json::Value| {
        let request = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        writeln!(stdin, "{request}").unwrap();
        let result = loop {
            let mut line = String::new();
            assert!(stdout.read_line(&mut line).unwrap() > 0, "stdout ended");
            let message: serde_json::Value = serde_json::from_str(&line).unwrap();
            if message["id"] == id {
                break message["result"].clone();
            }
        };
        if method == "initialize" {
            let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
            writeln!(stdin, "{initialized}").unwrap();
        }
        result
    };
    exchange(
        0,
        "initialize",
        json!({"protocolVersion": "2025-06-18", "capabilities": {},
               "clientInfo": {"name": "promises", "version": "0"}}),
    );
    let results = (1..)
        .zip(calls)
        .map(|(id, call)| exchange(id, "tools/call", call.clone()))
        .collect();
    drop(stdin);
    let _ = child.wait();
    results
}

/// "An upstream that still needs a login is in state `auth_required` (meta mode's
/// `list-servers` shows it …) and the others serve meanwhile."
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_that_needs_a_login_is_auth_required_and_the_others_serve() {
    use mcp_testkit::fake_auth::{FakeAuth, FakeAuthOptions};
    use serde_json::json;
    let fake = FakeAuth::start(FakeAuthOptions::default()).await;
    let user = User::new();
    let file = user.project.path().join("gateway.json");
    let gateway = json!({"mode": "meta", "mcpServers": {
        "remote": {"type": "http", "url": fake.url().as_str()},
        "demo": {"command": bin(), "args": ["demo-server"], "permission": {"default": "allow"}},
    }});
    std::fs::write(&file, gateway.to_string()).unwrap();
    // The gateway serves before its upstreams settle: a call to `remote` waits for it
    // (`list-tools` answers that it is not ready), one to `demo` for it, then the states.
    let calls = [
        json!({"name": "list-tools", "arguments": {"server": "remote"}}),
        json!({"name": "call-tool", "arguments": {"server": "demo", "tool": "echo",
                                                  "arguments": {"text": "meanwhile"}}}),
        json!({"name": "list-servers", "arguments": {}}),
    ];
    let results = tokio::task::spawn_blocking(move || over_stdio(&user, &file, &calls))
        .await
        .unwrap();
    let servers = results[2]["structuredContent"]["servers"].clone();
    let state = |id: &str| {
        servers
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["id"] == id)
            .unwrap_or_else(|| panic!("{id} missing: {servers}"))["state"]
            .clone()
    };
    assert_eq!(state("remote"), "auth_required", "{servers}");
    assert_eq!(state("demo"), "ready", "{servers}");
    assert_eq!(
        results[1]["content"][0]["text"], "meanwhile",
        "{}",
        results[1]
    );
    assert_eq!(
        fake.seen_at("/authorize").len(),
        0,
        "no login by the gateway"
    );
}

/// "the address actually bound is printed on standard error as `listening on
/// http://ADDR/mcp`", also when the file's `logFile` takes the log (a launcher, such as the
/// interop leg's TypeScript client, reads the address there), and the log file has it too.
#[test]
fn the_address_is_on_standard_error_when_a_log_file_takes_the_log() {
    let user = User::new();
    let log = user.project.path().join("gateway.log");
    let file = user.project.path().join("logged.json");
    let gateway = serde_json::json!({"mode": "meta", "mcpServers": {}, "logFile": log});
    std::fs::write(&file, gateway.to_string()).unwrap();
    // `start_with` fails the test if stderr ends without the address.
    let serving = serving_with(&user, &file, &["--http", "127.0.0.1:0"], &[]);
    let logged = std::fs::read_to_string(&log).unwrap();
    assert!(
        logged.contains(&format!(
            "listening on http://127.0.0.1:{}/mcp",
            serving.port()
        )),
        "{logged}"
    );
}
