//! The one way everything the replicas share is sealed: session ids, shared records and relayed
//! answers all go through [`SessionSeal::seal_bytes`] and [`SessionSeal::open_bytes`].
//!
//! AES-256-GCM with a random 96-bit nonce under one long-lived key is safe for about 2^32
//! messages (NIST SP 800-38D §8.3): past that, the chance of two nonces meeting, which gives
//! away the key's authentication, is no longer negligible. The replicas seal under one key
//! for as long as it is listed, and every session, task change, relayed answer and
//! subscription is a message, so a busy cluster could reach that bound in days. So each
//! message is sealed under a key of its own, derived with HKDF-SHA256 from the shared key and
//! 128 random bits that travel with it; with its key used once, its nonce can be fixed. Two
//! messages share a key only if their 128 random bits meet (about 2^64 messages).
//!
//! What was sealed before (the first format: the shared key itself and a random nonce) still
//! opens, so replicas of the previous release and ids clients hold stay good across an
//! upgrade; nothing is sealed that way any more.

use ring::aead::{AES_256_GCM, Aad, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
use ring::hkdf::{HKDF_SHA256, Prk, Salt};
use ring::rand::SecureRandom as _;

use super::SessionSeal;

/// The first byte of what is sealed now; what was sealed before begins with a random nonce.
const FORMAT: u8 = 2;

/// How many random bytes each message's key is derived from.
const SALT_LEN: usize = 16;

/// The salt of the extraction: which use the derived keys are for.
const EXTRACT_SALT: &[u8] = b"mcp-host sealed message keys v2";

/// A shared key, ready for both formats.
pub(super) struct SealKey {
    /// Where each message's key is expanded from.
    prk: Prk,
    /// The key itself, which sealed the first format.
    first: LessSafeKey,
}

impl SealKey {
    /// `None` when `key` is not an AES-256 key.
    pub(super) fn new(key: &[u8]) -> Option<Self> {
        let first = UnboundKey::new(&AES_256_GCM, key).ok()?;
        Some(Self {
            prk: Salt::new(HKDF_SHA256, EXTRACT_SALT).extract(key),
            first: LessSafeKey::new(first),
        })
    }

    /// The key of the message whose random bytes are `salt`.
    fn message_key(&self, salt: &[u8]) -> Option<LessSafeKey> {
        let info = [salt];
        let okm = self.prk.expand(&info, &AES_256_GCM).ok()?;
        Some(LessSafeKey::new(UnboundKey::from(okm)))
    }
}

impl SessionSeal {
    /// `plain` sealed under the first key, bound to `aad`: the format byte, the salt, then
    /// the ciphertext and its tag. `None` when the OS gives no randomness.
    pub(super) fn seal_bytes(&self, aad: &[u8], plain: &[u8]) -> Option<Vec<u8>> {
        let key = self.keys.first()?;
        let mut salt = [0u8; SALT_LEN];
        self.random.fill(&mut salt).ok()?;
        let mut out = Vec::with_capacity(1 + SALT_LEN + plain.len() + AES_256_GCM.tag_len());
        out.push(FORMAT);
        out.extend_from_slice(&salt);
        out.extend_from_slice(plain);
        let (head, body) = out.split_at_mut(1 + SALT_LEN);
        let tag = key
            .message_key(&head[1..])?
            .seal_in_place_separate_tag(
                Nonce::assume_unique_for_key([0; NONCE_LEN]),
                Aad::from(aad),
                body,
            )
            .ok()?;
        out.extend_from_slice(tag.as_ref());
        Some(out)
    }

    /// What [`seal_bytes`](Self::seal_bytes) (or the first format) sealed with any of the
    /// keys, bound to `aad`; `None` for anything else (tampered, bound to something else, a
    /// key this replica lacks).
    pub(super) fn open_bytes(&self, aad: &[u8], sealed: &[u8]) -> Option<Vec<u8>> {
        if let Some((&FORMAT, rest)) = sealed.split_first()
            && let Some((salt, body)) = rest.split_at_checked(SALT_LEN)
        {
            let opened = self.keys.iter().find_map(|key| {
                let mut buffer = body.to_vec();
                key.message_key(salt)?
                    .open_in_place(
                        Nonce::assume_unique_for_key([0; NONCE_LEN]),
                        Aad::from(aad),
                        &mut buffer,
                    )
                    .ok()
                    .map(|plain| plain.to_vec())
            });
            if opened.is_some() {
                return opened;
            }
        }
        // The first format; a random nonce that happens to begin with the format byte lands
        // here too.
        let (nonce, body) = sealed.split_at_checked(NONCE_LEN)?;
        self.keys.iter().find_map(|key| {
            let nonce = Nonce::try_assume_unique_for_key(nonce).ok()?;
            let mut buffer = body.to_vec();
            key.first
                .open_in_place(nonce, Aad::from(aad), &mut buffer)
                .ok()
                .map(|plain| plain.to_vec())
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::time::Duration;

    use super::*;

    const KEY: [u8; 32] = [7; 32];
    const OTHER: [u8; 32] = [9; 32];

    fn seal(keys: &[[u8; 32]]) -> SessionSeal {
        SessionSeal::new(keys, Duration::from_secs(60)).unwrap()
    }

    /// What the first format wrote: the shared key itself and a random nonce.
    fn first_format(key: &[u8], aad: &[u8], plain: &[u8]) -> Vec<u8> {
        let key = LessSafeKey::new(UnboundKey::new(&AES_256_GCM, key).unwrap());
        let nonce = [3u8; NONCE_LEN];
        let mut body = plain.to_vec();
        key.seal_in_place_append_tag(
            Nonce::assume_unique_for_key(nonce),
            Aad::from(aad),
            &mut body,
        )
        .unwrap();
        [nonce.as_slice(), &body].concat()
    }

    #[test]
    fn each_message_is_sealed_under_a_key_of_its_own() {
        let s = seal(&[KEY]);
        let a = s.seal_bytes(b"aad", b"the same words").unwrap();
        let b = s.seal_bytes(b"aad", b"the same words").unwrap();
        assert_eq!(s.open_bytes(b"aad", &a).unwrap(), b"the same words");
        assert_eq!(s.open_bytes(b"aad", &b).unwrap(), b"the same words");
        assert_eq!((a[0], a.len()), (FORMAT, 1 + SALT_LEN + 14 + 16));
        // Same nonce (fixed), same plaintext: only keys of their own make them differ.
        assert_ne!(a[1 + SALT_LEN..], b[1 + SALT_LEN..]);
        // Not the shared key itself: its ciphertext does not open under it.
        let shared = LessSafeKey::new(UnboundKey::new(&AES_256_GCM, &KEY).unwrap());
        let mut body = a[1 + SALT_LEN..].to_vec();
        assert!(
            shared
                .open_in_place(
                    Nonce::assume_unique_for_key([0; NONCE_LEN]),
                    Aad::from(b"aad"),
                    &mut body
                )
                .is_err()
        );
    }

    #[test]
    fn a_seal_opens_only_intact_bound_to_its_aad_and_under_a_listed_key() {
        let s = seal(&[KEY]);
        let sealed = s.seal_bytes(b"aad", b"words").unwrap();
        assert_eq!(s.open_bytes(b"aad", &sealed).unwrap(), b"words");
        assert_eq!(s.open_bytes(b"other", &sealed), None);
        for i in 0..sealed.len() {
            let mut bad = sealed.clone();
            bad[i] ^= 1;
            assert_eq!(s.open_bytes(b"aad", &bad), None, "byte {i}");
        }
        assert_eq!(s.open_bytes(b"aad", &sealed[..sealed.len() - 1]), None);
        assert_eq!(s.open_bytes(b"aad", &[]), None);
        assert_eq!(seal(&[OTHER]).open_bytes(b"aad", &sealed), None);
        // Rotation: a new key first seals, the old one listed still opens.
        let rotated = seal(&[OTHER, KEY]);
        assert_eq!(rotated.open_bytes(b"aad", &sealed).unwrap(), b"words");
        let fresh = rotated.seal_bytes(b"aad", b"new").unwrap();
        assert_eq!(seal(&[OTHER]).open_bytes(b"aad", &fresh).unwrap(), b"new");
        assert_eq!(s.open_bytes(b"aad", &fresh), None);
    }

    #[test]
    fn what_the_first_format_sealed_still_opens() {
        let s = seal(&[OTHER, KEY]);
        let old = first_format(&KEY, b"aad", b"kept from before");
        assert_eq!(s.open_bytes(b"aad", &old).unwrap(), b"kept from before");
        assert_eq!(s.open_bytes(b"other", &old), None);
        // One whose random nonce begins with the format byte, too.
        let key = LessSafeKey::new(UnboundKey::new(&AES_256_GCM, &KEY).unwrap());
        let mut nonce = [5u8; NONCE_LEN];
        nonce[0] = FORMAT;
        let mut body = b"lookalike".to_vec();
        key.seal_in_place_append_tag(
            Nonce::assume_unique_for_key(nonce),
            Aad::from(b"aad"),
            &mut body,
        )
        .unwrap();
        let old = [nonce.as_slice(), &body].concat();
        assert_eq!(s.open_bytes(b"aad", &old).unwrap(), b"lookalike");
    }
}
