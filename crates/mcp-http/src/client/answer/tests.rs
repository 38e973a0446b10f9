//! Tables over every branch of the answer rules: each row names the branch it holds, and a
//! failing table lists every row that disagrees, not just the first.

use http::{HeaderMap, HeaderValue, StatusCode};
use mcp_protocol::RequestId;

use super::{
    Decision, ErrorBody, Next, PostError, Resume, Retries, Retry, Sent, decide, error_body,
    excerpt, resume,
};

/// A request in the handshake era, after the handshake, with a hook.
const REQUEST: Sent = Sent {
    request: true,
    initialize: false,
    stateless: false,
    has_session: true,
    has_auth: true,
};
const NOTIFICATION: Sent = Sent {
    request: false,
    ..REQUEST
};
const INITIALIZE: Sent = Sent {
    initialize: true,
    has_session: false,
    ..REQUEST
};
const NO_SESSION: Sent = Sent {
    has_session: false,
    ..REQUEST
};
const NO_HOOK: Sent = Sent {
    has_auth: false,
    ..REQUEST
};
const STATELESS: Sent = Sent {
    stateless: true,
    has_session: false,
    ..REQUEST
};

const FRESH: Retries = Retries {
    reauthorized: false,
    nonce_retried: false,
    again: 0,
};
const TRIED_OUT: Retries = Retries {
    again: super::AGAIN,
    ..FRESH
};
const REAUTHORIZED: Retries = Retries {
    reauthorized: true,
    ..FRESH
};
const NONCE_RETRIED: Retries = Retries {
    nonce_retried: true,
    ..FRESH
};
const SPENT: Retries = Retries {
    reauthorized: true,
    nonce_retried: true,
    ..FRESH
};

fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
    let mut map = HeaderMap::new();
    for (name, value) in pairs {
        map.append(
            http::HeaderName::from_bytes(name.as_bytes()).unwrap(),
            HeaderValue::from_str(value).unwrap(),
        );
    }
    map
}

/// A decision as one line: `next`, then `+session=<id>` when one is learned and `+ok` when
/// the hook hears of a success.
fn shown(decision: &Decision) -> String {
    let next = match &decision.next {
        Next::ReadJson => "json".to_owned(),
        Next::ReadSse => "sse".to_owned(),
        Next::Done => "done".to_owned(),
        Next::Challenge {
            challenge,
            retry,
            refused,
        } => {
            let retry = match retry {
                Retry::Credentials => "credentials",
                Retry::Nonce => "nonce",
            };
            let nonce = challenge
                .dpop_nonce
                .as_ref()
                .map(|n| n.to_str().unwrap().to_owned());
            format!(
                "ask {retry} {} challenges={} nonce={nonce:?} else {refused}",
                challenge.status.as_u16(),
                challenge.www_authenticate.len()
            )
        }
        Next::SessionEnded => "ended".to_owned(),
        Next::Refused { fallback: true } => "refused fallback".to_owned(),
        Next::Refused { fallback: false } => "refused".to_owned(),
        Next::Fail(e) => format!("fail: {e}"),
        Next::Later(wait) => format!("again in {wait:?}"),
    };
    let mut line = next;
    if let Some(session) = &decision.session {
        assert!(session.is_sensitive(), "a learned session id is sensitive");
        line += &format!(" +session={}", session.to_str().unwrap());
    }
    if decision.succeeded {
        line += " +ok";
    }
    line
}

/// A row: its name, what was sent, the retries spent, the status, the headers, and the
/// decision as [`shown`] writes it.
type Row = (
    &'static str,
    Sent,
    Retries,
    u16,
    &'static [(&'static str, &'static str)],
    &'static str,
);

const BEARER: (&str, &str) = ("www-authenticate", "Bearer error=\"invalid_token\"");
const DPOP: (&str, &str) = ("dpop-nonce", "n-1");

#[test]
fn every_status_and_header_decides_one_thing() {
    #[rustfmt::skip]
    let table: &[Row] = &[
        // 200: the content type decides how to read.
        ("json answer", REQUEST, FRESH, 200, &[("content-type", "application/json")], "json +ok"),
        ("no content type is read as JSON", REQUEST, FRESH, 200, &[], "json +ok"),
        ("sse answer", REQUEST, FRESH, 200, &[("content-type", "text/event-stream")], "sse +ok"),
        ("sse with parameters", REQUEST, FRESH, 200, &[("content-type", " text/event-stream; charset=utf-8")], "sse +ok"),
        ("media types ignore case", REQUEST, FRESH, 200, &[("content-type", "Text/Event-Stream")], "sse +ok"),
        ("a near miss is JSON", REQUEST, FRESH, 200, &[("content-type", "text/event")], "json +ok"),
        // 502, 503, 504 to what waits for no answer: sent again, after Retry-After (at most
        // 5 s) or 250 ms, a few times; a request never is.
        ("503 to a response", NOTIFICATION, FRESH, 503, &[], "again in 250ms"),
        ("503 with Retry-After", NOTIFICATION, FRESH, 503, &[("retry-after", "1")], "again in 1s"),
        ("a long Retry-After is cut to 5 s", NOTIFICATION, FRESH, 503, &[("retry-after", "3600")], "again in 5s"),
        ("502 from a balancer", NOTIFICATION, FRESH, 502, &[], "again in 250ms"),
        ("504 from a balancer", NOTIFICATION, FRESH, 504, &[], "again in 250ms"),
        ("503 after the last try", NOTIFICATION, TRIED_OUT, 503, &[], "refused"),
        ("503 to a request", REQUEST, FRESH, 503, &[("retry-after", "1")], "refused"),
        ("500 is not sent again", NOTIFICATION, FRESH, 500, &[], "refused"),
        // 202: only for what waits for no answer.
        ("202 to a notification", NOTIFICATION, FRESH, 202, &[], "done +ok"),
        ("202 to a request", REQUEST, FRESH, 202, &[], "fail: the server answered a request with 202 Accepted and no answer +ok"),
        // 401/403: the hook, once for credentials and once for a DPoP nonce.
        ("401, hook, fresh", REQUEST, FRESH, 401, &[BEARER], "ask credentials 401 challenges=1 nonce=None else HTTP 401 Unauthorized (WWW-Authenticate: \"Bearer error=\\\"invalid_token\\\"\")"),
        ("403 step-up, hook, fresh", REQUEST, FRESH, 403, &[("www-authenticate", "Bearer error=\"insufficient_scope\""), ("www-authenticate", "DPoP")], "ask credentials 403 challenges=2 nonce=None else HTTP 403 Forbidden (WWW-Authenticate: \"Bearer error=\\\"insufficient_scope\\\", DPoP\")"),
        ("401 without a hook", NO_HOOK, FRESH, 401, &[BEARER], "fail: HTTP 401 Unauthorized (WWW-Authenticate: \"Bearer error=\\\"invalid_token\\\"\")"),
        ("401 without a challenge header", NO_HOOK, FRESH, 401, &[], "fail: HTTP 401 Unauthorized (WWW-Authenticate: \"\")"),
        ("401 after new credentials", REQUEST, REAUTHORIZED, 401, &[BEARER], "fail: HTTP 401 Unauthorized (WWW-Authenticate: \"Bearer error=\\\"invalid_token\\\"\")"),
        ("401 with a nonce, fresh: the nonce retry first", REQUEST, FRESH, 401, &[BEARER, DPOP], "ask nonce 401 challenges=1 nonce=Some(\"n-1\") else HTTP 401 Unauthorized (WWW-Authenticate: \"Bearer error=\\\"invalid_token\\\"\")"),
        ("401 with a nonce after new credentials", REQUEST, REAUTHORIZED, 401, &[BEARER, DPOP], "ask nonce 401 challenges=1 nonce=Some(\"n-1\") else HTTP 401 Unauthorized (WWW-Authenticate: \"Bearer error=\\\"invalid_token\\\"\")"),
        ("401 with a nonce after the nonce retry", REQUEST, NONCE_RETRIED, 401, &[BEARER, DPOP], "ask credentials 401 challenges=1 nonce=Some(\"n-1\") else HTTP 401 Unauthorized (WWW-Authenticate: \"Bearer error=\\\"invalid_token\\\"\")"),
        ("401 with a nonce, all spent", REQUEST, SPENT, 401, &[BEARER, DPOP], "fail: HTTP 401 Unauthorized (WWW-Authenticate: \"Bearer error=\\\"invalid_token\\\"\")"),
        ("401 with a nonce, no hook", NO_HOOK, FRESH, 401, &[BEARER, DPOP], "fail: HTTP 401 Unauthorized (WWW-Authenticate: \"Bearer error=\\\"invalid_token\\\"\")"),
        // 404: the session, or a refusal.
        ("404 on a session", REQUEST, FRESH, 404, &[], "ended"),
        ("404 to a notification on a session", NOTIFICATION, FRESH, 404, &[], "ended"),
        ("404 without a session", NO_SESSION, FRESH, 404, &[], "refused"),
        ("404 stateless", STATELESS, FRESH, 404, &[], "refused"),
        // The initialize POST refused: maybe the deprecated transport.
        ("initialize 400", INITIALIZE, FRESH, 400, &[], "refused fallback"),
        ("initialize 404", INITIALIZE, FRESH, 404, &[], "refused fallback"),
        ("initialize 405", INITIALIZE, FRESH, 405, &[], "refused fallback"),
        ("initialize 500", INITIALIZE, FRESH, 500, &[], "refused"),
        ("initialize 404 naming a session", INITIALIZE, FRESH, 404, &[("mcp-session-id", "s-1")], "ended +session=s-1"),
        ("400 to another request", NO_SESSION, FRESH, 400, &[], "refused"),
        ("405 to another request", REQUEST, FRESH, 405, &[], "refused"),
        ("500", REQUEST, FRESH, 500, &[], "refused"),
        ("204 is no answer", REQUEST, FRESH, 204, &[], "refused +ok"),
        // The session id: from the initialize answer, or the first one seen; never stateless.
        ("initialize names the session", INITIALIZE, FRESH, 200, &[("mcp-session-id", "s-1")], "json +session=s-1 +ok"),
        ("initialize names it again", Sent { has_session: true, ..INITIALIZE }, FRESH, 200, &[("mcp-session-id", "s-2")], "json +session=s-2 +ok"),
        ("the first session id seen", NO_SESSION, FRESH, 200, &[("mcp-session-id", "s-1")], "json +session=s-1 +ok"),
        ("a later one is ignored", REQUEST, FRESH, 200, &[("mcp-session-id", "s-2")], "json +ok"),
        ("none in the stateless era", STATELESS, FRESH, 200, &[("mcp-session-id", "s-1")], "json +ok"),
        ("not visible ASCII", INITIALIZE, FRESH, 200, &[("mcp-session-id", "s 1")], "json +ok"),
    ];
    let mut wrong = Vec::new();
    for (name, sent, retries, status, pairs, want) in table {
        let status = StatusCode::from_u16(*status).unwrap();
        let got = shown(&decide(*sent, *retries, status, &headers(pairs)));
        if got != *want {
            wrong.push(format!("{name}:\n   got {got}\n  want {want}"));
        }
    }
    assert!(
        wrong.is_empty(),
        "{} rows wrong:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}

#[test]
fn a_granted_retry_is_spent_and_the_next_challenge_sees_it() {
    let challenge = headers(&[BEARER, DPOP]);
    let mut retries = Retries::default();
    let mut asked = Vec::new();
    // As `post` does: ask while the decision says so, spending what the hook granted.
    while let Next::Challenge { retry, .. } =
        decide(REQUEST, retries, StatusCode::UNAUTHORIZED, &challenge).next
    {
        asked.push(retry);
        retries.spend(retry);
        assert!(asked.len() <= 2, "the budget ends: {asked:?}");
    }
    assert_eq!(asked, [Retry::Nonce, Retry::Credentials]);
    assert_eq!(retries, SPENT);
    assert!(matches!(
        decide(REQUEST, retries, StatusCode::UNAUTHORIZED, &challenge).next,
        Next::Fail(PostError::Unauthorized { .. })
    ));
}

#[test]
fn an_error_body_is_the_answer_only_when_it_is_the_requests_error() {
    let id = RequestId::Number(7);
    let error_7 = br#"{"jsonrpc":"2.0","id":7,"error":{"code":-32601,"message":"no such method"}}"#;
    let error_8 = br#"{"jsonrpc":"2.0","id":8,"error":{"code":-32601,"message":"no such method"}}"#;
    let error_null =
        br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}"#;
    let result_7 = br#"{"jsonrpc":"2.0","id":7,"result":{}}"#;
    let status = StatusCode::BAD_REQUEST;
    let answer = |body: &[u8], id: Option<&RequestId>| match error_body(status, body, id) {
        ErrorBody::Answer(m) => format!("answer {:?}", m.id()),
        ErrorBody::Reject(e) => format!("reject {e}"),
    };
    #[rustfmt::skip]
    let table: &[(&str, &[u8], Option<&RequestId>, String)] = &[
        ("the request's own error", error_7, Some(&id), format!("answer {:?}", Some(&id))),
        ("another request's error", error_8, Some(&id), format!("reject HTTP 400 Bad Request: {}", String::from_utf8_lossy(error_8))),
        ("an error without an id", error_null, Some(&id), format!("reject HTTP 400 Bad Request: {}", String::from_utf8_lossy(error_null))),
        ("a result is no refusal's answer", result_7, Some(&id), format!("reject HTTP 400 Bad Request: {}", String::from_utf8_lossy(result_7))),
        ("a notification has no answer", error_7, None, format!("reject HTTP 400 Bad Request: {}", String::from_utf8_lossy(error_7))),
        ("nor does a notification take an error without an id", error_null, None, format!("reject HTTP 400 Bad Request: {}", String::from_utf8_lossy(error_null))),
        ("plain text", b"bad request", Some(&id), "reject HTTP 400 Bad Request: bad request".to_owned()),
        ("empty", b"", Some(&id), "reject HTTP 400 Bad Request: ".to_owned()),
    ];
    let mut wrong = Vec::new();
    for (name, body, id, want) in table {
        let got = answer(body, *id);
        if got != *want {
            wrong.push(format!("{name}:\n   got {got}\n  want {want}"));
        }
    }
    assert!(
        wrong.is_empty(),
        "{} rows wrong:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
    // A long body is cut to its first 300 bytes, at a word.
    let long = format!("{} secret-key-{}", "x".repeat(290), "y".repeat(20));
    let ErrorBody::Reject(PostError::Status { excerpt, .. }) =
        error_body(status, long.as_bytes(), Some(&id))
    else {
        panic!("a long text body is a rejection");
    };
    assert_eq!(excerpt, format!("{} …", "x".repeat(290)));
}

#[test]
fn a_resumed_stream_is_read_ended_or_lost() {
    let table = [
        (200, true, Resume::Read),
        (200, false, Resume::Read),
        (404, true, Resume::SessionEnded),
        (404, false, Resume::Lost),
        (405, true, Resume::Lost),
        (500, true, Resume::Lost),
        (204, true, Resume::Lost),
    ];
    for (status, has_session, want) in table {
        let got = resume(StatusCode::from_u16(status).unwrap(), has_session);
        assert_eq!(got, want, "{status} with session {has_session}");
    }
}

#[test]
fn every_error_reads_as_before() {
    let table = [
        (
            PostError::Send("client error (Connect): connection refused".into()),
            "POST failed: client error (Connect): connection refused",
        ),
        (
            PostError::Timeout(std::time::Duration::from_secs(30)),
            "POST failed: no answer within 30s",
        ),
        (
            PostError::AcceptedRequest,
            "the server answered a request with 202 Accepted and no answer",
        ),
        (
            PostError::EmptyBody,
            "the server answered 200 with an empty body",
        ),
        (
            PostError::Read {
                cause: "length limit exceeded".into(),
                limit: 10,
            },
            "reading the answer failed: length limit exceeded (limit 10 bytes)",
        ),
        (
            PostError::Unauthorized {
                status: StatusCode::FORBIDDEN,
                www_authenticate: "Bearer".into(),
            },
            "HTTP 403 Forbidden (WWW-Authenticate: \"Bearer\")",
        ),
        (
            PostError::SessionEnded,
            "the server ended the session (HTTP 404); initialize a new one",
        ),
        (
            PostError::Status {
                status: StatusCode::SERVICE_UNAVAILABLE,
                excerpt: "overloaded".into(),
            },
            "HTTP 503 Service Unavailable: overloaded",
        ),
    ];
    for (error, want) in table {
        assert_eq!(error.to_string(), want);
    }
}

#[test]
fn a_cut_word_is_left_out() {
    assert_eq!(excerpt(b"short body", 300), "short body");
    assert_eq!(excerpt(b"refused key sk-123456 more", 15), "refused key …");
    assert_eq!(excerpt(b"refused key sk-123456 more", 11), "refused key…");
    assert_eq!(excerpt(b"one-long-token-cut", 5), "…");
}

#[test]
fn a_lost_connection_sends_a_response_again_a_few_times_and_a_request_never() {
    let mut retries = Retries::default();
    assert_eq!(retries.after_lost(REQUEST), None);
    let waits: Vec<_> = std::iter::from_fn(|| retries.after_lost(NOTIFICATION)).collect();
    assert_eq!(
        waits,
        [250, 500, 1000].map(std::time::Duration::from_millis),
        "{waits:?}"
    );
    // The tries are one budget with the 5xx ones.
    let mut retries = Retries::default();
    retries.waited();
    retries.waited();
    assert!(retries.after_lost(NOTIFICATION).is_some());
    assert_eq!(retries.after_lost(NOTIFICATION), None);
}
