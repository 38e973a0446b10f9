//! Test support for the workspace: the fake MCP server binary `mcp-fake-server`, which
//! misbehaves on demand over stdio (see its doc), the in-process fake HTTP server
//! [`fake_http`], which misbehaves at the HTTP layer, the in-process skills server
//! [`fake_skills`], which lies about its skills on demand, the in-process fake OAuth authorization
//! server and protected MCP endpoint [`fake_auth`], the accept loop they share ([`serve`]), the
//! fake host `mcp-fake-host`, the `serve_stdio` server `mcp-serve-stdio`, and helpers to find
//! those binaries and to watch process groups.
//! Never a dependency of a product crate.

// Test support reports on the terminal and fails loudly.
#![allow(clippy::print_stderr, clippy::unwrap_used)]

pub mod fake_auth;
pub mod fake_http;
pub mod fake_skills;
pub mod procs;
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

/// The `serve_stdio` server binary (serves on stdin and stdout until stdin ends).
pub fn serve_stdio_server() -> PathBuf {
    binary("mcp-serve-stdio")
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
///
/// When `MCP_TESTKIT_BIN_DIR` is set, whoever set it has built them there already (`cargo
/// xtask ci` builds every workspace binary before the tests, with the tests' own features, so
/// a second build of the whole tree in a folder of its own would be minutes wasted): they are
/// taken from there, and a missing one fails the test by name.
fn build(caller: &Path) -> PathBuf {
    if let Some(dir) = std::env::var_os("MCP_TESTKIT_BIN_DIR") {
        return PathBuf::from(dir);
    }
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
///
/// Panics if `/proc` cannot be read: an empty list must mean that nothing is left, never
/// that nothing could be seen.
pub fn live_group_members(pgid: i32) -> Vec<i32> {
    pids()
        .into_iter()
        .filter(|pid| matches!(proc_stat(*pid), Some((state, group)) if group == pgid && state != 'Z' && state != 'X'))
        .collect()
}

/// Live processes (zombies excluded) whose environment holds `key=value`: how a test finds
/// what a server it never got to talk to left behind.
///
/// Panics if `/proc` cannot be read, or if this process's own environment cannot be read from
/// it: then no other's could be either, and an empty list would prove nothing.
pub fn live_processes_with_env(key: &str, value: &str) -> Vec<i32> {
    let wanted = format!("{key}={value}");
    if let Err(e) = std::fs::read("/proc/self/environ") {
        panic!(
            "cannot read /proc/self/environ ({e}): no process could be found by its environment"
        );
    }
    pids()
        .into_iter()
        .filter(|pid| is_alive(*pid))
        .filter(|pid| {
            // Another user's process (or one that just ended) cannot be read: it is not ours.
            std::fs::read(format!("/proc/{pid}/environ"))
                .is_ok_and(|env| env.split(|b| *b == 0).any(|var| var == wanted.as_bytes()))
        })
        .collect()
}

/// Watches, on a thread of its own, for live processes whose environment holds `key=value`
/// (see [`live_processes_with_env`]), until [`stop`](Self::stop): how a test shows that the
/// processes it will find gone were there while they ran.
#[derive(Debug)]
pub struct EnvWatch {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: std::thread::JoinHandle<Vec<i32>>,
}

impl EnvWatch {
    /// Starts watching at once.
    pub fn start(key: &str, value: &str) -> Self {
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (key, value) = (key.to_owned(), value.to_owned());
        let flag = std::sync::Arc::clone(&stop);
        let thread = std::thread::spawn(move || {
            let mut seen = std::collections::BTreeSet::new();
            while !flag.load(std::sync::atomic::Ordering::SeqCst) {
                seen.extend(live_processes_with_env(&key, &value));
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
            seen.into_iter().collect()
        });
        Self { stop, thread }
    }

    /// Stops watching; returns every process seen alive meanwhile, in order of id.
    pub fn stop(self) -> Vec<i32> {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
        match self.thread.join() {
            Ok(seen) => seen,
            Err(panic) => std::panic::resume_unwind(panic),
        }
    }
}

/// The ids of every process in `/proc`, in order. Panics if `/proc` cannot be listed, or if
/// the list lacks this very process (`/proc` missing, or not procfs).
fn pids() -> Vec<i32> {
    let entries = match std::fs::read_dir("/proc") {
        Ok(entries) => entries,
        Err(e) => panic!("cannot list /proc ({e}): no process could be found"),
    };
    let mut pids: Vec<i32> = entries
        .map(|e| match e {
            Ok(e) => e,
            Err(e) => panic!("cannot list /proc ({e}): no process could be found"),
        })
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .collect();
    pids.sort_unstable();
    let me = i32::try_from(std::process::id()).unwrap();
    assert!(
        pids.contains(&me),
        "/proc does not list this process ({me}): it is not a readable procfs"
    );
    pids
}

/// Whether a process exists at all, zombie or not: a child that was never reaped still does.
/// Panics if `/proc` cannot be read (see `proc_stat`).
pub fn exists(pid: i32) -> bool {
    proc_stat(pid).is_some()
}

/// Whether a process exists and is not a zombie. Panics if `/proc` cannot be read (see
/// `proc_stat`).
pub fn is_alive(pid: i32) -> bool {
    matches!(proc_stat(pid), Some((state, _)) if state != 'Z' && state != 'X')
}

/// The state letter and process group of a process, from `/proc/<pid>/stat`; `None` when
/// there is no such process.
///
/// Panics when the file cannot be read for another reason than the process being gone, or
/// when this process's own stat cannot be read either: `None` must mean "no such process",
/// never "`/proc` is unreadable".
fn proc_stat(pid: i32) -> Option<(char, i32)> {
    let stat = match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat,
        // A process that ended between the listing and the read: gone.
        Err(e)
            if e.kind() == std::io::ErrorKind::NotFound
                || e.raw_os_error() == Some(nix::errno::Errno::ESRCH as i32) =>
        {
            if let Err(own) = std::fs::read_to_string("/proc/self/stat") {
                panic!("cannot read /proc/self/stat ({own}): no process could be found");
            }
            return None;
        }
        Err(e) => panic!("cannot read /proc/{pid}/stat ({e})"),
    };
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
