//! Tests of a handshake task's questions across `tasks/result` streams and replicas: a question
//! no stream can carry is in the task's record under its request id, another replica's session
//! sends it as it is and the answer, taken where it was asked, answers it; every `tasks/result`
//! stream carries a question once, and the record keeps it while one does; one the standalone
//! stream took is not asked again. Time is tokio's paused clock.

use std::sync::{Arc, Mutex};

use mcp_protocol::schema::{ClientRequest, Implementation, TaskIdParams};
use mcp_protocol::{Message, ServerConfig};

use super::super::Caller;
use super::super::mirror::{TaskMirror, TaskRecord};
use super::*;
use crate::server::{Handler, RequestContext, ServerCore, ServerTransport};

/// What a transport sent on a stream, with the request that stream answers; what no request
/// is tied to goes nowhere (a session with no standalone stream, over HTTP).
#[derive(Clone, Default)]
struct Streams(Arc<Mutex<Vec<(Message, RequestId)>>>);

impl ServerTransport for Streams {
    fn send(&self, message: Message, related: Option<&RequestId>) {
        if let Some(related) = related {
            self.0.lock().unwrap().push((message, related.clone()));
        }
    }

    fn undeliverable(&self, related: Option<&RequestId>) -> Option<String> {
        related.is_none().then(|| "no standalone stream".to_owned())
    }
}

impl Streams {
    /// The elicitations sent, with the stream each went on.
    fn asked(&self) -> Vec<(Request, RequestId)> {
        self.0
            .lock()
            .unwrap()
            .iter()
            .filter_map(|(m, on)| match m {
                Message::Request(r) if r.method == "elicitation/create" => {
                    Some((r.clone(), on.clone()))
                }
                _ => None,
            })
            .collect()
    }

    fn len(&self) -> usize {
        self.0.lock().unwrap().len()
    }
}

struct Nothing;

impl Handler for Nothing {
    async fn handle(&self, _: ClientRequest, _: RequestContext) -> Result<RawJson, ErrorObject> {
        Err(ErrorObject::new(
            code::METHOD_NOT_FOUND,
            "nothing".to_owned(),
        ))
    }
}

/// A session of a client that declared elicitation, at a replica whose request ids begin
/// with `prefix`.
fn session(prefix: &str, transport: Streams) -> Arc<ServerCore<Nothing>> {
    let mut config = ServerConfig::new(Implementation::new("t".to_owned(), "1".to_owned()));
    config.request_id_prefix = Some(prefix.to_owned());
    let core = ServerCore::new(config, Arc::new(Nothing), transport);
    core.receive_frame(
        br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},"clientInfo":{"name":"c","version":"1"}}}"#,
    );
    core.receive_frame(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    core
}

fn owner_of(core: &ServerCore<Nothing>) -> Caller {
    Caller {
        stateless: false,
        session: core.key(),
        declares_extension: false,
        peer: Some(core.peer()),
        request_peer: None,
        progress_token: None,
        name: Some("the-session".into()),
    }
}

/// The same caller's `tasks/result`, request `id` of its session.
fn waiting(caller: &Caller, core: &ServerCore<Nothing>, id: i64) -> Caller {
    Caller {
        request_peer: Some(core.peer().related_to(RequestId::Number(id))),
        ..caller.clone()
    }
}

fn question(message: &str) -> InputRequest {
    serde_json::from_value(json!({"method": "elicitation/create", "params": {
        "message": message, "requestedSchema": {"type": "object", "properties": {}}}}))
    .unwrap()
}

/// The records a mirror heard.
#[derive(Default, Clone)]
struct Heard(Arc<Mutex<Vec<TaskRecord>>>);

impl TaskMirror for Heard {
    fn changed(&self, record: TaskRecord) {
        self.0.lock().unwrap().push(record);
    }
}

impl Heard {
    fn last(&self) -> TaskRecord {
        self.0.lock().unwrap().last().cloned().expect("a record")
    }
}

/// `tasks/result` for `id` by `caller`, running.
fn fetch(tasks: &Tasks, id: &str, caller: Caller) -> tokio::task::JoinHandle<Value> {
    let (tasks, id) = (tasks.clone(), id.to_owned());
    tokio::spawn(async move {
        let request = ClientRequest::GetTaskPayload(TaskIdParams::new(id));
        let answer = tasks.answer_for(&request, &caller).await.unwrap();
        answer.unwrap().decode().unwrap()
    })
}

/// Lets the runtime run until `done` holds, for 100 s of paused time at most.
async fn until(what: &str, done: impl Fn() -> bool) {
    for _ in 0..10_000 {
        if done() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("never {what}");
}

fn answer(id: &RequestId, name: &str) -> Vec<u8> {
    json!({"jsonrpc": "2.0", "id": id, "result": {"action": "accept", "content": {"name": name}}})
        .to_string()
        .into_bytes()
}

fn created(announced: &Result<RawJson, ErrorObject>) -> String {
    let created: Value = announced.clone().unwrap().decode().unwrap();
    created["task"]["taskId"].as_str().unwrap().to_owned()
}

#[tokio::test(start_paused = true)]
async fn a_held_question_is_recorded_by_its_id_and_answered_when_another_replica_carried_it() {
    let (at_a, at_b) = (Streams::default(), Streams::default());
    let a = session("aa.", at_a.clone());
    let b = session("bb.", at_b.clone());
    let caller = owner_of(&a);
    let tasks = Tasks::default();
    let heard = Heard::default();
    assert!(tasks.mirror_to(Arc::new(heard.clone())));
    let id = created(&tasks.create_for(&caller, |task| async move {
        let answer = task.ask("q".to_owned(), question("Your name?")).await?;
        let answer: Value = answer.decode().unwrap();
        Ok(RawJson::encode(&json!({"content": [{"type": "text",
            "text": answer["content"]["name"]}]}))
        .unwrap())
    }));
    until("input_required", || {
        tasks.status(&id) == Some(TaskStatus::InputRequired)
    })
    .await;
    // No stream at A could carry it (the initialize answer went out: the transport is real).
    assert!(at_a.len() > 0);
    assert!(at_a.asked().is_empty());
    // The record holds it under its request's id, which names A, tied to the task.
    let record = heard.last();
    assert_eq!(record.task.status, TaskStatus::InputRequired);
    let held = record
        .task
        .input_requests
        .clone()
        .expect("the held question");
    assert_eq!(held.len(), 1, "{held:?}");
    let (key, request) = held.into_iter().next().unwrap();
    assert!(key.starts_with("aa."), "{key}");
    let params: Value = request.params.clone().unwrap().decode().unwrap();
    assert_eq!(params["message"], "Your name?");
    assert_eq!(params["_meta"][RELATED_TASK_META_KEY]["taskId"], json!(id));

    // B's `tasks/result` (request 9 there) sends it as it is.
    let carried = Request {
        id: RequestId::String(key.clone()),
        method: request.method.clone(),
        params: request.params.clone(),
    };
    assert!(
        b.peer()
            .related_to(RequestId::Number(9))
            .forward_request(carried.clone())
    );
    assert_eq!(at_b.asked(), [(carried, RequestId::Number(9))]);
    // The client's answer, relayed to A, answers the request waiting there.
    a.receive_frame(&answer(&RequestId::String(key), "Ada"));
    until("completed", || {
        tasks.status(&id) == Some(TaskStatus::Completed)
    })
    .await;
    let done = fetch(&tasks, &id, caller).await.unwrap();
    assert_eq!(done["content"][0]["text"], "Ada");
    // Once answered, no record holds it: a `tasks/result` elsewhere does not ask again.
    let records = heard.0.lock().unwrap().clone();
    let working = records
        .iter()
        .rev()
        .find(|r| r.task.status == TaskStatus::Working)
        .expect("working again");
    assert_eq!(working.task.input_requests, None);
}

#[tokio::test(start_paused = true)]
async fn every_tasks_result_carries_a_question_once_and_the_record_keeps_it_meanwhile() {
    let streams = Streams::default();
    let a = session("aa.", streams.clone());
    let caller = owner_of(&a);
    let tasks = Tasks::default();
    let heard = Heard::default();
    assert!(tasks.mirror_to(Arc::new(heard.clone())));
    let id = created(&tasks.create_for(&caller, |task| async move {
        let first = task.ask("q1".to_owned(), question("first"));
        let second = async {
            tokio::time::sleep(Duration::from_secs(2)).await;
            task.ask("q2".to_owned(), question("second")).await
        };
        let (first, second) = tokio::join!(first, second);
        let names: Vec<Value> = [first?, second?]
            .iter()
            .map(|a| a.decode::<Value>().unwrap()["content"]["name"].clone())
            .collect();
        Ok(
            RawJson::encode(&json!({"content": [{"type": "text", "text": format!("{names:?}")}]}))
                .unwrap(),
        )
    }));
    until("input_required", || {
        tasks.status(&id) == Some(TaskStatus::InputRequired)
    })
    .await;
    // A `tasks/result` (request 7) carries the first question, and the record still holds
    // it (that stream may be gone: a `tasks/result` elsewhere carries it too); then 7 goes.
    let first = fetch(&tasks, &id, waiting(&caller, &a, 7));
    until("the first question on 7", || streams.asked().len() == 1).await;
    let (q1, on) = streams.asked()[0].clone();
    assert_eq!(on, RequestId::Number(7));
    let held = |record: &TaskRecord| record.task.input_requests.clone().unwrap_or_default();
    assert_eq!(
        held(&heard.last()).keys().collect::<Vec<_>>(),
        [&key_of(&q1.id)]
    );
    first.abort();
    assert!(first.await.unwrap_err().is_cancelled());
    // The next (request 8) carries it, under the same id, and the second question as it is
    // asked; the change that second question makes does not send the first on 8 again.
    let second = fetch(&tasks, &id, waiting(&caller, &a, 8));
    until("both questions on 8", || streams.asked().len() == 3).await;
    let asked = streams.asked();
    assert_eq!(asked[1], (q1.clone(), RequestId::Number(8)));
    let (q2, on) = asked[2].clone();
    assert_eq!(on, RequestId::Number(8));
    assert_ne!(q2.id, q1.id);
    // The record, written as the second was asked, holds both, though 8 carried them.
    let mut recorded: Vec<String> = held(&heard.last()).into_keys().collect();
    recorded.sort();
    let mut ids = vec![key_of(&q1.id), key_of(&q2.id)];
    ids.sort();
    assert_eq!(recorded, ids);
    // Another `tasks/result` (request 9) while 8 waits carries both too, once each.
    let third = fetch(&tasks, &id, waiting(&caller, &a, 9));
    until("both questions on 9", || streams.asked().len() == 5).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let on = |stream: i64| -> Vec<RequestId> {
        streams
            .asked()
            .into_iter()
            .filter(|(_, on)| *on == RequestId::Number(stream))
            .map(|(request, _)| request.id)
            .collect()
    };
    assert_eq!(on(7), std::slice::from_ref(&q1.id));
    assert_eq!(on(8), [q1.id.clone(), q2.id.clone()]);
    let mut nine = on(9);
    nine.sort_by_key(key_of);
    let mut both = vec![q1.id.clone(), q2.id.clone()];
    both.sort_by_key(key_of);
    assert_eq!(nine, both);
    a.receive_frame(&answer(&q1.id, "Ada"));
    a.receive_frame(&answer(&q2.id, "Grace"));
    for waiting in [second, third] {
        let result = waiting.await.unwrap();
        assert_eq!(
            result["content"][0]["text"],
            r#"[String("Ada"), String("Grace")]"#
        );
    }
    assert_eq!(streams.asked().len(), 5);
    // Answered, they leave the record.
    let records = heard.0.lock().unwrap().clone();
    let working = records
        .iter()
        .rev()
        .find(|r| r.task.status == TaskStatus::Working)
        .expect("working again");
    assert_eq!(working.task.input_requests, None);
}

/// What a transport sent, with the request each message was tied to (`None`: unprompted).
type Sent = Arc<Mutex<Vec<(Message, Option<RequestId>)>>>;

/// A session with a standalone stream: what no request is tied to goes there (`None`).
#[derive(Clone, Default)]
struct WithStandalone(Sent);

impl ServerTransport for WithStandalone {
    fn send(&self, message: Message, related: Option<&RequestId>) {
        self.0.lock().unwrap().push((message, related.cloned()));
    }
}

#[tokio::test(start_paused = true)]
async fn a_question_the_standalone_stream_took_is_not_asked_again_on_a_tasks_result() {
    let sent = WithStandalone::default();
    let mut config = ServerConfig::new(Implementation::new("t".to_owned(), "1".to_owned()));
    config.request_id_prefix = Some("aa.".to_owned());
    let a = ServerCore::new(config, Arc::new(Nothing), sent.clone());
    a.receive_frame(
        br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},"clientInfo":{"name":"c","version":"1"}}}"#,
    );
    a.receive_frame(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    let caller = owner_of(&a);
    let tasks = Tasks::default();
    let heard = Heard::default();
    assert!(tasks.mirror_to(Arc::new(heard.clone())));
    let id = created(&tasks.create_for(&caller, |task| async move {
        let answer = task.ask("q".to_owned(), question("Your name?")).await?;
        let answer: Value = answer.decode().unwrap();
        Ok(RawJson::encode(&json!({"content": [{"type": "text",
            "text": answer["content"]["name"]}]}))
        .unwrap())
    }));
    until("input_required", || {
        tasks.status(&id) == Some(TaskStatus::InputRequired)
    })
    .await;
    let asked = |sent: &WithStandalone| -> Vec<(RequestId, Option<RequestId>)> {
        sent.0
            .lock()
            .unwrap()
            .iter()
            .filter_map(|(m, on)| match m {
                Message::Request(r) if r.method == "elicitation/create" => {
                    Some((r.id.clone(), on.clone()))
                }
                _ => None,
            })
            .collect()
    };
    // It went on the standalone stream; the record holds nothing for a `tasks/result`.
    let first = asked(&sent);
    assert_eq!(first.len(), 1, "{first:?}");
    assert_eq!(first[0].1, None);
    let record = heard.last();
    assert_eq!(record.task.status, TaskStatus::InputRequired);
    assert_eq!(record.task.input_requests, Some(BTreeMap::new()));
    // A `tasks/result` (request 10) waits without asking again; the answer ends both.
    let waiting = fetch(
        &tasks,
        &id,
        Caller {
            request_peer: Some(a.peer().related_to(RequestId::Number(10))),
            ..caller.clone()
        },
    );
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(asked(&sent), first);
    a.receive_frame(&answer(&first[0].0, "Ada"));
    let done = waiting.await.unwrap();
    assert_eq!(done["content"][0]["text"], "Ada");
    assert_eq!(asked(&sent), first);
}

#[tokio::test(start_paused = true)]
async fn a_question_the_work_stops_waiting_for_leaves_the_task_and_its_record() {
    let streams = Streams::default();
    let a = session("aa.", streams.clone());
    let caller = owner_of(&a);
    let tasks = Tasks::default();
    let heard = Heard::default();
    assert!(tasks.mirror_to(Arc::new(heard.clone())));
    let go = Arc::new(tokio::sync::Notify::new());
    let id = {
        let go = Arc::clone(&go);
        created(&tasks.create_for(&caller, move |task| async move {
            // The work gives up on its question (a timeout around it) and goes on.
            let asking = task.ask("q".to_owned(), question("Your name?"));
            let given_up = tokio::time::timeout(Duration::from_secs(5), asking).await;
            assert!(given_up.is_err(), "{given_up:?}");
            go.notified().await;
            Ok(RawJson::encode(&json!({"content": []})).unwrap())
        }))
    };
    until("input_required", || {
        tasks.status(&id) == Some(TaskStatus::InputRequired)
    })
    .await;
    let record = heard.last();
    assert_eq!(record.task.input_requests.map(|q| q.len()), Some(1));
    // Once the work stopped waiting, the task is working again and its record holds no
    // question (before, both stayed as they were until the task ended: `input_required`, and
    // every `tasks/result`, here or at another replica, asked the client again).
    until("working again", || {
        tasks.status(&id) == Some(TaskStatus::Working)
    })
    .await;
    let record = heard.last();
    assert_eq!(record.task.status, TaskStatus::Working);
    assert_eq!(record.task.input_requests, None);
    let result = fetch(&tasks, &id, waiting(&caller, &a, 7));
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(streams.len() > 0);
    assert!(streams.asked().is_empty(), "{:?}", streams.asked());
    go.notify_one();
    assert_eq!(result.await.unwrap()["content"], json!([]));
}

/// The ids of the requests the client was told are cancelled, with the stream each went on.
fn withdrawn(streams: &Streams) -> Vec<(Value, RequestId)> {
    streams
        .0
        .lock()
        .unwrap()
        .iter()
        .filter_map(|(m, on)| match m {
            Message::Notification(n) if n.method == "notifications/cancelled" => {
                let params: Value = n.params.as_ref()?.decode().ok()?;
                Some((params["requestId"].clone(), on.clone()))
            }
            _ => None,
        })
        .collect()
}

#[tokio::test(start_paused = true)]
async fn a_question_of_a_task_that_ended_is_withdrawn_from_the_client() {
    let streams = Streams::default();
    let a = session("aa.", streams.clone());
    let caller = owner_of(&a);
    let tasks = Tasks::default();
    let go = Arc::new(tokio::sync::Notify::new());
    let id = {
        let go = Arc::clone(&go);
        created(&tasks.create_for(&caller, move |task| async move {
            go.notified().await;
            task.ask("q".to_owned(), question("Your name?")).await?;
            Ok(RawJson::encode(&json!({"content": []})).unwrap())
        }))
    };
    // Asked while a `tasks/result` (request 7) waits: the question goes on its stream.
    let waiting_on_7 = {
        let (tasks, id, by) = (tasks.clone(), id.clone(), waiting(&caller, &a, 7));
        tokio::spawn(async move {
            let request = ClientRequest::GetTaskPayload(TaskIdParams::new(id));
            tasks.answer_for(&request, &by).await
        })
    };
    tokio::time::sleep(Duration::from_secs(1)).await;
    go.notify_one();
    until("the question on 7", || streams.asked().len() == 1).await;
    let (q, on) = streams.asked()[0].clone();
    assert_eq!(on, RequestId::Number(7));
    assert!(withdrawn(&streams).is_empty());
    // The task is cancelled: the client is told on that stream to stop asking its user
    // (before, only when the request timed out, at the task's TTL: 600 s).
    let cancel = ClientRequest::CancelTask(TaskIdParams::new(id.clone()));
    tasks.answer_for(&cancel, &caller).await.unwrap().unwrap();
    until("the question withdrawn", || !withdrawn(&streams).is_empty()).await;
    assert_eq!(
        withdrawn(&streams),
        [(json!(key_of(&q.id)), RequestId::Number(7))]
    );
    // Its late answer answers nothing, and nothing more is sent.
    let sent = streams.len();
    a.receive_frame(&answer(&q.id, "Ada"));
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(streams.len(), sent);
    // The `tasks/result` ends with the task.
    assert!(waiting_on_7.await.unwrap().is_some());
}
