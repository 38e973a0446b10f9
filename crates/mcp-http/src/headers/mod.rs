//! The request headers MCP 2026-07-28 mirrors from the JSON-RPC body, for both halves of the
//! Streamable HTTP transport (spec `basic/transports/streamable-http.mdx` §Request Metadata;
//! `server/tools.mdx` §x-mcp-header, SEP-2243). Pure: no I/O, no clock.
//!
//! - Values: [`encode`] and [`decode`] apply §Value Encoding, the `=?base64?…?=` sentinel for
//!   a value that is not a plain header value.
//! - Standard headers: [`standard_headers`] gives `Mcp-Method` and, for `tools/call`,
//!   `prompts/get` and `resources/read`, `Mcp-Name`.
//! - Tool parameters: [`ToolHeaders::from_schema`] reads the `x-mcp-header` annotations of an
//!   `inputSchema` or says why the tool is invalid; [`ToolHeaders::param_headers`] gives the
//!   `Mcp-Param-{Name}` headers of a call; [`retain_valid_tools`] drops the invalid tools from
//!   a `tools/list` result, as a client on this transport must.
//! - Server side: [`validate`] checks the headers of a request against its body and names the
//!   rule that failed; the server answers that with 400 and `HeaderMismatch` (-32020).
//!
//! Header names are compared case-insensitively (`http` keeps them lower-case); values are
//! case-sensitive. Errors name headers and schema locations, never header values.

#[cfg(test)]
mod tests;

use std::fmt;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use http::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::Value;

/// `MCP-Session-Id`: the session a handshake-era server gave, sent back on every request.
pub const SESSION_ID: HeaderName = HeaderName::from_static("mcp-session-id");
/// `MCP-Protocol-Version`: the negotiated revision, on every request after the handshake.
pub const PROTOCOL_VERSION: HeaderName = HeaderName::from_static("mcp-protocol-version");
/// `Last-Event-ID`: where a resumed SSE stream picks up.
pub const LAST_EVENT_ID: HeaderName = HeaderName::from_static("last-event-id");

/// `Mcp-Method`: the JSON-RPC `method` of the body, on every request.
pub(crate) const MCP_METHOD: HeaderName = HeaderName::from_static("mcp-method");

/// `Mcp-Name`: `params.name` of `tools/call` and `prompts/get`, `params.uri` of
/// `resources/read`, so intermediaries can route without reading the body.
pub(crate) const MCP_NAME: HeaderName = HeaderName::from_static("mcp-name");

/// The prefix of every tool-parameter header; `x-mcp-header: Region` gives `Mcp-Param-Region`.
pub(crate) const PARAM_PREFIX: &str = "Mcp-Param-";

/// The schema keyword that marks a tool parameter to mirror into a header.
pub(crate) const X_MCP_HEADER: &str = "x-mcp-header";

const SENTINEL_PREFIX: &str = "=?base64?";
const SENTINEL_SUFFIX: &str = "?=";

/// Encodes a value for `Mcp-Name` or `Mcp-Param-*` (§Value Encoding).
///
/// The value goes plain when every byte is printable ASCII (0x20–0x7E), it neither starts nor
/// ends with whitespace, and it is not shaped like the sentinel; otherwise it goes as
/// `=?base64?<standard base64, padded, of the UTF-8>?=`. An empty value is an empty header,
/// which is still sent: the header's presence tells the server the body has the value.
pub(crate) fn encode(value: &str) -> HeaderValue {
    if is_plain(value)
        && let Ok(plain) = HeaderValue::from_str(value)
    {
        return plain;
    }
    let encoded = format!("{SENTINEL_PREFIX}{}{SENTINEL_SUFFIX}", BASE64.encode(value));
    // Base64 and the sentinel are printable ASCII, which `HeaderValue` always accepts; the
    // fallback keeps this function total all the same.
    HeaderValue::from_str(&encoded).unwrap_or_else(|_| HeaderValue::from_static(""))
}

/// Whether [`encode`] may send the value as it is.
fn is_plain(value: &str) -> bool {
    let bytes = value.as_bytes();
    let printable = bytes.iter().all(|b| (0x20..=0x7e).contains(b));
    let padded = value.starts_with(' ') || value.ends_with(' ');
    let sentinel = value.starts_with(SENTINEL_PREFIX) && value.ends_with(SENTINEL_SUFFIX);
    printable && !padded && !sentinel
}

/// Why a header value could not be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum DecodeError {
    /// A byte outside RFC 9110's field-value characters (visible ASCII, space, tab).
    #[error("header value has characters outside visible ASCII, space and tab")]
    InvalidCharacters,
    /// The sentinel's payload is not canonical padded standard base64.
    #[error("header value is not valid base64 inside =?base64?…?=")]
    InvalidBase64,
    /// The sentinel's payload decodes to bytes that are not UTF-8.
    #[error("header value's base64 payload is not UTF-8")]
    NotUtf8,
}

/// Reads a `Mcp-Name` or `Mcp-Param-*` value the way a server must before comparing it with
/// the body.
///
/// Leading and trailing optional whitespace (space, tab) is dropped (RFC 9110 §5.5). A value
/// that starts with `=?base64?` and ends with `?=` is the sentinel: its payload must be
/// canonical padded standard base64 of UTF-8, or the value is refused (a lenient decoder
/// would let two different headers stand for one body value). A value with only the prefix
/// or only the suffix is a literal.
pub(crate) fn decode(value: &HeaderValue) -> Result<String, DecodeError> {
    let text = field_text(value)?;
    let Some(payload) = sentinel_payload(text) else {
        return Ok(text.to_owned());
    };
    let bytes = BASE64
        .decode(payload)
        .map_err(|_| DecodeError::InvalidBase64)?;
    String::from_utf8(bytes).map_err(|_| DecodeError::NotUtf8)
}

/// The value as text without its optional whitespace, if every byte is a field-value byte.
fn field_text(value: &HeaderValue) -> Result<&str, DecodeError> {
    let bytes = value.as_bytes();
    if !bytes
        .iter()
        .all(|&b| b == b'\t' || (0x20..=0x7e).contains(&b))
    {
        return Err(DecodeError::InvalidCharacters);
    }
    let text = std::str::from_utf8(bytes).map_err(|_| DecodeError::InvalidCharacters)?;
    Ok(text.trim_matches([' ', '\t']))
}

/// The base64 between the sentinel's markers, if the text is a sentinel. The markers may not
/// overlap: `=?base64?=` is a literal.
fn sentinel_payload(text: &str) -> Option<&str> {
    text.strip_prefix(SENTINEL_PREFIX)?
        .strip_suffix(SENTINEL_SUFFIX)
}

/// The body field `Mcp-Name` mirrors for a method: `Some(field)` for the methods that carry
/// one (`tools/call`, `prompts/get`, `resources/read`, and the tasks extension's `tasks/get`,
/// `tasks/update` and `tasks/cancel` by `taskId`), whether or not the body has it.
pub(crate) fn name_field(method: &str) -> Option<&'static str> {
    match method {
        "tools/call" | "prompts/get" => Some("name"),
        "resources/read" => Some("uri"),
        // The tasks extension (SEP-2663, Streamable HTTP routing headers).
        "tasks/get" | "tasks/update" | "tasks/cancel" => Some("taskId"),
        _ => None,
    }
}

/// The value `Mcp-Name` mirrors for a request, verbatim, if the method has one and the body
/// carries it as a string.
fn name_value<'a>(method: &str, params: Option<&'a Value>) -> Option<&'a str> {
    params?.get(name_field(method)?)?.as_str()
}

/// The standard headers of a JSON-RPC request (§Standard Request Headers): `Mcp-Method`
/// always; `Mcp-Name` for `tools/call` and `prompts/get` (`params.name`) and `resources/read`
/// (`params.uri`) when the body has it, encoded by [`encode`].
///
/// The method goes plain: the sentinel is defined for `Mcp-Name` and `Mcp-Param-*` only, and
/// MCP method names are ASCII. A method that is not a valid header value (never in MCP) is
/// encoded all the same, so that this function is total; the server will refuse it.
pub(crate) fn standard_headers(
    method: &str,
    params: Option<&Value>,
) -> Vec<(HeaderName, HeaderValue)> {
    let method_value = HeaderValue::from_str(method).unwrap_or_else(|_| encode(method));
    let mut headers = vec![(MCP_METHOD, method_value)];
    if let Some(name) = name_value(method, params) {
        headers.push((MCP_NAME, encode(name)));
    }
    headers
}

/// One annotated tool parameter: where its value sits in the call's `arguments` and the header
/// that carries it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ParamHeader {
    path: Vec<String>,
    label: String,
    name: HeaderName,
}

impl ParamHeader {
    /// The chain of property names from the root of `arguments` to the value.
    #[cfg(test)]
    pub(crate) fn path(&self) -> &[String] {
        &self.path
    }

    /// The header, `mcp-param-{name}` (lower-case, as `http` keeps names).
    #[cfg(test)]
    pub(crate) fn name(&self) -> &HeaderName {
        &self.name
    }

    /// The header as the tool spelled it, `Mcp-Param-{Name}`, for messages.
    #[cfg(test)]
    pub(crate) fn label(&self) -> &str {
        &self.label
    }

    /// The argument's value, if the arguments have one at this path.
    fn value<'a>(&self, arguments: &'a Value) -> Option<&'a Value> {
        self.path
            .iter()
            .try_fold(arguments, |value, key| value.get(key.as_str()))
    }
}

/// The `x-mcp-header` annotations of one tool's `inputSchema`, checked.
///
/// The client builds it to send a call's `Mcp-Param-*` headers; the server builds it for its
/// own tools to check them. A tool without annotations has an empty list.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ToolHeaders {
    params: Vec<ParamHeader>,
}

impl ToolHeaders {
    /// Reads the annotations of an `inputSchema`, or says why the tool is invalid (§Schema
    /// Extension): the name is empty, not a string, not an RFC 9110 token, or repeated
    /// case-insensitively; the property's `type` is not the string `"string"`, `"integer"` or
    /// `"boolean"`; or the annotation is not on a property reached from the root by
    /// `properties` keys alone. `$ref` is never followed.
    pub(crate) fn from_schema(input_schema: &Value) -> Result<Self, InvalidHeader> {
        let mut walk = Walk::default();
        walk.reachable(input_schema, &mut Vec::new())?;
        Ok(Self {
            params: walk.params,
        })
    }

    /// The annotated parameters, in the schema's key order.
    #[cfg(test)]
    pub(crate) fn params(&self) -> &[ParamHeader] {
        &self.params
    }

    /// Whether the tool has no annotated parameter.
    pub(crate) fn is_empty(&self) -> bool {
        self.params.is_empty()
    }

    /// The `Mcp-Param-*` headers of a call with these `arguments` (§Value Encoding): strings
    /// as they are, numbers in decimal, booleans `true`/`false`, each encoded by [`encode`].
    /// A parameter that is absent or null has no header, nor does one holding an object or
    /// an array (the schema forbids them; a server refuses the body anyway).
    pub(crate) fn param_headers(&self, arguments: &Value) -> Vec<(HeaderName, HeaderValue)> {
        self.params
            .iter()
            .filter_map(|param| {
                let text = header_text(param.value(arguments)?)?;
                Some((param.name.clone(), encode(&text)))
            })
            .collect()
    }
}

/// The header text of an argument's value, or `None` when it has no header.
fn header_text(value: &Value) -> Option<String> {
    match value {
        Value::String(text) => Some(text.clone()),
        Value::Bool(flag) => Some(flag.to_string()),
        Value::Number(number) => Some(number.to_string()),
        Value::Null | Value::Array(_) | Value::Object(_) => None,
    }
}

/// Why a tool's `x-mcp-header` annotations make it invalid. `at` is the JSON Pointer of the
/// annotated schema within `inputSchema`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum InvalidHeader {
    /// `x-mcp-header` is the empty string.
    #[error("x-mcp-header at {at:?} is empty")]
    Empty {
        /// Where in the schema.
        at: String,
    },
    /// `x-mcp-header` is not a string.
    #[error("x-mcp-header at {at:?} is not a string")]
    NotAString {
        /// Where in the schema.
        at: String,
    },
    /// The name has a character outside RFC 9110's `tchar` (a space, a colon, a control
    /// character, non-ASCII).
    #[error("x-mcp-header {name:?} at {at:?} is not an HTTP token")]
    NotToken {
        /// Where in the schema.
        at: String,
        /// The name as the schema has it.
        name: String,
    },
    /// The name repeats an earlier one, ignoring case.
    #[error("x-mcp-header {name:?} at {at:?} repeats another one (names ignore case)")]
    Duplicate {
        /// Where in the schema.
        at: String,
        /// The name as the schema has it.
        name: String,
    },
    /// The property's `type` is not the string `"string"`, `"integer"` or `"boolean"`
    /// (`number`, `object`, `array`, `null`, a list of types, or none).
    #[error("x-mcp-header at {at:?} is on a property whose type is not string, integer or boolean")]
    WrongType {
        /// Where in the schema.
        at: String,
    },
    /// The annotation is not on a property reached from the root through `properties` keys
    /// alone (it is under `items`, `$defs`, `anyOf`, `if`, …, or on the root itself).
    #[error("x-mcp-header at {at:?} is not on a property reached from the root by properties")]
    Unreachable {
        /// Where in the schema.
        at: String,
    },
}

/// A tool [`retain_valid_tools`] dropped, for the warning a client should log.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub(crate) struct DroppedTool {
    /// The tool's `name`, empty when it had none.
    pub(crate) name: String,
    /// What is wrong with its annotations.
    pub(crate) reason: InvalidHeader,
}

impl fmt::Display for DroppedTool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "tool {:?} dropped: {}", self.name, self.reason)
    }
}

/// Removes from a `tools/list` result's `tools` array every tool whose `x-mcp-header`
/// annotations are invalid, and says why for each (§Schema Extension: a client on Streamable
/// HTTP must exclude them and should log a warning; one bad tool must not hide the others).
/// Anything but an array is left alone.
pub(crate) fn retain_valid_tools(tools: &mut Value) -> Vec<DroppedTool> {
    let mut dropped = Vec::new();
    if let Value::Array(list) = tools {
        list.retain(|tool| {
            let schema = tool.get("inputSchema").unwrap_or(&Value::Null);
            match ToolHeaders::from_schema(schema) {
                Ok(_) => true,
                Err(reason) => {
                    let name = tool.get("name").and_then(Value::as_str).unwrap_or_default();
                    dropped.push(DroppedTool {
                        name: name.to_owned(),
                        reason,
                    });
                    false
                }
            }
        });
    }
    dropped
}

/// Keywords whose values are data, not schemas: an `x-mcp-header` key inside them is not an
/// annotation.
const DATA_KEYWORDS: [&str; 4] = ["const", "enum", "default", "examples"];

/// Keywords whose values map names to schemas: their keys are names, never keywords.
const SCHEMA_MAPS: [&str; 5] = [
    "properties",
    "patternProperties",
    "$defs",
    "definitions",
    "dependentSchemas",
];

/// The schema walk of [`ToolHeaders::from_schema`].
#[derive(Default)]
struct Walk {
    params: Vec<ParamHeader>,
    /// The lower-cased names seen so far.
    seen: Vec<String>,
}

impl Walk {
    /// A schema reached from the root through `properties` keys; `path` holds those keys.
    fn reachable(&mut self, schema: &Value, path: &mut Vec<String>) -> Result<(), InvalidHeader> {
        let Value::Object(map) = schema else {
            return Ok(());
        };
        if let Some(name) = map.get(X_MCP_HEADER) {
            if path.is_empty() {
                return Err(InvalidHeader::Unreachable { at: pointer(path) });
            }
            self.annotation(name, map.get("type"), path)?;
        }
        for (key, value) in map {
            if key == "properties"
                && let Value::Object(properties) = value
            {
                for (property, sub) in properties {
                    path.push(property.clone());
                    let walked = self.reachable(sub, path);
                    path.pop();
                    walked?;
                }
                continue;
            }
            if key != X_MCP_HEADER {
                let mut at = schema_pointer(path);
                at.push(key.clone());
                unreachable(key, value, &mut at)?;
            }
        }
        Ok(())
    }

    /// Checks one annotation on a reachable property and records it.
    fn annotation(
        &mut self,
        name: &Value,
        kind: Option<&Value>,
        path: &[String],
    ) -> Result<(), InvalidHeader> {
        let at = pointer(path);
        let Value::String(name) = name else {
            return Err(InvalidHeader::NotAString { at });
        };
        if name.is_empty() {
            return Err(InvalidHeader::Empty { at });
        }
        let label = format!("{PARAM_PREFIX}{name}");
        let header = match HeaderName::from_bytes(label.as_bytes()) {
            Ok(header) if name.bytes().all(is_tchar) => header,
            _ => {
                return Err(InvalidHeader::NotToken {
                    at,
                    name: name.clone(),
                });
            }
        };
        let lower = name.to_ascii_lowercase();
        if self.seen.contains(&lower) {
            return Err(InvalidHeader::Duplicate {
                at,
                name: name.clone(),
            });
        }
        if !matches!(
            kind.and_then(Value::as_str),
            Some("string" | "integer" | "boolean")
        ) {
            return Err(InvalidHeader::WrongType { at });
        }
        self.seen.push(lower);
        self.params.push(ParamHeader {
            path: path.to_vec(),
            label,
            name: header,
        });
        Ok(())
    }
}

/// Refuses any annotation under `key`'s value, which is off the `properties` chain. `at` is
/// the pointer of that value, as segments.
fn unreachable(key: &str, value: &Value, at: &mut Vec<String>) -> Result<(), InvalidHeader> {
    if DATA_KEYWORDS.contains(&key) {
        return Ok(());
    }
    match value {
        Value::Object(map) if SCHEMA_MAPS.contains(&key) => {
            for (name, sub) in map {
                at.push(name.clone());
                let walked = unreachable_schema(sub, at);
                at.pop();
                walked?;
            }
            Ok(())
        }
        _ => unreachable_schema(value, at),
    }
}

/// Refuses an annotation in `value` or anywhere below it.
fn unreachable_schema(value: &Value, at: &mut Vec<String>) -> Result<(), InvalidHeader> {
    match value {
        Value::Object(map) => {
            if map.contains_key(X_MCP_HEADER) {
                return Err(InvalidHeader::Unreachable {
                    at: join_pointer(at),
                });
            }
            for (key, sub) in map {
                at.push(key.clone());
                let walked = unreachable(key, sub, at);
                at.pop();
                walked?;
            }
            Ok(())
        }
        Value::Array(items) => {
            for (index, sub) in items.iter().enumerate() {
                at.push(index.to_string());
                let walked = unreachable_schema(sub, at);
                at.pop();
                walked?;
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// The schema pointer segments of a property path: `properties/a/properties/b`.
fn schema_pointer(path: &[String]) -> Vec<String> {
    path.iter()
        .flat_map(|key| ["properties".to_owned(), key.clone()])
        .collect()
}

/// The JSON Pointer of a property path's schema.
fn pointer(path: &[String]) -> String {
    join_pointer(&schema_pointer(path))
}

/// Joins segments into a JSON Pointer (RFC 6901), escaping `~` and `/`.
fn join_pointer(segments: &[String]) -> String {
    segments
        .iter()
        .map(|segment| format!("/{}", segment.replace('~', "~0").replace('/', "~1")))
        .collect()
}

/// RFC 9110 §5.6.2 `tchar`.
fn is_tchar(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&byte)
}

/// A header that does not agree with the body: the server answers 400 with JSON-RPC
/// `HeaderMismatch` (-32020). It names the header and the rule, never a value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("header mismatch: {header} {kind}")]
#[non_exhaustive]
pub(crate) struct Mismatch {
    /// The header at fault (lower-case).
    pub(crate) header: HeaderName,
    /// Which rule it broke.
    pub(crate) kind: MismatchKind,
}

/// The rule a header broke.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum MismatchKind {
    /// The body has the value but the header is absent.
    #[error("is missing")]
    Missing,
    /// The header's value, decoded, is not the body's.
    #[error("does not match the body")]
    Differs,
    /// The header has characters a field value may not have, or a broken base64 sentinel.
    #[error("is malformed")]
    Malformed,
    /// The header came more than once; intermediaries might read either.
    #[error("is repeated")]
    Repeated,
    /// The header came but the body has no value for it (absent or null).
    #[error("is present but the body has no value for it")]
    Unexpected,
}

/// Checks a request's headers against its body (§Server Validation), in this order:
///
/// 1. `Mcp-Method` is present and, without its optional whitespace, equals `method`
///    byte for byte (values are case-sensitive; `TOOLS/LIST` is not `tools/list`).
/// 2. For `tools/call`, `prompts/get` and `resources/read` with a string `params.name` (or
///    `params.uri`): `Mcp-Name` is present and decodes ([`decode`]) to it.
/// 3. For `tools/call` with `tool` (the analysed schema of the tool `params.name` names, when
///    the server knows it): each annotated parameter with a value in `params.arguments` has
///    its header, decoding to that value (numbers are compared as numbers, so `42.0` is
///    `42`); a parameter with no value has no header.
///
/// Header names match whatever their case. A header sent twice is refused. `Mcp-Param-*`
/// headers the tool does not annotate are ignored, as the spec requires of a server that does
/// not recognise them. `MCP-Protocol-Version` is not checked here.
pub(crate) fn validate(
    headers: &HeaderMap,
    method: &str,
    params: Option<&Value>,
    tool: Option<&ToolHeaders>,
) -> Result<(), Mismatch> {
    let sent_method = single(headers, &MCP_METHOD)?.ok_or(Mismatch {
        header: MCP_METHOD,
        kind: MismatchKind::Missing,
    })?;
    let sent_method = field_text(sent_method).map_err(|_| Mismatch {
        header: MCP_METHOD,
        kind: MismatchKind::Malformed,
    })?;
    if sent_method != method {
        return Err(Mismatch {
            header: MCP_METHOD,
            kind: MismatchKind::Differs,
        });
    }
    if let Some(name) = name_value(method, params) {
        let sent = single(headers, &MCP_NAME)?;
        check_text(&MCP_NAME, sent, name)?;
    }
    if method == "tools/call"
        && let Some(tool) = tool
    {
        let arguments = params
            .and_then(|params| params.get("arguments"))
            .unwrap_or(&Value::Null);
        for param in &tool.params {
            check_param(headers, param, arguments)?;
        }
    }
    Ok(())
}

/// The one value of a header, `None` when absent; a repeated header is refused.
fn single<'a>(
    headers: &'a HeaderMap,
    name: &HeaderName,
) -> Result<Option<&'a HeaderValue>, Mismatch> {
    let mut values = headers.get_all(name).iter();
    let first = values.next();
    if values.next().is_some() {
        return Err(Mismatch {
            header: name.clone(),
            kind: MismatchKind::Repeated,
        });
    }
    Ok(first)
}

/// Checks that a header is present and decodes to `expected`.
fn check_text(
    name: &HeaderName,
    sent: Option<&HeaderValue>,
    expected: &str,
) -> Result<(), Mismatch> {
    let fail = |kind| Mismatch {
        header: name.clone(),
        kind,
    };
    let sent = sent.ok_or(fail(MismatchKind::Missing))?;
    let decoded = decode(sent).map_err(|_| fail(MismatchKind::Malformed))?;
    if decoded == expected {
        Ok(())
    } else {
        Err(fail(MismatchKind::Differs))
    }
}

/// Checks one annotated parameter's header against its argument.
fn check_param(
    headers: &HeaderMap,
    param: &ParamHeader,
    arguments: &Value,
) -> Result<(), Mismatch> {
    let fail = |kind| Mismatch {
        header: param.name.clone(),
        kind,
    };
    let sent = single(headers, &param.name)?;
    let value = param.value(arguments);
    match (value, sent) {
        (Some(Value::Number(number)), Some(sent)) => {
            let decoded = decode(sent).map_err(|_| fail(MismatchKind::Malformed))?;
            if same_number(&decoded, number) {
                Ok(())
            } else {
                Err(fail(MismatchKind::Differs))
            }
        }
        (Some(value), sent) => match header_text(value) {
            Some(expected) => check_text(&param.name, sent, &expected),
            None if sent.is_some() => Err(fail(MismatchKind::Unexpected)),
            None => Ok(()),
        },
        (None, Some(_)) => Err(fail(MismatchKind::Unexpected)),
        (None, None) => Ok(()),
    }
}

/// Whether a header's text is the body's number: exactly for integers, else as doubles
/// (§Server Validation: `42.0` and `42` are equal). Only decimal notation counts; `NaN`,
/// `inf` and hex are never a match.
fn same_number(text: &str, number: &serde_json::Number) -> bool {
    let decimal = !text.is_empty()
        && text
            .bytes()
            .all(|b| b.is_ascii_digit() || matches!(b, b'-' | b'+' | b'.' | b'e' | b'E'));
    if !decimal {
        return false;
    }
    if let (Ok(sent), Some(body)) = (text.parse::<i64>(), number.as_i64()) {
        return sent == body;
    }
    if let (Ok(sent), Some(body)) = (text.parse::<u64>(), number.as_u64()) {
        return sent == body;
    }
    match (text.parse::<f64>(), number.as_f64()) {
        (Ok(sent), Some(body)) => sent.is_finite() && sent == body,
        _ => false,
    }
}
