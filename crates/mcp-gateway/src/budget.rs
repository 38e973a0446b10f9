//! What each way of exposing the tools costs a model (issue 9, `mcp-host budget`): the figure
//! seed 004 exists for.
//!
//! A model pays for every tool definition it is given, in every request. [`measure`] compares
//! the tool definitions of each upstream exposed directly (its tools as `tools/list` carries
//! them) with the gateway in category mode (its two tools as `tools/list` carries them, the
//! category list included), and gives what loading each category costs on top (the
//! `get-category-tools` answer, counted once although it is sent both as text and as
//! `structuredContent`: a client hands the model one of them).
//!
//! Sizes are the bytes of compact JSON. Tokens are approximated as bytes / 4, rounded up:
//! the usual rule of thumb for English text and JSON with common tokenizers. It is an
//! estimate for comparing the modes, not any model's exact count.

use std::collections::BTreeMap;

use mcp_protocol::schema::{ListToolsResult, Tool};
use serde::Serialize;

use crate::file::{Category, CategoryTools, GatewayFile};
use crate::mode::category::resolve::{Upstream, Upstreams, answer, resolve, tool_definitions};

/// A size in bytes and approximate tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct Size {
    /// Bytes of compact JSON.
    pub bytes: usize,
    /// Approximate tokens: bytes / 4, rounded up.
    pub tokens: usize,
}

impl Size {
    /// The size of `value` as compact JSON.
    pub fn of(value: &impl Serialize) -> Self {
        Self::bytes(serde_json::to_vec(value).map_or(0, |v| v.len()))
    }

    /// A size of `bytes` bytes.
    pub fn bytes(bytes: usize) -> Self {
        Self {
            bytes,
            tokens: bytes.div_ceil(4),
        }
    }

    fn add(self, other: Self) -> Self {
        Self::bytes(self.bytes + other.bytes)
    }
}

/// One upstream's tools exposed directly.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct UpstreamCost {
    /// The server id.
    pub server: String,
    /// How many tools it lists.
    pub tools: usize,
    /// Its `tools/list` result.
    pub size: Size,
}

/// What loading one category costs.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct CategoryCost {
    /// The category's name.
    pub category: String,
    /// How many tools its answer carries.
    pub tools: usize,
    /// Its `get-category-tools` answer.
    pub size: Size,
}

/// The measure of a gateway file against its upstreams' tools.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Budget {
    /// Each upstream exposed directly.
    pub upstreams: Vec<UpstreamCost>,
    /// Every upstream exposed directly: the sum.
    pub direct: Size,
    /// The gateway's `tools/list` in category mode.
    pub gateway: Size,
    /// Each category's `get-category-tools` answer.
    pub categories: Vec<CategoryCost>,
    /// How much smaller the gateway's list is than the direct one, in percent (0 when there
    /// is nothing to expose).
    pub reduction_percent: f64,
}

/// Measures `file`'s categories over `upstreams` (each server's tools as it lists them, with
/// their input schemas). An upstream missing from the map counts as not ready. A file without
/// categories is measured as one category per server holding all of its tools (see
/// [`one_category_per_server`]).
pub fn measure(file: &GatewayFile, upstreams: &BTreeMap<String, Vec<Tool>>) -> Budget {
    let synthetic;
    let file = if file.categories.is_empty() {
        synthetic = one_category_per_server(file, upstreams);
        &synthetic
    } else {
        file
    };
    let mut costs = Vec::new();
    let mut direct = Size::default();
    for (server, tools) in upstreams {
        let size = Size::of(&ListToolsResult::new(tools.clone()));
        direct = direct.add(size);
        costs.push(UpstreamCost {
            server: server.clone(),
            tools: tools.len(),
            size,
        });
    }
    let gateway = Size::of(&ListToolsResult::new(tool_definitions(file)));
    let view: Upstreams = upstreams
        .iter()
        .map(|(server, tools)| {
            (
                server.clone(),
                Upstream {
                    ready: true,
                    state: "ready".to_owned(),
                    last_error: None,
                    tools: tools.clone(),
                },
            )
        })
        .collect();
    let categories = file
        .categories
        .iter()
        .map(|(name, category)| {
            let resolved = resolve(category, &crate::mode::category::resolve::ids(file), &view);
            CategoryCost {
                category: name.clone(),
                tools: resolved.tools.len(),
                size: Size::of(&answer(name, category, &resolved, None)),
            }
        })
        .collect();
    let reduction_percent = if direct.bytes == 0 {
        0.0
    } else {
        100.0 * (1.0 - gateway.bytes as f64 / direct.bytes as f64)
    };
    Budget {
        upstreams: costs,
        direct,
        gateway,
        categories,
        reduction_percent,
    }
}

/// The categories a gateway would have with none configured: one per server, named by its
/// id, described by the server's `description` (or its id), holding every tool.
pub fn one_category_per_server(
    file: &GatewayFile,
    upstreams: &BTreeMap<String, Vec<Tool>>,
) -> GatewayFile {
    let mut out = file.clone();
    for server in upstreams.keys() {
        let description = file
            .mcp_servers
            .get(server)
            .and_then(|s| s.description.clone())
            .unwrap_or_else(|| format!("The tools of server `{server}`."));
        out.categories.insert(
            server.clone(),
            Category {
                description,
                server: Some(server.clone()),
                servers: Vec::new(),
                tools: CategoryTools {
                    include_patterns: vec!["*".to_owned()],
                    ..CategoryTools::default()
                },
            },
        );
    }
    out
}

/// Each ready server's tools as it lists them, from a running host's catalogue: the input of
/// [`measure`].
pub fn listed_tools(host: &mcp_host::Host) -> BTreeMap<String, Vec<Tool>> {
    let catalog = host.catalog();
    host.status()
        .into_iter()
        .filter(|s| s.state == mcp_host::ServerState::Ready)
        .map(|s| {
            let tools = catalog
                .server_tools(&s.id)
                .map(crate::shared::listed_tool)
                .collect();
            (s.id, tools)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(name: &str, words: usize) -> Tool {
        let mut t = Tool::new(name.to_owned());
        t.description = Some("word ".repeat(words));
        t.input_schema =
            Some(json!({"type": "object", "properties": {"path": {"type": "string"}}}));
        t
    }

    #[test]
    fn the_gateway_costs_its_two_tools_and_each_category_its_answer() {
        let text = r#"{"mcpServers": {"s": {"command": "x"}}, "categories": {
            "fs": {"description": "files", "server": "s", "tools": {"includeNames": ["a", "b"]}},
            "other": {"description": "the rest", "server": "s", "tools": {"includePatterns": ["c*"]}}}}"#;
        let file: GatewayFile = serde_json::from_str(text).unwrap();
        let tools: Vec<Tool> = ["a", "b", "c1", "c2"]
            .iter()
            .map(|n| tool(n, 200))
            .collect();
        let upstreams = BTreeMap::from([("s".to_owned(), tools.clone())]);
        let budget = measure(&file, &upstreams);
        let direct = serde_json::to_vec(&json!({"tools": tools})).unwrap().len();
        assert_eq!(budget.direct.bytes, direct);
        assert_eq!(budget.direct.tokens, direct.div_ceil(4));
        assert_eq!(budget.upstreams[0].tools, 4);
        assert_eq!(budget.categories.len(), 2);
        assert_eq!(budget.categories[0].tools, 2);
        assert!(budget.categories[0].size.bytes > 2000);
        assert!(budget.gateway.bytes < budget.direct.bytes);
        assert!(budget.reduction_percent > 50.0, "{budget:?}");
    }

    #[test]
    fn without_categories_each_server_is_one() {
        let upstreams = BTreeMap::from([("s".to_owned(), vec![tool("a", 10)])]);
        let budget = measure(&GatewayFile::default(), &upstreams);
        assert_eq!(budget.categories.len(), 1);
        assert_eq!(budget.categories[0].category, "s");
        assert_eq!(budget.categories[0].tools, 1);
    }
}
