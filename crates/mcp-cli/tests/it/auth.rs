//! `login` and `logout` against the testkit's fake authorization server, with the test acting
//! as the browser: it opens the address the command prints and follows the redirect.

use std::io::{Read as _, Write as _};

use mcp_testkit::fake_auth::{FakeAuth, FakeAuthOptions};

use super::*;

/// Reads the child's stderr until the authorization address, and returns it with what
/// stderr said up to it and the rest of stderr's reader.
fn authorization_url(child: &mut Child) -> (String, String, BufReader<std::process::ChildStderr>) {
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut seen = String::new();
    loop {
        let mut line = String::new();
        assert!(
            stderr.read_line(&mut line).unwrap() > 0,
            "no URL in {seen:?}"
        );
        seen.push_str(&line);
        if let Some(url) = line.trim().strip_prefix("http") {
            return (format!("http{url}"), seen, stderr);
        }
    }
}

/// The token store, read strictly: a missing or unreadable file fails the test.
fn token_store(u: &User) -> serde_json::Value {
    let path = u.home.path().join(".config/mcp-host/mcp-auth.json");
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_slice(&bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    tokio::task::spawn_blocking(f).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn login_in_a_browser_then_use_then_logout() {
    let fake = FakeAuth::start(FakeAuthOptions::default()).await;
    let u = std::sync::Arc::new(User::new());
    let url = fake.url();
    // Every command's output, stdout and stderr, to search for the tokens at the end.
    let mut printed: Vec<(&str, String)> = Vec::new();
    let mut keep = |what, r: &Run| printed.push((what, format!("{}{}", r.stdout, r.stderr)));
    let (add, before) = blocking({
        let u = u.clone();
        move || {
            (
                u.run(&["add", "secure", &url]),
                u.run(&["status", "secure", "--json"]),
            )
        }
    })
    .await;
    add.code(0);
    let v = before.json();
    assert_eq!(v["state"], "auth_required", "{v}");
    keep("add", &add);
    keep("status before login", &before);
    let r = blocking({
        let u = u.clone();
        move || u.run(&["tools", "secure"])
    })
    .await;
    r.code(7)
        .err_has("needs authorization")
        .err_has("mcp-host login secure");
    keep("tools before login", &r);

    let login = blocking({
        let u = u.clone();
        move || {
            let mut child = u
                .command(&["login", "secure"])
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            let (url, mut stderr, mut rest) = authorization_url(&mut child);
            // The authorization server redirects the browser to the command's loopback.
            let (status, location, _) = browse(&url);
            assert_eq!(status, 302, "{url}");
            let callback = location.unwrap();
            assert!(callback.starts_with("http://127.0.0.1:"), "{callback}");
            let (status, _, _) = browse(&callback);
            assert_eq!(status, 200);
            rest.read_to_string(&mut stderr).unwrap();
            let output = child.wait_with_output().unwrap();
            Run {
                code: output.status.code().unwrap_or(-1),
                stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
                stderr,
            }
        }
    })
    .await;
    login
        .code(0)
        .out_has("logged in to `secure`; server state: ready");
    keep("login", &login);

    // The tokens are in the store, and the access token is the one the server was shown.
    let store = token_store(&u);
    let entry = &store["servers"]["secure"];
    let mut secrets: Vec<String> = ["access_token", "refresh_token"]
        .into_iter()
        .map(|k| {
            let t = entry[k]
                .as_str()
                .unwrap_or_else(|| panic!("no {k}: {store}"));
            // Long enough not to turn up by chance.
            assert!(t.len() >= 8, "{k} {t:?}");
            t.to_owned()
        })
        .collect();
    secrets.extend(
        store["clients"]
            .as_object()
            .into_iter()
            .flat_map(|c| c.values())
            .filter_map(|c| c["client_secret"].as_str())
            .map(str::to_owned),
    );
    let bearer = format!("Bearer {}", secrets[0]);

    let (status, tools, out) = blocking({
        let u = u.clone();
        move || {
            let status = u.run(&["status", "secure", "--json"]);
            let tools = u.run(&["tools", "secure", "--json"]);
            let out = u.run(&["logout", "secure"]);
            (status, tools, out)
        }
    })
    .await;
    let v = status.code(0).json();
    assert_eq!(v["state"], "ready", "{v}");
    assert!(v["token_expires_at"].as_str().unwrap().ends_with('Z'));
    assert!(!tools.code(0).json()["tools"].as_array().unwrap().is_empty());
    assert!(
        fake.seen_at("/mcp").iter().any(|r| r
            .headers
            .get("authorization")
            .is_some_and(|h| h == bearer.as_str())),
        "the stored access token is the one sent"
    );
    out.code(0).out_has("logged out of `secure`");
    keep("status", &status);
    keep("tools", &tools);
    keep("logout", &out);

    // Logout removed the entry; the store is still there and still readable.
    let store = token_store(&u);
    assert!(store["servers"].get("secure").is_none(), "{store}");
    let (again, after) = blocking({
        let u = u.clone();
        move || {
            (
                u.run(&["logout", "secure"]),
                u.run(&["status", "secure", "--json"]),
            )
        }
    })
    .await;
    again.code(0).out_has("no stored tokens");
    assert_eq!(after.json()["state"], "auth_required");
    keep("second logout", &again);
    keep("status after logout", &after);

    // No token, refresh token or client secret ever showed in any command's output.
    let store_text = token_store(&u).to_string();
    for secret in &secrets[..2] {
        assert!(!store_text.contains(secret.as_str()), "{store_text}");
    }
    assert_eq!(printed.len(), 9);
    for (what, text) in &printed {
        for secret in &secrets {
            assert!(
                !text.contains(secret.as_str()),
                "{what} printed a secret: {text}"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn login_without_a_browser_reads_the_pasted_address() {
    let fake = FakeAuth::start(FakeAuthOptions::default()).await;
    let u = std::sync::Arc::new(User::new());
    let url = fake.url();
    let r = blocking({
        let u = u.clone();
        move || {
            u.run(&["add", "secure", &url]).code(0);
            let mut child = u
                .command(&["login", "secure", "--no-browser", "--json"])
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            let (url, _, _rest) = authorization_url(&mut child);
            let (_, location, _) = browse(&url);
            let landed = location.unwrap();
            assert!(landed.starts_with("http://127.0.0.1/callback?"), "{landed}");
            writeln!(child.stdin.take().unwrap(), "{landed}").unwrap();
            let output = child.wait_with_output().unwrap();
            Run {
                code: output.status.code().unwrap_or(-1),
                stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
                stderr: String::new(),
            }
        }
    })
    .await;
    let v = r.code(0).json();
    assert_eq!(v["logged_in"], true);
    assert_eq!(v["state"], "ready");
}

#[test]
fn login_refuses_what_has_no_oauth() {
    let u = User::new();
    u.add_demo("demo", "project");
    u.run(&["login", "demo"]).code(2).err_has("runs over stdio");
    u.run(&[
        "add",
        "keyed",
        "https://x.example/mcp",
        "--header",
        "Authorization=Bearer k",
    ])
    .code(0);
    u.run(&["login", "keyed"])
        .code(2)
        .err_has("Authorization header");
    // OAuth settings beside the header do not make it an OAuth server: the header is sent,
    // so there is nothing to log in to (and nothing is contacted to find that out).
    u.run(&[
        "add",
        "both",
        "http://127.0.0.1:9/mcp",
        "--header",
        "Authorization=Bearer k",
        "--oauth-client-id",
        "c",
    ])
    .code(0);
    let r = u.run(&["login", "both", "--no-browser"]);
    r.code(2).err_has("Authorization header");
    assert!(!r.stderr.contains("Bearer k"), "{r:#?}");
    u.run(&["login", "ghost"]).code(3);
    u.run(&["logout", "ghost"]).code(3);
}

/// A server whose authorization server names a `file:` or `ssh:` authorization endpoint: the
/// browser (a `$BROWSER` script that records what it is given) is never started, and `login`
/// fails saying why. Before the fix the script was run with the URL, and the login then
/// waited for a browser that would never come back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn login_never_opens_a_file_or_ssh_authorization_url() {
    use std::os::unix::fs::PermissionsExt as _;
    for endpoint in ["file:///etc/passwd", "ssh://evil.example/authorize"] {
        let fake = FakeAuth::start(FakeAuthOptions {
            authorization_endpoint: Some(endpoint.to_owned()),
            ..FakeAuthOptions::default()
        })
        .await;
        let u = std::sync::Arc::new(User::new());
        let record = u.home.path().join("opened.txt");
        let script = u.home.path().join("browser.sh");
        std::fs::write(
            &script,
            format!("#!/bin/sh\necho \"$@\" >> '{}'\n", record.display()),
        )
        .unwrap();
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        let url = fake.url();
        let run = blocking({
            let u = u.clone();
            move || {
                u.run(&["add", "secure", &url]).code(0);
                let mut child = u
                    .command(&["login", "secure"])
                    .env("BROWSER", &script)
                    .stdin(Stdio::null())
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .spawn()
                    .unwrap();
                // A login that opened the URL waits for the browser: give up on it.
                let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
                while child.try_wait().unwrap().is_none() && std::time::Instant::now() < deadline {
                    std::thread::sleep(std::time::Duration::from_millis(50));
                }
                let _ = child.kill();
                Run::from(child.wait_with_output().unwrap())
            }
        })
        .await;
        let opened = std::fs::read_to_string(&record).unwrap_or_default();
        assert!(
            opened.is_empty(),
            "{endpoint}: the browser was given {opened:?}"
        );
        assert_ne!(run.code, 0, "{run:?}");
        run.err_has("only https");
        assert!(!run.stderr.contains("passwd"), "{run:?}");
    }
}

/// A token store that cannot be read is never taken for an empty one: `status` says so, and a
/// login that works at the authorization server fails, since its tokens could not be kept.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_corrupt_token_store_fails_login_and_status_says_so() {
    let fake = FakeAuth::start(FakeAuthOptions::default()).await;
    let u = std::sync::Arc::new(User::new());
    let url = fake.url();
    let store = u.home.path().join(".config/mcp-host/mcp-auth.json");
    let corrupt = "{\"version\": 1, \"servers\": {\"secure\": 7}}";
    let status = blocking({
        let (u, store) = (u.clone(), store.clone());
        move || {
            u.run(&["add", "secure", &url]).code(0);
            std::fs::write(&store, corrupt).unwrap();
            u.run(&["status", "secure", "--json"])
        }
    })
    .await;
    let v = status.json();
    assert_eq!(v["state"], "auth_required", "{v}");
    let error = v["last_error"].as_str().unwrap_or_default();
    assert!(
        error.contains("token store") && error.contains("mcp-auth.json"),
        "status does not say the store is unreadable: {v}"
    );

    let login = blocking({
        let u = u.clone();
        move || {
            let mut child = u
                .command(&["login", "secure"])
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            let (url, mut stderr, mut rest) = authorization_url(&mut child);
            // The person logs in: the authorization server grants, and the command gets the
            // code.
            let (status, location, _) = browse(&url);
            assert_eq!(status, 302, "{url}");
            let (status, _, _) = browse(&location.unwrap());
            assert_eq!(status, 200);
            rest.read_to_string(&mut stderr).unwrap();
            let output = child.wait_with_output().unwrap();
            Run {
                code: output.status.code().unwrap_or(-1),
                stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
                stderr,
            }
        }
    })
    .await;
    assert_ne!(login.code, 0, "login claimed success: {login:#?}");
    assert!(!login.stdout.contains("logged in"), "{login:#?}");
    login.err_has("token store").err_has("mcp-auth.json");
    // The file is left for the user to look at.
    assert_eq!(std::fs::read_to_string(&store).unwrap(), corrupt);
}
