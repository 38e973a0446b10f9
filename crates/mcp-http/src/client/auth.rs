//! The authorization hook: how an OAuth layer (in `mcp-host`) plugs into the HTTP client
//! without this crate knowing anything of OAuth.

use std::future::Future;
use std::pin::Pin;

use http::{HeaderValue, StatusCode};

/// A 401 or 403 answer and its challenge, as the server sent them.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Challenge {
    /// 401 or 403.
    pub status: StatusCode,
    /// The `WWW-Authenticate` header values, as sent.
    pub www_authenticate: Vec<HeaderValue>,
}

/// Supplies the `Authorization` header of every request and hears about 401 and 403 answers.
pub trait AuthHook: Send + Sync + 'static {
    /// The `Authorization` header value for the next request, if any. Marked sensitive by the
    /// client, so that it never appears in a debug print.
    fn authorization(&self) -> Option<HeaderValue>;

    /// The server refused a request. Resolves to `true` if the hook has new credentials and the
    /// request should be sent once more (a refreshed token, a step-up), `false` to fail it.
    fn challenged(&self, challenge: Challenge) -> Pin<Box<dyn Future<Output = bool> + Send + '_>>;
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
