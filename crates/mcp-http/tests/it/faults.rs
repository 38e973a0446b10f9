//! The client against the testkit's fake HTTP server, one HTTP-layer fault at a time, over
//! plain HTTP and over HTTPS. After each, the call has ended (a result or a clear error) and
//! another connection to the same server is unaffected.

use mcp_http::HttpConfig;
use mcp_protocol::schema::{CallToolParams, ContentBlock, Implementation};
use mcp_protocol::{ClientConfig, RequestOptions};
use mcp_session::Client;
use mcp_testkit::fake_http::{FakeHttp, Fault};

/// A fake over HTTP and one over HTTPS (with the CA the client must trust).
async fn fakes() -> Vec<(FakeHttp, Option<String>)> {
    let (ca, acceptor) = mcp_testkit::fake_http::test_pki();
    vec![
        (FakeHttp::start().await, None),
        (FakeHttp::start_with(Some(acceptor)).await, Some(ca)),
    ]
}

async fn client_with(fake: &FakeHttp, ca: Option<&String>) -> Client {
    let session = ClientConfig::new(Implementation::new("faults".into(), "0".into()));
    let mut config = HttpConfig::new("fake", fake.url.clone());
    config.extra_roots_pem = ca.map(|c| vec![c.clone().into_bytes()]).unwrap_or_default();
    mcp_http::connect(config, session).await.unwrap()
}

async fn client(fake: &FakeHttp) -> Client {
    client_with(fake, None).await
}

async fn call(client: &Client) -> Result<String, mcp_session::Error> {
    call_with(client, RequestOptions::DEFAULT).await
}

/// [`call`], with `options` (a shorter timeout).
async fn call_with(client: &Client, options: RequestOptions) -> Result<String, mcp_session::Error> {
    let result = client
        .call_tool(CallToolParams::new("echo".into()), options)
        .await?;
    match &result.content[0] {
        ContentBlock::Text(t) => Ok(t.text.clone()),
        other => panic!("unexpected {other:?}"),
    }
}

/// Runs `fault` against one connection, then checks a second, untouched one still works;
/// over HTTP and HTTPS, which must agree.
async fn check(fault: Fault) -> Result<String, mcp_session::Error> {
    let mut outcomes = Vec::new();
    for (fake, ca) in fakes().await {
        let witness = client_with(&fake, ca.as_ref()).await;
        let victim = client_with(&fake, ca.as_ref()).await;
        fake.set_fault(fault);
        let outcome = call(&victim).await;
        fake.set_fault(Fault::None);
        assert_eq!(
            call(&witness).await.unwrap(),
            "called",
            "after {fault:?} on {}",
            fake.url
        );
        outcomes.push(outcome);
    }
    let https = outcomes.pop().unwrap();
    let http = outcomes.pop().unwrap();
    assert_eq!(
        http.is_ok(),
        https.is_ok(),
        "HTTP and HTTPS agree on {fault:?}"
    );
    http
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_5xx_fails_the_call_with_the_status_and_body() {
    let err = check(Fault::ServerError).await.unwrap_err();
    assert!(
        err.to_string()
            .contains("HTTP 503 Service Unavailable: overloaded, try later"),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_closed_after_priming_is_resumed() {
    assert_eq!(check(Fault::CloseAfterPriming).await.unwrap(), "resumed");
}

/// A stream that keeps dropping without a new event is resumed `max_resumptions` times in a
/// row, then its call fails saying so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_that_keeps_dropping_is_resumed_a_bounded_number_of_times() {
    let fake = FakeHttp::start().await;
    let session = ClientConfig::new(Implementation::new("faults".into(), "0".into()));
    let mut config = HttpConfig::new("fake", fake.url.clone());
    config.max_resumptions = 3;
    let victim = mcp_http::connect(config, session).await.unwrap();
    fake.set_fault(Fault::KeepDropping);
    let err = call(&victim).await.unwrap_err();
    assert!(
        err.to_string().contains("gave up after 3 resumptions"),
        "{err}"
    );
    let resumes = fake
        .seen()
        .iter()
        .filter(|s| s.headers.contains_key("last-event-id"))
        .count();
    // The first resumption follows a stream that brought an event (the priming one); the
    // three after it brought nothing.
    assert_eq!(resumes, 1 + 3, "resuming GETs");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_reset_mid_stream_is_resumed_from_the_last_whole_event() {
    let fake = FakeHttp::start().await;
    let victim = client(&fake).await;
    fake.set_fault(Fault::ResetMidStream);
    assert_eq!(call(&victim).await.unwrap(), "resumed");
    // The half-sent event 2 was never committed: the resume starts after the priming event.
    let resume = fake
        .seen()
        .into_iter()
        .find(|s| s.headers.contains_key("last-event-id"))
        .unwrap();
    assert_eq!(resume.headers["last-event-id"], "1");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_trickle_still_delivers_the_answer() {
    assert_eq!(check(Fault::Trickle).await.unwrap(), "called");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_404_for_a_known_session_ends_it() {
    let fake = FakeHttp::start().await;
    let victim = client(&fake).await;
    fake.set_fault(Fault::ExpireSession);
    let err = call(&victim).await.unwrap_err();
    assert!(
        err.is_closed() && err.to_string().contains("HTTP 404"),
        "{err}"
    );
    assert!(victim.is_closed());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hung_stream_times_out_and_the_server_is_told() {
    let fake = FakeHttp::start().await;
    let victim = client(&fake).await;
    fake.set_fault(Fault::Hang);
    let options = RequestOptions::DEFAULT.timeout(std::time::Duration::from_millis(300));
    let err = call_with(&victim, options).await.unwrap_err();
    assert!(err.is_timeout(), "{err}");
    fake.set_fault(Fault::None);
    // The cancellation went out as its own POST.
    let cancelled = mcp_testkit::wait_until(std::time::Duration::from_secs(5), || {
        fake.seen()
            .iter()
            .any(|s| s.body["method"] == "notifications/cancelled")
    });
    assert!(cancelled, "notifications/cancelled was sent");
    assert_eq!(
        call(&victim).await.unwrap(),
        "called",
        "the connection lives on"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_on_a_stream_is_a_diagnostic_and_the_answer_still_comes() {
    let fake = FakeHttp::start().await;
    let victim = client(&fake).await;
    fake.set_fault(Fault::Garbage);
    assert_eq!(call(&victim).await.unwrap(), "called");
    assert!(
        victim
            .diagnostics()
            .iter()
            .any(|d| d.contains("not valid JSON")),
        "{:?}",
        victim.diagnostics()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_over_the_size_limit_fails_its_call_at_once() {
    let fake = FakeHttp::start().await;
    let session = ClientConfig::new(Implementation::new("faults".into(), "0".into()));
    let mut config = HttpConfig::new("fake", fake.url.clone());
    config.max_message_bytes = 4096;
    let victim = mcp_http::connect(config, session).await.unwrap();
    fake.set_fault(Fault::Huge);
    let err = call(&victim).await.unwrap_err();
    assert!(err.to_string().contains("larger than 4096 bytes"), "{err}");
    fake.set_fault(Fault::None);
    assert_eq!(
        call(&victim).await.unwrap(),
        "called",
        "the connection lives on"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_of_a_call_already_over_is_not_resumed() {
    let fake = FakeHttp::start().await;
    let victim = client(&fake).await;
    // The stream ends after its priming event, which asks for a retry after 100 ms; the call
    // times out before that, so there is nothing left to resume for.
    fake.set_fault(Fault::CloseAfterPriming);
    let options = RequestOptions::DEFAULT.timeout(std::time::Duration::from_millis(30));
    let err = call_with(&victim, options).await.unwrap_err();
    assert!(err.is_timeout(), "{err}");
    tokio::time::sleep(std::time::Duration::from_millis(400)).await;
    let resumed = fake
        .seen()
        .iter()
        .any(|s| s.headers.contains_key("last-event-id"));
    assert!(!resumed, "a GET resumed the stream of a call that was over");
}

/// A notification (or a response) refused with 503 is sent again after `Retry-After`, and
/// taken the third time: a busy server, or a balancer in front of a dying one, loses nothing
/// that waits for no answer. The first such message is the handshake's own
/// `notifications/initialized`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_notification_refused_as_busy_is_sent_again_until_taken() {
    let fake = FakeHttp::start().await;
    fake.set_fault(Fault::BusyTwice);
    let client = client(&fake).await;
    let sent = || {
        fake.seen()
            .iter()
            .filter(|s| s.body["method"] == "notifications/initialized")
            .count()
    };
    let began = std::time::Instant::now();
    while sent() < 3 {
        assert!(
            began.elapsed() < std::time::Duration::from_secs(10),
            "sent {} times",
            sent()
        );
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    // The session goes on: a call after it is answered, and nothing was sent a fourth time.
    fake.set_fault(Fault::None);
    assert_eq!(call(&client).await.unwrap(), "called");
    assert_eq!(sent(), 3);
}
