//! Whatever a peer sends, the parsers answer with a value or an error, never a panic; and no
//! error they make quotes a secret they were given.

use mcp_oauth::discovery::AuthorizationServerMetadata;
use mcp_oauth::flow::{code_from_redirect, tokens_from_response};
use mcp_oauth::registration::registration_from_response;
use mcp_oauth::store::AuthFile;
use mcp_oauth::{BearerChallenge, Url};
use proptest::prelude::*;

fn meta() -> AuthorizationServerMetadata {
    AuthorizationServerMetadata::parse(
        br#"{"issuer":"https://a","authorization_endpoint":"https://a/x","token_endpoint":"https://a/t","code_challenge_methods_supported":["S256"]}"#,
        "https://a",
    )
    .unwrap()
}

proptest! {
    #[test]
    fn answers_never_panic(status in 100u16..600, body in prop::collection::vec(any::<u8>(), 0..300)) {
        let _ = tokens_from_response(status, &body);
        let _ = registration_from_response(status, &body, &[]);
        let _ = AuthFile::parse(&body);
    }

    #[test]
    fn redirects_never_panic(query in "[a-z=&%0-9:/._-]{0,80}") {
        if let Ok(url) = Url::parse(&format!("http://127.0.0.1:1/cb?{query}")) {
            let _ = code_from_redirect(&url, "st", &meta());
        }
    }

    #[test]
    fn challenge_values_never_panic(values in prop::collection::vec(".{0,60}", 0..4)) {
        let _ = BearerChallenge::find(values.iter().map(String::as_str));
    }

    #[test]
    fn token_errors_never_quote_the_token(secret in "[A-Za-z0-9]{12,24}") {
        let body = format!(r#"{{"access_token":"{secret}","token_type":"mac"}}"#);
        let err = tokens_from_response(200, body.as_bytes()).unwrap_err();
        let shown = format!("{err} {err:?}");
        prop_assert!(!shown.contains(&secret));
        let body = format!(r#"{{"access_token":{secret}}}"#);
        let err = tokens_from_response(200, body.as_bytes()).unwrap_err();
        let shown = format!("{err} {err:?}");
        prop_assert!(!shown.contains(&secret));
    }
}
