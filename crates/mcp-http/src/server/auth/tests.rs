//! The hook through a real server on loopback: refusals as the hook words them, the caller
//! reaching the handler, sessions kept for the subject that started them, public documents.

use std::net::SocketAddr;
use std::sync::Arc;

use mcp_protocol::schema::{
    CallToolResult, ClientRequest, ContentBlock, Implementation, ListChangedCapability,
};
use mcp_protocol::{ErrorObject, RawJson, ServerConfig};
use mcp_session::RequestContext;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

use super::*;
use crate::server::{HttpServerConfig, bind, serve_http};

/// Lets `Bearer alice` and `Bearer bob` in, each its own subject; refuses the rest.
struct Names;

impl Authenticator for Names {
    fn authenticate<'a>(
        &'a self,
        authorization: Option<&'a [u8]>,
    ) -> Pin<Box<dyn Future<Output = Verdict> + Send + 'a>> {
        Box::pin(async move {
            match authorization.and_then(|a| a.strip_prefix(b"Bearer ")) {
                Some(name @ (b"alice" | b"bob")) => {
                    let name = String::from_utf8_lossy(name).into_owned();
                    Verdict::Allow {
                        caller: Identity::new(name.clone()),
                        subject: name,
                    }
                }
                _ => Verdict::Refuse {
                    status: StatusCode::UNAUTHORIZED,
                    challenge: HeaderValue::from_static(r#"Bearer resource_metadata="m""#),
                    reason: "who are you".to_owned(),
                },
            }
        })
    }

    fn document(&self, path: &str) -> Option<Vec<u8>> {
        (path == "/.well-known/doc").then(|| br#"{"doc":1}"#.to_vec())
    }
}

/// Answers every call with the caller's name.
struct WhoAmI;

impl Handler for WhoAmI {
    async fn handle(
        &self,
        _: ClientRequest,
        context: RequestContext,
    ) -> Result<RawJson, ErrorObject> {
        let who = context
            .caller
            .as_ref()
            .and_then(|c| c.downcast_ref::<String>())
            .cloned()
            .unwrap_or_else(|| "nobody".to_owned());
        RawJson::encode(&CallToolResult::new(vec![ContentBlock::text(&who)]))
            .map_err(|e| ErrorObject::new(-32603, e.to_string()))
    }
}

async fn send(addr: SocketAddr, head: &str, body: &str) -> String {
    let mut tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let request = format!(
        "{head}\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n\
         accept: application/json, text/event-stream\r\nconnection: close\r\n\
         content-length: {}\r\n\r\n{body}",
        body.len()
    );
    tcp.write_all(request.as_bytes()).await.unwrap();
    let mut out = String::new();
    tcp.read_to_string(&mut out).await.unwrap();
    out
}

fn header<'a>(response: &'a str, name: &str) -> Option<&'a str> {
    response.lines().find_map(|l| {
        let (n, v) = l.split_once(':')?;
        n.eq_ignore_ascii_case(name).then(|| v.trim())
    })
}

#[tokio::test]
async fn sessions_belong_to_their_caller_and_the_handler_knows_who_calls() {
    let (listener, addr) = bind("127.0.0.1:0".parse().unwrap()).await.unwrap();
    let mut server = ServerConfig::new(Implementation::new("auth-test".into(), "0".into()));
    server.capabilities.tools = Some(ListChangedCapability::new());
    server.supported_versions = mcp_protocol::ProtocolVersion::KNOWN.to_vec();
    let mut config = HttpServerConfig::new(server);
    config.authenticator = Some(Arc::new(Names));
    config.json_response = true;
    tokio::spawn(serve_http(listener, config, WhoAmI));
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}"#;

    let refused = send(addr, "POST /mcp HTTP/1.1", init).await;
    assert!(refused.starts_with("HTTP/1.1 401"), "{refused}");
    assert_eq!(
        header(&refused, "www-authenticate"),
        Some(r#"Bearer resource_metadata="m""#)
    );
    assert!(refused.contains("Unauthorized: who are you"), "{refused}");

    let started = send(
        addr,
        "POST /mcp HTTP/1.1\r\nauthorization: Bearer alice",
        init,
    )
    .await;
    assert!(started.starts_with("HTTP/1.1 200"), "{started}");
    let id = header(&started, "mcp-session-id").unwrap().to_owned();
    let as_alice = format!("authorization: Bearer alice\r\nmcp-session-id: {id}");
    let as_bob = format!("authorization: Bearer bob\r\nmcp-session-id: {id}");
    let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    let ok = send(
        addr,
        &format!("POST /mcp HTTP/1.1\r\n{as_alice}"),
        initialized,
    )
    .await;
    assert!(ok.starts_with("HTTP/1.1 202"), "{ok}");
    let call = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"x"}}"#;
    let answer = send(addr, &format!("POST /mcp HTTP/1.1\r\n{as_alice}"), call).await;
    assert!(answer.contains(r#""text":"alice""#), "{answer}");

    // Bob's valid token does not make alice's session his, whatever the method.
    for method in ["POST", "GET", "DELETE"] {
        let r = send(addr, &format!("{method} /mcp HTTP/1.1\r\n{as_bob}"), call).await;
        assert!(r.starts_with("HTTP/1.1 404"), "{method}: {r}");
    }
    let gone = send(addr, &format!("DELETE /mcp HTTP/1.1\r\n{as_alice}"), "").await;
    assert!(gone.starts_with("HTTP/1.1 200"), "{gone}");

    // A 2026-07-28 request, a session of its own: refused without a token, and its handler
    // knows its caller too.
    let stateless = r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"x","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}"#;
    let modern = "POST /mcp HTTP/1.1\r\nmcp-protocol-version: 2026-07-28\r\nmcp-method: tools/call\r\nmcp-name: x";
    let r = send(addr, modern, stateless).await;
    assert!(r.starts_with("HTTP/1.1 401"), "{r}");
    let r = send(
        addr,
        &format!("{modern}\r\nauthorization: Bearer bob"),
        stateless,
    )
    .await;
    assert!(r.contains(r#""text":"bob""#), "{r}");

    // Public documents: at their path, to a GET, without a token.
    let doc = send(addr, "GET /.well-known/doc HTTP/1.1", "").await;
    assert!(
        doc.starts_with("HTTP/1.1 200") && doc.ends_with(r#"{"doc":1}"#),
        "{doc}"
    );
    assert!(
        send(addr, "POST /.well-known/doc HTTP/1.1", "")
            .await
            .starts_with("HTTP/1.1 404")
    );
    assert!(
        send(addr, "GET /.well-known/other HTTP/1.1", "")
            .await
            .starts_with("HTTP/1.1 404")
    );
}

/// Answers every call with the name the request belongs to among replicas.
struct NameOf;

impl Handler for NameOf {
    async fn handle(
        &self,
        _: ClientRequest,
        context: RequestContext,
    ) -> Result<RawJson, ErrorObject> {
        let name = context.session_name.as_deref().unwrap_or("none").to_owned();
        RawJson::encode(&CallToolResult::new(vec![ContentBlock::text(&name)]))
            .map_err(|e| ErrorObject::new(-32603, e.to_string()))
    }
}

#[tokio::test]
async fn a_stateless_request_belongs_to_a_digest_of_its_callers_subject() {
    let (listener, addr) = bind("127.0.0.1:0".parse().unwrap()).await.unwrap();
    let mut server = ServerConfig::new(Implementation::new("auth-test".into(), "0".into()));
    server.capabilities.tools = Some(ListChangedCapability::new());
    server.supported_versions = mcp_protocol::ProtocolVersion::KNOWN.to_vec();
    let mut config = HttpServerConfig::new(server);
    config.authenticator = Some(Arc::new(Names));
    tokio::spawn(serve_http(listener, config, NameOf));
    let call = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}"#;
    let name_of = |who: &'static str| async move {
        let answer = send(
            addr,
            &format!(
                "POST /mcp HTTP/1.1\r\nauthorization: Bearer {who}\r\nmcp-protocol-version: 2026-07-28\r\nmcp-method: tools/call\r\nmcp-name: t"
            ),
            call,
        )
        .await;
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        let text = answer.split(r#""text":""#).nth(1).unwrap_or_default();
        text.split('"').next().unwrap_or_default().to_owned()
    };
    let alice = name_of("alice").await;
    assert!(
        alice.starts_with("subject-") && alice.len() == 40,
        "{alice}"
    );
    assert!(!alice.contains("alice"));
    assert_eq!(name_of("alice").await, alice, "the same at every request");
    let bob = name_of("bob").await;
    assert!(bob.starts_with("subject-"), "{bob}");
    assert_ne!(bob, alice);
}
