//! The loopback listener against a real socket: the registered port taken when free and kept
//! away from when not, the browser held until the login's outcome, and the pages it gets.

use std::io::{Read as _, Write as _};
use std::sync::mpsc;

use super::*;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

/// A port nobody listens on right now.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

#[test]
fn the_registered_port_is_taken_when_free() {
    let rt = runtime();
    let ua = rt
        .block_on(Loopback::bind(|_| Ok(()), Duration::from_millis(50)))
        .expect("listener");
    let first = ua.port();
    let registered = format!("http://127.0.0.1:{}/callback", free_port());
    let other = [
        "https://app.example/callback".to_owned(),
        "http://localhost:1/callback".to_owned(),
        registered.clone(),
    ];
    assert_eq!(ua.adopt_redirect_uri(&other), Some(registered.clone()));
    assert_eq!(ua.redirect_uri(), registered);
    assert_ne!(ua.port(), first);
    // It listens there now: the old port is closed, the new one accepts.
    assert!(TcpStream::connect(("127.0.0.1", ua.port())).is_ok());
    assert!(TcpListener::bind(("127.0.0.1", first)).is_ok());
    // Offered its own URI, it keeps it.
    assert_eq!(
        ua.adopt_redirect_uri(std::slice::from_ref(&registered)),
        Some(registered)
    );
}

#[test]
fn a_registered_port_in_use_is_not_taken() {
    let rt = runtime();
    let ua = rt
        .block_on(Loopback::bind(|_| Ok(()), Duration::from_millis(50)))
        .expect("listener");
    let own = ua.redirect_uri();
    let busy = TcpListener::bind("127.0.0.1:0").expect("another program");
    let port = busy.local_addr().expect("address").port();
    let registered = [format!("http://127.0.0.1:{port}/callback")];
    assert_eq!(ua.adopt_redirect_uri(&registered), None);
    assert_eq!(ua.redirect_uri(), own);
}

/// Logs in with a "browser" that follows the authorization URL to `callback?<query>` (the
/// state of the URL appended unless `keep_state` is false), then reports `outcome`; returns
/// what `authorize` gave and the page the browser got.
fn round_trip(query: &str, outcome: Option<AuthError>) -> (Result<Url, String>, String) {
    let rt = runtime();
    let (tx, rx) = mpsc::channel();
    let query = query.to_owned();
    let ua = rt
        .block_on(Loopback::bind(
            move |url: &Url| {
                let state: String = url
                    .query_pairs()
                    .find(|(k, _)| k == "state")
                    .map(|(_, v)| v.into_owned())
                    .unwrap_or_default();
                let target = url.query_pairs().find(|(k, _)| k == "redirect_uri");
                let target = target.map(|(_, v)| v.into_owned()).unwrap_or_default();
                let path = format!("/callback?{query}&state={state}");
                let port = Url::parse(&target).ok().and_then(|u| u.port()).unwrap_or(0);
                let tx = tx.clone();
                std::thread::spawn(move || {
                    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
                    write!(s, "GET {path} HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n").expect("send");
                    let mut page = String::new();
                    let _ = s.read_to_string(&mut page);
                    let _ = tx.send(page);
                });
                Ok(())
            },
            Duration::from_secs(10),
        ))
        .expect("listener")
        .for_server("my-server");
    let redirect = ua.redirect_uri();
    let url = Url::parse_with_params(
        "https://as.example/authorize",
        [("redirect_uri", redirect.as_str()), ("state", "s-1")],
    )
    .expect("url");
    let landed = rt.block_on(ua.authorize(url));
    // The browser waits for the outcome: nothing has come back yet.
    assert!(
        rx.recv_timeout(Duration::from_millis(100)).is_err(),
        "the page came before the outcome"
    );
    match &outcome {
        None => ua.finished(Ok(())),
        Some(e) => ua.finished(Err(e)),
    }
    let page = rx.recv_timeout(Duration::from_secs(10)).expect("a page");
    (landed.map_err(|e| e.to_string()), page)
}

#[test]
fn the_page_says_logged_in_only_after_the_tokens() {
    let (landed, page) = round_trip("code=c-1", None);
    let landed = landed.expect("landed");
    assert!(landed.query().is_some_and(|q| q.contains("code=c-1")));
    assert!(page.starts_with("HTTP/1.1 200 OK"), "{page}");
    assert!(page.contains("Logged in to `my-server`"), "{page}");
    assert!(!page.contains("failed"), "{page}");
}

#[test]
fn the_page_of_a_failed_login_says_why_and_what_to_do() {
    let (_, page) = round_trip(
        "error=access_denied&error_description=%3Cscript%3Ealert(1)%3C%2Fscript%3E+said+no",
        Some(AuthError::UserAgent(mcp_oauth::SeamError::new(
            "authorization was refused: access_denied",
        ))),
    );
    assert!(page.contains("Login to `my-server` failed"), "{page}");
    assert!(page.contains("<code>access_denied</code>"), "{page}");
    assert!(
        page.contains("&lt;script&gt;alert(1)&lt;/script&gt; said no"),
        "{page}"
    );
    assert!(!page.contains("<script>"), "{page}");
    assert!(
        page.contains("<code>mcp-host login my-server</code>"),
        "{page}"
    );
    assert!(!page.contains("Logged in"), "{page}");
}

#[test]
fn a_redirect_without_this_logins_state_does_not_end_the_login() {
    let rt = runtime();
    let ua = rt
        .block_on(Loopback::bind(|_| Ok(()), Duration::from_millis(300)))
        .expect("listener")
        .for_server("my-server");
    let port = ua.port();
    let stray = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(50));
        let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
        write!(s, "GET /callback?code=c&state=other HTTP/1.1\r\n\r\n").expect("send");
        let mut page = String::new();
        let _ = s.read_to_string(&mut page);
        page
    });
    let url = Url::parse("https://as.example/authorize?state=s-1").expect("url");
    let outcome = rt.block_on(ua.authorize(url));
    let page = stray.join().expect("the stray request");
    assert!(
        page.contains("Not the login to `my-server` in progress"),
        "{page}"
    );
    // The login went on waiting (and then timed out): the stray code was not taken.
    assert!(
        outcome
            .unwrap_err()
            .to_string()
            .contains("no browser came back")
    );
}

#[test]
fn pages_are_escaped_and_bounded() {
    let long = "d".repeat(5000);
    let page = page(
        Some("<srv>"),
        &Outcome::Failed {
            error: Some(("invalid_request\"'", &long)),
            why: "x & y",
        },
    );
    assert!(page.contains("`&lt;srv&gt;`"), "{page}");
    assert!(page.contains("invalid_request&quot;&#39;"), "{page}");
    assert!(page.contains("x &amp; y"), "{page}");
    assert!(page.contains(&"d".repeat(QUOTED_TEXT)), "{page}");
    assert!(!page.contains(&"d".repeat(QUOTED_TEXT + 1)), "{page}");
}
