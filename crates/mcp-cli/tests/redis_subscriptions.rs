//! Resource subscriptions across replicas, through the built binary: a client subscribes at
//! replica A, its standalone `GET` stream is at replica B, and the updates of B's own upstream
//! reach it there; subscribes and unsubscribes taken at either replica change what B's
//! upstream is subscribed to, and so what the stream carries. The subscriptions are in Redis
//! under a digest of the session id, sealed. A child of `redis.rs` (its redis-server), using
//! `redis_sessions.rs`'s replicas.

use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use mcp_host::redis::Reply;
use mcp_testkit::TempDir;
use serde_json::json;

use super::rules::{AUDIENCE, introspector};
use super::sessions::{Replica, keys};
use super::{APP_PASSWORD, ROOT_PASSWORD, RedisServer};

/// A gateway file whose one upstream, the testkit's fake server, takes subscriptions and
/// sends updates for them on demand (`touch`).
fn gateway(dir: &Path, name: &str, redis_port: u16) -> PathBuf {
    gateway_as(dir, name, redis_port, ":${REDIS_PASSWORD}")
}

/// [`gateway`], logging in to Redis as `login` (`user:password`).
fn gateway_as(dir: &Path, name: &str, redis_port: u16, login: &str) -> PathBuf {
    let file = dir.join(format!("{name}.json"));
    std::fs::write(
        &file,
        json!({
            "mode": "passthrough",
            "mcpServers": {"fake": {"command": mcp_testkit::fake_server(),
                "args": ["--subscribe"],
                "permission": {"default": "allow"}}},
            "store": {"redis": format!("redis://{login}@127.0.0.1:{redis_port}")},
            "cluster": {"sessionKeys": ["${MCP_SESSION_KEY}"]}
        })
        .to_string(),
    )
    .unwrap();
    file
}

/// Calls the upstream's `touch` for `uri` at `at`: its text (`updated <uri>` when the
/// upstream connection of that replica is subscribed to it, which sends the update first;
/// `not subscribed <uri>` otherwise).
fn touch(at: &Replica, session: &str, uri: &str) -> String {
    let call = json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
        "params": {"name": "touch", "arguments": {"uri": uri}}})
    .to_string();
    let (status, _, body) = at.send("POST", Some(session), &call);
    assert_eq!(status, 200, "{body}");
    body
}

/// Touches `uri` at `at` until the answer says `wanted` (the replica applies a change told by
/// another in the background; each touch asks its upstream where it stands).
fn touch_until(at: &Replica, session: &str, uri: &str, wanted: &str) {
    let started = Instant::now();
    loop {
        let body = touch(at, session, uri);
        if body.contains(&format!("{wanted} {uri}")) {
            return;
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "the upstream never said '{wanted} {uri}': {body}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Waits (at most 10 s) for `at`'s log to say `needle`, which a replica writes as it answers
/// (its stderr is read by a thread of the test's): the log.
fn logged(at: &Replica, needle: &str) -> String {
    let started = Instant::now();
    loop {
        let log = at.log();
        if log.contains(needle) {
            return log;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "'{needle}' never logged: {log}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn request(method: &str, uri: &str) -> String {
    json!({"jsonrpc": "2.0", "id": 5, "method": method, "params": {"uri": uri}}).to_string()
}

/// A session's standalone stream: what it carried so far, read as it comes.
struct Stream {
    tcp: TcpStream,
    read: String,
    /// Where the last awaited event ended.
    seen: usize,
}

impl Stream {
    fn open(at: &Replica, session: &str) -> Self {
        Self::open_as(at, session, None)
    }

    /// [`open`](Self::open), as the caller holding `token` when one is given.
    fn open_as(at: &Replica, session: &str, token: Option<&str>) -> Self {
        let mut tcp = TcpStream::connect(&at.addr).unwrap();
        tcp.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        let token = token
            .map(|t| format!("Authorization: Bearer {t}\r\n"))
            .unwrap_or_default();
        write!(
            tcp,
            "GET /mcp HTTP/1.1\r\nHost: {}\r\nAccept: text/event-stream\r\n\
             Mcp-Session-Id: {session}\r\n{token}\r\n",
            at.addr
        )
        .unwrap();
        let mut stream = Self {
            tcp,
            read: String::new(),
            seen: 0,
        };
        stream.until("\r\n\r\n");
        assert!(stream.read.starts_with("HTTP/1.1 200"), "{}", stream.read);
        stream
    }

    /// Reads until `needle` appears after the last one awaited: what came in between.
    fn until(&mut self, needle: &str) -> String {
        let mut buf = [0u8; 4096];
        loop {
            if let Some(at) = self.read[self.seen..].find(needle) {
                let between = self.read[self.seen..self.seen + at].to_owned();
                self.seen += at + needle.len();
                return between;
            }
            let n = self
                .tcp
                .read(&mut buf)
                .unwrap_or_else(|e| panic!("no '{needle}' on the stream ({e}): {}", self.read));
            assert!(n > 0, "the stream ended: {}", self.read);
            self.read.push_str(&String::from_utf8_lossy(&buf[..n]));
        }
    }
}

/// What an update of `uri` looks like on the stream.
fn update(uri: &str) -> String {
    format!(r#""method":"notifications/resources/updated","params":{{"uri":"{uri}"}}"#)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscription_taken_at_one_replica_is_served_on_the_stream_at_another() {
    tokio::task::spawn_blocking(|| {
        let mut redis = RedisServer::start();
        let dir = TempDir::new("redis-subscriptions");
        let (a, b) = (
            Replica::start(&gateway(dir.path(), "a", redis.port), dir.path()),
            Replica::start(&gateway(dir.path(), "b", redis.port), dir.path()),
        );
        // The upstream ready at both first: a session's capabilities (resources.subscribe
        // among them) are those of the upstreams ready when it is made, or revived.
        let first = a.initialize();
        touch_until(&a, &first, "fake://none", "not subscribed");
        touch_until(&b, &first, "fake://none", "not subscribed");
        let id = a.initialize();
        for uri in ["fake://a", "fake://b"] {
            let (status, _, body) = a.send("POST", Some(&id), &request("resources/subscribe", uri));
            assert_eq!(status, 200, "{body}");
            assert!(body.contains(r#""id":5,"result""#), "{body}");
        }
        // The stream at B: B subscribes its own upstream for what was subscribed at A, before
        // the stream's head leaves.
        let mut stream = Stream::open(&b, &id);
        assert!(touch(&b, &id, "fake://a").contains("updated fake://a"));
        stream.until(&update("fake://a"));

        // Subscribed at A while the stream is open at B: B is told, and subscribes.
        let (status, _, body) = a.send(
            "POST",
            Some(&id),
            &request("resources/subscribe", "fake://c"),
        );
        assert_eq!(status, 200, "{body}");
        touch_until(&b, &id, "fake://c", "updated");
        stream.until(&update("fake://c"));

        // Unsubscribed at A: B is told, and unsubscribes; updates of the other resources
        // still come, and none of the one given up.
        let (status, _, body) = a.send(
            "POST",
            Some(&id),
            &request("resources/unsubscribe", "fake://a"),
        );
        assert_eq!(status, 200, "{body}");
        touch_until(&b, &id, "fake://a", "not subscribed");
        assert!(touch(&b, &id, "fake://b").contains("updated fake://b"));
        let between = stream.until(&update("fake://b"));
        assert!(!between.contains("fake://a"), "{between}");

        // Unsubscribed at B, the stream's replica: at once.
        let (status, _, body) = b.send(
            "POST",
            Some(&id),
            &request("resources/unsubscribe", "fake://b"),
        );
        assert_eq!(status, 200, "{body}");
        assert!(touch(&b, &id, "fake://b").contains("not subscribed fake://b"));
        assert!(touch(&b, &id, "fake://c").contains("updated fake://c"));
        let between = stream.until(&update("fake://c"));
        assert!(!between.contains("fake://b"), "{between}");

        // In Redis: the subscriptions under a digest of the session id, the URIs sealed.
        let held = keys(&redis, "*session-subscriptions*");
        assert_eq!(held.len(), 1, "{held:?}");
        assert!(!held[0].contains(&id), "{held:?}");
        // Fields and values alike, as HGETALL shows them.
        let values = redis
            .client("")
            .command(&[b"HGETALL", held[0].as_bytes()])
            .unwrap();
        let Reply::Array(Some(values)) = values else {
            panic!("HGETALL answered {values:?}")
        };
        let values: Vec<String> = values
            .into_iter()
            .map(|v| match v {
                Reply::Bulk(Some(v)) => String::from_utf8_lossy(&v).into_owned(),
                other => panic!("HGETALL held {other:?}"),
            })
            .collect();
        assert_eq!(values.len(), 2, "only fake://c is left: {values:?}");
        assert!(!values[0].contains("fake://"), "{values:?}");
        let values = &values[1..];
        assert!(values[0].len() > 20, "{values:?}");
        assert!(!values[0].contains("fake://"), "{values:?}");
        assert_eq!(keys(&redis, "*session-stream*").len(), 1);

        // Redis refusing scripts (an ACL taking them from the gateway's user), the session's
        // end still read: a subscribe cannot be recorded, so it is refused (503) and A's
        // session, which took it first, takes it back (its own upstream is not subscribed),
        // and A's log says what could not be done, naming Redis at its address.
        let acl = |rule: &[u8]| {
            redis
                .client("")
                .command(&[b"ACL", b"SETUSER", b"default", rule])
                .unwrap();
        };
        acl(b"-@scripting");
        let (status, _, body) = a.send(
            "POST",
            Some(&id),
            &request("resources/subscribe", "fake://d"),
        );
        assert_eq!(status, 503, "{body}");
        assert!(
            body.contains("did not take the resource subscription"),
            "{body}"
        );
        assert!(touch(&a, &id, "fake://d").contains("not subscribed fake://d"));
        logged(
            &a,
            &format!(
                "cannot record a resource subscription: Redis at 127.0.0.1:{}",
                redis.port
            ),
        );
        acl(b"+@scripting");

        // Redis gone: a subscribe is refused (503), never taken at one replica unknown to
        // the stream's, and the log names Redis at its address, never the password.
        let port = redis.port;
        let _ = redis.child.kill();
        let _ = redis.child.wait();
        let (status, _, body) = a.send(
            "POST",
            Some(&id),
            &request("resources/subscribe", "fake://d"),
        );
        assert_eq!(status, 503, "{body}");
        let log = logged(&a, &format!("Redis at 127.0.0.1:{port}/0: connect"));
        assert!(
            !log.contains(ROOT_PASSWORD),
            "the password was logged: {log}"
        );
        assert!(!log.contains(&id), "the session id was logged: {log}");
    })
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_replica_that_lost_its_channel_catches_up_once_it_listens_again() {
    tokio::task::spawn_blocking(|| {
        let redis = RedisServer::start();
        let dir = TempDir::new("redis-subscriptions-again");
        // B logs in as a user of its own, whose channels the test can take away.
        let (a, b) = (
            Replica::start(&gateway(dir.path(), "a", redis.port), dir.path()),
            Replica::start(
                &gateway_as(dir.path(), "b", redis.port, &format!("app:{APP_PASSWORD}")),
                dir.path(),
            ),
        );
        let first = a.initialize();
        touch_until(&a, &first, "fake://none", "not subscribed");
        touch_until(&b, &first, "fake://none", "not subscribed");
        let id = a.initialize();
        let mut stream = Stream::open(&b, &id);
        let acl = |rule: &[u8]| {
            redis
                .client("")
                .command(&[b"ACL", b"SETUSER", b"app", rule])
                .unwrap();
        };
        // B's user loses its channels: Redis drops B's subscription to its channel and
        // refuses it again, so the notice of a subscribe at A reaches nobody.
        acl(b"resetchannels");
        logged(&b, "subscribing again");
        let (status, _, body) = a.send(
            "POST",
            Some(&id),
            &request("resources/subscribe", "fake://missed"),
        );
        assert_eq!(status, 200, "{body}");
        assert!(touch(&b, &id, "fake://missed").contains("not subscribed fake://missed"));
        // Its channels back, B listens again and reads the session's subscriptions: its
        // upstream is subscribed and the update comes on the stream (before, only the next
        // change or the next GET told B).
        acl(b"allchannels");
        logged(&b, "listening again for answers");
        touch_until(&b, &id, "fake://missed", "updated");
        stream.until(&update("fake://missed"));
    })
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscribe_the_rules_refuse_is_refused_at_the_stream_replica_too() {
    tokio::task::spawn_blocking(|| {
        let redis = RedisServer::start();
        let endpoint = introspector(&[("alice-token", "alice"), ("bob-token", "bob")]);
        let issuer = endpoint.trim_end_matches("/introspect").to_owned();
        let dir = TempDir::new("redis-subscriptions-rules");
        let file = dir.path().join("gateway.json");
        // Alice may not use the one upstream; bob may.
        std::fs::write(
            &file,
            json!({
                "mode": "passthrough",
                "mcpServers": {"fake": {"command": mcp_testkit::fake_server(),
                    "args": ["--subscribe"], "permission": {"default": "allow"}}},
                "auth": {"issuer": issuer, "audience": AUDIENCE,
                    "introspection": {"endpoint": endpoint, "clientId": "gw",
                        "clientSecret": "introspection-secret"}},
                "rules": [
                    {"name": "no-fake-for-alice", "effect": "deny", "when": {"sub": ["alice"]},
                     "upstreams": ["fake"]},
                    {"name": "everyone", "effect": "allow"}
                ],
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
        // Bob's sessions see where each replica's upstream stands (`touch`).
        let bob = Some("bob-token");
        let touch_as_bob = |at: &Replica, session: &str, uri: &str| {
            let call = json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
                "params": {"name": "touch", "arguments": {"uri": uri}}})
            .to_string();
            let (status, _, body) = at.send_as(bob, "POST", Some(session), &call);
            assert_eq!(status, 200, "{body}");
            body
        };
        let bobs = a.initialize_as(bob);
        for at in [&a, &b] {
            let started = Instant::now();
            while !touch_as_bob(at, &bobs, "fake://none").contains("not subscribed fake://none") {
                assert!(started.elapsed() < Duration::from_secs(20), "the upstream never came");
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        // Bob's subscribe at A, his stream at B: B's copy of his session is told it, as him,
        // and B's upstream is subscribed before the stream's head leaves.
        let (status, _, body) = a.send_as(
            bob,
            "POST",
            Some(&bobs),
            &request("resources/subscribe", "fake://bobs"),
        );
        assert_eq!(status, 200, "{body}");
        assert!(body.contains(r#""id":5,"result""#), "{body}");
        let _bobs_stream = Stream::open_as(&b, &bobs, bob);
        assert!(touch_as_bob(&b, &bobs, "fake://bobs").contains("updated fake://bobs"));

        // Alice's subscribe at A is refused as at one replica: the resource is not found for
        // her, and A's upstream is not subscribed.
        let alice = Some("alice-token");
        let alices = a.initialize_as(alice);
        let (status, _, body) = a.send_as(
            alice,
            "POST",
            Some(&alices),
            &request("resources/subscribe", "fake://alices"),
        );
        assert_eq!(status, 200, "{body}");
        assert!(
            body.contains(r#""id":5,"error""#) && body.contains("-32002"),
            "{body}"
        );
        assert!(touch_as_bob(&a, &bobs, "fake://alices").contains("not subscribed fake://alices"));
        // Her stream at B: the refused subscribe was never recorded (the session judges a
        // subscribe before it is recorded), so B's copy of her session is told nothing, and
        // B's upstream is not subscribed, as at one replica; bob's, recorded, was told to
        // B's copy of his session, as him, in B's log.
        let _alices_stream = Stream::open_as(&b, &alices, alice);
        assert!(touch_as_bob(&b, &bobs, "fake://alices").contains("not subscribed fake://alices"));
        let log = logged(&b, "resources/subscribe fake://bobs");
        let told = log
            .lines()
            .find(|l| l.contains("resources/subscribe fake://bobs"))
            .unwrap();
        assert!(told.contains(r#"sub="bob""#), "{told}");
        assert!(!log.contains("fake://alices"), "{log}");
        let held = keys(&redis, "*session-subscriptions*");
        assert_eq!(held.len(), 1, "bob's only: {held:?}");
    })
    .await
    .unwrap();
}
