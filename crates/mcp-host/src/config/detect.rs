//! Seed 003's auto-detection: one string says which transport and where. `http://` and
//! `https://` are Streamable HTTP, `sse://` (and `http+sse://`, `https+sse://`) the legacy
//! HTTP+SSE transport, anything else a command line, split like a shell would split it
//! (quotes, backslashes) but never run through one.

use std::fmt;

use url::Url;

use super::model::ShownUrl;

/// What one string names: the transport and where to reach the server. `Debug` shows URLs
/// without user info and query, as everywhere in the configuration.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Detected {
    /// A Streamable HTTP endpoint (`http://` or `https://`).
    Http {
        /// The endpoint.
        url: Url,
    },
    /// A legacy HTTP+SSE endpoint. `sse://` and `http+sse://` mean plain `http://` (seed 003's
    /// example is `sse://localhost:3001/sse`, a local server); `https+sse://` means `https://`.
    LegacySse {
        /// The endpoint of the SSE stream, with its scheme mapped to `http` or `https`.
        url: Url,
    },
    /// A local program started with `args`.
    Stdio {
        /// The program.
        command: String,
        /// Its arguments.
        args: Vec<String>,
    },
}

impl fmt::Debug for Detected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Http { url } => f.debug_struct("Http").field("url", &ShownUrl(url)).finish(),
            Self::LegacySse { url } => f
                .debug_struct("LegacySse")
                .field("url", &ShownUrl(url))
                .finish(),
            Self::Stdio { command, args } => f
                .debug_struct("Stdio")
                .field("command", command)
                .field("args", args)
                .finish(),
        }
    }
}

/// Why a string names no server. Messages never quote the string: a command line or a URL may
/// carry a token.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DetectError {
    /// Nothing but whitespace.
    #[error("empty: give a URL or a command line")]
    Empty,
    /// It starts like a URL, but not with one of the schemes MCP uses.
    #[error(
        "unsupported URL scheme `{0}`: use http://, https://, sse://, http+sse:// or https+sse://"
    )]
    UnsupportedScheme(String),
    /// An `http(s)` URL that does not parse, or has no host.
    #[error("not a valid http(s) URL")]
    InvalidUrl,
    /// A quote that is opened and never closed.
    #[error("unterminated {0} quote in the command line")]
    UnterminatedQuote(&'static str),
    /// A backslash at the very end.
    #[error("the command line ends with a lone backslash")]
    TrailingBackslash,
}

/// Seed 003's rule over one string: `http(s)://` → HTTP, `sse://`/`http+sse://`/`https+sse://`
/// → legacy SSE, anything else → a command line split by [`split_command_line`]. A string
/// that starts with another `scheme://` is refused rather than run as a program.
pub fn detect(spec: &str) -> Result<Detected, DetectError> {
    let spec = spec.trim();
    if spec.is_empty() {
        return Err(DetectError::Empty);
    }
    if let Some(scheme) = url_scheme(spec) {
        let rest = &spec[scheme.len()..];
        return match scheme.to_ascii_lowercase().as_str() {
            "http" | "https" => Ok(Detected::Http {
                url: parse_http_url(spec).ok_or(DetectError::InvalidUrl)?,
            }),
            "sse" | "http+sse" => Ok(Detected::LegacySse {
                url: parse_http_url(&format!("http{rest}")).ok_or(DetectError::InvalidUrl)?,
            }),
            "https+sse" => Ok(Detected::LegacySse {
                url: parse_http_url(&format!("https{rest}")).ok_or(DetectError::InvalidUrl)?,
            }),
            _ => Err(DetectError::UnsupportedScheme(scheme.to_owned())),
        };
    }
    let mut words = split_command_line(spec)?;
    if words.is_empty() {
        return Err(DetectError::Empty);
    }
    let command = words.remove(0);
    Ok(Detected::Stdio {
        command,
        args: words,
    })
}

/// The scheme of a string that starts `scheme://`, with RFC 3986's scheme characters.
fn url_scheme(s: &str) -> Option<&str> {
    let end = s.find("://")?;
    let scheme = &s[..end];
    let mut chars = scheme.chars();
    let first = chars.next()?;
    (first.is_ascii_alphabetic()
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')))
    .then_some(scheme)
}

/// An `http` or `https` URL with a host, or nothing.
pub(crate) fn parse_http_url(s: &str) -> Option<Url> {
    let url = Url::parse(s).ok()?;
    (matches!(url.scheme(), "http" | "https") && url.host_str().is_some_and(|h| !h.is_empty()))
        .then_some(url)
}

/// Splits a command line into words as a POSIX shell would, without running one: words are
/// separated by whitespace; `'…'` keeps everything literally; `"…"` keeps everything except
/// that `\"`, `\\`, `` \` `` and `\$` stand for the second character; outside quotes a
/// backslash makes the next character literal. Nothing is expanded: `$VAR`, `~` and `*` stay
/// as written.
pub fn split_command_line(line: &str) -> Result<Vec<String>, DetectError> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => word.push(c),
                        None => return Err(DetectError::UnterminatedQuote("single")),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(c @ ('"' | '\\' | '`' | '$')) => word.push(c),
                            Some(c) => {
                                word.push('\\');
                                word.push(c);
                            }
                            None => return Err(DetectError::UnterminatedQuote("double")),
                        },
                        Some(c) => word.push(c),
                        None => return Err(DetectError::UnterminatedQuote("double")),
                    }
                }
            }
            '\\' => {
                in_word = true;
                match chars.next() {
                    Some(c) => word.push(c),
                    None => return Err(DetectError::TrailingBackslash),
                }
            }
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    Ok(words)
}
