//! The authorization-code grant with PKCE, as requests to build and answers to check: the
//! authorization URL (RFC 8707 `resource`, `state`, S256), the redirect (state, RFC 9207
//! `iss`, errors), the token requests for a code and for a refresh, client authentication
//! (`client_secret_basic`, `client_secret_post`, `none`), and token answers (with
//! `invalid_grant` told apart from a passing failure).
//! This file is long because each request it builds and each answer it checks carries its rule from
//! the RFCs, and its unit tests sit beside them.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde::Deserialize;
use url::Url;
use url::form_urlencoded;

use crate::discovery::AuthorizationServerMetadata;
use crate::error::{Error, cut_short};
use crate::pkce::Pkce;
use crate::secret::{
    AccessToken, AuthorizationCode, ClientSecret, JwtAssertion, PkceVerifier, RefreshToken,
};

/// The scope to ask for: the one the 401 challenge named, else what the protected resource
/// says it supports, else none (SPEC.md §5.7).
pub fn select_scope(
    challenge_scope: Option<&str>,
    resource_scopes: Option<&[String]>,
) -> Option<String> {
    challenge_scope
        .filter(|s| !s.trim().is_empty())
        .map(str::to_owned)
        .or_else(|| {
            resource_scopes
                .filter(|s| !s.is_empty())
                .map(|s| s.join(" "))
        })
}

/// The scope for a step-up after 403 `insufficient_scope`: what was asked before, plus what the
/// challenge names, each once.
pub fn step_up_scope(previous: Option<&str>, challenged: &str) -> String {
    let mut scopes: Vec<&str> = previous.unwrap_or_default().split_whitespace().collect();
    for s in challenged.split_whitespace() {
        if !scopes.contains(&s) {
            scopes.push(s);
        }
    }
    scopes.join(" ")
}

/// The scope that asks for a refresh token in OpenID Connect and at many authorization
/// servers that issue refresh tokens only on request.
pub const OFFLINE_ACCESS: &str = "offline_access";

/// `scope` with `offline_access` only where the authorization server offers it (MCP
/// 2026-07-28 `index.mdx` §Refresh Tokens, SEP-2207): removed whenever `meta`'s
/// `scopes_supported` does not list it, wherever it came from (a challenge, the resource's
/// `scopes_supported`, configuration, a step-up union); added when it is listed and `add` is
/// set (a user's grant, where a refresh token spares the next browser round trip) and some
/// other scope is asked for. A request with no scope at all gets the server's default scope,
/// which `offline_access` alone would replace, so none is added then.
pub fn with_offline_access(
    scope: Option<&str>,
    meta: &AuthorizationServerMetadata,
    add: bool,
) -> Option<String> {
    let listed = meta
        .scopes_supported
        .as_deref()
        .is_some_and(|s| s.iter().any(|x| x == OFFLINE_ACCESS));
    let mut scopes: Vec<&str> = scope
        .unwrap_or_default()
        .split_whitespace()
        .filter(|s| listed || *s != OFFLINE_ACCESS)
        .collect();
    if listed && add && !scopes.is_empty() && !scopes.contains(&OFFLINE_ACCESS) {
        scopes.push(OFFLINE_ACCESS);
    }
    (!scopes.is_empty()).then(|| scopes.join(" "))
}

/// Whether `url` may be opened in the user's browser: `https` with a host, or `http` to a
/// loopback address (`localhost`, `127.0.0.0/8`, `::1`), as MCP's security best practices ask.
/// A server's metadata names the authorization endpoint; without this check it could have a
/// browser (or the program `$BROWSER` names) open `file:`, `ssh:` or `javascript:` URLs, or
/// send the user's login over plain http. The error names the scheme and host only: the path
/// and query may hold anything.
pub fn check_openable(url: &Url) -> Result<(), Error> {
    let loopback = match url.host() {
        Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    };
    let fine = match url.scheme() {
        "https" => url.host().is_some(),
        "http" => loopback,
        _ => false,
    };
    if fine {
        return Ok(());
    }
    let shown = match url.host_str() {
        Some(host) => format!("{}://{}", url.scheme(), cut_short(host)),
        None => format!("{}:", cut_short(url.scheme())),
    };
    Err(Error::UnsafeAuthorizationUrl { shown })
}

/// The authorization URL the user's browser is sent to; refused unless
/// [`check_openable`] allows it.
pub fn authorization_url(
    meta: &AuthorizationServerMetadata,
    client_id: &str,
    redirect_uri: &str,
    resource: &str,
    scope: Option<&str>,
    pkce: &Pkce,
    state: &str,
) -> Result<Url, Error> {
    meta.require_pkce_s256()?;
    let mut url = Url::parse(&meta.authorization_endpoint).map_err(|e| Error::InvalidMetadata {
        what: "authorization server metadata",
        detail: format!("authorization_endpoint: {e}"),
    })?;
    check_openable(&url)?;
    {
        let mut q = url.query_pairs_mut();
        q.append_pair("response_type", "code")
            .append_pair("client_id", client_id)
            .append_pair("redirect_uri", redirect_uri)
            .append_pair("code_challenge", &pkce.challenge)
            .append_pair("code_challenge_method", "S256")
            .append_pair("state", state)
            .append_pair("resource", resource);
        if let Some(scope) = scope.filter(|s| !s.is_empty()) {
            q.append_pair("scope", scope);
        }
    }
    Ok(url)
}

/// Checks the redirect back from the authorization server and takes its code.
///
/// RFC 9207 and MCP 2026-07-28 (`index.mdx` §Authorization Response Validation), before
/// anything else in the redirect is looked at: `iss`, form-decoded, must be byte-equal to the
/// issuer of the validated metadata (`meta.issuer`, the string the metadata stated) whenever it
/// is present, advertised or not, with no case folding and no port, slash or percent-encoding
/// normalisation; when the server advertises
/// `authorization_response_iss_parameter_supported` it must be present; a redirect with more
/// than one `iss` is refused (which one would count?). Neither advertised nor present: the
/// redirect is taken. Then the `state` must be the one sent. Only a redirect that passes both
/// has its `error` and `error_description` shown: a forged redirect's text is never displayed
/// or acted on, and no code from it reaches a token endpoint.
pub fn code_from_redirect(
    redirect: &Url,
    expected_state: &str,
    meta: &AuthorizationServerMetadata,
) -> Result<AuthorizationCode, Error> {
    let get = |name: &str| {
        redirect
            .query_pairs()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.into_owned())
    };
    if redirect.query_pairs().filter(|(k, _)| k == "iss").count() > 1 {
        return Err(Error::Redirect(
            "the redirect has more than one iss; refused".to_owned(),
        ));
    }
    match get("iss") {
        Some(iss) if iss != meta.issuer => {
            return Err(Error::Redirect(format!(
                "the redirect's iss {:?} is not the issuer {:?}; refused",
                cut_short(&iss),
                meta.issuer
            )));
        }
        None if meta.authorization_response_iss_parameter_supported == Some(true) => {
            return Err(Error::Redirect(
                "the redirect has no iss, which this authorization server promises; refused"
                    .to_owned(),
            ));
        }
        _ => {}
    }
    if get("state").as_deref() != Some(expected_state) {
        return Err(Error::Redirect(
            "the redirect's state is not the one sent; refused".to_owned(),
        ));
    }
    if let Some(error) = get("error") {
        // Whoever sent the browser here wrote this text: shown, but cut short.
        let description = get("error_description").unwrap_or_default();
        return Err(Error::Redirect(format!(
            "authorization was refused: {}",
            cut_short(format!("{error} {description}").trim_end())
        )));
    }
    get("code")
        .filter(|c| !c.is_empty())
        .map(AuthorizationCode::new)
        .ok_or_else(|| Error::Redirect("the redirect carries no code".to_owned()))
}

/// How the client proves itself at the token endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ClientAuth {
    /// A public client: `client_id` in the body only.
    None,
    /// HTTP Basic with the client id and secret (RFC 6749 §2.3.1).
    Basic(ClientSecret),
    /// The secret in the body.
    Post(ClientSecret),
    /// RFC 7523 `private_key_jwt`: a signed assertion in the body, with `client_id`.
    JwtAssertion(JwtAssertion),
}

impl ClientAuth {
    /// The method for a client with `secret`: the one its registration answer named
    /// (`token_endpoint_auth_method`, RFC 7591 §3.2.1: what the server actually registered,
    /// which wins over what its metadata lists), else basic when supported (RFC 8414's
    /// default when the server lists none), else post; `none` without a secret.
    pub fn choose(
        meta: &AuthorizationServerMetadata,
        registered: Option<&str>,
        secret: Option<&ClientSecret>,
    ) -> Self {
        let Some(secret) = secret else {
            return Self::None;
        };
        let supported = meta
            .token_endpoint_auth_methods_supported
            .clone()
            .unwrap_or_else(|| vec!["client_secret_basic".to_owned()]);
        let has = |m: &str| supported.iter().any(|s| s == m);
        match registered {
            Some("client_secret_post") => Self::Post(secret.clone()),
            Some("client_secret_basic") => Self::Basic(secret.clone()),
            Some("none") => Self::None,
            _ if has("client_secret_basic") => Self::Basic(secret.clone()),
            _ if has("client_secret_post") => Self::Post(secret.clone()),
            _ => Self::None,
        }
    }
}

/// A token request: a POST of a form to the token endpoint.
pub fn token_request(
    meta: &AuthorizationServerMetadata,
    client_id: &str,
    auth: &ClientAuth,
    grant: Grant<'_>,
    resource: &str,
) -> Result<http::Request<Vec<u8>>, Error> {
    let mut form = form_urlencoded::Serializer::new(String::new());
    match grant {
        Grant::Code {
            code,
            verifier,
            redirect_uri,
        } => {
            form.append_pair("grant_type", "authorization_code")
                .append_pair("code", code.secret())
                .append_pair("code_verifier", verifier.secret())
                .append_pair("redirect_uri", redirect_uri);
        }
        Grant::Refresh { token, scope } => {
            form.append_pair("grant_type", "refresh_token")
                .append_pair("refresh_token", token.secret());
            if let Some(scope) = scope {
                form.append_pair("scope", scope);
            }
        }
        Grant::ClientCredentials { scope } => {
            form.append_pair("grant_type", "client_credentials");
            if let Some(scope) = scope.filter(|s| !s.is_empty()) {
                form.append_pair("scope", scope);
            }
        }
        Grant::JwtBearer { assertion, scope } => {
            form.append_pair("grant_type", JWT_BEARER)
                .append_pair("assertion", assertion.secret());
            if let Some(scope) = scope.filter(|s| !s.is_empty()) {
                form.append_pair("scope", scope);
            }
        }
        Grant::DeviceCode { device_code } => {
            form.append_pair("grant_type", crate::device::DEVICE_CODE_GRANT)
                .append_pair("device_code", device_code.secret());
        }
    }
    form.append_pair("resource", resource);
    form_post(
        &meta.token_endpoint,
        form,
        client_id,
        auth,
        "token_endpoint",
    )
}

/// A POST of `form` to `endpoint` (named `field` in errors) with the client's authentication
/// (RFC 6749 §2.3, RFC 7523 §2.2): the token request and the device authorization request
/// (RFC 8628 §3.1) authenticate alike.
pub(crate) fn form_post(
    endpoint: &str,
    mut form: form_urlencoded::Serializer<'_, String>,
    client_id: &str,
    auth: &ClientAuth,
    field: &str,
) -> Result<http::Request<Vec<u8>>, Error> {
    let mut builder = http::Request::post(endpoint)
        .header(
            http::header::CONTENT_TYPE,
            "application/x-www-form-urlencoded",
        )
        .header(http::header::ACCEPT, "application/json");
    match auth {
        ClientAuth::Basic(secret) => {
            let enc = |s: &str| form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>();
            let pair = format!("{}:{}", enc(client_id), enc(secret.secret()));
            let mut value =
                http::HeaderValue::from_str(&format!("Basic {}", STANDARD.encode(pair)))
                    .expect("`Basic ` and base64 are visible ASCII, always a valid header value");
            value.set_sensitive(true);
            builder = builder.header(http::header::AUTHORIZATION, value);
        }
        ClientAuth::Post(secret) => {
            form.append_pair("client_id", client_id)
                .append_pair("client_secret", secret.secret());
        }
        ClientAuth::JwtAssertion(jwt) => {
            form.append_pair("client_id", client_id)
                .append_pair(
                    "client_assertion_type",
                    "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
                )
                .append_pair("client_assertion", jwt.secret());
        }
        ClientAuth::None => {
            form.append_pair("client_id", client_id);
        }
    }
    builder
        .body(form.finish().into_bytes())
        .map_err(|e| Error::InvalidMetadata {
            what: "authorization server metadata",
            detail: format!("{field}: {e}"),
        })
}

/// What is exchanged for tokens.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub enum Grant<'a> {
    /// The code from the redirect, with the verifier of its challenge.
    Code {
        /// The code.
        code: &'a AuthorizationCode,
        /// The PKCE verifier.
        verifier: &'a PkceVerifier,
        /// The same redirect URI as in the authorization request.
        redirect_uri: &'a str,
    },
    /// A refresh token, optionally for a narrower scope.
    Refresh {
        /// The refresh token.
        token: &'a RefreshToken,
        /// The scope, if narrower than the original.
        scope: Option<&'a str>,
    },
    /// The client's own credentials (OAuth 2.1 §4.2; the MCP `client_credentials`
    /// extension): no user, no redirect.
    ClientCredentials {
        /// The scope to ask for, if any.
        scope: Option<&'a str>,
    },
    /// A JWT that someone else issued (RFC 7523 §2.1): a workload identity token, or the
    /// identity assertion an identity provider issued for this server (SEP-990's ID-JAG).
    JwtBearer {
        /// The JWT, sent as `assertion`.
        assertion: &'a JwtAssertion,
        /// The scope to ask for, if any.
        scope: Option<&'a str>,
    },
    /// The device code of an RFC 8628 device authorization, once the person approves it on
    /// another device (polled for until then; see [`device`](crate::device)).
    DeviceCode {
        /// The device code.
        device_code: &'a crate::secret::DeviceCode,
    },
}

/// The RFC 7523 `grant_type` of an assertion grant.
pub const JWT_BEARER: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";
/// The RFC 8693 `grant_type` of a token exchange.
pub const TOKEN_EXCHANGE: &str = "urn:ietf:params:oauth:grant-type:token-exchange";
/// The RFC 8693 token type of an OpenID Connect ID token.
pub const ID_TOKEN_TYPE: &str = "urn:ietf:params:oauth:token-type:id_token";
/// The token type of an Identity Assertion JWT Authorization Grant (SEP-990's ID-JAG).
pub const ID_JAG_TYPE: &str = "urn:ietf:params:oauth:token-type:id-jag";

/// The RFC 8693 token exchange at an identity provider's token endpoint that turns the user's
/// ID token into an identity assertion for one authorization server (`audience`, its issuer as
/// published) and one resource (SEP-990, enterprise-managed authorization). `client_id` is the
/// host's client at the identity provider.
pub fn token_exchange_request(
    token_endpoint: &str,
    client_id: &str,
    id_token: &JwtAssertion,
    audience: &str,
    resource: &str,
    scope: Option<&str>,
) -> Result<http::Request<Vec<u8>>, Error> {
    let mut form = form_urlencoded::Serializer::new(String::new());
    form.append_pair("grant_type", TOKEN_EXCHANGE)
        .append_pair("requested_token_type", ID_JAG_TYPE)
        .append_pair("subject_token", id_token.secret())
        .append_pair("subject_token_type", ID_TOKEN_TYPE)
        .append_pair("audience", audience)
        .append_pair("resource", resource)
        .append_pair("client_id", client_id);
    if let Some(scope) = scope.filter(|s| !s.is_empty()) {
        form.append_pair("scope", scope);
    }
    http::Request::post(token_endpoint)
        .header(
            http::header::CONTENT_TYPE,
            "application/x-www-form-urlencoded",
        )
        .header(http::header::ACCEPT, "application/json")
        .body(form.finish().into_bytes())
        .map_err(|e| Error::InvalidMetadata {
            what: "identity provider",
            detail: format!("token_endpoint: {e}"),
        })
}

#[derive(Deserialize)]
struct RawExchange {
    access_token: String,
    #[serde(default)]
    issued_token_type: Option<String>,
}

/// Reads the identity provider's answer to [`token_exchange_request`]: the identity
/// assertion, which must be of the requested type.
pub fn identity_assertion_from_response(
    status: u16,
    body: &[u8],
) -> Result<JwtAssertion, TokenError> {
    if (200..300).contains(&status) {
        let raw: RawExchange =
            serde_json::from_slice(body).map_err(|_| TokenError::Transient { status })?;
        if raw.issued_token_type.as_deref() != Some(ID_JAG_TYPE) {
            return Err(TokenError::Refused(
                "the identity provider did not issue an identity assertion".to_owned(),
            ));
        }
        return Ok(JwtAssertion::new(raw.access_token));
    }
    Err(token_error(status, body))
}

/// Tokens from the token endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Tokens {
    /// The access token.
    pub access_token: AccessToken,
    /// How it is presented: `Bearer`, or `DPoP` for a token bound to the key whose proof came
    /// with the request (RFC 9449 §5).
    pub token_type: String,
    /// Seconds until it expires, if the server says.
    pub expires_in: Option<u64>,
    /// A new refresh token: always kept, replacing the old one (rotation).
    pub refresh_token: Option<RefreshToken>,
    /// The scope granted, if it differs from the one asked.
    pub scope: Option<String>,
}

/// Why the token endpoint refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TokenError {
    /// The grant is dead (`invalid_grant`): the user must authorize again. Never retried.
    #[error("the authorization is no longer valid ({0}); sign in again")]
    InvalidGrant(String),
    /// Another OAuth error (`invalid_client`, `invalid_scope`, ...).
    #[error("the token endpoint refused: {0}")]
    Refused(String),
    /// A failure that may pass (5xx, a body that is not an answer): try again later.
    #[error("the token endpoint failed for now (HTTP {status}); try again later")]
    Transient {
        /// The HTTP status.
        status: u16,
    },
}

#[derive(Deserialize)]
struct RawTokens {
    access_token: String,
    #[serde(default)]
    token_type: Option<String>,
    #[serde(default)]
    expires_in: Option<u64>,
    #[serde(default)]
    refresh_token: Option<String>,
    #[serde(default)]
    scope: Option<String>,
}

/// An RFC 6749 §5.2 error answer (also RFC 7591 §3.2.2's and RFC 9449 §8's).
#[derive(Deserialize)]
pub(crate) struct RawError {
    pub(crate) error: String,
    #[serde(default)]
    pub(crate) error_description: Option<String>,
}

/// Reads the token endpoint's answer.
pub fn tokens_from_response(status: u16, body: &[u8]) -> Result<Tokens, TokenError> {
    if (200..300).contains(&status) {
        let raw: RawTokens =
            serde_json::from_slice(body).map_err(|_| TokenError::Transient { status })?;
        // RFC 6749 §7.1: the type is case-insensitive; a missing one is taken as Bearer.
        let token_type = match raw.token_type.as_deref() {
            None => "Bearer",
            Some(t) if t.eq_ignore_ascii_case("bearer") => "Bearer",
            Some(t) if t.eq_ignore_ascii_case("dpop") => "DPoP",
            Some(_) => {
                return Err(TokenError::Refused(
                    "the token is neither a Bearer nor a DPoP token".to_owned(),
                ));
            }
        };
        return Ok(Tokens {
            access_token: AccessToken::new(raw.access_token),
            token_type: token_type.to_owned(),
            expires_in: raw.expires_in,
            refresh_token: raw.refresh_token.map(RefreshToken::new),
            scope: raw.scope,
        });
    }
    Err(token_error(status, body))
}

/// Why a token endpoint refused, from a non-2xx answer.
fn token_error(status: u16, body: &[u8]) -> TokenError {
    match serde_json::from_slice::<RawError>(body) {
        Ok(e) if (400..500).contains(&status) => {
            // The server's text: shown, but cut short.
            let description = e.error_description.unwrap_or_default();
            let text = cut_short(format!("{} {description}", e.error).trim_end());
            if e.error == "invalid_grant" {
                TokenError::InvalidGrant(text)
            } else {
                TokenError::Refused(text)
            }
        }
        _ => TokenError::Transient { status },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(extra: &str) -> AuthorizationServerMetadata {
        let body = format!(
            r#"{{"issuer":"https://auth.example.com","authorization_endpoint":"https://auth.example.com/authorize","token_endpoint":"https://auth.example.com/token","code_challenge_methods_supported":["S256"]{extra}}}"#
        );
        AuthorizationServerMetadata::parse(body.as_bytes(), "https://auth.example.com").unwrap()
    }

    #[test]
    fn scope_selection_and_step_up() {
        let supported = vec!["read".to_owned(), "write".to_owned()];
        assert_eq!(
            select_scope(Some("files:read"), Some(&supported)).as_deref(),
            Some("files:read")
        );
        assert_eq!(
            select_scope(None, Some(&supported)).as_deref(),
            Some("read write")
        );
        assert_eq!(select_scope(Some(" "), None), None);
        assert_eq!(
            step_up_scope(Some("read write"), "write admin"),
            "read write admin"
        );
        assert_eq!(step_up_scope(None, "admin"), "admin");
    }

    #[test]
    fn offline_access_only_when_the_authorization_server_lists_it() {
        let offered = meta(r#","scopes_supported":["mcp:basic","offline_access"]"#);
        let not_listed = meta(r#","scopes_supported":["mcp:basic","mcp:read"]"#);
        let silent = meta("");
        let with = |scope: Option<&str>, m: &AuthorizationServerMetadata, add: bool| {
            with_offline_access(scope, m, add)
        };
        assert_eq!(
            with(Some("mcp:basic"), &offered, true).as_deref(),
            Some("mcp:basic offline_access")
        );
        assert_eq!(
            with(Some("offline_access mcp:basic"), &offered, true).as_deref(),
            Some("offline_access mcp:basic"),
            "once"
        );
        assert_eq!(with(None, &offered, true), None, "never alone");
        assert_eq!(
            with(Some("mcp:basic"), &offered, false).as_deref(),
            Some("mcp:basic"),
            "not for a machine grant"
        );
        for m in [&not_listed, &silent] {
            assert_eq!(
                with(Some("mcp:basic offline_access"), m, true).as_deref(),
                Some("mcp:basic"),
                "removed wherever it came from"
            );
            assert_eq!(with(Some("offline_access"), m, true), None);
            assert_eq!(
                with(Some("mcp:basic"), m, true).as_deref(),
                Some("mcp:basic")
            );
        }
    }

    #[test]
    fn the_authorization_url_carries_pkce_state_and_resource() {
        let pkce = Pkce::from_verifier(PkceVerifier::new(
            "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk",
        ));
        let url = authorization_url(
            &meta(""),
            "client-1",
            "http://127.0.0.1:5000/callback",
            "https://mcp.example.com/mcp",
            Some("a b"),
            &pkce,
            "st-1",
        )
        .unwrap();
        let q: Vec<(String, String)> = url.query_pairs().into_owned().collect();
        let get = |k: &str| q.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
        assert_eq!(get("response_type"), Some("code"));
        assert_eq!(
            get("code_challenge"),
            Some("E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM")
        );
        assert_eq!(get("code_challenge_method"), Some("S256"));
        assert_eq!(get("resource"), Some("https://mcp.example.com/mcp"));
        assert_eq!(get("scope"), Some("a b"));
        assert_eq!(get("state"), Some("st-1"));
        assert!(
            !url.as_str().contains("dBjftJeZ"),
            "the verifier never leaves before the exchange"
        );
        let no_pkce = AuthorizationServerMetadata::parse(
            br#"{"issuer":"https://a","authorization_endpoint":"https://a/x","token_endpoint":"https://a/t"}"#,
            "https://a",
        )
        .unwrap();
        assert!(matches!(
            authorization_url(&no_pkce, "c", "r", "s", None, &pkce, "x"),
            Err(Error::PkceNotSupported { .. })
        ));
    }

    #[test]
    fn the_redirect_is_checked_for_state_and_iss() {
        let m = meta("");
        let ok = Url::parse(
            "http://127.0.0.1:5000/callback?code=abc&state=st-1&iss=https%3A%2F%2Fauth.example.com",
        )
        .unwrap();
        assert_eq!(code_from_redirect(&ok, "st-1", &m).unwrap().secret(), "abc");
        let bad_state = Url::parse("http://x/cb?code=abc&state=other").unwrap();
        assert!(code_from_redirect(&bad_state, "st-1", &m).is_err());
        // A forged redirect's own words are never shown: not with a wrong iss, nor with a
        // missing one the server promised.
        let forged = "error=access_denied&error_description=FORGED-TEXT";
        let bad_iss = Url::parse(&format!(
            "http://x/cb?state=st-1&iss=https://evil.example&{forged}"
        ))
        .unwrap();
        let err = code_from_redirect(&bad_iss, "st-1", &m)
            .unwrap_err()
            .to_string();
        assert!(err.contains("is not the issuer"), "{err}");
        assert!(
            !err.contains("access_denied") && !err.contains("FORGED"),
            "{err}"
        );
        let promised = meta(r#","authorization_response_iss_parameter_supported":true"#);
        let missing = Url::parse("http://x/cb?code=abc&state=st-1").unwrap();
        assert!(code_from_redirect(&missing, "st-1", &promised).is_err());
        let missing_with_error = Url::parse(&format!("http://x/cb?state=st-1&{forged}")).unwrap();
        let err = code_from_redirect(&missing_with_error, "st-1", &promised)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("has no iss") && !err.contains("FORGED"),
            "{err}"
        );
        assert_eq!(
            code_from_redirect(
                &Url::parse("http://x/cb?code=abc&state=st-1&iss=https://auth.example.com")
                    .unwrap(),
                "st-1",
                &promised
            )
            .unwrap()
            .secret(),
            "abc"
        );
        let denied =
            Url::parse("http://x/cb?state=st-1&error=access_denied&error_description=no").unwrap();
        assert!(
            code_from_redirect(&denied, "st-1", &m)
                .unwrap_err()
                .to_string()
                .contains("access_denied no")
        );
    }

    #[test]
    fn iss_is_compared_byte_for_byte_after_form_decoding() {
        let check = |issuer: &str, iss_query: &str| {
            let body = format!(
                r#"{{"issuer":"{issuer}","authorization_endpoint":"https://a/x","token_endpoint":"https://a/t"}}"#
            );
            let m = AuthorizationServerMetadata::parse(body.as_bytes(), issuer).unwrap();
            let url =
                Url::parse(&format!("http://127.0.0.1/cb?code=c&state=s&{iss_query}")).unwrap();
            code_from_redirect(&url, "s", &m).is_ok()
        };
        let issuer = "https://auth.example.com";
        assert!(check(issuer, "iss=https://auth.example.com"));
        assert!(
            check(issuer, "iss=https%3A%2F%2Fauth.example.com"),
            "form-decoded first"
        );
        for normalised in [
            "iss=https://auth.example.com/",
            "iss=HTTPS://auth.example.com",
            "iss=https://AUTH.example.com",
            "iss=https://auth.example.com:443",
            "iss=https://auth.example.com%2F",
            "iss=https://auth.example.com&iss=https://auth.example.com",
        ] {
            assert!(!check(issuer, normalised), "{normalised} was accepted");
        }
        // An issuer that holds a percent sign is compared with the decoded `iss`, not
        // re-encoded or decoded itself.
        let odd = "https://auth.example.com/t%41";
        assert!(check(odd, "iss=https://auth.example.com/t%2541"));
        assert!(!check(odd, "iss=https://auth.example.com/tA"));
        assert!(!check(odd, "iss=https://auth.example.com/t%41"));
        // An issuer without a path, as the conformance servers state it, is not given one.
        let bare = "http://localhost:3000";
        assert!(check(bare, "iss=http://localhost:3000"));
        assert!(!check(bare, "iss=http://localhost:3000/"));
    }

    #[test]
    fn client_authentication_is_chosen_from_metadata_and_registration() {
        let secret = ClientSecret::new("s3cr3t");
        assert_eq!(ClientAuth::choose(&meta(""), None, None), ClientAuth::None);
        assert_eq!(
            ClientAuth::choose(&meta(""), None, Some(&secret)),
            ClientAuth::Basic(secret.clone()),
            "RFC 8414 default"
        );
        let post_only = meta(r#","token_endpoint_auth_methods_supported":["client_secret_post"]"#);
        assert_eq!(
            ClientAuth::choose(&post_only, None, Some(&secret)),
            ClientAuth::Post(secret.clone())
        );
        let both = meta(
            r#","token_endpoint_auth_methods_supported":["client_secret_basic","client_secret_post"]"#,
        );
        assert_eq!(
            ClientAuth::choose(&both, Some("client_secret_post"), Some(&secret)),
            ClientAuth::Post(secret.clone())
        );
        // The registration answer is what the server registered: it wins over the list.
        assert_eq!(
            ClientAuth::choose(&post_only, Some("client_secret_basic"), Some(&secret)),
            ClientAuth::Basic(secret.clone())
        );
        let basic_only =
            meta(r#","token_endpoint_auth_methods_supported":["client_secret_basic"]"#);
        assert_eq!(
            ClientAuth::choose(&basic_only, Some("client_secret_post"), Some(&secret)),
            ClientAuth::Post(secret.clone())
        );
        assert_eq!(
            ClientAuth::choose(&basic_only, Some("none"), Some(&secret)),
            ClientAuth::None
        );
        assert_eq!(
            ClientAuth::choose(&post_only, Some("private_key_jwt"), Some(&secret)),
            ClientAuth::Post(secret),
            "a method this client cannot use: the metadata decides"
        );
    }

    #[test]
    fn token_requests_carry_resource_verifier_and_client_auth() {
        let m = meta("");
        let code = AuthorizationCode::new("the-code");
        let verifier = PkceVerifier::new("the-verifier");
        let grant = Grant::Code {
            code: &code,
            verifier: &verifier,
            redirect_uri: "http://127.0.0.1:5000/callback",
        };
        let req = token_request(
            &m,
            "client 1",
            &ClientAuth::Basic(ClientSecret::new("s:3")),
            grant,
            "https://mcp.example.com/mcp",
        )
        .unwrap();
        let body = String::from_utf8(req.body().clone()).unwrap();
        assert!(
            body.contains("grant_type=authorization_code")
                && body.contains("code_verifier=the-verifier")
        );
        assert!(body.contains("resource=https%3A%2F%2Fmcp.example.com%2Fmcp"));
        assert!(
            !body.contains("client_secret"),
            "basic puts the secret in the header only"
        );
        let auth = req.headers()[http::header::AUTHORIZATION].clone();
        assert!(auth.is_sensitive());
        assert_eq!(
            auth.to_str().unwrap(),
            format!("Basic {}", STANDARD.encode("client+1:s%3A3"))
        );

        let refresh = RefreshToken::new("r-1");
        let req = token_request(
            &m,
            "c",
            &ClientAuth::None,
            Grant::Refresh {
                token: &refresh,
                scope: None,
            },
            "https://mcp.example.com/mcp",
        )
        .unwrap();
        let body = String::from_utf8(req.body().clone()).unwrap();
        assert_eq!(
            body,
            "grant_type=refresh_token&refresh_token=r-1&resource=https%3A%2F%2Fmcp.example.com%2Fmcp&client_id=c"
        );
    }

    #[test]
    fn token_answers_and_failures() {
        let t = tokens_from_response(200, br#"{"access_token":"at","token_type":"Bearer","expires_in":3600,"refresh_token":"rt2"}"#).unwrap();
        assert_eq!(
            (
                t.access_token.secret(),
                t.expires_in,
                t.refresh_token.unwrap().secret().to_owned()
            ),
            ("at", Some(3600), "rt2".to_owned())
        );
        assert!(
            matches!(tokens_from_response(400, br#"{"error":"invalid_grant","error_description":"expired"}"#), Err(TokenError::InvalidGrant(d)) if d == "invalid_grant expired")
        );
        assert!(matches!(
            tokens_from_response(401, br#"{"error":"invalid_client"}"#),
            Err(TokenError::Refused(_))
        ));
        assert_eq!(
            tokens_from_response(503, b"<html>"),
            Err(TokenError::Transient { status: 503 })
        );
        let dpop =
            tokens_from_response(200, br#"{"access_token":"at","token_type":"dpop"}"#).unwrap();
        assert_eq!(dpop.token_type, "DPoP");
        assert_eq!(
            tokens_from_response(200, br#"{"access_token":"at"}"#)
                .unwrap()
                .token_type,
            "Bearer"
        );
        assert!(matches!(
            tokens_from_response(200, br#"{"access_token":"at","token_type":"mac"}"#),
            Err(TokenError::Refused(_))
        ));
        assert_eq!(
            tokens_from_response(200, b"not json"),
            Err(TokenError::Transient { status: 200 })
        );
        let shown = format!(
            "{:?}",
            tokens_from_response(200, br#"{"access_token":"very-secret"}"#)
        );
        assert!(!shown.contains("very-secret"), "{shown}");
    }
}
