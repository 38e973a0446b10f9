//! `mcp-host import --from <tool>`: the servers another MCP client has configured, written into
//! one of our files as `add` writes (mcp-host's `config::import` reads them), with what was
//! imported, from where, what was not and why, and which variables to set.
//!
//! VS Code's `${input:ID}` (a value VS Code asks for) is asked here too, at a terminal or with
//! `--inputs-from-stdin`: the answer goes to the OS keyring as `vscode-input-<ID>`, and the
//! variable the entry reads (`VSCODE_INPUT_<ID>`) becomes `{"keyring": …}` among the private
//! `variables` of the user's own file, never a value in the file the servers went to.

use std::io::{BufRead as _, IsTerminal as _, Write as _};
use std::path::PathBuf;

use mcp_host::config::{
    self, ImportError, ImportInput, ImportReport, ImportSource, Scope, Secret, WriteOutcome,
};
use mcp_host::keyring::Keyring;
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
    let answered = if a.dry_run || report.servers.is_empty() {
        Vec::new()
    } else {
        answer_inputs(cx, out, &report.inputs, a.scope, a.inputs_from_stdin)?
    };
    if out.is_json() {
        let mut v = as_json(source, &report, &outcomes, &target, a.dry_run);
        v["answered_inputs"] = answered
            .iter()
            .map(|k| json!({"variable": k.variable, "keyring": k.entry, "file": k.file.display().to_string()}))
            .collect();
        out.json(&v);
    } else {
        if report.files.is_empty() {
            let looked = source.default_files(&cx.env, &cx.paths.project_dir);
            out.text(&format!(
                "no {source} configuration found (looked for {}); give one with --path",
                looked
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        } else {
            print(out, &report, &outcomes, &target, a.dry_run, &answered);
        }
    }
    Ok(())
}

/// An input answered at import: where its answer went.
struct Answered {
    variable: String,
    entry: String,
    file: PathBuf,
}

/// The keyring entry that keeps the answer to VS Code's input `id`.
fn input_entry(id: &str) -> String {
    let tail: String = id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .take(100)
        .collect();
    format!("vscode-input-{tail}")
}

/// Asks each input (at a terminal, or one line of stdin each with `from_stdin`), keeps every
/// non-empty answer in the keyring and points the input's variable at it from the user's own
/// file: the local one when the servers went to the project's file, else the file they went
/// to. Neither a terminal nor `from_stdin`, or no usable keyring (said on stderr): nothing is
/// asked, and the report names the variables, as the servers are written already.
fn answer_inputs(
    cx: &Context,
    out: &Out,
    inputs: &[ImportInput],
    scope: EditScope,
    from_stdin: bool,
) -> Result<Vec<Answered>, Failure> {
    let terminal = std::io::stdin().is_terminal() && std::io::stderr().is_terminal();
    if inputs.is_empty() || !(terminal || from_stdin) {
        return Ok(Vec::new());
    }
    let file = match Scope::from(scope) {
        Scope::Project => cx.paths.editable(Scope::Local)?,
        other => cx.paths.editable(other)?,
    }
    .to_path_buf();
    let keyring = match Keyring::open(&cx.env) {
        Ok(k) => k,
        Err(e) => {
            out.note(&format!(
                "import: VS Code's inputs are not asked: no keyring to keep the answers ({e}); \
                 MCP_HOST_KEYRING=keyutils uses the kernel keyring, which needs no session bus"
            ));
            return Ok(Vec::new());
        }
    };
    let mut answered = Vec::new();
    for input in inputs {
        let answer = ask(input, terminal).map_err(|e| {
            Failure::new(
                Code::Other,
                format!(
                    "import: cannot read the answer to input `{}`: {e}",
                    input.id
                ),
            )
        })?;
        let Some(answer) = answer else { continue };
        let entry = input_entry(&input.id);
        keyring.set_secret(&entry, &answer).map_err(|e| {
            Failure::new(
                Code::Other,
                format!(
                    "import: the answer to input `{}` cannot be kept: {e}",
                    input.id
                ),
            )
        })?;
        answered.push(Answered {
            variable: input.variable.clone(),
            entry,
            file: file.clone(),
        });
    }
    if !answered.is_empty() {
        let refs: Vec<(String, String)> = answered
            .iter()
            .map(|a| (a.variable.clone(), a.entry.clone()))
            .collect();
        config::set_keyring_variables(&file, &refs)?;
    }
    Ok(answered)
}

/// One answer: asked on stderr at a terminal (without echo for a password), else one line of
/// stdin. `None` when empty (the input is left to its variable).
fn ask(input: &ImportInput, terminal: bool) -> std::io::Result<Option<Secret>> {
    let stdin = std::io::stdin();
    let mut line = String::new();
    if terminal {
        let hidden = if input.password { " (not shown)" } else { "" };
        let question = format!(
            "{} [VS Code input `{}`]{hidden}: ",
            input.description, input.id
        );
        let mut err = std::io::stderr().lock();
        if input.password {
            // Echo goes off before the question shows, so that nothing typed after it is
            // echoed; it comes back on every path out.
            use nix::sys::termios::{LocalFlags, SetArg, tcgetattr, tcsetattr};
            let saved = tcgetattr(&stdin).map_err(std::io::Error::from)?;
            let mut quiet = saved.clone();
            quiet.local_flags.remove(LocalFlags::ECHO);
            tcsetattr(&stdin, SetArg::TCSANOW, &quiet).map_err(std::io::Error::from)?;
            let read = err
                .write_all(question.as_bytes())
                .and_then(|()| err.flush())
                .and_then(|()| stdin.lock().read_line(&mut line).map(|_| ()));
            let restored = tcsetattr(&stdin, SetArg::TCSANOW, &saved).map_err(std::io::Error::from);
            writeln!(err)?;
            read.and(restored)?;
        } else {
            err.write_all(question.as_bytes())?;
            err.flush()?;
            stdin.lock().read_line(&mut line)?;
        }
    } else {
        stdin.lock().read_line(&mut line)?;
    }
    let answer = line
        .strip_suffix("\r\n")
        .or_else(|| line.strip_suffix('\n'))
        .unwrap_or(&line);
    Ok((!answer.is_empty()).then(|| Secret::new(answer)))
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
        inputs_from_stdin: false,
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

/// The text report of an import that read at least one file.
fn print(
    out: &Out,
    report: &ImportReport,
    outcomes: &[(String, Option<WriteOutcome>)],
    target: &std::path::Path,
    dry_run: bool,
    answered: &[Answered],
) {
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
    for a in answered {
        out.text(&format!(
            "{} reads the keyring secret `{}` (the answer; `variables` of {})",
            a.variable,
            a.entry,
            a.file.display()
        ));
    }
    let unset: Vec<_> = report
        .variables
        .iter()
        .filter(|v| !answered.iter().any(|a| a.variable == v.name))
        .collect();
    if !unset.is_empty() {
        out.text("set these variables (the source held the values, which were not copied):");
        for v in &unset {
            out.text(&format!(
                "  {} for `{}` ({}): {}",
                v.name, v.server, v.field, v.reason
            ));
        }
    }
    let unasked: Vec<_> = report
        .inputs
        .iter()
        .filter(|i| !answered.iter().any(|a| a.variable == i.variable))
        .collect();
    if !unasked.is_empty() && !dry_run {
        out.text(
            "or keep an input's answer in the keyring: run the import at a terminal (or with \
             --inputs-from-stdin), or `mcp-host secret set NAME` and set the variable to \
             {\"keyring\": \"NAME\"} in `variables` of your own file:",
        );
        for i in unasked {
            out.text(&format!(
                "  mcp-host secret set {}   (for {})",
                input_entry(&i.id),
                i.variable
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
