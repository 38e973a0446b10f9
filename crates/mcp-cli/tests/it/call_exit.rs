//! `call` ends once its answer is printed: it does not hold the person for a server's whole
//! polite shutdown (stdin closed, 2 s, SIGTERM, 2 s, SIGKILL). Counted, not timed: the fake
//! server ignores stdin's end and SIGTERM and logs each, and a `call` that waited for the
//! shutdown sequence would have sent it a SIGTERM before exiting.

use super::*;

/// A project with the fake server, deaf to stdin's end and to SIGTERM, logging to `log`.
fn stubborn(u: &User, log: &Path) {
    let fake = mcp_testkit::fake_server();
    u.run(&[
        "add",
        "stubborn",
        "--scope",
        "global",
        "--",
        fake.to_str().unwrap(),
        "--ignore-stdin-close",
        "--ignore-sigterm",
        "--log-requests",
        log.to_str().unwrap(),
    ])
    .code(0);
}

#[test]
fn call_exits_after_the_answer_without_waiting_for_a_stubborn_server() {
    let u = User::new();
    let log = u.home.path().join("requests.log");
    stubborn(&u, &log);

    // An answer: printed, exit 0.
    u.run(&[
        "call",
        "stubborn",
        "echo",
        "--yes",
        "--args",
        r#"{"message": "hello"}"#,
    ])
    .code(0)
    .out_has("hello");
    // A call that times out while the server sleeps for 30 s: exit 5.
    u.run(&[
        "call",
        "stubborn",
        "sleep",
        "--yes",
        "--timeout-ms",
        "500",
        "--args",
        r#"{"ms": 30000}"#,
    ])
    .code(5)
    .err_has("`sleep` timed out after");

    let seen = std::fs::read_to_string(&log).unwrap();
    // Presence first: both calls reached the server, which logs what it receives.
    assert_eq!(seen.matches("tools/call").count(), 2, "{seen}");
    // Neither process waited out the 2 s after closing stdin to send SIGTERM: each exited
    // and its server's keeper killed the group.
    assert!(!seen.contains("SIGTERM"), "{seen}");
}
