//! The person's side of the device flow (RFC 8628) for a host whose machine no browser can
//! come back to: the user code and the address are shown (by the caller's function: a
//! terminal prints them as `gh auth login` does), and the polls are paced with the runtime's
//! timer. `mcp-oauth` decides when to poll and what each answer means.

use std::time::Duration;

use mcp_oauth::device::DeviceVerification;
use mcp_oauth::{BoxError, BoxFuture, DeviceUserAgent};

/// Shows a device login's code and address.
type Show = dyn Fn(&DeviceVerification) -> Result<(), BoxError> + Send + Sync;

/// A device agent that shows the code through a function and waits on tokio's timer.
pub struct DevicePrompt {
    show: Box<Show>,
}

impl std::fmt::Debug for DevicePrompt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DevicePrompt").finish_non_exhaustive()
    }
}

impl DevicePrompt {
    /// `show` tells the person where to go and which code to enter; it is handed the user
    /// code and the verification addresses, never the device code. Its error ends the login,
    /// kept as the source of the [`AuthError`](mcp_oauth::AuthError).
    pub fn new(
        show: impl Fn(&DeviceVerification) -> Result<(), BoxError> + Send + Sync + 'static,
    ) -> Self {
        Self {
            show: Box::new(show),
        }
    }
}

impl DeviceUserAgent for DevicePrompt {
    fn show(&self, verification: &DeviceVerification) -> Result<(), BoxError> {
        (self.show)(verification)
    }

    fn wait(&self, ms: u64) -> BoxFuture<'_, ()> {
        Box::pin(tokio::time::sleep(Duration::from_millis(ms)))
    }
}
