//! The gateway's own tasks across replicas, through the built binary: replicas of `mcp-host
//! serve --gateway FILE --http` sharing a `cluster` key and a `store`. A task a handshake
//! client starts at replica A is found, listed, awaited and cancelled at replica B, by its
//! session only; Redis holds neither the session id nor the task id; and once A is killed and
//! its heartbeat has lapsed, B reports A's unfinished task failed instead of `working` for
//! ever. In 2026-07-28 (meta mode's `call-tool` run as a task) the same holds for a task
//! known by its id, and with Redis gone the other replica says so, naming Redis. A child of
//! `redis.rs` (its redis-server), starting replicas with `redis_sessions.rs`'s `Replica`.

use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use mcp_host::redis::Reply;
use mcp_testkit::TempDir;
use serde_json::{Value, json};

use super::RedisServer;
use super::sessions::{Replica, keys, shared_file};

/// The JSON-RPC answer in `body` (a JSON body, or the SSE event that carries it).
fn answer(body: &str) -> Value {
    if let Ok(value) = serde_json::from_str::<Value>(body) {
        return value;
    }
    body.lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter_map(|d| serde_json::from_str::<Value>(d).ok())
        .find(|v| v.get("id").is_some())
        .unwrap_or_else(|| panic!("no answer in {body}"))
}

fn rpc(at: &Replica, session: &str, method: &str, params: Value) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 9, "method": method, "params": params}).to_string();
    let (status, _, text) = at.send("POST", Some(session), &body);
    assert_eq!(status, 200, "{method}: {text}");
    answer(&text)
}

/// `tasks/get` at `at` until the task reads `status` (the replica that runs it writes its
/// changes to Redis as they happen), for 30 s at most.
fn get_until(at: &Replica, session: &str, id: &str, status: &str) -> Value {
    let started = Instant::now();
    loop {
        let got = rpc(at, session, "tasks/get", json!({"taskId": id}));
        if got["result"]["status"] == status {
            return got;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "task never {status}: {got}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A task of `tool` started at `at`: its id.
fn start_task(at: &Replica, session: &str, tool: &str, arguments: Value) -> String {
    let started = rpc(
        at,
        session,
        "tools/call",
        json!({"name": tool, "arguments": arguments, "task": {}}),
    );
    started["result"]["task"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("no task: {started}"))
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_started_at_one_replica_is_served_by_another_and_fails_when_its_replica_dies() {
    tokio::task::spawn_blocking(|| {
        let redis = RedisServer::start();
        let dir = TempDir::new("redis-tasks");
        let file = shared_file(dir.path(), "passthrough", redis.port);
        let (mut a, b) = (
            Replica::start(&file, dir.path()),
            Replica::start(&file, dir.path()),
        );
        let mine = a.initialize();
        let other = b.initialize();
        // The upstream joins in the background: call until it answers.
        let started = Instant::now();
        loop {
            let called = rpc(
                &a,
                &mine,
                "tools/call",
                json!({"name": "echo", "arguments": {"message": "ready"}}),
            );
            if called["result"]["content"][0]["text"] == "ready" {
                break;
            }
            assert!(started.elapsed() < Duration::from_secs(30), "{called}");
            std::thread::sleep(Duration::from_millis(100));
        }

        // A task that completes and one that runs until cancelled, both at A.
        let done = start_task(&a, &mine, "echo", json!({"message": "made at A"}));
        let hung = start_task(&a, &mine, "hang", json!({}));
        // At B, for the same session: found, its result fetched, both listed.
        get_until(&b, &mine, &done, "completed");
        let result = rpc(&b, &mine, "tasks/result", json!({"taskId": done}));
        assert_eq!(
            result["result"]["content"][0]["text"], "made at A",
            "{result}"
        );
        assert_eq!(
            result["result"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"],
            json!(done)
        );
        get_until(&b, &mine, &hung, "working");
        let listed = rpc(&b, &mine, "tasks/list", json!({}));
        let ids: Vec<&str> = listed["result"]["tasks"]
            .as_array()
            .unwrap_or_else(|| panic!("{listed}"))
            .iter()
            .filter_map(|t| t["taskId"].as_str())
            .collect();
        assert!(
            ids.contains(&done.as_str()) && ids.contains(&hung.as_str()),
            "{listed}"
        );
        // Another session, even at the replica that answers for them, sees neither.
        let theirs = rpc(&b, &other, "tasks/get", json!({"taskId": done}));
        assert_eq!(theirs["error"]["code"], -32602, "{theirs}");
        let theirs = rpc(&b, &other, "tasks/list", json!({}));
        assert_eq!(theirs["result"]["tasks"], json!([]), "{theirs}");
        let theirs = rpc(&b, &other, "tasks/cancel", json!({"taskId": hung}));
        assert_eq!(theirs["error"]["code"], -32602, "{theirs}");

        // Cancelled at B: relayed to A, whose own answer says so.
        let cancelled = rpc(&b, &mine, "tasks/cancel", json!({"taskId": hung}));
        assert_eq!(cancelled["result"]["status"], "cancelled", "{cancelled}");
        get_until(&a, &mine, &hung, "cancelled");
        get_until(&b, &mine, &hung, "cancelled");

        // Redis holds digests, never a session id or a task id.
        let all = keys(&redis, "*");
        assert!(
            all.iter().any(|k| k.starts_with("mcp-host:task:")),
            "{all:?}"
        );
        assert!(
            all.iter().any(|k| k.starts_with("mcp-host:tasks-of:")),
            "{all:?}"
        );
        for secret in [&mine, &other, &done, &hung] {
            assert!(!all.iter().any(|k| k.contains(secret.as_str())), "{all:?}");
        }

        // A dies with a task running; once its heartbeat has lapsed (deleted here, as its
        // expiry would), B reports the task failed, saying why.
        let lost = start_task(&a, &mine, "hang", json!({}));
        get_until(&b, &mine, &lost, "working");
        a.child.kill().unwrap();
        a.child.wait().unwrap();
        let beats = keys(&redis, "mcp-host:replica:*");
        assert_eq!(beats.len(), 2, "{beats:?}");
        for beat in &beats {
            // B's own is written again within 5 s; it never doubts itself meanwhile.
            redis.client("").del(beat).unwrap();
        }
        get_until(&b, &mine, &lost, "failed");
        let result = rpc(&b, &mine, "tasks/result", json!({"taskId": lost}));
        let message = result["error"]["message"].as_str().unwrap_or_default();
        assert!(
            message.contains("replica that ran this task stopped"),
            "{result}"
        );
    })
    .await
    .unwrap();
}

/// A 2026-07-28 request (no session) at `at`, declaring the tasks extension: the status and
/// the JSON-RPC answer.
fn stateless(at: &Replica, method: &str, name: &str, mut params: Value) -> (u16, Value) {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities":
            {"elicitation": {}, "extensions": {"io.modelcontextprotocol/tasks": {}}},
    });
    let body = json!({"jsonrpc": "2.0", "id": 5, "method": method, "params": params}).to_string();
    let mut stream = TcpStream::connect(&at.addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    write!(
        stream,
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n\
         Mcp-Method: {method}\r\nMcp-Name: {name}\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n{body}",
        at.addr,
        body.len()
    )
    .unwrap();
    let mut all = String::new();
    stream.read_to_string(&mut all).unwrap();
    let (head, body) = all.split_once("\r\n\r\n").unwrap_or((&all, ""));
    (head[9..12].parse().unwrap(), answer(body))
}

/// `tasks/get` (2026-07-28) at `at` until the task reads `status`, for 30 s at most.
fn stateless_until(at: &Replica, id: &str, status: &str) -> Value {
    let started = Instant::now();
    loop {
        let (_, got) = stateless(at, "tasks/get", id, json!({"taskId": id}));
        if got["result"]["status"] == status {
            return got;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "task never {status}: {got}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2026_task_is_answered_and_cancelled_at_another_replica_and_redis_down_is_said() {
    tokio::task::spawn_blocking(|| {
        let mut redis = RedisServer::start();
        let dir = TempDir::new("redis-tasks-2026");
        let file = shared_file(dir.path(), "meta", redis.port);
        let (a, b) = (
            Replica::start(&file, dir.path()),
            Replica::start(&file, dir.path()),
        );
        // Meta mode's call-tool runs as a task of the gateway's for a client that declared
        // the extension; the upstream joins in the background, so until it does the task
        // fails: start again until one completes.
        let call_at = |at: &Replica, tool: &str, arguments: Value| {
            let (status, started) = stateless(
                at,
                "tools/call",
                "call-tool",
                json!({"name": "call-tool", "arguments":
                    {"server": "fake", "tool": tool, "arguments": arguments}}),
            );
            assert_eq!(status, 200, "{started}");
            assert_eq!(started["result"]["resultType"], "task", "{started}");
            started["result"]["taskId"].as_str().unwrap().to_owned()
        };
        let call = |tool: &str, arguments: Value| call_at(&a, tool, arguments);
        let started = Instant::now();
        let done = loop {
            let id = call("echo", json!({"message": "made at A"}));
            let ended = loop {
                let (_, got) = stateless(&a, "tasks/get", &id, json!({"taskId": id}));
                if got["result"]["status"] != "working" {
                    break got;
                }
                std::thread::sleep(Duration::from_millis(50));
            };
            if ended["result"]["status"] == "completed"
                && ended["result"]["result"]["isError"] != true
            {
                break id;
            }
            assert!(started.elapsed() < Duration::from_secs(30), "{ended}");
            std::thread::sleep(Duration::from_millis(200));
        };
        // At B: the result inlined, as at A.
        let got = stateless_until(&b, &done, "completed");
        let text = got["result"]["result"]["content"][0]["text"]
            .as_str()
            .unwrap();
        assert!(text.contains("made at A"), "{got}");

        // A task cancelled at B is cancelled at A.
        let hung = call("hang", json!({}));
        stateless_until(&b, &hung, "working");
        let (status, ack) = stateless(&b, "tasks/cancel", &hung, json!({"taskId": hung}));
        assert_eq!(status, 200, "{ack}");
        assert!(
            ack["result"].is_object() && ack.get("error").is_none(),
            "{ack}"
        );
        stateless_until(&a, &hung, "cancelled");

        // A task whose upstream asks its client: the question is read at B, answered at B
        // (tasks/update, relayed to A), and the task at A ends with that answer.
        let asking = call("elicit", json!({}));
        let waiting = stateless_until(&b, &asking, "input_required");
        let key = waiting["result"]["inputRequests"]
            .as_object()
            .and_then(|requests| requests.keys().next())
            .unwrap_or_else(|| panic!("{waiting}"))
            .clone();
        let answer = json!({"action": "accept", "content": {"name": "answered at B"}});
        let (status, ack) = stateless(
            &b,
            "tasks/update",
            &asking,
            json!({"taskId": asking, "inputResponses": {key: answer}}),
        );
        assert_eq!(status, 200, "{ack}");
        let ended = stateless_until(&a, &asking, "completed");
        assert!(ended.to_string().contains("answered at B"), "{ended}");

        // A task whose replica is gone (C, killed; its heartbeat has not lapsed yet): an
        // update relayed there reaches nobody, and B records the task failed at once, as
        // for a cancel, instead of leaving it waiting for an answer nobody will take.
        let mut c = Replica::start(&file, dir.path());
        let started = Instant::now();
        let lost = loop {
            let id = call_at(&c, "elicit", json!({}));
            let got = loop {
                let (_, got) = stateless(&c, "tasks/get", &id, json!({"taskId": id}));
                if got["result"]["status"] != "working" {
                    break got;
                }
                std::thread::sleep(Duration::from_millis(50));
            };
            if got["result"]["status"] == "input_required" {
                break id;
            }
            assert!(started.elapsed() < Duration::from_secs(30), "{got}");
            std::thread::sleep(Duration::from_millis(200));
        };
        let waiting = stateless_until(&b, &lost, "input_required");
        let key = waiting["result"]["inputRequests"]
            .as_object()
            .and_then(|requests| requests.keys().next())
            .unwrap_or_else(|| panic!("{waiting}"))
            .clone();
        c.child.kill().unwrap();
        c.child.wait().unwrap();
        let answer = json!({"action": "accept", "content": {"name": "never heard"}});
        let (status, ack) = stateless(
            &b,
            "tasks/update",
            &lost,
            json!({"taskId": lost, "inputResponses": {key: answer}}),
        );
        assert_eq!(status, 200, "{ack}");
        let (_, got) = stateless(&b, "tasks/get", &lost, json!({"taskId": lost}));
        assert_eq!(got["result"]["status"], "failed", "{got}");

        // An id nobody issued is unknown at B, as at A.
        let made_up = "00000000000000000000000000000000";
        let (_, unknown) = stateless(&b, "tasks/get", made_up, json!({"taskId": made_up}));
        assert_eq!(unknown["error"]["code"], -32602, "{unknown}");

        // Redis gone: B cannot say, and says why, naming Redis and never the password.
        let _ = redis.child.kill();
        let _ = redis.child.wait();
        let (_, down) = stateless(&b, "tasks/get", &done, json!({"taskId": done}));
        assert_eq!(down["error"]["code"], -32603, "{down}");
        let message = down["error"]["message"].as_str().unwrap();
        assert!(
            message.contains(&format!("Redis at 127.0.0.1:{}", redis.port)),
            "{message}"
        );
        assert!(!message.contains(super::ROOT_PASSWORD), "{message}");
        // A still answers for its own task, and runs new ones; that their changes cannot be
        // written is logged once, naming Redis, not once per change.
        let (_, own) = stateless(&a, "tasks/get", &done, json!({"taskId": done}));
        assert_eq!(own["result"]["status"], "completed", "{own}");
        let later = call("echo", json!({"message": "while Redis is down"}));
        stateless_until(&a, &later, "completed");
        let log = a.log();
        let said: Vec<&str> = log
            .lines()
            .filter(|l| l.contains("(said once until Redis answers again)"))
            .collect();
        assert_eq!(said.len(), 1, "{log}");
        assert!(
            said[0].contains(&format!("Redis at 127.0.0.1:{}", redis.port)),
            "{log}"
        );
        assert!(!log.contains(super::ROOT_PASSWORD), "{log}");
    })
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_failed_for_a_replica_cut_off_stays_failed_when_that_replica_ends_it_later() {
    tokio::task::spawn_blocking(|| {
        let redis = RedisServer::start();
        let dir = TempDir::new("redis-tasks-ended");
        let file = shared_file(dir.path(), "passthrough", redis.port);
        let (a, b) = (
            Replica::start(&file, dir.path()),
            Replica::start(&file, dir.path()),
        );
        let mine = a.initialize();
        let started = Instant::now();
        loop {
            let called = rpc(
                &a,
                &mine,
                "tools/call",
                json!({"name": "echo", "arguments": {"message": "ready"}}),
            );
            if called["result"]["content"][0]["text"] == "ready" {
                break;
            }
            assert!(started.elapsed() < Duration::from_secs(30), "{called}");
            std::thread::sleep(Duration::from_millis(100));
        }
        let hung = start_task(&a, &mine, "hang", json!({}));
        get_until(&b, &mine, &hung, "working");

        // A frozen (as if cut off from Redis) and its heartbeat gone: B records the task
        // failed.
        let pid = nix::unistd::Pid::from_raw(i32::try_from(a.child.id()).unwrap());
        nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGSTOP).unwrap();
        for beat in keys(&redis, "mcp-host:replica:*") {
            // B's own is written again within 5 s; it never doubts itself meanwhile.
            redis.client("").del(&beat).unwrap();
        }
        get_until(&b, &mine, &hung, "failed");

        // A back, ending the task its own way: cancelled there, as A's own answer says.
        nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGCONT).unwrap();
        // Both heartbeats back (each replica writes its own within 5 s) before A starts
        // another task: with A's beat still gone, B would rightly report that one failed too.
        let started = Instant::now();
        while keys(&redis, "mcp-host:replica:*").len() < 2 {
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "no heartbeats back"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        let cancelled = rpc(&a, &mine, "tasks/cancel", json!({"taskId": hung}));
        assert_eq!(cancelled["result"]["status"], "cancelled", "{cancelled}");
        // A's writer takes tasks in the order their changes came: once a later task reads
        // completed at B, A's write of the cancel was attempted.
        let quick = start_task(&a, &mine, "echo", json!({"message": "after"}));
        get_until(&b, &mine, &quick, "completed");
        // The record B wrote first stands: an ended task does not change.
        let got = rpc(&b, &mine, "tasks/get", json!({"taskId": hung}));
        assert_eq!(got["result"]["status"], "failed", "{got}");
        let log = a.log();
        let refused: Vec<&str> = log
            .lines()
            .filter(|l| l.contains("another replica recorded it ended first"))
            .collect();
        assert_eq!(refused.len(), 1, "{log}");
        assert!(refused[0].contains("cancelled"), "{log}");
        // The markers that keep ended tasks ended (the hung task's and the quick one's) are
        // named by digests and hold only `1`: neither a task id nor a status.
        let ended = keys(&redis, "mcp-host:task-ended:*");
        assert_eq!(ended.len(), 2, "{ended:?}");
        for key in &ended {
            assert!(!key.contains(&hung) && !key.contains(&quick), "{key}");
            let value = redis.client("").command(&[b"GET", key.as_bytes()]).unwrap();
            assert_eq!(value, Reply::Bulk(Some(b"1".to_vec())), "{key}");
        }
    })
    .await
    .unwrap();
}

/// `tasks/result` for task `id` at `at`, on a connection of its own, read until the gateway's
/// `elicitation/create` request on its stream: the connection, what was read, the request's id.
fn result_stream(at: &Replica, session: &str, id: &str) -> (TcpStream, String, String) {
    let body = json!({"jsonrpc": "2.0", "id": 11, "method": "tasks/result",
        "params": {"taskId": id}})
    .to_string();
    let mut stream = TcpStream::connect(&at.addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    write!(
        stream,
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nMcp-Session-Id: {session}\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        at.addr,
        body.len()
    )
    .unwrap();
    let needle = r#""method":"elicitation/create""#;
    let mut read = String::new();
    let mut buf = [0u8; 4096];
    while !read.contains(needle) {
        let n = stream
            .read(&mut buf)
            .unwrap_or_else(|e| panic!("no elicitation/create came ({e}): {read}"));
        assert!(n > 0, "tasks/result ended without asking: {read}");
        read.push_str(std::str::from_utf8(&buf[..n]).unwrap());
    }
    let event = read
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter_map(|d| serde_json::from_str::<Value>(d).ok())
        .find(|v| v["method"] == "elicitation/create")
        .unwrap_or_else(|| panic!("no request in {read}"));
    assert_eq!(
        event["params"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"],
        json!(id),
        "{event}"
    );
    let asked = event["id"]
        .as_str()
        .unwrap_or_else(|| panic!("no string id in {event}"))
        .to_owned();
    (stream, read, asked)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handshake_tasks_question_goes_on_a_tasks_result_at_another_replica() {
    tokio::task::spawn_blocking(|| {
        let redis = RedisServer::start();
        let dir = TempDir::new("redis-task-questions");
        let file = shared_file(dir.path(), "passthrough", redis.port);
        let (a, b, c) = (
            Replica::start(&file, dir.path()),
            Replica::start(&file, dir.path()),
            Replica::start(&file, dir.path()),
        );
        // A client that may be asked (elicitation), with no standalone stream anywhere.
        let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}},
            "clientInfo": {"name": "redis-task-questions", "version": "0"}}})
        .to_string();
        let (status, mine, body) = a.send("POST", None, &init);
        assert_eq!(status, 200, "{body}");
        let mine = mine.expect("a session id");
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        assert_eq!(a.send("POST", Some(&mine), &initialized.to_string()).0, 202);
        let started = Instant::now();
        loop {
            let called = rpc(
                &a,
                &mine,
                "tools/call",
                json!({"name": "echo", "arguments": {"message": "ready"}}),
            );
            if called["result"]["content"][0]["text"] == "ready" {
                break;
            }
            assert!(started.elapsed() < Duration::from_secs(30), "{called}");
            std::thread::sleep(Duration::from_millis(100));
        }

        // A task at A whose upstream asks its client: nothing at A can carry the question, so
        // the task waits for it, `input_required` at B too.
        let id = start_task(&a, &mine, "elicit", json!({}));
        get_until(&b, &mine, &id, "input_required");
        // B's `tasks/result` carries the question, tied to the task, under an id naming a
        // replica.
        let (mut waiting, mut read, asked) = result_stream(&b, &mine, &id);
        assert!(
            asked.split_once('.').is_some_and(|(r, _)| r.len() == 16),
            "{asked}"
        );
        // The answer, POSTed at C, reaches A, where the upstream's request waits.
        let answer = json!({"jsonrpc": "2.0", "id": asked,
            "result": {"action": "accept", "content": {"name": "answered at C"}}});
        let (status, _, body) = c.send("POST", Some(&mine), &answer.to_string());
        assert_eq!(status, 202, "{body}");
        // B's `tasks/result` ends with the task's result, which holds the answer.
        let mut rest = String::new();
        waiting
            .read_to_string(&mut rest)
            .expect("tasks/result did not end: the answer did not reach the task");
        read.push_str(&rest);
        let result = read
            .lines()
            .filter_map(|l| l.strip_prefix("data: "))
            .filter_map(|d| serde_json::from_str::<Value>(d).ok())
            .find(|v| v["id"] == 11)
            .unwrap_or_else(|| panic!("no answer in {read}"));
        let text = result["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_default();
        assert!(text.contains("answered at C"), "{result}");
        assert_eq!(
            result["result"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"],
            json!(id)
        );
        // The stream carried the question once.
        assert_eq!(
            read.matches(r#""method":"elicitation/create""#).count(),
            1,
            "{read}"
        );
        // At A, where it ran, the task completed with that answer.
        let done = get_until(&a, &mine, &id, "completed");
        assert_eq!(done["result"]["status"], "completed");
        let at_a = rpc(&a, &mine, "tasks/result", json!({"taskId": id}));
        assert_eq!(at_a["result"]["content"][0]["text"], json!(text), "{at_a}");
    })
    .await
    .unwrap();
}

/// The members of `key`'s set in `redis`.
fn members(redis: &RedisServer, key: &str) -> Vec<String> {
    match redis
        .client("")
        .command(&[b"SMEMBERS", key.as_bytes()])
        .unwrap()
    {
        Reply::Array(Some(members)) => members
            .into_iter()
            .filter_map(|m| match m {
                Reply::Bulk(Some(m)) => String::from_utf8(m).ok(),
                _ => None,
            })
            .collect(),
        other => panic!("{other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sessions_task_set_lets_go_of_tasks_whose_records_are_gone() {
    tokio::task::spawn_blocking(|| {
        let redis = RedisServer::start();
        let dir = TempDir::new("redis-task-set");
        let file = shared_file(dir.path(), "passthrough", redis.port);
        let (a, b) = (
            Replica::start(&file, dir.path()),
            Replica::start(&file, dir.path()),
        );
        let mine = a.initialize();
        let started = Instant::now();
        loop {
            let called = rpc(
                &a,
                &mine,
                "tools/call",
                json!({"name": "echo", "arguments": {"message": "ready"}}),
            );
            if called["result"]["content"][0]["text"] == "ready" {
                break;
            }
            assert!(started.elapsed() < Duration::from_secs(30), "{called}");
            std::thread::sleep(Duration::from_millis(100));
        }
        // A task at A; once B reads it completed, A wrote its last record, and its set
        // (written just after) lists it, by a digest.
        let first = start_task(&a, &mine, "echo", json!({"message": "first"}));
        get_until(&b, &mine, &first, "completed");
        let until = |what: &str, done: &dyn Fn(&[String]) -> bool| {
            let started = Instant::now();
            loop {
                let sets = keys(&redis, "mcp-host:tasks-of:*");
                assert!(sets.len() <= 1, "{sets:?}");
                let now = sets
                    .first()
                    .map(|set| members(&redis, set))
                    .unwrap_or_default();
                if done(&now) {
                    return (sets, now);
                }
                assert!(
                    started.elapsed() < Duration::from_secs(30),
                    "{what}: {now:?}"
                );
                std::thread::sleep(Duration::from_millis(20));
            }
        };
        let (sets, listed) = until("the first task listed", &|m| !m.is_empty());
        assert_eq!(listed.len(), 1, "{listed:?}");
        let old = listed[0].clone();
        assert!(!old.contains(&first), "a digest, not the id: {old}");
        // Its record gone (as when it expires), the next task's writes let it go.
        let gone = format!("mcp-host:task:{old}");
        let deleted = redis
            .client("")
            .command(&[b"DEL", gone.as_bytes()])
            .unwrap();
        assert_eq!(deleted, Reply::Integer(1));
        let second = start_task(&a, &mine, "echo", json!({"message": "second"}));
        get_until(&b, &mine, &second, "completed");
        let (_, left) = until("the first let go", &|m| m.len() == 1 && !m.contains(&old));
        // And one whose record goes leaves at the session's next `tasks/list` (at A, which
        // still lists it from its memory).
        let gone = format!("mcp-host:task:{}", left[0]);
        redis
            .client("")
            .command(&[b"DEL", gone.as_bytes()])
            .unwrap();
        let listed = rpc(&a, &mine, "tasks/list", json!({}));
        let ids: Vec<&str> = listed["result"]["tasks"]
            .as_array()
            .unwrap_or_else(|| panic!("{listed}"))
            .iter()
            .filter_map(|t| t["taskId"].as_str())
            .collect();
        assert_eq!(ids, [first.as_str(), second.as_str()], "{listed}");
        assert_eq!(members(&redis, &sets[0]), Vec::<String>::new());
    })
    .await
    .unwrap();
}
