//! `mcp-host`, the command line: manage the configured MCP servers, look at what they offer,
//! call them, log in to them, and try it all with `mcp-host demo`. Parsing and rendering only:
//! every behaviour is `mcp-host`'s (the library), so a host embedding the library gets the
//! same.
//!
//! Exit codes are [`Code`]'s; `docs/cli.md` documents every command.
//!
//! A command that starts servers ends on SIGTERM, SIGINT and SIGHUP (`serve` reloads its file
//! on SIGHUP instead) by killing every server group it started
//! (`mcp_stdio::termination_signal`) and exiting with `128 + n`; each server's keeper covers
//! the rest (SIGKILL, a crash). In the shell, Ctrl-C typed at the
//! prompt is a byte (the terminal is raw) that clears the line; a SIGINT signal ends the shell
//! like SIGTERM. The line editor puts a SIGINT handler of its own in place when it is made, so
//! the shell's editor is made before we listen: ours is installed over it (and chains to it)
//! instead of being replaced by it.

// The command line's job is to print.
#![allow(clippy::print_stdout, clippy::print_stderr)]

mod add;
mod args;
mod budget;
mod complete;
mod completions;
mod demo;
mod device;
mod exit;
mod gateway;
mod import;
mod live;
mod logging;
mod manage;
mod output;
mod ps;
mod remember;
mod secret;
mod shell;
mod show;
mod skills;
mod tasks;
mod trust;

use std::process::ExitCode;

use clap::Parser as _;

use crate::args::{Cli, Command, GatewayCommand, PromptCommand};
use crate::exit::{Code, Failure};
use crate::output::Out;

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            // Help and version are successes; everything else is a usage error (code 2).
            let code = if e.use_stderr() {
                Code::Usage
            } else {
                Code::Ok
            };
            let _ = e.print();
            return ExitCode::from(code.exit_code());
        }
    };
    logging::init(&log_settings(&cli));
    let out = Out::new(cli.json);
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            out.failure(&Failure::new(
                Code::Other,
                format!("cannot start the runtime: {e}"),
            ));
            return ExitCode::from(Code::Other.exit_code());
        }
    };
    let guard_signals = starts_servers(&cli.command);
    // The shell's line editor leaves the terminal raw while it reads; a signal that ends the
    // shell must give the person their terminal back.
    let terminal = matches!(cli.command, Command::Shell { .. })
        .then(terminal::save)
        .flatten();
    // Made before we listen for signals: see the module doc.
    let editor = matches!(cli.command, Command::Shell { .. }).then(shell::editor);
    let outcome = runtime.block_on(async {
        if !guard_signals {
            return Ok(run(cli, out.clone(), editor).await);
        }
        // Listening before any server starts: no signal finds the default action, which would
        // leave the servers to their keepers alone.
        let signal = match termination_signal(&cli.command) {
            Ok(signal) => signal,
            Err(e) => {
                return Ok(Err(Failure::new(
                    Code::Other,
                    format!("cannot listen for signals: {e}"),
                )));
            }
        };
        tokio::select! {
            biased;
            // Every server group is killed by now.
            n = signal => Err(n),
            outcome = run(cli, out.clone(), editor) => Ok(outcome),
        }
    });
    let outcome = match outcome {
        Ok(outcome) => outcome,
        Err(signal) => {
            if let Some(saved) = &terminal {
                // The shell's reader must not make the terminal raw again behind us.
                shell::stop_reading();
                terminal::restore(saved);
            }
            // At once: the runtime's tasks and threads are not waited for, and the keepers of
            // the servers, should any be left, see our end of their pipes close.
            std::process::exit(128 + signal);
        }
    };
    // Servers still running (a stdio child, an HTTP session) were shut down by the command;
    // anything left is abandoned rather than waited for.
    runtime.shutdown_timeout(std::time::Duration::from_millis(200));
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => {
            out.failure(&failure);
            ExitCode::from(failure.code.exit_code())
        }
    }
}

/// What the log shows and how: `serve` logs what happens (it has no output of its own), the
/// other commands only errors unless asked with `-v`.
fn log_settings(cli: &Cli) -> logging::Settings {
    let (default, format) = match &cli.command {
        Command::Serve { log_format, .. } => {
            (tracing::level_filters::LevelFilter::INFO, *log_format)
        }
        _ => (
            tracing::level_filters::LevelFilter::ERROR,
            logging::LogFormat::Text,
        ),
    };
    logging::Settings {
        default,
        verbose: cli.verbose,
        quiet: cli.quiet,
        rust_log: std::env::var("RUST_LOG").ok(),
        format,
    }
}

/// What ends a command that starts servers: SIGTERM, SIGINT and SIGHUP, except that `serve`
/// reloads its file on SIGHUP.
fn termination_signal(
    command: &Command,
) -> std::io::Result<std::pin::Pin<Box<dyn Future<Output = i32> + Send>>> {
    if matches!(command, Command::Serve { .. }) {
        return gateway::termination_signal();
    }
    Ok(Box::pin(mcp_stdio::termination_signal()?))
}

/// Whether a command may start servers, and so must take them down with it on a signal.
fn starts_servers(command: &Command) -> bool {
    match command {
        Command::Test { .. }
        | Command::Status { .. }
        | Command::Tools { .. }
        | Command::Call(_)
        | Command::Resources { .. }
        | Command::Read { .. }
        | Command::Prompts { .. }
        | Command::Prompt(_)
        | Command::Skills { .. }
        | Command::Skill { .. }
        | Command::Tasks(_)
        | Command::Login { .. }
        | Command::Shell { .. }
        | Command::Demo
        | Command::Serve { .. }
        | Command::Budget { .. } => true,
        Command::Add(_)
        | Command::AddJson { .. }
        | Command::AddFromClaudeDesktop { .. }
        | Command::Get { .. }
        | Command::ResetProjectChoices
        | Command::Import(_)
        | Command::List { .. }
        | Command::Remove { .. }
        | Command::Enable { .. }
        | Command::Disable { .. }
        | Command::Logout { .. }
        | Command::Trust { .. }
        | Command::Untrust { .. }
        | Command::Gateway(_)
        | Command::Ps { .. }
        | Command::Secret(_)
        | Command::Completions { .. }
        | Command::Man { .. }
        // The demo server is a server: it ends as its client or the signal decides.
        | Command::DemoServer { .. } => false,
    }
}

/// Saving and restoring the terminal's modes around the shell.
mod terminal {
    use nix::sys::termios::{SetArg, Termios, tcgetattr, tcsetattr};

    /// The modes of the terminal on stdin, if stdin is one.
    pub(crate) fn save() -> Option<Termios> {
        tcgetattr(std::io::stdin()).ok()
    }

    /// Puts them back (a terminal that is gone, after SIGHUP, is left alone).
    pub(crate) fn restore(saved: &Termios) {
        let _ = tcsetattr(std::io::stdin(), SetArg::TCSANOW, saved);
    }
}

/// Runs the command; `editor` is the shell's line editor, made before signals were listened
/// for (`None` for every other command).
async fn run(
    cli: Cli,
    out: Out,
    editor: Option<Result<shell::Editor, Failure>>,
) -> Result<(), Failure> {
    let cx = manage::Context::from_process(cli.project.as_deref())?;
    let outcome = match cli.command {
        Command::Add(add) => add::add(&cx, &out, *add),
        Command::AddJson {
            id,
            entry,
            scope,
            replace,
        } => add::add_json(&cx, &out, &id, &entry, scope, replace),
        Command::AddFromClaudeDesktop {
            scope,
            path,
            dry_run,
            force,
        } => import::from_claude_desktop(&cx, &out, scope, path, dry_run, force),
        Command::Get { id, prompt, arg } => show::get(&cx, &out, &id, prompt.as_deref(), &arg),
        Command::ResetProjectChoices => trust::reset(&cx, &out),
        Command::Import(a) => import::run(&cx, &out, a),
        Command::List {
            id: Some(id),
            scope,
        } => show::show(&cx, &out, &id, scope),
        Command::List { id: None, scope } => manage::list(&cx, &out, scope),
        Command::Remove { id, scope } => manage::remove(&cx, &out, &id, scope),
        Command::Enable { id, scope } => manage::set_enabled(&cx, &out, &id, scope, true),
        Command::Disable { id, scope } => manage::set_enabled(&cx, &out, &id, scope, false),
        Command::Test { id, scope } => live::test(&cx, &out, &id, scope).await,
        Command::Status { id } => live::status(&cx, &out, id.as_deref()).await,
        Command::Tools {
            id: Some(id),
            tool: Some(tool),
            ..
        } => show::tool(&cx, &out, &id, &tool).await,
        Command::Tools { id, format, .. } => live::tools(&cx, &out, id.as_deref(), format).await,
        Command::Call(call) => live::call(&cx, &out, *call).await,
        Command::Resources { id } => live::resources(&cx, &out, id.as_deref()).await,
        Command::Read { id, uri } => live::read(&cx, &out, &id, &uri).await,
        Command::Prompts { id } => live::prompts(&cx, &out, id.as_deref()).await,
        Command::Prompt(PromptCommand::Get { id, prompt, arg }) => {
            live::get(&cx, &out, &id, &prompt, arg).await
        }
        Command::Skills { id } => skills::skills(&cx, &out, &id).await,
        Command::Skill { id, name } => skills::skill(&cx, &out, &id, &name).await,
        Command::Tasks(command) => tasks::run(&cx, &out, command).await,
        Command::Login {
            id,
            gateway: Some(file),
            no_browser,
            device,
            ..
        } => gateway::login(&cx, &out, &file, &id, no_browser, device).await,
        Command::Login {
            id,
            no_browser,
            device,
            scopes,
            ..
        } if !scopes.is_empty() => show::login(&cx, &out, &id, no_browser, device, &scopes).await,
        Command::Login {
            id,
            no_browser,
            device,
            ..
        } => live::login(&cx, &out, &id, no_browser, device).await,
        Command::Logout {
            id,
            gateway: Some(file),
        } => gateway::logout(&cx, &out, &file, &id),
        Command::Logout { id, .. } => live::logout(&cx, &out, &id),
        Command::Shell { yes } => {
            let editor = editor.unwrap_or_else(shell::editor)?;
            shell::run(&cx, &out, yes, editor).await
        }
        Command::Secret(command) => secret::run(&cx, &out, command),
        Command::Trust { ids, all } => trust::trust(&cx, &out, &ids, all),
        Command::Untrust { id } => trust::untrust(&cx, &out, &id),
        Command::Demo => demo::run(&out).await,
        Command::Serve {
            gateway,
            http,
            bearer_token_env,
            http_flags,
            ..
        } => {
            gateway::serve(
                &cx,
                &gateway,
                http,
                bearer_token_env.as_deref(),
                &http_flags,
            )
            .await
        }
        Command::Gateway(GatewayCommand::Schema) => gateway::schema(&out),
        Command::Budget { gateway } => budget::run(&cx, &out, gateway.as_deref()).await,
        Command::Ps { kill_orphans } => ps::run(&out, kill_orphans),
        Command::Completions { shell } => completions::completions(shell),
        Command::Man { dir } => completions::man(dir.as_deref()),
        Command::DemoServer { http } => demo::serve(http).await,
    };
    outcome.map_err(|f| show::login_hint(&cx, f))
}
