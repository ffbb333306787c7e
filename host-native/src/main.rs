//! `baton`: see `baton --help`.

use baton_native::cli::{Cli, Command, LedgerCommand, LockCommand, ReceiptCommand};
use baton_native::commands;
use baton_native::engine::CoreComponent;
use baton_native::error::HostError;
use baton_native::output::{finish, finish_with};
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
        Command::Run(a) => ("run", a.target.json),
        Command::Destroy(a) => ("destroy", a.target.json),
        Command::LockObject(a) => ("lock-object", a.json),
        Command::Ledger(LedgerCommand::Intend(a)) => ("ledger intend", a.target.json),
        Command::Ledger(LedgerCommand::Record(a)) => ("ledger record", a.target.json),
        Command::Ledger(LedgerCommand::Forget(a)) => ("ledger forget", a.target.json),
        Command::Ledger(LedgerCommand::Check(a)) => ("ledger check", a.target.json),
        Command::Ledger(LedgerCommand::List(a)) => ("ledger list", a.json),
        Command::Receipt(ReceiptCommand::Show(a)) => ("receipt show", a.target.json),
        Command::Receipt(ReceiptCommand::List(a)) => ("receipt list", a.json),
        Command::Status(a) => ("status", a.target.json),
        Command::Write(a) => ("write", a.target.json),
        Command::Lock(LockCommand::Acquire(a)) => ("lock acquire", a.target.json),
        Command::Lock(LockCommand::Release(a)) => ("lock release", a.target.json),
        Command::Lock(LockCommand::Status(a)) => ("lock status", a.json),
        Command::Lock(LockCommand::Renew(a)) => ("lock renew", a.target.json),
        Command::Lock(LockCommand::Break(a)) => ("lock break", a.target.json),
        Command::Gc(a) => ("gc", a.target.json),
    };
    let mut core = match CoreComponent::load() {
        Ok(core) => core,
        Err(e) => return ExitCode::from(finish(None, Some(command), json, Err(e))),
    };
    let async_command = matches!(
        cli.command,
        Command::Run(_)
            | Command::Destroy(_)
            | Command::LockObject(_)
            | Command::Lock(LockCommand::Acquire(_))
            | Command::Gc(_)
    );
    if async_command {
        let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
            Ok(rt) => rt,
            Err(e) => {
                let err = HostError::io("cannot start the async runtime", &e);
                return ExitCode::from(finish(Some(&mut core), Some(command), json, Err(err)));
            }
        };
        let (mut core, outcome, exit) = runtime.block_on(async {
            match &cli.command {
                Command::Run(a) => {
                    let (core, end) = commands::run::run(core, a).await;
                    (core, end.outcome, end.exit)
                }
                Command::Destroy(a) => {
                    let (core, end) = commands::run::destroy(core, a).await;
                    (core, end.outcome, end.exit)
                }
                Command::LockObject(a) => {
                    let (core, end) = commands::run::lock_object(core, a).await;
                    (core, end.outcome, end.exit)
                }
                Command::Lock(LockCommand::Acquire(a)) => {
                    let (core, outcome) = commands::lock::acquire(core, a).await;
                    (core, outcome, None)
                }
                Command::Gc(a) => {
                    let (core, outcome) = commands::gc::run(core, a).await;
                    (core, outcome, None)
                }
                _ => unreachable!("only async commands get here"),
            }
        });
        return ExitCode::from(finish_with(Some(&mut core), Some(command), json, outcome, exit));
    }
    let outcome = match &cli.command {
        Command::Scope(a) => commands::scope::run(&mut core, a),
        Command::Write(a) => commands::write::run(&mut core, a),
        Command::Lock(LockCommand::Release(a)) => commands::lock::release(&mut core, a),
        Command::Lock(LockCommand::Status(a)) => commands::lock::status(&mut core, a),
        Command::Lock(LockCommand::Renew(a)) => commands::lock::renew(&mut core, a),
        Command::Lock(LockCommand::Break(a)) => commands::lock::break_lock(&mut core, a),
        Command::Ledger(LedgerCommand::Intend(a)) => commands::ledger::change(&mut core, a, "ledger-intend"),
        Command::Ledger(LedgerCommand::Record(a)) => commands::ledger::change(&mut core, a, "ledger-record"),
        Command::Ledger(LedgerCommand::Forget(a)) => commands::ledger::change(&mut core, a, "ledger-forget"),
        Command::Ledger(LedgerCommand::Check(a)) => commands::ledger::check(&mut core, a),
        Command::Ledger(LedgerCommand::List(a)) => commands::ledger::list(&mut core, a),
        Command::Receipt(ReceiptCommand::Show(a)) => commands::ledger::show(&mut core, a),
        Command::Receipt(ReceiptCommand::List(a)) => commands::ledger::list_receipts(&mut core, a),
        Command::Status(a) => commands::ledger::status(&mut core, a),
        Command::Run(_)
        | Command::Destroy(_)
        | Command::LockObject(_)
        | Command::Lock(LockCommand::Acquire(_))
        | Command::Gc(_) => {
            unreachable!("handled above")
        }
    };
    ExitCode::from(finish(Some(&mut core), Some(command), json, outcome))
}
