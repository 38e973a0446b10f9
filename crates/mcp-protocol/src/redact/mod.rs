//! Secret values kept out of the text the host shows or logs. A server may quote what it was
//! given (an API key from its environment, a header, a token) in its stderr, an error message
//! or an HTTP error body; every such text passes through [`Secrets`] before anyone sees it.
//!
//! This is the one redaction of the workspace: the stdio transport runs its stderr ring
//! through [`Secrets::redact_stream`], and the host runs every error and status text of a
//! server through [`Secrets::redact`]. It lives here, in the leaf every transport and the host
//! share, because it is pure text work: no I/O, no clock.

#[cfg(test)]
mod tests;

use std::fmt;

/// The values a server must never see quoted back: whatever shows one of them shows
/// `[redacted]` instead.
///
/// No value is ever printed: `Debug` shows how many there are. An empty value is ignored.
/// Callers choose what is a secret; [`Secrets::CONFIGURED_MIN`] and
/// [`Secrets::INHERITED_MIN`] are the length floors the workspace uses.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Secrets {
    /// Sorted and without repeats; the redaction merges overlapping occurrences, so the order
    /// does not matter.
    values: Vec<String>,
}

impl Secrets {
    /// The shortest configured value taken as a secret (an environment value, a header, a
    /// client secret): a shorter one would blank out common words in every message.
    pub const CONFIGURED_MIN: usize = 4;
    /// The shortest value of a variable a server inherited from the host's environment (beyond
    /// the allow-list) taken as a secret: those values were not chosen as secrets, and many
    /// short ones (`1`, `true`, `C`) are everyday words.
    pub const INHERITED_MIN: usize = 8;

    /// These values, each once; empty ones are dropped.
    pub fn new(values: impl IntoIterator<Item = String>) -> Self {
        let mut values: Vec<String> = values.into_iter().filter(|v| !v.is_empty()).collect();
        values.sort_unstable();
        values.dedup();
        Self { values }
    }

    /// Both sets at once.
    #[must_use]
    pub fn with(&self, other: &Self) -> Self {
        Self::new(self.values.iter().chain(&other.values).cloned())
    }

    /// Whether there is nothing to hide.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// How many values are hidden.
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// `text`, a whole message, with every occurrence of a secret (overlapping ones merged)
    /// shown as `[redacted]`. Text that quotes a peer must be redacted before it is cut to a
    /// length, or the cut may leave the first bytes of a secret.
    pub fn redact(&self, text: &str) -> String {
        if !self.values.iter().any(|s| text.contains(s.as_str())) {
            return text.to_owned();
        }
        redact(text.as_bytes(), None, false, &self.values)
    }

    /// Every string in `value` (keys included) redacted as by [`redact`](Self::redact): for
    /// the `data` of a peer's error, which is passed on.
    pub fn redact_json(&self, value: &mut serde_json::Value) {
        use serde_json::Value;
        if self.is_empty() {
            return;
        }
        match value {
            Value::String(s) => {
                if self.values.iter().any(|v| s.contains(v.as_str())) {
                    *s = self.redact(s);
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|v| self.redact_json(v)),
            Value::Object(map) => {
                let entries = std::mem::take(map);
                for (key, mut v) in entries {
                    self.redact_json(&mut v);
                    map.insert(self.redact(&key), v);
                }
            }
            Value::Null | Value::Bool(_) | Value::Number(_) => {}
        }
    }

    /// `kept`, the newest bytes of a stream still being written (a server's stderr), as text
    /// that shows no part of a secret, wherever the stream was cut: `dropped` is the last byte
    /// dropped before `kept`, `None` when nothing was. See [`Self::redact`] for what is hidden.
    pub fn redact_stream(&self, kept: &[u8], dropped: Option<u8>) -> String {
        redact(kept, dropped, true, &self.values)
    }
}

impl fmt::Debug for Secrets {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Secrets({} redacted)", self.values.len())
    }
}

/// What stands for a secret, or for what may be part of one.
const REDACTED: &str = "[redacted]";

/// `kept`, the newest bytes of a stream, as text that shows no part of any of `secrets`:
///
/// - every occurrence of a secret, overlapping ones too, is shown as `[redacted]`;
/// - when older bytes were dropped (`dropped` is the last of them), the kept bytes may begin
///   inside a secret: their longest beginning that is the end of a secret is left out, and
///   so is the rest of that line (its start was dropped) unless nothing follows it; if the
///   kept bytes may all lie inside one secret, nothing is shown;
/// - when `unfinished`, the kept bytes may end inside a secret still being written (or cut
///   off by the end of the stream): their longest end that is the beginning of a secret is
///   shown as
///   `[redacted]`. An unfinished line that happens to end like a secret begins is therefore
///   shown with `[redacted]` in place of that end, until its next byte arrives.
///
/// Each check compares bytes, with no bound on the length of what matches: not even one byte
/// of a secret is shown, whatever the offset at which the ring cut it or the chunks in which
/// it was written.
fn redact(kept: &[u8], dropped: Option<u8>, unfinished: bool, secrets: &[String]) -> String {
    let len = kept.len();
    // Byte ranges to show as `[redacted]`, and where the text starts.
    let mut hidden: Vec<std::ops::Range<usize>> = Vec::new();
    let mut start = 0;
    let stretches = utf8_stretches(kept);
    for secret in secrets {
        if secret.is_empty() || len == 0 {
            continue;
        }
        // Whole occurrences, every one, overlapping ones included.
        occurrences(&stretches, secret, &mut hidden);
        let secret = secret.as_bytes();
        // The beginning of one still being written.
        let partial = 1..secret.len().min(len + 1);
        if unfinished
            && let Some(k) = partial
                .clone()
                .rev()
                .find(|&k| kept.ends_with(&secret[..k]))
        {
            hidden.push(len - k..len);
        }
        if dropped.is_some() {
            // The end of one whose beginning was dropped.
            if let Some(k) = partial
                .rev()
                .find(|&k| kept.starts_with(&secret[secret.len() - k..]))
            {
                start = start.max(k);
            }
            // The middle of one longer than what is kept.
            if len < secret.len() && secret.windows(len).any(|w| w == kept) {
                start = len;
            }
        }
    }
    if let Some(last) = dropped {
        let at_line_start = match start {
            0 => last == b'\n',
            _ => kept.get(start - 1) == Some(&b'\n'),
        };
        if !at_line_start
            && let Some(end) = kept[start..].iter().position(|&b| b == b'\n')
            && start + end + 1 < len
        {
            start += end + 1;
        }
    }
    hidden.sort_by_key(|r| r.start);
    let mut text = String::with_capacity(len - start);
    let mut at = start;
    // Whether `at` is the end of the `[redacted]` last written, which a range that begins
    // there or earlier extends.
    let mut in_hidden = false;
    for range in hidden {
        if range.end <= at {
            continue;
        }
        if range.start > at {
            text.push_str(&String::from_utf8_lossy(&kept[at..range.start]));
            in_hidden = false;
        }
        if !in_hidden {
            text.push_str(REDACTED);
            in_hidden = true;
        }
        at = range.end;
    }
    text.push_str(&String::from_utf8_lossy(&kept[at..]));
    text
}

/// The UTF-8 stretches of `kept`, each with its offset, for [`occurrences`]: decoded once for
/// every secret.
///
/// A secret is UTF-8, and a decoder never takes a byte that starts a character as the
/// continuation of another: an occurrence lies within one stretch, whatever bytes surround it.
fn utf8_stretches(kept: &[u8]) -> Vec<(usize, &str)> {
    let mut offset = 0;
    kept.utf8_chunks()
        .map(|chunk| {
            let at = offset;
            offset += chunk.valid().len() + chunk.invalid().len();
            (at, chunk.valid())
        })
        .collect()
}

/// Adds to `found` where `secret` occurs in the kept bytes, given as their `stretches`,
/// overlapping occurrences included.
fn occurrences(stretches: &[(usize, &str)], secret: &str, found: &mut Vec<std::ops::Range<usize>>) {
    // A stretch too short to hold the secret is not searched: `find` would prepare its search
    // (a pass over the secret) all the same, for each of them.
    let long_enough = stretches
        .iter()
        .filter(|(_, text)| text.len() >= secret.len());
    for &(offset, text) in long_enough {
        let mut from = 0;
        while let Some(i) = text[from..].find(secret) {
            let at = from + i;
            found.push(offset + at..offset + at + secret.len());
            // The next may overlap this one: go on from this one's second character.
            from = at + text[at..].chars().next().map_or(1, char::len_utf8);
        }
    }
}
