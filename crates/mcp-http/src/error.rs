//! The one error type of mcp-http (with [`FetchError`](crate::FetchError), the fetcher's
//! narrower one, which converts into it).

/// Why an HTTP connection could not be made or a plain request failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The configuration cannot work: a bad URL, a header that cannot be sent.
    #[error("server `{server}`: {reason}")]
    Config {
        /// The server's name.
        server: String,
        /// What is wrong; never a header value, which may be a secret.
        reason: String,
    },
    /// The connection failed: refused, timed out, the handshake failed, the server answered
    /// with an HTTP error.
    #[error(transparent)]
    Client(#[from] mcp_session::Error),
    /// A plain request of [`Fetcher`](crate::Fetcher) failed; callers of
    /// [`Fetcher::send`](crate::Fetcher::send) get the narrower [`FetchError`](crate::FetchError)
    /// to branch on, and `?` turns it into this.
    #[cfg(feature = "client")]
    #[error(transparent)]
    Fetch(#[from] crate::FetchError),
}

impl Error {
    /// The protocol error inside, for callers that branch on it.
    pub fn protocol(&self) -> Option<&mcp_protocol::Error> {
        match self {
            Self::Client(e) => Some(e.protocol()),
            Self::Config { .. } => None,
            #[cfg(feature = "client")]
            Self::Fetch(_) => None,
        }
    }
}

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
