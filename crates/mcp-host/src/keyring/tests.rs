//! Secret names and the keyring choice; the keyrings themselves are exercised for real by
//! `tests/keyring.rs`.

use super::*;

#[test]
fn names_are_checked_the_same_for_every_keyring() {
    for ok in ["github-token", "a", "API_KEY.v2", &"x".repeat(128)] {
        assert!(is_valid_secret_name(ok), "{ok}");
    }
    for bad in ["", "a b", "a/b", "tok:en", "é", &"x".repeat(129)] {
        assert!(!is_valid_secret_name(bad), "{bad}");
        assert!(matches!(
            checked(bad),
            Err(KeyringError::InvalidName { .. })
        ));
    }
}

#[test]
fn an_unknown_keyring_name_is_refused_with_the_names_that_work() {
    let env = Env::new().with("MCP_HOST_KEYRING", "gnome");
    let err = Keyring::open(&env).unwrap_err();
    assert!(matches!(err, KeyringError::UnknownKind { .. }), "{err}");
    assert!(err.to_string().contains("keyutils"), "{err}");
    assert_eq!(KeyringKind::Keyutils.to_string(), "keyutils");
    assert!(!KeyringKind::Keyutils.is_persistent());
    assert!(KeyringKind::SecretService.is_persistent());
}
