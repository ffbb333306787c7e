//! The etcd store, printed as ratios against baselines measured in the same run (never asserted), on an
//! etcd of its own (`etcd` on free loopback ports with a temp data dir, stopped at the end): the lease
//! cycle (acquire, one fenced write, release) in process and as three CLI processes, against the floor of
//! three raw etcd transactions (compare a revision, put) made with the same client crate (`etcd-client`),
//! and `etcdctl lock <name> true` as one process (etcd's own lock: lease grant, lock, unlock, revoke).
//!
//! `bash scripts/bench.sh` runs it; alone: `cargo build --release -p baton-native --bin baton --example
//! bench_etcd && BATON_BIN=target/release/baton target/release/examples/bench_etcd`.

#[path = "bench_common/figures.rs"]
mod figures;

use baton_native::commands::open_store;
use baton_native::engine::wit::etcd;
use baton_native::engine::wit::locks::{FencedWriteRequest, LockOp};
use baton_native::engine::wit::types::{CellFile, Change};
use baton_native::engine::{CoreComponent, acquire_op, lock_answer_json, release_op};
use etcd_client::{Client, Compare, CompareOp, Txn, TxnOp};
use serde_json::{Value, json};
use std::io::Write;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const CYCLES: usize = 61;

fn median(mut s: Vec<f64>) -> f64 {
    s.sort_by(f64::total_cmp);
    s[s.len() / 2]
}

/// Median wall time of `runs` calls of `f`, in milliseconds.
fn median_ms(runs: usize, mut f: impl FnMut()) -> f64 {
    median(
        (0..runs)
            .map(|_| {
                let t = Instant::now();
                f();
                t.elapsed().as_secs_f64() * 1e3
            })
            .collect(),
    )
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").expect("a free port").local_addr().expect("its address").port()
}

/// A one-member etcd on free loopback ports with its data in `dir`; waits until it answers.
fn start_etcd(dir: &Path) -> (Child, String) {
    let (client, peer) = (free_port(), free_port());
    let url = format!("http://127.0.0.1:{client}");
    let peer_url = format!("http://127.0.0.1:{peer}");
    let child = Command::new("etcd")
        .args(["--name", "bench", "--data-dir"])
        .arg(dir)
        .args(["--listen-client-urls", &url, "--advertise-client-urls", &url])
        .args(["--listen-peer-urls", &peer_url, "--initial-advertise-peer-urls", &peer_url])
        .args(["--initial-cluster", &format!("bench={peer_url}"), "--log-level", "warn", "--logger", "zap"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("etcd is not installed: run scripts/setup.sh");
    let started = Instant::now();
    while !etcdctl(&url, &["endpoint", "health"]) {
        assert!(started.elapsed() < Duration::from_secs(30), "etcd did not start");
        std::thread::sleep(Duration::from_millis(100));
    }
    (child, url)
}

fn etcdctl(url: &str, args: &[&str]) -> bool {
    Command::new("etcdctl")
        .args(["--endpoints", url])
        .args(args)
        .env("ETCDCTL_API", "3")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Runs `baton <args> --json` in `dir` with `envs`, asserting success; returns the JSON envelope.
fn baton(bin: &str, dir: &Path, args: &[&str], envs: &[(&str, &str)], stdin: Option<&str>) -> Value {
    let mut child = Command::new(bin)
        .current_dir(dir)
        .args(args)
        .arg("--json")
        .envs(envs.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("baton spawns");
    let mut input = child.stdin.take().expect("stdin");
    input.write_all(stdin.unwrap_or("").as_bytes()).expect("stdin written");
    drop(input);
    let out = child.wait_with_output().expect("baton runs");
    assert!(out.status.success(), "baton {args:?} failed: {}", String::from_utf8_lossy(&out.stdout));
    serde_json::from_slice(&out.stdout).unwrap_or(Value::Null)
}

fn main() {
    let bin = std::env::var("BATON_BIN").unwrap_or_else(|_| "target/release/baton".into());
    let bin = std::fs::canonicalize(&bin).map_or(bin, |p| p.display().to_string());
    let tmp = std::env::temp_dir().join(format!("baton-bench-etcd-{}", std::process::id()));
    let cwd = tmp.join("cwd");
    std::fs::create_dir_all(&cwd).expect("temp dir");
    let (mut etcd, url) = start_etcd(&tmp.join("data"));
    let spec = format!("etcd:{url}");

    // Floor: three transactions, each comparing the key's revision and writing it, with etcd-client.
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime");
    let mut client = rt.block_on(Client::connect([url.as_str()], None)).expect("connects");
    let mut same_client = client.clone();
    let mut revision = 0;
    let mut raw_txn = || {
        let txn = Txn::new()
            .when(vec![Compare::mod_revision("/bench/floor", CompareOp::Equal, revision)])
            .and_then(vec![TxnOp::put("/bench/floor", "x", None)]);
        let r = rt.block_on(client.txn(txn)).expect("txn");
        assert!(r.succeeded(), "the floor's compare held");
        revision = r.header().expect("a header").revision();
    };
    raw_txn();
    // The same three transactions shaped as baton's: a compare on each of the four state files, the lock
    // and the epoch written (a lock record's size), the four gets of a refused compare in the failure branch.
    let mut revs = [0i64; 4];
    let lock_record = "{\n  \"holder\": \"inproc-1\",\n  \"acquiredAt\": \"2026-01-01T00:00:00.000Z\",\n  \"expiresAt\": \"2026-01-01T00:01:00.000Z\",\n  \"epoch\": 1\n}\n";
    let mut shaped_txn = || {
        let keys = [
            "/bench/shaped/lock.json",
            "/bench/shaped/epoch.json",
            "/bench/shaped/latest.json",
            "/bench/shaped/claim.json",
        ];
        let txn = Txn::new()
            .when(
                keys.iter().zip(revs).map(|(k, r)| Compare::mod_revision(*k, CompareOp::Equal, r)).collect::<Vec<_>>(),
            )
            .and_then(vec![TxnOp::put(keys[0], lock_record, None), TxnOp::put(keys[1], "{\n  \"epoch\": 1\n}\n", None)])
            .or_else(keys.iter().map(|k| TxnOp::get(*k, None)).collect::<Vec<_>>());
        let r = rt.block_on(same_client.txn(txn)).expect("txn");
        assert!(r.succeeded(), "the shaped compare held");
        let rev = r.header().expect("a header").revision();
        revs = [rev, rev, 0, 0];
    };
    shaped_txn();

    // The same cycle in process, through the library's store (one client, the cell as last committed).
    let mut core = CoreComponent::load().expect("the component loads");
    let store = open_store(&mut core, Some(&spec), false).expect("opens the etcd store");
    let mut i = 0u64;
    let mut in_process_cycle = || {
        i += 1;
        let holder = format!("inproc-{i}");
        let lock = store
            .transact(&mut core, "preview", "pr-2", |core, cell, now| {
                core.lock_decide(&cell, now, &acquire_op(&holder, 60_000)).map(|a| lock_answer_json(&a))
            })
            .expect("acquires");
        let epoch = lock["lock"]["epoch"].clone();
        store
            .transact(&mut core, "preview", "pr-2", |core, cell, now| {
                let epoch = epoch.as_u64().unwrap_or_default();
                let (holder, file, content) = (holder.clone(), "state.json".to_owned(), "{}".to_owned());
                core.fenced_write(&cell, now, FencedWriteRequest { holder, epoch, file, content })
            })
            .expect("writes");
        store
            .transact(&mut core, "preview", "pr-2", |core, cell, _| {
                core.lock_decide(&cell, 0, &release_op(&holder, epoch.as_u64())).map(|a| lock_answer_json(&a))
            })
            .expect("releases");
    };
    in_process_cycle();
    // Interleaved, one floor sample then one cycle, so that the machine's drift hits both alike.
    let (mut floors, mut cycles, mut shaped) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..CYCLES {
        let t = Instant::now();
        for _ in 0..3 {
            shaped_txn();
        }
        shaped.push(t.elapsed().as_secs_f64() * 1e3);
        let t = Instant::now();
        for _ in 0..3 {
            raw_txn();
        }
        floors.push(t.elapsed().as_secs_f64() * 1e3);
        let t = Instant::now();
        in_process_cycle();
        cycles.push(t.elapsed().as_secs_f64() * 1e3);
    }
    let (floor, in_process, shaped) = (median(floors), median(cycles), median(shaped));

    // The lease cycle through the CLI: three processes.
    let store_args = ["--store", spec.as_str(), "--scope", "pr-1"];
    let cycle = || {
        let lock = baton(&bin, &cwd, &[&["lock", "acquire"][..], &store_args].concat(), &[], None);
        let holder = lock["lock"]["holder"].as_str().expect("holder in the envelope").to_owned();
        let epoch = lock["lock"]["epoch"].to_string();
        let envs = [("BATON_HOLDER", holder.as_str()), ("BATON_EPOCH", epoch.as_str())];
        baton(&bin, &cwd, &[&["write", "state.json"][..], &store_args].concat(), &envs, Some("{}"));
        baton(&bin, &cwd, &[&["lock", "release"][..], &store_args].concat(), &envs, None);
    };
    cycle();
    let cli_runs = CYCLES.min(15);
    let cli = median_ms(cli_runs, cycle);

    // What the core's calls of one cycle cost (per operation its decision and its etcd transaction, on the
    // cell as the store holds it), in a hot loop and each right after a raw transaction as in the cycle:
    // after a network wait the first code to run is cold (caches, TLB), and the core's calls feel it most.
    let empty = json!({ "env": "preview", "scope": "pr-2", "files": {} });
    let held = json!({ "env": "preview", "scope": "pr-2", "files": { "lock.json": lock_record, "epoch.json": "{\n  \"epoch\": 1\n}\n" } });
    let now_ms = 1_767_225_601_000i64; // within the lock record's minute
    let one_op = |core: &mut CoreComponent, op: &str| {
        let (cell, op) = match op {
            "lock-acquire" => (&empty, acquire_op("inproc-1", 60_000)),
            "fenced-write" => (
                &held,
                LockOp::FencedWrite(FencedWriteRequest {
                    holder: "inproc-1".into(),
                    epoch: 1,
                    file: "state.json".into(),
                    content: "{}".into(),
                }),
            ),
            _ => (&held, release_op("inproc-1", Some(1))),
        };
        let answer = lock_answer_json(&core.lock_decide(cell, now_ms, &op).expect("the core decides"));
        // The store's plan of the commit, through the typed `etcd` interface as the store asks it.
        let changes = answer["changes"].as_array().into_iter().flatten().map(|c| match c["op"].as_str() {
            Some("write") => Change::Write(CellFile {
                name: c["file"].as_str().unwrap_or_default().to_owned(),
                content: c["content"].as_str().unwrap_or_default().to_owned(),
            }),
            _ => Change::Delete(c["file"].as_str().unwrap_or_default().to_owned()),
        });
        let revision = |file: &str| etcd::FileRevision { file: file.to_owned(), mod_revision: 7 };
        let plan = etcd::TxnRequest {
            cell: "/baton/preview/pr-2/".to_owned(),
            revisions: vec![revision("lock.json"), revision("epoch.json")],
            changes: changes.collect(),
        };
        core.etcd_txn(&plan).expect("the core plans the transaction");
    };
    let ops = ["lock-acquire", "fenced-write", "lock-release"];
    let hot = median_ms(CYCLES, || ops.iter().for_each(|op| one_op(&mut core, op)));
    let after_io = median(
        (0..CYCLES)
            .map(|_| {
                let mut spent = 0.0;
                for op in ops {
                    raw_txn();
                    let t = Instant::now();
                    one_op(&mut core, op);
                    spent += t.elapsed().as_secs_f64() * 1e3;
                }
                spent
            })
            .collect(),
    );

    // etcd's own lock as one process: lease grant, lock, run `true`, unlock, lease revoke.
    let etcdctl_lock = median_ms(cli_runs, || assert!(etcdctl(&url, &["lock", "bench-lock", "true"]), "etcdctl lock"));

    println!("lease cycle on the etcd store, one local etcd member (median of {CYCLES}; processes: {cli_runs})");
    println!("  native in-process (EtcdStore, one client)                {in_process:>8.2} ms per cycle");
    println!(
        "  3 raw etcd transactions (etcd-client, compare + put)     {floor:>8.2} ms   (interleaved with the above)"
    );
    println!("  3 raw etcd transactions shaped as baton's (4 compares)   {shaped:>8.2} ms   (interleaved too)");
    println!("  the core's 6 calls of one cycle, in a hot loop           {hot:>8.2} ms");
    println!("  the same, each operation's right after a raw transaction {after_io:>8.2} ms   (as in the cycle)");
    println!("  baton CLI, 3 processes (acquire, fenced write, release)  {cli:>8.2} ms per cycle");
    println!("  etcdctl lock <name> true, 1 process                      {etcdctl_lock:>8.2} ms");
    println!(
        "  ratio in-process / raw txns: {:.2}x (target 1.2x; / shaped txns {:.2}x)   CLI / raw txns: {:.2}x   CLI / etcdctl lock: {:.2}x",
        in_process / floor,
        in_process / shaped,
        cli / floor,
        cli / etcdctl_lock
    );

    let raw3 = "3 raw etcd transactions";
    figures::record("etcd store", "lease cycle, in-process", in_process, "ms", raw3, floor, Some(1.2));
    figures::record("etcd store", "lease cycle, CLI (3 processes)", cli, "ms", raw3, floor, None);
    drop(store);
    let _ = etcd.kill();
    let _ = etcd.wait();
    let _ = std::fs::remove_dir_all(&tmp);
}
