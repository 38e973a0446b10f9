//! `mcp-host serve … --http 127.0.0.1:0` as the tests run it: one way to start it, learn its
//! address from its standard error, keep the rest of what it says, and stop it.

use std::io::{BufRead as _, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::Duration;

use super::User;

/// How long a starting gateway may take to say its address: far beyond any honest start, so
/// that one that never says it fails its test instead of hanging the suite.
const START_LIMIT: Duration = Duration::from_secs(60);

/// A serving `mcp-host`; killed when dropped.
pub(crate) struct Serving {
    pub(crate) child: Child,
    /// `host:port`, from its `listening on http://host:port/mcp`.
    pub(crate) addr: String,
    /// What it said on standard error up to that line, with it.
    pub(crate) said: String,
    /// The rest of standard error, read to its end once the process exits (so that it never
    /// blocks on a full pipe).
    rest: Option<JoinHandle<String>>,
}

impl Serving {
    /// `mcp-host serve --gateway FILE --http 127.0.0.1:0` as `user`.
    pub(crate) fn start(user: &User, file: &Path) -> Self {
        Self::start_with(user, file, &[])
    }

    /// [`Serving::start`] with these variables in its environment.
    pub(crate) fn start_with(user: &User, file: &Path, env: &[(&str, &str)]) -> Self {
        let mut command = user.command(&[
            "serve",
            "--gateway",
            file.to_str().unwrap(),
            "--http",
            "127.0.0.1:0",
        ]);
        Self::spawn(command.envs(env.iter().copied()))
    }

    /// Starts `command` (an `mcp-host serve` that listens over HTTP) and waits until it says
    /// where.
    pub(crate) fn spawn(command: &mut Command) -> Self {
        let mut child = command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = BufReader::new(child.stderr.take().unwrap());
        let (tx, rx) = mpsc::channel();
        let reader = std::thread::spawn(move || {
            let mut lines = stderr.lines();
            for line in lines.by_ref() {
                let line = line.unwrap_or_default();
                let address = line.contains("listening on http://");
                if tx.send(line).is_err() || address {
                    break;
                }
            }
            let mut rest = String::new();
            for line in lines {
                rest.push_str(&line.unwrap_or_default());
                rest.push('\n');
            }
            rest
        });
        let mut said = String::new();
        let addr = loop {
            let Ok(line) = rx.recv_timeout(START_LIMIT) else {
                let _ = child.kill();
                let _ = child.wait();
                panic!("no address on standard error: {said:?}");
            };
            said.push_str(&line);
            said.push('\n');
            if let Some((_, rest)) = line.split_once("listening on http://") {
                let url = rest.split_whitespace().next().unwrap_or_default();
                break url.trim_end_matches("/mcp").to_owned();
            }
        };
        Self {
            child,
            addr,
            said,
            rest: Some(reader),
        }
    }

    /// Its MCP endpoint.
    pub(crate) fn url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }

    /// The port it listens on.
    pub(crate) fn port(&self) -> u16 {
        self.addr.rsplit_once(':').unwrap().1.parse().unwrap()
    }

    /// Kills it: everything it wrote on standard error.
    pub(crate) fn stop(mut self) -> String {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let rest = self.rest.take().unwrap().join().unwrap();
        format!("{}{rest}", self.said)
    }
}

impl Drop for Serving {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
