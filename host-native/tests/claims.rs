//! Ownership claims end to end with the CLI (core/src/claims, docs/claims.md): forget frees, a handover
//! moves, a crashed claimer's claim is freed when its scope's lock moves on, and two old ledgers listing one
//! resource are a conflict that `baton status` reports and nobody may resolve by creating it.

mod common;

use common::{TempDir, sh};
use serde_json::{Value, json};

/// The claims of the store: (scope in `claim.json`, identity); a free record (`claim-free`) claims nothing.
fn claims(t: &TempDir) -> Vec<(String, String)> {
    let dir = t.0.join("store").join("_claims");
    let mut out: Vec<(String, String)> = std::fs::read_dir(&dir)
        .map(|it| {
            it.filter_map(|e| std::fs::read_to_string(e.ok()?.path().join("claim.json")).ok())
                .map(|text| serde_json::from_str::<Value>(&text).unwrap())
                .filter(|c| c["free"] != true)
                .map(|c| (c["scope"].as_str().unwrap().to_owned(), c["identity"].as_str().unwrap().to_owned()))
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}

#[test]
fn record_claims_forget_frees_and_another_scope_may_then_create_it() {
    let t = TempDir::new("claims-forget");
    let create = sh("baton ledger intend --adapter a --key k && baton ledger record --adapter a --key k --id 1");
    assert_eq!(t.json(&["run", "--scope", "pr-1", "--", "sh", "-c", &create]).0, 0);
    assert_eq!(claims(&t), [("pr-1".to_owned(), "a|{}|k".to_owned())]);
    let (code, env) = t.json(&["run", "--scope", "pr-2", "--", "sh", "-c", &create]);
    assert_eq!(code, 1, "{env}");
    let forget = sh("baton ledger forget --adapter a --key k");
    assert_eq!(t.json(&["run", "--scope", "pr-1", "--", "sh", "-c", &forget]).0, 0);
    assert_eq!(claims(&t), []);
    assert_eq!(t.json(&["run", "--scope", "pr-2", "--", "sh", "-c", &create]).0, 0);
    assert_eq!(claims(&t), [("pr-2".to_owned(), "a|{}|k".to_owned())]);
}

#[test]
fn a_handover_moves_the_claims_to_the_pull_request() {
    let t = TempDir::new("claims-handover");
    let create = sh("baton ledger record --adapter a --key k --id 1");
    assert_eq!(t.json(&["run", "--branch", "feat", "--", "sh", "-c", &create]).0, 0);
    assert_eq!(claims(&t), [("branch-feat".to_owned(), "a|{}|k".to_owned())]);
    let (code, env) = t.json(&["run", "--branch", "feat", "--pr", "9", "--", "true"]);
    assert_eq!((code, &env["handedOver"]), (0, &json!(1)), "{env}");
    assert_eq!(claims(&t), [("pr-9".to_owned(), "a|{}|k".to_owned())]);
    // The branch may not create it again: the pull request owns it now.
    let (code, _) = t.json(&["run", "--branch", "feat", "--", "sh", "-c", &create]);
    assert_eq!(code, 1);
    let (_, env) = t.json(&["ledger", "check", "--branch", "feat", "--adapter", "a", "--key", "k", "--change"]);
    assert_eq!(
        (env["error"]["code"].as_str(), env["error"]["owner"].as_str()),
        (Some("OWNED_BY_OTHER_SCOPE"), Some("pr-9"))
    );
}

#[test]
fn a_crashed_claimers_claim_is_live_until_its_lock_moves_on() {
    let t = TempDir::new("claims-crash");
    // A run of pr-1 claims and dies before its intent: its lock (epoch 1) stays, expired later.
    let (_, lock) = t.json(&["lock", "acquire", "--scope", "pr-1", "--holder", "h1", "--ttl", "1s"]);
    let epoch = lock["lock"]["epoch"].as_u64().unwrap().to_string();
    let out = t
        .baton(&[
            "ledger",
            "intend",
            "--scope",
            "pr-1",
            "--adapter",
            "a",
            "--key",
            "k",
            "--holder",
            "h1",
            "--epoch",
            &epoch,
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // Rewind the intent by hand as if the run had died between claim and intent.
    let receipt = t.0.join("store/preview/pr-1/latest.json");
    let mut r: Value = serde_json::from_str(&std::fs::read_to_string(&receipt).unwrap()).unwrap();
    r["ledger"] = json!([]);
    std::fs::write(&receipt, r.to_string()).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(1100));
    // Expired but still at its epoch: the dead run cannot be told from a paused one. Refused, and told why.
    let (code, env) = t.json(&["ledger", "check", "--scope", "pr-2", "--adapter", "a", "--key", "k", "--change"]);
    assert_eq!(code, 1);
    assert!(env["error"]["message"].as_str().unwrap().contains("baton lock break --env preview --scope pr-1"), "{env}");
    // Its scope's next run moves the lock on; the claim is stale and pr-2 takes it.
    assert_eq!(t.json(&["run", "--scope", "pr-1", "--", "true"]).0, 0);
    let create = sh("baton ledger intend --adapter a --key k && baton ledger record --adapter a --key k --id 2");
    let (code, env) = t.json(&["run", "--scope", "pr-2", "--", "sh", "-c", &create]);
    assert_eq!(code, 0, "{env}");
    assert_eq!(claims(&t), [("pr-2".to_owned(), "a|{}|k".to_owned())]);
}

#[test]
fn two_old_ledgers_listing_one_resource_are_a_conflict_nobody_resolves_by_creating() {
    let t = TempDir::new("claims-conflict");
    for scope in ["pr-1", "pr-2"] {
        let dir = t.0.join("store/preview").join(scope);
        std::fs::create_dir_all(&dir).unwrap();
        let receipt = json!({ "version": 2, "runId": "run-old", "environment": "preview", "scope": scope, "status": "complete",
            "lines": {}, "history": [], "hashKey": "",
            "ledger": [{ "adapter": "a", "op": "", "provider": {}, "key": "k", "id": scope, "hash": "", "createdBy": "sponson", "line": "" }] });
        std::fs::write(dir.join("latest.json"), receipt.to_string()).unwrap();
    }
    let (code, env) = t.json(&["status", "--scope", "pr-1"]);
    assert_eq!(code, 0, "{env}");
    assert_eq!(env["conflicts"], json!([{ "resource": env["conflicts"][0]["resource"], "scopes": ["pr-2"] }]));
    assert_eq!(env["conflicts"][0]["resource"]["key"], "k");
    assert!(env["warnings"].to_string().contains("Conflict"), "{env}");
    for scope in ["pr-1", "pr-2"] {
        let (code, env) =
            t.json(&["run", "--scope", scope, "--", "sh", "-c", &sh("baton ledger record --adapter a --key k --id x")]);
        assert_eq!(code, 1, "{scope} may not take it over silently: {env}");
    }
    assert_eq!(claims(&t), []);
}
