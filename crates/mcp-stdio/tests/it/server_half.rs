//! The server half, in process: our client against `mcp_stdio::serve` over an in-memory pipe.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use mcp_protocol::schema::{
    CallToolResult, ClientRequest, ContentBlock, Implementation, ListChangedCapability,
    ListToolsResult, Tool, method,
};
use mcp_protocol::{ErrorObject, RawJson, RequestOptions, ServerConfig};
use mcp_stdio::{Handler, RequestContext};
use serde_json::json;

use super::*;

struct Tools {
    /// Set when a cancelled call's future is dropped.
    dropped: Arc<AtomicBool>,
}

struct SetOnDrop(Arc<AtomicBool>);

impl Drop for SetOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

impl Handler for Tools {
    async fn handle(
        &self,
        request: ClientRequest,
        context: RequestContext,
    ) -> Result<RawJson, ErrorObject> {
        match request {
            ClientRequest::ListTools(_) => {
                Ok(RawJson::encode(&ListToolsResult::new(vec![Tool::new("echo".into())])).unwrap())
            }
            // Before its first `.await`: the handler fails while the reader polls it.
            ClientRequest::CallTool(p) if p.name == "panic" => panic!("the tool broke"),
            // After one: the handler fails in the task it went on in.
            ClientRequest::CallTool(p) if p.name == "panic_later" => {
                tokio::task::yield_now().await;
                panic!("the tool broke later")
            }
            ClientRequest::CallTool(p) if p.name == "wait" => {
                let _guard = SetOnDrop(Arc::clone(&self.dropped));
                std::future::pending().await
            }
            ClientRequest::CallTool(p) => {
                for i in 1..=2 {
                    context.progress(i, Some(2), Some("working"));
                }
                let text = p
                    .arguments
                    .and_then(|a| a.get("message").cloned())
                    .unwrap_or_default();
                Ok(
                    RawJson::encode(&CallToolResult::new(vec![ContentBlock::text(
                        text.to_string(),
                    )]))
                    .unwrap(),
                )
            }
            _ => Err(ErrorObject::new(-32601, "not here".into())),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_client_against_our_server_half() {
    let (client_io, server_io) = tokio::io::duplex(64 << 10);
    let (server_read, server_write) = tokio::io::split(server_io);
    let (client_read, client_write) = tokio::io::split(client_io);
    let dropped = Arc::new(AtomicBool::new(false));
    let mut config = ServerConfig::new(Implementation::new("half".into(), "1".into()));
    config.capabilities.tools = Some(ListChangedCapability::new());
    let server = tokio::spawn(mcp_stdio::serve(
        config,
        server_read,
        server_write,
        Tools {
            dropped: Arc::clone(&dropped),
        },
        1 << 20,
    ));

    let client = mcp_stdio::connect("half", client_read, client_write, session(), 1 << 20)
        .await
        .unwrap();
    assert_eq!(client.server_info().implementation.name, "half");
    assert_eq!(client.list_all_tools().await.unwrap().len(), 1);

    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let result = client
        .request_with_progress::<method::CallTool>(
            &call("echo", json!({"message": "hey"})),
            RequestOptions::DEFAULT,
            Some(tx),
        )
        .await
        .unwrap();
    assert_eq!(result.content, vec![ContentBlock::text("\"hey\"")]);
    assert_eq!(rx.recv().await.unwrap().progress.as_u64(), Some(1));

    // A call that waits holds no other: the echo sent after it is answered first. Then the
    // waiting call times out, and its handler future is dropped on the server.
    let options = RequestOptions::DEFAULT.timeout(Duration::from_millis(500));
    let order = std::sync::Mutex::new(Vec::new());
    let (waited, echoed) = tokio::join!(
        async {
            let r = client.call_tool(call("wait", json!({})), options).await;
            order.lock().unwrap().push("wait");
            r
        },
        async {
            tokio::task::yield_now().await;
            let r = client
                .call_tool(call("echo", json!({"message": 1})), RequestOptions::DEFAULT)
                .await;
            order.lock().unwrap().push("echo");
            r
        }
    );
    assert!(waited.unwrap_err().is_timeout());
    assert_eq!(echoed.unwrap().content, vec![ContentBlock::text("1")]);
    assert_eq!(*order.lock().unwrap(), ["echo", "wait"]);
    assert!(mcp_testkit::wait_until(Duration::from_secs(5), || dropped.load(Ordering::SeqCst)));

    // A handler that panics, before or after its first `.await`, answers with an internal
    // error instead of leaving the call to time out; the session goes on.
    for tool in ["panic", "panic_later"] {
        let err = client
            .call_tool(call(tool, json!({})), RequestOptions::DEFAULT)
            .await
            .unwrap_err();
        assert!(
            matches!(err.protocol(), mcp_protocol::Error::Rpc { error, .. }
                if error.code == -32603 && error.message.contains("panicked")),
            "{tool}: {err}"
        );
    }
    let result = client
        .call_tool(call("echo", json!({"message": 2})), RequestOptions::DEFAULT)
        .await
        .unwrap();
    assert_eq!(result.content, vec![ContentBlock::text("2")]);

    // A method the server does not declare is refused by its session, not its handler.
    let err = client.list_all_prompts().await.unwrap_err();
    assert!(
        matches!(err.protocol(), mcp_protocol::Error::Rpc { error, .. } if error.code == -32601),
        "{err}"
    );

    client.close().await;
    tokio::time::timeout(Duration::from_secs(5), server)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_stateless_era_on_the_same_pipe() {
    use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _};

    let (client_io, server_io) = tokio::io::duplex(64 << 10);
    let (server_read, server_write) = tokio::io::split(server_io);
    let (client_read, mut client_write) = tokio::io::split(client_io);
    let mut config = ServerConfig::dual_era(Implementation::new("half".into(), "1".into()));
    config.capabilities.tools = Some(ListChangedCapability::new());
    let dropped = Arc::new(AtomicBool::new(false));
    tokio::spawn(mcp_stdio::serve(
        config,
        server_read,
        server_write,
        Tools { dropped },
        1 << 20,
    ));
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "progressToken": "p",
    });
    for request in [
        json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": meta}}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "ping", "params": {"_meta": meta}}),
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
               "params": {"name": "echo", "arguments": {"message": "hi"}, "_meta": meta}}),
    ] {
        let mut line = request.to_string().into_bytes();
        line.push(b'\n');
        client_write.write_all(&line).await.unwrap();
    }
    let mut lines = tokio::io::BufReader::new(client_read).lines();
    let mut seen = Vec::new();
    while seen.len() < 5 {
        let line = tokio::time::timeout(Duration::from_secs(5), lines.next_line())
            .await
            .expect("the server went quiet")
            .unwrap()
            .expect("the pipe ended");
        seen.push(serde_json::from_str::<serde_json::Value>(&line).unwrap());
    }
    let by_id = |id: u64| seen.iter().find(|m| m["id"] == id).unwrap();
    // No handshake: discover is answered, ping is a removed method, the call completes.
    assert_eq!(by_id(1)["result"]["supportedVersions"][0], "2026-07-28");
    assert_eq!(by_id(2)["error"]["code"], -32601);
    assert_eq!(by_id(3)["result"]["resultType"], "complete");
    assert_eq!(
        by_id(3)["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "half"
    );
    let progress = seen
        .iter()
        .filter(|m| m["method"] == "notifications/progress")
        .count();
    assert_eq!(progress, 2, "{seen:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_serve_closes_its_output() {
    use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _};

    let (client_io, server_io) = tokio::io::duplex(64 << 10);
    let (server_read, server_write) = tokio::io::split(server_io);
    let (client_read, mut client_write) = tokio::io::split(client_io);
    let config = ServerConfig::dual_era(Implementation::new("half".into(), "1".into()));
    let dropped = Arc::new(AtomicBool::new(false));
    let server = tokio::spawn(mcp_stdio::serve(
        config,
        server_read,
        server_write,
        Tools { dropped },
        1 << 20,
    ));
    // One answer: the loop and its writer task are running.
    let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"});
    client_write
        .write_all(format!("{ping}\n").as_bytes())
        .await
        .unwrap();
    let mut lines = tokio::io::BufReader::new(client_read).lines();
    let line = tokio::time::timeout(Duration::from_secs(5), lines.next_line()).await;
    assert!(line.expect("no answer").unwrap().is_some());

    // Dropping the serving future (here, by aborting its task) drops the writer too: the
    // client reads the end of the stream, as it would from a server that exited.
    server.abort();
    let _ = server.await;
    let end = tokio::time::timeout(Duration::from_secs(5), lines.next_line())
        .await
        .expect("the server's output stayed open after serve was dropped")
        .unwrap();
    assert_eq!(end, None);
}

/// A stream that tells the test when it is shut down and when it is dropped.
struct Watched<S> {
    stream: S,
    shut_down: Arc<AtomicBool>,
    _dropped: SetOnDrop,
}

impl<S> Watched<S> {
    /// `stream`, and the flags set when it is shut down and when it is dropped.
    fn new(stream: S) -> (Self, Arc<AtomicBool>, Arc<AtomicBool>) {
        let (shut_down, dropped) = (Arc::default(), Arc::default());
        let watched = Self {
            stream,
            shut_down: Arc::clone(&shut_down),
            _dropped: SetOnDrop(Arc::clone(&dropped)),
        };
        (watched, shut_down, dropped)
    }
}

impl<S: tokio::io::AsyncRead + Unpin> tokio::io::AsyncRead for Watched<S> {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.stream).poll_read(cx, buf)
    }
}

impl<S: tokio::io::AsyncWrite + Unpin> tokio::io::AsyncWrite for Watched<S> {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        std::pin::Pin::new(&mut self.stream).poll_write(cx, buf)
    }

    fn poll_flush(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        let done = std::pin::Pin::new(&mut self.stream).poll_shutdown(cx);
        if done.is_ready() {
            self.shut_down.store(true, Ordering::SeqCst);
        }
        done
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_every_handle_of_a_connected_client_ends_its_tasks() {
    // Our client writes to the server through one pipe; the server's answers come back through
    // two, with a relay between them that never ends the client's input: only the client itself
    // can stop its reader.
    let (to_server, server_read) = tokio::io::duplex(64 << 10);
    let (server_write, mut relay_read) = tokio::io::duplex(64 << 10);
    let (mut relay_write, from_server) = tokio::io::duplex(64 << 10);
    let relay = tokio::spawn(async move {
        let _ = tokio::io::copy(&mut relay_read, &mut relay_write).await;
        relay_write
    });
    let (reader, _, reader_dropped) = Watched::new(from_server);
    let (writer, writer_shut_down, writer_dropped) = Watched::new(to_server);
    let mut config = ServerConfig::new(Implementation::new("half".into(), "1".into()));
    config.capabilities.tools = Some(ListChangedCapability::new());
    let dropped = Arc::new(AtomicBool::new(false));
    let mut server = tokio::spawn(mcp_stdio::serve(
        config,
        server_read,
        server_write,
        Tools { dropped },
        1 << 20,
    ));
    let client = mcp_stdio::connect("half", reader, writer, session(), 1 << 20)
        .await
        .unwrap();
    let ended = || {
        [&reader_dropped, &writer_shut_down, &writer_dropped]
            .map(|flag| flag.load(Ordering::SeqCst))
    };

    // A clone keeps the connection: dropping the first handle ends nothing.
    let copy = client.clone();
    drop(client);
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(
        ended(),
        [false; 3],
        "reader dropped, writer shut down, dropped"
    );
    assert!(!server.is_finished(), "the server saw its input end");
    assert_eq!(copy.list_all_tools().await.unwrap().len(), 1);

    // The last one ends it: the server reads the end of its input, and serve returns.
    drop(copy);
    tokio::time::timeout(Duration::from_secs(5), &mut server)
        .await
        .expect("the server's input did not end when the last handle was dropped")
        .unwrap()
        .unwrap();
    // The client's input is still open (the relay holds it), yet both tasks ended: the writer
    // shut its stream down, and both streams were dropped.
    let _still_open = relay.await.unwrap();
    assert!(
        mcp_testkit::wait_until(Duration::from_secs(5), || ended() == [true; 3]),
        "reader dropped, writer shut down, dropped: {:?}",
        ended()
    );
}
