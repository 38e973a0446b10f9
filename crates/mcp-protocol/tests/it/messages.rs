//! Every message fixture goes through one `check`: the envelope decodes, the payload decodes by
//! the type its method defines, and encoding it again gives back the same JSON (nothing lost).
//! Error fixtures must fail at one of those steps, and the snapshot records how.
//!
//! File names say what a payload is: `<method with / as ->.<request|result|notification>[.case].json`
//! (`tools-call.result.json` is a `tools/call` result); `.error` and `.batch` files carry no
//! typed payload.

use std::path::Path;

use mcp_protocol::schema::{
    ClientNotification, ClientRequest, RequestMethod, ServerNotification, ServerRequest, method,
};
use mcp_protocol::{Decoded, Message, RawJson, decode};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// What the file name says the payload is.
struct Name {
    method: String,
    kind: String,
}

fn name_of(path: &Path) -> Name {
    let stem = path
        .file_name()
        .unwrap()
        .to_str()
        .unwrap()
        .trim_end_matches(".json");
    let mut parts = stem.split('.');
    let method = parts.next().unwrap().replace('-', "/");
    let kind = parts.next().unwrap_or("").to_owned();
    Name { method, kind }
}

/// Decodes `raw` as `T`, and returns its debug form and its re-encoding.
fn typed<T: DeserializeOwned + Serialize + std::fmt::Debug>(
    raw: &RawJson,
) -> Result<(String, Value), String> {
    let value: T = raw.decode().map_err(|e| e.to_string())?;
    Ok((format!("{value:#?}"), serde_json::to_value(&value).unwrap()))
}

macro_rules! result_by_method {
    ($method:expr, $raw:expr, [$($m:ident),* $(,)?]) => {
        match $method {
            $( <method::$m as RequestMethod>::METHOD => typed::<<method::$m as RequestMethod>::Result>($raw), )*
            other => panic!("no result type is known for {other}: fix the fixture's file name"),
        }
    };
}

fn typed_result(method: &str, raw: &RawJson) -> Result<(String, Value), String> {
    result_by_method!(
        method,
        raw,
        [
            Initialize,
            Ping,
            ListTools,
            CallTool,
            ListResources,
            ListResourceTemplates,
            ReadResource,
            Subscribe,
            Unsubscribe,
            ListPrompts,
            GetPrompt,
            Complete,
            SetLevel,
            CreateMessage,
            Elicit,
            ListRoots,
        ]
    )
}

/// Routes `method` with the first routing enum that knows it (client-sent, then server-sent)
/// and returns the debug form and the re-encoded params; `None` when that enum does not.
macro_rules! route {
    ($enum:ident, $method:expr, $params:expr) => {
        match $enum::decode($method, $params).map_err(|e| e.to_string())? {
            $enum::Other { .. } => None,
            routed => {
                let params = routed.encode_params().unwrap();
                let value = params.map_or(Value::Object(Default::default()), |p| {
                    serde_json::from_str(p.get()).unwrap()
                });
                Some((format!("{routed:#?}"), value))
            }
        }
    };
}

/// Routes a request or notification as a host or gateway would: the client-sent methods
/// first, then the server-sent ones. Returns the debug form and the re-encoded params.
fn typed_call(message: &Message) -> Result<(String, Value), String> {
    let routed = match message {
        Message::Request(r) => match route!(ClientRequest, &r.method, r.params.as_ref()) {
            Some(found) => Some(found),
            None => route!(ServerRequest, &r.method, r.params.as_ref()),
        },
        Message::Notification(n) => {
            match route!(ClientNotification, &n.method, n.params.as_ref()) {
                Some(found) => Some(found),
                None => route!(ServerNotification, &n.method, n.params.as_ref()),
            }
        }
        _ => unreachable!("only requests and notifications are routed"),
    };
    routed.ok_or_else(|| format!("{} is routed nowhere", message.method().unwrap_or_default()))
}

/// The payload as sent, `{}` when absent.
fn payload_of(message: &Message) -> Value {
    let raw = match message {
        Message::Request(r) => r.params.as_ref(),
        Message::Notification(n) => n.params.as_ref(),
        Message::Response(r) => Some(&r.result),
        Message::Error(_) => None,
    };
    raw.map_or(Value::Object(Default::default()), |r| {
        serde_json::from_str(r.get()).unwrap()
    })
}

/// Decodes a fixture all the way down; `Err` says at which step and why it failed.
fn decode_fixture(path: &Path, bytes: &[u8]) -> Result<String, String> {
    let name = name_of(path);
    let decoded = decode(bytes).map_err(|e| {
        format!(
            "envelope: {e}\nkind: {:?}\nid: {:?}\nanswer: {}",
            e.kind,
            e.id,
            e.to_response()
                .map_or("none".to_owned(), |m| String::from_utf8(m.encode())
                    .unwrap())
        )
    })?;
    let message = match decoded {
        Decoded::Single(m) => m,
        Decoded::Batch(items) => {
            assert_eq!(
                name.kind,
                "batch",
                "{}: only .batch fixtures may be arrays",
                path.display()
            );
            let kinds: Vec<String> = items
                .iter()
                .map(|i| match i {
                    Ok(m) => format!("{:?} {:?}", m.method(), m.id()),
                    Err(e) => format!("error {e}"),
                })
                .collect();
            return Ok(format!("batch of {}\n{}", items.len(), kinds.join("\n")));
        }
    };
    // The envelope itself is lossless.
    let original: Value = serde_json::from_slice(bytes).unwrap();
    assert_eq!(
        serde_json::from_slice::<Value>(&message.encode()).unwrap(),
        original,
        "{}",
        path.display()
    );

    let (debug, reencoded) = match &message {
        Message::Response(r) => typed_result(&name.method, &r.result)
            .map_err(|e| format!("{} result: {e}", name.method))?,
        Message::Error(e) => return Ok(format!("error response\nid: {:?}\n{:#?}", e.id, e.error)),
        call => {
            let expected = if matches!(call, Message::Request(_)) {
                "request"
            } else {
                "notification"
            };
            assert_eq!(
                name.kind,
                expected,
                "{}: the file name says {}",
                path.display(),
                name.kind
            );
            assert_eq!(
                call.method(),
                Some(name.method.as_str()),
                "{}",
                path.display()
            );
            typed_call(call).map_err(|e| format!("{} params: {e}", name.method))?
        }
    };
    assert_eq!(
        reencoded,
        payload_of(&message),
        "{}: typed round trip lost or changed data",
        path.display()
    );
    Ok(format!(
        "{:?} {}\n{debug}",
        message.id(),
        message.method().unwrap_or(&name.method)
    ))
}

#[track_caller]
fn check(path: &Path, ok: bool) {
    let bytes = std::fs::read(path).unwrap();
    let outcome = decode_fixture(path, &bytes);
    let text = match (ok, outcome) {
        (true, Ok(text)) => text,
        (false, Err(text)) => text,
        (true, Err(e)) => panic!("{}: should decode but failed: {e}", path.display()),
        (false, Ok(_)) => panic!("{}: should fail but decoded", path.display()),
    };
    insta::assert_snapshot!(text);
}

#[test]
fn ok() {
    insta::glob!("../../../../fixtures", "jsonrpc/ok/*.json", |path| check(
        path, true
    ));
}

#[test]
fn err() {
    insta::glob!("../../../../fixtures", "jsonrpc/err/*.json", |path| check(
        path, false
    ));
}
