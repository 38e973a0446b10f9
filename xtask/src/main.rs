//! Project automation: `cargo xtask <command>`. The one entry point for CI and for newcomers,
//! so that what a person runs is what CI runs.

// xtask is an application that reports progress on the terminal.
#![allow(clippy::print_stderr, clippy::print_stdout)]

mod bench;
mod binaries;
mod bounded;
mod callgrind;
mod ci;
mod cluster;
mod conformance;
mod external_types;
mod features;
mod flags;
mod fuzz;
mod gateway_login;
mod gateway_peers;
mod interop;
mod keyring;
mod login;
mod netfault;
mod oidc;
mod oidc_gateway;
mod otlp;
mod prometheus;
mod providers;
mod publish;
mod soak;
mod tasks_peer;
mod tidy;

use std::path::{Path, PathBuf};

use xshell::Shell;

fn main() -> anyhow::Result<()> {
    let flags = flags::Xtask::from_env_or_exit();
    let sh = &Shell::new()?;
    sh.change_dir(project_root());
    match flags.subcommand {
        flags::XtaskCmd::Ci(cmd) => cmd.run(sh),
        flags::XtaskCmd::Tidy(cmd) => cmd.run(sh),
        flags::XtaskCmd::Interop(cmd) => cmd.run(sh),
        flags::XtaskCmd::Conformance(cmd) => cmd.run(sh),
        flags::XtaskCmd::Bench(cmd) => cmd.run(sh),
        flags::XtaskCmd::Callgrind(cmd) => cmd.run(sh),
        flags::XtaskCmd::Fuzz(cmd) => cmd.run(sh),
        flags::XtaskCmd::Netfault(cmd) => cmd.run(sh),
        flags::XtaskCmd::Soak(cmd) => cmd.run(sh),
        flags::XtaskCmd::Cluster(cmd) => cmd.run(sh),
        flags::XtaskCmd::Keyring(_) => keyring::run(sh),
        flags::XtaskCmd::Publish(cmd) => publish::check(sh, cmd.verify),
    }
}

/// The workspace root, found from this crate's manifest so that xtask works from any folder.
fn project_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."))
}

/// The cargo target folder: `CARGO_TARGET_DIR` when set, else `target/`.
fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| project_root().join("target"))
}
