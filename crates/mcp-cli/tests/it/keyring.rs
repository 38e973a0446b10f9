//! `mcp-host secret` and `{"keyring": NAME}` through the built binary, against the real Linux
//! kernel keyring (`MCP_HOST_KEYRING=keyutils`: it needs no session bus). A machine whose
//! kernel keyring is closed to the tests fails them with the keyring's reason.

use std::io::Write as _;
use std::process::Stdio;

use super::*;

/// A name no other run uses (the kernel keyring is the user's, shared by every test run).
fn unique(what: &str) -> String {
    format!("cli-{what}-{}", std::process::id())
}

/// Runs with `stdin` piped in and the kernel keyring chosen (the import tests use it too).
pub(super) fn run_piped(user: &User, args: &[&str], stdin: &str) -> Run {
    let mut child = user
        .command(args)
        .env("MCP_HOST_KEYRING", "keyutils")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    Run {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

fn run_keyutils(user: &User, args: &[&str]) -> Run {
    user.run_with(args, "MCP_HOST_KEYRING", "keyutils")
}

#[test]
fn a_secret_set_from_stdin_is_listed_by_name_shown_only_on_request_and_removed() {
    let user = User::new();
    let name = unique("set");
    const VALUE: &str = "ghp-planted-4e1b7c";
    run_piped(&user, &["secret", "set", &name], &format!("{VALUE}\n"))
        .code(0)
        .err_has("stored")
        .err_has("keyutils");
    let list = run_keyutils(&user, &["secret", "list"]);
    list.code(0).out_has(&name);
    let get = run_keyutils(&user, &["secret", "get", &name]);
    get.code(0).out_has("is set");
    for run in [&list, &get] {
        assert!(
            !run.stdout.contains(VALUE) && !run.stderr.contains(VALUE),
            "{run:#?}"
        );
    }
    // The trailing newline of the piped value was not stored.
    let revealed = run_keyutils(&user, &["secret", "get", &name, "--reveal"]);
    revealed.code(0);
    assert_eq!(revealed.stdout, format!("{VALUE}\n"));
    let doc = run_keyutils(&user, &["--json", "secret", "get", &name]).json();
    assert_eq!(doc["set"], true);
    assert!(doc.get("value").is_none(), "{doc}");
    run_keyutils(&user, &["secret", "rm", &name]).code(0);
    run_keyutils(&user, &["secret", "get", &name])
        .code(3)
        .err_has("not set");
    let list = run_keyutils(&user, &["--json", "secret", "list"]).json();
    assert!(list["secrets"].is_array(), "{list}");
    assert!(
        !list["secrets"]
            .as_array()
            .unwrap()
            .contains(&name.clone().into())
    );
}

#[test]
fn a_value_on_the_command_line_is_refused_without_being_echoed() {
    let user = User::new();
    let name = unique("argv");
    const VALUE: &str = "argv-planted-0c55";
    let run = run_keyutils(&user, &["secret", "set", &name, VALUE]);
    run.code(2).err_has("not taken from the command line");
    assert!(!run.stderr.contains(VALUE), "{run:#?}");
    run_keyutils(&user, &["secret", "get", &name]).code(3);
    // An empty value is refused too: nothing is stored.
    run_piped(&user, &["secret", "set", &name], "\n")
        .code(2)
        .err_has("empty");
    run_keyutils(&user, &["secret", "get", &name]).code(3);
}

#[test]
fn a_configured_keyring_reference_reaches_the_server_and_a_missing_one_is_named() {
    let user = User::new();
    let name = unique("ref");
    let missing = unique("absent");
    run_piped(&user, &["secret", "set", &name], "demo-env-value").code(0);
    // The server writes the value it was given where the test can see it, then serves.
    let seen = user.home.path().join("seen-key");
    let script = format!(
        "printf %s \"$DEMO_KEY\" > '{}'; exec '{}' demo-server",
        seen.display(),
        bin()
    );
    user.write_global(&serde_json::json!({"version": 1, "mcp": {"servers": {
        "demo": {"command": "sh", "args": ["-c", script],
                 "env": {"DEMO_KEY": {"keyring": name}}},
        "broken": {"command": bin(), "args": ["demo-server"],
                   "env": {"DEMO_KEY": {"keyring": missing}}},
    }}}));
    let test = run_keyutils(&user, &["test", "demo"]);
    run_keyutils(&user, &["secret", "rm", &name]).code(0);
    test.code(0);
    assert_eq!(std::fs::read_to_string(&seen).unwrap(), "demo-env-value");
    assert!(
        !test.stdout.contains("demo-env-value") && !test.stderr.contains("demo-env-value"),
        "{test:#?}"
    );
    let broken = run_keyutils(&user, &["test", "broken"]);
    assert_ne!(broken.code, 0, "{broken:#?}");
    let all = format!("{}{}", broken.stdout, broken.stderr);
    assert!(
        all.contains(&missing) && all.contains("env.DEMO_KEY"),
        "{broken:#?}"
    );
}
