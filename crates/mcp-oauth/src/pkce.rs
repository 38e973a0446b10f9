//! PKCE with S256 (RFC 7636): the verifier from random bytes the caller supplies (this crate
//! reads no OS randomness), the challenge from the verifier.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use sha2::{Digest as _, Sha256};

use crate::secret::PkceVerifier;

/// A verifier and its S256 challenge.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Pkce {
    /// Kept secret until the code is exchanged.
    pub verifier: PkceVerifier,
    /// Sent with the authorization request, with `code_challenge_method=S256`.
    pub challenge: String,
}

impl Pkce {
    /// A verifier of 43 characters from 32 random bytes.
    pub fn from_random(bytes: [u8; 32]) -> Self {
        Self::from_verifier(PkceVerifier::new(URL_SAFE_NO_PAD.encode(bytes)))
    }

    /// The challenge of a given verifier: `BASE64URL(SHA256(verifier))`.
    pub fn from_verifier(verifier: PkceVerifier) -> Self {
        let challenge = URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.secret().as_bytes()));
        Self {
            verifier,
            challenge,
        }
    }
}

/// An opaque `state` value from random bytes: 22 URL-safe characters for 16 bytes.
pub fn state_from_random(bytes: [u8; 16]) -> String {
    URL_SAFE_NO_PAD.encode(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc_7636_appendix_b() {
        let pkce = Pkce::from_verifier(PkceVerifier::new(
            "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk",
        ));
        assert_eq!(
            pkce.challenge,
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
        );
    }

    #[test]
    fn verifiers_have_the_right_length_and_alphabet() {
        let pkce = Pkce::from_random([7; 32]);
        let v = pkce.verifier.secret();
        assert_eq!(v.len(), 43);
        assert!(
            v.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        );
        assert_eq!(state_from_random([1; 16]).len(), 22);
    }
}
