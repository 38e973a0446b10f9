//! Against a real redis-server (Debian's): our Redis client (login, database, values with a
//! lifetime, messages, lease locks, a sliding window shared by two clients), and through the
//! built binary two gateway processes sharing upstream OAuth tokens in Redis, with a short
//! access-token lifetime and a rotating refresh token: exactly one refresh per expiry, and
//! both keep calling.
//!
//! Not part of the plain `cargo test` (this target has `test = false`): it needs
//! redis-server, named by `MCP_HOST_TEST_REDIS_SERVER`, and fails saying so when it is
//! missing. Run it with:
//!
//!     MCP_HOST_TEST_REDIS_SERVER=/usr/bin/redis-server cargo test -p mcp-cli --test redis
//!
//! Each test starts its own redis-server on a free loopback port, in a directory of its own,
//! with a password and an ACL user, and kills it at the end.

#![allow(clippy::unwrap_used)]

use std::io::{BufRead as _, BufReader, Write as _};
use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mcp_host::auth_store::AuthStore;
use mcp_host::oauth::{OAuthContext, Settings, Url};
use mcp_host::redis::{Redis, RedisError};
use mcp_testkit::TempDir;
use mcp_testkit::fake_auth::{FakeAuth, FakeAuthOptions, PrmLocation};
use serde_json::{Value, json};

// Sealed sessions whose ends are kept in Redis (SEAL24), beside this file.
// The test as the browser of a login, as in the `it` tests.
#[path = "it/browser.rs"]
mod browser;
use browser::browse;

#[path = "redis_sessions.rs"]
mod sessions;

// Answers to a replica's requests to clients, POSTed to another replica (XREPLICA24).
#[path = "redis_answers.rs"]
mod answers;

// The logging level a client set, applied at every replica (SHARE24), beside this file.
#[path = "redis_levels.rs"]
mod levels;

// Resource subscriptions served on the stream at another replica (SUBS24), beside this file.
#[path = "redis_subscriptions.rs"]
mod subscriptions;

// Rate limits shared by two gateway processes (RULES24), beside this file.
#[path = "redis_rules.rs"]
mod rules;

// The gateway's tasks served by any replica (TASKS24), beside this file.
#[path = "redis_tasks.rs"]
mod tasks;

// A 2026-07-28 client's retry of a suspended call at any replica (RETRY24), beside this file.
#[path = "redis_resumes.rs"]
mod resumes;

const ROOT_PASSWORD: &str = "root-pw-7f3a";
const APP_PASSWORD: &str = "app-pw-91c2";

/// A redis-server of this test's: killed when dropped.
struct RedisServer {
    child: Child,
    port: u16,
    _dir: TempDir,
}

impl RedisServer {
    /// Starts redis-server from `MCP_HOST_TEST_REDIS_SERVER`, with the default user's
    /// password and a user `app`, and waits until it answers.
    fn start() -> Self {
        let program = std::env::var("MCP_HOST_TEST_REDIS_SERVER").unwrap_or_default();
        assert!(
            !program.is_empty() && std::path::Path::new(&program).exists(),
            "these tests need redis-server: set MCP_HOST_TEST_REDIS_SERVER to its path \
             (Debian's is /usr/bin/redis-server, `apt-get install redis-server`); got {program:?}"
        );
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let dir = TempDir::new("redis");
        let config = dir.path().join("redis.conf");
        std::fs::write(
            &config,
            format!(
                "port {port}\nbind 127.0.0.1\ndir {}\nsave \"\"\nappendonly no\n\
                 requirepass {ROOT_PASSWORD}\nuser app on >{APP_PASSWORD} ~* &* +@all\n",
                dir.path().display()
            ),
        )
        .unwrap();
        let child = Command::new(program)
            .arg(&config)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let server = Self {
            child,
            port,
            _dir: dir,
        };
        let redis = server.client("");
        let started = Instant::now();
        while let Err(e) = redis.ping() {
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "redis-server never answered: {e}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        server
    }

    /// The URL, as the default user, on database 0 (`path` such as `/3` for another).
    fn url(&self, path: &str) -> String {
        format!("redis://:{ROOT_PASSWORD}@127.0.0.1:{}{path}", self.port)
    }

    fn client(&self, path: &str) -> Redis {
        Redis::new(&self.url(path)).unwrap()
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn the_client_logs_in_selects_and_shares_values_messages_locks_and_windows() {
    let server = RedisServer::start();
    let port = server.port;

    // An ACL user on database 3: what it writes there is not on database 0.
    let app = Redis::new(&format!("redis://app:{APP_PASSWORD}@127.0.0.1:{port}/3")).unwrap();
    let root = server.client("");
    app.set("k", b"on three", None).unwrap();
    assert_eq!(app.get("k").unwrap().as_deref(), Some(&b"on three"[..]));
    assert_eq!(root.get("k").unwrap(), None);
    assert!(app.del("k").unwrap());
    assert_eq!(app.get("k").unwrap(), None);
    // A value with a lifetime is gone after it (waiting on the event, polled).
    app.set("short", b"x", Some(Duration::from_millis(50)))
        .unwrap();
    assert!(app.get("short").unwrap().is_some());
    while app.get("short").unwrap().is_some() {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(app.set_nx("once", b"a", Duration::from_secs(60)).unwrap());
    assert!(!app.set_nx("once", b"b", Duration::from_secs(60)).unwrap());

    // A wrong password is refused, saying so, and never shown.
    let wrong = Redis::new(&format!("redis://app:not-the-pw-5521@127.0.0.1:{port}/0")).unwrap();
    let e = wrong.ping().unwrap_err();
    let text = e.to_string();
    assert!(
        matches!(e, RedisError::Refused { .. })
            && text.contains("AUTH")
            && text.contains("WRONGPASS"),
        "{text}"
    );
    assert!(!text.contains("not-the-pw-5521"), "{text}");
    // No password at all: the command is refused (NOAUTH), naming the command.
    let none = Redis::new(&format!("redis://127.0.0.1:{port}/0")).unwrap();
    let text = none.get("k").unwrap_err().to_string();
    assert!(
        text.contains(": GET: ") && text.contains("NOAUTH"),
        "{text}"
    );

    // Messages: one published on a channel reaches the subscriber, and only that channel's.
    let mut sub = root.subscribe(&["news"]).unwrap();
    assert_eq!(sub.recv(Duration::from_millis(50)).unwrap(), None);
    assert_eq!(root.publish("other", b"no").unwrap(), 0);
    assert_eq!(app.publish("news", b"hello").unwrap(), 1);
    let m = sub
        .recv(Duration::from_secs(10))
        .unwrap()
        .expect("a message");
    assert_eq!(
        (m.channel.as_str(), m.payload.as_slice()),
        ("news", &b"hello"[..])
    );

    // Locks: a second taker waits and gives up while the first holds it, takes it once it is
    // released, and takes one whose holder died once its lease runs out.
    let held = root
        .lock("l", Duration::from_secs(30), Duration::ZERO)
        .unwrap();
    let other = server.client("");
    let e = other
        .lock("l", Duration::from_secs(30), Duration::from_millis(100))
        .unwrap_err();
    assert!(matches!(e, RedisError::LockBusy { .. }), "{e}");
    // The lease is renewed while held: a holder longer than its lease keeps it.
    let short = root
        .lock("renewed", Duration::from_millis(300), Duration::ZERO)
        .unwrap();
    std::thread::sleep(Duration::from_millis(700));
    assert!(
        other
            .lock("renewed", Duration::from_secs(1), Duration::ZERO)
            .is_err(),
        "the renewed lease was lost"
    );
    short.release();
    assert_eq!(root.get("renewed").unwrap(), None, "released by its holder");
    held.release();
    let taken = other
        .lock("l", Duration::from_secs(30), Duration::ZERO)
        .unwrap();
    // Only the holder releases: another's token does not delete it.
    assert!(root.get("l").unwrap().is_some());
    drop(taken);
    // A holder that died: its key stays until the lease ends, then the waiter has it.
    assert!(
        root.set_nx("dead", b"someone-gone", Duration::from_millis(200))
            .unwrap()
    );
    let after = other
        .lock("dead", Duration::from_secs(30), Duration::from_secs(20))
        .unwrap();
    assert_ne!(
        root.get("dead").unwrap().as_deref(),
        Some(&b"someone-gone"[..])
    );
    after.release();

    // A sliding window shared by two clients (two replicas): three calls in all, not each.
    let (a, b) = (server.client(""), server.client(""));
    let minute = Duration::from_secs(60);
    assert_eq!(a.take_in_window("w", 3, minute).unwrap(), Ok(()));
    assert_eq!(b.take_in_window("w", 3, minute).unwrap(), Ok(()));
    assert_eq!(a.take_in_window("w", 3, minute).unwrap(), Ok(()));
    let wait = b.take_in_window("w", 3, minute).unwrap().unwrap_err();
    assert!(wait > Duration::ZERO && wait <= minute, "{wait:?}");
    assert_eq!(b.take_in_window("other", 3, minute).unwrap(), Ok(()));
    // A short window lets one more in once its oldest call has left.
    assert_eq!(
        a.take_in_window("s", 1, Duration::from_millis(100))
            .unwrap(),
        Ok(())
    );
    let wait = b
        .take_in_window("s", 1, Duration::from_millis(100))
        .unwrap()
        .unwrap_err();
    std::thread::sleep(wait);
    while b
        .take_in_window("s", 1, Duration::from_millis(100))
        .unwrap()
        .is_err()
    {
        std::thread::sleep(Duration::from_millis(5));
    }

    // Redis gone: an unreachable error naming Redis, the address and the phase.
    drop(server);
    let e = a.ping().unwrap_err();
    assert!(e.is_unreachable(), "{e}");
    assert!(
        e.to_string()
            .starts_with(&format!("Redis at 127.0.0.1:{port}/0: ")),
        "{e}"
    );
    assert!(!e.to_string().contains(ROOT_PASSWORD));
}

/// `mcp-host login --gateway FILE remote`, the test as the browser: it opens the address
/// the command prints and follows the redirect back. Returns what the command said.
fn login_gateway(file: &std::path::Path, home: &std::path::Path) -> String {
    use std::io::Read as _;
    let mut child = Command::new(env!("CARGO_BIN_EXE_mcp-host"))
        .args(["login", "--gateway", file.to_str().unwrap(), "remote"])
        .env_clear()
        .env("HOME", home)
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("BROWSER", "true")
        .env("MCP_HOST_CREDENTIALS_STORE", "file")
        .env("REDIS_PASSWORD", ROOT_PASSWORD)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut said = String::new();
    let url = loop {
        let mut line = String::new();
        assert!(
            stderr.read_line(&mut line).unwrap() > 0,
            "no URL in {said:?}"
        );
        said.push_str(&line);
        if let Some(rest) = line.trim().strip_prefix("http") {
            break format!("http{rest}");
        }
    };
    let (status, callback, _) = browse(&url);
    assert_eq!(status, 302, "{url}");
    assert_eq!(browse(&callback.unwrap()).0, 200);
    stderr.read_to_string(&mut said).unwrap();
    let output = child.wait_with_output().unwrap();
    said.push_str(&String::from_utf8_lossy(&output.stdout));
    assert!(output.status.success(), "{said}");
    said
}

/// `mcp-host serve --gateway FILE` over stdio, as a client: its stdout's answers by id, its
/// stderr kept.
struct Gateway {
    child: Child,
    stdin: std::process::ChildStdin,
    answers: std::sync::mpsc::Receiver<Value>,
    stderr: Arc<Mutex<String>>,
    next_id: u64,
}

impl Gateway {
    fn start(file: &std::path::Path, home: &std::path::Path) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_mcp-host"))
            .args(["serve", "--gateway", file.to_str().unwrap()])
            .env_clear()
            .env("HOME", home)
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("MCP_HOST_CREDENTIALS_STORE", "file")
            .env("REDIS_PASSWORD", ROOT_PASSWORD)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let (tx, answers) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in stdout.lines() {
                let Ok(line) = line else { break };
                if let Ok(message) = serde_json::from_str::<Value>(&line)
                    && message.get("id").is_some()
                    && tx.send(message).is_err()
                {
                    break;
                }
            }
        });
        let stderr = Arc::new(Mutex::new(String::new()));
        let said = stderr.clone();
        let err = BufReader::new(child.stderr.take().unwrap());
        std::thread::spawn(move || {
            for line in err.lines() {
                let Ok(line) = line else { break };
                let mut s = said.lock().unwrap();
                s.push_str(&line);
                s.push('\n');
            }
        });
        let mut gateway = Self {
            child,
            stdin,
            answers,
            stderr,
            next_id: 0,
        };
        let init = gateway.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "redis-test", "version": "0"}}),
        );
        assert!(init["result"].is_object(), "{init}");
        gateway.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        gateway
    }

    fn send(&mut self, message: Value) {
        let mut line = serde_json::to_vec(&message).unwrap();
        line.push(b'\n');
        self.stdin.write_all(&line).unwrap();
        self.stdin.flush().unwrap();
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let m = self
                .answers
                .recv_timeout(Duration::from_secs(60))
                .unwrap_or_else(|_| panic!("no answer to {method}: {}", self.said()));
            if m["id"] == id {
                return m;
            }
        }
    }

    fn said(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// Waits until the upstream's `echo` is listed (the upstream joins once it has settled).
    fn wait_for_echo(&mut self) -> String {
        let started = Instant::now();
        loop {
            let listed = self.request("tools/list", json!({}));
            if let Some(name) = listed["result"]["tools"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|t| t["name"].as_str())
                .find(|n| n.ends_with("echo"))
            {
                return name.to_owned();
            }
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "echo never listed: {listed}\n{}",
                self.said()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn call(&mut self, name: &str) -> Value {
        self.request("tools/call", json!({"name": name, "arguments": {}}))
    }
}

impl Drop for Gateway {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_gateways_share_tokens_in_redis_and_refresh_once_per_expiry() {
    let server = RedisServer::start();
    let fake = FakeAuth::start(FakeAuthOptions {
        access_token_lifetime: Duration::from_secs(2),
        refresh_tokens: true,
        rotate_refresh_tokens: true,
        // A login or refresh without a 401 finds the metadata at the well-known URL.
        prm: PrmLocation::PathInserted,
        ..FakeAuthOptions::default()
    })
    .await;
    let home = TempDir::new("home");
    let url = Url::parse(&fake.url()).unwrap();

    let file = home.path().join("gateway.json");
    std::fs::write(
        &file,
        serde_json::to_vec_pretty(&json!({
            "mcpServers": {"remote": {"type": "http", "url": fake.url()}},
            "store": {
                "redis": format!("redis://:${{REDIS_PASSWORD}}@127.0.0.1:{}/0", server.port),
                "prefix": "gw-test"
            }
        }))
        .unwrap(),
    )
    .unwrap();

    // A person logs in once with `login --gateway`; the tokens go to Redis, where the
    // gateways look, and not to this user's token store file.
    let redis = server.client("");
    let said = tokio::task::spawn_blocking({
        let (file, home) = (file.clone(), home.path().to_owned());
        move || login_gateway(&file, &home)
    })
    .await
    .unwrap();
    assert!(said.contains("logged in to `remote`"), "{said}");
    assert!(!said.contains(ROOT_PASSWORD), "{said}");
    assert!(
        !home.path().join(".config/mcp-host/mcp-auth.json").exists(),
        "the tokens went to the local file"
    );
    let store = AuthStore::in_redis(redis.clone(), "gw-test");
    assert!(
        store.describe().starts_with("Redis at 127.0.0.1:"),
        "{}",
        store.describe()
    );
    assert!(!format!("{store:?}").contains(ROOT_PASSWORD));
    let context = OAuthContext::new(Some(store.clone())).unwrap();
    let hook = context.hook_for("remote", url.clone(), Settings::new(url.clone()));
    assert!(
        hook.expires_at_ms().is_some(),
        "the gateway's tokens are in Redis"
    );
    let stored = redis.get("gw-test:oauth").unwrap().expect("the document");
    let doc: Value = serde_json::from_slice(&stored).unwrap();
    assert_eq!(doc["servers"]["remote"]["url"], url.as_str(), "{doc}");

    // Two replicas (contexts of their own, each with its own Redis connections) find the
    // token due at the same moment: one refreshes, the other waits for its turn, reads the
    // new tokens and adopts them (a second refresh would present a rotated, dead token).
    let due_ms = hook.expires_at_ms().unwrap() - 1000;
    let now_ms = u64::try_from(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis(),
    )
    .unwrap();
    tokio::time::sleep(Duration::from_millis(due_ms.saturating_sub(now_ms) + 100)).await;
    let replica = || {
        let store = AuthStore::in_redis(server.client(""), "gw-test");
        OAuthContext::new(Some(store)).unwrap()
    };
    let (a, b) = (replica(), replica());
    let hook_a = a.hook_for("remote", url.clone(), Settings::new(url.clone()));
    let hook_b = b.hook_for("remote", url.clone(), Settings::new(url.clone()));
    tokio::join!(hook_a.prepare(), hook_b.prepare());
    let refreshes = fake.token_requests("refresh_token");
    assert_eq!(refreshes, 1, "one refresh for both replicas");
    assert_eq!(hook_a.last_error(), None);
    assert_eq!(hook_b.last_error(), None);
    use mcp_http::AuthHook as _;
    let header = |h: &mcp_host::oauth::OAuthHook| h.authorization().map(|v| v.as_bytes().to_vec());
    assert!(header(&hook_a).is_some());
    assert_eq!(
        header(&hook_a),
        header(&hook_b),
        "both use the refreshed token"
    );

    // Two gateways call the upstream over several token lifetimes.
    let (file2, home2) = (file.clone(), home.path().to_owned());
    let results = tokio::task::spawn_blocking(move || {
        let runs: Vec<_> = (0..2)
            .map(|_| {
                let (file, home) = (file2.clone(), home2.clone());
                std::thread::spawn(move || {
                    let mut gateway = Gateway::start(&file, &home);
                    let echo = gateway.wait_for_echo();
                    let started = Instant::now();
                    let mut answers = Vec::new();
                    while started.elapsed() < Duration::from_secs(7) {
                        answers.push(gateway.call(&echo));
                        std::thread::sleep(Duration::from_millis(200));
                    }
                    (answers, gateway.said())
                })
            })
            .collect();
        runs.into_iter()
            .map(|r| r.join().unwrap())
            .collect::<Vec<_>>()
    })
    .await
    .unwrap();
    for (answers, said) in &results {
        assert!(answers.len() > 10, "{said}");
        for a in answers {
            let text = a["result"].to_string();
            assert!(
                text.contains("echoed") && a["result"]["isError"] != true,
                "a call failed: {a}\n{said}"
            );
        }
        assert!(!said.contains(ROOT_PASSWORD), "{said}");
    }

    // Every refresh token was used once: no two gateways refreshed with the same one (the
    // second would have got invalid_grant and lost the rotated token), and every token
    // request succeeded.
    let token_requests = fake.seen_at("/token");
    let refreshes: Vec<String> = token_requests
        .iter()
        .filter(|r| r.form("grant_type").as_deref() == Some("refresh_token"))
        .filter_map(|r| r.form("refresh_token"))
        .collect();
    assert!(
        refreshes.len() >= 3,
        "7 s of 2-second tokens: {} refreshes",
        refreshes.len()
    );
    let mut distinct = refreshes.clone();
    distinct.sort();
    distinct.dedup();
    assert_eq!(
        distinct.len(),
        refreshes.len(),
        "a refresh token was used twice"
    );
    for r in &token_requests {
        assert_eq!(
            r.status,
            200,
            "{:?} answered {}",
            r.form("grant_type"),
            r.status
        );
    }

    // With Redis gone, a gateway says its token store cannot be read, naming Redis and where,
    // and does not take that for an empty store.
    let port = server.port;
    drop(server);
    // A replica whose token is due does not refresh without its turn: a rotated refresh
    // token it could not store would leave the others with a dead one.
    let before = fake.token_requests("refresh_token");
    hook_a.prepare().await;
    assert_eq!(
        fake.token_requests("refresh_token"),
        before,
        "refreshed without a turn"
    );
    let status = hook_a.last_error().unwrap_or_default();
    assert!(
        status.contains(&format!("Redis at 127.0.0.1:{port}/0")),
        "{status}"
    );
    assert!(!status.contains(ROOT_PASSWORD), "{status}");
    let said = tokio::task::spawn_blocking(move || {
        let mut gateway = Gateway::start(&file, home.path());
        let started = Instant::now();
        while !gateway.said().contains("upstream remote: ") {
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "{}",
                gateway.said()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = gateway.request("tools/list", json!({}));
        gateway.said()
    })
    .await
    .unwrap();
    assert!(
        said.contains(&format!("Redis at 127.0.0.1:{port}/0")),
        "{said}"
    );
    assert!(!said.contains(ROOT_PASSWORD), "{said}");
}
