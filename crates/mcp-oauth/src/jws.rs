//! JWS compact serialization (RFC 7515 §7.1), the one JWT encoder of the workspace: the
//! `private_key_jwt` client assertions a host's signer makes, and the DPoP proofs of
//! [`dpop`](crate::dpop). The signature itself is the caller's: this crate holds no key.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

/// Encodes a JWS in compact form: `base64url(header).base64url(payload).base64url(signature)`,
/// where `sign` gets the signing input (the first two parts joined by `.`) and returns the raw
/// signature (for ES256, `r || s`, 64 bytes: RFC 7518 §3.4). `sign`'s error, whatever its
/// type, comes back as is (encoding itself cannot fail); it must hold no key material.
pub fn jws_compact<E>(
    header_json: &[u8],
    payload_json: &[u8],
    sign: impl FnOnce(&[u8]) -> Result<Vec<u8>, E>,
) -> Result<String, E> {
    let mut jws = URL_SAFE_NO_PAD.encode(header_json);
    jws.push('.');
    jws.push_str(&URL_SAFE_NO_PAD.encode(payload_json));
    let signature = sign(jws.as_bytes())?;
    jws.push('.');
    jws.push_str(&URL_SAFE_NO_PAD.encode(signature));
    Ok(jws)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn three_base64url_parts_signed_over_the_first_two() {
        let mut signed = Vec::new();
        let jws = jws_compact(br#"{"alg":"ES256"}"#, br#"{"a":"?>"}"#, |input| {
            signed = input.to_vec();
            Ok::<_, std::convert::Infallible>(vec![0xfb, 0xff])
        })
        .unwrap();
        let parts: Vec<&str> = jws.split('.').collect();
        assert_eq!(parts.len(), 3);
        assert_eq!(signed, format!("{}.{}", parts[0], parts[1]).into_bytes());
        assert_eq!(URL_SAFE_NO_PAD.decode(parts[1]).unwrap(), br#"{"a":"?>"}"#);
        assert_eq!(parts[2], "-_8", "base64url without padding");
        assert_eq!(
            jws_compact(b"{}", b"{}", |_| Err("no key".to_owned())),
            Err("no key".to_owned())
        );
    }
}
