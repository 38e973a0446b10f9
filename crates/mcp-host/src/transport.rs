//! Opening a connection with whichever transports this build has (the `stdio` and `http`
//! features): each arm of [`open`] is there only with its transport, so a build without HTTP
//! compiles no HTTP client, TLS or OAuth. An entry that needs a transport this build left out
//! never gets here: `features` turned it into an unusable entry when it was made.

// With neither transport there is nothing to open, and nothing here is used.
#![cfg_attr(
    not(any(feature = "stdio", feature = "http")),
    allow(unused_imports, unused_variables)
)]

#[cfg(feature = "http")]
use std::future::Future;
#[cfg(feature = "http")]
use std::pin::Pin;
#[cfg(feature = "http")]
use std::sync::Arc;
#[cfg(feature = "http")]
use std::sync::atomic::{AtomicBool, Ordering};

#[cfg(feature = "http")]
use mcp_http::{AuthHook, Challenge};
use mcp_protocol::ClientConfig;
use mcp_session::Client;

use crate::entry::{Connect, ServerEntry};
use crate::status::Phase;

/// Why one connection attempt failed.
pub(crate) struct Failure {
    pub(crate) phase: Phase,
    pub(crate) message: String,
    pub(crate) auth_required: bool,
}

/// What a host's connections share, whichever server they are to: for HTTP, the cache of the
/// era each origin spoke (so that a reconnection, or a second server on the same origin, skips
/// the `server/discover` probe). One per host: two hosts never share it.
#[derive(Debug, Default)]
pub(crate) struct Shared {
    #[cfg(feature = "http")]
    eras: mcp_http::EraCache,
}

/// Starts the transport of `entry` (`connect`, its configuration) and its session: the
/// process or the connection, and the handshake.
pub(crate) async fn open(
    entry: &ServerEntry,
    connect: Connect,
    session: ClientConfig,
    #[cfg_attr(not(feature = "http"), allow(unused_variables))] shared: &Shared,
) -> Result<Client, Failure> {
    // With neither transport, `Connect` has no variants and this match no arms.
    match connect {
        #[cfg(feature = "stdio")]
        Connect::Stdio(mut config) => {
            config.name = entry.id.clone();
            mcp_stdio::spawn(config, session)
                .await
                .map_err(|e| Failure {
                    phase: Phase::Connect,
                    message: format!("connect: {e}"),
                    auth_required: false,
                })
        }
        #[cfg(feature = "http")]
        Connect::Http(mut config) => {
            config.name = entry.id.clone();
            config.eras = shared.eras.clone();
            #[cfg(feature = "oauth")]
            if let Some(oauth) = &entry.oauth {
                oauth.prepare().await;
                config.auth = Some(oauth.clone());
            }
            let watch = Arc::new(ChallengeWatch {
                inner: config.auth.take(),
                unauthorized: AtomicBool::new(false),
            });
            config.auth = Some(watch.clone());
            mcp_http::connect(config, session).await.map_err(|e| {
                #[cfg(feature = "oauth")]
                let auth = entry.oauth.as_ref().and_then(|h| h.last_error());
                #[cfg(not(feature = "oauth"))]
                let auth: Option<String> = None;
                let unauthorized = watch.unauthorized.load(Ordering::SeqCst);
                Failure {
                    phase: Phase::Connect,
                    auth_required: unauthorized,
                    // Refused for want of authorization: why the authorization failed is the
                    // reason, the refusal's transport details come after it.
                    message: match auth {
                        Some(auth) if unauthorized => format!("{auth}; connect: {e}"),
                        Some(auth) => format!("connect: {e}; {auth}"),
                        None => format!("connect: {e}"),
                    },
                }
            })
        }
    }
}

/// Records whether the server asked for authorization, around the OAuth hook if there is one,
/// so that a failed connection can be told apart as `auth_required`.
#[cfg(feature = "http")]
struct ChallengeWatch {
    inner: Option<Arc<dyn AuthHook>>,
    unauthorized: AtomicBool,
}

#[cfg(feature = "http")]
impl AuthHook for ChallengeWatch {
    fn authorization(&self) -> Option<http::HeaderValue> {
        self.inner.as_ref().and_then(|h| h.authorization())
    }

    fn headers_for(&self, method: &http::Method, uri: &http::Uri) -> http::HeaderMap {
        let inner = self.inner.as_ref();
        inner.map_or_else(http::HeaderMap::new, |h| h.headers_for(method, uri))
    }

    fn succeeded(&self) {
        if let Some(hook) = &self.inner {
            hook.succeeded();
        }
    }

    fn challenged(&self, challenge: Challenge) -> Pin<Box<dyn Future<Output = bool> + Send + '_>> {
        if challenge.status == http::StatusCode::UNAUTHORIZED {
            self.unauthorized.store(true, Ordering::SeqCst);
        }
        Box::pin(async move {
            match &self.inner {
                Some(hook) => hook.challenged(challenge).await,
                None => false,
            }
        })
    }
}
