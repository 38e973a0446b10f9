//! The configuration commands: `add`, `list`, `remove`, `enable`, `disable`. They edit or show
//! the files; none of them starts a server.

use std::path::{Path, PathBuf};

use mcp_host::config::{
    self, ConfigPaths, ConfiguredServer, Env, FileStatus, LoadedConfig, NewServer, NewTransport,
    Scope, Secret, SecretSource, Transport,
};
use mcp_host::trust::TrustStore;
use serde_json::{Value, json};

use crate::args::{self, AddArgs, EditScope, ReadScope, TransportArg};
use crate::exit::{Code, Failure};
use crate::output::{Out, Table, cell};

/// Where the files are, and the environment secret references resolve against.
#[derive(Debug, Clone)]
pub(crate) struct Context {
    pub(crate) paths: ConfigPaths,
    pub(crate) env: Env,
}

impl Context {
    /// The process's directory (or `--project`) and environment.
    pub(crate) fn from_process(project: Option<&Path>) -> Result<Self, Failure> {
        let cwd = std::env::current_dir().map_err(|e| {
            Failure::new(
                Code::Other,
                format!("cannot read the current directory: {e}"),
            )
        })?;
        let dir = match project {
            Some(p) => cwd.join(p),
            None => cwd,
        };
        if !dir.is_dir() {
            return Err(Failure::usage(format!(
                "the project directory {} does not exist",
                dir.display()
            )));
        }
        let env = Env::from_process();
        Ok(Self {
            paths: ConfigPaths::new(&dir, &env)?,
            env,
        })
    }

    /// The merged configuration of `scope`.
    pub(crate) fn load(&self, scope: ReadScope) -> LoadedConfig {
        match scope {
            ReadScope::Effective => config::load(&self.paths, &self.env),
            ReadScope::Project => config::load_scope(&self.paths, &self.env, Scope::Project),
            ReadScope::Global => config::load_scope(&self.paths, &self.env, Scope::Global),
        }
    }

    fn file(&self, scope: EditScope) -> Result<PathBuf, Failure> {
        Ok(self.paths.editable(scope.into())?.to_path_buf())
    }
}

impl From<EditScope> for Scope {
    fn from(s: EditScope) -> Self {
        match s {
            EditScope::Project => Scope::Project,
            EditScope::Global => Scope::Global,
        }
    }
}

/// `add`.
pub(crate) fn add(cx: &Context, out: &Out, a: AddArgs) -> Result<(), Failure> {
    let server = new_server(&a)?;
    let path = cx.file(a.scope)?;
    config::add_server(&path, &a.id, &server, a.replace)?;
    if a.scope == EditScope::Project {
        approve_added(cx, &a.id, &path)?;
    }
    let kind = match &server.transport {
        NewTransport::Stdio { .. } => "stdio",
        NewTransport::Http {
            legacy_sse: true, ..
        } => "sse",
        _ => "http",
    };
    if out.is_json() {
        out.json(&json!({
            "added": a.id,
            "transport": kind,
            "scope": Scope::from(a.scope).as_str(),
            "file": path.display().to_string(),
            "replaced": a.replace,
        }));
    } else {
        out.text(&format!(
            "added {kind} server `{}` to {} ({})",
            a.id,
            path.display(),
            Scope::from(a.scope).as_str()
        ));
        out.note(&format!("next: `mcp-host test {}`", a.id));
    }
    Ok(())
}

/// A server the user just wrote into the project file is theirs: it is approved as written,
/// even if it is not usable yet (a variable it reads is not set in this shell).
/// Only the entry in `file`, the one just written, is approved: never another file's.
pub(crate) fn approve_added(cx: &Context, id: &str, file: &Path) -> Result<(), Failure> {
    let loaded = cx.load(ReadScope::Project);
    let fingerprint = match loaded.server(id) {
        Some(s) if s.file == file => Some(s.fingerprint.clone()),
        Some(_) => None,
        None => loaded
            .rejected
            .iter()
            .find(|r| r.id == id && r.file == file)
            .and_then(|r| r.fingerprint.clone()),
    };
    match fingerprint {
        // With no place for approvals (no HOME) there is nothing to record, and nothing
        // that could be approved later either: the entry is written all the same.
        Some(f) if TrustStore::default_path(&cx.paths).is_some() => {
            crate::trust::approve_fingerprints(cx, [(id, f.as_str())])
        }
        _ => Ok(()),
    }
}

/// The entry `add`'s flags describe, or a usage error that says which flag is missing or
/// does not belong.
fn new_server(a: &AddArgs) -> Result<NewServer, Failure> {
    let http_flags = a.url.is_some()
        || !a.header.is_empty()
        || !a.header_env.is_empty()
        || a.oauth_authorization_url.is_some()
        || a.oauth_token_url.is_some()
        || a.oauth_registration_url.is_some()
        || a.oauth_client_id.is_some()
        || a.oauth_client_secret.is_some()
        || a.oauth_client_secret_env.is_some()
        || a.oauth_scope.is_some();
    let stdio_flags = a.command.is_some()
        || !a.arg.is_empty()
        || a.cwd.is_some()
        || !a.env.is_empty()
        || !a.env_from.is_empty();
    if a.target.is_some() && !a.command_line.is_empty() {
        return Err(Failure::usage("give a URL or `--` and a command, not both"));
    }
    let no_shorthand = a.target.is_none() && a.command_line.is_empty();
    let transport = match (a.transport, no_shorthand) {
        (Some(t), true) => t,
        (Some(_), false) => {
            return Err(Failure::usage(
                "give either the shorthand (a URL, or `--` and a command) or --transport with --url/--command, not both",
            ));
        }
        (None, false) => {
            if a.url.is_some() || a.command.is_some() {
                return Err(Failure::usage(
                    "give either the shorthand or --url/--command, not both",
                ));
            }
            return shorthand(a, http_flags, stdio_flags);
        }
        (None, true) if a.url.is_some() && !stdio_flags => TransportArg::Http,
        (None, true) if a.command.is_some() && !http_flags => TransportArg::Stdio,
        (None, true) => {
            return Err(Failure::usage(format!(
                "server `{}` needs a URL or a command",
                a.id
            ))
            .hint("e.g. `mcp-host add ID https://host/mcp`, `mcp-host add ID -- COMMAND ARGS…`, or --transport with --url/--command"));
        }
    };
    let mut server = match transport {
        TransportArg::Http | TransportArg::Sse => {
            if stdio_flags {
                return Err(Failure::usage(
                    "--command, --arg, --cwd, --env and --env-from belong to --transport stdio",
                ));
            }
            let url = a.url.clone().ok_or_else(|| {
                Failure::usage(format!(
                    "--transport http needs --url for server `{}`",
                    a.id
                ))
            })?;
            let mut server = NewServer::http(url);
            if transport == TransportArg::Sse
                && let NewTransport::Http { legacy_sse, .. } = &mut server.transport
            {
                *legacy_sse = true;
            }
            server
        }
        TransportArg::Stdio => {
            if http_flags {
                return Err(Failure::usage(
                    "--url, --header, --header-env and --oauth-* belong to --transport http",
                ));
            }
            let command = a.command.clone().ok_or_else(|| {
                Failure::usage(format!(
                    "--transport stdio needs --command for server `{}`",
                    a.id
                ))
            })?;
            NewServer::stdio(command, a.arg.clone())
        }
    };
    fill(&mut server, a)?;
    Ok(server)
}

/// `add ID URL` or `add ID -- COMMAND ARGS…` (seed 003's detection for one string).
fn shorthand(a: &AddArgs, http_flags: bool, stdio_flags: bool) -> Result<NewServer, Failure> {
    let mut server = match (&a.target, a.command_line.split_first()) {
        (_, Some((command, args))) => NewServer::stdio(command.clone(), args.to_vec()),
        (Some(target), None) => NewServer::from_spec(target)
            .map_err(|e| Failure::usage(format!("server `{}`: {e}", a.id)))?,
        (None, None) => return Err(Failure::usage("give a URL or `--` and a command")),
    };
    let is_stdio = matches!(server.transport, NewTransport::Stdio { .. });
    if is_stdio && http_flags {
        return Err(Failure::usage(
            "HTTP flags (--header, --oauth-*) were given for a command",
        ));
    }
    if !is_stdio && stdio_flags {
        return Err(Failure::usage(
            "stdio flags (--arg, --cwd, --env) were given for a URL",
        ));
    }
    if is_stdio && !a.arg.is_empty() {
        return Err(Failure::usage(
            "with the shorthand, put the arguments after the command",
        ));
    }
    fill(&mut server, a)?;
    Ok(server)
}

/// The flags shared by every form: secrets, limits, OAuth.
fn fill(server: &mut NewServer, a: &AddArgs) -> Result<(), Failure> {
    let plain = |pairs: Vec<(String, String)>| {
        pairs
            .into_iter()
            .map(|(k, v)| (k, SecretSource::Plain(Secret::new(v))))
            .collect::<Vec<_>>()
    };
    let refs = |pairs: Vec<(String, String)>| {
        pairs
            .into_iter()
            .map(|(k, v)| (k, SecretSource::Env(v)))
            .collect::<Vec<_>>()
    };
    match &mut server.transport {
        NewTransport::Stdio { cwd, env, .. } => {
            *cwd = a.cwd.clone();
            env.extend(plain(args::pairs("env", &a.env).map_err(Failure::usage)?));
            env.extend(refs(
                args::pairs("env-from", &a.env_from).map_err(Failure::usage)?,
            ));
        }
        NewTransport::Http { headers, .. } => {
            headers.extend(plain(
                args::pairs("header", &a.header).map_err(Failure::usage)?,
            ));
            headers.extend(refs(
                args::pairs("header-env", &a.header_env).map_err(Failure::usage)?,
            ));
        }
        _ => {}
    }
    server.enabled = a.enabled;
    server.request_timeout_ms = a.request_timeout_ms;
    let o = &mut server.oauth;
    o.authorization_url = a.oauth_authorization_url.clone();
    o.token_url = a.oauth_token_url.clone();
    o.registration_url = a.oauth_registration_url.clone();
    o.client_id = a.oauth_client_id.clone();
    o.scope = a.oauth_scope.clone();
    o.client_secret = match (&a.oauth_client_secret, &a.oauth_client_secret_env) {
        (Some(_), Some(_)) => {
            return Err(Failure::usage(
                "give --oauth-client-secret or --oauth-client-secret-env, not both",
            ));
        }
        (Some(s), None) => Some(SecretSource::Plain(Secret::new(s.clone()))),
        (None, Some(var)) => Some(SecretSource::Env(var.clone())),
        (None, None) => None,
    };
    Ok(())
}

/// `list`.
pub(crate) fn list(cx: &Context, out: &Out, scope: ReadScope) -> Result<(), Failure> {
    let loaded = cx.load(scope);
    let show_source = scope == ReadScope::Effective;
    if out.is_json() {
        let servers: Vec<Value> = loaded
            .servers
            .iter()
            .map(|s| {
                json!({
                    "id": s.id,
                    "transport": s.transport.kind(),
                    "target": target(s),
                    "enabled": s.enabled,
                    "source": s.source.as_str(),
                    "file": s.file.display().to_string(),
                    "request_timeout_ms": s.request_timeout.as_millis() as u64,
                    "oauth": s.oauth.is_some(),
                })
            })
            .chain(loaded.rejected.iter().map(|r| {
                json!({
                    "id": r.id,
                    "transport": Value::Null,
                    "target": Value::Null,
                    "enabled": false,
                    "source": r.source.as_str(),
                    "file": r.file.display().to_string(),
                    "invalid": true,
                })
            }))
            .collect();
        out.json(&json!({
            "scope": scope_name(scope),
            "servers": servers,
            "problems": problems_json(&loaded),
        }));
    } else if loaded.servers.is_empty() && loaded.rejected.is_empty() {
        out.text("no MCP servers configured");
        out.note("add one with `mcp-host add ID URL` or `mcp-host add ID -- COMMAND ARGS…`");
    } else {
        let mut header = vec!["ID", "TRANSPORT", "ENABLED"];
        if show_source {
            header.push("SOURCE");
        }
        header.push("TARGET");
        let mut table = Table::new(&header);
        for s in &loaded.servers {
            let mut row = vec![
                s.id.clone(),
                s.transport.kind().to_owned(),
                yes_no(s.enabled),
            ];
            if show_source {
                row.push(s.source.as_str().to_owned());
            }
            row.push(cell(&target(s), 100));
            table.row(row);
        }
        for r in &loaded.rejected {
            // A refused id is as written, and may be the invalid part: clean it.
            let mut row = vec![cell(&r.id, 64), "-".into(), "invalid".into()];
            if show_source {
                row.push(r.source.as_str().to_owned());
            }
            row.push("(see the error below)".into());
            table.row(row);
        }
        out.text(&table.render());
    }
    report_problems(out, &loaded);
    config_errors(&loaded)
}

/// `remove`.
pub(crate) fn remove(cx: &Context, out: &Out, id: &str, scope: EditScope) -> Result<(), Failure> {
    let path = cx.file(scope)?;
    config::remove_server(&path, id).map_err(|e| elsewhere(cx, e, id, scope))?;
    let still = cx.load(ReadScope::Effective).server(id).map(|s| s.source);
    if out.is_json() {
        out.json(&json!({
            "removed": id,
            "scope": Scope::from(scope).as_str(),
            "file": path.display().to_string(),
            "still_effective_from": still.map(Scope::as_str),
        }));
    } else {
        out.text(&format!("removed `{id}` from {}", path.display()));
        if let Some(source) = still {
            out.note(&format!(
                "`{id}` is still configured in the {source} layer and stays effective"
            ));
        }
    }
    Ok(())
}

/// `enable` and `disable`.
pub(crate) fn set_enabled(
    cx: &Context,
    out: &Out,
    id: &str,
    scope: EditScope,
    enabled: bool,
) -> Result<(), Failure> {
    let path = cx.file(scope)?;
    config::set_enabled(&path, id, enabled).map_err(|e| elsewhere(cx, e, id, scope))?;
    let word = if enabled { "enabled" } else { "disabled" };
    if out.is_json() {
        out.json(&json!({
            "id": id,
            "enabled": enabled,
            "scope": Scope::from(scope).as_str(),
            "file": path.display().to_string(),
        }));
    } else {
        out.text(&format!("{word} `{id}` in {}", path.display()));
    }
    Ok(())
}

/// A not-found error, with a hint when the other layer has the id.
fn elsewhere(cx: &Context, e: config::ConfigError, id: &str, scope: EditScope) -> Failure {
    let not_found = matches!(e, config::ConfigError::ServerNotFound { .. });
    let failure = Failure::from(e);
    if !not_found {
        return failure;
    }
    let other = match scope {
        EditScope::Project => ReadScope::Global,
        EditScope::Global => ReadScope::Project,
    };
    if cx.load(other).server(id).is_some() {
        failure.hint(format!(
            "`{id}` is defined in the {} layer: pass --scope {}",
            scope_name(other),
            scope_name(other)
        ))
    } else {
        failure.hint("`mcp-host list` shows the configured servers")
    }
}

fn scope_name(scope: ReadScope) -> &'static str {
    match scope {
        ReadScope::Effective => "effective",
        ReadScope::Project => "project",
        ReadScope::Global => "global",
    }
}

pub(crate) fn yes_no(b: bool) -> String {
    if b { "yes" } else { "no" }.to_owned()
}

/// Where a server is: its URL without user info and query (either may hold a secret), or
/// its command line.
pub(crate) fn target(s: &ConfiguredServer) -> String {
    match &s.transport {
        Transport::Http(h) => config::shown_url(&h.url),
        Transport::Stdio(st) => {
            let mut line = st.shown_command.clone();
            for a in &st.shown_args {
                line.push(' ');
                line.push_str(a);
            }
            line
        }
        _ => String::new(),
    }
}

/// Every problem found in the files, on stderr.
pub(crate) fn report_problems(out: &Out, loaded: &LoadedConfig) {
    for p in &loaded.problems {
        out.note(&p.to_string());
    }
}

pub(crate) fn problems_json(loaded: &LoadedConfig) -> Vec<Value> {
    loaded
        .problems
        .iter()
        .map(|p| {
            json!({
                "severity": if p.is_error() { "error" } else { "warning" },
                "file": p.file.display().to_string(),
                "server": p.server,
                "field": p.field,
                "message": p.message,
            })
        })
        .collect()
}

/// Exit code 3 when a file could not be read or a server entry was refused.
pub(crate) fn config_errors(loaded: &LoadedConfig) -> Result<(), Failure> {
    let failed: Vec<String> = loaded
        .files
        .iter()
        .filter(|f| f.status == FileStatus::Failed)
        .map(|f| f.file.path.display().to_string())
        .collect();
    if !failed.is_empty() {
        return Err(Failure::config(format!(
            "configuration file {} could not be read (see above); none of its servers were loaded",
            failed.join(", ")
        ))
        .hint("fix the file, or move it aside"));
    }
    if loaded.has_errors() {
        return Err(Failure::config(
            "some server entries are invalid and were left out (see above)",
        ));
    }
    Ok(())
}
