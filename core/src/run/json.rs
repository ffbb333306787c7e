//! The run machine's JSON surface for the bindings (the component's `run` resource, the npm module): the
//! configuration, store results and work ends come in as JSON text, actions go out as JSON text, so every
//! binding converts in exactly one place.

use super::{HostSignal, RunMachine, WorkEnd};
use crate::error::CoreError;
use crate::lease::StoreResult;

fn parse<T: serde::de::DeserializeOwned>(what: &str, text: &str) -> Result<T, CoreError> {
    serde_json::from_str(text).map_err(|e| CoreError::internal(format!("invalid {what}: {e}")))
}

/// Creates a run machine from its JSON configuration ([`super::RunConfig`]): `ENV_NOT_APPROVED` or `USAGE`
/// as [`RunMachine::new`], `INTERNAL` for JSON that does not parse.
pub fn run_new(config: &str) -> Result<RunMachine, CoreError> {
    RunMachine::new(parse("run configuration", config)?)
}

/// Feeds a store result given as JSON (`{"ok": answer}` or `{"error": {...}}`).
pub fn run_store_result(machine: &mut RunMachine, id: u64, result: &str, now: u64) -> Result<(), CoreError> {
    let result: StoreResult = parse("store result", result)?;
    machine.handle_store_result(id, result, now)
}

/// Reports the end of the work given as JSON ([`WorkEnd`]: `{"kind":"exited","code":0}`, ...).
pub fn run_work_ended(machine: &mut RunMachine, end: &str, now: u64) -> Result<(), CoreError> {
    let end: WorkEnd = parse("work end", end)?;
    machine.work_ended(end, now)
}

/// Reports a cancel signal by name (`interrupt`, `terminate`).
pub fn run_signal(machine: &mut RunMachine, signal: &str, now: u64) -> Result<(), CoreError> {
    let signal: HostSignal = parse("signal", &format!("{signal:?}"))?;
    machine.signal(signal, now);
    Ok(())
}

/// The next action as JSON.
pub fn run_poll_action(machine: &mut RunMachine) -> Option<String> {
    machine
        .poll_action()
        .map(|a| serde_json::to_string(&a).unwrap_or_else(|e| format!("{{\"serializeError\":{:?}}}", e.to_string())))
}
