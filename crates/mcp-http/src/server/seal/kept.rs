//! The logging level a client sets (`logging/setLevel`) applies at every replica that serves
//! its session (issue 24 §3). A sealed id holds the handshake, not what the client said after
//! it, so the replica that takes a `logging/setLevel` records its level in the
//! [`SessionShare`](super::SessionShare) (under the digest of the session id, as the end of a
//! session) before its session hears it; every replica reads it with the session's end before
//! each request ([`SessionShare::state`](super::SessionShare::state): one round trip), and when
//! it differs from what that replica's session was last told, tells the session first, as if
//! the client had sent it there, and waits for the answer before the request goes on. The
//! handler therefore hears the level at every replica, with the caller's identity, and does with
//! it what it does at one (the gateway passes it to its upstreams and to stateless ones with
//! each request).

use std::sync::Arc;
use std::time::Duration;

use mcp_protocol::schema::LoggingLevel;
use mcp_protocol::{Decoded, Message, RawJson, RequestId};
use mcp_session::{Handler, Identity};

use super::super::routes::StreamTx;
use super::super::{HttpServer, SERVER_BUSY, Session, lock, queue, rpc_error};
use super::share_key;

/// The id of the `logging/setLevel` a replica tells a session on its client's behalf: one no
/// client is likely to use (were it in use, the session would not be told; see `claim`).
const REPLAYED: &str = "mcp-http/replayed-logging-level";

/// How long a request waits for its session to take a level set at another replica. A
/// handler that takes longer (an upstream slow to answer) lets the request go on meanwhile.
const REPLAY_WAIT: Duration = Duration::from_secs(10);

/// The level a POST sets: that of its `logging/setLevel` request (the last, in a batch), if
/// the level is one the protocol names. Any other is not recorded: the session refuses it.
pub(crate) fn level_set(decoded: &Decoded) -> Option<String> {
    let level_of = |message: &Message| {
        let Message::Request(request) = message else {
            return None;
        };
        if request.method != "logging/setLevel" {
            return None;
        }
        let params = request
            .params
            .as_ref()?
            .decode::<serde_json::Value>()
            .ok()?;
        let level = params.get("level")?.as_str()?;
        is_level(level).then(|| level.to_owned())
    };
    match decoded {
        Decoded::Single(message) => level_of(message),
        Decoded::Batch(items) => items
            .iter()
            .rev()
            .find_map(|item| item.as_ref().ok().and_then(level_of)),
    }
}

/// Whether `level` is one of the eight levels the protocol names (RFC 5424's).
fn is_level(level: &str) -> bool {
    LoggingLevel::from(level).severity().is_some()
}

/// Why a POST's level could not be recorded: the share did not answer.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LevelNotKept;

impl LevelNotKept {
    /// 503 with `Retry-After: 1`: the session never heard the level, and the client may send
    /// it again. Taken here and lost to the other replicas, it would apply at one replica
    /// only, with nothing to say so.
    pub(crate) fn response(self) -> http::Response<super::super::ResponseBody> {
        let mut r = rpc_error(
            http::StatusCode::SERVICE_UNAVAILABLE,
            SERVER_BUSY,
            "Service Unavailable: the session store did not take the logging level, which \
             every replica serving the session must apply; send it again",
        );
        r.headers_mut().insert(
            http::header::RETRY_AFTER,
            http::HeaderValue::from_static("1"),
        );
        r
    }
}

impl<H: Handler> HttpServer<H> {
    /// Records the level a POST of a sealed session sets (if it sets one) in the share, before
    /// the session hears it; this replica's session is then taken as told.
    ///
    /// The session's lock is not held while the share writes: every request of the session
    /// that finds a level in the share takes it ([`apply_level`](Self::apply_level)), so a
    /// store slow to take the write (up to the Redis client's timeouts) would hold them all.
    /// Nothing needs it: a request the client sends after this one's answer comes after the
    /// write anyway, and one sent meanwhile was never ordered after it.
    pub(crate) async fn record_level(
        &self,
        session_id: &str,
        session: &Session<H>,
        decoded: &Decoded,
    ) -> Result<(), LevelNotKept> {
        let Some(seal) = &self.config.sealed_sessions else {
            return Ok(());
        };
        let (Some(level), Some(told)) = (level_set(decoded), &session.level) else {
            return Ok(());
        };
        seal.share()
            .set_level(&share_key(session_id), &level, seal.max_age())
            .await
            .map_err(|_| LevelNotKept)?;
        *told.lock().await = Some(level);
        Ok(())
    }

    /// Tells `session` the level its client set at another replica (`level`, from the share),
    /// when its session here was last told another or none, and waits (at most
    /// [`REPLAY_WAIT`]) for the answer, so that the request being served comes after it.
    /// Requests of the session that come meanwhile wait for it too.
    pub(crate) async fn apply_level(
        &self,
        session: &Session<H>,
        level: &str,
        caller: Option<Identity>,
    ) {
        let Some(told) = &session.level else {
            return;
        };
        // What the store holds is told only if it is a level the protocol names: a store
        // written by someone else must not put anything else in the session's requests.
        if !is_level(level) {
            return;
        }
        let mut told = told.lock().await;
        if told.as_deref() == Some(level) {
            return;
        }
        let Ok(params) = RawJson::encode(&serde_json::json!({ "level": level })) else {
            return;
        };
        let request = Decoded::Single(Message::Request(mcp_protocol::Request {
            id: RequestId::String(REPLAYED.to_owned()),
            method: "logging/setLevel".to_owned(),
            params: Some(params),
        }));
        // Its answer comes on a stream of its own, which nobody reads but this wait.
        let (tx, mut rx) = queue::channel(self.limits(&session.buffer));
        let stream = Arc::new(StreamTx { tx, json: true });
        let claimed = lock(&session.routes.state).claim(request, &stream);
        drop(stream);
        let Some(request) = claimed else {
            return;
        };
        session.core.receive_as(request, caller);
        *told = Some(level.to_owned());
        let _ = tokio::time::timeout(REPLAY_WAIT, rx.recv()).await;
    }
}
