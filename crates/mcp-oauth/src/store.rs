//! The token store's contents: `mcp-auth.json`, as types whose secrets never print, and the
//! rules for updating them. Reading and writing the file (atomically, mode 0600, under a lock)
//! is the host's: this crate does no I/O.
//!
//! Version 2 (written since MCP 2026-07-28 support) is
//! `{"version":2,"servers":{<server id>:{...}},"clients":{<issuer>:{...}}}`: the tokens of each
//! server (seed 000's members, `expires_at` in milliseconds, plus the `issuer` that issued them
//! and the `token_endpoint_auth_method` of their client), and beside them the clients
//! registered dynamically, keyed by the authorization server's `issuer` exactly as its metadata
//! states it (MCP `client-registration.mdx` §Authorization Server Binding: credentials are
//! bound to one authorization server and never presented to another; a registration serves
//! every server that uses that authorization server).
//!
//! Two members of a server's entry say what its tokens may be used with: `issuer` (the
//! authorization server that issued them) and `resource` (the RFC 8707 resource they were
//! minted for). Tokens stay keyed by server id, one set per server: a server has one
//! authorization server and one resource at a time, and tokens for an old one are of no use
//! to anything else, so the authorizer drops them once discovery names another (see
//! [`ServerTokens::is_for`]); keying entries by issuer or resource would only keep them
//! around. Entries written before `resource` was kept have none and are taken as before.
//! `issued_at` (milliseconds) is when the access token was issued, so that a token whose
//! lifetime is shorter than the refresh margin is refreshed once per lifetime, not at once
//! again and again ([`ServerTokens::refresh_at_ms`]).
//!
//! Version 1 (seed 000's `{"version":1,"servers":{...}}`) is still read, and nothing in it is
//! lost: its server entries are kept as they are, and an entry with an `issuer`, a `client_id`
//! and a `client_secret` (a secret was only ever stored for a dynamically registered client)
//! also becomes that issuer's registration. The next write is version 2.

use std::collections::BTreeMap;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::{Deserialize, Serialize};

use crate::dpop::DpopKey;
use crate::error::{Error, json_position};
use crate::flow::Tokens;
use crate::secret::{AccessToken, ClientSecret, RefreshToken};

/// What is kept for one server.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ServerTokens {
    /// The access token.
    pub access_token: AccessToken,
    /// The refresh token, if the server gave one.
    pub refresh_token: Option<RefreshToken>,
    /// When the access token expires, in milliseconds since the Unix epoch.
    pub expires_at_ms: Option<u64>,
    /// How the access token is presented: `Bearer`, or `DPoP` (bound to [`dpop_key`](Self::dpop_key)).
    pub token_type: String,
    /// The scope granted.
    pub scope: Option<String>,
    /// The client the tokens were issued to.
    pub client_id: Option<String>,
    /// Its secret, for a confidential client.
    pub client_secret: Option<ClientSecret>,
    /// The authorization server that issued them: credentials are never reused with another.
    pub issuer: Option<String>,
    /// How the client authenticates at the token endpoint, as its registration answer said
    /// (RFC 7591 `token_endpoint_auth_method`): a refresh after a restart authenticates the
    /// way the authorization server registered.
    pub token_endpoint_auth_method: Option<String>,
    /// The DPoP key (RFC 9449) the tokens were asked for with: every request with a `DPoP`
    /// token and every refresh proves it. Tokens of type `DPoP` without it cannot be used.
    pub dpop_key: Option<DpopKey>,
    /// The RFC 8707 `resource` the tokens were asked for: they are never presented for
    /// another one (a server whose protected resource metadata now names another resource
    /// needs new tokens). `None` for tokens stored before it was kept.
    pub resource: Option<String>,
    /// When the access token was issued, in milliseconds since the Unix epoch: with
    /// [`expires_at_ms`](Self::expires_at_ms) it gives the token's lifetime.
    pub issued_at_ms: Option<u64>,
}

impl ServerTokens {
    /// The record after a token answer at `now_ms`. A new refresh token replaces the old one;
    /// when the answer has none, the old one is kept (servers need not rotate).
    pub fn updated(tokens: Tokens, now_ms: u64, previous: Option<&Self>) -> Self {
        Self {
            access_token: tokens.access_token,
            refresh_token: tokens
                .refresh_token
                .or_else(|| previous.and_then(|p| p.refresh_token.clone())),
            expires_at_ms: tokens
                .expires_in
                .map(|s| now_ms.saturating_add(s.saturating_mul(1000))),
            token_type: tokens.token_type,
            scope: tokens
                .scope
                .or_else(|| previous.and_then(|p| p.scope.clone())),
            client_id: previous.and_then(|p| p.client_id.clone()),
            client_secret: previous.and_then(|p| p.client_secret.clone()),
            issuer: previous.and_then(|p| p.issuer.clone()),
            token_endpoint_auth_method: previous.and_then(|p| p.token_endpoint_auth_method.clone()),
            dpop_key: None,
            resource: previous.and_then(|p| p.resource.clone()),
            issued_at_ms: Some(now_ms),
        }
    }

    /// Whether the access token is DPoP-bound (RFC 9449): presented as `DPoP`, with a proof.
    pub fn is_dpop(&self) -> bool {
        self.token_type.eq_ignore_ascii_case("dpop")
    }

    /// Whether to refresh now: [`refresh_at_ms`](Self::refresh_at_ms) has come (refresh
    /// ahead of expiry, not after a failed call). A token without an expiry is used until a
    /// 401 says otherwise.
    pub fn needs_refresh(&self, now_ms: u64, margin_ms: u64) -> bool {
        self.refresh_at_ms(margin_ms).is_some_and(|at| now_ms >= at)
    }

    /// When to refresh the access token: `margin_ms` before it expires, but never earlier
    /// than halfway through its lifetime. A token that lives shorter than the margin would
    /// otherwise be due the moment it arrives, and be refreshed again and again (rmcp
    /// #1450); this way each token is refreshed once. `None` without an expiry.
    pub fn refresh_at_ms(&self, margin_ms: u64) -> Option<u64> {
        let expires = self.expires_at_ms?;
        let margin = match self.issued_at_ms {
            Some(issued) => margin_ms.min(expires.saturating_sub(issued) / 2),
            None => margin_ms,
        };
        Some(expires.saturating_sub(margin))
    }

    /// Whether the tokens may be used with the authorization server `issuer` and for the
    /// resource `resource`: they were issued by it for that resource. Tokens that do not say
    /// (stored before either was kept) are taken.
    pub fn is_for(&self, issuer: &str, resource: &str) -> bool {
        self.issuer.as_deref().is_none_or(|i| i == issuer)
            && self.resource.as_deref().is_none_or(|r| r == resource)
    }
}

/// A client registered dynamically (RFC 7591) at one authorization server: kept under that
/// server's `issuer`, reused for every MCP server it protects, never shown to another.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ClientRegistration {
    /// The client id the authorization server issued.
    pub client_id: String,
    /// Its secret, when the server made the client confidential.
    pub client_secret: Option<ClientSecret>,
    /// How it authenticates at the token endpoint, as the registration answer said.
    pub token_endpoint_auth_method: Option<String>,
    /// The redirect URIs registered; empty when unknown (migrated from version 1).
    pub redirect_uris: Vec<String>,
}

impl ClientRegistration {
    /// A registration of `client_id` for `redirect_uris`.
    pub fn new(
        client_id: String,
        client_secret: Option<ClientSecret>,
        token_endpoint_auth_method: Option<String>,
        redirect_uris: Vec<String>,
    ) -> Self {
        Self {
            client_id,
            client_secret,
            token_endpoint_auth_method,
            redirect_uris,
        }
    }
}

/// The whole `mcp-auth.json`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct AuthFile {
    /// Tokens by server id.
    pub servers: BTreeMap<String, ServerTokens>,
    /// Dynamically registered clients by the `issuer` of their authorization server.
    pub clients: BTreeMap<String, ClientRegistration>,
}

/// The version [`AuthFile::encode`] writes.
const VERSION: u32 = 2;

#[derive(Serialize, Deserialize)]
struct RawFile {
    version: u32,
    #[serde(default)]
    servers: BTreeMap<String, RawTokens>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    clients: BTreeMap<String, RawClient>,
}

#[derive(Serialize, Deserialize)]
struct RawClient {
    client_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    client_secret: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    token_endpoint_auth_method: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    redirect_uris: Vec<String>,
}

#[derive(Serialize, Deserialize)]
struct RawTokens {
    access_token: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    refresh_token: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    expires_at: Option<u64>,
    #[serde(default = "bearer")]
    token_type: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    scope: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    client_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    client_secret: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    issuer: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    token_endpoint_auth_method: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    dpop_key: Option<RawDpopKey>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    resource: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    issued_at: Option<u64>,
}

/// A DPoP key as the store keeps it: base64url PKCS#8 DER and public point. The file is the
/// host's, mode 0600, like the refresh token beside it.
#[derive(Serialize, Deserialize)]
struct RawDpopKey {
    pkcs8: String,
    public_key: String,
}

impl RawDpopKey {
    fn from_key(key: &DpopKey) -> Self {
        Self {
            pkcs8: URL_SAFE_NO_PAD.encode(key.secret_pkcs8()),
            public_key: URL_SAFE_NO_PAD.encode(key.public_key()),
        }
    }

    /// The key, or `None` if it cannot be read: its tokens are then unusable, and the next
    /// request leads to a new authorization.
    fn to_key(&self) -> Option<DpopKey> {
        let pkcs8 = URL_SAFE_NO_PAD.decode(&self.pkcs8).ok()?;
        let public = URL_SAFE_NO_PAD.decode(&self.public_key).ok()?;
        DpopKey::new(pkcs8, &public)
    }
}

fn bearer() -> String {
    "Bearer".to_owned()
}

impl AuthFile {
    /// Reads the file's contents, version 2 or 1 (see the module doc for what a version 1
    /// file becomes). An unknown `version` is refused rather than misread.
    pub fn parse(bytes: &[u8]) -> Result<Self, Error> {
        // serde_json's own message may quote a value (a token in the wrong place): say only
        // where the problem is.
        let raw: RawFile = serde_json::from_slice(bytes).map_err(|e| {
            Error::Store(format!(
                "mcp-auth.json is not valid ({})",
                json_position(&e)
            ))
        })?;
        if !(1..=VERSION).contains(&raw.version) {
            return Err(Error::Store(format!(
                "mcp-auth.json has version {}, only 1 and {VERSION} are known",
                raw.version
            )));
        }
        let mut clients: BTreeMap<String, ClientRegistration> = raw
            .clients
            .into_iter()
            .map(|(issuer, c)| {
                let client = ClientRegistration {
                    client_id: c.client_id,
                    client_secret: c.client_secret.map(ClientSecret::new),
                    token_endpoint_auth_method: c.token_endpoint_auth_method,
                    redirect_uris: c.redirect_uris,
                };
                (issuer, client)
            })
            .collect();
        let servers: BTreeMap<String, ServerTokens> = raw
            .servers
            .into_iter()
            .map(|(id, t)| {
                let tokens = ServerTokens {
                    access_token: AccessToken::new(t.access_token),
                    refresh_token: t.refresh_token.map(RefreshToken::new),
                    expires_at_ms: t.expires_at,
                    token_type: t.token_type,
                    scope: t.scope,
                    client_id: t.client_id,
                    client_secret: t.client_secret.map(ClientSecret::new),
                    issuer: t.issuer,
                    token_endpoint_auth_method: t.token_endpoint_auth_method,
                    dpop_key: t.dpop_key.as_ref().and_then(RawDpopKey::to_key),
                    resource: t.resource,
                    issued_at_ms: t.issued_at,
                };
                (id, tokens)
            })
            .collect();
        if raw.version == 1 {
            for t in servers.values() {
                if let (Some(issuer), Some(client_id), Some(secret)) =
                    (&t.issuer, &t.client_id, &t.client_secret)
                {
                    clients
                        .entry(issuer.clone())
                        .or_insert_with(|| ClientRegistration {
                            client_id: client_id.clone(),
                            client_secret: Some(secret.clone()),
                            token_endpoint_auth_method: t.token_endpoint_auth_method.clone(),
                            redirect_uris: Vec::new(),
                        });
                }
            }
        }
        Ok(Self { servers, clients })
    }

    /// The file's contents, pretty-printed. This is the one place secrets are written out: to
    /// the store file, which the host writes with mode 0600.
    pub fn encode(&self) -> Vec<u8> {
        let servers = self
            .servers
            .iter()
            .map(|(id, t)| {
                let raw = RawTokens {
                    access_token: t.access_token.secret().to_owned(),
                    refresh_token: t.refresh_token.as_ref().map(|r| r.secret().to_owned()),
                    expires_at: t.expires_at_ms,
                    token_type: t.token_type.clone(),
                    scope: t.scope.clone(),
                    client_id: t.client_id.clone(),
                    client_secret: t.client_secret.as_ref().map(|s| s.secret().to_owned()),
                    issuer: t.issuer.clone(),
                    token_endpoint_auth_method: t.token_endpoint_auth_method.clone(),
                    dpop_key: t.dpop_key.as_ref().map(RawDpopKey::from_key),
                    resource: t.resource.clone(),
                    issued_at: t.issued_at_ms,
                };
                (id.clone(), raw)
            })
            .collect();
        let clients = self
            .clients
            .iter()
            .map(|(issuer, c)| {
                let raw = RawClient {
                    client_id: c.client_id.clone(),
                    client_secret: c.client_secret.as_ref().map(|s| s.secret().to_owned()),
                    token_endpoint_auth_method: c.token_endpoint_auth_method.clone(),
                    redirect_uris: c.redirect_uris.clone(),
                };
                (issuer.clone(), raw)
            })
            .collect();
        let raw = RawFile {
            version: VERSION,
            servers,
            clients,
        };
        let mut out = serde_json::to_vec_pretty(&raw).unwrap_or_default();
        out.push(b'\n');
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = r#"{
  "version": 1,
  "servers": {
    "example-http-server": {
      "access_token": "at-secret",
      "refresh_token": "rt-secret",
      "expires_at": 1760000000000,
      "token_type": "Bearer",
      "scope": "files:read",
      "client_id": "cid",
      "client_secret": "cs-secret"
    }
  }
}
"#;

    #[test]
    fn the_seed_format_round_trips_and_never_prints_secrets() {
        let file = AuthFile::parse(FILE.as_bytes()).unwrap();
        let t = &file.servers["example-http-server"];
        assert_eq!(t.expires_at_ms, Some(1_760_000_000_000));
        let shown = format!("{file:?}");
        for secret in ["at-secret", "rt-secret", "cs-secret"] {
            assert!(!shown.contains(secret), "{secret} printed: {shown}");
        }
        assert_eq!(AuthFile::parse(&file.encode()).unwrap(), file);
        assert!(
            String::from_utf8(file.encode())
                .unwrap()
                .contains("\"expires_at\": 1760000000000")
        );
    }

    #[test]
    fn a_dpop_key_is_kept_with_its_tokens_and_never_printed() {
        let mut file = AuthFile::parse(FILE.as_bytes()).unwrap();
        let t = file.servers.get_mut("example-http-server").unwrap();
        assert!(!t.is_dpop() && t.dpop_key.is_none());
        let mut public = vec![4u8];
        public.extend([9u8; 64]);
        t.token_type = "DPoP".to_owned();
        t.dpop_key = Some(DpopKey::new(b"pkcs8-secret".to_vec(), &public).unwrap());
        let encoded = file.encode();
        let back = AuthFile::parse(&encoded).unwrap();
        assert_eq!(back, file);
        assert!(back.servers["example-http-server"].is_dpop());
        let shown = format!("{back:?}");
        assert!(
            !shown.contains("pkcs8") && !shown.contains("cGtjczgt"),
            "{shown}"
        );
        // A key that cannot be read is no key: its tokens will not be used.
        let text = String::from_utf8(encoded)
            .unwrap()
            .replace(&URL_SAFE_NO_PAD.encode(&public), "AAAA");
        let broken = AuthFile::parse(text.as_bytes()).unwrap();
        assert_eq!(broken.servers["example-http-server"].dpop_key, None);
    }

    #[test]
    fn a_version_1_file_is_migrated_losing_nothing() {
        let v1 = r#"{"version":1,"servers":{
            "dcr": {"access_token":"at-1","refresh_token":"rt-1","client_id":"reg-1",
                    "client_secret":"cs-1","issuer":"https://as.example"},
            "cimd": {"access_token":"at-2","client_id":"https://app.example/c.json",
                     "issuer":"https://other.example"},
            "old": {"access_token":"at-3","client_id":"c","client_secret":"s"}
        }}"#;
        let file = AuthFile::parse(v1.as_bytes()).unwrap();
        assert_eq!(file.servers.len(), 3, "every server entry is kept");
        let dcr = &file.servers["dcr"];
        assert_eq!(
            (
                dcr.client_id.as_deref(),
                dcr.client_secret.as_ref().map(ClientSecret::secret),
                dcr.issuer.as_deref()
            ),
            (Some("reg-1"), Some("cs-1"), Some("https://as.example"))
        );
        // A stored secret only ever came from a registration: it becomes the issuer's.
        assert_eq!(
            file.clients.keys().collect::<Vec<_>>(),
            ["https://as.example"],
            "without a secret or an issuer an entry is not taken for a registration"
        );
        let reg = &file.clients["https://as.example"];
        assert_eq!(
            (
                reg.client_id.as_str(),
                reg.client_secret.as_ref().map(ClientSecret::secret)
            ),
            ("reg-1", Some("cs-1"))
        );
        assert!(reg.redirect_uris.is_empty(), "a version 1 entry never said");
        // Written back as version 2, and read again unchanged.
        let encoded = file.encode();
        assert!(
            String::from_utf8(encoded.clone())
                .unwrap()
                .contains("\"version\": 2")
        );
        assert_eq!(AuthFile::parse(&encoded).unwrap(), file);
    }

    #[test]
    fn registrations_are_kept_by_issuer_and_never_printed() {
        let mut file = AuthFile::parse(FILE.as_bytes()).unwrap();
        file.clients.insert(
            "http://localhost:3000".into(),
            ClientRegistration::new(
                "as1-client".into(),
                Some(ClientSecret::new("as1-secret")),
                Some("client_secret_post".into()),
                vec!["http://127.0.0.1:4000/callback".into()],
            ),
        );
        file.clients.insert(
            "http://localhost:3000/".into(),
            ClientRegistration::new("as2-client".into(), None, Some("none".into()), Vec::new()),
        );
        let back = AuthFile::parse(&file.encode()).unwrap();
        assert_eq!(back, file);
        assert_eq!(
            back.clients["http://localhost:3000/"].client_id, "as2-client",
            "issuers are byte strings: a slash makes another authorization server"
        );
        let shown = format!("{back:?}");
        assert!(!shown.contains("as1-secret"), "{shown}");
        assert_eq!(
            back.clients["http://localhost:3000"].redirect_uris,
            ["http://127.0.0.1:4000/callback"],
            "the redirect URIs a later login must use (or register anew)"
        );
    }

    #[test]
    fn bad_files_are_refused_without_quoting_them() {
        let err = AuthFile::parse(br#"{"version":3,"servers":{}}"#).unwrap_err();
        assert!(err.to_string().contains("version 3"));
        let err = AuthFile::parse(
            br#"{"version":1,"servers":{"x":{"access_token":"at","expires_at":"rt-secret"}}}"#,
        )
        .unwrap_err();
        assert!(!err.to_string().contains("rt-secret"), "{err}");
        assert!(err.to_string().contains("line 1"), "{err}");
    }

    #[test]
    fn a_token_shorter_lived_than_the_margin_is_refreshed_halfway_not_at_once() {
        let file = AuthFile::parse(FILE.as_bytes()).unwrap();
        let mut t = file.servers["example-http-server"].clone();
        let expires = 1_760_000_000_000;
        assert_eq!(
            t.refresh_at_ms(60_000),
            Some(expires - 60_000),
            "no issue time"
        );
        // Lived an hour: the margin applies.
        t.issued_at_ms = Some(expires - 3_600_000);
        assert_eq!(t.refresh_at_ms(60_000), Some(expires - 60_000));
        // Lives 10 s, with a 60 s margin: halfway, not as soon as it arrives.
        t.issued_at_ms = Some(expires - 10_000);
        assert_eq!(t.refresh_at_ms(60_000), Some(expires - 5_000));
        assert!(
            !t.needs_refresh(expires - 10_000, 60_000),
            "not when it arrives"
        );
        assert!(t.needs_refresh(expires - 5_000, 60_000));
        // Issued and written back with its issue time.
        let back = {
            let mut f = file.clone();
            f.servers.insert("example-http-server".into(), t.clone());
            AuthFile::parse(&f.encode()).unwrap()
        };
        assert_eq!(back.servers["example-http-server"], t);
        t.expires_at_ms = None;
        assert_eq!(t.refresh_at_ms(60_000), None, "no expiry, no refresh ahead");
    }

    #[test]
    fn tokens_say_which_issuer_and_resource_they_are_for() {
        let file = AuthFile::parse(FILE.as_bytes()).unwrap();
        let mut t = file.servers["example-http-server"].clone();
        assert!(
            t.is_for("https://a.example", "https://mcp.example/mcp"),
            "old entries"
        );
        t.issuer = Some("https://a.example".into());
        t.resource = Some("https://mcp.example/mcp".into());
        assert!(t.is_for("https://a.example", "https://mcp.example/mcp"));
        assert!(!t.is_for("https://b.example", "https://mcp.example/mcp"));
        assert!(!t.is_for("https://a.example", "https://mcp.example/v2/mcp"));
        let mut f = file.clone();
        f.servers.insert("example-http-server".into(), t.clone());
        let encoded = String::from_utf8(f.encode()).unwrap();
        assert!(
            encoded.contains("\"resource\": \"https://mcp.example/mcp\""),
            "{encoded}"
        );
        assert_eq!(AuthFile::parse(encoded.as_bytes()).unwrap(), f);
    }

    #[test]
    fn refresh_ahead_of_expiry_and_rotation() {
        let file = AuthFile::parse(FILE.as_bytes()).unwrap();
        let old = &file.servers["example-http-server"];
        assert!(!old.needs_refresh(1_759_999_000_000, 60_000));
        assert!(
            old.needs_refresh(1_759_999_950_000, 60_000),
            "within the margin"
        );
        let fresh =
            crate::flow::tokens_from_response(200, br#"{"access_token":"at2","expires_in":60}"#)
                .unwrap();
        let updated = ServerTokens::updated(fresh, 1_000, Some(old));
        assert_eq!(
            updated.refresh_token.as_ref().unwrap().secret(),
            "rt-secret",
            "kept when none is new"
        );
        assert_eq!(updated.expires_at_ms, Some(61_000));
        assert_eq!(updated.client_id.as_deref(), Some("cid"));
        let rotated = crate::flow::tokens_from_response(
            200,
            br#"{"access_token":"at3","refresh_token":"rt3"}"#,
        )
        .unwrap();
        let updated = ServerTokens::updated(rotated, 2_000, Some(&updated));
        assert_eq!(
            updated.refresh_token.unwrap().secret(),
            "rt3",
            "a new refresh token always replaces the old"
        );
    }
}
