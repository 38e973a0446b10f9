//! OAuth over a host's whole life, against the testkit's fake authorization server: the
//! refresh timer renews tokens ahead of expiry (once per lifetime, however short, and never
//! after the host is gone), step-ups start a new count after every success while a chain
//! of challenges without one is still cut off, and a server that moves to another
//! authorization server, or to another resource, gets new tokens without the old ones being
//! presented to anything new. Tokens are counted at the fake's token endpoint; no test
//! asserts how long anything took.

// Test code: an unwrap that fails is a failed test, with its location.
#![allow(clippy::unwrap_used)]

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use mcp_host::auth_store::AuthStore;
use mcp_host::oauth::{AutoFollow, OAuthContext, Settings, Url};
use mcp_host::permission::AllowAll;
use mcp_host::{CallOptions, Connect, Host, HostOptions, ServerEntry, ServerState};
use mcp_http::HttpConfig;
use mcp_protocol::JsonObject;
use mcp_protocol::schema::Implementation;
use mcp_testkit::fake_auth::{FakeAuth, FakeAuthOptions, Role, SeenRequest};

fn new_store(name: &str) -> AuthStore {
    let dir: PathBuf =
        std::env::temp_dir().join(format!("mcp-host-oauth-life-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    AuthStore::new(dir.join("mcp-auth.json"))
}

/// A context whose logins go through on their own (the user agent follows the redirect).
fn logging_in(store: Option<AuthStore>) -> OAuthContext {
    let ctx = OAuthContext::new(store).unwrap();
    ctx.clone()
        .with_user_agent(Arc::new(AutoFollow::new(ctx.fetcher().clone())))
}

fn host() -> Host {
    Host::new(HostOptions::new(
        Implementation::new("oauth-life-test".into(), "0".into()),
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

/// A host connected to `fake`, logged in.
async fn ready(fake: &FakeAuth, ctx: &OAuthContext) -> Host {
    let host = host();
    host.start(vec![entry(fake, ctx)]).await;
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

/// The `/mcp` requests the fake refused with 401.
fn unauthorized(fake: &FakeAuth) -> usize {
    fake.seen_at("/mcp")
        .iter()
        .filter(|r| r.status == 401)
        .count()
}

/// The authorizations the fake was asked for, by their distinct `state` (a user agent may
/// send the same request twice over a pooled connection the server closed).
fn authorizations(fake: &FakeAuth) -> usize {
    let states: std::collections::BTreeSet<String> = fake
        .seen_at("/authorize")
        .iter()
        .filter_map(|r| r.query_param("state"))
        .collect();
    states.len()
}

/// Waits (a bounded while, never asserting how long) until `done` holds.
async fn until(what: &str, mut done: impl FnMut() -> bool) {
    for _ in 0..600 {
        if done() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{what} did not happen within a minute");
}

fn short_lived(seconds: u64) -> FakeAuthOptions {
    FakeAuthOptions {
        access_token_lifetime: Duration::from_secs(seconds),
        ..FakeAuthOptions::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_lived_host_refreshes_ahead_of_expiry_with_no_401_on_the_wire() {
    // Six-second tokens, the default 60 s margin: refreshed halfway through each lifetime,
    // three seconds before it ends (slack for a loaded machine).
    let fake = FakeAuth::start(short_lived(6)).await;
    let host = ready(&fake, &logging_in(Some(new_store("timer")))).await;
    let refused_at_login = unauthorized(&fake);
    assert!(
        refused_at_login >= 1,
        "the first connect is asked to log in"
    );
    assert_eq!(fake.token_requests("refresh_token"), 0);
    // Calls go on while at least three tokens in a row expire: every one is renewed in time.
    let mut calls = 0;
    while fake.token_requests("refresh_token") < 3 {
        assert!(
            calls < 300,
            "three refreshes did not happen within a minute of calls"
        );
        assert!(echo(&host).await.unwrap().contains("echoed"));
        calls += 1;
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(calls > 0);
    assert!(fake.seen_at("/mcp").iter().any(|r| r.status == 200));
    assert_eq!(
        unauthorized(&fake),
        refused_at_login,
        "no request went out with an expired token"
    );
    assert_eq!(authorizations(&fake), 1, "refreshes, not logins");
    let status = host.server_status("remote").unwrap();
    assert_eq!(status.state, ServerState::Ready, "{status:?}");
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_shorter_lived_than_the_margin_is_not_refreshed_per_call() {
    // rmcp #1450: with a 30 s token and the 60 s margin, the token is "due" on arrival.
    let fake = FakeAuth::start(short_lived(30)).await;
    let host = ready(&fake, &logging_in(Some(new_store("per-call")))).await;
    let before = fake.seen_at("/mcp").len();
    for _ in 0..20 {
        assert!(echo(&host).await.unwrap().contains("echoed"));
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(
        fake.seen_at("/mcp").len() >= before + 20,
        "the calls were made"
    );
    assert!(
        fake.token_requests("refresh_token") <= 1,
        "{} refreshes within one token lifetime",
        fake.token_requests("refresh_token")
    );
    assert_eq!(fake.token_requests("authorization_code"), 1);
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_and_drop_stop_the_refresh_timer() {
    let fakes = [
        FakeAuth::start(short_lived(2)).await,
        FakeAuth::start(short_lived(2)).await,
    ];
    let shut = ready(&fakes[0], &logging_in(None)).await;
    let dropped = ready(&fakes[1], &logging_in(None)).await;
    // The timers run...
    until("a refresh by each host", || {
        fakes.iter().all(|f| f.token_requests("refresh_token") >= 1)
    })
    .await;
    // ...until the host is shut down, or dropped.
    shut.shutdown().await;
    drop(dropped);
    let counts: Vec<usize> = fakes
        .iter()
        .map(|f| f.token_requests("refresh_token"))
        .collect();
    // Four token lifetimes: a timer left behind would have refreshed at least twice.
    tokio::time::sleep(Duration::from_secs(8)).await;
    let after: Vec<usize> = fakes
        .iter()
        .map(|f| f.token_requests("refresh_token"))
        .collect();
    assert_eq!(after, counts, "refreshes after the host was gone");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn step_ups_with_successes_between_are_never_cut_off() {
    let fake = FakeAuth::start(FakeAuthOptions::default()).await;
    let host = ready(&fake, &logging_in(None)).await;
    assert!(echo(&host).await.unwrap().contains("echoed"));
    // Six new scopes in a row, each asked for with a 403 and granted: more than the three
    // attempts a chain of challenges may take.
    for i in 1..=6 {
        let scope = format!("scope{i}");
        fake.set(|o| o.required_scope = Some(scope.clone()));
        let answer = echo(&host).await;
        assert!(
            answer.as_deref().is_ok_and(|a| a.contains("echoed")),
            "step-up {i}: {answer:?}"
        );
    }
    let forbidden = fake
        .seen_at("/mcp")
        .iter()
        .filter(|r| r.status == 403)
        .count();
    assert_eq!(forbidden, 6, "each scope was asked for once");
    assert_eq!(authorizations(&fake), 7, "a login and six step-ups");
    let last = fake.seen_at("/authorize").pop().unwrap();
    let asked = last.query_param("scope").unwrap_or_default();
    assert!(
        asked.contains("scope1") && asked.contains("scope6"),
        "{asked}"
    );
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chain_of_step_ups_without_a_success_is_still_cut_off() {
    let fake = FakeAuth::start(FakeAuthOptions::default()).await;
    let host = ready(&fake, &logging_in(None)).await;
    let logins = authorizations(&fake);
    // A scope the authorization server never grants: every step-up ends in another 403.
    fake.set(|o| {
        o.required_scope = Some("admin".to_owned());
        o.withheld_scope = Some("admin".to_owned());
    });
    let mut errors = Vec::new();
    for _ in 0..5 {
        errors.push(echo(&host).await.unwrap_err());
    }
    assert_eq!(
        authorizations(&fake),
        logins + 3,
        "three attempts, then no more: {errors:#?}"
    );
    assert!(errors.iter().all(|e| e.contains("403")), "{errors:#?}");
    host.shutdown().await;
}

/// Whether `request` carries `secret` anywhere: a header, its query or its body.
fn carries(request: &SeenRequest, secret: &str) -> bool {
    request
        .headers
        .values()
        .any(|v| String::from_utf8_lossy(v.as_bytes()).contains(secret))
        || request
            .query
            .as_deref()
            .unwrap_or_default()
            .contains(secret)
        || String::from_utf8_lossy(&request.body).contains(secret)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_moves_to_another_authorization_server_gets_a_new_client_and_login() {
    let fake = FakeAuth::start(FakeAuthOptions {
        registration_method: Some("client_secret_basic".to_owned()),
        ..FakeAuthOptions::default()
    })
    .await;
    let store = new_store("moved");
    let url = Url::parse(&fake.url()).unwrap();
    let first = ready(&fake, &logging_in(Some(store.clone()))).await;
    first.shutdown().await;
    let old = store.tokens("remote", &url).unwrap().unwrap();
    let old_client = store.registrations().unwrap()[&fake.issuer()].clone();
    assert_eq!(old.issuer.as_deref(), Some(fake.issuer().as_str()));
    assert_eq!(old.resource.as_deref(), Some(fake.resource().as_str()));
    let old_secrets = [
        old.access_token.secret().to_owned(),
        old.refresh_token.as_ref().unwrap().secret().to_owned(),
        old_client.client_id.clone(),
        old_client
            .client_secret
            .as_ref()
            .unwrap()
            .secret()
            .to_owned(),
    ];

    // The server now names authorization server B, and takes only B's tokens.
    fake.set(|o| o.moved = true);
    let seen_before = fake.seen().len();
    let second = ready(&fake, &logging_in(Some(store.clone()))).await;
    assert!(echo(&second).await.unwrap().contains("echoed"));
    second.shutdown().await;
    let since: Vec<SeenRequest> = fake.seen().split_off(seen_before);
    let at_b: Vec<&SeenRequest> = since
        .iter()
        .filter(|r| r.role == Role::SecondAuth)
        .collect();
    let paths: Vec<&str> = at_b.iter().map(|r| r.path.as_str()).collect();
    for path in ["/register", "/authorize", "/token"] {
        assert!(paths.contains(&path), "{path} at B: {paths:?}");
    }
    assert!(
        since.iter().all(|r| r.role != Role::Auth),
        "nothing more went to A"
    );
    for request in &at_b {
        for secret in &old_secrets {
            assert!(
                !carries(request, secret),
                "A's {secret} went to B's {}",
                request.path
            );
        }
    }
    // The server saw A's access token once, on the request its 401 answered (the host cannot
    // know of the move before), and never again.
    let to_server: Vec<&SeenRequest> = since.iter().filter(|r| r.path == "/mcp").collect();
    let refused = to_server
        .iter()
        .position(|r| r.status == 401)
        .expect("the server refused A's token");
    assert!(to_server.len() > refused + 1, "requests after the move");
    for request in &to_server[refused + 1..] {
        for secret in &old_secrets {
            assert!(!carries(request, secret), "A's {secret} went to the server");
        }
    }
    // The store holds B's tokens and B's client beside A's.
    let new = store.tokens("remote", &url).unwrap().unwrap();
    assert_eq!(new.issuer.as_deref(), Some(fake.second_issuer().as_str()));
    let registrations = store.registrations().unwrap();
    assert_eq!(registrations.len(), 2, "{registrations:?}");
    assert_ne!(
        registrations[&fake.second_issuer()].client_id,
        old_client.client_id
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_minted_for_another_resource_are_not_refreshed_for_the_new_one() {
    let fake = FakeAuth::start(FakeAuthOptions::default()).await;
    let store = new_store("resource");
    let first = ready(&fake, &logging_in(Some(store.clone()))).await;
    first.shutdown().await;
    let old_resource = fake.resource();
    let new_resource = fake.url().trim_end_matches("/mcp").to_owned();
    assert_ne!(old_resource, new_resource);

    // The server now states its origin as its resource, and wants a new token.
    fake.set(|o| o.prm_resource = Some(new_resource.clone()));
    fake.revoke_access_tokens();
    let seen_before = fake.seen().len();
    let second = ready(&fake, &logging_in(Some(store.clone()))).await;
    assert!(echo(&second).await.unwrap().contains("echoed"));
    second.shutdown().await;
    let tokens: Vec<SeenRequest> = fake
        .seen()
        .split_off(seen_before)
        .into_iter()
        .filter(|r| r.path == "/token")
        .collect();
    let grants: Vec<Option<String>> = tokens.iter().map(|r| r.form("grant_type")).collect();
    assert_eq!(
        grants,
        [Some("authorization_code".to_owned())],
        "a new login, no refresh of the old resource's token"
    );
    assert_eq!(tokens[0].form("resource"), Some(new_resource.clone()));
    let url = Url::parse(&fake.url()).unwrap();
    let stored = store.tokens("remote", &url).unwrap().unwrap();
    assert_eq!(stored.resource, Some(new_resource));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_old_authorization_servers_token_is_never_sent_again_even_before_a_new_login() {
    // No refresh token: nothing but discovery tells the old access token apart.
    let fake = FakeAuth::start(FakeAuthOptions {
        refresh_tokens: false,
        ..FakeAuthOptions::default()
    })
    .await;
    let store = new_store("moved-no-login");
    let url = Url::parse(&fake.url()).unwrap();
    ready(&fake, &logging_in(Some(store.clone())))
        .await
        .shutdown()
        .await;
    let old = store.tokens("remote", &url).unwrap().unwrap();
    let old_token = old.access_token.secret().to_owned();
    assert!(old.refresh_token.is_none());

    // The server moves to B; no one is there to log in, twice.
    fake.set(|o| o.moved = true);
    let seen_before = fake.seen().len();
    for _ in 0..2 {
        let quiet = OAuthContext::new(Some(store.clone())).unwrap();
        let host = host();
        host.start(vec![entry(&fake, &quiet)]).await;
        let status = host.server_status("remote").unwrap();
        assert_eq!(status.state, ServerState::AuthRequired, "{status:?}");
        host.shutdown().await;
    }
    let to_server: Vec<SeenRequest> = fake
        .seen()
        .split_off(seen_before)
        .into_iter()
        .filter(|r| r.path == "/mcp")
        .collect();
    let with_old: Vec<usize> = (0..to_server.len())
        .filter(|&i| carries(&to_server[i], &old_token))
        .collect();
    assert_eq!(
        with_old,
        [0],
        "only the first request, whose 401 told of the move, carried A's token"
    );
    assert!(to_server.len() >= 2, "the second run connected too");
    assert!(
        store.tokens("remote", &url).unwrap().is_none(),
        "A's tokens are gone"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_started_on_stored_tokens_refreshes_them_before_any_401() {
    // The gateway's case: `mcp-host login` stored the tokens, and the host that serves starts
    // on them without ever being challenged. Its timer must still refresh ahead of expiry.
    let fake = FakeAuth::start(FakeAuthOptions {
        rotate_refresh_tokens: true,
        ..short_lived(6)
    })
    .await;
    let store = new_store("stored");
    // The login: a host that logs in through the first challenge, then ends.
    ready(&fake, &logging_in(Some(store.clone())))
        .await
        .shutdown()
        .await;
    assert_eq!(fake.token_requests("authorization_code"), 1);
    let refused_at_login = unauthorized(&fake);
    let host = ready(&fake, &OAuthContext::new(Some(store)).unwrap()).await;
    let mut calls = 0;
    while fake.token_requests("refresh_token") < 3 {
        assert!(
            calls < 300,
            "three refreshes did not happen within a minute of calls"
        );
        assert!(echo(&host).await.unwrap().contains("echoed"));
        calls += 1;
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(fake.seen_at("/mcp").iter().any(|r| r.status == 200));
    assert_eq!(
        unauthorized(&fake),
        refused_at_login,
        "no request went out with an expired token"
    );
    assert_eq!(authorizations(&fake), 1, "refreshes, not logins");
    host.shutdown().await;
}
