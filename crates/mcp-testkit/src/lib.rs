//! Test support for the workspace: the fake MCP server binary `mcp-fake-server`, which
//! misbehaves on demand over stdio (see its doc), the in-process fake HTTP server
//! [`fake_http`], which misbehaves at the HTTP layer, the in-process fake OAuth authorization
//! server and protected MCP endpoint [`fake_auth`], the accept loop they share ([`serve`]), the
//! fake host `mcp-fake-host`, and helpers to find those binaries and to watch process groups.
//! Never a dependency of a product crate.

// Test support reports on the terminal and fails loudly.
#![allow(clippy::print_stderr, clippy::unwrap_used)]

pub mod fake_auth;
pub mod fake_http;
pub mod serve;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The fake server binary, built on first use in the profile of the running test or bench.
pub fn fake_server() -> PathBuf {
    binary("mcp-fake-server")
}

/// The fake host binary (connects to a fake server, then waits for a signal).
pub fn fake_host() -> PathBuf {
    binary("mcp-fake-host")
}

/// `target/<profile>` of the running test or bench executable.
fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let dir = exe.parent().unwrap();
    // Test and bench executables live in `target/<profile>/deps`.
    if dir.file_name().is_some_and(|n| n == "deps") {
        dir.parent().unwrap().to_path_buf()
    } else {
        dir.to_path_buf()
    }
}

fn binary(name: &str) -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    let dir = BUILT.get_or_init(|| build(&profile_dir()));
    let path = dir.join(name);
    assert!(path.exists(), "{} was not built", path.display());
    path
}

/// Builds the testkit binaries so that they are always current (a no-op build takes well under
/// a second), in a target folder of their own beside the caller's: the caller's build unifies
/// features differently, and sharing one folder would make each build undo the other.
fn build(caller: &Path) -> PathBuf {
    let release = caller.file_name().is_some_and(|n| n == "release");
    let target = caller
        .parent()
        .map_or_else(|| PathBuf::from("target"), Path::to_path_buf)
        .join("testkit");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let mut cmd = Command::new(cargo);
    cmd.args(["build", "--quiet", "--package", "mcp-testkit", "--bins"]);
    if release {
        cmd.arg("--release");
    }
    cmd.env("CARGO_TARGET_DIR", &target);
    let status = cmd.status().expect("cargo runs");
    assert!(status.success(), "building the mcp-testkit binaries failed");
    target.join(if release { "release" } else { "debug" })
}

/// The processes of a group that are still alive (zombies excluded), from `/proc`.
pub fn live_group_members(pgid: i32) -> Vec<i32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| matches!(proc_stat(*pid), Some((state, group)) if group == pgid && state != 'Z' && state != 'X'))
        .collect()
}

/// Live processes (zombies excluded) whose environment holds `key=value`: how a test finds
/// what a server it never got to talk to left behind.
pub fn live_processes_with_env(key: &str, value: &str) -> Vec<i32> {
    let wanted = format!("{key}={value}");
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| is_alive(*pid))
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .is_ok_and(|env| env.split(|b| *b == 0).any(|var| var == wanted.as_bytes()))
        })
        .collect()
}

/// Whether a process exists at all, zombie or not: a child that was never reaped still does.
pub fn exists(pid: i32) -> bool {
    proc_stat(pid).is_some()
}

/// Whether a process exists and is not a zombie.
pub fn is_alive(pid: i32) -> bool {
    matches!(proc_stat(pid), Some((state, _)) if state != 'Z' && state != 'X')
}

/// The state letter and process group of a process, from `/proc/<pid>/stat`.
fn proc_stat(pid: i32) -> Option<(char, i32)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name is in parentheses and may hold spaces: split after the last `)`.
    let rest = &stat[stat.rfind(')')? + 2..];
    let mut fields = rest.split(' ');
    let state = fields.next()?.chars().next()?;
    let _ppid = fields.next()?;
    let pgrp = fields.next()?.parse().ok()?;
    Some((state, pgrp))
}

/// Waits up to `timeout` for `done` to hold, polling every 10 ms; returns whether it did.
pub fn wait_until(timeout: std::time::Duration, mut done: impl FnMut() -> bool) -> bool {
    let end = std::time::Instant::now() + timeout;
    loop {
        if done() {
            return true;
        }
        if std::time::Instant::now() >= end {
            return false;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// A scratch directory of its own for one test, removed when dropped: under the system's
/// temporary directory, named after the test binary, the process, a counter and `what`, so
/// that tests running at once never share one.
#[derive(Debug)]
pub struct TempDir(PathBuf);

impl TempDir {
    /// Creates it empty (a leftover of an earlier run with the same name is removed first).
    pub fn new(what: &str) -> Self {
        static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let binary = std::env::current_exe()
            .ok()
            .and_then(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
            .unwrap_or_default();
        let dir = std::env::temp_dir().join(format!(
            "mcp-test-{binary}-{}-{n}-{what}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Self(dir)
    }

    /// Where it is.
    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
