//! Client identity: the order to try (pre-registered, Client ID Metadata Document, dynamic
//! registration; SPEC.md §5.4), and RFC 7591 dynamic registration as a request and an answer.

use serde::Deserialize;

use crate::discovery::AuthorizationServerMetadata;
use crate::error::{Error, cut_short, json_position};
use crate::flow::RawError;
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

/// The OpenID Connect Dynamic Client Registration `application_type` a registration states;
/// MCP 2026-07-28 (`client-registration.mdx` §Application Type, SEP-837) makes it mandatory,
/// because an authorization server that assumes `web` (the OIDC default) refuses the loopback
/// and custom-scheme redirect URIs that desktop and command-line hosts use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ApplicationType {
    /// A desktop, command-line or mobile client: loopback (`127.0.0.1`, `[::1]`,
    /// `localhost`) or custom-scheme redirect URIs.
    Native,
    /// A client whose redirect URIs are `https` pages on a public host.
    Web,
}

impl ApplicationType {
    /// The type the redirect URIs call for: `native` when every one of them is a loopback or
    /// `localhost` URL or uses a custom scheme (a CLI, desktop or mobile host), `web`
    /// otherwise. An empty list is `native`: a client without a browser page of its own.
    pub fn for_redirect_uris(redirect_uris: &[String]) -> Self {
        if redirect_uris.iter().all(|u| is_native_redirect_uri(u)) {
            Self::Native
        } else {
            Self::Web
        }
    }

    /// The value on the wire: `native` or `web`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Native => "native",
            Self::Web => "web",
        }
    }
}

/// A redirect URI only a native client has: a loopback or `localhost` host over `http` or
/// `https`, or a custom scheme (RFC 8252 §7.1, §7.3). A URI that does not parse is not taken
/// as native.
fn is_native_redirect_uri(uri: &str) -> bool {
    let Ok(url) = url::Url::parse(uri) else {
        return false;
    };
    if !matches!(url.scheme(), "http" | "https") {
        return true;
    }
    match url.host() {
        Some(url::Host::Domain(d)) => {
            d.eq_ignore_ascii_case("localhost") || d.to_ascii_lowercase().ends_with(".localhost")
        }
        _ => is_loopback_ip(&url),
    }
}

/// Whether a URL's host is a loopback IP literal (`127.0.0.0/8`, `[::1]`), whose redirect
/// URIs authorization servers accept on any port (RFC 8252 §7.3).
pub(crate) fn is_loopback_ip(url: &url::Url) -> bool {
    match url.host() {
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        _ => false,
    }
}

/// An RFC 7591 registration request: the redirect URIs, the `application_type` (MCP
/// 2026-07-28 requires it), `grant_types` with `refresh_token` beside `authorization_code`
/// (SEP-2207: a server that honours the list issues refresh tokens only to clients that ask),
/// and a public client (`none`); the answer says which authentication the server settled on.
pub fn registration_request(
    endpoint: &str,
    client_name: &str,
    redirect_uris: &[String],
    application_type: ApplicationType,
    scope: Option<&str>,
) -> Result<http::Request<Vec<u8>>, Error> {
    registration_request_with(
        endpoint,
        client_name,
        redirect_uris,
        application_type,
        scope,
        &["authorization_code", "refresh_token"],
    )
}

/// [`registration_request`] with other `grant_types` (the device flow adds its own).
pub(crate) fn registration_request_with(
    endpoint: &str,
    client_name: &str,
    redirect_uris: &[String],
    application_type: ApplicationType,
    scope: Option<&str>,
    grant_types: &[&str],
) -> Result<http::Request<Vec<u8>>, Error> {
    let mut body = serde_json::json!({
        "client_name": client_name,
        "redirect_uris": redirect_uris,
        "grant_types": grant_types,
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
        "application_type": application_type.as_str(),
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

/// Reads a registration answer (201 or 200) to a request that named `redirect_uris`.
///
/// A refusal because of the redirect URIs (RFC 7591 §3.2.2 `invalid_redirect_uri`, or
/// `invalid_client_metadata` whose description speaks of a redirect) is
/// [`Error::RedirectUriRefused`], which names the URIs and what to do instead; any other
/// refusal is [`Error::Registration`] with the server's words, cut short.
pub fn registration_from_response(
    status: u16,
    body: &[u8],
    redirect_uris: &[String],
) -> Result<Registration, Error> {
    if !(200..300).contains(&status) {
        if let Ok(e) = serde_json::from_slice::<RawError>(body) {
            let description = e.error_description.unwrap_or_default();
            let about_redirect = e.error == "invalid_redirect_uri"
                || (e.error == "invalid_client_metadata"
                    && description.to_ascii_lowercase().contains("redirect"));
            if about_redirect {
                return Err(Error::RedirectUriRefused {
                    redirect_uris: cut_short(&redirect_uris.join(" ")),
                    detail: cut_short(format!("{} {description}", e.error).trim_end()),
                });
            }
        }
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
    fn application_type_follows_the_redirect_uris() {
        let of = |uris: &[&str]| {
            ApplicationType::for_redirect_uris(
                &uris.iter().map(|u| (*u).to_owned()).collect::<Vec<_>>(),
            )
        };
        for native in [
            "http://127.0.0.1:33418/callback",
            "http://127.0.0.1/callback",
            "http://127.8.9.1/cb",
            "http://[::1]:8080/cb",
            "http://localhost:3000/callback",
            "http://LOCALHOST/cb",
            "https://app.localhost/cb",
            "com.example.app:/oauth2redirect",
            "myapp://callback",
        ] {
            assert_eq!(of(&[native]), ApplicationType::Native, "{native}");
        }
        for web in [
            "https://app.example.com/callback",
            "http://app.example.com/callback",
            "https://localhost.example.com/cb",
            "not a url",
        ] {
            assert_eq!(of(&[web]), ApplicationType::Web, "{web}");
        }
        assert_eq!(
            of(&["http://127.0.0.1/cb", "https://app.example.com/cb"]),
            ApplicationType::Web,
            "a public page among them makes a web client"
        );
        assert_eq!(of(&[]), ApplicationType::Native);
    }

    #[test]
    fn registration_round_trip() {
        let uris = ["http://127.0.0.1:33418/callback".to_owned()];
        let req = registration_request(
            "https://a/register",
            "mcp-host",
            &uris,
            ApplicationType::Native,
            Some("read"),
        )
        .unwrap();
        let body: serde_json::Value = serde_json::from_slice(req.body()).unwrap();
        assert_eq!(body["application_type"], "native");
        assert_eq!(
            body["grant_types"],
            serde_json::json!(["authorization_code", "refresh_token"])
        );
        assert_eq!(body["redirect_uris"], serde_json::json!(uris));
        assert_eq!(body["scope"], "read");
        let web = registration_request(
            "https://a/register",
            "mcp-host",
            &["https://app.example.com/cb".to_owned()],
            ApplicationType::Web,
            None,
        )
        .unwrap();
        let body: serde_json::Value = serde_json::from_slice(web.body()).unwrap();
        assert_eq!(body["application_type"], "web");
        assert!(body.get("scope").is_none());
        let reg = registration_from_response(201, br#"{"client_id":"c-9","client_secret":"s-9","token_endpoint_auth_method":"client_secret_basic"}"#, &uris).unwrap();
        assert_eq!(reg.client_id, "c-9");
        assert!(!format!("{reg:?}").contains("s-9"));
    }

    #[test]
    fn a_redirect_uri_refusal_says_so() {
        let uris = ["http://127.0.0.1:33418/callback".to_owned()];
        for body in [
            br#"{"error":"invalid_redirect_uri","error_description":"loopback not allowed"}"#.as_slice(),
            br#"{"error":"invalid_client_metadata","error_description":"Redirect URI must be https"}"#,
        ] {
            let err = registration_from_response(400, body, &uris).unwrap_err();
            assert!(matches!(err, Error::RedirectUriRefused { .. }), "{err}");
            let text = err.to_string();
            assert!(
                text.contains("http://127.0.0.1:33418/callback") && text.contains("client_id"),
                "{text}"
            );
        }
        let other = registration_from_response(
            400,
            br#"{"error":"invalid_client_metadata","error_description":"bad logo_uri"}"#,
            &uris,
        )
        .unwrap_err();
        assert!(matches!(other, Error::Registration(_)), "{other}");
        assert!(other.to_string().contains("bad logo_uri"));
        let html = registration_from_response(500, b"<html>oops</html>", &uris).unwrap_err();
        assert!(matches!(html, Error::Registration(_)), "{html}");
    }

    #[test]
    fn a_malformed_answer_is_reported_without_its_values() {
        let err =
            registration_from_response(201, br#"{"client_id":7,"client_secret":"s3cr3t"}"#, &[])
                .unwrap_err();
        assert!(err.to_string().contains("line 1"), "{err}");
        assert!(
            !err.to_string().contains("s3cr3t") && !err.to_string().contains("`7`"),
            "{err}"
        );
    }
}
