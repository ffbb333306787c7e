//! The typed surface against the machine and the JSON operations it stands for.

use super::*;
use crate::cell::Cell;
use crate::error::ErrorCode;
use crate::lease::{LeaseConfig, LeaseMachine};
use serde_json::json;

const NOW: i64 = 1_790_000_000_000;

fn lease(holder: &str) -> LeaseMachine {
    let mut cfg = LeaseConfig::new("preview", "pr-1", holder);
    cfg.ttl_ms = 9_000;
    LeaseMachine::new(cfg).unwrap()
}

/// Carries out every action of `m` on `cell` (as a host does) until none is left; the events seen.
fn drive(m: &mut LeaseMachine, cell: &mut Cell, mono: u64) -> Vec<LeaseEvent> {
    let mut events = Vec::new();
    while let Some(action) = lease_poll_action(m) {
        match action {
            LeaseAction::Store(StoreRequest { id, op, deadline_ms }) => {
                assert!(deadline_ms > mono);
                let outcome = apply_lock_op(cell, NOW + mono as i64, &op);
                if let Ok(answer) = &outcome {
                    cell.apply(answer.changes());
                }
                lease_store_result(m, id, outcome, mono).unwrap();
            }
            LeaseAction::Event { event } => events.push(event),
        }
    }
    events
}

#[test]
fn a_lease_runs_on_typed_actions_and_a_second_holder_gets_the_typed_refusal() {
    let mut cell = Cell { env: "preview".into(), scope: "pr-1".into(), ..Cell::default() };
    let mut a = lease("run-a");
    a.acquire(0).unwrap();
    let events = drive(&mut a, &mut cell, 0);
    let [LeaseEvent::Acquired { lock, epoch: 1, preempted: None, warning: None }] = events.as_slice() else {
        panic!("{events:?}")
    };
    assert_eq!(lock.holder, "run-a");
    assert_eq!(a.fencing_token(1), Some(1));

    let written = apply_lock_op(
        &cell,
        NOW,
        &LockOp::FencedWrite { holder: "run-a".into(), epoch: 1, file: "out.txt".into(), content: "x".into() },
    )
    .unwrap();
    cell.apply(written.changes());
    assert_eq!(cell.file("out.txt"), Some("x"));

    let mut b = lease("run-b");
    b.acquire(0).unwrap();
    let events = drive(&mut b, &mut cell, 0);
    let [LeaseEvent::AcquireFailed { error }] = events.as_slice() else { panic!("{events:?}") };
    assert_eq!(error.code, ErrorCode::LockHeld);
    let refused = apply_lock_op(
        &cell,
        NOW,
        &LockOp::FencedWrite { holder: "run-b".into(), epoch: 1, file: "out.txt".into(), content: "y".into() },
    )
    .unwrap_err();
    assert_eq!(refused.code, ErrorCode::LockLost);

    a.release(2);
    assert_eq!(drive(&mut a, &mut cell, 2), vec![LeaseEvent::Released { released: true }]);
    assert_eq!(cell.file("lock.json"), None);
}

#[test]
fn every_lock_op_answers_what_its_json_operation_answers() {
    let mut cell = Cell { env: "preview".into(), scope: "pr-1".into(), ..Cell::default() };
    let ops = [
        LockOp::LockAcquire { holder: "run-a".into(), ttl_ms: 5_000, label: Some("the lock".into()) },
        LockOp::LockRenew { holder: "run-a".into(), epoch: 1, ttl_ms: 6_000 },
        LockOp::LockRead {},
        LockOp::FenceCheck { holder: "run-a".into(), epoch: 1 },
        LockOp::FencedWrite { holder: "run-a".into(), epoch: 1, file: "f".into(), content: "c".into() },
        LockOp::FenceCheck { holder: "run-b".into(), epoch: 1 },
        LockOp::LockAcquire { holder: "run-b".into(), ttl_ms: 5_000, label: None },
        LockOp::LockRelease { holder: "run-a".into(), epoch: Some(1) },
        LockOp::LockBreak { holder: "run-c".into(), ttl_ms: 5_000, reason: "stuck".into() },
        LockOp::LockRelease { holder: "run-c".into(), epoch: None },
    ];
    for op in &ops {
        let json = serde_json::to_value(op).unwrap();
        let mut request = json["request"].clone();
        request["cell"] = serde_json::to_value(&cell).unwrap();
        request["nowMs"] = json!(NOW);
        let op_name = json["op"].as_str().unwrap();
        let via_json = crate::api::invoke(op_name, &request.to_string());
        let typed = apply_lock_op(&cell, NOW, op);
        match (&typed, via_json) {
            (Ok(answer), Ok(text)) => {
                let parsed: serde_json::Value = serde_json::from_str(&text).unwrap();
                assert_eq!(serde_json::to_value(answer).unwrap(), parsed, "{op_name}");
                cell.apply(answer.changes());
            }
            (Err(e), Err(j)) => assert_eq!(e, &j, "{op_name}"),
            (t, j) => panic!("{op_name}: typed {t:?}, JSON {j:?}"),
        }
    }
}

#[test]
fn a_store_request_spells_what_the_machine_always_spelled() {
    let mut m = lease("run-a");
    m.acquire(0).unwrap();
    let Some(LeaseAction::Store(request)) = lease_poll_action(&mut m) else { panic!() };
    let json = serde_json::to_value(LeaseAction::Store(request.clone())).unwrap();
    assert_eq!(
        json,
        json!({"type": "store", "id": 1, "op": "lock-acquire", "request": {"holder": "run-a", "ttlMs": 9_000}, "deadlineMs": 60_000})
    );
    assert_eq!(serde_json::from_value::<LeaseAction>(json).unwrap(), LeaseAction::Store(request));
}

#[test]
fn an_error_object_round_trips_and_an_unknown_code_is_internal() {
    let e = crate::error::CoreError::new(ErrorCode::LockHeld, "held").with("holder", "run-b");
    let back: crate::error::CoreError = serde_json::from_value(e.to_json()).unwrap();
    assert_eq!(back, e);
    let odd: crate::error::CoreError = serde_json::from_value(json!({"code": "NOPE", "message": "m"})).unwrap();
    assert_eq!((odd.code, odd.details["reportedCode"].clone()), (ErrorCode::Internal, json!("NOPE")));
}
