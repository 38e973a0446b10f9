//! OAuth end to end: the host against the testkit's fake authorization server and protected
//! MCP endpoint. A 401 on connect starts discovery, registration and login; tokens land in the
//! store file (mode 0600) and serve the next run without a login; an expired token is
//! refreshed on the next 401; with no way to log in the server waits in `auth_required`; a
//! server with no metadata fails with a message that suggests a static header.

// Test code: an unwrap that fails is a failed test, with its location.
#![allow(clippy::unwrap_used)]

use std::os::unix::fs::PermissionsExt as _;
use std::path::PathBuf;
use std::sync::Arc;

use mcp_host::auth_store::AuthStore;
use mcp_host::oauth::{AutoFollow, OAuthContext, Settings, Url};
use mcp_host::permission::AllowAll;
use mcp_host::{CallOptions, Connect, Host, HostOptions, ServerEntry, ServerState};
use mcp_http::HttpConfig;
use mcp_protocol::JsonObject;
use mcp_protocol::schema::Implementation;
use mcp_testkit::fake_auth::{AsMetadata, FakeAuth, FakeAuthOptions, PrmLocation};

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mcp-host-oauth-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A token store in a fresh directory of its own.
fn new_store(name: &str) -> AuthStore {
    AuthStore::new(temp_dir(name).join("mcp-auth.json"))
}

/// A context whose logins go through on their own: its user agent follows the authorization
/// URL with the context's own fetcher, as a browser and a user who consents would.
fn logging_in(store: Option<AuthStore>) -> OAuthContext {
    let ctx = OAuthContext::new(store).unwrap();
    ctx.clone()
        .with_user_agent(Arc::new(AutoFollow::new(ctx.fetcher().clone())))
}

fn host() -> Host {
    Host::new(HostOptions::new(
        Implementation::new("oauth-test".into(), "0".into()),
        Arc::new(AllowAll),
    ))
}

fn entry(fake: &FakeAuth, ctx: &OAuthContext) -> ServerEntry {
    let url = Url::parse(&fake.url()).unwrap();
    let mut e = ServerEntry::new(
        "remote",
        Connect::Http(HttpConfig::new("remote", fake.url())),
    );
    e.oauth = Some(Arc::new(ctx.hook_for(
        "remote",
        url.clone(),
        Settings::new(url),
    )));
    e
}

/// A new run on `store` with no way to log in, which is ready: the stored tokens were enough.
async fn restarted(fake: &FakeAuth, store: &AuthStore) -> Host {
    let quiet = OAuthContext::new(Some(store.clone())).unwrap();
    let host = host();
    host.start(vec![entry(fake, &quiet)]).await;
    let status = host.server_status("remote").unwrap();
    assert_eq!(status.state, ServerState::Ready, "{status:?}");
    host
}

async fn echo(host: &Host) -> Result<String, String> {
    let out = host
        .call_tool("remote", "echo", JsonObject::new(), CallOptions::default())
        .await
        .map_err(|e| e.to_string())?;
    Ok(format!("{:?}", out.result.content))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn login_store_reuse_and_refresh() {
    let fake = FakeAuth::start(FakeAuthOptions::default()).await;
    let store = new_store("login");

    // First run: no token; the 401 leads to discovery, registration, login.
    let ctx = logging_in(Some(store.clone()));
    let host1 = host();
    host1.start(vec![entry(&fake, &ctx)]).await;
    let status = host1.server_status("remote").unwrap();
    assert_eq!(status.state, ServerState::Ready, "{status:?}");
    assert!(status.token_expires_at.is_some());
    assert!(echo(&host1).await.unwrap().contains("echoed"));
    assert_eq!(fake.seen_at("/authorize").len(), 1);
    assert_eq!(fake.seen_at("/register").len(), 1);
    let mode = std::fs::metadata(store.path())
        .unwrap()
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(mode, 0o600);
    let url = Url::parse(&fake.url()).unwrap();
    assert!(store.tokens("remote", &url).unwrap().is_some());
    host1.shutdown().await;

    // Second run, with no way to log in: the stored token is enough.
    let host2 = restarted(&fake, &store).await;
    assert_eq!(fake.seen_at("/authorize").len(), 1, "no second login");

    // The access token stops working: the next 401 refreshes it, and the call goes through.
    fake.revoke_access_tokens();
    assert!(echo(&host2).await.unwrap().contains("echoed"));
    let grants: Vec<_> = fake
        .seen_at("/token")
        .iter()
        .filter_map(|r| r.form("grant_type"))
        .collect();
    assert!(grants.contains(&"refresh_token".to_owned()), "{grants:?}");
    assert_eq!(
        fake.seen_at("/authorize").len(),
        1,
        "a refresh, not a login"
    );

    // The file holds the rotated refresh token, not the one the refresh spent, and neither
    // the status nor a Debug print shows a token.
    let stored = store.tokens("remote", &url).unwrap().unwrap();
    let spent = fake
        .seen_at("/token")
        .iter()
        .filter_map(|r| r.form("refresh_token"))
        .last()
        .unwrap();
    let kept = stored.refresh_token.as_ref().unwrap().secret().to_owned();
    assert_ne!(kept, spent, "the rotated refresh token is stored");
    let shown = format!("{stored:?} {:?}", host2.server_status("remote"));
    assert!(shown.contains("[redacted]"), "{shown}");
    for token in [stored.access_token.secret(), &kept, &spent] {
        assert!(!shown.contains(token), "{token} shown in {shown}");
    }
    host2.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn registrations_are_stored_by_issuer_and_shared_by_its_servers() {
    let fake = FakeAuth::start(FakeAuthOptions {
        registration_method: Some("client_secret_post".to_owned()),
        ..FakeAuthOptions::default()
    })
    .await;
    let store = new_store("registrations");
    let ctx = logging_in(Some(store.clone()));
    let url = Url::parse(&fake.url()).unwrap();
    let named = |id: &str| {
        let mut e = ServerEntry::new(id, Connect::Http(HttpConfig::new(id, fake.url())));
        e.oauth = Some(Arc::new(ctx.hook_for(
            id,
            url.clone(),
            Settings::new(url.clone()),
        )));
        e
    };

    let host1 = host();
    host1.start(vec![named("first")]).await;
    assert_eq!(
        host1.server_status("first").unwrap().state,
        ServerState::Ready
    );
    host1.shutdown().await;
    assert_eq!(fake.seen_at("/register").len(), 1);
    let registrations = store.registrations().unwrap();
    let issuer = fake.issuer();
    assert_eq!(
        registrations.keys().collect::<Vec<_>>(),
        [&issuer],
        "kept under the issuer as its metadata states it"
    );
    let registration = &registrations[&issuer];
    let tokens = store.tokens("first", &url).unwrap().unwrap();
    assert_eq!(tokens.client_id.as_ref(), Some(&registration.client_id));
    assert_eq!(
        registration.token_endpoint_auth_method.as_deref(),
        Some("client_secret_post")
    );
    assert!(registration.client_secret.is_some());
    let text = std::fs::read_to_string(store.path()).unwrap();
    assert!(text.contains("\"version\": 2"), "{text}");

    // Another server behind the same authorization server: its own login, the same client.
    let host2 = host();
    host2.start(vec![named("second")]).await;
    assert_eq!(
        host2.server_status("second").unwrap().state,
        ServerState::Ready
    );
    host2.shutdown().await;
    // Two logins, and before the second the kept client checked once without a browser.
    assert_eq!(fake.seen_at("/authorize").len(), 3);
    assert_eq!(fake.seen_at("/register").len(), 1, "no second registration");
    let second = store.tokens("second", &url).unwrap().unwrap();
    assert_eq!(second.client_id.as_ref(), Some(&registration.client_id));
    assert!(
        fake.seen_at("/token")
            .iter()
            .all(|r| r.form("client_secret").is_some()),
        "the registered method, client_secret_post, every time"
    );
    // Logging one server out leaves the registration to the others.
    assert!(store.remove("first").unwrap());
    assert_eq!(store.registrations().unwrap().len(), 1);
}

#[test]
fn a_version_1_store_is_migrated_without_losing_anything() {
    let store = new_store("v1");
    let v1 = r#"{
  "version": 1,
  "servers": {
    "notion": {
      "access_token": "at-1",
      "refresh_token": "rt-1",
      "expires_at": 1760000000000,
      "token_type": "Bearer",
      "client_id": "reg-1",
      "client_secret": "cs-1",
      "issuer": "https://auth.example.com",
      "url": "https://mcp.example.com/mcp"
    }
  }
}
"#;
    std::fs::write(store.path(), v1).unwrap();
    let url = Url::parse("https://mcp.example.com/mcp").unwrap();
    let old = store.tokens("notion", &url).unwrap().unwrap();
    assert_eq!(old.access_token.secret(), "at-1");
    let registrations = store.registrations().unwrap();
    assert_eq!(
        registrations["https://auth.example.com"].client_id, "reg-1",
        "a stored registration becomes its issuer's"
    );
    // A write for another server rewrites the file as version 2 with everything in it.
    let other = Url::parse("https://other.example.com/mcp").unwrap();
    store
        .update("other", &other, |_| Some(old.clone()))
        .unwrap();
    let text = std::fs::read_to_string(store.path()).unwrap();
    assert!(text.contains("\"version\": 2"), "{text}");
    assert_eq!(store.tokens("notion", &url).unwrap(), Some(old));
    assert_eq!(store.registrations().unwrap(), registrations);
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        doc["servers"]["notion"]["url"], "https://mcp.example.com/mcp",
        "the URL binding is kept"
    );
    assert_eq!(
        doc["clients"]["https://auth.example.com"]["client_secret"],
        "cs-1"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_way_to_log_in_the_server_waits_for_authorization() {
    let fake = FakeAuth::start(FakeAuthOptions::default()).await;
    let ctx = OAuthContext::new(None).unwrap();
    let host = host();
    host.start(vec![entry(&fake, &ctx)]).await;
    let status = host.server_status("remote").unwrap();
    assert_eq!(status.state, ServerState::AuthRequired, "{status:?}");
    let error = status.last_error.unwrap();
    assert!(error.contains("401") && error.contains("log in"), "{error}");
    assert!(fake.seen_at("/authorize").is_empty());
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_metadata_suggests_a_static_header() {
    let fake = FakeAuth::start(FakeAuthOptions {
        prm: PrmLocation::None,
        metadata: AsMetadata::None,
        ..FakeAuthOptions::default()
    })
    .await;
    let ctx = logging_in(None);
    let host = host();
    host.start(vec![entry(&fake, &ctx)]).await;
    let status = host.server_status("remote").unwrap();
    assert_eq!(status.state, ServerState::AuthRequired, "{status:?}");
    let error = status.last_error.unwrap();
    assert!(error.contains("Authorization` header"), "{error}");
    host.shutdown().await;
}

/// Two processes share the token store and both find the access token about to expire. The
/// refresh token rotates, so if both refreshed, the second would present a dead refresh token.
/// One refreshes; the other waits its turn, sees the new tokens and adopts them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_processes_never_refresh_the_same_token_at_once() {
    let fake = FakeAuth::start(FakeAuthOptions {
        access_token_lifetime: std::time::Duration::from_secs(1),
        // A proactive refresh finds the metadata at a well-known URL, not from a 401.
        prm: PrmLocation::PathInserted,
        ..FakeAuthOptions::default()
    })
    .await;
    let store = new_store("shared");
    let url = Url::parse(&fake.url()).unwrap();
    logging_in(Some(store.clone()))
        .hook_for("remote", url.clone(), Settings::new(url.clone()))
        .login()
        .await
        .unwrap();
    // A refresh is due halfway through the token's one-second life (not at once: a token
    // shorter-lived than the margin is refreshed once per lifetime).
    tokio::time::sleep(std::time::Duration::from_millis(600)).await;

    // Two "processes": separate contexts and hooks, each loading the stored tokens.
    let a = OAuthContext::new(Some(store.clone())).unwrap();
    let b = OAuthContext::new(Some(store.clone())).unwrap();
    let hook_a = a.hook_for("remote", url.clone(), Settings::new(url.clone()));
    let hook_b = b.hook_for("remote", url.clone(), Settings::new(url.clone()));
    tokio::join!(hook_a.prepare(), hook_b.prepare());

    let refreshes = fake
        .seen_at("/token")
        .iter()
        .filter(|r| r.form("grant_type").as_deref() == Some("refresh_token"))
        .count();
    assert_eq!(refreshes, 1, "one refresh for both");
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
}

/// The loopback listener takes only `/callback` back: another path (a probe, `/callbackX`)
/// gets 404 and the wait goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn loopback_answers_only_its_callback_path() {
    use mcp_host::oauth::{Loopback, UserAgent as _};
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

    let agent = Loopback::bind(|_| Ok(()), std::time::Duration::from_secs(20))
        .await
        .unwrap();
    let redirect = agent.redirect_uri();
    let port = Url::parse(&redirect).unwrap().port().unwrap();
    let waiting = tokio::spawn(async move {
        agent
            .authorize(Url::parse("https://as.example/authorize").unwrap())
            .await
    });
    let get = |path: &'static str| async move {
        let mut s = tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .unwrap();
        s.write_all(format!("GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes())
            .await
            .unwrap();
        let mut answer = String::new();
        s.read_to_string(&mut answer).await.unwrap();
        answer
    };
    assert!(
        get("/callbackX?code=evil")
            .await
            .starts_with("HTTP/1.1 404")
    );
    assert!(get("/").await.starts_with("HTTP/1.1 404"));
    assert!(
        get("/callback?code=c&state=s")
            .await
            .starts_with("HTTP/1.1 200")
    );
    let landed = waiting.await.unwrap().unwrap();
    assert_eq!(landed.path(), "/callback");
    assert_eq!(landed.query(), Some("code=c&state=s"));
}

/// A key in the server URL's query shows in no `Debug` of the hook.
#[test]
fn the_hook_debug_hides_the_url_query() {
    let ctx = OAuthContext::new(None).unwrap();
    let url = Url::parse("https://mcp.example/mcp?key=SECRET").unwrap();
    let hook = ctx.hook_for("s", url.clone(), Settings::new(url));
    let shown = format!("{hook:?}");
    assert!(
        shown.contains("https://mcp.example/mcp?[redacted]"),
        "{shown}"
    );
    assert!(!shown.contains("SECRET"), "{shown}");
}

/// The header and claims of a DPoP proof, after checking its ES256 signature with the public
/// key its header carries.
fn verified_proof(jwt: &str) -> (serde_json::Value, serde_json::Value) {
    use base64::Engine as _;
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let (signed, signature) = jwt.rsplit_once('.').unwrap();
    let (head, claims) = signed.split_once('.').unwrap();
    let json = |p: &str| serde_json::from_slice::<serde_json::Value>(&b64.decode(p).unwrap());
    let (head, claims) = (json(head).unwrap(), json(claims).unwrap());
    let mut public = vec![4u8];
    public.extend(b64.decode(head["jwk"]["x"].as_str().unwrap()).unwrap());
    public.extend(b64.decode(head["jwk"]["y"].as_str().unwrap()).unwrap());
    ring::signature::UnparsedPublicKey::new(&ring::signature::ECDSA_P256_SHA256_FIXED, public)
        .verify(signed.as_bytes(), &b64.decode(signature).unwrap())
        .expect("the proof's signature verifies with its jwk");
    (head, claims)
}

/// DPoP (RFC 9449) end to end: the authorization server takes ES256 proofs and both servers
/// want their nonce. The token request is retried with the authorization server's nonce, the
/// first MCP request with the MCP server's; every MCP request carries `DPoP <token>` and its
/// own signed proof of the one key; the key is stored with the tokens and serves the next run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dpop_bound_tokens_a_proof_per_request_and_both_nonces() {
    let fake = FakeAuth::start(FakeAuthOptions {
        dpop: true,
        dpop_nonce: Some("server-nonce-7".to_owned()),
        ..FakeAuthOptions::default()
    })
    .await;
    let store = new_store("dpop");
    let ctx = logging_in(Some(store.clone()));
    let host1 = host();
    host1.start(vec![entry(&fake, &ctx)]).await;
    let status = host1.server_status("remote").unwrap();
    assert_eq!(status.state, ServerState::Ready, "{status:?}");
    assert!(echo(&host1).await.unwrap().contains("echoed"));

    let tokens = fake.seen_at("/token");
    let statuses: Vec<u16> = tokens.iter().map(|r| r.status).collect();
    assert_eq!(statuses, [400, 200], "refused for the nonce, then granted");
    let (head, claims) = verified_proof(tokens[1].headers["dpop"].to_str().unwrap());
    assert_eq!(head["typ"], "dpop+jwt");
    assert_eq!(head["alg"], "ES256");
    assert_eq!(claims["htm"], "POST");
    assert_eq!(claims["nonce"], "server-nonce-7");
    let key = head["jwk"].clone();

    let mcp: Vec<_> = fake
        .seen_at("/mcp")
        .into_iter()
        .filter(|r| r.headers.contains_key("authorization"))
        .collect();
    assert_eq!(mcp[0].status, 401, "the MCP server's nonce first");
    // The era probe is refused by this handshake-era upstream (a 400 without JSON-RPC),
    // which is how the host learns to fall back to initialize; everything after passes.
    let is_probe = |body: &[u8]| String::from_utf8_lossy(body).contains("server/discover");
    assert!(
        mcp[1..]
            .iter()
            .filter(|r| !is_probe(&r.body))
            .all(|r| r.status < 300),
        "then every request passes: {:?}",
        mcp.iter()
            .map(|r| (
                r.status,
                String::from_utf8_lossy(&r.body)
                    .chars()
                    .take(80)
                    .collect::<String>()
            ))
            .collect::<Vec<_>>()
    );
    let mut jtis = std::collections::HashSet::new();
    for request in &mcp {
        let authorization = request.headers["authorization"].to_str().unwrap();
        let token = authorization.strip_prefix("DPoP ").unwrap();
        let (head, claims) = verified_proof(request.headers["dpop"].to_str().unwrap());
        assert_eq!(head["jwk"], key, "one key for the authorization");
        assert_eq!(claims["htm"], request.method.as_str());
        assert_eq!(claims["htu"], fake.url());
        assert!(jtis.insert(claims["jti"].as_str().unwrap().to_owned()));
        use base64::Engine as _;
        use sha2::Digest as _;
        let ath = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .encode(sha2::Sha256::digest(token.as_bytes()));
        assert_eq!(claims["ath"], ath);
    }
    assert!(mcp.iter().skip(1).all(|r| {
        let (_, claims) = verified_proof(r.headers["dpop"].to_str().unwrap());
        claims["nonce"] == "server-nonce-7"
    }));

    // The key went to the store with the tokens, and never into a status or a Debug print.
    let url = Url::parse(&fake.url()).unwrap();
    let stored = store.tokens("remote", &url).unwrap().unwrap();
    assert_eq!(stored.token_type, "DPoP");
    let shown = format!("{stored:?} {:?}", host1.server_status("remote"));
    assert!(shown.contains("DpopKey([redacted])"), "{shown}");
    host1.shutdown().await;

    // The next run proves the stored key: no new login.
    let host2 = restarted(&fake, &store).await;
    assert!(echo(&host2).await.unwrap().contains("echoed"));
    assert_eq!(fake.seen_at("/authorize").len(), 1, "no second login");
    let last = fake.seen_at("/mcp").pop().unwrap();
    let (head, _) = verified_proof(last.headers["dpop"].to_str().unwrap());
    assert_eq!(head["jwk"], key);
    host2.shutdown().await;
}

/// A listener on 127.0.0.1 that counts the connections it accepts and answers each with an
/// empty 404: what a server's URLs must not make the host reach.
async fn canary() -> (u16, Arc<std::sync::atomic::AtomicUsize>) {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let hits = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = hits.clone();
    tokio::spawn(async move {
        loop {
            let (mut stream, _) = listener.accept().await.unwrap();
            counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            tokio::spawn(async move {
                let mut head = [0u8; 4096];
                let _ = stream.read(&mut head).await;
                let _ = stream
                    .write_all(
                        b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
                    )
                    .await;
            });
        }
    });
    (port, hits)
}

/// The host's own part of a status error: what follows `authorization:` (before it comes the
/// transport's error, which quotes the server's own `WWW-Authenticate` header).
fn authorization_error(error: Option<String>) -> String {
    let error = error.unwrap();
    // The authorization's reason comes first, the connection's 401 details after it.
    match error.split_once("authorization: ") {
        Some((_, ours)) => ours.split("; connect: ").next().unwrap_or(ours).to_owned(),
        None => panic!("no authorization error in {error}"),
    }
}

/// The reproduction of the issue: a 401 whose `resource_metadata` names another local port.
/// The unspecified address 0.0.0.0 reaches this machine's listeners, and no server is ever at
/// it: it is refused whatever the server's own address.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_challenge_cannot_make_the_host_fetch_an_unroutable_address() {
    let (port, hits) = canary().await;
    let fake = FakeAuth::start(FakeAuthOptions {
        resource_metadata_url: Some(format!("http://0.0.0.0:{port}/internal/admin?delete=1")),
        ..FakeAuthOptions::default()
    })
    .await;
    let ctx = logging_in(None);
    let host = host();
    host.start(vec![entry(&fake, &ctx)]).await;
    let status = host.server_status("remote").unwrap();
    host.shutdown().await;
    assert_eq!(
        hits.load(std::sync::atomic::Ordering::SeqCst),
        0,
        "the canary was reached"
    );
    assert_ne!(status.state, ServerState::Ready, "{status:?}");
    let error = authorization_error(status.last_error);
    assert!(
        error.contains(&format!("http://0.0.0.0:{port} refused")),
        "{error}"
    );
    assert!(error.contains("an unroutable address"), "{error}");
    assert!(
        !error.contains("admin") && !error.contains("delete"),
        "{error}"
    );
}

/// A server taken for a public one (as a tunnel to a remote server would be) cannot make the
/// host reach loopback, whether its URL names the address or a name that resolves to it when
/// the host connects.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_public_server_cannot_make_the_host_fetch_loopback() {
    let (port, hits) = canary().await;
    for target in [
        format!("https://127.0.0.1:{port}/internal/admin?delete=1"),
        format!("http://localhost:{port}/internal/admin"),
        format!("https://[::ffff:127.0.0.1]:{port}/internal"),
    ] {
        let fake = FakeAuth::start(FakeAuthOptions {
            resource_metadata_url: Some(target.clone()),
            ..FakeAuthOptions::default()
        })
        .await;
        let mut ctx = logging_in(None);
        ctx.server_class = Some(mcp_host::oauth::AddressClass::Public);
        let host = host();
        host.start(vec![entry(&fake, &ctx)]).await;
        let status = host.server_status("remote").unwrap();
        host.shutdown().await;
        assert_ne!(status.state, ServerState::Ready, "{target}: {status:?}");
        let error = authorization_error(status.last_error);
        assert!(error.contains("loopback address"), "{target}: {error}");
        assert!(!error.contains("internal"), "{target}: {error}");
        // Nothing else was asked of the fake's authorization server either.
        assert!(
            fake.seen_at("/.well-known/oauth-authorization-server")
                .is_empty()
        );
    }
    assert_eq!(
        hits.load(std::sync::atomic::Ordering::SeqCst),
        0,
        "the canary was reached"
    );
}

/// Stored tokens are never sent over plain http to a server that is not on loopback: the
/// request goes without them, and the status says why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_are_not_sent_over_plain_http_off_loopback() {
    let fake = FakeAuth::start(FakeAuthOptions::default()).await;
    let store = new_store("plain-http");
    // A loopback server in plain http: the login works and the token is sent.
    let ctx = logging_in(Some(store.clone()));
    let first = host();
    first.start(vec![entry(&fake, &ctx)]).await;
    assert_eq!(
        first.server_status("remote").unwrap().state,
        ServerState::Ready
    );
    first.shutdown().await;
    let before = fake.seen_at("/mcp").len();
    assert!(
        fake.seen_at("/mcp")
            .iter()
            .any(|r| r.headers.contains_key(http::header::AUTHORIZATION))
    );

    // The same server taken for a public one: the stored token stays home.
    let mut quiet = OAuthContext::new(Some(store.clone())).unwrap();
    quiet.server_class = Some(mcp_host::oauth::AddressClass::Public);
    let second = host();
    second.start(vec![entry(&fake, &quiet)]).await;
    let status = second.server_status("remote").unwrap();
    second.shutdown().await;
    let after = fake.seen_at("/mcp");
    assert!(after.len() > before, "the server was asked");
    for request in &after[before..] {
        assert!(
            !request.headers.contains_key(http::header::AUTHORIZATION),
            "a token went over plain http: {request:?}"
        );
    }
    assert_ne!(status.state, ServerState::Ready, "{status:?}");
    let error = status.last_error.unwrap();
    assert!(error.contains("plain http"), "{error}");
}
