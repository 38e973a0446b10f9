//! Byte scans over JSON text that serde_json would make one byte (or eight) at a time: what
//! makes a 1 MiB text cheap to look at.
//!
//! The searches work on 16-byte blocks written so that the compiler turns each block into a
//! few vector instructions (SSE2 on x86-64, NEON on aarch64) with no `unsafe` and no
//! dependency; the scalar tail handles the rest.

#[cfg(test)]
mod tests;

/// The width of one block.
const BLOCK: usize = 16;

/// The index of the first byte at or after `from` for which `hit` holds. `hit` must be cheap
/// and branch-free (a comparison or two): it runs on every byte of a block.
#[inline(always)]
fn find_from(bytes: &[u8], from: usize, hit: impl Fn(u8) -> bool + Copy) -> Option<usize> {
    let rest = bytes.get(from..)?;
    let mut blocks = rest.chunks_exact(BLOCK);
    let mut at = from;
    for block in &mut blocks {
        // A block of fixed width, each byte's hit OR-ed in with no early exit: this becomes a
        // handful of vector compares. Only a block with a hit is searched byte by byte.
        let mut any = 0u8;
        for &b in block {
            any |= u8::from(hit(b));
        }
        if any != 0 {
            return block.iter().position(|&b| hit(b)).map(|i| at + i);
        }
        at += BLOCK;
    }
    blocks
        .remainder()
        .iter()
        .position(|&b| hit(b))
        .map(|i| at + i)
}

/// The first `"` or `\` at or after `from`: where a run of plain string bytes ends.
pub(crate) fn quote_or_backslash(bytes: &[u8], from: usize) -> Option<usize> {
    find_from(bytes, from, |b| (b == b'"') | (b == b'\\'))
}

/// The first byte at or after `from` that a JSON string cannot hold as it is: `"`, `\` or a
/// control character (below 0x20). What [`json_out`](crate::json_out) escapes.
#[inline]
pub(crate) fn needs_escape(bytes: &[u8], from: usize) -> Option<usize> {
    let hit = |b: u8| (b < 0x20) | (b == b'"') | (b == b'\\');
    // Most strings of a message are short (keys, names, types): a plain loop over them costs
    // less than setting up blocks.
    let rest = bytes.get(from..)?;
    if rest.len() < 2 * BLOCK {
        return rest.iter().position(|&b| hit(b)).map(|i| from + i);
    }
    find_from(bytes, from, hit)
}

/// The index of the `"` that closes the string whose contents start at `from`; `None` if the
/// text ends first.
fn string_end(bytes: &[u8], mut from: usize) -> Option<usize> {
    // Most strings of a result are short (keys, names): a plain loop over their first bytes
    // costs less than setting up blocks.
    let short = (from + BLOCK).min(bytes.len());
    while from < short {
        match bytes[from] {
            b'"' => return Some(from),
            b'\\' => from += 2,
            _ => from += 1,
        }
    }
    loop {
        let at = quote_or_backslash(bytes, from)?;
        if bytes[at] == b'"' {
            return Some(at);
        }
        // A backslash and the byte it escapes (a `\uXXXX`'s hex digits need no care: they
        // are neither a quote nor a backslash).
        from = at + 2;
    }
}

fn skip_whitespace(bytes: &[u8], mut at: usize) -> usize {
    while bytes.get(at).is_some_and(|b| b.is_ascii_whitespace()) {
        at += 1;
    }
    at
}

/// What [`top_level_string`] found.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Member<'a> {
    /// The object has no member of that name.
    Absent,
    /// The member's value, a string with no escape in it, without its quotes.
    Plain(&'a str),
}

/// The value of member `name` of the JSON object `json`, without decoding anything else: the
/// other members are stepped over by their structure alone (strings found with
/// [`quote_or_backslash`], brackets counted), not parsed.
///
/// `json` must be valid JSON (a [`RawJson`](crate::RawJson) always is): the text is not
/// validated. `None` whenever the answer is not plain, for the caller to decode the text
/// properly (and report what is wrong): `json` is not an object, a key has an escape in it
/// (which might spell `name`), `name` appears twice, or its value is not a string or has an
/// escape in it.
pub(crate) fn top_level_string<'a>(json: &'a str, name: &str) -> Option<Member<'a>> {
    let bytes = json.as_bytes();
    let mut at = skip_whitespace(bytes, 0);
    if bytes.get(at) != Some(&b'{') {
        return None;
    }
    at += 1;
    let mut depth = 1usize;
    // At depth 1, whether the next string is a key (just after `{` or `,`).
    let mut key_next = true;
    let mut found = Member::Absent;
    while let Some(&b) = bytes.get(at) {
        match b {
            b'"' => {
                let end = string_end(bytes, at + 1)?;
                if depth == 1 && key_next {
                    key_next = false;
                    let key = bytes.get(at + 1..end)?;
                    if key.contains(&b'\\') {
                        return None;
                    }
                    if key == name.as_bytes() {
                        if found != Member::Absent {
                            return None;
                        }
                        let colon = skip_whitespace(bytes, end + 1);
                        let value = skip_whitespace(bytes, colon + 1);
                        if bytes.get(value) != Some(&b'"') {
                            return None;
                        }
                        let value_end = string_end(bytes, value + 1)?;
                        let text = json.get(value + 1..value_end)?;
                        if text.contains('\\') {
                            return None;
                        }
                        found = Member::Plain(text);
                        at = value_end + 1;
                        continue;
                    }
                }
                at = end + 1;
            }
            b'{' | b'[' => {
                depth += 1;
                at += 1;
            }
            b'}' | b']' => {
                depth -= 1;
                if depth == 0 {
                    return Some(found);
                }
                at += 1;
            }
            b',' => {
                key_next = depth == 1;
                at += 1;
            }
            _ => at += 1,
        }
    }
    None
}
