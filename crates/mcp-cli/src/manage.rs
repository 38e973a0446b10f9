//! The configuration commands: `add`, `list`, `remove`, `enable`, `disable`. They edit or show
//! the files; none of them starts a server.

use std::path::{Path, PathBuf};

use mcp_host::config::{
    self, ConfigPaths, ConfiguredServer, Env, FileStatus, LoadedConfig, Scope, Transport,
};
use mcp_host::trust::TrustStore;
use serde_json::{Value, json};

use crate::args::{EditScope, ReadScope};
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
            ReadScope::Local => config::load_scope(&self.paths, &self.env, Scope::Local),
            ReadScope::Project => config::load_scope(&self.paths, &self.env, Scope::Project),
            ReadScope::Global => config::load_scope(&self.paths, &self.env, Scope::Global),
        }
    }

    /// The file `scope` edits.
    pub(crate) fn file(&self, scope: EditScope) -> Result<PathBuf, Failure> {
        Ok(self.paths.editable(scope.into())?.to_path_buf())
    }
}

impl From<EditScope> for Scope {
    fn from(s: EditScope) -> Self {
        match s {
            EditScope::Local => Scope::Local,
            EditScope::Project => Scope::Project,
            EditScope::Global => Scope::Global,
        }
    }
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
pub(crate) fn remove(
    cx: &Context,
    out: &Out,
    id: &str,
    scope: Option<EditScope>,
) -> Result<(), Failure> {
    let scope = match scope {
        Some(s) => s,
        None => the_layer_defining(cx, id)?,
    };
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
    scope: Option<EditScope>,
    enabled: bool,
) -> Result<(), Failure> {
    let scope = match (scope, enabled) {
        (Some(s), _) => s,
        // Off for you in this project, whichever layer defines it, no shared file touched.
        (None, false) => EditScope::Local,
        // On again where it was turned off.
        (None, true) => match cx.load(ReadScope::Effective).server(id) {
            Some(s) if !s.enabled => match s.source {
                Scope::Global => EditScope::Global,
                Scope::Project => EditScope::Project,
                _ => EditScope::Local,
            },
            Some(_) => {
                out.text(&format!("`{id}` is already enabled"));
                return Ok(());
            }
            None => the_layer_defining(cx, id)?,
        },
    };
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

/// The one editable file that defines `id`, for a command given no `--scope` (as `claude mcp
/// remove` decides): none or several is an error that says what to type.
fn the_layer_defining(cx: &Context, id: &str) -> Result<EditScope, Failure> {
    if !config::is_valid_server_id(id) {
        return Err(config::ConfigError::InvalidServerId { id: id.to_owned() }.into());
    }
    let found: Vec<EditScope> = [EditScope::Local, EditScope::Project, EditScope::Global]
        .into_iter()
        .filter(|s| cx.file(*s).is_ok_and(|p| defines(&p, id)))
        .collect();
    match found.as_slice() {
        [one] => Ok(*one),
        [] => {
            let loaded = cx.load(ReadScope::Effective);
            let failure = Failure::config(format!("no server `{id}` in the files mcp-host edits"));
            Err(match loaded.server(id) {
                Some(s) => failure.hint(format!(
                    "`{id}` comes from {}, which mcp-host reads but does not edit: `mcp-host disable {id}` turns it off for you",
                    s.file.display()
                )),
                None => failure.hint("`mcp-host list` shows the configured servers"),
            })
        }
        several => {
            let names: Vec<&str> = several.iter().map(|s| Scope::from(*s).as_str()).collect();
            Err(Failure::usage(format!(
                "server `{id}` is defined in several layers: {}",
                names.join(", ")
            ))
            .hint(format!("say which with --scope {}", names.join("|"))))
        }
    }
}

/// Whether the native file at `path` has an entry `id` in `mcp.servers`.
fn defines(path: &Path, id: &str) -> bool {
    std::fs::read(path)
        .ok()
        .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
        .is_some_and(|v| v.pointer("/mcp/servers").and_then(|s| s.get(id)).is_some())
}

/// A not-found error, with a hint when the other layer has the id.
fn elsewhere(cx: &Context, e: config::ConfigError, id: &str, scope: EditScope) -> Failure {
    let not_found = matches!(e, config::ConfigError::ServerNotFound { .. });
    let failure = Failure::from(e);
    if !not_found {
        return failure;
    }
    let others = [ReadScope::Local, ReadScope::Project, ReadScope::Global]
        .into_iter()
        .filter(|o| *o != read_scope(scope));
    for other in others {
        if cx.load(other).server(id).is_some() {
            return failure.hint(format!(
                "`{id}` is defined in the {} layer: pass --scope {}",
                scope_name(other),
                scope_name(other)
            ));
        }
    }
    failure.hint("`mcp-host list` shows the configured servers")
}

fn read_scope(scope: EditScope) -> ReadScope {
    match scope {
        EditScope::Local => ReadScope::Local,
        EditScope::Project => ReadScope::Project,
        EditScope::Global => ReadScope::Global,
    }
}

fn scope_name(scope: ReadScope) -> &'static str {
    match scope {
        ReadScope::Effective => "effective",
        ReadScope::Local => "local",
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
