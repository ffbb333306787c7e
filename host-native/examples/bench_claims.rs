//! What an ownership claim costs, printed as ratios (never asserted): `ledger intend` of a new resource
//! with its claim (the listing of the environment, the claim cell's compare-and-swap, then the fenced intent:
//! what `baton ledger intend` does) against the fenced intent alone (what it did before claims), in-process
//! on the dir store and on a git remote (a local bare repository through `file://`), in the same run.
//!
//! `bash scripts/bench.sh` runs it; alone: `cargo run --release -p baton-native --example bench_claims`.

use baton_native::commands::claim::{self, Claimer};
use baton_native::commands::open_store;
use baton_native::engine::{CoreComponent, acquire_op, lock_answer_json};
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

fn intend(core: &mut CoreComponent, store: &Store, epoch: u64, resource: &Value) {
    store
        .transact(core, ENV, SCOPE, |core, cell, now| {
            core.invoke(
                "ledger-intend",
                &json!({ "cell": cell, "holder": HOLDER, "epoch": epoch, "nowMs": now, "resource": resource }),
            )
        })
        .expect("the intent lands");
}

/// Medians (ms) of an intent alone and of a claim plus an intent, each on a new resource, interleaved.
fn measure(core: &mut CoreComponent, store: &Store) -> (f64, f64) {
    let grant = store
        .transact(core, ENV, SCOPE, |core, cell, now| {
            core.lock_decide(&cell, now, &acquire_op(HOLDER, 600_000)).map(|a| lock_answer_json(&a))
        })
        .expect("the lock is granted");
    let epoch = grant["lock"]["epoch"].as_u64().expect("an epoch");
    let (mut bare, mut claimed) = (Vec::new(), Vec::new());
    for i in 0..ROUNDS {
        let resource = json!({ "adapter": "bench", "key": format!("bare-{i}"), "provider": {} });
        let t = Instant::now();
        intend(core, store, epoch, &resource);
        bare.push(t.elapsed().as_secs_f64() * 1e3);

        let resource = json!({ "adapter": "bench", "key": format!("claimed-{i}"), "provider": {} });
        let who = Claimer {
            store,
            env: ENV,
            scope: SCOPE,
            holder: HOLDER,
            epoch,
            predecessor: &Value::Null,
            resource: &resource,
        };
        let t = Instant::now();
        claim::take(core, &who, false, None).expect("the claim is taken");
        intend(core, store, epoch, &resource);
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
    println!("{:<6} {:>16} {:>16} {:>8}", "store", "intent alone ms", "claim+intent ms", "ratio");
    let specs =
        [("dir", format!("dir:{}", tmp.join("dir").display())), ("git", format!("git:file://{}", remote.display()))];
    for (name, spec) in specs {
        let store = open_store(&mut core, Some(&spec), false).expect("opens the store");
        let (bare, claimed) = measure(&mut core, &store);
        println!("{name:<6} {bare:>16.2} {claimed:>16.2} {:>7.2}x", claimed / bare);
    }
    let _ = std::fs::remove_dir_all(&tmp);
}
