//! The command line's edits of one configuration file (`add`, `remove`, `enable`,
//! `disable`): read the file as JSON, change one server, keep every other key and server,
//! write it back atomically under a lock. Keys come back in alphabetical order (the workspace's
//! `serde_json` has no `preserve_order`); values and unknown keys are kept as written.

use std::fmt;
use std::path::Path;

use serde_json::{Map, Value, json};

use super::ConfigError;
use super::detect::{self, DetectError, Detected};
use super::model::{ConfigFile, FileFormat, Scope, ShownUrlText};
use super::parse::{self, Cx, Entry, Resolve};
use super::secret::{Secret, SecretSource};
use crate::fs::{self, FileLock, PRIVATE_MODE};

/// How a server added from the command line is reached. `Debug` redacts secret values and
/// shows URLs without user info and query.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum NewTransport {
    /// A local program.
    Stdio {
        /// The program.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Its working directory, written as given.
        cwd: Option<String>,
        /// Its environment: values or `{"env": "VAR"}` references.
        env: Vec<(String, SecretSource)>,
    },
    /// An HTTP server.
    Http {
        /// The endpoint, an `http(s)` URL.
        url: String,
        /// Static headers: values or references.
        headers: Vec<(String, SecretSource)>,
        /// The deprecated HTTP+SSE transport only (`"transport": "sse"`).
        legacy_sse: bool,
    },
}

/// OAuth options given on the command line; each is written only when set. `Debug` redacts
/// like [`NewTransport`]'s.
#[derive(Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct NewOAuth {
    /// `--oauth-authorization-url`.
    pub authorization_url: Option<String>,
    /// `--oauth-token-url`.
    pub token_url: Option<String>,
    /// `--oauth-registration-url`.
    pub registration_url: Option<String>,
    /// `--oauth-client-id`.
    pub client_id: Option<String>,
    /// `--oauth-client-secret` (a value or a reference).
    pub client_secret: Option<SecretSource>,
    /// `--oauth-scope`.
    pub scope: Option<String>,
}

impl fmt::Debug for NewTransport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Stdio {
                command,
                args,
                cwd,
                env,
            } => f
                .debug_struct("Stdio")
                .field("command", command)
                .field("args", args)
                .field("cwd", cwd)
                .field("env", env)
                .finish(),
            Self::Http {
                url,
                headers,
                legacy_sse,
            } => f
                .debug_struct("Http")
                .field("url", &ShownUrlText(url))
                .field("headers", headers)
                .field("legacy_sse", legacy_sse)
                .finish(),
        }
    }
}

impl fmt::Debug for NewOAuth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fn url(u: &Option<String>) -> Option<ShownUrlText<'_>> {
            u.as_deref().map(ShownUrlText)
        }
        f.debug_struct("NewOAuth")
            .field("authorization_url", &url(&self.authorization_url))
            .field("token_url", &url(&self.token_url))
            .field("registration_url", &url(&self.registration_url))
            .field("client_id", &self.client_id)
            .field("client_secret", &self.client_secret)
            .field("scope", &self.scope)
            .finish()
    }
}

impl NewOAuth {
    fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

/// A server entry to write with [`add_server`]: what `mcp-host add` collects from its flags.
/// Fields left `None` are not written, so the defaults apply when the file is read.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct NewServer {
    /// How it is reached.
    pub transport: NewTransport,
    /// `--enabled`.
    pub enabled: Option<bool>,
    /// `--request-timeout-ms`.
    pub request_timeout_ms: Option<u64>,
    /// `--oauth-*` (HTTP only).
    pub oauth: NewOAuth,
}

impl NewServer {
    /// A stdio server started by `command` with `args`.
    pub fn stdio(
        command: impl Into<String>,
        args: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        Self::with(NewTransport::Stdio {
            command: command.into(),
            args: args.into_iter().map(Into::into).collect(),
            cwd: None,
            env: Vec::new(),
        })
    }

    /// A Streamable HTTP server at `url`.
    pub fn http(url: impl Into<String>) -> Self {
        Self::with(NewTransport::Http {
            url: url.into(),
            headers: Vec::new(),
            legacy_sse: false,
        })
    }

    /// The `add <id> <url-or-command>` shorthand: seed 003's auto-detection (see
    /// [`detect`](super::detect())).
    pub fn from_spec(spec: &str) -> Result<Self, DetectError> {
        Ok(match detect::detect(spec)? {
            Detected::Http { url } => Self::http(url.as_str()),
            Detected::LegacySse { url } => Self::with(NewTransport::Http {
                url: url.to_string(),
                headers: Vec::new(),
                legacy_sse: true,
            }),
            Detected::Stdio { command, args } => Self::stdio(command, args),
        })
    }

    fn with(transport: NewTransport) -> Self {
        Self {
            transport,
            enabled: None,
            request_timeout_ms: None,
            oauth: NewOAuth::default(),
        }
    }

    /// Whether a secret is given as a value rather than a reference: writing it makes the file
    /// private (see [`add_server`]).
    fn has_inline_secret(&self) -> bool {
        let pairs = match &self.transport {
            NewTransport::Stdio { env, .. } => env,
            NewTransport::Http { headers, .. } => headers,
        };
        pairs
            .iter()
            .map(|(_, v)| v)
            .chain(&self.oauth.client_secret)
            .any(|v| matches!(v, SecretSource::Plain(_)))
    }

    /// The entry as written to a file. Secret values given inline are written inline: that is
    /// what the user asked for, and [`add_server`] makes such a file private.
    fn to_json(&self) -> Value {
        let mut m = Map::new();
        let secrets = |pairs: &[(String, SecretSource)]| -> Value {
            Value::Object(
                pairs
                    .iter()
                    .map(|(k, v)| (k.clone(), v.to_json()))
                    .collect(),
            )
        };
        match &self.transport {
            NewTransport::Stdio {
                command,
                args,
                cwd,
                env,
            } => {
                m.insert("transport".into(), json!("stdio"));
                m.insert("command".into(), json!(command));
                if !args.is_empty() {
                    m.insert("args".into(), json!(args));
                }
                if let Some(cwd) = cwd {
                    m.insert("cwd".into(), json!(cwd));
                }
                if !env.is_empty() {
                    m.insert("env".into(), secrets(env));
                }
            }
            NewTransport::Http {
                url,
                headers,
                legacy_sse,
            } => {
                let kind = if *legacy_sse { "sse" } else { "http" };
                m.insert("transport".into(), json!(kind));
                m.insert("url".into(), json!(url));
                if !headers.is_empty() {
                    m.insert("headers".into(), secrets(headers));
                }
            }
        }
        if let Some(enabled) = self.enabled {
            m.insert("enabled".into(), json!(enabled));
        }
        if let Some(ms) = self.request_timeout_ms {
            m.insert("request_timeout_ms".into(), json!(ms));
        }
        if !self.oauth.is_empty() {
            let o = &self.oauth;
            let mut om = Map::new();
            let strings = [
                ("authorization_url", &o.authorization_url),
                ("token_url", &o.token_url),
                ("registration_url", &o.registration_url),
                ("client_id", &o.client_id),
                ("scope", &o.scope),
            ];
            for (k, v) in strings {
                if let Some(v) = v {
                    om.insert(k.into(), json!(v));
                }
            }
            if let Some(s) = &o.client_secret {
                om.insert("client_secret".into(), s.to_json());
            }
            m.insert("oauth".into(), Value::Object(om));
        }
        Value::Object(m)
    }
}

/// Adds server `id` to the native-format file at `path`, creating the file (mode 0600) and its
/// directory when missing. Fails with [`ConfigError::ServerExists`] when the file already has
/// `id`, unless `replace`. The entry is validated as a load would (secret references are not
/// resolved) and refused with [`ConfigError::InvalidEntry`] if it has an error.
///
/// An existing file keeps its permissions, except that writing a secret given as a value
/// takes away the group's and others' rights: a file that was readable by others before
/// need not have held anything secret.
pub fn add_server(
    path: &Path,
    id: &str,
    server: &NewServer,
    replace: bool,
) -> Result<(), ConfigError> {
    check_id(id)?;
    let entry = server.to_json();
    let file = ConfigFile::new(path, Scope::Project, FileFormat::Native);
    let mut cx = Cx::new(&file);
    let here = Path::new(".");
    let rs = Resolve {
        env: None,
        project_dir: here,
    };
    if let Entry::Rejected(_) = parse::parse_entry(&mut cx, id, &entry, &rs) {
        return Err(ConfigError::InvalidEntry {
            id: id.to_owned(),
            problems: cx.problems.into_iter().filter(|p| p.is_error()).collect(),
        });
    }
    edit(path, server.has_inline_secret(), |servers| {
        if servers.contains_key(id) && !replace {
            return Err(ConfigError::ServerExists {
                id: id.to_owned(),
                path: path.to_path_buf(),
            });
        }
        servers.insert(id.to_owned(), entry);
        Ok(())
    })
}

/// Removes server `id` from the file at `path` (only that file: another layer's definition of
/// the same id stays effective). [`ConfigError::ServerNotFound`] when the file lacks it.
pub fn remove_server(path: &Path, id: &str) -> Result<(), ConfigError> {
    edit(path, false, |servers| match servers.remove(id) {
        Some(_) => Ok(()),
        None => Err(not_found(path, id)),
    })
}

/// Sets `enabled` on server `id` in the file at `path`.
///
/// Disabling an id the file does not have writes `{"enabled": false}` alone: a marker that
/// disables the lower layer's server of that id (how a project turns off a global server).
/// Enabling an id whose entry is only such a marker removes the marker. Enabling an id the
/// file does not have is [`ConfigError::ServerNotFound`].
pub fn set_enabled(path: &Path, id: &str, enabled: bool) -> Result<(), ConfigError> {
    check_id(id)?;
    edit(path, false, |servers| {
        match servers.get_mut(id) {
            Some(Value::Object(entry)) => {
                if enabled && entry.keys().all(|k| k == "enabled") {
                    servers.remove(id);
                } else {
                    entry.insert("enabled".into(), json!(enabled));
                }
            }
            Some(_) => {
                return Err(ConfigError::Invalid {
                    path: path.to_path_buf(),
                    message: format!("the entry of server `{id}` is not an object"),
                });
            }
            None if enabled => return Err(not_found(path, id)),
            None => {
                servers.insert(id.to_owned(), json!({ "enabled": false }));
            }
        }
        Ok(())
    })
}

/// Sets `permission.tools.<tool>` to `"allow"` on server `id` in the file at `path`: a
/// person's "always allow this tool" answer at the approval question, kept where the next
/// process honours it. That is the user's own file: a project file's `allow` is read as `ask`,
/// so writing it there would be silently ignored. The rest of the entry is kept as it is.
/// [`ConfigError::ServerNotFound`] when the file lacks `id`.
pub fn allow_tool(path: &Path, id: &str, tool: &str) -> Result<(), ConfigError> {
    check_id(id)?;
    let invalid = |message: String| ConfigError::Invalid {
        path: path.to_path_buf(),
        message,
    };
    edit(path, false, |servers| {
        let Some(entry) = servers.get_mut(id) else {
            return Err(not_found(path, id));
        };
        let Value::Object(entry) = entry else {
            return Err(invalid(format!(
                "the entry of server `{id}` is not an object"
            )));
        };
        let permission = entry.entry("permission").or_insert_with(|| json!({}));
        let Value::Object(permission) = permission else {
            return Err(invalid(format!(
                "`permission` of server `{id}` is not an object"
            )));
        };
        let tools = permission.entry("tools").or_insert_with(|| json!({}));
        let Value::Object(tools) = tools else {
            return Err(invalid(format!(
                "`permission.tools` of server `{id}` is not an object"
            )));
        };
        tools.insert(tool.to_owned(), json!("allow"));
        Ok(())
    })
}

fn check_id(id: &str) -> Result<(), ConfigError> {
    if parse::is_valid_server_id(id) {
        Ok(())
    } else {
        Err(ConfigError::InvalidServerId { id: id.to_owned() })
    }
}

fn not_found(path: &Path, id: &str) -> ConfigError {
    ConfigError::ServerNotFound {
        id: id.to_owned(),
        path: path.to_path_buf(),
    }
}

/// Read-modify-write of `mcp.servers` in the file at `path`, under a lock on its directory.
/// `private`: the change writes a secret, so an existing file loses its group and other rights.
fn edit(
    path: &Path,
    private: bool,
    change: impl FnOnce(&mut Map<String, Value>) -> Result<(), ConfigError>,
) -> Result<(), ConfigError> {
    let invalid = |message: &str| ConfigError::Invalid {
        path: path.to_path_buf(),
        message: message.to_owned(),
    };
    edit_top(path, private, |top| {
        let mcp = top.entry("mcp").or_insert_with(|| json!({}));
        let Value::Object(mcp) = mcp else {
            return Err(invalid("`mcp` is not an object"));
        };
        let servers = mcp.entry("servers").or_insert_with(|| json!({}));
        let Value::Object(servers) = servers else {
            return Err(invalid("`mcp.servers` is not an object"));
        };
        change(servers)
    })
}

/// Sets private variables in the user's own native file at `path` (the local or global layer):
/// the top-level `variables` object, from which `${VAR}` and `{"env": "VAR"}` references of
/// every layer are resolved when the process's environment does not set `VAR`. This is where a
/// secret typed on the command line for a project's server goes, so that the project's file
/// (in its tree) holds only the reference. The file is made private.
pub fn set_variables(path: &Path, vars: &[(String, Secret)]) -> Result<(), ConfigError> {
    insert_variables(
        path,
        vars.iter()
            .map(|(name, value)| (name.clone(), json!(value.secret()))),
    )
}

/// Sets private variables (as [`set_variables`]) whose values stay in the OS keyring: each
/// becomes `{"keyring": "NAME"}`, read when the configuration loads, so the file holds no
/// value at all (`import --from vscode` keeps an answered input this way).
pub fn set_keyring_variables(path: &Path, vars: &[(String, String)]) -> Result<(), ConfigError> {
    insert_variables(
        path,
        vars.iter()
            .map(|(name, entry)| (name.clone(), json!({ "keyring": entry }))),
    )
}

/// Writes `vars` into the `variables` object of the user's own file at `path` (made private),
/// the one place both kinds of private variable are written.
fn insert_variables(
    path: &Path,
    vars: impl IntoIterator<Item = (String, Value)>,
) -> Result<(), ConfigError> {
    edit_top(path, true, |top| {
        let map = top.entry("variables").or_insert_with(|| json!({}));
        let Value::Object(map) = map else {
            return Err(ConfigError::Invalid {
                path: path.to_path_buf(),
                message: "`variables` is not an object".to_owned(),
            });
        };
        map.extend(vars);
        Ok(())
    })
}

/// Read-modify-write of the top-level object of the native file at `path`.
fn edit_top(
    path: &Path,
    private: bool,
    change: impl FnOnce(&mut Map<String, Value>) -> Result<(), ConfigError>,
) -> Result<(), ConfigError> {
    let write_err = |source| ConfigError::Write {
        path: path.to_path_buf(),
        source,
    };
    // The directory is locked, not a sidecar file: a project's `.mcp-host/` keeps no
    // `config.json.lock` in the tree.
    let _lock = FileLock::acquire_dir(&fs::parent_dir(path)).map_err(write_err)?;
    let invalid = |message: &str| ConfigError::Invalid {
        path: path.to_path_buf(),
        message: message.to_owned(),
    };
    let mut doc = match std::fs::read(path) {
        Ok(bytes) => serde_json::from_slice::<Value>(&bytes).map_err(|e| ConfigError::Invalid {
            path: path.to_path_buf(),
            message: format!(
                "the file is {}; fix it by hand first",
                parse::json_error_text(&e)
            ),
        })?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => json!({}),
        Err(source) => {
            return Err(ConfigError::Read {
                path: path.to_path_buf(),
                source,
            });
        }
    };
    let Value::Object(top) = &mut doc else {
        return Err(invalid("the file is not a JSON object"));
    };
    if top.contains_key("mcpServers") && !top.contains_key("mcp") {
        return Err(invalid(
            "the file is in the `mcpServers` format, which is read but not edited",
        ));
    }
    match top.get("version") {
        None => {
            top.insert("version".into(), json!(1));
        }
        Some(v) if v.as_u64() == Some(1) => {}
        Some(_) => return Err(invalid("unsupported `version`; only version 1 is known")),
    }
    change(top)?;
    let mut bytes = serde_json::to_vec_pretty(&doc).map_err(|e| write_err(e.into()))?;
    bytes.push(b'\n');
    // A new file may hold secrets, so it is private; an existing one keeps its rights unless
    // a secret is being written into it.
    let mode = match fs::mode_of(path) {
        Some(m) if private => m & !0o077,
        Some(m) => m,
        None => PRIVATE_MODE,
    };
    fs::write_atomic(path, &bytes, mode).map_err(write_err)
}

/// How each id fared when imported servers were written (`mcp-host import`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum WriteOutcome {
    /// Added.
    Added,
    /// The file had this id; it was replaced (`force`).
    Replaced,
    /// The file had this id; it was left as it was.
    SkippedExisting,
}

/// Adds already-built native entries (`mcp-host import`) in one locked edit of the file at
/// `path`: an id the file has is kept unless `force`, which replaces it. Imported entries
/// hold secrets only as references, so the file's permissions are left as they are.
pub(crate) fn add_entries(
    path: &Path,
    entries: &[(String, Value)],
    force: bool,
) -> Result<Vec<(String, WriteOutcome)>, ConfigError> {
    for (id, _) in entries {
        check_id(id)?;
    }
    let mut outcomes = Vec::new();
    edit(path, false, |servers| {
        for (id, entry) in entries {
            let outcome = match (servers.contains_key(id), force) {
                (false, _) => WriteOutcome::Added,
                (true, true) => WriteOutcome::Replaced,
                (true, false) => {
                    outcomes.push((id.clone(), WriteOutcome::SkippedExisting));
                    continue;
                }
            };
            servers.insert(id.clone(), entry.clone());
            outcomes.push((id.clone(), outcome));
        }
        Ok(())
    })?;
    Ok(outcomes)
}
