//! `cargo xtask interop`'s login leg: `mcp-host login` as people live it, against the
//! TypeScript SDK's own OAuth example (`simpleStreamableHttp.js --oauth-strict`, and with
//! `cargo xtask interop --long` again with `--oauth`): its demo authorization server registers
//! clients dynamically, keeps them in memory and compares redirect URIs exactly. The browser
//! is Debian's Chromium, headless (installed with apt-get when missing), started by
//! `mcp-host login` through `$BROWSER`; it dumps the page it ends on, which the leg reads.
//!
//! Each run logs in three times in a row with `mcp-host logout` between (the same
//! registration at the same redirect URI each time), then once more after the demo server
//! restarted (it forgot its clients and tokens) with a refresh token it never issued in the
//! store (the demo issues none, and refuses any), each followed by a tool call. Then a login
//! that the authorization server refuses (a configured client registered for another redirect
//! URI) must fail, with a page that says so. Last, `login --gateway` logs in to the example
//! as a gateway file's upstream, and the gateway reaches it (`gateway_login.rs`).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use xshell::{Shell, cmd};

use crate::bounded::{self, PEER_STEP};
use crate::interop::{SDK, SDK_VERSION, free_port, npm_package, wait_listening};

/// The example server, inside the SDK package.
const EXAMPLE: &str = "dist/esm/examples/server/simpleStreamableHttp.js";

/// Runs the leg against the example's strict mode and, with `long`, its lenient one too.
///
/// Strict (`--oauth-strict`) asks everything of the client that lenient (`--oauth`) does,
/// and more: its authorization server exchanges a code only when the authorization asked
/// for the MCP server's own RFC 8707 `resource`, and its MCP server takes only tokens issued
/// for itself. The client cannot tell the modes apart,
/// so the lenient run repeats the same client code against a server that checks less, and
/// only `cargo xtask interop --long` spends the time on it.
pub(crate) fn run(sh: &Shell, node: &Path, tools: &Path, long: bool) -> anyhow::Result<()> {
    let example = npm_package(sh, &tools.join("sdk"), SDK, SDK_VERSION, EXAMPLE)?;
    let chromium = chromium(sh)?;
    let mcp_host = crate::binaries::build(sh)?.join("mcp-host");
    let modes: &[bool] = if long { &[false, true] } else { &[true] };
    for &strict in modes {
        let mode = if strict { "--oauth-strict" } else { "--oauth" };
        eprintln!("==> mcp-host login against {SDK}@{SDK_VERSION}'s OAuth example ({mode})");
        let dir = tools.join(format!(
            "interop-login{}",
            if strict { "-strict" } else { "" }
        ));
        let leg = Leg::new(sh, node, &example, &chromium, &mcp_host, &dir, strict)?;
        let outcome = leg.run();
        leg.stop();
        outcome.with_context(|| format!("the login leg ({mode}); files in {}", dir.display()))?;
    }
    Ok(())
}

/// Debian's Chromium: the installed one, else installed now with apt-get (the machines this
/// runs on are Debian, as root, with the registry reachable). The oidc-provider leg uses it too.
pub(crate) fn chromium(sh: &Shell) -> anyhow::Result<PathBuf> {
    let installed = || {
        ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
            .into_iter()
            .map(PathBuf::from)
            .find(|p| p.exists())
    };
    if let Some(path) = installed() {
        return Ok(path);
    }
    eprintln!("==> installing chromium with apt-get (the browser of the login legs)");
    let _frontend = sh.push_env("DEBIAN_FRONTEND", "noninteractive");
    // Another apt-get may hold the lock for a while: wait for it rather than fail.
    let wait = ["-o", "DPkg::Lock::Timeout=300"];
    if cmd!(
        sh,
        "apt-get install -y --no-install-recommends {wait...} chromium"
    )
    .run()
    .is_err()
    {
        // The package lists may be missing or stale.
        cmd!(sh, "apt-get update {wait...}")
            .run()
            .context("apt-get update failed: chromium cannot be installed")?;
        cmd!(
            sh,
            "apt-get install -y --no-install-recommends {wait...} chromium"
        )
        .run()
        .context(
            "apt-get could not install chromium (the login leg needs Debian's chromium; \
                 run as root on Debian, or install it yourself)",
        )?;
    }
    installed().context("apt-get installed chromium, but /usr/bin/chromium is missing")
}

/// One run of the leg: the example server, a user with a HOME of their own, a browser.
struct Leg<'a> {
    sh: Shell,
    node: &'a Path,
    example: &'a Path,
    mcp_host: &'a Path,
    strict: bool,
    mcp_port: u16,
    auth_port: u16,
    pages: PathBuf,
    home: PathBuf,
    log: PathBuf,
    server: std::cell::RefCell<Option<Child>>,
}

impl<'a> Leg<'a> {
    fn new(
        sh: &Shell,
        node: &'a Path,
        example: &'a Path,
        chromium: &Path,
        mcp_host: &'a Path,
        dir: &Path,
        strict: bool,
    ) -> anyhow::Result<Self> {
        let _ = std::fs::remove_dir_all(dir);
        let (home, project, pages) = (dir.join("home"), dir.join("project"), dir.join("pages"));
        for d in [&home, &project, &pages] {
            std::fs::create_dir_all(d)?;
        }
        // The browser: headless Chromium with a fresh profile, its final page dumped into
        // `pages` (written whole, then renamed, so a half-written page is never read).
        let browser = dir.join("browser.sh");
        let script = format!(
            "#!/bin/sh\n\
             profile=$(mktemp -d)\n\
             page={pages}/page-$(date +%s%N)\n\
             {chromium} --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
             --disable-background-networking --disable-component-update --disable-sync \
             --user-data-dir=\"$profile\" --dump-dom \"$1\" > \"$page.part\" 2>>{log}\n\
             mv \"$page.part\" \"$page.html\"\n\
             rm -rf \"$profile\"\n",
            pages = pages.display(),
            chromium = chromium.display(),
            log = dir.join("browser.log").display(),
        );
        std::fs::write(&browser, script)?;
        cmd!(sh, "chmod +x {browser}").run()?;
        let sh = sh.clone();
        sh.change_dir(&project);
        sh.set_var("HOME", &home);
        sh.set_var("MCP_HOST_CONFIG", "");
        sh.set_var("XDG_CONFIG_HOME", "");
        sh.set_var("BROWSER", &browser);
        let leg = Self {
            sh,
            node,
            example,
            mcp_host,
            strict,
            mcp_port: free_port()?,
            auth_port: free_port()?,
            pages,
            home,
            log: dir.join("server.log"),
            server: std::cell::RefCell::new(None),
        };
        leg.start_server()?;
        Ok(leg)
    }

    /// Starts (or starts again) the example server on the leg's ports.
    fn start_server(&self) -> anyhow::Result<()> {
        self.stop();
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)?;
        let mut args = vec!["--oauth"];
        if self.strict {
            args.push("--oauth-strict");
        }
        let child = Command::new(self.node)
            .arg(self.example)
            .args(&args)
            .env("MCP_PORT", self.mcp_port.to_string())
            .env("MCP_AUTH_PORT", self.auth_port.to_string())
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()
            .context("starting the TypeScript SDK's OAuth example")?;
        *self.server.borrow_mut() = Some(child);
        wait_listening(self.mcp_port, "the example's MCP server")?;
        wait_listening(self.auth_port, "the example's authorization server")
    }

    fn stop(&self) {
        if let Some(mut child) = self.server.borrow_mut().take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    fn url(&self) -> String {
        // The example names itself `localhost` in its protected resource metadata.
        format!("http://localhost:{}/mcp", self.mcp_port)
    }

    fn run(&self) -> anyhow::Result<()> {
        let (sh, mcp_host, url) = (&self.sh, self.mcp_host, self.url());
        cmd!(sh, "{mcp_host} add ts {url}").run()?;
        let mut client = None;
        for n in 1..=3 {
            self.login_and_call("ts", n)?;
            // The same registration, at the same redirect URI, every time.
            let now = self.registration()?;
            if client.as_ref().is_some_and(|c| *c != now) {
                bail!("login {n} registered anew ({now:?}; before: {client:?})");
            }
            client = Some(now);
            cmd!(sh, "{mcp_host} logout ts").run()?;
        }

        // The server forgets its clients and tokens; the stored access token has expired and
        // the refresh token beside it is refused.
        self.login_and_call("ts", 4)?;
        self.expire_with_dead_refresh_token("ts")?;
        self.start_server()?;
        eprintln!("    restarted the server (it forgot its clients); a dead refresh token stored");
        let stderr = self.login_and_call("ts", 5)?;
        if !stderr.contains("no longer takes the client registered there") {
            bail!("the login after the restart did not say it registered again:\n{stderr}");
        }
        let after = self.registration()?;
        if client.as_ref().is_some_and(|c| c.0 == after.0) {
            bail!("the login after the restart kept the forgotten client {after:?}");
        }
        self.refused_login()?;
        crate::gateway_login::run(&self.sh, self.mcp_host, &self.url())
    }

    /// `mcp-host login id` succeeds, the browser's page says so naming the server, and a
    /// tool call works. Returns login's stderr.
    fn login_and_call(&self, id: &str, n: u32) -> anyhow::Result<String> {
        let (sh, mcp_host) = (&self.sh, self.mcp_host);
        let before = self.page_count()?;
        let login = self.login(id)?;
        if !login.status.success() {
            bail!(
                "login {n} to `{id}` failed:\n{}",
                String::from_utf8_lossy(&login.stderr)
            );
        }
        let page = self.next_page(before)?;
        if !page.contains(&format!("Logged in to `{id}`")) {
            bail!("login {n}: the browser's page does not say it logged in to `{id}`:\n{page}");
        }
        let name = format!("login {n}");
        let args = format!("{{\"name\":\"{name}\"}}");
        let said = bounded::read(
            cmd!(sh, "{mcp_host} call -y {id} greet --args {args}"),
            "`mcp-host call` after the login",
            PEER_STEP,
        )?;
        if !said.contains(&format!("Hello, {name}!")) {
            bail!("the call after login {n} said: {said}");
        }
        eprintln!("    login {n} to `{id}`: ok, and `greet` answered");
        Ok(String::from_utf8_lossy(&login.stderr).into_owned())
    }

    /// Runs `mcp-host login id` to its end (bounded).
    fn login(&self, id: &str) -> anyhow::Result<std::process::Output> {
        let mcp_host = self.mcp_host;
        let mut command: Command = cmd!(self.sh, "{mcp_host} login {id}").into();
        command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let child = command.spawn().context("starting mcp-host login")?;
        let pid = child.id();
        let waiter = std::thread::spawn(move || child.wait_with_output());
        let end = Instant::now() + PEER_STEP;
        while !waiter.is_finished() {
            if Instant::now() >= end {
                let _ = Command::new("kill")
                    .args(["-KILL", &pid.to_string()])
                    .status();
                bail!("`mcp-host login {id}` did not end within {PEER_STEP:?}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        waiter
            .join()
            .map_err(|_| anyhow::anyhow!("the login's waiter panicked"))?
            .context("waiting for mcp-host login")
    }

    /// A configured client registered for another redirect URI: the demo authorization
    /// server sends the browser back with `error=invalid_request`. The login fails saying
    /// why first, and the page says it failed, naming the server and the error.
    fn refused_login(&self) -> anyhow::Result<()> {
        let (sh, mcp_host, url, node) = (&self.sh, self.mcp_host, self.url(), self.node);
        let register = format!(
            "fetch('http://localhost:{}/register', {{method: 'POST', \
             headers: {{'content-type': 'application/json'}}, \
             body: JSON.stringify({{client_name: 'elsewhere', token_endpoint_auth_method: 'none', \
             redirect_uris: ['http://127.0.0.1:9/callback']}})}})\
             .then(r => r.json()).then(j => console.log(j.client_id))",
            self.auth_port
        );
        let client_id = cmd!(sh, "{node} -e {register}").read()?;
        let client_id = client_id.trim();
        if client_id.is_empty() || client_id == "undefined" {
            bail!("the demo authorization server did not register a client");
        }
        cmd!(
            sh,
            "{mcp_host} add elsewhere {url} --oauth-client-id {client_id}"
        )
        .run()?;
        let before = self.page_count()?;
        let login = self.login("elsewhere")?;
        let stderr = String::from_utf8_lossy(&login.stderr).into_owned();
        if login.status.success() {
            bail!("a login the authorization server refused succeeded:\n{stderr}");
        }
        let error = stderr
            .lines()
            .find(|l| l.starts_with("mcp-host: error:"))
            .unwrap_or_default();
        let reason = error.find("Unregistered redirect_uri");
        let details = error.find("401");
        if !(reason.is_some() && details.is_some() && reason < details) {
            bail!("the failed login's error does not give the reason before the 401:\n{stderr}");
        }
        let page = self.next_page(before)?;
        for text in [
            "Login to `elsewhere` failed",
            "<code>invalid_request</code>",
            "Unregistered redirect_uri",
            "mcp-host login elsewhere",
        ] {
            if !page.contains(text) {
                bail!("the failure page lacks {text:?}:\n{page}");
            }
        }
        if page.contains("Logged in") {
            bail!("the failure page claims a login:\n{page}");
        }
        eprintln!("    a refused login fails, and the browser's page says why");
        Ok(())
    }

    fn page_count(&self) -> anyhow::Result<usize> {
        Ok(std::fs::read_dir(&self.pages)?
            .filter_map(Result::ok)
            .filter(|e| e.path().extension().is_some_and(|x| x == "html"))
            .count())
    }

    /// The page the browser dumped after the `before`th, waiting up to 30 s for it.
    fn next_page(&self, before: usize) -> anyhow::Result<String> {
        let end = Instant::now() + Duration::from_secs(30);
        loop {
            let mut pages: Vec<PathBuf> = std::fs::read_dir(&self.pages)?
                .filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "html"))
                .collect();
            if pages.len() > before {
                pages.sort();
                let last = pages.last().context("a page")?;
                return Ok(std::fs::read_to_string(last)?);
            }
            if Instant::now() >= end {
                bail!(
                    "the browser dumped no page within 30 s (see {})",
                    self.pages.display()
                );
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn store(&self) -> PathBuf {
        self.home.join(".config/mcp-host/mcp-auth.json")
    }

    /// The stored registration at the demo authorization server: client id and redirect URIs.
    fn registration(&self) -> anyhow::Result<(String, String)> {
        let store: serde_json::Value = serde_json::from_slice(&std::fs::read(self.store())?)?;
        let clients = store["clients"]
            .as_object()
            .context("no registrations in the token store")?;
        let (_, client) = clients
            .iter()
            .next()
            .context("no registration in the token store")?;
        Ok((
            client["client_id"].as_str().unwrap_or_default().to_owned(),
            client["redirect_uris"].to_string(),
        ))
    }

    /// The stored access token expired, with a refresh token beside it that the server
    /// will not take (the demo never issues one).
    fn expire_with_dead_refresh_token(&self, id: &str) -> anyhow::Result<()> {
        let path = self.store();
        let mut store: serde_json::Value = serde_json::from_slice(&std::fs::read(&path)?)?;
        let tokens = store["servers"]
            .get_mut(id)
            .and_then(serde_json::Value::as_object_mut)
            .with_context(|| format!("no tokens for `{id}` in the store"))?;
        tokens.insert("refresh_token".into(), "no-longer-accepted".into());
        tokens.insert("expires_at".into(), 1000.into());
        std::fs::write(&path, serde_json::to_vec_pretty(&store)?)?;
        Ok(())
    }
}
