//! How long an upstream's tool list is trusted before category and meta modes list it
//! again (seed 004 §5.2).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use mcp_host::{CallError, Host};

use crate::sync::lock;

/// How long an upstream's schemas are cached by default (seed 004 §5.2).
pub const DEFAULT_CACHE_TTL: Duration = Duration::from_secs(600);

/// When each upstream's tools were last listed. The host keeps the lists; this only says
/// when one is old enough to ask for again.
#[derive(Debug)]
pub(crate) struct ListCache {
    ttl: Duration,
    listed: Mutex<HashMap<String, Instant>>,
}

impl ListCache {
    /// A cache whose lists live for `ttl`.
    pub(crate) fn new(ttl: Duration) -> Self {
        Self {
            ttl,
            listed: Mutex::new(HashMap::new()),
        }
    }

    /// Takes every server of `host` as listed now (the host listed them as they connected).
    pub(crate) fn mark_all(&self, host: &Host) {
        let now = Instant::now();
        let mut listed = lock(&self.listed);
        for status in host.status() {
            listed.insert(status.id, now);
        }
    }

    /// Takes `server`'s tools as listed now (its connection changed or it said its list
    /// changed, and the host listed them again).
    pub(crate) fn mark_listed(&self, server: &str) {
        lock(&self.listed).insert(server.to_owned(), Instant::now());
    }

    /// Lists `server`'s tools again if the cached list is older than the lifetime. A failed
    /// refresh keeps the old list and is returned for the caller to report.
    pub(crate) async fn refresh_if_stale(
        &self,
        host: &Host,
        server: &str,
    ) -> Result<(), CallError> {
        let stale = lock(&self.listed)
            .get(server)
            .is_none_or(|at| at.elapsed() >= self.ttl);
        if !stale {
            return Ok(());
        }
        host.refresh_tools(server).await?;
        self.mark_listed(server);
        Ok(())
    }
}
