//! The typed store loop: the machine makes the decision of its own store and read actions, so a host never
//! names a core operation. The host loads the cell an action names, calls [`RunMachine::apply`] with the
//! snapshot (again after a compare-and-swap conflict, with the fresh one), commits the changes it returns
//! (none for a read), and reports the outcome with [`RunMachine::handle_store_outcome`].

use super::machine::InFlight;
use super::{CellRef, RunAction, RunMachine};
use crate::cell::{Cell, Change};
use crate::error::CoreError;
use crate::lease::{Mono, StoreResult};
use crate::time::UnixMs;
use serde_json::Value;

impl RunMachine {
    /// The next action, for hosts on the typed loop ([`Self::apply`]): like [`Self::poll_action`], but the
    /// machine keeps what a store or read action's decision needs (its operation and request) and the action
    /// comes out without it (`request` is `null`), so nothing is copied and the host cannot name an
    /// operation. Use one of the two polls for the whole run.
    pub fn poll_action_for_apply(&mut self) -> Option<RunAction> {
        let mut action = self.poll_action()?;
        let (id, cell, op, request) = match &mut action {
            RunAction::Store { id, cell, op, request, .. } => (*id, cell.clone(), *op, request),
            RunAction::Read { id, cell, op, request, .. } => (*id, Some(cell.clone()), *op, request),
            _ => return Some(action),
        };
        let cell = cell.unwrap_or_else(|| CellRef { env: self.env().to_owned(), scope: self.scope().to_owned() });
        let request = std::mem::take(request);
        self.in_flight.insert(id, InFlight { cell, op, request, answer: None });
        Some(action)
    }

    /// What store or read action `id` (polled with [`Self::poll_action_for_apply`], not yet reported) will
    /// decide: the core operation and its request, without `cell` and `nowMs`. For logs and the conformance
    /// tests; a host never needs it to carry the action out.
    #[must_use]
    pub fn describe(&self, id: u64) -> Option<(&'static str, &Value)> {
        self.in_flight.get(&id).map(|f| (f.op, &f.request))
    }

    /// The decision of store or read action `id` on `cell`, the snapshot of the action's cell the host just
    /// loaded, at wall-clock `now_ms`: the changes to commit in the same compare-and-swap (none for a read).
    /// Call it again with the fresh snapshot when the commit conflicts; the latest answer counts.
    ///
    /// A refusal (`LOCK_HELD`, `LOCK_LOST`, ...) is an `Err`: the host commits nothing and reports that very
    /// error with [`Self::handle_store_outcome`]. `INTERNAL` for an id that is not in flight or a snapshot
    /// of another cell (a host bug). `decide` runs a core operation on its JSON request
    /// (`crate::api::invoke`, which hosts reach through `crate::api::run_apply`).
    pub fn apply(
        &mut self,
        id: u64,
        cell: &Cell,
        now_ms: UnixMs,
        decide: impl Fn(&str, &str) -> Result<String, CoreError>,
    ) -> Result<Vec<Change>, CoreError> {
        let Some(flight) = self.in_flight.get_mut(&id) else {
            return Err(CoreError::internal(format!(
                "apply for request {id}, which is not in flight (poll with `poll_action_for_apply`)"
            )));
        };
        if cell.env != flight.cell.env || cell.scope != flight.cell.scope {
            return Err(CoreError::internal(format!(
                "apply for request {id} on {}/{}, but it is a transaction of {}/{}",
                cell.env, cell.scope, flight.cell.env, flight.cell.scope
            )));
        }
        let text = decide(flight.op, &crate::cell_steps::request_text(&flight.request, cell, now_ms)?)?;
        let mut answer: Value = serde_json::from_str(&text)
            .map_err(|e| CoreError::internal(format!("`{}` answered invalid JSON: {e}", flight.op)))?;
        // The changes go to the host; the machine reads the rest of the answer.
        let changes = match answer.as_object_mut().and_then(|a| a.remove("changes")) {
            Some(c) => serde_json::from_value(c)
                .map_err(|e| CoreError::internal(format!("`{}` answered invalid changes: {e}", flight.op)))?,
            None => Vec::new(),
        };
        flight.answer = Some(answer);
        Ok(changes)
    }

    /// Reports how store or read action `id` ended: `Ok` once the changes of the latest
    /// [`Self::apply`] committed (or the read was made), or the error (the refusal `apply` returned, or the
    /// store's own: `STORE_CONTENDED`, `STORE_PERMISSION`, ...). `INTERNAL` for an `Ok` without an `apply`.
    pub fn handle_store_outcome(
        &mut self,
        id: u64,
        outcome: Result<(), CoreError>,
        now: Mono,
    ) -> Result<(), CoreError> {
        let answer = self.in_flight.get_mut(&id).and_then(|f| f.answer.take());
        let result = match (outcome, answer) {
            (Ok(()), Some(answer)) => StoreResult::Ok(answer),
            (Ok(()), None) => {
                StoreResult::from(&CoreError::internal(format!("store outcome for request {id} without its apply")))
            }
            (Err(e), _) => StoreResult::from(&e),
        };
        self.handle_store_result(id, result, now)
    }
}
