//! Plain HTTP requests beside the MCP transport, for the OAuth layer: metadata documents,
//! client registration, token endpoints. Same pool, TLS configuration and connector as the MCP
//! client; no redirects followed, a bounded body, one deadline for the whole exchange, and
//! errors that never quote a header value, a body or a query string. An [`AddressPolicy`]
//! limits the addresses it connects to.

use std::fmt;
use std::time::Duration;

use bytes::Bytes;
use http::header::{AUTHORIZATION, COOKIE, PROXY_AUTHORIZATION};
use http::{Method, Request, Response, Uri};
use http_body_util::{BodyExt as _, Full, Limited};
use hyper_util::client::legacy::Client as Pool;

use super::policy::{AddressPolicy, Refusal};
use super::tls;

/// What a [`Fetcher`] allows: how long to connect and to wait for the whole exchange, how
/// large a body it reads, which private CAs it trusts and which addresses it may reach. Built
/// with [`FetchOptions::new`] and changed field by field, so new limits can be added without
/// breaking callers.
#[derive(Clone)]
#[non_exhaustive]
pub struct FetchOptions {
    /// How long to wait for a TCP connection (and TLS handshake start); 10 s by default.
    pub connect_timeout: Duration,
    /// How long one request may take from the first byte sent to the last byte of the
    /// response body; 30 s by default.
    pub timeout: Duration,
    /// The largest response body read; a larger one is an error. 1 MiB by default: metadata
    /// documents and token responses are small.
    pub max_body_bytes: usize,
    /// PEM certificates trusted beside Mozilla's roots for `https` URLs (a private CA).
    pub extra_roots_pem: Vec<Vec<u8>>,
    /// The addresses requests may reach, for a fetcher that works on behalf of a server whose
    /// URLs it is given (OAuth discovery): checked on every connection, after name resolution,
    /// so that a name resolving to a forbidden address is refused whenever it does. `None`
    /// (the default) reaches any address.
    pub address_policy: Option<AddressPolicy>,
}

impl FetchOptions {
    /// The defaults: 10 s to connect, 30 s per request, 1 MiB bodies, Mozilla's roots only.
    pub fn new() -> Self {
        Self {
            connect_timeout: Duration::from_secs(10),
            timeout: Duration::from_secs(30),
            max_body_bytes: 1 << 20,
            extra_roots_pem: Vec::new(),
            address_policy: None,
        }
    }
}

impl Default for FetchOptions {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for FetchOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FetchOptions")
            .field("connect_timeout", &self.connect_timeout)
            .field("timeout", &self.timeout)
            .field("max_body_bytes", &self.max_body_bytes)
            .field("extra_roots_pem", &self.extra_roots_pem.len())
            .field("address_policy", &self.address_policy)
            .finish()
    }
}

/// Why a [`Fetcher`] could not be built or a request brought back no response.
///
/// An HTTP error status is not a `FetchError`: every response, 3xx, 4xx and 5xx included,
/// comes back as a response for the caller to judge. Messages name the method and the URL
/// without its userinfo and query string (where secrets travel), and never a header value or
/// a body. Causes from hyper and rustls are flattened into the message text: their types are
/// not part of this crate's API. It converts into the crate's [`Error`](crate::Error).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FetchError {
    /// The options cannot work (local misuse): a CA PEM holds no usable certificate.
    #[error("fetcher options: {reason}")]
    Config {
        /// What is wrong.
        reason: String,
    },
    /// The request cannot be sent as given (local misuse): not an absolute `http` or `https`
    /// URL, or credentials in the URL.
    #[error("{method} {url}: {reason}")]
    InvalidRequest {
        /// The request's method.
        method: Method,
        /// The URL without userinfo or query string.
        url: String,
        /// What is wrong.
        reason: String,
    },
    /// Transport I/O: connecting, the TLS handshake (an unknown issuer), sending, or reading
    /// the response failed.
    #[error("{method} {url}: {detail}")]
    Transport {
        /// The request's method.
        method: Method,
        /// The URL without userinfo or query string.
        url: String,
        /// What failed, with its causes.
        detail: String,
    },
    /// The [`FetchOptions::address_policy`] forbids every address the URL leads to (a
    /// loopback or private address for a public server, plain `http` beyond loopback). Only
    /// the origin is named: the path and query of a URL a peer chose may carry secrets.
    #[error("{method} {origin}: refused: {rule}")]
    Refused {
        /// The request's method.
        method: Method,
        /// `scheme://host:port`.
        origin: String,
        /// The rule that refused it.
        rule: Refusal,
    },
    /// The peer sent a body larger than [`FetchOptions::max_body_bytes`].
    #[error("{method} {url}: the response body is larger than the limit of {limit} bytes")]
    BodyTooLarge {
        /// The request's method.
        method: Method,
        /// The URL without userinfo or query string.
        url: String,
        /// The limit that was exceeded.
        limit: usize,
    },
    /// The whole exchange took longer than [`FetchOptions::timeout`].
    #[error("{method} {url}: timed out after {timeout:?}")]
    TimedOut {
        /// The request's method.
        method: Method,
        /// The URL without userinfo or query string.
        url: String,
        /// The timeout that elapsed.
        timeout: Duration,
    },
}

/// Plain HTTP requests beside the MCP transport: what an OAuth layer needs to fetch metadata
/// documents, register clients and call token endpoints, over the same TLS configuration and
/// connector as the MCP client.
///
/// It never follows redirects: a 3xx comes back as a response with its `Location`, and the
/// caller decides (authorization servers redirect browsers, not us). The response body is
/// read to its end, up to [`FetchOptions::max_body_bytes`]. Cheap to clone: clones share the
/// connection pool.
///
/// # Cancel safety
///
/// Dropping the future of [`Fetcher::send`] abandons the request and its connection.
#[derive(Clone)]
pub struct Fetcher {
    pool: Pool<tls::Connector, Full<Bytes>>,
    timeout: Duration,
    max_body_bytes: usize,
}

impl fmt::Debug for Fetcher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Fetcher")
            .field("timeout", &self.timeout)
            .field("max_body_bytes", &self.max_body_bytes)
            .finish_non_exhaustive()
    }
}

impl Fetcher {
    /// A fetcher with its own connection pool. Fails if a CA PEM in `options` cannot be used.
    pub fn new(options: FetchOptions) -> Result<Self, FetchError> {
        let pool = super::pool(
            options.connect_timeout,
            &options.extra_roots_pem,
            options.address_policy,
        )
        .map_err(|reason| FetchError::Config { reason })?;
        Ok(Self {
            pool,
            timeout: options.timeout,
            max_body_bytes: options.max_body_bytes,
        })
    }

    /// Sends `request` as it is (its method, URL, headers and body; `Host` is added) and
    /// returns the response with its whole body, whatever its status. `Authorization`,
    /// `Proxy-Authorization` and `Cookie` headers are marked sensitive.
    pub async fn send(&self, request: Request<Vec<u8>>) -> Result<Response<Vec<u8>>, FetchError> {
        let (mut parts, body) = request.into_parts();
        let method = parts.method.clone();
        let url = redacted(&parts.uri);
        let invalid = |reason: &str| FetchError::InvalidRequest {
            method: method.clone(),
            url: url.clone(),
            reason: reason.to_owned(),
        };
        if !matches!(parts.uri.scheme_str(), Some("http" | "https")) || parts.uri.host().is_none() {
            return Err(invalid("not an absolute http or https URL"));
        }
        if parts
            .uri
            .authority()
            .is_some_and(|a| a.as_str().contains('@'))
        {
            return Err(invalid(
                "credentials in the URL are not sent; use an Authorization header",
            ));
        }
        for (name, value) in parts.headers.iter_mut() {
            if name == AUTHORIZATION || name == PROXY_AUTHORIZATION || name == COOKIE {
                value.set_sensitive(true);
            }
        }
        let request = Request::from_parts(parts, Full::new(Bytes::from(body)));
        let limit = self.max_body_bytes;
        let exchange = async {
            let response = self
                .pool
                .request(request)
                .await
                .map_err(|e| match refusal(&e) {
                    Some(refused) => Failure::Refused(refused.origin.clone(), refused.rule),
                    None => Failure::Transport(format!("the request failed: {}", super::chain(&e))),
                })?;
            let (parts, body) = response.into_parts();
            match Limited::new(body, limit).collect().await {
                Ok(collected) => Ok(Response::from_parts(parts, collected.to_bytes().to_vec())),
                Err(e) if e.is::<http_body_util::LengthLimitError>() => Err(Failure::TooLarge),
                Err(e) => Err(Failure::Transport(format!(
                    "reading the response body failed: {}",
                    super::chain(&*e)
                ))),
            }
        };
        match tokio::time::timeout(self.timeout, exchange).await {
            Ok(Ok(response)) => Ok(response),
            Ok(Err(Failure::Transport(detail))) => Err(FetchError::Transport {
                method,
                url,
                detail,
            }),
            Ok(Err(Failure::Refused(origin, rule))) => Err(FetchError::Refused {
                method,
                origin,
                rule,
            }),
            Ok(Err(Failure::TooLarge)) => Err(FetchError::BodyTooLarge { method, url, limit }),
            Err(_) => Err(FetchError::TimedOut {
                method,
                url,
                timeout: self.timeout,
            }),
        }
    }
}

/// How one exchange failed before the method and URL are attached.
enum Failure {
    Transport(String),
    Refused(String, Refusal),
    TooLarge,
}

/// The connector's refusal among the causes of `error`, if that is why it failed.
fn refusal<'a>(error: &'a (dyn std::error::Error + 'static)) -> Option<&'a tls::Refused> {
    let mut cause = Some(error);
    while let Some(e) = cause {
        if let Some(refused) = e.downcast_ref::<tls::Refused>() {
            return Some(refused);
        }
        cause = e.source();
    }
    None
}

/// The URL as errors show it: scheme, host, port and path; no userinfo, no query string.
pub(crate) fn redacted(uri: &Uri) -> String {
    let path = uri.path();
    match (uri.scheme_str(), uri.host()) {
        (Some(scheme), Some(host)) => match uri.port_u16() {
            Some(port) => format!("{scheme}://{host}:{port}{path}"),
            None => format!("{scheme}://{host}{path}"),
        },
        _ => path.to_owned(),
    }
}
