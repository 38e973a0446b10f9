//! The `cluster` block's keys as the file gives them.

use super::*;

fn block(keys: &[&str]) -> ClusterBlock {
    ClusterBlock {
        session_keys: keys.iter().map(|k| (*k).to_owned()).collect(),
        max_session_age_seconds: None,
    }
}

const GOOD: &str = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";

#[test]
fn keys_come_from_the_environment_and_an_empty_one_is_skipped() {
    let env = Env::new().with("K", GOOD).with("OLD", "");
    let seal = block(&["${K}", "${OLD}", "${NONE:-}"]).seal(&env).unwrap();
    assert_eq!(seal.max_age(), DEFAULT_MAX_SESSION_AGE);
    assert!(format!("{seal:?}").contains("keys: 1"));
}

#[test]
fn a_short_or_unreadable_or_missing_key_is_refused_naming_the_field_not_the_key() {
    let env = Env::new().with("SHORT", "c2hvcnQ=").with("K", GOOD);
    let e = block(&["${K}", "${SHORT}"]).seal(&env).unwrap_err();
    assert!(
        e.starts_with("cluster.sessionKeys[1]: 5 bytes, not 32"),
        "{e}"
    );
    assert!(!e.contains("c2hvcnQ"), "{e}");
    let e = block(&["not base64!"]).seal(&env).unwrap_err();
    assert!(e.starts_with("cluster.sessionKeys[0]: not base64"), "{e}");
    assert!(!e.contains("not base64!"), "{e}");
    let e = block(&["${UNSET}"]).seal(&env).unwrap_err();
    assert!(
        e.contains("cluster.sessionKeys[0]") && e.contains("UNSET"),
        "{e}"
    );
    let e = block(&["${OLD:-}"]).seal(&env).unwrap_err();
    assert!(e.contains("no key"), "{e}");
}
