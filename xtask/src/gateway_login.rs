//! The login leg's gateway step: `mcp-host login --gateway FILE ID` against the TypeScript
//! SDK's OAuth example (the leg's server and browser), then `mcp-host serve --gateway FILE`,
//! which has no browser, reaches the example's tools with the stored tokens and calls
//! `greet`. Before the login, `serve` says the upstream waits for it and names the command.

use std::io::{BufRead as _, BufReader, Write as _};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use anyhow::{Context as _, bail};
use xshell::{Shell, cmd};

use crate::bounded::{self, PEER_STEP};

/// The upstream's id in the gateway file: no configured server has it, so its tokens can only
/// come from `login --gateway`.
const ID: &str = "ts-upstream";

/// Runs the step in `sh`'s directory (a project of the leg's user, whose `$BROWSER` is the
/// leg's browser) against the example's MCP endpoint `url`.
pub(crate) fn run(sh: &Shell, mcp_host: &Path, url: &str) -> anyhow::Result<()> {
    let file = sh.current_dir().join("gateway.json");
    let doc = serde_json::json!({
        "mcpServers": {
            ID: {
                "description": "the TypeScript SDK's OAuth example",
                "type": "http",
                "url": url
            }
        }
    });
    std::fs::write(&file, serde_json::to_vec_pretty(&doc)?)?;

    let (tools, _, said) = serve(sh, mcp_host, &file, false)?;
    if tools.iter().any(|t| t == "greet") {
        bail!("the gateway reached the upstream before any login: {tools:?}");
    }
    let hint = format!("mcp-host login --gateway {} {ID}", file.display());
    if !said.contains(&hint) {
        bail!("serve did not name `{hint}` for the upstream awaiting a login:\n{said}");
    }

    let out = bounded::read(
        cmd!(sh, "{mcp_host} login --gateway {file} {ID}"),
        "`mcp-host login --gateway`",
        PEER_STEP,
    )?;
    if !out.contains(&format!("logged in to `{ID}`")) {
        bail!("login --gateway said: {out}");
    }

    let (tools, greeting, said) = serve(sh, mcp_host, &file, true)?;
    if !tools.iter().any(|t| t == "greet") {
        bail!("after login --gateway the gateway lists {tools:?}:\n{said}");
    }
    if !greeting.contains("Hello, gateway!") {
        bail!("the gateway's call of greet answered {greeting}");
    }
    eprintln!("    login --gateway, then serve reached the upstream and `greet` answered");
    Ok(())
}

/// Runs `serve --gateway file` over stdio as a client: initialize, list the tools and, with
/// `call`, call `greet`. Returns the tool names, the call's result and what serve said on
/// stderr.
fn serve(
    sh: &Shell,
    mcp_host: &Path,
    file: &Path,
    call: bool,
) -> anyhow::Result<(Vec<String>, String, String)> {
    let mut command: Command = cmd!(sh, "{mcp_host} serve --gateway {file}").into();
    command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn().context("starting mcp-host serve")?;
    let mut stdin = child.stdin.take().context("stdin was piped")?;
    let stdout = child.stdout.take().context("stdout was piped")?;
    let mut stderr = child.stderr.take().context("stderr was piped")?;
    let (lines, answers) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if lines.send(line).is_err() {
                break;
            }
        }
    });
    // Each line of stderr is kept, and passed on so that the client can wait for one.
    let (err_lines, logged) = mpsc::channel::<String>();
    let said = std::thread::spawn(move || {
        let mut text = String::new();
        for line in BufReader::new(&mut stderr).lines().map_while(Result::ok) {
            text.push_str(&line);
            text.push('\n');
            let _ = err_lines.send(line);
        }
        text
    });
    // `serve` answers at once and logs each upstream once it has settled: `upstream ID:
    // STATE (N tools)`, with the login command when it needs one. The client waits for that
    // line before it looks at the tools or leaves.
    let settled = format!("upstream {ID}: ");
    let wait_settled = move || -> anyhow::Result<()> {
        loop {
            let line = logged
                .recv_timeout(PEER_STEP)
                .with_context(|| format!("serve never logged `{settled}...` for its upstream"))?;
            if line.contains(&settled) && line.contains(" tools)") {
                return Ok(());
            }
        }
    };
    let mut send = move |message: serde_json::Value| -> anyhow::Result<()> {
        writeln!(stdin, "{message}")?;
        Ok(stdin.flush()?)
    };
    let answer = |id: u64| -> anyhow::Result<serde_json::Value> {
        loop {
            let line = answers
                .recv_timeout(PEER_STEP)
                .with_context(|| format!("serve did not answer request {id}"))?;
            let message: serde_json::Value = serde_json::from_str(&line)
                .with_context(|| format!("serve wrote something else than MCP: {line}"))?;
            if message["id"] == id {
                return Ok(message);
            }
        }
    };
    let outcome = (|| -> anyhow::Result<(Vec<String>, String)> {
        send(
            serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "xtask-gateway-login", "version": "0"}}}),
        )?;
        answer(1)?;
        send(serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))?;
        wait_settled()?;
        send(serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}))?;
        let listed = answer(2)?;
        let tools: Vec<String> = listed["result"]["tools"]
            .as_array()
            .with_context(|| format!("tools/list answered {listed}"))?
            .iter()
            .filter_map(|t| t["name"].as_str().map(str::to_owned))
            .collect();
        let mut greeting = String::new();
        if call {
            send(
                serde_json::json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                "params": {"name": "greet", "arguments": {"name": "gateway"}}}),
            )?;
            greeting = answer(3)?["result"].to_string();
        }
        Ok((tools, greeting))
    })();
    drop(send);
    // stdin closed: the gateway ends; a gateway that does not is killed.
    bounded::wait(child, Duration::from_secs(30))?;
    let said = said
        .join()
        .map_err(|_| anyhow::anyhow!("the reader of serve's stderr panicked"))?;
    let (tools, greeting) = outcome.with_context(|| format!("serve said:\n{said}"))?;
    Ok((tools, greeting, said))
}
