//! Proofs as a server reads them: the header (`typ`, `alg`, the public `jwk`), every claim,
//! and that the signer signed exactly the first two parts. The signature itself is checked
//! with a real key in `mcp-host`, which owns the cryptography.

use std::sync::atomic::{AtomicU8, Ordering};

use serde_json::Value;

use super::*;
use crate::http::BoxError;

/// Signs with a "signature" that is the SHA-256 of the input: enough to see what was signed.
struct FakeSigner;

impl DpopSigner for FakeSigner {
    fn generate(&self) -> Result<DpopKey, BoxError> {
        let mut public = vec![0x04];
        public.extend((1..=64).collect::<Vec<u8>>());
        Ok(DpopKey::new(b"private-key-secret".to_vec(), &public).unwrap())
    }

    fn sign(&self, key: &DpopKey, message: &[u8]) -> Result<Vec<u8>, BoxError> {
        assert_eq!(key.secret_pkcs8(), b"private-key-secret");
        Ok(Sha256::digest(message).to_vec())
    }
}

struct Fixed;

impl Clock for Fixed {
    fn now_ms(&self) -> u64 {
        1_700_000_000_999
    }
}

struct Counter(AtomicU8);

impl Randomness for Counter {
    fn fill(&self, buf: &mut [u8]) -> Result<(), BoxError> {
        buf.fill(self.0.fetch_add(1, Ordering::SeqCst));
        Ok(())
    }
}

fn prover() -> Prover {
    Prover {
        signer: Arc::new(FakeSigner),
        clock: Arc::new(Fixed),
        random: Arc::new(Counter(AtomicU8::new(7))),
    }
}

/// The header and claims of a proof, after checking that its signature part is what the
/// signer returned for its first two parts.
fn decode(proof: &http::HeaderValue) -> (Value, Value) {
    let text = proof.to_str().unwrap();
    let parts: Vec<&str> = text.split('.').collect();
    assert_eq!(parts.len(), 3, "{text}");
    let signed = format!("{}.{}", parts[0], parts[1]);
    assert_eq!(
        URL_SAFE_NO_PAD.decode(parts[2]).unwrap(),
        Sha256::digest(signed.as_bytes()).to_vec()
    );
    let json = |p: &str| serde_json::from_slice(&URL_SAFE_NO_PAD.decode(p).unwrap()).unwrap();
    (json(parts[0]), json(parts[1]))
}

#[test]
fn a_resource_request_proof_names_the_request_the_token_and_the_nonce() {
    let key = FakeSigner.generate().unwrap();
    let uri: http::Uri = "https://user:pw@mcp.example.com:8443/mcp?session=x#frag"
        .parse()
        .unwrap();
    let token = AccessToken::new("at-secret");
    let p = prover();
    let proof = p
        .proof(&key, &http::Method::POST, &uri, Some(&token), Some("n-1"))
        .unwrap();
    assert!(proof.is_sensitive());
    let (header, claims) = decode(&proof);
    assert_eq!(header["typ"], "dpop+jwt");
    assert_eq!(header["alg"], "ES256");
    let jwk = &header["jwk"];
    assert_eq!((&jwk["kty"], &jwk["crv"]), (&"EC".into(), &"P-256".into()));
    assert_eq!(
        jwk["x"],
        URL_SAFE_NO_PAD.encode((1..=32).collect::<Vec<u8>>())
    );
    assert_eq!(
        jwk["y"],
        URL_SAFE_NO_PAD.encode((33..=64).collect::<Vec<u8>>())
    );
    assert!(jwk.get("d").is_none(), "never the private key");
    assert_eq!(claims["htm"], "POST");
    assert_eq!(
        claims["htu"], "https://mcp.example.com:8443/mcp",
        "no user information, query or fragment"
    );
    assert_eq!(claims["iat"], 1_700_000_000);
    assert_eq!(
        claims["ath"],
        URL_SAFE_NO_PAD.encode(Sha256::digest(b"at-secret"))
    );
    assert_eq!(claims["nonce"], "n-1");
    assert_eq!(
        URL_SAFE_NO_PAD
            .decode(claims["jti"].as_str().unwrap())
            .unwrap()
            .len(),
        16
    );

    let again = p
        .proof(&key, &http::Method::GET, &uri, Some(&token), None)
        .unwrap();
    let (_, second) = decode(&again);
    assert_ne!(claims["jti"], second["jti"], "a fresh jti every time");
    assert_eq!(second["htm"], "GET");
    assert!(second.get("nonce").is_none());
    // The token is only hashed into `ath`, the private key nowhere: neither is in the decoded
    // header or claims (the proof itself is base64url, where no plain text shows).
    let decoded = format!("{header} {claims}");
    assert!(
        !decoded.contains("at-secret")
            && !decoded.contains(&URL_SAFE_NO_PAD.encode(b"private-key-secret")),
        "{decoded}"
    );
}

#[test]
fn a_token_request_proof_has_no_ath() {
    let key = FakeSigner.generate().unwrap();
    let uri: http::Uri = "http://127.0.0.1:9/token".parse().unwrap();
    let proof = prover()
        .proof(&key, &http::Method::POST, &uri, None, None)
        .unwrap();
    let (_, claims) = decode(&proof);
    assert_eq!(claims["htu"], "http://127.0.0.1:9/token");
    assert!(claims.get("ath").is_none());
}

#[test]
fn credentials_make_the_headers_of_each_request() {
    let key = FakeSigner.generate().unwrap();
    let uri: http::Uri = "https://mcp.example.com/mcp".parse().unwrap();
    let bound = Credentials::new(AccessToken::new("at-secret"), Some((key.clone(), prover())));
    let headers = bound.headers(&http::Method::POST, &uri, None).unwrap();
    assert_eq!(headers[http::header::AUTHORIZATION], "DPoP at-secret");
    assert!(headers[http::header::AUTHORIZATION].is_sensitive());
    assert!(headers.contains_key("dpop"));
    let bearer = Credentials::new(AccessToken::new("at-secret"), None);
    let headers = bearer
        .headers(&http::Method::POST, &uri, Some("n"))
        .unwrap();
    assert_eq!(headers[http::header::AUTHORIZATION], "Bearer at-secret");
    assert_eq!(headers.len(), 1, "no proof for a bearer token");
    let shown = format!("{bound:?} {key:?}");
    assert!(!shown.contains("secret"), "{shown}");
    assert_eq!(format!("{key:?}"), "DpopKey([redacted])");
}

#[test]
fn nonces_and_nonce_challenges() {
    assert_eq!(dpop_nonce(b"eyJ7S_9D2"), Some("eyJ7S_9D2".to_owned()));
    for bad in [&b""[..], b"a b", b"a\"b", b"a\\b", &[b'a'; 1025]] {
        assert_eq!(dpop_nonce(bad), None, "{bad:?}");
    }
    assert!(is_use_dpop_nonce([
        r#"DPoP error="use_dpop_nonce", error_description="Resource server requires nonce in DPoP proof""#
    ]));
    assert!(is_use_dpop_nonce([
        "Bearer realm=x",
        "dpop error=use_dpop_nonce"
    ]));
    assert!(!is_use_dpop_nonce([r#"Bearer error="use_dpop_nonce""#]));
    assert!(!is_use_dpop_nonce([r#"DPoP error="invalid_token""#]));
    assert!(is_use_dpop_nonce_answer(
        400,
        br#"{"error":"use_dpop_nonce"}"#
    ));
    assert!(!is_use_dpop_nonce_answer(
        401,
        br#"{"error":"use_dpop_nonce"}"#
    ));
    assert!(!is_use_dpop_nonce_answer(
        400,
        br#"{"error":"invalid_grant"}"#
    ));
}
