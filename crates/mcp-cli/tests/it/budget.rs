//! `mcp-host budget`.

use serde_json::Value;

use super::*;

/// `fixtures/gateway/serena.json` with its server started from the built testkit binary and
/// its tools file found from anywhere.
fn serena_gateway(dir: &Path) -> PathBuf {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/gateway");
    let text = std::fs::read_to_string(fixtures.join("serena.json")).unwrap();
    let mut file: Value = serde_json::from_str(&text).unwrap();
    let serena = &mut file["mcpServers"]["serena"];
    serena["command"] = mcp_testkit::fake_server().to_string_lossy().into();
    serena["args"][1] = fixtures
        .join("serena-tools.json")
        .canonicalize()
        .unwrap()
        .to_string_lossy()
        .into();
    let path = dir.join("serena.json");
    std::fs::write(&path, serde_json::to_vec_pretty(&file).unwrap()).unwrap();
    path
}

#[test]
fn the_serena_categories_cut_the_tool_list_by_ninety_percent() {
    let u = User::new();
    let gateway = serena_gateway(u.project.path());
    let gateway = gateway.to_str().unwrap();
    let v = u
        .run(&["budget", "--gateway", gateway, "--json"])
        .code(0)
        .json();
    let direct = v["direct"]["bytes"].as_u64().unwrap();
    let via = v["gateway"]["bytes"].as_u64().unwrap();
    let reduction = v["reduction_percent"].as_f64().unwrap();
    eprintln!("serena budget: {v:#}");
    assert_eq!(v["upstreams"][0]["server"], "serena");
    assert_eq!(v["upstreams"][0]["tools"], 30);
    assert_eq!(v["direct"]["tokens"].as_u64().unwrap(), direct.div_ceil(4));
    let computed = 100.0 * (1.0 - via as f64 / direct as f64);
    assert!(
        (computed - reduction).abs() < 0.1,
        "{computed} vs {reduction}"
    );
    assert!(reduction >= 90.0, "the issue's goal is 90%: {v:#}");
    let categories: Vec<(&str, u64)> = v["categories"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["category"].as_str().unwrap(),
                c["tools"].as_u64().unwrap(),
            )
        })
        .collect();
    // execute_shell_command is disabled: session serves six of its seven.
    assert_eq!(
        categories,
        [
            ("code", 7),
            ("fs", 6),
            ("memory", 4),
            ("meta", 4),
            ("session", 6)
        ]
    );

    let r = u.run(&["budget", "--gateway", gateway]);
    r.code(0)
        .out_has("EXPOSED")
        .out_has("serena (direct)")
        .out_has("gateway, category mode")
        .out_has("+ load fs")
        .out_has("reduction: ");
}

#[test]
fn without_a_gateway_file_the_configured_servers_are_measured() {
    let u = User::new();
    u.add_demo("demo", "project");
    let v = u.run(&["budget", "--json"]).code(0).json();
    assert_eq!(v["upstreams"][0]["server"], "demo");
    assert_eq!(v["categories"][0]["category"], "demo");
    assert_eq!(v["categories_from"], "one per server");
}

#[test]
fn nothing_ready_is_an_error() {
    let u = User::new();
    u.run(&["add", "missing", "--", "/nonexistent/server-binary"])
        .code(0);
    u.run(&["budget"])
        .code(4)
        .err_has("server `missing` did not become ready (state error)")
        .err_has("its tools are not measured")
        .err_has("nothing to measure");
}

/// A category-mode gateway file over the demo server: `all` takes every tool, `empty` has no
/// `tools` block.
fn empty_category_gateway(dir: &Path) -> PathBuf {
    let gateway = serde_json::json!({
        "mode": "category",
        "mcpServers": {"demo": {"command": bin(), "args": ["demo-server"]}},
        "categories": {
            "all": {"description": "every demo tool", "server": "demo",
                    "tools": {"includePatterns": ["*"]}},
            "empty": {"description": "forgot its tools", "server": "demo"}
        }
    });
    let path = dir.join("gateway.json");
    std::fs::write(&path, serde_json::to_vec_pretty(&gateway).unwrap()).unwrap();
    path
}

#[test]
fn a_category_without_tools_is_warned_about_in_budget_and_at_start_up() {
    let u = User::new();
    let gateway = empty_category_gateway(u.project.path());
    let gateway = gateway.to_str().unwrap();
    let run = u.run(&["budget", "--gateway", gateway, "--json"]);
    run.code(0)
        .err_has("warning: categories.empty: no `tools` block");
    // Only the category without tools is named.
    assert!(!run.stderr.contains("categories.all"), "{}", run.stderr);
    let v = run.json();
    let tools = |name: &str| {
        v["categories"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["category"] == name)
            .unwrap_or_else(|| panic!("no category {name}: {v:#}"))["tools"]
            .as_u64()
            .unwrap()
    };
    assert!(tools("all") > 0, "{v:#}");
    assert_eq!(tools("empty"), 0, "{v:#}");

    // `serve` says it in its start-up log.
    let mut child = u
        .command(&["serve", "--gateway", gateway])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut seen = String::new();
    loop {
        let mut line = String::new();
        if stderr.read_line(&mut line).unwrap() == 0 {
            break;
        }
        seen.push_str(&line);
        if line.contains("categories.empty") {
            break;
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    let line = seen
        .lines()
        .find(|l| l.contains("categories.empty: no `tools` block"))
        .unwrap_or_else(|| panic!("no warning in:\n{seen}"));
    assert!(line.contains("WARN"), "{line}");
}
