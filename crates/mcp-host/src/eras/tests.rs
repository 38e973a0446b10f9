//! The era memory: its key, its file, and what it does with a file it cannot use.

use std::collections::BTreeMap;

use mcp_protocol::Era;
use mcp_stdio::StdioConfig;

use super::{EraMemory, key};
use crate::entry::{Connect, ServerEntry};

fn stdio(args: &[&str], env: &[(&str, &str)]) -> ServerEntry {
    let mut config = StdioConfig::new("fs", "server", args.iter().map(|a| (*a).to_owned()));
    config.env = env
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    ServerEntry::new("fs", Connect::Stdio(config))
}

#[test]
fn the_key_follows_how_the_server_is_reached_not_its_secrets() {
    let base = key(&stdio(&["--root", "/a"], &[("TOKEN", "one")])).unwrap();
    assert_eq!(base.len(), 64);
    // Another value of a variable is the same server.
    assert_eq!(
        key(&stdio(&["--root", "/a"], &[("TOKEN", "two")])).unwrap(),
        base
    );
    // Another argument, another variable, or arguments split otherwise are another.
    assert_ne!(
        key(&stdio(&["--root", "/b"], &[("TOKEN", "one")])).unwrap(),
        base
    );
    assert_ne!(
        key(&stdio(&["--root", "/a"], &[("OTHER", "one")])).unwrap(),
        base
    );
    assert_ne!(
        key(&stdio(&["--root/a"], &[("TOKEN", "one")])).unwrap(),
        base
    );
    // A pinned version is never probed: nothing to remember.
    let mut pinned = stdio(&[], &[]);
    pinned.protocol_version = Some(mcp_protocol::ProtocolVersion::LATEST_HANDSHAKE);
    assert_eq!(key(&pinned), None);
}

#[tokio::test]
async fn the_file_keeps_what_was_learned_privately_and_a_change_replaces_it() {
    let dir = tempdir();
    let file = dir.join("eras.json");
    let memory = EraMemory::new(Some(file.clone()));
    memory.learned("k1", "fs", Some(Era::Handshake)).await;
    memory.learned("k2", "web", Some(Era::Stateless)).await;
    let again = EraMemory::new(Some(file.clone()));
    assert_eq!(again.known("k1").await, Some(Era::Handshake));
    assert_eq!(again.known("k2").await, Some(Era::Stateless));
    assert_eq!(again.known("k3").await, None);
    assert_eq!(crate::fs::mode_of(&file), Some(0o600));
    // Forgotten, here and in the file.
    again.learned("k1", "fs", None).await;
    assert_eq!(again.known("k1").await, None);
    let third = EraMemory::new(Some(file));
    assert_eq!(third.known("k1").await, None);
    assert_eq!(third.known("k2").await, Some(Era::Stateless));
}

#[tokio::test]
async fn a_corrupt_file_is_ignored_and_replaced_on_the_next_change() {
    let dir = tempdir();
    let file = dir.join("eras.json");
    for corrupt in ["{not json", r#"{"servers": 3}"#, r#"[1, 2]"#] {
        std::fs::write(&file, corrupt).unwrap();
        let memory = EraMemory::new(Some(file.clone()));
        assert_eq!(memory.known("k1").await, None, "{corrupt}");
        memory.learned("k1", "fs", Some(Era::Handshake)).await;
        assert_eq!(memory.known("k1").await, Some(Era::Handshake));
        let read = EraMemory::new(Some(file.clone()));
        assert_eq!(read.known("k1").await, Some(Era::Handshake), "{corrupt}");
    }
    // One entry this version does not understand costs only itself.
    let text =
        r#"{"version":1,"servers":{"a":{"era":"future"},"b":{"era":"handshake","server":"fs"}}}"#;
    std::fs::write(&file, text).unwrap();
    let memory = EraMemory::new(Some(file));
    assert_eq!(memory.known("b").await, Some(Era::Handshake));
    assert_eq!(memory.known("a").await, None);
}

#[test]
fn the_file_keeps_the_servers_seen_last_past_its_bound() {
    let dir = tempdir();
    let file = dir.join("eras.json");
    for i in 0..(super::KEPT as u64 + 2) {
        super::write(
            &file,
            &format!("k{i}"),
            "s",
            Some((Era::Handshake, 1000 + i)),
        )
        .unwrap();
    }
    let kept: BTreeMap<_, _> = super::read(&file);
    assert_eq!(kept.len(), super::KEPT);
    assert!(kept.contains_key(&format!("k{}", super::KEPT + 1)));
    assert!(!kept.contains_key("k0") && !kept.contains_key("k1"));
}

fn tempdir() -> std::path::PathBuf {
    static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let dir = std::env::temp_dir().join(format!("mcp-host-eras-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("the temporary directory is writable");
    dir
}
