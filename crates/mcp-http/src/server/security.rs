//! What the server reads of `Host`, `Origin` and `Authorization`, apart from its I/O: pure
//! functions, strict about syntax, so that a value which only starts like an allowed one
//! (`[::1]evil.example`, `localhost@evil.example`) is refused.

/// The loopback names an `Origin` is always accepted with.
const LOOPBACK: [&str; 3] = ["localhost", "127.0.0.1", "[::1]"];

/// The host name of a `Host` value (RFC 9110 §7.2: `uri-host [ ":" port ]`), or `None` when
/// the value is not one: an IP literal must end at its `]`, and whatever follows the name
/// can only be a port of digits.
fn host_name(host: &str) -> Option<&str> {
    let (name, port) = if host.starts_with('[') {
        let end = host.find(']')?;
        let (name, rest) = host.split_at(end + 1);
        match rest {
            "" => (name, None),
            _ => (name, Some(rest.strip_prefix(':')?)),
        }
    } else {
        match host.split_once(':') {
            Some((name, port)) => (name, Some(port)),
            None => (host, None),
        }
    };
    let port_ok =
        port.is_none_or(|p| (1..=5).contains(&p.len()) && p.bytes().all(|b| b.is_ascii_digit()));
    // Brackets only around an IP literal, once.
    let name_ok = !name.is_empty()
        && name.bytes().skip(1).all(|b| b != b'[')
        && (name.starts_with('[') || !name.contains(']'));
    (port_ok && name_ok).then_some(name)
}

/// Whether a `Host` value names one of `allowed` (any port, names compared without case).
pub(super) fn host_allowed(host: &str, allowed: &[String]) -> bool {
    host_name(host).is_some_and(|name| allowed.iter().any(|a| a.eq_ignore_ascii_case(name)))
}

/// Whether an `Origin` value is one of `allowed` exactly, or an `http` or `https` origin on a
/// loopback name (RFC 6454 §6.1: `scheme "://" host [ ":" port ]`, nothing after).
pub(super) fn origin_allowed(origin: &str, allowed: &[String]) -> bool {
    if allowed.iter().any(|a| a == origin) {
        return true;
    }
    let Some(rest) = origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"))
    else {
        return false;
    };
    host_name(rest).is_some_and(|name| LOOPBACK.iter().any(|l| l.eq_ignore_ascii_case(name)))
}

/// Whether an `Authorization` value carries `token` as a bearer token: the scheme compared
/// without case (RFC 9110 §11.1), one or more spaces, then the token, compared in constant
/// time.
pub(super) fn bearer_matches(given: &[u8], token: &[u8]) -> bool {
    const SCHEME: &[u8] = b"bearer";
    let Some((scheme, rest)) = given.split_at_checked(SCHEME.len()) else {
        return false;
    };
    if !scheme.eq_ignore_ascii_case(SCHEME) || rest.first() != Some(&b' ') {
        return false;
    }
    let start = rest.iter().position(|&b| b != b' ').unwrap_or(rest.len());
    constant_time_eq(&rest[start..], token)
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn loopback() -> Vec<String> {
        LOOPBACK.iter().map(|&h| h.to_owned()).collect()
    }

    #[test]
    fn host_values_are_read_strictly() {
        let allowed = loopback();
        for ok in [
            "localhost",
            "LOCALHOST:8080",
            "127.0.0.1",
            "127.0.0.1:1",
            "[::1]",
            "[::1]:65535",
        ] {
            assert!(host_allowed(ok, &allowed), "{ok} should be accepted");
        }
        for bad in [
            "[::1]evil.example",
            "[::1]:80evil",
            "[::1]:",
            "[::1",
            "localhost:",
            "localhost:80:80",
            "localhost:http",
            "localhost:123456",
            "localhost.evil.example",
            "evil.example",
            "localhost@evil.example",
            "",
            ":80",
        ] {
            assert!(!host_allowed(bad, &allowed), "{bad:?} should be refused");
        }
    }

    #[test]
    fn origin_values_are_read_strictly() {
        let configured = vec!["https://app.example".to_owned()];
        for ok in [
            "http://localhost:3000",
            "https://127.0.0.1",
            "http://[::1]:8080",
            "https://app.example",
        ] {
            assert!(origin_allowed(ok, &configured), "{ok} should be accepted");
        }
        for bad in [
            "http://[::1]evil.example",
            "http://localhost.evil.example",
            "http://localhost@evil.example",
            "http://localhost/path",
            "http://localhost:80/path",
            "ftp://localhost",
            "null",
            "https://app.example.evil",
            "https://evil.example",
        ] {
            assert!(
                !origin_allowed(bad, &configured),
                "{bad:?} should be refused"
            );
        }
    }

    #[test]
    fn the_bearer_scheme_is_read_without_case() {
        for ok in ["Bearer s3cret", "bearer s3cret", "BEARER  s3cret"] {
            assert!(bearer_matches(ok.as_bytes(), b"s3cret"), "{ok}");
        }
        for bad in [
            "Bearer s3cre",
            "Bearer s3cret2",
            "Bearers3cret",
            "Basic s3cret",
            "s3cret",
            "Bearer",
            "Bearer ",
            "",
        ] {
            assert!(!bearer_matches(bad.as_bytes(), b"s3cret"), "{bad:?}");
        }
    }
}
