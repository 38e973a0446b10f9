//! How a command fails: an exit code a script can branch on, a message that names the server
//! and the phase, and a hint that says what to do next.

use mcp_host::CallError;
use mcp_host::config::ConfigError;

/// The kinds of failure a script can branch on; [`Code::exit_code`] is the one place that
/// maps each to the process's exit status (documented in `--help` and `docs/cli.md`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Code {
    /// Success.
    Ok,
    /// Anything else: I/O, the runtime.
    Other,
    /// A bad flag, a missing value, an invalid id or argument.
    Usage,
    /// An unknown or duplicate server, a configuration file that does not parse.
    Config,
    /// The server did not start, initialize or authorize.
    Connection,
    /// The tool reported an error, the server answered with an error, or time ran out.
    Tool,
    /// The permission policy refused the call; nothing was sent.
    Denied,
    /// The server needs a login it does not have (state `auth_required`): `mcp-host login ID`
    /// is the remedy.
    Auth,
}

impl Code {
    /// The process's exit status for this kind of failure.
    pub(crate) fn exit_code(self) -> u8 {
        match self {
            Self::Ok => 0,
            Self::Other => 1,
            Self::Usage => 2,
            Self::Config => 3,
            Self::Connection => 4,
            Self::Tool => 5,
            Self::Denied => 6,
            Self::Auth => 7,
        }
    }

    /// The kind of a failed call, read from the error's kind (its `is_*` predicates), not
    /// from its text.
    pub(crate) fn of_call(e: &CallError) -> Self {
        match e {
            CallError::UnknownTool { .. } => Self::Usage,
            CallError::UnknownServer { .. } => Self::Config,
            // Before "not ready": a server waiting for a login is told apart.
            e if e.is_auth() && e.is_not_ready() => Self::Auth,
            e if e.is_denied() => Self::Denied,
            CallError::Rpc { .. } => Self::Tool,
            e if e.is_timeout() => Self::Tool,
            _ => Self::Connection,
        }
    }

    /// The name `--json` output uses.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::Other => "other",
            Self::Usage => "usage",
            Self::Config => "config",
            Self::Connection => "connection",
            Self::Tool => "tool",
            Self::Denied => "denied",
            Self::Auth => "auth",
        }
    }
}

/// A command's failure, as the user sees it.
#[derive(Debug, Clone)]
pub(crate) struct Failure {
    pub(crate) code: Code,
    pub(crate) message: String,
    pub(crate) hint: Option<String>,
    /// The server whose login the hint suggests: a server that sends a configured
    /// `Authorization` header gets another hint (`show::login_hint`), since `login` refuses it.
    pub(crate) login_for: Option<String>,
}

impl Failure {
    pub(crate) fn new(code: Code, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            hint: None,
            login_for: None,
        }
    }

    /// The hint to log in to `server`.
    pub(crate) fn login(mut self, server: &str) -> Self {
        self.hint = Some(format!("log in with `mcp-host login {server}`"));
        self.login_for = Some(server.to_owned());
        self
    }

    pub(crate) fn hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }

    pub(crate) fn usage(message: impl Into<String>) -> Self {
        Self::new(Code::Usage, message)
    }

    pub(crate) fn config(message: impl Into<String>) -> Self {
        Self::new(Code::Config, message)
    }
}

impl From<ConfigError> for Failure {
    fn from(e: ConfigError) -> Self {
        let hint = match &e {
            ConfigError::InvalidServerId { .. } => None,
            ConfigError::ServerExists { id, .. } => Some(format!(
                "pass --replace to overwrite it, or choose another id than `{id}`"
            )),
            ConfigError::ServerNotFound { .. } => Some(
                "`mcp-host list --scope project` and `--scope global` show each layer".to_owned(),
            ),
            ConfigError::InvalidEntry { .. } => Some("see `mcp-host add --help`".to_owned()),
            ConfigError::NoGlobalPath => {
                Some("set MCP_HOST_CONFIG to the global file's path".to_owned())
            }
            ConfigError::RelativeGlobalPath { .. } => {
                Some("set MCP_HOST_CONFIG to the global file's full path, or unset it".to_owned())
            }
            ConfigError::RelativeAuthFile { .. } => Some(
                "set MCP_HOST_AUTH_FILE to the token store's full path, or unset it".to_owned(),
            ),
            _ => None,
        };
        let code = match &e {
            ConfigError::InvalidServerId { .. } | ConfigError::InvalidEntry { .. } => Code::Usage,
            ConfigError::Read { .. } | ConfigError::Write { .. } | ConfigError::CurrentDir(_) => {
                Code::Other
            }
            _ => Code::Config,
        };
        Self {
            code,
            message: e.to_string(),
            hint,
            login_for: None,
        }
    }
}

impl From<&CallError> for Failure {
    fn from(e: &CallError) -> Self {
        let code = Code::of_call(e);
        if code == Code::Auth
            && let Some(server) = e.server()
        {
            return Self::new(code, e.to_string()).login(server);
        }
        let hint = match (code, e) {
            (Code::Usage, _) => Some("`mcp-host tools` lists the tools".to_owned()),
            (Code::Config, _) => Some("`mcp-host list` shows the configured servers".to_owned()),
            (Code::Auth, e) => e
                .server()
                .map(|server| format!("log in with `mcp-host login {server}`")),
            (_, CallError::NotReady { server, .. }) => {
                Some(format!("`mcp-host status {server}` shows why"))
            }
            (Code::Denied, _) => Some(
                "pass --yes, answer the question on a terminal, or allow the tool in the global configuration"
                    .to_owned(),
            ),
            _ => None,
        };
        Self {
            code,
            message: e.to_string(),
            hint,
            login_for: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use mcp_host::ServerState;

    use super::*;

    #[test]
    fn each_kind_has_its_own_exit_code() {
        let kinds = [
            Code::Ok,
            Code::Other,
            Code::Usage,
            Code::Config,
            Code::Connection,
            Code::Tool,
            Code::Denied,
            Code::Auth,
        ];
        let mut codes: Vec<u8> = kinds.iter().map(|k| k.exit_code()).collect();
        codes.dedup();
        assert_eq!(codes, [0, 1, 2, 3, 4, 5, 6, 7]);
    }

    #[test]
    fn a_call_waiting_for_a_login_is_auth_not_connection() {
        let not_ready = |state| CallError::NotReady {
            server: "s".to_owned(),
            state,
            last_error: None,
        };
        assert_eq!(
            Code::of_call(&not_ready(ServerState::AuthRequired)),
            Code::Auth
        );
        assert_eq!(
            Code::of_call(&not_ready(ServerState::Error)),
            Code::Connection
        );
        let failure = Failure::from(&not_ready(ServerState::AuthRequired));
        assert_eq!(
            failure.hint.as_deref(),
            Some("log in with `mcp-host login s`")
        );
    }
}
