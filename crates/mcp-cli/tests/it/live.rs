//! The commands that run servers, against the bundled demo server over stdio and HTTP.

use serde_json::json;

use super::*;

#[test]
fn test_reports_version_server_and_tools_over_stdio_and_http() {
    let u = User::new();
    u.add_demo("demo", "project");
    u.run(&["test", "demo"])
        .code(0)
        .out_has("ok: server `demo` (stdio)")
        .out_has("mcp-host-demo")
        .out_has("protocol:  2025-11-25")
        .out_has("tools:     6");

    let http = HttpDemo::start();
    u.run(&["add", "web", &http.url, "--scope", "global"])
        .code(0);
    let v = u.run(&["test", "web", "--json"]).code(0).json();
    assert_eq!(v["ok"], true);
    assert_eq!(v["transport"], "http");
    assert_eq!(v["tools"], 6);
    assert_eq!(v["protocol_version"], "2025-11-25");
    assert!(v["elapsed_ms"].as_u64().is_some());
    assert!(v["tool_names"].as_array().unwrap().contains(&json!("slow")));
    // --scope picks the layer whose definition is tested.
    u.run(&["test", "web", "--scope", "project"])
        .code(3)
        .err_has("no server `web` is configured");
    u.run(&["test", "web", "--scope", "global"]).code(0);
}

#[test]
fn test_fails_with_the_phase_and_a_hint() {
    let u = User::new();
    u.run(&["add", "missing", "--", "/nonexistent/server-binary"])
        .code(0);
    u.run(&["test", "missing"])
        .code(4)
        .err_has("server `missing` did not become ready")
        .err_has("hint:");
    u.run(&["add", "nothing", "http://127.0.0.1:9/mcp"]).code(0);
    u.run(&["test", "nothing"])
        .code(4)
        .err_has("server `nothing`");
    u.run(&["test", "ghost"])
        .code(3)
        .err_has("no server `ghost` is configured")
        .err_has("configured servers: missing, nothing");
    u.add_demo_disabled("off");
    u.run(&["test", "off"]).code(3).err_has("disabled");
    // An entry that cannot be used as written (its secret's variable is not set) is a
    // configuration error, told by the phase the library reports, not by its text.
    u.run(&[
        "add",
        "unset",
        "--transport",
        "stdio",
        "--command",
        "/bin/true",
        "--env-from",
        "TOKEN=MCP_HOST_TEST_NEVER_SET",
    ])
    .code(0);
    u.run(&["test", "unset"])
        .code(3)
        .err_has("server `unset` is not usable")
        .err_has("MCP_HOST_TEST_NEVER_SET");
    let v = u.run(&["status", "unset", "--json"]).code(0).json();
    assert_eq!(v["last_error_phase"], "configuration");
    let v = u.run(&["status", "missing", "--json"]).code(0).json();
    assert_eq!(v["last_error_phase"], "connect");
}

/// Past `mcp.max_connections` servers wait their turn in configuration order (by id), and
/// the table and `--json` say so: the same server on every run, never a silent `error`.
#[test]
fn servers_past_the_connection_limit_wait_visibly_in_order() {
    let u = User::new();
    let demo = json!({"transport": "stdio", "command": bin(), "args": ["demo-server"]});
    u.write_global(&json!({"version": 1, "mcp": {
        "max_connections": 2,
        "servers": {"c": demo, "a": demo, "b": demo}
    }}));
    for _ in 0..2 {
        let r = u.run(&["status"]);
        r.code(0);
        let line = |id: &str| {
            r.stdout
                .lines()
                .find(|l| l.starts_with(&format!("{id} ")))
                .unwrap()
                .split_whitespace()
                .collect::<Vec<_>>()
        };
        assert_eq!(line("a")[4..], ["ready", "6", "-"]);
        assert_eq!(line("b")[4..], ["ready", "6", "-"]);
        let c = line("c");
        assert_eq!(c[4..6], ["connecting", "0"]);
        assert!(
            c[6..]
                .join(" ")
                .starts_with("waiting: connection limit 2 reached"),
            "{c:?}"
        );
    }
    let v = u.run(&["status", "--json"]).code(0).json();
    let servers = v["servers"].as_array().unwrap();
    let waiting: Vec<&str> = servers
        .iter()
        .filter(|s| s["waiting"].is_string())
        .map(|s| s["id"].as_str().unwrap())
        .collect();
    assert_eq!(waiting, ["c"], "{v}");
    assert_eq!(servers.len(), 3);
}

#[test]
fn status_is_the_mcp_view() {
    let u = User::new();
    u.run(&["status"])
        .code(0)
        .out_has("no MCP servers configured");
    assert_eq!(u.run(&["status", "--json"]).json(), json!({"servers": []}));
    u.add_demo("demo", "global");
    u.run(&["add", "broken", "-s", "project", "--", "/nonexistent/x"])
        .code(0);
    u.add_demo_disabled("off");
    let r = u.run(&["status"]);
    r.code(0);
    let lines: Vec<&str> = r.stdout.lines().collect();
    assert_eq!(
        lines[0].split_whitespace().collect::<Vec<_>>(),
        [
            "ID",
            "TRANSPORT",
            "SOURCE",
            "ENABLED",
            "STATE",
            "TOOLS",
            "REASON"
        ]
    );
    let row = |id: &str| -> Vec<&str> {
        lines
            .iter()
            .find(|l| l.starts_with(&format!("{id} ")))
            .unwrap()
            .split_whitespace()
            .collect()
    };
    assert_eq!(
        row("demo"),
        ["demo", "stdio", "global", "yes", "ready", "6", "-"]
    );
    // The failure, in short, is the reason.
    let broken = row("broken");
    assert_eq!(
        broken[..6],
        ["broken", "stdio", "project", "yes", "error", "0"]
    );
    assert!(broken[6..].join(" ").starts_with("connect:"), "{broken:?}");
    assert_eq!(
        row("off"),
        ["off", "stdio", "project", "no", "disabled", "0", "-"]
    );

    let one = u.run(&["status", "demo", "--json"]).code(0).json();
    assert_eq!(one["state"], "ready");
    assert_eq!(one["protocol_version"], "2025-11-25");
    assert_eq!(one["server_info"]["name"], "mcp-host-demo");
    assert!(one["last_connected_at"].as_str().unwrap().ends_with('Z'));
    assert_eq!(one["session"], serde_json::Value::Null);
    // The demo server speaks only the handshake era: the first `status` probed and fell back,
    // and remembered it beside the configuration, so this one went straight to initialize.
    assert_eq!(one["era"], "handshake");
    let negotiation = one["negotiation"].as_str().unwrap();
    assert_eq!(
        negotiation, "this server spoke the handshake era before; initialize agreed on 2025-11-25",
        "{one}"
    );
    let eras = std::fs::read_to_string(u.global_file().with_file_name("eras.json")).unwrap();
    assert!(
        eras.contains("\"demo\"") && eras.contains("\"handshake\""),
        "{eras}"
    );
    u.run(&["status", "demo"])
        .code(0)
        .out_has("era:               handshake")
        .out_has(&format!("negotiation:       {negotiation}"));
    let broken = u.run(&["status", "broken"]);
    broken
        .code(0)
        .out_has("state:             error")
        .out_has("last_error:");
    u.run(&["status", "ghost"]).code(3);
}

#[test]
fn http_status_shows_the_session() {
    let u = User::new();
    let http = HttpDemo::start();
    u.run(&["add", "web", &http.url]).code(0);
    let one = u.run(&["status", "web", "--json"]).code(0).json();
    let session = one["session"].as_str().unwrap();
    assert!(
        session.ends_with('…') && session.chars().count() == 9,
        "{one}"
    );
}

#[test]
fn tools_lists_exposed_names_and_origins() {
    let u = User::new();
    u.add_demo("demo", "project");
    let r = u.run(&["tools"]);
    r.code(0);
    assert!(r.stdout.lines().next().unwrap().starts_with("NAME"));
    assert!(
        r.stdout.lines().any(|l| l.starts_with("mcp_demo_add_")
            && l.contains(" demo ")
            && l.contains("Adds two numbers")),
        "{r:#?}"
    );
    let v = u.run(&["tools", "demo", "--json"]).code(0).json();
    let tools = v["tools"].as_array().unwrap();
    assert_eq!(tools.len(), 6);
    assert!(
        tools
            .iter()
            .all(|t| t["server"] == "demo" && t["name"].as_str().unwrap().starts_with("mcp_demo_"))
    );
    assert!(
        tools
            .iter()
            .any(|t| t["tool"] == "echo" && t["input_schema"]["required"] == json!(["text"]))
    );
    u.run(&["tools", "ghost"]).code(3);
}

#[test]
fn call_asks_permission_unless_allowed() {
    let u = User::new();
    u.add_demo("demo", "project");
    // No terminal to ask on: refused, and the hint says how to allow.
    u.run(&["call", "demo", "add", "--args", r#"{"a": 2, "b": 3}"#])
        .code(6)
        .err_has("was denied")
        .err_has("--yes");
    u.run(&[
        "call",
        "demo",
        "add",
        "--args",
        r#"{"a": 2, "b": 3}"#,
        "--yes",
    ])
    .code(0)
    .out_has("2 + 3 = 5");
    // The exposed name works as well as the server's name.
    let exposed = u.run(&["tools", "--json"]).json()["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["tool"] == "echo")
        .unwrap()["name"]
        .as_str()
        .unwrap()
        .to_owned();
    let v = u
        .run(&[
            "call",
            "demo",
            &exposed,
            "--args",
            r#"{"text": "hi\u001b[31m"}"#,
            "-y",
            "--json",
        ])
        .code(0)
        .json();
    assert_eq!(
        v["content"][0]["text"], "hi\u{1b}[31m",
        "JSON keeps the exact text"
    );
    assert_eq!(v["truncated"], false);
    // On a terminal-less stdout the escape is removed.
    let r = u.run(&[
        "call",
        "demo",
        "echo",
        "--args",
        r#"{"text": "hi\u001b[31m"}"#,
        "-y",
    ]);
    assert_eq!(r.code(0).stdout, "hi\n");
}

#[test]
fn a_configured_policy_decides_before_the_flag() {
    let u = User::new();
    u.write_global(&json!({"version": 1, "mcp": {"servers": {"demo": {
        "transport": "stdio", "command": bin(), "args": ["demo-server"],
        "permission": {"default": "ask", "tools": {"add": "allow", "delete_note": "deny"}}
    }}}}));
    // Allowed by the (global) configuration: no --yes needed.
    u.run(&["call", "demo", "add", "--args", r#"{"a": 1, "b": 1}"#])
        .code(0)
        .out_has("1 + 1 = 2");
    // Denied by the configuration: --yes does not override it.
    u.run(&[
        "call",
        "demo",
        "delete_note",
        "--args",
        r#"{"name": "x"}"#,
        "--yes",
    ])
    .code(6)
    .err_has("denied");
}

#[test]
fn tool_errors_and_bad_arguments_have_their_own_codes() {
    let u = User::new();
    u.add_demo("demo", "project");
    u.run(&["call", "demo", "fail", "-y"])
        .code(5)
        .out_has("this tool always fails")
        .err_has("tool `fail` on server `demo` reported an error");
    u.run(&["call", "demo", "nope", "-y"])
        .code(5)
        .err_has("unknown tool `nope`");
    u.run(&["call", "demo", "add", "--args", "{oops", "-y"])
        .code(2)
        .err_has("--args is not valid JSON");
    u.run(&["call", "demo", "add", "--args", "[1, 2]", "-y"])
        .code(2)
        .err_has("must be a JSON object");
    u.run(&[
        "call",
        "demo",
        "slow",
        "--args",
        r#"{"seconds": 4, "step_ms": 2000}"#,
        "--timeout-ms",
        "300",
        "-y",
    ])
    .code(5)
    .err_has("timed out");
    u.run(&["call", "ghost", "add", "-y"]).code(3);
    let v = u
        .run(&["call", "ghost", "add", "-y", "--json"])
        .code(3)
        .json();
    assert_eq!(v["error"]["kind"], "config");
    assert_eq!(v["error"]["exit_code"], 3);
    u.run(&["add", "broken", "--", "/nonexistent/x"]).code(0);
    u.run(&["call", "broken", "add", "-y"])
        .code(4)
        .err_has("server `broken` did not become ready");
}

#[test]
fn resources_read_prompts_get() {
    let u = User::new();
    u.add_demo("demo", "project");
    let r = u.run(&["resources"]);
    r.code(0)
        .out_has("demo://notes/shopping")
        .out_has("template");
    let v = u.run(&["resources", "demo", "--json"]).code(0).json();
    assert_eq!(v["resources"].as_array().unwrap().len(), 3);
    u.run(&["read", "demo", "demo://notes/shopping"])
        .code(0)
        .out_has("milk\neggs\ncoffee");
    let v = u
        .run(&["read", "demo", "demo://notes/ideas", "--json"])
        .code(0)
        .json();
    assert_eq!(v["contents"][0]["mimeType"], "text/plain");
    u.run(&["read", "demo", "demo://notes/none"])
        .code(5)
        .err_has("no resource");
    u.run(&["prompts"])
        .code(0)
        .out_has("review")
        .out_has("topic");
    u.run(&["prompt", "get", "demo", "review", "--arg", "topic=the CLI"])
        .code(0)
        .out_has("user: Please review the CLI.");
    let v = u
        .run(&[
            "prompt", "get", "demo", "review", "--arg", "topic=x", "--json",
        ])
        .code(0)
        .json();
    assert_eq!(v["messages"][0]["role"], "user");
    u.run(&["prompt", "get", "demo", "review"])
        .code(5)
        .err_has("topic");
    u.run(&["prompt", "get", "demo", "review", "--arg", "novalue"])
        .code(2);
}

#[test]
fn demo_shows_the_whole_flow() {
    let u = User::new();
    let r = u.run(&["demo"]);
    r.code(0)
        .out_has("demo  stdio      demo    yes      ready  6")
        .out_has("2 + 3 = 5")
        .out_has("denied: call to `delete_note` on server `demo` was denied")
        .out_has("received 2 tool call(s)")
        .out_has("milk")
        .out_has("stopped `demo`; servers still running: 0");
    // Nothing was written: the demo needs no configuration.
    assert!(!u.project_file().exists() && !u.global_file().exists());
}

#[test]
fn the_project_flag_and_demo_json() {
    let u = User::new();
    let other = TempDir::new("elsewhere");
    u.run(&[
        "add",
        "x",
        "https://x.example/mcp",
        "--scope",
        "project",
        "--project",
        other.path().to_str().unwrap(),
    ])
    .code(0);
    assert!(other.path().join(".mcp-host/config.json").exists());
    assert!(!u.project_file().exists());
    u.run(&["list", "--project", "/nonexistent/dir"])
        .code(2)
        .err_has("does not exist");
    let r = u.run(&["demo", "--json"]);
    let docs: Vec<serde_json::Value> = serde_json::Deserializer::from_str(&r.code(0).stdout)
        .into_iter()
        .map(Result::unwrap)
        .collect();
    assert_eq!(docs[0]["servers"][0]["state"], "ready");
    assert!(docs.iter().any(|d| d["structuredContent"]["sum"] == 5.0));
    assert_eq!(docs.last().unwrap()["servers_running"], 0);
}

#[test]
fn an_invalid_id_is_a_usage_error_for_every_command() {
    let u = User::new();
    u.add_demo("demo", "project");
    for args in [
        &["test", "bad id"][..],
        &["status", "bad id"],
        &["tools", "bad id"],
        &["call", "bad id", "add", "-y"],
        &["resources", "bad id"],
        &["read", "bad id", "demo://notes/ideas"],
        &["prompts", "bad id"],
        &["prompt", "get", "bad id", "review"],
        &["get", "bad id"],
        &["login", "bad id"],
        &["logout", "bad id"],
    ] {
        u.run(args).code(2).err_has("invalid server id `bad id`");
    }
}

#[test]
fn a_disabled_server_named_explicitly_is_a_config_error() {
    let u = User::new();
    u.add_demo_disabled("off");
    for args in [
        &["tools", "off"][..],
        &["resources", "off"],
        &["prompts", "off"],
        &["call", "off", "add", "-y"],
        &["read", "off", "demo://notes/ideas"],
        &["prompt", "get", "off", "review"],
    ] {
        u.run(args)
            .code(3)
            .err_has("server `off` is disabled")
            .err_has("mcp-host enable off");
    }
    u.run(&["add", "web", "https://x.example/mcp", "--enabled", "false"])
        .code(0);
    u.run(&["login", "web", "--no-browser"])
        .code(3)
        .err_has("server `web` is disabled");
}

#[test]
fn json_failures_print_one_document() {
    let u = User::new();
    u.add_demo("demo", "project");
    // The result is the document; its `isError` and the exit code say it failed.
    let v = u
        .run(&["call", "demo", "fail", "-y", "--json"])
        .code(5)
        .json();
    assert_eq!(v["isError"], true);
    u.run(&["add", "broken", "--", "/nonexistent/x"]).code(0);
    let v = u.run(&["test", "broken", "--json"]).code(4).json();
    assert_eq!(v["ok"], false);
    assert_eq!(v["state"], "error");
    u.write_global(&json!({"version": 1, "mcp": {"servers": {"h": {"transport": "http"}}}}));
    let v = u.run(&["list", "--json"]).code(3).json();
    assert_eq!(v["problems"][0]["server"], "h");
    // Without a document of its own, the failure is the document.
    let v = u.run(&["call", "demo", "add", "--json"]).code(6).json();
    assert_eq!(v["error"]["kind"], "denied");
}

#[test]
fn ids_and_fields_from_a_file_reach_the_terminal_cleaned() {
    let u = User::new();
    u.add_demo("demo", "project");
    std::fs::write(
        u.project.path().join(".mcp.json"),
        r#"{"mcpServers": {
            "ev\u001b]0;title\u0007il": {"command": "x"},
            "hdr": {"type": "http", "url": "https://x.example/mcp", "headers": {"X\u001b[31m": "v"}}
        }}"#,
    )
    .unwrap();
    // Each command names both entries, cleaned: the id without its title escape, the field
    // without its colour escape; `list` fails for the invalid entries, the others go on.
    let id_problem = "server `evil`: invalid server id";
    let field_problem = "server `hdr`: field `headers.X`: not a valid HTTP header name";
    for (args, code, row) in [
        (&["list"][..], 3, ["evil", "-", "invalid"]),
        (&["status"], 0, ["evil", "unknown", "project"]),
        (&["tools"], 0, ["", "", ""]),
    ] {
        let r = u.run(args);
        r.code(code).err_has(id_problem).err_has(field_problem);
        if args == ["tools"] {
            r.err_has("server `evil` is not usable")
                .err_has("server `hdr` is not usable")
                .out_has("echo");
        } else {
            let evil = r.stdout.lines().find(|l| l.starts_with("evil "));
            let evil = evil.unwrap_or_else(|| panic!("no row for `evil`: {r:#?}"));
            let cells: Vec<&str> = evil.split_whitespace().take(3).collect();
            assert_eq!(cells, row, "{r:#?}");
            assert!(r.stdout.lines().any(|l| l.starts_with("hdr ")), "{r:#?}");
        }
        // Nothing of the escapes is left: not the bytes, not what they carried.
        for hostile in ["\u{1b}", "\u{7}", "]0;", "0;title", "[31m"] {
            assert!(
                !r.stdout.contains(hostile) && !r.stderr.contains(hostile),
                "{hostile:?} in {r:#?}"
            );
        }
    }
}
