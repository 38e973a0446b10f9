//! The driver: one [`Authorizer`] per protected MCP server walks the whole OAuth flow over the
//! caller's [`HttpClient`], [`UserAgent`], [`Randomness`] and [`Clock`]: discovery in the spec's
//! order, client identity, PKCE, the browser round trip, tokens, refresh ahead of expiry, 401
//! and 403 challenges with step-up and a retry limit, and the `client_credentials` extension.
//! This file is long because it is the one driver of the whole flow, and its steps share one state
//! (discovery results, client identity, tokens, step-up attempts); the I/O-free steps are already
//! modules of their own (`flow`, `device`, `discovery` and others).
//!
//! The host keeps the tokens on disk: it loads them with [`Authorizer::set_tokens`], and after
//! every call checks [`Authorizer::take_changed`] and writes [`Authorizer::tokens`] back.
//!
//! ```text
//!   request ──► authorization_header() ──► 2xx ──► request_succeeded()
//!                    ▲                  └─► 401/403 ──► handle_challenge(status, values)
//!                    │                                   ├─ Ok(())  retry the request
//!                    └───────────────────────────────────┘  Err(e)  give up, show e
//! ```
//!
//! Where the metadata comes from, in order (SPEC.md §5.2, §5.3, SPEC-2026.md scenarios 20, 21):
//!
//! 1. protected resource metadata (the challenge's `resource_metadata`, then the path-inserted
//!    and the root well-known URL); its `resource` must stand for the server, or everything
//!    stops before any authorization request; then the metadata of its authorization servers in
//!    RFC 8414 / OpenID Connect order, with the `issuer` checked;
//! 2. without protected resource metadata (2025-03-26 servers): authorization server metadata
//!    at the MCP server's origin;
//! 3. with neither: the configured `authorization_url` and `token_url`, if both are set;
//! 4. with nothing configured either, and only when the server's 401 carried a `Bearer`
//!    challenge (it says it speaks OAuth): the 2025-03-26 default endpoints `/authorize`,
//!    `/token` and `/register` on the server's origin, with PKCE S256 sent although nothing
//!    advertises it. If registration there fails, or there was no `Bearer` challenge, the
//!    error ([`AuthError::NoMetadata`]) suggests a static `Authorization` header instead.
//!
//! Configured endpoints replace discovered ones field by field.

use std::fmt;
use std::sync::Arc;

use url::Url;

use crate::challenge::BearerChallenge;
use crate::device;
use crate::discovery::{self, AuthorizationServerMetadata, ProtectedResourceMetadata};
use crate::dpop::{self, Credentials, DpopKey, Prover};
use crate::error::{AuthError, Error, SeamError, cut_short, shown, shown_url};
use crate::flow::{self, ClientAuth, Grant, TokenError};
use crate::http::{
    ClientAssertionSigner, Clock, DeviceUserAgent, DpopSigner, HttpClient, HttpRequest,
    HttpResponse, Randomness, TransportError, UserAgent,
};
use crate::pkce::{Pkce, state_from_random};
use crate::preflight;
use crate::registration::{self, ApplicationType, Identity};
use crate::secret::{ClientSecret, JwtAssertion};
use crate::store::{ClientRegistration, ServerTokens};

/// Which grant obtains tokens for a server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum GrantType {
    /// The authorization-code grant with PKCE: a user in a browser.
    #[default]
    AuthorizationCode,
    /// The `client_credentials` grant (MCP extension `oauth-client-credentials`): a machine
    /// client with a secret (HTTP Basic) or a key (`private_key_jwt` through the signer).
    ClientCredentials,
    /// The RFC 7523 `jwt-bearer` grant with a JWT the workload was given
    /// ([`Settings::assertion`]; MCP extension `auth/wif`, workload identity federation).
    JwtBearer,
    /// Enterprise-managed authorization (SEP-990): the user's ID token is exchanged at the
    /// identity provider ([`Settings::identity_provider`], RFC 8693) for an identity assertion
    /// addressed to this server's authorization server, which the `jwt-bearer` grant then
    /// trades for tokens. No browser.
    IdentityAssertion,
}

impl GrantType {
    /// Whether the grant runs without a person: the host renews by granting again.
    fn is_machine(self) -> bool {
        !matches!(self, Self::AuthorizationCode)
    }
}

/// The identity provider of enterprise-managed authorization ([`GrantType::IdentityAssertion`]).
#[derive(Clone)]
#[non_exhaustive]
pub struct IdentityProvider {
    /// Its token endpoint, where the ID token is exchanged.
    pub token_endpoint: String,
    /// The host's client id at the identity provider.
    pub client_id: String,
    /// The user's ID token from the identity provider's sign-in. A secret.
    pub id_token: JwtAssertion,
}

/// The token endpoint without userinfo or query (either may hold a key), the ID token
/// redacted by its own type.
impl fmt::Debug for IdentityProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let endpoint = Url::parse(&self.token_endpoint)
            .map_or_else(|_| "[not a URL]".to_owned(), |u| shown(&u));
        f.debug_struct("IdentityProvider")
            .field("token_endpoint", &endpoint)
            .field("client_id", &self.client_id)
            .field("id_token", &self.id_token)
            .finish()
    }
}

impl IdentityProvider {
    /// An identity provider with the host's client id there and the user's ID token.
    pub fn new(token_endpoint: String, client_id: String, id_token: JwtAssertion) -> Self {
        Self {
            token_endpoint,
            client_id,
            id_token,
        }
    }
}

/// What the host's configuration says about one protected server. Start from
/// [`Settings::new`] and set the public fields that the configuration names.
///
/// `Debug` shows the configured URLs as errors do, without userinfo or query (either may
/// carry a key), and the secrets redacted.
#[derive(Clone)]
#[non_exhaustive]
pub struct Settings {
    /// The MCP endpoint, e.g. `https://mcp.example.com/mcp`.
    pub server_url: Url,
    /// Replaces the discovered `authorization_endpoint`.
    pub authorization_url: Option<String>,
    /// Replaces the discovered `token_endpoint`.
    pub token_url: Option<String>,
    /// Replaces the discovered `registration_endpoint`.
    pub registration_url: Option<String>,
    /// A pre-registered client id: used before any other identity.
    pub client_id: Option<String>,
    /// The `issuer` of the authorization server the pre-registered client belongs to,
    /// compared byte for byte with the one in use. Credentials are bound to one authorization
    /// server (MCP `client-registration.mdx` §Authorization Server Binding): with another one
    /// they are not sent and authorization stops with [`AuthError::ClientIssuerMismatch`].
    /// When `None`, the client is bound to the first authorization server it is used with (or
    /// the one its stored tokens came from).
    pub client_issuer: Option<String>,
    /// Its secret, for a confidential client.
    pub client_secret: Option<ClientSecret>,
    /// The host's Client ID Metadata Document URL (`https` with a path), used as `client_id`
    /// where the authorization server says `client_id_metadata_document_supported`.
    pub client_metadata_url: Option<String>,
    /// The scope to ask for when a challenge names none (before the resource's
    /// `scopes_supported`).
    pub scope: Option<String>,
    /// `client_name` for dynamic registration.
    pub client_name: String,
    /// The `application_type` dynamic registration states; `None` (the default) takes it
    /// from the user agent's redirect URI ([`ApplicationType::for_redirect_uris`]: `native`
    /// for loopback and custom schemes, `web` for a public `https` page).
    pub application_type: Option<ApplicationType>,
    /// Authorization attempts allowed between two successful requests (step-up loops end
    /// here; conformance `auth/scope-retry-limit`). Default 3.
    pub max_authorization_attempts: u32,
    /// Refresh when the access token expires within this many milliseconds. Default 60 s.
    pub refresh_margin_ms: u64,
    /// Which grant to use.
    pub grant: GrantType,
    /// Whether the 2025-03-26 default endpoints may be tried (see the module doc). Default on.
    pub legacy_default_endpoints: bool,
    /// The JWT of the [`GrantType::JwtBearer`] grant. A secret.
    pub assertion: Option<JwtAssertion>,
    /// The identity provider of the [`GrantType::IdentityAssertion`] grant.
    pub identity_provider: Option<IdentityProvider>,
}

impl fmt::Debug for Settings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let endpoint = |u: &Option<String>| {
            u.as_deref()
                .map(|u| Url::parse(u).map_or_else(|_| "[not a URL]".to_owned(), |u| shown(&u)))
        };
        f.debug_struct("Settings")
            .field("server_url", &shown(&self.server_url))
            .field("authorization_url", &endpoint(&self.authorization_url))
            .field("token_url", &endpoint(&self.token_url))
            .field("registration_url", &endpoint(&self.registration_url))
            .field("client_id", &self.client_id)
            .field("client_issuer", &self.client_issuer)
            .field("client_secret", &self.client_secret)
            .field("scope", &self.scope)
            .field("grant", &self.grant)
            .field("assertion", &self.assertion)
            .field("identity_provider", &self.identity_provider.is_some())
            .finish_non_exhaustive()
    }
}

impl Settings {
    /// Settings for `server_url` with nothing configured: discovery, CIMD or DCR, at most 3
    /// attempts, refresh 60 s ahead, the authorization-code grant.
    pub fn new(server_url: Url) -> Self {
        Self {
            server_url,
            authorization_url: None,
            token_url: None,
            registration_url: None,
            client_id: None,
            client_issuer: None,
            client_secret: None,
            client_metadata_url: None,
            scope: None,
            client_name: "mcp-host".to_owned(),
            application_type: None,
            max_authorization_attempts: 3,
            refresh_margin_ms: 60_000,
            grant: GrantType::AuthorizationCode,
            legacy_default_endpoints: true,
            assertion: None,
            identity_provider: None,
        }
    }
}

/// The caller's implementations of the seams, shared by all the servers' authorizers.
#[derive(Clone)]
pub struct Services {
    http: Arc<dyn HttpClient>,
    random: Arc<dyn Randomness>,
    clock: Arc<dyn Clock>,
    user_agent: Option<Arc<dyn UserAgent>>,
    signer: Option<Arc<dyn ClientAssertionSigner>>,
    dpop: Option<Arc<dyn DpopSigner>>,
    device: Option<Arc<dyn DeviceUserAgent>>,
}

impl Services {
    /// The seams every flow needs. Without a user agent, only refresh and `client_credentials`
    /// work; an authorization-code login fails with [`AuthError::UserAgent`].
    pub fn new(
        http: Arc<dyn HttpClient>,
        random: Arc<dyn Randomness>,
        clock: Arc<dyn Clock>,
    ) -> Self {
        Self {
            http,
            random,
            clock,
            user_agent: None,
            signer: None,
            dpop: None,
            device: None,
        }
    }

    /// Adds the browser, for authorization-code logins.
    #[must_use]
    pub fn with_user_agent(mut self, user_agent: Arc<dyn UserAgent>) -> Self {
        self.user_agent = Some(user_agent);
        self
    }

    /// Adds the device flow (RFC 8628) for a person's login: used wherever the authorization
    /// server offers it, the browser (if any) elsewhere. Without a browser, a server that
    /// does not offer it fails the login with [`device::DeviceError::NotOffered`].
    #[must_use]
    pub fn with_device_agent(mut self, agent: Arc<dyn DeviceUserAgent>) -> Self {
        self.device = Some(agent);
        self
    }

    /// Adds a signer for `private_key_jwt` client assertions (`client_credentials` without a
    /// secret).
    #[must_use]
    pub fn with_signer(mut self, signer: Arc<dyn ClientAssertionSigner>) -> Self {
        self.signer = Some(signer);
        self
    }

    /// Adds DPoP (RFC 9449): tokens are asked for bound to a new key whenever the
    /// authorization server accepts ES256 proofs (see [`dpop`](crate::dpop)). Without it, every
    /// token is a bearer token.
    #[must_use]
    pub fn with_dpop(mut self, signer: Arc<dyn DpopSigner>) -> Self {
        self.dpop = Some(signer);
        self
    }

    /// What makes DPoP proofs, if DPoP is on.
    fn prover(&self) -> Option<Prover> {
        Some(Prover {
            signer: self.dpop.clone()?,
            clock: Arc::clone(&self.clock),
            random: Arc::clone(&self.random),
        })
    }
}

impl fmt::Debug for Services {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Services")
            .field("user_agent", &self.user_agent.is_some())
            .field("signer", &self.signer.is_some())
            .field("dpop", &self.dpop.is_some())
            .field("device", &self.device.is_some())
            .finish_non_exhaustive()
    }
}

/// Where the metadata in use came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum MetadataSource {
    /// Protected resource metadata, then its authorization server's metadata.
    ProtectedResource,
    /// 2025-03-26: authorization server metadata at the MCP server's origin.
    ServerOrigin,
    /// The configured `authorization_url` and `token_url`.
    Configured,
    /// 2025-03-26: the default `/authorize`, `/token`, `/register` on the server's origin.
    DefaultEndpoints,
}

#[derive(Debug, Clone)]
struct Discovered {
    meta: AuthorizationServerMetadata,
    /// RFC 8707 `resource`: the protected resource metadata's `resource`, byte for byte, or
    /// the server's canonical URI.
    resource: String,
    resource_scopes: Option<Vec<String>>,
    /// RFC 9728 `dpop_bound_access_tokens_required`.
    dpop_required: bool,
    /// Whether the resource said it takes DPoP-bound tokens: a `DPoP` challenge (RFC 9449
    /// §7.1) or DPoP fields in its metadata (RFC 9728 §2). A resource that says nothing gets
    /// `Bearer` tokens even from an authorization server that offers DPoP: such a resource
    /// (the TypeScript SDK's bearer middleware, say) refuses `Authorization: DPoP`.
    resource_takes_dpop: bool,
    source: MetadataSource,
}

#[derive(Debug, Clone)]
struct Client {
    client_id: String,
    secret: Option<ClientSecret>,
    /// The token endpoint authentication method registration settled on.
    method: Option<String>,
    issuer: String,
    /// Dynamically registered: its secret goes to the store with the tokens.
    registered: bool,
}

impl Client {
    /// The client stored with `tokens` (a dynamic registration kept with them), as a client
    /// of `issuer`; the caller has checked that the tokens are that issuer's.
    fn stored(tokens: &ServerTokens, issuer: &str) -> Option<Self> {
        Some(Self {
            client_id: tokens.client_id.clone()?,
            secret: tokens.client_secret.clone(),
            method: tokens.token_endpoint_auth_method.clone(),
            issuer: issuer.to_owned(),
            registered: true,
        })
    }

    /// A registration kept for `issuer`.
    fn registered(registration: &ClientRegistration, issuer: &str) -> Self {
        Self {
            client_id: registration.client_id.clone(),
            secret: registration.client_secret.clone(),
            method: registration.token_endpoint_auth_method.clone(),
            issuer: issuer.to_owned(),
            registered: true,
        }
    }
}

/// Drives OAuth for one protected MCP server: see the module doc for the flow.
///
/// Methods take `&mut self`; a host sharing one server between tasks wraps it in an async
/// mutex, so that one challenge leads to one login.
///
/// # Cancel safety
///
/// Dropping a future in the middle leaves the authorizer usable: tokens are replaced only
/// once a token answer has been read whole.
pub struct Authorizer {
    settings: Settings,
    services: Services,
    discovered: Option<Discovered>,
    client: Option<Client>,
    tokens: Option<ServerTokens>,
    changed: bool,
    attempts: u32,
    refreshed_in_chain: bool,
    requested_scope: Option<String>,
    /// The authorization server's last DPoP nonce (RFC 9449 §8), by the origin it came from.
    as_nonce: Option<(String, String)>,
    /// Dynamic registrations by the `issuer` of their authorization server: loaded from the
    /// store and made here.
    registrations: std::collections::BTreeMap<String, ClientRegistration>,
    /// The issuers registered at since the host last took them, for the store.
    registered_since: Vec<String>,
    /// The issuer the pre-registered client was first used with, when the settings name none.
    pre_registered_issuer: Option<String>,
}

impl fmt::Debug for Authorizer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Authorizer")
            .field("server", &shown(&self.settings.server_url))
            .field("source", &self.discovered.as_ref().map(|d| d.source))
            .field("tokens", &self.tokens)
            .field("attempts", &self.attempts)
            .finish_non_exhaustive()
    }
}

impl Authorizer {
    /// An authorizer with no tokens yet.
    pub fn new(settings: Settings, services: Services) -> Self {
        Self {
            settings,
            services,
            discovered: None,
            client: None,
            tokens: None,
            changed: false,
            attempts: 0,
            refreshed_in_chain: false,
            requested_scope: None,
            as_nonce: None,
            registrations: std::collections::BTreeMap::new(),
            registered_since: Vec::new(),
            pre_registered_issuer: None,
        }
    }

    /// The settings it was made with.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// Loads tokens from the store (or clears them with `None`). Does not count as a change.
    ///
    /// DPoP tokens whose key is missing (or with no [`DpopSigner`] to prove it) are dropped:
    /// neither they nor their refresh token can be used, and the next 401 authorizes anew.
    pub fn set_tokens(&mut self, tokens: Option<ServerTokens>) {
        let usable = |t: &ServerTokens| match &t.dpop_key {
            Some(_) => self.services.dpop.is_some(),
            None => !t.is_dpop(),
        };
        let tokens = tokens.filter(usable);
        self.requested_scope = tokens.as_ref().and_then(|t| t.scope.clone());
        // Tokens issued to the configured client say which authorization server it belongs
        // to, when the settings do not.
        if let Some(t) = &tokens
            && t.client_id.is_some()
            && t.client_id == self.settings.client_id
            && self.pre_registered_issuer.is_none()
        {
            self.pre_registered_issuer.clone_from(&t.issuer);
        }
        self.tokens = tokens;
    }

    /// The tokens to persist: `None` means the store entry for this server must be removed.
    pub fn tokens(&self) -> Option<&ServerTokens> {
        self.tokens.as_ref()
    }

    /// Loads the dynamic registrations the store keeps, by the `issuer` of their
    /// authorization server (the file's `clients`). A registration is only ever used with the
    /// authorization server whose metadata states exactly that issuer. Registrations made here
    /// and not yet taken ([`take_registrations`](Self::take_registrations)) are kept.
    pub fn set_registrations(
        &mut self,
        registrations: std::collections::BTreeMap<String, ClientRegistration>,
    ) {
        let pending: Vec<(String, ClientRegistration)> = self
            .registered_since
            .iter()
            .filter_map(|i| Some((i.clone(), self.registrations.get(i)?.clone())))
            .collect();
        self.registrations = registrations;
        self.registrations.extend(pending);
    }

    /// The registrations made since the last call, by issuer: the host adds them to its store
    /// (they serve every server that uses the same authorization server). Check after every
    /// call that may log in, whether or not [`take_changed`](Self::take_changed) says so: a
    /// registration outlives a login that failed after it.
    pub fn take_registrations(&mut self) -> Vec<(String, ClientRegistration)> {
        std::mem::take(&mut self.registered_since)
            .into_iter()
            .filter_map(|i| {
                let registration = self.registrations.get(&i)?.clone();
                Some((i, registration))
            })
            .collect()
    }

    /// Whether the tokens changed since the last call (a login, a refresh, tokens forgotten):
    /// the host writes [`Authorizer::tokens`] to its store when this says `true`.
    pub fn take_changed(&mut self) -> bool {
        std::mem::take(&mut self.changed)
    }

    /// The `Authorization` value for the next request (`Bearer …`, or `DPoP …` for a bound
    /// token), marked sensitive, if there is an access token. Send it on every request, even
    /// within one session; a DPoP token also needs its proof: use
    /// [`credentials`](Self::credentials).
    pub fn authorization_header(&self) -> Option<http::HeaderValue> {
        self.credentials()?.authorization()
    }

    /// What to present to the MCP server, if there is an access token: a snapshot that makes
    /// each request's headers (with a fresh DPoP proof when the token is bound). Take it
    /// again after every change.
    pub fn credentials(&self) -> Option<Credentials> {
        let tokens = self.tokens.as_ref()?;
        let bound = if tokens.is_dpop() {
            Some((tokens.dpop_key.clone()?, self.services.prover()?))
        } else {
            None
        };
        Some(Credentials::new(tokens.access_token.clone(), bound))
    }

    /// The authorization server metadata in use, once discovered.
    pub fn metadata(&self) -> Option<&AuthorizationServerMetadata> {
        self.discovered.as_ref().map(|d| &d.meta)
    }

    /// Where that metadata came from.
    pub fn metadata_source(&self) -> Option<MetadataSource> {
        self.discovered.as_ref().map(|d| d.source)
    }

    /// The RFC 8707 `resource` sent in authorization and token requests, once discovered.
    pub fn resource(&self) -> Option<&str> {
        self.discovered.as_ref().map(|d| d.resource.as_str())
    }

    /// The client id in use with the current authorization server, once known.
    pub fn client_id(&self) -> Option<&str> {
        self.client.as_ref().map(|c| c.client_id.as_str())
    }

    /// Whether the access token expires within the refresh margin (by the caller's clock),
    /// or half its lifetime has passed when it lives shorter than the margin.
    pub fn needs_refresh(&self) -> bool {
        let now = self.services.clock.now_ms();
        self.tokens
            .as_ref()
            .is_some_and(|t| t.needs_refresh(now, self.settings.refresh_margin_ms))
    }

    /// When a host that stays up should call [`refresh_if_needed`](Self::refresh_if_needed)
    /// (Unix milliseconds): the refresh margin before the access token expires, but not
    /// before half its lifetime has passed ([`ServerTokens::refresh_at_ms`]), so that each
    /// token is refreshed once however short it lives. `None` when there is nothing to do
    /// ahead of time: no tokens, a token without `expires_in`, or no way to renew it without
    /// a person (no refresh token).
    pub fn refresh_due_ms(&self) -> Option<u64> {
        let tokens = self.tokens.as_ref()?;
        if !self.settings.grant.is_machine() && tokens.refresh_token.is_none() {
            return None;
        }
        tokens.refresh_at_ms(self.settings.refresh_margin_ms)
    }

    /// Tells the authorizer that a request with its token succeeded: the challenge chain is
    /// over, so the attempt count starts again from zero.
    pub fn request_succeeded(&mut self) {
        self.attempts = 0;
        self.refreshed_in_chain = false;
    }

    /// Drops the tokens (a logout); the host persists the removal.
    pub fn forget_tokens(&mut self) {
        if self.tokens.take().is_some() {
            self.changed = true;
        }
    }

    /// Before a request: refreshes the access token if it expires within the margin (with the
    /// refresh token, or a new `client_credentials` grant). Returns whether tokens changed.
    ///
    /// An error is not fatal to the request: send it anyway, and a 401 goes through
    /// [`Authorizer::handle_challenge`]. After `invalid_grant` the tokens are already gone;
    /// after a transient failure ([`AuthError::is_transient`]) they are kept.
    pub async fn refresh_if_needed(&mut self) -> Result<bool, AuthError> {
        if !self.needs_refresh() {
            return Ok(false);
        }
        if self.settings.grant.is_machine() {
            self.ensure_discovered(None).await?;
            let scope = self
                .requested_scope
                .clone()
                .or_else(|| self.default_scope(None));
            // A renewal ahead of expiry is not an attempt of a challenge chain.
            let attempts = std::mem::take(&mut self.attempts);
            let result = self.grant(scope).await;
            self.attempts = attempts;
            result?;
            return Ok(true);
        }
        if !self.has_refresh_token() {
            return Ok(false);
        }
        if self.discovered.is_none()
            && self.discover(None).await.is_err()
            && !self.discover_from_tokens().await?
        {
            // Without a challenge the metadata may be out of reach (a protected resource
            // metadata URL only a 401 names) and the tokens name no issuer: leave the refresh
            // to the 401.
            return Ok(false);
        }
        match self.refresh_inner().await {
            Ok(()) => Ok(true),
            Err(e) => {
                if is_dead_grant(&e) {
                    self.forget_tokens();
                }
                Err(e)
            }
        }
    }

    /// Logs in now, without waiting for a challenge (`mcp-host auth login`): discovery, then
    /// the configured grant. Resets the attempt count first.
    pub async fn login(&mut self) -> Result<(), AuthError> {
        self.request_succeeded();
        self.discover(None).await?;
        let scope = self.default_scope(None);
        self.grant(scope).await
    }

    /// Handles a 401 or 403 answer, given its raw `WWW-Authenticate` values. `Ok(())` means new
    /// credentials are in place: retry the request with [`Authorizer::authorization_header`].
    /// An `Err` means give up on this request and show the error.
    ///
    /// - 401 with a refresh token (once per chain): refresh; `invalid_grant` forgets the tokens
    ///   and goes on to a full login, a transient failure returns at once and keeps them.
    /// - 401 otherwise: fresh discovery and a full login (the authorization server may have
    ///   moved).
    /// - 403 `insufficient_scope`: a login for the union of the scope asked before and the
    ///   challenged scope (step-up).
    /// - Authorization attempts are capped between two [`Authorizer::request_succeeded`] calls
    ///   ([`Settings::max_authorization_attempts`]).
    pub async fn handle_challenge(
        &mut self,
        status: u16,
        www_authenticate: &[&str],
    ) -> Result<(), AuthError> {
        let challenge = BearerChallenge::find(www_authenticate.iter().copied());
        match status {
            401 => self.on_unauthorized(challenge).await,
            403 => match challenge {
                Some(c) if c.is_insufficient_scope() => self.step_up(c).await,
                other => Err(AuthError::Forbidden {
                    detail: forbidden_detail(other.as_ref()),
                }),
            },
            status => Err(AuthError::NotAChallenge { status }),
        }
    }

    async fn on_unauthorized(
        &mut self,
        challenge: Option<BearerChallenge>,
    ) -> Result<(), AuthError> {
        // Discovery first, every time: a 401 may mean the resource moved to another
        // authorization server, whose tokens and client must not be mixed with the old one's.
        self.discover(challenge.as_ref()).await?;
        if !self.refreshed_in_chain && self.has_refresh_token() {
            self.refreshed_in_chain = true;
            match self.refresh_inner().await {
                Ok(()) => return Ok(()),
                Err(e) if is_dead_grant(&e) => self.forget_tokens(),
                Err(e) => return Err(e),
            }
        }
        let scope = self.default_scope(challenge.as_ref().and_then(|c| c.scope.as_deref()));
        self.grant(scope).await
    }

    async fn step_up(&mut self, challenge: BearerChallenge) -> Result<(), AuthError> {
        let previous = self
            .requested_scope
            .clone()
            .or_else(|| self.tokens.as_ref().and_then(|t| t.scope.clone()));
        let scope = flow::step_up_scope(
            previous.as_deref(),
            challenge.scope.as_deref().unwrap_or_default(),
        );
        let scope = (!scope.is_empty()).then_some(scope);
        self.ensure_discovered(Some(&challenge)).await?;
        self.grant(scope).await
    }

    /// A new grant of the configured type for `scope`: one authorization attempt.
    /// `offline_access` is asked for only where the authorization server lists it
    /// ([`flow::with_offline_access`]), and added for a user's grant there.
    async fn grant(&mut self, scope: Option<String>) -> Result<(), AuthError> {
        let scope = match &self.discovered {
            Some(d) => flow::with_offline_access(
                scope.as_deref(),
                &d.meta,
                self.settings.grant == GrantType::AuthorizationCode,
            ),
            None => scope,
        };
        match self.settings.grant {
            GrantType::AuthorizationCode => self.authorize(scope).await,
            GrantType::ClientCredentials => self.client_credentials_grant(scope).await,
            GrantType::JwtBearer | GrantType::IdentityAssertion => {
                self.assertion_grant(scope).await
            }
        }
    }

    fn has_refresh_token(&self) -> bool {
        self.tokens
            .as_ref()
            .is_some_and(|t| t.refresh_token.is_some())
    }

    /// The scope of a first login: the challenge's, else the configured one, else all the
    /// resource's `scopes_supported`, else none.
    fn default_scope(&self, challenge_scope: Option<&str>) -> Option<String> {
        let configured = self
            .settings
            .scope
            .as_deref()
            .filter(|s| !s.trim().is_empty());
        let resource_scopes = self
            .discovered
            .as_ref()
            .and_then(|d| d.resource_scopes.as_deref());
        flow::select_scope(challenge_scope.or(configured), resource_scopes)
    }

    async fn ensure_discovered(
        &mut self,
        challenge: Option<&BearerChallenge>,
    ) -> Result<(), AuthError> {
        if self.discovered.is_none() {
            self.discover(challenge).await?;
        }
        Ok(())
    }

    /// Discovery for a refresh ahead of expiry when the server's metadata is out of reach
    /// without a challenge (its protected resource metadata URL only a 401 names): tokens
    /// loaded from a store (a login by another process) name the issuer that issued them and
    /// the resource they were minted for, which is all a refresh needs. Without this, a host
    /// that starts on stored tokens could refresh only after a request with an expired token
    /// was refused. Returns whether the metadata was found.
    async fn discover_from_tokens(&mut self) -> Result<bool, AuthError> {
        let Some((issuer, resource)) = self
            .tokens
            .as_ref()
            .and_then(|t| t.issuer.clone().zip(t.resource.clone()))
        else {
            return Ok(false);
        };
        let Some(mut meta) = self.authorization_server_metadata(&issuer, true).await? else {
            return Ok(false);
        };
        if let Some(url) = &self.settings.token_url {
            meta.token_endpoint.clone_from(url);
        }
        let resource_takes_dpop = self.tokens.as_ref().is_some_and(ServerTokens::is_dpop);
        self.discovered = Some(Discovered {
            resource,
            dpop_required: false,
            resource_takes_dpop,
            resource_scopes: None,
            meta,
            source: MetadataSource::ProtectedResource,
        });
        Ok(true)
    }

    /// Discovery in the spec's order (module doc). Replaces what was discovered before, and
    /// forgets a registered client whose authorization server is no longer the one in use.
    async fn discover(&mut self, challenge: Option<&BearerChallenge>) -> Result<(), AuthError> {
        let server = self.settings.server_url.clone();
        let from_challenge = challenge.and_then(|c| c.resource_metadata.as_deref());
        let mut prm = None;
        for url in discovery::protected_resource_metadata_urls(&server, from_challenge) {
            let answer = self.get("protected resource metadata", &url).await?;
            if !answer.status().is_success() {
                continue;
            }
            match ProtectedResourceMetadata::parse(answer.body(), &server) {
                Ok(doc) => {
                    prm = Some(doc);
                    break;
                }
                Err(e @ Error::ResourceMismatch { .. }) => return Err(e.into()),
                Err(_) => continue,
            }
        }
        let origin = server.origin().ascii_serialization();
        let (issuers, source) = match &prm {
            Some(doc) => (
                doc.authorization_servers.clone(),
                MetadataSource::ProtectedResource,
            ),
            None => (vec![origin.clone()], MetadataSource::ServerOrigin),
        };
        let mut found = None;
        let named = source == MetadataSource::ProtectedResource;
        for issuer in &issuers {
            if let Some(meta) = self.authorization_server_metadata(issuer, named).await? {
                found = Some(meta);
                break;
            }
        }
        let (mut meta, source) = match found {
            Some(meta) => (meta, source),
            None => {
                let configured = self.configured_metadata(issuers.first().map(String::as_str));
                match configured {
                    Some(meta) => (meta, MetadataSource::Configured),
                    None if prm.is_some() => {
                        return Err(AuthError::NoAuthorizationServerMetadata {
                            issuers: issuers.join(", "),
                        });
                    }
                    None if challenge.is_some() && self.settings.legacy_default_endpoints => {
                        (default_endpoints(&origin), MetadataSource::DefaultEndpoints)
                    }
                    None => {
                        return Err(AuthError::NoMetadata {
                            server: shown(&server),
                        });
                    }
                }
            }
        };
        if let Some(url) = &self.settings.authorization_url {
            meta.authorization_endpoint.clone_from(url);
        }
        if let Some(url) = &self.settings.token_url {
            meta.token_endpoint.clone_from(url);
        }
        if let Some(url) = &self.settings.registration_url {
            meta.registration_endpoint = Some(url.clone());
        }
        if self
            .client
            .as_ref()
            .is_some_and(|c| c.issuer != meta.issuer)
        {
            self.client = None;
        }
        let resource = prm.as_ref().map_or_else(
            || discovery::canonical_resource(&server),
            |p| p.resource.clone(),
        );
        // Tokens of another authorization server, or minted for another resource (RFC 8707),
        // are never presented again: not to the server, not to the new authorization server.
        if self
            .tokens
            .as_ref()
            .is_some_and(|t| !t.is_for(&meta.issuer, &resource))
        {
            self.forget_tokens();
        }
        let dpop_required = prm
            .as_ref()
            .and_then(|p| p.dpop_bound_access_tokens_required)
            .unwrap_or(false);
        let resource_takes_dpop = dpop_required
            || prm
                .as_ref()
                .is_some_and(|p| p.dpop_signing_alg_values_supported.is_some())
            || match challenge {
                Some(c) => c.dpop_offered,
                // Discovery without a challenge keeps what the last challenge said.
                None => self
                    .discovered
                    .as_ref()
                    .is_some_and(|d| d.resource_takes_dpop),
            };
        self.discovered = Some(Discovered {
            resource,
            dpop_required,
            resource_takes_dpop,
            resource_scopes: prm.and_then(|p| p.scopes_supported),
            meta,
            source,
        });
        Ok(())
    }

    /// The metadata of one issuer, trying its well-known URLs in order. A document that states
    /// another issuer is refused outright: none of its endpoints is used. When the issuer was
    /// not `named` by protected resource metadata (the 2025-03-26 layout: the server's own
    /// origin), there is nothing to compare with and the document's issuer is taken.
    async fn authorization_server_metadata(
        &self,
        issuer: &str,
        named: bool,
    ) -> Result<Option<AuthorizationServerMetadata>, AuthError> {
        let Ok(issuer_url) = Url::parse(issuer) else {
            return Ok(None);
        };
        for url in discovery::authorization_server_metadata_urls(&issuer_url) {
            let answer = self.get("authorization server metadata", &url).await?;
            if !answer.status().is_success() {
                continue;
            }
            let parsed = if named {
                AuthorizationServerMetadata::parse(answer.body(), issuer)
            } else {
                AuthorizationServerMetadata::parse_any_issuer(answer.body())
            };
            match parsed {
                Ok(meta) => return Ok(Some(meta)),
                Err(e @ Error::IssuerMismatch { .. }) => return Err(e.into()),
                Err(_) => continue,
            }
        }
        Ok(None)
    }

    /// Metadata made of the configured endpoints, when both are set. PKCE is always sent.
    fn configured_metadata(&self, issuer: Option<&str>) -> Option<AuthorizationServerMetadata> {
        let authorization = self.settings.authorization_url.clone()?;
        let token = self.settings.token_url.clone()?;
        let issuer = issuer.map_or_else(
            || {
                Url::parse(&authorization)
                    .map(|u| u.origin().ascii_serialization())
                    .unwrap_or_default()
            },
            str::to_owned,
        );
        Some(AuthorizationServerMetadata {
            issuer,
            authorization_endpoint: authorization,
            token_endpoint: token,
            registration_endpoint: self.settings.registration_url.clone(),
            scopes_supported: None,
            code_challenge_methods_supported: Some(vec!["S256".to_owned()]),
            token_endpoint_auth_methods_supported: None,
            client_id_metadata_document_supported: None,
            authorization_response_iss_parameter_supported: None,
            dpop_signing_alg_values_supported: None,
            device_authorization_endpoint: None,
        })
    }

    async fn get(&self, what: &'static str, url: &Url) -> Result<HttpResponse, AuthError> {
        let request = http::Request::get(url.as_str())
            .header(http::header::ACCEPT, "application/json")
            .body(Vec::new())
            .map_err(|_| AuthError::Transport {
                what,
                url: shown(url),
                source: TransportError::new("the URL cannot be requested"),
            })?;
        self.send(what, request).await
    }

    async fn send(
        &self,
        what: &'static str,
        request: HttpRequest,
    ) -> Result<HttpResponse, AuthError> {
        let uri = request.uri();
        let url = shown_url(uri.scheme_str(), uri.host(), uri.port_u16(), uri.path());
        let origin = shown_url(uri.scheme_str(), uri.host(), uri.port_u16(), "");
        self.services.http.send(request).await.map_err(|source| {
            if source.is_refused() {
                AuthError::Refused {
                    what,
                    origin,
                    source,
                }
            } else {
                AuthError::Transport { what, url, source }
            }
        })
    }

    /// Pre-registered credentials belong to one authorization server: the configured
    /// [`Settings::client_issuer`], else the first one they were used with here or their
    /// stored tokens came from. Refuses another `issuer` (byte for byte) before anything is
    /// sent to it, and otherwise binds them to this one.
    fn check_configured_client(&mut self, issuer: &str) -> Result<(), AuthError> {
        if self.settings.client_id.is_none() {
            return Ok(());
        }
        let bound = self
            .settings
            .client_issuer
            .as_deref()
            .or(self.pre_registered_issuer.as_deref());
        match bound {
            Some(bound) if bound != issuer => Err(AuthError::ClientIssuerMismatch {
                configured: bound.to_owned(),
                found: cut_short(issuer),
            }),
            Some(_) => Ok(()),
            None => {
                self.pre_registered_issuer = Some(issuer.to_owned());
                Ok(())
            }
        }
    }

    /// Refuses once the attempts of this challenge chain are used up.
    fn check_attempts(&self, scope: Option<&str>) -> Result<(), AuthError> {
        if self.attempts >= self.settings.max_authorization_attempts {
            return Err(AuthError::TooManyAttempts {
                attempts: self.attempts,
                scope: scope.unwrap_or("none").to_owned(),
            });
        }
        Ok(())
    }

    fn count_attempt(&mut self, scope: Option<&str>) -> Result<(), AuthError> {
        self.check_attempts(scope)?;
        self.attempts += 1;
        Ok(())
    }

    /// The metadata in use, or the error that says there is none to use.
    fn discovered(&self) -> Result<Discovered, AuthError> {
        self.discovered
            .clone()
            .ok_or_else(|| AuthError::NoMetadata {
                server: shown(&self.settings.server_url),
            })
    }

    fn random<const N: usize>(&self) -> Result<[u8; N], AuthError> {
        let mut bytes = [0; N];
        self.services
            .random
            .fill(&mut bytes)
            .map_err(|e| AuthError::NoRandomness(e.into()))?;
        Ok(bytes)
    }

    /// The authorization-code grant: PKCE check, client identity, the browser, the code, the
    /// tokens.
    async fn authorize(&mut self, scope: Option<String>) -> Result<(), AuthError> {
        let d = self.discovered()?;
        if let Some(agent) = self.services.device.clone()
            && device::use_device_flow(&d.meta, true, self.services.user_agent.is_some())?
        {
            return self.device_authorize(d, agent, scope).await;
        }
        // PKCE must be known to work, and an attempt be left, before anything is registered
        // or opened.
        d.meta.require_pkce_s256()?;
        self.check_attempts(scope.as_deref())?;
        let user_agent = self.services.user_agent.clone().ok_or_else(|| {
            AuthError::UserAgent(SeamError::new(
                "no browser is available to this process; log in interactively first",
            ))
        })?;
        // Nothing is registered at, or opened for, an authorization server whose endpoint no
        // browser may be sent to; the URL built below is checked again.
        if let Ok(endpoint) = Url::parse(&d.meta.authorization_endpoint) {
            flow::check_openable(&endpoint)?;
        }
        // A kept client serves only if the browser can come back to a redirect URI it was
        // registered with (the user agent is offered them), and only while the authorization
        // server still takes it (asked once without a browser); otherwise a new registration
        // for the user agent's redirect URI replaces it.
        let reused = self.reusable_client(&d, &*user_agent);
        let mut client = match reused.clone() {
            Some(client) => client,
            None => {
                let redirect_uri = user_agent.redirect_uri();
                self.ensure_client(&d, &redirect_uri, scope.as_deref())
                    .await?
            }
        };
        let redirect_uri = user_agent.redirect_uri();
        let (mut pkce, mut state, mut url) =
            self.authorization_request(&d, &client, &redirect_uri, scope.as_deref())?;
        if reused.is_some_and(|c| c.registered)
            && let Some(reason) = self.refused_before_login(&url, &redirect_uri).await
        {
            let issuer = d.meta.issuer.clone();
            user_agent.notice(&format!(
                "the authorization server {issuer} no longer takes the client registered there ({reason}): registering a new one"
            ));
            self.registrations.remove(&issuer);
            self.client = None;
            client = self
                .ensure_client(&d, &redirect_uri, scope.as_deref())
                .await?;
            (pkce, state, url) =
                self.authorization_request(&d, &client, &redirect_uri, scope.as_deref())?;
        }
        self.count_attempt(scope.as_deref())?;
        self.requested_scope.clone_from(&scope);
        let landed = user_agent
            .authorize(url)
            .await
            .map_err(|e| AuthError::UserAgent(e.into()))?;
        // The browser waits for the outcome (a loopback page answered after the exchange).
        let outcome = self
            .exchange_code(&d, &client, &landed, &state, &pkce, &redirect_uri, scope)
            .await;
        user_agent.finished(match &outcome {
            Ok(()) => Ok(()),
            Err(e) => Err(e),
        });
        outcome
    }

    /// A new PKCE pair and `state`, and the authorization URL with them.
    fn authorization_request(
        &self,
        d: &Discovered,
        client: &Client,
        redirect_uri: &str,
        scope: Option<&str>,
    ) -> Result<(Pkce, String, Url), AuthError> {
        let pkce = Pkce::from_random(self.random()?);
        let state = state_from_random(self.random()?);
        let url = flow::authorization_url(
            &d.meta,
            &client.client_id,
            redirect_uri,
            &d.resource,
            scope,
            &pkce,
            &state,
        )?;
        Ok((pkce, state, url))
    }

    /// The authorization server's reason when it refuses the authorization request `url` for
    /// the client's sake, asked without a browser (see [`preflight`]). An answer that is not
    /// such a refusal, or none at all, lets the login go on.
    async fn refused_before_login(&self, url: &Url, redirect_uri: &str) -> Option<String> {
        let answer = self.get("authorization request", url).await.ok()?;
        let location = answer
            .headers()
            .get(http::header::LOCATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|l| url.join(l).ok());
        preflight::refusal(
            answer.status().as_u16(),
            location.as_ref().map(Url::as_str),
            answer.body(),
            redirect_uri,
        )
    }

    /// A client kept from before that this login can use: a dynamic registration for this
    /// issuer whose redirect URIs the user agent can receive at (it is offered them), the
    /// client already in use, or the client stored with tokens from before registrations were
    /// kept by issuer. `None` when a client is configured or none of these serves; the user
    /// agent is told when a kept registration is passed over.
    fn reusable_client(&mut self, d: &Discovered, agent: &dyn UserAgent) -> Option<Client> {
        if self.settings.client_id.is_some() {
            return None;
        }
        let issuer = d.meta.issuer.clone();
        if let Some(kept) = self.registrations.get(&issuer) {
            let own = agent.redirect_uri();
            // Unknown redirect URIs (a registration migrated from version 1) are tried; the
            // authorization server's refusal leads to a new registration.
            let fits = kept.redirect_uris.is_empty()
                || kept.redirect_uris.contains(&own)
                || agent
                    .adopt_redirect_uri(&kept.redirect_uris)
                    .is_some_and(|uri| kept.redirect_uris.contains(&uri));
            if !fits {
                agent.notice(&format!(
                    "the client registered at {issuer} is for {}, where this login cannot receive the browser now: registering a new one",
                    kept.redirect_uris.join(", ")
                ));
                if self.client.as_ref().is_some_and(|c| c.registered) {
                    self.client = None;
                }
                return None;
            }
            let client = Client::registered(kept, &issuer);
            self.client = Some(client.clone());
            return Some(client);
        }
        if let Some(client) = self.client.as_ref().filter(|c| c.issuer == issuer) {
            return Some(client.clone());
        }
        // Tokens from before registrations were kept by issuer: their own client.
        let client = self
            .tokens
            .as_ref()
            .filter(|t| t.issuer.as_deref() == Some(issuer.as_str()))
            .and_then(|t| Client::stored(t, &issuer))?;
        self.client = Some(client.clone());
        Some(client)
    }

    /// The code from the redirect the browser `landed` on, exchanged for tokens, which are
    /// kept.
    #[allow(clippy::too_many_arguments)]
    async fn exchange_code(
        &mut self,
        d: &Discovered,
        client: &Client,
        landed: &Url,
        state: &str,
        pkce: &Pkce,
        redirect_uri: &str,
        scope: Option<String>,
    ) -> Result<(), AuthError> {
        let code = flow::code_from_redirect(landed, state, &d.meta)?;
        let auth = ClientAuth::choose(&d.meta, client.method.as_deref(), client.secret.as_ref());
        let grant = Grant::Code {
            code: &code,
            verifier: &pkce.verifier,
            redirect_uri,
        };
        let request = flow::token_request(&d.meta, &client.client_id, &auth, grant, &d.resource)?;
        let key = self.new_dpop_key(d)?;
        let tokens = self.send_token(request, key.as_ref()).await?;
        self.keep(tokens, client, scope, key);
        Ok(())
    }

    /// A client identity for the authorization server in `d`, in the spec's order after the
    /// kept ones ([`reusable_client`](Self::reusable_client)): configured, a metadata
    /// document, a new dynamic registration for `redirect_uri` (replacing a kept one).
    async fn ensure_client(
        &mut self,
        d: &Discovered,
        redirect_uri: &str,
        scope: Option<&str>,
    ) -> Result<Client, AuthError> {
        let issuer = d.meta.issuer.clone();
        self.check_configured_client(&issuer)?;
        let configured = self
            .settings
            .client_id
            .as_deref()
            .map(|id| (id, self.settings.client_secret.as_ref()));
        let identity = registration::choose_identity(
            &d.meta,
            configured,
            self.settings.client_metadata_url.as_deref(),
        );
        let client = match identity {
            Some(Identity::MetadataDocument { client_id }) => Client {
                client_id,
                secret: None,
                method: Some("none".to_owned()),
                issuer,
                registered: false,
            },
            Some(Identity::Register { endpoint }) => {
                let redirect_uris = [redirect_uri.to_owned()];
                let application_type = self
                    .settings
                    .application_type
                    .unwrap_or_else(|| ApplicationType::for_redirect_uris(&redirect_uris));
                let request = registration::registration_request(
                    &endpoint,
                    &self.settings.client_name,
                    &redirect_uris,
                    application_type,
                    scope,
                )?;
                let answer = self.send("registration", request).await?;
                let registered = registration::registration_from_response(
                    answer.status().as_u16(),
                    answer.body(),
                    &redirect_uris,
                );
                let reg = match registered {
                    Ok(reg) => reg,
                    Err(_) if d.source == MetadataSource::DefaultEndpoints => {
                        return Err(AuthError::NoMetadata {
                            server: shown(&self.settings.server_url),
                        });
                    }
                    Err(e) => return Err(e.into()),
                };
                let kept = ClientRegistration::new(
                    reg.client_id,
                    reg.client_secret,
                    reg.token_endpoint_auth_method,
                    redirect_uris.to_vec(),
                );
                let client = Client::registered(&kept, &issuer);
                self.registrations.insert(issuer.clone(), kept);
                self.registered_since.retain(|i| *i != issuer);
                self.registered_since.push(issuer);
                client
            }
            Some(Identity::PreRegistered {
                client_id,
                client_secret,
            }) => Client {
                client_id,
                secret: client_secret,
                method: None,
                issuer,
                registered: false,
            },
            None => return Err(AuthError::NoClientIdentity { issuer }),
        };
        self.client = Some(client.clone());
        Ok(client)
    }

    /// A refresh-token grant with the client the tokens were issued to, at the authorization
    /// server discovered last. Tokens from another authorization server are never presented to
    /// this one.
    async fn refresh_inner(&mut self) -> Result<(), AuthError> {
        let Some(d) = self.discovered.clone() else {
            return Ok(());
        };
        let Some(tokens) = self.tokens.clone() else {
            return Ok(());
        };
        let Some(refresh) = tokens.refresh_token.clone() else {
            return Ok(());
        };
        if !tokens.is_for(&d.meta.issuer, &d.resource) {
            return Err(TokenError::Refused(
                "the tokens were issued by another authorization server or for another resource"
                    .to_owned(),
            )
            .into());
        }
        self.check_configured_client(&d.meta.issuer)?;
        let configured = self.settings.client_id.as_ref().map(|id| Client {
            client_id: id.clone(),
            secret: self.settings.client_secret.clone(),
            method: None,
            issuer: d.meta.issuer.clone(),
            registered: false,
        });
        let client = configured
            .or_else(|| Client::stored(&tokens, &d.meta.issuer))
            .or_else(|| self.client.clone())
            .ok_or_else(|| {
                AuthError::from(TokenError::Refused(
                    "no client id is known for the stored refresh token".to_owned(),
                ))
            })?;
        let auth = ClientAuth::choose(&d.meta, client.method.as_deref(), client.secret.as_ref());
        let grant = Grant::Refresh {
            token: &refresh,
            scope: None,
        };
        let request = flow::token_request(&d.meta, &client.client_id, &auth, grant, &d.resource)?;
        // The key the tokens were bound to: a bound refresh token is refused without it.
        let key = tokens.dpop_key.clone();
        let fresh = self.send_token(request, key.as_ref()).await?;
        let scope = tokens.scope.clone();
        self.keep(fresh, &client, scope, key);
        Ok(())
    }

    /// The `client_credentials` grant: HTTP Basic (or post, per metadata) with the configured
    /// secret, else a `private_key_jwt` assertion from the signer.
    async fn client_credentials_grant(&mut self, scope: Option<String>) -> Result<(), AuthError> {
        let d = self.discovered()?;
        self.check_configured_client(&d.meta.issuer)?;
        let client_id = self
            .settings
            .client_id
            .clone()
            .ok_or(AuthError::NoClientCredentials)?;
        let auth = if let Some(secret) = &self.settings.client_secret {
            secret_auth(&d.meta, secret)
        } else if let Some(signer) = self.services.signer.clone() {
            ClientAuth::JwtAssertion(self.assertion(&*signer, &client_id, &d.meta.issuer)?)
        } else {
            return Err(AuthError::NoClientCredentials);
        };
        self.count_attempt(scope.as_deref())?;
        self.requested_scope.clone_from(&scope);
        let grant = Grant::ClientCredentials {
            scope: scope.as_deref(),
        };
        self.machine_tokens(&d, client_id, &auth, grant, scope.clone())
            .await
    }

    /// Sends a grant that needs no browser to the token endpoint and keeps the tokens, for the
    /// configured client (never a registered one).
    async fn machine_tokens(
        &mut self,
        d: &Discovered,
        client_id: String,
        auth: &ClientAuth,
        grant: Grant<'_>,
        scope: Option<String>,
    ) -> Result<(), AuthError> {
        let request = flow::token_request(&d.meta, &client_id, auth, grant, &d.resource)?;
        let key = self.new_dpop_key(d)?;
        let tokens = self.send_token(request, key.as_ref()).await?;
        let client = Client {
            client_id,
            secret: None,
            method: None,
            issuer: d.meta.issuer.clone(),
            registered: false,
        };
        self.keep(tokens, &client, scope, key);
        Ok(())
    }

    /// The `jwt-bearer` grant (RFC 7523 §2.1) with the configured assertion, or with one the
    /// identity provider issues for this authorization server and resource (RFC 8693 token
    /// exchange, SEP-990). The client authenticates with its secret when it has one.
    async fn assertion_grant(&mut self, scope: Option<String>) -> Result<(), AuthError> {
        let d = self.discovered()?;
        self.check_configured_client(&d.meta.issuer)?;
        let (grant, needs) = match self.settings.grant {
            GrantType::IdentityAssertion => ("identity assertion", "an identity provider"),
            _ => ("jwt-bearer", "an assertion"),
        };
        let missing = AuthError::NoAssertion { grant, needs };
        let client_id = self.settings.client_id.clone().ok_or(missing.clone())?;
        let auth = self
            .settings
            .client_secret
            .as_ref()
            .map_or(ClientAuth::None, |secret| secret_auth(&d.meta, secret));
        self.count_attempt(scope.as_deref())?;
        self.requested_scope.clone_from(&scope);
        let assertion = match self.settings.grant {
            GrantType::IdentityAssertion => {
                let idp = self.settings.identity_provider.clone().ok_or(missing)?;
                let request = flow::token_exchange_request(
                    &idp.token_endpoint,
                    &idp.client_id,
                    &idp.id_token,
                    &d.meta.issuer,
                    &d.resource,
                    scope.as_deref(),
                )?;
                let answer = self.send("token exchange", request).await?;
                flow::identity_assertion_from_response(answer.status().as_u16(), answer.body())?
            }
            _ => self.settings.assertion.clone().ok_or(missing)?,
        };
        let grant = Grant::JwtBearer {
            assertion: &assertion,
            scope: scope.as_deref(),
        };
        self.machine_tokens(&d, client_id, &auth, grant, scope.clone())
            .await
    }

    /// RFC 7523 claims (`iss` = `sub` = client id, `aud` = the issuer, five minutes of
    /// validity, a random `jti`), signed by the caller's signer.
    fn assertion(
        &self,
        signer: &dyn ClientAssertionSigner,
        client_id: &str,
        issuer: &str,
    ) -> Result<JwtAssertion, AuthError> {
        let now = self.services.clock.now_ms() / 1000;
        let jti: String = self
            .random::<16>()?
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        let claims = serde_json::json!({
            "iss": client_id,
            "sub": client_id,
            "aud": issuer,
            "iat": now,
            "exp": now + 300,
            "jti": jti,
        });
        signer
            .sign(claims.to_string().as_bytes())
            .map(JwtAssertion::new)
            .map_err(|e| AuthError::Assertion(e.into()))
    }

    /// A new DPoP key for a new authorization at the authorization server in `d`, if DPoP is
    /// on, the resource said it takes bound tokens, and the server takes ES256 proofs (or
    /// names no algorithm while the resource wants bound tokens); see [`dpop`](crate::dpop).
    fn new_dpop_key(&self, d: &Discovered) -> Result<Option<DpopKey>, AuthError> {
        let Some(signer) = &self.services.dpop else {
            return Ok(None);
        };
        if !d.resource_takes_dpop {
            return Ok(None);
        }
        let wanted = match &d.meta.dpop_signing_alg_values_supported {
            Some(algs) => algs.iter().any(|a| a == dpop::ALG),
            None => d.dpop_required,
        };
        if !wanted {
            return Ok(None);
        }
        signer
            .generate()
            .map(Some)
            .map_err(|e| AuthError::Dpop(e.into()))
    }

    /// Sends a token request and reads its answer. With a DPoP `key` the request carries a
    /// proof with the authorization server's last nonce, and is sent once more with a new
    /// one if the server answers `use_dpop_nonce` (RFC 9449 §8). A `DPoP` token that came
    /// without a proof is refused: it could not be used.
    async fn send_token(
        &mut self,
        request: HttpRequest,
        key: Option<&DpopKey>,
    ) -> Result<flow::Tokens, AuthError> {
        let answer = match (key, self.services.prover()) {
            (Some(key), Some(prover)) => self.send_with_proof(request, key, &prover).await?,
            _ => self.send("token", request).await?,
        };
        let tokens = flow::tokens_from_response(answer.status().as_u16(), answer.body())?;
        if key.is_none() && tokens.token_type == "DPoP" {
            return Err(TokenError::Refused(
                "the token endpoint issued a DPoP token to a request without a proof".to_owned(),
            )
            .into());
        }
        Ok(tokens)
    }

    async fn send_with_proof(
        &mut self,
        request: HttpRequest,
        key: &DpopKey,
        prover: &Prover,
    ) -> Result<HttpResponse, AuthError> {
        let origin = origin_of(request.uri());
        let mut retried = false;
        loop {
            let nonce = self
                .as_nonce
                .as_ref()
                .filter(|(o, _)| *o == origin)
                .map(|(_, n)| n.clone());
            let proof =
                prover.proof(key, request.method(), request.uri(), None, nonce.as_deref())?;
            let mut attempt = copy_request(&request);
            attempt.headers_mut().insert(dpop::DPOP, proof);
            let answer = self.send("token", attempt).await?;
            // Any answer may bring the next nonce (RFC 9449 §8.2).
            let fresh = answer
                .headers()
                .get(dpop::DPOP_NONCE)
                .and_then(|v| dpop::dpop_nonce(v.as_bytes()));
            let asked = dpop::is_use_dpop_nonce_answer(answer.status().as_u16(), answer.body());
            if let Some(fresh) = fresh {
                let changed = nonce.as_deref() != Some(fresh.as_str());
                self.as_nonce = Some((origin.clone(), fresh));
                if asked && changed && !retried {
                    retried = true;
                    continue;
                }
            }
            return Ok(answer);
        }
    }

    /// Stores a token answer: expiry from the clock, the new refresh token (or the old one
    /// when none came, from the same authorization server only), the client it belongs to,
    /// the DPoP key the request proved.
    fn keep(
        &mut self,
        tokens: flow::Tokens,
        client: &Client,
        scope: Option<String>,
        dpop_key: Option<DpopKey>,
    ) {
        let now = self.services.clock.now_ms();
        // The resource of the metadata in use: every grant is sent after discovery.
        let resource = self.discovered.as_ref().map(|d| d.resource.clone());
        let previous = self.tokens.take().filter(|t| match &resource {
            Some(resource) => t.is_for(&client.issuer, resource),
            None => t.issuer.as_deref().is_none_or(|i| i == client.issuer),
        });
        let granted = tokens.scope.clone();
        let mut kept = ServerTokens::updated(tokens, now, previous.as_ref());
        kept.scope = granted.or(scope).or(kept.scope);
        kept.client_id = Some(client.client_id.clone());
        kept.client_secret = if client.registered {
            client.secret.clone()
        } else {
            None
        };
        kept.issuer = Some(client.issuer.clone());
        kept.token_endpoint_auth_method.clone_from(&client.method);
        kept.dpop_key = dpop_key;
        kept.resource = resource;
        self.tokens = Some(kept);
        self.changed = true;
    }
}

/// The device authorization grant (RFC 8628; the requests and answers are in
/// [`device`](crate::device)).
impl Authorizer {
    /// A person's login on another device: the user code shown, the token endpoint polled at
    /// the server's pace until the person approves, denies, or the code expires.
    async fn device_authorize(
        &mut self,
        d: Discovered,
        agent: Arc<dyn DeviceUserAgent>,
        scope: Option<String>,
    ) -> Result<(), AuthError> {
        self.check_attempts(scope.as_deref())?;
        let (client, grant) = self.device_authorization(&d, scope.as_deref()).await?;
        self.count_attempt(scope.as_deref())?;
        self.requested_scope.clone_from(&scope);
        agent
            .show(&grant.verification)
            .map_err(|e| AuthError::UserAgent(e.into()))?;
        let auth = ClientAuth::choose(&d.meta, client.method.as_deref(), client.secret.as_ref());
        let key = self.new_dpop_key(&d)?;
        let mut polling = device::Polling::new(&grant, self.services.clock.now_ms());
        let tokens = loop {
            agent.wait(polling.interval_ms()).await;
            polling.check_time(self.services.clock.now_ms())?;
            let poll = Grant::DeviceCode {
                device_code: &grant.device_code,
            };
            let request =
                flow::token_request(&d.meta, &client.client_id, &auth, poll, &d.resource)?;
            let answer = match (key.as_ref(), self.services.prover()) {
                (Some(key), Some(prover)) => self.send_with_proof(request, key, &prover).await?,
                _ => self.send("token", request).await?,
            };
            let status = answer.status().as_u16();
            if let Some(tokens) = polling.handle(status, answer.body(), key.is_some())? {
                break tokens;
            }
        };
        self.keep(tokens, &client, scope, key);
        Ok(())
    }

    /// The device authorization request, with its client: the configured one, else the one
    /// registered at this issuer, else a new registration that asks for the device grant. A
    /// kept registration the server refuses this grant (one made for the browser alone) is
    /// replaced by a new one, once.
    async fn device_authorization(
        &mut self,
        d: &Discovered,
        scope: Option<&str>,
    ) -> Result<(Client, device::DeviceAuthorization), AuthError> {
        let issuer = d.meta.issuer.clone();
        self.check_configured_client(&issuer)?;
        let configured = self.settings.client_id.clone().map(|client_id| Client {
            client_id,
            secret: self.settings.client_secret.clone(),
            method: None,
            issuer: issuer.clone(),
            registered: false,
        });
        let kept = self
            .client
            .clone()
            .filter(|c| c.issuer == issuer && c.registered)
            .or_else(|| {
                self.registrations
                    .get(&issuer)
                    .map(|r| Client::registered(r, &issuer))
            });
        let (mut client, mut new) = match configured.or(kept) {
            Some(client) => (client, false),
            None => (self.register_for_device(d, scope).await?, true),
        };
        loop {
            let auth =
                ClientAuth::choose(&d.meta, client.method.as_deref(), client.secret.as_ref());
            let request = device::authorization_request(
                &d.meta,
                &client.client_id,
                &auth,
                &d.resource,
                scope,
            )?;
            let answer = self.send("device authorization", request).await?;
            let status = answer.status().as_u16();
            match device::DeviceAuthorization::from_response(status, answer.body()) {
                Ok(grant) => {
                    self.client = Some(client.clone());
                    return Ok((client, grant));
                }
                Err(e) if e.is_client_refused() && client.registered && !new => {
                    client = self.register_for_device(d, scope).await?;
                    new = true;
                }
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// Registers a client for the device grant (and the authorization-code grant beside it)
    /// and keeps it for the issuer, replacing the one kept before.
    async fn register_for_device(
        &mut self,
        d: &Discovered,
        scope: Option<&str>,
    ) -> Result<Client, AuthError> {
        let issuer = d.meta.issuer.clone();
        let endpoint =
            d.meta
                .registration_endpoint
                .clone()
                .ok_or_else(|| AuthError::NoClientIdentity {
                    issuer: issuer.clone(),
                })?;
        let redirect_uris = [self
            .services
            .user_agent
            .as_ref()
            .map_or_else(|| device::REDIRECT_URI.to_owned(), |ua| ua.redirect_uri())];
        let application_type = self
            .settings
            .application_type
            .unwrap_or_else(|| ApplicationType::for_redirect_uris(&redirect_uris));
        let request = registration::registration_request_with(
            &endpoint,
            &self.settings.client_name,
            &redirect_uris,
            application_type,
            scope,
            device::REGISTERED_GRANTS,
        )?;
        let answer = self.send("registration", request).await?;
        let reg = registration::registration_from_response(
            answer.status().as_u16(),
            answer.body(),
            &redirect_uris,
        )?;
        let kept = ClientRegistration::new(
            reg.client_id,
            reg.client_secret,
            reg.token_endpoint_auth_method,
            redirect_uris.to_vec(),
        );
        let client = Client::registered(&kept, &issuer);
        self.registrations.insert(issuer.clone(), kept);
        self.registered_since.retain(|i| *i != issuer);
        self.registered_since.push(issuer);
        Ok(client)
    }
}

/// How a configured machine client presents its secret: the method the metadata prefers, or
/// HTTP Basic when the server lists neither secret method (a configured secret is always sent).
fn secret_auth(meta: &AuthorizationServerMetadata, secret: &ClientSecret) -> ClientAuth {
    match ClientAuth::choose(meta, None, Some(secret)) {
        ClientAuth::None => ClientAuth::Basic(secret.clone()),
        auth => auth,
    }
}

/// The origin a URL's requests go to (scheme, host, port), for keeping a server's nonce.
fn origin_of(uri: &http::Uri) -> String {
    format!(
        "{}://{}",
        uri.scheme_str().unwrap_or_default(),
        uri.authority().map_or("", http::uri::Authority::as_str)
    )
}

/// A copy of a request this crate built (method, URL, headers, body), to send again: `http`'s
/// requests are not `Clone`.
fn copy_request(request: &HttpRequest) -> HttpRequest {
    let mut copy = http::Request::new(request.body().clone());
    *copy.method_mut() = request.method().clone();
    *copy.uri_mut() = request.uri().clone();
    *copy.version_mut() = request.version();
    *copy.headers_mut() = request.headers().clone();
    copy
}

/// Whether a refresh failure means the refresh token is useless (log in again) rather than
/// "try later" or "discovery failed".
fn is_dead_grant(e: &AuthError) -> bool {
    matches!(
        e,
        AuthError::Token(TokenError::InvalidGrant(_) | TokenError::Refused(_))
    )
}

fn forbidden_detail(challenge: Option<&BearerChallenge>) -> String {
    let Some(c) = challenge else {
        return String::new();
    };
    let text = cut_short(
        &[c.error.as_deref(), c.error_description.as_deref()]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
            .join(" "),
    );
    if text.is_empty() {
        text
    } else {
        format!(": {text}")
    }
}

/// The 2025-03-26 default endpoints on the server's origin. That revision makes PKCE
/// mandatory, so S256 is taken as supported.
fn default_endpoints(origin: &str) -> AuthorizationServerMetadata {
    AuthorizationServerMetadata {
        issuer: origin.to_owned(),
        authorization_endpoint: format!("{origin}/authorize"),
        token_endpoint: format!("{origin}/token"),
        registration_endpoint: Some(format!("{origin}/register")),
        scopes_supported: None,
        code_challenge_methods_supported: Some(vec!["S256".to_owned()]),
        token_endpoint_auth_methods_supported: None,
        client_id_metadata_document_supported: None,
        authorization_response_iss_parameter_supported: None,
        dpop_signing_alg_values_supported: None,
        device_authorization_endpoint: None,
    }
}

#[cfg(test)]
mod identity_provider_debug {
    #[test]
    fn the_token_endpoint_is_shown_without_its_secrets() {
        let idp = super::IdentityProvider::new(
            "https://user:pw@idp.example/token?key=k3y".to_owned(),
            "client".to_owned(),
            crate::JwtAssertion::new("eyJ.id.token".to_owned()),
        );
        let shown = format!("{idp:?}");
        for secret in ["pw", "k3y", "eyJ.id.token"] {
            assert!(!shown.contains(secret), "{secret} leaked: {shown}");
        }
        assert!(shown.contains("idp.example/token"), "{shown}");
    }
}

#[cfg(test)]
mod documented_defaults {
    /// docs/gateway.md and configuration.md promise this margin: a token is refreshed 60 s
    /// before it expires (never before half its lifetime; `store.rs` tests that part).
    #[test]
    fn the_refresh_margin_is_60_seconds() {
        let url = url::Url::parse("https://mcp.example/mcp").expect("a valid URL");
        assert_eq!(super::Settings::new(url).refresh_margin_ms, 60_000);
    }
}
