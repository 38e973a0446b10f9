//! Each reader against its fixture in `fixtures/import/<tool>/{ok,err}/`: what is imported,
//! what is not and why, and that no secret value from a source reaches the entries or the
//! report.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::{ImportError, ImportReport, ImportSource, read};
use crate::config::Env;

fn fixture(tool: &str, kind: &str, name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/import")
        .join(tool)
        .join(kind)
        .join(name)
}

fn env() -> Env {
    Env::new().with("HOME", "/home/me")
}

/// Reads one ok fixture of `source` with `/PROJECT` as the project.
fn check(source: ImportSource, name: &str) -> ImportReport {
    let report = read(
        source,
        &[fixture(source.as_str(), "ok", name)],
        &env(),
        Path::new("/PROJECT"),
    )
    .unwrap();
    let all = format!("{report:?}");
    assert!(
        all.contains("mcpServers")
            || all.contains("servers")
            || all.contains("extensions")
            || all.contains("mcp_servers")
            || all.contains("context_servers")
    );
    assert!(
        !all.contains("FAKESECRET"),
        "a secret value reached the report: {all}"
    );
    report
}

fn entry<'a>(r: &'a ImportReport, id: &str) -> &'a Value {
    &r.servers
        .iter()
        .find(|s| s.id == id)
        .unwrap_or_else(|| panic!("no server {id} in {:?}", r.servers))
        .entry
}

fn ids(r: &ImportReport) -> Vec<&str> {
    r.servers.iter().map(|s| s.id.as_str()).collect()
}

fn not_carried(r: &ImportReport, server: &str) -> Vec<String> {
    r.not_carried
        .iter()
        .filter(|n| n.server.as_deref() == Some(server))
        .map(|n| format!("{}: {}", n.field.as_deref().unwrap_or("-"), n.reason))
        .collect()
}

fn variables(r: &ImportReport) -> Vec<(&str, &str)> {
    r.variables
        .iter()
        .map(|v| (v.name.as_str(), v.server.as_str()))
        .collect()
}

#[test]
fn claude_desktop() {
    let r = check(ImportSource::ClaudeDesktop, "claude_desktop_config.json");
    assert_eq!(ids(&r), ["filesystem", "github"]);
    assert_eq!(
        entry(&r, "github")["env"],
        json!({"GITHUB_PERSONAL_ACCESS_TOKEN": {"env": "GITHUB_PERSONAL_ACCESS_TOKEN"}, "LOG_LEVEL": "info"})
    );
    assert_eq!(variables(&r), [("GITHUB_PERSONAL_ACCESS_TOKEN", "github")]);
    assert_eq!(r.servers[0].location, "mcpServers.filesystem");
}

#[test]
fn claude_code_user_and_local_scope() {
    let r = check(ImportSource::ClaudeCode, "claude.json");
    // The user scope, then this project's local scope; another project's servers are not
    // this project's.
    assert_eq!(ids(&r), ["memory", "helper", "sentry"]);
    assert_eq!(
        entry(&r, "memory")["env"]["MEMORY_FILE_PATH"],
        json!("${MEMDIR:-/tmp}/memory.jsonl")
    );
    assert_eq!(
        entry(&r, "sentry")["headers"]["Authorization"],
        json!("Bearer ${SENTRY_AUTHORIZATION}")
    );
    assert_eq!(variables(&r), [("SENTRY_AUTHORIZATION", "sentry")]);
    assert_eq!(
        not_carried(&r, "helper"),
        ["headersHelper: no equivalent here"]
    );
    assert!(
        r.servers
            .iter()
            .any(|s| s.location == "projects./PROJECT.mcpServers.sentry")
    );
}

#[test]
fn claude_code_mcp_json() {
    let r = check(ImportSource::ClaudeCode, "mcp.json");
    assert_eq!(ids(&r), ["api", "legacy"]);
    assert_eq!(
        entry(&r, "api")["headers"]["Authorization"],
        json!("Bearer ${API_KEY}")
    );
    assert_eq!(entry(&r, "legacy")["transport"], json!("sse"));
    assert!(r.variables.is_empty());
}

#[test]
fn vscode_inputs_and_variables() {
    let r = check(ImportSource::VsCode, "mcp.json");
    assert_eq!(ids(&r), ["fetch", "github", "perplexity"]);
    assert_eq!(
        entry(&r, "perplexity")["env"]["PERPLEXITY_API_KEY"],
        json!("${VSCODE_INPUT_PERPLEXITY_KEY}")
    );
    assert_eq!(
        entry(&r, "fetch")["args"],
        json!([
            "mcp-server-fetch",
            "--root",
            "/PROJECT/docs",
            "--cache",
            "/home/me/.cache"
        ])
    );
    assert_eq!(
        entry(&r, "fetch")["env"]["HTTP_PROXY"],
        json!("${HTTP_PROXY}")
    );
    assert_eq!(
        variables(&r),
        [
            ("GITHUB_AUTHORIZATION", "github"),
            ("VSCODE_INPUT_PERPLEXITY_KEY", "perplexity")
        ]
    );
    assert_eq!(
        not_carried(&r, "perplexity"),
        ["envFile: no equivalent here"]
    );
    assert_eq!(
        not_carried(&r, "settings"),
        ["-: the variable `${config:editor.fontSize}` has no equivalent here"]
    );
}

#[test]
fn cursor_variables() {
    let r = check(ImportSource::Cursor, "mcp.json");
    assert_eq!(ids(&r), ["linear", "notes", "postgres"]);
    assert_eq!(entry(&r, "postgres")["args"][2], json!("${DATABASE_URL}"));
    assert_eq!(
        entry(&r, "postgres")["env"]["PGPASSWORD"],
        json!({"env": "PGPASSWORD"})
    );
    assert_eq!(
        entry(&r, "notes")["command"],
        json!("/home/me/bin/notes-mcp")
    );
    assert_eq!(entry(&r, "notes")["args"][1], json!("/PROJECT/notes"));
    assert_eq!(
        entry(&r, "linear")["headers"]["X-Api-Key"],
        json!("${LINEAR_API_KEY}")
    );
    assert_eq!(not_carried(&r, "notes"), ["envFile: no equivalent here"]);
    assert_eq!(variables(&r), [("PGPASSWORD", "postgres")]);
}

#[test]
fn codex_tables() {
    let r = check(ImportSource::Codex, "config.toml");
    assert_eq!(ids(&r), ["docs", "figma", "old"]);
    assert_eq!(
        entry(&r, "docs"),
        &json!({
            "command": "docs-server",
            "args": ["--port", "4000"],
            "cwd": "/srv/docs",
            "env": {
                "DOCS_MODE": "read-only",
                "DOCS_SECRET": {"env": "DOCS_SECRET"},
                "DOCS_TOKEN": {"env": "DOCS_TOKEN"}
            },
            "enabled_tools": ["search", "open"],
            "request_timeout_ms": 45000
        })
    );
    assert_eq!(
        entry(&r, "figma"),
        &json!({
            "url": "https://mcp.figma.com/mcp",
            "headers": {"X-Figma-Region": "us-east-1", "X-Api-Key": {"env": "FIGMA_API_KEY"}},
            "bearer_token_env_var": "FIGMA_OAUTH_TOKEN",
            "disabled_tools": ["delete_file"]
        })
    );
    assert_eq!(entry(&r, "old")["enabled"], json!(false));
    assert_eq!(not_carried(&r, "docs").len(), 1);
    assert!(not_carried(&r, "docs")[0].starts_with("startup_timeout_sec: no start-up timeout"));
    assert_eq!(variables(&r), [("DOCS_SECRET", "docs")]);
}

#[test]
fn goose_extensions() {
    let r = check(ImportSource::Goose, "config.yaml");
    assert_eq!(ids(&r), ["github", "remote"]);
    assert_eq!(
        entry(&r, "github"),
        &json!({
            "transport": "stdio",
            "command": "npx",
            "args": ["-y", "@modelcontextprotocol/server-github"],
            "env": {
                "GITHUB_API_URL": "https://api.github.com",
                "GITHUB_PERSONAL_ACCESS_TOKEN": {"env": "GITHUB_PERSONAL_ACCESS_TOKEN"}
            },
            "enabled": true,
            "request_timeout_ms": 300000
        })
    );
    assert_eq!(entry(&r, "remote")["transport"], json!("http"));
    assert_eq!(entry(&r, "remote")["enabled"], json!(false));
    assert_eq!(
        entry(&r, "remote")["headers"]["Authorization"],
        json!("Bearer ${REMOTE_AUTHORIZATION}")
    );
    assert_eq!(
        not_carried(&r, "developer"),
        ["-: a goose `builtin` extension runs inside goose, not as an MCP server of its own"]
    );
    assert_eq!(
        variables(&r),
        [
            ("GITHUB_PERSONAL_ACCESS_TOKEN", "github"),
            ("REMOTE_AUTHORIZATION", "remote")
        ]
    );
}

#[test]
fn zed_context_servers() {
    let r = check(ImportSource::Zed, "settings.json");
    assert_eq!(ids(&r), ["everything", "old-style", "remote"]);
    assert_eq!(
        entry(&r, "everything")["env"]["BRAVE_API_KEY"],
        json!({"env": "BRAVE_API_KEY"})
    );
    assert_eq!(
        entry(&r, "old-style")["command"],
        json!("/usr/local/bin/mcp-old")
    );
    // Zed expands nothing: its `${…}` is literal, and literal secrets are not copied.
    assert_eq!(
        entry(&r, "remote")["headers"]["Authorization"],
        json!("Bearer ${REMOTE_AUTHORIZATION}")
    );
    assert!(not_carried(&r, "postgres-context-server")[0].contains("Zed extension"));
}

/// A malformed file of each format is an error naming the file, the line and the column, and
/// no server of any file is returned.
#[test]
fn malformed_files_name_the_place_and_import_nothing() {
    let cases = [
        (ImportSource::ClaudeDesktop, "claude_desktop_config.json", 5),
        (ImportSource::ClaudeCode, "claude.json", 3),
        (ImportSource::VsCode, "mcp.json", 4),
        (ImportSource::Cursor, "mcp.json", 3),
        (ImportSource::Codex, "config.toml", 4),
        (ImportSource::Goose, "config.yaml", 5),
        (ImportSource::Zed, "settings.json", 4),
    ];
    for (source, name, line) in cases {
        let good = fixture(source.as_str(), "ok", name);
        let bad = fixture(source.as_str(), "err", name);
        // The good file alone imports something, so an empty result below means something.
        let ok = read(
            source,
            std::slice::from_ref(&good),
            &env(),
            Path::new("/PROJECT"),
        )
        .unwrap();
        assert!(!ok.servers.is_empty(), "{source}");
        let err = read(source, &[good, bad.clone()], &env(), Path::new("/PROJECT")).unwrap_err();
        let text = err.to_string();
        match &err {
            ImportError::Parse { path, line: l, .. } => {
                assert_eq!(path, &bad, "{source}");
                assert_eq!(*l, line, "{source}: {text}");
            }
            other => panic!("{source}: {other:?}"),
        }
        assert!(text.contains(&bad.display().to_string()), "{text}");
        assert!(text.contains(&format!(":{line}:")), "{text}");
        assert!(!text.contains("FAKESECRET"), "{text}");
    }
}

#[test]
fn comments_and_trailing_commas_keep_positions() {
    let text = "// c\n{\"a\": [1, 2,], /* x */ \"b\": {\"c\": \"//not\",},}";
    let v: Value = serde_json::from_str(&super::jsonc::strip(text)).unwrap();
    assert_eq!(v, json!({"a": [1, 2], "b": {"c": "//not"}}));
    let stripped = super::jsonc::strip("{\n// x\n  \"a\" 1}");
    let e = serde_json::from_str::<Value>(&stripped).unwrap_err();
    assert_eq!((e.line(), e.column()), (3, 7));
}

#[test]
fn secret_names() {
    for yes in [
        "GITHUB_TOKEN",
        "X-Api-Key",
        "Authorization",
        "DB_PASSWORD",
        "OPENAI_APIKEY",
        "GITHUB_PAT",
        "PGPASSWORD",
    ] {
        assert!(crate::config::secret::is_secret_name(yes), "{yes}");
    }
    for no in [
        "PATH",
        "PGHOST",
        "LOG_LEVEL",
        "HTTP_PROXY",
        "Accept",
        "MONKEY_MODE",
    ] {
        assert!(!crate::config::secret::is_secret_name(no), "{no}");
    }
}

/// Every reader's table of servers, through the one `server_table`: a table that is not one
/// is an error naming the member in the format's words, and an entry that is not one is left
/// out with the reason while its good neighbour is imported.
#[test]
fn a_table_of_servers_or_an_entry_that_is_not_one_is_named_in_the_formats_words() {
    let dir = std::env::temp_dir().join(format!("mcp-import-tables-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let json_bad = |key: &str| format!("{{\"{key}\": 3}}");
    let json_mixed =
        |key: &str| format!("{{\"{key}\": {{\"bad\": 3, \"good\": {{\"command\": \"x\"}}}}}}");
    let cases = [
        (ImportSource::ClaudeDesktop, "mcpServers", "an object", json_bad("mcpServers"), json_mixed("mcpServers")),
        (ImportSource::ClaudeCode, "mcpServers", "an object", json_bad("mcpServers"), json_mixed("mcpServers")),
        (
            ImportSource::ClaudeCode,
            "projects./PROJECT.mcpServers",
            "an object",
            "{\"projects\": {\"/PROJECT\": {\"mcpServers\": 3}}}".to_owned(),
            "{\"projects\": {\"/PROJECT\": {\"mcpServers\": {\"bad\": 3, \"good\": {\"command\": \"x\"}}}}}"
                .to_owned(),
        ),
        (ImportSource::VsCode, "servers", "an object", json_bad("servers"), json_mixed("servers")),
        (ImportSource::Cursor, "mcpServers", "an object", json_bad("mcpServers"), json_mixed("mcpServers")),
        (ImportSource::Zed, "context_servers", "an object", json_bad("context_servers"), json_mixed("context_servers")),
        (
            ImportSource::Codex,
            "mcp_servers",
            "a table",
            "mcp_servers = 3\n".to_owned(),
            "[mcp_servers]\nbad = 3\n[mcp_servers.good]\ncommand = \"x\"\n".to_owned(),
        ),
        (
            ImportSource::Goose,
            "extensions",
            "a mapping",
            "extensions: 3\n".to_owned(),
            "extensions:\n  bad: 3\n  good:\n    type: stdio\n    cmd: x\n".to_owned(),
        ),
    ];
    for (i, (source, field, kind, bad, mixed)) in cases.into_iter().enumerate() {
        let path = dir.join(format!("{i}-mixed"));
        std::fs::write(&path, mixed).unwrap();
        let report = read(source, &[path], &env(), Path::new("/PROJECT")).unwrap();
        assert_eq!(ids(&report), ["good"], "{source} {field}");
        assert_eq!(
            not_carried(&report, "bad"),
            [format!("-: the entry is not {kind}")],
            "{source} {field}"
        );
        let path = dir.join(format!("{i}-bad"));
        std::fs::write(&path, bad).unwrap();
        match read(
            source,
            std::slice::from_ref(&path),
            &env(),
            Path::new("/PROJECT"),
        ) {
            Err(ImportError::Shape {
                path: p,
                field: f,
                message,
            }) => {
                assert_eq!((p, f.as_str()), (path, field), "{source}");
                assert_eq!(message, format!("is not {kind}"), "{source} {field}");
            }
            other => panic!("{source} {field}: {other:?}"),
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
