//! The conformance server: `mcp-conformance-server [--port N]` (or `PORT`), an
//! everything-style server on `http://127.0.0.1:N/mcp` for the suite's server scenarios. The
//! tools, resources and prompts are `mcp_conformance::server`'s; the protocol and the
//! Streamable HTTP rules are `mcp-session`'s and `mcp-http`'s.

#![allow(clippy::print_stderr)]

use std::net::{Ipv4Addr, SocketAddr};

use mcp_conformance::server::{Everything, config};
use mcp_http::HttpServerConfig;

fn main() {
    mcp_conformance::exit_with("mcp-conformance-server", run());
}

/// The port from `--port N`, else `PORT`, else 3000.
fn port() -> Result<u16, String> {
    let mut args = std::env::args().skip(1);
    let mut port = std::env::var("PORT").ok();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--port" => port = args.next(),
            other => {
                return Err(format!(
                    "unknown argument {other:?}; usage: mcp-conformance-server [--port N]"
                ));
            }
        }
    }
    match port {
        Some(p) => p.parse().map_err(|_| format!("not a port: {p:?}")),
        None => Ok(3000),
    }
}

async fn run() -> Result<(), String> {
    let port = port()?;
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let (listener, local) = mcp_http::bind(addr)
        .await
        .map_err(|e| format!("cannot listen on {addr}: {e}"))?;
    eprintln!("mcp-conformance-server: listening on http://{local}/mcp");
    mcp_http::serve_http(listener, HttpServerConfig::new(config()), Everything::new())
        .await
        .map_err(|e| e.to_string())
}
