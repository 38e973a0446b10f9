//! The command line of xtask.

xflags::xflags! {
    /// Project automation for mcp-host.
    cmd xtask {
        /// The whole gate: fmt, clippy per package, tests, docs, cargo-deny.
        cmd ci {}
        /// Repository lints: file headers, banned test attributes, the crate graph.
        cmd tidy {}
        /// Our client, over stdio and HTTP, against the official TypeScript everything server.
        cmd interop {}
    }
}
