//! Zed's `settings.json` (JSON with comments): `context_servers`. A custom server is
//! `{"command": "...", "args": [...], "env": {...}}` (older settings nest them as
//! `"command": {"path", "args", "env"}`) or `{"url": "...", "headers": {...}}`; one provided
//! by a Zed extension (`"source": "extension"`, or only `settings`) is started by that
//! extension's code and has no command to carry over. Zed does not expand variables.

use serde_json::{Map, Value};

use super::{Found, ImportError, Places, Sink};

const KNOWN: &[&str] = &[
    "source", "command", "args", "env", "url", "headers", "enabled", "settings",
];

pub(super) fn read(
    text: &str,
    _places: &Places<'_>,
    sink: &mut Sink<'_>,
) -> Result<(), ImportError> {
    let doc = super::parse_jsonc(text, sink)?;
    let Value::Object(top) = doc else {
        return Err(sink.shape_error("", "the file is not a JSON object"));
    };
    super::server_table(
        sink,
        top.get("context_servers"),
        "context_servers",
        "an object",
        |sink, id, entry| {
            if let Some(f) = server(sink, id, entry) {
                sink.found.push(f);
            }
        },
    )
}

fn server(sink: &mut Sink<'_>, id: &str, entry: &Map<String, Value>) -> Option<Found> {
    let source = entry.get("source").and_then(Value::as_str);
    let has_command = entry.contains_key("command");
    let has_url = entry.contains_key("url");
    if source == Some("extension") || (!has_command && !has_url) {
        sink.skip(
            Some(id),
            None,
            "a Zed extension starts this server with its own code: there is no command to carry over",
        );
        return None;
    }
    let mut f = Found {
        id: id.to_owned(),
        location: format!("context_servers.{id}"),
        ..Found::default()
    };
    match entry.get("command") {
        // Older settings: `"command": {"path", "args", "env"}`.
        Some(Value::Object(cmd)) => {
            super::unknown_members(
                sink,
                id,
                entry,
                &["source", "command", "settings", "enabled"],
            );
            f.command = super::string(sink, id, "command.path", cmd.get("path"))
                .map(|s| super::literal(&s));
            f.args = super::strings(sink, id, "command.args", cmd.get("args"), super::literal);
            f.env = super::string_map(sink, id, "command.env", cmd.get("env"), super::literal);
        }
        _ => {
            super::unknown_members(sink, id, entry, KNOWN);
            f.command = super::string(sink, id, "command", entry.get("command"))
                .map(|s| super::literal(&s));
            f.args = super::strings(sink, id, "args", entry.get("args"), super::literal);
            f.env = super::string_map(sink, id, "env", entry.get("env"), super::literal);
            f.url = super::string(sink, id, "url", entry.get("url")).map(|s| super::literal(&s));
            f.headers =
                super::string_map(sink, id, "headers", entry.get("headers"), super::literal);
        }
    }
    if entry.contains_key("settings") {
        sink.skip(
            Some(id),
            Some("settings"),
            "settings for a Zed extension's own code; a server does not read them",
        );
    }
    if let Some(Value::Bool(e)) = entry.get("enabled") {
        f.enabled = Some(*e);
    }
    Some(f)
}
