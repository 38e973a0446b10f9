//! The one error type of mcp-oauth. No variant ever holds a token, a secret or a verifier.

/// Why an OAuth step failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A metadata document could not be read.
    #[error("invalid {what}: {detail}")]
    InvalidMetadata {
        /// Which document.
        what: &'static str,
        /// What was wrong.
        detail: String,
    },
    /// The protected resource metadata names another resource than the server asked.
    #[error("the protected resource metadata is for {resource}, not for {server}; refused")]
    ResourceMismatch {
        /// The `resource` the document states.
        resource: String,
        /// The server it was fetched for.
        server: String,
    },
    /// The authorization server metadata states another issuer than the one it was fetched for.
    #[error(
        "the authorization server metadata says issuer {found:?}, expected {expected:?}; refused"
    )]
    IssuerMismatch {
        /// The issuer it was fetched for.
        expected: String,
        /// The issuer it states.
        found: String,
    },
    /// The token store's contents could not be read.
    #[error("{0}")]
    Store(String),
    /// Dynamic client registration failed.
    #[error("client registration failed: {0}")]
    Registration(String),
    /// The redirect back from the authorization server is not to be trusted or carries no code.
    #[error("{0}")]
    Redirect(String),
    /// The authorization server does not support PKCE with S256; authorization must not start.
    #[error(
        "authorization server {issuer} does not support PKCE with S256 ({detail}); refusing to authorize"
    )]
    PkceNotSupported {
        /// The issuer.
        issuer: String,
        /// What is missing.
        detail: &'static str,
    },
}
