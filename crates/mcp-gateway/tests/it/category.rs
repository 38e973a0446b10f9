//! The gateway's category mode, in process, in front of the testkit's fake server, talked to
//! by our own client over an in-memory stdio pipe and over Streamable HTTP on loopback.
//! Every acceptance line of seed 004 §10 and every error kind, on both transports.

use std::path::PathBuf;
use std::time::Duration;

use mcp_gateway::{Gateway, GatewayOptions};
use mcp_protocol::RequestOptions;
use mcp_protocol::schema::{CallToolParams, CallToolResult};
use mcp_session::Client;
use serde_json::{Value, json};

use crate::support::{TempDir, call, over_http, over_pipe, plain_client};

fn fake(args: &[&str]) -> Value {
    json!({"description": "the fake server", "command": mcp_testkit::fake_server(), "args": args})
}

/// A running gateway over `file`, with its log in the directory.
struct Running {
    gateway: Gateway,
    log: PathBuf,
    _dir: TempDir,
}

async fn start(file: Value) -> Running {
    let dir = TempDir::new("category");
    let path = dir.path().join("gateway.json");
    std::fs::write(&path, serde_json::to_vec(&file).unwrap()).unwrap();
    let loaded = mcp_gateway::load(&path, &mcp_host::config::Env::from_process(), None).unwrap();
    let log = dir.path().join("gateway.log");
    let mut options = GatewayOptions::new();
    options.log_file = Some(log.clone());
    let gateway = Gateway::start(loaded, options).await.unwrap();
    Running {
        gateway,
        log,
        _dir: dir,
    }
}

impl Running {
    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// A client over an in-memory stdio pipe, and one over HTTP.
    async fn clients(&self) -> Vec<(&'static str, Client)> {
        let session = || {
            let mut c = plain_client("it");
            c.request_timeout = Duration::from_secs(20);
            c
        };
        let stdio = over_pipe(&self.gateway, session()).await;
        let http = over_http(&self.gateway, session()).await;
        vec![("stdio", stdio), ("http", http)]
    }
}

async fn load(client: &Client, args: Value) -> Value {
    let r = call(client, "get-category-tools", args).await;
    assert_ne!(r.is_error, Some(true), "{r:?}");
    let structured = r.structured_content.clone().unwrap();
    let text = serde_json::to_value(&r.content[0]).unwrap()["text"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        serde_json::from_str::<Value>(&text).unwrap(),
        structured,
        "text = structured"
    );
    structured
}

/// The error kind of a gateway tool error, with its message.
fn kind(r: &CallToolResult) -> (String, String) {
    assert_eq!(r.is_error, Some(true), "{r:?}");
    let s = r.structured_content.as_ref().unwrap();
    (
        s["error"]["kind"].as_str().unwrap().to_owned(),
        s["error"]["message"].as_str().unwrap().to_owned(),
    )
}

fn keys(v: &Value) -> Vec<&str> {
    v.as_object().unwrap().keys().map(String::as_str).collect()
}

fn text_of(r: &CallToolResult) -> String {
    serde_json::to_value(&r.content[0]).unwrap()["text"]
        .as_str()
        .unwrap()
        .to_owned()
}

fn main_file() -> Value {
    json!({
        "mcpServers": {"fake": fake(&[]), "other": fake(&[])},
        "categories": {
            "basic": {
                "description": "Echo and friends.",
                "server": "fake",
                "tools": {
                    "includeNames": ["echo", "mcp__fake__progress", "pid", "nope"],
                    "overrides": {
                        "echo": {"description": "Says it back."},
                        "mcp__fake__pid": {"enabled": false},
                        "env": {"enabled": false}
                    }
                }
            },
            "patterns": {
                "description": "Everything starting with s, but not sleep.",
                "server": "fake",
                "tools": {"includePatterns": ["s*"], "excludePatterns": ["sl??p"]}
            },
            "span": {
                "description": "Two servers.",
                "servers": ["fake", "other"],
                "tools": {"includeNames": ["echo", "mcp__other__stats"], "includePatterns": ["mcp__*__roots"]}
            }
        }
    })
}

/// An argument the echo tool sends back, which no log line may carry.
const ARGUMENT: &str = "argument-7f3q";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_acceptance_lines_over_stdio_and_http() {
    let gw = start(main_file()).await;
    let log = gw.log();
    assert!(
        log.contains(
            "category mode: 3 categories, 9 tools, 1 disabled, 1 unresolved, 0 unavailable"
        ),
        "{log}"
    );
    assert!(
        log.contains("WARN mcp_gateway: categories.basic.tools.includeNames: `nope`"),
        "{log}"
    );
    for (transport, client) in gw.clients().await {
        // Only the two tools, with the categories in the first one's description (§10.1).
        let tools = client.list_all_tools().await.unwrap();
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(
            names,
            ["get-category-tools", "call-category-tool"],
            "{transport}"
        );
        let described = tools[0].description.as_deref().unwrap();
        for line in [
            "- basic: Echo and friends.",
            "- patterns: Everything starting with s, but not sleep.",
            "- span: Two servers.",
        ] {
            assert!(described.contains(line), "{transport}: {described}");
        }
        assert!(
            tools[1]
                .description
                .as_deref()
                .unwrap()
                .contains("get-category-tools")
        );
        let caps = client.server_info().capabilities.clone();
        // Tools, and tasks (the gateway runs `call-category-tool` as a task when asked).
        assert_eq!(
            serde_json::to_value(&caps).unwrap(),
            json!({
                "tools": {"listChanged": true},
                "tasks": {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}},
                "extensions": {"io.modelcontextprotocol/tasks": {}},
            })
        );
        assert!(
            client
                .server_info()
                .instructions
                .as_deref()
                .unwrap()
                .contains("get-category-tools")
        );

        // Only the enabled tools, overrides applied (§10.2).
        let basic = load(&client, json!({"category": "basic"})).await;
        assert_eq!(keys(&basic["tools"]), ["echo", "progress"], "{transport}");
        assert_eq!(basic["tools"]["echo"]["description"], "Says it back.");
        assert_eq!(basic["tools"]["echo"]["name"], "echo");
        assert_eq!(
            basic["tools"]["echo"]["inputSchema"]["properties"]["message"]["type"],
            "string"
        );
        assert_eq!(
            basic["meta"],
            json!({"category": "basic", "sourceServer": "fake", "unavailableTools": []})
        );
        let some = load(
            &client,
            json!({"category": "basic", "toolNames": ["mcp__fake__echo", "pid", "zzz"]}),
        )
        .await;
        assert_eq!(keys(&some["tools"]), ["echo"]);
        assert_eq!(some["meta"]["missingTools"], json!(["pid", "zzz"]));

        // Calls reach the upstream and come back unchanged (§10.3), by bare or prefixed name.
        for name in ["echo", "mcp__fake__echo"] {
            let r = call(
                &client,
                "call-category-tool",
                json!({"category": "basic", "name": name, "args": {"message": ARGUMENT}}),
            )
            .await;
            assert_eq!(r.is_error, None, "{r:?}");
            assert_eq!(text_of(&r), ARGUMENT);
        }

        // Disabled: neither listed nor callable, included or not (§10.4).
        for name in ["pid", "mcp__fake__pid", "env"] {
            let r = call(
                &client,
                "call-category-tool",
                json!({"category": "basic", "name": name, "args": {}}),
            )
            .await;
            assert_eq!(kind(&r).0, "ToolDisabled", "{transport} {name}");
        }

        // Unknown category and tool (§10.5): a tool the upstream has but the category does not.
        let r = call(&client, "get-category-tools", json!({"category": "nosuch"})).await;
        let (k, message) = kind(&r);
        assert_eq!(k, "UnknownCategory");
        assert!(message.contains("basic, patterns, span"), "{message}");
        let r = call(
            &client,
            "call-category-tool",
            json!({"category": "nosuch", "name": "echo", "args": {}}),
        )
        .await;
        assert_eq!(kind(&r).0, "UnknownCategory");
        for name in ["sleep", "mcp__other__echo", "nope"] {
            let r = call(
                &client,
                "call-category-tool",
                json!({"category": "basic", "name": name, "args": {}}),
            )
            .await;
            assert_eq!(kind(&r).0, "UnknownTool", "{name}");
        }
        // Invalid arguments.
        for args in [
            json!({}),
            json!({"category": 3}),
            json!({"category": "basic", "args": {}}),
            json!({"category": "basic", "name": "echo", "args": "x"}),
        ] {
            let r = call(&client, "call-category-tool", args.clone()).await;
            assert_eq!(kind(&r).0, "InvalidArguments", "{args}");
        }
        let r = call(
            &client,
            "get-category-tools",
            json!({"category": "basic", "toolNames": "echo"}),
        )
        .await;
        assert_eq!(kind(&r).0, "InvalidArguments");

        // Patterns.
        let patterns = load(&client, json!({"category": "patterns"})).await;
        assert_eq!(
            keys(&patterns["tools"]),
            ["sample", "spawn_grandchild", "stats"],
            "{transport}"
        );

        // A spanning category: prefixed names, and an ambiguous bare name.
        let span = load(&client, json!({"category": "span"})).await;
        assert_eq!(
            keys(&span["tools"]),
            [
                "mcp__fake__echo",
                "mcp__fake__roots",
                "mcp__other__roots",
                "mcp__other__stats"
            ]
        );
        assert_eq!(span["meta"]["sourceServers"], json!(["fake", "other"]));
        let r = call(
            &client,
            "call-category-tool",
            json!({"category": "span", "name": "roots", "args": {}}),
        )
        .await;
        let (k, message) = kind(&r);
        assert_eq!(k, "InvalidArguments");
        assert!(
            message.contains("mcp__fake__roots or mcp__other__roots"),
            "{message}"
        );
        let r = call(
            &client,
            "call-category-tool",
            json!({"category": "span", "name": "mcp__other__stats", "args": {}}),
        )
        .await;
        assert!(text_of(&r).starts_with("cancelled="), "{r:?}");
        let r = call(
            &client,
            "call-category-tool",
            json!({"category": "span", "name": "stats", "args": {}}),
        )
        .await;
        assert!(
            text_of(&r).starts_with("cancelled="),
            "bare, one server: {r:?}"
        );

        // Not one of the two tools: a protocol error.
        let mut params = CallToolParams::new("echo".to_owned());
        params.arguments = Some(Default::default());
        assert!(
            client
                .call_tool(params, RequestOptions::DEFAULT)
                .await
                .is_err()
        );
    }
    // The disabled tools never reached the upstream; the calls were logged.
    let log = gw.log();
    assert!(log.contains("call basic/echo fake/echo"), "{log}");
    assert!(
        log.contains("call span/mcp__other__stats other/stats"),
        "{log}"
    );
    assert!(!log.contains("/pid"), "{log}");
    assert!(!log.contains("/env"), "{log}");
    // The calls are logged, never their arguments or results (the echo's result is its
    // argument).
    assert!(!log.contains(ARGUMENT), "{log}");
    gw.gateway.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_down_upstream_still_lists_the_categories() {
    let gw = start(json!({
        "mcpServers": {"down": fake(&["--exit-on-start", "3"])},
        "categories": {"fs": {"description": "Files, when the server runs.", "server": "down",
                               "tools": {"includeNames": ["read_file"]}}}
    }))
    .await;
    let log = gw.log();
    assert!(log.contains("0 unresolved, 1 unavailable"), "{log}");
    assert!(
        !log.contains("WARN mcp_gateway: categories"),
        "unavailable is not unknown: {log}"
    );
    for (transport, client) in gw.clients().await {
        let tools = client.list_all_tools().await.unwrap();
        assert!(
            tools[0]
                .description
                .as_deref()
                .unwrap()
                .contains("- fs: Files, when the server runs."),
            "{transport}"
        );
        let r = call(&client, "get-category-tools", json!({"category": "fs"})).await;
        let (k, message) = kind(&r);
        assert_eq!(k, "UpstreamUnavailable", "{transport}");
        assert!(message.contains("server `down` is "), "{message}");
        assert!(
            message.contains("cannot start"),
            "the last error: {message}"
        );
        let r = call(
            &client,
            "call-category-tool",
            json!({"category": "fs", "name": "read_file", "args": {}}),
        )
        .await;
        assert_eq!(kind(&r).0, "UpstreamUnavailable");
    }
    gw.gateway.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_changed_refreshes_and_failures_have_their_kinds() {
    let gw = start(json!({
        "mcpServers": {
            "grows": fake(&[]),
            "flaky": fake(&["--fail-tools-list-after", "1"])
        },
        "cacheTtlSeconds": 1,
        "categories": {
            "grow": {"description": "Grows.", "server": "grows",
                     "tools": {"includeNames": ["grow", "crash"], "includePatterns": ["tool_*"]}},
            "flaky": {"description": "Lists once.", "server": "flaky",
                      "tools": {"includeNames": ["echo"]}}
        }
    }))
    .await;
    let clients = gw.clients().await;
    let (_, client) = &clients[0];
    let before = load(client, json!({"category": "grow"})).await;
    assert_eq!(keys(&before["tools"]), ["crash", "grow"]);
    let r = call(
        client,
        "call-category-tool",
        json!({"category": "grow", "name": "grow", "args": {}}),
    )
    .await;
    assert_eq!(text_of(&r), "one more tool");
    // The upstream's list_changed: the host lists again, the category picks the new tool up.
    let mut found = false;
    for _ in 0..100 {
        let now = load(client, json!({"category": "grow"})).await;
        if now["tools"].get("tool_00000").is_some() {
            found = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(found, "tool_00000 never appeared");

    // The cache lifetime is over and listing again fails.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    for (transport, client) in &clients {
        let r = call(client, "get-category-tools", json!({"category": "flaky"})).await;
        let (k, message) = kind(&r);
        assert_eq!(k, "SchemaFetchError", "{transport}: {message}");
    }
    // A call that breaks the upstream.
    let (_, http) = &clients[1];
    let r = call(
        http,
        "call-category-tool",
        json!({"category": "grow", "name": "crash", "args": {}}),
    )
    .await;
    assert_eq!(kind(&r).0, "UpstreamCallError", "{r:?}");
    gw.gateway.shutdown().await;
}

/// An upstream's hostile tool name is loaded cleaned and bounded, and calling it by that
/// name reaches the upstream under its own, although it looks like server `fake`'s `echo`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hostile_tool_name_is_shown_safely_and_still_callable() {
    use crate::support::{assert_reached_hostile, assert_shown_safely, hostile_fake_args};
    let dir = TempDir::new("category-hostile");
    let args = hostile_fake_args(dir.path());
    let mut evil = fake(&[]);
    evil["args"] = json!(args);
    let running = start(json!({
        "mcpServers": {"fake": fake(&[]), "evil": evil},
        "unattended": "allow",
        "categories": {
            "evil": {"description": "Hostile names.", "server": "evil",
                     "tools": {"includePatterns": ["*"]}}
        }
    }))
    .await;
    for (transport, client) in running.clients().await {
        let loaded = load(&client, json!({"category": "evil"})).await;
        let names = keys(&loaded["tools"]);
        assert!(names.contains(&"echo"), "{transport}: {names:.80?}");
        let shown = *names.iter().find(|n| **n != "echo").unwrap();
        assert_shown_safely(shown, "");
        assert_eq!(loaded["tools"][shown]["name"], shown, "{transport}");
        let result = call(
            &client,
            "call-category-tool",
            json!({"category": "evil", "name": shown, "args": {"k": "v"}}),
        )
        .await;
        assert_reached_hostile(&result);
        // The name as the upstream sent it is not one the gateway shows; the error quotes
        // it cleaned and bounded.
        let refused = call(
            &client,
            "call-category-tool",
            json!({"category": "evil", "name": crate::support::hostile_name(), "args": {}}),
        )
        .await;
        let (k, message) = kind(&refused);
        assert_eq!(k, "UnknownTool", "{transport}");
        crate::support::assert_quoted_safely(&message);
    }
    running.gateway.shutdown().await;
}
