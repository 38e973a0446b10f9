//! `login --device` (the OAuth device flow, RFC 8628) against the testkit's fake
//! authorization server: the command prints the address and the code as `gh auth login` does,
//! the test opens the page as the person would on another device, and the command's polls
//! end in a login; a machine with no display takes the device flow by itself; a server that
//! does not offer it is said so.

use std::io::{Read as _, Write as _};
use std::net::TcpStream;

use mcp_host::oauth::Url;
use mcp_testkit::fake_auth::{FakeAuth, FakeAuthOptions};

use super::*;

const DEVICE_GRANT: &str = "urn:ietf:params:oauth:grant-type:device_code";

/// Opens a page as the person's browser would: the body.
fn open(url: &str) -> String {
    let url = Url::parse(url).unwrap();
    let mut stream = TcpStream::connect((url.host_str().unwrap(), url.port().unwrap())).unwrap();
    let target = format!("{}?{}", url.path(), url.query().unwrap_or_default());
    write!(
        stream,
        "GET {target} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    answer
}

/// Runs `login` with `args` until it shows the code, approves on the page with the code
/// filled in, and returns the run and the lines it showed.
fn login_approved(u: &User, args: &[&str], env: &[(&str, &str)]) -> (Run, String) {
    let mut cmd = u.command(args);
    cmd.env_remove("BROWSER");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut seen = String::new();
    let complete = loop {
        let mut line = String::new();
        assert!(
            stderr.read_line(&mut line).unwrap() > 0,
            "no code shown in {seen:?}"
        );
        seen.push_str(&line);
        if let Some(rest) = line.trim().strip_prefix("or open ") {
            break rest.split_whitespace().next().unwrap().to_owned();
        }
    };
    let page = open(&complete);
    assert!(page.ends_with("approved"), "{page}");
    let mut rest = String::new();
    stderr.read_to_string(&mut rest).unwrap();
    let output = child.wait_with_output().unwrap();
    let run = Run {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: format!("{seen}{rest}"),
    };
    (run, seen)
}

fn device_fake() -> FakeAuthOptions {
    FakeAuthOptions {
        device: true,
        device_interval: 1,
        ..FakeAuthOptions::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn login_with_a_code_on_another_device_then_use() {
    let fake = FakeAuth::start(device_fake()).await;
    let u = std::sync::Arc::new(User::new());
    let url = fake.url();
    let (login, shown, tools) = tokio::task::spawn_blocking({
        let u = u.clone();
        move || {
            u.run(&["add", "secure", &url]).code(0);
            let (login, shown) = login_approved(&u, &["login", "secure", "--device"], &[]);
            (login, shown, u.run(&["tools", "secure"]))
        }
    })
    .await
    .unwrap();
    login
        .code(0)
        .out_has("logged in to `secure`; server state: ready");
    // Shown as `gh auth login` does: the address and the code, then the address with the
    // code filled in.
    let device = fake.seen_at("/device");
    assert_eq!(device.len(), 1);
    let page = format!("{}/activate", fake.issuer());
    let code_line = shown
        .lines()
        .find(|l| l.contains("enter the code"))
        .unwrap_or_else(|| panic!("{shown}"));
    assert!(
        code_line.ends_with(&format!(
            "to log in to `secure`, open {page} in a browser on any device and enter the code FAKE-0003"
        )),
        "{code_line}"
    );
    assert!(
        shown.contains(&format!(
            "  or open {page}?user_code=FAKE-0003 (the code filled in)"
        )),
        "{shown}"
    );
    // Polled with the device code, which no output shows; no browser login happened.
    let polls: Vec<String> = fake
        .seen_at("/token")
        .iter()
        .filter(|t| t.form("grant_type").as_deref() == Some(DEVICE_GRANT))
        .map(|t| t.form("device_code").unwrap())
        .collect();
    assert!(!polls.is_empty());
    assert!(fake.seen_at("/authorize").is_empty());
    for run in [&login, &tools] {
        let all = format!("{}{}", run.stdout, run.stderr);
        assert!(!all.contains(&polls[0]), "{} shown in {all}", polls[0]);
    }
    tools.code(0).out_has("echo");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_machine_without_a_display_takes_the_device_flow_where_offered() {
    let fake = FakeAuth::start(device_fake()).await;
    let u = std::sync::Arc::new(User::new());
    let url = fake.url();
    let login = tokio::task::spawn_blocking({
        let u = u.clone();
        move || {
            u.run(&["add", "secure", &url]).code(0);
            // No flag, no BROWSER, no DISPLAY: the device flow, not a loopback listener.
            login_approved(&u, &["login", "secure"], &[]).0
        }
    })
    .await
    .unwrap();
    login.code(0).out_has("logged in to `secure`");
    assert_eq!(fake.seen_at("/device").len(), 1);
    assert!(fake.seen_at("/authorize").is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_browser_takes_the_device_flow_where_offered() {
    let fake = FakeAuth::start(device_fake()).await;
    let u = std::sync::Arc::new(User::new());
    let url = fake.url();
    let login = tokio::task::spawn_blocking({
        let u = u.clone();
        move || {
            u.run(&["add", "secure", &url]).code(0);
            // A display and a browser here, but --no-browser: the code, not a pasted address.
            login_approved(
                &u,
                &["login", "secure", "--no-browser"],
                &[("DISPLAY", ":0"), ("BROWSER", "true")],
            )
            .0
        }
    })
    .await
    .unwrap();
    login.code(0).out_has("logged in to `secure`");
    assert!(!login.stderr.contains("paste the address"), "{login:#?}");
    assert_eq!(fake.seen_at("/device").len(), 1);
    assert!(fake.seen_at("/authorize").is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn device_login_where_it_is_not_offered_says_so() {
    let fake = FakeAuth::start(FakeAuthOptions::default()).await;
    let u = std::sync::Arc::new(User::new());
    let url = fake.url();
    let r = tokio::task::spawn_blocking({
        let u = u.clone();
        move || {
            u.run(&["add", "secure", &url]).code(0);
            u.run(&["login", "secure", "--device"])
        }
    })
    .await
    .unwrap();
    r.code(4)
        .err_has("login failed")
        .err_has("does not offer the device flow");
    assert!(fake.seen_at("/register").is_empty(), "nothing registered");
    assert!(fake.seen_at("/authorize").is_empty());
}
