//! The device authorization grant (RFC 8628) against the in-memory fake: the requests, every
//! answer the token endpoint gives while polling, the stop at `expires_in`, the registration
//! that asks for the device grant, and when the browser is used instead. Time moves only when
//! the device agent is asked to wait (the fake's clock), so polling is counted, not timed.

use std::sync::Arc;

use mcp_oauth::device::{DEVICE_CODE_GRANT, DeviceAuthorization, DeviceError};
use mcp_oauth::{AuthError, Authorizer};

use crate::fake::{AS, Config, MCP, World, block_on, challenge, settings};

fn device_world(config: Config) -> (Arc<World>, Authorizer) {
    let world = World::new(Config {
        device: true,
        ..config
    });
    let auth = Authorizer::new(settings(), world.device_services(false));
    (world, auth)
}

fn login(world: &World, auth: &mut Authorizer) -> Result<(), AuthError> {
    let header = challenge(world);
    block_on(auth.handle_challenge(401, &[header.as_str()]))
}

fn polls(world: &World) -> usize {
    world
        .token_requests()
        .iter()
        .filter(|t| t.form("grant_type").as_deref() == Some(DEVICE_CODE_GRANT))
        .count()
}

#[test]
fn a_device_login_registers_for_the_grant_and_polls_until_approved() {
    let (world, mut auth) = device_world(Config {
        device_answers: vec!["authorization_pending", "authorization_pending"],
        ..Config::default()
    });
    login(&world, &mut auth).unwrap();

    // Registration asks for the device grant (and keeps the code grant and refresh beside).
    let registration: serde_json::Value =
        serde_json::from_str(&world.registrations()[0].body).unwrap();
    assert_eq!(
        registration["grant_types"],
        serde_json::json!(["authorization_code", DEVICE_CODE_GRANT, "refresh_token"])
    );
    // The device authorization request: the client, and the resource the tokens are for.
    let device = world.device_requests();
    assert_eq!(device.len(), 1);
    assert_eq!(device[0].form("client_id").as_deref(), Some("client-1"));
    assert_eq!(device[0].form("resource").as_deref(), Some(MCP));
    // Shown: the user code and both addresses; the device code is not part of it.
    let shown = world.shown.lock().unwrap().clone();
    assert_eq!(shown.len(), 1);
    assert_eq!(shown[0].user_code, "WDJB-MJHT");
    assert_eq!(shown[0].verification_uri.as_str(), format!("{AS}/activate"));
    assert_eq!(
        shown[0]
            .verification_uri_complete
            .as_ref()
            .unwrap()
            .as_str(),
        format!("{AS}/activate?user_code=WDJB-MJHT")
    );
    assert!(!format!("{shown:?}").contains("dc-secret"), "{shown:?}");
    // Two pending answers, then tokens: three polls, each after the server's 5 s.
    assert_eq!(*world.waits.lock().unwrap(), [5_000, 5_000, 5_000]);
    assert_eq!(polls(&world), 3);
    let token = &world.token_requests()[2];
    assert!(token.form("device_code").unwrap().starts_with("dc-secret-"));
    assert_eq!(token.form("resource").as_deref(), Some(MCP));
    assert_eq!(token.form("client_id").as_deref(), Some("client-1"));
    let header = auth.authorization_header().unwrap();
    assert!(header.to_str().unwrap().starts_with("Bearer at-secret-"));
    let tokens = auth.tokens().unwrap();
    assert!(
        tokens.refresh_token.is_some(),
        "the device grant's refresh token is kept"
    );
    assert_eq!(tokens.client_id.as_deref(), Some("client-1"));
    // The registration is handed to the host for its store.
    let kept = auth.take_registrations();
    assert_eq!(kept.len(), 1);
    assert_eq!(kept[0].0, AS);
    assert!(!format!("{auth:?}").contains("dc-secret"));
}

#[test]
fn slow_down_adds_five_seconds_to_every_later_wait() {
    let (world, mut auth) = device_world(Config {
        device_answers: vec!["slow_down", "authorization_pending", "slow_down"],
        device_interval: Some(2),
        ..Config::default()
    });
    login(&world, &mut auth).unwrap();
    assert_eq!(*world.waits.lock().unwrap(), [2_000, 7_000, 7_000, 12_000]);
    assert_eq!(polls(&world), 4);
}

#[test]
fn without_an_interval_the_wait_is_five_seconds_and_never_under_one() {
    let (world, mut auth) = device_world(Config {
        device_answers: vec!["authorization_pending"],
        device_interval: None,
        ..Config::default()
    });
    login(&world, &mut auth).unwrap();
    assert_eq!(*world.waits.lock().unwrap(), [5_000, 5_000]);

    let (world, mut auth) = device_world(Config {
        device_interval: Some(0),
        ..Config::default()
    });
    login(&world, &mut auth).unwrap();
    assert_eq!(*world.waits.lock().unwrap(), [1_000]);
}

#[test]
fn access_denied_ends_the_login_with_a_clear_error() {
    let (world, mut auth) = device_world(Config {
        device_answers: vec![
            "authorization_pending",
            "access_denied",
            "authorization_pending",
        ],
        ..Config::default()
    });
    let err = login(&world, &mut auth).unwrap_err();
    assert_eq!(err, AuthError::Device(DeviceError::Denied));
    assert!(err.to_string().contains("denied"), "{err}");
    assert_eq!(polls(&world), 2, "no poll after the denial");
    assert!(auth.tokens().is_none());
}

#[test]
fn expired_token_ends_the_login() {
    let (world, mut auth) = device_world(Config {
        device_answers: vec!["expired_token", "authorization_pending"],
        ..Config::default()
    });
    let err = login(&world, &mut auth).unwrap_err();
    assert!(
        matches!(&err, AuthError::Device(DeviceError::Expired { reason }) if reason.contains("expired_token")),
        "{err:?}"
    );
    assert!(err.to_string().contains("log in again"), "{err}");
    assert_eq!(polls(&world), 1);
    assert!(auth.tokens().is_none());
}

#[test]
fn polling_stops_when_expires_in_has_passed() {
    let (world, mut auth) = device_world(Config {
        device_answers: vec!["authorization_pending"; 50],
        device_expires_in: 12,
        ..Config::default()
    });
    let err = login(&world, &mut auth).unwrap_err();
    assert!(
        matches!(&err, AuthError::Device(DeviceError::Expired { reason }) if reason.contains("12 s")),
        "{err:?}"
    );
    // Polls at 5 s and 10 s; at 15 s the code is dead and no request is sent.
    assert_eq!(*world.waits.lock().unwrap(), [5_000, 5_000, 5_000]);
    assert_eq!(polls(&world), 2);
}

#[test]
fn another_refusal_while_polling_is_the_token_endpoints_error() {
    let (world, mut auth) = device_world(Config {
        device_answers: vec!["invalid_client"],
        ..Config::default()
    });
    let err = login(&world, &mut auth).unwrap_err();
    assert!(matches!(err, AuthError::Token(_)), "{err:?}");
    assert!(err.to_string().contains("invalid_client"), "{err}");
    assert_eq!(polls(&world), 1);
}

#[test]
fn a_registration_made_for_the_browser_is_replaced_for_the_device_grant() {
    // A browser login first: its registration does not ask for the device grant.
    let world = World::new(Config {
        device: true,
        ..Config::default()
    });
    let mut browser = Authorizer::new(settings(), world.services());
    login(&world, &mut browser).unwrap();
    let registrations = browser.take_registrations().into_iter().collect();
    let first: serde_json::Value = serde_json::from_str(&world.registrations()[0].body).unwrap();
    assert_eq!(
        first["grant_types"],
        serde_json::json!(["authorization_code", "refresh_token"])
    );

    // Then a device login with that registration kept: refused once, registered again (the
    // fake numbers codes and tokens with clients, so the new client is the 4th thing issued).
    let mut auth = Authorizer::new(settings(), world.device_services(false));
    auth.set_registrations(registrations);
    login(&world, &mut auth).unwrap();
    let device = world.device_requests();
    assert_eq!(device.len(), 2);
    assert_eq!(device[0].form("client_id").as_deref(), Some("client-1"));
    assert_eq!(device[1].form("client_id").as_deref(), Some("client-4"));
    assert_eq!(world.registrations().len(), 2);
    assert_eq!(auth.take_registrations()[0].1.client_id, "client-4");
    assert_eq!(
        auth.tokens().unwrap().client_id.as_deref(),
        Some("client-4")
    );
}

#[test]
fn the_browser_is_used_where_the_device_flow_is_not_offered() {
    // With a browser too: the browser, for a server without a device endpoint.
    let world = World::new(Config::default());
    let mut auth = Authorizer::new(settings(), world.device_services(true));
    login(&world, &mut auth).unwrap();
    assert_eq!(world.authorize_urls().len(), 1);
    assert!(world.device_requests().is_empty());
    assert!(world.shown.lock().unwrap().is_empty());

    // With a browser and a server that offers it: the device flow.
    let world = World::new(Config {
        device: true,
        ..Config::default()
    });
    let mut auth = Authorizer::new(settings(), world.device_services(true));
    login(&world, &mut auth).unwrap();
    assert_eq!(world.device_requests().len(), 1);
    assert!(world.authorize_urls().is_empty());

    // Without a browser, a server without it: said, before anything is registered.
    let world = World::new(Config::default());
    let mut auth = Authorizer::new(settings(), world.device_services(false));
    let err = login(&world, &mut auth).unwrap_err();
    assert!(
        matches!(&err, AuthError::Device(DeviceError::NotOffered { issuer }) if issuer == AS),
        "{err:?}"
    );
    assert!(err.to_string().contains("does not offer the device flow"));
    assert!(world.registrations().is_empty());
}

#[test]
fn verification_addresses_are_shown_only_when_a_browser_may_open_them() {
    let (world, mut auth) = device_world(Config {
        verification_uri: "file:///etc/passwd".to_owned(),
        ..Config::default()
    });
    let err = login(&world, &mut auth).unwrap_err();
    assert_eq!(
        err,
        AuthError::Device(DeviceError::UnsafeVerificationUri {
            shown: "file:".to_owned()
        })
    );
    assert!(world.shown.lock().unwrap().is_empty());
    assert_eq!(polls(&world), 0);

    // A complete address that may not be opened is dropped, the plain one kept.
    let body = br#"{"device_code":"dc-secret-9","user_code":"AB","verification_uri":"https://as.example/d","verification_uri_complete":"javascript:alert(1)","expires_in":60}"#;
    let answer = DeviceAuthorization::from_response(200, body).unwrap();
    assert_eq!(
        answer.verification.verification_uri.as_str(),
        "https://as.example/d"
    );
    assert_eq!(answer.verification.verification_uri_complete, None);
    assert_eq!(answer.interval_s, 5);
    assert!(!format!("{answer:?}").contains("dc-secret"), "{answer:?}");
}

#[test]
fn a_refused_device_authorization_quotes_the_server_but_not_the_secrets() {
    let err = DeviceAuthorization::from_response(
        400,
        br#"{"error":"invalid_scope","error_description":"no such scope"}"#,
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "the device authorization request was refused: invalid_scope no such scope"
    );
    assert!(!err.is_client_refused());
    // npm's oidc-provider refuses a client registered without the device grant this way.
    let err = DeviceAuthorization::from_response(
        400,
        br#"{"error":"invalid_request","error_description":"urn:ietf:params:oauth:grant-type:device_code is not allowed for this client"}"#,
    )
    .unwrap_err();
    assert!(err.is_client_refused(), "{err:?}");
    let err = DeviceAuthorization::from_response(
        400,
        br#"{"error":"invalid_request","error_description":"missing required parameter 'client_id'"}"#,
    )
    .unwrap_err();
    assert!(!err.is_client_refused(), "{err:?}");
    let err =
        DeviceAuthorization::from_response(200, br#"{"device_code":"dc-secret-1"}"#).unwrap_err();
    assert!(
        matches!(err, DeviceError::BadAnswer { status: 200, .. }),
        "{err:?}"
    );
    assert!(!err.to_string().contains("dc-secret"), "{err}");
}
