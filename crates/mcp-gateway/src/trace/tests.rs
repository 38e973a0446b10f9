//! The trace context's parsing and propagation, the `OTEL_*` configuration, and the OTLP/JSON
//! shape; the spans' path through a gateway is in `tests/it/traces.rs`.

use std::collections::HashMap;
use std::time::Duration;

use serde_json::json;

use super::context::SpanContext;
use super::otlp::{Exporter, Kind, SpanData, TraceExport, encode};

const VALID: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

#[test]
fn a_valid_traceparent_is_read_with_its_tracestate() {
    let c = SpanContext::parse(VALID, Some("rojo=00f067aa0ba902b7,congo=t61rcWkgMzE")).unwrap();
    assert_eq!(c.trace_id[0], 0x4b);
    assert_eq!(c.trace_id[15], 0x36);
    assert_eq!(c.span_id, [0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7]);
    assert!(c.sampled);
    assert_eq!(
        c.trace_state.as_deref(),
        Some("rojo=00f067aa0ba902b7,congo=t61rcWkgMzE")
    );
    assert_eq!(c.traceparent(), VALID);
    let unsampled = SpanContext::parse(&VALID.replace("-01", "-00"), None).unwrap();
    assert!(!unsampled.sampled);
    // A later version is read as version 00, with what it appends ignored.
    let later = format!("{}-what-comes-next", VALID.replacen("00-", "cc-", 1));
    assert_eq!(
        SpanContext::parse(&later, None).unwrap().trace_id,
        c.trace_id
    );
}

#[test]
fn an_invalid_traceparent_is_ignored() {
    let zero_trace = "00-00000000000000000000000000000000-00f067aa0ba902b7-01";
    let zero_span = "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01";
    let upper = VALID.to_uppercase();
    let version_ff = VALID.replacen("00-", "ff-", 1);
    let v00_longer = format!("{VALID}-01");
    let bad_dash = VALID.replacen('-', "_", 1);
    for bad in [
        "",
        zero_trace,
        zero_span,
        &upper,
        &version_ff,
        &v00_longer,
        &bad_dash,
        &VALID[..54],
        "00-4bf92f3577b34da6a3ce929d0e0e47zz-00f067aa0ba902b7-01",
    ] {
        assert_eq!(SpanContext::parse(bad, None), None, "{bad:?}");
    }
    // What is read shows it looks in the right place.
    assert!(SpanContext::parse(VALID, None).is_some());
}

#[test]
fn a_tracestate_too_long_or_with_controls_is_dropped() {
    let long = format!("a={}", "b".repeat(600));
    assert_eq!(
        SpanContext::parse(VALID, Some(&long)).unwrap().trace_state,
        None
    );
    assert_eq!(
        SpanContext::parse(VALID, Some("a=b\nc"))
            .unwrap()
            .trace_state,
        None
    );
    assert_eq!(
        SpanContext::parse(VALID, Some("a=b"))
            .unwrap()
            .trace_state
            .as_deref(),
        Some("a=b")
    );
}

#[test]
fn injecting_replaces_the_clients_context_in_meta() {
    let ours = SpanContext::parse(VALID, None).unwrap();
    let mut meta = Some(
        json!({"traceparent": "00-11111111111111111111111111111111-2222222222222222-01",
               "tracestate": "theirs=1", "other": 7})
        .as_object()
        .unwrap()
        .clone(),
    );
    ours.inject(&mut meta);
    let meta = meta.unwrap();
    assert_eq!(meta["traceparent"], VALID);
    assert_eq!(
        meta.get("tracestate"),
        None,
        "no tracestate with a context that has none"
    );
    assert_eq!(meta["other"], 7);
    let mut none = None;
    ours.inject(&mut none);
    assert_eq!(none.unwrap()["traceparent"], VALID);
}

fn env(vars: &[(&str, &str)]) -> (Option<TraceExport>, Vec<String>) {
    let map: HashMap<String, String> = vars
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    let mut warnings = Vec::new();
    let export = TraceExport::from_env(|k| map.get(k).cloned(), &mut warnings);
    (export, warnings)
}

#[test]
fn the_standard_variables_configure_the_export() {
    let (export, warnings) = env(&[
        ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318/"),
        (
            "OTEL_EXPORTER_OTLP_HEADERS",
            "api-key=s%3Dcret, x-tenant = one",
        ),
        ("OTEL_SERVICE_NAME", "gw"),
        ("OTEL_BSP_SCHEDULE_DELAY", "100"),
        ("OTEL_BSP_MAX_QUEUE_SIZE", "10"),
        ("OTEL_EXPORTER_OTLP_TIMEOUT", "250"),
    ]);
    let export = export.unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(export.endpoint, "http://collector:4318/v1/traces");
    assert_eq!(
        export.headers,
        vec![
            ("api-key".to_owned(), "s=cret".to_owned()),
            ("x-tenant".to_owned(), "one".to_owned())
        ]
    );
    assert_eq!(export.service_name, "gw");
    assert_eq!(export.schedule_delay, Duration::from_millis(100));
    assert_eq!((export.max_queue, export.max_batch), (10, 10));
    assert_eq!(export.timeout, Duration::from_millis(250));
    // Debug never shows a header's value.
    let shown = format!("{export:?}");
    assert!(
        shown.contains("api-key") && !shown.contains("cret"),
        "{shown}"
    );

    let (export, _) = env(&[
        ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://a:4318"),
        ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://b:9/custom"),
    ]);
    assert_eq!(export.unwrap().endpoint, "http://b:9/custom");
}

#[test]
fn no_endpoint_or_a_disabled_sdk_exports_nothing() {
    assert!(env(&[]).0.is_none());
    let on = [("OTEL_EXPORTER_OTLP_ENDPOINT", "http://a:4318")];
    assert!(env(&on).0.is_some());
    for off in [
        ("OTEL_SDK_DISABLED", "true"),
        ("OTEL_TRACES_EXPORTER", "none"),
    ] {
        assert!(env(&[on[0], off]).0.is_none(), "{off:?}");
    }
}

#[test]
fn unusable_values_warn_without_quoting_secrets() {
    let (export, warnings) = env(&[
        ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://a:4318"),
        ("OTEL_EXPORTER_OTLP_HEADERS", "secret-without-equals"),
        ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
        ("OTEL_BSP_SCHEDULE_DELAY", "soon"),
    ]);
    let export = export.unwrap();
    assert_eq!(warnings.len(), 3, "{warnings:?}");
    assert!(
        warnings.iter().all(|w| !w.contains("secret-without")),
        "{warnings:?}"
    );
    assert!(export.headers.is_empty());
    assert_eq!(export.schedule_delay, Duration::from_millis(5000));
}

fn span(kind: Kind, parent: Option<[u8; 8]>, failed: bool) -> SpanData {
    SpanData {
        trace_id: [0xab; 16],
        span_id: [0x01; 8],
        parent,
        trace_state: None,
        name: "tools/call echo".to_owned(),
        kind,
        start_unix_nanos: 1,
        end_unix_nanos: 2,
        attributes: vec![("mcp.method.name", "tools/call".to_owned())],
        failed,
    }
}

#[test]
fn spans_are_encoded_as_otlp_json() {
    let body = encode(
        "gw",
        &[
            span(Kind::Server, Some([0x02; 8]), false),
            span(Kind::Client, None, true),
        ],
    );
    let resource = &body["resourceSpans"][0];
    assert_eq!(resource["resource"]["attributes"][0]["key"], "service.name");
    assert_eq!(
        resource["resource"]["attributes"][0]["value"]["stringValue"],
        "gw"
    );
    let spans = &resource["scopeSpans"][0]["spans"];
    assert_eq!(spans[0]["traceId"], "ab".repeat(16));
    assert_eq!(spans[0]["spanId"], "01".repeat(8));
    assert_eq!(spans[0]["parentSpanId"], "02".repeat(8));
    assert_eq!(spans[0]["kind"], 2);
    assert_eq!(spans[0]["startTimeUnixNano"], "1");
    assert_eq!(spans[0]["status"], json!({}));
    assert_eq!(spans[1]["kind"], 3);
    assert_eq!(spans[1].get("parentSpanId"), None);
    assert_eq!(spans[1]["status"]["code"], 2);
}

#[tokio::test]
async fn a_full_queue_drops_and_counts() {
    // A port nothing listens on, a long delay: nothing leaves the queue of 2 for a while.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let mut config = TraceExport::new(format!("http://{addr}/v1/traces"));
    config.max_queue = 2;
    config.max_batch = 2;
    config.schedule_delay = Duration::from_secs(60);
    let exporter = Exporter::start(config).unwrap();
    for _ in 0..10 {
        exporter.send(span(Kind::Server, None, false));
    }
    // The task holds at most a batch of 2 and the queue 2 more: at least 6 are dropped at once.
    let dropped = exporter.stats().dropped;
    assert!((6..=8).contains(&dropped), "{dropped}");
    assert_eq!(exporter.stats().exported, 0);
}

#[test]
fn a_clients_long_names_are_cut_in_spans() {
    let long = format!("{}é{}", "a".repeat(127), "b".repeat(10_000));
    let attributes = super::common("tools/call", Some(("gen_ai.tool.name", &long)));
    assert_eq!(attributes[0], ("mcp.method.name", "tools/call".to_owned()));
    assert_eq!(
        attributes[1].1,
        "a".repeat(127),
        "cut before the character that crosses 128"
    );
    assert_eq!(
        attributes[2],
        ("gen_ai.operation.name", "execute_tool".to_owned())
    );
    let name = super::span_name("tools/call", Some(("gen_ai.tool.name", &long)));
    assert_eq!(name, format!("tools/call {}", "a".repeat(127)));
    assert_eq!(super::span_name("ping", None), "ping");
}
