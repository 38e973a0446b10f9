//! Shutdown: polite close, a server that ignores SIGTERM, grandchildren, dropping the handle,
//! and the host itself getting SIGTERM. Nothing of a server's group may be left behind.

use std::io::BufRead as _;
use std::time::Duration;

use serde_json::json;

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_ends_the_server_and_its_grandchild() {
    let client = connect(&["--grandchild"]).await;
    let group = pgid(&client).await;
    let grandchild: i32 = text(&client, "spawn_grandchild", json!({}))
        .await
        .parse()
        .unwrap();
    assert!(mcp_testkit::is_alive(grandchild));
    client.close().await;
    assert_group_gone(group);
    assert!(!mcp_testkit::is_alive(grandchild));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_ignores_stdin_close_and_sigterm_is_killed() {
    let client = connect(&["--ignore-sigterm", "--ignore-stdin-close", "--grandchild"]).await;
    let group = pgid(&client).await;
    let status = client.close().await;
    // Neither closing stdin nor SIGTERM ended it: only SIGKILL did.
    assert!(status.contains("signal: 9"), "{status}");
    assert_group_gone(group);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_exits_on_stdin_close_is_not_signalled() {
    let client = connect(&[]).await;
    let group = pgid(&client).await;
    let status = client.close().await;
    // It exited by itself once stdin closed: a signal would show in the status.
    assert!(status.contains("exit status: 0"), "{status}");
    assert_group_gone(group);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_every_handle_kills_the_group() {
    // Deaf to SIGTERM and to the end of its stdin: only the SIGKILL of the drop ends it.
    let client = connect(&["--grandchild", "--ignore-sigterm", "--ignore-stdin-close"]).await;
    let group = pgid(&client).await;
    let grandchild: i32 = text(&client, "spawn_grandchild", json!({}))
        .await
        .parse()
        .unwrap();
    // The keeper that leads the group (its pid is the group's id), the server, the grandchild
    // it started at start-up and the one just asked for.
    let members = mcp_testkit::live_group_members(group);
    assert_eq!(members.len(), 4, "{members:?}");
    assert!(members.contains(&group), "{members:?}");
    assert!(members.contains(&grandchild), "{members:?}");
    let copy = client.clone();
    drop(client);
    // A clone keeps it alive: the server still answers, and its whole group still runs.
    assert_witness_fine(&copy).await;
    assert_eq!(mcp_testkit::live_group_members(group), members);
    drop(copy);
    assert_group_gone(group);
    assert!(!mcp_testkit::is_alive(grandchild));
}

/// What descriptor `fd` of process `pid` is: `pipe:[inode]` for a pipe.
fn descriptor(pid: &str, fd: u32) -> std::path::PathBuf {
    std::fs::read_link(format!("/proc/{pid}/fd/{fd}")).unwrap()
}

/// Whether this process holds a descriptor for `what` (an end of a pipe).
fn we_hold(what: &std::path::Path) -> bool {
    std::fs::read_dir("/proc/self/fd")
        .unwrap()
        .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .any(|target| target == what)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_every_handle_closes_our_ends_of_the_pipes() {
    let client = connect(&[]).await;
    let pid = text(&client, "pid", json!({})).await;
    let (pid, group) = pid.split_once(' ').unwrap();
    let group: i32 = group.parse().unwrap();
    let (stdin, stdout) = (descriptor(pid, 0), descriptor(pid, 1));
    assert!(we_hold(&stdin) && we_hold(&stdout), "{stdin:?} {stdout:?}");
    drop(client);
    assert_group_gone(group);
    // The writer task closes the server's stdin, and the reader task its stdout, as they end.
    let closed = mcp_testkit::wait_until(Duration::from_secs(5), || {
        !we_hold(&stdin) && !we_hold(&stdout)
    });
    assert!(
        closed,
        "still held: stdin {}, stdout {}",
        we_hold(&stdin),
        we_hold(&stdout)
    );
}

#[test]
fn the_host_getting_sigterm_takes_its_servers_with_it() {
    let mut host = std::process::Command::new(mcp_testkit::fake_host())
        .arg(mcp_testkit::fake_server())
        .arg("--grandchild")
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(host.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let mut parts = line.split_whitespace().skip(1);
    let group: i32 = parts.next().unwrap().parse().unwrap();
    let grandchild: i32 = parts.next().unwrap().parse().unwrap();
    assert!(!mcp_testkit::live_group_members(group).is_empty());

    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(host.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let status = host.wait().unwrap();
    assert_eq!(status.code(), Some(128 + 15));
    // The server was the host's child; with the host gone, reaping it is init's job, so only
    // "nothing running" is ours to check here.
    let gone = mcp_testkit::wait_until(Duration::from_secs(5), || {
        mcp_testkit::live_group_members(group).is_empty()
    });
    assert!(
        gone,
        "processes of group {group} are left: {:?}",
        mcp_testkit::live_group_members(group)
    );
    assert!(!mcp_testkit::is_alive(grandchild));
}

/// A host on the library killed with SIGKILL runs no code at all: the keeper that leads the
/// server's group sees its pipe from the host close, and kills the group, grandchildren
/// included, well within 3 s.
#[test]
fn the_host_getting_sigkill_takes_its_servers_with_it() {
    let mut host = std::process::Command::new(mcp_testkit::fake_host())
        .arg(mcp_testkit::fake_server())
        .args(["--grandchild", "--ignore-stdin-close", "--ignore-sigterm"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(host.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let mut parts = line.split_whitespace().skip(1);
    let group: i32 = parts.next().unwrap().parse().unwrap();
    let grandchild: i32 = parts.next().unwrap().parse().unwrap();
    // The keeper, the server and its two grandchildren.
    let members = mcp_testkit::live_group_members(group);
    assert_eq!(members.len(), 4, "{members:?}");
    assert!(mcp_testkit::is_alive(grandchild));

    host.kill().unwrap();
    let status = host.wait().unwrap();
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&status),
        Some(9)
    );
    let gone = mcp_testkit::wait_until(Duration::from_secs(3), || {
        mcp_testkit::live_group_members(group).is_empty()
    });
    assert!(
        gone,
        "processes of group {group} are left 3 s after SIGKILL: {:?}",
        mcp_testkit::live_group_members(group)
    );
    assert!(!mcp_testkit::is_alive(grandchild));
}
