//! Property: whatever a server sends, in whatever order and timing, the client session never
//! panics and never makes a forbidden move, whether it speaks the handshake era only or both
//! eras (the probe, the stateless envelope, multi round-trip retries).
//!
//! And the same for a server session, whatever a client sends: most generated clients open
//! with a valid handshake or a valid 2026-07-28 request, so that the arbitrary steps after it
//! reach the states behind the opening, and `server_cases_reach_every_state` checks that they
//! do.

use std::collections::HashSet;
use std::time::Duration;

use proptest::prelude::*;
use serde_json::{Value, json};

use super::{client_config, epoch};
use crate::jsonrpc::{RequestId, decode};
use crate::schema::{RootsCapability, meta_key};
use crate::session::{ClientConfig, ClientEvent, ClientSession, RequestOptions};
use crate::version::ProtocolVersion;

#[derive(Debug, Clone)]
enum Step {
    /// A frame from the server, built from the grammar below.
    Frame(Value),
    /// Bytes that may not be JSON at all.
    Garbage(Vec<u8>),
    /// A result for one of the requests we sent, counted from the newest.
    Answer(usize, Value),
    Advance(u64),
    Send(&'static str),
    Cancel(usize),
    Respond(usize),
}

fn id() -> impl Strategy<Value = Value> {
    prop_oneof![
        (0i64..6).prop_map(Value::from),
        "[a-c]".prop_map(Value::from),
        Just(Value::Null),
        Just(json!(1.5)),
    ]
}

fn method() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec![
        "ping",
        "roots/list",
        "sampling/createMessage",
        "elicitation/create",
        "notifications/progress",
        "notifications/cancelled",
        "notifications/message",
        "notifications/tools/list_changed",
        "initialize",
        "bogus/method",
    ])
}

fn result() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(json!({})),
        Just(
            json!({"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"s","version":"1"}})
        ),
        Just(
            json!({"protocolVersion":"2031-01-01","capabilities":{},"serverInfo":{"name":"s","version":"1"}})
        ),
        Just(json!({"protocolVersion":5})),
        Just(json!({"content":[{"type":"text","text":"x"}]})),
        Just(json!({"supportedVersions":["2026-07-28"],"capabilities":{}})),
        Just(
            json!({"resultType":"input_required","inputRequests":{"r":{"method":"roots/list"}},"requestState":"s"})
        ),
        Just(json!({"resultType":"input_required","requestState":"s"})),
        Just(json!({"resultType":"complete","content":[]})),
    ]
}

fn params() -> impl Strategy<Value = Option<Value>> {
    prop_oneof![
        Just(None),
        Just(Some(json!({}))),
        (0i64..6).prop_map(|t| Some(json!({"progressToken": t, "progress": 1}))),
        (0i64..6).prop_map(|t| Some(json!({"requestId": t}))),
        Just(Some(json!({"messages":[],"maxTokens":1}))),
        Just(Some(
            json!({"mode":"url","message":"m","url":"https://x","elicitationId":"e"})
        )),
        Just(Some(json!({"level":"info","data":null}))),
        Just(Some(json!([1, 2]))),
    ]
}

fn frame() -> impl Strategy<Value = Value> {
    prop_oneof![
        (id(), result()).prop_map(|(id, r)| json!({"jsonrpc":"2.0","id":id,"result":r})),
        (id(), -32800i64..0, any::<bool>()).prop_map(|(id, code, supported)| {
            let data = match (supported, code % 2 == 0) {
                (false, _) => json!(null),
                (true, false) => json!({"supported":["2025-06-18"]}),
                (true, true) => json!({"supported":["2026-07-28"]}),
            };
            json!({"jsonrpc":"2.0","id":id,"error":{"code":code,"message":"m","data":data}})
        }),
        (id(), method(), params()).prop_map(|(id, m, p)| {
            let mut f = json!({"jsonrpc":"2.0","id":id,"method":m});
            if let Some(p) = p { f["params"] = p; }
            f
        }),
        (method(), params()).prop_map(|(m, p)| {
            let mut f = json!({"jsonrpc":"2.0","method":m});
            if let Some(p) = p { f["params"] = p; }
            f
        }),
        (id(), result()).prop_map(|(id, r)| json!([{"jsonrpc":"2.0","id":id,"result":r}, {"jsonrpc":"2.0","method":"ping","id":"z"}])),
        Just(json!({"jsonrpc":"1.0","id":1,"result":{}})),
    ]
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        6 => frame().prop_map(Step::Frame),
        1 => prop::collection::vec(any::<u8>(), 0..24).prop_map(Step::Garbage),
        2 => (0usize..8, result()).prop_map(|(i, r)| Step::Answer(i, r)),
        2 => (0u64..90_000).prop_map(Step::Advance),
        2 => prop::sample::select(vec!["ping", "tools/list", "tools/call"]).prop_map(Step::Send),
        1 => (0usize..8).prop_map(Step::Cancel),
        1 => (0usize..8).prop_map(Step::Respond),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn client_session_survives_any_server(steps in prop::collection::vec(step(), 1..40)) {
        survives(client_config(), steps)?;
    }

    #[test]
    fn dual_era_client_session_survives_any_server(steps in prop::collection::vec(step(), 1..40)) {
        let mut config = client_config();
        config.supported_versions = ProtocolVersion::KNOWN.to_vec();
        config.capabilities.roots = Some(RootsCapability::new());
        survives(config, steps)?;
    }
}

/// Runs `steps` against a client session with `config`, checking every move it makes.
fn survives(config: ClientConfig, steps: Vec<Step>) -> Result<(), TestCaseError> {
    let mut now = epoch();
    let mut client = ClientSession::new(config);
    let init = client.initialize(now).unwrap();
    let mut ours: Vec<RequestId> = vec![init];
    // Every request id that went on the wire, and those of the handshake (`initialize` and
    // the probe, sent again on a retry or a fallback), which are never cancelled.
    let mut wire: Vec<RequestId> = Vec::new();
    let mut handshake: HashSet<RequestId> = HashSet::new();
    let mut theirs: Vec<RequestId> = Vec::new();
    let mut owed: HashSet<RequestId> = HashSet::new();
    let mut ready = false;
    let mut closed = false;

    for step in steps {
        match step {
            Step::Frame(f) => match decode(&serde_json::to_vec(&f).unwrap()) {
                Ok(decoded) => client.handle_decoded(now, decoded),
                Err(e) => client.handle_invalid(now, e),
            },
            Step::Garbage(bytes) => match decode(&bytes) {
                Ok(decoded) => client.handle_decoded(now, decoded),
                Err(e) => client.handle_invalid(now, e),
            },
            Step::Answer(i, result) => {
                if let Some(id) = wire.iter().rev().nth(i % wire.len().max(1)) {
                    let f = json!({"jsonrpc":"2.0","id":id,"result":result});
                    client.handle_decoded(now, decode(&serde_json::to_vec(&f).unwrap()).unwrap());
                }
            }
            Step::Advance(ms) => {
                now += Duration::from_millis(ms);
                client.handle_timeout(now);
            }
            Step::Send(m) => {
                // Only the probe and the stateless era stamp a version; neither has ping.
                let no_ping = client.stamped_version().is_some();
                let r = client.send_request(now, m, None, RequestOptions::DEFAULT);
                if let Ok(id) = r {
                    ours.push(id);
                } else {
                    prop_assert!(
                        m != "ping" || closed || no_ping,
                        "ping is allowed while open, in the handshake era"
                    );
                }
            }
            Step::Cancel(i) => {
                if let Some(id) = ours.get(i).cloned() {
                    let _ = client.cancel(&id, None);
                }
            }
            Step::Respond(i) => {
                if let Some(id) = theirs.get(i).cloned()
                    && client
                        .respond(now, &id, crate::RawJson::empty_object())
                        .unwrap()
                {
                    prop_assert!(owed.remove(&id), "respond accepted an id never delivered");
                }
            }
        }

        while let Some(event) = client.poll_event() {
            prop_assert!(!closed, "event after Closed: {event:?}");
            match event {
                ClientEvent::Ready(_) => {
                    prop_assert!(!ready, "Ready twice");
                    ready = true;
                }
                ClientEvent::Closed(_) => closed = true,
                ClientEvent::Request { id, .. } => {
                    prop_assert!(ready, "server request delivered before Ready");
                    owed.insert(id.clone());
                    theirs.push(id);
                }
                ClientEvent::RequestCancelled { id, .. } => {
                    owed.remove(&id);
                }
                _ => {}
            }
        }
        prop_assert_eq!(client.is_ready(), ready && !closed);
        prop_assert_eq!(client.is_closed(), closed);

        while let Some(message) = client.poll_transmit() {
            let v: Value = serde_json::from_slice(&message.encode()).unwrap();
            prop_assert!(
                decode(&message.encode()).is_ok(),
                "we sent an undecodable frame"
            );
            let method = v.get("method").and_then(Value::as_str);
            match (method, v.get("id")) {
                (Some(m), Some(id)) => {
                    let handshaking = m == "initialize" || m == "server/discover";
                    prop_assert!(ready || handshaking || m == "ping", "{m} sent before Ready");
                    let id: RequestId = serde_json::from_value(id.clone()).unwrap();
                    prop_assert!(!wire.contains(&id), "request id {id} sent twice");
                    wire.push(id.clone());
                    if handshaking {
                        handshake.insert(id);
                    }
                }
                (Some("notifications/cancelled"), None) => {
                    let cancelled: RequestId =
                        serde_json::from_value(v["params"]["requestId"].clone()).unwrap();
                    prop_assert!(
                        !handshake.contains(&cancelled),
                        "the handshake was cancelled"
                    );
                    prop_assert!(
                        wire.contains(&cancelled),
                        "cancelled a request we never sent"
                    );
                }
                (Some(m), None) => {
                    prop_assert!(m == "notifications/initialized" || m == "notifications/cancelled")
                }
                (None, _) => {
                    // A response or error: answers something the server sent, or a parse error.
                    prop_assert!(v.get("result").is_some() || v.get("error").is_some());
                }
            }
        }
        prop_assert!(
            !closed || client.poll_timeout().is_none(),
            "a closed session keeps a timer"
        );
    }
    Ok(())
}

/// The stateless era's per-request envelope, with `extra` members beside it; `version` is
/// the one it declares.
fn enveloped(version: &str, extra: Value) -> Value {
    let mut params = json!({"_meta": {
        meta_key::PROTOCOL_VERSION: version,
        meta_key::CLIENT_CAPABILITIES: {"sampling": {}},
    }});
    if let (Some(params), Value::Object(extra)) = (params.as_object_mut(), extra) {
        params.extend(extra);
    }
    params
}

fn client_frame() -> impl Strategy<Value = Value> {
    let methods = prop::sample::select(vec![
        "initialize",
        "ping",
        "tools/list",
        "tools/call",
        "prompts/list",
        "server/discover",
        "subscriptions/listen",
        "notifications/initialized",
        "notifications/cancelled",
        "notifications/progress",
        "bogus",
    ]);
    let params = prop_oneof![
        Just(None),
        Just(Some(
            json!({"protocolVersion":"2025-11-25","capabilities":{"sampling":{}},"clientInfo":{"name":"c","version":"1"}})
        )),
        Just(Some(
            json!({"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"c","version":"1"}})
        )),
        Just(Some(json!({"name":"echo"}))),
        (0i64..6).prop_map(|t| Some(json!({"requestId": t}))),
        Just(Some(json!({"progressToken": 0, "progress": 1}))),
        // What a 2026-07-28 request carries: tools/call and subscriptions/listen each find
        // what they need, and one declares a version nobody speaks.
        Just(Some(enveloped(
            "2026-07-28",
            json!({"name":"echo","notifications":{"toolsListChanged":true}})
        ))),
        Just(Some(enveloped("2026-07-28", json!({})))),
        Just(Some(enveloped("2099-01-01", json!({"name":"echo"})))),
    ];
    prop_oneof![
        (id(), methods.clone(), params.clone()).prop_map(|(id, m, p)| {
            let mut f = json!({"jsonrpc":"2.0","id":id,"method":m});
            if let Some(p) = p {
                f["params"] = p;
            }
            f
        }),
        (methods, params).prop_map(|(m, p)| {
            let mut f = json!({"jsonrpc":"2.0","method":m});
            if let Some(p) = p {
                f["params"] = p;
            }
            f
        }),
        (id(), result()).prop_map(|(id, r)| json!({"jsonrpc":"2.0","id":id,"result":r})),
        id().prop_map(|id| json!([{"jsonrpc":"2.0","id":id,"method":"ping"}])),
    ]
}

#[derive(Debug, Clone)]
enum ServerStep {
    Frame(Value),
    Garbage(Vec<u8>),
    Respond(usize),
    Sample,
    Log,
    Advance(u64),
    Close,
}

fn server_step() -> impl Strategy<Value = ServerStep> {
    prop_oneof![
        8 => client_frame().prop_map(ServerStep::Frame),
        1 => prop::collection::vec(any::<u8>(), 0..16).prop_map(ServerStep::Garbage),
        2 => (0usize..6).prop_map(ServerStep::Respond),
        1 => Just(ServerStep::Sample),
        1 => Just(ServerStep::Log),
        1 => (0u64..120_000).prop_map(ServerStep::Advance),
        1 => Just(ServerStep::Close),
    ]
}

/// One generated client: the steps it takes against a server that speaks the handshake era
/// only, or both eras.
#[derive(Debug, Clone)]
struct ServerCase {
    dual_era: bool,
    steps: Vec<ServerStep>,
}

/// Arbitrary steps rarely make a valid handshake (with arbitrary steps only, a frame arrived
/// after `initialize` in 16 cases of 1,000 and after `notifications/initialized` in 3), so
/// most cases open validly and the rest are arbitrary from the first frame:
/// - 1 in 5: anything at all, to either server;
/// - 2 in 5: `initialize`, up to two arbitrary steps while the handshake is open,
///   `notifications/initialized`, then a client frame and anything;
/// - 2 in 5: a valid 2026-07-28 `server/discover` to a server of both eras, then a client
///   frame and anything.
///
/// `server_cases_reach_every_state` holds this to its promise.
fn server_case() -> impl Strategy<Value = ServerCase> {
    // What follows an opening starts with a frame, so that one arrives in the state the
    // opening reached before a `Close` or a lone `Advance` can end the case.
    let anything = || {
        (client_frame(), prop::collection::vec(server_step(), 0..39)).prop_map(|(first, rest)| {
            let mut steps = vec![ServerStep::Frame(first)];
            steps.extend(rest);
            steps
        })
    };
    let versions =
        prop::sample::select(vec!["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"]);
    prop_oneof![
        1 => (any::<bool>(), prop::collection::vec(server_step(), 1..40))
            .prop_map(|(dual_era, steps)| ServerCase { dual_era, steps }),
        2 => (
            any::<bool>(),
            versions,
            prop::collection::vec(server_step(), 0..3),
            anything(),
        )
            .prop_map(|(dual_era, version, during, after)| {
                let initialize = json!({"jsonrpc":"2.0","id":"init","method":"initialize","params":{
                    "protocolVersion":version,"capabilities":{"sampling":{}},"clientInfo":{"name":"c","version":"1"}}});
                let initialized = json!({"jsonrpc":"2.0","method":"notifications/initialized"});
                let mut steps = vec![ServerStep::Frame(initialize)];
                steps.extend(during);
                steps.push(ServerStep::Frame(initialized));
                steps.extend(after);
                ServerCase { dual_era, steps }
            }),
        2 => anything().prop_map(|after| {
            let discover = json!({"jsonrpc":"2.0","id":"discover","method":"server/discover",
                "params":enveloped("2026-07-28", json!({}))});
            let mut steps = vec![ServerStep::Frame(discover)];
            steps.extend(after);
            ServerCase { dual_era: true, steps }
        }),
    ]
}

/// A server session's state, as its public API shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum ServerState {
    AwaitingInitialize,
    AwaitingInitialized,
    Operating,
    Stateless,
    Closed,
}

fn server_state(server: &crate::session::ServerSession) -> ServerState {
    use crate::version::Era;
    match server.era() {
        _ if server.is_closed() => ServerState::Closed,
        _ if server.is_operating() => ServerState::Operating,
        None => ServerState::AwaitingInitialize,
        Some(Era::Handshake) => ServerState::AwaitingInitialized,
        Some(Era::Stateless) => ServerState::Stateless,
    }
}

/// Whether a server session may go from `from` to `to` on one step (the diagram on its
/// `State`); only a server of both eras enters the stateless era.
fn allowed(from: ServerState, to: ServerState, dual_era: bool) -> bool {
    use ServerState::*;
    from == to
        || to == Closed
        || matches!(
            (from, to),
            (AwaitingInitialize, AwaitingInitialized) | (AwaitingInitialized, Operating)
        )
        || (dual_era && (from, to) == (AwaitingInitialize, Stateless))
}

/// Runs one client against a server session, checking every move the session makes.
/// Returns each (state before, state after) of the frames that arrived.
fn server_survives(case: ServerCase) -> Result<HashSet<(ServerState, ServerState)>, TestCaseError> {
    use crate::schema::{Implementation, ListChangedCapability};
    use crate::session::{ServerConfig, ServerEvent, ServerSession};
    use crate::version::Era;

    let ServerCase { dual_era, steps } = case;
    let mut now = epoch();
    let info = Implementation::new("s".into(), "1".into());
    let mut config = if dual_era {
        ServerConfig::dual_era(info)
    } else {
        ServerConfig::new(info)
    };
    config.capabilities.tools = Some(ListChangedCapability::new());
    config.capabilities.logging = Some(crate::JsonObject::new());
    let mut server = ServerSession::new(config);
    let mut delivered: Vec<RequestId> = Vec::new();
    let mut initialized = false;
    let mut closed = false;
    let mut received_ids: HashSet<Value> = HashSet::new();
    let mut moves = HashSet::new();

    for step in steps {
        let before = server_state(&server);
        let frame = matches!(step, ServerStep::Frame(_) | ServerStep::Garbage(_));
        match step {
            ServerStep::Frame(f) => {
                for m in f.as_array().cloned().unwrap_or_else(|| vec![f.clone()]) {
                    if m.get("method").is_some()
                        && let Some(id) = m.get("id")
                    {
                        received_ids.insert(id.clone());
                    }
                }
                match decode(&serde_json::to_vec(&f).unwrap()) {
                    Ok(d) => server.handle_decoded(now, d),
                    Err(e) => server.handle_invalid(e),
                }
            }
            ServerStep::Garbage(bytes) => match decode(&bytes) {
                Ok(d) => server.handle_decoded(now, d),
                Err(e) => server.handle_invalid(e),
            },
            ServerStep::Respond(i) => {
                if let Some(id) = delivered.get(i) {
                    let _ = server.respond(id, crate::RawJson::empty_object());
                }
            }
            ServerStep::Sample => {
                let r = server.send_request(
                    now,
                    "sampling/createMessage",
                    None,
                    RequestOptions::DEFAULT,
                );
                prop_assert!(
                    r.is_err() || initialized,
                    "a request went out before initialized"
                );
            }
            ServerStep::Log => {
                let r = server.notify("notifications/message", None);
                prop_assert_eq!(r.is_ok(), !closed);
            }
            ServerStep::Advance(ms) => {
                now += Duration::from_millis(ms);
                server.handle_timeout(now);
            }
            ServerStep::Close => server.close("test"),
        }
        let after = server_state(&server);
        prop_assert!(
            allowed(before, after, dual_era),
            "{before:?} -> {after:?} (both eras: {dual_era})"
        );
        if frame {
            moves.insert((before, after));
        }
        while let Some(event) = server.poll_event() {
            prop_assert!(!closed, "event after Closed: {event:?}");
            match event {
                ServerEvent::Initialized(_) => {
                    prop_assert!(!initialized);
                    initialized = true;
                }
                ServerEvent::Request { id, .. } => {
                    prop_assert!(
                        server.client_info().is_some() || server.era() == Some(Era::Stateless),
                        "request routed before initialize"
                    );
                    prop_assert!(
                        server.request_client(&id).is_some(),
                        "request {id} delivered without what its client declared"
                    );
                    delivered.push(id);
                }
                ServerEvent::Closed(_) => closed = true,
                _ => {}
            }
        }
        prop_assert_eq!(server.is_operating(), initialized && !closed);
        let stateless = server.era() == Some(Era::Stateless);
        while let Some(message) = server.poll_transmit() {
            let v: Value = serde_json::from_slice(&message.encode()).unwrap();
            match (v.get("method").and_then(Value::as_str), v.get("id")) {
                (Some(m), Some(_)) => {
                    prop_assert!(initialized && (m == "sampling/createMessage" || m == "ping"))
                }
                (Some(m), None) => prop_assert!(
                    m == "notifications/message"
                        || (initialized && m == "notifications/cancelled")
                        || (stateless && m == "notifications/subscriptions/acknowledged"),
                    "{m} sent"
                ),
                (None, Some(id)) => prop_assert!(
                    received_ids.contains(id),
                    "answered id {id} the client never sent"
                ),
                (None, None) => prop_assert!(
                    v.get("error").is_some(),
                    "an answer without id must be an error"
                ),
            }
        }
    }
    Ok(moves)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn server_session_survives_any_client(case in server_case()) {
        server_survives(case)?;
    }
}

/// The cases `server_case` generates reach every state of a server session: in a fixed
/// sample of 1,000, each state has frames arrive in it in at least 30% of the cases, and at
/// least 10% of the cases still send the start state frames it refuses or ignores (the
/// arbitrary openings). Every case also passes the property.
#[test]
fn server_cases_reach_every_state() {
    use ServerState::*;
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;

    const CASES: usize = 1000;
    let strategy = server_case();
    let mut runner = TestRunner::deterministic();
    let mut arrived: std::collections::BTreeMap<ServerState, usize> = Default::default();
    let mut kept_waiting = 0;
    for _ in 0..CASES {
        let case = strategy.new_tree(&mut runner).unwrap().current();
        let moves = server_survives(case.clone()).unwrap_or_else(|e| panic!("{e}: {case:?}"));
        let states: HashSet<ServerState> = moves.iter().map(|(from, _)| *from).collect();
        for state in states {
            *arrived.entry(state).or_default() += 1;
        }
        if moves.contains(&(AwaitingInitialize, AwaitingInitialize)) {
            kept_waiting += 1;
        }
    }
    let share = |n: usize| n as f64 / CASES as f64;
    for state in [
        AwaitingInitialize,
        AwaitingInitialized,
        Operating,
        Stateless,
        Closed,
    ] {
        let got = share(arrived.get(&state).copied().unwrap_or(0));
        assert!(
            got >= 0.30,
            "frames arrived in {state:?} in {got:.3} of the cases: {arrived:?}"
        );
    }
    let got = share(kept_waiting);
    assert!(
        got >= 0.10,
        "only {got:.3} of the cases sent the start state a frame it refused"
    );
}
