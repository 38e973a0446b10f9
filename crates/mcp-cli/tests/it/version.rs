//! One version for everything we ship: the workspace's (`[workspace.package] version`), read
//! from the workspace's `Cargo.toml` itself, is what `mcp-host --version` prints and what the
//! gateway tells its clients in `serverInfo`. A crate that stops inheriting it
//! (`version.workspace = true`) fails here.

use std::io::Write as _;

use serde_json::{Value, json};

use super::*;

/// `[workspace.package] version` of the workspace's `Cargo.toml`.
fn workspace_version() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../Cargo.toml");
    let manifest = std::fs::read_to_string(&path).unwrap();
    let version = version_in(&manifest, "[workspace.package]")
        .unwrap_or_else(|| panic!("no [workspace.package] version in {}", path.display()));
    // Presence first: a version found is a real one, not an empty string.
    assert!(
        version.split('.').count() == 3 && version.split('.').all(|n| n.parse::<u64>().is_ok()),
        "{version:?}"
    );
    version
}

/// The `version = "…"` of one `[section]` of a manifest.
fn version_in(manifest: &str, section: &str) -> Option<String> {
    manifest
        .lines()
        .skip_while(|line| line.trim() != section)
        .skip(1)
        .take_while(|line| !line.trim_start().starts_with('['))
        .find_map(|line| {
            let value = line.trim().strip_prefix("version")?.trim_start();
            let value = value.strip_prefix('=')?.trim();
            Some(value.strip_prefix('"')?.strip_suffix('"')?.to_owned())
        })
}

#[test]
fn the_version_is_read_from_the_section_meant() {
    let manifest = "[package]\nversion = \"9.9.9\"\n\n[workspace.package]\nedition = \"2024\"\nversion = \"1.2.3\"\n[other]\nversion = \"7.7.7\"\n";
    assert_eq!(
        version_in(manifest, "[workspace.package]").as_deref(),
        Some("1.2.3")
    );
    assert_eq!(version_in(manifest, "[package]").as_deref(), Some("9.9.9"));
    assert_eq!(
        version_in(
            "[workspace.package]\nedition = \"2024\"\n[x]\nversion = \"1\"",
            "[workspace.package]"
        ),
        None
    );
}

#[test]
fn mcp_host_version_prints_the_workspace_version() {
    let run = User::new().run(&["--version"]);
    run.code(0);
    assert_eq!(
        run.stdout.trim_end(),
        format!("mcp-host {}", workspace_version())
    );
}

#[test]
fn the_gateway_says_the_workspace_version_in_server_info() {
    let user = User::new();
    let file = user.project.path().join("gateway.json");
    let gateway = json!({
        "mode": "meta",
        "mcpServers": {
            "demo": {"command": bin(), "args": ["demo-server"], "permission": {"default": "allow"}}
        }
    });
    std::fs::write(&file, serde_json::to_vec(&gateway).unwrap()).unwrap();
    let mut child = user
        .command(&["serve", "--gateway", file.to_str().unwrap()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "version-test", "version": "0"}}});
    writeln!(stdin, "{initialize}").unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let answer = loop {
        let mut line = String::new();
        assert!(stdout.read_line(&mut line).unwrap() > 0, "stdout ended");
        let message: Value = serde_json::from_str(&line).unwrap();
        if message["id"] == 1 {
            break message;
        }
    };
    drop(stdin);
    let _ = child.wait();
    let server = &answer["result"]["serverInfo"];
    assert_eq!(server["name"], "mcp-host-gateway", "{answer}");
    assert_eq!(server["version"], workspace_version().as_str(), "{answer}");
}
