//! Both halves of the stdio transport in one process: a server with one `echo` tool is served
//! over an in-memory pipe with [`mcp_stdio::serve`], and a client is connected to it with
//! [`mcp_stdio::connect`]. With a real server the client side is [`mcp_stdio::spawn`] with a
//! [`mcp_stdio::StdioConfig`], and the server side is [`mcp_stdio::serve_stdio`].
//!
//! ```text
//! cargo run -p mcp-stdio --example pipe
//! ```

// A command-line example that reports on its standard output.
#![allow(clippy::print_stdout)]

use std::error::Error;

use mcp_protocol::schema::{
    CallToolParams, CallToolResult, ClientRequest, ContentBlock, Implementation,
    ListChangedCapability, ListToolsResult, Tool,
};
use mcp_protocol::{ClientConfig, ErrorObject, RawJson, RequestOptions, ServerConfig, code};
use mcp_stdio::{Handler, RequestContext};

/// A server with one tool, `echo`, which returns its `text` argument.
struct Echo;

impl Handler for Echo {
    async fn handle(
        &self,
        request: ClientRequest,
        _context: RequestContext,
    ) -> Result<RawJson, ErrorObject> {
        let internal = |e: serde_json::Error| ErrorObject::new(code::INTERNAL_ERROR, e.to_string());
        match request {
            ClientRequest::ListTools(_) => {
                RawJson::encode(&ListToolsResult::new(vec![Tool::new("echo".into())]))
                    .map_err(internal)
            }
            ClientRequest::CallTool(call) if call.name == "echo" => {
                let text = call
                    .arguments
                    .and_then(|a| a.get("text")?.as_str().map(str::to_owned))
                    .unwrap_or_default();
                RawJson::encode(&CallToolResult::new(vec![ContentBlock::text(text)]))
                    .map_err(internal)
            }
            _ => Err(ErrorObject::new(code::METHOD_NOT_FOUND, "not here".into())),
        }
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    // Longer lines than this are discarded, on either side.
    const MAX_LINE: usize = 1 << 20;
    let (client_io, server_io) = tokio::io::duplex(64 << 10);
    let (client_read, client_write) = tokio::io::split(client_io);
    let (server_read, server_write) = tokio::io::split(server_io);

    let mut server = ServerConfig::new(Implementation::new("echo-server".into(), "1.0.0".into()));
    server.capabilities.tools = Some(ListChangedCapability::new());
    tokio::spawn(mcp_stdio::serve(
        server,
        server_read,
        server_write,
        Echo,
        MAX_LINE,
    ));

    let host = ClientConfig::new(Implementation::new("pipe-example".into(), "1.0.0".into()));
    let client = mcp_stdio::connect("echo", client_read, client_write, host, MAX_LINE).await?;
    for tool in client.list_all_tools().await? {
        println!("tool: {}", tool.name);
    }
    let mut call = CallToolParams::new("echo".into());
    call.arguments = Some(serde_json::from_str(r#"{"text": "hello"}"#)?);
    let result = client.call_tool(call, RequestOptions::DEFAULT).await?;
    println!("echo answered: {}", serde_json::to_string(&result.content)?);
    client.close().await;
    Ok(())
}
