//! The server half's authorization hook: an [`Authenticator`] the application supplies (the
//! gateway, over `mcp-host`'s OAuth token checks) is asked about every request's
//! `Authorization` header, and serves the public documents clients discover it by (RFC 9728
//! protected resource metadata). This crate knows nothing of OAuth: it passes the header,
//! answers a refusal with the status and `WWW-Authenticate` value it is given, and hands the
//! caller the hook found to the session ([`mcp_session::Identity`]).
//!
//! A session belongs to the caller that started it: a later request on it by another
//! caller (another `subject`) is answered as if the session did not exist (404), so that a
//! session id alone, leaked or guessed, acts for nobody (MCP security best practices, session
//! hijacking).

use std::future::Future;
use std::pin::Pin;

use bytes::Bytes;
use http::header::{AUTHORIZATION, CONTENT_TYPE, HeaderValue, RETRY_AFTER, WWW_AUTHENTICATE};
use http::{Request, Response, StatusCode};
use hyper::body::Incoming;
use mcp_session::{Handler, Identity};

use super::{HttpServer, ResponseBody, rpc_error};

/// The `Retry-After` of a request refused with 503 because its caller could not be checked
/// (the authorization server did not answer): long enough for a blip to pass.
const AUTH_RETRY_AFTER_SECS: &str = "5";

/// Decides who may use the server, for [`HttpServerConfig::authenticator`](super::HttpServerConfig::authenticator).
pub trait Authenticator: Send + Sync + 'static {
    /// Judges one request by its `Authorization` header value (`None` when it has none).
    fn authenticate<'a>(
        &'a self,
        authorization: Option<&'a [u8]>,
    ) -> Pin<Box<dyn Future<Output = Verdict> + Send + 'a>>;

    /// A public JSON document served at `path` to a GET without authentication (the RFC 9728
    /// metadata at `/.well-known/oauth-protected-resource...`), or `None` (404).
    fn document(&self, path: &str) -> Option<Vec<u8>>;
}

/// What an [`Authenticator`] decided.
#[derive(Debug)]
#[non_exhaustive]
pub enum Verdict {
    /// The request goes ahead on behalf of `caller`.
    Allow {
        /// What the handler gets in [`RequestContext::caller`](mcp_session::RequestContext::caller).
        caller: Identity,
        /// Who it is, as a key: a session started by one subject is not another's.
        subject: String,
    },
    /// The request is answered with `status` and this `WWW-Authenticate` value.
    Refuse {
        /// 401 or 403; or 503 when the caller cannot be checked now (then without the
        /// challenge, with `Retry-After`).
        status: StatusCode,
        /// The challenge.
        challenge: HeaderValue,
        /// Why, for the body: no secret.
        reason: String,
    },
}

/// A request's authenticated caller.
#[derive(Debug, Clone)]
pub(super) struct Allowed {
    pub(super) caller: Identity,
    pub(super) subject: String,
}

impl<H: Handler> HttpServer<H> {
    /// The caller of `req`, or the refusal to answer with; `Ok(None)` without an
    /// authenticator.
    pub(super) async fn authenticate(
        &self,
        req: &Request<Incoming>,
    ) -> Result<Option<Allowed>, Response<ResponseBody>> {
        let Some(auth) = &self.config.authenticator else {
            return Ok(None);
        };
        let header = req.headers().get(AUTHORIZATION).map(HeaderValue::as_bytes);
        match auth.authenticate(header).await {
            Verdict::Allow { caller, subject } => Ok(Some(Allowed { caller, subject })),
            Verdict::Refuse {
                status,
                challenge,
                reason,
            } => {
                let message = match status {
                    StatusCode::FORBIDDEN => format!("Forbidden: {reason}"),
                    StatusCode::SERVICE_UNAVAILABLE => format!("Service Unavailable: {reason}"),
                    _ => format!("Unauthorized: {reason}"),
                };
                let mut r = rpc_error(status, -32600, &message);
                // A 503 (the token could not be checked now) challenges nobody: the client's
                // token may be good, and a challenge would send it to log in again. It says
                // when to try again instead.
                if status.is_client_error() {
                    r.headers_mut().insert(WWW_AUTHENTICATE, challenge);
                } else if status == StatusCode::SERVICE_UNAVAILABLE {
                    r.headers_mut()
                        .insert(RETRY_AFTER, HeaderValue::from_static(AUTH_RETRY_AFTER_SECS));
                }
                Err(r)
            }
        }
    }

    /// A public document of the authenticator, or 404.
    pub(super) fn document(&self, req: &Request<Incoming>) -> Response<ResponseBody> {
        let found = self
            .config
            .authenticator
            .as_ref()
            .filter(|_| req.method() == http::Method::GET)
            .and_then(|a| a.document(req.uri().path()));
        match found {
            Some(body) => {
                let mut r = Response::new(http_body_util::Either::Left(http_body_util::Full::new(
                    Bytes::from(body),
                )));
                r.headers_mut()
                    .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
                r
            }
            None => super::plain(StatusCode::NOT_FOUND, "not found"),
        }
    }
}

#[cfg(test)]
mod tests;
