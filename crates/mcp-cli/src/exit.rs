//! How a command fails: an exit code a script can branch on, a message that names the server
//! and the phase, and a hint that says what to do next.

use mcp_host::CallError;
use mcp_host::config::ConfigError;

/// The exit codes, documented in `--help` and `docs/cli.md`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Code {
    /// Success.
    Ok = 0,
    /// Anything else: I/O, the runtime.
    Other = 1,
    /// A bad flag, a missing value, an invalid id or argument.
    Usage = 2,
    /// An unknown or duplicate server, a configuration file that does not parse.
    Config = 3,
    /// The server did not start, initialize or authorize.
    Connection = 4,
    /// The tool reported an error, the server answered with an error, or time ran out.
    Tool = 5,
    /// The permission policy refused the call; nothing was sent.
    Denied = 6,
}

impl Code {
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
        }
    }
}

/// A command's failure, as the user sees it.
#[derive(Debug, Clone)]
pub(crate) struct Failure {
    pub(crate) code: Code,
    pub(crate) message: String,
    pub(crate) hint: Option<String>,
}

impl Failure {
    pub(crate) fn new(code: Code, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            hint: None,
        }
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
        }
    }
}

impl From<&CallError> for Failure {
    fn from(e: &CallError) -> Self {
        let (code, hint) = match e {
            CallError::UnknownTool { .. } => (
                Code::Usage,
                Some("`mcp-host tools` lists the tools".to_owned()),
            ),
            CallError::UnknownServer { .. } => (
                Code::Config,
                Some("`mcp-host list` shows the configured servers".to_owned()),
            ),
            CallError::NotReady { server, .. } => (
                Code::Connection,
                Some(format!("`mcp-host status {server}` shows why")),
            ),
            CallError::Denied { .. } => (
                Code::Denied,
                Some(
                    "pass --yes, answer the question on a terminal, or allow the tool in the global configuration"
                        .to_owned(),
                ),
            ),
            CallError::Rpc { .. } | CallError::Timeout { .. } => (Code::Tool, None),
            _ => (Code::Connection, None),
        };
        Self {
            code,
            message: e.to_string(),
            hint,
        }
    }
}
