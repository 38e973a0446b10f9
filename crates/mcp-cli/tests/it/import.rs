//! `import --from <tool>` through the built binary: each tool's fixture (fixtures/import/)
//! placed where that tool keeps it in a temporary HOME and project, imported into our file;
//! secrets never copied; ids already there skipped unless `--force`; a malformed file of each
//! format refused with its place named and nothing written.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::*;

fn fixture(tool: &str, kind: &str, name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/import")
        .join(tool)
        .join(kind)
        .join(name)
}

/// Copies a fixture to `to`, creating its directory, with `/PROJECT` made the project path.
fn place(u: &User, tool: &str, kind: &str, name: &str, to: &Path) {
    std::fs::create_dir_all(to.parent().unwrap()).unwrap();
    let text = std::fs::read_to_string(fixture(tool, kind, name)).unwrap();
    let text = text.replace("/PROJECT", &u.project.path().display().to_string());
    std::fs::write(to, text).unwrap();
}

/// Where each tool keeps its file (the user's one) for this user, and the fixture's name.
fn home_file(u: &User, tool: &str) -> (PathBuf, &'static str) {
    let h = u.home.path();
    match tool {
        "claude-desktop" => (
            h.join(".config/Claude/claude_desktop_config.json"),
            "claude_desktop_config.json",
        ),
        "claude-code" => (h.join(".claude.json"), "claude.json"),
        "vscode" => (h.join(".config/Code/User/mcp.json"), "mcp.json"),
        "cursor" => (h.join(".cursor/mcp.json"), "mcp.json"),
        "codex" => (h.join(".codex/config.toml"), "config.toml"),
        "goose" => (h.join(".config/goose/config.yaml"), "config.yaml"),
        "zed" => (h.join(".config/zed/settings.json"), "settings.json"),
        _ => unreachable!(),
    }
}

fn servers(u: &User) -> Value {
    let file: Value = serde_json::from_slice(&std::fs::read(u.project_file()).unwrap()).unwrap();
    file["mcp"]["servers"].clone()
}

/// Each tool's fixture, found where the tool keeps it: the servers it has land in the project
/// file, with where each came from and what was not carried over printed, and no secret value
/// of the source in our file or the output.
#[test]
fn each_tool_is_imported_from_where_it_keeps_its_file() {
    let expected: [(&str, &[&str], &str); 7] = [
        (
            "claude-desktop",
            &["filesystem", "github"],
            "GITHUB_PERSONAL_ACCESS_TOKEN",
        ),
        (
            "claude-code",
            &["helper", "memory", "sentry"],
            "headersHelper",
        ),
        (
            "vscode",
            &["fetch", "github", "perplexity"],
            "VSCODE_INPUT_PERPLEXITY_KEY",
        ),
        ("cursor", &["linear", "notes", "postgres"], "envFile"),
        ("codex", &["docs", "figma", "old"], "startup_timeout_sec"),
        ("goose", &["github", "remote"], "builtin"),
        (
            "zed",
            &["everything", "old-style", "remote"],
            "Zed extension",
        ),
    ];
    for (tool, ids, mentioned) in expected {
        let u = User::new();
        let (path, name) = home_file(&u, tool);
        place(&u, tool, "ok", name, &path);
        let run = u.run(&["import", "--from", tool]);
        run.code(0)
            .out_has(&format!("read {}", path.display()))
            .out_has(mentioned);
        for id in ids {
            run.out_has(&format!("added `{id}` from {}", path.display()));
        }
        let written = servers(&u);
        let got: Vec<&String> = written.as_object().unwrap().keys().collect();
        assert_eq!(got, ids.to_vec(), "{tool}");
        let file = std::fs::read_to_string(u.project_file()).unwrap();
        for text in [&file, &run.stdout, &run.stderr] {
            assert!(!text.contains("FAKESECRET"), "{tool}: {text}");
        }
    }
}

/// The project half of the tools that have one: `.mcp.json`, `.vscode/mcp.json`,
/// `.cursor/mcp.json`, `.zed/settings.json`; and the local scope of `~/.claude.json` is this
/// project's only.
#[test]
fn project_files_and_the_local_scope() {
    let u = User::new();
    let p = u.project.path();
    place(&u, "claude-code", "ok", "mcp.json", &p.join(".mcp.json"));
    place(
        &u,
        "claude-code",
        "ok",
        "claude.json",
        &u.home.path().join(".claude.json"),
    );
    u.run(&["import", "--from", "claude-code", "--dry-run", "--json"])
        .code(0);
    assert!(!u.project_file().exists(), "--dry-run wrote");
    let report = u.run(&["import", "--from", "claude-code", "--json"]).json();
    let ids: Vec<&str> = report["servers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["memory", "helper", "sentry", "api", "legacy"]);
    assert_eq!(
        report["servers"][2]["location"],
        json!(format!("projects.{}.mcpServers.sentry", p.display()))
    );
    assert_eq!(
        report["variables"],
        json!([{"name": "SENTRY_AUTHORIZATION", "server": "sentry", "field": "headers.Authorization",
                "reason": "the source held this header's secret as a value, which is not copied: set the credential after the scheme"}])
    );
    assert!(servers(&u).get("other").is_none());
    assert_eq!(
        servers(&u)["sentry"]["headers"]["Authorization"],
        json!("Bearer ${SENTRY_AUTHORIZATION}")
    );

    let v = User::new();
    place(
        &v,
        "vscode",
        "ok",
        "mcp.json",
        &v.project.path().join(".vscode/mcp.json"),
    );
    v.run(&["import", "--from", "vscode"]).code(0);
    assert_eq!(
        servers(&v)["fetch"]["args"][2],
        json!(format!("{}/docs", v.project.path().display()))
    );
}

/// An id the file already has is skipped and said so; `--force` replaces it.
#[test]
fn an_existing_id_is_skipped_unless_forced() {
    let u = User::new();
    u.run(&["add", "docs", "-s", "project", "--", "mine", "--keep"])
        .code(0);
    let path = u.home.path().join(".codex/config.toml");
    place(&u, "codex", "ok", "config.toml", &path);
    u.run(&["import", "--from", "codex"])
        .code(0)
        .out_has("skipped `docs`")
        .out_has("--force replaces it")
        .out_has("added `figma`");
    assert_eq!(servers(&u)["docs"]["command"], json!("mine"));
    u.run(&["import", "--from", "codex", "--force"])
        .code(0)
        .out_has("replaced `docs`");
    assert_eq!(servers(&u)["docs"]["command"], json!("docs-server"));
}

/// `--scope global` writes the user's file; `--path` reads the file given.
#[test]
fn scope_global_and_an_explicit_path() {
    let u = User::new();
    let elsewhere = u.home.path().join("somewhere/goose.yaml");
    place(&u, "goose", "ok", "config.yaml", &elsewhere);
    u.run(&[
        "import",
        "--from",
        "goose",
        "--path",
        elsewhere.to_str().unwrap(),
        "--scope",
        "global",
    ])
    .code(0)
    .out_has(&u.global_file().display().to_string());
    let file: Value = serde_json::from_slice(&std::fs::read(u.global_file()).unwrap()).unwrap();
    assert_eq!(
        file["mcp"]["servers"]["github"]["env"]["GITHUB_PERSONAL_ACCESS_TOKEN"],
        json!({"env": "GITHUB_PERSONAL_ACCESS_TOKEN"})
    );
    assert!(!u.project_file().exists());
    // A path that is not there is an error, not an empty import.
    u.run(&[
        "import",
        "--from",
        "zed",
        "--path",
        "/nonexistent/settings.json",
    ])
    .err_has("/nonexistent/settings.json");
}

/// A malformed file of each format: the error names the file, the line and the column, shows
/// none of its text, and nothing is written (the good file beside it neither).
#[test]
fn a_malformed_file_of_each_format_imports_nothing() {
    let cases = [
        ("claude-desktop", "claude_desktop_config.json", 5),
        ("claude-code", "claude.json", 3),
        ("vscode", "mcp.json", 4),
        ("cursor", "mcp.json", 3),
        ("codex", "config.toml", 4),
        ("goose", "config.yaml", 5),
        ("zed", "settings.json", 4),
    ];
    for (tool, name, line) in cases {
        let u = User::new();
        let (path, _) = home_file(&u, tool);
        place(&u, tool, "err", name, &path);
        let run = u.run(&["import", "--from", tool]);
        run.code(3)
            .err_has(&format!("{}:{line}:", path.display()))
            .err_has("nothing was imported");
        assert!(!run.stderr.contains("FAKESECRET"), "{tool}: {}", run.stderr);
        assert!(!u.project_file().exists(), "{tool} wrote");
    }
}

/// An imported server works: Claude Desktop's entry for the bundled demo server, imported,
/// answers `test`.
#[test]
fn an_imported_server_runs() {
    let u = User::new();
    let path = u
        .home
        .path()
        .join(".config/Claude/claude_desktop_config.json");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(
        &path,
        json!({"mcpServers": {"demo": {"command": bin(), "args": ["demo-server"]}}}).to_string(),
    )
    .unwrap();
    u.run(&["import", "--from", "claude-desktop"]).code(0);
    u.run(&["test", "demo"]).code(0);
}

/// A secret variable expanded into `args` (as a Claude Code `.mcp.json` may have it) is shown
/// by `list` as the reference, never as its value.
#[test]
fn list_shows_a_secret_argument_as_written() {
    let u = User::new();
    std::fs::write(
        u.project.path().join(".mcp.json"),
        json!({"mcpServers": {"k": {"command": "srv", "args": ["--token", "${API_TOKEN}", "${MODE}"]}}})
            .to_string(),
    )
    .unwrap();
    let mut cmd = u.command(&["list"]);
    cmd.env("API_TOKEN", "tok-planted-0002").env("MODE", "fast");
    let out = cmd.stdin(Stdio::null()).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stdout.contains("srv --token ${API_TOKEN} fast"),
        "{stdout}{stderr}"
    );
    assert!(!stdout.contains("tok-planted-0002") && !stderr.contains("tok-planted-0002"));
}
