//! What the replicas do when their store is slow to take a write, or when their listener
//! missed a notice: a level being written holds no other request of its session, and a
//! replica that listens again after a break catches up with the subscriptions it was not told.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::sync::{Notify, Semaphore, mpsc};

use super::*;

/// A [`LocalShare`] whose writes of levels wait, while `hold_levels` is set, until the test
/// lets each go (`go`), saying when one waits (`writing`); whose relays are lost while `deaf`
/// is set, as a `PUBLISH` is while its listener's subscription is broken; which refuses
/// subscriptions while `refuse_subs` is set (a Redis gone down); and which keeps the inbox of
/// every server that listens, by replica.
struct Gated {
    inner: LocalShare,
    hold_levels: AtomicBool,
    writing: Notify,
    go: Semaphore,
    deaf: AtomicBool,
    refuse_subs: AtomicBool,
    inboxes: Mutex<HashMap<String, Inbox>>,
}

impl Gated {
    fn new() -> Self {
        Self {
            inner: LocalShare::default(),
            hold_levels: AtomicBool::new(false),
            writing: Notify::new(),
            go: Semaphore::new(0),
            deaf: AtomicBool::new(false),
            refuse_subs: AtomicBool::new(false),
            inboxes: Mutex::new(HashMap::new()),
        }
    }
}

impl SessionShare for Gated {
    fn end<'a>(&'a self, session: &'a str, ttl: Duration) -> ShareFuture<'a, ()> {
        self.inner.end(session, ttl)
    }
    fn is_ended<'a>(&'a self, session: &'a str) -> ShareFuture<'a, bool> {
        self.inner.is_ended(session)
    }
    fn relay<'a>(&'a self, replica: &'a str, answer: Vec<u8>) -> ShareFuture<'a, usize> {
        if self.deaf.load(Ordering::SeqCst) {
            return Box::pin(std::future::ready(Ok(0)));
        }
        self.inner.relay(replica, answer)
    }
    fn listen(&self, replica: &str, inbox: Inbox) {
        self.inboxes
            .lock()
            .unwrap()
            .insert(replica.to_owned(), inbox.clone());
        self.inner.listen(replica, inbox);
    }
    fn state<'a>(&'a self, session: &'a str) -> ShareFuture<'a, SessionState> {
        self.inner.state(session)
    }
    fn set_level<'a>(
        &'a self,
        session: &'a str,
        level: &'a str,
        ttl: Duration,
    ) -> ShareFuture<'a, ()> {
        Box::pin(async move {
            if self.hold_levels.load(Ordering::SeqCst) {
                self.writing.notify_one();
                self.go.acquire().await.unwrap().forget();
            }
            self.inner.set_level(session, level, ttl).await
        })
    }
    fn set_subscription<'a>(
        &'a self,
        session: &'a str,
        field: &'a str,
        sealed: Option<Vec<u8>>,
        ttl: Duration,
    ) -> ShareFuture<'a, Option<String>> {
        if self.refuse_subs.load(Ordering::SeqCst) {
            return Box::pin(std::future::ready(Err(ShareError("down".to_owned()))));
        }
        self.inner.set_subscription(session, field, sealed, ttl)
    }
    fn hold_stream<'a>(
        &'a self,
        session: &'a str,
        replica: &'a str,
        ttl: Duration,
    ) -> ShareFuture<'a, Vec<Vec<u8>>> {
        self.inner.hold_stream(session, replica, ttl)
    }
    fn subscriptions<'a>(&'a self, session: &'a str) -> ShareFuture<'a, Vec<Vec<u8>>> {
        self.inner.subscriptions(session)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_level_the_store_is_slow_to_take_holds_no_other_request() {
    let share = Arc::new(Gated::new());
    let a = leveled(share.clone()).await;
    let (_, id, _) = send(a, "POST", None, INIT).await;
    let id = id.expect("a session id");
    let (_, other, _) = send(a, "POST", None, INIT).await;
    let other = other.expect("a session id");
    // A level recorded: each request of the session now reads one from the store, and
    // compares it with what its copy here was told.
    let (status, _, body) = send(a, "POST", Some(&id), &set_level("error")).await;
    assert!(status.contains("200"), "{status} {body}");
    assert_eq!(level_at(a, &id).await, "level error");
    // The next level's write waits in the store (a Redis slow to answer).
    share.hold_levels.store(true, Ordering::SeqCst);
    let setting = {
        let id = id.clone();
        tokio::spawn(async move { send(a, "POST", Some(&id), &set_level("debug")).await })
    };
    share.writing.notified().await;
    // Meanwhile the session's other requests are served (before, they waited for the write:
    // the send gives up after 5 s), at the level it had; so are another session's.
    assert_eq!(level_at(a, &id).await, "level error");
    assert_eq!(level_at(a, &other).await, "level none");
    // Written, the level is answered and heard.
    share.go.add_permits(1);
    let (status, _, body) = setting.await.unwrap();
    assert!(
        status.contains("200") && body.contains(r#""result":{}"#),
        "{status} {body}"
    );
    assert_eq!(level_at(a, &id).await, "level debug");
}

/// The next subscribe the handler behind a server took (its URI), waited for at most 10 s.
async fn next_subscribe(told: &mut mpsc::UnboundedReceiver<String>) -> String {
    tokio::time::timeout(Duration::from_secs(10), told.recv())
        .await
        .expect("the stream's replica never subscribed")
        .expect("the handler is gone")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_listening_again_catches_up_with_the_subscriptions_it_was_not_told() {
    let share = Arc::new(Gated::new());
    let shared: Arc<dyn SessionShare> = share.clone();
    let a = subscribed(Arc::clone(&shared)).await;
    let seal_b = SessionSeal::new(&[KEY_A], HOUR).unwrap().with_share(shared);
    let replica_b = seal_b.replica().to_owned();
    let (tx, mut told_b) = mpsc::unbounded_channel();
    let b = subscribed_with(Arc::new(seal_b), Subscribed(Mutex::default(), Some(tx))).await;
    let (_, id, _) = send(a, "POST", None, INIT).await;
    let id = id.expect("a session id");
    // The session's stream at B; a subscribe at A reaches B's copy of the session.
    let (_stream, _) = standalone_event_id(b, &id).await;
    let (status, _, body) = send(a, "POST", Some(&id), &subscribe("fake://heard")).await;
    assert!(status.contains("200"), "{status} {body}");
    assert_eq!(next_subscribe(&mut told_b).await, "fake://heard");
    // B's listener deaf for a moment: the notice of the next subscribe is lost.
    share.deaf.store(true, Ordering::SeqCst);
    let (status, _, body) = send(a, "POST", Some(&id), &subscribe("fake://missed")).await;
    assert!(status.contains("200"), "{status} {body}");
    assert_eq!(subs_at(b, &id).await, "subs fake://heard");
    // Listening again, B reads the session's subscriptions, and subscribes for the one it
    // missed (before, it waited for the next change or the next GET).
    share.deaf.store(false, Ordering::SeqCst);
    let inbox = share.inboxes.lock().unwrap().get(&replica_b).cloned();
    assert!(inbox.expect("B listens").listening_again());
    assert_eq!(next_subscribe(&mut told_b).await, "fake://missed");
    assert_eq!(subs_at(b, &id).await, "subs fake://heard fake://missed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscribe_the_session_refuses_is_never_recorded_for_the_stream_replica() {
    let share = Arc::new(LocalShare::default());
    let shared: Arc<dyn SessionShare> = share.clone();
    let a = subscribed(Arc::clone(&shared)).await;
    let seal_b = SessionSeal::new(&[KEY_A], HOUR).unwrap().with_share(shared);
    let (tx, mut told_b) = mpsc::unbounded_channel();
    let b = subscribed_with(Arc::new(seal_b), Subscribed(Mutex::default(), Some(tx))).await;
    let (_, id, _) = send(a, "POST", None, INIT).await;
    let id = id.expect("a session id");
    // A's session refuses one subscribe, as one replica would, and takes another.
    let (status, _, body) = send(a, "POST", Some(&id), &subscribe("refused://x")).await;
    assert!(status.contains("200"), "{status} {body}");
    assert!(
        body.contains(r#""error""#) && body.contains("-32002"),
        "{body}"
    );
    let (status, _, body) = send(a, "POST", Some(&id), &subscribe("fake://y")).await;
    assert!(
        status.contains("200") && body.contains(r#""result":{}"#),
        "{status} {body}"
    );
    assert_eq!(subs_at(a, &id).await, "subs fake://y");
    // Only the one it took is recorded (before, both were, the refused one before the session
    // judged it), so the stream's replica is told only that one.
    assert_eq!(share.subscriptions(&share_key(&id)).await.unwrap().len(), 1);
    let (_stream, _) = standalone_event_id(b, &id).await;
    assert_eq!(next_subscribe(&mut told_b).await, "fake://y");
    assert_eq!(subs_at(b, &id).await, "subs fake://y");
    assert!(told_b.try_recv().is_err(), "B was asked another subscribe");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscribe_again_the_store_refuses_leaves_the_subscription_the_session_had() {
    let share = Arc::new(Gated::new());
    let a = subscribed(share.clone()).await;
    let (_, id, _) = send(a, "POST", None, INIT).await;
    let id = id.expect("a session id");
    let (status, _, body) = send(a, "POST", Some(&id), &subscribe("fake://kept")).await;
    assert!(
        status.contains("200") && body.contains(r#""result":{}"#),
        "{status} {body}"
    );
    assert_eq!(subs_at(a, &id).await, "subs fake://kept");
    // The store goes down, and the client subscribes to the same resource again: a 503, and
    // the subscription the session had, which the store still records, stays (before, the
    // undo of the refused write unsubscribed it, so its updates stopped here while every
    // other replica took it as subscribed).
    share.refuse_subs.store(true, Ordering::SeqCst);
    let (status, _, body) = send(a, "POST", Some(&id), &subscribe("fake://kept")).await;
    assert!(status.contains("503"), "{status} {body}");
    assert_eq!(subs_at(a, &id).await, "subs fake://kept");
    assert_eq!(share.subscriptions(&share_key(&id)).await.unwrap().len(), 1);
    // A new one the store refuses is still taken back.
    let (status, _, body) = send(a, "POST", Some(&id), &subscribe("fake://new")).await;
    assert!(status.contains("503"), "{status} {body}");
    assert_eq!(subs_at(a, &id).await, "subs fake://kept");
}
