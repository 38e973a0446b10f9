//! Server-Sent Events, hand-written and I/O-free: the decoder of the WHATWG event-stream format
//! (<https://html.spec.whatwg.org/multipage/server-sent-events.html#event-stream-interpretation>)
//! and the encoder the server side uses.
//!
//! Bytes go in with [`Decoder::push`]; events come out of [`Decoder::next_event`]. The decoder
//! keeps the stream's last event id and reconnection time (`retry`), which outlive any one
//! event: they are what a client needs to resume with `Last-Event-ID` after the stream drops.
//! Memory is bounded: an event (or a line) larger than the limit is skipped and reported as
//! [`Error::TooLarge`], and the stream goes on.

#[cfg(test)]
mod tests;

use std::fmt;
use std::io::Write as _;

/// How many bytes of an oversized event's data are kept to report it.
const HEAD: usize = 256;

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// The `event` field, `message` when absent.
    pub event: String,
    /// The `data` lines joined by `\n`; empty for a priming event (`data:` with nothing).
    pub data: String,
    /// The stream's last event id when this event was dispatched.
    pub id: Option<String>,
}

/// A part of the stream that could not become an event.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// An event or a line went past the limit; it was skipped.
    TooLarge {
        /// The limit in bytes.
        limit: usize,
        /// The first bytes of its data, to tell which request it answered.
        head: Vec<u8>,
    },
    /// The `data` of an event was not UTF-8; the event was skipped.
    InvalidUtf8,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::TooLarge { limit, .. } => write!(
                f,
                "an SSE event was larger than {limit} bytes and was skipped"
            ),
            Self::InvalidUtf8 => f.write_str("an SSE event was not valid UTF-8 and was skipped"),
        }
    }
}

impl std::error::Error for Error {}

/// The SSE decoder.
#[derive(Debug)]
pub struct Decoder {
    /// Bytes of the current, unfinished line.
    line: Vec<u8>,
    /// Set after a `\r`: a `\n` right after it belongs to the same line end.
    after_cr: bool,
    /// The first bytes, held until it is known whether they are a BOM (which may arrive split
    /// across chunks); `None` once decided.
    start: Option<Vec<u8>>,
    /// Set while skipping the rest of an oversized line.
    skipping_line: bool,
    max: usize,
    data: Vec<u8>,
    /// Whether a `data` field was seen in the current event.
    has_data: bool,
    event: Option<String>,
    /// Set when the current event went over the limit: it is dropped at dispatch.
    oversized: bool,
    /// The first bytes of the oversized event's data.
    oversize_head: Vec<u8>,
    /// The id the stream has committed: set at each dispatch from `id_buffer`.
    last_id: Option<String>,
    /// The WHATWG "last event ID buffer": set by `id` fields, committed at the blank line, so
    /// that a stream cut in the middle of an event does not resume past it.
    id_buffer: Option<String>,
    retry: Option<u64>,
    ready: std::collections::VecDeque<Result<Event, Error>>,
}

impl Decoder {
    /// A decoder that accepts events of up to `max_event_bytes` bytes of data.
    pub fn new(max_event_bytes: usize) -> Self {
        Self {
            line: Vec::new(),
            after_cr: false,
            start: Some(Vec::new()),
            skipping_line: false,
            max: max_event_bytes,
            data: Vec::new(),
            has_data: false,
            event: None,
            oversized: false,
            oversize_head: Vec::new(),
            last_id: None,
            id_buffer: None,
            retry: None,
            ready: std::collections::VecDeque::new(),
        }
    }

    /// A decoder that resumes a stream: `Last-Event-ID` and the known reconnection time carry
    /// over.
    pub fn resuming(max_event_bytes: usize, last_id: Option<String>, retry: Option<u64>) -> Self {
        let mut d = Self::new(max_event_bytes);
        d.id_buffer = last_id.clone();
        d.last_id = last_id;
        d.retry = retry;
        d
    }

    /// The stream's last event id: what `Last-Event-ID` carries on reconnection.
    pub fn last_event_id(&self) -> Option<&str> {
        self.last_id.as_deref()
    }

    /// The reconnection time the server asked for with `retry`, in milliseconds.
    pub fn retry_ms(&self) -> Option<u64> {
        self.retry
    }

    /// Feeds bytes from the stream.
    pub fn push(&mut self, bytes: &[u8]) {
        match self.start.take() {
            None => self.feed(bytes),
            Some(mut start) => {
                start.extend_from_slice(bytes);
                match strip_bom(&start) {
                    Some(rest) => self.feed(rest),
                    None => self.start = Some(start),
                }
            }
        }
    }

    /// Splits the bytes at line ends, a run of ordinary bytes at a time.
    fn feed(&mut self, mut bytes: &[u8]) {
        while let Some(&first) = bytes.first() {
            if self.after_cr {
                self.after_cr = false;
                if first == b'\n' {
                    bytes = &bytes[1..];
                    continue;
                }
            }
            match bytes.iter().position(|&b| b == b'\n' || b == b'\r') {
                None => {
                    self.append(bytes);
                    return;
                }
                Some(i) => {
                    self.append(&bytes[..i]);
                    self.after_cr = bytes[i] == b'\r';
                    bytes = &bytes[i + 1..];
                    self.end_line();
                }
            }
        }
    }

    /// Adds bytes to the current line, up to the limit; past it the line is skipped.
    fn append(&mut self, segment: &[u8]) {
        if self.skipping_line || segment.is_empty() {
            return;
        }
        // A field name and separator take a few bytes beyond the data itself.
        let room = (self.max + 16).saturating_sub(self.line.len());
        if segment.len() <= room {
            self.line.extend_from_slice(segment);
            return;
        }
        self.line.extend_from_slice(&segment[..room]);
        if !self.oversized {
            let value = self.line.strip_prefix(b"data:").unwrap_or(&self.line);
            let value = value.strip_prefix(b" ").unwrap_or(value);
            self.oversize_head = [&self.data[..], value].concat();
            self.oversize_head.truncate(HEAD);
        }
        self.skipping_line = true;
        self.oversized = true;
        self.line.clear();
    }

    /// The next complete event, or an event that had to be skipped.
    pub fn next_event(&mut self) -> Option<Result<Event, Error>> {
        self.ready.pop_front()
    }

    fn end_line(&mut self) {
        if self.skipping_line {
            self.skipping_line = false;
            return;
        }
        let line = std::mem::take(&mut self.line);
        if line.is_empty() {
            self.dispatch();
        } else {
            self.field(&line);
        }
        self.line = line;
        self.line.clear();
    }

    fn field(&mut self, line: &[u8]) {
        if line[0] == b':' {
            return;
        }
        let (name, value) = match line.iter().position(|&b| b == b':') {
            Some(i) => {
                let value = &line[i + 1..];
                (&line[..i], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &[][..]),
        };
        match name {
            b"data" => {
                if self.data.len() + value.len() + 1 > self.max {
                    if !self.oversized {
                        self.oversize_head = [&self.data[..], value].concat();
                        self.oversize_head.truncate(HEAD);
                    }
                    self.oversized = true;
                    self.data.clear();
                } else if !self.oversized {
                    self.data.extend_from_slice(value);
                    self.data.push(b'\n');
                }
                self.has_data = true;
            }
            b"event" => self.event = Some(String::from_utf8_lossy(value).into_owned()),
            // An id holding NUL is ignored, as the standard says.
            b"id" if !value.contains(&0) => {
                self.id_buffer = Some(String::from_utf8_lossy(value).into_owned());
            }
            // A retry that is not all digits is ignored.
            b"retry" if !value.is_empty() && value.iter().all(u8::is_ascii_digit) => {
                self.retry = std::str::from_utf8(value).ok().and_then(|v| v.parse().ok());
            }
            _ => {}
        }
    }

    fn dispatch(&mut self) {
        self.last_id.clone_from(&self.id_buffer);
        let event = self.event.take();
        let has_data = std::mem::take(&mut self.has_data);
        let mut data = std::mem::take(&mut self.data);
        if std::mem::take(&mut self.oversized) {
            let head = std::mem::take(&mut self.oversize_head);
            self.ready.push_back(Err(Error::TooLarge {
                limit: self.max,
                head,
            }));
            return;
        }
        if !has_data {
            // No data field: nothing is dispatched, but the last event id is committed.
            return;
        }
        if data.last() == Some(&b'\n') {
            data.pop();
        }
        match String::from_utf8(data) {
            Ok(data) => self.ready.push_back(Ok(Event {
                event: event
                    .filter(|e| !e.is_empty())
                    .unwrap_or_else(|| "message".to_owned()),
                data,
                id: self.last_id.clone(),
            })),
            Err(_) => self.ready.push_back(Err(Error::InvalidUtf8)),
        }
    }
}

/// The stream after its BOM, or `None` while the first bytes could still be one.
fn strip_bom(start: &[u8]) -> Option<&[u8]> {
    const BOM: &[u8] = b"\xEF\xBB\xBF";
    if start.len() < BOM.len() && BOM.starts_with(start) {
        return None;
    }
    Some(start.strip_prefix(BOM).unwrap_or(start))
}

/// Appends one event. `data` may hold newlines: each line becomes its own `data:` field.
pub fn encode_event(out: &mut Vec<u8>, event: Option<&str>, id: Option<&str>, data: &str) {
    encode_head(out, event, id);
    // Every line end in the data (LF, CRLF or CR) starts a new `data:` field.
    let mut rest = data;
    loop {
        let end = rest.find(['\n', '\r']).unwrap_or(rest.len());
        out.extend_from_slice(b"data: ");
        out.extend_from_slice(&rest.as_bytes()[..end]);
        out.push(b'\n');
        if end == rest.len() {
            break;
        }
        let skip = if rest[end..].starts_with("\r\n") {
            2
        } else {
            1
        };
        rest = &rest[end + skip..];
    }
    out.push(b'\n');
}

/// The `event:` and `id:` lines of an event.
fn encode_head(out: &mut Vec<u8>, event: Option<&str>, id: Option<&str>) {
    if let Some(e) = event {
        out.extend_from_slice(b"event: ");
        out.extend_from_slice(single_line(e).as_bytes());
        out.push(b'\n');
    }
    if let Some(id) = id {
        out.extend_from_slice(b"id: ");
        out.extend_from_slice(single_line(id).as_bytes());
        out.push(b'\n');
    }
}

/// Appends one event whose data `write` appends to `out`, as [`encode_event`] would frame it.
///
/// The data is written where it goes, after `data: `, with no copy: a JSON message is one line
/// (an encoder escapes every line break), so it is only looked through for a raw line break,
/// which a peer's verbatim payload may hold between tokens; then, and only then, the event is
/// framed again line by line. Only the server writes events this way.
#[cfg(any(feature = "server", test))]
pub(crate) fn encode_event_in_place(
    out: &mut Vec<u8>,
    event: Option<&str>,
    id: Option<&str>,
    write: impl FnOnce(&mut Vec<u8>),
) {
    let head = out.len();
    encode_head(out, event, id);
    out.extend_from_slice(b"data: ");
    let start = out.len();
    write(out);
    if !has_line_break(&out[start..]) {
        out.extend_from_slice(b"\n\n");
        return;
    }
    let data = out.split_off(start);
    out.truncate(head);
    encode_event(out, event, id, &String::from_utf8_lossy(&data));
}

/// Whether `bytes` holds a CR or an LF. Each 64-byte chunk is folded with no early exit, which
/// the compiler turns into vector compares.
#[cfg(any(feature = "server", test))]
fn has_line_break(bytes: &[u8]) -> bool {
    bytes.chunks(64).any(|chunk| {
        chunk
            .iter()
            .fold(false, |seen, &b| seen | (b == b'\n') | (b == b'\r'))
    })
}

/// Appends a priming event: an id with empty data, so that the client can resume from it.
pub fn encode_priming(out: &mut Vec<u8>, id: &str, retry_ms: Option<u64>) {
    if let Some(ms) = retry_ms {
        // Written in place: a priming event leads every answer's stream, and a `format!` was
        // an allocation per call.
        let _ = writeln!(out, "retry: {ms}");
    }
    out.extend_from_slice(b"id: ");
    out.extend_from_slice(single_line(id).as_bytes());
    out.extend_from_slice(b"\ndata:\n\n");
}

/// Appends a comment line, which keeps an idle connection alive and is never dispatched.
pub fn encode_comment(out: &mut Vec<u8>, text: &str) {
    out.push(b':');
    out.extend_from_slice(single_line(text).as_bytes());
    out.push(b'\n');
}

/// Field values other than data cannot hold line ends.
fn single_line(s: &str) -> std::borrow::Cow<'_, str> {
    if s.contains(['\n', '\r']) {
        std::borrow::Cow::Owned(s.replace(['\n', '\r'], " "))
    } else {
        std::borrow::Cow::Borrowed(s)
    }
}
