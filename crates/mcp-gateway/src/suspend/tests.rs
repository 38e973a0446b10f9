//! Suspended calls: expiry, the bound on their number, their callers, and retries relayed
//! to and from other replicas (`cluster/resume`).

use super::*;

/// A call that asks its client one elicitation and reports what the upstream was answered.
fn asking(
    told: oneshot::Sender<Result<RawJson, ErrorObject>>,
) -> impl FnOnce() -> Pin<Box<dyn Future<Output = Result<Relayed, CallError>> + Send + 'static>> {
    move || {
        Box::pin(async move {
            let asks = current_asks().expect("the call runs where it can ask");
            let params = RawJson::encode(&json!({
                "message": "m", "requestedSchema": {"type": "object", "properties": {}},
            }))
            .expect("encodes");
            let request =
                ServerRequest::decode("elicitation/create", Some(&params)).expect("decodes");
            let (answer, answered) = oneshot::channel();
            asks.send(Ask { request, answer }).await.expect("sent");
            let _ = told.send(answered.await.expect("answered"));
            Err(CallError::Failed {
                server: "s".to_owned(),
                what: "t".to_owned(),
                message: "done".to_owned(),
            })
        })
    }
}

/// The adopter of calls that never make a task.
fn no_task(_: Running) -> Result<RawJson, ErrorObject> {
    Err(reply::internal("no task was expected"))
}

/// A call of `caller`, tracked by nobody, that never makes a task.
fn of(caller: Option<&str>) -> Bound {
    Bound {
        caller: caller.map(Arc::from),
        track: Arc::new(|_, _| {}),
        adopt: Arc::new(no_task),
    }
}

/// A call nobody authenticated.
fn anyone() -> Bound {
    of(None)
}

#[tokio::test]
async fn a_client_that_never_retries_expires_with_an_error_to_the_upstream() {
    assert_eq!(Suspensions::default().ttl, SUSPEND_FOR);
    let suspensions = Arc::new(Suspensions {
        ttl: Duration::from_millis(50),
        ..Suspensions::default()
    });
    let (told, upstream_was_told) = oneshot::channel();
    let outcome = suspensions
        .run(None, asking(told), None, &|_, _| {}, &no_task, anyone())
        .await
        .expect("runs");
    let Outcome::InputRequired(raw) = outcome else {
        panic!("not suspended: {outcome:?}");
    };
    let result: Value = raw.decode().expect("json");
    assert_eq!(result["resultType"], "input_required");
    assert_eq!(
        result["inputRequests"]["upstream-0"]["method"],
        "elicitation/create"
    );
    assert!(
        result["requestState"]
            .as_str()
            .is_some_and(|s| s.starts_with(STATE_PREFIX)),
        "{result}"
    );
    assert_eq!(suspensions.len(), 1);
    // Nobody retries: at the deadline the upstream is answered.
    let error = tokio::time::timeout(Duration::from_secs(10), upstream_was_told)
        .await
        .expect("the upstream is answered at the deadline")
        .expect("answered")
        .expect_err("with an error");
    assert!(
        error.message.contains("did not answer within 0 s"),
        "{}",
        error.message
    );
    assert_eq!(suspensions.len(), 0);
}

#[tokio::test]
async fn past_the_bound_the_upstreams_request_is_refused() {
    let suspensions = Arc::new(Suspensions::default());
    for _ in 0..MAX_SUSPENDED {
        let (told, _) = oneshot::channel();
        let outcome = suspensions
            .run(None, asking(told), None, &|_, _| {}, &no_task, anyone())
            .await;
        assert!(matches!(outcome, Ok(Outcome::InputRequired(_))));
    }
    assert_eq!(suspensions.len(), MAX_SUSPENDED);
    let (told, upstream_was_told) = oneshot::channel();
    let outcome = suspensions
        .run(None, asking(told), None, &|_, _| {}, &no_task, anyone())
        .await;
    // Refused, the call goes on to its own end without its client's answer.
    assert!(matches!(outcome, Ok(Outcome::Done(Err(_)))), "{outcome:?}");
    let error = upstream_was_told
        .await
        .expect("answered")
        .expect_err("refused");
    assert!(
        error.message.contains("256 calls already wait"),
        "{}",
        error.message
    );
    assert_eq!(suspensions.len(), MAX_SUSPENDED);
}

/// A call of `caller` suspended in `suspensions`: its `requestState`, and what its upstream
/// is told.
async fn suspended(
    suspensions: &Arc<Suspensions>,
    caller: Option<&str>,
) -> (String, oneshot::Receiver<Result<RawJson, ErrorObject>>) {
    let (told, upstream_was_told) = oneshot::channel();
    let outcome = suspensions
        .run(None, asking(told), None, &|_, _| {}, &no_task, of(caller))
        .await
        .expect("runs");
    let Outcome::InputRequired(raw) = outcome else {
        panic!("not suspended: {outcome:?}");
    };
    let result: Value = raw.decode().expect("json");
    let state = result["requestState"].as_str().expect("a state").to_owned();
    (state, upstream_was_told)
}

/// The client's answer to the upstream's one question.
fn answered(name: &str) -> JsonObject {
    let mut responses = JsonObject::new();
    responses.insert(
        "upstream-0".to_owned(),
        json!({"action": "accept", "content": {"name": name}}),
    );
    responses
}

#[tokio::test]
async fn a_retry_of_another_caller_finds_nothing_and_leaves_the_call_waiting() {
    let suspensions = Arc::new(Suspensions::default());
    let (state, upstream_was_told) = suspended(&suspensions, Some("alice")).await;
    let retry = |caller: Option<&str>| {
        let suspensions = Arc::clone(&suspensions);
        let (state, caller) = (state.clone(), caller.map(str::to_owned));
        async move {
            let (unused, _) = oneshot::channel();
            suspensions
                .run(
                    Some((state, answered("x"))),
                    asking(unused),
                    None,
                    &|_, _| {},
                    &no_task,
                    of(caller.as_deref()),
                )
                .await
        }
    };
    for other in [Some("bob"), None] {
        let error = retry(other).await.expect_err("another caller's retry");
        assert_eq!(error.code, -32602);
        assert!(
            error.message.contains("no call of this gateway waits"),
            "{error}"
        );
        assert_eq!(suspensions.len(), 1);
    }
    // Its own caller's retry resumes it.
    let outcome = retry(Some("alice")).await.expect("resumed");
    assert!(matches!(outcome, Outcome::Done(Err(_))), "{outcome:?}");
    let told = upstream_was_told
        .await
        .expect("answered")
        .expect("an answer");
    assert!(told.get().contains("\"x\""), "{}", told.get());
    assert_eq!(suspensions.len(), 0);
}

#[tokio::test]
async fn a_relayed_retry_resumes_its_callers_call_once() {
    let suspensions = Arc::new(Suspensions::default());
    let (state, upstream_was_told) = suspended(&suspensions, Some("alice")).await;
    // Another caller's relayed retry: unknown, and the call still waits.
    let other = suspensions
        .resume_relayed(&state, &answered("bob"), Some("bob"))
        .await;
    assert!(matches!(other, RelayedRetry::Unknown), "{other:?}");
    assert_eq!(suspensions.len(), 1);
    // Its caller's: resumed, the answer reaching the upstream.
    let first = suspensions
        .resume_relayed(&state, &answered("mine"), Some("alice"))
        .await;
    assert!(
        matches!(first, RelayedRetry::Resumed(Ok(Outcome::Done(Err(_))))),
        "{first:?}"
    );
    let told = upstream_was_told
        .await
        .expect("answered")
        .expect("an answer");
    assert!(told.get().contains("mine"), "{}", told.get());
    // The same retry relayed again: taken, its outcome not yet written, then written.
    let again = suspensions
        .resume_relayed(&state, &answered("again"), Some("alice"))
        .await;
    assert!(
        matches!(again, RelayedRetry::Taken { written: false }),
        "{again:?}"
    );
    suspensions.written(&state);
    let again = suspensions
        .resume_relayed(&state, &answered("again"), Some("alice"))
        .await;
    assert!(
        matches!(again, RelayedRetry::Taken { written: true }),
        "{again:?}"
    );
    // Another caller still finds nothing.
    let other = suspensions
        .resume_relayed(&state, &answered("bob"), Some("bob"))
        .await;
    assert!(matches!(other, RelayedRetry::Unknown), "{other:?}");
}

#[tokio::test]
async fn past_the_bound_on_taken_states_a_relayed_retry_is_still_remembered_while_it_runs() {
    let suspensions = Arc::new(Suspensions::default());
    // As many states as the bound, each resumed by a relayed retry whose outcome was written
    // (a client that resumed many calls through another replica in the last minute).
    {
        let mut taken = lock(&suspensions.taken);
        for i in 0..4 * MAX_SUSPENDED {
            taken.insert(
                format!("{STATE_PREFIX}old-{i}"),
                Taken {
                    caller: None,
                    written: Some(Instant::now()),
                },
            );
        }
    }
    let (state, _upstream) = suspended(&suspensions, Some("alice")).await;
    let first = suspensions
        .resume_relayed(&state, &answered("mine"), Some("alice"))
        .await;
    assert!(matches!(first, RelayedRetry::Resumed(_)), "{first:?}");
    // Relayed again before its outcome is written: told to wait for it. Answered unknown,
    // that answer would be written first and stand in for the call's outcome.
    let again = suspensions
        .resume_relayed(&state, &answered("again"), Some("alice"))
        .await;
    assert!(
        matches!(again, RelayedRetry::Taken { written: false }),
        "{again:?}"
    );
    // The oldest written one made room; the bound holds.
    assert_eq!(lock(&suspensions.taken).len(), 4 * MAX_SUSPENDED);
}

/// Records the retries relayed to it, and answers each with an error naming its holder.
#[derive(Default)]
struct Recorder(Mutex<Vec<Heard>>);

/// A relayed retry: its holder, state, answers and caller.
type Heard = (String, String, JsonObject, Option<String>);

impl Elsewhere for Recorder {
    fn state(&self, body: &str) -> Option<String> {
        Some(format!("{STATE_PREFIX}00aa11bb22cc33dd.{body}"))
    }

    fn resume<'a>(
        &'a self,
        holder: &'a str,
        state: &'a str,
        responses: JsonObject,
        caller: Option<&'a str>,
    ) -> Pin<Box<dyn Future<Output = Result<Outcome, ErrorObject>> + Send + 'a>> {
        lock(&self.0).push((
            holder.to_owned(),
            state.to_owned(),
            responses,
            caller.map(str::to_owned),
        ));
        Box::pin(async move { Err(reply::internal(format!("relayed to {holder}"))) })
    }
}

#[tokio::test]
async fn with_a_share_states_name_the_replica_and_a_retry_it_does_not_hold_is_relayed() {
    let suspensions = Arc::new(Suspensions::default());
    let recorder = Arc::new(Recorder::default());
    suspensions.share(Arc::clone(&recorder) as Arc<dyn Elsewhere>);
    let (state, _upstream) = suspended(&suspensions, Some("alice")).await;
    assert!(
        state.starts_with("mcp-gateway/suspended/00aa11bb22cc33dd."),
        "{state}"
    );
    assert_eq!(holder_of(&state), Some("00aa11bb22cc33dd"));
    // A state another replica made: relayed there, with the answers and the caller.
    let theirs = "mcp-gateway/suspended/ffee000011112222.3-abcdef";
    let (unused, _) = oneshot::channel();
    let error = suspensions
        .run(
            Some((theirs.to_owned(), answered("mine"))),
            asking(unused),
            None,
            &|_, _| {},
            &no_task,
            of(Some("alice")),
        )
        .await
        .expect_err("the recorder's answer");
    assert!(
        error.message.contains("relayed to ffee000011112222"),
        "{error}"
    );
    {
        let relayed = lock(&recorder.0);
        assert_eq!(relayed.len(), 1);
        let (holder, state, responses, caller) = &relayed[0];
        assert_eq!(
            (holder.as_str(), state.as_str()),
            ("ffee000011112222", theirs)
        );
        assert_eq!(responses, &answered("mine"));
        assert_eq!(caller.as_deref(), Some("alice"));
    }
    // What names no replica, or one that is not a replica's name, is nobody's to relay to.
    for forged in [
        "mcp-gateway/suspended/3-abcdef",
        "mcp-gateway/suspended/x:y.3-abcdef",
        "mcp-gateway/suspended/.3-abcdef",
    ] {
        assert_eq!(holder_of(forged), None, "{forged}");
        let (unused, _) = oneshot::channel();
        let error = suspensions
            .run(
                Some((forged.to_owned(), answered("mine"))),
                asking(unused),
                None,
                &|_, _| {},
                &no_task,
                of(Some("alice")),
            )
            .await
            .expect_err("unknown");
        assert_eq!(error.code, -32602, "{forged}");
    }
    assert_eq!(lock(&recorder.0).len(), 1);
    assert_eq!(suspensions.len(), 1);
}
