//! `tasks list|get|result|cancel`: the tasks `mcp-host` started on servers (a tool call that
//! runs as a task), kept in `tasks.json` beside `eras.json`, so that they can be followed
//! after the process that started them has exited: listed with their status asked again,
//! shown, waited for to their result, or cancelled.

use std::collections::BTreeSet;
use std::time::{SystemTime, UNIX_EPOCH};

use mcp_host::{CallOptions, Host, ServerState, TaskRecord};
use serde_json::{Value, json};

use crate::args::{ReadScope, TasksCommand};
use crate::exit::Failure;
use crate::live::{Setup, not_ready, show_call, start};
use crate::manage::{self, Context};
use crate::output::{Out, Table, cell, clean};

/// `tasks …`.
pub(crate) async fn run(cx: &Context, out: &Out, command: TasksCommand) -> Result<(), Failure> {
    match command {
        TasksCommand::List { id, server } => list(cx, out, id.as_deref(), server).await,
        TasksCommand::Get { id, task } => {
            let live = started(cx, out, &id).await?;
            let outcome = live.host.task(&id, &task).await;
            live.host.shutdown().await;
            let record = outcome.map_err(|e| Failure::from(&e))?;
            show(out, &[record]);
            Ok(())
        }
        TasksCommand::Result { id, task } => {
            let live = started(cx, out, &id).await?;
            let outcome = live
                .host
                .task_result(&id, &task, CallOptions::default())
                .await;
            live.host.shutdown().await;
            let output = outcome.map_err(|e| Failure::from(&e))?;
            show_call(out, &id, &format!("task {}", cell(&task, 80)), &output)
        }
        TasksCommand::Cancel { id, task } => {
            let live = started(cx, out, &id).await?;
            let outcome = live.host.cancel_task(&id, &task).await;
            live.host.shutdown().await;
            let record = outcome.map_err(|e| Failure::from(&e))?;
            show(out, &[record]);
            Ok(())
        }
    }
}

/// A host with the server `id` connected and ready.
async fn started(cx: &Context, out: &Out, id: &str) -> Result<crate::live::Live, Failure> {
    let loaded = cx.load(ReadScope::Effective);
    manage::report_problems(out, &loaded);
    let live = start(cx, out, loaded, Some(id), Setup::default()).await?;
    match live.host.server_status(id) {
        Some(s) if s.state != ServerState::Ready => {
            live.host.shutdown().await;
            Err(not_ready(&s))
        }
        _ => Ok(live),
    }
}

/// `tasks list [ID] [--server]`: the kept tasks (of `id`), the unfinished ones asked about
/// again first; with `--server`, the tasks the server itself lists.
async fn list(cx: &Context, out: &Out, id: Option<&str>, server: bool) -> Result<(), Failure> {
    if server {
        let Some(id) = id else {
            return Err(Failure::usage("--server needs a server id"));
        };
        let live = started(cx, out, id).await?;
        let outcome = live.host.server_tasks(id).await;
        live.host.shutdown().await;
        let tasks = outcome.map_err(|e| Failure::from(&e))?;
        show(out, &tasks);
        return Ok(());
    }
    let kept = kept(cx, id).await;
    // The servers with unfinished tasks are connected and asked about them.
    let unfinished: BTreeSet<String> = kept
        .iter()
        .filter(|t| !t.state.is_terminal())
        .map(|t| t.server.clone())
        .collect();
    let mut tasks = kept;
    if !unfinished.is_empty() {
        let loaded = cx.load(ReadScope::Effective);
        manage::report_problems(out, &loaded);
        let only = match (id, unfinished.len()) {
            (Some(id), _) => Some(id.to_owned()),
            (None, 1) => unfinished.iter().next().cloned(),
            (None, _) => None,
        };
        let live = start(cx, out, loaded, only.as_deref(), Setup::default()).await?;
        for task in tasks.iter_mut().filter(|t| !t.state.is_terminal()) {
            match live.host.task(&task.server, &task.task_id).await {
                Ok(now) => *task = now,
                Err(e) => out.note(&format!(
                    "task {} on `{}`: its status could not be asked: {}",
                    cell(&task.task_id, 80),
                    task.server,
                    clean(&e.to_string())
                )),
            }
        }
        live.host.shutdown().await;
    }
    show(out, &tasks);
    Ok(())
}

/// The tasks kept in the user's `tasks.json` (of `id`), as last seen.
async fn kept(cx: &Context, id: Option<&str>) -> Vec<TaskRecord> {
    let mut options = mcp_host::setup::host_options(
        &cx.load(ReadScope::Effective),
        crate::live::client_info(),
        std::sync::Arc::new(mcp_host::permission::AllowAll),
    );
    options.task_file = mcp_host::setup::task_file(&cx.paths);
    let host = Host::new(options);
    let mut tasks = host.tasks().await;
    tasks.retain(|t| id.is_none_or(|id| t.server == id));
    tasks.sort_by(|a, b| (a.created, &a.server).cmp(&(b.created, &b.server)));
    tasks
}

/// Prints tasks: a table, or JSON.
fn show(out: &Out, tasks: &[TaskRecord]) {
    if out.is_json() {
        let list: Vec<Value> = tasks
            .iter()
            .map(|t| {
                json!({
                    "server": t.server,
                    "taskId": clean(&t.task_id),
                    "tool": clean(&t.tool),
                    "status": t.state.as_str(),
                    "statusMessage": t.status_message.as_deref().map(clean),
                    "created": t.created,
                    "updated": t.updated,
                    "expires": t.expires,
                })
            })
            .collect();
        out.json(&json!({ "tasks": list }));
        return;
    }
    if tasks.is_empty() {
        out.text("no tasks");
        return;
    }
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let mut table = Table::new(&["SERVER", "TASK", "TOOL", "STATUS", "CHANGED", "MESSAGE"]);
    for t in tasks {
        table.row(vec![
            t.server.clone(),
            cell(&t.task_id, 40),
            cell(&t.tool, 30),
            t.state.as_str().to_owned(),
            format!("{}s ago", now.saturating_sub(t.updated)),
            t.status_message
                .as_deref()
                .map(|m| cell(m, 60))
                .unwrap_or_default(),
        ]);
    }
    out.text(&table.render());
}
