//! Streamable HTTP round trips on loopback, our client against our server, beside a minimal
//! hyper echo of the same request bytes in the same run; and the SSE decoder's throughput.
//! Ratios are what count, not absolute figures.

// A benchmark is test code: a failed unwrap is a broken benchmark, reported at once.
#![allow(missing_docs, clippy::unwrap_used)]

use std::convert::Infallible;
use std::hint::black_box;

use bytes::Bytes;
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use http::{Method, Request, Response};
use http_body_util::{BodyExt as _, Full};
use hyper_util::client::legacy::Client as Raw;
use hyper_util::rt::{TokioExecutor, TokioIo};
use mcp_http::{HttpConfig, HttpServerConfig};
use mcp_protocol::schema::{
    CallToolParams, CallToolResult, ClientRequest, ContentBlock, Implementation,
    ListChangedCapability,
};
use mcp_protocol::{ClientConfig, ErrorObject, RawJson, RequestOptions, ServerConfig};
use mcp_session::{Client, Handler, RequestContext};

const CONCURRENCY: usize = 16;

struct Echo;

impl Handler for Echo {
    async fn handle(
        &self,
        request: ClientRequest,
        _: RequestContext,
    ) -> Result<RawJson, ErrorObject> {
        match request {
            ClientRequest::CallTool(_) => {
                Ok(
                    RawJson::encode(&CallToolResult::new(vec![ContentBlock::text("hello")]))
                        .unwrap(),
                )
            }
            _ => Err(ErrorObject::new(-32601, "no".into())),
        }
    }
}

fn params() -> CallToolParams {
    let mut p = CallToolParams::new("echo".into());
    p.arguments = serde_json::json!({"message": "hello"}).as_object().cloned();
    p
}

async fn our_pair(json: bool) -> Client {
    let mut server = ServerConfig::new(Implementation::new("bench".into(), "0".into()));
    server.capabilities.tools = Some(ListChangedCapability::new());
    let mut config = HttpServerConfig::new(server);
    config.json_response = json;
    let (listener, addr) = mcp_http::bind("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    tokio::spawn(mcp_http::serve_http(listener, config, Echo));
    let mut client = HttpConfig::new("bench", format!("http://127.0.0.1:{}/mcp", addr.port()));
    client.standalone_stream = false;
    mcp_http::connect(
        client,
        ClientConfig::new(Implementation::new("bench".into(), "0".into())),
    )
    .await
    .unwrap()
}

/// The floor: a hyper server that answers a POST with its own body.
async fn echo_server() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        loop {
            let (tcp, _) = listener.accept().await.unwrap();
            tcp.set_nodelay(true).unwrap();
            tokio::spawn(async move {
                let service =
                    hyper::service::service_fn(|req: Request<hyper::body::Incoming>| async move {
                        let body = req.into_body().collect().await.unwrap().to_bytes();
                        Ok::<_, Infallible>(Response::new(Full::new(body)))
                    });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(tcp), service)
                    .await;
            });
        }
    });
    format!("http://127.0.0.1:{port}/mcp")
}

fn request_bytes() -> Bytes {
    let m = mcp_protocol::Message::Request(mcp_protocol::Request {
        id: mcp_protocol::RequestId::Number(7),
        method: "tools/call".into(),
        params: Some(RawJson::encode(&params()).unwrap()),
    });
    Bytes::from(m.encode())
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let sse = rt.block_on(our_pair(false));
    let json = rt.block_on(our_pair(true));
    let echo_url = rt.block_on(echo_server());
    let raw: Raw<_, Full<Bytes>> = Raw::builder(TokioExecutor::new()).build_http();
    let bytes = request_bytes();
    let echo = |raw: Raw<hyper_util::client::legacy::connect::HttpConnector, Full<Bytes>>,
                url: String,
                bytes: Bytes| async move {
        let mut req = Request::new(Full::new(bytes));
        *req.method_mut() = Method::POST;
        *req.uri_mut() = url.parse().unwrap();
        let resp = raw.request(req).await.unwrap();
        black_box(resp.into_body().collect().await.unwrap().to_bytes());
    };

    let mut g = c.benchmark_group("http_sequential");
    g.throughput(Throughput::Elements(1));
    g.bench_function(BenchmarkId::new("hyper_echo", "tools_call"), |b| {
        b.to_async(&rt)
            .iter(|| echo(raw.clone(), echo_url.clone(), bytes.clone()))
    });
    for (name, client) in [("mcp_http_sse", &sse), ("mcp_http_json", &json)] {
        g.bench_function(BenchmarkId::new(name, "tools_call"), |b| {
            b.to_async(&rt).iter(|| async {
                black_box(
                    client
                        .call_tool(params(), RequestOptions::DEFAULT)
                        .await
                        .unwrap(),
                )
            })
        });
    }
    g.finish();

    let mut g = c.benchmark_group("http_concurrency_16");
    g.throughput(Throughput::Elements(CONCURRENCY as u64));
    g.bench_function(BenchmarkId::new("hyper_echo", "tools_call"), |b| {
        b.to_async(&rt).iter(|| async {
            let mut set = tokio::task::JoinSet::new();
            for _ in 0..CONCURRENCY {
                set.spawn(echo(raw.clone(), echo_url.clone(), bytes.clone()));
            }
            while set.join_next().await.is_some() {}
        })
    });
    for (name, client) in [("mcp_http_sse", &sse), ("mcp_http_json", &json)] {
        g.bench_function(BenchmarkId::new(name, "tools_call"), |b| {
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
    }
    g.finish();

    // The SSE decoder on a 1 MiB stream of message events.
    let mut stream = Vec::new();
    let event = String::from_utf8(bytes.to_vec()).unwrap();
    let mut n = 0;
    while stream.len() < 1 << 20 {
        n += 1;
        mcp_http::sse::encode_event(&mut stream, Some("message"), Some(&n.to_string()), &event);
    }
    let mut g = c.benchmark_group("sse_decode");
    g.throughput(Throughput::Bytes(stream.len() as u64));
    g.bench_function("1mib_of_events", |b| {
        b.iter(|| {
            let mut d = mcp_http::sse::Decoder::new(1 << 20);
            for chunk in stream.chunks(16 << 10) {
                d.push(black_box(chunk));
                while let Some(e) = d.next_event() {
                    black_box(e.unwrap());
                }
            }
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
