//! Unit tests of the JSON-RPC envelope, and the codec round-trip properties.

use serde_json::{Value, json};

use super::*;

fn decode_one(s: &str) -> Result<Message, DecodeError> {
    match decode(s.as_bytes())? {
        Decoded::Single(m) => Ok(m),
        Decoded::Batch(_) => panic!("unexpected batch"),
    }
}

#[test]
fn ids_are_strings_or_integers_never_null_or_fractions() {
    assert!(
        matches!(decode_one(r#"{"jsonrpc":"2.0","id":"a","method":"ping"}"#), Ok(Message::Request(r)) if r.id == RequestId::from("a"))
    );
    assert!(
        matches!(decode_one(r#"{"jsonrpc":"2.0","id":-3,"method":"ping"}"#), Ok(Message::Request(r)) if r.id == RequestId::Number(-3))
    );
    let null = decode_one(r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#).unwrap_err();
    assert_eq!(null.kind, DecodeErrorKind::InvalidRequest);
    let frac = decode_one(r#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#).unwrap_err();
    assert_eq!(frac.kind, DecodeErrorKind::InvalidRequest);
    assert!(frac.has_method);
    assert_eq!(frac.id, None, "a fractional id is not an id");
    let big =
        decode_one(r#"{"jsonrpc":"2.0","id":18446744073709551615,"method":"ping"}"#).unwrap_err();
    assert_eq!(big.kind, DecodeErrorKind::InvalidRequest);
}

#[test]
fn parse_errors_and_invalid_requests_are_told_apart() {
    let parse = decode(b"{\"jsonrpc\":\"2.0\",").unwrap_err();
    assert_eq!(parse.kind, DecodeErrorKind::Parse);
    assert_eq!(parse.code(), code::PARSE_ERROR);
    // A type error early in the frame must not hide a syntax error later in it.
    let hidden = decode(br#"{"jsonrpc":"2.0","id":1,"method":5, oops}"#).unwrap_err();
    assert_eq!(hidden.kind, DecodeErrorKind::Parse);
    let invalid = decode(br#"{"jsonrpc":"2.0","id":7,"method":5}"#).unwrap_err();
    assert_eq!(invalid.kind, DecodeErrorKind::InvalidRequest);
    assert_eq!(invalid.id, Some(RequestId::Number(7)));
    let utf8 = decode(b"{\"jsonrpc\":\"2.0\",\"method\":\"\xff\"}").unwrap_err();
    assert_eq!(utf8.kind, DecodeErrorKind::Parse);
}

#[test]
fn the_raw_excerpt_is_truncated() {
    let long = format!("{{\"x\":\"{}", "a".repeat(10_000));
    let err = decode(long.as_bytes()).unwrap_err();
    assert_eq!(err.excerpt.len(), RAW_EXCERPT_LIMIT);
    assert_eq!(err.len, long.len());
    assert!(err.to_string().len() < 600, "the message stays short");
}

#[test]
fn responses_are_answered_never() {
    let err = decode(br#"{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"x"}}"#)
        .unwrap_err();
    assert_eq!(err.to_response(), None);
    let err = decode(br#"{"jsonrpc":"2.0","id":1,"method":"x","params":5}"#).unwrap_err();
    let Some(Message::Error(e)) = err.to_response() else {
        panic!()
    };
    assert_eq!(e.id, Some(RequestId::Number(1)));
    assert_eq!(e.error.code, code::INVALID_REQUEST);
}

#[test]
fn error_ids_may_be_absent_or_null() {
    for frame in [
        r#"{"jsonrpc":"2.0","error":{"code":-32700,"message":"Parse error"}}"#,
        r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}"#,
    ] {
        assert!(matches!(
            decode_one(frame),
            Ok(Message::Error(ErrorResponse { id: None, .. }))
        ));
    }
}

#[test]
fn batches_decode_each_element_on_its_own() {
    let Decoded::Batch(items) =
        decode(br#"[{"jsonrpc":"2.0","method":"a"}, 5, {"jsonrpc":"2.0","id":1,"result":{}}]"#)
            .unwrap()
    else {
        panic!("expected a batch");
    };
    assert_eq!(items.len(), 3);
    assert!(items[0].is_ok() && items[1].is_err() && items[2].is_ok());
    assert_eq!(
        decode(b" []").unwrap_err().kind,
        DecodeErrorKind::InvalidRequest
    );
}

#[test]
fn payloads_are_kept_byte_for_byte() {
    let frame = r#"{"jsonrpc":"2.0","id":1,"result":{"b": 1,  "a":[1.50, "\u00e9"]}}"#;
    let m = decode_one(frame).unwrap();
    let out = String::from_utf8(m.encode()).unwrap();
    assert_eq!(
        out,
        r#"{"jsonrpc":"2.0","id":1,"result":{"b": 1,  "a":[1.50, "\u00e9"]}}"#
    );
}

#[test]
fn duplicate_envelope_members_are_invalid() {
    let err = decode(br#"{"jsonrpc":"2.0","id":1,"id":2,"method":"x"}"#).unwrap_err();
    assert_eq!(err.kind, DecodeErrorKind::InvalidRequest);
}

#[test]
fn sniffing_finds_only_the_outer_id() {
    assert_eq!(
        sniff_id(br#"{"jsonrpc":"2.0","id":7,"result":{"#),
        Some(RequestId::Number(7))
    );
    assert_eq!(
        sniff_id(br#"{"jsonrpc":"2.0", "id" : "abc","#),
        Some(RequestId::from("abc"))
    );
    // An id inside the result is not the message's; the real one comes last, out of reach.
    assert_eq!(
        sniff_id(br#"{"result":{"content":[{"id":3,"text":"x\"id\":4"}]},"jsonrpc":"2.0","#),
        None
    );
    assert_eq!(sniff_id(br#"{"jsonrpc":"2.0","method":"x"#), None);
    // A number cut by the end of the head is not trusted.
    assert_eq!(sniff_id(br#"{"id":12"#), None);
    // Nor is one that is not an integer.
    assert_eq!(sniff_id(br#"{"id":7.5,"result":{"#), None);
    assert_eq!(sniff_id(br#"{"id":7e3,"result":{"#), None);
    assert_eq!(
        sniff_id(br#"{"id":-3 ,"result":{"#),
        Some(RequestId::Number(-3))
    );
    assert_eq!(
        sniff_id(br#"{"result":{},"id":8}"#),
        Some(RequestId::Number(8))
    );
}

/// Found by the `jsonrpc` fuzz target: a string id with an escaped quote was cut at that
/// quote (`a\`), so an oversized frame failed a request that was not its own.
#[test]
fn sniffing_reads_escapes_in_a_string_id() {
    for (head, id) in [
        (&br#"{"jsonrpc":"2.0","id":"a\"b","result":{"#[..], "a\"b"),
        (br#"{"id":"back\\slash","result":{"#, "back\\slash"),
        (br#"{"id":"\u0041","result":{"#, "A"),
    ] {
        assert_eq!(sniff_id(head), Some(RequestId::from(id)), "{head:?}");
    }
    // A string cut by the end of the head, or broken, is no id.
    assert_eq!(sniff_id(br#"{"id":"a\"#), None);
    assert_eq!(sniff_id(br#"{"id":"\x","result":{"#), None);
}

mod proptests {
    use proptest::prelude::*;

    use super::*;
    use crate::schema::{CallToolResult, Tool};

    fn json_leaf() -> impl Strategy<Value = Value> {
        prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            (-1e9f64..1e9).prop_map(Value::from),
            ".{0,12}".prop_map(Value::from),
        ]
    }

    fn json_value() -> impl Strategy<Value = Value> {
        json_leaf().prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::btree_map(".{0,8}", inner, 0..4)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    fn object() -> impl Strategy<Value = JsonObjectAlias> {
        prop::collection::btree_map("[a-zA-Z_]{1,8}", json_value(), 0..4)
            .prop_map(|m| m.into_iter().collect())
    }

    type JsonObjectAlias = crate::JsonObject;

    /// An object whose member names no MCP type uses.
    fn unknown_object() -> impl Strategy<Value = JsonObjectAlias> {
        prop::collection::btree_map("x-[a-z]{1,6}", json_value(), 0..4)
            .prop_map(|m| m.into_iter().collect())
    }

    fn request_id() -> impl Strategy<Value = RequestId> {
        prop_oneof![
            any::<i64>().prop_map(RequestId::Number),
            ".{0,10}".prop_map(RequestId::String)
        ]
    }

    fn message() -> impl Strategy<Value = Message> {
        let params = || prop::option::of(object().prop_map(|o| RawJson::encode(&o).unwrap()));
        prop_oneof![
            (request_id(), ".{1,20}", params())
                .prop_map(|(id, method, params)| Message::Request(Request { id, method, params })),
            (".{1,20}", params()).prop_map(|(method, params)| Message::Notification(
                Notification { method, params }
            )),
            (request_id(), object()).prop_map(|(id, r)| Message::Response(Response {
                id,
                result: RawJson::encode(&r).unwrap()
            })),
            (
                prop::option::of(request_id()),
                any::<i64>(),
                ".{0,20}",
                prop::option::of(json_value())
            )
                .prop_map(|(id, code, message, data)| {
                    let mut error = ErrorObject::new(code, message);
                    error.data = data.filter(|d| !d.is_null());
                    Message::Error(ErrorResponse { id, error })
                }),
        ]
    }

    proptest! {
        #[test]
        fn decode_inverts_encode(m in message()) {
            let bytes = m.encode();
            prop_assert!(!bytes.contains(&b'\n'), "frames never contain a raw newline");
            prop_assert_eq!(decode(&bytes).unwrap(), Decoded::Single(m));
        }

        #[test]
        fn decode_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..64)) {
            let _ = decode(&bytes);
        }

        #[test]
        fn unknown_members_survive_a_typed_round_trip(extra in unknown_object(), inner in unknown_object()) {
            // Unknown members at the top and inside nested known objects. Their names cannot
            // be known ones (`x-` prefix), so every document must decode: a decode failure
            // fails the property instead of skipping the case.
            let mut tool = json!({
                "name": "t",
                "inputSchema": {"type": "object"},
                "annotations": {"readOnlyHint": true},
            });
            for (k, v) in &extra { tool.as_object_mut().unwrap().insert(k.clone(), v.clone()); }
            for (k, v) in &inner { tool["annotations"].as_object_mut().unwrap().insert(k.clone(), v.clone()); }
            let typed = serde_json::from_value::<Tool>(tool.clone()).unwrap();
            prop_assert_eq!(typed.extra.len(), extra.len());
            prop_assert_eq!(serde_json::to_value(&typed).unwrap(), tool);
            let mut result = json!({"content": [{"type": "text", "text": "x"}, {"type": "future_kind", "blob": 1}]});
            for (k, v) in &extra { result["content"][0].as_object_mut().unwrap().insert(k.clone(), v.clone()); }
            let typed = serde_json::from_value::<CallToolResult>(result.clone()).unwrap();
            prop_assert_eq!(serde_json::to_value(&typed).unwrap(), result);
        }
    }
}
