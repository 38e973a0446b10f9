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
    let dir = temp_dir("login");
    let store = AuthStore::new(dir.join("mcp-auth.json"));

    // First run: no token; the 401 leads to discovery, registration, login.
    let ctx = OAuthContext::new(Some(store.clone())).unwrap();
    let ctx = ctx
        .clone()
        .with_user_agent(Arc::new(AutoFollow::new(ctx.fetcher().clone())));
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
    let quiet = OAuthContext::new(Some(store.clone())).unwrap();
    let host2 = host();
    host2.start(vec![entry(&fake, &quiet)]).await;
    assert_eq!(
        host2.server_status("remote").unwrap().state,
        ServerState::Ready
    );
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
    let ctx = OAuthContext::new(None).unwrap();
    let ctx = ctx
        .clone()
        .with_user_agent(Arc::new(AutoFollow::new(ctx.fetcher().clone())));
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
    let dir = temp_dir("shared");
    let store = AuthStore::new(dir.join("mcp-auth.json"));
    let url = Url::parse(&fake.url()).unwrap();
    let first = OAuthContext::new(Some(store.clone())).unwrap();
    let first = first
        .clone()
        .with_user_agent(Arc::new(AutoFollow::new(first.fetcher().clone())));
    first
        .hook_for("remote", url.clone(), Settings::new(url.clone()))
        .login()
        .await
        .unwrap();

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
