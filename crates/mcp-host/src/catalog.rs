//! The tool adapter (seed 000 §7): every server's tools under names a model provider accepts,
//! stable across runs and free of collisions, with a table back to the server and the tool.
//!
//! A tool's metadata is untrusted: its name may hold any character, its description may be
//! long or carry terminal escapes, its schema may be huge or not a schema at all. What leaves
//! this module is bounded and well formed, and everything it left out is said in a diagnostic.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use mcp_protocol::schema::Tool;
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::operation::{ExposedOperation, Operation};

/// The longest exposed name: the tightest limit among model providers.
pub const MAX_NAME_LEN: usize = 64;

/// Limits that keep one server's metadata from swamping the catalogue.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct CatalogLimits {
    /// The largest `inputSchema`, serialized; a larger one is replaced by the fallback.
    pub max_schema_bytes: usize,
    /// The longest description kept, in bytes; a longer one is cut with a marker.
    pub max_description_bytes: usize,
}

impl Default for CatalogLimits {
    fn default() -> Self {
        Self {
            max_schema_bytes: 64 << 10,
            max_description_bytes: 4 << 10,
        }
    }
}

/// One tool as the host offers it to a model: an exposed name, a description that says where
/// it comes from, and parameters that are always a JSON Schema object.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ExposedTool {
    /// `mcp_<serverId>_<toolSlug>_<hash8>`: what the model calls.
    pub name: String,
    /// The server's id, as configured.
    pub server: String,
    /// The tool's name as the server lists it: what `tools/call` sends.
    pub tool: String,
    /// The server's description, cleaned and bounded, prefixed with its origin.
    pub description: String,
    /// The tool's `inputSchema`, or the permissive fallback (one shared value).
    pub parameters: Arc<Value>,
    /// The tool as the server listed it, for consumers that need more (annotations, title),
    /// without its `inputSchema`, which moved to `parameters` (a schema is often most of a
    /// tool's size; a rejected one is not kept at all).
    pub source: Arc<Tool>,
    /// Whether a call runs as a task the server keeps and the host polls (its
    /// `execution.taskSupport` is `required`): such a call may take long, and its progress
    /// comes as task status. An `optional` one is not marked, though it may run as one.
    pub runs_as_task: bool,
}

/// The schema used when a server gives none, or one that cannot be used.
pub fn fallback_schema() -> Value {
    serde_json::json!({"type": "object", "additionalProperties": true})
}

static FALLBACK: std::sync::LazyLock<Arc<Value>> =
    std::sync::LazyLock::new(|| Arc::new(fallback_schema()));

/// The exposed name of `tool` on `server`, ignoring collisions (see [`Catalog`] for those).
///
/// The hash covers the full server id and tool name, so two tools whose slugs are cut to the
/// same text still get different names, and the same tool gets the same name on every run.
pub fn exposed_name(server: &str, tool: &str) -> String {
    name_with_salt(server, tool, 0)
}

fn name_with_salt(server: &str, tool: &str, salt: u32) -> String {
    let mut hasher = Sha256::new();
    hasher.update(server.as_bytes());
    hasher.update([0]);
    hasher.update(tool.as_bytes());
    if salt > 0 {
        hasher.update([0]);
        hasher.update(salt.to_be_bytes());
    }
    shape(server, tool, &hasher.finalize())
}

/// The exposed name of `operation` on `server`, ignoring collisions. Its hash starts from a
/// byte no server id holds (ids are `[a-zA-Z0-9_-]`), so it is never the hash of a tool, even
/// one the server named after the operation: the two differ at least in their last 8
/// characters, and a tool's name does not move when operations come or go.
pub fn operation_name(server: &str, operation: Operation) -> String {
    operation_name_with_salt(server, operation, 0)
}

fn operation_name_with_salt(server: &str, operation: Operation, salt: u32) -> String {
    let mut hasher = Sha256::new();
    hasher.update([1]);
    hasher.update(b"operation");
    hasher.update([0]);
    hasher.update(server.as_bytes());
    hasher.update([0]);
    hasher.update(operation.slug().as_bytes());
    if salt > 0 {
        hasher.update([0]);
        hasher.update(salt.to_be_bytes());
    }
    shape(server, operation.slug(), &hasher.finalize())
}

/// `mcp_<server>_<slug>_<hash8>` within [`MAX_NAME_LEN`].
fn shape(server: &str, tool: &str, digest: &[u8]) -> String {
    let hash8: String = digest[..4].iter().map(|b| format!("{b:02x}")).collect();

    // "mcp_" + server + "_" + slug + "_" + hash8: 14 characters are fixed.
    let budget = MAX_NAME_LEN - 14;
    let server = slug(server);
    let tool = slug(tool);
    let tool = if tool.is_empty() {
        "tool".to_owned()
    } else {
        tool
    };
    let (server_len, tool_len) = split_budget(server.len(), tool.len(), budget);
    format!(
        "mcp_{}_{}_{hash8}",
        &server[..server_len],
        &tool[..tool_len]
    )
}

/// Shares `budget` characters between the server part and the tool part: each keeps what it
/// needs when both fit; otherwise neither gets less than half, unless the other needs less.
fn split_budget(server: usize, tool: usize, budget: usize) -> (usize, usize) {
    if server + tool <= budget {
        return (server, tool);
    }
    let half = budget / 2;
    if server <= half {
        (server, budget - server)
    } else if tool <= budget - half {
        (budget - tool, tool)
    } else {
        (half, budget - half)
    }
}

/// `name` with every character outside `[a-zA-Z0-9_-]` replaced by `_`; ASCII only, so byte
/// offsets are character offsets.
fn slug(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Text from a server made safe to show: control characters (terminal escapes among them)
/// dropped, except newlines and tabs, and cut at `max` bytes with a marker.
pub fn clean_text(text: &str, max: usize) -> String {
    let mut out = String::with_capacity(text.len().min(max));
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            // An escape sequence: drop ESC and, for CSI, everything up to its final byte; for
            // the string sequences (OSC, DCS, SOS, PM, APC: a title, a hyperlink, a clipboard
            // write), everything up to BEL or the string terminator `ESC \`.
            match chars.peek() {
                Some('[') => {
                    chars.next();
                    for c in chars.by_ref() {
                        if ('\u{40}'..='\u{7e}').contains(&c) {
                            break;
                        }
                    }
                }
                Some(']' | 'P' | 'X' | '^' | '_') => {
                    chars.next();
                    while let Some(c) = chars.next() {
                        if c == '\u{7}' {
                            break;
                        }
                        if c == '\u{1b}' && chars.peek() == Some(&'\\') {
                            chars.next();
                            break;
                        }
                    }
                }
                _ => {}
            }
            continue;
        }
        if c.is_control() && c != '\n' && c != '\t' {
            continue;
        }
        if out.len() + c.len_utf8() > max {
            out.push_str(" [… cut]");
            break;
        }
        out.push(c);
    }
    out
}

/// Something the catalogue left out or changed, for the user to see.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Diagnostic {
    /// The server's id.
    pub server: String,
    /// The tool's name as the server lists it.
    pub tool: String,
    /// What happened and why.
    pub message: String,
}

/// Which of a server's tools the user wants (configuration's `enabled_tools` and
/// `disabled_tools`). An empty allow list means every tool.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct ToolFilter {
    /// Only these, when set.
    pub enabled: Option<Vec<String>>,
    /// Never these.
    pub disabled: Vec<String>,
}

impl ToolFilter {
    /// A filter from the two lists of the configuration.
    pub fn new(enabled: Option<Vec<String>>, disabled: Vec<String>) -> Self {
        Self { enabled, disabled }
    }

    /// Whether `tool` passes.
    pub fn allows(&self, tool: &str) -> bool {
        let listed = self
            .enabled
            .as_ref()
            .is_none_or(|names| names.iter().any(|n| n == tool));
        listed && !self.disabled.iter().any(|n| n == tool)
    }
}

/// Adapts one server's tool list: filters, bounds and describes each tool. Names are given
/// by [`Catalog::build`], which sees every server at once. A tool that can only run as a task
/// is left out (see [`adapt_server_tools_with_tasks`]).
pub fn adapt_server_tools(
    server: &str,
    tools: Vec<Tool>,
    filter: &ToolFilter,
    limits: &CatalogLimits,
) -> (Vec<ExposedTool>, Vec<Diagnostic>) {
    adapt_server_tools_with_tasks(server, tools, filter, limits, false)
}

/// [`adapt_server_tools`] for a server that runs tool calls as tasks when `tasks` is true
/// (it declared the capability and the host runs them): a tool that can only run as a task
/// (`execution.taskSupport` `required`) is then exposed, marked
/// [`runs_as_task`](ExposedTool::runs_as_task) and said so in its description.
pub fn adapt_server_tools_with_tasks(
    server: &str,
    tools: Vec<Tool>,
    filter: &ToolFilter,
    limits: &CatalogLimits,
    tasks: bool,
) -> (Vec<ExposedTool>, Vec<Diagnostic>) {
    let mut out = Vec::with_capacity(tools.len());
    let mut diagnostics = Vec::new();
    let mut seen = HashMap::with_capacity(tools.len());
    for mut tool in tools {
        let schema = tool.input_schema.take();
        let diag = |message: String| Diagnostic {
            server: server.to_owned(),
            tool: tool.name.clone(),
            message,
        };
        if !filter.allows(&tool.name) {
            continue;
        }
        if seen.insert(tool.name.clone(), ()).is_some() {
            diagnostics.push(diag(
                "listed twice by the server; the first listing is kept".into(),
            ));
            continue;
        }
        let runs_as_task = tool
            .execution
            .as_ref()
            .and_then(|e| e.task_support.as_deref())
            == Some("required");
        if runs_as_task && !tasks {
            diagnostics.push(diag(
                "not exposed: it can only run as a task (execution.taskSupport is \"required\"), and the server declared no task capability".into(),
            ));
            continue;
        }
        let parameters = match schema {
            None => {
                diagnostics.push(diag(
                    "no inputSchema; any object is accepted as arguments".into(),
                ));
                FALLBACK.clone()
            }
            Some(schema) if !is_object_schema(&schema) => {
                diagnostics.push(diag(
                    "inputSchema is not an object schema; any object is accepted as arguments"
                        .into(),
                ));
                FALLBACK.clone()
            }
            Some(schema) => {
                let size = json_size(&schema);
                if size > limits.max_schema_bytes {
                    diagnostics.push(diag(format!(
                        "inputSchema is {size} bytes, over the limit of {}; any object is accepted as arguments",
                        limits.max_schema_bytes
                    )));
                    FALLBACK.clone()
                } else {
                    Arc::new(schema)
                }
            }
        };
        let origin = format!(
            "[MCP {server}/{}{}] ",
            clean_text(&tool.name, 128),
            if runs_as_task { ", runs as a task" } else { "" }
        );
        let description = match tool.description.as_deref() {
            Some(text) => origin + &clean_text(text, limits.max_description_bytes),
            None => origin + tool.display_name(),
        };
        out.push(ExposedTool {
            name: String::new(),
            server: server.to_owned(),
            tool: tool.name.clone(),
            description,
            parameters,
            source: Arc::new(tool),
            runs_as_task,
        });
    }
    (out, diagnostics)
}

/// The size of `value` as compact JSON, counted without building the text; `usize::MAX` if it
/// cannot be serialized.
pub(crate) fn json_size(value: &impl serde::Serialize) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    match serde_json::to_writer(&mut count, value) {
        Ok(()) => count.0,
        Err(_) => usize::MAX,
    }
}

fn is_object_schema(schema: &Value) -> bool {
    match schema {
        Value::Object(map) => map.get("type").is_none_or(|t| t == "object"),
        _ => false,
    }
}

/// Every exposed tool of every ready server, and the table back. Immutable: a change builds a
/// new one and swaps it in whole, so a caller never sees half of an update.
///
/// It holds the servers' own tools ([`tools`](Self::tools)) and, apart, the resource and
/// prompt operations offered as tools ([`operations`](Self::operations)); a model is offered
/// both ([`model_tools`](Self::model_tools)), under names that never collide.
#[derive(Debug, Default)]
pub struct Catalog {
    tools: Vec<ExposedTool>,
    operations: Vec<ExposedOperation>,
    by_name: HashMap<String, Slot>,
}

/// Where an exposed name points.
#[derive(Debug, Clone, Copy)]
enum Slot {
    Tool(usize),
    Operation(usize),
}

/// One tool as a model is offered it: a server's own tool or one of its operations.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub enum ModelTool<'a> {
    /// A tool the server listed.
    Tool(&'a ExposedTool),
    /// A resource or prompt operation the host offers for the server.
    Operation(&'a ExposedOperation),
}

impl<'a> ModelTool<'a> {
    /// The exposed name: what the model calls.
    pub fn name(&self) -> &'a str {
        match self {
            Self::Tool(t) => &t.name,
            Self::Operation(o) => &o.name,
        }
    }

    /// The server's id.
    pub fn server(&self) -> &'a str {
        match self {
            Self::Tool(t) => &t.server,
            Self::Operation(o) => &o.server,
        }
    }

    /// The description offered to the model.
    pub fn description(&self) -> &'a str {
        match self {
            Self::Tool(t) => &t.description,
            Self::Operation(o) => &o.description,
        }
    }

    /// The input schema offered to the model: always a JSON Schema object.
    pub fn parameters(&self) -> &'a Value {
        match self {
            Self::Tool(t) => &t.parameters,
            Self::Operation(o) => &o.parameters,
        }
    }
}

impl Catalog {
    /// Names the tools and indexes them. Tools are named in (server, tool) order, and a name
    /// already taken gets a salted hash, so the result depends only on the set of tools.
    pub fn build(servers: BTreeMap<String, Vec<ExposedTool>>) -> Self {
        Self::build_with_operations(servers, BTreeMap::new())
    }

    /// [`build`](Self::build), then names the operations of each server (from
    /// [`server_operations`](crate::operation::server_operations)) after every tool, so that a
    /// tool's name never depends on them; an operation whose name is taken gets a salted hash.
    pub fn build_with_operations(
        servers: BTreeMap<String, Vec<ExposedTool>>,
        operations: BTreeMap<String, Vec<ExposedOperation>>,
    ) -> Self {
        let mut all: Vec<ExposedTool> = servers.into_values().flatten().collect();
        all.sort_by(|a, b| (&a.server, &a.tool).cmp(&(&b.server, &b.tool)));
        let mut by_name = HashMap::with_capacity(all.len());
        for (index, tool) in all.iter_mut().enumerate() {
            let mut salt = 0;
            let mut name = exposed_name(&tool.server, &tool.tool);
            while by_name.contains_key(&name) {
                salt += 1;
                name = name_with_salt(&tool.server, &tool.tool, salt);
            }
            by_name.insert(name.clone(), Slot::Tool(index));
            tool.name = name;
        }
        let mut ops = Vec::new();
        for (_, mut server_ops) in operations {
            server_ops.sort_by_key(|o| o.operation);
            server_ops.dedup_by_key(|o| o.operation);
            for op in &mut server_ops {
                let mut salt = 0;
                let mut name = operation_name(&op.server, op.operation);
                while by_name.contains_key(&name) {
                    salt += 1;
                    name = operation_name_with_salt(&op.server, op.operation, salt);
                }
                by_name.insert(name.clone(), Slot::Operation(ops.len()));
                op.name = name;
                ops.push(op.clone());
            }
        }
        // Descriptions name the sibling operations of the same server.
        let mut start = 0;
        while start < ops.len() {
            let server = ops[start].server.clone();
            let end = ops[start..]
                .iter()
                .position(|o| o.server != server)
                .map_or(ops.len(), |n| start + n);
            crate::operation::describe(&mut ops[start..end]);
            start = end;
        }
        Self {
            tools: all,
            operations: ops,
            by_name,
        }
    }

    /// Every server tool, ordered by server then tool name (operations not included).
    pub fn tools(&self) -> &[ExposedTool] {
        &self.tools
    }

    /// The tools of one server (its operations not included).
    pub fn server_tools<'a>(&'a self, server: &'a str) -> impl Iterator<Item = &'a ExposedTool> {
        self.tools.iter().filter(move |t| t.server == server)
    }

    /// Every resource and prompt operation, ordered by server then operation.
    pub fn operations(&self) -> &[ExposedOperation] {
        &self.operations
    }

    /// The operations of one server.
    pub fn server_operations<'a>(
        &'a self,
        server: &'a str,
    ) -> impl Iterator<Item = &'a ExposedOperation> {
        self.operations.iter().filter(move |o| o.server == server)
    }

    /// Everything a model is offered: the tools, then the operations.
    pub fn model_tools(&self) -> impl Iterator<Item = ModelTool<'_>> {
        let tools = self.tools.iter().map(ModelTool::Tool);
        tools.chain(self.operations.iter().map(ModelTool::Operation))
    }

    /// The tool behind an exposed name (`None` for an operation's name: see
    /// [`lookup`](Self::lookup)).
    pub fn resolve(&self, exposed: &str) -> Option<&ExposedTool> {
        match self.by_name.get(exposed)? {
            Slot::Tool(i) => Some(&self.tools[*i]),
            Slot::Operation(_) => None,
        }
    }

    /// The operation behind an exposed name.
    pub fn resolve_operation(&self, exposed: &str) -> Option<&ExposedOperation> {
        match self.by_name.get(exposed)? {
            Slot::Operation(i) => Some(&self.operations[*i]),
            Slot::Tool(_) => None,
        }
    }

    /// The tool or operation behind an exposed name.
    pub fn lookup(&self, exposed: &str) -> Option<ModelTool<'_>> {
        Some(match self.by_name.get(exposed)? {
            Slot::Tool(i) => ModelTool::Tool(&self.tools[*i]),
            Slot::Operation(i) => ModelTool::Operation(&self.operations[*i]),
        })
    }

    /// How many server tools there are (operations not counted).
    pub fn len(&self) -> usize {
        self.tools.len()
    }

    /// Whether there are no server tools.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(name: &str) -> Tool {
        serde_json::from_value(serde_json::json!({"name": name, "inputSchema": {"type": "object"}}))
            .expect("tool")
    }

    #[test]
    fn names_are_shaped_as_the_seed_says() {
        let name = exposed_name("fs", "read_file");
        assert!(name.starts_with("mcp_fs_read_file_"), "{name}");
        assert_eq!(name.len(), "mcp_fs_read_file_".len() + 8);
        assert_eq!(name, exposed_name("fs", "read_file"), "stable");
        assert_ne!(name, exposed_name("fs", "read-file"));
    }

    #[test]
    fn long_names_are_cut_but_stay_distinct() {
        let server = "s".repeat(64);
        let a = exposed_name(&server, &"t".repeat(200));
        let b = exposed_name(&server, &format!("{}x", "t".repeat(200)));
        assert!(a.len() <= MAX_NAME_LEN && b.len() <= MAX_NAME_LEN);
        assert_ne!(a, b);
        assert_eq!(split_budget(60, 3, 50), (47, 3));
        assert_eq!(split_budget(3, 60, 50), (3, 47));
        assert_eq!(split_budget(40, 40, 50), (25, 25));
    }

    #[test]
    fn odd_characters_become_underscores() {
        let name = exposed_name("srv", "ツール/read file.v2");
        assert!(
            name.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'),
            "{name}"
        );
    }

    #[test]
    fn clean_text_drops_escapes_and_cuts() {
        assert_eq!(clean_text("a\u{1b}[31mred\u{1b}[0m\u{7}b", 100), "aredb");
        assert_eq!(clean_text("line\nnext\ttab", 100), "line\nnext\ttab");
        // A title, a hyperlink and a clipboard write vanish whole, with either terminator.
        assert_eq!(clean_text("a\u{1b}]0;owned\u{7}b", 100), "ab");
        assert_eq!(
            clean_text("a\u{1b}]8;;https://x\u{1b}\\link\u{1b}]8;;\u{1b}\\b", 100),
            "alinkb"
        );
        assert_eq!(clean_text("a\u{1b}]52;c;ZXZpbA==\u{7}b", 100), "ab");
        assert_eq!(clean_text("a\u{1b}Pdcs\u{1b}\\b", 100), "ab");
        assert_eq!(clean_text("abcdef", 3), "abc [… cut]");
    }

    #[test]
    fn adapter_filters_and_falls_back() {
        let mut no_schema = tool("bare");
        no_schema.input_schema = None;
        let mut bad = tool("bad");
        bad.input_schema = Some(serde_json::json!("string"));
        let mut task = tool("task");
        task.execution = Some(
            serde_json::from_value(serde_json::json!({"taskSupport": "required"}))
                .expect("execution"),
        );
        let mut big = tool("big");
        big.input_schema =
            Some(serde_json::json!({"type": "object", "description": "x".repeat(100)}));
        let tools = vec![
            tool("ok"),
            no_schema,
            bad,
            task,
            big,
            tool("hidden"),
            tool("ok"),
        ];
        let filter = ToolFilter::new(None, vec!["hidden".into()]);
        let limits = CatalogLimits {
            max_schema_bytes: 64,
            ..CatalogLimits::default()
        };
        let (exposed, diags) = adapt_server_tools("s", tools, &filter, &limits);
        let names: Vec<_> = exposed.iter().map(|t| t.tool.as_str()).collect();
        assert_eq!(names, ["ok", "bare", "bad", "big"]);
        for t in &exposed[1..] {
            assert_eq!(*t.parameters, fallback_schema(), "{}", t.tool);
        }
        let about: Vec<_> = diags.iter().map(|d| d.tool.as_str()).collect();
        assert_eq!(about, ["bare", "bad", "task", "big", "ok"]);
        assert!(diags[2].message.contains("taskSupport"));
        assert!(exposed[0].description.starts_with("[MCP s/ok] "));
    }

    #[test]
    fn allow_list_keeps_only_named_tools() {
        let filter = ToolFilter::new(Some(vec!["a".into()]), vec![]);
        assert!(filter.allows("a"));
        assert!(!filter.allows("b"));
    }

    #[test]
    fn catalog_resolves_every_name_back() {
        let mut servers = BTreeMap::new();
        for s in ["one", "two"] {
            let tools = (0..50).map(|i| tool(&format!("t{i}"))).collect();
            let (exposed, _) =
                adapt_server_tools(s, tools, &ToolFilter::default(), &CatalogLimits::default());
            servers.insert(s.to_owned(), exposed);
        }
        let catalog = Catalog::build(servers);
        assert_eq!(catalog.len(), 100);
        for t in catalog.tools() {
            let back = catalog.resolve(&t.name).expect("resolves");
            assert_eq!((&back.server, &back.tool), (&t.server, &t.tool));
        }
        assert_eq!(catalog.server_tools("two").count(), 50);
    }
}
