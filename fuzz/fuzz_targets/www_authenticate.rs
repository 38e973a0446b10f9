//! The `WWW-Authenticate` parser of `mcp-oauth`, through `BearerChallenge::find`, which is how
//! the host reads a 401 or 403.
//!
//! The first byte picks the mode:
//! - even: the rest, as text, is a set of header values (one a line) from a hostile server;
//!   reading them must not panic, and what is found must be text of the headers;
//! - odd: the rest is split at NUL into parameter values, which are written as a well-formed
//!   header (other challenges around a `Bearer` one, quoted strings with `\` escapes, or bare
//!   tokens where the value is one); reading it back must give exactly those values.

#![no_main]

use libfuzzer_sys::fuzz_target;
use mcp_oauth::BearerChallenge;

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    if mode % 2 == 0 {
        hostile(rest);
    } else {
        round_trip(mode, rest);
    }
});

fn hostile(rest: &[u8]) {
    let text = String::from_utf8_lossy(rest);
    let headers: Vec<&str> = text.split('\n').collect();
    let Some(found) = BearerChallenge::find(headers.iter().copied()) else {
        return;
    };
    // A quoted value loses its quotes and escapes, so only a bare value is a substring.
    for value in [
        &found.resource_metadata,
        &found.scope,
        &found.error,
        &found.error_description,
    ]
    .into_iter()
    .flatten()
    {
        let unescaped = text.replace('\\', "");
        assert!(
            value
                .chars()
                .filter(|&c| c != '\\')
                .all(|c| unescaped.contains(c)),
            "{value:?} is not from the header"
        );
    }
}

fn round_trip(mode: u8, rest: &[u8]) {
    let text = String::from_utf8_lossy(rest);
    let mut fields = text.split('\0');
    let mut next = || fields.next().map(str::to_owned);
    let expected = (next(), next(), next(), next());
    let (rm, scope, error, description) = &expected;
    let mut params = Vec::new();
    for (name, value) in [
        ("resource_metadata", rm),
        ("scope", scope),
        ("error", error),
        ("error_description", description),
    ] {
        if let Some(value) = value {
            params.push(format!("{name}={}", quote(value, mode & 2 != 0)));
        }
    }
    let bearer = if params.is_empty() {
        "Bearer".to_owned()
    } else {
        format!(
            "Bearer {}",
            params.join(if mode & 4 != 0 { " , " } else { ", " })
        )
    };
    let before = r#"Basic realm="a, b=\"c\"", charset=UTF-8"#;
    let after = "Negotiate YII1CAYGKw==, DPoP algs=\"ES256\"";
    let headers: Vec<String> = match mode >> 3 & 3 {
        0 => vec![bearer],
        1 => vec![format!("{before}, {bearer}")],
        2 => vec![format!("{bearer}, {after}")],
        _ => vec![before.to_owned(), bearer, after.to_owned()],
    };
    let found = BearerChallenge::find(headers.iter().map(String::as_str))
        .unwrap_or_else(|| panic!("no Bearer challenge in {headers:?}"));
    let got = (
        found.resource_metadata,
        found.scope,
        found.error,
        found.error_description,
    );
    assert_eq!(got, expected, "read from {headers:?}");
}

/// A parameter value as a quoted string, or bare when it is a token and `bare` is asked for.
fn quote(value: &str, bare: bool) -> String {
    let token = !value.is_empty()
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c));
    if bare && token {
        return value.to_owned();
    }
    let mut out = String::with_capacity(value.len() + 2);
    out.push('"');
    for c in value.chars() {
        if c == '"' || c == '\\' {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
    out
}
