//! Newline-delimited JSON framing, without I/O (spec `basic/transports.mdx#stdio`).
//!
//! Bytes go in with [`LineDecoder::push`], or are read straight into the decoder's buffer
//! ([`LineDecoder::read_buffer`], then [`LineDecoder::appended`]); complete lines come out of
//! [`LineDecoder::next_line`]. A line that fills most of the buffer leaves in the buffer
//! itself, not in a copy: a 1 MiB answer is copied by no one between the read and the decoder. A line longer than the limit is never buffered whole: its first
//! bytes are kept for diagnosis, the rest is skipped up to the next newline, and the stream
//! goes on. A peer that never sends a newline therefore costs at most the limit in memory.

#[cfg(test)]
mod tests;

/// How many bytes of an oversized line are kept, to report it and to find its request id.
pub const OVERSIZE_HEAD: usize = 256;

/// From this length on, a line that is at least as long as what follows it in the buffer
/// leaves in the buffer itself (what follows is copied into a new one instead). Shorter lines
/// are copied out: cheaper than a new buffer for what follows, which may be many lines.
const HAND_OVER: usize = 4 << 10;

/// A UTF-8 byte order mark.
const BOM: &[u8] = b"\xEF\xBB\xBF";

/// One item out of the decoder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Line {
    /// A complete line without its line end (`\n` or `\r\n`); empty lines are skipped.
    Frame(Vec<u8>),
    /// A line over the limit, discarded.
    Oversize {
        /// The first [`OVERSIZE_HEAD`] bytes of the line.
        head: Vec<u8>,
        /// The line's full length in bytes, without its line end.
        len: usize,
    },
}

/// An oversized line being skipped: its head, the bytes seen so far (line end excluded), and
/// whether the last of them was a `\r` that may turn out to be half of a `\r\n`.
#[derive(Debug)]
struct Skip {
    head: Vec<u8>,
    len: usize,
    trailing_cr: bool,
}

/// Splits a byte stream into lines of at most `max_len` bytes.
#[derive(Debug)]
pub struct LineDecoder {
    buf: Vec<u8>,
    /// Where the next scan for a newline starts (bytes before it hold none).
    scanned: usize,
    max_len: usize,
    /// Set while skipping the rest of an oversized line.
    skipping: Option<Skip>,
    /// Whether it is still undecided if the stream starts with a UTF-8 BOM (which may arrive
    /// split across reads); meanwhile `buf` holds only a prefix of one.
    bom_pending: bool,
}

impl LineDecoder {
    /// A decoder that accepts lines of up to `max_len` bytes.
    pub fn new(max_len: usize) -> Self {
        Self {
            buf: Vec::new(),
            scanned: 0,
            max_len,
            skipping: None,
            bom_pending: true,
        }
    }

    /// Appends bytes read from the stream.
    pub fn push(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
        self.appended();
    }

    /// The buffer, with room for at least `room` more bytes, for a read that appends to it
    /// in place (tokio's `AsyncReadExt::read_buf`, say) and so saves the copy [`push`]
    /// makes. Append only; then call [`appended`](Self::appended).
    ///
    /// [`push`]: Self::push
    pub fn read_buffer(&mut self, room: usize) -> &mut Vec<u8> {
        self.buf.reserve(room);
        &mut self.buf
    }

    /// Takes in what was appended to [`read_buffer`](Self::read_buffer).
    pub fn appended(&mut self) {
        // Only appending was asked for; anything else is treated as a new start of the scan.
        self.scanned = self.scanned.min(self.buf.len());
        // A BOM before the first message is tolerated, never required.
        if self.bom_pending {
            if self.buf.len() < BOM.len() && BOM.starts_with(&self.buf) {
                return;
            }
            self.bom_pending = false;
            if self.buf.starts_with(BOM) {
                self.buf.drain(..BOM.len());
                self.scanned = 0;
            }
        }
        // While no line end has arrived, hold at most the limit: the memory a peer that never
        // sends a newline can take stays bounded even if nobody calls `next_line`.
        if !self.buf[self.scanned..].contains(&b'\n') {
            self.scanned = self.buf.len();
            self.limit_partial();
        }
    }

    /// The next complete line, or `None` until more bytes arrive.
    pub fn next_line(&mut self) -> Option<Line> {
        loop {
            let newline = self.buf[self.scanned..].iter().position(|&b| b == b'\n');
            match newline {
                None => {
                    self.scanned = self.buf.len();
                    self.limit_partial();
                    return None;
                }
                Some(offset) => {
                    let end = self.scanned + offset;
                    let rest = self.buf.len() - (end + 1);
                    let mut line: Vec<u8> = if end >= HAND_OVER && end >= rest {
                        let rest = self.buf.split_off(end + 1);
                        std::mem::replace(&mut self.buf, rest)
                    } else {
                        self.buf.drain(..=end).collect()
                    };
                    self.scanned = 0;
                    line.pop();
                    if let Some(skip) = self.skipping.take() {
                        // The line end is `\n` or `\r\n`; the `\r` may be in an earlier chunk.
                        let mut len = skip.len + line.len();
                        let ends_cr = match line.last() {
                            Some(&b) => b == b'\r',
                            None => skip.trailing_cr,
                        };
                        if ends_cr {
                            len -= 1;
                        }
                        let mut head = skip.head;
                        let room = OVERSIZE_HEAD.saturating_sub(head.len());
                        head.extend_from_slice(&line[..room.min(line.len())]);
                        head.truncate(len.min(OVERSIZE_HEAD));
                        return Some(Line::Oversize { head, len });
                    }
                    if line.last() == Some(&b'\r') {
                        line.pop();
                    }
                    if line.len() > self.max_len {
                        // A copy of the head, not the line cut short: that would keep the
                        // line's whole allocation.
                        let head = line[..OVERSIZE_HEAD.min(line.len())].to_vec();
                        return Some(Line::Oversize {
                            head,
                            len: line.len(),
                        });
                    }
                    if line.iter().all(u8::is_ascii_whitespace) {
                        continue;
                    }
                    return Some(Line::Frame(line));
                }
            }
        }
    }

    /// Bytes held for an unfinished line.
    pub fn buffered(&self) -> usize {
        self.buf.len()
    }

    /// The buffer's allocation, for the tests of what a taken line leaves behind.
    #[cfg(test)]
    fn capacity(&self) -> usize {
        self.buf.capacity()
    }

    /// Once a partial line passes the limit, keep its head and drop the rest as it comes. One
    /// byte of slack leaves room for the `\r` of a `\r\n`.
    fn limit_partial(&mut self) {
        if let Some(skip) = &mut self.skipping {
            if let Some(&last) = self.buf.last() {
                let room = OVERSIZE_HEAD.saturating_sub(skip.head.len());
                skip.head
                    .extend_from_slice(&self.buf[..room.min(self.buf.len())]);
                skip.len += self.buf.len();
                skip.trailing_cr = last == b'\r';
            }
            self.buf.clear();
            self.scanned = 0;
        } else if self.buf.len() > self.max_len + 1 {
            let len = self.buf.len();
            self.skipping = Some(Skip {
                head: self.buf[..OVERSIZE_HEAD.min(len)].to_vec(),
                len,
                trailing_cr: self.buf.last() == Some(&b'\r'),
            });
            self.buf.clear();
            self.scanned = 0;
        }
    }
}

/// Appends one message as a line: compact JSON and `\n`. Our encoder never emits a raw
/// newline inside a message, so this cannot split one.
pub fn encode_line(message: &mcp_protocol::Message, out: &mut Vec<u8>) {
    message.encode_into(out);
    out.push(b'\n');
}
