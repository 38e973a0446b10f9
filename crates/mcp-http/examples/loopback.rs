//! Both halves of Streamable HTTP in one process: a server with one `echo` tool is served on a
//! free loopback port with [`mcp_http::serve_http`], and a client connects to its URL with
//! [`mcp_http::connect`], lists the tools and calls `echo`. A remote server needs only the
//! client half and its URL (`https` with the `tls` feature).
//!
//! ```text
//! cargo run -p mcp-http --example loopback
//! ```

// A command-line example that reports on its standard output.
#![allow(clippy::print_stdout)]

use std::error::Error;

use mcp_http::{HttpConfig, HttpServerConfig};
use mcp_protocol::schema::{
    CallToolParams, CallToolResult, ClientRequest, ContentBlock, Implementation,
    ListChangedCapability, ListToolsResult, Tool,
};
use mcp_protocol::{ClientConfig, ErrorObject, RawJson, RequestOptions, ServerConfig, code};
use mcp_session::{Handler, RequestContext};

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
    // The server: loopback only (the default `Host` check), a port the system picks.
    let (listener, address) = mcp_http::bind("127.0.0.1:0".parse()?).await?;
    let mut server = ServerConfig::new(Implementation::new("echo-server".into(), "1.0.0".into()));
    server.capabilities.tools = Some(ListChangedCapability::new());
    tokio::spawn(mcp_http::serve_http(
        listener,
        HttpServerConfig::new(server),
        Echo,
    ));

    // The client: the server's URL is all it needs.
    let url = format!("http://{address}/mcp");
    let host = ClientConfig::new(Implementation::new(
        "loopback-example".into(),
        "1.0.0".into(),
    ));
    let client = mcp_http::connect(HttpConfig::new("echo", url), host).await?;
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
