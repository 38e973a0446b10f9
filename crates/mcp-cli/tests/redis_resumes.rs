//! A 2026-07-28 client's retry of a suspended call at any replica, through the built binary:
//! the client calls the testkit's fake server's `elicit` (a handshake-era upstream that asks
//! mid-call) at replica A and is answered `input_required`; its retry, with the answer, at
//! replica B gets the call's result, which carries the answer: B relayed it to A through
//! Redis and answered with the outcome A wrote. The same retry sent again, at B or at C, is
//! answered that outcome, the call resumed once. A retry naming a replica that was killed is
//! told at once that the call is gone; with Redis killed, a retry elsewhere is `-32603`
//! naming Redis, never its password. A child of `redis.rs` (its redis-server), using
//! `redis_sessions.rs`'s replicas.

use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use mcp_testkit::TempDir;
use serde_json::{Value, json};

use super::sessions::{Replica, keys, shared_file};
use super::{ROOT_PASSWORD, RedisServer};

/// A 2026-07-28 `tools/call` of `elicit` at `at` (no session), declaring elicitation, with
/// `extra` in its parameters: the JSON-RPC answer.
fn call(at: &Replica, extra: Value) -> Value {
    call_as(at, None, extra)
}

/// [`call`] by the caller holding `token`, if any.
fn call_as(at: &Replica, token: Option<&str>, extra: Value) -> Value {
    let mut params = json!({"name": "elicit", "arguments": {}, "_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
    }});
    if let (Some(params), Value::Object(extra)) = (params.as_object_mut(), extra) {
        params.extend(extra);
    }
    let body =
        json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": params}).to_string();
    let token = token
        .map(|t| format!("Authorization: Bearer {t}\r\n"))
        .unwrap_or_default();
    let mut stream = TcpStream::connect(&at.addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    write!(
        stream,
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n\
         Mcp-Method: tools/call\r\nMcp-Name: elicit\r\n{token}Content-Length: {}\r\n\
         Connection: close\r\n\r\n{body}",
        at.addr,
        body.len()
    )
    .unwrap();
    let mut all = String::new();
    stream.read_to_string(&mut all).unwrap();
    let (head, body) = all.split_once("\r\n\r\n").unwrap_or((&all, ""));
    // An error of a 2026-07-28 request is also said by the status (400 for -32602).
    assert!(head.starts_with("HTTP/1.1 "), "{all}");
    // A JSON body, or an event stream whose last data line is the answer.
    let json = body
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .next_back()
        .unwrap_or(body);
    serde_json::from_str(json).unwrap_or_else(|e| panic!("{e}: {all}"))
}

/// Calls `elicit` at `at` until it is suspended (the replica joins the upstream in the
/// background): the `requestState` of its `input_required`.
fn suspended_at(at: &Replica) -> String {
    suspended_for(at, None)
}

/// [`suspended_at`] for the caller holding `token`, if any.
fn suspended_for(at: &Replica, token: Option<&str>) -> String {
    let started = Instant::now();
    loop {
        let answer = call_as(at, token, json!({}));
        let result = &answer["result"];
        if result["resultType"] == "input_required" {
            assert_eq!(
                result["inputRequests"]["upstream-0"]["method"], "elicitation/create",
                "{answer}"
            );
            return result["requestState"].as_str().unwrap().to_owned();
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "never suspended: {answer}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The retry of `state` with the client's answer, `name`.
fn retry(state: &str, name: &str) -> Value {
    json!({"requestState": state, "inputResponses": {"upstream-0":
        {"action": "accept", "content": {"name": name}}}})
}

/// The text of a call's result.
fn text_of(answer: &Value) -> String {
    answer["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no result text: {answer}"))
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_at_another_replica_resumes_the_call_once_and_a_lost_holder_or_redis_is_said() {
    tokio::task::spawn_blocking(|| {
        let mut redis = RedisServer::start();
        let dir = TempDir::new("redis-resumes");
        let file = shared_file(dir.path(), "passthrough", redis.port);
        let (a, b, mut c) = (
            Replica::start(&file, dir.path()),
            Replica::start(&file, dir.path()),
            Replica::start(&file, dir.path()),
        );

        // Suspended at A, whose name the state carries; retried at B.
        let state = suspended_at(&a);
        let named = state
            .strip_prefix("mcp-gateway/suspended/")
            .and_then(|rest| rest.split_once('.'))
            .map(|(replica, _)| replica.to_owned());
        assert!(named.as_ref().is_some_and(|r| r.len() == 16), "{state}");
        let first = call(&b, retry(&state, "mine"));
        let text = text_of(&first);
        assert!(text.contains("mine"), "{first}");
        assert!(first["result"].get("resultType") != Some(&json!("input_required")));

        // The same retry again, at B and at C: the same outcome, the call not resumed anew.
        assert_eq!(call(&b, retry(&state, "again")), first);
        assert_eq!(call(&c, retry(&state, "again")), first);
        // The outcome is in Redis under a digest, never the state itself.
        let kept = keys(&redis, "*resumed*");
        assert_eq!(kept.len(), 1, "{kept:?}");
        assert!(kept[0].starts_with("mcp-host:resumed:"), "{kept:?}");
        let sealed = state.rsplit_once('.').unwrap().1;
        assert!(sealed.len() > 40, "{state}");
        assert!(!kept[0].contains(sealed), "{kept:?}");
        // A state no replica made, naming A, is refused at B, and nothing is written for it.
        let forged = format!(
            "mcp-gateway/suspended/{}.0-0123456789abcdef",
            named.unwrap()
        );
        let refused = call(&b, retry(&forged, "forged"));
        assert_eq!(refused["error"]["code"], -32602, "{refused}");
        assert_eq!(keys(&redis, "*resumed*"), kept);

        // Suspended at C, which is then killed: the retry at B is told at once.
        let state = suspended_at(&c);
        let _ = c.child.kill();
        let _ = c.child.wait();
        let gone = call(&b, retry(&state, "late"));
        assert_eq!(gone["error"]["code"], -32602, "{gone}");
        let message = gone["error"]["message"].as_str().unwrap();
        assert!(message.contains("is gone"), "{gone}");
        // C killed after it heard the retry, before it answered: a stand-in hears what is
        // sent on C's channel and says nothing, and C's heartbeat, which lives 15 s past a
        // kill, is deleted to stand for its lapse. The retry at B is told C is gone, once its
        // heartbeat was missing for longer than a beat's interval, not after 300 s.
        let holder = state
            .strip_prefix("mcp-gateway/suspended/")
            .and_then(|rest| rest.split_once('.'))
            .map(|(replica, _)| replica.to_owned())
            .unwrap();
        let root = redis.client("");
        let _stand_in = root
            .subscribe(&[&format!("mcp-host:resumes:{holder}")])
            .unwrap();
        assert!(root.del(&format!("mcp-host:replica:{holder}")).unwrap());
        let lost = call(&b, retry(&state, "lost"));
        assert_eq!(lost["error"]["code"], -32602, "{lost}");
        let message = lost["error"]["message"].as_str().unwrap();
        assert!(message.contains(&format!("({holder}) is gone")), "{lost}");

        // Redis killed: a retry of a call suspended at A cannot reach it from B.
        let state = suspended_at(&a);
        let _ = redis.child.kill();
        let _ = redis.child.wait();
        let down = call(&b, retry(&state, "down"));
        assert_eq!(down["error"]["code"], -32603, "{down}");
        let message = down["error"]["message"].as_str().unwrap();
        assert!(
            message.contains(&format!("Redis at 127.0.0.1:{}", redis.port)),
            "{down}"
        );
        assert!(!message.contains(ROOT_PASSWORD), "{down}");
        // At A, which holds it, the retry still resumes the call.
        let held = call(&a, retry(&state, "held"));
        assert!(text_of(&held).contains("held"), "{held}");
    })
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_callers_retry_finds_nothing_at_any_replica_and_the_call_waits_for_its_own() {
    tokio::task::spawn_blocking(|| {
        let redis = RedisServer::start();
        let endpoint =
            super::rules::introspector(&[("alice-token", "alice"), ("bob-token", "bob")]);
        let issuer = endpoint.trim_end_matches("/introspect").to_owned();
        let dir = TempDir::new("redis-resumes-callers");
        let file = dir.path().join("gateway.json");
        std::fs::write(
            &file,
            json!({
                "mode": "passthrough",
                "mcpServers": {"fake": {"command": mcp_testkit::fake_server(),
                    "permission": {"default": "allow"}}},
                "auth": {"issuer": issuer, "audience": super::rules::AUDIENCE,
                    "introspection": {"endpoint": endpoint, "clientId": "gw",
                        "clientSecret": "introspection-secret"}},
                "store": {"redis": format!("redis://:${{REDIS_PASSWORD}}@127.0.0.1:{}", redis.port)},
                "cluster": {"sessionKeys": ["${MCP_SESSION_KEY}"]}
            })
            .to_string(),
        )
        .unwrap();
        let (a, b) = (
            Replica::start(&file, dir.path()),
            Replica::start(&file, dir.path()),
        );
        let state = suspended_for(&a, Some("alice-token"));
        // Bob holds Alice's state: at the replica holding the call and at another, it is a
        // state nobody made, and the call goes on waiting.
        for at in [&b, &a] {
            let refused = call_as(at, Some("bob-token"), retry(&state, "bob"));
            assert_eq!(refused["error"]["code"], -32602, "{refused}");
            let message = refused["error"]["message"].as_str().unwrap();
            assert!(message.contains("no call of this gateway waits"), "{refused}");
        }
        // Alice's retry, at B, resumes it with her answer.
        let resumed = call_as(&b, Some("alice-token"), retry(&state, "alice"));
        let text = text_of(&resumed);
        assert!(text.contains("alice"), "{resumed}");
        assert!(!text.contains("bob"), "{resumed}");
    })
    .await
    .unwrap();
}
