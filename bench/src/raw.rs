//! The floor: the same request bytes echoed back with no MCP at all, through the same
//! harness. Over a pipe, `cat` echoes each line and a minimal client matches answers to
//! calls in order; over HTTP, a minimal hyper server echoes each POST's body to a pooled
//! hyper client. Whatever an MCP stack costs on top of these is its own.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::process::Stdio;
use std::sync::{Arc, Mutex};

use anyhow::{Context as _, bail, ensure};
use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioIo};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};
use tokio::process::ChildStdin;
use tokio::sync::oneshot;

use crate::workload::{self, Conn, ECHO_TEXT, Imp, Spec};

pub(crate) async fn client(spec: &Spec) -> anyhow::Result<Value> {
    ensure!(
        spec.workload == "call",
        "the floor runs only the call workload"
    );
    workload::run::<Raw>(spec).await
}

/// One `tools/call` of `echo` as a client writes it.
fn request() -> Vec<u8> {
    json!({
        "jsonrpc": "2.0",
        "id": 12345,
        "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": ECHO_TEXT}},
    })
    .to_string()
    .into_bytes()
}

struct Raw;

enum RawConn {
    Pipe {
        /// The writer, and the queue of callers in the order their lines were written.
        stdin: tokio::sync::Mutex<ChildStdin>,
        waiting: Arc<Mutex<VecDeque<oneshot::Sender<usize>>>>,
        line: Vec<u8>,
        _child: tokio::process::Child,
    },
    Http {
        client: Client<HttpConnector, Full<Bytes>>,
        url: hyper::Uri,
        body: Bytes,
    },
}

impl Imp for Raw {
    type Conn = RawConn;

    async fn connect(spec: Spec) -> anyhow::Result<RawConn> {
        if !spec.is_stdio() {
            let mut connector = HttpConnector::new();
            connector.set_nodelay(true);
            return Ok(RawConn::Http {
                client: Client::builder(TokioExecutor::new()).build(connector),
                url: spec.url.parse()?,
                body: Bytes::from(request()),
            });
        }
        let (program, args) = spec.command()?;
        let mut child = tokio::process::Command::new(program)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .with_context(|| format!("starting {program}"))?;
        let stdin = child.stdin.take().context("no stdin")?;
        let mut stdout = BufReader::new(child.stdout.take().context("no stdout")?);
        let waiting: Arc<Mutex<VecDeque<oneshot::Sender<usize>>>> = Arc::default();
        let queue = Arc::clone(&waiting);
        tokio::spawn(async move {
            let mut line = Vec::new();
            loop {
                line.clear();
                match stdout.read_until(b'\n', &mut line).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        let next = queue.lock().ok().and_then(|mut q| q.pop_front());
                        if let Some(tx) = next {
                            let _ = tx.send(n);
                        }
                    }
                }
            }
        });
        let mut line = request();
        line.push(b'\n');
        Ok(RawConn::Pipe {
            stdin: tokio::sync::Mutex::new(stdin),
            waiting,
            line,
            _child: child,
        })
    }
}

impl Conn for RawConn {
    async fn call(&self, big: bool) -> anyhow::Result<usize> {
        ensure!(!big, "the floor has no big call");
        match self {
            Self::Pipe {
                stdin,
                waiting,
                line,
                ..
            } => {
                let (tx, rx) = oneshot::channel();
                {
                    let mut stdin = stdin.lock().await;
                    waiting
                        .lock()
                        .map_err(|_| anyhow::anyhow!("poisoned"))?
                        .push_back(tx);
                    stdin.write_all(line).await?;
                }
                let n = rx.await?;
                ensure!(n == line.len(), "the echo was {n} bytes");
            }
            Self::Http { client, url, body } => {
                let request = hyper::Request::post(url.clone())
                    .header("content-type", "application/json")
                    .body(Full::new(body.clone()))?;
                let response = client.request(request).await?;
                let answer = response.into_body().collect().await?.to_bytes();
                ensure!(answer == *body, "the echo differs");
            }
        }
        Ok(ECHO_TEXT.len())
    }

    async fn list_all(&self) -> anyhow::Result<usize> {
        bail!("the floor has no tools")
    }

    async fn close(self) {}
}

/// The HTTP floor's server: every request's body, echoed as JSON.
pub(crate) async fn echo_server(addr: SocketAddr) -> anyhow::Result<()> {
    let listener = tokio::net::TcpListener::bind(addr).await?;
    loop {
        let (tcp, _) = listener.accept().await?;
        let _ = tcp.set_nodelay(true);
        tokio::spawn(async move {
            let service = hyper::service::service_fn(
                |req: hyper::Request<hyper::body::Incoming>| async move {
                    let body = req
                        .into_body()
                        .collect()
                        .await
                        .map(|b| b.to_bytes())
                        .unwrap_or_default();
                    Ok::<_, Infallible>(
                        hyper::Response::builder()
                            .header("content-type", "application/json")
                            .body(Full::new(body))
                            .unwrap_or_default(),
                    )
                },
            );
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(tcp), service)
                .await;
        });
    }
}
