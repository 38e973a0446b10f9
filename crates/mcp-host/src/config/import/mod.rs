//! `mcp-host import`: the servers other MCP clients already have configured, read from their
//! own files and turned into entries of ours, with what could not be carried over and why.
//!
//! One module per source format. Each reads its file into [`Found`] servers (a neutral shape
//! with its variables already translated into ours), and the shared code here turns them into
//! native entries: every entry is checked the way a load checks it, and a secret written
//! literally in the source (an environment value or header whose name says it is a key, a
//! token or a password) is never copied: the entry gets an environment reference and the
//! report names the variable to set ([`ImportReport::variables`]).
//!
//! A file that cannot be parsed is an [`ImportError::Parse`] naming the file, the line and the
//! column, and nothing is imported from any file: a half-read configuration is worse than none.

mod claude;
mod codex;
mod cursor;
mod goose;
mod jsonc;
mod vscode;
mod zed;

#[cfg(test)]
mod tests;

use std::fmt;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

pub use super::edit::WriteOutcome;
use super::model::{ConfigFile, FileFormat, Scope};
use super::parse::{self, Cx, Entry, Resolve};
use super::secret::{Env, is_secret_name};
use super::{ConfigError, edit};

/// The clients whose configuration `import` reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ImportSource {
    /// Claude Desktop's `claude_desktop_config.json` (`mcpServers`).
    ClaudeDesktop,
    /// Claude Code: `~/.claude.json` (user scope and this project's local scope) and the
    /// project's `.mcp.json`.
    ClaudeCode,
    /// VS Code: the project's `.vscode/mcp.json` and the user's `mcp.json`.
    VsCode,
    /// Cursor: the project's `.cursor/mcp.json` and `~/.cursor/mcp.json`.
    Cursor,
    /// Codex: `$CODEX_HOME/config.toml` (`~/.codex/config.toml`), `[mcp_servers.NAME]`.
    Codex,
    /// goose: `config.yaml`'s `extensions`.
    Goose,
    /// Zed: `settings.json`'s `context_servers` (the user's and the project's `.zed/`).
    Zed,
}

impl ImportSource {
    /// Every source, in the order the command line lists them.
    pub const ALL: [Self; 7] = [
        Self::ClaudeDesktop,
        Self::ClaudeCode,
        Self::VsCode,
        Self::Cursor,
        Self::Codex,
        Self::Goose,
        Self::Zed,
    ];

    /// The name `--from` takes.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ClaudeDesktop => "claude-desktop",
            Self::ClaudeCode => "claude-code",
            Self::VsCode => "vscode",
            Self::Cursor => "cursor",
            Self::Codex => "codex",
            Self::Goose => "goose",
            Self::Zed => "zed",
        }
    }

    /// The source `--from` names.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.as_str() == name)
    }

    /// The files this source keeps its servers in, for a user whose environment is `env`
    /// working in `project_dir`, most general first. Those that do not exist are skipped.
    pub fn default_files(self, env: &Env, project_dir: &Path) -> Vec<PathBuf> {
        let home = env.non_empty("HOME").map(PathBuf::from);
        let config_dir = env
            .non_empty("XDG_CONFIG_HOME")
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
            .or_else(|| home.as_ref().map(|h| h.join(".config")));
        let app_support = home
            .as_ref()
            .map(|h| h.join("Library").join("Application Support"));
        let mut files = Vec::new();
        let mut push = |p: Option<PathBuf>| files.extend(p);
        match self {
            Self::ClaudeDesktop => {
                push(config_dir.map(|d| d.join("Claude/claude_desktop_config.json")));
                push(app_support.map(|d| d.join("Claude/claude_desktop_config.json")));
            }
            Self::ClaudeCode => {
                push(home.map(|h| h.join(".claude.json")));
                push(Some(project_dir.join(".mcp.json")));
            }
            Self::VsCode => {
                push(config_dir.map(|d| d.join("Code/User/mcp.json")));
                push(app_support.map(|d| d.join("Code/User/mcp.json")));
                push(Some(project_dir.join(".vscode/mcp.json")));
            }
            Self::Cursor => {
                push(home.map(|h| h.join(".cursor/mcp.json")));
                push(Some(project_dir.join(".cursor/mcp.json")));
            }
            Self::Codex => {
                let codex_home = env
                    .non_empty("CODEX_HOME")
                    .map(PathBuf::from)
                    .or_else(|| home.map(|h| h.join(".codex")));
                push(codex_home.map(|d| d.join("config.toml")));
            }
            Self::Goose => push(config_dir.map(|d| d.join("goose/config.yaml"))),
            Self::Zed => {
                push(config_dir.map(|d| d.join("zed/settings.json")));
                push(Some(project_dir.join(".zed/settings.json")));
            }
        }
        files
    }
}

impl fmt::Display for ImportSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why nothing was imported.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ImportError {
    /// A file could not be read (one given with `--path` that is missing is this too).
    #[error("cannot read {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// A file is not valid in its format. The message names the line and column, never the
    /// text there (which may be a secret).
    #[error("{}:{line}:{column}: {message}; nothing was imported", path.display())]
    Parse {
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// What is wrong.
        message: String,
    },
    /// A file parses but its servers are not where the format keeps them (`mcpServers` is a
    /// list, `extensions` is a string, …).
    #[error("{}: `{field}` {message}; nothing was imported", path.display())]
    Shape {
        /// The file.
        path: PathBuf,
        /// The member, as a dotted path.
        field: String,
        /// What is wrong.
        message: String,
    },
    /// Writing the imported servers failed.
    #[error(transparent)]
    Config(#[from] ConfigError),
}

/// One server read from another client's file, as an entry of our native format.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ImportedServer {
    /// Its id here: the source's name for it.
    pub id: String,
    /// The file it came from.
    pub file: PathBuf,
    /// Where in that file, as a dotted path (`mcpServers.github`,
    /// `projects./home/me/app.mcpServers.db`, `mcp_servers.docs`).
    pub location: String,
    /// The entry as it is written into our file: secrets only as references.
    pub entry: Value,
}

/// Something in a source file that was not carried over.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct NotCarried {
    /// The file.
    pub file: PathBuf,
    /// The server, when it is about one; `None` for the whole file.
    pub server: Option<String>,
    /// The member, when it is about one.
    pub field: Option<String>,
    /// Why, lower case. A whole server is left out when `field` is `None`.
    pub reason: String,
}

impl fmt::Display for NotCarried {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file.display())?;
        if let Some(s) = &self.server {
            write!(f, ": server `{s}`")?;
        }
        if let Some(field) = &self.field {
            write!(f, ": `{field}`")?;
        }
        write!(f, ": {}", self.reason)
    }
}

/// An environment variable an imported entry refers to, which the user must set: a secret
/// that was written literally in the source, or an answer the source would have asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct NeededVariable {
    /// The variable.
    pub name: String,
    /// The server that reads it.
    pub server: String,
    /// The member of our entry that reads it (`env.GITHUB_TOKEN`, `headers.Authorization`).
    pub field: String,
    /// Why it is needed, lower case.
    pub reason: String,
}

/// What [`read`] found.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct ImportReport {
    /// The files that were read.
    pub files: Vec<PathBuf>,
    /// The servers to write, in file order.
    pub servers: Vec<ImportedServer>,
    /// What was left out, and why.
    pub not_carried: Vec<NotCarried>,
    /// The variables the imported entries read that the source held as values.
    pub variables: Vec<NeededVariable>,
    /// The source's prompts behind some of `variables` (VS Code's `inputs`), once each: what
    /// the command line may ask the user at import, so that the answer goes to the keyring.
    pub inputs: Vec<ImportInput>,
}

/// A value the source would have asked the user for (VS Code's `${input:ID}`): the import
/// turned it into a variable, and the user may answer it now instead of setting that variable.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ImportInput {
    /// The variable the entries read in its place (one of the report's `variables`).
    pub variable: String,
    /// The source's id of the input.
    pub id: String,
    /// The question the source would have asked (its `description`, else the id).
    pub description: String,
    /// Whether the source hides the answer as it is typed (`password: true`).
    pub password: bool,
}

/// Where a source file's relative paths and variables point: the user's home and the
/// project (VS Code's and Cursor's `${workspaceFolder}`, `${userHome}`).
#[derive(Debug, Clone)]
pub(crate) struct Places<'a> {
    pub(crate) home: Option<&'a str>,
    pub(crate) project_dir: &'a Path,
}

/// Reads `files` (or, when empty, [`ImportSource::default_files`] that exist) as `source`'s
/// format. Nothing is written.
pub fn read(
    source: ImportSource,
    files: &[PathBuf],
    env: &Env,
    project_dir: &Path,
) -> Result<ImportReport, ImportError> {
    let explicit = !files.is_empty();
    let files = if explicit {
        files.to_vec()
    } else {
        source.default_files(env, project_dir)
    };
    let places = Places {
        home: env.non_empty("HOME"),
        project_dir,
    };
    let mut report = ImportReport::default();
    for path in files {
        let text = match std::fs::read(&path) {
            Ok(bytes) => String::from_utf8(bytes).map_err(|e| {
                let (line, column) = line_col(&e.as_bytes()[..e.utf8_error().valid_up_to()]);
                ImportError::Parse {
                    path: path.clone(),
                    line,
                    column,
                    message: "not UTF-8 text".to_owned(),
                }
            })?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && !explicit => continue,
            Err(source) => return Err(ImportError::Read { path, source }),
        };
        let mut sink = Sink {
            file: &path,
            found: Vec::new(),
            not_carried: Vec::new(),
            inputs: Vec::new(),
        };
        match source {
            ImportSource::ClaudeDesktop | ImportSource::ClaudeCode => {
                claude::read(&text, &places, &mut sink)?;
            }
            ImportSource::VsCode => vscode::read(&text, &places, &mut sink)?,
            ImportSource::Cursor => cursor::read(&text, &places, &mut sink)?,
            ImportSource::Codex => codex::read(&text, &mut sink)?,
            ImportSource::Goose => goose::read(&text, &mut sink)?,
            ImportSource::Zed => zed::read(&text, &places, &mut sink)?,
        }
        let Sink {
            found,
            not_carried,
            inputs,
            ..
        } = sink;
        report.not_carried.extend(not_carried);
        for f in found {
            finish(&path, f, project_dir, &mut report);
        }
        for input in inputs {
            let wanted = report.variables.iter().any(|v| v.name == input.variable);
            if wanted && !report.inputs.iter().any(|i| i.variable == input.variable) {
                report.inputs.push(input);
            }
        }
        report.files.push(path);
    }
    Ok(report)
}

/// Writes the imported servers into the native-format file at `path` in one locked edit:
/// an id the file already has is left alone ([`WriteOutcome::SkippedExisting`]) unless
/// `force`. Returns each id with its outcome, in the report's order.
pub fn write(
    path: &Path,
    report: &ImportReport,
    force: bool,
) -> Result<Vec<(String, WriteOutcome)>, ImportError> {
    let entries: Vec<(String, Value)> = report
        .servers
        .iter()
        .map(|s| (s.id.clone(), s.entry.clone()))
        .collect();
    Ok(edit::add_entries(path, &entries, force)?)
}

/// A source reader's output for one file.
pub(crate) struct Sink<'a> {
    pub(crate) file: &'a Path,
    pub(crate) found: Vec<Found>,
    pub(crate) not_carried: Vec<NotCarried>,
    /// The source's prompts the found entries read (VS Code's `inputs`).
    pub(crate) inputs: Vec<ImportInput>,
}

impl Sink<'_> {
    /// Notes that `field` of `server` (or the whole server, with `field` `None`) is left out.
    pub(crate) fn skip(&mut self, server: Option<&str>, field: Option<&str>, reason: &str) {
        self.not_carried.push(NotCarried {
            file: self.file.to_path_buf(),
            server: server.map(str::to_owned),
            field: field.map(str::to_owned),
            reason: reason.to_owned(),
        });
    }

    /// A parse failure of this file at byte `offset` of `text`.
    pub(crate) fn parse_error(&self, text: &str, offset: usize, message: &str) -> ImportError {
        let (line, column) = line_col(&text.as_bytes()[..offset.min(text.len())]);
        ImportError::Parse {
            path: self.file.to_path_buf(),
            line,
            column,
            message: message.to_owned(),
        }
    }

    /// A file whose servers are not where the format keeps them.
    pub(crate) fn shape_error(&self, field: &str, message: &str) -> ImportError {
        ImportError::Shape {
            path: self.file.to_path_buf(),
            field: field.to_owned(),
            message: message.to_owned(),
        }
    }
}

/// 1-based line and column after `before`.
fn line_col(before: &[u8]) -> (usize, usize) {
    let line = before.iter().filter(|b| **b == b'\n').count() + 1;
    let start = before
        .iter()
        .rposition(|b| *b == b'\n')
        .map_or(0, |i| i + 1);
    let column = String::from_utf8_lossy(&before[start..]).chars().count() + 1;
    (line, column)
}

/// Parses JSON that may have comments and trailing commas, as the editors (VS Code, Cursor,
/// Zed) accept in their settings.
pub(crate) fn parse_jsonc(text: &str, sink: &Sink<'_>) -> Result<Value, ImportError> {
    parse_json(&jsonc::strip(text), sink)
}

/// Parses strict JSON, as Claude Desktop and Claude Code read their files.
pub(crate) fn parse_json(text: &str, sink: &Sink<'_>) -> Result<Value, ImportError> {
    serde_json::from_str(text).map_err(|e| ImportError::Parse {
        path: sink.file.to_path_buf(),
        line: e.line(),
        column: e.column(),
        message: parse::json_error_text(&e),
    })
}

/// Hands each server of a file's table of servers (`table`, the member `field`; `None` when
/// the file has none) to `each` with its id, in the file's order. Every format keeps its
/// servers in such a table, so each reader says the same about one that is not there right:
/// a member that is not a table is an error naming it, and an entry that is not one is left
/// out with the reason. `kind` is the format's word for a table ("an object", "a table", "a
/// mapping"), the word its users know.
pub(crate) fn server_table<'a>(
    sink: &mut Sink<'a>,
    table: Option<&Value>,
    field: &str,
    kind: &str,
    mut each: impl FnMut(&mut Sink<'a>, &str, &Map<String, Value>),
) -> Result<(), ImportError> {
    let Some(table) = table else {
        return Ok(());
    };
    let Value::Object(servers) = table else {
        return Err(sink.shape_error(field, &format!("is not {kind}")));
    };
    for (id, entry) in servers {
        match entry {
            Value::Object(entry) => each(sink, id, entry),
            _ => sink.skip(Some(id), None, &format!("the entry is not {kind}")),
        }
    }
    Ok(())
}

/// A server as a source reader found it, its strings already in our `${VAR}` syntax.
#[derive(Debug, Default)]
pub(crate) struct Found {
    pub(crate) id: String,
    pub(crate) location: String,
    pub(crate) kind: Option<&'static str>,
    pub(crate) command: Option<String>,
    pub(crate) args: Vec<String>,
    pub(crate) cwd: Option<String>,
    /// Values, in our syntax (`${VAR}` references allowed).
    pub(crate) env: Vec<(String, String)>,
    /// Members of `env` taken whole from a variable of the host (`{"env": VAR}`).
    pub(crate) env_refs: Vec<(String, String)>,
    pub(crate) url: Option<String>,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) header_refs: Vec<(String, String)>,
    pub(crate) bearer_token_env_var: Option<String>,
    pub(crate) enabled: Option<bool>,
    pub(crate) enabled_tools: Option<Vec<String>>,
    pub(crate) disabled_tools: Vec<String>,
    pub(crate) request_timeout_ms: Option<u64>,
    /// Variables the entry reads that the user must set, with why.
    pub(crate) needs: Vec<(String, String, String)>,
}

/// Escapes `$` before `{` for a source that does not expand variables: what it holds is
/// literal, and must stay literal in our files, which do.
pub(crate) fn literal(text: &str) -> String {
    text.replace("${", "$${")
}

/// Whether `text` reads a variable (`${…}` not escaped): such a value is a reference already.
fn has_reference(text: &str) -> bool {
    let b = text.as_bytes();
    (0..b.len())
        .any(|i| b[i] == b'$' && b.get(i + 1) == Some(&b'{') && (i == 0 || b[i - 1] != b'$'))
}

/// A variable name for header `header` of server `id`: `<ID>_<HEADER>`, upper case, with
/// every other character an underscore.
fn header_variable(id: &str, header: &str) -> String {
    super::secret::variable_name(&format!("{id}_{header}"))
}

/// Turns `found` into a native entry, with literal secrets made references; an entry a load
/// would refuse is left out with the load's reasons.
fn finish(file: &Path, mut found: Found, project_dir: &Path, report: &mut ImportReport) {
    let id = found.id.clone();
    let mut needs = std::mem::take(&mut found.needs);
    let mut m = Map::new();
    if let Some(kind) = found.kind {
        m.insert("transport".into(), json!(kind));
    }
    if let Some(c) = &found.command {
        m.insert("command".into(), json!(c));
    }
    if !found.args.is_empty() {
        m.insert("args".into(), json!(found.args));
    }
    if let Some(c) = &found.cwd {
        m.insert("cwd".into(), json!(c));
    }
    let mut env = Map::new();
    for (k, v) in &found.env {
        if is_secret_name(k) && !has_reference(v) && !v.is_empty() {
            env.insert(k.clone(), json!({ "env": k }));
            needs.push((
                k.clone(),
                format!("env.{k}"),
                "the source held this secret as a value, which is not copied".to_owned(),
            ));
        } else {
            env.insert(k.clone(), json!(v));
        }
    }
    for (k, var) in &found.env_refs {
        env.insert(k.clone(), json!({ "env": var }));
    }
    if !env.is_empty() {
        m.insert("env".into(), Value::Object(env));
    }
    if let Some(u) = &found.url {
        m.insert("url".into(), json!(u));
    }
    let mut headers = Map::new();
    for (k, v) in &found.headers {
        if is_secret_name(k) && !has_reference(v) && !v.is_empty() {
            let var = header_variable(&id, k);
            let scheme = v.split_once(' ').map(|(s, _)| s).filter(|s| {
                s.eq_ignore_ascii_case("bearer")
                    || s.eq_ignore_ascii_case("basic")
                    || s.eq_ignore_ascii_case("token")
            });
            let value = match scheme {
                Some(s) => json!(format!("{s} ${{{var}}}")),
                None => json!({ "env": var }),
            };
            headers.insert(k.clone(), value);
            let what = if scheme.is_some() {
                "the credential after the scheme"
            } else {
                "the value"
            };
            needs.push((
                var,
                format!("headers.{k}"),
                format!("the source held this header's secret as a value, which is not copied: set {what}"),
            ));
        } else {
            headers.insert(k.clone(), json!(v));
        }
    }
    for (k, var) in &found.header_refs {
        headers.insert(k.clone(), json!({ "env": var }));
    }
    if !headers.is_empty() {
        m.insert("headers".into(), Value::Object(headers));
    }
    if let Some(v) = &found.bearer_token_env_var {
        m.insert("bearer_token_env_var".into(), json!(v));
    }
    if let Some(e) = found.enabled {
        m.insert("enabled".into(), json!(e));
    }
    if let Some(t) = &found.enabled_tools {
        m.insert("enabled_tools".into(), json!(t));
    }
    if !found.disabled_tools.is_empty() {
        m.insert("disabled_tools".into(), json!(found.disabled_tools));
    }
    if let Some(ms) = found.request_timeout_ms {
        m.insert("request_timeout_ms".into(), json!(ms));
    }
    let entry = Value::Object(m);

    let cf = ConfigFile::new(file, Scope::Project, FileFormat::Native);
    let mut cx = Cx::new(&cf);
    let rs = Resolve {
        env: None,
        project_dir,
    };
    if let Entry::Rejected(_) = parse::parse_entry(&mut cx, &id, &entry, &rs) {
        for p in cx.problems.iter().filter(|p| p.is_error()) {
            report.not_carried.push(NotCarried {
                file: file.to_path_buf(),
                server: Some(id.clone()),
                field: None,
                reason: match &p.field {
                    Some(f) => format!("would not load here: `{f}` {}", p.message),
                    None => format!("would not load here: {}", p.message),
                },
            });
        }
        return;
    }
    for (name, field, reason) in needs {
        report.variables.push(NeededVariable {
            name,
            server: id.clone(),
            field,
            reason,
        });
    }
    report.servers.push(ImportedServer {
        id,
        file: file.to_path_buf(),
        location: found.location,
        entry,
    });
}

/// Reads a JSON object member as a list of strings; anything else is noted and dropped.
pub(crate) fn strings(
    sink: &mut Sink<'_>,
    id: &str,
    field: &str,
    value: Option<&Value>,
    map: impl Fn(&str) -> String,
) -> Vec<String> {
    match value {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => {
            let mut out = Vec::new();
            for (i, item) in items.iter().enumerate() {
                match item {
                    Value::String(s) => out.push(map(s)),
                    _ => sink.skip(Some(id), Some(&format!("{field}[{i}]")), "not a string"),
                }
            }
            out
        }
        Some(_) => {
            sink.skip(Some(id), Some(field), "not a list of strings");
            Vec::new()
        }
    }
}

/// Reads a JSON object member as a map of strings; anything else is noted and dropped.
pub(crate) fn string_map(
    sink: &mut Sink<'_>,
    id: &str,
    field: &str,
    value: Option<&Value>,
    map: impl Fn(&str) -> String,
) -> Vec<(String, String)> {
    match value {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Object(o)) => {
            let mut out = Vec::new();
            for (k, v) in o {
                match v {
                    Value::String(s) => out.push((k.clone(), map(s))),
                    Value::Number(n) => out.push((k.clone(), n.to_string())),
                    Value::Bool(b) => out.push((k.clone(), b.to_string())),
                    _ => sink.skip(Some(id), Some(&format!("{field}.{k}")), "not a string"),
                }
            }
            out
        }
        Some(_) => {
            sink.skip(Some(id), Some(field), "not an object of strings");
            Vec::new()
        }
    }
}

/// A string member, or `None` (noted) when it is something else.
pub(crate) fn string(
    sink: &mut Sink<'_>,
    id: &str,
    field: &str,
    value: Option<&Value>,
) -> Option<String> {
    match value {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => {
            sink.skip(Some(id), Some(field), "not a string");
            None
        }
    }
}

/// Notes every member of `entry` not in `known`, so that nothing is dropped silently.
pub(crate) fn unknown_members(
    sink: &mut Sink<'_>,
    id: &str,
    entry: &Map<String, Value>,
    known: &[&str],
) {
    for k in entry.keys() {
        if !known.contains(&k.as_str()) {
            sink.skip(Some(id), Some(k), "no equivalent here");
        }
    }
}

/// Translates the `${…}` variables of VS Code and Cursor into ours: `${env:NAME}` is
/// `${NAME}`, `${userHome}` and `${workspaceFolder}` are the paths, `${input:ID}` is a
/// variable named after the input (see `vscode`). Anything else is an `Err` naming it: the
/// server is then left out rather than started with a literal placeholder.
pub(crate) fn editor_variables(
    text: &str,
    places: &Places<'_>,
    input: &mut dyn FnMut(&str) -> Option<String>,
) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            return Err("an unclosed `${`".to_owned());
        };
        let name = &after[..end];
        let project = places.project_dir.to_string_lossy();
        match name {
            "userHome" => match places.home {
                Some(h) => out.push_str(h),
                None => return Err("`${userHome}` with HOME unset".to_owned()),
            },
            "workspaceFolder" | "workspaceRoot" => out.push_str(&project),
            "workspaceFolderBasename" => out.push_str(
                &places
                    .project_dir
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default(),
            ),
            "pathSeparator" | "/" => out.push(std::path::MAIN_SEPARATOR),
            _ => {
                if let Some(var) = name.strip_prefix("env:") {
                    out.push_str(&format!("${{{var}}}"));
                } else if let Some(id) = name.strip_prefix("input:") {
                    match input(id) {
                        Some(var) => out.push_str(&format!("${{{var}}}")),
                        None => return Err(format!("`${{input:{id}}}` names no declared input")),
                    }
                } else {
                    return Err(format!("the variable `${{{name}}}` has no equivalent here"));
                }
            }
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}
