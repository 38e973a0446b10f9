//! Category mode's matching, without I/O: the two tools' definitions built from the file,
//! a category matched against its upstreams' tool lists (includes, patterns, excludes,
//! overrides), the names a client may use for what it serves, and the `get-category-tools`
//! answer. `budget` measures with the same functions.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use mcp_host::catalog::clean_text;
use mcp_protocol::schema::Tool;
use serde_json::{Value, json};

use crate::file::{self, Category, GatewayFile};
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
    // A client may run a long upstream call as a task of the gateway's.
    crate::tasks::optional(&mut call);
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
pub(crate) fn parse<'t>(name: &'t str, ids: &[&str]) -> (Option<&'t str>, &'t str) {
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

pub(crate) use crate::glob::glob;

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
pub(crate) fn find_served<'a>(resolved: &'a Resolved, name: &str) -> Vec<&'a Served> {
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
pub(crate) fn is_disabled(category: &Category, ids: &[&str], name: &str) -> bool {
    let (prefix, tool) = parse(name, ids);
    category.tools.overrides.iter().any(|(key, rule)| {
        let (kprefix, ktool) = parse(key, ids);
        rule.enabled == Some(false)
            && ktool == tool
            && (kprefix.is_none() || prefix.is_none() || kprefix == prefix)
    })
}

/// Whether the category's configuration names `tool` (on `server` when given).
pub(crate) fn is_configured(
    category: &Category,
    ids: &[&str],
    server: Option<&str>,
    tool: &str,
) -> bool {
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
