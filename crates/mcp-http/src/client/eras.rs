//! The era each HTTP origin spoke (SPEC-2026 §2: cache per HTTP origin), as a value its
//! consumer owns: a host shares one among its servers, two hosts or two tests never share one.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use http::Uri;
use mcp_protocol::Era;

/// Which origins were found to speak the handshake era, so that later connections to them skip
/// the `server/discover` probe (a handshake-era server may take the probe's whole timeout to
/// refuse it). Only the handshake era is worth remembering: a stateless server is asked
/// `server/discover` anyway, and that answer is the probe.
///
/// Cloning shares the cache: every [`HttpConfig`](crate::HttpConfig) made with
/// [`HttpConfig::new`](crate::HttpConfig::new) has a fresh one of its own, and a consumer that
/// connects to many servers (a host) hands the same one to each of them. It lives as long as
/// its last clone, and nothing outside it reads or writes it. Keys are origins (scheme, host,
/// port), never the userinfo or query of a URL, which may hold a password or a key.
#[derive(Clone, Default)]
pub struct EraCache(Arc<Mutex<HashMap<String, Era>>>);

impl EraCache {
    /// An empty cache, shared by nobody yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// The era `origin` was last seen to speak, if it is worth remembering.
    pub(crate) fn known(&self, origin: &str) -> Option<Era> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(origin)
            .copied()
    }

    /// `origin` answered a negotiating client in `era`.
    pub(crate) fn learned(&self, origin: String, era: Era) {
        let mut map = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        match era {
            Era::Handshake => {
                map.insert(origin, era);
            }
            _ => {
                map.remove(&origin);
            }
        }
    }

    /// Whether two values are the same cache (clones of one another): a consumer that means
    /// its connections to share what they learn can check that they do.
    pub fn is_shared_with(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl std::fmt::Debug for EraCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let origins = self.0.lock().unwrap_or_else(PoisonError::into_inner).len();
        f.debug_struct("EraCache")
            .field("origins", &origins)
            .finish()
    }
}

/// The origin of a URL (scheme, host, port): the key of the era cache, and what a legacy
/// `endpoint` must share with the stream it came on. Not the authority, whose userinfo may
/// hold a password the cache would otherwise keep.
pub(crate) fn origin(url: &Uri) -> String {
    let port = url.port_u16().map(|p| format!(":{p}")).unwrap_or_default();
    format!(
        "{}://{}{port}",
        url.scheme_str().unwrap_or("http"),
        url.host().unwrap_or("")
    )
}

#[cfg(test)]
mod tests {
    use mcp_protocol::Era;

    use super::{EraCache, origin};

    #[test]
    fn an_origin_is_remembered_without_credentials_or_query_until_it_answers_stateless() {
        let url: http::Uri = "https://user:pw@era-test.example:8443/mcp?key=k"
            .parse()
            .unwrap();
        let key = origin(&url);
        assert_eq!(key, "https://era-test.example:8443");
        let eras = EraCache::new();
        assert_eq!(eras.known(&key), None);
        eras.learned(key.clone(), Era::Handshake);
        assert_eq!(eras.known(&key), Some(Era::Handshake));
        eras.learned(key.clone(), Era::Stateless);
        assert_eq!(
            eras.known(&key),
            None,
            "a stateless answer removes the entry"
        );
    }

    #[test]
    fn clones_share_and_fresh_caches_do_not() {
        let key = "http://127.0.0.1:1".to_owned();
        let mine = EraCache::new();
        let shared = mine.clone();
        let other = EraCache::new();
        mine.learned(key.clone(), Era::Handshake);
        assert_eq!(shared.known(&key), Some(Era::Handshake), "a clone sees it");
        assert!(shared.is_shared_with(&mine));
        assert_eq!(other.known(&key), None, "another cache does not");
        assert!(!other.is_shared_with(&mine));
        assert_eq!(format!("{mine:?}"), "EraCache { origins: 1 }");
    }
}
