//! The `Fetcher` against a tiny hyper server on loopback, over HTTP and HTTPS with a test CA:
//! GET and POST round trips, a redirect that is returned and not followed, the body limit, the
//! timeout, errors that quote neither header values nor query strings, and the address policy
//! (a canary listener on loopback that a public server's fetcher never reaches).

use std::time::Duration;

use bytes::Bytes;
use http::header::{AUTHORIZATION, CONTENT_TYPE, LOCATION};
use http::{Method, Request, Response, StatusCode};
use http_body_util::{BodyExt as _, Full};
use hyper::body::Incoming;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use mcp_http::{AddressClass, AddressPolicy, FetchError, FetchOptions, Fetcher, Refusal};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpListener;

/// Answers by path: `/echo` echoes the method, query, `Authorization` presence and body;
/// `/redirect` is a 302 to `/echo`; `/big` is 5,000 bytes; `/hang` never answers.
async fn answer(req: Request<Incoming>) -> Response<Full<Bytes>> {
    let (parts, body) = req.into_parts();
    let body = body.collect().await.unwrap().to_bytes();
    let reply = |status: StatusCode, body: Bytes| {
        let mut resp = Response::new(Full::new(body));
        *resp.status_mut() = status;
        resp
    };
    match parts.uri.path() {
        "/echo" => {
            let text = format!(
                "{} q={} auth={} body={}",
                parts.method,
                parts.uri.query().unwrap_or(""),
                parts.headers.contains_key(AUTHORIZATION),
                String::from_utf8_lossy(&body)
            );
            reply(StatusCode::OK, Bytes::from(text))
        }
        "/redirect" => {
            let mut resp = reply(StatusCode::FOUND, Bytes::new());
            resp.headers_mut()
                .insert(LOCATION, "/echo".parse().unwrap());
            resp
        }
        "/big" => reply(StatusCode::OK, Bytes::from(vec![b'x'; 5000])),
        "/hang" => std::future::pending().await,
        _ => reply(StatusCode::NOT_FOUND, Bytes::new()),
    }
}

/// Starts the server; returns its base URL (`https://localhost:port` with a TLS acceptor).
async fn start(tls: Option<tokio_rustls::TlsAcceptor>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let base = match tls {
        Some(_) => format!("https://localhost:{port}"),
        None => format!("http://127.0.0.1:{port}"),
    };
    mcp_testkit::serve::spawn_http1(listener, tls, answer);
    base
}

fn request(method: Method, url: &str, body: &[u8]) -> Request<Vec<u8>> {
    Request::builder()
        .method(method)
        .uri(url)
        .body(body.to_vec())
        .unwrap()
}

fn text(resp: &Response<Vec<u8>>) -> &str {
    std::str::from_utf8(resp.body()).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_and_post_round_trip() {
    let base = start(None).await;
    let fetcher = Fetcher::new(FetchOptions::new()).unwrap();

    let resp = fetcher
        .send(request(Method::GET, &format!("{base}/echo?a=1"), b""))
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(text(&resp), "GET q=a=1 auth=false body=");

    let mut post = request(
        Method::POST,
        &format!("{base}/echo"),
        b"grant_type=client_credentials",
    );
    post.headers_mut().insert(
        CONTENT_TYPE,
        "application/x-www-form-urlencoded".parse().unwrap(),
    );
    post.headers_mut()
        .insert(AUTHORIZATION, "Basic czZCaGRSa3F0Mw==".parse().unwrap());
    let resp = fetcher.send(post).await.unwrap();
    assert_eq!(
        text(&resp),
        "POST q= auth=true body=grant_type=client_credentials"
    );

    // Any status comes back as a response, not an error.
    let resp = fetcher
        .send(request(Method::GET, &format!("{base}/missing"), b""))
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::NOT_FOUND);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redirect_is_returned_not_followed() {
    let base = start(None).await;
    let fetcher = Fetcher::new(FetchOptions::new()).unwrap();
    let resp = fetcher
        .send(request(Method::GET, &format!("{base}/redirect"), b""))
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::FOUND);
    assert_eq!(resp.headers()[LOCATION], "/echo");
    assert!(resp.body().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oversized_body_is_refused_with_the_limit_named() {
    let base = start(None).await;
    let mut options = FetchOptions::new();
    options.max_body_bytes = 1000;
    let fetcher = Fetcher::new(options).unwrap();
    let err = fetcher
        .send(request(Method::GET, &format!("{base}/big"), b""))
        .await
        .unwrap_err();
    assert!(
        matches!(err, FetchError::BodyTooLarge { limit: 1000, .. }),
        "{err:?}"
    );
    let message = err.to_string();
    assert!(message.contains("limit of 1000 bytes"), "{message}");
    assert!(
        !message.contains("xxx"),
        "the body is never shown: {message}"
    );

    // Exactly at the limit is fine.
    let mut options = FetchOptions::new();
    options.max_body_bytes = 5000;
    let fetcher = Fetcher::new(options).unwrap();
    let resp = fetcher
        .send(request(Method::GET, &format!("{base}/big"), b""))
        .await
        .unwrap();
    assert_eq!(resp.body().len(), 5000);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_never_answers_times_out() {
    let base = start(None).await;
    let mut options = FetchOptions::new();
    options.timeout = Duration::from_millis(300);
    let fetcher = Fetcher::new(options).unwrap();
    let err = fetcher
        .send(request(Method::GET, &format!("{base}/hang"), b""))
        .await
        .unwrap_err();
    assert!(matches!(err, FetchError::TimedOut { .. }), "{err:?}");
    assert_eq!(
        err.to_string(),
        format!("GET {base}/hang: timed out after 300ms")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn https_with_a_test_ca() {
    let (ca_pem, acceptor) = mcp_testkit::fake_http::test_pki();
    let base = start(Some(acceptor)).await;
    let url = format!("{base}/echo");

    let mut options = FetchOptions::new();
    options.extra_roots_pem = vec![ca_pem.into_bytes()];
    let fetcher = Fetcher::new(options).unwrap();
    let resp = fetcher
        .send(request(Method::POST, &url, b"over tls"))
        .await
        .unwrap();
    assert_eq!(text(&resp), "POST q= auth=false body=over tls");

    // Without the CA the certificate is refused, and the error says why.
    let fetcher = Fetcher::new(FetchOptions::default()).unwrap();
    let err = fetcher
        .send(request(Method::GET, &url, b""))
        .await
        .unwrap_err();
    assert!(matches!(err, FetchError::Transport { .. }), "{err:?}");
    assert!(err.to_string().contains("UnknownIssuer"), "{err}");

    // A CA file with no certificate is refused when the fetcher is built.
    let mut options = FetchOptions::new();
    options.extra_roots_pem = vec![b"not a pem".to_vec()];
    let err = Fetcher::new(options).unwrap_err();
    assert!(matches!(err, FetchError::Config { .. }), "{err:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_never_show_secrets() {
    let base = start(None).await;
    let mut options = FetchOptions::new();
    options.timeout = Duration::from_millis(300);
    let fetcher = Fetcher::new(options).unwrap();
    let secret_request = |url: String| {
        let mut req = request(Method::POST, &url, b"client_secret=b0dy-s3cr3t");
        req.headers_mut()
            .insert(AUTHORIZATION, "Basic aGVhZGVyLXMzY3IzdA==".parse().unwrap());
        req.headers_mut()
            .insert("x-api-key", "h3ader-s3cr3t".parse().unwrap());
        req
    };
    let check = |err: FetchError, url_shown: &str| {
        let message = err.to_string();
        let debug = format!("{err:?}");
        for shown in [&message, &debug] {
            for secret in [
                "aGVhZGVyLXMzY3IzdA",
                "h3ader-s3cr3t",
                "b0dy-s3cr3t",
                "qu3ry-s3cr3t",
                "us3r",
                "pa55",
            ] {
                assert!(!shown.contains(secret), "{secret} in {shown}");
            }
        }
        assert!(
            message.starts_with(&format!("POST {url_shown}: ")),
            "{message}"
        );
    };

    // Timed out.
    let err = fetcher
        .send(secret_request(format!("{base}/hang?code=qu3ry-s3cr3t")))
        .await
        .unwrap_err();
    assert!(matches!(err, FetchError::TimedOut { .. }), "{err:?}");
    check(err, &format!("{base}/hang"));

    // Connection refused (port 1 on loopback has no listener).
    let err = fetcher
        .send(secret_request(
            "http://127.0.0.1:1/token?code=qu3ry-s3cr3t".into(),
        ))
        .await
        .unwrap_err();
    assert!(matches!(err, FetchError::Transport { .. }), "{err:?}");
    check(err, "http://127.0.0.1:1/token");

    // Credentials in the URL are refused before anything is sent, and not shown.
    let with_userinfo = base.replace("http://", "http://us3r:pa55@");
    let err = fetcher
        .send(secret_request(format!(
            "{with_userinfo}/echo?code=qu3ry-s3cr3t"
        )))
        .await
        .unwrap_err();
    assert!(matches!(err, FetchError::InvalidRequest { .. }), "{err:?}");
    check(err, &format!("{base}/echo"));

    // Only http and https.
    let err = fetcher
        .send(secret_request(
            "ftp://127.0.0.1/file?code=qu3ry-s3cr3t".into(),
        ))
        .await
        .unwrap_err();
    assert!(matches!(err, FetchError::InvalidRequest { .. }), "{err:?}");
    check(err, "ftp://127.0.0.1/file");
}

/// A listener on 127.0.0.1 that counts the connections it accepts and answers each with an
/// empty 200: a fetch that reaches it succeeds, and the count says it was reached.
async fn canary() -> (u16, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let hits = Arc::new(AtomicUsize::new(0));
    let counted = hits.clone();
    tokio::spawn(async move {
        loop {
            let (mut stream, _) = listener.accept().await.unwrap();
            counted.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(async move {
                let mut head = [0u8; 4096];
                let _ = stream.read(&mut head).await;
                let _ = stream
                    .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
                    .await;
            });
        }
    });
    (port, hits)
}

fn fetcher_beside(server: AddressClass) -> Fetcher {
    let mut options = FetchOptions::new();
    options.address_policy = Some(AddressPolicy::beside(server));
    options.timeout = Duration::from_secs(5);
    Fetcher::new(options).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_public_servers_fetcher_never_connects_to_loopback() {
    let (port, hits) = canary().await;
    // Without a policy the canary is reached: the listener works.
    let open = Fetcher::new(FetchOptions::new()).unwrap();
    let resp = open
        .send(request(
            Method::GET,
            &format!("http://127.0.0.1:{port}/"),
            b"",
        ))
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(hits.swap(0, Ordering::SeqCst), 1);

    let fetcher = fetcher_beside(AddressClass::Public);
    for (url, origin, rule) in [
        // An address literal, with a secret-looking path and query that the error must not show.
        (
            format!("https://127.0.0.1:{port}/internal/admin?delete=1"),
            format!("https://127.0.0.1:{port}"),
            Refusal::Address {
                target: AddressClass::Loopback,
                server: AddressClass::Public,
            },
        ),
        // A name, resolved at connect time to a loopback address.
        (
            format!("https://localhost:{port}/internal/admin"),
            format!("https://localhost:{port}"),
            Refusal::Address {
                target: AddressClass::Loopback,
                server: AddressClass::Public,
            },
        ),
        // IPv4-mapped IPv6 reaches the same socket.
        (
            format!("https://[::ffff:127.0.0.1]:{port}/internal"),
            format!("https://[::ffff:127.0.0.1]:{port}"),
            Refusal::Address {
                target: AddressClass::Loopback,
                server: AddressClass::Public,
            },
        ),
        // The unspecified address reaches this machine on Linux.
        (
            format!("https://0.0.0.0:{port}/internal"),
            format!("https://0.0.0.0:{port}"),
            Refusal::Address {
                target: AddressClass::Unroutable,
                server: AddressClass::Public,
            },
        ),
    ] {
        let err = fetcher
            .send(request(Method::GET, &url, b""))
            .await
            .unwrap_err();
        match &err {
            FetchError::Refused {
                origin: o, rule: r, ..
            } => {
                assert_eq!(o, &origin, "{url}");
                assert_eq!(r, &rule, "{url}");
            }
            other => panic!("{url}: {other:?}"),
        }
        let message = err.to_string();
        assert!(
            message.starts_with(&format!("GET {origin}: refused: ")),
            "{message}"
        );
        assert!(!message.contains("internal"), "no path: {message}");
        assert!(!message.contains("delete"), "no query: {message}");
    }
    // A private network's server may not reach loopback either.
    let err = fetcher_beside(AddressClass::Private)
        .send(request(
            Method::GET,
            &format!("https://127.0.0.1:{port}/"),
            b"",
        ))
        .await
        .unwrap_err();
    assert!(matches!(err, FetchError::Refused { .. }), "{err:?}");
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(hits.load(Ordering::SeqCst), 0, "the canary was reached");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_loopback_servers_fetcher_reaches_loopback_in_plain_http() {
    let base = start(None).await;
    let fetcher = fetcher_beside(AddressClass::Loopback);
    let resp = fetcher
        .send(request(Method::GET, &format!("{base}/echo"), b""))
        .await
        .unwrap();
    assert_eq!(text(&resp), "GET q= auth=false body=");
    let port = base.rsplit(':').next().unwrap();
    let resp = fetcher
        .send(request(
            Method::GET,
            &format!("http://localhost:{port}/echo"),
            b"",
        ))
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    // HTTPS to loopback with a test CA is fine too.
    let (ca_pem, acceptor) = mcp_testkit::fake_http::test_pki();
    let tls_base = start(Some(acceptor)).await;
    let mut options = FetchOptions::new();
    options.extra_roots_pem = vec![ca_pem.into_bytes()];
    options.address_policy = Some(AddressPolicy::beside(AddressClass::Loopback));
    let resp = Fetcher::new(options)
        .unwrap()
        .send(request(Method::GET, &format!("{tls_base}/echo"), b""))
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_http_is_refused_for_a_server_off_loopback() {
    let (port, hits) = canary().await;
    // Plain http is for loopback to loopback only: a loopback server's fetcher reaches the
    // canary, a public or private server's never does.
    let fetcher = fetcher_beside(AddressClass::Loopback);
    let resp = fetcher
        .send(request(
            Method::GET,
            &format!("http://127.0.0.1:{port}/"),
            b"",
        ))
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(hits.swap(0, Ordering::SeqCst), 1);
    for server in [AddressClass::Public, AddressClass::Private] {
        let err = fetcher_beside(server)
            .send(request(
                Method::GET,
                &format!("http://localhost:{port}/token"),
                b"",
            ))
            .await
            .unwrap_err();
        assert!(matches!(err, FetchError::Refused { .. }), "{err:?}");
    }
    assert_eq!(hits.load(Ordering::SeqCst), 0, "the canary was reached");
}
