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

#[test]
fn a_sessions_end_and_level_are_read_from_one_mget_and_another_reply_names_redis() {
    use mcp_host::redis::Reply;
    use mcp_http::SessionState;
    let bulk = |v: Option<&[u8]>| Reply::Bulk(v.map(<[u8]>::to_vec));
    let read = |ended, level| {
        share::state_of(Reply::Array(Some(vec![bulk(ended), bulk(level)])), "r:1/0").unwrap()
    };
    assert_eq!(
        read(Some(b"1"), Some(b"error")),
        SessionState::new(true, Some("error".to_owned()))
    );
    assert_eq!(
        read(None, Some(b"debug")),
        SessionState::new(false, Some("debug".to_owned()))
    );
    assert_eq!(read(None, None), SessionState::default());
    // Not the two values asked for: an error naming Redis, its address and the command.
    for odd in [
        Reply::Integer(1),
        Reply::Array(Some(vec![bulk(None)])),
        Reply::Array(None),
    ] {
        let e = share::state_of(odd, "10.0.0.5:6379/0").unwrap_err();
        assert!(e.0.contains("Redis at 10.0.0.5:6379/0: MGET"), "{e}");
    }
}
