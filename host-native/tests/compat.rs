//! Beside the original tool (issue 18), deterministically: a `lock.json` the original creates (`link(2)`,
//! without the mutex) between baton's load and its commit is never replaced; the dir store decides again and
//! the core answers `LOCK_HELD` naming it. The races of the same thing: `tests/cross-host/sponson-compat.test.mjs`.

use baton_native::engine::wit::locks::{AcquireRequest, LockAnswer, LockOp};
use baton_native::engine::{CoreComponent, changes_answer};
use baton_native::store::DirStore;
use serde_json::json;
use std::path::Path;

/// What the original writes: a complete temp file linked to `lock.json` (fails if one exists).
fn original_creates(cell: &Path, holder: &str) {
    let tmp = cell.join("lock.json.sponson.tmp");
    let lock =
        json!({ "holder": holder, "acquiredAt": "2026-10-10T12:00:00.000Z", "expiresAt": "2999-01-01T00:00:00.000Z" });
    std::fs::write(&tmp, format!("{}\n", serde_json::to_string_pretty(&lock).unwrap())).unwrap();
    std::fs::hard_link(&tmp, cell.join("lock.json")).unwrap();
    std::fs::remove_file(&tmp).unwrap();
}

#[test]
fn a_lock_the_original_creates_meanwhile_is_never_replaced() {
    let root = std::env::temp_dir().join(format!("baton-compat-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let cell = root.join("preview").join("pr-1");
    // The cell exists (a free scope that ran before): the store decides under its mutex from the start.
    std::fs::create_dir_all(&cell).unwrap();
    let mut core = CoreComponent::load().unwrap();
    let store = DirStore::new(&root, std::time::Duration::from_secs(30));
    let mut decisions = 0;
    let outcome = store.transact(&mut core, "preview", "pr-1", |core, snapshot, now| {
        decisions += 1;
        let acquire = LockOp::LockAcquire(AcquireRequest { holder: "baton-1".into(), ttl_ms: 60_000, label: None });
        let answer = core.lock_decide(&snapshot, now, &acquire).map(|a| match a {
            LockAnswer::Grant(g) => changes_answer(&g.changes),
            _ => json!({ "changes": [] }),
        });
        if decisions == 1 {
            original_creates(&cell, "run-5ca1ab1e"); // the original's link lands now
        }
        answer
    });
    assert_eq!(decisions, 2, "decided again on what is there now");
    let err = outcome.unwrap_err();
    assert_eq!(err.code, "LOCK_HELD");
    assert_eq!(err.details["lock"]["holder"], "run-5ca1ab1e");
    let lock: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(cell.join("lock.json")).unwrap()).unwrap();
    assert_eq!(lock["holder"], "run-5ca1ab1e");
    // The prefix before the conflict (epoch.json) landed, as a crash there would leave it; no temp file is left.
    let mut left: Vec<String> =
        std::fs::read_dir(&cell).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    left.sort();
    assert_eq!(left, ["epoch.json", "lock.json"]);
    let _ = std::fs::remove_dir_all(&root);
}
