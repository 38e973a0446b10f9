//! `mcp-host secret set|get|rm|list`: named secrets in the OS keyring, for `{"keyring": NAME}`
//! references in configuration files.
//!
//! A value is never taken from the command line, where shell history and `ps` would keep it:
//! `set` reads it from a prompt that does not echo (stdin a terminal) or from stdin (piped,
//! one trailing newline dropped). `get` says whether a secret is set and prints its value only
//! with `--reveal`; `list` prints names only.

use std::io::{IsTerminal as _, Read as _, Write as _};

use clap::Subcommand;
use mcp_host::config::Secret;
use mcp_host::keyring::{Keyring, KeyringError, KeyringKind};
use serde_json::json;

use crate::exit::{Code, Failure};
use crate::manage::Context;
use crate::output::Out;

/// `mcp-host secret …`.
#[derive(Debug, Subcommand)]
pub(crate) enum SecretCommand {
    /// Store a secret: its value is typed at a prompt that does not echo, or piped on stdin;
    /// never given as an argument.
    #[command(after_help = "\
Examples:
  mcp-host secret set github-token            (asks for the value)
  gh auth token | mcp-host secret set github-token
Then, in a configuration file: \"headers\": {\"Authorization\": {\"keyring\": \"github-token\"}}")]
    Set {
        /// The secret's name: ASCII letters, digits, '-', '_' and '.'.
        name: String,
        /// A value given here is refused (shell history and `ps` would keep it).
        #[arg(hide = true, num_args = 0.., allow_hyphen_values = true, trailing_var_arg = true)]
        value: Vec<String>,
    },
    /// Say whether a secret is set; print its value only with --reveal.
    Get {
        /// The secret's name.
        name: String,
        /// Print the value on stdout.
        #[arg(long)]
        reveal: bool,
    },
    /// Remove a secret.
    #[command(visible_alias = "remove")]
    Rm {
        /// The secret's name.
        name: String,
    },
    /// List the names of the secrets kept (never their values).
    List,
}

/// Runs one `secret` command.
pub(crate) fn run(cx: &Context, out: &Out, command: SecretCommand) -> Result<(), Failure> {
    if let SecretCommand::Set { value, .. } = &command
        && !value.is_empty()
    {
        return Err(Failure::usage(
            "a secret's value is not taken from the command line, where shell history and `ps` keep it",
        )
        .hint("type it at the prompt, or pipe it: `printf %s \"$VALUE\" | mcp-host secret set NAME`"));
    }
    let keyring = Keyring::open(&cx.env).map_err(failure)?;
    let kind = keyring.kind();
    match command {
        SecretCommand::Set { name, .. } => {
            if !mcp_host::keyring::is_valid_secret_name(&name) {
                return Err(failure(KeyringError::InvalidName { name }));
            }
            let value = read_value(&name)?;
            keyring.set_secret(&name, &value).map_err(failure)?;
            out.json(&json!({"name": name, "keyring": kind.to_string(), "stored": true}));
            out.note(&format!("stored `{name}` in the {kind} keyring"));
            if !kind.is_persistent() {
                out.note(
                    "the kernel keyring keeps it in memory until the machine restarts; \
                     with a desktop session, the Secret Service keeps it on disk",
                );
            }
            Ok(())
        }
        SecretCommand::Get { name, reveal } => {
            let Some(value) = keyring.secret(&name).map_err(failure)? else {
                return Err(not_set(&name, kind));
            };
            if out.is_json() {
                let mut doc = json!({"name": name, "keyring": kind.to_string(), "set": true});
                if reveal {
                    doc["value"] = json!(value.secret());
                }
                out.json(&doc);
            } else if reveal {
                out.text(value.secret());
            } else {
                out.text(&format!(
                    "`{name}` is set in the {kind} keyring (--reveal prints it)"
                ));
            }
            Ok(())
        }
        SecretCommand::Rm { name } => {
            if !keyring.remove_secret(&name).map_err(failure)? {
                return Err(not_set(&name, kind));
            }
            out.json(&json!({"name": name, "keyring": kind.to_string(), "removed": true}));
            out.note(&format!("removed `{name}` from the {kind} keyring"));
            Ok(())
        }
        SecretCommand::List => {
            let names = keyring.secret_names().map_err(failure)?;
            out.json(&json!({"keyring": kind.to_string(), "secrets": names}));
            if names.is_empty() {
                out.note(&format!("no secrets in the {kind} keyring"));
            }
            for name in &names {
                out.text(name);
            }
            Ok(())
        }
    }
}

fn not_set(name: &str, kind: KeyringKind) -> Failure {
    Failure::config(format!("`{name}` is not set in the {kind} keyring"))
        .hint(format!("`mcp-host secret set {name}` stores it"))
}

fn failure(e: KeyringError) -> Failure {
    match e {
        KeyringError::InvalidName { .. } | KeyringError::EmptyValue { .. } => {
            Failure::usage(e.to_string())
        }
        KeyringError::UnknownKind { .. } => Failure::config(e.to_string()),
        e => Failure::new(Code::Other, e.to_string())
            .hint("MCP_HOST_KEYRING=keyutils uses the kernel keyring, which needs no session bus"),
    }
}

/// The value: typed at a prompt without echo when stdin is a terminal, else all of stdin with
/// one trailing newline dropped.
fn read_value(name: &str) -> Result<Secret, Failure> {
    let stdin = std::io::stdin();
    let mut value = String::new();
    let read = if stdin.is_terminal() {
        prompt(name, &mut value)
    } else {
        stdin.lock().read_to_string(&mut value).map(|_| ())
    };
    read.map_err(|e| {
        Failure::new(
            Code::Other,
            format!("cannot read the value of `{name}`: {e}"),
        )
    })?;
    let trimmed = value
        .strip_suffix("\r\n")
        .or_else(|| value.strip_suffix('\n'))
        .unwrap_or(&value);
    if trimmed.is_empty() {
        return Err(Failure::usage(format!("the value for `{name}` is empty")));
    }
    Ok(Secret::new(trimmed))
}

/// Asks on stderr and reads one line from the terminal with echo off, restored afterwards
/// (on every path out, an interrupted read included).
fn prompt(name: &str, value: &mut String) -> std::io::Result<()> {
    use nix::sys::termios::{LocalFlags, SetArg, tcgetattr, tcsetattr};
    let stdin = std::io::stdin();
    let saved = tcgetattr(&stdin).map_err(std::io::Error::from)?;
    let mut quiet = saved.clone();
    quiet.local_flags.remove(LocalFlags::ECHO);
    let mut err = std::io::stderr().lock();
    write!(err, "Value for {name} (not shown): ")?;
    err.flush()?;
    tcsetattr(&stdin, SetArg::TCSANOW, &quiet).map_err(std::io::Error::from)?;
    let read = stdin.read_line(value).map(|_| ());
    let restored = tcsetattr(&stdin, SetArg::TCSANOW, &saved).map_err(std::io::Error::from);
    writeln!(err)?;
    read.and(restored)
}
