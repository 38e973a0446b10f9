//! The validated configuration the rest of the host uses: servers with their transport, limits,
//! tool filters and permission rules, host-wide options, and the problems found on the way.
//! Nothing here is `Serialize`: files have their own shapes (see `parse` and `edit`).

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use mcp_protocol::ProtocolVersion;
use url::Url;

use super::secret::Secret;
use crate::permission::ServerRules;

/// The default for `request_timeout_ms` (seed 000): 30 seconds.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// The default for `ping_interval_ms` of an HTTP server: a server silent for 30 seconds is
/// pinged, so one that vanished without a word (a dropped route, a host that lost power) is
/// found within a minute, not at the next call. A stdio server is not pinged unless its entry
/// asks: its exit is seen at once.
pub const DEFAULT_PING_INTERVAL: Duration = Duration::from_secs(30);
/// The default for `ping_timeout_ms`: how long that ping may go unanswered, with nothing else
/// heard, before the connection is given up and made again.
pub const DEFAULT_PING_TIMEOUT: Duration = Duration::from_secs(10);
/// The default for `mcp.max_connections`: room for a power user's 15-30 servers and more
/// (seed 003's 10 left a third of such a setup waiting).
pub const DEFAULT_MAX_CONNECTIONS: usize = 64;
/// The default for `mcp.max_result_bytes`: 1 MiB of tool result handed to a model per call.
pub const DEFAULT_MAX_RESULT_BYTES: usize = 1 << 20;

/// Which layer a server's definition comes from, lowest precedence first: the user's own
/// (global) file, the project's files, then the user's private file for this project (local),
/// as Claude Code orders its user, project and local scopes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum Scope {
    /// The user's file (`MCP_HOST_CONFIG`, or `mcp-host/config.json` in the config directory):
    /// every project sees it. Claude Code's `user` scope.
    Global,
    /// The project's files: `<cwd>/.mcp.json`, then `<cwd>/.mcp-host/config.json`. They come
    /// with the repository, so their servers run only once approved.
    Project,
    /// The user's private file for one project, kept outside the project's tree (in the global
    /// file's directory, under `projects/`, named after the project's canonical path): what the
    /// user adds to one project without sharing it, secrets included. Claude Code's `local`
    /// scope, its default.
    Local,
}

impl Scope {
    /// `global`, `project` or `local`, as the `list` and `/mcp` views show it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Global => "global",
            Self::Project => "project",
            Self::Local => "local",
        }
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The two file shapes that are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum FileFormat {
    /// Seed 000's `{"version":1,"mcp":{"servers":{…}}}`: `config.json`, read and written.
    Native,
    /// The common `{"mcpServers":{…}}` shape (`.mcp.json`, Claude Desktop): read only.
    McpServers,
}

/// One configuration file and where it stands.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ConfigFile {
    /// Where it is.
    pub path: PathBuf,
    /// Which layer it belongs to.
    pub scope: Scope,
    /// Its shape.
    pub format: FileFormat,
}

impl ConfigFile {
    /// A file of `scope` in `format` at `path`.
    pub fn new(path: impl Into<PathBuf>, scope: Scope, format: FileFormat) -> Self {
        Self {
            path: path.into(),
            scope,
            format,
        }
    }
}

/// What happened when a file was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum FileStatus {
    /// Read; its servers are in the result (those without problems).
    Loaded,
    /// Not there, which is fine.
    Missing,
    /// Unreadable, not JSON or of an unknown version: none of its servers were taken, and a
    /// [`Problem`] says why. The other files still count.
    Failed,
}

/// A file that was looked at, for `list` and diagnostics.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct FileReport {
    /// The file.
    pub file: ConfigFile,
    /// What came of it.
    pub status: FileStatus,
}

/// How serious a [`Problem`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Severity {
    /// Something was ignored or assumed (an unknown field, a missing `version`); everything
    /// else still applies.
    Warning,
    /// A server (or a whole file, when `server` is `None`) was not taken.
    Error,
}

/// Something wrong in a file, named precisely enough to fix: the file, the server id and the
/// field. The message never quotes a value from the file (a value may be a secret); it may
/// name an environment variable.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Problem {
    /// Warning or error.
    pub severity: Severity,
    /// The file.
    pub file: PathBuf,
    /// The server id, when the problem is in one server's entry.
    pub server: Option<String>,
    /// The field, as a dotted path inside the server's entry (`headers.Authorization`,
    /// `oauth.token_url`) or inside the file (`version`, `mcp.max_connections`).
    pub field: Option<String>,
    /// What is wrong, lower case.
    pub message: String,
}

impl Problem {
    /// Whether this problem disabled a server or a file.
    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let level = match self.severity {
            Severity::Warning => "warning",
            Severity::Error => "error",
        };
        write!(f, "{level}: {}", self.file.display())?;
        if let Some(server) = &self.server {
            write!(f, ": server `{server}`")?;
        }
        if let Some(field) = &self.field {
            write!(f, ": field `{field}`")?;
        }
        write!(f, ": {}", self.message)
    }
}

/// How to start a stdio server. The host builds an `mcp_stdio::StdioConfig` from it
/// ([`ConfiguredServer::stdio_config`]).
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct StdioTransport {
    /// The program: a path, or a name looked up on `PATH`.
    pub command: String,
    /// Its arguments. They are shown in diagnostics: put secrets in `env`, not here.
    pub args: Vec<String>,
    /// The program as diagnostics, lists and approvals show it: as written in the file when
    /// it reads a variable whose name says it holds a credential (`${API_TOKEN}`), else as run.
    pub shown_command: String,
    /// The arguments as shown, by the same rule, each on its own: `--key=${API_KEY}` rather
    /// than the key.
    pub shown_args: Vec<String>,
    /// Its working directory (relative paths in files are resolved against the project
    /// directory); the host's when `None`.
    pub cwd: Option<PathBuf>,
    /// Variables set for it, secrets resolved.
    pub env: Vec<(String, Secret)>,
    /// The members of `env` whose value the entry takes from the host's environment
    /// (`{"env": "VAR"}`), as (name, `VAR`): what an approval question names instead of the
    /// value, which is the user's own and may be a key.
    pub env_from: Vec<(String, String)>,
    /// Pass the host's whole environment instead of `mcp-stdio`'s allow-list.
    pub inherit_env: bool,
}

/// Where an HTTP server is. The host builds an `mcp_http::HttpConfig` from it
/// ([`ConfiguredServer::http_config`]).
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct HttpTransport {
    /// The MCP endpoint (an `http` or `https` URL).
    pub url: Url,
    /// Headers sent on every request, secrets resolved. Names are valid header names.
    pub headers: Vec<(String, Secret)>,
    /// `true` for the deprecated HTTP+SSE transport only (`"transport": "sse"`, `sse://`);
    /// `false` for Streamable HTTP with the spec's fallback to HTTP+SSE.
    pub legacy_sse: bool,
}

/// How to reach a server.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Transport {
    /// A local program speaking MCP on stdin/stdout.
    Stdio(StdioTransport),
    /// A remote (or local) server over HTTP.
    Http(HttpTransport),
}

impl Transport {
    /// `stdio`, `http` or `sse`, as files and the `/mcp` view spell it.
    pub fn kind(&self) -> &'static str {
        self.transport_kind().as_str()
    }

    /// The kind without its details, as the status view and a consumer branch on it.
    pub fn transport_kind(&self) -> crate::TransportKind {
        match self {
            Self::Stdio(_) => crate::TransportKind::Stdio,
            Self::Http(h) if h.legacy_sse => crate::TransportKind::Sse,
            Self::Http(_) => crate::TransportKind::Http,
        }
    }
}

/// OAuth settings for an HTTP server. Every endpoint given here overrides discovery; what is
/// missing is discovered (RFC 9728, then RFC 8414 / OpenID Connect).
#[derive(Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct OAuthConfig {
    /// The authorization endpoint.
    pub authorization_url: Option<Url>,
    /// The token endpoint.
    pub token_url: Option<Url>,
    /// The dynamic client registration endpoint (RFC 7591).
    pub registration_url: Option<Url>,
    /// A pre-registered client id.
    pub client_id: Option<String>,
    /// Its secret, for a confidential client.
    pub client_secret: Option<Secret>,
    /// The scope to ask for (space-separated); otherwise chosen as the spec says.
    pub scope: Option<String>,
}

/// One server, validated: everything the connection manager, the catalogue and the permission
/// hook need, with defaults applied and secrets resolved. `Debug` is derived: every field that
/// may hold a secret (the transport, `oauth`) redacts in its own `Debug`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ConfiguredServer {
    /// The id: `^[a-zA-Z0-9_-]{1,64}$`.
    pub id: String,
    /// The layer that defined it.
    pub source: Scope,
    /// The file that defined it.
    pub file: PathBuf,
    /// Whether to connect at start. A disabled server is still listed.
    pub enabled: bool,
    /// How to reach it.
    pub transport: Transport,
    /// How long one request may take (`request_timeout_ms`, default 30 s).
    pub request_timeout: Duration,
    /// Ping the server after this much silence (`ping_interval_ms`; 30 s for an HTTP server,
    /// none for a stdio one; `0` turns it off). Handshake era only: 2026-07-28 has no ping.
    pub ping_interval: Option<Duration>,
    /// How long that ping may go unanswered before the connection is lost
    /// (`ping_timeout_ms`, default 10 s).
    pub ping_timeout: Duration,
    /// OAuth settings (HTTP only).
    pub oauth: Option<OAuthConfig>,
    /// When set, only these tools (by the server's names) are exposed; the host applies both
    /// lists through `catalog::ToolFilter`.
    pub enabled_tools: Option<Vec<String>>,
    /// These tools are never exposed, even if in `enabled_tools`.
    pub disabled_tools: Vec<String>,
    /// Offer the server's resource operations to a model as tools (`expose_resources`,
    /// default `true`), if it declares `resources`.
    pub expose_resources: bool,
    /// Offer the server's prompt operations to a model as tools (`expose_prompts`, default
    /// `true`), if it declares `prompts`.
    pub expose_prompts: bool,
    /// Run the tools that may run as tasks (`taskSupport` `optional`) as tasks on every
    /// call (`optional_tools_as_tasks`, default `false`); `required` ones always are.
    pub optional_tools_as_tasks: bool,
    /// Permission rules for its tools, as the file wrote them. A project layer's `allow` is
    /// kept here and read as `ask` by `setup::entry`, the one place trust in a layer is decided.
    pub permission: ServerRules,
    /// The most bytes of one result handed on: the server's `max_result_bytes`, else the
    /// host's.
    pub max_result_bytes: usize,
    /// A protocol revision to use instead of negotiating, which pins its era too; always one a
    /// session speaks ([`ProtocolVersion::KNOWN`], 2026-07-28 included).
    pub protocol_version: Option<ProtocolVersion>,
    /// What a user approves when they trust a project's server: a SHA-256 (hex) of the entry
    /// as written, less the members that neither start anything nor send anything anywhere
    /// (`enabled`, timeouts, tool lists, permissions, limits). Editing the command, its
    /// arguments, environment, URL or headers changes it, and the approval with it
    /// (`crate::trust`).
    pub fingerprint: String,
    /// The variables of the host's environment the entry reads (its `{"env": …}` references,
    /// in file order): what it would take from the user's environment and hand to a server,
    /// which is what a user must see before approving a project's server.
    pub reads_env: Vec<String>,
}

impl ConfiguredServer {
    /// An `mcp_stdio::StdioConfig` for a stdio server, with `mcp-stdio`'s default limits:
    /// named by the server id, secrets passed as the environment. `None` for an HTTP server.
    #[cfg(feature = "stdio")]
    pub fn stdio_config(&self) -> Option<mcp_stdio::StdioConfig> {
        let Transport::Stdio(t) = &self.transport else {
            return None;
        };
        let mut c = mcp_stdio::StdioConfig::new(&self.id, &t.command, &t.args);
        c.cwd.clone_from(&t.cwd);
        c.env = t
            .env
            .iter()
            .map(|(k, v)| (k.clone(), v.secret().to_owned()))
            .collect();
        c.inherit_env = t.inherit_env;
        Some(c)
    }

    /// An `mcp_http::HttpConfig` for an HTTP server, with `mcp-http`'s default limits: named by
    /// the server id, configured headers set, the transport forced to legacy SSE when asked.
    /// No authorization hook: the host adds its OAuth hook. `None` for a stdio server.
    #[cfg(feature = "http")]
    pub fn http_config(&self) -> Option<mcp_http::HttpConfig> {
        let Transport::Http(t) = &self.transport else {
            return None;
        };
        let mut c = mcp_http::HttpConfig::new(&self.id, t.url.as_str());
        c.headers = t
            .headers
            .iter()
            .map(|(k, v)| (k.clone(), v.secret().to_owned()))
            .collect();
        if t.legacy_sse {
            c.protocol = mcp_http::HttpProtocol::LegacySse;
        }
        Some(c)
    }
}

/// A URL as a person may see it (a table, a log, an error): scheme, host, port and path, with
/// `[redacted]` for a path segment that is or may be a key (`/mcp/<token>`, `/key/<value>`,
/// see `redact::is_secret_segment`), and `?[redacted]` where a query was, which may carry a
/// key; never user information.
pub fn shown_url(url: &Url) -> String {
    let mut out = format!("{}://", url.scheme());
    if let Some(host) = url.host_str() {
        out.push_str(host);
    }
    if let Some(port) = url.port() {
        out.push_str(&format!(":{port}"));
    }
    out.push_str(&crate::redact::shown_path(url));
    if url.query().is_some() {
        out.push_str("?[redacted]");
    }
    out
}

/// A URL as shown in diagnostics ([`shown_url`], quoted).
pub(super) struct ShownUrl<'a>(pub(super) &'a Url);

impl fmt::Debug for ShownUrl<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", shown_url(self.0))
    }
}

/// A URL still in the text the user gave, shown like [`ShownUrl`]; text that does not parse
/// as a URL is not shown at all (it may be a key pasted in the wrong place).
pub(super) struct ShownUrlText<'a>(pub(super) &'a str);

impl fmt::Debug for ShownUrlText<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match Url::parse(self.0) {
            Ok(url) => ShownUrl(&url).fmt(f),
            Err(_) => f.write_str("[not a URL]"),
        }
    }
}

struct Names<'a>(&'a [(String, Secret)]);

impl fmt::Debug for Names<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map()
            .entries(self.0.iter().map(|(k, _)| (k, "[redacted]")))
            .finish()
    }
}

impl fmt::Debug for StdioTransport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StdioTransport")
            .field("command", &self.shown_command)
            .field("args", &self.shown_args)
            .field("cwd", &self.cwd)
            .field("env", &Names(&self.env))
            .field("env_from", &self.env_from)
            .field("inherit_env", &self.inherit_env)
            .finish()
    }
}

impl fmt::Debug for HttpTransport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpTransport")
            .field("url", &ShownUrl(&self.url))
            .field("headers", &Names(&self.headers))
            .field("legacy_sse", &self.legacy_sse)
            .finish()
    }
}

impl fmt::Debug for Transport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Stdio(t) => t.fmt(f),
            Self::Http(t) => t.fmt(f),
        }
    }
}

impl fmt::Debug for OAuthConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OAuthConfig")
            .field(
                "authorization_url",
                &self.authorization_url.as_ref().map(ShownUrl),
            )
            .field("token_url", &self.token_url.as_ref().map(ShownUrl))
            .field(
                "registration_url",
                &self.registration_url.as_ref().map(ShownUrl),
            )
            .field("client_id", &self.client_id)
            .field("client_secret", &self.client_secret)
            .field("scope", &self.scope)
            .finish()
    }
}

/// Host-wide options from `mcp` (project over global, per option).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct HostConfig {
    /// How many servers may run at once (`mcp.max_connections`, default 64); the rest wait
    /// for a turn in configuration order.
    pub max_connections: usize,
    /// The result size limit for servers that set none (`mcp.max_result_bytes`, default
    /// 1 MiB).
    pub max_result_bytes: usize,
}

impl Default for HostConfig {
    fn default() -> Self {
        Self {
            max_connections: DEFAULT_MAX_CONNECTIONS,
            max_result_bytes: DEFAULT_MAX_RESULT_BYTES,
        }
    }
}

/// A server entry that was not taken, so that status views can list it with its problems.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RejectedServer {
    /// The id as written (it may be the invalid part).
    pub id: String,
    /// The layer of the file.
    pub source: Scope,
    /// The file.
    pub file: PathBuf,
    /// The entry's [`ConfiguredServer::fingerprint`], when it is an object.
    pub fingerprint: Option<String>,
}

/// The result of loading: the effective servers, the entries that were refused, every problem
/// found, the host options, and which files were read. Loading never fails as a whole: a bad
/// file or entry becomes a [`Problem`] and the rest still loads.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct LoadedConfig {
    /// The effective servers, enabled or not, sorted by id.
    pub servers: Vec<ConfiguredServer>,
    /// Entries refused because of an error: each has at least one [`Problem`] with its id.
    /// An id refused in one layer may still be served by another layer's valid entry.
    pub rejected: Vec<RejectedServer>,
    /// Errors and warnings, in file order.
    pub problems: Vec<Problem>,
    /// Host-wide options.
    pub host: HostConfig,
    /// The files looked at, lowest precedence first.
    pub files: Vec<FileReport>,
}

impl LoadedConfig {
    /// The effective server with this id.
    pub fn server(&self, id: &str) -> Option<&ConfiguredServer> {
        self.servers.iter().find(|s| s.id == id)
    }

    /// The servers to connect at start.
    pub fn enabled_servers(&self) -> impl Iterator<Item = &ConfiguredServer> {
        self.servers.iter().filter(|s| s.enabled)
    }

    /// Whether any problem is an error (a server or a file was not taken).
    pub fn has_errors(&self) -> bool {
        self.problems.iter().any(Problem::is_error)
    }

    /// The problems about server `id`.
    pub fn problems_for<'a>(&'a self, id: &'a str) -> impl Iterator<Item = &'a Problem> {
        self.problems
            .iter()
            .filter(move |p| p.server.as_deref() == Some(id))
    }

    /// The problems about `path`.
    pub fn problems_in<'a>(&'a self, path: &'a Path) -> impl Iterator<Item = &'a Problem> {
        self.problems.iter().filter(move |p| p.file == path)
    }
}
