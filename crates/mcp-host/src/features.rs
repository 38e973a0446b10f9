//! What this build of the crate can run. A configuration file is shared between builds (an
//! editor built with stdio only and the full `mcp-host` command read the same file), so every
//! entry is parsed whatever was left out; here an entry that needs a feature this build does
//! not have becomes a reason, naming the server and the feature, for the entry to be listed in
//! state `error` instead of started. Nothing panics and nothing is half-connected.

use crate::config::{ConfiguredServer, Transport};
use crate::entry::Connect;

/// The optional parts a build has: this one's is [`Built::THIS`]; tests try the others.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Built {
    stdio: bool,
    http: bool,
    tls: bool,
    oauth: bool,
}

impl Built {
    /// This build's features.
    pub(crate) const THIS: Self = Self {
        stdio: cfg!(feature = "stdio"),
        http: cfg!(feature = "http"),
        tls: cfg!(feature = "tls"),
        oauth: cfg!(feature = "oauth"),
    };
}

/// The feature of this crate that `server` needs and `built` lacks, with what in the entry
/// needs it: its transport, an `https` URL, or `oauth` settings.
pub(crate) fn missing(
    server: &ConfiguredServer,
    built: Built,
) -> Option<(&'static str, &'static str)> {
    match &server.transport {
        Transport::Stdio(_) if !built.stdio => Some(("stdio", "the stdio transport")),
        Transport::Stdio(_) => None,
        Transport::Http(t) if !built.http => Some((
            "http",
            if t.legacy_sse {
                "the sse transport"
            } else {
                "the http transport"
            },
        )),
        Transport::Http(t) if t.url.scheme() == "https" && !built.tls => {
            Some(("tls", "an https URL"))
        }
        Transport::Http(_) if server.oauth.is_some() && !built.oauth => {
            Some(("oauth", "OAuth settings"))
        }
        Transport::Http(_) => None,
    }
}

/// What a person reads about `server`, which needs `feature` for `what`.
fn left_out(server: &ConfiguredServer, (feature, what): (&str, &str)) -> String {
    format!(
        "configuration: server `{}` uses {what}, which this build of mcp-host left out \
         (it needs the `{feature}` feature)",
        server.id
    )
}

/// How `server` connects in this build, or why it cannot: a feature left out (see
/// [`missing`]) or a transport without settings. The message is for a person and holds no
/// secret.
pub(crate) fn connect(server: &ConfiguredServer) -> Result<Connect, String> {
    if let Some(need) = missing(server, Built::THIS) {
        return Err(left_out(server, need));
    }
    let connect = match &server.transport {
        #[cfg(feature = "stdio")]
        Transport::Stdio(_) => server.stdio_config().map(Connect::Stdio),
        #[cfg(feature = "http")]
        Transport::Http(_) => server.http_config().map(Connect::Http),
        // Only reachable for a transport `missing` has already refused.
        #[allow(unreachable_patterns)]
        _ => None,
    };
    connect.ok_or_else(|| {
        format!(
            "configuration: transport `{}` has no settings",
            server.transport.kind()
        )
    })
}

/// A server's OAuth hook in a build without OAuth: a type with no values, so that the host's
/// login, logout and status read the same in every build, and the compiler checks that
/// nothing here can run.
#[cfg(not(feature = "oauth"))]
#[derive(Debug)]
pub(crate) enum NoOAuth {}

#[cfg(not(feature = "oauth"))]
impl NoOAuth {
    pub(crate) async fn login(&self) -> Result<(), String> {
        match *self {}
    }

    pub(crate) async fn logout(&self) -> Result<(), String> {
        match *self {}
    }

    pub(crate) fn expires_at_ms(&self) -> Option<u64> {
        match *self {}
    }
}

#[cfg(test)]
mod tests {
    // Test code: an unwrap that fails is a failed test, with its location.
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::config::{ConfigFile, Env, FileFormat, Scope, load_files};

    fn built(features: &str) -> Built {
        let has = |f: &str| features.split(',').any(|g| g == f);
        Built {
            stdio: has("stdio"),
            http: has("http"),
            tls: has("tls"),
            oauth: has("oauth"),
        }
    }

    #[test]
    fn each_entry_needs_the_features_of_what_it_uses() {
        let dir = std::env::temp_dir().join(format!("mcp-host-built-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("config.json");
        let config = serde_json::json!({"version": 1, "mcp": {"servers": {
            "local": {"transport": "stdio", "command": "srv"},
            "plain": {"transport": "http", "url": "http://127.0.0.1:1/mcp"},
            "legacy": {"transport": "sse", "url": "http://127.0.0.1:1/sse"},
            "secure": {"transport": "http", "url": "https://a.example/mcp"},
            "authed": {"transport": "http", "url": "https://a.example/mcp",
                       "oauth": {"client_id": "c"}},
        }}});
        std::fs::write(&file, serde_json::to_vec(&config).unwrap()).unwrap();
        let loaded = load_files(
            &[ConfigFile::new(&file, Scope::Global, FileFormat::Native)],
            &Env::new(),
            &dir,
        );
        let _ = std::fs::remove_dir_all(&dir);
        let server = |id: &str| loaded.server(id).unwrap();
        // (build, server, the feature it lacks)
        let table: &[(&str, &str, Option<&str>)] = &[
            ("", "local", Some("stdio")),
            ("", "plain", Some("http")),
            ("", "legacy", Some("http")),
            ("", "secure", Some("http")),
            ("", "authed", Some("http")),
            ("stdio", "local", None),
            ("stdio", "plain", Some("http")),
            ("http", "local", Some("stdio")),
            ("http", "plain", None),
            ("http", "legacy", None),
            ("http", "secure", Some("tls")),
            ("http", "authed", Some("tls")),
            ("http,tls", "secure", None),
            ("http,tls", "authed", Some("oauth")),
            ("stdio,http,tls,oauth", "local", None),
            ("stdio,http,tls,oauth", "authed", None),
        ];
        for (features, id, lacks) in table {
            let got = missing(server(id), built(features)).map(|(f, _)| f);
            assert_eq!(got, *lacks, "[{features}] {id}");
        }
        let (feature, what) = missing(server("legacy"), built("stdio")).unwrap();
        let text = left_out(server("legacy"), (feature, what));
        assert_eq!(
            text,
            "configuration: server `legacy` uses the sse transport, which this build of \
             mcp-host left out (it needs the `http` feature)"
        );
    }
}
