//! `mcp-host serve` and `mcp-host gateway schema`: the gateway (`mcp-gateway`) started from
//! the command line. Standard output belongs to MCP when serving over stdio, so everything
//! this module says goes to standard error or the gateway's log.
//!
//! `login --gateway FILE ID` and `logout --gateway FILE ID` log in to (or out of) one of the
//! file's OAuth-protected upstream servers ahead of `serve`, which has no browser: the tokens
//! go to this user's token store under the upstream's id and URL, where the gateway looks.

use std::net::SocketAddr;
use std::path::Path;

use mcp_gateway::{Gateway, GatewayOptions};
use mcp_http::HttpServerConfig;

use crate::exit::{Code, Failure};
use crate::live;
use crate::manage::Context;
use crate::output::Out;

/// Loads the gateway file, starts its upstream servers and serves until the client leaves
/// (stdio) or a signal ends the process (HTTP; see `main`).
pub(crate) async fn serve(
    cx: &Context,
    file: &Path,
    http: Option<SocketAddr>,
    bearer_token_env: Option<&str>,
) -> Result<(), Failure> {
    let loaded = load(cx, file)?;
    let bearer = match bearer_token_env {
        Some(var) => Some(cx.env.var(var).map(str::to_owned).ok_or_else(|| {
            Failure::usage(format!(
                "--bearer-token-env: the environment variable `{var}` is not set"
            ))
        })?),
        None => None,
    };
    let gateway = Gateway::start(loaded, GatewayOptions::new())
        .await
        .map_err(|e| Failure::new(Code::Other, e.to_string()))?;
    match http {
        None => gateway
            .serve_stdio()
            .await
            .map_err(|e| Failure::new(Code::Other, format!("serving stdio: {e}"))),
        Some(addr) => {
            let (listener, local) = mcp_http::bind(addr)
                .await
                .map_err(|e| Failure::new(Code::Other, format!("cannot listen on {addr}: {e}")))?;
            eprintln!("mcp-host gateway: listening on http://{local}/mcp");
            let mut config = HttpServerConfig::new(gateway.server_config());
            config.bearer_token = bearer;
            let host = gateway.host().clone();
            // It serves until a signal: `main` kills the servers and exits with `128 + n`.
            let served = gateway.serve_http(listener, config).await;
            host.shutdown().await;
            served.map_err(|e| Failure::new(Code::Other, format!("serving HTTP: {e}")))
        }
    }
}

/// Reads the gateway file at `path`, its upstream servers' tokens in this user's store.
pub(crate) fn load(cx: &Context, path: &Path) -> Result<mcp_gateway::Loaded, Failure> {
    let oauth = live::oauth(cx)?;
    mcp_gateway::load(path, &cx.env, Some(&oauth))
        .map_err(|e| Failure::config(e.to_string()).hint("check it with `mcp-host gateway schema`"))
}

/// The upstream servers of the gateway file at `path`, after checking that it is a gateway
/// file and that `id` is one of them.
fn upstream(cx: &Context, path: &Path, id: &str) -> Result<mcp_host::LoadedConfig, Failure> {
    let checked = mcp_gateway::load(path, &cx.env, None).map_err(|e| {
        Failure::config(e.to_string()).hint("check it with `mcp-host gateway schema`")
    })?;
    if !checked.file.mcp_servers.contains_key(id) {
        let ids: Vec<&str> = checked
            .file
            .mcp_servers
            .keys()
            .map(String::as_str)
            .collect();
        let failure = Failure::config(format!(
            "the gateway file {} has no upstream server `{id}`",
            path.display()
        ));
        return Err(if ids.is_empty() {
            failure.hint("its `mcpServers` is empty")
        } else {
            failure.hint(format!("its upstream servers: {}", ids.join(", ")))
        });
    }
    Ok(mcp_gateway::upstreams(path, &cx.env))
}

/// `login --gateway FILE ID`: the login of `mcp-host login` (browser, `--no-browser` or
/// `--device`), to the gateway's upstream.
pub(crate) async fn login(
    cx: &Context,
    out: &Out,
    path: &Path,
    id: &str,
    no_browser: bool,
    device: bool,
) -> Result<(), Failure> {
    let loaded = upstream(cx, path, id)?;
    live::login_to(cx, out, loaded, id, no_browser, device).await
}

/// `logout --gateway FILE ID`: forgets the upstream's tokens in the store the gateway reads.
pub(crate) fn logout(cx: &Context, out: &Out, path: &Path, id: &str) -> Result<(), Failure> {
    upstream(cx, path, id)?;
    live::forget(cx, out, id)
}

/// Prints the gateway file's JSON Schema.
pub(crate) fn schema(out: &Out) -> Result<(), Failure> {
    let schema = mcp_gateway::schema();
    // The schema is the document either way; `--json` changes nothing.
    let text = serde_json::to_string_pretty(&schema)
        .map_err(|e| Failure::new(Code::Other, e.to_string()))?;
    out.text(&text);
    Ok(())
}
