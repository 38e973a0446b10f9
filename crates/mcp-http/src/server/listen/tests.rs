//! The accept loop and the connection limits under abuse: accept errors, slow headers, idle
//! connections, too many connections.

use std::net::SocketAddr;

use mcp_protocol::schema::{ClientRequest, Implementation};
use mcp_protocol::{ErrorObject, RawJson, ServerConfig};
use mcp_session::RequestContext;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

use super::*;
use crate::server::HttpServerConfig;

/// A handler with nothing to offer: these tests never reach it.
struct Nothing;

impl Handler for Nothing {
    async fn handle(
        &self,
        _request: ClientRequest,
        _context: RequestContext,
    ) -> Result<RawJson, ErrorObject> {
        Err(ErrorObject::new(-32601, "nothing here".into()))
    }
}

fn config() -> HttpServerConfig {
    HttpServerConfig::new(ServerConfig::new(Implementation::new(
        "listen".into(),
        "1".into(),
    )))
}

/// A listener whose first `errors` calls fail as an out-of-descriptors `accept()` does.
struct Failing {
    real: TcpListener,
    errors: usize,
}

impl Listener for Failing {
    type Io = TcpStream;

    async fn accept(&mut self) -> io::Result<TcpStream> {
        if self.errors > 0 {
            self.errors -= 1;
            // EMFILE on Linux and the BSDs: the process has no file descriptor left.
            return Err(io::Error::from_raw_os_error(24));
        }
        Listener::accept(&mut self.real).await
    }
}

/// Serves `config` on `listener`'s address; the server and its address.
async fn start_with(
    config: HttpServerConfig,
    errors: usize,
) -> (Arc<HttpServer<Nothing>>, SocketAddr) {
    let (real, addr) = crate::server::bind("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let server = HttpServer::new(config, Nothing);
    tokio::spawn(crate::server::serve_on(
        Failing { real, errors },
        Arc::clone(&server),
    ));
    (server, addr)
}

/// The head of the answer to a whole `GET /` (404) on a new connection, or what happened
/// instead.
async fn get_root(addr: SocketAddr) -> String {
    let mut tcp = TcpStream::connect(addr).await.unwrap();
    tcp.write_all(b"GET / HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n")
        .await
        .unwrap();
    read_some(&mut tcp).await
}

/// What the server sends next on `tcp` (empty once it closes it), waiting at most 5 s.
async fn read_some(tcp: &mut TcpStream) -> String {
    let mut buf = vec![0u8; 4096];
    let n = tokio::time::timeout(Duration::from_secs(5), tcp.read(&mut buf))
        .await
        .expect("the server neither answered nor closed the connection")
        .unwrap_or(0);
    String::from_utf8_lossy(&buf[..n]).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn accept_errors_are_retried_and_the_server_goes_on() {
    let (server, addr) = start_with(config(), 5).await;
    let head = get_root(addr).await;
    assert!(head.starts_with("HTTP/1.1 404"), "{head}");
    assert_eq!(server.accept_errors.load(Ordering::Acquire), 5);
    let again = get_root(addr).await;
    assert!(again.starts_with("HTTP/1.1 404"), "{again}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn headers_that_never_end_are_timed_out() {
    let mut config = config();
    config.header_read_timeout = Duration::from_millis(200);
    let (_server, addr) = start_with(config, 0).await;
    // A whole request is answered: the connection is served.
    assert!(get_root(addr).await.starts_with("HTTP/1.1 404"));
    let mut tcp = TcpStream::connect(addr).await.unwrap();
    tcp.write_all(b"POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\nx-slow: ")
        .await
        .unwrap();
    let answer = read_some(&mut tcp).await;
    // hyper answers a header timeout with a 408 or just closes; either way it is over.
    assert!(
        answer.is_empty() || answer.starts_with("HTTP/1.1 408"),
        "{answer}"
    );
    assert_eq!(read_some(&mut tcp).await, "", "the connection is closed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_kept_alive_connection_is_closed() {
    let mut config = config();
    config.header_read_timeout = Duration::from_millis(200);
    let (_server, addr) = start_with(config, 0).await;
    let mut tcp = TcpStream::connect(addr).await.unwrap();
    tcp.write_all(b"GET / HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n")
        .await
        .unwrap();
    let head = read_some(&mut tcp).await;
    assert!(head.starts_with("HTTP/1.1 404"), "{head}");
    assert!(!head.contains("connection: close"), "kept alive: {head}");
    assert_eq!(read_some(&mut tcp).await, "", "closed once idle");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_past_the_limit_get_503_until_one_closes() {
    let mut config = config();
    config.max_connections = 2;
    let (_server, addr) = start_with(config, 0).await;
    // Two connections hold the two places: the loop takes a place for each as it accepts
    // them, in order, so both hold one before the third is accepted.
    let first = TcpStream::connect(addr).await.unwrap();
    let _second = TcpStream::connect(addr).await.unwrap();
    let refused = get_root(addr).await;
    assert!(refused.starts_with("HTTP/1.1 503"), "{refused}");
    assert!(refused.contains("max_connections"), "{refused}");
    assert!(refused.contains("retry-after: 1"), "{refused}");

    drop(first);
    let mut served = String::new();
    for _ in 0..100 {
        served = get_root(addr).await;
        if !served.starts_with("HTTP/1.1 503") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(served.starts_with("HTTP/1.1 404"), "{served}");
}

/// A listener whose every `accept()` fails as an out-of-descriptors one does, noting when on
/// tokio's clock.
struct Exhausted {
    calls: Arc<std::sync::Mutex<Vec<tokio::time::Instant>>>,
}

impl Listener for Exhausted {
    type Io = TcpStream;

    async fn accept(&mut self) -> io::Result<TcpStream> {
        self.calls
            .lock()
            .expect("no test thread panics holding it")
            .push(tokio::time::Instant::now());
        Err(io::Error::from_raw_os_error(24))
    }
}

/// docs/gateway.md: a failed `accept()` "waits from 5 ms, doubling up to 1 s, and tries
/// again". The clock is tokio's, paused: each wait is exactly the sleep the loop asked for.
#[tokio::test(start_paused = true)]
async fn a_failed_accept_waits_from_5_ms_doubling_up_to_1_s() {
    let calls = Arc::new(std::sync::Mutex::new(Vec::new()));
    let server = HttpServer::new(config(), Nothing);
    let exhausted = Exhausted {
        calls: Arc::clone(&calls),
    };
    tokio::spawn(crate::server::serve_on(exhausted, server));
    tokio::time::sleep(Duration::from_secs(5)).await;
    let calls = calls.lock().unwrap();
    let waits: Vec<u128> = calls
        .windows(2)
        .take(11)
        .map(|w| (w[1] - w[0]).as_millis())
        .collect();
    assert_eq!(waits, [5, 10, 20, 40, 80, 160, 320, 640, 1000, 1000, 1000]);
}

/// docs/gateway.md: a connection past the limit gets "`503` with `Retry-After: 1` and the
/// reason, then the connection is closed", and past 64 of those at once it is closed at once,
/// without one (each waits up to 2 s for its request, so a flood cannot hold more).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_the_limit_a_connection_is_closed_after_its_503_or_at_once_past_64() {
    let mut config = config();
    config.max_connections = 1;
    let (_server, addr) = start_with(config, 0).await;
    let _held = TcpStream::connect(addr).await.unwrap();
    let mut answered = TcpStream::connect(addr).await.unwrap();
    answered
        .write_all(b"GET / HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n")
        .await
        .unwrap();
    let mut answer = read_some(&mut answered).await;
    assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
    // The rest of the answer, then the end: `read_some` fails the test if neither comes.
    loop {
        let more = read_some(&mut answered).await;
        if more.is_empty() {
            break;
        }
        answer.push_str(&more);
    }
    assert!(answer.contains("max_connections"), "{answer}");

    // 64 connections past the limit that send nothing hold every place for a 503.
    let mut quiet = Vec::new();
    for _ in 0..64 {
        quiet.push(TcpStream::connect(addr).await.unwrap());
    }
    let mut refused = TcpStream::connect(addr).await.unwrap();
    let _ = refused
        .write_all(b"GET / HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n")
        .await;
    assert_eq!(
        read_some(&mut refused).await,
        "",
        "closed without an answer"
    );
}
