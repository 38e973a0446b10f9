//! Starting a server process from explicit configuration, capturing its stderr, and ending it
//! with its whole process group: close stdin, wait, SIGTERM, wait, SIGKILL, reap.

mod keeper;
mod lines;
#[cfg(test)]
mod tests;

use std::collections::{BTreeSet, VecDeque};
use std::fmt;
use std::io;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_protocol::Secrets;
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::io::AsyncReadExt as _;
use tokio::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command};

use crate::env;
use crate::error::{Error, SpawnPhase};
use crate::running;

pub(crate) use keeper::Keeper;

/// How to start one stdio server. Nothing here comes from the server: it is the user's
/// configuration, and the server runs with the user's rights, unsandboxed.
#[derive(Clone)]
#[non_exhaustive]
pub struct StdioConfig {
    /// The server's name, used in every error and diagnostic.
    pub name: String,
    /// The program: a path, or a name looked up on `PATH`.
    pub command: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Its working directory; the host's when `None`.
    pub cwd: Option<PathBuf>,
    /// Variables set for it. Values may be secrets: they are never logged, and they are
    /// redacted from the stderr text shown in errors.
    pub env: Vec<(String, String)>,
    /// Pass the host's whole environment instead of the allow-list in [`crate::env`](mod@crate::env).
    /// The values of what passes beyond the allow-list (a host's tokens and keys among them)
    /// are redacted from the stderr text shown in errors, as configured values are.
    pub inherit_env: bool,
    /// The longest line accepted on stdout; a longer one is discarded and reported.
    pub max_line_bytes: usize,
    /// How much of stderr is kept for diagnostics (the most recent bytes).
    pub stderr_capacity: usize,
    /// How long to wait for the server to exit after its stdin is closed.
    pub close_timeout: Duration,
    /// How long to wait after SIGTERM before SIGKILL.
    pub term_timeout: Duration,
}

impl StdioConfig {
    /// A server started by `command` with `args`; limits and timeouts at their defaults
    /// (8 MiB lines, 64 KiB of stderr, 2 s after closing stdin, 2 s after SIGTERM).
    pub fn new(
        name: impl Into<String>,
        command: impl Into<String>,
        args: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        Self {
            name: name.into(),
            command: command.into(),
            args: args.into_iter().map(Into::into).collect(),
            cwd: None,
            env: Vec::new(),
            inherit_env: false,
            max_line_bytes: 8 << 20,
            stderr_capacity: 64 << 10,
            close_timeout: Duration::from_secs(2),
            term_timeout: Duration::from_secs(2),
        }
    }
}

impl fmt::Debug for StdioConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let env: Vec<String> = self
            .env
            .iter()
            .map(|(k, _)| format!("{k}=[redacted]"))
            .collect();
        f.debug_struct("StdioConfig")
            .field("name", &self.name)
            .field("command", &self.command)
            .field("args", &self.args)
            .field("cwd", &self.cwd)
            .field("env", &env)
            .field("inherit_env", &self.inherit_env)
            .field("max_line_bytes", &self.max_line_bytes)
            .finish_non_exhaustive()
    }
}

/// Process groups this process started and has not yet seen end: what
/// [`kill_all_servers`] kills.
static GROUPS: Mutex<BTreeSet<i32>> = Mutex::new(BTreeSet::new());

fn groups() -> std::sync::MutexGuard<'static, BTreeSet<i32>> {
    GROUPS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Sends SIGKILL to the process group of every server this process started and has not yet
/// shut down. For a host that is about to exit on a signal: no server or grandchild outlives
/// it.
pub fn kill_all_servers() {
    let all: Vec<i32> = groups().iter().copied().collect();
    for pgid in all {
        let _ = killpg(Pid::from_raw(pgid), Signal::SIGKILL);
    }
}

/// Starts listening for SIGTERM, SIGINT and SIGHUP at once, and returns a future that waits
/// for the first of them, kills every server group (see [`kill_all_servers`]), and yields the
/// signal's number so that the caller can exit with `128 + n`.
///
/// The handlers are installed when this function returns, not when the future is first
/// polled: call it before announcing that the host is running.
pub fn termination_signal() -> io::Result<impl Future<Output = i32> + Send> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    let mut hup = signal(SignalKind::hangup())?;
    Ok(async move {
        let n = tokio::select! {
            _ = term.recv() => Signal::SIGTERM as i32,
            _ = int.recv() => Signal::SIGINT as i32,
            _ = hup.recv() => Signal::SIGHUP as i32,
        };
        kill_all_servers();
        n
    })
}

/// The most recent bytes a server wrote to stderr.
///
/// No `Debug`: it holds the secrets it redacts, and the raw bytes they may be in.
pub(crate) struct StderrLog {
    ring: Mutex<Ring>,
    capacity: usize,
    secrets: Secrets,
    /// Becomes `true` when stderr reached its end (every process holding it exited).
    drained: tokio::sync::watch::Sender<bool>,
}

/// What the log keeps.
struct Ring {
    bytes: VecDeque<u8>,
    /// The last byte dropped to stay within the capacity; `None` while none has been.
    dropped: Option<u8>,
}

impl StderrLog {
    fn new(capacity: usize, secrets: Secrets) -> Self {
        Self {
            ring: Mutex::new(Ring {
                bytes: VecDeque::with_capacity(capacity.min(64 << 10)),
                dropped: None,
            }),
            capacity,
            secrets,
            drained: tokio::sync::watch::Sender::new(false),
        }
    }

    /// Resolves once stderr has been read to its end: a server's last words are in the log.
    pub(crate) async fn drained(&self) {
        let mut rx = self.drained.subscribe();
        let _ = rx.wait_for(|done| *done).await;
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Ring> {
        self.ring
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn append(&self, chunk: &[u8]) {
        let mut ring = self.lock();
        let cut = chunk.len().saturating_sub(self.capacity);
        let (dropped, chunk) = chunk.split_at(cut);
        let overflow = (ring.bytes.len() + chunk.len()).saturating_sub(self.capacity);
        if let Some(&last) = dropped.last() {
            ring.dropped = Some(last);
        } else if let Some(&last) = overflow.checked_sub(1).and_then(|i| ring.bytes.get(i)) {
            ring.dropped = Some(last);
        }
        ring.bytes.drain(..overflow);
        ring.bytes.extend(chunk);
    }

    /// The kept text, lossily decoded, with no part of a secret in it, wherever the ring cut
    /// it: see [`Secrets::redact_stream`].
    pub(crate) fn text(&self) -> String {
        // A copy, redacted with the lock released: the task draining stderr never waits for
        // a redaction.
        let (kept, dropped) = {
            let ring = self.lock();
            let (a, b) = ring.bytes.as_slices();
            ([a, b].concat(), ring.dropped)
        };
        self.secrets.redact_stream(&kept, dropped)
    }

    /// The last `lines` non-empty lines, for an error message.
    pub(crate) fn tail(&self, lines: usize) -> String {
        let text = self.text();
        let kept: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
        kept[kept.len().saturating_sub(lines)..].join(" | ")
    }
}

/// A started server: its pipes, its group, and its stderr log.
pub(crate) struct Spawned {
    pub(crate) child: Child,
    pub(crate) pgid: i32,
    /// What keeps the group from outliving this process: see [`Guard`].
    pub(crate) guard: Guard,
    pub(crate) stdin: ChildStdin,
    pub(crate) stdout: ChildStdout,
    pub(crate) stderr: Arc<StderrLog>,
}

/// What ties a server's group to this process, held by whoever owns the server process until
/// it has been shut down: the keeper leading the group (see `keeper.rs`), and the record that
/// `mcp-host ps` reads (see [`running`]).
pub(crate) struct Guard {
    keeper: Option<Keeper>,
    _record: Option<running::Entry>,
}

impl Guard {
    /// The keeper's pid, when there is one: it is not one of the server's processes, and it
    /// outlives them by design.
    pub(crate) fn keeper_pid(&self) -> Option<i32> {
        self.keeper.as_ref().map(Keeper::pid)
    }

    /// Once the group has been shut down: ends the keeper and removes the record.
    pub(crate) async fn end(self) {
        if let Some(keeper) = self.keeper {
            keeper.end().await;
        }
    }
}

/// Starts the server in a process group of its own, led by a keeper, with the filtered
/// environment.
///
/// Without `/bin/sh` there is no keeper: the server leads its own group, as it did before
/// keepers, and only a host that ends on its own terms (or on a signal it catches) ends it.
pub(crate) fn spawn(config: &StdioConfig) -> Result<Spawned, Error> {
    let fail = |phase, detail: Option<String>| Error::Spawn {
        server: config.name.clone(),
        phase,
        command: config.command.clone(),
        detail,
    };
    if let Some(cwd) = &config.cwd
        && !cwd.is_dir()
    {
        return Err(fail(
            SpawnPhase::Cwd,
            Some(format!("{} is not a directory", cwd.display())),
        ));
    }
    let env = env::build(std::env::vars(), &config.env, config.inherit_env);
    let mut command = Command::new(&config.command);
    command
        .args(&config.args)
        .env_clear()
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(false);
    if let Some(cwd) = &config.cwd {
        command.current_dir(cwd);
    }
    // A keeper that cannot start leaves the server leading its own group. Dropped with an
    // error below, it kills its group, nobody but itself.
    let keeper = Keeper::start().ok();
    command.process_group(keeper.as_ref().map_or(0, Keeper::pid));
    let mut child = command.spawn().map_err(|e| {
        let phase = match e.kind() {
            io::ErrorKind::NotFound => SpawnPhase::NotFound,
            io::ErrorKind::PermissionDenied => SpawnPhase::NotExecutable,
            _ => SpawnPhase::Exec,
        };
        // The OS message names no environment value; it is safe to show.
        fail(phase, Some(e.to_string()))
    })?;
    let pid = child
        .id()
        .and_then(|id| i32::try_from(id).ok())
        .ok_or_else(|| {
            fail(
                SpawnPhase::Exec,
                Some("the process ended before it could be tracked".to_owned()),
            )
        })?;
    let pgid = keeper.as_ref().map_or(pid, Keeper::pid);
    groups().insert(pgid);
    let guard = Guard {
        _record: running::record(&config.name, pid, pgid),
        keeper,
    };
    let (Some(stdin), Some(stdout), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        let _ = killpg(Pid::from_raw(pgid), Signal::SIGKILL);
        return Err(fail(
            SpawnPhase::Exec,
            Some("pipes were not created".to_owned()),
        ));
    };
    let secrets = env::secrets(&config.env, &env);
    let lines = lines::Lines::new(secrets.clone());
    let log = Arc::new(StderrLog::new(config.stderr_capacity, secrets));
    tokio::spawn(drain_stderr(
        stderr,
        Arc::clone(&log),
        config.name.clone(),
        lines,
    ));
    Ok(Spawned {
        child,
        pgid,
        guard,
        stdin,
        stdout,
        stderr: log,
    })
}

/// Always drain stderr, so that a chatty server never blocks on a full pipe: into the tail
/// kept for errors, and line by line into the log (see `lines`).
async fn drain_stderr(
    mut stderr: ChildStderr,
    log: Arc<StderrLog>,
    server: String,
    mut lines: lines::Lines,
) {
    let mut buf = vec![0u8; 8192];
    while let Ok(n) = stderr.read(&mut buf).await {
        if n == 0 {
            break;
        }
        log.append(&buf[..n]);
        lines::log(&server, lines.feed(&buf[..n], std::time::Instant::now()));
    }
    lines::log(&server, lines.finish(std::time::Instant::now()));
    log.drained.send_replace(true);
}

/// Whether any process of the group but `keeper` is still running. Zombies do not count: a
/// grandchild reparented to an init that is slow to reap (or, in a container, never reaps) is
/// dead.
fn group_alive(pgid: i32, keeper: Option<i32>) -> bool {
    if killpg(Pid::from_raw(pgid), None).is_err() {
        return false;
    }
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return true;
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .any(|pid| {
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                return false;
            };
            // Fields after the parenthesised command: state, ppid, pgrp.
            let Some(rest) = stat.rfind(')').and_then(|i| stat.get(i + 2..)) else {
                return false;
            };
            let mut fields = rest.split(' ');
            let state = fields.next().unwrap_or("Z");
            let pgrp = fields.nth(1).and_then(|g| g.parse::<i32>().ok());
            pgrp == Some(pgid) && state != "Z" && state != "X" && Some(pid) != keeper
        })
}

/// SIGKILL to the group, at once: for `Drop`, where nothing can be awaited. Only while the
/// group is one of [`GROUPS`]: once it was seen to end (a `close`, a crash, a failed
/// handshake) its id may be another group's.
pub(crate) fn kill_group_now(pgid: i32) {
    let groups = groups();
    if groups.contains(&pgid) {
        let _ = killpg(Pid::from_raw(pgid), Signal::SIGKILL);
    }
}

/// Ends the server and everything it started, politely first. Call after its stdin has been
/// closed. Returns how the leader ended.
pub(crate) async fn shutdown(
    child: &mut Child,
    pgid: i32,
    keeper: Option<i32>,
    close_timeout: Duration,
    term_timeout: Duration,
) -> String {
    let status = match tokio::time::timeout(close_timeout, child.wait()).await {
        Ok(status) => status,
        Err(_) => {
            let _ = killpg(Pid::from_raw(pgid), Signal::SIGTERM);
            match tokio::time::timeout(term_timeout, child.wait()).await {
                Ok(status) => status,
                Err(_) => {
                    let _ = killpg(Pid::from_raw(pgid), Signal::SIGKILL);
                    child.wait().await
                }
            }
        }
    };
    sweep_group(pgid, keeper, term_timeout).await;
    describe(status)
}

/// After the leader has ended: ends whatever is left of its group (an `npx` launcher's child,
/// a grandchild that ignored the hang-up), then forgets the group. The group's `keeper` is
/// left running: it ignores SIGTERM, and [`Guard::end`] ends it.
pub(crate) async fn sweep_group(pgid: i32, keeper: Option<i32>, term_timeout: Duration) {
    let group_alive = |pgid| group_alive(pgid, keeper);
    if group_alive(pgid) {
        let _ = killpg(Pid::from_raw(pgid), Signal::SIGTERM);
        let deadline = tokio::time::Instant::now() + term_timeout;
        while group_alive(pgid) && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        if group_alive(pgid) {
            let _ = killpg(Pid::from_raw(pgid), Signal::SIGKILL);
            let deadline = tokio::time::Instant::now() + Duration::from_secs(1);
            while group_alive(pgid) && tokio::time::Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
    }
    groups().remove(&pgid);
}

pub(crate) fn describe(status: io::Result<std::process::ExitStatus>) -> String {
    match status {
        Ok(s) => s.to_string(),
        Err(e) => format!("exit status unknown: {e}"),
    }
}
