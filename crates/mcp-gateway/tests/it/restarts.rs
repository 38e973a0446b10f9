//! Nothing is lost while an upstream restarts: a call that arrives while the host's supervisor
//! brings a lost upstream back, or while a reload restarts it, waits for it (up to its
//! request timeout) as a call for an upstream still connecting does, then is answered, or
//! told which upstream is not ready, in which state, and why. The moments are found by
//! watching the host's state, never by sleeping.

use std::path::{Path, PathBuf};
use std::time::Duration;

use mcp_gateway::Gateway;
use mcp_host::{HostEvent, ServerState};
use mcp_protocol::RequestOptions;
use mcp_protocol::schema::CallToolParams;
use mcp_session::Client;
use serde_json::{Value, json};

use crate::support::{TempDir, call, load_and_start, over_pipe, plain_client, text};

/// A passthrough gateway file with `servers` in `dir`; returns its path.
fn write_file(dir: &Path, servers: &Value) -> PathBuf {
    let path = dir.join("gateway.json");
    let file = json!({
        "mode": "passthrough",
        "mcpServers": servers,
        "logFile": dir.join("gateway.log"),
    });
    let next = path.with_extension("next");
    std::fs::write(&next, serde_json::to_vec_pretty(&file).unwrap()).unwrap();
    std::fs::rename(&next, &path).unwrap();
    path
}

/// The fake server as an upstream entry that, once started again after its first run, runs
/// with `again` (flags of the fake server): a marker file in `dir` tells the runs apart.
fn restarting(dir: &Path, again: &str) -> Value {
    let marker = dir.join("started-once");
    let fake = mcp_testkit::fake_server().display().to_string();
    let script = format!(
        "if [ -e '{m}' ]; then exec '{fake}' {again}; else : > '{m}'; exec '{fake}'; fi",
        m = marker.display()
    );
    json!({
        "command": "/bin/sh",
        "args": ["-c", script],
        "permission": {"default": "allow"},
    })
}

/// Kills the upstream `id` through its `crash` tool (`name` as the client calls it) and waits
/// until the host has seen it lost: it is in `error`, its tools out of the catalogue, and the
/// supervisor about to start it again.
async fn crash(gateway: &Gateway, client: &Client, id: &str, name: &str) {
    let mut events = gateway.host().subscribe(Some(&[id]), Some(&["state"]));
    // In flight on the upstream that dies: its failure is the one expected.
    let _ = client
        .call_tool(
            CallToolParams::new(name.to_owned()),
            RequestOptions::DEFAULT,
        )
        .await;
    let lost = tokio::time::timeout(Duration::from_secs(20), async {
        while let Some(event) = events.recv().await {
            if let HostEvent::State {
                state: ServerState::Error,
                ..
            } = event
            {
                return;
            }
        }
    })
    .await;
    assert!(lost.is_ok(), "the host never saw `{id}` lost");
    let status = gateway.host().server_status(id).unwrap();
    assert_eq!(status.state, ServerState::Error, "{status:?}");
    assert!(status.reconnect_at.is_some(), "{status:?}");
}

/// A call made while the host's supervisor restarts a killed upstream (it is in `error`,
/// waiting for its next attempt, its tools out of the catalogue) waits for it and is answered.
/// Before, passthrough looked only for upstreams in `connecting`, and the call failed at once
/// with `Unknown tool: echo`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_while_a_killed_upstream_restarts_waits_and_is_answered() {
    let dir = TempDir::new("restart-call");
    let path = write_file(dir.path(), &json!({"fake": restarting(dir.path(), "")}));
    let gateway = load_and_start(&path).await;
    let client = over_pipe(&gateway, plain_client("restarts")).await;
    let before = call(&client, "echo", json!({"message": "before"})).await;
    assert!(text(&before).contains("before"), "{before:?}");

    crash(&gateway, &client, "fake", "crash").await;
    assert!(
        gateway
            .host()
            .catalog()
            .server_tools("fake")
            .next()
            .is_none(),
        "the lost upstream's tools are out of the catalogue"
    );
    let during = call(&client, "echo", json!({"message": "during"})).await;
    assert_ne!(during.is_error, Some(true), "{during:?}");
    assert!(text(&during).contains("during"), "{during:?}");
    assert_eq!(
        gateway.host().server_status("fake").unwrap().state,
        ServerState::Ready
    );
    // Each call's log line names the client's session (the gateway's own) and the server.
    let log = std::fs::read_to_string(dir.path().join("gateway.log")).unwrap();
    let calls: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("mcp_gateway: call echo fake/echo "))
        .collect();
    assert_eq!(calls.len(), 2, "{log}");
    for line in calls {
        assert!(
            line.contains(" ms ok session=session-") && line.ends_with(" server=fake"),
            "{line}"
        );
    }
    gateway.shutdown().await;
}

/// A killed upstream that does not come back within its request timeout (its second run
/// never answers `initialize`): the call made meanwhile waits, then is told which upstream is
/// not ready, in which state, and why, instead of `Unknown tool`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_while_a_killed_upstream_fails_to_restart_names_it_its_state_and_why() {
    let dir = TempDir::new("restart-down");
    let mut entry = restarting(dir.path(), "--hang-initialize");
    entry["request_timeout_ms"] = json!(500);
    let path = write_file(dir.path(), &json!({"fake": entry}));
    let gateway = load_and_start(&path).await;
    let client = over_pipe(&gateway, plain_client("restarts")).await;
    crash(&gateway, &client, "fake", "crash").await;
    let result = call(&client, "echo", json!({"message": "during"})).await;
    assert_eq!(result.is_error, Some(true), "{result:?}");
    let said = text(&result);
    assert!(said.starts_with("UpstreamUnavailable: "), "{said}");
    assert!(
        said.contains("server `fake` is not ready (state "),
        "{said}"
    );
    // Why: the connection lost, or the attempt that followed timing out.
    assert!(
        said.contains("connection lost") || said.contains("timed out"),
        "{said}"
    );
    gateway.shutdown().await;
}

/// A call resolved from the catalogue to an upstream that a reload is restarting (its new
/// entry listed as `connecting` while the old process is still being stopped, its tools still
/// listed) waits for it and is answered. Before, it failed at once with
/// ``UpstreamUnavailable: server `b` is not ready (state connecting)``.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_resolved_to_an_upstream_a_reload_restarts_waits_and_is_answered() {
    let dir = TempDir::new("restart-reload");
    let fake = mcp_testkit::fake_server().display().to_string();
    // It outlives the end of its stdin: stopping the old process takes the host's grace
    // period, the window this test calls in.
    let entry = |env: &str| {
        json!({
            "command": fake,
            "args": ["--ignore-stdin-close"],
            "env": {"RUN": env},
            "permission": {"default": "allow"},
        })
    };
    let path = write_file(dir.path(), &json!({"b": entry("1")}));
    let gateway = load_and_start(&path).await;
    let client = over_pipe(&gateway, plain_client("restarts")).await;
    write_file(dir.path(), &json!({"b": entry("2")}));
    let reloading = {
        let gateway = gateway.clone();
        tokio::spawn(async move { gateway.reload().await })
    };
    let window = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            let status = gateway.host().server_status("b").unwrap();
            if status.state == ServerState::Connecting {
                return;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await;
    assert!(window.is_ok(), "the reload never restarted `b`");
    assert!(
        gateway.host().catalog().server_tools("b").next().is_some(),
        "the restarting upstream's tools are still listed"
    );
    let during = call(&client, "echo", json!({"message": "during"})).await;
    assert_ne!(during.is_error, Some(true), "{during:?}");
    assert!(text(&during).contains("during"), "{during:?}");
    let reloaded = reloading.await.unwrap();
    assert!(reloaded.is_ok(), "{reloaded:?}");
    gateway.shutdown().await;
}
