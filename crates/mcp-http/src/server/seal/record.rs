//! What a handler keeps in a store the replicas share, sealed with the session keys
//! ([`SessionSeal::seal_record`]): the store holds only ciphertext, and a record sealed under
//! one name cannot be passed off under another. The gateway keeps its tasks' states this way.

use super::SessionSeal;

/// Bound into every sealed record, before its name: neither a sealed session id nor a relayed
/// answer passes for one.
const RECORD_CONTEXT: &[u8] = b"mcp-host shared record v1\0";

impl SessionSeal {
    /// `plain` sealed with the first key (`aead`), bound to `name` (say, the store key it is
    /// kept under); `None` when the OS gives no randomness.
    pub fn seal_record(&self, name: &str, plain: &[u8]) -> Option<Vec<u8>> {
        self.seal_bytes(&aad(name), plain)
    }

    /// What [`seal_record`](Self::seal_record) sealed under `name` with any of the keys;
    /// `None` for anything else (tampered, another name, a key this replica lacks).
    pub fn open_record(&self, name: &str, sealed: &[u8]) -> Option<Vec<u8>> {
        self.open_bytes(&aad(name), sealed)
    }
}

fn aad(name: &str) -> Vec<u8> {
    let mut aad = RECORD_CONTEXT.to_vec();
    aad.extend_from_slice(name.as_bytes());
    aad
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::time::Duration;

    use super::super::SessionSeal;

    #[test]
    fn a_record_opens_under_its_name_and_key_only() {
        let seal = SessionSeal::new(&[[7u8; 32]], Duration::from_secs(60)).unwrap();
        let sealed = seal.seal_record("p:task:1", b"the result").unwrap();
        assert_eq!(
            seal.open_record("p:task:1", &sealed).as_deref(),
            Some(&b"the result"[..])
        );
        assert!(!sealed.windows(6).any(|w| w == b"result"));
        assert_eq!(seal.open_record("p:task:2", &sealed), None);
        let mut tampered = sealed.clone();
        let last = tampered.len() - 1;
        tampered[last] ^= 1;
        assert_eq!(seal.open_record("p:task:1", &tampered), None);
        let other = SessionSeal::new(&[[8u8; 32]], Duration::from_secs(60)).unwrap();
        assert_eq!(other.open_record("p:task:1", &sealed), None);
        // A rotated replica (new key first, old listed) still opens it.
        let rotated = SessionSeal::new(&[[8u8; 32], [7u8; 32]], Duration::from_secs(60)).unwrap();
        assert!(rotated.open_record("p:task:1", &sealed).is_some());
    }
}
