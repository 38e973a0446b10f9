//! goose's `config.yaml`: `extensions`, a map of name to extension. `type: stdio` has `cmd`,
//! `args`, `envs` (values) and `env_keys` (names of secrets goose keeps in the OS keyring or
//! its `secrets.yaml`, which become our environment references); `type: streamable_http`
//! (and the older `sse`) has `uri` and `headers`. `builtin`, `platform`, `frontend` and
//! `inline_python` extensions run inside goose and have nothing to carry over. goose does not
//! expand variables.

use saphyr::{LoadableYamlNode, ScalarOwned, YamlOwned};
use serde_json::{Map, Value, json};

use super::{Found, ImportError, Sink};

pub(super) fn read(text: &str, sink: &mut Sink<'_>) -> Result<(), ImportError> {
    let docs = YamlOwned::load_from_str(text).map_err(|e| {
        let m = e.marker();
        ImportError::Parse {
            path: sink.file.to_path_buf(),
            line: m.line(),
            column: m.col() + 1,
            message: format!("invalid YAML: {}", e.info()),
        }
    })?;
    let Some(doc) = docs.into_iter().next() else {
        return Ok(());
    };
    let doc = to_json(doc);
    super::server_table(
        sink,
        doc.get("extensions"),
        "extensions",
        "a mapping",
        |sink, id, entry| {
            if let Some(f) = extension(sink, id, entry) {
                sink.found.push(f);
            }
        },
    )
}

const KNOWN: &[&str] = &[
    "type",
    "name",
    "enabled",
    "cmd",
    "args",
    "envs",
    "env_keys",
    "uri",
    "headers",
    "timeout",
    "description",
    "bundled",
    "display_name",
];

fn extension(sink: &mut Sink<'_>, id: &str, entry: &Map<String, Value>) -> Option<Found> {
    let kind = match entry.get("type").and_then(Value::as_str) {
        Some("stdio") => "stdio",
        Some("streamable_http") => "http",
        Some("sse") => "sse",
        Some(other @ ("builtin" | "platform" | "frontend" | "inline_python")) => {
            sink.skip(
                Some(id),
                None,
                &format!(
                    "a goose `{other}` extension runs inside goose, not as an MCP server of its own"
                ),
            );
            return None;
        }
        _ => {
            sink.skip(Some(id), None, "its `type` is not one goose documents");
            return None;
        }
    };
    super::unknown_members(sink, id, entry, KNOWN);
    let lit = super::literal;
    let mut f = Found {
        id: id.to_owned(),
        location: format!("extensions.{id}"),
        kind: Some(kind),
        ..Found::default()
    };
    f.command = super::string(sink, id, "cmd", entry.get("cmd")).map(|s| lit(&s));
    f.args = super::strings(sink, id, "args", entry.get("args"), lit);
    f.env = super::string_map(sink, id, "envs", entry.get("envs"), lit);
    for key in super::strings(sink, id, "env_keys", entry.get("env_keys"), str::to_owned) {
        f.env_refs.push((key.clone(), key.clone()));
        f.needs.push((
            key.clone(),
            format!("env.{key}"),
            "goose keeps this secret in its own store (the OS keyring or secrets.yaml)".to_owned(),
        ));
    }
    f.url = super::string(sink, id, "uri", entry.get("uri")).map(|s| lit(&s));
    f.headers = super::string_map(sink, id, "headers", entry.get("headers"), lit);
    if let Some(Value::Bool(e)) = entry.get("enabled") {
        f.enabled = Some(*e);
    }
    if let Some(secs) = entry.get("timeout").and_then(Value::as_u64) {
        f.request_timeout_ms = Some(secs.saturating_mul(1000));
    }
    Some(f)
}

/// A YAML document as JSON: mappings with string keys, scalars as their JSON kinds. Keys that
/// are not strings are written as their YAML text.
fn to_json(y: YamlOwned) -> Value {
    match y {
        YamlOwned::Value(s) => scalar(s),
        YamlOwned::Representation(text, _, _) => Value::String(text),
        YamlOwned::Sequence(items) => Value::Array(items.into_iter().map(to_json).collect()),
        YamlOwned::Mapping(m) => Value::Object(
            m.into_iter()
                .map(|(k, v)| {
                    let key = match to_json(k) {
                        Value::String(s) => s,
                        other => other.to_string(),
                    };
                    (key, to_json(v))
                })
                .collect(),
        ),
        YamlOwned::Tagged(_, inner) => to_json(*inner),
        YamlOwned::Alias(_) | YamlOwned::BadValue => Value::Null,
    }
}

fn scalar(s: ScalarOwned) -> Value {
    match s {
        ScalarOwned::Null => Value::Null,
        ScalarOwned::Boolean(b) => json!(b),
        ScalarOwned::Integer(i) => json!(i),
        ScalarOwned::FloatingPoint(f) => json!(f.into_inner()),
        ScalarOwned::String(s) => json!(s),
    }
}
