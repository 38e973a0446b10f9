//! `mcp-host serve --http` with an `auth` block: the gateway as an OAuth protected resource,
//! through the built binary. An issuer of the test's own (a loopback HTTP server publishing
//! RFC 8414 metadata and a JWKS of P-256 keys ring makes at each run) signs the tokens; an
//! HTTP upstream (`FakeHttp`) records what the gateway sends it.

use std::io::{BufRead, Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use ring::rand::SystemRandom;
use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair as _};
use serde_json::{Value, json};

use super::*;

// A child, to share this module's issuer and HTTP helpers; beside it, as the modules of
// `it` are files of their own.
#[path = "inbound_rules.rs"]
mod rules;

#[path = "inbound_introspection.rs"]
mod introspection;

#[path = "inbound_cluster.rs"]
mod cluster;

/// base64url without padding (RFC 7515 §2).
fn b64(bytes: &[u8]) -> String {
    const A: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, b)| n | (u32::from(*b) << (16 - 8 * i)));
        for i in 0..=chunk.len() {
            out.push(A[(n >> (18 - 6 * i) & 63) as usize] as char);
        }
    }
    out
}

/// A P-256 signing key with its `kid`.
struct Key {
    pair: EcdsaKeyPair,
    kid: String,
}

impl Key {
    fn new(kid: &str) -> Self {
        let rng = SystemRandom::new();
        let pk8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
        let pair =
            EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pk8.as_ref(), &rng).unwrap();
        Self {
            pair,
            kid: kid.to_owned(),
        }
    }

    fn jwk(&self) -> Value {
        let point = self.pair.public_key().as_ref();
        json!({"kty": "EC", "crv": "P-256", "kid": self.kid, "use": "sig", "alg": "ES256",
               "x": b64(&point[1..33]), "y": b64(&point[33..])})
    }

    /// A compact JWS of `claims` under `header`.
    fn sign_with(&self, header: &Value, claims: &Value) -> String {
        let input = format!(
            "{}.{}",
            b64(header.to_string().as_bytes()),
            b64(claims.to_string().as_bytes())
        );
        let sig = self
            .pair
            .sign(&SystemRandom::new(), input.as_bytes())
            .unwrap();
        format!("{input}.{}", b64(sig.as_ref()))
    }

    fn sign(&self, claims: &Value) -> String {
        self.sign_with(
            &json!({"alg": "ES256", "typ": "at+jwt", "kid": self.kid}),
            claims,
        )
    }
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// The test's authorization server: metadata and keys over plain HTTP on loopback, counting
/// how often the keys are fetched.
struct Issuer {
    url: String,
    keys: Arc<Mutex<Value>>,
    jwks_fetches: Arc<AtomicUsize>,
}

impl Issuer {
    fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let keys = Arc::new(Mutex::new(json!({"keys": []})));
        let jwks_fetches = Arc::new(AtomicUsize::new(0));
        let (served_keys, fetches, issuer) = (keys.clone(), jwks_fetches.clone(), url.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut first = String::new();
                let _ = reader.read_line(&mut first);
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                        break;
                    }
                }
                let path = first.split(' ').nth(1).unwrap_or("").to_owned();
                let (status, body) = match path.as_str() {
                    "/.well-known/oauth-authorization-server" => (
                        "200 OK",
                        json!({"issuer": issuer, "jwks_uri": format!("{issuer}/jwks"),
                               "authorization_endpoint": format!("{issuer}/authorize"),
                               "token_endpoint": format!("{issuer}/token")})
                        .to_string(),
                    ),
                    "/jwks" => {
                        fetches.fetch_add(1, Ordering::SeqCst);
                        ("200 OK", served_keys.lock().unwrap().to_string())
                    }
                    _ => ("404 Not Found", String::new()),
                };
                let _ = write!(
                    stream,
                    "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
            }
        });
        Self {
            url,
            keys,
            jwks_fetches,
        }
    }

    fn publish(&self, keys: &[&Key]) {
        let keys: Vec<Value> = keys.iter().map(|k| k.jwk()).collect();
        *self.keys.lock().unwrap() = json!({ "keys": keys });
    }

    fn fetches(&self) -> usize {
        self.jwks_fetches.load(Ordering::SeqCst)
    }
}

/// One HTTP answer, read whole.
#[derive(Debug)]
struct Reply {
    status: u16,
    head: String,
    body: String,
}

impl Reply {
    fn header(&self, name: &str) -> Option<String> {
        self.head.lines().find_map(|l| {
            let (n, v) = l.split_once(':')?;
            n.eq_ignore_ascii_case(name).then(|| v.trim().to_owned())
        })
    }
}

/// A request on a connection of its own.
fn http(addr: &str, method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> Reply {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let extra: String = headers
        .iter()
        .map(|(n, v)| format!("{n}: {v}\r\n"))
        .collect();
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n{extra}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut all = String::new();
    stream.read_to_string(&mut all).unwrap();
    let (head, body) = all.split_once("\r\n\r\n").unwrap_or((&all, ""));
    Reply {
        status: head[9..12].parse().unwrap(),
        head: head.to_owned(),
        body: body.to_owned(),
    }
}

fn initialize() -> String {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "auth-test", "version": "0"}}})
    .to_string()
}

fn post(addr: &str, token: Option<&str>, session: Option<&str>, body: &str) -> Reply {
    let bearer = token.map(|t| format!("Bearer {t}"));
    let mut headers = Vec::new();
    if let Some(b) = &bearer {
        headers.push(("Authorization", b.as_str()));
    }
    if let Some(s) = session {
        headers.push(("Mcp-Session-Id", s));
    }
    http(addr, "POST", "/mcp", &headers, body)
}

// The gateway, serving HTTP on a free loopback port; killed when dropped.
use super::Serving as Gateway;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_gateway_takes_only_its_issuers_tokens_for_itself_and_never_passes_them_on() {
    let upstream = mcp_testkit::fake_http::FakeHttp::start().await;
    upstream.require_authorization(Some("Bearer upstream-own-token"));
    let issuer = Issuer::start();
    let key = Key::new("k1");
    issuer.publish(&[&key]);
    let user = User::new();
    let file = user.project.path().join("gateway.json");
    std::fs::write(
        &file,
        json!({
            "mode": "passthrough",
            "mcpServers": {"up": {"type": "http", "url": upstream.url,
                "headers": {"Authorization": "Bearer upstream-own-token"},
                "permission": {"default": "allow"}}},
            "auth": {"issuer": issuer.url, "requiredScopes": ["mcp:tools"]}
        })
        .to_string(),
    )
    .unwrap();
    let (gateway, _user) =
        tokio::task::spawn_blocking(move || (Gateway::start(&user, &file), user))
            .await
            .unwrap();
    let addr = gateway.addr.clone();
    let resource = format!("http://{addr}/mcp");
    let metadata_url = format!("http://{addr}/.well-known/oauth-protected-resource/mcp");
    let result = tokio::task::spawn_blocking(move || {
        let claims = |f: &dyn Fn(&mut Value)| {
            let mut c = json!({"iss": issuer.url, "aud": resource, "sub": "alice",
            "client_id": "app", "scope": "mcp:tools", "exp": now() + 300, "iat": now()});
            f(&mut c);
            c
        };
        // No token: 401 with where to learn more and the scope to ask for, no error code.
        let r = post(&addr, None, None, &initialize());
        assert_eq!(r.status, 401, "{r:?}");
        let challenge = r.header("www-authenticate").unwrap();
        assert!(
            challenge.starts_with("Bearer ")
                && challenge.contains(&format!(r#"resource_metadata="{metadata_url}""#))
                && challenge.contains(r#"scope="mcp:tools""#)
                && !challenge.contains("error="),
            "{challenge}"
        );
        // The RFC 9728 document, path-suffixed and at the root.
        for path in [
            "/.well-known/oauth-protected-resource/mcp",
            "/.well-known/oauth-protected-resource",
        ] {
            let doc = http(&addr, "GET", path, &[], "");
            assert_eq!(doc.status, 200, "{path}: {doc:?}");
            let doc: Value = serde_json::from_str(&doc.body).unwrap();
            assert_eq!(
                doc["resource"],
                json!(format!("http://{addr}/mcp")),
                "{doc}"
            );
            assert_eq!(doc["authorization_servers"], json!([issuer.url]), "{doc}");
            assert_eq!(doc["scopes_supported"], json!(["mcp:tools"]), "{doc}");
        }
        assert_eq!(
            http(&addr, "GET", "/.well-known/other", &[], "").status,
            404
        );

        // Tokens that must be refused, each with invalid_token.
        let other = Key::new("k1");
        let unsigned = format!(
            "{}.{}.",
            b64(br#"{"alg":"none","kid":"k1"}"#),
            b64(claims(&|_| {}).to_string().as_bytes())
        );
        for (what, token) in [
            (
                "expired",
                key.sign(&claims(&|c| c["exp"] = json!(now() - 600))),
            ),
            (
                "not yet valid",
                key.sign(&claims(&|c| c["nbf"] = json!(now() + 600))),
            ),
            (
                "wrong audience",
                key.sign(&claims(&|c| {
                    c["aud"] = json!("http://elsewhere.example/mcp")
                })),
            ),
            (
                "wrong issuer",
                key.sign(&claims(&|c| c["iss"] = json!("https://evil.example"))),
            ),
            ("unsigned", unsigned),
            ("wrong key", other.sign(&claims(&|_| {}))),
            ("garbage", "not-a-jwt".to_owned()),
            (
                "anonymous",
                key.sign(&claims(&|c| {
                    let c = c.as_object_mut().unwrap();
                    c.remove("sub");
                    c.remove("client_id");
                })),
            ),
        ] {
            let r = post(&addr, Some(&token), None, &initialize());
            assert_eq!(r.status, 401, "{what}: {r:?}");
            let challenge = r.header("www-authenticate").unwrap();
            assert!(
                challenge.contains(r#"error="invalid_token""#),
                "{what}: {challenge}"
            );
            assert!(
                !challenge.contains(&token) && !r.body.contains(&token),
                "{what}: echoed"
            );
        }
        // A valid token without the required scope: 403 naming it.
        let r = post(
            &addr,
            Some(&key.sign(&claims(&|c| c["scope"] = json!("openid")))),
            None,
            &initialize(),
        );
        assert_eq!(r.status, 403, "{r:?}");
        let challenge = r.header("www-authenticate").unwrap();
        assert!(
            challenge.contains(r#"error="insufficient_scope""#)
                && challenge.contains(r#"scope="mcp:tools""#),
            "{challenge}"
        );

        // A valid token: a session, whose tool call reaches the upstream with the upstream's
        // own credentials.
        let token = key.sign(&claims(&|_| {}));
        let r = post(&addr, Some(&token), None, &initialize());
        assert_eq!(r.status, 200, "{r:?}");
        let session = r.header("mcp-session-id").unwrap();
        let initialized =
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string();
        assert_eq!(
            post(&addr, Some(&token), Some(&session), &initialized).status,
            202
        );
        let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "echo", "arguments": {}}})
        .to_string();
        // The upstream joins in the background: ask until it answers.
        let mut answered = None;
        for _ in 0..100 {
            let r = post(&addr, Some(&token), Some(&session), &call);
            assert_eq!(r.status, 200, "{r:?}");
            if r.body.contains("called") {
                answered = Some(r);
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        assert!(answered.is_some(), "the upstream never answered");
        // The session is alice's: the same id with another subject's token is no session.
        let bob = key.sign(&claims(&|c| c["sub"] = json!("bob")));
        let r = post(&addr, Some(&bob), Some(&session), &call);
        assert_eq!(r.status, 404, "{r:?}");
        // And without a token, no session either: 401 first.
        assert_eq!(post(&addr, None, Some(&session), &call).status, 401);

        // Key rotation: a token under a new kid makes the gateway fetch the keys once more.
        let fetches = issuer.fetches();
        assert!(fetches >= 1, "the keys were fetched");
        let rotated = Key::new("k2");
        issuer.publish(&[&key, &rotated]);
        let r = post(
            &addr,
            Some(&rotated.sign(&claims(&|_| {}))),
            None,
            &initialize(),
        );
        assert_eq!(r.status, 200, "{r:?}");
        assert_eq!(issuer.fetches(), fetches + 1);
        // A flood of unknown kids right after: refused, and the issuer is not asked again.
        for i in 0..20 {
            let stranger = Key::new(&format!("made-up-{i}"));
            let r = post(
                &addr,
                Some(&stranger.sign(&claims(&|_| {}))),
                None,
                &initialize(),
            );
            assert_eq!(r.status, 401, "{r:?}");
        }
        assert_eq!(
            issuer.fetches(),
            fetches + 1,
            "the flood reached the issuer"
        );
        token
    })
    .await
    .unwrap();
    // The upstream saw its own credentials on every request, never the client's token.
    let seen = upstream.seen();
    assert!(
        seen.iter().any(|s| s.body["method"] == "tools/call"),
        "{seen:?}"
    );
    for s in &seen {
        let auth = s.headers.get("authorization").and_then(|v| v.to_str().ok());
        assert_eq!(auth, Some("Bearer upstream-own-token"), "{s:?}");
        for (name, value) in &s.headers {
            assert!(
                !value.to_str().unwrap_or("").contains(&result),
                "the client's token reached the upstream in {name}"
            );
        }
    }
    let stderr = gateway.stop();
    // The call's log line names its caller; no token is logged.
    assert!(
        stderr
            .lines()
            .any(|l| l.contains("call echo") && l.contains(r#"sub="alice""#)),
        "{stderr}"
    );
    assert!(!stderr.contains(&result), "a token was logged");
}

#[test]
fn auth_and_a_bearer_token_are_one_or_the_other() {
    let user = User::new();
    let file = user.project.path().join("gateway.json");
    std::fs::write(
        &file,
        json!({"mcpServers": {}, "auth": {"issuer": "https://id.example"}}).to_string(),
    )
    .unwrap();
    let run = user.run_with(
        &[
            "serve",
            "--gateway",
            file.to_str().unwrap(),
            "--http",
            "127.0.0.1:0",
            "--bearer-token-env",
            "GW_TOKEN",
        ],
        "GW_TOKEN",
        "s3cret",
    );
    run.code(2)
        .err_has("--bearer-token-env and the gateway file's `auth`");
    std::fs::write(
        &file,
        json!({"mcpServers": {}, "auth": {"issuer": "https://id.example", "algorithms": ["HS256"]}})
            .to_string(),
    )
    .unwrap();
    user.run(&[
        "serve",
        "--gateway",
        file.to_str().unwrap(),
        "--http",
        "127.0.0.1:0",
    ])
    .code(3)
    .err_has("auth.algorithms: `HS256` is an HMAC algorithm");
}
