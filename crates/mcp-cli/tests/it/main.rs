//! The built `mcp-host` binary, run as a user runs it: in a temporary HOME and project
//! directory, against the bundled demo server (stdio and HTTP), the testkit's fake
//! authorization server, and a real pseudo-terminal for the shell.

#![allow(clippy::unwrap_used)]

mod auth;
mod browser;
mod budget;
mod call_exit;
mod commands;
mod completions;
mod device;
mod exit_codes;
mod gateway_login;
mod gateway_promises;
mod import;
mod import_inputs;
mod inbound_auth;
mod install;
mod keyring;
mod live;
mod login_page;
mod logs;
mod manage;
mod model_apis;
mod operations;
mod orphans;
mod secrets;
mod serve;
mod serve_live;
mod served;
mod shell;
mod skills;
mod tasks;
mod trust;
mod url_secret;
mod version;

use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

/// The binary under test.
pub(crate) fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_mcp-host")
}

pub(crate) use browser::browse;
pub(crate) use mcp_testkit::TempDir;
pub(crate) use served::Serving;

/// A user: a HOME of their own and a project directory to run in.
pub(crate) struct User {
    pub(crate) home: TempDir,
    pub(crate) project: TempDir,
}

/// What a run printed and how it ended.
#[derive(Debug)]
pub(crate) struct Run {
    pub(crate) code: i32,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
}

/// How long a command that should end may run: far beyond any honest run, so that a command
/// that never ends (a refusal that no longer happens, a server that keeps serving) fails its
/// test instead of hanging the whole suite. Not a measure of speed.
const RUN_LIMIT: std::time::Duration = std::time::Duration::from_secs(300);

/// Runs `command` to its end, or kills it and fails the test past [`RUN_LIMIT`].
fn bounded(command: &mut Command, args: &[&str]) -> Run {
    let child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(RUN_LIMIT) {
        Ok(output) => Run::from(output.unwrap()),
        Err(_) => {
            let _ = Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .status();
            panic!(
                "`mcp-host {}` did not end within {RUN_LIMIT:?}",
                args.join(" ")
            );
        }
    }
}

impl Run {
    fn from(output: Output) -> Self {
        Self {
            code: output.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }

    /// Asserts the exit code, showing the output when it differs.
    #[track_caller]
    pub(crate) fn code(&self, code: i32) -> &Self {
        assert_eq!(self.code, code, "exit code\n{self:#?}");
        self
    }

    /// Asserts stdout holds `text`.
    #[track_caller]
    pub(crate) fn out_has(&self, text: &str) -> &Self {
        assert!(
            self.stdout.contains(text),
            "stdout lacks {text:?}\n{self:#?}"
        );
        self
    }

    /// Asserts stderr holds `text`.
    #[track_caller]
    pub(crate) fn err_has(&self, text: &str) -> &Self {
        assert!(
            self.stderr.contains(text),
            "stderr lacks {text:?}\n{self:#?}"
        );
        self
    }

    /// Stdout as JSON.
    #[track_caller]
    pub(crate) fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not JSON: {e}\n{self:#?}"))
    }
}

impl User {
    pub(crate) fn new() -> Self {
        Self {
            home: TempDir::new("home"),
            project: TempDir::new("project"),
        }
    }

    /// The command, with this user's environment and nothing of the test runner's.
    pub(crate) fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(bin());
        cmd.args(args)
            .current_dir(self.project.path())
            .env_clear()
            .env("HOME", self.home.path())
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            // A browser that does nothing: tests act as the browser themselves.
            .env("BROWSER", "true");
        cmd
    }

    /// Runs to the end with stdin closed.
    pub(crate) fn run(&self, args: &[&str]) -> Run {
        bounded(self.command(args).stdin(Stdio::null()), args)
    }

    /// Runs to the end with stdin closed and one more variable in the environment.
    pub(crate) fn run_with(&self, args: &[&str], name: &str, value: &str) -> Run {
        bounded(
            self.command(args).env(name, value).stdin(Stdio::null()),
            args,
        )
    }

    /// The global configuration file.
    pub(crate) fn global_file(&self) -> PathBuf {
        self.home.path().join(".config/mcp-host/config.json")
    }

    /// The project's configuration file.
    pub(crate) fn project_file(&self) -> PathBuf {
        self.project.path().join(".mcp-host/config.json")
    }

    /// Adds the bundled demo server as `id` over stdio.
    pub(crate) fn add_demo(&self, id: &str, scope: &str) {
        self.run(&["add", id, "--scope", scope, "--", bin(), "demo-server"])
            .code(0);
    }

    /// Adds the bundled demo server as `id` over stdio to the project file, disabled.
    pub(crate) fn add_demo_disabled(&self, id: &str) {
        self.run(&[
            "add",
            id,
            "--enabled",
            "false",
            "--scope",
            "project",
            "--",
            bin(),
            "demo-server",
        ])
        .code(0);
    }

    /// Writes a global configuration file.
    pub(crate) fn write_global(&self, json: &serde_json::Value) {
        let path = self.global_file();
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, serde_json::to_vec_pretty(json).unwrap()).unwrap();
    }
}

/// The demo server on Streamable HTTP at a free loopback port; killed when dropped.
pub(crate) struct HttpDemo {
    child: Child,
    pub(crate) url: String,
}

impl HttpDemo {
    pub(crate) fn start() -> Self {
        let mut child = Command::new(bin())
            .args(["demo-server", "--http", "127.0.0.1:0"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stderr.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let url = line
            .trim()
            .strip_prefix("demo server listening on ")
            .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
            .to_owned();
        Self { child, url }
    }
}

impl Drop for HttpDemo {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
