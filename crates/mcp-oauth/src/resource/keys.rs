//! When to fetch the issuer's key set: a cache whose decisions take the time as an argument.
//! Keys are fetched when there are none, when they are old, and when a token names a key the
//! set lacks (the issuer rotated its keys). Each of the two reasons has a budget of one fetch
//! per [`min_refetch_ms`](KeyCache::min_refetch_ms), whether fetches succeed or fail: a flood
//! of tokens with made-up `kid`s costs the issuer one request per interval, not one per
//! token, and the fetch that brought the first keys does not delay the one a rotation needs.

use super::JwkSet;

/// The issuer's keys as last fetched, and when.
#[derive(Debug, Clone)]
pub struct KeyCache {
    keys: Option<JwkSet>,
    fetched_at_ms: u64,
    attempted_at_ms: Option<u64>,
    /// The last fetch made for a token whose key was missing.
    unknown_attempted_at_ms: Option<u64>,
    /// Keys older than this are fetched again (default 10 minutes).
    pub max_age_ms: u64,
    /// The shortest time between two fetches for the same reason (default 30 s).
    pub min_refetch_ms: u64,
}

impl Default for KeyCache {
    fn default() -> Self {
        Self::new()
    }
}

impl KeyCache {
    /// Empty, keys kept 10 minutes, fetches for one reason at least 30 s apart.
    pub fn new() -> Self {
        Self {
            keys: None,
            fetched_at_ms: 0,
            attempted_at_ms: None,
            unknown_attempted_at_ms: None,
            max_age_ms: 10 * 60 * 1000,
            min_refetch_ms: 30 * 1000,
        }
    }

    /// The keys, if any were fetched.
    pub fn keys(&self) -> Option<&JwkSet> {
        self.keys.as_ref()
    }

    /// Whether to fetch now: there are no keys or they are old, and no fetch was tried for
    /// the last [`min_refetch_ms`](Self::min_refetch_ms); or a token was signed with a key
    /// they lack (`unknown_key`, from
    /// [`Rejection::is_unknown_key`](super::Rejection::is_unknown_key)), and no fetch was
    /// tried for that reason in the interval.
    pub fn should_fetch(&self, now_ms: u64, unknown_key: bool) -> bool {
        let due =
            |at: Option<u64>| at.is_none_or(|at| now_ms.saturating_sub(at) >= self.min_refetch_ms);
        let missing_or_old =
            self.keys.is_none() || now_ms.saturating_sub(self.fetched_at_ms) >= self.max_age_ms;
        (missing_or_old && due(self.attempted_at_ms))
            || (unknown_key && due(self.unknown_attempted_at_ms))
    }

    /// A fetch starts now, for a token whose key was missing or not: the next one for the
    /// same reason waits for the interval, however this one ends.
    pub fn attempted(&mut self, now_ms: u64, unknown_key: bool) {
        self.attempted_at_ms = Some(now_ms);
        if unknown_key {
            self.unknown_attempted_at_ms = Some(now_ms);
        }
    }

    /// A fetch brought `keys`.
    pub fn fetched(&mut self, now_ms: u64, keys: JwkSet) {
        self.keys = Some(keys);
        self.fetched_at_ms = now_ms;
    }
}
