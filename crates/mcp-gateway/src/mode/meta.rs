//! Meta-tool mode (seed 003): a handful of tools *about* the upstream servers, for an agent
//! that cannot load tools while it runs. The model lists the servers, lists one server's
//! tools with their schemas, and calls a tool by server and name; it can also list and read
//! resources and reload the gateway file.
//!
//! Every mistake a model can make (an unknown server, tool or argument, a server that is
//! down, a call the permission rules refuse) is a tool error whose text starts with its kind,
//! never a protocol error: the model reads it and tries again. Calls go through
//! [`Shared::call_tool`], so the permission policy, progress, cancellation and the call log
//! are those of every mode.

use std::collections::BTreeMap;
use std::sync::Arc;

use mcp_host::catalog::clean_text;
use mcp_host::{CallError, ServerState};
use mcp_protocol::schema::{
    CallToolParams, CallToolResult, ClientRequest, ContentBlock, EmbeddedResource, ListToolsResult,
    ServerCapabilities, Tool,
};
use mcp_protocol::{ErrorObject, JsonObject, RawJson};
use mcp_session::RequestContext;
use serde_json::{Value, json};

use super::{Answer, Mode};
use crate::args::{Args, invalid};
use crate::cache::ListCache;
use crate::file;
use crate::reply::{
    self, ErrorKind, ToolReply, call_error_result, encode, not_ready, tool_error,
    tools_only_capabilities,
};
use crate::shared::{Called, Shared, retry_fields};
use crate::tool_name::{self, designates};
use crate::{reload, upstreams};

/// The names of the tools this mode serves.
const LIST_SERVERS: &str = "list-servers";
const LIST_TOOLS: &str = "list-tools";
const CALL_TOOL: &str = "call-tool";
const LIST_RESOURCES: &str = "list-resources";
const READ_RESOURCE: &str = "read-resource";
const RELOAD_CONFIG: &str = "reload-config";

/// Meta mode, with its own state: when each upstream's tools were listed.
#[derive(Debug)]
pub(crate) struct MetaMode {
    cache: ListCache,
}

impl MetaMode {
    pub(crate) fn new(cache: ListCache) -> Self {
        Self { cache }
    }
}

impl Mode for MetaMode {
    fn kind(&self) -> file::Mode {
        file::Mode::Meta
    }

    /// Tools only; the list never changes (the servers behind it do, and `list-servers`
    /// says so).
    fn capabilities(&self, _shared: &Shared) -> ServerCapabilities {
        tools_only_capabilities()
    }

    fn instructions(&self, _shared: &Shared) -> Option<String> {
        None
    }

    fn start(&self, shared: &Arc<Shared>) -> Vec<String> {
        self.cache.mark_all(&shared.host);
        startup_report(shared)
    }

    fn handle<'a>(
        &'a self,
        shared: &'a Shared,
        request: ClientRequest,
        context: RequestContext,
    ) -> Answer<'a> {
        Box::pin(handle(&self.cache, shared, request, context))
    }
}

/// What the log says at start-up: the mode, and each server with its state.
fn startup_report(shared: &Shared) -> Vec<String> {
    let status = shared.host.status();
    let ready = status
        .iter()
        .filter(|s| s.state == ServerState::Ready)
        .count();
    let tools: usize = status.iter().map(|s| s.tools).sum();
    vec![format!(
        "meta mode: {} upstream servers ({ready} ready, {tools} tools) behind {} meta tools",
        status.len(),
        tools_list().len()
    )]
}

/// Answers one client request.
async fn handle(
    cache: &ListCache,
    shared: &Shared,
    request: ClientRequest,
    context: RequestContext,
) -> Result<RawJson, ErrorObject> {
    match request {
        ClientRequest::ListTools(_) => encode(&ListToolsResult::new(tools_list())),
        ClientRequest::CallTool(params) => call(cache, shared, params, &context).await.encode(),
        other => Err(reply::method_not_found(format!(
            "{} is not served in meta mode: use the tools (`{LIST_SERVERS}` first)",
            other.method()
        ))),
    }
}

fn tool(name: &str, description: &str, schema: Value) -> Tool {
    let mut tool = Tool::new(name.to_owned());
    tool.description = Some(description.to_owned());
    tool.input_schema = Some(schema);
    if name == CALL_TOOL {
        // A client may run a long upstream call as a task of the gateway's.
        crate::tasks::optional(&mut tool);
    }
    tool
}

/// The meta tools with their descriptions and schemas.
fn tools_list() -> Vec<Tool> {
    let server =
        json!({"type": "string", "description": "A server id, as `list-servers` shows it."});
    vec![
        tool(
            LIST_SERVERS,
            "Lists the MCP servers behind this gateway: id, description, state (ready, connecting, auth_required, error, disabled), tool count and last error. Start here.",
            json!({"type": "object", "properties": {}, "additionalProperties": false}),
        ),
        tool(
            LIST_TOOLS,
            "Lists a server's tools with their descriptions and input schemas (every ready server's when `server` is left out). Call one with `call-tool`.",
            json!({"type": "object", "properties": {"server": server}, "additionalProperties": false}),
        ),
        tool(
            CALL_TOOL,
            "Calls a tool of a server and returns its result unchanged. Look up the tool's input schema with `list-tools` first.",
            json!({
                "type": "object",
                "properties": {
                    "server": server,
                    "tool": {"type": "string", "description": "The tool's name, as `list-tools` shows it."},
                    "arguments": {"type": "object", "description": "The tool's arguments, matching its input schema.", "additionalProperties": true}
                },
                "required": ["server", "tool"],
                "additionalProperties": false
            }),
        ),
        tool(
            LIST_RESOURCES,
            "Lists a server's resources and resource templates (every ready server's when `server` is left out). Read one with `read-resource`.",
            json!({"type": "object", "properties": {"server": server}, "additionalProperties": false}),
        ),
        tool(
            READ_RESOURCE,
            "Reads one resource of a server by its URI.",
            json!({
                "type": "object",
                "properties": {
                    "server": server,
                    "uri": {"type": "string", "description": "The resource's URI, as `list-resources` shows it."}
                },
                "required": ["server", "uri"],
                "additionalProperties": false
            }),
        ),
        tool(
            RELOAD_CONFIG,
            "Reads the gateway file again and applies it: servers added are started, servers removed are stopped, the others are restarted with their new settings. Reports what changed.",
            json!({"type": "object", "properties": {}, "additionalProperties": false}),
        ),
    ]
}

/// Runs one meta tool; every failure is a tool error.
async fn call(
    cache: &ListCache,
    shared: &Shared,
    params: CallToolParams,
    context: &RequestContext,
) -> ToolReply {
    let retry = retry_fields(&params.extra);
    let asked = params.task.is_some();
    let args = Args(params.arguments.unwrap_or_default());
    let outcome = match params.name.as_str() {
        LIST_SERVERS => Ok(list_servers(shared, context)),
        LIST_TOOLS => list_tools(cache, shared, &args, context).await,
        CALL_TOOL => return call_tool(cache, shared, &args, retry, asked, context).await,
        LIST_RESOURCES => list_resources(shared, &args, context).await,
        READ_RESOURCE => read_resource(shared, &args, context).await,
        RELOAD_CONFIG => reload(cache, shared, context).await,
        other => Err(tool_error(
            ErrorKind::UnknownTool,
            &format!(
                "no meta tool `{}`; the tools are {}",
                tool_name::quoted(other),
                tools_list()
                    .iter()
                    .map(|t| format!("`{}`", t.name))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        )),
    };
    outcome.unwrap_or_else(|error| error).into()
}

/// A result for the model: the value as pretty JSON text, and as `structuredContent` for
/// programs.
fn json_result(value: Value) -> CallToolResult {
    let text = serde_json::to_string_pretty(&value).unwrap_or_default();
    let mut result = CallToolResult::new(vec![ContentBlock::text(text)]);
    result.structured_content = Some(value);
    result
}

/// Checks that `server` is configured; an unknown id is `UpstreamUnavailable` with the ids
/// there are, so that the model can pick one.
fn known_server(
    shared: &Shared,
    server: &str,
    context: &RequestContext,
) -> Result<(), CallToolResult> {
    // An upstream the file's rules hide from this caller is one it does not have.
    if shared.host.server_status(server).is_some() && shared.sees_upstream(context, server) {
        return Ok(());
    }
    let ids: Vec<String> = shared
        .host
        .status()
        .into_iter()
        .filter(|s| shared.sees_upstream(context, &s.id))
        .map(|s| format!("`{}`", s.id))
        .collect();
    Err(tool_error(
        ErrorKind::UpstreamUnavailable,
        &format!(
            "no server `{}`; the servers are {}",
            tool_name::quoted(server),
            if ids.is_empty() {
                "none".to_owned()
            } else {
                ids.join(", ")
            }
        ),
    ))
}

/// The servers a listing covers: the one named (which must be configured), else every ready
/// one.
fn listed_servers(
    shared: &Shared,
    one: Option<&str>,
    context: &RequestContext,
) -> Result<Vec<String>, CallToolResult> {
    if let Some(server) = one {
        known_server(shared, server, context)?;
        return Ok(vec![server.to_owned()]);
    }
    Ok(shared
        .host
        .status()
        .into_iter()
        .filter(|s| s.state == ServerState::Ready && shared.sees_upstream(context, &s.id))
        .map(|s| s.id)
        .collect())
}

fn list_servers(shared: &Shared, context: &RequestContext) -> CallToolResult {
    let file = shared.file();
    let catalog = shared.host.catalog();
    let servers: Vec<Value> = shared
        .host
        .status()
        .into_iter()
        .filter(|s| shared.sees_upstream(context, &s.id))
        .map(|s| {
            // With rules, the count is of the tools this caller sees.
            let tools = match crate::auth::caller_of(context) {
                Some(_) if !file.rules.is_empty() => catalog
                    .server_tools(&s.id)
                    .filter(|t| shared.sees(context, &s.id, &t.tool))
                    .count(),
                _ => s.tools,
            };
            let description = file
                .mcp_servers
                .get(&s.id)
                .and_then(|u| u.description.clone());
            json!({
                "id": s.id,
                "description": description,
                "transport": s.transport.as_str(),
                "state": s.state.as_str(),
                "tools": tools,
                "lastError": s.last_error,
            })
        })
        .collect();
    json_result(json!({ "servers": servers }))
}

async fn list_tools(
    cache: &ListCache,
    shared: &Shared,
    args: &Args,
    context: &RequestContext,
) -> Result<CallToolResult, CallToolResult> {
    let one = args.optional_str("server")?;
    if let Some(server) = one {
        known_server(shared, server, context)?;
        upstreams::settle(shared, &[server]).await;
    }
    let servers = listed_servers(shared, one, context)?;
    if let Some(server) = one
        && let Some(status) = shared.host.server_status(server)
        && status.state != ServerState::Ready
    {
        return Err(not_ready(server, &status));
    }
    let mut notes = Vec::new();
    for server in &servers {
        // A failed refresh keeps the list the host has; the model is told.
        if let Err(e) = cache.refresh_if_stale(&shared.host, server).await {
            notes.push(format!("the list of `{server}` may be out of date: {e}"));
        }
    }
    let catalog = shared.host.catalog();
    let mut tools = Vec::new();
    for server in &servers {
        // What the file's rules hide from this caller is not listed.
        for t in catalog
            .server_tools(server)
            .filter(|t| shared.sees(context, server, &t.tool))
        {
            let mut entry = json!({
                "server": t.server,
                "name": tool_name::shown(&t.tool),
                "description": t.source.description.as_deref().map(|d| clean_text(d, 4096)),
                "inputSchema": *t.parameters,
            });
            if let Some(title) = &t.source.title {
                entry["title"] = json!(clean_text(title, 256));
            }
            if let Some(annotations) = &t.source.annotations {
                entry["annotations"] = serde_json::to_value(annotations).unwrap_or(Value::Null);
            }
            tools.push(entry);
        }
    }
    let mut value = json!({ "tools": tools });
    if !notes.is_empty() {
        value["notes"] = json!(notes);
    }
    Ok(json_result(value))
}

async fn call_tool(
    cache: &ListCache,
    shared: &Shared,
    args: &Args,
    retry: JsonObject,
    asked: bool,
    context: &RequestContext,
) -> ToolReply {
    match find_tool(cache, shared, args, context).await {
        Ok((server, tool, arguments)) => match shared
            .call_tool(CALL_TOOL, &server, &tool, arguments, retry, asked, context)
            .await
        {
            Ok(Called::Output(output)) => output.result.into(),
            Ok(Called::InputRequired(raw) | Called::Task(raw)) => ToolReply::Raw(raw),
            Ok(Called::Refused(result)) => result.into(),
            Err(e) => call_error_result(&e).into(),
        },
        Err(refused) => refused.into(),
    }
}

/// The upstream server, tool (by its own name) and arguments a `call-tool` names, or the
/// tool error saying why it cannot be called.
async fn find_tool(
    cache: &ListCache,
    shared: &Shared,
    args: &Args,
    context: &RequestContext,
) -> Result<(String, String, JsonObject), CallToolResult> {
    let server = args.required_str("server")?;
    let tool = args.required_str("tool")?;
    let arguments = args.object("arguments")?;
    known_server(shared, server, context)?;
    // A server still connecting is waited for, up to its request timeout.
    upstreams::settle(shared, &[server]).await;
    // Only what the catalogue offers is callable: the file's `enabled_tools` and
    // `disabled_tools` hold here as everywhere. A tool the cached list lacks may be new, so
    // the list is fetched once more before the model is told no. The model names the tool
    // as `list-tools` showed it; the upstream is called with its own name.
    let offered = |shared: &Shared| {
        shared
            .host
            .catalog()
            .server_tools(server)
            .find(|t| designates(&t.tool, tool))
            // A tool the file's rules hide from this caller is one the server does not offer.
            .filter(|t| shared.sees(context, server, &t.tool))
            .map(|t| t.tool.clone())
    };
    let mut raw = offered(shared);
    if raw.is_none() {
        let _ = cache.refresh_if_stale(&shared.host, server).await;
        raw = offered(shared);
    }
    let Some(raw) = raw else {
        if let Some(status) = shared
            .host
            .server_status(server)
            .filter(|s| s.state != ServerState::Ready)
        {
            return Err(not_ready(server, &status));
        }
        return Err(tool_error(
            ErrorKind::UnknownTool,
            &format!(
                "server `{server}` offers no tool `{}`; see `{LIST_TOOLS}`",
                tool_name::quoted(tool)
            ),
        ));
    };
    Ok((server.to_owned(), raw, arguments))
}

async fn list_resources(
    shared: &Shared,
    args: &Args,
    context: &RequestContext,
) -> Result<CallToolResult, CallToolResult> {
    let one = args.optional_str("server")?;
    let mut servers = listed_servers(shared, one, context)?;
    // The rules cover resources as they do in every mode: an upstream whose tools this
    // caller may not call (a `deny` leaves them listed) lends it none of its resources.
    if let Some(server) = one {
        may_read(shared, server, context)?;
    }
    servers.retain(|s| shared.may_use_upstream(context, s));
    let mut resources = Vec::new();
    let mut templates = Vec::new();
    let mut errors = BTreeMap::new();
    for server in &servers {
        match shared.host.list_resources(server).await {
            Ok(list) => {
                for r in list {
                    let mut value = serde_json::to_value(&r).unwrap_or(Value::Null);
                    value["server"] = json!(server);
                    resources.push(value);
                }
            }
            // A server without resources says so with "method not found": nothing to list.
            Err(CallError::Rpc { code, .. }) if code == mcp_protocol::code::METHOD_NOT_FOUND => {
                continue;
            }
            Err(e) => {
                if one.is_some() {
                    return Err(call_error_result(&e));
                }
                errors.insert(server.clone(), e.to_string());
                continue;
            }
        }
        // Templates are optional even for a server with resources.
        if let Ok(list) = shared.host.list_resource_templates(server).await {
            for t in list {
                let mut value = serde_json::to_value(&t).unwrap_or(Value::Null);
                value["server"] = json!(server);
                templates.push(value);
            }
        }
    }
    let mut value = json!({ "resources": resources, "resourceTemplates": templates });
    if !errors.is_empty() {
        value["errors"] = json!(errors);
    }
    Ok(json_result(value))
}

/// Refuses `server`'s resources to a caller the rules let call none of its tools (see
/// [`Shared::may_use_upstream`]); the upstream is listed for it, so naming it tells nothing.
fn may_read(shared: &Shared, server: &str, context: &RequestContext) -> Result<(), CallToolResult> {
    if shared.may_use_upstream(context, server) {
        return Ok(());
    }
    Err(tool_error(
        ErrorKind::PermissionDenied,
        &format!(
            "the rules let this caller use none of `{}`'s tools, nor its resources",
            tool_name::quoted(server)
        ),
    ))
}

async fn read_resource(
    shared: &Shared,
    args: &Args,
    context: &RequestContext,
) -> Result<CallToolResult, CallToolResult> {
    let server = args.required_str("server")?;
    let uri = args.required_str("uri")?;
    known_server(shared, server, context)?;
    may_read(shared, server, context)?;
    upstreams::settle(shared, &[server]).await;
    let read = shared
        .host
        .read_resource(server, uri)
        .await
        .map_err(|e| call_error_result(&e))?;
    let content = read
        .contents
        .into_iter()
        .map(|c| ContentBlock::Resource(EmbeddedResource::new(c)))
        .collect();
    Ok(CallToolResult::new(content))
}

/// Reads the gateway file again and applies it, as a signal or a change of the file does
/// (see `reload`), then waits for the servers it started to settle, to report their states.
/// The mode stays what it was at start-up (the tools a client was given cannot change under
/// it); a new mode is reported and waits for a restart.
async fn reload(
    cache: &ListCache,
    shared: &Shared,
    context: &RequestContext,
) -> Result<CallToolResult, CallToolResult> {
    let (reloaded, _, _) = reload::reload(shared, file::Mode::Meta)
        .await
        .map_err(|e| invalid(&e.to_string()))?;
    let started: Vec<&str> = reloaded
        .added
        .iter()
        .chain(&reloaded.changed)
        .map(String::as_str)
        .collect();
    upstreams::settle(shared, &started).await;
    for server in &started {
        cache.mark_listed(server);
    }
    let mut value = json!({
        "added": reloaded.added,
        "removed": reloaded.removed,
        "changed": reloaded.changed,
    });
    value["servers"] = list_servers(shared, context)
        .structured_content
        .and_then(|v| v.get("servers").cloned())
        .unwrap_or(Value::Null);
    if !reloaded.notes.is_empty() {
        value["notes"] = json!(reloaded.notes);
    }
    Ok(json_result(value))
}
