//! Commands that may not hang CI: each runs in a process group of its own under a time limit,
//! and a run past the limit kills the whole group and fails, naming what hung. A peer that
//! stops answering (the conformance suite, an SDK's client or server, our own binaries
//! against them) must fail the gate, not stall it until the CI runner gives up.

use std::io::Read as _;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};

/// The time limit of one interop step: each takes seconds; a minute or more means a hang.
pub(crate) const PEER_STEP: Duration = Duration::from_secs(180);

/// Runs `cmd` with inherited output, failing if it exits unsuccessfully or outlives `limit`.
pub(crate) fn run(cmd: impl Into<Command>, what: &str, limit: Duration) -> anyhow::Result<()> {
    let mut command = cmd.into();
    let child = spawn(&mut command, what)?;
    check(wait(child, limit)?, what, limit)
}

/// Runs `cmd` and returns its standard output, failing as [`run`] does.
pub(crate) fn read(cmd: impl Into<Command>, what: &str, limit: Duration) -> anyhow::Result<String> {
    let mut command = cmd.into();
    command.stdout(Stdio::piped());
    let mut child = spawn(&mut command, what)?;
    let mut stdout = child.stdout.take().context("stdout was piped")?;
    // A reader of its own, so that a child that fills the pipe cannot block its own end. On a
    // time-out the thread is left to end when the killed group's pipe closes.
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        stdout.read_to_string(&mut text).map(|_| text)
    });
    check(wait(child, limit)?, what, limit)?;
    reader
        .join()
        .map_err(|_| anyhow::anyhow!("the reader of {what}'s output panicked"))?
        .with_context(|| format!("reading the output of {what}"))
}

/// Waits for `child` at most `limit`; past it, kills the child's process group and returns
/// `None`.
pub(crate) fn wait(mut child: Child, limit: Duration) -> anyhow::Result<Option<ExitStatus>> {
    let end = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(Some(status));
        }
        if Instant::now() >= end {
            let _ = Command::new("kill")
                .args(["-KILL", "--", &format!("-{}", child.id())])
                .status();
            let _ = child.kill();
            let _ = child.wait();
            return Ok(None);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Starts `command` as the leader of a new process group, so that a time-out ends whatever it
/// started too. Its stdin is empty: a group outside the terminal's foreground would be stopped
/// by a read of the terminal.
pub(crate) fn spawn(command: &mut Command, what: &str) -> anyhow::Result<Child> {
    std::os::unix::process::CommandExt::process_group(command, 0);
    command.stdin(Stdio::null());
    command.spawn().with_context(|| format!("starting {what}"))
}

fn check(status: Option<ExitStatus>, what: &str, limit: Duration) -> anyhow::Result<()> {
    match status {
        Some(s) if s.success() => Ok(()),
        Some(s) => bail!("{what} failed: {s}"),
        None => bail!(
            "{what} did not finish within {} s and was killed (a hung peer?)",
            limit.as_secs()
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hang_is_killed_with_its_group_and_fails_naming_the_step() {
        let dir = std::env::temp_dir().join(format!("xtask-bounded-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let pid_file = dir.join("grandchild.pid");
        let mut hang = Command::new("sh");
        hang.arg("-c").arg(format!(
            "sleep 600 & echo $! > {}; wait",
            pid_file.display()
        ));
        let err = run(hang, "the sleeper", Duration::from_millis(500))
            .unwrap_err()
            .to_string();
        assert!(err.contains("the sleeper did not finish within"), "{err}");
        // The grandchild was started (presence), and the group kill ended it (absence).
        let pid = std::fs::read_to_string(&pid_file).unwrap();
        let proc_dir = std::path::PathBuf::from(format!("/proc/{}", pid.trim()));
        let gone = (0..100).any(|_| {
            let alive = std::fs::read_to_string(proc_dir.join("stat"))
                .is_ok_and(|stat| !stat.contains(") Z "));
            if alive {
                std::thread::sleep(Duration::from_millis(50));
            }
            !alive
        });
        assert!(gone, "the grandchild {} outlived the time-out", pid.trim());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn output_and_exit_status_come_through() {
        let mut ok = Command::new("sh");
        ok.args(["-c", "echo hello"]);
        assert_eq!(read(ok, "echo", PEER_STEP).unwrap(), "hello\n");
        let mut bad = Command::new("sh");
        bad.args(["-c", "exit 3"]);
        let err = run(bad, "exit", PEER_STEP).unwrap_err().to_string();
        assert!(err.contains("exit failed"), "{err}");
    }
}
