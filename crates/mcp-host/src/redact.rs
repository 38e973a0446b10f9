//! What the host must never show about a server: the secrets its configuration gave it (its
//! environment values, and the host's own values it inherited; its header values and the
//! keys in its URL), and the tokens and client secrets of its authorization. A server may
//! quote any of them back (in an error message, an HTTP error body, its stderr); the host
//! keeps one [`Redactor`] per server and runs every text it forms or keeps about that server
//! through it: its `last_error` and diagnostics, the errors of calls to it, and what is
//! logged of it. Tool results are not redacted: see [`ToolOutput`](crate::ToolOutput).

#[cfg(feature = "oauth")]
use std::sync::Arc;

#[cfg(feature = "http")]
use mcp_http::HttpConfig;
use mcp_protocol::Secrets;

#[cfg(any(feature = "stdio", feature = "http"))]
use crate::entry::Connect;
use crate::entry::ServerEntry;
use crate::error::CallError;
#[cfg(feature = "oauth")]
use crate::oauth::OAuthHook;

/// The secrets of one server, fixed when its entry is started, and its authorization's
/// current ones, asked for at each use (a refresh brings a new token).
pub(crate) struct Redactor {
    fixed: Secrets,
    #[cfg(feature = "oauth")]
    oauth: Option<Arc<OAuthHook>>,
}

impl Redactor {
    /// The secrets of the server of `entry`: those of its connection (none for an entry that
    /// cannot be used) and of its OAuth hook.
    pub(crate) fn new(entry: &ServerEntry) -> Self {
        let fixed = match entry.connect.as_ref().ok() {
            #[cfg(feature = "stdio")]
            Some(Connect::Stdio(config)) => {
                // The same values and floors as the stderr the transport quotes, from the
                // environment the server starts with.
                let started =
                    mcp_stdio::env::build(std::env::vars(), &config.env, config.inherit_env);
                mcp_stdio::env::secrets(&config.env, &started)
            }
            #[cfg(feature = "http")]
            Some(Connect::Http(config)) => http_secrets(config),
            #[cfg(not(any(feature = "stdio", feature = "http")))]
            Some(never) => match *never {},
            None => Secrets::default(),
        };
        Self {
            fixed,
            #[cfg(feature = "oauth")]
            oauth: entry.oauth.clone(),
        }
    }

    /// Everything to hide now.
    pub(crate) fn secrets(&self) -> Secrets {
        #[cfg(feature = "oauth")]
        if let Some(oauth) = &self.oauth {
            return self.fixed.with(&oauth.secrets());
        }
        self.fixed.clone()
    }

    /// `text` with every secret shown as `[redacted]`.
    pub(crate) fn text(&self, text: &str) -> String {
        self.secrets().redact(text)
    }

    /// `error` with every secret in its texts (and in the `data` of a JSON-RPC error) shown
    /// as `[redacted]`.
    pub(crate) fn error(&self, error: CallError) -> CallError {
        error.redacted(&self.secrets())
    }
}

/// An HTTP server's secrets: its header values (and the credential after an `Authorization`
/// scheme, which a server may quote alone), and its URL's password and query values.
#[cfg(feature = "http")]
fn http_secrets(config: &HttpConfig) -> Secrets {
    let mut values = Vec::new();
    for (_, value) in &config.headers {
        values.push(value.clone());
        if let Some((_, credential)) = value.split_once(' ') {
            values.push(credential.trim().to_owned());
        }
    }
    if let Ok(url) = url::Url::parse(&config.url) {
        values.extend(url.password().map(str::to_owned));
        values.extend(url.query_pairs().map(|(_, v)| v.into_owned()));
        values.extend(path_secrets(&url));
    }
    Secrets::new(
        values
            .into_iter()
            .filter(|v| v.len() >= Secrets::CONFIGURED_MIN),
    )
}

/// The shortest path segment taken for a key by its looks alone: shorter ones (`v1`,
/// `2025-06-18`, `mcp`) are names, not secrets.
const KEY_SEGMENT_MIN: usize = 16;

/// Whether a URL path segment is (or may be) a credential, so that it is never shown: one
/// that follows a segment named like a credential (`/key/…`, `/token/…`, `/api_key/…`), or
/// one of at least 16 characters with anything but letters, `-`, `_`, `.` and `~` in it (a
/// digit, a `%`, a `+`: a token, a UUID, a hex or base64 key). Readable names of any length
/// (`server-everything`, `github`) pass.
/// Services do put keys in paths (`https://mcp.example/<key>/mcp`), where `?key=` would be
/// hidden anyway.
pub(crate) fn is_secret_segment(previous: Option<&str>, segment: &str) -> bool {
    if segment.is_empty() {
        return false;
    }
    if previous.is_some_and(crate::config::is_secret_name) {
        return true;
    }
    let name_chars = segment
        .bytes()
        .all(|b| b.is_ascii_alphabetic() || matches!(b, b'-' | b'_' | b'.' | b'~'));
    segment.len() >= KEY_SEGMENT_MIN && !name_chars
}

/// The path of `url` as a person may see it: each segment that is or may be a key (one that
/// follows a segment named like a credential, `/key/…`, or that looks generated: a token, a
/// UUID) shown as `[redacted]`. [`shown_url`](crate::config::shown_url) shows paths this way.
pub fn shown_path(url: &url::Url) -> String {
    let Some(segments) = url.path_segments() else {
        return url.path().to_owned();
    };
    let mut out = String::new();
    let mut previous = None;
    for segment in segments {
        out.push('/');
        if is_secret_segment(previous, segment) {
            out.push_str("[redacted]");
        } else {
            out.push_str(segment);
        }
        previous = Some(segment);
    }
    out
}

/// The segments of `url`'s path that [`shown_path`] hides, percent-encoded as written and
/// decoded (a server may quote either), for the server's redactor.
#[cfg(feature = "http")]
fn path_secrets(url: &url::Url) -> Vec<String> {
    let mut out = Vec::new();
    let mut previous = None;
    for segment in url.path_segments().into_iter().flatten() {
        if is_secret_segment(previous, segment) {
            out.push(segment.to_owned());
            let decoded = url::form_urlencoded::parse(format!("x={segment}").as_bytes())
                .next()
                .map(|(_, v)| v.into_owned());
            out.extend(decoded.filter(|d| d != segment));
        }
        previous = Some(segment);
    }
    out
}

#[cfg(all(test, feature = "http"))]
mod tests {
    use super::{Connect, Redactor};
    use crate::entry::ServerEntry;
    use crate::error::CallError;

    #[test]
    fn an_http_servers_headers_and_url_keys_are_hidden_in_every_error_field() {
        let mut config =
            mcp_http::HttpConfig::new("s", "https://h.example/mcp?key=url-key-123&v=1");
        config.headers = vec![
            ("Authorization".to_owned(), "Bearer tok-abcdef".to_owned()),
            ("X-Short".to_owned(), "abc".to_owned()),
        ];
        let r = Redactor::new(&ServerEntry::new("s", Connect::Http(config)));
        let shown = r.text("Bearer tok-abcdef; alone tok-abcdef; url-key-123; abc; v=1");
        assert_eq!(shown, "[redacted]; alone [redacted]; [redacted]; abc; v=1");
        let error = r.error(CallError::Rpc {
            server: "s".into(),
            what: "t".into(),
            code: -1,
            message: "refused tok-abcdef".into(),
            data: Some(serde_json::json!({"sent": ["url-key-123"]})),
        });
        let CallError::Rpc { message, data, .. } = error else {
            panic!()
        };
        assert_eq!(message, "refused [redacted]");
        assert_eq!(data, Some(serde_json::json!({"sent": ["[redacted]"]})));
    }

    #[test]
    fn a_key_in_the_url_path_is_never_shown() {
        use crate::config::shown_url;
        let shown = |u: &str| shown_url(&url::Url::parse(u).unwrap());
        // Names stay; keys, tokens and UUIDs go, and so does whatever follows a key's name.
        for (url, expected) in [
            (
                "https://mcp.example.com/v1/mcp",
                "https://mcp.example.com/v1/mcp",
            ),
            (
                "https://h.example/servers/server-everything/sse",
                "https://h.example/servers/server-everything/sse",
            ),
            (
                "https://h.example/api/2025-06-18/mcp",
                "https://h.example/api/2025-06-18/mcp",
            ),
            (
                "https://mcp.example.com/s/ZjA3YTk5NDgtN2E3My00ZWQ5/mcp",
                "https://mcp.example.com/s/[redacted]/mcp",
            ),
            (
                "https://mcp.example.net/1b4e28ba-2fa1-11d2-883f-0016d3cca427/github",
                "https://mcp.example.net/[redacted]/github",
            ),
            (
                "https://h.example/mcp/sk-live-9f8e7d6c5b4a",
                "https://h.example/mcp/[redacted]",
            ),
            (
                "https://h.example/key/abc/mcp",
                "https://h.example/key/[redacted]/mcp",
            ),
            (
                "https://h.example/mcp?key=abc",
                "https://h.example/mcp?[redacted]",
            ),
        ] {
            assert_eq!(shown(url), expected, "{url}");
        }
        // A server quoting its URL in an error: the path key is hidden there too.
        let config =
            mcp_http::HttpConfig::new("s", "https://h.example/mcp/sk-live-9f8e7d6c5b4a/sse");
        let r = Redactor::new(&ServerEntry::new("s", Connect::Http(config)));
        assert_eq!(
            r.text("404 at https://h.example/mcp/sk-live-9f8e7d6c5b4a/sse"),
            "404 at https://h.example/mcp/[redacted]/sse"
        );
    }
}
