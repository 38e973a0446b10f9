//! `cargo xtask soak [--minutes N]`: the gateway under load while its upstreams die, for
//! as long as asked (default 10 minutes; not part of `ci`, which runs a short version).
//!
//! Builds the workspace's binaries, writes a passthrough gateway file with four upstream
//! servers (`mcp-fake-server`, each marked `--page-size 10<n>` so that it can be found and
//! killed), starts `mcp-host serve --gateway FILE --http 127.0.0.1:0`, and runs the
//! testkit's `mcp-soak` against it: 200 HTTP clients (our own client) calling tools through
//! the gateway, one upstream killed every minute (SIGKILL; the gateway's host starts it
//! again). `mcp-soak` reports calls made and failed, the gateway's resident memory and open
//! files after a warm-up and at the end, and fails the run if a call to a healthy upstream
//! failed, a failure did not name its upstream, a killed upstream never came back, or memory
//! or open files grew past the tolerance it prints.

use std::io::{BufRead as _, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use anyhow::{Context as _, bail};
use xshell::Shell;

use crate::flags;

/// How many upstream servers the gateway holds.
const UPSTREAMS: usize = 4;

impl flags::Soak {
    pub(crate) fn run(self, sh: &Shell) -> anyhow::Result<()> {
        let minutes = self.minutes.unwrap_or(10.0);
        let clients = self.clients.unwrap_or(200);
        // A short run still kills every upstream's process once or more.
        let kill_every = if minutes >= 4.0 {
            60.0
        } else {
            (minutes * 60.0 / 5.0).max(2.0)
        };
        run(sh, minutes, clients, kill_every)
    }
}

/// The short run of `ci`: 30 s, 40 clients, an upstream killed every 6 s.
pub(crate) fn short(sh: &Shell) -> anyhow::Result<()> {
    run(sh, 0.5, 40, 6.0)
}

fn run(sh: &Shell, minutes: f64, clients: usize, kill_every: f64) -> anyhow::Result<()> {
    eprintln!("==> soak: building the binaries");
    let bin = crate::binaries::build(sh)?;
    let dir = crate::target_dir().join("soak");
    std::fs::create_dir_all(&dir)?;
    let file = dir.join("gateway.json");
    let fake = bin.join("mcp-fake-server");
    let mut servers = serde_json::Map::new();
    for n in 0..UPSTREAMS {
        servers.insert(
            format!("up{n}"),
            serde_json::json!({
                "command": fake,
                "args": ["--page-size", format!("10{n}")],
                "permission": {"default": "allow"}
            }),
        );
    }
    let gateway = serde_json::json!({"mode": "passthrough", "mcpServers": servers});
    std::fs::write(&file, serde_json::to_vec_pretty(&gateway)?)?;
    eprintln!("==> soak: starting the gateway");
    let mut child = Command::new(bin.join("mcp-host"))
        .args(["serve", "--gateway"])
        .arg(&file)
        .args(["--http", "127.0.0.1:0"])
        // Each client holds two or three connections (its POSTs and the standalone GET
        // stream): 200 of them pass the default limit of 512, past which the gateway answers
        // 503 by design. The soak is about upstreams dying, not that limit.
        .args(["--max-connections", "2048"])
        // The upstreams' state is written to the era memory and token store of a home of
        // the soak's own, never the user's.
        .env("HOME", &dir)
        .env("XDG_CONFIG_HOME", dir.join("config"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .context("starting mcp-host serve")?;
    let gateway = Gateway(child.id());
    let url = listening(&mut child)?;
    // Give every upstream its first start before the clients come.
    std::thread::sleep(Duration::from_secs(1));
    eprintln!(
        "==> soak: {clients} clients for {minutes} min against {url}, an upstream killed every {kill_every} s"
    );
    let status = Command::new(bin.join("mcp-soak"))
        .args(["--url", &url, "--gateway-pid", &gateway.0.to_string()])
        .args([
            "--upstreams",
            &UPSTREAMS.to_string(),
            "--clients",
            &clients.to_string(),
        ])
        .args(["--seconds", &(minutes * 60.0).to_string()])
        .args(["--kill-every", &kill_every.to_string()])
        .status()
        .context("running mcp-soak")?;
    drop(gateway);
    let _ = child.wait();
    if !status.success() {
        bail!("xtask soak: the run failed (see above)");
    }
    Ok(())
}

/// Ends the gateway however the run ends.
struct Gateway(u32);

impl Drop for Gateway {
    fn drop(&mut self) {
        let _ = Command::new("kill").arg(self.0.to_string()).status();
    }
}

/// The gateway's URL, from its `listening on http://…/mcp` line; what it writes to
/// standard error afterwards is drained so that it never blocks on a full pipe.
fn listening(child: &mut Child) -> anyhow::Result<String> {
    let stderr = child
        .stderr
        .take()
        .context("the gateway's standard error")?;
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut tx = Some(tx);
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if let Some(at) = line.find("listening on http://") {
                let url = line[at + "listening on ".len()..]
                    .split_whitespace()
                    .next()
                    .unwrap_or_default()
                    .to_owned();
                if let Some(tx) = tx.take() {
                    let _ = tx.send(url);
                }
            }
        }
    });
    rx.recv_timeout(Duration::from_secs(60))
        .context("the gateway never said `listening on http://…`")
}
