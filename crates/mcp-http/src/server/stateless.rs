//! The stateless era on the server half (spec 2026-07-28 `basic/transports/streamable-http.mdx`),
//! routed as Python's dual-era manager does: a POST whose `MCP-Protocol-Version` is present and
//! not a handshake-era version (an unknown value included) is a stateless request. It gets no
//! session id and no GET stream; its own session (an `mcp-session` core in the stateless era,
//! joined to the server's [`Sessions`](mcp_session::Sessions)) lives as long as its response.
//!
//! Before the session sees it, the request's headers must agree with its body:
//! `MCP-Protocol-Version` with `_meta` `protocolVersion`, and `Mcp-Method`, `Mcp-Name` and the
//! `Mcp-Param-*` of the tool's `x-mcp-header` arguments ([`headers::validate`]); a mismatch is
//! 400 with `HeaderMismatch` (-32020). The answer is one JSON body when the handler sends
//! nothing before it, with the status the spec gives its error (400 for -32020, -32021,
//! -32022, -32602; 404 with -32601); when it streams (progress, a listen stream) it is an SSE
//! stream of that request's messages alone, and closing it cancels the request.

use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Request, Response, StatusCode};
use hyper::body::Incoming;
use mcp_protocol::schema::meta_key;
use mcp_protocol::{
    Decoded, Era, ErrorObject, ErrorResponse, Message, ProtocolVersion, RequestId, code,
};
use mcp_session::{CoreOptions, Handler, ServerCore, ServerTransport};
use serde_json::Value;

use super::body::Encoded;
use super::queue::{self, Budget};
use super::{
    HttpServer, ResponseBody, SseBody, json_response, lock, rpc_error, sse_response, undecodable,
};
use crate::headers::PROTOCOL_VERSION;
use crate::headers::{self, ToolHeaders};

/// Whether a request with these headers takes the stateless path: its `MCP-Protocol-Version`
/// is present and names no handshake-era version.
pub(super) fn is_stateless(headers: &HeaderMap) -> bool {
    headers.get(&PROTOCOL_VERSION).is_some_and(|v| {
        let version = ProtocolVersion::parse(v.to_str().unwrap_or(""));
        version.era() != Some(Era::Handshake)
    })
}

/// The HTTP status of a stateless request answered with this JSON-RPC error.
fn status_of(code: i64) -> StatusCode {
    match code {
        code::METHOD_NOT_FOUND => StatusCode::NOT_FOUND,
        code::PARSE_ERROR
        | code::INVALID_REQUEST
        | code::INVALID_PARAMS
        | code::HEADER_MISMATCH
        | code::MISSING_REQUIRED_CLIENT_CAPABILITY
        | code::UNSUPPORTED_PROTOCOL_VERSION => StatusCode::BAD_REQUEST,
        _ => StatusCode::OK,
    }
}

/// A JSON-RPC error answering request `id`, with the status its code calls for.
fn refuse(id: RequestId, error: ErrorObject) -> Response<ResponseBody> {
    json_response(
        status_of(error.code),
        &Message::Error(ErrorResponse {
            id: Some(id),
            error,
        }),
    )
}

impl<H: Handler> HttpServer<H> {
    /// One stateless request, from its headers to its answer.
    pub(super) async fn post_stateless(
        self: Arc<Self>,
        req: Request<Incoming>,
        caller: Option<super::auth::Allowed>,
    ) -> Response<ResponseBody> {
        let (parts, body) = req.into_parts();
        let bytes = match self.read_body(body).await {
            Ok(bytes) => bytes,
            Err(refusal) => return refusal,
        };
        let request = match mcp_protocol::decode(&bytes) {
            Ok(Decoded::Single(Message::Request(request))) => request,
            // A notification or a response concerns no request of this server: nothing to do.
            Ok(Decoded::Single(_)) => return super::empty(StatusCode::ACCEPTED),
            Ok(Decoded::Batch(_)) => return super::no_batches(),
            Err(e) => return undecodable(&e),
        };
        let request = match self
            .config
            .trace_headers
            .then(|| super::trace_headers::read(&parts.headers))
            .flatten()
        {
            Some(trace) => trace.apply_to(request),
            None => request,
        };
        let params: Option<Value> = request.params.as_ref().and_then(|p| p.decode().ok());
        if let Some(mismatch) =
            self.header_mismatch(&parts.headers, &request.method, params.as_ref())
        {
            return refuse(
                request.id,
                ErrorObject::new(code::HEADER_MISMATCH, mismatch),
            );
        }
        let id = request.id.clone();
        // The request is its own session: its stream has the session's budget to itself.
        let session = Budget::new(self.config.max_session_buffer_bytes);
        let (tx, mut rx) = queue::channel(self.limits(&session));
        let mut options = CoreOptions::new().stateless().sessions(&self.registry);
        // The request belongs to its authenticated caller, the same at every replica: its
        // tasks are bound to it (the spec binds tasks to the authorization context).
        if let Some(caller) = &caller {
            options = options.name(subject_name(&caller.subject));
        }
        let core = ServerCore::with_options(
            self.config.server.clone(),
            Arc::clone(&self.handler),
            OneRequest {
                id: id.clone(),
                tx: Mutex::new(Some(tx)),
            },
            options,
        );
        let guard = CloseOnDrop(Arc::clone(&core));
        core.receive_as(
            Decoded::Single(Message::Request(request)),
            caller.map(|c| c.caller),
        );
        drop(core);
        let ended = || {
            rpc_error(
                StatusCode::INTERNAL_SERVER_ERROR,
                code::INTERNAL_ERROR,
                "the request ended without an answer",
            )
        };
        let Ok(Some(mut first)) = rx.recv().await else {
            return ended();
        };
        if self.config.json_response {
            // One JSON body: what the handler sends before its answer is not delivered.
            while first.answer.is_none() {
                match rx.recv().await {
                    Ok(Some(next)) => first = next,
                    Ok(None) => break,
                    Err(_) => return ended(),
                }
            }
        }
        match first.answer {
            Some(status) => json_bytes(status, first.json),
            None => sse_response(SseBody::messages(first, rx, Box::new(guard))),
        }
    }

    /// Why the headers do not agree with the body, if they do not: `MCP-Protocol-Version`
    /// against `_meta` (a request without the `_meta` member is the session's to refuse,
    /// with -32602), then the standard and tool-parameter headers.
    fn header_mismatch(
        &self,
        headers: &HeaderMap,
        method: &str,
        params: Option<&Value>,
    ) -> Option<String> {
        let declared = params
            .and_then(|p| p.get("_meta"))
            .and_then(|m| m.get(meta_key::PROTOCOL_VERSION));
        if let Some(declared) = declared {
            let sent = headers.get(&PROTOCOL_VERSION).map(HeaderValue::as_bytes);
            if declared.as_str().map(str::as_bytes) != sent {
                return Some(
                    "MCP-Protocol-Version header does not match _meta protocolVersion".to_owned(),
                );
            }
        }
        let tool = (method == "tools/call")
            .then(|| params?.get("name")?.as_str())
            .flatten()
            .and_then(|name| self.tool_headers(name));
        headers::validate(headers, method, params, tool.as_ref())
            .err()
            .map(|mismatch| mismatch.to_string())
    }

    /// The checked `x-mcp-header` annotations of one of the handler's tools, read from its
    /// schema on every call (a tool list can change). A tool whose annotations are invalid
    /// has none to check: clients drop such tools, so none of their calls mirror anything.
    fn tool_headers(&self, name: &str) -> Option<ToolHeaders> {
        let schema: Value = self.handler.tool_schema(name)?.decode().ok()?;
        ToolHeaders::from_schema(&schema).ok()
    }
}

/// A JSON body of an encoded message.
fn json_bytes(status: StatusCode, json: Bytes) -> Response<ResponseBody> {
    let mut r = Response::new(http_body_util::Either::Left(http_body_util::Full::new(
        json,
    )));
    *r.status_mut() = status;
    r.headers_mut().insert(
        http::header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    r
}

/// Carries the messages of one stateless request to its response, and ends the stream with
/// its answer.
struct OneRequest {
    id: RequestId,
    tx: Mutex<Option<queue::Sender<Encoded>>>,
}

impl ServerTransport for OneRequest {
    fn send(&self, message: Message, _related: Option<&RequestId>) {
        let answers = match &message {
            Message::Response(r) => Some(&r.id),
            Message::Error(e) => e.id.as_ref(),
            _ => None,
        };
        let last = answers == Some(&self.id);
        let answer = match &message {
            Message::Response(_) => Some(StatusCode::OK),
            Message::Error(ErrorResponse { error, .. }) => Some(status_of(error.code)),
            _ => None,
        };
        let mut tx = lock(&self.tx);
        if let Some(sender) = tx.as_ref() {
            // A client that went away does not cancel here; dropping the body does. A stream
            // past its limits is cut (`queue`).
            sender.send(Encoded {
                answer,
                json: Bytes::from(message.encode()),
            });
        }
        if last {
            *tx = None;
        }
    }
}

/// Ends a stateless request's session when its response is dropped: the client closed the
/// stream (the era's cancel), or the answer went out.
struct CloseOnDrop<H: Handler>(Arc<ServerCore<H>>);

impl<H: Handler> Drop for CloseOnDrop<H> {
    fn drop(&mut self) {
        self.0.close("the client closed the response stream");
    }
}

/// What a stateless request of `subject` belongs to ([`CoreOptions::name`]): a digest, so that
/// no subject is in what replicas share, and unlike any sealed session's name.
pub(crate) fn subject_name(subject: &str) -> String {
    let digest = ring::digest::digest(
        &ring::digest::SHA256,
        format!("mcp-host subject\0{subject}").as_bytes(),
    );
    let hex: String = digest.as_ref()[..16]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("subject-{hex}")
}
