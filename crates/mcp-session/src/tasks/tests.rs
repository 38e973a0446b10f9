//! Tests of the server task store: statuses and their transitions, inlined results and
//! errors, input by `tasks/update`, cancellation, the TTL and the capacity, unknown ids, the
//! gating on the extension, and the status notifications of the handshake era. Time is
//! tokio's paused clock, so a TTL is crossed by advancing it, never by waiting.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use mcp_protocol::schema::{
    ClientRequest, Implementation, PaginatedParams, TaskIdParams, UpdateTaskParams,
};
use mcp_protocol::{ErrorObject, Message, RawJson, RequestId, ServerConfig, code};
use serde_json::{Value, json};

use super::*;
use crate::server::{Handler, ServerCore, ServerTransport};

fn stateless(declares_extension: bool) -> Caller {
    Caller {
        stateless: true,
        session: SessionKey::next(),
        declares_extension,
        peer: None,
        request_peer: None,
        progress_token: None,
        name: None,
    }
}

fn handshake() -> Caller {
    Caller {
        stateless: false,
        ..stateless(false)
    }
}

fn text(s: &str) -> Result<RawJson, ErrorObject> {
    Ok(RawJson::encode(&json!({"content": [{"type": "text", "text": s}]})).unwrap())
}

fn value(raw: RawJson) -> Value {
    raw.decode().unwrap()
}

fn id_of(announced: &Result<RawJson, ErrorObject>) -> String {
    let v = value(announced.clone().unwrap());
    let id = v.get("taskId").or_else(|| v.get("task")?.get("taskId"));
    id.and_then(Value::as_str).unwrap().to_owned()
}

async fn ask(tasks: &Tasks, request: ClientRequest, caller: &Caller) -> Result<Value, ErrorObject> {
    tasks
        .answer_for(&request, caller)
        .await
        .expect("a tasks request")
        .map(value)
}

async fn get(tasks: &Tasks, id: &str, caller: &Caller) -> Result<Value, ErrorObject> {
    let request = ClientRequest::GetTask(TaskIdParams::new(id.to_owned()));
    ask(tasks, request, caller).await
}

/// Lets the runtime run until `id` reaches `status`, for 100 s of paused time at most (it
/// advances by itself when everything sleeps).
async fn settle(tasks: &Tasks, id: &str, status: TaskStatus) {
    for _ in 0..10_000 {
        if tasks.status(id) == Some(status.clone()) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!(
        "task {id} never reached {status}; it is {:?}",
        tasks.status(id)
    );
}

#[tokio::test(start_paused = true)]
async fn a_task_works_then_completes_with_its_result_inlined() {
    let tasks = Tasks::default();
    let caller = stateless(true);
    let announced = tasks.create_for(&caller, |_| async {
        tokio::time::sleep(Duration::from_secs(2)).await;
        text("done")
    });
    let created = value(announced.clone().unwrap());
    assert_eq!(created["resultType"], "task");
    assert_eq!(created["status"], "working");
    assert!(created["ttlMs"].as_u64().unwrap() > 0);
    assert!(created.get("result").is_none() && created.get("task").is_none());
    let id = id_of(&announced);
    assert_eq!(id.len(), 32, "128 random bits in hex");

    let working = get(&tasks, &id, &caller).await.unwrap();
    assert_eq!(
        (&working["status"], &working["resultType"]),
        (&json!("working"), &json!("complete"))
    );
    assert!(working.get("result").is_none());

    settle(&tasks, &id, TaskStatus::Completed).await;
    let done = get(&tasks, &id, &caller).await.unwrap();
    assert_eq!(done["result"]["content"][0]["text"], "done");
    assert!(done.get("error").is_none());
}

#[tokio::test(start_paused = true)]
async fn an_error_fails_the_task_and_a_panic_too() {
    let tasks = Tasks::default();
    let caller = stateless(true);
    let id = id_of(&tasks.create_for(&caller, |_| async {
        Err(ErrorObject::new(code::INTERNAL_ERROR, "broken".to_owned()))
    }));
    settle(&tasks, &id, TaskStatus::Failed).await;
    let failed = get(&tasks, &id, &caller).await.unwrap();
    assert_eq!(failed["error"]["code"], code::INTERNAL_ERROR);
    assert_eq!(failed["error"]["message"], "broken");
    assert!(failed.get("result").is_none());

    let id = id_of(&tasks.create_for(&caller, |_| async {
        if tasks_never_panic() {
            return text("unreachable");
        }
        panic!("the work panics")
    }));
    settle(&tasks, &id, TaskStatus::Failed).await;
}

fn tasks_never_panic() -> bool {
    false
}

#[tokio::test(start_paused = true)]
async fn cancel_stops_the_work_and_a_terminal_task_never_changes() {
    let tasks = Tasks::default();
    let caller = stateless(true);
    let finished = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&finished);
    let id = id_of(&tasks.create_for(&caller, move |_| async move {
        tokio::time::sleep(Duration::from_secs(60)).await;
        flag.store(true, Ordering::SeqCst);
        text("too late")
    }));
    let cancel = || ClientRequest::CancelTask(TaskIdParams::new(id.clone()));
    let ack = ask(&tasks, cancel(), &caller).await.unwrap();
    assert!(ack.get("taskId").is_none() && ack.get("status").is_none());
    assert_eq!(tasks.status(&id), Some(TaskStatus::Cancelled));

    tokio::time::sleep(Duration::from_secs(120)).await;
    assert!(!finished.load(Ordering::SeqCst), "the work was aborted");
    assert_eq!(tasks.status(&id), Some(TaskStatus::Cancelled));
    // Cancelling again is an acknowledgement in the extension.
    assert!(ask(&tasks, cancel(), &caller).await.is_ok());
}

#[tokio::test(start_paused = true)]
async fn unknown_ids_and_other_sessions_tasks_are_invalid_params() {
    let tasks = Tasks::default();
    let unknown = get(&tasks, "no-such-task", &stateless(true))
        .await
        .unwrap_err();
    assert_eq!(unknown.code, code::INVALID_PARAMS);

    let mine = handshake();
    let id = id_of(&tasks.create_for(&mine, |_| async { text("x") }));
    assert_eq!(get(&tasks, &id, &mine).await.unwrap()["taskId"], json!(id));
    let theirs = get(&tasks, &id, &handshake()).await.unwrap_err();
    assert_eq!(theirs.code, code::INVALID_PARAMS);
    // tasks/list shows a session its own tasks only.
    let listed = ask(
        &tasks,
        ClientRequest::ListTasks(PaginatedParams::new()),
        &mine,
    )
    .await;
    assert_eq!(listed.unwrap()["tasks"].as_array().unwrap().len(), 1);
    let other = ask(
        &tasks,
        ClientRequest::ListTasks(PaginatedParams::new()),
        &handshake(),
    )
    .await;
    assert_eq!(other.unwrap()["tasks"].as_array().unwrap().len(), 0);
}

#[tokio::test(start_paused = true)]
async fn a_task_lives_its_ttl_and_is_then_forgotten() {
    let tasks = Tasks::new(TaskOptions::new().ttl(Duration::from_secs(10)));
    let caller = stateless(true);
    let id = id_of(&tasks.create_for(&caller, |_| async { text("quick") }));
    settle(&tasks, &id, TaskStatus::Completed).await;
    tokio::time::advance(Duration::from_millis(9_900)).await;
    assert_eq!(
        get(&tasks, &id, &caller).await.unwrap()["status"],
        "completed"
    );
    tokio::time::advance(Duration::from_millis(200)).await;
    assert_eq!(
        get(&tasks, &id, &caller).await.unwrap_err().code,
        code::INVALID_PARAMS
    );
}

#[tokio::test(start_paused = true)]
async fn a_full_store_refuses_new_tasks_rather_than_drop_live_ones() {
    let tasks = Tasks::new(TaskOptions::new().capacity(1));
    let caller = stateless(true);
    let first = id_of(&tasks.create_for(&caller, |_| async { text("kept") }));
    let refused = tasks
        .create_for(&caller, |_| async { text("no room") })
        .unwrap_err();
    assert_eq!(refused.code, code::INTERNAL_ERROR);
    assert!(tasks.status(&first).is_some());
}

#[tokio::test(start_paused = true)]
async fn input_is_answered_one_key_at_a_time() {
    let tasks = Tasks::default();
    let caller = stateless(true);
    let id = id_of(&tasks.create_for(&caller, |task| async move {
        let ask = |key: &str| {
            let request: InputRequest =
                serde_json::from_value(json!({"method": "elicitation/create", "params": {}}))
                    .unwrap();
            BTreeMap::from([(key.to_owned(), request)])
        };
        let (a, b) = tokio::join!(task.input(ask("a")), task.input(ask("b")));
        let got = value(a.unwrap()["a"].clone());
        text(&format!("{got} {}", value(b.unwrap()["b"].clone())))
    }));
    settle(&tasks, &id, TaskStatus::InputRequired).await;
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
    let waiting = get(&tasks, &id, &caller).await.unwrap();
    let keys: Vec<&String> = waiting["inputRequests"]
        .as_object()
        .unwrap()
        .keys()
        .collect();
    assert_eq!(keys, ["a", "b"]);

    let update = |key: &str, answer: Value| {
        ClientRequest::UpdateTask(UpdateTaskParams::new(
            id.clone(),
            BTreeMap::from([(key.to_owned(), answer)]),
        ))
    };
    let ack = ask(&tasks, update("a", json!(1)), &caller).await.unwrap();
    assert!(ack.get("status").is_none());
    let partial = get(&tasks, &id, &caller).await.unwrap();
    assert_eq!(partial["status"], "input_required");
    let keys: Vec<&String> = partial["inputRequests"]
        .as_object()
        .unwrap()
        .keys()
        .collect();
    assert_eq!(keys, ["b"]);

    ask(&tasks, update("b", json!(2)), &caller).await.unwrap();
    settle(&tasks, &id, TaskStatus::Completed).await;
    let done = get(&tasks, &id, &caller).await.unwrap();
    assert_eq!(done["result"]["content"][0]["text"], "1 2");
}

#[tokio::test(start_paused = true)]
async fn input_the_work_stops_waiting_for_leaves_the_task_working() {
    let tasks = Tasks::default();
    let caller = stateless(true);
    let go = Arc::new(tokio::sync::Notify::new());
    let id = {
        let go = Arc::clone(&go);
        id_of(&tasks.create_for(&caller, move |task| async move {
            let request: InputRequest =
                serde_json::from_value(json!({"method": "elicitation/create", "params": {}}))
                    .unwrap();
            let asking = task.input(BTreeMap::from([("a".to_owned(), request)]));
            // The work gives up on its input (a timeout around it) and goes on.
            assert!(
                tokio::time::timeout(Duration::from_secs(5), asking)
                    .await
                    .is_err()
            );
            go.notified().await;
            text("done")
        }))
    };
    settle(&tasks, &id, TaskStatus::InputRequired).await;
    let waiting = get(&tasks, &id, &caller).await.unwrap();
    assert!(waiting["inputRequests"].get("a").is_some(), "{waiting}");
    // Before, it stayed `input_required`, asking for "a", until the task ended.
    settle(&tasks, &id, TaskStatus::Working).await;
    let working = get(&tasks, &id, &caller).await.unwrap();
    assert_eq!(working["status"], "working", "{working}");
    assert!(working.get("inputRequests").is_none(), "{working}");
    go.notify_one();
    settle(&tasks, &id, TaskStatus::Completed).await;
}

#[tokio::test(start_paused = true)]
async fn the_extension_gates_the_stateless_methods() {
    let tasks = Tasks::default();
    let undeclared = get(&tasks, "x", &stateless(false)).await.unwrap_err();
    assert_eq!(
        undeclared.code,
        mcp_protocol::code::MISSING_REQUIRED_CLIENT_CAPABILITY
    );
    let data = undeclared.data.unwrap();
    assert!(data["requiredCapabilities"]["extensions"][TASKS_EXTENSION_ID].is_object());

    let result = ClientRequest::GetTaskPayload(TaskIdParams::new("x".to_owned()));
    let removed = ask(&tasks, result, &stateless(true)).await.unwrap_err();
    assert_eq!(removed.code, code::METHOD_NOT_FOUND);
}

/// Records what a handshake session sends.
#[derive(Clone, Default)]
struct Recorder(Arc<Mutex<Vec<Message>>>);

impl ServerTransport for Recorder {
    fn send(&self, message: Message, _related: Option<&RequestId>) {
        self.0.lock().unwrap().push(message);
    }
}

impl Recorder {
    fn notified(&self, method: &str) -> Vec<Value> {
        self.0
            .lock()
            .unwrap()
            .iter()
            .filter_map(|m| match m {
                Message::Notification(n) if n.method == method => {
                    Some(n.params.clone().map(value).unwrap_or_default())
                }
                _ => None,
            })
            .collect()
    }
}

struct Nothing;

impl Handler for Nothing {
    async fn handle(&self, _: ClientRequest, _: RequestContext) -> Result<RawJson, ErrorObject> {
        Err(ErrorObject::new(
            code::METHOD_NOT_FOUND,
            "nothing here".to_owned(),
        ))
    }
}

#[tokio::test(start_paused = true)]
async fn a_handshake_session_hears_each_status_and_the_result_is_fetched_with_its_task() {
    let recorder = Recorder::default();
    let config = ServerConfig::new(Implementation::new("t".to_owned(), "1".to_owned()));
    let core = ServerCore::new(config, Arc::new(Nothing), recorder.clone());
    core.receive_frame(
        br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}"#,
    );
    core.receive_frame(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    let caller = Caller {
        peer: Some(core.peer()),
        session: core.key(),
        ..handshake()
    };
    let announced = tasks_with(&caller);
    let id = id_of(&announced.1);
    let tasks = announced.0;
    let payload = ClientRequest::GetTaskPayload(TaskIdParams::new(id.clone()));
    let result = ask(&tasks, payload, &caller).await.unwrap();
    assert_eq!(result["content"][0]["text"], "slow");
    assert_eq!(result["_meta"][RELATED_TASK_META_KEY]["taskId"], json!(id));

    let statuses: Vec<Value> = recorder
        .notified("notifications/tasks/status")
        .into_iter()
        .map(|n| n["status"].clone())
        .collect();
    assert_eq!(statuses, [json!("completed")]);
    // Cancelling a finished task is refused in this form.
    let cancel = ClientRequest::CancelTask(TaskIdParams::new(id.clone()));
    assert_eq!(
        ask(&tasks, cancel, &caller).await.unwrap_err().code,
        code::INVALID_PARAMS
    );
}

fn tasks_with(caller: &Caller) -> (Tasks, Result<RawJson, ErrorObject>) {
    let tasks = Tasks::default();
    let announced = tasks.create_for(caller, |_| async {
        tokio::time::sleep(Duration::from_secs(1)).await;
        text("slow")
    });
    let created = value(announced.clone().unwrap());
    assert_eq!(created["task"]["status"], "working");
    assert!(created["task"]["ttl"].as_u64().is_some());
    (tasks, announced)
}

#[tokio::test(start_paused = true)]
async fn a_handshake_task_asks_its_session_with_requests_tied_to_the_task() {
    let recorder = Recorder::default();
    let config = ServerConfig::new(Implementation::new("t".to_owned(), "1".to_owned()));
    let core = ServerCore::new(config, Arc::new(Nothing), recorder.clone());
    core.receive_frame(
        br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},"clientInfo":{"name":"c","version":"1"}}}"#,
    );
    core.receive_frame(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    let caller = Caller {
        peer: Some(core.peer()),
        session: core.key(),
        ..handshake()
    };
    let tasks = Tasks::default();
    let id = id_of(&tasks.create_for(&caller, |task| async move {
        let request: InputRequest = serde_json::from_value(
            json!({"method": "elicitation/create", "params": {"message": "sure?", "requestedSchema": {"type": "object", "properties": {}}}}),
        )
        .unwrap();
        let answers = task.input(BTreeMap::from([("q".to_owned(), request)])).await;
        let answer = value(answers.expect("answered")["q"].clone());
        text(&format!("{}", answer["action"]))
    }));
    settle(&tasks, &id, TaskStatus::InputRequired).await;
    let asked = recorder
        .0
        .lock()
        .unwrap()
        .iter()
        .find_map(|m| match m {
            Message::Request(r) if r.method == "elicitation/create" => Some(r.clone()),
            _ => None,
        })
        .expect("the elicitation went to the session");
    let params: Value = asked.params.clone().map(value).unwrap();
    assert_eq!(params["_meta"][RELATED_TASK_META_KEY]["taskId"], json!(id));
    assert_eq!(params["message"], "sure?");
    let reply = json!({"jsonrpc": "2.0", "id": asked.id, "result": {"action": "accept"}});
    core.receive_frame(reply.to_string().as_bytes());
    settle(&tasks, &id, TaskStatus::Completed).await;
    let payload = ClientRequest::GetTaskPayload(TaskIdParams::new(id.clone()));
    let result = ask(&tasks, payload, &caller).await.unwrap();
    assert_eq!(result["content"][0]["text"], "\"accept\"");
    let statuses: Vec<Value> = recorder
        .notified("notifications/tasks/status")
        .into_iter()
        .map(|n| n["status"].clone())
        .collect();
    assert_eq!(
        statuses,
        [
            json!("input_required"),
            json!("working"),
            json!("completed")
        ]
    );
}

/// What a transport sent, with the request each message was tied to.
type Sent = Arc<Mutex<Vec<(Message, Option<RequestId>)>>>;

/// A handshake transport with no standalone stream: only what is tied to a request gets out.
#[derive(Clone, Default)]
struct NoStandalone(Sent);

impl ServerTransport for NoStandalone {
    fn send(&self, message: Message, related: Option<&RequestId>) {
        // What no request's stream carries goes nowhere, as over HTTP.
        if related.is_some() {
            self.0.lock().unwrap().push((message, related.cloned()));
        }
    }

    fn undeliverable(&self, related: Option<&RequestId>) -> Option<String> {
        related.is_none().then(|| "no standalone stream".to_owned())
    }
}

#[tokio::test(start_paused = true)]
async fn a_handshake_task_asks_on_the_stream_of_a_waiting_tasks_result() {
    let transport = NoStandalone::default();
    let config = ServerConfig::new(Implementation::new("t".to_owned(), "1".to_owned()));
    let core = ServerCore::new(config, Arc::new(Nothing), transport.clone());
    core.receive_frame(
        br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},"clientInfo":{"name":"c","version":"1"}}}"#,
    );
    core.receive_frame(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    let caller = Caller {
        peer: Some(core.peer()),
        session: core.key(),
        ..handshake()
    };
    let tasks = Tasks::default();
    let id = id_of(&tasks.create_for(&caller, |task| async move {
        let request: InputRequest = serde_json::from_value(
            json!({"method": "elicitation/create", "params": {"message": "sure?", "requestedSchema": {"type": "object", "properties": {}}}}),
        )
        .unwrap();
        let answers = task.input(BTreeMap::from([("q".to_owned(), request)])).await;
        text(&value(answers.expect("answered")["q"].clone())["action"].to_string())
    }));
    settle(&tasks, &id, TaskStatus::InputRequired).await;
    let asked = |transport: &NoStandalone| {
        transport
            .0
            .lock()
            .unwrap()
            .iter()
            .find_map(|(m, related)| match m {
                Message::Request(r) if r.method == "elicitation/create" => {
                    Some((r.id.clone(), related.clone()))
                }
                _ => None,
            })
    };
    tokio::time::sleep(Duration::from_secs(1)).await;
    // The initialize answer went out, so the transport is real; the question could not.
    assert!(!transport.0.lock().unwrap().is_empty());
    assert!(asked(&transport).is_none());

    let waiting = Caller {
        request_peer: Some(core.peer().related_to(RequestId::Number(7))),
        ..caller.clone()
    };
    let payload = ClientRequest::GetTaskPayload(TaskIdParams::new(id.clone()));
    let fetch = {
        let tasks = tasks.clone();
        tokio::spawn(async move { ask(&tasks, payload, &waiting).await })
    };
    let mut question = None;
    for _ in 0..100 {
        question = asked(&transport);
        if question.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let (request_id, related) = question.expect("the question went on the tasks/result stream");
    assert_eq!(related, Some(RequestId::Number(7)));
    let reply = json!({"jsonrpc": "2.0", "id": request_id, "result": {"action": "accept"}});
    core.receive_frame(reply.to_string().as_bytes());
    let result = fetch.await.unwrap().unwrap();
    assert_eq!(result["content"][0]["text"], "\"accept\"");
}

/// What a mirror heard: each record, in order.
#[derive(Default, Clone)]
struct Heard(Arc<Mutex<Vec<TaskRecord>>>);

impl TaskMirror for Heard {
    fn changed(&self, record: TaskRecord) {
        self.0.lock().unwrap().push(record);
    }
}

impl Heard {
    fn statuses(&self, id: &str) -> Vec<(Option<String>, TaskStatus)> {
        self.0
            .lock()
            .unwrap()
            .iter()
            .filter(|r| r.task.task_id == id)
            .map(|r| (r.owner.as_deref().map(str::to_owned), r.task.status.clone()))
            .collect()
    }
}

#[tokio::test(start_paused = true)]
async fn a_mirror_hears_each_change_of_a_named_sessions_task_and_nothing_of_an_unnamed_one() {
    let tasks = Tasks::default();
    let heard = Heard::default();
    assert!(tasks.mirror_to(Arc::new(heard.clone())));
    assert!(!tasks.mirror_to(Arc::new(Heard::default())), "one mirror");
    let named = Caller {
        name: Some(Arc::from("digest-of-the-session")),
        ..handshake()
    };
    let id = id_of(&tasks.create_for(&named, |_| async {
        tokio::time::sleep(Duration::from_secs(2)).await;
        text("done")
    }));
    settle(&tasks, &id, TaskStatus::Completed).await;
    let owner = Some("digest-of-the-session".to_owned());
    assert_eq!(
        heard.statuses(&id),
        [
            (owner.clone(), TaskStatus::Working),
            (owner, TaskStatus::Completed)
        ]
    );
    let done = heard.0.lock().unwrap().last().cloned().unwrap();
    assert_eq!(
        done.task.result.unwrap()["content"][0]["text"],
        json!("done")
    );
    assert!(done.keep > Duration::ZERO && done.keep <= Duration::from_secs(600));

    // A session with no name among replicas: its task is nobody else's to answer for.
    let unnamed = id_of(&tasks.create_for(&handshake(), |_| async { text("x") }));
    settle(&tasks, &unnamed, TaskStatus::Completed).await;
    assert!(!heard.0.lock().unwrap().is_empty());
    assert_eq!(heard.statuses(&unnamed), []);

    // A stateless task has no owner: its id is the key.
    let free = id_of(&tasks.create_for(&stateless(true), |_| async { text("y") }));
    settle(&tasks, &free, TaskStatus::Completed).await;
    assert_eq!(
        heard.statuses(&free),
        [(None, TaskStatus::Working), (None, TaskStatus::Completed)]
    );
}

#[tokio::test(start_paused = true)]
async fn a_relayed_cancel_and_update_act_as_the_owners_would() {
    let tasks = Tasks::default();
    let heard = Heard::default();
    tasks.mirror_to(Arc::new(heard.clone()));
    // Another replica checked the owner: the cancel comes with none.
    let owned = Caller {
        name: Some(Arc::from("s")),
        ..handshake()
    };
    let id = id_of(&tasks.create_for(&owned, |_| std::future::pending()));
    assert!(tasks.cancel_relayed(&id));
    assert_eq!(tasks.status(&id), Some(TaskStatus::Cancelled));
    assert!(!tasks.cancel_relayed(&id), "an ended task stays as it is");
    assert_eq!(heard.statuses(&id).last().unwrap().1, TaskStatus::Cancelled);
    assert!(!tasks.cancel_relayed("no-such-task"));

    let caller = stateless(true);
    let id = id_of(&tasks.create_for(&caller, |task| async move {
        let request: InputRequest =
            serde_json::from_value(json!({"method": "elicitation/create", "params": {}})).unwrap();
        let answers = task
            .input(BTreeMap::from([("k".to_owned(), request)]))
            .await;
        text(&value(answers.unwrap()["k"].clone()).to_string())
    }));
    settle(&tasks, &id, TaskStatus::InputRequired).await;
    let asked = heard.0.lock().unwrap().last().cloned().unwrap();
    assert_eq!(asked.task.status, TaskStatus::InputRequired);
    assert!(asked.task.input_requests.unwrap().contains_key("k"));
    assert!(tasks.update_relayed(&UpdateTaskParams::new(
        id.clone(),
        BTreeMap::from([("k".to_owned(), json!(42))])
    )));
    settle(&tasks, &id, TaskStatus::Completed).await;
    assert_eq!(
        get(&tasks, &id, &caller).await.unwrap()["result"]["content"][0]["text"],
        "42"
    );
    // A handshake session's task takes no relayed input: that era has no tasks/update.
    let owned_id = id_of(&tasks.create_for(&owned, |_| std::future::pending()));
    assert!(!tasks.update_relayed(&UpdateTaskParams::new(owned_id, BTreeMap::new())));
}

#[tokio::test(start_paused = true)]
async fn a_stateless_task_of_an_authenticated_caller_is_that_callers_alone() {
    let tasks = Tasks::default();
    let named = |name: &str| Caller {
        name: Some(Arc::from(name)),
        ..stateless(true)
    };
    let (alice, bob) = (named("alice-digest"), named("bob-digest"));
    let id = id_of(&tasks.create_for(&alice, |_| std::future::pending()));
    assert_eq!(get(&tasks, &id, &alice).await.unwrap()["status"], "working");
    for other in [&bob, &stateless(true)] {
        let refused = get(&tasks, &id, other).await.unwrap_err();
        assert_eq!(refused.code, code::INVALID_PARAMS);
        let cancel = ClientRequest::CancelTask(TaskIdParams::new(id.clone()));
        assert!(ask(&tasks, cancel, other).await.is_err());
    }
    assert_eq!(tasks.status(&id), Some(TaskStatus::Working));
    // Nobody authenticated: the id is the key, as before.
    let free = id_of(&tasks.create_for(&stateless(true), |_| std::future::pending()));
    assert!(get(&tasks, &free, &stateless(true)).await.is_ok());
}

#[tokio::test(start_paused = true)]
async fn only_a_handshake_sessions_task_is_told_as_listed() {
    let tasks = Tasks::default();
    let heard = Heard::default();
    tasks.mirror_to(Arc::new(heard.clone()));
    let session = Caller {
        name: Some(Arc::from("digest-of-the-session")),
        ..handshake()
    };
    let subject = Caller {
        name: Some(Arc::from("digest-of-the-subject")),
        ..stateless(true)
    };
    let listed = id_of(&tasks.create_for(&session, |_| std::future::pending()));
    let unlisted = id_of(&tasks.create_for(&subject, |_| std::future::pending()));
    let told = heard.0.lock().unwrap().clone();
    let listed_of = |id: &str| {
        let record = told.iter().find(|r| r.task.task_id == id).unwrap();
        (record.owner.as_deref().map(str::to_owned), record.listed)
    };
    assert_eq!(
        listed_of(&listed),
        (Some("digest-of-the-session".to_owned()), true)
    );
    // The stateless era has no tasks/list: its caller's tasks are kept in no list.
    assert_eq!(
        listed_of(&unlisted),
        (Some("digest-of-the-subject".to_owned()), false)
    );
}
