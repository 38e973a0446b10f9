//! The servers running on this machine for this user, whichever host started them: every
//! [`spawn`](crate::spawn) leaves a small record in a private directory while its server
//! runs, so that `mcp-host ps` can list the processes, say whether the host that started them
//! is still alive, and end those whose host is gone ([`kill_orphans`]).
//!
//! The directory is `$XDG_RUNTIME_DIR/mcp-host/`, or, without that variable,
//! `mcp-host-<uid>` in the temporary directory. It is created with mode 0700, and refused if
//! it is a symbolic link, belongs to another user, or is open to others: another user must
//! not be able to plant a record that makes `--kill-orphans` kill their choice of process.
//!
//! A record names pids, and a pid is reused once its process is gone: each record keeps the
//! start time (from `/proc/<pid>/stat`) of the host and of the group's leader, and a process
//! whose start time differs is not the one recorded. Listing needs `/proc` (Linux).
//!
//! Recording is best effort: a server whose record cannot be written still starts.

#[cfg(test)]
mod tests;

use std::fmt;
use std::fs;
use std::io::{self, Write as _};
use std::os::unix::fs::{DirBuilderExt as _, MetadataExt as _, OpenOptionsExt as _};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

/// The suffix of a record's file name.
const SUFFIX: &str = ".server";

/// What a live server process is to its server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Role {
    /// The keeper that leads the group and kills it when its host is gone.
    Keeper,
    /// The server's own process, the one the host talks to.
    Server,
    /// A process the server started that stayed in its group (an `npx` launcher's child).
    Descendant,
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Keeper => "keeper",
            Self::Server => "server",
            Self::Descendant => "descendant",
        })
    }
}

/// One live process of a server started by some host of this user.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ServerProcess {
    /// The server's name in its host's configuration.
    pub server: String,
    /// The process.
    pub pid: i32,
    /// Its process group: the server's group, led by its keeper.
    pub pgid: i32,
    /// What it is to the server.
    pub role: Role,
    /// The process of the host that started the server.
    pub host_pid: i32,
    /// Whether that host is still running; `false` makes the process an orphan.
    pub host_alive: bool,
    /// How long ago the server was started.
    pub age: Duration,
}

/// The directory that holds the records, created if needed: see the module doc.
///
/// Fails if it cannot be created, or is a symbolic link, belongs to another user or is open
/// to others.
pub fn directory() -> io::Result<PathBuf> {
    let dir = match std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from) {
        Some(base) if base.is_absolute() => base.join("mcp-host"),
        _ => std::env::temp_dir().join(format!("mcp-host-{}", nix::unistd::getuid())),
    };
    match fs::DirBuilder::new().mode(0o700).create(&dir) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    check_private(&dir)?;
    Ok(dir)
}

/// Refuses a directory that another user could write to or that is not ours.
fn check_private(dir: &Path) -> io::Result<()> {
    let meta = fs::symlink_metadata(dir)?;
    let refuse = |why: &str| {
        Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!("{} {why}", dir.display()),
        ))
    };
    if !meta.file_type().is_dir() {
        return refuse("is not a directory");
    }
    if meta.uid() != nix::unistd::getuid().as_raw() {
        return refuse("belongs to another user");
    }
    if meta.mode() & 0o077 != 0 {
        return refuse(&format!(
            "is open to others (mode {:o}, 700 wanted)",
            meta.mode() & 0o777
        ));
    }
    Ok(())
}

/// A record written for a running server; removed when dropped.
pub(crate) struct Entry {
    path: PathBuf,
}

impl Drop for Entry {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.path);
    }
}

/// Records a server just started (its process `pid`, its group `pgid`); `None` when it
/// cannot be recorded.
pub(crate) fn record(server: &str, pid: i32, pgid: i32) -> Option<Entry> {
    let dir = directory().ok()?;
    let host = i32::try_from(std::process::id()).ok()?;
    let text = Record {
        server: server
            .chars()
            .map(|c| if c.is_control() { '?' } else { c })
            .collect(),
        pid,
        pgid,
        host,
        host_start: start_time(host)?,
        group_start: start_time(pgid)?,
        started: SystemTime::now().duration_since(UNIX_EPOCH).ok()?.as_secs(),
    }
    .to_text();
    let name = format!("{host}-{pgid}{SUFFIX}");
    let path = dir.join(&name);
    let partial = dir.join(format!(".{name}.partial"));
    let mut file = fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&partial)
        .ok()?;
    if file.write_all(text.as_bytes()).is_err() || fs::rename(&partial, &path).is_err() {
        let _ = fs::remove_file(&partial);
        return None;
    }
    Some(Entry { path })
}

/// What a record says.
#[derive(Debug, PartialEq, Eq)]
struct Record {
    server: String,
    pid: i32,
    pgid: i32,
    host: i32,
    /// Start times, in clock ticks since boot (`/proc/<pid>/stat`, field 22).
    host_start: u64,
    group_start: u64,
    /// When the server was started, in seconds since the Unix epoch.
    started: u64,
}

impl Record {
    fn to_text(&self) -> String {
        format!(
            "pid={}\npgid={}\nhost={}\nhost_start={}\ngroup_start={}\nstarted={}\nserver={}\n",
            self.pid,
            self.pgid,
            self.host,
            self.host_start,
            self.group_start,
            self.started,
            self.server
        )
    }

    /// `None` for anything that is not a whole record.
    fn parse(text: &str) -> Option<Self> {
        let get = |key: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(key)?.strip_prefix('='))
                .map(str::to_owned)
        };
        Some(Self {
            pid: get("pid")?.parse().ok()?,
            pgid: get("pgid")?.parse().ok()?,
            host: get("host")?.parse().ok()?,
            host_start: get("host_start")?.parse().ok()?,
            group_start: get("group_start")?.parse().ok()?,
            started: get("started")?.parse().ok()?,
            server: get("server")?,
        })
    }
}

/// What `/proc/<pid>/stat` tells of one process.
#[derive(Clone, Copy, Debug)]
struct Stat {
    pid: i32,
    alive: bool,
    pgrp: i32,
    start: u64,
}

/// Reads `/proc/<pid>/stat`; `None` when there is no such process.
fn stat(pid: i32) -> Option<Stat> {
    let text = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name is in parentheses and may hold anything: split after the last `)`.
    let rest = text.get(text.rfind(')')? + 2..)?;
    let fields: Vec<&str> = rest.split(' ').collect();
    // Field 3 (state) is at index 0.
    let state = *fields.first()?;
    Some(Stat {
        pid,
        alive: state != "Z" && state != "X",
        pgrp: fields.get(2)?.parse().ok()?,
        start: fields.get(19)?.parse().ok()?,
    })
}

fn start_time(pid: i32) -> Option<u64> {
    stat(pid).map(|s| s.start)
}

/// Whether `pid` is alive and is the process that started at `start`.
fn is_same_alive(pid: i32, start: u64) -> bool {
    stat(pid).is_some_and(|s| s.alive && s.start == start)
}

/// Every process in `/proc`.
fn all_processes() -> io::Result<Vec<Stat>> {
    Ok(fs::read_dir("/proc")?
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(stat)
        .collect())
}

/// The live members of a recorded group. A group's id is its leader's pid: if a process
/// holds that pid but started at another time, the group is another's and none are returned;
/// a member that started before the group did cannot be one of its processes either.
fn members(record: &Record, all: &[Stat]) -> Vec<Stat> {
    if all
        .iter()
        .any(|s| s.pid == record.pgid && s.start != record.group_start)
    {
        return Vec::new();
    }
    all.iter()
        .filter(|s| s.alive && s.pgrp == record.pgid && s.start >= record.group_start)
        .copied()
        .collect()
}

/// The records in the directory, each with its path.
fn records(dir: &Path) -> io::Result<Vec<(PathBuf, Record)>> {
    let mut found = Vec::new();
    for entry in fs::read_dir(dir)? {
        let path = entry?.path();
        if !path.to_str().is_some_and(|p| p.ends_with(SUFFIX)) {
            continue;
        }
        // A record written by someone else than this user is not read (the directory is
        // private, so this is a second line of defence).
        let Ok(meta) = fs::symlink_metadata(&path) else {
            continue;
        };
        if !meta.file_type().is_file() || meta.uid() != nix::unistd::getuid().as_raw() {
            continue;
        }
        let Some(record) = fs::read_to_string(&path)
            .ok()
            .as_deref()
            .and_then(Record::parse)
        else {
            continue;
        };
        found.push((path, record));
    }
    Ok(found)
}

/// The live processes of one record.
fn rows(record: &Record, all: &[Stat], now: u64) -> Vec<ServerProcess> {
    let host_alive = is_same_alive(record.host, record.host_start);
    members(record, all)
        .into_iter()
        .map(|s| ServerProcess {
            server: record.server.clone(),
            pid: s.pid,
            pgid: record.pgid,
            role: if s.pid == record.pgid {
                Role::Keeper
            } else if s.pid == record.pid {
                Role::Server
            } else {
                Role::Descendant
            },
            host_pid: record.host,
            host_alive,
            age: Duration::from_secs(now.saturating_sub(record.started)),
        })
        .collect()
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Lists the live processes of every server started by a host of this user, in the order of
/// their records (host, then group) and pids. Records of servers that are gone, whose host
/// is gone too, are removed on the way.
pub fn list() -> io::Result<Vec<ServerProcess>> {
    list_in(&directory()?)
}

fn list_in(dir: &Path) -> io::Result<Vec<ServerProcess>> {
    let all = all_processes()?;
    let now = now_secs();
    let mut records = records(dir)?;
    records.sort_by_key(|(_, r)| (r.host, r.pgid));
    let mut out = Vec::new();
    for (path, record) in records {
        let rows = rows(&record, &all, now);
        if rows.is_empty() && !is_same_alive(record.host, record.host_start) {
            let _ = fs::remove_file(&path);
        }
        out.extend(rows);
    }
    out.sort_by_key(|p| (p.host_pid, p.pgid, p.pid));
    Ok(out)
}

/// Ends (SIGKILL to the group) every server whose host is gone, and returns the processes it
/// had. Each group is checked again just before it is signalled, by its leader's start time.
pub fn kill_orphans() -> io::Result<Vec<ServerProcess>> {
    kill_orphans_in(&directory()?)
}

fn kill_orphans_in(dir: &Path) -> io::Result<Vec<ServerProcess>> {
    let now = now_secs();
    let mut killed = Vec::new();
    for (path, record) in records(dir)? {
        let all = all_processes()?;
        let rows = rows(&record, &all, now);
        if rows.is_empty() || rows.iter().any(|r| r.host_alive) {
            continue;
        }
        // Signalled only while the recorded leader, or no process at all, holds its pid.
        if stat(record.pgid).is_some_and(|s| s.start != record.group_start) {
            continue;
        }
        let _ = killpg(Pid::from_raw(record.pgid), Signal::SIGKILL);
        let deadline = std::time::Instant::now() + Duration::from_secs(2);
        while std::time::Instant::now() < deadline
            && all_processes().is_ok_and(|all| !members(&record, &all).is_empty())
        {
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = fs::remove_file(&path);
        killed.extend(rows);
    }
    killed.sort_by_key(|p| (p.host_pid, p.pgid, p.pid));
    Ok(killed)
}
