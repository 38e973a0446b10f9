//! One thing shown: `get ID` (and `list ID`), one configured server as `claude mcp get` and
//! `codex mcp get` show it, without starting it; `tools ID TOOL`, one tool's arguments in text;
//! and `login ID --scopes` (Codex's spelling), a login asking for the scopes given.

use mcp_host::config::{ConfiguredServer, Scope, Transport};
use serde_json::{Value, json};

use crate::args::ReadScope;
use crate::exit::Failure;
use crate::live;
use crate::manage::{self, Context};
use crate::output::{Out, clean};

/// `get ID`; the old `get ID PROMPT` (now `prompt get`) is refused, saying so.
pub(crate) fn get(
    cx: &Context,
    out: &Out,
    id: &str,
    prompt: Option<&str>,
    args: &[(String, String)],
) -> Result<(), Failure> {
    if prompt.is_some() || !args.is_empty() {
        let prompt = prompt.unwrap_or("PROMPT");
        return Err(Failure::usage(
            "`get` shows one configured server (as `claude mcp get` does); getting a prompt is `prompt get`",
        )
        .hint(format!("mcp-host prompt get {id} {prompt}")));
    }
    show(cx, out, id, ReadScope::Effective)
}

/// `get ID`, `list ID`: the server as configured in `scope`.
pub(crate) fn show(cx: &Context, out: &Out, id: &str, scope: ReadScope) -> Result<(), Failure> {
    if !mcp_host::config::is_valid_server_id(id) {
        return Err(Failure::from(
            mcp_host::config::ConfigError::InvalidServerId { id: id.to_owned() },
        ));
    }
    let loaded = cx.load(scope);
    manage::report_problems(out, &loaded);
    let Some(s) = loaded.server(id) else {
        if let Some(r) = loaded.rejected.iter().find(|r| r.id == id) {
            return Err(Failure::config(format!(
                "server `{id}` in {} has an invalid entry (see above)",
                r.file.display()
            )));
        }
        let ids: Vec<&str> = loaded.servers.iter().map(|s| s.id.as_str()).collect();
        let failure = Failure::config(format!("no server `{id}` is configured"));
        return Err(if ids.is_empty() {
            failure.hint("no servers are configured: add one with `mcp-host add`")
        } else {
            failure.hint(format!("configured servers: {}", ids.join(", ")))
        });
    };
    let approved = match s.source {
        Scope::Project => Some(crate::trust::approvals(cx)?.approves(s)),
        _ => None,
    };
    if out.is_json() {
        out.json(&server_json(s, approved));
        return Ok(());
    }
    let mut lines = vec![
        ("scope", s.source.as_str().to_owned()),
        ("file", s.file.display().to_string()),
        ("transport", s.transport.kind().to_owned()),
        ("enabled", manage::yes_no(s.enabled)),
    ];
    if let Some(a) = approved {
        let text = if a {
            "yes".to_owned()
        } else {
            format!("no: `mcp-host trust {id}` after reading what it runs")
        };
        lines.push(("approved", text));
    }
    lines.extend(crate::trust::describe(s));
    if let Transport::Http(_) = &s.transport {
        lines.push((
            "oauth",
            if s.oauth.is_some() {
                "configured".to_owned()
            } else {
                "discovered when the server asks".to_owned()
            },
        ));
    }
    lines.push((
        "timeout",
        format!("{} ms per request", s.request_timeout.as_millis()),
    ));
    lines.push((
        "remove",
        format!("mcp-host remove {id} --scope {}", s.source.as_str()),
    ));
    let width = lines.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
    let mut text = format!("{id}\n");
    for (k, v) in lines {
        text.push_str(&format!("  {k:width$}  {v}\n"));
    }
    out.text(text.trim_end());
    Ok(())
}

fn server_json(s: &ConfiguredServer, approved: Option<bool>) -> Value {
    let mut v = json!({
        "id": s.id,
        "scope": s.source.as_str(),
        "file": s.file.display().to_string(),
        "transport": s.transport.kind(),
        "target": manage::target(s),
        "enabled": s.enabled,
        "request_timeout_ms": s.request_timeout.as_millis() as u64,
        "oauth": s.oauth.is_some(),
        "reads_env": s.reads_env,
    });
    match &s.transport {
        Transport::Stdio(t) => {
            v["env"] = json!(t.env.iter().map(|(k, _)| k).collect::<Vec<_>>());
        }
        Transport::Http(h) => {
            v["headers"] = json!(h.headers.iter().map(|(k, _)| k).collect::<Vec<_>>());
        }
        _ => {}
    }
    if let Some(a) = approved {
        v["approved"] = json!(a);
    }
    v
}

/// `tools ID TOOL`: one tool's description and arguments, from its input schema.
pub(crate) async fn tool(cx: &Context, out: &Out, id: &str, name: &str) -> Result<(), Failure> {
    let loaded = cx.load(ReadScope::Effective);
    manage::report_problems(out, &loaded);
    let live = live::start(cx, out, loaded, Some(id), Default::default()).await?;
    let outcome = show_tool(out, &live.host, id, name);
    live.host.shutdown().await;
    outcome
}

fn show_tool(out: &Out, host: &mcp_host::Host, id: &str, name: &str) -> Result<(), Failure> {
    live::ready(host, id)?;
    let catalog = host.catalog();
    let tools: Vec<_> = catalog.tools().iter().filter(|t| t.server == id).collect();
    let Some(t) = tools.iter().find(|t| t.tool == name || t.name == name) else {
        let names: Vec<String> = tools.iter().map(|t| clean(&t.tool)).collect();
        return Err(
            Failure::usage(format!("server `{id}` has no tool `{}`", clean(name))).hint(
                if names.is_empty() {
                    format!("server `{id}` offers no tools")
                } else {
                    format!("its tools: {}", names.join(", "))
                },
            ),
        );
    };
    if out.is_json() {
        out.json(&json!({
            "name": t.name,
            "server": t.server,
            "tool": clean(&t.tool),
            "description": t.description,
            "input_schema": *t.parameters,
        }));
        return Ok(());
    }
    let mut text = format!("{} (exposed as {})\n", clean(&t.tool), t.name);
    if !t.description.is_empty() {
        for line in clean(&t.description).lines() {
            text.push_str(&format!("  {line}\n"));
        }
    }
    let mut rows = Vec::new();
    schema_rows(&t.parameters, "", &mut rows, 0);
    if rows.is_empty() {
        text.push_str("\nno arguments\n");
    } else {
        text.push_str("\narguments:\n");
        let width = rows.iter().map(|r| r.0.len()).max().unwrap_or(0);
        let twidth = rows.iter().map(|r| r.1.len()).max().unwrap_or(0);
        for (path, ty, rest) in rows {
            let line = format!("  {path:width$}  {ty:twidth$}  {rest}");
            text.push_str(line.trim_end());
            text.push('\n');
        }
    }
    text.push_str(&format!(
        "\ncall it: mcp-host call {id} {} --args '{{…}}'",
        clean(&t.tool)
    ));
    out.text(&text);
    Ok(())
}

/// One line per property of an object schema (nested objects and arrays of objects below
/// their parent, as `parent.child` and `parent[].child`): its path, its type, then whether it
/// is required, its description, allowed values and default.
fn schema_rows(
    schema: &Value,
    prefix: &str,
    rows: &mut Vec<(String, String, String)>,
    depth: usize,
) {
    if depth > 4 {
        return;
    }
    let Some(props) = schema.get("properties").and_then(Value::as_object) else {
        return;
    };
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    for (name, p) in props {
        let path = format!("{prefix}{}", clean(name));
        let mut rest = Vec::new();
        if required.contains(&name.as_str()) {
            rest.push("required".to_owned());
        }
        if let Some(d) = p.get("description").and_then(Value::as_str) {
            rest.push(clean(d).replace('\n', " "));
        }
        if let Some(e) = p.get("enum").and_then(Value::as_array) {
            let values: Vec<String> = e.iter().map(|v| clean(&v.to_string())).collect();
            rest.push(format!("one of {}", values.join(", ")));
        }
        if let Some(d) = p.get("default") {
            rest.push(format!("default {}", clean(&d.to_string())));
        }
        rows.push((path.clone(), type_of(p), rest.join("; ")));
        schema_rows(p, &format!("{path}."), rows, depth + 1);
        if let Some(items) = p.get("items") {
            schema_rows(items, &format!("{path}[]."), rows, depth + 1);
        }
    }
}

/// A schema's type as a word: `string`, `integer[]`, `string|null`, `object`, or `any`.
fn type_of(p: &Value) -> String {
    let base = match p.get("type") {
        Some(Value::String(t)) => t.clone(),
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(Value::as_str)
            .collect::<Vec<_>>()
            .join("|"),
        _ if p.get("anyOf").is_some() || p.get("oneOf").is_some() => "one of several".to_owned(),
        _ => "any".to_owned(),
    };
    if base == "array"
        && let Some(items) = p.get("items")
    {
        return format!("{}[]", type_of(items));
    }
    clean(&base)
}

/// A failure that suggests `mcp-host login ID` for a server that sends a configured
/// `Authorization` header gets a hint that helps instead: `login` refuses such a server, and
/// what the server refused is the header's value.
pub(crate) fn login_hint(cx: &Context, mut failure: Failure) -> Failure {
    let Some(id) = failure.login_for.clone() else {
        return failure;
    };
    let loaded = cx.load(ReadScope::Effective);
    let Some(s) = loaded.server(&id) else {
        return failure;
    };
    if let Transport::Http(h) = &s.transport
        && h.headers
            .iter()
            .any(|(k, _)| k.eq_ignore_ascii_case("authorization"))
    {
        failure.hint = Some(format!(
            "the server refused the Authorization header `{id}` sends, configured in {}: fix its value there (`mcp-host get {id}` shows the entry); `mcp-host login` is for servers without one",
            s.file.display()
        ));
    }
    failure
}

/// `login ID --scopes a,b`: the login asks for these scopes instead of the configured or
/// discovered ones.
pub(crate) async fn login(
    cx: &Context,
    out: &Out,
    id: &str,
    no_browser: bool,
    device: bool,
    scopes: &[String],
) -> Result<(), Failure> {
    let mut loaded = cx.load(ReadScope::Effective);
    manage::report_problems(out, &loaded);
    let wanted: Vec<&str> = scopes
        .iter()
        .map(|s| s.trim())
        .filter(|s| !s.is_empty())
        .collect();
    if let Some(s) = loaded.servers.iter_mut().find(|s| s.id == id) {
        let mut oauth = s.oauth.clone().unwrap_or_default();
        oauth.scope = Some(wanted.join(" "));
        s.oauth = Some(oauth);
    }
    live::login_to(cx, out, loaded, id, no_browser, device).await
}
