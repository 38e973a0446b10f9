//! The W3C Trace Context headers of a POST (`traceparent`, `tracestate`), for a server that
//! asks for them with [`HttpServerConfig::trace_headers`](super::HttpServerConfig): they are
//! put into the `params._meta` of each request the POST carries that has no `traceparent` of
//! its own, where MCP carries trace context (the OpenTelemetry MCP conventions, SEP-414), so
//! that a client instrumented at the HTTP layer only still joins its trace. A context in
//! `_meta` wins: it names the MCP request, the header only the HTTP request that carried it.
//!
//! Values are copied as they are (visible ASCII, at most 512 bytes); the handler parses them.

use http::HeaderMap;
use mcp_protocol::{Decoded, Message, RawJson, Request};
use serde_json::Value;

const TRACEPARENT: &str = "traceparent";
const TRACESTATE: &str = "tracestate";
const MAX_VALUE: usize = 512;

/// The context a POST's headers carry: its `traceparent`, with its `tracestate`.
#[derive(Debug)]
pub(super) struct TraceHeaders {
    parent: String,
    state: Option<String>,
}

/// The POST's trace context headers, if it has a usable `traceparent`.
pub(super) fn read(headers: &HeaderMap) -> Option<TraceHeaders> {
    let value = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
            .filter(|v| !v.is_empty() && v.len() <= MAX_VALUE)
            .map(str::to_owned)
    };
    Some(TraceHeaders {
        parent: value(TRACEPARENT)?,
        state: value(TRACESTATE),
    })
}

impl TraceHeaders {
    /// `decoded` with this context in the `_meta` of each request that lacks one.
    pub(super) fn apply(&self, decoded: Decoded) -> Decoded {
        let add = |message: Message| match message {
            Message::Request(request) => Message::Request(self.apply_to(request)),
            other => other,
        };
        match decoded {
            Decoded::Single(message) => Decoded::Single(add(message)),
            Decoded::Batch(items) => {
                Decoded::Batch(items.into_iter().map(|i| i.map(add)).collect())
            }
        }
    }

    /// `request` with this context in its `_meta` if it has none.
    pub(super) fn apply_to(&self, mut request: Request) -> Request {
        request.params = with_context(request.params, &self.parent, self.state.as_deref());
        request
    }
}

/// `params` with `_meta.traceparent` (and `tracestate`) added if `_meta` has no
/// `traceparent`; left as they are if they are not an object.
fn with_context(params: Option<RawJson>, parent: &str, state: Option<&str>) -> Option<RawJson> {
    let mut object = match &params {
        None => serde_json::Map::new(),
        Some(raw) => match raw.decode::<Value>() {
            Ok(Value::Object(object)) => object,
            _ => return params,
        },
    };
    let meta = object
        .entry("_meta")
        .or_insert_with(|| Value::Object(serde_json::Map::new()));
    let Value::Object(meta) = meta else {
        return params;
    };
    if meta.contains_key(TRACEPARENT) {
        return params;
    }
    meta.insert(TRACEPARENT.to_owned(), Value::String(parent.to_owned()));
    if let Some(state) = state
        && !meta.contains_key(TRACESTATE)
    {
        meta.insert(TRACESTATE.to_owned(), Value::String(state.to_owned()));
    }
    RawJson::encode(&object).ok().or(params)
}

#[cfg(test)]
mod tests {
    use http::HeaderValue;
    use serde_json::json;

    use super::*;

    const PARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    fn request(params: Value) -> Decoded {
        let frame = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params});
        mcp_protocol::decode(frame.to_string().as_bytes()).unwrap()
    }

    fn meta_of(decoded: &Decoded) -> Value {
        match decoded {
            Decoded::Single(Message::Request(r)) => {
                r.params.as_ref().unwrap().decode::<Value>().unwrap()["_meta"].clone()
            }
            other => panic!("{other:?}"),
        }
    }

    fn into_meta(headers: &HeaderMap, decoded: Decoded) -> Decoded {
        match read(headers) {
            Some(context) => context.apply(decoded),
            None => decoded,
        }
    }

    fn headers(state: Option<&str>) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(TRACEPARENT, HeaderValue::from_static(PARENT));
        if let Some(state) = state {
            h.insert(TRACESTATE, HeaderValue::from_str(state).unwrap());
        }
        h
    }

    #[test]
    fn the_headers_fill_a_meta_without_context() {
        let out = into_meta(&headers(Some("a=1")), request(json!({"name": "echo"})));
        assert!(read(&HeaderMap::new()).is_none());
        assert_eq!(
            meta_of(&out),
            json!({"traceparent": PARENT, "tracestate": "a=1"})
        );
        let out = into_meta(
            &headers(None),
            request(json!({"name": "echo", "_meta": {"progressToken": 3}})),
        );
        assert_eq!(
            meta_of(&out),
            json!({"progressToken": 3, "traceparent": PARENT})
        );
    }

    #[test]
    fn a_context_in_meta_wins_over_the_headers() {
        let own = "00-11111111111111111111111111111111-2222222222222222-00";
        let out = into_meta(
            &headers(Some("a=1")),
            request(json!({"name": "echo", "_meta": {"traceparent": own}})),
        );
        assert_eq!(meta_of(&out), json!({"traceparent": own}));
    }

    #[test]
    fn without_the_header_nothing_changes() {
        let out = into_meta(&HeaderMap::new(), request(json!({"name": "echo"})));
        assert_eq!(meta_of(&out), Value::Null);
    }
}
