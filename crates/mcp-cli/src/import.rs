//! `mcp-host import --from <tool>`: the servers another MCP client has configured, written into
//! one of our files as `add` writes (mcp-host's `config::import` reads them), with what was
//! imported, from where, what was not and why, and which variables to set.

use std::path::PathBuf;

use mcp_host::config::{self, ImportError, ImportReport, ImportSource, Scope, WriteOutcome};
use serde_json::{Value, json};

use crate::args::{EditScope, ImportArgs};
use crate::exit::{Code, Failure};
use crate::manage::{Context, approve_added};
use crate::output::Out;

/// `import`.
pub(crate) fn run(cx: &Context, out: &Out, a: ImportArgs) -> Result<(), Failure> {
    let source = ImportSource::parse(&a.from).ok_or_else(|| {
        let names: Vec<&str> = ImportSource::ALL.iter().map(|s| s.as_str()).collect();
        Failure::usage(format!(
            "unknown --from `{}`: use one of {}",
            a.from,
            names.join(", ")
        ))
    })?;
    let files: Vec<PathBuf> = a.path.into_iter().collect();
    let report =
        config::import_read(source, &files, &cx.env, &cx.paths.project_dir).map_err(failure)?;
    let target = cx.paths.editable(Scope::from(a.scope))?.to_path_buf();
    let outcomes: Vec<(String, Option<WriteOutcome>)> = if a.dry_run || report.servers.is_empty() {
        report
            .servers
            .iter()
            .map(|s| (s.id.clone(), None))
            .collect()
    } else {
        let written = config::import_write(&target, &report, a.force).map_err(failure)?;
        if a.scope == EditScope::Project {
            for (id, outcome) in &written {
                if *outcome != WriteOutcome::SkippedExisting {
                    approve_added(cx, id, &target)?;
                }
            }
        }
        written.into_iter().map(|(id, o)| (id, Some(o))).collect()
    };
    if out.is_json() {
        out.json(&as_json(source, &report, &outcomes, &target, a.dry_run));
    } else {
        let looked = source.default_files(&cx.env, &cx.paths.project_dir);
        print(out, source, &report, &outcomes, &target, a.dry_run, &looked);
    }
    Ok(())
}

/// `add-from-claude-desktop` (Claude Code's spelling): `import --from claude-desktop`, into
/// the local layer unless `--scope` says otherwise, as Claude Code does.
pub(crate) fn from_claude_desktop(
    cx: &Context,
    out: &Out,
    scope: Option<EditScope>,
    path: Option<PathBuf>,
    dry_run: bool,
    force: bool,
) -> Result<(), Failure> {
    let a = ImportArgs {
        from: "claude-desktop".to_owned(),
        path,
        scope: scope.unwrap_or(EditScope::Local),
        dry_run,
        force,
    };
    run(cx, out, a)
}

fn failure(e: ImportError) -> Failure {
    match e {
        ImportError::Config(c) => c.into(),
        ImportError::Read { .. } => Failure::new(Code::Other, e.to_string()),
        other => Failure::new(Code::Config, other.to_string()),
    }
}

fn outcome_str(o: Option<WriteOutcome>, dry_run: bool) -> &'static str {
    match o {
        None if dry_run => "would add",
        None => "not written",
        Some(WriteOutcome::Added) => "added",
        Some(WriteOutcome::Replaced) => "replaced",
        Some(WriteOutcome::SkippedExisting) => "skipped",
        Some(_) => "unknown",
    }
}

fn print(
    out: &Out,
    source: ImportSource,
    report: &ImportReport,
    outcomes: &[(String, Option<WriteOutcome>)],
    target: &std::path::Path,
    dry_run: bool,
    looked: &[PathBuf],
) {
    if report.files.is_empty() {
        out.text(&format!(
            "no {source} configuration found (looked for {}); give one with --path",
            looked
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ));
        return;
    }
    for f in &report.files {
        out.text(&format!("read {}", f.display()));
    }
    for (s, (_, o)) in report.servers.iter().zip(outcomes) {
        let what = outcome_str(*o, dry_run);
        let why = if *o == Some(WriteOutcome::SkippedExisting) {
            format!(" (already in {}; --force replaces it)", target.display())
        } else {
            String::new()
        };
        out.text(&format!(
            "{what} `{}` from {} ({}){why}",
            s.id,
            s.file.display(),
            s.location
        ));
    }
    if !report.servers.is_empty() {
        let verb = if dry_run {
            "would be written to"
        } else {
            "into"
        };
        out.text(&format!("{verb} {}", target.display()));
    }
    if !report.not_carried.is_empty() {
        out.text("not carried over:");
        for n in &report.not_carried {
            out.text(&format!("  {n}"));
        }
    }
    if !report.variables.is_empty() {
        out.text("set these variables (the source held the values, which were not copied):");
        for v in &report.variables {
            out.text(&format!(
                "  {} for `{}` ({}): {}",
                v.name, v.server, v.field, v.reason
            ));
        }
    }
}

fn as_json(
    source: ImportSource,
    report: &ImportReport,
    outcomes: &[(String, Option<WriteOutcome>)],
    target: &std::path::Path,
    dry_run: bool,
) -> Value {
    let servers: Vec<Value> = report
        .servers
        .iter()
        .zip(outcomes)
        .map(|(s, (_, o))| {
            json!({
                "id": s.id,
                "from": s.file.display().to_string(),
                "location": s.location,
                "outcome": outcome_str(*o, dry_run).replace(' ', "_"),
                "entry": s.entry,
            })
        })
        .collect();
    let not_carried: Vec<Value> = report
        .not_carried
        .iter()
        .map(|n| {
            json!({
                "file": n.file.display().to_string(),
                "server": n.server,
                "field": n.field,
                "reason": n.reason,
            })
        })
        .collect();
    let variables: Vec<Value> = report
        .variables
        .iter()
        .map(|v| json!({"name": v.name, "server": v.server, "field": v.field, "reason": v.reason}))
        .collect();
    json!({
        "from": source.as_str(),
        "files": report.files.iter().map(|f| f.display().to_string()).collect::<Vec<_>>(),
        "target": target.display().to_string(),
        "dry_run": dry_run,
        "servers": servers,
        "not_carried": not_carried,
        "variables": variables,
    })
}
