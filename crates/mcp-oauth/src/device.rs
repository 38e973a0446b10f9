//! The OAuth 2.0 Device Authorization Grant (RFC 8628), for a host on a machine where no
//! browser can reach it (a server over SSH, a container): the host asks the authorization
//! server for a user code, the person enters it at the verification address on any other
//! device, and the host polls the token endpoint until the person has approved, denied, or
//! the code has expired.
//!
//! As everywhere in this crate, these are requests to build and answers to read:
//! [`authorization_request`] and [`DeviceAuthorization::from_response`] for the first step,
//! [`Polling`] for the second (it says whether to keep polling, and how long to wait before
//! the next request). The [`Authorizer`](crate::Authorizer) drives them when the caller gives
//! it a [`DeviceUserAgent`](crate::DeviceUserAgent) and the authorization server lists a
//! `device_authorization_endpoint` (RFC 8628 §4).
//!
//! The device code is a secret ([`DeviceCode`]): whoever holds it while the person approves
//! gets the tokens, so it goes to the token endpoint and nowhere else. The user code is shown
//! to the person by design; it is short-lived and useless without the person's approval.

use serde::Deserialize;
use url::Url;
use url::form_urlencoded;

use crate::discovery::AuthorizationServerMetadata;
use crate::error::{AuthError, Error, cut_short};
use crate::flow::{self, ClientAuth, RawError, Tokens};
use crate::secret::DeviceCode;

/// The RFC 8628 `grant_type` of the token requests that poll for a device code.
pub const DEVICE_CODE_GRANT: &str = "urn:ietf:params:oauth:grant-type:device_code";

/// The `grant_types` a client registers to use the device flow: the device grant, with the
/// authorization-code grant beside it so that the same registration also serves a browser
/// login later, and `refresh_token` (SEP-2207: servers that honour the list issue refresh
/// tokens only to clients that ask).
pub(crate) const REGISTERED_GRANTS: &[&str] =
    &["authorization_code", DEVICE_CODE_GRANT, "refresh_token"];

/// The redirect URI a device-flow registration names when no browser user agent is there to
/// name one: registration requires one for the authorization-code grant beside the device
/// grant, and a loopback URI fits any later loopback login (RFC 8252 §7.3).
pub(crate) const REDIRECT_URI: &str = "http://127.0.0.1/callback";

/// RFC 8628 §3.2: the interval between polls when the server names none.
const DEFAULT_INTERVAL_S: u64 = 5;

/// RFC 8628 §3.5: what `slow_down` adds to the interval.
const SLOW_DOWN_MS: u64 = 5_000;

/// The shortest interval taken from a server: a server that says `0` would otherwise have the
/// host poll it without pause until the code expires.
const MIN_INTERVAL_MS: u64 = 1_000;

/// Why the device flow could not complete. Never holds the device code or a token.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DeviceError {
    /// A device login was asked for, but the authorization server lists no
    /// `device_authorization_endpoint`.
    #[error(
        "authorization server {issuer} does not offer the device flow (its metadata has no device_authorization_endpoint); log in through a browser instead"
    )]
    NotOffered {
        /// The authorization server, cut short.
        issuer: String,
    },
    /// The device authorization endpoint refused (RFC 6749 §5.2 error).
    #[error("the device authorization request was refused: {detail}")]
    Refused {
        /// The OAuth `error` code (`unauthorized_client`, `invalid_scope`, ...).
        error: String,
        /// The server's `error` and `error_description`, cut short.
        detail: String,
    },
    /// The device authorization endpoint answered something that is not an RFC 8628 answer.
    #[error("the device authorization endpoint gave no usable answer (HTTP {status}): {detail}")]
    BadAnswer {
        /// The HTTP status.
        status: u16,
        /// What is missing or wrong (never a value from the answer).
        detail: String,
    },
    /// The verification address is not one a person should be sent to: only `https`, or
    /// `http` to a loopback address, is shown (as for a browser,
    /// [`check_openable`](crate::flow::check_openable)).
    #[error(
        "the verification address {shown} is not shown: only https, or http to a loopback address, is"
    )]
    UnsafeVerificationUri {
        /// Its scheme and host.
        shown: String,
    },
    /// The person denied the login at the authorization server (`access_denied`).
    #[error("the login was denied at the authorization server (access_denied)")]
    Denied,
    /// The device code expired before the person approved: the server said `expired_token`,
    /// or its `expires_in` passed.
    #[error(
        "the code expired before the login was approved ({reason}); log in again for a new code"
    )]
    Expired {
        /// `expired_token` from the server, or the `expires_in` that passed.
        reason: String,
    },
}

impl DeviceError {
    /// Whether the server refused this client the device grant (`unauthorized_client`,
    /// `invalid_client`, or `invalid_request` naming the device grant, as npm's oidc-provider
    /// answers a client registered without it): a registration made for the browser alone,
    /// which registering again with the device grant mends.
    pub fn is_client_refused(&self) -> bool {
        matches!(self, Self::Refused { error, detail }
            if error == "unauthorized_client"
                || error == "invalid_client"
                || (error == "invalid_request" && detail.contains(DEVICE_CODE_GRANT)))
    }
}

/// What the person is shown: where to go, and the code to enter there.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct DeviceVerification {
    /// The code the person types at [`verification_uri`](Self::verification_uri). Shown by
    /// design: it only names the request the person then approves.
    pub user_code: String,
    /// Where to enter it (`https`, or `http` to loopback).
    pub verification_uri: Url,
    /// The same page with the code filled in, when the server gives one that may be shown.
    pub verification_uri_complete: Option<Url>,
    /// How long the code lives, in seconds.
    pub expires_in_s: u64,
}

/// The authorization server's answer to the device authorization request (RFC 8628 §3.2).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct DeviceAuthorization {
    /// The device code, for the token requests only.
    pub device_code: DeviceCode,
    /// What the person is shown.
    pub verification: DeviceVerification,
    /// The seconds to wait between polls, as the server said (or 5).
    pub interval_s: u64,
}

#[derive(Deserialize)]
struct RawAuthorization {
    device_code: String,
    user_code: String,
    // Some providers spell it `verification_url` (Google); the meaning is the same.
    #[serde(alias = "verification_url")]
    verification_uri: String,
    #[serde(default)]
    verification_uri_complete: Option<String>,
    expires_in: u64,
    #[serde(default)]
    interval: Option<u64>,
}

impl DeviceAuthorization {
    /// Reads the answer to [`authorization_request`]. The verification addresses must be
    /// `https` or loopback `http`: a `verification_uri_complete` that is not is dropped, a
    /// `verification_uri` that is not refuses the whole answer.
    pub fn from_response(status: u16, body: &[u8]) -> Result<Self, DeviceError> {
        if !(200..300).contains(&status) {
            return Err(match serde_json::from_slice::<RawError>(body) {
                Ok(e) => {
                    let description = e.error_description.unwrap_or_default();
                    DeviceError::Refused {
                        detail: cut_short(format!("{} {description}", e.error).trim_end()),
                        error: cut_short(&e.error),
                    }
                }
                Err(_) => DeviceError::BadAnswer {
                    status,
                    detail: "not an OAuth error".to_owned(),
                },
            });
        }
        let raw: RawAuthorization =
            serde_json::from_slice(body).map_err(|e| DeviceError::BadAnswer {
                status,
                detail: crate::error::json_position(&e),
            })?;
        let verification_uri =
            Url::parse(&raw.verification_uri).map_err(|_| DeviceError::BadAnswer {
                status,
                detail: "verification_uri is not a URL".to_owned(),
            })?;
        flow::check_openable(&verification_uri).map_err(|e| match e {
            Error::UnsafeAuthorizationUrl { shown } => DeviceError::UnsafeVerificationUri { shown },
            _ => DeviceError::UnsafeVerificationUri {
                shown: "?".to_owned(),
            },
        })?;
        let verification_uri_complete = raw
            .verification_uri_complete
            .and_then(|u| Url::parse(&u).ok())
            .filter(|u| flow::check_openable(u).is_ok());
        Ok(Self {
            device_code: DeviceCode::new(raw.device_code),
            verification: DeviceVerification {
                user_code: cut_short(&raw.user_code),
                verification_uri,
                verification_uri_complete,
                expires_in_s: raw.expires_in,
            },
            interval_s: raw.interval.unwrap_or(DEFAULT_INTERVAL_S),
        })
    }
}

/// Whether a login by a person goes through the device flow: when the caller offers it
/// (`device_agent`) and the authorization server lists a device authorization endpoint. A
/// caller with a device agent and no browser gets [`DeviceError::NotOffered`] from a server
/// without one; with a browser too, the browser is used there.
pub(crate) fn use_device_flow(
    meta: &AuthorizationServerMetadata,
    device_agent: bool,
    browser: bool,
) -> Result<bool, DeviceError> {
    if !device_agent {
        return Ok(false);
    }
    if meta.device_authorization_endpoint.is_some() {
        return Ok(true);
    }
    if browser {
        return Ok(false);
    }
    Err(DeviceError::NotOffered {
        issuer: cut_short(&meta.issuer),
    })
}

/// The device authorization request (RFC 8628 §3.1): a POST of `client_id` (or the client's
/// own authentication), the `scope`, and the RFC 8707 `resource` the tokens are for.
pub fn authorization_request(
    meta: &AuthorizationServerMetadata,
    client_id: &str,
    auth: &ClientAuth,
    resource: &str,
    scope: Option<&str>,
) -> Result<http::Request<Vec<u8>>, Error> {
    let endpoint = meta
        .device_authorization_endpoint
        .as_deref()
        .ok_or_else(|| Error::InvalidMetadata {
            what: "authorization server metadata",
            detail: "no device_authorization_endpoint".to_owned(),
        })?;
    let mut form = form_urlencoded::Serializer::new(String::new());
    if let Some(scope) = scope.filter(|s| !s.is_empty()) {
        form.append_pair("scope", scope);
    }
    form.append_pair("resource", resource);
    flow::form_post(
        endpoint,
        form,
        client_id,
        auth,
        "device_authorization_endpoint",
    )
}

/// The polling of the token endpoint for one device code (RFC 8628 §3.4, §3.5): how long to
/// wait before each request, when to stop, and what each answer means. It reads the clock
/// only through the times it is handed, so tests move time instead of waiting.
#[derive(Debug, Clone)]
pub struct Polling {
    deadline_ms: u64,
    expires_in_s: u64,
    interval_ms: u64,
}

impl Polling {
    /// Polling for `authorization`, which arrived at `now_ms`.
    pub fn new(authorization: &DeviceAuthorization, now_ms: u64) -> Self {
        let expires_in_s = authorization.verification.expires_in_s;
        Self {
            deadline_ms: now_ms.saturating_add(expires_in_s.saturating_mul(1000)),
            expires_in_s,
            interval_ms: authorization
                .interval_s
                .saturating_mul(1000)
                .max(MIN_INTERVAL_MS),
        }
    }

    /// How long to wait before the next token request, in milliseconds: the server's
    /// interval, 5 s longer after each `slow_down`.
    pub fn interval_ms(&self) -> u64 {
        self.interval_ms
    }

    /// Before each token request: [`DeviceError::Expired`] once the code's `expires_in` has
    /// passed (no request is sent for a dead code).
    pub fn check_time(&self, now_ms: u64) -> Result<(), DeviceError> {
        if now_ms >= self.deadline_ms {
            return Err(DeviceError::Expired {
                reason: format!("its {} s passed", self.expires_in_s),
            });
        }
        Ok(())
    }

    /// Reads a token answer: `Ok(Some)` the tokens, `Ok(None)` keep polling
    /// (`authorization_pending`, or `slow_down`, which lengthens the interval), an error to
    /// stop (`access_denied`, `expired_token`, or any other refusal). A `DPoP` token is
    /// refused unless the request carried a proof (`bound`): it could not be used.
    pub fn handle(
        &mut self,
        status: u16,
        body: &[u8],
        bound: bool,
    ) -> Result<Option<Tokens>, AuthError> {
        if (400..500).contains(&status)
            && let Ok(e) = serde_json::from_slice::<RawError>(body)
        {
            match e.error.as_str() {
                "authorization_pending" => return Ok(None),
                "slow_down" => {
                    self.interval_ms = self.interval_ms.saturating_add(SLOW_DOWN_MS);
                    return Ok(None);
                }
                "access_denied" => return Err(DeviceError::Denied.into()),
                "expired_token" => {
                    return Err(DeviceError::Expired {
                        reason: "the server said expired_token".to_owned(),
                    }
                    .into());
                }
                _ => {}
            }
        }
        let tokens = flow::tokens_from_response(status, body)?;
        if !bound && tokens.token_type == "DPoP" {
            return Err(flow::TokenError::Refused(
                "the token endpoint issued a DPoP token to a request without a proof".to_owned(),
            )
            .into());
        }
        Ok(Some(tokens))
    }
}
