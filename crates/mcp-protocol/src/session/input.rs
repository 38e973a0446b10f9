//! The bookkeeping of the stateless era's multi round-trip requests (`basic/patterns/mrtr.mdx`):
//! a `tools/call`, `prompts/get` or `resources/read` may be answered with `input_required`,
//! and is then sent again, with a new id, carrying the answers and the server's state.
//!
//! The caller never sees the retries: it waits on the id of the first request (the *logical*
//! id) until the final answer. Each retry has its own *wire* id, and each input the server
//! asks for is handed to the caller as an ordinary server request with an id of its own; this
//! module maps all of them back to the logical id.

use std::collections::{BTreeMap, HashMap};

use crate::jsonrpc::{RawJson, RequestId};
use crate::session::pending::RequestOptions;
use crate::wire::JsonObject;

/// How many times one request may be answered with `input_required` before the session gives
/// up: a server that keeps asking is broken, and a person would be asked forever.
pub(crate) const MAX_ROUNDS: u32 = 16;

/// A request that may be answered with `input_required`.
#[derive(Debug)]
pub(crate) struct Tracked {
    pub(crate) method: String,
    /// The caller's parameters, before the session stamped them: each retry starts from them.
    pub(crate) params: Option<RawJson>,
    pub(crate) options: RequestOptions,
    /// How many `input_required` answers it has had.
    pub(crate) rounds: u32,
    /// The input requests handed to the caller and not answered yet: their id, their key.
    pub(crate) waiting: BTreeMap<RequestId, String>,
    /// The answers so far, by key.
    pub(crate) answers: JsonObject,
    /// The server's opaque state, echoed unchanged on the retry.
    pub(crate) request_state: Option<String>,
}

/// Every multi round-trip request in flight.
#[derive(Debug, Default)]
pub(crate) struct Inputs {
    tracked: HashMap<RequestId, Tracked>,
    /// The wire id of a retry → its logical id. The first send's wire id is the logical id.
    retries: HashMap<RequestId, RequestId>,
    /// The id of an input request handed to the caller → its logical id.
    asked: HashMap<RequestId, RequestId>,
}

impl Inputs {
    /// Remembers a request that may be answered with `input_required`.
    pub(crate) fn track(
        &mut self,
        id: RequestId,
        method: &str,
        params: Option<RawJson>,
        options: RequestOptions,
    ) {
        self.tracked.insert(
            id,
            Tracked {
                method: method.to_owned(),
                params,
                options,
                rounds: 0,
                waiting: BTreeMap::new(),
                answers: JsonObject::new(),
                request_state: None,
            },
        );
    }

    /// Whether the request a wire id belongs to is driven here.
    pub(crate) fn tracks(&self, wire: &RequestId) -> bool {
        self.tracked.contains_key(&self.logical(wire))
    }

    /// The logical id a wire id stands for.
    pub(crate) fn logical(&self, wire: &RequestId) -> RequestId {
        self.retries.get(wire).unwrap_or(wire).clone()
    }

    /// The wire id of a logical request's send in flight: its latest retry, or itself.
    pub(crate) fn wire_of(&self, logical: &RequestId) -> RequestId {
        self.retries
            .iter()
            .find(|(_, l)| *l == logical)
            .map_or_else(|| logical.clone(), |(wire, _)| wire.clone())
    }

    /// The request behind a logical id, if it is tracked.
    pub(crate) fn get_mut(&mut self, logical: &RequestId) -> Option<&mut Tracked> {
        self.tracked.get_mut(logical)
    }

    /// Forgets the wire id of an answered send; the request stays tracked.
    pub(crate) fn answered(&mut self, wire: &RequestId) {
        self.retries.remove(wire);
    }

    /// Records the wire id of a retry.
    pub(crate) fn resent(&mut self, wire: RequestId, logical: RequestId) {
        self.retries.insert(wire, logical);
    }

    /// Records an input request handed to the caller.
    pub(crate) fn ask(&mut self, input: RequestId, key: String, logical: &RequestId) {
        if let Some(t) = self.tracked.get_mut(logical) {
            t.waiting.insert(input.clone(), key);
            self.asked.insert(input, logical.clone());
        }
    }

    /// The logical request an input request handed to the caller was asked for.
    pub(crate) fn asked_for(&self, input: &RequestId) -> Option<&RequestId> {
        self.asked.get(input)
    }

    /// Takes an input request the caller answers: its logical id and key.
    pub(crate) fn take_asked(&mut self, input: &RequestId) -> Option<(RequestId, String)> {
        let logical = self.asked.remove(input)?;
        let key = self.tracked.get_mut(&logical)?.waiting.remove(input)?;
        Some((logical, key))
    }

    /// Whether a logical request is waiting for input rather than for the server.
    pub(crate) fn is_waiting(&self, logical: &RequestId) -> bool {
        self.tracked
            .get(logical)
            .is_some_and(|t| !t.waiting.is_empty())
    }

    /// How many requests wait for input.
    pub(crate) fn waiting_len(&self) -> usize {
        self.tracked
            .values()
            .filter(|t| !t.waiting.is_empty())
            .count()
    }

    /// Forgets everything about the request a wire id belongs to; returns its logical id and
    /// the input requests still unanswered, which the caller must be told to drop.
    pub(crate) fn end(&mut self, wire: &RequestId) -> (RequestId, Vec<RequestId>) {
        let logical = self.retries.remove(wire).unwrap_or_else(|| wire.clone());
        let unanswered = self.forget(&logical);
        (logical, unanswered)
    }

    /// Forgets a logical request; returns its unanswered input requests.
    pub(crate) fn forget(&mut self, logical: &RequestId) -> Vec<RequestId> {
        let Some(t) = self.tracked.remove(logical) else {
            return Vec::new();
        };
        self.retries.retain(|_, l| l != logical);
        let unanswered: Vec<RequestId> = t.waiting.into_keys().collect();
        for id in &unanswered {
            self.asked.remove(id);
        }
        unanswered
    }

    /// Every logical request waiting for input, for failing them when the session ends.
    pub(crate) fn drain_waiting(&mut self) -> Vec<(RequestId, String, Vec<RequestId>)> {
        let waiting: Vec<RequestId> = self
            .tracked
            .iter()
            .filter(|(_, t)| !t.waiting.is_empty())
            .map(|(id, _)| id.clone())
            .collect();
        let mut out = Vec::new();
        for logical in waiting {
            let method = self
                .tracked
                .get(&logical)
                .map(|t| t.method.clone())
                .unwrap_or_default();
            let unanswered = self.forget(&logical);
            out.push((logical, method, unanswered));
        }
        self.tracked.clear();
        self.retries.clear();
        self.asked.clear();
        out
    }
}
