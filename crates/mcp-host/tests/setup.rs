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
use mcp_host::{Decision, Host, ServerState, setup};
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

#[test]
fn configured_servers_start_and_secrets_stay_hidden() {
    let capture = Capture::default();
    let _guard = tracing::subscriber::set_default(capture.clone());
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();

    let dir = temp_dir("start");
    let fake = mcp_testkit::fake_server().display().to_string();
    let file = dir.join("config.json");
    let config = json!({"version": 1, "mcp": {"servers": {
        "good": {"transport": "stdio", "command": fake, "args": ["--tools", "2"],
                 "disabled_tools": ["crash"], "protocol_version": "2025-06-18",
                 "permission": {"default": "allow", "tools": {"hang": "deny"}}},
        "leaky": {"transport": "stdio", "command": fake, "args": ["--exit-on-start", "2"],
                  "env": {"FAKE_API_KEY": {"env": "PLANTED_KEY"}}},
        "remote": {"transport": "http", "url": format!("http://127.0.0.1:9/mcp?key={PLANTED}"),
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
    let entries = setup::entries(&loaded, None);
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
    let leaky = state("leaky").last_error.unwrap();
    assert!(
        leaky.contains("the API key") && leaky.contains("rejected"),
        "{leaky}"
    );
    assert_eq!(state("remote").state, ServerState::Error);
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
