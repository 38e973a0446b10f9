//! The conformance client: `mcp-conformance-client <server-url>`, with the scenario in
//! `MCP_CONFORMANCE_SCENARIO`. It connects as a host would and does what the scenario's user
//! would ask for; every protocol behaviour comes from the library. Exits 0 on success.

#![allow(clippy::print_stderr)]

use mcp_http::HttpConfig;
use mcp_protocol::schema::{CallToolParams, Implementation};
use mcp_protocol::{ClientConfig, RequestOptions};
use mcp_session::Client;

fn main() {
    let code = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => match rt.block_on(run()) {
            Ok(()) => 0,
            Err(e) => {
                eprintln!("mcp-conformance-client: {e}");
                1
            }
        },
        Err(e) => {
            eprintln!("mcp-conformance-client: {e}");
            1
        }
    };
    std::process::exit(code);
}

async fn run() -> Result<(), String> {
    let url = std::env::args()
        .next_back()
        .ok_or("usage: mcp-conformance-client <server-url>")?;
    let scenario = mcp_conformance::scenario();
    let session = ClientConfig::new(Implementation::new(
        "mcp-host-conformance".into(),
        env!("CARGO_PKG_VERSION").into(),
    ));
    let client = mcp_http::connect(HttpConfig::new("conformance", url), session)
        .await
        .map_err(|e| e.to_string())?;
    let outcome = act(&client, &scenario).await;
    client.close().await;
    outcome
}

/// What the scenario's user asks of the host.
async fn act(client: &Client, scenario: &str) -> Result<(), String> {
    let call = |name: &str, args: serde_json::Value| {
        let mut p = CallToolParams::new(name.to_owned());
        p.arguments = args.as_object().cloned();
        p
    };
    match scenario {
        "initialize" => Ok(()),
        "tools_call" => {
            let tools = client.list_all_tools().await.map_err(|e| e.to_string())?;
            if !tools.iter().any(|t| t.name == "add_numbers") {
                return Err("the server lists no add_numbers tool".to_owned());
            }
            let result = client
                .call_tool(
                    call("add_numbers", serde_json::json!({"a": 5, "b": 3})),
                    RequestOptions::DEFAULT,
                )
                .await
                .map_err(|e| e.to_string())?;
            if result.is_tool_error() {
                return Err(format!("add_numbers failed: {result:?}"));
            }
            Ok(())
        }
        "sse-retry" => {
            client
                .call_tool(
                    call("test_reconnection", serde_json::json!({})),
                    RequestOptions::DEFAULT,
                )
                .await
                .map_err(|e| e.to_string())?;
            Ok(())
        }
        _ => {
            client.list_all_tools().await.map_err(|e| e.to_string())?;
            Ok(())
        }
    }
}
