//! Every client sees only its own traffic (issue 22 §2): several clients call through one
//! gateway at once, and the upstream's elicitation and log entry of each call reach the client
//! whose call it is, and no other.
//!
//! The upstream here is an in-process Streamable HTTP server whose tool writes a log entry and
//! elicits on its call's own response stream, as SPEC.md §4.3 says a server should: that is how
//! the gateway learns whose call a message belongs to. It holds every call until all of them
//! are in flight, so that the gateway cannot tell them apart by who is waiting.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_gateway::Gateway;
use mcp_protocol::schema::{
    ClientRequest, ElicitationCapability, Implementation, LoggingLevel, ServerCapabilities,
    ServerNotification,
};
use mcp_protocol::{ClientConfig, ErrorObject, RawJson, RequestOptions, ServerConfig, code};
use mcp_session::{Client, Handler, Incoming, RequestContext};
use serde_json::{Value, json};
use tokio::sync::Barrier;

use crate::support::{TempDir, call, http_upstream, over_http, over_pipe, start_passthrough, text};

/// How many clients call at once.
const CLIENTS: usize = 3;

/// The upstream: `ask {name}` logs `log for <name>`, waits until every client's call is in,
/// then elicits `who answers for <name>?` and returns `<name> answered by <what came back>`.
#[derive(Clone)]
struct Asker {
    all_in: Arc<Barrier>,
}

impl Handler for Asker {
    async fn handle(
        &self,
        request: ClientRequest,
        context: RequestContext,
    ) -> Result<RawJson, ErrorObject> {
        let result = match request {
            ClientRequest::ListTools(_) => json!({"tools": [
                {"name": "ask", "inputSchema": {"type": "object", "properties": {"name": {"type": "string"}}}},
            ]}),
            ClientRequest::CallTool(p) if p.name == "ask" => {
                let name = p
                    .arguments
                    .as_ref()
                    .and_then(|a| a.get("name"))
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned();
                let entry =
                    json!({"level": "info", "logger": "asker", "data": format!("log for {name}")});
                let _ = context
                    .peer
                    .notify("notifications/message", RawJson::encode(&entry).ok());
                if tokio::time::timeout(Duration::from_secs(10), self.all_in.wait())
                    .await
                    .is_err()
                {
                    return Err(ErrorObject::new(
                        code::INTERNAL_ERROR,
                        "not every call came in".to_owned(),
                    ));
                }
                let elicit = json!({
                    "message": format!("who answers for {name}?"),
                    "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}},
                });
                let answer = context
                    .peer
                    .request_raw(
                        "elicitation/create",
                        RawJson::encode(&elicit).ok(),
                        RequestOptions::DEFAULT,
                    )
                    .await;
                let by = match answer {
                    Ok(raw) => raw.decode::<Value>().unwrap()["content"]["name"]
                        .as_str()
                        .unwrap_or("nobody")
                        .to_owned(),
                    Err(e) => format!("refused: {e}"),
                };
                json!({"content": [{"type": "text", "text": format!("{name} answered by {by}")}]})
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

/// Starts the asker over Streamable HTTP on a loopback port; returns its URL.
async fn start_asker() -> String {
    let mut config = ServerConfig::new(Implementation::new("asker".into(), "0".into()));
    config.capabilities =
        serde_json::from_value::<ServerCapabilities>(json!({"tools": {}, "logging": {}})).unwrap();
    let (listener, addr) = mcp_http::bind("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let asker = Asker {
        all_in: Arc::new(Barrier::new(CLIENTS)),
    };
    tokio::spawn(async move {
        let _ =
            mcp_http::serve_http(listener, mcp_http::HttpServerConfig::new(config), asker).await;
    });
    format!("http://{addr}/mcp")
}

async fn start(dir: &TempDir, url: &str) -> Gateway {
    start_passthrough(dir, json!({"asker": http_upstream(url)})).await
}

/// A client that declares form elicitation, in the handshake era (2025-11-25) or, with
/// `stateless`, the 2026-07-28 era.
fn client_config(stateless: bool) -> ClientConfig {
    let mut config = crate::support::plain_client("isolation-test");
    if stateless {
        config.supported_versions = mcp_protocol::ProtocolVersion::KNOWN.to_vec();
        // That era has no logging/setLevel: the level travels with each request.
        config.log_level = Some(LoggingLevel::Info);
    }
    config.capabilities.elicitation =
        serde_json::from_value::<ElicitationCapability>(json!({"form": {}})).ok();
    config
}

/// What one client saw: the elicitation messages it was asked and the log entries it got.
#[derive(Default)]
struct Seen {
    asked: Vec<String>,
    logs: Vec<String>,
}

/// Answers every elicitation reaching `client` with `label`, recording what it was asked and
/// which log entries it got.
fn watch(client: &Client, label: String) -> Arc<Mutex<Seen>> {
    let seen = Arc::new(Mutex::new(Seen::default()));
    let mut incoming = client.take_incoming().unwrap();
    let (client, record) = (client.clone(), Arc::clone(&seen));
    tokio::spawn(async move {
        while let Some(item) = incoming.recv().await {
            match item {
                Incoming::Request { id, request, .. } => {
                    let params = request.encode_params().unwrap().unwrap();
                    let message = params.decode::<Value>().unwrap()["message"]
                        .as_str()
                        .unwrap_or_default()
                        .to_owned();
                    record.lock().unwrap().asked.push(message);
                    let result = json!({"action": "accept", "content": {"name": label}});
                    let _ = client.respond(&id, Ok(RawJson::encode(&result).unwrap()));
                }
                Incoming::Notification(ServerNotification::LoggingMessage(entry)) => {
                    let data = entry.data.as_str().unwrap_or_default().to_owned();
                    record.lock().unwrap().logs.push(data);
                }
                _ => {}
            }
        }
    });
    seen
}

/// `CLIENTS` clients of the gateway (over HTTP, or over pipes) call `ask` at once: each is
/// asked its own call's question only, its answer goes to its own call, and each gets its own
/// call's log entry and no other's.
async fn each_client_sees_only_its_own(gateway: &Gateway, over: &str, stateless: bool) {
    let mut clients = Vec::new();
    for i in 0..CLIENTS {
        let config = client_config(stateless);
        let client = match over {
            "http" => over_http(gateway, config).await,
            _ => over_pipe(gateway, config).await,
        };
        let label = format!("client-{i}");
        let seen = watch(&client, label.clone());
        clients.push((client, label, seen));
    }
    let calls: Vec<_> = clients
        .iter()
        .map(|(client, label, _)| {
            let (client, name) = (client.clone(), format!("call-of-{label}"));
            tokio::spawn(async move { text(&call(&client, "ask", json!({ "name": name })).await) })
        })
        .collect();
    for (handle, (_, label, seen)) in calls.into_iter().zip(&clients) {
        let answered = handle.await.unwrap();
        // The answer to this call's question came from this call's client.
        assert_eq!(
            answered,
            format!("call-of-{label} answered by {label}"),
            "over {over}, stateless {stateless}"
        );
        let asked = seen.lock().unwrap().asked.clone();
        assert_eq!(
            asked,
            vec![format!("who answers for call-of-{label}?")],
            "{label} over {over}, stateless {stateless}"
        );
    }
    // Presence first: each client gets its own call's log entry...
    for (_, label, seen) in &clients {
        let own = format!("log for call-of-{label}");
        let arrived = tokio::time::timeout(Duration::from_secs(5), async {
            while !seen.lock().unwrap().logs.contains(&own) {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
        .await;
        assert!(arrived.is_ok(), "{label} over {over}: no {own}");
    }
    // ...then absence: a moment later, still none of another call's.
    tokio::time::sleep(Duration::from_millis(300)).await;
    for (_, label, seen) in &clients {
        let logs = seen.lock().unwrap().logs.clone();
        assert_eq!(
            logs,
            vec![format!("log for call-of-{label}")],
            "{label} over {over}, stateless {stateless}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn handshake_clients_each_get_only_their_own_requests_and_logs() {
    let dir = TempDir::new("isolation-handshake");
    let gateway = start(&dir, &start_asker().await).await;
    for over in ["http", "pipe"] {
        each_client_sees_only_its_own(&gateway, over, false).await;
    }
    gateway.shutdown().await;
}

/// The same with 2026-07-28 clients, which cannot be sent a request mid-call: each is
/// answered `input_required` with its own call's question only, and its retry's answer goes
/// to its own suspended upstream call (issue 22 §5, the fourth pair).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stateless_clients_each_get_only_their_own_requests_and_logs() {
    let dir = TempDir::new("isolation-stateless");
    let gateway = start(&dir, &start_asker().await).await;
    for over in ["http", "pipe"] {
        each_client_sees_only_its_own(&gateway, over, true).await;
    }
    gateway.shutdown().await;
}
