//! Category mode (seed 004): two tools in front of categories of upstream tools.
//!
//! `get-category-tools` carries the list of categories in its description, built from the
//! file alone so that it is served while an upstream is down; it answers one category's tool
//! definitions on demand. `call-category-tool` calls one of them through the host (permission
//! policy, progress, cancellation, call log) and returns the upstream's result unchanged.
//!
//! # What `get-category-tools` answers
//!
//! The same document as `structuredContent` and, for clients that only read text, as the JSON
//! text of the single content block:
//!
//! ```json
//! {"tools": {"read_file": {"name": "read_file", "description": "…", "inputSchema": {…},
//!                          "title": "…", "annotations": {…}, "outputSchema": {…}}},
//!  "meta": {"category": "fs", "sourceServer": "serena", "unavailableTools": [],
//!           "sourceServers": ["a", "b"], "missingTools": ["x"]}}
//! ```
//!
//! `title`, `annotations` and `outputSchema` appear when the upstream gives them.
//! `sourceServers` appears only for a category spanning several servers (then `sourceServer`
//! is the first, and the tool names are `mcp__<server>__<tool>`; in a single-server category
//! they are bare). `unavailableTools` names what is configured on an upstream that is not
//! ready (for a pattern, the pattern). `missingTools` appears only when `toolNames` asked for
//! names the category does not serve (unknown or disabled).
//!
//! # Names
//!
//! `includeNames`, `overrides` keys and the `name` argument take bare names and
//! `mcp__<server>__<tool>`. A bare name is looked up in the category's servers in order; a
//! prefixed one on its server only. A tool that two of a spanning category's servers both
//! serve must be called by its prefixed name. Patterns (`*`, `?`) match the bare or the
//! prefixed name. Overrides change included tools and never add one; `enabled: false` makes
//! a name uncallable in the category whether it is included or not.

pub(crate) mod resolve;

use std::sync::Arc;

use mcp_host::catalog::clean_text;
use mcp_protocol::schema::{
    CallToolParams, CallToolResult, ClientRequest, ContentBlock, ListToolsResult,
    ServerCapabilities,
};
use mcp_protocol::{ErrorObject, RawJson};
use mcp_session::RequestContext;

use self::resolve::{
    CALL_TOOL, GET_TOOLS, Upstream, Upstreams, answer, find_served, ids, is_configured,
    is_disabled, parse, resolve, tool_definitions,
};
use super::{Answer, Mode};
use crate::args::{Args, invalid};
use crate::cache::ListCache;
use crate::file::{self, Category, GatewayFile};
use crate::reply::{
    self, ErrorKind, ToolReply, call_error_kind, call_error_result, encode, tool_error,
    tools_only_capabilities,
};
use crate::shared::{Called, Shared, listed_tool, retry_fields};
use crate::tool_name;
use crate::upstreams::{self, Change};

/// Category mode, with its own state: when each upstream's tools were listed.
#[derive(Debug)]
pub(crate) struct CategoryMode {
    cache: ListCache,
}

impl CategoryMode {
    pub(crate) fn new(cache: ListCache) -> Self {
        Self { cache }
    }
}

impl Mode for CategoryMode {
    fn kind(&self) -> file::Mode {
        file::Mode::Category
    }

    /// Tools only; the list changes when a reload of the file changes the categories (the
    /// first tool's description lists them).
    fn capabilities(&self, _shared: &Shared) -> ServerCapabilities {
        let mut capabilities = tools_only_capabilities();
        if let Some(tools) = &mut capabilities.tools {
            tools.list_changed = Some(true);
        }
        capabilities
    }

    fn instructions(&self, _shared: &Shared) -> Option<String> {
        Some(instructions())
    }

    fn start(&self, shared: &Arc<Shared>) -> Vec<String> {
        self.cache.mark_all(&shared.host);
        startup_report(shared)
    }

    fn reloaded(&self, shared: &Shared, _change: &Change, before: &GatewayFile) {
        let categories = |f: &GatewayFile| serde_json::to_value(&f.categories).ok();
        if categories(before) != categories(&shared.file()) {
            shared
                .routes
                .broadcast("notifications/tools/list_changed", None);
        }
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

fn instructions() -> String {
    format!(
        "This server groups its tools into categories, listed in the description of \
         `{GET_TOOLS}`. Before using a category, load its tool definitions with \
         `{GET_TOOLS}`; then run a tool with `{CALL_TOOL}`, passing the category, the tool's \
         name as loaded, and its arguments."
    )
}

/// The host's view of `servers` now; for a client's request (`context`), without the tools
/// the file's rules hide from its caller, so that a category neither lists nor finds them.
fn upstreams(shared: &Shared, servers: &[&str], context: Option<&RequestContext>) -> Upstreams {
    let catalog = shared.host.catalog();
    let mut out = Upstreams::new();
    for server in servers {
        let Some(status) = shared.host.server_status(server) else {
            continue;
        };
        let ready = status.state == mcp_host::ServerState::Ready;
        let tools = if ready {
            catalog
                .server_tools(server)
                .filter(|t| context.is_none_or(|c| shared.sees(c, server, &t.tool)))
                .map(listed_tool)
                .collect()
        } else {
            Vec::new()
        };
        out.insert(
            (*server).to_owned(),
            Upstream {
                ready,
                state: status.state.to_string(),
                last_error: status.last_error,
                tools,
            },
        );
    }
    out
}

fn startup_report(shared: &Shared) -> Vec<String> {
    let file = shared.file();
    let mut lines = Vec::new();
    let (mut tools, mut disabled, mut unresolved, mut unavailable) = (0, 0, 0, 0);
    for (name, category) in &file.categories {
        let servers = category.upstreams();
        let resolved = resolve(category, &ids(&file), &upstreams(shared, &servers, None));
        tools += resolved.tools.len();
        disabled += resolved.disabled.len();
        unresolved += resolved.unknown.len();
        unavailable += resolved.unavailable.len();
        for unknown in &resolved.unknown {
            lines.push(format!(
                "warning: categories.{name}.tools.{}: `{}`: {}; calling it answers UnknownTool",
                unknown.field, unknown.name, unknown.why
            ));
        }
        for key in &resolved.idle_overrides {
            lines.push(format!(
                "warning: categories.{name}.tools.overrides: `{key}` is a tool the category does not include; overrides never add one"
            ));
        }
    }
    lines.push(format!(
        "category mode: {} categories, {tools} tools, {disabled} disabled, {unresolved} unresolved, {unavailable} unavailable (upstream not ready)",
        file.categories.len()
    ));
    lines
}

async fn handle(
    cache: &ListCache,
    shared: &Shared,
    request: ClientRequest,
    context: RequestContext,
) -> Result<RawJson, ErrorObject> {
    match request {
        ClientRequest::ListTools(_) => {
            encode(&ListToolsResult::new(tool_definitions(&shared.file())))
        }
        ClientRequest::CallTool(params) => {
            let result = match params.name.as_str() {
                GET_TOOLS => get_tools(cache, shared, params, &context).await.into(),
                CALL_TOOL => call_tool(shared, params, &context).await,
                other => {
                    return Err(reply::invalid_params(format!(
                        "unknown tool `{}`: this gateway serves `{GET_TOOLS}` and `{CALL_TOOL}`",
                        tool_name::quoted(other)
                    )));
                }
            };
            result.encode()
        }
        other => Err(reply::method_not_found(format!(
            "{}: category mode serves tools only",
            clean_text(other.method(), 128)
        ))),
    }
}

/// The category named by the arguments, or `UnknownCategory` listing the known ones.
fn category_arg<'a>(
    file: &'a GatewayFile,
    args: &'a Args,
) -> Result<(&'a str, &'a Category), CallToolResult> {
    let name = args.required_str("category")?;
    match file.categories.get(name) {
        Some(category) => Ok((name, category)),
        None => {
            let known: Vec<&str> = file.categories.keys().map(String::as_str).collect();
            Err(tool_error(
                ErrorKind::UnknownCategory,
                &format!(
                    "no category `{}`; the categories are: {}",
                    tool_name::quoted(name),
                    known.join(", ")
                ),
            ))
        }
    }
}

/// Says why none of `servers` can answer.
fn unavailable_message(upstreams: &Upstreams, servers: &[&str]) -> String {
    let states: Vec<String> = servers
        .iter()
        .map(|s| match upstreams.get(*s) {
            Some(u) => {
                let why = u
                    .last_error
                    .as_deref()
                    .map(|e| format!(": {}", clean_text(e, 512)))
                    .unwrap_or_default();
                format!("server `{s}` is {}{why}", u.state)
            }
            None => format!("server `{s}` is not running"),
        })
        .collect();
    states.join("; ")
}

async fn get_tools(
    cache: &ListCache,
    shared: &Shared,
    params: CallToolParams,
    context: &RequestContext,
) -> CallToolResult {
    let args = Args(params.arguments.unwrap_or_default());
    let file = shared.file();
    let (name, category) = match category_arg(&file, &args) {
        Ok(found) => found,
        Err(e) => return e,
    };
    let wanted = match args.optional_strings("toolNames") {
        Ok(wanted) => wanted,
        Err(e) => return e,
    };
    let servers = category.upstreams();
    // An upstream still connecting is waited for (up to its request timeout).
    upstreams::settle(shared, &servers).await;
    for server in &servers {
        if let Err(e) = cache.refresh_if_stale(&shared.host, server).await
            && call_error_kind(&e) != ErrorKind::UpstreamUnavailable
        {
            return tool_error(
                ErrorKind::SchemaFetchError,
                &format!("listing the tools of server `{server}` failed: {e}"),
            );
        }
    }
    let upstreams = upstreams(shared, &servers, Some(context));
    if !servers
        .iter()
        .any(|s| upstreams.get(*s).is_some_and(|u| u.ready))
    {
        return tool_error(
            ErrorKind::UpstreamUnavailable,
            &format!(
                "category `{name}` cannot be loaded: {}",
                unavailable_message(&upstreams, &servers)
            ),
        );
    }
    let resolved = resolve(category, &ids(&file), &upstreams);
    let answer = answer(name, category, &resolved, wanted.as_deref());
    let mut result = CallToolResult::new(vec![ContentBlock::text(answer.to_string())]);
    result.structured_content = Some(answer);
    result
}

async fn call_tool(shared: &Shared, params: CallToolParams, context: &RequestContext) -> ToolReply {
    let retry = retry_fields(&params.extra);
    let asked = params.task.is_some();
    let args = Args(params.arguments.unwrap_or_default());
    let file = shared.file();
    let (category_name, category) = match category_arg(&file, &args) {
        Ok(found) => found,
        Err(e) => return e.into(),
    };
    let name = match args.required_str("name") {
        Ok(name) => name,
        Err(e) => return e.into(),
    };
    let arguments = match args.object("args") {
        Ok(arguments) => arguments,
        Err(e) => return e.into(),
    };
    let shown_name = tool_name::quoted(name);
    let ids = ids(&file);
    if is_disabled(category, &ids, name) {
        return tool_error(
            ErrorKind::ToolDisabled,
            &format!("`{shown_name}` is disabled in category `{category_name}`"),
        )
        .into();
    }
    let servers = category.upstreams();
    let (prefix, bare) = parse(name, &ids);
    let mut upstreams = upstreams(shared, &servers, Some(context));
    let mut resolved = resolve(category, &ids, &upstreams);
    if find_served(&resolved, name).is_empty() {
        // Its upstream may be one still connecting: wait for it (up to its request
        // timeout), then look again.
        let candidates: Vec<&str> = prefix.map_or_else(|| servers.clone(), |s| vec![s]);
        upstreams::settle(shared, &candidates).await;
        upstreams = self::upstreams(shared, &servers, Some(context));
        resolved = resolve(category, &ids, &upstreams);
    }
    // Before the prefix is checked: an upstream's own name may look prefixed.
    let found = find_served(&resolved, name);
    if let Some(s) = prefix
        && found.is_empty()
        && !servers.contains(&s)
    {
        return tool_error(
            ErrorKind::UnknownTool,
            &format!(
                "`{shown_name}` is not in category `{category_name}`: server `{s}` is not one of its servers ({})",
                servers.join(", ")
            ),
        ).into();
    }
    let (server, tool, shown) = match found.as_slice() {
        [one] => (one.server.clone(), one.tool.name.clone(), one.shown.clone()),
        [_, _, ..] => {
            let names: Vec<&str> = found.iter().map(|x| x.shown.as_str()).collect();
            return invalid(&format!(
                "`{shown_name}` is served by several servers of category `{category_name}`: call it by its prefixed name ({})",
                names.join(" or ")
            )).into();
        }
        [] => {
            if !is_configured(category, &ids, prefix, bare) {
                let known: Vec<&str> = resolved.tools.iter().map(|x| x.shown.as_str()).collect();
                return tool_error(
                    ErrorKind::UnknownTool,
                    &format!(
                        "`{shown_name}` is not a tool of category `{category_name}`; its tools are: {}",
                        if known.is_empty() {
                            "(none loaded)".to_owned()
                        } else {
                            known.join(", ")
                        }
                    ),
                ).into();
            }
            let candidates: Vec<&str> = prefix.map_or_else(|| servers.clone(), |s| vec![s]);
            let down: Vec<&str> = candidates
                .iter()
                .copied()
                .filter(|s| !upstreams.get(*s).is_some_and(|u| u.ready))
                .collect();
            if down.is_empty() {
                return tool_error(
                    ErrorKind::UnknownTool,
                    &format!(
                        "`{shown_name}` is configured in category `{category_name}`, but server(s) {} do not list it",
                        candidates.join(", ")
                    ),
                ).into();
            }
            return tool_error(
                ErrorKind::UpstreamUnavailable,
                &format!(
                    "`{shown_name}` cannot be called: {}",
                    unavailable_message(&upstreams, &down)
                ),
            )
            .into();
        }
    };
    let label = format!("{category_name}/{shown}");
    match shared
        .call_tool(&label, &server, &tool, arguments, retry, asked, context)
        .await
    {
        Ok(Called::Output(output)) => output.result.into(),
        Ok(Called::InputRequired(raw) | Called::Task(raw)) => ToolReply::Raw(raw),
        Ok(Called::Refused(result)) => result.into(),
        Err(e) => call_error_result(&e).into(),
    }
}
