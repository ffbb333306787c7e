//! `baton run` with real processes: exported variables, exit codes, signals, a crashed holder, and a
//! paused holder that is fenced out once another run took over.

mod common;

use common::{BATON, TempDir, command, envelope};
use serde_json::Value;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

fn wait_for(what: &str, limit: Duration, mut f: impl FnMut() -> bool) {
    let start = Instant::now();
    while !f() {
        assert!(start.elapsed() < limit, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn lock_status(t: &TempDir, scope: &str) -> Value {
    let out = command(&t.0, &["lock", "status", "--scope", scope, "--store", &t.store(), "--json"]).output().unwrap();
    envelope(&out)["lock"].clone()
}

fn kill(pid: u32, sig: i32) {
    #[allow(unsafe_code)]
    // SAFETY: signals a child process of this test.
    unsafe {
        libc::kill(pid as i32, sig);
    }
}

#[test]
fn run_exports_the_lease_and_exits_with_the_command_code() {
    let t = TempDir::new("exports");
    let s = t.store();
    let script = format!(
        "test \"$BATON_ENV/$BATON_SCOPE\" = preview/pr-3 && test \"$BATON_EPOCH\" = 1 && test \"$BATON_STORE\" = {s} && echo \"$BATON_HOLDER\" > {}/holder && exit 7",
        t.0.display()
    );
    let out = command(&t.0, &["run", "--scope", "pr-3", "--store", &s, "--json", "--", "sh", "-c", &script])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(7), "{}", String::from_utf8_lossy(&out.stderr));
    let env = envelope(&out);
    assert_eq!(env["ok"], false);
    assert_eq!(env["error"]["code"], "COMMAND_FAILED");
    assert_eq!(env["error"]["exitCode"], 7);
    let holder = std::fs::read_to_string(t.0.join("holder")).unwrap();
    assert_eq!(env["error"]["holder"], holder.trim());
    assert_eq!(lock_status(&t, "pr-3"), Value::Null, "released after the command");

    let out = command(&t.0, &["run", "--scope", "pr-3", "--store", &s, "--json", "--", "true"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let env = envelope(&out);
    assert_eq!(
        (env["ok"].clone(), env["lock"]["epoch"].clone(), env["released"].clone()),
        (true.into(), 2.into(), true.into())
    );
}

#[test]
fn run_refuses_while_another_holds_the_lease_and_waits_with_wait() {
    let t = TempDir::new("held");
    let s = t.store();
    let out = command(&t.0, &["lock", "acquire", "--scope", "pr-1", "--holder", "other", "--ttl", "2s", "--store", &s])
        .output()
        .unwrap();
    assert!(out.status.success());
    let out =
        command(&t.0, &["run", "--scope", "pr-1", "--store", &s, "--json", "--", "touch", "ran"]).output().unwrap();
    assert_eq!(out.status.code(), Some(3));
    assert_eq!(envelope(&out)["error"]["code"], "LOCK_HELD");
    assert!(!t.0.join("ran").exists(), "the command never ran");

    let out = command(
        &t.0,
        &["run", "--scope", "pr-1", "--store", &s, "--wait", "--poll-interval", "200ms", "--", "touch", "ran"],
    )
    .output()
    .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("waiting for preview/pr-1: held by other until"), "{stderr}");
    assert!(stderr.contains("Took over an expired lock held by other"), "{stderr}");
    assert!(t.0.join("ran").exists());
}

#[test]
fn sigint_is_forwarded_the_run_cancelled_and_the_lease_released() {
    let t = TempDir::new("sigint");
    let s = t.store();
    let script = format!("trap 'exit 42' INT; touch {}/started; while :; do sleep 0.05; done", t.0.display());
    let child = command(&t.0, &["run", "--scope", "pr-1", "--store", &s, "--", "sh", "-c", &script])
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_for("the command to start", Duration::from_secs(10), || t.0.join("started").exists());
    kill(child.id(), libc::SIGINT);
    let out = child.wait_with_output().unwrap();
    // The command ended on the forwarded SIGINT (its trap exits 42); the run was cancelled: 128 + SIGINT.
    assert_eq!(out.status.code(), Some(130));
    assert_eq!(lock_status(&t, "pr-1"), Value::Null);
    assert_eq!(t.receipt("preview", "pr-1")["status"], "cancelled");
}

#[test]
fn a_sigkilled_run_leaves_a_lock_that_expires_and_is_then_taken_over() {
    let t = TempDir::new("crash");
    let s = t.store();
    let pidfile = t.0.join("cmd.pid");
    let script = format!("echo $$ > {}; exec sleep 30", pidfile.display());
    let mut child: Child =
        command(&t.0, &["run", "--scope", "pr-9", "--ttl", "1500ms", "--store", &s, "--", "sh", "-c", &script])
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
    wait_for("the command to start", Duration::from_secs(10), || {
        pidfile.exists() && !std::fs::read_to_string(&pidfile).unwrap().is_empty()
    });
    let crashed_holder = lock_status(&t, "pr-9")["holder"].as_str().unwrap().to_owned();
    kill(child.id(), libc::SIGKILL);
    child.wait().unwrap();
    let cmd_pid: u32 = std::fs::read_to_string(&pidfile).unwrap().trim().parse().unwrap();
    kill(cmd_pid, libc::SIGKILL);

    let out = command(&t.0, &["run", "--scope", "pr-9", "--store", &s, "--json", "--", "true"]).output().unwrap();
    assert_eq!(out.status.code(), Some(3), "the crashed run's lock is still live");
    std::thread::sleep(Duration::from_millis(1600));
    let out = command(&t.0, &["run", "--scope", "pr-9", "--store", &s, "--json", "--", "true"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let env = envelope(&out);
    assert_eq!(env["preempted"]["holder"], crashed_holder.as_str());
    assert!(
        env["warnings"][0]
            .as_str()
            .unwrap()
            .starts_with(&format!("Took over an expired lock held by {crashed_holder}"))
    );
}

#[test]
fn a_paused_run_is_fenced_out_after_another_took_over() {
    let t = TempDir::new("paused");
    let s = t.store();
    // The command writes every 100 ms through the fenced write and records every refusal.
    let script = format!(
        "while :; do if echo x | {BATON} write state.txt 2>>{dir}/write.err; then touch {dir}/wrote; else touch {dir}/refused; fi; sleep 0.1; done",
        dir = t.0.display()
    );
    let child =
        command(&t.0, &["run", "--scope", "pr-2", "--ttl", "1s", "--store", &s, "--json", "--", "sh", "-c", &script])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
    wait_for("a first fenced write", Duration::from_secs(10), || t.0.join("wrote").exists());
    kill(child.id(), libc::SIGSTOP);
    // Frozen for longer than its TTL: it cannot renew, its lock expires and another run takes over.
    std::thread::sleep(Duration::from_millis(1200));
    let out = command(
        &t.0,
        &["lock", "acquire", "--scope", "pr-2", "--holder", "successor", "--ttl", "1m", "--store", &s, "--json"],
    )
    .output()
    .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stdout));
    assert_eq!(envelope(&out)["lock"]["epoch"], 2);
    wait_for("a refused write", Duration::from_secs(10), || t.0.join("refused").exists());
    let refusals = std::fs::read_to_string(t.0.join("write.err")).unwrap();
    assert!(refusals.contains("error LOCK_LOST"), "{refusals}");
    kill(child.id(), libc::SIGCONT);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", String::from_utf8_lossy(&out.stdout));
    let env = envelope(&out);
    assert_eq!(env["error"]["code"], "LOCK_LOST");
    assert_eq!(lock_status(&t, "pr-2")["holder"], "successor", "the successor's lock is untouched");
}
