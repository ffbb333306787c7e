//! The store conformance suite: the same cases, through the CLI, against every store backend (the dir
//! store, the git store over `file://`, and the git store over a `git daemon` on loopback). A store passes
//! when locks are exclusive, expire and are taken over by exactly one contender, release only for their
//! holder, epochs keep growing, fenced writes are refused once another holder took over, and receipts
//! written by runs can be read and listed.

mod common;

use common::{GitTemp, TempDir, command, envelope, json_in};
use serde_json::{Value, json};
use std::process::Stdio;
use std::time::Duration;

/// Runs `baton args --json` against one store: (exit code, envelope).
type Baton<'a> = &'a dyn Fn(&[&str]) -> (i32, Value);

/// Every case, on one store (each case on its own scope).
fn conformance(name: &str, b: Baton<'_>, cwd: &std::path::Path, store: &str) {
    // An empty store: nothing locked, no receipts.
    assert_eq!(b(&["lock", "status", "--scope", "pr-0"]).1["lock"], Value::Null, "{name}");
    assert_eq!(b(&["receipt", "show", "--scope", "pr-0"]).1["receipt"], Value::Null, "{name}");

    // Exclusive, released only by the holder, epochs growing across a release.
    let (code, env) = b(&["lock", "acquire", "--scope", "pr-1", "--holder", "a", "--ttl", "1m"]);
    assert_eq!((code, env["lock"]["epoch"].clone()), (0, json!(1)), "{name}: {env}");
    let (code, env) = b(&["lock", "acquire", "--scope", "pr-1", "--holder", "b"]);
    assert_eq!((code, env["error"]["lock"]["holder"].clone()), (3, json!("a")), "{name}");
    assert_eq!(b(&["lock", "release", "--scope", "pr-1", "--holder", "b"]).1["released"], false, "{name}");
    assert_eq!(b(&["lock", "release", "--scope", "pr-1", "--holder", "a"]).1["released"], true, "{name}");
    assert_eq!(b(&["lock", "status", "--scope", "pr-1"]).1["lock"], Value::Null, "{name}");
    assert_eq!(b(&["lock", "acquire", "--scope", "pr-1", "--holder", "b"]).1["lock"]["epoch"], 2, "{name}");

    // An expired lock is taken over and reported; renewals extend only the holder's lock.
    assert_eq!(b(&["lock", "acquire", "--scope", "pr-2", "--holder", "crashed", "--ttl", "50ms"]).0, 0);
    std::thread::sleep(Duration::from_millis(80));
    let (code, env) = b(&["lock", "acquire", "--scope", "pr-2", "--holder", "b", "--ttl", "1m"]);
    assert_eq!(
        (code, env["preempted"]["holder"].clone(), env["lock"]["epoch"].clone()),
        (0, json!("crashed"), json!(2)),
        "{name}"
    );
    let before = env["lock"]["expiresAt"].clone();
    let (code, env) = b(&["lock", "renew", "--scope", "pr-2", "--holder", "b", "--epoch", "2", "--ttl", "2m"]);
    assert_eq!(code, 0, "{name}: {env}");
    assert!(env["lock"]["expiresAt"].as_str() > before.as_str(), "{name}: renewal extends");
    let (code, env) = b(&["lock", "renew", "--scope", "pr-2", "--holder", "crashed", "--epoch", "1"]);
    assert_eq!((code, env["error"]["code"].clone()), (3, json!("LOCK_LOST")), "{name}");

    // The fencing race: a lapsed holder writes until someone takes over, then never again.
    let write = |holder: &str, epoch: &str, content: &str| {
        let mut child =
            command(cwd, &["write", "state.json", "--scope", "pr-3", "--holder", holder, "--epoch", epoch, "--json"])
                .env("BATON_STORE", store)
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .spawn()
                .unwrap();
        std::io::Write::write_all(&mut child.stdin.take().unwrap(), content.as_bytes()).unwrap();
        let out = child.wait_with_output().unwrap();
        (out.status.code().unwrap(), envelope(&out))
    };
    assert_eq!(b(&["lock", "acquire", "--scope", "pr-3", "--holder", "a", "--ttl", "50ms"]).0, 0);
    assert_eq!(write("a", "1", "a1").0, 0, "{name}: the holder writes");
    std::thread::sleep(Duration::from_millis(80));
    assert_eq!(write("a", "1", "a2").0, 0, "{name}: a lapsed lease nobody took still admits its holder");
    let (_, env) = b(&["lock", "acquire", "--scope", "pr-3", "--holder", "b", "--ttl", "1m"]);
    assert_eq!(env["preempted"]["holder"], "a", "{name}");
    let (code, env) = write("a", "1", "a3");
    assert_eq!(
        (code, env["error"]["code"].clone(), env["error"]["current"]["holder"].clone()),
        (3, json!("LOCK_LOST"), json!("b")),
        "{name}"
    );
    assert_eq!(write("b", "2", "b1").0, 0, "{name}");
    assert_eq!(b(&["lock", "release", "--scope", "pr-3", "--holder", "a"]).1["released"], false, "{name}");
    assert_eq!(
        b(&["lock", "status", "--scope", "pr-3"]).1["lock"]["holder"],
        "b",
        "{name}: the stale holder's release left b's lock"
    );

    // Receipts written by runs are read back and listed.
    let record = format!("{} ledger record --adapter a --key k --id 1", common::BATON);
    assert_eq!(b(&["run", "--scope", "pr-4", "--", "sh", "-c", &record]).0, 0, "{name}");
    let (_, env) = b(&["receipt", "show", "--scope", "pr-4"]);
    assert_eq!(
        (env["receipt"]["status"].clone(), env["receipt"]["ledger"][0]["key"].clone()),
        (json!("complete"), json!("k")),
        "{name}"
    );
    let (_, env) = b(&["receipt", "list", "--scope", "pr-4"]);
    let scopes: Vec<&str> = env["receipts"].as_array().unwrap().iter().filter_map(|r| r["scope"].as_str()).collect();
    assert!(scopes.contains(&"pr-4"), "{name}: {scopes:?}");

    // Exactly one of 8 simultaneous contenders wins a fresh scope; the others see the winner (LOCK_HELD).
    common::race_for_lock(cwd, store, "pr-5", 8, name);
}

#[test]
fn the_dir_store_conforms() {
    let t = TempDir::new("conform-dir");
    let store = t.store();
    conformance("dir", &|args| json_in(&t.0, &store, args), &t.0, &store);
}

#[test]
fn the_git_store_conforms_over_file() {
    let g = GitTemp::new("conform-file");
    let store = g.store();
    conformance("git file://", &|args| json_in(&g.t.0, &store, args), &g.t.0, &store);
}

#[test]
fn the_git_store_conforms_over_git_daemon() {
    let g = GitTemp::new("conform-daemon");
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut daemon = std::process::Command::new("git")
        .args(["daemon", "--export-all", "--enable=receive-pack", "--reuseaddr", "--listen=127.0.0.1"])
        .arg(format!("--base-path={}", g.t.0.display()))
        .arg(format!("--port={port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(started.elapsed() < Duration::from_secs(10), "git daemon did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
    let store = format!("git:git://127.0.0.1:{port}/remote.git");
    let result =
        std::panic::catch_unwind(|| conformance("git daemon", &|args| json_in(&g.t.0, &store, args), &g.t.0, &store));
    let _ = daemon.kill();
    let _ = daemon.wait();
    if let Err(e) = result {
        std::panic::resume_unwind(e);
    }
}
