//! The gateway serves at once, whatever its upstreams do, and its upstream set changes while
//! it serves (a reload of the file): upstreams join and leave, clients keep their sessions
//! and are told with `list_changed`. Orders of events are asserted, never times: an upstream
//! that must still be connecting is held at a gate (a FIFO its shell reads before it becomes
//! the fake server) or never answers (`sleep 120`).

use std::path::{Path, PathBuf};
use std::time::Duration;

use mcp_gateway::Gateway;
use mcp_host::ServerState;
use mcp_protocol::schema::Tool;
use mcp_session::{Client, Incoming};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::support::{
    TempDir, call, load_and_start, over_http, over_pipe, plain_client, start_now, text,
};

/// The fake stdio server as an upstream entry.
fn fake() -> Value {
    json!({
        "command": mcp_testkit::fake_server().display().to_string(),
        "permission": {"default": "allow"},
    })
}

/// An upstream that never answers anything.
fn silent() -> Value {
    json!({"command": "sleep", "args": ["120"]})
}

/// The fake server behind a gate: its shell waits for a line on a FIFO in `dir` before it
/// becomes the fake, so the upstream is `connecting` until [`open`] is called with the FIFO.
fn gated(dir: &Path, name: &str) -> (Value, PathBuf) {
    let fifo = dir.join(format!("{name}.gate"));
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let script = format!(
        "read _ < '{}'; exec '{}'",
        fifo.display(),
        mcp_testkit::fake_server().display()
    );
    let entry = json!({
        "command": "/bin/sh",
        "args": ["-c", script],
        "permission": {"default": "allow"},
    });
    (entry, fifo)
}

/// Opens a gate made by [`gated`].
async fn open(fifo: PathBuf) {
    tokio::task::spawn_blocking(move || std::fs::write(fifo, "go\n").unwrap())
        .await
        .unwrap();
}

/// Writes a passthrough gateway file with `servers` in `dir`; returns its path.
fn write_file(dir: &Path, servers: &Value) -> PathBuf {
    let path = dir.join("gateway.json");
    let file = json!({
        "mode": "passthrough",
        "mcpServers": servers,
        "logFile": dir.join("gateway.log"),
    });
    replace(&path, &serde_json::to_vec_pretty(&file).unwrap());
    path
}

/// Replaces the file at `path` with `bytes` at once, as editors do, so that the gateway never
/// reads it half written.
fn replace(path: &Path, bytes: &[u8]) {
    let next = path.with_extension("next");
    std::fs::write(&next, bytes).unwrap();
    std::fs::rename(&next, path).unwrap();
}

fn state(gateway: &Gateway, id: &str) -> ServerState {
    gateway.host().server_status(id).unwrap().state
}

fn names(tools: &[Tool]) -> Vec<String> {
    tools.iter().map(|t| t.name.clone()).collect()
}

/// Waits for the next `notifications/tools/list_changed`, skipping everything else.
async fn list_changed(rx: &mut mpsc::Receiver<Incoming>) {
    let wait = async {
        loop {
            match rx.recv().await {
                Some(Incoming::Notification(n))
                    if n.method() == "notifications/tools/list_changed" =>
                {
                    return;
                }
                Some(_) => {}
                None => panic!("the session ended before tools/list_changed"),
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(20), wait)
        .await
        .expect("no tools/list_changed within 20 s");
}

/// Lists the tools after each `list_changed` until `done` holds for them.
async fn list_until(
    client: &Client,
    rx: &mut mpsc::Receiver<Incoming>,
    done: impl Fn(&[String]) -> bool,
) -> Vec<String> {
    loop {
        list_changed(rx).await;
        let now = names(&client.list_all_tools().await.unwrap());
        if done(&now) {
            return now;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn initialize_and_tools_list_are_answered_while_an_upstream_never_answers() {
    for over in ["pipe", "http"] {
        let dir = TempDir::new(&format!("live-start-{over}"));
        let (good, gate) = gated(dir.path(), "good");
        let path = write_file(dir.path(), &json!({"silent": silent(), "good": good}));
        let gateway = start_now(&path).await;
        let client = match over {
            "pipe" => over_pipe(&gateway, plain_client("live")).await,
            _ => over_http(&gateway, plain_client("live")).await,
        };
        // `initialize` was answered while neither upstream had settled, declaring all that
        // passthrough relays, since what the upstreams offer is not known yet.
        assert_eq!(state(&gateway, "silent"), ServerState::Connecting, "{over}");
        assert_eq!(state(&gateway, "good"), ServerState::Connecting, "{over}");
        let caps = &client.server_info().capabilities;
        assert!(
            caps.logging.is_some() && caps.completions.is_some(),
            "{over}: {caps:?}"
        );
        assert_eq!(
            caps.resources.as_ref().and_then(|r| r.subscribe),
            Some(true),
            "{over}"
        );
        let mut incoming = client.take_incoming().unwrap();
        let before = client.list_all_tools().await.unwrap();
        assert!(before.is_empty(), "{over}: {before:?}");
        assert_eq!(state(&gateway, "good"), ServerState::Connecting, "{over}");
        // The good upstream joins; the client is told, and sees its tools.
        open(gate).await;
        let after = list_until(&client, &mut incoming, |n| {
            n.iter().any(|t| t == "mcp__good__echo")
        })
        .await;
        assert!(
            !after.iter().any(|t| t.starts_with("mcp__silent__")),
            "{after:?}"
        );
        assert_eq!(state(&gateway, "good"), ServerState::Ready, "{over}");
        assert_eq!(state(&gateway, "silent"), ServerState::Connecting, "{over}");
        // A call reaches the good upstream while the silent one still connects.
        let echoed = call(&client, "mcp__good__echo", json!({"message": "hi"})).await;
        assert_ne!(echoed.is_error, Some(true), "{over}: {echoed:?}");
        assert_eq!(state(&gateway, "silent"), ServerState::Connecting, "{over}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_to_an_upstream_still_connecting_waits_for_it() {
    let dir = TempDir::new("live-wait");
    let (good, gate) = gated(dir.path(), "good");
    let path = write_file(dir.path(), &json!({"good": good}));
    let gateway = start_now(&path).await;
    let client = over_pipe(&gateway, plain_client("live")).await;
    let calling = {
        let client = client.clone();
        tokio::spawn(async move { call(&client, "echo", json!({"message": "waited"})).await })
    };
    assert_eq!(state(&gateway, "good"), ServerState::Connecting);
    open(gate).await;
    let result = calling.await.unwrap();
    assert_ne!(result.is_error, Some(true), "{result:?}");
    assert!(text(&result).contains("waited"), "{result:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_to_an_upstream_that_does_not_come_up_names_it_and_its_state() {
    let dir = TempDir::new("live-down");
    let mut quiet = silent();
    quiet["request_timeout_ms"] = json!(300);
    let path = write_file(dir.path(), &json!({"silent": quiet, "good": fake()}));
    let gateway = start_now(&path).await;
    let client = over_pipe(&gateway, plain_client("live")).await;
    let result = call(&client, "mcp__silent__echo", json!({})).await;
    assert_eq!(result.is_error, Some(true), "{result:?}");
    let said = text(&result);
    assert!(
        said.contains("server `silent` is not ready (state "),
        "{said}"
    );
}

/// Reads the gateway's log until it holds `count` lines containing `what`.
async fn logged(dir: &Path, what: &str, count: usize) -> String {
    let log = dir.join("gateway.log");
    for _ in 0..500 {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        if text.matches(what).count() >= count {
            return text;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!(
        "{what:?} not logged {count} time(s): {}",
        std::fs::read_to_string(&log).unwrap_or_default()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_changed_file_is_applied_without_dropping_a_client_and_a_broken_one_is_not() {
    let dir = TempDir::new("live-reload");
    let path = write_file(dir.path(), &json!({"a": fake()}));
    let gateway = load_and_start(&path).await;
    gateway.watch_file(Duration::from_millis(20));
    let client = over_http(&gateway, plain_client("live")).await;
    let session = client.session_id();
    assert!(session.is_some());
    let mut incoming = client.take_incoming().unwrap();
    assert!(names(&client.list_all_tools().await.unwrap()).contains(&"echo".to_owned()));
    let a_since = gateway.host().server_status("a").unwrap().last_connected_at;
    assert!(a_since.is_some());

    // Added: `b` is started and its tools reach the client, whose session is the same.
    write_file(dir.path(), &json!({"a": fake(), "b": fake()}));
    let tools = list_until(&client, &mut incoming, |n| {
        n.iter().any(|t| t == "mcp__b__echo")
    })
    .await;
    assert!(tools.contains(&"mcp__a__echo".to_owned()), "{tools:?}");
    assert_eq!(client.session_id(), session);
    // Unchanged: `a` was left alone.
    assert_eq!(
        gateway.host().server_status("a").unwrap().last_connected_at,
        a_since
    );
    logged(dir.path(), "1 added, 0 removed, 0 changed", 1).await;

    // Changed: `b` is restarted with its new entry, `a` is still left alone.
    let b_since = gateway.host().server_status("b").unwrap().last_connected_at;
    let mut b_changed = fake();
    b_changed["description"] = json!("changed");
    write_file(dir.path(), &json!({"a": fake(), "b": b_changed}));
    logged(dir.path(), "0 added, 0 removed, 1 changed", 1).await;
    let mut restarted = false;
    for _ in 0..500 {
        let b = gateway.host().server_status("b").unwrap();
        if b.state == ServerState::Ready && b.last_connected_at != b_since {
            restarted = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(restarted, "b was not restarted");
    assert_eq!(
        gateway.host().server_status("a").unwrap().last_connected_at,
        a_since
    );

    // Broken, as JSON and by a value: each is logged with the file and why, and the tools
    // stay.
    replace(&path, b"{\"mcpServers\": ");
    logged(dir.path(), "reload failed", 1).await;
    let file = json!({"mode": "sideways", "mcpServers": {"a": fake()}});
    replace(&path, &serde_json::to_vec(&file).unwrap());
    let log = logged(dir.path(), "reload failed", 2).await;
    let failures: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("reload failed"))
        .collect();
    for line in &failures {
        assert!(line.contains(&path.display().to_string()), "{line}");
    }
    assert!(failures[1].contains("sideways"), "{}", failures[1]);
    let kept = names(&client.list_all_tools().await.unwrap());
    assert!(kept.contains(&"mcp__a__echo".to_owned()), "{kept:?}");
    assert!(kept.contains(&"mcp__b__echo".to_owned()), "{kept:?}");
    assert!(gateway.host().server_status("b").is_some());

    // Removed: `a` is stopped, its tools leave the list, the names lose their prefix.
    // `b` keeps its entry, so it is left running and the call below reaches it at once.
    write_file(dir.path(), &json!({"b": b_changed}));
    let tools = list_until(&client, &mut incoming, |n| n.iter().any(|t| t == "echo")).await;
    assert!(
        !tools.iter().any(|t| t.starts_with("mcp__a__")),
        "{tools:?}"
    );
    assert!(gateway.host().server_status("a").is_none());
    assert_eq!(client.session_id(), session);
    assert_eq!(
        text(&call(&client, "echo", json!({"message": "still here"})).await),
        "still here"
    );
}

/// Meta mode while an upstream is still connecting: `list-servers` answers at once and shows
/// it `connecting` with no tools (the other one `ready`), and a `call-tool` for it waits until
/// it is ready and is answered; `list-servers` then shows it `ready` with its tools.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn meta_mode_shows_an_upstream_still_connecting_and_a_call_waits_for_it() {
    let dir = TempDir::new("live-meta-connecting");
    let (slow, gate) = gated(dir.path(), "slow");
    let path = dir.path().join("gateway.json");
    let file = json!({
        "mode": "meta",
        "mcpServers": {"fast": fake(), "slow": slow},
        "logFile": dir.path().join("gateway.log"),
    });
    replace(&path, &serde_json::to_vec_pretty(&file).unwrap());
    let gateway = start_now(&path).await;
    let client = over_pipe(&gateway, plain_client("live")).await;
    let servers = |result: &mcp_protocol::schema::CallToolResult| -> Vec<Value> {
        assert_ne!(result.is_error, Some(true), "{result:?}");
        let value = result.structured_content.clone().unwrap();
        value["servers"].as_array().cloned().unwrap()
    };
    let find = |servers: &[Value], id: &str| -> Value {
        servers
            .iter()
            .find(|s| s["id"] == id)
            .cloned()
            .unwrap_or_else(|| panic!("no `{id}` in {servers:?}"))
    };
    // `fast` settles on its own; `slow` is held at its gate until it is opened.
    let ready = tokio::time::timeout(Duration::from_secs(20), async {
        while state(&gateway, "fast") != ServerState::Ready {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    assert!(ready.is_ok(), "`fast` never became ready");
    let listed = servers(&call(&client, "list-servers", json!({})).await);
    assert_eq!(find(&listed, "fast")["state"], "ready", "{listed:?}");
    let slow = find(&listed, "slow");
    assert_eq!(slow["state"], "connecting", "{listed:?}");
    assert_eq!(slow["tools"], 0, "{listed:?}");
    assert_eq!(slow["lastError"], Value::Null, "{listed:?}");
    assert_eq!(state(&gateway, "slow"), ServerState::Connecting);

    let calling = {
        let client = client.clone();
        tokio::spawn(async move {
            call(
                &client,
                "call-tool",
                json!({"server": "slow", "tool": "echo", "arguments": {"message": "waited"}}),
            )
            .await
        })
    };
    open(gate).await;
    let result = calling.await.unwrap();
    assert_ne!(result.is_error, Some(true), "{result:?}");
    assert!(text(&result).contains("waited"), "{result:?}");
    let listed = servers(&call(&client, "list-servers", json!({})).await);
    let slow = find(&listed, "slow");
    assert_eq!(slow["state"], "ready", "{listed:?}");
    assert!(slow["tools"].as_u64().unwrap() > 0, "{listed:?}");
    gateway.shutdown().await;
}
