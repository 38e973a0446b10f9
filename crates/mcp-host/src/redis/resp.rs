//! RESP2, Redis's wire format, without I/O: commands encoded as arrays of bulk strings, and
//! replies parsed strictly from a buffer the caller fills ("need more bytes" is `Ok(None)`).
//!
//! Every length a server states is checked against [`Limits`] before anything is allocated
//! for it, nested arrays are bounded in depth, and a line without its `\r\n` is bounded in
//! length, so that a broken or hostile server costs at most the limits, never an unbounded
//! allocation or a panic.

/// One reply of a Redis server (RESP2).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Reply {
    /// `+OK`: a status.
    Simple(String),
    /// `-ERR …`: the server refused the command; the text is the server's.
    Error(String),
    /// `:42`.
    Integer(i64),
    /// `$n` and n bytes; `None` is the null bulk string (`$-1`: no such key).
    Bulk(Option<Vec<u8>>),
    /// `*n` and n replies; `None` is the null array (`*-1`).
    Array(Option<Vec<Reply>>),
}

/// How much a reply may make us hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Limits {
    /// The longest bulk string.
    pub(crate) max_bulk: usize,
    /// The most elements of one array.
    pub(crate) max_elements: usize,
    /// The deepest nesting of arrays.
    pub(crate) max_depth: usize,
    /// The longest status, error or length line, without its `\r\n`.
    pub(crate) max_line: usize,
}

impl Default for Limits {
    /// 16 MiB bulk strings (a token document is a few kilobytes), 65,536 elements, depth 8,
    /// 64 KiB lines.
    fn default() -> Self {
        Self {
            max_bulk: 16 << 20,
            max_elements: 65_536,
            max_depth: 8,
            max_line: 64 << 10,
        }
    }
}

/// What is wrong with the bytes a server sent. The message quotes no bytes of the reply
/// (a reply may hold a token).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ProtocolError {
    /// A reply starts with a byte that is no RESP2 type.
    #[error("a reply starts with byte 0x{0:02x}, which is no RESP2 type")]
    UnknownType(u8),
    /// A length or integer is not a decimal number.
    #[error("a length or integer is not a number")]
    BadNumber,
    /// A line ends without `\r\n`, or a bulk string without its closing `\r\n`.
    #[error("a line or bulk string is not ended by CRLF")]
    BadTerminator,
    /// A status or error line is not UTF-8.
    #[error("a status or error line is not UTF-8")]
    NotUtf8,
    /// A stated length is over the limit.
    #[error("a reply states {what} of {stated}, over the limit of {limit}")]
    TooLarge {
        /// `a bulk string` or `an array`.
        what: &'static str,
        /// The length stated.
        stated: i64,
        /// The limit.
        limit: usize,
    },
    /// Arrays nested deeper than the limit.
    #[error("arrays nested deeper than {0}")]
    TooDeep(usize),
}

/// Appends `args` to `out` as one command: an array of bulk strings.
pub(crate) fn encode(args: &[&[u8]], out: &mut Vec<u8>) {
    out.push(b'*');
    out.extend_from_slice(args.len().to_string().as_bytes());
    out.extend_from_slice(b"\r\n");
    for arg in args {
        out.push(b'$');
        out.extend_from_slice(arg.len().to_string().as_bytes());
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(arg);
        out.extend_from_slice(b"\r\n");
    }
}

/// Parses one reply from the start of `buf`: `Ok(Some((reply, used)))`, or `Ok(None)` when
/// `buf` holds only the beginning of one (read more and call again with all of it).
pub(crate) fn parse(buf: &[u8], limits: &Limits) -> Result<Option<(Reply, usize)>, ProtocolError> {
    let mut at = 0;
    match parse_at(buf, &mut at, limits, 0)? {
        Some(reply) => Ok(Some((reply, at))),
        None => Ok(None),
    }
}

fn parse_at(
    buf: &[u8],
    at: &mut usize,
    limits: &Limits,
    depth: usize,
) -> Result<Option<Reply>, ProtocolError> {
    let Some(&kind) = buf.get(*at) else {
        return Ok(None);
    };
    let Some(line) = line(buf, *at + 1, limits.max_line)? else {
        return Ok(None);
    };
    let after_line = *at + 1 + line.len() + 2;
    let reply = match kind {
        b'+' | b'-' => {
            let text = std::str::from_utf8(line)
                .map_err(|_| ProtocolError::NotUtf8)?
                .to_owned();
            *at = after_line;
            if kind == b'+' {
                Reply::Simple(text)
            } else {
                Reply::Error(text)
            }
        }
        b':' => {
            let n = number(line)?;
            *at = after_line;
            Reply::Integer(n)
        }
        b'$' => {
            let n = number(line)?;
            if n == -1 {
                *at = after_line;
                return Ok(Some(Reply::Bulk(None)));
            }
            let len = length(n, limits.max_bulk, "a bulk string")?;
            let end = after_line + len;
            if buf.len() < end + 2 {
                return Ok(None);
            }
            if &buf[end..end + 2] != b"\r\n" {
                return Err(ProtocolError::BadTerminator);
            }
            *at = end + 2;
            Reply::Bulk(Some(buf[after_line..end].to_vec()))
        }
        b'*' => {
            let n = number(line)?;
            if n == -1 {
                *at = after_line;
                return Ok(Some(Reply::Array(None)));
            }
            let len = length(n, limits.max_elements, "an array")?;
            if depth >= limits.max_depth {
                return Err(ProtocolError::TooDeep(limits.max_depth));
            }
            let mut cursor = after_line;
            // Capacity from what has arrived, not from the stated length: each element takes
            // at least three bytes, so a lying length allocates nothing it was not sent.
            let mut items = Vec::with_capacity(len.min(buf.len().saturating_sub(cursor) / 3));
            for _ in 0..len {
                match parse_at(buf, &mut cursor, limits, depth + 1)? {
                    Some(item) => items.push(item),
                    None => return Ok(None),
                }
            }
            *at = cursor;
            Reply::Array(Some(items))
        }
        other => return Err(ProtocolError::UnknownType(other)),
    };
    Ok(Some(reply))
}

/// The line starting at `from`, without its `\r\n`; `None` if it has not all arrived.
fn line(buf: &[u8], from: usize, max: usize) -> Result<Option<&[u8]>, ProtocolError> {
    let rest = buf.get(from..).unwrap_or_default();
    match rest.iter().position(|&b| b == b'\r' || b == b'\n') {
        Some(i) if i > max => Err(ProtocolError::TooLarge {
            what: "a line",
            stated: i64::try_from(i).unwrap_or(i64::MAX),
            limit: max,
        }),
        Some(i) => match rest.get(i..i + 2) {
            Some(b"\r\n") => Ok(Some(&rest[..i])),
            Some(_) => Err(ProtocolError::BadTerminator),
            // A `\r` that is the last byte so far: its `\n` may follow.
            None if rest[i] == b'\r' => Ok(None),
            None => Err(ProtocolError::BadTerminator),
        },
        None if rest.len() > max => Err(ProtocolError::TooLarge {
            what: "a line",
            stated: i64::try_from(rest.len()).unwrap_or(i64::MAX),
            limit: max,
        }),
        None => Ok(None),
    }
}

/// A decimal integer, as RESP2 writes them (an optional `-`, digits, nothing else).
fn number(line: &[u8]) -> Result<i64, ProtocolError> {
    let digits = line.strip_prefix(b"-").unwrap_or(line);
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return Err(ProtocolError::BadNumber);
    }
    std::str::from_utf8(line)
        .ok()
        .and_then(|s| s.parse().ok())
        .ok_or(ProtocolError::BadNumber)
}

/// A stated length: not negative (but for the null `-1`, handled before), not over `limit`.
fn length(n: i64, limit: usize, what: &'static str) -> Result<usize, ProtocolError> {
    match usize::try_from(n) {
        Ok(len) if len <= limit => Ok(len),
        Ok(_) => Err(ProtocolError::TooLarge {
            what,
            stated: n,
            limit,
        }),
        Err(_) => Err(ProtocolError::BadNumber),
    }
}
