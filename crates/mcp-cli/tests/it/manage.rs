//! `add`, `list`, `remove`, `enable`, `disable`: the files they write, and every error path.

use serde_json::json;

use super::*;

#[test]
fn add_http_with_every_flag_writes_the_project_file() {
    let u = User::new();
    u.run(&[
        "add",
        "api",
        "--transport",
        "http",
        "--url",
        "https://api.example.com/mcp",
        "--header",
        "X-Team=core",
        "--header-env",
        "Authorization=API_TOKEN",
        "--oauth-authorization-url",
        "https://auth.example.com/authorize",
        "--oauth-token-url",
        "https://auth.example.com/token",
        "--oauth-registration-url",
        "https://auth.example.com/register",
        "--oauth-client-id",
        "cid",
        "--oauth-client-secret-env",
        "CLIENT_SECRET",
        "--oauth-scope",
        "read write",
        "--enabled",
        "false",
        "--request-timeout-ms",
        "1500",
        "--scope",
        "project",
    ])
    .code(0)
    .out_has("added http server `api`");
    let file: serde_json::Value =
        serde_json::from_slice(&std::fs::read(u.project_file()).unwrap()).unwrap();
    let api = &file["mcp"]["servers"]["api"];
    assert_eq!(api["transport"], "http");
    assert_eq!(api["url"], "https://api.example.com/mcp");
    assert_eq!(api["headers"]["X-Team"], "core");
    assert_eq!(api["headers"]["Authorization"], json!({"env": "API_TOKEN"}));
    assert_eq!(api["enabled"], false);
    assert_eq!(api["request_timeout_ms"], 1500);
    assert_eq!(api["oauth"]["client_id"], "cid");
    assert_eq!(
        api["oauth"]["client_secret"],
        json!({"env": "CLIENT_SECRET"})
    );
    assert_eq!(api["oauth"]["scope"], "read write");
    assert_eq!(api["oauth"]["token_url"], "https://auth.example.com/token");
    assert_eq!(
        api["oauth"]["registration_url"],
        "https://auth.example.com/register"
    );
    assert_eq!(
        api["oauth"]["authorization_url"],
        "https://auth.example.com/authorize"
    );
    assert!(!u.global_file().exists());
}

#[test]
fn add_stdio_with_every_flag_and_the_global_scope() {
    let u = User::new();
    u.run(&[
        "add",
        "local",
        "--transport",
        "stdio",
        "--command",
        "./server",
        "--arg",
        "--verbose",
        "--arg",
        "x",
        "--cwd",
        "tools",
        "--env",
        "LOG=debug",
        "--env-from",
        "KEY=MY_KEY",
        "--scope",
        "global",
        "--json",
    ])
    .code(0);
    let file: serde_json::Value =
        serde_json::from_slice(&std::fs::read(u.global_file()).unwrap()).unwrap();
    let local = &file["mcp"]["servers"]["local"];
    assert_eq!(local["command"], "./server");
    assert_eq!(local["args"], json!(["--verbose", "x"]));
    assert_eq!(local["cwd"], "tools");
    assert_eq!(local["env"]["LOG"], "debug");
    assert_eq!(local["env"]["KEY"], json!({"env": "MY_KEY"}));
    // An inline secret makes the file private.
    use std::os::unix::fs::PermissionsExt as _;
    let mode = std::fs::metadata(u.global_file())
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o077, 0, "mode {mode:o}");
}

#[test]
fn shorthands_detect_the_transport() {
    let u = User::new();
    u.run(&["add", "web", "https://example.com/mcp", "--json"])
        .code(0);
    let added = u.run(&["add", "old", "sse://localhost:3001/sse", "--json"]);
    assert_eq!(added.code(0).json()["transport"], "sse");
    u.run(&[
        "add",
        "files",
        "--",
        "npx",
        "-y",
        "@scope/server",
        "--root",
        ".",
    ])
    .code(0)
    .out_has("added stdio server `files`");
    u.run(&["add", "quoted", "python3 -m 'my server'"]).code(0);
    let list = u.run(&["list", "--json"]).code(0).json();
    let servers = list["servers"].as_array().unwrap();
    let find = |id: &str| servers.iter().find(|s| s["id"] == id).unwrap().clone();
    assert_eq!(find("web")["transport"], "http");
    assert_eq!(find("old")["transport"], "sse");
    assert_eq!(find("files")["target"], "npx -y @scope/server --root .");
    assert_eq!(find("quoted")["target"], "python3 -m my server");
}

#[test]
fn duplicate_ids_fail_without_replace() {
    let u = User::new();
    u.run(&["add", "a", "https://one.example/mcp"]).code(0);
    u.run(&["add", "a", "https://two.example/mcp"])
        .code(3)
        .err_has("server `a` already exists")
        .err_has("--replace");
    u.run(&["add", "a", "https://two.example/mcp", "--replace"])
        .code(0);
    let list = u.run(&["list", "--json"]).json();
    assert_eq!(list["servers"][0]["target"], "https://two.example/mcp");
    // The same id in the other layer is not a duplicate.
    u.run(&["add", "a", "https://three.example/mcp", "--scope", "global"])
        .code(0);
}

#[test]
fn bad_ids_and_missing_values_are_usage_errors() {
    let u = User::new();
    u.run(&["add", "no spaces", "https://x.example/mcp"])
        .code(2)
        .err_has("invalid server id `no spaces`");
    u.run(&["add", &"x".repeat(65), "https://x.example/mcp"])
        .code(2);
    u.run(&["add", "h", "--transport", "http"])
        .code(2)
        .err_has("needs a URL");
    u.run(&["add", "s", "--transport", "stdio"])
        .code(2)
        .err_has("needs --command");
    u.run(&["add", "n"])
        .code(2)
        .err_has("needs a URL or a command");
    u.run(&[
        "add",
        "m",
        "--transport",
        "stdio",
        "--command",
        "x",
        "--url",
        "https://x/mcp",
    ])
    .code(2)
    .err_has("belong to --transport http");
    u.run(&["add", "f", "ftp://x.example/"])
        .code(2)
        .err_has("unsupported URL scheme");
    // A header with neither `:` nor `=` is refused without echoing its value.
    let r = u.run(&[
        "add",
        "h",
        "https://x.example/mcp",
        "--header",
        "Authorization Bearer sekrit",
    ]);
    r.code(2)
        .err_has("--header value number 1 is not `Name: value` or `Name=value`");
    assert!(!r.stderr.contains("sekrit"));
    u.run(&["add", "t", "https://x.example/mcp", "--enabled", "maybe"])
        .code(2);
    u.run(&["frobnicate"]).code(2);
    assert!(!u.project_file().exists(), "nothing was written");
    assert!(
        !u.home.path().join(".config").exists(),
        "nothing was written"
    );
}

/// Adds `id` at `https://global.example/mcp` to the global file.
fn add_global(u: &User, id: &str) {
    u.run(&["add", id, "https://global.example/mcp", "--scope", "global"])
        .code(0);
}

#[test]
fn list_shows_sources_and_layers() {
    let u = User::new();
    u.run(&["list"])
        .code(0)
        .out_has("no MCP servers configured");
    add_global(&u, "shared");
    u.run(&["add", "g", "https://g.example/mcp", "--scope", "global"])
        .code(0);
    u.run(&[
        "add",
        "shared",
        "https://project.example/mcp",
        "-s",
        "project",
    ])
    .code(0);
    let table = u.run(&["list"]).code(0).stdout.clone();
    let header = table.lines().next().unwrap();
    assert!(
        header.starts_with("ID") && header.contains("SOURCE"),
        "{table}"
    );
    let shared = table.lines().find(|l| l.starts_with("shared")).unwrap();
    assert!(
        shared.contains("project") && shared.contains("https://project.example/mcp"),
        "{table}"
    );
    assert!(
        table
            .lines()
            .any(|l| l.starts_with("g ") && l.contains("global")),
        "{table}"
    );

    let project = u.run(&["list", "--scope", "project", "--json"]).json();
    assert_eq!(project["servers"].as_array().unwrap().len(), 1);
    let global = u.run(&["list", "--scope", "global"]).code(0).stdout.clone();
    assert!(
        !global.lines().next().unwrap().contains("SOURCE"),
        "{global}"
    );
    assert!(global.contains("https://global.example/mcp"));
}

#[test]
fn remove_from_project_leaves_the_global_one_effective() {
    let u = User::new();
    add_global(&u, "s");
    u.run(&["add", "s", "https://project.example/mcp", "-s", "project"])
        .code(0);
    // Two layers define it: which one is for the user to say.
    u.run(&["remove", "s"])
        .code(2)
        .err_has("defined in several layers: project, global")
        .err_has("--scope project|global");
    u.run(&["remove", "s", "--scope", "project"])
        .code(0)
        .err_has("still configured in the global layer");
    let list = u.run(&["list", "--json"]).json();
    assert_eq!(list["servers"][0]["source"], "global");
    assert_eq!(list["servers"][0]["target"], "https://global.example/mcp");
    // Not in the project layer any more: the hint names the other layer.
    u.run(&["remove", "s", "-s", "project"])
        .code(3)
        .err_has("is not defined in")
        .err_has("--scope global");
    // Without --scope, the one layer that defines it.
    u.run(&["remove", "s"]).code(0).out_has("config.json");
    u.run(&["remove", "nobody"])
        .code(3)
        .err_has("no server `nobody` in the files mcp-host edits");
    u.run(&["list"])
        .code(0)
        .out_has("no MCP servers configured");
}

#[test]
fn enable_and_disable_per_layer() {
    let u = User::new();
    add_global(&u, "s");
    // The local layer (the default) switches the global server off without repeating it,
    // and without touching a file of the project's tree.
    u.run(&["disable", "s"]).code(0);
    let list = u.run(&["list", "--json"]).json();
    assert_eq!(list["servers"][0]["enabled"], false);
    assert_eq!(list["servers"][0]["source"], "local");
    assert!(!u.project.path().join(".mcp-host").exists());
    u.run(&["enable", "s"]).code(0);
    assert_eq!(
        u.run(&["list", "--json"]).json()["servers"][0]["enabled"],
        true
    );
    u.run(&["disable", "s", "--scope", "global", "--json"])
        .code(0);
    assert_eq!(
        u.run(&["list", "--json"]).json()["servers"][0]["enabled"],
        false
    );
    u.run(&["enable", "s", "--scope", "global"]).code(0);
    // The project layer still can, when asked.
    u.run(&["disable", "s", "--scope", "project"]).code(0);
    assert_eq!(
        u.run(&["list", "--json"]).json()["servers"][0]["enabled"],
        false
    );
    u.run(&["enable", "s"]).code(0);
    assert_eq!(
        u.run(&["list", "--json"]).json()["servers"][0]["enabled"],
        true
    );
    u.run(&["enable", "ghost"]).code(3);
    u.run(&["enable", "bad id"]).code(2);
}

#[test]
fn a_file_that_is_not_json_is_a_config_error_naming_the_file() {
    let u = User::new();
    std::fs::create_dir_all(u.project_file().parent().unwrap()).unwrap();
    std::fs::write(u.project_file(), "{ \"version\": 1, \"mcp\": ").unwrap();
    u.add_demo("g", "global");
    let r = u.run(&["list"]);
    r.code(3)
        .err_has("config.json")
        .err_has("could not be read");
    // The other layer still loads.
    assert!(r.stdout.contains("g "), "{r:#?}");
    u.run(&["add", "x", "https://x.example/mcp", "-s", "project"])
        .code(3)
        .err_has("fix it by hand");
    u.run(&["status", "--json"]).code(0);
    // An invalid entry is listed as such and named.
    u.write_global(&json!({"version": 1, "mcp": {"servers": {"h": {"transport": "http"}}}}));
    let r = u.run(&["list", "--scope", "global"]);
    r.code(3)
        .err_has("server `h`")
        .err_has("url")
        .out_has("invalid");
}

#[test]
fn the_remaining_add_flags_help_and_version() {
    let u = User::new();
    u.run(&[
        "add",
        "legacy",
        "--transport",
        "sse",
        "--url",
        "http://127.0.0.1:3001/sse",
        "--oauth-client-secret",
        "s3cret",
        "--oauth-client-id",
        "c",
        "--scope",
        "user",
    ])
    .code(0)
    .out_has("added sse server `legacy`");
    let file: serde_json::Value =
        serde_json::from_slice(&std::fs::read(u.global_file()).unwrap()).unwrap();
    assert_eq!(file["mcp"]["servers"]["legacy"]["transport"], "sse");
    assert_eq!(
        file["mcp"]["servers"]["legacy"]["oauth"]["client_secret"],
        "s3cret"
    );
    use std::os::unix::fs::PermissionsExt as _;
    let mode = std::fs::metadata(u.global_file())
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(
        mode & 0o077,
        0,
        "a file holding a secret is private: {mode:o}"
    );
    // The list shows the server, and never the secret.
    let list = u.run(&["list", "--json"]);
    let v = list.code(0).json();
    let servers = v["servers"].as_array().unwrap();
    let legacy = servers.iter().find(|s| s["id"] == "legacy");
    let legacy = legacy.unwrap_or_else(|| panic!("`legacy` is not listed: {v}"));
    assert_eq!(legacy["transport"], "sse", "{v}");
    assert_eq!(legacy["target"], "http://127.0.0.1:3001/sse", "{v}");
    assert!(
        !list.stdout.contains("s3cret") && !list.stderr.contains("s3cret"),
        "{list:#?}"
    );
    let table = u.run(&["list"]);
    table
        .code(0)
        .out_has("legacy")
        .out_has("http://127.0.0.1:3001/sse");
    assert!(
        !table.stdout.contains("s3cret") && !table.stderr.contains("s3cret"),
        "{table:#?}"
    );
    u.run(&[
        "add",
        "both",
        "https://x.example/mcp",
        "--oauth-client-secret",
        "a",
        "--oauth-client-secret-env",
        "B",
    ])
    .code(2)
    .err_has("not both");
    u.run(&["--help"]).code(0).out_has("Exit codes:");
    u.run(&["add", "--help"])
        .code(0)
        .out_has("--oauth-client-secret-env");
    u.run(&["--version"]).code(0).out_has("mcp-host");
}

#[test]
fn list_hides_url_credentials_and_query() {
    let u = User::new();
    let added = u.run(&[
        "add",
        "k",
        "https://me:pw9@x.example/mcp?key=K9",
        "-s",
        "project",
    ]);
    added.code(0);
    assert!(
        !added.stdout.contains("K9") && !added.stdout.contains("pw9"),
        "{added:#?}"
    );
    // The whole address is kept in the file; only what is shown is cut.
    let file = std::fs::read_to_string(u.project_file()).unwrap();
    assert!(
        file.contains("https://me:pw9@x.example/mcp?key=K9"),
        "{file}"
    );
    let r = u.run(&["list"]);
    r.code(0).out_has("https://x.example/mcp?[redacted]");
    let row = r.stdout.lines().find(|l| l.starts_with("k "));
    let row = row.unwrap_or_else(|| panic!("`k` is not listed: {r:#?}"));
    assert!(row.contains("https://x.example/mcp?[redacted]"), "{r:#?}");
    let j = u.run(&["list", "--json"]);
    let v = j.code(0).json();
    let servers = v["servers"].as_array().unwrap();
    assert_eq!(servers.len(), 1, "{v}");
    assert_eq!(servers[0]["id"], "k", "{v}");
    assert_eq!(
        servers[0]["target"], "https://x.example/mcp?[redacted]",
        "{v}"
    );
    for run in [&r, &j] {
        for hidden in ["K9", "pw9", "me:"] {
            assert!(
                !run.stdout.contains(hidden) && !run.stderr.contains(hidden),
                "{hidden:?} shows: {run:#?}"
            );
        }
    }
}
