//! What an ownership claim costs, printed as ratios (never asserted): `ledger intend` of a new resource
//! with its claim (the core's ownership change: the listing of the environment, the claim cell's
//! compare-and-swap, then the fenced intent: what `baton ledger intend` does) against one fenced write of a
//! receipt-sized file (the intent's own transaction, what it cost before claims), in-process on the dir
//! store and on a git remote (a local bare repository through `file://`), in the same run.
//!
//! `bash scripts/bench.sh` runs it; alone: `cargo run --release -p baton-native --example bench_claims`.

use baton_native::commands::claim;
use baton_native::commands::open_store;
use baton_native::engine::wit::locks::{self as wl, LockAnswer, LockOp};
use baton_native::engine::wit::ownership as wo;
use baton_native::engine::{CoreComponent, cell_of};
use baton_native::store::Store;
use serde_json::{Value, json};
use std::process::Command;
use std::time::Instant;

const ROUNDS: usize = 15;
const ENV: &str = "preview";
const SCOPE: &str = "pr-1";
const HOLDER: &str = "run-bench";

fn median(mut s: Vec<f64>) -> f64 {
    s.sort_by(f64::total_cmp);
    s[s.len() / 2]
}

/// One typed lock transaction (`locks.apply`) on the run's cell: the lock's epoch.
fn lock_tx(core: &mut CoreComponent, store: &Store, op: &LockOp) -> u64 {
    let answer = store
        .transact(core, ENV, SCOPE, |core, cell, now| {
            let answer = core.lock_apply(&cell_of(&cell), now, op)?.map_err(baton_native::engine::from_wit)?;
            let LockAnswer::Grant(g) = answer else { panic!("a grant") };
            let changes: Vec<Value> = g.changes.iter().map(baton_native::engine::change_json).collect();
            Ok(json!({ "changes": changes, "epoch": g.lock.epoch }))
        })
        .expect("the lock transaction lands");
    answer["epoch"].as_u64().expect("an epoch")
}

/// Medians (ms) of a fenced write of a receipt-sized file alone (what the intent's own transaction costs)
/// and of `ledger intend` of a new resource (the ownership change: listing, claim, intent), interleaved.
fn measure(core: &mut CoreComponent, store: &Store) -> (f64, f64) {
    let epoch = lock_tx(
        core,
        store,
        &LockOp::LockAcquire(wl::AcquireRequest { holder: HOLDER.into(), ttl_ms: 600_000, label: None }),
    );
    let (mut bare, mut claimed) = (Vec::new(), Vec::new());
    for i in 0..ROUNDS {
        let content = json!({ "ledger": [{ "adapter": "bench", "key": format!("bare-{i}"), "provider": {}, "createdBy": "intent" }], "pad": "x".repeat(600) }).to_string();
        let write = LockOp::FencedWrite(wl::FencedWriteRequest {
            holder: HOLDER.into(),
            epoch,
            file: "bench.json".into(),
            content,
        });
        let t = Instant::now();
        lock_tx(core, store, &write);
        bare.push(t.elapsed().as_secs_f64() * 1e3);

        let config = wo::ChangeConfig {
            env: ENV.into(),
            scope: SCOPE.into(),
            holder: Some(HOLDER.into()),
            epoch: Some(epoch),
            predecessor: None,
            resource: wo::Resource {
                adapter: "bench".into(),
                key: format!("claimed-{i}"),
                provider: "{}".into(),
                op: None,
                label: None,
                parent: None,
            },
            op: wo::ChangeOp::Intend,
            owned_marker: None,
        };
        let t = Instant::now();
        claim::change(core, store, &config).expect("the claim is taken and the intent lands");
        claimed.push(t.elapsed().as_secs_f64() * 1e3);
    }
    (median(bare), median(claimed))
}

fn main() {
    let tmp = std::env::temp_dir().join(format!("baton-bench-claims-{}", std::process::id()));
    let remote = tmp.join("remote.git");
    std::fs::create_dir_all(&remote).expect("temp dir");
    let ok = Command::new("git").args(["init", "-q", "--bare"]).current_dir(&remote).status();
    assert!(ok.is_ok_and(|s| s.success()), "git init --bare");
    let mut core = CoreComponent::load().expect("the component loads");
    println!("ownership claims: `ledger intend` of a new resource, in-process, median of {ROUNDS}");
    println!("{:<6} {:>16} {:>16} {:>8}", "store", "fenced write ms", "claim+intent ms", "ratio");
    let specs =
        [("dir", format!("dir:{}", tmp.join("dir").display())), ("git", format!("git:file://{}", remote.display()))];
    for (name, spec) in specs {
        let store = open_store(&mut core, Some(&spec), false).expect("opens the store");
        let (bare, claimed) = measure(&mut core, &store);
        println!("{name:<6} {bare:>16.2} {claimed:>16.2} {:>7.2}x", claimed / bare);
    }
    let _ = std::fs::remove_dir_all(&tmp);
}
