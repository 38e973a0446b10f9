//! The `agent` example (`examples/agent.rs`), built and run as a user runs it: with a
//! configuration file naming the testkit's fake server, in a HOME and project directory of its
//! own. Its printed history is what is checked: the model's calls and their results, the
//! resource read through an operation tool among them, the denied call as an error the model
//! reads, and nothing else.

// Test code: an unwrap that fails is a failed test, with its location.
#![allow(clippy::unwrap_used)]

use std::path::PathBuf;
use std::process::Command;

use serde_json::{Value, json};

/// The example's binary, built in the testkit's target folder beside the caller's (see
/// `mcp_testkit`: a build of one package there does not undo the caller's).
fn agent() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let profile = exe.parent().unwrap().parent().unwrap();
    let release = profile.file_name().is_some_and(|n| n == "release");
    let target = profile.parent().unwrap().join("testkit");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let mut cmd = Command::new(cargo);
    cmd.args([
        "build",
        "--quiet",
        "--package",
        "mcp-host",
        "--example",
        "agent",
    ]);
    if release {
        cmd.arg("--release");
    }
    cmd.env("CARGO_TARGET_DIR", &target);
    assert!(
        cmd.status().unwrap().success(),
        "building the example failed"
    );
    target
        .join(if release { "release" } else { "debug" })
        .join("examples")
        .join("agent")
}

#[test]
fn the_agent_example_keeps_every_result_in_the_history() {
    let fake = mcp_testkit::fake_server();
    let dir = mcp_testkit::TempDir::new("agent");
    let (home, project) = (dir.path().join("home"), dir.path().join("project"));
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&project).unwrap();
    let config = dir.path().join("config.json");
    let file = json!({"version": 1, "mcp": {"servers": {
        "fake": {"transport": "stdio", "command": fake},
    }}});
    std::fs::write(&config, file.to_string()).unwrap();
    let out = Command::new(agent())
        .current_dir(&project)
        .env_clear()
        .env("HOME", &home)
        .env("MCP_HOST_CONFIG", &config)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("server fake: ready"), "{stderr}");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();

    // The model was offered the tools and the operations, under their exposed names.
    let tools: Vec<&str> = v["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    for prefix in [
        "mcp_fake_echo_",
        "mcp_fake_list_resources_",
        "mcp_fake_read_resource_",
        "mcp_fake_get_prompt_",
    ] {
        assert!(
            tools.iter().any(|t| t.starts_with(prefix)),
            "{prefix}: {tools:?}"
        );
    }

    let history = v["history"].as_array().unwrap();
    // One user message, then a call and its result for each of the seven steps: nothing a
    // server returned reached the history any other way.
    assert_eq!(history.len(), 1 + 2 * 7, "{history:#?}");
    assert_eq!(history[0]["role"], "user");
    for pair in history[1..].chunks(2) {
        assert_eq!(pair[0]["role"], "assistant");
        assert_eq!(pair[1]["role"], "tool");
        assert_eq!(pair[1]["tool_call_id"], pair[0]["tool_calls"][0]["id"]);
        assert_eq!(pair[1]["name"], pair[0]["tool_calls"][0]["name"]);
    }
    let result = |n: usize| &history[2 + 2 * n];
    let call = |n: usize| &history[1 + 2 * n]["tool_calls"][0];

    // The resource read through the operation: the URI taken from the listing, the contents
    // an embedded resource in an ordinary tool result.
    assert!(
        call(1)["name"]
            .as_str()
            .unwrap()
            .starts_with("mcp_fake_read_resource_")
    );
    assert_eq!(call(1)["arguments"], json!({"uri": "fake://hello"}));
    assert_eq!(result(1)["is_error"], false);
    assert_eq!(
        result(1)["content"],
        json!([{"type": "resource", "resource": {"uri": "fake://hello", "text": "contents of fake://hello"}}])
    );
    // The prompt, as a tool result too.
    assert_eq!(result(3)["content"][1]["text"], "[user] Hello, agent!");
    assert_eq!(result(4)["content"][0]["text"], "hello from the model");
    // The hook denied `crash`: an error the model reads, and the server never saw it (it would
    // have exited, and the next call failed).
    assert!(
        call(5)["name"]
            .as_str()
            .unwrap()
            .starts_with("mcp_fake_crash_")
    );
    assert_eq!(result(5)["is_error"], true);
    let denied = result(5)["content"][0]["text"].as_str().unwrap();
    assert!(
        denied.contains("was denied") && denied.contains("refused by the permission policy"),
        "{denied}"
    );
    assert_eq!(result(6)["is_error"], false);
    assert_eq!(result(6)["content"][0]["text"], "still here");
}
