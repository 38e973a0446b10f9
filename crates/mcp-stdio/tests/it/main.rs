//! Integration tests of mcp-stdio with real child processes: the testkit's fake server, which
//! misbehaves on demand. After each misbehaviour a test asserts that the call ended (a result
//! or a clear error), that no process of the server's group is left, and that another
//! connection was unaffected.

// Test code: an unwrap that fails is a failed test, with its location.
#![allow(clippy::unwrap_used)]

// Connecting, the client API, spawn failures and the environment.
mod basics;
// Every misbehaviour of the fake server, one test each.
mod misbehaviour;
// Shutdown: close, drop, SIGTERM to the host, stubborn servers and grandchildren.
mod shutdown;
// The server half, in process, against our client.
mod server_half;
// `serve_stdio` in a real child process, over pipes and over sockets.
mod serve_stdio;

use std::time::Duration;

use mcp_protocol::schema::{CallToolParams, ClientCapabilities, ContentBlock, Implementation};
use mcp_protocol::{ClientConfig, RequestOptions};
use mcp_stdio::{Client, StdioConfig};
use serde_json::json;

/// A fake server started with `flags`, with short shutdown timeouts.
fn fake(flags: &[&str]) -> StdioConfig {
    let mut config = StdioConfig::new(
        "fake",
        mcp_testkit::fake_server().display().to_string(),
        flags.iter().copied(),
    );
    config.close_timeout = Duration::from_millis(500);
    config.term_timeout = Duration::from_millis(500);
    config
}

fn session() -> ClientConfig {
    let mut c = ClientConfig::new(Implementation::new("it".into(), "0".into()));
    c.request_timeout = Duration::from_secs(20);
    c
}

fn session_with(caps: ClientCapabilities) -> ClientConfig {
    let mut c = session();
    c.capabilities = caps;
    c
}

async fn connect(flags: &[&str]) -> Client {
    mcp_stdio::spawn(fake(flags), session()).await.unwrap()
}

fn call(name: &str, args: serde_json::Value) -> CallToolParams {
    let mut p = CallToolParams::new(name.to_owned());
    p.arguments = args.as_object().cloned();
    p
}

/// The text of the first content block of a successful call.
async fn text(client: &Client, name: &str, args: serde_json::Value) -> String {
    let result = client
        .call_tool(call(name, args), RequestOptions::DEFAULT)
        .await
        .unwrap();
    match &result.content[0] {
        ContentBlock::Text(t) => t.text.clone(),
        other => panic!("expected text, got {other:?}"),
    }
}

/// The server's process group, asked of the server itself.
async fn pgid(client: &Client) -> i32 {
    text(client, "pid", json!({}))
        .await
        .split(' ')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap()
}

/// Asserts that nothing of the group is left, waiting a little for the kernel.
fn assert_group_gone(pgid: i32) {
    let gone = mcp_testkit::wait_until(Duration::from_secs(5), || {
        mcp_testkit::live_group_members(pgid).is_empty()
    });
    assert!(
        gone,
        "processes of group {pgid} are left: {:?}",
        mcp_testkit::live_group_members(pgid)
    );
}

/// A witness connection must keep working whatever another server does.
async fn assert_witness_fine(witness: &Client) {
    assert_eq!(
        text(witness, "echo", json!({"message": "still here"})).await,
        "still here"
    );
}
