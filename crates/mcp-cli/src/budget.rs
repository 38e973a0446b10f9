//! `mcp-host budget`: what the servers' tool definitions cost a model, exposed directly and
//! through the gateway's category mode (`mcp_gateway::budget` measures; this starts the
//! servers and renders). Without `--gateway`, the configured servers are measured as if each
//! were one category of all its tools.

use std::path::Path;
use std::sync::Arc;

use mcp_gateway::GatewayFile;
use mcp_gateway::budget::{self, Budget, Size};
use mcp_host::permission::AllowAll;
use mcp_host::{Host, HostOptions, ServerState};
use serde_json::{Value, json};

use crate::args::ReadScope;
use crate::exit::{Code, Failure};
use crate::live::{self, Setup, SpinnerText};
use crate::manage::Context;
use crate::output::{Out, Table, cell};

pub(crate) async fn run(cx: &Context, out: &Out, gateway: Option<&Path>) -> Result<(), Failure> {
    let (host, file) = match gateway {
        Some(path) => {
            let loaded = crate::gateway::load(cx, path)?;
            for warning in &loaded.warnings {
                // The configuration's problems say `warning:` themselves.
                let warning = warning.strip_prefix("warning: ").unwrap_or(warning);
                out.note(&format!("mcp-host: warning: {warning}"));
            }
            // Nothing is called: the policy never decides.
            let host = Host::new(HostOptions::new(live::client_info(), Arc::new(AllowAll)));
            live::connect(&host, loaded.entries, SpinnerText::Count).await;
            (host, loaded.file)
        }
        None => {
            let loaded = cx.load(ReadScope::Effective);
            let live = live::start(cx, out, loaded, None, Setup::default()).await?;
            (live.host, GatewayFile::default())
        }
    };
    let mut not_ready = Vec::new();
    for status in host.status() {
        if status.enabled && status.state != ServerState::Ready {
            out.note(&format!(
                "mcp-host: {}; its tools are not measured",
                live::not_ready(&status).message
            ));
            not_ready.push(status.id);
        }
    }
    let tools = budget::listed_tools(&host);
    host.shutdown().await;
    if tools.is_empty() {
        return Err(Failure::new(
            Code::Connection,
            "no server is ready: there is nothing to measure",
        )
        .hint("check the servers with `mcp-host status`"));
    }
    let measured = budget::measure(&file, &tools);
    if out.is_json() {
        out.json(&document(&measured, &not_ready, gateway.is_some()));
    } else {
        out.text(&render(&measured, gateway.is_some()));
    }
    Ok(())
}

fn size(s: Size) -> Value {
    json!({"bytes": s.bytes, "tokens": s.tokens})
}

fn document(b: &Budget, not_ready: &[String], from_file: bool) -> Value {
    json!({
        "token_estimate": "bytes / 4, rounded up, of the compact JSON",
        "categories_from": if from_file { "gateway file" } else { "one per server" },
        "upstreams": b.upstreams.iter().map(|u| json!({
            "server": u.server, "tools": u.tools, "bytes": u.size.bytes, "tokens": u.size.tokens,
        })).collect::<Vec<_>>(),
        "direct": size(b.direct),
        "gateway": size(b.gateway),
        "categories": b.categories.iter().map(|c| json!({
            "category": c.category, "tools": c.tools, "bytes": c.size.bytes, "tokens": c.size.tokens,
        })).collect::<Vec<_>>(),
        "reduction_percent": (b.reduction_percent * 10.0).round() / 10.0,
        "not_ready": not_ready,
    })
}

fn render(b: &Budget, from_file: bool) -> String {
    let mut t = Table::new(&["EXPOSED", "TOOLS", "BYTES", "~TOKENS"]);
    let row = |t: &mut Table, what: String, tools: usize, s: Size| {
        t.row(vec![
            what,
            tools.to_string(),
            s.bytes.to_string(),
            s.tokens.to_string(),
        ]);
    };
    for u in &b.upstreams {
        row(
            &mut t,
            format!("{} (direct)", cell(&u.server, 40)),
            u.tools,
            u.size,
        );
    }
    let total: usize = b.upstreams.iter().map(|u| u.tools).sum();
    row(&mut t, "all servers (direct)".to_owned(), total, b.direct);
    row(&mut t, "gateway, category mode".to_owned(), 2, b.gateway);
    for c in &b.categories {
        row(
            &mut t,
            format!("  + load {}", cell(&c.category, 40)),
            c.tools,
            c.size,
        );
    }
    let source = if from_file {
        ""
    } else {
        " (no gateway file: one category per server)"
    };
    format!(
        "{}\n\nreduction: {:.1}% of the tool list a model receives ({} -> {} bytes){source}\ntokens are estimated as bytes / 4",
        t.render(),
        b.reduction_percent,
        b.direct.bytes,
        b.gateway.bytes
    )
}
