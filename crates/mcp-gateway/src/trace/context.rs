//! W3C Trace Context (<https://www.w3.org/TR/trace-context/>): the `traceparent` and
//! `tracestate` a client puts in a request's `params._meta` (the MCP semantic conventions'
//! carrier, SEP-414), parsed strictly, and the ones the gateway puts in the request it sends
//! upstream. Ids come from the operating system's generator.

use std::fmt::Write as _;

use mcp_protocol::JsonObject;
use ring::rand::{SecureRandom as _, SystemRandom};
use serde_json::Value;

/// The `_meta` key of the W3C `traceparent`, unprefixed as SEP-414 says.
pub(crate) const TRACEPARENT: &str = "traceparent";
/// The `_meta` key of the W3C `tracestate`.
pub(crate) const TRACESTATE: &str = "tracestate";
/// The longest `tracestate` kept: W3C asks vendors to propagate at least 512 characters, and
/// a longer one from a client is dropped rather than cut mid-member.
const MAX_TRACESTATE: usize = 512;

/// One span's place in a trace: what a `traceparent` carries, with the `tracestate` that goes
/// with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SpanContext {
    pub(crate) trace_id: [u8; 16],
    pub(crate) span_id: [u8; 8],
    /// The `sampled` flag: whether the caller records this trace.
    pub(crate) sampled: bool,
    pub(crate) trace_state: Option<String>,
}

impl SpanContext {
    /// The context a client sent in `_meta`, if it sent a valid `traceparent`; an invalid one
    /// is ignored as W3C says (the request then starts a new trace).
    pub(crate) fn from_meta(meta: Option<&JsonObject>) -> Option<Self> {
        let meta = meta?;
        let parent = meta.get(TRACEPARENT)?.as_str()?;
        let state = meta.get(TRACESTATE).and_then(Value::as_str);
        Self::parse(parent, state)
    }

    /// Parses a `traceparent` (version `00`, or a later version read as `00` as W3C asks)
    /// and keeps `tracestate` if it is printable and not over 512 characters.
    pub(crate) fn parse(traceparent: &str, tracestate: Option<&str>) -> Option<Self> {
        let s = traceparent.trim_matches([' ', '\t']);
        let bytes = s.as_bytes();
        if bytes.len() < 55 || !s.is_ascii() {
            return None;
        }
        let version = hex::<1>(&s[0..2])?[0];
        // Version ff is invalid; version 00 has exactly four fields; a later version may
        // append fields after a dash.
        if version == 0xff
            || (version == 0 && bytes.len() != 55)
            || (bytes.len() > 55 && bytes[55] != b'-')
        {
            return None;
        }
        if bytes[2] != b'-' || bytes[35] != b'-' || bytes[52] != b'-' {
            return None;
        }
        let trace_id = hex::<16>(&s[3..35])?;
        let span_id = hex::<8>(&s[36..52])?;
        let flags = hex::<1>(&s[53..55])?[0];
        if trace_id == [0; 16] || span_id == [0; 8] {
            return None;
        }
        let trace_state = tracestate
            .map(|t| t.trim_matches([' ', '\t']))
            .filter(|t| {
                !t.is_empty()
                    && t.len() <= MAX_TRACESTATE
                    && t.chars().all(|c| (' '..='~').contains(&c))
            })
            .map(str::to_owned);
        Some(Self {
            trace_id,
            span_id,
            sampled: flags & 1 == 1,
            trace_state,
        })
    }

    /// The `traceparent` header value (version `00`).
    pub(crate) fn traceparent(&self) -> String {
        format!(
            "00-{}-{}-{}",
            to_hex(&self.trace_id),
            to_hex(&self.span_id),
            if self.sampled { "01" } else { "00" }
        )
    }

    /// Puts this context into a request's `_meta`, replacing any `traceparent` and
    /// `tracestate` there (the client's, which the upstream must not mistake for its parent).
    pub(crate) fn inject(&self, meta: &mut Option<JsonObject>) {
        let meta = meta.get_or_insert_with(JsonObject::new);
        meta.insert(TRACEPARENT.to_owned(), Value::String(self.traceparent()));
        match &self.trace_state {
            Some(state) => meta.insert(TRACESTATE.to_owned(), Value::String(state.clone())),
            None => meta.remove(TRACESTATE),
        };
    }
}

/// Lower-case hex, as `traceparent` and OTLP/JSON write ids.
pub(crate) fn to_hex(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(out, "{b:02x}");
    }
    out
}

/// `N` bytes from lower-case hex of exactly `2 * N` digits (W3C forbids upper case).
fn hex<const N: usize>(s: &str) -> Option<[u8; N]> {
    if s.len() != 2 * N {
        return None;
    }
    let digit = |c: u8| match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    };
    let mut out = [0; N];
    for (i, pair) in s.as_bytes().chunks_exact(2).enumerate() {
        out[i] = digit(pair[0])? << 4 | digit(pair[1])?;
    }
    Some(out)
}

/// New ids from the operating system's generator: a trace or span id must not be guessable
/// from another, and an all-zero id is invalid.
#[derive(Debug)]
pub(crate) struct Ids(SystemRandom);

impl Ids {
    pub(crate) fn new() -> Self {
        Self(SystemRandom::new())
    }

    /// `N` random bytes, not all zero; `None` if the generator failed, and the span is then
    /// not recorded.
    pub(crate) fn random<const N: usize>(&self) -> Option<[u8; N]> {
        let mut out = [0; N];
        for _ in 0..2 {
            self.0.fill(&mut out).ok()?;
            if out != [0; N] {
                return Some(out);
            }
        }
        None
    }
}
