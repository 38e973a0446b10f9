//! The gateway's traces against a real OTLP receiver: the official OTLP protobuf definitions
//! (`opentelemetry-proto` from PyPI, pinned) behind `xtask/interop/otlp-receiver.py`, which
//! parses what the gateway exports strictly. Installs them into a virtual environment under
//! target/tools/otlp-proto, then runs the gateway's receiver tests
//! (`cargo test -p mcp-gateway --features __otlp_receiver --test it traces::`), which start the
//! receiver themselves. Part of `xtask interop`.

use std::io::BufRead as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use anyhow::{Context as _, bail};
use xshell::{Shell, cmd};

use crate::bounded::{self, PEER_STEP};
use crate::interop::{free_port, wait_listening};
use crate::project_root;

/// The pinned OTLP definitions (and, through them, `protobuf`).
const PROTO: &str = "opentelemetry-proto";
const PROTO_VERSION: &str = "1.45.2";

pub(crate) fn run(sh: &Shell, tools: &Path) -> anyhow::Result<()> {
    let python = otlp_python(sh, tools)?;
    let receiver = project_root().join("xtask/interop/otlp-receiver.py");
    eprintln!("==> the gateway's spans into an OTLP receiver of {PROTO}=={PROTO_VERSION}");
    cmd!(
        sh,
        "cargo test -p mcp-gateway --features __otlp_receiver --test it traces::"
    )
    .env("MCP_OTLP_PYTHON", &python)
    .env("MCP_OTLP_RECEIVER", &receiver)
    .run()
    .context("the gateway's trace tests against the OTLP receiver failed")?;
    through_the_binary(sh, &python, &receiver, tools)
}

/// `mcp-host serve --gateway FILE --http` with the standard variables pointing at the
/// receiver, and a client calling a tool through it with a `traceparent` in `_meta`.
fn through_the_binary(
    sh: &Shell,
    python: &Path,
    receiver: &Path,
    tools: &Path,
) -> anyhow::Result<()> {
    eprintln!("==> mcp-host serve --gateway with OTEL_EXPORTER_OTLP_ENDPOINT, into the receiver");
    let mcp_host = crate::target_dir().join("debug/mcp-host");
    let dir = tools.join("otlp-gateway");
    let _ = std::fs::remove_dir_all(&dir);
    let home = dir.join("home");
    std::fs::create_dir_all(&home)?;
    let file = dir.join("gateway.json");
    let gateway_file = serde_json::json!({
        "mode": "passthrough",
        "mcpServers": {
            "demo": {
                "command": mcp_host.display().to_string(),
                "args": ["demo-server"],
                "permission": {"default": "allow"}
            }
        },
        "logFile": dir.join("gateway.log"),
    });
    std::fs::write(&file, serde_json::to_vec_pretty(&gateway_file)?)?;

    let mut receiver = Process(
        Command::new(python)
            .arg(receiver)
            .stdout(Stdio::piped())
            .spawn()
            .context("starting the OTLP receiver")?,
    );
    let mut line = String::new();
    if let Some(out) = receiver.0.stdout.take() {
        std::io::BufReader::new(out).read_line(&mut line)?;
    }
    let Some(receiver_port) = line.trim().strip_prefix("listening ") else {
        bail!("the OTLP receiver said {line:?}");
    };
    let port = free_port()?;
    let _gateway = Process(
        Command::new(&mcp_host)
            .arg("serve")
            .arg("--gateway")
            .arg(&file)
            .args(["--http", &format!("127.0.0.1:{port}")])
            .env("HOME", &home)
            .env("MCP_HOST_CONFIG", "")
            .env("XDG_CONFIG_HOME", "")
            .env(
                "OTEL_EXPORTER_OTLP_ENDPOINT",
                format!("http://127.0.0.1:{receiver_port}"),
            )
            .env("OTEL_BSP_SCHEDULE_DELAY", "50")
            .env("OTEL_SERVICE_NAME", "mcp-host-otlp-leg")
            .spawn()
            .context("starting mcp-host serve --gateway")?,
    );
    wait_listening(port, "the gateway")?;
    let client = project_root().join("xtask/interop/otlp-gateway-client.py");
    let url = format!("http://127.0.0.1:{port}/mcp");
    let spans = format!("http://127.0.0.1:{receiver_port}/spans");
    bounded::run(
        cmd!(sh, "{python} {client} {url} {spans}"),
        "the OTLP client's checks of mcp-host serve --gateway",
        PEER_STEP,
    )
}

/// A child process killed when dropped.
struct Process(Child);

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A Python with the pinned OTLP definitions, under `tools`
/// ([`pip_package`](crate::interop::pip_package)).
pub(crate) fn otlp_python(sh: &Shell, tools: &Path) -> anyhow::Result<PathBuf> {
    crate::interop::pip_package(sh, &tools.join("otlp-proto"), PROTO, PROTO_VERSION)
}
