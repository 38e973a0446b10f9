//! The fake authorization server driven by hand with a raw hyper client: challenge, metadata,
//! registration, authorization, token (with its PKCE, resource and client checks), refresh
//! rotation, and a real MCP answer through the protected endpoint.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use bytes::Bytes;
use http::{Method, Request, StatusCode, header};
use http_body_util::{BodyExt as _, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use mcp_testkit::fake_auth::{AsMetadata, FakeAuth, FakeAuthOptions, PrmLocation, Role};
use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};

type Raw = Client<HttpConnector, Full<Bytes>>;

fn raw() -> Raw {
    Client::builder(TokioExecutor::new()).build_http()
}

async fn call(
    client: &Raw,
    method: Method,
    url: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (StatusCode, http::HeaderMap, String) {
    let mut req = Request::builder().method(method).uri(url);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let answer = client
        .request(req.body(Full::new(Bytes::from(body.to_owned()))).unwrap())
        .await
        .unwrap();
    let status = answer.status();
    let headers = answer.headers().clone();
    let body = answer.into_body().collect().await.unwrap().to_bytes();
    (status, headers, String::from_utf8_lossy(&body).into_owned())
}

fn form(pairs: &[(&str, &str)]) -> String {
    url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(pairs)
        .finish()
}

const FORM: (&str, &str) = ("content-type", "application/x-www-form-urlencoded");
const REDIRECT: &str = "http://127.0.0.1:9/callback";

/// A JSON document fetched with `GET`, after checking that it came with 200.
async fn get_json(client: &Raw, url: &str) -> Value {
    let (status, _, body) = call(client, Method::GET, url, &[], "").await;
    assert_eq!(status, StatusCode::OK, "{url}: {body}");
    serde_json::from_str(&body).unwrap()
}

/// A refresh-token grant at `fake`'s token endpoint for `client_id`: the status and the body.
async fn refresh(
    client: &Raw,
    fake: &FakeAuth,
    client_id: &str,
    refresh_token: &str,
) -> (StatusCode, String) {
    let body = form(&[
        ("grant_type", "refresh_token"),
        ("refresh_token", refresh_token),
        ("resource", &fake.resource()),
        ("client_id", client_id),
    ]);
    let token_url = format!("{}/token", fake.issuer());
    let (status, _, body) = call(client, Method::POST, &token_url, &[FORM], &body).await;
    (status, body)
}

/// Registration, authorization with `verifier`'s challenge, and the code exchange with `sent`
/// as the verifier: `(client_id, token answer)`.
async fn login(client: &Raw, fake: &FakeAuth, verifier: &str, sent: &str) -> (String, Value) {
    let issuer = fake.issuer();
    let (status, _, body) = call(
        client,
        Method::POST,
        &format!("{issuer}/register"),
        &[("content-type", "application/json")],
        &json!({"client_name": "t", "redirect_uris": [REDIRECT]}).to_string(),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let client_id = serde_json::from_str::<Value>(&body).unwrap()["client_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let challenge = URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()));
    let query = form(&[
        ("response_type", "code"),
        ("client_id", &client_id),
        ("redirect_uri", REDIRECT),
        ("code_challenge", &challenge),
        ("code_challenge_method", "S256"),
        ("state", "st-1"),
        ("resource", &fake.resource()),
    ]);
    let (status, headers, _) = call(
        client,
        Method::GET,
        &format!("{issuer}/authorize?{query}"),
        &[],
        "",
    )
    .await;
    assert_eq!(status, StatusCode::FOUND);
    let location = url::Url::parse(headers[header::LOCATION].to_str().unwrap()).unwrap();
    assert!(location.as_str().starts_with(REDIRECT));
    let get = |k: &str| {
        location
            .query_pairs()
            .find(|(n, _)| n == k)
            .map(|(_, v)| v.into_owned())
    };
    assert_eq!(get("state").as_deref(), Some("st-1"));
    let code = get("code").unwrap();
    let resource = fake.resource();
    let (status, _, body) = call(
        client,
        Method::POST,
        &format!("{issuer}/token"),
        &[FORM],
        &form(&[
            ("grant_type", "authorization_code"),
            ("code", &code),
            ("code_verifier", sent),
            ("redirect_uri", REDIRECT),
            ("resource", &resource),
            ("client_id", &client_id),
        ]),
    )
    .await;
    (client_id, {
        let mut v: Value = serde_json::from_str(&body).unwrap();
        v["status"] = json!(status.as_u16());
        v
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_whole_flow_by_hand() {
    let fake = FakeAuth::start(FakeAuthOptions::default()).await;
    let client = raw();
    let init = json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}).to_string();
    let mcp_headers = [
        ("content-type", "application/json"),
        ("accept", "application/json, text/event-stream"),
    ];

    // No token: a challenge naming the protected resource metadata.
    let (status, headers, _) = call(&client, Method::POST, &fake.url(), &mcp_headers, &init).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let challenge = headers[header::WWW_AUTHENTICATE]
        .to_str()
        .unwrap()
        .to_owned();
    let prm_url = challenge
        .split("resource_metadata=\"")
        .nth(1)
        .and_then(|s| s.split('"').next())
        .unwrap()
        .to_owned();
    let prm = get_json(&client, &prm_url).await;
    assert_eq!(prm["resource"], fake.url());
    assert_eq!(prm["authorization_servers"], json!([fake.issuer()]));

    let meta_url = format!("{}/.well-known/oauth-authorization-server", fake.issuer());
    let meta = get_json(&client, &meta_url).await;
    assert_eq!(meta["issuer"], fake.issuer());
    assert_eq!(meta["code_challenge_methods_supported"], json!(["S256"]));

    // A wrong verifier is refused; the right one gets tokens.
    let verifier = "v".repeat(43);
    let (_, refused) = login(&client, &fake, &verifier, &"x".repeat(43)).await;
    assert_eq!(refused["error"], "invalid_grant", "{refused}");
    let (client_id, tokens) = login(&client, &fake, &verifier, &verifier).await;
    assert_eq!(tokens["status"], 200, "{tokens}");
    let access = tokens["access_token"].as_str().unwrap().to_owned();
    let refresh_token = tokens["refresh_token"].as_str().unwrap().to_owned();

    // With the token, a real MCP server answers.
    let bearer = format!("Bearer {access}");
    let mut with_token = mcp_headers.to_vec();
    with_token.push(("authorization", &bearer));
    let (status, _, body) = call(&client, Method::POST, &fake.url(), &with_token, &init).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(body.contains("fake-auth-mcp"), "{body}");

    // Refresh rotates: the old refresh token is dead afterwards.
    let (status, body) = refresh(&client, &fake, &client_id, &refresh_token).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, body) = refresh(&client, &fake, &client_id, &refresh_token).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(body.contains("invalid_grant"), "{body}");

    // Everything was recorded, on the right face.
    let seen = fake.seen();
    assert!(
        seen.iter()
            .any(|s| s.path == "/authorize" && s.role == Role::Auth)
    );
    let mcp = fake.seen_at("/mcp");
    assert_eq!(mcp.iter().map(|s| s.status).collect::<Vec<_>>(), [401, 200]);
    let authorize = &fake.seen_at("/authorize")[0];
    assert_eq!(
        authorize.query_param("code_challenge_method").as_deref(),
        Some("S256")
    );
    assert_eq!(
        fake.seen_at("/token")[1].form("code_verifier").as_deref(),
        Some(verifier.as_str())
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn variants_move_the_documents() {
    let client = raw();
    let fake = FakeAuth::start(FakeAuthOptions {
        prm: PrmLocation::Root,
        metadata: AsMetadata::OpenId,
        issuer_path: "/tenant1".into(),
        pkce_advertised: false,
        wrong_issuer: Some("https://attacker.example.com".into()),
        ..FakeAuthOptions::default()
    })
    .await;
    let (_, headers, _) = call(&client, Method::POST, &fake.url(), &[], "{}").await;
    assert!(
        !headers[header::WWW_AUTHENTICATE]
            .to_str()
            .unwrap()
            .contains("resource_metadata")
    );
    let origin = fake.url().trim_end_matches("/mcp").to_owned();
    let prm = get_json(
        &client,
        &format!("{origin}/.well-known/oauth-protected-resource"),
    )
    .await;
    assert_eq!(prm["resource"], origin);
    let issuer = fake.issuer();
    assert!(issuer.ends_with("/tenant1"));
    let meta = get_json(
        &client,
        &format!("{issuer}/.well-known/openid-configuration"),
    )
    .await;
    assert_eq!(meta["issuer"], "https://attacker.example.com");
    assert!(meta.get("code_challenge_methods_supported").is_none());

    // 2025-03-26: no metadata at all, default endpoints on the server's origin.
    let legacy = FakeAuth::start(FakeAuthOptions {
        prm: PrmLocation::None,
        metadata: AsMetadata::None,
        on_server_origin: true,
        ..FakeAuthOptions::default()
    })
    .await;
    assert_eq!(legacy.issuer(), legacy.url().trim_end_matches("/mcp"));
    let (_, tokens) = login(&client, &legacy, &"w".repeat(43), &"w".repeat(43)).await;
    assert_eq!(tokens["status"], 200, "{tokens}");
    let registrations = legacy.seen_at("/register");
    assert!(
        !registrations.is_empty() && registrations.iter().all(|s| s.role == Role::Resource),
        "the 2025-03-26 routes are on the server's origin"
    );
}
