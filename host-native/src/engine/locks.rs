//! The typed `locks` interface for the CLI's lock commands: one decision on a snapshot, and the JSON the
//! envelope shows of its answer (the core's own spelling of a lock, byte for byte).

use super::bindings::exports::baton::core::locks as wl;
use super::{CoreComponent, cell_of, from_wit};
use crate::engine::{change_json, wit};
use crate::error::HostError;
use serde_json::{Map, Value, json};

impl CoreComponent {
    /// Decides lock transaction `op` on the snapshot `cell` (as a store loads it) at wall-clock `now_ms`; a
    /// refusal is the core's error.
    pub fn lock_decide(&mut self, cell: &Value, now_ms: i64, op: &wl::LockOp) -> Result<wl::LockAnswer, HostError> {
        self.lock_apply(&cell_of(cell), now_ms, op)?.map_err(from_wit)
    }
}

/// A store's answer committing `changes`.
pub fn changes_answer(changes: &[wit::types::Change]) -> Value {
    json!({ "changes": changes.iter().map(change_json).collect::<Vec<_>>() })
}

/// A lock record as `lock.json` spells it: `holder`, `acquiredAt`, `expiresAt`, `epoch`, then the fields
/// this version does not know, as they were.
pub fn lock_json(lock: &wit::types::LockRecord) -> Value {
    let mut obj = Map::new();
    obj.insert("holder".into(), lock.holder.clone().into());
    if let Some(at) = &lock.acquired_at {
        obj.insert("acquiredAt".into(), at.clone().into());
    }
    obj.insert("expiresAt".into(), lock.expires_at.clone().into());
    obj.insert("epoch".into(), lock.epoch.into());
    if let Ok(Value::Object(extra)) = serde_json::from_str::<Value>(&lock.extra) {
        obj.extend(extra);
    }
    Value::Object(obj)
}

/// [`lock_json`] of an optional lock (`null` for none).
pub fn lock_json_or_null(lock: Option<&wit::types::LockRecord>) -> Value {
    lock.map_or(Value::Null, lock_json)
}

/// A lock as a read reports it: the record with `expired`, `expiresInMs` and `expiresIn`.
pub fn lock_view_json(view: &wl::LockView) -> Value {
    let mut v = lock_json(&view.lock);
    if let Some(obj) = v.as_object_mut() {
        obj.insert("expired".into(), view.expired.into());
        obj.insert("expiresInMs".into(), view.expires_in_ms.into());
        obj.insert("expiresIn".into(), view.expires_in.clone().into());
    }
    v
}

/// A lock answer in the core's JSON spelling (`{changes, lock, preempted}`, `{changes, released, current}`,
/// `{lock}`), for callers that hand it to a store or print it.
pub fn lock_answer_json(answer: &wl::LockAnswer) -> Value {
    let changes = |c: &[wit::types::Change]| Value::Array(c.iter().map(change_json).collect());
    match answer {
        wl::LockAnswer::Grant(g) => json!({ "changes": changes(&g.changes), "lock": lock_json(&g.lock),
                                            "preempted": lock_json_or_null(g.preempted.as_ref()) }),
        wl::LockAnswer::Release(r) => json!({ "changes": changes(&r.changes), "released": r.released,
                                              "current": lock_json_or_null(r.current.as_ref()) }),
        wl::LockAnswer::Read(view) => json!({ "lock": view.as_ref().map_or(Value::Null, lock_view_json) }),
        wl::LockAnswer::Fence(lock) => json!({ "lock": lock_json(lock) }),
    }
}

/// `lock-acquire` for `holder` with `ttl_ms`.
pub fn acquire_op(holder: &str, ttl_ms: u64) -> wl::LockOp {
    wl::LockOp::LockAcquire(wl::AcquireRequest { holder: holder.to_owned(), ttl_ms, label: None })
}

/// `lock-release` of `holder`'s lock (at `epoch`, or whatever epoch it has).
pub fn release_op(holder: &str, epoch: Option<u64>) -> wl::LockOp {
    wl::LockOp::LockRelease(wl::ReleaseRequest { holder: holder.to_owned(), epoch })
}
