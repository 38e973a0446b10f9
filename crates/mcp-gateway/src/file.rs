//! The gateway file (seed 004 §4, as written there): the upstream servers under `mcpServers`
//! (Modular MCP's format, which `mcp-host` reads too), and what the gateway adds: `mode`,
//! `categories`, the schema cache's lifetime, the call log and what an unattended call that
//! would ask a person gets.
//!
//! The same types read the file and generate its JSON Schema ([`schema`]), so the two cannot
//! drift. The upstream servers are read a second time by `mcp-host`'s configuration loader,
//! which owns their meaning (secrets, environment, OAuth, permissions); the types here only
//! describe those fields for the schema and carry seed 004's `description`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use mcp_host::ServerEntry;
use mcp_host::config::{ConfigFile, Env, FileFormat, Scope, Severity};
use mcp_host::oauth::OAuthContext;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The whole gateway file.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[non_exhaustive]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schemars(title = "mcp-host gateway file")]
pub struct GatewayFile {
    /// The JSON Schema this file follows; editors use it, the gateway ignores it.
    #[serde(rename = "$schema", default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<String>,
    /// What the gateway serves: `category` (the default when `categories` is present),
    /// `passthrough` (the default otherwise) or `meta`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<Mode>,
    /// The upstream servers, by id (`^[a-zA-Z0-9_-]{1,64}$`).
    #[serde(default)]
    pub mcp_servers: BTreeMap<String, UpstreamServer>,
    /// Category mode's categories, by name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub categories: BTreeMap<String, Category>,
    /// How long upstream tool schemas are cached, in seconds (default 600); an upstream's
    /// `tools/list_changed` refreshes them sooner.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 86400))]
    pub cache_ttl_seconds: Option<u64>,
    /// A file the per-call log is appended to, instead of standard error. Standard output is
    /// never used: over stdio it carries MCP.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_file: Option<PathBuf>,
    /// What a call gets that the permission rules would ask a person about, since no one is
    /// at the gateway's terminal: `allow` (the default; the client in front of the gateway
    /// asks its own user about its tools) or `deny`. A `deny` rule is always kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unattended: Option<Unattended>,
    /// When the HTTP gateway's `GET /readyz` answers 200 (503 otherwise, naming the upstreams
    /// not ready): `all` (the default) when every upstream that is not disabled is ready, `any`
    /// when at least one is (or none is enabled), or a list of upstream ids that must all be
    /// ready.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready: Option<Ready>,
    /// Where replicas of this gateway keep what they share: `{"redis": "redis://…"}` (the
    /// password as `${VAR}`). Upstream OAuth tokens, the rules' rate counters and sessions go
    /// there instead of this machine (docs/gateway.md); read at start, not on reload.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub store: Option<crate::store::StoreBlock>,
    /// Over HTTP, accept only requests with an OAuth access token from this authorization
    /// server, minted for this gateway (the gateway as an OAuth 2.1 protected resource);
    /// read again on reload, but turned on or off only by a restart.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth: Option<crate::auth::AuthBlock>,
    /// Who may see and call which upstreams and tools, by the claims of the caller's access
    /// token, and how often: an ordered list, `deny` and `hide` rules before `allow`, a tool
    /// no rule allows hidden (docs/gateway.md). None: everything, for every caller. Needs
    /// `auth`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rules: Vec<crate::rules::Rule>,
    /// Over HTTP, what replicas behind one load balancer share so that any of them serves any
    /// session: the keys that seal session ids (docs/gateway.md "Many replicas"); read at
    /// start, not on reload.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster: Option<crate::cluster::ClusterBlock>,
}

/// When the gateway is ready for traffic (`GET /readyz`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[non_exhaustive]
#[serde(untagged)]
pub enum Ready {
    /// `all` or `any` of the upstreams that are not disabled.
    Rule(ReadyRule),
    /// These upstreams (keys of `mcpServers`), each of them.
    Servers(Vec<String>),
}

impl Default for Ready {
    /// `all`.
    fn default() -> Self {
        Self::Rule(ReadyRule::All)
    }
}

/// `all` or `any`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[non_exhaustive]
#[serde(rename_all = "lowercase")]
pub enum ReadyRule {
    /// Every upstream that is not disabled is ready.
    All,
    /// At least one upstream is ready, or none is enabled.
    Any,
}

/// What the gateway serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[non_exhaustive]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Two tools, `get-category-tools` and `call-category-tool`, in front of categories of
    /// upstream tools (seed 004).
    Category,
    /// The upstream servers' tools, resources and prompts as they are (namespaced when there
    /// are several).
    Passthrough,
    /// Tools about the upstream servers: list them, list and call their tools, list and read
    /// their resources, reload the file (seed 003).
    Meta,
}

impl Mode {
    /// The name in the file and in logs.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Category => "category",
            Self::Passthrough => "passthrough",
            Self::Meta => "meta",
        }
    }
}

/// What an unattended call gets where the rules say `ask`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize, JsonSchema)]
#[non_exhaustive]
#[serde(rename_all = "lowercase")]
pub enum Unattended {
    /// The call goes ahead.
    #[default]
    Allow,
    /// The call is refused.
    Deny,
}

/// How the gateway reaches an upstream server. `mcp-host`'s loader reads these entries; the
/// fields it accepts beyond seed 004's (`cwd`, `enabled`, `permission`, …) are listed so that
/// editors know them.
#[derive(Clone, Default, Deserialize, Serialize, JsonSchema)]
#[non_exhaustive]
pub struct UpstreamServer {
    /// What the server is for (seed 004 requires it; the gateway shows it in meta mode and in
    /// logs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// `stdio` (the default when `command` is given), `http` or `sse` (the deprecated
    /// HTTP+SSE transport).
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub kind: Option<UpstreamKind>,
    /// The program to start (stdio).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// Its arguments (stdio).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// Environment variables for the program (stdio): a string, in which `${VAR}` and
    /// `${VAR:-default}` take values from the gateway's own environment, or `{"env": "VAR"}`
    /// for the whole value.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, ConfigValue>,
    /// The program's working directory (stdio).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// The endpoint (http, sse).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Headers sent with every request (http, sse): a string, in which `${VAR}` and
    /// `${VAR:-default}` take values from the environment (`"Bearer ${TOKEN}"`), or
    /// `{"env": "VAR"}` for the whole value, so the file need not hold the secret.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, ConfigValue>,
    /// `false` leaves the server out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// How long a request waits for its answer, in milliseconds (default 30 000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_timeout_ms: Option<u64>,
    /// Permission rules: `{"default": "allow"|"ask"|"deny", "tools": {"name": …}}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permission: Option<Value>,
    /// OAuth settings for a protected HTTP server (see `docs/configuration.md`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oauth: Option<Value>,
    /// Every other field `mcp-host` reads (`enabled_tools`, `disabled_tools`,
    /// `protocol_version`, …); see `docs/configuration.md`.
    #[serde(flatten)]
    pub other: BTreeMap<String, Value>,
}

// The names of `env`, `headers` and the other fields, never their values, nor the URL,
// the arguments or `oauth`: any of them may hold a secret written in the file.
impl std::fmt::Debug for UpstreamServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UpstreamServer")
            .field("description", &self.description)
            .field("kind", &self.kind)
            .field("command", &self.command)
            .field("args", &self.args.len())
            .field("env", &self.env.keys().collect::<Vec<_>>())
            .field("cwd", &self.cwd)
            .field("url", &self.url.as_ref().map(|_| "<redacted>"))
            .field("headers", &self.headers.keys().collect::<Vec<_>>())
            .field("enabled", &self.enabled)
            .field("request_timeout_ms", &self.request_timeout_ms)
            .field("permission", &self.permission)
            .field("oauth", &self.oauth.as_ref().map(|_| "<redacted>"))
            .field("other", &self.other.keys().collect::<Vec<_>>())
            .finish()
    }
}

/// A value of `env` or `headers`: the text (with `${VAR}` references expanded by
/// `mcp-host`'s loader), or a reference to one variable of the gateway's environment. Both
/// count as secrets: never shown, redacted wherever an upstream quotes them.
#[derive(Clone, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[non_exhaustive]
#[serde(untagged)]
pub enum ConfigValue {
    /// The value, where `${VAR}` and `${VAR:-default}` are read from the environment and
    /// `$${` is a literal `${`.
    Text(String),
    /// `{"env": "VAR"}`: the whole value is the variable `VAR`, which must be set.
    Env {
        /// The variable's name.
        env: String,
    },
}

// A value may be a secret written in the file; a reference's name is not.
impl std::fmt::Debug for ConfigValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Text(_) => f.write_str("Text([redacted])"),
            Self::Env { env } => f.debug_struct("Env").field("env", env).finish(),
        }
    }
}

/// An upstream transport.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[non_exhaustive]
#[serde(rename_all = "lowercase")]
pub enum UpstreamKind {
    /// A local program over stdin and stdout.
    Stdio,
    /// Streamable HTTP.
    Http,
    /// The deprecated HTTP+SSE transport of 2024-11-05.
    Sse,
}

/// One category: a named, described set of upstream tools (seed 004 §3–4).
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[non_exhaustive]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Category {
    /// What the category is for: the model reads it in `get-category-tools`'s description.
    pub description: String,
    /// The upstream server the tools come from (a key of `mcpServers`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    /// Several upstream servers, for a category that spans them (seed 004 §13); names are
    /// looked up in each, in this order, and `mcp__<server>__<tool>` picks one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub servers: Vec<String>,
    /// Which tools.
    #[serde(default)]
    pub tools: CategoryTools,
}

impl Category {
    /// The servers it draws on: `server` first, then `servers`, without repeats.
    pub fn upstreams(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for s in self.server.iter().chain(&self.servers) {
            if !out.contains(&s.as_str()) {
                out.push(s);
            }
        }
        out
    }
}

/// Which upstream tools a category holds, and how they are changed.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[non_exhaustive]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CategoryTools {
    /// Tool names, bare or as `mcp__<server>__<tool>`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub include_names: Vec<String>,
    /// Glob patterns (`*` any run of characters, `?` one) over tool names: matching tools are
    /// included too.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub include_patterns: Vec<String>,
    /// Glob patterns of tools to leave out, whatever included them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub exclude_patterns: Vec<String>,
    /// Per tool (bare or prefixed name): disable it, or replace its description.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub overrides: BTreeMap<String, ToolOverride>,
}

/// A change to one tool.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[non_exhaustive]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ToolOverride {
    /// `false`: the tool is neither listed nor callable (default `true`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// Replaces the upstream's description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// The JSON Schema of the gateway file, generated from the types above (`mcp-host gateway
/// schema`; committed as `docs/gateway.schema.json`).
pub fn schema() -> Value {
    serde_json::to_value(schemars::schema_for!(GatewayFile)).unwrap_or(Value::Null)
}

/// What went wrong with a gateway file: the path, the field, the fix.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FileError {
    /// The file cannot be read.
    #[error("gateway file {}: cannot read it: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The file is not a gateway file.
    #[error("gateway file {}: {message}", path.display())]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong, with the field.
        message: String,
    },
}

/// A gateway file, read and checked, with the host's entries for its servers.
#[derive(Debug)]
#[non_exhaustive]
pub struct Loaded {
    /// Where it was read from.
    pub path: PathBuf,
    /// The file as written.
    pub file: GatewayFile,
    /// The mode: as written, else by whether there are categories.
    pub mode: Mode,
    /// One entry per upstream server, for [`mcp_host::Host::start`]; a server whose entry is
    /// wrong is in state `error` with the reason, the others still start.
    pub entries: Vec<ServerEntry>,
    /// What the user should know: unknown fields, categories naming unknown servers, repeated
    /// names. Warnings, not errors: the rest of the file still serves.
    pub warnings: Vec<String>,
    /// The environment and OAuth context it was read with, so that a reload (meta mode)
    /// reads it the same way.
    pub(crate) env: Env,
    pub(crate) oauth: Option<OAuthContext>,
    /// The file's `store`, opened.
    pub(crate) store: Option<crate::store::Store>,
}

/// Reads and checks the gateway file at `path`. Relative `cwd`s are taken from the file's
/// folder. With an OAuth context, protected HTTP upstreams log in with the host's OAuth (and
/// its token store). Only a file that cannot be read or is not a gateway file at all is an
/// error.
pub fn load(path: &Path, env: &Env, oauth: Option<&OAuthContext>) -> Result<Loaded, FileError> {
    let bytes = std::fs::read(path).map_err(|source| FileError::Read {
        path: path.to_owned(),
        source,
    })?;
    let file: GatewayFile = serde_json::from_slice(&bytes).map_err(|e| FileError::Invalid {
        path: path.to_owned(),
        message: format!("not a gateway file: {}", without_value(&e)),
    })?;
    let mode = file.mode.unwrap_or(if file.categories.is_empty() {
        Mode::Passthrough
    } else {
        Mode::Category
    });
    let mut warnings = Vec::new();
    // The file's `store`: the upstreams' tokens go there, not to this machine's store.
    let store = match &file.store {
        Some(block) => Some(block.open(env).map_err(|message| FileError::Invalid {
            path: path.to_owned(),
            message,
        })?),
        None => None,
    };
    let shared_oauth = store.as_ref().zip(oauth).map(|(s, o)| s.oauth(o));
    let oauth = shared_oauth.as_ref().or(oauth);
    if mode == Mode::Category && file.categories.is_empty() {
        return Err(FileError::Invalid {
            path: path.to_owned(),
            message: "mode `category` needs at least one entry in `categories`".to_owned(),
        });
    }
    if mode != Mode::Category && !file.categories.is_empty() {
        warnings.push(format!("categories: ignored in mode `{}`", mode.as_str()));
    }
    for (name, category) in &file.categories {
        let upstreams = category.upstreams();
        if upstreams.is_empty() {
            return Err(FileError::Invalid {
                path: path.to_owned(),
                message: format!("categories.{name}: names no server; set `server`"),
            });
        }
        for server in upstreams {
            if !file.mcp_servers.contains_key(server) {
                return Err(FileError::Invalid {
                    path: path.to_owned(),
                    message: format!(
                        "categories.{name}: server `{server}` is not a key of `mcpServers`"
                    ),
                });
            }
            // `__` separates the parts of `mcp__<server>__<tool>`; an id holding it would make
            // a prefixed tool name mean two things.
            if server.contains("__") {
                return Err(FileError::Invalid {
                    path: path.to_owned(),
                    message: format!(
                        "categories.{name}: server id `{server}` contains `__`, which separates the parts of `mcp__<server>__<tool>`; rename the server"
                    ),
                });
            }
        }
        // Tools are only ever picked by name or pattern: a category without either is empty,
        // which nothing else would show until a model asked for it and got no tools.
        if mode == Mode::Category
            && category.tools.include_names.is_empty()
            && category.tools.include_patterns.is_empty()
        {
            warnings.push(format!(
                "categories.{name}: no `tools` block with `includeNames` or `includePatterns`, so it has no tools; add `\"tools\": {{\"includePatterns\": [\"*\"]}}` for all of its servers' tools"
            ));
        }
        let mut seen = BTreeSet::new();
        for tool in &category.tools.include_names {
            if !seen.insert(tool.as_str()) {
                warnings.push(format!(
                    "categories.{name}.tools.includeNames: `{tool}` is listed twice"
                ));
            }
        }
    }
    if let Some(Ready::Servers(ids)) = &file.ready {
        for id in ids {
            if !file.mcp_servers.contains_key(id) {
                return Err(FileError::Invalid {
                    path: path.to_owned(),
                    message: format!("ready: `{id}` is not a key of `mcpServers`"),
                });
            }
        }
    }
    if let Some(auth) = &file.auth {
        auth.check().map_err(|message| FileError::Invalid {
            path: path.to_owned(),
            message,
        })?;
    }
    if let Some(cluster) = &file.cluster {
        cluster.seal(env).map_err(|message| FileError::Invalid {
            path: path.to_owned(),
            message,
        })?;
    }
    crate::rules::check(
        &file.rules,
        file.auth.is_some(),
        file.mcp_servers.keys().map(String::as_str),
    )
    .map_err(|message| FileError::Invalid {
        path: path.to_owned(),
        message,
    })?;
    let loaded = upstreams(path, env);
    for problem in &loaded.problems {
        if problem.severity == Severity::Warning {
            warnings.push(problem.to_string());
        }
    }
    // The gateway file is read as the user's own (global) layer: none of it awaits approval.
    let mut entries =
        mcp_host::setup::entries(&loaded, oauth, &mcp_host::trust::Approvals::default());
    for entry in &mut entries {
        entry.source = "gateway".to_owned();
    }
    Ok(Loaded {
        path: path.to_owned(),
        file,
        mode,
        entries,
        warnings,
        env: env.clone(),
        oauth: oauth.cloned(),
        store,
    })
}

/// The upstream servers of the gateway file at `path`, read by `mcp-host`'s configuration
/// loader as the gateway reads them (the user's own layer, relative `cwd`s from the file's
/// folder): what `mcp-host login --gateway` logs in to, under the same server ids and URLs,
/// so that its tokens are the ones the gateway finds in the token store.
pub fn upstreams(path: &Path, env: &Env) -> mcp_host::LoadedConfig {
    let dir = path.parent().unwrap_or(Path::new("."));
    mcp_host::config::load_files(
        &[ConfigFile::new(path, Scope::Global, FileFormat::McpServers)],
        env,
        dir,
    )
}

/// serde's message without the value it quotes: `invalid type: string "…", expected a
/// sequence` repeats what the file holds, which may be a secret (an `args` or `env` value
/// written where another type belongs). What was expected and where stay; so do field names
/// (`unknown field `mdoe``), which are not values.
fn without_value(e: &serde_json::Error) -> String {
    let text = e.to_string();
    let Some(rest) = ["invalid type: ", "invalid value: "]
        .iter()
        .find_map(|prefix| text.strip_prefix(prefix))
    else {
        return text;
    };
    let expected = rest.split_once(", expected ").map_or("", |(_, x)| x);
    format!("a value of the wrong kind, expected {expected}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_output_keeps_secret_values_out() {
        let server: UpstreamServer = serde_json::from_value(serde_json::json!({
            "type": "http",
            "url": "https://example.invalid/mcp?key=url-secret",
            "headers": {"Authorization": "Bearer header-secret"},
            "env": {"API_KEY": "env-secret"},
            "args": ["--token", "arg-secret"],
            "oauth": {"clientSecret": "oauth-secret"},
            "api_token": "other-secret",
        }))
        .expect("parses");
        let debug = format!("{server:?}");
        assert!(
            debug.contains("Authorization") && debug.contains("API_KEY"),
            "{debug}"
        );
        for secret in [
            "url-secret",
            "header-secret",
            "env-secret",
            "arg-secret",
            "oauth-secret",
            "other-secret",
        ] {
            assert!(!debug.contains(secret), "{secret} in {debug}");
        }
    }

    #[test]
    fn the_seed_example_parses() {
        let text = r#"{
          "$schema": "https://example.invalid/schema.json",
          "mcpServers": {"serena": {"description": "code", "command": "npx", "args": ["-y", "x"], "env": {}}},
          "categories": {"fs": {"description": "files", "server": "serena", "tools": {
            "includeNames": ["mcp__serena__read_file", "list_dir"],
            "overrides": {"mcp__serena__read_file": {"enabled": true, "description": "d"},
                          "mcp__serena__execute_shell_command": {"enabled": false}}}}}
        }"#;
        let file: GatewayFile = serde_json::from_str(text).expect("parses");
        assert_eq!(file.categories["fs"].upstreams(), vec!["serena"]);
        assert_eq!(file.categories["fs"].tools.overrides.len(), 2);
    }

    #[test]
    fn a_category_server_id_with_a_double_underscore_is_refused() {
        let path = std::env::temp_dir().join(format!("gw-dunder-{}.json", std::process::id()));
        let text = r#"{"mcpServers": {"a__b": {"command": "x"}},
            "categories": {"c": {"description": "d", "server": "a__b"}}}"#;
        std::fs::write(&path, text).expect("written");
        let outcome = load(&path, &Env::new(), None);
        let _ = std::fs::remove_file(&path);
        let e = outcome.expect_err("refused");
        assert!(e.to_string().contains("`a__b` contains `__`"), "{e}");
    }

    #[test]
    fn a_value_of_the_wrong_type_is_not_repeated_in_the_error() {
        let path = std::env::temp_dir().join(format!("gw-wrong-type-{}.json", std::process::id()));
        let text = r#"{"mcpServers": {"a": {"command": "x", "args": "--token=arg-secret"}}}"#;
        std::fs::write(&path, text).expect("written");
        let outcome = load(&path, &Env::new(), None);
        let _ = std::fs::remove_file(&path);
        let e = outcome.expect_err("refused").to_string();
        assert!(!e.contains("arg-secret"), "{e}");
        assert!(e.contains("expected a sequence at line 1"), "{e}");
    }

    #[test]
    fn ready_takes_all_any_or_a_list_of_known_servers() {
        let parse = |ready: &str| {
            serde_json::from_str::<GatewayFile>(&format!(r#"{{"ready": {ready}}}"#))
                .map(|f| f.ready)
        };
        assert_eq!(
            parse(r#""any""#).unwrap(),
            Some(Ready::Rule(ReadyRule::Any))
        );
        assert_eq!(
            parse(r#""all""#).unwrap(),
            Some(Ready::Rule(ReadyRule::All))
        );
        assert_eq!(
            parse(r#"["a"]"#).unwrap(),
            Some(Ready::Servers(vec!["a".to_owned()]))
        );
        assert!(parse(r#""some""#).is_err());
        let path = std::env::temp_dir().join(format!("gw-ready-{}.json", std::process::id()));
        let text = r#"{"mcpServers": {"a": {"command": "x"}}, "ready": ["a", "b"]}"#;
        std::fs::write(&path, text).expect("written");
        let outcome = load(&path, &Env::new(), None);
        let _ = std::fs::remove_file(&path);
        let e = outcome.expect_err("refused");
        assert!(e.to_string().contains("ready: `b` is not a key"), "{e}");
    }

    #[test]
    fn unknown_category_fields_are_refused() {
        let text = r#"{"mcpServers": {}, "categories": {"fs": {"description": "x", "server": "s", "tols": {}}}}"#;
        let e = serde_json::from_str::<GatewayFile>(text).expect_err("refused");
        assert!(e.to_string().contains("tols"), "{e}");
    }

    #[test]
    fn the_schema_names_every_top_level_field() {
        let schema = schema();
        let props = &schema["properties"];
        for field in [
            "mcpServers",
            "categories",
            "mode",
            "cacheTtlSeconds",
            "logFile",
            "unattended",
            "ready",
            "auth",
        ] {
            assert!(props.get(field).is_some(), "{field} missing from {schema}");
        }
    }
}

#[cfg(test)]
mod committed_schema {
    /// `docs/gateway.schema.json` is what `mcp-host gateway schema` prints: regenerate it
    /// with that command when the types change.
    #[test]
    fn docs_gateway_schema_json_is_current() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../docs/gateway.schema.json"
        );
        let committed = std::fs::read_to_string(path).expect("docs/gateway.schema.json exists");
        let committed: serde_json::Value =
            serde_json::from_str(&committed).expect("docs/gateway.schema.json is JSON");
        assert!(
            committed == super::schema(),
            "docs/gateway.schema.json is stale: run `cargo run -p mcp-cli -- gateway schema > docs/gateway.schema.json`"
        );
    }
}
