//! The command line of xtask.

xflags::xflags! {
    /// Project automation for mcp-host.
    cmd xtask {
        /// The whole gate: fmt, clippy per package, tests, docs, interop, conformance, cargo-deny.
        cmd ci {}
        /// Repository lints: file headers, banned test attributes, the crate graph.
        cmd tidy {}
        /// Our client, over stdio and HTTP, against the official TypeScript everything server.
        cmd interop {}
        /// The official conformance suite, pinned, against our client and server; writes
        /// docs/conformance.md after a full run.
        cmd conformance {
            /// Only the client legs.
            optional --client
            /// Only the server legs.
            optional --server
            /// Only one suite: `stable` (0.1.16) or `next` (0.2.0-alpha.12).
            optional --suite suite: String
            /// Only this scenario, in every leg that has it.
            optional --scenario scenario: String
            /// Only this leg (`client-next-2026-07-28`, `server-stable-gateway`, ...).
            optional --leg leg: String
            /// After a full run, fail if the committed docs/conformance.md showed other
            /// results (its date and Node version aside).
            optional --check
        }
    }
}
