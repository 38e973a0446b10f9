//! The life of one configured server as a state machine with no I/O and no clock: when to
//! connect, whether to try again after a failure or a lost connection, how long to wait first,
//! and when to give up. The supervisor task (`supervisor::supervise`) feeds it what happened,
//! with the time, and does what it says; the tests here drive it with made-up times, without
//! processes or sleeps. The model is quinn-proto's `Connection` (inputs `handle_*`, outputs
//! `poll_*`, time passed in) driven by quinn's task, with h2's checked stream transitions.

use std::collections::VecDeque;
use std::fmt;
use std::time::{Duration, Instant};

use crate::status::{Phase, ServerState};

#[cfg(test)]
mod tests;

/// The wait used when a configured one would overflow the clock (about 30 years).
const FOREVER: Duration = Duration::from_secs(30 * 365 * 24 * 60 * 60);

/// How a server that was lost is connected to again: wait `initial`, doubling after each
/// failed attempt up to `max`, and stop after `attempts` attempts in a row (none counts
/// while connected: a success starts the count and the wait again).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Retry {
    /// The first wait.
    pub(crate) initial: Duration,
    /// The longest wait.
    pub(crate) max: Duration,
    /// How many reconnection attempts in a row before giving up.
    pub(crate) attempts: u32,
}

/// Something the driver must do, in the order [`Lifecycle::poll_action`] gives them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Action {
    /// Say that the server is now in `state`, because of `why` (`None` for `connecting` and
    /// `ready`). The driver adds the words: which failure, what was lost.
    SetState {
        /// The new state.
        state: ServerState,
        /// The failure that caused it, if any.
        why: Option<Why>,
    },
    /// Make one connection attempt, then report how it went with
    /// [`handle_connected`](Lifecycle::handle_connected) or
    /// [`handle_connect_failed`](Lifecycle::handle_connect_failed).
    Connect,
    /// The attempts are used up: the server stays in `error`, the last failure (at `phase`)
    /// said again with how many attempts were made. Nothing follows.
    GiveUp {
        /// The configured number of attempts.
        attempts: u32,
        /// The phase of the last failure.
        phase: Phase,
    },
}

/// Why a server left `connecting` or `ready` for `error` or `auth_required`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Why {
    /// The host's connection limit is reached: the server waits for its turn (in
    /// `connecting`), admitted in configuration order as others stop.
    Limit,
    /// The connection attempt just reported failed, at this phase.
    Failed(Phase),
    /// The connection was lost after it had been made.
    Lost,
}

impl Why {
    /// The phase a status shows for it.
    pub(crate) fn phase(self) -> Phase {
        match self {
            Self::Limit => Phase::Limit,
            Self::Failed(phase) => phase,
            Self::Lost => Phase::Connection,
        }
    }
}

/// An input the lifecycle does not take in its present state: a bug of the driver, never of
/// a server. The input is ignored (the state and the queued actions are left as they were).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("supervisor: `{input}` is not expected in state `{state}`")]
pub(crate) struct Unexpected {
    /// The input, as the `handle_*` method without its prefix.
    pub(crate) input: &'static str,
    /// The state it came in.
    pub(crate) state: &'static str,
}

/// Where one server's life stands.
///
/// ```text
///                     start (admitted)                   connected
///        Idle ─────────────────────────────> Connecting ───────────> Connected
///         │                                  ▲ ▲ │   │                │
///         │ start (not admitted: the         │ │ │   │ failed, and    │ lost
///         │ host's connection limit)         │ │ │   │ never connected│
///         ▼                  admitted        │ │ │   │ or auth needed │
///       Queued ──────────────────────────────┘ │ │   ▼                │
///                                      timeout │ │ Finished           │
///      Finished <──── give up ──────────┐    │   │                    │
///      (no more attempts)               │    │   │                    │
///                                       │    │   │ failed, after a    │
///                                       │    │   │ connection         │
///                                       │    │   ▼                    │
///                                       └── Waiting { until } <───────┘
///                                            (attempts left: wait, doubling to the max)
///
///      Idle | Queued | Connecting | Connected | Waiting ── stop ──> Stopped
/// ```
///
/// `Finished` and `Stopped` are final: nothing is ever done again, so no `Connect` follows a
/// stop. `stop` in a final state is taken and changes nothing (a host may stop a server that
/// already gave up). Every other input not drawn is refused with [`Unexpected`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Made, not started yet.
    Idle,
    /// Started, waiting for the host's connection limit to admit it.
    Queued,
    /// A connection attempt is under way.
    Connecting,
    /// Connected and serving.
    Connected,
    /// Lost (or failed again), waiting to connect again at `until`.
    Waiting { until: Instant },
    /// Never connected again: it never connected, it needs a login, or it gave up.
    Finished,
    /// Stopped by the host.
    Stopped,
}

impl State {
    fn name(self) -> &'static str {
        match self {
            Self::Idle => "idle",
            Self::Queued => "queued",
            Self::Connecting => "connecting",
            Self::Connected => "connected",
            Self::Waiting { .. } => "waiting",
            Self::Finished => "finished",
            Self::Stopped => "stopped",
        }
    }
}

/// The reconnection policy of one server, sans I/O: inputs are `handle_*` calls with the time
/// they happened at, outputs are [`poll_action`](Self::poll_action) (drained after each input)
/// and [`poll_timeout`](Self::poll_timeout) (when to call
/// [`handle_timeout`](Self::handle_timeout) if nothing else happens first). See [`State`] for
/// the transitions.
///
/// Its rules: a server that never connected is not retried (its configuration or its program
/// is wrong, and trying again would repeat the error); nor is one that needs authorization (a
/// login starts it again); a lost connection, and each failed attempt after one, is retried
/// after a wait that starts at [`Retry::initial`] and doubles up to [`Retry::max`], until
/// [`Retry::attempts`] attempts in a row have failed.
pub(crate) struct Lifecycle {
    retry: Retry,
    state: State,
    /// Whether a connection was ever made.
    connected_once: bool,
    /// Reconnection attempts since the last success (shown in the status).
    attempts: u32,
    /// The next wait.
    delay: Duration,
    actions: VecDeque<Action>,
}

impl fmt::Debug for Lifecycle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Lifecycle")
            .field("state", &self.state)
            .field("attempts", &self.attempts)
            .field("delay", &self.delay)
            .finish_non_exhaustive()
    }
}

impl Lifecycle {
    /// A server not started yet.
    pub(crate) fn new(retry: Retry) -> Self {
        Self {
            retry,
            state: State::Idle,
            connected_once: false,
            attempts: 0,
            delay: retry.initial,
            actions: VecDeque::new(),
        }
    }

    /// Reconnection attempts since the last success, for the status.
    pub(crate) fn attempts(&self) -> u32 {
        self.attempts
    }

    /// The next thing to do, if any. Drain it after every input.
    #[must_use]
    pub(crate) fn poll_action(&mut self) -> Option<Action> {
        self.actions.pop_front()
    }

    /// When to call [`handle_timeout`](Self::handle_timeout): while waiting to reconnect.
    #[must_use]
    pub(crate) fn poll_timeout(&self) -> Option<Instant> {
        match self.state {
            State::Waiting { until } => Some(until),
            _ => None,
        }
    }

    /// The server is started; `admitted` is false when the host's connection limit is reached,
    /// and then it waits in `connecting` for [`handle_admitted`](Self::handle_admitted).
    pub(crate) fn handle_start(&mut self, _now: Instant, admitted: bool) -> Result<(), Unexpected> {
        match self.state {
            State::Idle if admitted => {
                self.connect();
                Ok(())
            }
            State::Idle => {
                self.set_state(ServerState::Connecting, Some(Why::Limit));
                self.state = State::Queued;
                Ok(())
            }
            state => Err(self.unexpected("start", state)),
        }
    }

    /// The host's connection limit admits the server that waited for it.
    pub(crate) fn handle_admitted(&mut self, _now: Instant) -> Result<(), Unexpected> {
        match self.state {
            State::Queued => {
                self.connect();
                Ok(())
            }
            state => Err(self.unexpected("admitted", state)),
        }
    }

    /// The attempt the last [`Action::Connect`] asked for succeeded.
    pub(crate) fn handle_connected(&mut self, _now: Instant) -> Result<(), Unexpected> {
        match self.state {
            State::Connecting => {
                self.connected_once = true;
                self.attempts = 0;
                self.delay = self.retry.initial;
                self.state = State::Connected;
                self.set_state(ServerState::Ready, None);
                Ok(())
            }
            state => Err(self.unexpected("connected", state)),
        }
    }

    /// The attempt the last [`Action::Connect`] asked for failed at `phase`; `auth_required`
    /// when the server wants an authorization not given yet.
    pub(crate) fn handle_connect_failed(
        &mut self,
        now: Instant,
        phase: Phase,
        auth_required: bool,
    ) -> Result<(), Unexpected> {
        match self.state {
            State::Connecting => {
                let state = if auth_required {
                    ServerState::AuthRequired
                } else {
                    ServerState::Error
                };
                self.set_state(state, Some(Why::Failed(phase)));
                if !self.connected_once || auth_required {
                    self.state = State::Finished;
                } else {
                    self.retry_after_failure(now, phase);
                }
                Ok(())
            }
            state => Err(self.unexpected("connect_failed", state)),
        }
    }

    /// The connection made is lost (the server did not stop on the host's request).
    pub(crate) fn handle_lost(&mut self, now: Instant) -> Result<(), Unexpected> {
        match self.state {
            State::Connected => {
                self.set_state(ServerState::Error, Some(Why::Lost));
                self.retry_after_failure(now, Phase::Connection);
                Ok(())
            }
            state => Err(self.unexpected("lost", state)),
        }
    }

    /// Time passed; at or after [`poll_timeout`](Self::poll_timeout) the next attempt starts.
    /// An early call (a timer that fired early) changes nothing.
    pub(crate) fn handle_timeout(&mut self, now: Instant) -> Result<(), Unexpected> {
        match self.state {
            State::Waiting { until } if now >= until => {
                self.connect();
                Ok(())
            }
            State::Waiting { .. } => Ok(()),
            state => Err(self.unexpected("timeout", state)),
        }
    }

    /// The host stops the server: nothing more is done, and what was still queued is dropped.
    pub(crate) fn handle_stop(&mut self, _now: Instant) -> Result<(), Unexpected> {
        match self.state {
            State::Idle
            | State::Queued
            | State::Connecting
            | State::Connected
            | State::Waiting { .. } => {
                self.actions.clear();
                self.state = State::Stopped;
                Ok(())
            }
            // Stopping what has already ended is not a mistake: the host does not know.
            State::Finished | State::Stopped => Ok(()),
        }
    }

    /// Counts one more attempt and either waits for it or gives up.
    fn retry_after_failure(&mut self, now: Instant, phase: Phase) {
        self.attempts += 1;
        if self.attempts > self.retry.attempts {
            self.actions.push_back(Action::GiveUp {
                attempts: self.retry.attempts,
                phase,
            });
            self.state = State::Finished;
            return;
        }
        // A wait too long for the clock to hold is as good as forever.
        let until = now
            .checked_add(self.delay)
            .or_else(|| now.checked_add(FOREVER))
            .unwrap_or(now);
        self.state = State::Waiting { until };
        self.delay = self.delay.saturating_mul(2).min(self.retry.max);
    }

    fn connect(&mut self) {
        self.state = State::Connecting;
        self.set_state(ServerState::Connecting, None);
        self.actions.push_back(Action::Connect);
    }

    fn set_state(&mut self, state: ServerState, why: Option<Why>) {
        self.actions.push_back(Action::SetState { state, why });
    }

    fn unexpected(&self, input: &'static str, state: State) -> Unexpected {
        Unexpected {
            input,
            state: state.name(),
        }
    }
}
