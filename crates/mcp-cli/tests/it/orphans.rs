//! No server process outlives `mcp-host`, whatever ends it: every command that starts servers
//! (`call`, `serve` over stdio and HTTP, `shell` on a pseudo-terminal) is ended by SIGTERM,
//! SIGINT, SIGHUP (except `serve`, which reloads its file on it) and SIGKILL while its server
//! (which starts a grandchild and ignores the end of its stdin) runs, and nothing the server
//! started may be alive 3 s later. `ps` lists what runs and finds orphans, and
//! `--kill-orphans` ends them.

use std::fs::File;
use std::io::Read as _;
use std::os::unix::process::ExitStatusExt as _;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use nix::pty::{Winsize, openpty};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde_json::{Value, json};

use super::*;

/// The variable that marks every process of one test's server, grandchildren included.
const MARK: &str = "MCP_HOST_ORPHAN_TEST_MARK";

/// How long the processes of a server may outlive its host.
const DEADLINE: Duration = Duration::from_secs(3);

/// A user whose servers run under a runtime directory of their own, so that `ps` sees only
/// this test's.
struct Scene {
    user: User,
    runtime: TempDir,
    mark: String,
}

impl Scene {
    /// One configured server, `srv`: the fake server with a grandchild, deaf to the end of its
    /// stdin, marked with a value of its own.
    fn new(what: &str) -> Self {
        let user = User::new();
        let runtime = TempDir::new("runtime");
        std::fs::set_permissions(
            runtime.path(),
            std::os::unix::fs::PermissionsExt::from_mode(0o700),
        )
        .unwrap();
        let mark = format!("{what}-{}-{}", std::process::id(), unique());
        let server = json!({
            "command": mcp_testkit::fake_server(),
            "args": ["--grandchild", "--ignore-stdin-close"],
            "env": {MARK: mark},
        });
        user.write_global(&json!({"version": 1, "mcp": {"servers": {"srv": server}}}));
        let gateway = json!({
            "mode": "passthrough",
            "mcpServers": {"srv": {
                "description": "the fake server",
                "command": mcp_testkit::fake_server(),
                "args": ["--grandchild", "--ignore-stdin-close"],
                "env": {MARK: mark},
                "permission": {"default": "allow"}
            }}
        });
        std::fs::write(
            user.project.path().join("gateway.json"),
            serde_json::to_vec_pretty(&gateway).unwrap(),
        )
        .unwrap();
        Self {
            user,
            runtime,
            mark,
        }
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = self.user.command(args);
        cmd.env("XDG_RUNTIME_DIR", self.runtime.path());
        cmd
    }

    fn gateway(&self) -> String {
        self.user
            .project
            .path()
            .join("gateway.json")
            .to_str()
            .unwrap()
            .to_owned()
    }

    /// The live processes carrying this scene's mark.
    fn marked(&self) -> Vec<i32> {
        mcp_testkit::live_processes_with_env(MARK, &self.mark)
    }

    /// Waits until the server and its grandchild are both alive; returns them.
    #[track_caller]
    fn wait_for_server_and_grandchild(&self, host: &mut Child) -> Vec<i32> {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let marked = self.marked();
            if marked.len() >= 2 {
                return marked;
            }
            if let Some(status) = host.try_wait().unwrap() {
                panic!("the host ended ({status}) before its server was seen: {marked:?}");
            }
            assert!(
                Instant::now() < deadline,
                "the server and its grandchild were not seen: {marked:?}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// `mcp-host ps --json` (with `extra` flags): its rows.
    fn ps(&self, extra: &[&str]) -> Vec<Value> {
        let mut args = vec!["--json", "ps"];
        args.extend(extra);
        let output = self.command(&args).stdin(Stdio::null()).output().unwrap();
        let run = Run::from(output);
        run.code(0);
        match run.json() {
            Value::Array(rows) => rows,
            other => panic!("ps --json is not an array: {other}"),
        }
    }
}

fn unique() -> u32 {
    static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    N.fetch_add(1, std::sync::atomic::Ordering::SeqCst)
}

/// A process group's id, from `/proc`.
fn pgid_of(pid: i32) -> Option<i32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 2..];
    rest.split(' ').nth(2)?.parse().ok()
}

/// The commands that start servers, as the matrix runs them.
#[derive(Clone, Copy, Debug)]
enum Cmd {
    Call,
    ServeStdio,
    ServeHttp,
    Shell,
}

/// A host being run, with what keeps its input open.
struct Running {
    child: Child,
    /// The pseudo-terminal's master side (the shell), or the pipe to stdin (serve).
    _keep: Option<Box<dyn std::any::Any>>,
    /// What the host printed on its terminal (the shell), for failure messages.
    seen: Arc<Mutex<String>>,
}

fn start(scene: &Scene, cmd: Cmd) -> Running {
    let gateway = scene.gateway();
    let seen = Arc::new(Mutex::new(String::new()));
    match cmd {
        Cmd::Call => {
            let child = scene
                .command(&[
                    "call",
                    "srv",
                    "sleep",
                    "--yes",
                    "--args",
                    r#"{"ms": 600000}"#,
                ])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            Running {
                child,
                _keep: None,
                seen,
            }
        }
        Cmd::ServeStdio | Cmd::ServeHttp => {
            let mut args = vec!["serve", "--gateway", gateway.as_str()];
            if matches!(cmd, Cmd::ServeHttp) {
                args.extend(["--http", "127.0.0.1:0"]);
            }
            let mut child = scene
                .command(&args)
                .stdin(Stdio::piped())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            let stdin = child.stdin.take().unwrap();
            Running {
                child,
                _keep: Some(Box::new(stdin)),
                seen,
            }
        }
        Cmd::Shell => {
            let size = Winsize {
                ws_row: 50,
                ws_col: 200,
                ws_xpixel: 0,
                ws_ypixel: 0,
            };
            let pty = openpty(Some(&size), None).unwrap();
            let slave = pty.slave;
            let child = scene
                .command(&["shell", "--yes"])
                .env("TERM", "xterm")
                .stdin(Stdio::from(slave.try_clone().unwrap()))
                .stdout(Stdio::from(slave.try_clone().unwrap()))
                .stderr(Stdio::from(slave))
                .spawn()
                .unwrap();
            let master = File::from(pty.master);
            let mut reader = master.try_clone().unwrap();
            let sink = seen.clone();
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                while let Ok(n) = reader.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    sink.lock()
                        .unwrap()
                        .push_str(&String::from_utf8_lossy(&buf[..n]));
                }
            });
            Running {
                child,
                _keep: Some(Box::new(master)),
                seen,
            }
        }
    }
}

/// What one run of the matrix found.
#[derive(Debug)]
struct Outcome {
    /// Marked processes alive after the deadline.
    left: Vec<i32>,
    /// The host's exit code, or the signal that ended it.
    code: Option<i32>,
    signal: Option<i32>,
}

/// Starts the host, waits for its server and grandchild, sends `signal`, and looks.
fn one(cmd: Cmd, signal: Signal) -> Outcome {
    let scene = Scene::new(&format!("{cmd:?}-{signal}"));
    let mut running = start(&scene, cmd);
    let marked = scene.wait_for_server_and_grandchild(&mut running.child);
    // The server's group, with the processes in it that carry no mark.
    let groups: Vec<i32> = marked.iter().filter_map(|&p| pgid_of(p)).collect();
    if matches!(cmd, Cmd::Shell) {
        // The prompt is up: the shell is reading a line, its terminal raw.
        let deadline = Instant::now() + Duration::from_secs(30);
        while !running.seen.lock().unwrap().contains("mcp> ") {
            assert!(Instant::now() < deadline, "no prompt");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    let host = Pid::from_raw(i32::try_from(running.child.id()).unwrap());
    kill(host, signal).unwrap();
    let sent = Instant::now();
    let status = loop {
        if let Some(status) = running.child.try_wait().unwrap() {
            break Some(status);
        }
        if sent.elapsed() > DEADLINE {
            break None;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let status = status.unwrap_or_else(|| {
        // A host that would not end is a failure of its own; end it to look at the rest.
        let _ = running.child.kill();
        running.child.wait().unwrap()
    });
    let rest = DEADLINE.saturating_sub(sent.elapsed());
    mcp_testkit::wait_until(rest, || {
        scene.marked().is_empty()
            && groups
                .iter()
                .all(|&g| mcp_testkit::live_group_members(g).is_empty())
    });
    let mut left = scene.marked();
    for &g in &groups {
        left.extend(mcp_testkit::live_group_members(g));
    }
    left.sort_unstable();
    left.dedup();
    // Leave nothing behind for the next test, whatever was found.
    for &pid in &left {
        let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
    }
    Outcome {
        left,
        code: status.code(),
        signal: status.signal(),
    }
}

/// Every command that starts servers, ended by every signal: nothing marked is alive 3 s
/// after the signal, and a caught signal ends the host with `128 + n`.
#[test]
fn no_server_outlives_the_host_whatever_ends_it() {
    let cmds = [Cmd::Call, Cmd::ServeStdio, Cmd::ServeHttp, Cmd::Shell];
    let signals = [
        Signal::SIGTERM,
        Signal::SIGINT,
        Signal::SIGHUP,
        Signal::SIGKILL,
    ];
    // Each combination on a thread of its own: they share nothing but the machine.
    // `serve` reloads its file on SIGHUP instead of ending (tests/it/serve_live.rs).
    let serves = |c: Cmd| matches!(c, Cmd::ServeStdio | Cmd::ServeHttp);
    let runs: Vec<_> = cmds
        .iter()
        .flat_map(|&c| signals.iter().map(move |&s| (c, s)))
        .filter(|&(c, s)| !(serves(c) && s == Signal::SIGHUP))
        .map(|(c, s)| (c, s, std::thread::spawn(move || one(c, s))))
        .collect();
    let mut failures = Vec::new();
    let mut table = String::new();
    for (cmd, signal, run) in runs {
        let outcome = run.join().unwrap();
        let wanted_code = (signal != Signal::SIGKILL).then_some(128 + signal as i32);
        let code_ok = match wanted_code {
            Some(code) => outcome.code == Some(code),
            None => outcome.signal == Some(Signal::SIGKILL as i32),
        };
        let ok = outcome.left.is_empty() && code_ok;
        table.push_str(&format!(
            "{cmd:?} {signal}: {} left {:?}, code {:?}, signal {:?}\n",
            if ok { "ok" } else { "FAIL" },
            outcome.left,
            outcome.code,
            outcome.signal
        ));
        if !ok {
            failures.push(format!("{cmd:?} {signal}"));
        }
    }
    eprintln!("{table}");
    assert!(failures.is_empty(), "failed: {failures:?}\n{table}");
}

/// Starts `serve` over stdio and waits for its server and grandchild.
fn serve(scene: &Scene) -> (Running, Vec<i32>) {
    let mut running = start(scene, Cmd::ServeStdio);
    let marked = scene.wait_for_server_and_grandchild(&mut running.child);
    (running, marked)
}

/// `ps` lists the keeper, the server and its grandchild under the host that started them,
/// alive; `--kill-orphans` leaves them alone.
#[test]
fn ps_lists_the_servers_of_a_live_host() {
    let scene = Scene::new("ps-live");
    let (mut running, marked) = serve(&scene);
    let host = i32::try_from(running.child.id()).unwrap();
    let group = pgid_of(marked[0]).unwrap();
    let rows = scene.ps(&[]);
    let mine: Vec<&Value> = rows.iter().filter(|r| r["pgid"] == group).collect();
    let roles: Vec<(&str, i64)> = mine
        .iter()
        .map(|r| (r["role"].as_str().unwrap(), r["pid"].as_i64().unwrap()))
        .collect();
    assert_eq!(mine.len(), 3, "{rows:#?}");
    assert!(roles.contains(&("keeper", i64::from(group))), "{roles:?}");
    for pid in &marked {
        assert!(
            roles
                .iter()
                .any(|(role, p)| *p == i64::from(*pid) && matches!(*role, "server" | "descendant")),
            "{pid} not listed: {roles:?}"
        );
    }
    for row in &mine {
        assert_eq!(row["server"], "srv", "{row}");
        assert_eq!(row["host_pid"], host, "{row}");
        assert_eq!(row["host"], "alive", "{row}");
        assert!(row["age_secs"].as_u64().unwrap() < 120, "{row}");
    }
    assert_eq!(scene.ps(&["--kill-orphans"]), Vec::<Value>::new());
    assert_eq!(scene.marked().len(), marked.len());
    kill(Pid::from_raw(host), Signal::SIGTERM).unwrap();
    assert_eq!(running.child.wait().unwrap().code(), Some(128 + 15));
    assert!(mcp_testkit::wait_until(DEADLINE, || scene
        .marked()
        .is_empty()));
}

/// With its keeper and then its host killed (SIGKILL both: nothing runs to clean up), the
/// server and its grandchild are orphans: `ps` says so, `ps --kill-orphans` ends them within
/// 3 s, and `ps` then lists nothing.
#[test]
fn ps_kill_orphans_ends_the_servers_whose_host_is_gone() {
    let scene = Scene::new("ps-orphans");
    let (mut running, marked) = serve(&scene);
    let host = i32::try_from(running.child.id()).unwrap();
    let group = pgid_of(marked[0]).unwrap();
    kill(Pid::from_raw(group), Signal::SIGKILL).unwrap();
    running.child.kill().unwrap();
    running.child.wait().unwrap();
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(
        scene.marked(),
        marked,
        "without a keeper, the server outlives its host"
    );

    let rows = scene.ps(&[]);
    assert_eq!(rows.len(), marked.len(), "{rows:#?}");
    for row in &rows {
        assert!(marked.contains(&i32::try_from(row["pid"].as_i64().unwrap()).unwrap()));
        assert_eq!(row["pgid"], group, "{row}");
        assert_eq!(row["host_pid"], host, "{row}");
        assert_eq!(row["host"], "orphan", "{row}");
    }
    let killed = scene.ps(&["--kill-orphans"]);
    assert_eq!(killed.len(), marked.len(), "{killed:#?}");
    let gone = mcp_testkit::wait_until(DEADLINE, || scene.marked().is_empty());
    assert!(gone, "left: {:?}", scene.marked());
    assert_eq!(scene.ps(&[]), Vec::<Value>::new());
}

/// The record directory is refused when it is open to others, and nothing is listed from it.
#[test]
fn ps_refuses_a_record_directory_open_to_others() {
    let scene = Scene::new("ps-loose");
    let dir = scene.runtime.path().join("mcp-host");
    std::fs::create_dir(&dir).unwrap();
    std::fs::set_permissions(&dir, std::os::unix::fs::PermissionsExt::from_mode(0o777)).unwrap();
    let run = Run::from(
        scene
            .command(&["ps"])
            .stdin(Stdio::null())
            .output()
            .unwrap(),
    );
    run.code(1).err_has("open to others");
}

/// A Ctrl-C typed at the shell's prompt is a byte (the terminal is raw), not a signal: it
/// clears the line and the session goes on, its servers alive; `/quit` then ends it with
/// nothing left.
#[test]
fn ctrl_c_typed_at_the_shell_prompt_clears_the_line() {
    use std::io::Write as _;
    let scene = Scene::new("shell-ctrl-c");
    let mut running = start(&scene, Cmd::Shell);
    let marked = scene.wait_for_server_and_grandchild(&mut running.child);
    let prompt = |n: usize| {
        let deadline = Instant::now() + Duration::from_secs(30);
        while running.seen.lock().unwrap().matches("mcp> ").count() < n {
            assert!(Instant::now() < deadline, "no prompt number {n}");
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    prompt(1);
    let mut master = running
        ._keep
        .as_ref()
        .unwrap()
        .downcast_ref::<File>()
        .unwrap()
        .try_clone()
        .unwrap();
    // Typed, then Ctrl-C: `/quit` is never run, a fresh prompt is drawn.
    master.write_all(b"/quit\x03").unwrap();
    prompt(2);
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        running.child.try_wait().unwrap().is_none(),
        "the shell ended: {}",
        running.seen.lock().unwrap()
    );
    assert_eq!(scene.marked().len(), marked.len(), "its servers are alive");
    master.write_all(b"/quit\r").unwrap();
    let deadline = Instant::now() + DEADLINE;
    let status = loop {
        if let Some(status) = running.child.try_wait().unwrap() {
            break status;
        }
        assert!(Instant::now() < deadline, "/quit did not end the shell");
        std::thread::sleep(Duration::from_millis(10));
    };
    assert_eq!(status.code(), Some(0));
    assert!(mcp_testkit::wait_until(DEADLINE, || scene
        .marked()
        .is_empty()));
}
