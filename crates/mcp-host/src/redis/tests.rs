//! The RESP2 reader against good, bad, huge and truncated replies, the URL's forms, and the
//! client against a fake server on loopback that misbehaves (no Redis needed: these run
//! everywhere; the tests against a real redis-server are `mcp-cli`'s `--test redis`).

use std::io::{BufRead as _, BufReader};
use std::net::TcpListener;

use super::resp::{Limits, ProtocolError, Reply, encode, parse};
use super::*;

fn parsed(bytes: &[u8]) -> Result<Option<(Reply, usize)>, ProtocolError> {
    parse(bytes, &Limits::default())
}

#[test]
fn well_formed_replies_parse_and_say_how_much_they_used() {
    let cases: &[(&[u8], Reply)] = &[
        (b"+OK\r\n", Reply::Simple("OK".into())),
        (b"-ERR no\r\n", Reply::Error("ERR no".into())),
        (b":-42\r\n", Reply::Integer(-42)),
        (b"$3\r\na\r\n\r\n", Reply::Bulk(Some(b"a\r\n".to_vec()))),
        (b"$0\r\n\r\n", Reply::Bulk(Some(Vec::new()))),
        (b"$-1\r\n", Reply::Bulk(None)),
        (b"*-1\r\n", Reply::Array(None)),
        (
            b"*2\r\n:1\r\n*1\r\n$1\r\nx\r\n",
            Reply::Array(Some(vec![
                Reply::Integer(1),
                Reply::Array(Some(vec![Reply::Bulk(Some(b"x".to_vec()))])),
            ])),
        ),
    ];
    for (bytes, want) in cases {
        let mut with_more = bytes.to_vec();
        with_more.extend_from_slice(b"+next\r\n");
        let (reply, used) = parsed(&with_more).unwrap().unwrap();
        assert_eq!(&reply, want, "{}", String::from_utf8_lossy(bytes));
        assert_eq!(used, bytes.len());
    }
}

#[test]
fn every_truncation_asks_for_more_and_never_errs() {
    let whole = b"*3\r\n$5\r\nhello\r\n:7\r\n*2\r\n+a\r\n$-1\r\n";
    assert!(parsed(whole).unwrap().is_some());
    for cut in 0..whole.len() {
        assert_eq!(parsed(&whole[..cut]), Ok(None), "cut at {cut}");
    }
}

#[test]
fn broken_replies_are_errors_naming_what_is_wrong() {
    let cases: &[(&[u8], ProtocolError)] = &[
        (b"?what\r\n", ProtocolError::UnknownType(b'?')),
        (b":12a\r\n", ProtocolError::BadNumber),
        (b":\r\n", ProtocolError::BadNumber),
        (b"$-2\r\n", ProtocolError::BadNumber),
        (b"*-5\r\n", ProtocolError::BadNumber),
        (b"$3\r\nabcX\r\n", ProtocolError::BadTerminator),
        (b"+OK\nmore", ProtocolError::BadTerminator),
        (b"+O\rK\r\n", ProtocolError::BadTerminator),
        (b"+\xff\r\n", ProtocolError::NotUtf8),
    ];
    for (bytes, want) in cases {
        assert_eq!(
            parsed(bytes).as_ref().map(|_| ()),
            Err(want),
            "{}",
            String::from_utf8_lossy(bytes)
        );
    }
}

#[test]
fn huge_lengths_and_deep_nesting_are_refused_before_any_allocation() {
    let limits = Limits::default();
    // A bulk string of 2^62 bytes, an array of 2^40 elements: refused from the length line.
    let e = parsed(b"$4611686018427387904\r\n").unwrap_err();
    assert!(
        matches!(
            e,
            ProtocolError::TooLarge {
                what: "a bulk string",
                ..
            }
        ),
        "{e}"
    );
    let e = parsed(b"*1099511627776\r\n").unwrap_err();
    assert!(
        matches!(
            e,
            ProtocolError::TooLarge {
                what: "an array",
                ..
            }
        ),
        "{e}"
    );
    // Just over the limits, and just at them.
    let over = format!("${}\r\n", limits.max_bulk + 1);
    assert!(parsed(over.as_bytes()).is_err());
    let at = format!("${}\r\n", limits.max_bulk);
    assert_eq!(parsed(at.as_bytes()), Ok(None), "waits for the bytes");
    // An array that claims many elements but sent few waits, and holds only what came.
    assert_eq!(parsed(b"*65536\r\n:1\r\n"), Ok(None));
    // Nesting: depth 8 parses, 9 does not.
    let nested = |depth: usize| {
        let mut b = b"*1\r\n".repeat(depth);
        b.extend_from_slice(b":1\r\n");
        b
    };
    assert!(parsed(&nested(8)).unwrap().is_some());
    assert_eq!(parsed(&nested(9)), Err(ProtocolError::TooDeep(8)));
    // A line that never ends is refused once it passes the limit.
    let mut long = b"+".to_vec();
    long.extend(std::iter::repeat_n(b'a', limits.max_line + 1));
    assert!(matches!(
        parsed(&long),
        Err(ProtocolError::TooLarge { what: "a line", .. })
    ));
}

#[test]
fn commands_are_arrays_of_bulk_strings() {
    let mut out = Vec::new();
    encode(&[b"SET", b"k", b"a b\r\n"], &mut out);
    assert_eq!(out, b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\na b\r\n\r\n");
}

#[test]
fn urls_give_host_port_db_and_login_and_never_show_the_password() {
    let t = parse_url("redis://app:p%40ss@cache.internal:6380/3").unwrap();
    assert_eq!(
        (
            t.host.as_str(),
            t.port,
            t.db,
            t.user.as_deref(),
            t.password.as_deref()
        ),
        ("cache.internal", 6380, 3, Some("app"), Some("p@ss"))
    );
    let t = parse_url("redis://:only-password@127.0.0.1").unwrap();
    assert_eq!(
        (t.port, t.db, t.user, t.password.as_deref()),
        (6379, 0, None, Some("only-password"))
    );
    let t = parse_url("redis://[::1]:7000/1").unwrap();
    assert_eq!(t.to_string(), "[::1]:7000/1");

    let redis = Redis::new("redis://app:s3cret-pass@cache.internal:6380/3").unwrap();
    assert_eq!(redis.to_string(), "redis://cache.internal:6380/3");
    assert_eq!(format!("{redis:?}"), "Redis(redis://cache.internal:6380/3)");

    for (url, says) in [
        ("rediss://:s3cret-pass@h:6379/0", "not supported"),
        ("http://:s3cret-pass@h/0", "redis://"),
        ("redis://:s3cret-pass@h/zero", "database number"),
        ("redis://:s3cret-pass@h/0?timeout=1", "query"),
        ("redis://user-no-pass@h/0", "without a password"),
        ("redis://:s3cret-pass@/0", "host"),
    ] {
        let e = Redis::new(url).unwrap_err().to_string();
        assert!(e.contains(says), "{url}: {e}");
        assert!(!e.contains("s3cret-pass"), "{url}: {e}");
    }
}

/// A fake server: answers each command it reads with the next of `answers` (raw bytes),
/// recording the commands; closes after the last.
fn fake(answers: Vec<Vec<u8>>) -> (String, std::thread::JoinHandle<Vec<String>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let handle = std::thread::spawn(move || {
        let (stream, _) = listener.accept().unwrap();
        let mut reader = BufReader::new(stream.try_clone().unwrap());
        let mut writer = stream;
        let mut seen = Vec::new();
        for answer in answers {
            // One command: `*n` then n pairs of lines.
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap() == 0 {
                break;
            }
            let n: usize = line.trim()[1..].parse().unwrap();
            let mut words = Vec::new();
            for _ in 0..n {
                let (mut len, mut word) = (String::new(), String::new());
                reader.read_line(&mut len).unwrap();
                reader.read_line(&mut word).unwrap();
                words.push(word.trim_end().to_owned());
            }
            seen.push(words.join(" "));
            writer.write_all(&answer).unwrap();
        }
        seen
    });
    (format!("127.0.0.1:{port}"), handle)
}

#[test]
fn login_and_database_come_first_on_each_connection() {
    let (at, server) = fake(vec![
        b"+OK\r\n".to_vec(),
        b"+OK\r\n".to_vec(),
        b"$2\r\nhi\r\n".to_vec(),
    ]);
    let redis = Redis::new(&format!("redis://app:pw@{at}/2")).unwrap();
    assert_eq!(redis.get("k").unwrap(), Some(b"hi".to_vec()));
    drop(redis);
    assert_eq!(server.join().unwrap(), ["AUTH app pw", "SELECT 2", "GET k"]);
}

#[test]
fn a_hostile_or_broken_server_gets_an_error_naming_redis_and_the_phase() {
    let cases: Vec<(Vec<Vec<u8>>, &str, &str)> = vec![
        // A huge bulk string announced: refused, nothing allocated for it.
        (vec![b"$999999999999\r\n".to_vec()], "GET", "over the limit"),
        // Garbage.
        (
            vec![b"HTTP/1.1 400 Bad Request\r\n".to_vec()],
            "GET",
            "no RESP2 type",
        ),
        // A reply cut short by the server closing.
        (vec![b"$10\r\nabc".to_vec()], "GET", "closed the connection"),
        // The wrong kind of reply.
        (
            vec![b":1\r\n".to_vec()],
            "GET",
            "unexpected reply (an integer)",
        ),
        // A refused login.
        (
            vec![b"-WRONGPASS invalid username-password pair\r\n".to_vec()],
            "AUTH",
            "WRONGPASS",
        ),
    ];
    for (answers, phase, says) in cases {
        let login = phase == "AUTH";
        let (at, server) = fake(answers);
        let url = if login {
            format!("redis://:pw-secret@{at}/0")
        } else {
            format!("redis://{at}/0")
        };
        let e = Redis::new(&url).unwrap().get("k").unwrap_err().to_string();
        assert!(e.starts_with(&format!("Redis at {at}/0: {phase}: ")), "{e}");
        assert!(e.contains(says), "{e}");
        assert!(!e.contains("pw-secret"), "{e}");
        let _ = server.join();
    }
}

#[test]
fn nothing_listening_is_an_unreachable_error_at_connect() {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let e = Redis::new(&format!("redis://127.0.0.1:{port}/0"))
        .unwrap()
        .ping()
        .unwrap_err();
    assert!(e.is_unreachable());
    assert!(
        e.to_string()
            .starts_with(&format!("Redis at 127.0.0.1:{port}/0: connect: ")),
        "{e}"
    );
}

#[test]
fn lock_tokens_differ() {
    let a = unique_token();
    let b = unique_token();
    assert_ne!(a, b);
    assert_eq!(a.len(), 32);
}
