//! The OS keyring for real. By default the Linux kernel keyring, which needs no session bus
//! and so runs wherever the tests run; `MCP_HOST_TEST_KEYRING=secret-service` runs the same
//! tests against the Secret Service (`cargo xtask keyring` does, under `dbus-run-session` with
//! gnome-keyring). A machine whose keyring is closed to us (some container runtimes filter the
//! `keyctl` system calls) fails these tests with the reason, rather than passing them without
//! having stored anything.

#![cfg(target_os = "linux")]

use mcp_host::config::{Env, Secret};
use mcp_host::keyring::{Keyring, KeyringError, KeyringKind};

/// The keyring under test, as `MCP_HOST_KEYRING` names it.
fn kind() -> (&'static str, KeyringKind) {
    match std::env::var("MCP_HOST_TEST_KEYRING").as_deref() {
        Ok("secret-service") => ("secret-service", KeyringKind::SecretService),
        Ok("keyutils") | Err(_) => ("keyutils", KeyringKind::Keyutils),
        Ok(other) => panic!("MCP_HOST_TEST_KEYRING={other}: use keyutils or secret-service"),
    }
}

/// The environment that chooses the keyring under test.
fn env() -> Env {
    Env::new().with("MCP_HOST_KEYRING", kind().0)
}

fn keyring_under_test() -> Keyring {
    match Keyring::open(&env()) {
        Ok(k) => k,
        Err(e) => panic!(
            "the {} keyring is not usable here ({e}); the kernel keyring needs keyctl(2) \
             (a container started with the default seccomp profile of some runtimes denies it), \
             the Secret Service a session bus with a Secret Service on it",
            kind().0
        ),
    }
}

/// A name no other test run uses.
fn unique(what: &str) -> String {
    format!("it-{what}-{}", std::process::id())
}

#[test]
fn a_secret_is_kept_read_listed_and_removed() {
    let keyring = keyring_under_test();
    assert_eq!(keyring.kind(), kind().1);
    let name = unique("kept");
    assert_eq!(keyring.secret(&name).unwrap(), None, "not there yet");
    keyring
        .set_secret(&name, &Secret::new("s3cret-value"))
        .unwrap();
    // Another handle (as another process would open it) reads the same entry.
    let again = keyring_under_test();
    assert_eq!(
        again.secret(&name).unwrap().as_ref().map(Secret::secret),
        Some("s3cret-value")
    );
    assert!(again.secret_names().unwrap().contains(&name));
    // Replaced, not added beside.
    keyring.set_secret(&name, &Secret::new("second")).unwrap();
    assert_eq!(
        keyring.secret(&name).unwrap().as_ref().map(Secret::secret),
        Some("second")
    );
    assert_eq!(
        keyring
            .secret_names()
            .unwrap()
            .iter()
            .filter(|n| **n == name)
            .count(),
        1
    );
    assert!(keyring.remove_secret(&name).unwrap());
    assert_eq!(keyring.secret(&name).unwrap(), None);
    assert!(!keyring.secret_names().unwrap().contains(&name));
    assert!(!keyring.remove_secret(&name).unwrap(), "gone already");
}

#[test]
fn errors_name_the_entry_and_never_the_value() {
    let keyring = keyring_under_test();
    let err = keyring.set_secret("a/b", &Secret::new("v")).unwrap_err();
    assert!(matches!(err, KeyringError::InvalidName { .. }), "{err}");
    assert!(err.to_string().contains("a/b"), "{err}");
    let name = unique("empty");
    let err = keyring.set_secret(&name, &Secret::new("")).unwrap_err();
    assert!(err.to_string().contains(&name), "{err}");
    assert_eq!(keyring.secret(&name).unwrap(), None, "nothing was stored");
}

#[test]
fn a_keyring_reference_is_resolved_at_load_and_a_missing_one_names_server_field_and_entry() {
    use mcp_host::config::{ConfigFile, FileFormat, Scope, Transport, load_files};
    let keyring = keyring_under_test();
    let name = unique("header");
    let missing = unique("missing");
    keyring
        .set_secret(&name, &Secret::new("Bearer from-keyring"))
        .unwrap();
    let dir = std::env::temp_dir().join(format!("mcp-host-keyring-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("config.json");
    std::fs::write(
        &file,
        format!(
            r#"{{"mcpServers":{{
              "api":{{"url":"https://api.example/mcp","headers":{{"Authorization":{{"keyring":"{name}"}}}}}},
              "gone":{{"command":"x","env":{{"TOKEN":{{"keyring":"{missing}"}}}}}}}}}}"#
        ),
    )
    .unwrap();
    let env = env();
    let loaded = load_files(
        &[ConfigFile::new(
            &file,
            Scope::Global,
            FileFormat::McpServers,
        )],
        &env,
        &dir,
    );
    keyring.remove_secret(&name).unwrap();
    let api = loaded.server("api").expect("resolved from the keyring");
    let Transport::Http(http) = &api.transport else {
        panic!("{api:?}")
    };
    assert_eq!(http.headers[0].0, "Authorization");
    assert_eq!(http.headers[0].1.secret(), "Bearer from-keyring");
    assert!(
        api.reads_env.contains(&format!("keyring:{name}")),
        "an approval names the entry: {:?}",
        api.reads_env
    );
    assert!(loaded.server("gone").is_none());
    let problem = loaded
        .problems
        .iter()
        .find(|p| p.server.as_deref() == Some("gone"))
        .expect("a problem for the server");
    assert_eq!(problem.field.as_deref(), Some("env.TOKEN"));
    assert!(
        problem.message.contains(&missing) && problem.message.contains("mcp-host secret set"),
        "{problem}"
    );
    assert!(!format!("{loaded:?}").contains("from-keyring"));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The token store in the kernel keyring, shared by two "processes" (separate contexts, each
/// with its own handle on the keyring and its own locks) that both find the access token due:
/// exactly one refresh, both end with the refreshed token, and the rotated refresh token is
/// the one kept: a third run, its access token revoked, refreshes with it and needs no login.
#[cfg(feature = "oauth")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_processes_refreshing_through_the_keyring_store_refresh_once_and_lose_nothing() {
    use mcp_host::auth_store::AuthStore;
    use mcp_host::config::CredentialsStore;
    use mcp_host::oauth::{AutoFollow, OAuthContext, Settings, Url};
    use mcp_http::AuthHook as _;
    use mcp_testkit::fake_auth::{FakeAuth, FakeAuthOptions, PrmLocation};
    use std::sync::Arc;

    let fake = FakeAuth::start(FakeAuthOptions {
        access_token_lifetime: std::time::Duration::from_secs(1),
        prm: PrmLocation::PathInserted,
        ..FakeAuthOptions::default()
    })
    .await;
    let dir = std::env::temp_dir().join(format!("mcp-host-keyring-oauth-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("mcp-auth.json");
    let env = env();
    // Each process opens the store itself, as the setting says.
    let open = || AuthStore::open(CredentialsStore::Keyring, &path, &env).unwrap();
    let store = open();
    assert_eq!(store.keyring(), Some(kind().1));
    let url = Url::parse(&fake.url()).unwrap();
    let login = OAuthContext::new(Some(open())).unwrap();
    let login = login
        .clone()
        .with_user_agent(Arc::new(AutoFollow::new(login.fetcher().clone())));
    login
        .hook_for("remote", url.clone(), Settings::new(url.clone()))
        .login()
        .await
        .unwrap();
    let first = store.tokens("remote", &url).unwrap().expect("stored");
    assert!(
        !path.exists(),
        "the tokens are in the keyring, not in a file"
    );
    tokio::time::sleep(std::time::Duration::from_millis(600)).await;

    let a = OAuthContext::new(Some(open())).unwrap();
    let b = OAuthContext::new(Some(open())).unwrap();
    let hook_a = a.hook_for("remote", url.clone(), Settings::new(url.clone()));
    let hook_b = b.hook_for("remote", url.clone(), Settings::new(url.clone()));
    tokio::join!(hook_a.prepare(), hook_b.prepare());
    assert_eq!(
        fake.token_requests("refresh_token"),
        1,
        "one refresh for both"
    );
    assert_eq!((hook_a.last_error(), hook_b.last_error()), (None, None));
    let header = |h: &mcp_host::oauth::OAuthHook| h.authorization().map(|v| v.as_bytes().to_vec());
    assert!(header(&hook_a).is_some());
    assert_eq!(
        header(&hook_a),
        header(&hook_b),
        "both use the refreshed token"
    );
    let rotated = store.tokens("remote", &url).unwrap().expect("stored");
    assert_ne!(
        rotated
            .refresh_token
            .as_ref()
            .map(|t| t.secret().to_owned()),
        first.refresh_token.as_ref().map(|t| t.secret().to_owned()),
        "the rotated refresh token is the one kept"
    );

    // A third run, once the new token is due in turn: the kept refresh token works (a spent
    // one would be refused, and the run left without a token).
    tokio::time::sleep(std::time::Duration::from_millis(600)).await;
    let c = OAuthContext::new(Some(open())).unwrap();
    let hook_c = c.hook_for("remote", url.clone(), Settings::new(url.clone()));
    hook_c.prepare().await;
    assert_eq!(fake.token_requests("refresh_token"), 2);
    assert_eq!(hook_c.last_error(), None);
    assert!(header(&hook_c).is_some() && header(&hook_c) != header(&hook_a));
    assert_eq!(fake.seen_at("/authorize").len(), 1, "no second login");
    assert!(store.remove("remote").unwrap());
    assert_eq!(store.tokens("remote", &url).unwrap(), None);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A kernel keyring entry is its owner's alone: every right for the owner (so a later process
/// of the same user reads it), none for the group or others, as /proc/keys shows it. (The
/// Secret Service run, `cargo xtask keyring`, leaves this one out: it has no kernel key.)
#[test]
fn a_kernel_keyring_entry_is_opened_to_its_owner_only() {
    let keyring = keyring_under_test();
    let name = unique("perms");
    keyring
        .set_secret(&name, &Secret::new("perm-value"))
        .unwrap();
    let keys = std::fs::read_to_string("/proc/keys").unwrap();
    keyring.remove_secret(&name).unwrap();
    let line = keys
        .lines()
        .find(|l| l.contains(&format!("mcp-host:secret:{name}")))
        .unwrap_or_else(|| panic!("no key for {name} in /proc/keys:\n{keys}"));
    let perm = line.split_whitespace().nth(4).unwrap();
    assert_eq!(
        perm, "3f3f0000",
        "possessor and user all, group and other none: {line}"
    );
}
