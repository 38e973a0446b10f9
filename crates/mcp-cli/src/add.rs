//! `add` and `add-json`: a server written into one layer, in the spellings of `claude mcp add`
//! (`-s`, `-t`, `-e`, `-H "Name: value"`, `NAME COMMAND_OR_URL [ARGS...]`), `codex mcp add`
//! (`--env`, `--url`, `--bearer-token-env-var`) and our own flags.
//!
//! A secret typed on the command line never lands in a file of the project's tree: written to
//! the project layer, each secret value (an environment value or header whose name says
//! credential, a `Bearer`/`Basic` header, an OAuth client secret) goes to the user's private
//! local file as a variable, and the project's entry reads it as `${VAR}`.

use std::path::Path;

use mcp_host::config::{
    self, NewServer, NewTransport, Scope, Secret, SecretSource, is_secret_name, variable_name,
};
use serde_json::{Value, json};

use crate::args::{self, AddArgs, EditScope, TransportArg};
use crate::exit::Failure;
use crate::manage::{Context, approve_added};
use crate::output::Out;

/// `add`.
pub(crate) fn add(cx: &Context, out: &Out, a: AddArgs) -> Result<(), Failure> {
    let server = new_server(&a)?;
    write(cx, out, &a.id, server, a.scope, a.replace)
}

/// `add-json ID JSON`: an entry as `.mcp.json` holds it.
pub(crate) fn add_json(
    cx: &Context,
    out: &Out,
    id: &str,
    text: &str,
    scope: Option<EditScope>,
    replace: bool,
) -> Result<(), Failure> {
    let value: Value = serde_json::from_str(text).map_err(|e| {
        Failure::usage(format!(
            "the entry of `{id}` is not valid JSON (line {}, column {})",
            e.line(),
            e.column()
        ))
        .hint(format!(
            "quote it for the shell: mcp-host add-json {id} '{{\"type\":\"http\",\"url\":\"https://host/mcp\"}}'"
        ))
    })?;
    let server = from_json(id, &value)?;
    write(cx, out, id, server, scope, replace)
}

/// One variable a secret was moved to.
struct Moved {
    field: String,
    variable: String,
}

/// Writes `server` as `id` into `scope` (default local), secrets kept out of the project's
/// tree, and reports it.
fn write(
    cx: &Context,
    out: &Out,
    id: &str,
    mut server: NewServer,
    scope: Option<EditScope>,
    replace: bool,
) -> Result<(), Failure> {
    let scope = scope.unwrap_or(EditScope::Local);
    let path = cx.file(scope)?;
    let mut moved = Vec::new();
    let mut private = None;
    if scope == EditScope::Project {
        let vars = keep_secrets_out(cx, id, &mut server, &mut moved)?;
        if !vars.is_empty() {
            let local = cx.file(EditScope::Local).map_err(|_| {
                Failure::usage(format!(
                    "server `{id}`: a secret given on the command line would be written into the project's tree, and there is no private file to keep it in (no HOME)"
                ))
                .hint("give it as a reference instead: --env-from NAME=VAR, --header-env NAME=VAR")
            })?;
            config::set_variables(&local, &vars)?;
            private = Some(local);
        }
    }
    config::add_server(&path, id, &server, replace)?;
    if scope == EditScope::Project {
        approve_added(cx, id, &path)?;
    }
    let kind = match &server.transport {
        NewTransport::Stdio { .. } => "stdio",
        NewTransport::Http {
            legacy_sse: true, ..
        } => "sse",
        _ => "http",
    };
    let scope_name = Scope::from(scope).as_str();
    if out.is_json() {
        out.json(&json!({
            "added": id,
            "transport": kind,
            "scope": scope_name,
            "file": path.display().to_string(),
            "replaced": replace,
            "secrets_moved": moved.iter().map(|m| json!({
                "field": m.field,
                "variable": m.variable,
                "file": private.as_deref().map(|p: &Path| p.display().to_string()),
            })).collect::<Vec<_>>(),
        }));
    } else {
        out.text(&format!(
            "added {kind} server `{id}` to {} ({scope_name})",
            path.display()
        ));
    }
    if let Some(private) = &private {
        for m in &moved {
            out.note(&format!(
                "warning: `{}` of `{id}` is a secret and {} is in the project's tree: its value went to your private file {} (variable {}), and the project file reads it as ${{{}}} (others set {} in their environment)",
                m.field,
                path.display(),
                private.display(),
                m.variable,
                m.variable,
                m.variable
            ));
        }
    }
    if !out.is_json() {
        out.note(&format!("next: `mcp-host test {id}`"));
    }
    Ok(())
}

/// Replaces each secret value of `server` by a reference to a variable, returning the
/// variables to keep privately. A value that already reads a variable (`${…}`) is left alone.
fn keep_secrets_out(
    cx: &Context,
    id: &str,
    server: &mut NewServer,
    moved: &mut Vec<Moved>,
) -> Result<Vec<(String, Secret)>, Failure> {
    let taken = existing_variables(cx);
    let mut vars: Vec<(String, Secret)> = Vec::new();
    let name_for = |preferred: String, value: &str, vars: &[(String, Secret)]| -> String {
        let clash = |n: &str| {
            taken.iter().any(|(k, v)| k == n && v != value)
                || vars.iter().any(|(k, v)| k == n && v.secret() != value)
        };
        if clash(&preferred) {
            variable_name(&format!("{id}_{preferred}"))
        } else {
            preferred
        }
    };
    match &mut server.transport {
        NewTransport::Stdio { env, .. } => {
            for (k, v) in env.iter_mut() {
                let SecretSource::Plain(s) = v else { continue };
                if !(is_secret_name(k) || looks_secret(s.secret())) || reads_variable(s.secret()) {
                    continue;
                }
                let var = name_for(variable_name(k), s.secret(), &vars);
                vars.push((var.clone(), s.clone()));
                moved.push(Moved {
                    field: format!("env.{k}"),
                    variable: var.clone(),
                });
                *v = SecretSource::Plain(Secret::new(format!("${{{var}}}")));
            }
        }
        NewTransport::Http { headers, .. } => {
            for (k, v) in headers.iter_mut() {
                let SecretSource::Plain(s) = v else { continue };
                let text = s.secret().to_owned();
                if !(is_secret_name(k) || looks_secret(&text)) || reads_variable(&text) {
                    continue;
                }
                let scheme = text.split_once(' ').map(|(s, _)| s).filter(|s| {
                    ["bearer", "basic", "token"]
                        .iter()
                        .any(|w| s.eq_ignore_ascii_case(w))
                });
                let (secret, prefix) = match scheme {
                    Some(s) => (text[s.len() + 1..].trim_start().to_owned(), format!("{s} ")),
                    None => (text.clone(), String::new()),
                };
                let var = name_for(variable_name(&format!("{id}_{k}")), &secret, &vars);
                vars.push((var.clone(), Secret::new(secret)));
                moved.push(Moved {
                    field: format!("headers.{k}"),
                    variable: var.clone(),
                });
                *v = SecretSource::Plain(Secret::new(format!("{prefix}${{{var}}}")));
            }
        }
        _ => {}
    }
    if let Some(SecretSource::Plain(s)) = &server.oauth.client_secret {
        let var = name_for(
            variable_name(&format!("{id}_CLIENT_SECRET")),
            s.secret(),
            &vars,
        );
        vars.push((var.clone(), s.clone()));
        moved.push(Moved {
            field: "oauth.client_secret".to_owned(),
            variable: var.clone(),
        });
        server.oauth.client_secret = Some(SecretSource::Env(var));
    }
    Ok(vars)
}

/// The variables the local file already keeps, so that a new secret does not overwrite
/// another server's under the same name.
fn existing_variables(cx: &Context) -> Vec<(String, String)> {
    let Some(path) = cx.paths.local.as_deref() else {
        return Vec::new();
    };
    let Ok(bytes) = std::fs::read(path) else {
        return Vec::new();
    };
    let Ok(Value::Object(top)) = serde_json::from_slice::<Value>(&bytes) else {
        return Vec::new();
    };
    match top.get("variables") {
        Some(Value::Object(vars)) => vars
            .iter()
            .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
            .collect(),
        _ => Vec::new(),
    }
}

/// A value that is a credential whatever its name: an HTTP authorization with a scheme.
fn looks_secret(value: &str) -> bool {
    let lower = value.to_ascii_lowercase();
    lower.starts_with("bearer ") || lower.starts_with("basic ")
}

/// Whether `text` already reads a variable (`${…}`, not escaped as `$${`).
fn reads_variable(text: &str) -> bool {
    let b = text.as_bytes();
    (0..b.len())
        .any(|i| b[i] == b'$' && b.get(i + 1) == Some(&b'{') && (i == 0 || b[i - 1] != b'$'))
}

/// An `.mcp.json` entry (`type`, `command`, `args`, `env`, `cwd`, `url`, `headers`) as the
/// server to write; anything else is refused, naming the field.
fn from_json(id: &str, value: &Value) -> Result<NewServer, Failure> {
    let Value::Object(m) = value else {
        return Err(Failure::usage(format!(
            "the entry of `{id}` must be a JSON object"
        )));
    };
    let bad =
        |field: &str, what: &str| Failure::usage(format!("the entry of `{id}`: `{field}` {what}"));
    for key in m.keys() {
        if !["type", "command", "args", "env", "cwd", "url", "headers"].contains(&key.as_str()) {
            return Err(bad(
                key,
                "is not known (known: type, command, args, env, cwd, url, headers)",
            ));
        }
    }
    let string = |field: &str| -> Result<Option<String>, Failure> {
        match m.get(field) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(bad(field, "must be a string")),
        }
    };
    let pairs = |field: &str| -> Result<Vec<(String, SecretSource)>, Failure> {
        match m.get(field) {
            None => Ok(Vec::new()),
            Some(Value::Object(o)) => o
                .iter()
                .map(|(k, v)| match v {
                    Value::String(s) => {
                        Ok((k.clone(), SecretSource::Plain(Secret::new(s.clone()))))
                    }
                    _ => Err(bad(&format!("{field}.{k}"), "must be a string")),
                })
                .collect(),
            Some(_) => Err(bad(field, "must be an object of strings")),
        }
    };
    let kind = string("type")?;
    let url = string("url")?;
    let command = string("command")?;
    let http = match (kind.as_deref(), &url, &command) {
        (Some("http" | "streamable-http" | "streamableHttp"), _, _) => Some(false),
        (Some("sse"), _, _) => Some(true),
        (Some("stdio"), _, _) => None,
        (Some(other), _, _) => {
            return Err(bad("type", &format!("`{other}` is not stdio, http or sse")));
        }
        (None, Some(_), None) => Some(false),
        (None, _, _) => None,
    };
    let server = match http {
        Some(legacy_sse) => {
            let url = url.ok_or_else(|| bad("url", "is missing"))?;
            if command.is_some() || m.contains_key("args") || m.contains_key("env") {
                return Err(bad("command", "belongs to a stdio entry, not an HTTP one"));
            }
            let mut s = NewServer::http(url);
            if let NewTransport::Http {
                headers,
                legacy_sse: sse,
                ..
            } = &mut s.transport
            {
                *headers = pairs("headers")?;
                *sse = legacy_sse;
            }
            s
        }
        None => {
            let command = command.ok_or_else(|| bad("command", "is missing"))?;
            if url.is_some() || m.contains_key("headers") {
                return Err(bad("url", "belongs to an HTTP entry, not a stdio one"));
            }
            let args = match m.get("args") {
                None => Vec::new(),
                Some(Value::Array(a)) => a
                    .iter()
                    .map(|v| v.as_str().map(str::to_owned))
                    .collect::<Option<Vec<_>>>()
                    .ok_or_else(|| bad("args", "must be an array of strings"))?,
                Some(_) => return Err(bad("args", "must be an array of strings")),
            };
            let mut s = NewServer::stdio(command, args);
            if let NewTransport::Stdio { env, cwd, .. } = &mut s.transport {
                *env = pairs("env")?;
                *cwd = string("cwd")?;
            }
            s
        }
    };
    Ok(server)
}

/// The entry `add`'s flags describe, or a usage error that says which flag is missing or
/// does not belong.
fn new_server(a: &AddArgs) -> Result<NewServer, Failure> {
    let http_flags = a.url.is_some()
        || !a.header.is_empty()
        || !a.header_env.is_empty()
        || a.bearer_token_env_var.is_some()
        || a.oauth_authorization_url.is_some()
        || a.oauth_token_url.is_some()
        || a.oauth_registration_url.is_some()
        || a.oauth_client_id.is_some()
        || a.oauth_client_secret.is_some()
        || a.oauth_client_secret_env.is_some()
        || a.oauth_scope.is_some();
    let stdio_flags = a.command.is_some()
        || !a.arg.is_empty()
        || a.cwd.is_some()
        || !a.env.is_empty()
        || !a.env_from.is_empty();
    let positional: Vec<String> = a.target.iter().chain(&a.command_line).cloned().collect();
    let transport = match (a.transport, positional.is_empty()) {
        (Some(t), true) => t,
        (t, false) => {
            if a.url.is_some() || a.command.is_some() {
                return Err(Failure::usage(
                    "give either the shorthand (a URL, or a command and its arguments) or --url/--command, not both",
                ));
            }
            return shorthand(a, t, &positional, http_flags, stdio_flags);
        }
        (None, true) if a.url.is_some() && !stdio_flags => TransportArg::Http,
        (None, true) if a.command.is_some() && !http_flags => TransportArg::Stdio,
        (None, true) => {
            return Err(Failure::usage(format!(
                "server `{}` needs a URL or a command",
                a.id
            ))
            .hint("e.g. `mcp-host add ID https://host/mcp`, `mcp-host add ID -- COMMAND ARGS…`, or --transport with --url/--command"));
        }
    };
    let mut server = match transport {
        TransportArg::Http | TransportArg::Sse => {
            if stdio_flags {
                return Err(Failure::usage(
                    "--command, --arg, --cwd, --env and --env-from belong to --transport stdio",
                ));
            }
            let url = a.url.clone().ok_or_else(|| {
                Failure::usage(format!(
                    "--transport http needs a URL for server `{}`",
                    a.id
                ))
                .hint(format!("mcp-host add -t http {} https://host/mcp", a.id))
            })?;
            http_server(url, transport == TransportArg::Sse)
        }
        TransportArg::Stdio => {
            if http_flags {
                return Err(Failure::usage(
                    "--url, --header, --header-env, --bearer-token-env-var and --oauth-* belong to --transport http",
                ));
            }
            let command = a.command.clone().ok_or_else(|| {
                Failure::usage(format!(
                    "--transport stdio needs --command for server `{}`",
                    a.id
                ))
            })?;
            NewServer::stdio(command, a.arg.clone())
        }
    };
    fill(&mut server, a)?;
    Ok(server)
}

fn http_server(url: String, legacy_sse: bool) -> NewServer {
    let mut server = NewServer::http(url);
    if let NewTransport::Http { legacy_sse: l, .. } = &mut server.transport {
        *l = legacy_sse;
    }
    server
}

/// `add ID URL`, `add ID COMMAND ARGS…`, `add ID -- COMMAND ARGS…` or `add ID 'COMMAND ARGS'`
/// (seed 003's detection for one string), with `-t` saying which where given.
fn shorthand(
    a: &AddArgs,
    transport: Option<TransportArg>,
    positional: &[String],
    http_flags: bool,
    stdio_flags: bool,
) -> Result<NewServer, Failure> {
    let (first, rest) = positional
        .split_first()
        .ok_or_else(|| Failure::usage("give a URL or a command"))?;
    let mut server = match transport {
        Some(t @ (TransportArg::Http | TransportArg::Sse)) => {
            if !rest.is_empty() {
                return Err(Failure::usage(format!(
                    "--transport {} takes one URL, not a command line",
                    if t == TransportArg::Sse {
                        "sse"
                    } else {
                        "http"
                    }
                )));
            }
            let spec = NewServer::from_spec(first)
                .map_err(|e| Failure::usage(format!("server `{}`: {e}", a.id)))?;
            match spec.transport {
                NewTransport::Http { url, .. } => http_server(url, t == TransportArg::Sse),
                _ => {
                    return Err(Failure::usage(format!(
                        "server `{}`: `--transport http` needs an http(s) URL",
                        a.id
                    )));
                }
            }
        }
        Some(TransportArg::Stdio) => NewServer::stdio(first.clone(), rest.to_vec()),
        None if rest.is_empty() && a.command_line.is_empty() => NewServer::from_spec(first)
            .map_err(|e| Failure::usage(format!("server `{}`: {e}", a.id)))?,
        None => NewServer::stdio(first.clone(), rest.to_vec()),
    };
    let is_stdio = matches!(server.transport, NewTransport::Stdio { .. });
    if is_stdio && http_flags {
        return Err(Failure::usage(
            "HTTP flags (--header, --bearer-token-env-var, --oauth-*) were given for a command",
        ));
    }
    if !is_stdio && stdio_flags {
        return Err(Failure::usage(
            "stdio flags (--arg, --cwd, --env) were given for a URL",
        ));
    }
    if is_stdio && !a.arg.is_empty() {
        return Err(Failure::usage(
            "with the shorthand, put the arguments after the command",
        ));
    }
    fill(&mut server, a)?;
    Ok(server)
}

/// The flags shared by every form: secrets, limits, OAuth.
fn fill(server: &mut NewServer, a: &AddArgs) -> Result<(), Failure> {
    let plain = |pairs: Vec<(String, String)>| {
        pairs
            .into_iter()
            .map(|(k, v)| (k, SecretSource::Plain(Secret::new(v))))
            .collect::<Vec<_>>()
    };
    let refs = |pairs: Vec<(String, String)>| {
        pairs
            .into_iter()
            .map(|(k, v)| (k, SecretSource::Env(v)))
            .collect::<Vec<_>>()
    };
    match &mut server.transport {
        NewTransport::Stdio { cwd, env, .. } => {
            *cwd = a.cwd.clone();
            env.extend(plain(args::pairs("env", &a.env).map_err(Failure::usage)?));
            env.extend(refs(
                args::pairs("env-from", &a.env_from).map_err(Failure::usage)?,
            ));
        }
        NewTransport::Http { headers, .. } => {
            headers.extend(plain(args::headers(&a.header).map_err(Failure::usage)?));
            headers.extend(refs(
                args::pairs("header-env", &a.header_env).map_err(Failure::usage)?,
            ));
            if let Some(var) = &a.bearer_token_env_var {
                if !var.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') || var.is_empty() {
                    return Err(Failure::usage(
                        "--bearer-token-env-var takes a variable name (letters, digits and `_`)",
                    ));
                }
                if headers
                    .iter()
                    .any(|(k, _)| k.eq_ignore_ascii_case("authorization"))
                {
                    return Err(Failure::usage(
                        "give --bearer-token-env-var or an Authorization header, not both",
                    ));
                }
                headers.push((
                    "Authorization".to_owned(),
                    SecretSource::Plain(Secret::new(format!("Bearer ${{{var}}}"))),
                ));
            }
        }
        _ => {}
    }
    server.enabled = a.enabled;
    server.request_timeout_ms = a.request_timeout_ms;
    let o = &mut server.oauth;
    o.authorization_url = a.oauth_authorization_url.clone();
    o.token_url = a.oauth_token_url.clone();
    o.registration_url = a.oauth_registration_url.clone();
    o.client_id = a.oauth_client_id.clone();
    o.scope = a.oauth_scope.clone();
    o.client_secret = match (&a.oauth_client_secret, &a.oauth_client_secret_env) {
        (Some(_), Some(_)) => {
            return Err(Failure::usage(
                "give --oauth-client-secret or --oauth-client-secret-env, not both",
            ));
        }
        (Some(s), None) => Some(SecretSource::Plain(Secret::new(s.clone()))),
        (None, Some(var)) => Some(SecretSource::Env(var.clone())),
        (None, None) => None,
    };
    Ok(())
}
