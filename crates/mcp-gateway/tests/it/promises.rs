//! Sentences of `docs/gateway.md` that no other test held, each held here (the audit of
//! issue 22): the mode a file gets without `mode`, the example file, permissions in every
//! mode, the meta tools' smaller promises, `${VAR}` and a relative `cwd` in the file, the log
//! file that is not a regular file, and the HTTP limits' documented defaults.

use std::path::Path;
use std::time::Duration;

use mcp_gateway::{Gateway, GatewayOptions, Mode};
use mcp_host::config::Env;
use mcp_protocol::schema::CallToolResult;
use mcp_session::Client;
use serde_json::{Value, json};

use crate::support::{TempDir, call, load_and_start, over_pipe, plain_client, text};

/// The fake stdio server as an upstream entry, with these flags and `extra` fields.
fn fake(args: &[&str], extra: Value) -> Value {
    let mut entry = json!({
        "description": "the fake server",
        "command": mcp_testkit::fake_server().display().to_string(),
        "args": args,
    });
    if let (Some(entry), Value::Object(extra)) = (entry.as_object_mut(), extra) {
        entry.extend(extra);
    }
    entry
}

/// Writes `file` (with its log in `dir`) as `dir/gateway.json`.
fn write(dir: &Path, mut file: Value) -> std::path::PathBuf {
    file["logFile"] = json!(dir.join("gateway.log"));
    let path = dir.join("gateway.json");
    std::fs::write(&path, serde_json::to_vec_pretty(&file).unwrap()).unwrap();
    path
}

fn log(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("gateway.log")).unwrap_or_default()
}

/// Whether `log` has `text` on a warning's line (`WARN`, or the older `warning: `).
fn warned(log: &str, text: &str) -> bool {
    log.lines()
        .any(|l| l.contains(text) && (l.contains("WARN") || l.contains("warning: ")))
}

async fn client(gateway: &Gateway) -> Client {
    over_pipe(gateway, plain_client("promises")).await
}

/// The kind a gateway tool error names, in its text and in `structuredContent`.
#[track_caller]
fn kind(result: &CallToolResult) -> String {
    assert_eq!(result.is_error, Some(true), "not an error: {result:?}");
    let kind = result.structured_content.as_ref().unwrap()["error"]["kind"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(text(result).starts_with(&format!("{kind}: ")), "{result:?}");
    kind
}

/// A meta tool's JSON answer.
#[track_caller]
fn structured(result: &CallToolResult) -> Value {
    assert_ne!(result.is_error, Some(true), "{result:?}");
    result.structured_content.clone().unwrap()
}

/// "without it, a file with `categories` is in category mode and one without is in
/// passthrough mode"; "`categories`: category mode's categories; ignored (with a warning) in
/// the other modes"; unknown names in a category are warned about.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_mode_follows_the_categories_and_categories_elsewhere_are_warned_about() {
    let dir = TempDir::new("promises-mode");
    // `ghost` is no tool of the fake's: "Names in `includeNames` or `overrides` that no
    // upstream serves are warned about at start-up."
    let categories = json!({"c": {"description": "Echo.", "server": "fake",
                                  "tools": {"includeNames": ["echo", "phantom"],
                                            "overrides": {"ghost": {"description": "boo"}}}}});
    let servers = json!({"fake": fake(&[], json!({"permission": {"default": "allow"}}))});

    let path = write(dir.path(), json!({"mcpServers": servers}));
    let loaded = mcp_gateway::load(&path, &Env::new(), None).unwrap();
    assert_eq!(loaded.mode, Mode::Passthrough);
    let gateway = Gateway::start(loaded, GatewayOptions::new()).await.unwrap();
    let tools = client(&gateway).await.list_all_tools().await.unwrap();
    assert!(tools.iter().any(|t| t.name == "echo"), "passthrough");
    gateway.shutdown().await;

    let path = write(
        dir.path(),
        json!({"mcpServers": servers, "categories": categories}),
    );
    let gateway = load_and_start(&path).await;
    let tools = client(&gateway).await.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["get-category-tools", "call-category-tool"]);
    gateway.shutdown().await;
    let logged = log(dir.path());
    for name in ["includeNames: `phantom`", "overrides: `ghost`"] {
        let text = format!("categories.c.tools.{name}");
        assert!(warned(&logged, &text), "{logged}");
    }
    std::fs::remove_file(dir.path().join("gateway.log")).unwrap();

    for mode in ["meta", "passthrough"] {
        let path = write(
            dir.path(),
            json!({"mode": mode, "mcpServers": servers, "categories": categories}),
        );
        let gateway = load_and_start(&path).await;
        let tools = client(&gateway).await.list_all_tools().await.unwrap();
        assert!(
            !tools.iter().any(|t| t.name == "get-category-tools"),
            "{mode}"
        );
        gateway.shutdown().await;
        let logged = log(dir.path());
        let text = format!("categories: ignored in mode `{mode}`");
        assert!(warned(&logged, &text), "{logged}");
        std::fs::remove_file(dir.path().join("gateway.log")).unwrap();
    }
}

/// The example under "The file" is a gateway file: it loads, in category mode, with both of
/// its servers and nothing to warn about.
#[test]
fn the_documented_example_file_loads() {
    let doc = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/gateway.md"
    ))
    .unwrap();
    let section = doc.split_once("\n## The file\n").unwrap().1;
    let example = section
        .split_once("```json\n")
        .unwrap()
        .1
        .split_once("```")
        .unwrap()
        .0;
    let dir = TempDir::new("promises-example");
    let path = dir.path().join("gateway.json");
    std::fs::write(&path, example).unwrap();
    let loaded = mcp_gateway::load(&path, &Env::new().with("TEAM_ID", "t"), None)
        .unwrap_or_else(|e| panic!("the example does not load: {e}"));
    assert_eq!(loaded.mode, Mode::Category);
    let ids: Vec<&str> = loaded.entries.iter().map(|e| e.id.as_str()).collect();
    assert_eq!(ids, ["docs", "serena"]);
    assert_eq!(loaded.warnings, Vec::<String>::new());
    assert_eq!(
        loaded.file.categories.keys().collect::<Vec<_>>(),
        ["code", "fs"]
    );
}

/// The fake's pid: the same before and after a refused call means the call never reached it
/// (`crash` would have ended it, and the host would have started another).
async fn pid(client: &Client, name: &str, arguments: Value) -> String {
    let result = call(client, name, arguments).await;
    assert_ne!(result.is_error, Some(true), "{result:?}");
    text(&result)
}

/// "Every mode calls upstream tools through the host's permission check … a `default`, which
/// is `ask` when omitted"; "A refused call never reaches the upstream server: the model gets a
/// `PermissionDenied` tool error". Meta mode is held in `meta.rs`; these are the other two.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn category_and_passthrough_calls_pass_the_permission_check() {
    let dir = TempDir::new("promises-permission");
    // No `default`: `ask`, which `unattended: deny` refuses; `pid` is allowed by a rule.
    let servers = json!({"fake": fake(&[], json!({"permission": {"tools": {"pid": "allow"}}}))});
    let path = write(
        dir.path(),
        json!({
            "mcpServers": servers,
            "unattended": "deny",
            "categories": {"c": {"description": "d", "server": "fake",
                                 "tools": {"includeNames": ["crash", "pid"]}}}
        }),
    );
    let gateway = load_and_start(&path).await;
    let c = client(&gateway).await;
    let via = |tool: &str| json!({"category": "c", "name": tool, "args": {}});
    let before = pid(&c, "call-category-tool", via("pid")).await;
    let refused = call(&c, "call-category-tool", via("crash")).await;
    assert_eq!(kind(&refused), "PermissionDenied");
    assert_eq!(pid(&c, "call-category-tool", via("pid")).await, before);
    gateway.shutdown().await;

    // Passthrough, `unattended` at its default (`allow`): a `deny` rule still refuses.
    let servers = json!({"fake": fake(&[], json!({"permission": {"tools": {"crash": "deny"}}}))});
    let path = write(dir.path(), json!({"mcpServers": servers}));
    let gateway = load_and_start(&path).await;
    let c = client(&gateway).await;
    let before = pid(&c, "pid", json!({})).await;
    let refused = call(&c, "crash", json!({})).await;
    assert_eq!(kind(&refused), "PermissionDenied");
    assert!(text(&refused).contains("denied"), "{refused:?}");
    assert_eq!(pid(&c, "pid", json!({})).await, before);
    // What `ask` would stop goes ahead unattended.
    assert_eq!(text(&call(&c, "echo", json!({"message": "m"})).await), "m");
    gateway.shutdown().await;
}

/// Meta mode's smaller promises: `list-tools` gives `title` and `annotations` when given;
/// `list-resources` skips a server without resources; `list-servers` shows a disabled server
/// as `disabled`; `enabled_tools` holds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn meta_lists_titles_skips_resourceless_servers_and_keeps_enabled_tools() {
    let dir = TempDir::new("promises-meta");
    let tools = dir.path().join("tools.json");
    std::fs::write(
        &tools,
        json!([
            {"name": "echo", "title": "Echo it", "annotations": {"readOnlyHint": true},
             "inputSchema": {"type": "object"}},
            {"name": "pid", "inputSchema": {"type": "object"}},
        ])
        .to_string(),
    )
    .unwrap();
    let allow = json!({"permission": {"default": "allow"}});
    let path = write(
        dir.path(),
        json!({"mode": "meta", "mcpServers": {
            "titled": fake(&["--tools-file", tools.to_str().unwrap(), "--no-resources"], allow.clone()),
            "some": fake(&[], json!({"permission": {"default": "allow"}, "enabled_tools": ["echo"]})),
            "off": fake(&[], json!({"enabled": false})),
        }}),
    );
    let gateway = load_and_start(&path).await;
    let c = client(&gateway).await;

    let listed = structured(&call(&c, "list-tools", json!({"server": "titled"})).await);
    let listed = listed["tools"].as_array().unwrap();
    let echo = listed.iter().find(|t| t["name"] == "echo").unwrap();
    assert_eq!(echo["title"], "Echo it", "{echo}");
    assert_eq!(echo["annotations"], json!({"readOnlyHint": true}), "{echo}");
    let plain = listed.iter().find(|t| t["name"] == "pid").unwrap();
    assert!(
        plain.get("title").is_none() && plain.get("annotations").is_none(),
        "{plain}"
    );

    let resources = structured(&call(&c, "list-resources", json!({})).await);
    let servers: Vec<&str> = resources["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["server"].as_str().unwrap())
        .collect();
    assert_eq!(servers, ["some"], "{resources}");
    assert!(resources.get("errors").is_none(), "{resources}");

    let states = structured(&call(&c, "list-servers", json!({})).await);
    let state = |id: &str| {
        states["servers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["id"] == id)
            .unwrap_or_else(|| panic!("{id} missing: {states}"))["state"]
            .clone()
    };
    assert_eq!(state("titled"), "ready");
    assert_eq!(state("off"), "disabled");

    // `enabled_tools`: only `echo` of `some` is offered, though the server has `pid`.
    let some = structured(&call(&c, "list-tools", json!({"server": "some"})).await);
    let names: Vec<&str> = some["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["echo"]);
    let args = json!({"server": "some", "tool": "pid"});
    assert_eq!(kind(&call(&c, "call-tool", args).await), "UnknownTool");
    gateway.shutdown().await;
}

/// Whether process `pid` has ended (gone, or a zombie nobody reaped yet).
fn ended(pid: &str) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).map_or(true, |stat| {
        stat.rsplit_once(") ").unwrap().1.starts_with('Z')
    })
}

/// "A reload stops servers that were removed, restarts the ones whose entry changed and leaves
/// the others running; the mode stays the one the gateway started with until it is restarted
/// (the reload says so in `notes`)".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reload_stops_the_removed_restarts_the_rest_and_keeps_the_mode() {
    let dir = TempDir::new("promises-reload");
    let allow = json!({"permission": {"default": "allow"}});
    let path = write(
        dir.path(),
        json!({"mode": "meta", "mcpServers": {"kept": fake(&[], allow.clone()), "gone": fake(&[], allow.clone())}}),
    );
    let gateway = load_and_start(&path).await;
    let c = client(&gateway).await;
    let pid_of = |server: &'static str| {
        let c = c.clone();
        async move {
            let said = pid(&c, "call-tool", json!({"server": server, "tool": "pid"})).await;
            said.split(' ').next().unwrap().to_owned()
        }
    };
    let (kept, gone) = (pid_of("kept").await, pid_of("gone").await);
    assert!(!ended(&kept) && !ended(&gone), "both run");

    write(
        dir.path(),
        json!({"mode": "passthrough", "mcpServers": {"kept": fake(&[], allow)}}),
    );
    let report = structured(&call(&c, "reload-config", json!({})).await);
    assert_eq!(report["removed"], json!(["gone"]), "{report}");
    assert_eq!(report["changed"], json!([]), "{report}");
    let notes = report["notes"].to_string();
    assert!(
        notes.contains("mode `passthrough` takes effect when the gateway is restarted"),
        "{report}"
    );
    let mut stopped = false;
    for _ in 0..100 {
        if ended(&gone) {
            stopped = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(stopped, "the removed server {gone} still runs");
    let restarted = pid_of("kept").await;
    assert_eq!(restarted, kept, "the unchanged server was started again");
    // Still meta mode.
    let tools = c.list_all_tools().await.unwrap();
    assert!(tools.iter().any(|t| t.name == "reload-config"), "{tools:?}");
    gateway.shutdown().await;
}

/// "`${VAR}` and `${VAR:-default}` are taken from the gateway's environment" in `command`,
/// `args` and `url`, and "A relative `cwd` is taken from the file's folder".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn variables_in_command_args_and_url_and_a_relative_cwd() {
    let dir = TempDir::new("promises-vars");
    // The fake reads its tools from `tools.json` in its working directory, `sub` beside the
    // file: from anywhere else it finds no such file and fails to start.
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    let tools = json!([{"name": "from_sub", "inputSchema": {"type": "object"}}]);
    std::fs::write(dir.path().join("sub/tools.json"), tools.to_string()).unwrap();
    let upstream = mcp_testkit::fake_http::FakeHttp::start().await;
    let port = upstream
        .url
        .split(':')
        .nth(2)
        .unwrap()
        .split('/')
        .next()
        .unwrap();
    let port = port.to_owned();
    let allow = json!({"default": "allow"});
    let path = write(
        dir.path(),
        json!({"mcpServers": {
            "vars": {"command": "${GW_FAKE}", "args": ["--tools", "${GW_COUNT:-2}"],
                     "permission": allow},
            "cwd": {"command": mcp_testkit::fake_server().display().to_string(),
                    "args": ["--tools-file", "tools.json"], "cwd": "sub", "permission": allow},
            "web": {"type": "http", "url": "http://127.0.0.1:${GW_PORT}/mcp", "permission": allow},
        }}),
    );
    let env = Env::new()
        .with("GW_FAKE", mcp_testkit::fake_server().display().to_string())
        .with("GW_PORT", port);
    let loaded = mcp_gateway::load(&path, &env, None).unwrap();
    let gateway = Gateway::start(loaded, GatewayOptions::new()).await.unwrap();
    for server in ["vars", "cwd", "web"] {
        let status = gateway.host().server_status(server).unwrap();
        assert_eq!(
            status.state,
            mcp_host::ServerState::Ready,
            "{server}: {:?}",
            status.last_error
        );
    }
    let tools = client(&gateway).await.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    // `${GW_COUNT:-2}`: two generated tools, and not a third.
    assert!(names.contains(&"mcp__vars__tool_00001"), "{names:?}");
    assert!(!names.contains(&"mcp__vars__tool_00002"), "{names:?}");
    assert!(names.contains(&"mcp__cwd__from_sub"), "{names:?}");
    assert!(names.contains(&"mcp__web__echo"), "{names:?}");
    assert!(
        upstream
            .seen()
            .iter()
            .any(|s| s.body["method"] == "tools/list")
    );
    gateway.shutdown().await;
}

/// "`logFile` is created with mode 0600; … something else (a terminal, `/dev/null`) is
/// written as it is": a named pipe open to others keeps its mode and carries the log.
#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_log_file_that_is_not_a_regular_file_keeps_its_mode() {
    use std::io::Read as _;
    use std::os::unix::fs::PermissionsExt as _;
    let dir = TempDir::new("promises-fifo");
    let fifo = dir.path().join("log.fifo");
    let made = std::process::Command::new("mkfifo")
        .args(["-m", "0644"])
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    // The reader opens first, so the gateway's open does not wait for one.
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || {
            let mut text = String::new();
            let _ = std::fs::File::open(fifo).unwrap().read_to_string(&mut text);
            text
        })
    };
    let path = dir.path().join("gateway.json");
    let file =
        json!({"mode": "meta", "logFile": fifo, "mcpServers": {"fake": fake(&[], json!({}))}});
    std::fs::write(&path, file.to_string()).unwrap();
    let gateway = load_and_start(&path).await;
    gateway.shutdown().await;
    drop(gateway);
    let mode = std::fs::metadata(&fifo).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o644, "the pipe's mode is {mode:o}");
    let logged = tokio::task::spawn_blocking(move || reader.join().unwrap())
        .await
        .unwrap();
    assert!(logged.contains("meta mode: 1 upstream server"), "{logged}");
}

/// The "Limits over HTTP" table's defaults are `HttpServerConfig::new`'s, row by row.
#[test]
fn the_http_limits_table_gives_the_servers_defaults() {
    let doc = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/gateway.md"
    ))
    .unwrap();
    let table = doc.split_once("### Limits over HTTP").unwrap().1;
    let defaults: Vec<&str> = table
        .lines()
        .skip_while(|l| !l.starts_with("| Limit"))
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .map(|l| l.split('|').nth(2).unwrap().trim())
        .collect();
    let gateway_config = mcp_protocol::ServerConfig::new(
        mcp_protocol::schema::Implementation::new("g".into(), "0".into()),
    );
    let c = mcp_http::HttpServerConfig::new(gateway_config);
    let secs = |d: Duration| format!("{} s", d.as_secs());
    let mib = |b: usize| format!("{} MiB", b >> 20);
    let expected = [
        c.max_connections.to_string(),
        secs(c.header_read_timeout),
        mib(c.max_body_bytes),
        secs(c.body_read_timeout),
        c.max_sessions.to_string(),
        format!("{} min", c.session_idle_timeout.as_secs() / 60),
        mib(c.max_stream_buffer_bytes),
        mib(c.max_session_buffer_bytes),
        mib(c.max_buffer_bytes),
    ];
    assert_eq!(defaults, expected);
}

/// "Upstream tool lists are cached for `cacheTtlSeconds` (default 600)".
#[test]
fn the_schema_cache_lives_600_seconds_by_default() {
    assert_eq!(mcp_gateway::DEFAULT_CACHE_TTL, Duration::from_secs(600));
}
