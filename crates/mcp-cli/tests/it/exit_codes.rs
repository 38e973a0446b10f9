//! One exit code per kind of failure, from the real binary: a script tells apart a usage
//! error, an unknown server, a server that did not start, a call the policy refused, and a
//! server that waits for a login (which a retry will not fix, but `mcp-host login` will).

use std::sync::Arc;

use mcp_testkit::fake_auth::{FakeAuth, FakeAuthOptions};

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_kind_of_failure_has_its_exit_code() {
    // An OAuth-protected server nobody has logged in to.
    let fake = FakeAuth::start(FakeAuthOptions::default()).await;
    let url = fake.url();
    let u = Arc::new(User::new());
    tokio::task::spawn_blocking(move || {
        // 2: usage.
        u.run(&["call", "--frobnicate"]).code(2);
        // 3: configuration (no such server).
        u.run(&["call", "ghost", "add"])
            .code(3)
            .err_has("no server `ghost` is configured");
        // 4: the server did not start.
        u.run(&["add", "missing", "--", "/nonexistent/server-binary"])
            .code(0);
        u.run(&["call", "missing", "add", "--yes"])
            .code(4)
            .err_has("server `missing` did not become ready");
        // 6: the policy refused the call; nothing was sent.
        u.add_demo("demo", "project");
        u.run(&["call", "demo", "add", "--args", r#"{"a": 2, "b": 3}"#])
            .code(6)
            .err_has("was denied");
        // 7: authorization required, for a call and for a listing, with the remedy.
        u.run(&["add", "secure", &url]).code(0);
        u.run(&["call", "secure", "add", "--yes"])
            .code(7)
            .err_has("server `secure` needs authorization")
            .err_has("mcp-host login secure");
        u.run(&["tools", "secure"])
            .code(7)
            .err_has("needs authorization");
        let v = u
            .run(&["call", "secure", "add", "--yes", "--json"])
            .code(7)
            .json();
        assert_eq!(v["error"]["kind"], "auth", "{v}");
        assert_eq!(v["error"]["exit_code"], 7, "{v}");
    })
    .await
    .unwrap();
}
