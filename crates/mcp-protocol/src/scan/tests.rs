//! The scans against plain byte loops and serde_json, on chosen and on generated text.

use proptest::prelude::*;
use serde_json::{Value, json};

use super::*;

#[test]
fn a_member_is_found_at_the_top_level_only() {
    let text = r#"{"content":[{"type":"text","text":"a \"resultType\": \"x\"","resultType":"nested"}],
        "structuredContent":{"resultType":"deeper"} , "resultType" : "input_required","z":[1,{"a":[]}]}"#;
    assert_eq!(
        top_level_string(text, "resultType"),
        Some(Member::Plain("input_required"))
    );
    assert_eq!(
        top_level_string(
            r#"{"content":[{"resultType":"nested"}],"s":"resultType"}"#,
            "resultType"
        ),
        Some(Member::Absent)
    );
    assert_eq!(
        top_level_string(" { } ", "resultType"),
        Some(Member::Absent)
    );
}

#[test]
fn what_is_not_plain_is_left_to_the_decoder() {
    for text in [
        // Not an object.
        r#"["resultType","complete"]"#,
        r#""resultType""#,
        // A key with an escape, which here spells the name.
        r#"{"result\u0054ype":"complete"}"#,
        // Twice.
        r#"{"resultType":"complete","resultType":"complete"}"#,
        // Not a string, or a string with an escape.
        r#"{"resultType":null}"#,
        r#"{"resultType":{"a":1}}"#,
        r#"{"resultType":"compl\u0065te"}"#,
        // Cut short (never a RawJson, but it must not panic).
        r#"{"resultType":"complete"#,
        r#"{"a":"\"#,
        "{",
        "",
    ] {
        assert_eq!(top_level_string(text, "resultType"), None, "{text}");
    }
}

#[test]
fn the_search_finds_a_quote_or_backslash_in_every_position() {
    for len in [0usize, 1, 15, 16, 17, 31, 32, 33, 100] {
        for at in 0..len {
            for special in [b'"', b'\\', 0u8, 0x1f] {
                let mut bytes = vec![b'x'; len];
                bytes[at] = special;
                let quote = special == b'"' || special == b'\\';
                assert_eq!(
                    quote_or_backslash(&bytes, 0),
                    quote.then_some(at),
                    "{len} {at}"
                );
                assert_eq!(quote_or_backslash(&bytes, at + 1), None);
            }
        }
    }
    assert_eq!(
        quote_or_backslash(b"a\"c", 7),
        None,
        "a start past the end is no match"
    );
}

proptest! {
    #[test]
    fn the_search_agrees_with_a_byte_loop(
        bytes in prop::collection::vec(prop::sample::select(b"ab\"\\\x00\x1f\x20~\xff".to_vec()), 0..80),
        from in 0usize..90,
    ) {
        let naive = |hit: &dyn Fn(u8) -> bool| {
            bytes.iter().enumerate().skip(from).find(|(_, b)| hit(**b)).map(|(i, _)| i)
        };
        prop_assert_eq!(quote_or_backslash(&bytes, from), naive(&|b| b == b'"' || b == b'\\'));
    }

    #[test]
    fn the_member_agrees_with_serde_json(value in object(), spaced in any::<bool>()) {
        let text = if spaced {
            serde_json::to_string_pretty(&value).unwrap_or_default()
        } else {
            value.to_string()
        };
        let expected = value.get("resultType");
        match top_level_string(&text, "resultType") {
            Some(Member::Absent) => prop_assert_eq!(expected, None),
            Some(Member::Plain(s)) => prop_assert_eq!(expected, Some(&json!(s))),
            // Left to the decoder: only a value that is not a plain string, or an object with
            // a key that is written with an escape.
            None => {
                let escaped = |s: &str| s.contains(['"', '\\']) || s.chars().any(char::is_control);
                let plain_value = expected.and_then(Value::as_str).is_some_and(|s| !escaped(s));
                let escaped_key = value.as_object().is_some_and(|o| o.keys().any(|k| escaped(k)));
                prop_assert!(!plain_value || escaped_key, "{}", text);
            }
        }
    }
}

/// JSON objects whose keys are often `resultType`, at every depth, with values of every kind.
fn object() -> impl Strategy<Value = Value> {
    let text = prop::sample::select(vec![
        "complete",
        "input_required",
        "resultType",
        "a \"quoted\" one",
        "back\\slash",
        "line\nbreak",
        "é",
        "",
        "}]{[,:",
    ])
    .prop_map(|s| json!(s));
    let leaf = prop_oneof![
        text,
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i32>().prop_map(Value::from),
    ];
    let value = leaf
        .prop_recursive(4, 40, 5, move |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                members(inner),
            ]
        })
        .boxed();
    members(value)
}

/// An object of up to five members of `value`, under keys that are often `resultType`.
fn members(value: BoxedStrategy<Value>) -> impl Strategy<Value = Value> {
    let key = prop::sample::select(vec!["resultType", "content", "a", "resultTyp", "x{\"", ""]);
    prop::collection::vec((key, value), 0..5).prop_map(|members| {
        Value::Object(
            members
                .into_iter()
                .map(|(k, v)| (k.to_owned(), v))
                .collect(),
        )
    })
}
