//! Claims: exactly one owner per resource identity, even when two scopes create it at the same instant.
//!
//! A scope's ledger says what it owns, but reading the other scopes' ledgers and then writing one's own
//! intent are two transactions on different cells: two scopes could both pass the check. A **claim** is the
//! one place every scope's writer goes through: a cell per (environment, resource identity), environment
//! [`CLAIMS_ENV`], scope = 32 hex digits of `sha256(env "\n" identity)`, file [`CLAIM_FILE`], holding the
//! claiming scope, epoch and holder. It is taken by a compare-and-swap on that cell *before* the intent is
//! written, so of two scopes intending one identity, exactly one takes it and the other is refused with
//! `OWNED_BY_OTHER_SCOPE`, before it creates anything.
//!
//! The protocol of a ledger change is [`ChangeMachine`]'s (every host, and the simulation, drives it):
//! - `intend` and `record`: [`take`] on the claim cell, then the fenced `ledger-intend`/`ledger-record` on
//!   the run's own cell. [`take`] may answer a *need* instead of a decision: the listing of the
//!   environment's scopes (`others`), or [`facts`] read from the claiming scope's cell; the machine asks the
//!   host to read it and takes again (the same transaction, with the new input).
//! - `forget`: the fenced `ledger-forget`, then [`free`] (the claim goes when the scope's entry went).
//! - the handover: after the predecessor's receipt is rewritten, [`moved`] re-stamps each handed-over
//!   claim with the successor.
//! - adoption (relying on a foreign resource) claims nothing; destroy frees through `forget`.
//!
//! Who owns an identity (the rule [`take`] applies):
//! 1. Any *other* scope whose ledger lists it as owned or as an intent owns it (not the run's own
//!    predecessor, whose resources a pull request inherits). This derives ownership where no claim exists
//!    (stores written before claims, by the original tool) and covers a half-done handover. Two such scopes
//!    are a conflict for a person to resolve (`scope-status` reports it); it is never given to one of them.
//! 2. Else the claim's scope owns it while the claim is **live**: its ledger lists it, or its lock is still
//!    at the claim's epoch (the claimer may be about to write its intent: fencing checks the epoch, not the
//!    clock, so an expired lock at that epoch still lets its holder write).
//! 3. A claim whose scope's ledger lists nothing for it *and* whose lock has moved on (released, or taken
//!    at another epoch) is **stale**: the claimer died or gave up before its intent, and its epoch can never
//!    write again. It can be taken. A claim left by a crashed run is therefore freed when its scope's lock
//!    moves on: that scope's next run, or `baton lock break` on it.
//!
//! Why the rule cannot take a live claim: the taker reads the claimer's cell (receipt and lock in one
//! snapshot) and then compare-and-swaps the claim cell against the claim it judged. A claimer at epoch E
//! whose lock moved on can no longer write (fenced); a run of the claimer's scope at a later epoch must
//! itself re-stamp the claim before its intent, and the two compare-and-swaps cannot both succeed.

mod change;
mod machine;
mod record;
mod status;
mod step;
mod steps;
mod take;

pub use change::{ChangeAction, ChangeAnswer, ChangeConfig, ChangeOp, Load};
pub use machine::{ChangeMachine, MAX_ROUNDS};

pub use record::{
    CLAIM_FILE, CLAIM_VERSION, CLAIMS_ENV, ClaimRecord, ClaimState, FreeRecord, claim_cell, read_claim,
    read_claim_state,
};
pub use status::{Conflict, conflicts};
pub use take::{
    ClaimFacts, Freed, TakeAnswer, TakeNeed, TakeRequest, facts, free, free_typed, moved, take, take_typed,
};

#[cfg(test)]
mod machine_tests;
#[cfg(test)]
mod tests;
