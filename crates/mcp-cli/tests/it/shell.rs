//! `mcp-host shell` on a real pseudo-terminal: line editing on, `/mcp` answering while a slow
//! call runs, permission questions answered in the session.

use std::fs::File;
use std::io::{Read as _, Write as _};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use nix::pty::{Winsize, openpty};

use super::*;

/// A shell on a pseudo-terminal, with everything it printed so far.
struct Pty {
    child: Child,
    master: File,
    seen: Arc<Mutex<String>>,
}

impl Pty {
    fn start(u: &User, args: &[&str]) -> Self {
        Self::spawn(u.command(args))
    }

    /// Started with one more variable in its environment.
    fn start_with(u: &User, args: &[&str], (name, value): (&str, &str)) -> Self {
        let mut command = u.command(args);
        command.env(name, value);
        Self::spawn(command)
    }

    fn spawn(mut command: Command) -> Self {
        let size = Winsize {
            ws_row: 50,
            ws_col: 220,
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        let pty = openpty(Some(&size), None).unwrap();
        let slave = pty.slave;
        let child = command
            .env("TERM", "xterm")
            .stdin(Stdio::from(slave.try_clone().unwrap()))
            .stdout(Stdio::from(slave.try_clone().unwrap()))
            .stderr(Stdio::from(slave))
            .spawn()
            .unwrap();
        let master = File::from(pty.master);
        let seen = Arc::new(Mutex::new(String::new()));
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
        Self {
            child,
            master,
            seen,
        }
    }

    fn len(&self) -> usize {
        self.seen.lock().unwrap().len()
    }

    /// Waits until `text` appears after byte `from`; returns where it ends.
    #[track_caller]
    fn wait_for(&self, text: &str, from: usize) -> usize {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            {
                let seen = self.seen.lock().unwrap();
                if let Some(at) = seen.get(from..).and_then(|s| s.find(text)) {
                    return from + at + text.len();
                }
                assert!(
                    Instant::now() < deadline,
                    "no {text:?} after {from} in:\n{seen}"
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn type_line(&mut self, line: &str) {
        self.master.write_all(line.as_bytes()).unwrap();
        self.master.write_all(b"\r").unwrap();
        self.master.flush().unwrap();
    }

    fn seen_since(&self, from: usize) -> String {
        self.seen.lock().unwrap()[from..].to_owned()
    }

    #[track_caller]
    fn quit(mut self) {
        self.type_line("/quit");
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                assert!(status.success(), "{status}");
                return;
            }
            assert!(Instant::now() < deadline, "the shell did not end");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

#[test]
fn mcp_answers_while_a_slow_call_runs() {
    let u = User::new();
    u.add_demo("demo", "project");
    let mut pty = Pty::start(&u, &["shell", "--yes"]);
    let at = pty.wait_for("type /help", 0);
    pty.wait_for("mcp> ", at);

    let before_call = pty.len();
    pty.type_line(r#"/call demo slow {"seconds": 4, "step_ms": 100}"#);
    // The call is running; /mcp answers now, not after it.
    std::thread::sleep(Duration::from_millis(300));
    let before_mcp = pty.len();
    pty.type_line("/mcp");
    let shown = pty.wait_for("ready", before_mcp);
    let so_far = pty.seen_since(before_call);
    assert!(
        !so_far.contains("done after"),
        "/mcp waited for the call:\n{so_far}"
    );
    pty.type_line("/mcp demo");
    pty.wait_for("last_connected_at:", shown);
    let done = pty.wait_for("done after 4000 ms", before_call);
    pty.wait_for("mcp> ", done);

    // The other commands, one at a time: each answer is looked for only in what came after
    // its own command (`/tools` lists `resources/templates/list`, which a later wait for
    // "template" would otherwise take for `/resources`' answer), and the next command is
    // typed at the next prompt (a line typed while the editor is not reading can be lost).
    for (command, answer) in [
        ("/tools demo", "mcp_demo_echo_"),
        ("/read demo demo://notes/shopping", "coffee"),
        ("/get demo review topic=shells", "Please review shells."),
        ("/resources", "demo://notes/{name}"),
        ("/prompts", "Asks for a review"),
        // Words may be separated by several spaces; the JSON keeps its own.
        (r#"/call  demo   add  {"a": 20, "b": 22}"#, "20 + 22 = 42"),
        ("/bogus", "unknown command"),
    ] {
        let typed = pty.len();
        pty.type_line(command);
        let answered = pty.wait_for(answer, typed);
        pty.wait_for("mcp> ", answered);
    }
    pty.quit();
    // The history was kept for next time.
    let history =
        std::fs::read_to_string(u.home.path().join(".config/mcp-host/shell_history")).unwrap();
    assert!(history.contains("/call demo slow"), "{history}");
    use std::os::unix::fs::PermissionsExt as _;
    let mode = std::fs::metadata(u.home.path().join(".config/mcp-host/shell_history"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o077, 0, "the history is private: {mode:o}");
}

#[test]
fn permission_questions_are_answered_in_the_shell() {
    let u = User::new();
    u.add_demo("demo", "project");
    let mut pty = Pty::start(&u, &["shell"]);
    pty.wait_for("type /help", 0);
    let mark = pty.len();
    pty.type_line(r#"/call demo add {"a": 2, "b": 3}"#);
    let asked = pty.wait_for("type y, n or always", mark);
    pty.type_line("y");
    pty.wait_for("2 + 3 = 5", asked);
    let mark = pty.len();
    pty.type_line(r#"/call demo add {"a": 1, "b": 1}"#);
    let asked = pty.wait_for("type y, n or always", mark);
    pty.type_line("n");
    pty.wait_for("was denied", asked);
    pty.quit();
}

#[test]
fn call_asks_on_the_terminal() {
    let u = User::new();
    u.add_demo("demo", "project");
    let pty = Pty::start(
        &u,
        &["call", "demo", "add", "--args", r#"{"a": 4, "b": 5}"#],
    );
    let mut pty = pty;
    let asked = pty.wait_for("[y/N/always]", 0);
    pty.type_line("y");
    pty.wait_for("4 + 5 = 9", asked);
    assert!(pty.child.wait().unwrap().success());

    let mut pty = Pty::start(
        &u,
        &["call", "demo", "add", "--args", r#"{"a": 4, "b": 5}"#],
    );
    let asked = pty.wait_for("[y/N/always]", 0);
    pty.type_line("n");
    pty.wait_for("was denied", asked);
    assert_eq!(pty.child.wait().unwrap().code(), Some(6));
}

#[test]
fn an_unapproved_project_server_is_asked_about_on_a_terminal() {
    let u = User::new();
    trust::clone_project(&u, &["demo-server"]);

    // Asked, with what it would run and read; a no leaves it off.
    let mut pty = Pty::start(&u, &["test", "cloned"]);
    let asked = pty.wait_for("run it? (approve it for this project) [y/N]", 0);
    let question = pty.seen_since(0);
    assert!(
        question.contains("defines server `cloned`")
            && question.contains("demo-server")
            && question.contains("from your environment: PATH"),
        "{question}"
    );
    pty.type_line("n");
    pty.wait_for("not approved", asked);
    assert_eq!(pty.child.wait().unwrap().code(), Some(3));

    // A yes is kept: the next run asks nothing.
    let mut pty = Pty::start(&u, &["test", "cloned"]);
    let asked = pty.wait_for("[y/N]", 0);
    pty.type_line("y");
    pty.wait_for("ok: server `cloned`", asked);
    assert!(pty.child.wait().unwrap().success());
    u.run(&["test", "cloned"]).code(0);

    // The shell asks before its first prompt.
    trust::clone_project(&u, &["demo-server", "--http", "127.0.0.1:0"]);
    let mut pty = Pty::start(&u, &["shell"]);
    let asked = pty.wait_for("changed since you approved it", 0);
    pty.type_line("n");
    pty.wait_for("type /help", asked);
    let mark = pty.len();
    pty.type_line("/mcp cloned");
    pty.wait_for("[trust]", mark);
    pty.quit();
}

#[test]
fn the_question_shows_the_whole_command_line_and_the_values_that_change_what_runs() {
    let u = User::new();
    trust::hostile_project(&u);
    let mut pty = Pty::start_with(
        &u,
        &["test", "cloned"],
        ("HOST_NODE_OPTIONS", "--from-the-users-shell"),
    );
    let asked = pty.wait_for("run it? (approve it for this project) [y/N]", 0);
    let seen = pty.seen_since(0);
    let start = seen.find("the project file").unwrap();
    let end = seen.find("run it?").unwrap();
    trust::assert_shows_what_runs(&seen[start..end]);
    pty.type_line("n");
    pty.wait_for("not approved", asked);
    assert_eq!(pty.child.wait().unwrap().code(), Some(3));
}

/// Waits for the shell to end by itself, successfully.
#[track_caller]
fn ends(mut pty: Pty) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(status) = pty.child.try_wait().unwrap() {
            assert!(status.success(), "{status}");
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the shell did not end:\n{}",
            pty.seen_since(0)
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn quit_and_exit_end_the_shell_without_their_slash() {
    let u = User::new();
    u.add_demo("demo", "project");
    for word in ["quit", "exit", "/exit"] {
        let mut pty = Pty::start(&u, &["shell", "--yes"]);
        let at = pty.wait_for("type /help", 0);
        pty.wait_for("mcp> ", at);
        pty.type_line(word);
        ends(pty);
    }
}

#[test]
fn tab_completes_commands_server_ids_and_tool_names() {
    let u = User::new();
    u.add_demo("demo", "project");
    let mut pty = Pty::start(&u, &["shell", "--yes"]);
    let at = pty.wait_for("type /help", 0);
    pty.wait_for("mcp> ", at);
    // Each word typed in part and completed with Tab; the line only works if all three were.
    let typed = pty.len();
    for part in ["/cal\t", "de\t", "ad\t"] {
        pty.master.write_all(part.as_bytes()).unwrap();
        pty.master.flush().unwrap();
        // The completed word is drawn before the next part is typed.
        let whole = match part {
            "/cal\t" => "/call ",
            "de\t" => "demo ",
            _ => "add ",
        };
        pty.wait_for(whole, typed);
    }
    pty.type_line(r#"{"a": 20, "b": 22}"#);
    let answered = pty.wait_for("20 + 22 = 42", typed);
    pty.wait_for("mcp> ", answered);
    // A tool of another name is offered only for its own server: `sl` is the demo's slow.
    let typed = pty.len();
    pty.master.write_all(b"/call demo sl\t").unwrap();
    pty.master.flush().unwrap();
    pty.wait_for("slow ", typed);
    pty.type_line(r#"{"seconds": 0}"#);
    pty.wait_for("done after", typed);
    pty.quit();
}

#[test]
fn progress_of_a_long_call_shows_above_the_prompt() {
    let u = User::new();
    u.add_demo("demo", "project");
    let mut pty = Pty::start(&u, &["shell", "--yes"]);
    let at = pty.wait_for("type /help", 0);
    pty.wait_for("mcp> ", at);
    let typed = pty.len();
    pty.type_line(r#"/call demo slow {"seconds": 2, "step_ms": 100}"#);
    let progress = pty.wait_for("progress `slow` on `demo`: ", typed);
    let done = pty.wait_for("done after 2000 ms", typed);
    assert!(progress < done, "{}", pty.seen_since(typed));
    pty.wait_for("mcp> ", done);
    pty.quit();
}

#[test]
fn cancel_cancels_the_running_call_at_the_server() {
    let u = User::new();
    let log = u.home.path().join("requests.log");
    let fake = mcp_testkit::fake_server();
    u.run(&[
        "add",
        "fake",
        "--",
        fake.to_str().unwrap(),
        "--log-requests",
        log.to_str().unwrap(),
    ])
    .code(0);
    let mut pty = Pty::start(&u, &["shell", "--yes"]);
    let at = pty.wait_for("type /help", 0);
    pty.wait_for("mcp> ", at);
    let typed = pty.len();
    pty.type_line("/cancel");
    pty.wait_for("no call is running", typed);

    let typed = pty.len();
    pty.type_line("/call fake hang");
    // The call is at the server before it is cancelled.
    let deadline = Instant::now() + Duration::from_secs(30);
    while !std::fs::read_to_string(&log)
        .unwrap_or_default()
        .contains("tools/call")
    {
        assert!(
            Instant::now() < deadline,
            "the call never reached the server"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    pty.type_line("/cancel");
    let cancelled = pty.wait_for("cancelled: /call fake hang", typed);
    pty.wait_for("mcp> ", cancelled);
    // The server counts the notifications/cancelled it received.
    let typed = pty.len();
    pty.type_line("/call fake stats");
    let stats = pty.wait_for("cancelled=1", typed);
    pty.wait_for("mcp> ", stats);
    pty.quit();
}

#[test]
fn always_allow_is_kept_in_the_user_file_and_honoured_by_the_next_process() {
    let u = User::new();
    u.add_demo("demo", "global");
    let add = ["call", "demo", "add", "--args", r#"{"a": 2, "b": 3}"#];
    // Presence first: with nobody to ask, the call is refused.
    u.run(&add).code(6);

    let mut pty = Pty::start(&u, &["shell"]);
    let at = pty.wait_for("type /help", 0);
    pty.wait_for("mcp> ", at);
    let typed = pty.len();
    pty.type_line(r#"/call demo add {"a": 1, "b": 1}"#);
    let asked = pty.wait_for("type y, n or always", typed);
    pty.type_line("always");
    pty.wait_for("1 + 1 = 2", asked);
    pty.wait_for("always allowed: `add` on `demo`", asked);
    // The same process asks no more about that tool, and still asks about another.
    let typed = pty.len();
    pty.type_line(r#"/call demo add {"a": 3, "b": 4}"#);
    let answered = pty.wait_for("3 + 4 = 7", typed);
    pty.wait_for("mcp> ", answered);
    let typed = pty.len();
    pty.type_line(r#"/call demo echo {"text": "hi"}"#);
    let asked = pty.wait_for("type y, n or always", typed);
    let seen = pty.seen_since(0);
    assert_eq!(seen.matches("type y, n or always").count(), 2, "{seen}");
    pty.type_line("n");
    pty.wait_for("was denied", asked);
    pty.quit();

    let global: serde_json::Value =
        serde_json::from_slice(&std::fs::read(u.global_file()).unwrap()).unwrap();
    assert_eq!(
        global["mcp"]["servers"]["demo"]["permission"]["tools"]["add"], "allow",
        "{global}"
    );
    // The next process, with nobody to ask, calls it; the other tool is still refused.
    u.run(&add).code(0).out_has("2 + 3 = 5");
    u.run(&["call", "demo", "echo", "--args", r#"{"text": "x"}"#])
        .code(6);
}

#[test]
fn always_at_the_call_question_is_kept_and_a_project_server_keeps_it_for_now_only() {
    let u = User::new();
    u.add_demo("demo", "global");
    let mut pty = Pty::start(
        &u,
        &["call", "demo", "add", "--args", r#"{"a": 4, "b": 5}"#],
    );
    let asked = pty.wait_for("[y/N/always]", 0);
    pty.type_line("a");
    pty.wait_for("4 + 5 = 9", asked);
    assert!(pty.child.wait().unwrap().success());
    u.run(&["call", "demo", "add", "--args", r#"{"a": 1, "b": 2}"#])
        .code(0)
        .out_has("1 + 2 = 3");

    // A server of the project's own file: allowed for the session, and said so; the file
    // is left alone (its allow would be read as ask).
    u.add_demo("mine", "project");
    let mut pty = Pty::start(&u, &["shell"]);
    let at = pty.wait_for("type /help", 0);
    pty.wait_for("mcp> ", at);
    let typed = pty.len();
    pty.type_line(r#"/call mine add {"a": 1, "b": 1}"#);
    let asked = pty.wait_for("type y, n or always", typed);
    pty.type_line("always");
    pty.wait_for("1 + 1 = 2", asked);
    pty.wait_for("until this session ends", asked);
    pty.quit();
    let project = std::fs::read_to_string(u.project_file()).unwrap();
    assert!(project.contains("\"mine\""), "{project}");
    assert!(!project.contains("permission"), "{project}");
}
