//! The lock transactions of a cell as one typed operation: what a lease asks its host to carry out, and
//! what a host answers.

use crate::cell::Cell;
use crate::error::CoreError;
use crate::lock::{self, Grant, LockRecord, LockView, Release};
use crate::time::UnixMs;
use serde::{Deserialize, Serialize};

/// One lock transaction on a cell snapshot. The host loads the cell, calls [`apply_lock_op`], commits the
/// answer's changes only if the cell is unchanged since the load, and reloads and asks again otherwise.
///
/// JSON: `{"op": "lock-acquire", "request": {...}}`, the `op` and `request` of a lease's store action.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(tag = "op", content = "request", rename_all = "kebab-case")]
pub enum LockOp {
    /// Take the lock if it is free or expired (a takeover); `LOCK_HELD` while another holder's is live,
    /// `LOCK_CORRUPT` for a `lock.json` baton cannot read.
    #[serde(rename_all = "camelCase")]
    LockAcquire {
        /// Who takes it.
        holder: String,
        /// How long it lasts unless renewed.
        ttl_ms: u64,
        /// How a refusal names the lock (default `env/scope`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[cfg_attr(feature = "ts", ts(optional))]
        label: Option<String>,
    },
    /// Extend the holder's lock at `epoch`; `LOCK_LOST` when it is no longer theirs.
    #[serde(rename_all = "camelCase")]
    LockRenew {
        /// The holder.
        holder: String,
        /// The epoch it was granted at.
        epoch: u64,
        /// The new TTL from now.
        ttl_ms: u64,
    },
    /// Remove the holder's lock (at `epoch`, when given). Never refuses: a lock that is not theirs stays.
    #[serde(rename_all = "camelCase")]
    LockRelease {
        /// The holder.
        holder: String,
        /// The epoch it was granted at; absent: whatever lock `holder` has.
        #[serde(default)]
        epoch: Option<u64>,
    },
    /// Read the lock (nothing to commit).
    LockRead {},
    /// Take the lock whatever holds it, on purpose (`baton lock break`).
    #[serde(rename_all = "camelCase")]
    LockBreak {
        /// Who takes it.
        holder: String,
        /// How long it lasts unless renewed.
        ttl_ms: u64,
        /// Why, recorded in the lock.
        reason: String,
    },
    /// Check that `holder` holds the lock at `epoch` (nothing to commit); `LOCK_LOST` otherwise.
    #[serde(rename_all = "camelCase")]
    FenceCheck {
        /// The holder.
        holder: String,
        /// The epoch its writes are fenced with.
        epoch: u64,
    },
    /// Write one data file of the cell, in the same commit as the fence check; `LOCK_LOST` (nothing
    /// written) unless `holder` holds the lock at `epoch`, `USAGE` for a name that is not a data file name.
    #[serde(rename_all = "camelCase")]
    FencedWrite {
        /// The holder.
        holder: String,
        /// The epoch its writes are fenced with.
        epoch: u64,
        /// The data file (see `cell::validate_data_file`).
        file: String,
        /// Its new content.
        content: String,
    },
}

/// What a [`LockOp`] decided. JSON: the answer of the matching `api::invoke` operation.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(untagged)]
pub enum LockAnswer {
    /// `lock-acquire`, `lock-renew`, `lock-break`, `fenced-write`: the lock as stored and the changes.
    Grant(Grant),
    /// `lock-release`.
    Release(Release),
    /// `lock-read`: the lock, if there is one.
    Read {
        /// The lock with its expiry judged at the read's `now`, or `null`.
        lock: Option<LockView>,
    },
    /// `fence-check`: the lock the write is fenced by.
    Fence {
        /// The lock.
        lock: LockRecord,
    },
}

impl LockAnswer {
    /// The answer to `op` that `value` spells (its JSON, as [`serde_json::to_value`] of an answer gives it):
    /// the operation says which kind it is. `INTERNAL` when it does not fit.
    pub fn from_json(op: &LockOp, value: serde_json::Value) -> Result<Self, CoreError> {
        let bad = |e: serde_json::Error| CoreError::internal(format!("invalid answer to a lock transaction: {e}"));
        #[derive(Deserialize)]
        struct Lock<T> {
            lock: T,
        }
        Ok(match op {
            LockOp::LockAcquire { .. }
            | LockOp::LockRenew { .. }
            | LockOp::LockBreak { .. }
            | LockOp::FencedWrite { .. } => Self::Grant(serde_json::from_value(value).map_err(bad)?),
            LockOp::LockRelease { .. } => Self::Release(serde_json::from_value(value).map_err(bad)?),
            LockOp::LockRead {} => Self::Read { lock: serde_json::from_value::<Lock<_>>(value).map_err(bad)?.lock },
            LockOp::FenceCheck { .. } => {
                Self::Fence { lock: serde_json::from_value::<Lock<_>>(value).map_err(bad)?.lock }
            }
        })
    }

    /// The changes to commit (none for a read or a fence check).
    pub fn changes(&self) -> &[crate::cell::Change] {
        match self {
            Self::Grant(g) => &g.changes,
            Self::Release(r) => &r.changes,
            Self::Read { .. } | Self::Fence { .. } => &[],
        }
    }
}

/// Decides `op` on the snapshot `cell` at wall-clock `now`. Pure; the host commits the changes.
pub fn apply_lock_op(cell: &Cell, now: UnixMs, op: &LockOp) -> Result<LockAnswer, CoreError> {
    Ok(match op {
        LockOp::LockAcquire { holder, ttl_ms, label } => {
            let labelled;
            let cell = match label {
                Some(l) => {
                    labelled = Cell { label: Some(l.clone()), ..cell.clone() };
                    &labelled
                }
                None => cell,
            };
            LockAnswer::Grant(lock::acquire(cell, holder, *ttl_ms, now)?)
        }
        LockOp::LockRenew { holder, epoch, ttl_ms } => {
            LockAnswer::Grant(lock::renew(cell, holder, *epoch, *ttl_ms, now)?)
        }
        LockOp::LockRelease { holder, epoch } => LockAnswer::Release(lock::release(cell, holder, *epoch)),
        LockOp::LockRead {} => LockAnswer::Read { lock: lock::read(cell, now)? },
        LockOp::LockBreak { holder, ttl_ms, reason } => {
            LockAnswer::Grant(lock::break_lock(cell, holder, *ttl_ms, now, reason)?)
        }
        LockOp::FenceCheck { holder, epoch } => LockAnswer::Fence { lock: lock::check_fence(cell, holder, *epoch)? },
        LockOp::FencedWrite { holder, epoch, file, content } => {
            LockAnswer::Grant(lock::fenced_write(cell, holder, *epoch, file, content)?)
        }
    })
}
