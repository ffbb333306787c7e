//! Unit tests of the lease machine: pacing, deadline, loss, waiting, release retries.

use super::*;
use crate::error::ErrorCode;
use serde_json::{Map, Value, json};

const TTL: u64 = 900;

fn machine(f: impl FnOnce(&mut LeaseConfig)) -> LeaseMachine {
    let mut cfg = LeaseConfig::new("preview", "pr-1", "run-a");
    cfg.ttl_ms = TTL;
    cfg.unique_holder = true;
    f(&mut cfg);
    LeaseMachine::new(cfg).unwrap()
}

/// A machine configured by `f` whose acquire (request 1, sent at t=0) is in flight.
fn acquiring(f: impl FnOnce(&mut LeaseConfig)) -> LeaseMachine {
    let mut m = machine(f);
    m.acquire(0).unwrap();
    drain(&mut m);
    m
}

fn drain(m: &mut LeaseMachine) -> Vec<Action> {
    std::iter::from_fn(|| m.poll_action()).collect()
}

fn store_ids(actions: &[Action]) -> Vec<(u64, &'static str)> {
    actions.iter().filter_map(|a| if let Action::Store { id, op, .. } = a { Some((*id, *op)) } else { None }).collect()
}

fn events(actions: &[Action]) -> Vec<LeaseEvent> {
    actions.iter().filter_map(|a| if let Action::Event { event } = a { Some(event.clone()) } else { None }).collect()
}

fn ok(lock_epoch: u64) -> StoreResult {
    StoreResult::Ok(
        json!({"lock": {"holder": "run-a", "epoch": lock_epoch, "expiresAt": "2026-10-10T12:15:00.000Z"}, "preempted": null}),
    )
}

fn err(code: &str) -> StoreResult {
    let mut m = Map::new();
    m.insert("code".into(), code.into());
    m.insert("message".into(), format!("{code} happened").into());
    if code == "LOCK_HELD" {
        m.insert("lock".into(), json!({"holder": "run-b", "expiresAt": "2026-10-10T12:15:00.000Z"}));
    }
    StoreResult::Error(m)
}

/// Acquires at t=0 with the acquire answered at `answered`.
fn held(answered: u64) -> LeaseMachine {
    let mut m = machine(|_| {});
    m.acquire(0).unwrap();
    assert_eq!(store_ids(&drain(&mut m)), vec![(1, "lock-acquire")]);
    m.handle_store_result(1, ok(1), answered).unwrap();
    m
}

#[test]
fn acquire_emits_one_request_and_then_acquired() {
    let mut m = held(10);
    let evs = events(&drain(&mut m));
    assert!(matches!(evs.as_slice(), [LeaseEvent::Acquired { epoch: 1, warning: None, .. }]), "{evs:?}");
    // Renewal TTL/3 after the acquire settled; deadline TTL - TTL/5 after it was sent.
    assert_eq!(m.poll_timeout(), Some(310));
    assert_eq!(m.fencing_token(100), Some(1));
}

#[test]
fn renewals_are_paced_and_never_two_in_flight() {
    let mut m = held(10);
    drain(&mut m);
    m.handle_timeout(310);
    assert_eq!(store_ids(&drain(&mut m)), vec![(2, "lock-renew")]);
    // A slow store: nothing else is sent however often the host wakes the machine.
    for t in [400, 500, 600, 700] {
        m.handle_timeout(t);
        assert!(store_ids(&drain(&mut m)).is_empty(), "a second request at {t}");
    }
    assert_eq!(m.poll_timeout(), Some(720), "only the deadline is pending while a renewal is in flight");
    m.handle_store_result(2, ok(1), 710).unwrap();
    assert!(matches!(events(&drain(&mut m)).as_slice(), [LeaseEvent::Renewed { .. }]));
    // Sent at 310: valid until 310 + 720; next renewal 300 after it settled.
    assert_eq!(m.poll_timeout(), Some(1010));
    assert_eq!(m.fencing_token(1029), Some(1));
    assert_eq!(m.fencing_token(1030), None);
}

#[test]
fn the_deadline_stops_the_holder_when_renewals_do_not_get_through() {
    let mut m = held(10);
    drain(&mut m);
    m.handle_timeout(310);
    drain(&mut m);
    m.handle_timeout(720);
    let evs = events(&drain(&mut m));
    let [LeaseEvent::MustStop { error, grace_ms: 90 }] = evs.as_slice() else { panic!("{evs:?}") };
    assert_eq!(error["code"], "LOCK_LOST");
    assert_eq!(m.fencing_token(720), None);
    m.handle_timeout(800);
    assert!(drain(&mut m).is_empty(), "must-stop is emitted once");
}

#[test]
fn renewal_errors_other_than_loss_are_retried_at_the_next_tick() {
    let mut m = held(0);
    drain(&mut m);
    m.handle_timeout(300);
    drain(&mut m);
    m.handle_store_result(2, err("STORE_CONTENDED"), 350).unwrap();
    assert!(matches!(events(&drain(&mut m)).as_slice(), [LeaseEvent::RenewFailed { .. }]));
    assert_eq!(m.poll_timeout(), Some(650));
    m.handle_timeout(650);
    assert_eq!(store_ids(&drain(&mut m)), vec![(3, "lock-renew")]);
}

#[test]
fn loss_stops_renewals_and_release_touches_nothing() {
    let mut m = held(0);
    drain(&mut m);
    m.handle_timeout(300);
    drain(&mut m);
    m.handle_store_result(2, err("LOCK_LOST"), 320).unwrap();
    assert!(matches!(events(&drain(&mut m)).as_slice(), [LeaseEvent::Lost { .. }]));
    assert_eq!(m.fencing_token(321), None);
    assert_eq!(m.poll_timeout(), None);
    m.release(400);
    let actions = drain(&mut m);
    assert!(store_ids(&actions).is_empty());
    assert_eq!(events(&actions), vec![LeaseEvent::Released { released: false }]);
    assert!(m.is_finished());
}

#[test]
fn release_waits_for_a_renewal_in_flight_then_retries_200_400_800() {
    let mut m = held(0);
    drain(&mut m);
    m.handle_timeout(300);
    drain(&mut m);
    m.release(310);
    assert!(store_ids(&drain(&mut m)).is_empty(), "no release while the renewal is in flight");
    m.handle_store_result(2, ok(1), 320).unwrap();
    let actions = drain(&mut m);
    assert_eq!(store_ids(&actions), vec![(3, "lock-release")]);
    let mut t = 320;
    for (id, delay) in [(3, 200), (4, 400), (5, 800)] {
        m.handle_store_result(id, err("STORE_PERMISSION"), t).unwrap();
        assert!(drain(&mut m).is_empty());
        assert_eq!(m.poll_timeout(), Some(t + delay));
        t += delay;
        m.handle_timeout(t);
        assert_eq!(store_ids(&drain(&mut m)), vec![(id + 1, "lock-release")]);
    }
    m.handle_store_result(6, err("STORE_PERMISSION"), t).unwrap();
    let evs = events(&drain(&mut m));
    let [LeaseEvent::ReleaseFailed { warning, .. }] = evs.as_slice() else { panic!("{evs:?}") };
    assert!(warning.contains("stays held until about 2026-10-10T12:15:00.000Z"), "{warning}");
    assert!(m.is_finished());
}

#[test]
fn waiting_polls_until_granted_and_reports_who_holds_it() {
    let mut m = machine(|c| {
        c.wait = true;
        c.poll_ms = 100;
        c.wait_timeout_ms = 1000;
    });
    m.acquire(0).unwrap();
    drain(&mut m);
    m.handle_store_result(1, err("LOCK_HELD"), 5).unwrap();
    let evs = events(&drain(&mut m));
    assert!(
        matches!(&evs[..], [LeaseEvent::Waiting { holder, waited_ms: 5, remaining_ms: 995, .. }] if holder == "run-b"),
        "{evs:?}"
    );
    assert_eq!(m.poll_timeout(), Some(105));
    m.handle_timeout(105);
    assert_eq!(store_ids(&drain(&mut m)), vec![(2, "lock-acquire")]);
    m.handle_store_result(2, ok(4), 110).unwrap();
    assert!(matches!(events(&drain(&mut m)).as_slice(), [LeaseEvent::Acquired { epoch: 4, .. }]));
}

#[test]
fn waiting_gives_up_at_the_wait_timeout() {
    let mut m = machine(|c| {
        c.wait = true;
        c.poll_ms = 400;
        c.wait_timeout_ms = 1000;
    });
    m.acquire(0).unwrap();
    let mut id = 1;
    let mut now = 0;
    loop {
        drain(&mut m);
        m.handle_store_result(id, err("LOCK_HELD"), now).unwrap();
        let actions = drain(&mut m);
        if let [LeaseEvent::AcquireFailed { error }] = events(&actions).as_slice() {
            assert_eq!(error["code"], "LOCK_HELD");
            assert!(error["message"].as_str().unwrap().contains("Gave up after waiting 1 s"));
            break;
        }
        now = m.poll_timeout().expect("polls again");
        assert!(now <= 1000, "never polls past the timeout");
        m.handle_timeout(now);
        id += 1;
    }
    assert_eq!(now, 1000, "the last attempt is at the timeout");
}

#[test]
fn without_wait_a_held_lock_fails_at_once() {
    let mut m = acquiring(|_| {});
    m.handle_store_result(1, err("LOCK_HELD"), 5).unwrap();
    assert!(matches!(events(&drain(&mut m)).as_slice(), [LeaseEvent::AcquireFailed { .. }]));
    assert!(m.is_finished());
}

#[test]
fn a_takeover_warns() {
    let mut m = acquiring(|_| {});
    let answer = json!({"lock": {"holder": "run-a", "epoch": 2}, "preempted": {"holder": "crashed", "acquiredAt": "2026-10-10T12:00:00.000Z"}});
    m.handle_store_result(1, StoreResult::Ok(answer), 5).unwrap();
    let evs = events(&drain(&mut m));
    let [LeaseEvent::Acquired { warning: Some(w), .. }] = evs.as_slice() else { panic!("{evs:?}") };
    assert_eq!(w, "Took over an expired lock held by crashed since 2026-10-10T12:00:00.000Z.");
}

#[test]
fn misuse_is_internal() {
    let mut m = held(0);
    assert_eq!(m.handle_store_result(7, ok(1), 1).unwrap_err().code, ErrorCode::Internal);
    assert_eq!(m.acquire(1).unwrap_err().code, ErrorCode::Internal);
    let _: Value = json!(null);
}

/// The request of the one store action in `actions`.
fn store_request(actions: &[Action]) -> (u64, &'static str, Value) {
    let found: Vec<_> = actions
        .iter()
        .filter_map(|a| {
            if let Action::Store { id, op, request, .. } = a { Some((*id, *op, request.clone())) } else { None }
        })
        .collect();
    assert_eq!(found.len(), 1, "one store request: {actions:?}");
    found[0].clone()
}

#[test]
fn an_acquire_whose_reply_was_lost_is_cleaned_up_before_failing() {
    // The store committed the grant but the reply was lost: the lock may be ours. The machine releases by
    // holder name (no epoch) before it reports the failure, instead of leaving the lock for a TTL.
    let mut m = acquiring(|_| {});
    m.handle_store_result(1, err("INTERNAL"), 5).unwrap();
    let actions = drain(&mut m);
    assert!(events(&actions).is_empty(), "no failure before the clean-up: {actions:?}");
    let (id, op, request) = store_request(&actions);
    assert_eq!((id, op), (2, "lock-release"));
    assert_eq!(request, json!({"holder": "run-a", "epoch": null}));
    assert_eq!(m.fencing_token(6), None, "never held");
    m.handle_store_result(2, StoreResult::Ok(json!({"released": true, "current": null})), 8).unwrap();
    match events(&drain(&mut m)).as_slice() {
        [LeaseEvent::AcquireFailed { error }] => {
            assert_eq!(error["code"], "INTERNAL");
            assert_eq!(error["releasedOwnLock"], true);
        }
        other => panic!("expected acquire-failed, got {other:?}"),
    }
    assert!(m.is_finished());
}

#[test]
fn a_refused_acquire_fails_at_once_without_a_clean_up() {
    for code in ["LOCK_HELD", "LOCK_CORRUPT", "USAGE", "STORE_CONTENDED", "STORE_PERMISSION", "STORE_REJECTED"] {
        let mut m = acquiring(|_| {});
        m.handle_store_result(1, err(code), 5).unwrap();
        let actions = drain(&mut m);
        assert!(store_ids(&actions).is_empty(), "{code}: nothing to clean up");
        assert!(matches!(events(&actions).as_slice(), [LeaseEvent::AcquireFailed { .. }]), "{code}");
        assert!(m.is_finished());
    }
}

#[test]
fn a_clean_up_that_keeps_failing_ends_with_the_acquire_error_and_a_warning() {
    let mut m = acquiring(|_| {});
    m.handle_store_result(1, err("INTERNAL"), 5).unwrap();
    let mut id = store_request(&drain(&mut m)).0;
    let mut now = 5;
    loop {
        m.handle_store_result(id, err("STORE_PERMISSION"), now).unwrap();
        let actions = drain(&mut m);
        if let [LeaseEvent::AcquireFailed { error }] = events(&actions).as_slice() {
            assert_eq!(error["code"], "INTERNAL", "the acquire's error, not the clean-up's");
            assert!(error["releaseWarning"].as_str().unwrap().contains("Could not release the lock"));
            break;
        }
        now = m.poll_timeout().expect("retries the clean-up");
        m.handle_timeout(now);
        id = store_request(&drain(&mut m)).0;
    }
    assert_eq!(now, 5 + 200 + 400 + 800, "the release retry schedule");
    assert!(m.is_finished());
}

#[test]
fn release_during_an_acquire_whose_reply_was_lost_cleans_up_and_ends_released() {
    let mut m = acquiring(|c| c.wait = true);
    m.release(2);
    m.handle_store_result(1, err("INTERNAL"), 5).unwrap();
    let (id, op, _) = store_request(&drain(&mut m));
    assert_eq!(op, "lock-release");
    m.handle_store_result(id, StoreResult::Ok(json!({"released": false, "current": null})), 8).unwrap();
    assert!(matches!(events(&drain(&mut m)).as_slice(), [LeaseEvent::Released { released: false }]));
}

#[test]
fn a_holder_named_by_people_is_never_released_by_name() {
    // Two leases may share a name people chose: releasing by name could end the other one's lock.
    let mut m = acquiring(|c| c.unique_holder = false);
    m.handle_store_result(1, err("INTERNAL"), 5).unwrap();
    let actions = drain(&mut m);
    assert!(store_ids(&actions).is_empty(), "no release by name: {actions:?}");
    assert!(matches!(events(&actions).as_slice(), [LeaseEvent::AcquireFailed { .. }]));
}

#[test]
fn release_called_during_the_clean_up_ends_with_released() {
    let mut m = acquiring(|_| {});
    m.handle_store_result(1, err("INTERNAL"), 5).unwrap();
    let (id, _, _) = store_request(&drain(&mut m));
    m.release(6);
    m.handle_store_result(id, StoreResult::Ok(json!({"released": true, "current": null})), 8).unwrap();
    assert!(matches!(events(&drain(&mut m)).as_slice(), [LeaseEvent::Released { released: true }]));
}

/// The deadlines of the store actions in `actions`.
fn deadlines(actions: &[Action]) -> Vec<u64> {
    actions
        .iter()
        .filter_map(|a| if let Action::Store { deadline_ms, .. } = a { Some(*deadline_ms) } else { None })
        .collect()
}

#[test]
fn every_store_request_has_a_deadline_within_the_budget_and_the_lease() {
    let mut m = machine(|c| c.store_budget_ms = Some(5_000));
    m.acquire(10).unwrap();
    assert_eq!(deadlines(&drain(&mut m)), vec![5_010], "acquire: one budget");
    m.handle_store_result(1, ok(1), 20).unwrap();
    drain(&mut m);
    // Held: valid until 0 + 900 - 180 = 730 (sent at 10: 730); host writes end half a margin later.
    assert_eq!(m.store_deadline(100), 820);
    // A renewal never outlives the holder's deadline.
    m.handle_timeout(320);
    assert_eq!(deadlines(&drain(&mut m)), vec![730]);
    m.handle_store_result(2, err("STORE_CONTENDED"), 730).unwrap();
    drain(&mut m);
    m.release(731);
    assert_eq!(deadlines(&drain(&mut m)), vec![5_731], "release: one budget from its start");
}

#[test]
fn release_retries_end_within_the_budget() {
    let mut m = machine(|c| c.store_budget_ms = Some(500));
    m.acquire(0).unwrap();
    drain(&mut m);
    m.handle_store_result(1, ok(1), 1).unwrap();
    drain(&mut m);
    m.release(2);
    drain(&mut m);
    // The first retry (200 ms later) still starts within the budget; the second (400 ms more) would not.
    m.handle_store_result(2, err("STORE_CONTENDED"), 100).unwrap();
    assert!(drain(&mut m).is_empty());
    m.handle_timeout(300);
    assert_eq!(store_ids(&drain(&mut m)), vec![(3, "lock-release")]);
    m.handle_store_result(3, err("STORE_CONTENDED"), 400).unwrap();
    let evs = events(&drain(&mut m));
    assert!(
        matches!(&evs[..], [LeaseEvent::ReleaseFailed { warning, .. }] if warning.contains("stays held until about")),
        "{evs:?}"
    );
    assert!(m.is_finished());
}
