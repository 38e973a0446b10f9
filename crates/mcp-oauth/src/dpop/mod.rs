//! DPoP, RFC 9449: access tokens bound to a key the client holds, so that a token that leaks
//! (a log, a proxy, a compromised server passing it on) is useless without the key.
//!
//! Every request that uses such a token carries a fresh proof in a `DPoP` header: a JWT of
//! type `dpop+jwt` signed with the key, whose header holds the public key (`jwk`) and whose
//! claims name this very request (`htm` the method, `htu` the URL without query or fragment,
//! `iat` the time, `jti` a random id, `ath` the SHA-256 of the access token, `nonce` the
//! server's last nonce if it asked for one); the token goes as `Authorization: DPoP <token>`.
//! The token request carries a proof too (without `ath`): that is how the authorization
//! server learns which key to bind the token to.
//!
//! When: the [`Authorizer`](crate::Authorizer) makes a new key for each new authorization
//! when the caller supplied a [`DpopSigner`] and the authorization server's metadata lists
//! `ES256` in `dpop_signing_alg_values_supported` (RFC 9449 §5.1), or lists no algorithms at
//! all while the protected resource's metadata says `dpop_bound_access_tokens_required`. The
//! token answer's `token_type` (`DPoP` or `Bearer`) then says how the token is presented. The
//! key stays with the tokens ([`ServerTokens::dpop_key`](crate::store::ServerTokens)): a
//! refresh proves the same key, as RFC 9449 §5 requires of refresh tokens bound to it.
//!
//! Nonces (RFC 9449 §8, §9) are the servers': the authorizer keeps the authorization server's
//! and retries a token request once after `use_dpop_nonce`; the resource server's is kept by
//! whoever sends the MCP requests (the host's hook), which passes it to
//! [`Credentials::headers`].

use std::fmt;
use std::sync::Arc;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use sha2::{Digest as _, Sha256};

use crate::challenge;
use crate::error::{AuthError, SeamError};
use crate::flow::RawError;
use crate::http::{Clock, DpopSigner, Randomness};
use crate::jws::jws_compact;
use crate::secret::AccessToken;

/// The one algorithm proofs are made with: ECDSA P-256 with SHA-256 (RFC 7518 §3.4).
pub(crate) const ALG: &str = "ES256";

/// The request header that carries a proof.
pub(crate) const DPOP: http::HeaderName = http::HeaderName::from_static("dpop");

/// The response header that carries a server's nonce.
pub(crate) const DPOP_NONCE: http::HeaderName = http::HeaderName::from_static("dpop-nonce");

/// The longest nonce kept: a server's nonce goes into every proof, so a huge one is refused
/// rather than repeated in every request.
const MAX_NONCE: usize = 1024;

/// A DPoP proof key: a P-256 private key as PKCS#8 DER, and its public point. The private
/// half is a secret: it never prints, and leaves only through
/// [`secret_pkcs8`](Self::secret_pkcs8) (for the signer and the token store).
#[derive(Clone, PartialEq, Eq)]
pub struct DpopKey {
    pkcs8: Vec<u8>,
    public_key: [u8; 65],
}

impl DpopKey {
    /// A key from what the signer made: the PKCS#8 DER private key and the uncompressed
    /// public point (`0x04 || x || y`, 65 bytes). `None` if the point has another shape.
    pub fn new(pkcs8: Vec<u8>, public_key: &[u8]) -> Option<Self> {
        let public_key: [u8; 65] = public_key.try_into().ok()?;
        (public_key[0] == 0x04).then_some(Self { pkcs8, public_key })
    }

    /// The private key, PKCS#8 DER. Every call is a place where the key leaves its type: it
    /// must go only to the signer or the token store, never to a log or an error.
    pub fn secret_pkcs8(&self) -> &[u8] {
        &self.pkcs8
    }

    /// The public point, uncompressed (`0x04 || x || y`).
    pub fn public_key(&self) -> &[u8] {
        &self.public_key
    }

    /// The public key as a JWK (RFC 7518 §6.2), for the proof's header.
    fn jwk(&self) -> serde_json::Value {
        serde_json::json!({
            "kty": "EC",
            "crv": "P-256",
            "x": URL_SAFE_NO_PAD.encode(&self.public_key[1..33]),
            "y": URL_SAFE_NO_PAD.encode(&self.public_key[33..]),
        })
    }
}

impl fmt::Debug for DpopKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("DpopKey([redacted])")
    }
}

/// What makes proofs: the caller's signer, clock and randomness.
#[derive(Clone)]
pub(crate) struct Prover {
    pub(crate) signer: Arc<dyn DpopSigner>,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) random: Arc<dyn Randomness>,
}

impl Prover {
    /// A proof for one request: `method` to `uri`, presenting `access_token` if given (its
    /// hash goes into `ath`), with the server's `nonce` if it gave one.
    pub(crate) fn proof(
        &self,
        key: &DpopKey,
        method: &http::Method,
        uri: &http::Uri,
        access_token: Option<&AccessToken>,
        nonce: Option<&str>,
    ) -> Result<http::HeaderValue, AuthError> {
        let htu = htu(uri).ok_or_else(|| {
            AuthError::Dpop(SeamError::new("the request's URL has no scheme or host"))
        })?;
        let mut jti = [0u8; 16];
        self.random
            .fill(&mut jti)
            .map_err(|e| AuthError::NoRandomness(e.into()))?;
        let header = serde_json::json!({ "typ": "dpop+jwt", "alg": ALG, "jwk": key.jwk() });
        let mut claims = serde_json::json!({
            "jti": URL_SAFE_NO_PAD.encode(jti),
            "htm": method.as_str(),
            "htu": htu,
            "iat": self.clock.now_ms() / 1000,
        });
        if let Some(token) = access_token {
            claims["ath"] = URL_SAFE_NO_PAD
                .encode(Sha256::digest(token.secret().as_bytes()))
                .into();
        }
        if let Some(nonce) = nonce {
            claims["nonce"] = nonce.into();
        }
        let jwt = jws_compact(
            header.to_string().as_bytes(),
            claims.to_string().as_bytes(),
            |input| self.signer.sign(key, input),
        )
        .map_err(|e| AuthError::Dpop(e.into()))?;
        let mut value = http::HeaderValue::from_str(&jwt).map_err(|_| {
            AuthError::Dpop(SeamError::new("the proof is not a valid header value"))
        })?;
        value.set_sensitive(true);
        Ok(value)
    }
}

/// RFC 9449 §4.2 `htu`: the request's URL without query and fragment, and without user
/// information (a password must never be signed into a header sent in the clear).
fn htu(uri: &http::Uri) -> Option<String> {
    let scheme = uri.scheme_str()?;
    let authority = uri.authority()?.as_str();
    let host = authority
        .rsplit_once('@')
        .map_or(authority, |(_, host)| host);
    if host.is_empty() {
        return None;
    }
    let path = match uri.path() {
        "" => "/",
        path => path,
    };
    Some(format!("{scheme}://{host}{path}"))
}

/// A server's `DPoP-Nonce` header value, if it is a valid one (RFC 9449 §8.1: one or more
/// visible ASCII characters other than `"` and `\`, here at most 1 KiB).
pub fn dpop_nonce(value: &[u8]) -> Option<String> {
    let ok = !value.is_empty()
        && value.len() <= MAX_NONCE
        && value
            .iter()
            .all(|&b| matches!(b, 0x21 | 0x23..=0x5b | 0x5d..=0x7e));
    ok.then(|| String::from_utf8_lossy(value).into_owned())
}

/// Whether a 401's `WWW-Authenticate` values ask for a proof with the server's nonce: a
/// `DPoP` challenge with `error="use_dpop_nonce"` (RFC 9449 §9). The answer is to send the
/// same request once more, with the nonce from its `DPoP-Nonce` header in the proof; the
/// token is fine and no authorization is needed.
pub fn is_use_dpop_nonce<'a>(www_authenticate: impl IntoIterator<Item = &'a str>) -> bool {
    www_authenticate
        .into_iter()
        .flat_map(challenge::parse)
        .any(|c| {
            c.scheme.eq_ignore_ascii_case("dpop") && c.param("error") == Some("use_dpop_nonce")
        })
}

/// Whether a token endpoint's error answer is `use_dpop_nonce` (RFC 9449 §8).
pub(crate) fn is_use_dpop_nonce_answer(status: u16, body: &[u8]) -> bool {
    status == 400
        && serde_json::from_slice::<RawError>(body).is_ok_and(|a| a.error == "use_dpop_nonce")
}

/// What to present to the MCP server with every request: the access token, and when it is
/// DPoP-bound the key and what makes proofs with it. A snapshot, cheap to clone, taken from
/// [`Authorizer::credentials`](crate::Authorizer::credentials) after every change, so that a
/// host can make each request's headers without waiting for the authorizer.
#[derive(Clone)]
pub struct Credentials {
    token: AccessToken,
    bound: Option<(DpopKey, Prover)>,
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Credentials")
            .field("dpop", &self.is_dpop())
            .finish_non_exhaustive()
    }
}

impl Credentials {
    /// Credentials for a token, bound to `key` when it is a DPoP token.
    pub(crate) fn new(token: AccessToken, bound: Option<(DpopKey, Prover)>) -> Self {
        Self { token, bound }
    }

    /// Whether the token is DPoP-bound: each request needs [`headers`](Self::headers), and a
    /// `use_dpop_nonce` challenge is answered by sending the request again with the nonce.
    pub fn is_dpop(&self) -> bool {
        self.bound.is_some()
    }

    /// The `Authorization` value alone, `Bearer <token>` or `DPoP <token>`, marked sensitive.
    /// A DPoP token is useless without a proof: send [`headers`](Self::headers) instead.
    pub fn authorization(&self) -> Option<http::HeaderValue> {
        let scheme = if self.is_dpop() { "DPoP" } else { "Bearer" };
        let mut value =
            http::HeaderValue::from_str(&format!("{scheme} {}", self.token.secret())).ok()?;
        value.set_sensitive(true);
        Some(value)
    }

    /// The headers of one request, `method` to `uri`: `Authorization`, and for a DPoP token
    /// a fresh proof in `DPoP` (a new `jti` each call), with the resource server's `nonce`
    /// if it gave one. Values are marked sensitive.
    pub fn headers(
        &self,
        method: &http::Method,
        uri: &http::Uri,
        nonce: Option<&str>,
    ) -> Result<http::HeaderMap, AuthError> {
        let mut headers = http::HeaderMap::new();
        if let Some((key, prover)) = &self.bound {
            let proof = prover.proof(key, method, uri, Some(&self.token), nonce)?;
            headers.insert(DPOP, proof);
        }
        // A token that cannot be a header value is not sent: the server's 401 says what next.
        if let Some(authorization) = self.authorization() {
            headers.insert(http::header::AUTHORIZATION, authorization);
        }
        Ok(headers)
    }
}

#[cfg(test)]
mod tests;
