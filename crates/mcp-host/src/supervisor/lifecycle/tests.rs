//! The reconnection policy without processes, sockets or sleeps: a table of input sequences
//! with the actions, timeouts and attempt counts each must give, and properties checked over
//! random runs of a simulated driver.

use std::time::{Duration, Instant};

use proptest::prelude::*;

use super::{Action, Lifecycle, Retry, Unexpected, Why};
use crate::status::{Phase, ServerState};

/// One input, as a driver would feed it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum In {
    Start { admitted: bool },
    Admitted,
    Connected,
    Failed { phase: Phase, auth_required: bool },
    Lost,
    Timeout,
    Stop,
}

fn feed(lifecycle: &mut Lifecycle, now: Instant, input: In) -> Result<(), Unexpected> {
    match input {
        In::Start { admitted } => lifecycle.handle_start(now, admitted),
        In::Admitted => lifecycle.handle_admitted(now),
        In::Connected => lifecycle.handle_connected(now),
        In::Failed {
            phase,
            auth_required,
        } => lifecycle.handle_connect_failed(now, phase, auth_required),
        In::Lost => lifecycle.handle_lost(now),
        In::Timeout => lifecycle.handle_timeout(now),
        In::Stop => lifecycle.handle_stop(now),
    }
}

fn drain(lifecycle: &mut Lifecycle) -> Vec<Action> {
    std::iter::from_fn(|| lifecycle.poll_action()).collect()
}

/// The policy of every table row: 100 ms doubling to 400 ms, four attempts.
const RETRY: Retry = Retry {
    initial: Duration::from_millis(100),
    max: Duration::from_millis(400),
    attempts: 4,
};

const START: In = In::Start { admitted: true };
const FAIL: In = In::Failed {
    phase: Phase::Connect,
    auth_required: false,
};
const AUTH: In = In::Failed {
    phase: Phase::Connect,
    auth_required: true,
};

const CONNECTING: Action = Action::SetState {
    state: ServerState::Connecting,
    why: None,
};
const READY: Action = Action::SetState {
    state: ServerState::Ready,
    why: None,
};
const LOST: Action = Action::SetState {
    state: ServerState::Error,
    why: Some(Why::Lost),
};
const FAILED: Action = Action::SetState {
    state: ServerState::Error,
    why: Some(Why::Failed(Phase::Connect)),
};

/// At `ms` after the start, `input`; then the actions it gives (or the refusal), the timeout
/// (in ms after the start) and the attempt count.
struct Step {
    ms: u64,
    input: In,
    then: Result<Vec<Action>, Unexpected>,
    timeout: Option<u64>,
    attempts: u32,
}

fn step(ms: u64, input: In, actions: &[Action], timeout: Option<u64>, attempts: u32) -> Step {
    Step {
        ms,
        input,
        then: Ok(actions.to_vec()),
        timeout,
        attempts,
    }
}

fn refused(ms: u64, input: In, unexpected: (&'static str, &'static str)) -> Step {
    Step {
        ms,
        input,
        then: Err(Unexpected {
            input: unexpected.0,
            state: unexpected.1,
        }),
        // Checked against the previous step's: a refused input changes nothing.
        timeout: None,
        attempts: u32::MAX,
    }
}

/// Runs `steps` on a new lifecycle and says where it went differently.
fn check(name: &str, steps: &[Step]) {
    let t0 = Instant::now();
    let at = |ms: u64| t0 + Duration::from_millis(ms);
    let mut lifecycle = Lifecycle::new(RETRY);
    for (i, s) in steps.iter().enumerate() {
        let before = (lifecycle.poll_timeout(), lifecycle.attempts());
        let result = feed(&mut lifecycle, at(s.ms), s.input);
        let actions = drain(&mut lifecycle);
        let what = format!("{name}, step {i} ({:?} at {} ms)", s.input, s.ms);
        match &s.then {
            Ok(expected) => {
                assert_eq!(result, Ok(()), "{what}");
                assert_eq!(&actions, expected, "{what}");
                assert_eq!(lifecycle.poll_timeout(), s.timeout.map(at), "{what}");
                assert_eq!(lifecycle.attempts(), s.attempts, "{what}");
            }
            Err(expected) => {
                assert_eq!(result, Err(*expected), "{what}");
                assert!(actions.is_empty(), "{what}: {actions:?}");
                assert_eq!(
                    (lifecycle.poll_timeout(), lifecycle.attempts()),
                    before,
                    "{what}"
                );
            }
        }
    }
}

#[test]
fn the_policy_table() {
    let give_up = |phase| Action::GiveUp { attempts: 4, phase };
    let rows: Vec<(&str, Vec<Step>)> = vec![
        (
            "connects at the first attempt",
            vec![
                step(0, START, &[CONNECTING, Action::Connect], None, 0),
                step(5, In::Connected, &[READY], None, 0),
            ],
        ),
        (
            "past the connection limit it waits in connecting, and connects once admitted",
            vec![
                step(
                    0,
                    In::Start { admitted: false },
                    &[Action::SetState {
                        state: ServerState::Connecting,
                        why: Some(Why::Limit),
                    }],
                    None,
                    0,
                ),
                refused(1, In::Timeout, ("timeout", "queued")),
                refused(1, In::Connected, ("connected", "queued")),
                step(2, In::Admitted, &[CONNECTING, Action::Connect], None, 0),
                step(5, In::Connected, &[READY], None, 0),
                refused(6, In::Admitted, ("admitted", "connected")),
            ],
        ),
        (
            "a server waiting for its turn can be stopped",
            vec![
                step(
                    0,
                    In::Start { admitted: false },
                    &[Action::SetState {
                        state: ServerState::Connecting,
                        why: Some(Why::Limit),
                    }],
                    None,
                    0,
                ),
                step(1, In::Stop, &[], None, 0),
                refused(2, In::Admitted, ("admitted", "stopped")),
            ],
        ),
        (
            "a server that never connected is not retried",
            vec![
                step(0, START, &[CONNECTING, Action::Connect], None, 0),
                step(5, FAIL, &[FAILED], None, 0),
                refused(500, In::Timeout, ("timeout", "finished")),
            ],
        ),
        (
            "a server that never connected and wants a login is not retried",
            vec![
                step(0, START, &[CONNECTING, Action::Connect], None, 0),
                step(
                    5,
                    AUTH,
                    &[Action::SetState {
                        state: ServerState::AuthRequired,
                        why: Some(Why::Failed(Phase::Connect)),
                    }],
                    None,
                    0,
                ),
            ],
        ),
        (
            "a lost server that then wants a login is not retried",
            vec![
                step(0, START, &[CONNECTING, Action::Connect], None, 0),
                step(0, In::Connected, &[READY], None, 0),
                step(1000, In::Lost, &[LOST], Some(1100), 1),
                step(1100, In::Timeout, &[CONNECTING, Action::Connect], None, 1),
                step(
                    1110,
                    AUTH,
                    &[Action::SetState {
                        state: ServerState::AuthRequired,
                        why: Some(Why::Failed(Phase::Connect)),
                    }],
                    None,
                    1,
                ),
            ],
        ),
        (
            "a lost connection is retried after doubling waits, capped, then given up",
            vec![
                step(0, START, &[CONNECTING, Action::Connect], None, 0),
                step(0, In::Connected, &[READY], None, 0),
                step(1000, In::Lost, &[LOST], Some(1100), 1),
                step(1100, In::Timeout, &[CONNECTING, Action::Connect], None, 1),
                step(1100, FAIL, &[FAILED], Some(1300), 2),
                step(1300, In::Timeout, &[CONNECTING, Action::Connect], None, 2),
                step(1300, FAIL, &[FAILED], Some(1700), 3),
                step(1700, In::Timeout, &[CONNECTING, Action::Connect], None, 3),
                // 800 ms would be next: the max is 400.
                step(1700, FAIL, &[FAILED], Some(2100), 4),
                step(2100, In::Timeout, &[CONNECTING, Action::Connect], None, 4),
                step(2100, FAIL, &[FAILED, give_up(Phase::Connect)], None, 5),
                refused(9000, In::Timeout, ("timeout", "finished")),
            ],
        ),
        (
            "the failure's phase is kept in the state and in the giving up",
            vec![
                step(0, START, &[CONNECTING, Action::Connect], None, 0),
                step(0, In::Connected, &[READY], None, 0),
                step(0, In::Lost, &[LOST], Some(100), 1),
                step(100, In::Timeout, &[CONNECTING, Action::Connect], None, 1),
                step(
                    100,
                    In::Failed {
                        phase: Phase::Tools,
                        auth_required: false,
                    },
                    &[Action::SetState {
                        state: ServerState::Error,
                        why: Some(Why::Failed(Phase::Tools)),
                    }],
                    Some(300),
                    2,
                ),
            ],
        ),
        (
            "a timer that fires early changes nothing",
            vec![
                step(0, START, &[CONNECTING, Action::Connect], None, 0),
                step(0, In::Connected, &[READY], None, 0),
                step(0, In::Lost, &[LOST], Some(100), 1),
                step(99, In::Timeout, &[], Some(100), 1),
                step(100, In::Timeout, &[CONNECTING, Action::Connect], None, 1),
            ],
        ),
        (
            "a success starts the wait and the count again",
            vec![
                step(0, START, &[CONNECTING, Action::Connect], None, 0),
                step(0, In::Connected, &[READY], None, 0),
                step(0, In::Lost, &[LOST], Some(100), 1),
                step(100, In::Timeout, &[CONNECTING, Action::Connect], None, 1),
                step(100, FAIL, &[FAILED], Some(300), 2),
                step(300, In::Timeout, &[CONNECTING, Action::Connect], None, 2),
                step(300, In::Connected, &[READY], None, 0),
                step(5000, In::Lost, &[LOST], Some(5100), 1),
            ],
        ),
        (
            "stopped while waiting, it never connects again",
            vec![
                step(0, START, &[CONNECTING, Action::Connect], None, 0),
                step(0, In::Connected, &[READY], None, 0),
                step(0, In::Lost, &[LOST], Some(100), 1),
                step(50, In::Stop, &[], None, 1),
                refused(100, In::Timeout, ("timeout", "stopped")),
                step(200, In::Stop, &[], None, 1),
            ],
        ),
        (
            "stopped while connected, its loss is not expected",
            vec![
                step(0, START, &[CONNECTING, Action::Connect], None, 0),
                step(0, In::Connected, &[READY], None, 0),
                step(10, In::Stop, &[], None, 0),
                refused(20, In::Lost, ("lost", "stopped")),
            ],
        ),
        (
            "inputs out of place are refused and change nothing",
            vec![
                refused(0, In::Connected, ("connected", "idle")),
                refused(0, In::Lost, ("lost", "idle")),
                refused(0, In::Timeout, ("timeout", "idle")),
                refused(0, FAIL, ("connect_failed", "idle")),
                step(0, START, &[CONNECTING, Action::Connect], None, 0),
                refused(0, START, ("start", "connecting")),
                refused(0, In::Lost, ("lost", "connecting")),
                refused(0, In::Timeout, ("timeout", "connecting")),
                step(0, In::Connected, &[READY], None, 0),
                refused(0, In::Connected, ("connected", "connected")),
                refused(0, FAIL, ("connect_failed", "connected")),
                refused(0, In::Timeout, ("timeout", "connected")),
                step(0, In::Lost, &[LOST], Some(100), 1),
                refused(0, In::Connected, ("connected", "waiting")),
                refused(0, In::Lost, ("lost", "waiting")),
                refused(0, FAIL, ("connect_failed", "waiting")),
            ],
        ),
    ];
    for (name, steps) in &rows {
        check(name, steps);
    }
}

#[test]
fn a_stop_drops_the_actions_still_queued() {
    let now = Instant::now();
    let mut lifecycle = Lifecycle::new(RETRY);
    lifecycle.handle_start(now, true).unwrap();
    // Not drained: the driver learns of the stop before it connects.
    lifecycle.handle_stop(now).unwrap();
    assert_eq!(drain(&mut lifecycle), []);
    assert_eq!(lifecycle.poll_timeout(), None);
    // The same start, drained, does ask for a connection.
    let mut lifecycle = Lifecycle::new(RETRY);
    lifecycle.handle_start(now, true).unwrap();
    assert_eq!(drain(&mut lifecycle), [CONNECTING, Action::Connect]);
}

#[test]
fn a_wait_too_long_for_the_clock_does_not_panic() {
    let retry = Retry {
        initial: Duration::MAX,
        max: Duration::MAX,
        attempts: 3,
    };
    let now = Instant::now();
    let mut lifecycle = Lifecycle::new(retry);
    lifecycle.handle_start(now, true).unwrap();
    lifecycle.handle_connected(now).unwrap();
    lifecycle.handle_lost(now).unwrap();
    let until = lifecycle.poll_timeout().expect("waiting");
    assert!(until > now + Duration::from_secs(365 * 24 * 60 * 60));
    // And the doubled wait saturates rather than overflowing.
    lifecycle.handle_timeout(until).unwrap();
    lifecycle
        .handle_connect_failed(until, Phase::Connect, false)
        .unwrap();
    assert!(lifecycle.poll_timeout().is_some());
}

/// What the world does when the simulated driver asks, read according to where the
/// lifecycle stands (see [`run`]).
#[derive(Debug, Clone, Copy)]
enum Move {
    /// Connecting: the attempt succeeds. Connected: the connection is lost after the ms.
    Up(u16),
    /// Connecting: the attempt fails. Connected: lost at once. Waiting: the timer fires.
    Down(Phase, bool),
    /// Waiting: the timer fires this many ms early. Otherwise like `Up`.
    Early(u16),
    /// The host stops the server.
    Stop,
}

fn phase() -> impl Strategy<Value = Phase> {
    prop_oneof![
        Just(Phase::Connect),
        Just(Phase::Tools),
        Just(Phase::Configuration),
        Just(Phase::Trust),
    ]
}

fn moves() -> impl Strategy<Value = Vec<Move>> {
    let one = prop_oneof![
        4 => any::<u16>().prop_map(Move::Up),
        4 => (phase(), proptest::bool::weighted(0.1)).prop_map(|(p, a)| Move::Down(p, a)),
        1 => (1..1000u16).prop_map(Move::Early),
        1 => Just(Move::Stop),
    ];
    proptest::collection::vec(one, 0..60)
}

fn retries() -> impl Strategy<Value = Retry> {
    (1..2_000u64, 0..10_000u64, 0..8u32).prop_map(|(initial, more, attempts)| Retry {
        initial: Duration::from_millis(initial),
        max: Duration::from_millis(initial + more),
        attempts,
    })
}

/// What happened in one run: each input with its time and the actions it gave.
type Trace = Vec<(Instant, In, Vec<Action>)>;

/// A driver as `supervise` is, against a world that does `moves` in turn (it stops when they
/// run out); every input it feeds is one the lifecycle must take.
fn run(retry: Retry, admitted: bool, moves: &[Move]) -> Trace {
    let t0 = Instant::now();
    let mut now = t0;
    let mut lifecycle = Lifecycle::new(retry);
    let mut trace = Trace::new();
    let mut moves = moves.iter().copied();
    let mut connected = false;
    let mut input = Some(In::Start { admitted });
    while let Some(next) = input.take() {
        let result = feed(&mut lifecycle, now, next);
        assert_eq!(result, Ok(()), "{next:?} after {trace:#?}");
        let actions = drain(&mut lifecycle);
        match next {
            In::Connected => connected = true,
            In::Lost | In::Stop => connected = false,
            _ => {}
        }
        // A `Connect` is the only way into an attempt, and every input ends the one before.
        let connecting = actions.contains(&Action::Connect);
        let queued = matches!(next, In::Start { admitted: false });
        trace.push((now, next, actions));
        let Some(world) = moves.next() else {
            break;
        };
        input = match (world, connecting, connected, lifecycle.poll_timeout()) {
            (Move::Stop, _, _, _) => Some(In::Stop),
            // Another server stopped: this one's turn.
            _ if queued => Some(In::Admitted),
            (Move::Up(_) | Move::Early(_), true, _, _) => Some(In::Connected),
            (Move::Down(phase, auth_required), true, _, _) => Some(In::Failed {
                phase,
                auth_required,
            }),
            (Move::Up(ms), _, true, _) | (Move::Early(ms), _, true, _) => {
                now += Duration::from_millis(u64::from(ms));
                Some(In::Lost)
            }
            (Move::Down(..), _, true, _) => Some(In::Lost),
            (Move::Early(ms), _, _, Some(until)) => {
                let early = Duration::from_millis(u64::from(ms)).min(until - now);
                now = now.max(until - early);
                Some(In::Timeout)
            }
            (_, _, _, Some(until)) => {
                now = now.max(until);
                Some(In::Timeout)
            }
            // Finished or stopped: nothing more can happen.
            _ => None,
        };
    }
    trace
}

fn connects(actions: &[Action]) -> usize {
    actions.iter().filter(|a| **a == Action::Connect).count()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn reconnection_invariants(retry in retries(), admitted in proptest::bool::weighted(0.9), moves in moves()) {
        let trace = run(retry, admitted, &moves);
        let mut ever_connected = false;
        let mut since_success = 0usize;
        let mut total = 0usize;
        let mut stopped = false;
        let mut ended = false;
        let mut first_wait_after_success = false;
        // The wait each input set, from the trace of a fresh replay.
        let mut lifecycle = Lifecycle::new(retry);
        for (now, input, actions) in &trace {
            prop_assert_eq!(feed(&mut lifecycle, *now, *input), Ok(()));
            prop_assert_eq!(&drain(&mut lifecycle), actions);
            let n = connects(actions);
            // Nothing at all follows a stop, a refusal or a giving up.
            if stopped || ended {
                prop_assert!(actions.is_empty(), "{:?} after the end", actions);
            }
            total += n;
            since_success += n;
            match input {
                In::Connected => {
                    ever_connected = true;
                    since_success = 0;
                    first_wait_after_success = true;
                }
                In::Stop => stopped = true,
                _ => {}
            }
            if actions.iter().any(|a| matches!(a, Action::GiveUp { .. })) {
                ended = true;
                prop_assert!(ever_connected);
            }
            // Past the limit it waits: no attempt until admitted.
            if matches!(input, In::Start { admitted: false }) {
                prop_assert_eq!(n, 0);
                prop_assert_eq!(lifecycle.poll_timeout(), None);
            }
            if matches!(input, In::Failed { auth_required: true, .. }) {
                ended = true;
                prop_assert_eq!(lifecycle.poll_timeout(), None);
            }
            // A server never connected is tried once only.
            if !ever_connected {
                prop_assert!(total <= 1, "{} attempts, never connected", total);
            }
            // Never more reconnection attempts in a row than allowed.
            prop_assert!(since_success <= retry.attempts as usize + usize::from(!ever_connected));
            prop_assert!(lifecycle.attempts() <= retry.attempts + 1);
            if matches!(input, In::Lost | In::Failed { .. })
                && let Some(until) = lifecycle.poll_timeout()
            {
                let wait = until - *now;
                // The wait never exceeds the max, and a success starts it again.
                prop_assert!(wait <= retry.max, "{:?} > {:?}", wait, retry.max);
                prop_assert!(wait >= retry.initial);
                if first_wait_after_success {
                    prop_assert_eq!(wait, retry.initial);
                    first_wait_after_success = false;
                }
            }
        }
    }

    #[test]
    fn any_input_in_any_order_is_taken_or_refused_without_a_panic(
        inputs in proptest::collection::vec((0..5_000u64, 0..7u8, phase(), any::<bool>()), 0..80),
        retry in retries(),
    ) {
        let t0 = Instant::now();
        let mut now = t0;
        let mut lifecycle = Lifecycle::new(retry);
        let mut stopped = false;
        for (ms, kind, phase, flag) in inputs {
            now += Duration::from_millis(ms);
            let input = match kind {
                0 => In::Start { admitted: flag },
                1 => In::Connected,
                2 => In::Failed { phase, auth_required: flag },
                3 => In::Lost,
                4 => In::Timeout,
                5 => In::Admitted,
                _ => In::Stop,
            };
            let before = lifecycle.poll_timeout();
            let result = feed(&mut lifecycle, now, input);
            let actions = drain(&mut lifecycle);
            if result.is_err() {
                prop_assert!(actions.is_empty());
                prop_assert_eq!(lifecycle.poll_timeout(), before);
            }
            if stopped {
                prop_assert!(!actions.contains(&Action::Connect));
                prop_assert_eq!(lifecycle.poll_timeout(), None);
            }
            stopped |= input == In::Stop;
        }
    }
}
