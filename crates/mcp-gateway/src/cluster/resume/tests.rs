//! The relay of retries without a running Redis: outcomes as they cross, keys, and Redis down.

use std::time::Duration;

use super::*;

/// A share that is never started: no threads, Redis where nothing listens.
fn share(url: &str, suspensions: &Arc<Suspensions>) -> ResumeShare {
    let seal = SessionSeal::new(&[[5u8; 32]], Duration::from_secs(60)).unwrap();
    ResumeShare {
        redis: Redis::new(url).unwrap(),
        prefix: "p".to_owned(),
        replica: seal.replica().to_owned(),
        seal: Arc::new(seal),
        suspensions: Arc::downgrade(suspensions),
        runtime: tokio::runtime::Handle::current(),
        waiters: Mutex::new(HashMap::new()),
        relayed: Arc::new(tokio::sync::Semaphore::new(MAX_RELAYED)),
    }
}

/// `outcome` after it crossed: encoded, sealed, opened and decoded.
fn crossed(outcome: &Result<Outcome, ErrorObject>) -> Result<Outcome, ErrorObject> {
    let value = encode(outcome);
    decode(&value).unwrap_or_else(|| panic!("{value} does not decode"))
}

fn raw(value: Value) -> RawJson {
    RawJson::encode(&value).unwrap()
}

#[test]
fn every_outcome_crosses_as_it_was() {
    let input = raw(json!({"resultType": "input_required", "requestState": "s"}));
    let Ok(Outcome::InputRequired(got)) = crossed(&Ok(Outcome::InputRequired(input.clone())))
    else {
        panic!("not input_required");
    };
    assert_eq!(got.get(), input.get());
    let task = raw(json!({"resultType": "task", "taskId": "t"}));
    let Ok(Outcome::Task(got)) = crossed(&Ok(Outcome::Task(task.clone()))) else {
        panic!("not a task");
    };
    assert_eq!(got.get(), task.get());
    let result: CallToolResult =
        serde_json::from_value(json!({"content": [{"type": "text", "text": "hello"}]})).unwrap();
    let done = Ok(Outcome::Done(Ok(Relayed::Complete(ToolOutput::new(
        result, true,
    )))));
    let Ok(Outcome::Done(Ok(Relayed::Complete(out)))) = crossed(&done) else {
        panic!("not complete");
    };
    assert!(out.truncated);
    assert_eq!(
        serde_json::to_value(&out.result).unwrap()["content"][0]["text"],
        "hello"
    );
    let upstream = raw(json!({"resultType": "input_required", "requestState": "theirs"}));
    let Ok(Outcome::Done(Ok(Relayed::InputRequired(got)))) = crossed(&Ok(Outcome::Done(Ok(
        Relayed::InputRequired(upstream.clone()),
    )))) else {
        panic!("not the upstream's input_required");
    };
    assert_eq!(got.get(), upstream.get());
    let error = ErrorObject::new(code::INVALID_PARAMS, "no call".to_owned());
    let Err(got) = crossed(&Err(error)) else {
        panic!("not an error");
    };
    assert_eq!((got.code, got.message.as_str()), (-32602, "no call"));
}

#[test]
fn a_calls_error_keeps_its_kind_where_the_modes_tell_kinds_apart() {
    let rpc = CallError::Rpc {
        server: "s".to_owned(),
        what: "t".to_owned(),
        code: -32042,
        message: "m".to_owned(),
        data: Some(json!({"why": 1})),
    };
    let Ok(Outcome::Done(Err(CallError::Rpc {
        server,
        what,
        code,
        message,
        data,
    }))) = crossed(&Ok(Outcome::Done(Err(rpc))))
    else {
        panic!("not an rpc error");
    };
    assert_eq!((server.as_str(), what.as_str(), code), ("s", "t", -32042));
    assert_eq!((message.as_str(), data), ("m", Some(json!({"why": 1}))));
    let timeout = CallError::Timeout {
        server: "s".to_owned(),
        what: "t".to_owned(),
        waited_ms: 1500,
    };
    let Ok(Outcome::Done(Err(CallError::Timeout { waited_ms, .. }))) =
        crossed(&Ok(Outcome::Done(Err(timeout))))
    else {
        panic!("not a timeout");
    };
    assert_eq!(waited_ms, 1500);
    let unknown = CallError::UnknownTool {
        name: "x".to_owned(),
    };
    let Ok(Outcome::Done(Err(CallError::Failed { message, .. }))) =
        crossed(&Ok(Outcome::Done(Err(unknown))))
    else {
        panic!("not a failure");
    };
    assert!(message.contains("no tool is exposed as `x`"), "{message}");
}

#[tokio::test]
async fn keys_name_digests_and_an_outcome_opens_under_its_own_key_only() {
    let suspensions = Arc::new(Suspensions::default());
    let share = share("redis://127.0.0.1:1", &suspensions);
    let state = "mcp-gateway/suspended/00aa11bb22cc33dd.0-secretsecret";
    let key = share.outcome_key(state, Some("alice"));
    assert!(key.starts_with("p:resumed:"), "{key}");
    assert!(
        !key.contains("secretsecret") && !key.contains("alice"),
        "{key}"
    );
    // Each caller has a key of its own; so has a caller nobody authenticated.
    let others = [
        share.outcome_key(state, Some("bob")),
        share.outcome_key(state, None),
    ];
    assert!(others.iter().all(|other| other != &key), "{others:?}");
    assert_ne!(others[0], others[1]);
    let value = encode(&Ok(Outcome::Task(raw(json!({"taskId": "t"})))));
    let plain = serde_json::to_vec(&value).unwrap();
    let sealed = share.seal.seal_record(&key, &plain).unwrap();
    assert!(!String::from_utf8_lossy(&sealed).contains("taskId"));
    assert_eq!(share.seal.open_record(&key, &sealed), Some(plain));
    assert!(share.seal.open_record(&others[0], &sealed).is_none());
}

#[tokio::test]
async fn redis_down_is_an_error_naming_redis_and_the_phase_never_the_password() {
    let suspensions = Arc::new(Suspensions::default());
    let share = share("redis://:hunter2-secret@127.0.0.1:1/0", &suspensions);
    let state = share.state("0-s").unwrap();
    let e = share
        .resume_at(&share.replica, &state, JsonObject::new(), None)
        .await
        .expect_err("Redis is down");
    assert_eq!(e.code, code::INTERNAL_ERROR);
    assert!(e.message.starts_with("GET: "), "{}", e.message);
    assert!(
        e.message.contains("Redis at 127.0.0.1:1/0"),
        "{}",
        e.message
    );
    assert!(!e.message.contains("hunter2"), "{}", e.message);
    // Nothing is left waiting.
    assert!(lock(&share.waiters).is_empty());
}

/// The error `share` answers a retry of `state`, held by `holder`, with.
async fn retried(share: &ResumeShare, holder: &str, state: &str) -> ErrorObject {
    share
        .resume_at(holder, state, JsonObject::new(), Some("alice"))
        .await
        .expect_err("no outcome")
}

#[tokio::test]
async fn a_state_no_replica_made_is_refused_before_redis_is_asked_anything() {
    // Redis is down: a retry that reaches it is told so (-32603 naming the GET).
    let suspensions = Arc::new(Suspensions::default());
    let share = share("redis://127.0.0.1:1", &suspensions);
    let made = share.state("7-0123456789abcdef").unwrap();
    assert_eq!(holder_of(&made), Some(share.replica.as_str()));
    let reached = retried(&share, &share.replica, &made).await;
    assert_eq!(reached.code, code::INTERNAL_ERROR, "{}", reached.message);
    assert!(reached.message.starts_with("GET: "), "{}", reached.message);
    // Another cluster's replica, with keys of its own, makes states this one refuses.
    let stranger = ResumeShare {
        seal: Arc::new(SessionSeal::new(&[[6u8; 32]], Duration::from_secs(60)).unwrap()),
        ..self::share("redis://127.0.0.1:1", &suspensions)
    };
    let theirs = stranger.state("7-0123456789abcdef").unwrap();
    let sealed = made.rsplit_once('.').unwrap().1;
    let mut tampered = made.clone().into_bytes();
    let last = tampered.len() - 1;
    tampered[last] = if tampered[last] == b'A' { b'B' } else { b'A' };
    let tampered = String::from_utf8(tampered).unwrap();
    let forged = [
        // The format before states were sealed, naming a live replica.
        format!("{STATE_PREFIX}{}.0-0123456789abcdef", share.replica),
        // Sealed with another key, naming this replica or the one that made it.
        format!(
            "{STATE_PREFIX}{}.{}",
            share.replica,
            theirs.rsplit_once('.').unwrap().1
        ),
        theirs.clone(),
        tampered,
        // Made for this replica, presented as another's (its channel would be another's).
        format!("{STATE_PREFIX}00aa11bb22cc33dd.{sealed}"),
        format!("{STATE_PREFIX}{}.{}", share.replica, "A".repeat(300)),
    ];
    for state in &forged {
        let holder = holder_of(state).unwrap();
        let refused = retried(&share, holder, state).await;
        assert_eq!(
            refused.code,
            code::INVALID_PARAMS,
            "{state}: {}",
            refused.message
        );
        assert!(
            refused.message.contains("no call of this gateway waits"),
            "{}",
            refused.message
        );
    }
    assert!(lock(&share.waiters).is_empty());
}

#[tokio::test]
async fn past_its_bound_a_relayed_retry_is_refused_saying_so_before_redis_is_asked() {
    let suspensions = Arc::new(Suspensions::default());
    let share = ResumeShare {
        relayed: Arc::new(tokio::sync::Semaphore::new(1)),
        ..share("redis://127.0.0.1:1", &suspensions)
    };
    let state = share.state("1-0123456789abcdef").unwrap();
    // One may wait: it reaches Redis (down here).
    let reached = retried(&share, &share.replica, &state).await;
    assert!(reached.message.starts_with("GET: "), "{}", reached.message);
    let _held = Arc::clone(&share.relayed).try_acquire_owned().unwrap();
    let refused = retried(&share, &share.replica, &state).await;
    assert_eq!(refused.code, code::INTERNAL_ERROR);
    assert!(
        refused.message.contains("retries already wait here"),
        "{}",
        refused.message
    );
}
