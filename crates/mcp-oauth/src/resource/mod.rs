//! The other side of OAuth: an MCP server as a protected resource (spec
//! `basic/authorization.mdx`, "Token Handling"; RFC 9728, RFC 6750, RFC 8707, RFC 9068).
//! Everything here decides and nothing fetches: the caller brings the issuer's key set
//! ([`JwkSet`], which it fetches when [`KeyCache`] says so) and the time.
//!
//! - [`TokenPolicy`] says what an access token must carry: the issuer, the audience (this
//!   server's resource, RFC 8707: a token minted for another resource is refused, so nobody can
//!   replay here a token meant elsewhere), the scopes, the algorithms allowed (never `none`,
//!   never an HMAC one: a key set holds public keys, and an HMAC "verified" with a public key
//!   is forgeable by anyone who can read it).
//! - [`validate`] checks a JWS-signed JWT access token against it and returns the [`Caller`];
//!   a refusal is a [`Rejection`], which says whether it is a 401 (`invalid_token`) or a 403
//!   (`insufficient_scope`), and never quotes the token or its claims.
//! - An opaque token is asked about at the issuer's RFC 7662 introspection endpoint:
//!   [`introspection_request`] is the question, [`IntrospectionAnswer`] the answer, judged by
//!   the same policy, and [`IntrospectionCache`] keeps positive answers a short while,
//!   [`RefusedCache`] refusals a shorter one.
//! - [`ResourceMetadata`] is the RFC 9728 document, [`challenge`] the `WWW-Authenticate`
//!   value of a refusal.
//!
//! Parsing is bounded and total: a token longer than [`MAX_TOKEN_BYTES`], bad base64, bad
//! JSON, a claim of the wrong type, all are rejections, never panics.

mod introspection;
mod jwk;
mod jwt;
mod keys;
mod metadata;

#[cfg(test)]
mod tests;

pub use introspection::{
    IntrospectionAnswer, IntrospectionCache, MAX_INTROSPECTION_BYTES, RefusedCache,
    introspection_request,
};
pub use jwk::JwkSet;
pub use jwt::{Caller, MAX_TOKEN_BYTES, Rejection, validate};
pub use keys::KeyCache;
pub use metadata::{ResourceMetadata, challenge, metadata_url};

use std::fmt;

/// A JWS algorithm this crate verifies (RFC 7518 §3, RFC 8037 for `EdDSA`), each with a
/// public key: what a [`TokenPolicy`] may allow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Algorithm {
    /// RSASSA-PKCS1-v1_5 with SHA-256.
    Rs256,
    /// RSASSA-PKCS1-v1_5 with SHA-384.
    Rs384,
    /// RSASSA-PKCS1-v1_5 with SHA-512.
    Rs512,
    /// RSASSA-PSS with SHA-256.
    Ps256,
    /// RSASSA-PSS with SHA-384.
    Ps384,
    /// RSASSA-PSS with SHA-512.
    Ps512,
    /// ECDSA on P-256 with SHA-256.
    Es256,
    /// ECDSA on P-384 with SHA-384.
    Es384,
    /// Ed25519.
    EdDsa,
}

impl Algorithm {
    /// Every algorithm verified here, the default allow-list: each checks a signature with a
    /// public key of its own family only.
    pub const ALL: [Algorithm; 9] = [
        Self::Rs256,
        Self::Rs384,
        Self::Rs512,
        Self::Ps256,
        Self::Ps384,
        Self::Ps512,
        Self::Es256,
        Self::Es384,
        Self::EdDsa,
    ];

    /// The `alg` value.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Rs256 => "RS256",
            Self::Rs384 => "RS384",
            Self::Rs512 => "RS512",
            Self::Ps256 => "PS256",
            Self::Ps384 => "PS384",
            Self::Ps512 => "PS512",
            Self::Es256 => "ES256",
            Self::Es384 => "ES384",
            Self::EdDsa => "EdDSA",
        }
    }

    /// Reads an `alg` name as a configuration names it. `none` and the HMAC algorithms are
    /// refused with the reason, the others not verified here with the list of those that are.
    pub fn parse(name: &str) -> Result<Self, AlgorithmError> {
        if let Some(found) = Self::ALL.iter().find(|a| a.as_str() == name) {
            return Ok(*found);
        }
        Err(if name.eq_ignore_ascii_case("none") {
            AlgorithmError::Unsigned
        } else if name.len() >= 2 && name[..2].eq_ignore_ascii_case("HS") {
            AlgorithmError::Symmetric(name.to_owned())
        } else {
            AlgorithmError::Unsupported(name.chars().take(32).collect())
        })
    }
}

impl fmt::Display for Algorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why an algorithm cannot be allowed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AlgorithmError {
    /// `none`.
    #[error("`none` is never accepted: an unsigned token proves nothing")]
    Unsigned,
    /// `HS256` and friends.
    #[error(
        "`{0}` is an HMAC algorithm: its key would be the issuer's published key, so anyone could sign"
    )]
    Symmetric(String),
    /// Anything else.
    #[error(
        "`{0}` is not an algorithm verified here (RS256, RS384, RS512, PS256, PS384, PS512, ES256, ES384, EdDSA)"
    )]
    Unsupported(String),
}

/// What an access token must carry to be accepted by this resource.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct TokenPolicy {
    /// The `iss` every token must state, compared byte for byte.
    pub issuer: String,
    /// The audience every token's `aud` must contain: this resource's canonical URI (RFC 8707),
    /// compared without a trailing `/`.
    pub audience: String,
    /// Scopes every request needs; a token without one of them gets a 403.
    pub required_scopes: Vec<String>,
    /// The algorithms accepted ([`Algorithm::ALL`] by default).
    pub algorithms: Vec<Algorithm>,
    /// How far clocks may disagree, in seconds, for `exp`, `nbf` and `iat` (default 60).
    pub leeway_secs: u64,
}

impl TokenPolicy {
    /// Tokens of `issuer` for `audience`, no scope required, every algorithm of
    /// [`Algorithm::ALL`], 60 s of leeway.
    pub fn new(issuer: impl Into<String>, audience: impl Into<String>) -> Self {
        Self {
            issuer: issuer.into(),
            audience: audience.into(),
            required_scopes: Vec::new(),
            algorithms: Algorithm::ALL.to_vec(),
            leeway_secs: 60,
        }
    }
}
