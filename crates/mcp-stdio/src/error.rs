//! The one error type of mcp-stdio.

use std::fmt;

/// Which step of starting a server failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SpawnPhase {
    /// The working directory does not exist or is not a directory.
    Cwd,
    /// The command was not found on `PATH` (or at the given path).
    NotFound,
    /// The command exists but may not be executed.
    NotExecutable,
    /// The operating system refused to start it for another reason.
    Exec,
}

impl fmt::Display for SpawnPhase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Cwd => "bad working directory",
            Self::NotFound => "command not found",
            Self::NotExecutable => "command not executable",
            Self::Exec => "could not start",
        })
    }
}

/// Why a stdio connection failed. Every variant names the server; none includes environment
/// values, which may be secrets.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The server could not be started.
    #[error("server `{server}`: {phase}: `{command}`{}", detail.as_deref().map(|d| format!(" ({d})")).unwrap_or_default())]
    Spawn {
        /// The server's name.
        server: String,
        /// What failed.
        phase: SpawnPhase,
        /// The command as configured.
        command: String,
        /// More about the failure.
        detail: Option<String>,
    },
    /// The connection failed: the handshake was refused, timed out, or the server exited.
    #[error(transparent)]
    Client(#[from] mcp_session::Error),
    /// Reading from or writing to the server failed.
    #[error("server `{server}`: {context}: {source}")]
    Io {
        /// The server's name.
        server: String,
        /// What was being done.
        context: &'static str,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
}

impl Error {
    /// The protocol error inside, for callers that branch on it.
    pub fn protocol(&self) -> Option<&mcp_protocol::Error> {
        match self {
            Self::Client(e) => Some(e.protocol()),
            _ => None,
        }
    }

    /// Whether the handshake timed out.
    pub fn is_timeout(&self) -> bool {
        matches!(self, Self::Client(e) if e.is_timeout())
    }

    /// Whether the connection never came up or has ended (server exited, never started).
    pub fn is_closed(&self) -> bool {
        matches!(self, Self::Spawn { .. }) || matches!(self, Self::Client(e) if e.is_closed())
    }
}

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
