//! The error of a request or a connection, naming the server.

/// A request or a connection failed. The source says how: the server answered with an error,
/// the request timed out or was cancelled, the answer was malformed, or the session ended.
#[derive(Debug, thiserror::Error)]
#[error("server `{server}`: {source}")]
pub struct Error {
    /// The server's name, as configured.
    pub server: String,
    /// What went wrong.
    #[source]
    pub source: Box<mcp_protocol::Error>,
}

impl Error {
    pub(crate) fn new(server: &str, source: mcp_protocol::Error) -> Self {
        Self {
            server: server.to_owned(),
            source: Box::new(source),
        }
    }

    /// The protocol error inside, for callers that branch on it.
    pub fn protocol(&self) -> &mcp_protocol::Error {
        &self.source
    }

    /// Whether the request timed out.
    pub fn is_timeout(&self) -> bool {
        matches!(*self.source, mcp_protocol::Error::Timeout { .. })
    }

    /// Whether the connection has ended.
    pub fn is_closed(&self) -> bool {
        matches!(*self.source, mcp_protocol::Error::Closed(_))
    }
}

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
