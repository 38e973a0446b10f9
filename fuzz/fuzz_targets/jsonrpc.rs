//! The JSON-RPC decoder of `mcp-protocol` (`decode`, `decode_message`, `sniff_id`).
//!
//! Properties, for any bytes:
//! - decode then encode: a message that decodes encodes to bytes that decode to the same
//!   message, and encoding is stable (encoding that again gives the same bytes); a batch's
//!   items likewise;
//! - a frame that does not decode yields an error that keeps its length and at most 256
//!   bytes of it, and the error response owed (if any) is itself a message that round-trips,
//!   under the id the error recovered;
//! - `sniff_id`, which reads the id of a frame too large to decode from its first bytes,
//!   never names an id other than the message's own, whatever prefix it is given;
//! - our JSON writer (issue 25 §3) writes what serde_json writes, byte for byte: a decoded
//!   message, and the input itself (as UTF-8, lossily) written as one JSON string.

#![no_main]

use libfuzzer_sys::fuzz_target;
use mcp_protocol::{
    Decoded, Message, RAW_EXCERPT_LIMIT, RawJson, decode, decode_message, sniff_id,
};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let ours = RawJson::encode(&*text).expect("a string always encodes");
    assert_eq!(
        ours.get(),
        serde_json::to_string(&*text).unwrap(),
        "{text:?}"
    );
    match decode(data) {
        Ok(Decoded::Single(message)) => {
            round_trip(&message);
            check_sniff(data, &message);
        }
        Ok(Decoded::Batch(items)) => {
            assert!(!items.is_empty(), "an empty batch is an error");
            for item in items.iter().flatten() {
                round_trip(item);
            }
        }
        Err(e) => {
            assert_eq!(e.len, data.len());
            assert!(e.excerpt.chars().count() <= RAW_EXCERPT_LIMIT);
            if let Some(answer) = e.to_response() {
                assert_eq!(answer.id(), e.id.as_ref());
                round_trip(&answer);
            }
        }
    }
});

fn round_trip(message: &Message) {
    let bytes = message.encode();
    assert_eq!(
        bytes,
        serde_json::to_vec(message).unwrap(),
        "our writer and serde_json's differ"
    );
    let again =
        decode_message(&bytes).unwrap_or_else(|e| panic!("our own encoding does not decode: {e}"));
    assert_eq!(&again, message, "{}", String::from_utf8_lossy(&bytes));
    assert_eq!(again.encode(), bytes, "encoding is not stable");
    assert_eq!(decode(&bytes), Ok(Decoded::Single(message.clone())));
}

/// `sniff_id` on the whole frame and on every prefix finds the message's id or nothing.
fn check_sniff(data: &[u8], message: &Message) {
    let id = message.id();
    // Every prefix would be quadratic; the whole frame and a spread of prefixes suffice.
    let step = (data.len() / 64).max(1);
    for end in (0..=data.len()).step_by(step).chain([data.len()]) {
        if let Some(found) = sniff_id(&data[..end]) {
            assert_eq!(
                Some(&found),
                id,
                "sniffed from the first {end} bytes of {:?}",
                String::from_utf8_lossy(data)
            );
        }
    }
}
