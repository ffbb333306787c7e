//! Unit tests of the ownership change machine, driven as a host drives it, on cells in memory: each rule of
//! the protocol (a need answered, a stale listing refused, the give-back, the round limit, the free after a
//! forget) and the JSON path giving the same store as the typed one.

use super::*;
use crate::cell::{Cell, Change};
use crate::error::{CoreError, ErrorCode};
use crate::ownership::OtherScope;
use serde_json::{Value, json};
use std::collections::BTreeMap;

const NOW: i64 = 1_791_633_600_000;

/// Cells in memory, with a hook run before each load (another writer getting in between).
#[derive(Default)]
struct Store {
    cells: BTreeMap<(String, String), Cell>,
    log: Vec<String>,
}

impl Store {
    fn cell(&mut self, env: &str, scope: &str) -> &mut Cell {
        self.cells.entry((env.into(), scope.into())).or_insert_with(|| Cell {
            env: env.into(),
            scope: scope.into(),
            ..Cell::default()
        })
    }

    /// `holder` takes the lock of `scope` in `preview`: its epoch.
    fn lock(&mut self, scope: &str, holder: &str) -> u64 {
        let cell = self.cell("preview", scope);
        let grant = crate::lock::acquire(cell, holder, 60_000, NOW).unwrap();
        cell.apply(&grant.changes);
        grant.lock.epoch
    }

    fn listing(&self, env: &str) -> Vec<OtherScope> {
        self.cells
            .values()
            .filter(|c| c.env == env)
            .map(|c| OtherScope { scope: c.scope.clone(), text: c.file("latest.json").map(str::to_owned) })
            .collect()
    }

    /// The cells that hold files (a load of a cell that does not exist creates an empty one here).
    fn files(&self) -> BTreeMap<(String, String), Cell> {
        self.cells.iter().filter(|(_, c)| !c.files.is_empty()).map(|(k, c)| (k.clone(), c.clone())).collect()
    }

    fn claim(&self, key: &str) -> Option<Value> {
        let r = res(key);
        let (env, scope) = claim_cell("preview", &r.adapter, &r.provider, &r.key);
        let cell = self.cells.get(&(env, scope))?;
        cell.file(CLAIM_FILE).map(|t| serde_json::from_str(t).unwrap())
    }
}

fn res(key: &str) -> crate::ownership::Resource {
    serde_json::from_value(json!({ "adapter": "fake", "key": key })).unwrap()
}

fn config(scope: &str, holder: &str, epoch: u64, key: &str, op: ChangeOp) -> ChangeConfig {
    ChangeConfig {
        env: "preview".into(),
        scope: scope.into(),
        holder: Some(holder.into()),
        epoch: Some(epoch),
        predecessor: None,
        resource: res(key),
        op,
        owned_marker: None,
    }
}

/// Drives `m` to its end on `store`: `before(store, action)` runs before each action is carried out (a
/// writer in between); `fail(action)` makes the store fail that one (committed first when `.1`).
fn drive(
    m: &mut ChangeMachine,
    store: &mut Store,
    mut before: impl FnMut(&mut Store, &ChangeAction),
    mut fail: impl FnMut(&ChangeAction) -> Option<(CoreError, bool)>,
) -> Result<ChangeAnswer, CoreError> {
    for _ in 0..64 {
        let action = m.poll_action().expect("an action");
        before(store, &action);
        match &action {
            ChangeAction::Done(a) => return Ok(a.clone()),
            ChangeAction::Failed(e) => return Err(e.clone()),
            ChangeAction::List { id, env } => {
                store.log.push("list".into());
                m.handle_listing(*id, Ok(store.listing(env))).unwrap();
            }
            ChangeAction::Load(load) => {
                let cell = store.cell(&load.env, &load.scope).clone();
                let kind = if load.env == CLAIMS_ENV { "claim" } else { "cell" };
                store.log.push(format!("{} {kind}", if load.write { "write" } else { "read" }));
                let outcome = match m.apply(load.id, &cell, NOW) {
                    Ok(changes) => {
                        assert!(load.write || changes.is_empty(), "a read answered changes");
                        match fail(&action) {
                            Some((e, committed)) => {
                                if committed {
                                    store.cell(&load.env, &load.scope).apply(&changes);
                                }
                                Err(e)
                            }
                            None => {
                                store.cell(&load.env, &load.scope).apply(&changes);
                                Ok(())
                            }
                        }
                    }
                    Err(e) => Err(e),
                };
                m.handle_outcome(load.id, outcome).unwrap();
            }
        }
    }
    panic!("the change never ended");
}

fn run(m: &mut ChangeMachine, store: &mut Store) -> Result<ChangeAnswer, CoreError> {
    drive(m, store, |_, _| {}, |_| None)
}

#[test]
fn an_intend_takes_the_claim_on_a_listing_it_asked_for_then_writes_the_intent() {
    let mut store = Store::default();
    let epoch = store.lock("pr-1", "run-a");
    let mut m = ChangeMachine::new(config("pr-1", "run-a", epoch, "k1", ChangeOp::Intend)).unwrap();
    let a = run(&mut m, &mut store).unwrap();
    assert_eq!(a.claim.as_deref(), Some("taken"));
    // The take needed the listing, listed, took, then the fenced intent.
    assert_eq!(store.log, ["write claim", "list", "write claim", "write cell"]);
    assert_eq!(a.receipt.unwrap()["ledger"][0]["createdBy"], "intent");
    let claim = store.claim("k1").unwrap();
    assert_eq!((claim["scope"].as_str(), claim["generation"].as_u64()), (Some("pr-1"), Some(1)));
    assert!(m.poll_action().is_none() && m.is_finished());
}

#[test]
fn a_second_scope_is_refused_before_anything_is_written() {
    let mut store = Store::default();
    let e1 = store.lock("pr-1", "run-a");
    run(&mut ChangeMachine::new(config("pr-1", "run-a", e1, "k1", ChangeOp::Intend)).unwrap(), &mut store).unwrap();
    let e2 = store.lock("pr-2", "run-b");
    let before = store.files();
    let e = run(&mut ChangeMachine::new(config("pr-2", "run-b", e2, "k1", ChangeOp::Intend)).unwrap(), &mut store)
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::OwnedByOtherScope);
    assert_eq!(e.details["owner"], "pr-1");
    assert_eq!(store.files(), before, "a refused change writes nothing");
}

#[test]
fn a_listing_older_than_the_claim_cell_is_refused_and_read_again() {
    let mut store = Store::default();
    let epoch = store.lock("pr-1", "run-a");
    let mut m = ChangeMachine::new(config("pr-1", "run-a", epoch, "k1", ChangeOp::Intend)).unwrap();
    let mut between = true;
    // Right after the first listing, another scope claims k1 and frees it again: the cell looks as before
    // (no claim) but its generation moved on, so the take may not write on that listing.
    let a = drive(
        &mut m,
        &mut store,
        |s, action| {
            if between && matches!(action, ChangeAction::Load(l) if l.write) && s.log.len() == 2 {
                between = false;
                let r = res("k1");
                let (env, scope) = claim_cell("preview", &r.adapter, &r.provider, &r.key);
                let cell = s.cell(&env, &scope);
                let took = TakeRequest {
                    env: "preview".into(),
                    scope: "pr-9".into(),
                    holder: "run-z".into(),
                    epoch: 4,
                    resource: r.clone(),
                    predecessor: None,
                    others: Some(Vec::new()),
                    listed_at: None,
                    facts: None,
                    dry_run: false,
                };
                let TakeAnswer::Decided { changes, .. } = take_typed(cell, NOW, &took).unwrap() else { panic!() };
                cell.apply(&changes);
                let freed = free_typed(cell, NOW, "preview", "pr-9", 4, &r, false).unwrap();
                cell.apply(&freed.changes);
            }
        },
        |_| None,
    )
    .unwrap();
    assert_eq!(a.claim.as_deref(), Some("taken"));
    assert_eq!(store.log, ["write claim", "list", "write claim", "list", "write claim", "write cell"]);
    assert_eq!(store.claim("k1").unwrap()["generation"], 3);
}

#[test]
fn a_claim_of_another_scope_is_judged_on_its_facts_then_on_a_listing_read_after_them() {
    let mut store = Store::default();
    // pr-9 claimed k1 at epoch 1, then its lock moved on (epoch 2) and its ledger lists nothing: stale.
    let e9 = store.lock("pr-9", "run-z");
    let mut m9 = ChangeMachine::new(config("pr-9", "run-z", e9, "k1", ChangeOp::Intend)).unwrap();
    drive(
        &mut m9,
        &mut store,
        |_, _| {},
        |a| {
            matches!(a, ChangeAction::Load(l) if l.env == "preview" && l.write)
                .then(|| (CoreError::new(ErrorCode::StoreContended, "down"), false))
        },
    )
    .unwrap_err();
    assert_eq!(store.claim("k1"), None, "the first claim of a cell is given back by deleting it");
    // Claimed again, then the crash: the claim stays.
    let mut m9 = ChangeMachine::new(config("pr-9", "run-z", e9, "k1", ChangeOp::Intend)).unwrap();
    let mut seen = 0;
    while let Some(action) = m9.poll_action() {
        let ChangeAction::Load(l) = &action else {
            let ChangeAction::List { id, env } = action else { panic!() };
            m9.handle_listing(id, Ok(store.listing(&env))).unwrap();
            continue;
        };
        if l.env == "preview" {
            break; // crashed before its intent
        }
        let cell = store.cell(&l.env, &l.scope).clone();
        let changes = m9.apply(l.id, &cell, NOW).unwrap();
        store.cell(&l.env, &l.scope).apply(&changes);
        m9.handle_outcome(l.id, Ok(())).unwrap();
        seen += 1;
    }
    assert!(seen >= 2 && store.claim("k1").unwrap()["scope"] == "pr-9");
    let cell = store.cell("preview", "pr-9");
    let released = crate::lock::release(cell, "run-z", Some(e9));
    cell.apply(&released.changes);
    store.log.clear();
    let e1 = store.lock("pr-1", "run-a");
    let a =
        run(&mut ChangeMachine::new(config("pr-1", "run-a", e1, "k1", ChangeOp::Intend)).unwrap(), &mut store).unwrap();
    assert_eq!(a.claim.as_deref(), Some("taken"));
    // take (needs the listing), list, take (needs pr-9's facts), read pr-9, take (the listing was dropped:
    // needs it again), list, take, the intent.
    assert_eq!(
        store.log,
        ["write claim", "list", "write claim", "read cell", "write claim", "list", "write claim", "write cell"]
    );
    assert_eq!(store.claim("k1").unwrap()["takenFrom"], json!({ "scope": "pr-9", "epoch": e9 }));
}

#[test]
fn a_refused_write_gives_the_claim_back_unless_the_receipt_shows_it_landed() {
    // Refused (the lock moved on): the claim the change took goes, after a look at the run's own receipt.
    let mut store = Store::default();
    let epoch = store.lock("pr-1", "run-a");
    let lost = |a: &ChangeAction| {
        matches!(a, ChangeAction::Load(l) if l.env == "preview" && l.write)
            .then(|| (CoreError::new(ErrorCode::LockLost, "lost"), false))
    };
    let mut m = ChangeMachine::new(config("pr-1", "run-a", epoch, "k1", ChangeOp::Intend)).unwrap();
    let e = drive(&mut m, &mut store, |_, _| {}, lost).unwrap_err();
    assert_eq!(e.code, ErrorCode::LockLost, "the change fails with the write's refusal");
    assert_eq!(store.log, ["write claim", "list", "write claim", "write cell", "read cell", "write claim"]);
    assert_eq!(store.claim("k1"), None, "a first claim given back is deleted");

    // The write landed but its reply was lost: the receipt lists it, so the claim stays.
    let mut store = Store::default();
    let epoch = store.lock("pr-1", "run-a");
    let landed = |a: &ChangeAction| {
        matches!(a, ChangeAction::Load(l) if l.env == "preview" && l.write)
            .then(|| (CoreError::new(ErrorCode::StoreContended, "no reply"), true))
    };
    let mut m = ChangeMachine::new(config("pr-1", "run-a", epoch, "k1", ChangeOp::Intend)).unwrap();
    let e = drive(&mut m, &mut store, |_, _| {}, landed).unwrap_err();
    assert_eq!(e.code, ErrorCode::StoreContended);
    assert_eq!(store.log.last().map(String::as_str), Some("read cell"), "nothing freed");
    assert_eq!(store.claim("k1").unwrap()["scope"], "pr-1");
}

#[test]
fn a_claim_that_keeps_changing_ends_in_store_contended_naming_the_resource() {
    let mut store = Store::default();
    let epoch = store.lock("pr-1", "run-a");
    let mut m = ChangeMachine::new(config("pr-1", "run-a", epoch, "k1", ChangeOp::Intend)).unwrap();
    // Before every take, another scope takes and frees the claim: every listing is older than the cell.
    let e = drive(
        &mut m,
        &mut store,
        |s, action| {
            if matches!(action, ChangeAction::Load(l) if l.env == CLAIMS_ENV) {
                let r = res("k1");
                let (env, scope) = claim_cell("preview", &r.adapter, &r.provider, &r.key);
                let cell = s.cell(&env, &scope);
                let mut took = TakeRequest {
                    env: "preview".into(),
                    scope: "pr-9".into(),
                    holder: "run-z".into(),
                    epoch: 4,
                    resource: r.clone(),
                    predecessor: None,
                    others: Some(Vec::new()),
                    listed_at: None,
                    facts: None,
                    dry_run: false,
                };
                took.listed_at = Some(read_claim_state(cell).unwrap().generation());
                let TakeAnswer::Decided { changes, .. } = take_typed(cell, NOW, &took).unwrap() else { panic!() };
                cell.apply(&changes);
                let freed = free_typed(cell, NOW, "preview", "pr-9", 4, &r, false).unwrap();
                cell.apply(&freed.changes);
            }
        },
        |_| None,
    )
    .unwrap_err();
    assert_eq!(e.code, ErrorCode::StoreContended);
    assert!(e.message.contains("fake `k1`"), "{}", e.message);
    assert_eq!(store.log.iter().filter(|l| *l == "write claim").count(), MAX_ROUNDS);
    assert!(!store.log.contains(&"write cell".to_owned()), "nothing written on the run's cell");
}

#[test]
fn a_forget_frees_the_claim_after_the_write_and_a_failed_free_is_a_warning() {
    let mut store = Store::default();
    let epoch = store.lock("pr-1", "run-a");
    run(&mut ChangeMachine::new(config("pr-1", "run-a", epoch, "k1", ChangeOp::Intend)).unwrap(), &mut store).unwrap();
    store.log.clear();
    let a = run(&mut ChangeMachine::new(config("pr-1", "run-a", epoch, "k1", ChangeOp::Forget)).unwrap(), &mut store)
        .unwrap();
    assert_eq!((a.forgotten, a.warnings.len()), (Some(true), 0));
    assert_eq!(store.log, ["write cell", "write claim"]);
    assert_eq!(store.claim("k1").unwrap()["free"], true, "a free record, the generation counting on");

    run(&mut ChangeMachine::new(config("pr-1", "run-a", epoch, "k2", ChangeOp::Intend)).unwrap(), &mut store).unwrap();
    let down = |a: &ChangeAction| {
        matches!(a, ChangeAction::Load(l) if l.env == CLAIMS_ENV)
            .then(|| (CoreError::new(ErrorCode::StoreContended, "down"), false))
    };
    let mut m = ChangeMachine::new(config("pr-1", "run-a", epoch, "k2", ChangeOp::Forget)).unwrap();
    let a = drive(&mut m, &mut store, |_, _| {}, down).unwrap();
    assert_eq!(a.forgotten, Some(true));
    assert!(a.warnings[0].contains("could not free the ownership claim of fake:k2: down"), "{:?}", a.warnings);
}

#[test]
fn a_check_with_change_asks_the_claim_read_only_on_its_own_listing() {
    let mut store = Store::default();
    let e9 = store.lock("pr-9", "run-z");
    run(&mut ChangeMachine::new(config("pr-9", "run-z", e9, "k1", ChangeOp::Intend)).unwrap(), &mut store).unwrap();
    let e1 = store.lock("pr-1", "run-a");
    store.log.clear();
    let before = store.cells.clone();
    let check = |change| ChangeOp::Check { change };
    // Relying on it: foreign (pr-9's intent), recorded as adopted by the fenced check.
    let a = run(&mut ChangeMachine::new(config("pr-1", "run-a", e1, "k1", check(false))).unwrap(), &mut store).unwrap();
    assert_eq!((a.relation.as_deref(), a.owner.as_deref(), a.adopted), (Some("foreign"), Some("pr-9"), true));
    // Changing another key: the check passes and the claim is only asked (read, nothing written).
    store.cells.clone_from(&before);
    store.log.clear();
    let a = run(&mut ChangeMachine::new(config("pr-1", "run-a", e1, "k2", check(true))).unwrap(), &mut store).unwrap();
    assert_eq!((a.relation.as_deref(), a.claim.as_deref()), (Some("none"), Some("taken")));
    assert_eq!(store.log, ["list", "write cell", "read claim"]);
    assert_eq!(
        store.files(),
        before.iter().filter(|(_, c)| !c.files.is_empty()).map(|(k, c)| (k.clone(), c.clone())).collect()
    );
    // Outside a run (no fence): everything is read only.
    let mut c = config("pr-1", "", 0, "k1", check(true));
    (c.holder, c.epoch) = (None, None);
    store.log.clear();
    let e = run(&mut ChangeMachine::new(c).unwrap(), &mut store).unwrap_err();
    assert_eq!(e.code, ErrorCode::OwnedByOtherScope);
    assert_eq!(store.log, ["list", "read cell"]);
}

#[test]
fn a_change_without_the_fence_is_usage_and_an_unknown_id_is_internal() {
    let mut c = config("pr-1", "run-a", 1, "k1", ChangeOp::Record { id: "x".into() });
    c.holder = None;
    assert_eq!(ChangeMachine::new(c).unwrap_err().code, ErrorCode::Usage);
    let mut m = ChangeMachine::new(config("pr-1", "run-a", 1, "k1", ChangeOp::Intend)).unwrap();
    assert_eq!(m.handle_outcome(99, Ok(())).unwrap_err().code, ErrorCode::Internal);
    let ChangeAction::Load(l) = m.poll_action().unwrap() else { panic!("a load first") };
    assert_eq!(m.handle_outcome(l.id, Ok(())).unwrap_err().code, ErrorCode::Internal, "done before apply");
}

/// Drives `m` through its JSON form (the npm package's path): each load runs the core operation by name.
fn run_json(m: &mut ChangeMachine, store: &mut Store) -> Result<ChangeAnswer, CoreError> {
    loop {
        match m.poll_action().expect("an action") {
            ChangeAction::Done(a) => return Ok(a),
            ChangeAction::Failed(e) => return Err(e),
            ChangeAction::List { id, env } => m.handle_listing(id, Ok(store.listing(&env))).unwrap(),
            ChangeAction::Load(load) => {
                let (op, mut request) = m.json_request(load.id).unwrap();
                let cell = store.cell(&load.env, &load.scope).clone();
                request["cell"] = serde_json::to_value(&cell).unwrap();
                request["nowMs"] = json!(NOW);
                let answer =
                    crate::api::invoke(op, &request.to_string()).map(|t| serde_json::from_str::<Value>(&t).unwrap());
                if let Ok(a) = &answer {
                    let changes: Vec<Change> = serde_json::from_value(a["changes"].clone()).unwrap_or_default();
                    store.cell(&load.env, &load.scope).apply(&changes);
                }
                m.handle_answer(load.id, answer).unwrap();
            }
        }
    }
}

#[test]
fn the_json_path_leaves_the_store_byte_for_byte_as_the_typed_one() {
    let ops = [
        ("pr-1", "k1", ChangeOp::Intend),
        ("pr-1", "k1", ChangeOp::Record { id: "v-1".into() }),
        ("pr-2", "k1", ChangeOp::Intend),
        ("pr-2", "k2", ChangeOp::Check { change: true }),
        ("pr-2", "k1", ChangeOp::Check { change: false }),
        ("pr-1", "k1", ChangeOp::Forget),
        ("pr-2", "k1", ChangeOp::Intend),
    ];
    let (mut typed, mut json) = (Store::default(), Store::default());
    for s in [&mut typed, &mut json] {
        s.lock("pr-1", "run-a");
        s.lock("pr-2", "run-b");
    }
    for (scope, key, op) in ops {
        let holder = if scope == "pr-1" { "run-a" } else { "run-b" };
        let c = config(scope, holder, 1, key, op);
        let a = run(&mut ChangeMachine::new(c.clone()).unwrap(), &mut typed);
        let b = run_json(&mut ChangeMachine::new(c).unwrap(), &mut json);
        assert_eq!(a.as_ref().map_err(|e| e.code), b.as_ref().map_err(|e| e.code));
        assert_eq!(a.ok(), b.ok());
        assert_eq!(typed.files(), json.files());
    }
    assert_eq!(typed.claim("k1").unwrap()["scope"], "pr-2");
}
