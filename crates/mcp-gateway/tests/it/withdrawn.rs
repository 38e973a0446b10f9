//! An upstream that withdraws its question to the client (`notifications/cancelled`: it gave up
//! waiting) has it withdrawn from the gateway's client too, under the id the client was asked
//! with, so that nobody goes on answering a question nobody waits for.

use std::time::Duration;

use mcp_protocol::schema::{ClientRequest, Implementation, ServerCapabilities};
use mcp_protocol::{ErrorObject, RawJson, RequestOptions, ServerConfig, code};
use mcp_session::{Handler, Incoming, RequestContext};
use serde_json::json;

use crate::support::{
    TempDir, able_client, call, http_upstream, over_http, start_passthrough, text,
};

/// `ask`: asks the client a name, gives up after 300 ms, and says so.
#[derive(Clone)]
struct Impatient;

impl Handler for Impatient {
    async fn handle(
        &self,
        request: ClientRequest,
        context: RequestContext,
    ) -> Result<RawJson, ErrorObject> {
        let result = match request {
            ClientRequest::ListTools(_) => json!({"tools": [
                {"name": "ask", "inputSchema": {"type": "object"}},
            ]}),
            ClientRequest::CallTool(_) => {
                let elicit = json!({
                    "message": "your name?",
                    "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}},
                });
                let asked = context.peer.request_raw(
                    "elicitation/create",
                    RawJson::encode(&elicit).ok(),
                    RequestOptions::DEFAULT,
                );
                let said = match tokio::time::timeout(Duration::from_millis(300), asked).await {
                    Ok(_) => "answered",
                    Err(_) => "gave up",
                };
                json!({"content": [{"type": "text", "text": said}]})
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_the_upstream_withdraws_is_withdrawn_from_the_client() {
    let mut config = ServerConfig::new(Implementation::new("impatient".into(), "0".into()));
    config.capabilities =
        serde_json::from_value::<ServerCapabilities>(json!({"tools": {}})).unwrap();
    let (listener, addr) = mcp_http::bind("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    tokio::spawn(async move {
        let _ = mcp_http::serve_http(listener, mcp_http::HttpServerConfig::new(config), Impatient)
            .await;
    });
    let dir = TempDir::new("withdrawn");
    let gateway = start_passthrough(
        &dir,
        json!({"impatient": http_upstream(&format!("http://{addr}/mcp"))}),
    )
    .await;
    let client = over_http(&gateway, able_client()).await;
    let mut incoming = client.take_incoming().unwrap();
    // The client never answers; it watches what comes.
    let watcher = tokio::spawn(async move {
        let mut asked = None;
        while let Some(item) = incoming.recv().await {
            match item {
                Incoming::Request { id, request, .. }
                    if request.method() == "elicitation/create" =>
                {
                    asked = Some(id);
                }
                Incoming::Cancelled { id } => return (asked, Some(id)),
                _ => {}
            }
        }
        (asked, None)
    });
    let result = call(&client, "ask", json!({})).await;
    assert_eq!(text(&result), "gave up");
    let (asked, withdrawn) = tokio::time::timeout(Duration::from_secs(10), watcher)
        .await
        .expect("the question was never withdrawn from the client")
        .unwrap();
    let asked = asked.expect("the client was asked");
    assert_eq!(withdrawn, Some(asked));
}
