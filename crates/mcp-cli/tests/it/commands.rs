//! The commands people type coming from Claude Code and Codex (issue 23 §3): their spellings of
//! `add`, `add-json`, `add-from-claude-desktop`, `get`, `list NAME`, `remove`,
//! `reset-project-choices`, `login --scopes`; the local, project and user scopes; secrets typed
//! for a project kept out of its tree; `tools ID TOOL`; and hints that lead somewhere.

use std::io::{Read as _, Write as _};
use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt as _;

use serde_json::json;

use super::*;

fn read_json(path: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(path).unwrap())
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The user's private file for this project: the one file under `projects/` of their
/// configuration directory.
fn local_file(u: &User) -> PathBuf {
    let dir = u.home.path().join(".config/mcp-host/projects");
    let files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    files[0].clone()
}

/// Every file under `dir`, with its contents.
fn tree(dir: &Path) -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(tree(&p));
        } else {
            out.push((p.clone(), std::fs::read_to_string(&p).unwrap_or_default()));
        }
    }
    out
}

#[test]
fn claude_codes_spellings_of_add() {
    let u = User::new();
    // `-t http NAME URL` (the reproduced failure), `-s project`, `-H "Name: value"`.
    u.run(&[
        "add",
        "-t",
        "http",
        "-s",
        "project",
        "docs",
        "https://docs.example.com/mcp",
        "-H",
        "X-Team: core",
        "--header",
        "X-Other=a:b",
    ])
    .code(0)
    .out_has("added http server `docs`")
    .out_has("(project)");
    let docs = &read_json(&u.project_file())["mcp"]["servers"]["docs"];
    assert_eq!(docs["url"], "https://docs.example.com/mcp");
    assert_eq!(docs["headers"]["X-Team"], "core");
    assert_eq!(docs["headers"]["X-Other"], "a:b");
    // `--transport http NAME URL` too, and `-t sse`.
    u.run(&[
        "add",
        "--transport",
        "http",
        "-s",
        "project",
        "api",
        "https://api.example.com/mcp",
    ])
    .code(0);
    u.run(&["add", "-t", "sse", "old", "http://127.0.0.1:3001/sse"])
        .code(0)
        .out_has("added sse server `old`");
    u.run(&["add", "-t", "http", "bad", "npx", "server"])
        .code(2)
        .err_has("takes one URL");
    // `-e KEY=VALUE` and `NAME COMMAND ARGS...` without `--`; `-s user` is `--scope global`.
    u.run(&[
        "add",
        "-e",
        "LOG=debug",
        "-s",
        "user",
        "files",
        "npx",
        "server",
        ".",
    ])
    .code(0)
    .out_has("(global)");
    let files = &read_json(&u.global_file())["mcp"]["servers"]["files"];
    assert_eq!(files["command"], "npx");
    assert_eq!(files["args"], json!(["server", "."]));
    assert_eq!(files["env"]["LOG"], "debug");
    // `claude mcp add NAME -- COMMAND ARGS` with the options before the name.
    u.run(&[
        "add",
        "-t",
        "stdio",
        "-e",
        "A=1",
        "airtable",
        "--",
        "npx",
        "-y",
        "airtable-mcp-server",
    ])
    .code(0);
    let list = u.run(&["list", "--json"]).code(0).json();
    let find = |id: &str| {
        list["servers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["id"] == id)
            .unwrap_or_else(|| panic!("no {id} in {list}"))
            .clone()
    };
    assert_eq!(find("airtable")["target"], "npx -y airtable-mcp-server");
    assert_eq!(find("airtable")["source"], "local");
    assert_eq!(find("api")["transport"], "http");
    assert_eq!(find("old")["transport"], "sse");
    assert_eq!(find("files")["source"], "global");
    // `--client-id` is `--oauth-client-id`.
    u.run(&[
        "add",
        "o",
        "https://o.example/mcp",
        "--client-id",
        "cid",
        "--json",
    ])
    .code(0);
    let o = &read_json(&local_file(&u))["mcp"]["servers"]["o"];
    assert_eq!(o["oauth"]["client_id"], "cid");
}

#[test]
fn codex_spellings_of_add() {
    let u = User::new();
    u.run(&[
        "add",
        "gh",
        "--env",
        "GITHUB_TOKEN=ghp_codex1",
        "--",
        "npx",
        "-y",
        "server-github",
    ])
    .code(0);
    u.run(&[
        "add",
        "api",
        "--url",
        "https://api.example.com/mcp",
        "--bearer-token-env-var",
        "API_TOKEN",
    ])
    .code(0);
    // The default scope is local: nothing in the project's tree.
    assert!(!u.project.path().join(".mcp-host").exists());
    let local = read_json(&local_file(&u));
    assert_eq!(
        local["mcp"]["servers"]["gh"]["env"]["GITHUB_TOKEN"],
        "ghp_codex1"
    );
    assert_eq!(
        local["mcp"]["servers"]["api"]["headers"]["Authorization"],
        "Bearer ${API_TOKEN}"
    );
    // The variable is read when it is set; unset, the entry says which one is missing.
    let v = u
        .run_with(&["get", "api", "--json"], "API_TOKEN", "t0k")
        .code(0)
        .json();
    assert_eq!(v["headers"], json!(["Authorization"]));
    assert_eq!(v["scope"], "local");
    u.run(&["get", "api"]).code(3).err_has("API_TOKEN");
    u.run(&[
        "add",
        "both",
        "--url",
        "https://x.example/mcp",
        "--bearer-token-env-var",
        "T",
        "-H",
        "Authorization: Bearer x",
    ])
    .code(2)
    .err_has("not both");
}

#[test]
fn secrets_typed_for_the_project_stay_out_of_its_tree() {
    let u = User::new();
    let added = u.run(&[
        "add",
        "-s",
        "project",
        "api",
        "https://api.example.com/mcp",
        "-H",
        "Authorization: Bearer hdr-s3cret",
        "-H",
        "X-Team: core",
    ]);
    added
        .code(0)
        .err_has("warning: `headers.Authorization` of `api` is a secret")
        .err_has("projects/");
    let out = u.project.path().join("out.txt");
    let script = format!("printf %s \"$API_TOKEN\" > {}", out.display());
    u.run(&[
        "add",
        "-s",
        "project",
        "tool",
        "-e",
        "API_TOKEN=env-s3cret",
        "-e",
        "LOG=debug",
        "--",
        "sh",
        "-c",
        &script,
    ])
    .code(0)
    .err_has("`env.API_TOKEN` of `tool` is a secret");
    u.run(&[
        "add-json",
        "-s",
        "project",
        "j",
        r#"{"type":"http","url":"https://j.example/mcp","headers":{"X-Api-Key":"json-s3cret"}}"#,
    ])
    .code(0)
    .err_has("`headers.X-Api-Key` of `j` is a secret");

    // The project's file holds references; the values are in no file of the tree.
    let servers = &read_json(&u.project_file())["mcp"]["servers"];
    assert_eq!(
        servers["api"]["headers"]["Authorization"],
        "Bearer ${API_AUTHORIZATION}"
    );
    assert_eq!(servers["api"]["headers"]["X-Team"], "core");
    assert_eq!(servers["tool"]["env"]["API_TOKEN"], "${API_TOKEN}");
    assert_eq!(servers["tool"]["env"]["LOG"], "debug");
    assert_eq!(servers["j"]["headers"]["X-Api-Key"], "${J_X_API_KEY}");
    let files = tree(u.project.path());
    assert!(
        files
            .iter()
            .any(|(p, _)| p.ends_with(".mcp-host/config.json")),
        "{files:?}"
    );
    for (path, text) in &files {
        for secret in ["hdr-s3cret", "env-s3cret", "json-s3cret"] {
            assert!(!text.contains(secret), "{secret} in {}", path.display());
        }
        // No lock file is left in the tree either.
        assert!(
            !path.to_string_lossy().ends_with(".lock"),
            "{}",
            path.display()
        );
    }
    // They are in the user's private file, outside the tree, private.
    let local = local_file(&u);
    assert!(!local.starts_with(u.project.path()));
    let vars = &read_json(&local)["variables"];
    assert_eq!(vars["API_AUTHORIZATION"], "hdr-s3cret");
    assert_eq!(vars["API_TOKEN"], "env-s3cret");
    assert_eq!(vars["J_X_API_KEY"], "json-s3cret");
    let mode = std::fs::metadata(&local).unwrap().permissions().mode();
    assert_eq!(mode & 0o077, 0, "{mode:o}");

    // And the server gets the value: the reference resolves from the private file.
    u.run(&["test", "tool"]);
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "env-s3cret");
    // The process's environment still wins over the private file.
    std::fs::remove_file(&out).unwrap();
    u.run_with(&["test", "tool"], "API_TOKEN", "from-env");
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "from-env");

    // Written to the user's own files, a value stays where it was typed (private files).
    u.run(&["add", "mine", "-e", "API_TOKEN=mine-s3cret", "--", "true"])
        .code(0);
    assert_eq!(
        read_json(&local)["mcp"]["servers"]["mine"]["env"]["API_TOKEN"],
        "mine-s3cret"
    );
}

#[test]
fn add_json_takes_an_mcp_json_entry() {
    let u = User::new();
    u.run(&[
        "add-json",
        "files",
        &format!(
            r#"{{"command":"{}","args":["demo-server"],"env":{{"LOG":"x"}}}}"#,
            bin()
        ),
    ])
    .code(0)
    .out_has("added stdio server `files`")
    .out_has("(local)");
    u.run(&["test", "files"])
        .code(0)
        .out_has("ok: server `files`");
    u.run(&[
        "add-json",
        "web",
        r#"{"type":"sse","url":"http://127.0.0.1:9/sse"}"#,
        "-s",
        "user",
    ])
    .code(0)
    .out_has("added sse server `web`");
    assert_eq!(
        read_json(&u.global_file())["mcp"]["servers"]["web"]["transport"],
        "sse"
    );
    u.run(&["add-json", "x", "{oops"])
        .code(2)
        .err_has("not valid JSON")
        .err_has("quote it for the shell");
    u.run(&["add-json", "x", r#"{"command":"a","oauth":{}}"#])
        .code(2)
        .err_has("`oauth` is not known");
    u.run(&["add-json", "x", r#"{"type":"http"}"#])
        .code(2)
        .err_has("`url` is missing");
}

#[test]
fn get_and_list_name_show_one_server() {
    let u = User::new();
    u.add_demo("demo", "project");
    let r = u.run(&["get", "demo"]);
    r.code(0)
        .out_has("scope")
        .out_has("project")
        .out_has("approved")
        .out_has("demo-server")
        .out_has("mcp-host remove demo --scope project");
    let v = u.run(&["get", "demo", "--json"]).code(0).json();
    assert_eq!(v["id"], "demo");
    assert_eq!(v["scope"], "project");
    assert_eq!(v["approved"], true);
    assert_eq!(v["transport"], "stdio");
    // `list NAME` shows it the same way.
    assert_eq!(u.run(&["list", "demo", "--json"]).code(0).json(), v);
    u.run(&["get", "ghost"])
        .code(3)
        .err_has("no server `ghost`")
        .err_has("configured servers: demo");
    u.run(&["list", "ghost"])
        .code(3)
        .err_has("no server `ghost`");
    // The old prompt spelling is an error that says what to type now.
    u.run(&["get", "demo", "review", "--arg", "topic=x"])
        .code(2)
        .err_has("`get` shows one configured server")
        .err_has("mcp-host prompt get demo review");
    u.run(&["prompt", "get", "demo", "review", "--arg", "topic=x"])
        .code(0)
        .out_has("Please review x.");
}

#[test]
fn scopes_layer_as_claude_codes_do() {
    let u = User::new();
    u.run(&["add", "s", "https://user.example/mcp", "--scope", "global"])
        .code(0);
    u.run(&["add", "s", "https://project.example/mcp", "-s", "project"])
        .code(0);
    let r = u.run(&["list", "--json"]).code(0).json();
    assert_eq!(r["servers"][0]["target"], "https://project.example/mcp");
    u.run(&["add", "s", "https://local.example/mcp"]).code(0);
    // Local wins over project, which wins over user.
    let r = u.run(&["list", "--json"]).code(0).json();
    assert_eq!(r["servers"][0]["source"], "local");
    assert_eq!(r["servers"][0]["target"], "https://local.example/mcp");
    for (scope, url) in [
        ("local", "https://local.example/mcp"),
        ("project", "https://project.example/mcp"),
        ("user", "https://user.example/mcp"),
        ("global", "https://user.example/mcp"),
    ] {
        let r = u.run(&["list", "--scope", scope, "--json"]).code(0).json();
        assert_eq!(r["servers"][0]["target"], url, "{scope}");
        assert_eq!(r["servers"].as_array().unwrap().len(), 1, "{scope}");
    }
    // The local layer is this project's: another project does not see it.
    let other = TempDir::new("other-project");
    let other_dir = other.path().to_str().unwrap();
    let r = u
        .run(&["--project", other_dir, "list", "--json"])
        .code(0)
        .json();
    assert_eq!(r["servers"][0]["target"], "https://user.example/mcp");
    // Removing without --scope needs the one layer; here there are three.
    u.run(&["remove", "s"])
        .code(2)
        .err_has("several layers: local, project, global");
    u.run(&["remove", "s", "-s", "local"]).code(0);
    let r = u.run(&["list", "--json"]).code(0).json();
    assert_eq!(r["servers"][0]["source"], "project");
}

#[test]
fn reset_project_choices_withdraws_every_approval() {
    let u = User::new();
    u.add_demo("a", "project");
    u.add_demo("b", "project");
    assert_eq!(u.run(&["get", "a", "--json"]).json()["approved"], true);
    u.run(&["reset-project-choices"])
        .code(0)
        .out_has("withdrew 2 approvals");
    for id in ["a", "b"] {
        assert_eq!(u.run(&["get", id, "--json"]).json()["approved"], false);
    }
    u.run(&["test", "a"]).code(3).err_has("not approved");
    let v = u.run(&["reset-project-choices", "--json"]).code(0).json();
    assert_eq!(v["revoked"], 0);
}

#[test]
fn tools_id_tool_shows_its_arguments() {
    let u = User::new();
    u.add_demo("demo", "global");
    u.run(&["tools", "demo", "add"])
        .code(0)
        .out_has("Adds two numbers.")
        .out_has("arguments:")
        .out_has("a  number  required")
        .out_has("b  number  required")
        .out_has("mcp-host call demo add");
    u.run(&["tools", "demo", "slow"])
        .code(0)
        .out_has("step_ms  integer");
    u.run(&["tools", "demo", "stats"])
        .code(0)
        .out_has("no arguments");
    let v = u.run(&["tools", "demo", "echo", "--json"]).code(0).json();
    assert_eq!(v["input_schema"]["required"], json!(["text"]));
    u.run(&["tools", "demo", "nope"])
        .code(2)
        .err_has("no tool `nope`")
        .err_has("echo");
}

#[test]
fn add_from_claude_desktop_imports_into_the_local_scope() {
    let u = User::new();
    let path = u
        .home
        .path()
        .join(".config/Claude/claude_desktop_config.json");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../fixtures/import/claude-desktop/ok/claude_desktop_config.json"),
        &path,
    )
    .unwrap();
    u.run(&["add-from-claude-desktop"])
        .code(0)
        .out_has("added `filesystem`");
    assert!(!u.project.path().join(".mcp-host").exists());
    let servers = &read_json(&local_file(&u))["mcp"]["servers"];
    assert_eq!(servers["filesystem"]["command"], "npx");
    u.run(&["add-from-claude-desktop", "-s", "project", "--dry-run"])
        .code(0)
        .out_has("would add");
}

/// A loopback HTTP server that answers every request 401, as a server does to a wrong token.
fn refusing_server() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut s) = stream else { continue };
            let mut buf = [0u8; 8192];
            let _ = s.read(&mut buf);
            let _ = s.write_all(
                b"HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Bearer error=\"invalid_token\"\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            );
        }
    });
    url
}

#[test]
fn hints_lead_somewhere() {
    let u = User::new();
    let url = refusing_server();
    u.run(&["add", "api", &url, "-H", "Authorization: Bearer wrong"])
        .code(0);
    let r = u.run(&["test", "api"]);
    r.code(7)
        .err_has("needs authorization")
        .err_has("refused the Authorization header")
        .err_has("fix its value there");
    assert!(!r.stderr.contains("log in with"), "{r:#?}");
    // `login` refuses such a server, so it must not be what the hint says.
    u.run(&["login", "api"])
        .code(2)
        .err_has("configured Authorization header");

    // A missing gateway file is a path to check, not a schema to read.
    let r = u.run(&["serve", "--gateway", "/nonexistent/gateway.json"]);
    r.code(3).err_has("cannot read it").err_has("--gateway");
    assert!(!r.stderr.contains("gateway schema"), "{r:#?}");
    let bad = u.project.path().join("gateway.json");
    std::fs::write(&bad, "[1]").unwrap();
    u.run(&["serve", "--gateway", bad.to_str().unwrap()])
        .code(3)
        .err_has("gateway schema");
}

/// JSON typed after `/call ID TOOL` in the shell: the error speaks of what was typed there, not
/// of the command line's `--args` or of quoting for a shell.
#[test]
fn the_shells_json_error_does_not_speak_of_args() {
    use nix::pty::{Winsize, openpty};
    use std::sync::{Arc, Mutex};
    use std::time::{Duration, Instant};

    let u = User::new();
    u.add_demo("demo", "global");
    let size = Winsize {
        ws_row: 50,
        ws_col: 200,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    let pty = openpty(Some(&size), None).unwrap();
    let mut child = u
        .command(&["shell", "--yes"])
        .env("TERM", "xterm")
        .stdin(Stdio::from(pty.slave.try_clone().unwrap()))
        .stdout(Stdio::from(pty.slave.try_clone().unwrap()))
        .stderr(Stdio::from(pty.slave))
        .spawn()
        .unwrap();
    let mut master = std::fs::File::from(pty.master);
    let seen = Arc::new(Mutex::new(String::new()));
    let mut reader = master.try_clone().unwrap();
    let sink = seen.clone();
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n) = reader.read(&mut buf) {
            if n == 0 {
                break;
            }
            sink.lock()
                .unwrap()
                .push_str(&String::from_utf8_lossy(&buf[..n]));
        }
    });
    let wait_for = |text: &str, from: usize| -> usize {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            {
                let s = seen.lock().unwrap();
                if let Some(at) = s.get(from..).and_then(|t| t.find(text)) {
                    return from + at + text.len();
                }
                assert!(Instant::now() < deadline, "no {text:?} in:\n{s}");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    let at = wait_for("mcp> ", 0);
    master.write_all(b"/call demo add {oops\r").unwrap();
    let end = wait_for("not valid JSON", at);
    let after = wait_for("mcp> ", end);
    let said = seen.lock().unwrap()[at..after].to_owned();
    assert!(said.contains("the arguments are not valid JSON"), "{said}");
    assert!(said.contains("/call ID TOOL"), "{said}");
    assert!(!said.contains("--args"), "{said}");
    master.write_all(b"/quit\r").unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while child.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "the shell did not end");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The authorization address `login` prints for server `id` with `extra` flags (read from its
/// stderr; the login is then abandoned).
fn authorization_address(u: &User, id: &str, extra: &[&str]) -> String {
    let mut args = vec!["login", id, "--no-browser"];
    args.extend_from_slice(extra);
    let mut child = u
        .command(&args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut seen = String::new();
    let url = loop {
        let mut line = String::new();
        assert!(
            stderr.read_line(&mut line).unwrap() > 0,
            "no URL in {seen:?}"
        );
        seen.push_str(&line);
        if let Some(rest) = line.trim().strip_prefix("http") {
            break format!("http{rest}");
        }
    };
    let _ = child.kill();
    let _ = child.wait();
    url
}

/// `login --scopes a,b` (Codex's spelling) asks the authorization server for those scopes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn login_scopes_are_the_scopes_asked_for() {
    use mcp_testkit::fake_auth::{FakeAuth, FakeAuthOptions};
    let fake = FakeAuth::start(FakeAuthOptions::default()).await;
    let url = fake.url();
    let (plain, scoped) = tokio::task::spawn_blocking(move || {
        let u = User::new();
        u.run(&["add", "secure", &url]).code(0);
        (
            authorization_address(&u, "secure", &[]),
            authorization_address(&u, "secure", &["--scopes", "alpha,beta"]),
        )
    })
    .await
    .unwrap();
    assert!(plain.contains("response_type=code"), "{plain}");
    assert!(!plain.contains("alpha"), "{plain}");
    assert!(
        scoped.contains("scope=alpha+beta") || scoped.contains("scope=alpha%20beta"),
        "{scoped}"
    );
}
