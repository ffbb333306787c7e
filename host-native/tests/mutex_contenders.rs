//! Issue 17: the dir store's mutex break is safe for any number of contenders. Several processes (this test
//! binary re-run as contenders) meet a stale mutex at the same instant, round after round (a dead owner's, the
//! original tool's of a dead owner, half a file); each proves it is the only holder by creating a marker
//! exclusively, so two owners at once show as a marker that already exists. `BATON_MUTEX_ROUNDS` (default
//! 1000) rounds of `BATON_MUTEX_CONTENDERS` (default 8) contenders, and 300 rounds of 4 native and 4 Node
//! contenders together; the Node-only twin is `host-node/test/mutex-contenders.test.mjs`.

use baton_native::engine::CoreComponent;
use baton_native::store::mutex::CellMutex;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

const PERIOD_MS: u64 = 12;

fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// Not a test on its own: the body of one contender process, run only when the test below starts this
/// binary with `BATON_MUTEX_CONTENDER=<root>,<rounds>,<t0>` (otherwise it returns at once). For each round
/// r it waits (busy) until `t0 + r * PERIOD_MS`, takes the mutex of `<root>/c<r>`, creates `held`
/// exclusively, holds a few hundred microseconds, removes `held` and releases; prints `RESULT <overlaps>`.
#[test]
fn contender_process() {
    let Ok(spec) = std::env::var("BATON_MUTEX_CONTENDER") else { return };
    let parts: Vec<&str> = spec.split(',').collect();
    let (root, rounds, t0) =
        (PathBuf::from(parts[0]), parts[1].parse::<u64>().unwrap(), parts[2].parse::<u64>().unwrap());
    let mut core = CoreComponent::load().unwrap();
    let mut overlaps = 0;
    for r in 0..rounds {
        let cell = root.join(format!("c{r}"));
        while now_ms() < t0 + r * PERIOD_MS {}
        let held = CellMutex::take(
            &mut core,
            &cell.join("lock.mutex"),
            "preview",
            &format!("c{r}"),
            std::time::Duration::from_secs(30),
        )
        .unwrap();
        let marker = cell.join("held");
        match std::fs::OpenOptions::new().write(true).create_new(true).open(&marker) {
            Ok(_) => {}
            Err(e) if e.kind() == ErrorKind::AlreadyExists => overlaps += 1,
            Err(e) => panic!("cannot create {}: {e}", marker.display()),
        }
        let until = Instant::now() + Duration::from_micros(u64::from(std::process::id() % 7) * 50);
        while Instant::now() < until {}
        let _ = std::fs::remove_file(&marker);
        drop(held);
    }
    println!("RESULT {overlaps}");
}

fn stale_contents(dead: u32) -> [String; 3] {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default().trim().to_owned();
    [
        format!("{{\"pid\":{dead},\"start\":\"1\",\"host\":\"{host}\",\"token\":\"deaddeaddeaddead\",\"at\":1}}\n"),
        format!("{{\"pid\":{dead},\"token\":\"0123456789abcdef\",\"at\":{}}}", now_ms()),
        "{\"pid\": 12".to_owned(),
    ]
}

fn leftovers(root: &Path, rounds: u64) -> Vec<String> {
    let mut left = Vec::new();
    for r in 0..rounds {
        for e in std::fs::read_dir(root.join(format!("c{r}"))).unwrap() {
            left.push(format!("c{r}/{}", e.unwrap().file_name().to_string_lossy()));
        }
    }
    left
}

/// Seeds `rounds` cells under a fresh root with stale mutexes, starts `native` contender processes of this
/// binary and `node` contenders of the Node package (`host-node/test/fixtures/mutex-contender.cjs`, same
/// schedule) and checks that none saw a second holder and nothing is left behind.
fn contend(name: &str, rounds: u64, native: u64, node: u64) {
    let root = std::env::temp_dir().join(format!("baton-mutex-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let dead = {
        let mut child = Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        pid
    };
    let stale = stale_contents(dead);
    for r in 0..rounds {
        let cell = root.join(format!("c{r}"));
        std::fs::create_dir_all(&cell).unwrap();
        std::fs::write(cell.join("lock.mutex"), &stale[(r % 3) as usize]).unwrap();
    }
    let t0 = now_ms() + 1500;
    let started = Instant::now();
    let exe = std::env::current_exe().unwrap();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("../host-node/test/fixtures/mutex-contender.cjs");
    let mut children: Vec<_> = (0..native)
        .map(|_| {
            Command::new(&exe)
                .args(["contender_process", "--exact", "--nocapture", "--test-threads=1"])
                .env("BATON_MUTEX_CONTENDER", format!("{},{rounds},{t0}", root.display()))
                .stdout(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for _ in 0..node {
        let child = Command::new("node")
            .arg(&fixture)
            .args([root.display().to_string(), rounds.to_string(), t0.to_string(), PERIOD_MS.to_string()])
            .stdout(Stdio::piped())
            .spawn()
            .expect("node runs the Node contenders (the project needs Node; scripts/setup.sh)");
        children.push(child);
    }
    for child in children {
        let out = child.wait_with_output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "a contender failed: {text}");
        // Native: `RESULT <n>`; Node: `{"rounds":..,"overlaps":<n>}`.
        let overlaps =
            text.split("RESULT ").nth(1).and_then(|t| t.split_whitespace().next().map(str::to_owned)).or_else(|| {
                serde_json::from_str::<serde_json::Value>(text.trim()).ok().map(|v| v["overlaps"].to_string())
            });
        assert_eq!(overlaps.as_deref(), Some("0"), "two holders at once: {text}");
    }
    eprintln!(
        "{name}: {rounds} rounds of {native} native and {node} Node contenders in {} ms",
        started.elapsed().as_millis()
    );
    assert_eq!(leftovers(&root, rounds), Vec::<String>::new(), "no mutex, claim or temp file is left behind");
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn many_contenders_meet_a_stale_mutex_never_two_holders() {
    if std::env::var_os("BATON_MUTEX_CONTENDER").is_some() {
        return; // this process is a contender (see `contender_process`)
    }
    contend("native", env_or("BATON_MUTEX_ROUNDS", 1000), env_or("BATON_MUTEX_CONTENDERS", 8), 0);
}

/// The two hosts break each other's stale mutexes by the same claim protocol: 4 native and 4 Node
/// contenders on the same cells (300 rounds by default, `BATON_MUTEX_MIXED_ROUNDS`).
#[test]
fn native_and_node_contenders_meet_a_stale_mutex_never_two_holders() {
    if std::env::var_os("BATON_MUTEX_CONTENDER").is_some() {
        return; // this process is a contender (see `contender_process`)
    }
    contend("mixed", env_or("BATON_MUTEX_MIXED_ROUNDS", 300), 4, 4);
}

/// The original tool breaks a mutex whose `at` is more than 10 s old: a held mutex says `at` and rewrites it
/// while held (only `at` changes), and is still released afterwards.
#[test]
fn a_held_mutex_refreshes_at() {
    if std::env::var_os("BATON_MUTEX_CONTENDER").is_some() {
        return; // this process is a contender (see `contender_process`)
    }
    let dir = std::env::temp_dir().join(format!("baton-mutex-at-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("lock.mutex");
    let mut core = CoreComponent::load().unwrap();
    let held = CellMutex::take(&mut core, &file, "preview", "at", std::time::Duration::from_secs(30)).unwrap();
    let read = || serde_json::from_str::<serde_json::Value>(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let first = read();
    let keys: Vec<&str> = first.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(keys, ["pid", "start", "host", "token", "at"]);
    assert_eq!(first["pid"], std::process::id());
    std::thread::sleep(Duration::from_millis(2600));
    let mut later = read();
    assert!(later["at"].as_i64() > first["at"].as_i64(), "at refreshed: {first} -> {later}");
    later["at"] = first["at"].clone();
    assert_eq!(later, first, "only `at` changes");
    drop(held);
    assert!(!file.exists(), "released after a refresh");
    let _ = std::fs::remove_dir_all(&dir);
}
