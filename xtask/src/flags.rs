//! The command line of xtask.

xflags::xflags! {
    /// Project automation for mcp-host.
    cmd xtask {
        /// The whole gate: fmt, clippy per package, tests, docs, a short fuzz run, interop,
        /// conformance, cargo-deny.
        cmd ci {}
        /// Repository lints: file headers, banned test attributes, trailing whitespace,
        /// workspace dependencies, the crate graph, a sans-IO mcp-protocol.
        cmd tidy {}
        /// Our client and command line against the official TypeScript everything server
        /// (stdio, Streamable HTTP, HTTP+SSE) and the Python SDK's server (both eras), and the
        /// TypeScript SDK's client in front of our gateway.
        cmd interop {
            /// Also the legs that repeat what a shorter one already shows, for a change to
            /// the code they exercise: the login leg against the SDK's OAuth example in its
            /// lenient mode too (`ci` runs its strict mode only).
            optional --long
            /// Only the task leg: our command line as a task client of the TypeScript SDK's
            /// task server (xtask/src/tasks_peer.rs).
            optional --tasks
            /// Only the oidc-provider leg: `mcp-host login` through npm's oidc-provider, and
            /// the gateway as a protected resource of it (xtask/src/oidc.rs).
            optional --oidc
        }
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
        /// Our host and a Streamable HTTP server in two network namespaces, with tc netem
        /// latency, loss and a silent cut mid-stream (needs root).
        cmd netfault {
            /// How long the connection must idle under latency and loss (default 4).
            optional --steady-seconds steady_seconds: u64
        }
        /// The Secret Service keyring for real: gnome-keyring (installed with apt-get when
        /// missing) on a session bus of its own, mcp-host's keyring tests and `mcp-host
        /// secret` against it (xtask/src/keyring.rs).
        cmd keyring {}
        /// The fuzz targets of fuzz/ (JSON-RPC, SSE, NDJSON, WWW-Authenticate, config files,
        /// 2026-07-28 headers), each with libFuzzer: nightly with AddressSanitizer when there
        /// is a nightly toolchain, else stable without a sanitizer. A crash fails with the
        /// input's path under target/fuzz/artifacts/.
        cmd fuzz {
            /// Seconds per target (default 300).
            optional --seconds seconds: u64
            /// Only this target.
            optional --target target: String
            /// Build with the default toolchain and no sanitizer, even when nightly is there.
            optional --stable
        }
        /// The product crates ready for crates.io: metadata, one version, READMEs true to the
        /// code, and what each package holds (`cargo package --workspace`; run by `ci`).
        cmd publish {
            /// Also cargo's verify build of every package (`cargo publish --dry-run
            /// --workspace`): minutes, in a dependency profile of its own.
            optional --verify
        }
        /// The gateway over HTTP under 200 clients for N minutes while an upstream is killed
        /// every minute: calls made and failed, memory and open files. Not part of `ci`
        /// (which runs 30 s of it).
        cmd soak {
            /// How long (default 10).
            optional --minutes minutes: f64
            /// How many clients (default 200).
            optional --clients clients: usize
        }
        /// N gateway replicas behind nginx (round robin, no affinity) sharing one Redis, under
        /// clients of both eras while one replica is killed and started again: calls made and
        /// failed, sessions lost, token refreshes, each replica's memory (xtask/src/cluster.rs).
        /// Not part of `ci` (which runs 25 s of it).
        cmd cluster {
            /// How many replicas (default 3).
            optional --replicas replicas: usize
            /// How long the load runs (default 2).
            optional --minutes minutes: f64
            /// How many clients, half of each era (default 100).
            optional --clients clients: usize
            /// Leave out the gateway file's `store` and `cluster` blocks: each replica keeps
            /// its own tokens and sessions (the run should then fail: a check of the judge).
            optional --unshared
            /// Leave out the `store` block: the replicas share one token file (the
            /// single-machine store), to compare with Redis.
            optional --file-store
        }
        /// Our crates beside rmcp and the TypeScript and Python SDKs (installed into
        /// target/tools/); writes docs/benchmarks.md. Not part of `ci`.
        cmd bench {
            /// One short repetition: a smoke run (the page says so).
            optional --quick
            /// Repetitions of every row (default 3; 1 with --quick).
            optional --reps reps: usize
            /// A sentence for the top of the page, such as what else the machine was doing.
            optional --note note: String
            /// Write the page here instead of docs/benchmarks.md.
            optional --out out: String
            /// Only these rows: `gateways` (the gateway hop and its crowds), `ready` (time
            /// to ready of 20 servers), or cells `WORKLOAD[:TRANSPORT[:CLIENT-SERVER]]`,
            /// comma-separated (`big:stdio:ours-ours`, `call:http:ts-ours`), to iterate on
            /// them; the rest of the page says not run.
            optional --only only: String
            /// No measurement: only check our gateway (`mcp-host serve`, stdio and HTTP)
            /// between an rmcp client and an rmcp upstream (bench/src/gateway_check.rs).
            optional --gateway-check
        }
        /// Instructions per tools/call round trip through each layer (codec, stdio, HTTP,
        /// gateway hop) under valgrind's callgrind, against xtask/callgrind-baseline.txt.
        cmd callgrind {
            /// Write the baseline from this run instead of checking against it.
            optional --bless
        }
    }
}
