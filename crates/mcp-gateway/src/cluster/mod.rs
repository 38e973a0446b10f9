//! The gateway file's `cluster` block: what replicas of one gateway share so that any of them
//! serves any session (issue 24 §3, docs/gateway.md "Many replicas"). Its keys seal session ids
//! (`mcp_http::SessionSeal`); the ends of sessions go to the file's store when it has one
//! (`share.rs`), else they stay in the process, and so do the gateway's own tasks
//! (`tasks.rs`) and the 2026-07-28 calls suspended for their clients' retries (`resume/`).

pub(crate) mod resume;
mod share;
pub(crate) mod tasks;

use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use mcp_host::config::Env;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Where `replica`'s heartbeat is kept: its task share (`tasks/`) writes it every 5 s to live
/// 15 s, and the other replicas read it to tell a replica gone (its tasks failed, a retry
/// relayed to it in vain, `resume/`).
fn heartbeat_key(prefix: &str, replica: &str) -> String {
    format!("{prefix}:replica:{replica}")
}

/// Runs `work`, a blocking call of the Redis client, on tokio's blocking pool, so that no
/// runtime thread waits on Redis; its error as text, for the share calling it to say what
/// cannot be used.
async fn on_blocking_pool<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, mcp_host::redis::RedisError> + Send + 'static,
) -> Result<T, String> {
    match tokio::task::spawn_blocking(work).await {
        Ok(done) => done.map_err(|e| e.to_string()),
        Err(e) => Err(e.to_string()),
    }
}

/// `message` sealed with `seal`, bound to `channel`, and published there: how many replicas
/// heard it (0: the one that listens there is gone).
async fn publish_sealed(
    redis: &mcp_host::redis::Redis,
    seal: &mcp_http::SessionSeal,
    channel: String,
    message: &serde_json::Value,
) -> Result<i64, String> {
    let plain = serde_json::to_vec(message).map_err(|e| e.to_string())?;
    let sealed = seal
        .seal_record(&channel, &plain)
        .ok_or("no randomness to seal it with")?;
    let redis = redis.clone();
    on_blocking_pool(move || redis.publish(&channel, &sealed)).await
}

/// The longest a sealed session id lives by default: a day, long past any idle timeout a
/// client would meet at one process (30 minutes).
pub const DEFAULT_MAX_SESSION_AGE: Duration = Duration::from_secs(24 * 3600);

/// `cluster`: the session keys the replicas share, and how long a sealed session may live.
#[derive(Clone, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[non_exhaustive]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClusterBlock {
    /// Keys that seal `Mcp-Session-Id` (AES-256-GCM), each 32 random bytes in base64 (`openssl
    /// rand -base64 32`), usually `${VAR}` read from the gateway's environment: the first
    /// seals, every one opens. To rotate, put the new key first and keep the old one until its
    /// sessions have aged out (`maxSessionAgeSeconds`). An entry that expands to nothing is
    /// skipped, so `${MCP_SESSION_KEY_OLD:-}` may stay listed between rotations.
    pub session_keys: Vec<String>,
    /// How long a session lives from its `initialize`, in seconds, whichever replica serves
    /// it (default 86400); after it the client gets 404 and starts a new session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 60, max = 2_592_000))]
    pub max_session_age_seconds: Option<u64>,
}

// The keys are secrets: only how many there are is shown.
impl std::fmt::Debug for ClusterBlock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClusterBlock")
            .field("session_keys", &self.session_keys.len())
            .field("max_session_age_seconds", &self.max_session_age_seconds)
            .finish()
    }
}

impl ClusterBlock {
    /// The seal its keys make, read from `env`; the error names the field (and the variable),
    /// never a key.
    pub(crate) fn seal(&self, env: &Env) -> Result<mcp_http::SessionSeal, String> {
        let mut keys = Vec::new();
        for (index, value) in self.session_keys.iter().enumerate() {
            let field = format!("cluster.sessionKeys[{index}]");
            let text = mcp_host::config::expand_variables(value, env)
                .map_err(|e| format!("{field}: {e}"))?;
            let text = text.trim();
            if text.is_empty() {
                continue;
            }
            let key = base64::engine::general_purpose::STANDARD
                .decode(text)
                .or_else(|_| base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(text))
                .map_err(|_| {
                    format!("{field}: not base64 (make one with `openssl rand -base64 32`)")
                })?;
            if key.len() != mcp_http::KEY_LEN {
                return Err(format!(
                    "{field}: {} bytes, not {} (make one with `openssl rand -base64 32`)",
                    key.len(),
                    mcp_http::KEY_LEN
                ));
            }
            keys.push(key);
        }
        if keys.is_empty() {
            return Err("cluster.sessionKeys: no key (every entry is empty)".to_owned());
        }
        let age = self
            .max_session_age_seconds
            .map_or(DEFAULT_MAX_SESSION_AGE, Duration::from_secs);
        if age < Duration::from_secs(60) {
            return Err("cluster.maxSessionAgeSeconds: at least 60".to_owned());
        }
        mcp_http::SessionSeal::new(&keys, age).map_err(|e| format!("cluster.sessionKeys: {e}"))
    }
}

/// The seal for `serve --http`, with the ends of sessions in `store` when the replicas have
/// one (under its prefix), else in this process.
pub(crate) fn sealed_sessions(
    block: &ClusterBlock,
    env: &Env,
    store: Option<&crate::store::Store>,
) -> Result<Arc<mcp_http::SessionSeal>, String> {
    let seal = block.seal(env)?;
    Ok(Arc::new(match store {
        Some(store) => seal.with_share(Arc::new(share::RedisShare::new(
            store.redis.clone(),
            &store.prefix,
        ))),
        None => seal,
    }))
}

#[cfg(test)]
mod tests;
