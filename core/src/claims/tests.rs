//! Unit tests of the claim rule: one owner per identity, derived from ledgers where no claim exists, stale
//! claims taken only when their scope's lock moved on and its ledger lists nothing.

use super::*;
use crate::cell::Cell;
use crate::error::{CoreError, ErrorCode};
use crate::ownership::{OtherScope, Resource};
use serde_json::{Value, json};

const NOW: i64 = 1_791_633_600_000;

fn res(key: &str) -> Resource {
    serde_json::from_value(json!({ "adapter": "fake", "key": key })).unwrap()
}

fn claim_cell_of(key: &str) -> Cell {
    let r = res(key);
    let (env, scope) = claim_cell("preview", &r.adapter, &r.provider, &r.key);
    Cell { env, scope, ..Cell::default() }
}

/// A receipt listing `entries` (`(key, createdBy)`, plus `inheritedFrom` when given).
fn receipt(scope: &str, entries: &[(&str, &str, Option<&str>)]) -> String {
    let ledger: Vec<Value> = entries
        .iter()
        .map(|(k, by, from)| {
            let mut e = json!({ "adapter": "fake", "op": "", "provider": {}, "key": k, "id": "", "hash": "", "createdBy": by, "line": "" });
            if let Some(f) = from {
                e["inheritedFrom"] = json!(f);
            }
            e
        })
        .collect();
    json!({ "version": 2, "runId": "run-x", "environment": "preview", "scope": scope, "status": "complete", "lines": {}, "history": [], "hashKey": "", "ledger": ledger, "epoch": 1 }).to_string()
}

fn other(scope: &str, entries: &[(&str, &str, Option<&str>)]) -> OtherScope {
    OtherScope { scope: scope.into(), text: Some(receipt(scope, entries)) }
}

/// `r` as a host sends it right after listing: at the claim cell's generation now.
fn listed(mut r: TakeRequest, cell: &Cell) -> TakeRequest {
    r.listed_at = Some(read_claim_state(cell).unwrap().generation());
    r
}

fn request(scope: &str, epoch: u64, key: &str, others: Option<Vec<OtherScope>>) -> TakeRequest {
    TakeRequest {
        env: "preview".into(),
        scope: scope.into(),
        holder: format!("run-{scope}-{epoch}"),
        epoch,
        resource: res(key),
        predecessor: None,
        others,
        listed_at: None,
        facts: None,
        dry_run: false,
    }
}

/// Runs `claim-take` to a decision, satisfying its needs from `others` and `facts`, and commits it.
fn take_on(
    cell: &mut Cell,
    mut r: TakeRequest,
    others: &[OtherScope],
    facts: Option<ClaimFacts>,
) -> Result<Value, CoreError> {
    for _ in 0..5 {
        let answer = take(cell, NOW, &r)?;
        match answer["need"]["type"].as_str() {
            Some("others") => {
                r.others = Some(others.to_vec());
                r.listed_at = answer["need"]["generation"].as_u64();
            }
            Some("facts") => {
                r.facts = facts.clone();
                r.others = None;
                r.listed_at = None;
            }
            _ => {
                let changes: Vec<crate::cell::Change> = serde_json::from_value(answer["changes"].clone()).unwrap();
                cell.apply(&changes);
                return Ok(answer);
            }
        }
    }
    panic!("claim-take kept asking");
}

#[test]
fn the_first_scope_takes_it_and_a_second_is_refused_naming_the_owner() {
    let mut cell = claim_cell_of("k1");
    let a = take_on(&mut cell, request("pr-11", 3, "k1", None), &[], None).unwrap();
    assert_eq!(a["outcome"], "taken");
    assert_eq!(read_claim(&cell).unwrap().unwrap().scope, "pr-11");
    // The same run again: nothing to write, nothing to list.
    let again = take(&cell, NOW, &request("pr-11", 3, "k1", None)).unwrap();
    assert_eq!(again["outcome"], "held");
    assert_eq!(again["changes"], json!([]));
    // pr-12, at the same instant: pr-11's lock is at the claim's epoch (it is about to write its intent).
    let live = ClaimFacts { scope: "pr-11".into(), claim_epoch: 3, lock_epoch: Some(3), lists: false };
    let e = take_on(&mut cell, request("pr-12", 1, "k1", None), &[], Some(live)).unwrap_err();
    assert_eq!(e.code, ErrorCode::OwnedByOtherScope);
    assert_eq!(e.details["owner"], "pr-11");
    // Once pr-11's ledger lists it, the listing alone refuses.
    let listed = [other("pr-11", &[("k1", "intent", None)])];
    let e = take_on(&mut cell, request("pr-12", 1, "k1", None), &listed, None).unwrap_err();
    assert_eq!(e.details["owner"], "pr-11");
    assert_eq!(read_claim(&cell).unwrap().unwrap().scope, "pr-11");
}

#[test]
fn facts_for_another_claim_are_not_used() {
    let mut cell = claim_cell_of("k1");
    take_on(&mut cell, request("pr-11", 3, "k1", None), &[], None).unwrap();
    let mut r = listed(request("pr-12", 1, "k1", Some(vec![])), &cell);
    r.facts = Some(ClaimFacts { scope: "pr-11".into(), claim_epoch: 2, lock_epoch: None, lists: false });
    let answer = take(&cell, NOW, &r).unwrap();
    assert_eq!(answer["need"]["type"], "facts");
    assert_eq!(answer["need"]["cell"], json!({ "env": "preview", "scope": "pr-11" }));
    assert_eq!(answer["need"]["request"]["claimEpoch"], 3);
}

#[test]
fn a_stale_claim_is_taken_only_when_the_lock_moved_on_and_the_ledger_lists_nothing() {
    let mut cell = claim_cell_of("k1");
    take_on(&mut cell, request("pr-11", 3, "k1", None), &[], None).unwrap();
    // Expired but still at epoch 3: its holder may still write. Live.
    let paused = ClaimFacts { scope: "pr-11".into(), claim_epoch: 3, lock_epoch: Some(3), lists: false };
    let e = take_on(&mut cell, request("pr-12", 1, "k1", None), &[], Some(paused)).unwrap_err();
    assert!(e.message.contains("lock break"), "{}", e.message);
    // The lock moved on, but the (fresh) ledger lists it: live.
    let listed = ClaimFacts { scope: "pr-11".into(), claim_epoch: 3, lock_epoch: Some(4), lists: true };
    assert!(take_on(&mut cell, request("pr-12", 1, "k1", None), &[], Some(listed)).is_err());
    // Released (no lock) and listed nowhere: stale, taken, with the record of what it replaced.
    let gone = ClaimFacts { scope: "pr-11".into(), claim_epoch: 3, lock_epoch: None, lists: false };
    let a = take_on(&mut cell, request("pr-12", 1, "k1", None), &[], Some(gone)).unwrap();
    assert_eq!(a["outcome"], "taken");
    let c = read_claim(&cell).unwrap().unwrap();
    assert_eq!((c.scope.as_str(), c.epoch), ("pr-12", 1));
    assert_eq!(c.taken_from, Some(json!({ "scope": "pr-11", "epoch": 3 })));
}

#[test]
fn ledgers_without_claims_still_say_who_owns() {
    // A store written before claims: pr-11's ledger owns k1, there is no claim.
    let mut cell = claim_cell_of("k1");
    let others = [other("pr-11", &[("k1", "baton", None)]), other("pr-12", &[])];
    let e = take_on(&mut cell, request("pr-12", 1, "k1", None), &others, None).unwrap_err();
    assert_eq!(e.details["owner"], "pr-11");
    assert!(read_claim(&cell).unwrap().is_none());
    // pr-11 itself claims what its ledger lists.
    assert_eq!(take_on(&mut cell, request("pr-11", 5, "k1", None), &others, None).unwrap()["outcome"], "taken");
    // Adopted entries own nothing.
    let mut cell = claim_cell_of("k2");
    let others = [other("pr-11", &[("k2", "adopted", None)])];
    assert_eq!(take_on(&mut cell, request("pr-12", 1, "k2", None), &others, None).unwrap()["outcome"], "taken");
}

#[test]
fn a_pull_request_inherits_its_branch_and_the_handover_moves_the_claim() {
    let mut cell = claim_cell_of("k1");
    let branch = [other("branch-x", &[("k1", "baton", None)])];
    take_on(&mut cell, request("branch-x", 2, "k1", None), &branch, None).unwrap();
    // The PR changes what its branch owns: inherited, and the PR holds the claim while it changes it.
    let mut r = request("pr-7", 1, "k1", None);
    r.predecessor = Some("branch-x".into());
    let with_pr = [branch[0].clone(), other("pr-7", &[("k1", "baton", Some("branch-x"))])];
    assert_eq!(take_on(&mut cell, r.clone(), &with_pr, None).unwrap()["outcome"], "inherited");
    let c = read_claim(&cell).unwrap().unwrap();
    assert_eq!((c.scope.as_str(), c.taken_from.clone()), ("pr-7", Some(json!({ "scope": "branch-x", "epoch": 2 }))));
    // While that PR run holds its lock, the branch may not change it (two runs changing one resource)...
    let running = ClaimFacts { scope: "pr-7".into(), claim_epoch: 1, lock_epoch: Some(1), lists: false };
    let e = take_on(&mut cell, request("branch-x", 3, "k1", None), &with_pr, Some(running)).unwrap_err();
    assert_eq!(e.details["owner"], "pr-7");
    // ...and once it is over without a handover, the branch takes its claim back (the PR's copy is the branch's).
    let over = ClaimFacts { scope: "pr-7".into(), claim_epoch: 1, lock_epoch: None, lists: false };
    assert_eq!(
        take_on(&mut cell, request("branch-x", 3, "k1", None), &with_pr, Some(over)).unwrap()["outcome"],
        "taken"
    );
    // The facts the core asks for say whose copy not to count.
    let mut cell2 = claim_cell_of("k1");
    take_on(&mut cell2, r.clone(), &with_pr, None).unwrap();
    let need = take(&cell2, NOW, &listed(request("branch-x", 3, "k1", Some(with_pr.to_vec())), &cell2)).unwrap();
    assert_eq!(need["need"]["request"]["pending"], "branch-x");
    // The handover: the claim is the PR's already, or moves from the branch to it.
    let a = moved(&cell2, NOW, "preview", "branch-x", "pr-7", "run-pr-7-1", 1, &res("k1")).unwrap();
    assert_eq!((a["moved"].as_bool(), a["changes"].clone()), (Some(true), json!([])));
    let a = moved(&cell, NOW, "preview", "branch-x", "pr-7", "run-pr-7-1", 1, &res("k1")).unwrap();
    assert_eq!(a["moved"], true);
    cell.apply(&serde_json::from_value::<Vec<crate::cell::Change>>(a["changes"].clone()).unwrap());
    assert_eq!(read_claim(&cell).unwrap().unwrap().scope, "pr-7");
    // Now the branch may not take it back: the PR lists it and the branch does not.
    let after = [other("branch-x", &[]), other("pr-7", &[("k1", "baton", Some("branch-x"))])];
    let e = take_on(&mut cell, request("branch-x", 4, "k1", None), &after, None).unwrap_err();
    assert_eq!(e.details["owner"], "pr-7");
    // A claim of a third scope is never moved.
    let mut third = claim_cell_of("k1");
    take_on(&mut third, request("pr-8", 1, "k1", None), &[], None).unwrap();
    assert_eq!(moved(&third, NOW, "preview", "branch-x", "pr-7", "h", 1, &res("k1")).unwrap()["moved"], false);
}

#[test]
fn the_branch_cannot_forget_and_recreate_what_its_pull_request_is_changing() {
    // Simulation seed 108852: the PR's take answered `inherited`, its intent was still on the way when the
    // branch forgot the resource and created it again. The PR holds the claim, so the branch is refused.
    let mut cell = claim_cell_of("k1");
    let branch = [other("branch-x", &[("k1", "baton", None)]), other("pr-7", &[])];
    take_on(&mut cell, request("branch-x", 2, "k1", None), &branch, None).unwrap();
    let mut r = request("pr-7", 1, "k1", None);
    r.predecessor = Some("branch-x".into());
    assert_eq!(take_on(&mut cell, r, &branch, None).unwrap()["outcome"], "inherited");
    assert_eq!(free(&cell, NOW, "preview", "branch-x", 2, &res("k1"), false).unwrap()["freed"], false);
    let forgotten = [other("branch-x", &[]), other("pr-7", &[])];
    let live = ClaimFacts { scope: "pr-7".into(), claim_epoch: 1, lock_epoch: Some(1), lists: false };
    let e = take_on(&mut cell, request("branch-x", 2, "k1", None), &forgotten, Some(live)).unwrap_err();
    assert_eq!(e.details["owner"], "pr-7");
}

#[test]
fn an_older_run_of_the_scope_never_takes_back_a_newer_runs_claim() {
    let mut cell = claim_cell_of("k1");
    take_on(&mut cell, request("pr-1", 5, "k1", None), &[], None).unwrap();
    let e = take_on(&mut cell, request("pr-1", 4, "k1", None), &[], None).unwrap_err();
    assert_eq!(e.code, ErrorCode::LockLost);
    assert_eq!(read_claim(&cell).unwrap().unwrap().epoch, 5);
}

#[test]
fn a_half_done_handover_leaves_one_owner() {
    // The branch's receipt was rewritten (it lists nothing), the run died before moving the claim.
    let mut cell = claim_cell_of("k1");
    take_on(&mut cell, request("branch-x", 2, "k1", None), &[], None).unwrap();
    let after = [other("branch-x", &[]), other("pr-7", &[("k1", "baton", Some("branch-x"))])];
    // The branch's claim is its own, but the PR lists it: the PR owns it.
    assert_eq!(
        take_on(&mut cell, request("branch-x", 3, "k1", None), &after, None).unwrap_err().details["owner"],
        "pr-7"
    );
    // A third scope is refused too.
    assert_eq!(take_on(&mut cell, request("pr-8", 1, "k1", None), &after, None).unwrap_err().details["owner"], "pr-7");
    // The PR completes it: the branch's claim is stale (its lock moved on, it lists nothing).
    let mut r = request("pr-7", 2, "k1", None);
    r.predecessor = Some("branch-x".into());
    let gone = ClaimFacts { scope: "branch-x".into(), claim_epoch: 2, lock_epoch: None, lists: false };
    assert_eq!(take_on(&mut cell, r, &after, Some(gone)).unwrap()["outcome"], "taken");
}

#[test]
fn free_deletes_only_this_scopes_claim_at_or_before_its_epoch() {
    let mut cell = claim_cell_of("k1");
    take_on(&mut cell, request("pr-11", 3, "k1", None), &[], None).unwrap();
    assert_eq!(free(&cell, NOW, "preview", "pr-12", 9, &res("k1"), false).unwrap()["freed"], false);
    assert_eq!(free(&cell, NOW, "preview", "pr-11", 2, &res("k1"), false).unwrap()["freed"], false);
    let a = free(&cell, NOW, "preview", "pr-11", 3, &res("k1"), false).unwrap();
    assert_eq!(a["freed"], true);
    let changes: Vec<crate::cell::Change> = serde_json::from_value(a["changes"].clone()).unwrap();
    cell.apply(&changes);
    // A free record, not a delete: nobody claims it, and the cell's generation went on (take 1, free 2).
    assert!(read_claim(&cell).unwrap().is_none());
    let state = read_claim_state(&cell).unwrap();
    assert!(matches!(&state, ClaimState::Free(f) if f.freed_from == json!({ "scope": "pr-11", "epoch": 3 })));
    assert_eq!(state.generation(), 2);
    // Freeing again changes nothing; the next take counts on.
    assert_eq!(free(&cell, NOW, "preview", "pr-11", 3, &res("k1"), false).unwrap()["freed"], false);
    take_on(&mut cell, request("pr-12", 1, "k1", None), &[], None).unwrap();
    assert_eq!(read_claim(&cell).unwrap().unwrap().generation, 3);
}

/// Simulation seed 198062: pr-8 listed the environment (nobody listed k1), then the branch took k1's
/// claim, its pull request inherited k1, the branch forgot k1 and freed the claim, and only then did
/// pr-8's take land. The claim cell looks as it did when pr-8 listed (no claim), but its generation moved
/// on: the old listing is not used, and the new one shows the pull request's copy.
#[test]
fn a_listing_older_than_the_claim_cells_last_write_is_read_again() {
    let mut cell = claim_cell_of("k1");
    let ask = take(&cell, NOW, &request("pr-8", 1, "k1", None)).unwrap();
    assert_eq!(ask["need"], json!({ "type": "others", "generation": 0 }));
    let stale = Some(vec![other("branch-x", &[])]);
    // The branch's run takes the claim and, after forgetting k1, frees it.
    take_on(&mut cell, request("branch-x", 2, "k1", None), &[], None).unwrap();
    let a = free(&cell, NOW, "preview", "branch-x", 2, &res("k1"), false).unwrap();
    cell.apply(&serde_json::from_value::<Vec<crate::cell::Change>>(a["changes"].clone()).unwrap());
    let mut late = request("pr-8", 1, "k1", stale);
    late.listed_at = Some(0);
    assert_eq!(take(&cell, NOW, &late).unwrap()["need"], json!({ "type": "others", "generation": 2 }));
    // Listed again: the pull request's inherited copy owns it.
    let now = [other("branch-x", &[]), other("pr-7", &[("k1", "baton", Some("branch-x"))])];
    let e = take_on(&mut cell, request("pr-8", 1, "k1", None), &now, None).unwrap_err();
    assert_eq!((e.code, e.details["owner"].as_str()), (ErrorCode::OwnedByOtherScope, Some("pr-7")));
}

/// A listing the caller already had serves a cell nothing was ever claimed in (the common first create),
/// and never one that was written since.
#[test]
fn a_listing_given_up_front_serves_only_a_never_claimed_cell() {
    let mut cell = claim_cell_of("k1");
    let a = take(&cell, NOW, &request("pr-1", 1, "k1", Some(vec![]))).unwrap();
    assert_eq!(a["outcome"], "taken");
    cell.apply(&serde_json::from_value::<Vec<crate::cell::Change>>(a["changes"].clone()).unwrap());
    assert_eq!(read_claim(&cell).unwrap().unwrap().generation, 1);
    // pr-1's claim is stale by its facts, but the listing given up front is older than that claim: no take.
    let mut b = request("pr-2", 1, "k1", Some(vec![]));
    b.facts = Some(ClaimFacts { scope: "pr-1".into(), claim_epoch: 1, lock_epoch: None, lists: false });
    assert_eq!(take(&cell, NOW, &b).unwrap()["need"], json!({ "type": "others", "generation": 1 }));
    assert_eq!(take(&cell, NOW, &listed(b, &cell)).unwrap()["outcome"], "taken");
}

#[test]
fn the_wrong_cell_and_a_corrupt_claim_are_refused() {
    let cell = claim_cell_of("k2");
    assert_eq!(take(&cell, NOW, &request("pr-1", 1, "k1", None)).unwrap_err().code, ErrorCode::Internal);
    let mut bad = claim_cell_of("k1");
    bad.files.insert(CLAIM_FILE.into(), "{not json".into());
    assert_eq!(take(&bad, NOW, &request("pr-1", 1, "k1", None)).unwrap_err().code, ErrorCode::ReceiptCorrupt);
}

#[test]
fn conflicts_name_the_other_scopes_but_not_a_pending_handover() {
    let own =
        crate::receipt::parse_receipt(&receipt("pr-11", &[("k1", "baton", None), ("k2", "baton", None)]), "x").unwrap();
    let others = [
        other("pr-12", &[("k1", "sponson", None)]),
        other("pr-13", &[("k1", "intent", None), ("k2", "adopted", None)]),
        other("pr-14", &[("k2", "baton", Some("pr-11"))]),
    ];
    let found = conflicts("pr-11", Some(&own), &others, None);
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].resource.key, "k1");
    assert_eq!(found[0].scopes, vec!["pr-12".to_owned(), "pr-13".to_owned()]);
}

#[test]
fn the_predecessor_recorded_by_run_begin_counts_when_the_host_names_none() {
    // `baton ledger intend` inside `baton run --pr 7 --branch x`: the command's own context may not know the
    // pull request; the PR's receipt recorded its predecessor.
    let mut cell = claim_cell_of("k1");
    let branch = other("branch-x", &[("k1", "baton", None)]);
    let mut pr = other("pr-7", &[("k1", "baton", Some("branch-x"))]);
    let mut doc: Value = serde_json::from_str(pr.text.as_deref().unwrap()).unwrap();
    doc["predecessor"] = json!("branch-x");
    pr.text = Some(doc.to_string());
    let a = take_on(&mut cell, request("pr-7", 1, "k1", None), &[branch, pr], None).unwrap();
    assert_eq!(a["outcome"], "inherited");
}

#[test]
fn asking_without_a_fence_treats_the_scopes_own_claim_as_its_own() {
    let mut cell = claim_cell_of("k1");
    take_on(&mut cell, request("pr-1", 4, "k1", None), &[], None).unwrap();
    let mut ask = listed(request("pr-1", 0, "k1", Some(vec![other("pr-1", &[("k1", "baton", None)])])), &cell);
    ask.holder = String::new();
    ask.dry_run = true;
    assert_eq!(take(&cell, NOW, &ask).unwrap()["outcome"], "held");
}

#[test]
fn an_intent_over_an_inherited_entry_keeps_where_it_came_from() {
    let lock = json!({ "holder": "h", "acquiredAt": "2026-10-10T11:59:00.000Z", "expiresAt": "2999-01-01T00:00:00.000Z", "epoch": 1 });
    let mut own = Cell { env: "preview".into(), scope: "pr-7".into(), ..Cell::default() };
    own.files.insert("lock.json".into(), lock.to_string());
    own.files.insert("latest.json".into(), receipt("pr-7", &[("k1", "baton", Some("branch-x"))]));
    let w = crate::ownership::intend(&own, "h", 1, NOW, &res("k1")).unwrap();
    let receipt = w.receipt_value();
    assert_eq!(receipt["ledger"][0]["createdBy"], "intent");
    assert_eq!(receipt["ledger"][0]["inheritedFrom"], "branch-x");
}

/// A claim given back by the call that took it from a cell never claimed before leaves the store as it was;
/// any other give-back, and every free after a forget, leaves a free record.
#[test]
fn giving_back_a_first_claim_deletes_it() {
    let mut cell = claim_cell_of("k1");
    take_on(&mut cell, request("pr-11", 3, "k1", None), &[], None).unwrap();
    let a = free(&cell, NOW, "preview", "pr-11", 3, &res("k1"), true).unwrap();
    assert_eq!(a["changes"], json!([{ "op": "delete", "file": "claim.json" }]));
    // A second claim of the cell (generation 3 after a free record) is freed with a record even when given back.
    let b = free(&cell, NOW, "preview", "pr-11", 3, &res("k1"), false).unwrap();
    cell.apply(&serde_json::from_value::<Vec<crate::cell::Change>>(b["changes"].clone()).unwrap());
    take_on(&mut cell, request("pr-12", 1, "k1", None), &[], None).unwrap();
    let c = free(&cell, NOW, "preview", "pr-12", 1, &res("k1"), true).unwrap();
    assert_eq!(c["changes"][0]["op"], "write");
    assert_eq!(c["freed"], true);
}
