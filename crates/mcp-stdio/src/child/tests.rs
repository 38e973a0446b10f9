//! Tests of the stderr log: what it keeps, and that no part of a secret is shown, wherever
//! the ring cuts it and however it is written; of which groups a dropped client kills; and of
//! what a configuration and the log print.

use super::{StderrLog, groups, kill_group_now};

/// Secrets made of upper-case letters and digits, which neither the filler text of these tests
/// nor `[redacted]` contains: a text shows some part of a secret if and only if it shows one
/// of those bytes. The second is a multi-line value (a PEM key passed in a variable), whose
/// line ends must not be taken for the stream's.
const SECRETS: [&str; 2] = ["TOKEN0123456789XYZ", "KEY-ONE\nKEY-TWO\nKEY-END"];

/// Appends in chunks of these sizes, so that the ring wraps at varying points.
const CHUNKS: [usize; 5] = [1, 5, 13, 64, 1000];

fn new_log(capacity: usize, secrets: &[&str]) -> StderrLog {
    let secrets = mcp_protocol::Secrets::new(secrets.iter().map(|s| (*s).to_owned()));
    StderrLog::new(capacity, secrets)
}

fn feed(log: &StderrLog, input: &str, chunk: usize) {
    for part in input.as_bytes().chunks(chunk) {
        log.append(part);
    }
}

/// `pattern` repeated up to `len` bytes.
fn filler(pattern: &str, len: usize) -> String {
    pattern.chars().cycle().take(len).collect()
}

/// Whether `text` shows any byte of a secret in [`SECRETS`].
fn shows_secret(text: &str) -> bool {
    text.bytes()
        .any(|b| b.is_ascii_uppercase() || b.is_ascii_digit())
}

#[test]
fn a_secret_cut_at_any_offset_shows_no_part() {
    let capacity = 64;
    let before = filler("an earlier line\n", 100);
    for secret in SECRETS {
        for cut in 1..secret.len() {
            // What follows fills the ring exactly, so that it keeps the secret from `cut` on.
            let rest = capacity - (secret.len() - cut);
            for pattern in ["no line end in what follows ", "a line\n"] {
                let after = filler(pattern, rest);
                // Shown: what follows, from its first whole line when it has one.
                let expected = match after.find('\n') {
                    Some(i) => &after[i + 1..],
                    None => &after[..],
                };
                for chunk in CHUNKS {
                    let log = new_log(capacity, &[secret]);
                    feed(&log, &format!("{before}{secret}{after}"), chunk);
                    let (text, tail) = (log.text(), log.tail(5));
                    let case = format!("{secret:?} cut after {cut} bytes, chunks of {chunk}");
                    assert!(!shows_secret(&text), "{case}: text() shows {text:?}");
                    assert!(!shows_secret(&tail), "{case}: tail() shows {tail:?}");
                    assert_eq!(text, expected, "{case}");
                }
            }
        }
    }
}

#[test]
fn a_secret_across_the_wrap_point_is_redacted() {
    let capacity = 64;
    let mut across = 0;
    for secret in SECRETS {
        for lead in 0..capacity {
            // The secret starts a line, at kept index 1 or later.
            for trail in 0..capacity - secret.len() {
                let trail = filler("more\n", trail);
                let input = format!("{}\n{secret}{trail}", filler("earlier\n", lead + capacity));
                for chunk in CHUNKS {
                    let log = new_log(capacity, &[secret]);
                    feed(&log, &input, chunk);
                    {
                        let ring = log.ring.lock().unwrap();
                        let first = ring.bytes.as_slices().0.len();
                        let at = capacity - trail.len() - secret.len();
                        across += usize::from(at < first && first < at + secret.len());
                    }
                    let text = log.text();
                    let case = format!("{input:?} in chunks of {chunk}");
                    assert!(!shows_secret(&text), "{case}: shows {text:?}");
                    assert_eq!(text.matches("[redacted]").count(), 1, "{case}: {text:?}");
                    assert!(
                        text.ends_with(&format!("[redacted]{trail}")),
                        "{case}: {text:?}"
                    );
                }
            }
        }
    }
    assert!(
        across > 0,
        "no case put the ring's wrap point inside the secret"
    );
}

#[test]
fn a_secret_still_being_written_shows_no_part() {
    for secret in SECRETS {
        for written in 1..=secret.len() {
            let log = new_log(256, &[secret]);
            feed(&log, &format!("starting\n{}", &secret[..written]), 7);
            assert_eq!(
                log.text(),
                "starting\n[redacted]",
                "{written} bytes written"
            );
            assert_eq!(log.tail(5), "starting | [redacted]");
        }
        // A ring smaller than the secret may keep only its middle: nothing of it is shown.
        for before in 0..20 {
            for written in 1..=secret.len() {
                let log = new_log(8, &[secret]);
                let input = format!("{}{}", filler("hello\n", before), &secret[..written]);
                feed(&log, &input, 3);
                let text = log.text();
                assert!(!shows_secret(&text), "{input:?}: shows {text:?}");
            }
        }
    }
}

/// The price of hiding a secret still being written: an unfinished line that ends with the
/// first bytes of a secret shows `[redacted]` in their place, until it is finished.
#[test]
fn an_unfinished_line_that_ends_like_a_secret_begins_hides_that_end() {
    let log = new_log(256, &["key-1234"]);
    log.append(b"no such key");
    assert_eq!(log.text(), "no such [redacted]");
    log.append(b"\n");
    assert_eq!(log.text(), "no such key\n");
    log.append(b"key-1234 is wrong\n");
    assert_eq!(log.tail(5), "no such key | [redacted] is wrong");
}

#[test]
fn overlapping_occurrences_are_redacted_whole() {
    let log = new_log(256, &["ABAB"]);
    log.append(b"x ABABAB y\n");
    assert_eq!(log.text(), "x [redacted] y\n");

    let log = new_log(256, &["ABCDEF", "DEFGHI"]);
    log.append(b"x ABCDEFGHI y, ABCDEF DEFGHI\n");
    assert_eq!(log.text(), "x [redacted] y, [redacted] [redacted]\n");

    let log = new_log(256, &["ÄÖÄÖ"]);
    log.append("x ÄÖÄÖÄÖ y\n".as_bytes());
    assert_eq!(log.text(), "x [redacted] y\n");

    // Among bytes that are not UTF-8, right against them too.
    let log = new_log(256, &["ABAB", "ÄÖÄÖ"]);
    log.append(b"\xff ABABAB \xfe\xe2ABAB\xc3\x84\xc3\x96\xc3\x84\xc3\x96\x96\n");
    assert_eq!(
        log.text(),
        "\u{fffd} [redacted] \u{fffd}\u{fffd}[redacted]\u{fffd}\n"
    );
}

#[test]
fn what_is_kept_starts_at_a_line_once_bytes_were_dropped() {
    // (capacity, what was written, what is shown)
    let cases = [
        // Nothing dropped: everything, from the first byte.
        (64, "abc\ndef", "abc\ndef"),
        // The first kept line is partial: it is left out.
        (8, "abcdef\nghij\n", "ghij\n"),
        // The ring was cut at a line end: nothing more is left out.
        (8, "abc\nefghijk\n", "efghijk\n"),
        // No whole line is kept: the partial one is shown rather than nothing.
        (8, "abcdefghijkl", "efghijkl"),
        (8, "abcdefghijk\n", "efghijk\n"),
    ];
    for (capacity, written, shown) in cases {
        let log = new_log(capacity, &[]);
        log.append(written.as_bytes());
        assert_eq!(log.text(), shown, "{written:?} in a ring of {capacity}");
    }
}

/// A dropped client kills its group only while it is tracked: once the group was seen to end,
/// its id may be another's.
#[test]
fn only_a_tracked_group_is_killed_on_drop() {
    use std::os::unix::process::CommandExt as _;
    let mut other = std::process::Command::new("sleep")
        .arg("30")
        .process_group(0)
        .spawn()
        .unwrap();
    let pgid = i32::try_from(other.id()).unwrap();
    kill_group_now(pgid);
    std::thread::sleep(std::time::Duration::from_millis(100));
    assert!(
        other.try_wait().unwrap().is_none(),
        "an untracked group was killed"
    );

    groups().insert(pgid);
    kill_group_now(pgid);
    let status = other.wait().unwrap();
    groups().remove(&pgid);
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&status),
        Some(9)
    );
}

/// Tells whether a type implements `Debug`, at run time: the inherent method exists only where
/// `T: Debug`; elsewhere the trait's default answers.
struct Probe<T>(std::marker::PhantomData<T>);

trait NoDebug {
    fn has_debug(&self) -> bool {
        false
    }
}

impl<T> NoDebug for Probe<T> {}

impl<T: std::fmt::Debug> Probe<T> {
    fn has_debug(&self) -> bool {
        true
    }
}

#[test]
fn a_config_prints_variable_names_only_and_the_stderr_log_does_not_print() {
    let mut config = super::StdioConfig::new("srv", "node", ["server.js"]);
    config.env = vec![("API_KEY".to_owned(), "VALUE0123456789".to_owned())];
    let shown = format!("{config:?}");
    assert!(shown.contains("API_KEY=[redacted]"), "{shown}");
    assert!(!shown.contains("VALUE0123456789"), "{shown}");

    assert!(Probe::<super::StdioConfig>(std::marker::PhantomData).has_debug());
    assert!(
        !Probe::<StderrLog>(std::marker::PhantomData).has_debug(),
        "the stderr log holds the secrets and the raw bytes: it has no Debug"
    );
}
