//! A run's actions as typed values, for hosts on the typed store loop (the WIT `runs.run` resource).
//!
//! The host never sees a core operation: a store or read action names only its cell and deadline; the host
//! loads the cell, asks the machine for the changes ([`crate::run::RunMachine::apply`]), commits them and
//! reports the outcome ([`crate::run::RunMachine::handle_store_outcome`]).

use super::lease::{LeaseEvent, lease_event};
use crate::error::CoreError;
use crate::lease::Mono;
use crate::run::{RunAction as MachineAction, RunMachine, Verdict, WorkSignal};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// What the host must do next for a run. Drain [`run_poll_action`] after every call into the machine.
#[derive(Clone, Debug, PartialEq)]
pub enum RunAction {
    /// Load a cell and decide on it with `apply` (see [`StoreAction`]).
    Store(StoreAction),
    /// Start the work with these variables exported; report its end with `work_ended`.
    StartWork(StartWork),
    /// Send the work a signal.
    Signal(WorkSignal),
    /// A progress line for people (stderr).
    Note(String),
    /// A warning for people (stderr); also in the verdict's `warnings`.
    Warning(String),
    /// A lease event, for hosts that report them.
    Lease(LeaseEvent),
    /// Manual mode: the final receipt landed (and the handover ran); the lease is still held. The
    /// run-finish facts (`status`, `unresolved`, `receipt`, `handedOver`, `warnings`).
    Finished(Map<String, Value>),
    /// The run is over; nothing else follows.
    Done(Verdict),
}

/// One transaction on a cell: load `env`/`scope` (without creating anything when `read`), call `apply`
/// with the snapshot (again with the fresh one after a compare-and-swap conflict), commit the changes (none
/// for a read), report the outcome with the same `id`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoreAction {
    /// Correlates `apply` and the outcome.
    pub id: u64,
    /// The cell's environment.
    pub env: String,
    /// The cell's scope.
    pub scope: String,
    /// A read-only look: a cell that does not exist is empty, and nothing is committed.
    pub read: bool,
    /// The instant (host monotonic ms) by which the host gives up: it kills what still runs and reports
    /// `STORE_CONTENDED`.
    pub deadline_ms: Mono,
}

/// The work to start.
#[derive(Clone, Debug, PartialEq)]
pub struct StartWork {
    /// `BATON_ENV`, `BATON_SCOPE`, `BATON_HOLDER`, `BATON_EPOCH` (the host adds `BATON_STORE`).
    pub env: BTreeMap<String, String>,
    /// The epoch the work's fenced writes use.
    pub epoch: u64,
    /// For a destroy: the ledger entries to delete, newest first.
    pub delete: Option<Vec<Value>>,
    /// How to name what is locked, for the host's "running ..." line.
    pub label: String,
}

/// The run's next action on the typed loop ([`RunMachine::poll_action_for_apply`]), typed. A lease event
/// that does not convert (a bug) comes out as a note saying so, never a panic.
pub fn run_poll_action(machine: &mut RunMachine) -> Option<RunAction> {
    let (env, scope) = (machine.env().to_owned(), machine.scope().to_owned());
    Some(match machine.poll_action_for_apply()? {
        MachineAction::Store { id, cell, deadline_ms, .. } => {
            let (env, scope) = cell.map_or((env, scope), |c| (c.env, c.scope));
            RunAction::Store(StoreAction { id, env, scope, read: false, deadline_ms })
        }
        MachineAction::Read { id, cell, deadline_ms, .. } => {
            RunAction::Store(StoreAction { id, env: cell.env, scope: cell.scope, read: true, deadline_ms })
        }
        MachineAction::StartWork { env, epoch, delete, label } => {
            RunAction::StartWork(StartWork { env, epoch, delete, label })
        }
        MachineAction::Signal { signal } => RunAction::Signal(signal),
        MachineAction::Note { text } => RunAction::Note(text),
        MachineAction::Warning { text } => RunAction::Warning(text),
        MachineAction::Lease { event } => match lease_event(event) {
            Ok(event) => RunAction::Lease(event),
            Err(e) => RunAction::Note(e.message),
        },
        MachineAction::Finished { outcome } => RunAction::Finished(outcome),
        MachineAction::Done { verdict } => RunAction::Done(verdict),
    })
}

/// The error of a verdict, as the core error it was made from.
pub fn verdict_error(verdict: &Verdict) -> Option<CoreError> {
    match &verdict.error {
        Some(Value::Object(obj)) => Some(CoreError::from_json(obj.clone())),
        Some(_) => Some(CoreError::internal("the run's verdict carries an error that is not an object")),
        None => None,
    }
}
