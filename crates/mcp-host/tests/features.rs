//! A configuration file is shared between builds: every entry parses whatever this build left
//! out, and an entry whose transport (or `https`) needs a feature this build does not have is
//! a server in state `error` that names itself and the feature, while the others run. The
//! same test runs in every build; `cargo xtask ci` runs it with `stdio` only and with
//! `stdio,http` (no `tls`), where the refusals are made, and the default build checks that
//! nothing is refused when everything is there.

// Test code: an unwrap that fails is a failed test, with its location.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::time::Duration;

use mcp_host::config::{ConfigFile, Env, FileFormat, Scope, load_files};
use mcp_host::permission::AllowAll;
use mcp_host::trust::Approvals;
use mcp_host::{Host, HostOptions, Phase, ServerState, ServerStatus, setup};
use mcp_protocol::schema::Implementation;
use serde_json::json;

/// What this build should say about a server that needs `feature`, given whether it has it.
fn check(status: &ServerStatus, feature: &str, built: bool) {
    let left_out = "this build of mcp-host left out";
    let error = status.last_error.clone().unwrap_or_default();
    if built {
        assert!(!error.contains(left_out), "{}: {error}", status.id);
        return;
    }
    assert_eq!(status.state, ServerState::Error, "{status:?}");
    assert_eq!(
        status.last_error_phase,
        Some(Phase::Configuration),
        "{status:?}"
    );
    assert!(
        error.contains(&format!("server `{}`", status.id)),
        "{error}"
    );
    assert!(error.contains(left_out), "{error}");
    assert!(
        error.contains(&format!("the `{feature}` feature")),
        "{error}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_entry_that_needs_a_feature_left_out_is_an_error_naming_it() {
    let dir = std::env::temp_dir().join(format!("mcp-host-features-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let fake = mcp_testkit::fake_server().display().to_string();
    // Port 9 (discard): nothing answers, so an HTTP server that is tried fails at connection,
    // which is not the refusal looked for.
    let config = json!({"version": 1, "mcp": {"servers": {
        "local": {"transport": "stdio", "command": fake},
        "plain": {"transport": "http", "url": "http://127.0.0.1:9/mcp", "request_timeout_ms": 500},
        "legacy": {"transport": "sse", "url": "http://127.0.0.1:9/sse", "request_timeout_ms": 500},
        "secure": {"transport": "http", "url": "https://127.0.0.1:9/mcp", "request_timeout_ms": 500},
    }}});
    let file = dir.join("config.json");
    std::fs::write(&file, serde_json::to_vec(&config).unwrap()).unwrap();
    let loaded = load_files(
        &[ConfigFile::new(&file, Scope::Global, FileFormat::Native)],
        &Env::new(),
        &dir,
    );
    // Every entry parses, whatever was built.
    let ids: Vec<_> = loaded.servers.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(
        ids,
        ["legacy", "local", "plain", "secure"],
        "{:?}",
        loaded.problems
    );

    let info = Implementation::new("features-test".into(), "0".into());
    let mut options = HostOptions::new(info, Arc::new(AllowAll));
    options.reconnect_attempts = 0;
    options.reconnect_initial = Duration::from_millis(10);
    let host = Host::new(options);
    host.start(setup::entries(&loaded, None, &Approvals::default()))
        .await;
    let status = |id: &str| host.server_status(id).unwrap();

    // This build runs stdio servers (the test requires the feature): the host works.
    let local = status("local");
    assert_eq!(local.state, ServerState::Ready, "{local:?}");
    let http = cfg!(feature = "http");
    check(&status("plain"), "http", http);
    check(&status("legacy"), "http", http);
    // `https` needs `http` first, then `tls`.
    let secure = status("secure");
    if http {
        check(&secure, "tls", cfg!(feature = "tls"));
    } else {
        check(&secure, "http", false);
    }
    // An entry made through the API rather than a file reaches mcp-http, which refuses an
    // `https` URL itself in a build without its `tls` feature, before connecting.
    #[cfg(feature = "http")]
    {
        use mcp_host::{Connect, ServerEntry};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let api = |id: &str, url: String| {
            let config = mcp_http::HttpConfig::new(id, url);
            let mut entry = ServerEntry::new(id, Connect::Http(config));
            entry.request_timeout = Duration::from_millis(300);
            entry
        };
        // Over plain http the listener is reached (and never answers): it is there to be.
        host.start(vec![api("api-plain", format!("http://{addr}/mcp"))])
            .await;
        // (It may have opened more than one connection: take them all.)
        let mut reached = 0;
        while listener.accept().is_ok() {
            reached += 1;
        }
        assert!(reached > 0);
        host.start(vec![api("api-tls", format!("https://{addr}/mcp"))])
            .await;
        let status = status("api-tls");
        assert_eq!(status.state, ServerState::Error, "{status:?}");
        let error = status.last_error.unwrap_or_default();
        let expected = format!(
            "https://{addr}: https needs the `tls` feature of mcp-http, which this build left out"
        );
        let refused = error.contains(&expected);
        assert_eq!(refused, !cfg!(feature = "tls"), "{error}");
        if refused {
            // Refused before connecting: nothing more reached the listener.
            let next = listener.accept().map(|_| ()).map_err(|e| e.kind());
            assert_eq!(next, Err(std::io::ErrorKind::WouldBlock));
        }
    }
    host.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
}
