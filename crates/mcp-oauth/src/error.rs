//! The one error type of mcp-oauth. No variant ever holds a token, a secret or a verifier.

use std::fmt;
use std::sync::Arc;

use crate::http::BoxError;

/// The most characters of a peer's own text (an `error_description`, an error body) that an
/// error message quotes: enough to explain, too little to flood a log line.
const QUOTED_CHARS: usize = 200;

/// A peer's text cut to [`QUOTED_CHARS`] characters, for quoting in an error message.
pub(crate) fn cut_short(text: &str) -> String {
    text.chars().take(QUOTED_CHARS).collect()
}

/// A request's URL as an error shows it: scheme, host, port and path. The userinfo and the
/// query are left out: a configured endpoint may carry a credential in either, and the error
/// goes to logs and the status view (as `mcp-http`'s own errors do).
pub(crate) fn shown_url(
    scheme: Option<&str>,
    host: Option<&str>,
    port: Option<u16>,
    path: &str,
) -> String {
    match (scheme, host, port) {
        (Some(scheme), Some(host), Some(port)) => format!("{scheme}://{host}:{port}{path}"),
        (Some(scheme), Some(host), None) => format!("{scheme}://{host}{path}"),
        _ => path.to_owned(),
    }
}

/// A [`url::Url`] as an error shows it: [`shown_url`] of its parts.
pub(crate) fn shown(url: &url::Url) -> String {
    shown_url(Some(url.scheme()), url.host_str(), url.port(), url.path())
}

/// Where a JSON document that holds secrets (a registration answer, the token store) went
/// wrong, without serde_json's own message, which may quote the offending value.
pub(crate) fn json_position(e: &serde_json::Error) -> String {
    format!(
        "{:?} error at line {}, column {}",
        e.classify(),
        e.line(),
        e.column()
    )
}

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
        /// The issuer it was fetched for, cut short.
        expected: String,
        /// The issuer it states, cut short.
        found: String,
    },
    /// The token store's contents could not be read.
    #[error("{0}")]
    Store(String),
    /// Dynamic client registration failed.
    #[error("client registration failed: {0}")]
    Registration(String),
    /// Dynamic registration was refused because of the redirect URIs (RFC 7591
    /// `invalid_redirect_uri`, or `invalid_client_metadata` about a redirect): the server
    /// accepts other redirect URIs than this host's, so registering again will not help.
    #[error(
        "the authorization server refused to register the redirect URI {redirect_uris} ({detail}); configure a pre-registered client_id for this server, or a client ID metadata document URL"
    )]
    RedirectUriRefused {
        /// The redirect URIs sent (loopback or public callback URLs, not secrets).
        redirect_uris: String,
        /// The server's `error` and `error_description`, cut short.
        detail: String,
    },
    /// The redirect back from the authorization server is not to be trusted or carries no code.
    #[error("{0}")]
    Redirect(String),
    /// The authorization URL is not one a browser may be sent to: only `https`, or `http` to
    /// a loopback address ([`check_openable`](crate::flow::check_openable)).
    #[error(
        "the authorization URL {shown} is not opened: only https, or http to a loopback address, is opened in a browser"
    )]
    UnsafeAuthorizationUrl {
        /// Its scheme and host (never its path or query).
        shown: String,
    },
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

/// Why driving the flow ([`Authorizer`](crate::Authorizer)) failed: what the host shows the
/// user, and the few cases it must tell apart ([`AuthError::is_transient`]). No variant holds a
/// token, a secret, a verifier or a code; server-supplied text is cut short.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AuthError {
    /// A document or redirect was refused (resource or issuer mismatch, no PKCE, bad state,
    /// wrong `iss`, a failed registration).
    #[error(transparent)]
    Protocol(#[from] Error),
    /// A request got no HTTP answer at all.
    #[error("{what} request to {url} failed: {source}")]
    Transport {
        /// What was being fetched or sent.
        what: &'static str,
        /// Where (a metadata or endpoint URL without its userinfo or query; never an
        /// authorization URL).
        url: String,
        /// The client's description.
        #[source]
        source: crate::http::TransportError,
    },
    /// The caller's HTTP client refused to send a request where it leads
    /// ([`TransportError::refused`](crate::TransportError::refused)): a server named a URL
    /// that resolves to an address it may not make us reach, or asks for plain http there.
    #[error("{what} request to {origin} refused: {source}")]
    Refused {
        /// What was being fetched or sent.
        what: &'static str,
        /// `scheme://host[:port]` of the URL (never its path or query).
        origin: String,
        /// The rule broken, in the client's words.
        #[source]
        source: crate::http::TransportError,
    },
    /// The token endpoint refused or failed ([`TokenError::Transient`](crate::flow::TokenError::Transient) keeps the tokens).
    #[error(transparent)]
    Token(#[from] crate::flow::TokenError),
    /// Nothing says how to authorize: no protected resource metadata, no authorization server
    /// metadata, no configured endpoints, and no `Bearer` challenge to fall back on.
    #[error(
        "{server} asked for authorization but publishes no OAuth metadata (RFC 9728 or RFC 8414); configure its endpoints (authorization_url, token_url), or if it uses a static token, configure an `Authorization` header for it"
    )]
    NoMetadata {
        /// The MCP server.
        server: String,
    },
    /// The protected resource metadata names authorization servers whose metadata could not be
    /// found.
    #[error(
        "no authorization server metadata found for {issuers} (tried RFC 8414 and OpenID Connect locations)"
    )]
    NoAuthorizationServerMetadata {
        /// The issuers tried, comma-separated.
        issuers: String,
    },
    /// No way to identify the client to this authorization server.
    #[error(
        "authorization server {issuer} offers neither dynamic registration nor client ID metadata documents usable here; configure a client_id (and client_secret) for this server"
    )]
    NoClientIdentity {
        /// The authorization server.
        issuer: String,
    },
    /// The configured (pre-registered) client belongs to another authorization server than
    /// the one the server now names: its credentials are not sent there (MCP
    /// `client-registration.mdx` §Authorization Server Binding).
    #[error(
        "the configured client_id belongs to authorization server {configured:?}, but the server now uses {found:?}; its credentials are not sent there: configure a client registered at {found:?} (or remove client_id to register dynamically)"
    )]
    ClientIssuerMismatch {
        /// The issuer the client belongs to.
        configured: String,
        /// The issuer in use now, cut short.
        found: String,
    },
    /// The device flow (RFC 8628) did not complete: not offered, refused, denied, expired.
    #[error(transparent)]
    Device(#[from] crate::device::DeviceError),
    /// The user agent brought no redirect back; the source is the user agent's error.
    #[error("authorization in the browser did not complete: {0}")]
    UserAgent(#[source] SeamError),
    /// The server kept refusing after the allowed number of authorization attempts.
    #[error(
        "gave up after {attempts} authorization attempts; the server still refuses (last asked scope: {scope})"
    )]
    TooManyAttempts {
        /// How many were made.
        attempts: u32,
        /// The scope the last attempt asked for, or `none`.
        scope: String,
    },
    /// A 403 that is not about scope: more authorization will not help.
    #[error("the server refused access (HTTP 403{detail})")]
    Forbidden {
        /// The challenge's `error` and description, if any, prefixed with `: `.
        detail: String,
    },
    /// The status handed to `handle_challenge` is not 401 or 403.
    #[error("HTTP {status} is not an authorization challenge")]
    NotAChallenge {
        /// The status.
        status: u16,
    },
    /// The `client_credentials` grant has neither a secret nor an assertion signer configured.
    #[error(
        "the client_credentials grant needs a client_id with a client_secret or an assertion signer"
    )]
    NoClientCredentials,
    /// An assertion grant (`jwt-bearer`, or an identity assertion from an identity provider)
    /// lacks what it needs.
    #[error("the {grant} grant needs a client_id and {needs}")]
    NoAssertion {
        /// `jwt-bearer` or `identity assertion`.
        grant: &'static str,
        /// What to configure.
        needs: &'static str,
    },
    /// No secure random bytes: the flow stops rather than use a guessable `state`, PKCE
    /// verifier or assertion id.
    #[error("no secure random bytes are available: {0}")]
    NoRandomness(#[source] SeamError),
    /// The assertion signer failed; the source is the signer's error.
    #[error("signing the client assertion failed: {0}")]
    Assertion(#[source] SeamError),
    /// A DPoP proof (RFC 9449) or its key could not be made; the source is the signer's
    /// error (with no key material), or says what else was wrong.
    #[error("a DPoP proof could not be made: {0}")]
    Dpop(#[source] SeamError),
}

impl AuthError {
    /// Whether the failure may pass by itself (a token endpoint answering 5xx, a transport
    /// error): the stored tokens were kept, and trying again later may work without the user.
    pub fn is_transient(&self) -> bool {
        matches!(
            self,
            Self::Transport { .. } | Self::Token(crate::flow::TokenError::Transient { .. })
        )
    }
}

/// What one of the caller's seams ([`UserAgent`](crate::UserAgent),
/// [`DeviceUserAgent`](crate::DeviceUserAgent), [`Randomness`](crate::Randomness), a signer)
/// returned as its error, kept whole as the [`source`](std::error::Error::source) of an
/// [`AuthError`], so that a host can still tell its own failures apart (downcast the source)
/// after the flow has wrapped them.
///
/// It shows as the seam's message. It is cheap to clone, and two compare equal when they show
/// the same text: an [`AuthError`] stays `Clone` and `Eq`. It does not implement
/// [`Error`](std::error::Error) itself but dereferences to the seam's error, so that the
/// source of an [`AuthError`] is that error and not this wrapper.
#[derive(Clone)]
pub struct SeamError(Arc<dyn std::error::Error + Send + Sync>);

impl SeamError {
    /// Keeps `error`; a `&str` or `String` becomes an error with that message.
    pub fn new(error: impl Into<BoxError>) -> Self {
        Self(Arc::from(error.into()))
    }
}

impl From<BoxError> for SeamError {
    fn from(error: BoxError) -> Self {
        Self(Arc::from(error))
    }
}

impl std::ops::Deref for SeamError {
    type Target = dyn std::error::Error + Send + Sync + 'static;

    fn deref(&self) -> &Self::Target {
        &*self.0
    }
}

impl fmt::Display for SeamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&*self.0, f)
    }
}

impl fmt::Debug for SeamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl PartialEq for SeamError {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0) || self.0.to_string() == other.0.to_string()
    }
}

impl Eq for SeamError {}
