//! The MCP 2026-07-28 header codec of `mcp-http` (`headers`: the `=?base64?…?=` value
//! encoding, `Mcp-Method`/`Mcp-Name`/`Mcp-Param-*` from a request body, and the server's check
//! of the headers against the body).
//!
//! The module is crate-private, so this target compiles its very source file (`#[path]`);
//! nothing is copied, so it cannot drift.
//!
//! The first byte picks the mode:
//! - 0: the rest is a string; `decode(encode(s)) == s`, and `encode` goes plain exactly for a
//!   printable-ASCII value that is not padded with spaces and not shaped like the sentinel;
//! - 1: the rest is a header value from a hostile client; `decode` does not panic, a value it
//!   reads encodes back to something that reads the same, and a sentinel is read only if its
//!   base64 is canonical (two different headers never stand for one body value);
//! - 2: the rest is JSON `{"method", "params", "schema"}`; when the schema is valid, the
//!   headers the client half makes for that request pass the server half's `validate`, and a
//!   changed `Mcp-Name` or `Mcp-Param-*` value fails it; `retain_valid_tools` keeps
//!   exactly the tools whose schema is valid.

#![no_main]

#[allow(dead_code, unreachable_pub)]
#[path = "../../crates/mcp-http/src/headers/mod.rs"]
mod headers;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use http::header::{HeaderMap, HeaderValue};
use libfuzzer_sys::fuzz_target;
use serde_json::{Value, json};

use headers::{MismatchKind, ToolHeaders};

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    match mode % 3 {
        0 => value_round_trip(rest),
        1 => hostile_value(rest),
        _ => request(rest),
    }
});

fn value_round_trip(rest: &[u8]) {
    let Ok(value) = std::str::from_utf8(rest) else {
        return;
    };
    let encoded = headers::encode(value);
    assert_eq!(
        headers::decode(&encoded).as_deref(),
        Ok(value),
        "{encoded:?}"
    );
    let plain = value.bytes().all(|b| (0x20..=0x7e).contains(&b))
        && !value.starts_with(' ')
        && !value.ends_with(' ')
        && !(value.starts_with("=?base64?") && value.ends_with("?="));
    assert_eq!(
        encoded.as_bytes() == value.as_bytes(),
        plain,
        "{value:?} as {encoded:?}"
    );
}

fn hostile_value(rest: &[u8]) {
    let Ok(sent) = HeaderValue::from_bytes(rest) else {
        return;
    };
    let Ok(read) = headers::decode(&sent) else {
        return;
    };
    assert_eq!(
        headers::decode(&headers::encode(&read)).as_deref(),
        Ok(read.as_str())
    );
    let text = std::str::from_utf8(rest).expect("a value that decodes is ASCII");
    let trimmed = text.trim_matches([' ', '\t']);
    match trimmed
        .strip_prefix("=?base64?")
        .and_then(|t| t.strip_suffix("?="))
    {
        Some(payload) => assert_eq!(BASE64.encode(read.as_bytes()), payload, "not canonical"),
        None => assert_eq!(read, trimmed),
    }
}

fn request(rest: &[u8]) {
    let Ok(Value::Object(body)) = serde_json::from_slice::<Value>(rest) else {
        return;
    };
    let method = body
        .get("method")
        .and_then(Value::as_str)
        .unwrap_or("tools/call");
    let params = body.get("params");
    let schema = body.get("schema").cloned().unwrap_or(Value::Null);

    // The tools/list filter agrees with the schema check, tool by tool.
    let mut tools = json!([{"name": "t", "inputSchema": schema.clone()}, {"name": "u"}]);
    let dropped = headers::retain_valid_tools(&mut tools);
    let valid = ToolHeaders::from_schema(&schema);
    assert_eq!(dropped.len(), usize::from(valid.is_err()));
    assert_eq!(tools.as_array().map(Vec::len), Some(2 - dropped.len()));

    let Ok(tool) = valid else {
        return;
    };
    let arguments = params
        .and_then(|p| p.get("arguments"))
        .unwrap_or(&Value::Null);
    // The client sends `Mcp-Param-*` on `tools/call` only, as the server reads them.
    let param_headers = if method == "tools/call" {
        tool.param_headers(arguments)
    } else {
        Vec::new()
    };
    let mut sent = HeaderMap::new();
    for (name, value) in headers::standard_headers(method, params)
        .into_iter()
        .chain(param_headers)
    {
        sent.append(name, value);
    }
    let verdict = headers::validate(&sent, method, params, Some(&tool));
    // `Mcp-Method` goes as it is and is compared byte for byte; a method that is no plain
    // header value (not visible ASCII, space or tab, or padded) is refused, as documented.
    // (`HeaderValue::from_str` takes bytes above 0x7F, which the server never reads as text.)
    let sendable = method
        .bytes()
        .all(|b| b == b'\t' || (0x20..=0x7e).contains(&b))
        && method.trim_matches([' ', '\t']) == method;
    if !sendable {
        assert!(verdict.is_err(), "{method:?} passed");
        return;
    }
    assert_eq!(verdict, Ok(()), "our own headers for {body:?}: {sent:?}");

    // Change one mirrored value (a string gains a letter; so does a number or a boolean's
    // text, which then reads as no number and no boolean): the server must see it.
    let names: Vec<_> = sent
        .keys()
        .filter(|n| *n != headers::MCP_METHOD)
        .cloned()
        .collect();
    for name in names {
        let Some(value) = sent.get(&name).and_then(|v| headers::decode(v).ok()) else {
            continue;
        };
        let mut tampered = sent.clone();
        tampered.insert(name.clone(), headers::encode(&format!("{value}x")));
        let err = headers::validate(&tampered, method, params, Some(&tool))
            .expect_err("a changed header passed");
        assert_eq!((err.header, err.kind), (name, MismatchKind::Differs));
    }
}
