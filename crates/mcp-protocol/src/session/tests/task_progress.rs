//! A `tools/call` answered with a task keeps its progress token until the task reaches a
//! terminal status, in both eras, and no longer: a terminal `tasks/get` answer or status
//! notification, the task's time to live, and a bound on how many are kept end it.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::{
    client_config, connected_client, epoch, events, feed, sent, stateless_client, text_result,
};
use crate::jsonrpc::{RawJson, RequestId};
use crate::session::task_progress::KEPT_AT_MOST;
use crate::session::{ClientEvent, ClientSession, RequestOptions};

/// Sends a `tools/call` asking for progress; returns its id and its progress token.
fn call(client: &mut ClientSession, now: Instant) -> (RequestId, Value) {
    let params = RawJson::encode(&json!({"name": "build", "arguments": {}})).unwrap();
    let id = client
        .send_request(
            now,
            "tools/call",
            Some(params),
            RequestOptions::DEFAULT.with_progress(),
        )
        .unwrap();
    let frame = sent(client).pop().unwrap();
    (id, frame["params"]["_meta"]["progressToken"].clone())
}

/// The answer announcing task `task_id` as each era words it.
fn task_answer(stateless: bool, id: &RequestId, task_id: &str, ttl: u64) -> Value {
    let task = json!({"taskId": task_id, "status": "working",
        "createdAt": "2026-01-01T00:00:00Z", "lastUpdatedAt": "2026-01-01T00:00:00Z"});
    let mut result = task.clone();
    if stateless {
        result["resultType"] = json!("task");
        result["ttlMs"] = json!(ttl);
    } else {
        result = json!({"task": task});
        result["task"]["ttl"] = json!(ttl);
    }
    json!({"jsonrpc": "2.0", "id": serde_json::to_value(id).unwrap(), "result": result})
}

fn progress(client: &mut ClientSession, now: Instant, token: &Value, n: u64) -> Vec<RequestId> {
    feed(
        client,
        now,
        json!({"jsonrpc": "2.0", "method": "notifications/progress",
            "params": {"progressToken": token, "progress": n}}),
    );
    events(client)
        .into_iter()
        .filter_map(|e| match e {
            ClientEvent::Progress { id, .. } => Some(id),
            _ => None,
        })
        .collect()
}

fn eras() -> [(bool, ClientSession); 2] {
    [
        (false, connected_client(client_config())),
        (true, stateless_client(client_config())),
    ]
}

#[test]
fn a_task_keeps_its_calls_progress_token_until_a_terminal_status() {
    for (stateless, mut client) in eras() {
        let now = epoch();
        let (id, token) = call(&mut client, now);
        feed(&mut client, now, task_answer(stateless, &id, "t-1", 60_000));
        assert!(
            events(&mut client).iter().any(
                |e| matches!(e, ClientEvent::Response { id: r, outcome: Ok(_), .. } if *r == id)
            ),
            "stateless {stateless}: the task is the call's answer"
        );
        assert!(client.keeps_task_progress(&id));
        assert_eq!(progress(&mut client, now, &token, 1), vec![id.clone()]);

        // A tasks/get that shows the task still working keeps it; a terminal one ends it.
        for (status, kept) in [("working", true), ("completed", false)] {
            let get = client
                .send_request(
                    now,
                    "tasks/get",
                    Some(RawJson::encode(&json!({"taskId": "t-1"})).unwrap()),
                    RequestOptions::DEFAULT,
                )
                .unwrap();
            let _ = sent(&mut client);
            feed(
                &mut client,
                now,
                json!({"jsonrpc": "2.0", "id": serde_json::to_value(&get).unwrap(),
                    "result": {"taskId": "t-1", "status": status, "resultType": "complete",
                        "createdAt": "2026-01-01T00:00:00Z", "lastUpdatedAt": "2026-01-01T00:00:00Z"}}),
            );
            let _ = events(&mut client);
            assert_eq!(client.keeps_task_progress(&id), kept, "{status}");
        }
        assert!(progress(&mut client, now, &token, 2).is_empty());
    }
}

#[test]
fn a_status_notification_the_ttl_and_the_bound_end_a_kept_token() {
    for (stateless, mut client) in eras() {
        let now = epoch();
        // A terminal status notification ends it.
        let (id, token) = call(&mut client, now);
        feed(&mut client, now, task_answer(stateless, &id, "t-n", 60_000));
        let _ = events(&mut client);
        assert_eq!(progress(&mut client, now, &token, 1), vec![id.clone()]);
        let method = if stateless {
            "notifications/tasks"
        } else {
            "notifications/tasks/status"
        };
        feed(
            &mut client,
            now,
            json!({"jsonrpc": "2.0", "method": method, "params": {"taskId": "t-n",
                "status": "failed", "createdAt": "2026-01-01T00:00:00Z",
                "lastUpdatedAt": "2026-01-01T00:00:00Z"}}),
        );
        assert!(progress(&mut client, now, &token, 2).is_empty(), "{method}");

        // The task's time to live ends it.
        let (id, token) = call(&mut client, now);
        feed(
            &mut client,
            now,
            task_answer(stateless, &id, "t-ttl", 1_000),
        );
        let _ = events(&mut client);
        let later = now + Duration::from_millis(999);
        assert_eq!(progress(&mut client, later, &token, 1), vec![id.clone()]);
        let later = now + Duration::from_millis(1_000);
        assert!(progress(&mut client, later, &token, 2).is_empty());

        // At most KEPT_AT_MOST are kept: the oldest goes first.
        let mut calls = Vec::new();
        for n in 0..=KEPT_AT_MOST {
            let (id, token) = call(&mut client, now);
            feed(
                &mut client,
                now,
                task_answer(stateless, &id, &format!("b-{n}"), 60_000),
            );
            calls.push((id, token));
        }
        let _ = events(&mut client);
        let (newest, newest_token) = calls.last().unwrap().clone();
        assert_eq!(progress(&mut client, now, &newest_token, 1), vec![newest]);
        let (oldest, oldest_token) = calls.first().unwrap().clone();
        assert!(!client.keeps_task_progress(&oldest));
        assert!(progress(&mut client, now, &oldest_token, 1).is_empty());
    }
}

#[test]
fn a_plain_answer_ends_the_token_as_before() {
    for (_, mut client) in eras() {
        let now = epoch();
        let (id, token) = call(&mut client, now);
        assert_eq!(progress(&mut client, now, &token, 1), vec![id.clone()]);
        let mut answer: Value = text_result("done").decode().unwrap();
        answer["resultType"] = json!("complete");
        feed(
            &mut client,
            now,
            json!({"jsonrpc": "2.0", "id": serde_json::to_value(&id).unwrap(), "result": answer}),
        );
        let _ = events(&mut client);
        assert!(!client.keeps_task_progress(&id));
        assert!(progress(&mut client, now, &token, 2).is_empty());
    }
}

#[test]
fn a_tasks_result_answer_ends_the_token_of_its_task() {
    let mut client = connected_client(client_config());
    let now = epoch();
    let (id, token) = call(&mut client, now);
    feed(&mut client, now, task_answer(false, &id, "t-r", 60_000));
    let _ = events(&mut client);
    assert_eq!(progress(&mut client, now, &token, 1), vec![id.clone()]);
    let result = client
        .send_request(
            now,
            "tasks/result",
            Some(RawJson::encode(&json!({"taskId": "t-r"})).unwrap()),
            RequestOptions::DEFAULT,
        )
        .unwrap();
    let _ = sent(&mut client);
    let mut answer: Value = text_result("done").decode().unwrap();
    answer["_meta"] = json!({"io.modelcontextprotocol/related-task": {"taskId": "t-r"}});
    feed(
        &mut client,
        now,
        json!({"jsonrpc": "2.0", "id": serde_json::to_value(&result).unwrap(), "result": answer}),
    );
    let _ = events(&mut client);
    assert!(!client.keeps_task_progress(&id));
    assert!(progress(&mut client, now, &token, 2).is_empty());
}
