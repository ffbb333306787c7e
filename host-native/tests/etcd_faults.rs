//! Faults on a three-member etcd cluster on one machine (loopback ports of its own) while `baton run`s hold
//! leases and make fenced writes: the leader SIGKILLed, the leader SIGSTOPped past the TTL, the whole
//! cluster stopped and restarted (briefly, and for longer than the TTL). Every run either keeps its lease
//! (exit 0) or stops with `LOCK_LOST` (exit 3) before its lease could have expired for others; no other
//! outcome is accepted. One cluster for the file, the faults one after another; the outcomes are printed.

mod common;

use common::etcd::Cluster;
use common::{BATON, TempDir, command, envelope, wait_for, with_json};
use serde_json::Value;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

/// `n` runs on scopes `<name>-<i>`, each holding its lease with `ttl` for `work_secs` seconds of fenced
/// writes (one every 200 ms); returns when every command has started.
fn start_runs(t: &TempDir, c: &Cluster, name: &str, n: usize, ttl: &str, work_secs: u32) -> Vec<Child> {
    let d = t.0.display();
    let runs: Vec<Child> = (0..n)
        .map(|i| {
            let script = format!(
                "touch {d}/{name}-{i}.started; end=$(( $(date +%s) + {work_secs} )); while [ $(date +%s) -lt $end ]; do echo x | {BATON} write state.txt 2>>{d}/{name}-{i}.err && touch {d}/{name}-{i}.wrote; sleep 0.2; done"
            );
            command(&t.0, &with_json(&["run", "--scope", &format!("{name}-{i}"), "--ttl", ttl, "--", "sh", "-c", &script]))
                .env("BATON_STORE", c.spec())
                .env("BATON_STORE_BUDGET_MS", "3000")
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    wait_for("every run's command to start", Duration::from_secs(30), || {
        (0..n).all(|i| t.0.join(format!("{name}-{i}.started")).exists())
    });
    runs
}

/// How each run ended: `ok` or its error code, and when (since `since`). Panics on any other outcome.
fn outcomes(name: &str, runs: Vec<Child>, since: Instant) -> Vec<(String, Duration)> {
    let ended: Vec<(String, Duration)> = runs
        .into_iter()
        .map(|child| {
            let out = child.wait_with_output().unwrap();
            let at = since.elapsed();
            let env: Value = envelope(&out);
            let code = if out.status.code() == Some(0) { "ok".to_owned() } else { env["error"]["code"].to_string() };
            let fine = code == "ok" || (out.status.code() == Some(3) && code == "\"LOCK_LOST\"");
            assert!(
                fine,
                "{name}: a run ended {code} (exit {:?}): {env}\n{}",
                out.status.code(),
                String::from_utf8_lossy(&out.stderr)
            );
            (code, at)
        })
        .collect();
    println!("etcd fault `{name}`: {ended:?}");
    ended
}

#[test]
fn runs_keep_their_lease_or_stop_with_lock_lost_through_cluster_faults() {
    let t = TempDir::new("etcd-faults");
    let mut c = Cluster::start("faults", 3);

    // The leader SIGKILLed mid-run (a new one is elected within about a second), then restarted. A TTL of 6 s
    // (stop 4.8 s after a renewal was sent) leaves a renewal the time to time out on the dead leader (2 s) and
    // move to a live member even on a loaded machine; with 3 s every run sometimes stopped (LOCK_LOST).
    let runs = start_runs(&t, &c, "leader-killed", 3, "6s", 5);
    let leader = c.leader().expect("a leader");
    std::thread::sleep(Duration::from_millis(1000));
    let killed = Instant::now();
    c.members[leader].kill();
    let ended = outcomes("leader SIGKILLed", runs, killed);
    c.restart(leader);
    c.wait_healthy(Duration::from_secs(30));
    assert!(ended.iter().filter(|(o, _)| o == "ok").count() >= 1, "a lost leader does not end every run: {ended:?}");

    // The leader SIGSTOPped for longer than the TTL: alive but silent (its requests hang until the attempt
    // times out, 2 s), while the others elect a new leader. With a TTL of 6 s (renewal every 2 s, stop at
    // 4.8 s after a renewal was sent) a renewal has the time to move to a live member.
    let runs = start_runs(&t, &c, "leader-paused", 3, "6s", 9);
    let leader = c.leader().expect("a leader");
    let paused = Instant::now();
    c.members[leader].pause();
    std::thread::sleep(Duration::from_millis(7000));
    let ended = outcomes("leader SIGSTOPped past the TTL", runs, paused);
    c.members[leader].resume();
    c.wait_healthy(Duration::from_secs(30));
    assert!(ended.iter().filter(|(o, _)| o == "ok").count() >= 1, "a paused member does not end every run: {ended:?}");

    // The whole cluster stopped for 1 s and restarted: well within the TTL, every run keeps its lease.
    let runs = start_runs(&t, &c, "cluster-blip", 3, "8s", 6);
    std::thread::sleep(Duration::from_millis(500));
    let stopped = Instant::now();
    for m in &mut c.members {
        m.kill();
    }
    std::thread::sleep(Duration::from_millis(1000));
    for i in 0..3 {
        c.restart(i);
    }
    let ended = outcomes("whole cluster stopped for 1 s", runs, stopped);
    c.wait_healthy(Duration::from_secs(30));
    assert!(ended.iter().all(|(o, _)| o == "ok"), "{ended:?}");

    // The whole cluster stopped for longer than the TTL: every run stops with LOCK_LOST by itself while the
    // store is still down, before its lease could expire for others (TTL 3 s, from its last renewal).
    let runs = start_runs(&t, &c, "cluster-down", 3, "3s", 20);
    std::thread::sleep(Duration::from_millis(300));
    let stopped = Instant::now();
    for m in &mut c.members {
        m.kill();
    }
    let ended = outcomes("whole cluster stopped past the TTL", runs, stopped);
    for i in 0..3 {
        c.restart(i);
    }
    c.wait_healthy(Duration::from_secs(30));
    assert!(ended.iter().all(|(o, _)| o == "\"LOCK_LOST\""), "{ended:?}");
    // The lease was last renewed at most TTL/3 (1 s) before the stop and expires for others 3 s after that;
    // the run stops its command before, then gives its release up within the store budget (3 s): every run
    // ended while the cluster was still down, without waiting for it to come back.
    for (i, (_, at)) in ended.iter().enumerate() {
        assert!(*at < Duration::from_secs(12), "cluster-down-{i} took {at:?} to stop");
    }
    // And after the restart a new run takes each scope over (the old locks expired, epochs go on).
    for i in 0..3 {
        let out = command(&t.0, &with_json(&["run", "--scope", &format!("cluster-down-{i}"), "--", "true"]))
            .env("BATON_STORE", c.spec())
            .output()
            .unwrap();
        let env = envelope(&out);
        assert_eq!(out.status.code(), Some(0), "{env}");
        assert!(env["lock"]["epoch"].as_u64() >= Some(2), "{env}");
    }
}
