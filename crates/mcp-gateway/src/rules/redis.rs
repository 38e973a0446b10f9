//! The rules' rate counters in Redis (the gateway file's `store` block), shared by every
//! replica: one sliding window per caller, rule, upstream and tool, counted by one script
//! ([`mcp_host::redis::Redis::take_in_window`]) so that two replicas never both take the last
//! call of a minute.
//!
//! The semantics are [`LocalRates`](super::LocalRates)' (a call is counted if fewer than the
//! limit were counted in the 60 s before it; otherwise the wait is until the oldest leaves
//! the window), with two differences: the window is judged by Redis's clock, not the
//! gateway's, and a call that cannot be counted (Redis down or refusing) is refused, naming
//! Redis and the phase, with a retry in 5 s (see [`RateStore`]).
//!
//! Keys are `<prefix>:rate:<hex>`, a SHA-256 of the counter's name: the name holds the
//! caller's issuer and subject, which need not be readable to whoever lists Redis's keys.

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use mcp_host::redis::Redis;

use super::{Over, RateStore, Taken};

/// Counters in Redis.
#[derive(Debug, Clone)]
pub(crate) struct RedisRates {
    redis: Redis,
    prefix: String,
}

impl RedisRates {
    /// Counters under `<prefix>:rate:` in `redis`.
    pub(crate) fn new(redis: Redis, prefix: &str) -> Self {
        Self {
            redis,
            prefix: prefix.to_owned(),
        }
    }

    fn key(&self, name: &str) -> String {
        let digest = ring::digest::digest(&ring::digest::SHA256, name.as_bytes());
        let mut key = format!("{}:rate:", self.prefix);
        for b in &digest.as_ref()[..16] {
            let _ = write!(key, "{b:02x}");
        }
        key
    }
}

impl RateStore for RedisRates {
    fn take<'a>(&'a self, key: &'a str, limit: u32, window: Duration, _now: Instant) -> Taken<'a> {
        let redis = self.redis.clone();
        let key = self.key(key);
        Box::pin(async move {
            let counted =
                tokio::task::spawn_blocking(move || redis.take_in_window(&key, limit, window))
                    .await;
            match counted {
                Ok(Ok(Ok(()))) => Ok(()),
                Ok(Ok(Err(wait))) => Err(Over::Limit(wait)),
                Ok(Err(e)) => {
                    tracing::warn!(target: "mcp_gateway", "rate limit not counted: {e}");
                    Err(Over::Unavailable(e.to_string()))
                }
                Err(e) => Err(Over::Unavailable(format!(
                    "the rate counting task failed: {e}"
                ))),
            }
        })
    }
}
