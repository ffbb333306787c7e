//! `baton`: see `baton --help`.

use baton_native::cli::{Cli, Command, LockCommand};
use baton_native::commands;
use baton_native::engine::CoreComponent;
use baton_native::error::HostError;
use baton_native::output::finish;
use clap::Parser;
use clap::error::ErrorKind;
use std::process::ExitCode;

fn main() -> ExitCode {
    let json = std::env::args().any(|a| a == "--json");
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) || !json => e.exit(),
        Err(e) => {
            let rendered = e.to_string();
            let first = rendered.lines().next().unwrap_or_default();
            let message = first.strip_prefix("error: ").unwrap_or(first);
            let err = HostError::usage(format!("{message}. See `baton --help`."));
            let mut core = CoreComponent::load().ok();
            return ExitCode::from(finish(core.as_mut(), None, true, Err(err)));
        }
    };
    let (command, json) = match &cli.command {
        Command::Scope(a) => ("scope", a.json),
        Command::Lock(LockCommand::Acquire(a)) => ("lock acquire", a.target.json),
        Command::Lock(LockCommand::Release(a)) => ("lock release", a.target.json),
        Command::Lock(LockCommand::Status(a)) => ("lock status", a.json),
    };
    let mut core = match CoreComponent::load() {
        Ok(core) => core,
        Err(e) => return ExitCode::from(finish(None, Some(command), json, Err(e))),
    };
    let outcome = match &cli.command {
        Command::Scope(a) => commands::scope::run(&mut core, a),
        Command::Lock(LockCommand::Acquire(a)) => commands::lock::acquire(&mut core, a),
        Command::Lock(LockCommand::Release(a)) => commands::lock::release(&mut core, a),
        Command::Lock(LockCommand::Status(a)) => commands::lock::status(&mut core, a),
    };
    ExitCode::from(finish(Some(&mut core), Some(command), json, outcome))
}
