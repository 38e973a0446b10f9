//! Records: their text, the private directory, and pid reuse.

use std::os::unix::fs::PermissionsExt as _;
use std::os::unix::process::CommandExt as _;

use super::*;

/// A scratch directory, mode 0700, removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new(what: &str) -> Self {
        let dir =
            std::env::temp_dir().join(format!("mcp-stdio-running-{}-{what}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::DirBuilder::new().mode(0o700).create(&dir).unwrap();
        Self(dir)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// `sleep 30` leading a group of its own, as a keeper would.
fn leader() -> std::process::Child {
    std::process::Command::new("sleep")
        .arg("30")
        .process_group(0)
        .spawn()
        .unwrap()
}

/// A pid whose process is gone: a child that ended (and was reaped).
fn gone_pid() -> i32 {
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let pid = i32::try_from(child.id()).unwrap();
    child.wait().unwrap();
    pid
}

fn write(dir: &Path, record: &Record) {
    fs::write(
        dir.join(format!("{}-{}{SUFFIX}", record.host, record.pgid)),
        record.to_text(),
    )
    .unwrap();
}

#[test]
fn a_record_reads_back_as_written() {
    let record = Record {
        server: "a server = odd".to_owned(),
        pid: 12,
        pgid: 11,
        host: 10,
        host_start: 1234,
        group_start: 1240,
        started: 1_700_000_000,
    };
    assert_eq!(Record::parse(&record.to_text()), Some(record));
    assert_eq!(Record::parse("pid=1\npgid=2\n"), None);
}

#[test]
fn a_directory_open_to_others_or_a_link_is_refused() {
    let scratch = Scratch::new("private");
    check_private(&scratch.0).unwrap();
    fs::set_permissions(&scratch.0, fs::Permissions::from_mode(0o755)).unwrap();
    let e = check_private(&scratch.0).unwrap_err();
    assert!(e.to_string().contains("open to others"), "{e}");
    fs::set_permissions(&scratch.0, fs::Permissions::from_mode(0o700)).unwrap();
    let link = scratch.0.join("link");
    std::os::unix::fs::symlink(&scratch.0, &link).unwrap();
    let e = check_private(&link).unwrap_err();
    assert!(e.to_string().contains("not a directory"), "{e}");
}

/// A group whose host is gone is an orphan, listed and then killed; the same pids recorded
/// with another start time (the pid reused since) are neither listed nor signalled.
#[test]
fn orphans_are_found_and_killed_and_a_reused_pid_is_left_alone() {
    let scratch = Scratch::new("orphans");
    let mut leader = leader();
    let pgid = i32::try_from(leader.id()).unwrap();
    let start = start_time(pgid).unwrap();
    let host = gone_pid();
    let mut record = Record {
        server: "srv".to_owned(),
        pid: pgid,
        pgid,
        host,
        host_start: 1,
        group_start: start + 1,
        started: now_secs(),
    };

    // Recorded with another start time: another process had the pid.
    write(&scratch.0, &record);
    assert!(list_in(&scratch.0).unwrap().is_empty());
    assert!(kill_orphans_in(&scratch.0).unwrap().is_empty());
    assert!(
        leader.try_wait().unwrap().is_none(),
        "a stranger was killed"
    );
    // Gone with no process of its own and no host: the record was removed.
    assert_eq!(fs::read_dir(&scratch.0).unwrap().count(), 0);

    record.group_start = start;
    write(&scratch.0, &record);
    let listed = list_in(&scratch.0).unwrap();
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(
        (listed[0].pid, listed[0].pgid, listed[0].host_pid),
        (pgid, pgid, host)
    );
    assert!(!listed[0].host_alive);
    assert_eq!(listed[0].server, "srv");
    let killed = kill_orphans_in(&scratch.0).unwrap();
    assert_eq!(killed.len(), 1, "{killed:?}");
    let status = leader.wait().unwrap();
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&status),
        Some(9)
    );
    assert_eq!(fs::read_dir(&scratch.0).unwrap().count(), 0);
}

/// A group whose host is alive is listed as such, and `kill_orphans` leaves it alone.
#[test]
fn a_group_whose_host_lives_is_not_an_orphan() {
    let scratch = Scratch::new("alive");
    let mut leader = leader();
    let pgid = i32::try_from(leader.id()).unwrap();
    let me = i32::try_from(std::process::id()).unwrap();
    write(
        &scratch.0,
        &Record {
            server: "srv".to_owned(),
            pid: pgid,
            pgid,
            host: me,
            host_start: start_time(me).unwrap(),
            group_start: start_time(pgid).unwrap(),
            started: now_secs(),
        },
    );
    let listed = list_in(&scratch.0).unwrap();
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert!(listed[0].host_alive);
    assert_eq!(listed[0].role, Role::Keeper);
    assert!(kill_orphans_in(&scratch.0).unwrap().is_empty());
    assert!(leader.try_wait().unwrap().is_none());
    leader.kill().unwrap();
    leader.wait().unwrap();
}
