//! The gateway's `auth.introspection` through the built binary: opaque tokens asked about at
//! an RFC 7662 endpoint of the test's own, which checks the gateway's client credentials and
//! counts the questions. A child of `inbound_auth`, whose issuer, keys and HTTP helpers it
//! uses.

use std::collections::HashMap;
use std::sync::atomic::AtomicBool;

use super::*;

const SECRET: &str = "introspection-secret-of-the-test";

/// The test's introspection endpoint: an answer per token, counted; `down` answers 500; a
/// token starting `slow-` is answered only once `released` (each question is answered on a
/// thread of its own, so the others are not held).
struct Introspector {
    url: String,
    answers: Arc<Mutex<HashMap<String, Value>>>,
    asked: Arc<Mutex<Vec<String>>>,
    down: Arc<AtomicBool>,
    released: Arc<AtomicBool>,
}

impl Introspector {
    fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/introspect", listener.local_addr().unwrap());
        let answers: Arc<Mutex<HashMap<String, Value>>> = Arc::default();
        let asked: Arc<Mutex<Vec<String>>> = Arc::default();
        let down = Arc::new(AtomicBool::new(false));
        let released = Arc::new(AtomicBool::new(false));
        let (a, q, d, r) = (
            answers.clone(),
            asked.clone(),
            down.clone(),
            released.clone(),
        );
        // RFC 6749 §2.3.1: `gw` and the secret, form-encoded (nothing to encode here), in
        // base64 (compared here in its url-safe spelling, without padding).
        let basic = b64(format!("gw:{SECRET}").as_bytes());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let (a, q, d, r, basic) =
                    (a.clone(), q.clone(), d.clone(), r.clone(), basic.clone());
                std::thread::spawn(move || {
                    let mut reader = BufReader::new(stream.try_clone().unwrap());
                    let mut first = String::new();
                    let _ = reader.read_line(&mut first);
                    let (mut length, mut authorized) = (0, false);
                    loop {
                        let mut line = String::new();
                        if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                            break;
                        }
                        let (name, value) = line.split_once(':').unwrap_or_default();
                        if name.eq_ignore_ascii_case("content-length") {
                            length = value.trim().parse().unwrap_or(0);
                        }
                        if name.eq_ignore_ascii_case("authorization") {
                            let sent = value.trim().strip_prefix("Basic ").map(|v| {
                                v.trim_end_matches('=').replace('+', "-").replace('/', "_")
                            });
                            authorized = sent.as_deref() == Some(basic.as_str());
                        }
                    }
                    let mut body = vec![0; length];
                    let _ = reader.read_exact(&mut body);
                    // The tokens here need no percent-decoding.
                    let form: HashMap<String, String> = String::from_utf8_lossy(&body)
                        .split('&')
                        .filter_map(|p| p.split_once('='))
                        .map(|(k, v)| (k.to_owned(), v.to_owned()))
                        .collect();
                    let token = form.get("token").cloned().unwrap_or_default();
                    q.lock().unwrap().push(token.clone());
                    while token.starts_with("slow-") && !r.load(Ordering::SeqCst) {
                        std::thread::sleep(Duration::from_millis(5));
                    }
                    let (status, answer) = if d.load(Ordering::SeqCst) {
                        ("500 Internal Server Error", json!({}))
                    } else if !authorized || !first.starts_with("POST /introspect ") {
                        ("401 Unauthorized", json!({"error": "invalid_client"}))
                    } else {
                        let known = a.lock().unwrap().get(&token).cloned();
                        ("200 OK", known.unwrap_or(json!({"active": false})))
                    };
                    let answer = answer.to_string();
                    let _ = write!(
                        stream,
                        "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{answer}",
                        answer.len()
                    );
                });
            }
        });
        Self {
            url,
            answers,
            asked,
            down,
            released,
        }
    }

    fn answer(&self, token: &str, answer: Value) {
        self.answers
            .lock()
            .unwrap()
            .insert(token.to_owned(), answer);
    }

    /// How often the gateway asked about `token`.
    fn asked(&self, token: &str) -> usize {
        self.asked
            .lock()
            .unwrap()
            .iter()
            .filter(|t| *t == token)
            .count()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn opaque_tokens_are_introspected_kept_a_while_and_an_endpoint_down_is_a_503() {
    let issuer = Issuer::start();
    let key = Key::new("k1");
    issuer.publish(&[&key]);
    let introspector = Introspector::start();
    let user = User::new();
    let file = user.project.path().join("gateway.json");
    std::fs::write(
        &file,
        json!({
            "mcpServers": {},
            "auth": {"issuer": issuer.url, "requiredScopes": ["mcp:tools"],
                "introspection": {"endpoint": introspector.url, "clientId": "gw",
                    "clientSecret": "${GW_INTROSPECTION_SECRET}"}}
        })
        .to_string(),
    )
    .unwrap();
    let (gateway, _user) = tokio::task::spawn_blocking(move || {
        let g = Gateway::start_with(&user, &file, &[("GW_INTROSPECTION_SECRET", SECRET)]);
        (g, user)
    })
    .await
    .unwrap();
    let addr = gateway.addr.clone();
    let resource = format!("http://{addr}/mcp");
    let endpoint = introspector.url.clone();
    tokio::task::spawn_blocking(move || {
        let active = |f: &dyn Fn(&mut Value)| {
            let mut a = json!({"active": true, "iss": issuer.url, "aud": resource,
                "sub": "alice", "client_id": "app", "scope": "mcp:tools",
                "exp": now() + 300, "token_type": "Bearer"});
            f(&mut a);
            a
        };
        introspector.answer("opaque-alice", active(&|_| {}));
        introspector.answer(
            "opaque-other-resource",
            active(&|a| a["aud"] = json!("http://elsewhere.example/mcp")),
        );
        introspector.answer("opaque-no-scope", active(&|a| a["scope"] = json!("openid")));
        introspector.answer("opaque-revoked", json!({"active": false}));

        // Taken, and asked about once for two requests: the answer is kept.
        for _ in 0..2 {
            let r = post(&addr, Some("opaque-alice"), None, &initialize());
            assert_eq!(r.status, 200, "{r:?}");
        }
        assert_eq!(introspector.asked("opaque-alice"), 1);
        // Refused as a JWT would be: inactive or for another resource 401, no scope 403.
        for (token, status, error) in [
            ("opaque-revoked", 401, "invalid_token"),
            ("opaque-other-resource", 401, "invalid_token"),
            ("opaque-unknown", 401, "invalid_token"),
            ("opaque-no-scope", 403, "insufficient_scope"),
        ] {
            let r = post(&addr, Some(token), None, &initialize());
            assert_eq!(r.status, status, "{token}: {r:?}");
            let challenge = r.header("www-authenticate").unwrap();
            assert!(
                challenge.contains(&format!(r#"error="{error}""#)),
                "{token}: {challenge}"
            );
            assert_eq!(introspector.asked(token), 1, "{token}");
        }
        // A JWT is checked with the issuer's keys, not asked about.
        let jwt = key.sign(&active(&|a| {
            a.as_object_mut().unwrap().remove("active");
        }));
        let r = post(&addr, Some(&jwt), None, &initialize());
        assert_eq!(r.status, 200, "{r:?}");
        assert_eq!(introspector.asked(&jwt), 0);

        // The endpoint down: a 503 without a challenge (the token may be good), while a
        // token whose answer is kept still gets in.
        introspector.down.store(true, Ordering::SeqCst);
        let r = post(&addr, Some("opaque-while-down"), None, &initialize());
        assert_eq!(r.status, 503, "{r:?}");
        assert!(r.header("www-authenticate").is_none(), "{r:?}");
        assert_eq!(r.header("retry-after").as_deref(), Some("5"), "{r:?}");
        assert!(
            r.body.contains("introspection endpoint did not answer"),
            "{r:?}"
        );
        assert_eq!(introspector.asked("opaque-while-down"), 1);
        let r = post(&addr, Some("opaque-alice"), None, &initialize());
        assert_eq!(r.status, 200, "{r:?}");
    })
    .await
    .unwrap();
    let stderr = gateway.stop();
    // The log names the endpoint that failed, never the secret or a token.
    assert!(
        stderr.contains(&format!("cannot introspect a token at {endpoint}")),
        "{stderr}"
    );
    assert!(
        stderr.contains("refused a request: the issuer says the token is not active"),
        "{stderr}"
    );
    for secret in [
        SECRET,
        "opaque-alice",
        "opaque-revoked",
        "opaque-while-down",
    ] {
        assert!(!stderr.contains(secret), "{secret} was logged: {stderr}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reload_takes_a_changed_auth_block() {
    let issuer = Issuer::start();
    let key = Key::new("k1");
    issuer.publish(&[&key]);
    let user = User::new();
    let file = user.project.path().join("gateway.json");
    let issuer_url = issuer.url.clone();
    let written = file.clone();
    let write = move |scope: &str| {
        std::fs::write(
            &written,
            json!({"mcpServers": {},
                "auth": {"issuer": issuer_url, "requiredScopes": [scope]}})
            .to_string(),
        )
        .unwrap();
    };
    write("mcp:a");
    let started = file.clone();
    let (gateway, _user) =
        tokio::task::spawn_blocking(move || (Gateway::start(&user, &started), user))
            .await
            .unwrap();
    let addr = gateway.addr.clone();
    let resource = format!("http://{addr}/mcp");
    let token = |scope: &str| {
        key.sign(&json!({"iss": issuer.url, "aud": resource, "sub": "alice",
            "scope": scope, "exp": now() + 300, "iat": now()}))
    };
    let (a, b) = (token("mcp:a"), token("mcp:b"));
    let pid = nix::unistd::Pid::from_raw(i32::try_from(gateway.child.id()).unwrap());
    let gateway = tokio::task::spawn_blocking(move || {
        assert_eq!(post(&addr, Some(&a), None, &initialize()).status, 200);
        assert_eq!(post(&addr, Some(&b), None, &initialize()).status, 403);
        write("mcp:b");
        nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGHUP).unwrap();
        // The reload is applied in the background: ask until the old scope is refused.
        let mut refused = None;
        for _ in 0..100 {
            let r = post(&addr, Some(&a), None, &initialize());
            if r.status != 200 {
                refused = Some(r);
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let r = refused.expect("the reload never took the new block");
        assert_eq!(r.status, 403, "{r:?}");
        let challenge = r.header("www-authenticate").unwrap();
        assert!(challenge.contains(r#"scope="mcp:b""#), "{challenge}");
        assert_eq!(post(&addr, Some(&b), None, &initialize()).status, 200);
        gateway
    })
    .await
    .unwrap();
    let stderr = gateway.stop();
    assert!(
        stderr.contains("auth: the changed block is in use"),
        "{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_token_is_asked_about_once_and_past_the_cap_a_token_waits_with_a_503() {
    let issuer = Issuer::start();
    let introspector = Introspector::start();
    let user = User::new();
    let file = user.project.path().join("gateway.json");
    std::fs::write(
        &file,
        json!({
            "mcpServers": {},
            "auth": {"issuer": issuer.url,
                "introspection": {"endpoint": introspector.url, "clientId": "gw",
                    "clientSecret": "${GW_INTROSPECTION_SECRET}", "maxInFlight": 1}}
        })
        .to_string(),
    )
    .unwrap();
    let (gateway, _user) = tokio::task::spawn_blocking(move || {
        let g = Gateway::start_with(&user, &file, &[("GW_INTROSPECTION_SECRET", SECRET)]);
        (g, user)
    })
    .await
    .unwrap();
    let addr = gateway.addr.clone();
    let resource = format!("http://{addr}/mcp");
    tokio::task::spawn_blocking(move || {
        // A bad token sent again and again is asked about once: the refusal is kept.
        for _ in 0..5 {
            let r = post(&addr, Some("opaque-made-up"), None, &initialize());
            assert_eq!(r.status, 401, "{r:?}");
            assert!(
                r.header("www-authenticate")
                    .unwrap()
                    .contains(r#"error="invalid_token""#),
                "{r:?}"
            );
        }
        assert_eq!(introspector.asked("opaque-made-up"), 1);

        // One question in flight, the most the file allows: another token is answered 503
        // with a wait, without asking, and without a challenge (it may be good).
        introspector.answer(
            "slow-alice",
            json!({"active": true, "iss": issuer.url, "aud": resource, "sub": "alice",
                "exp": now() + 300, "token_type": "Bearer"}),
        );
        let slow = {
            let addr = addr.clone();
            std::thread::spawn(move || post(&addr, Some("slow-alice"), None, &initialize()))
        };
        for _ in 0..1000 {
            if introspector.asked("slow-alice") == 1 {
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(introspector.asked("slow-alice"), 1, "never asked");
        // The same token again waits for that answer: no second question, no 503.
        let again = {
            let addr = addr.clone();
            std::thread::spawn(move || post(&addr, Some("slow-alice"), None, &initialize()))
        };
        for token in ["opaque-flood-1", "opaque-flood-2", "opaque-flood-3"] {
            let r = post(&addr, Some(token), None, &initialize());
            assert_eq!(r.status, 503, "{token}: {r:?}");
            assert_eq!(r.header("retry-after").as_deref(), Some("5"), "{r:?}");
            assert!(r.header("www-authenticate").is_none(), "{r:?}");
            assert!(
                r.body.contains("being asked about 1 tokens already"),
                "{r:?}"
            );
            assert!(!r.body.contains(token), "{r:?}");
        }
        introspector.released.store(true, Ordering::SeqCst);
        for r in [slow.join().unwrap(), again.join().unwrap()] {
            assert_eq!(r.status, 200, "{r:?}");
        }
        assert_eq!(introspector.asked("slow-alice"), 1);
        // Its answer in, the next token is asked about; the refused ones never were.
        let r = post(&addr, Some("opaque-flood-1"), None, &initialize());
        assert_eq!(r.status, 401, "{r:?}");
        assert_eq!(introspector.asked("opaque-flood-1"), 1);
        assert_eq!(introspector.asked("opaque-flood-2"), 0);
    })
    .await
    .unwrap();
    let stderr = gateway.stop();
    assert!(
        stderr.contains("being asked about 1 tokens already"),
        "{stderr}"
    );
    for secret in [SECRET, "opaque-made-up", "opaque-flood-2", "slow-alice"] {
        assert!(!stderr.contains(secret), "{secret} was logged: {stderr}");
    }
}
