//! The next login after the first: a kept registration is used only at a redirect URI it was
//! registered with (the user agent is offered them), a new one replaces it when the user agent
//! cannot take any, or when the authorization server no longer takes the client; and the user
//! agent is told how each login ended.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use mcp_oauth::store::ClientRegistration;
use mcp_oauth::{
    AuthError, Authorizer, BoxError, BoxFuture, Clock, HttpClient, HttpRequest, HttpResponse,
    Randomness, Services, TransportError, Url, UserAgent,
};

use crate::fake::{Config, World, block_on, challenge, settings};

const FIRST: &str = "http://127.0.0.1:40001/callback";
const SECOND: &str = "http://127.0.0.1:40002/callback";

/// A browser at a loopback port of its own that can also listen at the ports in `free`.
struct Agent {
    world: Arc<World>,
    own: Mutex<String>,
    free: Vec<String>,
    /// The redirect the browser comes back with, instead of the world's (an error).
    back: Option<&'static str>,
    notices: Mutex<Vec<String>>,
    finished: Mutex<Vec<Result<(), String>>>,
}

impl Agent {
    fn new(world: &Arc<World>, own: &str, free: &[&str]) -> Arc<Self> {
        Arc::new(Self {
            world: Arc::clone(world),
            own: Mutex::new(own.to_owned()),
            free: free.iter().map(|s| (*s).to_owned()).collect(),
            back: None,
            notices: Mutex::default(),
            finished: Mutex::default(),
        })
    }
}

impl UserAgent for Agent {
    fn redirect_uri(&self) -> String {
        self.own.lock().unwrap().clone()
    }

    fn authorize(&self, url: Url) -> BoxFuture<'_, Result<Url, BoxError>> {
        match self.back {
            Some(query) => {
                let state = url
                    .query_pairs()
                    .find(|(k, _)| k == "state")
                    .map(|(_, v)| v.into_owned())
                    .unwrap_or_default();
                let back = Url::parse(&format!("{}?{query}&state={state}", self.redirect_uri()));
                Box::pin(async move { back.map_err(BoxError::from) })
            }
            None => UserAgent::authorize(&*self.world, url),
        }
    }

    fn adopt_redirect_uri(&self, registered: &[String]) -> Option<String> {
        let uri = registered.iter().find(|u| self.free.contains(u))?.clone();
        uri.clone_into(&mut self.own.lock().unwrap());
        Some(uri)
    }

    fn notice(&self, message: &str) {
        self.notices.lock().unwrap().push(message.to_owned());
    }

    fn finished(&self, outcome: Result<(), &AuthError>) {
        self.finished
            .lock()
            .unwrap()
            .push(outcome.map_err(ToString::to_string));
    }
}

/// The world's servers, except that the authorization endpoint refuses the clients in
/// `forgotten` as the TypeScript SDK's does a client it does not know: 400 `invalid_client`.
struct Forgetful {
    inner: Arc<dyn HttpClient>,
    forgotten: Vec<String>,
}

impl HttpClient for Forgetful {
    fn send(&self, request: HttpRequest) -> BoxFuture<'_, Result<HttpResponse, TransportError>> {
        let client = Url::parse(&request.uri().to_string())
            .ok()
            .filter(|u| u.path() == "/authorize")
            .and_then(|u| {
                u.query_pairs()
                    .find(|(k, _)| k == "client_id")
                    .map(|(_, v)| v.into_owned())
            });
        if client.is_some_and(|c| self.forgotten.contains(&c)) {
            let answer = http::Response::builder()
                .status(400)
                .body(
                    br#"{"error":"invalid_client","error_description":"Invalid client_id"}"#
                        .to_vec(),
                )
                .unwrap();
            return Box::pin(async move { Ok(answer) });
        }
        self.inner.send(request)
    }
}

fn authorizer(world: &Arc<World>, agent: &Arc<Agent>, forgotten: &[&str]) -> Authorizer {
    let http: Arc<dyn HttpClient> = Arc::new(Forgetful {
        inner: world.http(),
        forgotten: forgotten.iter().map(|s| (*s).to_owned()).collect(),
    });
    let random: Arc<dyn Randomness> = world.clone();
    let clock: Arc<dyn Clock> = world.clone();
    let agent: Arc<dyn UserAgent> = agent.clone();
    Authorizer::new(
        settings(),
        Services::new(http, random, clock).with_user_agent(agent),
    )
}

fn login(world: &World, auth: &mut Authorizer) -> Result<(), AuthError> {
    let header = challenge(world);
    block_on(auth.handle_challenge(401, &[header.as_str()]))
}

fn query(url: &Url, name: &str) -> Option<String> {
    url.query_pairs()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.into_owned())
}

/// A first login at [`FIRST`]: the world and the registrations it left, as a store keeps them.
fn first_login() -> (Arc<World>, BTreeMap<String, ClientRegistration>) {
    let world = World::new(Config::default());
    let agent = Agent::new(&world, FIRST, &[]);
    let mut auth = authorizer(&world, &agent, &[]);
    login(&world, &mut auth).unwrap();
    let kept: BTreeMap<_, _> = auth.take_registrations().into_iter().collect();
    assert_eq!(kept.len(), 1);
    assert_eq!(kept.values().next().unwrap().redirect_uris, [FIRST]);
    world.clear_log();
    (world, kept)
}

#[test]
fn a_kept_registration_is_used_at_the_redirect_uri_it_was_registered_with() {
    let (world, kept) = first_login();
    // The next login listens elsewhere at first, and can take the registered port.
    let agent = Agent::new(&world, SECOND, &[FIRST]);
    let mut auth = authorizer(&world, &agent, &[]);
    auth.set_registrations(kept);
    login(&world, &mut auth).unwrap();
    assert!(world.registrations().is_empty(), "{:?}", world.urls());
    let sent = &world.authorize_urls()[0];
    assert_eq!(query(sent, "client_id").as_deref(), Some("client-1"));
    assert_eq!(query(sent, "redirect_uri").as_deref(), Some(FIRST));
    let token = &world.token_requests()[0];
    assert_eq!(token.form("redirect_uri").as_deref(), Some(FIRST));
    assert!(auth.take_registrations().is_empty());
    assert!(agent.notices.lock().unwrap().is_empty());
    assert_eq!(*agent.finished.lock().unwrap(), [Ok(())]);
}

#[test]
fn a_registered_port_that_is_taken_means_a_new_registration_which_replaces_the_old() {
    let (world, kept) = first_login();
    // The registered port is in use by another program: the agent cannot take it.
    let agent = Agent::new(&world, SECOND, &[]);
    let mut auth = authorizer(&world, &agent, &[]);
    auth.set_registrations(kept);
    login(&world, &mut auth).unwrap();
    let registrations = world.registrations();
    assert_eq!(registrations.len(), 1, "{:?}", world.urls());
    assert!(
        registrations[0].body.contains(SECOND),
        "{}",
        registrations[0].body
    );
    let replaced = auth.take_registrations();
    assert_eq!(replaced.len(), 1);
    let new_id = replaced[0].1.client_id.clone();
    assert_ne!(new_id, "client-1");
    assert_eq!(replaced[0].1.redirect_uris, [SECOND]);
    let sent = &world.authorize_urls()[0];
    assert_eq!(query(sent, "client_id"), Some(new_id));
    assert_eq!(query(sent, "redirect_uri").as_deref(), Some(SECOND));
    let notices = agent.notices.lock().unwrap().clone();
    assert_eq!(notices.len(), 1, "{notices:?}");
    assert!(
        notices[0].contains(FIRST) && notices[0].contains("registering a new one"),
        "{notices:?}"
    );
}

#[test]
fn a_client_the_authorization_server_forgot_is_registered_again_before_the_browser_opens() {
    let (world, kept) = first_login();
    let agent = Agent::new(&world, SECOND, &[FIRST]);
    let mut auth = authorizer(&world, &agent, &["client-1"]);
    auth.set_registrations(kept);
    login(&world, &mut auth).unwrap();
    assert_eq!(world.registrations().len(), 1, "{:?}", world.urls());
    // The browser was sent only once, with the new client.
    let new_id = auth.take_registrations()[0].1.client_id.clone();
    assert_ne!(new_id, "client-1");
    let sent = world.authorize_urls();
    assert_eq!(sent.len(), 1);
    assert_eq!(query(&sent[0], "client_id"), Some(new_id));
    assert_eq!(query(&sent[0], "redirect_uri").as_deref(), Some(FIRST));
    let notices = agent.notices.lock().unwrap().clone();
    assert!(
        notices.len() == 1 && notices[0].contains("invalid_client Invalid client_id"),
        "{notices:?}"
    );
}

#[test]
fn the_user_agent_is_told_when_the_authorization_failed() {
    let world = World::new(Config::default());
    let agent = Arc::new(Agent {
        back: Some("error=access_denied&error_description=the+user+said+no"),
        ..Arc::into_inner(Agent::new(&world, FIRST, &[])).unwrap()
    });
    let mut auth = authorizer(&world, &agent, &[]);
    let err = login(&world, &mut auth).unwrap_err();
    assert!(err.to_string().contains("access_denied"), "{err}");
    let finished = agent.finished.lock().unwrap().clone();
    assert_eq!(finished.len(), 1, "{finished:?}");
    let told = finished[0].clone().unwrap_err();
    assert!(told.contains("access_denied the user said no"), "{told}");
    assert!(world.token_requests().is_empty());
}
