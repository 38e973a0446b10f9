//! `mcp-host serve` and `mcp-host gateway schema`: the gateway (`mcp-gateway`) started from
//! the command line. Standard output belongs to MCP when serving over stdio, so everything
//! this module says goes to standard error or the gateway's log.
//!
//! `login --gateway FILE ID` and `logout --gateway FILE ID` log in to (or out of) one of the
//! file's OAuth-protected upstream servers ahead of `serve`, which has no browser: the tokens
//! go to this user's token store under the upstream's id and URL, where the gateway looks.

use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use mcp_gateway::{Gateway, GatewayOptions};
use mcp_http::HttpServerConfig;

use crate::exit::{Code, Failure};
use crate::live;
use crate::manage::Context;
use crate::output::Out;

/// `serve`'s HTTP settings past the address and the token: who may serve without
/// authentication, and the server's limits (defaults: `mcp_http::HttpServerConfig::new`).
#[derive(Debug, Default, clap::Args)]
pub(crate) struct HttpFlags {
    /// Over HTTP on an address that is not loopback, serve without `--bearer-token-env`
    /// (something in front of the gateway must then authenticate its clients).
    #[arg(long, requires = "http")]
    allow_unauthenticated: bool,
    /// Over HTTP, serve at most this many connections at once; one more is answered 503
    /// (default 512).
    #[arg(long, value_name = "N", requires = "http")]
    max_connections: Option<usize>,
    /// Over HTTP, keep at most this many client sessions; an `initialize` past it is answered
    /// 503 (default 1024).
    #[arg(long, value_name = "N", requires = "http")]
    max_sessions: Option<usize>,
    /// Over HTTP, end a client session unused for this many seconds (default 1800).
    #[arg(long, value_name = "SECONDS", requires = "http")]
    session_idle_timeout_secs: Option<u64>,
    /// Over HTTP, also accept requests whose `Host` is this name (any port), for clients that
    /// reach the gateway by a name that is not loopback; repeatable. Only loopback names are
    /// accepted otherwise, a defence against DNS rebinding.
    #[arg(long = "allowed-host", value_name = "NAME", requires = "http")]
    allowed_hosts: Vec<String>,
    /// Over HTTP, also accept requests that carry this `Origin` (`https://app.example`), for
    /// browser clients served from it; repeatable. Loopback origins are always accepted.
    #[arg(long = "allowed-origin", value_name = "ORIGIN", requires = "http")]
    allowed_origins: Vec<String>,
}

impl HttpFlags {
    fn apply(&self, config: &mut HttpServerConfig) {
        if let Some(n) = self.max_connections {
            config.max_connections = n;
        }
        if let Some(n) = self.max_sessions {
            config.max_sessions = n;
        }
        if let Some(secs) = self.session_idle_timeout_secs {
            config.session_idle_timeout = Duration::from_secs(secs);
        }
        config
            .allowed_hosts
            .extend(self.allowed_hosts.iter().cloned());
        config
            .allowed_origins
            .extend(self.allowed_origins.iter().cloned());
    }
}

/// Whether serving HTTP at `addr` with or without a token is allowed, and the warning to give
/// when it is allowed but open to every local process.
fn check_exposure(
    addr: SocketAddr,
    authenticated: bool,
    allow_unauthenticated: bool,
) -> Result<Option<String>, Failure> {
    if authenticated || allow_unauthenticated {
        return Ok(None);
    }
    if !addr.ip().is_loopback() {
        return Err(Failure::usage(format!(
            "--http {addr} is not a loopback address, and without --bearer-token-env anyone \
             who can reach it could use the gateway's servers"
        ))
        .hint("set --bearer-token-env VAR, or pass --allow-unauthenticated if something in front of the gateway authenticates its clients"));
    }
    Ok(Some(format!(
        "serving http://{addr} without authentication: any local process can use the \
         gateway's servers (set --bearer-token-env to require a token)"
    )))
}

/// Loads the gateway file, starts its upstream servers and serves until the client leaves
/// (stdio) or a signal ends the process (HTTP; see `main`).
pub(crate) async fn serve(
    cx: &Context,
    file: &Path,
    http: Option<SocketAddr>,
    bearer_token_env: Option<&str>,
    flags: &HttpFlags,
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
    // The file's `auth` (OAuth access tokens) and --bearer-token-env (one shared token) both
    // say who may call: one of them, never a mix whose meaning nobody would guess.
    let oauth = loaded.file.auth.is_some();
    if oauth && bearer.is_some() {
        return Err(Failure::usage(
            "--bearer-token-env and the gateway file's `auth` both say who may call the gateway; use one of them",
        ));
    }
    if oauth && http.is_none() {
        tracing::warn!(
            "the gateway file's `auth` applies to --http only; over stdio it is not used"
        );
    }
    if let Some(addr) = http
        && let Some(warning) =
            check_exposure(addr, bearer.is_some() || oauth, flags.allow_unauthenticated)?
    {
        tracing::warn!("{warning}");
    }
    // The file's `logFile` takes every line of this process's log, not only the gateway's.
    let mut options = GatewayOptions::new();
    // Upstreams' eras are remembered where the rest of mcp-host remembers them.
    options.era_file = mcp_host::setup::era_file(&cx.paths);
    if let Some(path) = &loaded.file.log_file {
        let file = mcp_gateway::open_log_file(path)
            .map_err(|e| Failure::new(Code::Other, e.to_string()))?;
        crate::logging::to_file(file);
        options.write_log_file = false;
    }
    // OpenTelemetry spans, exported when the standard OTEL_* variables say where.
    let mut trace_warnings = Vec::new();
    options.traces = mcp_gateway::TraceExport::from_env(
        |name| cx.env.var(name).map(str::to_owned),
        &mut trace_warnings,
    );
    for warning in trace_warnings {
        tracing::warn!("{warning}");
    }
    let gateway = Gateway::launch(loaded, options)
        .await
        .map_err(|e| Failure::new(Code::Other, e.to_string()))?;
    // The file is read again when it changes, and on SIGHUP.
    gateway.watch_file(Duration::from_secs(1));
    reload_on_hangup(&gateway)?;
    match http {
        None => gateway
            .serve_stdio()
            .await
            .map_err(|e| Failure::new(Code::Other, format!("serving stdio: {e}"))),
        Some(addr) => {
            let (listener, local) = mcp_http::bind(addr)
                .await
                .map_err(|e| Failure::new(Code::Other, format!("cannot listen on {addr}: {e}")))?;
            // What a launcher waits for, so on standard error whatever takes the log (the
            // file's `logFile`, `-q`); a log file has it too, written first so that whoever
            // read the address finds it there, but a log on standard error would only say it
            // twice.
            if !crate::logging::is_on_stderr() {
                tracing::info!("listening on http://{local}/mcp");
            }
            eprintln!("mcp-host gateway: listening on http://{local}/mcp");
            let mut config = HttpServerConfig::new(gateway.server_config());
            config.bearer_token = bearer;
            flags.apply(&mut config);
            let host = gateway.host().clone();
            // It serves until a signal: `main` kills the servers and exits with `128 + n`.
            let served = gateway.serve_http(listener, config).await;
            host.shutdown().await;
            served.map_err(|e| Failure::new(Code::Other, format!("serving HTTP: {e}")))
        }
    }
}

/// Reloads the gateway file on every SIGHUP, for as long as the process serves; a file that
/// fails to load is logged by the gateway and changes nothing.
fn reload_on_hangup(gateway: &Gateway) -> Result<(), Failure> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut hangup = signal(SignalKind::hangup())
        .map_err(|e| Failure::new(Code::Other, format!("cannot listen for SIGHUP: {e}")))?;
    let gateway = gateway.clone();
    tokio::spawn(async move {
        while hangup.recv().await.is_some() {
            let _ = gateway.reload().await;
        }
    });
    Ok(())
}

/// What ends `serve`: SIGTERM and SIGINT, as for every command that starts servers (every
/// server group is killed first), but not SIGHUP, which reloads the file instead. SIGHUP is
/// taken from now on, so that one that comes before the reloading task listens does not end
/// the process.
pub(crate) fn termination_signal()
-> std::io::Result<std::pin::Pin<Box<dyn Future<Output = i32> + Send>>> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    drop(signal(SignalKind::hangup())?);
    Ok(Box::pin(async move {
        let n = tokio::select! {
            _ = term.recv() => SignalKind::terminate().as_raw_value(),
            _ = int.recv() => SignalKind::interrupt().as_raw_value(),
        };
        mcp_stdio::kill_all_servers();
        n
    }))
}

/// Reads the gateway file at `path`, its upstream servers' tokens in this user's store.
pub(crate) fn load(cx: &Context, path: &Path) -> Result<mcp_gateway::Loaded, Failure> {
    let oauth = live::oauth(cx)?;
    mcp_gateway::load(path, &cx.env, Some(&oauth)).map_err(|e| file_failure(&e))
}

/// A gateway file that could not be loaded: the schema helps with a file that is wrong, not
/// with one that cannot be read (a wrong path, no permission).
fn file_failure(e: &mcp_gateway::FileError) -> Failure {
    let failure = Failure::config(e.to_string());
    match e {
        mcp_gateway::FileError::Read { source, .. }
            if source.kind() == std::io::ErrorKind::NotFound =>
        {
            failure.hint("check the path given to --gateway (docs/gateway.md shows what a gateway file holds)")
        }
        mcp_gateway::FileError::Read { .. } => failure,
        _ => failure.hint("check it against `mcp-host gateway schema`"),
    }
}

/// The upstream servers of the gateway file at `path`, after checking that it is a gateway
/// file and that `id` is one of them, and the token store its `store` block names (Redis),
/// where the gateway looks for their tokens.
fn upstream(
    cx: &Context,
    path: &Path,
    id: &str,
) -> Result<
    (
        mcp_host::LoadedConfig,
        Option<mcp_host::auth_store::AuthStore>,
    ),
    Failure,
> {
    let checked = mcp_gateway::load(path, &cx.env, None).map_err(|e| file_failure(&e))?;
    let store = match &checked.file.store {
        Some(block) => {
            let store = block.open(&cx.env).map_err(Failure::config)?;
            Some(mcp_host::auth_store::AuthStore::in_redis(
                store.redis,
                &store.prefix,
            ))
        }
        None => None,
    };
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
    Ok((mcp_gateway::upstreams(path, &cx.env), store))
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
    let (loaded, store) = upstream(cx, path, id)?;
    live::login_to_store(cx, out, loaded, id, no_browser, device, store).await
}

/// `logout --gateway FILE ID`: forgets the upstream's tokens in the store the gateway reads.
pub(crate) fn logout(cx: &Context, out: &Out, path: &Path, id: &str) -> Result<(), Failure> {
    let (_, store) = upstream(cx, path, id)?;
    live::forget_in(cx, out, id, store)
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
