//! A library `Host` takes its servers with it, by default: dropped, or its process killed with
//! SIGKILL. The server starts a grandchild and ignores both the end of its stdin and SIGTERM,
//! so only a kill of the whole group ends it. Both processes carry an environment marker of
//! their own, by which the test finds them alive first and gone after.
//!
//! The host that gets SIGKILL is this test binary run again, the same test in the host's role
//! (`--exact a_host_killed_with_sigkill_leaves_no_server`, with an environment variable). It is
//! given the fake server's path, so that it never runs cargo (a build in a busy target
//! directory can wait for minutes), and the test reads its output against a deadline.

// Test code: an unwrap that fails is a failed test, with its location.
#![allow(clippy::unwrap_used, clippy::print_stdout)]

use std::io::{BufRead as _, Write as _};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use mcp_host::permission::AllowAll;
use mcp_host::{CallOptions, Connect, Host, HostOptions, ServerEntry, ServerState};
use mcp_protocol::JsonObject;
use mcp_protocol::schema::{ContentBlock, Implementation};
use mcp_stdio::StdioConfig;

/// Set, to the marker, in the environment of the copy of this binary that plays the host.
const CHILD: &str = "MCP_HOST_LIFETIME_TEST_CHILD";
/// The fake server's path, for that copy.
const FAKE_SERVER: &str = "MCP_HOST_LIFETIME_TEST_FAKE_SERVER";
/// The variable that marks the server and its grandchild.
const MARKER: &str = "MCP_HOST_LIFETIME_MARKER";

/// A marker value no other test run shares.
fn marker(what: &str) -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("{what}-{}-{nanos}", std::process::id())
}

/// A host with one deaf fake server carrying `marker` (it and its grandchild), started and
/// ready; returns the host and the server's process group.
async fn host_with_deaf_server(fake_server: String, marker: &str) -> (Host, i32) {
    let mut config = StdioConfig::new(
        "deaf",
        fake_server,
        ["--grandchild", "--ignore-stdin-close", "--ignore-sigterm"],
    );
    config.env.push((MARKER.to_owned(), marker.to_owned()));
    let host = Host::new(HostOptions::new(
        Implementation::new("lifetime-test".into(), "0".into()),
        Arc::new(AllowAll),
    ));
    host.start(vec![ServerEntry::new("deaf", Connect::Stdio(config))])
        .await;
    let status = host.server_status("deaf").unwrap();
    assert_eq!(status.state, ServerState::Ready, "{status:?}");
    let out = host
        .call_tool("deaf", "pid", JsonObject::new(), CallOptions::default())
        .await
        .unwrap();
    let text = match &out.result.content[0] {
        ContentBlock::Text(t) => t.text.clone(),
        other => panic!("expected text, got {other:?}"),
    };
    let group = text.split(' ').nth(1).unwrap().parse().unwrap();
    (host, group)
}

/// Asserts that the server and its grandchild are alive (found by `marker`), in `group` with
/// its keeper.
#[track_caller]
fn assert_present(marker: &str, group: i32) {
    let found = mcp_testkit::live_processes_with_env(MARKER, marker);
    assert_eq!(found.len(), 2, "the server and its grandchild: {found:?}");
    let members = mcp_testkit::live_group_members(group);
    assert_eq!(
        members.len(),
        3,
        "the keeper, the server, the grandchild: {members:?}"
    );
    assert!(found.iter().all(|pid| members.contains(pid)));
}

/// Asserts that no process carrying `marker` and no process of `group` is alive within 3 s
/// (zombies count as dead).
#[track_caller]
fn assert_gone_within_3s(marker: &str, group: i32) {
    let gone = mcp_testkit::wait_until(Duration::from_secs(3), || {
        mcp_testkit::live_processes_with_env(MARKER, marker).is_empty()
            && mcp_testkit::live_group_members(group).is_empty()
    });
    assert!(
        gone,
        "left after 3 s: marked {:?}, group {group} {:?}",
        mcp_testkit::live_processes_with_env(MARKER, marker),
        mcp_testkit::live_group_members(group)
    );
}

/// The drop alone does it: the host is dropped outside the runtime, which is then neither
/// driven nor shut down until the servers are found gone.
#[test]
fn dropping_the_host_kills_its_servers_at_once() {
    let marker = marker("drop");
    let fake = mcp_testkit::fake_server().display().to_string();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (host, group) = rt.block_on(host_with_deaf_server(fake, &marker));
    assert_present(&marker, group);
    drop(host);
    assert_gone_within_3s(&marker, group);
    drop(rt);
}

/// The host that [`a_host_killed_with_sigkill_leaves_no_server`] starts and kills: the same
/// test, run again with [`CHILD`] set. It prints the server's group, then waits to be killed;
/// it never returns, so it is never counted as a passing test.
fn play_the_killed_host(marker: std::ffi::OsString) -> ! {
    let marker = marker.into_string().unwrap();
    let fake = std::env::var(FAKE_SERVER).unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let (_host, group) = host_with_deaf_server(fake, &marker).await;
        println!("group {group}");
        std::io::stdout().flush().unwrap();
        std::future::pending::<()>().await;
    });
    unreachable!("the host waits to be killed")
}

#[test]
fn a_host_killed_with_sigkill_leaves_no_server() {
    if let Some(marker) = std::env::var_os(CHILD) {
        play_the_killed_host(marker);
    }
    let marker = marker("sigkill");
    let mut host = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "a_host_killed_with_sigkill_leaves_no_server",
            "--nocapture",
            "--test-threads",
            "1",
        ])
        .env(CHILD, &marker)
        .env(FAKE_SERVER, mcp_testkit::fake_server())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Lines are read on a thread of their own, so that a host that never gets ready fails
    // the test instead of hanging it.
    let stdout = host.stdout.take().unwrap();
    let (lines_tx, lines) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if lines_tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut seen = Vec::new();
    let group: i32 = loop {
        match lines.recv_timeout(Duration::from_secs(60)) {
            // The harness prints "test a_host_killed_... ... " with no line end before the
            // test runs: the group is at the end of that line.
            Ok(line) => match line.trim().rsplit_once("group ") {
                Some((_, g)) => break g.parse().unwrap(),
                None => seen.push(line),
            },
            Err(e) => {
                let _ = host.kill();
                let _ = host.wait();
                panic!("the host never said its group ({e}); it printed {seen:?}");
            }
        }
    };
    assert_present(&marker, group);
    host.kill().unwrap();
    host.wait().unwrap();
    assert_gone_within_3s(&marker, group);
}
