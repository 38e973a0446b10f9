//! The gateway's passthrough mode.
