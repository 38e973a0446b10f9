//! `xtask ci`'s external-types step (STYLE rule 14): the public API of each crate in
//! [`CRATES`] names only the foreign types its manifest lists under
//! `[package.metadata.cargo_check_external_types]`, so that a dependency's type cannot become
//! part of our API, and our semver, by accident. `cargo-check-external-types` reads rustdoc's
//! JSON and fails on any type outside the list.
//!
//! The tool is pinned ([`VERSION`]) and installed with `cargo install --locked` when missing,
//! as cargo-deny is. Rustdoc's JSON output is unstable: the tool accepts one format version
//! (57 for 0.5.0) and fails with a message naming both when rustdoc writes another, so a
//! toolchain update can stop the step but never make it pass unread. The project's machines
//! have one toolchain that can be relied on, the stable one (1.95 writes format 57, as the
//! nightly the tool was released against does); the JSON output is asked of it with
//! `RUSTC_BOOTSTRAP=1`, and no dated nightly has to be fetched.
//!
//! `RUSTC_BOOTSTRAP=1` is given to rustdoc alone, through a `RUSTDOC` wrapper: proc-macro2's
//! and thiserror's build scripts rerun when it changes, so setting it for the whole cargo run
//! rebuilt every proc macro and what depends on them, for each crate here and again for the
//! next step (measured: 50 to 90 s a crate instead of 1 to 7).

use anyhow::Context as _;
use xshell::{Shell, cmd};

/// The cargo-check-external-types release we install when it is missing; it reads rustdoc
/// JSON format 57.
pub(crate) const VERSION: &str = "0.5.0";

/// The crates whose public foreign types are listed in their manifests. Each is checked with
/// its default features, which turn on everything it has.
pub(crate) const CRATES: &[&str] = &[
    "mcp-protocol",
    "mcp-oauth",
    "mcp-session",
    "mcp-stdio",
    "mcp-http",
    "mcp-host",
];

pub(crate) fn ci(sh: &Shell) -> anyhow::Result<()> {
    ensure_installed(sh)?;
    let tools = crate::target_dir().join("tools");
    std::fs::create_dir_all(&tools)?;
    let wrapper = tools.join("rustdoc-json");
    std::fs::write(
        &wrapper,
        "#!/bin/sh\nRUSTC_BOOTSTRAP=1 exec rustdoc \"$@\"\n",
    )?;
    cmd!(sh, "chmod +x {wrapper}").run()?;
    let _rustdoc = sh.push_env("RUSTDOC", &wrapper);
    for krate in CRATES {
        eprintln!("==> external types {krate}");
        let manifest = format!("crates/{krate}/Cargo.toml");
        cmd!(sh, "cargo check-external-types --manifest-path {manifest}")
            .run()
            .with_context(|| {
                format!(
                    "xtask ci: step `external types` failed: `{krate}`'s public API names a \
                     foreign type its Cargo.toml does not list (or the tool could not run)"
                )
            })?;
    }
    Ok(())
}

/// Installs the pinned tool unless `cargo install --list` shows it (the tool has no
/// `--version`).
fn ensure_installed(sh: &Shell) -> anyhow::Result<()> {
    let listed = cmd!(sh, "cargo install --list")
        .quiet()
        .ignore_stderr()
        .read()
        .unwrap_or_default();
    if installed(&listed) {
        return Ok(());
    }
    eprintln!("==> installing cargo-check-external-types {VERSION}");
    cmd!(
        sh,
        "cargo install cargo-check-external-types --locked --version {VERSION}"
    )
    .run()
    .context("installing cargo-check-external-types")
}

/// Whether `cargo install --list` output holds the pinned release of the tool.
fn installed(listed: &str) -> bool {
    let wanted = format!("cargo-check-external-types v{VERSION}:");
    listed.lines().any(|line| line.trim() == wanted)
}

#[cfg(test)]
mod tests {
    #[test]
    fn only_the_pinned_release_counts_as_installed() {
        let listed = format!(
            "cargo-deny v0.20.2:\n    cargo-deny\ncargo-check-external-types v{}:\n    cargo-check-external-types\n",
            super::VERSION
        );
        assert!(super::installed(&listed));
        assert!(!super::installed(
            "cargo-check-external-types v0.4.0:\n    cargo-check-external-types\n"
        ));
        assert!(!super::installed("cargo-deny v0.20.2:\n    cargo-deny\n"));
    }
}
