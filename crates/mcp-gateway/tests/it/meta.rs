//! The gateway's meta mode: the gateway in process in front of the testkit's fake server,
//! talked to by our own client over a pipe (as over stdio) and over Streamable HTTP.

use std::path::{Path, PathBuf};

use mcp_gateway::Gateway;
use mcp_protocol::schema::CallToolResult;
use mcp_session::Client;
use serde_json::{Value, json};

use crate::support::{TempDir, call, load_and_start as start, plain_client, text};

async fn over_pipe(gateway: &Gateway) -> Client {
    crate::support::over_pipe(gateway, plain_client("meta-test")).await
}

async fn over_http(gateway: &Gateway) -> Client {
    crate::support::over_http(gateway, plain_client("meta-test")).await
}

/// The fake server as an upstream entry, with `extra` fields merged in.
fn fake(description: &str, extra: Value) -> Value {
    let mut entry = json!({
        "description": description,
        "command": mcp_testkit::fake_server().display().to_string(),
        "permission": {"default": "allow"},
    });
    if let (Some(entry), Value::Object(extra)) = (entry.as_object_mut(), extra) {
        entry.extend(extra);
    }
    entry
}

/// A meta-mode gateway file with these servers (and top-level `extra` fields).
fn write_file(dir: &Path, servers: Value, extra: Value) -> PathBuf {
    let mut file = json!({
        "mode": "meta",
        "mcpServers": servers,
        "logFile": dir.join("gateway.log"),
    });
    if let (Some(file), Value::Object(extra)) = (file.as_object_mut(), extra) {
        file.extend(extra);
    }
    let path = dir.join("gateway.json");
    std::fs::write(&path, serde_json::to_vec_pretty(&file).unwrap()).unwrap();
    path
}

#[track_caller]
fn assert_error(result: &CallToolResult, kind: &str) {
    assert_eq!(result.is_error, Some(true), "not an error: {result:?}");
    assert!(
        text(result).starts_with(&format!("{kind}: ")),
        "expected {kind}: {result:?}"
    );
}

/// A meta tool's JSON answer: its structured content, which its one text block repeats for
/// clients that read only text.
#[track_caller]
fn structured(result: &CallToolResult) -> Value {
    assert_ne!(result.is_error, Some(true), "{result:?}");
    let value = result.structured_content.clone().unwrap();
    assert!(value.is_object(), "{value}");
    assert_eq!(result.content.len(), 1, "{result:?}");
    let as_text: Value = serde_json::from_str(&text(result))
        .unwrap_or_else(|e| panic!("the text is not JSON: {e}: {result:?}"));
    assert_eq!(as_text, value);
    value
}

/// The keys of a JSON object, sorted.
#[track_caller]
fn keys(value: &Value) -> Vec<&str> {
    let mut keys: Vec<&str> = value
        .as_object()
        .unwrap_or_else(|| panic!("not an object: {value}"))
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort_unstable();
    keys
}

/// The argument `call-tool` passes to the fake's `echo`: what the log must not show.
const ECHOED: &str = "an-argument-for-echo-5f2c";

/// Every meta tool, through `client`.
async fn exercise(client: &Client) {
    let tools = client.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "list-servers",
            "list-tools",
            "call-tool",
            "list-resources",
            "read-resource",
            "reload-config"
        ]
    );

    // `list-servers`: every server, each with the fields it promises.
    let servers = structured(&call(client, "list-servers", json!({})).await);
    assert_eq!(keys(&servers), ["servers"], "{servers}");
    let servers = servers["servers"].as_array().unwrap();
    assert_eq!(servers.len(), 2, "{servers:?}");
    for s in servers {
        assert_eq!(
            keys(s),
            [
                "description",
                "id",
                "lastError",
                "state",
                "tools",
                "transport"
            ],
            "{s}"
        );
        assert_eq!(s["transport"], "stdio", "{s}");
    }
    assert_eq!(servers[0]["id"], "broken");
    assert_eq!(servers[0]["description"], "exits at once");
    assert_eq!(servers[0]["state"], "error");
    assert!(
        servers[0]["lastError"]
            .as_str()
            .is_some_and(|e| e.contains("exit")),
        "{servers:?}"
    );
    assert_eq!(servers[1]["id"], "fake");
    assert_eq!(servers[1]["description"], "the testkit's fake server");
    assert_eq!(servers[1]["state"], "ready");
    assert_eq!(servers[1]["lastError"], Value::Null);
    let tool_count = servers[1]["tools"].as_u64().unwrap();
    assert!(tool_count > 5, "{servers:?}");

    // `list-tools`: as many tools as `list-servers` counted, each with its server, name,
    // description and input schema; every ready server's when no server is named.
    let listed = structured(&call(client, "list-tools", json!({"server": "fake"})).await);
    assert_eq!(keys(&listed), ["tools"], "{listed}");
    let tools = listed["tools"].as_array().unwrap();
    assert_eq!(tools.len() as u64, tool_count, "{listed}");
    let mut names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), tools.len(), "names are unique: {listed}");
    for t in tools {
        assert_eq!(t["server"], "fake", "{t}");
        assert!(t["description"].is_string(), "{t}");
        assert_eq!(t["inputSchema"]["type"], "object", "{t}");
    }
    let echo = tools.iter().find(|t| t["name"] == "echo").unwrap();
    assert_eq!(echo["description"], "Returns its message");
    assert_eq!(
        echo["inputSchema"]["properties"]["message"]["type"],
        "string"
    );
    let every = structured(&call(client, "list-tools", json!({})).await);
    assert_eq!(every, listed, "only `fake` is ready");
    assert_error(
        &call(client, "list-tools", json!({"server": "broken"})).await,
        "UpstreamUnavailable",
    );
    assert_error(
        &call(client, "list-tools", json!({"server": "nope"})).await,
        "UpstreamUnavailable",
    );
    assert_error(
        &call(client, "list-tools", json!({"server": 7})).await,
        "InvalidArguments",
    );

    // `call-tool`: the upstream's result comes back unchanged.
    let echoed = call(
        client,
        "call-tool",
        json!({"server": "fake", "tool": "echo", "arguments": {"message": ECHOED}}),
    )
    .await;
    assert_eq!(
        serde_json::to_value(&echoed).unwrap(),
        json!({"content": [{"type": "text", "text": ECHOED}]}),
        "{echoed:?}"
    );
    assert_error(
        &call(
            client,
            "call-tool",
            json!({"server": "fake", "tool": "nope"}),
        )
        .await,
        "UnknownTool",
    );
    assert_error(
        &call(client, "call-tool", json!({"server": "fake"})).await,
        "InvalidArguments",
    );
    assert_error(
        &call(
            client,
            "call-tool",
            json!({"server": "fake", "tool": "echo", "arguments": [1]}),
        )
        .await,
        "InvalidArguments",
    );
    assert_error(
        &call(
            client,
            "call-tool",
            json!({"server": "broken", "tool": "echo"}),
        )
        .await,
        "UpstreamUnavailable",
    );
    assert_error(
        &call(client, "no-such-tool", json!({})).await,
        "UnknownTool",
    );

    // `list-resources`: resources and templates, each with the server it came from.
    let resources = structured(&call(client, "list-resources", json!({"server": "fake"})).await);
    assert_eq!(
        keys(&resources),
        ["resourceTemplates", "resources"],
        "{resources}"
    );
    assert_eq!(
        resources["resources"],
        json!([{"uri": "fake://hello", "name": "hello", "mimeType": "text/plain", "server": "fake"}]),
        "{resources}"
    );
    let templates = resources["resourceTemplates"].as_array().unwrap();
    assert_eq!(templates.len(), 1, "{resources}");
    assert_eq!(templates[0]["uriTemplate"], "fake://{name}");
    assert_eq!(templates[0]["server"], "fake");
    let all = structured(&call(client, "list-resources", json!({})).await);
    assert_eq!(all, resources, "only `fake` is ready");

    // `read-resource`: the contents as embedded resources.
    let read = call(
        client,
        "read-resource",
        json!({"server": "fake", "uri": "fake://hello"}),
    )
    .await;
    assert_eq!(read.is_error, None, "{read:?}");
    let read = serde_json::to_value(&read).unwrap();
    let content = read["content"].as_array().unwrap();
    assert_eq!(content.len(), 1, "{read}");
    assert_eq!(content[0]["type"], "resource", "{read}");
    assert_eq!(content[0]["resource"]["uri"], "fake://hello", "{read}");
    assert!(content[0]["resource"]["text"].is_string(), "{read}");
    assert_error(
        &call(
            client,
            "read-resource",
            json!({"server": "fake", "uri": "other://x"}),
        )
        .await,
        "UpstreamCallError",
    );
    assert_error(
        &call(client, "read-resource", json!({"server": "fake"})).await,
        "InvalidArguments",
    );

    // `reload-config` with the file as it was: nothing changed, and the servers as listed.
    let report = structured(&call(client, "reload-config", json!({})).await);
    assert_eq!(
        keys(&report),
        ["added", "changed", "removed", "servers"],
        "{report}"
    );
    for k in ["added", "changed", "removed"] {
        assert_eq!(report[k], json!([]), "{report}");
    }
    let ids: Vec<&str> = report["servers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["broken", "fake"], "{report}");
}

fn two_servers() -> Value {
    json!({
        "fake": fake("the testkit's fake server", json!({})),
        "broken": fake("exits at once", json!({"args": ["--exit-on-start", "3"]})),
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_meta_tool_over_a_pipe() {
    let dir = TempDir::new("pipe");
    let gateway = start(&write_file(dir.path(), two_servers(), json!({}))).await;
    let client = over_pipe(&gateway).await;
    exercise(&client).await;
    let log = std::fs::read_to_string(dir.path().join("gateway.log")).unwrap();
    assert!(log.contains("meta mode: 2 upstream servers"), "{log}");
    // The log has the call, and not its arguments.
    assert!(log.contains("call call-tool fake/echo"), "{log}");
    assert!(
        !log.contains(ECHOED),
        "arguments stay out of the log: {log}"
    );
    gateway.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_meta_tool_over_http() {
    let dir = TempDir::new("http");
    let gateway = start(&write_file(dir.path(), two_servers(), json!({}))).await;
    let client = over_http(&gateway).await;
    exercise(&client).await;
    gateway.shutdown().await;
}

/// The pid the fake server reports: the same before and after means it was never restarted.
async fn upstream_pid(client: &Client) -> String {
    let result = call(
        client,
        "call-tool",
        json!({"server": "fake", "tool": "pid"}),
    )
    .await;
    assert_eq!(result.is_error, None, "{result:?}");
    text(&result)
}

/// Calls the fake's `crash` and checks it was refused as `PermissionDenied` without reaching
/// the server: had it, the server would have exited and been restarted with another pid.
async fn assert_crash_refused_before_the_upstream(client: &Client) {
    let pid = upstream_pid(client).await;
    let refused = call(
        client,
        "call-tool",
        json!({"server": "fake", "tool": "crash"}),
    )
    .await;
    assert_error(&refused, "PermissionDenied");
    assert!(text(&refused).contains("denied"), "{refused:?}");
    assert_eq!(upstream_pid(client).await, pid);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deny_rule_refuses_the_call_before_the_upstream() {
    let dir = TempDir::new("deny");
    let servers = json!({"fake": fake("f", json!({
        "permission": {"default": "allow", "tools": {"crash": "deny"}},
    }))});
    let gateway = start(&write_file(dir.path(), servers, json!({}))).await;
    let client = over_pipe(&gateway).await;
    assert_crash_refused_before_the_upstream(&client).await;
    gateway.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unattended_deny_refuses_what_would_ask_and_keeps_allow_rules() {
    let dir = TempDir::new("unattended");
    let servers = json!({"fake": fake("f", json!({
        "permission": {"default": "ask", "tools": {"pid": "allow"}},
    }))});
    let gateway = start(&write_file(
        dir.path(),
        servers,
        json!({"unattended": "deny"}),
    ))
    .await;
    let client = over_pipe(&gateway).await;
    assert_crash_refused_before_the_upstream(&client).await;
    gateway.shutdown().await;

    // The same rules with `unattended` left at `allow`: the asking tool runs.
    let dir = TempDir::new("attended");
    let servers = json!({"fake": fake("f", json!({
        "permission": {"default": "ask"},
    }))});
    let gateway = start(&write_file(dir.path(), servers, json!({}))).await;
    let client = over_pipe(&gateway).await;
    let echoed = call(
        &client,
        "call-tool",
        json!({"server": "fake", "tool": "echo", "arguments": {"message": "ok"}}),
    )
    .await;
    assert_eq!(text(&echoed), "ok");
    gateway.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reload_applies_the_file_and_says_what_changed() {
    let dir = TempDir::new("reload");
    let path = write_file(
        dir.path(),
        json!({"fake": fake("f", json!({})), "gone": fake("g", json!({}))}),
        json!({}),
    );
    let gateway = start(&path).await;
    let client = over_pipe(&gateway).await;

    write_file(
        dir.path(),
        json!({
            "fake": fake("f", json!({"disabled_tools": ["echo"]})),
            "new": fake("n", json!({})),
        }),
        json!({}),
    );
    let report = structured(&call(&client, "reload-config", json!({})).await);
    assert_eq!(report["added"], json!(["new"]), "{report}");
    assert_eq!(report["removed"], json!(["gone"]), "{report}");
    assert_eq!(report["changed"], json!(["fake"]), "{report}");
    let ids: Vec<&str> = report["servers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["fake", "new"]);

    // The new entry holds: `echo` is no longer offered, and the new server is.
    assert_error(
        &call(
            &client,
            "call-tool",
            json!({"server": "fake", "tool": "echo", "arguments": {"message": "x"}}),
        )
        .await,
        "UnknownTool",
    );
    let echoed = call(
        &client,
        "call-tool",
        json!({"server": "new", "tool": "echo", "arguments": {"message": "x"}}),
    )
    .await;
    assert_eq!(text(&echoed), "x");

    // A file that no longer parses leaves everything as it was.
    std::fs::write(&path, "{ not json").unwrap();
    let failed = call(&client, "reload-config", json!({})).await;
    assert_error(&failed, "InvalidArguments");
    assert!(text(&failed).contains("gateway.json"), "{failed:?}");
    let servers = structured(&call(&client, "list-servers", json!({})).await);
    assert_eq!(servers["servers"].as_array().unwrap().len(), 2);
    gateway.shutdown().await;
}

/// An upstream's hostile tool name is listed cleaned and bounded, and calling it by that
/// name reaches the upstream under its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hostile_tool_name_is_shown_safely_and_still_callable() {
    use crate::support::{assert_reached_hostile, assert_shown_safely, hostile_fake_args};
    let dir = TempDir::new("meta-hostile");
    let args = hostile_fake_args(dir.path());
    let path = write_file(
        dir.path(),
        json!({"evil": fake("hostile names", json!({"args": args}))}),
        json!({}),
    );
    let gateway = start(&path).await;
    let client = over_pipe(&gateway).await;
    let listed = structured(&call(&client, "list-tools", json!({"server": "evil"})).await);
    let names: Vec<&str> = listed["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"echo"), "{names:.80?}");
    let shown = names.iter().find(|n| **n != "echo").unwrap();
    assert_shown_safely(shown, "");
    let result = call(
        &client,
        "call-tool",
        json!({"server": "evil", "tool": shown, "arguments": {"k": "v"}}),
    )
    .await;
    assert_reached_hostile(&result);
    // The name as the upstream sent it is not a name the gateway shows, and the error that
    // says so quotes it cleaned and bounded.
    let raw = crate::support::hostile_name();
    let refused = call(
        &client,
        "call-tool",
        json!({"server": "evil", "tool": raw, "arguments": {}}),
    )
    .await;
    assert_error(&refused, "UnknownTool");
    crate::support::assert_quoted_safely(&text(&refused));
    gateway.shutdown().await;
}
