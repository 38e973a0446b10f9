//! What a person sees when a login fails: the browser's page says so (naming the server, the
//! authorization server's error and what to do next), and `mcp-host login`'s error starts
//! with the reason, the connection's 401 details after it. The test is the browser: it
//! follows the authorization server's redirect, but comes back with an error instead of the
//! code, as an authorization server does when the person says no.

use std::io::Read as _;
use std::sync::Arc;

use mcp_host::oauth::Url;
use mcp_testkit::fake_auth::{FakeAuth, FakeAuthOptions};

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_login_says_so_in_the_browser_and_gives_its_reason_first() {
    let fake = FakeAuth::start(FakeAuthOptions::default()).await;
    let u = Arc::new(User::new());
    let url = fake.url();
    let (page, login) = tokio::task::spawn_blocking(move || {
        u.run(&["add", "secure", &url]).code(0);
        let mut child = u
            .command(&["login", "secure"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stderr = BufReader::new(child.stderr.take().unwrap());
        let mut seen = String::new();
        let authorize = loop {
            let mut line = String::new();
            assert!(stderr.read_line(&mut line).unwrap() > 0, "no URL in {seen}");
            seen.push_str(&line);
            if let Some(rest) = line.trim().strip_prefix("http") {
                break format!("http{rest}");
            }
        };
        let (status, location, _) = browse(&authorize);
        assert_eq!(status, 302, "{authorize}");
        let callback = Url::parse(&location.unwrap()).unwrap();
        let state = callback
            .query_pairs()
            .find(|(k, _)| k == "state")
            .map(|(_, v)| v.into_owned())
            .unwrap();
        // The person said no: the authorization server sends the browser back with an error.
        let mut refused = callback.clone();
        refused
            .query_pairs_mut()
            .clear()
            .append_pair("error", "access_denied")
            .append_pair("error_description", "<b>the user</b> declined")
            .append_pair("state", &state);
        let (status, _, page) = browse(refused.as_str());
        assert_eq!(status, 200);
        stderr.read_to_string(&mut seen).unwrap();
        let output = child.wait_with_output().unwrap();
        let login = Run {
            code: output.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: seen,
        };
        (page, login)
    })
    .await
    .unwrap();

    assert!(page.contains("Login to `secure` failed"), "{page}");
    assert!(page.contains("<code>access_denied</code>"), "{page}");
    assert!(
        page.contains("&lt;b&gt;the user&lt;/b&gt; declined"),
        "{page}"
    );
    assert!(
        page.contains("<code>mcp-host login secure</code>"),
        "{page}"
    );
    assert!(!page.contains("Logged in"), "{page}");

    assert_ne!(login.code, 0, "{login:#?}");
    assert!(!login.stdout.contains("logged in"), "{login:#?}");
    let error = login
        .stderr
        .lines()
        .find(|l| l.starts_with("mcp-host: error:"))
        .unwrap_or_else(|| panic!("no error line: {login:#?}"));
    // The reason first, the connection's 401 after it.
    let reason = error.find("access_denied").expect("the reason");
    let details = error.find("401").expect("the 401 details");
    assert!(reason < details, "{error}");
    assert!(
        error.starts_with("mcp-host: error: server `secure`: login failed: authorization:"),
        "{error}"
    );
}
