//! `cargo xtask netfault`: a Streamable HTTP server and our host on two sides of a real
//! (virtual) network, which is then made slow, lossy, and cut in the middle of an SSE stream.
//!
//! Two network namespaces of our own (`mcpnf-srv`, `mcpnf-host`) joined by a veth pair with
//! the addresses 10.200.77.1/30 (server) and 10.200.77.2/30 (host), which exist only inside
//! them. The server is `mcp-host demo-server --http`; the host is the `netfault` example of
//! `mcp-host` (`crates/mcp-host/examples/netfault.rs`), a `Host` with one server, pinging
//! after 1 s of silence with a 2 s deadline, driven line by line from here. `tc netem` on both
//! ends of the veth pair adds latency and loss, then drops every packet (no reset, no link
//! down: the server simply vanishes) while a call's SSE answer is streaming progress.
//!
//! Checked: under latency and loss calls succeed and the pings keep the connection; after the
//! cut the host notices (the server's state leaves `ready`) and the call in flight fails,
//! naming the server and the tool and saying that the server stopped answering; after the
//! cut heals the host reconnects by itself and a call succeeds. The times to notice and to
//! recover are measured and printed, with a generous bound only.
//!
//! Needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN for `ip netns`) and iproute2 with `tc`; without
//! them it fails and says so, never passes silently. Namespaces left by an earlier run are
//! removed first, and ours are removed however the run ends.

use std::io::{BufRead as _, BufReader, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use xshell::{Shell, cmd};

use crate::flags;

const SERVER_NS: &str = "mcpnf-srv";
const HOST_NS: &str = "mcpnf-host";
/// Every namespace of ours starts with this, so a stale one is recognised.
const PREFIX: &str = "mcpnf-";
const SERVER_ADDR: &str = "10.200.77.1";
const HOST_ADDR: &str = "10.200.77.2";
const PORT: &str = "8077";
/// The veth end in each namespace.
const DEV: &str = "veth0";

/// The host's liveness settings for this run.
const PING_INTERVAL_MS: u64 = 1000;
const PING_TIMEOUT_MS: u64 = 2000;
/// The longest time to notice the cut that passes: the settings allow 3 s after the last
/// frame heard; the rest is slack for a loaded CI machine.
const NOTICE_BOUND_MS: u128 = 15_000;

impl flags::Netfault {
    pub(crate) fn run(self, sh: &Shell) -> anyhow::Result<()> {
        preflight(sh)?;
        remove_stale(sh);
        eprintln!("==> netfault: building the server and the host");
        let debug = crate::binaries::build(sh)?;
        let network = Network::create(sh)?;
        let result = scenario(sh, &debug, self.steady_seconds.unwrap_or(4));
        drop(network);
        result
    }
}

/// Fails with what is missing, instead of skipping.
fn preflight(sh: &Shell) -> anyhow::Result<()> {
    let uid = cmd!(sh, "id -u").quiet().read().unwrap_or_default();
    if uid.trim() != "0" {
        bail!(
            "xtask netfault: must run as root (it creates network namespaces, a veth pair and tc qdiscs); running as uid {}",
            uid.trim()
        );
    }
    for tool in ["ip", "tc"] {
        if cmd!(sh, "which {tool}")
            .quiet()
            .ignore_stdout()
            .run()
            .is_err()
        {
            bail!("xtask netfault: `{tool}` (iproute2) is not installed");
        }
    }
    Ok(())
}

/// Deletes every namespace of ours an earlier run left, with whatever still runs in it.
fn remove_stale(sh: &Shell) {
    let listed = cmd!(sh, "ip netns list").quiet().read().unwrap_or_default();
    for name in listed.lines().filter_map(|l| l.split_whitespace().next()) {
        if name.starts_with(PREFIX) {
            eprintln!("==> netfault: removing the stale namespace {name}");
            delete_namespace(sh, name);
        }
    }
}

/// Kills what runs in namespace `name` (only our processes run there) and deletes it, which
/// deletes its veth end and so the pair.
fn delete_namespace(sh: &Shell, name: &str) {
    let pids = cmd!(sh, "ip netns pids {name}")
        .quiet()
        .ignore_stderr()
        .read()
        .unwrap_or_default();
    for pid in pids.split_whitespace() {
        let _ = cmd!(sh, "kill -KILL {pid}").quiet().ignore_stderr().run();
    }
    let _ = cmd!(sh, "ip netns del {name}")
        .quiet()
        .ignore_stderr()
        .run();
}

/// The two namespaces and their link, deleted on drop.
struct Network<'a> {
    sh: &'a Shell,
}

impl<'a> Network<'a> {
    fn create(sh: &'a Shell) -> anyhow::Result<Self> {
        let network = Self { sh };
        let steps = || -> xshell::Result<()> {
            cmd!(sh, "ip netns add {SERVER_NS}").run()?;
            cmd!(sh, "ip netns add {HOST_NS}").run()?;
            cmd!(
                sh,
                "ip -n {HOST_NS} link add {DEV} type veth peer name {DEV} netns {SERVER_NS}"
            )
            .run()?;
            for (ns, addr) in [(SERVER_NS, SERVER_ADDR), (HOST_NS, HOST_ADDR)] {
                cmd!(sh, "ip -n {ns} addr add {addr}/30 dev {DEV}").run()?;
                cmd!(sh, "ip -n {ns} link set {DEV} up").run()?;
                cmd!(sh, "ip -n {ns} link set lo up").run()?;
            }
            Ok(())
        };
        steps().context(
            "xtask netfault: cannot create the network namespaces and veth pair (needs root with CAP_NET_ADMIN and CAP_SYS_ADMIN, and a kernel with network namespaces and veth)",
        )?;
        Ok(network)
    }
}

impl Drop for Network<'_> {
    fn drop(&mut self) {
        for ns in [HOST_NS, SERVER_NS] {
            delete_namespace(self.sh, ns);
        }
    }
}

/// What the link does to packets.
#[derive(Debug, Clone, Copy)]
enum Link {
    /// Nothing.
    Clear,
    /// Latency and loss: netem's `delay 50ms 10ms loss 2%` each way; on a kernel without
    /// netem, tbf's rate limit (a 512 kbit/s link with a 40 ms queue, which drops bursts).
    Impaired,
    /// Every packet dropped, each way: netem's `loss 100%`, or a pfifo of length 0. No reset
    /// and no link down: to both ends the other simply goes quiet.
    Cut,
}

/// Whether the kernel has netem (many CI kernels build it as a module, some not at all).
fn has_netem(sh: &Shell) -> bool {
    let ok = cmd!(
        sh,
        "ip netns exec {SERVER_NS} tc qdisc replace dev {DEV} root netem delay 1ms"
    )
    .quiet()
    .ignore_stderr()
    .run()
    .is_ok();
    set_link(sh, Link::Clear, ok).is_ok() && ok
}

/// Puts the same qdisc on both ends of the link, so both directions are affected.
fn set_link(sh: &Shell, link: Link, netem: bool) -> anyhow::Result<()> {
    let spec = match (link, netem) {
        (Link::Clear, _) => None,
        (Link::Impaired, true) => Some("netem delay 50ms 10ms loss 2%"),
        (Link::Impaired, false) => Some("tbf rate 512kbit burst 3kb latency 40ms"),
        (Link::Cut, true) => Some("netem loss 100%"),
        (Link::Cut, false) => Some("pfifo limit 0"),
    };
    for ns in [SERVER_NS, HOST_NS] {
        match spec {
            Some(spec) => {
                let spec: Vec<&str> = spec.split_whitespace().collect();
                cmd!(
                    sh,
                    "ip netns exec {ns} tc qdisc replace dev {DEV} root {spec...}"
                )
                .run()
                .with_context(|| format!("xtask netfault: tc in {ns}"))?;
            }
            None => {
                // Nothing to remove is fine: the link is clear.
                let _ = cmd!(sh, "ip netns exec {ns} tc qdisc del dev {DEV} root")
                    .quiet()
                    .ignore_stderr()
                    .run();
            }
        }
    }
    Ok(())
}

/// A child process, killed with its group if still running when dropped.
struct Guard(Child);

impl Drop for Guard {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", self.0.id())])
            .status();
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The driver: its stdin, and its stdout lines through a channel (a reader thread, so a
/// wait can time out).
struct Driver {
    stdin: ChildStdin,
    lines: mpsc::Receiver<String>,
    _child: Guard,
}

impl Driver {
    fn send(&mut self, line: &str) -> anyhow::Result<()> {
        eprintln!("    netfault > {line}");
        writeln!(self.stdin, "{line}").context("writing to the netfault driver")?;
        self.stdin.flush().context("writing to the netfault driver")
    }

    /// The next line, which must start with `word`, within `limit`.
    fn expect(&mut self, word: &str, limit: Duration) -> anyhow::Result<String> {
        match self.lines.recv_timeout(limit) {
            Ok(line) => {
                eprintln!("    netfault < {line}");
                if line.split_whitespace().next() != Some(word) {
                    bail!("xtask netfault: expected `{word} …` from the driver, got {line:?}");
                }
                Ok(line)
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {
                bail!(
                    "xtask netfault: no `{word}` from the driver within {} s",
                    limit.as_secs()
                )
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                bail!("xtask netfault: the driver ended before `{word}` (its error is above)")
            }
        }
    }
}

/// The `key=value` number in a driver line.
fn number(line: &str, key: &str) -> anyhow::Result<u128> {
    line.split_whitespace()
        .find_map(|w| w.strip_prefix(key)?.strip_prefix('='))
        .and_then(|v| v.parse().ok())
        .with_context(|| format!("no {key}= in {line:?}"))
}

fn scenario(sh: &Shell, debug: &Path, steady_seconds: u64) -> anyhow::Result<()> {
    let began = Instant::now();
    let mcp_host = debug.join("mcp-host");
    let mut server = Command::new("ip");
    server
        .args(["netns", "exec", SERVER_NS])
        .arg(&mcp_host)
        .args(["demo-server", "--http", &format!("{SERVER_ADDR}:{PORT}")])
        .stdin(Stdio::null())
        .stdout(Stdio::null());
    std::os::unix::process::CommandExt::process_group(&mut server, 0);
    let _server = Guard(server.spawn().context("starting the demo server")?);
    wait_listening(sh)?;

    let mut driver = start_driver(&debug.join("examples").join("netfault"))?;
    let ready = driver.expect("ready", Duration::from_secs(30))?;
    if !ready.contains("era=handshake") {
        bail!("xtask netfault: the session is not in the handshake era: {ready}");
    }

    let netem = has_netem(sh);
    if netem {
        eprintln!("==> netfault: 50 ms each way and 2% loss each way (netem)");
    } else {
        eprintln!(
            "==> netfault: this kernel has no netem qdisc; a 512 kbit/s link that drops bursts (tbf) instead, and a cut by a pfifo of length 0"
        );
    }
    set_link(sh, Link::Impaired, netem)?;
    driver.send(&format!("steady {steady_seconds}"))?;
    let steady = driver.expect("steady", Duration::from_secs(steady_seconds + 60))?;

    eprintln!("==> netfault: a call in flight, then every packet dropped");
    set_link(sh, Link::Clear, netem)?;
    driver.send("call")?;
    driver.expect("in-flight", Duration::from_secs(20))?;
    set_link(sh, Link::Cut, netem)?;
    driver.send("partitioned")?;
    let noticed = driver.expect("noticed", Duration::from_secs(100))?;
    let failed = driver.expect("call-failed", Duration::from_secs(100))?;
    let noticed_ms = number(&noticed, "ms")?;
    let failed_ms = number(&failed, "ms")?;
    if noticed_ms > NOTICE_BOUND_MS {
        bail!(
            "xtask netfault: the cut was noticed after {noticed_ms} ms, past the {NOTICE_BOUND_MS} ms bound (ping every {PING_INTERVAL_MS} ms, deadline {PING_TIMEOUT_MS} ms)"
        );
    }
    if !noticed.contains("phase=connection") || !noticed.contains("stopped answering") {
        bail!(
            "xtask netfault: the server's status does not say the connection was lost to silence: {noticed}"
        );
    }
    if !failed.contains("server `faraway`")
        || !failed.contains("slow")
        || !failed.contains("stopped answering")
    {
        bail!(
            "xtask netfault: the call's error does not name the server, the tool and the silence: {failed}"
        );
    }

    eprintln!("==> netfault: the cut heals");
    set_link(sh, Link::Clear, netem)?;
    driver.send("healed")?;
    let recovered = driver.expect("recovered", Duration::from_secs(90))?;
    let recovered_ms = number(&recovered, "ms")?;
    driver.send("quit")?;

    eprintln!(
        "xtask netfault: passed in {} s ({}). Ping every {PING_INTERVAL_MS} ms, deadline {PING_TIMEOUT_MS} ms: \
         the cut was noticed {noticed_ms} ms after it was made and the call in flight failed at {failed_ms} ms; \
         reconnected and called {recovered_ms} ms after it healed. Under latency and loss: {steady}",
        began.elapsed().as_secs(),
        if netem {
            "netem"
        } else {
            "tbf and pfifo: no netem in this kernel"
        }
    );
    Ok(())
}

/// Waits until the server listens inside its namespace.
fn wait_listening(sh: &Shell) -> anyhow::Result<()> {
    let end = Instant::now() + Duration::from_secs(20);
    while Instant::now() < end {
        let listening = cmd!(sh, "ip netns exec {SERVER_NS} ss -Hltn")
            .quiet()
            .read()
            .unwrap_or_default();
        if listening.contains(&format!("{SERVER_ADDR}:{PORT}")) {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    bail!("xtask netfault: the demo server did not listen on {SERVER_ADDR}:{PORT} within 20 s")
}

fn start_driver(binary: &PathBuf) -> anyhow::Result<Driver> {
    let mut command = Command::new("ip");
    command
        .args(["netns", "exec", HOST_NS])
        .arg(binary)
        .args(["--url", &format!("http://{SERVER_ADDR}:{PORT}/mcp")])
        .args(["--ping-interval-ms", &PING_INTERVAL_MS.to_string()])
        .args(["--ping-timeout-ms", &PING_TIMEOUT_MS.to_string()])
        .args(["--protocol-version", "2025-11-25"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped());
    std::os::unix::process::CommandExt::process_group(&mut command, 0);
    let mut child = command.spawn().context("starting the netfault driver")?;
    let stdin = child.stdin.take().context("stdin was piped")?;
    let stdout = child.stdout.take().context("stdout was piped")?;
    let (tx, lines) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    Ok(Driver {
        stdin,
        lines,
        _child: Guard(child),
    })
}
