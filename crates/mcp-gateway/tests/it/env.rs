//! Secrets from the environment in the gateway file (issue 22 §4): `${VAR}` inside a string
//! and `{"env": "VAR"}` for a whole value, in `env` and `headers`, with the host
//! configuration's rules: the value reaches the upstream, never a status, an error or a
//! `Debug` print, and an unset variable is an error naming the server, the field and the
//! variable.

use mcp_host::config::Env;
use mcp_host::{ServerState, ServerStatus};
use mcp_testkit::fake_http::FakeHttp;
use serde_json::json;

use crate::support::{TempDir, over_pipe, plain_client};

const TOKEN: &str = "gw-planted-token-5e1f";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bearer_token_from_the_environment_reaches_an_http_upstream_in_both_forms() {
    let expanded = FakeHttp::start().await;
    expanded.require_authorization(Some(&format!("Bearer {TOKEN}")));
    let referenced = FakeHttp::start().await;
    referenced.require_authorization(Some(&format!("Bearer {TOKEN}")));
    let dir = TempDir::new("env-bearer");
    let file = json!({
        "mode": "passthrough",
        "logFile": dir.path().join("gateway.log"),
        "mcpServers": {
            "a": {"type": "http", "url": expanded.url,
                  "headers": {"Authorization": "Bearer ${GW_TOKEN}"},
                  "permission": {"default": "allow"}},
            "b": {"type": "http", "url": referenced.url,
                  "headers": {"Authorization": {"env": "GW_BEARER"}},
                  "permission": {"default": "allow"}},
            "s": {"command": mcp_testkit::fake_server().display().to_string(),
                  "env": {"FAKE_KEY": {"env": "GW_TOKEN"}, "OTHER": "x-${GW_TOKEN}"},
                  "permission": {"default": "allow"}},
            // Prints the key it was given to stderr and exits: the status quotes that line.
            "leaky": {"command": mcp_testkit::fake_server().display().to_string(),
                      "args": ["--exit-on-start", "2"],
                      "env": {"FAKE_API_KEY": "${GW_TOKEN}"}},
            "unset": {"type": "http", "url": expanded.url,
                      "headers": {"Authorization": "Bearer ${GW_NOT_SET}"}},
        },
    });
    let path = dir.path().join("gateway.json");
    std::fs::write(&path, serde_json::to_vec_pretty(&file).unwrap()).unwrap();
    let env = Env::new()
        .with("GW_TOKEN", TOKEN)
        .with("GW_BEARER", format!("Bearer {TOKEN}"));
    let loaded = mcp_gateway::load(&path, &env, None).unwrap();
    let mut shown = format!("{loaded:?}");
    let gateway = mcp_gateway::Gateway::start(loaded, mcp_gateway::GatewayOptions::new())
        .await
        .unwrap();
    let client = over_pipe(&gateway, plain_client("env")).await;
    let tools = client.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    for tool in ["mcp__a__echo", "mcp__b__echo", "mcp__s__echo"] {
        assert!(names.contains(&tool), "{tool} missing from {names:?}");
    }

    // Each header arrived as the user's environment had it.
    for upstream in [&expanded, &referenced] {
        let seen = upstream.seen();
        assert!(
            seen.iter().any(|s| s.body["method"] == "tools/list"),
            "{seen:?}"
        );
        for s in &seen {
            assert_eq!(
                s.headers.get("authorization").unwrap(),
                &format!("Bearer {TOKEN}")
            );
        }
    }

    let status = |id: &str| -> ServerStatus { gateway.host().server_status(id).unwrap() };
    assert_eq!(status("a").state, ServerState::Ready);
    assert_eq!(status("b").state, ServerState::Ready);
    assert_eq!(status("s").state, ServerState::Ready);
    let unset = status("unset");
    assert_eq!(unset.state, ServerState::Error);
    let why = unset.last_error.clone().unwrap();
    assert!(
        why.contains("unset")
            && why.contains("headers.Authorization")
            && why.contains("`GW_NOT_SET` is not set"),
        "{why}"
    );
    let leaky = status("leaky");
    assert_eq!(leaky.state, ServerState::Error);
    let said = leaky.last_error.clone().unwrap();
    assert!(
        said.contains("the API key \"[redacted]\" was rejected"),
        "{said}"
    );
    for s in gateway.host().status() {
        shown.push_str(&format!("{s:?}"));
    }
    gateway.shutdown().await;
    assert!(
        shown.contains("GW_BEARER") || shown.contains("[redacted]"),
        "{shown}"
    );
    assert!(!shown.contains(TOKEN), "the token leaked: {shown}");
}

#[test]
fn the_gateway_file_reads_both_forms_and_debug_hides_the_values() {
    let file: mcp_gateway::GatewayFile = serde_json::from_value(json!({
        "mcpServers": {"s": {"command": "x",
            "env": {"A": {"env": "NAME"}, "B": "inline-secret-1"},
            "headers": {"H": {"env": "HNAME"}, "I": "inline-secret-2 ${X}"}}},
    }))
    .unwrap();
    let debug = format!("{file:?}");
    assert!(
        debug.contains("\"A\"") && debug.contains("\"I\""),
        "{debug}"
    );
    assert!(!debug.contains("inline-secret"), "{debug}");
    // Anything else where a value belongs is refused without quoting it.
    let e = serde_json::from_value::<mcp_gateway::GatewayFile>(json!({
        "mcpServers": {"s": {"command": "x", "env": {"A": {"keyring": "inline-secret-3"}}}},
    }))
    .unwrap_err()
    .to_string();
    assert!(!e.contains("inline-secret"), "{e}");
}
