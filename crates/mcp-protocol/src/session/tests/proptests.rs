//! Property: whatever a server sends, in whatever order and timing, the client session never
//! panics and never makes a forbidden move.

use std::collections::HashSet;
use std::time::Duration;

use proptest::prelude::*;
use serde_json::{Value, json};

use super::{client_config, epoch};
use crate::jsonrpc::{RequestId, decode};
use crate::session::{ClientEvent, ClientSession, RequestOptions};

#[derive(Debug, Clone)]
enum Step {
    /// A frame from the server, built from the grammar below.
    Frame(Value),
    /// Bytes that may not be JSON at all.
    Garbage(Vec<u8>),
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
            let data = if supported { json!({"supported":["2025-06-18"]}) } else { json!(null) };
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
        let mut now = epoch();
        let mut client = ClientSession::new(client_config());
        let init = client.initialize(now).unwrap();
        let mut ours: Vec<RequestId> = vec![init.clone()];
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
                Step::Advance(ms) => {
                    now += Duration::from_millis(ms);
                    client.handle_timeout(now);
                }
                Step::Send(m) => {
                    let r = client.send_request(now, m, None, RequestOptions::DEFAULT);
                    if let Ok(id) = r { ours.push(id); }
                    else { prop_assert!(m != "ping" || closed, "ping is always allowed while open"); }
                }
                Step::Cancel(i) => {
                    if let Some(id) = ours.get(i).cloned() { let _ = client.cancel(&id, None); }
                }
                Step::Respond(i) => {
                    if let Some(id) = theirs.get(i).cloned()
                        && client.respond(&id, crate::RawJson::empty_object()).unwrap() {
                            prop_assert!(owed.remove(&id), "respond accepted an id never delivered");
                        }
                }
            }

            while let Some(event) = client.poll_event() {
                prop_assert!(!closed, "event after Closed: {event:?}");
                match event {
                    ClientEvent::Ready(_) => { prop_assert!(!ready, "Ready twice"); ready = true; }
                    ClientEvent::Closed(_) => closed = true,
                    ClientEvent::Request { id, .. } => {
                        prop_assert!(ready, "server request delivered before Ready");
                        owed.insert(id.clone());
                        theirs.push(id);
                    }
                    ClientEvent::RequestCancelled { id, .. } => { owed.remove(&id); }
                    _ => {}
                }
            }
            prop_assert_eq!(client.is_ready(), ready && !closed);
            prop_assert_eq!(client.is_closed(), closed);

            while let Some(message) = client.poll_transmit() {
                let v: Value = serde_json::from_slice(&message.encode()).unwrap();
                prop_assert!(decode(&message.encode()).is_ok(), "we sent an undecodable frame");
                let method = v.get("method").and_then(Value::as_str);
                match (method, v.get("id")) {
                    (Some(m), Some(_)) => prop_assert!(
                        ready || m == "initialize" || m == "ping",
                        "{m} sent before Ready"
                    ),
                    (Some("notifications/cancelled"), None) => {
                        let cancelled: RequestId = serde_json::from_value(v["params"]["requestId"].clone()).unwrap();
                        prop_assert!(cancelled != init, "initialize was cancelled");
                        prop_assert!(ours.contains(&cancelled), "cancelled a request we never sent");
                    }
                    (Some(m), None) => prop_assert!(m == "notifications/initialized" || m == "notifications/cancelled"),
                    (None, _) => {
                        // A response or error: answers something the server sent, or a parse error.
                        prop_assert!(v.get("result").is_some() || v.get("error").is_some());
                    }
                }
            }
            prop_assert!(!closed || client.poll_timeout().is_none(), "a closed session keeps a timer");
        }
    }
}
