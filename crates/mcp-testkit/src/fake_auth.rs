//! An in-process OAuth authorization server and protected MCP endpoint on loopback, for
//! end-to-end tests of the host's OAuth: protected resource metadata (in the challenge, at the
//! path-inserted or root well-known URL, or nowhere), authorization server metadata (RFC 8414
//! or OpenID Connect, with an issuer path, or at the MCP server's origin as in 2025-03-26),
//! dynamic registration, Client ID Metadata Documents, PKCE, token endpoint authentication
//! methods, token lifetimes, refresh-token rotation, a wrong issuer, RFC 9207 `iss`, step-up,
//! and DPoP (RFC 9449: tokens bound to the key of the token request's proof, proofs checked
//! on every MCP request, server nonces). The fake checks a proof's form and claims, not its
//! signature (no cryptography here): tests verify signatures from the recorded headers.
//! This file is long because one fake server plays every variant the host's OAuth must survive
//! (listed above), and the variants share its state: clients, codes, tokens and DPoP keys.
//!
//! `/authorize` answers at once with a 302 to `redirect_uri?code=…&state=…(&iss=…)`: no page,
//! no user. `/token` checks the PKCE verifier, the `resource` and the client's
//! authentication. `/mcp` wants a live bearer token (401 with a `WWW-Authenticate` challenge
//! otherwise, 403 `insufficient_scope` when a required scope is missing) and forwards
//! everything else to a real MCP server (`mcp_http::serve_http` with a small tool handler) on
//! another loopback port. Every request is recorded.
//!
//! A second authorization server on a third port plays a server's move to another one
//! ([`FakeAuthOptions::moved`]): each takes only the clients, codes and tokens it issued.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Method, Request, Response, StatusCode, header};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::client::legacy::Client as HyperClient;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use mcp_http::HttpServerConfig;
use mcp_protocol::schema::{
    CallToolResult, ClientRequest, ContentBlock, Implementation, ListChangedCapability,
    ListToolsResult, Tool,
};
use mcp_protocol::{ErrorObject, RawJson, ServerConfig};
use mcp_session::{Handler, RequestContext};
use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};
use tokio::net::TcpListener;

/// Where the protected resource metadata is served.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum PrmLocation {
    /// At `/custom/prm`, named by `resource_metadata` in every 401 challenge.
    #[default]
    Header,
    /// At `/.well-known/oauth-protected-resource/mcp`; the challenge names none.
    PathInserted,
    /// At `/.well-known/oauth-protected-resource`, with the origin as `resource`; the
    /// challenge names none.
    Root,
    /// Nowhere (a 2025-03-26 server).
    None,
}

/// Which authorization server metadata document is served.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum AsMetadata {
    /// RFC 8414 `oauth-authorization-server` (path-inserted when the issuer has a path).
    #[default]
    OAuth,
    /// OpenID Connect `openid-configuration`, path-appended when the issuer has a path.
    OpenId,
    /// None: clients must fall back to configured or default endpoints.
    None,
}

/// How the fake behaves: `FakeAuthOptions { prm: PrmLocation::Root, ..Default::default() }`.
/// Exhaustive on purpose (test tooling, not published): struct-update syntax is the API.
#[derive(Debug, Clone)]
pub struct FakeAuthOptions {
    /// Where the protected resource metadata is.
    pub prm: PrmLocation,
    /// Overrides the `resource` the protected resource metadata states (a mismatch test).
    pub prm_resource: Option<String>,
    /// `scopes_supported` of the protected resource metadata.
    pub scopes_supported: Option<Vec<String>>,
    /// The authorization server metadata document.
    pub metadata: AsMetadata,
    /// The issuer's path, such as `/tenant1` (endpoints live under it); empty for none.
    pub issuer_path: String,
    /// 2025-03-26: the authorization server's routes are on the MCP server's origin (its
    /// issuer is that origin) instead of a port of their own.
    pub on_server_origin: bool,
    /// The metadata states this issuer instead of the true one.
    pub wrong_issuer: Option<String>,
    /// Offer dynamic registration.
    pub dcr: bool,
    /// Offer the device authorization grant (RFC 8628): `device_authorization_endpoint` at
    /// `/device`; the person's page is `/activate?user_code=…` (add `&deny=1` to deny).
    pub device: bool,
    /// The device authorization's `interval`, in seconds.
    pub device_interval: u64,
    /// The device authorization's `expires_in`, in seconds.
    pub device_expires_in: u64,
    /// Errors the token endpoint answers to device-code polls first, in order
    /// (`slow_down`, `expired_token`, ...), before the page's approval counts.
    pub device_answers: Vec<String>,
    /// Advertise `client_id_metadata_document_supported` (any `https` client id is accepted).
    pub cimd: bool,
    /// Advertise PKCE S256 (it is always required at `/token`).
    pub pkce_advertised: bool,
    /// The token endpoint authentication methods advertised and accepted.
    pub token_auth_methods: Vec<String>,
    /// Registration issues a secret and settles on this method (`client_secret_basic`,
    /// `client_secret_post`); `None`: a public client (`none`).
    pub registration_method: Option<String>,
    /// A pre-registered client: id and optional secret.
    pub pre_registered: Option<(String, Option<String>)>,
    /// Access tokens live this long (`expires_in`).
    pub access_token_lifetime: Duration,
    /// Issue refresh tokens.
    pub refresh_tokens: bool,
    /// Each refresh gives a new refresh token and kills the old one (`invalid_grant` after).
    pub rotate_refresh_tokens: bool,
    /// Advertise `authorization_response_iss_parameter_supported`.
    pub iss_advertised: bool,
    /// The `iss` put in the redirect: `None` none; `Some("")` the true issuer; else that
    /// value.
    pub iss_in_redirect: Option<String>,
    /// `scope` in the 401 challenge.
    pub challenge_scope: Option<String>,
    /// A scope every MCP request needs: tokens without it get 403 `insufficient_scope`.
    pub required_scope: Option<String>,
    /// DPoP (RFC 9449): the metadata lists ES256 in `dpop_signing_alg_values_supported`; a
    /// token request with a proof gets a `DPoP` token bound to the proof's key, which `/mcp`
    /// then takes only as `Authorization: DPoP` with a proof of that key for each request.
    pub dpop: bool,
    /// With `dpop`, every proof must carry this nonce: `/token` answers 400
    /// `use_dpop_nonce` and `/mcp` 401 `DPoP error="use_dpop_nonce"`, with a `DPoP-Nonce`.
    pub dpop_nonce: Option<String>,
    /// The `resource_metadata` URL every 401 names instead of `/custom/prm` (a server that
    /// points its client somewhere else: a request-forgery test).
    pub resource_metadata_url: Option<String>,
    /// The metadata's `authorization_endpoint` instead of `/authorize` (a browser-opening
    /// test).
    pub authorization_endpoint: Option<String>,
    /// A scope the authorization server never grants: it is left out of every token's scope
    /// (a step-up that cannot succeed).
    pub withheld_scope: Option<String>,
    /// The server moved to a second authorization server: its protected resource metadata
    /// names the second one (another origin, [`Role::SecondAuth`], with its own clients, codes
    /// and tokens), and `/mcp` takes only tokens the authorization server it names issued.
    /// Each authorization server takes only its own clients and refresh tokens.
    pub moved: bool,
}

impl Default for FakeAuthOptions {
    fn default() -> Self {
        Self {
            prm: PrmLocation::Header,
            prm_resource: None,
            scopes_supported: None,
            metadata: AsMetadata::OAuth,
            issuer_path: String::new(),
            on_server_origin: false,
            wrong_issuer: None,
            dcr: true,
            device: false,
            device_interval: 5,
            device_expires_in: 600,
            device_answers: Vec::new(),
            cimd: false,
            pkce_advertised: true,
            token_auth_methods: vec![
                "none".to_owned(),
                "client_secret_basic".to_owned(),
                "client_secret_post".to_owned(),
            ],
            registration_method: None,
            pre_registered: None,
            access_token_lifetime: Duration::from_secs(3600),
            refresh_tokens: true,
            rotate_refresh_tokens: true,
            iss_advertised: false,
            iss_in_redirect: None,
            challenge_scope: None,
            required_scope: None,
            dpop: false,
            dpop_nonce: None,
            resource_metadata_url: None,
            authorization_endpoint: None,
            withheld_scope: None,
            moved: false,
        }
    }
}

/// Which face of the fake a request reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Role {
    /// The MCP server's origin (PRM, `/mcp`, and the 2025-03-26 routes).
    Resource,
    /// The authorization server's own origin.
    Auth,
    /// The second authorization server's origin (see [`FakeAuthOptions::moved`]).
    SecondAuth,
}

/// One request the fake saw.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct SeenRequest {
    /// Which origin it reached.
    pub role: Role,
    /// The method.
    pub method: Method,
    /// The path.
    pub path: String,
    /// The query, if any.
    pub query: Option<String>,
    /// The headers.
    pub headers: HeaderMap,
    /// The body.
    pub body: Bytes,
    /// The status the fake answered (for `/mcp`, the fake's own 401/403, or the upstream's).
    pub status: u16,
}

impl SeenRequest {
    /// A query parameter (for `/authorize`).
    pub fn query_param(&self, name: &str) -> Option<String> {
        pairs(self.query.as_deref().unwrap_or_default().as_bytes(), name)
    }

    /// A form field of the body (for `/token`).
    pub fn form(&self, name: &str) -> Option<String> {
        pairs(&self.body, name)
    }
}

fn pairs(bytes: &[u8], name: &str) -> Option<String> {
    url::form_urlencoded::parse(bytes)
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.into_owned())
}

struct Code {
    challenge: String,
    client_id: String,
    redirect_uri: String,
    resource: String,
    scope: Option<String>,
}

#[derive(Default)]
struct Issued {
    clients: HashMap<String, (Option<String>, String)>,
    codes: HashMap<String, Code>,
    /// Device code -> what it was asked for, and the person's answer.
    devices: HashMap<String, Device>,
    /// Access token -> (expiry, scope, the thumbprint of the DPoP key it is bound to).
    access: HashMap<String, (Instant, Option<String>, Option<String>)>,
    refresh: HashMap<String, Option<String>>,
    /// The origin of the authorization server that issued each client id, code, access and
    /// refresh token (pre-registered clients have none: both take them).
    owner: HashMap<String, String>,
    counter: u64,
}

struct State {
    options: Mutex<FakeAuthOptions>,
    seen: Mutex<Vec<SeenRequest>>,
    issued: Mutex<Issued>,
    resource_origin: String,
    auth_origin: String,
    second_origin: String,
    upstream: String,
    client: HyperClient<HttpConnector, Full<Bytes>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

type Body = BoxBody<Bytes, hyper::Error>;

/// The running fake. It stops with the runtime.
#[derive(Clone)]
pub struct FakeAuth {
    state: Arc<State>,
}

impl std::fmt::Debug for FakeAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FakeAuth")
            .field("url", &self.url())
            .field("issuer", &self.issuer())
            .finish_non_exhaustive()
    }
}

impl FakeAuth {
    /// Starts the MCP face, the authorization server face and the real MCP server behind
    /// them, each on a free loopback port.
    pub async fn start(options: FakeAuthOptions) -> Self {
        let (upstream_listener, upstream_addr) = mcp_http::bind("127.0.0.1:0".parse().unwrap())
            .await
            .unwrap();
        tokio::spawn(mcp_http::serve_http(
            upstream_listener,
            upstream_config(),
            Tools,
        ));
        let resource = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let auth = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let second = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let state = Arc::new(State {
            options: Mutex::new(options),
            seen: Mutex::default(),
            issued: Mutex::default(),
            resource_origin: format!("http://127.0.0.1:{}", resource.local_addr().unwrap().port()),
            auth_origin: format!("http://127.0.0.1:{}", auth.local_addr().unwrap().port()),
            second_origin: format!("http://127.0.0.1:{}", second.local_addr().unwrap().port()),
            upstream: format!("http://127.0.0.1:{}/mcp", upstream_addr.port()),
            client: HyperClient::builder(TokioExecutor::new()).build_http(),
        });
        serve(resource, Role::Resource, Arc::clone(&state));
        serve(auth, Role::Auth, Arc::clone(&state));
        serve(second, Role::SecondAuth, Arc::clone(&state));
        Self { state }
    }

    /// The protected MCP endpoint, `http://127.0.0.1:<port>/mcp`.
    pub fn url(&self) -> String {
        format!("{}/mcp", self.state.resource_origin)
    }

    /// The issuer (with its path), as the metadata states it when not told to lie.
    pub fn issuer(&self) -> String {
        issuer(&self.state, &lock(&self.state.options))
    }

    /// The resource the protected resource metadata states.
    pub fn resource(&self) -> String {
        let o = lock(&self.state.options);
        prm_resource(&self.state, &o)
    }

    /// Changes the behaviour from now on.
    pub fn set(&self, f: impl FnOnce(&mut FakeAuthOptions)) {
        f(&mut lock(&self.state.options));
    }

    /// Every request seen so far, in order.
    pub fn seen(&self) -> Vec<SeenRequest> {
        lock(&self.state.seen).clone()
    }

    /// The requests seen at one path (`/authorize`, `/token`, `/register`, `/mcp`, ...).
    pub fn seen_at(&self, path: &str) -> Vec<SeenRequest> {
        self.seen().into_iter().filter(|s| s.path == path).collect()
    }

    /// The issuer of the second authorization server (see [`FakeAuthOptions::moved`]).
    pub fn second_issuer(&self) -> String {
        let o = lock(&self.state.options);
        format!("{}{}", self.state.second_origin, o.issuer_path)
    }

    /// How many token requests of `grant_type` (`authorization_code`, `refresh_token`, …)
    /// either authorization server answered so far, successful or not.
    pub fn token_requests(&self, grant_type: &str) -> usize {
        self.seen_at(&format!("{}/token", lock(&self.state.options).issuer_path))
            .iter()
            .filter(|r| r.form("grant_type").as_deref() == Some(grant_type))
            .count()
    }

    /// Invalidates every access token (the next MCP request gets 401; refresh tokens live).
    pub fn revoke_access_tokens(&self) {
        lock(&self.state.issued).access.clear();
    }

    /// Invalidates every refresh token (the next refresh gets `invalid_grant`).
    pub fn revoke_refresh_tokens(&self) {
        lock(&self.state.issued).refresh.clear();
    }
}

fn serve(listener: TcpListener, role: Role, state: Arc<State>) {
    crate::serve::spawn_http1(listener, None, move |req| {
        let state = Arc::clone(&state);
        async move { answer(&state, role, req).await }
    });
}

/// The issuer the protected resource metadata names.
fn issuer(state: &State, o: &FakeAuthOptions) -> String {
    format!("{}{}", as_origin(state, o, None), o.issuer_path)
}

/// The origin of the authorization server reached as `role`, or (`None`) of the one the
/// protected resource metadata names.
fn as_origin<'a>(state: &'a State, o: &FakeAuthOptions, role: Option<Role>) -> &'a str {
    match role {
        _ if o.on_server_origin => &state.resource_origin,
        Some(Role::SecondAuth) => &state.second_origin,
        None if o.moved => &state.second_origin,
        _ => &state.auth_origin,
    }
}

/// Whether `id` (a client id, code or token) may be used at the authorization server
/// `origin`: it issued it, or no one did (a pre-registered client).
fn owned_by(issued: &Issued, id: &str, origin: &str) -> bool {
    issued.owner.get(id).is_none_or(|o| o == origin)
}

fn prm_resource(state: &State, o: &FakeAuthOptions) -> String {
    o.prm_resource.clone().unwrap_or_else(|| {
        if o.prm == PrmLocation::Root {
            state.resource_origin.clone()
        } else {
            format!("{}/mcp", state.resource_origin)
        }
    })
}

fn full(status: StatusCode, ctype: &str, body: impl Into<Bytes>) -> Response<Body> {
    let mut r = Response::new(
        Full::new(body.into())
            .map_err(|never: Infallible| match never {})
            .boxed(),
    );
    *r.status_mut() = status;
    if !ctype.is_empty() {
        r.headers_mut()
            .insert(header::CONTENT_TYPE, HeaderValue::from_str(ctype).unwrap());
    }
    r
}

fn json_answer(status: StatusCode, value: &Value) -> Response<Body> {
    full(status, "application/json", value.to_string())
}

fn oauth_error(status: StatusCode, error: &str, description: &str) -> Response<Body> {
    json_answer(
        status,
        &json!({"error": error, "error_description": description}),
    )
}

async fn answer(state: &State, role: Role, req: Request<Incoming>) -> Response<Body> {
    let (parts, body) = req.into_parts();
    let bytes = body
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let response = route(state, role, &parts, bytes.clone()).await;
    lock(&state.seen).push(SeenRequest {
        role,
        method: parts.method.clone(),
        path: parts.uri.path().to_owned(),
        query: parts.uri.query().map(str::to_owned),
        headers: parts.headers.clone(),
        body: bytes,
        status: response.status().as_u16(),
    });
    response
}

async fn route(
    state: &State,
    role: Role,
    parts: &http::request::Parts,
    body: Bytes,
) -> Response<Body> {
    let o = lock(&state.options).clone();
    let path = parts.uri.path();
    let auth_here = (role != Role::Resource) != o.on_server_origin;
    // The authorization server this request reached.
    let here = as_origin(state, &o, Some(role)).to_owned();
    let not_found = || full(StatusCode::NOT_FOUND, "", "");
    if role == Role::Resource {
        let prm_path = match o.prm {
            PrmLocation::Header => Some("/custom/prm"),
            PrmLocation::PathInserted => Some("/.well-known/oauth-protected-resource/mcp"),
            PrmLocation::Root => Some("/.well-known/oauth-protected-resource"),
            PrmLocation::None => None,
        };
        if parts.method == Method::GET && Some(path) == prm_path {
            let mut doc = json!({
                "resource": prm_resource(state, &o),
                "authorization_servers": [issuer(state, &o)],
            });
            if let Some(scopes) = &o.scopes_supported {
                doc["scopes_supported"] = json!(scopes);
            }
            return json_answer(StatusCode::OK, &doc);
        }
        if path == "/mcp" {
            return mcp(state, &o, parts, body).await;
        }
    }
    if !auth_here {
        return not_found();
    }
    let ip = o.issuer_path.as_str();
    let metadata_path = match o.metadata {
        AsMetadata::OAuth => Some(format!("/.well-known/oauth-authorization-server{ip}")),
        AsMetadata::OpenId if ip.is_empty() => Some("/.well-known/openid-configuration".into()),
        AsMetadata::OpenId => Some(format!("{ip}/.well-known/openid-configuration")),
        AsMetadata::None => None,
    };
    if parts.method == Method::GET && metadata_path.as_deref() == Some(path) {
        return json_answer(StatusCode::OK, &metadata(&here, &o));
    }
    // With no metadata the 2025-03-26 default endpoints are at the origin's root.
    let under = |name: &str| {
        if o.metadata == AsMetadata::None {
            path == format!("/{name}")
        } else {
            path == format!("{ip}/{name}")
        }
    };
    if parts.method == Method::GET && under("authorize") {
        return authorize(state, &here, &o, parts);
    }
    if parts.method == Method::POST && under("token") {
        return token(state, &here, &o, parts, &body);
    }
    if o.device && parts.method == Method::POST && under("device") {
        return device_authorization(state, &issuer(state, &o), &o, parts, &body);
    }
    if o.device && parts.method == Method::GET && under("activate") {
        return activate(state, parts);
    }
    if parts.method == Method::POST
        && under("register")
        && (o.dcr || o.metadata == AsMetadata::None)
    {
        return register(state, &here, &o, &body);
    }
    not_found()
}

fn metadata(here: &str, o: &FakeAuthOptions) -> Value {
    let base = format!("{here}{}", o.issuer_path);
    let mut doc = json!({
        "issuer": o.wrong_issuer.clone().unwrap_or_else(|| base.clone()),
        "authorization_endpoint": o.authorization_endpoint.clone()
            .unwrap_or_else(|| format!("{base}/authorize")),
        "token_endpoint": format!("{base}/token"),
        "response_types_supported": ["code"],
        "grant_types_supported": ["authorization_code", "refresh_token", "client_credentials"],
        "token_endpoint_auth_methods_supported": o.token_auth_methods,
    });
    if o.dcr {
        doc["registration_endpoint"] = json!(format!("{base}/register"));
    }
    if o.device {
        doc["device_authorization_endpoint"] = json!(format!("{base}/device"));
    }
    if o.pkce_advertised {
        doc["code_challenge_methods_supported"] = json!(["S256"]);
    }
    if o.cimd {
        doc["client_id_metadata_document_supported"] = json!(true);
    }
    if o.iss_advertised {
        doc["authorization_response_iss_parameter_supported"] = json!(true);
    }
    if o.dpop {
        doc["dpop_signing_alg_values_supported"] = json!(["ES256"]);
    }
    if o.metadata == AsMetadata::OpenId {
        doc["jwks_uri"] = json!(format!("{base}/jwks"));
        doc["subject_types_supported"] = json!(["public"]);
        doc["id_token_signing_alg_values_supported"] = json!(["RS256"]);
    }
    doc
}

fn next(issued: &mut Issued, prefix: &str) -> String {
    issued.counter += 1;
    format!("{prefix}-{}", issued.counter)
}

fn known_client(issued: &Issued, o: &FakeAuthOptions, client_id: &str) -> bool {
    issued.clients.contains_key(client_id)
        || o.pre_registered
            .as_ref()
            .is_some_and(|(id, _)| id == client_id)
        || (o.cimd && client_id.starts_with("https://"))
}

fn authorize(
    state: &State,
    here: &str,
    o: &FakeAuthOptions,
    parts: &http::request::Parts,
) -> Response<Body> {
    let q: HashMap<String, String> =
        url::form_urlencoded::parse(parts.uri.query().unwrap_or_default().as_bytes())
            .into_owned()
            .collect();
    let get = |k: &str| q.get(k).cloned().unwrap_or_default();
    let mut issued = lock(&state.issued);
    let problem = if get("response_type") != "code" {
        Some("response_type must be code")
    } else if !known_client(&issued, o, &get("client_id"))
        || !owned_by(&issued, &get("client_id"), here)
    {
        Some("unknown client_id")
    } else if get("code_challenge").is_empty() || get("code_challenge_method") != "S256" {
        Some("PKCE S256 is required")
    } else if get("resource").is_empty() {
        Some("resource is required")
    } else {
        None
    };
    let Ok(mut back) = url::Url::parse(&get("redirect_uri")) else {
        return full(StatusCode::BAD_REQUEST, "text/plain", "bad redirect_uri");
    };
    if let Some(problem) = problem {
        return full(StatusCode::BAD_REQUEST, "text/plain", problem);
    }
    let code = next(&mut issued, "code");
    issued.owner.insert(code.clone(), here.to_owned());
    issued.codes.insert(
        code.clone(),
        Code {
            challenge: get("code_challenge"),
            client_id: get("client_id"),
            redirect_uri: get("redirect_uri"),
            resource: get("resource"),
            scope: q.get("scope").cloned(),
        },
    );
    {
        let mut pairs = back.query_pairs_mut();
        pairs.append_pair("code", &code);
        if let Some(st) = q.get("state") {
            pairs.append_pair("state", st);
        }
        match o.iss_in_redirect.as_deref() {
            Some("") => {
                pairs.append_pair("iss", &format!("{here}{}", o.issuer_path));
            }
            Some(iss) => {
                pairs.append_pair("iss", iss);
            }
            None => {}
        }
    }
    let mut r = full(StatusCode::FOUND, "", "");
    if let Ok(location) = HeaderValue::from_str(back.as_str()) {
        r.headers_mut().insert(header::LOCATION, location);
    }
    r
}

/// Who the client says it is at `/token`, and how: `(client_id, secret, method)`.
fn client_of(
    parts: &http::request::Parts,
    form: &HashMap<String, String>,
) -> Option<(String, Option<String>, &'static str)> {
    if let Some(basic) = parts
        .headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Basic "))
    {
        let decoded = STANDARD.decode(basic).ok()?;
        let text = String::from_utf8(decoded).ok()?;
        let (id, secret) = text.split_once(':')?;
        let dec = |s: &str| {
            url::form_urlencoded::parse(format!("x={s}").as_bytes())
                .next()
                .map(|(_, v)| v.into_owned())
                .unwrap_or_default()
        };
        return Some((dec(id), Some(dec(secret)), "client_secret_basic"));
    }
    let id = form.get("client_id")?.clone();
    if form.contains_key("client_assertion") {
        return Some((id, None, "private_key_jwt"));
    }
    match form.get("client_secret") {
        Some(secret) => Some((id, Some(secret.clone()), "client_secret_post")),
        None => Some((id, None, "none")),
    }
}

fn token(
    state: &State,
    here: &str,
    o: &FakeAuthOptions,
    parts: &http::request::Parts,
    body: &[u8],
) -> Response<Body> {
    let form: HashMap<String, String> = url::form_urlencoded::parse(body).into_owned().collect();
    // The proof first: a request refused for its nonce must not have spent its code.
    let mut jkt = None;
    if o.dpop && parts.headers.contains_key(DPOP) {
        match check_proof(&parts.headers, &Method::POST, &target(parts), None) {
            Err(problem) => {
                return oauth_error(StatusCode::BAD_REQUEST, "invalid_dpop_proof", problem);
            }
            Ok(proof) if !nonce_ok(o, &proof) => {
                let mut r = oauth_error(StatusCode::BAD_REQUEST, "use_dpop_nonce", "a nonce");
                set_nonce(&mut r, o);
                return r;
            }
            Ok(proof) => jkt = Some(proof.jkt),
        }
    }
    let Some((client_id, secret, method)) = client_of(parts, &form) else {
        return oauth_error(StatusCode::UNAUTHORIZED, "invalid_client", "no client");
    };
    let mut issued = lock(&state.issued);
    let expected_secret = issued
        .clients
        .get(&client_id)
        .map(|(s, _)| s.clone())
        .or_else(|| {
            o.pre_registered
                .as_ref()
                .filter(|(id, _)| *id == client_id)
                .map(|(_, s)| s.clone())
        });
    let known = known_client(&issued, o, &client_id) && owned_by(&issued, &client_id, here);
    let method_ok = o.token_auth_methods.iter().any(|m| m == method) || method == "private_key_jwt";
    if !known || !method_ok || expected_secret.flatten() != secret {
        return oauth_error(
            StatusCode::UNAUTHORIZED,
            "invalid_client",
            &format!("client authentication failed ({method})"),
        );
    }
    let get = |k: &str| form.get(k).cloned().unwrap_or_default();
    let resource = prm_resource(state, o);
    let scope = match get("grant_type").as_str() {
        "authorization_code" => {
            let theirs = !owned_by(&issued, &get("code"), here);
            let Some(code) = issued.codes.remove(&get("code")).filter(|_| !theirs) else {
                return oauth_error(StatusCode::BAD_REQUEST, "invalid_grant", "unknown code");
            };
            let computed = URL_SAFE_NO_PAD.encode(Sha256::digest(get("code_verifier").as_bytes()));
            if computed != code.challenge {
                return oauth_error(
                    StatusCode::BAD_REQUEST,
                    "invalid_grant",
                    "PKCE verifier mismatch",
                );
            }
            if code.client_id != client_id || code.redirect_uri != get("redirect_uri") {
                return oauth_error(
                    StatusCode::BAD_REQUEST,
                    "invalid_grant",
                    "client or redirect_uri mismatch",
                );
            }
            if get("resource") != code.resource
                || (o.prm != PrmLocation::None && code.resource != resource)
            {
                return oauth_error(
                    StatusCode::BAD_REQUEST,
                    "invalid_target",
                    "resource mismatch",
                );
            }
            code.scope
        }
        "refresh_token" => {
            let rt = get("refresh_token");
            let theirs = !owned_by(&issued, &rt, here);
            let Some(scope) = issued.refresh.get(&rt).cloned().filter(|_| !theirs) else {
                return oauth_error(
                    StatusCode::BAD_REQUEST,
                    "invalid_grant",
                    "refresh token is not valid",
                );
            };
            if o.rotate_refresh_tokens {
                issued.refresh.remove(&rt);
            }
            scope
        }
        "client_credentials" => form.get("scope").cloned(),
        DEVICE_CODE_GRANT => {
            let code = get("device_code");
            let Some(Device {
                client_id: device_client,
                resource: for_resource,
                scope,
                approved: answer,
                ..
            }) = issued.devices.get(&code).cloned()
            else {
                return oauth_error(StatusCode::BAD_REQUEST, "invalid_grant", "unknown code");
            };
            let scripted = {
                let mut options = lock(&state.options);
                (!options.device_answers.is_empty()).then(|| options.device_answers.remove(0))
            };
            let error = match (scripted, answer) {
                (Some(error), _) => Some(error),
                (None, None) => Some("authorization_pending".to_owned()),
                (None, Some(false)) => Some("access_denied".to_owned()),
                (None, Some(true))
                    if device_client != client_id || for_resource != get("resource") =>
                {
                    Some("invalid_grant".to_owned())
                }
                (None, Some(true)) => None,
            };
            if let Some(error) = error {
                if error != "authorization_pending" && error != "slow_down" {
                    issued.devices.remove(&code);
                }
                return oauth_error(StatusCode::BAD_REQUEST, &error, "device code poll");
            }
            issued.devices.remove(&code);
            scope
        }
        _ => {
            return oauth_error(
                StatusCode::BAD_REQUEST,
                "unsupported_grant_type",
                "unknown grant",
            );
        }
    };
    let scope = match (&o.withheld_scope, scope) {
        (Some(withheld), Some(scope)) => {
            let kept: Vec<&str> = scope.split_whitespace().filter(|s| s != withheld).collect();
            (!kept.is_empty()).then(|| kept.join(" "))
        }
        (_, scope) => scope,
    };
    let access = next(&mut issued, "access");
    issued.owner.insert(access.clone(), here.to_owned());
    let token_type = if jkt.is_some() { "DPoP" } else { "Bearer" };
    issued.access.insert(
        access.clone(),
        (Instant::now() + o.access_token_lifetime, scope.clone(), jkt),
    );
    let mut answer = json!({
        "access_token": access,
        "token_type": token_type,
        "expires_in": o.access_token_lifetime.as_secs(),
    });
    if let Some(scope) = &scope {
        answer["scope"] = json!(scope);
    }
    let grant = get("grant_type");
    let new_refresh = o.refresh_tokens
        && (grant == "authorization_code"
            || grant == DEVICE_CODE_GRANT
            || (grant == "refresh_token" && o.rotate_refresh_tokens));
    if new_refresh {
        let refresh = next(&mut issued, "refresh");
        issued.owner.insert(refresh.clone(), here.to_owned());
        issued.refresh.insert(refresh.clone(), scope);
        answer["refresh_token"] = json!(refresh);
    }
    json_answer(StatusCode::OK, &answer)
}

/// RFC 8628's `grant_type` of a device-code poll.
const DEVICE_CODE_GRANT: &str = "urn:ietf:params:oauth:grant-type:device_code";

/// A device authorization: what it was asked for, and the person's answer (`None` while
/// pending).
#[derive(Clone)]
struct Device {
    user_code: String,
    client_id: String,
    resource: String,
    scope: Option<String>,
    approved: Option<bool>,
}

/// The device authorization endpoint: a device code for a known client and a resource, with
/// a user code the person enters at `/activate`.
fn device_authorization(
    state: &State,
    issuer: &str,
    o: &FakeAuthOptions,
    parts: &http::request::Parts,
    body: &[u8],
) -> Response<Body> {
    let form: HashMap<String, String> = url::form_urlencoded::parse(body).into_owned().collect();
    let Some((client_id, _, _)) = client_of(parts, &form) else {
        return oauth_error(StatusCode::UNAUTHORIZED, "invalid_client", "no client");
    };
    let mut issued = lock(&state.issued);
    if !known_client(&issued, o, &client_id) {
        return oauth_error(StatusCode::UNAUTHORIZED, "invalid_client", "unknown client");
    }
    let Some(resource) = form.get("resource").cloned() else {
        return oauth_error(
            StatusCode::BAD_REQUEST,
            "invalid_target",
            "resource is required",
        );
    };
    let device_code = next(&mut issued, "device");
    issued.counter += 1;
    let user_code = format!("FAKE-{:04}", issued.counter);
    issued.devices.insert(
        device_code.clone(),
        Device {
            user_code: user_code.clone(),
            client_id,
            resource,
            scope: form.get("scope").cloned(),
            approved: None,
        },
    );
    let page = format!("{issuer}/activate");
    json_answer(
        StatusCode::OK,
        &json!({
            "device_code": device_code,
            "user_code": user_code,
            "verification_uri": page,
            "verification_uri_complete": format!("{page}?user_code={user_code}"),
            "expires_in": o.device_expires_in,
            "interval": o.device_interval,
        }),
    )
}

/// The person's page: approves the device code of `user_code` (or denies it with `deny=1`).
fn activate(state: &State, parts: &http::request::Parts) -> Response<Body> {
    let query = parts.uri.query().unwrap_or_default().as_bytes();
    let user_code = pairs(query, "user_code").unwrap_or_default();
    let approve = pairs(query, "deny").is_none();
    let mut issued = lock(&state.issued);
    match issued
        .devices
        .values_mut()
        .find(|d| d.user_code == user_code)
    {
        Some(device) => {
            device.approved = Some(approve);
            let said = if approve { "approved" } else { "denied" };
            full(StatusCode::OK, "text/plain", said)
        }
        None => full(StatusCode::NOT_FOUND, "text/plain", "no such code"),
    }
}

fn register(state: &State, here: &str, o: &FakeAuthOptions, body: &[u8]) -> Response<Body> {
    let Ok(request) = serde_json::from_slice::<Value>(body) else {
        return oauth_error(
            StatusCode::BAD_REQUEST,
            "invalid_client_metadata",
            "not JSON",
        );
    };
    if !request["redirect_uris"].is_array() {
        return oauth_error(
            StatusCode::BAD_REQUEST,
            "invalid_redirect_uri",
            "redirect_uris is required",
        );
    }
    let mut issued = lock(&state.issued);
    let client_id = next(&mut issued, "client");
    issued.owner.insert(client_id.clone(), here.to_owned());
    let method = o
        .registration_method
        .clone()
        .unwrap_or_else(|| "none".to_owned());
    let secret = (method != "none").then(|| next(&mut issued, "secret"));
    issued
        .clients
        .insert(client_id.clone(), (secret.clone(), method.clone()));
    let mut answer = json!({
        "client_id": client_id,
        "redirect_uris": request["redirect_uris"],
        "token_endpoint_auth_method": method,
    });
    if let Some(secret) = secret {
        answer["client_secret"] = json!(secret);
    }
    json_answer(StatusCode::CREATED, &answer)
}

async fn mcp(
    state: &State,
    o: &FakeAuthOptions,
    parts: &http::request::Parts,
    body: Bytes,
) -> Response<Body> {
    let authorization = parts
        .headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let (scheme, token) = authorization.split_once(' ').unwrap_or_default();
    let live = {
        let issued = lock(&state.issued);
        let current = as_origin(state, o, None);
        issued
            .access
            .get(token)
            .filter(|_| owned_by(&issued, token, current))
            .filter(|(until, _, _)| *until > Instant::now())
            .map(|(_, scope, jkt)| (scope.clone(), jkt.clone()))
    };
    // A bound token counts only as `DPoP`, with a proof of its key for this very request; a
    // bearer token only as `Bearer`.
    let scope = match live {
        Some((scope, Some(jkt))) if scheme == "DPoP" => {
            let url = target(parts);
            match check_proof(&parts.headers, &parts.method, &url, Some(token)) {
                Ok(proof) if proof.jkt != jkt => {
                    return dpop_refusal(o, "invalid_token", false);
                }
                Ok(proof) if !nonce_ok(o, &proof) => {
                    return dpop_refusal(o, "use_dpop_nonce", true);
                }
                Ok(_) => Some(scope),
                Err(_) => return dpop_refusal(o, "invalid_dpop_proof", false),
            }
        }
        Some((scope, None)) if scheme == "Bearer" => Some(scope),
        _ => None,
    };
    let Some(scope) = scope else {
        let mut challenge = r#"Bearer error="invalid_token""#.to_owned();
        if let Some(url) = &o.resource_metadata_url {
            challenge.push_str(&format!(r#", resource_metadata="{url}""#));
        } else if o.prm == PrmLocation::Header {
            challenge.push_str(&format!(
                r#", resource_metadata="{}/custom/prm""#,
                state.resource_origin
            ));
        }
        if let Some(s) = &o.challenge_scope {
            challenge.push_str(&format!(r#", scope="{s}""#));
        }
        let mut r = full(StatusCode::UNAUTHORIZED, "", "");
        if let Ok(v) = HeaderValue::from_str(&challenge) {
            r.headers_mut().insert(header::WWW_AUTHENTICATE, v);
        }
        // A resource that takes DPoP-bound tokens says so beside `Bearer` (RFC 9449 §7.1).
        if o.dpop {
            r.headers_mut().append(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static(r#"DPoP algs="ES256""#),
            );
        }
        return r;
    };
    if let Some(required) = &o.required_scope {
        let granted = scope.unwrap_or_default();
        if !granted.split_whitespace().any(|s| s == required) {
            let challenge = format!(r#"Bearer error="insufficient_scope", scope="{required}""#);
            let mut r = full(StatusCode::FORBIDDEN, "", "");
            if let Ok(v) = HeaderValue::from_str(&challenge) {
                r.headers_mut().insert(header::WWW_AUTHENTICATE, v);
            }
            return r;
        }
    }
    forward(state, parts, body).await
}

/// RFC 9449's request header.
const DPOP: &str = "dpop";

/// What a well-formed proof says.
struct Proof {
    /// RFC 7638 thumbprint of its `jwk`, base64url.
    jkt: String,
    nonce: Option<String>,
}

/// The URL a request was sent to, as the client saw it (`http`, its `Host`, its path).
fn target(parts: &http::request::Parts) -> String {
    let host = parts
        .headers
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    format!("http://{host}{}", parts.uri.path())
}

/// Checks the one `DPoP` proof of a request (RFC 9449 §4.3), all but its signature: `typ`,
/// `alg` ES256, a public P-256 `jwk`, `jti`, `htm`, `htu`, `iat` within five minutes, and
/// `ath` for an access token.
fn check_proof(
    headers: &HeaderMap,
    method: &Method,
    url: &str,
    token: Option<&str>,
) -> Result<Proof, &'static str> {
    let mut all = headers.get_all(DPOP).iter();
    let (Some(proof), None) = (all.next(), all.next()) else {
        return Err("exactly one DPoP header is needed");
    };
    let proof = proof.to_str().map_err(|_| "not text")?;
    let mut parts = proof.split('.');
    let mut json = || -> Option<Value> {
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts.next()?).ok()?).ok()
    };
    let (Some(head), Some(claims)) = (json(), json()) else {
        return Err("not a JWT");
    };
    let jwk = &head["jwk"];
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let iat = claims["iat"].as_u64().unwrap_or_default();
    let ath = token.map(|t| URL_SAFE_NO_PAD.encode(Sha256::digest(t.as_bytes())));
    let problem = if head["typ"] != "dpop+jwt" {
        Some("typ")
    } else if head["alg"] != "ES256" || jwk["kty"] != "EC" || jwk["crv"] != "P-256" {
        Some("alg or jwk")
    } else if !jwk["d"].is_null() {
        Some("a private key in jwk")
    } else if !claims["jti"].is_string() || claims["htm"] != method.as_str() {
        Some("jti or htm")
    } else if claims["htu"] != url {
        Some("htu")
    } else if now.abs_diff(iat) > 300 {
        Some("iat")
    } else if ath.is_some_and(|a| claims["ath"] != a.as_str()) {
        Some("ath")
    } else {
        None
    };
    if let Some(problem) = problem {
        return Err(problem);
    }
    let (Some(x), Some(y)) = (jwk["x"].as_str(), jwk["y"].as_str()) else {
        return Err("jwk without x and y");
    };
    let canonical = format!(r#"{{"crv":"P-256","kty":"EC","x":"{x}","y":"{y}"}}"#);
    Ok(Proof {
        jkt: URL_SAFE_NO_PAD.encode(Sha256::digest(canonical.as_bytes())),
        nonce: claims["nonce"].as_str().map(str::to_owned),
    })
}

fn nonce_ok(o: &FakeAuthOptions, proof: &Proof) -> bool {
    o.dpop_nonce.is_none() || o.dpop_nonce == proof.nonce
}

fn set_nonce(r: &mut Response<Body>, o: &FakeAuthOptions) {
    if let Some(v) = o
        .dpop_nonce
        .as_deref()
        .and_then(|n| HeaderValue::from_str(n).ok())
    {
        r.headers_mut().insert("dpop-nonce", v);
    }
}

/// A 401 with a `DPoP` challenge; with `nonce`, the nonce to use.
fn dpop_refusal(o: &FakeAuthOptions, error: &str, nonce: bool) -> Response<Body> {
    let mut r = full(StatusCode::UNAUTHORIZED, "", "");
    let challenge = format!(r#"DPoP error="{error}", algs="ES256""#);
    if let Ok(v) = HeaderValue::from_str(&challenge) {
        r.headers_mut().insert(header::WWW_AUTHENTICATE, v);
    }
    if nonce {
        set_nonce(&mut r, o);
    }
    r
}

/// Sends the request on to the real MCP server, without the bearer token (never passed on).
async fn forward(state: &State, parts: &http::request::Parts, body: Bytes) -> Response<Body> {
    let mut request = Request::new(Full::new(body));
    *request.method_mut() = parts.method.clone();
    *request.uri_mut() = match state.upstream.parse() {
        Ok(uri) => uri,
        Err(_) => return full(StatusCode::BAD_GATEWAY, "", ""),
    };
    for (name, value) in &parts.headers {
        if name != header::AUTHORIZATION && name != header::HOST && name != DPOP {
            request.headers_mut().append(name.clone(), value.clone());
        }
    }
    match state.client.request(request).await {
        Ok(answer) => answer.map(BodyExt::boxed),
        Err(_) => full(StatusCode::BAD_GATEWAY, "text/plain", "upstream failed"),
    }
}

fn upstream_config() -> HttpServerConfig {
    let mut server = ServerConfig::new(Implementation::new("fake-auth-mcp".into(), "0".into()));
    server.capabilities.tools = Some(ListChangedCapability::new());
    HttpServerConfig::new(server)
}

/// The MCP server behind the fake: one tool, `echo`, which answers `echoed`.
struct Tools;

impl Handler for Tools {
    async fn handle(
        &self,
        request: ClientRequest,
        _context: RequestContext,
    ) -> Result<RawJson, ErrorObject> {
        let encoded = match request {
            ClientRequest::ListTools(_) => {
                RawJson::encode(&ListToolsResult::new(vec![Tool::new("echo".into())]))
            }
            ClientRequest::CallTool(_) => {
                RawJson::encode(&CallToolResult::new(vec![ContentBlock::text("echoed")]))
            }
            _ => return Err(ErrorObject::new(-32601, "method not found".into())),
        };
        encoded.map_err(|_| ErrorObject::new(-32603, "encoding failed".into()))
    }
}
