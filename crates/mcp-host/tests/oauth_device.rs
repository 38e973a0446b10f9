//! The device flow (RFC 8628) end to end: the host against the testkit's fake authorization
//! server, with a test "person" who opens the verification page (approving or denying) while
//! the host polls. The test's device agent records every wait the flow asks for and returns at
//! once, so the polling is counted, not timed.

// Test code: an unwrap that fails is a failed test, with its location.
#![allow(clippy::unwrap_used)]

use std::sync::{Arc, Mutex};

use mcp_host::oauth::{
    AutoFollow, DeviceUserAgent, DeviceVerification, OAuthContext, Settings, Url,
};
use mcp_host::permission::AllowAll;
use mcp_host::{CallOptions, Connect, Host, HostOptions, ServerEntry, ServerState};
use mcp_http::HttpConfig;
use mcp_oauth::BoxFuture;
use mcp_protocol::JsonObject;
use mcp_protocol::schema::Implementation;
use mcp_testkit::fake_auth::{FakeAuth, FakeAuthOptions};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

const DEVICE_GRANT: &str = "urn:ietf:params:oauth:grant-type:device_code";

/// The person on the other device: opens the page with the code filled in (adding `deny=1`
/// to deny) when the host waits for the `on`-th time.
struct Person {
    on: usize,
    deny: bool,
    shown: Mutex<Vec<DeviceVerification>>,
    waits: Mutex<Vec<u64>>,
    page: Mutex<Option<String>>,
}

impl Person {
    fn new(on: usize, deny: bool) -> Arc<Self> {
        Arc::new(Self {
            on,
            deny,
            shown: Mutex::default(),
            waits: Mutex::default(),
            page: Mutex::default(),
        })
    }
}

/// A plain HTTP GET on loopback: the body.
async fn get(url: &Url) -> String {
    let mut stream = tokio::net::TcpStream::connect((url.host_str().unwrap(), url.port().unwrap()))
        .await
        .unwrap();
    let target = format!("{}?{}", url.path(), url.query().unwrap_or_default());
    let request = format!("GET {target} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).await.unwrap();
    answer
}

impl DeviceUserAgent for Person {
    fn show(&self, verification: &DeviceVerification) -> Result<(), mcp_host::oauth::BoxError> {
        self.shown.lock().unwrap().push(verification.clone());
        Ok(())
    }

    fn wait(&self, ms: u64) -> BoxFuture<'_, ()> {
        let n = {
            let mut waits = self.waits.lock().unwrap();
            waits.push(ms);
            waits.len()
        };
        Box::pin(async move {
            if n != self.on {
                return;
            }
            let shown = self.shown.lock().unwrap()[0].clone();
            let mut url = shown.verification_uri_complete.unwrap();
            if self.deny {
                url.query_pairs_mut().append_pair("deny", "1");
            }
            *self.page.lock().unwrap() = Some(get(&url).await);
        })
    }
}

fn host() -> Host {
    Host::new(HostOptions::new(
        Implementation::new("device-test".into(), "0".into()),
        Arc::new(AllowAll),
    ))
}

/// The host with `person` as its only way to log in, started on the fake.
async fn started(fake: &FakeAuth, person: &Arc<Person>) -> Host {
    let ctx = OAuthContext::new(None)
        .unwrap()
        .with_device_agent(person.clone());
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
    let host = host();
    host.start(vec![e]).await;
    host
}

fn device_options() -> FakeAuthOptions {
    FakeAuthOptions {
        device: true,
        ..FakeAuthOptions::default()
    }
}

fn polls(fake: &FakeAuth) -> Vec<String> {
    fake.seen_at("/token")
        .iter()
        .filter(|t| t.form("grant_type").as_deref() == Some(DEVICE_GRANT))
        .map(|t| t.form("device_code").unwrap())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_device_login_is_approved_on_the_page_and_the_server_is_used() {
    let fake = FakeAuth::start(device_options()).await;
    // Approved while the host waits for its 2nd poll: the 1st is still pending.
    let person = Person::new(2, false);
    let host = started(&fake, &person).await;
    let status = host.server_status("remote").unwrap();
    assert_eq!(status.state, ServerState::Ready, "{status:?}");
    assert_eq!(
        person
            .page
            .lock()
            .unwrap()
            .as_deref()
            .map(|p| p.ends_with("approved")),
        Some(true)
    );
    let out = host
        .call_tool("remote", "echo", JsonObject::new(), CallOptions::default())
        .await
        .unwrap();
    assert!(format!("{:?}", out.result.content).contains("echoed"));

    // Registered for the device grant; asked for a code for the server's resource; polled
    // twice at the server's interval, with the code the device authorization gave.
    let registration: serde_json::Value =
        serde_json::from_slice(&fake.seen_at("/register")[0].body).unwrap();
    let grants = registration["grant_types"].as_array().unwrap();
    assert!(
        grants.contains(&serde_json::json!(DEVICE_GRANT)),
        "{registration}"
    );
    let device = fake.seen_at("/device");
    assert_eq!(device.len(), 1);
    assert_eq!(device[0].form("resource").unwrap(), fake.resource());
    let codes = polls(&fake);
    assert_eq!(codes.len(), 2, "{codes:?}");
    assert!(codes.iter().all(|c| c.starts_with("device-")), "{codes:?}");
    assert_eq!(*person.waits.lock().unwrap(), [5_000, 5_000]);
    assert!(fake.seen_at("/authorize").is_empty(), "no browser login");

    // The person was shown the code and the page, never the device code.
    let shown = person.shown.lock().unwrap().clone();
    assert!(shown[0].user_code.starts_with("FAKE-"), "{shown:?}");
    assert!(shown[0].verification_uri.path().ends_with("/activate"));
    assert!(!format!("{shown:?} {status:?}").contains(&codes[0]));
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_down_lengthens_the_wait_and_a_denial_ends_the_login() {
    let fake = FakeAuth::start(FakeAuthOptions {
        device_answers: vec!["slow_down".to_owned()],
        ..device_options()
    })
    .await;
    // Denied while the host waits for its 2nd poll (the 1st was told to slow down).
    let person = Person::new(2, true);
    let host = started(&fake, &person).await;
    let status = host.server_status("remote").unwrap();
    assert_ne!(status.state, ServerState::Ready, "{status:?}");
    let error = status.last_error.clone().unwrap();
    assert!(error.contains("denied"), "{error}");
    assert_eq!(*person.waits.lock().unwrap(), [5_000, 10_000]);
    assert_eq!(polls(&fake).len(), 2);
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_code_ends_the_login() {
    let fake = FakeAuth::start(FakeAuthOptions {
        device_answers: vec![
            "authorization_pending".to_owned(),
            "expired_token".to_owned(),
        ],
        ..device_options()
    })
    .await;
    let person = Person::new(0, false);
    let host = started(&fake, &person).await;
    let status = host.server_status("remote").unwrap();
    assert_ne!(status.state, ServerState::Ready, "{status:?}");
    let error = status.last_error.clone().unwrap();
    assert!(
        error.contains("expired") && error.contains("log in again"),
        "{error}"
    );
    assert_eq!(polls(&fake).len(), 2);
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_a_browser_too_the_device_flow_is_used_only_where_offered() {
    // Not offered: the browser (here one that follows the redirect itself).
    let fake = FakeAuth::start(FakeAuthOptions::default()).await;
    let person = Person::new(1, false);
    let base = OAuthContext::new(None).unwrap();
    let ctx = base
        .clone()
        .with_user_agent(Arc::new(AutoFollow::new(base.fetcher().clone())))
        .with_device_agent(person.clone());
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
    let host = host();
    host.start(vec![e]).await;
    assert_eq!(
        host.server_status("remote").unwrap().state,
        ServerState::Ready
    );
    assert_eq!(fake.seen_at("/authorize").len(), 1);
    assert!(person.shown.lock().unwrap().is_empty());
    host.shutdown().await;
}
