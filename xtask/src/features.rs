//! The feature combinations that matter, each built on its own (issue 21): clippy of the whole
//! workspace builds every crate with everything on, where feature unification hides a
//! `cfg(feature)` that forgot an import or a gate. So each crate with optional parts is also
//! built with `--no-default-features` and each combination a consumer would pick, and the
//! stdio-only host's dependency tree is checked for the crates it must not pull in.
//!
//! Libraries only (no `--all-targets`): tests and examples name their own `required-features`,
//! and with everything on they are built by the clippy step; only the few tests of what a
//! build without a feature does run here ([`TESTS_WITHOUT`]). Clippy rather than `cargo check`,
//! at the same cost, so that a warning particular to one combination (an unused import behind a
//! gate) fails the gate too.

use anyhow::bail;
use xshell::{Shell, cmd};

/// Each crate with optional features, and the `--features` lists it is built with (after
/// `--no-default-features`; `""` is nothing at all). The defaults, which turn everything on,
/// are what `xtask ci`'s per-package clippy step builds. Each list is a build a consumer would
/// pick that no other row contains: mcp-http's codecs alone, each half alone (client-only and
/// server-only, no TLS) and the client with TLS; mcp-host with no transport at all (what
/// `cargo check --no-default-features` builds: its `Connect` has no variants, which hid a
/// misplaced gate once), for stdio only, HTTP without OAuth or TLS, HTTP with TLS and no OAuth,
/// and OAuth without TLS. Stdio with HTTP is built by [`TESTS_WITHOUT`].
pub(crate) const MATRIX: &[(&str, &[&str])] = &[
    ("mcp-http", &["", "client", "server", "client,tls"]),
    ("mcp-host", &["", "stdio", "http", "http,tls", "oauth"]),
];

/// Tests of what a build without a feature does, which only a build without it can run:
/// (package, `--features` after `--no-default-features`, the test target and name filter).
pub(crate) const TESTS_WITHOUT: &[(&str, &str, &[&str])] = &[
    // A file's `http` and `https` entries are errors naming the feature; stdio ones run.
    ("mcp-host", "stdio", &["--test", "features"]),
    // `https` entries name `tls`; mcp-http refuses an API-made `https` entry itself, before
    // connecting (mcp-http's own tests need `tls`, so its refusal is tested here).
    ("mcp-host", "stdio,http", &["--test", "features"]),
];

/// What a host built for local stdio servers only must not compile: HTTP, TLS and OAuth.
pub(crate) const NOT_IN_STDIO_ONLY: &[&str] = &[
    "hyper",
    "hyper-util",
    "rustls",
    "tokio-rustls",
    "webpki-roots",
    "ring",
    "mcp-http",
    "mcp-oauth",
];

pub(crate) fn ci(sh: &Shell) -> anyhow::Result<()> {
    for (package, lists) in MATRIX {
        for features in *lists {
            let shown = if features.is_empty() {
                "none"
            } else {
                features
            };
            eprintln!("==> features {package}: {shown}");
            cmd!(
                sh,
                "cargo clippy --package {package} --lib --no-default-features --features={features} -- -D warnings"
            )
            .run()?;
        }
    }
    for &(package, features, target) in TESTS_WITHOUT {
        eprintln!("==> features {package}: {features}, tests");
        cmd!(
            sh,
            "cargo test --package {package} --no-default-features --features={features} {target...}"
        )
        .run()?;
    }
    eprintln!("==> features: the stdio-only host's dependency tree");
    let tree = cmd!(
        sh,
        "cargo tree --package mcp-host --no-default-features --features stdio --edges normal --prefix none"
    )
    .read()?;
    if let Err(problem) = judge_stdio_tree(&tree) {
        bail!("xtask ci: step `features` failed: {problem}");
    }
    Ok(())
}

/// Whether the dependency tree of the stdio-only host (`cargo tree --prefix none` output) is
/// what it should be: it holds `mcp-host` and `mcp-stdio` (so it is the tree meant, and not an
/// empty or wrong one), and none of [`NOT_IN_STDIO_ONLY`].
pub(crate) fn judge_stdio_tree(tree: &str) -> Result<(), String> {
    let names: Vec<&str> = tree
        .lines()
        .filter_map(|line| line.split_whitespace().next())
        .collect();
    for needed in ["mcp-host", "mcp-stdio"] {
        if !names.contains(&needed) {
            return Err(format!(
                "the stdio-only tree does not hold `{needed}`: it is not the tree meant"
            ));
        }
    }
    let mut found: Vec<&str> = NOT_IN_STDIO_ONLY
        .iter()
        .copied()
        .filter(|c| names.contains(c))
        .collect();
    found.dedup();
    if found.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "`mcp-host --no-default-features --features stdio` depends on {}",
            found.join(", ")
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stdio_only_tree_fails_with_any_http_tls_or_oauth_crate_in_it() {
        let clean = "mcp-host v0.1.0 (/w/crates/mcp-host)\nmcp-stdio v0.1.0 (/w/crates/mcp-stdio)\n\
                     tokio v1.47.1\nhttp v1.3.1\nring-buffer v0.1.0\n";
        assert_eq!(judge_stdio_tree(clean), Ok(()));
        for bad in NOT_IN_STDIO_ONLY {
            let tree = format!("{clean}{bad} v1.0.0\n");
            let problem = judge_stdio_tree(&tree).unwrap_err();
            assert!(problem.ends_with(&format!("depends on {bad}")), "{problem}");
        }
        // Not the tree meant: nothing was checked, so it cannot pass.
        let problem = judge_stdio_tree("").unwrap_err();
        assert!(problem.contains("mcp-host"), "{problem}");
        let problem = judge_stdio_tree("mcp-host v0.1.0\ntokio v1.47.1\n").unwrap_err();
        assert!(problem.contains("mcp-stdio"), "{problem}");
    }
}
