//! From a configuration file to running servers: good, bad, disabled and refused entries end
//! in the right states, and a planted secret never shows in an error, a status, a `Debug`
//! print or a log line.

// Test code: an unwrap that fails is a failed test, with its location.
#![allow(clippy::unwrap_used)]

use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use mcp_host::config::{ConfigFile, Env, FileFormat, Scope, load_files};
use mcp_host::permission::AllowAll;
use mcp_host::trust::{TrustError, TrustStore};
use mcp_host::{Decision, Host, Phase, ServerState, setup};
use mcp_protocol::schema::Implementation;
use serde_json::json;

const PLANTED: &str = "planted-secret-7f3a9c";

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mcp-host-setup-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Records every log event's fields as text, on the thread that installs it.
#[derive(Clone, Default)]
struct Capture(Arc<Mutex<String>>);

struct Fields<'a>(&'a mut String);

impl tracing::field::Visit for Fields<'_> {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        let _ = write!(self.0, "{}={value:?} ", field.name());
    }
}

impl tracing::Subscriber for Capture {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, event: &tracing::Event<'_>) {
        let mut line = String::new();
        event.record(&mut Fields(&mut line));
        let mut all = self.0.lock().unwrap();
        all.push_str(&line);
        all.push('\n');
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

/// A loopback HTTP server that answers every request with a 500: its address, and the heads
/// of the requests it was sent.
fn refusing_server() -> (std::net::SocketAddr, Arc<Mutex<String>>) {
    use std::io::{Read as _, Write as _};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let seen = Arc::new(Mutex::new(String::new()));
    let heads = seen.clone();
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            let mut head = Vec::new();
            let mut byte = [0u8];
            while !head.ends_with(b"\r\n\r\n") && stream.read(&mut byte).unwrap_or(0) == 1 {
                head.push(byte[0]);
            }
            heads
                .lock()
                .unwrap()
                .push_str(&String::from_utf8_lossy(&head));
            let _ = stream.write_all(
                b"HTTP/1.1 500 Internal Server Error\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
            );
        }
    });
    (addr, seen)
}

/// The tests of this file one at a time: one captures the log on its own thread, and tracing
/// decides whether a log line is wanted when it is first reached, on whichever thread that is.
static SERIAL: Mutex<()> = Mutex::new(());

#[test]
fn configured_servers_start_and_secrets_stay_hidden() {
    let _serial = SERIAL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let capture = Capture::default();
    let _guard = tracing::subscriber::set_default(capture.clone());
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();

    let dir = temp_dir("start");
    let fake = mcp_testkit::fake_server().display().to_string();
    let file = dir.join("config.json");
    let received = dir.join("leaky-received-key");
    let (remote, requests) = refusing_server();
    let config = json!({"version": 1, "mcp": {"servers": {
        "good": {"transport": "stdio", "command": fake, "args": ["--tools", "2"],
                 "disabled_tools": ["crash"], "protocol_version": "2025-06-18",
                 "permission": {"default": "allow", "tools": {"hang": "deny"}}},
        // A shell writes the key it was given to a file, then becomes the fake server,
        // which prints the key to stderr and exits.
        "leaky": {"transport": "stdio", "command": "/bin/sh",
                  "args": ["-c", "printf %s \"$FAKE_API_KEY\" > \"$0\" && exec \"$1\" --exit-on-start 2",
                           received.display().to_string(), fake],
                  "env": {"FAKE_API_KEY": {"env": "PLANTED_KEY"}}},
        "remote": {"transport": "http", "url": format!("http://{remote}/mcp?key={PLANTED}"),
                   "headers": {"Authorization": {"env": "PLANTED_KEY"}},
                   "request_timeout_ms": 2000},
        "off": {"transport": "stdio", "command": fake, "enabled": false},
        "broken": {"transport": "http"},
    }}});
    std::fs::write(&file, serde_json::to_vec_pretty(&config).unwrap()).unwrap();
    let env = Env::new().with("PLANTED_KEY", PLANTED);
    let loaded = load_files(
        &[ConfigFile::new(&file, Scope::Project, FileFormat::Native)],
        &env,
        &dir,
    );
    // The user approved this project's servers (the next test is about approval).
    let store = TrustStore::new(dir.join("trust.json"));
    store.approve(&dir, &loaded.servers).unwrap();
    let entries = setup::entries(&loaded, None, &store.approvals(&dir).unwrap());
    let ids: Vec<_> = entries.iter().map(|e| e.id.as_str()).collect();
    assert_eq!(ids, ["broken", "good", "leaky", "off", "remote"]);
    // Project files cannot allow without asking; a deny stands.
    let good = entries.iter().find(|e| e.id == "good").unwrap();
    assert_eq!(good.rules.decide("echo"), Decision::Ask);
    assert_eq!(good.rules.decide("hang"), Decision::Deny);
    let mut shown = format!("{entries:?} {loaded:?}");

    let options = setup::host_options(
        &loaded,
        Implementation::new("t".into(), "0".into()),
        Arc::new(AllowAll),
    );
    let host = Host::new(options);
    rt.block_on(host.start(entries));
    let state = |id: &str| host.server_status(id).unwrap();
    assert_eq!(state("good").state, ServerState::Ready);
    // A configured revision is the one spoken, not the newest both know.
    assert_eq!(
        state("good").protocol_version.as_deref(),
        Some("2025-06-18")
    );
    assert_eq!(
        state("good").tools,
        18 + 2 - 1,
        "disabled_tools hides `crash`"
    );
    assert!(
        state("good")
            .diagnostics
            .iter()
            .any(|d| d.contains("read as `ask`"))
    );
    assert_eq!(state("off").state, ServerState::Disabled);
    assert_eq!(state("leaky").state, ServerState::Error);
    // The secret reached the child: it wrote the key it was given.
    assert_eq!(
        std::fs::read_to_string(&received).unwrap(),
        PLANTED,
        "the child did not get the secret"
    );
    // The child's line that held the key is shown, with the key cut out.
    let leaky = state("leaky").last_error.unwrap();
    assert!(
        leaky.contains("the API key \"[redacted]\" was rejected"),
        "{leaky}"
    );
    assert_eq!(state("remote").state, ServerState::Error);
    // The secret reached the remote server, in the address and in the header.
    let seen = requests.lock().unwrap().clone();
    assert!(
        seen.contains(&format!("/mcp?key={PLANTED} HTTP/1.1\r\n")),
        "{seen}"
    );
    assert!(
        seen.to_ascii_lowercase()
            .contains(&format!("\r\nauthorization: {PLANTED}\r\n")),
        "{seen}"
    );
    let broken = state("broken").last_error.unwrap();
    assert!(
        broken.contains("config.json") && broken.contains("`url`"),
        "{broken}"
    );
    assert_eq!(state("broken").state, ServerState::Error);

    for s in host.status() {
        write!(shown, "{s:?}").unwrap();
    }
    rt.block_on(host.shutdown());
    let logs = capture.0.lock().unwrap().clone();
    assert!(logs.contains("leaky"), "the log saw the failure: {logs}");
    for (what, text) in [("status and Debug", &shown), ("logs", &logs)] {
        assert!(
            !text.contains(PLANTED),
            "the secret leaked into {what}: {text}"
        );
    }
}

/// A cloned repository's `.mcp.json` names a program to run and a header to fill from the
/// user's environment; neither happens until the user approves the entry, in this project,
/// as it is written.
#[test]
fn project_servers_run_only_once_approved_as_written() {
    let _serial = SERIAL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let root = temp_dir("trust");
    let project = root.join("project");
    std::fs::create_dir_all(&project).unwrap();
    let fake = mcp_testkit::fake_server().display().to_string();
    let global = root.join("global.json");
    std::fs::write(
        &global,
        json!({"version": 1, "mcp": {"servers": {"mine": {"command": fake}}}}).to_string(),
    )
    .unwrap();
    let mcp_json = project.join(".mcp.json");
    let write_project = |tool: serde_json::Value| {
        let doc = json!({"mcpServers": {
            "tool": tool,
            "web": {"url": "http://127.0.0.1:9/mcp", "headers": {"X-Key": {"env": "HOST_TOKEN"}}},
        }});
        std::fs::write(&mcp_json, doc.to_string()).unwrap();
    };
    write_project(
        json!({"command": fake, "args": ["--tools", "1"], "env": {"K": {"env": "HOST_TOKEN"}}}),
    );
    let env = Env::new().with("HOST_TOKEN", PLANTED).with("OTHER", "set");
    let load = || {
        load_files(
            &[
                ConfigFile::new(&global, Scope::Global, FileFormat::Native),
                ConfigFile::new(&mcp_json, Scope::Project, FileFormat::McpServers),
            ],
            &env,
            &project,
        )
    };
    let loaded = load();
    let tool = loaded.server("tool").unwrap();
    assert_eq!(tool.reads_env, ["HOST_TOKEN"]);
    assert_eq!(loaded.server("web").unwrap().reads_env, ["HOST_TOKEN"]);

    let store = TrustStore::new(root.join("home/trust.json"));
    let host = Host::new(setup::host_options(
        &loaded,
        Implementation::new("t".into(), "0".into()),
        Arc::new(AllowAll),
    ));
    rt.block_on(host.start(setup::entries(
        &loaded,
        None,
        &store.approvals(&project).unwrap(),
    )));
    assert_eq!(
        host.server_status("mine").unwrap().state,
        ServerState::Ready
    );
    for id in ["tool", "web"] {
        let s = host.server_status(id).unwrap();
        assert_eq!(s.state, ServerState::Error, "{s:?}");
        assert_eq!(s.last_error_phase, Some(Phase::Trust));
        let why = s.last_error.unwrap();
        assert!(
            why.contains(".mcp.json") && why.contains("not approved yet"),
            "{why}"
        );
        assert!(s.last_connected_at.is_none());
    }

    // Approved: it runs. The global server needed no approval and has none.
    store.approve(&project, [tool]).unwrap();
    let approvals = store.approvals(&project).unwrap();
    assert!(approvals.knows("tool") && !approvals.knows("mine") && !approvals.knows("web"));
    rt.block_on(host.reload(setup::entries(&loaded, None, &approvals)));
    assert_eq!(
        host.server_status("tool").unwrap().state,
        ServerState::Ready
    );
    assert_eq!(
        host.server_status("web").unwrap().last_error_phase,
        Some(Phase::Trust)
    );

    // Member order, switching it off and on, and permissions keep the approval...
    write_project(
        json!({"env": {"K": {"env": "HOST_TOKEN"}}, "args": ["--tools", "1"],
        "command": fake, "disabled": false, "permission": {"default": "deny"}}),
    );
    assert!(approvals.approves(load().server("tool").unwrap()));
    // ...what it runs, with what, does not.
    for changed in [
        json!({"command": fake, "args": ["--tools", "2"], "env": {"K": {"env": "HOST_TOKEN"}}}),
        json!({"command": fake, "args": ["--tools", "1"], "env": {"K": {"env": "OTHER"}}}),
        json!({"command": fake, "args": ["--tools", "1"], "env": {"K": {"env": "HOST_TOKEN"}}, "inherit_env": true}),
        json!({"command": "/bin/sh", "args": ["--tools", "1"], "env": {"K": {"env": "HOST_TOKEN"}}}),
    ] {
        write_project(changed.clone());
        let loaded = load();
        let server = loaded.server("tool").expect("every edit still loads");
        assert!(!approvals.approves(server), "{changed}");
        let entries = setup::entries(&loaded, None, &approvals);
        let entry = entries.iter().find(|e| e.id == "tool").unwrap();
        let unusable = entry.connect.as_ref().unwrap_err();
        assert!(unusable.phase == Phase::Trust, "{changed}");
    }
    write_project(json!({"command": fake, "args": ["--tools", "3"]}));
    let entries = setup::entries(&load(), None, &approvals);
    let why = &entries
        .iter()
        .find(|e| e.id == "tool")
        .unwrap()
        .connect
        .as_ref()
        .unwrap_err()
        .message;
    assert!(why.contains("changed since it was approved"), "{why}");

    // Another checkout of the same files starts with no approval.
    let clone = root.join("clone");
    std::fs::create_dir_all(&clone).unwrap();
    assert_eq!(store.approvals(&clone).unwrap(), Default::default());

    // The file is private and holds fingerprints, never a value.
    let text = std::fs::read_to_string(store.path()).unwrap();
    assert!(
        !text.contains(PLANTED) && !text.contains("--tools"),
        "{text}"
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(store.path())
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    assert!(store.revoke(&project, "tool").unwrap());
    assert!(!store.revoke(&project, "tool").unwrap());
    assert!(!store.approvals(&project).unwrap().knows("tool"));

    // A file it cannot read is an error that names it, not an empty list of approvals.
    std::fs::write(store.path(), "{not json").unwrap();
    let err = store.approvals(&project).unwrap_err();
    assert!(matches!(err, TrustError::Corrupt { .. }));
    assert!(err.to_string().contains("trust.json"), "{err}");
    // Nor is a file of another version rewritten as if it were this one.
    std::fs::write(store.path(), r#"{"version": 2, "projects": {}}"#).unwrap();
    let err = store.approve(&project, [tool]).unwrap_err();
    assert!(err.to_string().contains("version 2"), "{err}");
    assert!(
        std::fs::read_to_string(store.path())
            .unwrap()
            .contains("\"version\": 2")
    );
    rt.block_on(host.shutdown());
}
