//! The gateway file's `store` block: where replicas of one gateway keep what they share, so
//! that any of them serves any caller (issue 24 §3). Today Redis:
//! `"store": {"redis": "redis://[user:password@]host:port/db"}`, the URL usually holding the
//! password as `${VAR}` (read from the gateway's environment at load). It keeps the upstream
//! OAuth tokens (the host's token store, `mcp_host::auth_store`, in one Redis key) and their
//! refresh turns, the rules' rate counters (`rules/redis.rs`) and, with `cluster`, sessions.
//! Without the block the gateway keeps them on its machine: the token store file and counters
//! in memory, the single-machine default.
//!
//! Redis being down is never taken for an empty store: a token store that cannot be read is
//! said in the upstream's status (and no refresh happens without its turn), and a call under a
//! rate limit that cannot be counted is refused, naming Redis and the phase.

use mcp_host::config::{Env, expand_variables};
use mcp_host::redis::Redis;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The prefix of every key when the file names none.
pub const DEFAULT_PREFIX: &str = "mcp-host";

/// Where replicas keep what they share.
// `Debug` never shows the URL: it may hold the password.
#[derive(Clone, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[non_exhaustive]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StoreBlock {
    /// `redis://[user:password@]host[:port][/db]`: `${VAR}` and `${VAR:-default}` are read from
    /// the gateway's environment (write the password that way). `rediss://` (TLS) is not
    /// supported.
    pub redis: String,
    /// What every key starts with (default `mcp-host`), so that several gateways can share
    /// one Redis database without sharing their tokens or counters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix: Option<String>,
}

impl std::fmt::Debug for StoreBlock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoreBlock")
            .field("redis", &"[redacted]")
            .field("prefix", &self.prefix)
            .finish()
    }
}

impl StoreBlock {
    /// The store this block names, its URL expanded from `env`; nothing is connected yet.
    /// The error names the field and never quotes the URL.
    pub fn open(&self, env: &Env) -> Result<Store, String> {
        let url = expand_variables(&self.redis, env).map_err(|e| format!("store.redis: {e}"))?;
        let redis = Redis::new(&url).map_err(|e| format!("store.redis: {e}"))?;
        let prefix = self.prefix.as_deref().unwrap_or(DEFAULT_PREFIX);
        if prefix.is_empty() || prefix.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err("store.prefix: must not be empty nor hold spaces".to_owned());
        }
        Ok(Store {
            redis,
            prefix: prefix.to_owned(),
        })
    }
}

/// The store of the file, opened: a Redis client and the prefix of its keys.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Store {
    /// The server (its `Debug` shows `host:port/db` only).
    pub redis: Redis,
    /// What every key starts with.
    pub prefix: String,
}

impl Store {
    /// `oauth` with its token store in Redis: the upstreams' tokens, registrations and
    /// refresh turns shared by every replica.
    pub fn oauth(&self, oauth: &mcp_host::oauth::OAuthContext) -> mcp_host::oauth::OAuthContext {
        let mut shared = oauth.clone();
        shared.store = Some(mcp_host::auth_store::AuthStore::in_redis(
            self.redis.clone(),
            &self.prefix,
        ));
        shared
    }

    /// The rules' rate counters in Redis.
    pub(crate) fn rates(&self) -> crate::rules::RedisRates {
        crate::rules::RedisRates::new(self.redis.clone(), &self.prefix)
    }
}

/// The rate counters for a gateway with `store`: in it, else in this process.
pub(crate) fn rates(store: Option<&Store>) -> Box<dyn crate::rules::RateStore> {
    match store {
        Some(store) => Box::new(store.rates()),
        None => Box::<crate::rules::LocalRates>::default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(redis: &str, prefix: Option<&str>) -> StoreBlock {
        StoreBlock {
            redis: redis.to_owned(),
            prefix: prefix.map(str::to_owned),
        }
    }

    #[test]
    fn a_bad_store_is_an_error_naming_the_field_and_never_the_password() {
        let env = Env::new().with("REDIS_PASSWORD", "s3cret-pw-77");
        let store = block("redis://:${REDIS_PASSWORD}@10.0.0.5:6380/2", None)
            .open(&env)
            .expect("opens");
        assert_eq!(store.prefix, DEFAULT_PREFIX);
        assert_eq!(store.redis.to_string(), "redis://10.0.0.5:6380/2");
        for (b, says) in [
            (
                block("rediss://:${REDIS_PASSWORD}@h/0", None),
                "store.redis: ",
            ),
            (block("redis://:${NOT_SET}@h/0", None), "store.redis: "),
            (
                block("redis://:${REDIS_PASSWORD}@h/x", None),
                "store.redis: ",
            ),
            (
                block("redis://:${REDIS_PASSWORD}@h/0", Some("a b")),
                "store.prefix: ",
            ),
        ] {
            let e = b.open(&env).expect_err("refused");
            assert!(e.starts_with(says), "{e}");
            assert!(!e.contains("s3cret-pw-77"), "{e}");
        }
        let debug = format!("{:?}", block("redis://:s3cret-pw-77@h/0", None));
        assert!(
            debug.contains("StoreBlock") && !debug.contains("s3cret-pw-77"),
            "{debug}"
        );
    }
}
