//! Client identity: the order to try (pre-registered, Client ID Metadata Document, dynamic
//! registration; SPEC.md §5.4), and RFC 7591 dynamic registration as a request and an answer.

use serde::Deserialize;

use crate::discovery::AuthorizationServerMetadata;
use crate::error::{Error, cut_short, json_position};
use crate::secret::ClientSecret;

/// How the client will identify itself to an authorization server.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Identity {
    /// Credentials from configuration.
    PreRegistered {
        /// The client id.
        client_id: String,
        /// The client secret, for a confidential client.
        client_secret: Option<ClientSecret>,
    },
    /// The URL of the client's metadata document is its id (the server fetches it).
    MetadataDocument {
        /// An `https` URL with a path.
        client_id: String,
    },
    /// Register dynamically at this endpoint.
    Register {
        /// The registration endpoint.
        endpoint: String,
    },
}

/// The first way that works, in the spec's order; `None` means the user must supply a
/// client id.
pub fn choose_identity(
    meta: &AuthorizationServerMetadata,
    pre_registered: Option<(&str, Option<&ClientSecret>)>,
    metadata_document_url: Option<&str>,
) -> Option<Identity> {
    if let Some((client_id, secret)) = pre_registered {
        return Some(Identity::PreRegistered {
            client_id: client_id.to_owned(),
            client_secret: secret.cloned(),
        });
    }
    if meta.client_id_metadata_document_supported == Some(true)
        && let Some(url) = metadata_document_url.filter(|u| is_metadata_document_url(u))
    {
        return Some(Identity::MetadataDocument {
            client_id: url.to_owned(),
        });
    }
    meta.registration_endpoint
        .clone()
        .map(|endpoint| Identity::Register { endpoint })
}

/// A Client ID Metadata Document URL must be `https` with a path.
fn is_metadata_document_url(url: &str) -> bool {
    url::Url::parse(url).is_ok_and(|u| u.scheme() == "https" && u.path().len() > 1)
}

/// An RFC 7591 registration request for a native (loopback redirect) client.
pub fn registration_request(
    endpoint: &str,
    client_name: &str,
    redirect_uris: &[String],
    scope: Option<&str>,
) -> Result<http::Request<Vec<u8>>, Error> {
    let mut body = serde_json::json!({
        "client_name": client_name,
        "redirect_uris": redirect_uris,
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
        "application_type": "native",
    });
    if let Some(scope) = scope {
        body["scope"] = serde_json::Value::String(scope.to_owned());
    }
    http::Request::post(endpoint)
        .header(http::header::CONTENT_TYPE, "application/json")
        .header(http::header::ACCEPT, "application/json")
        .body(body.to_string().into_bytes())
        .map_err(|e| Error::InvalidMetadata {
            what: "authorization server metadata",
            detail: format!("registration_endpoint: {e}"),
        })
}

/// What dynamic registration gave.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Registration {
    /// The client id.
    pub client_id: String,
    /// The client secret, if the server made the client confidential.
    pub client_secret: Option<ClientSecret>,
    /// The token endpoint authentication method the server settled on.
    pub token_endpoint_auth_method: Option<String>,
}

#[derive(Deserialize)]
struct RawRegistration {
    client_id: String,
    #[serde(default)]
    client_secret: Option<String>,
    #[serde(default)]
    token_endpoint_auth_method: Option<String>,
}

/// Reads a registration answer (201 or 200).
pub fn registration_from_response(status: u16, body: &[u8]) -> Result<Registration, Error> {
    if !(200..300).contains(&status) {
        let text = cut_short(&String::from_utf8_lossy(body));
        return Err(Error::Registration(format!("HTTP {status}: {text}")));
    }
    // Not serde's message: it may quote a value, and the answer holds a client secret.
    let raw: RawRegistration = serde_json::from_slice(body).map_err(|e| {
        Error::Registration(format!(
            "the answer is not a registration ({})",
            json_position(&e)
        ))
    })?;
    Ok(Registration {
        client_id: raw.client_id,
        client_secret: raw.client_secret.map(ClientSecret::new),
        token_endpoint_auth_method: raw.token_endpoint_auth_method,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(extra: &str) -> AuthorizationServerMetadata {
        let body = format!(
            r#"{{"issuer":"https://a","authorization_endpoint":"https://a/x","token_endpoint":"https://a/t"{extra}}}"#
        );
        AuthorizationServerMetadata::parse(body.as_bytes(), "https://a").unwrap()
    }

    #[test]
    fn identity_in_the_spec_order() {
        let both = meta(
            r#","client_id_metadata_document_supported":true,"registration_endpoint":"https://a/register""#,
        );
        let secret = ClientSecret::new("s");
        assert!(matches!(
            choose_identity(
                &both,
                Some(("pre", Some(&secret))),
                Some("https://app.example/c.json")
            ),
            Some(Identity::PreRegistered { .. })
        ));
        assert_eq!(
            choose_identity(&both, None, Some("https://app.example/c.json")),
            Some(Identity::MetadataDocument {
                client_id: "https://app.example/c.json".into()
            })
        );
        assert_eq!(
            choose_identity(&both, None, Some("http://app.example/c.json")),
            Some(Identity::Register {
                endpoint: "https://a/register".into()
            }),
            "a metadata document must be https"
        );
        assert_eq!(
            choose_identity(&meta(""), None, Some("https://app.example/c.json")),
            None,
            "nothing advertised: ask the user"
        );
    }

    #[test]
    fn registration_round_trip() {
        let req = registration_request(
            "https://a/register",
            "mcp-host",
            &["http://127.0.0.1:33418/callback".into()],
            Some("read"),
        )
        .unwrap();
        let body: serde_json::Value = serde_json::from_slice(req.body()).unwrap();
        assert_eq!(body["application_type"], "native");
        assert_eq!(
            body["grant_types"],
            serde_json::json!(["authorization_code", "refresh_token"])
        );
        assert_eq!(body["scope"], "read");
        let reg = registration_from_response(201, br#"{"client_id":"c-9","client_secret":"s-9","token_endpoint_auth_method":"client_secret_basic"}"#).unwrap();
        assert_eq!(reg.client_id, "c-9");
        assert!(!format!("{reg:?}").contains("s-9"));
        assert!(
            registration_from_response(400, br#"{"error":"invalid_redirect_uri"}"#)
                .unwrap_err()
                .to_string()
                .contains("invalid_redirect_uri")
        );
    }

    #[test]
    fn a_malformed_answer_is_reported_without_its_values() {
        let err = registration_from_response(201, br#"{"client_id":7,"client_secret":"s3cr3t"}"#)
            .unwrap_err();
        assert!(err.to_string().contains("line 1"), "{err}");
        assert!(
            !err.to_string().contains("s3cr3t") && !err.to_string().contains("`7`"),
            "{err}"
        );
    }
}
