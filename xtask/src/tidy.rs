//! `cargo xtask tidy`, also run as a `#[test]` so that `cargo test --workspace` is the whole
//! gate: file headers, banned test attributes, trailing whitespace, internal dependencies
//! declared through the workspace, the crate graph written in `docs/architecture.md`, a
//! sans-IO `mcp-protocol`, and no module import cycle in the crates that keep theirs acyclic.
//!
//! Long files: a `.rs` file of more than [`LONG_FILE_LINES`] lines (STYLE rule 17's target)
//! must say why in the first paragraph of its `//!` header, with the words "long because"
//! (any case, and they may be wrapped over two lines): "This file is long because …". A
//! file that cannot give a reason should be split instead.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};
use serde_json::Value;
use xshell::{Shell, cmd};

use crate::{flags, project_root};

/// Crates whose modules never import a module that imports them back (the crate root, a
/// facade of re-exports, aside). A crate joins once its graph is acyclic.
const ACYCLIC_CRATES: &[&str] = &["mcp-gateway", "mcp-host", "mcp-session", "mcp-stdio"];

/// Lines above which a `.rs` file must say why it is long (see the module doc).
const LONG_FILE_LINES: usize = 800;

/// The words the first header paragraph of a long file must hold.
const LONG_FILE_MARKER: &str = "long because";

/// Crates that would give `mcp-protocol` I/O, a runtime or a clock of its own.
const IO_CRATES: &[&str] = &[
    "tokio",
    "hyper",
    "hyper-util",
    "mio",
    "socket2",
    "reqwest",
    "async-std",
    "smol",
    "rand",
    "getrandom",
    "chrono",
    "time",
];

impl flags::Tidy {
    pub(crate) fn run(self, sh: &Shell) -> anyhow::Result<()> {
        let root = project_root();
        let mut problems = Vec::new();
        check_sources(&root, &mut problems)?;
        check_manifests(&root, &mut problems)?;
        check_module_cycles(&root, &mut problems)?;
        let meta: Value =
            serde_json::from_str(&cmd!(sh, "cargo metadata --format-version 1").read()?)?;
        check_crate_graph(&root, &meta, &mut problems)?;
        check_sans_io(&meta, &mut problems);
        if problems.is_empty() {
            return Ok(());
        }
        for p in &problems {
            eprintln!("tidy: {p}");
        }
        bail!("tidy found {} problem(s)", problems.len())
    }
}

fn files(dir: &Path, out: &mut Vec<PathBuf>) -> anyhow::Result<()> {
    for entry in fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let path = entry?.path();
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        if name.starts_with('.') || name == "target" || name == "snapshots" {
            continue;
        }
        if path.is_dir() {
            files(&path, out)?;
        } else {
            out.push(path);
        }
    }
    Ok(())
}

fn check_sources(root: &Path, problems: &mut Vec<String>) -> anyhow::Result<()> {
    let mut all = Vec::new();
    for dir in ["crates", "xtask", "docs", "fixtures"] {
        files(&root.join(dir), &mut all)?;
    }
    all.push(root.join("README.md"));
    // Spelled in two halves so that this file does not trip its own check.
    let banned = [concat!("#[should", "_panic"), concat!("#[ign", "ore")];
    for path in all {
        let rel = path
            .strip_prefix(root)
            .unwrap_or(&path)
            .display()
            .to_string();
        let ext = path
            .extension()
            .and_then(|e| e.to_str())
            .unwrap_or_default();
        if !matches!(ext, "rs" | "md" | "toml") {
            continue;
        }
        let text = fs::read_to_string(&path).with_context(|| format!("reading {rel}"))?;
        if ext == "rs" && !text.starts_with("//!") {
            problems.push(format!(
                "{rel}: a .rs file must start with a `//!` doc comment"
            ));
        }
        if ext == "rs"
            && let Some(problem) = long_file_problem(&text)
        {
            problems.push(format!("{rel}: {problem}"));
        }
        for b in banned {
            if ext == "rs" && text.contains(b) {
                problems.push(format!(
                    "{rel}: `{b}]` is not allowed: tests assert, they are never skipped"
                ));
            }
        }
        for (n, line) in text.lines().enumerate() {
            if line.ends_with(' ') || line.ends_with('\t') {
                problems.push(format!("{rel}:{}: trailing whitespace", n + 1));
            }
        }
    }
    Ok(())
}

/// A file over [`LONG_FILE_LINES`] lines whose header's first paragraph does not say why it is
/// long (with [`LONG_FILE_MARKER`]): what is wrong, else `None`.
fn long_file_problem(text: &str) -> Option<String> {
    let lines = text.lines().count();
    if lines <= LONG_FILE_LINES {
        return None;
    }
    let first_paragraph: Vec<&str> = text
        .lines()
        .map_while(|line| {
            line.strip_prefix("//!")
                .or_else(|| line.strip_prefix("//"))
                .map(str::trim)
        })
        .take_while(|words| !words.is_empty())
        .collect();
    let said = first_paragraph.join(" ").to_lowercase();
    if said.contains(LONG_FILE_MARKER) {
        return None;
    }
    Some(format!(
        "{lines} lines, over {LONG_FILE_LINES}: split it, or say why in the first paragraph of its header (\"This file is {LONG_FILE_MARKER} …\")"
    ))
}

/// Internal dependencies are declared once, in the workspace manifest.
fn check_manifests(root: &Path, problems: &mut Vec<String>) -> anyhow::Result<()> {
    let mut manifests = vec![root.join("xtask/Cargo.toml")];
    for entry in fs::read_dir(root.join("crates"))? {
        let m = entry?.path().join("Cargo.toml");
        if m.exists() {
            manifests.push(m);
        }
    }
    for m in manifests {
        let text = fs::read_to_string(&m)?;
        let rel = m.strip_prefix(root).unwrap_or(&m).display().to_string();
        if text
            .lines()
            .any(|l| l.contains("path = \"") && !l.trim_start().starts_with("path"))
        {
            problems.push(format!("{rel}: declare internal dependencies in the workspace manifest and use `workspace = true`"));
        }
        if !text.contains("[lints]\nworkspace = true") {
            problems.push(format!("{rel}: needs `[lints] workspace = true`"));
        }
    }
    Ok(())
}

/// The allowed workspace edges, from the table between the crate-graph markers of
/// `docs/architecture.md`: `| `crate` | `dep`, `dep` |`, or `none`.
fn documented_graph(root: &Path) -> anyhow::Result<BTreeMap<String, BTreeSet<String>>> {
    let doc = fs::read_to_string(root.join("docs/architecture.md"))
        .context("reading docs/architecture.md")?;
    let start = doc
        .find("<!-- crate-graph begin -->")
        .context("docs/architecture.md has no crate-graph begin marker")?;
    let end = doc
        .find("<!-- crate-graph end -->")
        .context("docs/architecture.md has no crate-graph end marker")?;
    let mut graph = BTreeMap::new();
    for line in doc[start..end].lines() {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        if cells.len() < 4 || !cells[1].starts_with('`') {
            continue;
        }
        let name = cells[1].trim_matches('`').to_owned();
        let deps = cells[2]
            .split(',')
            .map(|d| d.trim().trim_matches('`').to_owned())
            .filter(|d| !d.is_empty() && d != "none")
            .collect();
        graph.insert(name, deps);
    }
    Ok(graph)
}

fn check_crate_graph(root: &Path, meta: &Value, problems: &mut Vec<String>) -> anyhow::Result<()> {
    let documented = documented_graph(root)?;
    let members: BTreeSet<String> = workspace_names(meta);
    for package in meta["packages"].as_array().into_iter().flatten() {
        let Some(name) = package["name"].as_str() else {
            continue;
        };
        if !members.contains(name) {
            continue;
        }
        let Some(allowed) = documented.get(name) else {
            problems.push(format!(
                "docs/architecture.md: crate graph has no row for `{name}`"
            ));
            continue;
        };
        for dep in package["dependencies"].as_array().into_iter().flatten() {
            let Some(dep_name) = dep["name"].as_str() else {
                continue;
            };
            if !members.contains(dep_name) {
                continue;
            }
            let dev = dep["kind"].as_str() == Some("dev");
            // Only the test kit may be a dev-only edge; anything else would build a crate
            // twice in its own unit tests.
            let ok = if dev {
                allowed.contains(dep_name) || dep_name == "mcp-testkit"
            } else {
                allowed.contains(dep_name)
            };
            if !ok {
                problems.push(format!(
                    "`{name}` depends on `{dep_name}`, an edge docs/architecture.md does not allow"
                ));
            }
        }
    }
    Ok(())
}

fn workspace_names(meta: &Value) -> BTreeSet<String> {
    let ids: BTreeSet<&str> = meta["workspace_members"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    meta["packages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|p| p["id"].as_str().is_some_and(|id| ids.contains(id)))
        .filter_map(|p| p["name"].as_str().map(str::to_owned))
        .collect()
}

/// `cargo tree -p mcp-protocol` (normal edges) holds no I/O crate.
fn check_sans_io(meta: &Value, problems: &mut Vec<String>) {
    let nodes: BTreeMap<&str, &Value> = meta["resolve"]["nodes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|n| Some((n["id"].as_str()?, n)))
        .collect();
    let names: BTreeMap<&str, &str> = meta["packages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| Some((p["id"].as_str()?, p["name"].as_str()?)))
        .collect();
    let Some(start) = names
        .iter()
        .find(|(_, n)| **n == "mcp-protocol")
        .map(|(id, _)| *id)
    else {
        problems.push("no mcp-protocol package".to_owned());
        return;
    };
    let mut seen = BTreeSet::new();
    let mut stack = vec![start];
    while let Some(id) = stack.pop() {
        if !seen.insert(id) {
            continue;
        }
        let Some(node) = nodes.get(id) else { continue };
        for dep in node["deps"].as_array().into_iter().flatten() {
            let normal = dep["dep_kinds"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|k| k["kind"].is_null());
            if let (true, Some(pkg)) = (normal, dep["pkg"].as_str()) {
                stack.push(pkg);
            }
        }
    }
    for id in seen {
        let name = names.get(id).copied().unwrap_or_default();
        if IO_CRATES.contains(&name) {
            problems.push(format!(
                "mcp-protocol must stay sans-IO but depends on `{name}`"
            ));
        }
    }
}

/// Reports each module of an [`ACYCLIC_CRATES`] crate that imports (`crate::…`, `super::…`
/// or `self::…`, outside comments and its `#[cfg(test)]` tail) a module that reaches it back.
fn check_module_cycles(root: &Path, problems: &mut Vec<String>) -> anyhow::Result<()> {
    for krate in ACYCLIC_CRATES {
        let src = root.join("crates").join(krate).join("src");
        let mut paths = Vec::new();
        files(&src, &mut paths)?;
        let mut texts = BTreeMap::new();
        for path in paths
            .iter()
            .filter(|p| p.extension().is_some_and(|e| e == "rs"))
        {
            let rel = path.strip_prefix(&src).unwrap_or(path).with_extension("");
            let mut parts: Vec<String> = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            if parts.last().is_some_and(|l| l == "mod" || l == "lib") {
                parts.pop();
            }
            if parts.last().is_some_and(|l| l == "tests") {
                continue;
            }
            texts.insert(parts.join("::"), fs::read_to_string(path)?);
        }
        let modules: BTreeSet<String> = texts.keys().cloned().collect();
        let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (module, text) in &texts {
            if module.is_empty() {
                continue;
            }
            let code: String = text
                .split("#[cfg(test)]")
                .next()
                .unwrap_or_default()
                .lines()
                .filter(|l| !l.trim_start().starts_with("//"))
                .collect::<Vec<_>>()
                .join("\n");
            let parent = module.rsplit_once("::").map_or("", |(p, _)| p);
            for (prefix, base) in [("crate::", ""), ("super::", parent), ("self::", module)] {
                for path in referenced_paths(&code, prefix) {
                    let mut segments: Vec<&str> =
                        base.split("::").filter(|s| !s.is_empty()).collect();
                    segments.extend(path.split("::"));
                    // The longest prefix that is a module of the crate.
                    let target = (1..=segments.len())
                        .rev()
                        .map(|n| segments[..n].join("::"))
                        .find(|m| modules.contains(m));
                    if let Some(target) = target
                        && target != *module
                    {
                        edges.entry(module.clone()).or_default().insert(target);
                    }
                }
            }
        }
        let reaches = |from: &str, to: &str| {
            let mut stack = vec![from.to_owned()];
            let mut seen = BTreeSet::new();
            while let Some(m) = stack.pop() {
                if m == to {
                    return true;
                }
                if seen.insert(m.clone()) {
                    stack.extend(edges.get(&m).into_iter().flatten().cloned());
                }
            }
            false
        };
        for (module, targets) in &edges {
            for target in targets {
                if reaches(target, module) {
                    problems.push(format!(
                        "{krate}: module `{module}` imports `{target}`, which imports it back (directly or through others); move what both need into a leaf module"
                    ));
                }
            }
        }
    }
    Ok(())
}

/// The paths after each `prefix` in `code`: `crate::a::b` gives `a::b`, and
/// `crate::{a, b::c}` gives `a` and `b::c`.
fn referenced_paths(code: &str, prefix: &str) -> Vec<String> {
    let word = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == ':';
    let mut out = Vec::new();
    for (at, _) in code.match_indices(prefix) {
        if code[..at].ends_with(|c: char| c.is_ascii_alphanumeric() || c == '_' || c == ':') {
            continue;
        }
        let rest = &code[at + prefix.len()..];
        if let Some(group) = rest.strip_prefix('{') {
            // The first segment of each item at the group's own depth.
            let (mut depth, mut item_start) = (0usize, true);
            for (i, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => item_start = true,
                    c if item_start && word(c) => {
                        item_start = false;
                        let path: String = group[i..].chars().take_while(|c| word(*c)).collect();
                        let path = path.trim_end_matches(':');
                        if path != "self" {
                            out.push(path.to_owned());
                        }
                    }
                    _ => {}
                }
            }
        } else {
            let path: String = rest.chars().take_while(|c| word(*c)).collect();
            out.push(path.trim_end_matches(':').to_owned());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn imports_are_read_from_plain_grouped_and_super_paths() {
        let paths = |code: &str, prefix: &str| super::referenced_paths(code, prefix);
        assert_eq!(
            paths(
                "use crate::{a, b::c::{D, e}, f};\nuse crate::x::Y;",
                "crate::"
            ),
            ["a", "b::c", "f", "x::Y"]
        );
        assert_eq!(
            paths("use super::{Mode, Answer};", "super::"),
            ["Mode", "Answer"]
        );
        assert!(paths("use mcp_host::crate::x;", "crate::").is_empty());
    }

    #[test]
    fn a_long_file_must_say_why_in_its_first_header_paragraph() {
        let body = |n: usize| "fn f() {}\n".repeat(n);
        let problem =
            |header: &str, n: usize| super::long_file_problem(&format!("{header}{}", body(n)));
        let why = "//! The parser.\n//! This file is long\n//! because the grammar is one table.\n";
        // A long file that says why, over two wrapped lines, passes; at the limit, nothing is asked.
        assert_eq!(problem(why, 900), None);
        assert_eq!(
            problem("//! The parser.\n", super::LONG_FILE_LINES - 1),
            None
        );
        // One line over, without the reason: named with its length.
        let found = problem("//! The parser.\n", super::LONG_FILE_LINES).unwrap();
        assert!(found.starts_with("801 lines, over 800"), "{found}");
        // The reason in a later paragraph, or in the code, does not count.
        let late =
            "//! The parser.\n//!\n//! This file is long because the grammar is one table.\n";
        assert!(problem(late, 900).is_some());
        let in_code = format!("//! The parser.\n{}// long because\n", body(900));
        assert!(super::long_file_problem(&in_code).is_some());
        // Test files whose header is a plain `//` comment are read the same way.
        assert_eq!(
            problem("// Tests, long because each case is a table row.\n", 900),
            None
        );
    }

    #[test]
    fn tidy() {
        let sh = xshell::Shell::new().unwrap();
        sh.change_dir(crate::project_root());
        crate::flags::Tidy {}.run(&sh).unwrap();
    }
}
