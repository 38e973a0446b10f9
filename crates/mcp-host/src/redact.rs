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
    }
    Secrets::new(
        values
            .into_iter()
            .filter(|v| v.len() >= Secrets::CONFIGURED_MIN),
    )
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
}
