//! Resources and prompts as operation tools through the built binary: `tools` lists them,
//! `call` runs one by its exposed name under the permission rules, `status` shows them, and
//! the per-server settings turn them off.

use serde_json::{Value, json};

use super::*;

/// The demo server in the user's own (global) file, with `extra` members in its entry.
fn global_demo(u: &User, extra: Value) {
    let mut entry = json!({"transport": "stdio", "command": bin(), "args": ["demo-server"]});
    for (k, v) in extra.as_object().unwrap() {
        entry[k] = v.clone();
    }
    u.write_global(&json!({"version": 1, "mcp": {"servers": {"demo": entry}}}));
}

/// The exposed name of the operation with `method` on `demo`, from `tools --json`.
fn operation(u: &User, method: &str) -> String {
    let v = u.run(&["tools", "demo", "--json"]).code(0).json();
    v["operations"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["operation"] == method)
        .unwrap_or_else(|| panic!("no {method}: {v}"))["name"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[test]
fn tools_lists_the_operations_and_call_runs_them_by_name() {
    let u = User::new();
    global_demo(&u, json!({}));
    let v = u.run(&["tools", "demo", "--json"]).code(0).json();
    assert_eq!(v["tools"].as_array().unwrap().len(), 6, "the tools alone");
    let ops = v["operations"].as_array().unwrap();
    let methods: Vec<&str> = ops
        .iter()
        .map(|o| o["operation"].as_str().unwrap())
        .collect();
    assert_eq!(
        methods,
        [
            "resources/list",
            "resources/templates/list",
            "resources/read",
            "prompts/list",
            "prompts/get"
        ]
    );
    for o in ops {
        let name = o["name"].as_str().unwrap();
        assert!(name.starts_with("mcp_demo_") && name.len() <= 64, "{name}");
        assert_eq!(o["server"], "demo");
        assert_eq!(o["input_schema"]["type"], "object");
        assert!(
            o["description"].as_str().unwrap().contains("untrusted"),
            "{o}"
        );
    }
    let read = operation(&u, "resources/read");
    let r = u.run(&["tools"]);
    r.code(0);
    assert!(
        r.stdout
            .lines()
            .any(|l| l.starts_with(&read) && l.contains("(resources/read)")),
        "{r:#?}"
    );
    // The status view shows them.
    let s = u.run(&["status", "demo", "--json"]).code(0).json();
    assert_eq!(s["operations"].as_array().unwrap().len(), 5, "{s}");
    assert_eq!(s["tools"], 6);
    u.run(&["status", "demo"])
        .code(0)
        .out_has("operations:        resources/list resources/templates/list resources/read");

    // A read by its exposed name, asked about like a tool: no one to ask, so denied.
    let args = r#"{"uri": "demo://notes/shopping"}"#;
    u.run(&["call", "demo", &read, "--args", args])
        .code(6)
        .err_has("`resources/read` on server `demo` was denied");
    u.run(&["call", "demo", &read, "--args", args, "--yes"])
        .code(0)
        .out_has("[resource demo://notes/shopping]")
        .out_has("milk\neggs\ncoffee");
    let v = u
        .run(&["call", "demo", &read, "--args", args, "--yes", "--json"])
        .code(0)
        .json();
    assert_eq!(v["content"][0]["type"], "resource");
    assert_eq!(v["content"][0]["resource"]["text"], "milk\neggs\ncoffee");
    assert_eq!(v["truncated"], false);
    // A prompt, its argument filled in.
    let get = operation(&u, "prompts/get");
    let v = u
        .run(&[
            "call",
            "demo",
            &get,
            "--args",
            r#"{"name": "review", "arguments": {"topic": "the host"}}"#,
            "-y",
            "--json",
        ])
        .code(0)
        .json();
    let text = v["content"].to_string();
    assert!(text.contains("the host"), "{v}");
    // A missing argument is a tool error for the model (exit code 5), nothing sent.
    u.run(&["call", "demo", &read, "--args", "{}", "-y"])
        .code(5)
        .out_has("argument `uri` is required");
}

#[test]
fn the_configuration_allows_reading_and_still_asks_for_tools() {
    let u = User::new();
    global_demo(&u, json!({"permission": {"resources": "allow"}}));
    let read = operation(&u, "resources/read");
    u.run(&[
        "call",
        "demo",
        &read,
        "--args",
        r#"{"uri": "demo://notes/ideas"}"#,
    ])
    .code(0)
    .out_has("an MCP host that is safe with untrusted servers");
    u.run(&["call", "demo", "echo", "--args", r#"{"text": "x"}"#])
        .code(6)
        .err_has("was denied");
    // Prompts follow the default (ask), not the resources' rule.
    let list = operation(&u, "prompts/list");
    u.run(&["call", "demo", &list])
        .code(6)
        .err_has("was denied");
}

#[test]
fn the_settings_turn_them_off() {
    let u = User::new();
    global_demo(&u, json!({"expose_resources": false}));
    let v = u.run(&["tools", "demo", "--json"]).code(0).json();
    let methods: Vec<&str> = v["operations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["operation"].as_str().unwrap())
        .collect();
    assert_eq!(methods, ["prompts/list", "prompts/get"]);
    global_demo(
        &u,
        json!({"expose_resources": false, "expose_prompts": false}),
    );
    let v = u.run(&["tools", "demo", "--json"]).code(0).json();
    assert_eq!(v["tools"].as_array().unwrap().len(), 6);
    assert_eq!(v["operations"], json!([]));
    u.run(&["status", "demo"])
        .code(0)
        .out_has("operations:        -");
}
