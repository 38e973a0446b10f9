//! Answers to the gateway's own requests to a client, through the built binary: an upstream
//! elicits in the middle of a call made at replica A, the client POSTs its answer to replica B
//! (as a round-robin balancer would), and the call completes with that answer, which crossed
//! through Redis. An answer sent on another session of the client does not answer it; with
//! Redis gone, the answer's POST is a 503 to send again. A child of `redis.rs` (its
//! redis-server), using `redis_sessions.rs`'s replicas.

use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use mcp_testkit::TempDir;
use serde_json::json;

use super::RedisServer;
use super::sessions::{Replica, shared_file};

/// A session at `at` whose client declared elicitation, through its handshake.
fn eliciting_session(at: &Replica) -> String {
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}},
        "clientInfo": {"name": "redis-answers", "version": "0"}}})
    .to_string();
    let (status, id, body) = at.send("POST", None, &init);
    assert_eq!(status, 200, "{body}");
    let id = id.expect("a session id");
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(at.send("POST", Some(&id), &initialized.to_string()).0, 202);
    id
}

/// Waits until `at` lists the upstream's `elicit` tool (the replica joins it in the
/// background).
fn upstream_ready(at: &Replica, session: &str) {
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}).to_string();
    let started = Instant::now();
    loop {
        let (status, _, body) = at.send("POST", Some(session), &list);
        assert_eq!(status, 200, "{body}");
        if body.contains("\"elicit\"") {
            return;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the upstream never listed elicit: {body}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A call of `elicit` at `at`, read until the gateway's `elicitation/create` request: the
/// connection, what was read, and the request's id.
fn elicit(at: &Replica, session: &str) -> (TcpStream, String, String) {
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": "elicit", "arguments": {}}})
    .to_string();
    let mut stream = TcpStream::connect(&at.addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    write!(
        stream,
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nMcp-Session-Id: {session}\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        at.addr,
        body.len()
    )
    .unwrap();
    let needle = r#""method":"elicitation/create""#;
    let mut read = String::new();
    let mut buf = [0u8; 4096];
    while !read.contains(needle) {
        let n = stream.read(&mut buf).expect("no elicitation/create came");
        assert!(n > 0, "the call ended without asking: {read}");
        read.push_str(std::str::from_utf8(&buf[..n]).unwrap());
    }
    let at_request = read.find(needle).unwrap();
    let event = read[..at_request].rsplit("data: ").next().unwrap();
    let id = event
        .split(r#""id":""#)
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap_or_else(|| panic!("no string id in {event}"))
        .to_owned();
    (stream, read, id)
}

fn accepted(id: &str, name: &str) -> String {
    json!({"jsonrpc": "2.0", "id": id,
        "result": {"action": "accept", "content": {"name": name}}})
    .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_posted_to_another_replica_completes_the_call() {
    tokio::task::spawn_blocking(|| {
        let mut redis = RedisServer::start();
        let dir = TempDir::new("redis-answers");
        let file = shared_file(dir.path(), "passthrough", redis.port);
        let (a, b) = (
            Replica::start(&file, dir.path()),
            Replica::start(&file, dir.path()),
        );
        let mine = eliciting_session(&a);
        // Another session of the same client, held at A too.
        let other = eliciting_session(&a);
        upstream_ready(&a, &mine);
        let (mut call, mut read, id) = elicit(&a, &mine);
        // The request's id names A: B has nothing waiting for it.
        assert!(
            id.split_once('.').is_some_and(|(r, _)| r.len() == 16),
            "{id}"
        );
        // At B: the answer on the other session goes to A, where that session waits for
        // nothing; then the answer on the call's session.
        let (status, _, body) = b.send("POST", Some(&other), &accepted(&id, "other"));
        assert_eq!(status, 202, "{body}");
        let (status, _, body) = b.send("POST", Some(&mine), &accepted(&id, "mine"));
        assert_eq!(status, 202, "{body}");
        let mut rest = String::new();
        call.read_to_string(&mut rest)
            .expect("the call did not end: the answer did not reach it");
        read.push_str(&rest);
        assert!(read.contains(r#""id":7,"result""#), "{read}");
        assert!(read.contains("mine"), "{read}");
        assert!(!read.contains("other"), "{read}");

        // Redis gone: the answer cannot cross, and its POST says to send it again.
        let (_call, _, id) = elicit(&a, &mine);
        let _ = redis.child.kill();
        let _ = redis.child.wait();
        let mut stream = TcpStream::connect(&b.addr).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        let body = accepted(&id, "mine");
        write!(
            stream,
            "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nMcp-Session-Id: {mine}\r\n\
             Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            b.addr,
            body.len()
        )
        .unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).unwrap();
        assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
        assert!(
            answer.to_ascii_lowercase().contains("retry-after: 1"),
            "{answer}"
        );
    })
    .await
    .unwrap();
}
