//! The git store end to end with the CLI: local bare remotes over `file://` (and one `git daemon`), the
//! lease cycle, serialisation across clones, concurrency, fencing, a deleted ref, a rejecting hook,
//! credentials that never show, and ref names.

mod common;

use common::{BATON, GitTemp, command, envelope, git, ledger_record, sh, wait_for, with_json};
use serde_json::{Value, json};
use std::process::{Child, Stdio};
use std::time::Duration;

fn kill(pid: u32, sig: i32) {
    #[allow(unsafe_code)]
    // SAFETY: signals a child process of this test.
    unsafe {
        libc::kill(pid as i32, sig);
    }
}

#[test]
fn lock_acquire_held_status_release_and_takeover_on_git() {
    let g = GitTemp::new("lock");
    let (code, env) = g.json(&["lock", "acquire", "--scope", "pr-7", "--holder", "a", "--ttl", "3s"]);
    assert_eq!(code, 0, "{env}");
    assert_eq!((env["lock"]["holder"].clone(), env["lock"]["epoch"].clone()), ("a".into(), 1.into()));
    assert_eq!(env["preempted"], Value::Null);
    assert_eq!(env["store"], g.store());

    let (code, env) = g.json(&["lock", "acquire", "--scope", "pr-7", "--holder", "b"]);
    assert_eq!((code, env["error"]["code"].as_str()), (3, Some("LOCK_HELD")));
    assert_eq!(env["error"]["lock"]["holder"], "a");
    let (_, env) = g.json(&["lock", "status", "--scope", "pr-7"]);
    assert_eq!((env["lock"]["holder"].clone(), env["lock"]["expired"].clone()), ("a".into(), false.into()));

    std::thread::sleep(Duration::from_millis(3100));
    let (_, env) = g.json(&["lock", "status", "--scope", "pr-7"]);
    assert_eq!(env["lock"]["expired"], true);
    let (code, env) = g.json(&["lock", "acquire", "--scope", "pr-7", "--holder", "b"]);
    assert_eq!(code, 0);
    assert_eq!((env["preempted"]["holder"].clone(), env["lock"]["epoch"].clone()), ("a".into(), 2.into()));

    let (code, env) = g.json(&["lock", "release", "--scope", "pr-7", "--holder", "a"]);
    assert_eq!((code, env["released"].clone()), (0, false.into()), "a non-holder release is a no-op");
    let (_, env) = g.json(&["lock", "release", "--scope", "pr-7", "--holder", "b"]);
    assert_eq!(env["released"], true);
    let (_, env) = g.json(&["lock", "status", "--scope", "pr-7"]);
    assert_eq!(env["lock"], Value::Null);
    let (_, env) = g.json(&["lock", "acquire", "--scope", "pr-7", "--holder", "c"]);
    assert_eq!(env["lock"]["epoch"], 3, "epochs keep growing after a release deleted lock.json");

    // The ref: a README at the root, the cell's files in the original layout, one commit per change.
    let readme = g.file("preview/pr-7", "README.md").unwrap();
    assert!(readme.contains("Deleting it is safe only when no run is active"), "{readme}");
    assert!(g.file("preview/pr-7", "preview/pr-7/lock.json").unwrap().contains("\"holder\": \"c\""));
    assert_eq!(
        g.log("preview/pr-7"),
        [
            "Start receipts for preview/pr-7",
            "lock preview/pr-7 a (epoch 1)",
            "lock preview/pr-7 b (epoch 2)",
            "unlock preview/pr-7 b",
            "lock preview/pr-7 c (epoch 3)"
        ]
    );

    // The prefix is configurable.
    let out = g
        .baton_in(&g.t.0, &["lock", "acquire", "--scope", "pr-8", "--holder", "d", "--json"])
        .env("BATON_GIT_PREFIX", "ci/leases")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stdout));
    assert!(g.refs().contains(&"refs/heads/ci/leases/preview/pr-8".to_owned()), "{:?}", g.refs());
}

#[test]
fn runs_from_two_clones_serialise_through_origin() {
    let g = GitTemp::new("clones");
    let seed = g.t.0.join("seed");
    std::fs::create_dir_all(&seed).unwrap();
    git(&seed, &["init", "-q", "-b", "main"]);
    git(&seed, &["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "init"]);
    git(&seed, &["push", "-q", g.remote().to_str().unwrap(), "main"]);
    for c in ["c1", "c2"] {
        git(&g.t.0, &["clone", "-q", g.remote().to_str().unwrap(), c]);
    }
    let (c1, c2) = (g.t.0.join("c1"), g.t.0.join("c2"));
    // In CI with an `origin` remote, `baton run` uses it as the store by default.
    let run = |cwd: &std::path::Path, args: &[&str]| {
        let mut cmd = command(cwd, args);
        cmd.env("CI", "true");
        cmd
    };
    let go = g.t.0.join("go");
    let script = format!("touch {}/started; while [ ! -e {} ]; do sleep 0.05; done", g.t.0.display(), go.display());
    let first = run(&c1, &["run", "--scope", "shared", "--json", "--", "sh", "-c", &script])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for("the first run", Duration::from_secs(20), || g.t.0.join("started").exists());
    let out = run(&c2, &["run", "--scope", "shared", "--json", "--", "touch", "ran"]).output().unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(envelope(&out)["error"]["code"], "LOCK_HELD");
    assert!(!c2.join("ran").exists());

    let second =
        run(&c2, &["run", "--scope", "shared", "--wait", "--poll-interval", "200ms", "--json", "--", "touch", "ran"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
    std::thread::sleep(Duration::from_millis(500));
    std::fs::write(&go, "").unwrap();
    let out = first.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let out = second.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(envelope(&out)["lock"]["epoch"], 2);
    assert!(c2.join("ran").exists());
    assert!(g.refs().contains(&"refs/heads/baton-receipts/preview/shared".to_owned()));
    assert!(!c1.join(".baton/unpushed").exists() && !c2.join(".baton/unpushed").exists(), "nothing left unpushed");
}

#[test]
fn the_succession_journey_on_git() {
    let g = GitTemp::new("journey");
    common::succession_journey(&g.t.0, &|args| g.json(args), &|env, scope| g.receipt(env, scope));
}

#[test]
fn eight_scopes_written_at_once() {
    let g = GitTemp::new("eight");
    let children: Vec<Child> = (0..8)
        .map(|i| {
            let record = sh(&format!("baton ledger record --adapter a --key k{i} --id {i}"));
            g.baton_in(&g.t.0, &["run", "--scope", &format!("s{i}"), "--json", "--", "sh", "-c", &record])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for (i, child) in children.into_iter().enumerate() {
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "s{i}: {stderr}");
        assert_eq!(envelope(&out)["warnings"], json!([]), "s{i}");
        let log = g.log(&format!("preview/s{i}"));
        // The grant with the checkpoint, the command's fenced record, the final receipt with the release.
        assert_eq!(log.len(), 4, "{log:?}");
        assert_eq!(log[0], format!("Start receipts for preview/s{i}"), "{log:?}");
        assert!(log[1].starts_with(&format!("lock preview/s{i} run-")) && log[1].ends_with("(failed)"), "{log:?}");
        assert!(log[2].starts_with(&format!("receipt preview/s{i} run-")), "{log:?}");
        assert!(log[3].starts_with(&format!("receipt preview/s{i} run-")), "{log:?}");
        assert!(log[3].contains("(complete), unlock run-"), "{log:?}");
        assert_eq!(g.receipt("preview", &format!("s{i}"))["ledger"][0]["key"], format!("k{i}"));
    }
}

#[test]
fn a_paused_run_is_fenced_out_after_another_took_over_on_git() {
    let g = GitTemp::new("paused");
    let dir = g.t.0.display().to_string();
    let script = format!(
        "while :; do if echo x | {BATON} write state.txt 2>>{dir}/write.err; then touch {dir}/wrote; else touch {dir}/refused; fi; sleep 0.1; done"
    );
    let child = g
        .baton_in(&g.t.0, &["run", "--scope", "pr-2", "--ttl", "1s", "--json", "--", "sh", "-c", &script])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_for("a first fenced write", Duration::from_secs(20), || g.t.0.join("wrote").exists());
    kill(child.id(), libc::SIGSTOP);
    std::thread::sleep(Duration::from_millis(1200));
    let (code, env) = g.json(&["lock", "acquire", "--scope", "pr-2", "--holder", "successor", "--ttl", "1m"]);
    assert_eq!(code, 0, "{env}");
    assert_eq!(env["lock"]["epoch"], 2);
    wait_for("a refused write", Duration::from_secs(20), || g.t.0.join("refused").exists());
    let refusals = std::fs::read_to_string(g.t.0.join("write.err")).unwrap();
    assert!(refusals.contains("error LOCK_LOST"), "{refusals}");
    kill(child.id(), libc::SIGCONT);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", String::from_utf8_lossy(&out.stdout));
    assert_eq!(envelope(&out)["error"]["code"], "LOCK_LOST");
    let (_, env) = g.json(&["lock", "status", "--scope", "pr-2"]);
    assert_eq!(env["lock"]["holder"], "successor", "the successor's lock is untouched");
}

#[test]
fn a_ref_deleted_mid_run_fails_the_run_safely_and_the_next_run_works() {
    let g = GitTemp::new("deleted");
    let dir = g.t.0.display().to_string();
    let script = format!(
        "touch {dir}/started; while [ ! -e {dir}/go ]; do sleep 0.05; done; echo x | {BATON} write state.txt 2>{dir}/write.err; echo $? > {dir}/write.rc"
    );
    let child = g
        .baton_in(&g.t.0, &["run", "--scope", "del", "--json", "--", "sh", "-c", &script])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for("the run to start", Duration::from_secs(20), || g.t.0.join("started").exists());
    let remote = format!("file://{}", g.remote().display());
    git(
        &g.t.0,
        &["--git-dir", "remote.git", "push", "-q", &remote, "--delete", "refs/heads/baton-receipts/preview/del"],
    );
    std::fs::write(g.t.0.join("go"), "").unwrap();
    let out = child.wait_with_output().unwrap();
    let env = envelope(&out);
    // The deleted ref is a deleted lock: the fenced write and the run's final receipt are refused.
    assert_eq!(std::fs::read_to_string(g.t.0.join("write.rc")).unwrap().trim(), "3");
    assert!(std::fs::read_to_string(g.t.0.join("write.err")).unwrap().contains("LOCK_LOST"));
    // The run ends safely: LOCK_LOST, or (as `baton run` treats a refused final receipt) success with a
    // warning naming the lost lock and the kept receipt. Either way nothing reached the remote.
    match out.status.code() {
        Some(3) => assert_eq!(env["error"]["code"], "LOCK_LOST", "{env}"),
        Some(0) => {
            let warning = env["warnings"][0].as_str().unwrap();
            assert!(warning.contains("is no longer held by") && warning.contains("Receipt kept locally in"), "{env}");
            assert_eq!(env["released"], false, "{env}");
        }
        other => panic!("unexpected exit {other:?}: {env}"),
    }
    assert!(!g.refs().iter().any(|r| r.ends_with("/preview/del")), "nothing was written after the deletion");
    let (code, env) = g.json(&["run", "--scope", "del", "--", "true"]);
    assert_eq!(code, 0, "{env}");
    assert_eq!(env["lock"]["epoch"], 1, "a fresh ref");
    assert_eq!(g.receipt("preview", "del")["status"], "complete");
}

#[test]
fn a_rejecting_hook_gives_store_rejected_and_keeps_the_receipt() {
    let g = GitTemp::new("hook");
    let hook = g.refuse_subjects("^receipt", "receipts are frozen today");
    let (code, lock) = g.json(&["lock", "acquire", "--scope", "pr-1", "--holder", "h", "--ttl", "1m"]);
    assert_eq!(code, 0, "{lock}");
    let epoch = lock["lock"]["epoch"].to_string();
    let record = ledger_record("k", "1", &epoch);
    let (code, env) = g.json(&record);
    assert_eq!((code, env["error"]["code"].as_str()), (1, Some("STORE_REJECTED")), "{env}");
    let err = &env["error"];
    assert!(err["message"].as_str().unwrap().contains("receipts are frozen today"), "{err}");
    assert_eq!(err["attempts"], 4, "{err}");
    assert!(err["elapsedMs"].is_u64() && err["budgetMs"] == 60_000, "{err}");
    let kept = err["keptAt"].as_str().unwrap();
    assert!(err["message"].as_str().unwrap().ends_with(&format!(" Receipt kept locally in {kept}.")), "{err}");
    assert!(kept.starts_with(&format!("{}/.baton/unpushed/preview/pr-1/", g.t.0.display())), "{kept}");
    let text = std::fs::read_to_string(kept).unwrap();
    assert!(text.contains("\"key\": \"k\""), "{text}");
    // Once the remote accepts again, the next receipt lands and the kept file is cleaned up.
    std::fs::remove_file(&hook).unwrap();
    let (code, env) = g.json(&record);
    assert_eq!(code, 0, "{env}");
    assert!(!g.t.0.join(".baton/unpushed").exists());
}

#[test]
fn credentials_in_the_remote_url_never_show() {
    let g = GitTemp::new("creds");
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let store = format!("git:http://user:s3cr3t-token@127.0.0.1:{port}/r.git");
    for args in [
        vec!["lock", "acquire", "--scope", "pr-1", "--holder", "h"],
        vec!["lock", "status", "--scope", "pr-1"],
        vec!["run", "--scope", "pr-1", "--", "true"],
        vec!["receipt", "list", "--scope", "any"],
    ] {
        for json in [true, false] {
            let all = if json { with_json(&args) } else { args.clone() };
            let out = command(&g.t.0, &all).env("BATON_STORE", &store).output().unwrap();
            let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
            assert!(!text.contains("s3cr3t"), "{args:?}: {text}");
            assert!(text.contains("STORE_PERMISSION"), "{args:?}: {text}");
            assert_eq!(out.status.code(), Some(1), "{args:?}: {text}");
        }
    }
}

#[test]
fn ref_segments_are_valid_and_distinct_and_list_decodes_them() {
    let g = GitTemp::new("segs");
    for (i, scope) in ["a..b", "trailing.", "x.lock", "Ab", "ab"].into_iter().enumerate() {
        // One resource each: two scopes never own one.
        let record = sh(&format!("baton ledger record --adapter a --key k{i} --id 1"));
        let (code, env) = g.json(&["run", "--scope", scope, "--", "sh", "-c", &record]);
        assert_eq!(code, 0, "{scope}: {env}");
    }
    let refs = g.refs();
    let hex: Vec<&String> = refs.iter().filter(|r| r.starts_with("refs/heads/baton-receipts/preview/=")).collect();
    assert_eq!(hex.len(), 3, "{refs:?}");
    assert!(
        hex.iter().all(|r| r["refs/heads/baton-receipts/preview/=".len()..].chars().all(|c| c.is_ascii_hexdigit()))
    );
    for r in &refs {
        git(&g.t.0, &["check-ref-format", r]);
    }
    let (code, env) = g.json(&["receipt", "list", "--scope", "any"]);
    assert_eq!(code, 0, "{env}");
    let scopes: Vec<&str> = env["receipts"].as_array().unwrap().iter().map(|r| r["scope"].as_str().unwrap()).collect();
    assert_eq!(scopes, ["Ab", "a..b", "ab", "trailing.", "x.lock"], "{env}");
}

#[test]
fn over_git_daemon() {
    let g = GitTemp::new("daemon");
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut daemon = std::process::Command::new("git")
        .args([
            "daemon",
            "--export-all",
            "--enable=receive-pack",
            &format!("--base-path={}", g.t.0.display()),
            &format!("--port={port}"),
            "--reuseaddr",
            "--listen=127.0.0.1",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_for("git daemon", Duration::from_secs(10), || std::net::TcpStream::connect(("127.0.0.1", port)).is_ok());
    let store = format!("git:git://127.0.0.1:{port}/remote.git");
    let result = std::panic::catch_unwind(|| {
        let json = |args: &[&str]| {
            let out = command(&g.t.0, args).env("BATON_STORE", &store).output().unwrap();
            (out.status.code().unwrap(), envelope(&out))
        };
        let record = sh("baton ledger record --adapter a --key k --id 1");
        let (code, env) = json(&["run", "--scope", "d", "--json", "--", "sh", "-c", &record]);
        assert_eq!(code, 0, "{env}");
        let (code, env) = json(&["lock", "acquire", "--scope", "d", "--holder", "x", "--json"]);
        assert_eq!((code, env["lock"]["epoch"].clone()), (0, json!(2)), "{env}");
        let (code, env) = json(&["lock", "acquire", "--scope", "d", "--holder", "y", "--json"]);
        assert_eq!((code, env["error"]["lock"]["holder"].clone()), (3, json!("x")), "{env}");
        let (code, env) = json(&["receipt", "list", "--scope", "any", "--json"]);
        assert_eq!((code, env["receipts"][0]["scope"].clone()), (0, json!("d")), "{env}");
        assert_eq!(g.receipt("preview", "d")["ledger"][0]["key"], "k");
    });
    kill(daemon.id(), libc::SIGTERM);
    let _ = daemon.wait();
    if let Err(e) = result {
        std::panic::resume_unwind(e);
    }
}

#[test]
fn a_run_whose_final_receipt_is_rejected_fails_and_keeps_it() {
    let g = GitTemp::new("final-rejected");
    g.refuse_subjects("(complete)", "no final receipts today");
    let (code, env) = g.json(&["run", "--scope", "pr-1", "--", "true"]);
    assert_eq!((code, env["error"]["code"].as_str()), (1, Some("STORE_REJECTED")), "{env}");
    let kept = env["error"]["keptAt"].as_str().unwrap();
    assert!(std::fs::read_to_string(kept).unwrap().contains("\"status\": \"complete\""), "the final receipt is kept");
    assert_eq!(env["error"]["exitCode"], 0, "the command itself succeeded");
    assert_eq!(g.json(&["lock", "status", "--scope", "pr-1"]).1["lock"], Value::Null, "and the lease was released");
}
