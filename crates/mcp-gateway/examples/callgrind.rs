//! One `tools/call` round trip through each layer, for instruction counts under
//! `valgrind --tool=callgrind` (issue 25 section 5; `cargo xtask callgrind` runs it). Counts
//! repeat where time does not, so a change that adds work shows whatever the machine's mood.
//!
//! ```text
//! cargo run -p mcp-gateway --example callgrind -- LAYER CALLS
//! ```
//!
//! `LAYER` is one of:
//!
//! - `protocol`: the request encoded, decoded, its parameters read, the result encoded,
//!   decoded and read (`mcp-protocol`'s JSON-RPC codec and schema types, no session);
//! - `stdio`: a `Client` of `mcp-stdio::connect` and a server of `mcp-stdio::serve` over an
//!   in-memory pipe (sessions, NDJSON framing, the client's and the server's tasks);
//! - `http`: `mcp_http::connect` and `mcp_http::serve_http` over loopback TCP;
//! - `gateway`: the `http` client through a passthrough gateway (`mcp_gateway::Gateway` over
//!   HTTP) to the `http` server as its upstream: the hop.
//!
//! Everything runs in this process on one thread (a current-thread runtime), so that the
//! count does not depend on which worker ran what. The program does the setup and one call,
//! then `CALLS` calls in `measured_calls`, the one function in which `xtask callgrind` has
//! callgrind count (`--collect-atstart=no --toggle-collect=...`): the cost of a call is that
//! count divided by `CALLS`.

// A command-line tool that reports on its standard error.
#![allow(clippy::print_stderr)]

use std::error::Error;
use std::hint::black_box;

use mcp_protocol::schema::{
    CallToolParams, CallToolResult, ClientRequest, ContentBlock, Implementation,
    ListChangedCapability, ListToolsResult, Tool,
};
use mcp_protocol::{
    ClientConfig, ErrorObject, Message, RawJson, Request, RequestId, RequestOptions, Response,
    ServerConfig, code,
};
use mcp_session::{Client, Handler, RequestContext};

/// Longer lines than this are discarded, on either side of the pipe.
const MAX_LINE: usize = 1 << 20;

/// The text every call sends and gets back.
const TEXT: &str = "hello";

/// A server with one tool, `echo`, which returns its `text` argument.
#[derive(Clone)]
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
            ClientRequest::CallTool(call) if call.name == "echo" => RawJson::encode(
                &CallToolResult::new(vec![ContentBlock::text(text_of(&call))]),
            )
            .map_err(internal),
            _ => Err(ErrorObject::new(code::METHOD_NOT_FOUND, "not here".into())),
        }
    }
}

fn text_of(call: &CallToolParams) -> String {
    call.arguments
        .as_ref()
        .and_then(|a| a.get("text")?.as_str().map(str::to_owned))
        .unwrap_or_default()
}

fn call_params() -> Result<CallToolParams, Box<dyn Error>> {
    let mut call = CallToolParams::new("echo".into());
    call.arguments = Some(serde_json::from_str(r#"{"text": "hello"}"#)?);
    Ok(call)
}

fn server_config() -> ServerConfig {
    let mut server = ServerConfig::new(Implementation::new("echo".into(), "1.0.0".into()));
    server.capabilities.tools = Some(ListChangedCapability::new());
    server
}

fn client_config() -> ClientConfig {
    ClientConfig::new(Implementation::new("callgrind".into(), "1.0.0".into()))
}

fn main() -> Result<(), Box<dyn Error>> {
    let mut args = std::env::args().skip(1);
    let (Some(layer), Some(calls)) = (args.next(), args.next()) else {
        return Err("usage: callgrind protocol|stdio|http|gateway CALLS".into());
    };
    let calls: u64 = calls.parse()?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let client = runtime.block_on(async {
        let client = match layer.as_str() {
            "protocol" => None,
            "stdio" => Some(stdio().await?),
            "http" => Some(http_client(http_server().await?).await?),
            "gateway" => Some(gateway(http_server().await?).await?),
            other => return Err(format!("unknown layer `{other}`").into()),
        };
        Ok::<_, Box<dyn Error>>(client)
    })?;
    // One call first, outside the count: what the first call alone does (a lazy static, a
    // connection opened) is setup, not the cost of a call.
    run_calls(&runtime, client.as_ref(), 1)?;
    measured_calls(&runtime, client.as_ref(), calls)?;
    if let Some(client) = client {
        runtime.block_on(client.close());
    }
    // The server tasks still running are dropped with the runtime.
    drop(runtime);
    Ok(())
}

/// The calls that are counted: `xtask callgrind` collects only inside this function
/// (`--toggle-collect`), the tasks it drives on this thread's runtime included. Never inlined,
/// so that callgrind sees it.
#[inline(never)]
fn measured_calls(
    runtime: &tokio::runtime::Runtime,
    client: Option<&Client>,
    calls: u64,
) -> Result<(), Box<dyn Error>> {
    run_calls(runtime, client, calls)
}

/// `calls` round trips through the layer `client` is the top of (none: the codec alone).
fn run_calls(
    runtime: &tokio::runtime::Runtime,
    client: Option<&Client>,
    calls: u64,
) -> Result<(), Box<dyn Error>> {
    let Some(client) = client else {
        for i in 0..calls {
            protocol_round_trip(i)?;
        }
        return Ok(());
    };
    runtime.block_on(async {
        // With one upstream the gateway keeps its tools' names: `echo` everywhere.
        for _ in 0..calls {
            let result = client
                .call_tool(call_params()?, RequestOptions::DEFAULT)
                .await?;
            let text = match result.content.first() {
                Some(ContentBlock::Text(t)) => t.text.as_str(),
                _ => "",
            };
            if text != TEXT {
                return Err(format!("the call answered {result:?}").into());
            }
        }
        Ok(())
    })
}

/// The codec's share of a call: both messages encoded and decoded once, as each side does.
fn protocol_round_trip(i: u64) -> Result<(), Box<dyn Error>> {
    let id = RequestId::Number(i64::try_from(i)?);
    let request = Message::Request(Request {
        id: id.clone(),
        method: "tools/call".into(),
        params: Some(RawJson::encode(&call_params()?)?),
    });
    let bytes = black_box(request.encode());
    let Message::Request(received) = mcp_protocol::decode_message(&bytes)? else {
        return Err("not a request".into());
    };
    let call: CallToolParams = received.params.as_ref().ok_or("no params")?.decode()?;
    let result = CallToolResult::new(vec![ContentBlock::text(text_of(&call))]);
    let response = Message::Response(Response {
        id,
        result: RawJson::encode(&result)?,
    });
    let bytes = black_box(response.encode());
    let Message::Response(answer) = mcp_protocol::decode_message(&bytes)? else {
        return Err("not a response".into());
    };
    let result: CallToolResult = answer.result.decode()?;
    black_box(result);
    Ok(())
}

async fn stdio() -> Result<Client, Box<dyn Error>> {
    let (client_io, server_io) = tokio::io::duplex(64 << 10);
    let (client_read, client_write) = tokio::io::split(client_io);
    let (server_read, server_write) = tokio::io::split(server_io);
    tokio::spawn(mcp_stdio::serve(
        server_config(),
        server_read,
        server_write,
        Echo,
        MAX_LINE,
    ));
    let client =
        mcp_stdio::connect("echo", client_read, client_write, client_config(), MAX_LINE).await?;
    Ok(client)
}

/// Our HTTP server with `Echo` on a loopback port; returns its URL.
async fn http_server() -> Result<String, Box<dyn Error>> {
    let (listener, addr) = mcp_http::bind(([127, 0, 0, 1], 0).into()).await?;
    let config = mcp_http::HttpServerConfig::new(server_config());
    let url = format!("http://{addr}{}", config.path);
    tokio::spawn(mcp_http::serve_http(listener, config, Echo));
    Ok(url)
}

async fn http_client(url: String) -> Result<Client, Box<dyn Error>> {
    let config = mcp_http::HttpConfig::new("echo", url);
    Ok(mcp_http::connect(config, client_config()).await?)
}

/// A passthrough gateway in front of the upstream at `upstream`, served over HTTP; returns a
/// client connected to the gateway.
async fn gateway(upstream: String) -> Result<Client, Box<dyn Error>> {
    let dir = std::env::temp_dir().join(format!("mcp-callgrind-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let file = dir.join("gateway.json");
    let gateway = serde_json::json!({
        "mode": "passthrough",
        "mcpServers": {"echo": {"url": upstream, "permission": {"default": "allow"}}}
    });
    std::fs::write(&file, serde_json::to_vec(&gateway)?)?;
    let loaded = mcp_gateway::load(&file, &mcp_host::config::Env::from_process(), None)?;
    let _ = std::fs::remove_dir_all(&dir);
    let gateway = mcp_gateway::Gateway::start(loaded, mcp_gateway::GatewayOptions::new()).await?;
    gateway.settled().await;
    let (listener, addr) = mcp_http::bind(([127, 0, 0, 1], 0).into()).await?;
    let config = mcp_http::HttpServerConfig::new(gateway.server_config());
    let url = format!("http://{addr}{}", config.path);
    tokio::spawn(gateway.serve_http(listener, config));
    http_client(url).await
}
