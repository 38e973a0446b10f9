//! What the Streamable HTTP client does with the answer to one of its requests, apart from
//! the I/O (the `proto` layer under the client's async functions, as h2 puts its rules between
//! `codec` and `client.rs`). Given what was sent, the status, the headers and the retries
//! already spent, [`decide`] says what comes next: read a JSON body, read an SSE stream, stop
//! (a 202), ask the authorization hook and send again, end the session (a 404 on it), or read a
//! refusal (whose body may be a JSON-RPC error, and which may send an `initialize` to the
//! deprecated HTTP+SSE transport). [`error_body`] reads such a body and [`resume`] judges the
//! answer to a GET that resumes a stream. Nothing here awaits, reads a clock or touches a
//! socket, so tables test every branch (`tests.rs`).
//!
//! The errors are a [`PostError`]; they reach `mcp-session`'s core as text, which is all its
//! `fail_request`, `reject_request` and `end` take.

use http::header::{CONTENT_TYPE, WWW_AUTHENTICATE};
use http::{HeaderMap, HeaderValue, StatusCode};
use mcp_protocol::{Decoded, Message, RequestId};

use super::{Challenge, DPOP_NONCE, SESSION_ID};

#[cfg(test)]
mod tests;

/// What was POSTed, as far as the meaning of its answer depends on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Sent {
    /// A request, which waits for an answer; not a notification or a response.
    pub(super) request: bool,
    /// The `initialize` request: refused with 400, 404 or 405, it may mean the deprecated
    /// transport, and its answer names the session.
    pub(super) initialize: bool,
    /// A stateless-era request, which has no session to learn.
    pub(super) stateless: bool,
    /// Whether the client held a session id when it sent this.
    pub(super) has_session: bool,
    /// Whether an authorization hook is configured to hear challenges.
    pub(super) has_auth: bool,
}

/// The retries one POST has spent: it is sent again at most once for new credentials, and
/// once more for a challenge that carries a `DPoP-Nonce` (RFC 9449 §9: a first request with a
/// new token may be refused only for lack of the server's nonce); a notification or a
/// response, also up to [`AGAIN`] times after a server or balancer said it could not take it
/// now, or the connection was lost under it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Retries {
    reauthorized: bool,
    nonce_retried: bool,
    again: u8,
}

impl Retries {
    /// The hook granted `retry`: it is spent.
    pub(super) fn spend(&mut self, retry: Retry) {
        match retry {
            Retry::Credentials => self.reauthorized = true,
            Retry::Nonce => self.nonce_retried = true,
        }
    }

    /// How long to wait before sending a notification or a response again whose connection
    /// was lost before its answer (a replica killed under it, say), if a try is left; the try
    /// is spent. A request is never sent twice: only its caller knows whether to.
    pub(super) fn after_lost(&mut self, sent: Sent) -> Option<std::time::Duration> {
        if sent.request || self.again >= AGAIN {
            return None;
        }
        let wait = later(None, self.again);
        self.again += 1;
        Some(wait)
    }

    /// A [`Next::Later`] was taken: its try is spent.
    pub(super) fn waited(&mut self) {
        self.again = self.again.saturating_add(1);
    }
}

/// How many times a notification or a response is sent again after `502`, `503` or `504`, or
/// a connection lost under it. Sending one twice does no harm (a server takes the answer to
/// each of its requests once), and losing one can leave the server waiting on a request of
/// its own (an elicitation the user answered, say) until its time runs out.
pub(super) const AGAIN: u8 = 3;

/// How long to wait before the next try: the server's `Retry-After` in seconds when it gives
/// one (at most 5 s), else 250 ms, doubling with each try.
fn later(headers: Option<&HeaderMap>, tried: u8) -> std::time::Duration {
    let told = headers
        .and_then(|h| h.get(http::header::RETRY_AFTER))
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    match told {
        Some(secs) => std::time::Duration::from_secs(secs.min(5)),
        None => std::time::Duration::from_millis(250 << tried.min(4)),
    }
}

/// Which retry a challenge would spend.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Retry {
    /// New credentials (a refreshed token, a step-up).
    Credentials,
    /// The same credentials with the server's DPoP nonce.
    Nonce,
}

/// What the client does with an answer.
#[derive(Debug)]
pub(super) enum Next {
    /// 200 with a JSON body: read it (bounded); it holds the answer.
    ReadJson,
    /// 200 with `text/event-stream`: read the stream, resuming it if it drops.
    ReadSse,
    /// 202 to a notification or a response: nothing more to do.
    Done,
    /// 401 or 403 with a hook and a retry left: tell the hook, and if it has new credentials
    /// spend `retry` and send again; if not, fail with `refused`.
    Challenge {
        /// What the hook hears.
        challenge: Challenge,
        /// The retry a yes would spend.
        retry: Retry,
        /// The error when the hook says no.
        refused: PostError,
    },
    /// 404 while holding a session: the server ended it; everything in flight fails, and the
    /// consumer starts a new one.
    SessionEnded,
    /// Any other status: read the body (it may be a JSON-RPC error, see [`error_body`]).
    /// `fallback`: an `initialize` refused with 400, 404 or 405, after which the deprecated
    /// HTTP+SSE transport may answer at the same URL.
    Refused {
        /// Whether the deprecated transport is worth trying.
        fallback: bool,
    },
    /// Give up on this message (after draining the body).
    Fail(PostError),
    /// `502`, `503` or `504` to a notification or a response with a try left: wait this long
    /// and send it again (see [`AGAIN`]).
    Later(std::time::Duration),
}

/// Everything an answer decides.
#[derive(Debug)]
pub(super) struct Decision {
    /// A session id to keep from now on (the answer to `initialize`, or the first one seen),
    /// marked sensitive.
    pub(super) session: Option<HeaderValue>,
    /// A 2xx: the hook hears that whatever chain of challenges led here is over.
    pub(super) succeeded: bool,
    /// What to do with the answer.
    pub(super) next: Next,
}

/// Decides what an answer with `status` and `headers` to what was `sent` means, with `retries`
/// spent so far.
pub(super) fn decide(
    sent: Sent,
    retries: Retries,
    status: StatusCode,
    headers: &HeaderMap,
) -> Decision {
    let session = if !sent.stateless && (sent.initialize || !sent.has_session) {
        session_id(headers)
    } else {
        None
    };
    let has_session = sent.has_session || session.is_some();
    let next = match status {
        StatusCode::OK if is_sse(headers) => Next::ReadSse,
        StatusCode::OK => Next::ReadJson,
        StatusCode::ACCEPTED if sent.request => Next::Fail(PostError::AcceptedRequest),
        StatusCode::ACCEPTED => Next::Done,
        StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => {
            challenged(sent, retries, status, headers)
        }
        StatusCode::NOT_FOUND if has_session => Next::SessionEnded,
        StatusCode::BAD_GATEWAY | StatusCode::SERVICE_UNAVAILABLE | StatusCode::GATEWAY_TIMEOUT
            if !sent.request && retries.again < AGAIN =>
        {
            Next::Later(later(Some(headers), retries.again))
        }
        _ => Next::Refused {
            fallback: sent.initialize
                && matches!(
                    status,
                    StatusCode::BAD_REQUEST
                        | StatusCode::NOT_FOUND
                        | StatusCode::METHOD_NOT_ALLOWED
                ),
        },
    };
    Decision {
        session,
        succeeded: status.is_success(),
        next,
    }
}

/// A 401 or 403: the hook is asked if there is one and the budget allows, the DPoP nonce
/// retry first when the challenge carries a nonce.
fn challenged(sent: Sent, retries: Retries, status: StatusCode, headers: &HeaderMap) -> Next {
    let challenge = Challenge {
        status,
        www_authenticate: headers.get_all(WWW_AUTHENTICATE).iter().cloned().collect(),
        dpop_nonce: headers.get(DPOP_NONCE).cloned(),
    };
    let refused = PostError::Unauthorized {
        status,
        www_authenticate: challenge
            .www_authenticate
            .iter()
            .filter_map(|v| v.to_str().ok())
            .collect::<Vec<_>>()
            .join(", "),
    };
    let retry = if challenge.dpop_nonce.is_some() && !retries.nonce_retried {
        Retry::Nonce
    } else if !retries.reauthorized {
        Retry::Credentials
    } else {
        return Next::Fail(refused);
    };
    if !sent.has_auth {
        return Next::Fail(refused);
    }
    Next::Challenge {
        challenge,
        retry,
        refused,
    }
}

/// `MCP-Session-Id`, if it is one: visible ASCII only (spec `basic/transports.mdx#session-management`).
/// Marked sensitive: it is as good as a credential for the session.
fn session_id(headers: &HeaderMap) -> Option<HeaderValue> {
    let id = headers.get(&SESSION_ID)?;
    if !id.as_bytes().iter().all(|b| (0x21..=0x7e).contains(b)) {
        return None;
    }
    let mut id = id.clone();
    id.set_sensitive(true);
    Some(id)
}

/// Whether the body is an SSE stream. Media types are case-insensitive (RFC 9110 §8.3.1), and
/// parameters such as `charset` may follow.
fn is_sse(headers: &HeaderMap) -> bool {
    headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(|v| v.trim_start().as_bytes())
        .is_some_and(|v| v.len() >= SSE.len() && v[..SSE.len()].eq_ignore_ascii_case(SSE))
}

const SSE: &[u8] = b"text/event-stream";

/// What the body of a refusal says.
#[derive(Debug)]
pub(super) enum ErrorBody {
    /// A JSON-RPC error for the very request that was refused: it is the answer.
    Answer(Message),
    /// No answer: a request is rejected with this (to the `server/discover` probe, that means
    /// a handshake-era server), anything else fails with it.
    Reject(PostError),
}

/// Reads the (bounded) body of a refusal with `status` to the message `id` (`None` for a
/// notification or a response).
pub(super) fn error_body(status: StatusCode, body: &[u8], id: Option<&RequestId>) -> ErrorBody {
    if let Ok(Decoded::Single(m @ Message::Error(_))) = mcp_protocol::decode(body)
        && m.id().is_some()
        && m.id() == id
    {
        return ErrorBody::Answer(m);
    }
    ErrorBody::Reject(PostError::Status {
        status,
        excerpt: excerpt(body, 300),
    })
}

/// What the answer to a GET that resumes a stream (with `Last-Event-ID`) means.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Resume {
    /// 200: read the new stream.
    Read,
    /// 404 while holding a session: the server ended it.
    SessionEnded,
    /// Anything else: the stream is lost.
    Lost,
}

/// Judges the answer to a resuming GET.
pub(super) fn resume(status: StatusCode, has_session: bool) -> Resume {
    match status {
        StatusCode::OK => Resume::Read,
        StatusCode::NOT_FOUND if has_session => Resume::SessionEnded,
        _ => Resume::Lost,
    }
}

/// Why a message sent over Streamable HTTP got no answer. Each says what happened without a
/// header value beyond the server's own challenge, and quotes at most the start of a body.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(super) enum PostError {
    /// The request could not be sent or its answer's head not received (a refused
    /// connection, a TLS failure, a reset); the cause chain as text, since hyper's error types
    /// are not ours to show.
    #[error("POST failed: {0}")]
    Send(String),
    /// A notification's or a response's POST got no answer in time.
    #[error("POST failed: no answer within {0:?}")]
    Timeout(std::time::Duration),
    /// A request was answered with 202 Accepted, which only notifications and responses may be.
    #[error("the server answered a request with 202 Accepted and no answer")]
    AcceptedRequest,
    /// 200 with no body.
    #[error("the server answered 200 with an empty body")]
    EmptyBody,
    /// The body could not be read to its end, or was larger than the limit.
    #[error("reading the answer failed: {cause} (limit {limit} bytes)")]
    Read {
        /// What went wrong.
        cause: String,
        /// The limit the body was read with.
        limit: usize,
    },
    /// 401 or 403 that is not sent again: no hook, the hook has no new credentials, or the
    /// retries are spent.
    #[error("HTTP {status} (WWW-Authenticate: {www_authenticate:?})")]
    Unauthorized {
        /// 401 or 403.
        status: StatusCode,
        /// The challenges, as the server sent them.
        www_authenticate: String,
    },
    /// 404 on the session: the server ended it.
    #[error("the server ended the session (HTTP 404); initialize a new one")]
    SessionEnded,
    /// Any other status, without a JSON-RPC answer.
    #[error("HTTP {status}: {excerpt}")]
    Status {
        /// The status.
        status: StatusCode,
        /// The start of the body (see [`excerpt`]).
        excerpt: String,
    },
}

/// The first `limit` bytes of an error body, for an error message. When the body is longer,
/// the word the limit cut is left out (`…` stands for the rest): a consumer hides the secrets
/// a server quotes where they are whole (the host's `mcp_protocol::Secrets`), and the cut
/// first bytes of a key would show.
pub(super) fn excerpt(body: &[u8], limit: usize) -> String {
    if body.len() <= limit {
        return String::from_utf8_lossy(body).into_owned();
    }
    let cut = &body[..limit];
    let end = if body[limit].is_ascii_whitespace() {
        limit
    } else {
        cut.iter()
            .rposition(u8::is_ascii_whitespace)
            .map_or(0, |i| i + 1)
    };
    format!("{}…", String::from_utf8_lossy(&cut[..end]))
}
