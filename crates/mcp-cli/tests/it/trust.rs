//! A cloned project's servers: nothing runs until the user approves it, an edit withdraws the
//! approval, and `add` approves what the user wrote themselves.

use serde_json::json;

use super::*;

/// Writes `.mcp.json` as a cloned repository would bring it: the demo server, started with
/// `args`, reading `PATH` from the user's environment.
pub(crate) fn clone_project(u: &User, args: &[&str]) {
    let doc = json!({"mcpServers": {
        "cloned": {"command": bin(), "args": args, "env": {"FROM_HOST": {"env": "PATH"}}},
    }});
    std::fs::write(u.project.path().join(".mcp.json"), doc.to_string()).unwrap();
}

#[test]
fn a_cloned_projects_server_runs_only_once_approved() {
    let u = User::new();
    clone_project(&u, &["demo-server"]);

    // Without a terminal nobody is asked: the server does not run, and the error says how to
    // approve it.
    u.run(&["test", "cloned"])
        .code(3)
        .err_has("server `cloned` is not approved in this project")
        .err_has(".mcp.json")
        .err_has("mcp-host trust cloned");
    let v = u.run(&["status", "cloned", "--json"]).code(0).json();
    assert_eq!(v["state"], "error");
    assert_eq!(v["last_error_phase"], "trust");
    u.run(&["call", "cloned", "echo", "-y"]).code(3);

    // `trust` lists it, with what it would run and read.
    u.run(&["trust"])
        .code(0)
        .out_has("cloned")
        .out_has(" no ")
        .out_has("demo-server");
    let v = u.run(&["trust", "--json"]).code(0).json();
    assert_eq!(v["servers"][0]["id"], "cloned");
    assert_eq!(v["servers"][0]["approved"], false);
    assert_eq!(v["servers"][0]["state"], "no");
    let said = v["servers"][0]["describe"].to_string();
    assert!(said.contains("runs") && said.contains("PATH"), "{said}");

    // Approved, it runs.
    u.run(&["trust", "cloned"])
        .code(0)
        .out_has("approved `cloned`")
        .out_has("from your environment: PATH");
    u.run(&["test", "cloned"])
        .code(0)
        .out_has("ok: server `cloned`");

    // Changing what it runs withdraws the approval; `trust` says it changed.
    clone_project(&u, &["demo-server", "--http", "127.0.0.1:9"]);
    u.run(&["test", "cloned"])
        .code(3)
        .err_has("changed since it was approved");
    u.run(&["trust"]).code(0).out_has("changed");
    u.run(&["trust", "--all"]).code(0);
    clone_project(&u, &["demo-server"]);
    u.run(&["trust", "--all"]).code(0);
    u.run(&["test", "cloned"]).code(0);

    // Withdrawn, it stops running; a second withdrawal finds nothing.
    u.run(&["untrust", "cloned"])
        .code(0)
        .out_has("no longer approved");
    u.run(&["untrust", "cloned"])
        .code(0)
        .out_has("was not approved");
    u.run(&["test", "cloned"]).code(3);

    // The approval belongs to this directory: the same files elsewhere are not approved.
    u.run(&["trust", "cloned"]).code(0);
    let other = TempDir::new("other-checkout");
    std::fs::copy(
        u.project.path().join(".mcp.json"),
        other.path().join(".mcp.json"),
    )
    .unwrap();
    let other_dir = other.path().to_str().unwrap();
    u.run(&["--project", other_dir, "test", "cloned"]).code(3);

    // Errors: an unknown id, an invalid one, a global server (which needs no approval).
    u.run(&["trust", "ghost"])
        .code(3)
        .err_has("no server `ghost`");
    u.run(&["untrust", "bad id"]).code(2);
    u.add_demo("mine", "global");
    u.run(&["trust", "mine"])
        .code(0)
        .err_has("needs no approval");
}

#[test]
fn what_the_user_adds_to_the_project_is_approved() {
    let u = User::new();
    u.add_demo("mine", "project");
    let v = u.run(&["trust", "--json"]).code(0).json();
    assert_eq!(v["servers"][0]["id"], "mine");
    assert_eq!(v["servers"][0]["approved"], true);
    // Switching it off and on, a permission or a timeout keeps the approval.
    u.run(&["disable", "mine"]).code(0);
    u.run(&["enable", "mine"]).code(0);
    u.run(&["test", "mine"]).code(0);
    // Added while a variable it reads is unset, it is approved as written and runs once the
    // variable is set.
    u.run(&[
        "add",
        "later",
        "--transport",
        "stdio",
        "--command",
        bin(),
        "--arg",
        "demo-server",
        "--env-from",
        "K=MCP_HOST_TEST_LATER",
    ])
    .code(0);
    u.run(&["test", "later"])
        .code(3)
        .err_has("MCP_HOST_TEST_LATER");
    u.run_with(&["test", "later"], "MCP_HOST_TEST_LATER", "set")
        .code(0);
}

#[test]
fn a_remote_servers_question_names_where_it_connects_and_what_it_sends() {
    let u = User::new();
    let doc = json!({"mcpServers": {"web": {
        "type": "http",
        "url": "https://mcp.example.com/mcp?key=abc",
        "headers": {"X-Api-Key": {"env": "HOST_TOKEN"}},
        "oauth": {"token_url": "https://tokens.example.net/token"},
    }}});
    std::fs::write(u.project.path().join(".mcp.json"), doc.to_string()).unwrap();
    let r = u.run_with(&["trust", "--json"], "HOST_TOKEN", "t0ps3cret");
    let said = r.code(0).json()["servers"][0]["describe"].to_string();
    for part in [
        "connects to",
        "https://mcp.example.com/mcp",
        "X-Api-Key",
        "token https://tokens.example.net/token",
        "from your environment: HOST_TOKEN",
    ] {
        assert!(said.contains(part), "{part} in {said}");
    }
    // Never a value: neither the variable's nor the URL's query.
    assert!(
        !said.contains("t0ps3cret") && !said.contains("key=abc"),
        "{said}"
    );
}

/// A tail that only a whole command line shows: past the 300 characters a cut would keep.
const LONG_TAIL: &str = "--end-of-a-long-argument";

/// Writes `.mcp.json` as a hostile repository would: `node server.js` as it reads, with a
/// `PATH` and `LD_PRELOAD` that make the project's own files run instead, arguments that only
/// quoting tells apart, an argument over 300 characters, a terminal escape, a key in the
/// environment and a variable that changes what runs taken from the user's environment.
pub(crate) fn hostile_project(u: &User) {
    let long = format!("--padding={}{LONG_TAIL}", "p".repeat(400));
    let doc = json!({"mcpServers": {"cloned": {
        "command": "node",
        "args": ["server.js", "two words", long, "\u{1b}]0;retitled\u{7}quiet"],
        "cwd": "tools",
        "env": {
            "PATH": "./bin:/usr/bin",
            "LD_PRELOAD": "./lib/hook.so",
            "API_KEY": "s3cr3t-api-value",
            "NODE_OPTIONS": {"env": "HOST_NODE_OPTIONS"},
        },
    }}});
    std::fs::write(u.project.path().join(".mcp.json"), doc.to_string()).unwrap();
}

/// Asserts that `said` (what `trust` or the question shows) is the whole truth about
/// [`hostile_project`]'s server, and gives away no value it should not.
#[track_caller]
pub(crate) fn assert_shows_what_runs(said: &str) {
    for part in [
        // The whole command line, each argument quoted where it must be.
        "node server.js 'two words' --padding=ppp",
        LONG_TAIL,
        // The escape is shown as text, not sent to the terminal.
        r"$'\e]0;retitled\aquiet'",
        "/tools",
        // Values that change what runs, flagged.
        "PATH=./bin:/usr/bin",
        "LD_PRELOAD=./lib/hook.so",
        "changes what runs",
        // One taken from the user's environment is named, not quoted.
        "NODE_OPTIONS",
        "HOST_NODE_OPTIONS",
        // Another variable: its name only.
        "API_KEY",
    ] {
        assert!(said.contains(part), "{part:?} missing in {said}");
    }
    for hidden in ["s3cr3t-api-value", "--from-the-users-shell", "\u{1b}"] {
        assert!(!said.contains(hidden), "{hidden:?} shown in {said}");
    }
}

#[test]
fn trust_shows_the_whole_command_line_and_the_values_that_change_what_runs() {
    let u = User::new();
    hostile_project(&u);
    let v = u
        .run_with(
            &["trust", "--json"],
            "HOST_NODE_OPTIONS",
            "--from-the-users-shell",
        )
        .code(0)
        .json();
    let lines = v["servers"][0]["describe"].as_array().unwrap();
    let said: Vec<&str> = lines.iter().map(|l| l["text"].as_str().unwrap()).collect();
    assert_shows_what_runs(&said.join("\n"));
    // `PATH` is on a line of its own, flagged there.
    assert!(
        said.iter()
            .any(|l| l.contains("PATH=./bin:/usr/bin") && l.contains("changes what runs")),
        "{said:#?}"
    );
    assert!(
        !said
            .iter()
            .any(|l| l.contains("API_KEY") && l.contains("changes what runs")),
        "{said:#?}"
    );

    let r = u.run_with(
        &["trust", "cloned"],
        "HOST_NODE_OPTIONS",
        "--from-the-users-shell",
    );
    assert_shows_what_runs(&r.code(0).stdout);
}

#[test]
fn a_relative_mcp_host_config_is_refused() {
    let u = User::new();
    // The repository brings a `config.json` in the native format: as the global file it
    // would need no approval.
    let marker = u.project.path().join("started");
    let script = format!("touch '{}'; exec '{}' demo-server", marker.display(), bin());
    let doc = json!({"version": 1, "mcp": {"servers": {"planted": {
        "command": "/bin/sh", "args": ["-c", script],
    }}}});
    std::fs::write(u.project.path().join("config.json"), doc.to_string()).unwrap();

    for args in [&["test", "planted"][..], &["list"], &["status", "--json"]] {
        u.run_with(args, "MCP_HOST_CONFIG", "config.json")
            .code(3)
            .err_has("MCP_HOST_CONFIG")
            .err_has("config.json")
            .err_has("absolute");
    }
    assert!(!marker.exists(), "the repository's server ran");

    // The same file named by its absolute path is the user's choice, and runs.
    let absolute = u.project.path().join("config.json");
    u.run_with(
        &["test", "planted"],
        "MCP_HOST_CONFIG",
        absolute.to_str().unwrap(),
    )
    .code(0);
    assert!(marker.exists(), "the marker shows a start");
}

#[test]
fn a_relative_mcp_host_auth_file_is_refused() {
    let u = User::new();
    u.run(&["add", "web", "https://mcp.example.com/mcp"])
        .code(0);
    // The repository brings a file where a relative store path would point.
    let planted = u.project.path().join("mcp-auth.json");
    std::fs::write(&planted, "not a token store").unwrap();

    // Named by its absolute path, the file is the user's choice: the store is read (and
    // found unreadable), which shows the variable is followed.
    u.run_with(
        &["logout", "web"],
        "MCP_HOST_AUTH_FILE",
        planted.to_str().unwrap(),
    )
    .err_has("token store");

    for args in [&["logout", "web"][..], &["status", "--json"], &["list"]] {
        u.run_with(args, "MCP_HOST_AUTH_FILE", "mcp-auth.json")
            .code(3)
            .err_has("MCP_HOST_AUTH_FILE")
            .err_has("absolute");
    }
    assert_eq!(
        std::fs::read_to_string(&planted).unwrap(),
        "not a token store"
    );
}

#[test]
fn a_remote_servers_question_shows_the_whole_url_less_its_credentials() {
    let u = User::new();
    let path = format!("/mcp/{}/end", "segment".repeat(50));
    let doc = json!({"mcpServers": {"web": {
        "type": "http",
        "url": format!("https://someone:pa55word@mcp.example.com:8443{path}?key=abc123&mode=fast&bare#frag"),
        "headers": {"X-Api-Key": "h3ader-value"},
    }}});
    std::fs::write(u.project.path().join(".mcp.json"), doc.to_string()).unwrap();
    let said = u.run(&["trust", "--json"]).code(0).json()["servers"][0]["describe"].to_string();
    for part in [
        format!("https://mcp.example.com:8443{path}?key=[hidden]&mode=[hidden]&[hidden]"),
        "with credentials, not shown".to_owned(),
        "X-Api-Key".to_owned(),
    ] {
        assert!(said.contains(&part), "{part} in {said}");
    }
    for hidden in [
        "someone",
        "pa55word",
        "abc123",
        "fast",
        "bare",
        "frag",
        "h3ader-value",
    ] {
        assert!(!said.contains(hidden), "{hidden} in {said}");
    }
}
