//! `mcp-host serve` answers at once whatever its upstreams do, and reloads its file on SIGHUP
//! and when the file changes, keeping its clients' sessions. Orders of events are asserted,
//! never times: the silent upstream (`sleep 120`) is still `connecting` when the answers come.

use std::io::{BufRead, Read as _, Write as _};
use std::time::Duration;

use mcp_protocol::schema::CallToolParams;
use mcp_protocol::{ClientConfig, RequestOptions};
use mcp_session::{Client, Incoming};
use serde_json::{Value, json};

use super::*;

/// The bundled demo server as an upstream entry.
fn demo() -> Value {
    json!({"command": bin(), "args": ["demo-server"], "permission": {"default": "allow"}})
}

/// A meta-mode gateway file with the demo server and one that never answers.
fn with_silent(dir: &Path) -> PathBuf {
    let file = json!({
        "mode": "meta",
        "mcpServers": {
            "silent": {"description": "never answers", "command": "sleep", "args": ["120"]},
            "demo": demo(),
        }
    });
    let path = dir.join("gateway.json");
    std::fs::write(&path, serde_json::to_vec_pretty(&file).unwrap()).unwrap();
    path
}

/// A client of the handshake era, which has a session to keep.
fn client_config() -> ClientConfig {
    let mut config = ClientConfig::new(mcp_protocol::schema::Implementation::new(
        "serve-live-test".into(),
        "0".into(),
    ));
    config.supported_versions = mcp_protocol::ProtocolVersion::HANDSHAKE.to_vec();
    config
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

/// The state `list-servers` shows for `id`, from its tool result.
fn listed_state(result: &Value, id: &str) -> String {
    let servers = &result["structuredContent"]["servers"];
    servers
        .as_array()
        .unwrap_or_else(|| panic!("no servers: {result}"))
        .iter()
        .find(|s| s["id"] == id)
        .unwrap_or_else(|| panic!("no {id}: {result}"))["state"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[test]
fn serve_over_stdio_answers_at_once_while_an_upstream_never_answers() {
    let user = User::new();
    let file = with_silent(user.project.path());
    let mut child = user
        .command(&["serve", "--gateway", file.to_str().unwrap()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    send(
        &mut stdin,
        &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "serve-live-test", "version": "0"}}}),
    );
    assert!(answer(&mut stdout, 1)["result"].is_object());
    send(
        &mut stdin,
        &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    );
    send(
        &mut stdin,
        &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "list-servers", "arguments": {}}}),
    );
    let listed = answer(&mut stdout, 2)["result"].clone();
    assert_eq!(listed_state(&listed, "silent"), "connecting", "{listed}");
    // A call to the demo server waits for it if it must, and gets through.
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
    send(
        &mut stdin,
        &json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {
            "name": "list-servers", "arguments": {}}}),
    );
    let listed = answer(&mut stdout, 4)["result"].clone();
    assert_eq!(listed_state(&listed, "demo"), "ready", "{listed}");
    assert_eq!(listed_state(&listed, "silent"), "connecting", "{listed}");
    drop(stdin);
    let mut rest = String::new();
    let _ = stdout.read_to_string(&mut rest);
    let _ = child.kill();
    let _ = child.wait();
    // The demo server's era is remembered where the rest of mcp-host remembers it, so the
    // next `serve` (or `status`) does not probe it again.
    let eras = std::fs::read_to_string(user.global_file().with_file_name("eras.json"))
        .expect("serve remembers its upstreams' eras in eras.json");
    assert!(
        eras.contains("\"demo\"") && eras.contains("\"handshake\""),
        "{eras}"
    );
}

/// A client of the gateway.
async fn connect(served: &Serving) -> Client {
    let config = mcp_http::HttpConfig::new("gateway", served.url());
    mcp_http::connect(config, client_config()).await.unwrap()
}

async fn call(client: &Client, name: &str, arguments: Value) -> Value {
    let mut params = CallToolParams::new(name.to_owned());
    params.arguments = arguments.as_object().cloned();
    let result = client
        .call_tool(params, RequestOptions::DEFAULT)
        .await
        .unwrap();
    serde_json::to_value(&result).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_over_http_listens_and_answers_at_once_while_an_upstream_never_answers() {
    let user = User::new();
    let file = with_silent(user.project.path());
    let (served, _user) = tokio::task::spawn_blocking(move || {
        let served = Serving::start(&user, &file);
        (served, user)
    })
    .await
    .unwrap();
    let client = connect(&served).await;
    let listed = call(&client, "list-servers", json!({})).await;
    assert_eq!(listed_state(&listed, "silent"), "connecting", "{listed}");
    let called = call(
        &client,
        "call-tool",
        json!({"server": "demo", "tool": "add", "arguments": {"a": 2, "b": 3}}),
    )
    .await;
    assert_eq!(called["structuredContent"]["sum"], 5.0, "{called}");
    let listed = call(&client, "list-servers", json!({})).await;
    assert_eq!(listed_state(&listed, "silent"), "connecting", "{listed}");
}

/// Writes a passthrough gateway file with `servers`, padded with spaces to `size` bytes, at
/// once (a new file renamed over the old), with the modification time `modified` if given.
fn write_padded(
    path: &Path,
    servers: &Value,
    size: usize,
    modified: Option<std::time::SystemTime>,
) {
    let file = json!({"mode": "passthrough", "mcpServers": servers});
    let mut bytes = serde_json::to_vec_pretty(&file).unwrap();
    assert!(bytes.len() <= size, "{} bytes", bytes.len());
    bytes.resize(size, b' ');
    let next = path.with_extension("next");
    std::fs::write(&next, &bytes).unwrap();
    if let Some(modified) = modified {
        std::fs::File::options()
            .write(true)
            .open(&next)
            .unwrap()
            .set_modified(modified)
            .unwrap();
    }
    std::fs::rename(&next, path).unwrap();
}

/// Lists the tools after each `tools/list_changed` until `done` holds for their names.
async fn list_until(
    client: &Client,
    rx: &mut tokio::sync::mpsc::Receiver<Incoming>,
    done: impl Fn(&[String]) -> bool,
) -> Vec<String> {
    let wait = async {
        loop {
            match rx.recv().await {
                Some(Incoming::Notification(n))
                    if n.method() == "notifications/tools/list_changed" =>
                {
                    let names: Vec<String> = client
                        .list_all_tools()
                        .await
                        .unwrap()
                        .into_iter()
                        .map(|t| t.name)
                        .collect();
                    if done(&names) {
                        return names;
                    }
                }
                Some(_) => {}
                None => panic!("the session ended"),
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(30), wait)
        .await
        .expect("the list did not change as expected within 30 s")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_reloads_its_file_on_sighup_and_when_it_changes_keeping_the_session() {
    let user = User::new();
    let path = user.project.path().join("gateway.json");
    write_padded(&path, &json!({"a": demo()}), 4096, None);
    let modified = std::fs::metadata(&path).unwrap().modified().unwrap();
    let file = path.clone();
    let (served, _user) = tokio::task::spawn_blocking(move || {
        let served = Serving::start(&user, &file);
        (served, user)
    })
    .await
    .unwrap();
    let client = connect(&served).await;
    let session = client.session_id();
    assert!(session.is_some());
    let mut incoming = client.take_incoming().unwrap();
    // The demo server may join after the client: wait for its tools.
    let mut tools: Vec<String> = Vec::new();
    while !tools.contains(&"echo".to_owned()) {
        tools = client
            .list_all_tools()
            .await
            .unwrap()
            .into_iter()
            .map(|t| t.name)
            .collect();
        if !tools.contains(&"echo".to_owned()) {
            list_until(&client, &mut incoming, |n| n.contains(&"echo".to_owned())).await;
        }
    }

    // SIGHUP: a file the poll cannot tell from the old one (same size, same time) is read.
    write_padded(
        &path,
        &json!({"a": demo(), "b": demo()}),
        4096,
        Some(modified),
    );
    let pid = nix::unistd::Pid::from_raw(served.child.id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGHUP).unwrap();
    let tools = list_until(&client, &mut incoming, |n| {
        n.contains(&"mcp__b__echo".to_owned())
    })
    .await;
    assert!(tools.contains(&"mcp__a__echo".to_owned()), "{tools:?}");
    assert_eq!(client.session_id(), session);

    // A change of the file: `a` removed, without a signal.
    write_padded(&path, &json!({"b": demo()}), 2048, None);
    let tools = list_until(&client, &mut incoming, |n| n.contains(&"echo".to_owned())).await;
    assert!(
        !tools.iter().any(|t| t.starts_with("mcp__a__")),
        "{tools:?}"
    );
    assert_eq!(client.session_id(), session);
    let echoed = call(&client, "echo", json!({"text": "still here"})).await;
    assert_eq!(echoed["content"][0]["text"], "still here", "{echoed}");
}

/// The demo server as upstream `id` of generation `generation`: its environment carries
/// `STORM=<tag>:<id>:<generation>`, by which [`storm_processes`] finds it; a new generation
/// is a changed entry (a restart).
fn storm_entry(tag: &str, id: &str, generation: u32) -> Value {
    let mut entry = demo();
    entry["env"] = json!({"STORM": format!("{tag}:{id}:{generation}")});
    entry
}

/// The `STORM` values of the live processes whose environment carries one of `tag`'s
/// (zombies, whose environment is gone, do not count), sorted.
fn storm_processes(tag: &str) -> Vec<String> {
    let mut found = Vec::new();
    let prefix = format!("STORM={tag}:");
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(environ) = std::fs::read(entry.path().join("environ")) else {
            continue;
        };
        for var in environ.split(|b| *b == 0) {
            if let Some(rest) = String::from_utf8_lossy(var).strip_prefix(&prefix) {
                found.push(rest.to_owned());
            }
        }
    }
    found.sort();
    found
}

/// Storms of reloads: the file rewritten 60 times in a row, each followed at once by SIGHUP
/// (while the gateway also polls the file), adding, removing and restarting upstreams with no
/// pause between, three times. After each, the gateway has the last file's upstream set and
/// nothing else: its client is told (a `tools/list_changed` after which the list is exactly
/// the last file's tools, a set no earlier file had), one process runs per upstream, of the
/// last generation, and none of the upstreams removed or replaced outlives the storm. Before,
/// a restart or a removal from an earlier reload could take effect after a later one's: 5 of
/// 30 runs failed, an upstream left on an old entry (`d:27` for `d:101`) or the last list
/// never announced; none of 30 since.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_storm_of_reloads_ends_with_the_last_files_upstreams_once_each() {
    let user = User::new();
    let tag = format!("{}", std::process::id()) + &user.project.path().display().to_string();
    let path = user.project.path().join("gateway.json");
    let write = |servers: Value| {
        let file = json!({"mode": "passthrough", "mcpServers": servers});
        let next = path.with_extension("next");
        std::fs::write(&next, serde_json::to_vec_pretty(&file).unwrap()).unwrap();
        std::fs::rename(&next, &path).unwrap();
    };
    write(json!({"a": storm_entry(&tag, "a", 0), "b": storm_entry(&tag, "b", 0)}));
    let file = path.clone();
    let (served, _user) = tokio::task::spawn_blocking(move || {
        let served = Serving::start(&user, &file);
        (served, user)
    })
    .await
    .unwrap();
    let client = connect(&served).await;
    let mut incoming = client.take_incoming().unwrap();
    let both = |n: &[String]| {
        n.contains(&"mcp__a__echo".to_owned()) && n.contains(&"mcp__b__echo".to_owned())
    };
    let mut tools: Vec<String> = Vec::new();
    while !both(&tools) {
        tools = client
            .list_all_tools()
            .await
            .unwrap()
            .into_iter()
            .map(|t| t.name)
            .collect();
        if !both(&tools) {
            tools = list_until(&client, &mut incoming, both).await;
        }
    }
    assert_eq!(storm_processes(&tag), vec!["a:0", "b:0"]);

    let pid = nix::unistd::Pid::from_raw(served.child.id() as i32);
    // The last file's set, `c` and `d`, is no earlier file's.
    let last = |n: &[String]| {
        n.iter()
            .all(|t| t.starts_with("mcp__c__") || t.starts_with("mcp__d__"))
            && n.contains(&"mcp__c__echo".to_owned())
            && n.contains(&"mcp__d__echo".to_owned())
    };
    for round in 1..=3u32 {
        for step in 1..=60u32 {
            let servers = match step % 4 {
                0 => json!({"a": storm_entry(&tag, "a", step), "b": storm_entry(&tag, "b", step)}),
                1 => {
                    json!({"a": storm_entry(&tag, "a", step - 1), "c": storm_entry(&tag, "c", step)})
                }
                2 => {
                    json!({"b": storm_entry(&tag, "b", step), "c": storm_entry(&tag, "c", step - 1)})
                }
                _ => json!({
                    "a": storm_entry(&tag, "a", step),
                    "b": storm_entry(&tag, "b", step - 1),
                    "d": storm_entry(&tag, "d", step),
                }),
            };
            write(servers);
            nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGHUP).unwrap();
        }
        let generation = 100 + round;
        write(json!({
            "c": storm_entry(&tag, "c", generation),
            "d": storm_entry(&tag, "d", generation),
        }));
        nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGHUP).unwrap();

        // The client is told of the last change: the list is then exactly the last file's.
        let tools = list_until(&client, &mut incoming, last).await;
        assert!(last(&tools), "round {round}: {tools:?}");
        // One process per upstream, of the last generation; the others stop within the
        // host's grace period (a stopped upstream is sent EOF, then SIGTERM, then SIGKILL).
        let wanted = [format!("c:{generation}"), format!("d:{generation}")];
        let settled = tokio::time::timeout(Duration::from_secs(20), async {
            while storm_processes(&tag) != wanted {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        })
        .await;
        assert!(
            settled.is_ok(),
            "round {round}: upstream processes after the storm: {:?}",
            storm_processes(&tag)
        );
    }
    let echoed = call(&client, "mcp__c__echo", json!({"text": "after the storm"})).await;
    assert_eq!(echoed["content"][0]["text"], "after the storm", "{echoed}");
    let tools: Vec<String> = client
        .list_all_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect();
    assert!(last(&tools), "{tools:?}");
}
