//! The protocol demo: a host's client session and a gateway's server session talk through the
//! real codec, in memory, on a simulated clock, and every frame is printed. No network, no
//! processes: it shows what `mcp-protocol` decides, which is everything but the I/O.
//!
//! Run with `cargo run -p mcp-protocol --example demo`.

#![allow(clippy::print_stdout, clippy::disallowed_methods)]

use std::time::{Duration, Instant};

use mcp_protocol::schema::{
    CallToolParams, CallToolResult, ClientRequest, ContentBlock, Implementation,
    ListChangedCapability, ListToolsResult, Tool, method,
};
use mcp_protocol::{
    ClientConfig, ClientEvent, ClientSession, RawJson, RequestOptions, ServerConfig, ServerEvent,
    ServerSession, decode, decode_result,
};
use serde_json::json;

fn main() {
    let mut now = Instant::now();
    let mut client = ClientSession::new(ClientConfig::new(Implementation::new(
        "demo-host".into(),
        "0.1.0".into(),
    )));
    let mut server_config =
        ServerConfig::new(Implementation::new("demo-server".into(), "0.1.0".into()));
    server_config.capabilities.tools = Some(ListChangedCapability::new());
    let mut server = ServerSession::new(server_config);

    println!("# handshake");
    client
        .initialize(now)
        .expect("a new session can initialize");
    pump(&mut client, &mut server, now);

    println!("\n# tools/list, then tools/call");
    let list = client
        .request::<method::ListTools>(now, &Default::default(), RequestOptions::DEFAULT)
        .expect("the session is ready");
    pump(&mut client, &mut server, now);
    let _ = list;

    let mut params = CallToolParams::new("echo".into());
    params.arguments = json!({"message": "hello"}).as_object().cloned();
    client
        .request::<method::CallTool>(now, &params, RequestOptions::DEFAULT)
        .expect("the session is ready");
    pump(&mut client, &mut server, now);

    println!("\n# a call the server never answers, with a 2 s timeout");
    let params = CallToolParams::new("hang".into());
    client
        .request::<method::CallTool>(
            now,
            &params,
            RequestOptions::DEFAULT.timeout(Duration::from_secs(2)),
        )
        .expect("the session is ready");
    pump(&mut client, &mut server, now);
    now += Duration::from_secs(2);
    println!("  (2 s pass)");
    client.handle_timeout(now);
    pump(&mut client, &mut server, now);

    client.close("demo finished");
    pump(&mut client, &mut server, now);
}

/// Moves frames both ways, printing them, and lets a tiny tool handler answer requests.
fn pump(client: &mut ClientSession, server: &mut ServerSession, now: Instant) {
    loop {
        let mut moved = false;
        while let Some(m) = client.poll_transmit() {
            let bytes = m.encode();
            println!("host → server  {}", String::from_utf8_lossy(&bytes));
            server.handle_decoded(now, decode(&bytes).expect("we send only valid frames"));
            moved = true;
        }
        while let Some(event) = server.poll_event() {
            if let ServerEvent::Request { id, request } = event {
                let answer = match request {
                    ClientRequest::ListTools(_) => {
                        let mut echo = Tool::new("echo".into());
                        echo.description = Some("Echoes its input".into());
                        echo.input_schema = Some(
                            json!({"type": "object", "properties": {"message": {"type": "string"}}}),
                        );
                        RawJson::encode(&ListToolsResult::new(vec![echo, Tool::new("hang".into())]))
                    }
                    ClientRequest::CallTool(call) if call.name == "echo" => {
                        let text = call
                            .arguments
                            .and_then(|a| {
                                a.get("message").and_then(|m| m.as_str()).map(str::to_owned)
                            })
                            .unwrap_or_default();
                        RawJson::encode(&CallToolResult::new(vec![ContentBlock::text(text)]))
                    }
                    _ => continue,
                };
                let _ = server.respond(&id, answer.expect("our results encode"));
            }
        }
        while let Some(m) = server.poll_transmit() {
            let bytes = m.encode();
            println!("server → host  {}", String::from_utf8_lossy(&bytes));
            client.handle_decoded(
                now,
                decode(&bytes).expect("the server sends only valid frames"),
            );
            moved = true;
        }
        while let Some(event) = client.poll_event() {
            match event {
                ClientEvent::Ready(info) => println!(
                    "  host: ready, {} {} speaking {}",
                    info.implementation.name, info.implementation.version, info.protocol_version
                ),
                ClientEvent::Response {
                    method,
                    outcome: Ok(raw),
                    ..
                } if method == "tools/list" => {
                    let tools =
                        decode_result::<method::ListTools>(&raw).expect("a valid tools/list");
                    let names: Vec<_> = tools.tools.iter().map(|t| t.name.as_str()).collect();
                    println!("  host: {} tools: {}", names.len(), names.join(", "));
                }
                ClientEvent::Response {
                    method, outcome, ..
                } => println!("  host: {method} → {outcome:?}"),
                other => println!("  host: {other:?}"),
            }
        }
        if !moved {
            break;
        }
    }
}
