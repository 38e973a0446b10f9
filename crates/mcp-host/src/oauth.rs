//! Where OAuth meets HTTP: `mcp-oauth` decides, this module does its I/O. It gives the
//! authorizer an HTTP client (`mcp-http`'s [`Fetcher`], which never follows redirects), OS
//! randomness, the clock, a browser (a loopback redirect listener, or an automatic follow for
//! tests and headless runs), and the token store file; and it gives `mcp-http` an
//! [`AuthHook`] over the authorizer, so that a 401 on connect starts discovery and login, a
//! 401 later refreshes, and a 403 `insufficient_scope` steps up.
//! This file is long because it implements every seam mcp-oauth asks for (HTTP client, randomness,
//! clock, browser, token store) and mcp-http's hook, each small and tied to the same per-server
//! context.
//!
//! What a server names is fetched under the request-forgery rules of the MCP security best
//! practices: each server's OAuth requests go through a fetcher whose address policy follows
//! the class of the server's own address (`reach.rs`), its tokens go over plain http only to
//! a server on loopback, and a browser is sent only to `https` or loopback `http` URLs.
//!
//! It also holds the DPoP keys (RFC 9449) through ring: when an authorization server takes
//! ES256 proofs, each authorization gets a new P-256 key, every MCP request a fresh proof for
//! its method and URL, and a `use_dpop_nonce` challenge one retry with the server's nonce.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{SystemTime, UNIX_EPOCH};

use mcp_http::{AuthHook, Challenge, FetchError, FetchOptions, Fetcher};
use mcp_oauth::store::ServerTokens;
use mcp_oauth::{
    Authorizer, BoxFuture, Clock, Credentials, DpopKey, DpopSigner, Randomness, Services,
};
use mcp_protocol::Secrets;
use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair as _};

use crate::auth_store::{AuthStore, AuthStoreError, Held};
use crate::reach::{PolicyFetch, ServerPlace};

// What a consumer needs from mcp-oauth to set up a server's authorization, so that it does
// not depend on mcp-oauth itself.
use crate::config::{ConfiguredServer, Transport};
/// The device flow (RFC 8628): what a person is shown, and the agent that shows it.
pub use crate::device_login::DevicePrompt;
pub use crate::loopback::Loopback;
pub use mcp_http::AddressClass;
pub use mcp_oauth::DeviceUserAgent;
pub use mcp_oauth::device::DeviceVerification;
/// Whether a URL may be opened in a browser (`https`, or `http` to loopback): for a user agent
/// that opens URLs it may be handed by other code.
pub use mcp_oauth::flow::check_openable;
pub use mcp_oauth::registration::ApplicationType;
pub use mcp_oauth::{
    AuthError, BoxError, ClientAssertionSigner, ClientSecret, GrantType, IdentityProvider,
    JwtAssertion, SeamError, Settings, Url, UserAgent,
};

/// What every OAuth-protected server of a host shares: where tokens are kept, how to reach
/// authorization servers, and how to send a person to log in.
#[derive(Clone)]
#[non_exhaustive]
pub struct OAuthContext {
    /// The token store file; `None` keeps tokens in memory for this run only.
    pub store: Option<AuthStore>,
    /// How a person logs in; `None` means no login can happen now, and a server that needs
    /// one is left in state `auth_required`.
    pub user_agent: Option<Arc<dyn UserAgent>>,
    /// How a person logs in on another device (RFC 8628 device flow), where the server's
    /// authorization server offers it: preferred to `user_agent` there.
    pub device_agent: Option<Arc<dyn DeviceUserAgent>>,
    /// The name registered with authorization servers (RFC 7591 `client_name`).
    pub client_name: String,
    /// This client's Client ID Metadata Document URL, if it has one.
    pub client_metadata_url: Option<String>,
    /// Takes every server to be at an address of this class, instead of looking at its URL
    /// and resolving its name. What a server's OAuth requests may reach depends on it (a
    /// loopback server may name a loopback authorization server, a public one may not), and
    /// tokens go over plain http only to a loopback server. `Some(AddressClass::Public)`
    /// suits a host whose loopback URLs are tunnels to remote servers (an SSH port forward);
    /// tests use it to play a remote server on loopback.
    pub server_class: Option<AddressClass>,
    fetcher: Fetcher,
}

impl std::fmt::Debug for OAuthContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthContext")
            .field("store", &self.store.as_ref().map(AuthStore::path))
            .field("user_agent", &self.user_agent.is_some())
            .field("client_name", &self.client_name)
            .finish_non_exhaustive()
    }
}

impl OAuthContext {
    /// A context with the default HTTP limits (10 s to connect, 30 s per request, 1 MiB
    /// answers) and no way to log in. Fails only if the HTTP client cannot be made.
    pub fn new(store: Option<AuthStore>) -> Result<Self, FetchError> {
        let fetcher = Fetcher::new(FetchOptions::default())?;
        Ok(Self {
            store,
            user_agent: None,
            device_agent: None,
            client_name: "mcp-host".to_owned(),
            client_metadata_url: None,
            server_class: None,
            fetcher,
        })
    }

    /// Logs in through `user_agent` when a server asks.
    pub fn with_user_agent(mut self, user_agent: Arc<dyn UserAgent>) -> Self {
        self.user_agent = Some(user_agent);
        self
    }

    /// Logs in through the device flow where the authorization server offers it (the
    /// browser, if there is a `user_agent`, elsewhere).
    pub fn with_device_agent(mut self, agent: Arc<dyn DeviceUserAgent>) -> Self {
        self.device_agent = Some(agent);
        self
    }

    /// An HTTP client for a user agent that needs one (it reaches any address: the servers'
    /// own OAuth requests go through fetchers of their own, limited by the address policy).
    pub fn fetcher(&self) -> &Fetcher {
        &self.fetcher
    }

    /// The hook for `server`, or `None` when OAuth does not apply: a stdio server, or an HTTP
    /// server with a static `Authorization` header (the user chose that over OAuth).
    pub fn hook(&self, server: &ConfiguredServer) -> Option<Arc<OAuthHook>> {
        let Transport::Http(http) = &server.transport else {
            return None;
        };
        if http
            .headers
            .iter()
            .any(|(k, _)| k.eq_ignore_ascii_case("authorization"))
        {
            return None;
        }
        let mut settings = Settings::new(http.url.clone());
        if let Some(o) = &server.oauth {
            settings.authorization_url = o.authorization_url.as_ref().map(|u| u.to_string());
            settings.token_url = o.token_url.as_ref().map(|u| u.to_string());
            settings.registration_url = o.registration_url.as_ref().map(|u| u.to_string());
            settings.client_id.clone_from(&o.client_id);
            settings.client_secret = o
                .client_secret
                .as_ref()
                .map(|s| ClientSecret::new(s.secret().to_owned()));
            settings.scope.clone_from(&o.scope);
        }
        Some(Arc::new(self.hook_for(
            &server.id,
            http.url.clone(),
            settings,
        )))
    }

    /// A hook for a server described by OAuth settings alone (for a consumer without a
    /// configuration file, and for tests).
    /// Settings left at their defaults take the context's client name and metadata document.
    pub fn hook_for(&self, server: &str, url: Url, settings: Settings) -> OAuthHook {
        self.hook_with_signer(server, url, settings, None)
    }

    /// Like [`hook_for`](Self::hook_for), with a signer for `private_key_jwt` client
    /// authentication (the `client_credentials` grant with a key instead of a secret).
    pub fn hook_with_signer(
        &self,
        server: &str,
        url: Url,
        mut settings: Settings,
        signer: Option<Arc<dyn ClientAssertionSigner>>,
    ) -> OAuthHook {
        if settings.client_metadata_url.is_none() {
            settings
                .client_metadata_url
                .clone_from(&self.client_metadata_url);
        }
        if settings.client_name == Settings::new(url.clone()).client_name {
            settings.client_name.clone_from(&self.client_name);
        }
        let place = Arc::new(ServerPlace::new(&url, self.server_class));
        let mut services = Services::new(
            Arc::new(PolicyFetch::new(place.clone())),
            Arc::new(OsRandom(ring::rand::SystemRandom::new())),
            Arc::new(SystemClock),
        )
        .with_dpop(Arc::new(Es256Dpop::new()));
        if let Some(ua) = &self.user_agent {
            services = services.with_user_agent(ua.clone());
        }
        if let Some(agent) = &self.device_agent {
            services = services.with_device_agent(agent.clone());
        }
        if let Some(signer) = signer {
            services = services.with_signer(signer);
        }
        let mut authorizer = Authorizer::new(settings, services);
        // A store that cannot be read is said in the status, not taken for an empty one.
        let mut unreadable = None;
        let stored = match self.store.as_ref().map(|s| s.tokens(server, &url)) {
            Some(Ok(tokens)) => tokens,
            Some(Err(e)) => {
                unreadable = Some(format!(
                    "authorization: the token store cannot be read: {e}"
                ));
                None
            }
            None => None,
        };
        authorizer.set_tokens(stored);
        // Clients registered at authorization servers, by issuer: a server behind one that
        // this host already registered at reuses that registration.
        if let Some(registrations) = self.store.as_ref().and_then(|s| s.registrations().ok()) {
            authorizer.set_registrations(registrations);
        }
        let credentials = authorizer.credentials();
        let expires = authorizer.tokens().and_then(|t| t.expires_at_ms);
        let refresh_due_ms = authorizer.refresh_due_ms();
        let secrets = secrets_of(&authorizer);
        OAuthHook {
            server: server.to_owned(),
            url,
            place,
            store: self.store.clone(),
            authorizer: tokio::sync::Mutex::new(authorizer),
            credentials: Mutex::new(credentials),
            secrets: Mutex::new(secrets),
            state: Mutex::new(HookState {
                expires_at_ms: expires,
                refresh_due_ms,
                last_error: None,
                store_problem: unreadable,
                resource_nonce: None,
            }),
            succeeded: std::sync::atomic::AtomicBool::new(false),
            renewed: tokio::sync::Notify::new(),
        }
    }
}

/// The authorization of one server: the authorizer behind an async lock (one refresh or login
/// at a time), the current credentials that make every request's headers, and the store to
/// persist changes to.
pub struct OAuthHook {
    server: String,
    url: Url,
    place: Arc<ServerPlace>,
    store: Option<AuthStore>,
    authorizer: tokio::sync::Mutex<Authorizer>,
    credentials: Mutex<Option<Credentials>>,
    /// Every token and client secret this hook has held: a server may quote an old one.
    secrets: Mutex<Secrets>,
    state: Mutex<HookState>,
    /// A request with this hook's credentials succeeded since the authorizer last heard of
    /// it: the next challenge starts a new chain (see [`AuthHook::succeeded`]).
    succeeded: std::sync::atomic::AtomicBool,
    /// Woken whenever the tokens change, for the refresh timer (`refresh.rs`).
    renewed: tokio::sync::Notify,
}

/// The values of `authorizer` no text may show: its client secret, its tokens and a
/// dynamically registered client's secret.
fn secrets_of(authorizer: &Authorizer) -> Secrets {
    let configured = authorizer.settings().client_secret.as_ref();
    let tokens = authorizer.tokens();
    let values = [
        configured.map(|s| s.secret()),
        tokens.map(|t| t.access_token.secret()),
        tokens
            .and_then(|t| t.refresh_token.as_ref())
            .map(|t| t.secret()),
        tokens
            .and_then(|t| t.client_secret.as_ref())
            .map(|s| s.secret()),
    ];
    Secrets::new(
        values
            .into_iter()
            .flatten()
            .filter(|v| v.len() >= Secrets::CONFIGURED_MIN)
            .map(str::to_owned),
    )
}

struct HookState {
    expires_at_ms: Option<u64>,
    /// When the refresh timer should refresh ([`Authorizer::refresh_due_ms`]).
    refresh_due_ms: Option<u64>,
    last_error: Option<String>,
    /// Why the token store cannot be read or written, until it can: said with every
    /// authorization error, since tokens that are not kept are lost.
    store_problem: Option<String>,
    /// The MCP server's last DPoP nonce (RFC 9449 §9), put in every proof sent to it.
    resource_nonce: Option<String>,
}

impl std::fmt::Debug for OAuthHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthHook")
            .field("server", &self.server)
            .field("url", &crate::config::shown_url(&self.url))
            .finish_non_exhaustive()
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl OAuthHook {
    /// Refreshes the access token if it expires soon: before a connection is made, and when
    /// the refresh timer is due. A failure is kept for the status view and is not fatal: the
    /// server's 401 will say what it wants.
    pub async fn prepare(&self) {
        self.place.class().await;
        let mut authorizer = self.authorizer.lock().await;
        let (turn, newer) = self.take_turn(&mut authorizer).await;
        // Tokens another process just wrote are as fresh as the server gives: keep them. A
        // shared store (Redis) that gave no turn is not refreshed around: a rotated refresh
        // token this process could not store would leave the others with a dead one.
        if !newer
            && !self.without_shared_turn(turn.as_ref())
            && let Err(e) = authorizer.refresh_if_needed().await
        {
            self.failed(&e);
        }
        // A store that cannot be written is in the status; the connection goes on.
        let _ = self.after(&mut authorizer).await;
    }

    /// Logs in now, without waiting for the server to ask (the command line's `login`).
    pub async fn login(&self) -> Result<(), AuthError> {
        self.place.class().await;
        let mut authorizer = self.authorizer.lock().await;
        let (_turn, _) = self.take_turn(&mut authorizer).await;
        let outcome = authorizer.login().await;
        if let Err(e) = &outcome {
            self.failed(e);
        }
        let kept = self.after(&mut authorizer).await;
        outcome?;
        // A login whose tokens cannot be kept is lost at exit: it fails, saying why.
        kept.map_err(|e| AuthError::from(mcp_oauth::Error::Store(e)))
    }

    /// Forgets this server's tokens, here and in the store. The error says why the store
    /// could not be written (the tokens are forgotten here all the same).
    pub async fn logout(&self) -> Result<(), AuthStoreError> {
        let mut authorizer = self.authorizer.lock().await;
        authorizer.forget_tokens();
        let _ = authorizer.take_changed();
        *lock(&self.credentials) = None;
        {
            let mut state = lock(&self.state);
            state.expires_at_ms = None;
            state.refresh_due_ms = None;
        }
        self.renewed.notify_waiters();
        if let Some(store) = self.store.clone() {
            let server = self.server.clone();
            let path = store.path().to_owned();
            tokio::task::spawn_blocking(move || store.remove(&server).map(|_| ()))
                .await
                .unwrap_or_else(|e| {
                    Err(AuthStoreError::Write {
                        path,
                        source: std::io::Error::other(e),
                    })
                })?;
        }
        Ok(())
    }

    /// When the refresh timer should refresh the access token (Unix milliseconds), if ever.
    pub(crate) fn refresh_due_ms(&self) -> Option<u64> {
        lock(&self.state).refresh_due_ms
    }

    /// Resolves when the tokens change (a login, a refresh, a logout); the refresh timer
    /// waits for it while it has nothing to do.
    pub(crate) fn renewed(&self) -> tokio::sync::futures::Notified<'_> {
        self.renewed.notified()
    }

    /// When the access token expires (Unix milliseconds), if known: for the status view.
    pub fn expires_at_ms(&self) -> Option<u64> {
        lock(&self.state).expires_at_ms
    }

    /// Every token and client secret this server's authorization has held, for the host to
    /// keep out of what it shows about the server (a server may quote the token it was sent).
    pub fn secrets(&self) -> Secrets {
        lock(&self.secrets).clone()
    }

    /// The last authorization failure, for the status view; its text holds no secret.
    pub fn last_error(&self) -> Option<String> {
        let state = lock(&self.state);
        match (&state.last_error, &state.store_problem) {
            (Some(error), Some(store)) => Some(format!("{error}; {store}")),
            (error, store) => error.clone().or_else(|| store.clone()),
        }
    }

    /// Takes this server's turn among processes sharing the token store, before anything that
    /// may refresh or log in: an exclusive lock on `<store>.<server>.refresh.lock` (in Redis,
    /// a lease lock `<key>:refresh:<server>`: `AuthStore::refresh_turn`), held by the caller
    /// until the new tokens are written. Under it the stored tokens are read again; if
    /// another process changed them meanwhile (a rotated refresh token: ours is now dead),
    /// they are adopted and `true` comes back. Without a store there is no one to wait for.
    async fn take_turn(&self, authorizer: &mut Authorizer) -> (Option<Held>, bool) {
        let Some(store) = self.store.clone() else {
            return (None, false);
        };
        let (server, url) = (self.server.clone(), self.url.clone());
        let taken = blocking(move || {
            let turn = store.refresh_turn(&server).map_err(|e| e.to_string())?;
            let stored = store.tokens(&server, &url).map_err(|e| e.to_string())?;
            let registrations = store.registrations().map_err(|e| e.to_string())?;
            Ok((turn, stored, registrations))
        })
        .await;
        match taken {
            Ok((turn, stored, registrations)) => {
                // Another process may have registered at an authorization server meanwhile.
                authorizer.set_registrations(registrations);
                let ours = authorizer.tokens().map(|t| t.access_token.secret());
                let theirs = stored.as_ref().map(|t| t.access_token.secret());
                let newer = stored.is_some() && theirs != ours;
                if newer {
                    authorizer.set_tokens(stored);
                }
                (Some(turn), newer)
            }
            Err(e) => {
                let text = format!("authorization: the token store could not be locked: {e}");
                tracing::warn!(server = %self.server, "{text}");
                lock(&self.state).store_problem = Some(text);
                (None, false)
            }
        }
    }

    /// Whether the store is shared by several machines (Redis) and gave no turn: nothing may
    /// then refresh or log in (the reason is in the status, from `take_turn`).
    fn without_shared_turn(&self, turn: Option<&Held>) -> bool {
        turn.is_none() && self.store.as_ref().is_some_and(AuthStore::is_shared)
    }

    /// Whether this server's tokens may go in a request to `uri` (not in plain http off
    /// loopback); a refusal is kept for the status view, once.
    fn may_carry_tokens(&self, uri: &http::Uri) -> bool {
        if self.place.may_carry_tokens(uri) {
            return true;
        }
        let held = lock(&self.credentials).is_some();
        let mut state = lock(&self.state);
        if held && state.last_error.is_none() {
            state.last_error = self
                .plain_http_note()
                .map(|n| format!("authorization: {n}"));
        }
        false
    }

    /// Why this server gets no tokens, if it is reached in plain http off loopback.
    fn plain_http_note(&self) -> Option<String> {
        let to = http::Uri::try_from(self.url.as_str()).ok()?;
        (!self.place.may_carry_tokens(&to)).then(|| {
            format!(
                "tokens are not sent in plain http to {}, which is not on loopback; use https",
                crate::config::shown_url(&self.url)
            )
        })
    }

    fn failed(&self, error: &AuthError) {
        let text = match self.plain_http_note() {
            Some(note) => format!("authorization: {note}; {error}"),
            None => format!("authorization: {error}"),
        };
        tracing::warn!(server = %self.server, "{text}");
        lock(&self.state).last_error = Some(text);
    }

    /// After every change: the new header, and the store written if the tokens changed or a
    /// client was registered (a registration is kept even when the login after it failed).
    ///
    /// `Err` says why new tokens could not be stored (the status says it too).
    async fn after(&self, authorizer: &mut Authorizer) -> Result<(), String> {
        *lock(&self.credentials) = authorizer.credentials();
        {
            let mut secrets = lock(&self.secrets);
            *secrets = secrets.with(&secrets_of(authorizer));
        }
        let changed = authorizer.take_changed();
        {
            let mut state = lock(&self.state);
            state.expires_at_ms = authorizer.tokens().and_then(|t| t.expires_at_ms);
            state.refresh_due_ms = authorizer.refresh_due_ms();
        }
        if changed {
            self.renewed.notify_waiters();
        }
        let registrations = authorizer.take_registrations();
        if !changed && registrations.is_empty() {
            return Ok(());
        }
        let Some(store) = self.store.clone() else {
            return Ok(());
        };
        let tokens: Option<ServerTokens> = authorizer.tokens().cloned();
        let (server, url) = (self.server.clone(), self.url.clone());
        let written = blocking(move || {
            store
                .add_registrations(registrations)
                .map_err(|e| e.to_string())?;
            if changed {
                store
                    .update(&server, &url, |_| tokens)
                    .map_err(|e| e.to_string())?;
            }
            Ok(())
        })
        .await;
        match written {
            Ok(()) => {
                lock(&self.state).store_problem = None;
                Ok(())
            }
            Err(e) => {
                let text = format!("authorization: the token store could not be written: {e}");
                tracing::warn!(server = %self.server, "{text}");
                lock(&self.state).store_problem = Some(text.clone());
                Err(text)
            }
        }
    }
}

impl AuthHook for OAuthHook {
    /// The `Authorization` header, unless the server is reached in plain http and is not on
    /// loopback (then the token stays here, and the status says why).
    fn authorization(&self) -> Option<http::HeaderValue> {
        let to = http::Uri::try_from(self.url.as_str()).ok()?;
        if !self.may_carry_tokens(&to) {
            return None;
        }
        lock(&self.credentials).as_ref()?.authorization()
    }

    /// `Authorization`, and for a DPoP-bound token a proof of this request with the server's
    /// last nonce. A proof that cannot be made is reported and the request goes without
    /// credentials: the server's 401 then leads to a new authorization.
    fn headers_for(&self, method: &http::Method, uri: &http::Uri) -> http::HeaderMap {
        if !self.may_carry_tokens(uri) {
            return http::HeaderMap::new();
        }
        let Some(credentials) = lock(&self.credentials).clone() else {
            return http::HeaderMap::new();
        };
        let nonce = lock(&self.state).resource_nonce.clone();
        match credentials.headers(method, uri, nonce.as_deref()) {
            Ok(headers) => headers,
            Err(e) => {
                self.failed(&e);
                http::HeaderMap::new()
            }
        }
    }

    /// Noted without waiting for the authorizer (a refresh or login may hold it): the next
    /// challenge resets its attempt count first.
    fn succeeded(&self) {
        self.succeeded
            .store(true, std::sync::atomic::Ordering::SeqCst);
    }

    fn challenged(&self, challenge: Challenge) -> Pin<Box<dyn Future<Output = bool> + Send + '_>> {
        Box::pin(async move {
            self.place.class().await;
            let values: Vec<&str> = challenge
                .www_authenticate
                .iter()
                .filter_map(|v| v.to_str().ok())
                .collect();
            // RFC 9449 §9: a nonce is kept for the next proofs; a DPoP token refused only for
            // lack of it is fine, and the request goes again with it (once, if it is new).
            let nonce = challenge
                .dpop_nonce
                .as_ref()
                .and_then(|v| mcp_oauth::dpop::dpop_nonce(v.as_bytes()));
            if let Some(nonce) = nonce {
                let new = {
                    let mut state = lock(&self.state);
                    let new = state.resource_nonce.as_deref() != Some(nonce.as_str());
                    state.resource_nonce = Some(nonce);
                    new
                };
                let bound = lock(&self.credentials)
                    .as_ref()
                    .is_some_and(Credentials::is_dpop);
                if bound
                    && challenge.status == http::StatusCode::UNAUTHORIZED
                    && mcp_oauth::dpop::is_use_dpop_nonce(values.iter().copied())
                {
                    return new;
                }
            }
            let mut authorizer = self.authorizer.lock().await;
            // A success since the last challenge ended that chain: this one starts afresh.
            if self
                .succeeded
                .swap(false, std::sync::atomic::Ordering::SeqCst)
            {
                authorizer.request_succeeded();
            }
            let (turn, newer) = self.take_turn(&mut authorizer).await;
            if self.without_shared_turn(turn.as_ref()) {
                // As in `prepare`: no refresh or login that the other replicas cannot see.
                return false;
            }
            if newer && challenge.status == http::StatusCode::UNAUTHORIZED {
                // Another process refreshed or logged in meanwhile: try its token first.
                let _ = self.after(&mut authorizer).await;
                return true;
            }
            let outcome = authorizer
                .handle_challenge(challenge.status.as_u16(), &values)
                .await;
            if let Err(e) = &outcome {
                self.failed(e);
            } else {
                lock(&self.state).last_error = None;
            }
            // Tokens that cannot be stored fail the challenge, loudly: a login through it (the
            // command line's `login`) would otherwise say it succeeded and leave nothing.
            let kept = self.after(&mut authorizer).await;
            outcome.is_ok() && kept.is_ok()
        })
    }
}

async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, String> + Send + 'static,
) -> Result<T, String> {
    tokio::task::spawn_blocking(f)
        .await
        .unwrap_or_else(|e| Err(format!("the store task failed: {e}")))
}

/// Randomness from the operating system (through ring, which rustls already uses), for
/// `state` and PKCE verifiers.
struct OsRandom(ring::rand::SystemRandom);

impl Randomness for OsRandom {
    fn fill(&self, buf: &mut [u8]) -> Result<(), BoxError> {
        use ring::rand::SecureRandom as _;
        self.0
            .fill(buf)
            .map_err(|_| "the operating system gave no random bytes".into())
    }
}

/// The wall clock, in Unix milliseconds, for token expiry.
struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> u64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
    }
}

/// A user agent that follows the authorization server's redirect itself instead of opening a
/// browser: for tests, conformance runs and authorization servers that grant without asking a
/// person. It fetches the authorization URL and takes the `Location` of the redirect.
#[derive(Debug, Clone)]
pub struct AutoFollow {
    fetcher: Fetcher,
    redirect_uri: String,
}

impl AutoFollow {
    /// Follows with `fetcher`, naming `http://127.0.0.1/callback` as the redirect URI (nothing
    /// listens there: the redirect is read, not followed).
    pub fn new(fetcher: Fetcher) -> Self {
        Self {
            fetcher,
            redirect_uri: "http://127.0.0.1/callback".to_owned(),
        }
    }
}

impl UserAgent for AutoFollow {
    fn redirect_uri(&self) -> String {
        self.redirect_uri.clone()
    }

    fn authorize(&self, url: Url) -> BoxFuture<'_, Result<Url, BoxError>> {
        Box::pin(async move {
            let request = http::Request::get(url.as_str())
                .body(Vec::new())
                .map_err(|e| format!("the authorization URL cannot be requested: {e}"))?;
            // The fetcher's error is kept whole: it says which request failed and how.
            let response = self.fetcher.send(request).await?;
            let status = response.status();
            let location = response
                .headers()
                .get(http::header::LOCATION)
                .and_then(|v| v.to_str().ok())
                .filter(|_| status.is_redirection())
                .ok_or_else(|| {
                    format!(
                        "the authorization server answered HTTP {status} instead of redirecting: a person must log in in a browser"
                    )
                })?;
            url.join(location).map_err(|e| {
                format!("the authorization server redirected to an invalid URL: {e}").into()
            })
        })
    }
}

/// Shows the authorization URL to a person: prints it.
type Opener = dyn Fn(&Url) -> Result<(), BoxError> + Send + Sync;

/// Reads the URL the browser landed on, as the person pastes it.
type ReadLine = dyn Fn() -> BoxFuture<'static, Result<String, BoxError>> + Send + Sync;

/// A user agent for a machine without a browser (a server over SSH): the authorization URL is
/// shown, the person opens it anywhere, and pastes back the URL the browser was sent to (the
/// page will not load: nothing listens on this machine's loopback address from there).
pub struct Pasted {
    /// `http://127.0.0.1/callback`, or the loopback redirect URI of a kept registration.
    redirect_uri: Mutex<String>,
    show: Box<Opener>,
    read: Box<ReadLine>,
}

impl std::fmt::Debug for Pasted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pasted")
            .field("redirect_uri", &*lock(&self.redirect_uri))
            .finish_non_exhaustive()
    }
}

impl Pasted {
    /// `show` presents the authorization URL; `read` returns the pasted redirect URL. An
    /// error of either ends the login, kept as the source of the [`AuthError`].
    pub fn new(
        show: impl Fn(&Url) -> Result<(), BoxError> + Send + Sync + 'static,
        read: impl Fn() -> BoxFuture<'static, Result<String, BoxError>> + Send + Sync + 'static,
    ) -> Self {
        Self {
            redirect_uri: Mutex::new("http://127.0.0.1/callback".to_owned()),
            show: Box::new(show),
            read: Box::new(read),
        }
    }
}

impl UserAgent for Pasted {
    fn redirect_uri(&self) -> String {
        lock(&self.redirect_uri).clone()
    }

    /// Nothing listens for a pasted redirect, so any registered loopback callback
    /// (`http://127.0.0.1[:port]/callback`, a browser login's) serves: the client a
    /// browser login registered is used, not replaced.
    fn adopt_redirect_uri(&self, registered: &[String]) -> Option<String> {
        let uri = registered.iter().find(|uri| {
            Url::parse(uri).is_ok_and(|u| {
                u.scheme() == "http"
                    && u.host_str() == Some("127.0.0.1")
                    && u.path() == "/callback"
                    && u.query().is_none()
                    && u.username().is_empty()
                    && u.password().is_none()
            })
        })?;
        uri.clone_into(&mut lock(&self.redirect_uri));
        Some(uri.clone())
    }

    fn authorize(&self, url: Url) -> BoxFuture<'_, Result<Url, BoxError>> {
        Box::pin(async move {
            check_openable(&url)?;
            (self.show)(&url)?;
            let pasted = (self.read)().await?;
            let landed = Url::parse(pasted.trim())
                .map_err(|e| format!("the pasted text is not a URL: {e}"))?;
            let expected = self.redirect_uri();
            if !is_redirect_to(&landed, &expected) {
                return Err(format!(
                    "the pasted URL is not the redirect URI {expected} (same scheme, host, port and path)"
                )
                .into());
            }
            Ok(landed)
        })
    }
}

/// Whether `landed` is a redirect to `redirect_uri`: the same scheme, host, port and path,
/// compared parsed (a prefix test would take `http://127.0.0.1/callback.evil.example/` or
/// `http://127.0.0.1/callbackX`); the query is the authorization server's.
fn is_redirect_to(landed: &Url, redirect_uri: &str) -> bool {
    let Ok(expected) = Url::parse(redirect_uri) else {
        return false;
    };
    landed.scheme() == expected.scheme()
        && landed.host() == expected.host()
        && landed.port_or_known_default() == expected.port_or_known_default()
        && landed.path() == expected.path()
        && landed.username().is_empty()
        && landed.password().is_none()
}

/// Why a private key cannot sign client assertions. The messages say what is wrong with the
/// key, never what is in it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum KeyError {
    /// The text is not PEM: no base64 between the BEGIN and END lines.
    #[error("the private key is not PEM (base64 between BEGIN and END lines)")]
    NotPem,
    /// The PEM holds something else than a PKCS#8 ECDSA P-256 private key.
    #[error("the private key is not a PKCS#8 P-256 key")]
    NotP256,
}

/// Signs client assertions with an ECDSA P-256 key (JWS `ES256`, RFC 7518 §3.4): the
/// `private_key_jwt` client authentication of RFC 7523. The key never leaves this value and
/// never prints.
pub struct Es256Signer {
    key: EcdsaKeyPair,
    rng: ring::rand::SystemRandom,
}

impl std::fmt::Debug for Es256Signer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Es256Signer([redacted])")
    }
}

impl Es256Signer {
    /// A signer from a PKCS#8 PEM private key (`-----BEGIN PRIVATE KEY-----`). The error says
    /// what is wrong with the key, never what is in it.
    pub fn from_pkcs8_pem(pem: &str) -> Result<Self, KeyError> {
        use base64::Engine as _;
        let body: String = pem
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with("-----"))
            .collect();
        let der = base64::engine::general_purpose::STANDARD
            .decode(body)
            .map_err(|_| KeyError::NotPem)?;
        let rng = ring::rand::SystemRandom::new();
        let key = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &der, &rng)
            .map_err(|_| KeyError::NotP256)?;
        Ok(Self { key, rng })
    }
}

impl ClientAssertionSigner for Es256Signer {
    fn sign(&self, claims_json: &[u8]) -> Result<String, BoxError> {
        mcp_oauth::jws_compact(br#"{"alg":"ES256","typ":"JWT"}"#, claims_json, |input| {
            self.key
                .sign(&self.rng, input)
                .map(|s| s.as_ref().to_vec())
                .map_err(|_| "signing the client assertion failed".into())
        })
    }
}

/// The DPoP proof keys (RFC 9449) of every OAuth server: a new P-256 key for each
/// authorization and ES256 signatures, with ring and the operating system's randomness. The
/// key comes as PKCS#8 with each proof (the authorizer keeps it with the tokens); the last
/// one used stays parsed, so that a proof per request does not parse it again.
struct Es256Dpop {
    rng: ring::rand::SystemRandom,
    last: Mutex<Option<(Vec<u8>, Arc<EcdsaKeyPair>)>>,
}

impl Es256Dpop {
    fn new() -> Self {
        Self {
            rng: ring::rand::SystemRandom::new(),
            last: Mutex::new(None),
        }
    }

    fn pair(&self, key: &DpopKey) -> Result<Arc<EcdsaKeyPair>, String> {
        let mut last = lock(&self.last);
        let pair = match last.as_ref() {
            Some((pkcs8, pair)) if pkcs8.as_slice() == key.secret_pkcs8() => Arc::clone(pair),
            _ => {
                let pair = EcdsaKeyPair::from_pkcs8(
                    &ECDSA_P256_SHA256_FIXED_SIGNING,
                    key.secret_pkcs8(),
                    &self.rng,
                )
                .map_err(|_| "the DPoP key is not a PKCS#8 P-256 key".to_owned())?;
                let pair = Arc::new(pair);
                *last = Some((key.secret_pkcs8().to_vec(), Arc::clone(&pair)));
                pair
            }
        };
        // The proof's header names the public half: a signature by another key is refused.
        if pair.public_key().as_ref() != key.public_key() {
            return Err("the DPoP key's public half is not its private half's".to_owned());
        }
        Ok(pair)
    }
}

impl DpopSigner for Es256Dpop {
    fn generate(&self) -> Result<DpopKey, BoxError> {
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &self.rng)
            .map_err(|_| "no DPoP key could be made: the operating system gave no random bytes")?;
        let pair =
            EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &self.rng)
                .map_err(|_| "the new DPoP key could not be read back".to_owned())?;
        DpopKey::new(pkcs8.as_ref().to_vec(), pair.public_key().as_ref())
            .ok_or_else(|| "the new DPoP key's public half has an unknown form".into())
    }

    fn sign(&self, key: &DpopKey, message: &[u8]) -> Result<Vec<u8>, BoxError> {
        let pair = self.pair(key)?;
        pair.sign(&self.rng, message)
            .map(|s| s.as_ref().to_vec())
            .map_err(|_| "signing the DPoP proof failed".into())
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use base64::Engine as _;
    use ring::signature::KeyPair as _;

    use super::*;

    #[test]
    fn pasted_redirects_are_checked() {
        let ua = Pasted::new(
            |_| Ok(()),
            || Box::pin(async { Ok(" http://127.0.0.1/callback?code=c&state=s \n".to_owned()) }),
        );
        let url = Url::parse("https://as.example/authorize").expect("url");
        let landed = block_on(ua.authorize(url.clone())).expect("accepted");
        assert_eq!(landed.query(), Some("code=c&state=s"));
        let elsewhere = Pasted::new(
            |_| Ok(()),
            || Box::pin(async { Ok("https://evil.example/?code=c".to_owned()) }),
        );
        assert!(
            block_on(elsewhere.authorize(url.clone()))
                .unwrap_err()
                .to_string()
                .contains("redirect URI")
        );
        // Parsed, not a prefix: each of these starts with the redirect URI's text.
        for pasted in [
            "http://127.0.0.1/callbackX?code=c&state=s",
            "http://127.0.0.1/callback.evil.example/?code=c&state=s",
            "http://127.0.0.1/callback@evil.example/?code=c&state=s",
            "http://127.0.0.1/callback/more?code=c&state=s",
            "http://127.0.0.1/callback:8080/?code=c&state=s",
        ] {
            let ua = Pasted::new(
                |_| Ok(()),
                move || Box::pin(async move { Ok(pasted.to_owned()) }),
            );
            assert!(
                block_on(ua.authorize(url.clone()))
                    .unwrap_err()
                    .to_string()
                    .contains("redirect URI"),
                "{pasted} was taken"
            );
        }
    }

    #[test]
    fn pasted_takes_a_registered_loopback_callback() {
        let ua = Pasted::new(
            |_| Ok(()),
            || Box::pin(async { Ok("http://127.0.0.1:4321/callback?code=c&state=s".to_owned()) }),
        );
        let url = Url::parse("https://as.example/authorize").expect("url");
        // At its own redirect URI the port differs: refused.
        assert!(block_on(ua.authorize(url.clone())).is_err());
        let registered = [
            "https://app.example/callback".to_owned(),
            "http://127.0.0.1:4321/callback".to_owned(),
        ];
        assert_eq!(
            ua.adopt_redirect_uri(&registered).as_deref(),
            Some("http://127.0.0.1:4321/callback")
        );
        assert_eq!(ua.redirect_uri(), "http://127.0.0.1:4321/callback");
        let landed = block_on(ua.authorize(url)).expect("accepted");
        assert_eq!(landed.port(), Some(4321));
        let other = Pasted::new(|_| Ok(()), || Box::pin(async { Ok(String::new()) }));
        assert_eq!(
            other.adopt_redirect_uri(&["https://app.example/callback".to_owned()]),
            None
        );
        assert_eq!(other.redirect_uri(), "http://127.0.0.1/callback");
    }

    #[test]
    fn user_agents_open_only_https_or_loopback_http() {
        let opened = Arc::new(Mutex::new(Vec::<String>::new()));
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let record = |opened: &Arc<Mutex<Vec<String>>>| {
            let opened = opened.clone();
            move |url: &Url| {
                lock(&opened).push(url.to_string());
                Ok(())
            }
        };
        let browser = rt
            .block_on(Loopback::bind(record(&opened), Duration::from_millis(50)))
            .expect("listener");
        let pasted = Pasted::new(record(&opened), || {
            Box::pin(async { Ok("http://127.0.0.1/callback?code=c".to_owned()) })
        });
        for url in [
            "file:///etc/passwd?response_type=code",
            "ssh://evil.example/x",
            "http://as.example/authorize",
            "javascript:alert(1)",
        ] {
            let url = Url::parse(url).expect("url");
            let err = rt.block_on(browser.authorize(url.clone())).unwrap_err();
            assert!(err.to_string().contains("only https"), "{err}");
            let err = rt.block_on(pasted.authorize(url)).unwrap_err();
            assert!(err.to_string().contains("only https"), "{err}");
        }
        assert!(lock(&opened).is_empty(), "opened: {:?}", lock(&opened));
        // https and loopback http are opened (the browser then does not come back in time).
        for url in [
            "https://as.example/authorize",
            "http://localhost:9/authorize",
        ] {
            let _ = rt.block_on(browser.authorize(Url::parse(url).expect("url")));
        }
        assert_eq!(lock(&opened).len(), 2);
    }

    fn block_on<T>(f: impl Future<Output = T>) -> T {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime")
            .block_on(f)
    }

    #[test]
    fn dpop_keys_sign_what_their_public_half_verifies() {
        let keys = Es256Dpop::new();
        let key = keys.generate().expect("key");
        assert_ne!(key, keys.generate().expect("key"), "a new key each time");
        assert_eq!(format!("{key:?}"), "DpopKey([redacted])");
        for message in [&b"header.claims"[..], b"another"] {
            let signature = keys.sign(&key, message).expect("signature");
            assert_eq!(signature.len(), 64, "ES256 is r || s");
            ring::signature::UnparsedPublicKey::new(
                &ring::signature::ECDSA_P256_SHA256_FIXED,
                key.public_key(),
            )
            .verify(message, &signature)
            .expect("the signature verifies");
        }
        let other = keys.generate().expect("key");
        let mixed = DpopKey::new(key.secret_pkcs8().to_vec(), other.public_key()).expect("shape");
        let err = keys.sign(&mixed, b"m").unwrap_err();
        assert!(err.to_string().contains("public half"), "{err}");
        let garbage = DpopKey::new(b"not a key".to_vec(), other.public_key()).expect("shape");
        let err = keys.sign(&garbage, b"m").unwrap_err();
        assert!(err.to_string().contains("PKCS#8"), "{err}");
    }

    #[test]
    fn es256_assertions_verify_with_the_public_key() {
        let rng = ring::rand::SystemRandom::new();
        let pkcs8 =
            EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).expect("key");
        let b64 = base64::engine::general_purpose::STANDARD.encode(pkcs8.as_ref());
        let pem = format!("-----BEGIN PRIVATE KEY-----\n{b64}\n-----END PRIVATE KEY-----\n");
        let signer = Es256Signer::from_pkcs8_pem(&pem).expect("signer");
        assert_eq!(format!("{signer:?}"), "Es256Signer([redacted])");
        let jwt = signer.sign(br#"{"iss":"me"}"#).expect("jwt");
        let (signed, signature) = jwt.rsplit_once('.').expect("three parts");
        let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(signature)
            .expect("base64url");
        let public = signer.key.public_key().as_ref().to_vec();
        ring::signature::UnparsedPublicKey::new(&ring::signature::ECDSA_P256_SHA256_FIXED, public)
            .verify(signed.as_bytes(), &raw)
            .expect("the signature verifies");
        assert!(
            Es256Signer::from_pkcs8_pem(
                "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----"
            )
            .unwrap_err()
            .to_string()
            .contains("not a PKCS#8 P-256 key")
        );
        assert_eq!(
            Es256Signer::from_pkcs8_pem("not pem at all!").unwrap_err(),
            KeyError::NotPem
        );
    }
}
