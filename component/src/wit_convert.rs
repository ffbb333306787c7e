// Conversions between the core's types and generated WIT types, both ways. Nothing is decided here.
//
// This file is `include!`d where the generated types are in scope as `t` (interface `types`), `w` (`locks`)
// and `wl` (`leases`): by the component (wit-bindgen's types, `convert.rs`) and by the CLI's conformance
// test (wasmtime's `bindgen!` types, `host-native/tests/scenarios.rs`, which has the core crate; the CLI
// itself never links it). Both generators give the same names and shapes, so one text serves both.

use baton_core::typed::{LeaseAction, LeaseEvent, LockAnswer, LockOp, StoreRequest};
use baton_core::{CoreError, ErrorCode as Code};
use baton_core::{cell, lock};
use serde_json::{Map, Value};

pub fn code(c: Code) -> t::ErrorCode {
    match c {
        Code::LockHeld => t::ErrorCode::LockHeld,
        Code::LockLost => t::ErrorCode::LockLost,
        Code::LockCorrupt => t::ErrorCode::LockCorrupt,
        Code::OwnedByOtherScope => t::ErrorCode::OwnedByOtherScope,
        Code::EnvNotApproved => t::ErrorCode::EnvNotApproved,
        Code::CtxNull => t::ErrorCode::CtxNull,
        Code::Usage => t::ErrorCode::Usage,
        Code::StoreContended => t::ErrorCode::StoreContended,
        Code::StoreRejected => t::ErrorCode::StoreRejected,
        Code::StorePermission => t::ErrorCode::StorePermission,
        Code::ReceiptCorrupt => t::ErrorCode::ReceiptCorrupt,
        Code::ReceiptVersion => t::ErrorCode::ReceiptVersion,
        Code::IntentUnresolved => t::ErrorCode::IntentUnresolved,
        Code::CommandFailed => t::ErrorCode::CommandFailed,
        Code::Interrupted => t::ErrorCode::Interrupted,
        Code::Internal => t::ErrorCode::Internal,
        Code::RandomUnavailable => t::ErrorCode::RandomUnavailable,
    }
}

/// A core error with its fixed facts typed and every fact in `details`.
pub fn error(e: CoreError) -> t::Error {
    let text = |k: &str| e.details.get(k).and_then(Value::as_str).map(str::to_owned);
    let lock_at = |k: &str| {
        e.details.get(k).cloned().and_then(|v| serde_json::from_value::<lock::LockRecord>(v).ok()).map(lock_record)
    };
    t::Error {
        code: code(e.code),
        hint: e.code.hint().map(str::to_owned),
        lock: lock_at("lock"),
        current: lock_at("current"),
        holder: text("holder"),
        epoch: e.details.get("epoch").and_then(Value::as_u64),
        owner: text("owner"),
        environment: text("environment"),
        scope: text("scope"),
        json: e.to_json().to_string(),
        message: e.message,
    }
}

/// The core error a host reports: its `json` carries every fact (the typed fields repeat some of them); the
/// typed code and message win.
pub fn error_back(e: t::Error) -> CoreError {
    let mut obj = match serde_json::from_str::<Value>(&e.json) {
        Ok(Value::Object(obj)) => obj,
        _ => Map::new(),
    };
    obj.insert("code".into(), code_name(e.code).into());
    obj.insert("message".into(), e.message.into());
    CoreError::from_json(obj)
}

pub fn code_name(c: t::ErrorCode) -> &'static str {
    Code::ALL.into_iter().find(|k| code(*k) == c).map_or("INTERNAL", Code::as_str)
}

pub fn cell(c: t::Cell) -> cell::Cell {
    cell::Cell {
        env: c.env,
        scope: c.scope,
        files: c.files.into_iter().map(|f| (f.name, f.content)).collect(),
        label: c.label,
    }
}

pub fn change(c: cell::Change) -> t::Change {
    match c {
        cell::Change::Write { file, content } => t::Change::Write(t::CellFile { name: file, content }),
        cell::Change::Delete { file } => t::Change::Delete(file),
    }
}

pub fn change_back(c: t::Change) -> cell::Change {
    match c {
        t::Change::Write(f) => cell::Change::Write { file: f.name, content: f.content },
        t::Change::Delete(file) => cell::Change::Delete { file },
    }
}

pub fn lock_record(l: lock::LockRecord) -> t::LockRecord {
    t::LockRecord {
        holder: l.holder,
        acquired_at: l.acquired_at,
        expires_at: l.expires_at,
        epoch: l.epoch,
        extra: extra_text(l.extra),
    }
}

/// The unknown fields of a lock as JSON object text (open schema: kept on rewrite); `{}` without
/// serialising when there are none, as in nearly every lock.
fn extra_text(extra: Map<String, Value>) -> String {
    if extra.is_empty() { "{}".to_owned() } else { Value::Object(extra).to_string() }
}

pub fn lock_record_back(l: t::LockRecord) -> lock::LockRecord {
    let extra = match l.extra.as_str() {
        "" | "{}" => Map::new(),
        text => match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(obj)) => obj,
            _ => Map::new(),
        },
    };
    lock::LockRecord { holder: l.holder, acquired_at: l.acquired_at, expires_at: l.expires_at, epoch: l.epoch, extra }
}

pub fn lock_op(op: w::LockOp) -> LockOp {
    match op {
        w::LockOp::LockAcquire(r) => LockOp::LockAcquire { holder: r.holder, ttl_ms: r.ttl_ms, label: r.label },
        w::LockOp::LockRenew(r) => LockOp::LockRenew { holder: r.holder, epoch: r.epoch, ttl_ms: r.ttl_ms },
        w::LockOp::LockRelease(r) => LockOp::LockRelease { holder: r.holder, epoch: r.epoch },
        w::LockOp::LockRead => LockOp::LockRead {},
        w::LockOp::LockBreak(r) => LockOp::LockBreak { holder: r.holder, ttl_ms: r.ttl_ms, reason: r.reason },
        w::LockOp::FenceCheck(r) => LockOp::FenceCheck { holder: r.holder, epoch: r.epoch },
        w::LockOp::FencedWrite(r) => {
            LockOp::FencedWrite { holder: r.holder, epoch: r.epoch, file: r.file, content: r.content }
        }
    }
}

pub fn lock_op_out(op: LockOp) -> w::LockOp {
    match op {
        LockOp::LockAcquire { holder, ttl_ms, label } => w::LockOp::LockAcquire(w::AcquireRequest { holder, ttl_ms, label }),
        LockOp::LockRenew { holder, epoch, ttl_ms } => w::LockOp::LockRenew(w::RenewRequest { holder, epoch, ttl_ms }),
        LockOp::LockRelease { holder, epoch } => w::LockOp::LockRelease(w::ReleaseRequest { holder, epoch }),
        LockOp::LockRead {} => w::LockOp::LockRead,
        LockOp::LockBreak { holder, ttl_ms, reason } => {
            w::LockOp::LockBreak(w::BreakRequest { holder, ttl_ms, reason })
        }
        LockOp::FenceCheck { holder, epoch } => w::LockOp::FenceCheck(w::FenceRequest { holder, epoch }),
        LockOp::FencedWrite { holder, epoch, file, content } => {
            w::LockOp::FencedWrite(w::FencedWriteRequest { holder, epoch, file, content })
        }
    }
}

pub fn lock_answer(a: LockAnswer) -> w::LockAnswer {
    match a {
        LockAnswer::Grant(g) => w::LockAnswer::Grant(w::Grant {
            changes: g.changes.into_iter().map(change).collect(),
            lock: lock_record(g.lock),
            preempted: g.preempted.map(lock_record),
        }),
        LockAnswer::Release(r) => w::LockAnswer::Release(w::ReleaseOutcome {
            changes: r.changes.into_iter().map(change).collect(),
            released: r.released,
            current: r.current.map(lock_record),
        }),
        LockAnswer::Read { lock } => w::LockAnswer::Read(lock.map(|v| w::LockView {
            lock: lock_record(v.lock),
            expired: v.expired,
            expires_in_ms: v.expires_in_ms,
            expires_in: v.expires_in,
        })),
        LockAnswer::Fence { lock } => w::LockAnswer::Fence(lock_record(lock)),
    }
}

pub fn lock_answer_back(a: w::LockAnswer) -> LockAnswer {
    match a {
        w::LockAnswer::Grant(g) => LockAnswer::Grant(lock::Grant {
            changes: g.changes.into_iter().map(change_back).collect(),
            lock: lock_record_back(g.lock),
            preempted: g.preempted.map(lock_record_back),
        }),
        w::LockAnswer::Release(r) => LockAnswer::Release(lock::Release {
            changes: r.changes.into_iter().map(change_back).collect(),
            released: r.released,
            current: r.current.map(lock_record_back),
        }),
        w::LockAnswer::Read(view) => LockAnswer::Read {
            lock: view.map(|v| lock::LockView {
                lock: lock_record_back(v.lock),
                expired: v.expired,
                expires_in_ms: v.expires_in_ms,
                expires_in: v.expires_in,
            }),
        },
        w::LockAnswer::Fence(l) => LockAnswer::Fence { lock: lock_record_back(l) },
    }
}

pub fn lease_config(c: wl::LeaseConfig) -> baton_core::lease::LeaseConfig {
    let mut cfg = baton_core::lease::LeaseConfig::new(&c.env, &c.scope, &c.holder);
    cfg.label = c.label;
    cfg.ttl_ms = c.ttl_ms.unwrap_or(cfg.ttl_ms);
    cfg.margin_ms = c.margin_ms;
    cfg.renew_every_ms = c.renew_every_ms;
    cfg.wait = c.wait;
    cfg.wait_timeout_ms = c.wait_timeout_ms.unwrap_or(cfg.wait_timeout_ms);
    cfg.poll_ms = c.poll_ms.unwrap_or(cfg.poll_ms);
    cfg.unique_holder = c.unique_holder;
    cfg.store_budget_ms = c.store_budget_ms;
    cfg
}

pub fn lease_action(a: LeaseAction) -> wl::LeaseAction {
    match a {
        LeaseAction::Store(StoreRequest { id, op, deadline_ms }) => {
            wl::LeaseAction::Store(wl::StoreRequest { id, op: lock_op_out(op), deadline_ms })
        }
        LeaseAction::Event { event } => wl::LeaseAction::Event(lease_event(event)),
    }
}

pub fn lease_event(e: LeaseEvent) -> wl::LeaseEvent {
    match e {
        LeaseEvent::Acquired { lock, epoch, preempted, warning } => wl::LeaseEvent::Acquired(wl::Acquired {
            lock: lock_record(lock),
            epoch,
            preempted: preempted.map(lock_record),
            warning,
        }),
        LeaseEvent::Waiting { holder, expires_at, waited_ms, remaining_ms } => {
            wl::LeaseEvent::Waiting(wl::Waiting { holder, expires_at, waited_ms, remaining_ms })
        }
        LeaseEvent::Renewed { lock } => wl::LeaseEvent::Renewed(lock_record(lock)),
        LeaseEvent::RenewFailed { error: e } => wl::LeaseEvent::RenewFailed(error(e)),
        LeaseEvent::Lost { error: e, grace_ms } => wl::LeaseEvent::Lost(wl::Stop { error: error(e), grace_ms }),
        LeaseEvent::MustStop { error: e, grace_ms } => {
            wl::LeaseEvent::MustStop(wl::Stop { error: error(e), grace_ms })
        }
        LeaseEvent::Released { released } => wl::LeaseEvent::Released(released),
        LeaseEvent::ReleaseFailed { warning, error: e } => {
            wl::LeaseEvent::ReleaseFailed(wl::ReleaseFailure { warning, error: error(e) })
        }
        LeaseEvent::AcquireFailed { error: e } => wl::LeaseEvent::AcquireFailed(error(e)),
    }
}

pub fn cell_out(c: cell::Cell) -> t::Cell {
    t::Cell {
        env: c.env,
        scope: c.scope,
        files: c.files.into_iter().map(|(name, content)| t::CellFile { name, content }).collect(),
        label: c.label,
    }
}

pub fn lease_config_out(c: baton_core::lease::LeaseConfig) -> wl::LeaseConfig {
    wl::LeaseConfig {
        env: c.env,
        scope: c.scope,
        holder: c.holder,
        label: c.label,
        ttl_ms: Some(c.ttl_ms),
        margin_ms: c.margin_ms,
        renew_every_ms: c.renew_every_ms,
        wait: c.wait,
        wait_timeout_ms: Some(c.wait_timeout_ms),
        poll_ms: Some(c.poll_ms),
        unique_holder: c.unique_holder,
        store_budget_ms: c.store_budget_ms,
    }
}

pub fn lease_action_back(a: wl::LeaseAction) -> LeaseAction {
    match a {
        wl::LeaseAction::Store(r) => {
            LeaseAction::Store(StoreRequest { id: r.id, op: lock_op(r.op), deadline_ms: r.deadline_ms })
        }
        wl::LeaseAction::Event(e) => LeaseAction::Event { event: lease_event_back(e) },
    }
}

pub fn lease_event_back(e: wl::LeaseEvent) -> LeaseEvent {
    match e {
        wl::LeaseEvent::Acquired(a) => LeaseEvent::Acquired {
            lock: lock_record_back(a.lock),
            epoch: a.epoch,
            preempted: a.preempted.map(lock_record_back),
            warning: a.warning,
        },
        wl::LeaseEvent::Waiting(w) => LeaseEvent::Waiting {
            holder: w.holder,
            expires_at: w.expires_at,
            waited_ms: w.waited_ms,
            remaining_ms: w.remaining_ms,
        },
        wl::LeaseEvent::Renewed(lock) => LeaseEvent::Renewed { lock: lock_record_back(lock) },
        wl::LeaseEvent::RenewFailed(e) => LeaseEvent::RenewFailed { error: error_back(e) },
        wl::LeaseEvent::Lost(s) => LeaseEvent::Lost { error: error_back(s.error), grace_ms: s.grace_ms },
        wl::LeaseEvent::MustStop(s) => LeaseEvent::MustStop { error: error_back(s.error), grace_ms: s.grace_ms },
        wl::LeaseEvent::Released(released) => LeaseEvent::Released { released },
        wl::LeaseEvent::ReleaseFailed(f) => LeaseEvent::ReleaseFailed { warning: f.warning, error: error_back(f.error) },
        wl::LeaseEvent::AcquireFailed(e) => LeaseEvent::AcquireFailed { error: error_back(e) },
    }
}
