//! A fake MCP server and authorization server as an in-memory [`HttpClient`] and
//! [`UserAgent`] (oauth2-rs style: no network), with a fake clock and counter randomness.
//! Every knob is a field of [`Config`]; every request is logged for the tests to assert on.

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::pin::pin;
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

use base64::Engine as _;
use mcp_oauth::device::{DEVICE_CODE_GRANT, DeviceVerification};
use mcp_oauth::{
    Authorizer, BoxError, BoxFuture, ClientAssertionSigner, Clock, DeviceUserAgent, DpopKey,
    DpopSigner, HttpClient, HttpRequest, HttpResponse, Pkce, PkceVerifier, Randomness, Services,
    Settings, TransportError, Url, UserAgent, flow,
};
use serde_json::{Value, json};

pub(crate) const MCP: &str = "https://mcp.example.com/mcp";
pub(crate) const ORIGIN: &str = "https://mcp.example.com";
pub(crate) const AS: &str = "https://auth.example.com";
pub(crate) const REDIRECT: &str = "http://127.0.0.1:33418/callback";
/// The fake signer's signature of every client assertion; base64url, it ends the assertion
/// as [`SIGNATURE_B64`].
const SIGNATURE: &[u8] = b"sig-secret";
/// [`SIGNATURE`] as the assertion carries it, base64url.
pub(crate) const SIGNATURE_B64: &str = "c2lnLXNlY3JldA";
pub(crate) const CIMD: &str = "https://app.example.com/client.json";
pub(crate) const IDP: &str = "https://idp.example.com";

/// Runs a future whose fakes are always ready: no runtime needed, none wanted in this crate.
pub(crate) fn block_on<F: Future>(future: F) -> F::Output {
    let mut future = pin!(future);
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        if let Poll::Ready(out) = future.as_mut().poll(&mut cx) {
            return out;
        }
    }
}

/// Where the protected resource metadata is served.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Prm {
    /// At `/custom/prm`, named in the challenge.
    Custom,
    /// At the path-inserted well-known URL.
    PathInserted,
    /// At the root well-known URL (its `resource` is then the origin).
    Root,
    /// Nowhere.
    None,
}

/// How the fake MCP server says it takes DPoP-bound tokens (with `Config::dpop`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RsDpop {
    /// A `DPoP` challenge beside the `Bearer` one (RFC 9449 §7.1).
    Challenge,
    /// `dpop_signing_alg_values_supported` in its protected resource metadata, `Bearer` alone
    /// in its challenge.
    Metadata,
    /// Nothing: it takes `Bearer` tokens only.
    Never,
}

#[derive(Debug, Clone)]
pub(crate) struct Config {
    pub(crate) prm: Prm,
    pub(crate) prm_resource: Option<String>,
    pub(crate) prm_scopes: Option<Vec<String>>,
    /// The issuer the PRM names.
    pub(crate) issuer: String,
    /// The one URL the AS metadata is served at (`None`: nowhere).
    pub(crate) meta_url: Option<String>,
    /// The `issuer` the metadata states (default: `issuer`).
    pub(crate) meta_issuer: Option<String>,
    pub(crate) pkce: bool,
    pub(crate) dcr: bool,
    pub(crate) cimd: bool,
    pub(crate) auth_methods: Option<Vec<String>>,
    /// What registration answers: secret and method.
    pub(crate) reg_secret: Option<String>,
    pub(crate) reg_method: Option<String>,
    /// Registration is refused with 400 and this body.
    pub(crate) reg_refused: Option<Value>,
    /// The authorization server's `scopes_supported`.
    pub(crate) as_scopes: Option<Vec<String>>,
    pub(crate) iss_supported: bool,
    /// The `iss` in the redirect: `None` none, `Some` that value.
    pub(crate) iss_in_redirect: Option<String>,
    pub(crate) expires_in: Option<u64>,
    /// Every refresh gives a new refresh token and kills the old one.
    pub(crate) rotate: bool,
    /// The token endpoint answers this status with a plain body.
    pub(crate) token_down: Option<u16>,
    /// `/register` on the MCP origin answers 404 (the default-endpoint path).
    pub origin_register_404: bool,
    /// The randomness source fails, as an OS without entropy would.
    pub(crate) no_randomness: bool,
    /// The metadata lists ES256 in `dpop_signing_alg_values_supported`, and a token request
    /// with a proof gets a `DPoP` token.
    pub(crate) dpop: bool,
    /// Proofs at the token endpoint must carry this nonce (400 `use_dpop_nonce` otherwise).
    pub(crate) dpop_nonce: Option<String>,
    /// How the MCP server says it takes DPoP-bound tokens.
    pub(crate) rs_dpop: RsDpop,
    /// The metadata's `authorization_endpoint` instead of `<base>/authorize`.
    pub(crate) authorization_endpoint: Option<String>,
    /// The metadata lists `<base>/device` (RFC 8628); clients registered without the device
    /// grant get `unauthorized_client` there.
    pub(crate) device: bool,
    /// What the token endpoint answers to device-code polls, in order (`authorization_pending`,
    /// `slow_down`, ...); once they are used up, tokens.
    pub(crate) device_answers: Vec<&'static str>,
    /// The device authorization's `interval` (`None`: left out).
    pub(crate) device_interval: Option<u64>,
    /// The device authorization's `expires_in`.
    pub(crate) device_expires_in: u64,
    /// The device authorization's `verification_uri`.
    pub(crate) verification_uri: String,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            prm: Prm::Custom,
            prm_resource: None,
            prm_scopes: None,
            issuer: AS.to_owned(),
            meta_url: Some(format!("{AS}/.well-known/oauth-authorization-server")),
            meta_issuer: None,
            pkce: true,
            dcr: true,
            cimd: false,
            auth_methods: None,
            reg_secret: None,
            reg_method: None,
            reg_refused: None,
            as_scopes: None,
            iss_supported: false,
            iss_in_redirect: None,
            expires_in: Some(3600),
            rotate: true,
            token_down: None,
            origin_register_404: false,
            no_randomness: false,
            dpop: false,
            dpop_nonce: None,
            rs_dpop: RsDpop::Challenge,
            authorization_endpoint: None,
            device: false,
            device_answers: Vec::new(),
            device_interval: Some(5),
            device_expires_in: 600,
            verification_uri: format!("{AS}/activate"),
        }
    }
}

/// One request the fake saw.
#[derive(Debug, Clone)]
pub(crate) struct Logged {
    pub(crate) method: String,
    pub(crate) url: String,
    pub(crate) authorization: Option<String>,
    /// The `DPoP` proof, if any.
    pub(crate) dpop: Option<String>,
    pub(crate) body: String,
}

impl Logged {
    /// A form field of the body.
    pub(crate) fn form(&self, name: &str) -> Option<String> {
        url::form_urlencoded::parse(self.body.as_bytes())
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.into_owned())
    }

    /// The DPoP proof's header and claims (its signature is the fake signer's).
    pub(crate) fn proof(&self) -> Option<(Value, Value)> {
        proof_parts(self.dpop.as_deref()?)
    }
}

/// A proof's header and claims, decoded.
pub(crate) fn proof_parts(jwt: &str) -> Option<(Value, Value)> {
    let mut parts = jwt.split('.');
    let mut json = || {
        let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(parts.next()?)
            .ok()?;
        serde_json::from_slice::<Value>(&bytes).ok()
    };
    Some((json()?, json()?))
}

#[derive(Default)]
struct Issued {
    /// code -> (challenge, client_id, resource, scope)
    codes: HashMap<String, (String, String, String, Option<String>)>,
    live_refresh: HashSet<String>,
    counter: u64,
    /// Clients registered with the device grant, and the device codes issued.
    device_clients: HashSet<String>,
    device_codes: HashSet<String>,
}

/// The fake world: both servers, the browser, the clock and the randomness.
pub(crate) struct World {
    pub(crate) config: Mutex<Config>,
    log: Mutex<Vec<Logged>>,
    authorize_urls: Mutex<Vec<Url>>,
    issued: Mutex<Issued>,
    pub(crate) now_ms: AtomicU64,
    rng: AtomicU8,
    pub(crate) claims: Mutex<Vec<Value>>,
    keys: AtomicU8,
    /// What the device agent was asked to show, and to wait (ms), in order.
    pub(crate) shown: Mutex<Vec<DeviceVerification>>,
    pub(crate) waits: Mutex<Vec<u64>>,
}

impl World {
    pub(crate) fn new(config: Config) -> Arc<Self> {
        Arc::new(Self {
            config: Mutex::new(config),
            log: Mutex::default(),
            authorize_urls: Mutex::default(),
            issued: Mutex::default(),
            now_ms: AtomicU64::new(1_000_000),
            rng: AtomicU8::new(1),
            claims: Mutex::default(),
            keys: AtomicU8::new(1),
            shown: Mutex::default(),
            waits: Mutex::default(),
        })
    }

    pub(crate) fn set(&self, f: impl FnOnce(&mut Config)) {
        f(&mut self.config.lock().unwrap());
    }

    pub(crate) fn log(&self) -> Vec<Logged> {
        self.log.lock().unwrap().clone()
    }

    pub(crate) fn urls(&self) -> Vec<String> {
        self.log()
            .iter()
            .map(|l| format!("{} {}", l.method, l.url))
            .collect()
    }

    pub(crate) fn token_requests(&self) -> Vec<Logged> {
        self.log()
            .into_iter()
            .filter(|l| l.url.ends_with("/token"))
            .collect()
    }

    pub(crate) fn registrations(&self) -> Vec<Logged> {
        self.log()
            .into_iter()
            .filter(|l| l.url.ends_with("/register"))
            .collect()
    }

    pub(crate) fn authorize_urls(&self) -> Vec<Url> {
        self.authorize_urls.lock().unwrap().clone()
    }

    pub(crate) fn advance(&self, ms: u64) {
        self.now_ms.fetch_add(ms, Ordering::SeqCst);
    }

    pub(crate) fn clear_log(&self) {
        self.log.lock().unwrap().clear();
        self.authorize_urls.lock().unwrap().clear();
    }

    /// An authorizer wired to this world.
    pub(crate) fn authorizer(self: &Arc<Self>, settings: Settings) -> Authorizer {
        Authorizer::new(settings, self.services())
    }

    /// Both servers as an HTTP client, for a test that puts something in front of them.
    pub(crate) fn http(self: &Arc<Self>) -> Arc<dyn HttpClient> {
        Arc::new(Http(Arc::clone(self)))
    }

    pub(crate) fn services(self: &Arc<Self>) -> Services {
        let http: Arc<dyn HttpClient> = Arc::new(Http(Arc::clone(self)));
        let random: Arc<dyn Randomness> = self.clone();
        let clock: Arc<dyn Clock> = self.clone();
        let browser: Arc<dyn UserAgent> = self.clone();
        let signer: Arc<dyn ClientAssertionSigner> = self.clone();
        let dpop: Arc<dyn DpopSigner> = self.clone();
        Services::new(http, random, clock)
            .with_user_agent(browser)
            .with_signer(signer)
            .with_dpop(dpop)
    }

    /// Seams for a person's login through the device flow: the world as device agent, with
    /// or without its browser.
    pub(crate) fn device_services(self: &Arc<Self>, browser: bool) -> Services {
        let http: Arc<dyn HttpClient> = Arc::new(Http(Arc::clone(self)));
        let random: Arc<dyn Randomness> = self.clone();
        let clock: Arc<dyn Clock> = self.clone();
        let device: Arc<dyn DeviceUserAgent> = self.clone();
        let services = Services::new(http, random, clock).with_device_agent(device);
        if browser {
            let ua: Arc<dyn UserAgent> = self.clone();
            services.with_user_agent(ua)
        } else {
            services
        }
    }

    pub(crate) fn device_requests(&self) -> Vec<Logged> {
        self.log()
            .into_iter()
            .filter(|l| l.url.ends_with("/device"))
            .collect()
    }

    fn next(&self, prefix: &str) -> String {
        let mut issued = self.issued.lock().unwrap();
        issued.counter += 1;
        format!("{prefix}-{}", issued.counter)
    }

    fn answer(&self, req: &HttpRequest) -> (u16, Value) {
        let c = self.config.lock().unwrap().clone();
        let url = req.uri().to_string();
        let origin_meta = c.meta_url.clone();
        let endpoint_base = if c.meta_url.as_deref().is_some_and(|u| u.starts_with(ORIGIN)) {
            ORIGIN.to_owned()
        } else {
            c.issuer.clone()
        };
        let prm_url = match c.prm {
            Prm::Custom => Some(format!("{ORIGIN}/custom/prm")),
            Prm::PathInserted => Some(format!("{ORIGIN}/.well-known/oauth-protected-resource/mcp")),
            Prm::Root => Some(format!("{ORIGIN}/.well-known/oauth-protected-resource")),
            Prm::None => None,
        };
        if req.method() == http::Method::GET {
            if prm_url.as_deref() == Some(url.as_str()) {
                let resource = c.prm_resource.clone().unwrap_or_else(|| {
                    if c.prm == Prm::Root {
                        ORIGIN.to_owned()
                    } else {
                        MCP.to_owned()
                    }
                });
                let mut doc = json!({"resource": resource, "authorization_servers": [c.issuer]});
                if let Some(scopes) = &c.prm_scopes {
                    doc["scopes_supported"] = json!(scopes);
                }
                if c.dpop && c.rs_dpop == RsDpop::Metadata {
                    doc["dpop_signing_alg_values_supported"] = json!(["ES256"]);
                }
                return (200, doc);
            }
            if origin_meta.as_deref() == Some(url.as_str()) {
                let issuer = c.meta_issuer.clone().unwrap_or_else(|| {
                    if endpoint_base == ORIGIN {
                        ORIGIN.to_owned()
                    } else {
                        c.issuer.clone()
                    }
                });
                let mut doc = json!({
                    "issuer": issuer,
                    "authorization_endpoint": c.authorization_endpoint.clone()
                        .unwrap_or_else(|| format!("{endpoint_base}/authorize")),
                    "token_endpoint": format!("{endpoint_base}/token"),
                });
                if c.pkce {
                    doc["code_challenge_methods_supported"] = json!(["S256"]);
                }
                if c.dcr {
                    doc["registration_endpoint"] = json!(format!("{endpoint_base}/register"));
                }
                if c.cimd {
                    doc["client_id_metadata_document_supported"] = json!(true);
                }
                if let Some(m) = &c.auth_methods {
                    doc["token_endpoint_auth_methods_supported"] = json!(m);
                }
                if c.iss_supported {
                    doc["authorization_response_iss_parameter_supported"] = json!(true);
                }
                if let Some(scopes) = &c.as_scopes {
                    doc["scopes_supported"] = json!(scopes);
                }
                if c.dpop {
                    doc["dpop_signing_alg_values_supported"] = json!(["ES256"]);
                }
                if c.device {
                    doc["device_authorization_endpoint"] = json!(format!("{endpoint_base}/device"));
                }
                return (200, doc);
            }
            return (404, json!({}));
        }
        if url.ends_with("/register") {
            if url.starts_with(ORIGIN) && c.origin_register_404 {
                return (404, json!({}));
            }
            if let Some(refusal) = &c.reg_refused {
                return (400, refusal.clone());
            }
            let client_id = self.next("client");
            let asked: Value = serde_json::from_slice(req.body()).unwrap_or_default();
            if asked["grant_types"]
                .as_array()
                .is_some_and(|g| g.contains(&json!(DEVICE_CODE_GRANT)))
            {
                let mut issued = self.issued.lock().unwrap();
                issued.device_clients.insert(client_id.clone());
            }
            let mut reg = json!({"client_id": client_id});
            if let Some(s) = &c.reg_secret {
                reg["client_secret"] = json!(s);
            }
            if let Some(m) = &c.reg_method {
                reg["token_endpoint_auth_method"] = json!(m);
            }
            return (201, reg);
        }
        if url.ends_with("/device") && c.device {
            let form: HashMap<String, String> = url::form_urlencoded::parse(req.body())
                .into_owned()
                .collect();
            let client = form.get("client_id").cloned().unwrap_or_default();
            if !self.issued.lock().unwrap().device_clients.contains(&client) {
                return (
                    400,
                    json!({"error": "unauthorized_client", "error_description": "device_code grant not registered"}),
                );
            }
            let code = self.next("dc-secret");
            self.issued
                .lock()
                .unwrap()
                .device_codes
                .insert(code.clone());
            let mut answer = json!({
                "device_code": code,
                "user_code": "WDJB-MJHT",
                "verification_uri": c.verification_uri,
                "verification_uri_complete": format!("{}?user_code=WDJB-MJHT", c.verification_uri),
                "expires_in": c.device_expires_in,
            });
            if let Some(i) = c.device_interval {
                answer["interval"] = json!(i);
            }
            return (200, answer);
        }
        if url.ends_with("/token") {
            if let Some(status) = c.token_down {
                return (status, json!("down"));
            }
            let body = String::from_utf8_lossy(req.body()).into_owned();
            let form: HashMap<String, String> = url::form_urlencoded::parse(body.as_bytes())
                .into_owned()
                .collect();
            if url.starts_with(IDP) {
                // The identity provider: an RFC 8693 exchange of the ID token for an
                // identity assertion addressed to one authorization server.
                let ok = form.get("grant_type").map(String::as_str) == Some(flow::TOKEN_EXCHANGE)
                    && form.get("subject_token_type").map(String::as_str)
                        == Some(flow::ID_TOKEN_TYPE)
                    && form.get("requested_token_type").map(String::as_str)
                        == Some(flow::ID_JAG_TYPE)
                    && form.contains_key("subject_token")
                    && form.contains_key("resource");
                if !ok {
                    return (400, json!({"error": "invalid_request"}));
                }
                let audience = form.get("audience").cloned().unwrap_or_default();
                return (
                    200,
                    json!({"access_token": format!("id-jag-secret-for-{audience}"),
                           "issued_token_type": flow::ID_JAG_TYPE, "token_type": "N_A"}),
                );
            }
            let mut issued = self.issued.lock().unwrap();
            let mut scope = None;
            match form.get("grant_type").map(String::as_str) {
                Some("authorization_code") => {
                    let Some((challenge, _client, resource, s)) =
                        form.get("code").and_then(|code| issued.codes.remove(code))
                    else {
                        return (400, json!({"error": "invalid_grant"}));
                    };
                    let verifier = form.get("code_verifier").cloned().unwrap_or_default();
                    let computed = Pkce::from_verifier(PkceVerifier::new(verifier)).challenge;
                    if computed != challenge || form.get("resource") != Some(&resource) {
                        return (
                            400,
                            json!({"error": "invalid_grant", "error_description": "pkce or resource"}),
                        );
                    }
                    scope = s;
                }
                Some("refresh_token") => {
                    let rt = form.get("refresh_token").cloned().unwrap_or_default();
                    if !issued.live_refresh.contains(&rt) {
                        return (
                            400,
                            json!({"error": "invalid_grant", "error_description": "refresh token is dead"}),
                        );
                    }
                    if c.rotate {
                        issued.live_refresh.remove(&rt);
                    }
                }
                Some("client_credentials") => scope = form.get("scope").cloned(),
                Some(flow::JWT_BEARER) if form.contains_key("assertion") => {
                    scope = form.get("scope").cloned();
                }
                Some(DEVICE_CODE_GRANT) => {
                    let code = form.get("device_code").cloned().unwrap_or_default();
                    if !issued.device_codes.contains(&code) {
                        return (400, json!({"error": "invalid_grant"}));
                    }
                    drop(issued);
                    let next = {
                        let mut config = self.config.lock().unwrap();
                        (!config.device_answers.is_empty()).then(|| config.device_answers.remove(0))
                    };
                    if let Some(error) = next {
                        return (400, json!({"error": error}));
                    }
                    issued = self.issued.lock().unwrap();
                    issued.device_codes.remove(&code);
                }
                _ => return (400, json!({"error": "unsupported_grant_type"})),
            }
            issued.counter += 1;
            let n = issued.counter;
            let access = format!("at-secret-{n}");
            let refresh = format!("rt-secret-{n}");
            let bound = c.dpop && req.headers().contains_key("dpop");
            let token_type = if bound { "DPoP" } else { "Bearer" };
            let mut answer = json!({"access_token": access, "token_type": token_type});
            if let Some(e) = c.expires_in {
                answer["expires_in"] = json!(e);
            }
            if let Some(s) = scope {
                answer["scope"] = json!(s);
            }
            let grant = form.get("grant_type").map(String::as_str);
            if grant == Some("authorization_code")
                || grant == Some(DEVICE_CODE_GRANT)
                || (grant == Some("refresh_token") && c.rotate)
            {
                issued.live_refresh.insert(refresh.clone());
                answer["refresh_token"] = json!(refresh);
            }
            return (200, answer);
        }
        (404, json!({}))
    }
}

struct Http(Arc<World>);

impl HttpClient for Http {
    fn send(&self, request: HttpRequest) -> BoxFuture<'_, Result<HttpResponse, TransportError>> {
        let world = Arc::clone(&self.0);
        Box::pin(async move {
            world.log.lock().unwrap().push(Logged {
                method: request.method().to_string(),
                url: request.uri().to_string(),
                authorization: request
                    .headers()
                    .get(http::header::AUTHORIZATION)
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_owned),
                dpop: request
                    .headers()
                    .get("dpop")
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_owned),
                body: String::from_utf8_lossy(request.body()).into_owned(),
            });
            if request.uri().host() == Some("down.example.com") {
                return Err(TransportError::new("connection refused"));
            }
            if let Some(nonce) = world.nonce_wanted(&request) {
                return Ok(http::Response::builder()
                    .status(400)
                    .header("dpop-nonce", nonce)
                    .body(br#"{"error":"use_dpop_nonce"}"#.to_vec())
                    .unwrap());
            }
            let (status, body) = world.answer(&request);
            let bytes = match body {
                Value::String(s) => s.into_bytes(),
                other => other.to_string().into_bytes(),
            };
            Ok(http::Response::builder()
                .status(status)
                .body(bytes)
                .unwrap())
        })
    }
}

impl World {
    /// The nonce a token request's proof lacks, when the fake wants one.
    fn nonce_wanted(&self, request: &HttpRequest) -> Option<String> {
        let c = self.config.lock().unwrap().clone();
        let wanted = c.dpop_nonce.filter(|_| c.dpop)?;
        let proof = request.headers().get("dpop")?.to_str().ok()?;
        let (_, claims) = proof_parts(proof)?;
        (request.uri().path().ends_with("/token") && claims["nonce"] != json!(wanted))
            .then_some(wanted)
    }
}

impl DpopSigner for World {
    fn generate(&self) -> Result<DpopKey, BoxError> {
        let n = self.keys.fetch_add(1, Ordering::SeqCst);
        let mut public = vec![4];
        public.extend([n; 64]);
        DpopKey::new(format!("dpop-key-secret-{n}").into_bytes(), &public)
            .ok_or_else(|| "bad point".into())
    }

    fn sign(&self, _key: &DpopKey, _message: &[u8]) -> Result<Vec<u8>, BoxError> {
        Ok(vec![7; 64])
    }
}

impl Randomness for World {
    fn fill(&self, buf: &mut [u8]) -> Result<(), BoxError> {
        if self.config.lock().unwrap().no_randomness {
            // A typed error, so that tests can see it kept whole as the AuthError's source.
            return Err(Box::new(std::io::Error::other("no entropy")));
        }
        let n = self.rng.fetch_add(1, Ordering::SeqCst);
        buf.fill(n);
        Ok(())
    }
}

impl Clock for World {
    fn now_ms(&self) -> u64 {
        self.now_ms.load(Ordering::SeqCst)
    }
}

impl UserAgent for World {
    fn redirect_uri(&self) -> String {
        REDIRECT.to_owned()
    }

    fn authorize(&self, url: Url) -> BoxFuture<'_, Result<Url, BoxError>> {
        self.authorize_urls.lock().unwrap().push(url.clone());
        let q: HashMap<String, String> = url.query_pairs().into_owned().collect();
        let code = self.next("code-secret");
        self.issued.lock().unwrap().codes.insert(
            code.clone(),
            (
                q.get("code_challenge").cloned().unwrap_or_default(),
                q.get("client_id").cloned().unwrap_or_default(),
                q.get("resource").cloned().unwrap_or_default(),
                q.get("scope").cloned(),
            ),
        );
        let mut back = Url::parse(q.get("redirect_uri").map_or(REDIRECT, String::as_str)).unwrap();
        back.query_pairs_mut().append_pair("code", &code);
        if let Some(state) = q.get("state") {
            back.query_pairs_mut().append_pair("state", state);
        }
        if let Some(iss) = self.config.lock().unwrap().iss_in_redirect.clone() {
            back.query_pairs_mut().append_pair("iss", &iss);
        }
        Box::pin(async move { Ok(back) })
    }
}

impl DeviceUserAgent for World {
    fn show(&self, verification: &DeviceVerification) -> Result<(), BoxError> {
        self.shown.lock().unwrap().push(verification.clone());
        Ok(())
    }

    fn wait(&self, ms: u64) -> BoxFuture<'_, ()> {
        self.waits.lock().unwrap().push(ms);
        self.advance(ms);
        Box::pin(async {})
    }
}

impl ClientAssertionSigner for World {
    fn sign(&self, claims_json: &[u8]) -> Result<String, BoxError> {
        let claims: Value = serde_json::from_slice(claims_json)?;
        self.claims.lock().unwrap().push(claims);
        mcp_oauth::jws_compact(br#"{"alg":"ES256"}"#, claims_json, |_| {
            Ok(SIGNATURE.to_vec())
        })
    }
}

/// Settings for the fake MCP server.
pub(crate) fn settings() -> Settings {
    Settings::new(Url::parse(MCP).unwrap())
}

/// A 401 challenge as the fake MCP server sends it.
pub(crate) fn challenge(world: &World) -> String {
    let c = world.config.lock().unwrap();
    let bearer = match c.prm {
        Prm::Custom => format!(r#"Bearer resource_metadata="{ORIGIN}/custom/prm""#),
        _ => r#"Bearer error="invalid_token""#.to_owned(),
    };
    if c.dpop && c.rs_dpop == RsDpop::Challenge {
        format!(r#"{bearer}, DPoP algs="ES256""#)
    } else {
        bearer
    }
}
