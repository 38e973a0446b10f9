//! The rules' rate limits shared through Redis, through the built binary: two processes of
//! `mcp-host serve --http` with one `store` block and a rule allowing a caller a few calls a
//! minute. Calls alternate between the processes, and the one past the limit is refused with
//! the wait, whichever process gets it; another caller is not limited. With Redis stopped, a
//! limited call is refused (the counters cannot be kept: fail closed), naming Redis and
//! never its password, while a call no limit covers still goes. A child of `redis.rs` (its
//! redis-server).
//!
//! Callers hold opaque tokens that an introspection endpoint of this test's own answers, so
//! that both processes take the same tokens without keys to publish.

use std::collections::HashMap;
use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::process::Child;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_host::redis::Reply;
use mcp_testkit::TempDir;
use serde_json::{Value, json};

use super::{ROOT_PASSWORD, RedisServer};

/// The audience both processes take tokens for (their ports differ).
pub(super) const AUDIENCE: &str = "https://gateway.test/mcp";

/// An RFC 7662 endpoint on loopback answering `active` for the tokens it was given, by
/// token, and `{"active": false}` for any other. Its thread ends with the test.
pub(super) fn introspector(subjects: &[(&str, &str)]) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/introspect", listener.local_addr().unwrap());
    let exp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        + 600;
    let answers: HashMap<String, Value> = subjects
        .iter()
        .map(|(token, sub)| {
            let answer = json!({"active": true, "aud": AUDIENCE, "sub": sub,
                "exp": exp, "token_type": "Bearer"});
            ((*token).to_owned(), answer)
        })
        .collect();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut length = 0;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                let (name, value) = line.split_once(':').unwrap_or_default();
                if name.eq_ignore_ascii_case("content-length") {
                    length = value.trim().parse().unwrap_or(0);
                }
            }
            let mut body = vec![0; length];
            let _ = reader.read_exact(&mut body);
            // The tokens here need no percent-decoding.
            let body = String::from_utf8_lossy(&body).into_owned();
            let token = body
                .split('&')
                .find_map(|p| p.strip_prefix("token="))
                .unwrap_or_default();
            let answer = answers
                .get(token)
                .cloned()
                .unwrap_or(json!({"active": false}))
                .to_string();
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{answer}",
                answer.len()
            );
        }
    });
    url
}

/// One gateway process over HTTP on a free loopback port, its log kept; killed when dropped.
struct Replica {
    child: Child,
    addr: String,
    log: Arc<Mutex<String>>,
}

impl Replica {
    fn start(file: &std::path::Path, home: &std::path::Path) -> Self {
        let (child, addr, stderr, seen) = super::sessions::spawn(file, home, &[]);
        let log = Arc::new(Mutex::new(seen));
        let kept = log.clone();
        std::thread::spawn(move || {
            for line in stderr.lines() {
                let Ok(line) = line else { break };
                let mut log = kept.lock().unwrap();
                log.push_str(&line);
                log.push('\n');
            }
        });
        Self { child, addr, log }
    }

    /// One request on a connection of its own: the status, the session id it gave and the
    /// JSON-RPC response (sent as JSON or as the SSE event holding it).
    fn send(
        &self,
        token: &str,
        session: Option<&str>,
        body: &Value,
    ) -> (u16, Option<String>, Value) {
        let mut stream = TcpStream::connect(&self.addr).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        let session = session
            .map(|s| format!("Mcp-Session-Id: {s}\r\n"))
            .unwrap_or_default();
        let body = body.to_string();
        write!(
            stream,
            "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nAuthorization: Bearer {token}\r\n\
             {session}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            self.addr,
            body.len()
        )
        .unwrap();
        let mut all = String::new();
        stream.read_to_string(&mut all).unwrap();
        let (head, body) = all.split_once("\r\n\r\n").unwrap_or((&all, ""));
        let id = head.lines().find_map(|l| {
            let (n, v) = l.split_once(':')?;
            n.eq_ignore_ascii_case("mcp-session-id")
                .then(|| v.trim().to_owned())
        });
        let body = body.trim();
        let message = if body.starts_with('{') {
            serde_json::from_str(body).unwrap_or(Value::Null)
        } else {
            body.lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
                .find(|m| m.get("id").is_some())
                .unwrap_or(Value::Null)
        };
        (head[9..12].parse().unwrap(), id, message)
    }

    /// A session of the caller holding `token`.
    fn session(&self, token: &str) -> String {
        let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "redis-rules", "version": "0"}}});
        let (status, id, answer) = self.send(token, None, &init);
        assert_eq!(status, 200, "{answer}\n{}", self.log());
        let id = id.expect("a session id");
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        assert_eq!(self.send(token, Some(&id), &initialized).0, 202);
        id
    }

    /// Waits until the upstream, which the process joins in the background, is listed (a
    /// listing counts against no limit).
    fn wait_for_echo(&self, token: &str, session: &str) {
        let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
        for _ in 0..200 {
            let (_, _, answer) = self.send(token, Some(session), &list);
            if answer.to_string().contains(r#""name":"echo""#) {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("echo never listed at {}: {}", self.addr, self.log());
    }

    /// `tools/call` of `echo`: its result.
    fn call(&self, token: &str, session: &str) -> Value {
        let call = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
            "params": {"name": "echo", "arguments": {}}});
        let (status, _, answer) = self.send(token, Some(session), &call);
        assert_eq!(status, 200, "{answer}");
        assert!(answer["result"].is_object(), "{answer}");
        answer["result"].clone()
    }

    fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Whether a call's result is the upstream's answer.
fn went(result: &Value) -> bool {
    result["isError"] != json!(true) && result["content"][0]["text"] == "called"
}

/// The rate-limit refusal in a call's result: its message and wait.
fn limited(result: &Value) -> (String, u64) {
    let error = &result["structuredContent"]["error"];
    assert_eq!(result["isError"], json!(true), "{result}");
    assert_eq!(error["kind"], "RateLimited", "{result}");
    let wait = error["retryAfterSeconds"]
        .as_u64()
        .unwrap_or_else(|| panic!("no retryAfterSeconds: {result}"));
    (error["message"].as_str().unwrap().to_owned(), wait)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_gateways_share_a_callers_rate_limit_in_redis_and_refuse_when_it_is_gone() {
    let upstream = mcp_testkit::fake_http::FakeHttp::start().await;
    let url = upstream.url.clone();
    let seen = tokio::task::spawn_blocking(move || {
        let mut redis = RedisServer::start();
        let endpoint = introspector(&[("alice-token", "alice"), ("bob-token", "bob")]);
        let issuer = endpoint.trim_end_matches("/introspect").to_owned();
        let dir = TempDir::new("redis-rules");
        let file = dir.path().join("gateway.json");
        std::fs::write(
            &file,
            json!({
                "mode": "passthrough",
                "mcpServers": {"up": {"type": "http", "url": url,
                    "permission": {"default": "allow"}}},
                "auth": {"issuer": issuer, "audience": AUDIENCE,
                    "introspection": {"endpoint": endpoint, "clientId": "gw",
                        "clientSecret": "introspection-secret"}},
                "rules": [
                    {"name": "alice-three", "effect": "allow", "when": {"sub": ["alice"]},
                     "upstreams": ["up"], "rateLimit": {"callsPerMinute": 3}},
                    {"name": "everyone", "effect": "allow"}
                ],
                "store": {"redis": format!("redis://:${{REDIS_PASSWORD}}@127.0.0.1:{}", redis.port),
                    "prefix": "rules-test"}
            })
            .to_string(),
        )
        .unwrap();
        let replicas = [
            Replica::start(&file, dir.path()),
            Replica::start(&file, dir.path()),
        ];
        let sessions =
            |token: &str| -> Vec<String> { replicas.iter().map(|r| r.session(token)).collect() };
        let (alice, bob) = (sessions("alice-token"), sessions("bob-token"));
        for (r, s) in replicas.iter().zip(&alice) {
            r.wait_for_echo("alice-token", s);
        }
        // Alice's three calls of the minute, alternating: A, B, A.
        for i in 0..3 {
            let at = i % 2;
            let result = replicas[at].call("alice-token", &alice[at]);
            assert!(went(&result), "call {i} at replica {at}: {result}");
        }
        // The fourth is refused at B, which counted only one of them itself, and so is a
        // fifth at A.
        for at in [1, 0] {
            let result = replicas[at].call("alice-token", &alice[at]);
            let (message, wait) = limited(&result);
            assert!(
                message.contains("rule `alice-three` allows 3 calls a minute"),
                "{message}"
            );
            assert!((1..=60).contains(&wait), "{result}");
        }
        // Bob's calls are his: no limit on his rule, and alice's count is not his.
        for i in 0..4 {
            let at = i % 2;
            let result = replicas[at].call("bob-token", &bob[at]);
            assert!(went(&result), "bob's call {i}: {result}");
        }
        let port = redis.port;
        // The count is in Redis, under the file's prefix, never under a caller's name.
        let reply = redis.client("").command(&[b"KEYS", b"*"]).unwrap();
        let Reply::Array(Some(items)) = reply else {
            panic!("KEYS answered {reply:?}")
        };
        let keys: Vec<String> = items
            .into_iter()
            .filter_map(|item| match item {
                Reply::Bulk(Some(key)) => String::from_utf8(key).ok(),
                _ => None,
            })
            .collect();
        assert!(
            keys.iter().any(|k| k.starts_with("rules-test:rate:")),
            "{keys:?}"
        );
        assert!(!keys.iter().any(|k| k.contains("alice")), "{keys:?}");

        // Redis stopped: alice's calls cannot be counted, so they are refused at both,
        // naming Redis and never its password; bob's, under no limit, still go.
        let _ = redis.child.kill();
        let _ = redis.child.wait();
        for at in [0, 1] {
            let result = replicas[at].call("alice-token", &alice[at]);
            let (message, wait) = limited(&result);
            assert!(
                message.contains("cannot be counted now")
                    && message.contains(&format!("Redis at 127.0.0.1:{port}")),
                "{message}"
            );
            assert_eq!(wait, 5, "{result}");
            assert!(!result.to_string().contains(ROOT_PASSWORD), "{result}");
            let result = replicas[at].call("bob-token", &bob[at]);
            assert!(went(&result), "bob's call with Redis gone: {result}");
        }
        let logs: String = replicas.iter().map(Replica::log).collect();
        assert!(
            logs.contains("rate limited by rule `alice-three`"),
            "{logs}"
        );
        assert!(logs.contains("cannot count it"), "{logs}");
        for secret in [ROOT_PASSWORD, "alice-token", "introspection-secret"] {
            assert!(!logs.contains(secret), "{secret} was logged: {logs}");
        }
        drop(redis);
    })
    .await;
    seen.unwrap();
    // Alice's three calls and bob's six reached the upstream; no refused one did.
    let calls = upstream
        .seen()
        .iter()
        .filter(|s| s.body["method"] == "tools/call")
        .count();
    assert_eq!(calls, 3 + 4 + 2);
}
