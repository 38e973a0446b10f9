//! `mcp-bench`: our crates, the official Rust SDK (rmcp), the TypeScript SDK and the Python SDK
//! side by side (issue 11). `cargo xtask bench` installs the other SDKs, builds this in release
//! and runs `mcp-bench run`, which writes `docs/benchmarks.md`.
//!
//! Three roles, one binary:
//!
//! - `mcp-bench server <ours|rmcp|raw> stdio|http [--port P] [--tools N]`: a server with the
//!   benchmark's tools (`echo`, `big`, and N generated ones, paginated); `raw` is the floor,
//!   an HTTP echo of the request body (the stdio floor is `cat`).
//! - `mcp-bench client <ours|rmcp|raw> <spec>`: connects as the JSON spec says, runs one
//!   workload, prints one JSON line of results. The TypeScript and Python clients
//!   (`bench/ts/client.mjs`, `bench/py/client.py`) take the same spec and print the same line.
//! - `mcp-bench run ...`: the driver, which runs every row, implementations interleaved per
//!   repetition, and renders the page.
//! - `mcp-bench crowd ours <spec>` and `mcp-bench ready <ours|raw> <spec>`: the clients of
//!   the gateway rows (`gateways.rs`) and of the time-to-ready row (`ready.rs`).
//! - `mcp-bench gateway-check <mcp-host>`: not a measurement but a check, our gateway between
//!   an rmcp client and an rmcp upstream (`gateway_check.rs`).

// A benchmark reports on the terminal, and a failed invariant is a broken run.
#![allow(clippy::print_stderr, clippy::print_stdout)]

mod driver;
mod gateway_check;
mod gateways;
mod gateways_page;
mod ours;
mod raw;
mod ready;
mod render;
mod rmcp_sdk;
mod workload;

use anyhow::{Context as _, bail};

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(role) = args.first() else {
        bail!("usage: mcp-bench server|client|run|gateway-check ...");
    };
    match role.as_str() {
        "server" => server(&args[1..]),
        "client" => {
            let [imp, spec] = &args[1..] else {
                bail!("usage: mcp-bench client <ours|rmcp|raw> <spec json>");
            };
            let spec = workload::Spec::parse(spec)?;
            let result = runtime()?.block_on(async {
                match imp.as_str() {
                    "ours" => ours::client(&spec).await,
                    "rmcp" => rmcp_sdk::client(&spec).await,
                    "raw" => raw::client(&spec).await,
                    other => bail!("unknown client `{other}`"),
                }
            })?;
            println!("{result}");
            Ok(())
        }
        "crowd" => {
            let [_, spec] = &args[1..] else {
                bail!("usage: mcp-bench crowd ours <spec json>");
            };
            let streams = serde_json::from_str::<serde_json::Value>(spec)?["streams"] == true;
            let spec = workload::Spec::parse(spec)?;
            let result = runtime()?.block_on(gateways::crowd(&spec, streams))?;
            println!("{result}");
            Ok(())
        }
        "ready" => {
            let [how, spec] = &args[1..] else {
                bail!("usage: mcp-bench ready <ours|raw> <spec json>");
            };
            let result = runtime()?.block_on(ready::run(how, spec))?;
            println!("{result}");
            Ok(())
        }
        "run" => driver::run(&args[1..]),
        "gateway-check" => gateway_check::run(&args[1..]),
        other => bail!("unknown role `{other}`"),
    }
}

/// The runtime a consumer gets from `#[tokio::main]`: multi-threaded, one worker per core.
/// `MCP_BENCH_RT=current` (a diagnostic, never set by the driver) runs on one thread instead.
fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    let mut builder = if std::env::var_os("MCP_BENCH_RT").is_some_and(|v| v == "current") {
        tokio::runtime::Builder::new_current_thread()
    } else {
        tokio::runtime::Builder::new_multi_thread()
    };
    Ok(builder.enable_all().build()?)
}

fn server(args: &[String]) -> anyhow::Result<()> {
    let (Some(imp), Some(transport)) = (args.first(), args.get(1)) else {
        bail!("usage: mcp-bench server <ours|rmcp|raw> stdio|http [--port P] [--tools N]");
    };
    let mut port = 0u16;
    let mut tools = 0usize;
    let mut rest = args[2..].iter();
    while let Some(flag) = rest.next() {
        let value = rest
            .next()
            .with_context(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--port" => port = value.parse()?,
            "--tools" => tools = value.parse()?,
            other => bail!("unknown flag {other}"),
        }
    }
    let http = match transport.as_str() {
        "stdio" => None,
        "http" => Some(std::net::SocketAddr::from(([127, 0, 0, 1], port))),
        other => bail!("unknown transport `{other}`"),
    };
    runtime()?.block_on(async {
        match imp.as_str() {
            "ours" => ours::server(http, tools).await,
            "rmcp" => rmcp_sdk::server(http, tools).await,
            "raw" => match http {
                Some(addr) => raw::echo_server(addr).await,
                None => bail!("the raw stdio server is `cat`"),
            },
            other => bail!("unknown server `{other}`"),
        }
    })
}
