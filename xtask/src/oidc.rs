//! `cargo xtask interop`'s oidc-provider leg: `mcp-host login` against a certified OpenID
//! provider, npm's `oidc-provider` (pinned), with dynamic registration, the device flow
//! (RFC 8628), resource indicators (RFC 8707: access tokens are JWTs for our MCP server
//! alone) and PKCE, in front of a protected MCP server built on the TypeScript SDK that checks
//! those JWTs against the provider's keys and publishes RFC 9728 metadata naming it
//! (`xtask/oidc/peer.mjs`). The provider's own HTML pages are driven in Debian's headless
//! Chromium through npm's `playwright-core` (pinned), as the person would.
//!
//! The leg, through the built `mcp-host` in a HOME of its own: a device-flow login denied on
//! the provider's confirmation page, which must fail saying so; a device-flow login (the test
//! reads the code and address `mcp-host` prints, confirms the code, logs in and consents on
//! the provider's pages), a tool call with the token; then three authorization-code logins in
//! a row with `mcp-host logout` between, each in the browser and followed by a tool call.
//! Then, with the same provider, our gateway as its protected resource (`oidc_gateway.rs`):
//! tokens it must take and refuse, `mcp-host login` to it in the browser and with the device
//! flow, and the TypeScript SDK's OAuth client logging in to it. `cargo xtask interop --oidc`
//! runs this leg alone.

use std::io::{BufRead as _, BufReader, Read as _};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use anyhow::{Context as _, bail};
use xshell::{Shell, cmd};

use crate::bounded::{self, PEER_STEP};
use crate::interop::{SDK, SDK_VERSION, free_port, wait_listening};

/// The pinned OpenID provider.
const OIDC_PROVIDER: &str = "oidc-provider";
const OIDC_PROVIDER_VERSION: &str = "9.13.3";
/// The pinned browser driver (it drives Debian's Chromium, it brings none).
const PLAYWRIGHT: &str = "playwright-core";
const PLAYWRIGHT_VERSION: &str = "1.65.1";
/// oidc-provider 9 asks for Node 22 or later.
const NODE_MAJOR: u32 = 22;

/// Runs the leg.
pub(crate) fn run(sh: &Shell, tools: &Path) -> anyhow::Result<()> {
    let node = crate::interop::node(sh, tools, NODE_MAJOR)?;
    // The peer script starts /usr/bin/chromium itself.
    crate::login::chromium(sh)?;
    let dir = tools.join("oidc");
    let peer = install(sh, &dir)?;
    let mcp_host = crate::binaries::build(sh)?.join("mcp-host");
    eprintln!(
        "==> mcp-host login against {OIDC_PROVIDER}@{OIDC_PROVIDER_VERSION} (device flow, then the browser), pages in Chromium via {PLAYWRIGHT}@{PLAYWRIGHT_VERSION}"
    );
    let (auth_port, mcp_port) = (free_port()?, free_port()?);
    let gateway = crate::oidc_gateway::Ports::new()?;
    let log = std::fs::File::create(dir.join("peer.log"))?;
    let mut server = Command::new(&node)
        .arg(&peer)
        .args(["serve", &auth_port.to_string(), &mcp_port.to_string()])
        .args(gateway.peer_options())
        .current_dir(&dir)
        .stdout(log.try_clone()?)
        .stderr(log)
        .spawn()
        .context("starting oidc-provider and the MCP server behind it")?;
    let leg = Leg {
        node: &node,
        peer: &peer,
        mcp_host: &mcp_host,
        dir: dir.clone(),
        url: format!("http://127.0.0.1:{mcp_port}/mcp"),
        issuer: format!("http://127.0.0.1:{auth_port}"),
    };
    let outcome = wait_listening(auth_port, "oidc-provider")
        .and_then(|()| wait_listening(mcp_port, "the MCP server behind oidc-provider"))
        .and_then(|()| leg.run(sh, &gateway));
    let _ = server.kill();
    let _ = server.wait();
    outcome.with_context(|| format!("the oidc-provider leg; files in {}", dir.display()))
}

/// The provider, the browser driver and the SDK in one prefix (one `npm install`, so that
/// none is pruned as extraneous by the next), with our peer script beside them so that its
/// imports resolve there. Returns the script.
pub(crate) fn install(sh: &Shell, dir: &Path) -> anyhow::Result<PathBuf> {
    let wanted = [
        (OIDC_PROVIDER, OIDC_PROVIDER_VERSION),
        (PLAYWRIGHT, PLAYWRIGHT_VERSION),
        (SDK, SDK_VERSION),
    ];
    let installed = |name: &str| {
        let text =
            std::fs::read_to_string(dir.join("node_modules").join(name).join("package.json"));
        text.ok()
            .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
            .and_then(|j| j["version"].as_str().map(str::to_owned))
    };
    if wanted
        .iter()
        .any(|(name, version)| installed(name).as_deref() != Some(*version))
    {
        eprintln!(
            "==> installing {OIDC_PROVIDER}@{OIDC_PROVIDER_VERSION}, {PLAYWRIGHT}@{PLAYWRIGHT_VERSION} and {SDK}@{SDK_VERSION} into {}",
            dir.display()
        );
        std::fs::create_dir_all(dir)?;
        let specs: Vec<String> = wanted.iter().map(|(n, v)| format!("{n}@{v}")).collect();
        cmd!(
            sh,
            "npm install --prefix {dir} --no-audit --no-fund --no-save {specs...}"
        )
        .run()
        .context("npm could not install the oidc-provider leg's packages")?;
    }
    let peer = dir.join("peer.mjs");
    std::fs::copy(crate::project_root().join("xtask/oidc/peer.mjs"), &peer)?;
    Ok(peer)
}

/// One run: a user with a HOME of their own, against the running peer.
pub(crate) struct Leg<'a> {
    pub(crate) node: &'a Path,
    pub(crate) peer: &'a Path,
    pub(crate) mcp_host: &'a Path,
    pub(crate) dir: PathBuf,
    url: String,
    pub(crate) issuer: String,
}

impl Leg<'_> {
    fn run(&self, sh: &Shell, gateway: &crate::oidc_gateway::Ports) -> anyhow::Result<()> {
        let home = self.dir.join("home");
        let project = self.dir.join("project");
        let _ = std::fs::remove_dir_all(&home);
        let _ = std::fs::remove_dir_all(&project);
        std::fs::create_dir_all(&home)?;
        std::fs::create_dir_all(&project)?;
        // The browser of the authorization-code logins: the peer script drives the
        // provider's pages up to the redirect to mcp-host's loopback listener.
        let browser = self.dir.join("browser.sh");
        let _ = std::fs::remove_file(self.dir.join("pages.log"));
        std::fs::write(
            &browser,
            format!(
                "#!/bin/sh\ncd {dir}\n{node} {peer} browse \"$1\" >> {pages} 2>&1\n",
                dir = self.dir.display(),
                node = self.node.display(),
                peer = self.peer.display(),
                pages = self.dir.join("pages.log").display(),
            ),
        )?;
        cmd!(sh, "chmod +x {browser}").run()?;
        let sh = sh.clone();
        sh.change_dir(&project);
        sh.set_var("HOME", &home);
        sh.set_var("MCP_HOST_CONFIG", "");
        sh.set_var("XDG_CONFIG_HOME", "");
        sh.set_var("BROWSER", &browser);
        let (mcp_host, url) = (self.mcp_host, &self.url);
        cmd!(sh, "{mcp_host} add oidc {url}").quiet().run()?;

        // Denied on the provider's confirmation page: the login ends saying so.
        let (ended, stdout, stderr, page) = self.device_login(&sh, "oidc", "deny")?;
        if ended || !stderr.contains("the login was denied at the authorization server") {
            bail!("a denied device login did not fail saying so:\n{stdout}{stderr}");
        }
        if !page.contains("interrupted") {
            bail!("the provider's page after the abort does not say so:\n{page}");
        }
        eprintln!("    device-flow login denied on the provider's page: failed, saying so");

        let (ended, stdout, stderr, page) = self.device_login(&sh, "oidc", "approve")?;
        if !ended || !stdout.contains("logged in to `oidc`") {
            bail!("`mcp-host login oidc --device` failed:\n{stdout}{stderr}");
        }
        if !page.contains("Sign-in Success") {
            bail!("the provider's last device page does not say the sign-in succeeded:\n{page}");
        }
        let client = self.check_tokens(&home, &format!("{stdout}{stderr}"))?;
        self.call(&sh, &client, "the device-flow login")?;
        eprintln!(
            "    device-flow login: ok (code confirmed, login and consent on the provider's pages), and `whoami` answered"
        );

        for n in 1..=3 {
            cmd!(sh, "{mcp_host} logout oidc").quiet().run()?;
            let output = bounded::read(
                cmd!(sh, "{mcp_host} login oidc").stdin(""),
                &format!("authorization-code login {n}"),
                PEER_STEP,
            )?;
            if !output.contains("logged in to `oidc`") {
                bail!("authorization-code login {n} said: {output}");
            }
            let client = self.check_tokens(&home, &output)?;
            self.page_says_logged_in(n)?;
            self.call(&sh, &client, &format!("authorization-code login {n}"))?;
            eprintln!("    authorization-code login {n} in the browser: ok, and `whoami` answered");
        }
        crate::oidc_gateway::run(self, &sh, gateway)
    }

    /// `mcp-host login SERVER --device`: reads the address with the code filled in from what it
    /// prints, has the peer's Chromium go through the provider's pages there (`approve`:
    /// confirm the code, log in, consent; `deny`: abort), and waits for the login to end.
    /// Returns whether it succeeded, its stdout and stderr, and the provider's last page.
    pub(crate) fn device_login(
        &self,
        sh: &Shell,
        server: &str,
        mode: &str,
    ) -> anyhow::Result<(bool, String, String, String)> {
        let mcp_host = self.mcp_host;
        let mut command: Command = cmd!(sh, "{mcp_host} login {server} --device").into();
        command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = bounded::spawn(&mut command, "mcp-host login --device")?;
        let mut stdout = child.stdout.take().context("stdout was piped")?;
        let stderr = child.stderr.take().context("stderr was piped")?;
        let (lines, shown) = mpsc::channel();
        let reader = std::thread::spawn(move || {
            let mut all = String::new();
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                all.push_str(&line);
                all.push('\n');
                let _ = lines.send(line);
            }
            all
        });
        let out_reader = std::thread::spawn(move || {
            let mut text = String::new();
            let _ = stdout.read_to_string(&mut text);
            text
        });
        let complete = loop {
            match shown.recv_timeout(Duration::from_secs(60)) {
                Ok(line) => {
                    if let Some(rest) = line.trim().strip_prefix("or open ") {
                        break rest
                            .split_whitespace()
                            .next()
                            .unwrap_or_default()
                            .to_owned();
                    }
                }
                Err(_) => {
                    let _ = bounded::wait(child, Duration::ZERO);
                    let said = reader.join().unwrap_or_default();
                    bail!(
                        "`mcp-host login {server} --device` showed no address with the code:\n{said}"
                    );
                }
            }
        };
        if !complete.starts_with(&format!("{}/device?user_code=", self.issuer)) {
            let _ = bounded::wait(child, Duration::ZERO);
            bail!("the address shown is not the provider's device page: {complete}");
        }
        let (node, peer) = (self.node, self.peer);
        let page = match bounded::read(
            cmd!(sh, "{node} {peer} {mode} {complete}"),
            "the provider's device pages in Chromium",
            PEER_STEP,
        ) {
            Ok(page) => page,
            Err(e) => {
                // The login would poll on until its code expires: end it with the leg.
                let _ = bounded::wait(child, Duration::ZERO);
                return Err(e);
            }
        };
        let status = bounded::wait(child, PEER_STEP)?;
        let stderr = reader
            .join()
            .map_err(|_| anyhow::anyhow!("the stderr reader panicked"))?;
        let stdout = out_reader
            .join()
            .map_err(|_| anyhow::anyhow!("the stdout reader panicked"))?;
        let Some(status) = status else {
            bail!("`mcp-host login {server} --device` did not end within {PEER_STEP:?}");
        };
        Ok((status.success(), stdout, stderr, page))
    }

    /// The browser's last page, mcp-host's own after the redirect, says the `n`th login worked
    /// (the browser writes it a moment after mcp-host has ended).
    fn page_says_logged_in(&self, n: usize) -> anyhow::Result<()> {
        let pages = self.dir.join("pages.log");
        for _ in 0..600 {
            let text = std::fs::read_to_string(&pages).unwrap_or_default();
            if text.matches("Logged in to `oidc`").count() >= n {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        bail!(
            "the browser's page after login {n} does not say it logged in to `oidc`:\n{}",
            std::fs::read_to_string(&pages).unwrap_or_default()
        )
    }

    /// The stored tokens: a Bearer JWT for our resource, from this issuer, never shown in
    /// `printed`. Returns the client id they were issued to.
    fn check_tokens(&self, home: &Path, printed: &str) -> anyhow::Result<String> {
        let path = home.join(".config/mcp-host/mcp-auth.json");
        let store: serde_json::Value = serde_json::from_slice(&std::fs::read(&path)?)
            .with_context(|| format!("{} is not JSON", path.display()))?;
        let entry = &store["servers"]["oidc"];
        let token = entry["access_token"]
            .as_str()
            .context("no access token stored")?;
        if entry["token_type"] != "Bearer" || entry["issuer"] != self.issuer.as_str() {
            bail!(
                "stored: token type {} from {} (wanted Bearer from {})",
                entry["token_type"],
                entry["issuer"],
                self.issuer
            );
        }
        if token.split('.').count() != 3 {
            bail!("the access token is not a JWT: the provider did not issue it for the resource");
        }
        if printed.contains(token) {
            bail!("the access token was printed");
        }
        entry["client_id"]
            .as_str()
            .map(str::to_owned)
            .context("no client id stored")
    }

    /// A tool call the MCP server answers only after checking the JWT (signature, issuer,
    /// audience = its resource): it says whose token it took.
    fn call(&self, sh: &Shell, client: &str, after: &str) -> anyhow::Result<()> {
        let mcp_host = self.mcp_host;
        let said = bounded::read(
            cmd!(sh, "{mcp_host} call -y oidc whoami"),
            &format!("`mcp-host call` after {after}"),
            PEER_STEP,
        )?;
        if !said.contains(&format!("client {client} with scope mcp:tools")) {
            bail!("the call after {after} said: {said}");
        }
        Ok(())
    }
}
