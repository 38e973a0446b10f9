//! Locks shared by the gateway's tasks.

use std::sync::{Mutex, MutexGuard, PoisonError};

/// Locks `m`; a panic elsewhere while it was held leaves data that is still usable here.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}
