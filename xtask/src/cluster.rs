//! `cargo xtask cluster [--replicas 3] [--minutes 2] [--clients 100] [--unshared]`: N gateway
//! replicas behind nginx, sharing one Redis, under load while one replica is killed and
//! started again (issue 24 section 3). `cargo xtask ci` runs a short version.
//!
//! What runs, all on loopback, in `target/cluster/`:
//! - redis-server and nginx, Debian's (installed with apt-get when missing, as the keyring leg
//!   installs gnome-keyring); Redis keeps nothing on disk.
//! - the testkit's `mcp-cluster`, started first: it serves the OAuth-protected upstream (the
//!   testkit's fake authorization server and MCP endpoint, short-lived access tokens, rotating
//!   refresh tokens) and `asker`, a plain Streamable HTTP upstream that asks the client mid-call,
//!   then drives the load through nginx and judges (see its header).
//! - one `mcp-host login --gateway FILE remote`, with this task as the browser, so that the
//!   tokens are in the store before any replica starts.
//! - N replicas, `mcp-host serve --gateway FILE --http 127.0.0.1:PORT`, on the same gateway
//!   file: upstream `fake` (the testkit's `mcp-fake-server` over stdio, a process per replica)
//!   and upstreams `remote` (the protected one) and `asker`, shared by all. The file's `store` block names
//!   the Redis and its `cluster` block the shared session key. Each replica is supervised as
//!   systemd's `Restart=always` would: when it dies it is started again on its port.
//! - nginx in front: round robin, no affinity, HTTP/1.1 keep-alive to the replicas,
//!   `proxy_buffering off` (answers stream as SSE), long read timeouts for the GET streams.
//!   nginx lets an idle connection to a replica go after 4 s (`keepalive_timeout`, 60 s by
//!   default), before the replica closes it (10 s, its `header_read_timeout`): otherwise
//!   nginx may send a POST on a connection just as the replica closes it, and answers `502`
//!   without trying another (a POST is not idempotent). A run saw two such `502`s from a
//!   replica nobody killed, 12 s after the kill (the connections opened in its burst, idle
//!   since).
//!
//! `proxy_next_upstream` is nginx's default, `error timeout`, without `non_idempotent`: a
//! request nginx could not deliver (the connection to a dead replica refused) goes to the next
//! replica, but a POST already sent to a replica that then dies is answered `502` and never
//! sent twice, since a tools/call is not idempotent; the client sees a `502` it may retry, and
//! `mcp-cluster` allows exactly those failures, for calls in flight when the replica died.
//! Every nginx answer of 400 or more is logged (status, method, replica) in
//! `target/cluster/nginx-failed.log`, which `mcp-cluster` reads to tie each failure to the
//! replica that was killed.
//!
//! `--file-store` leaves out the `store` block and has the replicas share one token file (the
//! single-machine store, with its file locks), to tell a fault of the Redis store from one of
//! the host's refresh logic.
//!
//! `--unshared` leaves out the `store` and `cluster` blocks and gives each replica a token
//! store file of its own (a copy of the one login's): what N machines without a shared store
//! would have. The run must then fail (sessions lost, refreshes refused or repeated): a check
//! that the judge can fail.

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, mpsc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use serde_json::json;
use xshell::{Shell, cmd};

use crate::flags;

/// What the replicas share.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Sharing {
    /// The gateway file's `store` (Redis: upstream tokens, their refresh turns, rate counters,
    /// ended sessions) and `cluster` (the session key) blocks: the normal case.
    Redis,
    /// The `cluster` block, and one token file for all (as on one machine): to compare with
    /// Redis.
    File,
    /// Neither: a check that the judge fails.
    Nothing,
}

/// What one run is made of.
struct Plan {
    replicas: usize,
    seconds: f64,
    clients: usize,
    /// The access tokens' lifetime at the authorization server, in seconds: short, so that a
    /// run sees many refreshes.
    token_lifetime: u64,
    /// What the replicas share.
    sharing: Sharing,
}

impl flags::Cluster {
    pub(crate) fn run(self, sh: &Shell) -> anyhow::Result<()> {
        run(
            sh,
            &Plan {
                replicas: self.replicas.unwrap_or(3),
                seconds: self.minutes.unwrap_or(2.0) * 60.0,
                clients: self.clients.unwrap_or(100),
                token_lifetime: 20,
                sharing: if self.unshared {
                    Sharing::Nothing
                } else if self.file_store {
                    Sharing::File
                } else {
                    Sharing::Redis
                },
            },
        )
    }
}

/// The leg of `ci`: 3 replicas, 30 clients, 25 s, tokens living 8 s; then the Redis tests
/// of `mcp-cli` (`tests/redis.rs`, left out of the plain `cargo test` because they need
/// redis-server), against the same Debian redis-server.
pub(crate) fn short(sh: &Shell) -> anyhow::Result<()> {
    let cluster = run(
        sh,
        &Plan {
            replicas: 3,
            seconds: 25.0,
            clients: 30,
            // Three lifetimes in the run, so that refreshes across replicas are judged too.
            token_lifetime: 8,
            sharing: Sharing::Redis,
        },
    );
    // The tests run whatever the cluster did, so that one failure does not hide the other.
    let redis = debian_binary(sh, "/usr/bin/redis-server", "redis-server")?;
    eprintln!("==> cluster: mcp-cli's Redis tests");
    let _redis = sh.push_env("MCP_HOST_TEST_REDIS_SERVER", &redis);
    // `--workspace` (the test target is mcp-cli's alone) resolves features as the test step's
    // `cargo test --workspace` did, so nothing is built again but this target.
    let tests = cmd!(sh, "cargo test --quiet --workspace --test redis")
        .run()
        .context("mcp-cli's Redis tests failed (their output is above)");
    cluster.and(tests)
}

fn run(sh: &Shell, plan: &Plan) -> anyhow::Result<()> {
    let nginx = debian_binary(sh, "/usr/sbin/nginx", "nginx")?;
    let redis = debian_binary(sh, "/usr/bin/redis-server", "redis-server")?;
    eprintln!("==> cluster: building the binaries");
    let bin = crate::binaries::build(sh)?;
    let dir = crate::target_dir().join("cluster");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("nginx-temp"))?;

    let redis_port = free_port()?;
    let nginx_port = free_port()?;
    let ports: Vec<u16> = (0..plan.replicas)
        .map(|_| free_port())
        .collect::<anyhow::Result<_>>()?;

    eprintln!("==> cluster: redis-server on 127.0.0.1:{redis_port}");
    let redis_child = Command::new(&redis)
        .args(["--port", &redis_port.to_string(), "--bind", "127.0.0.1"])
        .args(["--save", "", "--appendonly", "no", "--daemonize", "no"])
        .arg("--dir")
        .arg(&dir)
        .arg("--logfile")
        .arg(dir.join("redis.log"))
        .stdin(Stdio::null())
        .spawn()
        .context("starting redis-server")?;
    let _redis = Ended(redis_child.id(), "TERM");
    wait_for_port(redis_port, "redis-server")?;

    // nginx next, on the port just picked, before anything else can take it: a port free
    // when picked may be another process's by the time a late nginx binds it, and a
    // stranger answering there would take the whole load (a run saw 7,355 404s). It waits
    // for the replicas' ports to open; nobody sends it anything before they are ready.
    eprintln!("==> cluster: nginx on 127.0.0.1:{nginx_port}, round robin");
    let conf = dir.join("nginx.conf");
    std::fs::write(&conf, nginx_conf(&dir, nginx_port, &ports))?;
    let mut nginx_child = Command::new(&nginx)
        .arg("-p")
        .arg(&dir)
        .arg("-c")
        .arg(&conf)
        .stdin(Stdio::null())
        .spawn()
        .context("starting nginx")?;
    let _nginx = Ended(nginx_child.id(), "QUIT");
    wait_for_nginx(&mut nginx_child, nginx_port, &dir)?;

    // The load process first: it serves the protected upstream the gateway file names.
    let replica_list = ports
        .iter()
        .map(u16::to_string)
        .collect::<Vec<_>>()
        .join(",");
    let mut load = Command::new(bin.join("mcp-cluster"))
        .args(["--url", &format!("http://127.0.0.1:{nginx_port}/mcp")])
        .args(["--replicas", &replica_list])
        .args(["--clients", &plan.clients.to_string()])
        .args(["--seconds", &plan.seconds.to_string()])
        .args(["--token-lifetime", &plan.token_lifetime.to_string()])
        .arg("--failed-log")
        .arg(dir.join("nginx-failed.log"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .context("starting mcp-cluster")?;
    let load_guard = Ended(load.id(), "KILL");
    let mut load_in = load.stdin.take().context("mcp-cluster's stdin")?;
    let mut load_out = BufReader::new(load.stdout.take().context("mcp-cluster's stdout")?);
    let mut named = |name: &str| -> anyhow::Result<String> {
        let mut line = String::new();
        load_out.read_line(&mut line)?;
        let url = line
            .trim()
            .strip_prefix(name)
            .and_then(|r| r.strip_prefix(' '));
        url.map(str::to_owned)
            .with_context(|| format!("mcp-cluster did not name its {name}: {line:?}"))
    };
    let (remote, asker) = (named("upstream")?, named("asker")?);
    let copier = std::thread::spawn(move || {
        for line in load_out.lines().map_while(Result::ok) {
            println!("{line}");
        }
    });

    let file = dir.join("gateway.json");
    let mut gateway = json!({
        "mode": "passthrough",
        "mcpServers": {
            "fake": {"command": bin.join("mcp-fake-server"), "permission": {"default": "allow"}},
            "remote": {"type": "http", "url": remote, "permission": {"default": "allow"}},
            "asker": {"type": "http", "url": asker, "permission": {"default": "allow"}},
        },
    });
    if plan.sharing == Sharing::Redis {
        gateway["store"] = json!({"redis": format!("redis://127.0.0.1:{redis_port}")});
    }
    if plan.sharing != Sharing::Nothing {
        gateway["cluster"] = json!({"sessionKeys": ["${MCP_CLUSTER_SESSION_KEY}"]});
    }
    std::fs::write(&file, serde_json::to_vec_pretty(&gateway)?)?;

    let mcp_host = bin.join("mcp-host");
    let seed = Home::new(&dir.join("login"))?;
    eprintln!(
        "==> cluster: mcp-host login --gateway {} remote",
        file.display()
    );
    // The replicas' session key, in the environment of every command that reads the file.
    let key = session_key()?;
    login(&mcp_host, &file, &seed, &key)?;
    if plan.sharing == Sharing::Redis {
        seed_redis(redis_port, &seed.auth_file)?;
    }
    // A home each, as on machines of their own: with the store block, what they share is in
    // Redis only; without it, each starts from a copy of the login's token file, or (with
    // --file-store) they all use that file.
    let homes: Vec<Home> = (0..plan.replicas)
        .map(|i| match plan.sharing {
            Sharing::File => Ok(seed.clone()),
            Sharing::Redis => Home::new(&dir.join(format!("replica-{i}"))),
            Sharing::Nothing => {
                let home = Home::new(&dir.join(format!("replica-{i}")))?;
                std::fs::copy(&seed.auth_file, &home.auth_file)
                    .context("copying the token store")?;
                Ok(home)
            }
        })
        .collect::<anyhow::Result<_>>()?;

    eprintln!(
        "==> cluster: {} replicas on ports {replica_list}{}",
        plan.replicas,
        match plan.sharing {
            Sharing::Redis => ", sharing Redis (tokens) and the session key",
            Sharing::File => ", sharing one token file and the session key (--file-store)",
            Sharing::Nothing => ", each with its own tokens and sessions (--unshared)",
        }
    );
    let replicas = Replicas::start(&mcp_host, &file, &ports, &homes, &dir, &key)?;
    for port in &ports {
        wait_ready(*port)?;
    }

    eprintln!(
        "==> cluster: {} clients for {} s through nginx, one replica killed halfway",
        plan.clients, plan.seconds
    );
    writeln!(load_in, "go")?;
    let status = load.wait().context("waiting for mcp-cluster")?;
    // Reaped: its id may be another process's from now on.
    std::mem::forget(load_guard);
    let _ = copier.join();
    let restarts = replicas.stop();
    eprintln!("==> cluster: replicas started again after dying: {restarts}");
    if !status.success() {
        bail!(
            "xtask cluster: the run failed (see above; logs in {})",
            dir.display()
        );
    }
    if restarts == 0 {
        bail!("xtask cluster: no replica was killed and started again");
    }
    Ok(())
}

/// The session key the replicas share (`cluster.sessionKeys`): 32 random bytes from the
/// kernel, in base64 as the block wants them, given to the replicas in their environment.
fn session_key() -> anyhow::Result<String> {
    let mut bytes = [0u8; 32];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .context("reading /dev/urandom for the session key")?;
    Ok(base64(&bytes))
}

/// Standard base64 with padding (RFC 4648 section 4).
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, b)| n | u32::from(*b) << (16 - 8 * i));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[(n >> (18 - 6 * i) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// The token store's key in Redis, with the `store` block's default prefix.
const REDIS_TOKENS: &str = "mcp-host:oauth";

/// Puts the login's tokens where the replicas look for them: the store block's Redis key
/// holds the same document as the token file. Left alone when the login wrote it already.
fn seed_redis(port: u16, auth_file: &Path) -> anyhow::Result<()> {
    if redis(port, &[b"EXISTS", REDIS_TOKENS.as_bytes()])? == ":1" {
        eprintln!("==> cluster: the login put the tokens in Redis");
        return Ok(());
    }
    let document = std::fs::read(auth_file)
        .with_context(|| format!("the login wrote no token file at {}", auth_file.display()))?;
    let reply = redis(port, &[b"SET", REDIS_TOKENS.as_bytes(), &document])?;
    anyhow::ensure!(reply == "+OK", "Redis refused the tokens: {reply}");
    eprintln!("==> cluster: the login's token file copied to Redis ({REDIS_TOKENS})");
    Ok(())
}

/// One Redis command (RESP2) over a fresh connection: the reply's first line. The arguments
/// travel on the socket, never on a command line.
fn redis(port: u16, args: &[&[u8]]) -> anyhow::Result<String> {
    let mut request = format!("*{}\r\n", args.len()).into_bytes();
    for arg in args {
        request.extend_from_slice(format!("${}\r\n", arg.len()).as_bytes());
        request.extend_from_slice(arg);
        request.extend_from_slice(b"\r\n");
    }
    let mut stream = TcpStream::connect(("127.0.0.1", port)).context("connecting to Redis")?;
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    stream.write_all(&request)?;
    let mut line = String::new();
    BufReader::new(stream).read_line(&mut line)?;
    Ok(line.trim_end().to_owned())
}

/// Where one `mcp-host` keeps its configuration and tokens.
#[derive(Clone)]
struct Home {
    root: PathBuf,
    auth_file: PathBuf,
}

impl Home {
    fn new(root: &Path) -> anyhow::Result<Self> {
        std::fs::create_dir_all(root.join("config"))?;
        Ok(Self {
            root: root.to_path_buf(),
            auth_file: root.join("mcp-auth.json"),
        })
    }

    /// An environment of its own: no user files, the file token store, no session bus.
    fn apply(&self, cmd: &mut Command) {
        cmd.env("HOME", &self.root)
            .env("XDG_CONFIG_HOME", self.root.join("config"))
            .env("MCP_HOST_AUTH_FILE", &self.auth_file)
            .env("MCP_HOST_CREDENTIALS_STORE", "file")
            .env_remove("DBUS_SESSION_BUS_ADDRESS");
    }
}

/// `mcp-host login --gateway FILE remote`, with this task as the browser: it opens the
/// address the command prints and follows the authorization server's redirect back to it.
fn login(mcp_host: &Path, file: &Path, home: &Home, key: &str) -> anyhow::Result<()> {
    let mut cmd = Command::new(mcp_host);
    cmd.args(["login", "--gateway"])
        .arg(file)
        .arg("remote")
        // A browser that does nothing: the address is followed from here.
        .env("BROWSER", "true")
        .env("MCP_CLUSTER_SESSION_KEY", key)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    home.apply(&mut cmd);
    let mut child = cmd.spawn().context("starting mcp-host login")?;
    let guard = Ended(child.id(), "KILL");
    let mut stderr = BufReader::new(child.stderr.take().context("login's stderr")?);
    let mut said = String::new();
    let url = loop {
        let mut line = String::new();
        if stderr.read_line(&mut line)? == 0 {
            bail!("mcp-host login printed no address to open: {said}");
        }
        said.push_str(&line);
        if let Some(rest) = line.trim().strip_prefix("http") {
            break format!("http{rest}");
        }
    };
    let (status, callback) = browse(&url)?;
    anyhow::ensure!(status == 302, "the authorization page answered {status}");
    let callback = callback.context("the authorization page redirected nowhere")?;
    let (status, _) = browse(&callback)?;
    anyhow::ensure!(status == 200, "the login's callback answered {status}");
    stderr.read_to_string(&mut said)?;
    let out = child.wait_with_output()?;
    std::mem::forget(guard);
    if !out.status.success() {
        bail!("mcp-host login failed: {said}");
    }
    Ok(())
}

/// A browser's GET of an `http://127.0.0.1:PORT/...` address: the status and the absolute
/// `Location`, if any.
fn browse(url: &str) -> anyhow::Result<(u16, Option<String>)> {
    let rest = url
        .strip_prefix("http://")
        .with_context(|| format!("not a plain http address: {url}"))?;
    let (authority, target) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let (status, head) = get(authority, if target.is_empty() { "/" } else { target })?;
    let location = head
        .lines()
        .find_map(|l| {
            let (name, value) = l.split_once(':')?;
            name.eq_ignore_ascii_case("location")
                .then(|| value.trim().to_owned())
        })
        .map(|l| {
            if l.starts_with('/') {
                format!("http://{authority}{l}")
            } else {
                l
            }
        });
    Ok((status, location))
}

/// One HTTP/1.1 GET over a fresh connection: the status and the head.
fn get(authority: &str, target: &str) -> anyhow::Result<(u16, String)> {
    let mut stream = TcpStream::connect(authority)?;
    stream.set_read_timeout(Some(Duration::from_secs(30)))?;
    write!(
        stream,
        "GET {target} HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\n\r\n"
    )?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer)?;
    let head = answer
        .split("\r\n\r\n")
        .next()
        .unwrap_or_default()
        .to_owned();
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .with_context(|| format!("no HTTP status from {authority}"))?;
    Ok((status, head))
}

/// Waits until a replica's `/readyz` answers 200: both upstreams ready.
fn wait_ready(port: u16) -> anyhow::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(60);
    let authority = format!("127.0.0.1:{port}");
    loop {
        if let Ok((200, _)) = get(&authority, "/readyz") {
            return Ok(());
        }
        if Instant::now() > deadline {
            let said = get(&authority, "/readyz")
                .map_or_else(|e| e.to_string(), |(s, h)| format!("{s} {h}"));
            bail!("the replica on port {port} was not ready within 60 s: {said}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn wait_for_port(port: u16, what: &str) -> anyhow::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(20);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        if Instant::now() > deadline {
            bail!("{what} did not listen on 127.0.0.1:{port} within 20 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(())
}

/// Waits until nginx, started as `child` with its pid file and error log in `dir`, listens on
/// `port`: its pid file names it (nginx writes it once its sockets are bound) and the port
/// answers. Fails at once, with nginx's error log, if it exits first (the port was taken, or
/// the configuration is refused), instead of taking whoever listens there for it.
fn wait_for_nginx(child: &mut Child, port: u16, dir: &Path) -> anyhow::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(20);
    let pid = child.id().to_string();
    let log = || std::fs::read_to_string(dir.join("nginx-error.log")).unwrap_or_default();
    loop {
        if let Some(status) = child.try_wait().context("waiting for nginx")? {
            bail!(
                "nginx exited ({status}) instead of listening on 127.0.0.1:{port}; its log:\n{}",
                log()
            );
        }
        let written = std::fs::read_to_string(dir.join("nginx.pid")).unwrap_or_default();
        if written.trim() == pid && TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!(
                "nginx did not listen on 127.0.0.1:{port} within 20 s; its log:\n{}",
                log()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A port free now (the kernel's choice), for a process started next to bind.
fn free_port() -> anyhow::Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// nginx's configuration: see the module header for the choices.
fn nginx_conf(dir: &Path, port: u16, replicas: &[u16]) -> String {
    let servers: String = replicas
        .iter()
        .map(|p| format!("        server 127.0.0.1:{p} max_fails=1 fail_timeout=2s;\n"))
        .collect();
    let dir = dir.display();
    format!(
        r#"daemon off;
worker_processes 1;
pid {dir}/nginx.pid;
error_log {dir}/nginx-error.log warn;
events {{ worker_connections 4096; }}
http {{
    client_body_temp_path {dir}/nginx-temp/body;
    proxy_temp_path {dir}/nginx-temp/proxy;
    fastcgi_temp_path {dir}/nginx-temp/fastcgi;
    uwsgi_temp_path {dir}/nginx-temp/uwsgi;
    scgi_temp_path {dir}/nginx-temp/scgi;
    map $status $failed {{ ~^[45] 1; default 0; }}
    log_format failed '$msec $status $request_method $upstream_addr $upstream_status';
    access_log {dir}/nginx-failed.log failed if=$failed;
    upstream gateway {{
{servers}        keepalive 64;
        keepalive_timeout 4s;
    }}
    server {{
        listen 127.0.0.1:{port};
        location / {{
            proxy_pass http://gateway;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host $http_host;
            proxy_buffering off;
            proxy_cache off;
            proxy_connect_timeout 2s;
            proxy_read_timeout 1h;
            proxy_send_timeout 1h;
            proxy_next_upstream error timeout;
            proxy_next_upstream_tries 3;
        }}
    }}
}}
"#
    )
}

/// The replicas, each kept running by a thread of its own that starts it again when it dies.
struct Replicas {
    stop: Arc<AtomicBool>,
    pids: Vec<Arc<AtomicU32>>,
    threads: Vec<JoinHandle<u32>>,
}

impl Replicas {
    fn start(
        mcp_host: &Path,
        file: &Path,
        ports: &[u16],
        homes: &[Home],
        dir: &Path,
        key: &str,
    ) -> anyhow::Result<Self> {
        let stop = Arc::new(AtomicBool::new(false));
        let mut pids = Vec::new();
        let mut threads = Vec::new();
        for (i, (port, home)) in ports.iter().zip(homes).enumerate() {
            let mut cmd = Command::new(mcp_host);
            cmd.args(["serve", "--gateway"])
                .arg(file)
                .args(["--http", &format!("127.0.0.1:{port}")])
                // Each client holds two or three connections through nginx's pool; the
                // default of 512 is not what this run is about.
                .args(["--max-connections", "2048"])
                .env("MCP_CLUSTER_SESSION_KEY", key)
                .stdin(Stdio::null())
                .stdout(Stdio::null());
            home.apply(&mut cmd);
            let log = dir.join(format!("replica-{i}.log"));
            let pid = Arc::new(AtomicU32::new(0));
            let (started_tx, started_rx) = mpsc::channel();
            let thread = {
                let (stop, pid) = (Arc::clone(&stop), Arc::clone(&pid));
                let port = *port;
                std::thread::spawn(move || supervise(cmd, &log, port, &stop, &pid, &started_tx))
            };
            started_rx
                .recv_timeout(Duration::from_secs(20))
                .with_context(|| format!("replica {i} did not start"))?;
            pids.push(pid);
            threads.push(thread);
        }
        Ok(Self {
            stop,
            pids,
            threads,
        })
    }

    /// Ends every replica (SIGTERM) and returns how many times one was started again.
    fn stop(self) -> u32 {
        self.stop.store(true, Ordering::SeqCst);
        for pid in &self.pids {
            let pid = pid.load(Ordering::SeqCst);
            if pid != 0 {
                let _ = Command::new("kill").arg(pid.to_string()).status();
            }
        }
        self.threads
            .into_iter()
            .map(|t| t.join().unwrap_or(0))
            .sum()
    }
}

/// Runs one replica until `stop`, starting it again whenever it dies; returns how many times
/// it was started again.
fn supervise(
    mut cmd: Command,
    log: &Path,
    port: u16,
    stop: &AtomicBool,
    pid: &AtomicU32,
    started: &mpsc::Sender<()>,
) -> u32 {
    let mut restarts = 0;
    loop {
        let child = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
            .and_then(|f| cmd.stderr(f).spawn());
        let mut child: Child = match child {
            Ok(c) => c,
            Err(e) => {
                eprintln!("cluster: replica on port {port} could not start: {e}");
                return restarts;
            }
        };
        pid.store(child.id(), Ordering::SeqCst);
        let _ = started.send(());
        let status = child.wait();
        if stop.load(Ordering::SeqCst) {
            return restarts;
        }
        eprintln!(
            "cluster: replica on port {port} ended ({}); starting it again",
            status.map_or_else(|e| e.to_string(), |s| s.to_string())
        );
        restarts += 1;
        // A port still held by the dying process is retried shortly.
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Debian's `package`, installed with apt-get when `path` is missing (as root on Debian).
pub(crate) fn debian_binary(sh: &Shell, path: &str, package: &str) -> anyhow::Result<PathBuf> {
    let path = Path::new(path);
    if path.exists() {
        return Ok(path.to_path_buf());
    }
    eprintln!("==> installing {package} with apt-get (the cluster leg)");
    let _frontend = sh.push_env("DEBIAN_FRONTEND", "noninteractive");
    let wait = ["-o", "DPkg::Lock::Timeout=300"];
    let install = || {
        cmd!(
            sh,
            "apt-get install -y --no-install-recommends {wait...} {package}"
        )
        .run()
    };
    if install().is_err() {
        cmd!(sh, "apt-get update {wait...}")
            .run()
            .with_context(|| format!("apt-get update failed: {package} cannot be installed"))?;
        install().with_context(|| {
            format!("apt-get could not install {package} (run as root on Debian)")
        })?;
    }
    anyhow::ensure!(
        path.exists(),
        "apt-get installed {package}, but {} is missing",
        path.display()
    );
    Ok(path.to_path_buf())
}

/// Sends a signal to a process of this run however the run ends.
struct Ended(u32, &'static str);

impl Drop for Ended {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .arg(format!("-{}", self.1))
            .arg(self.0.to_string())
            .stderr(Stdio::null())
            .status();
    }
}

#[cfg(test)]
#[path = "cluster_tests.rs"]
mod tests;
