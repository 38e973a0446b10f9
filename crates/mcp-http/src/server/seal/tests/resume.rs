//! What a `GET` with `Last-Event-ID` does at each replica: a call's stream is resumed only by
//! the copy of the session that held it (its answer comes on the standalone stream there); at
//! another replica it is refused at once, since no replica keeps another's events and the
//! call's answer would never come; a standalone stream opens anew anywhere.

use super::*;

/// A `GET` of `session`'s standalone stream at `addr` with `last` as its `Last-Event-ID`:
/// its status line and what it said (a refusal's whole body, or a stream's first event), and
/// the connection, held open while the test needs the stream.
async fn resume(addr: SocketAddr, session: &str, last: &str) -> (String, String, TcpStream) {
    let request = format!(
        "GET /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\naccept: text/event-stream\r\n\
         mcp-session-id: {session}\r\nlast-event-id: {last}\r\nconnection: close\r\n\r\n"
    );
    let mut tcp = TcpStream::connect(addr).await.unwrap();
    tcp.write_all(request.as_bytes()).await.unwrap();
    let mut read = String::new();
    let mut buf = [0u8; 4096];
    loop {
        if let Some((head, body)) = read.split_once("\r\n\r\n") {
            let status = head.lines().next().unwrap_or_default().to_owned();
            if status.contains(" 200") && body.contains("\n\n") {
                return (status, body.to_owned(), tcp);
            }
        }
        let n = tokio::time::timeout(Duration::from_secs(5), tcp.read(&mut buf))
            .await
            .expect("the answer stalled")
            .unwrap();
        if n == 0 {
            let (head, body) = read.split_once("\r\n\r\n").expect("a head");
            return (
                head.lines().next().unwrap().to_owned(),
                body.to_owned(),
                tcp,
            );
        }
        read.push_str(std::str::from_utf8(&buf[..n]).unwrap());
    }
}

/// As [`server`], answering with SSE streams, whose events have ids.
async fn sse_server(share: &Arc<LocalShare>) -> SocketAddr {
    let mut config = ServerConfig::new(Implementation::new("seal".into(), "1".into()));
    config.capabilities.tools = Some(ListChangedCapability::new());
    let mut http = HttpServerConfig::new(config);
    let share: Arc<dyn SessionShare> = share.clone();
    http.sealed_sessions = Some(Arc::new(
        SessionSeal::new(&[KEY_A], HOUR).unwrap().with_share(share),
    ));
    let (listener, addr) = bind("127.0.0.1:0".parse().unwrap()).await.unwrap();
    tokio::spawn(serve_http(listener, http, Who));
    addr
}

/// The first event id of an SSE body.
fn first_event_id(body: &str) -> String {
    let at = body.find("id: ").expect("an event id");
    body[at + 4..].lines().next().unwrap().trim().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_calls_stream_is_resumed_only_where_it_was_and_a_standalone_one_anywhere() {
    let share = Arc::new(LocalShare::default());
    let (a, b, c) = (
        sse_server(&share).await,
        sse_server(&share).await,
        sse_server(&share).await,
    );
    let (status, id, _) = send(a, "POST", None, INIT).await;
    assert!(status.contains("200"), "{status}");
    let id = id.expect("a session id");
    // A call at A: its stream's events have ids of A's copy of the session.
    let (status, _, body) = send(a, "POST", Some(&id), CALL).await;
    assert!(
        status.contains("200") && body.contains("\"result\""),
        "{status} {body}"
    );
    let call_event = first_event_id(&body);
    assert!(!call_event.contains(".s"), "{call_event}");
    // At A, the copy that held it: the standalone stream opens (the call's answers would
    // come on it), and its events are marked as the standalone stream's.
    let (status, body, _at_a) = resume(a, &id, &call_event).await;
    assert!(status.contains("200"), "{status}");
    let standalone_event = first_event_id(&body);
    assert!(standalone_event.contains(".s"), "{standalone_event}");
    // At B, which never held that call: refused at once, saying why.
    let (status, body, _) = resume(b, &id, &call_event).await;
    assert!(
        status.contains("409") && body.contains("another replica held"),
        "{status} {body}"
    );
    // A standalone stream's id, of another replica: a new stream opens.
    let (status, _, _at_b) = resume(b, &id, &standalone_event).await;
    assert!(status.contains("200"), "{status}");
    // And an id this server never made goes through as before.
    let (status, _, _at_c) = resume(c, &id, "not-ours").await;
    assert!(status.contains("200"), "{status}");
}
