//! Benchmarks, printed as ratios against baselines measured in the same run (never asserted).
//!
//! `cargo run --release -p baton-native --example bench` (or `bash scripts/bench.sh`, which also builds
//! the wasm and passes the Node figures in `BATON_BENCH_NODE`, a JSON object from host-node/bench/bench.mjs).
//! `BATON_BENCH_BEFORE=<another baton binary>` adds that build's cold start, measured in the same run.

#[path = "bench_common/figures.rs"]
mod figures;

use baton_native::engine::wit::locks::FencedWriteRequest;
use baton_native::engine::{CoreComponent, acquire_op, lock_answer_json, release_op};
use baton_native::store::DirStore;
use serde_json::Value;
use std::process::{Command, Stdio};
use std::time::Instant;

const CALLS: u32 = 20_000;

/// Median of `rounds` measurements of `f`, in microseconds per call.
fn per_call(rounds: usize, calls: u32, mut f: impl FnMut()) -> f64 {
    let mut samples: Vec<f64> = (0..rounds)
        .map(|_| {
            let t = Instant::now();
            for _ in 0..calls {
                f();
            }
            t.elapsed().as_secs_f64() * 1e6 / f64::from(calls)
        })
        .collect();
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

/// Median wall time of running a command `runs` times, in milliseconds.
fn per_process(runs: usize, program: &str, args: &[&str]) -> f64 {
    let mut samples: Vec<f64> = (0..runs)
        .map(|_| {
            let t = Instant::now();
            let ok = Command::new(program)
                .args(args)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success());
            assert!(ok, "{program} {args:?} failed");
            t.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

/// Median wall time of `runs` processes of `baton scope --branch x`, each the first on its machine as far
/// as baton can tell: `$HOME`, `$XDG_CACHE_HOME` and `$BATON_CACHE_DIR` point into a fresh empty folder (so a
/// build that kept a compile cache there, as older ones did, pays its compile every time).
fn first_starts(runs: usize, baton: &str, tmp: &std::path::Path) -> f64 {
    let mut samples: Vec<f64> = (0..runs)
        .map(|i| {
            let home = tmp.join(format!("home-{i}"));
            let t = Instant::now();
            scope_in(baton, &home);
            let ms = t.elapsed().as_secs_f64() * 1e3;
            let _ = std::fs::remove_dir_all(&home);
            ms
        })
        .collect();
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

/// Like [`first_starts`], but every process shares one such folder, after one unmeasured process: the start
/// of an older build whose compile cache is warm.
fn cached_starts(runs: usize, baton: &str, tmp: &std::path::Path) -> f64 {
    let home = tmp.join("home-shared");
    scope_in(baton, &home);
    let mut samples: Vec<f64> = (0..runs)
        .map(|_| {
            let t = Instant::now();
            scope_in(baton, &home);
            t.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

/// One `baton scope --branch x` with `$HOME` and both cache variables in `home` (created if missing).
fn scope_in(baton: &str, home: &std::path::Path) {
    std::fs::create_dir_all(home).expect("temp dir");
    let ok = Command::new(baton)
        .args(["scope", "--branch", "x"])
        .env("HOME", home)
        .env("XDG_CACHE_HOME", home.join(".cache"))
        .env("BATON_CACHE_DIR", home.join(".cache/baton"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "{baton} scope --branch x failed");
}

/// One per-call row: native (the typed function, and the same decision on JSON text through
/// `api::invoke`, the baseline issue 12 measured against when every path was text), the component and Node
/// (or why Node has no figure), as ratios to both natives; recorded as figures against the typed one
/// (targets: the component 1.3x, Node 2x).
fn print_row(name: &str, native: f64, native_json: f64, component: f64, node_us: Result<f64, &str>) {
    print!(
        "  {name:<18} native {native:>6.2} us (JSON text {native_json:>5.2})   component {component:>6.2} us ({:>5.2}x; {:>5.2}x JSON)",
        component / native,
        component / native_json
    );
    figures::record("per call", &format!("{name}, component"), component, "us", "native Rust", native, Some(1.3));
    match node_us {
        Ok(n) => {
            println!("   node {n:>6.2} us ({:>5.2}x; {:>5.2}x JSON)", n / native, n / native_json);
            figures::record("per call", &format!("{name}, node"), n, "us", "native Rust", native, Some(2.0));
        }
        Err(why) => println!("   node: {why}"),
    }
}

fn main() {
    let node: Value =
        std::env::var("BATON_BENCH_NODE").ok().and_then(|s| serde_json::from_str(&s).ok()).unwrap_or(Value::Null);
    let mut core = CoreComponent::load().expect("the component loads");
    println!("per-call cost (median of 7 x {CALLS} calls), ratio to native Rust");
    // `decisions.scope-for`, typed (names in, the scope out), against the core's function.
    let native = per_call(7, CALLS, || {
        std::hint::black_box(baton_core::scope::scope_for("feat/search", None, None));
    });
    let component = per_call(7, CALLS, || {
        std::hint::black_box(core.scope_for("feat/search", None, None).expect("decides"));
    });
    let scope_text = r#"{"branch":"feat/search","pr":null}"#;
    let native_json = per_call(7, CALLS, || {
        std::hint::black_box(baton_core::api::invoke("scope-for", scope_text).expect("decides"));
    });
    let node_scope = node["scopeForUs"].as_f64().ok_or("not measured (run scripts/bench.sh)");
    print_row("scope_for", native, native_json, component, node_scope);

    // The typed interface (`locks.apply`): records in, records out, against the core's typed function.
    let typed_cell = baton_core::cell::Cell { env: "preview".into(), scope: "pr-1".into(), ..Default::default() };
    let typed_op = baton_core::typed::LockOp::LockAcquire { holder: "run-1".into(), ttl_ms: 900_000, label: None };
    let wit_cell = baton_native::engine::wit::types::Cell {
        env: "preview".into(),
        scope: "pr-1".into(),
        files: Vec::new(),
        label: None,
    };
    let wit_op =
        baton_native::engine::wit::locks::LockOp::LockAcquire(baton_native::engine::wit::locks::AcquireRequest {
            holder: "run-1".into(),
            ttl_ms: 900_000,
            label: None,
        });
    let now = 1_791_633_600_000_i64;
    let native = per_call(7, CALLS, || {
        std::hint::black_box(baton_core::typed::apply_lock_op(&typed_cell, now, &typed_op).expect("decides"));
    });
    let component = per_call(7, CALLS, || {
        std::hint::black_box(core.lock_apply(&wit_cell, now, &wit_op).expect("calls").expect("decides"));
    });
    let acquire_text = serde_json::json!({ "cell": { "env": "preview", "scope": "pr-1", "files": {} },
        "holder": "run-1", "ttlMs": 900_000, "nowMs": now })
    .to_string();
    let native_json = per_call(7, CALLS, || {
        std::hint::black_box(baton_core::api::invoke("lock-acquire", &acquire_text).expect("decides"));
    });
    // Node's figure: the acquire decision as the package's JS layer calls it (`call`: objects in and out).
    print_row(
        "acquire decision",
        native,
        native_json,
        component,
        node["acquireUs"].as_f64().ok_or("not measured (run scripts/bench.sh)"),
    );

    // What the boundaries cost with no decision behind them, in the same run: a component call that does
    // nothing (`lease.is-finished`: a borrowed handle in, a bool out, no string either way), and in Node the
    // JSON text of the acquire's request and answer made and read with no wasm call at all. A decision can
    // only be within 1.3x (2x) of native if its native cost is over 3.3x (1x) the floor.
    let lease = core
        .lease_create(&baton_native::engine::wit::leases::LeaseConfig {
            env: "preview".into(),
            scope: "pr-1".into(),
            holder: "run-1".into(),
            label: None,
            ttl_ms: None,
            margin_ms: None,
            renew_every_ms: None,
            wait: false,
            wait_timeout_ms: None,
            poll_ms: None,
            unique_holder: false,
            store_budget_ms: None,
        })
        .expect("a lease machine");
    let floor = per_call(7, CALLS, || {
        std::hint::black_box(core.lease_is_finished(&lease).expect("calls"));
    });
    core.lease_drop(lease).expect("drops");
    print!(
        "  boundary floor     component call that does nothing {floor:>6.2} us ({:.2}x the native acquire)",
        floor / native
    );
    match node["objectsFloorUs"].as_f64() {
        Some(n) => println!("   node: the acquire's JSON request and answer, no wasm {n:>6.2} us ({:.2}x)", n / native),
        None => println!(),
    }

    let baton = std::env::var("BATON_BIN").unwrap_or_else(|_| "target/release/baton".into());
    let tmp = std::env::temp_dir().join(format!("baton-bench-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).expect("temp dir");
    let git = per_process(31, "git", &["--version"]);
    let scope = first_starts(31, &baton, &tmp);
    let floor = per_process(31, &baton, &["--version"]);
    println!("\ncold start (median of 31 processes, each with an empty $HOME and cache folders)");
    println!("  baton scope {scope:.2} ms vs git --version {git:.2} ms: {:.2}x", scope / git);
    println!(
        "  of which the process without the core (baton --version: exec, dynamic linking, clap) {floor:.2} ms ({:.2}x git)",
        floor / git
    );
    if let Ok(before) = std::env::var("BATON_BENCH_BEFORE") {
        let first = first_starts(31, &before, &tmp);
        let warm = cached_starts(31, &before, &tmp);
        println!(
            "  before ({before}): {first:.2} ms ({:.2}x); with a compile cache it filled itself {warm:.2} ms ({:.2}x)",
            first / git,
            warm / git
        );
    }

    println!("\nlease cycle on the dir store (acquire, one fenced write, release)");
    let store = DirStore::new(tmp.join("store"), std::time::Duration::from_secs(30));
    let mut i = 0u64;
    let mut cycle = || {
        i += 1;
        let scope = format!("pr-{}", i % 50);
        let holder = format!("run-{i}");
        let lock = store
            .transact(&mut core, "preview", &scope, |core, cell, now| {
                core.lock_decide(&cell, now, &acquire_op(&holder, 60_000)).map(|a| lock_answer_json(&a))
            })
            .expect("acquires");
        let epoch = lock["lock"]["epoch"].clone();
        store
            .transact(&mut core, "preview", &scope, |core, cell, now| {
                let epoch = epoch.as_u64().unwrap_or_default();
                let (holder, file, content) = (holder.clone(), "state.json".to_owned(), "{}".to_owned());
                core.fenced_write(&cell, now, FencedWriteRequest { holder, epoch, file, content })
            })
            .expect("writes");
        store
            .transact(&mut core, "preview", &scope, |core, cell, _| {
                core.lock_decide(&cell, 0, &release_op(&holder, epoch.as_u64())).map(|a| lock_answer_json(&a))
            })
            .expect("releases");
    };
    // Node's cycle (host-node/bench/dir-cycle.mjs, a process of its own) runs between the native rounds, so
    // both see the same disk and load (fsyncs on a shared machine vary more than the gap measured); each
    // round's figure is the mean per cycle of 40 cycles, each side's the median of its 7 rounds.
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../host-node/bench/dir-cycle.mjs");
    let (mut native_rounds, mut node_store, mut node_lease) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..7 {
        native_rounds.push(per_call(1, 40, &mut cycle));
        let out = Command::new("node")
            .args([script, &tmp.join(format!("node-{round}")).display().to_string(), "40"])
            .stderr(Stdio::inherit())
            .output();
        let figures: Value = out.ok().and_then(|o| serde_json::from_slice(&o.stdout).ok()).unwrap_or(Value::Null);
        if let (Some(store), Some(lease)) = (figures["storeMs"].as_f64(), figures["leaseMs"].as_f64()) {
            node_store.push(store);
            node_lease.push(lease);
        }
    }
    let median_of = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v.get(v.len() / 2).copied()
    };
    let in_process = median_of(native_rounds).unwrap_or(f64::NAN);
    let flock_file = tmp.join("flock");
    let flock_path = flock_file.display().to_string();
    let flock = per_process(31, "flock", &[&flock_path, "true"]);
    let s = format!("dir:{}", tmp.join("cli").display());
    let cli = {
        let mut samples: Vec<f64> = (0..15)
            .map(|_| {
                let t = Instant::now();
                let run = |args: &[&str]| {
                    let ok = Command::new(&baton)
                        .args(args)
                        .env("BATON_STORE", &s)
                        .stdout(Stdio::null())
                        .stderr(Stdio::null())
                        .status();
                    assert!(ok.is_ok_and(|s| s.success()), "baton {args:?}");
                };
                run(&["lock", "acquire", "--scope", "pr-1", "--holder", "h"]);
                let mut w = Command::new(&baton)
                    .args(["write", "state.json", "--scope", "pr-1", "--holder", "h"])
                    .env("BATON_STORE", &s)
                    .env("BATON_EPOCH", epoch_of(&baton, &s))
                    .stdin(Stdio::piped())
                    .stderr(Stdio::null())
                    .spawn()
                    .expect("spawns");
                drop(w.stdin.take());
                assert!(w.wait().is_ok_and(|st| st.success()));
                run(&["lock", "release", "--scope", "pr-1", "--holder", "h"]);
                t.elapsed().as_secs_f64() * 1e3
            })
            .collect();
        samples.sort_by(f64::total_cmp);
        samples[samples.len() / 2]
    };
    println!("  native in-process (component decisions)  {:>8.3} ms per cycle", in_process / 1000.0);
    println!("  baton CLI, 3 processes (+1 status read)  {cli:>8.3} ms per cycle");
    println!("  flock(1) lock/unlock, 1 process          {flock:>8.3} ms");
    println!(
        "  ratio in-process / flock(1): {:.2}x   CLI / flock(1): {:.2}x",
        in_process / 1000.0 / flock,
        cli / flock
    );
    figures::record("dir store", "lease cycle, CLI (3 processes)", cli, "ms", "flock(1)", flock, None);
    figures::record("dir store", "lease cycle, native in-process", in_process / 1000.0, "ms", "flock(1)", flock, None);
    if let (Some(store), Some(lease)) = (median_of(node_store), median_of(node_lease)) {
        let native = in_process / 1000.0;
        println!(
            "  node, the same three store transactions {store:.3} ms vs native {native:.3} ms: {:.2}x (target 1.3x; interleaved rounds)",
            store / native
        );
        println!(
            "  node, through the lease machine (acquireLease, write, release) {lease:.3} ms: {:.2}x native",
            lease / native
        );
        let base = "native in-process (interleaved)";
        figures::record("dir store", "cycle, node in-process", store, "ms", base, native, Some(1.3));
        figures::record("dir store", "lease cycle, node (lease machine)", lease, "ms", base, native, None);
    } else {
        println!("  node cycle: not measured (node and host-node/pkg are needed: run scripts/bench.sh)");
    }
    if let (Some(cycle), Some(plf)) = (node["leaseCycleMs"].as_f64(), node["properLockfileMs"].as_f64()) {
        println!(
            "  node in-process cycle {cycle:.3} ms vs proper-lockfile lock/unlock {plf:.3} ms: {:.2}x",
            cycle / plf
        );
    } else {
        println!("  node lease cycle: not measured (run scripts/bench.sh)");
    }
    let _ = std::fs::remove_dir_all(&tmp);
}

/// The epoch of the lock `h` holds on pr-1 (one `lock status` process; counted in the CLI cycle).
fn epoch_of(baton: &str, store: &str) -> String {
    let out = Command::new(baton)
        .args(["lock", "status", "--scope", "pr-1", "--json"])
        .env("BATON_STORE", store)
        .output()
        .expect("status");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    v["lock"]["epoch"].to_string()
}
