//! The driver against the in-memory fake: each discovery variant, client identities, PKCE,
//! resource and issuer checks, `iss`, step-up and its limit, refresh, token endpoint
//! authentication, `client_credentials`, and that no secret is ever printed.
//! This file is long because it holds one case per variant of the flow, all driven through the same
//! in-memory fake and helpers.

use std::sync::Arc;

use base64::Engine as _;
use mcp_oauth::flow::TokenError;
use mcp_oauth::store::AuthFile;
use mcp_oauth::{
    AuthError, Authorizer, ClientSecret, Error, GrantType, IdentityProvider, JwtAssertion,
    MetadataSource, flow,
};
use sha2::Digest as _;

use crate::fake::{
    AS, CIMD, Config, IDP, MCP, ORIGIN, Prm, RsDpop, SIGNATURE_B64, World, block_on, challenge,
    settings,
};

fn unauthorized(world: &World, auth: &mut Authorizer) -> Result<(), AuthError> {
    let header = challenge(world);
    block_on(auth.handle_challenge(401, &[header.as_str()]))
}

/// A first 401 against a world that must refuse: the world, to see what was sent, and the error.
fn refused(config: Config) -> (Arc<World>, AuthError) {
    let world = World::new(config);
    let mut auth = world.authorizer(settings());
    let err = unauthorized(&world, &mut auth).unwrap_err();
    (world, err)
}

/// A first 401 against a world that grants: the world, to see what was sent, and the
/// authorizer holding its tokens.
fn logged_in(config: Config) -> (Arc<World>, Authorizer) {
    let world = World::new(config);
    let mut auth = world.authorizer(settings());
    unauthorized(&world, &mut auth).unwrap();
    (world, auth)
}

fn query(url: &url::Url, name: &str) -> Option<String> {
    url.query_pairs()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.into_owned())
}

#[test]
fn prm_from_the_challenge_then_dcr_pkce_and_tokens() {
    let world = World::new(Config::default());
    let mut auth = world.authorizer(settings());
    assert!(auth.authorization_header().is_none());
    unauthorized(&world, &mut auth).unwrap();

    assert_eq!(
        world.urls(),
        [
            format!("GET {ORIGIN}/custom/prm"),
            format!("GET {AS}/.well-known/oauth-authorization-server"),
            format!("POST {AS}/register"),
            format!("POST {AS}/token"),
        ],
        "the root PRM is never fetched once the challenge's is found"
    );
    let authorize = &world.authorize_urls()[0];
    assert!(authorize.as_str().starts_with(&format!("{AS}/authorize?")));
    assert_eq!(query(authorize, "resource").as_deref(), Some(MCP));
    assert_eq!(
        query(authorize, "code_challenge_method").as_deref(),
        Some("S256")
    );
    assert_eq!(query(authorize, "client_id").as_deref(), Some("client-1"));
    assert!(query(authorize, "state").is_some());
    assert_eq!(
        query(authorize, "scope"),
        None,
        "no scope anywhere: omitted"
    );
    let token = &world.token_requests()[0];
    assert_eq!(
        token.form("grant_type").as_deref(),
        Some("authorization_code")
    );
    assert_eq!(token.form("resource").as_deref(), Some(MCP));
    assert!(token.form("code_verifier").is_some());

    assert!(auth.take_changed());
    assert!(!auth.take_changed(), "the signal is taken once");
    let header = auth.authorization_header().unwrap();
    assert!(header.is_sensitive());
    assert!(header.to_str().unwrap().starts_with("Bearer at-secret-"));
    let t = auth.tokens().unwrap();
    assert_eq!(t.issuer.as_deref(), Some(AS));
    assert_eq!(t.client_id.as_deref(), Some("client-1"));
    assert_eq!(t.expires_at_ms, Some(1_000_000 + 3_600_000));
    assert_eq!(
        auth.metadata_source(),
        Some(MetadataSource::ProtectedResource)
    );

    let registration: serde_json::Value =
        serde_json::from_str(&world.registrations()[0].body).unwrap();
    assert_eq!(
        registration["redirect_uris"],
        serde_json::json!([crate::fake::REDIRECT])
    );
}

#[test]
fn path_inserted_then_root_prm_and_the_resource_is_sent_byte_for_byte() {
    let (world, auth) = logged_in(Config {
        prm: Prm::Root,
        ..Config::default()
    });
    let urls = world.urls();
    assert_eq!(
        &urls[..2],
        [
            format!("GET {ORIGIN}/.well-known/oauth-protected-resource/mcp"),
            format!("GET {ORIGIN}/.well-known/oauth-protected-resource"),
        ]
    );
    assert_eq!(auth.resource(), Some(ORIGIN));
    assert_eq!(
        query(&world.authorize_urls()[0], "resource").as_deref(),
        Some(ORIGIN)
    );
    assert_eq!(
        world.token_requests()[0].form("resource").as_deref(),
        Some(ORIGIN)
    );

    let (world, _) = logged_in(Config {
        prm: Prm::PathInserted,
        ..Config::default()
    });
    assert_eq!(
        world.urls()[0],
        format!("GET {ORIGIN}/.well-known/oauth-protected-resource/mcp")
    );
    assert!(!world.urls().contains(&format!(
        "GET {ORIGIN}/.well-known/oauth-protected-resource"
    )));
}

#[test]
fn the_prm_resource_string_is_echoed_unnormalised() {
    // A `resource` that `url::Url` would rewrite (host case, default port): it stands for the
    // server (same origin), and goes out exactly as the document wrote it.
    for resource in [
        "https://MCP.example.com:443/mcp",
        "https://mcp.example.com/mcp/",
    ] {
        let (world, auth) = logged_in(Config {
            prm_resource: Some(resource.to_owned()),
            ..Config::default()
        });
        assert_eq!(auth.resource(), Some(resource));
        assert_eq!(
            query(&world.authorize_urls()[0], "resource").as_deref(),
            Some(resource)
        );
        assert_eq!(
            world.token_requests()[0].form("resource").as_deref(),
            Some(resource)
        );
    }
}

#[test]
fn authorization_server_metadata_in_rfc_8414_then_oidc_order_with_a_path() {
    let tenant = format!("{AS}/tenant1");
    let (world, auth) = logged_in(Config {
        issuer: tenant.clone(),
        meta_url: Some(format!("{tenant}/.well-known/openid-configuration")),
        ..Config::default()
    });
    assert_eq!(
        &world.urls()[1..4],
        [
            format!("GET {AS}/.well-known/oauth-authorization-server/tenant1"),
            format!("GET {AS}/.well-known/openid-configuration/tenant1"),
            format!("GET {tenant}/.well-known/openid-configuration"),
        ]
    );
    assert_eq!(auth.metadata().unwrap().issuer, tenant);

    let (world, _) = logged_in(Config {
        meta_url: Some(format!("{AS}/.well-known/openid-configuration")),
        ..Config::default()
    });
    assert_eq!(
        &world.urls()[1..3],
        [
            format!("GET {AS}/.well-known/oauth-authorization-server"),
            format!("GET {AS}/.well-known/openid-configuration"),
        ]
    );
}

#[test]
fn no_prm_means_metadata_at_the_server_origin_2025_03_26() {
    let (world, auth) = logged_in(Config {
        prm: Prm::None,
        meta_url: Some(format!("{ORIGIN}/.well-known/oauth-authorization-server")),
        ..Config::default()
    });
    assert_eq!(auth.metadata_source(), Some(MetadataSource::ServerOrigin));
    assert!(world.urls().contains(&format!("POST {ORIGIN}/register")));
    assert!(world.urls().contains(&format!("POST {ORIGIN}/token")));
    assert_eq!(auth.resource(), Some(MCP), "the canonical server URI");
}

#[test]
fn no_metadata_at_all_falls_back_to_default_endpoints_with_pkce() {
    let (world, auth) = logged_in(Config {
        prm: Prm::None,
        meta_url: None,
        ..Config::default()
    });
    assert_eq!(
        auth.metadata_source(),
        Some(MetadataSource::DefaultEndpoints)
    );
    let authorize = &world.authorize_urls()[0];
    assert!(
        authorize
            .as_str()
            .starts_with(&format!("{ORIGIN}/authorize?"))
    );
    assert_eq!(
        query(authorize, "code_challenge_method").as_deref(),
        Some("S256")
    );
    assert!(world.urls().contains(&format!("POST {ORIGIN}/register")));
    assert!(world.token_requests()[0].form("code_verifier").is_some());
}

#[test]
fn no_metadata_and_no_oauth_suggests_a_static_header() {
    // No Bearer challenge at all.
    let world = World::new(Config {
        prm: Prm::None,
        meta_url: None,
        ..Config::default()
    });
    let mut auth = world.authorizer(settings());
    let err = block_on(auth.handle_challenge(401, &[])).unwrap_err();
    assert!(matches!(err, AuthError::NoMetadata { .. }));
    assert!(err.to_string().contains("`Authorization` header"), "{err}");
    assert!(world.authorize_urls().is_empty());

    // A Bearer challenge, but nothing answers at the default registration endpoint.
    world.set(|c| c.origin_register_404 = true);
    let err = block_on(auth.handle_challenge(401, &["Bearer"])).unwrap_err();
    assert!(matches!(err, AuthError::NoMetadata { .. }), "{err}");
    assert!(world.authorize_urls().is_empty());

    // And the fallback can be turned off.
    let mut s = settings();
    s.legacy_default_endpoints = false;
    let mut auth = world.authorizer(s);
    let err = block_on(auth.handle_challenge(401, &["Bearer"])).unwrap_err();
    assert!(matches!(err, AuthError::NoMetadata { .. }), "{err}");

    // The message, and the authorizer's and its settings' Debug, name the server without the
    // key its URL's query or userinfo carries.
    let keyed = url::Url::parse("https://user:PW@mcp.example.com/mcp?key=SECRET").unwrap();
    let mut auth = world.authorizer(mcp_oauth::Settings::new(keyed));
    let err = block_on(auth.handle_challenge(401, &[])).unwrap_err();
    assert!(matches!(err, AuthError::NoMetadata { .. }), "{err}");
    let shown = format!("{err} {auth:?} {:?}", auth.settings());
    assert!(shown.contains(MCP), "{shown}");
    assert!(
        !shown.contains("SECRET") && !shown.contains("PW"),
        "{shown}"
    );
}

#[test]
fn configured_endpoints_win_and_stand_alone() {
    let world = World::new(Config::default());
    let mut s = settings();
    s.token_url = Some(format!("{AS}/other/token"));
    let mut auth = world.authorizer(s);
    let _ = unauthorized(&world, &mut auth);
    assert!(world.urls().contains(&format!("POST {AS}/other/token")));

    let world = World::new(Config {
        prm: Prm::None,
        meta_url: None,
        ..Config::default()
    });
    let mut s = settings();
    s.authorization_url = Some(format!("{AS}/authorize"));
    s.token_url = Some(format!("{AS}/token"));
    s.client_id = Some("configured".to_owned());
    let mut auth = world.authorizer(s);
    block_on(auth.handle_challenge(401, &[])).unwrap();
    assert_eq!(auth.metadata_source(), Some(MetadataSource::Configured));
    assert!(
        world.authorize_urls()[0]
            .as_str()
            .starts_with(&format!("{AS}/authorize?"))
    );
}

#[test]
fn only_https_or_loopback_http_authorization_urls_reach_the_browser() {
    for endpoint in [
        "file:///etc/passwd",
        "ssh://auth.example.com/authorize",
        "http://auth.example.com/authorize",
        "javascript:alert(1)//",
    ] {
        let (world, err) = refused(Config {
            authorization_endpoint: Some(endpoint.to_owned()),
            ..Config::default()
        });
        assert!(world.authorize_urls().is_empty(), "{endpoint} was opened");
        // Refused before dynamic registration: nothing is registered at such a server.
        assert!(
            !world.urls().contains(&format!("POST {AS}/register")),
            "{endpoint}: {:?}",
            world.urls()
        );
        assert!(
            matches!(
                err,
                AuthError::Protocol(Error::UnsafeAuthorizationUrl { .. })
            ),
            "{endpoint}: {err:?}"
        );
        let text = err.to_string();
        assert!(text.contains("only https"), "{text}");
        assert!(
            !text.contains("passwd") && !text.contains("/authorize"),
            "{text}"
        );
    }
    for endpoint in [
        "http://127.0.0.1:8080/authorize",
        "http://localhost:8080/authorize",
        "http://[::1]:8080/authorize",
    ] {
        let (world, _) = logged_in(Config {
            authorization_endpoint: Some(endpoint.to_owned()),
            ..Config::default()
        });
        assert_eq!(world.authorize_urls().len(), 1, "{endpoint}");
    }
}

#[test]
fn a_refused_request_names_the_origin_and_the_rule_only() {
    let world = World::new(Config::default());
    let http = |_request: mcp_oauth::HttpRequest| async {
        Err::<mcp_oauth::HttpResponse, _>(mcp_oauth::TransportError::refused(
            "it resolves to a loopback address",
        ))
    };
    let services = mcp_oauth::Services::new(Arc::new(http), world.clone(), world.clone())
        .with_user_agent(world.clone());
    let mut auth = Authorizer::new(settings(), services);
    let header = r#"Bearer resource_metadata="https://127.0.0.1:8443/internal/admin?delete=1""#;
    let err = block_on(auth.handle_challenge(401, &[header])).unwrap_err();
    assert!(matches!(err, AuthError::Refused { .. }), "{err:?}");
    assert!(!err.is_transient());
    assert_eq!(
        err.to_string(),
        "protected resource metadata request to https://127.0.0.1:8443 refused: it resolves to a loopback address"
    );
    assert!(world.authorize_urls().is_empty());
}

#[test]
fn redirects_from_metadata_urls_are_never_followed() {
    let world = World::new(Config::default());
    let asked = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let log = asked.clone();
    let http = move |request: mcp_oauth::HttpRequest| {
        log.lock().unwrap().push(request.uri().to_string());
        async {
            Ok(http::Response::builder()
                .status(302)
                .header("location", "https://127.0.0.1:8443/internal/admin")
                .body(Vec::new())
                .unwrap())
        }
    };
    let services = mcp_oauth::Services::new(Arc::new(http), world.clone(), world.clone())
        .with_user_agent(world.clone());
    let mut auth = Authorizer::new(settings(), services);
    let header = format!(r#"Bearer resource_metadata="{ORIGIN}/custom/prm""#);
    let _ = block_on(auth.handle_challenge(401, &[header.as_str()]));
    let asked = asked.lock().unwrap();
    assert!(!asked.is_empty());
    assert!(
        asked.iter().all(|u| !u.contains("internal")),
        "a redirect was followed: {asked:?}"
    );
    assert!(world.authorize_urls().is_empty());
}

#[test]
fn pre_registered_clients_use_basic_and_never_register() {
    let world = World::new(Config {
        dcr: false,
        auth_methods: Some(vec!["client_secret_basic".into()]),
        ..Config::default()
    });
    let mut s = settings();
    s.client_id = Some("pre-registered-client".into());
    s.client_secret = Some(ClientSecret::new("pre-registered-secret"));
    let mut auth = world.authorizer(s);
    unauthorized(&world, &mut auth).unwrap();
    assert!(world.registrations().is_empty());
    let token = &world.token_requests()[0];
    let basic = base64::engine::general_purpose::STANDARD
        .encode("pre-registered-client:pre-registered-secret");
    assert_eq!(token.authorization, Some(format!("Basic {basic}")));
    assert_eq!(token.form("client_secret"), None);
    assert_eq!(
        auth.tokens().unwrap().client_secret,
        None,
        "a configured secret is not copied into the store"
    );
}

#[test]
fn cimd_is_used_when_supported_and_dcr_is_not() {
    let world = World::new(Config {
        cimd: true,
        ..Config::default()
    });
    let mut s = settings();
    s.client_metadata_url = Some(CIMD.to_owned());
    let mut auth = world.authorizer(s);
    unauthorized(&world, &mut auth).unwrap();
    assert!(world.registrations().is_empty());
    assert_eq!(
        query(&world.authorize_urls()[0], "client_id").as_deref(),
        Some(CIMD)
    );
    let token = &world.token_requests()[0];
    assert_eq!(token.form("client_id").as_deref(), Some(CIMD));
    assert_eq!(token.authorization, None);
}

#[test]
fn no_randomness_stops_before_the_browser() {
    let (world, err) = refused(Config {
        no_randomness: true,
        ..Config::default()
    });
    assert!(matches!(err, AuthError::NoRandomness(_)), "{err}");
    assert_eq!(
        err.to_string(),
        "no secure random bytes are available: no entropy"
    );
    // The seam's own error is the source, whole: a host can still tell what it was.
    let source = std::error::Error::source(&err).expect("the seam's error is kept");
    let io = source
        .downcast_ref::<std::io::Error>()
        .expect("the source is the io::Error the seam returned");
    assert_eq!(io.kind(), std::io::ErrorKind::Other);
    assert!(
        world.authorize_urls().is_empty(),
        "no guessable state or verifier is ever sent"
    );
}

#[test]
fn no_identity_is_a_clear_error() {
    let (world, err) = refused(Config {
        dcr: false,
        ..Config::default()
    });
    assert!(matches!(err, AuthError::NoClientIdentity { .. }));
    assert!(err.to_string().contains("client_id"), "{err}");
    assert!(
        world.authorize_urls().is_empty(),
        "no browser without a client"
    );
}

#[test]
fn no_pkce_no_authorization_and_no_registration() {
    let (world, err) = refused(Config {
        pkce: false,
        ..Config::default()
    });
    assert!(
        matches!(err, AuthError::Protocol(Error::PkceNotSupported { .. })),
        "{err}"
    );
    assert!(world.authorize_urls().is_empty());
    assert!(world.registrations().is_empty());
}

#[test]
fn a_resource_mismatch_stops_before_authorization_server_discovery() {
    let (world, err) = refused(Config {
        prm_resource: Some("https://evil.example.com/mcp".into()),
        ..Config::default()
    });
    assert!(
        matches!(err, AuthError::Protocol(Error::ResourceMismatch { .. })),
        "{err}"
    );
    assert_eq!(world.urls(), [format!("GET {ORIGIN}/custom/prm")]);
    assert!(world.authorize_urls().is_empty());
}

#[test]
fn a_wrong_issuer_in_metadata_is_refused_and_its_endpoints_unused() {
    let (world, err) = refused(Config {
        meta_issuer: Some("https://attacker.example.com".into()),
        ..Config::default()
    });
    assert!(
        matches!(err, AuthError::Protocol(Error::IssuerMismatch { .. })),
        "{err}"
    );
    assert_eq!(world.urls().len(), 2);
    assert!(world.authorize_urls().is_empty());
}

#[test]
fn iss_in_the_redirect() {
    let cases: [(bool, Option<String>, bool); 6] = [
        (true, Some(AS.to_owned()), true),
        (false, None, true),
        (false, Some(AS.to_owned()), true),
        (true, None, false),
        (true, Some("https://evil.example.com".to_owned()), false),
        (false, Some("https://evil.example.com".to_owned()), false),
    ];
    for (supported, iss, ok) in cases {
        let world = World::new(Config {
            iss_supported: supported,
            iss_in_redirect: iss.clone(),
            ..Config::default()
        });
        let mut auth = world.authorizer(settings());
        let result = unauthorized(&world, &mut auth);
        assert_eq!(result.is_ok(), ok, "{supported} {iss:?}: {result:?}");
        assert_eq!(world.authorize_urls().len(), 1);
        assert_eq!(
            world.token_requests().len(),
            usize::from(ok),
            "{supported} {iss:?}"
        );
    }
    // A trailing slash, a default port or another case is another issuer (exact string
    // compare), advertised or not; the code never reaches the token endpoint.
    for (supported, iss) in [
        (true, format!("{AS}/")),
        (true, "https://auth.example.com:443".to_owned()),
        (false, "HTTPS://AUTH.EXAMPLE.COM".to_owned()),
        (false, format!("{AS}/")),
    ] {
        let world = World::new(Config {
            iss_supported: supported,
            iss_in_redirect: Some(iss.clone()),
            ..Config::default()
        });
        let mut auth = world.authorizer(settings());
        let err = unauthorized(&world, &mut auth).unwrap_err();
        assert!(
            matches!(err, AuthError::Protocol(Error::Redirect(_))),
            "{iss}: {err}"
        );
        assert!(world.token_requests().is_empty(), "{iss}");
        assert!(auth.tokens().is_none(), "{iss}");
    }
}

#[test]
fn scope_from_the_challenge_then_resource_scopes() {
    let world = World::new(Config {
        prm_scopes: Some(vec!["mcp:basic".into(), "mcp:read".into()]),
        ..Config::default()
    });
    let mut auth = world.authorizer(settings());
    let header = format!(r#"Bearer resource_metadata="{ORIGIN}/custom/prm", scope="mcp:only""#);
    block_on(auth.handle_challenge(401, &[header.as_str()])).unwrap();
    assert_eq!(
        query(&world.authorize_urls()[0], "scope").as_deref(),
        Some("mcp:only")
    );

    let mut auth = world.authorizer(settings());
    unauthorized(&world, &mut auth).unwrap();
    assert_eq!(
        query(&world.authorize_urls()[1], "scope").as_deref(),
        Some("mcp:basic mcp:read")
    );
}

#[test]
fn offline_access_is_asked_for_only_where_the_authorization_server_lists_it() {
    // Listed: added to the scope a user's login asks for, and kept through a step-up.
    let world = World::new(Config {
        prm_scopes: Some(vec!["mcp:basic".into()]),
        as_scopes: Some(vec!["mcp:basic".into(), "offline_access".into()]),
        ..Config::default()
    });
    let mut auth = world.authorizer(settings());
    unauthorized(&world, &mut auth).unwrap();
    assert_eq!(
        query(&world.authorize_urls()[0], "scope").as_deref(),
        Some("mcp:basic offline_access")
    );
    let registration: serde_json::Value =
        serde_json::from_str(&world.registrations()[0].body).unwrap();
    assert_eq!(
        registration["grant_types"],
        serde_json::json!(["authorization_code", "refresh_token"])
    );
    let forbidden = r#"Bearer error="insufficient_scope", scope="mcp:write""#;
    block_on(auth.handle_challenge(403, &[forbidden])).unwrap();
    assert_eq!(
        query(&world.authorize_urls()[1], "scope").as_deref(),
        Some("mcp:basic offline_access mcp:write")
    );

    // Not listed: never asked for, even when the resource or a challenge names it.
    for as_scopes in [Some(vec!["mcp:basic".into(), "mcp:read".into()]), None] {
        let world = World::new(Config {
            prm_scopes: Some(vec!["mcp:basic".into(), "offline_access".into()]),
            as_scopes,
            ..Config::default()
        });
        let mut auth = world.authorizer(settings());
        unauthorized(&world, &mut auth).unwrap();
        let header = format!(
            r#"Bearer resource_metadata="{ORIGIN}/custom/prm", scope="offline_access mcp:x""#
        );
        let mut auth = world.authorizer(settings());
        block_on(auth.handle_challenge(401, &[header.as_str()])).unwrap();
        let forbidden = r#"Bearer error="insufficient_scope", scope="offline_access""#;
        block_on(auth.handle_challenge(403, &[forbidden])).unwrap();
        let scopes: Vec<Option<String>> = world
            .authorize_urls()
            .iter()
            .map(|u| query(u, "scope"))
            .collect();
        assert_eq!(
            scopes,
            [
                Some("mcp:basic".to_owned()),
                Some("mcp:x".to_owned()),
                Some("mcp:x".to_owned())
            ]
        );
        for registration in world.registrations() {
            assert!(!registration.body.contains("offline_access"));
        }
    }

    // No scope anywhere: omitted, not replaced by offline_access alone.
    let world = World::new(Config {
        as_scopes: Some(vec!["offline_access".into()]),
        ..Config::default()
    });
    let mut auth = world.authorizer(settings());
    unauthorized(&world, &mut auth).unwrap();
    assert_eq!(query(&world.authorize_urls()[0], "scope"), None);
}

#[test]
fn step_up_asks_for_the_union_and_gives_up_after_three_attempts() {
    let world = World::new(Config {
        prm_scopes: Some(vec!["mcp:profile".into()]),
        ..Config::default()
    });
    let mut auth = world.authorizer(settings());
    let header = format!(r#"Bearer resource_metadata="{ORIGIN}/custom/prm", scope="mcp:basic""#);
    block_on(auth.handle_challenge(401, &[header.as_str()])).unwrap();
    let forbidden = r#"Bearer error="insufficient_scope", scope="mcp:write""#;
    block_on(auth.handle_challenge(403, &[forbidden])).unwrap();
    assert_eq!(
        query(&world.authorize_urls()[1], "scope").as_deref(),
        Some("mcp:basic mcp:write"),
        "union with what was asked, not with the decoy scopes_supported"
    );
    assert_eq!(
        auth.tokens().unwrap().scope.as_deref(),
        Some("mcp:basic mcp:write")
    );

    block_on(auth.handle_challenge(403, &[forbidden])).unwrap();
    let err = block_on(auth.handle_challenge(403, &[forbidden])).unwrap_err();
    assert!(
        matches!(err, AuthError::TooManyAttempts { attempts: 3, .. }),
        "{err}"
    );
    assert_eq!(
        world.authorize_urls().len(),
        3,
        "at most 3 authorization attempts"
    );

    auth.request_succeeded();
    block_on(auth.handle_challenge(403, &[forbidden])).unwrap();
    assert_eq!(
        world.authorize_urls().len(),
        4,
        "a success starts a new chain"
    );

    let err =
        block_on(auth.handle_challenge(403, &[r#"Bearer error="access_denied""#])).unwrap_err();
    assert!(matches!(err, AuthError::Forbidden { .. }));
    assert!(matches!(
        block_on(auth.handle_challenge(500, &[])),
        Err(AuthError::NotAChallenge { status: 500 })
    ));
}

#[test]
fn refresh_ahead_of_expiry_keeps_the_rotated_refresh_token() {
    let (world, mut auth) = logged_in(Config::default());
    auth.take_changed();
    let first_refresh = auth.tokens().unwrap().refresh_token.clone().unwrap();
    assert!(!auth.needs_refresh());
    assert!(!block_on(auth.refresh_if_needed()).unwrap());

    world.advance(3_600_000 - 30_000);
    assert!(auth.needs_refresh(), "within the 60 s margin");
    world.clear_log();
    assert!(block_on(auth.refresh_if_needed()).unwrap());
    assert!(auth.take_changed());
    let token = &world.token_requests()[0];
    assert_eq!(token.form("grant_type").as_deref(), Some("refresh_token"));
    assert_eq!(token.form("resource").as_deref(), Some(MCP));
    let second_refresh = auth.tokens().unwrap().refresh_token.clone().unwrap();
    assert_ne!(
        first_refresh, second_refresh,
        "the new refresh token is kept"
    );
    assert!(world.authorize_urls().is_empty());

    // Without rotation the old refresh token stays.
    world.set(|c| c.rotate = false);
    world.advance(3_600_000);
    assert!(block_on(auth.refresh_if_needed()).unwrap());
    assert_eq!(
        auth.tokens().unwrap().refresh_token.as_ref(),
        Some(&second_refresh)
    );
}

#[test]
fn a_401_refreshes_first_then_logs_in_if_the_refresh_token_is_dead() {
    let (world, mut auth) = logged_in(Config::default());
    world.clear_log();

    unauthorized(&world, &mut auth).unwrap();
    assert!(world.authorize_urls().is_empty(), "a refresh was enough");
    assert_eq!(
        world.token_requests()[0].form("grant_type").as_deref(),
        Some("refresh_token")
    );

    // A stale copy of the store: its refresh token was rotated away.
    let stale = auth.tokens().cloned();
    auth.request_succeeded();
    unauthorized(&world, &mut auth).unwrap();
    auth.set_tokens(stale);
    auth.request_succeeded();
    world.clear_log();
    unauthorized(&world, &mut auth).unwrap();
    let grants: Vec<_> = world
        .token_requests()
        .iter()
        .map(|t| t.form("grant_type").unwrap())
        .collect();
    assert_eq!(grants, ["refresh_token", "authorization_code"]);
    assert_eq!(
        world.authorize_urls().len(),
        1,
        "invalid_grant: a full login"
    );
    assert!(
        world.registrations().is_empty(),
        "the stored client is reused"
    );
}

#[test]
fn a_failing_token_endpoint_keeps_the_tokens() {
    let (world, mut auth) = logged_in(Config::default());
    auth.take_changed();
    let before = auth.tokens().cloned();
    world.set(|c| c.token_down = Some(503));
    world.clear_log();
    let err = unauthorized(&world, &mut auth).unwrap_err();
    assert!(err.is_transient(), "{err}");
    assert_eq!(err, AuthError::Token(TokenError::Transient { status: 503 }));
    assert!(world.authorize_urls().is_empty());
    assert_eq!(auth.tokens().cloned(), before);
    assert!(!auth.take_changed());

    world.advance(3_600_000);
    assert!(
        block_on(auth.refresh_if_needed())
            .unwrap_err()
            .is_transient()
    );
    assert_eq!(auth.tokens().cloned(), before);
}

#[test]
fn a_dead_refresh_token_ahead_of_expiry_is_forgotten() {
    let (world, mut auth) = logged_in(Config::default());
    let stale = auth.tokens().cloned();
    world.advance(3_600_000);
    block_on(auth.refresh_if_needed()).unwrap();
    auth.set_tokens(stale);
    let err = block_on(auth.refresh_if_needed()).unwrap_err();
    assert!(
        matches!(err, AuthError::Token(TokenError::InvalidGrant(_))),
        "{err}"
    );
    assert!(auth.tokens().is_none());
    assert!(auth.take_changed(), "the removal is to be persisted");
}

#[test]
fn token_endpoint_authentication_follows_registration() {
    let cases = [
        ("client_secret_basic", true, false),
        ("client_secret_post", false, true),
        ("none", false, false),
    ];
    for (method, basic, post) in cases {
        let (world, _) = logged_in(Config {
            auth_methods: Some(vec![method.to_owned()]),
            reg_secret: (method != "none").then(|| "reg-secret".to_owned()),
            reg_method: Some(method.to_owned()),
            ..Config::default()
        });
        let token = &world.token_requests()[0];
        assert_eq!(token.authorization.is_some(), basic, "{method}");
        assert_eq!(token.form("client_secret").is_some(), post, "{method}");
        assert_eq!(token.form("client_id").is_some(), !basic, "{method}");
    }
}

#[test]
fn the_registration_answer_decides_token_endpoint_authentication() {
    // The metadata lists both; the registration answer names one: that one is used, also
    // after a restart, from the store.
    for (method, basic) in [("client_secret_post", false), ("client_secret_basic", true)] {
        let (world, auth) = logged_in(Config {
            auth_methods: Some(vec![
                "client_secret_basic".to_owned(),
                "client_secret_post".to_owned(),
            ]),
            reg_secret: Some("reg-secret".to_owned()),
            reg_method: Some(method.to_owned()),
            prm: Prm::PathInserted,
            ..Config::default()
        });
        let token = &world.token_requests()[0];
        assert_eq!(token.authorization.is_some(), basic, "{method}");
        assert_eq!(token.form("client_secret").is_some(), !basic, "{method}");

        let mut file = AuthFile::default();
        file.servers
            .insert("s".into(), auth.tokens().cloned().unwrap());
        let mut again = world.authorizer(settings());
        again.set_tokens(AuthFile::parse(&file.encode()).unwrap().servers.remove("s"));
        world.clear_log();
        world.advance(3_600_000);
        assert!(block_on(again.refresh_if_needed()).unwrap());
        let refresh = &world.token_requests()[0];
        assert_eq!(
            refresh.authorization.is_some(),
            basic,
            "{method} after a restart"
        );
        assert_eq!(
            refresh.form("client_secret").is_some(),
            !basic,
            "{method} after a restart"
        );
    }
}

#[test]
fn registration_states_its_application_type_and_grant_types() {
    let (world, _) = logged_in(Config::default());
    let body: serde_json::Value = serde_json::from_str(&world.registrations()[0].body).unwrap();
    assert_eq!(
        body["application_type"], "native",
        "a loopback redirect URI"
    );
    assert_eq!(
        body["grant_types"],
        serde_json::json!(["authorization_code", "refresh_token"])
    );

    let world = World::new(Config::default());
    let mut s = settings();
    s.application_type = Some(mcp_oauth::registration::ApplicationType::Web);
    let mut auth = world.authorizer(s);
    unauthorized(&world, &mut auth).unwrap();
    let body: serde_json::Value = serde_json::from_str(&world.registrations()[0].body).unwrap();
    assert_eq!(body["application_type"], "web", "configured");
}

#[test]
fn a_registration_refused_for_the_redirect_uri_is_a_clear_error() {
    let (world, err) = refused(Config {
        reg_refused: Some(serde_json::json!({
            "error": "invalid_redirect_uri",
            "error_description": "only https redirect URIs"
        })),
        ..Config::default()
    });
    assert!(
        matches!(err, AuthError::Protocol(Error::RedirectUriRefused { .. })),
        "{err}"
    );
    let text = err.to_string();
    assert!(
        text.contains(crate::fake::REDIRECT) && text.contains("only https redirect URIs"),
        "{text}"
    );
    assert!(
        world.authorize_urls().is_empty(),
        "no browser without a client"
    );
    assert!(world.token_requests().is_empty());
}

#[test]
fn client_credentials_with_basic_or_a_signed_assertion() {
    let world = World::new(Config::default());
    let mut s = settings();
    s.grant = GrantType::ClientCredentials;
    s.client_id = Some("machine".into());
    s.client_secret = Some(ClientSecret::new("machine-secret"));
    let mut auth = world.authorizer(s.clone());
    unauthorized(&world, &mut auth).unwrap();
    assert!(world.authorize_urls().is_empty());
    let token = &world.token_requests()[0];
    assert_eq!(
        token.form("grant_type").as_deref(),
        Some("client_credentials")
    );
    assert!(
        token
            .authorization
            .as_deref()
            .is_some_and(|a| a.starts_with("Basic "))
    );
    assert_eq!(token.form("resource").as_deref(), Some(MCP));

    let world = World::new(Config::default());
    s.client_secret = None;
    let mut auth = world.authorizer(s);
    unauthorized(&world, &mut auth).unwrap();
    let token = &world.token_requests()[0];
    assert_eq!(
        token.form("client_assertion_type").as_deref(),
        Some("urn:ietf:params:oauth:client-assertion-type:jwt-bearer")
    );
    assert!(
        token
            .form("client_assertion")
            .unwrap()
            .ends_with(&format!(".{SIGNATURE_B64}"))
    );
    let claims = world.claims.lock().unwrap()[0].clone();
    assert_eq!(claims["iss"], "machine");
    assert_eq!(claims["sub"], "machine");
    assert_eq!(claims["aud"], AS);
    assert_eq!(
        claims["exp"].as_u64().unwrap() - claims["iat"].as_u64().unwrap(),
        300
    );

    // Ahead of expiry the grant is simply made again.
    world.advance(3_600_000);
    assert!(block_on(auth.refresh_if_needed()).unwrap());
}

#[test]
fn jwt_bearer_with_a_workload_token_or_an_identity_assertion_from_the_idp() {
    // Workload identity: the configured JWT is the assertion; no browser, no secret.
    let world = World::new(Config::default());
    let mut s = settings();
    s.grant = GrantType::JwtBearer;
    s.client_id = Some("workload".into());
    s.assertion = Some(JwtAssertion::new("workload-jwt-secret"));
    let mut auth = world.authorizer(s);
    unauthorized(&world, &mut auth).unwrap();
    assert!(world.authorize_urls().is_empty());
    let token = &world.token_requests()[0];
    assert_eq!(token.form("grant_type").as_deref(), Some(flow::JWT_BEARER));
    assert_eq!(
        token.form("assertion").as_deref(),
        Some("workload-jwt-secret")
    );
    assert_eq!(token.form("client_id").as_deref(), Some("workload"));
    assert_eq!(token.form("resource").as_deref(), Some(MCP));
    assert!(token.authorization.is_none());

    // Enterprise-managed: the ID token is exchanged at the identity provider for an assertion
    // addressed to this authorization server and resource, which the client then presents.
    let world = World::new(Config::default());
    let mut s = settings();
    s.grant = GrantType::IdentityAssertion;
    s.client_id = Some("host".into());
    s.client_secret = Some(ClientSecret::new("host-secret"));
    s.identity_provider = Some(IdentityProvider::new(
        format!("{IDP}/token"),
        "idp-client".into(),
        JwtAssertion::new("id-token-secret"),
    ));
    let mut auth = world.authorizer(s.clone());
    unauthorized(&world, &mut auth).unwrap();
    assert!(world.authorize_urls().is_empty());
    let requests = world.token_requests();
    let (exchange, grant) = (&requests[0], &requests[1]);
    assert_eq!(exchange.url, format!("{IDP}/token"));
    assert_eq!(exchange.form("audience").as_deref(), Some(AS));
    assert_eq!(exchange.form("resource").as_deref(), Some(MCP));
    assert_eq!(
        exchange.form("subject_token").as_deref(),
        Some("id-token-secret")
    );
    assert_eq!(exchange.form("client_id").as_deref(), Some("idp-client"));
    assert_eq!(grant.form("grant_type").as_deref(), Some(flow::JWT_BEARER));
    assert_eq!(
        grant.form("assertion"),
        Some(format!("id-jag-secret-for-{AS}"))
    );
    assert!(
        grant
            .authorization
            .as_deref()
            .is_some_and(|a| a.starts_with("Basic "))
    );

    // Without an identity provider the grant says what is missing, and sends nothing.
    let world = World::new(Config::default());
    s.identity_provider = None;
    let mut auth = world.authorizer(s);
    let error = unauthorized(&world, &mut auth).unwrap_err();
    assert!(matches!(error, AuthError::NoAssertion { .. }), "{error}");
    assert!(world.token_requests().is_empty());
}

#[test]
fn a_moved_authorization_server_gets_its_own_registration() {
    let (world, mut auth) = logged_in(Config::default());
    auth.request_succeeded();
    let second = "https://auth2.example.com";
    world.set(|c| {
        c.issuer = second.to_owned();
        c.meta_url = Some(format!("{second}/.well-known/oauth-authorization-server"));
    });
    world.clear_log();
    unauthorized(&world, &mut auth).unwrap();
    assert!(
        world.urls().contains(&format!("POST {second}/register")),
        "{:?}",
        world.urls()
    );
    for request in world.log() {
        assert!(
            request.url.starts_with(ORIGIN) || request.url.starts_with(second),
            "{}",
            request.url
        );
        assert!(
            !request.body.contains("client-1"),
            "AS1's client id went to AS2: {request:?}"
        );
    }
    assert_eq!(auth.tokens().unwrap().issuer.as_deref(), Some(second));
    // Each authorization server's registration is kept under its own issuer, for the store.
    let made = auth.take_registrations();
    assert_eq!(
        made.iter()
            .map(|(i, r)| (i.as_str(), r.client_id.as_str()))
            .collect::<Vec<_>>(),
        [(AS, "client-1"), (second, "client-4")]
    );
    assert!(auth.take_registrations().is_empty(), "taken once");

    // Back to the first: its own registration again, nothing registered, AS2's id unseen.
    auth.request_succeeded();
    move_to(&world, AS);
    world.clear_log();
    unauthorized(&world, &mut auth).unwrap();
    assert!(world.registrations().is_empty(), "{:?}", world.urls());
    assert_eq!(
        query(&world.authorize_urls()[0], "client_id").as_deref(),
        Some("client-1")
    );
    assert!(world.log().iter().all(|r| !r.body.contains("client-4")));
}

/// The PRM now names `issuer`, whose metadata is at its RFC 8414 URL.
fn move_to(world: &World, issuer: &str) {
    world.set(|c| {
        c.issuer = issuer.to_owned();
        c.meta_url = Some(format!("{issuer}/.well-known/oauth-authorization-server"));
    });
}

#[test]
fn stored_registrations_are_used_only_with_their_issuer() {
    let (world, mut first) = logged_in(Config::default());
    let registrations: std::collections::BTreeMap<_, _> =
        first.take_registrations().into_iter().collect();
    let mut file = AuthFile::default();
    file.clients.clone_from(&registrations);
    let stored = AuthFile::parse(&file.encode()).unwrap().clients;
    assert_eq!(stored[AS].redirect_uris, [crate::fake::REDIRECT]);

    // Another server behind the same authorization server (or a new process): no new
    // registration, the stored client.
    world.clear_log();
    let mut auth = world.authorizer(settings());
    auth.set_registrations(stored.clone());
    unauthorized(&world, &mut auth).unwrap();
    assert!(world.registrations().is_empty(), "{:?}", world.urls());
    assert_eq!(
        query(&world.authorize_urls()[0], "client_id").as_deref(),
        Some("client-1")
    );
    assert!(auth.take_registrations().is_empty());

    // The same issuer with a slash is another authorization server: it gets its own.
    let slashed = format!("{AS}/");
    world.set(|c| {
        c.issuer.clone_from(&slashed);
        c.meta_url = Some(format!("{AS}/.well-known/oauth-authorization-server"));
    });
    world.clear_log();
    let mut auth = world.authorizer(settings());
    auth.set_registrations(stored.clone());
    unauthorized(&world, &mut auth).unwrap();
    assert_eq!(world.registrations().len(), 1, "{:?}", world.urls());
    assert!(
        world
            .log()
            .iter()
            .all(|r| !r.body.contains("client-1") && !r.url.contains("client_id=client-1")),
        "AS1's client id went to another issuer"
    );
    assert_eq!(
        auth.take_registrations()
            .into_iter()
            .map(|(i, _)| i)
            .collect::<Vec<_>>(),
        [slashed]
    );

    // A registration for other redirect URIs is not used: register again.
    move_to(&world, AS);
    let mut elsewhere = stored;
    elsewhere.get_mut(AS).unwrap().redirect_uris = vec!["https://app.example/cb".into()];
    world.clear_log();
    let mut auth = world.authorizer(settings());
    auth.set_registrations(elsewhere);
    unauthorized(&world, &mut auth).unwrap();
    assert_eq!(world.registrations().len(), 1);
}

#[test]
fn pre_registered_credentials_stay_with_their_issuer() {
    let pre = |issuer: Option<&str>| {
        let mut s = settings();
        s.client_id = Some("pre-registered-client".into());
        s.client_secret = Some(ClientSecret::new("pre-registered-secret"));
        s.client_issuer = issuer.map(str::to_owned);
        s
    };
    let config = || Config {
        dcr: false,
        auth_methods: Some(vec!["client_secret_basic".into()]),
        prm: Prm::PathInserted,
        ..Config::default()
    };
    // Configured for this issuer: used.
    let world = World::new(config());
    let mut auth = world.authorizer(pre(Some(AS)));
    unauthorized(&world, &mut auth).unwrap();
    assert_eq!(world.token_requests().len(), 1);

    // Configured for another issuer (a slash is another): a clear error, nothing sent.
    for other in [format!("{AS}/"), "https://old-as.example.com".to_owned()] {
        let world = World::new(config());
        let mut auth = world.authorizer(pre(Some(&other)));
        let err = unauthorized(&world, &mut auth).unwrap_err();
        assert!(
            matches!(&err, AuthError::ClientIssuerMismatch { configured, found }
                if *configured == other && found == AS),
            "{err}"
        );
        assert!(world.authorize_urls().is_empty() && world.token_requests().is_empty());
        assert!(!err.to_string().contains("pre-registered-secret"), "{err}");
    }

    // No issuer configured: bound to the first one, and the binding survives a restart
    // through the stored tokens.
    let world = World::new(config());
    let mut auth = world.authorizer(pre(None));
    unauthorized(&world, &mut auth).unwrap();
    let mut file = AuthFile::default();
    file.servers
        .insert("s".into(), auth.tokens().cloned().unwrap());
    let second = "https://auth2.example.com";
    for restarted in [false, true] {
        if restarted {
            auth = world.authorizer(pre(None));
            auth.set_tokens(AuthFile::parse(&file.encode()).unwrap().servers.remove("s"));
        }
        auth.request_succeeded();
        move_to(&world, second);
        world.clear_log();
        let err = unauthorized(&world, &mut auth).unwrap_err();
        assert!(
            matches!(err, AuthError::ClientIssuerMismatch { .. }),
            "restarted {restarted}: {err}"
        );
        assert!(
            world
                .log()
                .iter()
                .all(|r| r.method == "GET" && !r.url.contains("pre-registered")),
            "restarted {restarted}: {:?}",
            world.urls()
        );
        move_to(&world, AS);
    }
}

#[test]
fn a_metadata_document_client_id_goes_to_every_authorization_server() {
    let world = World::new(Config {
        cimd: true,
        ..Config::default()
    });
    let mut s = settings();
    s.client_metadata_url = Some(CIMD.to_owned());
    let mut auth = world.authorizer(s);
    unauthorized(&world, &mut auth).unwrap();
    auth.request_succeeded();
    move_to(&world, "https://auth2.example.com");
    world.clear_log();
    unauthorized(&world, &mut auth).unwrap();
    assert!(world.registrations().is_empty());
    assert_eq!(
        query(&world.authorize_urls()[0], "client_id").as_deref(),
        Some(CIMD),
        "CIMD client ids are portable"
    );
    assert!(auth.take_registrations().is_empty());
}

#[test]
fn stored_tokens_are_used_and_refreshed_with_their_client() {
    let (world, auth) = logged_in(Config {
        prm: Prm::PathInserted,
        ..Config::default()
    });
    let mut file = AuthFile::default();
    file.servers
        .insert("s".into(), auth.tokens().cloned().unwrap());
    let bytes = file.encode();

    // A new process: the store is read back.
    let mut auth = world.authorizer(settings());
    auth.set_tokens(AuthFile::parse(&bytes).unwrap().servers.remove("s"));
    assert!(!auth.take_changed());
    assert!(auth.authorization_header().is_some());
    world.clear_log();
    world.advance(3_600_000);
    assert!(block_on(auth.refresh_if_needed()).unwrap());
    assert_eq!(
        world.token_requests()[0].form("client_id").as_deref(),
        Some("client-1")
    );
    assert!(world.registrations().is_empty());
}

#[test]
fn transport_failures_name_what_failed() {
    let world = World::new(Config::default());
    let mut auth = world.authorizer(settings());
    let err = block_on(auth.handle_challenge(
        401,
        &[r#"Bearer resource_metadata="https://down.example.com/prm""#],
    ))
    .unwrap_err();
    assert!(err.is_transient());
    assert!(
        err.to_string().contains("protected resource metadata"),
        "{err}"
    );
    assert!(err.to_string().contains("connection refused"), "{err}");

    // A configured endpoint may carry a credential in its userinfo or query: the error names
    // the endpoint without them.
    let mut s = settings();
    s.token_url = Some("https://user:pw-secret@down.example.com:8443/token?key=q-secret".into());
    let mut auth = world.authorizer(s);
    let err = unauthorized(&world, &mut auth).unwrap_err();
    let shown = format!("{err} {err:?} {:?}", auth.settings());
    assert!(
        shown.contains("token request to https://down.example.com:8443/token failed"),
        "{shown}"
    );
    assert!(
        !shown.contains("pw-secret") && !shown.contains("q-secret"),
        "{shown}"
    );
}

#[test]
fn no_secret_in_any_error_or_debug_string() {
    let secrets = [
        "at-secret",
        "rt-secret",
        "reg-secret",
        "pre-registered-secret",
        "code-secret",
        SIGNATURE_B64,
        "workload-jwt-secret",
        "id-token-secret",
        "id-jag-secret",
    ];
    let mut shown = Vec::new();
    let mut sent = String::new();
    let mut verifiers = Vec::new();
    let registered = || Config {
        reg_secret: Some("reg-secret".into()),
        reg_method: Some("client_secret_post".into()),
        ..Config::default()
    };
    let mut pre_registered = settings();
    pre_registered.client_id = Some("pre".into());
    pre_registered.client_secret = Some(ClientSecret::new("pre-registered-secret"));
    let mut machine = pre_registered.clone();
    machine.grant = GrantType::ClientCredentials;
    machine.client_secret = None;
    let mut workload = settings();
    workload.grant = GrantType::JwtBearer;
    workload.client_id = Some("workload".into());
    workload.assertion = Some(JwtAssertion::new("workload-jwt-secret"));
    let mut enterprise = settings();
    enterprise.grant = GrantType::IdentityAssertion;
    enterprise.client_id = Some("host".into());
    enterprise.identity_provider = Some(IdentityProvider::new(
        format!("{IDP}/token"),
        "idp-client".into(),
        JwtAssertion::new("id-token-secret"),
    ));
    let cases = [
        (
            Config {
                token_down: Some(503),
                ..registered()
            },
            settings(),
        ),
        (
            Config {
                iss_supported: true,
                ..registered()
            },
            settings(),
        ),
        (registered(), settings()),
        (Config::default(), pre_registered),
        (Config::default(), machine),
        (Config::default(), workload),
        (Config::default(), enterprise),
    ];
    for (config, s) in cases {
        let world = World::new(config);
        let mut auth = world.authorizer(s.clone());
        let result = unauthorized(&world, &mut auth);
        shown.push(format!("{result:?}"));
        if let Err(e) = &result {
            shown.push(e.to_string());
        }
        shown.push(format!("{auth:?} {:?} {s:?}", auth.tokens()));
        if let Some(t) = auth.tokens() {
            sent.push_str(t.access_token.secret());
            sent.extend(t.refresh_token.as_ref().map(|r| r.secret().to_owned()));
        }
        // A dead refresh token, then a dead code.
        world.set(|c| c.token_down = None);
        let stale = auth.tokens().cloned();
        let _ = unauthorized(&world, &mut auth);
        auth.set_tokens(stale);
        auth.request_succeeded();
        world.set(|c| c.token_down = Some(400));
        let result = unauthorized(&world, &mut auth);
        shown.push(format!("{result:?}"));
        if let Err(e) = &result {
            shown.push(e.to_string());
        }
        shown.push(format!("{auth:?} {:?}", world.services()));
        for request in world.log() {
            let basic = request
                .authorization
                .as_deref()
                .and_then(|a| a.strip_prefix("Basic "))
                .and_then(|b| base64::engine::general_purpose::STANDARD.decode(b).ok())
                .map(|b| String::from_utf8_lossy(&b).into_owned());
            sent.push_str(&format!("{} {} {basic:?}\n", request.url, request.body));
        }
        verifiers.extend(
            world
                .token_requests()
                .iter()
                .filter_map(|t| t.form("code_verifier")),
        );
    }
    // Every secret was sent or held, so its absence from what is shown means something.
    for secret in secrets {
        assert!(sent.contains(secret), "{secret} was never used:\n{sent}");
    }
    let all = shown.join("\n");
    for secret in secrets {
        assert!(!all.contains(secret), "{secret} printed in:\n{all}");
    }
    // The verifiers, whatever the fake's randomness made them, never show.
    assert!(!verifiers.is_empty());
    for verifier in verifiers {
        assert!(!all.contains(&verifier), "{verifier} printed in:\n{all}");
    }
}

#[test]
fn futures_are_send() {
    fn send<T: Send>(_: &T) {}
    let world = World::new(Config::default());
    let mut auth = world.authorizer(settings());
    send(&auth.handle_challenge(401, &[]));
    send(&auth.refresh_if_needed());
    send(&auth.login());
}

#[test]
fn stored_tokens_behind_a_challenge_only_prm_are_refreshed_from_their_issuer() {
    // A host that starts on stored tokens has never been challenged, and the protected
    // resource metadata only a 401 names is out of reach: the tokens' issuer and resource
    // are enough to refresh ahead of expiry, before any request is refused.
    let (world, auth) = logged_in(Config::default());
    let stored = auth.tokens().cloned();
    assert!(
        stored
            .as_ref()
            .is_some_and(|t| t.issuer.is_some() && t.resource.is_some())
    );

    let mut auth = world.authorizer(settings());
    auth.set_tokens(stored.clone());
    world.advance(3_600_000);
    world.clear_log();
    assert!(
        block_on(auth.refresh_if_needed()).unwrap(),
        "refreshed without a challenge"
    );
    let grants: Vec<_> = world
        .token_requests()
        .iter()
        .map(|t| t.form("grant_type").unwrap())
        .collect();
    assert_eq!(grants, ["refresh_token"]);
    assert_eq!(
        world.token_requests()[0].form("resource"),
        stored.and_then(|t| t.resource)
    );
    assert!(world.authorize_urls().is_empty() && world.registrations().is_empty());
    // Tokens that name no issuer still wait for the 401.
    let mut anonymous = auth.tokens().cloned().unwrap();
    anonymous.issuer = None;
    let mut auth = world.authorizer(settings());
    auth.set_tokens(Some(anonymous));
    world.advance(3_600_000);
    world.clear_log();
    assert!(!block_on(auth.refresh_if_needed()).unwrap());
    assert!(world.token_requests().is_empty());
}

#[test]
fn dpop_when_the_authorization_server_takes_es256_with_its_nonce_and_one_key_per_login() {
    let (world, mut auth) = logged_in(Config {
        dpop: true,
        dpop_nonce: Some("as-nonce-1".to_owned()),
        prm: Prm::PathInserted,
        ..Config::default()
    });
    // The first proof has no nonce and is refused with one; the second carries it.
    let tokens = world.token_requests();
    assert_eq!(tokens.len(), 2, "{:?}", world.urls());
    let (header, first) = tokens[0].proof().unwrap();
    let (_, second) = tokens[1].proof().unwrap();
    assert_eq!(header["typ"], "dpop+jwt");
    assert_eq!(header["alg"], "ES256");
    assert_eq!(header["jwk"]["crv"], "P-256");
    for claims in [&first, &second] {
        assert_eq!(claims["htm"], "POST");
        assert_eq!(claims["htu"], format!("{AS}/token"));
        assert_eq!(claims["iat"], 1_000, "seconds of the fake clock");
        assert!(claims.get("ath").is_none(), "no token is presented yet");
    }
    assert!(first.get("nonce").is_none());
    assert_eq!(second["nonce"], "as-nonce-1");
    assert_ne!(first["jti"], second["jti"]);
    let key = header["jwk"].clone();

    // The token is DPoP-bound: each request gets `DPoP <token>` and its own proof.
    let stored = auth.tokens().unwrap();
    assert_eq!(stored.token_type, "DPoP");
    assert!(stored.dpop_key.is_some());
    let credentials = auth.credentials().unwrap();
    assert!(credentials.is_dpop());
    let uri: http::Uri = MCP.parse().unwrap();
    let headers = credentials
        .headers(&http::Method::POST, &uri, Some("rs-nonce"))
        .unwrap();
    let authorization = headers[http::header::AUTHORIZATION].to_str().unwrap();
    assert!(
        authorization.starts_with("DPoP at-secret-"),
        "{authorization}"
    );
    let (_, claims) = crate::fake::proof_parts(headers["dpop"].to_str().unwrap()).unwrap();
    assert_eq!(claims["htu"], MCP);
    assert_eq!(claims["nonce"], "rs-nonce");
    let token = authorization.trim_start_matches("DPoP ");
    let ath = sha2::Sha256::digest(token.as_bytes());
    assert_eq!(
        claims["ath"],
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(ath)
    );

    // A refresh proves the same key, with the nonce the server gave last: one request.
    world.clear_log();
    world.advance(3_600_000);
    assert!(block_on(auth.refresh_if_needed()).unwrap());
    let refresh = world.token_requests();
    assert_eq!(refresh.len(), 1);
    assert_eq!(
        refresh[0].form("grant_type").as_deref(),
        Some("refresh_token")
    );
    let (header, claims) = refresh[0].proof().unwrap();
    assert_eq!(header["jwk"], key, "the key the tokens are bound to");
    assert_eq!(claims["nonce"], "as-nonce-1");

    // A new login makes a new key.
    world.clear_log();
    block_on(auth.login()).unwrap();
    let (header, _) = world.token_requests()[0].proof().unwrap();
    assert_ne!(header["jwk"], key);
    let shown = format!("{auth:?} {:?}", auth.tokens());
    assert!(!shown.contains("dpop-key-secret"), "{shown}");
}

#[test]
fn no_dpop_unless_the_authorization_server_takes_es256() {
    let (world, auth) = logged_in(Config::default());
    assert!(world.token_requests().iter().all(|t| t.dpop.is_none()));
    assert_eq!(auth.tokens().unwrap().token_type, "Bearer");
    assert!(!auth.credentials().unwrap().is_dpop());
    assert!(
        auth.authorization_header()
            .unwrap()
            .to_str()
            .unwrap()
            .starts_with("Bearer ")
    );
}

#[test]
fn a_resource_that_never_said_dpop_gets_bearer_tokens_from_an_authorization_server_offering_it() {
    // oidc-provider offers DPoP by default; a resource behind the TypeScript SDK's bearer
    // middleware challenges with `Bearer` alone and refuses `Authorization: DPoP`.
    let (world, auth) = logged_in(Config {
        dpop: true,
        rs_dpop: RsDpop::Never,
        ..Config::default()
    });
    let tokens = world.token_requests();
    assert!(!tokens.is_empty(), "a token request was made");
    assert!(tokens.iter().all(|t| t.dpop.is_none()), "no proof was sent");
    assert_eq!(auth.tokens().unwrap().token_type, "Bearer");
    assert!(!auth.credentials().unwrap().is_dpop());
}

#[test]
fn a_resource_whose_metadata_lists_dpop_algorithms_gets_bound_tokens() {
    // Its challenge says `Bearer` only; its RFC 9728 metadata says it takes DPoP.
    let (world, auth) = logged_in(Config {
        dpop: true,
        rs_dpop: RsDpop::Metadata,
        ..Config::default()
    });
    assert!(!challenge(&world).contains("DPoP"), "{}", challenge(&world));
    assert!(world.token_requests()[0].proof().is_some());
    assert_eq!(auth.tokens().unwrap().token_type, "DPoP");
    assert!(auth.credentials().unwrap().is_dpop());
}

#[test]
fn stored_dpop_tokens_without_their_key_are_not_used() {
    let (world, auth) = logged_in(Config {
        dpop: true,
        ..Config::default()
    });
    let mut tokens = auth.tokens().unwrap().clone();
    let mut fresh = world.authorizer(settings());
    fresh.set_tokens(Some(tokens.clone()));
    assert!(fresh.credentials().unwrap().is_dpop(), "with its key");
    tokens.dpop_key = None;
    fresh.set_tokens(Some(tokens));
    assert!(fresh.tokens().is_none(), "a bound token without its key");
    assert!(fresh.authorization_header().is_none());
}

#[test]
fn refresh_is_due_once_per_lifetime_however_short_and_never_without_expiry() {
    // An hour-long token: the 60 s margin before expiry.
    let (world, mut auth) = logged_in(Config::default());
    let expires = auth.tokens().unwrap().expires_at_ms.unwrap();
    assert_eq!(auth.refresh_due_ms(), Some(expires - 60_000));

    // A 10 s token under the 60 s margin (rmcp #1450): due halfway, not on arrival, and a
    // refresh makes it due halfway through the new token's life.
    let (world_short, mut short) = logged_in(Config {
        expires_in: Some(10),
        ..Config::default()
    });
    let expires = short.tokens().unwrap().expires_at_ms.unwrap();
    assert_eq!(short.refresh_due_ms(), Some(expires - 5_000));
    assert!(!short.needs_refresh(), "not due on arrival");
    assert!(!block_on(short.refresh_if_needed()).unwrap());
    world_short.clear_log();
    world_short.advance(5_000);
    assert!(block_on(short.refresh_if_needed()).unwrap());
    assert!(!block_on(short.refresh_if_needed()).unwrap(), "once");
    assert_eq!(world_short.token_requests().len(), 1);
    let renewed = short.tokens().unwrap().expires_at_ms.unwrap();
    assert_eq!(short.refresh_due_ms(), Some(renewed - 5_000));

    // Without expires_in, or without a refresh token, there is nothing to do ahead of time.
    let (_, no_expiry) = logged_in(Config {
        expires_in: None,
        ..Config::default()
    });
    assert!(no_expiry.tokens().unwrap().expires_at_ms.is_none());
    assert_eq!(no_expiry.refresh_due_ms(), None);
    let mut tokens = auth.tokens().unwrap().clone();
    tokens.refresh_token = None;
    auth.set_tokens(Some(tokens));
    assert_eq!(auth.refresh_due_ms(), None, "no refresh token");
    drop(world);
}
