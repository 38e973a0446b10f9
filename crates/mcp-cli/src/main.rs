//! `mcp-host`, the command line: manage the configured MCP servers, look at what they offer,
//! call them, log in to them, and try it all with `mcp-host demo`. Parsing and rendering only:
//! every behaviour is `mcp-host`'s (the library), so a host embedding the library gets the
//! same.
//!
//! Exit codes are [`Code`]'s; `docs/cli.md` documents every command.

// The command line's job is to print.
#![allow(clippy::print_stdout, clippy::print_stderr)]

mod args;
mod budget;
mod demo;
mod exit;
mod gateway;
mod live;
mod manage;
mod output;
mod shell;
mod trust;

use std::process::ExitCode;

use clap::Parser as _;

use crate::args::{Cli, Command, GatewayCommand};
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
            return ExitCode::from(code as u8);
        }
    };
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
            return ExitCode::from(Code::Other as u8);
        }
    };
    let outcome = runtime.block_on(run(cli, out.clone()));
    // Servers still running (a stdio child, an HTTP session) were shut down by the command;
    // anything left is abandoned rather than waited for.
    runtime.shutdown_timeout(std::time::Duration::from_millis(200));
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => {
            out.failure(&failure);
            ExitCode::from(failure.code as u8)
        }
    }
}

async fn run(cli: Cli, out: Out) -> Result<(), Failure> {
    let cx = manage::Context::from_process(cli.project.as_deref())?;
    match cli.command {
        Command::Add(add) => manage::add(&cx, &out, *add),
        Command::List { scope } => manage::list(&cx, &out, scope),
        Command::Remove { id, scope } => manage::remove(&cx, &out, &id, scope),
        Command::Enable { id, scope } => manage::set_enabled(&cx, &out, &id, scope, true),
        Command::Disable { id, scope } => manage::set_enabled(&cx, &out, &id, scope, false),
        Command::Test { id, scope } => live::test(&cx, &out, &id, scope).await,
        Command::Status { id } => live::status(&cx, &out, id.as_deref()).await,
        Command::Tools { id } => live::tools(&cx, &out, id.as_deref()).await,
        Command::Call(call) => live::call(&cx, &out, *call).await,
        Command::Resources { id } => live::resources(&cx, &out, id.as_deref()).await,
        Command::Read { id, uri } => live::read(&cx, &out, &id, &uri).await,
        Command::Prompts { id } => live::prompts(&cx, &out, id.as_deref()).await,
        Command::Get { id, prompt, arg } => live::get(&cx, &out, &id, &prompt, arg).await,
        Command::Login { id, no_browser } => live::login(&cx, &out, &id, no_browser).await,
        Command::Logout { id } => live::logout(&cx, &out, &id),
        Command::Shell { yes } => shell::run(&cx, &out, yes).await,
        Command::Trust { ids, all } => trust::trust(&cx, &out, &ids, all),
        Command::Untrust { id } => trust::untrust(&cx, &out, &id),
        Command::Demo => demo::run(&out).await,
        Command::Serve {
            gateway,
            http,
            bearer_token_env,
        } => gateway::serve(&cx, &gateway, http, bearer_token_env.as_deref()).await,
        Command::Gateway(GatewayCommand::Schema) => gateway::schema(&out),
        Command::Budget { gateway } => budget::run(&cx, &out, gateway.as_deref()).await,
        Command::DemoServer { http } => demo::serve(http).await,
    }
}
