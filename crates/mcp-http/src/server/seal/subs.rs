//! Resource subscriptions across replicas (issue 24 §3). A handshake client subscribes with
//! `resources/subscribe` on one POST and hears `notifications/resources/updated` on its standalone
//! `GET` stream, which a balancer may have opened at another replica. So the replica that takes a
//! `resources/unsubscribe` records it in the [`SessionShare`](super::SessionShare) before its
//! session hears it, and a `resources/subscribe` once its session took it (a subscribe the session
//! refuses is never recorded, so no other replica judges it again), the URI sealed with the
//! session keys, bound to the session id, under a digest of the URI and the session id; it reads
//! in the same round trip which replica holds the session's stream; when that is another, it tells
//! it on that replica's channel ([`SessionShare::relay`](super::SessionShare::relay)), a sealed
//! notice naming the session and nothing else. The replica opening a stream records itself as the
//! holder and reads the recorded subscriptions in one round trip, and the holder, told of a change,
//! reads them again: either way it tells its own copy of the session the subscribes and
//! unsubscribes that copy has not heard, as if the client had sent them there, so that its handler
//! subscribes its own upstream connections and sends their updates on the stream, as at one
//! replica. Updates themselves never cross: each replica hears its own upstreams.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use mcp_protocol::{Decoded, Message, RawJson, RequestId};
use mcp_session::{Handler, Identity};

use super::super::routes::StreamTx;
use super::super::{HttpServer, SERVER_BUSY, Session, lock, queue, rpc_error};
use super::{SessionSeal, share_key};

/// Bound into every sealed subscription: one cannot pass for an answer or an id.
const SUBSCRIPTION_CONTEXT: &[u8] = b"mcp-host resource subscription v1";

/// The notice a replica relays to the one holding a session's stream when the session's
/// subscriptions changed (sealed with the session id, as an answer is).
pub(crate) const CHANGED: &[u8] = b"mcp-http/subscriptions-changed";

/// How long a replica waits for its session to take the subscribes and unsubscribes it tells
/// it (each one is an upstream round trip in the gateway).
const REPLAY_WAIT: Duration = Duration::from_secs(10);

/// The number in the ids of the requests a replica tells its sessions on their clients'
/// behalf, so that several in flight never share one.
static REPLAYED: AtomicU64 = AtomicU64::new(0);

/// What a replica's copy of a sealed session has been told of its subscriptions.
#[derive(Debug, Default)]
pub(crate) struct Told {
    /// The URIs this copy was told to subscribe to and not since to unsubscribe from.
    uris: BTreeSet<String>,
    /// Who opened the session's standalone stream here: the identity the subscriptions that
    /// other replicas record are told with (none came with the notice).
    caller: Option<Identity>,
}

/// The subscribe (`true`) or unsubscribe (`false`) `message` is, if it is one: its URI.
fn change(message: &Message) -> Option<(String, bool)> {
    let Message::Request(request) = message else {
        return None;
    };
    let on = match request.method.as_str() {
        "resources/subscribe" => true,
        "resources/unsubscribe" => false,
        _ => return None,
    };
    let params = request
        .params
        .as_ref()?
        .decode::<serde_json::Value>()
        .ok()?;
    let uri = params.get("uri")?.as_str()?;
    Some((uri.to_owned(), on))
}

/// The subscribes (`true`) and unsubscribes (`false`) a POST holds, in order.
fn changes(decoded: &Decoded) -> Vec<(String, bool)> {
    match decoded {
        Decoded::Single(message) => change(message).into_iter().collect(),
        Decoded::Batch(items) => items
            .iter()
            .filter_map(|item| item.as_ref().ok().and_then(change))
            .collect(),
    }
}

/// Why a POST's subscription change could not be recorded, or its stream's holder not told.
#[derive(Debug, Clone, Copy)]
pub(crate) enum SubscriptionNotKept {
    /// The share did not answer.
    StoreDown,
    /// No randomness to seal with.
    NoRandomness,
}

impl SubscriptionNotKept {
    /// 503 with `Retry-After: 1` (500 without randomness): the session never heard the
    /// change (or took back the subscribe it took), and the client may send it again. Taken
    /// here and unknown to the replica holding the stream, it would change nothing the client
    /// hears, with nothing to say so.
    pub(crate) fn response(self) -> http::Response<super::super::ResponseBody> {
        if matches!(self, Self::NoRandomness) {
            return rpc_error(
                http::StatusCode::INTERNAL_SERVER_ERROR,
                -32603,
                "the subscription could not be sealed: the OS gave no randomness",
            );
        }
        let mut r = rpc_error(
            http::StatusCode::SERVICE_UNAVAILABLE,
            SERVER_BUSY,
            "Service Unavailable: the session store did not take the resource subscription, \
             which the replica holding the session's stream must know; send it again",
        );
        r.headers_mut().insert(
            http::header::RETRY_AFTER,
            http::HeaderValue::from_static("1"),
        );
        r
    }
}

impl<H: Handler> HttpServer<H> {
    /// Records the subscribes and unsubscribes a POST of a sealed session holds in the share,
    /// before the session hears them, and tells the replica holding the session's stream,
    /// when that is another; this replica's copy is then taken as told. (A lone subscribe is
    /// not here: the session judges it first, [`judge_subscribe`](Self::judge_subscribe).)
    pub(crate) async fn record_subscriptions(
        &self,
        session_id: &str,
        session: &Session<H>,
        decoded: &Decoded,
    ) -> Result<(), SubscriptionNotKept> {
        let (Some(seal), Some(told)) = (&self.config.sealed_sessions, &session.subs) else {
            return Ok(());
        };
        let changes = changes(decoded);
        if changes.is_empty() {
            return Ok(());
        }
        let mut told = told.lock().await;
        record(seal, session_id, &changes).await?;
        for (uri, on) in changes {
            if on {
                told.uris.insert(uri);
            } else {
                told.uris.remove(&uri);
            }
        }
        Ok(())
    }

    /// A lone `resources/subscribe` of a sealed session: the session hears it first, on a
    /// stream of its own, and it is recorded in the share (and the stream's replica told)
    /// only once the session took it, so that a subscribe the session refuses (the rules, no
    /// upstream taking it) is never recorded: no other replica tells it to its copy of the
    /// session, under the claims of another token of the same subject, and the session's
    /// subscriptions are those one replica would have. A subscribe the session took and the
    /// share does not is taken back (the session is told to unsubscribe, as the caller) and
    /// answered 503; one the session held already, recorded, is left as it was (taking it
    /// back would end a subscription the store and the other replicas keep). Anything else goes on as it came ([`Judged::Not`]); a batch (2025-03-26)
    /// is recorded before the session hears it ([`record_subscriptions`](Self::record_subscriptions)).
    pub(crate) async fn judge_subscribe(
        &self,
        session_id: &str,
        session: &Session<H>,
        decoded: Decoded,
        caller: Option<Identity>,
    ) -> Result<Judged, SubscriptionNotKept> {
        let (Some(seal), Some(told)) = (&self.config.sealed_sessions, &session.subs) else {
            return Ok(Judged::Not(decoded));
        };
        let uri = match &decoded {
            Decoded::Single(message) => match change(message) {
                Some((uri, true)) => uri,
                _ => return Ok(Judged::Not(decoded)),
            },
            Decoded::Batch(_) => return Ok(Judged::Not(decoded)),
        };
        let id = match &decoded {
            Decoded::Single(Message::Request(request)) => request.id.clone(),
            _ => return Ok(Judged::Not(decoded)),
        };
        let mut told = told.lock().await;
        // Subscribed already (recorded, and taken by the session here): a subscribe again is
        // nothing new to take back if the store refuses it.
        let had = told.uris.contains(&uri);
        let answers = self.tell(session, decoded, caller.clone());
        let answer = answers
            .first()
            .await
            .unwrap_or_else(|| unanswered(id.clone()));
        if matches!(answer, Message::Response(_)) {
            if let Err(e) = record(seal, session_id, &[(uri.clone(), true)]).await {
                if !had {
                    let undo = self.tell(session, replayed("resources/unsubscribe", &uri), caller);
                    let _ = tokio::time::timeout(REPLAY_WAIT, undo.first()).await;
                }
                return Err(e);
            }
            told.uris.insert(uri);
        }
        Ok(Judged::Answered(answer))
    }

    /// Gives `request` to the session's core as `caller`, its answers on a stream of their
    /// own, which nobody reads but the caller of this.
    fn tell(&self, session: &Session<H>, request: Decoded, caller: Option<Identity>) -> Answers {
        let (tx, rx) = queue::channel(self.limits(&session.buffer));
        let stream = Arc::new(StreamTx { tx, json: true });
        let claimed = lock(&session.routes.state).claim(request, &stream);
        drop(stream);
        if let Some(request) = claimed {
            session.core.receive_as(request, caller);
        }
        Answers(rx)
    }

    /// As the session's standalone stream opens here: records this replica as its holder,
    /// and tells its copy here the subscriptions recorded at any replica, as `caller`.
    pub(crate) async fn hold_stream(
        &self,
        session_id: &str,
        session: &Session<H>,
        caller: Option<Identity>,
    ) -> Result<(), SubscriptionNotKept> {
        let (Some(seal), Some(told)) = (&self.config.sealed_sessions, &session.subs) else {
            return Ok(());
        };
        let mut told = told.lock().await;
        let sealed = seal
            .share()
            .hold_stream(&share_key(session_id), seal.replica(), seal.max_age())
            .await
            .map_err(|_| SubscriptionNotKept::StoreDown)?;
        told.caller = caller;
        self.tell_subscriptions(session_id, session, &mut told, &sealed)
            .await;
        Ok(())
    }

    /// Another replica recorded a change of `session_id`'s subscriptions: if this replica
    /// holds the session, its copy is told what changed (in a task of its own: the notice
    /// comes on the share's thread).
    pub(crate) fn subscriptions_changed(self: Arc<Self>, session_id: String) {
        let Some(session) = lock(&self.sessions).get(&session_id).cloned() else {
            return;
        };
        let Some(runtime) = self.runtime.clone() else {
            return;
        };
        runtime.spawn(async move {
            let (Some(seal), Some(told)) = (&self.config.sealed_sessions, &session.subs) else {
                return;
            };
            let mut told = told.lock().await;
            // A share that cannot be read says so in its own log (this crate logs nothing);
            // the next notice, or the stream opened again, tells the session.
            if let Ok(sealed) = seal.share().subscriptions(&share_key(&session_id)).await {
                self.tell_subscriptions(&session_id, &session, &mut told, &sealed)
                    .await;
            }
        });
    }

    /// The share listens for this replica again after a break, during which notices of
    /// changes may have been lost (a `PUBLISH` reaches only who listens at that moment): each
    /// session whose standalone stream is open here reads its recorded subscriptions again, as
    /// if it had been told they changed.
    pub(crate) fn catch_up_subscriptions(self: Arc<Self>) {
        let sessions: Vec<(String, Arc<Session<H>>)> = lock(&self.sessions)
            .iter()
            .filter(|(_, session)| session.subs.is_some())
            .map(|(id, session)| (id.clone(), Arc::clone(session)))
            .collect();
        for (id, session) in sessions {
            let streaming = lock(&session.routes.state)
                .standalone
                .as_ref()
                .is_some_and(|s| !s.tx.is_closed());
            if streaming {
                Arc::clone(&self).subscriptions_changed(id);
            }
        }
    }

    /// Tells `session` the subscribes and unsubscribes that make what it was `told` the
    /// subscriptions `sealed` (from the share; each opened and kept only if it is bound to
    /// this session), and waits (at most [`REPLAY_WAIT`]) for their answers.
    async fn tell_subscriptions(
        &self,
        session_id: &str,
        session: &Session<H>,
        told: &mut Told,
        sealed: &[Vec<u8>],
    ) {
        let Some(seal) = &self.config.sealed_sessions else {
            return;
        };
        let wanted: BTreeSet<String> = sealed
            .iter()
            .filter_map(|sealed| seal.open_for(SUBSCRIPTION_CONTEXT, sealed))
            .filter(|(session, _)| session == session_id)
            .filter_map(|(_, uri)| String::from_utf8(uri).ok())
            .collect();
        let mut requests = Vec::new();
        for uri in wanted.difference(&told.uris) {
            requests.push(("resources/subscribe", uri.clone()));
        }
        for uri in told.uris.difference(&wanted) {
            requests.push(("resources/unsubscribe", uri.clone()));
        }
        if requests.is_empty() {
            return;
        }
        // Their answers come on a stream of their own, which nobody reads but this wait.
        let (tx, mut rx) = queue::channel(self.limits(&session.buffer));
        let stream = Arc::new(StreamTx { tx, json: true });
        let mut sent = 0;
        for (method, uri) in requests {
            let claimed = lock(&session.routes.state).claim(replayed(method, &uri), &stream);
            if let Some(request) = claimed {
                session.core.receive_as(request, told.caller.clone());
                sent += 1;
            }
        }
        drop(stream);
        told.uris = wanted;
        let _ = tokio::time::timeout(REPLAY_WAIT, async {
            for _ in 0..sent {
                if !matches!(rx.recv().await, Ok(Some(_))) {
                    break;
                }
            }
        })
        .await;
    }
}

/// Records `changes` (subscribes `true`, unsubscribes `false`) of session `session_id` in the
/// share, and tells the replica holding the session's stream, when that is another.
async fn record(
    seal: &SessionSeal,
    session_id: &str,
    changes: &[(String, bool)],
) -> Result<(), SubscriptionNotKept> {
    let key = share_key(session_id);
    let mut holder = None;
    for (uri, on) in changes {
        let sealed = if *on {
            Some(
                seal.seal_for(SUBSCRIPTION_CONTEXT, session_id, uri.as_bytes())
                    .ok_or(SubscriptionNotKept::NoRandomness)?,
            )
        } else {
            None
        };
        // The field is a digest of the URI with the session id, so that a reader of the
        // store cannot confirm a guessed URI.
        let field = share_key(&format!("{session_id} {uri}"));
        holder = seal
            .share()
            .set_subscription(&key, &field, sealed, seal.max_age())
            .await
            .map_err(|_| SubscriptionNotKept::StoreDown)?;
    }
    if let Some(holder) = holder.filter(|h| *h != seal.replica()) {
        let notice = seal
            .seal_answer(session_id, CHANGED)
            .ok_or(SubscriptionNotKept::NoRandomness)?;
        seal.share()
            .relay(&holder, notice)
            .await
            .map_err(|_| SubscriptionNotKept::StoreDown)?;
    }
    Ok(())
}

/// What [`HttpServer::judge_subscribe`] did with a POST.
#[derive(Debug)]
pub(crate) enum Judged {
    /// Not a lone subscribe of a sealed session: it goes on as it came.
    Not(Decoded),
    /// The session's answer to the lone subscribe, for the client.
    Answered(Message),
}

/// The answers to what a replica told its session on its own ([`HttpServer::tell`]).
struct Answers(queue::Receiver<bytes::Bytes>);

impl Answers {
    /// The first answer, if the session gives one (`None` once its stream ends unanswered:
    /// the session closed).
    async fn first(mut self) -> Option<Message> {
        let frame = self.0.recv().await.ok().flatten()?;
        match mcp_protocol::decode(&frame).ok()? {
            Decoded::Single(message) => Some(message),
            Decoded::Batch(_) => None,
        }
    }
}

/// The answer to request `id` of a session that closed before it answered.
fn unanswered(id: RequestId) -> Message {
    Message::Error(mcp_protocol::ErrorResponse {
        id: Some(id),
        error: mcp_protocol::ErrorObject::new(
            mcp_protocol::code::INTERNAL_ERROR,
            "the session closed before it answered".to_owned(),
        ),
    })
}

/// `method` (a subscribe or an unsubscribe) of `uri`, as a replica tells its session on its
/// client's behalf.
fn replayed(method: &str, uri: &str) -> Decoded {
    let n = REPLAYED.fetch_add(1, Ordering::Relaxed);
    Decoded::Single(Message::Request(mcp_protocol::Request {
        id: RequestId::String(format!("mcp-http/replayed-subscription/{n}")),
        method: method.to_owned(),
        params: RawJson::encode(&serde_json::json!({ "uri": uri })).ok(),
    }))
}
