//! `mcp-host shell`: one host kept running while a person types commands. Lines are read on a
//! thread of their own (rustyline: line editing and history); every command runs as a task,
//! so `/mcp` answers while a slow `/call` is still running, and results are printed above the
//! prompt when they arrive. A permission question is answered on the next line typed.
//!
//! Tab completes the commands, the server ids and, after `/call ID`, that server's tools, read
//! from the running host when Tab is pressed (`complete.rs`). `/cancel` cancels the call
//! started last that still runs: its task is aborted, which drops the call, and the host sends
//! the server `notifications/cancelled`. A tool's progress is shown above the prompt as
//! `call` shows it on its line. `always` at a permission question allows the tool for good
//! (`remember.rs`). `quit` and `exit` end the session, with or without their slash.
//!
//! Signals: the prompt is back while calls run, so the terminal is raw nearly all the time and
//! a Ctrl-C typed is a byte that clears the line (readline's convention), never a signal. A
//! SIGINT signal (`kill -INT`, or a Ctrl-C while the servers start, when the terminal is not
//! raw yet) ends the shell as SIGTERM does (`main.rs`: every server group killed, the terminal
//! restored, exit 130). rustyline (built without `signal-hook`) installs a SIGINT handler of
//! its own when an editor is made and puts back what it found when the editor is dropped; so
//! [`editor`] is made before `main` listens for signals, and is never dropped.

use std::collections::{BTreeMap, VecDeque};
use std::future::Future;
use std::os::fd::AsFd as _;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use mcp_host::permission::CallRequest;
use mcp_host::{Host, Prompter, setup};
use rustyline::error::ReadlineError;
use tokio::sync::{mpsc, oneshot};

use crate::args::ReadScope;
use crate::exit::{Code, Failure};
use crate::live::{self, Setup};
use crate::manage::{self, Context};
use crate::output::{Out, Sink};
use crate::remember::{self, Answer, Remembered};
use crate::trust;

pub(crate) use crate::complete::ShellHelper;

const HELP: &str = "\
commands (Tab completes commands, server ids and tool names):
  /mcp                       every server's state (answers while calls run)
  /mcp ID                    one server's details
  /tools [ID]                the tools, as a model sees them
  /call ID TOOL [JSON]       call a tool (JSON: the arguments object)
  /cancel                    cancel the call started last that still runs
  /resources [ID]            list resources
  /read ID URI               read a resource
  /prompts [ID]              list prompts
  /get ID PROMPT [NAME=VALUE]...  get a prompt
  /reload                    read the configuration again and apply it
  /help                      this list
  /quit                      end the session (also quit, exit, /exit, Ctrl-D)";

const PROMPT: &str = "mcp> ";

/// The shell's line editor, completing from the host once it runs.
pub(crate) type Editor = rustyline::Editor<ShellHelper, rustyline::history::DefaultHistory>;

/// Makes the line editor. Call it before listening for SIGINT (see the module doc).
pub(crate) fn editor() -> Result<Editor, Failure> {
    let mut editor = Editor::new()
        .map_err(|e| Failure::new(Code::Other, format!("cannot start line editing: {e}")))?;
    editor.set_helper(Some(ShellHelper::default()));
    Ok(editor)
}

/// Whether `line` ends the session.
fn is_quit(line: &str) -> bool {
    matches!(line, "/quit" | "/exit" | "/q" | "quit" | "exit")
}

/// The calls running, oldest first: their number, what was typed, and how to abort them.
type Running = Arc<Mutex<Vec<(u64, String, tokio::task::AbortHandle)>>>;

/// Set when the shell ends on a signal: the reader must not read (and make the terminal raw)
/// again.
static STOP_READING: AtomicBool = AtomicBool::new(false);

/// Tells the reader to read no more lines: the process is about to exit on a signal, after
/// putting the terminal's modes back.
pub(crate) fn stop_reading() {
    STOP_READING.store(true, Ordering::SeqCst);
}

/// Answers waiting for a permission question, oldest first: where the answer goes, and
/// whether "always" may be answered.
type Pending = Arc<Mutex<VecDeque<(oneshot::Sender<Answer>, bool)>>>;

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Asks in the shell: prints the question and takes the next plain line typed as the answer.
struct ShellPrompter {
    pending: Pending,
    print: Sink,
    remembered: Remembered,
}

impl Prompter for ShellPrompter {
    fn confirm<'a>(
        &'a self,
        call: &'a CallRequest<'a>,
    ) -> Pin<Box<dyn Future<Output = bool> + Send + 'a>> {
        let question = live::question(call);
        Box::pin(async move {
            if self.remembered.allows(call) {
                return true;
            }
            let always = remember::offers_always(call);
            let (tx, rx) = oneshot::channel();
            lock(&self.pending).push_back((tx, always));
            let choices = if always {
                "type y, n or always"
            } else {
                "type y or n"
            };
            (self.print)(&format!("{question} {choices}"));
            match rx.await.unwrap_or(Answer::No) {
                Answer::Yes => true,
                Answer::No => false,
                Answer::Always => {
                    let kept = self.remembered.keep(call);
                    (self.print)(&crate::output::clean(&kept));
                    true
                }
            }
        })
    }
}

/// `mcp-host shell`.
pub(crate) async fn run(
    cx: &Context,
    out: &Out,
    yes: bool,
    mut editor: Editor,
) -> Result<(), Failure> {
    let history = cx.paths.global_dir().map(|d| d.join("shell_history"));
    if let Some(h) = &history {
        let _ = editor.load_history(h);
    }
    // Results arrive while a line may be being typed: they replace the prompt line, and the
    // prompt is drawn again below them. (rustyline's external printer is not used: with it,
    // input that arrives in one read, as a paste or a fast typist's does, waits unseen.)
    // The editor draws its prompt from its own thread: each text is written whole in one
    // write, not through standard output's line buffer (which writes the lines, then the
    // prompt after them, in two), so the editor's drawing never lands inside it (a hint line
    // was seen after the prompt drawn again).
    let reading = Arc::new(AtomicBool::new(false));
    let whole = std::io::stdout()
        .as_fd()
        .try_clone_to_owned()
        .map(std::fs::File::from)
        .ok();
    let printer: Sink = {
        let reading = reading.clone();
        Arc::new(move |text: &str| {
            use std::io::Write as _;
            let said = if reading.load(Ordering::SeqCst) {
                // The terminal is raw while a line is read: a newline needs its return.
                format!("\r\x1b[K{}\r\n{PROMPT}", text.replace('\n', "\r\n"))
            } else {
                format!("{text}\n")
            };
            let mut o = std::io::stdout().lock();
            let _ = o.flush();
            match &whole {
                Some(fd) => {
                    let _ = (&*fd).write_all(said.as_bytes());
                }
                None => {
                    let _ = o.write_all(said.as_bytes());
                    let _ = o.flush();
                }
            }
        })
    };
    let out = out.with_sink(printer.clone());
    let pending: Pending = Arc::default();
    let prompter: Arc<dyn Prompter> = Arc::new(ShellPrompter {
        pending: pending.clone(),
        print: printer.clone(),
        remembered: Remembered::new(cx),
    });
    let loaded = cx.load(ReadScope::Effective);
    manage::report_problems(&out, &loaded);
    let live = live::start(
        cx,
        &out,
        loaded,
        None,
        Setup {
            yes,
            prompter: Some(prompter),
            ..Setup::default()
        },
    )
    .await?;
    let host = live.host.clone();
    if let Some(helper) = editor.helper_mut() {
        helper.host = Some(host.clone());
    }
    live::show_statuses(&out, &host.status());
    out.text("type /help for the commands, /quit to leave");

    let (lines_tx, mut lines) = mpsc::unbounded_channel::<Option<String>>();
    // The reader reads the next line only when told to: after `/quit` it stops before
    // putting the terminal back into raw mode, and saves the history.
    let (go_tx, go) = std::sync::mpsc::channel::<bool>();
    let reader = std::thread::spawn(move || {
        loop {
            reading.store(true, Ordering::SeqCst);
            let read = editor.readline(PROMPT);
            reading.store(false, Ordering::SeqCst);
            match read {
                Ok(line) => {
                    if !line.trim().is_empty() {
                        let _ = editor.add_history_entry(line.as_str());
                    }
                    if lines_tx.send(Some(line)).is_err() || !go.recv().unwrap_or(false) {
                        break;
                    }
                }
                // A Ctrl-C typed (the line is cleared), or a SIGINT signal, which the editor
                // takes the same way once ours has run: then `main` is ending the process,
                // and reading again would make the terminal raw behind its back.
                Err(ReadlineError::Interrupted) => {
                    std::thread::sleep(Duration::from_millis(50));
                    if STOP_READING.load(Ordering::SeqCst) {
                        loop {
                            std::thread::park();
                        }
                    }
                    continue;
                }
                Err(_) => {
                    let _ = lines_tx.send(None);
                    break;
                }
            }
        }
        if let Some(h) = &history {
            if let Some(dir) = h.parent() {
                let _ = std::fs::create_dir_all(dir);
            }
            let _ = editor.save_history(h);
            // What was typed may include arguments meant for no one else.
            use std::os::unix::fs::PermissionsExt as _;
            let _ = std::fs::set_permissions(h, std::fs::Permissions::from_mode(0o600));
        }
        // Dropped, the editor would put back the SIGINT action it found when it was made (the
        // default, which ends the process without killing the servers) over ours.
        std::mem::forget(editor);
    });

    let mut tasks = tokio::task::JoinSet::new();
    let running: Running = Arc::default();
    let mut calls = 0u64;
    while let Some(Some(line)) = lines.recv().await {
        let line = line.trim().to_owned();
        if is_quit(&line) {
            break;
        }
        let _ = go_tx.send(true);
        if line.is_empty() {
            continue;
        }
        if !line.starts_with('/') {
            // The oldest question still waited for (a cancelled call's is gone).
            let waiting = {
                let mut pending = lock(&pending);
                loop {
                    match pending.pop_front() {
                        Some((tx, _)) if tx.is_closed() => continue,
                        other => break other,
                    }
                }
            };
            match waiting {
                Some((tx, always)) => {
                    let answer = match Answer::parse(&line) {
                        Answer::Always if !always => Answer::No,
                        answer => answer,
                    };
                    let _ = tx.send(answer);
                }
                None => out.note("commands start with `/`; type /help"),
            }
            continue;
        }
        if line == "/cancel" {
            cancel(&out, &running);
            continue;
        }
        if let Some(job) = command(cx, &out, &host, &line) {
            if line.starts_with("/call") {
                calls += 1;
                let n = calls;
                let done = running.clone();
                let handle = tasks.spawn(async move {
                    job.await;
                    lock(&done).retain(|(m, _, _)| *m != n);
                });
                lock(&running).push((n, line.clone(), handle));
            } else {
                tasks.spawn(job);
            }
        }
        // Forget finished tasks.
        while tasks.try_join_next().is_some() {}
    }
    tasks.abort_all();
    // Unanswered questions are refusals.
    lock(&pending).clear();
    live::finish(&host).await;
    let _ = go_tx.send(false);
    drop(lines);
    let _ = tokio::task::spawn_blocking(move || reader.join()).await;
    Ok(())
}

/// `/cancel`: aborts the call started last that still runs. Its call future is dropped, so
/// the host sends the server `notifications/cancelled` and forgets the late answer.
fn cancel(out: &Out, running: &Running) {
    let last = lock(running).pop();
    match last {
        Some((_, typed, handle)) => {
            handle.abort();
            let left = lock(running).len();
            let more = match left {
                0 => String::new(),
                n => format!("; {n} more still running"),
            };
            out.text(&format!(
                "cancelled: {}{more}",
                crate::output::cell(&typed, 80)
            ));
        }
        None => out.note("no call is running"),
    }
}

/// Runs the quick commands now; returns the slow ones as a task.
fn command(
    cx: &Context,
    out: &Out,
    host: &Host,
    line: &str,
) -> Option<Pin<Box<dyn Future<Output = ()> + Send>>> {
    let (head, rest) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
    let rest = rest.trim();
    let words: Vec<&str> = rest.split_whitespace().collect();
    let out = out.clone();
    let host = host.clone();
    let report = move |out: &Out, r: Result<(), Failure>| {
        if let Err(f) = r {
            out.failure(&f);
        }
    };
    match head {
        "/mcp" => {
            match words.first() {
                None => live::show_statuses(&out, &host.status()),
                Some(id) => match host.server_status(id) {
                    Some(s) => live::show_detail(&out, &s),
                    None => {
                        out.failure(&Failure::config(format!("no server `{id}` is configured")))
                    }
                },
            }
            None
        }
        "/tools" => {
            let r = live::show_tools(&out, &host, words.first().copied());
            report(&out, r);
            None
        }
        "/help" => {
            out.text(HELP);
            None
        }
        "/call" => {
            // The JSON may hold spaces of its own: only the first two words are split off.
            let Some((id, after)) = word(rest) else {
                out.failure(&Failure::usage("usage: /call ID TOOL [JSON]"));
                return None;
            };
            let Some((tool, json)) = word(after) else {
                out.failure(&Failure::usage("usage: /call ID TOOL [JSON]"));
                return None;
            };
            let args = match live::parse_shell_args(Some(json.trim()).filter(|s| !s.is_empty())) {
                Ok(a) => a,
                Err(f) => {
                    out.failure(&f);
                    return None;
                }
            };
            let (id, tool) = (id.to_owned(), tool.to_owned());
            Some(Box::pin(async move {
                let r = live::call_on(&out, &host, &id, &tool, args, None).await;
                report(&out, r);
            }))
        }
        "/read" => {
            let [id, uri] = words[..] else {
                out.failure(&Failure::usage("usage: /read ID URI"));
                return None;
            };
            let (id, uri) = (id.to_owned(), uri.to_owned());
            Some(Box::pin(async move {
                let r = live::read_on(&out, &host, &id, &uri).await;
                report(&out, r);
            }))
        }
        "/get" => {
            let [id, prompt, ref args @ ..] = words[..] else {
                out.failure(&Failure::usage("usage: /get ID PROMPT [NAME=VALUE]..."));
                return None;
            };
            let mut map = BTreeMap::new();
            for a in args {
                let Some((k, v)) = a.split_once('=') else {
                    out.failure(&Failure::usage("prompt arguments are NAME=VALUE"));
                    return None;
                };
                map.insert(k.to_owned(), v.to_owned());
            }
            let (id, prompt) = (id.to_owned(), prompt.to_owned());
            Some(Box::pin(async move {
                let r = live::get_on(&out, &host, &id, &prompt, map).await;
                report(&out, r);
            }))
        }
        "/resources" => {
            let id = words.first().map(|s| (*s).to_owned());
            Some(Box::pin(async move {
                let r = live::show_resources(&out, &host, id.as_deref()).await;
                report(&out, r);
            }))
        }
        "/prompts" => {
            let id = words.first().map(|s| (*s).to_owned());
            Some(Box::pin(async move {
                let r = live::show_prompts(&out, &host, id.as_deref()).await;
                report(&out, r);
            }))
        }
        "/reload" => {
            let cx = cx.clone();
            Some(Box::pin(async move {
                let loaded = cx.load(ReadScope::Effective);
                manage::report_problems(&out, &loaded);
                // No question here: the line belongs to the shell. A project server nobody
                // approved stays in `error` and says how to approve it.
                match live::oauth(&cx).and_then(|o| Ok((o, trust::approvals(&cx)?))) {
                    Ok((oauth, approvals)) => {
                        host.reload(setup::entries(&loaded, Some(&oauth), &approvals))
                            .await;
                        live::show_statuses(&out, &host.status());
                    }
                    Err(f) => out.failure(&f),
                }
            }))
        }
        other => {
            out.failure(
                &Failure::usage(format!(
                    "unknown command `{}`",
                    crate::output::cell(other, 40)
                ))
                .hint("type /help"),
            );
            None
        }
    }
}

/// The first word of `text` and what follows it, however many spaces separate them.
fn word(text: &str) -> Option<(&str, &str)> {
    let text = text.trim_start();
    if text.is_empty() {
        return None;
    }
    Some(text.split_once(char::is_whitespace).unwrap_or((text, "")))
}
