//! The OpenAI Chat Completions (`{"type": "function", "function": {…}}`) and Responses
//! (`{"type": "function", name, description, parameters, strict}`) function tools.
//!
//! Without strict mode the API takes most of JSON Schema but refuses a root that is not
//! `type: "object"` or that has `oneOf`, `anyOf`, `allOf`, `enum` or `not` at the top level,
//! an array schema without `items`, and `allOf` where it appears. Strict mode takes a subset
//! (Structured Outputs' supported schemas): every object closed with
//! `additionalProperties: false` and every property required; the keywords in [`STRICT_KEYS`];
//! at most 5,000 properties, 10 levels of objects, 1,000 enum values, and 120,000 characters
//! of names and values.

use serde_json::{Map, Value, json};

use super::schema::{self, Cycles, Path, describe, phrase, types_of};

/// Which OpenAI API the definition is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Api {
    Chat,
    Responses,
}

/// Keywords strict mode takes on a typed node.
const STRICT_KEYS: &[&str] = &[
    "type",
    "description",
    "title",
    "enum",
    "const",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "anyOf",
    "pattern",
    "format",
    "multipleOf",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "minItems",
    "maxItems",
    "$ref",
    "$defs",
];

/// The string formats strict mode takes.
const STRICT_FORMATS: &[&str] = &[
    "date-time",
    "time",
    "date",
    "duration",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "uuid",
];

/// Strict mode's published limits.
const MAX_PROPERTIES: usize = 5_000;
const MAX_OBJECT_DEPTH: usize = 10;
const MAX_ENUM_VALUES: usize = 1_000;
const MAX_TEXT: usize = 120_000;
const LONG_ENUM: usize = 250;
const LONG_ENUM_TEXT: usize = 15_000;

/// A tool for [`Api`], strict when its schema already fits strict mode.
pub(super) fn tool(
    tool: &super::Tool<'_>,
    api: Api,
    notes: &mut Vec<String>,
) -> Result<Value, String> {
    let parameters = loose_schema(tool.parameters, notes)?;
    let strict = match fits_strict(&parameters) {
        Ok(()) => true,
        Err(why) => {
            notes.push(format!("not strict: {why}"));
            false
        }
    };
    Ok(envelope(tool, api, parameters, strict))
}

/// A Chat Completions tool rewritten to fit strict mode.
pub(super) fn strict_tool(
    tool: &super::Tool<'_>,
    notes: &mut Vec<String>,
) -> Result<Value, String> {
    let parameters = strict_schema(tool.parameters, notes)?;
    // What the rewrite made must pass the same check the API applies; if it does not, the
    // rewrite has a gap and the tool is left out rather than sent broken.
    fits_strict(&parameters).map_err(|why| format!("strict mode cannot say it: {why}"))?;
    Ok(envelope(tool, Api::Chat, parameters, true))
}

fn envelope(tool: &super::Tool<'_>, api: Api, parameters: Value, strict: bool) -> Value {
    match api {
        Api::Chat => json!({
            "type": "function",
            "function": {
                "name": tool.name,
                "description": tool.description,
                "parameters": parameters,
                "strict": strict,
            }
        }),
        Api::Responses => json!({
            "type": "function",
            "name": tool.name,
            "description": tool.description,
            "parameters": parameters,
            "strict": strict,
        }),
    }
}

// ---- Without strict mode --------------------------------------------------------------------

fn loose_schema(parameters: &Value, notes: &mut Vec<String>) -> Result<Value, String> {
    let inlined = schema::inline_refs(parameters, Cycles::Defs)?;
    let cleaned = schema::objects_for_booleans(inlined, &mut Path::default())?;
    schema::check_shapes(&cleaned, &mut Path::default())?;
    let Value::Object(root) = cleaned else {
        return Err("the input schema is not an object schema".into());
    };
    let root = schema::merge_all_of(root)?;
    if root.contains_key("enum") {
        return Err("the root has `enum`, which OpenAI refuses at the top level".into());
    }
    let mut root = super::relax_root_union(root, notes)?;
    if let Some(not) = root.remove("not") {
        describe(&mut root, &phrase("not", &not));
        notes.push(
            "relaxed: the root's `not` is refused there; it is said in the description".into(),
        );
    }
    match types_of(&root) {
        None => {
            root.insert("type".into(), json!("object"));
        }
        Some(types) if types.iter().any(|t| t == "object") => {
            root.insert("type".into(), json!("object"));
        }
        Some(_) => return Err("the input schema's root is not `type: \"object\"`".into()),
    }
    let mut path = Path::default();
    loose_node(Value::Object(root), &mut path)
}

/// Below the root: `allOf` merged (refused where it cannot be), `items` given to every array.
fn loose_node(node: Value, path: &mut Path) -> Result<Value, String> {
    let Value::Object(map) = node else {
        return Ok(node);
    };
    let mut map = schema::merge_all_of(map).map_err(|e| format!("at {}: {e}", path.show()))?;
    if let Some(Value::Array(list)) = map.get("items") {
        let list = list.clone();
        describe(
            &mut map,
            &phrase("items by position", &Value::Array(list.clone())),
        );
        map.insert("items".into(), schema::tuple_items(list));
    }
    let is_array = types_of(&map).is_some_and(|t| t.iter().any(|t| t == "array"));
    if is_array {
        let (items, note) = schema::array_items(&mut map).unwrap_or((json!({}), None));
        if let Some(note) = note {
            describe(&mut map, &note);
        }
        map.insert("items".into(), items);
    }
    let mut error = None;
    schema::for_each_subschema(&mut map, |key, sub| {
        match path.with(key, |path| loose_node(sub.take(), path)) {
            Ok(v) => *sub = v,
            Err(e) => error = Some(e),
        }
        Ok(())
    })?;
    match error {
        Some(e) => Err(e),
        None => Ok(Value::Object(map)),
    }
}

// ---- Strict mode ----------------------------------------------------------------------------

fn strict_schema(parameters: &Value, notes: &mut Vec<String>) -> Result<Value, String> {
    let inlined = schema::inline_refs(parameters, Cycles::Defs)?;
    let cleaned = schema::objects_for_booleans(inlined, &mut Path::default())?;
    schema::check_shapes(&cleaned, &mut Path::default())?;
    let Value::Object(mut root) = cleaned else {
        return Err("the input schema is not an object schema".into());
    };
    let defs = root.remove("$defs");
    let root = schema::merge_all_of(root)?;
    if root.contains_key("enum") {
        return Err("the root has `enum`, which OpenAI refuses at the top level".into());
    }
    let mut root = super::relax_root_union(root, notes)?;
    if types_of(&root).is_none() {
        root.insert("type".into(), json!("object"));
    }
    // At the root, an object that declares no properties takes no arguments.
    if !root.contains_key("properties") && !root.contains_key("additionalProperties") {
        root.insert("properties".into(), json!({}));
    }
    let mut strict = Strict {
        notes,
        path: Path::default(),
    };
    let mut out = strict.node(Value::Object(root))?;
    if let (Some(Value::Object(defs)), Value::Object(out)) = (defs, &mut out) {
        let mut done = Map::new();
        for (name, body) in defs {
            let body = strict.child(&format!("$defs.{name}"), body)?;
            done.insert(name, body);
        }
        out.insert("$defs".into(), Value::Object(done));
    }
    if types_of(out.as_object().unwrap_or(&Map::new())) != Some(vec!["object".to_owned()]) {
        return Err("the input schema's root is not `type: \"object\"`".into());
    }
    Ok(out)
}

struct Strict<'a> {
    notes: &'a mut Vec<String>,
    path: Path,
}

impl Strict<'_> {
    /// `node`, found at `segment` below the current node.
    fn child(&mut self, segment: &str, node: Value) -> Result<Value, String> {
        self.path.push(segment);
        let out = self.node(node);
        self.path.pop();
        out
    }

    /// One node in strict mode's subset, or why it cannot be.
    fn node(&mut self, node: Value) -> Result<Value, String> {
        let Value::Object(map) = node else {
            return Err(format!("{} is not a schema", self.path.show()));
        };
        if map.contains_key("$ref") {
            // A cycle kept as a definition: strict mode takes `$ref` alone.
            let reference = map.get("$ref").cloned().unwrap_or(Value::Null);
            return Ok(json!({ "$ref": reference }));
        }
        let mut map =
            schema::merge_all_of(map).map_err(|e| format!("at {}: {e}", self.path.show()))?;
        if let Some(one_of) = map.remove("oneOf") {
            if !map.contains_key("anyOf") {
                map.insert("anyOf".into(), one_of);
                self.notes.push(format!(
                    "relaxed: `oneOf` at {} became `anyOf` (strict mode has no oneOf)",
                    self.path.show()
                ));
            } else {
                return Err(format!("{} has both oneOf and anyOf", self.path.show()));
            }
        }
        if map.contains_key("anyOf") {
            return self.union(map);
        }
        let types = match types_of(&map) {
            Some(t) if !t.is_empty() => t,
            Some(_) => return Err(format!("{} has a malformed `type`", self.path.show())),
            None => infer_types(&map).ok_or_else(|| {
                format!(
                    "{} accepts any value, which strict mode cannot say",
                    self.path.show()
                )
            })?,
        };
        let compound: Vec<&String> = types
            .iter()
            .filter(|t| *t == "object" || *t == "array")
            .collect();
        if types.len() > 1 && !compound.is_empty() {
            // `type: ["object", "string"]`: one branch per type, each with its own keywords.
            let mut branches = Vec::new();
            for t in &types {
                let mut branch = schema::for_type(map.clone(), t);
                branch.remove("description");
                if branch.get("enum").is_some_and(|e| e == &json!([])) {
                    continue;
                }
                branches.push(Value::Object(branch));
            }
            let mut union = Map::new();
            if let Some(d) = map.get("description") {
                union.insert("description".into(), d.clone());
            }
            union.insert("anyOf".into(), Value::Array(branches));
            return self.union(union);
        }
        schema::drop_foreign_keywords(&mut map, &types);
        self.typed(map, &types)
    }

    /// `anyOf`: each branch in strict mode (a branch that cannot be is left out, if any stays);
    /// the node's other constraints go into every branch.
    fn union(&mut self, mut map: Map<String, Value>) -> Result<Value, String> {
        let Some(Value::Array(branches)) = map.remove("anyOf") else {
            return Err(format!("{} has a malformed anyOf", self.path.show()));
        };
        let description = map.remove("description");
        let title = map.remove("title");
        let mut kept = Vec::new();
        let mut dropped = Vec::new();
        for (i, branch) in branches.into_iter().enumerate() {
            let branch = match branch {
                Value::Object(mut b) if !map.is_empty() => {
                    // The node's own constraints hold in every branch.
                    let siblings = Value::Object(map.clone());
                    let own = Value::Object(std::mem::take(&mut b));
                    let mut both = Map::new();
                    both.insert("allOf".into(), json!([siblings, own]));
                    Value::Object(both)
                }
                other => other,
            };
            match self.child(&format!("anyOf.{i}"), branch) {
                Ok(b) => kept.push(b),
                Err(e) => dropped.push(e),
            }
        }
        if kept.is_empty() {
            return Err(dropped
                .into_iter()
                .next()
                .unwrap_or_else(|| format!("{} has an empty anyOf", self.path.show())));
        }
        for e in dropped {
            self.notes
                .push(format!("narrowed: an anyOf branch was left out: {e}"));
        }
        let mut out = Map::new();
        if let Some(d) = description {
            out.insert("description".into(), d);
        }
        if let Some(t) = title {
            out.insert("title".into(), t);
        }
        if kept.len() == 1 {
            let Some(Value::Object(only)) = kept.pop() else {
                return Err(format!("{} has a malformed anyOf", self.path.show()));
            };
            if only.contains_key("$ref") {
                out.insert("anyOf".into(), json!([only]));
                return Ok(Value::Object(out));
            }
            for (k, v) in only {
                match (k.as_str(), out.get_mut("description")) {
                    ("description", Some(Value::String(d))) => {
                        if let Value::String(v) = v {
                            d.push(' ');
                            d.push_str(&v);
                        }
                    }
                    _ => {
                        out.insert(k, v);
                    }
                }
            }
            return Ok(Value::Object(out));
        }
        out.insert("anyOf".into(), Value::Array(kept));
        Ok(Value::Object(out))
    }

    fn typed(&mut self, mut map: Map<String, Value>, types: &[String]) -> Result<Value, String> {
        let mut out = Map::new();
        let mut said = Vec::new();
        let t = types.first().map(String::as_str).unwrap_or("");
        if types.len() == 1 {
            out.insert("type".into(), json!(t));
        } else {
            out.insert("type".into(), json!(types));
        }
        for key in ["description", "title", "enum", "const"] {
            if let Some(v) = map.remove(key) {
                out.insert(key.into(), v);
            }
        }
        if t == "object" && types.len() == 1 {
            self.object(&mut map, &mut out)?;
        }
        if t == "array" && types.len() == 1 {
            let Some((items, note)) = schema::array_items(&mut map) else {
                return Err(format!(
                    "{} is an array of any values, which strict mode cannot say",
                    self.path.show()
                ));
            };
            said.extend(note);
            let items = self.child("items", items)?;
            out.insert("items".into(), items);
            for key in ["minItems", "maxItems"] {
                if let Some(v) = map.remove(key) {
                    out.insert(key.into(), v);
                }
            }
        }
        if types.iter().any(|t| t == "string") {
            if let Some(p) = map.remove("pattern") {
                out.insert("pattern".into(), p);
            }
            if let Some(f) = map.remove("format") {
                if f.as_str().is_some_and(|f| STRICT_FORMATS.contains(&f)) {
                    out.insert("format".into(), f);
                } else {
                    said.push(phrase("format", &f));
                }
            }
        }
        if types.iter().any(|t| t == "number" || t == "integer") {
            for key in [
                "multipleOf",
                "minimum",
                "maximum",
                "exclusiveMinimum",
                "exclusiveMaximum",
            ] {
                if let Some(v) = map.remove(key) {
                    out.insert(key.into(), v);
                }
            }
        }
        // What is left, strict mode does not take: said in the description instead.
        for (key, value) in map {
            if key == "type" || key == "examples" || key.starts_with("x-") || key == "$comment" {
                continue;
            }
            said.push(phrase(&key, &value));
        }
        if !said.is_empty() {
            describe(&mut out, &said.join("; "));
        }
        Ok(Value::Object(out))
    }

    /// An object closed and with every property required: an optional property becomes
    /// nullable (null meaning "left out"); one strict mode cannot say is left out if it was
    /// optional, and sinks the object if it was required.
    fn object(
        &mut self,
        map: &mut Map<String, Value>,
        out: &mut Map<String, Value>,
    ) -> Result<(), String> {
        let required: Vec<String> = match map.remove("required") {
            Some(Value::Array(r)) => r
                .iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect(),
            _ => Vec::new(),
        };
        let properties = match map.remove("properties") {
            Some(Value::Object(p)) => Some(p),
            _ => None,
        };
        let extra = map.remove("additionalProperties");
        let pattern = map.remove("patternProperties");
        let open = match (&extra, &pattern, &properties) {
            (Some(Value::Bool(false)), None, _) => false,
            (None, None, Some(_)) => false,
            (Some(Value::Object(e)), None, Some(_)) if e.is_empty() => false,
            (Some(Value::Bool(true)), None, Some(_)) => false,
            _ => true,
        };
        if open {
            return Err(format!(
                "{} takes keys it does not name (additionalProperties or patternProperties), which strict mode cannot say",
                self.path.show()
            ));
        }
        let mut done = Map::new();
        let mut names = Vec::new();
        for (name, schema) in properties.unwrap_or_default() {
            let is_required = required.contains(&name);
            let result = self.child(&format!("properties.{name}"), schema);
            match result {
                Ok(schema) => {
                    let schema = if is_required {
                        schema
                    } else {
                        nullable(schema)
                    };
                    names.push(Value::String(name.clone()));
                    done.insert(name, schema);
                }
                Err(e) if !is_required => {
                    self.notes.push(format!(
                        "narrowed: optional property `{}` left out: {e}",
                        schema::short(&name)
                    ));
                }
                Err(e) => return Err(e),
            }
        }
        for name in &required {
            if !done.contains_key(name) {
                return Err(format!(
                    "{} requires `{}`, which it does not describe",
                    self.path.show(),
                    schema::short(name)
                ));
            }
        }
        out.insert("properties".into(), Value::Object(done));
        out.insert("required".into(), Value::Array(names));
        out.insert("additionalProperties".into(), json!(false));
        Ok(())
    }
}

/// The types a node without `type` can only have, from its other keywords.
fn infer_types(map: &Map<String, Value>) -> Option<Vec<String>> {
    if map.contains_key("properties") || map.contains_key("required") {
        return Some(vec!["object".into()]);
    }
    if map.contains_key("items") || map.contains_key("prefixItems") {
        return Some(vec!["array".into()]);
    }
    let values: Vec<&Value> = match (map.get("enum"), map.get("const")) {
        (Some(Value::Array(list)), _) => list.iter().collect(),
        (_, Some(c)) => vec![c],
        _ => return None,
    };
    let mut types: Vec<String> = Vec::new();
    for v in values {
        let t = match v {
            Value::String(_) => "string",
            Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
            Value::Number(_) => "number",
            Value::Bool(_) => "boolean",
            Value::Null => "null",
            _ => return None,
        };
        if !types.iter().any(|x| x == t) {
            types.push(t.into());
        }
    }
    if types.iter().any(|t| t == "integer") && types.iter().any(|t| t == "number") {
        types.retain(|t| t != "integer");
    }
    (!types.is_empty()).then_some(types)
}

/// `schema` that also takes `null`.
fn nullable(schema: Value) -> Value {
    let Value::Object(mut map) = schema else {
        return schema;
    };
    let compound = types_of(&map).is_some_and(|t| t.iter().any(|t| t == "object" || t == "array"));
    if map.contains_key("$ref") || map.contains_key("const") || compound {
        return json!({ "anyOf": [Value::Object(map), { "type": "null" }] });
    }
    if let Some(Value::Array(branches)) = map.get_mut("anyOf") {
        if !branches
            .iter()
            .any(|b| b.get("type") == Some(&json!("null")))
        {
            branches.push(json!({ "type": "null" }));
        }
        return Value::Object(map);
    }
    match map.get_mut("type") {
        Some(Value::String(t)) if t != "null" => {
            let t = t.clone();
            map.insert("type".into(), json!([t, "null"]));
        }
        Some(Value::Array(list)) if !list.contains(&json!("null")) => list.push(json!("null")),
        _ => {}
    }
    if let Some(Value::Array(values)) = map.get_mut("enum")
        && !values.contains(&Value::Null)
    {
        values.push(Value::Null);
    }
    Value::Object(map)
}

// ---- The check ------------------------------------------------------------------------------

/// Whether `schema` fits strict mode as it stands; if not, the first reason.
pub(super) fn fits_strict(schema: &Value) -> Result<(), String> {
    let Value::Object(root) = schema else {
        return Err("the schema is not an object".into());
    };
    if root.get("type") != Some(&json!("object")) {
        return Err("the root is not `type: \"object\"`".into());
    }
    if root.contains_key("anyOf") {
        return Err("the root has anyOf".into());
    }
    let mut tally = Tally::default();
    if let Some(Value::Object(defs)) = root.get("$defs") {
        for (name, body) in defs {
            tally.text += name.len();
            check_node(body, &mut Path::default(), 0, &mut tally)?;
        }
    }
    check_node(schema, &mut Path::default(), 0, &mut tally)?;
    if tally.properties > MAX_PROPERTIES {
        return Err(format!(
            "{} properties, over strict mode's {MAX_PROPERTIES}",
            tally.properties
        ));
    }
    if tally.enum_values > MAX_ENUM_VALUES {
        return Err(format!(
            "{} enum values, over strict mode's {MAX_ENUM_VALUES}",
            tally.enum_values
        ));
    }
    if tally.text > MAX_TEXT {
        return Err(format!(
            "{} characters of names and values, over strict mode's {MAX_TEXT}",
            tally.text
        ));
    }
    Ok(())
}

#[derive(Default)]
struct Tally {
    properties: usize,
    enum_values: usize,
    text: usize,
}

fn check_node(
    node: &Value,
    path: &mut Path,
    depth: usize,
    tally: &mut Tally,
) -> Result<(), String> {
    let Value::Object(map) = node else {
        return Err(format!("{} is not an object schema", path.show()));
    };
    for key in map.keys() {
        if !STRICT_KEYS.contains(&key.as_str()) {
            return Err(format!(
                "`{}` at {} is not supported",
                schema::short(key),
                path.show()
            ));
        }
    }
    if map.contains_key("$ref") {
        if map.len() > 1 {
            return Err(format!("{} has keywords beside $ref", path.show()));
        }
        return Ok(());
    }
    if let Some(Value::Array(values)) = map.get("enum") {
        tally.enum_values += values.len();
        let text: usize = values.iter().filter_map(Value::as_str).map(str::len).sum();
        tally.text += text;
        if values.len() > LONG_ENUM && text > LONG_ENUM_TEXT {
            return Err(format!(
                "the enum at {} has {} values of {text} characters, over strict mode's {LONG_ENUM_TEXT}",
                path.show(),
                values.len()
            ));
        }
    }
    if let Some(Value::String(c)) = map.get("const") {
        tally.text += c.len();
    }
    if let Some(Value::Array(branches)) = map.get("anyOf") {
        for (i, b) in branches.iter().enumerate() {
            path.with(&format!("anyOf.{i}"), |path| {
                check_node(b, path, depth, tally)
            })?;
        }
        return Ok(());
    }
    let Some(types) = types_of(map) else {
        if map.contains_key("enum") || map.contains_key("const") {
            return Ok(());
        }
        return Err(format!("{} has no type", path.show()));
    };
    if types.iter().any(|t| t == "object") {
        if depth + 1 > MAX_OBJECT_DEPTH {
            return Err(format!(
                "objects nest deeper than strict mode's {MAX_OBJECT_DEPTH} levels at {}",
                path.show()
            ));
        }
        if !map.contains_key("properties") || !map.contains_key("required") {
            return Err(format!(
                "the object at {} does not list its properties and required ones",
                path.show()
            ));
        }
        if map.get("additionalProperties") != Some(&json!(false)) {
            return Err(format!(
                "the object at {} does not set additionalProperties: false",
                path.show()
            ));
        }
        let empty = Map::new();
        let properties = match map.get("properties") {
            Some(Value::Object(p)) => p,
            _ => &empty,
        };
        let required: Vec<&str> = match map.get("required") {
            Some(Value::Array(r)) => r.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        for (name, schema) in properties {
            tally.properties += 1;
            tally.text += name.len();
            if !required.contains(&name.as_str()) {
                return Err(format!(
                    "property `{}` at {} is not required",
                    schema::short(name),
                    path.show()
                ));
            }
            path.with(&format!("properties.{name}"), |path| {
                check_node(schema, path, depth + 1, tally)
            })?;
        }
    }
    if types.iter().any(|t| t == "array") {
        let Some(items) = map.get("items") else {
            return Err(format!("the array at {} has no items", path.show()));
        };
        path.with("items", |path| check_node(items, path, depth, tally))?;
    }
    Ok(())
}

// ---- Arguments back -------------------------------------------------------------------------

/// Removes, from `arguments`, each `null` that strict mode's rewrite made possible: a property
/// the original `schema` neither requires nor lets be `null`.
pub(super) fn strip_added_nulls(schema: &Value, arguments: &mut Value, depth: usize) {
    if depth > 64 {
        return;
    }
    let (Value::Object(node), Value::Object(args)) = (schema, &mut *arguments) else {
        if let (Value::Object(node), Value::Array(items)) = (schema, arguments)
            && let Some(item_schema) = node.get("items")
        {
            for item in items {
                strip_added_nulls(item_schema, item, depth + 1);
            }
        }
        return;
    };
    let Some(Value::Object(properties)) = node.get("properties") else {
        return;
    };
    let required: Vec<&str> = match node.get("required") {
        Some(Value::Array(r)) => r.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    args.retain(|name, value| {
        !(value.is_null()
            && !required.contains(&name.as_str())
            && properties.get(name).is_some_and(|s| !allows_null(s)))
    });
    for (name, value) in args.iter_mut() {
        if let Some(sub) = properties.get(name) {
            strip_added_nulls(sub, value, depth + 1);
        }
    }
}

fn allows_null(schema: &Value) -> bool {
    let Value::Object(map) = schema else {
        return schema == &Value::Bool(true);
    };
    if let Some(types) = types_of(map) {
        return types.iter().any(|t| t == "null");
    }
    if let Some(Value::Array(values)) = map.get("enum") {
        return values.contains(&Value::Null);
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(branches)) = map.get(key) {
            return branches.iter().any(allows_null);
        }
    }
    map.get("const").is_none_or(Value::is_null)
}
