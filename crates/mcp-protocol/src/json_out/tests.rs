//! Our writer against serde_json's: the same bytes for every kind of string and value, and the
//! text parses back to what was written.

use std::collections::BTreeMap;

use proptest::prelude::*;
use serde::Serialize;
use serde_json::{Value, json};

use super::*;
use crate::schema::{CallToolResult, ContentBlock, Tool};
use crate::{Message, RawJson, RequestId, Response};

/// Ours and serde_json's text of `value`, both ways ours writes (a `String` and a `Vec`).
fn both<T: Serialize + ?Sized>(value: &T) -> (String, String) {
    let ours = to_string(value).unwrap();
    let mut bytes = b"prefix".to_vec();
    extend(&mut bytes, value).unwrap();
    assert_eq!(&bytes[..6], b"prefix");
    assert_eq!(
        &bytes[6..],
        ours.as_bytes(),
        "a Vec gets what a String gets"
    );
    (ours, serde_json::to_string(value).unwrap())
}

/// A string's encoding is serde_json's, and it parses back to the string.
fn check_str(text: &str) {
    let (ours, theirs) = both(text);
    assert_eq!(ours, theirs, "for {text:?}");
    assert_eq!(serde_json::from_str::<String>(&ours).unwrap(), text);
}

#[test]
fn every_ascii_byte_is_written_as_serde_json_writes_it() {
    // Each byte alone, and at each place a 16-byte block can put it: first, last, just past a
    // block, and in the scalar tail.
    for b in 0u8..0x80 {
        let c = char::from(b);
        check_str(&c.to_string());
        for at in [0, 1, 15, 16, 17, 31, 32, 33, 40] {
            let mut text = "x".repeat(41);
            text.insert(at, c);
            check_str(&text);
        }
    }
    // The escapes themselves, spelled out (serde_json could be wrong too).
    assert_eq!(
        to_string("\"\\\u{8}\u{c}\n\r\t\u{0}\u{1f}\u{7f}/").unwrap(),
        "\"\\\"\\\\\\b\\f\\n\\r\\t\\u0000\\u001f\u{7f}/\""
    );
}

#[test]
fn runs_of_plain_text_and_escapes_of_every_length() {
    check_str("");
    for n in [1, 7, 15, 16, 17, 63, 64, 65, 1000, 1 << 20] {
        check_str(&"a".repeat(n));
        check_str(&"\"".repeat(n.min(5000)));
        check_str(&"\n".repeat(n.min(5000)));
        check_str(&format!(
            "{}\\{}",
            "é".repeat(n / 2),
            "😀".repeat(n / 4 + 1)
        ));
    }
    // A quote and a control character in every block of a long text.
    let mut text = String::new();
    for i in 0..4096 {
        text.push_str(&"ü".repeat(i % 23));
        text.push(if i % 2 == 0 { '"' } else { '\u{1}' });
    }
    check_str(&text);
}

#[test]
fn multi_byte_text_is_copied_as_is() {
    let text = "日本語 — ☃ \u{2028}\u{2029} 😀 \u{fffd}";
    check_str(text);
    assert_eq!(to_string(text).unwrap(), format!("\"{text}\""));
}

#[derive(Serialize)]
enum Shape {
    Unit,
    Newtype(u8),
    Tuple(i32, String),
    Struct { a: Option<f64>, b: char },
}

#[derive(Serialize)]
struct Everything {
    flag: bool,
    small: i8,
    big: i128,
    huge: u128,
    min: i64,
    max: u64,
    float: f64,
    single: f32,
    nan: f64,
    infinite: f32,
    letter: char,
    #[serde(with = "serde_bytes_like")]
    bytes: Vec<u8>,
    none: Option<u8>,
    unit: (),
    shapes: Vec<Shape>,
    tuple: (u8, &'static str),
    int_keys: BTreeMap<i32, u8>,
    bool_keys: BTreeMap<bool, u8>,
    char_keys: BTreeMap<char, u8>,
    raw: Box<serde_json::value::RawValue>,
}

/// Serializes a `Vec<u8>` through `serialize_bytes`.
mod serde_bytes_like {
    pub(super) fn serialize<S: serde::Serializer>(v: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(v)
    }
}

#[test]
fn every_kind_of_value_is_written_as_serde_json_writes_it() {
    let value = Everything {
        flag: true,
        small: -128,
        big: i128::MIN,
        huge: u128::MAX,
        min: i64::MIN,
        max: u64::MAX,
        float: 0.1 + 0.2,
        single: 1.5e-7,
        nan: f64::NAN,
        infinite: f32::INFINITY,
        letter: '"',
        bytes: vec![0, 1, 255],
        none: None,
        unit: (),
        shapes: vec![
            Shape::Unit,
            Shape::Newtype(7),
            Shape::Tuple(-1, "t\n".into()),
            Shape::Struct {
                a: Some(-0.0),
                b: 'é',
            },
        ],
        tuple: (0, ""),
        int_keys: [(-5, 1), (10, 2)].into(),
        bool_keys: [(false, 1), (true, 2)].into(),
        char_keys: [('\n', 1)].into(),
        raw: serde_json::value::RawValue::from_string(r#"{ "kept" : [1, 2 ] }"#.into()).unwrap(),
    };
    let (ours, theirs) = both(&value);
    assert_eq!(ours, theirs);
    // Written as is, spaces and all.
    assert!(ours.contains(r#""raw":{ "kept" : [1, 2 ] }"#), "{ours}");
    assert!(ours.contains(r#""nan":null,"infinite":null"#), "{ours}");
}

#[test]
fn a_key_that_is_not_a_string_is_refused_as_serde_json_refuses_it() {
    let mut map = BTreeMap::new();
    map.insert(vec![1], 1);
    assert!(serde_json::to_string(&map).is_err());
    let err = to_string(&map).unwrap_err();
    assert!(err.to_string().contains("key must be a string"), "{err}");
    let mut floats = BTreeMap::new();
    floats.insert(ordered(f64::NAN), 1);
    assert!(serde_json::to_string(&floats).is_err());
    assert!(to_string(&floats).is_err());
    let mut finite = BTreeMap::new();
    finite.insert(ordered(2.5), 1);
    assert_eq!(
        to_string(&finite).unwrap(),
        serde_json::to_string(&finite).unwrap()
    );
}

/// An f64 that can be a map key.
fn ordered(v: f64) -> Ordered {
    Ordered(v)
}

#[derive(Serialize)]
struct Ordered(f64);
impl PartialEq for Ordered {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other).is_eq()
    }
}
impl Eq for Ordered {}
impl PartialOrd for Ordered {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Ordered {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.total_cmp(&other.0)
    }
}

#[test]
fn a_message_with_a_raw_result_is_written_as_serde_json_writes_it() {
    let mut result = CallToolResult::new(vec![ContentBlock::text("a\tb \"c\" 😀")]);
    result.structured_content = Some(json!({"n": 1.25, "k": [null, true, "\u{0}"]}));
    let raw = RawJson::encode(&result).unwrap();
    assert_eq!(raw.get(), serde_json::to_string(&result).unwrap());
    let message = Message::Response(Response {
        id: RequestId::from("x\"y"),
        result: raw,
    });
    let (ours, theirs) = both(&message);
    assert_eq!(ours, theirs);
    assert_eq!(message.encode(), theirs.as_bytes());
    // The result is copied as it is, by either writer, not written as a string.
    let raw = RawJson::from_string(r#"{ "a" : [ 1 ] }"#.into()).unwrap();
    let message = Message::Response(Response {
        id: RequestId::Number(1),
        result: raw.clone(),
    });
    let want = r#"{"jsonrpc":"2.0","id":1,"result":{ "a" : [ 1 ] }}"#;
    assert_eq!(serde_json::to_string(&message).unwrap(), want);
    assert_eq!(to_string(&message).unwrap(), want);
    assert_eq!(serde_json::to_value(&raw).unwrap(), json!({"a": [1]}));
    let mut tool = Tool::new("t".into());
    tool.description = Some("line\nline".into());
    tool.input_schema = Some(json!({"type": "object", "properties": {"a": {"minimum": -3}}}));
    let (ours, theirs) = both(&tool);
    assert_eq!(ours, theirs);
}

/// Any JSON value, strings of any characters included.
fn any_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
        any::<String>().prop_map(Value::String),
        "[\\x00-\\x7f]{0,40}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 64, 8, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..8).prop_map(Value::Array),
            prop::collection::vec((any::<String>(), inner), 0..8)
                .prop_map(|members| Value::Object(members.into_iter().collect())),
        ]
    })
}

proptest! {
    #[test]
    fn any_string_is_written_as_serde_json_writes_it(text in any::<String>()) {
        check_str(&text);
    }

    #[test]
    fn any_mostly_plain_string_is_written_as_serde_json_writes_it(
        text in "[a-z\"\\\\\\x00-\\x1f\u{80}-\u{10ffff}]{0,70}",
        pad in 0usize..40,
    ) {
        check_str(&text);
        check_str(&format!("{}{text}", "p".repeat(pad)));
    }

    #[test]
    fn any_value_is_written_as_serde_json_writes_it(value in any_value()) {
        let (ours, theirs) = both(&value);
        prop_assert_eq!(&ours, &theirs);
        prop_assert_eq!(serde_json::from_str::<Value>(&ours).unwrap(), value);
    }
}
