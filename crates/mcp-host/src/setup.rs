//! From configuration to servers the host runs: each configured server becomes a
//! [`ServerEntry`], a refused one an entry in state `error` that says why, and the host-wide
//! options go into [`HostOptions`]. The one place where trust in a file's layer is decided.

use std::sync::Arc;

use mcp_protocol::schema::Implementation;

use crate::catalog::ToolFilter;
use crate::config::{ConfiguredServer, LoadedConfig, Scope};
use crate::entry::ServerEntry;
use crate::oauth::OAuthContext;
use crate::options::HostOptions;
use crate::permission::{Decision, Policy, ServerRules};
use crate::status::Phase;
use crate::trust::Approvals;

/// The entries for every server in `loaded`: the effective ones (enabled or not) and the
/// refused ones, ordered by id. A refused entry is listed in state `error` with its problems,
/// so that a typo in a file shows up in the `/mcp` view instead of a server silently missing.
///
/// With an OAuth context, every HTTP server without a configured `Authorization` header gets
/// an OAuth hook: its stored tokens are used, and a 401 starts discovery and login.
///
/// A project file's server runs only if `approvals` approves it as it is written now;
/// otherwise it is listed in state `error` at [`Phase::Trust`], and nothing of it is started
/// or sent anywhere ([`crate::trust`]).
pub fn entries(
    loaded: &LoadedConfig,
    oauth: Option<&OAuthContext>,
    approvals: &Approvals,
) -> Vec<ServerEntry> {
    let mut out: Vec<ServerEntry> = loaded
        .servers
        .iter()
        .map(|server| {
            if !approvals.approves(server) {
                return untrusted(server, approvals.knows(&server.id));
            }
            with_oauth(entry(server), oauth, server)
        })
        .collect();
    for rejected in &loaded.rejected {
        if out.iter().any(|e| e.id == rejected.id) {
            continue;
        }
        let problems: Vec<String> = loaded
            .problems_for(&rejected.id)
            .filter(|p| p.is_error())
            .map(ToString::to_string)
            .collect();
        let why = if problems.is_empty() {
            format!("the entry in {} is not valid", rejected.file.display())
        } else {
            problems.join("; ")
        };
        let mut e = ServerEntry::unusable(
            rejected.id.clone(),
            crate::TransportKind::Unknown,
            Phase::Configuration,
            format!("configuration: {why}"),
        );
        e.source = rejected.source.as_str().to_owned();
        out.push(e);
    }
    out.sort_by(|a, b| a.id.cmp(&b.id));
    out
}

/// `entry` with the OAuth hook `oauth` makes for `server`, if any.
#[cfg(feature = "oauth")]
fn with_oauth(
    mut entry: ServerEntry,
    oauth: Option<&OAuthContext>,
    server: &ConfiguredServer,
) -> ServerEntry {
    entry.oauth = oauth.and_then(|ctx| ctx.hook(server));
    entry
}

/// Without OAuth in the build there is no context (`oauth` is `None`) and no hook to add.
#[cfg(not(feature = "oauth"))]
fn with_oauth(
    entry: ServerEntry,
    oauth: Option<&OAuthContext>,
    _server: &ConfiguredServer,
) -> ServerEntry {
    match oauth {
        None => entry,
        Some(never) => match *never {},
    }
}

/// One configured server as an entry. A project file may not allow calls without asking:
/// a repository someone cloned must not be able to switch off the user's confirmation, so an
/// `allow` from the project layer is read as `ask`, and the entry says so.
pub fn entry(server: &ConfiguredServer) -> ServerEntry {
    let connect = crate::features::connect(server);
    let mut notes = Vec::new();
    let rules = if server.source == Scope::Project {
        distrust_allow(&server.permission, &mut notes)
    } else {
        server.permission.clone()
    };
    let mut e = match connect {
        Ok(connect) => ServerEntry::new(server.id.clone(), connect),
        Err(why) => ServerEntry::unusable(
            server.id.clone(),
            server.transport.transport_kind(),
            Phase::Configuration,
            why,
        ),
    };
    e.source = server.source.as_str().to_owned();
    e.transport = server.transport.transport_kind();
    e.enabled = server.enabled;
    e.request_timeout = server.request_timeout;
    e.ping_interval = server.ping_interval;
    e.ping_timeout = server.ping_timeout;
    e.filter = ToolFilter::new(server.enabled_tools.clone(), server.disabled_tools.clone());
    e.expose_resources = server.expose_resources;
    e.expose_prompts = server.expose_prompts;
    e.optional_tools_as_tasks = server.optional_tools_as_tasks;
    e.rules = rules;
    e.max_result_bytes = server.max_result_bytes;
    e.protocol_version = server.protocol_version.clone();
    e.notes = notes;
    e
}

/// A project's server the user has not approved (or approved as it was before an edit).
fn untrusted(server: &ConfiguredServer, changed: bool) -> ServerEntry {
    let why = if changed {
        "changed since it was approved"
    } else {
        "not approved yet"
    };
    let mut e = ServerEntry::unusable(
        server.id.clone(),
        server.transport.transport_kind(),
        Phase::Trust,
        format!(
            "trust: the project file {} defines this server, {why}: nothing of it runs until the user approves it",
            server.file.display()
        ),
    );
    e.source = server.source.as_str().to_owned();
    e.enabled = server.enabled;
    e
}

fn distrust_allow(rules: &ServerRules, notes: &mut Vec<String>) -> ServerRules {
    let mut out = rules.clone();
    if out.default == Decision::Allow {
        out.default = Decision::Ask;
        notes.push(
            "permission: `default: allow` from the project file is read as `ask`; allow it in the global file instead"
                .to_owned(),
        );
    }
    for (group, decision) in [
        ("resources", &mut out.resources),
        ("prompts", &mut out.prompts),
    ] {
        if *decision == Some(Decision::Allow) {
            *decision = Some(Decision::Ask);
            notes.push(format!(
                "permission: `{group}: allow` from the project file is read as `ask`; allow it in the global file instead"
            ));
        }
    }
    for (tool, decision) in out.tools.iter_mut() {
        if *decision == Decision::Allow {
            *decision = Decision::Ask;
            notes.push(format!(
                "permission: `allow` for tool `{tool}` from the project file is read as `ask`; allow it in the global file instead"
            ));
        }
    }
    out
}

/// Where a host of this user remembers the era each server spoke: `eras.json` in the global
/// configuration file's directory, beside the token store; `None` when that is not known.
pub fn era_file(paths: &crate::config::ConfigPaths) -> Option<std::path::PathBuf> {
    paths
        .global_dir()
        .map(|dir| dir.join(crate::eras::ERAS_FILE_NAME))
}

/// Where a host of this user keeps the tasks it started: `tasks.json` beside `eras.json`;
/// `None` when that is not known.
pub fn task_file(paths: &crate::config::ConfigPaths) -> Option<std::path::PathBuf> {
    paths
        .global_dir()
        .map(|dir| dir.join(crate::tasks::TASKS_FILE_NAME))
}

/// Host options from the configuration's host-wide settings, with `policy` deciding where
/// the configuration asks.
pub fn host_options(
    loaded: &LoadedConfig,
    client_info: Implementation,
    policy: Arc<dyn Policy>,
) -> HostOptions {
    let mut options = HostOptions::new(client_info, policy);
    options.max_connections = loaded.host.max_connections;
    options
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    #[test]
    fn project_allow_becomes_ask_with_a_note() {
        let rules = ServerRules::new(
            Decision::Allow,
            BTreeMap::from([
                ("rm".to_owned(), Decision::Deny),
                ("ls".to_owned(), Decision::Allow),
            ]),
        );
        let mut rules = rules;
        rules.resources = Some(Decision::Allow);
        rules.prompts = Some(Decision::Deny);
        let mut notes = Vec::new();
        let out = distrust_allow(&rules, &mut notes);
        assert_eq!(out.decide("other"), Decision::Ask);
        assert_eq!(out.decide("ls"), Decision::Ask);
        assert_eq!(out.decide("rm"), Decision::Deny);
        let read = crate::operation::Operation::ReadResource;
        assert_eq!(out.decide_operation(read), Decision::Ask);
        let get = crate::operation::Operation::GetPrompt;
        assert_eq!(out.decide_operation(get), Decision::Deny);
        assert_eq!(notes.len(), 3);
    }
}
