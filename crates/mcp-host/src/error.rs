//! Why a call or an operation did not produce a result. The variants keep apart what a
//! consumer must treat differently: the call was never sent (unknown, not ready, denied), the
//! server answered with a JSON-RPC error, time ran out, authorization failed, or the
//! connection failed or the server broke the protocol. A tool that ran and failed
//! (`isError: true`) is none of these: it is a [`ToolOutput`](crate::ToolOutput).
//!
//! Causes are kept, not flattened: a session failure keeps the protocol error as its
//! [`source`](std::error::Error::source), a failed login the `mcp_oauth::AuthError`. The `is_*`
//! predicates say what kind of failure it was, across variants, so that a consumer can branch
//! on the kind (ask for a login, try again later, give up) without matching every variant.

use mcp_protocol::Secrets;

use crate::status::ServerState;

/// A call or an operation failed. Messages name the server and the tool or method, and never
/// quote arguments, headers or tokens. What the server said is quoted with the server's
/// secrets (its configured values, inherited values, tokens) shown as `[redacted]`.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum CallError {
    /// No tool has this exposed name (the catalogue may have changed since it was read).
    #[error("no tool is exposed as `{name}`")]
    UnknownTool {
        /// The exposed name asked for.
        name: String,
    },
    /// No server has this id.
    #[error("no server `{server}` is configured")]
    UnknownServer {
        /// The id asked for.
        server: String,
    },
    /// A login or logout was asked of a server that does not use OAuth (a stdio server, or
    /// an HTTP server with a configured `Authorization` header).
    #[error(
        "server `{server}` does not use OAuth (a stdio server, or a configured Authorization header)"
    )]
    NoOAuth {
        /// The server id.
        server: String,
    },
    /// The server is not connected.
    #[error("server `{server}` is not ready (state {state}){}", last_error.as_deref().map(|e| format!(": {e}")).unwrap_or_default())]
    NotReady {
        /// The server id.
        server: String,
        /// Its state.
        state: ServerState,
        /// Why, if it failed.
        last_error: Option<String>,
    },
    /// The permission policy refused the call; the server never saw it.
    #[error("call to `{tool}` on server `{server}` was denied: {reason}")]
    Denied {
        /// The server id.
        server: String,
        /// The tool's name.
        tool: String,
        /// Who refused.
        reason: String,
    },
    /// The server answered with a JSON-RPC error.
    #[error("server `{server}`: `{what}` failed with error {code}: {message}")]
    Rpc {
        /// The server id.
        server: String,
        /// The tool or method.
        what: String,
        /// The JSON-RPC error code.
        code: i64,
        /// The server's message (untrusted text).
        message: String,
        /// The error's `data` as the server sent it (untrusted): a proxy passes it on, since
        /// the stateless era's errors carry their meaning there (-32021 names the missing
        /// capabilities, -32022 the supported versions).
        data: Option<serde_json::Value>,
    },
    /// No answer in time; the server was sent `notifications/cancelled`.
    #[error("server `{server}`: `{what}` timed out after {waited_ms} ms")]
    Timeout {
        /// The server id.
        server: String,
        /// The tool or method.
        what: String,
        /// How long it waited.
        waited_ms: u128,
    },
    /// The session failed under the call: the connection failed or ended, the server stopped
    /// answering, or it broke the protocol. The source is the protocol error (with the
    /// server's secrets redacted); [`is_transport`](Self::is_transport),
    /// [`is_protocol_violation`](Self::is_protocol_violation) and
    /// [`is_transient`](Self::is_transient) say which kind it was.
    #[error("server `{server}`: `{what}`: {source}")]
    Session {
        /// The server id.
        server: String,
        /// The tool or method.
        what: String,
        /// What happened.
        #[source]
        source: Cause<mcp_protocol::Error>,
    },
    /// Authorization failed: a login did not complete. The source is the OAuth error, which
    /// says whether it may pass by itself ([`is_transient`](Self::is_transient)).
    #[cfg(feature = "oauth")]
    #[error("server `{server}`: `{what}`: {source}")]
    Auth {
        /// The server id.
        server: String,
        /// What was being done (`login`).
        what: String,
        /// Why.
        #[source]
        source: Cause<mcp_oauth::AuthError>,
    },
    /// The host could not carry out the call or operation for a reason of its own (the
    /// arguments could not be encoded, the server asked for input the host cannot give, the
    /// token store could not be written).
    #[error("server `{server}`: `{what}`: {message}")]
    Failed {
        /// The server id.
        server: String,
        /// The tool or method.
        what: String,
        /// What happened.
        message: String,
    },
}

impl CallError {
    /// Sorts a session error into the outcomes a consumer tells apart.
    pub(crate) fn from_session(server: &str, what: &str, error: mcp_session::Error) -> Self {
        let server = server.to_owned();
        let what = what.to_owned();
        match *error.source {
            mcp_protocol::Error::Rpc { error, .. } => Self::Rpc {
                server,
                what,
                code: error.code,
                message: error.message,
                data: error.data,
            },
            mcp_protocol::Error::Timeout { waited_ms, .. } => Self::Timeout {
                server,
                what,
                waited_ms,
            },
            source => Self::Session {
                server,
                what,
                source: Cause::new(source),
            },
        }
    }

    /// A failed action of the authorization of `server` (`what`: `login`): the OAuth error
    /// kept as the source.
    #[cfg(feature = "oauth")]
    pub(crate) fn auth(server: &str, what: &str, source: mcp_oauth::AuthError) -> Self {
        Self::Auth {
            server: server.to_owned(),
            what: what.to_owned(),
            source: Cause::new(source),
        }
    }

    /// A failed login of `server`.
    #[cfg(feature = "oauth")]
    pub(crate) fn login_failed(server: &str, source: mcp_oauth::AuthError) -> Self {
        Self::auth(server, "login", source)
    }

    /// A failed login in a build without OAuth, where none can happen (the hook there is a
    /// type with no values); it exists so that the host reads the same in every build.
    #[cfg(not(feature = "oauth"))]
    pub(crate) fn login_failed(server: &str, message: String) -> Self {
        Self::Failed {
            server: server.to_owned(),
            what: "login".to_owned(),
            message,
        }
    }

    /// This error with every one of `secrets` in its texts (and in a JSON-RPC error's `data`)
    /// shown as `[redacted]`.
    pub(crate) fn redacted(self, secrets: &Secrets) -> Self {
        if secrets.is_empty() {
            return self;
        }
        match self {
            Self::NotReady {
                server,
                state,
                last_error,
            } => Self::NotReady {
                server,
                state,
                last_error: last_error.map(|e| secrets.redact(&e)),
            },
            Self::Denied {
                server,
                tool,
                reason,
            } => Self::Denied {
                server,
                tool,
                reason: secrets.redact(&reason),
            },
            Self::Rpc {
                server,
                what,
                code,
                message,
                mut data,
            } => {
                if let Some(data) = &mut data {
                    secrets.redact_json(data);
                }
                Self::Rpc {
                    server,
                    what,
                    code,
                    message: secrets.redact(&message),
                    data,
                }
            }
            Self::Failed {
                server,
                what,
                message,
            } => Self::Failed {
                server,
                what,
                message: secrets.redact(&message),
            },
            Self::Session {
                server,
                what,
                source,
            } => Self::Session {
                server,
                what,
                source: Cause::new(source.into_inner().redacted(secrets)),
            },
            // An AuthError holds no token, secret or code (mcp-oauth's rule).
            #[cfg(feature = "oauth")]
            other @ Self::Auth { .. } => other,
            other @ (Self::UnknownTool { .. }
            | Self::UnknownServer { .. }
            | Self::NoOAuth { .. }
            | Self::Timeout { .. }) => other,
        }
    }

    /// The server the error is about; `None` for an exposed name no tool has.
    pub fn server(&self) -> Option<&str> {
        match self {
            Self::UnknownTool { .. } => None,
            Self::UnknownServer { server }
            | Self::NoOAuth { server }
            | Self::NotReady { server, .. }
            | Self::Denied { server, .. }
            | Self::Rpc { server, .. }
            | Self::Timeout { server, .. }
            | Self::Session { server, .. }
            | Self::Failed { server, .. } => Some(server),
            #[cfg(feature = "oauth")]
            Self::Auth { server, .. } => Some(server),
        }
    }

    /// Whether the server needs an authorization it does not have: it is in state
    /// `auth_required` (no login yet, or its tokens were refused), or a login failed. The
    /// remedy is a login (`mcp-host login ID`).
    pub fn is_auth(&self) -> bool {
        match self {
            Self::NotReady { state, .. } => *state == ServerState::AuthRequired,
            #[cfg(feature = "oauth")]
            Self::Auth { .. } => true,
            _ => false,
        }
    }

    /// Whether the failure may pass by itself, so that the same call later may succeed
    /// without anyone doing anything: time ran out, the server is still connecting (or
    /// between reconnection attempts), the session ended or went silent under the call, or
    /// the authorization server failed for a while (its tokens were kept).
    pub fn is_transient(&self) -> bool {
        match self {
            Self::Timeout { .. } => true,
            Self::NotReady { state, .. } => *state == ServerState::Connecting,
            Self::Session { source, .. } => source.is_transient(),
            #[cfg(feature = "oauth")]
            Self::Auth { source, .. } => source.is_transient(),
            _ => false,
        }
    }

    /// Whether the server broke the protocol: an answer of the wrong shape, a frame that is
    /// not JSON-RPC, a protocol version this host does not speak, or a rule broken in a way
    /// that ended the session. Trying again will not help; the server must be fixed.
    pub fn is_protocol_violation(&self) -> bool {
        matches!(
            self,
            Self::Session { source, .. } if matches!(
                **source,
                mcp_protocol::Error::Protocol(_)
                    | mcp_protocol::Error::Decode(_)
                    | mcp_protocol::Error::InvalidResult { .. }
                    | mcp_protocol::Error::VersionMismatch { .. }
            )
        )
    }

    /// Whether the connection failed under the call: the transport could not carry it, the
    /// session was closed, or the server stopped answering.
    pub fn is_transport(&self) -> bool {
        matches!(
            self,
            Self::Session { source, .. } if matches!(
                **source,
                mcp_protocol::Error::Transport { .. }
                    | mcp_protocol::Error::Closed(_)
                    | mcp_protocol::Error::Unresponsive { .. }
            )
        )
    }

    /// Whether no answer came in time (the server was sent `notifications/cancelled`).
    pub fn is_timeout(&self) -> bool {
        matches!(self, Self::Timeout { .. })
    }

    /// Whether the permission policy refused the call.
    pub fn is_denied(&self) -> bool {
        matches!(self, Self::Denied { .. })
    }

    /// Whether the server is not connected (for any reason, authorization included: see
    /// [`is_auth`](Self::is_auth)).
    pub fn is_not_ready(&self) -> bool {
        matches!(self, Self::NotReady { .. })
    }

    /// Whether the call was never sent to the server.
    pub fn never_sent(&self) -> bool {
        matches!(
            self,
            Self::UnknownTool { .. }
                | Self::UnknownServer { .. }
                | Self::NoOAuth { .. }
                | Self::NotReady { .. }
                | Self::Denied { .. }
        )
    }
}

/// A kept cause, boxed so that a [`CallError`] stays small. It dereferences to the error
/// inside, and that error (not this box) is the [`source`](std::error::Error::source), so that
/// a consumer can downcast to it.
#[derive(Debug, Clone)]
pub struct Cause<T>(Box<T>);

impl<T> Cause<T> {
    fn new(error: T) -> Self {
        Self(Box::new(error))
    }

    /// The error inside.
    pub fn into_inner(self) -> T {
        *self.0
    }
}

impl<T> std::ops::Deref for Cause<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T: std::fmt::Display> std::fmt::Display for Cause<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use std::error::Error as _;

    use super::*;

    fn session(source: mcp_protocol::Error) -> CallError {
        let error = mcp_session::Error {
            server: "s".to_owned(),
            source: Box::new(source),
        };
        CallError::from_session("s", "tools/call", error)
    }

    #[test]
    fn a_session_failure_keeps_its_kind_and_its_cause() {
        let broke = session(mcp_protocol::Error::Protocol(
            "two answers to id 1".to_owned(),
        ));
        assert!(
            broke.is_protocol_violation() && !broke.is_transport(),
            "{broke:?}"
        );
        assert!(!broke.is_transient() && !broke.is_auth());
        assert_eq!(
            broke.to_string(),
            "server `s`: `tools/call`: peer violated the protocol: two answers to id 1"
        );
        let cause = broke.source().expect("the protocol error is the source");
        assert!(matches!(
            cause.downcast_ref::<mcp_protocol::Error>(),
            Some(mcp_protocol::Error::Protocol(_))
        ));
        let closed = session(mcp_protocol::Error::Closed("the server exited".to_owned()));
        assert!(closed.is_transport() && closed.is_transient(), "{closed:?}");
        assert!(!closed.is_protocol_violation());
    }

    #[test]
    fn a_kept_cause_is_redacted_too() {
        let leaky = session(mcp_protocol::Error::Closed(
            "token tok-123 refused".to_owned(),
        ));
        let shown = leaky.redacted(&Secrets::new(["tok-123".to_owned()]));
        assert!(shown.to_string().contains("[redacted]"), "{shown}");
        let cause = shown.source().expect("source").to_string();
        assert!(
            cause.contains("[redacted]") && !cause.contains("tok-123"),
            "{cause}"
        );
    }

    #[test]
    fn not_ready_says_whether_a_login_or_time_would_help() {
        let not_ready = |state| CallError::NotReady {
            server: "s".to_owned(),
            state,
            last_error: None,
        };
        assert!(not_ready(ServerState::AuthRequired).is_auth());
        assert!(!not_ready(ServerState::AuthRequired).is_transient());
        assert!(not_ready(ServerState::Connecting).is_transient());
        assert!(!not_ready(ServerState::Error).is_auth());
        assert!(not_ready(ServerState::Error).is_not_ready());
    }

    #[cfg(feature = "oauth")]
    #[test]
    fn an_auth_failure_is_auth_with_the_oauth_error_as_source() {
        let down = mcp_oauth::AuthError::Transport {
            what: "token",
            url: "https://as.example/token".to_owned(),
            source: mcp_oauth::TransportError::new("connection refused"),
        };
        let err = CallError::auth("s", "login", down.clone());
        assert!(err.is_auth() && err.is_transient(), "{err:?}");
        assert_eq!(err.to_string(), format!("server `s`: `login`: {down}"));
        let cause = err.source().expect("the auth error is the source");
        assert_eq!(cause.downcast_ref::<mcp_oauth::AuthError>(), Some(&down));
        let nothing = mcp_oauth::AuthError::NoMetadata {
            server: "https://mcp.example/".to_owned(),
        };
        let err = CallError::auth("s", "login", nothing);
        assert!(err.is_auth() && !err.is_transient(), "{err:?}");
    }
}
