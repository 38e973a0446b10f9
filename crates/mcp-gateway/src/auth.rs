//! The gateway file's `auth` block: the HTTP gateway as an OAuth 2.1 protected resource (MCP
//! authorization spec, server side; RFC 9728, RFC 8707, RFC 6750). Each request carries an
//! access token from `issuer`, minted for this gateway (its `audience`), which the gateway
//! checks against the issuer's published keys; the token is never passed upstream (each
//! upstream has its own credentials, from the gateway file and the host's OAuth).
//!
//! This module reads and checks the block; the checking of tokens is `mcp-host`'s
//! `inbound` (over `mcp-oauth`'s `resource`), and `mcp-http`'s server asks it through its
//! [`Authenticator`](mcp_http::Authenticator) hook, implemented here.

use std::future::Future;
use std::sync::Arc;

use mcp_host::inbound::{
    Algorithm, Caller, ClientSecret, InboundAuth, InboundSettings, Introspection,
};
use mcp_host::oauth::Url;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `auth`: who may call the gateway over HTTP.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[non_exhaustive]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AuthBlock {
    /// The authorization server whose access tokens are accepted: its issuer identifier,
    /// compared byte for byte with each token's `iss` (`https`, or `http` on loopback).
    pub issuer: String,
    /// What each token's `aud` must contain (RFC 8707): the gateway's resource identifier.
    /// Default: `publicUrl`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audience: Option<String>,
    /// Where the issuer's signing keys are. Default: the `jwks_uri` of its metadata (RFC 8414
    /// `/.well-known/oauth-authorization-server`, then OpenID Connect discovery).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jwks_uri: Option<String>,
    /// Scopes every request's token must carry; a token without one of them is answered 403
    /// `insufficient_scope`, naming them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub required_scopes: Vec<String>,
    /// The scopes the metadata document offers clients (default: `requiredScopes`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scopes_supported: Vec<String>,
    /// The gateway's MCP endpoint as clients reach it (`https://mcp.example.com/mcp`): the
    /// `resource` of its RFC 9728 document, and where that document's URL points. Default:
    /// `http://<the address it listens on>/mcp`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub public_url: Option<String>,
    /// The signature algorithms accepted. Default: RS256, RS384, RS512, PS256, PS384, PS512,
    /// ES256, ES384, EdDSA. `none` and the HMAC algorithms (HS256, ...) are refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub algorithms: Option<Vec<String>>,
    /// How far the issuer's clock and the gateway's may differ, in seconds, for `exp`, `nbf`
    /// and `iat` (default 60).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(max = 300))]
    pub leeway_seconds: Option<u64>,
    /// Tokens the gateway cannot read itself (opaque ones) are asked about at the issuer's
    /// RFC 7662 introspection endpoint; without it, only signed JWTs are accepted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub introspection: Option<IntrospectionBlock>,
}

/// `auth.introspection`: where and as whom the gateway asks about a token.
#[derive(Clone, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[non_exhaustive]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct IntrospectionBlock {
    /// The issuer's introspection endpoint (its metadata's `introspection_endpoint`): `https`,
    /// or `http` on loopback, fetched under the same address rules as its keys.
    pub endpoint: String,
    /// The gateway's client id at the issuer: an introspection endpoint answers only clients
    /// it knows.
    pub client_id: String,
    /// The gateway's client secret, sent in HTTP Basic: `${VAR}` (or `${VAR:-default}`) reads
    /// it from the gateway's environment, so that the file need not hold it.
    pub client_secret: String,
    /// `true` asks about every token, JWTs too; by default only a token that is not a JWT
    /// (three dot-separated parts) is asked about, and a JWT is checked with the issuer's keys.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub all_tokens: Option<bool>,
    /// How long a positive answer is kept, in seconds (default 60, at most 300; never past the
    /// token's `exp`; 0 asks every time): a token revoked at the issuer is still taken that
    /// long.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(max = 300))]
    pub cache_seconds: Option<u64>,
    /// How long a refused token (inactive, or not fit for this gateway) is remembered, in
    /// seconds (default 10, at most 60; 0 asks every time), so that a client repeating a bad
    /// token costs the issuer one request per interval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(max = 60))]
    pub refused_cache_seconds: Option<u64>,
    /// How many introspection requests may be awaited at once (default 16, 1 to 1024): a
    /// token past it is answered 503 with `Retry-After` without asking, so that a flood of
    /// made-up tokens cannot turn the gateway against its issuer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 1024))]
    pub max_in_flight: Option<usize>,
}

// The secret may be written in the file: never shown.
impl std::fmt::Debug for IntrospectionBlock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IntrospectionBlock")
            .field("endpoint", &self.endpoint)
            .field("client_id", &self.client_id)
            .field("client_secret", &"[redacted]")
            .field("all_tokens", &self.all_tokens)
            .field("cache_seconds", &self.cache_seconds)
            .field("refused_cache_seconds", &self.refused_cache_seconds)
            .field("max_in_flight", &self.max_in_flight)
            .finish()
    }
}

impl IntrospectionBlock {
    /// The secret, read from `env` where the file refers to it.
    fn secret(&self, env: &mcp_host::config::Env) -> Result<ClientSecret, String> {
        let value = mcp_host::config::expand_variables(&self.client_secret, env)
            .map_err(|e| format!("auth.introspection.clientSecret: {e}"))?;
        if value.is_empty() {
            return Err("auth.introspection.clientSecret: is empty".to_owned());
        }
        Ok(ClientSecret::new(value))
    }
}

/// An issuer, key set or endpoint URL that may be trusted: absolute, `https` or `http` to a
/// loopback host (keys fetched in clear from elsewhere could be anyone's), without a fragment.
fn trusted_url(field: &str, value: &str, https_only: bool) -> Result<Url, String> {
    let url = Url::parse(value).map_err(|e| format!("auth.{field}: not a URL ({e})"))?;
    let host = url.host_str().unwrap_or_default();
    let loopback = host.eq_ignore_ascii_case("localhost")
        || host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback());
    match url.scheme() {
        "https" => {}
        "http" if loopback || !https_only => {}
        _ => {
            return Err(format!(
                "auth.{field}: must be an https URL (http only on loopback)"
            ));
        }
    }
    if url.fragment().is_some() || url.host_str().is_none_or(str::is_empty) {
        return Err(format!(
            "auth.{field}: must be an absolute URL without a fragment"
        ));
    }
    Ok(url)
}

/// A scope token (RFC 6749 §3.3: visible ASCII but `"` and `\`).
fn scope_ok(scope: &str) -> bool {
    !scope.is_empty()
        && scope
            .bytes()
            .all(|b| b.is_ascii_graphic() && b != b'"' && b != b'\\')
}

impl AuthBlock {
    /// Checks every field, naming the first wrong one: URLs that can be trusted, algorithms
    /// that can be verified safely, scopes that fit in a header.
    pub fn check(&self) -> Result<(), String> {
        trusted_url("issuer", &self.issuer, true)?;
        if let Some(jwks) = &self.jwks_uri {
            trusted_url("jwksUri", jwks, true)?;
        }
        if let Some(url) = &self.public_url {
            let url = trusted_url("publicUrl", url, false)?;
            if url.query().is_some() {
                return Err("auth.publicUrl: must have no query".to_owned());
            }
        }
        if self
            .audience
            .as_deref()
            .is_some_and(|a| a.trim().is_empty())
        {
            return Err("auth.audience: must not be empty".to_owned());
        }
        if let Some(algorithms) = &self.algorithms {
            if algorithms.is_empty() {
                return Err("auth.algorithms: lists no algorithm".to_owned());
            }
            for alg in algorithms {
                Algorithm::parse(alg).map_err(|e| format!("auth.algorithms: {e}"))?;
            }
        }
        for (field, scopes) in [
            ("requiredScopes", &self.required_scopes),
            ("scopesSupported", &self.scopes_supported),
        ] {
            if let Some(bad) = scopes.iter().find(|s| !scope_ok(s)) {
                return Err(format!(
                    "auth.{field}: `{}` is not a scope (visible characters, no spaces or quotes)",
                    bad.escape_debug()
                ));
            }
        }
        if self.leeway_seconds.is_some_and(|s| s > 300) {
            return Err("auth.leewaySeconds: at most 300".to_owned());
        }
        if let Some(introspection) = &self.introspection {
            trusted_url("introspection.endpoint", &introspection.endpoint, true)?;
            if introspection.client_id.trim().is_empty() {
                return Err("auth.introspection.clientId: must not be empty".to_owned());
            }
            if introspection.cache_seconds.is_some_and(|s| s > 300) {
                return Err("auth.introspection.cacheSeconds: at most 300".to_owned());
            }
            if introspection.refused_cache_seconds.is_some_and(|s| s > 60) {
                return Err("auth.introspection.refusedCacheSeconds: at most 60".to_owned());
            }
            if introspection
                .max_in_flight
                .is_some_and(|n| !(1..=1024).contains(&n))
            {
                return Err("auth.introspection.maxInFlight: from 1 to 1024".to_owned());
            }
        }
        Ok(())
    }
}

/// The HTTP server's hook over `mcp-host`'s token checks: who calls, and the RFC 9728
/// document at its well-known paths. What it checks against is replaced when a reload
/// brings another `auth` block ([`Guard::reload`], kept in `Shared::auth`).
pub(crate) struct Guard {
    current: std::sync::RwLock<Arc<Checker>>,
    /// The block the checker was made from, and what a new one is made with.
    block: std::sync::Mutex<AuthBlock>,
    local: std::net::SocketAddr,
    path: String,
}

/// One `auth` block's checks.
struct Checker {
    auth: InboundAuth,
    /// `/.well-known/oauth-protected-resource`, and that followed by the endpoint's path as
    /// served and as public.
    paths: Vec<String>,
}

impl std::fmt::Debug for Guard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Guard")
            .field("paths", &self.checker().paths)
            .finish()
    }
}

const WELL_KNOWN: &str = "/.well-known/oauth-protected-resource";

impl AuthBlock {
    /// The hook for a gateway whose endpoint is `path` on `local` (the public URL's default),
    /// kept in `slot` for reloads; the introspection secret's variables are read from `env`.
    pub(crate) fn guard(
        &self,
        local: std::net::SocketAddr,
        path: &str,
        env: &mcp_host::config::Env,
        slot: &std::sync::OnceLock<Arc<Guard>>,
    ) -> Result<Arc<Guard>, String> {
        let guard = Arc::new(Guard {
            current: std::sync::RwLock::new(Arc::new(self.checker(local, path, env)?)),
            block: std::sync::Mutex::new(self.clone()),
            local,
            path: path.to_owned(),
        });
        // Only one HTTP server per gateway: a second would not be reloaded.
        let _ = slot.set(Arc::clone(&guard));
        Ok(guard)
    }

    /// The checks of this block.
    fn checker(
        &self,
        local: std::net::SocketAddr,
        path: &str,
        env: &mcp_host::config::Env,
    ) -> Result<Checker, String> {
        self.check()?;
        let public = match &self.public_url {
            Some(url) => Url::parse(url).map_err(|e| format!("auth.publicUrl: {e}"))?,
            None => Url::parse(&format!("http://{local}{path}"))
                .map_err(|e| format!("auth.publicUrl: the default is not a URL: {e}"))?,
        };
        let mut settings = InboundSettings::new(self.issuer.clone(), public.clone());
        if let Some(audience) = &self.audience {
            settings.audience = audience.clone();
        }
        if let Some(jwks) = &self.jwks_uri {
            settings.jwks_uri = Some(Url::parse(jwks).map_err(|e| format!("auth.jwksUri: {e}"))?);
        }
        settings.required_scopes = self.required_scopes.clone();
        settings.scopes_supported = self.scopes_supported.clone();
        if let Some(algorithms) = &self.algorithms {
            settings.algorithms = algorithms
                .iter()
                .map(|a| Algorithm::parse(a).map_err(|e| format!("auth.algorithms: {e}")))
                .collect::<Result<_, _>>()?;
        }
        if let Some(leeway) = self.leeway_seconds {
            settings.leeway_secs = leeway;
        }
        if let Some(block) = &self.introspection {
            let endpoint = Url::parse(&block.endpoint)
                .map_err(|e| format!("auth.introspection.endpoint: {e}"))?;
            let mut introspection =
                Introspection::new(endpoint, block.client_id.clone(), block.secret(env)?);
            introspection.every_token = block.all_tokens.unwrap_or(false);
            if let Some(secs) = block.cache_seconds {
                introspection.cache_secs = secs;
            }
            if let Some(secs) = block.refused_cache_seconds {
                introspection.refused_cache_secs = secs;
            }
            if let Some(n) = block.max_in_flight {
                introspection.max_in_flight = n;
            }
            settings.introspection = Some(introspection);
        }
        let auth = InboundAuth::new(settings);
        let mut paths = vec![WELL_KNOWN.to_owned()];
        for p in [path, public.path()] {
            let p = p.trim_end_matches('/');
            if !p.is_empty() {
                paths.push(format!("{WELL_KNOWN}{p}"));
            }
        }
        Ok(Checker { auth, paths })
    }
}

impl Guard {
    fn checker(&self) -> Arc<Checker> {
        Arc::clone(
            &self
                .current
                .read()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        )
    }

    /// Where clients are sent to discover the gateway's authorization.
    pub(crate) fn metadata_url(&self) -> String {
        self.checker().auth.metadata_url().to_owned()
    }

    /// Checks against `block` from now on, if it differs from the one in use: `Ok(true)` when
    /// it was taken, `Ok(false)` when it is the same. A block that cannot be used (a variable
    /// of its secret unset) leaves the one in use in place. The issuer's keys and the kept
    /// introspection answers are fetched anew.
    pub(crate) fn reload(
        &self,
        block: &AuthBlock,
        env: &mcp_host::config::Env,
    ) -> Result<bool, String> {
        let mut current = self
            .block
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if *current == *block {
            return Ok(false);
        }
        let checker = block.checker(self.local, &self.path, env)?;
        *self
            .current
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Arc::new(checker);
        *current = block.clone();
        Ok(true)
    }
}

/// What the caller is keyed by for its sessions: the issuer and the subject (or, for a token
/// without `sub`, the client). A token naming neither never gets here (mcp-oauth refuses it
/// as `Rejection::Anonymous`), so no two callers share an empty name.
fn subject_key(caller: &Caller) -> String {
    let who = caller
        .subject
        .as_deref()
        .map(|s| format!("sub:{s}"))
        .or_else(|| caller.client_id.as_deref().map(|c| format!("client:{c}")))
        .unwrap_or_default();
    format!("{}\n{who}", caller.issuer)
}

impl mcp_http::Authenticator for Guard {
    fn authenticate<'a>(
        &'a self,
        authorization: Option<&'a [u8]>,
    ) -> std::pin::Pin<Box<dyn Future<Output = mcp_http::Verdict> + Send + 'a>> {
        Box::pin(async move {
            let checker = self.checker();
            match checker.auth.authenticate(authorization).await {
                Ok(caller) => mcp_http::Verdict::Allow {
                    subject: subject_key(&caller),
                    caller: mcp_session::Identity::new(caller),
                },
                Err(refusal) => {
                    // A client without a token is the usual first step of discovery, not news.
                    if authorization.is_some() {
                        tracing::info!(target: "mcp_gateway", status = refusal.status, "refused a request: {}", refusal.reason);
                    } else {
                        tracing::debug!(target: "mcp_gateway", "refused a request: {}", refusal.reason);
                    }
                    mcp_http::Verdict::Refuse {
                        status: http::StatusCode::from_u16(refusal.status)
                            .unwrap_or(http::StatusCode::UNAUTHORIZED),
                        challenge: http::HeaderValue::from_str(&refusal.challenge)
                            .unwrap_or_else(|_| http::HeaderValue::from_static("Bearer")),
                        reason: refusal.reason,
                    }
                }
            }
        })
    }

    fn document(&self, path: &str) -> Option<Vec<u8>> {
        let checker = self.checker();
        checker
            .paths
            .iter()
            .any(|p| p == path)
            .then(|| checker.auth.metadata_document().to_vec())
    }
}

/// The caller a request came with, when the HTTP gateway checks tokens.
pub(crate) fn caller_of(context: &mcp_session::RequestContext) -> Option<&Caller> {
    context.caller.as_ref()?.downcast_ref()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_introspection_secret_is_read_from_the_environment_and_never_shown() {
        let block: IntrospectionBlock = serde_json::from_value(serde_json::json!({
            "endpoint": "https://id.example/introspect", "clientId": "gw",
            "clientSecret": "${GW_SECRET}"}))
        .unwrap();
        let env = mcp_host::config::Env::new().with("GW_SECRET", "hunter2-secret");
        let secret = block.secret(&env).expect("read");
        assert_eq!(secret.secret(), "hunter2-secret");
        assert!(!format!("{secret:?} {secret}").contains("hunter2"));
        let e = block
            .secret(&mcp_host::config::Env::new())
            .expect_err("unset");
        assert!(
            e.contains("auth.introspection.clientSecret") && e.contains("GW_SECRET"),
            "{e}"
        );
        // The block as shown (Debug) names the variable, never a value written in the file.
        let written: IntrospectionBlock = serde_json::from_value(serde_json::json!({
            "endpoint": "https://id.example/introspect", "clientId": "gw",
            "clientSecret": "written-in-file"}))
        .unwrap();
        let shown = format!("{written:?}");
        assert!(shown.contains("client_secret"), "{shown}");
        assert!(!shown.contains("written-in-file"), "{shown}");
    }

    fn block(json: serde_json::Value) -> Result<(), String> {
        let block: AuthBlock = serde_json::from_value(json).map_err(|e| e.to_string())?;
        block.check()
    }

    #[test]
    fn a_bad_block_is_refused_naming_the_field() {
        let ok = serde_json::json!({"issuer": "https://id.example", "publicUrl": "https://gw.example/mcp",
            "algorithms": ["RS256", "ES256"], "requiredScopes": ["mcp:tools"],
            "introspection": {"endpoint": "https://id.example/introspect", "clientId": "gw",
                "clientSecret": "${GW_SECRET}", "allTokens": true, "cacheSeconds": 30}});
        assert_eq!(block(ok), Ok(()));
        assert_eq!(
            block(serde_json::json!({"issuer": "http://127.0.0.1:4000"})),
            Ok(())
        );
        for (json, field) in [
            (
                serde_json::json!({"issuer": "http://id.example"}),
                "auth.issuer: must be an https URL",
            ),
            (
                serde_json::json!({"issuer": "id.example"}),
                "auth.issuer: not a URL",
            ),
            (
                serde_json::json!({"issuer": "https://id.example", "jwksUri": "http://10.0.0.1/jwks"}),
                "auth.jwksUri",
            ),
            (
                serde_json::json!({"issuer": "https://id.example", "algorithms": ["none"]}),
                "auth.algorithms: `none` is never accepted",
            ),
            (
                serde_json::json!({"issuer": "https://id.example", "algorithms": ["HS256"]}),
                "auth.algorithms: `HS256` is an HMAC algorithm",
            ),
            (
                serde_json::json!({"issuer": "https://id.example", "algorithms": []}),
                "auth.algorithms: lists no algorithm",
            ),
            (
                serde_json::json!({"issuer": "https://id.example", "requiredScopes": ["a b"]}),
                "auth.requiredScopes",
            ),
            (
                serde_json::json!({"issuer": "https://id.example", "publicUrl": "https://gw.example/mcp?x=1"}),
                "auth.publicUrl",
            ),
            (
                serde_json::json!({"issuer": "https://id.example", "audience": " "}),
                "auth.audience",
            ),
            (
                serde_json::json!({"issuer": "https://id.example", "leewaySeconds": 3600}),
                "auth.leewaySeconds",
            ),
            (
                serde_json::json!({"issuer": "https://id.example", "isuser": "x"}),
                "unknown field `isuser`",
            ),
            (
                serde_json::json!({"issuer": "https://id.example", "introspection":
                    {"endpoint": "http://id.example/introspect", "clientId": "gw", "clientSecret": "s"}}),
                "auth.introspection.endpoint: must be an https URL",
            ),
            (
                serde_json::json!({"issuer": "https://id.example", "introspection":
                    {"endpoint": "https://id.example/introspect", "clientId": " ", "clientSecret": "s"}}),
                "auth.introspection.clientId",
            ),
            (
                serde_json::json!({"issuer": "https://id.example", "introspection":
                    {"endpoint": "https://id.example/introspect", "clientId": "gw", "clientSecret": "s", "refusedCacheSeconds": 61}}),
                "auth.introspection.refusedCacheSeconds: at most 60",
            ),
            (
                serde_json::json!({"issuer": "https://id.example", "introspection":
                    {"endpoint": "https://id.example/introspect", "clientId": "gw", "clientSecret": "s", "maxInFlight": 0}}),
                "auth.introspection.maxInFlight: from 1 to 1024",
            ),
            (
                serde_json::json!({"issuer": "https://id.example", "introspection":
                    {"endpoint": "https://id.example/introspect", "clientId": "gw", "clientSecret": "s", "cacheSeconds": 3600}}),
                "auth.introspection.cacheSeconds",
            ),
            (
                serde_json::json!({"issuer": "https://id.example", "introspection":
                    {"endpoint": "https://id.example/introspect", "clientId": "gw"}}),
                "missing field `clientSecret`",
            ),
        ] {
            let e = block(json.clone()).expect_err("refused");
            assert!(e.contains(field), "{json}: {e}");
        }
    }
}
