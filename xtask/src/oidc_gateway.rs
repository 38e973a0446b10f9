//! The oidc-provider leg's gateway step: `mcp-host serve --http` as an OAuth 2.1 protected
//! resource whose gateway-file `auth` block names the leg's provider, with mcp-host's bundled
//! demo server upstream. Against the same provider start as the rest of the leg:
//!
//! - tokens sent straight to the gateway (`peer.mjs knock`): the provider's own token for the
//!   gateway is taken (200); no token, an expired one, one for the TypeScript peer's resource,
//!   one from a second issuer with the same keys, an unsigned one (`alg: none`) and one signed
//!   with another key under the provider's key id are each refused with 401 and a
//!   `WWW-Authenticate: Bearer` naming the gateway's RFC 9728 document (and `invalid_token`
//!   when a token came), whose `resource` is the gateway and whose authorization server is the
//!   provider; the provider's token for the gateway without the required scope is answered 403
//!   `insufficient_scope`; the provider's opaque tokens for the gateway (made so for one
//!   resource indicator), which the gateway introspects at the provider (RFC 7662) as a
//!   client of its own: one is taken (200), one revoked at the provider first is refused with
//!   401 (not active), one without the scope with 403; the gateway's log gives each refusal
//!   its own reason and holds no token and not the introspection secret;
//! - `mcp-host login` finds the provider from the gateway's challenge and logs in, in the
//!   browser, then with the device flow, each followed by a tool call through the gateway;
//! - the TypeScript SDK's OAuth client does the same (`peer.mjs sdk-login`).

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use anyhow::{Context as _, bail};
use xshell::{Shell, cmd};

use crate::bounded::{self, PEER_STEP};
use crate::interop::{free_port, wait_listening};
use crate::oidc::Leg;

/// The gateway's id in the leg user's configuration.
const ID: &str = "gw";

/// The gateway's introspection client at the provider (peer.mjs's `INTROSPECTOR`), whose
/// secret reaches the gateway through this variable of its environment, never its file.
const INTROSPECTOR: (&str, &str) = ("gateway-introspection", "introspection-only-on-loopback");
const SECRET_VAR: &str = "OIDC_INTROSPECTION_SECRET";

/// The ports the provider must know of when it starts: the gateway's (its tokens name the
/// gateway's resource), the second issuer's and the token mint's.
pub(crate) struct Ports {
    gateway: u16,
    second: u16,
    mint: u16,
}

impl Ports {
    pub(crate) fn new() -> anyhow::Result<Self> {
        Ok(Self {
            gateway: free_port()?,
            second: free_port()?,
            mint: free_port()?,
        })
    }

    /// The gateway's MCP endpoint, its resource identifier.
    fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.gateway)
    }

    /// The resource indicator for which the provider makes opaque tokens, with the gateway's
    /// audience.
    fn opaque(&self) -> String {
        format!("http://127.0.0.1:{}/opaque", self.gateway)
    }

    /// `peer.mjs serve`'s options for them.
    pub(crate) fn peer_options(&self) -> Vec<String> {
        vec![
            "--gateway".to_owned(),
            self.url(),
            "--opaque".to_owned(),
            self.opaque(),
            "--second".to_owned(),
            self.second.to_string(),
            "--mint".to_owned(),
            self.mint.to_string(),
        ]
    }
}

/// `mcp-host serve`, ended when dropped.
struct Serving(Child);

impl Drop for Serving {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Runs the step; `sh` is the leg user's (HOME, project, `$BROWSER`).
pub(crate) fn run(leg: &Leg<'_>, sh: &Shell, ports: &Ports) -> anyhow::Result<()> {
    let dir = leg.dir.join("gateway");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("home"))?;
    let url = ports.url();
    let log = dir.join("gateway.log");
    let file = dir.join("gateway.json");
    let doc = serde_json::json!({
        "mcpServers": {
            "demo": {
                "description": "mcp-host's bundled demo server",
                "command": leg.mcp_host,
                "args": ["demo-server"],
                "permission": {"default": "allow"}
            }
        },
        "auth": {
            "issuer": leg.issuer,
            "requiredScopes": ["mcp:tools"],
            "publicUrl": url,
            "introspection": {
                "endpoint": format!("{}/token/introspection", leg.issuer),
                "clientId": INTROSPECTOR.0,
                "clientSecret": format!("${{{SECRET_VAR}}}"),
            },
        },
        "logFile": log,
    });
    std::fs::write(&file, serde_json::to_vec_pretty(&doc)?)?;
    eprintln!("==> mcp-host serve --http with an `auth` block naming oidc-provider");
    let _serving = Serving(
        Command::new(leg.mcp_host)
            .arg("serve")
            .arg("--gateway")
            .arg(&file)
            .args(["--http", &format!("127.0.0.1:{}", ports.gateway)])
            .env("HOME", dir.join("home"))
            .env(SECRET_VAR, INTROSPECTOR.1)
            .env_remove("MCP_HOST_CONFIG")
            .env_remove("XDG_CONFIG_HOME")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(dir.join("serve.stderr"))?)
            .spawn()
            .context("starting mcp-host serve")?,
    );
    let context = || format!("the gateway's log: {}", log.display());
    wait_listening(ports.gateway, "mcp-host serve")?;
    wait_logged(&log, "upstream demo: ready").with_context(context)?;

    refusals(leg, sh, ports).with_context(context)?;
    // Each forged or foreign token was refused for its own fault, not for one they share,
    // and no token reached the log.
    for reason in [
        "the token has expired",
        "the token is not for this resource",
        "the token is from another issuer",
        "the token's algorithm is not accepted",
        "the token's signature does not verify",
        "the token lacks the scopes mcp:tools",
        "the issuer says the token is not active",
    ] {
        wait_logged(&log, &format!("refused a request: {reason}")).with_context(context)?;
    }

    let mcp_host = leg.mcp_host;
    cmd!(sh, "{mcp_host} add {ID} {url}").quiet().run()?;
    let output = bounded::read(
        cmd!(sh, "{mcp_host} login {ID}").stdin(""),
        "`mcp-host login` to the gateway",
        PEER_STEP,
    )
    .with_context(context)?;
    if !output.contains(&format!("logged in to `{ID}`")) {
        bail!("`mcp-host login {ID}` said: {output}");
    }
    call(sh, mcp_host, "the browser login").with_context(context)?;
    eprintln!(
        "    mcp-host login to the gateway in the browser (provider found from its challenge): ok, and `echo` answered through it"
    );

    cmd!(sh, "{mcp_host} logout {ID}").quiet().run()?;
    let (ended, stdout, stderr, _page) = leg.device_login(sh, ID, "approve")?;
    if !ended || !stdout.contains(&format!("logged in to `{ID}`")) {
        bail!("`mcp-host login {ID} --device` failed:\n{stdout}{stderr}");
    }
    call(sh, mcp_host, "the device-flow login").with_context(context)?;
    eprintln!("    mcp-host login --device to the gateway: ok, and `echo` answered through it");

    let (node, peer) = (leg.node, leg.peer);
    let said = bounded::read(
        cmd!(sh, "{node} {peer} sdk-login {url}"),
        "the TypeScript SDK's OAuth client against the gateway",
        PEER_STEP,
    )
    .with_context(context)?;
    let last: serde_json::Value = serde_json::from_str(said.lines().last().unwrap_or_default())
        .with_context(|| format!("sdk-login said: {said}"))?;
    if last["resource"] != url.as_str()
        || last["token"] != url.as_str()
        || last["said"] != "from the SDK"
    {
        bail!("the SDK client's login to the gateway: {last} (wanted resource and audience {url})");
    }
    eprintln!(
        "    {}'s OAuth client: logged in to the gateway through the provider, `echo` answered",
        crate::interop::SDK
    );
    // A JWT starts `eyJ` (`{"` in base64url): none of the tokens sent may be in the log.
    let logged = std::fs::read_to_string(&log)?;
    if !logged.contains("call echo") || logged.contains("eyJ") || logged.contains(INTROSPECTOR.1) {
        bail!(
            "the gateway's log shows no call, or holds a token or the introspection secret: {}",
            log.display()
        );
    }
    Ok(())
}

/// The provider's token for the gateway is taken; none, and each of the ones the gateway must
/// refuse, is answered 401 with the challenge naming the gateway's metadata document.
fn refusals(leg: &Leg<'_>, sh: &Shell, ports: &Ports) -> anyhow::Result<()> {
    let (node, peer) = (leg.node, leg.peer);
    let (mint, url) = (
        format!("http://127.0.0.1:{}/tokens", ports.mint),
        ports.url(),
    );
    let said = bounded::read(
        cmd!(sh, "{node} {peer} knock {mint} {url}"),
        "tokens sent to the gateway",
        PEER_STEP,
    )?;
    let seen: serde_json::Value = serde_json::from_str(said.lines().last().unwrap_or_default())
        .with_context(|| format!("knock said: {said}"))?;
    if seen["valid"]["status"] != 200 {
        bail!(
            "the gateway refused the provider's own token for it: {}",
            seen["valid"]
        );
    }
    let metadata = format!(
        "http://127.0.0.1:{}/.well-known/oauth-protected-resource/mcp",
        ports.gateway
    );
    for (name, what) in [
        ("missing", "no token"),
        ("expired", "an expired token"),
        ("audience", "a token for another resource"),
        ("issuer", "a token from another issuer with the same keys"),
        ("none", "an unsigned token (alg none)"),
        ("key", "a token signed with another key"),
    ] {
        let answer = &seen[name];
        let challenge = answer["wwwAuthenticate"].as_str().unwrap_or_default();
        let named = challenge.starts_with("Bearer ")
            && challenge.contains(&format!("resource_metadata=\"{metadata}\""));
        let error = name == "missing" || challenge.contains("error=\"invalid_token\"");
        if answer["status"] != 401 || !named || !error {
            bail!(
                "{what}: the gateway answered {answer} (wanted 401, a Bearer challenge naming {metadata}{})",
                if name == "missing" {
                    ""
                } else {
                    " with error=\"invalid_token\""
                }
            );
        }
    }
    // A real token without the scope the gateway requires: 403, naming the scope.
    let answer = &seen["scopeless"];
    let challenge = answer["wwwAuthenticate"].as_str().unwrap_or_default();
    if answer["status"] != 403
        || !challenge.contains("error=\"insufficient_scope\"")
        || !challenge.contains("mcp:tools")
    {
        bail!(
            "the provider's token for the gateway without its scope: the gateway answered {answer} (wanted 403, insufficient_scope naming mcp:tools)"
        );
    }
    let document = &seen["metadata"];
    let servers = document["authorization_servers"].as_array();
    if document["resource"] != url.as_str()
        || !servers.is_some_and(|s| s.iter().any(|s| s == leg.issuer.as_str()))
    {
        bail!(
            "the gateway's metadata document: {document} (wanted resource {url}, authorization server {})",
            leg.issuer
        );
    }
    // The provider's opaque tokens, which the gateway introspects.
    for (name, status, error, what) in [
        ("opaque", 200, "", "opaque token for the gateway"),
        (
            "opaqueRevoked",
            401,
            "error=\"invalid_token\"",
            "opaque token, revoked at the provider",
        ),
        (
            "opaqueScopeless",
            403,
            "error=\"insufficient_scope\"",
            "opaque token without the scope",
        ),
    ] {
        let answer = &seen[name];
        let challenge = answer["wwwAuthenticate"].as_str().unwrap_or_default();
        if answer["status"] != status || !challenge.contains(error) {
            bail!("the provider's {what}: the gateway answered {answer} (wanted {status} {error})");
        }
    }
    eprintln!(
        "    the provider's opaque tokens, introspected: taken; revoked refused with 401, without the scope with 403"
    );
    eprintln!(
        "    the provider's token for the gateway taken; none, expired, another resource's, another issuer's, unsigned and another key's each refused with 401 and the challenge; one without the scope with 403"
    );
    Ok(())
}

/// `echo` through the gateway with the stored token.
fn call(sh: &Shell, mcp_host: &Path, after: &str) -> anyhow::Result<()> {
    let said = bounded::read(
        cmd!(sh, "{mcp_host} call -y {ID} echo --args").arg(r#"{"text":"through the gateway"}"#),
        &format!("`mcp-host call` through the gateway after {after}"),
        PEER_STEP,
    )?;
    if !said.contains("through the gateway") {
        bail!("the call through the gateway after {after} said: {said}");
    }
    Ok(())
}

/// Waits (up to a minute) until the file at `log` holds `line`.
fn wait_logged(log: &Path, line: &str) -> anyhow::Result<()> {
    for _ in 0..1200 {
        if std::fs::read_to_string(log).is_ok_and(|text| text.contains(line)) {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    bail!("{} never said {line:?}", log.display())
}
