//! Sealed sessions with the ends of sessions in Redis, through the built binary: replicas of
//! `mcp-host serve --http` sharing a `cluster` key and a `store`. A session a client ends
//! (DELETE) at one replica is refused (404) at every other, including one that held it and one
//! started afterwards; with Redis gone, a sealed session is answered 503, not served as if it
//! had not ended. A child of `redis.rs` (its redis-server).

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpStream;
use std::process::{Child, ChildStderr, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_host::redis::Reply;
use mcp_testkit::TempDir;
use serde_json::json;

use super::{ROOT_PASSWORD, RedisServer};

const KEY: &str = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";

/// `mcp-host serve --gateway FILE --http` on a free loopback port, with `HOME` and only the
/// environment it needs (the Redis password, `env`): the child, the address it said it bound,
/// its stderr still open (the caller drains or keeps it) and what stderr said up to the
/// address. Shared by the children of `redis.rs` that run replicas.
pub(super) fn spawn(
    file: &std::path::Path,
    home: &std::path::Path,
    env: &[(&str, &str)],
) -> (Child, String, BufReader<ChildStderr>, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_mcp-host"))
        .args(["serve", "--gateway", file.to_str().unwrap()])
        .args(["--http", "127.0.0.1:0"])
        .env_clear()
        .env("HOME", home)
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("MCP_HOST_CREDENTIALS_STORE", "file")
        .env("REDIS_PASSWORD", ROOT_PASSWORD)
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut seen = String::new();
    let addr = loop {
        let mut line = String::new();
        assert!(
            stderr.read_line(&mut line).unwrap() > 0,
            "no address in {seen:?}"
        );
        seen.push_str(&line);
        if let Some((_, rest)) = line.split_once("listening on http://") {
            break rest.trim().trim_end_matches("/mcp").to_owned();
        }
    };
    (child, addr, stderr, seen)
}

/// A gateway file in `dir`, in `mode`, in front of the testkit's fake server, with the
/// replicas' shared `store` (the Redis on `redis_port`, its password from the environment)
/// and `cluster` key: what most tests here start their replicas on.
pub(super) fn shared_file(
    dir: &std::path::Path,
    mode: &str,
    redis_port: u16,
) -> std::path::PathBuf {
    let file = dir.join("gateway.json");
    let gateway = json!({
        "mode": mode,
        "mcpServers": {"fake": {"command": mcp_testkit::fake_server(),
            "permission": {"default": "allow"}}},
        "store": {"redis": format!("redis://:${{REDIS_PASSWORD}}@127.0.0.1:{redis_port}")},
        "cluster": {"sessionKeys": ["${MCP_SESSION_KEY}"]}
    });
    std::fs::write(&file, gateway.to_string()).unwrap();
    file
}

/// The keys Redis holds that match `pattern`.
pub(super) fn keys(redis: &RedisServer, pattern: &str) -> Vec<String> {
    let reply = redis
        .client("")
        .command(&[b"KEYS", pattern.as_bytes()])
        .unwrap();
    let Reply::Array(Some(items)) = reply else {
        panic!("KEYS answered {reply:?}")
    };
    items
        .into_iter()
        .filter_map(|item| match item {
            Reply::Bulk(Some(key)) => String::from_utf8(key).ok(),
            _ => None,
        })
        .collect()
}

/// One replica over HTTP on a free loopback port, its log kept; killed when dropped.
pub(super) struct Replica {
    pub(super) child: Child,
    pub(super) addr: String,
    log: Arc<Mutex<String>>,
}

impl Replica {
    pub(super) fn start(file: &std::path::Path, home: &std::path::Path) -> Self {
        let (child, addr, stderr, seen) = spawn(file, home, &[("MCP_SESSION_KEY", KEY)]);
        // Read as it comes, which also keeps the pipe from filling.
        let log = Arc::new(Mutex::new(seen));
        let kept = Arc::clone(&log);
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

    /// What it logged so far.
    pub(super) fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }

    /// One request on a connection of its own: the status and the session id it gave.
    pub(super) fn send(
        &self,
        method: &str,
        session: Option<&str>,
        body: &str,
    ) -> (u16, Option<String>, String) {
        self.send_as(None, method, session, body)
    }

    /// [`send`](Self::send), with `Authorization: Bearer <token>` when a token is given.
    pub(super) fn send_as(
        &self,
        token: Option<&str>,
        method: &str,
        session: Option<&str>,
        body: &str,
    ) -> (u16, Option<String>, String) {
        let mut stream = TcpStream::connect(&self.addr).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        let session = session
            .map(|s| format!("Mcp-Session-Id: {s}\r\n"))
            .unwrap_or_default();
        let token = token
            .map(|t| format!("Authorization: Bearer {t}\r\n"))
            .unwrap_or_default();
        write!(
            stream,
            "{method} /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\n{session}{token}Content-Length: {}\r\n\
             Connection: close\r\n\r\n{body}",
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
        (head[9..12].parse().unwrap(), id, body.to_owned())
    }

    /// Calls `echo` until the upstream, which the replica joins in the background, answers.
    fn called(&self, session: &str) {
        let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "echo", "arguments": {}}})
        .to_string();
        for _ in 0..100 {
            let (status, _, body) = self.send("POST", Some(session), &call);
            assert_eq!(status, 200, "{body}");
            if body.contains("called") {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("the upstream never answered at {}", self.addr);
    }

    fn status_of_call(&self, session: &str) -> u16 {
        let call = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
            "params": {"name": "echo", "arguments": {}}})
        .to_string();
        self.send("POST", Some(session), &call).0
    }

    pub(super) fn initialize(&self) -> String {
        self.initialize_as(None)
    }

    /// [`initialize`](Self::initialize), as the caller holding `token` when one is given.
    pub(super) fn initialize_as(&self, token: Option<&str>) -> String {
        let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "redis-sessions", "version": "0"}}})
        .to_string();
        let (status, id, body) = self.send_as(token, "POST", None, &init);
        assert_eq!(status, 200, "{body}");
        let id = id.expect("a session id");
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        assert_eq!(
            self.send_as(token, "POST", Some(&id), &initialized.to_string())
                .0,
            202
        );
        id
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_ended_at_one_replica_is_refused_at_every_other() {
    let upstream = mcp_testkit::fake_http::FakeHttp::start().await;
    let url = upstream.url.clone();
    tokio::task::spawn_blocking(move || {
        let mut redis = RedisServer::start();
        let dir = TempDir::new("redis-sessions");
        let file = dir.path().join("gateway.json");
        std::fs::write(
            &file,
            json!({
                "mode": "passthrough",
                "mcpServers": {"up": {"type": "http", "url": url,
                    "permission": {"default": "allow"}}},
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
        let ended = a.initialize();
        let kept = a.initialize();
        // Both replicas serve both sessions.
        for at in [&a, &b] {
            at.called(&ended);
            at.called(&kept);
        }
        // DELETE at B; A, which made the session and holds it, refuses it, as do B and a
        // replica started afterwards. The other session goes on.
        assert_eq!(b.send("DELETE", Some(&ended), "").0, 200);
        for at in [&a, &b] {
            assert_eq!(at.status_of_call(&ended), 404);
            at.called(&kept);
        }
        let c = Replica::start(&file, dir.path());
        assert_eq!(c.status_of_call(&ended), 404);
        c.called(&kept);
        // The end is in Redis, under a digest of the id: never the id itself.
        let keys = keys(&redis, "*session-ended*");
        assert_eq!(keys.len(), 1, "{keys:?}");
        assert!(keys[0].starts_with("mcp-host:session-ended:"), "{keys:?}");
        assert!(!keys[0].contains(&ended), "{keys:?}");
        // Redis gone: whether a session ended cannot be known, so it is not served.
        let _ = redis.child.kill();
        let _ = redis.child.wait();
        let status = b.status_of_call(&kept);
        assert_eq!(status, 503);
    })
    .await
    .unwrap();
}
