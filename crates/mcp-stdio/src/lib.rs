//! MCP over stdio (spec `basic/transports.mdx#stdio`): start a server as a child process and
//! talk to it ([`spawn`], which gives an `mcp-session` [`Client`]), or serve MCP on this process's stdin and stdout ([`serve_stdio`]).
//!
//! A server starts only from explicit configuration ([`StdioConfig`]: command, arguments,
//! working directory, environment). It does not inherit the host's environment wholesale: it
//! gets the allow-list in [`env`](mod@env) plus what the configuration names, unless the configuration
//! asks for full inheritance. **A configured server is a local program running with the user's
//! rights; it is not sandboxed.**
//!
//! Messages are newline-delimited JSON through an I/O-free codec ([`codec`]) with a line-length
//! limit: an oversized line is discarded and reported, and the connection lives on. A stdout
//! line that is not JSON-RPC is a diagnostic, not a failure. stderr is always drained into a
//! bounded buffer shown in diagnostics, never treated as an error, and each of its lines is a
//! `tracing` event (info, target `mcp_stdio::stderr`, field `server`), redacted, cut at 2 KiB
//! and at most 100 a second per server (the rest counted in a warning).
//!
//! The server runs in a process group of its own. `Client::close` ends it politely: close
//! stdin, wait, SIGTERM to the group, wait, SIGKILL to the group, reap; a grandchild (the
//! server an `npx` or `uvx` launcher starts) goes with it. Dropping every handle kills the
//! group at once and closes our ends of its pipes; a client `connect`ed over other streams
//! shuts its streams down instead. A host that exits on a signal calls [`kill_all_servers`],
//! or awaits [`termination_signal`], so that no server outlives it.
//!
//! **No server outlives its host, by default, whatever ends the host.** Each group is led by
//! a keeper: a `/bin/sh` one-liner (no binary to ship, no unsafe code) that ignores SIGTERM,
//! SIGINT and SIGHUP, waits for its pipe from the host to close, and then sends SIGKILL to
//! its whole group. The kernel closes that pipe however the host ends: a return from `main`,
//! a dropped runtime, a panic, an uncaught signal, SIGKILL, the OOM killer. A process that
//! leaves the group (`setsid`, `setpgid`) is out of reach, here as with `close`; on a system
//! without `/bin/sh` the server leads its own group and only the paths above that run code
//! end it. Every running server is recorded in a private directory ([`running`]), which
//! `mcp-host ps` lists and `mcp-host ps --kill-orphans` cleans up.
//!
//! The protocol itself, ids, timeouts, cancellation, refusing undeclared server requests, is
//! done by `mcp-protocol`'s session, run by `mcp-session`'s core; this crate moves bytes and
//! owns the process.
//!
//! # Cancel safety
//!
//! Dropping a request future cancels the request (`notifications/cancelled` is sent). On the
//! server side, a request the client cancels has its handler future dropped.
//!
//! # Optional features
//!
//! None yet; `full` is accepted for uniformity. Unix only for now (process groups).
//!
//! # Stability
//!
//! Pre-1.0: the API may change between minor versions.

mod child;
mod client;
pub mod codec;
pub mod env;
mod error;
mod outbox;
pub mod running;
mod server;
mod streams;

// The public interface is:
pub use child::{StdioConfig, kill_all_servers, termination_signal};
pub use client::{connect, spawn};
pub use error::{Error, Result, SpawnPhase};
pub use mcp_session::{Client, Incoming};
pub use mcp_session::{Handler, Peer, RequestContext};
pub use server::{serve, serve_stdio};
