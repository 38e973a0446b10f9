//! A key in a server's URL path (`https://host/mcp/<key>/sse`, as some hosted servers hand out)
//! is never shown: not by `list`, `get`, `status` or `test`, nor in the errors they print.

use super::*;

const KEY: &str = "sk-live-9f8e7d6c5b4a3b2a";

#[test]
fn a_key_in_the_url_path_is_shown_nowhere() {
    let user = User::new();
    // Port 9 on loopback refuses at once: the connection fails and says so.
    user.write_global(&serde_json::json!({"version": 1, "mcp": {"servers": {
        "z": {"url": format!("http://127.0.0.1:9/mcp/{KEY}/sse")},
    }}}));
    let list = user.run(&["list"]);
    list.code(0)
        .out_has("http://127.0.0.1:9/mcp/[redacted]/sse");
    let runs = [
        list,
        user.run(&["--json", "list"]),
        user.run(&["get", "z"]),
        user.run(&["--json", "status"]),
        user.run(&["test", "z"]),
    ];
    // The runs did show the server (so a missing key is not a missing server).
    assert!(runs[1].stdout.contains("127.0.0.1:9"), "{:#?}", runs[1]);
    assert!(runs[2].stdout.contains("127.0.0.1:9"), "{:#?}", runs[2]);
    assert!(runs[3].stdout.contains("\"z\""), "{:#?}", runs[3]);
    assert_ne!(runs[4].code, 0, "{:#?}", runs[4]);
    for run in &runs {
        assert!(
            !run.stdout.contains(KEY) && !run.stderr.contains(KEY),
            "{run:#?}"
        );
    }
}
