//! An issuer's JSON Web Key Set (RFC 7517), read for the public keys that verify its tokens.
//! A key this crate cannot use (another `kty` or curve, `use` other than `sig`, bad base64)
//! is left out, not an error: key sets carry encryption keys and new key types beside the
//! signing ones.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::signature::{self, UnparsedPublicKey};
use serde::Deserialize;

use super::Algorithm;
use crate::error::Error;

/// The largest key set read (bytes): a real one is a few kilobytes.
const MAX_JWKS_BYTES: usize = 256 << 10;

/// The most keys kept from one set: each unknown-`kid`-free token is tried against every key
/// of its family, so the work per token is bounded by it.
const MAX_KEYS: usize = 32;

/// The signing keys of a key set.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JwkSet {
    keys: Vec<Jwk>,
}

/// One public key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Jwk {
    kid: Option<String>,
    /// The key's own `alg`, when it states one: then only that algorithm may use it.
    alg: Option<String>,
    material: Material,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Material {
    /// Modulus and exponent, big-endian.
    Rsa { n: Vec<u8>, e: Vec<u8> },
    /// An uncompressed point `04 || x || y`, with its curve.
    Ec { curve: Curve, point: Vec<u8> },
    /// An Ed25519 public key.
    Ed25519(Vec<u8>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Curve {
    P256,
    P384,
}

#[derive(Deserialize)]
struct RawSet {
    keys: Vec<serde_json::Value>,
}

#[derive(Deserialize)]
struct RawKey {
    kty: String,
    #[serde(default)]
    kid: Option<String>,
    #[serde(default, rename = "use")]
    usage: Option<String>,
    #[serde(default)]
    alg: Option<String>,
    #[serde(default)]
    n: Option<String>,
    #[serde(default)]
    e: Option<String>,
    #[serde(default)]
    crv: Option<String>,
    #[serde(default)]
    x: Option<String>,
    #[serde(default)]
    y: Option<String>,
}

fn b64(s: Option<&String>) -> Option<Vec<u8>> {
    URL_SAFE_NO_PAD.decode(s?.as_bytes()).ok()
}

impl JwkSet {
    /// Reads a key set document (`{"keys": [...]}`), keeping the signing keys it can use. A
    /// document that is not a key set is an error; one with no usable key is an empty set.
    pub fn parse(body: &[u8]) -> Result<Self, Error> {
        let invalid = |detail: String| Error::InvalidMetadata {
            what: "JSON Web Key Set",
            detail,
        };
        if body.len() > MAX_JWKS_BYTES {
            return Err(invalid(format!("larger than {MAX_JWKS_BYTES} bytes")));
        }
        let raw: RawSet = serde_json::from_slice(body).map_err(|e| invalid(e.to_string()))?;
        let keys = raw
            .keys
            .into_iter()
            .filter_map(|v| serde_json::from_value::<RawKey>(v).ok())
            .filter_map(Jwk::from_raw)
            .take(MAX_KEYS)
            .collect();
        Ok(Self { keys })
    }

    /// How many usable keys it holds.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// Whether it holds no usable key.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// Whether a key has this `kid`.
    pub fn has_kid(&self, kid: &str) -> bool {
        self.keys.iter().any(|k| k.kid.as_deref() == Some(kid))
    }

    /// The keys that may verify a signature by `alg` under `kid` (every key of the family when
    /// the token names none).
    pub(super) fn candidates<'a>(
        &'a self,
        alg: Algorithm,
        kid: Option<&'a str>,
    ) -> impl Iterator<Item = &'a Jwk> + 'a {
        self.keys
            .iter()
            .filter(move |k| kid.is_none_or(|kid| k.kid.as_deref() == Some(kid)) && k.fits(alg))
    }
}

impl Jwk {
    fn from_raw(raw: RawKey) -> Option<Self> {
        if raw.usage.as_deref().is_some_and(|u| u != "sig") {
            return None;
        }
        let material = match (raw.kty.as_str(), raw.crv.as_deref()) {
            ("RSA", _) => Material::Rsa {
                n: b64(raw.n.as_ref())?,
                e: b64(raw.e.as_ref())?,
            },
            ("EC", Some(crv @ ("P-256" | "P-384"))) => {
                let (curve, len) = match crv {
                    "P-256" => (Curve::P256, 32),
                    _ => (Curve::P384, 48),
                };
                let x = b64(raw.x.as_ref())?;
                let y = b64(raw.y.as_ref())?;
                if x.len() != len || y.len() != len {
                    return None;
                }
                let mut point = Vec::with_capacity(1 + 2 * len);
                point.push(4);
                point.extend_from_slice(&x);
                point.extend_from_slice(&y);
                Material::Ec { curve, point }
            }
            ("OKP", Some("Ed25519")) => {
                let x = b64(raw.x.as_ref())?;
                if x.len() != 32 {
                    return None;
                }
                Material::Ed25519(x)
            }
            _ => return None,
        };
        Some(Self {
            kid: raw.kid,
            alg: raw.alg,
            material,
        })
    }

    /// Whether this key may verify `alg`: the algorithm's family and curve, and the key's own
    /// `alg` if it states one.
    fn fits(&self, alg: Algorithm) -> bool {
        if self.alg.as_deref().is_some_and(|a| a != alg.as_str()) {
            return false;
        }
        match (&self.material, alg) {
            (
                Material::Rsa { .. },
                Algorithm::Rs256
                | Algorithm::Rs384
                | Algorithm::Rs512
                | Algorithm::Ps256
                | Algorithm::Ps384
                | Algorithm::Ps512,
            ) => true,
            (Material::Ec { curve, .. }, Algorithm::Es256) => *curve == Curve::P256,
            (Material::Ec { curve, .. }, Algorithm::Es384) => *curve == Curve::P384,
            (Material::Ed25519(_), Algorithm::EdDsa) => true,
            _ => false,
        }
    }

    /// Whether `signature` is this key's, by `alg`, over `message`.
    pub(super) fn verifies(&self, alg: Algorithm, message: &[u8], signature: &[u8]) -> bool {
        if !self.fits(alg) {
            return false;
        }
        match &self.material {
            Material::Rsa { n, e } => {
                let params: &signature::RsaParameters = match alg {
                    Algorithm::Rs256 => &signature::RSA_PKCS1_2048_8192_SHA256,
                    Algorithm::Rs384 => &signature::RSA_PKCS1_2048_8192_SHA384,
                    Algorithm::Rs512 => &signature::RSA_PKCS1_2048_8192_SHA512,
                    Algorithm::Ps256 => &signature::RSA_PSS_2048_8192_SHA256,
                    Algorithm::Ps384 => &signature::RSA_PSS_2048_8192_SHA384,
                    Algorithm::Ps512 => &signature::RSA_PSS_2048_8192_SHA512,
                    _ => return false,
                };
                signature::RsaPublicKeyComponents { n, e }
                    .verify(params, message, signature)
                    .is_ok()
            }
            Material::Ec { point, .. } => {
                let params = match alg {
                    Algorithm::Es256 => &signature::ECDSA_P256_SHA256_FIXED,
                    Algorithm::Es384 => &signature::ECDSA_P384_SHA384_FIXED,
                    _ => return false,
                };
                UnparsedPublicKey::new(params, point)
                    .verify(message, signature)
                    .is_ok()
            }
            Material::Ed25519(x) => UnparsedPublicKey::new(&signature::ED25519, x)
                .verify(message, signature)
                .is_ok(),
        }
    }
}
