//! A lease's actions and events as typed values, and the typed report of a store result.
//!
//! The lease machine ([`crate::lease`]) keeps its requests and events as JSON values internally; these
//! functions are the only place they cross to a host, so every binding sees the same types.

use super::lock_op::{LockAnswer, LockOp};
use crate::error::CoreError;
use crate::lease::{Action, LeaseMachine, Mono, StoreResult};
use crate::lock::LockRecord;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// What the host must do next for a lease.
#[allow(clippy::large_enum_variant)] // built one at a time and handed over at once
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum LeaseAction {
    /// Carry out one lock transaction on the lease's cell and report it with [`lease_store_result`].
    Store(StoreRequest),
    /// Something happened that the host reports or acts on.
    Event {
        /// The event.
        event: LeaseEvent,
    },
}

/// One lock transaction the lease needs, on its own cell (`env`/`scope` of its configuration).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct StoreRequest {
    /// Correlates the result.
    pub id: u64,
    /// The transaction.
    #[serde(flatten)]
    pub op: LockOp,
    /// The instant (host monotonic ms) by which the host must have given up: it kills what still runs and
    /// reports `STORE_CONTENDED`.
    pub deadline_ms: Mono,
}

/// The events of a lease (see [`crate::lease::LeaseEvent`], whose JSON spelling this is).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum LeaseEvent {
    /// The lock is ours; `warning` is set when an expired lock was taken over (`preempted`).
    Acquired {
        /// The lock as stored.
        lock: LockRecord,
        /// The epoch (fencing token).
        epoch: u64,
        /// The expired lock this grant replaced.
        preempted: Option<LockRecord>,
        /// "Took over an expired lock held by H since T." when `preempted` is set.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[cfg_attr(feature = "ts", ts(optional))]
        warning: Option<String>,
    },
    /// Waiting for another holder's lock; after every attempt that found it held.
    #[serde(rename_all = "camelCase")]
    Waiting {
        /// Who holds it.
        holder: String,
        /// Until when (their `expiresAt`).
        expires_at: String,
        /// How long this holder has waited so far.
        waited_ms: u64,
        /// How long it will still wait at most.
        remaining_ms: u64,
    },
    /// A renewal landed.
    Renewed {
        /// The lock as stored.
        lock: LockRecord,
    },
    /// A renewal failed for another reason than loss; the next one is scheduled as usual.
    RenewFailed {
        /// The store's error.
        #[cfg_attr(feature = "ts", ts(type = "CoreError"))]
        error: CoreError,
    },
    /// The store says another holder has the lock (or nobody does): stop at once, write nothing more.
    #[serde(rename_all = "camelCase")]
    Lost {
        /// The `LOCK_LOST` error.
        #[cfg_attr(feature = "ts", ts(type = "CoreError"))]
        error: CoreError,
        /// How long the host may let its work shut down before killing it.
        grace_ms: u64,
    },
    /// The holder's own deadline was reached: stop before the lock could be taken over.
    #[serde(rename_all = "camelCase")]
    MustStop {
        /// The `LOCK_LOST` error explaining why.
        #[cfg_attr(feature = "ts", ts(type = "CoreError"))]
        error: CoreError,
        /// How long the host may let its work shut down before killing it.
        grace_ms: u64,
    },
    /// The lease is over; whether the store removed a lock of ours.
    Released {
        /// Whether the store removed our lock.
        released: bool,
    },
    /// The release failed after every retry; the lock stays until it expires.
    ReleaseFailed {
        /// What to tell people.
        warning: String,
        /// The last error.
        #[cfg_attr(feature = "ts", ts(type = "CoreError"))]
        error: CoreError,
    },
    /// The lease could not be acquired (`LOCK_HELD` after the wait, `LOCK_CORRUPT`, a store failure).
    AcquireFailed {
        /// The error, to print with its code.
        #[cfg_attr(feature = "ts", ts(type = "CoreError"))]
        error: CoreError,
    },
}

/// The lease's next action, typed. Drain until `None` after every call into the machine.
///
/// The machine only produces actions of these shapes; should one ever fail to convert (a bug), it comes
/// out as an `acquire-failed` event with an `INTERNAL` error rather than a panic.
pub fn lease_poll_action(machine: &mut LeaseMachine) -> Option<LeaseAction> {
    machine.poll_action().map(|action| typed(action).unwrap_or_else(event_of_bug))
}

fn typed(action: Action) -> Result<LeaseAction, CoreError> {
    let bug = |e: serde_json::Error| CoreError::internal(format!("a lease action did not convert: {e}"));
    Ok(match action {
        Action::Store { id, op, request, deadline_ms } => {
            let op = serde_json::from_value(json!({ "op": op, "request": request })).map_err(bug)?;
            LeaseAction::Store(StoreRequest { id, op, deadline_ms })
        }
        Action::Event { event } => LeaseAction::Event { event: lease_event(event)? },
    })
}

/// A lease machine's event, typed (`INTERNAL` should one ever fail to convert: a bug).
pub(crate) fn lease_event(event: crate::lease::LeaseEvent) -> Result<LeaseEvent, CoreError> {
    let bug = |e: serde_json::Error| CoreError::internal(format!("a lease event did not convert: {e}"));
    serde_json::from_value(serde_json::to_value(event).map_err(bug)?).map_err(bug)
}

fn event_of_bug(error: CoreError) -> LeaseAction {
    LeaseAction::Event { event: LeaseEvent::AcquireFailed { error } }
}

/// Reports the outcome of the lease's store request `id`: the answer of the committed transaction, or
/// the error it was refused or failed with. An `id` not in flight is `INTERNAL`.
pub fn lease_store_result(
    machine: &mut LeaseMachine,
    id: u64,
    outcome: Result<LockAnswer, CoreError>,
    now: Mono,
) -> Result<(), CoreError> {
    let result = match outcome {
        Ok(answer) => StoreResult::Ok(serde_json::to_value(answer).unwrap_or(Value::Null)),
        Err(e) => StoreResult::from(&e),
    };
    machine.handle_store_result(id, result, now)
}
