//! The Gemini API's `functionDeclarations`, with `parameters` in the API's `Schema`: a subset
//! of OpenAPI 3.0 (google-genai's `types.Schema`, which refuses any other field).
//!
//! `parameters` is taken by every Gemini API version and by Vertex AI; the newer
//! `parametersJsonSchema` is not, so it is not used. What the `Schema` has no field for is
//! rewritten or said in the description: one `type` (a list becomes `nullable` or `anyOf`),
//! `enum` of strings only, no `const`, `oneOf`, `allOf`, `not`, `if`, exclusive bounds,
//! `multipleOf`, `uniqueItems`, `patternProperties`, `prefixItems`; `additionalProperties`
//! only on Vertex AI, so never sent; references inlined (the SDK does the same), a cycle
//! unrolled once and then cut; string `format` only `date-time` and `enum` on the Gemini API.
//! Top-level parameter names must be `[A-Za-z_][A-Za-z0-9_]{0,63}`.

use serde_json::{Map, Value, json};

use super::schema::{self, Cycles, Path, describe, phrase, types_of};

/// `Schema` keywords kept as they are, by JSON Schema name (the same in the API's JSON).
const COMMON: &[&str] = &["description", "title", "default"];

/// One function declaration, or why it cannot be sent.
pub(super) fn tool(tool: &super::Tool<'_>, notes: &mut Vec<String>) -> Result<Value, String> {
    let inlined = schema::inline_refs(tool.parameters, Cycles::Cut)?;
    if inlined
        .to_string()
        .contains("(recursive: the same shape as")
    {
        notes.push(
            "relaxed: a recursive schema was unrolled once and then cut (Gemini's Schema has no references)"
                .into(),
        );
    }
    let cleaned = schema::objects_for_booleans(inlined, &mut Path::default())?;
    schema::check_shapes(&cleaned, &mut Path::default())?;
    let Value::Object(root) = cleaned else {
        return Err("the input schema is not an object schema".into());
    };
    let root = schema::merge_all_of(root)?;
    let mut root = super::relax_root_union(root, notes)?;
    if types_of(&root).is_none() {
        root.insert("type".into(), json!("object"));
    }
    let mut walker = Walker {
        notes,
        path: Path::default(),
    };
    let mut parameters = walker.node(Value::Object(root))?;
    check_parameter_names(&mut parameters, walker.notes)?;
    if parameters.get("type") != Some(&json!("OBJECT")) {
        return Err("the input schema's root is not an object".into());
    }
    Ok(json!({
        "name": tool.name,
        "description": tool.description,
        "parameters": parameters,
    }))
}

/// Gemini's rule for parameter names; an optional parameter that breaks it is left out, a
/// required one sinks the tool (a renamed parameter would not reach the server).
fn check_parameter_names(parameters: &mut Value, notes: &mut Vec<String>) -> Result<(), String> {
    let required: Vec<String> = match parameters.get("required") {
        Some(Value::Array(r)) => r
            .iter()
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect(),
        _ => Vec::new(),
    };
    let Some(Value::Object(props)) = parameters.get_mut("properties") else {
        return Ok(());
    };
    let bad: Vec<String> = props
        .keys()
        .filter(|n| !parameter_name_ok(n))
        .cloned()
        .collect();
    for name in bad {
        if required.contains(&name) {
            return Err(format!(
                "required parameter `{}` has a name Gemini refuses (a letter or `_`, then letters, digits or `_`, at most 64)",
                schema::short(&name)
            ));
        }
        props.remove(&name);
        notes.push(format!(
            "narrowed: optional parameter `{}` left out: Gemini refuses its name",
            schema::short(&name)
        ));
    }
    let order: Vec<Value> = props.keys().map(|k| Value::String(k.clone())).collect();
    if let Some(Value::Array(ordering)) = parameters.get_mut("propertyOrdering") {
        ordering.retain(|n| order.contains(n));
    }
    Ok(())
}

fn parameter_name_ok(name: &str) -> bool {
    name.len() <= 64
        && name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

struct Walker<'a> {
    notes: &'a mut Vec<String>,
    path: Path,
}

impl Walker<'_> {
    fn child(&mut self, segment: &str, node: Value) -> Result<Value, String> {
        self.path.push(segment);
        let out = self.node(node);
        self.path.pop();
        out
    }

    fn node(&mut self, node: Value) -> Result<Value, String> {
        let Value::Object(map) = node else {
            return Err(format!("{} is not a schema", self.path.show()));
        };
        let mut map =
            schema::merge_all_of(map).map_err(|e| format!("at {}: {e}", self.path.show()))?;
        if let Some(one_of) = map.remove("oneOf") {
            if map.contains_key("anyOf") {
                return Err(format!("{} has both oneOf and anyOf", self.path.show()));
            }
            describe(&mut map, "exactly one of the anyOf forms");
            map.insert("anyOf".into(), one_of);
        }
        if map.contains_key("anyOf") {
            return self.union(map);
        }
        let types = match types_of(&map) {
            Some(t) => t,
            None => infer_types(&map),
        };
        let nullable = types.iter().any(|t| t == "null");
        let types: Vec<String> = types.into_iter().filter(|t| t != "null").collect();
        match types.len() {
            0 if nullable => {
                let mut out = self.annotations(&mut map);
                out.insert("type".into(), json!("NULL"));
                self.leftovers(map, &mut out);
                Ok(Value::Object(out))
            }
            // No type: anything. The SDK writes an untyped `{}` for that too.
            0 => {
                let mut out = self.annotations(&mut map);
                self.leftovers(map, &mut out);
                Ok(Value::Object(out))
            }
            1 => {
                schema::drop_foreign_keywords(&mut map, &types);
                let mut out = self.typed(map, &types[0])?;
                if nullable {
                    out.insert("nullable".into(), json!(true));
                }
                Ok(Value::Object(out))
            }
            _ => {
                let mut union = Map::new();
                let mut branches = Vec::new();
                for t in &types {
                    let mut branch = schema::for_type(map.clone(), t);
                    branch.remove("description");
                    branch.remove("title");
                    if branch.get("enum").is_some_and(|e| e == &json!([])) {
                        continue;
                    }
                    branches.push(Value::Object(branch));
                }
                for key in ["description", "title"] {
                    if let Some(v) = map.get(key) {
                        union.insert(key.into(), v.clone());
                    }
                }
                if nullable {
                    branches.push(json!({ "type": "null" }));
                }
                union.insert("anyOf".into(), Value::Array(branches));
                self.union(union)
            }
        }
    }

    /// `anyOf`: a `null` branch becomes `nullable`; one branch left is the node itself.
    fn union(&mut self, mut map: Map<String, Value>) -> Result<Value, String> {
        let Some(Value::Array(branches)) = map.remove("anyOf") else {
            return Err(format!("{} has a malformed anyOf", self.path.show()));
        };
        let mut out = self.annotations(&mut map);
        let siblings = map;
        let mut kept = Vec::new();
        let mut nullable = false;
        for (i, branch) in branches.into_iter().enumerate() {
            if let Value::Object(b) = &branch
                && b.get("type") == Some(&json!("null"))
                && b.len() == 1
            {
                nullable = true;
                continue;
            }
            let branch = if siblings.is_empty() {
                branch
            } else {
                json!({ "allOf": [Value::Object(siblings.clone()), branch] })
            };
            kept.push(self.child(&format!("anyOf.{i}"), branch)?);
        }
        if kept.len() == 1
            && let Some(Value::Object(only)) = kept.pop()
        {
            for (k, v) in only {
                if k == "description"
                    && let (Some(Value::String(d)), Value::String(v)) =
                        (out.get_mut("description"), &v)
                {
                    d.push(' ');
                    d.push_str(v);
                    continue;
                }
                out.insert(k, v);
            }
        } else if !kept.is_empty() {
            out.insert("anyOf".into(), Value::Array(kept));
        } else if !nullable {
            return Err(format!("{} has an empty anyOf", self.path.show()));
        } else {
            out.insert("type".into(), json!("NULL"));
        }
        if nullable {
            out.insert("nullable".into(), json!(true));
        }
        Ok(Value::Object(out))
    }

    fn annotations(&self, map: &mut Map<String, Value>) -> Map<String, Value> {
        let mut out = Map::new();
        for key in COMMON {
            if let Some(v) = map.remove(*key) {
                if *key == "description" || *key == "title" {
                    if v.is_string() {
                        out.insert((*key).into(), v);
                    }
                } else {
                    out.insert((*key).into(), v);
                }
            }
        }
        if let Some(Value::Array(examples)) = map.remove("examples")
            && let Some(first) = examples.into_iter().next()
        {
            out.insert("example".into(), first);
        }
        out
    }

    /// Everything `Schema` has no field for, said in the description.
    fn leftovers(&mut self, map: Map<String, Value>, out: &mut Map<String, Value>) {
        let said: Vec<String> = map
            .iter()
            .filter(|(k, _)| {
                !(k.as_str() == "type"
                    || k.as_str() == "$comment"
                    || k.starts_with("x-")
                    || (k.as_str() == "additionalProperties"
                        && map.get(k.as_str()) == Some(&json!(false))))
            })
            .map(|(k, v)| phrase(k, v))
            .collect();
        if !said.is_empty() {
            describe(out, &said.join("; "));
        }
    }

    fn typed(
        &mut self,
        mut map: Map<String, Value>,
        t: &str,
    ) -> Result<Map<String, Value>, String> {
        let mut out = self.annotations(&mut map);
        let upper = match t {
            "string" => "STRING",
            "number" => "NUMBER",
            "integer" => "INTEGER",
            "boolean" => "BOOLEAN",
            "array" => "ARRAY",
            "object" => "OBJECT",
            other => {
                return Err(format!(
                    "{} has type `{}`, which is not a JSON Schema type",
                    self.path.show(),
                    schema::short(other)
                ));
            }
        };
        out.insert("type".into(), json!(upper));
        map.remove("type");
        // Values: `enum` and `const` only as strings.
        let values: Option<Vec<Value>> = match (map.remove("enum"), map.remove("const")) {
            (Some(Value::Array(list)), _) => Some(list),
            (None, Some(c)) => Some(vec![c]),
            (Some(other), _) => {
                map.insert("enum".into(), other);
                None
            }
            (None, None) => None,
        };
        if let Some(values) = values {
            let strings: Option<Vec<Value>> = values
                .iter()
                .map(|v| v.as_str().map(|s| Value::String(s.to_owned())))
                .collect();
            match strings {
                Some(strings) if upper == "STRING" => {
                    out.insert("enum".into(), Value::Array(strings));
                    out.insert("format".into(), json!("enum"));
                }
                _ => {
                    map.insert("enum".into(), Value::Array(values));
                }
            }
        }
        match upper {
            "OBJECT" => self.object(&mut map, &mut out)?,
            "ARRAY" => {
                let (items, note) = schema::array_items(&mut map).unwrap_or((json!({}), None));
                if let Some(note) = note {
                    describe(&mut out, &note);
                }
                out.insert("items".into(), self.child("items", items)?);
                for key in ["minItems", "maxItems"] {
                    if let Some(v) = map.remove(key).filter(Value::is_u64) {
                        out.insert(key.into(), v);
                    }
                }
            }
            "STRING" => {
                for key in ["minLength", "maxLength"] {
                    if let Some(v) = map.remove(key).filter(Value::is_u64) {
                        out.insert(key.into(), v);
                    }
                }
                if let Some(Value::String(p)) = map.get("pattern") {
                    out.insert("pattern".into(), json!(p));
                    map.remove("pattern");
                }
                if let Some(f) = map.remove("format") {
                    if f == json!("date-time") && !out.contains_key("format") {
                        out.insert("format".into(), f);
                    } else {
                        map.insert("format".into(), f);
                    }
                }
            }
            "NUMBER" | "INTEGER" => {
                for key in ["minimum", "maximum"] {
                    if let Some(v) = map.remove(key).filter(Value::is_number) {
                        out.insert(key.into(), v);
                    }
                }
                if let Some(f) = map.remove("format") {
                    let known: &[&str] = if upper == "NUMBER" {
                        &["float", "double"]
                    } else {
                        &["int32", "int64"]
                    };
                    if f.as_str().is_some_and(|f| known.contains(&f)) {
                        out.insert("format".into(), f);
                    } else {
                        map.insert("format".into(), f);
                    }
                }
            }
            _ => {}
        }
        self.leftovers(map, &mut out);
        Ok(out)
    }

    fn object(
        &mut self,
        map: &mut Map<String, Value>,
        out: &mut Map<String, Value>,
    ) -> Result<(), String> {
        let properties = match map.remove("properties") {
            Some(Value::Object(p)) => p,
            _ => Map::new(),
        };
        let mut done = Map::new();
        for (name, schema) in properties {
            let schema = self.child(&format!("properties.{name}"), schema)?;
            done.insert(name, schema);
        }
        let mut required: Vec<Value> = Vec::new();
        if let Some(Value::Array(names)) = map.remove("required") {
            for name in names {
                if let Some(n) = name.as_str()
                    && done.contains_key(n)
                    && !required.contains(&name)
                {
                    required.push(name);
                }
            }
        }
        match map.remove("additionalProperties") {
            None | Some(Value::Bool(false)) => {}
            Some(Value::Bool(true)) => describe(out, "other keys are allowed too"),
            Some(Value::Object(s)) if s.is_empty() => describe(out, "other keys are allowed too"),
            Some(other) => describe(out, &phrase("other keys are allowed, each value", &other)),
        }
        if !done.is_empty() {
            let order: Vec<Value> = done.keys().map(|k| Value::String(k.clone())).collect();
            out.insert("properties".into(), Value::Object(done));
            if order.len() > 1 {
                out.insert("propertyOrdering".into(), Value::Array(order));
            }
        }
        if !required.is_empty() {
            out.insert("required".into(), Value::Array(required));
        }
        for key in ["minProperties", "maxProperties"] {
            if let Some(v) = map.remove(key).filter(Value::is_u64) {
                out.insert(key.into(), v);
            }
        }
        Ok(())
    }
}

/// The types a node without `type` can only have; empty when it can be anything.
fn infer_types(map: &Map<String, Value>) -> Vec<String> {
    if map.contains_key("properties") || map.contains_key("required") {
        return vec!["object".into()];
    }
    if map.contains_key("items") || map.contains_key("prefixItems") {
        return vec!["array".into()];
    }
    let values: Vec<&Value> = match (map.get("enum"), map.get("const")) {
        (Some(Value::Array(list)), _) => list.iter().collect(),
        (_, Some(c)) => vec![c],
        _ => return Vec::new(),
    };
    let mut types: Vec<String> = Vec::new();
    for v in values {
        let t = match v {
            Value::String(_) => "string",
            Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
            Value::Number(_) => "number",
            Value::Bool(_) => "boolean",
            Value::Null => "null",
            _ => return Vec::new(),
        };
        if !types.iter().any(|x| x == t) {
            types.push(t.into());
        }
    }
    if types.iter().any(|t| t == "integer") && types.iter().any(|t| t == "number") {
        types.retain(|t| t != "integer");
    }
    types
}
