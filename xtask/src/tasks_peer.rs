//! `cargo xtask interop`'s task leg: our command line as a task client of the official
//! TypeScript SDK's task server (`xtask/interop/task-server.mjs`: 2025-11-25 experimental
//! tasks, `McpServer.experimental.tasks.registerToolTask` over the SDK's in-memory store,
//! Streamable HTTP). As a user would, in a HOME of its own: the tools that require a task are
//! listed, marked; `call` of one runs it as a task to its result; an optional one runs
//! plainly; a `call` killed while its task runs leaves it kept, and later processes list it
//! (asked again), cancel it, see it in the server's own `tasks/list`, and fetch the result of
//! another. About 5 s.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context as _, bail};
use serde_json::Value;
use xshell::{Shell, cmd};

use crate::bounded::{self, PEER_STEP};
use crate::interop::{SDK, SDK_VERSION, free_port, npm_package, wait_listening};
use crate::project_root;

/// Runs the leg with `node` (the SDK is installed under `tools/sdk` when missing).
pub(crate) fn run(sh: &Shell, node: &Path, tools: &Path) -> anyhow::Result<()> {
    let prefix = tools.join("sdk");
    npm_package(sh, &prefix, SDK, SDK_VERSION, "package.json")?;
    let mcp_host = crate::binaries::build(sh)?.join("mcp-host");
    let script = project_root().join("xtask/interop/task-server.mjs");
    eprintln!("==> tasks: mcp-host against {SDK}@{SDK_VERSION}'s task server (2025-11-25)");
    let port = free_port()?;
    let mut server = std::process::Command::new(node)
        .arg(&script)
        .arg(&prefix)
        .arg(port.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .context("starting the TypeScript SDK's task server")?;
    let outcome = wait_listening(port, "the TypeScript SDK's task server")
        .and_then(|()| steps(sh, &mcp_host, &tools.join("interop-tasks"), port));
    let _ = server.kill();
    let _ = server.wait();
    outcome
}

fn steps(sh: &Shell, mcp_host: &Path, user: &Path, port: u16) -> anyhow::Result<()> {
    let _ = std::fs::remove_dir_all(user);
    let (home, project) = (user.join("home"), user.join("project"));
    std::fs::create_dir_all(&home)?;
    std::fs::create_dir_all(&project)?;
    let sh = sh.clone();
    let _dir = sh.push_dir(&project);
    let _home = sh.push_env("HOME", &home);
    let _config = sh.push_env("MCP_HOST_CONFIG", "");
    let _xdg = sh.push_env("XDG_CONFIG_HOME", "");
    let url = format!("http://127.0.0.1:{port}/mcp");
    cmd!(sh, "{mcp_host} add ts {url} --scope global").run()?;
    let read = |args: &[&str], what: &str| {
        bounded::read(cmd!(sh, "{mcp_host} {args...}"), what, PEER_STEP)
    };

    let tools = read(&["tools", "ts"], "`mcp-host tools ts`")?;
    for tool in [
        "ts/build, runs as a task",
        "ts/sleep, runs as a task",
        "ts/maybe]",
    ] {
        if !tools.contains(tool) {
            bail!("`mcp-host tools ts` does not list `{tool}`:\n{tools}");
        }
    }
    eprintln!("ok: the tools that require a task are listed, marked");

    let args = r#"{"name": "Ada"}"#;
    let built = read(
        &["call", "ts", "build", "--args", args, "--yes"],
        "`mcp-host call ts build`",
    )?;
    expect(&built, "built Ada", "`call ts build`")?;
    let maybe = read(
        &["call", "ts", "maybe", "--yes"],
        "`mcp-host call ts maybe`",
    )?;
    expect(&maybe, "maybe done", "`call ts maybe`")?;
    eprintln!("ok: a required tool ran as a task to its result; an optional one plainly");

    // A call killed while its task runs: the task is kept, and nobody cancelled it.
    let file = home.join(".config/mcp-host/tasks.json");
    let sleep = killed_call(mcp_host, &project, &home, &file)?;
    let listed = json(&read(
        &["tasks", "list", "--json"],
        "`mcp-host tasks list`",
    )?)?;
    let status = |list: &Value, id: &str| {
        list["tasks"]
            .as_array()
            .and_then(|tasks| tasks.iter().find(|t| t["taskId"] == id))
            .map(|t| t["status"].as_str().unwrap_or_default().to_owned())
    };
    if status(&listed, &sleep).as_deref() != Some("working") {
        bail!("`tasks list` does not show the killed call's task {sleep} working: {listed}");
    }
    let build = listed["tasks"]
        .as_array()
        .and_then(|tasks| tasks.iter().find(|t| t["tool"] == "build"))
        .and_then(|t| t["taskId"].as_str())
        .map(str::to_owned)
        .context("`tasks list` lost the build task")?;
    eprintln!("ok: a killed call's task is kept and asked about by the next process");

    let cancelled = read(
        &["tasks", "cancel", "ts", &sleep],
        "`mcp-host tasks cancel`",
    )?;
    expect(&cancelled, "cancelled", "`tasks cancel`")?;
    let server = json(&read(
        &["tasks", "list", "ts", "--server", "--json"],
        "`mcp-host tasks list ts --server`",
    )?)?;
    if status(&server, &sleep).as_deref() != Some("cancelled")
        || status(&server, &build).as_deref() != Some("completed")
    {
        bail!(
            "the server's tasks/list does not show {sleep} cancelled and {build} completed: {server}"
        );
    }
    let result = read(
        &["tasks", "result", "ts", &build],
        "`mcp-host tasks result`",
    )?;
    expect(&result, "built Ada", "`tasks result`")?;
    eprintln!("ok: cancelled by id, listed by the server, the result fetched again");
    Ok(())
}

/// Starts `mcp-host call ts sleep`, waits until it has kept its task, kills it, and returns
/// the task's id.
fn killed_call(
    mcp_host: &Path,
    project: &Path,
    home: &Path,
    file: &PathBuf,
) -> anyhow::Result<String> {
    let mut child = std::process::Command::new(mcp_host)
        .args(["call", "ts", "sleep", "--yes"])
        .current_dir(project)
        .env("HOME", home)
        .env("MCP_HOST_CONFIG", "")
        .env("XDG_CONFIG_HOME", "")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .context("starting `mcp-host call ts sleep`")?;
    let end = std::time::Instant::now() + Duration::from_secs(30);
    let mut found = None;
    while found.is_none() && std::time::Instant::now() < end {
        std::thread::sleep(Duration::from_millis(100));
        let kept = std::fs::read(file)
            .ok()
            .and_then(|b| serde_json::from_slice::<Value>(&b).ok());
        found = kept.as_ref().and_then(|k| {
            k["tasks"].as_array().and_then(|tasks| {
                tasks
                    .iter()
                    .find(|t| t["tool"] == "sleep")
                    .and_then(|t| t["taskId"].as_str().map(str::to_owned))
            })
        });
    }
    let _ = child.kill();
    let _ = child.wait();
    found.with_context(|| {
        format!(
            "`mcp-host call ts sleep` kept no task in {}",
            file.display()
        )
    })
}

fn json(text: &str) -> anyhow::Result<Value> {
    serde_json::from_str(text).with_context(|| format!("not JSON: {text}"))
}

fn expect(output: &str, text: &str, what: &str) -> anyhow::Result<()> {
    if !output.contains(text) {
        bail!("{what} printed no `{text}`:\n{output}");
    }
    Ok(())
}
