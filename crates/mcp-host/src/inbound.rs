//! The host's HTTP client meets `mcp-oauth`'s protected-resource side: an MCP server (the
//! gateway) that accepts OAuth access tokens from one issuer checks each request's token here
//! ([`InboundAuth::authenticate`]). `mcp-oauth` decides; this module fetches the issuer's key
//! set, through the same request-forgery rules as every OAuth request of the host (`reach.rs`:
//! a fetcher whose address policy follows the class of the issuer's own address, never
//! following redirects), and keeps it ([`KeyCache`]: refetched when old or when a token names a
//! key it lacks, never twice within 30 s, so a flood of made-up key ids costs the issuer one
//! request per interval).
//!
//! A resource may also take tokens it cannot read (opaque ones): with [`Introspection`]
//! settings, a token that is not a JWT (or every token) is asked about at the issuer's RFC 7662
//! introspection endpoint, through the same fetcher, and a positive answer is kept a short
//! while ([`IntrospectionCache`]), a refusal a shorter while ([`RefusedCache`]), so that a
//! client repeating a bad token costs the issuer one request per interval. An endpoint that
//! cannot answer makes the request a 503, not a 401: the token may be good, and a 401 would
//! send the client to log in again for nothing. So does a token that would be one request too
//! many in flight ([`Introspection::max_in_flight`]): a flood of made-up tokens, each new,
//! costs the issuer that many requests at a time, and the flood's senders wait (503 with
//! `Retry-After`) rather than the issuer or the gateway's connections. Requests with a token
//! being asked about already wait for that answer, so a client's burst with a new token costs
//! one question and one place under the cap.
//!
//! What it never does: pass a client's token anywhere but to its issuer's introspection
//! endpoint. The token is read, checked and dropped;
//! an upstream server gets the host's own credentials for it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{SystemTime, UNIX_EPOCH};

use mcp_oauth::discovery::{authorization_server_metadata_urls, canonical_resource};
use mcp_oauth::resource::{
    self, IntrospectionAnswer, IntrospectionCache, JwkSet, KeyCache, RefusedCache, Rejection,
    ResourceMetadata, TokenPolicy,
};
use mcp_oauth::{HttpClient, HttpRequest, Url};
use serde::Deserialize;

use crate::reach::{PolicyFetch, ServerPlace};

// The public interface of inbound authentication, so that a consumer (the gateway) does not
// depend on mcp-oauth itself.
pub use mcp_http::AddressClass;
pub use mcp_oauth::ClientSecret;
pub use mcp_oauth::resource::{Algorithm, AlgorithmError, Caller};

/// What tokens the resource accepts and how it describes itself.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct InboundSettings {
    /// The issuer whose tokens are accepted (`iss`, byte for byte).
    pub issuer: String,
    /// What each token's `aud` must contain.
    pub audience: String,
    /// The resource's public URL: its RFC 9728 `resource`, and the base of its metadata URL.
    pub resource: Url,
    /// The issuer's key set; `None` finds it in the issuer's metadata.
    pub jwks_uri: Option<Url>,
    /// Scopes every request needs (403 without).
    pub required_scopes: Vec<String>,
    /// Scopes the metadata document offers (`required_scopes` when empty).
    pub scopes_supported: Vec<String>,
    /// Signature algorithms accepted.
    pub algorithms: Vec<Algorithm>,
    /// Clock skew allowed, in seconds.
    pub leeway_secs: u64,
    /// Takes the issuer to be at an address of this class instead of looking (as
    /// [`OAuthContext::server_class`](crate::oauth::OAuthContext::server_class) does for
    /// servers): what its key set's URL may reach follows from it.
    pub issuer_class: Option<AddressClass>,
    /// Where tokens the resource cannot read are asked about (RFC 7662); `None` takes JWTs
    /// only.
    pub introspection: Option<Introspection>,
}

/// The issuer's introspection endpoint, and how the resource authenticates to it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Introspection {
    /// The endpoint (RFC 7662 §2), fetched under the same rules as the key set.
    pub endpoint: Url,
    /// The resource's client id at the issuer.
    pub client_id: String,
    /// Its secret, sent in HTTP Basic.
    pub client_secret: ClientSecret,
    /// Whether JWTs are asked about too (default: only tokens that are not a JWT, so that a
    /// signed token costs no request).
    pub every_token: bool,
    /// How long a positive answer is kept, in seconds (never past the token's `exp`; 0
    /// keeps none).
    pub cache_secs: u64,
    /// How long a refusal (an inactive or unfit token) is kept, in seconds (0 keeps none).
    pub refused_cache_secs: u64,
    /// How many introspection requests may be awaited at once; a token that would make one
    /// more is answered 503 without asking (0 is taken as 1).
    pub max_in_flight: usize,
}

impl Introspection {
    /// Tokens that are not JWTs asked about at `endpoint` as `client_id`, answers kept 60 s,
    /// refusals 10 s, 16 requests in flight at most.
    pub fn new(endpoint: Url, client_id: impl Into<String>, client_secret: ClientSecret) -> Self {
        Self {
            endpoint,
            client_id: client_id.into(),
            client_secret,
            every_token: false,
            cache_secs: 60,
            refused_cache_secs: 10,
            max_in_flight: 16,
        }
    }
}

impl InboundSettings {
    /// Tokens of `issuer` for `resource` (its audience too), no scope required, every
    /// algorithm verified, 60 s of leeway, keys from the issuer's metadata.
    pub fn new(issuer: impl Into<String>, resource: Url) -> Self {
        Self {
            issuer: issuer.into(),
            audience: canonical_resource(&resource),
            resource,
            jwks_uri: None,
            required_scopes: Vec::new(),
            scopes_supported: Vec::new(),
            algorithms: Algorithm::ALL.to_vec(),
            leeway_secs: 60,
            issuer_class: None,
            introspection: None,
        }
    }
}

/// Why a request is refused, ready for the HTTP answer.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Refusal {
    /// 401 (no token, or an invalid one), 403 (insufficient scope) or 503 (the introspection
    /// endpoint did not answer).
    pub status: u16,
    /// The `WWW-Authenticate` value.
    pub challenge: String,
    /// Why, for the log and the body: never the token or its claims.
    pub reason: String,
}

/// Checks the access tokens of requests to one protected resource.
pub struct InboundAuth {
    settings: InboundSettings,
    policy: TokenPolicy,
    metadata_url: String,
    document: Vec<u8>,
    client: PolicyFetch,
    cache: Mutex<KeyCache>,
    /// Held while the key set is fetched, so that requests waiting for keys share one fetch.
    fetching: tokio::sync::Mutex<()>,
    /// The key set's URL, once known.
    jwks_uri: Mutex<Option<Url>>,
    /// Positive introspection answers.
    introspected: Mutex<IntrospectionCache>,
    /// Refusals of introspected tokens.
    refused: Mutex<RefusedCache>,
    /// One permit per introspection request in flight.
    asking: tokio::sync::Semaphore,
    /// The permits `asking` started with, for the refusal's reason.
    max_in_flight: usize,
    /// The questions being asked, by the token's SHA-256.
    pending: Pending,
}

/// What the requests waiting on one question share: its outcome, once in.
type Outcome = Arc<tokio::sync::OnceCell<Result<Caller, Refusal>>>;

/// The questions in flight, by the token's SHA-256 (never the token).
type Pending = Mutex<HashMap<[u8; 32], Outcome>>;

/// One request's part in a question: the entry leaves the map once the answer is in or the
/// last request waiting on it is gone (a cancelled request leaves nothing behind).
struct Flight<'a> {
    pending: &'a Pending,
    key: [u8; 32],
    cell: Outcome,
}

impl<'a> Flight<'a> {
    fn join(pending: &'a Pending, token: &str) -> Self {
        let digest = ring::digest::digest(&ring::digest::SHA256, token.as_bytes());
        let mut key = [0; 32];
        key.copy_from_slice(digest.as_ref());
        let cell = pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(key)
            .or_default()
            .clone();
        Self { pending, key, cell }
    }
}

impl Drop for Flight<'_> {
    fn drop(&mut self) {
        let mut pending = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
        let ours = pending
            .get(&self.key)
            .is_some_and(|c| Arc::ptr_eq(c, &self.cell));
        // The map's and this one's: no other request waits on it.
        if ours && (self.cell.initialized() || Arc::strong_count(&self.cell) <= 2) {
            pending.remove(&self.key);
        }
    }
}

impl std::fmt::Debug for InboundAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InboundAuth")
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// The issuer's metadata fields read here.
#[derive(Deserialize)]
struct IssuerMetadata {
    issuer: String,
    #[serde(default)]
    jwks_uri: Option<String>,
}

impl InboundAuth {
    /// A checker with `settings`; no request is made until the first token comes.
    pub fn new(settings: InboundSettings) -> Self {
        let mut policy = TokenPolicy::new(settings.issuer.clone(), settings.audience.clone());
        policy.required_scopes = settings.required_scopes.clone();
        policy.algorithms = settings.algorithms.clone();
        policy.leeway_secs = settings.leeway_secs;
        let mut document = ResourceMetadata::new(
            canonical_resource(&settings.resource),
            settings.issuer.clone(),
        );
        document.scopes_supported = if settings.scopes_supported.is_empty() {
            settings.required_scopes.clone()
        } else {
            settings.scopes_supported.clone()
        };
        let issuer = Url::parse(&settings.issuer).unwrap_or_else(|_| settings.resource.clone());
        let place = Arc::new(ServerPlace::new(&issuer, settings.issuer_class));
        let mut introspected = IntrospectionCache::new();
        let mut refused = RefusedCache::new();
        let mut max_in_flight = 1;
        if let Some(i) = &settings.introspection {
            introspected.max_age_secs = i.cache_secs;
            refused.max_age_secs = i.refused_cache_secs;
            max_in_flight = i.max_in_flight.max(1);
        }
        Self {
            introspected: Mutex::new(introspected),
            refused: Mutex::new(refused),
            asking: tokio::sync::Semaphore::new(max_in_flight),
            max_in_flight,
            pending: Mutex::default(),
            metadata_url: resource::metadata_url(&settings.resource),
            document: document.to_json(),
            client: PolicyFetch::new(place),
            cache: Mutex::new(KeyCache::new()),
            fetching: tokio::sync::Mutex::new(()),
            jwks_uri: Mutex::new(settings.jwks_uri.clone()),
            policy,
            settings,
        }
    }

    /// The settings it was made with.
    pub fn settings(&self) -> &InboundSettings {
        &self.settings
    }

    /// Where the RFC 9728 document is, as challenges name it.
    pub fn metadata_url(&self) -> &str {
        &self.metadata_url
    }

    /// The RFC 9728 document (JSON).
    pub fn metadata_document(&self) -> &[u8] {
        &self.document
    }

    /// Checks a request's `Authorization` header value: the caller, or the refusal to answer
    /// with (401 without a valid token, 403 without the required scopes).
    pub async fn authenticate(&self, authorization: Option<&[u8]>) -> Result<Caller, Refusal> {
        let Some(token) = authorization.and_then(bearer_token) else {
            return Err(self.refusal(None));
        };
        if let Some(introspection) = &self.settings.introspection
            && (introspection.every_token || !looks_like_jwt(token))
        {
            return self.introspect(introspection, token).await;
        }
        if self.cache().should_fetch(now_ms(), false) {
            self.refresh(false).await;
        }
        let mut outcome = self.check(token);
        if outcome.as_ref().is_err_and(Rejection::is_unknown_key)
            && self.cache().should_fetch(now_ms(), true)
        {
            self.refresh(true).await;
            outcome = self.check(token);
        }
        outcome.map_err(|r| self.refusal(Some(&r)))
    }

    /// Asks the issuer about `token`, unless a positive answer about it is kept.
    async fn introspect(
        &self,
        introspection: &Introspection,
        token: &str,
    ) -> Result<Caller, Refusal> {
        if token.len() > resource::MAX_TOKEN_BYTES {
            return Err(self.refusal(Some(&Rejection::Malformed("longer than the limit"))));
        }
        let kept = self
            .introspected
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(token, now_ms() / 1000);
        if let Some(caller) = kept {
            return Ok(caller);
        }
        let refused = self
            .refused
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(token, now_ms() / 1000);
        if let Some(rejection) = refused {
            return Err(self.refusal(Some(&rejection)));
        }
        // A token being asked about already waits for that answer: a client's burst of
        // requests with a new token costs one question and one place under the cap.
        let flight = Flight::join(&self.pending, token);
        flight
            .cell
            .get_or_init(|| self.ask_and_judge(introspection, token))
            .await
            .clone()
    }

    /// Asks the issuer about `token` under the cap, judges the answer and keeps it.
    async fn ask_and_judge(
        &self,
        introspection: &Introspection,
        token: &str,
    ) -> Result<Caller, Refusal> {
        // Held until the answer is in: beyond the cap, the request waits for a later try,
        // not for the endpoint.
        let Ok(_permit) = self.asking.try_acquire() else {
            return Err(Refusal {
                status: 503,
                challenge: resource::challenge(
                    &self.metadata_url,
                    &self.settings.required_scopes,
                    None,
                ),
                reason: format!(
                    "the issuer is being asked about {} tokens already, the most at once (maxInFlight)",
                    self.max_in_flight
                ),
            });
        };
        let answer = match self.ask(introspection, token).await {
            Ok(answer) => answer,
            Err(e) => {
                tracing::warn!(
                    target: "mcp_host::inbound",
                    "cannot introspect a token at {} (issuer {}): {e}",
                    shown(&introspection.endpoint),
                    self.settings.issuer
                );
                return Err(Refusal {
                    status: 503,
                    challenge: resource::challenge(
                        &self.metadata_url,
                        &self.settings.required_scopes,
                        None,
                    ),
                    reason: "the issuer's introspection endpoint did not answer".to_owned(),
                });
            }
        };
        let now = now_ms() / 1000;
        let caller = match answer.judge(&self.policy, now) {
            Ok(caller) => caller,
            Err(rejection) => {
                let refusal = self.refusal(Some(&rejection));
                self.refused
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .insert(token, rejection, now);
                return Err(refusal);
            }
        };
        self.introspected
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(token, caller.clone(), now);
        Ok(caller)
    }

    /// One introspection request, whose answer must be 200 with an introspection answer.
    async fn ask(
        &self,
        introspection: &Introspection,
        token: &str,
    ) -> Result<IntrospectionAnswer, String> {
        let request = resource::introspection_request(
            introspection.endpoint.as_str(),
            &introspection.client_id,
            &introspection.client_secret,
            token,
        )
        .map_err(|e| e.to_string())?;
        let response = self.client.send(request).await.map_err(|e| e.to_string())?;
        if response.status() != http::StatusCode::OK {
            return Err(format!("HTTP {}", response.status()));
        }
        IntrospectionAnswer::parse(response.body()).map_err(|e| e.to_string())
    }

    fn cache(&self) -> std::sync::MutexGuard<'_, KeyCache> {
        self.cache.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn check(&self, token: &str) -> Result<Caller, Rejection> {
        let keys = self.cache().keys().cloned().unwrap_or_default();
        resource::validate(token, &self.policy, &keys, now_ms() / 1000)
    }

    fn refusal(&self, rejection: Option<&Rejection>) -> Refusal {
        let scope = &self.settings.required_scopes;
        match rejection {
            None => Refusal {
                status: 401,
                challenge: resource::challenge(&self.metadata_url, scope, None),
                reason: "no bearer token".to_owned(),
            },
            Some(r) => {
                let reason = r.to_string();
                Refusal {
                    status: if r.is_insufficient_scope() { 403 } else { 401 },
                    challenge: resource::challenge(
                        &self.metadata_url,
                        scope,
                        Some((r.error_code(), &reason)),
                    ),
                    reason,
                }
            }
        }
    }

    /// Fetches the key set once for everyone waiting: after the wait, the cache is asked
    /// again, so that requests that queued behind a fetch use its keys instead of fetching.
    async fn refresh(&self, unknown_key: bool) {
        let _one = self.fetching.lock().await;
        let now = now_ms();
        {
            let mut cache = self.cache();
            if !cache.should_fetch(now, unknown_key) {
                return;
            }
            cache.attempted(now, unknown_key);
        }
        match self.fetch_keys().await {
            Ok(keys) => self.cache().fetched(now, keys),
            Err(e) => tracing::warn!(
                target: "mcp_host::inbound",
                "cannot fetch the signing keys of issuer {}: {e}",
                self.settings.issuer
            ),
        }
    }

    async fn fetch_keys(&self) -> Result<JwkSet, String> {
        let jwks_uri = {
            let known = self
                .jwks_uri
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clone();
            match known {
                Some(url) => url,
                None => {
                    let url = self.discover().await?;
                    *self.jwks_uri.lock().unwrap_or_else(PoisonError::into_inner) =
                        Some(url.clone());
                    url
                }
            }
        };
        let body = self.get(&jwks_uri).await?;
        JwkSet::parse(&body).map_err(|e| e.to_string())
    }

    /// The `jwks_uri` of the issuer's metadata: RFC 8414 first, then OpenID Connect, the
    /// first document found whose `issuer` is exactly the configured one.
    async fn discover(&self) -> Result<Url, String> {
        let issuer = Url::parse(&self.settings.issuer)
            .map_err(|e| format!("the issuer is not a URL: {e}"))?;
        let mut last = String::from("no metadata document");
        for url in authorization_server_metadata_urls(&issuer) {
            let body = match self.get(&url).await {
                Ok(body) => body,
                Err(e) => {
                    last = e;
                    continue;
                }
            };
            let Ok(doc) = serde_json::from_slice::<IssuerMetadata>(&body) else {
                last = format!("{}: not authorization server metadata", shown(&url));
                continue;
            };
            if doc.issuer != self.settings.issuer {
                last = format!("{}: states another issuer", shown(&url));
                continue;
            }
            let jwks = doc
                .jwks_uri
                .ok_or_else(|| format!("{}: names no jwks_uri", shown(&url)))?;
            return Url::parse(&jwks).map_err(|e| format!("its jwks_uri is not a URL: {e}"));
        }
        Err(last)
    }

    /// A GET whose answer must be 200 with a body.
    async fn get(&self, url: &Url) -> Result<Vec<u8>, String> {
        let request: HttpRequest = http::Request::get(url.as_str())
            .header(http::header::ACCEPT, "application/json")
            .body(Vec::new())
            .map_err(|e| format!("{}: {e}", shown(url)))?;
        let response = self
            .client
            .send(request)
            .await
            .map_err(|e| format!("{}: {e}", shown(url)))?;
        if response.status() != http::StatusCode::OK {
            return Err(format!("{}: HTTP {}", shown(url), response.status()));
        }
        Ok(response.into_body())
    }
}

/// A URL as messages show it: no query, no user info.
fn shown(url: &Url) -> String {
    format!("{}{}", url.origin().ascii_serialization(), url.path())
}

/// Whether `token` has the shape of a compact JWS (three dot-separated parts): the tokens
/// checked here with the issuer's keys rather than asked about.
fn looks_like_jwt(token: &str) -> bool {
    token.split('.').count() == 3
}

/// The token of a `Bearer` header value (scheme without case, RFC 9110 §11.1).
fn bearer_token(value: &[u8]) -> Option<&str> {
    let value = std::str::from_utf8(value).ok()?;
    let (scheme, rest) = value.split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("bearer") {
        return None;
    }
    let token = rest.trim_matches(' ');
    (!token.is_empty()).then_some(token)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_three_part_token_is_taken_for_a_jwt() {
        assert!(looks_like_jwt("eyJh.eyJi.c2ln"));
        assert!(looks_like_jwt("a.b."));
        for opaque in ["abc", "a.b", "a.b.c.d", "a.b.c.d.e"] {
            assert!(!looks_like_jwt(opaque), "{opaque}");
        }
    }

    #[test]
    fn only_a_bearer_value_gives_a_token() {
        assert_eq!(bearer_token(b"Bearer abc"), Some("abc"));
        assert_eq!(bearer_token(b"bearer  abc "), Some("abc"));
        for bad in [
            &b"Basic abc"[..],
            b"Bearer",
            b"Bearer ",
            b"abc",
            b"",
            b"Bearer \xff",
        ] {
            assert_eq!(bearer_token(bad), None, "{bad:?}");
        }
    }
}
