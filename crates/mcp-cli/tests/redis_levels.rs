//! The logging level a client sets, across replicas, through the built binary: a
//! `logging/setLevel` taken by replica A is recorded in Redis (under a digest of the session
//! id), and replica B, at the session's next request there, tells its own upstream connection
//! before answering, as if the client had sent it there; once, not at every request. With Redis
//! gone, a request to the session is refused and the log names Redis and what could not be read,
//! never the password. A child of `redis.rs` (its redis-server), using `redis_sessions.rs`'s
//! replicas.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use mcp_testkit::TempDir;
use serde_json::json;

use super::sessions::{Replica, keys};
use super::{ROOT_PASSWORD, RedisServer};

/// A gateway file whose one upstream, the testkit's fake server, writes the method of every
/// request it gets to `<name>.log` in `dir`: the file, and that log.
fn gateway(dir: &Path, name: &str, redis_port: u16) -> (PathBuf, PathBuf) {
    let log = dir.join(format!("{name}.log"));
    let file = dir.join(format!("{name}.json"));
    std::fs::write(
        &file,
        json!({
            "mode": "passthrough",
            "mcpServers": {"fake": {"command": mcp_testkit::fake_server(),
                "args": ["--log-requests", log.to_str().unwrap()],
                "permission": {"default": "allow"}}},
            "store": {"redis": format!("redis://:${{REDIS_PASSWORD}}@127.0.0.1:{redis_port}")},
            "cluster": {"sessionKeys": ["${MCP_SESSION_KEY}"]}
        })
        .to_string(),
    )
    .unwrap();
    (file, log)
}

/// How many `logging/setLevel` requests the upstream that writes `log` got.
fn levels_told(log: &Path) -> usize {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter(|l| *l == "logging/setLevel")
        .count()
}

/// Lists the tools at `at` until the upstream's `echo` is among them (the replica joins it in
/// the background).
fn listed(at: &Replica, session: &str) {
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}).to_string();
    let started = Instant::now();
    loop {
        let (status, _, body) = at.send("POST", Some(session), &list);
        assert_eq!(status, 200, "{body}");
        if body.contains("\"echo\"") {
            return;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the upstream never listed echo: {body}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn set_level(level: &str) -> String {
    json!({"jsonrpc": "2.0", "id": 4, "method": "logging/setLevel",
        "params": {"level": level}})
    .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_level_set_at_one_replica_is_told_to_the_upstream_at_every_other() {
    tokio::task::spawn_blocking(|| {
        let mut redis = RedisServer::start();
        let dir = TempDir::new("redis-levels");
        let (file_a, log_a) = gateway(dir.path(), "a", redis.port);
        let (file_b, log_b) = gateway(dir.path(), "b", redis.port);
        let (a, b) = (
            Replica::start(&file_a, dir.path()),
            Replica::start(&file_b, dir.path()),
        );
        // The upstream ready at both first: a session's capabilities (logging among them) are
        // those of the upstreams ready when it is made, or revived.
        let first = a.initialize();
        listed(&a, &first);
        listed(&b, &first);
        let id = a.initialize();
        listed(&a, &id);
        listed(&b, &id);
        let (status, _, body) = a.send("POST", Some(&id), &set_level("error"));
        assert_eq!(status, 200, "{body}");
        assert!(body.contains(r#""id":4,"result""#), "{body}");
        assert_eq!(levels_told(&log_a), 1);
        assert_eq!(levels_told(&log_b), 0);
        // B tells its upstream before it answers the session's next request there, and only
        // then; A, told by the client itself, is not told again.
        listed(&b, &id);
        assert_eq!(levels_told(&log_b), 1);
        listed(&b, &id);
        listed(&a, &id);
        assert_eq!((levels_told(&log_a), levels_told(&log_b)), (1, 1));
        // Set again at B: A is told the new one.
        let (status, _, body) = b.send("POST", Some(&id), &set_level("debug"));
        assert_eq!(status, 200, "{body}");
        listed(&a, &id);
        assert_eq!((levels_told(&log_a), levels_told(&log_b)), (2, 2));

        // In Redis: one key, under a digest of the session id, never the id itself.
        let held = keys(&redis, "*session-level*");
        assert_eq!(held.len(), 1, "{held:?}");
        assert!(held[0].starts_with("mcp-host:session-level:"), "{held:?}");
        assert!(!held[0].contains(&id), "{held:?}");
        assert_eq!(redis.client("").get(&held[0]).unwrap().unwrap(), b"debug");

        // Redis gone: whether the session ended and its level cannot be read, so it is not
        // served (503), and the log says what could not be read, from which Redis.
        let port = redis.port;
        let _ = redis.child.kill();
        let _ = redis.child.wait();
        let (status, _, body) = b.send("POST", Some(&id), &set_level("info"));
        assert_eq!(status, 503, "{body}");
        let wanted = format!("Redis at 127.0.0.1:{port}");
        let started = Instant::now();
        let log = loop {
            let log = b.log();
            if log.contains("cannot read whether a session ended and its logging level") {
                break log;
            }
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "nothing logged: {log}"
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        assert!(log.contains(&wanted), "{log}");
        assert!(
            !log.contains(ROOT_PASSWORD),
            "the password was logged: {log}"
        );
        assert!(!log.contains(&id), "the session id was logged: {log}");
        assert_eq!(levels_told(&log_b), 2);
    })
    .await
    .unwrap();
}
