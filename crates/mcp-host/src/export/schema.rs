//! What every provider's export needs before its own rules apply: local `$ref`s inlined (a
//! cycle kept as a definition or cut, as the provider can take), boolean schemas made objects,
//! `allOf` merged where the conjunction can be written as one schema, and the notes that say
//! what was relaxed. Pure functions over `serde_json::Value`; a schema they cannot handle is an
//! `Err` with the reason, and the tool is then left out.
//! This file is long because each rewrite ($ref inlining with cycles, boolean schemas, `allOf`
//! merging) is its own careful walk over JSON Schema, and the rewrites share the notes and helpers.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

/// The most nodes a schema may have once its references are inlined: inlining can multiply a
/// schema's size (a chain of definitions that each refer to the next twice doubles it per
/// link), and a model's context is the one paying.
pub(crate) const MAX_INLINED_NODES: usize = 20_000;

/// The deepest a schema may nest once its references are inlined: every pass over it
/// recurses, and a chain of definitions each holding the next could otherwise nest deep
/// enough to overflow a thread's stack.
pub(crate) const MAX_INLINED_DEPTH: usize = 128;

/// How a reference that leads back into itself is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Cycles {
    /// As a root `$defs` entry and `{"$ref": "#/$defs/<name>"}` where the cycle closes.
    Defs,
    /// Unrolled once, then cut: where the cycle closes, a schema that accepts anything and says
    /// so in its description.
    Cut,
}

/// Keywords that identify or annotate a document and constrain nothing.
const DOCUMENT_KEYWORDS: &[&str] = &[
    "$schema",
    "$id",
    "$anchor",
    "$dynamicAnchor",
    "$comment",
    "$vocabulary",
];

/// Keywords that say something to a reader and constrain nothing; beside a `$ref` they are
/// laid over the target.
const ANNOTATIONS: &[&str] = &[
    "title",
    "description",
    "default",
    "examples",
    "deprecated",
    "readOnly",
    "writeOnly",
];

/// The keywords whose value is one schema.
const ONE_SCHEMA: &[&str] = &[
    "additionalProperties",
    "items",
    "contains",
    "not",
    "if",
    "then",
    "else",
    "propertyNames",
    "unevaluatedProperties",
    "unevaluatedItems",
    "additionalItems",
    "contentSchema",
];

/// The keywords whose value is a list of schemas.
const SCHEMA_LISTS: &[&str] = &["anyOf", "oneOf", "allOf", "prefixItems"];

/// The keywords whose value maps names to schemas.
const SCHEMA_MAPS: &[&str] = &[
    "properties",
    "patternProperties",
    "dependentSchemas",
    "$defs",
    "definitions",
];

/// Applies `f` to every direct subschema of `node`, in place.
pub(crate) fn for_each_subschema(
    node: &mut Map<String, Value>,
    mut f: impl FnMut(&str, &mut Value) -> Result<(), String>,
) -> Result<(), String> {
    for (key, value) in node.iter_mut() {
        let key = key.as_str();
        if ONE_SCHEMA.contains(&key) {
            // Draft 4-7 tuple form: `items` as a list.
            if let Value::Array(list) = value {
                for item in list {
                    f(key, item)?;
                }
            } else {
                f(key, value)?;
            }
        } else if SCHEMA_LISTS.contains(&key) {
            if let Value::Array(list) = value {
                for item in list {
                    f(key, item)?;
                }
            }
        } else if SCHEMA_MAPS.contains(&key)
            && let Value::Object(map) = value
        {
            for item in map.values_mut() {
                f(key, item)?;
            }
        }
    }
    Ok(())
}

/// `root` with every local `$ref` replaced by what it points at. A reference into itself is
/// handled as `cycles` says. Document keywords (`$schema`, `$id`, …) and the definitions
/// themselves (`$defs`, `definitions`) are gone from the result.
pub(crate) fn inline_refs(root: &Value, cycles: Cycles) -> Result<Value, String> {
    let mut inliner = Inliner {
        root,
        cycles,
        stack: Vec::new(),
        defs: BTreeMap::new(),
        nodes: 0,
        depth: 0,
    };
    let mut out = inliner.resolve(root)?;
    // A definition may itself close a cycle through another one: resolve until none is new.
    let mut written: BTreeMap<String, Value> = BTreeMap::new();
    loop {
        let pending: Vec<(String, String)> = inliner
            .defs
            .iter()
            .filter(|(_, name)| !written.contains_key(*name))
            .map(|(pointer, name)| (pointer.clone(), name.clone()))
            .collect();
        if pending.is_empty() {
            break;
        }
        for (pointer, name) in pending {
            let target = pointer_target(root, &pointer)?;
            inliner.stack.push(pointer.clone());
            let body = inliner.resolve(target)?;
            inliner.stack.pop();
            written.insert(name, body);
        }
    }
    if !written.is_empty()
        && let Value::Object(map) = &mut out
    {
        map.insert("$defs".into(), Value::Object(written.into_iter().collect()));
    }
    Ok(out)
}

struct Inliner<'a> {
    root: &'a Value,
    cycles: Cycles,
    /// The references being expanded, outermost first.
    stack: Vec<String>,
    /// Pointer → definition name, for cycles kept as definitions.
    defs: BTreeMap<String, String>,
    nodes: usize,
    depth: usize,
}

impl Inliner<'_> {
    fn resolve(&mut self, node: &Value) -> Result<Value, String> {
        if self.depth >= MAX_INLINED_DEPTH {
            return Err(format!(
                "with its $refs inlined it nests deeper than {MAX_INLINED_DEPTH} levels"
            ));
        }
        self.depth += 1;
        let out = self.resolve_node(node);
        self.depth -= 1;
        out
    }

    fn resolve_node(&mut self, node: &Value) -> Result<Value, String> {
        self.nodes += 1;
        if self.nodes > MAX_INLINED_NODES {
            return Err(format!(
                "inlining its $refs would give more than {MAX_INLINED_NODES} schema nodes"
            ));
        }
        let Value::Object(map) = node else {
            return Ok(node.clone());
        };
        let mut map = map.clone();
        for key in DOCUMENT_KEYWORDS.iter().chain(&["$defs", "definitions"]) {
            map.remove(*key);
        }
        if let Some(reference) = map.remove("$ref") {
            let Value::String(pointer) = reference else {
                return Err("a $ref that is not a string".into());
            };
            return self.follow(&pointer, map);
        }
        let mut error = None;
        for_each_subschema(&mut map, |_, sub| {
            match self.resolve(sub) {
                Ok(done) => *sub = done,
                Err(e) => error = Some(e),
            }
            Ok(())
        })?;
        match error {
            Some(e) => Err(e),
            None => Ok(Value::Object(map)),
        }
    }

    /// The target of `pointer`, with the keywords beside the `$ref` (`siblings`) applied.
    fn follow(&mut self, pointer: &str, siblings: Map<String, Value>) -> Result<Value, String> {
        let target = pointer_target(self.root, pointer)?;
        let resolved = if self.stack.iter().any(|p| p == pointer) {
            match self.cycles {
                Cycles::Defs => {
                    let taken = self.defs.len();
                    let name = self
                        .defs
                        .entry(pointer.to_owned())
                        .or_insert_with(|| def_name(pointer, taken))
                        .clone();
                    serde_json::json!({ "$ref": format!("#/$defs/{name}") })
                }
                Cycles::Cut => serde_json::json!({
                    "description": format!(
                        "(recursive: the same shape as {} again; not spelled out further here)",
                        pointer_label(pointer)
                    )
                }),
            }
        } else {
            self.stack.push(pointer.to_owned());
            let done = self.resolve(target);
            self.stack.pop();
            done?
        };
        let mut siblings = siblings;
        let mut error = None;
        for_each_subschema(&mut siblings, |_, sub| {
            match self.resolve(sub) {
                Ok(done) => *sub = done,
                Err(e) => error = Some(e),
            }
            Ok(())
        })?;
        if let Some(e) = error {
            return Err(e);
        }
        Ok(overlay(resolved, siblings))
    }
}

/// A target with the keywords that stood beside its `$ref`: annotations replace the target's,
/// anything that constrains becomes a conjunction (`allOf`), merged later where it can be.
fn overlay(target: Value, siblings: Map<String, Value>) -> Value {
    if siblings.is_empty() {
        return target;
    }
    let only_annotations = siblings.keys().all(|k| ANNOTATIONS.contains(&k.as_str()));
    match target {
        Value::Object(mut map) if only_annotations && !map.contains_key("$ref") => {
            map.extend(siblings);
            Value::Object(map)
        }
        Value::Bool(true) if only_annotations => Value::Object(siblings),
        target => {
            let mut out = Map::new();
            out.insert(
                "allOf".into(),
                Value::Array(vec![Value::Object(siblings), target]),
            );
            Value::Object(out)
        }
    }
}

fn def_name(pointer: &str, taken: usize) -> String {
    let last = pointer.rsplit('/').next().unwrap_or("");
    let clean: String = last
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '_')
        .take(40)
        .collect();
    if clean.is_empty() {
        format!("Recursive{taken}")
    } else {
        format!("{clean}_{taken}")
    }
}

fn pointer_label(pointer: &str) -> String {
    if pointer == "#" {
        "the whole input".into()
    } else {
        format!("`{}`", pointer.rsplit('/').next().unwrap_or(pointer))
    }
}

/// What a local JSON pointer (`#`, `#/$defs/x`, `#/properties/a~1b`) points at in `root`.
fn pointer_target<'a>(root: &'a Value, pointer: &str) -> Result<&'a Value, String> {
    let Some(path) = pointer.strip_prefix('#') else {
        return Err(format!(
            "$ref `{}` points outside the schema, and nothing is fetched",
            short(pointer)
        ));
    };
    if path.is_empty() {
        return Ok(root);
    }
    let Some(path) = path.strip_prefix('/') else {
        return Err(format!(
            "$ref `{}` names an anchor, which is not resolved",
            short(pointer)
        ));
    };
    let mut at = root;
    for raw in path.split('/') {
        let token = percent_decode(raw).replace("~1", "/").replace("~0", "~");
        at = match at {
            Value::Object(map) => map.get(&token),
            Value::Array(list) => token.parse::<usize>().ok().and_then(|i| list.get(i)),
            _ => None,
        }
        .ok_or_else(|| format!("$ref `{}` points at nothing", short(pointer)))?;
    }
    Ok(at)
}

fn percent_decode(text: &str) -> String {
    if !text.contains('%') {
        return text.to_owned();
    }
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let Some(hex) = text.get(i + 1..i + 3)
            && let Ok(b) = u8::from_str_radix(hex, 16)
        {
            out.push(b);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// At most 80 characters of peer text, for a diagnostic.
pub(crate) fn short(text: &str) -> String {
    let mut out: String = text.chars().filter(|c| !c.is_control()).take(80).collect();
    if text.chars().count() > 80 {
        out.push('…');
    }
    out
}

/// The types a schema node allows, from `type` as a string or a list; `None` when it has no
/// `type` (anything, as far as `type` goes).
pub(crate) fn types_of(node: &Map<String, Value>) -> Option<Vec<String>> {
    match node.get("type")? {
        Value::String(t) => Some(vec![t.clone()]),
        Value::Array(list) => Some(
            list.iter()
                .filter_map(|t| t.as_str().map(str::to_owned))
                .collect(),
        ),
        _ => Some(Vec::new()),
    }
}

/// The one schema that `allOf`'s branches (and the node holding them) describe together, when
/// it can be written without `allOf`: properties are united (a property in two branches gets
/// both schemas, merged later), `required` is united, bounds take the tighter side, `type` and
/// `enum` are intersected. Anything else that two branches both say must be said the same way.
pub(crate) fn merge_all_of(mut node: Map<String, Value>) -> Result<Map<String, Value>, String> {
    let Some(Value::Array(branches)) = node.remove("allOf") else {
        return Ok(node);
    };
    for branch in branches {
        let branch = match branch {
            Value::Bool(true) => continue,
            Value::Bool(false) => return Err("an allOf branch is `false`: nothing is valid".into()),
            Value::Object(map) => merge_all_of(map)?,
            _ => return Err("an allOf branch is not a schema".into()),
        };
        for (key, value) in branch {
            merge_keyword(&mut node, key, value)?;
        }
    }
    Ok(node)
}

fn merge_keyword(node: &mut Map<String, Value>, key: String, value: Value) -> Result<(), String> {
    let Some(existing) = node.get_mut(&key) else {
        node.insert(key, value);
        return Ok(());
    };
    if *existing == value {
        return Ok(());
    }
    match key.as_str() {
        "properties" => {
            let (Value::Object(mine), Value::Object(theirs)) = (existing, value) else {
                return Err("allOf branches have malformed `properties`".into());
            };
            for (name, schema) in theirs {
                match mine.get_mut(&name) {
                    Some(prior) if *prior != schema => {
                        let both = Value::Array(vec![prior.take(), schema]);
                        *prior = serde_json::json!({ "allOf": both });
                    }
                    Some(_) => {}
                    None => {
                        mine.insert(name, schema);
                    }
                }
            }
        }
        "required" => {
            let (Value::Array(mine), Value::Array(theirs)) = (existing, value) else {
                return Err("allOf branches have malformed `required`".into());
            };
            for name in theirs {
                if !mine.contains(&name) {
                    mine.push(name);
                }
            }
        }
        "type" => {
            let mine = types_of(&Map::from_iter([("type".into(), existing.clone())]));
            let theirs = types_of(&Map::from_iter([("type".into(), value)]));
            let (Some(mine), Some(theirs)) = (mine, theirs) else {
                return Err("allOf branches have a malformed `type`".into());
            };
            let both: Vec<Value> = mine
                .iter()
                .filter(|t| {
                    theirs.contains(t)
                        || (t.as_str() == "integer" && theirs.iter().any(|u| u == "number"))
                })
                .map(|t| Value::String(t.clone()))
                .chain(
                    theirs
                        .iter()
                        .filter(|t| t.as_str() == "integer" && mine.iter().any(|u| u == "number"))
                        .map(|t| Value::String(t.clone())),
                )
                .collect();
            let mut both = dedup(both);
            *existing = match both.len() {
                0 => return Err("allOf branches allow no common type".into()),
                1 => both.remove(0),
                _ => Value::Array(both),
            };
        }
        "enum" => {
            let (Value::Array(mine), Value::Array(theirs)) = (&*existing, &value) else {
                return Err("allOf branches have a malformed `enum`".into());
            };
            let both: Vec<Value> = mine
                .iter()
                .filter(|v| theirs.contains(v))
                .cloned()
                .collect();
            if both.is_empty() {
                return Err("allOf branches allow no common value".into());
            }
            *existing = Value::Array(both);
        }
        "description" | "title" => {
            if let (Value::String(mine), Value::String(theirs)) = (&mut *existing, &value) {
                mine.push('\n');
                mine.push_str(theirs);
            }
        }
        "default" | "examples" | "$comment" | "deprecated" => {}
        "minimum" | "exclusiveMinimum" | "minLength" | "minItems" | "minProperties"
        | "minContains" => {
            if let (Some(a), Some(b)) = (existing.as_f64(), value.as_f64())
                && b > a
            {
                *existing = value;
            }
        }
        "maximum" | "exclusiveMaximum" | "maxLength" | "maxItems" | "maxProperties"
        | "maxContains" => {
            if let (Some(a), Some(b)) = (existing.as_f64(), value.as_f64())
                && b < a
            {
                *existing = value;
            }
        }
        "items" | "not" | "contains" | "propertyNames" => {
            // Two schemas for the same place: both must hold.
            let both = Value::Array(vec![existing.take(), value]);
            *existing = if key == "not" {
                serde_json::json!({ "anyOf": both })
            } else {
                serde_json::json!({ "allOf": both })
            };
        }
        other => {
            return Err(format!(
                "allOf branches both set `{}` differently, which one schema cannot say",
                short(other)
            ));
        }
    }
    Ok(())
}

fn dedup(values: Vec<Value>) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::with_capacity(values.len());
    for v in values {
        if !out.contains(&v) {
            out.push(v);
        }
    }
    out
}

/// The keywords that apply to one type only, by type; a node's keywords for other types than
/// its own constrain nothing.
const TYPE_KEYWORDS: &[(&str, &[&str])] = &[
    (
        "object",
        &[
            "properties",
            "required",
            "additionalProperties",
            "patternProperties",
            "minProperties",
            "maxProperties",
            "propertyNames",
            "dependentRequired",
            "dependentSchemas",
            "unevaluatedProperties",
        ],
    ),
    (
        "array",
        &[
            "items",
            "prefixItems",
            "minItems",
            "maxItems",
            "uniqueItems",
            "contains",
            "minContains",
            "maxContains",
            "unevaluatedItems",
            "additionalItems",
        ],
    ),
    (
        "string",
        &[
            "minLength",
            "maxLength",
            "pattern",
            "format",
            "contentEncoding",
            "contentMediaType",
            "contentSchema",
        ],
    ),
    (
        "number",
        &[
            "minimum",
            "maximum",
            "exclusiveMinimum",
            "exclusiveMaximum",
            "multipleOf",
        ],
    ),
];

/// `node` narrowed to type `t` (one branch of `type: [..]` split up): `type` set to `t`, the
/// keywords of other types removed, `enum` and `const` kept to the values of type `t`.
pub(crate) fn for_type(mut node: Map<String, Value>, t: &str) -> Map<String, Value> {
    let family = if t == "integer" { "number" } else { t };
    for (owner, keys) in TYPE_KEYWORDS {
        if *owner != family {
            for key in *keys {
                node.remove(*key);
            }
        }
    }
    if let Some(Value::Array(values)) = node.get_mut("enum") {
        values.retain(|v| value_has_type(v, t));
    }
    if node.get("const").is_some_and(|c| !value_has_type(c, t)) {
        node.remove("const");
        node.insert("enum".into(), Value::Array(Vec::new()));
    }
    node.insert("type".into(), Value::String(t.to_owned()));
    node
}

/// The keywords of `node` that apply to none of `types` (and so constrain nothing there).
pub(crate) fn drop_foreign_keywords(node: &mut Map<String, Value>, types: &[String]) {
    for (owner, keys) in TYPE_KEYWORDS {
        let applies = types
            .iter()
            .any(|t| t == owner || (t == "integer" && *owner == "number"));
        if !applies {
            for key in *keys {
                node.remove(*key);
            }
        }
    }
}

fn value_has_type(value: &Value, t: &str) -> bool {
    match (value, t) {
        (Value::String(_), "string") | (Value::Bool(_), "boolean") | (Value::Null, "null") => true,
        (Value::Number(_), "number") => true,
        (Value::Number(n), "integer") => {
            n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0)
        }
        (Value::Object(_), "object") | (Value::Array(_), "array") => true,
        _ => false,
    }
}

/// An array node's one `items` schema, taken out of `map`, and a note when it had to be made
/// from a tuple (`prefixItems`: any of the positions' schemas, the positions said in words).
/// `None` when the node says nothing about its items.
pub(crate) fn array_items(map: &mut Map<String, Value>) -> Option<(Value, Option<String>)> {
    let rest = map.remove("items");
    let Some(Value::Array(list)) = map.remove("prefixItems") else {
        return rest.map(|items| (items, None));
    };
    let note = phrase("items by position", &Value::Array(list.clone()));
    let mut all = list;
    // `items: false` after a tuple: no more items than positions, which `maxItems` could say.
    match rest {
        Some(Value::Bool(false)) => {}
        Some(v) if v == serde_json::json!({ "not": {} }) => {}
        Some(v) => all.push(v),
        None => all.push(Value::Object(Map::new())),
    }
    Some((tuple_items(all), Some(note)))
}

/// A tuple's position schemas as one `items` schema: any of them, each once.
pub(crate) fn tuple_items(list: Vec<Value>) -> Value {
    let list = dedup(list);
    if list.len() == 1 {
        list.into_iter().next().unwrap_or(Value::Bool(true))
    } else {
        serde_json::json!({ "anyOf": list })
    }
}

/// Appends `note` to a node's description (a constraint the provider will not enforce, said
/// so the model still reads it).
pub(crate) fn describe(node: &mut Map<String, Value>, note: &str) {
    let text = match node.get("description") {
        Some(Value::String(d)) if !d.is_empty() => format!("{d} ({note})"),
        _ => format!("({note})"),
    };
    node.insert("description".into(), Value::String(text));
}

/// A keyword and its value as a short phrase for a description: `minLength 3`.
pub(crate) fn phrase(key: &str, value: &Value) -> String {
    if key == "enum"
        && let Value::Array(values) = value
    {
        let listed: Vec<String> = values.iter().map(|v| short(&v.to_string())).collect();
        return format!("one of {}", short(&listed.join(", ")));
    }
    let text = match value {
        Value::String(s) => format!("\"{}\"", short(s)),
        other => short(&other.to_string()),
    };
    format!("{key} {text}")
}

/// Where a node sits, for a diagnostic: `properties.a.items`.
#[derive(Debug, Default)]
pub(crate) struct Path(Vec<String>);

impl Path {
    /// Enters `segment` for the duration of `f`.
    pub(crate) fn with<T>(&mut self, segment: &str, f: impl FnOnce(&mut Self) -> T) -> T {
        self.0.push(short(segment));
        let out = f(self);
        self.0.pop();
        out
    }

    /// Enters `segment`, until [`pop`](Self::pop).
    pub(crate) fn push(&mut self, segment: &str) {
        self.0.push(short(segment));
    }

    /// Leaves the segment entered last.
    pub(crate) fn pop(&mut self) {
        self.0.pop();
    }

    /// The path as text; `the root` when empty.
    pub(crate) fn show(&self) -> String {
        match self.0.len() {
            0 => "the root".into(),
            n if n > 6 => format!("….{}", self.0[n - 6..].join(".")),
            _ => self.0.join("."),
        }
    }
}

/// Keywords whose boolean value is plain and taken by every provider that takes the keyword.
const KEPT_BOOLEANS: &[&str] = &[
    "additionalProperties",
    "unevaluatedProperties",
    "additionalItems",
    "unevaluatedItems",
];

/// Draft 4's list form of `items` becomes `prefixItems`, and boolean subschemas objects:
/// `true` becomes `{}`; a property whose schema is `false` (it
/// must be absent) is dropped, and the whole schema refused if that property is also required;
/// `false` anywhere else becomes `{"not": {}}`.
pub(crate) fn objects_for_booleans(node: Value, path: &mut Path) -> Result<Value, String> {
    let mut map = match node {
        Value::Bool(true) => return Ok(Value::Object(Map::new())),
        Value::Bool(false) => return Ok(serde_json::json!({ "not": {} })),
        Value::Object(map) => map,
        other => {
            return Err(format!(
                "{} is `{}`, not a schema",
                path.show(),
                short(&other.to_string())
            ));
        }
    };
    // Draft 4's tuple form (`items` as a list, `additionalItems` for the rest) in 2020-12's
    // words, which mean the same.
    if matches!(map.get("items"), Some(Value::Array(_))) {
        if let Some(list) = map.remove("items") {
            map.insert("prefixItems".into(), list);
        }
        if let Some(rest) = map.remove("additionalItems") {
            map.insert("items".into(), rest);
        }
    }
    // Draft 4's boolean exclusive bounds, as 2020-12's numbers.
    for (flag, bound) in [
        ("exclusiveMinimum", "minimum"),
        ("exclusiveMaximum", "maximum"),
    ] {
        match map.get(flag) {
            Some(Value::Bool(true)) => {
                if let Some(limit) = map.remove(bound) {
                    map.insert(flag.into(), limit);
                } else {
                    map.remove(flag);
                }
            }
            Some(Value::Bool(false)) => {
                map.remove(flag);
            }
            _ => {}
        }
    }
    let required: Vec<Value> = match map.get("required") {
        Some(Value::Array(r)) => r.clone(),
        _ => Vec::new(),
    };
    if let Some(Value::Object(props)) = map.get_mut("properties") {
        let mut never = Vec::new();
        for (name, schema) in props.iter() {
            if *schema == Value::Bool(false) {
                if required.contains(&Value::String(name.clone())) {
                    return Err(format!(
                        "{}: property `{}` is required yet its schema is `false`, so no arguments are valid",
                        path.show(),
                        short(name)
                    ));
                }
                never.push(name.clone());
            }
        }
        for name in never {
            props.remove(&name);
        }
    }
    let mut error = None;
    for_each_subschema(&mut map, |key, sub| {
        // Where a boolean says "any other key / item" or "none", it is kept as it is.
        if sub.is_boolean() && KEPT_BOOLEANS.contains(&key) {
            return Ok(());
        }
        let done = path.with(key, |path| objects_for_booleans(sub.take(), path));
        match done {
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

/// The JSON Schema type names.
const TYPE_NAMES: &[&str] = &[
    "object", "array", "string", "number", "integer", "boolean", "null",
];

/// Whether the keywords a provider reads have the shapes JSON Schema 2020-12 gives them
/// (`type` a type name or a list of them, `required` a list of names, a bound a number, …):
/// an API that validates the schema refuses the whole request for one that does not. Unknown
/// keywords are anyone's.
pub(crate) fn check_shapes(node: &Value, path: &mut Path) -> Result<(), String> {
    let map = match node {
        Value::Bool(_) => return Ok(()),
        Value::Object(map) => map,
        _ => return Err(format!("{} is not a schema", path.show())),
    };
    let bad = |key: &str, why: &str| {
        Err(format!(
            "`{}` at {} {why}, which JSON Schema does not allow",
            short(key),
            path.show()
        ))
    };
    for (key, value) in map {
        let ok = match key.as_str() {
            "type" => match value {
                Value::String(t) => TYPE_NAMES.contains(&t.as_str()),
                Value::Array(list) => {
                    !list.is_empty()
                        && list
                            .iter()
                            .all(|t| t.as_str().is_some_and(|t| TYPE_NAMES.contains(&t)))
                        && dedup(list.clone()).len() == list.len()
                }
                _ => false,
            },
            "required" => match value {
                Value::Array(list) => {
                    list.iter().all(Value::is_string) && dedup(list.clone()).len() == list.len()
                }
                _ => false,
            },
            "enum" => value.is_array(),
            "properties" | "patternProperties" | "$defs" | "dependentSchemas" => value.is_object(),
            "anyOf" | "oneOf" | "allOf" | "prefixItems" => {
                value.as_array().is_some_and(|l| !l.is_empty())
            }
            "minimum" | "maximum" | "exclusiveMinimum" | "exclusiveMaximum" => value.is_number(),
            "multipleOf" => value.as_f64().is_some_and(|v| v > 0.0),
            "minLength" | "maxLength" | "minItems" | "maxItems" | "minProperties"
            | "maxProperties" | "minContains" | "maxContains" => value.is_u64(),
            "pattern" | "format" | "title" | "description" | "$ref" | "$comment" => {
                value.is_string()
            }
            "uniqueItems" | "deprecated" | "readOnly" | "writeOnly" => value.is_boolean(),
            "dependentRequired" => value.as_object().is_some_and(|m| {
                m.values()
                    .all(|v| v.as_array().is_some_and(|l| l.iter().all(Value::is_string)))
            }),
            _ => true,
        };
        if !ok {
            return bad(key, &format!("is `{}`", short(&value.to_string())));
        }
    }
    let mut node = map.clone();
    for_each_subschema(&mut node, |key, sub| {
        path.push(key);
        let done = check_shapes(sub, path);
        path.pop();
        done
    })
}

/// Refuses a schema with an `allOf` no value can satisfy (branches with no common type or
/// value): kept as it is for an API that takes `allOf`, such a tool could never be called.
pub(crate) fn check_all_of_satisfiable(node: &Value, path: &mut Path) -> Result<(), String> {
    let Value::Object(map) = node else {
        return Ok(());
    };
    if map.contains_key("allOf")
        && let Err(e) = merge_all_of(map.clone())
        && (e.contains("no common") || e.contains("is `false`"))
    {
        return Err(format!(
            "at {}: {e}, so no arguments are valid",
            path.show()
        ));
    }
    let mut node = map.clone();
    for_each_subschema(&mut node, |key, sub| {
        path.push(key);
        let done = check_all_of_satisfiable(sub, path);
        path.pop();
        done
    })
}
