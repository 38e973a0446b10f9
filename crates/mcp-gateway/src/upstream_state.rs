//! What the gateway keeps about its upstream set beyond the host, held by `Shared` and used by
//! `upstreams` (a leaf, so that neither imports the other).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

/// What the gateway knows of its upstream set beyond the host: how long each may be waited
/// for, and the lock that keeps two reloads from interleaving.
#[derive(Debug, Default)]
pub(crate) struct Upstreams {
    pub(crate) timeouts: Mutex<HashMap<String, Duration>>,
    pub(crate) reloading: tokio::sync::Mutex<()>,
    /// Becomes `true` once every upstream of the file at start-up has settled once and the
    /// start-up summary is logged.
    pub(crate) started: tokio::sync::watch::Sender<bool>,
}
