//! The bounded response buffer: what it holds is counted, a stream past a limit is cut, and
//! everything it held is given back.

use super::*;

fn limits(stream: usize, session: usize, server: usize) -> Limits {
    Limits {
        stream,
        session: Budget::new(session),
        server: Budget::new(server),
    }
}

fn chunk(n: usize) -> Bytes {
    Bytes::from(vec![b'x'; n])
}

fn poll<T: Weigh>(rx: &mut Receiver<T>) -> Poll<Result<Option<T>, StreamCut>> {
    rx.poll_recv(&mut Context::from_waker(Waker::noop()))
}

#[test]
fn a_stream_nobody_reads_is_cut_at_its_own_limit_and_frees_what_it_held() {
    let limits = limits(100, 1000, 1000);
    let (session, server) = (Arc::clone(&limits.session), Arc::clone(&limits.server));
    let (tx, mut rx) = channel(limits);
    for _ in 0..10 {
        assert!(tx.send(chunk(10)));
    }
    assert_eq!((session.used(), server.used()), (100, 100));
    assert!(!tx.send(chunk(1)), "one byte more than the stream's limit");
    assert!(tx.is_closed());
    assert_eq!((session.used(), server.used()), (0, 0));
    assert_eq!(session.cuts(), 1);
    assert!(!tx.send(chunk(1)), "a cut stream takes nothing more");
    assert_eq!(server.used(), 0);
    assert!(matches!(poll(&mut rx), Poll::Ready(Err(StreamCut(())))));
}

#[test]
fn a_reader_keeps_the_stream_going_past_its_limit() {
    let (tx, mut rx) = channel(limits(100, 1000, 1000));
    for _ in 0..1000 {
        assert!(tx.send(chunk(60)));
        assert!(matches!(poll(&mut rx), Poll::Ready(Ok(Some(c))) if c.len() == 60));
    }
    assert!(matches!(poll(&mut rx), Poll::Pending));
    drop(tx);
    assert!(matches!(poll(&mut rx), Poll::Ready(Ok(None))));
}

#[test]
fn one_item_larger_than_the_stream_limit_goes_to_a_stream_that_holds_nothing() {
    let (tx, mut rx) = channel(limits(10, 1000, 1000));
    assert!(tx.send(chunk(500)));
    assert!(!tx.send(chunk(1)), "but nothing after it");
    assert!(matches!(poll(&mut rx), Poll::Ready(Err(_))));
}

#[test]
fn the_session_and_server_budgets_bound_many_streams_together() {
    let server = Budget::new(250);
    let session = Budget::new(150);
    let stream = |session: &Arc<Budget>| {
        channel::<Bytes>(Limits {
            stream: 100,
            session: Arc::clone(session),
            server: Arc::clone(&server),
        })
    };
    let (a, _ra) = stream(&session);
    let (b, _rb) = stream(&session);
    assert!(a.send(chunk(100)));
    assert!(b.send(chunk(50)));
    assert_eq!(session.used(), 150);
    assert!(!b.send(chunk(1)), "the session's budget is spent");
    assert!(
        b.is_closed() && !a.is_closed(),
        "only the stream that overflowed"
    );
    assert_eq!((session.used(), server.used()), (100, 100));

    let other = Budget::new(1000);
    let (c, _rc) = stream(&other);
    assert!(c.send(chunk(100)));
    let (d, _rd) = stream(&other);
    assert!(d.send(chunk(50)));
    assert_eq!(server.used(), 250);
    assert!(!d.send(chunk(1)), "the server's budget is spent");
    assert_eq!(server.cuts(), 1);
    assert_eq!((other.used(), server.used()), (100, 200));
}

#[test]
fn a_receiver_that_goes_away_gives_its_bytes_back() {
    let limits = limits(100, 1000, 1000);
    let server = Arc::clone(&limits.server);
    let (tx, rx) = channel(limits);
    assert!(tx.send(chunk(80)));
    assert_eq!(server.used(), 80);
    drop(rx);
    assert_eq!(server.used(), 0);
    assert!(tx.is_closed());
    assert!(!tx.send(chunk(1)));
    assert_eq!(server.used(), 0);
}

/// The whole server: a client that never reads the answer to a call that streams far more
/// than the limits is cut, and the server never holds more than its limit for it.
mod served {
    use std::net::SocketAddr;
    use std::time::Duration;

    use mcp_protocol::schema::{
        CallToolResult, ClientRequest, ContentBlock, Implementation, ListChangedCapability,
    };
    use mcp_protocol::{ErrorObject, RawJson, ServerConfig};
    use mcp_session::{Handler, RequestContext};
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    use tokio::net::TcpStream;

    use crate::server::{HttpServer, HttpServerConfig, bind, serve_on};

    /// How many progress notifications `flood` sends, each with a 64 KiB message: 64 MiB,
    /// far more than the kernel's socket buffers on loopback can take in.
    const FLOOD: u64 = 1024;

    /// `flood` reports progress [`FLOOD`] times with a long message, then answers.
    struct Flood;

    impl Handler for Flood {
        async fn handle(
            &self,
            _request: ClientRequest,
            context: RequestContext,
        ) -> Result<RawJson, ErrorObject> {
            let message = "m".repeat(64 << 10);
            for step in 1..=FLOOD {
                context.progress(step, Some(FLOOD), Some(&message));
                // Room for the response to be written as far as the socket takes it.
                tokio::task::yield_now().await;
            }
            Ok(RawJson::encode(&CallToolResult::new(vec![ContentBlock::text("flooded")])).unwrap())
        }
    }

    async fn post(addr: SocketAddr, session: Option<&str>, body: &str) -> TcpStream {
        let session = session
            .map(|s| format!("mcp-session-id: {s}\r\n"))
            .unwrap_or_default();
        let request = format!(
            "POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n\
             accept: application/json, text/event-stream\r\n{session}content-length: {}\r\n\r\n{body}",
            body.len()
        );
        let mut tcp = TcpStream::connect(addr).await.unwrap();
        tcp.write_all(request.as_bytes()).await.unwrap();
        tcp
    }

    /// Everything the server sends on `tcp` until it closes or aborts it.
    async fn read_all(tcp: &mut TcpStream) -> Vec<u8> {
        let mut all = Vec::new();
        let mut buf = vec![0u8; 1 << 20];
        loop {
            let read = tokio::time::timeout(Duration::from_secs(10), tcp.read(&mut buf))
                .await
                .expect("the response stalled");
            match read {
                Ok(0) => return all,
                // An aborted response may end with a reset.
                Err(_) => return all,
                Ok(n) => all.extend_from_slice(&buf[..n]),
            }
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_client_that_does_not_read_is_cut_and_memory_stays_bounded() {
        let mut server = ServerConfig::new(Implementation::new("flood".into(), "1".into()));
        server.capabilities.tools = Some(ListChangedCapability::new());
        let mut config = HttpServerConfig::new(server);
        config.max_stream_buffer_bytes = 1 << 20;
        config.max_session_buffer_bytes = 2 << 20;
        config.max_buffer_bytes = 4 << 20;
        let (listener, addr) = bind("127.0.0.1:0".parse().unwrap()).await.unwrap();
        let server = HttpServer::new(config, Flood);
        tokio::spawn(serve_on(listener, std::sync::Arc::clone(&server)));

        let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}"#;
        let mut tcp = post(addr, None, init).await;
        let mut head = vec![0u8; 4096];
        let n = tcp.read(&mut head).await.unwrap();
        let head = String::from_utf8_lossy(&head[..n]).into_owned();
        let session = head
            .lines()
            .find_map(|l| l.strip_prefix("mcp-session-id: "))
            .unwrap()
            .to_owned();
        let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
        let mut tcp = post(addr, Some(&session), initialized).await;
        let mut accepted = vec![0u8; 4096];
        let n = tcp.read(&mut accepted).await.unwrap();
        assert!(accepted[..n].starts_with(b"HTTP/1.1 202"));

        let call = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"flood","_meta":{"progressToken":7}}}"#;
        let mut unread = post(addr, Some(&session), call).await;
        // Wait (counting, at most 10 s) until the stream was cut; meanwhile the server never
        // holds more than its limit.
        let mut cut = false;
        for _ in 0..500 {
            assert!(server.buffer.used() <= 4 << 20, "{}", server.buffer.used());
            if server.buffer.cuts() + session_cuts(&server) > 0 {
                cut = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(cut, "the stream of the unread call was never cut");
        assert_eq!(
            server.buffer.used(),
            0,
            "the cut stream gave its bytes back"
        );

        // The client reads at last: some progress, then the response ends without its
        // answer and without the last chunk of a complete body.
        let got = read_all(&mut unread).await;
        let text = String::from_utf8_lossy(&got);
        assert!(
            text.starts_with("HTTP/1.1 200"),
            "{}",
            &text[..text.len().min(200)]
        );
        assert!(text.contains("notifications/progress"));
        assert!(
            !text.contains("flooded"),
            "the answer came through a cut stream"
        );
        assert!(
            !text.ends_with("0\r\n\r\n"),
            "the body ended as if complete"
        );
        assert!(got.len() < (FLOOD as usize) * (64 << 10), "{}", got.len());
    }

    /// The cuts the sessions' budgets counted (the stream's own limit counts there too).
    fn session_cuts(server: &HttpServer<Flood>) -> u64 {
        crate::server::lock(&server.sessions)
            .values()
            .map(|s| s.buffer.cuts())
            .sum()
    }
}
