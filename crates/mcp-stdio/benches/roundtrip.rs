//! Round trips over stdio: a `tools/call` to the testkit's fake server through our client,
//! beside a raw pipe echo (`cat`) of the same request bytes in the same run. The ratio of the
//! two is the per-call overhead of our stack (client, codec, session, and the fake server's
//! own session) over what the pipe costs anyway.
//!
//! Two workloads: sequential (one call at a time: latency) and 16 calls in flight (throughput).

// A benchmark is test code: a failed unwrap is a broken benchmark, reported at once.
#![allow(missing_docs, clippy::unwrap_used)]

use std::hint::black_box;
use std::process::Stdio;
use std::sync::Arc;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use mcp_protocol::schema::{CallToolParams, Implementation};
use mcp_protocol::{ClientConfig, RequestOptions};
use mcp_stdio::StdioConfig;
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};
use tokio::process::{ChildStdin, ChildStdout, Command};
use tokio::sync::Mutex;

const CONCURRENCY: usize = 16;

fn params() -> CallToolParams {
    let mut p = CallToolParams::new("echo".into());
    p.arguments = serde_json::json!({"message": "hello"}).as_object().cloned();
    p
}

/// The bytes our client writes for one call, for the raw echo to carry.
fn request_line() -> Vec<u8> {
    let m = mcp_protocol::Message::Request(mcp_protocol::Request {
        id: mcp_protocol::RequestId::Number(12345),
        method: "tools/call".into(),
        params: Some(mcp_protocol::RawJson::encode(&params()).unwrap()),
    });
    let mut line = m.encode();
    line.push(b'\n');
    line
}

struct Echo {
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    line: String,
}

impl Echo {
    async fn start() -> Self {
        let mut child = Command::new("cat")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        // The child is killed when the runtime drops it at the end of the run.
        std::mem::forget(child);
        Self {
            stdin,
            stdout,
            line: String::new(),
        }
    }

    async fn round_trips(&mut self, bytes: &[u8], n: usize) {
        let mut batch = Vec::with_capacity(bytes.len() * n);
        for _ in 0..n {
            batch.extend_from_slice(bytes);
        }
        self.stdin.write_all(&batch).await.unwrap();
        self.stdin.flush().await.unwrap();
        for _ in 0..n {
            self.line.clear();
            self.stdout.read_line(&mut self.line).await.unwrap();
        }
    }
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let server = mcp_testkit::fake_server();
    let client = rt.block_on(async {
        let config = StdioConfig::new("bench", server.display().to_string(), Vec::<String>::new());
        mcp_stdio::spawn(
            config,
            ClientConfig::new(Implementation::new("bench".into(), "0".into())),
        )
        .await
        .unwrap()
    });
    let echo = Arc::new(Mutex::new(rt.block_on(Echo::start())));
    let line = request_line();

    let mut g = c.benchmark_group("stdio_sequential");
    g.throughput(Throughput::Elements(1));
    g.bench_function(BenchmarkId::new("raw_pipe_echo", "tools_call"), |b| {
        b.to_async(&rt).iter(|| {
            let echo = Arc::clone(&echo);
            let line = &line;
            async move { echo.lock().await.round_trips(line, 1).await }
        })
    });
    g.bench_function(BenchmarkId::new("mcp_stdio", "tools_call"), |b| {
        b.to_async(&rt).iter(|| async {
            black_box(
                client
                    .call_tool(params(), RequestOptions::DEFAULT)
                    .await
                    .unwrap(),
            )
        })
    });
    g.finish();

    let mut g = c.benchmark_group("stdio_concurrency_16");
    g.throughput(Throughput::Elements(CONCURRENCY as u64));
    g.bench_function(BenchmarkId::new("raw_pipe_echo", "tools_call"), |b| {
        b.to_async(&rt).iter(|| {
            let echo = Arc::clone(&echo);
            let line = &line;
            async move { echo.lock().await.round_trips(line, CONCURRENCY).await }
        })
    });
    g.bench_function(BenchmarkId::new("mcp_stdio_one_task", "tools_call"), |b| {
        b.to_async(&rt).iter(|| async {
            let calls = (0..CONCURRENCY)
                .map(|_| Box::pin(client.call_tool(params(), RequestOptions::DEFAULT)))
                .collect();
            black_box(join_all(calls).await)
        })
    });
    g.bench_function(BenchmarkId::new("mcp_stdio", "tools_call"), |b| {
        b.to_async(&rt).iter(|| async {
            let mut set = tokio::task::JoinSet::new();
            for _ in 0..CONCURRENCY {
                let client = client.clone();
                set.spawn(async move {
                    client
                        .call_tool(params(), RequestOptions::DEFAULT)
                        .await
                        .unwrap()
                });
            }
            while let Some(r) = set.join_next().await {
                black_box(r.unwrap());
            }
        })
    });
    g.finish();
    rt.block_on(client.close());
}

/// Polls every future in one task until all are done: concurrency without a task per call.
async fn join_all<F: Future + Unpin>(mut futures: Vec<F>) -> Vec<F::Output> {
    let mut outputs: Vec<Option<F::Output>> = futures.iter().map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut done = true;
        for (f, out) in futures.iter_mut().zip(outputs.iter_mut()) {
            if out.is_none() {
                match std::pin::Pin::new(f).poll(cx) {
                    std::task::Poll::Ready(v) => *out = Some(v),
                    std::task::Poll::Pending => done = false,
                }
            }
        }
        if done {
            std::task::Poll::Ready(())
        } else {
            std::task::Poll::Pending
        }
    })
    .await;
    outputs.into_iter().map(|o| o.unwrap()).collect()
}

criterion_group!(benches, bench);
criterion_main!(benches);
