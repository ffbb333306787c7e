//! The typed surface of the core: what the WIT interfaces `locks` and `leases` (`wit/locks.wit`,
//! `wit/lease.wit`) carry, as Rust types.
//!
//! Each binding converts these types to its own (the component to the canonical ABI, the npm module to
//! plain JS objects) and nothing else: the decisions are the same functions every host calls. The JSON
//! spelling of every type here is the one `api::invoke` reads and writes, so the JSON operations and the
//! typed ones cannot drift.

pub mod commands;
mod lease;
mod lock_op;
mod run;
pub mod stores;

pub use lease::{LeaseAction, LeaseEvent, StoreRequest, lease_poll_action, lease_store_result};
pub use lock_op::{LockAnswer, LockOp, apply_lock_op};
pub use run::{RunAction, StartWork, StoreAction, run_poll_action, verdict_error};

#[cfg(test)]
mod tests;
