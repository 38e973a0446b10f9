//! `login --gateway FILE ID` and `logout --gateway FILE ID`: a gateway's OAuth-protected
//! upstream is logged in to from the command line (the test acting as the browser), and
//! `serve --gateway FILE`, which has no browser, then reaches its tools with the stored
//! tokens; after the logout it no longer does.

use std::io::{BufRead as _, Read as _, Write as _};

use mcp_testkit::fake_auth::{FakeAuth, FakeAuthOptions};
use serde_json::{Value, json};

use super::*;

/// A passthrough gateway file with one upstream, `remote`, at `url`.
fn gateway_file(u: &User, url: &str) -> PathBuf {
    let file = json!({
        "mcpServers": {
            "remote": {
                "description": "an OAuth-protected server",
                "type": "http",
                "url": url
            }
        }
    });
    let path = u.project.path().join("gateway.json");
    std::fs::write(&path, serde_json::to_vec_pretty(&file).unwrap()).unwrap();
    path
}

/// `login --gateway`, with the test as the browser: it opens the address the command prints
/// and follows the authorization server's redirect back to the command.
fn login(u: &User, file: &Path) -> Run {
    let mut child = u
        .command(&["login", "--gateway", file.to_str().unwrap(), "remote"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut said = String::new();
    let url = loop {
        let mut line = String::new();
        assert!(
            stderr.read_line(&mut line).unwrap() > 0,
            "no URL in {said:?}"
        );
        said.push_str(&line);
        if let Some(rest) = line.trim().strip_prefix("http") {
            break format!("http{rest}");
        }
    };
    let (status, callback, _) = browse(&url);
    assert_eq!(status, 302, "{url}");
    let (status, _, _) = browse(&callback.unwrap());
    assert_eq!(status, 200);
    stderr.read_to_string(&mut said).unwrap();
    let output = child.wait_with_output().unwrap();
    Run {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: said,
    }
}

/// Runs `serve --gateway FILE` over stdio as a client would: initialize, list the tools,
/// call `echo` if it is listed. Returns the tool names, the call's text and what the
/// gateway said on stderr.
fn serve(u: &User, file: &Path) -> (Vec<String>, Option<String>, String) {
    let mut child = u
        .command(&["serve", "--gateway", file.to_str().unwrap()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    // The gateway serves at once; its upstream joins when it has settled, which it logs.
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut said = String::new();
    while !said.contains("upstream remote: ") {
        assert!(stderr.read_line(&mut said).unwrap() > 0, "{said}");
    }
    let mut send = |message: Value| {
        let mut line = serde_json::to_vec(&message).unwrap();
        line.push(b'\n');
        stdin.write_all(&line).unwrap();
        stdin.flush().unwrap();
    };
    let mut answer = |id: u64| loop {
        let mut line = String::new();
        assert!(stdout.read_line(&mut line).unwrap() > 0, "stdout ended");
        let message: Value = serde_json::from_str(&line).unwrap();
        if message["id"] == id {
            return message;
        }
    };
    send(
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "gateway-login-test", "version": "0"}}}),
    );
    assert!(answer(1)["result"].is_object());
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}));
    let listed = answer(2);
    let tools: Vec<String> = listed["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("no tools array: {listed}"))
        .iter()
        .filter_map(|t| t["name"].as_str().map(str::to_owned))
        .collect();
    let echo = tools.iter().find(|t| t.ends_with("echo")).cloned();
    let called = echo.map(|name| {
        send(json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
            "params": {"name": name, "arguments": {}}}));
        answer(3)["result"].to_string()
    });
    drop(stdin);
    let _ = child.kill();
    let _ = child.wait();
    let _ = stderr.read_to_string(&mut said);
    (tools, called, said)
}

async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    tokio::task::spawn_blocking(f).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn login_gateway_lets_serve_reach_a_protected_upstream() {
    let fake = FakeAuth::start(FakeAuthOptions::default()).await;
    let u = std::sync::Arc::new(User::new());
    let file = gateway_file(&u, &fake.url());

    // The gateway has no browser: before a login, the upstream's tools are not served.
    let (before, _, said) = blocking({
        let (u, file) = (u.clone(), file.clone());
        move || serve(&u, &file)
    })
    .await;
    assert!(!before.iter().any(|t| t.ends_with("echo")), "{before:?}");
    let hint = format!(
        "log in with `mcp-host login --gateway {} remote`",
        file.display()
    );
    assert!(said.contains("upstream remote: auth_required"), "{said}");
    assert!(said.contains(&hint), "{said}");
    assert_eq!(fake.seen_at("/authorize").len(), 0);

    let r = blocking({
        let (u, file) = (u.clone(), file.clone());
        move || login(&u, &file)
    })
    .await;
    r.code(0).out_has("logged in to `remote`");
    let store = u.home.path().join(".config/mcp-host/mcp-auth.json");
    let stored: Value = serde_json::from_slice(&std::fs::read(&store).unwrap()).unwrap();
    assert_eq!(stored["servers"]["remote"]["url"], fake.url().as_str());

    // Now the gateway, with no browser, serves the upstream's tools and calls them.
    let authorized = fake.seen_at("/authorize").len();
    let (after, called, _) = blocking({
        let (u, file) = (u.clone(), file.clone());
        move || serve(&u, &file)
    })
    .await;
    assert!(after.iter().any(|t| t.ends_with("echo")), "{after:?}");
    let called = called.unwrap();
    assert!(called.contains("echoed"), "{called}");
    assert_eq!(
        fake.seen_at("/authorize").len(),
        authorized,
        "no login by the gateway"
    );

    // The logout forgets the upstream's tokens where the gateway reads them.
    let r = blocking({
        let (u, file) = (u.clone(), file.clone());
        move || u.run(&["logout", "--gateway", file.to_str().unwrap(), "remote"])
    })
    .await;
    r.code(0).out_has("logged out of `remote`");
    let stored: Value = serde_json::from_slice(&std::fs::read(&store).unwrap()).unwrap();
    assert!(stored["servers"].get("remote").is_none(), "{stored}");
    let (gone, _, _) = blocking({
        let (u, file) = (u.clone(), file.clone());
        move || serve(&u, &file)
    })
    .await;
    assert!(!gone.iter().any(|t| t.ends_with("echo")), "{gone:?}");
}

#[test]
fn login_gateway_names_the_upstreams_when_the_id_is_not_one() {
    let u = User::new();
    let file = gateway_file(&u, "http://127.0.0.1:9/mcp");
    for command in ["login", "logout"] {
        u.run(&[command, "--gateway", file.to_str().unwrap(), "nosuch"])
            .code(3)
            .err_has("has no upstream server `nosuch`")
            .err_has("its upstream servers: remote");
    }
    u.run(&["login", "--gateway", "/nonexistent/gateway.json", "remote"])
        .code(3)
        .err_has("/nonexistent/gateway.json");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn login_gateway_takes_the_device_flow_too() {
    let fake = FakeAuth::start(FakeAuthOptions {
        device: true,
        device_interval: 1,
        ..FakeAuthOptions::default()
    })
    .await;
    let u = std::sync::Arc::new(User::new());
    let file = gateway_file(&u, &fake.url());
    let r = blocking({
        let (u, file) = (u.clone(), file.clone());
        move || {
            let mut child = u
                .command(&[
                    "login",
                    "--gateway",
                    file.to_str().unwrap(),
                    "remote",
                    "--device",
                ])
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            let mut stderr = BufReader::new(child.stderr.take().unwrap());
            let mut said = String::new();
            let page = loop {
                let mut line = String::new();
                assert!(
                    stderr.read_line(&mut line).unwrap() > 0,
                    "no code shown in {said:?}"
                );
                said.push_str(&line);
                if let Some(rest) = line.trim().strip_prefix("or open ") {
                    break rest.split_whitespace().next().unwrap().to_owned();
                }
            };
            // The person approves on another device, the code filled in.
            assert_eq!(browse(&page).0, 200, "{page}");
            stderr.read_to_string(&mut said).unwrap();
            let output = child.wait_with_output().unwrap();
            Run {
                code: output.status.code().unwrap_or(-1),
                stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
                stderr: said,
            }
        }
    })
    .await;
    r.code(0).out_has("logged in to `remote`");
    assert_eq!(fake.seen_at("/authorize").len(), 0, "no browser login");
    assert!(fake.token_requests("urn:ietf:params:oauth:grant-type:device_code") >= 1);
    let (tools, called, _) = blocking({
        let (u, file) = (u.clone(), file.clone());
        move || serve(&u, &file)
    })
    .await;
    assert!(tools.iter().any(|t| t.ends_with("echo")), "{tools:?}");
    assert!(called.unwrap().contains("echoed"));
}
