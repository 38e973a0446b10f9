//! What the user sees: aligned tables or JSON on stdout, notes and errors on stderr, a spinner
//! on slow work when stderr is a terminal. Every string a server wrote goes through [`clean`]
//! first, so a server cannot move the cursor, retitle the terminal or hide a line.

use std::io::{IsTerminal as _, Write as _};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde_json::{Value, json};

use crate::exit::Failure;

/// Whether a person can be asked: stdin and stderr are terminals.
pub(crate) fn can_ask() -> bool {
    std::io::stdin().is_terminal() && std::io::stderr().is_terminal()
}

/// Asks `question` on stderr and reads the answer from stdin, off the runtime's threads: only
/// `y` or `yes`, in any case, is a yes; an unreadable answer is a no.
pub(crate) async fn ask(question: String) -> bool {
    let answer = ask_line(question).await;
    matches!(answer.trim().to_ascii_lowercase().as_str(), "y" | "yes")
}

/// Asks `question` on stderr and reads the line typed on stdin, off the runtime's threads; an
/// unreadable answer is an empty line.
pub(crate) async fn ask_line(question: String) -> String {
    tokio::task::spawn_blocking(move || {
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "{question}");
        let _ = err.flush();
        drop(err);
        let mut answer = String::new();
        if std::io::stdin().read_line(&mut answer).is_err() {
            return String::new();
        }
        answer
    })
    .await
    .unwrap_or_default()
}

/// Where a line goes instead of stdout and stderr: the shell prints above its prompt.
pub(crate) type Sink = Arc<dyn Fn(&str) + Send + Sync>;

/// Where output goes, and in which shape.
#[derive(Clone)]
pub(crate) struct Out {
    json: bool,
    sink: Option<Sink>,
    /// Whether a JSON document went to stdout: a command prints one, so a failure after it
    /// (a tool's `isError`, a failed `test`, a `list` with problems) adds no second one.
    printed: Arc<AtomicBool>,
}

impl std::fmt::Debug for Out {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Out")
            .field("json", &self.json)
            .finish_non_exhaustive()
    }
}

impl Out {
    pub(crate) fn new(json: bool) -> Self {
        Self {
            json,
            sink: None,
            printed: Arc::default(),
        }
    }

    /// Output that goes to `sink`, stdout's and stderr's alike.
    pub(crate) fn with_sink(&self, sink: Sink) -> Self {
        Self {
            json: self.json,
            sink: Some(sink),
            printed: Arc::default(),
        }
    }

    fn emit(&self, text: &str, to_stderr: bool) {
        if let Some(sink) = &self.sink {
            sink(text);
        } else if to_stderr {
            let mut err = std::io::stderr().lock();
            let _ = writeln!(err, "{text}");
        } else {
            stdout(text);
        }
    }

    /// Whether output goes straight to the terminal (not to a shell's sink), where a
    /// progress line may be drawn.
    pub(crate) fn is_direct(&self) -> bool {
        self.sink.is_none()
    }

    /// Whether `--json` was given.
    pub(crate) fn is_json(&self) -> bool {
        self.json
    }

    /// One JSON document on stdout.
    pub(crate) fn json(&self, value: &Value) {
        let text = serde_json::to_string_pretty(value).unwrap_or_else(|_| "null".to_owned());
        self.printed.store(true, Ordering::SeqCst);
        self.emit(&text, false);
    }

    /// Human output on stdout (nothing under `--json`).
    pub(crate) fn text(&self, text: &str) {
        if !self.json {
            self.emit(text, false);
        }
    }

    /// A note for the person, on stderr (shown under `--json` too: stdout stays parseable).
    /// Cleaned: notes quote configuration files, whose ids and field names may be anything.
    pub(crate) fn note(&self, text: &str) {
        self.emit(&clean(text), true);
    }

    /// The failure on stderr; under `--json` also as `{"error": …}` on stdout, unless the
    /// command already printed its document there (one document per command).
    pub(crate) fn failure(&self, failure: &Failure) {
        let mut text = format!("mcp-host: error: {}", clean(&failure.message));
        if let Some(hint) = &failure.hint {
            text.push_str(&format!("\n  hint: {}", clean(hint)));
        }
        self.emit(&text, true);
        let printed = self.is_direct() && self.printed.load(Ordering::SeqCst);
        if self.json && !printed {
            self.json(&json!({
                "error": {
                    "kind": failure.code.as_str(),
                    "exit_code": failure.code.exit_code(),
                    "message": clean(&failure.message),
                    "hint": failure.hint.as_deref().map(clean),
                }
            }));
        }
    }
}

/// Writes a line to stdout; a closed stdout (`| head`) is not an error worth a message.
fn stdout(text: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{text}");
    let _ = out.flush();
}

/// Server text made safe for a terminal: escapes and control characters removed (newlines
/// and tabs kept), at most 64 KiB.
pub(crate) fn clean(text: &str) -> String {
    mcp_host::catalog::clean_text(text, 64 << 10)
}

/// Server text for one table cell: cleaned, on one line, at most `max` characters.
pub(crate) fn cell(text: &str, max: usize) -> String {
    let one_line: String = clean(text).split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.chars().count() > max {
        let cut: String = one_line.chars().take(max.saturating_sub(1)).collect();
        format!("{cut}…")
    } else {
        one_line
    }
}

/// An aligned table: a header row, then rows; every column but the last is padded.
#[derive(Debug)]
pub(crate) struct Table {
    rows: Vec<Vec<String>>,
}

impl Table {
    pub(crate) fn new(header: &[&str]) -> Self {
        Self {
            rows: vec![header.iter().map(|h| (*h).to_owned()).collect()],
        }
    }

    /// Adds a row; cells are expected clean (see [`cell`]).
    pub(crate) fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    pub(crate) fn render(&self) -> String {
        let columns = self.rows.iter().map(Vec::len).max().unwrap_or(0);
        let widths: Vec<usize> = (0..columns)
            .map(|c| {
                self.rows
                    .iter()
                    .filter_map(|r| r.get(c))
                    .map(|s| s.chars().count())
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let mut out = String::new();
        for row in &self.rows {
            let mut line = String::new();
            for (c, text) in row.iter().enumerate() {
                if c + 1 < row.len() {
                    let pad = widths[c] - text.chars().count();
                    line.push_str(text);
                    line.push_str(&" ".repeat(pad + 2));
                } else {
                    line.push_str(text);
                }
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
        out.pop();
        out
    }
}

/// A spinner with a status line on stderr, only when stderr is a terminal: progress on slow
/// work (connecting, waiting for a browser) without polluting logs or pipes.
pub(crate) struct Spinner {
    done: Arc<AtomicBool>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl Spinner {
    /// Starts a spinner whose line is `status()`, redrawn ten times a second.
    pub(crate) fn start(status: impl Fn() -> String + Send + 'static) -> Self {
        let done = Arc::new(AtomicBool::new(false));
        if !std::io::stderr().is_terminal() {
            return Self { done, task: None };
        }
        let flag = done.clone();
        let task = tokio::spawn(async move {
            const FRAMES: [char; 10] = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
            let mut i = 0;
            while !flag.load(Ordering::SeqCst) {
                let line = status();
                {
                    let mut err = std::io::stderr().lock();
                    let _ = write!(err, "\r{} {}\x1b[K", FRAMES[i % FRAMES.len()], line);
                    let _ = err.flush();
                }
                i += 1;
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        });
        Self {
            done,
            task: Some(task),
        }
    }

    /// Stops and erases the line.
    pub(crate) async fn stop(mut self) {
        self.done.store(true, Ordering::SeqCst);
        if let Some(task) = self.task.take() {
            let _ = task.await;
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r\x1b[K");
            let _ = err.flush();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_align_and_cells_are_clean() {
        let mut t = Table::new(&["ID", "STATE"]);
        t.row(vec![cell("a\x1b[31mred\x1b[0m", 20), "ready".into()]);
        t.row(vec![
            cell("long\nname\x07", 20),
            cell("x".repeat(30).as_str(), 10),
        ]);
        assert_eq!(
            t.render(),
            "ID         STATE\nared       ready\nlong name  xxxxxxxxx…"
        );
    }
}
