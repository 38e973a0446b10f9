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

/// A client that writes many small requests with large answers and does not read: the
/// server stops reading it once its bound of unsent answers is reached (the client's writes
/// block), rather than holding every answer; once the client reads, every answer arrives.
/// The server's peak resident memory (`VmHWM`) is the measure: 800 answers of 256 KiB are
/// 200 MiB, which a server holding them all cannot keep under the 100 MiB ceiling.
#[test]
fn a_client_that_never_reads_is_not_read_either() {
    use std::io::{BufRead as _, BufReader, Write as _};
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    const REQUESTS: usize = 800;
    const ANSWER_BYTES: usize = 256 << 10;
    const CEILING_KIB: u64 = 100 << 10;

    let mut child = std::process::Command::new(mcp_testkit::serve_stdio_server())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    let mut stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();

    // Each request carries 4 KiB of padding, so that the pipe and the server's read buffer
    // hold a few dozen of them, not thousands: a server that reads everything has answered
    // nearly every request by the time the last one is written.
    let written = Arc::new(AtomicUsize::new(0));
    let writer = std::thread::spawn({
        let written = Arc::clone(&written);
        move || {
            let mut send = |v: serde_json::Value| {
                let mut line = v.to_string();
                line.push('\n');
                stdin.write_all(line.as_bytes()).unwrap();
            };
            send(
                json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "never-reads", "version": "0"},
                }}),
            );
            send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
            for id in 1..=REQUESTS {
                send(
                    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
                        "name": "repeat",
                        "arguments": {"message": "x", "times": ANSWER_BYTES, "pad": "p".repeat(4096)},
                    }}),
                );
                written.fetch_add(1, Ordering::SeqCst);
            }
            // Kept open until every answer is read: stdin ending would end the session.
            stdin
        }
    });

    // Not reading, until the writer is done or has made no progress for 2 s (it is blocked:
    // the server no longer reads). This wait asserts nothing: whenever reading starts, the
    // peak below is what it is.
    let mut last = usize::MAX;
    let mut still = 0;
    while !writer.is_finished() && still < 40 {
        std::thread::sleep(Duration::from_millis(50));
        let now = written.load(Ordering::SeqCst);
        still = if now == last { still + 1 } else { 0 };
        last = now;
    }
    let written_unread = written.load(Ordering::SeqCst);

    // Now read: every answer arrives, each whole, none twice.
    let mut seen = vec![false; REQUESTS + 1];
    let mut lines = BufReader::new(stdout).lines();
    for _ in 0..=REQUESTS {
        let line = lines.next().expect("the server ended early").unwrap();
        // Read by hand rather than parsed: 200 MiB of JSON takes long in a debug build.
        let id: usize = line
            .split_once(r#""id":"#)
            .and_then(|(_, rest)| rest.split([',', '}']).next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no id in {:?}", &line[..line.len().min(200)]));
        assert!(line.contains(r#""result":"#), "answer {id} is an error");
        assert!(!seen[id], "answer {id} twice");
        seen[id] = true;
        if id > 0 {
            let text = &line[line.find(r#""text":"x"#).unwrap() + 8..];
            let run = text.bytes().take_while(|&b| b == b'x').count();
            assert_eq!(run, ANSWER_BYTES, "answer {id}");
        }
    }
    assert!(seen.iter().all(|s| *s), "answers missing");
    let stdin = writer.join().unwrap();

    let peak_kib = vm_hwm_kib(pid);
    eprintln!(
        "peak resident memory {} MiB; {written_unread} of {REQUESTS} requests written before reading",
        peak_kib >> 10
    );
    drop(stdin);
    assert!(child.wait().unwrap().success());
    assert!(
        peak_kib < CEILING_KIB,
        "the server's peak resident memory was {} MiB (ceiling {} MiB); \
         {written_unread} of {REQUESTS} requests were written before the client read",
        peak_kib >> 10,
        CEILING_KIB >> 10
    );
}

/// The peak resident memory of process `pid`, in KiB, from `/proc/<pid>/status`.
fn vm_hwm_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().strip_suffix("kB"))
        .map(|v| v.trim().parse().unwrap())
        .unwrap()
}
