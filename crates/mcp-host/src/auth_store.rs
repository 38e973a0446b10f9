//! The token store file, `mcp-auth.json`: read, updated under a lock, written atomically.
//!
//! The format is `mcp_oauth::store::AuthFile`'s (version 2: seed 000's `servers`, plus the
//! dynamically registered `clients` keyed by their authorization server's `issuer`; version 1
//! files are read and migrated), with one more member per server: `url`, the MCP endpoint the
//! tokens were obtained for. Tokens are keyed by server id and bound to that URL: an entry
//! whose `url` differs from the server's configured URL (or that has none) is not used, so
//! editing a server's URL never sends its old tokens to a new host; the next login replaces
//! the entry. Registrations are shared by every server behind the same authorization server,
//! and never used with another one.
//!
//! The file lives next to the global configuration file (`<config dir>/mcp-auth.json`), or at
//! `$MCP_HOST_AUTH_FILE`. It is always written with mode 0600, and narrowed to 0600 when found
//! wider. A symbolic link in its place is read through, but its target's mode is never
//! changed, and a write replaces the link with a file of our own (mode 0600).
//! [`AuthStore::update`] takes an exclusive lock on the sidecar `mcp-auth.json.lock`,
//! re-reads the file, applies the change and writes it atomically, so two processes updating
//! different servers never lose each other's writes. The lock file is never opened through a
//! symbolic link: one in its place fails the update, and nothing is created where it points.
//!
//! The calls block (file I/O, and waiting for another process's lock, which is held only for
//! one read-modify-write); async callers run them with `tokio::task::spawn_blocking`.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};

use mcp_oauth::store::{AuthFile, ClientRegistration, ServerTokens};
use serde_json::Value;
use url::Url;

use crate::config::{ConfigPaths, Env, shown_url};
use crate::fs::{self, FileLock, PRIVATE_MODE};

/// Registrations by issuer.
type Clients = BTreeMap<String, ClientRegistration>;

/// The token store's file name.
pub const AUTH_FILE_NAME: &str = "mcp-auth.json";

/// Why the token store could not be read or written. Messages name the file and never quote
/// its contents.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AuthStoreError {
    /// Reading failed for a reason other than the file being absent.
    #[error("cannot read the token store {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: io::Error,
    },
    /// Locking or writing failed.
    #[error("cannot write the token store {}: {source}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: io::Error,
    },
    /// The file is not a token store this version understands. It is left as it is; logging
    /// in again after moving it away starts a fresh one.
    #[error("the token store {} is unreadable ({source}); move it away and log in again", path.display())]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// What `mcp-oauth` found (it names a position, never a value).
        #[source]
        source: mcp_oauth::Error,
    },
}

/// One server's stored tokens and the endpoint they belong to. `Debug` shows the endpoint as
/// [`shown_url`] does (its query may carry a key) and the tokens redacted.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct StoredTokens {
    /// The MCP endpoint the tokens were obtained for; `None` for an entry written by another
    /// program, which is never used.
    pub url: Option<String>,
    /// The tokens (secrets print as `[redacted]`).
    pub tokens: ServerTokens,
}

impl std::fmt::Debug for StoredTokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let url = self
            .url
            .as_deref()
            .map(|u| Url::parse(u).map_or_else(|_| "[not a URL]".to_owned(), |u| shown_url(&u)));
        f.debug_struct("StoredTokens")
            .field("url", &url)
            .field("tokens", &self.tokens)
            .finish()
    }
}

impl StoredTokens {
    /// Whether these tokens belong to `url`.
    pub fn is_for(&self, url: &Url) -> bool {
        self.url.as_deref() == Some(url.as_str())
    }
}

/// The token store at one path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthStore {
    path: PathBuf,
}

impl AuthStore {
    /// The store at `path`.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self { path: path.into() }
    }

    /// Where the store is by default: `$MCP_HOST_AUTH_FILE`, else `mcp-auth.json` in the
    /// global configuration file's directory. `None` when neither is known, and for a
    /// relative `MCP_HOST_AUTH_FILE`, which [`ConfigPaths::new`] refuses: it would name a
    /// file of whatever directory the host runs in, a repository's among them.
    pub fn default_path(paths: &ConfigPaths, env: &Env) -> Option<PathBuf> {
        match env.var("MCP_HOST_AUTH_FILE").filter(|v| !v.is_empty()) {
            Some(p) => Some(PathBuf::from(p)).filter(|p| p.is_absolute()),
            None => paths.global_dir().map(|d| d.join(AUTH_FILE_NAME)),
        }
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Every entry, by server id. A missing file is an empty store.
    pub fn load(&self) -> Result<BTreeMap<String, StoredTokens>, AuthStoreError> {
        Ok(self.read()?.0)
    }

    /// The tokens of server `id` if they were obtained for `url`.
    pub fn tokens(&self, id: &str, url: &Url) -> Result<Option<ServerTokens>, AuthStoreError> {
        Ok(self
            .read()?
            .0
            .remove(id)
            .filter(|s| s.is_for(url))
            .map(|s| s.tokens))
    }

    /// The dynamically registered clients, by the `issuer` of their authorization server.
    pub fn registrations(&self) -> Result<BTreeMap<String, ClientRegistration>, AuthStoreError> {
        Ok(self.read()?.1)
    }

    /// Adds (or replaces) registrations under the lock, by issuer, keeping everything else.
    pub fn add_registrations(
        &self,
        registrations: Vec<(String, ClientRegistration)>,
    ) -> Result<(), AuthStoreError> {
        if registrations.is_empty() {
            return Ok(());
        }
        let _lock = FileLock::acquire(&self.path).map_err(|e| self.write_err(e))?;
        let (entries, mut clients) = self.read()?;
        clients.extend(registrations);
        self.write(&entries, &clients)
    }

    /// Changes the entry of server `id` at `url` under the lock: `change` gets the current
    /// tokens (`None` if there are none, or they belong to another URL) and returns the new
    /// ones (`None` removes the entry). Other servers' entries are re-read under the lock and
    /// kept. Returns what was stored.
    pub fn update<F>(
        &self,
        id: &str,
        url: &Url,
        change: F,
    ) -> Result<Option<ServerTokens>, AuthStoreError>
    where
        F: FnOnce(Option<&ServerTokens>) -> Option<ServerTokens>,
    {
        let _lock = FileLock::acquire(&self.path).map_err(|e| self.write_err(e))?;
        let (mut entries, clients) = self.read()?;
        let current = entries.get(id).filter(|s| s.is_for(url)).map(|s| &s.tokens);
        let new = change(current);
        let unchanged = new.as_ref() == current;
        match &new {
            Some(tokens) => {
                entries.insert(
                    id.to_owned(),
                    StoredTokens {
                        url: Some(url.as_str().to_owned()),
                        tokens: tokens.clone(),
                    },
                );
            }
            None if current.is_none() => {}
            None => {
                entries.remove(id);
            }
        }
        if !unchanged {
            self.write(&entries, &clients)?;
        }
        Ok(new)
    }

    /// Removes server `id`'s entry whatever its URL (logout). Returns whether there was one.
    /// Registrations stay: they belong to the authorization server, not to this server.
    pub fn remove(&self, id: &str) -> Result<bool, AuthStoreError> {
        let _lock = FileLock::acquire(&self.path).map_err(|e| self.write_err(e))?;
        let (mut entries, clients) = self.read()?;
        let found = entries.remove(id).is_some();
        if found {
            self.write(&entries, &clients)?;
        }
        Ok(found)
    }

    fn write_err(&self, source: io::Error) -> AuthStoreError {
        AuthStoreError::Write {
            path: self.path.clone(),
            source,
        }
    }

    /// The server entries and the registrations.
    fn read(&self) -> Result<(BTreeMap<String, StoredTokens>, Clients), AuthStoreError> {
        // Found readable by others, it is narrowed now rather than at the next write; never
        // the target of a link.
        let bytes = match fs::read_private(&self.path) {
            Ok(Some(b)) => b,
            Ok(None) => return Ok((BTreeMap::new(), BTreeMap::new())),
            Err(source) => {
                return Err(AuthStoreError::Read {
                    path: self.path.clone(),
                    source,
                });
            }
        };
        let corrupt = |source| AuthStoreError::Corrupt {
            path: self.path.clone(),
            source,
        };
        let file = AuthFile::parse(&bytes).map_err(corrupt)?;
        // `AuthFile` has no `url`: read it beside. The parse above succeeded, so this does too.
        let raw: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        let entries = file
            .servers
            .into_iter()
            .map(|(id, tokens)| {
                let url = raw["servers"][&id]["url"].as_str().map(str::to_owned);
                (id, StoredTokens { url, tokens })
            })
            .collect();
        Ok((entries, file.clients))
    }

    fn write(
        &self,
        entries: &BTreeMap<String, StoredTokens>,
        clients: &Clients,
    ) -> Result<(), AuthStoreError> {
        let mut file = AuthFile::default();
        for (id, s) in entries {
            file.servers.insert(id.clone(), s.tokens.clone());
        }
        file.clients.clone_from(clients);
        let mut doc: Value = serde_json::from_slice(&file.encode())
            .map_err(|e| self.write_err(io::Error::other(e)))?;
        for (id, s) in entries {
            if let (Some(url), Some(Value::Object(entry))) = (&s.url, doc["servers"].get_mut(id)) {
                entry.insert("url".to_owned(), Value::String(url.clone()));
            }
        }
        let mut bytes =
            serde_json::to_vec_pretty(&doc).map_err(|e| self.write_err(io::Error::other(e)))?;
        bytes.push(b'\n');
        fs::write_atomic(&self.path, &bytes, PRIVATE_MODE).map_err(|e| self.write_err(e))
    }
}
