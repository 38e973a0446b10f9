//! The workspace's binaries and examples for the tests' testkit and the legs that run them
//! (interop and its login legs, netfault, conformance), built by one command for all of them.
//!
//! Each leg used to build only its own package (`cargo build -p mcp-cli`, `-p mcp-conformance`,
//! `-p mcp-host --example netfault`). Cargo unifies features over the packages and targets of
//! one invocation, so each of those builds resolved its dependencies' features differently
//! from `cargo test --workspace` and from each other, and recompiled much of the tree: about
//! 2.5 minutes of a clean `xtask ci`. `--workspace --bins --examples` selects every package
//! and targets that take dev-dependencies, as `cargo test --workspace` does, so after the
//! test step it only links what the tests did not already build, and the binaries are the
//! ones the tests ran against.

use std::path::PathBuf;

use xshell::{Shell, cmd};

/// Builds every binary and example of the workspace (debug) and returns their folder.
pub(crate) fn build(sh: &Shell) -> anyhow::Result<PathBuf> {
    cmd!(sh, "cargo build --quiet --workspace --bins --examples").run()?;
    Ok(crate::target_dir().join("debug"))
}
