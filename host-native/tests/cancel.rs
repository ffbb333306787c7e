//! Cancellation the way CI runners do it (GitHub Actions: SIGINT, SIGTERM 7.5 s later, SIGKILL of the whole
//! tree 2.5 s after that), against a command that traps and ignores SIGINT and SIGTERM: `baton run` must
//! kill it, record `cancelled` and release the lease before the runner's SIGKILL, never while it runs.

mod common;

use common::{TempDir, command, envelope, wait_for};
use serde_json::Value;
use std::process::Stdio;
use std::time::{Duration, Instant};

fn signal(pid: i32, sig: i32) {
    #[allow(unsafe_code)]
    // SAFETY: signals a process (or, negative, a process group) this test started.
    unsafe {
        libc::kill(pid, sig);
    }
}

fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .is_ok_and(|s| !matches!(s[s.rfind(')').unwrap_or(0) + 1..].split_whitespace().next(), Some("Z" | "X")))
}

fn lock_of(t: &TempDir, scope: &str) -> Value {
    let out = command(&t.0, &["lock", "status", "--scope", scope, "--store", &t.store(), "--json"]).output().unwrap();
    envelope(&out)["lock"].clone()
}

#[test]
fn a_runner_cancellation_frees_the_lock_and_records_cancelled_within_ten_seconds() {
    let t = TempDir::new("cancel-runner");
    let s = t.store();
    let (started, pidfile) = (t.0.join("started"), t.0.join("cmd.pid"));
    // Ignores SIGINT and SIGTERM (the sleeps inherit that), and notes while it is alive.
    let script = format!(
        "trap '' INT TERM; echo $$ > {}; touch {}; while :; do sleep 0.1; done",
        pidfile.display(),
        started.display()
    );
    // Its own process group, as a runner's step is: the runner's final SIGKILL goes to the whole tree.
    let mut cmd = command(&t.0, &["run", "--scope", "pr-9", "--store", &s, "--json", "--", "sh", "-c", &script]);
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    let mut child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let baton = i32::try_from(child.id()).unwrap();
    wait_for("the command to start", Duration::from_secs(20), || started.exists());
    let cmd_pid: i32 = std::fs::read_to_string(&pidfile).unwrap().trim().parse().unwrap();
    assert!(!lock_of(&t, "pr-9").is_null(), "held while the command runs");

    let first = Instant::now();
    signal(baton, libc::SIGINT);
    let mut sent_term = false;
    let mut lock_seen_while_cmd_alive = Vec::new();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        let at = first.elapsed();
        if at >= Duration::from_millis(7_500) && !sent_term {
            signal(baton, libc::SIGTERM);
            sent_term = true;
        }
        if at >= Duration::from_millis(10_000) {
            signal(-baton, libc::SIGKILL);
            break child.wait().unwrap();
        }
        // The lock is never released while the command may still run: a read counts when the command was
        // alive before it and still is after it (the status read is a process of its own, tens of ms; the
        // command may be killed and reaped, and the lock released at once after, while it runs).
        if alive(cmd_pid) {
            let held = !lock_of(&t, "pr-9").is_null();
            if alive(cmd_pid) {
                lock_seen_while_cmd_alive.push(held);
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let took = first.elapsed();
    assert!(
        took < Duration::from_secs(10),
        "baton ended {took:?} after the first signal: the runner would have killed it"
    );
    assert_eq!(status.code(), Some(130), "128 + SIGINT");
    assert!(!alive(cmd_pid), "the command was killed");
    assert!(
        lock_seen_while_cmd_alive.iter().all(|held| *held),
        "released while the command ran: {lock_seen_while_cmd_alive:?}"
    );
    assert_eq!(lock_of(&t, "pr-9"), Value::Null, "the lock is free");
    assert_eq!(t.receipt("preview", "pr-9")["status"], "cancelled");
    let mut out = String::new();
    std::io::Read::read_to_string(child.stdout.as_mut().unwrap(), &mut out).unwrap();
    let env: Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(env["error"]["code"], "INTERRUPTED", "{env}");
    assert_eq!(env["error"]["released"], true);
}

#[test]
fn the_grace_is_settable_and_a_sigterm_first_is_forwarded_as_sigterm() {
    let t = TempDir::new("cancel-grace");
    let s = t.store();
    let started = t.0.join("started");
    let got = t.0.join("got");
    // Records the SIGTERM it gets, then ignores it.
    let script = format!(
        "trap 'echo TERM >> {}' TERM; trap '' INT; touch {}; while :; do sleep 0.1; done",
        got.display(),
        started.display()
    );
    let mut child =
        command(&t.0, &["run", "--scope", "pr-8", "--store", &s, "--cancel-grace", "1s", "--", "sh", "-c", &script])
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
    wait_for("the command to start", Duration::from_secs(20), || started.exists());
    let first = Instant::now();
    signal(i32::try_from(child.id()).unwrap(), libc::SIGTERM);
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(143), "128 + SIGTERM");
    assert!(first.elapsed() < Duration::from_secs(6), "killed after the 1 s grace, not the default 5 s");
    assert!(std::fs::read_to_string(&got).unwrap_or_default().contains("TERM"), "SIGTERM forwarded");
    assert_eq!(lock_of(&t, "pr-8"), Value::Null);
    assert_eq!(t.receipt("preview", "pr-8")["status"], "cancelled");
}
