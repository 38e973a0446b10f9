//! The `ToolName` codec: the one place that decides what a client is shown of an upstream's
//! tool name, and how `mcp__<server>__<name>` (seed 004 §11) is built and read back.
//!
//! An upstream's tool name is untrusted: it may carry terminal escapes, control characters,
//! invisible characters, `__`, or ten kilobytes of text. Every mode shows it through [`shown`]
//! and finds the tool a client names by comparing with [`shown`] of each listed tool, so the
//! upstream call still carries the name exactly as the upstream listed it.
//!
//! # Reading `mcp__<server>__<name>`
//!
//! Server ids are `[a-zA-Z0-9_-]{1,64}`, so an id may hold `__` or end with `_`. Splitting at
//! the first `__` after the prefix is then wrong: server `a__b`'s tool `c` would be read as
//! server `a`'s tool `b__c`, and server `a_`'s tool `b` as server `a`'s tool `_b`. The
//! configured ids are matched instead, longest first ([`splits`]). The encoding itself is
//! not one-to-one when one configured id is another's prefix followed by `_` (`a` and `a__b`,
//! or `a` and `a_`): `mcp__a__b__c` is then both `a`'s `b__c` and `a__b`'s `c`. Callers
//! therefore try each reading in turn and keep the first whose server lists that tool, so only
//! two tools that both exist under the same text are ambiguous, and the longer id wins.

use std::borrow::Cow;

use mcp_host::catalog::clean_text;

/// What starts a prefixed name.
const PREFIX: &str = "mcp__";
/// What separates the server from the name.
const SEPARATOR: &str = "__";
/// The longest name a client is shown for one upstream tool, in bytes (the MCP 2025-11-25
/// schema's advice for tool names is 1 to 128 characters).
pub(crate) const MAX_SHOWN: usize = 128;
/// `-` and 8 hex digits, appended to a name that had to be changed.
const HASH_SUFFIX: usize = 9;

/// `mcp__<server>__<name>`.
pub(crate) fn prefixed(server: &str, name: &str) -> String {
    format!("{PREFIX}{server}{SEPARATOR}{name}")
}

/// Every reading of `text` as `mcp__<server>__<name>` with `server` one of `ids` and a
/// non-empty name, longest id first.
pub(crate) fn splits<'t, 'i>(
    text: &'t str,
    ids: impl IntoIterator<Item = &'i str>,
) -> Vec<(&'t str, &'t str)> {
    let Some(rest) = text.strip_prefix(PREFIX) else {
        return Vec::new();
    };
    let mut found: Vec<(&str, &str)> = ids
        .into_iter()
        .filter_map(|id| {
            let after = rest.strip_prefix(id)?.strip_prefix(SEPARATOR)?;
            (!id.is_empty() && !after.is_empty()).then(|| (&rest[..id.len()], after))
        })
        .collect();
    found.sort_by_key(|(server, _)| std::cmp::Reverse(server.len()));
    found.dedup();
    found
}

/// The reading of `text` with the longest configured id (see [`splits`]).
pub(crate) fn split<'t, 'i>(
    text: &'t str,
    ids: impl IntoIterator<Item = &'i str>,
) -> Option<(&'t str, &'t str)> {
    splits(text, ids).into_iter().next()
}

/// The name a client is shown for an upstream tool named `raw`: `raw` itself when it is
/// plain (1 to [`MAX_SHOWN`] bytes with no control, whitespace or invisible character);
/// otherwise its visible characters, terminal escapes dropped, cut to fit, then `-` and 8
/// hex digits of a hash of `raw`, so that two names cleaned alike stay apart and the same
/// name is shown the same way on every run.
pub(crate) fn shown(raw: &str) -> Cow<'_, str> {
    if is_plain(raw) {
        return Cow::Borrowed(raw);
    }
    let visible: String = clean_text(raw, raw.len())
        .chars()
        .filter(|c| is_visible(*c))
        .collect();
    let mut out = String::with_capacity(MAX_SHOWN);
    for c in visible.chars() {
        if out.len() + c.len_utf8() > MAX_SHOWN - HASH_SUFFIX {
            break;
        }
        out.push(c);
    }
    if out.is_empty() {
        out.push_str("tool");
    }
    out.push_str(&format!("-{:08x}", fnv1a(raw.as_bytes()) as u32));
    Cow::Owned(out)
}

/// A name a client or an upstream sent, as a message may quote it: its visible characters
/// (those [`shown`] keeps), cut at [`MAX_SHOWN`] bytes with `…`.
pub(crate) fn quoted(text: &str) -> String {
    let mut out = String::new();
    for c in clean_text(text, text.len())
        .chars()
        .filter(|c| is_visible(*c))
    {
        if out.len() + c.len_utf8() > MAX_SHOWN {
            out.push('…');
            break;
        }
        out.push(c);
    }
    out
}

/// Whether a client who names `name` means the upstream tool named `raw`.
pub(crate) fn designates(raw: &str, name: &str) -> bool {
    shown(raw) == name
}

/// Whether `raw` is shown as it is.
fn is_plain(raw: &str) -> bool {
    !raw.is_empty() && raw.len() <= MAX_SHOWN && raw.chars().all(is_visible)
}

/// Not a control character, not whitespace, and not one of the format characters that
/// reorder or hide text (bidirectional overrides and isolates, zero-width characters).
fn is_visible(c: char) -> bool {
    !c.is_control()
        && !c.is_whitespace()
        && !matches!(c,
            '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2060}'..='\u{2064}'
            | '\u{2066}'..='\u{2069}' | '\u{feff}' | '\u{ad}')
}

/// FNV-1a, 64 bits: stable across runs and platforms, which is all a name's suffix needs
/// (it keeps apart names one server chose, it is no defence against that server).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, b| {
        (hash ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_longest_configured_id_reads_ids_that_hold_underscores() {
        // The first `__` would read these as server `a`.
        assert_eq!(split("mcp__a__b__c", ["a__b"]), Some(("a__b", "c")));
        assert_eq!(split("mcp__a___b", ["a_"]), Some(("a_", "b")));
        // Both readings exist when both ids are configured; the longer comes first.
        assert_eq!(
            splits("mcp__a__b__c", ["a", "a__b"]),
            [("a__b", "c"), ("a", "b__c")]
        );
        assert_eq!(split("mcp__s__x__y", ["s"]), Some(("s", "x__y")));
        assert_eq!(split("mcp__s__", ["s"]), None);
        assert_eq!(split("mcp__t__x", ["s"]), None);
        assert_eq!(split("echo", ["s"]), None);
        assert_eq!(prefixed("a__b", "c"), "mcp__a__b__c");
    }

    #[test]
    fn hostile_names_are_shown_cleaned_bounded_and_apart() {
        assert_eq!(shown("read_file"), "read_file");
        assert_eq!(shown("mcp__x__y"), "mcp__x__y");
        let hostile = format!("\u{1b}]0;title\u{7}ev\u{202e}il\n{}", "A".repeat(10_000));
        let s = shown(&hostile);
        assert!(s.len() <= MAX_SHOWN, "{}", s.len());
        assert!(s.starts_with("evilAAA"), "{s}");
        assert!(s.chars().all(is_visible), "{s:?}");
        assert_eq!(shown(&hostile), s, "stable");
        assert!(designates(&hostile, &s) && !designates(&hostile, &hostile));
        assert_ne!(
            shown("a\u{0}b"),
            shown("a\u{1}b"),
            "cleaned alike, shown apart"
        );
        assert_ne!(shown("a b"), "ab");
        assert!(shown("\u{7}").starts_with("tool-"));
        assert!(shown(&"x".repeat(129)).len() <= MAX_SHOWN);
        let q = quoted(&hostile);
        assert!(q.starts_with("evilAAA") && q.ends_with('…'), "{q}");
        assert!(q.len() <= MAX_SHOWN + '…'.len_utf8());
    }

    /// docs/gateway.md: "A name of 1 to 128 bytes with no control, whitespace or invisible
    /// character … is shown as it is", any other gets `-` and 8 hex digits of a hash, the same
    /// on every run (so a fixed value here, not one computed by this process).
    #[test]
    fn the_documented_bounds_and_a_suffix_that_is_the_same_on_every_run() {
        let longest = "x".repeat(MAX_SHOWN);
        assert_eq!(shown(&longest), longest);
        assert_eq!(shown("a b"), "ab-04833892");
        assert_eq!(shown(""), "tool-84222325");
        for invisible in ['\u{200b}', '\u{2060}', '\u{feff}', '\u{2066}'] {
            let name = format!("a{invisible}b");
            assert!(shown(&name).starts_with("ab-"), "{name:?}");
        }
    }
}
