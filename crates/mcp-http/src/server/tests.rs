//! Unit tests of the server half: session ids, and how an answer leaves on the wire.

use mcp_protocol::schema::{
    CallToolResult, ClientRequest, ContentBlock, Implementation, ListChangedCapability,
};
use mcp_protocol::{ErrorObject, RawJson, RequestOptions};
use mcp_session::RequestContext;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;

use super::*;

#[test]
fn a_session_id_is_random_bytes_or_nothing() {
    let id = session_id_from(&[0xab_u8; 16][..]).unwrap();
    assert_eq!(id, "ab".repeat(16));
    assert!(
        session_id_from(&[0u8; 15][..]).is_err(),
        "too few random bytes: no id rather than a guessable one"
    );
    let (a, b) = (session_id().unwrap(), session_id().unwrap());
    assert_eq!(a.len(), 32);
    assert_ne!(a, b);
}

/// `echo` answers after a moment; `slow` reports progress first, then answers after a moment;
/// `never` never answers; `gated` says it has started, then answers once its [`Gate`] lets it;
/// `ask` reports progress, then pings the client and answers with how that went; `gated_ask`
/// pings it once its gate lets it.
struct Echo {
    gate: Arc<Gate>,
}

/// Holds `gated` and `gated_ask` calls: each adds an `entered` permit when it starts, and goes
/// on once it gets an `open` one.
struct Gate {
    entered: tokio::sync::Semaphore,
    open: tokio::sync::Semaphore,
}

impl Gate {
    /// Waits until a `gated` call has started: the session has it in flight.
    async fn entered(&self) {
        tokio::time::timeout(Duration::from_secs(5), self.entered.acquire())
            .await
            .expect("the gated call never started")
            .unwrap()
            .forget();
    }
}

fn text(text: &str) -> RawJson {
    RawJson::encode(&CallToolResult::new(vec![ContentBlock::text(text)])).unwrap()
}

impl Handler for Echo {
    async fn handle(
        &self,
        request: ClientRequest,
        context: RequestContext,
    ) -> Result<RawJson, ErrorObject> {
        let ClientRequest::CallTool(p) = request else {
            return Err(ErrorObject::new(-32601, "no".into()));
        };
        if p.name == "never" {
            return std::future::pending().await;
        }
        if p.name == "gated" {
            self.gate.entered.add_permits(1);
            self.gate.open.acquire().await.unwrap().forget();
            return Ok(text("let through"));
        }
        if p.name == "gated_ask" {
            self.gate.entered.add_permits(1);
            self.gate.open.acquire().await.unwrap().forget();
            return Ok(ping_client(&context).await);
        }
        if p.name == "ask" {
            context.progress(1, None, None);
            return Ok(ping_client(&context).await);
        }
        if p.name == "slow" {
            context.progress(1, Some(2), None);
        }
        // Long enough that a head sent before the answer is read on its own.
        tokio::time::sleep(Duration::from_millis(50)).await;
        Ok(text("hello"))
    }
}

/// Pings the client on behalf of the request of `context`: "answered", or why not.
async fn ping_client(context: &RequestContext) -> RawJson {
    let answer = context
        .peer
        .request_raw("ping", None, RequestOptions::DEFAULT)
        .await;
    text(&match answer {
        Ok(_) => "answered".to_owned(),
        Err(e) => e.to_string(),
    })
}

/// A POST on a connection of its own, written in one go.
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

/// The head of a response without a body.
async fn read_head(tcp: &mut TcpStream) -> String {
    let mut head = Vec::new();
    while !head.ends_with(b"\r\n\r\n") {
        let mut byte = [0u8; 1];
        let n = tokio::time::timeout(Duration::from_secs(5), tcp.read(&mut byte))
            .await
            .expect("the response stalled")
            .unwrap();
        assert!(n > 0, "the connection closed mid-head");
        head.push(byte[0]);
    }
    String::from_utf8_lossy(&head).into_owned()
}

/// The head and the whole body of a response with a `content-length`.
async fn read_whole(tcp: &mut TcpStream) -> (String, String) {
    let head = read_head(tcp).await;
    let length: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length: "))
        .expect("a content-length")
        .parse()
        .unwrap();
    let mut body = vec![0u8; length];
    tokio::time::timeout(Duration::from_secs(5), tcp.read_exact(&mut body))
        .await
        .expect("the body stalled")
        .unwrap();
    (head, String::from_utf8(body).unwrap())
}

/// Every read of a response until its end: as many bytes as its `content-length` says after
/// its head, or else its last chunk (also when the caller has read the head already).
async fn reads_to_end(tcp: &mut TcpStream) -> Vec<String> {
    let mut reads = Vec::new();
    let mut all = String::new();
    let ended = |all: &str| {
        let length = all
            .split_once("\r\n\r\n")
            .filter(|_| all.starts_with("HTTP/"))
            .and_then(|(head, body)| {
                let length = head
                    .lines()
                    .find_map(|l| l.strip_prefix("content-length: "))?;
                Some((length.parse::<usize>().unwrap(), body.len()))
            });
        match length {
            Some((length, read)) => read >= length,
            None => all.ends_with("0\r\n\r\n"),
        }
    };
    while !ended(&all) {
        let mut buf = vec![0u8; 64 << 10];
        let n = tokio::time::timeout(Duration::from_secs(5), tcp.read(&mut buf))
            .await
            .expect("the response stalled")
            .unwrap();
        assert!(n > 0, "the connection closed mid-response: {all}");
        let text = String::from_utf8_lossy(&buf[..n]).into_owned();
        all.push_str(&text);
        reads.push(text);
    }
    reads
}

/// The JSON-RPC messages a POST's response carries: its JSON body (one object, or each of an
/// array), or the data of every `message` event of its SSE stream.
async fn messages(tcp: &mut TcpStream, json: bool) -> Vec<serde_json::Value> {
    if json {
        let (head, body) = read_whole(tcp).await;
        assert!(head.starts_with("HTTP/1.1 200"), "{head}");
        match serde_json::from_str(&body).unwrap() {
            serde_json::Value::Array(items) => items,
            one => vec![one],
        }
    } else {
        reads_to_end(tcp)
            .await
            .concat()
            .lines()
            .filter_map(|l| l.strip_prefix("data: "))
            .filter(|d| !d.is_empty())
            .map(|d| serde_json::from_str(d).unwrap())
            .collect()
    }
}

/// The `message` events of an SSE response, read as they come.
struct Events {
    tcp: TcpStream,
    seen: String,
    read: usize,
}

impl Events {
    fn new(tcp: TcpStream) -> Self {
        Self {
            tcp,
            seen: String::new(),
            read: 0,
        }
    }

    /// The next event's message (events without data, such as the priming one, are skipped).
    async fn next(&mut self) -> serde_json::Value {
        loop {
            if let Some(start) = self.seen[self.read..].find("data: {")
                && let Some(len) = self.seen[self.read + start..].find('\n')
            {
                let line = &self.seen[self.read + start..self.read + start + len];
                self.read += start + len;
                return serde_json::from_str(&line["data: ".len()..]).unwrap();
            }
            let mut buf = vec![0u8; 4096];
            let n = tokio::time::timeout(Duration::from_secs(5), self.tcp.read(&mut buf))
                .await
                .expect("the stream stalled")
                .unwrap();
            assert!(n > 0, "the stream ended: {}", self.seen);
            self.seen.push_str(&String::from_utf8_lossy(&buf[..n]));
        }
    }
}

/// The standalone stream of `session`, its head read (the server has it from then on).
async fn standalone(addr: SocketAddr, session: &str) -> Events {
    let request = format!(
        "GET /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\naccept: text/event-stream\r\n\
         mcp-session-id: {session}\r\n\r\n"
    );
    let mut tcp = TcpStream::connect(addr).await.unwrap();
    tcp.write_all(request.as_bytes()).await.unwrap();
    let head = read_head(&mut tcp).await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    Events::new(tcp)
}

/// A server with `Echo`, whose heads wait `head_wait` for a first event, and a session with
/// it, its handshake over: the server's address and the session id.
async fn initialized(head_wait: Duration) -> (SocketAddr, String) {
    initialized_with(|config| config.head_wait = head_wait).await
}

/// [`initialized`], with the server's configuration changed by `configure`.
async fn initialized_with(configure: impl FnOnce(&mut HttpServerConfig)) -> (SocketAddr, String) {
    initialized_at("2025-11-25", configure).await
}

/// [`initialized_with`], the handshake asking for protocol `version`.
async fn initialized_at(
    version: &str,
    configure: impl FnOnce(&mut HttpServerConfig),
) -> (SocketAddr, String) {
    let (addr, session, _) = initialized_gated(version, configure).await;
    (addr, session)
}

/// [`initialized_at`], with the [`Gate`] of the server's `gated` calls.
async fn initialized_gated(
    version: &str,
    configure: impl FnOnce(&mut HttpServerConfig),
) -> (SocketAddr, String, Arc<Gate>) {
    let mut server = ServerConfig::new(Implementation::new("one".into(), "1".into()));
    server.capabilities.tools = Some(ListChangedCapability::new());
    let mut config = HttpServerConfig::new(server);
    configure(&mut config);
    let (listener, addr) = bind("127.0.0.1:0".parse().unwrap()).await.unwrap();
    let gate = Arc::new(Gate {
        entered: tokio::sync::Semaphore::new(0),
        open: tokio::sync::Semaphore::new(0),
    });
    let echo = Echo {
        gate: Arc::clone(&gate),
    };
    tokio::spawn(serve_http(listener, config, echo));

    // The head carries the session id, whether a JSON body or an SSE stream follows.
    let init = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"initialize","params":{{"protocolVersion":"{version}","capabilities":{{}},"clientInfo":{{"name":"t","version":"0"}}}}}}"#
    );
    let head = read_head(&mut post(addr, None, &init).await).await;
    let session = head
        .lines()
        .find_map(|l| l.strip_prefix("mcp-session-id: "))
        .unwrap()
        .to_owned();
    // Wait for its 202: until the session has it, the session refuses the progress
    // notifications of `slow` (the handshake is not over).
    let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    let accepted = read_head(&mut post(addr, Some(&session), initialized).await).await;
    assert!(accepted.starts_with("HTTP/1.1 202"), "{accepted}");
    (addr, session, gate)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_that_streams_nothing_leaves_in_one_write() {
    // Far longer than `echo` takes, even on busy cores: the head waits for its answer.
    let (addr, session) = initialized(Duration::from_secs(10)).await;

    // The head waits for the answer, and leaves with the priming event, the answer and the
    // end of the stream in one write, so the client's first read has all of it (loopback
    // delivers one write whole).
    let call = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo"}}"#;
    let reads = reads_to_end(&mut post(addr, Some(&session), call).await).await;
    assert_eq!(reads.len(), 1, "{reads:#?}");
    let response = &reads[0];
    assert!(
        response.contains("content-type: text/event-stream"),
        "{response}"
    );
    // The stream has ended with its answer when the head leaves, so it goes with its length,
    // not chunked: the client sees its end with its last byte and needs no further read (and
    // hyper's client no turn of its connection task) to send the next request.
    let (head, body) = response.split_once("\r\n\r\n").unwrap();
    let length = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length: "))
        .unwrap_or_else(|| panic!("no content-length: {response}"));
    assert_eq!(length.parse::<usize>().unwrap(), body.len(), "{response}");
    assert!(!head.contains("transfer-encoding"), "{response}");
    let priming = response.find("retry: ").unwrap();
    let answer = response.find(r#""id":2,"result""#).unwrap();
    assert!(
        priming < answer,
        "the priming event comes first: {response}"
    );

    // A call that streams progress is still a stream: the progress comes before the answer.
    // (How many reads that takes depends on how busy the cores are, so only the order is
    // checked.)
    let call = r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"slow","_meta":{"progressToken":"p"}}}"#;
    let all = reads_to_end(&mut post(addr, Some(&session), call).await)
        .await
        .concat();
    let progress = all.find("notifications/progress").expect("the progress");
    let answer = all.find(r#""id":3,"result""#).expect("the answer");
    assert!(progress < answer, "{all}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_never_answered_still_gets_its_head_and_priming_event() {
    let (addr, session) = initialized(HEAD_WAIT).await;
    let call = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"never"}}"#;
    let mut tcp = post(addr, Some(&session), call).await;
    let head = read_head(&mut tcp).await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(head.contains("content-type: text/event-stream"), "{head}");
    // The priming event follows: its id is what the client resumes from.
    let mut body = String::new();
    while !body.contains("retry: ") {
        let mut buf = vec![0u8; 4096];
        let n = tokio::time::timeout(Duration::from_secs(5), tcp.read(&mut buf))
            .await
            .expect("no priming event")
            .unwrap();
        assert!(n > 0, "the connection closed: {body}");
        body.push_str(&String::from_utf8_lossy(&buf[..n]));
    }
    assert!(body.contains("id: "), "{body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_call_ends_its_stream_without_an_answer() {
    let (addr, session) = initialized(HEAD_WAIT).await;
    let call = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"never"}}"#;
    let mut tcp = post(addr, Some(&session), call).await;
    assert!(read_head(&mut tcp).await.starts_with("HTTP/1.1 200"));

    let cancel = r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}}"#;
    let accepted = read_head(&mut post(addr, Some(&session), cancel).await).await;
    assert!(accepted.starts_with("HTTP/1.1 202"), "{accepted}");

    // The call's stream ends (its last chunk comes) with no answer on it.
    let rest = reads_to_end(&mut tcp).await.concat();
    assert!(!rest.contains(r#""id":2"#), "{rest}");
}

/// Cancels request `id` until the POST on `tcp` that carries it is answered. A JSON answer has
/// no head before the answer, so nothing says when the session has the call: the cancellation
/// goes again until the call's response starts (one for a request not yet in flight is
/// ignored).
async fn cancel_until_answered(addr: SocketAddr, session: &str, id: i64, tcp: &TcpStream) {
    let cancel = format!(
        r#"{{"jsonrpc":"2.0","method":"notifications/cancelled","params":{{"requestId":{id}}}}}"#
    );
    for _ in 0..50 {
        let accepted = read_head(&mut post(addr, Some(session), &cancel).await).await;
        assert!(accepted.starts_with("HTTP/1.1 202"), "{accepted}");
        let mut byte = [0u8; 1];
        if let Ok(peeked) =
            tokio::time::timeout(Duration::from_millis(100), tcp.peek(&mut byte)).await
        {
            assert!(
                peeked.unwrap() > 0,
                "the connection closed without a response"
            );
            return;
        }
    }
    panic!("the cancelled call's POST was never answered");
}

/// POSTs `body`, whose one request `id` is a call that never answers, cancels it, and checks
/// the POST's answer: nothing to answer, so 202 and no body, as for a POST of notifications,
/// not a 200 with an empty JSON-RPC batch (`[]`), which is no valid answer (JSON-RPC 2.0 §6:
/// a batch with no responses gets nothing back).
async fn assert_cancelled_post_is_accepted_with_no_body(
    addr: SocketAddr,
    session: &str,
    body: &str,
    id: i64,
) {
    let mut tcp = post(addr, Some(session), body).await;
    cancel_until_answered(addr, session, id, &tcp).await;
    let head = read_head(&mut tcp).await;
    assert!(head.starts_with("HTTP/1.1 202"), "{head}");
    assert!(head.contains("content-length: 0"), "{head}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_call_with_json_answers_is_accepted_with_no_body() {
    let (addr, session) = initialized_with(|config| config.json_response = true).await;
    let call = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"never"}}"#;
    assert_cancelled_post_is_accepted_with_no_body(addr, &session, call, 2).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_with_json_answers_gets_an_array_however_few_it_answers() {
    // Batches are a 2025-03-26 thing. JSON-RPC 2.0 §6: a batch is answered with an array of
    // its responses, a lone request with one object.
    let (addr, session) = initialized_at("2025-03-26", |config| config.json_response = true).await;
    let answer = |body: &'static str| {
        let session = session.clone();
        async move {
            let (head, body) = read_whole(&mut post(addr, Some(&session), body).await).await;
            assert!(head.starts_with("HTTP/1.1 200"), "{head}");
            assert!(head.contains("content-type: application/json"), "{head}");
            serde_json::from_str::<serde_json::Value>(&body).unwrap()
        }
    };

    let one = answer(r#"[{"jsonrpc":"2.0","id":2,"method":"ping"}]"#).await;
    assert_eq!(
        one,
        serde_json::json!([{"jsonrpc":"2.0","id":2,"result":{}}]),
        "a batch of one request"
    );
    // A notification beside the request is not answered: still an array of one.
    let one = answer(
        r#"[{"jsonrpc":"2.0","method":"notifications/roots/list_changed"},{"jsonrpc":"2.0","id":3,"method":"ping"}]"#,
    )
    .await;
    assert_eq!(
        one,
        serde_json::json!([{"jsonrpc":"2.0","id":3,"result":{}}])
    );
    let two = answer(
        r#"[{"jsonrpc":"2.0","id":4,"method":"ping"},{"jsonrpc":"2.0","id":5,"method":"ping"}]"#,
    )
    .await;
    let mut ids: Vec<_> = two
        .as_array()
        .expect("an array")
        .iter()
        .map(|a| a["id"].clone())
        .collect();
    ids.sort_by_key(|id| id.as_i64());
    assert_eq!(ids, [4, 5]);
    // A lone request, not in a batch, gets one object.
    let single = answer(r#"{"jsonrpc":"2.0","id":6,"method":"ping"}"#).await;
    assert_eq!(
        single,
        serde_json::json!({"jsonrpc":"2.0","id":6,"result":{}})
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_with_sse_answers_gets_one_event_per_answer() {
    let (addr, session) = initialized_at("2025-03-26", |_| {}).await;
    // The data of every `message` event on a stream, as JSON.
    let events = |body: &'static str| {
        let session = session.clone();
        async move {
            let all = reads_to_end(&mut post(addr, Some(&session), body).await)
                .await
                .concat();
            all.lines()
                .filter_map(|l| l.strip_prefix("data: "))
                .filter(|d| !d.is_empty())
                .map(|d| serde_json::from_str::<serde_json::Value>(d).unwrap())
                .collect::<Vec<_>>()
        }
    };

    // The answer to a batch of one is an event like any other: one object, not an array.
    let one = events(r#"[{"jsonrpc":"2.0","id":2,"method":"ping"}]"#).await;
    assert_eq!(
        one,
        [serde_json::json!({"jsonrpc":"2.0","id":2,"result":{}})]
    );
    let two = events(
        r#"[{"jsonrpc":"2.0","id":3,"method":"ping"},{"jsonrpc":"2.0","id":4,"method":"ping"}]"#,
    )
    .await;
    let mut ids: Vec<_> = two.iter().map(|a| a["id"].as_i64()).collect();
    ids.sort();
    assert_eq!(ids, [Some(3), Some(4)]);
    assert!(two.iter().all(serde_json::Value::is_object), "{two:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_with_json_answers_and_a_cancelled_call_gets_an_array_of_the_rest() {
    let (addr, session) = initialized_at("2025-03-26", |config| config.json_response = true).await;

    // One request answered, one cancelled: an array of the one answer.
    let batch = r#"[{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"never"}},{"jsonrpc":"2.0","id":3,"method":"ping"}]"#;
    let mut tcp = post(addr, Some(&session), batch).await;
    cancel_until_answered(addr, &session, 2, &tcp).await;
    let (head, body) = read_whole(&mut tcp).await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&body).unwrap(),
        serde_json::json!([{"jsonrpc":"2.0","id":3,"result":{}}])
    );

    // Every request cancelled: nothing back, not an empty array.
    let batch = r#"[{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"never"}}]"#;
    assert_cancelled_post_is_accepted_with_no_body(addr, &session, batch, 4).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_in_a_version_without_batches_is_refused() {
    // Only 2025-03-26 has batches. A session on a later version refuses one at once with 400,
    // in either answer mode, rather than keep its POST open for answers that never come.
    for json in [true, false] {
        let (addr, session) =
            initialized_at("2025-11-25", |config| config.json_response = json).await;
        let batch = r#"[{"jsonrpc":"2.0","id":2,"method":"ping"}]"#;
        let (head, body) = read_whole(&mut post(addr, Some(&session), batch).await).await;
        assert!(head.starts_with("HTTP/1.1 400"), "json {json}: {head}");
        let error: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(error["error"]["code"], -32600, "json {json}: {body}");
        assert_eq!(error["id"], serde_json::Value::Null, "json {json}: {body}");

        // The session goes on.
        let ping = r#"{"jsonrpc":"2.0","id":3,"method":"ping"}"#;
        let all = if json {
            read_whole(&mut post(addr, Some(&session), ping).await)
                .await
                .1
        } else {
            reads_to_end(&mut post(addr, Some(&session), ping).await)
                .await
                .concat()
        };
        assert!(all.contains(r#""id":3,"result""#), "json {json}: {all}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_item_owed_an_error_gets_it_in_the_batch_answer() {
    // An item that is no valid request but names its id and a method is owed an error
    // (-32600) naming that id; in a batch it belongs in the batch's answer (JSON-RPC 2.0 §6),
    // not on the standalone stream.
    let (addr, session) = initialized_at("2025-03-26", |config| config.json_response = true).await;
    let batch = r#"[{"jsonrpc":"2.0","id":2,"method":"ping"},{"jsonrpc":"2.0","id":3,"method":3}]"#;
    let (head, body) = read_whole(&mut post(addr, Some(&session), batch).await).await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    let answers: serde_json::Value = serde_json::from_str(&body).unwrap();
    let mut answers = answers.as_array().expect("an array").clone();
    answers.sort_by_key(|a| a["id"].as_i64());
    assert_eq!(answers.len(), 2, "{body}");
    assert_eq!(
        answers[0],
        serde_json::json!({"jsonrpc":"2.0","id":2,"result":{}})
    );
    assert_eq!(answers[1]["error"]["code"], -32600, "{body}");
    assert_eq!(answers[1]["id"], 3, "{body}");

    // With no valid request beside it, it is still answered (not 202).
    let batch = r#"[{"jsonrpc":"2.0","id":4,"method":4}]"#;
    let (head, body) = read_whole(&mut post(addr, Some(&session), batch).await).await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    let answers: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(answers[0]["id"], 4, "{body}");
    assert_eq!(answers[0]["error"]["code"], -32600, "{body}");

    // The same on an SSE stream: the error is an event of the POST's own stream.
    let (addr, session) = initialized_at("2025-03-26", |_| {}).await;
    let batch = r#"[{"jsonrpc":"2.0","id":5,"method":5}]"#;
    let all = reads_to_end(&mut post(addr, Some(&session), batch).await)
        .await
        .concat();
    assert!(all.contains(r#""id":5"#), "{all}");
    assert!(all.contains("-32600"), "{all}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reused_request_id_is_refused_on_its_own_post_and_the_first_request_goes_on() {
    for json in [false, true] {
        let (addr, session, gate) =
            initialized_gated("2025-11-25", |config| config.json_response = json).await;
        let call = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"gated"}}"#;
        let mut first = post(addr, Some(&session), call).await;
        gate.entered().await;

        // The id of a request in flight, in another POST: that POST gets the error, whatever
        // the method (a ping too), and the first request keeps its stream.
        for reused in [
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo"}}"#,
            r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#,
        ] {
            let answers = messages(&mut post(addr, Some(&session), reused).await, json).await;
            assert_eq!(answers.len(), 1, "json {json}: {answers:?}");
            assert_eq!(answers[0]["id"], 2, "json {json}: {answers:?}");
            assert_eq!(
                answers[0]["error"]["code"], -32600,
                "json {json}: {answers:?}"
            );
        }

        gate.open.add_permits(1);
        let answers = messages(&mut first, json).await;
        assert_eq!(answers.len(), 1, "json {json}: {answers:?}");
        assert_eq!(answers[0]["id"], 2, "json {json}: {answers:?}");
        assert_eq!(
            answers[0]["result"]["content"][0]["text"], "let through",
            "json {json}: {answers:?}"
        );

        // Answered, the id is free again.
        let ping = r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#;
        let answers = messages(&mut post(addr, Some(&session), ping).await, json).await;
        assert_eq!(answers[0]["result"], serde_json::json!({}), "json {json}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_id_twice_in_one_batch_is_refused_the_second_time() {
    for json in [false, true] {
        let (addr, session, gate) =
            initialized_gated("2025-03-26", |config| config.json_response = json).await;
        // The first id 2 runs; the second, and an invalid item naming id 2, are refused in the
        // batch's own answer; the first one's answer still comes, with the rest of the batch.
        let batch = r#"[{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"gated"}},{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo"}},{"jsonrpc":"2.0","id":2,"method":2},{"jsonrpc":"2.0","id":3,"method":"ping"}]"#;
        let mut tcp = post(addr, Some(&session), batch).await;
        gate.entered().await;
        gate.open.add_permits(1);
        let answers = messages(&mut tcp, json).await;
        assert_eq!(answers.len(), 4, "json {json}: {answers:?}");
        let refused: Vec<_> = answers
            .iter()
            .filter(|a| a["id"] == 2 && a["error"]["code"] == -32600)
            .collect();
        assert_eq!(refused.len(), 2, "json {json}: {answers:?}");
        assert!(
            answers
                .iter()
                .any(|a| a["id"] == 2 && a["result"]["content"][0]["text"] == "let through"),
            "json {json}: {answers:?}"
        );
        assert!(
            answers
                .iter()
                .any(|a| a["id"] == 3 && a["result"] == serde_json::json!({})),
            "json {json}: {answers:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_to_the_client_goes_where_the_client_can_answer_it() {
    for json in [false, true] {
        let (addr, session) = initialized_with(|config| config.json_response = json).await;
        let mut get = standalone(addr, &session).await;
        let call = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"ask","_meta":{"progressToken":"p"}}}"#;
        let mut tcp = post(addr, Some(&session), call).await;

        // On an SSE answer the ping goes on the call's own stream, after its progress. A JSON
        // answer carries nothing but the answer: the ping goes on the standalone stream, and
        // the progress nowhere (the first message there is the ping).
        let ping = if json {
            get.next().await
        } else {
            let mut own = Events::new(tcp);
            let progress = own.next().await;
            assert_eq!(progress["method"], "notifications/progress", "{progress}");
            let ping = own.next().await;
            tcp = own.tcp;
            ping
        };
        assert_eq!(ping["method"], "ping", "json {json}: {ping}");
        let pong = serde_json::json!({"jsonrpc":"2.0","id":ping["id"],"result":{}}).to_string();
        let accepted = read_head(&mut post(addr, Some(&session), &pong).await).await;
        assert!(accepted.starts_with("HTTP/1.1 202"), "{accepted}");

        let answers = messages(&mut tcp, json).await;
        let answer = answers.last().unwrap();
        assert_eq!(answer["id"], 2, "json {json}: {answers:?}");
        assert_eq!(
            answer["result"]["content"][0]["text"], "answered",
            "json {json}: {answers:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_to_the_client_no_stream_can_carry_fails_at_once() {
    // JSON answers and no standalone stream open: nothing can carry the handler's ping, which
    // fails at once rather than at its timeout (60 s; `messages` gives up after 5).
    let (addr, session) = initialized_with(|config| config.json_response = true).await;
    let call = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"ask"}}"#;
    let answers = messages(&mut post(addr, Some(&session), call).await, true).await;
    assert_eq!(answers.len(), 1, "{answers:?}");
    let text = answers[0]["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.starts_with("ping failed in transport"), "{text}");
    assert!(text.contains("standalone"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_to_the_client_whose_stream_is_closed_goes_on_the_standalone_stream() {
    let (addr, session, gate) = initialized_gated("2025-11-25", |_| {}).await;
    let mut get = standalone(addr, &session).await;
    let call = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"gated_ask"}}"#;
    let mut tcp = post(addr, Some(&session), call).await;
    assert!(read_head(&mut tcp).await.starts_with("HTTP/1.1 200"));
    gate.entered().await;
    // The client leaves the call's stream; the server sees the connection end at once (it
    // reads the socket while it streams), well within the wait.
    drop(tcp);
    tokio::time::sleep(Duration::from_millis(200)).await;
    gate.open.add_permits(1);
    let ping = get.next().await;
    assert_eq!(ping["method"], "ping", "{ping}");
}
