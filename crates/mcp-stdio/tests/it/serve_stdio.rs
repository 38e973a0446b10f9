//! `serve_stdio` in a real child process (the testkit's `mcp-serve-stdio`, a server built on
//! it): over pipes, as `mcp_stdio::spawn` and most hosts start a server, and over socket
//! pairs, as Node's `child_process` does. Both must round-trip calls, keep descriptors 0 and 1
//! blocking for everyone else while they serve, and end when stdin ends.

use std::os::fd::OwnedFd;
use std::os::unix::net::UnixStream;
use std::process::Stdio;

use mcp_stdio::Client;

use super::*;

/// Many calls at once, some with answers larger than the pipe (so that they leave in many
/// partial writes, between which the small ones queue), then the flags of the server's
/// descriptors.
async fn exercise(client: &Client) {
    let message = |i: usize| {
        if i.is_multiple_of(32) {
            format!("m{i}").repeat(1 << 20)
        } else {
            format!("m{i}")
        }
    };
    let calls = (0..64).map(|i| {
        let client = client.clone();
        async move { text(&client, "echo", json!({"message": message(i)})).await }
    });
    let answers = join_all(calls).await;
    for (i, answer) in answers.iter().enumerate() {
        assert!(answer == &message(i), "answer {i} differs");
    }
    assert_eq!(
        text(client, "nonblocking", json!({})).await,
        "false false",
        "serve_stdio must not make descriptors 0 and 1 non-blocking for the processes sharing them"
    );
    assert_eq!(
        text(client, "reactor", json!({})).await,
        "true true",
        "stdin and stdout are served on the reactor, not through tokio's stdin() and stdout()"
    );
}

/// Awaits every future, in order, each in a task of its own so that they are in flight at once.
async fn join_all<F>(futures: impl Iterator<Item = F>) -> Vec<String>
where
    F: Future<Output = String> + Send + 'static,
{
    let tasks: Vec<_> = futures.map(tokio::spawn).collect();
    let mut out = Vec::new();
    for t in tasks {
        out.push(t.await.unwrap());
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_pipes_from_a_real_child() {
    let server = mcp_testkit::serve_stdio_server();
    let config = StdioConfig::new(
        "serve_stdio",
        server.display().to_string(),
        Vec::<String>::new(),
    );
    let client = mcp_stdio::spawn(config, session()).await.unwrap();
    assert_eq!(client.server_info().implementation.name, "child");
    exercise(&client).await;
    // Closing stdin is the end: the server exits by itself, before any signal.
    let status = client.close().await;
    assert!(status.contains("exit status: 0"), "{status}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_socket_pairs_from_a_real_child() {
    let (ours_in, theirs_in) = UnixStream::pair().unwrap();
    let (ours_out, theirs_out) = UnixStream::pair().unwrap();
    let mut child = tokio::process::Command::new(mcp_testkit::serve_stdio_server())
        .stdin(Stdio::from(OwnedFd::from(theirs_in)))
        .stdout(Stdio::from(OwnedFd::from(theirs_out)))
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    // Our ends are our own descriptions: non-blocking here touches nobody else.
    ours_in.set_nonblocking(true).unwrap();
    ours_out.set_nonblocking(true).unwrap();
    let writer = tokio::net::UnixStream::from_std(ours_in).unwrap();
    let reader = tokio::net::UnixStream::from_std(ours_out).unwrap();
    let client = mcp_stdio::connect("sockets", reader, writer, session(), 8 << 20)
        .await
        .unwrap();
    assert_eq!(client.server_info().implementation.name, "child");
    exercise(&client).await;
    client.close().await;
    let status = tokio::time::timeout(Duration::from_secs(10), child.wait())
        .await
        .expect("the server did not end when its stdin did")
        .unwrap();
    assert!(status.success(), "{status}");
}
