//! The clock of both halves: tokio's, so that tests can pause and advance it, converted to the
//! `std` instants the sans-IO session takes.

use std::time::Instant;

/// Now, by tokio's clock.
pub(crate) fn now() -> Instant {
    tokio::time::Instant::now().into_std()
}

/// Sleeps until the session's next deadline, or forever when it has none.
pub(crate) async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(at) => tokio::time::sleep_until(tokio::time::Instant::from_std(at)).await,
        None => std::future::pending().await,
    }
}
