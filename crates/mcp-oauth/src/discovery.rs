//! Where to look for metadata, and what to accept: RFC 9728 protected resource metadata and
//! RFC 8414 / OpenID Connect authorization server metadata, in the exact orders the MCP
//! authorization spec gives (SPEC.md §5.2, §5.3), with the checks that make them trustworthy.

use serde::Deserialize;
use url::Url;

use crate::error::{Error, cut_short, shown};

/// The URLs to try for the protected resource metadata of `server`: the one the 401's
/// `resource_metadata` named, if any, then the path-inserted well-known URL (when the endpoint
/// has a path), then the root one.
pub fn protected_resource_metadata_urls(server: &Url, from_challenge: Option<&str>) -> Vec<Url> {
    let mut urls = Vec::new();
    if let Some(url) = from_challenge.and_then(|u| Url::parse(u).ok()) {
        urls.push(url);
    }
    let path = server.path().trim_end_matches('/');
    let origin = origin_of(server);
    if !path.is_empty() {
        push_parsed(
            &mut urls,
            &format!("{origin}/.well-known/oauth-protected-resource{path}"),
        );
    }
    push_parsed(
        &mut urls,
        &format!("{origin}/.well-known/oauth-protected-resource"),
    );
    urls.dedup();
    urls
}

/// The URLs to try for an authorization server's metadata, in the spec's order: for an issuer
/// with a path, RFC 8414 path-inserted, OIDC path-inserted, OIDC path-appended; without one,
/// RFC 8414 then OIDC.
pub fn authorization_server_metadata_urls(issuer: &Url) -> Vec<Url> {
    let origin = origin_of(issuer);
    let path = issuer.path().trim_end_matches('/');
    let mut urls = Vec::new();
    if path.is_empty() {
        push_parsed(
            &mut urls,
            &format!("{origin}/.well-known/oauth-authorization-server"),
        );
        push_parsed(
            &mut urls,
            &format!("{origin}/.well-known/openid-configuration"),
        );
    } else {
        push_parsed(
            &mut urls,
            &format!("{origin}/.well-known/oauth-authorization-server{path}"),
        );
        push_parsed(
            &mut urls,
            &format!("{origin}/.well-known/openid-configuration{path}"),
        );
        push_parsed(
            &mut urls,
            &format!("{origin}{path}/.well-known/openid-configuration"),
        );
    }
    urls
}

fn push_parsed(urls: &mut Vec<Url>, s: &str) {
    if let Ok(u) = Url::parse(s) {
        urls.push(u);
    }
}

fn origin_of(url: &Url) -> String {
    url.origin().ascii_serialization()
}

/// The server's canonical URI for RFC 8707's `resource`: scheme and host lower-case (as
/// parsing makes them), no fragment, no query, no trailing slash unless it is the whole path.
pub fn canonical_resource(server: &Url) -> String {
    let origin = origin_of(server);
    let path = server.path().trim_end_matches('/');
    format!("{origin}{path}")
}

/// Whether a protected resource metadata `resource` may stand for `server`: the same origin,
/// and a path that is the server's or one of its parents (segment by segment). RFC 9728 §3.3
/// asks for an exact match; the official SDKs accept a parent path, and so do we, never
/// another origin.
pub fn resource_allowed(resource: &str, server: &Url) -> bool {
    let Ok(resource) = Url::parse(resource) else {
        return false;
    };
    if resource.origin() != server.origin() {
        return false;
    }
    let want: Vec<&str> = resource.path().trim_end_matches('/').split('/').collect();
    let have: Vec<&str> = server.path().trim_end_matches('/').split('/').collect();
    want.len() <= have.len() && want.iter().zip(&have).all(|(a, b)| a == b)
}

/// RFC 9728 protected resource metadata: which authorization servers protect the resource.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[non_exhaustive]
pub struct ProtectedResourceMetadata {
    /// The resource's identifier; must stand for the server it was fetched for.
    pub resource: String,
    /// The issuers of the authorization servers; at least one.
    #[serde(default)]
    pub authorization_servers: Vec<String>,
    /// The scopes the resource knows, if it says.
    #[serde(default)]
    pub scopes_supported: Option<Vec<String>>,
    /// RFC 9728 §2 (from RFC 9449): the resource accepts only DPoP-bound tokens.
    #[serde(default)]
    pub dpop_bound_access_tokens_required: Option<bool>,
    /// RFC 9728 §2: the DPoP proof algorithms the resource takes; its presence says the
    /// resource takes DPoP-bound tokens at all.
    #[serde(default)]
    pub dpop_signing_alg_values_supported: Option<Vec<String>>,
}

impl ProtectedResourceMetadata {
    /// Parses and checks a document fetched for `server`.
    pub fn parse(body: &[u8], server: &Url) -> Result<Self, Error> {
        let doc: Self = serde_json::from_slice(body).map_err(|e| Error::InvalidMetadata {
            what: "protected resource metadata",
            detail: e.to_string(),
        })?;
        if !resource_allowed(&doc.resource, server) {
            return Err(Error::ResourceMismatch {
                resource: cut_short(&doc.resource),
                server: shown(server),
            });
        }
        if doc.authorization_servers.is_empty() {
            return Err(Error::InvalidMetadata {
                what: "protected resource metadata",
                detail: "`authorization_servers` is empty".to_owned(),
            });
        }
        Ok(doc)
    }
}

/// RFC 8414 (or OpenID Connect) authorization server metadata, the fields a client uses.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[non_exhaustive]
pub struct AuthorizationServerMetadata {
    /// The issuer; must equal the one the metadata was fetched for.
    pub issuer: String,
    /// Where the user is sent to authorize.
    pub authorization_endpoint: String,
    /// Where codes and refresh tokens are exchanged.
    pub token_endpoint: String,
    /// RFC 7591 dynamic client registration.
    #[serde(default)]
    pub registration_endpoint: Option<String>,
    /// The scopes the server knows.
    #[serde(default)]
    pub scopes_supported: Option<Vec<String>>,
    /// PKCE methods; absent means the client must refuse to proceed.
    #[serde(default)]
    pub code_challenge_methods_supported: Option<Vec<String>>,
    /// `client_secret_basic`, `client_secret_post`, `none`, ...; RFC 8414 defaults to basic.
    #[serde(default)]
    pub token_endpoint_auth_methods_supported: Option<Vec<String>>,
    /// Client ID Metadata Documents accepted as `client_id`.
    #[serde(default)]
    pub client_id_metadata_document_supported: Option<bool>,
    /// RFC 9207: the authorization response carries `iss`.
    #[serde(default)]
    pub authorization_response_iss_parameter_supported: Option<bool>,
    /// RFC 9449 §5.1: the algorithms of DPoP proofs the server accepts; with `ES256` listed,
    /// tokens are asked for bound to a key ([`dpop`](crate::dpop)).
    #[serde(default)]
    pub dpop_signing_alg_values_supported: Option<Vec<String>>,
    /// RFC 8628 §4: where a device asks for a user code; present when the server offers the
    /// device authorization grant ([`device`](crate::device)).
    #[serde(default)]
    pub device_authorization_endpoint: Option<String>,
}

impl AuthorizationServerMetadata {
    /// Parses and checks metadata fetched for `issuer`: the `issuer` it states must be
    /// identical (RFC 8414 §3.3), or the metadata must not be used.
    pub fn parse(body: &[u8], issuer: &str) -> Result<Self, Error> {
        let doc = Self::parse_any_issuer(body)?;
        if doc.issuer != issuer {
            return Err(Error::IssuerMismatch {
                expected: cut_short(issuer),
                found: cut_short(&doc.issuer),
            });
        }
        Ok(doc)
    }

    /// Reads a document without checking its issuer: only for the 2025-03-26 layout, where a
    /// server with no protected resource metadata has its authorization server's metadata at
    /// its own origin, and no issuer was named beforehand to compare with (that revision
    /// derived the authorization base URL from the server URL; the issuer the document states,
    /// under `/oauth` for example, is the one it is).
    pub fn parse_any_issuer(body: &[u8]) -> Result<Self, Error> {
        serde_json::from_slice(body).map_err(|e| Error::InvalidMetadata {
            what: "authorization server metadata",
            detail: e.to_string(),
        })
    }

    /// PKCE with S256 must be advertised before authorization starts: refuse otherwise.
    pub fn require_pkce_s256(&self) -> Result<(), Error> {
        match &self.code_challenge_methods_supported {
            Some(methods) if methods.iter().any(|m| m == "S256") => Ok(()),
            Some(_) => Err(Error::PkceNotSupported {
                issuer: self.issuer.clone(),
                detail: "S256 is not among code_challenge_methods_supported",
            }),
            None => Err(Error::PkceNotSupported {
                issuer: self.issuer.clone(),
                detail: "code_challenge_methods_supported is absent",
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn url(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    fn strings(urls: Vec<Url>) -> Vec<String> {
        urls.into_iter().map(String::from).collect()
    }

    #[test]
    fn protected_resource_metadata_order() {
        let server = url("https://mcp.example.com/public/mcp");
        assert_eq!(
            strings(protected_resource_metadata_urls(
                &server,
                Some("https://mcp.example.com/custom/prm")
            )),
            [
                "https://mcp.example.com/custom/prm",
                "https://mcp.example.com/.well-known/oauth-protected-resource/public/mcp",
                "https://mcp.example.com/.well-known/oauth-protected-resource",
            ]
        );
        assert_eq!(
            strings(protected_resource_metadata_urls(
                &url("https://mcp.example.com/"),
                None
            )),
            ["https://mcp.example.com/.well-known/oauth-protected-resource"]
        );
    }

    #[test]
    fn authorization_server_metadata_order() {
        assert_eq!(
            strings(authorization_server_metadata_urls(&url(
                "https://auth.example.com/tenant1"
            ))),
            [
                "https://auth.example.com/.well-known/oauth-authorization-server/tenant1",
                "https://auth.example.com/.well-known/openid-configuration/tenant1",
                "https://auth.example.com/tenant1/.well-known/openid-configuration",
            ]
        );
        assert_eq!(
            strings(authorization_server_metadata_urls(&url(
                "https://auth.example.com"
            ))),
            [
                "https://auth.example.com/.well-known/oauth-authorization-server",
                "https://auth.example.com/.well-known/openid-configuration",
            ]
        );
    }

    #[test]
    fn canonical_resources() {
        assert_eq!(
            canonical_resource(&url("HTTPS://MCP.Example.com/mcp/#frag")),
            "https://mcp.example.com/mcp"
        );
        assert_eq!(
            canonical_resource(&url("https://mcp.example.com:8443")),
            "https://mcp.example.com:8443"
        );
        assert_eq!(
            canonical_resource(&url("https://mcp.example.com/mcp?x=1")),
            "https://mcp.example.com/mcp"
        );
    }

    #[test]
    fn resources_must_be_the_server_or_a_parent_on_the_same_origin() {
        let server = url("https://mcp.example.com/api/mcp");
        assert!(resource_allowed("https://mcp.example.com/api/mcp", &server));
        assert!(resource_allowed("https://mcp.example.com/api", &server));
        assert!(resource_allowed("https://mcp.example.com/", &server));
        assert!(
            !resource_allowed("https://mcp.example.com/ap", &server),
            "segment by segment"
        );
        assert!(!resource_allowed(
            "https://mcp.example.com/api/mcp/deeper",
            &server
        ));
        assert!(!resource_allowed(
            "https://evil.example.com/api/mcp",
            &server
        ));
        assert!(!resource_allowed("http://mcp.example.com/api/mcp", &server));
    }

    #[test]
    fn metadata_checks() {
        let server = url("https://mcp.example.com/mcp");
        let prm = br#"{"resource":"https://mcp.example.com/mcp","authorization_servers":["https://auth.example.com"],"extra":1}"#;
        assert_eq!(
            ProtectedResourceMetadata::parse(prm, &server)
                .unwrap()
                .authorization_servers
                .len(),
            1
        );
        let other = br#"{"resource":"https://other.example.com/mcp","authorization_servers":["https://a"]}"#;
        assert!(matches!(
            ProtectedResourceMetadata::parse(other, &server),
            Err(Error::ResourceMismatch { .. })
        ));
        let empty = br#"{"resource":"https://mcp.example.com/mcp","authorization_servers":[]}"#;
        assert!(ProtectedResourceMetadata::parse(empty, &server).is_err());
        // The server's URL may carry a key in its query or userinfo: the error leaves both out.
        let keyed = url("https://user:pw@mcp.example.com/mcp?key=SECRET");
        let shown = ProtectedResourceMetadata::parse(other, &keyed)
            .unwrap_err()
            .to_string();
        assert!(shown.contains("https://mcp.example.com/mcp"), "{shown}");
        assert!(
            !shown.contains("SECRET") && !shown.contains("pw"),
            "{shown}"
        );

        let asm = br#"{"issuer":"https://auth.example.com","authorization_endpoint":"https://auth.example.com/authorize","token_endpoint":"https://auth.example.com/token","code_challenge_methods_supported":["S256"]}"#;
        let meta = AuthorizationServerMetadata::parse(asm, "https://auth.example.com").unwrap();
        assert!(meta.require_pkce_s256().is_ok());
        assert!(matches!(
            AuthorizationServerMetadata::parse(asm, "https://auth.example.com/"),
            Err(Error::IssuerMismatch { .. })
        ));
        // Both issuers are the peers' words: an error quotes them cut short.
        let long = format!("https://auth.example.com/{}", "x".repeat(5000));
        let text = AuthorizationServerMetadata::parse(asm, &long)
            .unwrap_err()
            .to_string();
        assert!(text.len() < 600, "{}", text.len());
        // MCP 2026-07-28, RFC 8414 §3.3: identical strings, no URL normalisation either way.
        for asked in [
            "https://auth.example.com:443",
            "HTTPS://auth.example.com",
            "https://Auth.example.com",
            "https://auth.example.com/.",
        ] {
            assert!(
                matches!(
                    AuthorizationServerMetadata::parse(asm, asked),
                    Err(Error::IssuerMismatch { .. })
                ),
                "{asked}"
            );
        }
        let slashed = String::from_utf8(asm.to_vec()).unwrap().replacen(
            r#""issuer":"https://auth.example.com""#,
            r#""issuer":"https://auth.example.com/""#,
            1,
        );
        assert!(
            AuthorizationServerMetadata::parse(slashed.as_bytes(), "https://auth.example.com/")
                .is_ok()
        );
        assert!(
            AuthorizationServerMetadata::parse(slashed.as_bytes(), "https://auth.example.com")
                .is_err()
        );
        let no_pkce = br#"{"issuer":"https://a","authorization_endpoint":"https://a/x","token_endpoint":"https://a/t"}"#;
        let meta = AuthorizationServerMetadata::parse(no_pkce, "https://a").unwrap();
        assert!(matches!(
            meta.require_pkce_s256(),
            Err(Error::PkceNotSupported { .. })
        ));
    }

    proptest! {
        #[test]
        fn metadata_parsers_never_panic(body in prop::collection::vec(any::<u8>(), 0..200), path in "[a-z/]{0,12}") {
            let server = url(&format!("https://mcp.example.com/{path}"));
            let _ = ProtectedResourceMetadata::parse(&body, &server);
            let _ = AuthorizationServerMetadata::parse(&body, "https://a");
            let _ = protected_resource_metadata_urls(&server, std::str::from_utf8(&body).ok());
            let _ = authorization_server_metadata_urls(&server);
        }
    }
}
