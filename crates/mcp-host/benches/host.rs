//! The host's own costs, each beside a peer in the same run:
//!
//! - `connect_20`: `Host::start` of 20 testkit servers at once (spawn, initialize, tools/list,
//!   catalogue), beside 20 bare `mcp_stdio::spawn` + `tools/list` at once: the ratio is what the
//!   host adds to the transport.
//! - `catalog_10k`: adapting and naming 10 000 tools into a catalogue, beside decoding the
//!   same `tools/list` result from JSON: the ratio says what the catalogue costs next to
//!   reading the list at all. Its peak memory (resident set above the start, from
//!   `/proc/self/status` after resetting the peak) is printed beside the decode's.

// A benchmark is test code: a failed unwrap is a broken benchmark, reported at once.
#![allow(missing_docs, clippy::unwrap_used, clippy::print_stderr)]

use std::collections::BTreeMap;
use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use mcp_host::catalog::{CatalogLimits, ToolFilter, adapt_server_tools};
use mcp_host::permission::AllowAll;
use mcp_host::{Catalog, Connect, Host, HostOptions, ServerEntry};
use mcp_protocol::ClientConfig;
use mcp_protocol::schema::{Implementation, ListToolsResult, Tool};
use mcp_stdio::StdioConfig;

const SERVERS: usize = 20;
/// The fake server's own tools plus the 20 generated ones.
const TOOLS_PER_SERVER: usize = 18 + 20;

fn info() -> Implementation {
    Implementation::new("bench".into(), "0".into())
}

fn stdio(id: &str) -> StdioConfig {
    StdioConfig::new(
        id,
        mcp_testkit::fake_server().display().to_string(),
        ["--tools", "20"],
    )
}

fn connect(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let mut g = c.benchmark_group("connect_20");
    g.sample_size(10);
    g.bench_function(BenchmarkId::new("bare_stdio_spawn", SERVERS), |b| {
        b.to_async(&rt).iter_custom(|iters| async move {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let start = Instant::now();
                let mut set = tokio::task::JoinSet::new();
                for i in 0..SERVERS {
                    set.spawn(async move {
                        let client =
                            mcp_stdio::spawn(stdio(&format!("s{i}")), ClientConfig::new(info()))
                                .await
                                .unwrap();
                        black_box(client.list_all_tools().await.unwrap());
                        client
                    });
                }
                let mut clients = Vec::new();
                while let Some(c) = set.join_next().await {
                    clients.push(c.unwrap());
                }
                total += start.elapsed();
                for c in clients {
                    c.close().await;
                }
            }
            total
        })
    });
    g.bench_function(BenchmarkId::new("host_start", SERVERS), |b| {
        b.to_async(&rt).iter_custom(|iters| async move {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let mut options = HostOptions::new(info(), Arc::new(AllowAll));
                options.max_connections = SERVERS;
                let host = Host::new(options);
                let entries = (0..SERVERS)
                    .map(|i| ServerEntry::new(format!("s{i}"), Connect::Stdio(stdio("s"))))
                    .collect();
                let start = Instant::now();
                host.start(entries).await;
                total += start.elapsed();
                assert_eq!(host.catalog().len(), SERVERS * TOOLS_PER_SERVER);
                host.shutdown().await;
            }
            total
        })
    });
    g.finish();
}

fn tools_json(n: usize) -> Vec<u8> {
    let tools: Vec<Tool> = (0..n)
        .map(|i| {
            let mut t = Tool::new(format!("tool_{i:05}"));
            t.description = Some(format!(
                "Generated tool number {i}, which does one small thing."
            ));
            t.input_schema = Some(serde_json::json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "Where"},
                    "limit": {"type": "integer"}
                },
                "required": ["path"]
            }));
            t
        })
        .collect();
    serde_json::to_vec(&ListToolsResult::new(tools)).unwrap()
}

fn build(tools: Vec<Tool>) -> Catalog {
    let (exposed, _) = adapt_server_tools(
        "bench",
        tools,
        &ToolFilter::default(),
        &CatalogLimits::default(),
    );
    Catalog::build(BTreeMap::from([("bench".to_owned(), exposed)]))
}

/// A `/proc/self/status` field in KiB (Linux; 0 elsewhere).
fn status_kib(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// Runs `f` and returns how far the resident set rose above where it started, at its peak.
fn peak_above_start<T>(f: impl FnOnce() -> T) -> (T, u64) {
    // Writing 5 resets the peak to the current resident set (Linux 4.0 and later).
    let _ = std::fs::write("/proc/self/clear_refs", "5");
    let start = status_kib("VmRSS:");
    let out = f();
    (out, status_kib("VmHWM:").saturating_sub(start))
}

fn catalog(c: &mut Criterion) {
    let json = tools_json(10_000);
    let decoded: ListToolsResult = serde_json::from_slice(&json).unwrap();
    let (list, decode_kib) =
        peak_above_start(|| serde_json::from_slice::<ListToolsResult>(&json).unwrap());
    drop(list);
    let (catalog, build_kib) = peak_above_start(|| build(decoded.tools.clone()));
    assert_eq!(catalog.len(), 10_000);
    drop(catalog);
    eprintln!(
        "catalog_10k peak memory: building the catalogue {build_kib} KiB, decoding the list {decode_kib} KiB ({} KiB of JSON)",
        json.len() / 1024
    );

    let mut g = c.benchmark_group("catalog_10k");
    g.sample_size(20);
    g.bench_function("decode_tools_list", |b| {
        b.iter(|| black_box(serde_json::from_slice::<ListToolsResult>(&json).unwrap()))
    });
    g.bench_function("build_catalog", |b| {
        b.iter_batched(
            || decoded.tools.clone(),
            |tools| black_box(build(tools)),
            criterion::BatchSize::LargeInput,
        )
    });
    g.finish();
}

criterion_group!(benches, connect, catalog);
criterion_main!(benches);
