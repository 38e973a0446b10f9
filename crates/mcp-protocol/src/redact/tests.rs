//! Tests of whole-text redaction; the stream form is tested through the stdio transport's
//! stderr log, which cuts its ring at every offset.

use serde_json::json;

use super::Secrets;

fn secrets(values: &[&str]) -> Secrets {
    Secrets::new(values.iter().map(|s| (*s).to_owned()))
}

#[test]
fn every_occurrence_is_hidden_and_the_rest_kept() {
    let s = secrets(&["sk-1234", "hdr-value"]);
    assert_eq!(
        s.redact("key sk-1234 refused; header hdr-value, again sk-1234."),
        "key [redacted] refused; header [redacted], again [redacted]."
    );
    // Overlapping and adjacent occurrences become one.
    assert_eq!(secrets(&["ABAB"]).redact("x ABABAB y"), "x [redacted] y");
    assert_eq!(
        secrets(&["ABCDEF", "DEFGHI"]).redact("ABCDEFGHI"),
        "[redacted]"
    );
    // A whole text is finished: an end that looks like a secret's beginning stays.
    assert_eq!(s.redact("no such key sk-"), "no such key sk-");
    assert_eq!(s.redact("nothing here"), "nothing here");
    assert_eq!(Secrets::default().redact("sk-1234"), "sk-1234");
}

#[test]
fn a_stream_hides_the_beginning_of_a_secret_it_may_still_write() {
    let s = secrets(&["sk-1234"]);
    assert_eq!(
        s.redact_stream(b"no such key sk-", None),
        "no such key [redacted]"
    );
    // Its first bytes dropped: the rest of the secret and its line go.
    assert_eq!(
        s.redact_stream(b"234 was refused\nnext\n", Some(b'1')),
        "next\n"
    );
}

#[test]
fn json_strings_and_keys_are_redacted() {
    let s = secrets(&["sk-1234"]);
    let mut value = json!({"why": "key sk-1234", "sk-1234": [1, "x sk-1234 y", null], "n": 2});
    s.redact_json(&mut value);
    assert_eq!(
        value,
        json!({"why": "key [redacted]", "[redacted]": [1, "x [redacted] y", null], "n": 2})
    );
}

#[test]
fn values_are_kept_once_and_never_printed() {
    let s = secrets(&["b-secret", "a-secret", "", "b-secret"]).with(&secrets(&["a-secret"]));
    assert_eq!(s.len(), 2);
    assert_eq!(format!("{s:?}"), "Secrets(2 redacted)");
}
