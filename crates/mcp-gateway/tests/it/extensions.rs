//! Passthrough mode and an upstream's extensions (`capabilities.extensions`, SEP-2133): with
//! one upstream the gateway declares the upstream's extensions and relays their requests as
//! sent, except the tasks extension's: tasks are the gateway's own (`tasks.rs` of the crate),
//! answered from its store, never relayed by id;
//! with several upstreams it cannot tell an extension request's upstream, and relays none
//! whole (a family it routes among them, such as skills, it declares itself).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use mcp_host::ServerState;
use mcp_protocol::schema::{ClientRequest, Implementation, ServerCapabilities};
use mcp_protocol::{ClientConfig, ErrorObject, RawJson, RequestOptions, ServerConfig, code};
use mcp_session::{Client, Handler, RequestContext};
use serde_json::{Value, json};

use crate::support::{
    TempDir, http_upstream as http, over_http, over_pipe, passthrough_file, serve_http, start_now,
    start_passthrough as start,
};

const SKILLS: &str = "io.modelcontextprotocol/skills";
const TASKS: &str = "io.modelcontextprotocol/tasks";
const OTHER: &str = "com.example/notes";

/// An upstream that declares three extensions and counts the extension requests it gets.
#[derive(Clone, Default)]
struct Extended {
    skills_listed: Arc<AtomicUsize>,
    tasks_asked: Arc<AtomicUsize>,
}

impl Handler for Extended {
    async fn handle(
        &self,
        request: ClientRequest,
        _context: RequestContext,
    ) -> Result<RawJson, ErrorObject> {
        let result = match request {
            ClientRequest::ListTools(_) => json!({"tools": []}),
            ClientRequest::ListSkills(_) => {
                self.skills_listed.fetch_add(1, Ordering::SeqCst);
                json!({"skills": [{
                    "uri": "skill://pdf/SKILL.md",
                    "frontmatter": {"name": "pdf", "description": "reads PDFs"},
                    "resources": [],
                }]})
            }
            ClientRequest::GetTask(_) => {
                self.tasks_asked.fetch_add(1, Ordering::SeqCst);
                json!({"taskId": "t1", "status": "working", "createdAt": "2026-01-01T00:00:00Z",
                       "lastUpdatedAt": "2026-01-01T00:00:00Z", "ttlMs": 60000})
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

fn extended_config() -> ServerConfig {
    let mut config = ServerConfig::new(Implementation::new("extended".into(), "0".into()));
    config.capabilities = serde_json::from_value::<ServerCapabilities>(json!({
        "tools": {},
        "resources": {},
        "extensions": {SKILLS: {}, TASKS: {}, OTHER: {"shared": true}},
    }))
    .unwrap();
    config
}

async fn start_extended(upstream: Extended) -> String {
    let (listener, addr) = mcp_http::bind("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    tokio::spawn(async move {
        let config = mcp_http::HttpServerConfig::new(extended_config());
        let _ = mcp_http::serve_http(listener, config, upstream).await;
    });
    format!("http://{addr}/mcp")
}

/// A client of either era (the gateway serves both).
fn client(era: &str) -> ClientConfig {
    let mut config = ClientConfig::new(Implementation::new("extensions-test".into(), "0".into()));
    if era == "handshake" {
        config.supported_versions = mcp_protocol::ProtocolVersion::HANDSHAKE.to_vec();
    }
    config
}

async fn raw(client: &Client, method: &str, params: Value) -> Result<Value, ErrorObject> {
    let params = RawJson::encode(&params).unwrap();
    match client
        .request_raw(method, Some(params), RequestOptions::DEFAULT, None)
        .await
    {
        Ok(raw) => Ok(raw.decode::<Value>().unwrap()),
        Err(e) => match e.protocol() {
            mcp_protocol::Error::Rpc { error, .. } => Err(error.clone()),
            other => panic!("{method}: not a JSON-RPC error: {other}"),
        },
    }
}

/// The extensions the gateway declared to `client`, as JSON.
fn declared(client: &Client) -> Value {
    serde_json::to_value(&client.server_info().capabilities).unwrap()["extensions"].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_upstreams_extensions_are_declared_and_relayed_but_not_tasks() {
    let dir = TempDir::new("extensions-one");
    let upstream = Extended::default();
    let url = start_extended(upstream.clone()).await;
    let gateway = start(&dir, json!({"ext": http(&url)})).await;
    let clients = [
        over_pipe(&gateway, client("handshake")).await,
        over_http(&gateway, client("handshake")).await,
        over_http(&gateway, client("stateless")).await,
    ];
    for (n, c) in clients.iter().enumerate() {
        let extensions = declared(c);
        assert_eq!(extensions[SKILLS], json!({}), "client {n}: {extensions}");
        assert_eq!(
            extensions[OTHER],
            json!({"shared": true}),
            "client {n}: {extensions}"
        );
        // The tasks extension is declared too, as the gateway's own.
        assert_eq!(extensions[TASKS], json!({}), "client {n}: {extensions}");

        let listed = raw(c, "skills/list", json!({})).await.unwrap();
        assert_eq!(
            listed["skills"][0]["frontmatter"]["name"], "pdf",
            "client {n}"
        );
        assert_eq!(upstream.skills_listed.load(Ordering::SeqCst), n + 1);

        // The gateway answers from its own store, where the upstream's id is unknown (a
        // stateless client that did not declare the extension is told it must).
        let refused = raw(c, "tasks/get", json!({"taskId": "t1"}))
            .await
            .unwrap_err();
        let expected = if n == 2 { -32021 } else { code::INVALID_PARAMS };
        assert_eq!(refused.code, expected, "client {n}");
    }
    // The upstream would have answered tasks/get; the gateway never asked it.
    assert_eq!(upstream.tasks_asked.load(Ordering::SeqCst), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_several_upstreams_no_extension_is_relayed_whole() {
    let dir = TempDir::new("extensions-two");
    let (a, b) = (Extended::default(), Extended::default());
    let (url_a, url_b) = (
        start_extended(a.clone()).await,
        start_extended(b.clone()).await,
    );
    let gateway = start(&dir, json!({"a": http(&url_a), "b": http(&url_b)})).await;
    let c = over_http(&gateway, client("handshake")).await;
    // The gateway declares its own capabilities (tools, and tasks, which it runs itself), and
    // neither upstream's extensions as they are (a family it routes among several, such as
    // skills, is its own to declare).
    let caps = serde_json::to_value(&c.server_info().capabilities).unwrap();
    assert!(caps.get("tools").is_some(), "{caps}");
    let extensions = &caps["extensions"];
    assert_eq!(extensions[TASKS], json!({}), "{caps}");
    assert!(extensions.get(OTHER).is_none(), "{caps}");
    let refused = raw(&c, "tasks/get", json!({"taskId": "t1"}))
        .await
        .unwrap_err();
    assert_eq!(refused.code, code::INVALID_PARAMS);
    assert_eq!(a.tasks_asked.load(Ordering::SeqCst), 0);
    assert_eq!(b.tasks_asked.load(Ordering::SeqCst), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_comes_after_the_upstream_connected_gets_what_it_offers() {
    // The upstream's port is bound but not served yet: the gateway serves (as `mcp-host serve`
    // does) while its upstream is still connecting.
    let (listener, addr) = mcp_http::bind("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let dir = TempDir::new("extensions-later");
    let path = passthrough_file(&dir, json!({"ext": http(&format!("http://{addr}/mcp"))}));
    let gateway = start_now(&path).await;
    let url = serve_http(&gateway, None).await;
    assert_eq!(
        gateway.host().server_status("ext").unwrap().state,
        ServerState::Connecting
    );
    let upstream = Extended::default();
    tokio::spawn(async move {
        let config = mcp_http::HttpServerConfig::new(extended_config());
        let _ = mcp_http::serve_http(listener, config, upstream).await;
    });
    let mut states = gateway.host().subscribe(None, None);
    while gateway.host().server_status("ext").unwrap().state != ServerState::Ready {
        tokio::time::timeout(std::time::Duration::from_secs(10), states.recv())
            .await
            .expect("the upstream never became ready");
    }
    for era in ["handshake", "stateless"] {
        let later = mcp_http::connect(
            mcp_http::HttpConfig::new("gateway", url.clone()),
            client(era),
        )
        .await
        .unwrap();
        let extensions = declared(&later);
        assert_eq!(
            extensions[OTHER],
            json!({"shared": true}),
            "{era}: {extensions}"
        );
        let listed = raw(&later, "skills/list", json!({})).await.unwrap();
        assert_eq!(listed["skills"][0]["frontmatter"]["name"], "pdf", "{era}");
    }
}
