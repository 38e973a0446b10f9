//! `skills ID` and `skill ID NAME`: a server's skills (SEP-2640), listed without reading any
//! of their files, and one skill loaded: its `SKILL.md` printed only once the host has checked
//! its size, digest and frontmatter against the listing. A skill that does not verify is
//! refused, with what differed, and exit code 5.

use mcp_host::skills::{MAX_SKILL_FILE_BYTES, SkillError};
use mcp_host::{Host, ServerState};
use mcp_protocol::schema::SkillResources;
use serde_json::json;

use crate::args::ReadScope;
use crate::exit::{Code, Failure};
use crate::live::{Setup, not_ready, start};
use crate::manage::{self, Context};
use crate::output::{Out, Table, cell, clean};

/// `skills ID`.
pub(crate) async fn skills(cx: &Context, out: &Out, id: &str) -> Result<(), Failure> {
    let loaded = cx.load(ReadScope::Effective);
    manage::report_problems(out, &loaded);
    let live = start(cx, out, loaded, Some(id), Setup::default()).await?;
    let outcome = list_on(out, &live.host, id).await;
    live.host.shutdown().await;
    outcome
}

/// `skill ID NAME`.
pub(crate) async fn skill(cx: &Context, out: &Out, id: &str, name: &str) -> Result<(), Failure> {
    let loaded = cx.load(ReadScope::Effective);
    manage::report_problems(out, &loaded);
    let live = start(cx, out, loaded, Some(id), Setup::default()).await?;
    let outcome = load_on(out, &live.host, id, name).await;
    live.host.shutdown().await;
    outcome
}

fn ready(host: &Host, id: &str) -> Result<(), Failure> {
    match host.server_status(id) {
        Some(s) if s.state != ServerState::Ready => Err(not_ready(&s)),
        _ => Ok(()),
    }
}

/// Lists one started server's skills.
pub(crate) async fn list_on(out: &Out, host: &Host, id: &str) -> Result<(), Failure> {
    ready(host, id)?;
    let skills = host.list_skills(id).await.map_err(|e| Failure::from(&e))?;
    let files = |r: &SkillResources| match r.files() {
        Some(files) => json!(files.len()),
        None => json!("dynamic"),
    };
    if out.is_json() {
        out.json(&json!({
            "skills": skills.iter().map(|s| json!({
                "server": id,
                "name": s.name().map(clean),
                "description": s.description().map(clean),
                "uri": clean(&s.uri),
                "files": files(&s.resources),
            })).collect::<Vec<_>>()
        }));
    } else if skills.is_empty() {
        out.text("no skills");
    } else {
        let mut table = Table::new(&["NAME", "FILES", "URI", "DESCRIPTION"]);
        for s in &skills {
            table.row(vec![
                cell(s.name().unwrap_or("-"), 40),
                files(&s.resources).to_string().trim_matches('"').to_owned(),
                cell(&s.uri, 60),
                cell(s.description().unwrap_or("-"), 80),
            ]);
        }
        out.text(&table.render());
    }
    Ok(())
}

/// Loads one skill of a started server and prints its verified `SKILL.md`.
pub(crate) async fn load_on(out: &Out, host: &Host, id: &str, name: &str) -> Result<(), Failure> {
    ready(host, id)?;
    let skill = host.load_skill(id, name).await.map_err(|e| failure(&e))?;
    // Server text, cleaned for a terminal, whole up to the size the host reads.
    let text = mcp_host::catalog::clean_text(&skill.instructions, MAX_SKILL_FILE_BYTES as usize);
    if out.is_json() {
        out.json(&json!({
            "server": id,
            "name": clean(skill.name()),
            "uri": clean(&skill.entry.uri),
            "verified": skill.verified,
            "instructions": text,
        }));
    } else {
        if !skill.verified {
            out.note(&format!(
                "skill `{}` lists its files as dynamic: only its frontmatter could be checked",
                cell(skill.name(), 40)
            ));
        }
        out.text(text.trim_end());
    }
    Ok(())
}

fn failure(e: &SkillError) -> Failure {
    match e {
        SkillError::Call(e) => Failure::from(e),
        SkillError::Unknown { server, .. } => Failure::usage(clean(&e.to_string()))
            .hint(format!("`mcp-host skills {server}` lists them")),
        SkillError::Ambiguous { .. } => Failure::usage(clean(&e.to_string())),
        _ => Failure::new(Code::Tool, clean(&e.to_string()))
            .hint("the server's skill does not match its own listing: it was not loaded"),
    }
}
