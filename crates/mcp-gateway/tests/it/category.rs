//! The gateway's category mode.
