//! Which project servers the user has approved. A project's files (`.mcp-host/config.json`,
//! `.mcp.json`) arrive with a repository someone may have cloned, and a server entry is a
//! command to run or a place to send headers to, so a project's server is not started until
//! its user approves it. An approval is kept outside the project, in the user's own
//! `trust.json` next to the global configuration: per project directory (canonical path), per
//! server id, the entry's [`fingerprint`](crate::ConfiguredServer::fingerprint). Editing what the
//! entry runs or where it connects changes the fingerprint and withdraws the approval;
//! cloning the same repository elsewhere starts with none.
//!
//! The global file and a gateway file are the user's own and need no approval.
//!
//! What a person approves must be what runs, so an entry is shown whole before approval:
//! every word of its command line through [`quoted`], and the value of each variable that
//! changes what runs ([`CHANGES_WHAT_RUNS`]), the others by name only.
//!
//! The file is written atomically under a lock on `trust.json.lock`, like the token store;
//! the calls block on file I/O.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};

use crate::config::{ConfigPaths, ConfiguredServer, Scope};
use crate::fs::{self, FileLock, PRIVATE_MODE};

/// The approvals file's name.
pub const TRUST_FILE_NAME: &str = "trust.json";

/// The environment variables whose value changes which program a server's command runs, or
/// what code that program loads or downloads before it runs: a project's `"PATH": "./bin:…"`
/// makes an approved `node server.js` run the project's own `./bin/node`. Before a project's
/// server is approved, the value the entry sets for one of these is shown in full, flagged;
/// every other variable is shown by name only, since its value may be a key.
///
/// This list is the one place that decides it ([`changes_what_runs`]). A name ending in `*`
/// covers every name with that prefix. Names are compared ignoring ASCII case (npm reads
/// `npm_config_*`, proxies are read as `http_proxy` too). The list errs on the side of
/// showing: a value shown here was written in the project's file, not taken from the user.
pub const CHANGES_WHAT_RUNS: &[&str] = &[
    // Which program a name resolves to, and the dynamic loader's libraries and hooks.
    "PATH",
    "LD_*",
    "DYLD_*",
    "GCONV_PATH",
    "HOME",
    "XDG_CONFIG_HOME",
    "SHELL",
    // Shells: startup files, exported functions, options.
    "BASH_ENV",
    "ENV",
    "BASH_FUNC_*",
    "SHELLOPTS",
    "BASHOPTS",
    "PS4",
    "IFS",
    // Node.js, and which package `npx` fetches.
    "NODE_*",
    "NPM_CONFIG_*",
    // Python, and which package `uvx` or `pip` fetches.
    "PYTHON*",
    "VIRTUAL_ENV",
    "UV_*",
    "PIP_*",
    // Rust and Cargo.
    "RUSTFLAGS",
    "RUSTDOCFLAGS",
    "RUSTC",
    "RUSTC_WRAPPER",
    "CARGO_*",
    // Git runs helpers and hooks named in its variables.
    "GIT_*",
    // Perl and Ruby.
    "PERL*",
    "RUBY*",
    "GEM_HOME",
    "GEM_PATH",
    "BUNDLE_*",
    // Java.
    "JAVA_TOOL_OPTIONS",
    "_JAVA_OPTIONS",
    "JDK_JAVA_OPTIONS",
    "JAVA_HOME",
    "CLASSPATH",
    // Go.
    "GOFLAGS",
    "GOPROXY",
    "GOPATH",
    "GOROOT",
    // What a fetched package is checked against, and who is trusted to deliver it.
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "REQUESTS_CA_BUNDLE",
    "CURL_CA_BUNDLE",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
];

/// Whether the variable `name` changes what a server's command runs ([`CHANGES_WHAT_RUNS`]).
pub fn changes_what_runs(name: &str) -> bool {
    CHANGES_WHAT_RUNS
        .iter()
        .any(|rule| match rule.strip_suffix('*') {
            Some(prefix) => name
                .get(..prefix.len())
                .is_some_and(|head| head.eq_ignore_ascii_case(prefix)),
            None => name.eq_ignore_ascii_case(rule),
        })
}

/// A command, an argument, a directory or a value as a person must see it before approving
/// a server: as written when it is plain, else quoted as a POSIX shell would read it back,
/// so that `"two words"` and `"two" "words"` look different. Control characters (terminal
/// escapes among them), invisible and direction-changing characters, and any other character
/// outside printable ASCII (a look-alike letter) are written as escapes in `$'…'`, never
/// passed to the terminal.
pub fn quoted(word: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "_-./:=@%+,".contains(c);
    if !word.is_empty() && word.chars().all(plain) {
        return word.to_owned();
    }
    if word.chars().all(|c| c.is_ascii_graphic() || c == ' ') {
        return format!("'{}'", word.replace('\'', r"'\''"));
    }
    let mut out = String::from("$'");
    for c in word.chars() {
        match c {
            '\\' => out.push_str(r"\\"),
            '\'' => out.push_str(r"\'"),
            '\n' => out.push_str(r"\n"),
            '\t' => out.push_str(r"\t"),
            '\r' => out.push_str(r"\r"),
            '\u{7}' => out.push_str(r"\a"),
            '\u{1b}' => out.push_str(r"\e"),
            ' '..='~' => out.push(c),
            c if (c as u32) < 0x100 => out.push_str(&format!(r"\x{:02x}", c as u32)),
            c if (c as u32) < 0x1_0000 => out.push_str(&format!(r"\u{:04x}", c as u32)),
            c => out.push_str(&format!(r"\U{:08x}", c as u32)),
        }
    }
    out.push('\'');
    out
}

/// The file's format version; another one is refused rather than rewritten.
const VERSION: u64 = 1;

/// Why the approvals could not be read or written. Messages name the file and never quote
/// its contents.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TrustError {
    /// Reading failed for a reason other than the file being absent.
    #[error("cannot read the approvals file {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: io::Error,
    },
    /// Locking or writing failed.
    #[error("cannot write the approvals file {}: {source}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: io::Error,
    },
    /// The file is not one this version understands; it is left as it is.
    #[error("the approvals file {} is unreadable ({why}); move it away and approve the project's servers again", path.display())]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        why: String,
    },
}

/// The approvals of one project: server id to the fingerprint approved.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Approvals {
    servers: BTreeMap<String, String>,
}

impl Approvals {
    /// Whether `server` may run: always for a server from the user's own files, and for a
    /// project's server only if this very entry was approved.
    pub fn approves(&self, server: &ConfiguredServer) -> bool {
        server.source != Scope::Project || self.servers.get(&server.id) == Some(&server.fingerprint)
    }

    /// Whether `id` was approved at all in this project, as it is now or as it was.
    pub fn knows(&self, id: &str) -> bool {
        self.servers.contains_key(id)
    }
}

/// The approvals file at one path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrustStore {
    path: PathBuf,
}

impl TrustStore {
    /// The file at `path`.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self { path: path.into() }
    }

    /// `trust.json` in the global configuration file's directory; `None` when that is not
    /// known (no `HOME`), in which case no project server can be approved.
    pub fn default_path(paths: &ConfigPaths) -> Option<PathBuf> {
        paths.global_dir().map(|d| d.join(TRUST_FILE_NAME))
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The approvals for the project at `project_dir`. A missing file approves nothing.
    pub fn approvals(&self, project_dir: &Path) -> Result<Approvals, TrustError> {
        let mut projects = self.read()?;
        Ok(Approvals {
            servers: projects
                .remove(&project_key(project_dir))
                .unwrap_or_default(),
        })
    }

    /// Approves `servers` (each as it is written now) in the project at `project_dir`, keeping
    /// every other approval. Servers not from a project file need none and are skipped.
    pub fn approve<'a>(
        &self,
        project_dir: &Path,
        servers: impl IntoIterator<Item = &'a ConfiguredServer>,
    ) -> Result<(), TrustError> {
        self.approve_fingerprints(
            project_dir,
            servers
                .into_iter()
                .filter(|s| s.source == Scope::Project)
                .map(|s| (s.id.as_str(), s.fingerprint.as_str())),
        )
    }

    /// Approves entries by id and [`fingerprint`](ConfiguredServer::fingerprint), for an entry
    /// that is not usable yet ([`RejectedServer::fingerprint`](crate::config::RejectedServer)):
    /// its author approves it as they wrote it.
    pub fn approve_fingerprints<'a>(
        &self,
        project_dir: &Path,
        entries: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<(), TrustError> {
        let entries: Vec<(&str, &str)> = entries.into_iter().collect();
        if entries.is_empty() {
            return Ok(());
        }
        let _lock = FileLock::acquire(&self.path).map_err(|e| self.write_err(e))?;
        let mut projects = self.read()?;
        let project = projects.entry(project_key(project_dir)).or_default();
        for (id, fingerprint) in entries {
            project.insert(id.to_owned(), fingerprint.to_owned());
        }
        self.write(projects)
    }

    /// Withdraws the approval of server `id` in the project at `project_dir`; whether there
    /// was one.
    pub fn revoke(&self, project_dir: &Path, id: &str) -> Result<bool, TrustError> {
        let _lock = FileLock::acquire(&self.path).map_err(|e| self.write_err(e))?;
        let mut projects = self.read()?;
        let key = project_key(project_dir);
        let Some(project) = projects.get_mut(&key) else {
            return Ok(false);
        };
        let found = project.remove(id).is_some();
        if project.is_empty() {
            projects.remove(&key);
        }
        if found {
            self.write(projects)?;
        }
        Ok(found)
    }

    /// Withdraws every approval in the project at `project_dir` (`mcp-host
    /// reset-project-choices`, as Claude Code's): each of its servers asks again. Returns how
    /// many there were.
    pub fn revoke_all(&self, project_dir: &Path) -> Result<usize, TrustError> {
        let _lock = FileLock::acquire(&self.path).map_err(|e| self.write_err(e))?;
        let mut projects = self.read()?;
        let Some(project) = projects.remove(&project_key(project_dir)) else {
            return Ok(0);
        };
        self.write(projects)?;
        Ok(project.len())
    }

    fn write_err(&self, source: io::Error) -> TrustError {
        TrustError::Write {
            path: self.path.clone(),
            source,
        }
    }

    fn read(&self) -> Result<Projects, TrustError> {
        let bytes = match std::fs::read(&self.path) {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Projects::new()),
            Err(source) => {
                return Err(TrustError::Read {
                    path: self.path.clone(),
                    source,
                });
            }
        };
        let corrupt = |why: String| TrustError::Corrupt {
            path: self.path.clone(),
            why,
        };
        let file: TrustFile = serde_json::from_slice(&bytes)
            .map_err(|e| corrupt(crate::config::json_error_text(&e)))?;
        if file.version != VERSION {
            return Err(corrupt(format!(
                "version {}, not {VERSION}, the one this program knows",
                file.version
            )));
        }
        Ok(file.projects)
    }

    fn write(&self, projects: Projects) -> Result<(), TrustError> {
        let file = TrustFile {
            version: VERSION,
            projects,
        };
        let mut bytes =
            serde_json::to_vec_pretty(&file).map_err(|e| self.write_err(io::Error::other(e)))?;
        bytes.push(b'\n');
        fs::write_atomic(&self.path, &bytes, PRIVATE_MODE).map_err(|e| self.write_err(e))
    }
}

/// Project directory to (server id to approved fingerprint).
type Projects = BTreeMap<String, BTreeMap<String, String>>;

/// `trust.json` as it is on disk.
#[derive(serde::Serialize, serde::Deserialize)]
struct TrustFile {
    version: u64,
    projects: Projects,
}

/// A project's key: its canonical path, so that `.`, a symbolic link and the full path are
/// one project; the path as given when it cannot be resolved (it no longer exists).
fn project_key(dir: &Path) -> String {
    std::fs::canonicalize(dir)
        .unwrap_or_else(|_| dir.to_path_buf())
        .to_string_lossy()
        .into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_variables_that_change_what_runs() {
        for name in [
            "PATH",
            "LD_PRELOAD",
            "LD_AUDIT",
            "DYLD_INSERT_LIBRARIES",
            "NODE_OPTIONS",
            "npm_config_registry",
            "PYTHONSTARTUP",
            "GIT_SSH_COMMAND",
            "BASH_FUNC_node%%",
            "_JAVA_OPTIONS",
            "PERL5OPT",
        ] {
            assert!(changes_what_runs(name), "{name}");
        }
        for name in ["API_KEY", "DATABASE_URL", "PATHS", "LD", "GITHUB_TOKEN", ""] {
            assert!(!changes_what_runs(name), "{name}");
        }
    }

    #[test]
    fn quoting_tells_words_apart_and_shows_every_character() {
        for (word, shown) in [
            ("server.js", "server.js"),
            ("--port=8080", "--port=8080"),
            ("", "''"),
            ("two words", "'two words'"),
            ("it's", r"'it'\''s'"),
            ("$HOME;rm", "'$HOME;rm'"),
            ("\u{1b}]0;t\u{7}x", r"$'\e]0;t\ax'"),
            ("a\nb\\", r"$'a\nb\\'"),
            ("n\u{43e}de", r"$'n\u043ede'"),
            ("\u{202e}cba", r"$'\u202ecba'"),
            ("\u{1f600}", r"$'\U0001f600'"),
        ] {
            assert_eq!(quoted(word), shown, "{word:?}");
        }
    }
}
