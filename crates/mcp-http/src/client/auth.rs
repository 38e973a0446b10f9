//! The authorization hook: how an OAuth layer (in `mcp-host`) plugs into the HTTP client
//! without this crate knowing anything of OAuth.

use std::future::Future;
use std::pin::Pin;

use http::{HeaderMap, HeaderValue, Method, StatusCode, Uri};

/// A 401 or 403 answer and its challenge, as the server sent them.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Challenge {
    /// 401 or 403.
    pub status: StatusCode,
    /// The `WWW-Authenticate` header values, as sent.
    pub www_authenticate: Vec<HeaderValue>,
    /// The `DPoP-Nonce` header, if the server sent one (RFC 9449 §9): a hook that sends DPoP
    /// proofs puts it in the next one. A challenge that carries it may be retried once more
    /// than others (see [`AuthHook::challenged`]).
    pub dpop_nonce: Option<HeaderValue>,
}

/// Supplies the authorization headers of every request and hears about 401 and 403 answers.
pub trait AuthHook: Send + Sync + 'static {
    /// The `Authorization` header value for the next request, if any. Marked sensitive by the
    /// client, so that it never appears in a debug print.
    fn authorization(&self) -> Option<HeaderValue>;

    /// The authorization headers of one request, `method` to `uri`; by default `Authorization`
    /// from [`authorization`](Self::authorization). A hook whose token is bound to each
    /// request overrides it: DPoP (RFC 9449) adds a `DPoP` header with a proof that names the
    /// method and URL, new for every request. Each value is marked sensitive by the client and
    /// replaces a configured header of the same name.
    ///
    /// Added after [`authorization`](Self::authorization) so that hooks written before it keep
    /// working unchanged; a hook that wraps another must forward both.
    fn headers_for(&self, method: &Method, uri: &Uri) -> HeaderMap {
        let _ = (method, uri);
        let mut headers = HeaderMap::new();
        if let Some(value) = self.authorization() {
            headers.insert(http::header::AUTHORIZATION, value);
        }
        headers
    }

    /// The server refused a request. Resolves to `true` if the hook has new credentials and the
    /// request should be sent once more (a refreshed token, a step-up), `false` to fail it.
    ///
    /// A request is sent again at most once for new credentials, and once more for a
    /// challenge that carries a `DPoP-Nonce` (RFC 9449 §9: a first request with a new token
    /// may be refused only for lack of the server's nonce).
    fn challenged(&self, challenge: Challenge) -> Pin<Box<dyn Future<Output = bool> + Send + '_>>;

    /// A request sent with this hook's headers was answered with success (2xx): whatever
    /// chain of challenges led to it is over. An OAuth hook resets its count of authorization
    /// attempts here, so that a limit on step-ups in a row does not become a limit per process.
    ///
    /// Added after [`challenged`](Self::challenged) with a default that does nothing, so that
    /// hooks written before it keep working unchanged; a hook that wraps another must forward
    /// it.
    fn succeeded(&self) {}
}

/// A fixed `Authorization` header (a static bearer token from configuration); it never retries.
#[derive(Clone)]
pub struct StaticAuth(HeaderValue);

impl StaticAuth {
    /// `Authorization: Bearer <token>`. Fails if the token holds characters a header cannot.
    pub fn bearer(token: &str) -> Result<Self, http::header::InvalidHeaderValue> {
        let mut value = HeaderValue::from_str(&format!("Bearer {token}"))?;
        value.set_sensitive(true);
        Ok(Self(value))
    }
}

impl std::fmt::Debug for StaticAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StaticAuth([redacted])")
    }
}

impl AuthHook for StaticAuth {
    fn authorization(&self) -> Option<HeaderValue> {
        Some(self.0.clone())
    }

    fn challenged(&self, _: Challenge) -> Pin<Box<dyn Future<Output = bool> + Send + '_>> {
        Box::pin(async { false })
    }
}
