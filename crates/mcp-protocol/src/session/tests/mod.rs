//! Session tests on a simulated clock: a client and a server session wired back to back
//! through the real codec (the quinn `Pair` pattern), plus scripted peers for misbehaviour.
//! This file is long because it holds the shared simulated-clock harness and the lifecycle cases
//! that use it, one test per transition; the larger groups already have modules of their own.

mod liveness;
mod pings;
mod proptests;
mod task_progress;

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::jsonrpc::{RawJson, RequestId, code, decode};
use crate::schema::{
    CallToolParams, CallToolResult, ClientCapabilities, ClientRequest, ContentBlock,
    ElicitationCapability, Implementation, ListChangedCapability, RequestMethod,
    SamplingCapability, ServerRequest, method,
};
use crate::session::{
    ClientConfig, ClientEvent, ClientSession, RequestOptions, ServerConfig, ServerEvent,
    ServerSession, decode_result,
};
use crate::{Error, ProtocolVersion};

/// The simulated clock starts at a real instant only because `Instant` has no constructor;
/// nothing reads the clock after this.
#[allow(clippy::disallowed_methods)]
pub(super) fn epoch() -> Instant {
    Instant::now()
}

/// A client that speaks only the handshake era, as the tests written for it expect; the
/// stateless-era tests build their own.
pub(super) fn client_config() -> ClientConfig {
    let mut config = ClientConfig::new(Implementation::new("test-host".into(), "1.0.0".into()));
    config.supported_versions = ProtocolVersion::HANDSHAKE.to_vec();
    config
}

fn server_config() -> ServerConfig {
    let mut config = ServerConfig::new(Implementation::new("test-server".into(), "2.0.0".into()));
    config.capabilities.tools = Some(ListChangedCapability::new());
    config
}

/// A client and a server session exchanging encoded frames, on one simulated clock.
struct Pair {
    client: ClientSession,
    server: ServerSession,
    now: Instant,
    client_events: Vec<ClientEvent>,
    server_events: Vec<ServerEvent>,
    /// Every frame the client sent, for assertions on the wire.
    wire: Vec<Value>,
}

impl Pair {
    fn new(client: ClientConfig, server: ServerConfig) -> Self {
        Self {
            client: ClientSession::new(client),
            server: ServerSession::new(server),
            now: epoch(),
            client_events: Vec::new(),
            server_events: Vec::new(),
            wire: Vec::new(),
        }
    }

    fn connected() -> Self {
        let mut pair = Self::new(client_config(), server_config());
        pair.client.initialize(pair.now).unwrap();
        pair.drive();
        assert!(pair.client.is_ready());
        assert!(pair.server.is_operating());
        pair.client_events.clear();
        pair.server_events.clear();
        pair.wire.clear();
        pair
    }

    /// Moves frames both ways until neither side has anything to send.
    fn drive(&mut self) {
        loop {
            let mut moved = false;
            while let Some(m) = self.client.poll_transmit() {
                let bytes = m.encode();
                self.wire.push(serde_json::from_slice(&bytes).unwrap());
                self.server
                    .handle_decoded(self.now, decode(&bytes).unwrap());
                moved = true;
            }
            while let Some(m) = self.server.poll_transmit() {
                self.client
                    .handle_decoded(self.now, decode(&m.encode()).unwrap());
                moved = true;
            }
            self.client_events
                .extend(std::iter::from_fn(|| self.client.poll_event()));
            self.server_events
                .extend(std::iter::from_fn(|| self.server.poll_event()));
            if !moved {
                break;
            }
        }
    }

    fn advance(&mut self, by: Duration) {
        self.now += by;
        self.client.handle_timeout(self.now);
        self.server.handle_timeout(self.now);
        self.drive();
    }

    fn call(&mut self, name: &str, options: RequestOptions) -> RequestId {
        let params = CallToolParams::new(name.to_owned());
        let id = self
            .client
            .request::<method::CallTool>(self.now, &params, options)
            .unwrap();
        self.drive();
        id
    }

    /// The server-side id of the last request the server received.
    fn last_server_request(&self) -> RequestId {
        self.server_events
            .iter()
            .rev()
            .find_map(|e| match e {
                ServerEvent::Request { id, .. } => Some(id.clone()),
                _ => None,
            })
            .expect("the server received a request")
    }

    fn client_outcome(&self, want: &RequestId) -> &Result<RawJson, Error> {
        self.client_events
            .iter()
            .find_map(|e| match e {
                ClientEvent::Response { id, outcome, .. } if id == want => Some(outcome),
                _ => None,
            })
            .expect("the request ended")
    }
}

pub(super) fn text_result(text: &str) -> RawJson {
    RawJson::encode(&CallToolResult::new(vec![ContentBlock::text(text)])).unwrap()
}

/// Feeds a server-sent frame, given as JSON, to a client session.
pub(super) fn feed(client: &mut ClientSession, now: Instant, frame: Value) {
    let bytes = serde_json::to_vec(&frame).unwrap();
    client.handle_decoded(now, decode(&bytes).unwrap());
}

pub(super) fn sent(client: &mut ClientSession) -> Vec<Value> {
    std::iter::from_fn(|| client.poll_transmit())
        .map(|m| serde_json::from_slice(&m.encode()).unwrap())
        .collect()
}

/// Hands `frame` to `server` and returns what it sent back.
fn feed_server(server: &mut ServerSession, now: Instant, frame: Value) -> Vec<Value> {
    server.handle_decoded(now, decode(&serde_json::to_vec(&frame).unwrap()).unwrap());
    std::iter::from_fn(|| server.poll_transmit())
        .map(|m| serde_json::from_slice::<Value>(&m.encode()).unwrap())
        .collect()
}

pub(super) fn events(client: &mut ClientSession) -> Vec<ClientEvent> {
    std::iter::from_fn(|| client.poll_event()).collect()
}

#[test]
fn handshake_negotiates_and_sends_initialized() {
    let mut pair = Pair::new(client_config(), server_config());
    pair.client.initialize(pair.now).unwrap();
    pair.drive();
    let methods: Vec<_> = pair.wire.iter().map(|m| m["method"].clone()).collect();
    assert_eq!(
        methods,
        [json!("initialize"), json!("notifications/initialized")]
    );
    assert_eq!(pair.wire[0]["params"]["protocolVersion"], "2025-11-25");
    let Some(ClientEvent::Ready(info)) = pair.client_events.first() else {
        panic!("expected Ready, got {:?}", pair.client_events);
    };
    assert_eq!(info.protocol_version, ProtocolVersion::V2025_11_25);
    assert_eq!(info.implementation.name, "test-server");
    assert!(matches!(pair.server_events[0], ServerEvent::Initialized(_)));
}

#[test]
fn server_answers_an_older_client_with_its_version() {
    let mut config = client_config();
    config.protocol_version = ProtocolVersion::V2025_03_26;
    let mut pair = Pair::new(config, server_config());
    pair.client.initialize(pair.now).unwrap();
    pair.drive();
    assert_eq!(
        pair.client.server_info().unwrap().protocol_version,
        ProtocolVersion::V2025_03_26
    );
}

#[test]
fn only_ping_goes_before_the_handshake() {
    let mut client = ClientSession::new(client_config());
    let now = epoch();
    let err = client
        .request::<method::CallTool>(
            now,
            &CallToolParams::new("x".into()),
            RequestOptions::DEFAULT,
        )
        .unwrap_err();
    assert!(matches!(err, Error::ApiMisuse(_)), "{err}");
    client
        .send_request(now, "ping", None, RequestOptions::DEFAULT)
        .unwrap();
    assert!(matches!(
        client.send_request(now, "initialize", None, RequestOptions::DEFAULT),
        Err(Error::ApiMisuse(_))
    ));
}

#[test]
fn tool_call_round_trip_decodes_by_the_method_type() {
    let mut pair = Pair::connected();
    let id = pair.call("echo", RequestOptions::DEFAULT);
    let server_id = pair.last_server_request();
    assert!(matches!(
        &pair.server_events[0],
        ServerEvent::Request { request: ClientRequest::CallTool(p), .. } if p.name == "echo"
    ));
    pair.server.respond(&server_id, text_result("hi")).unwrap();
    pair.drive();
    let raw = pair.client_outcome(&id).as_ref().unwrap();
    let result = decode_result::<method::CallTool>(raw).unwrap();
    assert_eq!(result.content, vec![ContentBlock::text("hi")]);
    assert_eq!(pair.client.in_flight(), 0);
}

#[test]
fn timeout_cancels_and_drops_the_late_reply() {
    let mut pair = Pair::connected();
    let id = pair.call(
        "slow",
        RequestOptions::DEFAULT.timeout(Duration::from_secs(5)),
    );
    let server_id = pair.last_server_request();
    pair.advance(Duration::from_secs(4));
    assert!(pair.client_events.is_empty());
    pair.advance(Duration::from_secs(1));
    assert!(
        matches!(pair.client_outcome(&id), Err(Error::Timeout { method, .. }) if method == "tools/call")
    );
    let cancel = pair.wire.last().unwrap();
    assert_eq!(cancel["method"], "notifications/cancelled");
    assert_eq!(cancel["params"]["requestId"], json!(id_json(&id)));
    assert!(
        pair.server_events
            .iter()
            .any(|e| matches!(e, ServerEvent::Cancelled { .. }))
    );
    // The server's answer after the cancellation is not sent at all.
    assert!(
        !pair
            .server
            .respond(&server_id, text_result("late"))
            .unwrap()
    );
    // A late reply that still arrives is dropped without a word.
    pair.client_events.clear();
    feed(
        &mut pair.client,
        pair.now,
        json!({"jsonrpc":"2.0","id":id_json(&id),"result":{"content":[]}}),
    );
    assert!(events(&mut pair.client).is_empty());
}

fn id_json(id: &RequestId) -> Value {
    serde_json::to_value(id).unwrap()
}

#[test]
fn cancel_fails_the_request_and_tells_the_server() {
    let mut pair = Pair::connected();
    let id = pair.call("slow", RequestOptions::DEFAULT);
    assert!(pair.client.cancel(&id, Some("user pressed stop")).unwrap());
    pair.drive();
    assert!(matches!(
        pair.client_outcome(&id),
        Err(Error::Cancelled { .. })
    ));
    assert_eq!(
        pair.wire.last().unwrap()["params"]["reason"],
        "user pressed stop"
    );
    assert!(
        !pair.client.cancel(&id, None).unwrap(),
        "a second cancel is a no-op"
    );
}

#[test]
fn progress_restarts_the_idle_timeout_under_the_hard_cap() {
    let mut pair = Pair::connected();
    let options = RequestOptions::DEFAULT
        .timeout(Duration::from_secs(10))
        .idle_timeout(Duration::from_secs(2))
        .with_progress();
    let id = pair.call("long", options);
    let token = pair.wire[0]["params"]["_meta"]["progressToken"].clone();
    assert_eq!(token, id_json(&id));
    for step in 1..=8 {
        pair.advance(Duration::from_millis(1500));
        let params = json!({"progressToken": token, "progress": step});
        pair.server
            .notify(
                "notifications/progress",
                Some(RawJson::encode(&params).unwrap()),
            )
            .unwrap();
        pair.drive();
    }
    // 12 s have passed; the hard cap of 10 s ended it (noticed at the 10.5 s tick) despite
    // progress every 1.5 s.
    assert!(matches!(
        pair.client_outcome(&id),
        Err(Error::Timeout {
            waited_ms: 10_500,
            ..
        })
    ));
    let progress = pair
        .client_events
        .iter()
        .filter(|e| matches!(e, ClientEvent::Progress { .. }))
        .count();
    assert_eq!(
        progress, 6,
        "progress at 1.5 s .. 9 s is delivered, later is not"
    );
}

#[test]
fn idle_timeout_fires_without_progress() {
    let mut pair = Pair::connected();
    let options = RequestOptions::DEFAULT
        .timeout(Duration::from_secs(10))
        .idle_timeout(Duration::from_secs(2));
    let id = pair.call("quiet", options);
    pair.advance(Duration::from_secs(2));
    assert!(matches!(
        pair.client_outcome(&id),
        Err(Error::Timeout {
            waited_ms: 2000,
            ..
        })
    ));
}

#[test]
fn notifications_before_the_initialize_result_are_accepted() {
    let now = epoch();
    let mut client = ClientSession::new(client_config());
    client.initialize(now).unwrap();
    feed(
        &mut client,
        now,
        json!({"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"booting"}}),
    );
    let got = events(&mut client);
    assert!(
        matches!(&got[..], [ClientEvent::Notification(_)]),
        "{got:?}"
    );
}

/// Feeds the server request `request` (its method and params) under `id` to `client`, and
/// checks that the one frame sent back is the JSON-RPC error `code` with `message` under that
/// same id, and that the host hears nothing of it.
fn check_refusal(
    row: &str,
    client: &mut ClientSession,
    request: &Value,
    id: Value,
    code: i64,
    message: &str,
) {
    let mut frame = request.clone();
    frame["jsonrpc"] = json!("2.0");
    frame["id"] = id.clone();
    feed(client, epoch(), frame);
    assert_eq!(
        sent(client),
        [json!({"jsonrpc":"2.0","id":id,"error":{"code":code,"message":message}})],
        "{row}: {request}"
    );
    let raised = events(client);
    assert!(raised.is_empty(), "{row}: {request}: {raised:?}");
}

/// Every client capability a server request can need.
fn all_capabilities() -> ClientCapabilities {
    let mut caps = ClientCapabilities::new();
    caps.roots = Some(crate::schema::RootsCapability::new());
    caps.sampling = Some(SamplingCapability::new());
    caps.elicitation = Some(ElicitationCapability::new());
    caps
}

#[test]
fn undeclared_server_requests_are_refused() {
    let roots = json!({"method":"roots/list"});
    let sampling =
        json!({"method":"sampling/createMessage","params":{"messages":[],"maxTokens":5}});
    let elicitation =
        json!({"method":"elicitation/create","params":{"message":"name?","requestedSchema":{}}});
    let tasks = json!({"method":"tasks/list"});

    // Fail closed: a client that declared nothing refuses each with -32601 (SPEC: "Roots not
    // supported"; the others by the same rule).
    let mut client = connected_client(client_config());
    for (request, message) in [
        (&roots, "Roots not supported"),
        (&sampling, "Sampling not supported"),
        (&elicitation, "Elicitation not supported"),
        (&tasks, "Method not found: tasks/list"),
    ] {
        for id in [json!(7), json!("srv-7")] {
            check_refusal(
                "a client that declared nothing",
                &mut client,
                request,
                id,
                code::METHOD_NOT_FOUND,
                message,
            );
        }
    }

    // Before the handshake has finished only ping may come, whatever the client declared.
    let mut config = client_config();
    config.capabilities = all_capabilities();
    let mut early = ClientSession::new(config);
    early.initialize(epoch()).unwrap();
    let _ = sent(&mut early);
    // The 2026-07-28 era has no server-to-client requests at all.
    let mut config = client_config();
    config.capabilities = all_capabilities();
    let mut stateless = stateless_client(config);
    for request in [&roots, &sampling, &elicitation, &tasks] {
        let method = request["method"].as_str().unwrap();
        check_refusal(
            "a client that declared everything, still initializing",
            &mut early,
            request,
            json!(8),
            code::INVALID_REQUEST,
            &format!("{method} sent before the handshake finished; only ping is allowed"),
        );
        check_refusal(
            "a client that declared everything, in the 2026-07-28 era",
            &mut stateless,
            request,
            json!("srv-9"),
            code::METHOD_NOT_FOUND,
            &format!("{method}: MCP 2026-07-28 has no server-to-client requests"),
        );
    }
}

#[test]
fn declared_server_requests_reach_the_host_with_their_sub_capabilities_checked() {
    let mut caps = ClientCapabilities::new();
    caps.sampling = Some(SamplingCapability::new());
    caps.elicitation = Some(ElicitationCapability::new());
    let mut config = client_config();
    config.capabilities = caps;
    let now = epoch();
    let mut client = connected_client(config);

    feed(
        &mut client,
        now,
        json!({"jsonrpc":"2.0","id":1,"method":"sampling/createMessage","params":{"messages":[{"role":"user","content":{"type":"text","text":"hi"}}],"maxTokens":5}}),
    );
    let got = events(&mut client);
    assert!(matches!(
        &got[..],
        [ClientEvent::Request {
            request: ServerRequest::CreateMessage(_),
            ..
        }]
    ));

    // Tools in sampling need sampling.tools.
    check_refusal(
        "sampling declared without sampling.tools",
        &mut client,
        &json!({"method":"sampling/createMessage","params":{"messages":[],"maxTokens":5,"tools":[]}}),
        json!(2),
        code::INVALID_PARAMS,
        "tools in sampling requests are not supported (sampling.tools not declared)",
    );

    // `elicitation: {}` means form only: URL mode is refused with -32602.
    check_refusal(
        "elicitation declared as {}",
        &mut client,
        &json!({"method":"elicitation/create","params":{"mode":"url","message":"log in","url":"https://x.example","elicitationId":"e"}}),
        json!(3),
        code::INVALID_PARAMS,
        "elicitation mode \"url\" is not supported",
    );

    // The host answers the sampling request; a second answer is refused.
    let id = RequestId::Number(1);
    assert!(client.respond(now, &id, RawJson::empty_object()).unwrap());
    assert!(!client.respond(now, &id, RawJson::empty_object()).unwrap());
}

/// A client session of both eras whose `server/discover` probe a scripted stateless server
/// answered: it speaks the 2026-07-28 era.
pub(super) fn stateless_client(mut config: ClientConfig) -> ClientSession {
    config.supported_versions = ProtocolVersion::KNOWN.to_vec();
    let now = epoch();
    let mut client = ClientSession::new(config);
    client.initialize(now).unwrap();
    let probe = sent(&mut client);
    assert_eq!(probe[0]["method"], "server/discover");
    feed(
        &mut client,
        now,
        json!({"jsonrpc":"2.0","id":probe[0]["id"],"result":{"supportedVersions":["2026-07-28"],"capabilities":{}}}),
    );
    assert!(client.is_ready());
    assert_eq!(client.era(), crate::Era::Stateless);
    let _ = sent(&mut client);
    let _ = events(&mut client);
    client
}

/// A client session whose handshake a scripted server answered.
pub(super) fn connected_client(config: ClientConfig) -> ClientSession {
    let now = epoch();
    let mut client = ClientSession::new(config);
    client.initialize(now).unwrap();
    let init = sent(&mut client);
    feed(
        &mut client,
        now,
        json!({"jsonrpc":"2.0","id":init[0]["id"],"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"s","version":"1"}}}),
    );
    assert!(client.is_ready());
    let _ = sent(&mut client);
    let _ = events(&mut client);
    client
}

#[test]
fn an_unsupported_version_closes_the_session() {
    let now = epoch();
    let mut client = ClientSession::new(client_config());
    let id = client.initialize(now).unwrap();
    feed(
        &mut client,
        now,
        json!({"jsonrpc":"2.0","id":id_json(&id),"result":{"protocolVersion":"2099-01-01","capabilities":{},"serverInfo":{"name":"s","version":"1"}}}),
    );
    let got = events(&mut client);
    assert!(
        matches!(&got[..], [ClientEvent::Closed(Error::VersionMismatch { offered, .. })] if offered.as_str() == "2099-01-01"),
        "{got:?}"
    );
    assert!(client.is_closed());
    // No notifications/initialized went out.
    assert_eq!(sent(&mut client).len(), 1);
}

#[test]
fn a_version_error_listing_a_mutual_version_is_retried_once() {
    let now = epoch();
    let mut client = ClientSession::new(client_config());
    let first = client.initialize(now).unwrap();
    let _ = sent(&mut client);
    feed(
        &mut client,
        now,
        json!({"jsonrpc":"2.0","id":id_json(&first),"error":{"code":-32602,"message":"Unsupported protocol version","data":{"supported":["2025-06-18"],"requested":"2025-11-25"}}}),
    );
    let retry = sent(&mut client);
    assert_eq!(retry[0]["method"], "initialize");
    assert_eq!(retry[0]["params"]["protocolVersion"], "2025-06-18");
    assert_ne!(retry[0]["id"], id_json(&first), "ids are never reused");
    feed(
        &mut client,
        now,
        json!({"jsonrpc":"2.0","id":retry[0]["id"],"error":{"code":-32602,"message":"no","data":{"supported":["2025-03-26"]}}}),
    );
    let got = events(&mut client);
    assert!(
        matches!(&got[..], [ClientEvent::Closed(Error::Rpc { .. })]),
        "{got:?}"
    );
}

#[test]
fn an_initialize_timeout_closes_without_cancelling_initialize() {
    let now = epoch();
    let mut config = client_config();
    config.request_timeout = Duration::from_secs(3);
    let mut client = ClientSession::new(config);
    let id = client.initialize(now).unwrap();
    assert!(matches!(client.cancel(&id, None), Err(Error::ApiMisuse(_))));
    let _ = sent(&mut client);
    assert_eq!(client.poll_timeout(), Some(now + Duration::from_secs(3)));
    client.handle_timeout(now + Duration::from_secs(3));
    assert!(
        sent(&mut client).is_empty(),
        "initialize is never cancelled"
    );
    assert!(matches!(
        &events(&mut client)[..],
        [ClientEvent::Closed(Error::Timeout { .. })]
    ));
}

#[test]
fn close_fails_everything_in_flight() {
    let mut pair = Pair::connected();
    let a = pair.call("a", RequestOptions::DEFAULT);
    let b = pair.call("b", RequestOptions::DEFAULT);
    pair.client.close("host shutting down");
    pair.drive();
    for id in [a, b] {
        assert!(matches!(pair.client_outcome(&id), Err(Error::Closed(_))));
    }
    assert!(matches!(
        pair.client_events.last(),
        Some(ClientEvent::Closed(_))
    ));
    assert_eq!(pair.client.poll_timeout(), None);
    assert!(matches!(
        pair.client
            .send_request(pair.now, "ping", None, RequestOptions::DEFAULT),
        Err(Error::Closed(_))
    ));
}

#[test]
fn a_broken_answer_fails_its_request() {
    let mut pair = Pair::connected();
    let id = pair.call("x", RequestOptions::DEFAULT);
    let frame = format!(
        r#"{{"jsonrpc":"2.0","id":{},"result":{{}},"error":{{"code":1,"message":"m"}}}}"#,
        id_json(&id)
    );
    let err = decode(frame.as_bytes()).unwrap_err();
    pair.client.handle_invalid(pair.now, err);
    assert!(matches!(
        pair.client.poll_event(),
        Some(ClientEvent::Response {
            outcome: Err(Error::Protocol(_)),
            ..
        })
    ));
    assert!(
        pair.client.poll_transmit().is_none(),
        "a broken response is never answered"
    );
}

#[test]
fn server_refuses_requests_before_initialize_and_for_undeclared_features() {
    let now = epoch();
    let mut server = ServerSession::new(server_config());
    let feed_server = |server: &mut ServerSession, frame: Value| feed_server(server, now, frame);
    let out = feed_server(
        &mut server,
        json!({"jsonrpc":"2.0","id":1,"method":"tools/list"}),
    );
    assert_eq!(out[0]["error"]["code"], code::INVALID_REQUEST);
    let out = feed_server(&mut server, json!({"jsonrpc":"2.0","id":2,"method":"ping"}));
    assert_eq!(out[0]["result"], json!({}));
    let out = feed_server(
        &mut server,
        json!({"jsonrpc":"2.0","id":3,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}),
    );
    assert_eq!(out[0]["result"]["protocolVersion"], "2024-11-05");
    assert_eq!(out[0]["result"]["serverInfo"]["name"], "test-server");
    let out = feed_server(
        &mut server,
        json!({"jsonrpc":"2.0","id":4,"method":"initialize","params":{}}),
    );
    assert_eq!(out[0]["error"]["code"], code::INVALID_REQUEST);
    let _ = feed_server(
        &mut server,
        json!({"jsonrpc":"2.0","method":"notifications/initialized"}),
    );
    assert!(server.is_operating());
    let out = feed_server(
        &mut server,
        json!({"jsonrpc":"2.0","id":5,"method":"prompts/list"}),
    );
    assert_eq!(out[0]["error"]["code"], code::METHOD_NOT_FOUND);
    let out = feed_server(
        &mut server,
        json!({"jsonrpc":"2.0","id":6,"method":"tools/call","params":{}}),
    );
    assert_eq!(
        out[0]["error"]["code"],
        code::INVALID_PARAMS,
        "name is required"
    );
    // A batch is not allowed in 2024-11-05.
    let out = feed_server(
        &mut server,
        json!([{"jsonrpc":"2.0","id":7,"method":"tools/list"}]),
    );
    assert_eq!(out[0]["error"]["code"], code::INVALID_REQUEST);
    // Nothing but logging before initialized, and capabilities are enforced.
    assert!(matches!(
        server.notify("notifications/message", None),
        Err(Error::ApiMisuse(_))
    ));
    assert!(matches!(
        server.send_request(now, "sampling/createMessage", None, RequestOptions::DEFAULT),
        Err(Error::ApiMisuse(_))
    ));
}

#[test]
fn server_refuses_an_id_in_use_whatever_the_method() {
    let now = epoch();
    let mut server = ServerSession::new(server_config());
    let feed_server = |server: &mut ServerSession, frame: Value| feed_server(server, now, frame);
    let _ = feed_server(
        &mut server,
        json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}),
    );
    let _ = feed_server(
        &mut server,
        json!({"jsonrpc":"2.0","method":"notifications/initialized"}),
    );
    // A call in flight holds id 2: a ping, an initialize or another call with it is refused,
    // so that no answer names id 2 but the call's own.
    let out = feed_server(
        &mut server,
        json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"t"}}),
    );
    assert!(out.is_empty(), "{out:?}");
    for reused in [
        json!({"jsonrpc":"2.0","id":2,"method":"ping"}),
        json!({"jsonrpc":"2.0","id":2,"method":"initialize","params":{}}),
        json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"t"}}),
    ] {
        let out = feed_server(&mut server, reused.clone());
        assert_eq!(out.len(), 1, "{reused}: {out:?}");
        assert_eq!(out[0]["id"], 2, "{reused}: {out:?}");
        assert_eq!(
            out[0]["error"]["code"],
            code::INVALID_REQUEST,
            "{reused}: {out:?}"
        );
        assert!(
            out[0]["error"]["message"]
                .as_str()
                .unwrap()
                .contains("in use"),
            "{reused}: {out:?}"
        );
    }
    let out = feed_server(&mut server, json!({"jsonrpc":"2.0","id":3,"method":"ping"}));
    assert_eq!(out[0]["result"], json!({}));
    // Answered, the id is free again.
    assert!(
        server
            .respond(&RequestId::from(2), RawJson::empty_object())
            .unwrap()
    );
    let _ = std::iter::from_fn(|| server.poll_transmit()).count();
    let out = feed_server(&mut server, json!({"jsonrpc":"2.0","id":2,"method":"ping"}));
    assert_eq!(out[0]["result"], json!({}));
}

#[test]
fn server_accepts_a_batch_from_a_2025_03_26_client() {
    let mut config = client_config();
    config.protocol_version = ProtocolVersion::V2025_03_26;
    let mut pair = Pair::new(config, server_config());
    pair.client.initialize(pair.now).unwrap();
    pair.drive();
    let batch = br#"[{"jsonrpc":"2.0","id":"a","method":"tools/list"},{"jsonrpc":"2.0","id":"b","method":"ping"}]"#;
    pair.server.handle_decoded(pair.now, decode(batch).unwrap());
    let out: Vec<_> = std::iter::from_fn(|| pair.server.poll_transmit()).collect();
    assert_eq!(
        out.len(),
        1,
        "ping is answered at once, tools/list goes to the handler"
    );
    assert!(
        matches!(pair.server.poll_event(), Some(ServerEvent::Request { id, .. }) if id == RequestId::from("a"))
    );
}

#[test]
fn undecodable_requests_get_the_precise_error() {
    let now = epoch();
    let mut client = connected_client(client_config());
    let err = decode(br#"{"jsonrpc":"2.0","id":9,"method":42}"#).unwrap_err();
    client.handle_invalid(now, err);
    let out = sent(&mut client);
    assert_eq!(
        out[0],
        json!({"jsonrpc":"2.0","id":9,"error":{"code":-32600,"message":"Invalid Request","data":out[0]["error"]["data"]}})
    );
    // Log text on a server's stdout is reported, not answered with a parse error.
    let err = decode(b"Server listening on stdio").unwrap_err();
    client.handle_invalid(now, err);
    assert!(sent(&mut client).is_empty());
    assert!(
        matches!(&events(&mut client)[..], [_, ClientEvent::Diagnostic(d)] if d.contains("not valid JSON"))
    );
}

#[test]
fn request_marker_types_name_their_methods() {
    assert_eq!(<method::CallTool as RequestMethod>::METHOD, "tools/call");
    assert_eq!(
        <method::ListResourceTemplates as RequestMethod>::METHOD,
        "resources/templates/list"
    );
}

#[test]
fn dispatch_answers_at_once_or_later_and_keeps_other_events() {
    use crate::session::{Reply, RequestHandler};

    struct Echo;
    impl RequestHandler for Echo {
        fn handle(&mut self, _: &RequestId, request: ClientRequest) -> Reply {
            match request {
                ClientRequest::CallTool(p) if p.name == "later" => Reply::Later,
                ClientRequest::CallTool(p) => Reply::Result(text_result(&p.name)),
                _ => Reply::Error(crate::ErrorObject::new(code::INTERNAL_ERROR, "no".into())),
            }
        }
    }
    let mut pair = Pair::connected();
    let now_id = pair
        .client
        .request::<method::CallTool>(
            pair.now,
            &CallToolParams::new("now".into()),
            RequestOptions::DEFAULT,
        )
        .unwrap();
    let later_id = pair
        .client
        .request::<method::CallTool>(
            pair.now,
            &CallToolParams::new("later".into()),
            RequestOptions::DEFAULT,
        )
        .unwrap();
    while let Some(m) = pair.client.poll_transmit() {
        pair.server.handle_message(pair.now, m);
    }
    pair.server.handle_message(
        pair.now,
        crate::Message::Notification(crate::Notification {
            method: "notifications/roots/list_changed".into(),
            params: None,
        }),
    );
    pair.server.dispatch(&mut Echo).unwrap();
    assert!(
        matches!(pair.server.poll_event(), Some(ServerEvent::Notification(_))),
        "other events stay queued"
    );
    pair.drive();
    let raw = pair.client_outcome(&now_id).as_ref().unwrap();
    assert_eq!(
        decode_result::<method::CallTool>(raw).unwrap().content,
        vec![ContentBlock::text("now")]
    );
    assert!(
        pair.client_events
            .iter()
            .all(|e| !matches!(e, ClientEvent::Response { id, .. } if *id == later_id))
    );
}

#[test]
fn a_server_with_an_id_prefix_sends_string_ids_that_its_answers_match() {
    let mut config = server_config();
    config.request_id_prefix = Some("r7.".to_owned());
    let mut pair = Pair::new(client_config(), config);
    pair.client.initialize(pair.now).unwrap();
    pair.drive();
    assert!(pair.server.is_operating());
    pair.server_events.clear();
    let first = pair
        .server
        .send_request(pair.now, "ping", None, RequestOptions::DEFAULT)
        .unwrap();
    let second = pair
        .server
        .send_request(pair.now, "ping", None, RequestOptions::DEFAULT)
        .unwrap();
    assert_eq!(first, RequestId::from("r7.0"));
    assert_eq!(second, RequestId::from("r7.1"));
    pair.drive();
    let answered: Vec<&RequestId> = pair
        .server_events
        .iter()
        .filter_map(|e| match e {
            ServerEvent::Response {
                id, outcome: Ok(_), ..
            } => Some(id),
            _ => None,
        })
        .collect();
    assert_eq!(answered, [&first, &second]);
}
