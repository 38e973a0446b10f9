//! A server's stderr as log lines: each line becomes a `tracing` event at info, target
//! `mcp_stdio::stderr`, with the server's name in the field `server`, so that a host's log
//! shows what its servers say. A noisy server cannot flood that log:
//!
//! - a line is shown up to [`MAX_SHOWN`] bytes, the rest cut and counted (`[N bytes cut]`);
//!   up to [`MAX_HELD`] bytes of it are read before it is cut, so that no secret is cut in
//!   two where it would still show;
//! - at most [`PER_SECOND`] lines of one server are logged in any one second (windows that
//!   start at a logged line); the others are dropped and counted, and the count is logged at
//!   warn with the next line that is logged, or when stderr ends;
//! - blank lines are skipped.
//!
//! Every line is redacted of the server's secrets before it is shown, and its control
//! characters (a terminal's escape sequences) are replaced. What is dropped here still reaches
//! the tail kept for error messages (`StderrLog`), which has its own bound.

use std::time::{Duration, Instant};

use mcp_protocol::Secrets;

/// The most of one line shown in the log, in bytes.
pub(crate) const MAX_SHOWN: usize = 2 << 10;
/// The most of one line read before it is cut: far more than is shown, so that a secret
/// across the cut is not partly in what is shown.
pub(crate) const MAX_HELD: usize = 64 << 10;
/// The most lines of one server logged in one second.
pub(crate) const PER_SECOND: u32 = 100;

/// What the log is told.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Out {
    /// One line, redacted and bounded.
    Line(String),
    /// This many lines were not logged (over [`PER_SECOND`]).
    Dropped(u64),
}

/// Cuts a byte stream into lines and decides which are logged.
pub(crate) struct Lines {
    secrets: Secrets,
    /// The line being read, up to [`MAX_HELD`] bytes.
    line: Vec<u8>,
    /// Bytes of the current line past [`MAX_HELD`], not kept.
    beyond: usize,
    window: Option<Instant>,
    in_window: u32,
    dropped: u64,
}

impl Lines {
    pub(crate) fn new(secrets: Secrets) -> Self {
        Self {
            secrets,
            line: Vec::new(),
            beyond: 0,
            window: None,
            in_window: 0,
            dropped: 0,
        }
    }

    /// Reads `chunk`, which arrived at `now`; returns what to log.
    pub(crate) fn feed(&mut self, chunk: &[u8], now: Instant) -> Vec<Out> {
        let mut out = Vec::new();
        let mut rest = chunk;
        while !rest.is_empty() {
            let (part, ended) = match rest.iter().position(|&b| b == b'\n') {
                Some(i) => (&rest[..i], Some(i + 1)),
                None => (rest, None),
            };
            let room = MAX_HELD - self.line.len();
            let kept = part.len().min(room);
            self.line.extend_from_slice(&part[..kept]);
            self.beyond += part.len() - kept;
            match ended {
                Some(next) => {
                    self.end_line(now, &mut out);
                    rest = &rest[next..];
                }
                None => break,
            }
        }
        out
    }

    /// Stderr ended at `now`: the last line if it had no newline, and what was dropped.
    pub(crate) fn finish(&mut self, now: Instant) -> Vec<Out> {
        let mut out = Vec::new();
        self.end_line(now, &mut out);
        if self.dropped > 0 {
            out.push(Out::Dropped(std::mem::take(&mut self.dropped)));
        }
        out
    }

    fn end_line(&mut self, now: Instant, out: &mut Vec<Out>) {
        let raw = std::mem::take(&mut self.line);
        let beyond = std::mem::take(&mut self.beyond);
        if raw.iter().all(u8::is_ascii_whitespace) && beyond == 0 {
            return;
        }
        if !self.admit(now, out) {
            return;
        }
        let raw = raw.strip_suffix(b"\r").unwrap_or(&raw);
        let text = self.secrets.redact(&String::from_utf8_lossy(raw));
        let mut shown: String = text
            .chars()
            .map(|c| {
                if c.is_control() && c != '\t' {
                    '\u{fffd}'
                } else {
                    c
                }
            })
            .collect();
        let mut cut = beyond;
        if shown.len() > MAX_SHOWN {
            let mut at = MAX_SHOWN;
            while !shown.is_char_boundary(at) {
                at -= 1;
            }
            cut += shown.len() - at;
            shown.truncate(at);
        }
        if cut > 0 {
            shown.push_str(&format!(" [{cut} bytes cut]"));
        }
        out.push(Out::Line(shown));
    }

    /// Whether a line at `now` is logged; a new window first reports what the last dropped.
    fn admit(&mut self, now: Instant, out: &mut Vec<Out>) -> bool {
        let fresh = self
            .window
            .is_none_or(|start| now.duration_since(start) >= Duration::from_secs(1));
        if fresh {
            self.window = Some(now);
            self.in_window = 0;
            if self.dropped > 0 {
                out.push(Out::Dropped(std::mem::take(&mut self.dropped)));
            }
        }
        if self.in_window < PER_SECOND {
            self.in_window += 1;
            true
        } else {
            self.dropped += 1;
            false
        }
    }
}

/// Logs what [`Lines`] decided, for the server `server`.
pub(crate) fn log(server: &str, out: Vec<Out>) {
    for item in out {
        match item {
            Out::Line(line) => tracing::info!(target: "mcp_stdio::stderr", server, "{line}"),
            Out::Dropped(n) => tracing::warn!(
                target: "mcp_stdio::stderr",
                server,
                dropped = n,
                "{n} lines of stderr not logged (over {PER_SECOND} a second)"
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(out: &[Out]) -> Vec<&str> {
        out.iter()
            .filter_map(|o| match o {
                Out::Line(l) => Some(l.as_str()),
                Out::Dropped(_) => None,
            })
            .collect()
    }

    #[test]
    fn lines_are_split_across_chunks_redacted_and_cleaned() {
        let mut l = Lines::new(Secrets::new(["hunter22".to_owned()]));
        let t = Instant::now();
        let mut out = l.feed(b"first\r\nsecond with hun", t);
        out.extend(l.feed(b"ter22 in it\n\n   \nthird \x1b[31mred\x1b[0m", t));
        out.extend(l.finish(t));
        assert_eq!(
            lines(&out),
            [
                "first",
                "second with [redacted] in it",
                "third \u{fffd}[31mred\u{fffd}[0m"
            ]
        );
    }

    #[test]
    fn a_long_line_is_cut_and_says_how_much() {
        let mut l = Lines::new(Secrets::default());
        let t = Instant::now();
        let long = vec![b'x'; MAX_HELD + 1000];
        let mut out = l.feed(&long, t);
        out.extend(l.feed(b"\nnext\n", t));
        let shown = lines(&out);
        assert_eq!(shown.len(), 2, "{shown:?}");
        let cut = MAX_HELD + 1000 - MAX_SHOWN;
        assert_eq!(
            shown[0],
            format!("{} [{cut} bytes cut]", "x".repeat(MAX_SHOWN))
        );
        assert_eq!(shown[1], "next");
    }

    #[test]
    fn past_the_rate_lines_are_dropped_and_counted() {
        let mut l = Lines::new(Secrets::default());
        let t = Instant::now();
        let burst: Vec<u8> = (0..PER_SECOND + 50)
            .flat_map(|i| format!("line {i}\n").into_bytes())
            .collect();
        let out = l.feed(&burst, t);
        assert_eq!(lines(&out).len(), PER_SECOND as usize);
        assert!(!out.iter().any(|o| matches!(o, Out::Dropped(_))));
        // Still the same second: dropped.
        let out = l.feed(b"late\n", t + Duration::from_millis(999));
        assert!(out.is_empty(), "{out:?}");
        // A new second: the count first, then the line.
        let out = l.feed(b"next second\n", t + Duration::from_secs(1));
        assert_eq!(out, [Out::Dropped(51), Out::Line("next second".to_owned())]);
        let burst: Vec<u8> = (0..PER_SECOND + 3)
            .flat_map(|i| format!("again {i}\n").into_bytes())
            .collect();
        let _ = l.feed(&burst, t + Duration::from_secs(1));
        assert_eq!(l.finish(t + Duration::from_secs(1)), [Out::Dropped(4)]);
    }
}
