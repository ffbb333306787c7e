//! The steps of an ownership change ([`super::ChangeMachine`]) and what each decided: shared by the machine
//! and the decisions of its steps (`steps.rs`).

use super::change::ChangeAnswer;
use super::take::{ClaimFacts, TakeNeed};

/// What is in flight.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Step {
    /// The take on the claim cell.
    Take,
    /// The listing a take needs.
    TakeList,
    /// The claimer's facts a take needs, read on its cell.
    TakeFacts { scope: String, claim_epoch: u64, pending: Option<String> },
    /// The fenced ledger write on the run's cell.
    Write,
    /// `claim-free` on the claim cell: after a forget, or giving back (`give_back`).
    Free { give_back: bool },
    /// The give-back's look at the run's own receipt: did the refused write land after all?
    OwnFacts,
    /// The listing a check judges on.
    CheckList,
    /// The ledger check on the run's cell.
    Check,
}

/// What a step decided, from [`super::ChangeMachine::apply`] or a JSON answer.
#[derive(Clone, Debug)]
pub(crate) enum Settled {
    Take(Result<&'static str, TakeNeed>),
    Facts(ClaimFacts),
    Freed,
    /// A ledger write or check: the answer's fields.
    Answer(ChangeAnswer),
}
