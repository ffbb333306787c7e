//! The git store, printed as ratios against baselines measured in the same run (never asserted), against a
//! local bare remote (`git init --bare` in a temp dir, reached through a `file://` URL, removed at the end):
//! the lease cycle (acquire, one fenced write, release) against the same number of raw `git push` round
//! trips, and 8 scopes run in parallel against one.
//!
//! `bash scripts/bench.sh` runs it; alone: `cargo build --release -p baton-native --bin baton --example
//! bench_git && BATON_BIN=target/release/baton target/release/examples/bench_git`.

#[path = "bench_common/figures.rs"]
mod figures;

use baton_native::commands::open_store;
use baton_native::engine::wit::locks::FencedWriteRequest;
use baton_native::engine::{CoreComponent, acquire_op, lock_answer_json, release_op};
use serde_json::Value;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

const CYCLES: usize = 15;
const PARALLEL: usize = 8;
const ROUNDS: usize = 5;

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

/// Runs `git` in `dir`, quietly, asserting success.
fn git(dir: &Path, args: &[&str]) {
    let ok = Command::new("git")
        .current_dir(dir)
        .args(["-c", "user.name=bench", "-c", "user.email=bench@example.invalid", "-c", "commit.gpgsign=false"])
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "git {args:?} failed");
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

/// Starts `baton run --store <spec> --scope <scope> -- true` in `dir`.
fn spawn_run(bin: &str, dir: &Path, spec: &str, scope: &str) -> std::process::Child {
    Command::new(bin)
        .current_dir(dir)
        .args(["run", "--store", spec, "--scope", scope, "--", "true"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("baton run spawns")
}

fn main() {
    let bin = std::env::var("BATON_BIN").unwrap_or_else(|_| "target/release/baton".into());
    let bin = std::fs::canonicalize(&bin).map_or(bin, |p| p.display().to_string());
    let tmp = std::env::temp_dir().join(format!("baton-bench-git-{}", std::process::id()));
    let remote = tmp.join("remote.git");
    let work = tmp.join("work");
    let cwd = tmp.join("cwd");
    for d in [&remote, &work, &cwd] {
        std::fs::create_dir_all(d).expect("temp dir");
    }
    git(&remote, &["init", "-q", "--bare"]);
    let url = format!("file://{}", remote.display());
    let spec = format!("git:{url}");

    // Floor: one round trip is a commit on a work clone and a push of it to a ref of the same remote.
    git(&work, &["init", "-q"]);
    git(&work, &["remote", "add", "origin", &url]);
    let push = || {
        git(&work, &["commit", "-q", "--allow-empty", "-m", "x"]);
        git(&work, &["push", "-q", "origin", "HEAD:refs/heads/bench/floor"]);
    };
    push(); // create the ref
    let floor = median_ms(CYCLES, || {
        for _ in 0..3 {
            push();
        }
    });
    let one_push = median_ms(CYCLES, push);
    // What any run of the protocol does at the least, raw: a fresh bare clone, a shallow fetch of the cell's
    // ref, and two commit-and-push round trips (the grant with the checkpoint, the final receipt with the
    // release). `baton run -- true` is compared with it as well as with one push.
    let fresh = tmp.join("fresh.git");
    let run_floor = median_ms(CYCLES, || {
        let _ = std::fs::remove_dir_all(&fresh);
        std::fs::create_dir_all(&fresh).expect("temp dir");
        git(&fresh, &["init", "-q", "--bare"]);
        git(&fresh, &["fetch", "-q", "--no-tags", "--depth=1", &url, "refs/heads/bench/floor"]);
        push();
        push();
    });

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
    cycle(); // create the ref and warm the compile cache
    let cli = median_ms(CYCLES, cycle);

    // The same cycle in process, through the library's store (one working clone kept across cycles).
    let mut core = CoreComponent::load().expect("the component loads");
    let store = open_store(&mut core, Some(&spec), false).expect("opens the git store");
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
    in_process_cycle(); // create the ref and the working clone
    let in_process = median_ms(CYCLES, in_process_cycle);

    println!("lease cycle on the git store, local bare remote via file:// (median of {CYCLES})");
    println!("  baton CLI, 3 processes (acquire, fenced write, release)  {cli:>8.2} ms per cycle");
    println!("  native in-process (GitStore, one working clone)         {in_process:>8.2} ms per cycle");
    println!("  3 raw round trips (commit + git push each)               {floor:>8.2} ms");
    println!("  ratio CLI / raw pushes: {:.2}x   in-process / raw pushes: {:.2}x", cli / floor, in_process / floor);
    let raw3 = "3 raw commit-and-push round trips";
    figures::record("git store", "lease cycle, in-process", in_process, "ms", raw3, floor, Some(1.0));
    figures::record("git store", "lease cycle, CLI (3 processes)", cli, "ms", raw3, floor, None);

    // Scopes in parallel: one ref per cell, so different scopes should not contend.
    let one_run = |scope: &str| {
        assert!(spawn_run(&bin, &cwd, &spec, scope).wait().is_ok_and(|s| s.success()), "baton run {scope}");
    };
    one_run("pr-10");
    for k in 0..PARALLEL {
        one_run(&format!("pr-{}", 100 + k)); // create the refs, so every round measures the same work
    }
    let one = median_ms(ROUNDS, || one_run("pr-10"));
    // What a run costs in round trips: `baton run -- true` (grant + checkpoint, final receipt + release).
    let run_true = median_ms(CYCLES, || one_run("pr-10"));
    println!("`baton run -- true` on the git store (median of {CYCLES})");
    println!("  baton run -- true          {run_true:>8.2} ms");
    println!("  1 raw commit-and-push      {one_push:>8.2} ms");
    println!("  raw floor of a run         {run_floor:>8.2} ms   (fresh bare clone, shallow fetch, 2 commit-and-push)");
    println!(
        "  ratio: {:.2}x one push (target 2.2x: two pushes, one fetch, the process); {:.2}x the raw floor of a run",
        run_true / one_push,
        run_true / run_floor
    );
    figures::record("git store", "baton run -- true", run_true, "ms", "1 raw commit-and-push", one_push, Some(2.2));
    figures::record(
        "git store",
        "baton run -- true, vs its raw floor",
        run_true,
        "ms",
        "raw floor of a run",
        run_floor,
        None,
    );
    let many = median_ms(ROUNDS, || {
        let children: Vec<_> =
            (0..PARALLEL).map(|k| spawn_run(&bin, &cwd, &spec, &format!("pr-{}", 100 + k))).collect();
        for mut c in children {
            assert!(c.wait().is_ok_and(|s| s.success()), "baton run (parallel)");
        }
    });
    println!("\n{PARALLEL} scopes in parallel vs 1, `baton run -- true` on the git store (median of {ROUNDS})");
    println!("  1 run                 {one:>8.2} ms wall   {:>7.1} runs/s", 1e3 / one);
    println!("  {PARALLEL} runs in parallel    {many:>8.2} ms wall   {:>7.1} runs/s", PARALLEL as f64 * 1e3 / many);
    println!(
        "  ratio wall {PARALLEL} / 1: {:.2}x (1.00x = no contention)   throughput {PARALLEL} / 1: {:.2}x",
        many / one,
        (PARALLEL as f64 / many) / (1.0 / one)
    );
    figures::record("git store", "8 scopes in parallel, wall", many, "ms", "1 run", one, None);

    drop(store);
    let _ = std::fs::remove_dir_all(&tmp);
}
