//! Connecting, the client API, spawn failures and the environment a server gets.

use std::time::Duration;

use mcp_protocol::schema::GetPromptParams;
use mcp_protocol::{ProtocolVersion, RequestOptions};
use mcp_stdio::{Error, SpawnPhase, StdioConfig};
use serde_json::json;

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connect_list_call_read_get_close() {
    let client = connect(&["--tools", "10", "--page-size", "4"]).await;
    assert_eq!(
        client.server_info().protocol_version,
        ProtocolVersion::V2025_11_25
    );
    assert_eq!(client.server_info().implementation.name, "mcp-fake-server");
    assert_eq!(client.session_id(), None, "stdio has no sessions");
    let group = pgid(&client).await;

    // Pagination is followed to the end: 18 built-in tools and 10 generated ones, 4 a page.
    let tools = client.list_all_tools().await.unwrap();
    assert_eq!(tools.len(), 18 + 10);
    assert_eq!(tools.last().unwrap().name, "tool_00009");
    let first_page = client.list_tools(None).await.unwrap();
    assert_eq!(first_page.tools.len(), 4);
    assert_eq!(first_page.next_cursor.as_deref(), Some("4"));

    assert_eq!(text(&client, "echo", json!({"message": "hi"})).await, "hi");
    let read = client.read_resource("fake://hello").await.unwrap();
    assert_eq!(
        read.contents[0].text.as_deref(),
        Some("contents of fake://hello")
    );
    let missing = client.read_resource("file:///nope").await.unwrap_err();
    assert!(
        matches!(missing.protocol(), mcp_protocol::Error::Rpc { error, .. } if error.code == -32002)
    );
    assert_eq!(client.list_all_resources().await.unwrap().len(), 1);
    assert_eq!(client.list_all_resource_templates().await.unwrap().len(), 1);
    assert_eq!(client.list_all_prompts().await.unwrap()[0].name, "greet");
    let mut get = GetPromptParams::new("greet".into());
    get.arguments = Some([("name".to_owned(), "Ada".to_owned())].into());
    let prompt = client.get_prompt(get).await.unwrap();
    assert_eq!(prompt.messages.len(), 1);

    // An unknown tool is a tool error inside a result, not a failure of the call.
    let result = client
        .call_tool(call("no_such_tool", json!({})), RequestOptions::DEFAULT)
        .await
        .unwrap();
    assert!(result.is_tool_error());

    let status = client.close().await;
    assert!(status.contains("exit status: 0"), "{status}");
    assert_group_gone(group);
    let after = client
        .call_tool(call("echo", json!({})), RequestOptions::DEFAULT)
        .await
        .unwrap_err();
    assert!(after.is_closed(), "{after}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_concurrent_calls_share_one_connection() {
    let client = connect(&[]).await;
    let calls = (0..64).map(|i| {
        let client = client.clone();
        tokio::spawn(
            async move { text(&client, "echo", json!({"message": format!("m{i}")})).await },
        )
    });
    for (i, call) in calls.enumerate() {
        assert_eq!(call.await.unwrap(), format!("m{i}"));
    }
    client.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spawn_failures_name_the_command_and_the_phase() {
    let missing = mcp_stdio::spawn(
        StdioConfig::new("ghost", "/definitely/not/here", ["x"]),
        session(),
    )
    .await
    .unwrap_err();
    assert!(
        matches!(
            missing,
            Error::Spawn {
                phase: SpawnPhase::NotFound,
                ..
            }
        ),
        "{missing}"
    );
    assert_eq!(
        missing.to_string().split(':').next(),
        Some("server `ghost`")
    );
    assert!(missing.to_string().contains("/definitely/not/here"));

    let mut bad_cwd = StdioConfig::new("lost", "true", Vec::<String>::new());
    bad_cwd.cwd = Some("/no/such/dir".into());
    let err = mcp_stdio::spawn(bad_cwd, session()).await.unwrap_err();
    assert!(
        matches!(
            err,
            Error::Spawn {
                phase: SpawnPhase::Cwd,
                ..
            }
        ),
        "{err}"
    );

    let dir = std::env::temp_dir().join(format!("mcp-stdio-it-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let not_exec = dir.join("not-executable");
    std::fs::write(&not_exec, "#!/bin/sh\n").unwrap();
    let mut config = StdioConfig::new(
        "noexec",
        not_exec.display().to_string(),
        Vec::<String>::new(),
    );
    config.env = vec![("TOKEN".into(), "hunter2-secret".into())];
    let err = mcp_stdio::spawn(config, session()).await.unwrap_err();
    assert!(
        matches!(
            err,
            Error::Spawn {
                phase: SpawnPhase::NotExecutable,
                ..
            }
        ),
        "{err}"
    );
    assert!(
        !err.to_string().contains("hunter2"),
        "env values never appear: {err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_dies_at_start_is_reported_with_its_stderr_and_no_secret() {
    // It lives a moment before it dies, so that the watch below can see it alive.
    let mut config = fake(&["--exit-on-start", "4", "--startup-delay-ms", "800"]);
    config.env = vec![("FAKE_API_KEY".into(), "sk-live-1234567890".into())];
    let marker = format!("dies-{}", std::process::id());
    config.env.push(("MCP_TEST_MARKER".into(), marker.clone()));
    let watch = mcp_testkit::EnvWatch::start("MCP_TEST_MARKER", &marker);
    let err = mcp_stdio::spawn(config, session()).await.unwrap_err();
    let seen = watch.stop();
    // The marked server ran (the watch found it), and is gone by the time `spawn` returns.
    assert_eq!(
        seen.len(),
        1,
        "the marked server, seen while it ran: {seen:?}"
    );
    let left = mcp_testkit::live_processes_with_env("MCP_TEST_MARKER", &marker);
    assert!(left.is_empty(), "left behind: {left:?}");
    let message = err.to_string();
    assert!(err.is_closed(), "{message}");
    assert!(message.starts_with("server `fake`"), "{message}");
    assert!(message.contains("exit status: 4"), "{message}");
    assert!(
        message.contains("was rejected"),
        "stderr is shown: {message}"
    );
    assert!(message.contains("[redacted]"), "{message}");
    assert!(
        !message.contains("sk-live-1234567890"),
        "the configured secret is redacted: {message}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_environment_is_an_allow_list_plus_the_configuration() {
    let mut config = fake(&[]);
    config.env = vec![("MCP_CONFIGURED".into(), "yes".into())];
    let client = mcp_stdio::spawn(config, session()).await.unwrap();
    let names = text(&client, "env", json!({})).await;
    let names: Vec<&str> = names.split(' ').collect();
    assert!(names.contains(&"MCP_CONFIGURED"));
    for name in &names {
        assert!(
            mcp_stdio::env::is_allowed(name) || *name == "MCP_CONFIGURED",
            "{name} leaked into the server's environment"
        );
    }
    // cargo sets CARGO_* for the test process; none of it reaches the server.
    assert!(!names.iter().any(|n| n.starts_with("CARGO")));
    client.close().await;

    let mut inherit = fake(&[]);
    inherit.inherit_env = true;
    let client = mcp_stdio::spawn(inherit, session()).await.unwrap();
    let names = text(&client, "env", json!({})).await;
    assert!(
        names.split(' ').any(|n| n.starts_with("CARGO")),
        "full inheritance passes everything"
    );
    client.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hung_initialize_fails_within_the_timeout_and_leaves_nothing() {
    let mut s = session();
    s.request_timeout = Duration::from_millis(800);
    // The server and its grandchild carry a marker, to find them without ever talking to them.
    let marker = format!("hung-{}", std::process::id());
    let mut config = fake(&["--hang-initialize", "--grandchild"]);
    config.env = vec![("MCP_TEST_MARKER".into(), marker.clone())];
    let watch = mcp_testkit::EnvWatch::start("MCP_TEST_MARKER", &marker);
    let err = mcp_stdio::spawn(config, s).await.unwrap_err();
    let seen = watch.stop();
    assert!(err.is_timeout(), "{err}");
    assert!(err.to_string().contains("initialize timed out"), "{err}");
    // Both ran while the handshake hung (the watch found them), and both are gone after.
    assert_eq!(
        seen.len(),
        2,
        "the marked server and grandchild, seen while they ran: {seen:?}"
    );
    let gone = mcp_testkit::wait_until(Duration::from_secs(5), || {
        mcp_testkit::live_processes_with_env("MCP_TEST_MARKER", &marker).is_empty()
    });
    assert!(
        gone,
        "left behind: {:?}",
        mcp_testkit::live_processes_with_env("MCP_TEST_MARKER", &marker)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_inherited_host_variable_is_redacted_like_a_configured_one() {
    // cargo test runs this with CARGO_MANIFEST_DIR set: a host variable off the allow-list,
    // which only `inherit_env` passes on.
    let inherited = std::env::var("CARGO_MANIFEST_DIR").expect("run under cargo test");
    let script = r#"echo "fatal: cannot start in $CARGO_MANIFEST_DIR" >&2; exit 3"#;
    let mut config = mcp_stdio::StdioConfig::new("leaky", "sh", ["-c", script]);
    config.inherit_env = true;
    let err = mcp_stdio::spawn(config, session()).await.unwrap_err();
    let message = err.to_string();
    assert!(
        message.contains("fatal: cannot start in [redacted]"),
        "{message}"
    );
    assert!(!message.contains(&inherited), "{message}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_stderr_shows_a_configured_secret_redacted() {
    let script = format!(
        r#"echo "starting with key $API_KEY" >&2; exec '{}'"#,
        mcp_testkit::fake_server().display()
    );
    let mut config = StdioConfig::new("talky", "sh", ["-c", script.as_str()]);
    config.env = vec![("API_KEY".to_owned(), "VALUE0123456789".to_owned())];
    config.close_timeout = Duration::from_millis(500);
    config.term_timeout = Duration::from_millis(500);
    let client = mcp_stdio::spawn(config, session()).await.unwrap();
    let mut stderr = client.stderr();
    for _ in 0..100 {
        if stderr.contains("starting with key") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        stderr = client.stderr();
    }
    assert!(
        stderr.contains("starting with key [redacted]"),
        "{stderr:?}"
    );
    assert!(!stderr.contains("VALUE0123456789"), "{stderr:?}");
    client.close().await;
}
