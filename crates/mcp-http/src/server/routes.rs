//! Where a session's messages go: each POST's answers on that POST's stream, a request to the
//! client on its request's stream or the standalone one, and the session's event ids. The
//! streams are bounded (`queue`): a message for a stream that was cut is dropped.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use mcp_protocol::{DecodeError, Decoded, Message, RequestId};
use mcp_session::ServerTransport;

use super::{body, lock, owed_id, queue};

/// Where a session's messages go: the stream of the request they belong to, or the
/// standalone stream (a request to the client, when its request's stream cannot carry it).
#[derive(Default)]
pub(super) struct Routes {
    pub(super) state: Mutex<RouteState>,
}

#[derive(Default)]
pub(super) struct RouteState {
    streams: HashMap<RequestId, Arc<StreamTx>>,
    pub(super) standalone: Option<Arc<StreamTx>>,
    events: u64,
    /// With sealed ids, what this copy of the session's event ids begin with: the replica's
    /// name and which copy of the session this is in the replica (`<replica>.<copy>.`), so
    /// that the ids are unique across the session's streams at every replica serving it, and
    /// across the copies one replica revives (each counts from 1), as the spec asks: a
    /// `Last-Event-ID` never names an event of another stream. Without, ids are plain counts
    /// (the session lives in this one copy).
    event_prefix: Option<String>,
}

impl Routes {
    /// The routes of a session whose event ids begin with `event_prefix` (sealed ids).
    pub(super) fn with_event_prefix(event_prefix: Option<String>) -> Self {
        Self {
            state: Mutex::new(RouteState {
                event_prefix,
                ..RouteState::default()
            }),
        }
    }
}

impl RouteState {
    /// Event ids are unique in the session and say which stream they are on: with sealed
    /// ids, a standalone stream's count is marked `s` (`<replica>.<copy>.s<n>`), so that a
    /// replica asked to resume a stream knows whether it was a call's ([`resumable_here`]).
    ///
    /// [`resumable_here`]: Self::resumable_here
    pub(super) fn next_event_id(&mut self) -> String {
        self.event_id(false)
    }

    /// The next event id of the standalone stream.
    pub(super) fn next_standalone_event_id(&mut self) -> String {
        self.event_id(true)
    }

    fn event_id(&mut self, standalone: bool) -> String {
        self.events += 1;
        match &self.event_prefix {
            Some(prefix) if standalone => format!("{prefix}s{}", self.events),
            Some(prefix) => format!("{prefix}{}", self.events),
            None => self.events.to_string(),
        }
    }

    /// Whether a GET with `Last-Event-ID: last` can go on here. A standalone stream's can
    /// (a new one opens, wherever the last one was), and so can a call's stream of this very
    /// copy of the session (its answers come on the standalone stream once the call's own is
    /// gone). A call's stream held by another replica, or by a copy of the session this
    /// replica forgot, cannot: no replica keeps another's events, so a new standalone stream
    /// here would never carry that call's answer, and the client would wait for it until its
    /// own time-out. An id this server did not make is let through as before.
    pub(super) fn resumable_here(&self, last: &str) -> bool {
        let Some(prefix) = &self.event_prefix else {
            return true;
        };
        let Some((head, count)) = last.rsplit_once('.') else {
            return true;
        };
        if count.starts_with('s') || !count.bytes().all(|b| b.is_ascii_digit()) {
            return true;
        }
        prefix.strip_suffix('.') == Some(head)
    }

    /// Routes the answers `decoded` is owed to `stream`, and returns what of it the session
    /// must see, if anything.
    ///
    /// Routes are keyed by request id, so an id that has a route already is refused here, on
    /// `stream`, with -32600, and kept from the session: an unanswered request of this session
    /// holds it (a route is made before the session sees its request, and dropped only once
    /// the session no longer awaits it: answered, cancelled or ended), or an earlier item of
    /// the same batch does. The session would refuse such a request too, but its error names
    /// only the id, so it would take the first request's route, and with it the answer that
    /// request is owed; and the session answers a `ping` at once, in use or not. An invalid
    /// item that names such an id gets its own error here, for the same reason.
    pub(super) fn claim(&mut self, decoded: Decoded, stream: &Arc<StreamTx>) -> Option<Decoded> {
        match decoded {
            Decoded::Single(message) => match self.claim_item(Ok(message), stream) {
                Some(Ok(message)) => Some(Decoded::Single(message)),
                _ => None,
            },
            Decoded::Batch(items) => {
                let rest: Vec<_> = items
                    .into_iter()
                    .filter_map(|item| self.claim_item(item, stream))
                    .collect();
                (!rest.is_empty()).then_some(Decoded::Batch(rest))
            }
        }
    }

    /// One item of [`claim`](Self::claim): given back for the session, or answered here.
    fn claim_item(
        &mut self,
        item: Result<Message, DecodeError>,
        stream: &Arc<StreamTx>,
    ) -> Option<Result<Message, DecodeError>> {
        let Some(id) = owed_id(item.as_ref()).cloned() else {
            return Some(item);
        };
        let id = match self.streams.entry(id) {
            Entry::Vacant(free) => {
                free.insert(Arc::clone(stream));
                return Some(item);
            }
            Entry::Occupied(taken) => taken.key().clone(),
        };
        let refusal = match &item {
            Ok(_) => Message::Error(mcp_protocol::ErrorResponse {
                id: Some(id),
                error: mcp_protocol::ErrorObject::new(
                    mcp_protocol::code::INVALID_REQUEST,
                    "request id is already in use by an unanswered request".to_owned(),
                ),
            }),
            Err(e) => e.to_response()?,
        };
        self.deliver(stream, &refusal);
        None
    }

    /// Puts `message` on `stream`: an SSE event with the session's next event id, or in a
    /// JSON answer as it is, if it is an answer (a JSON answer carries nothing else).
    pub(super) fn deliver(&mut self, stream: &StreamTx, message: &Message) {
        let frame = if !stream.json {
            let standalone = self
                .standalone
                .as_deref()
                .is_some_and(|s| std::ptr::eq(s, stream));
            body::event(message, Some(&self.event_id(standalone)))
        } else if matches!(message, Message::Response(_))
            || matches!(message, Message::Error(e) if e.id.is_some())
        {
            Bytes::from(message.encode())
        } else {
            return;
        };
        // A client that went away does not cancel: its answer is simply not delivered. A
        // stream past its limits is cut (`queue`), and nothing more goes on it.
        stream.tx.send(frame);
    }

    /// The stream a request to the client tied to `related` goes on, or why there is none:
    /// that request's own stream if it is SSE and the client still reads it, else the
    /// standalone stream if it is open.
    ///
    /// A JSON answer carries nothing but the answer (a handler's progress and other
    /// notifications on such a request are dropped, as the TypeScript and Python SDKs drop
    /// them), and a stream the client closed carries nothing at all. The spec would have the
    /// standalone stream carry messages unrelated to the client's requests (a SHOULD), but it
    /// is then the one way left to the client; with no way, the handler's request fails at
    /// once instead of waiting for its timeout for an answer that cannot come.
    fn request_stream(&self, related: Option<&RequestId>) -> Result<Arc<StreamTx>, String> {
        let own = related.and_then(|id| self.streams.get(id));
        if let Some(own) = own
            && !own.json
            && !own.tx.is_closed()
        {
            return Ok(Arc::clone(own));
        }
        if let Some(standalone) = &self.standalone
            && !standalone.tx.is_closed()
        {
            return Ok(Arc::clone(standalone));
        }
        Err(match (related, own) {
            (Some(id), Some(own)) if own.json => format!(
                "the answer to request {id} is one JSON body, which carries nothing else, and \
                 the client has no standalone GET stream open"
            ),
            (Some(id), Some(_)) => format!(
                "the client closed the stream of request {id} and has no standalone GET \
                 stream open"
            ),
            _ => "the client has no standalone GET stream open".to_owned(),
        })
    }

    pub(super) fn close_all(&mut self) {
        self.streams = HashMap::new();
        self.standalone = None;
    }

    /// Drops the route of request `id`: it was answered or withdrawn. The table's room goes
    /// with its last route, since a session is idle most of its life and a server may hold
    /// thousands of idle sessions; the next request takes it again (one allocation).
    fn forget(&mut self, id: &RequestId) {
        self.streams.remove(id);
        if self.streams.is_empty() {
            self.streams = HashMap::new();
        }
    }
}

/// One open response stream.
pub(super) struct StreamTx {
    pub(super) tx: queue::Sender<Bytes>,
    /// The stream is a JSON body: only answers go in it, as they are.
    pub(super) json: bool,
}

pub(super) struct RoutedTransport(pub(super) Arc<Routes>);

impl ServerTransport for RoutedTransport {
    fn send(&self, message: Message, related: Option<&RequestId>) {
        let mut routes = lock(&self.0.state);
        let answers = match &message {
            Message::Response(r) => Some(r.id.clone()),
            Message::Error(e) => e.id.clone(),
            _ => None,
        };
        let stream = match &message {
            Message::Request(_) => routes.request_stream(related).ok(),
            _ => related
                .and_then(|id| routes.streams.get(id).cloned())
                .or_else(|| routes.standalone.clone()),
        };
        if let Some(stream) = stream {
            routes.deliver(&stream, &message);
        }
        if let Some(id) = answers {
            routes.forget(&id);
        }
    }

    /// A cancelled request is never answered: its stream ends once nothing else it carries
    /// is owed (the last request of its POST), instead of staying open, and in the routes,
    /// for the session's life.
    fn withdrawn(&self, id: &RequestId) {
        lock(&self.0.state).forget(id);
    }

    /// A request to the client that no stream can carry fails at once (see
    /// [`RouteState::request_stream`]).
    fn undeliverable(&self, related: Option<&RequestId>) -> Option<String> {
        lock(&self.0.state).request_stream(related).err()
    }
}
