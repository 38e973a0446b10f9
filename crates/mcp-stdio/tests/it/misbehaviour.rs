//! Each misbehaviour of the fake server, one test each. Every test ends by checking that the
//! call ended, that the server's group is gone after close (or after the crash), and that a
//! witness connection still works.

use std::time::Duration;

use mcp_protocol::schema::{
    ClientCapabilities, SamplingCapability, ServerNotification, ServerRequest,
};
use mcp_protocol::{RawJson, RequestOptions};
use mcp_stdio::Incoming;
use serde_json::json;

use super::*;

/// Runs `scenario` against a server started with `flags`, beside a witness connection.
async fn with_witness<F, Fut>(flags: &[&str], scenario: F)
where
    F: FnOnce(Client) -> Fut,
    Fut: Future<Output = Client>,
{
    let witness = connect(&[]).await;
    let client = connect(flags).await;
    let group = pgid(&client).await;
    let client = scenario(client).await;
    assert_witness_fine(&witness).await;
    client.close().await;
    assert_group_gone(group);
    assert_witness_fine(&witness).await;
    witness.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_call_completes() {
    with_witness(&[], |client| async move {
        let options = RequestOptions::DEFAULT.timeout(Duration::from_secs(5));
        let result = client
            .call_tool(call("sleep", json!({"ms": 200})), options)
            .await
            .unwrap();
        assert!(!result.is_tool_error());
        client
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hung_call_times_out_and_the_server_is_told() {
    with_witness(&[], |client| async move {
        let options = RequestOptions::DEFAULT.timeout(Duration::from_millis(300));
        let err = client
            .call_tool(call("hang", json!({})), options)
            .await
            .unwrap_err();
        assert!(err.is_timeout(), "{err}");
        assert!(err.to_string().contains("tools/call timed out"), "{err}");
        assert_eq!(text(&client, "stats", json!({})).await, "cancelled=1");
        client
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_a_call_cancels_it() {
    with_witness(&[], |client| async move {
        let pending = client.call_tool(call("hang", json!({})), RequestOptions::DEFAULT);
        assert!(
            tokio::time::timeout(Duration::from_millis(200), pending)
                .await
                .is_err()
        );
        assert_eq!(text(&client, "stats", json!({})).await, "cancelled=1");
        client
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_mid_call_fails_the_call_with_the_reason() {
    let witness = connect(&[]).await;
    let client = connect(&["--grandchild"]).await;
    let group = pgid(&client).await;
    let slow = {
        let client = client.clone();
        tokio::spawn(async move {
            client
                .call_tool(call("hang", json!({})), RequestOptions::DEFAULT)
                .await
        })
    };
    let err = client
        .call_tool(call("crash", json!({})), RequestOptions::DEFAULT)
        .await
        .unwrap_err();
    let message = err.to_string();
    assert!(err.is_closed(), "{message}");
    assert!(message.contains("exit status: 3"), "{message}");
    assert!(
        message.contains("crashing in the middle of a call"),
        "stderr is in the reason: {message}"
    );
    // A host waiting for the end hears it, with the same reason.
    let ended = tokio::time::timeout(std::time::Duration::from_secs(5), client.closed())
        .await
        .expect("closed() resolves once the server is gone");
    assert!(ended.contains("exit status: 3"), "{ended}");
    assert!(!witness.is_closed());
    // Every other call in flight ends too, and nothing new can start.
    assert!(slow.await.unwrap().unwrap_err().is_closed());
    assert!(
        client
            .call_tool(call("echo", json!({})), RequestOptions::DEFAULT)
            .await
            .unwrap_err()
            .is_closed()
    );
    // The crash left a grandchild behind; the group sweep ends it without a close.
    assert_group_gone(group);
    assert_witness_fine(&witness).await;
    client.close().await;
    witness.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_on_stdout_is_a_diagnostic() {
    with_witness(&["--garbage-on-start"], |client| async move {
        assert_eq!(text(&client, "garbage", json!({})).await, "after garbage");
        let diagnostics = client.diagnostics();
        assert!(
            diagnostics
                .iter()
                .filter(|d| d.contains("not valid JSON"))
                .count()
                >= 2,
            "{diagnostics:?}"
        );
        client
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_10_mb_response_line_fails_its_call_and_the_connection_lives() {
    with_witness(&[], |client| async move {
        let err = client
            .call_tool(
                call("huge", json!({"bytes": 10_000_000})),
                RequestOptions::DEFAULT,
            )
            .await
            .unwrap_err();
        let message = err.to_string();
        assert!(
            message.contains("over the limit of 8388608 bytes"),
            "{message}"
        );
        assert!(message.starts_with("server `fake`"), "{message}");
        assert_eq!(
            text(&client, "echo", json!({"message": "after"})).await,
            "after"
        );
        client
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_10_mb_noise_line_is_discarded_and_reported() {
    with_witness(&[], |client| async move {
        assert_eq!(
            text(&client, "huge_noise", json!({"bytes": 10_000_000})).await,
            "after noise"
        );
        assert!(
            client
                .diagnostics()
                .iter()
                .any(|d| d.contains("discarded a stdout line of 10000000 bytes"))
        );
        client
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stderr_flood_is_drained_and_bounded() {
    with_witness(&["--stderr-on-start", "100000"], |client| async move {
        assert_eq!(
            text(&client, "flood_stderr", json!({"bytes": 5_000_000})).await,
            "flooded"
        );
        // stderr is its own pipe: its last bytes may come in just after the answer on stdout.
        mcp_testkit::wait_until(Duration::from_secs(5), || {
            client.stderr().ends_with("flood done\n")
        });
        let stderr = client.stderr();
        assert!(stderr.len() <= 64 << 10, "kept {} bytes", stderr.len());
        assert!(
            stderr.ends_with("flood done\n"),
            "the newest bytes are kept"
        );
        client
    })
    .await;
}

/// Notifications the host does not take wait in a bounded queue: past 256 they are dropped and
/// counted, however many the server sends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn undelivered_notifications_are_capped_and_counted() {
    with_witness(&[], |client| async move {
        for _ in 0..300 {
            assert_eq!(text(&client, "list_changed", json!({})).await, "notified");
        }
        // The fake may write a notification just after its call's answer: wait until all 300
        // are accounted for, queued or dropped.
        for _ in 0..250 {
            if client.dropped_notifications() >= 300 - 256 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let mut incoming = client.take_incoming().unwrap();
        let mut kept = 0;
        while let Ok(note) = incoming.try_recv() {
            assert!(
                matches!(
                    note,
                    Incoming::Notification(ServerNotification::ToolListChanged(_))
                ),
                "{note:?}"
            );
            kept += 1;
        }
        assert_eq!(kept, 256, "the queue holds 256 notifications");
        assert_eq!(
            client.dropped_notifications(),
            300 - 256,
            "the rest are counted"
        );
        client
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_changed_reaches_the_host() {
    with_witness(&[], |client| async move {
        let mut incoming = client.take_incoming().unwrap();
        assert_eq!(text(&client, "list_changed", json!({})).await, "notified");
        let note = tokio::time::timeout(Duration::from_secs(5), incoming.recv())
            .await
            .unwrap()
            .unwrap();
        assert!(
            matches!(
                note,
                Incoming::Notification(ServerNotification::ToolListChanged(_))
            ),
            "{note:?}"
        );
        client
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_notification_before_the_initialize_result_is_accepted() {
    with_witness(&["--notify-before-init"], |client| async move {
        let mut incoming = client.take_incoming().unwrap();
        let note = incoming.try_recv().unwrap();
        assert!(
            matches!(
                note,
                Incoming::Notification(ServerNotification::LoggingMessage(_))
            ),
            "{note:?}"
        );
        client
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn undeclared_sampling_elicitation_and_roots_are_refused() {
    with_witness(&[], |client| async move {
        // The fake server sends each request under the id it is given and reports the whole
        // frame it read back: the refusal must be method not found, under that id.
        for (tool, id, message) in [
            ("sample", json!("sample-1"), "Sampling not supported"),
            ("elicit", json!(4242), "Elicitation not supported"),
            ("roots", json!("roots-1"), "Roots not supported"),
        ] {
            let answer = text(&client, tool, json!({ "request_id": id })).await;
            let frame: serde_json::Value = serde_json::from_str(&answer)
                .unwrap_or_else(|e| panic!("{tool}: no JSON-RPC frame ({e}): {answer}"));
            assert_eq!(
                frame,
                json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": message}}),
                "{tool}"
            );
        }
        client
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn declared_sampling_reaches_the_host_and_its_answer_the_server() {
    let mut caps = ClientCapabilities::new();
    caps.sampling = Some(SamplingCapability::new());
    let client = mcp_stdio::spawn(fake(&[]), session_with(caps))
        .await
        .unwrap();
    let group = pgid(&client).await;
    let mut incoming = client.take_incoming().unwrap();
    let host = {
        let client = client.clone();
        tokio::spawn(async move {
            while let Some(item) = incoming.recv().await {
                if let Incoming::Request {
                    id,
                    request: ServerRequest::CreateMessage(_),
                    ..
                } = item
                {
                    let answer = json!({"role": "assistant", "content": {"type": "text", "text": "sampled!"}, "model": "m"});
                    client
                        .respond(&id, Ok(RawJson::encode(&answer).unwrap()))
                        .unwrap();
                    return;
                }
            }
        })
    };
    let answer = text(&client, "sample", json!({})).await;
    assert!(answer.contains("sampled!"), "{answer}");
    host.await.unwrap();
    client.close().await;
    assert_group_gone(group);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_is_delivered_to_the_caller() {
    with_witness(&[], |client| async move {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let params = call("progress", json!({"steps": 3, "delay_ms": 10}));
        let result = client
            .request_with_progress::<mcp_protocol::schema::method::CallTool>(
                &params,
                RequestOptions::DEFAULT,
                Some(tx),
            )
            .await
            .unwrap();
        assert!(!result.is_tool_error());
        let mut steps = Vec::new();
        while let Ok(p) = rx.try_recv() {
            steps.push(p.progress.as_u64().unwrap());
        }
        assert_eq!(steps, [1, 2, 3]);
        client
    })
    .await;
}
