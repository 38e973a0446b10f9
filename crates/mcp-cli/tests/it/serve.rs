//! `mcp-host serve`: the gateway over stdio and HTTP, as a client runs it.

use std::io::{BufRead, Read as _, Write as _};
use std::net::TcpStream;
use std::time::Duration;

use serde_json::{Value, json};

use super::*;

/// A meta-mode gateway file in front of the bundled demo server.
fn demo_gateway(dir: &Path) -> PathBuf {
    let file = json!({
        "mode": "meta",
        "mcpServers": {
            "demo": {
                "description": "the bundled demo server",
                "command": bin(),
                "args": ["demo-server"],
                "permission": {"default": "allow"}
            }
        }
    });
    let path = dir.join("gateway.json");
    std::fs::write(&path, serde_json::to_vec_pretty(&file).unwrap()).unwrap();
    path
}

/// Sends one JSON-RPC line.
fn send(stdin: &mut std::process::ChildStdin, message: &Value) {
    let mut line = serde_json::to_vec(message).unwrap();
    line.push(b'\n');
    stdin.write_all(&line).unwrap();
    stdin.flush().unwrap();
}

/// Reads stdout lines until the answer to `id`; every line must be a JSON-RPC message.
fn answer(stdout: &mut impl BufRead, id: u64) -> Value {
    loop {
        let mut line = String::new();
        assert!(stdout.read_line(&mut line).unwrap() > 0, "stdout ended");
        let message: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("stdout carries something else than MCP ({e}): {line:?}"));
        assert_eq!(message["jsonrpc"], "2.0", "{message}");
        if message["id"] == id {
            return message;
        }
    }
}

#[test]
fn serve_over_stdio_speaks_mcp_on_stdout_and_logs_on_stderr() {
    let user = User::new();
    let file = demo_gateway(user.project.path());
    let mut child = user
        .command(&["serve", "--gateway", file.to_str().unwrap()])
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
            "clientInfo": {"name": "serve-test", "version": "0"}}}),
    );
    let init = answer(&mut stdout, 1);
    assert_eq!(init["result"]["serverInfo"]["name"], "mcp-host-gateway");
    send(
        &mut stdin,
        &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    );
    send(
        &mut stdin,
        &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
    );
    let tools = answer(&mut stdout, 2);
    let names: Vec<&str> = tools["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"call-tool"), "{tools}");
    send(
        &mut stdin,
        &json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
            "name": "call-tool",
            "arguments": {"server": "demo", "tool": "echo", "arguments": {"text": "through"}}}}),
    );
    let called = answer(&mut stdout, 3);
    assert_eq!(
        called["result"]["content"][0]["text"], "through",
        "{called}"
    );
    // The client leaves: the gateway stops its upstream and exits.
    drop(stdin);
    let mut rest = String::new();
    stdout.read_to_string(&mut rest).unwrap();
    assert!(rest.trim().is_empty(), "more on stdout: {rest:?}");
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(0), "{stderr}");
    assert!(stderr.contains(" INFO mcp_gateway: "), "{stderr}");
    assert!(stderr.contains("call call-tool demo/echo"), "{stderr}");
}

/// The gateway over HTTP, with a bearer token from the variable `token_var` names.
fn http_gateway(user: &User, file: &Path, token_var: Option<(&str, &str)>) -> Serving {
    let mut args = vec![
        "serve",
        "--gateway",
        file.to_str().unwrap(),
        "--http",
        "127.0.0.1:0",
    ];
    let mut cmd = match token_var {
        Some((var, value)) => {
            args.extend(["--bearer-token-env", var]);
            let mut cmd = user.command(&args);
            cmd.env(var, value);
            cmd
        }
        None => user.command(&args),
    };
    Serving::spawn(&mut cmd)
}

impl Serving {
    /// A raw `initialize` POST: the status line's code.
    fn post_status(&self, authorization: Option<&str>) -> u16 {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"}}})
        .to_string();
        let mut stream = TcpStream::connect(&self.addr).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let auth = authorization
            .map(|a| format!("Authorization: {a}\r\n"))
            .unwrap_or_default();
        write!(
            stream,
            "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n{auth}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            self.addr,
            body.len()
        )
        .unwrap();
        let mut head = [0u8; 12];
        stream.read_exact(&mut head).unwrap();
        String::from_utf8_lossy(&head[9..12]).parse().unwrap()
    }
}

fn client_config() -> mcp_protocol::ClientConfig {
    mcp_protocol::ClientConfig::new(mcp_protocol::schema::Implementation::new(
        "serve-test".into(),
        "0".into(),
    ))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_over_http_answers_our_client() {
    let user = User::new();
    let file = demo_gateway(user.project.path());
    let gateway = tokio::task::spawn_blocking(move || {
        let g = http_gateway(&user, &file, None);
        (g, user)
    })
    .await
    .unwrap();
    let url = format!("http://{}/mcp", gateway.0.addr);
    let client = mcp_http::connect(mcp_http::HttpConfig::new("gateway", url), client_config())
        .await
        .unwrap();
    let tools = client.list_all_tools().await.unwrap();
    assert_eq!(tools.len(), 6, "{tools:?}");
    let mut params = mcp_protocol::schema::CallToolParams::new("call-tool".into());
    params.arguments = json!({"server": "demo", "tool": "add", "arguments": {"a": 2, "b": 3}})
        .as_object()
        .cloned();
    let result = client
        .call_tool(params, mcp_protocol::RequestOptions::DEFAULT)
        .await
        .unwrap();
    let result = serde_json::to_value(&result).unwrap();
    assert_eq!(result["structuredContent"]["sum"], 5.0, "{result}");
}

#[test]
fn serve_over_http_with_a_bearer_token_refuses_requests_without_it() {
    let user = User::new();
    let file = demo_gateway(user.project.path());
    let gateway = http_gateway(&user, &file, Some(("GATEWAY_TOKEN", "s3cret-token")));
    assert_eq!(gateway.post_status(None), 401);
    assert_eq!(gateway.post_status(Some("Bearer wrong")), 401);
    assert_eq!(gateway.post_status(Some("Bearer s3cret-token")), 200);
    let stderr = gateway.stop();
    assert!(stderr.contains("listening on"), "{stderr}");
    // Said once: the file names no logFile, so the log is standard error too, and the line
    // a launcher waits for is not written there twice.
    assert_eq!(stderr.matches("listening on").count(), 1, "{stderr}");
    assert!(
        !stderr.contains("s3cret-token"),
        "the token was logged: {stderr}"
    );
}

#[test]
fn serve_without_the_bearer_token_variable_is_a_usage_error() {
    let user = User::new();
    let file = demo_gateway(user.project.path());
    let run = user.run(&[
        "serve",
        "--gateway",
        file.to_str().unwrap(),
        "--http",
        "127.0.0.1:0",
        "--bearer-token-env",
        "NOT_SET_ANYWHERE",
    ]);
    assert_ne!(run.code, 0, "{run:#?}");
    run.err_has("NOT_SET_ANYWHERE");
    assert!(run.stdout.is_empty(), "{run:#?}");
}

#[test]
fn a_bad_gateway_file_names_the_file_and_the_field() {
    let user = User::new();
    let path = user.project.path().join("bad-gateway.json");
    std::fs::write(
        &path,
        json!({
            "mcpServers": {"demo": {"command": bin(), "args": ["demo-server"]}},
            "categories": {"fs": {"description": "files", "server": "nope"}}
        })
        .to_string(),
    )
    .unwrap();
    let run = user.run(&["serve", "--gateway", path.to_str().unwrap()]);
    run.code(3)
        .err_has("bad-gateway.json")
        .err_has("categories.fs");
    assert!(run.stdout.is_empty(), "{run:#?}");

    std::fs::write(&path, r#"{"mcpServers": {}, "mdoe": "meta"}"#).unwrap();
    user.run(&["serve", "--gateway", path.to_str().unwrap()])
        .code(3)
        .err_has("bad-gateway.json")
        .err_has("mdoe");

    let missing = user.project.path().join("missing.json");
    user.run(&["serve", "--gateway", missing.to_str().unwrap()])
        .code(3)
        .err_has("missing.json");
}

#[test]
fn gateway_schema_prints_the_committed_schema() {
    let user = User::new();
    let run = user.run(&["gateway", "schema"]);
    run.code(0);
    let committed: Value = serde_json::from_str(
        &std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../docs/gateway.schema.json"
        ))
        .unwrap(),
    )
    .unwrap();
    assert_eq!(run.json(), committed);
}

#[test]
fn serve_over_http_without_a_token_is_refused_off_loopback_and_warned_about_on_it() {
    let user = User::new();
    let file = demo_gateway(user.project.path());
    let run = user.run(&[
        "serve",
        "--gateway",
        file.to_str().unwrap(),
        "--http",
        "0.0.0.0:0",
    ]);
    assert_ne!(run.code, 0, "{run:#?}");
    run.err_has("not a loopback address");
    run.err_has("--allow-unauthenticated");

    let gateway = http_gateway(&user, &file, None);
    assert_eq!(gateway.post_status(None), 200);
    let stderr = gateway.stop();
    assert!(stderr.contains("listening on"), "{stderr}");
    assert!(
        stderr.contains("without authentication"),
        "no warning: {stderr}"
    );
}

/// The gateway out of file descriptors (its limit lowered with util-linux's `prlimit` while it
/// runs, then more connections opened than it can accept) keeps running, and answers once
/// they are closed: a failed `accept()` is retried, never the end of the server.
#[cfg(target_os = "linux")]
#[test]
fn serve_over_http_outlives_running_out_of_file_descriptors() {
    const LIMIT: usize = 64;
    let user = User::new();
    let file = demo_gateway(user.project.path());
    let mut gateway = http_gateway(&user, &file, None);
    let pid = gateway.child.id();
    let limited = Command::new("prlimit")
        .args([format!("--pid={pid}"), format!("--nofile={LIMIT}:{LIMIT}")])
        .status()
        .expect("prlimit (util-linux) runs");
    assert!(limited.success());

    let fds = || std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, Iterator::count);
    let held: Vec<TcpStream> = (0..2 * LIMIT)
        .map(|_| TcpStream::connect(&gateway.addr).unwrap())
        .collect();
    // Wait (counting) until the gateway holds every descriptor it may: its accept() fails.
    let mut full = false;
    for _ in 0..250 {
        assert!(
            gateway.child.try_wait().unwrap().is_none(),
            "the gateway exited when it ran out of file descriptors"
        );
        if fds() >= LIMIT {
            full = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(full, "the gateway never ran out: {} descriptors", fds());
    // Several rounds of failed accept() and back-off.
    std::thread::sleep(Duration::from_millis(500));
    assert!(
        gateway.child.try_wait().unwrap().is_none(),
        "the gateway exited when it ran out of file descriptors"
    );

    drop(held);
    let mut status = 0;
    for _ in 0..50 {
        status = gateway.post_status(None);
        if status == 200 {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(status, 200);
    let stderr = gateway.stop();
    assert!(stderr.contains("listening on"), "{stderr}");
}
