//! The era each server spoke, remembered between connections and, with a file, between runs:
//! a server that ignores requests it does not know never answers the `server/discover` probe,
//! so without this memory every connection to it waits out the probe's timeout before it
//! falls back to `initialize`.
//!
//! A server is known by a hash of how it is reached ([`key`]): its id, its command, arguments
//! and working directory, or its URL and transport, and the names (never the values) of its
//! variables and headers. A changed configuration is a different key, so it is probed again.
//! Only the handshake era changes what a connection does (it skips the probe); the stateless
//! era is remembered too, so that a server that was upgraded replaces what was said of it.
//!
//! The file (`eras.json` beside the token store, mode 0600) is read once, on the first
//! connection, and written atomically under a lock whenever what is known of a server
//! changes. A file that cannot be read or parsed is ignored with a warning: the servers are
//! probed as if it were not there, and it is replaced on the next change.

// With neither transport no entry can be connected, and nothing here is used.
#![cfg_attr(
    not(any(feature = "stdio", feature = "http")),
    allow(unused_imports, unused_variables, unreachable_code, dead_code)
)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{SystemTime, UNIX_EPOCH};

use mcp_protocol::Era;
use serde_json::{Map, Value, json};
use sha2::{Digest as _, Sha256};

use crate::entry::{Connect, ServerEntry};

/// The file's name in the directory of the global configuration file.
pub(crate) const ERAS_FILE_NAME: &str = "eras.json";

/// How many servers the file remembers; past it, the ones seen longest ago are dropped.
const KEPT: usize = 512;

/// What one server was seen to speak, and when.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Known {
    era: Era,
    /// Seconds since the Unix epoch.
    at: u64,
}

#[derive(Debug, Default)]
struct Memory {
    /// Whether the file was read (or there is none).
    loaded: bool,
    /// By key: the server's id (for a person reading the file) and what it spoke.
    servers: BTreeMap<String, (String, Known)>,
}

/// The eras a host remembers. Cheap to clone; clones share the memory.
#[derive(Debug, Clone, Default)]
pub(crate) struct EraMemory {
    file: Option<PathBuf>,
    memory: Arc<Mutex<Memory>>,
}

impl EraMemory {
    /// A memory kept in `file` when given, else for this host's life only.
    pub(crate) fn new(file: Option<PathBuf>) -> Self {
        Self {
            file,
            memory: Arc::default(),
        }
    }

    /// The era the server of `key` was last seen to speak.
    pub(crate) async fn known(&self, key: &str) -> Option<Era> {
        self.load().await;
        let memory = self.memory.lock().unwrap_or_else(PoisonError::into_inner);
        memory.servers.get(key).map(|(_, known)| known.era)
    }

    /// The server `id` of `key` spoke `era` (`None`: what was remembered is wrong, forget
    /// it). The file is written only when that changes what is known.
    pub(crate) async fn learned(&self, key: &str, id: &str, era: Option<Era>) {
        self.load().await;
        let changed = {
            let mut memory = self.memory.lock().unwrap_or_else(PoisonError::into_inner);
            let before = memory.servers.get(key).map(|(_, known)| known.era);
            match era {
                Some(era) => {
                    let known = Known { era, at: now() };
                    memory
                        .servers
                        .insert(key.to_owned(), (id.to_owned(), known));
                }
                None => {
                    memory.servers.remove(key);
                }
            }
            before != era
        };
        let Some(file) = self.file.clone().filter(|_| changed) else {
            return;
        };
        let (key, id) = (key.to_owned(), id.to_owned());
        let written = tokio::task::spawn_blocking(move || {
            write(&file, &key, &id, era.map(|era| (era, now())))
        })
        .await;
        match written {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                tracing::warn!(
                    "the era memory could not be written, servers will be probed again: {e}"
                );
            }
            Err(e) => tracing::warn!("the era memory could not be written: {e}"),
        }
    }

    /// Reads the file, once.
    async fn load(&self) {
        if self
            .memory
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .loaded
        {
            return;
        }
        let read = match self.file.clone() {
            Some(file) => tokio::task::spawn_blocking(move || read(&file))
                .await
                .unwrap_or_default(),
            None => BTreeMap::new(),
        };
        let mut memory = self.memory.lock().unwrap_or_else(PoisonError::into_inner);
        if !memory.loaded {
            memory.loaded = true;
            // What this host learned while the file was read is newer than the file.
            for (key, value) in read {
                memory.servers.entry(key).or_insert(value);
            }
        }
    }
}

/// The key of `entry`'s server, `None` when there is nothing to remember: a server pinned to
/// one protocol version is never probed, and an unusable entry is never connected.
pub(crate) fn key(entry: &ServerEntry) -> Option<String> {
    if entry.protocol_version.is_some() {
        return None;
    }
    let connect = entry.connect.as_ref().ok()?;
    let mut hash = Sha256::new();
    let mut put = |part: &str| {
        hash.update(part.as_bytes());
        hash.update([0]);
    };
    put(&entry.id);
    // With neither transport, `Connect` has no variants and this match no arms.
    match *connect {
        #[cfg(feature = "stdio")]
        Connect::Stdio(ref config) => {
            put("stdio");
            put(&config.command);
            put(&config.args.len().to_string());
            for arg in &config.args {
                put(arg);
            }
            put(&config
                .cwd
                .as_deref()
                .map(Path::to_string_lossy)
                .unwrap_or_default());
            put(if config.inherit_env {
                "inherit"
            } else {
                "clear"
            });
            for (name, _) in &config.env {
                put(name);
            }
        }
        #[cfg(feature = "http")]
        Connect::Http(ref config) => {
            put("http");
            put(&config.url);
            put(&format!("{:?}", config.protocol));
            for (name, _) in &config.headers {
                put(name);
            }
        }
    }
    let digest = hash.finalize();
    Some(digest.iter().map(|b| format!("{b:02x}")).collect())
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

fn era_name(era: Era) -> &'static str {
    match era {
        Era::Handshake => "handshake",
        _ => "stateless",
    }
}

/// The servers in `file`; nothing (with a warning) when it cannot be read or parsed.
fn read(file: &Path) -> BTreeMap<String, (String, Known)> {
    match read_file(file) {
        Ok(servers) => servers,
        Err(why) => {
            tracing::warn!(
                file = %file.display(),
                "the era memory is ignored ({why}): servers are probed again"
            );
            BTreeMap::new()
        }
    }
}

fn read_file(file: &Path) -> Result<BTreeMap<String, (String, Known)>, String> {
    let bytes = match std::fs::read(file) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(BTreeMap::new()),
        Err(e) => return Err(e.to_string()),
    };
    let value: Value = serde_json::from_slice(&bytes).map_err(|e| format!("not JSON: {e}"))?;
    let servers = value
        .get("servers")
        .and_then(Value::as_object)
        .ok_or("no `servers` object")?;
    let mut out = BTreeMap::new();
    for (key, server) in servers {
        let era = match server.get("era").and_then(Value::as_str) {
            Some("handshake") => Era::Handshake,
            Some("stateless") => Era::Stateless,
            // One entry this version does not understand is skipped, not the whole file.
            _ => continue,
        };
        let id = server.get("server").and_then(Value::as_str).unwrap_or("");
        let at = server.get("at").and_then(Value::as_u64).unwrap_or(0);
        out.insert(key.clone(), (id.to_owned(), Known { era, at }));
    }
    Ok(out)
}

/// Sets (or with `None` removes) one server in `file`, under the file's lock so that two
/// hosts writing at once keep each other's servers.
fn write(file: &Path, key: &str, id: &str, era: Option<(Era, u64)>) -> std::io::Result<()> {
    let _lock = crate::fs::FileLock::acquire(file)?;
    // A file that cannot be parsed is replaced: it was ignored when read, too.
    let mut servers = read_file(file).unwrap_or_default();
    match era {
        Some((era, at)) => {
            servers.insert(key.to_owned(), (id.to_owned(), Known { era, at }));
        }
        None => {
            servers.remove(key);
        }
    }
    while servers.len() > KEPT {
        let oldest = servers
            .iter()
            .min_by_key(|(_, (_, known))| known.at)
            .map(|(key, _)| key.clone());
        match oldest {
            Some(key) => servers.remove(&key),
            None => break,
        };
    }
    let mut out = Map::new();
    for (key, (id, known)) in servers {
        out.insert(
            key,
            json!({"server": id, "era": era_name(known.era), "at": known.at}),
        );
    }
    let text = json!({"version": 1, "servers": out});
    let mut bytes = serde_json::to_vec_pretty(&text).map_err(std::io::Error::other)?;
    bytes.push(b'\n');
    crate::fs::write_atomic(file, &bytes, crate::fs::PRIVATE_MODE)
}

#[cfg(all(test, feature = "stdio"))]
mod tests;
