//! Exports of the hostile fixture (`fixtures/model-apis/hostile-tools.json`), the serena
//! fixture and hand-made schemas, per provider. That the providers' own SDK types take what
//! comes out is checked by `cargo xtask interop` (xtask/src/providers.rs).
//! This file is long because each provider's rules get cases of their own over the same fixtures.

use std::collections::BTreeMap;
use std::sync::Arc;

use mcp_protocol::schema::Tool;
use serde_json::{Map, Value, json};

use super::*;
use crate::catalog::{Catalog, CatalogLimits, ExposedTool, ToolFilter, adapt_server_tools};

const ALL: [Format; 5] = [
    Format::Anthropic,
    Format::OpenAiChat,
    Format::OpenAiResponses,
    Format::OpenAiStrict,
    Format::Gemini,
];

fn catalog_of(tools: Vec<Tool>) -> Catalog {
    let (exposed, _) = adapt_server_tools(
        "srv",
        tools,
        &ToolFilter::default(),
        &CatalogLimits::default(),
    );
    Catalog::build(BTreeMap::from([("srv".to_owned(), exposed)]))
}

fn fixture(name: &str) -> Catalog {
    let path = format!("{}/../../fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(path).expect("fixture");
    let value: Value = serde_json::from_str(&text).expect("json");
    catalog_of(serde_json::from_value(value["tools"].clone()).expect("tools"))
}

fn hostile() -> Catalog {
    fixture("model-apis/hostile-tools.json")
}

/// One tool with `schema` as its parameters, as the catalogue would hold it.
fn one(schema: Value) -> ExposedTool {
    ExposedTool {
        name: "mcp_s_t_00000000".into(),
        server: "s".into(),
        tool: "t".into(),
        description: "[MCP s/t] A tool.".into(),
        parameters: Arc::new(schema),
        source: Arc::new(
            serde_json::from_value(json!({"name": "t", "inputSchema": {}})).expect("tool"),
        ),
        runs_as_task: false,
    }
}

/// The exported definitions as a list, whatever the envelope.
fn definitions(export: &Export, format: Format) -> Vec<Value> {
    match format {
        Format::Gemini => export.tools[0]["functionDeclarations"]
            .as_array()
            .cloned()
            .unwrap_or_default(),
        _ => export.tools.as_array().cloned().expect("a list"),
    }
}

fn name_of(definition: &Value) -> &str {
    definition["name"]
        .as_str()
        .or_else(|| definition["function"]["name"].as_str())
        .expect("a name")
}

fn schema_of(definition: &Value) -> &Value {
    for key in ["input_schema", "parameters"] {
        if let Some(s) = definition.get(key) {
            return s;
        }
    }
    &definition["function"]["parameters"]
}

/// The definition of the hostile tool `tool`, if it was exported.
fn find(catalog: &Catalog, format: Format, tool: &str) -> (Option<Value>, Vec<String>) {
    let export = export_catalog(catalog, format);
    let exposed = catalog
        .tools()
        .iter()
        .find(|t| t.tool == tool)
        .expect("the fixture has the tool");
    let definition = definitions(&export, format)
        .into_iter()
        .find(|d| name_of(d) == exposed.name);
    let notes = export
        .diagnostics
        .iter()
        .filter(|d| d.tool == tool)
        .map(|d| d.message.clone())
        .collect();
    (definition, notes)
}

/// Every `$ref` in `value`.
fn refs(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                if k == "$ref"
                    && let Some(r) = v.as_str()
                {
                    out.push(r.to_owned());
                }
                refs(v, out);
            }
        }
        Value::Array(list) => list.iter().for_each(|v| refs(v, out)),
        _ => {}
    }
}

#[test]
fn the_envelopes_are_each_apis_own() {
    let tool = one(json!({"type": "object", "properties": {"a": {"type": "string"}}}));
    let anthropic = export([ModelTool::Tool(&tool)], Format::Anthropic);
    assert_eq!(
        anthropic.tools,
        json!([{
            "name": "mcp_s_t_00000000",
            "description": "[MCP s/t] A tool.",
            "input_schema": {"type": "object", "properties": {"a": {"type": "string"}}},
        }])
    );
    let chat = export([ModelTool::Tool(&tool)], Format::OpenAiChat);
    assert_eq!(chat.tools[0]["type"], "function");
    assert_eq!(chat.tools[0]["function"]["name"], "mcp_s_t_00000000");
    assert_eq!(chat.tools[0]["function"]["strict"], false);
    let responses = export([ModelTool::Tool(&tool)], Format::OpenAiResponses);
    assert_eq!(responses.tools[0]["type"], "function");
    assert_eq!(responses.tools[0]["name"], "mcp_s_t_00000000");
    assert_eq!(responses.tools[0]["strict"], false);
    assert!(responses.tools[0].get("function").is_none());
    let gemini = export([ModelTool::Tool(&tool)], Format::Gemini);
    assert_eq!(
        gemini.tools,
        json!([{"functionDeclarations": [{
            "name": "mcp_s_t_00000000",
            "description": "[MCP s/t] A tool.",
            "parameters": {"type": "OBJECT", "properties": {"a": {"type": "STRING"}}},
        }]}])
    );
    assert_eq!(export([], Format::Gemini).tools, json!([]));
}

#[test]
fn openai_is_strict_only_when_the_schema_already_fits() {
    let fits = one(json!({
        "type": "object",
        "properties": {"a": {"type": "string"}, "b": {"type": ["integer", "null"]}},
        "required": ["a", "b"],
        "additionalProperties": false,
    }));
    let open = one(json!({"type": "object", "properties": {"a": {"type": "string"}}}));
    for api in [Format::OpenAiChat, Format::OpenAiResponses] {
        let done = export([ModelTool::Tool(&fits), ModelTool::Tool(&open)], api);
        let strict: Vec<&Value> = done
            .tools
            .as_array()
            .expect("list")
            .iter()
            .map(|t| t.get("strict").unwrap_or(&t["function"]["strict"]))
            .collect();
        assert_eq!(strict, [&json!(true), &json!(false)], "{api:?}");
        assert_eq!(done.diagnostics.len(), 1, "{:?}", done.diagnostics);
        assert!(
            done.diagnostics[0].message.contains("not strict: ")
                && done.diagnostics[0]
                    .message
                    .contains("the object at the root"),
            "{:?}",
            done.diagnostics
        );
    }
}

#[test]
fn references_are_inlined_and_cycles_kept_as_definitions() {
    let catalog = hostile();
    for format in [Format::Anthropic, Format::OpenAiChat, Format::OpenAiStrict] {
        let (ref_defs, _) = find(&catalog, format, "ref_defs");
        let ref_defs = ref_defs.expect("ref_defs is exported");
        let schema = schema_of(&ref_defs);
        let mut found = Vec::new();
        refs(schema, &mut found);
        assert!(found.is_empty(), "{format:?}: {found:?}");
        assert!(schema.get("$defs").is_none() && schema.get("definitions").is_none());
        let place = &schema["properties"]["where"];
        assert_eq!(place["description"], "Where to look.", "{format:?}");
        assert!(
            place["properties"]["city"].is_object(),
            "{format:?}: {place}"
        );

        for tool in ["recursive_tree", "recursive_root"] {
            let (definition, _) = find(&catalog, format, tool);
            let definition = definition.expect("a recursive tool is exported");
            let schema = schema_of(&definition);
            let mut found = Vec::new();
            refs(schema, &mut found);
            assert!(!found.is_empty(), "{format:?} {tool}: the cycle is kept");
            for r in found {
                let name = r.strip_prefix("#/$defs/").expect("into $defs");
                assert!(
                    schema["$defs"][name].is_object(),
                    "{format:?} {tool}: {r} resolves"
                );
            }
        }
    }
}

#[test]
fn gemini_inlines_and_cuts_cycles() {
    let catalog = hostile();
    let (tree, notes) = find(&catalog, Format::Gemini, "recursive_tree");
    let tree = tree.expect("exported");
    let text = tree.to_string();
    assert!(text.contains("\"label\""), "{text}");
    assert!(!text.contains("$ref") && !text.contains("$defs"), "{text}");
    let cut = &tree["parameters"]["properties"]["root"]["properties"]["children"]["items"];
    assert!(
        cut["description"]
            .as_str()
            .is_some_and(|d| d.contains("recursive")),
        "{cut}"
    );
    assert!(
        notes.iter().any(|n| n.contains("unrolled once")),
        "{notes:?}"
    );
}

#[test]
fn what_cannot_be_resolved_or_grows_too_large_is_left_out_everywhere() {
    let catalog = hostile();
    for format in ALL {
        for (tool, why) in [
            ("external_ref", "points outside the schema"),
            ("missing_ref", "points at nothing"),
            ("billion_laughs", "more than 20000 schema nodes"),
            ("false_but_required", "no arguments are valid"),
            ("invalid_keywords", "which JSON Schema does not allow"),
            ("conflicting_all_of", "no common type"),
        ] {
            let (definition, notes) = find(&catalog, format, tool);
            assert!(definition.is_none(), "{format:?} sent {tool}");
            assert!(
                notes
                    .iter()
                    .any(|n| n.contains("left out") && n.contains(why)),
                "{format:?} {tool}: {notes:?}"
            );
        }
        // Present before absent: the same export holds the fixture's well-formed tools.
        let (kept, _) = find(&catalog, format, "ref_defs");
        assert!(kept.is_some(), "{format:?}");
    }
}

#[test]
fn anthropic_takes_the_root_combinators_under_a_double_negation() {
    let catalog = hostile();
    let (union, notes) = find(&catalog, Format::Anthropic, "root_union");
    let schema = schema_of(&union.expect("exported")).clone();
    for key in ["anyOf", "oneOf", "allOf"] {
        assert!(schema.get(key).is_none(), "{schema}");
    }
    assert_eq!(schema["type"], "object");
    let branches = schema["not"]["not"]["oneOf"].as_array().expect("the forms");
    assert_eq!(branches.len(), 2);
    assert_eq!(branches[0]["required"], json!(["path"]));
    assert!(
        notes.iter().any(|n| n.contains("not: {not: …}")),
        "{notes:?}"
    );

    let (all_of, _) = find(&catalog, Format::Anthropic, "root_all_of");
    let schema = schema_of(&all_of.expect("exported")).clone();
    assert!(
        schema.get("allOf").is_none() && schema.get("not").is_none(),
        "{schema}"
    );
    assert_eq!(schema["properties"]["b"], json!({"type": "integer"}));
    assert_eq!(schema["required"], json!(["a"]));

    // Below the root, Anthropic keeps JSON Schema as it is.
    let (nested, _) = find(&catalog, Format::Anthropic, "combinators");
    let nested = nested.expect("exported");
    assert!(schema_of(&nested)["properties"]["one"]["oneOf"].is_array());
}

#[test]
fn a_root_union_becomes_one_object_with_the_forms_in_words_for_openai_and_gemini() {
    let catalog = hostile();
    for format in [Format::OpenAiChat, Format::OpenAiStrict, Format::Gemini] {
        let (union, notes) = find(&catalog, format, "root_union");
        let schema = schema_of(&union.expect("exported")).clone();
        assert!(schema.get("oneOf").is_none() && schema.get("anyOf").is_none());
        assert!(
            schema["properties"]["path"].is_object() && schema["properties"]["url"].is_object()
        );
        let description = schema["description"].as_str().expect("the forms in words");
        assert!(
            description.contains("(1) with path; (2) with url"),
            "{description}"
        );
        assert!(
            notes
                .iter()
                .any(|n| n.starts_with("mcp_") && n.contains("relaxed"))
        );
    }
}

#[test]
fn strict_exports_fit_strict_mode_and_say_what_they_left_out() {
    let catalog = hostile();
    let done = export_catalog(&catalog, Format::OpenAiStrict);
    let defs = definitions(&done, Format::OpenAiStrict);
    assert!(defs.len() >= 15, "{}", defs.len());
    for d in &defs {
        assert_eq!(d["function"]["strict"], true);
        openai::fits_strict(schema_of(d)).unwrap_or_else(|e| panic!("{}: {e}", name_of(d)));
    }
    // An optional property becomes required and nullable; an unsupported format is said.
    let (formats, _) = find(&catalog, Format::OpenAiStrict, "formats");
    let schema = schema_of(&formats.expect("exported")).clone();
    assert_eq!(
        schema["required"],
        json!(["blob", "id", "mail", "url", "when"])
    );
    assert_eq!(schema["properties"]["url"]["type"], "string");
    assert_eq!(
        schema["properties"]["mail"]["type"],
        json!(["string", "null"])
    );
    assert_eq!(schema["properties"]["mail"]["format"], "email");
    assert!(schema["properties"]["url"].get("format").is_none());
    assert!(
        schema["properties"]["url"]["description"]
            .as_str()
            .is_some_and(|d| d.contains("format \"uri\""))
    );

    // Free-form keys: an optional such property is left out, a required one sinks the tool.
    let (patterns, notes) = find(&catalog, Format::OpenAiStrict, "pattern_properties");
    let schema = schema_of(&patterns.expect("exported")).clone();
    assert_eq!(schema["required"], json!(["name"]));
    assert_eq!(
        notes
            .iter()
            .filter(|n| n.contains("narrowed: optional property"))
            .count(),
        2
    );
    for (tool, why) in [
        ("map_required", "keys it does not name"),
        ("huge_enum", "over strict mode's 15000"),
        ("deep_nesting", "deeper than strict mode's 10 levels"),
    ] {
        let (definition, notes) = find(&catalog, Format::OpenAiStrict, tool);
        assert!(definition.is_none(), "{tool}");
        assert!(
            notes
                .iter()
                .any(|n| n.contains("left out") && n.contains(why)),
            "{tool}: {notes:?}"
        );
        // Without strict mode the same tool is sent, marked non-strict with the reason.
        let (loose, notes) = find(&catalog, Format::OpenAiChat, tool);
        assert_eq!(loose.expect("sent")["function"]["strict"], false, "{tool}");
        assert!(
            notes.iter().any(|n| n.contains("not strict")),
            "{tool}: {notes:?}"
        );
    }
}

#[test]
fn strict_arguments_drop_the_nulls_strict_mode_added() {
    let parameters = json!({
        "type": "object",
        "properties": {
            "url": {"type": "string"},
            "blob": {"type": "string"},
            "maybe": {"type": ["string", "null"]},
            "nested": {"type": "object", "properties": {"x": {"type": "integer"}}},
        },
        "required": ["url"],
    });
    let mut args = json!({"url": "u", "blob": null, "maybe": null, "nested": {"x": null}});
    strict_arguments(&parameters, &mut args);
    assert_eq!(args, json!({"url": "u", "maybe": null, "nested": {}}));
}

/// The fields of google-genai's `Schema` that the export writes.
const FIELDS: &[&str] = &[
    "anyOf",
    "default",
    "description",
    "enum",
    "example",
    "format",
    "items",
    "maxItems",
    "maxLength",
    "maxProperties",
    "maximum",
    "minItems",
    "minLength",
    "minProperties",
    "minimum",
    "nullable",
    "pattern",
    "properties",
    "propertyOrdering",
    "required",
    "title",
    "type",
];

/// Every field of a Gemini schema is one its `Schema` has; types are upper case, enums strings.
fn gemini_walk(node: &Value, path: &str) {
    let Value::Object(map) = node else {
        panic!("{path} is not a schema: {node}");
    };
    for (key, value) in map {
        assert!(FIELDS.contains(&key.as_str()), "{path}: `{key}`");
        match key.as_str() {
            "properties" => {
                for (name, sub) in value.as_object().expect("map") {
                    gemini_walk(sub, &format!("{path}.{name}"));
                }
            }
            "items" => gemini_walk(value, &format!("{path}.items")),
            "anyOf" => {
                for sub in value.as_array().expect("list") {
                    gemini_walk(sub, &format!("{path}.anyOf"));
                }
            }
            "enum" => assert!(value.as_array().expect("list").iter().all(Value::is_string)),
            "type" => assert!(
                value
                    .as_str()
                    .is_some_and(|t| t.chars().all(|c| c.is_ascii_uppercase()))
            ),
            _ => {}
        }
    }
}

#[test]
fn gemini_schemas_use_only_the_fields_its_schema_has() {
    let catalog = hostile();
    let done = export_catalog(&catalog, Format::Gemini);
    let defs = definitions(&done, Format::Gemini);
    assert!(defs.len() >= 20, "{}", defs.len());
    for d in &defs {
        gemini_walk(&d["parameters"], name_of(d));
    }
    // Type lists: `null` becomes `nullable`, several types `anyOf`.
    let (arrays, _) = find(&catalog, Format::Gemini, "type_arrays");
    let props = arrays.expect("exported")["parameters"]["properties"].clone();
    assert_eq!(props["maybe"], json!({"type": "STRING", "nullable": true}));
    assert_eq!(
        props["num"]["anyOf"],
        json!([{"type": "INTEGER"}, {"type": "NUMBER"}])
    );
    assert_eq!(
        props["mixed"]["anyOf"][0]["properties"]["k"],
        json!({"type": "STRING"})
    );
    assert!(props["mixed"]["anyOf"][2].get("properties").is_none());
    // Values that are not strings are said in words.
    let (kinds, _) = find(&catalog, Format::Gemini, "value_kinds");
    let level = kinds.expect("exported")["parameters"]["properties"]["level"].clone();
    assert_eq!(level["type"], "INTEGER");
    assert!(
        level["description"]
            .as_str()
            .is_some_and(|d| d.contains("one of 1, 2, 3")),
        "{level}"
    );
}

#[test]
fn gemini_refuses_parameter_names_outside_its_rule() {
    let catalog = hostile();
    let (odd, notes) = find(&catalog, Format::Gemini, "ツール/read file.v2");
    let props = odd.expect("exported")["parameters"]["properties"].clone();
    let names: Vec<&String> = props.as_object().expect("map").keys().collect();
    assert_eq!(names, ["ok_name", "properties"]);
    assert_eq!(
        notes
            .iter()
            .filter(|n| n.contains("Gemini refuses its name"))
            .count(),
        3
    );
    let (required, notes) = find(&catalog, Format::Gemini, "odd_required_name");
    assert!(required.is_none());
    assert!(notes.iter().any(|n| n.contains("`file-path`")), "{notes:?}");
    // The other APIs take any property name.
    let (anthropic, _) = find(&catalog, Format::Anthropic, "odd_required_name");
    assert!(anthropic.is_some());
}

#[test]
fn boolean_schemas_and_missing_types() {
    let catalog = hostile();
    for format in ALL {
        let (booleans, _) = find(&catalog, format, "boolean_schemas");
        let schema = schema_of(&booleans.expect("exported")).clone();
        assert!(
            schema["properties"].get("never").is_none(),
            "{format:?}: {schema}"
        );
        assert!(!schema.to_string().contains("true"), "{format:?}: {schema}");
    }
    let (anthropic, _) = find(&catalog, Format::Anthropic, "boolean_schemas");
    assert_eq!(
        schema_of(&anthropic.expect("exported"))["properties"]["anything"],
        json!({})
    );
    let (strict, notes) = find(&catalog, Format::OpenAiStrict, "missing_type");
    let schema = schema_of(&strict.expect("exported")).clone();
    assert_eq!(
        schema["properties"]["choice"]["enum"],
        json!(["x", "y", null])
    );
    assert_eq!(
        schema["properties"]["implicit_object"]["anyOf"][0]["type"],
        "object"
    );
    assert!(
        notes.iter().any(|n| n.contains("`any` left out")),
        "{notes:?}"
    );
}

#[test]
fn a_non_object_root_or_a_bad_name_is_never_sent() {
    let root = one(json!({"type": "string"}));
    let mut bad_name = one(json!({"type": "object"}));
    bad_name.name = "has space".into();
    let fine = one(json!({"type": "object"}));
    for format in ALL {
        let done = export(
            [
                ModelTool::Tool(&root),
                ModelTool::Tool(&bad_name),
                ModelTool::Tool(&fine),
            ],
            format,
        );
        assert_eq!(definitions(&done, format).len(), 1, "{format:?}");
        let left: Vec<&str> = done
            .diagnostics
            .iter()
            .filter(|d| d.message.contains("): left out: "))
            .map(|d| d.message.as_str())
            .collect();
        assert_eq!(left.len(), 2, "{format:?}: {left:?}");
    }
}

#[test]
fn the_serena_tools_are_exported_whole() {
    let catalog = fixture("gateway/serena-tools.json");
    assert!(catalog.len() > 10);
    for format in ALL {
        let done = export_catalog(&catalog, format);
        assert_eq!(
            definitions(&done, format).len(),
            catalog.len(),
            "{format:?}"
        );
        assert!(
            done.diagnostics
                .iter()
                .all(|d| !d.message.contains("): left out: ")),
            "{format:?}: {:?}",
            done.diagnostics
        );
    }
}

#[test]
fn resource_and_prompt_operations_are_exported_with_the_tools() {
    let capabilities: mcp_protocol::schema::ServerCapabilities =
        serde_json::from_value(json!({"tools": {}, "resources": {}, "prompts": {}}))
            .expect("capabilities");
    let operations = crate::operation::server_operations("srv", &capabilities, true, true);
    assert_eq!(operations.len(), 5);
    let (tools, _) = adapt_server_tools(
        "srv",
        serde_json::from_value(json!([{"name": "t", "inputSchema": {"type": "object"}}]))
            .expect("tools"),
        &ToolFilter::default(),
        &CatalogLimits::default(),
    );
    let catalog = Catalog::build_with_operations(
        BTreeMap::from([("srv".to_owned(), tools)]),
        BTreeMap::from([("srv".to_owned(), operations)]),
    );
    for format in ALL {
        let done = export_catalog(&catalog, format);
        let names: Vec<String> = definitions(&done, format)
            .iter()
            .map(|d| name_of(d).to_owned())
            .collect();
        let expected: Vec<String> = catalog.model_tools().map(|t| t.name().to_owned()).collect();
        assert_eq!(names, expected, "{format:?}: {:?}", done.diagnostics);
        assert!(
            names.iter().any(|n| n.contains("read_resource")),
            "{names:?}"
        );
    }
}

#[test]
fn a_chain_of_references_too_deep_to_walk_is_left_out() {
    let mut defs = Map::new();
    defs.insert("d0".into(), json!({"type": "string"}));
    for i in 1..2_000 {
        let prior = format!("#/$defs/d{}", i - 1);
        defs.insert(
            format!("d{i}"),
            json!({"type": "object", "properties": {"x": {"$ref": prior}}}),
        );
    }
    let deep = one(json!({
        "type": "object",
        "properties": {"x": {"$ref": "#/$defs/d1999"}},
        "$defs": defs,
    }));
    // 60 links nest 120 levels: under the limit, and walked by every format on a test
    // thread's stack.
    let shallow = one(json!({
        "type": "object",
        "properties": {"x": {"$ref": "#/$defs/d60"}},
        "$defs": (0..=60)
            .map(|i| (format!("d{i}"), defs[&format!("d{i}")].clone()))
            .collect::<Map<_, _>>(),
    }));
    for format in ALL {
        let done = export([ModelTool::Tool(&shallow), ModelTool::Tool(&deep)], format);
        // Strict mode takes 10 levels of objects, not 120.
        let expected = usize::from(format != Format::OpenAiStrict);
        assert_eq!(definitions(&done, format).len(), expected, "{format:?}");
        assert!(
            done.diagnostics
                .iter()
                .any(|d| d.message.contains("left out")
                    && d.message.contains("nests deeper than 128")),
            "{format:?}: {:?}",
            done.diagnostics
        );
    }
}

#[test]
fn draft_4_exclusive_bounds_are_written_as_2020_12_numbers() {
    let catalog = hostile();
    let (anthropic, _) = find(&catalog, Format::Anthropic, "draft4_bounds");
    let ratio = schema_of(&anthropic.expect("exported"))["properties"]["ratio"].clone();
    assert_eq!(
        ratio,
        json!({"type": "number", "exclusiveMinimum": 0, "maximum": 1})
    );
    let (gemini, _) = find(&catalog, Format::Gemini, "draft4_bounds");
    let ratio = gemini.expect("exported")["parameters"]["properties"]["ratio"].clone();
    assert_eq!(ratio["maximum"], 1);
    assert!(ratio.get("minimum").is_none(), "{ratio}");
    assert!(
        ratio["description"]
            .as_str()
            .is_some_and(|d| d.contains("exclusiveMinimum 0")),
        "{ratio}"
    );
}

mod proptests {
    use proptest::prelude::*;

    use super::*;

    /// Property names, odd ones among them.
    fn name() -> impl Strategy<Value = String> {
        prop_oneof![
            "[a-z]{1,6}",
            Just("file-path".to_owned()),
            Just("$ref".to_owned()),
            Just("properties".to_owned()),
            Just("with space".to_owned()),
        ]
    }

    fn leaf() -> impl Strategy<Value = Value> {
        let types = prop_oneof![
            Just("string"),
            Just("integer"),
            Just("number"),
            Just("boolean"),
            Just("null"),
            Just("object"),
            Just("array"),
        ];
        // Schemas no API can take are rarer, so that most trees are sent and checked.
        prop_oneof![
            4 => Just(json!({})),
            2 => Just(json!(true)),
            1 => Just(json!(false)),
            12 => types.prop_map(|t| json!({ "type": t })),
            3 => Just(json!({"type": ["string", "null"]})),
            3 => Just(json!({"type": "string", "format": "uri", "minLength": 1, "pattern": "^a"})),
            2 => Just(json!({"type": "number", "exclusiveMinimum": true, "minimum": 0})),
            2 => Just(json!({"enum": ["a", 1, null]})),
            2 => Just(json!({"const": 3})),
            2 => Just(json!({"$ref": "#/$defs/a"})),
            1 => Just(json!({"$ref": "#"})),
            1 => Just(json!({"type": "file"})),
            1 => Just(json!({"$ref": "#/$defs/missing"})),
        ]
    }

    fn schema() -> impl Strategy<Value = Value> {
        leaf().prop_recursive(5, 48, 4, |inner| {
            prop_oneof![
                (
                    prop::collection::btree_map(name(), inner.clone(), 0..4),
                    prop::collection::vec(name(), 0..3),
                    prop_oneof![
                        Just(None),
                        Just(Some(json!(false))),
                        inner.clone().prop_map(Some)
                    ],
                )
                    .prop_map(|(props, required, extra)| {
                        let mut map = Map::new();
                        map.insert("type".into(), json!("object"));
                        map.insert(
                            "properties".into(),
                            Value::Object(props.into_iter().collect()),
                        );
                        map.insert("required".into(), json!(required));
                        if let Some(extra) = extra {
                            map.insert("additionalProperties".into(), extra);
                        }
                        Value::Object(map)
                    }),
                inner
                    .clone()
                    .prop_map(|items| json!({"type": "array", "items": items})),
                prop::collection::vec(inner.clone(), 1..4).prop_map(|l| json!({ "anyOf": l })),
                prop::collection::vec(inner.clone(), 1..4).prop_map(|l| json!({ "oneOf": l })),
                prop::collection::vec(inner.clone(), 1..3).prop_map(|l| json!({ "allOf": l })),
                inner
                    .clone()
                    .prop_map(|n| json!({"type": "string", "not": n})),
                prop::collection::vec(inner.clone(), 1..3)
                    .prop_map(|l| json!({"type": "array", "prefixItems": l})),
                inner.prop_map(|p| json!({"type": "object", "patternProperties": {"^x": p}})),
            ]
        })
    }

    fn root() -> impl Strategy<Value = Value> {
        (
            schema(),
            schema(),
            prop::collection::btree_map(name(), schema(), 0..4),
        )
            .prop_map(|(body, def, props)| {
                let mut root = match body {
                    Value::Object(map) => map,
                    _ => Map::new(),
                };
                root.insert("type".into(), json!("object"));
                if !props.is_empty() {
                    root.insert(
                        "properties".into(),
                        Value::Object(props.into_iter().collect()),
                    );
                }
                root.insert("$defs".into(), json!({ "a": def }));
                Value::Object(root)
            })
    }

    /// Every array in a non-strict OpenAI schema has `items`.
    fn arrays_have_items(node: &Value) -> bool {
        match node {
            Value::Object(map) => {
                let array = schema::types_of(map).is_some_and(|t| t.iter().any(|t| t == "array"));
                (!array || map.contains_key("items")) && map.values().all(arrays_have_items)
            }
            Value::Array(list) => list.iter().all(arrays_have_items),
            _ => true,
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// Whatever the schema, each format sends a definition its API takes or names the
        /// tool left out; never both, never neither, never a panic.
        #[test]
        fn every_schema_is_sent_well_formed_or_left_out(parameters in root()) {
            let tool = one(parameters);
            for format in ALL {
                let done = export([ModelTool::Tool(&tool)], format);
                let sent = definitions(&done, format);
                let left = done.diagnostics.iter().filter(|d| d.message.contains("): left out: ")).count();
                prop_assert_eq!(sent.len() + left, 1, "{:?}: {:?}", format, done.diagnostics);
                let Some(definition) = sent.first() else { continue };
                let schema = schema_of(definition);
                match format {
                    Format::Anthropic => {
                        prop_assert_eq!(&schema["type"], "object");
                        for key in ["anyOf", "oneOf", "allOf"] {
                            prop_assert!(schema.get(key).is_none(), "{}", schema);
                        }
                        prop_assert!(schema::check_shapes(schema, &mut schema::Path::default()).is_ok(), "{}", schema);
                    }
                    Format::OpenAiChat | Format::OpenAiResponses => {
                        prop_assert_eq!(&schema["type"], "object");
                        for key in ["anyOf", "oneOf", "allOf", "enum", "not"] {
                            prop_assert!(schema.get(key).is_none(), "{}", schema);
                        }
                        prop_assert!(arrays_have_items(schema), "{}", schema);
                        prop_assert!(schema::check_shapes(schema, &mut schema::Path::default()).is_ok(), "{}", schema);
                    }
                    Format::OpenAiStrict => {
                        prop_assert!(openai::fits_strict(schema).is_ok(), "{:?} {}", openai::fits_strict(schema), schema);
                    }
                    Format::Gemini => {
                        prop_assert_eq!(&schema["type"], "OBJECT");
                        gemini_walk(schema, "parameters");
                    }
                }
            }
        }
    }
}
