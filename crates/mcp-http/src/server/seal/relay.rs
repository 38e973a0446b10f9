//! Answers to the server's own requests that reach the wrong replica (issue 24 §3). A request
//! the server sends a client in the middle of a call (elicitation, sampling, roots) waits in
//! the replica that sent it, but the client POSTs its answer wherever its balancer sends it.
//! So each replica names itself in the ids of the requests it sends (`<replica>.<n>`, made by
//! the session through [`ServerConfig::request_id_prefix`](mcp_protocol::ServerConfig)), and a
//! replica that receives an answer naming another passes it there through the
//! [`SessionShare`](super::SessionShare), sealed with the session keys together with the session id it came on.
//! The replica that waits opens it and gives it to that session only, exactly as if it had been
//! POSTed there: an answer sent on another session finds nothing to answer.

use std::sync::{Arc, Weak};

use mcp_protocol::{Decoded, Message, RequestId};
use mcp_session::Handler;

use super::super::{HttpServer, lock};
use super::SessionSeal;

/// Bound into every sealed answer: a sealed session id cannot pass for one, nor one for it.
const ANSWER_CONTEXT: &[u8] = b"mcp-host relayed answer v1";

/// How long a replica's name is, in hex digits (64 random bits: replicas never share one).
pub(crate) const REPLICA_LEN: usize = 16;

/// Where a [`SessionShare`](super::SessionShare) delivers the answers relayed to this replica
/// ([`SessionShare::listen`](super::SessionShare::listen)): the server, for as long as it is served.
#[derive(Clone)]
pub struct Inbox(Weak<dyn Deliver>);

impl std::fmt::Debug for Inbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Inbox")
            .field("open", &self.is_open())
            .finish()
    }
}

impl Inbox {
    /// Gives the server an answer another replica relayed (the payload it published, as
    /// is); false once the server is gone, when the share should stop listening.
    pub fn deliver(&self, payload: &[u8]) -> bool {
        match self.0.upgrade() {
            Some(server) => {
                server.deliver(payload);
                true
            }
            None => false,
        }
    }

    /// Whether the server still runs.
    pub fn is_open(&self) -> bool {
        self.0.strong_count() > 0
    }

    /// Tells the server that the share listens for it again after a break (a subscription
    /// that broke and was made again): what was relayed meanwhile is lost, so the server
    /// reads again what it must not miss, the recorded subscriptions of each session whose
    /// standalone stream it holds (`subs.rs`). False once the server is gone.
    pub fn listening_again(&self) -> bool {
        match self.0.upgrade() {
            Some(server) => {
                server.listening_again();
                true
            }
            None => false,
        }
    }
}

/// What an [`Inbox`] reaches, without the handler's type.
trait Deliver: Send + Sync {
    fn deliver(self: Arc<Self>, payload: &[u8]);
    fn listening_again(self: Arc<Self>);
}

impl<H: Handler> Deliver for HttpServer<H> {
    fn deliver(self: Arc<Self>, payload: &[u8]) {
        let Some(seal) = &self.config.sealed_sessions else {
            return;
        };
        // An answer bigger than this server would take in a POST is none it would have taken.
        if payload.len() > self.config.max_body_bytes + 1024 {
            return;
        }
        let Some((session_id, message)) = seal.open_answer(payload) else {
            return;
        };
        // Another replica recorded a subscription change of a session whose stream this
        // replica holds (`subs.rs`).
        if message == super::subs::CHANGED {
            self.subscriptions_changed(session_id);
            return;
        }
        let Ok(decoded) = mcp_protocol::decode(&message) else {
            return;
        };
        if !only_answers(&decoded) {
            return;
        }
        // The session the answer came on, if this replica holds it: its core matches the
        // answer to a request it sent, or drops it as it drops any answer to nothing.
        let session = lock(&self.sessions).get(&session_id).cloned();
        if let Some(session) = session {
            session.core.receive(decoded);
        }
    }

    fn listening_again(self: Arc<Self>) {
        self.catch_up_subscriptions();
    }
}

impl SessionSeal {
    /// What the ids of the requests this replica sends begin with.
    pub(crate) fn request_id_prefix(&self) -> String {
        format!("{}.", self.replica)
    }

    /// `message`, an answer that came on session `session_id`, sealed for the replica that
    /// waits for it; `None` when the OS gives no randomness.
    pub(crate) fn seal_answer(&self, session_id: &str, message: &[u8]) -> Option<Vec<u8>> {
        self.seal_for(ANSWER_CONTEXT, session_id, message)
    }

    /// `message`, bound to `session_id`, sealed under the first key with `context` as
    /// associated data: what is sealed for one use never opens for another.
    pub(crate) fn seal_for(
        &self,
        context: &'static [u8],
        session_id: &str,
        message: &[u8],
    ) -> Option<Vec<u8>> {
        let mut plain = Vec::with_capacity(2 + session_id.len() + message.len());
        let len = u16::try_from(session_id.len()).ok()?;
        plain.extend_from_slice(&len.to_be_bytes());
        plain.extend_from_slice(session_id.as_bytes());
        plain.extend_from_slice(message);
        self.seal_bytes(context, &plain)
    }

    /// The session id and the answer a replica sealed with one of the keys.
    pub(crate) fn open_answer(&self, payload: &[u8]) -> Option<(String, Vec<u8>)> {
        self.open_for(ANSWER_CONTEXT, payload)
    }

    /// The session id and the message [`seal_for`](Self::seal_for) sealed with `context`.
    pub(crate) fn open_for(
        &self,
        context: &'static [u8],
        payload: &[u8],
    ) -> Option<(String, Vec<u8>)> {
        let plain = self.open_bytes(context, payload)?;
        let (len, rest) = plain.split_first_chunk::<2>()?;
        let len = usize::from(u16::from_be_bytes(*len));
        if rest.len() < len {
            return None;
        }
        let (session_id, message) = rest.split_at(len);
        Some((
            String::from_utf8(session_id.to_vec()).ok()?,
            message.to_vec(),
        ))
    }
}

/// Takes a sealed session that answered `initialize` here as initialized when its next
/// request comes: the client's `notifications/initialized` is a POST of its own, which a
/// balancer may have sent to another replica, and without it this replica's session would
/// refuse to send the client anything (its requests in the middle of a call above all). A
/// client sends it before its next request, so by then it was sent, wherever it went; a
/// replica that revives a session replays it for the same reason.
pub(crate) fn initialized_elsewhere<H: Handler>(core: &mcp_session::ServerCore<H>) {
    if !core.is_operating() && core.protocol_version().is_some() {
        core.receive(Decoded::Single(Message::Notification(
            mcp_protocol::Notification {
                method: "notifications/initialized".to_owned(),
                params: None,
            },
        )));
    }
}

/// The replica an answer's id names, when it names one: `<16 hex digits>.<n>`.
pub(crate) fn replica_of(id: &RequestId) -> Option<&str> {
    let RequestId::String(id) = id else {
        return None;
    };
    let (replica, _) = id.split_once('.')?;
    (replica.len() == REPLICA_LEN && replica.bytes().all(|b| b.is_ascii_hexdigit()))
        .then_some(replica)
}

/// The id an item answers, if it is an answer (a result, or an error with an id).
fn answered(item: &Message) -> Option<&RequestId> {
    match item {
        Message::Response(r) => Some(&r.id),
        Message::Error(e) => e.id.as_ref(),
        _ => None,
    }
}

fn only_answers(decoded: &Decoded) -> bool {
    match decoded {
        Decoded::Single(m) => answered(m).is_some(),
        Decoded::Batch(items) => items
            .iter()
            .all(|item| item.as_ref().is_ok_and(|m| answered(m).is_some())),
    }
}

/// Why an answer could not be passed on: the share did not take it (503, so the client may
/// send it again), or there was no randomness to seal it with (500).
#[derive(Debug, Clone, Copy)]
pub(crate) enum NotRelayed {
    StoreDown,
    NoRandomness,
}

impl<H: Handler> HttpServer<H> {
    /// Starts taking the answers other replicas relay to this one, when ids are sealed.
    pub(crate) fn listen_for_answers(self: &Arc<Self>) {
        let Some(seal) = &self.config.sealed_sessions else {
            return;
        };
        let me: Arc<dyn Deliver> = Arc::clone(self) as Arc<dyn Deliver>;
        seal.share()
            .listen(&seal.replica, Inbox(Arc::downgrade(&me)));
    }

    /// Passes the answers in `decoded` that another replica waits for to that replica, and
    /// returns what is left for this session (`None` when nothing is).
    pub(crate) async fn relay_answers(
        &self,
        session_id: &str,
        decoded: Decoded,
    ) -> Result<Option<Decoded>, NotRelayed> {
        let Some(seal) = &self.config.sealed_sessions else {
            return Ok(Some(decoded));
        };
        let foreign = |m: &Message| {
            answered(m)
                .and_then(replica_of)
                .filter(|r| *r != seal.replica)
                .map(str::to_owned)
        };
        match decoded {
            Decoded::Single(message) => match foreign(&message) {
                Some(replica) => {
                    self.relay_one(seal, session_id, &replica, &message).await?;
                    Ok(None)
                }
                None => Ok(Some(Decoded::Single(message))),
            },
            Decoded::Batch(items) => {
                let mut rest = Vec::with_capacity(items.len());
                for item in items {
                    match item.as_ref().ok().and_then(foreign) {
                        Some(replica) => {
                            if let Ok(message) = &item {
                                self.relay_one(seal, session_id, &replica, message).await?;
                            }
                        }
                        None => rest.push(item),
                    }
                }
                Ok((!rest.is_empty()).then_some(Decoded::Batch(rest)))
            }
        }
    }

    async fn relay_one(
        &self,
        seal: &SessionSeal,
        session_id: &str,
        replica: &str,
        message: &Message,
    ) -> Result<(), NotRelayed> {
        let sealed = seal
            .seal_answer(session_id, &message.encode())
            .ok_or(NotRelayed::NoRandomness)?;
        // Nobody listening (the replica that sent the request is gone, and its call with it)
        // is no fault of the client's: there is nothing it could send again.
        seal.share()
            .relay(replica, sealed)
            .await
            .map(|_| ())
            .map_err(|_| NotRelayed::StoreDown)
    }
}
