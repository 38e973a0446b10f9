//! Secrets in the configuration: a value type that never prints, the ways a file may give one
//! (inline, or a reference to an environment variable), and the environment the references are
//! resolved against, passed in so that loading is hermetic.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::fmt;

/// A configured value that must never be shown: an environment value for a server, a header
/// value, an OAuth client secret. `Debug` and `Display` print `[redacted]`; the type is not
/// `Serialize`, so it cannot be written back out by accident. The value comes out only through
/// [`Secret::secret`], which marks each place a secret leaves its type.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps a secret value.
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The value: hand it only to where it belongs (a child's environment, a request header,
    /// a token request), never to a log, an error or a status line.
    pub fn secret(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[redacted]")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[redacted]")
    }
}

/// How a file (or the command line) gives a secret: the value itself, or the name of an
/// environment variable read when the configuration is loaded. A plain value read from a file
/// has its `${VAR}` and `${VAR:-default}` references already expanded (`config::expand`); the
/// result is as secret as a value from `{"env": …}`.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SecretSource {
    /// The value, written in the file: `"KEY": "value"`.
    Plain(Secret),
    /// `{"env": "VAR"}`: the value of the variable `VAR` at load time. Loading fails for the
    /// server (naming `VAR`) when it is unset.
    Env(String),
    /// `{"keyring": "NAME"}`: the OS keyring's secret `NAME` (`mcp-host secret set NAME`),
    /// read at load time. Loading fails for the server (naming `NAME`) when it is missing,
    /// or when this build or this machine has no keyring.
    Keyring(String),
}

impl fmt::Debug for SecretSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Plain(_) => f.write_str("Plain([redacted])"),
            Self::Env(var) => f.debug_tuple("Env").field(var).finish(),
            Self::Keyring(name) => f.debug_tuple("Keyring").field(name).finish(),
        }
    }
}

impl SecretSource {
    /// The JSON written to a file for this source: a string, or `{"env": "VAR"}` (the
    /// reference, never its value). This is the one place a configured secret is serialized,
    /// and only into the configuration file the user asked to edit, which `add_server` makes
    /// private when a value is written.
    pub(crate) fn to_json(&self) -> serde_json::Value {
        match self {
            Self::Plain(s) => serde_json::Value::String(s.secret().to_owned()),
            Self::Env(var) => serde_json::json!({ "env": var }),
            Self::Keyring(name) => serde_json::json!({ "keyring": name }),
        }
    }
}

/// Whether `name` may be a `{"keyring": …}` reference: the keyring's own rule for secret
/// names, checked in every build so that a file means the same everywhere.
pub(crate) fn is_keyring_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 128
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

/// The keyring secret `name`, or the message of the configuration problem: it names the entry
/// and the keyring, never a value.
#[cfg(feature = "keyring")]
pub(crate) fn read_keyring(env: &Env, name: &str) -> Result<Secret, String> {
    let keyring = crate::keyring::Keyring::open(env)
        .map_err(|e| format!("keyring secret `{name}` cannot be read: {e}"))?;
    match keyring.secret(name) {
        Ok(Some(s)) => Ok(s),
        Ok(None) => Err(format!(
            "keyring secret `{name}` is not set in the {} keyring; set it with `mcp-host secret set {name}`",
            keyring.kind()
        )),
        Err(e) => Err(format!("keyring secret `{name}` cannot be read: {e}")),
    }
}

/// Without the `keyring` feature no reference resolves.
#[cfg(not(feature = "keyring"))]
pub(crate) fn read_keyring(_env: &Env, name: &str) -> Result<Secret, String> {
    Err(format!(
        "keyring secret `{name}`: OS keyring references are not supported in this build (feature `keyring`); use {{\"env\": \"NAME\"}}"
    ))
}

/// The environment a configuration is loaded against: where the files are
/// (`MCP_HOST_CONFIG`, `XDG_CONFIG_HOME`, `HOME`) and what `{"env": "VAR"}` references resolve
/// to. Passed in rather than read inside, so that tests are hermetic. `Debug` shows the names
/// only.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Env {
    vars: BTreeMap<String, String>,
}

impl Env {
    /// An empty environment.
    pub fn new() -> Self {
        Self::default()
    }

    /// This process's environment. Variables whose name or value is not UTF-8 are left out
    /// (a reference to one reads as unset).
    pub fn from_process() -> Self {
        std::env::vars_os()
            .filter_map(|(k, v): (OsString, OsString)| {
                Some((k.into_string().ok()?, v.into_string().ok()?))
            })
            .collect()
    }

    /// The same environment with `name` set to `value`.
    #[must_use]
    pub fn with(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.vars.insert(name.into(), value.into());
        self
    }

    /// The value of `name`, if set.
    pub fn var(&self, name: &str) -> Option<&str> {
        self.vars.get(name).map(String::as_str)
    }

    /// The value of `name` if set and not empty: how path variables are read.
    pub(crate) fn non_empty(&self, name: &str) -> Option<&str> {
        self.var(name).filter(|v| !v.is_empty())
    }
}

impl<K: Into<String>, V: Into<String>> FromIterator<(K, V)> for Env {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Self {
        Self {
            vars: iter
                .into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
        }
    }
}

impl fmt::Debug for Env {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.vars.keys()).finish()
    }
}

/// `text` made a portable environment variable name (upper case, every other character `_`,
/// never a leading digit): one spelling for the variables that a command line, an import or
/// an editor's input turns a value into, so that each reads and writes the same name.
pub fn variable_name(text: &str) -> String {
    let mut name: String = text
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_uppercase()
            } else {
                '_'
            }
        })
        .collect();
    if name.starts_with(|c: char| c.is_ascii_digit()) {
        name.insert(0, '_');
    }
    name
}

/// Whether a variable or header named `name` holds a credential, by the words its name is
/// made of (`GITHUB_TOKEN`, `X-Api-Key`, `Authorization`, `DB_PASSWORD`): such a value given
/// on the command line must not be written into a project's tree.
pub fn is_secret_name(name: &str) -> bool {
    const WORDS: &[&str] = &[
        "TOKEN",
        "KEY",
        "APIKEY",
        "SECRET",
        "PASSWORD",
        "PASSWD",
        "PASS",
        "PAT",
        "AUTH",
        "AUTHORIZATION",
        "CREDENTIAL",
        "CREDENTIALS",
        "COOKIE",
        "BEARER",
    ];
    let upper = name.to_ascii_uppercase();
    upper.split(|c: char| !c.is_ascii_alphanumeric()).any(|w| {
        WORDS.contains(&w)
            || ["TOKEN", "APIKEY", "PASSWORD", "PASSWD", "SECRET"]
                .iter()
                .any(|end| w.ends_with(end))
    })
}
