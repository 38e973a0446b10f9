//! The NDJSON line codec of `mcp-stdio` (`codec::LineDecoder`).
//!
//! Properties, for any stream, size limit and cuts:
//! - chunking does not matter: the stream pushed whole, pushed in pieces with the lines
//!   drained after each push, and pushed in pieces drained only at the end give the same
//!   lines;
//! - the lines are those of a plain model of the format: split at `\n`, one `\r` before it
//!   dropped, a leading UTF-8 BOM dropped, blank lines skipped, a line over the limit reported
//!   as `Oversize` with its length and its first 256 bytes, the unfinished last line held back;
//! - an encoded message is one line that decodes back to the message.

#![no_main]

use libfuzzer_sys::fuzz_target;
use mcp_fuzz::Chunked;
use mcp_stdio::codec::{Line, LineDecoder, OVERSIZE_HEAD, encode_line};

fuzz_target!(|data: &[u8]| {
    let Some(input) = Chunked::parse(data) else {
        return;
    };
    let whole = {
        let mut d = LineDecoder::new(input.max);
        d.push(input.stream);
        drain(&mut d)
    };
    assert_eq!(whole, model(input.stream, input.max), "against the model");
    let mut pieces = LineDecoder::new(input.max);
    let mut chunked = Vec::new();
    for piece in input.pieces() {
        pieces.push(piece);
        if input.drain_each {
            chunked.extend(drain(&mut pieces));
        }
    }
    chunked.extend(drain(&mut pieces));
    assert_eq!(whole, chunked, "cut at {:?}", input.cuts);
    // Once drained, an unfinished line holds at most the limit and a `\r`.
    assert!(
        pieces.buffered() <= input.max + 1,
        "{} bytes held",
        pieces.buffered()
    );

    // Every frame that is a message re-encodes as one line giving the same message.
    for line in &whole {
        if let Line::Frame(frame) = line
            && let Ok(message) = mcp_protocol::decode_message(frame)
        {
            let mut out = Vec::new();
            encode_line(&message, &mut out);
            let mut d = LineDecoder::new(out.len());
            d.push(&out);
            let again = drain(&mut d);
            assert_eq!(again.len(), 1, "one message, one line");
            let Line::Frame(f) = &again[0] else {
                panic!("an encoded message within the limit came out oversized")
            };
            assert_eq!(mcp_protocol::decode_message(f).as_ref(), Ok(&message));
        }
    }
});

fn drain(d: &mut LineDecoder) -> Vec<Line> {
    std::iter::from_fn(|| d.next_line()).collect()
}

/// The format as written down, on the whole stream at once.
fn model(stream: &[u8], max: usize) -> Vec<Line> {
    let stream = stream.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(stream);
    let mut lines: Vec<&[u8]> = stream.split(|&b| b == b'\n').collect();
    // After the last `\n` (or with none at all) the line is unfinished.
    lines.pop();
    lines
        .into_iter()
        .filter_map(|line| {
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            if line.len() > max {
                Some(Line::Oversize {
                    head: line[..line.len().min(OVERSIZE_HEAD)].to_vec(),
                    len: line.len(),
                })
            } else if line.iter().all(u8::is_ascii_whitespace) {
                None
            } else {
                Some(Line::Frame(line.to_vec()))
            }
        })
        .collect()
}
