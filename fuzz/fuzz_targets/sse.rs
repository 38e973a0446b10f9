//! The hand-written SSE decoder of `mcp-http` (`sse::Decoder`) and its encoder.
//!
//! Properties, for any stream, size limit and cuts:
//! - chunking does not matter: the stream pushed whole, pushed in pieces with the events
//!   drained after each push, and pushed in pieces drained only at the end give the same
//!   events (and skipped-event errors), the same last event id and the same `retry`;
//! - an event's data stays within the limit, and an oversized event's reported head is at
//!   most 256 bytes;
//! - encode then decode: the events decoded, written again with `encode_event`, decode to
//!   the same events (when their `event` and `id` fit the limit).

#![no_main]

use libfuzzer_sys::fuzz_target;
use mcp_fuzz::Chunked;
use mcp_http::sse::{Decoder, Error, Event, encode_event};

type Item = Result<Event, Error>;

fuzz_target!(|data: &[u8]| {
    let Some(input) = Chunked::parse(data) else {
        return;
    };
    let mut whole = Decoder::new(input.max);
    whole.push(input.stream);
    let items = drain(&mut whole);

    let mut pieces = Decoder::new(input.max);
    let mut chunked = Vec::new();
    for piece in input.pieces() {
        pieces.push(piece);
        if input.drain_each {
            chunked.extend(drain(&mut pieces));
        }
    }
    chunked.extend(drain(&mut pieces));
    assert_eq!(items, chunked, "cut at {:?}", input.cuts);
    assert_eq!(whole.last_event_id(), pieces.last_event_id());
    assert_eq!(whole.retry_ms(), pieces.retry_ms());

    for item in &items {
        match item {
            Ok(event) => {
                assert!(event.data.len() <= input.max, "data past the limit");
                assert!(!event.event.is_empty(), "an event always has a type");
            }
            Err(Error::TooLarge { limit, head }) => {
                assert_eq!(*limit, input.max);
                assert!(head.len() <= 256);
            }
            Err(_) => {}
        }
    }

    // Encode the decoded events again and decode them: nothing changes. (An `event` or `id`
    // longer than the limit may have fit its line as `event:x` and not as `event: x`; the
    // decoder's line limit is the event limit plus a few bytes for the field name.)
    let events: Vec<&Event> = items.iter().filter_map(|i| i.as_ref().ok()).collect();
    if events
        .iter()
        .any(|e| e.event.len() > input.max || e.id.as_ref().is_some_and(|id| id.len() > input.max))
    {
        return;
    }
    let mut out = Vec::new();
    for e in &events {
        encode_event(&mut out, Some(&e.event), e.id.as_deref(), &e.data);
    }
    let mut again = Decoder::new(input.max);
    again.push(&out);
    let decoded = drain(&mut again);
    let expected: Vec<Item> = events.into_iter().cloned().map(Ok).collect();
    assert_eq!(
        decoded,
        expected,
        "re-encoded as {:?}",
        String::from_utf8_lossy(&out)
    );
});

fn drain(d: &mut Decoder) -> Vec<Item> {
    std::iter::from_fn(|| d.next_event()).collect()
}
