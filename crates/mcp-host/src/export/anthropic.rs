//! The Anthropic Messages API's `tools`: `{name, description, input_schema}`.
//!
//! The API takes JSON Schema draft 2020-12 with `type: "object"` at the root, and refuses a
//! root with `oneOf`, `allOf` or `anyOf` (`input_schema does not support oneOf, allOf, or
//! anyOf at the top level`). Below the root everything is kept; references are inlined (a
//! cycle is kept as a `$defs` entry) so the schema stands alone.

use serde_json::{Map, Value, json};

use super::schema::{self, Cycles, Path};

/// The root keywords the API refuses.
const ROOT_COMBINATORS: &[&str] = &["anyOf", "oneOf", "allOf"];

/// One tool, or why it cannot be sent.
pub(super) fn tool(tool: &super::Tool<'_>, notes: &mut Vec<String>) -> Result<Value, String> {
    let inlined = schema::inline_refs(tool.parameters, Cycles::Defs)?;
    let cleaned = schema::objects_for_booleans(inlined, &mut Path::default())?;
    schema::check_shapes(&cleaned, &mut Path::default())?;
    schema::check_all_of_satisfiable(&cleaned, &mut Path::default())?;
    let Value::Object(mut root) = cleaned else {
        return Err("the input schema is not an object schema".into());
    };
    match schema::types_of(&root) {
        None => {
            root.insert("type".into(), json!("object"));
        }
        Some(types) if types == ["object"] => {}
        Some(_) => return Err("the input schema's root is not `type: \"object\"`".into()),
    }
    let root = root_without_combinators(root, notes)?;
    Ok(json!({
        "name": tool.name,
        "description": tool.description,
        "input_schema": root,
    }))
}

/// The root's `allOf` merged into it where one schema can say it; any combinator left is
/// moved under a double negation (`not: {not: …}` holds exactly when `…` holds), which the
/// API takes at the root and which keeps the meaning whole.
fn root_without_combinators(
    root: Map<String, Value>,
    notes: &mut Vec<String>,
) -> Result<Map<String, Value>, String> {
    let mut root = if root.contains_key("allOf") {
        match schema::merge_all_of(root.clone()) {
            Ok(merged) => merged,
            Err(_) => root,
        }
    } else {
        root
    };
    // A merge may have put the branches' `type` beside the root's.
    if let Some(types) = schema::types_of(&root)
        && !types.iter().any(|t| t == "object")
    {
        return Err("the input schema's root allows no object".into());
    }
    root.insert("type".into(), json!("object"));
    let mut inner = Map::new();
    for key in ROOT_COMBINATORS {
        if let Some(value) = root.remove(*key) {
            inner.insert((*key).to_owned(), value);
        }
    }
    if inner.is_empty() {
        return Ok(root);
    }
    let keys: Vec<&str> = inner.keys().map(String::as_str).collect();
    notes.push(format!(
        "rewritten: the root's `{}` moved under `not: {{not: …}}`, which means the same and is taken at the root",
        keys.join("`, `")
    ));
    let negated = json!({ "not": Value::Object(inner) });
    let not = match root.remove("not") {
        // Both must hold: not (not C or N).
        Some(existing) => json!({ "anyOf": [negated, existing] }),
        None => negated,
    };
    root.insert("not".into(), not);
    Ok(root)
}
