//! Claude Desktop's `claude_desktop_config.json`, Claude Code's `~/.claude.json` and the
//! project `.mcp.json`: `mcpServers` objects (and, in `~/.claude.json`, the local scope's
//! `projects.<path>.mcpServers` for this project). Claude Code expands `${VAR}` and
//! `${VAR:-default}` exactly as our files do, so strings are taken as written.

use serde_json::{Map, Value};

use super::{Found, ImportError, Places, Sink};

/// The members of an `mcpServers` entry that have an equivalent here.
const KNOWN: &[&str] = &[
    "type", "command", "args", "env", "url", "headers", "cwd", "disabled",
];

pub(super) fn read(
    text: &str,
    places: &Places<'_>,
    sink: &mut Sink<'_>,
) -> Result<(), ImportError> {
    let doc = super::parse_json(text, sink)?;
    let Value::Object(top) = doc else {
        return Err(sink.shape_error("", "the file is not a JSON object"));
    };
    mcp_servers(sink, top.get("mcpServers"), "mcpServers")?;
    // `~/.claude.json`'s local scope: this project's private servers.
    if let Some(Value::Object(projects)) = top.get("projects") {
        let here = places.project_dir.to_string_lossy();
        let canonical = places
            .project_dir
            .canonicalize()
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_else(|_| here.clone().into_owned());
        for (path, project) in projects {
            if *path != here && *path != canonical {
                continue;
            }
            mcp_servers(
                sink,
                project.get("mcpServers"),
                &format!("projects.{path}.mcpServers"),
            )?;
        }
    }
    Ok(())
}

/// Reads every entry of an `mcpServers` object (the member `field`), its strings as written.
fn mcp_servers(
    sink: &mut Sink<'_>,
    servers: Option<&Value>,
    field: &str,
) -> Result<(), ImportError> {
    super::server_table(sink, servers, field, "an object", |sink, id, entry| {
        let location = format!("{field}.{id}");
        if let Some(f) = entry_of(sink, id, entry, &location, &|s| s.to_owned(), KNOWN) {
            sink.found.push(f);
        }
    })
}

/// One `mcpServers`-style entry (`command`/`args`/`env` or `url`/`headers`, `type`).
pub(super) fn entry_of(
    sink: &mut Sink<'_>,
    id: &str,
    entry: &Map<String, Value>,
    location: &str,
    translate: &dyn Fn(&str) -> String,
    known: &[&str],
) -> Option<Found> {
    super::unknown_members(sink, id, entry, known);
    let kind = match super::string(sink, id, "type", entry.get("type")).as_deref() {
        None => None,
        Some("stdio") => Some("stdio"),
        Some("http" | "streamable-http" | "streamableHttp") => Some("http"),
        Some("sse") => Some("sse"),
        Some(_) => {
            sink.skip(Some(id), None, "its `type` is not stdio, http or sse");
            return None;
        }
    };
    let mut f = Found {
        id: id.to_owned(),
        location: location.to_owned(),
        kind,
        ..Found::default()
    };
    f.command = super::string(sink, id, "command", entry.get("command")).map(|s| translate(&s));
    f.args = super::strings(sink, id, "args", entry.get("args"), translate);
    f.cwd = super::string(sink, id, "cwd", entry.get("cwd")).map(|s| translate(&s));
    f.env = super::string_map(sink, id, "env", entry.get("env"), translate);
    f.url = super::string(sink, id, "url", entry.get("url")).map(|s| translate(&s));
    f.headers = super::string_map(sink, id, "headers", entry.get("headers"), translate);
    if entry.get("disabled") == Some(&Value::Bool(true)) {
        f.enabled = Some(false);
    }
    Some(f)
}
