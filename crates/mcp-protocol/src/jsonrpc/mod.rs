//! The JSON-RPC 2.0 envelope, as MCP uses it (spec `basic/index.mdx`, SPEC.md §2.1).
//!
//! Payloads (`params`, `result`, `error.data`) stay raw JSON text here: the envelope is decoded
//! in one cheap pass, and a payload is decoded later by the type that its method expects.
//! A proxy that forwards a message re-encodes the payload byte for byte.

#[cfg(test)]
mod tests;

use std::fmt;

use serde::de::{self, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde::ser::{SerializeMap, SerializeStruct as _, Serializer};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;

use crate::wire::{Key, wire_struct};

/// How many bytes of an undecodable message a [`DecodeError`] keeps, for diagnostics.
pub const RAW_EXCERPT_LIMIT: usize = 256;

/// Standard JSON-RPC and MCP error codes, named so that call sites say what they mean.
pub mod code {
    /// Invalid JSON was received.
    pub const PARSE_ERROR: i64 = -32700;
    /// The JSON sent is not a valid request object.
    pub const INVALID_REQUEST: i64 = -32600;
    /// The method does not exist or is not available (also: an undeclared capability).
    pub const METHOD_NOT_FOUND: i64 = -32601;
    /// Invalid method parameters (also: unsupported protocol version, unknown tool).
    pub const INVALID_PARAMS: i64 = -32602;
    /// Internal JSON-RPC error.
    pub const INTERNAL_ERROR: i64 = -32603;
    /// MCP 2025-11-25: the resource does not exist (2026-07-28 uses -32602 instead).
    pub const RESOURCE_NOT_FOUND: i64 = -32002;
    /// MCP 2025-11-25: the request needs a URL-mode elicitation first.
    pub const URL_ELICITATION_REQUIRED: i64 = -32042;
    /// MCP 2026-07-28: the HTTP headers do not match the body (HTTP 400).
    pub const HEADER_MISMATCH: i64 = -32020;
    /// MCP 2026-07-28: the request needs a client capability it did not declare;
    /// `data.requiredCapabilities` names them (HTTP 400).
    pub const MISSING_REQUIRED_CLIENT_CAPABILITY: i64 = -32021;
    /// MCP 2026-07-28: the request's protocol version is not supported; `data` lists
    /// `supported` and echoes `requested` (HTTP 400).
    pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;
}

/// A request id: a string or an integer, never null (spec `basic/index.mdx#requests`).
///
/// Ids are compared exactly: `1` and `"1"` are different ids.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RequestId {
    /// An integer id; the sessions in this crate allocate these.
    Number(i64),
    /// A string id, as some peers use.
    String(String),
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Number(n) => write!(f, "{n}"),
            Self::String(s) => write!(f, "{s:?}"),
        }
    }
}

impl From<i64> for RequestId {
    fn from(n: i64) -> Self {
        Self::Number(n)
    }
}

impl From<&str> for RequestId {
    fn from(s: &str) -> Self {
        Self::String(s.to_owned())
    }
}

impl Serialize for RequestId {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Number(n) => serializer.serialize_i64(*n),
            Self::String(s) => serializer.serialize_str(s),
        }
    }
}

impl<'de> Deserialize<'de> for RequestId {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct IdVisitor;
        impl Visitor<'_> for IdVisitor {
            type Value = RequestId;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string or an integer id")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<RequestId, E> {
                Ok(RequestId::Number(v))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<RequestId, E> {
                i64::try_from(v)
                    .map(RequestId::Number)
                    .map_err(|_| E::custom("integer id out of range"))
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<RequestId, E> {
                Err(E::custom(
                    "id must be a string or an integer, not a fraction",
                ))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<RequestId, E> {
                Ok(RequestId::String(v.to_owned()))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<RequestId, E> {
                Ok(RequestId::String(v))
            }
            fn visit_unit<E: de::Error>(self) -> Result<RequestId, E> {
                Err(E::custom("id must not be null"))
            }
        }
        deserializer.deserialize_any(IdVisitor)
    }
}

/// A JSON value kept as the exact text the peer sent (or that we encoded).
///
/// Decoding it into a type happens once, by the type the context expects; re-encoding it copies
/// the text unchanged. Equality compares the text.
///
/// The text is kept as a plain `Box<str>`, not serde_json's `RawValue`: building a `RawValue`
/// from text parses it again, which for a 1 MiB result we have just written cost as much as
/// writing it. Text from outside is still checked ([`RawJson::from_string`], decoding).
#[derive(Clone)]
pub struct RawJson(Box<str>);

impl RawJson {
    /// Encodes a value. Fails only for values serde cannot express as JSON (non-string map keys).
    pub fn encode<T: Serialize + ?Sized>(value: &T) -> Result<Self, serde_json::Error> {
        // Our writer: serde_json's output, with strings copied a run at a time. What it writes
        // is valid JSON by construction (the tests parse it back), so it is not checked again.
        crate::json_out::to_string(value).map(|json| Self(json.into_boxed_str()))
    }

    /// Wraps what our own writer encoded: valid JSON by construction.
    pub(crate) fn from_encoded(json: String) -> Self {
        Self(json.into_boxed_str())
    }

    /// Takes JSON text, checking that it is one valid JSON value.
    pub fn from_string(json: String) -> Result<Self, serde_json::Error> {
        RawValue::from_string(json).map(|raw| Self(raw.into()))
    }

    /// The empty object `{}`, the result of `ping` and of other acknowledgements.
    pub fn empty_object() -> Self {
        Self(Box::from("{}"))
    }

    /// The JSON text.
    pub fn get(&self) -> &str {
        &self.0
    }

    /// Decodes the text into `T`.
    pub fn decode<'a, T: Deserialize<'a>>(&'a self) -> Result<T, serde_json::Error> {
        serde_json::from_str(&self.0)
    }

    /// Whether the text is a JSON object (the only shape MCP uses for params and results).
    pub fn is_object(&self) -> bool {
        self.0.trim_start().starts_with('{')
    }
}

impl PartialEq for RawJson {
    fn eq(&self, other: &Self) -> bool {
        self.get() == other.get()
    }
}

impl fmt::Debug for RawJson {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.get())
    }
}

impl Serialize for RawJson {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        // As serde_json's `RawValue` serializes itself, so that its serializers (and ours, and
        // `to_value`) take the text as JSON rather than as a string.
        let mut raw = serializer.serialize_struct(crate::json_out::RAW_VALUE_TOKEN, 1)?;
        raw.serialize_field(crate::json_out::RAW_VALUE_TOKEN, &*self.0)?;
        raw.end()
    }
}

impl<'de> Deserialize<'de> for RawJson {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Box::<RawValue>::deserialize(deserializer).map(|raw| Self(raw.into()))
    }
}

wire_struct! {
    /// The `error` member of an error response.
    pub struct ErrorObject {
        required {
            /// The error code; see [`code`] for the standard ones.
            code: i64 = "code",
            /// A short description, one sentence.
            message: String = "message",
        }
        optional {
            /// Additional information defined by the sender.
            data: Value = "data",
        }
    }
}

impl fmt::Display for ErrorObject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (code {})", self.message, self.code)
    }
}

/// A request: a method call that expects exactly one response with the same id.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// The id, unique among the sender's requests in this session.
    pub id: RequestId,
    /// The method name, such as `tools/call`.
    pub method: String,
    /// The parameters, an object when present.
    pub params: Option<RawJson>,
}

/// A notification: a one-way message that is never answered.
#[derive(Debug, Clone, PartialEq)]
pub struct Notification {
    /// The method name, such as `notifications/progress`.
    pub method: String,
    /// The parameters, an object when present.
    pub params: Option<RawJson>,
}

/// A successful response.
#[derive(Debug, Clone, PartialEq)]
pub struct Response {
    /// The id of the request this answers.
    pub id: RequestId,
    /// The result, decoded later by the type the request expects.
    pub result: RawJson,
}

/// An error response.
#[derive(Debug, Clone, PartialEq)]
pub struct ErrorResponse {
    /// The id of the request this answers; absent when the request's id could not be read.
    pub id: Option<RequestId>,
    /// What went wrong.
    pub error: ErrorObject,
}

/// Any one JSON-RPC message.
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    /// A request.
    Request(Request),
    /// A notification.
    Notification(Notification),
    /// A successful response.
    Response(Response),
    /// An error response.
    Error(ErrorResponse),
}

/// What one frame of input decoded to.
///
/// Batches exist only in MCP 2025-03-26; we accept them from such peers and never send them.
#[derive(Debug, Clone, PartialEq)]
pub enum Decoded {
    /// A single message.
    Single(Message),
    /// A JSON array of messages, each decoded on its own so that one bad element does not
    /// spoil the others.
    Batch(Vec<Result<Message, DecodeError>>),
}

/// Why a frame of input is not a JSON-RPC message.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum DecodeErrorKind {
    /// The bytes are not JSON (or not UTF-8): JSON-RPC code -32700.
    Parse,
    /// The JSON is not a valid JSON-RPC message: JSON-RPC code -32600.
    InvalidRequest,
}

/// A frame that could not be decoded, with enough kept to answer and to diagnose it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeError {
    /// Parse error or invalid request.
    pub kind: DecodeErrorKind,
    /// The id, when the frame had a readable one: an error response must carry it.
    pub id: Option<RequestId>,
    /// Whether the frame had a `method` member, so that an answer is owed (a response is never
    /// answered, or two broken peers would bounce errors forever).
    pub has_method: bool,
    /// What was wrong, in words.
    pub detail: String,
    /// The start of the frame, at most [`RAW_EXCERPT_LIMIT`] bytes, lossily decoded.
    pub excerpt: String,
    /// The frame's full length in bytes.
    pub len: usize,
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match self.kind {
            DecodeErrorKind::Parse => "not valid JSON",
            DecodeErrorKind::InvalidRequest => "not a valid JSON-RPC message",
        };
        write!(
            f,
            "{what}: {} ({} bytes, starting {:?})",
            self.detail, self.len, self.excerpt
        )
    }
}

impl std::error::Error for DecodeError {}

impl DecodeError {
    fn new(kind: DecodeErrorKind, detail: impl Into<String>, raw: &[u8]) -> Self {
        let cut = raw.len().min(RAW_EXCERPT_LIMIT);
        Self {
            kind,
            id: None,
            has_method: false,
            detail: detail.into(),
            excerpt: String::from_utf8_lossy(&raw[..cut]).into_owned(),
            len: raw.len(),
        }
    }

    /// The JSON-RPC code that answers this error.
    pub fn code(&self) -> i64 {
        match self.kind {
            DecodeErrorKind::Parse => code::PARSE_ERROR,
            DecodeErrorKind::InvalidRequest => code::INVALID_REQUEST,
        }
    }

    /// The error response owed to the sender, if any: parse errors and invalid requests are
    /// answered; a broken response or notification is not.
    pub fn to_response(&self) -> Option<Message> {
        let owed = match self.kind {
            DecodeErrorKind::Parse => true,
            DecodeErrorKind::InvalidRequest => self.has_method && self.id.is_some(),
        };
        owed.then(|| {
            let message = match self.kind {
                DecodeErrorKind::Parse => "Parse error",
                DecodeErrorKind::InvalidRequest => "Invalid Request",
            };
            let mut error = ErrorObject::new(self.code(), message.to_owned());
            error.data = Some(Value::String(self.detail.clone()));
            Message::Error(ErrorResponse {
                id: self.id.clone(),
                error,
            })
        })
    }
}

/// Finds the top-level `"id"` of a JSON-RPC message from the first bytes of a frame too large
/// to decode, so that the request it answers can be failed rather than left to time out.
///
/// Only a key of the outermost object counts: an `"id"` inside `params` or `result` is never
/// taken for the message's. `None` when the id is not within `head` (servers that write it
/// last) or is not a string or an integer.
pub fn sniff_id(head: &[u8]) -> Option<RequestId> {
    let text = match std::str::from_utf8(head) {
        Ok(t) => t,
        Err(e) => std::str::from_utf8(&head[..e.valid_up_to()]).ok()?,
    };
    let bytes = text.as_bytes();
    let (mut depth, mut i) = (0usize, 0usize);
    while i < bytes.len() {
        match bytes[i] {
            b'{' | b'[' => depth += 1,
            b'}' | b']' => depth = depth.saturating_sub(1),
            b'"' => {
                let start = i + 1;
                let mut j = start;
                while j < bytes.len() && bytes[j] != b'"' {
                    j += if bytes[j] == b'\\' { 2 } else { 1 };
                }
                if j >= bytes.len() {
                    return None;
                }
                let after = text[j + 1..].trim_start();
                if depth == 1 && &text[start..j] == "id" && after.starts_with(':') {
                    let value = after[1..].trim_start();
                    if value.starts_with('"') {
                        // The string ends at the first quote no backslash escapes; JSON reads
                        // its escapes (`\"`, `\\`, `\u0041`), so the id is the one the
                        // decoder would give.
                        let bytes = value.as_bytes();
                        let mut end = 1;
                        while end < bytes.len() && bytes[end] != b'"' {
                            end += if bytes[end] == b'\\' { 2 } else { 1 };
                        }
                        let quoted = value.get(..=end)?;
                        return serde_json::from_str::<String>(quoted)
                            .ok()
                            .map(RequestId::String);
                    }
                    let digits: String = value
                        .chars()
                        .take_while(|c| c.is_ascii_digit() || *c == '-')
                        .collect();
                    // The number must end within the head, and end there: `7.5` or `7e3` is
                    // not the id 7.
                    let complete = value[digits.len()..]
                        .starts_with(|c: char| c == ',' || c == '}' || c.is_ascii_whitespace());
                    return complete
                        .then(|| digits.parse().ok().map(RequestId::Number))
                        .flatten();
                }
                i = j;
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// Decodes one frame (a stdio line, an HTTP body, an SSE `data` field).
pub fn decode(bytes: &[u8]) -> Result<Decoded, DecodeError> {
    let first = bytes.iter().find(|b| !b.is_ascii_whitespace());
    if first == Some(&b'[') {
        let items: Vec<&RawValue> =
            serde_json::from_slice(bytes).map_err(|e| classify(e, bytes))?;
        if items.is_empty() {
            return Err(DecodeError::new(
                DecodeErrorKind::InvalidRequest,
                "empty batch",
                bytes,
            ));
        }
        let messages = items
            .into_iter()
            .map(|raw| decode_message(raw.get().as_bytes()))
            .collect();
        return Ok(Decoded::Batch(messages));
    }
    decode_message(bytes).map(Decoded::Single)
}

/// Decodes one frame that must be a single message (batches refused).
pub fn decode_message(bytes: &[u8]) -> Result<Message, DecodeError> {
    let envelope: Envelope = serde_json::from_slice(bytes).map_err(|e| classify(e, bytes))?;
    envelope.into_message().map_err(|(detail, id, has_method)| {
        let mut err = DecodeError::new(DecodeErrorKind::InvalidRequest, detail, bytes);
        err.id = id;
        err.has_method = has_method;
        err
    })
}

/// Turns a serde error into a precise decode error: syntax means -32700, anything else -32600,
/// with the id recovered if the JSON has a readable one.
fn classify(err: serde_json::Error, bytes: &[u8]) -> DecodeError {
    if err.is_syntax() || err.is_eof() || err.is_io() {
        return DecodeError::new(DecodeErrorKind::Parse, err.to_string(), bytes);
    }
    // A type error inside a member can stop serde before it sees a syntax error further on.
    if let Err(syntax) = serde_json::from_slice::<IgnoredAny>(bytes) {
        return DecodeError::new(DecodeErrorKind::Parse, syntax.to_string(), bytes);
    }
    let mut out = DecodeError::new(DecodeErrorKind::InvalidRequest, err.to_string(), bytes);
    if let Ok(Value::Object(obj)) = serde_json::from_slice::<Value>(bytes) {
        out.id = obj.get("id").and_then(|id| RequestId::deserialize(id).ok());
        out.has_method = obj.contains_key("method");
    }
    out
}

/// Every member an envelope may have, read in one pass before it is classified.
#[derive(Default)]
struct Envelope {
    version: Option<String>,
    /// `Some(None)` is an explicit `null`.
    id: Option<Option<RequestId>>,
    method: Option<String>,
    params: Option<RawJson>,
    result: Option<RawJson>,
    error: Option<ErrorObject>,
    /// Names of members JSON-RPC does not define, for the error message.
    unknown: Vec<String>,
}

type EnvelopeError = (String, Option<RequestId>, bool);

impl Envelope {
    fn into_message(self) -> Result<Message, EnvelopeError> {
        let id = self.id.clone().flatten();
        let has_method = self.method.is_some();
        let fail = |detail: String| Err((detail, id.clone(), has_method));
        match self.version.as_deref() {
            Some("2.0") => {}
            Some(other) => return fail(format!("`jsonrpc` must be \"2.0\", not {other:?}")),
            None => return fail("missing `jsonrpc` member".to_owned()),
        }
        if let Some(params) = &self.params {
            let text = params.get().trim_start();
            if !text.starts_with('{') && !text.starts_with('[') {
                return fail("`params` must be an object or an array".to_owned());
            }
        }
        match (self.method, self.result, self.error) {
            (Some(method), None, None) => match self.id {
                Some(Some(id)) => Ok(Message::Request(Request {
                    id,
                    method,
                    params: self.params,
                })),
                Some(None) => fail("request `id` must not be null".to_owned()),
                None => Ok(Message::Notification(Notification {
                    method,
                    params: self.params,
                })),
            },
            (None, Some(result), None) => match self.id {
                Some(Some(id)) if self.params.is_none() => {
                    Ok(Message::Response(Response { id, result }))
                }
                Some(Some(_)) => fail("a response must not carry `params`".to_owned()),
                _ => fail("a result response needs a non-null `id`".to_owned()),
            },
            (None, None, Some(error)) => Ok(Message::Error(ErrorResponse {
                id: self.id.flatten(),
                error,
            })),
            (None, Some(_), Some(_)) => fail("a response has both `result` and `error`".to_owned()),
            (Some(_), _, _) => {
                fail("a message has both `method` and `result` or `error`".to_owned())
            }
            (None, None, None) if !self.unknown.is_empty() => fail(format!(
                "no `method`, `result` or `error`; unexpected members {:?}",
                self.unknown
            )),
            (None, None, None) => fail("no `method`, `result` or `error`".to_owned()),
        }
    }
}

impl<'de> Deserialize<'de> for Envelope {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct EnvelopeVisitor;
        impl<'de> Visitor<'de> for EnvelopeVisitor {
            type Value = Envelope;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON-RPC message object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Envelope, A::Error> {
                let mut env = Envelope::default();
                while let Some(key) = map.next_key::<Key<'de>>()? {
                    let dup = match key.as_str() {
                        "jsonrpc" => env.version.replace(map.next_value()?).is_some(),
                        "id" => env.id.replace(map.next_value()?).is_some(),
                        "method" => env.method.replace(map.next_value()?).is_some(),
                        "params" => env.params.replace(map.next_value()?).is_some(),
                        "result" => env.result.replace(map.next_value()?).is_some(),
                        "error" => env.error.replace(map.next_value()?).is_some(),
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                            env.unknown.push(key.as_str().to_owned());
                            false
                        }
                    };
                    if dup {
                        return Err(de::Error::custom(format_args!(
                            "duplicate member `{}`",
                            key.as_str()
                        )));
                    }
                }
                Ok(env)
            }
        }
        deserializer.deserialize_map(EnvelopeVisitor)
    }
}

impl Message {
    /// Encodes the message as compact JSON (no newline: framing is the transport's job).
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.size_hint());
        self.encode_into(&mut out);
        out
    }

    /// Appends the compact JSON of the message to `out`, so that a transport can coalesce
    /// several messages into one buffer.
    pub fn encode_into(&self, out: &mut Vec<u8>) {
        out.reserve(self.size_hint());
        // Every member is either a plain value or already valid JSON text, so serialization
        // into memory cannot fail.
        if crate::json_out::extend(out, self).is_err() {
            unreachable!("a Message always serializes");
        }
    }

    /// About how many bytes the encoding takes: the raw payload's length and room for the
    /// envelope, so that a big message is written into a buffer allocated once.
    fn size_hint(&self) -> usize {
        let payload = match self {
            Self::Request(r) => r.params.as_ref().map_or(0, |p| p.get().len()),
            Self::Notification(n) => n.params.as_ref().map_or(0, |p| p.get().len()),
            Self::Response(r) => r.result.get().len(),
            Self::Error(_) => 0,
        };
        payload + 128
    }

    /// The id, for requests and responses.
    pub fn id(&self) -> Option<&RequestId> {
        match self {
            Self::Request(r) => Some(&r.id),
            Self::Response(r) => Some(&r.id),
            Self::Error(e) => e.id.as_ref(),
            Self::Notification(_) => None,
        }
    }

    /// The method, for requests and notifications.
    pub fn method(&self) -> Option<&str> {
        match self {
            Self::Request(r) => Some(&r.method),
            Self::Notification(n) => Some(&n.method),
            Self::Response(_) | Self::Error(_) => None,
        }
    }
}

impl Serialize for Message {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Request(r) => {
                let mut map =
                    serializer.serialize_map(Some(3 + usize::from(r.params.is_some())))?;
                map.serialize_entry("jsonrpc", "2.0")?;
                map.serialize_entry("id", &r.id)?;
                map.serialize_entry("method", &r.method)?;
                if let Some(p) = &r.params {
                    map.serialize_entry("params", p)?;
                }
                map.end()
            }
            Self::Notification(n) => {
                let mut map =
                    serializer.serialize_map(Some(2 + usize::from(n.params.is_some())))?;
                map.serialize_entry("jsonrpc", "2.0")?;
                map.serialize_entry("method", &n.method)?;
                if let Some(p) = &n.params {
                    map.serialize_entry("params", p)?;
                }
                map.end()
            }
            Self::Response(r) => {
                let mut map = serializer.serialize_map(Some(3))?;
                map.serialize_entry("jsonrpc", "2.0")?;
                map.serialize_entry("id", &r.id)?;
                map.serialize_entry("result", &r.result)?;
                map.end()
            }
            Self::Error(e) => {
                let mut map = serializer.serialize_map(Some(2 + usize::from(e.id.is_some())))?;
                map.serialize_entry("jsonrpc", "2.0")?;
                if let Some(id) = &e.id {
                    map.serialize_entry("id", id)?;
                }
                map.serialize_entry("error", &e.error)?;
                map.end()
            }
        }
    }
}
