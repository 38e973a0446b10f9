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

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Arc;

use mcp_host::catalog::clean_text;
use mcp_protocol::schema::{
    CallToolParams, CallToolResult, ClientRequest, ContentBlock, ListToolsResult,
    ServerCapabilities, Tool,
};
use mcp_protocol::{ErrorObject, RawJson};
use mcp_session::RequestContext;
use serde_json::{Value, json};

use super::{Answer, Mode};
use crate::args::{Args, invalid};
use crate::cache::ListCache;
use crate::file::{self, Category, GatewayFile};
use crate::reply::{
    self, ErrorKind, call_error_kind, call_error_result, encode, tool_error,
    tools_only_capabilities,
};
use crate::shared::{Shared, listed_tool};
use crate::tool_name::{self, designates, prefixed};

/// The tool that loads a category's definitions.
pub(crate) const GET_TOOLS: &str = "get-category-tools";
/// The tool that calls one tool of a category.
pub(crate) const CALL_TOOL: &str = "call-category-tool";

/// How much of one category's description goes into `get-category-tools`'s description.
const MAX_CATEGORY_DESCRIPTION: usize = 300;
/// How long the category list in that description may grow; the rest is named only.
const MAX_CATEGORY_LIST: usize = 8 << 10;
/// How long an upstream description may be in an answer.
const MAX_TOOL_DESCRIPTION: usize = 4 << 10;

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

    fn capabilities(&self, _shared: &Shared) -> ServerCapabilities {
        tools_only_capabilities()
    }

    fn instructions(&self, _shared: &Shared) -> Option<String> {
        Some(instructions())
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

fn instructions() -> String {
    format!(
        "This server groups its tools into categories, listed in the description of \
         `{GET_TOOLS}`. Before using a category, load its tool definitions with \
         `{GET_TOOLS}`; then run a tool with `{CALL_TOOL}`, passing the category, the tool's \
         name as loaded, and its arguments."
    )
}

/// The two tools as `tools/list` carries them. Built from the file alone.
pub(crate) fn tool_definitions(file: &GatewayFile) -> Vec<Tool> {
    let mut list = String::new();
    let mut left_out = Vec::new();
    for (name, category) in &file.categories {
        let description = clean_text(&category.description, MAX_CATEGORY_DESCRIPTION * 4)
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        let description = cut(&description, MAX_CATEGORY_DESCRIPTION);
        let line = format!("\n- {}: {description}", clean_text(name, 128));
        if list.len() + line.len() > MAX_CATEGORY_LIST {
            left_out.push(clean_text(name, 128));
        } else {
            list.push_str(&line);
        }
    }
    if !left_out.is_empty() {
        let _ = write!(list, "\n- (also: {})", left_out.join(", "));
    }
    let names: Vec<&String> = file.categories.keys().collect();
    let mut get = Tool::new(GET_TOOLS.to_owned());
    get.description = Some(format!(
        "Loads the tool definitions (name, description, input schema) of one category, so \
         that you can run them with `{CALL_TOOL}`. Categories:{list}"
    ));
    get.input_schema = Some(json!({
        "type": "object",
        "properties": {
            "category": {"type": "string", "enum": names, "description": "The category to load."},
            "toolNames": {
                "type": "array", "items": {"type": "string"},
                "description": "Only these tools of the category (default: all of them)."
            }
        },
        "required": ["category"],
        "additionalProperties": false
    }));
    let mut call = Tool::new(CALL_TOOL.to_owned());
    call.description = Some(format!(
        "Runs one tool of a category. First load the category with `{GET_TOOLS}` to learn \
         its tools' names and input schemas; then call this with the category, the tool's \
         name as loaded, and `args` matching its input schema. Returns the tool's own result."
    ));
    call.input_schema = Some(json!({
        "type": "object",
        "properties": {
            "category": {"type": "string", "enum": names, "description": "The tool's category."},
            "name": {"type": "string", "description": "The tool's name, as get-category-tools returned it."},
            "args": {"type": "object", "description": "The tool's arguments.", "additionalProperties": true}
        },
        "required": ["category", "name", "args"],
        "additionalProperties": false
    }));
    vec![get, call]
}

fn cut(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let mut out: String = text.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// What the gateway knows of one upstream server when it resolves a category.
#[derive(Debug, Clone)]
pub(crate) struct Upstream {
    /// Whether it is connected with its tools listed.
    pub(crate) ready: bool,
    /// Its state, for messages.
    pub(crate) state: String,
    /// Its last failure, for messages.
    pub(crate) last_error: Option<String>,
    /// Its tools as listed (with their input schemas); empty unless ready.
    pub(crate) tools: Vec<Tool>,
}

/// The upstream servers by id; a server missing from the map is treated as not ready.
pub(crate) type Upstreams = BTreeMap<String, Upstream>;

/// The host's view of `servers` now.
fn upstreams(shared: &Shared, servers: &[&str]) -> Upstreams {
    let catalog = shared.host.catalog();
    let mut out = Upstreams::new();
    for server in servers {
        let Some(status) = shared.host.server_status(server) else {
            continue;
        };
        let ready = status.state == mcp_host::ServerState::Ready;
        let tools = if ready {
            catalog.server_tools(server).map(listed_tool).collect()
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

/// One tool a category serves.
#[derive(Debug, Clone)]
pub(crate) struct Served {
    /// The name the model sees and calls.
    pub(crate) shown: String,
    /// The upstream server.
    pub(crate) server: String,
    /// The tool as the upstream lists it, with the override's description applied.
    pub(crate) tool: Tool,
}

/// A configured name that matches no tool of a ready upstream.
#[derive(Debug, Clone)]
pub(crate) struct Unknown {
    /// `includeNames` or `overrides`.
    pub(crate) field: &'static str,
    /// The name as written.
    pub(crate) name: String,
    /// Why.
    pub(crate) why: String,
}

/// A category matched against its upstreams' tools.
#[derive(Debug, Default)]
pub(crate) struct Resolved {
    /// Whether it spans several servers (names are then prefixed).
    pub(crate) multi: bool,
    /// Enabled tools, in the order they were included.
    pub(crate) tools: Vec<Served>,
    /// Included tools that overrides disable, as (server, tool).
    pub(crate) disabled: Vec<(String, String)>,
    /// Configured names or patterns whose upstream is not ready.
    pub(crate) unavailable: Vec<String>,
    /// Configured names no ready upstream has.
    pub(crate) unknown: Vec<Unknown>,
    /// Override keys for tools the category does not include (without `enabled: false`).
    pub(crate) idle_overrides: Vec<String>,
}

/// The configured server ids, which a prefixed name is read against.
pub(crate) fn ids(file: &GatewayFile) -> Vec<&str> {
    file.mcp_servers.keys().map(String::as_str).collect()
}

/// A name as the file or a client writes it: the server and the rest when it reads as
/// `mcp__<server>__<tool>` with a configured server (the longest), else no server and the
/// name as it is.
fn parse<'t>(name: &'t str, ids: &[&str]) -> (Option<&'t str>, &'t str) {
    tool_name::split(name, ids.iter().copied()).map_or((None, name), |(s, t)| (Some(s), t))
}

/// What the model is shown for `server`'s tool `raw` (see [`tool_name::shown`]), prefixed in
/// a category that spans several servers.
fn shown(multi: bool, server: &str, raw: &str) -> String {
    let bare = tool_name::shown(raw);
    if multi {
        prefixed(server, &bare)
    } else {
        bare.into_owned()
    }
}

/// Matches a glob: `*` any run of characters (none included), `?` exactly one.
pub(crate) fn glob(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    let (mut pi, mut ti) = (0, 0);
    // Where the last `*` was, and the text position it is matched up to.
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == t[ti]) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some((pi, ti));
            pi += 1;
        } else if let Some((sp, st)) = star {
            pi = sp + 1;
            ti = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|c| *c == '*')
}

fn pattern_matches(patterns: &[String], server: &str, tool: &str) -> bool {
    patterns
        .iter()
        .any(|p| glob(p, tool) || glob(p, &prefixed(server, tool)))
}

/// The override for `server`'s `tool`: the prefixed key first, then the bare one.
fn override_for<'a>(
    category: &'a Category,
    server: &str,
    tool: &str,
) -> Option<&'a file::ToolOverride> {
    let overrides = &category.tools.overrides;
    overrides
        .get(&prefixed(server, tool))
        .or_else(|| overrides.get(tool))
}

/// Matches `category` against the tools of its upstreams: includes, excludes, overrides.
pub(crate) fn resolve(category: &Category, ids: &[&str], upstreams: &Upstreams) -> Resolved {
    let servers = category.upstreams();
    let multi = servers.len() > 1;
    let ready = |s: &str| upstreams.get(s).filter(|u| u.ready);
    let has = |s: &str, t: &str| ready(s).is_some_and(|u| u.tools.iter().any(|x| x.name == t));
    let mut out = Resolved {
        multi,
        ..Resolved::default()
    };
    let mut picked: Vec<(String, String)> = Vec::new();
    let mut pick = |s: &str, t: &str| {
        if !picked.iter().any(|(ps, pt)| ps == s && pt == t) {
            picked.push((s.to_owned(), t.to_owned()));
        }
    };
    for name in &category.tools.include_names {
        match parse(name, ids) {
            (Some(s), _) if !servers.contains(&s) => out.unknown.push(Unknown {
                field: "includeNames",
                name: name.clone(),
                why: format!("server `{s}` is not one of this category's servers"),
            }),
            (Some(s), t) => {
                if has(s, t) {
                    pick(s, t);
                } else if ready(s).is_some() {
                    out.unknown.push(Unknown {
                        field: "includeNames",
                        name: name.clone(),
                        why: format!("server `{s}` lists no tool `{t}`"),
                    });
                } else {
                    out.unavailable.push(shown(multi, s, t));
                }
            }
            (None, t) => {
                if let Some(s) = servers.iter().find(|s| has(s, t)) {
                    pick(s, t);
                } else if let Some(s) = servers.iter().find(|s| ready(s).is_none()) {
                    out.unavailable.push(shown(multi, s, t));
                } else {
                    out.unknown.push(Unknown {
                        field: "includeNames",
                        name: name.clone(),
                        why: format!("no tool `{t}` on server(s) {}", servers.join(", ")),
                    });
                }
            }
        }
    }
    let patterns = &category.tools.include_patterns;
    if !patterns.is_empty() {
        for s in &servers {
            match ready(s) {
                Some(u) => {
                    for tool in &u.tools {
                        if pattern_matches(patterns, s, &tool.name) {
                            pick(s, &tool.name);
                        }
                    }
                }
                None => out.unavailable.extend(patterns.iter().cloned()),
            }
        }
    }
    let excludes = &category.tools.exclude_patterns;
    picked.retain(|(s, t)| !pattern_matches(excludes, s, t));
    for (s, t) in picked {
        let Some(mut tool) = ready(&s).and_then(|u| u.tools.iter().find(|x| x.name == t).cloned())
        else {
            continue;
        };
        let rule = override_for(category, &s, &t);
        if rule.and_then(|r| r.enabled) == Some(false) {
            out.disabled.push((s, t));
            continue;
        }
        if let Some(text) = rule.and_then(|r| r.description.as_ref()) {
            tool.description = Some(text.clone());
        }
        out.tools.push(Served {
            shown: shown(multi, &s, &t),
            server: s,
            tool,
        });
    }
    for (key, rule) in &category.tools.overrides {
        let (prefix, t) = parse(key, ids);
        if let Some(s) = prefix
            && !servers.contains(&s)
        {
            out.unknown.push(Unknown {
                field: "overrides",
                name: key.clone(),
                why: format!("server `{s}` is not one of this category's servers"),
            });
            continue;
        }
        let candidates: Vec<&str> = prefix.map_or_else(|| servers.clone(), |s| vec![s]);
        if candidates.iter().any(|s| has(s, t)) {
            let included = out
                .tools
                .iter()
                .any(|x| x.tool.name == t && prefix.is_none_or(|p| p == x.server))
                || out
                    .disabled
                    .iter()
                    .any(|(s, x)| x == t && prefix.is_none_or(|p| p == s));
            if !included && rule.enabled != Some(false) {
                out.idle_overrides.push(key.clone());
            }
        } else if candidates.iter().all(|s| ready(s).is_some()) {
            out.unknown.push(Unknown {
                field: "overrides",
                name: key.clone(),
                why: format!("no tool `{t}` on server(s) {}", candidates.join(", ")),
            });
        }
    }
    out
}

fn startup_report(shared: &Shared) -> Vec<String> {
    let file = shared.file();
    let mut lines = Vec::new();
    let (mut tools, mut disabled, mut unresolved, mut unavailable) = (0, 0, 0, 0);
    for (name, category) in &file.categories {
        let servers = category.upstreams();
        let resolved = resolve(category, &ids(&file), &upstreams(shared, &servers));
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
                GET_TOOLS => get_tools(cache, shared, params).await,
                CALL_TOOL => call_tool(shared, params, &context).await,
                other => {
                    return Err(reply::invalid_params(format!(
                        "unknown tool `{}`: this gateway serves `{GET_TOOLS}` and `{CALL_TOOL}`",
                        clean_text(other, 128)
                    )));
                }
            };
            encode(&result)
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
                    clean_text(name, 128),
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

async fn get_tools(cache: &ListCache, shared: &Shared, params: CallToolParams) -> CallToolResult {
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
    let upstreams = upstreams(shared, &servers);
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

/// The `get-category-tools` document for a resolved category.
pub(crate) fn answer(
    name: &str,
    category: &Category,
    resolved: &Resolved,
    wanted: Option<&[&str]>,
) -> Value {
    let mut tools = serde_json::Map::new();
    let mut missing = Vec::new();
    let selected: Vec<&Served> = match wanted {
        None => resolved.tools.iter().collect(),
        Some(names) => {
            let mut out = Vec::new();
            for want in names {
                let found = find_served(resolved, want);
                if found.is_empty() {
                    missing.push((*want).to_owned());
                }
                out.extend(found);
            }
            out
        }
    };
    for served in selected {
        tools.insert(served.shown.clone(), tool_schema(served));
    }
    let servers = category.upstreams();
    let mut meta = json!({
        "category": name,
        "sourceServer": servers.first().copied().unwrap_or_default(),
        "unavailableTools": resolved.unavailable,
    });
    if resolved.multi {
        meta["sourceServers"] = json!(servers);
    }
    if !missing.is_empty() {
        meta["missingTools"] = json!(missing);
    }
    json!({"tools": tools, "meta": meta})
}

/// ToolSchema: name, description, inputSchema, and title, annotations and outputSchema when
/// the upstream gives them.
fn tool_schema(served: &Served) -> Value {
    let tool = &served.tool;
    let mut schema = json!({
        "name": served.shown,
        "inputSchema": tool.input_schema.clone().unwrap_or_else(mcp_host::catalog::fallback_schema),
    });
    if let Some(text) = &tool.description {
        schema["description"] = json!(clean_text(text, MAX_TOOL_DESCRIPTION));
    }
    if let Some(title) = &tool.title {
        schema["title"] = json!(clean_text(title, 256));
    }
    if let Some(annotations) = &tool.annotations {
        schema["annotations"] = serde_json::to_value(annotations).unwrap_or(Value::Null);
    }
    if let Some(output) = &tool.output_schema {
        schema["outputSchema"] = output.clone();
    }
    schema
}

/// The served tools a name (bare or prefixed) designates.
/// A prefixed name is read against the servers of the served tools, each reading in turn
/// (see [`tool_name::splits`]); a name that designates no served tool that way is taken
/// as bare.
fn find_served<'a>(resolved: &'a Resolved, name: &str) -> Vec<&'a Served> {
    let servers = resolved.tools.iter().map(|x| x.server.as_str());
    for (s, t) in tool_name::splits(name, servers) {
        let found: Vec<&Served> = resolved
            .tools
            .iter()
            .filter(|x| x.server == s && designates(&x.tool.name, t))
            .collect();
        if !found.is_empty() {
            return found;
        }
    }
    resolved
        .tools
        .iter()
        .filter(|x| designates(&x.tool.name, name) || x.shown == name)
        .collect()
}

/// Whether an override with `enabled: false` names `name` (bare or prefixed) in `category`.
fn is_disabled(category: &Category, ids: &[&str], name: &str) -> bool {
    let (prefix, tool) = parse(name, ids);
    category.tools.overrides.iter().any(|(key, rule)| {
        let (kprefix, ktool) = parse(key, ids);
        rule.enabled == Some(false)
            && ktool == tool
            && (kprefix.is_none() || prefix.is_none() || kprefix == prefix)
    })
}

/// Whether the category's configuration names `tool` (on `server` when given).
fn is_configured(category: &Category, ids: &[&str], server: Option<&str>, tool: &str) -> bool {
    let servers = category.upstreams();
    let on = |s: &str| server.is_none_or(|x| x == s);
    let by_name = category
        .tools
        .include_names
        .iter()
        .any(|n| match parse(n, ids) {
            (Some(s), t) => t == tool && on(s),
            (None, t) => t == tool,
        });
    let candidates: Vec<&str> = server.map_or_else(|| servers.clone(), |s| vec![s]);
    let by_pattern = candidates
        .iter()
        .any(|s| pattern_matches(&category.tools.include_patterns, s, tool));
    let excluded = candidates
        .iter()
        .all(|s| pattern_matches(&category.tools.exclude_patterns, s, tool));
    (by_name || by_pattern) && !excluded
}

async fn call_tool(
    shared: &Shared,
    params: CallToolParams,
    context: &RequestContext,
) -> CallToolResult {
    let args = Args(params.arguments.unwrap_or_default());
    let file = shared.file();
    let (category_name, category) = match category_arg(&file, &args) {
        Ok(found) => found,
        Err(e) => return e,
    };
    let name = match args.required_str("name") {
        Ok(name) => name,
        Err(e) => return e,
    };
    let arguments = match args.object("args") {
        Ok(arguments) => arguments,
        Err(e) => return e,
    };
    let shown_name = clean_text(name, 256);
    let ids = ids(&file);
    if is_disabled(category, &ids, name) {
        return tool_error(
            ErrorKind::ToolDisabled,
            &format!("`{shown_name}` is disabled in category `{category_name}`"),
        );
    }
    let servers = category.upstreams();
    let (prefix, bare) = parse(name, &ids);
    let upstreams = upstreams(shared, &servers);
    let resolved = resolve(category, &ids, &upstreams);
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
        );
    }
    let (server, tool, shown) = match found.as_slice() {
        [one] => (one.server.clone(), one.tool.name.clone(), one.shown.clone()),
        [_, _, ..] => {
            let names: Vec<&str> = found.iter().map(|x| x.shown.as_str()).collect();
            return invalid(&format!(
                "`{shown_name}` is served by several servers of category `{category_name}`: call it by its prefixed name ({})",
                names.join(" or ")
            ));
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
                );
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
                );
            }
            return tool_error(
                ErrorKind::UpstreamUnavailable,
                &format!(
                    "`{shown_name}` cannot be called: {}",
                    unavailable_message(&upstreams, &down)
                ),
            );
        }
    };
    let label = format!("{category_name}/{shown}");
    match shared
        .call_tool(&label, &server, &tool, arguments, context)
        .await
    {
        Ok(output) => output.result,
        Err(e) => call_error_result(&e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::file::{CategoryTools, ToolOverride};

    #[test]
    fn globs_match_stars_and_question_marks() {
        assert!(glob("*", ""));
        assert!(glob("*", "anything"));
        assert!(glob("read_*", "read_file"));
        assert!(!glob("read_*", "list_dir"));
        assert!(glob("*_symbol", "find_symbol"));
        assert!(glob("*_symbol*", "find_symbol_body"));
        assert!(glob("?ind_*", "find_file"));
        assert!(!glob("?ind", "find_file"));
        assert!(glob("think_about_*_*", "think_about_task_adherence"));
        assert!(glob("a*b*c", "aXXbYYc"));
        assert!(!glob("a*b*c", "aXXbYY"));
        assert!(glob("mcp__*__read_*", "mcp__serena__read_file"));
        assert!(!glob("", "x"));
        assert!(glob("", ""));
        assert!(glob("**a", "bba"));
    }

    fn tool(name: &str) -> Tool {
        let mut t = Tool::new(name.to_owned());
        t.description = Some(format!("does {name}"));
        t.input_schema = Some(json!({"type": "object"}));
        t
    }

    fn ready(names: &[&str]) -> Upstream {
        Upstream {
            ready: true,
            state: "ready".into(),
            last_error: None,
            tools: names.iter().map(|n| tool(n)).collect(),
        }
    }

    fn down() -> Upstream {
        Upstream {
            ready: false,
            state: "error".into(),
            last_error: Some("exited".into()),
            tools: Vec::new(),
        }
    }

    fn category(servers: &[&str], tools: CategoryTools) -> Category {
        Category {
            description: "d".into(),
            server: None,
            servers: servers.iter().map(|s| (*s).to_owned()).collect(),
            tools,
        }
    }

    fn names(resolved: &Resolved) -> Vec<&str> {
        resolved.tools.iter().map(|t| t.shown.as_str()).collect()
    }

    #[test]
    fn names_patterns_excludes_and_overrides() {
        let mut tools = CategoryTools {
            include_names: vec!["read_file".into(), "mcp__s__list_dir".into(), "nope".into()],
            include_patterns: vec!["find_*".into()],
            exclude_patterns: vec!["*_symbol".into()],
            ..CategoryTools::default()
        };
        tools.overrides.insert(
            "mcp__s__read_file".into(),
            ToolOverride {
                enabled: None,
                description: Some("new".into()),
            },
        );
        tools.overrides.insert(
            "find_file".into(),
            ToolOverride {
                enabled: Some(false),
                description: None,
            },
        );
        let c = category(&["s"], tools);
        let ups = Upstreams::from([(
            "s".to_owned(),
            ready(&[
                "read_file",
                "list_dir",
                "find_file",
                "find_symbol",
                "find_x",
            ]),
        )]);
        let r = resolve(&c, &["s"], &ups);
        assert_eq!(names(&r), ["read_file", "list_dir", "find_x"]);
        assert_eq!(r.tools[0].tool.description.as_deref(), Some("new"));
        assert_eq!(r.disabled, [("s".to_owned(), "find_file".to_owned())]);
        assert_eq!(r.unknown.len(), 1);
        assert_eq!(r.unknown[0].name, "nope");
        assert!(
            is_disabled(&c, &["s"], "find_file") && is_disabled(&c, &["s"], "mcp__s__find_file")
        );
        assert!(is_configured(&c, &["s"], None, "find_zzz"));
        assert!(!is_configured(&c, &["s"], None, "find_symbol"));
    }

    #[test]
    fn a_spanning_category_prefixes_and_resolves_in_order() {
        let tools = CategoryTools {
            include_names: vec!["echo".into(), "mcp__b__only_b".into()],
            include_patterns: vec!["both".into()],
            ..CategoryTools::default()
        };
        let c = category(&["a", "b"], tools);
        let ups = Upstreams::from([
            ("a".to_owned(), ready(&["echo", "both"])),
            ("b".to_owned(), ready(&["echo", "only_b", "both"])),
        ]);
        let r = resolve(&c, &["a", "b"], &ups);
        assert_eq!(
            names(&r),
            [
                "mcp__a__echo",
                "mcp__b__only_b",
                "mcp__a__both",
                "mcp__b__both"
            ]
        );
        assert_eq!(find_served(&r, "both").len(), 2, "ambiguous bare name");
        assert_eq!(find_served(&r, "mcp__b__both").len(), 1);
        assert_eq!(find_served(&r, "echo").len(), 1);
        assert_eq!(find_served(&r, "only_b")[0].server, "b");
    }

    #[test]
    fn a_down_upstream_makes_names_unavailable_not_unknown() {
        let tools = CategoryTools {
            include_names: vec!["echo".into()],
            ..CategoryTools::default()
        };
        let c = category(&["a"], tools);
        let r = resolve(&c, &["a"], &Upstreams::from([("a".to_owned(), down())]));
        assert!(r.unknown.is_empty());
        assert_eq!(r.unavailable, ["echo"]);
        let answer = answer("c", &c, &r, None);
        assert_eq!(answer["meta"]["unavailableTools"], json!(["echo"]));
    }

    #[test]
    fn the_category_list_is_in_the_description_and_bounded() {
        let mut file = GatewayFile::default();
        for i in 0..500 {
            file.categories.insert(
                format!("cat{i:03}"),
                Category {
                    description: "x".repeat(1000),
                    server: Some("s".into()),
                    ..Category::default()
                },
            );
        }
        let defs = tool_definitions(&file);
        let text = defs[0].description.as_deref().unwrap_or_default();
        assert!(text.contains("- cat000: xxx"));
        assert!(text.len() < MAX_CATEGORY_LIST + 8000, "{}", text.len());
        assert!(text.contains("cat499"), "every category is at least named");
    }
}
