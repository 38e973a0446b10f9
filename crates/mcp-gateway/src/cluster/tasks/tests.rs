//! The task share's keys, records and errors, without a running Redis.

#![allow(clippy::unwrap_used)]

use super::*;
use mcp_protocol::{JsonObject, Request, RequestId};

/// A share that is never started: no threads, Redis where nothing listens.
fn share(url: &str) -> TaskShare {
    let seal = SessionSeal::new(&[[3u8; 32]], Duration::from_secs(60)).unwrap();
    TaskShare {
        redis: Redis::new(url).unwrap(),
        prefix: "gw".to_owned(),
        replica: seal.replica().to_owned(),
        seal: Arc::new(seal),
        writes: Arc::default(),
    }
}

fn stored(result: JsonObject) -> Stored {
    let info = mcp_protocol::schema::TaskInfo::new(
        "0123456789abcdef0123456789abcdef".to_owned(),
        TaskStatus::Completed,
        "2026-01-01T00:00:00.000Z".to_owned(),
        "2026-01-01T00:00:01.000Z".to_owned(),
    );
    let mut task = DetailedTask::from_task(&info);
    task.result = Some(result);
    Stored {
        replica: "r".to_owned(),
        owner: Some("owner-digest".to_owned()),
        task,
        too_large: None,
    }
}

#[test]
fn keys_name_digests_and_a_record_opens_under_its_own_key_only() {
    let share = share("redis://127.0.0.1:1");
    let id = "0123456789abcdef0123456789abcdef";
    let key = share.task_key(id);
    assert!(key.starts_with("gw:task:") && !key.contains(id), "{key}");
    let mut result = JsonObject::new();
    result.insert(
        "content".to_owned(),
        json!([{"type": "text", "text": "secret words"}]),
    );
    let sealed = share.sealed(&key, &stored(result)).unwrap();
    assert!(!String::from_utf8_lossy(&sealed).contains("secret words"));
    let opened = share.open(&key, &sealed).unwrap();
    assert_eq!(opened.owner.as_deref(), Some("owner-digest"));
    assert_eq!(
        opened.task.result.unwrap()["content"][0]["text"],
        "secret words"
    );
    // Under another task's key it is nothing.
    assert!(share.open(&share.task_key("another"), &sealed).is_none());
}

#[test]
fn a_result_over_the_bound_is_kept_without_it_and_said_so() {
    let share = share("redis://127.0.0.1:1");
    let key = share.task_key("t");
    let mut result = JsonObject::new();
    result.insert("big".to_owned(), json!("x".repeat(MAX_RECORD)));
    let sealed = share.sealed(&key, &stored(result)).unwrap();
    assert!(sealed.len() < 4096, "{} bytes", sealed.len());
    let opened = share.open(&key, &sealed).unwrap();
    assert_eq!(opened.task.status, TaskStatus::Completed);
    assert!(opened.task.result.is_none());
    let size = opened.too_large.unwrap();
    assert!(size > u64::try_from(MAX_RECORD).unwrap());
    let said = get_answer(&opened, true).unwrap_err();
    assert!(
        said.message
            .contains("only the gateway replica that ran it"),
        "{said:?}"
    );
}

#[tokio::test]
async fn redis_down_is_an_error_naming_redis_and_the_phase_never_the_password() {
    let share = share("redis://:hunter2-pw@127.0.0.1:1/0");
    let e = share.fetch("t").await.unwrap_err();
    assert_eq!(e.code, code::INTERNAL_ERROR);
    assert!(
        e.message.contains("Redis at 127.0.0.1:1/0"),
        "{}",
        e.message
    );
    assert!(e.message.starts_with("GET: "), "{}", e.message);
    assert!(!e.message.contains("hunter2"), "{}", e.message);
}

#[test]
fn while_the_writer_is_behind_only_each_tasks_latest_change_waits() {
    let pending = Pending::default();
    for change in 0..1000 {
        pending.push("t".to_owned(), change);
    }
    pending.push("u".to_owned(), 7);
    pending.push("t".to_owned(), 1000);
    // The oldest task first, with its latest change; then the next; then nothing waits.
    assert_eq!(pending.next(Duration::ZERO), Some(1000));
    assert_eq!(pending.next(Duration::ZERO), Some(7));
    assert_eq!(pending.next(Duration::ZERO), None);
    pending.push("t".to_owned(), 1001);
    assert_eq!(pending.next(Duration::ZERO), Some(1001));
}

/// What a session sent, whatever stream it went on.
#[derive(Clone, Default)]
struct Sent(Arc<std::sync::Mutex<Vec<mcp_protocol::Message>>>);

impl mcp_session::ServerTransport for Sent {
    fn send(&self, message: mcp_protocol::Message, _related: Option<&RequestId>) {
        self.0.lock().unwrap().push(message);
    }
}

impl Sent {
    fn requests(&self) -> Vec<Request> {
        self.0
            .lock()
            .unwrap()
            .iter()
            .filter_map(|m| match m {
                mcp_protocol::Message::Request(r) => Some(r.clone()),
                _ => None,
            })
            .collect()
    }
}

struct Nothing;

impl mcp_session::Handler for Nothing {
    async fn handle(&self, _: ClientRequest, _: RequestContext) -> Result<RawJson, ErrorObject> {
        Err(ErrorObject::new(
            code::METHOD_NOT_FOUND,
            "nothing".to_owned(),
        ))
    }
}

#[tokio::test]
async fn a_records_questions_go_once_a_stream_and_only_those_naming_a_replica() {
    let sent = Sent::default();
    let config = mcp_protocol::ServerConfig::new(mcp_protocol::schema::Implementation::new(
        "t".to_owned(),
        "1".to_owned(),
    ));
    let core = mcp_session::ServerCore::new(config, Arc::new(Nothing), sent.clone());
    let mut stored = stored(JsonObject::new());
    stored.replica = "00aa00aa00aa00aa".to_owned();
    stored.task.status = TaskStatus::InputRequired;
    stored.task.result = None;
    let question: mcp_protocol::schema::InputRequest = serde_json::from_value(json!({
        "method": "elicitation/create",
        "params": {"message": "Your name?", "_meta": {"io.modelcontextprotocol/related-task":
            {"taskId": stored.task.task_id}}}
    }))
    .unwrap();
    stored.task.input_requests = Some(BTreeMap::from([
        ("00aa00aa00aa00aa.4".to_owned(), question.clone()),
        // An id naming no replica: its answer would stay wherever it reached.
        ("5".to_owned(), question.clone()),
    ]));
    let peer = core.peer();
    let mut carried = HashSet::new();
    carry(&stored, &peer, &mut carried);
    carry(&stored, &peer, &mut carried);
    let requests = sent.requests();
    assert_eq!(requests.len(), 1, "{requests:?}");
    assert_eq!(
        requests[0].id,
        RequestId::String("00aa00aa00aa00aa.4".to_owned())
    );
    assert_eq!(requests[0].method, "elicitation/create");
    assert_eq!(requests[0].params, question.params);
    // Another stream carries it too.
    carry(&stored, &peer, &mut HashSet::new());
    assert_eq!(sent.requests().len(), 2);
    // A record no longer waiting for input carries nothing.
    stored.task.status = TaskStatus::Working;
    carry(&stored, &peer, &mut HashSet::new());
    assert_eq!(sent.requests().len(), 2);
}

/// How many threads of this process a task share runs (no other test starts one).
fn share_threads() -> usize {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
        .filter(|name| name.starts_with("mcp-tasks-"))
        .count()
}

#[tokio::test]
async fn a_shares_threads_end_once_it_is_dropped() {
    let seal = SessionSeal::new(&[[3u8; 32]], Duration::from_secs(60)).unwrap();
    let tasks = Tasks::default();
    // Redis where nothing listens: the share starts all the same, and says so.
    let redis = Redis::new("redis://127.0.0.1:1").unwrap();
    let share = TaskShare::start(redis, "gw", Arc::new(seal), &tasks)
        .await
        .unwrap();
    // A new thread takes its name as it begins to run.
    let started = Instant::now();
    while share_threads() < 2 {
        assert!(started.elapsed() < Duration::from_secs(30), "never named");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(share_threads(), 2);
    drop(share);
    // The writer notices within a heartbeat's period, the listener within its pause.
    let started = Instant::now();
    while share_threads() > 0 {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "{} threads left",
            share_threads()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
