//! `mcp-host tools --format …`: the catalogue as each model API takes it, through the built
//! binary, against the fake server serving the hostile schemas of `fixtures/model-apis/`.

use super::*;

/// A user with the fake server serving `fixtures/model-apis/hostile-tools.json` as `hostile`.
fn hostile_user() -> User {
    let u = User::new();
    let tools = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/model-apis/hostile-tools.json")
        .canonicalize()
        .unwrap();
    let fake = mcp_testkit::fake_server();
    u.run(&[
        "add",
        "hostile",
        "--scope",
        "global",
        "--",
        fake.to_str().unwrap(),
        "--tools-file",
        tools.to_str().unwrap(),
    ])
    .code(0);
    u
}

#[test]
fn each_format_prints_the_apis_tools_field_and_names_what_it_left_out() {
    let u = hostile_user();
    for (format, envelope) in [
        ("anthropic", "input_schema"),
        ("openai", "function"),
        ("openai-responses", "parameters"),
        ("openai-strict", "function"),
        ("gemini", "functionDeclarations"),
    ] {
        let run = u.run(&["tools", "hostile", "--format", format]);
        run.code(0);
        let tools = run.json();
        let list = tools
            .as_array()
            .unwrap_or_else(|| panic!("{format}: {tools}"));
        assert!(!list.is_empty(), "{format}");
        assert!(list[0].get(envelope).is_some(), "{format}: {}", list[0]);
        // A tool with a reference outside its schema is named on stderr, never sent.
        run.err_has(&format!(
            "({format}): left out: $ref `https://example.com/schema.json`"
        ));
        assert!(
            !run.stdout.contains("mcp_hostile_external_ref_"),
            "{format}"
        );
        assert!(run.stdout.contains("mcp_hostile_ref_defs_"), "{format}");
    }
    // `--json` changes nothing: the document is the API's already.
    let plain = u.run(&["tools", "hostile", "--format", "gemini"]);
    let json = u.run(&["--json", "tools", "hostile", "--format", "gemini"]);
    assert_eq!(plain.json(), json.json());
}

#[test]
fn an_unknown_format_is_a_usage_error() {
    let u = User::new();
    u.run(&["tools", "--format", "cohere"])
        .code(2)
        .err_has("openai-strict");
}
