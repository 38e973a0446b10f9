//! The task client's decisions: which calls run as tasks, how often a task is polled, what
//! is kept of it.

use super::*;
#[cfg(feature = "stdio")]
use crate::entry::{Connect, ServerEntry};

fn runs(era: Era, capabilities: Value) -> bool {
    runs_tasks(era, &serde_json::from_value(capabilities).unwrap())
}

#[cfg(feature = "stdio")]
fn entry() -> ServerEntry {
    ServerEntry::new(
        "s",
        Connect::Stdio(mcp_stdio::StdioConfig::new(
            "s",
            "true",
            Vec::<String>::new(),
        )),
    )
}

// Each era reads its own declaration: 2025-11-25 `tasks.requests.tools.call`, 2026-07-28 the
// extension; neither counts for the other, and `tasks: {}` alone offers no task calls.
#[test]
fn each_era_reads_its_own_task_declaration() {
    let old = json!({"tasks": {"requests": {"tools": {"call": {}}}}});
    let new = json!({"extensions": {TASKS_EXTENSION_ID: {}}});
    assert!(runs(Era::Handshake, old.clone()));
    assert!(runs(Era::Stateless, new.clone()));
    assert!(!runs(Era::Handshake, new));
    assert!(!runs(Era::Stateless, old));
    assert!(!runs(Era::Handshake, json!({"tasks": {}})));
}

// Required always (when the server runs tasks: `server_runs_tasks`, above); optional when the
// entry says so or the caller waits longer than the request timeout; forbidden never.
#[cfg(feature = "stdio")]
#[test]
fn which_calls_run_as_tasks() {
    let mut e = entry();
    e.request_timeout = Duration::from_secs(30);
    let long = Some(Duration::from_secs(31));
    let short = Some(Duration::from_secs(30));
    assert!(wants(&e, &TaskSupport::Required, None));
    assert!(!wants(&e, &TaskSupport::Optional, None));
    assert!(!wants(&e, &TaskSupport::Optional, short));
    assert!(wants(&e, &TaskSupport::Optional, long));
    assert!(!wants(&e, &TaskSupport::Forbidden, long));
    e.optional_tools_as_tasks = true;
    assert!(wants(&e, &TaskSupport::Optional, None));
    assert!(!wants(&e, &TaskSupport::Forbidden, None));
}

fn seen(poll: Option<u64>) -> Seen {
    Seen {
        task_id: "t".into(),
        status: TaskStatus::Working,
        status_message: None,
        ttl_ms: Some(1500),
        poll_interval_ms: poll,
        result: None,
        error: None,
        input_requests: BTreeMap::new(),
    }
}

// The server's interval is followed within bounds: 0 is not a busy loop, an hour is not a
// stall.
#[test]
fn the_poll_interval_is_the_servers_within_bounds() {
    assert_eq!(seen(Some(250)).poll_interval(), Duration::from_millis(250));
    assert_eq!(seen(Some(0)).poll_interval(), MIN_POLL);
    assert_eq!(seen(Some(3_600_000)).poll_interval(), MAX_POLL);
    assert_eq!(seen(None).poll_interval(), DEFAULT_POLL);
}

// A task's expiry is its creation plus its ttl, rounded up to the second, and kept across
// updates; a status message is cleaned of escapes.
#[test]
fn a_record_keeps_its_creation_and_expiry() {
    let mut first = seen(None);
    first.status_message = Some("\u{1b}[31mred\u{1b}[0m".into());
    let record = record_of("s", "build", &first, None);
    assert_eq!(record.expires, Some(record.created + 2));
    assert_eq!(record.status_message.as_deref(), Some("red"));
    let mut before = record.clone();
    before.created -= 100;
    let mut later = seen(None);
    later.status = TaskStatus::Completed;
    let next = record_of("s", "other", &later, Some(&before));
    assert_eq!(next.created, before.created);
    assert_eq!(next.tool, "build");
    assert_eq!(next.expires, Some(before.created + 2));
    assert_eq!(next.state, TaskStatus::Completed);
}
