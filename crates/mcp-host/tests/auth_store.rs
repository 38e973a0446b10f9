//! The token store file: seed 000's format plus the URL binding, updates under the lock from
//! many threads at once, mode 0600, and errors that never quote the file.

// Test code: an unwrap that fails is a failed test, with its location.
#![allow(clippy::unwrap_used)]

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

use mcp_host::auth_store::{AuthStore, AuthStoreError};
use mcp_host::config::{ConfigPaths, Env};
use mcp_oauth::store::{AuthFile, ServerTokens};
use url::Url;

static COUNTER: AtomicU64 = AtomicU64::new(0);

fn temp_dir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "mcp-host-auth-{}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// Tokens as a login would leave them (`ServerTokens` is built by `mcp-oauth` only).
fn tokens(access: &str) -> ServerTokens {
    let json = format!(
        r#"{{"version":1,"servers":{{"x":{{"access_token":"{access}","refresh_token":"rt-{access}","expires_at":5}}}}}}"#
    );
    AuthFile::parse(json.as_bytes()).unwrap().servers["x"].clone()
}

fn url(s: &str) -> Url {
    Url::parse(s).unwrap()
}

#[cfg(unix)]
fn mode(path: &std::path::Path) -> u32 {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[test]
fn tokens_are_bound_to_the_server_url() {
    let dir = temp_dir();
    let store = AuthStore::new(dir.join("mcp-auth.json"));
    assert!(store.load().unwrap().is_empty(), "missing is empty");
    let a = url("https://a.example/mcp");
    store
        .update("s", &a, |old| {
            assert!(old.is_none());
            Some(tokens("at-1"))
        })
        .unwrap();
    assert_eq!(store.tokens("s", &a).unwrap(), Some(tokens("at-1")));
    let b = url("https://b.example/mcp");
    assert_eq!(store.tokens("s", &b).unwrap(), None, "another URL");
    assert_eq!(store.tokens("t", &a).unwrap(), None, "another id");
    store
        .update("s", &b, |old| {
            assert!(old.is_none(), "the other URL's tokens are not handed out");
            Some(tokens("at-b"))
        })
        .unwrap();
    assert_eq!(
        store.tokens("s", &a).unwrap(),
        None,
        "replaced by the new login"
    );

    // The file is seed 000's format (version 2 since registrations are kept by issuer) with
    // `url` beside each entry.
    let text = std::fs::read_to_string(store.path()).unwrap();
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(doc["version"], 2);
    assert_eq!(doc["servers"]["s"]["access_token"], "at-b");
    assert_eq!(doc["servers"]["s"]["url"], "https://b.example/mcp");
    assert_eq!(doc["servers"]["s"]["expires_at"], 5);
    assert!(AuthFile::parse(text.as_bytes()).is_ok());

    assert!(store.remove("s").unwrap());
    assert!(!store.remove("s").unwrap());
    assert!(store.load().unwrap().is_empty());
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn an_entry_without_a_url_is_not_used() {
    let dir = temp_dir();
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("mcp-auth.json");
    std::fs::write(
        &path,
        r#"{"version":1,"servers":{"s":{"access_token":"from-elsewhere"}}}"#,
    )
    .unwrap();
    let store = AuthStore::new(&path);
    let u = url("https://a.example/mcp");
    assert_eq!(store.tokens("s", &u).unwrap(), None);
    assert_eq!(store.load().unwrap()["s"].url, None);
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn concurrent_updates_of_different_servers_all_survive() {
    let dir = temp_dir();
    let path = dir.join("mcp-auth.json");
    let u = url("https://a.example/mcp");
    std::thread::scope(|scope| {
        for t in 0..8 {
            let path = path.clone();
            let u = u.clone();
            scope.spawn(move || {
                // Each thread opens the store itself, as another process would.
                let store = AuthStore::new(path);
                for n in 0..25 {
                    store
                        .update(&format!("server-{t}"), &u, |old| {
                            let prev: u32 = old.map_or(0, |o| {
                                o.access_token
                                    .secret()
                                    .rsplit('-')
                                    .next()
                                    .unwrap()
                                    .parse()
                                    .unwrap()
                            });
                            assert_eq!(prev, n, "server-{t} lost a write");
                            Some(tokens(&format!("at-{}", n + 1)))
                        })
                        .unwrap();
                }
            });
        }
    });
    let all = AuthStore::new(&path).load().unwrap();
    assert_eq!(all.len(), 8);
    for t in 0..8 {
        assert_eq!(
            all[&format!("server-{t}")].tokens.access_token.secret(),
            "at-25"
        );
    }
    std::fs::remove_dir_all(dir).unwrap();
}

#[cfg(unix)]
#[test]
fn the_file_is_private_even_when_it_was_not() {
    let dir = temp_dir();
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("mcp-auth.json");
    std::fs::write(&path, r#"{"version":1,"servers":{}}"#).unwrap();
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    let store = AuthStore::new(&path);
    store.load().unwrap();
    assert_eq!(mode(&path), 0o600, "narrowed on read");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o666)).unwrap();
    store
        .update("s", &url("https://a/mcp"), |_| Some(tokens("at")))
        .unwrap();
    assert_eq!(mode(&path), 0o600, "written 0600");
    let fresh = AuthStore::new(dir.join("new").join("mcp-auth.json"));
    fresh
        .update("s", &url("https://a/mcp"), |_| Some(tokens("at")))
        .unwrap();
    assert_eq!(mode(fresh.path()), 0o600, "created 0600");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_corrupt_file_is_named_never_quoted_and_left_alone() {
    let dir = temp_dir();
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("mcp-auth.json");
    let text = r#"{"version":1,"servers":{"s":{"access_token":"at-SECRET-1","expires_at":"rt-SECRET-2"}}}"#;
    std::fs::write(&path, text).unwrap();
    let store = AuthStore::new(&path);
    let err = store.load().unwrap_err();
    assert!(matches!(err, AuthStoreError::Corrupt { .. }), "{err}");
    let shown = format!("{err} {err:?}");
    assert!(shown.contains("mcp-auth.json"), "{shown}");
    assert!(!shown.contains("SECRET"), "{shown}");
    let err = store
        .update("t", &url("https://a/mcp"), |_| Some(tokens("x")))
        .unwrap_err();
    assert!(matches!(err, AuthStoreError::Corrupt { .. }), "{err}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), text, "untouched");
    std::fs::write(&path, "not json at all").unwrap();
    assert!(matches!(store.load(), Err(AuthStoreError::Corrupt { .. })));
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn debug_output_never_shows_tokens() {
    let dir = temp_dir();
    let store = AuthStore::new(dir.join("mcp-auth.json"));
    let u = url("https://a/mcp?key=URL-PLANTED");
    store
        .update("s", &u, |_| Some(tokens("at-PLANTED")))
        .unwrap();
    let shown = format!("{:?} {store:?}", store.load().unwrap());
    assert!(!shown.contains("PLANTED"), "{shown}");
    assert!(shown.contains("https://a/mcp?[redacted]"), "{shown}");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn the_default_path_sits_next_to_the_global_config() {
    let env = Env::new().with("HOME", "/home/u");
    let paths = ConfigPaths::new(std::path::Path::new("/p"), &env).unwrap();
    assert_eq!(
        AuthStore::default_path(&paths, &env),
        Some(PathBuf::from("/home/u/.config/mcp-host/mcp-auth.json"))
    );
    let env = env.with("MCP_HOST_CONFIG", "/etc/mcp/c.json");
    let paths = ConfigPaths::new(std::path::Path::new("/p"), &env).unwrap();
    assert_eq!(
        AuthStore::default_path(&paths, &env),
        Some(PathBuf::from("/etc/mcp/mcp-auth.json"))
    );
    let env = env.with("MCP_HOST_AUTH_FILE", "/secret/tokens.json");
    assert_eq!(
        AuthStore::default_path(&paths, &env),
        Some(PathBuf::from("/secret/tokens.json"))
    );
    let none = Env::new();
    let paths = ConfigPaths::new(std::path::Path::new("/p"), &none).unwrap();
    assert_eq!(AuthStore::default_path(&paths, &none), None);
}

#[cfg(unix)]
#[test]
fn a_linked_store_is_read_through_and_its_target_keeps_its_mode() {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = temp_dir();
    std::fs::create_dir_all(dir.join("elsewhere")).unwrap();
    let target = dir.join("elsewhere").join("shared.json");
    let store = AuthStore::new(&target);
    store
        .update("s", &url("https://a/mcp"), |_| Some(tokens("at-linked")))
        .unwrap();
    std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o644)).unwrap();
    let path = dir.join("mcp-auth.json");
    std::os::unix::fs::symlink(&target, &path).unwrap();
    // Read through the link: the tokens are there.
    let linked = AuthStore::new(&path);
    let found = linked.tokens("s", &url("https://a/mcp")).unwrap().unwrap();
    assert_eq!(found.access_token.secret(), "at-linked");
    assert_eq!(mode(&target), 0o644, "the link's target was chmod-ed");
    // A write replaces the link with a private file of our own; the target is untouched.
    let before = std::fs::read(&target).unwrap();
    linked
        .update("t", &url("https://b/mcp"), |_| Some(tokens("at-new")))
        .unwrap();
    assert!(
        !std::fs::symlink_metadata(&path)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(mode(&path), 0o600);
    assert_eq!(std::fs::read(&target).unwrap(), before);
    assert_eq!(mode(&target), 0o644);
    std::fs::remove_dir_all(dir).unwrap();
}

#[cfg(unix)]
#[test]
fn a_linked_lock_file_fails_the_update_and_creates_nothing() {
    let dir = temp_dir();
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("mcp-auth.json");
    let lock = dir.join("mcp-auth.json.lock");
    let store = AuthStore::new(&path);
    // An update takes the lock beside the store, creating it.
    store
        .update("s", &url("https://a/mcp"), |_| Some(tokens("at-1")))
        .unwrap();
    assert!(lock.is_file(), "no lock file beside the store");
    // A link planted in its place, to a file that does not exist.
    std::fs::remove_file(&lock).unwrap();
    let planted = dir.join("planted-by-someone");
    std::os::unix::fs::symlink(&planted, &lock).unwrap();
    let err = store
        .update("s", &url("https://a/mcp"), |_| Some(tokens("at-2")))
        .unwrap_err();
    assert!(matches!(err, AuthStoreError::Write { .. }), "{err}");
    assert!(err.to_string().contains("symbolic link"), "{err}");
    assert!(!planted.exists(), "the link's target was created");
    // Nothing was written without the lock.
    let kept = store.tokens("s", &url("https://a/mcp")).unwrap().unwrap();
    assert_eq!(kept.access_token.secret(), "at-1");
    std::fs::remove_dir_all(dir).unwrap();
}
