//! Our client and server, through the public APIs a consumer uses: `mcp_stdio::spawn` and
//! `mcp_http::connect` for one session, `mcp_host::Host` for many; `mcp_stdio::serve_stdio`
//! and `mcp_http::serve_http` with a `Handler` for the server.

use std::any::Any;
use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::{Context as _, bail};
use mcp_host::permission::AllowAll;
use mcp_host::{Connect, Host, HostOptions, ServerEntry, ServerState};
use mcp_protocol::schema::{
    CallToolParams, CallToolResult, ClientRequest, ContentBlock, Implementation,
    ListChangedCapability, ListToolsResult, Tool,
};
use mcp_protocol::{ClientConfig, ErrorObject, RawJson, RequestOptions, ServerConfig, code};
use mcp_session::{Client, Handler, RequestContext};
use mcp_stdio::StdioConfig;
use serde_json::{Value, json};

use crate::workload::{self, BIG_BYTES, Conn, ECHO_TEXT, Imp, Spec};

pub(crate) async fn client(spec: &Spec) -> anyhow::Result<Value> {
    workload::run::<Ours>(spec).await
}

struct Ours;

fn info() -> Implementation {
    Implementation::new("mcp-bench".into(), "0.0.0".into())
}

fn stdio_config(spec: &Spec, name: &str) -> anyhow::Result<StdioConfig> {
    let (program, args) = spec.command()?;
    let mut config = StdioConfig::new(name, program, args.iter().cloned());
    // The 1 MiB result is one line of a little more than 1 MiB.
    config.max_line_bytes = 16 << 20;
    // The diagnostic of main.rs (one thread) reaches our server too.
    if let Some(v) = std::env::var_os("MCP_BENCH_RT") {
        config
            .env
            .push(("MCP_BENCH_RT".into(), v.to_string_lossy().into_owned()));
    }
    Ok(config)
}

fn http_config(spec: &Spec, name: &str) -> mcp_http::HttpConfig {
    let mut config = mcp_http::HttpConfig::new(name, spec.url.clone());
    config.max_message_bytes = 16 << 20;
    config
}

impl Imp for Ours {
    type Conn = Client;

    async fn connect(spec: Spec) -> anyhow::Result<Client> {
        let mut session = ClientConfig::new(info());
        // The gateway rows pin the handshake era, which every gateway speaks (`gateways.rs`).
        if std::env::var_os(crate::gateways::ERA_VAR).is_some_and(|v| v == "handshake") {
            session.supported_versions = mcp_protocol::ProtocolVersion::HANDSHAKE.to_vec();
        }
        Ok(if spec.is_stdio() {
            mcp_stdio::spawn(stdio_config(&spec, "bench")?, session).await?
        } else {
            mcp_http::connect(http_config(&spec, "bench"), session).await?
        })
    }

    /// A host holds many servers: `Host::start` connects them all at once and lists their
    /// tools into its catalogue.
    async fn connect_many(spec: Spec) -> anyhow::Result<(Box<dyn Any + Send>, usize)> {
        let mut options = HostOptions::new(info(), Arc::new(AllowAll));
        options.max_connections = spec.count.max(1);
        let host = Host::new(options);
        let mut entries = Vec::new();
        for i in 0..spec.count {
            let id = format!("s{i}");
            let connect = if spec.is_stdio() {
                Connect::Stdio(stdio_config(&spec, &id)?)
            } else {
                Connect::Http(http_config(&spec, &id))
            };
            entries.push(ServerEntry::new(id, connect));
        }
        host.start(entries).await;
        for s in host.status() {
            if s.state != ServerState::Ready {
                bail!("{} is not ready: {:?}", s.id, s.last_error);
            }
        }
        let tools = host.catalog().len();
        Ok((Box::new(HostGuard(host)), tools))
    }
}

/// Shuts the host down when dropped (the servers are killed either way).
struct HostGuard(Host);

impl Drop for HostGuard {
    fn drop(&mut self) {
        let host = self.0.clone();
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(async move { host.shutdown().await });
        }
    }
}

impl Conn for Client {
    async fn call(&self, big: bool) -> anyhow::Result<usize> {
        let mut params = CallToolParams::new(if big { "big" } else { "echo" }.into());
        if !big {
            params.arguments = json!({ "text": ECHO_TEXT }).as_object().cloned();
        }
        let result = self.call_tool(params, RequestOptions::DEFAULT).await?;
        match result.content.first() {
            Some(ContentBlock::Text(t)) => Ok(t.text.len()),
            _ => bail!("the result has no text"),
        }
    }

    async fn list_all(&self) -> anyhow::Result<usize> {
        Ok(self.list_all_tools().await?.len())
    }

    async fn close(self) {
        Client::close(&self).await;
    }
}

/// The benchmark's server: `echo`, `big`, and `tools` generated tools, listed by pages.
#[derive(Debug)]
struct Bench {
    tools: Vec<Tool>,
    big: String,
}

impl Bench {
    fn new(generated: usize) -> Self {
        let mut tools = vec![
            tool("echo", "Returns its text.", workload::echo_schema()),
            tool("big", "Returns 1 MiB of text.", workload::big_schema()),
        ];
        tools.extend((0..generated).map(|i| {
            let (name, description, schema) = workload::generated_tool(i);
            tool(&name, &description, schema)
        }));
        Self {
            tools,
            big: "x".repeat(BIG_BYTES),
        }
    }
}

fn tool(name: &str, description: &str, schema: Value) -> Tool {
    let mut t = Tool::new(name.into());
    t.description = Some(description.into());
    t.input_schema = Some(schema);
    t
}

fn internal(e: serde_json::Error) -> ErrorObject {
    ErrorObject::new(code::INTERNAL_ERROR, e.to_string())
}

impl Handler for Bench {
    async fn handle(
        &self,
        request: ClientRequest,
        _context: RequestContext,
    ) -> Result<RawJson, ErrorObject> {
        match request {
            ClientRequest::ListTools(p) => {
                // The page straight from the list this server keeps, not from copies of its
                // tools (`encode_page`): the TypeScript server's `slice` copies no tool
                // either.
                let (range, next) = workload::page(p.cursor.as_deref(), self.tools.len());
                ListToolsResult::encode_page(&self.tools[range], next.as_deref()).map_err(internal)
            }
            ClientRequest::CallTool(p) => {
                let text = match p.name.as_str() {
                    "echo" => p
                        .arguments
                        .as_ref()
                        .and_then(|a| a.get("text"))
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned(),
                    "big" => self.big.clone(),
                    other => {
                        return Err(ErrorObject::new(
                            code::INVALID_PARAMS,
                            format!("unknown tool `{other}`"),
                        ));
                    }
                };
                RawJson::encode(&CallToolResult::new(vec![ContentBlock::text(text)]))
                    .map_err(internal)
            }
            _ => Err(ErrorObject::new(code::METHOD_NOT_FOUND, "not here".into())),
        }
    }
}

pub(crate) async fn server(http: Option<SocketAddr>, tools: usize) -> anyhow::Result<()> {
    let mut config =
        ServerConfig::new(Implementation::new("mcp-bench-ours".into(), "0.0.0".into()));
    config.capabilities.tools = Some(ListChangedCapability::new());
    let handler = Bench::new(tools);
    match http {
        None => mcp_stdio::serve_stdio(config, handler).await?,
        Some(addr) => {
            let (listener, _) = mcp_http::bind(addr)
                .await
                .with_context(|| format!("binding {addr}"))?;
            let mut http = mcp_http::HttpServerConfig::new(config);
            http.max_body_bytes = 16 << 20;
            // The gateway rows' crowd holds 1,000 clients, each with its GET stream open
            // beside its POSTs: past the default limits (512 connections) the server answers
            // 503, as it should. Our gateway is given the same room there (`gateways.rs`).
            http.max_connections = 4 * crate::gateways::MANY_SESSIONS;
            http.max_sessions = 4 * crate::gateways::MANY_SESSIONS;
            mcp_http::serve_http(listener, http, handler).await?;
        }
    }
    Ok(())
}
