//! Property: whatever a server sends, in whatever order and timing, the client session never
//! panics and never makes a forbidden move, whether it speaks the handshake era only or both
//! eras (the probe, the stateless envelope, multi round-trip retries).

use std::collections::HashSet;
use std::time::Duration;

use proptest::prelude::*;
use serde_json::{Value, json};

use super::{client_config, epoch};
use crate::jsonrpc::{RequestId, decode};
use crate::schema::RootsCapability;
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

fn client_frame() -> impl Strategy<Value = Value> {
    let methods = prop::sample::select(vec![
        "initialize",
        "ping",
        "tools/list",
        "tools/call",
        "prompts/list",
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

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn server_session_survives_any_client(steps in prop::collection::vec(server_step(), 1..40)) {
        use crate::schema::{Implementation, ListChangedCapability};
        use crate::session::{ServerConfig, ServerEvent, ServerSession};

        let mut now = epoch();
        let mut config = ServerConfig::new(Implementation::new("s".into(), "1".into()));
        config.capabilities.tools = Some(ListChangedCapability::new());
        config.capabilities.logging = Some(crate::JsonObject::new());
        let mut server = ServerSession::new(config);
        let mut delivered: Vec<RequestId> = Vec::new();
        let mut initialized = false;
        let mut closed = false;
        let mut received_ids: HashSet<Value> = HashSet::new();

        for step in steps {
            match step {
                ServerStep::Frame(f) => {
                    for m in f.as_array().cloned().unwrap_or_else(|| vec![f.clone()]) {
                        if m.get("method").is_some() && let Some(id) = m.get("id") { received_ids.insert(id.clone()); }
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
                    let r = server.send_request(now, "sampling/createMessage", None, RequestOptions::DEFAULT);
                    prop_assert!(r.is_err() || initialized, "a request went out before initialized");
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
            while let Some(event) = server.poll_event() {
                prop_assert!(!closed, "event after Closed: {event:?}");
                match event {
                    ServerEvent::Initialized(_) => { prop_assert!(!initialized); initialized = true; }
                    ServerEvent::Request { id, .. } => {
                        prop_assert!(server.client_info().is_some(), "request routed before initialize");
                        delivered.push(id);
                    }
                    ServerEvent::Closed(_) => closed = true,
                    _ => {}
                }
            }
            prop_assert_eq!(server.is_operating(), initialized && !closed);
            while let Some(message) = server.poll_transmit() {
                let v: Value = serde_json::from_slice(&message.encode()).unwrap();
                match (v.get("method").and_then(Value::as_str), v.get("id")) {
                    (Some(m), Some(_)) => prop_assert!(initialized && (m == "sampling/createMessage" || m == "ping")),
                    (Some(m), None) => prop_assert!(
                        m == "notifications/message" || (initialized && m == "notifications/cancelled"),
                        "{m} sent"
                    ),
                    (None, Some(id)) => prop_assert!(received_ids.contains(id), "answered id {id} the client never sent"),
                    (None, None) => prop_assert!(v.get("error").is_some(), "an answer without id must be an error"),
                }
            }
        }
    }
}
