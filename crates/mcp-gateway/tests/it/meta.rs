//! The gateway's meta mode.
