//! Sealed session ids, so that any replica of a server can serve any request of a
//! handshake-era session (issue 24 §3): what a request needs from the handshake (the client's
//! `initialize` params, the subject the session is bound to, when it was made) is sealed with
//! AES-256-GCM into the `Mcp-Session-Id` itself, under a key the replicas share. A replica
//! that does not hold a session opens its id and revives it (its core replays the sealed
//! `initialize` and `notifications/initialized`, so the handler hears what the client told the
//! first replica), with no store round trip.
//!
//! What changes after the handshake cannot be in an id the client keeps: the end of a session
//! (DELETE) is a tombstone in a [`SessionShare`] that every replica consults, and a sealed id
//! also has a maximum age, after which every replica refuses it (404, as for an unknown
//! session). Keys rotate: the first seals, every listed one opens.

mod aead;
mod kept;
mod record;
mod relay;
mod share;
pub(crate) mod subs;

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use mcp_protocol::RawJson;
use ring::rand::{SecureRandom as _, SystemRandom};
use serde_json::Value;

pub use relay::Inbox;
pub(crate) use relay::{NotRelayed, initialized_elsewhere};
pub use share::{LocalShare, SessionShare, SessionState, ShareError, ShareFuture};

/// What every sealed id starts with, so that one is told from a random id at a glance (and a
/// later format can have another).
const PREFIX: &str = "s1.";

/// Bound into every seal (AEAD associated data): a key shared with another use cannot make an
/// id this server accepts.
const CONTEXT: &[u8] = b"mcp-host sealed session v1";

/// How long a key is, in bytes (AES-256).
pub const KEY_LEN: usize = 32;

/// The keys session ids are sealed and opened with, the longest a sealed id lives, and where
/// the ends of sessions are shared between replicas. Given to
/// [`HttpServerConfig::sealed_sessions`](super::HttpServerConfig::sealed_sessions).
pub struct SessionSeal {
    /// The first seals; every one opens (rotation: a new key goes first, the old one stays
    /// listed until the ids it sealed have aged out).
    keys: Vec<aead::SealKey>,
    max_age: Duration,
    share: Arc<dyn SessionShare>,
    random: SystemRandom,
    /// This replica's name, random at start ([`relay::REPLICA_LEN`] hex digits): in the ids
    /// of the requests it sends clients, so that their answers find it (`relay`).
    replica: String,
}

// Keys are secrets: only how many there are is shown.
impl std::fmt::Debug for SessionSeal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionSeal")
            .field("keys", &self.keys.len())
            .field("max_age", &self.max_age)
            .field("replica", &self.replica)
            .finish_non_exhaustive()
    }
}

/// Why a [`SessionSeal`] cannot be made. Never shows a key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SealError {
    /// No key was given: nothing could seal.
    #[error("no session key given")]
    NoKeys,
    /// The key at `index` (from 0) is not [`KEY_LEN`] bytes long.
    #[error("session key {index} is {len} bytes long, not {KEY_LEN}")]
    BadKey {
        /// Its place in the list.
        index: usize,
        /// Its length.
        len: usize,
    },
}

/// What a sealed id holds.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Opened {
    /// When the session was made, in seconds since the Unix epoch.
    pub(crate) made: u64,
    /// Who the session is bound to ([`super::auth::Allowed::subject`]), if anyone.
    pub(crate) subject: Option<String>,
    /// The client's `initialize` params, as sealed (see [`initialize_kept`]).
    pub(crate) initialize: RawJson,
}

impl SessionSeal {
    /// Seals with `keys[0]` and opens with any of `keys`, each [`KEY_LEN`] random bytes;
    /// sealed ids older than `max_age` are refused. Ends of sessions are kept in this process
    /// ([`LocalShare`]) until [`with_share`](Self::with_share) names a store the replicas share.
    pub fn new<K: AsRef<[u8]>>(keys: &[K], max_age: Duration) -> Result<Self, SealError> {
        if keys.is_empty() {
            return Err(SealError::NoKeys);
        }
        let keys = keys
            .iter()
            .enumerate()
            .map(|(index, key)| {
                let key = key.as_ref();
                let bad = SealError::BadKey {
                    index,
                    len: key.len(),
                };
                if key.len() != KEY_LEN {
                    return Err(bad);
                }
                aead::SealKey::new(key).ok_or(bad)
            })
            .collect::<Result<Vec<_>, _>>()?;
        let random = SystemRandom::new();
        // Without randomness from the OS no id could be sealed either; a replica named by the
        // clock is still unlike the others for as long as it lives.
        let mut name = [0u8; relay::REPLICA_LEN / 2];
        if random.fill(&mut name).is_err() {
            let nanos = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos());
            name.copy_from_slice(&nanos.to_le_bytes()[..relay::REPLICA_LEN / 2]);
        }
        Ok(Self {
            keys,
            max_age,
            share: Arc::new(LocalShare::default()),
            random,
            replica: name.iter().map(|b| format!("{b:02x}")).collect(),
        })
    }

    /// The same seal, with the ends of sessions kept in `share` (a store every replica
    /// reaches), so that a session ended at one replica is refused by all.
    #[must_use]
    pub fn with_share(mut self, share: Arc<dyn SessionShare>) -> Self {
        self.share = share;
        self
    }

    /// The longest a sealed id is accepted, from when its session was made.
    pub fn max_age(&self) -> Duration {
        self.max_age
    }

    /// This replica's name among the servers sharing the keys: where answers to the
    /// requests it sends clients are relayed ([`SessionShare::relay`]).
    pub fn replica(&self) -> &str {
        &self.replica
    }

    pub(crate) fn share(&self) -> &dyn SessionShare {
        &*self.share
    }

    /// A new session id holding `opened`, or `None` when the OS gives no randomness.
    pub(crate) fn seal(&self, opened: &Opened) -> Option<String> {
        let plain = serde_json::json!({
            "t": opened.made,
            "s": opened.subject,
            "i": serde_json::from_str::<Value>(opened.initialize.get()).ok()?,
        });
        let sealed = self.seal_bytes(CONTEXT, &serde_json::to_vec(&plain).ok()?)?;
        Some(format!("{PREFIX}{}", URL_SAFE_NO_PAD.encode(sealed)))
    }

    /// What `id` holds, if one of the keys sealed it, it is intact and it is not older than
    /// the maximum age at `now` (seconds since the Unix epoch).
    pub(crate) fn open(&self, id: &str, now: u64) -> Option<Opened> {
        let bytes = URL_SAFE_NO_PAD.decode(id.strip_prefix(PREFIX)?).ok()?;
        let plain = self.open_bytes(CONTEXT, &bytes)?;
        let value: Value = serde_json::from_slice(&plain).ok()?;
        let made = value.get("t")?.as_u64()?;
        // A session from the future (clocks apart) is as young as can be; one past the
        // maximum age is gone everywhere.
        if now.saturating_sub(made) > self.max_age.as_secs() {
            return None;
        }
        let subject = match value.get("s")? {
            Value::Null => None,
            Value::String(s) => Some(s.clone()),
            _ => return None,
        };
        let initialize = RawJson::encode(value.get("i")?).ok()?;
        Some(Opened {
            made,
            subject,
            initialize,
        })
    }
}

/// Seconds since the Unix epoch: what a sealed id's age is counted in (the replicas' clocks
/// are assumed close, as for tokens' `exp`).
pub(crate) fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// The part of a client's `initialize` params a sealed id keeps: the version it asked for,
/// what it declared and who it is (name, version, title). Icons, descriptions and anything
/// else stay out, so that the id stays short enough for a header.
pub(crate) fn initialize_kept(params: Option<&RawJson>) -> Option<RawJson> {
    // Params that do not read are kept as none: the session refuses the `initialize` anyway.
    let params: Value = params
        .and_then(|p| serde_json::from_str(p.get()).ok())
        .unwrap_or_default();
    let mut kept = serde_json::Map::new();
    for field in ["protocolVersion", "capabilities"] {
        if let Some(v) = params.get(field) {
            kept.insert(field.to_owned(), v.clone());
        }
    }
    if let Some(info) = params.get("clientInfo") {
        let mut who = serde_json::Map::new();
        for field in ["name", "version", "title"] {
            if let Some(v) = info.get(field) {
                who.insert(field.to_owned(), v.clone());
            }
        }
        kept.insert("clientInfo".to_owned(), Value::Object(who));
    }
    RawJson::encode(&kept).ok()
}

/// What a session's end is recorded under in a [`SessionShare`]: a digest of its id, so that
/// the store never holds an id someone could present.
pub(crate) fn share_key(id: &str) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, id.as_bytes());
    digest.as_ref()[..16]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[cfg(test)]
mod tests;
