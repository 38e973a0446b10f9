//! OTLP/HTTP export in its JSON encoding (<https://opentelemetry.io/docs/specs/otlp/>): spans
//! are queued without waiting, batched by one task, and posted over `mcp-http`'s client. The
//! queue is bounded: when it is full, or the collector fails or does not answer, spans are
//! dropped and counted, so a dead collector never slows a call nor grows the process.
//!
//! The JSON encoding is written here rather than taken from `opentelemetry-otlp`, whose
//! exporters bring gRPC and protobuf code generation (tonic, prost) for a message of a dozen
//! fields; OTLP/JSON is part of the stable OTLP specification, and ids are hex in it.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

use super::context::to_hex;

/// Where and how the gateway's spans are exported: OTLP over HTTP, JSON encoded. Build it
/// with [`TraceExport::new`] or from the standard `OTEL_*` variables with
/// [`TraceExport::from_env`].
#[derive(Clone)]
#[non_exhaustive]
pub struct TraceExport {
    /// The URL spans are posted to, path included (`…/v1/traces`).
    pub endpoint: String,
    /// Headers sent with every export, such as a collector's API key; their values are
    /// secrets, never shown by `Debug`.
    pub headers: Vec<(String, String)>,
    /// The `service.name` of the exported resource.
    pub service_name: String,
    /// The longest a span waits in the queue before its batch is sent (`OTEL_BSP_SCHEDULE_DELAY`).
    pub schedule_delay: Duration,
    /// Spans held at most while waiting for export; one more is dropped and counted
    /// (`OTEL_BSP_MAX_QUEUE_SIZE`).
    pub max_queue: usize,
    /// Spans sent at most in one request (`OTEL_BSP_MAX_EXPORT_BATCH_SIZE`).
    pub max_batch: usize,
    /// How long one export may take before its spans are dropped (`OTEL_EXPORTER_OTLP_TIMEOUT`).
    pub timeout: Duration,
}

impl fmt::Debug for TraceExport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let headers: Vec<_> = self
            .headers
            .iter()
            .map(|(k, _)| (k, "[redacted]"))
            .collect();
        f.debug_struct("TraceExport")
            .field("endpoint", &self.endpoint)
            .field("headers", &headers)
            .field("service_name", &self.service_name)
            .field("schedule_delay", &self.schedule_delay)
            .field("max_queue", &self.max_queue)
            .field("max_batch", &self.max_batch)
            .field("timeout", &self.timeout)
            .finish()
    }
}

impl TraceExport {
    /// Export to `endpoint` (the full traces URL) with the OpenTelemetry SDK's batch defaults:
    /// 5 s delay, 2048 queued spans, 512 per request, 10 s per export.
    pub fn new(endpoint: impl Into<String>) -> Self {
        Self {
            endpoint: endpoint.into(),
            headers: Vec::new(),
            service_name: "mcp-host".to_owned(),
            schedule_delay: Duration::from_millis(5000),
            max_queue: 2048,
            max_batch: 512,
            timeout: Duration::from_millis(10_000),
        }
    }

    /// The export the standard variables ask for, read through `var`: `None` unless
    /// `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (used as it is) or `OTEL_EXPORTER_OTLP_ENDPOINT`
    /// (`/v1/traces` appended) is set, or if `OTEL_SDK_DISABLED=true` or
    /// `OTEL_TRACES_EXPORTER=none`. Also read: `OTEL_EXPORTER_OTLP[_TRACES]_HEADERS`,
    /// `_TIMEOUT`, `_PROTOCOL` (only `http/json` is spoken), `OTEL_SERVICE_NAME` and the
    /// `OTEL_BSP_*` batch settings. A value it cannot use is skipped with a line in
    /// `warnings`, as the OpenTelemetry specification asks, rather than stopping the gateway.
    pub fn from_env(
        var: impl Fn(&str) -> Option<String>,
        warnings: &mut Vec<String>,
    ) -> Option<Self> {
        let get = |name: &str| var(name).filter(|v| !v.trim().is_empty());
        if get("OTEL_SDK_DISABLED").is_some_and(|v| v.trim().eq_ignore_ascii_case("true")) {
            return None;
        }
        if let Some(exporter) = get("OTEL_TRACES_EXPORTER") {
            let exporter = exporter.trim();
            if exporter.eq_ignore_ascii_case("none") {
                return None;
            }
            if !exporter.eq_ignore_ascii_case("otlp") {
                warnings.push(format!(
                    "OTEL_TRACES_EXPORTER={exporter} is not supported; traces go over OTLP"
                ));
            }
        }
        let endpoint = match get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") {
            Some(url) => url.trim().to_owned(),
            None => {
                let base = get("OTEL_EXPORTER_OTLP_ENDPOINT")?;
                format!("{}/v1/traces", base.trim().trim_end_matches('/'))
            }
        };
        let mut export = Self::new(endpoint);
        let either = |signal: &str, general: &str| get(signal).or_else(|| get(general));
        if let Some(protocol) = either(
            "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
            "OTEL_EXPORTER_OTLP_PROTOCOL",
        ) && protocol.trim() != "http/json"
        {
            warnings.push(format!(
                "OTEL_EXPORTER_OTLP_PROTOCOL={} is not supported; traces are sent as http/json",
                protocol.trim()
            ));
        }
        if let Some(headers) = either(
            "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
            "OTEL_EXPORTER_OTLP_HEADERS",
        ) {
            match parse_headers(&headers) {
                Some(parsed) => export.headers = parsed,
                // The value holds secrets: the warning never quotes it.
                None => warnings.push(
                    "OTEL_EXPORTER_OTLP_HEADERS is not a list of key=value pairs; no headers are sent"
                        .to_owned(),
                ),
            }
        }
        if let Some(name) = get("OTEL_SERVICE_NAME") {
            export.service_name = name.trim().to_owned();
        }
        let mut number = |name: &str, apply: &mut dyn FnMut(u64)| {
            if let Some(v) = get(name) {
                match v.trim().parse::<u64>() {
                    Ok(n) if n > 0 => apply(n),
                    _ => warnings.push(format!(
                        "{name}={} is not a positive integer; the default is used",
                        v.trim()
                    )),
                }
            }
        };
        let mut timeout = None;
        number("OTEL_EXPORTER_OTLP_TIMEOUT", &mut |n| timeout = Some(n));
        number("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", &mut |n| {
            timeout = Some(n)
        });
        if let Some(ms) = timeout {
            export.timeout = Duration::from_millis(ms);
        }
        number("OTEL_BSP_SCHEDULE_DELAY", &mut |n| {
            export.schedule_delay = Duration::from_millis(n);
        });
        let (mut queue, mut batch) = (export.max_queue, export.max_batch);
        number("OTEL_BSP_MAX_QUEUE_SIZE", &mut |n| {
            queue = usize::try_from(n).unwrap_or(usize::MAX);
        });
        number("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", &mut |n| {
            batch = usize::try_from(n).unwrap_or(usize::MAX);
        });
        export.max_queue = queue;
        export.max_batch = batch.min(queue);
        Some(export)
    }
}

/// `key=value,key2=value2` with percent-encoded values (the W3C Baggage form the OTLP
/// exporter specification uses); `None` if a member has no `=` or an empty key.
fn parse_headers(s: &str) -> Option<Vec<(String, String)>> {
    let mut out = Vec::new();
    for member in s.split(',').map(str::trim).filter(|m| !m.is_empty()) {
        let (key, value) = member.split_once('=')?;
        let key = key.trim();
        if key.is_empty() {
            return None;
        }
        out.push((key.to_owned(), percent_decode(value.trim())?));
    }
    Some(out)
}

fn percent_decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = s.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// What one span says, as it is exported.
#[derive(Debug)]
pub(crate) struct SpanData {
    pub(crate) trace_id: [u8; 16],
    pub(crate) span_id: [u8; 8],
    pub(crate) parent: Option<[u8; 8]>,
    pub(crate) trace_state: Option<String>,
    pub(crate) name: String,
    pub(crate) kind: Kind,
    pub(crate) start_unix_nanos: u64,
    pub(crate) end_unix_nanos: u64,
    pub(crate) attributes: Vec<(&'static str, String)>,
    /// Whether the operation failed (status `ERROR`); its `error.type` is an attribute.
    pub(crate) failed: bool,
}

/// The span kinds the gateway records.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Kind {
    /// A request the gateway received.
    Server,
    /// A request the gateway sent upstream.
    Client,
}

/// How many spans were exported and dropped since the gateway started.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct TraceStats {
    /// Spans the collector accepted (a 2xx answer).
    pub exported: u64,
    /// Spans dropped: the queue was full, or the collector failed, refused or did not answer
    /// in time.
    pub dropped: u64,
}

#[derive(Debug, Default)]
struct Counters {
    exported: AtomicU64,
    dropped: AtomicU64,
    /// Whether the last export failed, so a dead collector is reported once, not per batch.
    failing: AtomicBool,
}

/// What the export task is sent.
#[derive(Debug)]
enum Item {
    Span(SpanData),
    /// Send what is queued now, then say so.
    Flush(oneshot::Sender<()>),
}

/// The sending half: cheap to clone, never waits (but for [`flush`](Self::flush)).
#[derive(Debug, Clone)]
pub(crate) struct Exporter {
    tx: mpsc::Sender<Item>,
    counters: Arc<Counters>,
    /// How long a flush may wait: one export's timeout, twice (the batch being sent, then
    /// the rest).
    flush_limit: Duration,
}

impl Exporter {
    /// Starts the export task on the current runtime. Fails if the HTTP client cannot be
    /// built.
    pub(crate) fn start(config: TraceExport) -> Result<Self, String> {
        let mut options = mcp_http::FetchOptions::new();
        options.timeout = config.timeout;
        options.connect_timeout = config.timeout;
        options.max_body_bytes = 64 << 10;
        let fetcher = mcp_http::Fetcher::new(options).map_err(|e| e.to_string())?;
        let (tx, rx) = mpsc::channel(config.max_queue.max(1));
        let counters = Arc::new(Counters::default());
        let flush_limit = config.timeout.saturating_mul(2);
        tokio::spawn(run(config, fetcher, rx, Arc::clone(&counters)));
        Ok(Self {
            tx,
            counters,
            flush_limit,
        })
    }

    /// Queues `span`, or drops and counts it when the queue is full.
    pub(crate) fn send(&self, span: SpanData) {
        if self.tx.try_send(Item::Span(span)).is_err() {
            self.counters.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Sends what is queued without waiting for the schedule delay, and returns once it is
    /// sent (or dropped), or after twice the export timeout: for a gateway that stops.
    pub(crate) async fn flush(&self) {
        let (done, sent) = oneshot::channel();
        let flushed = async {
            if self.tx.send(Item::Flush(done)).await.is_ok() {
                let _ = sent.await;
            }
        };
        let _ = tokio::time::timeout(self.flush_limit, flushed).await;
    }

    pub(crate) fn stats(&self) -> TraceStats {
        TraceStats {
            exported: self.counters.exported.load(Ordering::Relaxed),
            dropped: self.counters.dropped.load(Ordering::Relaxed),
        }
    }
}

/// The export task: a batch is sent when it is full, when its first span has waited the
/// schedule delay, or at once when a flush is asked for; one request at a time, so spans
/// arriving meanwhile wait in the bounded queue. Ends when every sender is gone, after
/// sending what is left.
async fn run(
    config: TraceExport,
    fetcher: mcp_http::Fetcher,
    mut rx: mpsc::Receiver<Item>,
    counters: Arc<Counters>,
) {
    let mut batch = Vec::with_capacity(config.max_batch.min(1024));
    while let Some(first) = rx.recv().await {
        let mut flushed = None;
        match first {
            Item::Span(span) => batch.push(span),
            Item::Flush(done) => flushed = Some(done),
        }
        let deadline = Instant::now() + config.schedule_delay;
        while flushed.is_none() && batch.len() < config.max_batch {
            match tokio::time::timeout_at(deadline, rx.recv()).await {
                Ok(Some(Item::Span(span))) => batch.push(span),
                Ok(Some(Item::Flush(done))) => flushed = Some(done),
                Ok(None) | Err(_) => break,
            }
        }
        if !batch.is_empty() {
            export(&config, &fetcher, &counters, &batch).await;
            batch.clear();
        }
        if let Some(done) = flushed {
            let _ = done.send(());
        }
    }
}

/// Sends one batch and counts it exported or dropped; a failure is logged when exports start
/// failing and when they work again, not for every batch.
async fn export(
    config: &TraceExport,
    fetcher: &mcp_http::Fetcher,
    counters: &Counters,
    batch: &[SpanData],
) {
    let n = batch.len() as u64;
    match post(config, fetcher, batch).await {
        Ok(()) => {
            counters.exported.fetch_add(n, Ordering::Relaxed);
            if counters.failing.swap(false, Ordering::Relaxed) {
                tracing::info!(endpoint = %config.endpoint, "trace export works again");
            }
        }
        Err(reason) => {
            counters.dropped.fetch_add(n, Ordering::Relaxed);
            if !counters.failing.swap(true, Ordering::Relaxed) {
                tracing::warn!(
                    "trace export failed, spans are dropped until it works again: {reason}"
                );
            }
        }
    }
}

/// Posts one batch; the error says why in words that quote no header value.
async fn post(
    config: &TraceExport,
    fetcher: &mcp_http::Fetcher,
    batch: &[SpanData],
) -> Result<(), String> {
    let body =
        serde_json::to_vec(&encode(&config.service_name, batch)).map_err(|e| e.to_string())?;
    let mut request = http::Request::post(&config.endpoint)
        .header(http::header::CONTENT_TYPE, "application/json");
    for (name, value) in &config.headers {
        request = request.header(name.as_str(), value.as_str());
    }
    let request = request.body(body).map_err(|_| {
        format!(
            "{}: a header name or value is not valid in HTTP",
            config.endpoint
        )
    })?;
    let response = fetcher.send(request).await.map_err(|e| e.to_string())?;
    if response.status().is_success() {
        Ok(())
    } else {
        Err(format!(
            "{} answered {}",
            config.endpoint,
            response.status()
        ))
    }
}

/// An `ExportTraceServiceRequest` in OTLP/JSON: one resource, one scope, the batch's spans.
pub(crate) fn encode(service_name: &str, batch: &[SpanData]) -> Value {
    let spans: Vec<Value> = batch.iter().map(encode_span).collect();
    json!({
        "resourceSpans": [{
            "resource": {"attributes": [
                attribute("service.name", service_name),
                attribute("telemetry.sdk.language", "rust"),
            ]},
            "scopeSpans": [{
                "scope": {"name": "mcp-gateway", "version": env!("CARGO_PKG_VERSION")},
                "spans": spans,
            }],
        }],
    })
}

fn encode_span(span: &SpanData) -> Value {
    let mut out = json!({
        "traceId": to_hex(&span.trace_id),
        "spanId": to_hex(&span.span_id),
        "name": span.name,
        // SPAN_KIND_SERVER = 2, SPAN_KIND_CLIENT = 3.
        "kind": match span.kind { Kind::Server => 2, Kind::Client => 3 },
        // 64-bit integers are strings in the protobuf JSON mapping.
        "startTimeUnixNano": span.start_unix_nanos.to_string(),
        "endTimeUnixNano": span.end_unix_nanos.to_string(),
        "attributes": span.attributes.iter().map(|(k, v)| attribute(k, v)).collect::<Vec<_>>(),
        // STATUS_CODE_ERROR = 2; no description, since an upstream's error message may quote
        // the call's arguments.
        "status": if span.failed { json!({"code": 2}) } else { json!({}) },
    });
    if let Some(parent) = span.parent {
        out["parentSpanId"] = Value::String(to_hex(&parent));
    }
    if let Some(state) = &span.trace_state {
        out["traceState"] = Value::String(state.clone());
    }
    out
}

fn attribute(key: &str, value: &str) -> Value {
    json!({"key": key, "value": {"stringValue": value}})
}
