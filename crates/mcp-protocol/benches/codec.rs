//! Decode and encode throughput of whole messages, typed all the way down, beside
//! `serde_json::from_slice::<Value>` / `serde_json::to_vec(&Value)` on the same bytes in the
//! same run: the ratio is what counts, not the absolute figure.
//!
//! Cases: a ~1 KiB `tools/call` result, a ~1 MiB `tools/list` result, and (encode only) a
//! `tools/call` result of 1 MiB of text, the benchmark page's big row; for the encodes,
//! `serde_json_typed` is the same typed path written by serde_json instead of our writer.

// A benchmark is test code: a failed unwrap is a broken benchmark, reported at once.
#![allow(missing_docs, clippy::unwrap_used)]

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use mcp_protocol::schema::method;
use mcp_protocol::{Decoded, Message, RawJson, RequestId, Response, decode, decode_result};
use serde_json::{Value, json};
use std::hint::black_box;

fn call_result_1k() -> Vec<u8> {
    let text = "The quick brown fox jumps over the lazy dog. ".repeat(18);
    frame(json!({
        "content": [{"type": "text", "text": text}],
        "structuredContent": {"words": 162, "ok": true},
        "isError": false
    }))
}

fn list_result_1m() -> Vec<u8> {
    let tool = |i: usize| {
        json!({
            "name": format!("tool_{i:05}"),
            "title": format!("Tool number {i}"),
            "description": "Reads a file from the project and returns its contents, with optional line ranges and encoding detection.",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "Path relative to the project root"},
                    "start": {"type": "integer", "minimum": 1},
                    "end": {"type": "integer", "minimum": 1},
                    "encoding": {"type": "string", "enum": ["utf-8", "latin-1", "auto"]}
                },
                "required": ["path"],
                "additionalProperties": false
            },
            "annotations": {"readOnlyHint": true, "openWorldHint": false}
        })
    };
    let mut tools = Vec::new();
    let mut size = 0;
    let mut i = 0;
    while size < 1 << 20 {
        let t = tool(i);
        size += t.to_string().len() + 1;
        tools.push(t);
        i += 1;
    }
    frame(json!({"tools": tools, "nextCursor": "page-2"}))
}

fn frame(result: Value) -> Vec<u8> {
    serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": 7, "result": result})).unwrap()
}

fn decode_typed<M: mcp_protocol::schema::RequestMethod>(bytes: &[u8]) -> M::Result {
    let Ok(Decoded::Single(Message::Response(r))) = decode(bytes) else {
        panic!("a response")
    };
    decode_result::<M>(&r.result).unwrap()
}

fn bench(c: &mut Criterion) {
    let small = call_result_1k();
    let large = list_result_1m();

    let mut g = c.benchmark_group("decode");
    for (name, bytes) in [("tools_call_1k", &small), ("tools_list_1m", &large)] {
        g.throughput(Throughput::Bytes(bytes.len() as u64));
        g.bench_with_input(
            BenchmarkId::new("serde_json_value", name),
            bytes,
            |b, bytes| b.iter(|| serde_json::from_slice::<Value>(black_box(bytes)).unwrap()),
        );
        g.bench_with_input(
            BenchmarkId::new("envelope_only", name),
            bytes,
            |b, bytes| b.iter(|| decode(black_box(bytes)).unwrap()),
        );
        if name == "tools_call_1k" {
            g.bench_with_input(BenchmarkId::new("typed", name), bytes, |b, bytes| {
                b.iter(|| decode_typed::<method::CallTool>(black_box(bytes)))
            });
        } else {
            g.bench_with_input(BenchmarkId::new("typed", name), bytes, |b, bytes| {
                b.iter(|| decode_typed::<method::ListTools>(black_box(bytes)))
            });
        }
    }
    g.finish();

    let mut g = c.benchmark_group("encode");
    let small_typed = decode_typed::<method::CallTool>(&small);
    let large_typed = decode_typed::<method::ListTools>(&large);
    let small_value: Value = serde_json::from_slice(&small).unwrap();
    let large_value: Value = serde_json::from_slice(&large).unwrap();
    g.throughput(Throughput::Bytes(small.len() as u64));
    g.bench_function(BenchmarkId::new("serde_json_value", "tools_call_1k"), |b| {
        b.iter(|| serde_json::to_vec(black_box(&small_value)).unwrap())
    });
    g.bench_function(BenchmarkId::new("typed", "tools_call_1k"), |b| {
        b.iter(|| encode_typed(black_box(&small_typed)))
    });
    g.bench_function(BenchmarkId::new("serde_json_typed", "tools_call_1k"), |b| {
        b.iter(|| encode_serde_json(black_box(&small_typed)))
    });
    g.throughput(Throughput::Bytes(large.len() as u64));
    g.bench_function(BenchmarkId::new("serde_json_value", "tools_list_1m"), |b| {
        b.iter(|| serde_json::to_vec(black_box(&large_value)).unwrap())
    });
    g.bench_function(BenchmarkId::new("typed", "tools_list_1m"), |b| {
        b.iter(|| encode_typed(black_box(&large_typed)))
    });
    g.bench_function(BenchmarkId::new("serde_json_typed", "tools_list_1m"), |b| {
        b.iter(|| encode_serde_json(black_box(&large_typed)))
    });
    let big: mcp_protocol::schema::CallToolResult =
        serde_json::from_value(json!({"content": [{"type": "text", "text": "x".repeat(1 << 20)}]}))
            .unwrap();
    g.throughput(Throughput::Bytes(1 << 20));
    g.bench_function(BenchmarkId::new("typed", "tools_call_1m"), |b| {
        b.iter(|| encode_typed(black_box(&big)))
    });
    g.bench_function(BenchmarkId::new("serde_json_typed", "tools_call_1m"), |b| {
        b.iter(|| encode_serde_json(black_box(&big)))
    });
    g.finish();
}

/// What a server does to answer: typed result → raw payload → framed message.
fn encode_typed<T: serde::Serialize>(result: &T) -> Vec<u8> {
    let message = Message::Response(Response {
        id: RequestId::Number(7),
        result: RawJson::encode(result).unwrap(),
    });
    message.encode()
}

/// The same answer written by serde_json alone: what [`encode_typed`] did before our writer.
fn encode_serde_json<T: serde::Serialize>(result: &T) -> Vec<u8> {
    #[derive(serde::Serialize)]
    struct Envelope<'a> {
        jsonrpc: &'static str,
        id: u64,
        result: &'a serde_json::value::RawValue,
    }
    let raw = serde_json::value::to_raw_value(result).unwrap();
    let mut out = Vec::with_capacity(128);
    let envelope = Envelope {
        jsonrpc: "2.0",
        id: 7,
        result: &raw,
    };
    serde_json::to_writer(&mut out, &envelope).unwrap();
    out
}

criterion_group!(benches, bench);
criterion_main!(benches);
