//! Which servers the user configured: the files, their two formats, validation, the merge of
//! the global and project layers, secret references, and the command line's edits.
//!
//! Loading never fails as a whole. A bad server entry is left out with a [`Problem`] naming
//! the file, the server and the field; a file that is not JSON or has an unknown `version` is
//! left out with a [`Problem`] naming the file, and the other files still load. Unknown fields
//! are warnings, so a typo never passes silently.
//!
//! # Files and precedence, lowest first
//!
//! 1. Global: `$MCP_HOST_CONFIG` (an absolute path; a relative one is refused), else
//!    `$XDG_CONFIG_HOME/mcp-host/config.json`, else `$HOME/.config/mcp-host/config.json` (on
//!    macOS too). Native format.
//! 2. Project: `<cwd>/.mcp.json`, in the common `mcpServers` format. Read only.
//! 3. Project: `<cwd>/.mcp-host/config.json`. Native format.
//! 4. Local: the user's private file for this project, outside its tree:
//!    `<global file's directory>/projects/<name>-<hash>.json`, named after the project
//!    directory's canonical path ([`ConfigPaths::local`]). Native format. It wins over the
//!    project's files, as Claude Code's local scope does.
//!
//! Servers merge per id, the later file replacing the whole entry. An entry that is only
//! `{"enabled": false}` disables the earlier layer's server of that id without repeating it.
//! An entry with an error hides the earlier layers' entry of that id: a bad entry disables
//! that server. Host options (`mcp.max_connections`, `mcp.max_result_bytes`) merge per option.
//!
//! Everything that depends on the process (the current directory, the environment) is passed
//! in ([`ConfigPaths::new`], [`Env`]); [`discover`] reads the real ones.

mod credentials;
mod detect;
mod edit;
mod expand;
mod import;
mod model;
mod parse;
mod secret;

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};

pub use crate::redact::shown_path;
pub use credentials::CredentialsStore;
pub use detect::{DetectError, Detected, detect, split_command_line};
pub use edit::allow_tool;
pub use edit::{
    NewOAuth, NewServer, NewTransport, add_server, remove_server, set_enabled,
    set_keyring_variables, set_variables,
};
pub use expand::expand_variables;
pub use import::{
    ImportError, ImportInput, ImportReport, ImportSource, ImportedServer, NeededVariable,
    NotCarried, WriteOutcome, read as import_read, write as import_write,
};
pub use model::{
    ConfigFile, ConfiguredServer, DEFAULT_MAX_CONNECTIONS, DEFAULT_MAX_RESULT_BYTES,
    DEFAULT_PING_INTERVAL, DEFAULT_PING_TIMEOUT, DEFAULT_REQUEST_TIMEOUT, FileFormat, FileReport,
    FileStatus, HostConfig, HttpTransport, LoadedConfig, OAuthConfig, Problem, RejectedServer,
    Scope, Severity, StdioTransport, Transport, shown_url,
};
pub use parse::is_valid_server_id;
pub(crate) use parse::json_error_text;
pub use secret::{Env, Secret, SecretSource, is_secret_name, variable_name};

use parse::{Entry, Resolve};

/// Why a configuration file could not be found, read or edited. Messages name the file and
/// the server, never a value from the file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// Reading failed for a reason other than the file being absent.
    #[error("cannot read {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: io::Error,
    },
    /// Writing (or locking) failed.
    #[error("cannot write {}: {source}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: io::Error,
    },
    /// The file is not something an edit can work on (not JSON, another version, another
    /// format).
    #[error("{}: {message}", path.display())]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// The id breaks `^[a-zA-Z0-9_-]{1,64}$`.
    #[error("invalid server id `{id}`: use 1 to 64 characters from a-z, A-Z, 0-9, `_` and `-`")]
    InvalidServerId {
        /// The id given.
        id: String,
    },
    /// `add` without `replace` for an id the file has.
    #[error("server `{id}` already exists in {}; replace it explicitly", path.display())]
    ServerExists {
        /// The id.
        id: String,
        /// The file.
        path: PathBuf,
    },
    /// `remove` or `enable` of an id the file lacks.
    #[error("server `{id}` is not defined in {}", path.display())]
    ServerNotFound {
        /// The id.
        id: String,
        /// The file.
        path: PathBuf,
    },
    /// `add` of an entry that would not load.
    #[error("server `{id}` was not written: {}", join(problems))]
    InvalidEntry {
        /// The id.
        id: String,
        /// The errors a load would report.
        problems: Vec<Problem>,
    },
    /// `MCP_HOST_CONFIG` is a relative path. It would name a file in whatever directory the
    /// host runs in, so a repository's own file would become the user's global layer, whose
    /// servers need no approval.
    #[error(
        "MCP_HOST_CONFIG must be an absolute path, not `{value}`: a relative one names a file in \
         whichever directory mcp-host runs in"
    )]
    RelativeGlobalPath {
        /// The variable's value.
        value: String,
    },
    /// `MCP_HOST_AUTH_FILE` is a relative path. Against whichever directory the host runs in, a
    /// repository's own file would become the token store: tokens written into a checkout,
    /// and tokens a repository brings taken for the user's.
    #[error(
        "MCP_HOST_AUTH_FILE must be an absolute path, not `{value}`: a relative one names a file \
         in whichever directory mcp-host runs in"
    )]
    RelativeAuthFile {
        /// The variable's value.
        value: String,
    },
    /// No global file: none of `MCP_HOST_CONFIG`, `XDG_CONFIG_HOME` and `HOME` is set.
    #[error("no global configuration file: set MCP_HOST_CONFIG, XDG_CONFIG_HOME or HOME")]
    NoGlobalPath,
    /// The current directory is unknown (for [`discover`]).
    #[error("cannot determine the current directory: {0}")]
    CurrentDir(#[source] io::Error),
}

fn join(problems: &[Problem]) -> String {
    let parts: Vec<String> = problems
        .iter()
        .map(|p| match &p.field {
            Some(f) => format!("`{f}`: {}", p.message),
            None => p.message.clone(),
        })
        .collect();
    parts.join("; ")
}

/// Where the configuration files are for one project directory and environment.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ConfigPaths {
    /// The global file, if a location is known.
    pub global: Option<PathBuf>,
    /// The project directory: where the project files are, and what relative `cwd` values
    /// are relative to.
    pub project_dir: PathBuf,
    /// `<project>/.mcp-host/config.json`: the project file that is edited.
    pub project: PathBuf,
    /// `<project>/.mcp.json`: read, never edited.
    pub project_mcp_json: PathBuf,
    /// The user's private file for this project (the local layer), outside the project's
    /// tree, if a location for the global file is known: a project's tree is shared, so what
    /// one user adds for themselves (and the secrets it holds) must not land in it.
    pub local: Option<PathBuf>,
}

impl ConfigPaths {
    /// The paths for a host started in `cwd` with environment `env` (see the module doc for
    /// the rules). A relative `MCP_HOST_CONFIG` is refused
    /// ([`ConfigError::RelativeGlobalPath`]): read against `cwd`, a file the project brings
    /// would be taken for the user's own. So is a relative `MCP_HOST_AUTH_FILE`
    /// ([`ConfigError::RelativeAuthFile`]), for the token store.
    pub fn new(cwd: &Path, env: &Env) -> Result<Self, ConfigError> {
        if let Some(p) = env.non_empty("MCP_HOST_AUTH_FILE")
            && !Path::new(p).is_absolute()
        {
            return Err(ConfigError::RelativeAuthFile {
                value: p.to_owned(),
            });
        }
        let global = if let Some(p) = env.non_empty("MCP_HOST_CONFIG") {
            if !Path::new(p).is_absolute() {
                return Err(ConfigError::RelativeGlobalPath {
                    value: p.to_owned(),
                });
            }
            Some(PathBuf::from(p))
        } else {
            config_dir(env).map(|d| d.join("mcp-host").join("config.json"))
        };
        let local = global
            .as_deref()
            .map(|g| local_file(&crate::fs::parent_dir(g), cwd));
        Ok(Self {
            global,
            local,
            project_dir: cwd.to_path_buf(),
            project: cwd.join(".mcp-host").join("config.json"),
            project_mcp_json: cwd.join(".mcp.json"),
        })
    }

    /// The paths for this process: its current directory and environment.
    pub fn from_process() -> Result<(Self, Env), ConfigError> {
        let cwd = std::env::current_dir().map_err(ConfigError::CurrentDir)?;
        let env = Env::from_process();
        Ok((Self::new(&cwd, &env)?, env))
    }

    /// Every file, lowest precedence first.
    pub fn files(&self) -> Vec<ConfigFile> {
        let mut files = self.scope_files(Scope::Global);
        files.extend(self.scope_files(Scope::Project));
        files.extend(self.scope_files(Scope::Local));
        files
    }

    /// The files of one layer, lowest precedence first.
    pub fn scope_files(&self, scope: Scope) -> Vec<ConfigFile> {
        match scope {
            Scope::Global => self
                .global
                .iter()
                .map(|p| ConfigFile::new(p, Scope::Global, FileFormat::Native))
                .collect(),
            Scope::Project => vec![
                ConfigFile::new(
                    &self.project_mcp_json,
                    Scope::Project,
                    FileFormat::McpServers,
                ),
                ConfigFile::new(&self.project, Scope::Project, FileFormat::Native),
            ],
            Scope::Local => self
                .local
                .iter()
                .map(|p| ConfigFile::new(p, Scope::Local, FileFormat::Native))
                .collect(),
        }
    }

    /// The file `add`, `remove`, `enable` and `disable` edit for `scope`.
    pub fn editable(&self, scope: Scope) -> Result<&Path, ConfigError> {
        match scope {
            Scope::Global => self.global.as_deref().ok_or(ConfigError::NoGlobalPath),
            Scope::Project => Ok(&self.project),
            Scope::Local => self.local.as_deref().ok_or(ConfigError::NoGlobalPath),
        }
    }

    /// The directory of the global file, where the token store lives by default.
    pub fn global_dir(&self) -> Option<PathBuf> {
        self.global.as_deref().map(crate::fs::parent_dir)
    }
}

/// The local layer's file for the project at `project_dir`: `<dir>/projects/<name>-<hash>.json`,
/// where `name` is the project directory's last component (for a person looking at the
/// directory) and `hash` a 64-bit FNV-1a of its canonical path (so two checkouts of the same
/// name stay apart, and a moved project, like Claude Code's, starts with an empty local layer).
fn local_file(dir: &Path, project_dir: &Path) -> PathBuf {
    let canonical = std::fs::canonicalize(project_dir).unwrap_or_else(|_| project_dir.into());
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for b in canonical.as_os_str().as_encoded_bytes() {
        hash ^= u64::from(*b);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    let name: String = canonical
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .take(48)
        .collect();
    let name = if name.is_empty() || name.starts_with('.') {
        format!("project{name}")
    } else {
        name
    };
    dir.join("projects")
        .join(format!("{name}-{hash:016x}.json"))
}

/// `$XDG_CONFIG_HOME` when set and absolute, else `$HOME/.config`.
fn config_dir(env: &Env) -> Option<PathBuf> {
    env.non_empty("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| env.non_empty("HOME").map(|h| Path::new(h).join(".config")))
}

/// The effective configuration: every file of `paths`, merged.
pub fn load(paths: &ConfigPaths, env: &Env) -> LoadedConfig {
    let (env, problems) = private_variables(paths, env);
    let mut out = load_files(&paths.files(), &env, &paths.project_dir);
    out.problems.extend(problems);
    out
}

/// One layer alone, not merged with the others (for `list --scope local|project|user`).
pub fn load_scope(paths: &ConfigPaths, env: &Env, scope: Scope) -> LoadedConfig {
    let (env, problems) = private_variables(paths, env);
    let mut out = load_files(&paths.scope_files(scope), &env, &paths.project_dir);
    out.problems.extend(problems);
    out
}

/// `env` with the private `variables` of the user's own files added (global, then local, the
/// later winning; see [`set_variables`]) where `env` does not set them: the process's
/// environment always wins, as it does over a `${VAR:-default}`. A project's files are never
/// read for variables: a value it set would be the project's, not the user's.
///
/// A variable's value may be `{"keyring": "NAME"}` (what `import --from vscode` writes for an
/// answered input), read from the keyring here so that `${VAR}` works inside a longer string
/// ("Bearer ${VAR}"); a missing entry is an error naming the variable and the entry, and the
/// variable stays unset (so a server reading it fails too, naming the variable).
fn private_variables(paths: &ConfigPaths, env: &Env) -> (Env, Vec<Problem>) {
    let mut merged: BTreeMap<String, (PathBuf, serde_json::Value)> = BTreeMap::new();
    for path in paths.global.iter().chain(&paths.local) {
        let Ok(bytes) = std::fs::read(path) else {
            continue;
        };
        let Ok(serde_json::Value::Object(top)) = serde_json::from_slice(&bytes) else {
            continue;
        };
        if let Some(serde_json::Value::Object(vars)) = top.get("variables") {
            for (name, value) in vars {
                merged.insert(name.clone(), (path.clone(), value.clone()));
            }
        }
    }
    let mut out = env.clone();
    let mut problems = Vec::new();
    for (name, (file, value)) in merged {
        if env.var(&name).is_some() {
            continue;
        }
        let value = match &value {
            serde_json::Value::String(v) => v.clone(),
            serde_json::Value::Object(o) if o.len() == 1 => {
                let Some(entry) = o.get("keyring").and_then(serde_json::Value::as_str) else {
                    continue;
                };
                let read = if secret::is_keyring_name(entry) {
                    secret::read_keyring(env, entry)
                } else {
                    Err(format!("`{entry}` cannot name a keyring secret"))
                };
                match read {
                    Ok(v) => v.secret().to_owned(),
                    Err(message) => {
                        problems.push(Problem {
                            severity: Severity::Error,
                            file,
                            server: None,
                            field: Some(format!("variables.{name}")),
                            message: format!("variable `{name}` is unset: {message}"),
                        });
                        continue;
                    }
                }
            }
            _ => continue,
        };
        out = out.with(name, value);
    }
    (out, problems)
}

/// `files` (lowest precedence first) read and merged; relative `cwd` values resolved against
/// `project_dir`, `{"env": …}` references against `env`.
pub fn load_files(files: &[ConfigFile], env: &Env, project_dir: &Path) -> LoadedConfig {
    let rs = Resolve {
        env: Some(env),
        project_dir,
    };
    let mut out = LoadedConfig::default();
    let mut servers: BTreeMap<String, (ConfiguredServer, Option<usize>)> = BTreeMap::new();
    let mut rejected: BTreeMap<String, RejectedServer> = BTreeMap::new();
    for file in files {
        let outcome = parse::read_file(file, &rs);
        out.problems.extend(outcome.problems);
        out.files.push(FileReport {
            file: file.clone(),
            status: outcome.status,
        });
        if let Some(n) = outcome.host.max_connections {
            out.host.max_connections = n;
        }
        if let Some(n) = outcome.host.max_result_bytes {
            out.host.max_result_bytes = n;
        }
        for entry in outcome.entries {
            match entry {
                Entry::Server {
                    config,
                    own_max_result,
                } => {
                    rejected.remove(&config.id);
                    servers.insert(config.id.clone(), (*config, own_max_result));
                }
                Entry::DisableMarker { id } => match servers.get_mut(&id) {
                    Some((s, _)) => {
                        s.enabled = false;
                        s.source = file.scope;
                        s.file.clone_from(&file.path);
                    }
                    None => out.problems.push(Problem {
                        severity: Severity::Warning,
                        file: file.path.clone(),
                        server: Some(id),
                        field: Some("enabled".to_owned()),
                        message: "disables no server: no earlier file defines this id".to_owned(),
                    }),
                },
                Entry::Rejected(r) => {
                    servers.remove(&r.id);
                    rejected.insert(r.id.clone(), r);
                }
            }
        }
    }
    let host_max = out.host.max_result_bytes;
    out.servers = servers
        .into_values()
        .map(|(mut s, own)| {
            s.max_result_bytes = own.unwrap_or(host_max);
            s
        })
        .collect();
    out.rejected = rejected.into_values().collect();
    out
}

/// The effective configuration of this process: [`ConfigPaths::from_process`], then [`load`].
pub fn discover() -> Result<LoadedConfig, ConfigError> {
    let (paths, env) = ConfigPaths::from_process()?;
    Ok(load(&paths, &env))
}
