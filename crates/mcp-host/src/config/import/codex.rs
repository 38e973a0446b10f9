//! Codex's `config.toml` (`$CODEX_HOME/config.toml`, `~/.codex/config.toml`):
//! `[mcp_servers.NAME]` tables. Codex does not expand variables in them; instead it names
//! variables in members of their own (`env_vars`, `bearer_token_env_var`,
//! `env_http_headers`), which become our references.

use serde_json::{Map, Value};

use super::{Found, ImportError, Sink};

pub(super) fn read(text: &str, sink: &mut Sink<'_>) -> Result<(), ImportError> {
    let doc: Value = toml::from_str(text).map_err(|e| {
        let offset = e.span().map_or(0, |s| s.start);
        sink.parse_error(
            text,
            offset,
            &format!("invalid TOML: {}", e.message().trim()),
        )
    })?;
    super::server_table(
        sink,
        doc.get("mcp_servers"),
        "mcp_servers",
        "a table",
        |sink, id, entry| {
            let f = server(sink, id, entry);
            sink.found.push(f);
        },
    )
}

const KNOWN: &[&str] = &[
    "command",
    "args",
    "env",
    "env_vars",
    "cwd",
    "url",
    "bearer_token_env_var",
    "bearer_token",
    "http_headers",
    "env_http_headers",
    "enabled",
    "enabled_tools",
    "disabled_tools",
    "startup_timeout_sec",
    "startup_timeout_ms",
    "tool_timeout_sec",
];

fn server(sink: &mut Sink<'_>, id: &str, entry: &Map<String, Value>) -> Found {
    super::unknown_members(sink, id, entry, KNOWN);
    let lit = super::literal;
    let mut f = Found {
        id: id.to_owned(),
        location: format!("mcp_servers.{id}"),
        ..Found::default()
    };
    f.command = super::string(sink, id, "command", entry.get("command")).map(|s| lit(&s));
    f.args = super::strings(sink, id, "args", entry.get("args"), lit);
    f.env = super::string_map(sink, id, "env", entry.get("env"), lit);
    for name in super::strings(sink, id, "env_vars", entry.get("env_vars"), str::to_owned) {
        f.env_refs.push((name.clone(), name));
    }
    f.cwd = super::string(sink, id, "cwd", entry.get("cwd")).map(|s| lit(&s));
    f.url = super::string(sink, id, "url", entry.get("url")).map(|s| lit(&s));
    f.bearer_token_env_var = super::string(
        sink,
        id,
        "bearer_token_env_var",
        entry.get("bearer_token_env_var"),
    );
    // Codex refuses an inline `bearer_token`; a file may still have one. Its value is not
    // copied: the entry reads it from a variable instead.
    if entry.contains_key("bearer_token") {
        let var = format!(
            "{}_BEARER_TOKEN",
            super::header_variable(id, "").trim_end_matches('_')
        );
        f.needs.push((
            var.clone(),
            "bearer_token_env_var".to_owned(),
            "the source held the bearer token as a value, which is not copied".to_owned(),
        ));
        f.bearer_token_env_var.get_or_insert(var);
    }
    f.headers = super::string_map(sink, id, "http_headers", entry.get("http_headers"), lit);
    f.header_refs = super::string_map(
        sink,
        id,
        "env_http_headers",
        entry.get("env_http_headers"),
        str::to_owned,
    );
    if let Some(Value::Bool(e)) = entry.get("enabled") {
        f.enabled = Some(*e);
    }
    if entry.contains_key("enabled_tools") {
        f.enabled_tools = Some(super::strings(
            sink,
            id,
            "enabled_tools",
            entry.get("enabled_tools"),
            str::to_owned,
        ));
    }
    f.disabled_tools = super::strings(
        sink,
        id,
        "disabled_tools",
        entry.get("disabled_tools"),
        str::to_owned,
    );
    if let Some(secs) = entry.get("tool_timeout_sec").and_then(Value::as_f64)
        && secs > 0.0
        && secs.is_finite()
    {
        // Whole milliseconds; a timeout is never made shorter than one.
        f.request_timeout_ms = Some((secs * 1000.0).ceil().max(1.0) as u64);
    }
    for field in ["startup_timeout_sec", "startup_timeout_ms"] {
        if entry.contains_key(field) {
            sink.skip(
                Some(id),
                Some(field),
                "no start-up timeout here: a server's start is bounded by `request_timeout_ms` like every request",
            );
        }
    }
    f
}
