//! The gateway as an MCP server: one [`Host`] holds the upstream connections for every
//! client in front (one over stdio, any number over HTTP), and each request is answered by
//! the mode's module (`category`, `passthrough`, `meta`).
//!
//! This module starts the gateway (the host, with the permission policy for unattended
//! calls and the way back for upstream requests) and serves it; what the modes share is in
//! `shared`, `routes`, `reply` and `call_log`, which import nothing from here.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use mcp_host::permission::{CallRequest, Decision, Policy};
use mcp_host::{Host, HostOptions};
use mcp_protocol::schema::{ClientNotification, ClientRequest, Implementation, SubscriptionFilter};
use mcp_protocol::{ErrorObject, RawJson, ServerConfig};
use mcp_session::{Handler, RequestContext, SessionKey, Sessions};

use crate::cache::{DEFAULT_CACHE_TTL, ListCache};
use crate::call_log::CallLog;
use crate::cluster::tasks::TaskShare;
use crate::file::{self, FileError, GatewayFile, Loaded, Unattended};
use crate::metrics::{self, Metrics};
use crate::mode::Mode;
use crate::mode::category::CategoryMode;
use crate::mode::meta::MetaMode;
use crate::mode::passthrough::PassthroughMode;
use crate::reload::{self, Reloaded};
use crate::routes::{Forwarder, Routes};
use crate::shared::Shared;
use crate::trace::{TraceExport, TraceStats, Tracer};
use crate::upstream_state::Upstreams;
use crate::upstreams;

/// How a gateway runs, beyond its file.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct GatewayOptions {
    /// Who the gateway is to its clients and to the upstream servers.
    pub implementation: Implementation,
    /// Where its OpenTelemetry spans go, if anywhere ([`TraceExport::from_env`]).
    pub traces: Option<TraceExport>,
    /// The log file when the gateway file names no `logFile`. Every log line is also a
    /// `tracing` event (target `mcp_gateway`), whatever this says.
    pub log_file: Option<PathBuf>,
    /// Whether the gateway writes its lines to the log file itself (the default). Off when
    /// the process's own `tracing` subscriber writes to that file, as `mcp-host serve` does
    /// (open it with [`open_log_file`](crate::open_log_file)), so that no line is written
    /// twice.
    pub write_log_file: bool,
    /// Where the upstreams' eras are remembered between runs
    /// ([`HostOptions::era_file`](mcp_host::HostOptions::era_file)), so that a restarted gateway
    /// does not probe again an upstream that ignores `server/discover`; `None`, the default,
    /// remembers only for this process.
    pub era_file: Option<PathBuf>,
}

impl GatewayOptions {
    /// `mcp-host-gateway` with this crate's version, logging to standard error.
    pub fn new() -> Self {
        Self {
            implementation: Implementation::new(
                "mcp-host-gateway".to_owned(),
                env!("CARGO_PKG_VERSION").to_owned(),
            ),
            traces: None,
            log_file: None,
            write_log_file: true,
            era_file: None,
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
    shared: Arc<Shared>,
    /// The mode it serves, with that mode's own state.
    mode: Arc<dyn Mode>,
    /// Where its tasks are shared with the other replicas, once it serves HTTP with `cluster`
    /// and `store` (`cluster/tasks.rs`).
    task_share: Arc<OnceLock<Arc<TaskShare>>>,
}

/// Why a gateway with `cluster` and `store` is not served twice.
const SERVED_ONCE: &str = "this gateway already serves HTTP with its file's cluster and store; it is one replica and serves one listener (start another gateway for another)";

impl Gateway {
    /// Starts the gateway and returns once every upstream server has settled (ready, failed or
    /// waiting for authorization): [`launch`](Self::launch), then
    /// [`settled`](Self::settled). For a caller that wants the whole set before it serves
    /// (a test, a one-shot tool); `mcp-host serve` launches.
    pub async fn start(loaded: Loaded, options: GatewayOptions) -> std::io::Result<Self> {
        let gateway = Self::launch(loaded, options).await?;
        gateway.settled().await;
        Ok(gateway)
    }

    /// Starts the gateway and returns at once, its upstream servers connecting in the
    /// background: each joins when it is ready (clients are told with `list_changed`), and
    /// one that fails is reported and retried like any host server, never stopping the
    /// gateway. Each upstream's state is logged as it settles, then the mode's summary.
    pub async fn launch(loaded: Loaded, options: GatewayOptions) -> std::io::Result<Self> {
        let Loaded {
            path,
            file,
            mode,
            entries,
            warnings,
            env,
            oauth,
            store,
        } = loaded;
        let log_path = file.log_file.clone().or(options.log_file.clone());
        let log = CallLog::open(log_path.as_deref(), options.write_log_file)?;
        let routes = Arc::new(Routes::default());
        let unattended = file.unattended.unwrap_or_default();
        let mut host_options = HostOptions::new(
            options.implementation.clone(),
            Arc::new(UnattendedPolicy(unattended)),
        );
        host_options.era_file = options.era_file.clone();
        host_options.requests = Some(Arc::new(Forwarder {
            routes: Arc::clone(&routes),
            relay_logs: matches!(mode, file::Mode::Passthrough),
        }));
        let host = Host::new(host_options);
        let ttl = file
            .cache_ttl_seconds
            .map_or(DEFAULT_CACHE_TTL, Duration::from_secs);
        // The one place that looks at which mode it is.
        let mode: Arc<dyn Mode> = match mode {
            file::Mode::Category => Arc::new(CategoryMode::new(ListCache::new(ttl))),
            file::Mode::Passthrough => Arc::new(PassthroughMode::default()),
            file::Mode::Meta => Arc::new(MetaMode::new(ListCache::new(ttl))),
        };
        let first = upstreams::diff(&GatewayFile::default(), &file);
        let (traces, trace_warning) = Tracer::new(options.traces.clone());
        let shared = Arc::new_cyclic(|me| Shared {
            host,
            file: Mutex::new(Arc::new(file)),
            path,
            env,
            oauth,
            log,
            routes,
            implementation: options.implementation,
            traces,
            upstreams: Upstreams::default(),
            metrics: Metrics::default(),
            me: me.clone(),
            suspensions: Arc::default(),
            tasks: mcp_session::Tasks::default(),
            rates: crate::store::rates(store.as_ref()),
            auth: OnceLock::new(),
        });
        for warning in &warnings {
            shared.log.line(&format!("warning: {warning}"));
        }
        if let Some(warning) = trace_warning {
            shared.log.line(&format!("warning: {warning}"));
        }
        mode.begin(&shared);
        upstreams::apply(&shared, entries, &first).await;
        // The mode's start-up summary (seed 004 §8), once every upstream has settled.
        let summary = Arc::clone(&mode);
        let started = shared.upstreams.started.clone();
        upstreams::report_when_settled(
            &shared,
            first.added,
            move |shared| summary.start(shared),
            Some(started),
        );
        Ok(Self {
            shared,
            mode,
            task_share: Arc::default(),
        })
    }

    /// Resolves once every upstream server of the file at start-up has settled once (ready,
    /// failed, waiting for authorization or disabled) and the start-up summary is logged.
    /// Serving never waits for this.
    pub async fn settled(&self) {
        let mut started = self.shared.upstreams.started.subscribe();
        let _ = started.wait_for(|done| *done).await;
    }

    /// Reads the gateway file again and applies it without dropping a client: upstreams
    /// added are started, removed ones stopped, changed ones restarted, the others left
    /// alone, and the clients are told of the lists that change. A file that fails to load
    /// changes nothing: the error is logged and returned.
    pub async fn reload(&self) -> Result<Reloaded, FileError> {
        let (reloaded, change, before) = reload::reload(&self.shared, self.mode.kind()).await?;
        self.mode.reloaded(&self.shared, &change, &before);
        let mut started = change.added;
        started.extend(change.changed);
        upstreams::report_when_settled(&self.shared, started, |_| Vec::new(), None);
        Ok(reloaded)
    }

    /// Reloads the gateway file whenever its content changes, looking every `every` (its
    /// modification time and size, then a hash of its content), for as long as the gateway
    /// lives.
    pub fn watch_file(&self, every: Duration) {
        let shared = Arc::downgrade(&self.shared);
        let mode = Arc::clone(&self.mode);
        let task_share = Arc::clone(&self.task_share);
        reload::watch(shared.clone(), every, move || {
            let gateway = shared.upgrade().map(|shared| Gateway {
                shared,
                mode: Arc::clone(&mode),
                task_share: Arc::clone(&task_share),
            });
            async move {
                if let Some(gateway) = gateway {
                    // A failure is logged by the reload and keeps the configuration.
                    let _ = gateway.reload().await;
                }
            }
        });
    }

    /// The host holding the upstream connections, for status views and tests.
    pub fn host(&self) -> &Host {
        &self.shared.host
    }

    /// How many of its spans were exported and dropped so far.
    pub fn trace_stats(&self) -> TraceStats {
        self.shared.traces.stats()
    }

    /// The mode it serves.
    pub fn mode(&self) -> file::Mode {
        self.mode.kind()
    }

    /// Who the gateway is and what it offers, for `initialize`.
    pub fn server_config(&self) -> ServerConfig {
        let mut config = ServerConfig::dual_era(self.shared.implementation.clone());
        config.capabilities = self.mode.capabilities(&self.shared);
        config.instructions = self.mode.instructions(&self.shared);
        config
    }

    /// Serves one client on this process's stdin and stdout until stdin ends, then stops the
    /// upstream servers and sends the spans still queued.
    pub async fn serve_stdio(self) -> std::io::Result<()> {
        let config = self.server_config();
        self.shared.traces.set_transport("pipe");
        let shared = Arc::clone(&self.shared);
        let result = mcp_stdio::serve_stdio(config, self).await;
        shared.host.shutdown().await;
        shared.traces.flush().await;
        result
    }

    /// Serves any number of clients over Streamable HTTP on `listener` (bind it to
    /// `127.0.0.1`), until the task is dropped or accepting fails. With the file's `cluster`
    /// and `store` the gateway is one replica among others, so it serves once: a second
    /// call is an error at once.
    pub async fn serve_http(
        self,
        listener: tokio::net::TcpListener,
        mut http: mcp_http::HttpServerConfig,
    ) -> std::io::Result<()> {
        http.server = self.server_config();
        http.trace_headers = true;
        // The file's `auth`: every request needs an access token of its issuer.
        if let Some(block) = self.shared.file().auth.clone() {
            let local = listener.local_addr()?;
            let guard = block
                .guard(local, &http.path, &self.shared.env, &self.shared.auth)
                .map_err(std::io::Error::other)?;
            if block.public_url.is_none() && !local.ip().is_loopback() {
                self.shared.log.line(&format!(
                    "warning: auth.publicUrl is not set, so tokens must be for http://{local}{}, which clients elsewhere do not use; set it to the URL they reach the gateway by",
                    http.path
                ));
            }
            self.shared.log.line(&format!(
                "requests need an access token of {} (metadata at {})",
                block.issuer,
                guard.metadata_url()
            ));
            http.authenticator = Some(guard);
        }
        // The file's `cluster`: session ids sealed with the replicas' keys, the ends of
        // sessions in the file's `store` (opened here again: a pool of its own).
        let file = self.shared.file();
        if let Some(block) = &file.cluster {
            let store = file
                .store
                .as_ref()
                .map(|store| store.open(&self.shared.env))
                .transpose()
                .map_err(std::io::Error::other)?;
            let seal = crate::cluster::sealed_sessions(block, &self.shared.env, store.as_ref())
                .map_err(std::io::Error::other)?;
            self.shared.log.line(&format!(
                "session ids are sealed; a session lives at most {} s, whichever replica serves it; ends of sessions are kept {}",
                seal.max_age().as_secs(),
                if store.is_some() {
                    "in the store"
                } else {
                    "in this process only"
                }
            ));
            // The gateway's tasks too, when the replicas share a store.
            if let Some(store) = &store {
                // Once for the gateway: the replica it is among the others (its name, in the
                // ids it sends, the channels it hears, its heartbeat) is one, and a second
                // serve would be a second replica holding the same tasks and suspended calls.
                if self.task_share.get().is_some() {
                    return Err(std::io::Error::other(SERVED_ONCE));
                }
                let share = TaskShare::start(
                    store.redis.clone(),
                    &store.prefix,
                    Arc::clone(&seal),
                    &self.shared.tasks,
                )
                .await?;
                if self.task_share.set(share).is_err() {
                    return Err(std::io::Error::other(SERVED_ONCE));
                }
                // And the retries of suspended calls, which any replica may receive.
                crate::cluster::resume::ResumeShare::start(
                    store.redis.clone(),
                    &store.prefix,
                    Arc::clone(&seal),
                    &self.shared.suspensions,
                )?;
            }
            http.sealed_sessions = Some(seal);
        }
        self.shared.traces.set_transport("tcp");
        http.observer = Some(Arc::new(self.clone()));
        mcp_http::serve_http(listener, http, self).await
    }

    /// Stops the upstream servers, then sends the spans still queued (waiting at most twice
    /// the export timeout).
    pub async fn shutdown(&self) {
        self.shared.host.shutdown().await;
        self.shared.traces.flush().await;
    }
}

impl Handler for Gateway {
    async fn handle(
        &self,
        request: ClientRequest,
        context: RequestContext,
    ) -> Result<RawJson, ErrorObject> {
        self.shared.routes.register(&context);
        let session = context.session;
        if let Some(caller) = crate::auth::caller_of(&context) {
            self.shared.log.caller(session, caller);
        }
        let logged = self.shared.log.request(&request, session);
        let counted = self.shared.metrics.request(request.method());
        let span = self.shared.traces.server(&request, &context);
        // `tasks/*` are the gateway's own in every mode (`tasks.rs`), never an upstream's.
        let answer = span
            .run(async {
                let share = self.task_share.get().map(|share| &**share);
                match crate::cluster::tasks::answer(share, &self.shared.tasks, &request, &context)
                    .await
                {
                    Some(answer) => answer,
                    None => self.mode.handle(&self.shared, request, context).await,
                }
            })
            .await;
        counted.finish(&answer);
        if let Some(logged) = logged {
            self.shared.log.answered(logged, session, &answer);
        }
        answer
    }

    /// Each session is told what the gateway offers when it begins: `mcp-host serve` serves
    /// while its upstreams connect, and a client that comes later gets what they offer.
    fn configure(&self, config: &mut ServerConfig) {
        config.capabilities = self.mode.capabilities(&self.shared);
        config.instructions = self.mode.instructions(&self.shared);
    }

    fn initialized(&self, session: SessionKey, client: &mcp_protocol::ClientInfo) {
        self.shared.log.initialized(session, client);
    }

    fn notified(&self, session: SessionKey, notification: ClientNotification) {
        self.mode.notified(&self.shared, session, notification);
    }

    fn listening(&self, session: SessionKey, filter: &SubscriptionFilter, sessions: &Sessions) {
        // The stream hears what `Routes::broadcast` sends even if its client asked nothing
        // else of this gateway yet.
        self.shared.routes.join(sessions);
        if let Some(uris) = &filter.resource_subscriptions {
            self.mode.listening(&self.shared, session, uris.clone());
        }
    }

    fn closed(&self, session: SessionKey) {
        // Before the routes forget the session: the mode reads what it had subscribed to.
        self.mode.closed(&self.shared, session);
        self.shared.log.closed(session);
        self.shared.routes.closed(session);
    }

    fn tool_schema(&self, name: &str) -> Option<RawJson> {
        self.mode.tool_schema(&self.shared, name)
    }
}

impl mcp_http::Observer for Gateway {
    fn metrics(&self, out: &mut mcp_http::metrics::Exposition) {
        let (rule, states) = self.readiness_inputs();
        self.shared.metrics.write(out, &rule, &states);
    }

    fn readiness(&self) -> mcp_http::Readiness {
        let (rule, states) = self.readiness_inputs();
        metrics::readiness(&rule, &states)
    }
}

impl Gateway {
    /// The file's `ready` rule as last loaded, and each upstream's state now (never cached:
    /// upstreams join and leave at run time).
    fn readiness_inputs(&self) -> (file::Ready, metrics::States) {
        let rule = self.shared.file().ready.clone().unwrap_or_default();
        let states = self
            .shared
            .host
            .status()
            .into_iter()
            .map(|s| (s.id, s.state))
            .collect();
        (rule, states)
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
