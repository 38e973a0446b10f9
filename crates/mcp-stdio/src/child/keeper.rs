//! The keeper: a tiny process that leads each server's process group and kills the whole
//! group the moment its pipe from the host reaches its end, which happens however the host
//! ends (an exit, a signal, SIGKILL, a crash, the OOM killer): the kernel closes a dead
//! process's descriptors. See `docs/architecture.md` (mcp-stdio) for why this mechanism.
//!
//! It is `/bin/sh` running a one-line script, so that a library consumer gets it with no
//! binary to ship and no unsafe code:
//!
//! - `trap '' HUP INT TERM`: the polite SIGTERM that `close` sends to the group does not end
//!   it, so the guarantee holds while a server is being shut down;
//! - `read -r line`: blocks until the host's end of the pipe is closed (the host never writes);
//! - `kill -9 0`: SIGKILL to every process of its group, itself, the server and every
//!   grandchild that stayed in the group.

use std::io;
use std::process::Stdio;

use tokio::process::{Child, ChildStdin, Command};

/// The shell that runs the keeper: POSIX puts one here on every Unix.
const SHELL: &str = "/bin/sh";

/// The keeper's script (see the module doc).
const SCRIPT: &str = "trap '' HUP INT TERM; read -r line; kill -9 0";

/// A running keeper: the leader of a server's process group.
///
/// Dropping it closes the pipe, and the keeper kills its group; the process itself is then
/// reaped by tokio in the background.
pub(crate) struct Keeper {
    child: Child,
    /// Our end of its stdin. Closed, it is the keeper's order to kill the group.
    lifeline: Option<ChildStdin>,
    pid: i32,
}

impl Keeper {
    /// Starts a keeper in a new process group of its own (its pid is the group's id).
    pub(crate) fn start() -> io::Result<Self> {
        let mut command = Command::new(SHELL);
        command
            .args(["-c", SCRIPT, "mcp-host-keeper"])
            .env_clear()
            .current_dir("/")
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .kill_on_drop(false);
        let mut child = command.spawn()?;
        let pid = child
            .id()
            .and_then(|id| i32::try_from(id).ok())
            .ok_or_else(|| io::Error::other("the keeper ended at once"))?;
        let lifeline = child.stdin.take();
        Ok(Self {
            child,
            lifeline,
            pid,
        })
    }

    /// Its pid, which is the id of the group it leads.
    pub(crate) fn pid(&self) -> i32 {
        self.pid
    }

    /// Ends it once its group has been shut down: closes the pipe (it kills what may be left
    /// of the group, itself included), and reaps it.
    pub(crate) async fn end(mut self) {
        self.lifeline = None;
        let _ = self.child.start_kill();
        let _ = self.child.wait().await;
    }
}
