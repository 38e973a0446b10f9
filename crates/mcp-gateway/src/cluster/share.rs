//! The ends of sealed sessions in the file's Redis `store`, so that a session a client ended
//! (DELETE) at one replica is refused by all. One key per ended session, under a digest of its
//! id, expiring when the id would have aged out anyway.

use std::time::Duration;

use mcp_host::redis::Redis;
use mcp_http::{SessionShare, ShareError, ShareFuture};

/// [`SessionShare`] over Redis. The client blocks, so each call runs on tokio's blocking pool.
pub(crate) struct RedisShare {
    redis: Redis,
    prefix: String,
}

impl RedisShare {
    /// Keys under `prefix` (the store's, so that gateways sharing a database share nothing
    /// else).
    pub(crate) fn new(redis: Redis, prefix: &str) -> Self {
        Self {
            redis,
            prefix: prefix.to_owned(),
        }
    }

    fn key(&self, session: &str) -> String {
        format!("{}:session-ended:{session}", self.prefix)
    }
}

/// A Redis error as the share reports it: the client's message names Redis's address and the
/// command, never a password.
fn share_error(e: impl std::fmt::Display) -> ShareError {
    ShareError(e.to_string())
}

impl SessionShare for RedisShare {
    fn end<'a>(&'a self, session: &'a str, ttl: Duration) -> ShareFuture<'a, ()> {
        let (redis, key) = (self.redis.clone(), self.key(session));
        Box::pin(async move {
            tokio::task::spawn_blocking(move || redis.set(&key, b"1", Some(ttl)))
                .await
                .map_err(share_error)?
                .map_err(share_error)
        })
    }

    fn is_ended<'a>(&'a self, session: &'a str) -> ShareFuture<'a, bool> {
        let (redis, key) = (self.redis.clone(), self.key(session));
        Box::pin(async move {
            tokio::task::spawn_blocking(move || redis.get(&key))
                .await
                .map_err(share_error)?
                .map(|value| value.is_some())
                .map_err(share_error)
        })
    }
}
