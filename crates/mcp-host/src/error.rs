//! Why a call or an operation did not produce a result. The variants keep apart what a
//! consumer must treat differently: the call was never sent (unknown, not ready, denied), the
//! server answered with a JSON-RPC error, time ran out, or the connection failed. A tool that
//! ran and failed (`isError: true`) is none of these: it is a [`ToolOutput`](crate::ToolOutput).

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
    /// The connection failed or ended, or the server broke the protocol.
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
            other => Self::Failed {
                server,
                what,
                message: other.to_string(),
            },
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
            | Self::Failed { server, .. } => Some(server),
        }
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
