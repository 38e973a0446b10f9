//! `mcp-host completions SHELL` and `mcp-host man`: the shell completion script and the
//! manual page, both generated from the same clap definitions the parser uses, so that they
//! cannot drift from the commands the binary takes. Printed on stdout for the user (or a
//! package) to put where their shell or `man` looks; nothing is installed by the binary.

use std::io::Write as _;
use std::path::Path;

use clap::CommandFactory as _;

use crate::args::Cli;
use crate::exit::{Code, Failure};

/// The name the scripts complete and the page is about: the binary's.
const NAME: &str = "mcp-host";

/// Prints the completion script for `shell` on stdout.
pub(crate) fn completions(shell: clap_complete::Shell) -> Result<(), Failure> {
    let mut command = Cli::command();
    let mut bytes = Vec::new();
    clap_complete::generate(shell, &mut command, NAME, &mut bytes);
    write_stdout(&bytes)
}

/// Prints `mcp-host(1)` in roff on stdout, or, with `dir`, writes a page for the command and
/// one for each subcommand (`mcp-host-call.1`, ...) into it.
pub(crate) fn man(dir: Option<&Path>) -> Result<(), Failure> {
    let command = Cli::command();
    if let Some(dir) = dir {
        std::fs::create_dir_all(dir)
            .and_then(|()| clap_mangen::generate_to(command, dir))
            .map_err(|e| {
                Failure::new(
                    Code::Other,
                    format!("cannot write the manual pages into {}: {e}", dir.display()),
                )
            })?;
        return Ok(());
    }
    let mut bytes = Vec::new();
    clap_mangen::Man::new(command)
        .render(&mut bytes)
        .map_err(|e| Failure::new(Code::Other, format!("cannot render the manual page: {e}")))?;
    write_stdout(&bytes)
}

fn write_stdout(bytes: &[u8]) -> Result<(), Failure> {
    let mut out = std::io::stdout().lock();
    out.write_all(bytes)
        .and_then(|()| out.flush())
        .map_err(|e| Failure::new(Code::Other, format!("cannot write to stdout: {e}")))
}
