//! The gateway as an MCP server: one [`Host`] holds the upstream connections for every
//! client in front (one over stdio, any number over HTTP), and each request is answered by
//! the mode's module (`category`, `passthrough`, `meta`).
//!
//! This module starts the gateway (the host, with the permission policy for unattended
//! calls and the way back for upstream requests) and serves it; what the modes share is in
//! `shared`, `routes`, `reply` and `call_log`, which import nothing from here.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_host::permission::{CallRequest, Decision, Policy};
use mcp_host::{Host, HostOptions};
use mcp_protocol::schema::{ClientNotification, ClientRequest, Implementation};
use mcp_protocol::{ErrorObject, RawJson, ServerConfig};
use mcp_session::{Handler, RequestContext, SessionKey};

use crate::call_log::CallLog;
use crate::file::{Loaded, Mode, Unattended};
use crate::routes::{Forwarder, Routes};
use crate::shared::Shared;

/// How long an upstream's schemas are cached by default (seed 004 §5.2).
pub const DEFAULT_CACHE_TTL: Duration = Duration::from_secs(600);

/// How a gateway runs, beyond its file.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct GatewayOptions {
    /// Who the gateway is to its clients and to the upstream servers.
    pub implementation: Implementation,
    /// Where the per-call log goes when the file names no `logFile`: `None` is standard error.
    pub log_file: Option<PathBuf>,
}

impl GatewayOptions {
    /// `mcp-host-gateway` with this crate's version, logging to standard error.
    pub fn new() -> Self {
        Self {
            implementation: Implementation::new(
                "mcp-host-gateway".to_owned(),
                env!("CARGO_PKG_VERSION").to_owned(),
            ),
            log_file: None,
        }
    }
}

impl Default for GatewayOptions {
    fn default() -> Self {
        Self::new()
    }
}

/// The gateway: cheap to clone, every clone the same gateway. Serve it with
/// [`serve_stdio`](Gateway::serve_stdio) or [`serve_http`](Gateway::serve_http).
#[derive(Clone, Debug)]
pub struct Gateway {
    pub(crate) shared: Arc<Shared>,
}

impl Gateway {
    /// Starts the upstream servers of `loaded` and returns once each has settled (ready,
    /// failed or waiting for authorization); one that fails is reported and retried like any
    /// host server, and never stops the gateway. Logs the start-up summary.
    pub async fn start(loaded: Loaded, options: GatewayOptions) -> std::io::Result<Self> {
        let Loaded {
            path,
            file,
            mode,
            entries,
            warnings,
            env,
            oauth,
        } = loaded;
        let log_path = file.log_file.clone().or(options.log_file.clone());
        let log = CallLog::open(log_path.as_deref())?;
        let routes = Arc::new(Routes::default());
        let unattended = file.unattended.unwrap_or_default();
        let mut host_options = HostOptions::new(
            options.implementation.clone(),
            Arc::new(UnattendedPolicy(unattended)),
        );
        host_options.requests = Some(Arc::new(Forwarder {
            routes: Arc::clone(&routes),
        }));
        let host = Host::new(host_options);
        let shared = Arc::new(Shared {
            host,
            mode,
            ttl: file
                .cache_ttl_seconds
                .map_or(DEFAULT_CACHE_TTL, Duration::from_secs),
            file: Mutex::new(Arc::new(file)),
            path,
            env,
            oauth,
            log,
            routes,
            listed: Mutex::new(std::collections::HashMap::new()),
            implementation: options.implementation,
            passthrough: crate::passthrough::State::default(),
        });
        for warning in &warnings {
            shared.log.line(&format!("warning: {warning}"));
        }
        shared.host.start(entries).await;
        shared.mark_all_listed();
        for status in shared.host.status() {
            let error = status
                .last_error
                .as_deref()
                .map(|e| format!(": {e}"))
                .unwrap_or_default();
            // The gateway has no browser: a person logs in to the upstream beforehand.
            let hint = if status.state == mcp_host::ServerState::AuthRequired {
                format!(
                    "; log in with `mcp-host login --gateway {} {}`",
                    shared.path.display(),
                    status.id
                )
            } else {
                String::new()
            };
            shared.log.line(&format!(
                "upstream {}: {} ({} tools){error}{hint}",
                status.id, status.state, status.tools
            ));
        }
        let gateway = Self { shared };
        gateway.startup_report();
        if mode == Mode::Passthrough {
            crate::passthrough::start_relay(&gateway.shared);
        }
        Ok(gateway)
    }

    /// The start-up summary of the mode (seed 004 §8).
    fn startup_report(&self) {
        let report = match self.shared.mode {
            Mode::Category => crate::category::startup_report(&self.shared),
            Mode::Passthrough => crate::passthrough::startup_report(&self.shared),
            Mode::Meta => crate::meta::startup_report(&self.shared),
        };
        for line in report {
            self.shared.log.line(&line);
        }
    }

    /// The host holding the upstream connections, for status views and tests.
    pub fn host(&self) -> &Host {
        &self.shared.host
    }

    /// The mode it serves.
    pub fn mode(&self) -> Mode {
        self.shared.mode
    }

    /// Who the gateway is and what it offers, for `initialize`.
    pub fn server_config(&self) -> ServerConfig {
        let mut config = ServerConfig::dual_era(self.shared.implementation.clone());
        config.capabilities = match self.shared.mode {
            Mode::Category => crate::category::capabilities(),
            Mode::Passthrough => crate::passthrough::capabilities(&self.shared),
            Mode::Meta => crate::meta::capabilities(),
        };
        config.instructions = match self.shared.mode {
            Mode::Category => Some(crate::category::instructions(&self.shared)),
            Mode::Passthrough => crate::passthrough::instructions(&self.shared),
            Mode::Meta => None,
        };
        config
    }

    /// Serves one client on this process's stdin and stdout until stdin ends, then stops the
    /// upstream servers.
    pub async fn serve_stdio(self) -> std::io::Result<()> {
        let config = self.server_config();
        let host = self.shared.host.clone();
        let result = mcp_stdio::serve_stdio(config, self).await;
        host.shutdown().await;
        result
    }

    /// Serves any number of clients over Streamable HTTP on `listener` (bind it to
    /// `127.0.0.1`), until the task is dropped or accepting fails.
    pub async fn serve_http(
        self,
        listener: tokio::net::TcpListener,
        mut http: mcp_http::HttpServerConfig,
    ) -> std::io::Result<()> {
        http.server = self.server_config();
        mcp_http::serve_http(listener, http, self).await
    }

    /// Stops the upstream servers.
    pub async fn shutdown(&self) {
        self.shared.host.shutdown().await;
    }
}

impl Handler for Gateway {
    async fn handle(
        &self,
        request: ClientRequest,
        context: RequestContext,
    ) -> Result<RawJson, ErrorObject> {
        self.shared.routes.register(&context);
        match self.shared.mode {
            Mode::Category => crate::category::handle(&self.shared, request, context).await,
            Mode::Passthrough => crate::passthrough::handle(&self.shared, request, context).await,
            Mode::Meta => crate::meta::handle(&self.shared, request, context).await,
        }
    }

    fn notified(&self, session: SessionKey, notification: ClientNotification) {
        if self.shared.mode == Mode::Passthrough {
            crate::passthrough::notified(&self.shared, session, notification);
        }
    }

    fn closed(&self, session: SessionKey) {
        self.shared.routes.closed(session);
    }

    fn tool_schema(&self, name: &str) -> Option<RawJson> {
        match self.shared.mode {
            Mode::Passthrough => crate::passthrough::tool_schema(&self.shared, name),
            // Their own tools mirror no argument into a header.
            Mode::Category | Mode::Meta => None,
        }
    }
}

/// The permission policy where the configuration says `ask` and no one can be asked. It
/// only ever fills in for `ask`: a `deny` from the policy would also override the file's
/// `allow` rules (a denial from either side wins), so `deny` here is `ask`, which the host
/// refuses since the gateway has no one to ask.
#[derive(Debug)]
struct UnattendedPolicy(Unattended);

impl Policy for UnattendedPolicy {
    fn decide(&self, _: &CallRequest<'_>) -> Decision {
        match self.0 {
            Unattended::Allow => Decision::Allow,
            Unattended::Deny => Decision::Ask,
        }
    }
}
