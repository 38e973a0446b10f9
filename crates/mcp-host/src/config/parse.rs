//! Reading one configuration file into validated entries and problems. Entries are read from
//! `serde_json::Value` field by field, not with derived `Deserialize`: every problem can then
//! name the file, the server and the field, unknown fields become warnings, and no message
//! ever quotes a value (serde's own messages do, and a value may be a secret).
//! This file is long because every field is read and checked by hand, so that a problem names the
//! file, the server and the field and never quotes a value; each field of each kind of entry has
//! its own lines.

use std::collections::BTreeSet;
use std::fmt;
use std::marker::PhantomData;
use std::path::{Path, PathBuf};
use std::time::Duration;

use mcp_protocol::ProtocolVersion;
use serde::Deserialize;
use serde::de::{MapAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use url::Url;

use super::detect::{self, Detected};
use super::expand;
use super::model::{
    ConfigFile, ConfiguredServer, DEFAULT_PING_INTERVAL, DEFAULT_PING_TIMEOUT,
    DEFAULT_REQUEST_TIMEOUT, FileFormat, FileStatus, HttpTransport, OAuthConfig, Problem,
    RejectedServer, Severity, StdioTransport, Transport,
};
use super::secret::{self, Env, Secret, SecretSource};
use crate::permission::{Decision, ServerRules};

/// The longest `request_timeout_ms` accepted: one hour.
const MAX_TIMEOUT_MS: u64 = 3_600_000;
/// The largest `max_result_bytes` accepted: 1 GiB.
const MAX_RESULT_LIMIT: u64 = 1 << 30;

/// Whether `id` is a valid server id: `^[a-zA-Z0-9_-]{1,64}$`.
pub fn is_valid_server_id(id: &str) -> bool {
    (1..=64).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// The JSON object members of one level, in file order and with duplicates kept (a
/// `serde_json::Map` keeps only the last of duplicate keys).
struct Entries<V>(Vec<(String, V)>);

impl<'de, V: Deserialize<'de>> Deserialize<'de> for Entries<V> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V2<V>(PhantomData<V>);
        impl<'de, V: Deserialize<'de>> Visitor<'de> for V2<V> {
            type Value = Entries<V>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut out = Vec::new();
                while let Some(entry) = map.next_entry::<String, V>()? {
                    out.push(entry);
                }
                Ok(Entries(out))
            }
        }
        d.deserialize_map(V2(PhantomData))
    }
}

impl<V> Entries<V> {
    /// The last value of `key`, as `serde_json` would keep it.
    fn last(&self, key: &str) -> Option<&V> {
        self.0.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v)
    }
}

/// One server entry of a file, after validation.
#[derive(Debug)]
pub(crate) enum Entry {
    /// A valid server; `own_max_result` is its own `max_result_bytes`, if it set one (the
    /// host default is applied after merging).
    Server {
        config: Box<ConfiguredServer>,
        own_max_result: Option<usize>,
    },
    /// `{"enabled": false}` and nothing else: disables the lower layer's server of that id.
    DisableMarker { id: String },
    /// Refused; its problems are in the file's problems.
    Rejected(RejectedServer),
}

/// Host options one file sets.
#[derive(Debug, Default)]
pub(crate) struct HostPatch {
    pub(crate) max_connections: Option<usize>,
    pub(crate) max_result_bytes: Option<usize>,
}

/// Everything read from one file.
#[derive(Debug)]
pub(crate) struct FileOutcome {
    pub(crate) status: FileStatus,
    pub(crate) entries: Vec<Entry>,
    pub(crate) host: HostPatch,
    pub(crate) problems: Vec<Problem>,
}

/// Collects problems for one file.
pub(crate) struct Cx<'a> {
    file: &'a ConfigFile,
    pub(crate) problems: Vec<Problem>,
}

impl<'a> Cx<'a> {
    pub(crate) fn new(file: &'a ConfigFile) -> Self {
        Self {
            file,
            problems: Vec::new(),
        }
    }

    fn push(&mut self, severity: Severity, server: Option<&str>, field: Option<&str>, msg: &str) {
        self.problems.push(Problem {
            severity,
            file: self.file.path.clone(),
            server: server.map(str::to_owned),
            field: field.map(str::to_owned),
            message: msg.to_owned(),
        });
    }

    fn file_error(&mut self, field: Option<&str>, msg: &str) {
        self.push(Severity::Error, None, field, msg);
    }

    fn file_warning(&mut self, field: Option<&str>, msg: &str) {
        self.push(Severity::Warning, None, field, msg);
    }
}

/// Where a file's relative paths and secret references are resolved.
pub(crate) struct Resolve<'a> {
    /// The variables `{"env": "VAR"}` reads; `None` when only checking an entry's shape (an
    /// edit), so unset variables are not errors.
    pub(crate) env: Option<&'a Env>,
    /// What a relative `cwd` is relative to.
    pub(crate) project_dir: &'a Path,
}

/// `mcp.credentials_store`: one of its three values, and read from the user's own file only
/// (`CredentialsStore::for_user`); a project's file is warned that it is ignored.
fn credentials_store(cx: &mut Cx<'_>, file: &ConfigFile, value: &RawValue) {
    const FIELD: &str = "mcp.credentials_store";
    let known = serde_json::from_str::<String>(value.get())
        .ok()
        .and_then(|v| super::CredentialsStore::parse(&v));
    if known.is_none() {
        cx.file_error(Some(FIELD), "must be \"auto\", \"keyring\" or \"file\"");
    } else if file.scope != super::model::Scope::Global {
        cx.file_warning(
            Some(FIELD),
            "ignored: only your own (global) file says where your credentials are kept",
        );
    }
}

/// Reads `file` from disk: missing is fine, anything else wrong is a problem.
pub(crate) fn read_file(file: &ConfigFile, rs: &Resolve<'_>) -> FileOutcome {
    match std::fs::read(&file.path) {
        Ok(bytes) => parse_file(file, &bytes, rs),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => FileOutcome {
            status: FileStatus::Missing,
            entries: Vec::new(),
            host: HostPatch::default(),
            problems: Vec::new(),
        },
        Err(e) => {
            let mut cx = Cx::new(file);
            cx.file_error(None, &format!("cannot be read: {e}"));
            failed(cx)
        }
    }
}

fn failed(cx: Cx<'_>) -> FileOutcome {
    FileOutcome {
        status: FileStatus::Failed,
        entries: Vec::new(),
        host: HostPatch::default(),
        problems: cx.problems,
    }
}

/// A `serde_json` error as position only: its own text may quote the file.
pub(crate) fn json_error_text(e: &serde_json::Error) -> String {
    let what = match e.classify() {
        serde_json::error::Category::Data => "not a JSON object",
        serde_json::error::Category::Eof => "not valid JSON (it ends early)",
        _ => "not valid JSON",
    };
    format!("{what} (line {}, column {})", e.line(), e.column())
}

/// Parses the bytes of `file`.
fn parse_file(file: &ConfigFile, bytes: &[u8], rs: &Resolve<'_>) -> FileOutcome {
    let mut cx = Cx::new(file);
    let top: Entries<Box<RawValue>> = match serde_json::from_slice(bytes) {
        Ok(t) => t,
        Err(e) => {
            cx.file_error(None, &format!("the file is {}", json_error_text(&e)));
            return failed(cx);
        }
    };
    let mut host = HostPatch::default();
    let servers = match file.format {
        FileFormat::Native => {
            match top
                .last("version")
                .map(|v| serde_json::from_str::<Value>(v.get()))
            {
                None => cx.file_warning(Some("version"), "missing; version 1 is assumed"),
                Some(Ok(v)) if v.as_u64() == Some(1) => {}
                Some(_) => {
                    cx.file_error(Some("version"), "unsupported; only version 1 is known");
                    return failed(cx);
                }
            }
            let Some(mcp) = top.last("mcp") else {
                return done(cx, Vec::new(), host);
            };
            let Ok(mcp) = serde_json::from_str::<Entries<Box<RawValue>>>(mcp.get()) else {
                cx.file_error(Some("mcp"), "must be an object");
                return failed(cx);
            };
            for (key, value) in &mcp.0 {
                match key.as_str() {
                    "servers" => {}
                    "max_connections" => {
                        host.max_connections =
                            host_limit(&mut cx, "mcp.max_connections", value, 1, 1000);
                    }
                    "max_result_bytes" => {
                        host.max_result_bytes =
                            host_limit(&mut cx, "mcp.max_result_bytes", value, 1, MAX_RESULT_LIMIT);
                    }
                    "credentials_store" => credentials_store(&mut cx, file, value),
                    other => {
                        cx.file_warning(Some(&format!("mcp.{other}")), "unknown field, ignored")
                    }
                }
            }
            mcp.last("servers")
                .map(|s| (s.get().to_owned(), "mcp.servers"))
        }
        FileFormat::McpServers => top
            .last("mcpServers")
            .map(|s| (s.get().to_owned(), "mcpServers")),
    };
    let Some((servers, field)) = servers else {
        if file.format == FileFormat::McpServers {
            cx.file_warning(Some("mcpServers"), "missing; the file defines no server");
        }
        return done(cx, Vec::new(), host);
    };
    let servers: Entries<Value> = match serde_json::from_str(&servers) {
        Ok(s) => s,
        Err(_) => {
            cx.file_error(
                Some(field),
                "must be an object mapping server ids to entries",
            );
            return failed(cx);
        }
    };
    let mut seen = BTreeSet::new();
    let duplicated: BTreeSet<&str> = servers
        .0
        .iter()
        .filter(|(id, _)| !seen.insert(id.as_str()))
        .map(|(id, _)| id.as_str())
        .collect();
    let mut entries = Vec::new();
    for (id, value) in &servers.0 {
        if duplicated.contains(id.as_str()) {
            if entries
                .iter()
                .any(|e| matches!(e, Entry::Rejected(r) if r.id == *id))
            {
                continue;
            }
            cx.push(
                Severity::Error,
                Some(id),
                None,
                "defined more than once in this file; none of the definitions is used",
            );
            entries.push(Entry::Rejected(rejected(file, id)));
            continue;
        }
        entries.push(parse_entry(&mut cx, id, value, rs));
    }
    done(cx, entries, host)
}

fn done(cx: Cx<'_>, entries: Vec<Entry>, host: HostPatch) -> FileOutcome {
    FileOutcome {
        status: FileStatus::Loaded,
        entries,
        host,
        problems: cx.problems,
    }
}

fn rejected(file: &ConfigFile, id: &str) -> RejectedServer {
    RejectedServer {
        id: id.to_owned(),
        source: file.scope,
        file: file.path.clone(),
        fingerprint: None,
    }
}

/// A refused entry that is an object: its fingerprint is kept, so that the user who wrote it
/// can approve it before it becomes usable (a variable it reads is set later).
fn rejected_entry(file: &ConfigFile, id: &str, map: &Map<String, Value>) -> RejectedServer {
    RejectedServer {
        fingerprint: Some(fingerprint(map)),
        ..rejected(file, id)
    }
}

fn host_limit(cx: &mut Cx<'_>, field: &str, raw: &RawValue, min: u64, max: u64) -> Option<usize> {
    let n = serde_json::from_str::<Value>(raw.get())
        .ok()
        .and_then(|v| v.as_u64())
        .filter(|n| (min..=max).contains(n))
        .and_then(|n| usize::try_from(n).ok());
    if n.is_none() {
        cx.file_error(
            Some(field),
            &format!("must be an integer from {min} to {max}; the default is used"),
        );
    }
    n
}

const NATIVE_FIELDS: &[&str] = &[
    "transport",
    "enabled",
    "command",
    "args",
    "cwd",
    "env",
    "inherit_env",
    "url",
    "headers",
    "request_timeout_ms",
    "ping_interval_ms",
    "ping_timeout_ms",
    "oauth",
    "enabled_tools",
    "disabled_tools",
    "permission",
    "max_result_bytes",
    "protocol_version",
    "expose_resources",
    "expose_prompts",
    "optional_tools_as_tasks",
    "bearer_token_env_var",
];
/// `description` is Modular MCP's (seed 004): what the server is for, which a gateway shows.
const MCP_SERVERS_EXTRA: &[&str] = &["type", "disabled", "description"];
const HTTP_ONLY: &[&str] = &["url", "headers", "oauth", "bearer_token_env_var"];
const STDIO_ONLY: &[&str] = &["command", "args", "cwd", "env", "inherit_env"];

/// The problems of one server entry, and the helpers that read its fields.
struct EntryCx<'c, 'a> {
    cx: &'c mut Cx<'a>,
    id: &'c str,
    errors: usize,
    /// The `{"env": …}` references read so far, once each.
    reads_env: Vec<String>,
    /// Every `{"env": …}` reference read so far, by the path of the field that holds it.
    references: Vec<(String, String)>,
}

impl EntryCx<'_, '_> {
    fn error(&mut self, field: &str, msg: &str) {
        self.errors += 1;
        self.cx
            .push(Severity::Error, Some(self.id), Some(field), msg);
    }

    fn warn(&mut self, field: &str, msg: &str) {
        self.cx
            .push(Severity::Warning, Some(self.id), Some(field), msg);
    }

    fn string(&mut self, map: &Map<String, Value>, field: &str, path: &str) -> Option<String> {
        match map.get(field)? {
            Value::String(s) => Some(s.clone()),
            _ => {
                self.error(path, "must be a string");
                None
            }
        }
    }

    fn bool(&mut self, map: &Map<String, Value>, field: &str) -> Option<bool> {
        match map.get(field)? {
            Value::Bool(b) => Some(*b),
            _ => {
                self.error(field, "must be true or false");
                None
            }
        }
    }

    fn strings(&mut self, map: &Map<String, Value>, field: &str) -> Option<Vec<String>> {
        let Value::Array(items) = map.get(field)? else {
            self.error(field, "must be an array of strings");
            return None;
        };
        let mut out = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            match item {
                Value::String(s) => out.push(s.clone()),
                _ => self.error(&format!("{field}[{i}]"), "must be a string"),
            }
        }
        Some(out)
    }

    fn integer(
        &mut self,
        map: &Map<String, Value>,
        field: &str,
        max: u64,
        unit: &str,
    ) -> Option<u64> {
        let v = map.get(field)?;
        let n = v.as_u64().filter(|n| (1..=max).contains(n));
        if n.is_none() {
            self.error(
                field,
                &format!("must be an integer from 1 to {max} ({unit})"),
            );
        }
        n
    }

    fn url(&mut self, map: &Map<String, Value>, field: &str, path: &str) -> Option<Url> {
        let s = self.string(map, field, path)?;
        let url = detect::parse_http_url(s.trim());
        if url.is_none() {
            self.error(path, "not a valid http(s) URL");
        }
        url
    }

    /// A secret: a string, or `{"env": "VAR"}` resolved against the environment.
    fn secret(&mut self, value: &Value, path: &str, rs: &Resolve<'_>) -> Option<Secret> {
        let source = match value {
            Value::String(s) => {
                // A value that is one reference and nothing else is the user's own variable,
                // which an approval names rather than shows.
                if let Some(var) = s
                    .strip_prefix("${")
                    .and_then(|r| r.strip_suffix('}'))
                    .filter(|v| expand::is_var_name(v))
                {
                    self.references.push((path.to_owned(), var.to_owned()));
                }
                SecretSource::Plain(Secret::new(self.expand(s, path, rs)?))
            }
            Value::Object(o) if o.len() == 1 && o.contains_key("env") => match &o["env"] {
                Value::String(var) if is_env_name(var) => SecretSource::Env(var.clone()),
                _ => {
                    self.error(path, "`env` must name an environment variable");
                    return None;
                }
            },
            Value::Object(o) if o.len() == 1 && o.contains_key("keyring") => match &o["keyring"] {
                Value::String(name) if secret::is_keyring_name(name) => {
                    SecretSource::Keyring(name.clone())
                }
                _ => {
                    self.error(
                        path,
                        "`keyring` must name a secret (ASCII letters, digits, '-', '_', '.')",
                    );
                    return None;
                }
            },
            _ => {
                self.error(
                    path,
                    "must be a string, {\"env\": \"NAME\"} or {\"keyring\": \"NAME\"}",
                );
                return None;
            }
        };
        match source {
            SecretSource::Plain(s) => Some(s),
            SecretSource::Keyring(name) => {
                // The approval of a project's server names the keyring entries it would send,
                // as it names the variables (`keyring:` keeps them apart from variables).
                let shown = format!("keyring:{name}");
                if !self.reads_env.contains(&shown) {
                    self.reads_env.push(shown);
                }
                self.keyring_secret(path, &name, rs)
            }
            SecretSource::Env(var) => {
                if !self.reads_env.contains(&var) {
                    self.reads_env.push(var.clone());
                }
                self.references.push((path.to_owned(), var.clone()));
                self.resolve(path, &var, rs)
            }
        }
    }

    /// `text` with its `${VAR}` and `${VAR:-default}` references expanded (see `expand`); the
    /// variables it reads join the entry's `reads_env`. An unset variable or a malformed `${`
    /// is an error for the field at `path`.
    fn expand(&mut self, text: &str, path: &str, rs: &Resolve<'_>) -> Option<String> {
        match expand::expand(text, rs.env) {
            Ok(expanded) => {
                for var in expanded.reads {
                    if !self.reads_env.contains(&var) {
                        self.reads_env.push(var);
                    }
                }
                Some(expanded.text)
            }
            Err(err) => {
                if let expand::ExpandError::Unset { var } = &err
                    && !self.reads_env.contains(var)
                {
                    self.reads_env.push(var.clone());
                }
                self.error(path, &err.to_string());
                None
            }
        }
    }

    /// A string member that may hold `${…}` references, expanded.
    fn expanded(
        &mut self,
        map: &Map<String, Value>,
        field: &str,
        rs: &Resolve<'_>,
    ) -> Option<String> {
        let s = self.string(map, field, field)?;
        self.expand(&s, field, rs)
    }

    /// The keyring secret `name`, read now: a missing entry, or no usable keyring, is an
    /// error for the field at `path` that names the entry (never a value).
    fn keyring_secret(&mut self, path: &str, name: &str, rs: &Resolve<'_>) -> Option<Secret> {
        let Some(env) = rs.env else {
            return Some(Secret::new(String::new()));
        };
        match secret::read_keyring(env, name) {
            Ok(s) => Some(s),
            Err(message) => {
                self.error(path, &message);
                None
            }
        }
    }

    fn resolve(&mut self, path: &str, var: &str, rs: &Resolve<'_>) -> Option<Secret> {
        match rs.env {
            None => Some(Secret::new(String::new())),
            Some(env) => match env.var(var) {
                Some(v) => Some(Secret::new(v)),
                None => {
                    self.error(path, &format!("environment variable `{var}` is not set"));
                    None
                }
            },
        }
    }

    fn secret_map(
        &mut self,
        map: &Map<String, Value>,
        field: &str,
        rs: &Resolve<'_>,
        check_name: fn(&str) -> bool,
        name_rule: &str,
    ) -> Vec<(String, Secret)> {
        let Some(value) = map.get(field) else {
            return Vec::new();
        };
        let Value::Object(members) = value else {
            self.error(field, "must be an object of names to values");
            return Vec::new();
        };
        let mut out = Vec::new();
        for (name, value) in members {
            let path = format!("{field}.{name}");
            if !check_name(name) {
                self.error(&path, name_rule);
                continue;
            }
            if let Some(secret) = self.secret(value, &path, rs) {
                out.push((name.clone(), secret));
            }
        }
        out
    }
}

fn is_env_name(name: &str) -> bool {
    !name.is_empty() && !name.contains(['=', '\0'])
}

fn is_header_name(name: &str) -> bool {
    http::HeaderName::from_bytes(name.as_bytes()).is_ok()
}

/// What the file says about the transport, before the transport's own fields are read.
enum Kind {
    Stdio,
    Http,
    Sse,
}

/// Validates one server entry. Errors reject it; warnings do not.
pub(crate) fn parse_entry(cx: &mut Cx<'_>, id: &str, value: &Value, rs: &Resolve<'_>) -> Entry {
    let file = cx.file;
    let mut e = EntryCx {
        cx,
        id,
        errors: 0,
        reads_env: Vec::new(),
        references: Vec::new(),
    };
    if !is_valid_server_id(id) {
        e.errors += 1;
        e.cx.push(
            Severity::Error,
            Some(id),
            None,
            "invalid server id: use 1 to 64 characters from a-z, A-Z, 0-9, `_` and `-`",
        );
    }
    let Value::Object(map) = value else {
        e.errors += 1;
        e.cx.push(
            Severity::Error,
            Some(id),
            None,
            "the entry must be an object",
        );
        return Entry::Rejected(rejected(file, id));
    };
    let format = file.format;
    for key in map.keys() {
        let known = NATIVE_FIELDS.contains(&key.as_str())
            || (format == FileFormat::McpServers && MCP_SERVERS_EXTRA.contains(&key.as_str()));
        if !known {
            let hint = if key == "type" {
                "unknown field, ignored (did you mean `transport`?)"
            } else {
                "unknown field, ignored"
            };
            e.warn(key, hint);
        }
    }

    let mut enabled = e.bool(map, "enabled").unwrap_or(true);
    if format == FileFormat::McpServers && e.bool(map, "disabled") == Some(true) {
        enabled = false;
    }
    if !enabled && map.keys().all(|k| k == "enabled" || k == "disabled") {
        return if e.errors == 0 {
            Entry::DisableMarker { id: id.to_owned() }
        } else {
            Entry::Rejected(rejected_entry(file, id, map))
        };
    }

    let kind_field = if format == FileFormat::McpServers && map.contains_key("type") {
        "type"
    } else {
        "transport"
    };
    let kind = match e.string(map, kind_field, kind_field).as_deref() {
        None => None,
        Some("stdio") => Some(Kind::Stdio),
        Some("http" | "streamable-http" | "streamableHttp") => Some(Kind::Http),
        Some("sse") => Some(Kind::Sse),
        Some(_) => {
            e.error(kind_field, "must be \"stdio\", \"http\" or \"sse\"");
            return Entry::Rejected(rejected_entry(file, id, map));
        }
    };
    if kind.is_none() && map.contains_key(kind_field) {
        return Entry::Rejected(rejected_entry(file, id, map));
    }

    let transport = read_transport(&mut e, map, kind, rs);

    let request_timeout = e
        .integer(map, "request_timeout_ms", MAX_TIMEOUT_MS, "milliseconds")
        .map_or(DEFAULT_REQUEST_TIMEOUT, Duration::from_millis);
    // `0` turns the pings off; absent, an HTTP server gets them and a stdio one does not.
    let ping_interval = match map.get("ping_interval_ms") {
        Some(v) if v.as_u64() == Some(0) => Some(None),
        _ => e
            .integer(map, "ping_interval_ms", MAX_TIMEOUT_MS, "milliseconds")
            .map(|ms| Some(Duration::from_millis(ms))),
    };
    let ping_timeout = e
        .integer(map, "ping_timeout_ms", MAX_TIMEOUT_MS, "milliseconds")
        .map_or(DEFAULT_PING_TIMEOUT, Duration::from_millis);
    let oauth = read_oauth(&mut e, map, rs);
    let enabled_tools = e.strings(map, "enabled_tools");
    let disabled_tools = e.strings(map, "disabled_tools").unwrap_or_default();
    let expose_resources = e.bool(map, "expose_resources").unwrap_or(true);
    let expose_prompts = e.bool(map, "expose_prompts").unwrap_or(true);
    let optional_tools_as_tasks = e.bool(map, "optional_tools_as_tasks").unwrap_or(false);
    let permission = read_permission(&mut e, map);
    let own_max_result = e
        .integer(map, "max_result_bytes", MAX_RESULT_LIMIT, "bytes")
        .and_then(|n| usize::try_from(n).ok());
    let protocol_version = e
        .string(map, "protocol_version", "protocol_version")
        .and_then(|s| {
            // Only a revision a session speaks; pinning one pins its era too.
            let v = ProtocolVersion::parse(&s);
            if v.is_known() {
                Some(v)
            } else {
                let known: Vec<&str> = ProtocolVersion::KNOWN.iter().map(|k| k.as_str()).collect();
                e.error(
                    "protocol_version",
                    &format!(
                        "not a protocol revision this host speaks; use one of: {}",
                        known.join(", ")
                    ),
                );
                None
            }
        });

    let Some(transport) = transport else {
        return Entry::Rejected(rejected_entry(file, id, map));
    };
    let ignored: &[&str] = match transport {
        Transport::Stdio(_) => HTTP_ONLY,
        Transport::Http(_) => STDIO_ONLY,
    };
    for field in ignored {
        if map.contains_key(*field) {
            let msg = match transport {
                Transport::Stdio(_) if *field == "oauth" => {
                    "ignored: stdio servers take credentials from their environment, not OAuth"
                }
                Transport::Stdio(_) => "ignored for a stdio server",
                Transport::Http(_) => "ignored for an HTTP server",
            };
            e.warn(field, msg);
        }
    }
    let oauth = oauth.filter(|_| matches!(transport, Transport::Http(_)));
    let ping_interval = ping_interval.unwrap_or(match transport {
        Transport::Http(_) => Some(DEFAULT_PING_INTERVAL),
        Transport::Stdio(_) => None,
    });
    if e.errors > 0 {
        return Entry::Rejected(rejected_entry(file, id, map));
    }
    Entry::Server {
        config: Box::new(ConfiguredServer {
            id: id.to_owned(),
            source: file.scope,
            file: file.path.clone(),
            enabled,
            transport,
            request_timeout,
            ping_interval,
            ping_timeout,
            oauth,
            enabled_tools,
            disabled_tools,
            expose_resources,
            expose_prompts,
            optional_tools_as_tasks,
            permission,
            max_result_bytes: super::model::DEFAULT_MAX_RESULT_BYTES,
            protocol_version,
            fingerprint: fingerprint(map),
            reads_env: std::mem::take(&mut e.reads_env),
        }),
        own_max_result,
    }
}

/// Members of an entry that change neither what runs nor where anything is sent: editing
/// them keeps a project server's approval.
const NOT_APPROVED: &[&str] = &[
    "enabled",
    "disabled",
    "description",
    "request_timeout_ms",
    "ping_interval_ms",
    "ping_timeout_ms",
    "enabled_tools",
    "disabled_tools",
    "permission",
    "max_result_bytes",
    "protocol_version",
    "expose_resources",
    "expose_prompts",
];

/// [`ConfiguredServer::fingerprint`]: SHA-256 over the entry's other members in a canonical form
/// (keys sorted at every level), so that formatting and member order do not matter. The keys
/// are sorted here rather than left to `serde_json`, whose map order is a cargo feature any
/// crate in a build may switch on.
fn fingerprint(map: &Map<String, Value>) -> String {
    use sha2::{Digest, Sha256};
    fn canonical(value: &Value, out: &mut String) {
        match value {
            Value::Object(map) => {
                let mut keys: Vec<&String> = map.keys().collect();
                keys.sort();
                out.push('{');
                for (i, key) in keys.into_iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    canonical(&Value::String(key.clone()), out);
                    out.push(':');
                    canonical(&map[key], out);
                }
                out.push('}');
            }
            Value::Array(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    canonical(item, out);
                }
                out.push(']');
            }
            // A string or a number prints one way only.
            scalar => out.push_str(&scalar.to_string()),
        }
    }
    let kept: Map<String, Value> = map
        .iter()
        .filter(|(k, _)| !NOT_APPROVED.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let mut text = String::from("mcp-host server entry v1\n");
    canonical(&Value::Object(kept), &mut text);
    Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn read_transport(
    e: &mut EntryCx<'_, '_>,
    map: &Map<String, Value>,
    kind: Option<Kind>,
    rs: &Resolve<'_>,
) -> Option<Transport> {
    let has_url = map.contains_key("url");
    let has_command = map.contains_key("command");
    match kind {
        Some(Kind::Stdio) => read_stdio(e, map, rs, None),
        Some(Kind::Http) => {
            let url = required_url(e, map, rs)?;
            match detect::parse_http_url(url.trim()) {
                Some(url) => read_http(e, map, rs, url, false),
                None => {
                    e.error("url", "not a valid http(s) URL");
                    None
                }
            }
        }
        Some(Kind::Sse) => {
            let url = required_url(e, map, rs)?;
            match detect::detect(&url) {
                Ok(Detected::Http { url } | Detected::LegacySse { url }) => {
                    read_http(e, map, rs, url, true)
                }
                _ => {
                    e.error("url", "not a valid http(s) or sse:// URL");
                    None
                }
            }
        }
        None if has_url && !has_command => {
            let url = e.expanded(map, "url", rs)?;
            match detect::detect(&url) {
                Ok(Detected::Http { url }) => read_http(e, map, rs, url, false),
                Ok(Detected::LegacySse { url }) => read_http(e, map, rs, url, true),
                Ok(Detected::Stdio { command, args }) => {
                    read_stdio(e, map, rs, Some((command, args)))
                }
                Err(err) => {
                    e.error("url", &err.to_string());
                    None
                }
            }
        }
        None if has_command => read_stdio(e, map, rs, None),
        None => {
            e.error(
                "transport",
                "missing: set \"transport\" with \"url\" (http, sse) or \"command\" (stdio)",
            );
            None
        }
    }
}

fn required_url(
    e: &mut EntryCx<'_, '_>,
    map: &Map<String, Value>,
    rs: &Resolve<'_>,
) -> Option<String> {
    if !map.contains_key("url") {
        e.error("url", "missing: an http or sse server needs `url`");
        return None;
    }
    e.expanded(map, "url", rs)
}

fn read_stdio(
    e: &mut EntryCx<'_, '_>,
    map: &Map<String, Value>,
    rs: &Resolve<'_>,
    from_url: Option<(String, Vec<String>)>,
) -> Option<Transport> {
    let (command, mut args) = match from_url {
        Some(c) => c,
        None => {
            if !map.contains_key("command") {
                e.error("command", "missing: a stdio server needs `command`");
                return None;
            }
            (e.expanded(map, "command", rs)?, Vec::new())
        }
    };
    if command.trim().is_empty() {
        e.error("command", "must not be empty");
        return None;
    }
    let mut shown_args = args.clone();
    let shown_command = match map.get("command") {
        Some(Value::String(raw)) if reads_secret_variable(raw) => raw.clone(),
        _ => command.clone(),
    };
    match e.strings(map, "args") {
        Some(more) => {
            for (i, raw) in more.iter().enumerate() {
                if let Some(arg) = e.expand(raw, &format!("args[{i}]"), rs) {
                    // An argument built from a secret variable is shown as written.
                    shown_args.push(if reads_secret_variable(raw) {
                        raw.clone()
                    } else {
                        arg.clone()
                    });
                    args.push(arg);
                }
            }
        }
        None if command.trim().contains(char::is_whitespace) && !map.contains_key("url") => {
            e.warn(
                "command",
                "contains spaces and there are no `args`: the whole string is the program name; \
                 put the arguments in `args`",
            );
        }
        None => {}
    }
    let cwd = e
        .string(map, "cwd", "cwd")
        .map(|c| resolve_dir(rs.project_dir, &c));
    let env = e.secret_map(
        map,
        "env",
        rs,
        is_env_name,
        "not a valid environment variable name",
    );
    let env_from = env
        .iter()
        .filter_map(|(name, _)| {
            let path = format!("env.{name}");
            let (_, var) = e.references.iter().find(|(p, _)| *p == path)?;
            Some((name.clone(), var.clone()))
        })
        .collect();
    let inherit_env = e.bool(map, "inherit_env").unwrap_or(false);
    Some(Transport::Stdio(StdioTransport {
        command,
        args,
        shown_command,
        shown_args,
        cwd,
        env,
        env_from,
        inherit_env,
    }))
}

/// Whether `raw` reads a variable whose name says it holds a credential (`${API_TOKEN}`,
/// `${DB_PASSWORD:-x}`): its expanded text is then not shown, the reference is.
fn reads_secret_variable(raw: &str) -> bool {
    let mut rest = raw;
    let mut prev_dollar = false;
    while let Some(i) = rest.find("${") {
        let escaped = (i > 0 && rest.as_bytes()[i - 1] == b'$') || (i == 0 && prev_dollar);
        let after = &rest[i + 2..];
        let end = after.find(['}', ':']).unwrap_or(after.len());
        if !escaped && secret::is_secret_name(&after[..end]) {
            return true;
        }
        prev_dollar = false;
        rest = after;
    }
    false
}

fn resolve_dir(project_dir: &Path, dir: &str) -> PathBuf {
    let p = Path::new(dir);
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        project_dir.join(p)
    }
}

fn read_http(
    e: &mut EntryCx<'_, '_>,
    map: &Map<String, Value>,
    rs: &Resolve<'_>,
    url: Url,
    legacy_sse: bool,
) -> Option<Transport> {
    let mut headers = e.secret_map(
        map,
        "headers",
        rs,
        is_header_name,
        "not a valid HTTP header name",
    );
    // Codex's `bearer_token_env_var`: `Authorization: Bearer <the variable's value>`.
    if let Some(var) = e.string(map, "bearer_token_env_var", "bearer_token_env_var") {
        let field = "bearer_token_env_var";
        if !is_env_name(&var) {
            e.error(field, "must name an environment variable");
        } else if headers
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case("authorization"))
        {
            e.error(
                field,
                "conflicts with the `Authorization` header in `headers`: keep one of them",
            );
        } else {
            if !e.reads_env.contains(&var) {
                e.reads_env.push(var.clone());
            }
            e.references.push((field.to_owned(), var.clone()));
            if let Some(token) = e.resolve(field, &var, rs) {
                headers.push((
                    "Authorization".to_owned(),
                    Secret::new(format!("Bearer {}", token.secret())),
                ));
            }
        }
    }
    headers.retain(|(name, value)| {
        let ok = http::HeaderValue::from_str(value.secret()).is_ok();
        if !ok {
            e.error(
                &format!("headers.{name}"),
                "the value is not a valid header value (control characters or non-ASCII)",
            );
        }
        ok
    });
    Some(Transport::Http(HttpTransport {
        url,
        headers,
        legacy_sse,
    }))
}

fn read_oauth(
    e: &mut EntryCx<'_, '_>,
    map: &Map<String, Value>,
    rs: &Resolve<'_>,
) -> Option<OAuthConfig> {
    let value = map.get("oauth")?;
    let Value::Object(o) = value else {
        e.error("oauth", "must be an object");
        return None;
    };
    const KNOWN: &[&str] = &[
        "authorization_url",
        "token_url",
        "registration_url",
        "client_id",
        "client_secret",
        "scope",
    ];
    for key in o.keys() {
        if !KNOWN.contains(&key.as_str()) {
            e.warn(&format!("oauth.{key}"), "unknown field, ignored");
        }
    }
    Some(OAuthConfig {
        authorization_url: e.url(o, "authorization_url", "oauth.authorization_url"),
        token_url: e.url(o, "token_url", "oauth.token_url"),
        registration_url: e.url(o, "registration_url", "oauth.registration_url"),
        client_id: e.string(o, "client_id", "oauth.client_id"),
        client_secret: o
            .get("client_secret")
            .and_then(|v| e.secret(v, "oauth.client_secret", rs)),
        scope: e.string(o, "scope", "oauth.scope"),
    })
}

fn read_permission(e: &mut EntryCx<'_, '_>, map: &Map<String, Value>) -> ServerRules {
    let mut out = ServerRules::default();
    let Some(value) = map.get("permission") else {
        return out;
    };
    let Value::Object(p) = value else {
        e.error("permission", "must be an object with `default` and `tools`");
        return out;
    };
    let mode = |e: &mut EntryCx<'_, '_>, v: &Value, path: &str| {
        let m = v.as_str().and_then(Decision::parse);
        if m.is_none() {
            e.error(path, "must be \"allow\", \"ask\" or \"deny\"");
        }
        m
    };
    for (key, v) in p {
        match key.as_str() {
            "default" => {
                if let Some(m) = mode(e, v, "permission.default") {
                    out.default = m;
                }
            }
            "resources" => out.resources = mode(e, v, "permission.resources"),
            "prompts" => out.prompts = mode(e, v, "permission.prompts"),
            "tools" => {
                let Value::Object(tools) = v else {
                    e.error(
                        "permission.tools",
                        "must be an object of tool names to modes",
                    );
                    continue;
                };
                for (tool, v) in tools {
                    if let Some(m) = mode(e, v, &format!("permission.tools.{tool}")) {
                        out.tools.insert(tool.clone(), m);
                    }
                }
            }
            other => e.warn(&format!("permission.{other}"), "unknown field, ignored"),
        }
    }
    out
}
