//! The host side of MCP: it reads which servers the user configured, connects to all of them
//! at once, keeps each one's state, turns their tools into a catalogue an agent can offer a
//! model under stable names, asks a permission policy before every call, and bounds what comes
//! back. A server is untrusted: one that hangs, crashes or lies harms only itself.
//!
//! # Optional features
//!
//! None yet; `full` is accepted for uniformity.
//!
//! # Stability
//!
//! Pre-1.0: the API may change between minor versions.

pub mod auth_store;
pub mod config;
mod fs;
