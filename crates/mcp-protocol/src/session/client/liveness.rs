//! When to ping a silent server, and what an unanswered ping means (MCP 2025-11-25
//! `basic/utilities/ping`: "implementations SHOULD periodically issue pings to detect
//! connection health", with a configurable frequency, and may treat a ping unanswered in time
//! as a stale connection).
//!
//! Only silence matters: any frame from the server, not just the ping's answer, shows it is
//! there. So a ping goes out once the server has been silent for the interval, and the server
//! is given up on only if the ping's deadline passes with nothing at all heard since it was
//! sent. The 2026-07-28 era has no `ping`; the session asks this module nothing there.

use std::time::{Duration, Instant};

use crate::jsonrpc::RequestId;

/// What became of a liveness ping that ended without its answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Verdict {
    /// Something was heard after the ping went out: the server is there, only this ping was
    /// lost or ignored.
    Alive,
    /// Nothing was heard for `silent` and the ping has waited `waited`: the server, or the
    /// network to it, is gone.
    Gone { silent: Duration, waited: Duration },
}

/// The liveness state of one client session.
///
/// ```text
///            silent for `interval`                  answered, or anything heard
///   Idle ─────────────────────────> Pinging ────────────────────────────────────> Idle
///    ^  (anything heard restarts       │ deadline passed (or the ping failed in transport)
///    │   the interval)                 │ with nothing heard since it was sent
///    │                                 v
///    └── heard since it was sent ── Verdict ──> Gone: the session ends
/// ```
#[derive(Debug, Default)]
pub(super) struct Liveness {
    /// When the server was last heard from.
    last_heard: Option<Instant>,
    /// The ping in flight and when it was sent.
    ping: Option<(RequestId, Instant)>,
}

impl Liveness {
    /// Records a frame from the server (of any kind, even one that does not decode).
    pub(super) fn heard(&mut self, now: Instant) {
        if self.last_heard.is_none_or(|t| now > t) {
            self.last_heard = Some(now);
        }
    }

    /// When the next ping is due, if the server has been heard from and no ping is out.
    pub(super) fn due(&self, interval: Duration) -> Option<Instant> {
        match (&self.ping, self.last_heard) {
            (None, Some(heard)) => Some(heard + interval),
            _ => None,
        }
    }

    /// Records the ping just sent.
    pub(super) fn sent(&mut self, id: RequestId, now: Instant) {
        self.ping = Some((id, now));
    }

    /// Whether `id` is the liveness ping in flight.
    pub(super) fn is_ping(&self, id: &RequestId) -> bool {
        self.ping.as_ref().is_some_and(|(p, _)| p == id)
    }

    /// The ping was answered (a result or a JSON-RPC error: either way the server is there).
    pub(super) fn answered(&mut self) {
        self.ping = None;
    }

    /// The ping ended without its answer at `now` (its deadline passed, or the transport could
    /// not carry it): is the server still there?
    pub(super) fn unanswered(&mut self, now: Instant) -> Verdict {
        let Some((_, sent_at)) = self.ping.take() else {
            return Verdict::Alive;
        };
        match self.last_heard {
            Some(heard) if heard >= sent_at => Verdict::Alive,
            heard => Verdict::Gone {
                silent: now.saturating_duration_since(heard.unwrap_or(sent_at)),
                waited: now.saturating_duration_since(sent_at),
            },
        }
    }

    /// Forgets the ping: the session has ended.
    pub(super) fn clear(&mut self) {
        self.ping = None;
    }
}
