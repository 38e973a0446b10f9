//! The refresh timer: while a host is connected to an OAuth-protected server, the access
//! token is refreshed ahead of its expiry, so that a host or gateway that stays up never
//! sends an expired token (and never waits for a 401 to learn it).
//!
//! When to refresh is the authorizer's ([`mcp_oauth::Authorizer::refresh_due_ms`]: the
//! refresh margin before expiry, never before half the token's lifetime), so each token is
//! refreshed once, however short it lives and however many calls it serves. The timer only
//! waits: [`Schedule`] turns the due time and the failures so far into a wait, and the task
//! in [`keep_fresh`] sleeps it, refreshes through the hook, and tells the schedule whether
//! the due time moved on. A refresh that leaves the token as due as before (the
//! authorization server is down, discovery is out of reach without a challenge) is a
//! failure: the next wait doubles, from one second up to five minutes, so a failing refresh
//! never spins. A token without an expiry, or without a refresh token, gets no timer until
//! new tokens come. The task belongs to one connection and ends with it (the host aborts it
//! when the connection ends, is stopped, or the host is dropped).

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::oauth::OAuthHook;

/// The shortest wait between two refreshes, even for a token that lives less than twice
/// as long: a server that issues one-second tokens is not refreshed in a loop.
const MIN_WAIT: Duration = Duration::from_secs(1);
/// The longest wait after failures.
const MAX_BACKOFF: Duration = Duration::from_secs(300);

/// When the next refresh is due, given the failures in a row so far.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Schedule {
    failures: u32,
}

impl Schedule {
    /// How long to wait at `now_ms` for a refresh due at `due_ms` (both Unix milliseconds):
    /// until it is due, at least [`MIN_WAIT`], and after failures at least the backoff.
    pub(crate) fn wait(&self, now_ms: u64, due_ms: u64) -> Duration {
        let until_due = Duration::from_millis(due_ms.saturating_sub(now_ms));
        until_due.max(self.backoff())
    }

    /// After a refresh at `now_ms`: `due_ms` is when the next one is due now (`None`: no
    /// timer is needed, the tokens are gone or do not expire). A due time still not in the
    /// future means the refresh did not renew the token, and counts as a failure.
    pub(crate) fn refreshed(&mut self, now_ms: u64, due_ms: Option<u64>) {
        if due_ms.is_none_or(|due| due > now_ms) {
            self.failures = 0;
        } else {
            self.failures = self.failures.saturating_add(1);
        }
    }

    /// The least wait: [`MIN_WAIT`], doubled for each failure in a row, up to [`MAX_BACKOFF`].
    fn backoff(&self) -> Duration {
        let doubled = MIN_WAIT.saturating_mul(1 << self.failures.min(16));
        doubled.min(MAX_BACKOFF)
    }
}

/// The wall clock in Unix milliseconds, the clock token expiry is stated in.
fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// Refreshes `hook`'s access token ahead of expiry for as long as it runs: the host runs it
/// beside each connection to an OAuth server and aborts it when the connection ends. New
/// tokens from elsewhere (a login, a refresh after a 401, another process) reset the wait.
pub(crate) async fn keep_fresh(hook: Arc<OAuthHook>) {
    let mut schedule = Schedule::default();
    loop {
        // Listening before the due time is read, so that a change in between is not missed.
        let renewed = hook.renewed();
        tokio::pin!(renewed);
        renewed.as_mut().enable();
        let Some(due) = hook.refresh_due_ms() else {
            renewed.await;
            schedule = Schedule::default();
            continue;
        };
        let wait = schedule.wait(now_ms(), due);
        tokio::select! {
            () = tokio::time::sleep(wait) => {}
            () = &mut renewed => continue,
        }
        hook.prepare().await;
        schedule.refreshed(now_ms(), hook.refresh_due_ms());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_until_due_and_backs_off_after_failures() {
        let mut s = Schedule::default();
        // (now, due) -> wait, with no failures: until due, at least a second.
        for (now, due, wait) in [
            (1_000, 61_000, 60_000),
            (1_000, 1_500, 1_000),
            (5_000, 1_000, 1_000),
        ] {
            assert_eq!(s.wait(now, due), Duration::from_millis(wait), "{now} {due}");
        }
        // A refresh that left the token due is a failure: 2, 4, 8 … up to 300 s.
        let mut waits = Vec::new();
        for _ in 0..12 {
            s.refreshed(10_000, Some(9_000));
            waits.push(s.wait(10_000, 9_000).as_secs());
        }
        assert_eq!(waits, [2, 4, 8, 16, 32, 64, 128, 256, 300, 300, 300, 300]);
        // One that moved the due time on resets it, as does one after which nothing is due.
        s.refreshed(10_000, Some(70_000));
        assert_eq!(s.wait(10_000, 10_000), Duration::from_secs(1));
        s.refreshed(10_000, Some(10_000));
        s.refreshed(10_000, None);
        assert_eq!(s, Schedule::default());
        // The due time still wins over a shorter backoff.
        s.refreshed(10_000, Some(10_000));
        assert_eq!(s.wait(0, 60_000), Duration::from_secs(60));
    }
}
