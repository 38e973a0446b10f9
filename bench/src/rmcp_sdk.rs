//! The official Rust SDK (`rmcp`, pinned in `bench/Cargo.toml`), used as its documentation
//! shows: `().serve(transport)` for a client over `TokioChildProcess` or
//! `StreamableHttpClientTransport`, and a `ServerHandler` served on stdio or through
//! `StreamableHttpService` (here on hyper-util, which is what axum does underneath).

use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::{Context as _, bail};
use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RunningService};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ErrorData, RoleClient, RoleServer, ServerHandler, ServiceExt as _};
use serde_json::{Value, json};

use crate::workload::{self, BIG_BYTES, Conn, ECHO_TEXT, Imp, Spec};

pub(crate) async fn client(spec: &Spec) -> anyhow::Result<Value> {
    workload::run::<Rmcp>(spec).await
}

struct Rmcp;

impl Imp for Rmcp {
    type Conn = RunningService<RoleClient, ()>;

    async fn connect(spec: Spec) -> anyhow::Result<Self::Conn> {
        Ok(if spec.is_stdio() {
            let (program, args) = spec.command()?;
            let mut command = tokio::process::Command::new(program);
            command.args(args);
            ().serve(TokioChildProcess::new(command)?).await?
        } else {
            ().serve(StreamableHttpClientTransport::from_uri(spec.url.clone()))
                .await?
        })
    }
}

impl Conn for RunningService<RoleClient, ()> {
    async fn call(&self, big: bool) -> anyhow::Result<usize> {
        let mut params = CallToolRequestParams::new(if big { "big" } else { "echo" });
        if !big {
            params = params.with_arguments(
                json!({ "text": ECHO_TEXT })
                    .as_object()
                    .cloned()
                    .unwrap_or_default(),
            );
        }
        let result = self.call_tool(params).await?;
        match result.content.first().and_then(ContentBlock::as_text) {
            Some(t) => Ok(t.text.len()),
            None => bail!("the result has no text"),
        }
    }

    async fn list_all(&self) -> anyhow::Result<usize> {
        Ok(self.list_all_tools().await?.len())
    }

    async fn close(self) {
        let _ = self.cancel().await;
    }
}

/// The benchmark's server: `echo`, `big`, and generated tools, listed by pages.
#[derive(Clone)]
struct Bench(Arc<Data>);

struct Data {
    tools: Vec<Tool>,
    big: String,
}

fn schema(v: Value) -> Arc<serde_json::Map<String, Value>> {
    Arc::new(v.as_object().cloned().unwrap_or_default())
}

impl Bench {
    fn new(generated: usize) -> Self {
        let mut tools = vec![
            Tool::new("echo", "Returns its text.", schema(workload::echo_schema())),
            Tool::new(
                "big",
                "Returns 1 MiB of text.",
                schema(workload::big_schema()),
            ),
        ];
        tools.extend((0..generated).map(|i| {
            let (name, description, s) = workload::generated_tool(i);
            Tool::new(name, description, schema(s))
        }));
        Self(Arc::new(Data {
            tools,
            big: "x".repeat(BIG_BYTES),
        }))
    }
}

impl ServerHandler for Bench {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let cursor = request.and_then(|r| r.cursor);
        let (range, next) = workload::page(cursor.as_deref(), self.0.tools.len());
        let mut result = ListToolsResult::with_all_items(self.0.tools[range].to_vec());
        result.next_cursor = next;
        Ok(result)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let text = match request.name.as_ref() {
            "echo" => request
                .arguments
                .as_ref()
                .and_then(|a| a.get("text"))
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
            "big" => self.0.big.clone(),
            other => {
                return Err(ErrorData::invalid_params(
                    format!("unknown tool `{other}`"),
                    None,
                ));
            }
        };
        Ok(CallToolResult::success(vec![ContentBlock::text(text)]).into())
    }
}

pub(crate) async fn server(http: Option<SocketAddr>, tools: usize) -> anyhow::Result<()> {
    let bench = Bench::new(tools);
    let Some(addr) = http else {
        bench
            .serve(rmcp::transport::stdio())
            .await?
            .waiting()
            .await?;
        return Ok(());
    };
    let service = StreamableHttpService::new(
        move || Ok(bench.clone()),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default(),
    );
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("binding {addr}"))?;
    loop {
        let (tcp, _) = listener.accept().await?;
        let _ = tcp.set_nodelay(true);
        let service = TowerToHyperService::new(service.clone());
        tokio::spawn(async move {
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(tcp), service)
                .await;
        });
    }
}
