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
//! # In the OS keyring
//!
//! With the `keyring` feature, a store made by [`AuthStore::open`] for the setting
//! [`CredentialsStore`] `keyring` (or `auto` where a keyring that outlives a reboot answers)
//! keeps the same document
//! as one entry of the OS keyring instead of the file, named after the file's path (so that
//! `MCP_HOST_AUTH_FILE` still tells stores apart). The locks stay files beside that path (the
//! sidecar lock and the refresh turns of `oauth`), so processes share one store safely
//! whatever holds it. A file left from before the keyring was used is read until the first
//! write, which moves its contents into the keyring and deletes it.
//!
//! # In Redis
//!
//! [`AuthStore::in_redis`] keeps the same document as one Redis key (`<prefix>:oauth`), for
//! gateway replicas on several machines (the gateway file's `store` block). One document
//! rather than a key per server, so that the format, its migration and its checks stay
//! those of the file (an export is one `GET`), and registrations, which servers share, stay
//! beside the tokens; updates are rare (a login, a refresh), so one lock is no contention.
//! The locks are Redis lease locks then (`<prefix>:oauth:lock` around each
//! read-modify-write, `<prefix>:oauth:refresh:<server>` for the refresh turns), renewed
//! while held and released only by their holder, so a replica that dies holding one frees
//! it after one lease.
//!
//! The calls block (file I/O, a keyring round trip, and waiting for another process's lock,
//! which is held only for one read-modify-write); async callers run them with
//! `tokio::task::spawn_blocking`.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};

use mcp_oauth::store::{AuthFile, ClientRegistration, ServerTokens};
use serde_json::Value;
use url::Url;

use crate::config::{ConfigPaths, CredentialsStore, Env, shown_url};
use crate::fs::{self, FileLock, PRIVATE_MODE};
#[cfg(feature = "keyring")]
use crate::keyring::{Keyring, KeyringError, KeyringKind};
use crate::redis::{Redis, RedisError, RedisLock};

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
    /// The OS keyring holding the store could not be used (or, for the setting `keyring`,
    /// none is usable).
    #[cfg(feature = "keyring")]
    #[error("cannot use the token store in the OS keyring: {source}")]
    Keyring {
        /// The keyring's error (it names the entry, never a value).
        #[source]
        source: KeyringError,
    },
    /// Redis, holding the store, could not be used (it names Redis's address and the
    /// phase, never the password or a value).
    #[error("cannot use the token store in Redis: {source}")]
    Redis {
        /// The cause.
        #[source]
        source: RedisError,
    },
    /// The setting `keyring` in a build without the `keyring` feature.
    #[error("mcp.credentials_store is \"keyring\" but this build has no OS keyring support")]
    NoKeyringSupport,
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

/// Where the document is kept.
#[derive(Clone)]
enum Place {
    /// The file at the store's path.
    File,
    /// One entry of the OS keyring, named after the path.
    #[cfg(feature = "keyring")]
    Keyring(Keyring),
    /// One Redis key, shared by processes on several machines.
    Redis {
        /// The server.
        redis: Redis,
        /// The document's key; the locks' keys start with it.
        key: String,
    },
}

/// How long a Redis lock around one read-modify-write of the document is leased (renewed
/// while held).
const STORE_LEASE: std::time::Duration = std::time::Duration::from_secs(10);
/// How long a refresh turn is leased (renewed while held: a login may take minutes).
const TURN_LEASE: std::time::Duration = std::time::Duration::from_secs(30);
/// How long one waits for a Redis lock another holds before giving up: longer than a
/// refresh or a read-modify-write takes, shorter than a login.
const LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(60);

/// A lock held on the store: a file's, or Redis's. Dropping it releases it.
#[derive(Debug)]
pub(crate) enum Held {
    File(#[allow(dead_code)] FileLock),
    Redis(#[allow(dead_code)] RedisLock),
}

/// The token store at one path: the file there, or the OS keyring entry named after it (see
/// the module doc). `Debug` shows the path and which keyring, never a token.
#[derive(Clone)]
pub struct AuthStore {
    path: PathBuf,
    place: Place,
}

impl std::fmt::Debug for AuthStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuthStore")
            .field("path", &self.path)
            .field("in", &self.describe())
            .finish()
    }
}

impl PartialEq for AuthStore {
    fn eq(&self, other: &Self) -> bool {
        self.path == other.path && self.describe() == other.describe()
    }
}

impl Eq for AuthStore {}

impl AuthStore {
    /// The store in the file at `path`.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self {
            path: path.into(),
            place: Place::File,
        }
    }

    /// The store in `keyring`, its entry named after `path` (whose directory also holds the
    /// lock files).
    #[cfg(feature = "keyring")]
    pub fn in_keyring(path: impl Into<PathBuf>, keyring: Keyring) -> Self {
        Self {
            path: path.into(),
            place: Place::Keyring(keyring),
        }
    }

    /// The store in Redis, as one key `<prefix>:oauth` (see the module doc).
    pub fn in_redis(redis: Redis, prefix: &str) -> Self {
        let key = format!("{prefix}:oauth");
        Self {
            path: PathBuf::from(format!("{redis}/{key}")),
            place: Place::Redis { redis, key },
        }
    }

    /// Whether processes on several machines share this store (Redis): one that cannot take
    /// its refresh turn must not refresh (see `oauth.rs`).
    pub(crate) fn is_shared(&self) -> bool {
        matches!(self.place, Place::Redis { .. })
    }

    /// The store `setting` asks for at `path`: for `auto`, the OS keyring when one answers
    /// ([`Keyring::open`] with `env`) and keeps its secrets across reboots (the Secret
    /// Service, the Keychain, the Credential Manager), else the file (the kernel keyring
    /// forgets at reboot, and a lost refresh token is a new login); for `keyring`, the
    /// keyring, the kernel one included, or an error
    /// saying why none is usable; for `file`, the file. The choice is logged (`info`, and a
    /// `warn` when `auto` falls back to the file), naming the keyring or the path.
    pub fn open(
        setting: CredentialsStore,
        path: impl Into<PathBuf>,
        env: &Env,
    ) -> Result<Self, AuthStoreError> {
        let path = path.into();
        let store = match setting {
            CredentialsStore::File => Self::new(path),
            #[cfg(feature = "keyring")]
            CredentialsStore::Keyring => match Keyring::open(env) {
                Ok(k) => Self::in_keyring(path, k),
                Err(source) => return Err(AuthStoreError::Keyring { source }),
            },
            #[cfg(not(feature = "keyring"))]
            CredentialsStore::Keyring => return Err(AuthStoreError::NoKeyringSupport),
            #[cfg(feature = "keyring")]
            _ => match Keyring::open(env) {
                Ok(k) if k.kind().is_persistent() => Self::in_keyring(path, k),
                // A refresh token kept only until the next reboot would mean a login after
                // every reboot: `auto` keeps the file then (`keyring` says otherwise).
                Ok(k) => {
                    tracing::info!(
                        "credentials store (auto): the {} keyring forgets at reboot, so OAuth tokens stay in the file; mcp.credentials_store \"keyring\" uses it",
                        k.kind()
                    );
                    Self::new(path)
                }
                Err(why) => {
                    tracing::warn!(
                        "credentials store (auto): no OS keyring is usable, so OAuth tokens go to the file {}: {why}",
                        path.display()
                    );
                    Self::new(path)
                }
            },
            #[cfg(not(feature = "keyring"))]
            _ => {
                let _ = env;
                Self::new(path)
            }
        };
        tracing::info!(setting = %setting, "credentials store: {}", store.describe());
        Ok(store)
    }

    /// Where the tokens are, for a person: `the <kind> keyring`, or `the file <path>`.
    pub fn describe(&self) -> String {
        match &self.place {
            Place::File => format!("the file {}", self.path.display()),
            #[cfg(feature = "keyring")]
            Place::Keyring(k) => format!("the {} keyring", k.kind()),
            Place::Redis { redis, key } => format!("Redis at {} (key {key})", redis.address()),
        }
    }

    /// The keyring holding the store, if it is not the file.
    #[cfg(feature = "keyring")]
    pub fn keyring(&self) -> Option<KeyringKind> {
        match &self.place {
            Place::File | Place::Redis { .. } => None,
            Place::Keyring(k) => Some(k.kind()),
        }
    }

    /// The keyring entry of this store: one per path, never the path itself (a path may
    /// name the user), and never a name `mcp-host secret` could use (the prefix differs).
    #[cfg(feature = "keyring")]
    fn entry_name(&self) -> String {
        use sha2::{Digest as _, Sha256};
        let digest = Sha256::digest(self.path.as_os_str().as_encoded_bytes());
        let hex: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
        format!("oauth:{hex}")
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

    /// The file (for a store in Redis, `redis://host:port/db/key`, which names no file).
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
        let _lock = self.lock()?;
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
        let _lock = self.lock()?;
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
        let _lock = self.lock()?;
        let (mut entries, clients) = self.read()?;
        let found = entries.remove(id).is_some();
        if found {
            self.write(&entries, &clients)?;
        }
        Ok(found)
    }

    /// The lock around one read-modify-write of the document.
    fn lock(&self) -> Result<Held, AuthStoreError> {
        if let Place::Redis { redis, key } = &self.place {
            return redis
                .lock(&format!("{key}:lock"), STORE_LEASE, LOCK_WAIT)
                .map(Held::Redis)
                .map_err(|source| AuthStoreError::Redis { source });
        }
        FileLock::acquire(&self.path)
            .map(Held::File)
            .map_err(|e| self.write_err(e))
    }

    /// Server `server`'s refresh turn among the processes sharing this store: held from
    /// before a refresh or a login until its tokens are written (`oauth.rs`). A file lock
    /// `<path>.<server>.refresh.lock` beside the file (or the keyring's path), or a Redis
    /// lease lock `<key>:refresh:<server>`. Blocks while another process holds it.
    pub(crate) fn refresh_turn(&self, server: &str) -> Result<Held, AuthStoreError> {
        let name: String = server
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        if let Place::Redis { redis, key } = &self.place {
            return redis
                .lock(&format!("{key}:refresh:{name}"), TURN_LEASE, LOCK_WAIT)
                .map(Held::Redis)
                .map_err(|source| AuthStoreError::Redis { source });
        }
        let mut base = self.path.as_os_str().to_owned();
        base.push(format!(".{name}.refresh"));
        FileLock::acquire(Path::new(&base))
            .map(Held::File)
            .map_err(|e| self.write_err(e))
    }

    fn write_err(&self, source: io::Error) -> AuthStoreError {
        AuthStoreError::Write {
            path: self.path.clone(),
            source,
        }
    }

    /// The server entries and the registrations.
    fn read(&self) -> Result<(BTreeMap<String, StoredTokens>, Clients), AuthStoreError> {
        if let Place::Redis { redis, key } = &self.place {
            return match redis.get(key) {
                Ok(Some(bytes)) => self.parse(&bytes),
                Ok(None) => Ok((BTreeMap::new(), BTreeMap::new())),
                Err(source) => Err(AuthStoreError::Redis { source }),
            };
        }
        #[cfg(feature = "keyring")]
        if let Place::Keyring(k) = &self.place {
            let name = self.entry_name();
            match k.get_entry(&name, "the token store") {
                Ok(Some(bytes)) => return self.parse(&bytes),
                // Nothing in the keyring yet: a file from before is read (and moved at the
                // next write).
                Ok(None) => {}
                Err(source) => return Err(AuthStoreError::Keyring { source }),
            }
        }
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
        self.parse(&bytes)
    }

    /// The server entries and the registrations of a document.
    fn parse(
        &self,
        bytes: &[u8],
    ) -> Result<(BTreeMap<String, StoredTokens>, Clients), AuthStoreError> {
        let corrupt = |source| AuthStoreError::Corrupt {
            path: self.path.clone(),
            source,
        };
        let file = AuthFile::parse(bytes).map_err(corrupt)?;
        // `AuthFile` has no `url`: read it beside. The parse above succeeded, so this does too.
        let raw: Value = serde_json::from_slice(bytes).unwrap_or(Value::Null);
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
        if let Place::Redis { redis, key } = &self.place {
            return redis
                .set(key, &bytes, None)
                .map_err(|source| AuthStoreError::Redis { source });
        }
        #[cfg(feature = "keyring")]
        if let Place::Keyring(k) = &self.place {
            k.set_entry(&self.entry_name(), "the token store", &bytes)
                .map_err(|source| AuthStoreError::Keyring { source })?;
            // The keyring has it all now: a file from before must not keep the tokens.
            return match std::fs::remove_file(&self.path) {
                Ok(()) => Ok(()),
                Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
                Err(e) => Err(self.write_err(e)),
            };
        }
        fs::write_atomic(&self.path, &bytes, PRIVATE_MODE).map_err(|e| self.write_err(e))
    }
}
