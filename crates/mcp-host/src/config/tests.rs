//! Tests of loading, merging, validation, detection, secrets and edits.
//! This file is long because each rule of the configuration files is a case of its own, and the
//! cases share one set of file and directory helpers.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use super::*;
use crate::permission::Decision;

static COUNTER: AtomicU64 = AtomicU64::new(0);

/// A fresh directory standing for a machine: `home/` and `project/` under it.
struct World {
    root: PathBuf,
}

impl World {
    fn new() -> Self {
        let root = std::env::temp_dir().join(format!(
            "mcp-host-config-{}-{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(root.join("project")).unwrap();
        Self { root }
    }

    fn project(&self) -> PathBuf {
        self.root.join("project")
    }

    fn env(&self) -> Env {
        Env::new().with("HOME", self.root.join("home").to_str().unwrap())
    }

    fn paths(&self) -> ConfigPaths {
        ConfigPaths::new(&self.project(), &self.env()).unwrap()
    }

    fn global(&self) -> PathBuf {
        self.root.join("home/.config/mcp-host/config.json")
    }

    fn project_file(&self) -> PathBuf {
        self.project().join(".mcp-host/config.json")
    }

    fn mcp_json(&self) -> PathBuf {
        self.project().join(".mcp.json")
    }

    fn write(&self, path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    fn load(&self) -> LoadedConfig {
        self.load_env(&self.env())
    }

    fn load_env(&self, env: &Env) -> LoadedConfig {
        load(&ConfigPaths::new(&self.project(), env).unwrap(), env)
    }
}

impl Drop for World {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

fn native(servers: &str) -> String {
    format!(r#"{{"version":1,"mcp":{{"servers":{servers}}}}}"#)
}

/// Loads one project file holding `servers` and returns the result.
fn check(servers: &str) -> LoadedConfig {
    let w = World::new();
    w.write(&w.project_file(), &native(servers));
    w.load()
}

/// The single error of a load, as (server, field).
fn error_of(c: &LoadedConfig) -> (Option<&str>, Option<&str>, &str) {
    let errors: Vec<&Problem> = c.problems.iter().filter(|p| p.is_error()).collect();
    assert_eq!(errors.len(), 1, "{:#?}", c.problems);
    let p = errors[0];
    (p.server.as_deref(), p.field.as_deref(), &p.message)
}

fn http_of(s: &ConfiguredServer) -> &HttpTransport {
    match &s.transport {
        Transport::Http(h) => h,
        Transport::Stdio(_) => panic!("not http: {s:?}"),
    }
}

fn stdio_of(s: &ConfiguredServer) -> &StdioTransport {
    match &s.transport {
        Transport::Stdio(t) => t,
        Transport::Http(_) => panic!("not stdio: {s:?}"),
    }
}

#[test]
fn seed_examples_load_with_defaults() {
    let c = check(
        r#"{
        "remote-tools": {"transport":"http","url":"https://example.com/mcp","enabled":true,
                         "headers":{"X-Workspace":"codelia"},"request_timeout_ms":30000},
        "filesystem-local": {"transport":"stdio","command":"npx",
                         "args":["-y","@modelcontextprotocol/server-filesystem","/tmp"],
                         "cwd":"/tmp","env":{"NODE_ENV":"production"}}
    }"#,
    );
    assert!(c.problems.is_empty(), "{:#?}", c.problems);
    assert_eq!(c.servers.len(), 2);
    let fs = c.server("filesystem-local").unwrap();
    assert!(fs.enabled);
    assert_eq!(fs.request_timeout, Duration::from_secs(30));
    assert_eq!(fs.max_result_bytes, DEFAULT_MAX_RESULT_BYTES);
    assert_eq!(fs.source, Scope::Project);
    let t = stdio_of(fs);
    assert_eq!(t.command, "npx");
    assert_eq!(t.args.len(), 3);
    assert_eq!(t.cwd.as_deref(), Some(Path::new("/tmp")));
    assert_eq!(t.env[0].0, "NODE_ENV");
    assert_eq!(t.env[0].1.secret(), "production");
    assert!(!t.inherit_env);
    let remote = c.server("remote-tools").unwrap();
    let h = http_of(remote);
    assert_eq!(h.url.as_str(), "https://example.com/mcp");
    assert!(!h.legacy_sse);
    assert_eq!(remote.transport.kind(), "http");
    assert_eq!(c.host, HostConfig::default());
    assert_eq!(c.host.max_connections, 64);
}

#[test]
fn the_stateless_revision_can_be_pinned() {
    // Pinning 2026-07-28 pins the stateless era: no initialize is ever offered.
    let c = check(r#"{"a": {"transport":"stdio","command":"x","protocol_version":"2026-07-28"}}"#);
    assert!(c.problems.is_empty(), "{:#?}", c.problems);
    assert_eq!(
        c.server("a").unwrap().protocol_version,
        Some(mcp_protocol::ProtocolVersion::V2026_07_28)
    );
}

// `optional_tools_as_tasks` is read (off by default, a boolean only) and reaches the entry the
// host runs, where it decides how an optional task tool is called (`tasks::wants`).
#[cfg(feature = "stdio")]
#[test]
fn optional_tools_as_tasks_is_read_and_reaches_the_entry() {
    let c = check(
        r#"{"a": {"transport":"stdio","command":"x","optional_tools_as_tasks":true},
            "b": {"transport":"stdio","command":"x"},
            "c": {"transport":"stdio","command":"x","optional_tools_as_tasks":"yes"}}"#,
    );
    assert!(c.server("a").unwrap().optional_tools_as_tasks);
    assert!(
        !c.server("b").unwrap().optional_tools_as_tasks,
        "off by default"
    );
    let errors: Vec<_> = c.problems.iter().filter(|p| p.is_error()).collect();
    assert_eq!(errors.len(), 1, "{errors:#?}");
    assert_eq!(errors[0].field.as_deref(), Some("optional_tools_as_tasks"));
    // From the global file, which needs no approval, the entries are the ones that run.
    let w = World::new();
    w.write(
        &w.global(),
        &native(
            r#"{"a": {"transport":"stdio","command":"x","optional_tools_as_tasks":true},
                    "b": {"transport":"stdio","command":"x"}}"#,
        ),
    );
    let global = w.load();
    let entries = crate::setup::entries(&global, None, &crate::trust::Approvals::default());
    let entry = |id: &str| entries.iter().find(|e| e.id == id).unwrap();
    assert!(entry("a").optional_tools_as_tasks);
    assert!(!entry("b").optional_tools_as_tasks);
}

#[test]
fn ping_settings_default_by_transport_and_zero_turns_them_off() {
    // (entry, ping_interval, ping_timeout): HTTP servers are pinged by default, stdio ones are
    // not unless asked; 0 is off; a set interval keeps the default deadline.
    let rows = [
        (
            r#"{"transport":"http","url":"https://h/mcp"}"#,
            Some(30_000),
            10_000,
        ),
        (
            r#"{"transport":"sse","url":"https://h/sse"}"#,
            Some(30_000),
            10_000,
        ),
        (r#"{"transport":"stdio","command":"x"}"#, None, 10_000),
        (
            r#"{"transport":"http","url":"https://h/mcp","ping_interval_ms":0}"#,
            None,
            10_000,
        ),
        (
            r#"{"transport":"http","url":"https://h/mcp","ping_interval_ms":1500,"ping_timeout_ms":700}"#,
            Some(1500),
            700,
        ),
        (
            r#"{"transport":"stdio","command":"x","ping_interval_ms":5000}"#,
            Some(5000),
            10_000,
        ),
    ];
    for (entry, interval, timeout) in rows {
        let c = check(&format!(r#"{{"a": {entry}}}"#));
        assert!(c.problems.is_empty(), "{entry}: {:#?}", c.problems);
        let a = c.server("a").unwrap();
        assert_eq!(
            a.ping_interval,
            interval.map(Duration::from_millis),
            "{entry}"
        );
        assert_eq!(a.ping_timeout, Duration::from_millis(timeout), "{entry}");
    }
    for (entry, field) in [
        (
            r#"{"transport":"http","url":"https://h/mcp","ping_interval_ms":-1}"#,
            "ping_interval_ms",
        ),
        (
            r#"{"transport":"http","url":"https://h/mcp","ping_timeout_ms":0}"#,
            "ping_timeout_ms",
        ),
        (
            r#"{"transport":"http","url":"https://h/mcp","ping_timeout_ms":"10s"}"#,
            "ping_timeout_ms",
        ),
    ] {
        let c = check(&format!(r#"{{"a": {entry}}}"#));
        let (server, f, message) = error_of(&c);
        assert_eq!((server, f), (Some("a"), Some(field)), "{entry}");
        assert!(message.contains("integer"), "{entry}: {message}");
    }
}

#[test]
fn every_added_field_is_read() {
    let c = check(
        r#"{"a": {"transport":"http","url":"https://h/mcp",
        "oauth":{"authorization_url":"https://h/auth","token_url":"https://h/token",
                 "registration_url":"https://h/reg","client_id":"cid","client_secret":"cs","scope":"mcp"},
        "enabled_tools":["x","y"],"disabled_tools":["y"],
        "permission":{"default":"deny","tools":{"x":"allow"}},
        "max_result_bytes":2048,"protocol_version":"2025-06-18"},
      "b": {"transport":"stdio","command":"srv","inherit_env":true,"cwd":"sub"}}"#,
    );
    assert!(c.problems.is_empty(), "{:#?}", c.problems);
    let a = c.server("a").unwrap();
    let o = a.oauth.as_ref().unwrap();
    assert_eq!(o.token_url.as_ref().unwrap().as_str(), "https://h/token");
    assert_eq!(o.client_id.as_deref(), Some("cid"));
    assert_eq!(o.client_secret.as_ref().unwrap().secret(), "cs");
    assert_eq!(o.scope.as_deref(), Some("mcp"));
    let filter = |s: &ConfiguredServer| {
        crate::catalog::ToolFilter::new(s.enabled_tools.clone(), s.disabled_tools.clone())
    };
    assert!(filter(a).allows("x"));
    assert!(!filter(a).allows("y"), "disabled wins over enabled");
    assert!(!filter(a).allows("z"), "not in the allow-list");
    assert_eq!(a.permission.decide("x"), Decision::Allow);
    assert_eq!(a.permission.decide("z"), Decision::Deny);
    assert_eq!(a.max_result_bytes, 2048);
    assert_eq!(
        a.protocol_version,
        Some(mcp_protocol::ProtocolVersion::V2025_06_18)
    );
    let b = c.server("b").unwrap();
    assert!(filter(b).allows("anything"));
    assert_eq!(b.permission.decide("t"), Decision::Ask, "ask by default");
    let t = stdio_of(b);
    assert!(t.inherit_env);
    assert!(
        t.cwd.as_ref().unwrap().ends_with("project/sub"),
        "relative to the project"
    );
}

#[test]
fn operations_can_be_turned_off_and_given_their_own_permission() {
    let c = check(
        r#"{"a": {"transport":"stdio","command":"x","expose_resources":false,"expose_prompts":true,
                  "permission":{"default":"ask","resources":"allow","prompts":"deny"}},
            "b": {"transport":"stdio","command":"x"},
            "c": {"transport":"stdio","command":"x","expose_prompts":"no"},
            "d": {"transport":"stdio","command":"x","permission":{"resources":"yes"}}}"#,
    );
    let a = c.server("a").unwrap();
    assert!(!a.expose_resources);
    assert!(a.expose_prompts);
    let read = crate::operation::Operation::ReadResource;
    let get = crate::operation::Operation::GetPrompt;
    assert_eq!(a.permission.decide_operation(read), Decision::Allow);
    assert_eq!(a.permission.decide_operation(get), Decision::Deny);
    assert_eq!(a.permission.decide("any_tool"), Decision::Ask);
    let b = c.server("b").unwrap();
    assert!(b.expose_resources && b.expose_prompts, "on by default");
    assert_eq!(b.permission.decide_operation(read), Decision::Ask);
    let fields: Vec<_> = c
        .problems
        .iter()
        .filter(|p| p.is_error())
        .map(|p| (p.server.as_deref(), p.field.as_deref()))
        .collect();
    assert_eq!(
        fields,
        [
            (Some("c"), Some("expose_prompts")),
            (Some("d"), Some("permission.resources"))
        ]
    );
    // Neither setting changes what runs: an approval survives editing them.
    let plain = check(r#"{"a": {"transport":"stdio","command":"x"}}"#);
    assert_eq!(
        a.fingerprint,
        plain.server("a").unwrap().fingerprint,
        "expose_* and permission are not approved"
    );
}

#[test]
fn host_options_merge_per_option() {
    let w = World::new();
    w.write(
        &w.global(),
        r#"{"version":1,"mcp":{"max_connections":3,"max_result_bytes":4096,
            "servers":{"g":{"transport":"stdio","command":"g"}}}}"#,
    );
    w.write(
        &w.project_file(),
        r#"{"version":1,"mcp":{"max_connections":5}}"#,
    );
    let c = w.load();
    assert!(c.problems.is_empty(), "{:#?}", c.problems);
    assert_eq!(c.host.max_connections, 5);
    assert_eq!(c.host.max_result_bytes, 4096);
    assert_eq!(
        c.server("g").unwrap().max_result_bytes,
        4096,
        "the host's limit applies"
    );
}

#[test]
fn project_wins_per_server_and_records_its_source() {
    let w = World::new();
    w.write(
        &w.global(),
        &native(
            r#"{"both":{"transport":"http","url":"https://global/mcp"},
                "only-global":{"transport":"stdio","command":"g"},
                "off":{"transport":"stdio","command":"o"}}"#,
        ),
    );
    w.write(
        &w.project_file(),
        &native(
            r#"{"both":{"transport":"stdio","command":"p"},
                "off":{"transport":"stdio","command":"o","enabled":false}}"#,
        ),
    );
    let c = w.load();
    assert!(c.problems.is_empty(), "{:#?}", c.problems);
    let both = c.server("both").unwrap();
    assert_eq!(stdio_of(both).command, "p", "the whole entry is replaced");
    assert_eq!(both.source, Scope::Project);
    assert_eq!(both.file, w.project_file());
    let g = c.server("only-global").unwrap();
    assert_eq!(g.source, Scope::Global);
    assert_eq!(g.file, w.global());
    assert!(!c.server("off").unwrap().enabled);
    let enabled: Vec<&str> = c.enabled_servers().map(|s| s.id.as_str()).collect();
    assert_eq!(enabled, ["both", "only-global"]);
    assert_eq!(c.files.len(), 4);
    assert_eq!(c.files[1].status, FileStatus::Missing, ".mcp.json");
    assert_eq!(c.files[3].file.scope, Scope::Local);
    assert_eq!(c.files[3].status, FileStatus::Missing, "the local file");

    let global_only = load_scope(&w.paths(), &w.env(), Scope::Global);
    assert_eq!(
        stdio_of(global_only.server("off").unwrap()).command,
        "o",
        "one layer alone"
    );
    assert!(global_only.server("off").unwrap().enabled);
}

#[test]
fn enabled_false_alone_disables_the_lower_layer() {
    let w = World::new();
    w.write(
        &w.global(),
        &native(r#"{"g":{"transport":"http","url":"https://g/mcp"}}"#),
    );
    w.write(
        &w.project_file(),
        &native(r#"{"g":{"enabled":false},"nothing":{"enabled":false}}"#),
    );
    let c = w.load();
    let g = c.server("g").unwrap();
    assert!(!g.enabled);
    assert_eq!(g.source, Scope::Project);
    assert_eq!(http_of(g).url.as_str(), "https://g/mcp");
    let warn: Vec<&Problem> = c.problems_for("nothing").collect();
    assert_eq!(warn.len(), 1);
    assert_eq!(warn[0].severity, Severity::Warning);
    assert!(c.server("nothing").is_none());
}

#[test]
fn a_bad_project_entry_hides_the_global_one() {
    let w = World::new();
    w.write(
        &w.global(),
        &native(r#"{"s":{"transport":"http","url":"https://g/mcp"}}"#),
    );
    w.write(
        &w.project_file(),
        &native(r#"{"s":{"transport":"http","enabled":false}}"#),
    );
    let c = w.load();
    assert!(c.server("s").is_none());
    assert_eq!(c.rejected.len(), 1);
    assert_eq!(c.rejected[0].id, "s");
    assert_eq!(c.rejected[0].source, Scope::Project);
}

#[test]
fn mcp_json_sits_between_global_and_the_project_file() {
    let w = World::new();
    w.write(
        &w.mcp_json(),
        r#"{"mcpServers":{
            "fs":{"command":"npx","args":["-y","server-fs"],"env":{"K":"v"}},
            "remote":{"type":"http","url":"https://r/mcp","headers":{"Authorization":"Bearer x"}},
            "legacy":{"type":"sse","url":"https://l/sse"},
            "bare":{"url":"sse://localhost:3001/sse"},
            "off":{"command":"x","disabled":true},
            "over":{"command":"from-mcp-json"}
        }}"#,
    );
    w.write(
        &w.project_file(),
        &native(r#"{"over":{"transport":"stdio","command":"from-config"}}"#),
    );
    let c = w.load();
    assert!(c.problems.is_empty(), "{:#?}", c.problems);
    let fs = c.server("fs").unwrap();
    assert_eq!(stdio_of(fs).args, ["-y", "server-fs"]);
    assert_eq!(fs.file, w.mcp_json());
    assert_eq!(fs.source, Scope::Project);
    let remote = http_of(c.server("remote").unwrap());
    assert_eq!(remote.headers[0].0, "Authorization");
    assert!(!remote.legacy_sse);
    assert!(http_of(c.server("legacy").unwrap()).legacy_sse);
    let bare = http_of(c.server("bare").unwrap());
    assert!(bare.legacy_sse);
    assert_eq!(bare.url.as_str(), "http://localhost:3001/sse");
    assert!(!c.server("off").unwrap().enabled);
    assert_eq!(stdio_of(c.server("over").unwrap()).command, "from-config");
}

#[test]
fn mcp_json_unknown_fields_warn_and_type_in_native_gets_a_hint() {
    let w = World::new();
    w.write(
        &w.mcp_json(),
        r#"{"mcpServers":{"a":{"command":"x","autoApprove":[]}}}"#,
    );
    w.write(
        &w.project_file(),
        &native(r#"{"b":{"type":"http","url":"https://b/mcp"}}"#),
    );
    let c = w.load();
    assert!(!c.has_errors(), "{:#?}", c.problems);
    let a: Vec<&Problem> = c.problems_for("a").collect();
    assert_eq!(a[0].field.as_deref(), Some("autoApprove"));
    let b: Vec<&Problem> = c.problems_for("b").collect();
    assert_eq!(b[0].field.as_deref(), Some("type"));
    assert!(b[0].message.contains("did you mean `transport`"));
    assert_eq!(
        c.server("b").unwrap().transport.kind(),
        "http",
        "inferred from url"
    );
}

#[test]
fn every_validation_error_names_file_server_and_field() {
    let cases: &[(&str, &str, Option<&str>, &str)] = &[
        (
            "bad id!",
            r#"{"transport":"stdio","command":"x"}"#,
            None,
            "invalid server id",
        ),
        ("s", r#"{"transport":"http"}"#, Some("url"), "missing"),
        ("s", r#"{"transport":"sse"}"#, Some("url"), "missing"),
        ("s", r#"{"transport":"stdio"}"#, Some("command"), "missing"),
        (
            "s",
            r#"{"transport":"stdio","command":""}"#,
            Some("command"),
            "empty",
        ),
        (
            "s",
            r#"{"transport":"http","url":"not a url"}"#,
            Some("url"),
            "valid",
        ),
        (
            "s",
            r#"{"transport":"http","url":"ftp://h/x"}"#,
            Some("url"),
            "valid",
        ),
        (
            "s",
            r#"{"transport":"carrier-pigeon","url":"https://h"}"#,
            Some("transport"),
            "must be",
        ),
        ("s", r#"{"transport":5}"#, Some("transport"), "string"),
        ("s", r#"{}"#, Some("transport"), "missing"),
        (
            "s",
            r#"{"transport":"stdio","command":"x","request_timeout_ms":0}"#,
            Some("request_timeout_ms"),
            "integer",
        ),
        (
            "s",
            r#"{"transport":"stdio","command":"x","request_timeout_ms":"30000"}"#,
            Some("request_timeout_ms"),
            "integer",
        ),
        (
            "s",
            r#"{"transport":"stdio","command":"x","request_timeout_ms":99999999999}"#,
            Some("request_timeout_ms"),
            "integer",
        ),
        (
            "s",
            r#"{"transport":"stdio","command":"x","request_timeout_ms":1.5}"#,
            Some("request_timeout_ms"),
            "integer",
        ),
        (
            "s",
            r#"{"transport":"stdio","command":"x","enabled":"yes"}"#,
            Some("enabled"),
            "true or false",
        ),
        (
            "s",
            r#"{"transport":"stdio","command":"x","args":["a",1]}"#,
            Some("args[1]"),
            "string",
        ),
        (
            "s",
            r#"{"transport":"stdio","command":"x","env":["A=b"]}"#,
            Some("env"),
            "object",
        ),
        (
            "s",
            r#"{"transport":"stdio","command":"x","env":{"A=B":"v"}}"#,
            Some("env.A=B"),
            "name",
        ),
        (
            "s",
            r#"{"transport":"http","url":"https://h","headers":{"bad header":"v"}}"#,
            Some("headers.bad header"),
            "header name",
        ),
        (
            "s",
            r#"{"transport":"http","url":"https://h","oauth":{"token_url":"nope"}}"#,
            Some("oauth.token_url"),
            "valid",
        ),
        (
            "s",
            r#"{"transport":"http","url":"https://h","oauth":[]}"#,
            Some("oauth"),
            "object",
        ),
        (
            "s",
            r#"{"transport":"stdio","command":"x","permission":{"default":"maybe"}}"#,
            Some("permission.default"),
            "allow",
        ),
        (
            "s",
            r#"{"transport":"stdio","command":"x","permission":{"tools":{"t":1}}}"#,
            Some("permission.tools.t"),
            "allow",
        ),
        (
            "s",
            r#"{"transport":"stdio","command":"x","protocol_version":"1999-01-01"}"#,
            Some("protocol_version"),
            "2025-11-25",
        ),
        (
            "s",
            r#"{"transport":"stdio","command":"x","max_result_bytes":-1}"#,
            Some("max_result_bytes"),
            "integer",
        ),
        (
            "s",
            r#"{"transport":"stdio","command":"x","enabled_tools":"t"}"#,
            Some("enabled_tools"),
            "array",
        ),
        ("s", r#""npx server""#, None, "object"),
    ];
    for (id, entry, field, words) in cases {
        let servers = format!(r#"{{"{id}": {entry}, "ok": {{"command": "fine"}}}}"#);
        let w = World::new();
        w.write(&w.project_file(), &native(&servers));
        let c = w.load();
        let (server, f, message) = error_of(&c);
        assert!(server.is_some(), "{servers}");
        assert_eq!(f, *field, "{servers}: {:#?}", c.problems);
        assert!(message.contains(words), "{servers}: {message}");
        let p = c.problems.iter().find(|p| p.is_error()).unwrap();
        assert_eq!(p.file, w.project_file());
        let shown = p.to_string();
        assert!(shown.contains(".mcp-host/config.json"), "{shown}");
        assert!(shown.contains("server `"), "{shown}");
        assert!(
            c.servers.iter().all(|s| s.id == "ok"),
            "{servers}: only the good one"
        );
        assert!(c.server("ok").is_some(), "{servers}: the rest still loads");
        assert_eq!(c.rejected.len(), 1);
    }
}

#[test]
fn unknown_fields_warn_with_file_server_and_field() {
    let c = check(
        r#"{"s":{"transport":"stdio","command":"x","comand":"y",
             "oauth":{"scopes":"a"},"permission":{"defualt":"allow"}}}"#,
    );
    assert!(!c.has_errors(), "{:#?}", c.problems);
    assert!(c.server("s").is_some());
    let fields: Vec<&str> = c
        .problems
        .iter()
        .map(|p| p.field.as_deref().unwrap())
        .collect();
    assert!(fields.contains(&"comand"), "{fields:?}");
    assert!(fields.contains(&"permission.defualt"), "{fields:?}");
    assert!(
        fields.contains(&"oauth"),
        "oauth is ignored on stdio: {fields:?}"
    );
    let p = c
        .problems
        .iter()
        .find(|p| p.field.as_deref() == Some("comand"))
        .unwrap();
    assert_eq!(p.severity, Severity::Warning);
    assert_eq!(p.server.as_deref(), Some("s"));
    assert!(p.to_string().starts_with("warning: "), "{p}");
    let c = check(
        r#"{"h":{"transport":"http","url":"https://h","oauth":{"scopes":"a"},"command":"x"}}"#,
    );
    let fields: Vec<&str> = c
        .problems
        .iter()
        .map(|p| p.field.as_deref().unwrap())
        .collect();
    assert_eq!(fields, ["oauth.scopes", "command"]);
}

#[test]
fn unknown_host_options_warn_and_bad_ones_fall_back() {
    let w = World::new();
    w.write(
        &w.project_file(),
        r#"{"version":1,"mcp":{"max_conections":3,"max_connections":0,"servers":{}}}"#,
    );
    let c = w.load();
    let fields: Vec<&str> = c
        .problems
        .iter()
        .map(|p| p.field.as_deref().unwrap())
        .collect();
    assert_eq!(fields, ["mcp.max_conections", "mcp.max_connections"]);
    assert_eq!(c.host.max_connections, DEFAULT_MAX_CONNECTIONS);
}

#[test]
fn duplicate_ids_in_one_file_reject_that_id() {
    let c = check(
        r#"{"d":{"transport":"stdio","command":"one"},"ok":{"command":"x"},
            "d":{"transport":"stdio","command":"two"}}"#,
    );
    let (server, _, message) = error_of(&c);
    assert_eq!(server, Some("d"));
    assert!(message.contains("more than once"));
    assert!(c.server("d").is_none());
    assert!(c.server("ok").is_some());
}

#[test]
fn a_broken_file_is_an_error_and_the_other_file_still_loads() {
    for broken in [
        "{not json",
        "[1,2]",
        r#"{"version":2,"mcp":{"servers":{}}}"#,
        r#"{"version":"1","mcp":{"servers":{}}}"#,
        r#"{"version":1,"mcp":[]}"#,
        r#"{"version":1,"mcp":{"servers":[]}}"#,
        "",
    ] {
        let w = World::new();
        w.write(&w.global(), &native(r#"{"g":{"command":"g"}}"#));
        w.write(&w.project_file(), broken);
        let c = w.load();
        let (server, _, _) = error_of(&c);
        assert_eq!(server, None, "{broken}");
        assert_eq!(c.problems[0].file, w.project_file());
        assert_eq!(c.files[2].status, FileStatus::Failed, "{broken}");
        assert!(
            c.server("g").is_some(),
            "{broken}: the global file still loads"
        );
    }
}

#[test]
fn a_missing_version_is_assumed_with_a_warning() {
    let w = World::new();
    w.write(
        &w.project_file(),
        r#"{"mcp":{"servers":{"s":{"command":"x"}}},"ui":{}}"#,
    );
    let c = w.load();
    assert!(!c.has_errors());
    assert_eq!(c.problems[0].field.as_deref(), Some("version"));
    assert!(c.server("s").is_some());
}

#[test]
fn paths_follow_the_environment() {
    let cwd = Path::new("/work/p");
    let p = ConfigPaths::new(cwd, &Env::new().with("HOME", "/home/u")).unwrap();
    assert_eq!(
        p.global.as_deref(),
        Some(Path::new("/home/u/.config/mcp-host/config.json"))
    );
    assert_eq!(p.project, Path::new("/work/p/.mcp-host/config.json"));
    assert_eq!(p.project_mcp_json, Path::new("/work/p/.mcp.json"));
    assert_eq!(
        p.global_dir().as_deref(),
        Some(Path::new("/home/u/.config/mcp-host"))
    );
    let p = ConfigPaths::new(
        cwd,
        &Env::new()
            .with("HOME", "/home/u")
            .with("XDG_CONFIG_HOME", "/xdg"),
    )
    .unwrap();
    assert_eq!(
        p.global.as_deref(),
        Some(Path::new("/xdg/mcp-host/config.json"))
    );
    let p = ConfigPaths::new(
        cwd,
        &Env::new()
            .with("XDG_CONFIG_HOME", "/xdg")
            .with("MCP_HOST_CONFIG", "/etc/mcp.json"),
    )
    .unwrap();
    assert_eq!(p.global.as_deref(), Some(Path::new("/etc/mcp.json")));
    // A relative one would make a file of the project the user's own: refused, by name.
    for relative in [
        "config.json",
        "./.mcp-host/config.json",
        "~/mcp.json",
        "../c.json",
    ] {
        let err = ConfigPaths::new(cwd, &Env::new().with("MCP_HOST_CONFIG", relative)).unwrap_err();
        assert!(
            matches!(&err, ConfigError::RelativeGlobalPath { value } if value == relative),
            "{err:?}"
        );
        let text = err.to_string();
        assert!(
            text.contains("MCP_HOST_CONFIG") && text.contains(relative),
            "{text}"
        );
    }
    // Empty is unset, as before.
    let p = ConfigPaths::new(cwd, &Env::new().with("MCP_HOST_CONFIG", "")).unwrap();
    assert_eq!(p.global, None);
    let p = ConfigPaths::new(cwd, &Env::new()).unwrap();
    assert_eq!(p.global, None);
    assert!(matches!(
        p.editable(Scope::Global),
        Err(ConfigError::NoGlobalPath)
    ));
    assert_eq!(p.files().len(), 2);
}

#[test]
fn detection_follows_seed_003() {
    let url = |s: &str| url::Url::parse(s).unwrap();
    assert_eq!(
        detect("https://example.com/mcp").unwrap(),
        Detected::Http {
            url: url("https://example.com/mcp")
        }
    );
    assert_eq!(
        detect("  HTTP://localhost:3000/mcp ").unwrap(),
        Detected::Http {
            url: url("http://localhost:3000/mcp")
        }
    );
    assert_eq!(
        detect("sse://localhost:3001/sse").unwrap(),
        Detected::LegacySse {
            url: url("http://localhost:3001/sse")
        }
    );
    assert_eq!(
        detect("http+sse://h/sse").unwrap(),
        Detected::LegacySse {
            url: url("http://h/sse")
        }
    );
    assert_eq!(
        detect("https+sse://h/sse").unwrap(),
        Detected::LegacySse {
            url: url("https://h/sse")
        }
    );
    assert_eq!(
        detect("npx -y @anthropic/mcp-server").unwrap(),
        Detected::Stdio {
            command: "npx".into(),
            args: vec!["-y".into(), "@anthropic/mcp-server".into()]
        }
    );
    assert_eq!(
        detect("node server.js --url=http://x").unwrap(),
        Detected::Stdio {
            command: "node".into(),
            args: vec!["server.js".into(), "--url=http://x".into()]
        }
    );
    assert_eq!(detect("   "), Err(DetectError::Empty));
    assert_eq!(
        detect("''"),
        Ok(Detected::Stdio {
            command: String::new(),
            args: vec![]
        })
    );
    assert_eq!(
        detect("ws://h/x"),
        Err(DetectError::UnsupportedScheme("ws".into()))
    );
    assert_eq!(detect("https://"), Err(DetectError::InvalidUrl));
    assert_eq!(detect("sse://"), Err(DetectError::InvalidUrl));
}

#[test]
fn command_lines_split_like_a_shell_without_one() {
    let split = |s: &str| split_command_line(s).unwrap();
    assert_eq!(split("a  b\tc"), ["a", "b", "c"]);
    assert_eq!(
        split(r#"run 'two words' "and three" x"#),
        ["run", "two words", "and three", "x"]
    );
    assert_eq!(split(r#"a'b'"c"d"#), ["abcd"]);
    assert_eq!(
        split(r#"'it''s' "say \"hi\"" \$HOME"#),
        ["its", r#"say "hi""#, "$HOME"]
    );
    assert_eq!(split(r#""a\nb" 'c\d'"#), [r"a\nb", r"c\d"]);
    assert_eq!(split(r"one\ word"), ["one word"]);
    assert_eq!(split(r#""" ''"#), ["", ""]);
    assert_eq!(
        split("$HOME ~ *.rs ${X}"),
        ["$HOME", "~", "*.rs", "${X}"],
        "nothing expanded"
    );
    assert_eq!(split(""), Vec::<String>::new());
    assert_eq!(
        split_command_line("'open"),
        Err(DetectError::UnterminatedQuote("single"))
    );
    assert_eq!(
        split_command_line("\"open"),
        Err(DetectError::UnterminatedQuote("double"))
    );
    assert_eq!(
        split_command_line("end\\"),
        Err(DetectError::TrailingBackslash)
    );
}

#[test]
fn a_command_in_url_is_a_stdio_server_and_spaces_in_command_warn() {
    let c = check(r#"{"s":{"url":"npx -y server"},"t":{"command":"npx -y server"}}"#);
    let s = stdio_of(c.server("s").unwrap());
    assert_eq!((s.command.as_str(), s.args.len()), ("npx", 2));
    let t: Vec<&Problem> = c.problems_for("t").collect();
    assert_eq!(t.len(), 1);
    assert_eq!(t[0].severity, Severity::Warning);
    assert_eq!(t[0].field.as_deref(), Some("command"));
}

const PLANTED: &str = "sk-PLANTED-c0ffee";

// It also checks the transports' configurations the secrets reach, so it needs both.
#[cfg(all(feature = "stdio", feature = "http"))]
#[test]
fn secret_references_resolve_from_the_environment() {
    let w = World::new();
    w.write(
        &w.project_file(),
        &native(
            r#"{"h":{"transport":"http","url":"https://h/mcp",
                "headers":{"Authorization":{"env":"API_TOKEN"},"X-Expanded":"${API_TOKEN}"},
                "oauth":{"client_secret":{"env":"CS"}}},
               "s":{"command":"x","env":{"KEY":{"env":"API_TOKEN"}}}}"#,
        ),
    );
    let env = w
        .env()
        .with("API_TOKEN", PLANTED)
        .with("CS", "client-secret-value");
    let c = w.load_env(&env);
    assert!(c.problems.is_empty(), "{:#?}", c.problems);
    let h = c.server("h").unwrap();
    let headers = &http_of(h).headers;
    assert_eq!(headers[0].1.secret(), PLANTED);
    assert_eq!(headers[1].1.secret(), PLANTED, "`${{…}}` is expanded too");
    assert_eq!(
        h.oauth
            .as_ref()
            .unwrap()
            .client_secret
            .as_ref()
            .unwrap()
            .secret(),
        "client-secret-value"
    );
    let stdio = c.server("s").unwrap().stdio_config().unwrap();
    assert_eq!(stdio.env, [("KEY".to_owned(), PLANTED.to_owned())]);
    assert_eq!(stdio.name, "s");
    let http = h.http_config().unwrap();
    assert_eq!(
        http.headers[0],
        ("Authorization".to_owned(), PLANTED.to_owned())
    );
    assert_eq!(http.url, "https://h/mcp");
    assert!(h.stdio_config().is_none());

    let debug = format!("{c:?} {env:?} {stdio:?} {http:?}");
    assert!(!debug.contains(PLANTED), "{debug}");
    assert!(!debug.contains("client-secret-value"), "{debug}");
    assert!(debug.contains("[redacted]"));
}

#[test]
fn an_unset_reference_rejects_the_server_naming_the_variable() {
    let c = check(
        r#"{"s":{"command":"x","env":{"KEY":{"env":"NOT_SET_ANYWHERE"}}},
            "k":{"transport":"http","url":"https://h","headers":{"A":{"keyring":{"service":"s"}}}},
            "b":{"transport":"http","url":"https://h","headers":{"A":{"env":""}}}}"#,
    );
    assert!(c.servers.is_empty());
    let s: Vec<&Problem> = c.problems_for("s").collect();
    assert_eq!(s[0].field.as_deref(), Some("env.KEY"));
    assert!(
        s[0].message.contains("`NOT_SET_ANYWHERE` is not set"),
        "{}",
        s[0]
    );
    let k: Vec<&Problem> = c.problems_for("k").collect();
    assert!(
        k[0].message.contains("`keyring` must name a secret"),
        "{}",
        k[0]
    );
    assert_eq!(c.problems_for("b").count(), 1);
}

#[test]
fn a_planted_secret_never_reaches_debug_or_a_problem() {
    let w = World::new();
    // The secret sits where each kind of problem is reported: a bad header value, an unknown
    // field, a wrong type, a bad URL, a duplicate, a broken file.
    w.write(
        &w.project_file(),
        &native(&format!(
            r#"{{"a":{{"transport":"http","url":"https://h/?key={PLANTED}",
                 "headers":{{"X":"{PLANTED}\n"}}}},
               "b":{{"transport":"http","url":"https://h/","surprise":"{PLANTED}",
                 "request_timeout_ms":"{PLANTED}","oauth":{{"token_url":"{PLANTED}"}}}},
               "c":{{"transport":"http","url":"{PLANTED}"}},
               "d":{{"transport":"stdio","command":"x","env":{{"K":"{PLANTED}"}},"enabled":"{PLANTED}"}},
               "e":{{"transport":"http","url":"https://user:{PLANTED}@h/?q={PLANTED}"}}}}"#
        )),
    );
    w.write(&w.global(), &format!("{{\"version\":1, \"x\": \"{PLANTED}"));
    let c = w.load();
    assert!(c.problems.len() >= 6, "{:#?}", c.problems);
    for p in &c.problems {
        assert!(!p.to_string().contains(PLANTED), "{p}");
        assert!(!format!("{p:?}").contains(PLANTED), "{p:?}");
    }
    let debug = format!("{c:?}");
    assert!(!debug.contains(PLANTED), "{debug}");
    assert!(debug.contains("?[redacted]"), "queries are hidden: {debug}");
}

#[test]
fn edits_round_trip_and_keep_everything_else() {
    let w = World::new();
    let path = w.project_file();
    w.write(
        &path,
        r#"{"version":1,"ui":{"theme":"dark"},
            "mcp":{"max_connections":4,"servers":{"keep":{"command":"k","custom":{"x":[1,2]}}}}}"#,
    );
    let mut http = NewServer::http("https://h/mcp");
    if let NewTransport::Http { headers, .. } = &mut http.transport {
        headers.push(("Authorization".into(), SecretSource::Env("TOKEN".into())));
    }
    http.request_timeout_ms = Some(5000);
    http.oauth.client_id = Some("cid".into());
    http.oauth.client_secret = Some(SecretSource::Plain(Secret::new("cs")));
    add_server(&path, "web", &http, false).unwrap();
    let again = add_server(&path, "web", &http, false).unwrap_err();
    assert!(matches!(again, ConfigError::ServerExists { .. }), "{again}");
    assert!(again.to_string().contains("`web` already exists"));
    add_server(&path, "web", &http, true).unwrap();
    add_server(
        &path,
        "local",
        &NewServer::from_spec("npx -y 'my server'").unwrap(),
        false,
    )
    .unwrap();

    let text = std::fs::read_to_string(&path).unwrap();
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(doc["ui"]["theme"], "dark");
    assert_eq!(doc["mcp"]["max_connections"], 4);
    assert_eq!(doc["mcp"]["servers"]["keep"]["custom"]["x"][1], 2);
    assert_eq!(
        doc["mcp"]["servers"]["web"]["headers"]["Authorization"]["env"],
        "TOKEN"
    );
    assert_eq!(doc["mcp"]["servers"]["web"]["oauth"]["client_secret"], "cs");
    assert_eq!(doc["mcp"]["servers"]["local"]["args"][1], "my server");

    let c = w.load_env(&w.env().with("TOKEN", "t"));
    let web = c.server("web").unwrap();
    assert_eq!(web.request_timeout, Duration::from_millis(5000));
    assert_eq!(http_of(web).headers[0].1.secret(), "t");
    assert_eq!(
        stdio_of(c.server("local").unwrap()).args,
        ["-y", "my server"]
    );

    set_enabled(&path, "web", false).unwrap();
    assert!(
        !w.load_env(&w.env().with("TOKEN", "t"))
            .server("web")
            .unwrap()
            .enabled
    );
    set_enabled(&path, "web", true).unwrap();
    assert!(
        w.load_env(&w.env().with("TOKEN", "t"))
            .server("web")
            .unwrap()
            .enabled
    );
    remove_server(&path, "web").unwrap();
    let gone = remove_server(&path, "web").unwrap_err();
    assert!(matches!(gone, ConfigError::ServerNotFound { .. }), "{gone}");
    let c = w.load();
    assert!(c.server("web").is_none());
    assert!(c.server("keep").is_some());
}

#[test]
fn edits_create_the_file_privately_and_disable_lower_layers() {
    let w = World::new();
    let global = w.global();
    add_server(
        &global,
        "g",
        &NewServer::from_spec("sse://localhost:1/sse").unwrap(),
        false,
    )
    .unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&global).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    let project = w.paths().editable(Scope::Project).unwrap().to_path_buf();
    assert!(matches!(
        set_enabled(&project, "g", true),
        Err(ConfigError::ServerNotFound { .. })
    ));
    set_enabled(&project, "g", false).unwrap();
    let c = w.load();
    let g = c.server("g").unwrap();
    assert!(!g.enabled);
    assert_eq!(g.transport.kind(), "sse");
    set_enabled(&project, "g", true).unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&project).unwrap()).unwrap();
    assert_eq!(
        doc["mcp"]["servers"],
        serde_json::json!({}),
        "the marker is gone"
    );
    assert!(w.load().server("g").unwrap().enabled);
}

#[test]
fn edits_refuse_bad_input_and_leave_the_file_alone() {
    let w = World::new();
    let path = w.project_file();
    assert!(matches!(
        add_server(&path, "bad id", &NewServer::http("https://h"), false),
        Err(ConfigError::InvalidServerId { .. })
    ));
    let err = add_server(&path, "s", &NewServer::http("not-a-url"), false).unwrap_err();
    let ConfigError::InvalidEntry { problems, .. } = &err else {
        panic!("{err}");
    };
    assert_eq!(problems[0].field.as_deref(), Some("url"));
    assert!(err.to_string().contains("`url`"), "{err}");
    let mut bad_timeout = NewServer::stdio("x", ["a"]);
    bad_timeout.request_timeout_ms = Some(0);
    assert!(matches!(
        add_server(&path, "s", &bad_timeout, false),
        Err(ConfigError::InvalidEntry { .. })
    ));
    assert!(!path.exists(), "nothing written");

    for text in [
        "{broken",
        r#"{"version":2}"#,
        r#"{"mcpServers":{}}"#,
        r#"{"version":1,"mcp":{"servers":[]}}"#,
    ] {
        w.write(&path, text);
        let err = add_server(&path, "s", &NewServer::stdio("x", ["a"]), false).unwrap_err();
        assert!(matches!(err, ConfigError::Invalid { .. }), "{text}: {err}");
        assert!(err.to_string().contains("config.json"), "{err}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), text, "untouched");
    }
}

#[test]
fn concurrent_edits_of_one_file_all_survive() {
    // Without the lock two edits read the same file and the second write drops the first's
    // server; eight threads adding five servers each make that near certain.
    let w = World::new();
    let path = w.project_file();
    std::thread::scope(|scope| {
        for t in 0..8 {
            let path = &path;
            scope.spawn(move || {
                for n in 0..5 {
                    let server = NewServer::stdio(format!("srv-{t}-{n}"), ["a"]);
                    add_server(path, &format!("s{t}-{n}"), &server, false).unwrap();
                }
            });
        }
    });
    let c = w.load();
    assert!(!c.has_errors(), "{:#?}", c.problems);
    assert_eq!(c.servers.len(), 40, "an edit lost another's server");
}

#[cfg(unix)]
#[test]
fn writing_an_inline_secret_makes_an_existing_file_private() {
    use std::os::unix::fs::PermissionsExt as _;
    let w = World::new();
    let path = w.project_file();
    w.write(&path, &native("{}"));
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    let mut by_reference = NewServer::http("https://h/mcp");
    if let NewTransport::Http { headers, .. } = &mut by_reference.transport {
        headers.push(("Authorization".into(), SecretSource::Env("TOKEN".into())));
    }
    add_server(&path, "r", &by_reference, false).unwrap();
    assert_eq!(mode(&path), 0o644, "a reference is no secret: rights kept");
    let mut by_value = NewServer::stdio("x", ["a"]);
    if let NewTransport::Stdio { env, .. } = &mut by_value.transport {
        env.push(("KEY".into(), SecretSource::Plain(Secret::new(PLANTED))));
    }
    add_server(&path, "v", &by_value, false).unwrap();
    assert_eq!(
        mode(&path),
        0o600,
        "the value is written, so the file is private"
    );
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(
        text.contains(r#""env": "TOKEN""#),
        "the reference, not a value: {text}"
    );
}

#[test]
fn what_the_command_line_builds_never_prints_a_secret() {
    let spec = format!("https://user:{PLANTED}@h/mcp?key={PLANTED}");
    let detected = detect(&spec).unwrap();
    let mut server = NewServer::from_spec(&spec).unwrap();
    if let NewTransport::Http { headers, .. } = &mut server.transport {
        headers.push(("X-Key".into(), SecretSource::Plain(Secret::new(PLANTED))));
    }
    server.oauth.token_url = Some(format!("https://h/token?secret={PLANTED}"));
    server.oauth.client_secret = Some(SecretSource::Plain(Secret::new(PLANTED)));
    let mut stdio = NewServer::stdio("x", ["a"]);
    if let NewTransport::Stdio { env, .. } = &mut stdio.transport {
        env.push(("KEY".into(), SecretSource::Plain(Secret::new(PLANTED))));
    }
    let shown = format!("{detected:?} {server:?} {stdio:?}");
    assert!(!shown.contains(PLANTED), "{shown}");
    assert!(shown.contains("\"https://h/mcp?[redacted]\""), "{shown}");
}

#[test]
fn env_from_names_the_members_read_from_the_hosts_environment() {
    let w = World::new();
    w.write(
        &w.project_file(),
        &native(r#"{"s": {"command": "x", "env": {"A": "plain", "B": {"env": "HOST_B"}}}}"#),
    );
    let c = w.load_env(&w.env().with("HOST_B", "the user's value"));
    let t = stdio_of(c.server("s").unwrap());
    assert_eq!(t.env_from, vec![("B".to_owned(), "HOST_B".to_owned())]);
    assert_eq!(t.env.len(), 2);
}

// `${VAR}` and `${VAR:-default}` (issue 23 §1, issue 22 §4): the rules of the expansion itself
// are tested in `expand.rs`; these are about where it applies and what it does to an entry.

/// The environment of the expansion tests: a token, a directory and an empty variable.
fn expansion_env(w: &World) -> Env {
    w.env()
        .with("TOKEN", PLANTED)
        .with("MEMDIR", "/var/mem")
        .with("BIN", "/opt/bin/server")
        .with("EMPTY", "")
}

#[test]
fn references_expand_in_command_args_env_url_and_headers_in_every_layer() {
    let w = World::new();
    w.write(
        &w.global(),
        &native(
            r#"{"g":{"command":"${BIN}","args":["--file","${MEMDIR}/mem.jsonl","${MODE:-fast}"]}}"#,
        ),
    );
    w.write(
        &w.mcp_json(),
        r#"{"mcpServers":{
            "j":{"type":"http","url":"${BASE:-http://127.0.0.1:9}/mcp",
                 "headers":{"Authorization":"Bearer ${TOKEN}","X-Cost":"$$5 and $${literal}"}}}}"#,
    );
    w.write(
        &w.project_file(),
        &native(
            r#"{"p":{"command":"x","env":{"KEY":"${TOKEN}","MIXED":"a-${EMPTY:-d}-${MEMDIR}"}}}"#,
        ),
    );
    let c = w.load_env(&expansion_env(&w));
    assert!(c.problems.is_empty(), "{:#?}", c.problems);

    let g = stdio_of(c.server("g").unwrap());
    assert_eq!(g.command, "/opt/bin/server");
    assert_eq!(g.args, ["--file", "/var/mem/mem.jsonl", "fast"]);
    assert_eq!(c.server("g").unwrap().reads_env, ["BIN", "MEMDIR", "MODE"]);

    let j = c.server("j").unwrap();
    assert_eq!(http_of(j).url.as_str(), "http://127.0.0.1:9/mcp");
    let headers = &http_of(j).headers;
    assert_eq!(headers[0].1.secret(), format!("Bearer {PLANTED}"));
    assert_eq!(headers[1].1.secret(), "$$5 and ${literal}");
    assert_eq!(j.reads_env, ["BASE", "TOKEN"]);

    let p = c.server("p").unwrap();
    let t = stdio_of(p);
    assert_eq!(t.env[0].1.secret(), PLANTED);
    assert_eq!(t.env[1].1.secret(), "a-d-/var/mem");
    // A value that is one reference is the user's own variable; a mixed one is not.
    assert_eq!(t.env_from, vec![("KEY".to_owned(), "TOKEN".to_owned())]);
    assert_eq!(p.reads_env, ["TOKEN", "EMPTY", "MEMDIR"]);
}

#[test]
fn an_unset_variable_or_a_malformed_reference_rejects_the_server_naming_field_and_variable() {
    let w = World::new();
    w.write(
        &w.mcp_json(),
        r#"{"mcpServers":{
            "a":{"command":"x","args":["ok","--key=${NOT_SET_ANYWHERE}"]},
            "u":{"url":"https://h.example/${NO_PATH}"},
            "h":{"type":"http","url":"https://h.example/mcp","headers":{"Authorization":"Bearer sk-inline ${TOKEN"}},
            "e":{"command":"x","env":{"K":"sk-inline-${1BAD}"}},
            "fine":{"command":"x","args":["${TOKEN}"]}}}"#,
    );
    let c = w.load_env(&expansion_env(&w));
    let ids: Vec<&str> = c.servers.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(ids, ["fine"]);
    let one = |id: &str| {
        let p: Vec<&Problem> = c.problems_for(id).collect();
        assert_eq!(p.len(), 1, "{p:#?}");
        assert!(p[0].is_error());
        (p[0].field.clone().unwrap_or_default(), p[0].to_string())
    };
    let (field, text) = one("a");
    assert_eq!(field, "args[1]");
    assert!(
        text.contains("server `a`") && text.contains("`NOT_SET_ANYWHERE` is not set"),
        "{text}"
    );
    let (field, text) = one("u");
    assert_eq!(field, "url");
    assert!(text.contains("`NO_PATH` is not set"), "{text}");
    let (field, text) = one("h");
    assert_eq!(field, "headers.Authorization");
    assert!(
        text.contains("malformed `${` at character 18: it has no closing `}`"),
        "{text}"
    );
    let (field, text) = one("e");
    assert_eq!(field, "env.K");
    assert!(text.contains("not a variable name"), "{text}");
    // The value written in the file is never quoted.
    let all: String = c.problems.iter().map(ToString::to_string).collect();
    assert!(
        !all.contains("sk-inline") && !all.contains(PLANTED),
        "{all}"
    );
    // A refused entry still has a fingerprint, so its user can approve it before setting the
    // variable.
    assert!(c.rejected.iter().all(|r| r.fingerprint.is_some()));
}

#[cfg(feature = "http")]
#[test]
fn an_expanded_secret_never_reaches_debug_or_a_problem() {
    let w = World::new();
    w.write(
        &w.mcp_json(),
        r#"{"mcpServers":{
            "s":{"command":"x","env":{"KEY":"${TOKEN}"}},
            "h":{"type":"http","url":"https://h.example/mcp","headers":{"Authorization":"Bearer ${TOKEN}"}},
            "bad":{"type":"http","url":"https://h.example/mcp","headers":{"X-Key":"${BROKEN}"}}}}"#,
    );
    // A value that cannot be a header value: the problem names the header, not the value.
    let env = expansion_env(&w).with("BROKEN", format!("{PLANTED}\r\nX-Evil: 1"));
    let c = w.load_env(&env);
    // Present: the values reached the configuration.
    assert_eq!(stdio_of(c.server("s").unwrap()).env[0].1.secret(), PLANTED);
    assert!(
        http_of(c.server("h").unwrap()).headers[0]
            .1
            .secret()
            .ends_with(PLANTED)
    );
    let bad: Vec<String> = c.problems_for("bad").map(ToString::to_string).collect();
    assert_eq!(bad.len(), 1, "{bad:?}");
    assert!(
        bad[0].contains("`headers.X-Key`: the value is not a valid header value"),
        "{bad:?}"
    );
    // Absent: from every Debug and every problem.
    let shown = format!(
        "{c:?} {:?} {:?}",
        c.problems,
        c.server("h").unwrap().http_config()
    );
    assert!(shown.contains("[redacted]"), "{shown}");
    assert!(!shown.contains(PLANTED), "{shown}");
    assert!(!bad[0].contains(PLANTED), "{bad:?}");
}

#[test]
fn the_fingerprint_covers_the_variables_read_and_their_defaults_not_their_values() {
    let w = World::new();
    let fingerprint = |args: &str, env: &Env| {
        w.write(
            &w.mcp_json(),
            &format!(r#"{{"mcpServers":{{"s":{{"command":"x","args":{args}}}}}}}"#),
        );
        let c = w.load_env(env);
        let s = c.server("s").unwrap_or_else(|| panic!("{:#?}", c.problems));
        (s.fingerprint.clone(), s.reads_env.clone())
    };
    let env = expansion_env(&w);
    let (base, reads) = fingerprint(r#"["${TOKEN}"]"#, &env);
    assert_eq!(reads, ["TOKEN"]);
    // Another variable, another default, a default added: another entry to approve.
    let (other_var, reads) = fingerprint(r#"["${MEMDIR}"]"#, &env);
    assert_eq!(reads, ["MEMDIR"]);
    assert_ne!(base, other_var);
    let (with_default, _) = fingerprint(r#"["${TOKEN:-a}"]"#, &env);
    assert_ne!(base, with_default);
    let (other_default, _) = fingerprint(r#"["${TOKEN:-b}"]"#, &env);
    assert_ne!(with_default, other_default);
    // The user's own value is not the project's to approve: changing it keeps the approval.
    let (same, _) = fingerprint(r#"["${TOKEN}"]"#, &env.clone().with("TOKEN", "another"));
    assert_eq!(base, same);
}

/// Codex's `bearer_token_env_var`: an `Authorization: Bearer` header read from the variable,
/// which the entry is recorded as reading (for its approval); unset, it is an error naming the
/// variable, never a request without credentials; beside an `Authorization` header, an error.
#[test]
fn bearer_token_env_var_is_an_authorization_header_from_the_variable() {
    let w = World::new();
    w.write(
        &w.project_file(),
        &native(r#"{"f":{"url":"https://f.example/mcp","bearer_token_env_var":"FIGMA_TOKEN"}}"#),
    );
    let c = w.load_env(&w.env().with("FIGMA_TOKEN", "tok-123"));
    assert!(c.problems.is_empty(), "{:#?}", c.problems);
    let f = c.server("f").unwrap();
    let headers = &http_of(f).headers;
    assert_eq!(headers.len(), 1);
    assert_eq!(headers[0].0, "Authorization");
    assert_eq!(headers[0].1.secret(), "Bearer tok-123");
    assert_eq!(f.reads_env, ["FIGMA_TOKEN"]);

    let unset = w.load();
    assert_eq!(
        error_of(&unset),
        (
            Some("f"),
            Some("bearer_token_env_var"),
            "environment variable `FIGMA_TOKEN` is not set"
        )
    );

    let both = check(
        r#"{"f":{"url":"https://f.example/mcp","bearer_token_env_var":"T","headers":{"authorization":"x"}}}"#,
    );
    let (server, field, message) = error_of(&both);
    assert_eq!((server, field), (Some("f"), Some("bearer_token_env_var")));
    assert!(message.contains("conflicts"), "{message}");
}

/// A `${VAR}` whose name says credential, expanded into `command` or `args`, reaches the
/// process but is shown as written: in `Debug`, and in what `list` and an approval show
/// (`shown_command`, `shown_args`); other variables are shown expanded.
#[test]
fn a_secret_variable_in_args_is_shown_as_written() {
    let w = World::new();
    w.write(
        &w.project_file(),
        &native(
            r#"{"s":{"command":"srv","args":["--key=${API_KEY}","${MEMDIR}/m","$${API_KEY}"]}}"#,
        ),
    );
    let env = w
        .env()
        .with("API_KEY", "sk-planted-0001")
        .with("MEMDIR", "/var/mem");
    let c = w.load_env(&env);
    assert!(c.problems.is_empty(), "{:#?}", c.problems);
    let s = c.server("s").unwrap();
    let t = stdio_of(s);
    assert_eq!(
        t.args,
        ["--key=sk-planted-0001", "/var/mem/m", "${API_KEY}"]
    );
    assert_eq!(
        t.shown_args,
        ["--key=${API_KEY}", "/var/mem/m", "${API_KEY}"]
    );
    assert_eq!(t.shown_command, "srv");
    let debug = format!("{s:?}");
    assert!(debug.contains("--key=${API_KEY}"), "{debug}");
    assert!(!debug.contains("sk-planted-0001"), "{debug}");
}

#[test]
fn the_credentials_store_is_the_users_choice_alone() {
    use super::CredentialsStore;
    let w = World::new();
    assert_eq!(
        CredentialsStore::for_user(&w.paths(), &w.env()),
        CredentialsStore::Auto,
        "no file: auto"
    );
    w.write(
        &w.global(),
        r#"{"version":1,"mcp":{"credentials_store":"file","servers":{}}}"#,
    );
    // A project that says otherwise is warned and ignored.
    w.write(
        &w.project_file(),
        r#"{"version":1,"mcp":{"credentials_store":"keyring","servers":{}}}"#,
    );
    let c = w.load();
    assert_eq!(
        CredentialsStore::for_user(&w.paths(), &w.env()),
        CredentialsStore::File
    );
    let project: Vec<&Problem> = c
        .problems
        .iter()
        .filter(|p| p.field.as_deref() == Some("mcp.credentials_store"))
        .collect();
    assert_eq!(project.len(), 1, "{:?}", c.problems);
    assert_eq!(project[0].file, w.project_file());
    assert!(!project[0].is_error() && project[0].message.contains("ignored"));
    // The environment wins for one run.
    let env = w.env().with("MCP_HOST_CREDENTIALS_STORE", "keyring");
    assert_eq!(
        CredentialsStore::for_user(&w.paths(), &env),
        CredentialsStore::Keyring
    );
    // A value that is not one of the three is an error of the file.
    w.write(
        &w.global(),
        r#"{"version":1,"mcp":{"credentials_store":"vault","servers":{}}}"#,
    );
    let c = w.load();
    assert!(
        c.problems.iter().any(|p| p.is_error()
            && p.field.as_deref() == Some("mcp.credentials_store")
            && p.file == w.global()),
        "{:?}",
        c.problems
    );
}

#[test]
fn the_local_layer_is_outside_the_tree_per_project_and_wins() {
    let w = World::new();
    let paths = w.paths();
    let local = paths.local.clone().unwrap();
    assert!(local.starts_with(w.root.join("home/.config/mcp-host/projects")));
    assert!(!local.starts_with(w.project()));
    // Another directory has another local file; the same one has the same.
    let other = w.root.join("other");
    std::fs::create_dir_all(&other).unwrap();
    let elsewhere = ConfigPaths::new(&other, &w.env()).unwrap();
    assert_ne!(elsewhere.local, paths.local);
    assert_eq!(w.paths().local, paths.local);
    assert_eq!(paths.editable(Scope::Local).unwrap(), local);

    w.write(&w.global(), &native(r#"{"s":{"command":"g"}}"#));
    w.write(&w.project_file(), &native(r#"{"s":{"command":"p"}}"#));
    assert_eq!(stdio_of(w.load().server("s").unwrap()).command, "p");
    w.write(&local, &native(r#"{"s":{"command":"l"}}"#));
    let c = w.load();
    assert!(c.problems.is_empty(), "{:#?}", c.problems);
    let s = c.server("s").unwrap();
    assert_eq!(stdio_of(s).command, "l", "local wins over project and user");
    assert_eq!(s.source, Scope::Local);
    assert_eq!(s.file, local);
    let only = load_scope(&paths, &w.env(), Scope::Local);
    assert_eq!(only.servers.len(), 1);
}

#[test]
fn private_variables_resolve_references_and_the_environment_wins() {
    let w = World::new();
    let local = w.paths().local.unwrap();
    w.write(
        &w.project_file(),
        &native(r#"{"t":{"command":"c","env":{"API_TOKEN":"${API_TOKEN}","K":{"env":"K"}}}}"#),
    );
    // Unset, the project's entry is refused, naming the variable.
    let c = w.load();
    assert!(c.server("t").is_none());
    assert!(
        c.problems.iter().any(|p| p.message.contains("API_TOKEN")),
        "{:#?}",
        c.problems
    );
    set_variables(
        &local,
        &[
            ("API_TOKEN".to_owned(), Secret::new("from-file")),
            ("K".to_owned(), Secret::new("k-file")),
        ],
    )
    .unwrap();
    let value = |c: &LoadedConfig, name: &str| {
        stdio_of(c.server("t").unwrap())
            .env
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.secret().to_owned())
            .unwrap()
    };
    let c = w.load();
    assert!(c.problems.is_empty(), "{:#?}", c.problems);
    assert_eq!(value(&c, "API_TOKEN"), "from-file");
    assert_eq!(value(&c, "K"), "k-file");
    let c = w.load_env(&w.env().with("API_TOKEN", "from-env"));
    assert_eq!(value(&c, "API_TOKEN"), "from-env");
    // The file is private; a project's own `variables` are never read.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&local).unwrap().permissions().mode();
        assert_eq!(mode & 0o077, 0, "{mode:o}");
    }
    std::fs::remove_file(&local).unwrap();
    w.write(
        &w.project_file(),
        r#"{"version":1,"variables":{"API_TOKEN":"planted","K":"planted"},
            "mcp":{"servers":{"t":{"command":"c","env":{"API_TOKEN":"${API_TOKEN}"}}}}}"#,
    );
    assert!(w.load().server("t").is_none());
}

#[test]
fn an_edit_leaves_no_lock_file_beside_the_file() {
    let w = World::new();
    add_server(
        &w.project_file(),
        "a",
        &NewServer::http("https://a.example/mcp"),
        false,
    )
    .unwrap();
    let names: Vec<String> = std::fs::read_dir(w.project().join(".mcp-host"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["config.json"]);
}
