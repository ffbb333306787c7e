//! A run, from approval to verdict: a sans-I/O state machine (quinn-proto style) that composes the lease
//! machine ([`crate::lease`]) and owns every decision of a run, so that every host (the CLI, Node, any
//! component host) runs the same ones.
//!
//! Method classes:
//! - commands: [`RunMachine::start`], [`RunMachine::work_ended`], [`RunMachine::signal`],
//!   [`RunMachine::finish`] and [`RunMachine::release`] (Node's manual mode);
//! - inputs: [`RunMachine::handle_timeout`], [`RunMachine::handle_store_result`] (the answer of a core
//!   operation the host ran), or the typed pair [`RunMachine::apply`] + [`RunMachine::handle_store_outcome`]
//!   (the machine decides, the host only loads and commits);
//! - outputs: [`RunMachine::poll_action`] ([`RunAction`]s), [`RunMachine::poll_timeout`];
//! - getters: [`RunMachine::holder`], [`RunMachine::fencing_token`], [`RunMachine::is_finished`].
//!
//! The host loop is the lease's: wait for the earliest of `poll_timeout()`, a store completion, the work
//! ending, or a signal; read the monotonic clock; make one call; drain `poll_action()`; repeat until `done`.
//! Actions are data: a cell transaction (`store`, on the run's own cell or the predecessor's), a read-only
//! transaction (`read`), `start-work` with the variables to export, `signal` for the work, `note` and
//! `warning` lines, `lease` events (for hosts that report them), `finished` (manual mode) and `done` with the
//! [`Verdict`]. Store requests of the run and of its lease may be in flight at the same time (the lease keeps
//! renewing while the run writes its receipts); each is its own transaction.
//!
//! What the machine decides, in order: approval before any lock ([`RunMachine::new`]); the holder's name
//! (from the host's randomness unless people chose one); the lease (acquire, wait, renew, must-stop, lost,
//! release, all [`crate::lease::LeaseMachine`]); the checkpoint receipt with the predecessor's receipt read
//! first (`run-begin`; a destroy's `destroy-plan`); the work's start; stopping the work (SIGTERM, then
//! SIGKILL after the grace) when the lease is lost or its deadline nears; cancellation; the final receipt
//! (`run-finish`: `complete`, `failed` or `cancelled`); the handover under the predecessor's lock after a
//! successful run; the release; the verdict.
//!
//! Guarantees:
//! - no lock is taken before approval, and no work starts before its checkpoint receipt landed;
//! - the lease is released only after the work ended (`work_ended`): never while the command may still run;
//! - cancellation is bounded: the work is killed `cancelGraceMs` (default 5 s) after the first cancel signal,
//!   then the receipt and the release follow (each store operation bounded by the store's own deadline);
//! - the verdict is decided once, from the facts, in [`verdict`]'s order.

mod action;
mod apply;
mod batch;
mod config;
mod machine;
mod steps;
mod verdict;

pub use action::{CellRef, HostSignal, RunAction, Verdict, WorkEnd, WorkSignal};
pub use config::{DEFAULT_CANCEL_GRACE_MS, Job, ObjectTarget, RunConfig};
pub use machine::RunMachine;
pub use verdict::unresolved_error;

#[cfg(test)]
mod tests;
