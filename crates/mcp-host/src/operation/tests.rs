//! Unit tests of the operations: which a server gets, their names, schemas, arguments and
//! the shape of their results.

use std::collections::BTreeMap;

use mcp_protocol::schema::{ListChangedCapability, ResourcesCapability};

use super::*;
use crate::catalog::{Catalog, MAX_NAME_LEN, exposed_name, operation_name};

fn caps(resources: bool, prompts: bool) -> ServerCapabilities {
    let mut c = ServerCapabilities::new();
    c.resources = resources.then(ResourcesCapability::new);
    c.prompts = prompts.then(ListChangedCapability::new);
    c
}

fn ops(list: &[ExposedOperation]) -> Vec<Operation> {
    list.iter().map(|o| o.operation).collect()
}

#[test]
fn a_server_gets_the_operations_of_what_it_declared_and_the_settings_allow() {
    use Operation::*;
    let all = server_operations("s", &caps(true, true), true, true);
    assert_eq!(
        ops(&all),
        [
            ListResources,
            ListResourceTemplates,
            ReadResource,
            ListPrompts,
            GetPrompt
        ]
    );
    let resources = server_operations("s", &caps(true, false), true, true);
    assert_eq!(
        ops(&resources),
        [ListResources, ListResourceTemplates, ReadResource]
    );
    let prompts_only = server_operations("s", &caps(true, true), false, true);
    assert_eq!(ops(&prompts_only), [ListPrompts, GetPrompt]);
    assert!(server_operations("s", &caps(false, false), true, true).is_empty());
    assert!(server_operations("s", &caps(true, true), false, false).is_empty());
}

#[test]
fn schemas_are_plain_objects_every_model_api_takes() {
    for op in Operation::ALL {
        let schema = op.schema();
        let text = schema.to_string();
        assert_eq!(schema["type"], "object", "{op}");
        assert!(schema["properties"].is_object(), "{op}");
        for banned in ["$ref", "oneOf", "anyOf", "allOf", "format", "$schema"] {
            assert!(!text.contains(banned), "{op}: {banned} in {text}");
        }
    }
    assert_eq!(Operation::ReadResource.schema()["required"], json!(["uri"]));
    let get = Operation::GetPrompt.schema();
    assert_eq!(get["required"], json!(["name"]));
    assert_eq!(
        get["properties"]["arguments"]["additionalProperties"]["type"],
        "string"
    );
    assert_eq!(
        Operation::ListPrompts.schema()["properties"]["cursor"]["type"],
        "string"
    );
}

#[test]
fn names_are_stable_bounded_and_never_a_tools_name() {
    let server = "s".repeat(64);
    for op in Operation::ALL {
        let name = operation_name(&server, op);
        assert!(name.len() <= MAX_NAME_LEN, "{name}");
        assert_eq!(name, operation_name(&server, op), "stable");
        // A tool the server named after the operation gets another name.
        assert_ne!(name, exposed_name(&server, op.slug()));
        assert_ne!(name, exposed_name(&server, op.method()));
        let short = operation_name("fs", op);
        assert!(
            short.starts_with(&format!("mcp_fs_{}_", op.slug())),
            "{short}"
        );
    }
}

#[test]
fn a_catalogue_names_tools_first_and_operations_apart() {
    let tool = |name: &str| -> crate::ExposedTool {
        let t: mcp_protocol::schema::Tool =
            serde_json::from_value(json!({"name": name, "inputSchema": {"type": "object"}}))
                .expect("tool");
        let (mut exposed, _) = crate::catalog::adapt_server_tools(
            "fs",
            vec![t],
            &crate::catalog::ToolFilter::default(),
            &crate::catalog::CatalogLimits::default(),
        );
        exposed.remove(0)
    };
    let tools = BTreeMap::from([(
        "fs".to_owned(),
        vec![tool("read_resource"), tool("resources/read")],
    )]);
    let with = Catalog::build_with_operations(
        tools.clone(),
        BTreeMap::from([(
            "fs".to_owned(),
            server_operations("fs", &caps(true, true), true, true),
        )]),
    );
    let without = Catalog::build(tools);
    // Tool names do not move when operations come.
    let names = |c: &Catalog| -> Vec<String> { c.tools().iter().map(|t| t.name.clone()).collect() };
    assert_eq!(names(&with), names(&without));
    assert_eq!(with.len(), 2, "operations are not counted as tools");
    assert_eq!(with.operations().len(), 5);
    let all: Vec<&str> = with.model_tools().map(|m| m.name()).collect();
    let unique: std::collections::BTreeSet<&str> = all.iter().copied().collect();
    assert_eq!(all.len(), 7);
    assert_eq!(unique.len(), 7, "{all:?}");
    for op in with.operations() {
        assert!(with.resolve(&op.name).is_none());
        let back = with.resolve_operation(&op.name).expect("resolves");
        assert_eq!((back.server.as_str(), back.operation), ("fs", op.operation));
        assert!(op.description.contains("untrusted"), "{}", op.description);
        assert!(op.description.contains("`fs`"), "{}", op.description);
    }
    let read = with
        .operations()
        .iter()
        .find(|o| o.operation == Operation::ReadResource)
        .expect("read");
    let list = with
        .operations()
        .iter()
        .find(|o| o.operation == Operation::ListResources)
        .expect("list");
    assert!(
        list.description.contains(&read.name),
        "a listing points at the read: {}",
        list.description
    );
    assert!(matches!(
        with.lookup(&read.name),
        Some(crate::ModelTool::Operation(_))
    ));
    assert!(matches!(
        with.lookup(&with.tools()[0].name),
        Some(crate::ModelTool::Tool(_))
    ));
}

#[test]
fn arguments_are_checked_for_the_model() {
    let obj = |v: Value| match v {
        Value::Object(m) => m,
        _ => JsonObject::new(),
    };
    let e = parse_args(Operation::ReadResource, &obj(json!({}))).unwrap_err();
    assert!(e.contains("`uri` is required"), "{e}");
    let e = parse_args(Operation::ReadResource, &obj(json!({"uri": 3}))).unwrap_err();
    assert!(e.contains("`uri` must be a string"), "{e}");
    assert!(matches!(
        parse_args(Operation::ReadResource, &obj(json!({"uri": "a://b"}))),
        Ok(Args::Uri(u)) if u == "a://b"
    ));
    assert!(matches!(
        parse_args(Operation::ListResources, &obj(json!({"cursor": "c2"}))),
        Ok(Args::Page(Some(c))) if c == "c2"
    ));
    assert!(matches!(
        parse_args(Operation::ListPrompts, &obj(json!({}))),
        Ok(Args::Page(None))
    ));
    let e = parse_args(
        Operation::GetPrompt,
        &obj(json!({"name": "p", "arguments": {"n": 1}})),
    )
    .unwrap_err();
    assert!(e.contains("arguments.n"), "{e}");
    match parse_args(
        Operation::GetPrompt,
        &obj(json!({"name": "p", "arguments": {"n": "1"}})),
    ) {
        Ok(Args::Prompt(name, args)) => {
            assert_eq!(name, "p");
            assert_eq!(args.get("n").map(String::as_str), Some("1"));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_listing_keeps_its_cursor_ahead_of_the_items() {
    let r = listing(
        "resource",
        vec![json!({"uri": "a://1", "title": null})],
        Some("next\"page".to_owned()),
    );
    let texts: Vec<&str> = r
        .content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text(t) => Some(t.text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(
        texts[0],
        "1 resource(s); more follow: call again with cursor \"next\\\"page\""
    );
    assert!(
        texts[1].contains("a://1") && !texts[1].contains("title"),
        "{}",
        texts[1]
    );
    let last = listing("prompt", vec![], None);
    assert!(
        matches!(&last.content[0], ContentBlock::Text(t) if t.text.ends_with("this is the last page"))
    );
}
