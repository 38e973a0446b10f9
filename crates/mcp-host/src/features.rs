//! What this build of the crate can run. A configuration file is shared between builds (an
//! editor built with stdio only and the full `mcp-host` command read the same file), so every
//! entry is parsed whatever was left out; here an entry that needs a feature this build does
//! not have becomes a reason, naming the server and the feature, for the entry to be listed in
//! state `error` instead of started. Nothing panics and nothing is half-connected.

use crate::config::{ServerConfig, Transport};
use crate::host::Connect;

/// The feature of this crate that `server` needs and this build left out, with what in the
/// entry needs it: its transport, an `https` URL, or `oauth` settings.
pub(crate) fn missing(server: &ServerConfig) -> Option<(&'static str, &'static str)> {
    match &server.transport {
        Transport::Stdio(_) if !cfg!(feature = "stdio") => Some(("stdio", "the stdio transport")),
        Transport::Stdio(_) => None,
        Transport::Http(t) if !cfg!(feature = "http") => Some((
            "http",
            if t.legacy_sse {
                "the sse transport"
            } else {
                "the http transport"
            },
        )),
        Transport::Http(t) if t.url.scheme() == "https" && !cfg!(feature = "tls") => {
            Some(("tls", "an https URL"))
        }
        Transport::Http(_) if server.oauth.is_some() && !cfg!(feature = "oauth") => {
            Some(("oauth", "OAuth settings"))
        }
        Transport::Http(_) => None,
    }
}

/// How `server` connects in this build, or why it cannot: a feature left out (see
/// [`missing`]) or a transport without settings. The message is for a person and holds no
/// secret.
pub(crate) fn connect(server: &ServerConfig) -> Result<Connect, String> {
    if let Some((feature, what)) = missing(server) {
        return Err(format!(
            "configuration: server `{}` uses {what}, which this build of mcp-host left out \
             (it needs the `{feature}` feature)",
            server.id
        ));
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
