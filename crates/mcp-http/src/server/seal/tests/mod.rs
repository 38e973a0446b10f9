//! Sealed ids: what opens and what does not, and two servers sharing keys and a share in one
//! process serving one session.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use mcp_protocol::schema::{
    CallToolResult, ClientRequest, ContentBlock, Implementation, ListChangedCapability,
};
use mcp_protocol::{ErrorObject, RawJson, ServerConfig};
use mcp_session::{Handler, RequestContext};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;

use super::*;
use crate::server::{HttpServerConfig, bind, serve_http};

// What a store slow to write, or a listener that missed a notice, does to the replicas.
mod resume;
mod store;

const KEY_A: [u8; KEY_LEN] = [7; KEY_LEN];
const KEY_B: [u8; KEY_LEN] = [9; KEY_LEN];

fn opened(subject: Option<&str>, made: u64) -> Opened {
    Opened {
        made,
        subject: subject.map(str::to_owned),
        initialize: RawJson::from_string(
            r#"{"capabilities":{},"clientInfo":{"name":"c","version":"1"},"protocolVersion":"2025-11-25"}"#
                .to_owned(),
        )
        .unwrap(),
    }
}

const HOUR: Duration = Duration::from_secs(3600);

#[test]
fn a_sealed_id_opens_with_its_key_and_reveals_nothing_readable() {
    let seal = SessionSeal::new(&[KEY_A], HOUR).unwrap();
    let id = seal.seal(&opened(Some("alice"), 1000)).unwrap();
    assert!(id.starts_with("s1."), "{id}");
    assert!(id.bytes().all(|b| b.is_ascii_graphic()), "{id}");
    assert!(!id.contains("alice") && !id.contains("2025"), "{id}");
    assert_eq!(seal.open(&id, 1000), Some(opened(Some("alice"), 1000)));
    // Each id is new, even for the same handshake: the nonce is random.
    assert_ne!(id, seal.seal(&opened(Some("alice"), 1000)).unwrap());
}

#[test]
fn a_tampered_id_or_one_of_an_unknown_key_or_too_old_does_not_open() {
    let seal = SessionSeal::new(&[KEY_A], HOUR).unwrap();
    let id = seal.seal(&opened(None, 1000)).unwrap();
    assert!(seal.open(&id, 1000).is_some());
    // One character changed anywhere after the prefix.
    for at in [3, id.len() / 2, id.len() - 1] {
        let mut bytes = id.clone().into_bytes();
        bytes[at] = if bytes[at] == b'A' { b'B' } else { b'A' };
        let tampered = String::from_utf8(bytes).unwrap();
        assert!(seal.open(&tampered, 1000).is_none(), "{tampered}");
    }
    let other = SessionSeal::new(&[KEY_B], HOUR).unwrap();
    assert!(other.open(&id, 1000).is_none());
    assert!(seal.open(&id, 1000 + 3600).is_some());
    assert!(seal.open(&id, 1000 + 3601).is_none());
    assert!(
        seal.open("0123456789abcdef0123456789abcdef", 1000)
            .is_none()
    );
}

#[test]
fn an_answer_crossing_replicas_is_sealed_and_opens_only_with_a_listed_key_untampered() {
    let seal = SessionSeal::new(&[KEY_A], HOUR).unwrap();
    let session = seal.seal(&opened(Some("alice"), 1000)).unwrap();
    let answer = br#"{"jsonrpc":"2.0","id":"r.1","result":{"action":"accept","content":{"secret":"hunter2"}}}"#;
    let sealed = seal.seal_answer(&session, answer).unwrap();
    // What the store carries: first, that it opens to what was sealed.
    assert_eq!(
        seal.open_answer(&sealed),
        Some((session.clone(), answer.to_vec()))
    );
    // Neither the session id nor the answer is in it in the clear.
    let carried = String::from_utf8_lossy(&sealed);
    assert!(
        !carried.contains(&session[3..]),
        "the session id is readable"
    );
    assert!(
        !carried.contains("hunter2") && !carried.contains("jsonrpc"),
        "the answer is readable"
    );
    // A store client without the key can neither read nor forge one: one byte changed, or
    // another key, and nothing opens.
    for at in [0, sealed.len() / 2, sealed.len() - 1] {
        let mut tampered = sealed.clone();
        tampered[at] ^= 1;
        assert_eq!(seal.open_answer(&tampered), None, "byte {at} changed");
    }
    assert_eq!(
        SessionSeal::new(&[KEY_B], HOUR)
            .unwrap()
            .open_answer(&sealed),
        None
    );
    assert!(
        SessionSeal::new(&[KEY_B, KEY_A], HOUR)
            .unwrap()
            .open_answer(&sealed)
            .is_some()
    );
}

#[test]
fn the_first_key_seals_and_every_listed_one_opens() {
    let old = SessionSeal::new(&[KEY_A], HOUR).unwrap();
    let rotated = SessionSeal::new(&[KEY_B, KEY_A], HOUR).unwrap();
    let by_old = old.seal(&opened(None, 5)).unwrap();
    assert!(rotated.open(&by_old, 5).is_some());
    let by_new = rotated.seal(&opened(None, 5)).unwrap();
    assert!(old.open(&by_new, 5).is_none(), "the new key sealed it");
    assert!(
        SessionSeal::new(&[KEY_B], HOUR)
            .unwrap()
            .open(&by_new, 5)
            .is_some()
    );
}

#[test]
fn a_key_of_the_wrong_length_or_none_is_refused_without_showing_it() {
    let keys: [&[u8]; 2] = [&KEY_A, b"short"];
    let e = SessionSeal::new(&keys, HOUR).unwrap_err();
    assert_eq!(e, SealError::BadKey { index: 1, len: 5 });
    assert!(!e.to_string().contains("short"));
    assert_eq!(
        SessionSeal::new::<&[u8]>(&[], HOUR).unwrap_err(),
        SealError::NoKeys
    );
    let debug = format!("{:?}", SessionSeal::new(&[KEY_A], HOUR).unwrap());
    assert!(
        debug.contains("keys: 1") && !debug.contains("7, 7"),
        "{debug}"
    );
}

/// Answers `who` with the client's name and the version its session settled on.
struct Who;

impl Handler for Who {
    async fn handle(
        &self,
        request: ClientRequest,
        context: RequestContext,
    ) -> Result<RawJson, ErrorObject> {
        let ClientRequest::CallTool(_) = request else {
            return Err(ErrorObject::new(-32601, "no".into()));
        };
        let who = context.client.as_ref().map_or("nobody".to_owned(), |c| {
            format!("{} {}", c.implementation.name, c.protocol_version)
        });
        RawJson::encode(&CallToolResult::new(vec![ContentBlock::text(who)]))
            .map_err(|e| ErrorObject::new(-32603, e.to_string()))
    }
}

/// A server with `keys` and `share`, on a port of its own.
async fn server(keys: &[[u8; KEY_LEN]], share: &Arc<LocalShare>) -> SocketAddr {
    let mut config = ServerConfig::new(Implementation::new("seal".into(), "1".into()));
    config.capabilities.tools = Some(ListChangedCapability::new());
    let mut http = HttpServerConfig::new(config);
    http.json_response = true;
    let share: Arc<dyn SessionShare> = share.clone();
    http.sealed_sessions = Some(Arc::new(
        SessionSeal::new(keys, HOUR).unwrap().with_share(share),
    ));
    let (listener, addr) = bind("127.0.0.1:0".parse().unwrap()).await.unwrap();
    tokio::spawn(serve_http(listener, http, Who));
    addr
}

/// One request on a connection of its own: the response's status line, session id and body.
async fn send(
    addr: SocketAddr,
    method: &str,
    session: Option<&str>,
    body: &str,
) -> (String, Option<String>, String) {
    let session = session
        .map(|s| format!("mcp-session-id: {s}\r\n"))
        .unwrap_or_default();
    let request = format!(
        "{method} /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n\
         accept: application/json, text/event-stream\r\n{session}connection: close\r\n\
         content-length: {}\r\n\r\n{body}",
        body.len()
    );
    let mut tcp = TcpStream::connect(addr).await.unwrap();
    tcp.write_all(request.as_bytes()).await.unwrap();
    let mut all = Vec::new();
    tokio::time::timeout(Duration::from_secs(5), tcp.read_to_end(&mut all))
        .await
        .expect("the response stalled")
        .unwrap();
    let all = String::from_utf8(all).unwrap();
    let (head, body) = all.split_once("\r\n\r\n").unwrap();
    let status = head.lines().next().unwrap().to_owned();
    let id = head
        .lines()
        .find_map(|l| l.strip_prefix("mcp-session-id: "))
        .map(str::to_owned);
    (status, id, body.to_owned())
}

const INIT: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"sealtest","version":"0","icons":[{"src":"data:image/png;base64,AAAA"}]}}}"#;
const CALL: &str =
    r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"who","arguments":{}}}"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_made_at_one_server_is_served_at_another_until_it_is_deleted() {
    let share = Arc::new(LocalShare::default());
    let a = server(&[KEY_A], &share).await;
    let b = server(&[KEY_A], &share).await;
    let (status, id, _) = send(a, "POST", None, INIT).await;
    assert!(status.contains("200"), "{status}");
    let id = id.expect("a session id");
    assert!(id.starts_with("s1.") && !id.contains("AAAA"), "{id}");
    // B never saw the handshake: it revives the session from its id, with what the client
    // declared and the version it settled on.
    let (status, _, body) = send(b, "POST", Some(&id), CALL).await;
    assert!(status.contains("200"), "{status} {body}");
    assert!(body.contains("sealtest 2025-06-18"), "{body}");
    // Ended at A, refused at B (which holds it now) and at A.
    let (status, _, _) = send(a, "DELETE", Some(&id), "").await;
    assert!(status.contains("200"), "{status}");
    for at in [b, a] {
        let (status, _, body) = send(at, "POST", Some(&id), CALL).await;
        assert!(status.contains("404"), "{status} {body}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_without_the_key_refuses_a_sealed_id() {
    let share = Arc::new(LocalShare::default());
    let a = server(&[KEY_A], &share).await;
    let b = server(&[KEY_B], &share).await;
    let (_, id, _) = send(a, "POST", None, INIT).await;
    let id = id.unwrap();
    let (status, _, body) = send(a, "POST", Some(&id), CALL).await;
    assert!(status.contains("200"), "{status} {body}");
    let (status, _, body) = send(b, "POST", Some(&id), CALL).await;
    assert!(status.contains("404"), "{status} {body}");
}

/// Calls `ask` by asking the client for its roots, and answers with the first root's URI: the
/// client's answer is what the call returns.
struct Asker;

impl Handler for Asker {
    async fn handle(
        &self,
        request: ClientRequest,
        context: RequestContext,
    ) -> Result<RawJson, ErrorObject> {
        let ClientRequest::CallTool(_) = request else {
            return Err(ErrorObject::new(-32601, "no".into()));
        };
        let roots = context
            .peer
            .request::<mcp_protocol::schema::method::ListRoots>(
                &mcp_protocol::schema::EmptyParams::new(),
                mcp_protocol::RequestOptions::DEFAULT,
            )
            .await
            .map_err(|e| ErrorObject::new(-32603, e.to_string()))?;
        let uri = roots.roots.first().map_or("none", |r| r.uri.as_str());
        RawJson::encode(&CallToolResult::new(vec![ContentBlock::text(uri)]))
            .map_err(|e| ErrorObject::new(-32603, e.to_string()))
    }
}

/// An [`Asker`] server answering in SSE (so that its request reaches the client mid-call),
/// with `keys` and `share`.
async fn asker(keys: &[[u8; KEY_LEN]], share: Arc<dyn SessionShare>) -> SocketAddr {
    let mut config = ServerConfig::new(Implementation::new("seal".into(), "1".into()));
    config.capabilities.tools = Some(ListChangedCapability::new());
    let mut http = HttpServerConfig::new(config);
    http.sealed_sessions = Some(Arc::new(
        SessionSeal::new(keys, HOUR).unwrap().with_share(share),
    ));
    let (listener, addr) = bind("127.0.0.1:0".parse().unwrap()).await.unwrap();
    tokio::spawn(serve_http(listener, http, Asker));
    addr
}

const INIT_ROOTS: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"roots":{}},"clientInfo":{"name":"roots","version":"0"}}}"#;
const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

/// A session at `addr`, through its handshake.
async fn rooted_session(addr: SocketAddr) -> String {
    let (status, id, body) = send(addr, "POST", None, INIT_ROOTS).await;
    assert!(status.contains("200"), "{status} {body}");
    let id = id.expect("a session id");
    let (status, _, body) = send(addr, "POST", Some(&id), INITIALIZED).await;
    assert!(status.contains("202"), "{status} {body}");
    id
}

/// Starts `ask` at `addr` in `session` and reads its stream until the server's `roots/list`
/// request: the connection, what was read, and the request's id.
async fn ask(addr: SocketAddr, session: &str) -> (TcpStream, String, String) {
    let body =
        r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"ask","arguments":{}}}"#;
    let request = format!(
        "POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n\
         accept: application/json, text/event-stream\r\nmcp-session-id: {session}\r\n\
         connection: close\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    let mut tcp = TcpStream::connect(addr).await.unwrap();
    tcp.write_all(request.as_bytes()).await.unwrap();
    let mut read = String::new();
    let mut buf = [0u8; 4096];
    let needle = r#""method":"roots/list""#;
    while !read.contains(needle) {
        let n = tokio::time::timeout(Duration::from_secs(5), tcp.read(&mut buf))
            .await
            .expect("no roots/list request came")
            .unwrap();
        assert!(n > 0, "the stream ended without a request: {read}");
        read.push_str(std::str::from_utf8(&buf[..n]).unwrap());
    }
    let at = read.find(needle).unwrap();
    let event = read[..at].rsplit("data: ").next().unwrap();
    let id = event
        .split(r#""id":""#)
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .expect("a string id")
        .to_owned();
    (tcp, read, id)
}

fn roots_answer(id: &str, uri: &str) -> String {
    format!(r#"{{"jsonrpc":"2.0","id":"{id}","result":{{"roots":[{{"uri":"{uri}"}}]}}}}"#)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_posted_to_another_replica_reaches_the_call_on_its_session_only() {
    let share: Arc<dyn SessionShare> = Arc::new(LocalShare::default());
    let a = asker(&[KEY_A], Arc::clone(&share)).await;
    let b = asker(&[KEY_A], Arc::clone(&share)).await;
    let mine = rooted_session(a).await;
    // Another session of this client, held at A too, whose core waits for nothing.
    let other = rooted_session(a).await;
    let (mut call, mut read, id) = ask(a, &mine).await;
    // A names itself in its request's id: `<replica>.<n>`.
    let (replica, n) = id.split_once('.').expect("a tagged id");
    assert_eq!((replica.len(), n), (16, "0"), "{id}");
    // The answer on the other session reaches A, and finds nothing there to answer.
    let (status, _, body) =
        send(b, "POST", Some(&other), &roots_answer(&id, "file:///other")).await;
    assert!(status.contains("202"), "{status} {body}");
    let (status, _, body) = send(b, "POST", Some(&mine), &roots_answer(&id, "file:///mine")).await;
    assert!(status.contains("202"), "{status} {body}");
    let mut rest = String::new();
    tokio::time::timeout(Duration::from_secs(5), call.read_to_string(&mut rest))
        .await
        .expect("the call did not end: the answer did not reach it")
        .unwrap();
    read.push_str(&rest);
    assert!(read.contains(r#""id":7,"result""#), "{read}");
    assert!(read.contains("file:///mine"), "{read}");
    assert!(!read.contains("file:///other"), "{read}");
}

/// A share whose store is down for answers.
#[derive(Default)]
struct Down(LocalShare);

impl SessionShare for Down {
    fn end<'a>(&'a self, session: &'a str, ttl: Duration) -> ShareFuture<'a, ()> {
        self.0.end(session, ttl)
    }
    fn is_ended<'a>(&'a self, session: &'a str) -> ShareFuture<'a, bool> {
        self.0.is_ended(session)
    }
    fn relay<'a>(&'a self, _: &'a str, _: Vec<u8>) -> ShareFuture<'a, usize> {
        Box::pin(std::future::ready(Err(ShareError("down".to_owned()))))
    }
    fn listen(&self, replica: &str, inbox: Inbox) {
        self.0.listen(replica, inbox);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_that_cannot_be_relayed_is_a_503_to_send_again() {
    let share: Arc<dyn SessionShare> = Arc::new(Down::default());
    let a = asker(&[KEY_A], Arc::clone(&share)).await;
    let b = asker(&[KEY_A], Arc::clone(&share)).await;
    let mine = rooted_session(a).await;
    let (_call, _, id) = ask(a, &mine).await;
    let request = roots_answer(&id, "file:///mine");
    let (status, _, body) = send(b, "POST", Some(&mine), &request).await;
    assert!(status.contains("503"), "{status} {body}");
    assert!(body.contains("replica that waits"), "{body}");
    // At the replica that waits, the same answer is taken as ever.
    let (status, _, body) = send(a, "POST", Some(&mine), &request).await;
    assert!(status.contains("202"), "{status} {body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_whose_initialized_went_to_another_replica_can_ask_its_client() {
    let share: Arc<dyn SessionShare> = Arc::new(LocalShare::default());
    let a = asker(&[KEY_A], Arc::clone(&share)).await;
    let b = asker(&[KEY_A], Arc::clone(&share)).await;
    let (status, id, body) = send(a, "POST", None, INIT_ROOTS).await;
    assert!(status.contains("200"), "{status} {body}");
    let id = id.expect("a session id");
    // The balancer sent the client's notifications/initialized to B.
    let (status, _, body) = send(b, "POST", Some(&id), INITIALIZED).await;
    assert!(status.contains("202"), "{status} {body}");
    // A may ask the client all the same, and its answer, at B, ends the call.
    let (mut call, mut read, request) = ask(a, &id).await;
    let (status, _, body) = send(b, "POST", Some(&id), &roots_answer(&request, "file:///b")).await;
    assert!(status.contains("202"), "{status} {body}");
    let mut rest = String::new();
    tokio::time::timeout(Duration::from_secs(5), call.read_to_string(&mut rest))
        .await
        .expect("the call did not end")
        .unwrap();
    read.push_str(&rest);
    assert!(read.contains("file:///b"), "{read}");
}

/// Keeps the level each session's client set (`logging/setLevel`) and answers any call with
/// it: what a handler behind a replica was told.
#[derive(Default)]
struct Leveled(std::sync::Mutex<std::collections::HashMap<mcp_session::SessionKey, String>>);

impl Handler for Leveled {
    async fn handle(
        &self,
        request: ClientRequest,
        context: RequestContext,
    ) -> Result<RawJson, ErrorObject> {
        let answer = match request {
            ClientRequest::SetLevel(set) => {
                let level = serde_json::to_value(&set.level).unwrap();
                let level = level.as_str().unwrap_or("unnamed").to_owned();
                self.0.lock().unwrap().insert(context.session, level);
                serde_json::json!({})
            }
            ClientRequest::CallTool(_) => {
                let levels = self.0.lock().unwrap();
                let level = levels.get(&context.session).map_or("none", String::as_str);
                serde_json::to_value(CallToolResult::new(vec![ContentBlock::text(format!(
                    "level {level}"
                ))]))
                .unwrap()
            }
            _ => return Err(ErrorObject::new(-32601, "no".into())),
        };
        RawJson::encode(&answer).map_err(|e| ErrorObject::new(-32603, e.to_string()))
    }
}

/// A [`Leveled`] server declaring logging, with `keys` and `share`.
async fn leveled(share: Arc<dyn SessionShare>) -> SocketAddr {
    let mut config = ServerConfig::new(Implementation::new("seal".into(), "1".into()));
    config.capabilities.tools = Some(ListChangedCapability::new());
    config.capabilities.logging = Some(mcp_protocol::JsonObject::new());
    let mut http = HttpServerConfig::new(config);
    http.json_response = true;
    http.sealed_sessions = Some(Arc::new(
        SessionSeal::new(&[KEY_A], HOUR).unwrap().with_share(share),
    ));
    let (listener, addr) = bind("127.0.0.1:0".parse().unwrap()).await.unwrap();
    tokio::spawn(serve_http(listener, http, Leveled::default()));
    addr
}

fn set_level(level: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":5,"method":"logging/setLevel","params":{{"level":"{level}"}}}}"#
    )
}

/// The level the handler behind `at` answers a call of session `id` with.
async fn level_at(at: SocketAddr, id: &str) -> String {
    let (status, _, body) = send(at, "POST", Some(id), CALL).await;
    assert!(status.contains("200"), "{status} {body}");
    let answer: Value = serde_json::from_str(&body).unwrap();
    // The call's own answer, and only it: the level told on the client's behalf was answered
    // elsewhere.
    assert_eq!(answer["id"], 2, "{body}");
    answer["result"]["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_level_set_at_one_replica_applies_at_every_replica_serving_the_session() {
    let share: Arc<dyn SessionShare> = Arc::new(LocalShare::default());
    let a = leveled(Arc::clone(&share)).await;
    let b = leveled(Arc::clone(&share)).await;
    let (_, id, _) = send(a, "POST", None, INIT).await;
    let id = id.expect("a session id");
    assert_eq!(level_at(a, &id).await, "level none");
    let (status, _, body) = send(a, "POST", Some(&id), &set_level("error")).await;
    assert!(
        status.contains("200") && body.contains(r#""result":{}"#),
        "{status} {body}"
    );
    // B revives the session and its handler hears the level before the call.
    assert_eq!(level_at(b, &id).await, "level error");
    assert_eq!(level_at(a, &id).await, "level error");
    // Set again at B: A, which holds the session and was told `error`, is told `debug`.
    let (status, _, body) = send(b, "POST", Some(&id), &set_level("debug")).await;
    assert!(status.contains("200"), "{status} {body}");
    assert_eq!(level_at(a, &id).await, "level debug");
    assert_eq!(level_at(b, &id).await, "level debug");
    // Another session of the same client keeps its own.
    let (_, other, _) = send(b, "POST", None, INIT).await;
    assert_eq!(level_at(a, &other.unwrap()).await, "level none");
}

/// A [`LocalShare`] whose store does not take levels.
#[derive(Default)]
struct NoLevels(LocalShare);

impl SessionShare for NoLevels {
    fn end<'a>(&'a self, session: &'a str, ttl: Duration) -> ShareFuture<'a, ()> {
        self.0.end(session, ttl)
    }
    fn is_ended<'a>(&'a self, session: &'a str) -> ShareFuture<'a, bool> {
        self.0.is_ended(session)
    }
    fn relay<'a>(&'a self, replica: &'a str, answer: Vec<u8>) -> ShareFuture<'a, usize> {
        self.0.relay(replica, answer)
    }
    fn listen(&self, replica: &str, inbox: Inbox) {
        self.0.listen(replica, inbox);
    }
    fn set_level<'a>(&'a self, _: &'a str, _: &'a str, _: Duration) -> ShareFuture<'a, ()> {
        Box::pin(std::future::ready(Err(ShareError("down".to_owned()))))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_level_the_store_does_not_take_is_a_503_that_the_session_never_hears() {
    let a = leveled(Arc::new(NoLevels::default())).await;
    let (_, id, _) = send(a, "POST", None, INIT).await;
    let id = id.expect("a session id");
    let (status, _, body) = send(a, "POST", Some(&id), &set_level("error")).await;
    assert!(status.contains("503"), "{status} {body}");
    assert!(body.contains("logging level"), "{body}");
    assert_eq!(level_at(a, &id).await, "level none");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_a_level_the_protocol_names_is_told_from_the_store() {
    let share = Arc::new(LocalShare::default());
    let a = leveled(share.clone()).await;
    let (_, id, _) = send(a, "POST", None, INIT).await;
    let id = id.expect("a session id");
    // What someone else wrote in the store, under the session's key.
    let key = share_key(&id);
    share.set_level(&key, "warning", HOUR).await.unwrap();
    assert_eq!(level_at(a, &id).await, "level warning");
    share
        .set_level(&key, r#"debug","_meta":{"x":1}"#, HOUR)
        .await
        .unwrap();
    assert_eq!(level_at(a, &id).await, "level warning");
    share.set_level(&key, "loud", HOUR).await.unwrap();
    assert_eq!(level_at(a, &id).await, "level warning");
}

/// Opens the standalone `GET` stream of `session` at `addr` and reads its first event's id
/// (the priming event's): the connection, kept open, and the id.
async fn standalone_event_id(addr: SocketAddr, session: &str) -> (TcpStream, String) {
    let request = format!(
        "GET /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\naccept: text/event-stream\r\n\
         mcp-session-id: {session}\r\n\r\n"
    );
    let mut tcp = TcpStream::connect(addr).await.unwrap();
    tcp.write_all(request.as_bytes()).await.unwrap();
    let mut read = String::new();
    let mut buf = [0u8; 4096];
    loop {
        if let Some(at) = read.find("\nid: ")
            && let Some(end) = read[at + 5..].find('\n')
        {
            let id = read[at + 5..at + 5 + end].trim_end().to_owned();
            return (tcp, id);
        }
        let n = tokio::time::timeout(Duration::from_secs(5), tcp.read(&mut buf))
            .await
            .expect("no event came")
            .unwrap();
        assert!(n > 0, "the stream ended without an event: {read}");
        read.push_str(std::str::from_utf8(&buf[..n]).unwrap());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn event_ids_are_unique_across_the_replicas_and_copies_serving_a_session() {
    let share = Arc::new(LocalShare::default());
    let a = server(&[KEY_A], &share).await;
    let b = server(&[KEY_A], &share).await;
    let (status, id, _) = send(a, "POST", None, INIT).await;
    assert!(status.contains("200"), "{status}");
    let id = id.expect("a session id");
    // The session's standalone stream at A, then at B (which revives the session): each
    // stream's first event has an id, and no two are the same.
    let (stream_a, at_a) = standalone_event_id(a, &id).await;
    let (stream_b, at_b) = standalone_event_id(b, &id).await;
    assert!(!at_a.is_empty() && !at_b.is_empty(), "{at_a} {at_b}");
    assert_ne!(at_a, at_b, "two replicas sent the same event id");
    // A second session at B is a second copy there: its ids are its own too.
    let (_, other, _) = send(b, "POST", None, INIT).await;
    let (_stream_c, at_c) = standalone_event_id(b, &other.expect("a session id")).await;
    assert_ne!(at_b, at_c);
    drop((stream_a, stream_b));
}

/// Keeps the resources each session subscribed to, and answers a call with them; each
/// subscribe it is asked is also sent on its channel, when it has one, for a test to await.
/// It refuses a subscribe to a `refused://` URI.
#[derive(Default)]
struct Subscribed(
    std::sync::Mutex<
        std::collections::HashMap<mcp_session::SessionKey, std::collections::BTreeSet<String>>,
    >,
    Option<tokio::sync::mpsc::UnboundedSender<String>>,
);

impl Handler for Subscribed {
    async fn handle(
        &self,
        request: ClientRequest,
        context: RequestContext,
    ) -> Result<RawJson, ErrorObject> {
        let mut subs = self.0.lock().unwrap();
        let answer = match request {
            ClientRequest::Subscribe(p) => {
                if let Some(told) = &self.1 {
                    let _ = told.send(p.uri.clone());
                }
                // What a handler refuses (the gateway: the rules, or no upstream taking it).
                if p.uri.starts_with("refused://") {
                    return Err(ErrorObject::new(-32002, format!("not found: {}", p.uri)));
                }
                subs.entry(context.session).or_default().insert(p.uri);
                serde_json::json!({})
            }
            ClientRequest::Unsubscribe(p) => {
                subs.entry(context.session).or_default().remove(&p.uri);
                serde_json::json!({})
            }
            ClientRequest::CallTool(_) => {
                let held = subs.get(&context.session).cloned().unwrap_or_default();
                let held: Vec<_> = held.into_iter().collect();
                serde_json::to_value(CallToolResult::new(vec![ContentBlock::text(format!(
                    "subs {}",
                    held.join(" ")
                ))]))
                .unwrap()
            }
            _ => return Err(ErrorObject::new(-32601, "no".into())),
        };
        RawJson::encode(&answer).map_err(|e| ErrorObject::new(-32603, e.to_string()))
    }
}

/// A [`Subscribed`] server declaring resource subscriptions, with `share`.
async fn subscribed(share: Arc<dyn SessionShare>) -> SocketAddr {
    let seal = SessionSeal::new(&[KEY_A], HOUR).unwrap().with_share(share);
    subscribed_with(Arc::new(seal), Subscribed::default()).await
}

/// A server with `handler` declaring resource subscriptions, with `seal`.
async fn subscribed_with(seal: Arc<SessionSeal>, handler: Subscribed) -> SocketAddr {
    let mut config = ServerConfig::new(Implementation::new("seal".into(), "1".into()));
    config.capabilities.tools = Some(ListChangedCapability::new());
    let mut resources = mcp_protocol::schema::ResourcesCapability::new();
    resources.subscribe = Some(true);
    config.capabilities.resources = Some(resources);
    let mut http = HttpServerConfig::new(config);
    http.json_response = true;
    http.sealed_sessions = Some(seal);
    let (listener, addr) = bind("127.0.0.1:0".parse().unwrap()).await.unwrap();
    tokio::spawn(serve_http(listener, http, handler));
    addr
}

fn subscribe(uri: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":6,"method":"resources/subscribe","params":{{"uri":"{uri}"}}}}"#
    )
}

/// What the handler behind `at` holds subscribed for session `id`.
async fn subs_at(at: SocketAddr, id: &str) -> String {
    let (status, _, body) = send(at, "POST", Some(id), CALL).await;
    assert!(status.contains("200"), "{status} {body}");
    let answer: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(answer["id"], 2, "{body}");
    answer["result"]["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_stream_replica_is_told_a_sessions_own_subscriptions_only() {
    let share = Arc::new(LocalShare::default());
    let a = subscribed(share.clone()).await;
    let b = subscribed(share.clone()).await;
    let (_, mine, _) = send(a, "POST", None, INIT).await;
    let (_, other, _) = send(a, "POST", None, INIT).await;
    let (mine, other) = (mine.unwrap(), other.unwrap());
    for (id, uri) in [(&mine, "fake://mine"), (&other, "fake://secret")] {
        let (status, _, body) = send(a, "POST", Some(id), &subscribe(uri)).await;
        assert!(status.contains("200"), "{status} {body}");
    }
    // Whoever else writes the store copies the other session's sealed subscription into this
    // one's: it is bound to the other session, and not told.
    let copied = share.subscriptions(&share_key(&other)).await.unwrap();
    assert_eq!(copied.len(), 1);
    share
        .set_subscription(&share_key(&mine), "copied", Some(copied[0].clone()), HOUR)
        .await
        .unwrap();
    // The stream opened at B: B's copy of the session is told its own subscription.
    let (_stream, _) = standalone_event_id(b, &mine).await;
    assert_eq!(subs_at(b, &mine).await, "subs fake://mine");
}

/// A [`LocalShare`] whose store does not take subscriptions.
#[derive(Default)]
struct NoSubscriptions(LocalShare);

impl SessionShare for NoSubscriptions {
    fn end<'a>(&'a self, session: &'a str, ttl: Duration) -> ShareFuture<'a, ()> {
        self.0.end(session, ttl)
    }
    fn is_ended<'a>(&'a self, session: &'a str) -> ShareFuture<'a, bool> {
        self.0.is_ended(session)
    }
    fn relay<'a>(&'a self, replica: &'a str, answer: Vec<u8>) -> ShareFuture<'a, usize> {
        self.0.relay(replica, answer)
    }
    fn listen(&self, replica: &str, inbox: Inbox) {
        self.0.listen(replica, inbox);
    }
    fn set_subscription<'a>(
        &'a self,
        _: &'a str,
        _: &'a str,
        _: Option<Vec<u8>>,
        _: Duration,
    ) -> ShareFuture<'a, Option<String>> {
        Box::pin(std::future::ready(Err(ShareError("down".to_owned()))))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscription_the_store_does_not_take_is_a_503_and_the_session_keeps_none() {
    let a = subscribed(Arc::new(NoSubscriptions::default())).await;
    let (_, id, _) = send(a, "POST", None, INIT).await;
    let id = id.expect("a session id");
    assert_eq!(subs_at(a, &id).await, "subs ");
    let body = subscribe("fake://x");
    let request = format!(
        "POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n\
         accept: application/json, text/event-stream\r\nmcp-session-id: {id}\r\n\
         connection: close\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    let mut tcp = TcpStream::connect(a).await.unwrap();
    tcp.write_all(request.as_bytes()).await.unwrap();
    let mut answer = String::new();
    tokio::time::timeout(Duration::from_secs(5), tcp.read_to_string(&mut answer))
        .await
        .expect("the response stalled")
        .unwrap();
    assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
    assert!(answer.contains("retry-after: 1\r\n"), "{answer}");
    assert!(answer.contains("resource subscription"), "{answer}");
    assert_eq!(subs_at(a, &id).await, "subs ");
}
