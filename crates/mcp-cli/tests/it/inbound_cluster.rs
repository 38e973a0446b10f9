//! `mcp-host serve --http` replicas sharing the `cluster` block's session keys (issue 24 §3):
//! a session begun at one goes on at any other, outlives a replica killed with SIGKILL, and is
//! refused (404) when its id was tampered with, sealed with a key the replica lacks, or
//! presented by another subject. Through the built binary; the upstream is `FakeHttp`, whose
//! `echo` answers `called`.

use super::*;

/// Two session keys, 32 bytes each in base64, as `openssl rand -base64 32` writes them.
const KEY_OLD: &str = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";
const KEY_NEW: &str = "ICEiIyQlJicoKSorLC0uLzAxMjM0NTY3ODk6Ozw9Pj8=";

/// A passthrough gateway file in front of `upstream`, its keys from `MCP_SESSION_KEY` and
/// (when set) `MCP_SESSION_KEY_OLD`, with `auth` when given.
fn cluster_file(user: &User, upstream: &str, auth: Option<Value>) -> PathBuf {
    let mut file = json!({
        "mode": "passthrough",
        "mcpServers": {"up": {"type": "http", "url": upstream,
            "permission": {"default": "allow"}}},
        "cluster": {"sessionKeys": ["${MCP_SESSION_KEY}", "${MCP_SESSION_KEY_OLD:-}"]}
    });
    if let Some(auth) = auth {
        file["auth"] = auth;
    }
    let path = user.project.path().join("gateway.json");
    std::fs::write(&path, file.to_string()).unwrap();
    path
}

fn call() -> String {
    json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "echo", "arguments": {}}})
    .to_string()
}

fn initialized() -> String {
    json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string()
}

/// Calls `echo` at `addr` until the upstream, which the replica joins in the background,
/// answers it.
fn called(addr: &str, token: Option<&str>, session: &str) -> Reply {
    for _ in 0..100 {
        let r = post(addr, token, Some(session), &call());
        assert_eq!(r.status, 200, "{r:?}");
        if r.body.contains("called") {
            return r;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("the upstream never answered at {addr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_goes_on_at_any_replica_with_the_key_and_outlives_a_killed_one() {
    let upstream = mcp_testkit::fake_http::FakeHttp::start().await;
    let url = upstream.url.clone();
    tokio::task::spawn_blocking(move || {
        let user = User::new();
        let file = cluster_file(&user, &url, None);
        let old = [("MCP_SESSION_KEY", KEY_OLD)];
        let a = Gateway::start_with(&user, &file, &old);
        let b = Gateway::start_with(&user, &file, &old);
        // C has rotated: the new key seals, the old one still opens.
        let c = Gateway::start_with(
            &user,
            &file,
            &[
                ("MCP_SESSION_KEY", KEY_NEW),
                ("MCP_SESSION_KEY_OLD", KEY_OLD),
            ],
        );

        let r = post(&a.addr, None, None, &initialize());
        assert_eq!(r.status, 200, "{r:?}");
        let session = r.header("mcp-session-id").unwrap();
        assert!(session.starts_with("s1."), "{session}");
        assert!(!session.contains("auth-test"), "readable: {session}");
        // The handshake ends at B; the session is listed at C and called at A, B and C.
        assert_eq!(
            post(&b.addr, None, Some(&session), &initialized()).status,
            202
        );
        let list = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list"}).to_string();
        let r = post(&c.addr, None, Some(&session), &list);
        assert_eq!(r.status, 200, "{r:?}");
        assert!(r.body.contains(r#""tools""#), "{r:?}");
        for at in [&a, &b, &c] {
            called(&at.addr, None, &session);
        }
        // A dies without a word; its session goes on at B and C.
        let log_a = a.stop();
        assert!(log_a.contains("session ids are sealed"), "{log_a}");
        for at in [&b, &c] {
            called(&at.addr, None, &session);
        }

        // A session begun at C is sealed with the new key, which B lacks: no session there.
        let r = post(&c.addr, None, None, &initialize());
        let newer = r.header("mcp-session-id").unwrap();
        called(&c.addr, None, &newer);
        let r = post(&b.addr, None, Some(&newer), &call());
        assert_eq!(r.status, 404, "{r:?}");
        // One character changed, or a random id: no session.
        let mut tampered = session.clone().into_bytes();
        let last = tampered.len() - 5;
        tampered[last] = if tampered[last] == b'A' { b'B' } else { b'A' };
        let tampered = String::from_utf8(tampered).unwrap();
        for id in [tampered.as_str(), "0123456789abcdef0123456789abcdef"] {
            for at in [&b, &c] {
                let r = post(&at.addr, None, Some(id), &call());
                assert_eq!(r.status, 404, "{id}: {r:?}");
            }
        }
        // The session itself is still served: what was refused was the id, not the replica.
        called(&b.addr, None, &session);
        let logs = [b.stop(), c.stop()].concat();
        assert!(
            !logs.contains(KEY_OLD) && !logs.contains(KEY_NEW),
            "a key was logged"
        );
    })
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sealed_session_stays_its_subjects_at_every_replica() {
    let upstream = mcp_testkit::fake_http::FakeHttp::start().await;
    let url = upstream.url.clone();
    tokio::task::spawn_blocking(move || {
        let issuer = Issuer::start();
        let key = Key::new("k1");
        issuer.publish(&[&key]);
        let user = User::new();
        let auth = json!({"issuer": issuer.url, "publicUrl": "http://gateway.example/mcp"});
        let file = cluster_file(&user, &url, Some(auth));
        let env = [("MCP_SESSION_KEY", KEY_OLD)];
        let (a, b) = (
            Gateway::start_with(&user, &file, &env),
            Gateway::start_with(&user, &file, &env),
        );
        let token = |sub: &str| {
            key.sign(
                &json!({"iss": issuer.url, "aud": "http://gateway.example/mcp",
                "sub": sub, "exp": now() + 300, "iat": now()}),
            )
        };
        let (alice, bob) = (token("alice"), token("bob"));
        let r = post(&a.addr, Some(&alice), None, &initialize());
        assert_eq!(r.status, 200, "{r:?}");
        let session = r.header("mcp-session-id").unwrap();
        assert!(!session.contains("alice"), "readable: {session}");
        assert_eq!(
            post(&b.addr, Some(&alice), Some(&session), &initialized()).status,
            202
        );
        called(&b.addr, Some(&alice), &session);
        // Bob holds alice's id: at B (which revived it) and at A (which made it) it is no
        // session of his.
        for at in [&b, &a] {
            let r = post(&at.addr, Some(&bob), Some(&session), &call());
            assert_eq!(r.status, 404, "{r:?}");
        }
        // Nor at a replica that has not seen it yet.
        let c = Gateway::start_with(&user, &file, &env);
        let r = post(&c.addr, Some(&bob), Some(&session), &call());
        assert_eq!(r.status, 404, "{r:?}");
        called(&c.addr, Some(&alice), &session);
    })
    .await
    .unwrap();
}
