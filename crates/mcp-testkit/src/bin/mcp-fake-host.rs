//! A fake host: connects to the MCP server given on its command line, asks it to start a
//! grandchild, prints `ready <server pgid> <grandchild pid>`, then waits for a signal the way a
//! real host should: on SIGTERM it kills every server group and exits with 128 + n.
//!
//! Usage: `mcp-fake-host <server command> [args...]`.

#![allow(clippy::print_stdout, clippy::print_stderr, clippy::unwrap_used)]

use std::io::Write as _;

use mcp_protocol::schema::{CallToolParams, ContentBlock, Implementation};
use mcp_protocol::{ClientConfig, RequestOptions};
use mcp_stdio::StdioConfig;

fn main() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let code = rt.block_on(async {
        let mut args = std::env::args().skip(1);
        let command = args.next().expect("a server command");
        let config = StdioConfig::new("fake", command, args);
        let session = ClientConfig::new(Implementation::new("mcp-fake-host".into(), "0".into()));
        let client = mcp_stdio::spawn(config, session).await.unwrap();
        let text = |name: &str| {
            let client = client.clone();
            let name = name.to_owned();
            async move {
                let r = client
                    .call_tool(CallToolParams::new(name), RequestOptions::DEFAULT)
                    .await
                    .unwrap();
                match &r.content[0] {
                    ContentBlock::Text(t) => t.text.clone(),
                    other => panic!("unexpected {other:?}"),
                }
            }
        };
        // Listen before announcing readiness, or a quick SIGTERM would find no handler.
        let signal = mcp_stdio::termination_signal().unwrap();
        let pid = text("pid").await;
        let pgid = pid.split(' ').nth(1).unwrap().to_owned();
        let grandchild = text("spawn_grandchild").await;
        println!("ready {pgid} {grandchild}");
        let _ = std::io::stdout().flush();
        128 + signal.await
    });
    std::process::exit(code);
}
