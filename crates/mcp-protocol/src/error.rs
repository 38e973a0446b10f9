//! The one error type of the crate, grouped by who is at fault.

use crate::jsonrpc::{DecodeError, ErrorObject};
use crate::redact::Secrets;
use crate::version::ProtocolVersion;

/// Why a request, or the session, failed.
///
/// The variants say who is at fault: the peer (`Rpc`, `Protocol`, `InvalidResult`,
/// `VersionMismatch`), time (`Timeout`, and `Unresponsive` when the server went silent), the
/// caller (`Cancelled`, `ApiMisuse`), or the end of
/// the session (`Closed`). Messages never quote the parameters or results we sent, which may
/// hold secrets; a decode error quotes at most the first 256 bytes of the peer's malformed
/// frame, for diagnosis.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The peer answered the request with a JSON-RPC error.
    #[error("{method} failed: {error}")]
    Rpc {
        /// The method of the failed request.
        method: String,
        /// The error the peer sent.
        error: ErrorObject,
    },
    /// No answer arrived in time; `notifications/cancelled` was sent.
    #[error("{method} timed out after {waited_ms} ms")]
    Timeout {
        /// The method of the request.
        method: String,
        /// How long the request had been waiting.
        waited_ms: u128,
    },
    /// The caller cancelled the request; `notifications/cancelled` was sent.
    #[error("{method} was cancelled")]
    Cancelled {
        /// The method of the request.
        method: String,
    },
    /// The server chose a protocol version this client does not support.
    #[error(
        "server chose protocol version {offered}, which is not supported here (asked for {requested})"
    )]
    VersionMismatch {
        /// The version the client asked for.
        requested: ProtocolVersion,
        /// The version the server answered with.
        offered: ProtocolVersion,
    },
    /// The peer answered with a result that is not the shape its method defines.
    #[error("invalid {method} result from the peer: {detail}")]
    InvalidResult {
        /// The method of the request.
        method: String,
        /// What was wrong.
        detail: String,
    },
    /// The peer broke a protocol rule in a way that ended the session.
    #[error("peer violated the protocol: {0}")]
    Protocol(String),
    /// A frame could not be decoded.
    #[error(transparent)]
    Decode(#[from] DecodeError),
    /// The transport could not carry this request or its answer (for example, a response
    /// line over the size limit was discarded, or a server's request to its client had no
    /// stream to go on).
    #[error("{method} failed in transport: {detail}")]
    Transport {
        /// The method of the request.
        method: String,
        /// What happened.
        detail: String,
    },
    /// A 2026-07-28 request needed input (an elicitation, a sampling, the roots) that the
    /// host could not give, so it was not retried.
    #[error("{method} needs input the host could not give: {detail}")]
    InputUnavailable {
        /// The method of the request that asked for input.
        method: String,
        /// Which input, and why not.
        detail: String,
    },
    /// The server stopped answering: the session's liveness ping went unanswered past its
    /// deadline with nothing else heard (the server, or the network to it, is gone), so the
    /// session ended under this request.
    #[error(
        "{method} got no answer: the server stopped answering (nothing heard for {silent_ms} ms, a ping unanswered for {waited_ms} ms)"
    )]
    Unresponsive {
        /// The method of the request.
        method: String,
        /// How long nothing had been heard from the server.
        silent_ms: u128,
        /// How long the liveness ping had waited.
        waited_ms: u128,
    },
    /// The session is closed; nothing more can be sent.
    #[error("session closed: {0}")]
    Closed(String),
    /// The caller asked for something the protocol or the session's state forbids.
    #[error("not allowed: {0}")]
    ApiMisuse(String),
}

impl Error {
    /// This error with every one of `secrets` in its texts (the peer's messages and details,
    /// a JSON-RPC error's `data`, a decode error's excerpt) shown as `[redacted]`: what a host
    /// keeps as the cause of an error it shows, since a server may quote what it was given.
    #[must_use]
    pub fn redacted(self, secrets: &Secrets) -> Self {
        if secrets.is_empty() {
            return self;
        }
        let r = |text: String| secrets.redact(&text);
        match self {
            Self::Rpc { method, mut error } => {
                error.message = r(error.message);
                if let Some(data) = &mut error.data {
                    secrets.redact_json(data);
                }
                Self::Rpc { method, error }
            }
            Self::InvalidResult { method, detail } => Self::InvalidResult {
                method,
                detail: r(detail),
            },
            Self::Protocol(detail) => Self::Protocol(r(detail)),
            Self::Decode(mut e) => {
                e.detail = r(e.detail);
                e.excerpt = r(e.excerpt);
                Self::Decode(e)
            }
            Self::Transport { method, detail } => Self::Transport {
                method,
                detail: r(detail),
            },
            Self::InputUnavailable { method, detail } => Self::InputUnavailable {
                method,
                detail: r(detail),
            },
            Self::Closed(detail) => Self::Closed(r(detail)),
            Self::ApiMisuse(detail) => Self::ApiMisuse(r(detail)),
            other @ (Self::Timeout { .. }
            | Self::Cancelled { .. }
            | Self::VersionMismatch { .. }
            | Self::Unresponsive { .. }) => other,
        }
    }

    /// Whether the request may be retried as it is on a new connection: the session ended
    /// under it, it timed out, or the server stopped answering.
    pub fn is_transient(&self) -> bool {
        matches!(
            self,
            Self::Closed(_) | Self::Timeout { .. } | Self::Unresponsive { .. }
        )
    }
}

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
