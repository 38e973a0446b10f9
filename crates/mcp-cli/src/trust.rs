//! Approving a project's servers: `trust`, `untrust`, and the question asked on a terminal
//! before a project server nobody approved would run. A project's files come with a
//! repository someone may have cloned; the library runs none of their servers without an
//! approval (`mcp_host::trust`), and this is where a person gives or withdraws one.

use mcp_host::config::{ConfiguredServer, LoadedConfig, Scope, Transport};
use mcp_host::oauth::Url;
use mcp_host::trust::{Approvals, TrustStore, changes_what_runs, quoted};
use serde_json::{Value, json};

use crate::args::ReadScope;
use crate::exit::{Code, Failure};
use crate::manage::{Context, target};
use crate::output::{Out, Table, ask, can_ask, cell};

/// This user's approvals file, if there is a place for it.
fn store(cx: &Context) -> Option<TrustStore> {
    TrustStore::default_path(&cx.paths).map(TrustStore::new)
}

/// The approvals of the current project (none when the user has no configuration directory).
pub(crate) fn approvals(cx: &Context) -> Result<Approvals, Failure> {
    match store(cx) {
        Some(store) => store
            .approvals(&cx.paths.project_dir)
            .map_err(|e| Failure::config(e.to_string())),
        None => Ok(Approvals::default()),
    }
}

/// Records the user's approval of `servers` in the current project.
pub(crate) fn approve<'a>(
    cx: &Context,
    servers: impl IntoIterator<Item = &'a ConfiguredServer>,
) -> Result<(), Failure> {
    approve_fingerprints(
        cx,
        servers
            .into_iter()
            .filter(|s| s.source == Scope::Project)
            .map(|s| (s.id.as_str(), s.fingerprint.as_str())),
    )
}

/// Records approvals by id and fingerprint (an entry not usable yet has no `ConfiguredServer`).
pub(crate) fn approve_fingerprints<'a>(
    cx: &Context,
    entries: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> Result<(), Failure> {
    let Some(store) = store(cx) else {
        return Err(Failure::config(
            "no place to keep approvals: set HOME, XDG_CONFIG_HOME or MCP_HOST_CONFIG",
        ));
    };
    store
        .approve_fingerprints(&cx.paths.project_dir, entries)
        .map_err(|e| Failure::new(Code::Other, e.to_string()))
}

/// What a project server would do if approved, one line per fact, nothing cut and nothing
/// passed raw to the terminal: the whole command line (each word quoted where it must be, see
/// `mcp_host::trust::quoted`), the directory, the value of every variable that changes what
/// runs (`mcp_host::trust::CHANGES_WHAT_RUNS`), flagged, and the names only of the others; or
/// the URL without its credentials and the names of the headers; the OAuth endpoints; and
/// every value it would take from the user's environment, by name.
pub(crate) fn describe(s: &ConfiguredServer) -> Vec<(&'static str, String)> {
    let mut lines = Vec::new();
    match &s.transport {
        Transport::Stdio(t) => {
            let words: Vec<String> = std::iter::once(&t.shown_command)
                .chain(&t.shown_args)
                .map(|w| quoted(w))
                .collect();
            lines.push(("runs", words.join(" ")));
            if let Some(dir) = &t.cwd {
                lines.push(("directory", quoted(&dir.to_string_lossy())));
            }
            let mut hidden = Vec::new();
            for (name, value) in &t.env {
                if !changes_what_runs(name) {
                    hidden.push(quoted(name));
                    continue;
                }
                let from = t.env_from.iter().find(|(n, _)| n == name);
                let shown = match from {
                    Some((_, var)) => format!(
                        "{} set to your own {} (not shown)",
                        quoted(name),
                        quoted(var)
                    ),
                    None => format!("{}={}", quoted(name), quoted(value.secret())),
                };
                lines.push(("environment", format!("{shown}  [changes what runs]")));
            }
            if !hidden.is_empty() {
                let values = if hidden.len() == 1 { "value" } else { "values" };
                lines.push((
                    "environment",
                    format!("{} ({values} not shown)", hidden.join(", ")),
                ));
            }
            if t.inherit_env {
                lines.push((
                    "inherits",
                    "your whole environment (every variable, tokens included)".to_owned(),
                ));
            }
        }
        Transport::Http(h) => {
            lines.push(("connects to", approval_url(&h.url)));
            if !h.headers.is_empty() {
                let names: Vec<&str> = h.headers.iter().map(|(k, _)| k.as_str()).collect();
                let values = if names.len() == 1 { "value" } else { "values" };
                lines.push((
                    "headers",
                    format!("{} ({values} not shown)", names.join(", ")),
                ));
            }
        }
        _ => {}
    }
    if let Some(o) = &s.oauth {
        // Where a login would send the user and the authorization code.
        let endpoints: Vec<String> = [
            ("authorization", &o.authorization_url),
            ("token", &o.token_url),
            ("registration", &o.registration_url),
        ]
        .into_iter()
        .filter_map(|(what, url)| url.as_ref().map(|u| format!("{what} {}", approval_url(u))))
        .collect();
        if !endpoints.is_empty() {
            lines.push(("oauth", endpoints.join(", ")));
        }
    }
    if !s.reads_env.is_empty() {
        let names: Vec<String> = s.reads_env.iter().map(|v| quoted(v)).collect();
        lines.push((
            "reads",
            format!("from your environment: {}", names.join(", ")),
        ));
    }
    lines
}

/// A URL as an approval shows it: whole, less what may be a credential. The user name and
/// password are left out (and said to be there), a path segment that is or may be a key is
/// `[redacted]` (`mcp_host::config::shown_path`), each query parameter keeps its name but not
/// its value (a parameter that is a bare word may be a key, and is hidden whole), and the
/// fragment, which is never sent, is left out. The `url` crate keeps the text
/// percent-encoded, so nothing in it reaches the terminal raw.
fn approval_url(url: &Url) -> String {
    let mut shown = format!("{}://{}", url.scheme(), url.host_str().unwrap_or(""));
    if let Some(port) = url.port() {
        shown.push_str(&format!(":{port}"));
    }
    shown.push_str(&mcp_host::config::shown_path(url));
    if let Some(query) = url.query() {
        let names: Vec<String> = query
            .split('&')
            .filter(|p| !p.is_empty())
            .map(|p| match p.split_once('=') {
                Some((name, _)) => format!("{name}=[hidden]"),
                None => "[hidden]".to_owned(),
            })
            .collect();
        shown.push('?');
        shown.push_str(&names.join("&"));
    }
    if !url.username().is_empty() || url.password().is_some() {
        shown.push_str(" (with credentials, not shown)");
    }
    shown
}

/// The approvals to start servers with. On a terminal, each enabled project server that would
/// start (only `only`, if given) and is not approved is shown and asked about first; an
/// approval is recorded. Elsewhere nothing is asked, and those servers stay in `error` at the
/// trust phase.
pub(crate) async fn review(
    cx: &Context,
    out: &Out,
    loaded: &LoadedConfig,
    only: Option<&str>,
) -> Result<Approvals, Failure> {
    let approvals = approvals(cx)?;
    let pending: Vec<&ConfiguredServer> = loaded
        .servers
        .iter()
        .filter(|s| s.enabled && only.is_none_or(|id| s.id == id) && !approvals.approves(s))
        .collect();
    if pending.is_empty() || !can_ask() {
        return Ok(approvals);
    }
    let mut approved = Vec::new();
    for s in pending {
        let changed = if approvals.knows(&s.id) {
            ", changed since you approved it"
        } else {
            ""
        };
        let mut question = format!(
            "the project file {} defines server `{}`{changed}:\n",
            s.file.display(),
            s.id
        );
        for (what, text) in describe(s) {
            question.push_str(&format!("  {what:<12} {text}\n"));
        }
        question.push_str("run it? (approve it for this project) [y/N] ");
        if ask(question).await {
            approved.push(s);
        } else {
            out.note(&format!(
                "not approved: `{}` will not run (`mcp-host trust {}` approves it later)",
                s.id, s.id
            ));
        }
    }
    approve(cx, approved)?;
    self::approvals(cx)
}

/// `trust`: without ids, the project's servers and whether each is approved; with ids (or
/// `--all`), approves them as they are written now.
pub(crate) fn trust(cx: &Context, out: &Out, ids: &[String], all: bool) -> Result<(), Failure> {
    let loaded = cx.load(ReadScope::Effective);
    let approvals = approvals(cx)?;
    let project: Vec<&ConfiguredServer> = loaded
        .servers
        .iter()
        .filter(|s| s.source == Scope::Project)
        .collect();
    if ids.is_empty() && !all {
        return show(out, &project, &approvals);
    }
    let mut chosen = Vec::new();
    for id in ids {
        match loaded.server(id) {
            Some(s) if s.source == Scope::Project => chosen.push(s),
            Some(_) => out.note(&format!(
                "`{id}` comes from your global file, which needs no approval"
            )),
            None => {
                return Err(Failure::config(format!("no server `{id}` is configured"))
                    .hint("`mcp-host trust` lists the project's servers"));
            }
        }
    }
    if all {
        chosen = project;
    }
    approve(cx, chosen.iter().copied())?;
    if out.is_json() {
        out.json(&json!({
            "project": cx.paths.project_dir.display().to_string(),
            "approved": chosen.iter().map(|s| entry_json(s, true)).collect::<Vec<_>>(),
        }));
    } else if chosen.is_empty() {
        out.text("no project server to approve");
    } else {
        for s in chosen {
            let mut text = format!("approved `{}` for this project:", s.id);
            for (what, line) in describe(s) {
                text.push_str(&format!("\n  {what:<12} {line}"));
            }
            out.text(&text);
        }
    }
    Ok(())
}

/// The project's servers and their approval.
fn show(out: &Out, project: &[&ConfiguredServer], approvals: &Approvals) -> Result<(), Failure> {
    let state = |s: &ConfiguredServer| {
        if approvals.approves(s) {
            "yes"
        } else if approvals.knows(&s.id) {
            "changed"
        } else {
            "no"
        }
    };
    if out.is_json() {
        out.json(&json!({
            "servers": project.iter().map(|s| {
                let mut v = entry_json(s, approvals.approves(s));
                v["state"] = json!(state(s));
                v
            }).collect::<Vec<_>>(),
        }));
        return Ok(());
    }
    if project.is_empty() {
        out.text("this project's files define no server");
        return Ok(());
    }
    let mut table = Table::new(&["ID", "APPROVED", "FILE", "RUNS OR CONNECTS TO"]);
    for s in project {
        table.row(vec![
            s.id.clone(),
            state(s).to_owned(),
            s.file.display().to_string(),
            cell(&target(s), 100),
        ]);
    }
    out.text(&table.render());
    if project.iter().any(|s| !approvals.approves(s)) {
        out.note("`mcp-host trust ID` shows what a server runs and approves it");
    }
    Ok(())
}

fn entry_json(s: &ConfiguredServer, approved: bool) -> Value {
    json!({
        "id": s.id,
        "file": s.file.display().to_string(),
        "approved": approved,
        "describe": describe(s).into_iter().map(|(k, v)| json!({"what": k, "text": v})).collect::<Vec<_>>(),
    })
}

/// `reset-project-choices`: withdraws every approval of this project's servers.
pub(crate) fn reset(cx: &Context, out: &Out) -> Result<(), Failure> {
    let removed = match store(cx) {
        Some(store) => store
            .revoke_all(&cx.paths.project_dir)
            .map_err(|e| Failure::new(Code::Other, e.to_string()))?,
        None => 0,
    };
    if out.is_json() {
        out.json(&json!({ "revoked": removed }));
    } else {
        out.text(&format!(
            "withdrew {removed} approval{} in this project: its servers run only once approved again (`mcp-host trust`)",
            if removed == 1 { "" } else { "s" }
        ));
    }
    Ok(())
}

/// `untrust`: withdraws the approval of a project server.
pub(crate) fn untrust(cx: &Context, out: &Out, id: &str) -> Result<(), Failure> {
    if !mcp_host::config::is_valid_server_id(id) {
        return Err(Failure::from(
            mcp_host::config::ConfigError::InvalidServerId { id: id.to_owned() },
        ));
    }
    let removed = match store(cx) {
        Some(store) => store
            .revoke(&cx.paths.project_dir, id)
            .map_err(|e| Failure::new(Code::Other, e.to_string()))?,
        None => false,
    };
    if out.is_json() {
        out.json(&json!({ "id": id, "revoked": removed }));
    } else if removed {
        out.text(&format!(
            "`{id}` is no longer approved in this project: it will not run until approved again"
        ));
    } else {
        out.text(&format!("`{id}` was not approved in this project"));
    }
    Ok(())
}
