//! `scope-status`: what `baton status` and `baton ledger list` show about a scope, as a typed answer.

use super::ops::pending_handover;
use super::scopes::{OtherScope, foreign_map};
use crate::cell::Cell;
use crate::claims::Conflict;
use crate::error::CoreError;
use crate::lock::{LockRecord, parse_lock};
use crate::receipt::{LedgerEntry, ResourceRef, read_receipt};
use crate::time::UnixMs;
use serde::Serialize;
use serde_json::{Value, json};

/// The scope's lock as the status shows it: the record and whether it had expired.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StatusLock {
    /// The record.
    #[serde(flatten)]
    pub lock: LockRecord,
    /// Whether it had expired at the status's `now`.
    pub expired: bool,
}

/// Whether a run holds the scope's lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LockState {
    /// No lock.
    None,
    /// A lock that expired: nobody is running.
    Expired,
    /// A live lock: a run is active.
    Live,
}

/// The answer of `scope-status`.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ScopeStatus {
    /// The lock, if the cell has one.
    pub lock: Option<StatusLock>,
    /// Live, expired or none.
    pub lock_state: LockState,
    /// The receipt's summary: `{runId, status, finishedAt, epoch, supersededBy, inProgress}` as the
    /// receipt has them (open by design: a receipt's fields are its writer's).
    pub receipt: Option<Value>,
    /// What the scope owns (and its intents).
    pub owns: Vec<ResourceRef>,
    /// What it inherited and its predecessor still lists (the handover is pending).
    pub inherited: Vec<ResourceRef>,
    /// The predecessor the status was asked with.
    pub predecessor: Option<String>,
    /// Whether the predecessor still lists what this scope inherited.
    pub handover_pending: bool,
    /// How many resources other scopes of the environment own.
    pub foreign_count: usize,
    /// Resources this scope and others both list.
    pub conflicts: Vec<Conflict>,
    /// For people: an active run, conflicts.
    pub warnings: Vec<String>,
}

/// `scope-status`: the lock (live, expired or none), what the scope owns, what it inherited, how many
/// foreign resources its environment has, and a warning only when a live lock means a run is active.
/// `LOCK_CORRUPT`, `RECEIPT_CORRUPT`, `RECEIPT_VERSION` for files it cannot read.
pub fn status(
    cell: &Cell,
    now: UnixMs,
    others: &[OtherScope],
    predecessor: Option<&str>,
) -> Result<ScopeStatus, CoreError> {
    let lock: Option<LockRecord> = parse_lock(cell)?;
    let receipt = read_receipt(cell)?;
    let ledger = receipt.as_ref().map(|r| r.ledger.clone()).unwrap_or_default();
    // Inherited = still listed by the predecessor (the handover is pending); after the handover it is owned.
    let pending = pending_handover(predecessor, others);
    let (inherited, own): (Vec<&LedgerEntry>, Vec<&LedgerEntry>) =
        ledger.iter().partition(|e| e.extra.contains_key("inheritedFrom") && pending.contains(&e.identity()));
    let refs = |v: &[&LedgerEntry]| v.iter().map(|e| e.to_ref()).collect::<Vec<_>>();
    let mut warnings = Vec::new();
    let lock_state = match &lock {
        None => LockState::None,
        Some(l) if l.expired(now) => LockState::Expired,
        Some(l) => {
            warnings.push(format!("A run ({}) is active on this scope; what it owns may change.", l.holder));
            LockState::Live
        }
    };
    let conflicts = crate::claims::conflicts(&cell.scope, receipt.as_ref(), others, predecessor);
    for c in &conflicts {
        warnings.push(format!(
            "Conflict: {} `{}` is listed as owned by this scope and by {}. Two scopes cannot both own it: decide which one does, and `baton ledger forget` it in the other.",
            c.resource.adapter,
            c.resource.key,
            c.scopes.iter().map(|s| format!("`{s}`")).collect::<Vec<_>>().join(", ")
        ));
    }
    Ok(ScopeStatus {
        lock: lock.map(|l| StatusLock { expired: l.expired(now), lock: l }),
        lock_state,
        receipt: receipt.as_ref().map(|r| {
            json!({
                "runId": r.str("runId"), "status": r.str("status"), "finishedAt": r.str("finishedAt"),
                "epoch": r.doc.get("epoch"), "supersededBy": r.doc.get("supersededBy"), "inProgress": r.doc.get("inProgress"),
            })
        }),
        owns: refs(&own),
        inherited: refs(&inherited),
        predecessor: predecessor.map(str::to_owned),
        handover_pending: !pending.is_empty(),
        foreign_count: foreign_map(&cell.scope, predecessor, others).len(),
        conflicts,
        warnings,
    })
}
