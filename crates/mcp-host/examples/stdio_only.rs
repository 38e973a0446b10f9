//! The smallest host: one configuration file, its servers started (stdio ones here), their
//! tools listed, one tool called. It needs only the `stdio` feature, and built that way it
//! compiles no HTTP client, TLS or OAuth: `docs/architecture.md` ("Features") measures its
//! build time and size beside `rmcp`'s equivalent.
//!
//! ```text
//! cargo run -p mcp-host --no-default-features --features stdio --example stdio_only -- \
//!     CONFIG.json TOOL '{"text": "hi"}'
//! ```
//!
//! `CONFIG.json` is a native configuration file (`{"version": 1, "mcp": {"servers": {"id":
//! {"command": "…", "args": […]}}}}`, see `docs/configuration.md`); `TOOL` is a tool name as its server
//! lists it, called with the JSON object that follows (`{}` if none). Every call is allowed:
//! this is the user's own file. An `http` server in the file is listed in state `error`,
//! naming the feature this build left out.

// A command-line example that reports on its standard output.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::error::Error;
use std::path::PathBuf;
use std::sync::Arc;

use mcp_host::config::{self, ConfigFile, Env, FileFormat, Scope};
use mcp_host::permission::AllowAll;
use mcp_host::trust::Approvals;
use mcp_host::{CallOptions, Host, HostOptions, ServerState, setup};
use mcp_protocol::JsonObject;
use mcp_protocol::schema::Implementation;

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    let mut args = std::env::args().skip(1);
    let (Some(file), Some(tool)) = (args.next(), args.next()) else {
        return Err("usage: stdio_only CONFIG.json TOOL [ARGUMENTS-JSON]".into());
    };
    let arguments: JsonObject = serde_json::from_str(&args.next().unwrap_or("{}".to_owned()))?;

    // 1. The configuration: one file, in the user's own scope (so no approval is needed).
    let file = std::path::absolute(PathBuf::from(file))?;
    let cwd = std::env::current_dir()?;
    let files = [ConfigFile::new(file, Scope::Global, FileFormat::Native)];
    let loaded = config::load_files(&files, &Env::from_process(), &cwd);
    for problem in &loaded.problems {
        eprintln!("{problem}");
    }

    // 2. The host: every server at once; `start` returns when each has settled.
    let info = Implementation::new(
        "stdio-only-example".into(),
        env!("CARGO_PKG_VERSION").into(),
    );
    let host = Host::new(HostOptions::new(info, Arc::new(AllowAll)));
    host.start(setup::entries(&loaded, None, &Approvals::default()))
        .await;
    for status in host.status() {
        match status.state {
            ServerState::Ready => println!("{}: ready, {} tools", status.id, status.tools),
            state => println!(
                "{}: {state}: {}",
                status.id,
                status.last_error.unwrap_or_default()
            ),
        }
    }

    // 3. The tools, then one call by the server's own tool name.
    let catalog = host.catalog();
    for t in catalog.tools() {
        println!("tool {} ({}/{})", t.name, t.server, t.tool);
    }
    let Some(target) = catalog.tools().iter().find(|t| t.tool == tool) else {
        host.shutdown().await;
        return Err(format!("no ready server offers a tool named {tool:?}").into());
    };
    let output = host
        .call_tool(&target.server, &tool, arguments, CallOptions::default())
        .await;
    host.shutdown().await;
    let output = output?;
    println!("{}", serde_json::to_string(&output.result)?);
    Ok(())
}
