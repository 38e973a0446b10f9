//! The seams the caller implements so that [`Authorizer`](crate::Authorizer) can drive a whole
//! OAuth flow without this crate doing I/O: an HTTP client, randomness, a clock, the user's
//! browser, and optionally a signer for `private_key_jwt` client assertions.
//!
//! Every trait is dyn-compatible (futures are boxed) so that a host can keep them as
//! `Arc<dyn …>` beside its other per-server state.

use std::future::Future;
use std::pin::Pin;

use url::Url;

/// What a seam returns when it fails: any error, kept whole as the source of the
/// [`AuthError`](crate::AuthError) it leads to ([`SeamError`](crate::SeamError)); a `&str` or
/// `String` converts into one with `.into()`. Its text is shown to the user and must hold no
/// secret.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// A boxed future that can move between threads: what every async seam returns.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// An HTTP request as this crate builds it.
pub type HttpRequest = http::Request<Vec<u8>>;

/// An HTTP response as this crate reads it.
pub type HttpResponse = http::Response<Vec<u8>>;

/// A request that got no HTTP answer (connection refused, TLS failure, timeout).
///
/// The message is written by the caller's client and shown to the user inside
/// [`AuthError`](crate::AuthError); it must hold no secret (no header values, no body).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct TransportError {
    message: String,
    refused: bool,
}

impl TransportError {
    /// Wraps a description of what failed, such as `connection refused`.
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            refused: false,
        }
    }

    /// A request the client would not send because of where it leads (its address policy
    /// forbids the address a server's URL resolves to, or plain http there), described by the
    /// rule it breaks. Unlike other transport errors it will not pass by itself, and the
    /// [`AuthError`](crate::AuthError) names the URL's origin only: a URL a server chose may
    /// carry secrets, or aim at a place the user should not learn of, in its path and query.
    pub fn refused(rule: impl Into<String>) -> Self {
        Self {
            message: rule.into(),
            refused: true,
        }
    }

    /// Whether this is a [`refused`](Self::refused) request.
    pub fn is_refused(&self) -> bool {
        self.refused
    }

    /// The description.
    pub fn message(&self) -> &str {
        &self.message
    }
}

/// Sends one request and returns the answer, whatever its status.
///
/// Implementations must NOT follow redirects: a 3xx is an answer to hand back. An OAuth client
/// that follows redirects can be sent to fetch metadata from, or post credentials to, a place
/// the server never named (SSRF; a token request replayed elsewhere). A non-2xx status is an
/// `Ok` response; only a request that got no answer at all is a [`TransportError`].
///
/// Closures `Fn(HttpRequest) -> impl Future<Output = Result<HttpResponse, TransportError>>`
/// implement it, which keeps test fakes short.
pub trait HttpClient: Send + Sync {
    /// Sends `request` and waits for the whole answer.
    fn send(&self, request: HttpRequest) -> BoxFuture<'_, Result<HttpResponse, TransportError>>;
}

impl<F, Fut> HttpClient for F
where
    F: Fn(HttpRequest) -> Fut + Send + Sync,
    Fut: Future<Output = Result<HttpResponse, TransportError>> + Send + 'static,
{
    fn send(&self, request: HttpRequest) -> BoxFuture<'_, Result<HttpResponse, TransportError>> {
        Box::pin(self(request))
    }
}

/// Cryptographically secure random bytes, for `state`, PKCE verifiers and assertion ids.
///
/// A trait of its own, not part of the clock: hosts take it from the OS, tests from a counter,
/// and the two are faked independently (a test moves time forward without changing what
/// `state` looks like).
pub trait Randomness: Send + Sync {
    /// Fills `buf` with random bytes, or says why it cannot. There is no fallback: a
    /// guessable `state` or PKCE verifier would let another party finish the login, so the
    /// flow stops instead ([`AuthError::NoRandomness`](crate::AuthError::NoRandomness)).
    fn fill(&self, buf: &mut [u8]) -> Result<(), BoxError>;
}

/// Wall-clock time, for token expiry (the store keeps `expires_at` in Unix milliseconds) and
/// for the `iat`/`exp` of client assertions.
pub trait Clock: Send + Sync {
    /// Milliseconds since the Unix epoch.
    fn now_ms(&self) -> u64;
}

/// The interactive part: the user's browser.
///
/// The host implements it with a loopback listener, a pasted URL, or (in tests and
/// conformance runs) by following the authorization server's redirect itself.
pub trait UserAgent: Send + Sync {
    /// The `redirect_uri` to register and to send; the authorization server sends the browser
    /// back there. A loopback `http://127.0.0.1:<port>/callback` or an `https` URL.
    fn redirect_uri(&self) -> String;

    /// Shows `url` to the user and waits for the redirect back: returns the full URL the
    /// browser landed on (with `code`, `state`, perhaps `iss` or `error`). The `Err` says why
    /// there is none (closed, timed out); it becomes the source of
    /// [`AuthError::UserAgent`](crate::AuthError::UserAgent), and its text is shown to the user.
    ///
    /// The [`Authorizer`](crate::Authorizer) hands over only URLs that
    /// [`flow::check_openable`](crate::flow::check_openable) allows (`https`, or `http` to a
    /// loopback address); a user agent that may be handed URLs by other code checks them
    /// with it too, and never opens one through a shell.
    fn authorize(&self, url: Url) -> BoxFuture<'_, Result<Url, BoxError>>;

    /// Offered the redirect URIs of the stored client registration a login would reuse,
    /// before anything is sent. Many authorization servers compare redirect URIs exactly,
    /// port included (RFC 8252 §7.3 asks otherwise): a registration only serves a login whose
    /// redirect comes back to one of them. A user agent that can receive the redirect at one
    /// (a loopback listener whose registered port is free) switches to it, so that
    /// [`redirect_uri`](Self::redirect_uri) returns it from then on, and returns it. `None`
    /// (the default) takes none, and the [`Authorizer`](crate::Authorizer) registers a new
    /// client for `redirect_uri` in place of the old one.
    fn adopt_redirect_uri(&self, registered: &[String]) -> Option<String> {
        let _ = registered;
        None
    }

    /// Tells the person something about the login they would otherwise not learn, such as
    /// why the client registers again. The text holds no secret. The default shows nothing.
    fn notice(&self, message: &str) {
        let _ = message;
    }

    /// How the login that the last [`authorize`](Self::authorize) came back from ended: `Ok`
    /// once the code was exchanged for tokens, else the error (whose text holds no secret).
    /// A user agent that holds the browser's request open until then (a loopback listener)
    /// answers it now, so that the page says what really happened. The default does nothing.
    fn finished(&self, outcome: Result<(), &crate::AuthError>) {
        let _ = outcome;
    }
}

/// The interactive part of the device flow (RFC 8628, [`device`](crate::device)), for a
/// machine no browser can come back to: the person is told where to go and which code to
/// enter, on any other device, while the host polls.
///
/// The waiting is a seam too, so that a test moves a fake [`Clock`] instead of sleeping; the
/// host implements it with its runtime's timer.
pub trait DeviceUserAgent: Send + Sync {
    /// Shows the person the verification address and the user code (and the address with the
    /// code filled in, when there is one). The device code is never handed over. The `Err` says
    /// why nothing can be shown, and ends the login (as the source of
    /// [`AuthError::UserAgent`](crate::AuthError::UserAgent)).
    fn show(&self, verification: &crate::device::DeviceVerification) -> Result<(), BoxError>;

    /// Waits `ms` milliseconds before the next poll of the token endpoint.
    fn wait(&self, ms: u64) -> BoxFuture<'_, ()>;
}

/// Signs RFC 7523 client assertions for `private_key_jwt` (the `client_credentials` extension
/// with a key instead of a secret). This crate builds the claims; the caller owns the key and
/// the algorithm (ES256 in the conformance suite).
pub trait ClientAssertionSigner: Send + Sync {
    /// Signs the JSON claims set and returns the compact JWT (`header.payload.signature`).
    /// The `Err` (its text, and its sources') must hold no key material.
    fn sign(&self, claims_json: &[u8]) -> Result<String, BoxError>;
}

/// Makes and uses the keys of DPoP proofs (RFC 9449; see [`dpop`](crate::dpop)): ECDSA P-256
/// keys, ES256 signatures. This crate builds the proofs and decides when; the caller owns the
/// cryptography (and its randomness), as for [`ClientAssertionSigner`].
pub trait DpopSigner: Send + Sync {
    /// A new key pair. One is made for each new authorization and kept with its tokens.
    /// The `Err` text says why there is none and must hold no key material.
    fn generate(&self) -> Result<crate::DpopKey, BoxError>;

    /// The ES256 signature of `message` with `key`: `r || s`, 64 bytes (RFC 7518 §3.4). The
    /// `Err` text must hold no key material.
    fn sign(&self, key: &crate::DpopKey, message: &[u8]) -> Result<Vec<u8>, BoxError>;
}
