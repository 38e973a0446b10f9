//! OpenTelemetry traces of the gateway (issue 22 §6): one `SERVER` span per client request
//! and one `CLIENT` span, its child, per request sent upstream for it, named and attributed
//! after the OpenTelemetry semantic conventions for MCP (span name
//! `{mcp.method.name} {target}`; `mcp.method.name`, `jsonrpc.request.id`, `mcp.session.id`,
//! `mcp.protocol.version`, `network.transport`, `gen_ai.tool.name`, `gen_ai.prompt.name`,
//! `gen_ai.operation.name`, `error.type`, `rpc.response.status_code`).
//!
//! The client's trace context comes from the request's `params._meta` (`traceparent`,
//! `tracestate`), the carrier those conventions name; the server span is its child, and the
//! upstream request's `_meta` carries the client span's context so the upstream continues the
//! trace. Sampling follows the parent: a client that does not sample its trace gets no spans
//! recorded, and its context goes upstream unchanged. Without an export configured no span
//! is recorded and the client's context goes upstream unchanged too.
//!
//! Arguments, results, resource URIs and error messages are never recorded: they may hold
//! what a user asked a tool for, or a secret.
//!
//! The spans are the gateway's own, not `tracing` spans: see `docs/gateway.md` (Traces).

mod context;
mod otlp;
#[cfg(test)]
mod tests;

use std::future::Future;
use std::sync::OnceLock;
use std::time::{SystemTime, UNIX_EPOCH};

use mcp_host::{CallError, Host, Relayed, TransportKind};
use mcp_protocol::schema::ClientRequest;
use mcp_protocol::{ErrorObject, JsonObject, RawJson, RequestId};
use mcp_session::RequestContext;
use serde_json::Value;

use self::context::{Ids, SpanContext};
use self::otlp::{Exporter, Kind, SpanData};

pub use self::otlp::{TraceExport, TraceStats};

tokio::task_local! {
    /// The trace context of the client request being handled, for the upstream requests made
    /// while handling it.
    static CURRENT: Current;
}

/// What a request handler's upstream requests descend from.
#[derive(Debug, Clone)]
struct Current {
    /// The client's context, as it sent it.
    incoming: Option<SpanContext>,
    /// The server span being recorded, if one is.
    recording: Option<SpanContext>,
}

/// Makes the gateway's spans; disabled (recording nothing) without an export.
#[derive(Debug)]
pub(crate) struct Tracer {
    exporter: Option<Exporter>,
    ids: Ids,
    transport: OnceLock<&'static str>,
}

impl Tracer {
    /// A tracer exporting to `export`, or recording nothing when it is `None` or its HTTP
    /// client cannot be built (said in the returned warning). Call it within the runtime.
    pub(crate) fn new(export: Option<TraceExport>) -> (Self, Option<String>) {
        let (exporter, warning) = match export.map(Exporter::start) {
            Some(Ok(exporter)) => (Some(exporter), None),
            Some(Err(e)) => (None, Some(format!("traces are not exported: {e}"))),
            None => (None, None),
        };
        let tracer = Self {
            exporter,
            ids: Ids::new(),
            transport: OnceLock::new(),
        };
        (tracer, warning)
    }

    /// Spans exported and dropped so far (zero without an export).
    pub(crate) fn stats(&self) -> TraceStats {
        self.exporter
            .as_ref()
            .map(Exporter::stats)
            .unwrap_or_default()
    }

    /// Sends the spans still queued, waiting at most twice the export timeout: for a gateway
    /// that stops, whose last spans would otherwise wait for a schedule that never comes.
    pub(crate) async fn flush(&self) {
        if let Some(exporter) = &self.exporter {
            exporter.flush().await;
        }
    }

    /// Says how clients reach the gateway (`network.transport`: `pipe` for stdio, `tcp` for
    /// HTTP); the first serving call decides.
    pub(crate) fn set_transport(&self, transport: &'static str) {
        let _ = self.transport.set(transport);
    }

    /// Starts the server span of one client request; run the request's handler with
    /// [`ServerSpan::run`].
    pub(crate) fn server(&self, request: &ClientRequest, context: &RequestContext) -> ServerSpan {
        let incoming = SpanContext::from_meta(request.meta());
        let span = self.server_span(request, context, incoming.as_ref());
        ServerSpan {
            current: Current {
                incoming,
                recording: span.as_ref().map(|s| s.context.clone()),
            },
            span,
            call_tool: matches!(request, ClientRequest::CallTool(_)),
        }
    }

    fn server_span(
        &self,
        request: &ClientRequest,
        context: &RequestContext,
        incoming: Option<&SpanContext>,
    ) -> Option<Recording> {
        let exporter = self.exporter.as_ref()?;
        // Parent-based sampling: a trace its caller does not record is not recorded here.
        if incoming.is_some_and(|c| !c.sampled) {
            return None;
        }
        let trace_id = match incoming {
            Some(parent) => parent.trace_id,
            None => self.ids.random()?,
        };
        let span = SpanContext {
            trace_id,
            span_id: self.ids.random()?,
            sampled: true,
            trace_state: incoming.and_then(|c| c.trace_state.clone()),
        };
        let method = request.method();
        let target = match request {
            ClientRequest::CallTool(p) => Some(("gen_ai.tool.name", p.name.as_str())),
            ClientRequest::GetPrompt(p) => Some(("gen_ai.prompt.name", p.name.as_str())),
            _ => None,
        };
        let mut attributes = common(method, target);
        attributes.push(("jsonrpc.request.id", request_id(&context.id)));
        // The process-local session key, not the `Mcp-Session-Id` header: that id is what
        // lets a client use its session, and must not reach a trace backend.
        attributes.push(("mcp.session.id", context.session.to_string()));
        if let Some(client) = &context.client {
            attributes.push((
                "mcp.protocol.version",
                client.protocol_version.as_str().to_owned(),
            ));
        }
        if let Some(transport) = self.transport.get().copied() {
            attributes.push(("network.transport", transport.to_owned()));
        }
        Some(Recording::start(
            exporter.clone(),
            span,
            incoming.map(|c| c.span_id),
            Kind::Server,
            span_name(method, target),
            attributes,
        ))
    }

    /// Starts the client span of a request of `method` sent to upstream `server` for the
    /// client request being handled, and puts the context the upstream continues into
    /// `meta`: this span's when it is recorded, otherwise the client's as it came (none
    /// outside a client request). `target` is the upstream's tool or prompt name.
    pub(crate) fn upstream(
        &self,
        host: &Host,
        server: &str,
        method: &str,
        target: Option<Target<'_>>,
        meta: &mut Option<JsonObject>,
    ) -> Option<Recording> {
        let current = CURRENT.try_with(Current::clone).ok()?;
        let recorded = (|| {
            let exporter = self.exporter.as_ref()?;
            let parent = current.recording.as_ref()?;
            let span = SpanContext {
                trace_id: parent.trace_id,
                span_id: self.ids.random()?,
                sampled: true,
                trace_state: parent.trace_state.clone(),
            };
            let target = target.map(|t| match t {
                Target::Tool(name) => ("gen_ai.tool.name", name),
                Target::Prompt(name) => ("gen_ai.prompt.name", name),
            });
            let mut attributes = common(method, target);
            if let Some(status) = host.server_status(server) {
                if let Some(version) = status.protocol_version {
                    attributes.push(("mcp.protocol.version", version));
                }
                let transport = match status.transport {
                    TransportKind::Stdio => "pipe",
                    _ => "tcp",
                };
                attributes.push(("network.transport", transport.to_owned()));
            }
            Some(Recording::start(
                exporter.clone(),
                span,
                Some(parent.span_id),
                Kind::Client,
                span_name(method, target),
                attributes,
            ))
        })();
        match (&recorded, &current.incoming) {
            (Some(span), _) => span.context.inject(meta),
            (None, Some(incoming)) => incoming.inject(meta),
            (None, None) => {}
        }
        recorded
    }
}

/// One client request's server span, from [`Tracer::server`].
#[derive(Debug)]
pub(crate) struct ServerSpan {
    current: Current,
    span: Option<Recording>,
    call_tool: bool,
}

impl ServerSpan {
    /// Runs the request's handler with this span as the parent of its upstream requests, and
    /// ends the span with its outcome (or as cancelled if the future is dropped first).
    pub(crate) async fn run(
        mut self,
        answer: impl Future<Output = Result<RawJson, ErrorObject>>,
    ) -> Result<RawJson, ErrorObject> {
        let outcome = CURRENT.scope(self.current.clone(), answer).await;
        if let Some(span) = self.span.take() {
            let error = match &outcome {
                Err(e) => Some(rpc_error(e.code)),
                Ok(raw) if self.call_tool && is_tool_error(raw) => Some(error_type("tool_error")),
                Ok(_) => None,
            };
            span.end(error);
        }
        outcome
    }
}

/// What an upstream request is about, for its span's name and attributes.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Target<'a> {
    Tool(&'a str),
    Prompt(&'a str),
}

impl<'a> Target<'a> {
    /// The prompt of a `prompts/get` passed on as it is (`params` as sent upstream).
    pub(crate) fn of(method: &str, params: &'a Value) -> Option<Self> {
        match method {
            "prompts/get" => params.get("name").and_then(Value::as_str).map(Self::Prompt),
            _ => None,
        }
    }
}

/// A span being recorded; sent to the exporter when it ends, or as cancelled when dropped
/// first (the client cancelled, or the connection went).
#[derive(Debug)]
pub(crate) struct Recording {
    exporter: Exporter,
    context: SpanContext,
    data: Option<SpanData>,
}

impl Recording {
    fn start(
        exporter: Exporter,
        context: SpanContext,
        parent: Option<[u8; 8]>,
        kind: Kind,
        name: String,
        attributes: Vec<(&'static str, String)>,
    ) -> Self {
        let data = SpanData {
            trace_id: context.trace_id,
            span_id: context.span_id,
            parent,
            trace_state: context.trace_state.clone(),
            name,
            kind,
            start_unix_nanos: unix_nanos(),
            end_unix_nanos: 0,
            attributes,
            failed: false,
        };
        Self {
            exporter,
            context,
            data: Some(data),
        }
    }

    /// Ends the span; `error` holds `error.type` (and `rpc.response.status_code`) if the
    /// operation failed.
    pub(crate) fn end(mut self, error: Option<Vec<(&'static str, String)>>) {
        if let Some(mut data) = self.data.take() {
            if let Some(error) = error {
                data.failed = true;
                data.attributes.extend(error);
            }
            data.end_unix_nanos = unix_nanos();
            self.exporter.send(data);
        }
    }
}

impl Drop for Recording {
    fn drop(&mut self) {
        if let Some(mut data) = self.data.take() {
            data.failed = true;
            data.attributes.push(("error.type", "cancelled".to_owned()));
            data.end_unix_nanos = unix_nanos();
            self.exporter.send(data);
        }
    }
}

/// `error.type` and `rpc.response.status_code` of a JSON-RPC error: its code, as the
/// conventions say.
pub(crate) fn rpc_error(code: i64) -> Vec<(&'static str, String)> {
    vec![
        ("error.type", code.to_string()),
        ("rpc.response.status_code", code.to_string()),
    ]
}

/// `error.type` alone, for a failure with no JSON-RPC code (`timeout`, `tool_error`, ...).
pub(crate) fn error_type(kind: &str) -> Vec<(&'static str, String)> {
    vec![("error.type", kind.to_owned())]
}

/// The error attributes of a relayed tool call's outcome: the JSON-RPC code, `tool_error`
/// for `isError: true`, or a low-cardinality kind for the host's own failures.
pub(crate) fn call_outcome(
    outcome: &Result<Relayed, CallError>,
) -> Option<Vec<(&'static str, String)>> {
    match outcome {
        Ok(Relayed::Complete(out)) if out.is_tool_error() => Some(error_type("tool_error")),
        Ok(_) => None,
        Err(CallError::Rpc { code, .. }) => Some(rpc_error(*code)),
        Err(e) => Some(error_type(if e.is_timeout() {
            "timeout"
        } else if e.is_denied() {
            "denied"
        } else if e.is_not_ready() {
            "not_ready"
        } else if e.is_auth() {
            "auth"
        } else if e.is_transport() {
            "transport"
        } else {
            "_OTHER"
        })),
    }
}

/// The error attributes of a request passed upstream as it is.
pub(crate) fn request_outcome<T>(
    outcome: &Result<T, mcp_session::Error>,
) -> Option<Vec<(&'static str, String)>> {
    match outcome {
        Ok(_) => None,
        Err(e) => match e.protocol() {
            mcp_protocol::Error::Rpc { error, .. } => Some(rpc_error(error.code)),
            _ if e.is_timeout() => Some(error_type("timeout")),
            _ if e.is_closed() => Some(error_type("transport")),
            _ => Some(error_type("_OTHER")),
        },
    }
}

/// Whether a `tools/call` result says `isError: true`.
fn is_tool_error(raw: &RawJson) -> bool {
    raw.get().contains("\"isError\"")
        && raw
            .decode::<Value>()
            .is_ok_and(|v| v.get("isError") == Some(&Value::Bool(true)))
}

/// The attributes every span has: the method, the tool or prompt, and the GenAI operation of
/// a tool call.
fn common(method: &str, target: Option<(&'static str, &str)>) -> Vec<(&'static str, String)> {
    let mut attributes = vec![("mcp.method.name", bounded(method).to_owned())];
    if let Some((key, name)) = target {
        attributes.push((key, bounded(name).to_owned()));
    }
    if method == "tools/call" {
        attributes.push(("gen_ai.operation.name", "execute_tool".to_owned()));
    }
    attributes
}

/// `{mcp.method.name} {target}`, or the method alone without a low-cardinality target (a
/// resource URI is not one).
fn span_name(method: &str, target: Option<(&'static str, &str)>) -> String {
    match target {
        Some((_, name)) => format!("{} {}", bounded(method), bounded(name)),
        None => bounded(method).to_owned(),
    }
}

/// A name a client chose (a method, a tool or prompt it asked for, known or not), cut to 128
/// bytes: MCP names are at most that long, and a span must not carry 10 KB of whatever a
/// client sent.
fn bounded(name: &str) -> &str {
    const MAX: usize = 128;
    if name.len() <= MAX {
        return name;
    }
    let mut end = MAX;
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    &name[..end]
}

/// The request id as the conventions record it: a number's digits, a string as it is.
fn request_id(id: &RequestId) -> String {
    match id {
        RequestId::Number(n) => n.to_string(),
        RequestId::String(s) => s.clone(),
    }
}

fn unix_nanos() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}
