//! The ends of sealed sessions in the file's Redis `store`, so that a session a client ended
//! (DELETE) at one replica is refused by all. One key per ended session, under a digest of its
//! id, expiring when the id would have aged out anyway.
//!
//! The logging level each session's client set (`logging/setLevel`), one key per session under
//! the same digest, read with the session's end in one `MGET` before every request.
//!
//! Each session's resource subscriptions (a hash of sealed URIs, each under a digest of the
//! URI and the session id) and the replica holding its standalone stream, under the same digest
//! as the session's end (`mcp-http`'s `seal/subs.rs` says how they are used).
//!
//! And the answers to a replica's requests to clients that reached another replica: each
//! replica SUBSCRIBEs to `<prefix>:answers:<replica>` as it starts, and a replica holding an
//! answer for it PUBLISHes it there (sealed by `mcp-http` with the session keys: Redis sees
//! neither the session id nor the answer).

use std::time::Duration;

use mcp_host::redis::Reply;
use mcp_host::redis::{Redis, Subscription};
use mcp_http::{Inbox, SessionShare, SessionState, ShareError, ShareFuture};

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

    fn level_key(&self, session: &str) -> String {
        format!("{}:session-level:{session}", self.prefix)
    }

    fn subscriptions_key(&self, session: &str) -> String {
        format!("{}:session-subscriptions:{session}", self.prefix)
    }

    fn stream_key(&self, session: &str) -> String {
        format!("{}:session-stream:{session}", self.prefix)
    }

    fn answers(&self, replica: &str) -> String {
        format!("{}:answers:{replica}", self.prefix)
    }
}

/// How long a subscription waits for a message before it looks whether its server still runs.
const LISTEN_TICK: Duration = Duration::from_secs(1);

/// Listens on `channel` for as long as `inbox` is open: `first` is the subscription made
/// before the server served anything, if Redis answered. Each time it listens again after a
/// break, the server is told ([`Inbox::listening_again`]): what was published meanwhile
/// (a notice that a session's subscriptions changed, above all) reached nobody.
fn listen_on(redis: &Redis, channel: &str, inbox: &Inbox, first: Option<Subscription>) {
    let what = format!("answers relayed by other replicas ({channel})");
    listen_telling(
        redis,
        channel,
        &what,
        first,
        || inbox.is_open(),
        |payload| inbox.deliver(payload),
        || {
            inbox.listening_again();
        },
    );
}

/// Hears what other replicas publish on `channel` (`what` names it in the log) while `open`
/// says so, giving each message to `deliver`, which says whether to go on. A broken
/// subscription is made again, after a pause that grows to 5 s while Redis does not answer: a
/// replica's channel must outlive Redis restarts, or what is relayed to it is lost unseen.
pub(crate) fn listen(
    redis: &Redis,
    channel: &str,
    what: &str,
    first: Option<Subscription>,
    open: impl Fn() -> bool,
    deliver: impl FnMut(&[u8]) -> bool,
) {
    listen_telling(redis, channel, what, first, open, deliver, || {});
}

/// [`listen`], calling `again` each time a subscription is made again (the first too, when
/// Redis did not answer as the server started), once it listens: whoever must not miss what
/// was published meanwhile reads it again from where it is kept.
fn listen_telling(
    redis: &Redis,
    channel: &str,
    what: &str,
    first: Option<Subscription>,
    open: impl Fn() -> bool,
    mut deliver: impl FnMut(&[u8]) -> bool,
    mut again: impl FnMut(),
) {
    let mut subscription = first;
    let mut pause = Duration::from_millis(100);
    while open() {
        let Some(live) = subscription.as_mut() else {
            match redis.subscribe(&[channel]) {
                Ok(made) => {
                    tracing::info!(target: "mcp_gateway", "listening again for {what}");
                    subscription = Some(made);
                    pause = Duration::from_millis(100);
                    again();
                }
                Err(_) => {
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(Duration::from_secs(5));
                }
            }
            continue;
        };
        match live.recv(LISTEN_TICK) {
            Ok(Some(message)) => {
                if !deliver(&message.payload) {
                    return;
                }
            }
            Ok(None) => {}
            Err(e) => {
                tracing::warn!(target: "mcp_gateway", "{what}: {e}; subscribing again");
                subscription = None;
            }
        }
    }
}

/// A Redis error as the share reports it: the client's message names Redis's address and the
/// command, never a password.
fn share_error(e: impl std::fmt::Display) -> ShareError {
    ShareError(e.to_string())
}

/// [`share_error`], said in the log too, with what could not be done (`phase`): the client
/// gets a 503 that names no store, so the operator learns here which one failed and how.
fn logged(phase: &str, e: impl std::fmt::Display) -> ShareError {
    tracing::warn!(target: "mcp_gateway", "sealed sessions: {phase}: {e}");
    share_error(e)
}

/// Records (a sealed URI given) or removes one subscription of a session in its hash, keeps
/// the hash as long as the session may live, and returns which replica holds the session's
/// stream: one script, so that a stream opened meanwhile ([`HOLD_STREAM`]) either sees the
/// subscription or is named here.
const SET_SUBSCRIPTION: &str = "\
if #ARGV == 3 then redis.call('HSET', KEYS[1], ARGV[1], ARGV[3]) \
else redis.call('HDEL', KEYS[1], ARGV[1]) end \
if redis.call('EXISTS', KEYS[1]) == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end \
return redis.call('GET', KEYS[2])";

/// Records the replica holding a session's stream and returns the session's subscriptions.
const HOLD_STREAM: &str = "\
redis.call('SET', KEYS[2], ARGV[1], 'PX', ARGV[2]) \
return redis.call('HVALS', KEYS[1])";

/// The values of an `HVALS` (or of [`HOLD_STREAM`]) Redis at `address` answered.
fn values_of(reply: Reply, address: &str, phase: &str) -> Result<Vec<Vec<u8>>, ShareError> {
    match reply {
        Reply::Array(Some(items)) => Ok(items
            .into_iter()
            .filter_map(|item| match item {
                Reply::Bulk(Some(value)) => Some(value),
                _ => None,
            })
            .collect()),
        other => Err(logged(
            phase,
            format!("Redis at {address}: unexpected reply {other:?}"),
        )),
    }
}

/// Milliseconds of `ttl`, as Redis takes them (at least 1).
fn millis(ttl: Duration) -> Vec<u8> {
    ttl.as_millis().max(1).to_string().into_bytes()
}

/// The session's end and level from an `MGET` of both keys, which Redis at `address` answered.
pub(super) fn state_of(reply: Reply, address: &str) -> Result<SessionState, ShareError> {
    let mut items = match reply {
        Reply::Array(Some(items)) if items.len() == 2 => items,
        other => {
            return Err(logged(
                "cannot read whether a session ended and its logging level",
                format!("Redis at {address}: MGET: unexpected reply {other:?}"),
            ));
        }
    };
    let level = match items.pop() {
        Some(Reply::Bulk(Some(level))) => String::from_utf8(level).ok(),
        _ => None,
    };
    let ended = matches!(items.pop(), Some(Reply::Bulk(Some(_))));
    Ok(SessionState::new(ended, level))
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

    fn relay<'a>(&'a self, replica: &'a str, answer: Vec<u8>) -> ShareFuture<'a, usize> {
        let (redis, channel) = (self.redis.clone(), self.answers(replica));
        Box::pin(async move {
            let taken = tokio::task::spawn_blocking(move || redis.publish(&channel, &answer))
                .await
                .map_err(share_error)?
                .map_err(share_error)?;
            Ok(usize::try_from(taken).unwrap_or(0))
        })
    }

    fn state<'a>(&'a self, session: &'a str) -> ShareFuture<'a, SessionState> {
        let (redis, ended, level) = (
            self.redis.clone(),
            self.key(session),
            self.level_key(session),
        );
        let address = self.redis.address();
        Box::pin(async move {
            let reply = tokio::task::spawn_blocking(move || {
                redis.command(&[b"MGET", ended.as_bytes(), level.as_bytes()])
            })
            .await
            .map_err(share_error)?
            .map_err(|e| {
                logged(
                    "cannot read whether a session ended and its logging level",
                    e,
                )
            })?;
            state_of(reply, &address)
        })
    }

    fn set_level<'a>(
        &'a self,
        session: &'a str,
        level: &'a str,
        ttl: Duration,
    ) -> ShareFuture<'a, ()> {
        let (redis, key, level) = (
            self.redis.clone(),
            self.level_key(session),
            level.as_bytes().to_vec(),
        );
        Box::pin(async move {
            tokio::task::spawn_blocking(move || redis.set(&key, &level, Some(ttl)))
                .await
                .map_err(share_error)?
                .map_err(|e| logged("cannot record the logging level a client set", e))
        })
    }

    fn set_subscription<'a>(
        &'a self,
        session: &'a str,
        field: &'a str,
        sealed: Option<Vec<u8>>,
        ttl: Duration,
    ) -> ShareFuture<'a, Option<String>> {
        let (redis, hash, stream) = (
            self.redis.clone(),
            self.subscriptions_key(session),
            self.stream_key(session),
        );
        let field = field.as_bytes().to_vec();
        let address = self.redis.address();
        Box::pin(async move {
            const PHASE: &str = "cannot record a resource subscription";
            let reply = tokio::task::spawn_blocking(move || {
                let ttl = millis(ttl);
                let mut args: Vec<&[u8]> = vec![&field, &ttl];
                if let Some(sealed) = &sealed {
                    args.push(sealed);
                }
                redis.eval(SET_SUBSCRIPTION, &[&hash, &stream], &args)
            })
            .await
            .map_err(share_error)?
            .map_err(|e| logged(PHASE, e))?;
            match reply {
                Reply::Bulk(Some(holder)) => Ok(String::from_utf8(holder).ok()),
                Reply::Bulk(None) => Ok(None),
                other => Err(logged(
                    PHASE,
                    format!("Redis at {address}: EVAL: unexpected reply {other:?}"),
                )),
            }
        })
    }

    fn hold_stream<'a>(
        &'a self,
        session: &'a str,
        replica: &'a str,
        ttl: Duration,
    ) -> ShareFuture<'a, Vec<Vec<u8>>> {
        let (redis, hash, stream) = (
            self.redis.clone(),
            self.subscriptions_key(session),
            self.stream_key(session),
        );
        let replica = replica.as_bytes().to_vec();
        let address = self.redis.address();
        Box::pin(async move {
            const PHASE: &str = "cannot record the replica holding a session's stream";
            let reply = tokio::task::spawn_blocking(move || {
                let ttl = millis(ttl);
                redis.eval(HOLD_STREAM, &[&hash, &stream], &[&replica, &ttl])
            })
            .await
            .map_err(share_error)?
            .map_err(|e| logged(PHASE, e))?;
            values_of(reply, &address, PHASE)
        })
    }

    fn subscriptions<'a>(&'a self, session: &'a str) -> ShareFuture<'a, Vec<Vec<u8>>> {
        let (redis, hash) = (self.redis.clone(), self.subscriptions_key(session));
        let address = self.redis.address();
        Box::pin(async move {
            const PHASE: &str = "cannot read a session's resource subscriptions";
            let reply =
                tokio::task::spawn_blocking(move || redis.command(&[b"HVALS", hash.as_bytes()]))
                    .await
                    .map_err(share_error)?
                    .map_err(|e| logged(PHASE, e))?;
            values_of(reply, &address, PHASE)
        })
    }

    fn listen(&self, replica: &str, inbox: Inbox) {
        let (redis, channel) = (self.redis.clone(), self.answers(replica));
        // The first subscription is made before the server answers anything, so that no
        // answer relayed to it is missed; Redis down, the thread keeps trying.
        let first = match redis.subscribe(&[&channel]) {
            Ok(subscription) => Some(subscription),
            Err(e) => {
                tracing::warn!(target: "mcp_gateway", "answers relayed by other replicas cannot be received yet: {e}");
                None
            }
        };
        let spawned = std::thread::Builder::new()
            .name("mcp-answers".to_owned())
            .spawn(move || listen_on(&redis, &channel, &inbox, first));
        if let Err(e) = spawned {
            tracing::warn!(target: "mcp_gateway", "answers relayed by other replicas will not be received: no thread: {e}");
        }
    }
}
