//! 2026-07-28 clients get the whole gateway (issue 22 §5): in passthrough mode, resource
//! updates on their `subscriptions/listen` stream, as a handshake client gets them after
//! `resources/subscribe`; in category and meta modes, an upstream's questions mid-call, as
//! `input_required`, as in passthrough mode.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_gateway::Gateway;
use mcp_protocol::schema::{
    ClientRequest, Implementation, ListenParams, ServerCapabilities, ServerNotification,
    SubscriptionFilter, method,
};
use mcp_protocol::{ClientConfig, ErrorObject, RawJson, RequestOptions, ServerConfig, code};
use mcp_session::{Client, Handler, Incoming, RequestContext};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::support::{
    Asking, TempDir, able_client, answer_requests, call, load_and_start, over_http, text,
};

/// An upstream over Streamable HTTP, in the handshake era, whose resources `notes://<name>`
/// may be subscribed to; `touch {uri}` says on its standalone stream that one changed, if
/// it was subscribed to (as a server should: it tells only who asked).
#[derive(Clone, Default)]
struct Notes {
    subscribed: Arc<Mutex<BTreeSet<String>>>,
}

impl Handler for Notes {
    async fn handle(
        &self,
        request: ClientRequest,
        context: RequestContext,
    ) -> Result<RawJson, ErrorObject> {
        let result = match request {
            ClientRequest::ListTools(_) => json!({"tools": [
                {"name": "touch", "inputSchema": {"type": "object", "properties": {"uri": {"type": "string"}}}},
            ]}),
            ClientRequest::CallTool(p) if p.name == "touch" => {
                let uri = p
                    .arguments
                    .and_then(|a| a.get("uri").and_then(Value::as_str).map(str::to_owned))
                    .unwrap_or_default();
                if self.subscribed.lock().unwrap().contains(&uri) {
                    let _ = context.peer.unrelated().notify(
                        "notifications/resources/updated",
                        RawJson::encode(&json!({ "uri": uri })).ok(),
                    );
                }
                json!({"content": [{"type": "text", "text": "touched"}]})
            }
            ClientRequest::ListResources(_) => json!({"resources": [
                {"uri": "notes://a", "name": "a"}, {"uri": "notes://b", "name": "b"},
            ]}),
            ClientRequest::Subscribe(p) => {
                self.subscribed.lock().unwrap().insert(p.uri);
                json!({})
            }
            ClientRequest::Unsubscribe(p) => {
                self.subscribed.lock().unwrap().remove(&p.uri);
                json!({})
            }
            other => {
                return Err(ErrorObject::new(
                    code::METHOD_NOT_FOUND,
                    other.method().to_owned(),
                ));
            }
        };
        Ok(RawJson::encode(&result).unwrap())
    }
}

async fn start_notes() -> String {
    serve_notes(Notes::default()).await
}

/// Serves `notes` (whose `subscribed` the test may watch); gives its URL.
async fn serve_notes(notes: Notes) -> String {
    let mut config = ServerConfig::new(Implementation::new("notes".into(), "0".into()));
    config.supported_versions = mcp_protocol::ProtocolVersion::HANDSHAKE.to_vec();
    config.capabilities = serde_json::from_value::<ServerCapabilities>(
        json!({"tools": {}, "resources": {"subscribe": true}}),
    )
    .unwrap();
    let (listener, addr) = mcp_http::bind("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    tokio::spawn(async move {
        let _ =
            mcp_http::serve_http(listener, mcp_http::HttpServerConfig::new(config), notes).await;
    });
    format!("http://{addr}/mcp")
}

async fn start(dir: &TempDir, url: &str) -> Gateway {
    let file = json!({
        "mode": "passthrough",
        "mcpServers": {"notes": {"type": "http", "url": url, "permission": {"default": "allow"}}},
        "logFile": dir.path().join("gateway.log"),
    });
    let path = dir.path().join("gateway.json");
    std::fs::write(&path, serde_json::to_vec_pretty(&file).unwrap()).unwrap();
    load_and_start(&path).await
}

/// A client of the 2026-07-28 era.
fn stateless_config() -> ClientConfig {
    let mut config = crate::support::plain_client("stateless-test");
    config.supported_versions = mcp_protocol::ProtocolVersion::KNOWN.to_vec();
    config
}

/// Opens a `subscriptions/listen` stream on `client` for updates of `uri`, and waits for its
/// acknowledgement; the stream stays open while the returned task lives.
async fn listen(
    client: &Client,
    incoming: &mut mpsc::Receiver<Incoming>,
    uri: &str,
) -> tokio::task::JoinHandle<()> {
    let mut filter = SubscriptionFilter::new();
    filter.resource_subscriptions = Some(vec![uri.to_owned()]);
    let params = ListenParams::new(filter);
    let listening = client.clone();
    let task = tokio::spawn(async move {
        let _ = listening
            .request::<method::Listen>(
                &params,
                RequestOptions::DEFAULT.timeout(Duration::from_secs(60)),
            )
            .await;
    });
    let acknowledged = tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            if let Some(Incoming::Notification(ServerNotification::SubscriptionsAcknowledged(
                ack,
            ))) = incoming.recv().await
            {
                return ack;
            }
        }
    })
    .await
    .expect("the listen stream is acknowledged");
    assert_eq!(
        acknowledged.notifications.resource_subscriptions,
        Some(vec![uri.to_owned()]),
        "the gateway honours the resource subscription"
    );
    task
}

/// The URIs of the `resources/updated` notifications waiting in `incoming`, within `wait`.
async fn updates(incoming: &mut mpsc::Receiver<Incoming>, wait: Duration) -> Vec<String> {
    let mut uris = Vec::new();
    let _ = tokio::time::timeout(wait, async {
        while let Some(item) = incoming.recv().await {
            if let Incoming::Notification(ServerNotification::ResourceUpdated(p)) = item {
                uris.push(p.uri);
            }
        }
    })
    .await;
    uris
}

/// A 2026-07-28 client's `subscriptions/listen` stream gets the upstream's `resources/updated`
/// for the URI it asked for (each one, none for another URI); a second such client listening
/// for another URI gets only that one's. Before, the gateway neither subscribed upstream nor
/// passed updates to listen streams: 0 events.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stateless_clients_listen_stream_gets_resource_updates() {
    let dir = TempDir::new("stateless-listen");
    let gateway = start(&dir, &start_notes().await).await;
    let (a, b) = (
        over_http(&gateway, stateless_config()).await,
        over_http(&gateway, stateless_config()).await,
    );
    assert_eq!(a.server_info().era, mcp_protocol::Era::Stateless);
    let toucher = over_http(&gateway, crate::support::plain_client("toucher")).await;
    let (mut a_in, mut b_in) = (a.take_incoming().unwrap(), b.take_incoming().unwrap());
    let _a_listens = listen(&a, &mut a_in, "notes://a").await;
    let _b_listens = listen(&b, &mut b_in, "notes://b").await;

    // The upstream subscription is made as the stream opens, apart from it: touch until the
    // first update comes through (presence), then count.
    let first = tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            call(&toucher, "touch", json!({"uri": "notes://a"})).await;
            if !updates(&mut a_in, Duration::from_millis(100))
                .await
                .is_empty()
            {
                return;
            }
        }
    })
    .await;
    assert!(first.is_ok(), "no resources/updated on the listen stream");
    let _ = updates(&mut a_in, Duration::from_millis(200)).await;
    for _ in 0..3 {
        call(&toucher, "touch", json!({"uri": "notes://a"})).await;
    }
    assert_eq!(
        updates(&mut a_in, Duration::from_millis(500)).await,
        vec!["notes://a"; 3]
    );
    // B listens for notes://b only: it gets that one's update and none of notes://a's.
    let first_b = tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            call(&toucher, "touch", json!({"uri": "notes://b"})).await;
            let got = updates(&mut b_in, Duration::from_millis(100)).await;
            if !got.is_empty() {
                return got;
            }
        }
    })
    .await
    .expect("B's listen stream gets notes://b's update");
    assert!(first_b.iter().all(|u| u == "notes://b"), "{first_b:?}");
    assert!(
        updates(&mut a_in, Duration::from_millis(300))
            .await
            .is_empty(),
        "A did not ask for notes://b"
    );
    gateway.shutdown().await;
}

/// Waits (up to 10 s, looking every 10 ms) until `done` holds; whether it did.
async fn eventually(done: impl Fn() -> bool) -> bool {
    tokio::time::timeout(Duration::from_secs(10), async {
        while !done() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .is_ok()
}

/// The upstream subscription to a URI is counted over every client that wants it: handshake
/// clients' `resources/subscribe` and 2026-07-28 clients' listen streams. A handshake client's
/// `resources/unsubscribe` keeps it while a listen stream still asks for the URI, and the
/// last stream to close ends it upstream. Before, the unsubscribe ended it under the open
/// stream, and a closed stream never ended it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_upstream_subscription_ends_with_the_last_client_that_wants_it() {
    let dir = TempDir::new("stateless-unlisten");
    let notes = Notes::default();
    let gateway = start(&dir, &serve_notes(notes.clone()).await).await;
    let subscribed = || notes.subscribed.lock().unwrap().contains("notes://a");
    let (a, b) = (
        over_http(&gateway, stateless_config()).await,
        over_http(&gateway, stateless_config()).await,
    );
    let handshake = over_http(&gateway, crate::support::plain_client("subscriber")).await;
    let (mut a_in, mut b_in) = (a.take_incoming().unwrap(), b.take_incoming().unwrap());
    let a_listens = listen(&a, &mut a_in, "notes://a").await;
    let b_listens = listen(&b, &mut b_in, "notes://a").await;
    assert!(eventually(subscribed).await, "never subscribed upstream");
    let uri = RawJson::encode(&json!({"uri": "notes://a"})).unwrap();
    handshake
        .request_raw(
            "resources/subscribe",
            Some(uri.clone()),
            RequestOptions::DEFAULT,
            None,
        )
        .await
        .unwrap();

    // A's stream closes and the handshake client unsubscribes: B's stream still asks.
    a_listens.abort();
    let _ = a_listens.await;
    handshake
        .request_raw(
            "resources/unsubscribe",
            Some(uri),
            RequestOptions::DEFAULT,
            None,
        )
        .await
        .unwrap();
    assert!(
        subscribed(),
        "unsubscribed upstream while a listen stream asks for it"
    );

    // The last one closes: the upstream is told, nobody wants the updates any more.
    b_listens.abort();
    let _ = b_listens.await;
    assert!(
        eventually(|| !subscribed()).await,
        "still subscribed upstream after the last listen stream closed"
    );

    // A handshake client that leaves without unsubscribing counts as one that did.
    let leaving = over_http(&gateway, crate::support::plain_client("leaving")).await;
    let uri = RawJson::encode(&json!({"uri": "notes://a"})).unwrap();
    leaving
        .request_raw(
            "resources/subscribe",
            Some(uri),
            RequestOptions::DEFAULT,
            None,
        )
        .await
        .unwrap();
    assert!(subscribed(), "subscribed again for the handshake client");
    leaving.close().await;
    assert!(
        eventually(|| !subscribed()).await,
        "still subscribed upstream after its only subscriber left"
    );
    gateway.shutdown().await;
}

/// The gateway file of `mode` over two upstreams that ask their client something mid-call:
/// the testkit's fake over stdio in the handshake era (its `sample` tool sends
/// `sampling/createMessage`) and [`Asking`] over HTTP in the stateless era (its `ask` tool
/// answers `input_required`).
fn asking_file(dir: &TempDir, mode: &str, asking: &str) -> std::path::PathBuf {
    let fake = json!({
        "command": mcp_testkit::fake_server().display().to_string(),
        "permission": {"default": "allow"},
    });
    let asking = json!({"type": "http", "url": asking, "permission": {"default": "allow"}});
    let mut file = json!({
        "mode": mode,
        "mcpServers": {"fake": fake, "asking": asking},
        "logFile": dir.path().join("gateway.log"),
    });
    if mode == "category" {
        file["categories"] = json!({"asks": {
            "description": "Tools that ask.",
            "servers": ["fake", "asking"],
            "tools": {"includeNames": ["mcp__fake__sample", "mcp__asking__ask"]},
        }});
    }
    let path = dir.path().join("gateway.json");
    std::fs::write(&path, serde_json::to_vec_pretty(&file).unwrap()).unwrap();
    path
}

/// Category and meta modes pass an upstream's questions to a 2026-07-28 client as
/// `input_required` on their own `call-tool`, and its retry's answers reach the upstream:
/// a handshake upstream's request mid-call (the call is suspended) and a stateless upstream's
/// own `input_required` (passed on; its retry carries the upstream's `requestState`). Before,
/// both modes answered such a client with a tool error saying it could not be asked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn category_and_meta_modes_ask_a_stateless_client_with_input_required() {
    for mode in ["category", "meta"] {
        let dir = TempDir::new("stateless-asks");
        let (asking, url) = Asking::serve().await;
        let gateway = load_and_start(&asking_file(&dir, mode, &url)).await;
        let mut config = able_client();
        config.supported_versions = mcp_protocol::ProtocolVersion::KNOWN.to_vec();
        let client = over_http(&gateway, config).await;
        assert_eq!(client.server_info().era, mcp_protocol::Era::Stateless);
        answer_requests(&client);
        let tool = if mode == "category" {
            "call-category-tool"
        } else {
            "call-tool"
        };
        let arguments = |server: &str, tool: &str| match mode {
            "category" => {
                json!({"category": "asks", "name": format!("mcp__{server}__{tool}"), "args": {}})
            }
            _ => json!({"server": server, "tool": tool, "arguments": {}}),
        };
        // Our session's multi round-trip driver answers each `input_required` and retries.
        let sampled = call(&client, tool, arguments("fake", "sample")).await;
        assert_eq!(sampled.is_error, None, "{mode}: {}", text(&sampled));
        assert!(
            text(&sampled).contains("sampled by the client"),
            "{mode}: {}",
            text(&sampled)
        );
        let confirmed = call(&client, tool, arguments("asking", "ask")).await;
        assert_eq!(text(&confirmed), "confirmed", "{mode}");
        let seen = asking.0.lock().unwrap().len();
        assert_eq!(
            seen, 2,
            "{mode}: the upstream saw the first call and its retry"
        );
        gateway.shutdown().await;
    }
}
