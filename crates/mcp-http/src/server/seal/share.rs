//! Where replicas share what a sealed id cannot carry: which sessions ended, the logging level
//! a client set (`kept.rs`), the resources it subscribed to and which replica holds its
//! standalone stream (`subs.rs`), and the answers to a replica's requests that reached another
//! (`relay.rs`). A trait, so that this crate
//! knows no store: the gateway implements it over Redis, tests and a single process use
//! [`LocalShare`].

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::super::lock;
use super::relay::Inbox;

/// What a [`SessionShare`] call returns: boxed, so that the trait stays object-safe.
pub type ShareFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, ShareError>> + Send + 'a>>;

/// Session state the replicas of a server share (issue 24 §3). Sessions are named by a digest
/// of their id, never by the id itself.
pub trait SessionShare: Send + Sync + 'static {
    /// Records that `session` ended (the client sent DELETE), for `ttl`: past it the session's
    /// id is refused for its age anyway, so the record may go.
    fn end<'a>(&'a self, session: &'a str, ttl: Duration) -> ShareFuture<'a, ()>;

    /// Whether `session` ended. Asked before every request to a sealed session, so that a
    /// session ended at one replica is refused by every other.
    fn is_ended<'a>(&'a self, session: &'a str) -> ShareFuture<'a, bool>;

    /// Passes `answer` (sealed: opaque to the share) to the replica named `replica`, which
    /// gets it through the [`Inbox`] it gave [`listen`](Self::listen); how many listeners
    /// took it (0 when that replica is gone). An error makes the client's POST a 503, so that
    /// it may send its answer again: an answer is never dropped silently.
    fn relay<'a>(&'a self, replica: &'a str, answer: Vec<u8>) -> ShareFuture<'a, usize>;

    /// Starts delivering what is relayed to `replica` into `inbox`, until the inbox closes
    /// (its server is gone). Called once, as the server starts; it should be listening when
    /// it returns, if the store answers, so that no answer sent meanwhile is missed. When it
    /// listens again after a break (a broken subscription made again), it calls
    /// [`Inbox::listening_again`], so that the server catches up with what was relayed
    /// meanwhile and lost.
    fn listen(&self, replica: &str, inbox: Inbox);

    /// What a replica must know of `session` before serving a request of it: whether it
    /// ended, and the logging level its client set (at any replica). Asked instead of
    /// [`is_ended`](Self::is_ended) before every request to a sealed session, so a share
    /// should answer both in one round trip. By default the level is not shared (each
    /// replica keeps what its client told it).
    fn state<'a>(&'a self, session: &'a str) -> ShareFuture<'a, SessionState> {
        Box::pin(async move {
            Ok(SessionState {
                ended: self.is_ended(session).await?,
                level: None,
            })
        })
    }

    /// Records that the client of `session` set its logging level to `level`
    /// (`logging/setLevel`), for `ttl`, so that every replica serving the session applies it.
    /// An error makes the client's request a 503 that the session never sees: a level is
    /// never taken at one replica and lost to the others. By default nothing is recorded.
    fn set_level<'a>(
        &'a self,
        session: &'a str,
        level: &'a str,
        ttl: Duration,
    ) -> ShareFuture<'a, ()> {
        let _ = (session, level, ttl);
        Box::pin(std::future::ready(Ok(())))
    }

    /// Records (`Some`) or removes (`None`) one resource subscription of `session`, under `field`
    /// (a digest of its URI and the session id); `sealed` is the URI sealed with the session keys,
    /// opaque to the share. Kept for `ttl`. Returns the replica holding the session's standalone
    /// stream ([`hold_stream`](Self::hold_stream)), if one was recorded, read in the same round
    /// trip, so that the replica that took the change tells that one (`subs.rs`). An error makes
    /// the client's request a 503: the session never hears an unsubscribe, and takes back a
    /// subscribe (recorded only once the session took it). By default nothing is recorded and
    /// no holder is known (subscriptions stay at each replica).
    fn set_subscription<'a>(
        &'a self,
        session: &'a str,
        field: &'a str,
        sealed: Option<Vec<u8>>,
        ttl: Duration,
    ) -> ShareFuture<'a, Option<String>> {
        let _ = (session, field, sealed, ttl);
        Box::pin(std::future::ready(Ok(None)))
    }

    /// Records that `replica` holds the standalone stream of `session` (for `ttl`), and
    /// returns the session's recorded subscriptions (sealed), in the same round trip: the
    /// replica opening a stream subscribes for them, and any recorded afterwards is told to
    /// it. By default nothing is recorded and there are none.
    fn hold_stream<'a>(
        &'a self,
        session: &'a str,
        replica: &'a str,
        ttl: Duration,
    ) -> ShareFuture<'a, Vec<Vec<u8>>> {
        let _ = (session, replica, ttl);
        Box::pin(std::future::ready(Ok(Vec::new())))
    }

    /// The recorded subscriptions of `session` (sealed), read by the replica holding its
    /// stream when another replica tells it they changed. By default there are none.
    fn subscriptions<'a>(&'a self, session: &'a str) -> ShareFuture<'a, Vec<Vec<u8>>> {
        let _ = session;
        Box::pin(std::future::ready(Ok(Vec::new())))
    }
}

/// What [`SessionShare::state`] says of a session. Non-exhaustive, so that what replicas share
/// of a session can grow without breaking a store implemented elsewhere: such a store builds
/// it with [`SessionState::new`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct SessionState {
    /// The client ended it (DELETE) at some replica.
    pub ended: bool,
    /// The logging level its client last set, at any replica (`logging/setLevel`'s `level`).
    pub level: Option<String>,
}

impl SessionState {
    /// A session ended or not, at the level its client last set if any.
    pub fn new(ended: bool, level: Option<String>) -> Self {
        Self { ended, level }
    }
}

/// Why the share could not answer (the store is down, say). The request it was for is
/// answered 503: a session must not come back to life because the store was unreachable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the session store: {0}")]
pub struct ShareError(pub String);

/// The ends of sessions kept in this process: enough for one replica, or for several servers
/// in one process (tests).
#[derive(Debug, Default)]
pub struct LocalShare {
    ended: Mutex<HashMap<String, Instant>>,
    /// The servers of this process that listen for answers, by replica.
    inboxes: Mutex<HashMap<String, Inbox>>,
    /// The level each session's client set, and until when it is kept.
    levels: Mutex<HashMap<String, (String, Instant)>>,
    /// Each session's subscriptions (sealed, by field), the replica holding its stream, and
    /// until when they are kept.
    subscriptions: Mutex<HashMap<String, LocalSubscriptions>>,
}

/// What [`LocalShare`] keeps of one session's subscriptions.
#[derive(Debug)]
struct LocalSubscriptions {
    sealed: HashMap<String, Vec<u8>>,
    holder: Option<String>,
    until: Instant,
}

impl LocalShare {
    /// The subscriptions of `session`, made empty when absent or past their time.
    fn subscriptions_of<'m>(
        map: &'m mut HashMap<String, LocalSubscriptions>,
        session: &str,
        ttl: Duration,
    ) -> &'m mut LocalSubscriptions {
        let now = Instant::now();
        map.retain(|_, s| s.until > now);
        let kept = map
            .entry(session.to_owned())
            .or_insert_with(|| LocalSubscriptions {
                sealed: HashMap::new(),
                holder: None,
                until: now,
            });
        kept.until = now + ttl;
        kept
    }
}

impl SessionShare for LocalShare {
    fn end<'a>(&'a self, session: &'a str, ttl: Duration) -> ShareFuture<'a, ()> {
        let now = Instant::now();
        let mut ended = lock(&self.ended);
        // Records past their time go whenever one is added: the map holds no more than the
        // sessions ended within the maximum age.
        ended.retain(|_, until| *until > now);
        ended.insert(session.to_owned(), now + ttl);
        Box::pin(std::future::ready(Ok(())))
    }

    fn is_ended<'a>(&'a self, session: &'a str) -> ShareFuture<'a, bool> {
        let ended = lock(&self.ended)
            .get(session)
            .is_some_and(|until| *until > Instant::now());
        Box::pin(std::future::ready(Ok(ended)))
    }

    fn relay<'a>(&'a self, replica: &'a str, answer: Vec<u8>) -> ShareFuture<'a, usize> {
        let inbox = lock(&self.inboxes).get(replica).cloned();
        let taken = inbox.is_some_and(|inbox| inbox.deliver(&answer));
        Box::pin(std::future::ready(Ok(usize::from(taken))))
    }

    fn listen(&self, replica: &str, inbox: Inbox) {
        let mut inboxes = lock(&self.inboxes);
        inboxes.retain(|_, inbox| inbox.is_open());
        inboxes.insert(replica.to_owned(), inbox);
    }

    fn state<'a>(&'a self, session: &'a str) -> ShareFuture<'a, SessionState> {
        let now = Instant::now();
        let ended = lock(&self.ended)
            .get(session)
            .is_some_and(|until| *until > now);
        let level = lock(&self.levels)
            .get(session)
            .filter(|(_, until)| *until > now)
            .map(|(level, _)| level.clone());
        Box::pin(std::future::ready(Ok(SessionState { ended, level })))
    }

    fn set_level<'a>(
        &'a self,
        session: &'a str,
        level: &'a str,
        ttl: Duration,
    ) -> ShareFuture<'a, ()> {
        let now = Instant::now();
        let mut levels = lock(&self.levels);
        // As for ends: records past their time go whenever one is set.
        levels.retain(|_, (_, until)| *until > now);
        levels.insert(session.to_owned(), (level.to_owned(), now + ttl));
        Box::pin(std::future::ready(Ok(())))
    }

    fn set_subscription<'a>(
        &'a self,
        session: &'a str,
        field: &'a str,
        sealed: Option<Vec<u8>>,
        ttl: Duration,
    ) -> ShareFuture<'a, Option<String>> {
        let mut map = lock(&self.subscriptions);
        let kept = Self::subscriptions_of(&mut map, session, ttl);
        match sealed {
            Some(sealed) => kept.sealed.insert(field.to_owned(), sealed),
            None => kept.sealed.remove(field),
        };
        let holder = kept.holder.clone();
        Box::pin(std::future::ready(Ok(holder)))
    }

    fn hold_stream<'a>(
        &'a self,
        session: &'a str,
        replica: &'a str,
        ttl: Duration,
    ) -> ShareFuture<'a, Vec<Vec<u8>>> {
        let mut map = lock(&self.subscriptions);
        let kept = Self::subscriptions_of(&mut map, session, ttl);
        kept.holder = Some(replica.to_owned());
        let sealed = kept.sealed.values().cloned().collect();
        Box::pin(std::future::ready(Ok(sealed)))
    }

    fn subscriptions<'a>(&'a self, session: &'a str) -> ShareFuture<'a, Vec<Vec<u8>>> {
        let now = Instant::now();
        let sealed = lock(&self.subscriptions)
            .get(session)
            .filter(|s| s.until > now)
            .map(|s| s.sealed.values().cloned().collect())
            .unwrap_or_default();
        Box::pin(std::future::ready(Ok(sealed)))
    }
}
