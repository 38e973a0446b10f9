//! Properties of the exposed tool names (seed 000 §7.1): stable, at most 64 characters, only
//! `[a-zA-Z0-9_-]`, and no two tools with one name, over thousands of arbitrary names.

// Test code: an unwrap that fails is a failed test, with its location.
#![allow(clippy::unwrap_used)]

use std::collections::{BTreeMap, HashSet};

use mcp_host::Catalog;
use mcp_host::catalog::{
    CatalogLimits, MAX_NAME_LEN, ToolFilter, adapt_server_tools, exposed_name,
};
use mcp_protocol::schema::Tool;
use proptest::prelude::*;
use proptest::strategy::ValueTree as _;

fn valid(name: &str) -> bool {
    name.len() <= MAX_NAME_LEN
        && name.starts_with("mcp_")
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

fn tool(name: &str) -> Tool {
    Tool::new(name.to_owned())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn one_name_is_valid_and_stable(server in "[a-zA-Z0-9_-]{1,64}", tool in "\\PC{0,200}") {
        let name = exposed_name(&server, &tool);
        prop_assert!(valid(&name), "{}", name);
        prop_assert_eq!(name, exposed_name(&server, &tool));
    }
}

/// Ten thousand arbitrary tool names over a few servers, including names that differ only in
/// characters the slug replaces, or beyond the cut: every exposed name is valid, distinct, and
/// the same when the catalogue is built again from the tools in another order.
#[test]
fn ten_thousand_names_never_collide() {
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let names = proptest::collection::vec("[a-z./ ]{1,3}[\\PC]{0,80}", 10_000)
        .new_tree(&mut runner)
        .unwrap()
        .current();
    let servers = [
        "fs",
        "a-very-long-server-id-that-uses-most-of-the-sixty-four-chars-ok",
        "web",
    ];
    let build = |order: &[usize]| {
        let mut by_server: BTreeMap<String, Vec<_>> = BTreeMap::new();
        for &i in order {
            let server = servers[i % servers.len()];
            by_server
                .entry(server.to_owned())
                .or_default()
                .push(tool(&names[i]));
        }
        let adapted = by_server
            .into_iter()
            .map(|(server, tools)| {
                let (exposed, _) = adapt_server_tools(
                    &server,
                    tools,
                    &ToolFilter::default(),
                    &CatalogLimits::default(),
                );
                (server, exposed)
            })
            .collect();
        Catalog::build(adapted)
    };
    let forward: Vec<usize> = (0..names.len()).collect();
    let backward: Vec<usize> = forward.iter().rev().copied().collect();
    let a = build(&forward);
    let b = build(&backward);
    // Duplicate (server, tool) pairs are listed once; everything else is there.
    let distinct: HashSet<_> = forward
        .iter()
        .map(|&i| (servers[i % servers.len()], names[i].as_str()))
        .collect();
    assert_eq!(a.len(), distinct.len());
    let mut seen = HashSet::new();
    for t in a.tools() {
        assert!(valid(&t.name), "{}", t.name);
        assert!(seen.insert(t.name.clone()), "collision on {}", t.name);
        let back = a.resolve(&t.name).unwrap();
        assert_eq!((&back.server, &back.tool), (&t.server, &t.tool));
        let again = b.resolve(&t.name).unwrap();
        assert_eq!(
            (&again.server, &again.tool),
            (&t.server, &t.tool),
            "stable across builds"
        );
    }
}

/// Names the slug makes identical still get different exposed names.
#[test]
fn names_equal_after_the_slug_differ() {
    let tools = [
        "read file",
        "read/file",
        "read.file",
        "read_file",
        "read\u{e9}file",
    ];
    let (exposed, _) = adapt_server_tools(
        "s",
        tools.iter().map(|t| tool(t)).collect(),
        &ToolFilter::default(),
        &CatalogLimits::default(),
    );
    let catalog = Catalog::build(BTreeMap::from([("s".to_owned(), exposed)]));
    let names: HashSet<_> = catalog.tools().iter().map(|t| t.name.clone()).collect();
    assert_eq!(names.len(), tools.len());
    for t in catalog.tools() {
        assert!(t.name.starts_with("mcp_s_read_file_"), "{}", t.name);
    }
}
