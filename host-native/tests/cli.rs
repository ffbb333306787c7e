//! The `baton` binary end to end: output envelopes, exit codes, and the dir store on disk.

mod common;

use common::{TempDir, command};
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output};

/// Runs `baton args` in `cwd` with a clean environment (no CI variables leak in from the test runner).
fn baton(cwd: &Path, args: &[&str], vars: &[(&str, &str)]) -> Output {
    let mut cmd = command(cwd, args);
    for (k, v) in vars {
        cmd.env(k, v);
    }
    cmd.output().expect("baton runs")
}

/// Runs with `--json` and returns (exit code, envelope), checking the envelope rule `ok` iff exit 0.
fn json(cwd: &Path, args: &[&str], vars: &[(&str, &str)]) -> (i32, Value) {
    let mut all = args.to_vec();
    all.push("--json");
    let out = baton(cwd, &all, vars);
    let envelope = common::envelope(&out);
    let code = out.status.code().expect("exited");
    assert_eq!(envelope["ok"] == true, code == 0, "ok iff exit 0: {envelope}");
    (code, envelope)
}

#[test]
fn scope_prints_the_name_or_the_context() {
    let t = TempDir::new("scope");
    let out = baton(&t.0, &["scope", "--branch", "feat/search"], &[]);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "branch-feat-search\n");
    let (code, env) =
        json(&t.0, &["scope", "--branch", "main", "--pr", "42", "--sha", "abc"], &[("BATON_CTX_ENV", "staging")]);
    assert_eq!(code, 0);
    assert_eq!(
        env,
        serde_json::json!({"ok": true, "command": "scope", "context": {"env": "staging", "branch": "main", "sha": "abc", "pr": 42, "defaultBranch": null, "scope": "pr-42"}})
    );
    let (_, env) = json(
        &t.0,
        &["scope"],
        &[("GITHUB_ACTIONS", "true"), ("GITHUB_HEAD_REF", ""), ("GITHUB_REF_NAME", "trunk"), ("GITHUB_SHA", "s")],
    );
    assert_eq!(env["context"]["scope"], "branch-trunk");
}

/// Issue 12: `baton scope` with the branch given runs no process. `git` and `gh` first on PATH are scripts
/// that record every call (and then run the real git, so a call would still succeed and only the record
/// tells); with `--branch` alone the record stays empty, and without it git is asked as before.
#[test]
fn scope_with_explicit_flags_spawns_no_process() {
    use std::os::unix::fs::PermissionsExt;
    let t = TempDir::new("scope-no-spawn");
    let bin = t.0.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let calls = t.0.join("calls.log");
    let real_git =
        String::from_utf8(Command::new("sh").args(["-c", "command -v git"]).output().unwrap().stdout).unwrap();
    for (name, real) in [("git", real_git.trim()), ("gh", "false")] {
        let script = format!("#!/bin/sh\necho \"{name} $*\" >> '{}'\nexec {real} \"$@\"\n", calls.display());
        std::fs::write(bin.join(name), script).unwrap();
        std::fs::set_permissions(bin.join(name), std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    let (code, env) = json(&t.0, &["scope", "--branch", "x"], &[("PATH", &path)]);
    assert_eq!(
        (code, env["context"]["scope"].as_str(), env["context"]["sha"].is_null()),
        (0, Some("branch-x"), true),
        "{env}"
    );
    let out = baton(&t.0, &["scope", "--branch", "feat/a", "--pr", "3"], &[("PATH", &path)]);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "pr-3\n");
    assert!(!calls.exists(), "baton scope ran {}", std::fs::read_to_string(&calls).unwrap_or_default());
    // The control: without a branch, detection asks git (outside a repository: CTX_NULL).
    let (code, _) = json(&t.0, &["scope"], &[("PATH", &path)]);
    assert_eq!(code, 2);
    assert!(std::fs::read_to_string(&calls).unwrap_or_default().contains("git rev-parse"), "git was not asked");
}

/// On a branch from local git (no CI variables), `gh pr view` names the pull request: its number gives
/// `pr-<n>`; a `gh` that fails (no pull request, not logged in), whatever it printed, leaves the branch's
/// scope, and so does one that closes its output but does not exit, within the 5 s bound.
#[test]
fn scope_from_local_git_asks_gh_for_the_pull_request() {
    use std::os::unix::fs::PermissionsExt;
    let t = TempDir::new("scope-gh");
    let repo = t.0.join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    let git = |args: &[&str]| {
        let ok = Command::new("git").current_dir(&repo).args(args).output().unwrap().status.success();
        assert!(ok, "git {args:?}");
    };
    git(&["init", "-q", "-b", "feat/gh"]);
    git(&["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "x"]);
    let cases = [
        ("echo 57", "pr-57"),
        ("echo 57; exit 1", "branch-feat-gh"),
        ("echo 58; exec >&- 2>&-; sleep 60", "branch-feat-gh"),
    ];
    for (i, (gh, scope)) in cases.into_iter().enumerate() {
        // A new file each time: rewriting a script while another test starts a process is "text file busy".
        let bin = t.0.join(format!("bin-{i}"));
        std::fs::create_dir_all(&bin).unwrap();
        std::fs::write(bin.join("gh"), format!("#!/bin/sh\n{gh}\n")).unwrap();
        std::fs::set_permissions(bin.join("gh"), std::fs::Permissions::from_mode(0o755)).unwrap();
        let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
        let started = std::time::Instant::now();
        let out = baton(&repo, &["scope"], &[("PATH", &path)]);
        assert_eq!(String::from_utf8_lossy(&out.stdout), format!("{scope}\n"), "gh: {gh}");
        assert!(started.elapsed() < std::time::Duration::from_secs(30), "gh: {gh}: {:?}", started.elapsed());
    }
}

#[test]
fn scope_outside_a_repository_without_a_branch_is_ctx_null() {
    let t = TempDir::new("ctxnull");
    let (code, env) = json(&t.0, &["scope"], &[]);
    assert_eq!(code, 2);
    assert_eq!(env["error"]["code"], "CTX_NULL");
    assert!(env["error"]["message"].as_str().unwrap().contains("--branch"));
    let out = baton(&t.0, &["scope"], &[]);
    assert!(String::from_utf8_lossy(&out.stderr).starts_with("error CTX_NULL:"));
}

#[test]
fn lock_acquire_hold_status_release_and_takeover() {
    let t = TempDir::new("lock");
    let store = format!("dir:{}", t.0.join("store").display());
    let s = store.as_str();
    let (code, env) =
        json(&t.0, &["lock", "acquire", "--scope", "pr-7", "--holder", "a", "--ttl", "1s", "--store", s], &[]);
    assert_eq!(code, 0, "{env}");
    assert_eq!(env["lock"]["holder"], "a");
    assert_eq!(env["lock"]["epoch"], 1);
    assert_eq!(env["preempted"], Value::Null);

    let (code, env) = json(&t.0, &["lock", "acquire", "--scope", "pr-7", "--holder", "b", "--store", s], &[]);
    assert_eq!(code, 3);
    assert_eq!(env["error"]["code"], "LOCK_HELD");
    assert_eq!(env["error"]["lock"]["holder"], "a");

    let (_, env) = json(&t.0, &["lock", "status", "--scope", "pr-7"], &[("BATON_STORE", s)]);
    assert_eq!((env["lock"]["holder"].clone(), env["lock"]["expired"].clone()), ("a".into(), false.into()));

    std::thread::sleep(std::time::Duration::from_millis(1100));
    let (_, env) = json(&t.0, &["lock", "status", "--scope", "pr-7", "--store", s], &[]);
    assert_eq!(env["lock"]["expired"], true);
    let (code, env) = json(&t.0, &["lock", "acquire", "--scope", "pr-7", "--holder", "b", "--store", s], &[]);
    assert_eq!(code, 0);
    assert_eq!(env["preempted"]["holder"], "a");
    assert_eq!(env["lock"]["epoch"], 2);

    let (code, env) = json(&t.0, &["lock", "release", "--scope", "pr-7", "--holder", "a", "--store", s], &[]);
    assert_eq!((code, env["released"].clone()), (0, false.into()), "a non-holder release is a no-op");
    let (_, env) = json(&t.0, &["lock", "release", "--scope", "pr-7", "--store", s], &[("BATON_HOLDER", "b")]);
    assert_eq!(env["released"], true);
    let (_, env) = json(&t.0, &["lock", "status", "--scope", "pr-7", "--store", s], &[]);
    assert_eq!(env["lock"], Value::Null);
    let (_, env) = json(&t.0, &["lock", "acquire", "--scope", "pr-7", "--holder", "c", "--store", s], &[]);
    assert_eq!(env["lock"]["epoch"], 3, "epochs keep growing after a release deleted lock.json");
    assert!(t.0.join("store/preview/pr-7/lock.json").exists());
}

#[test]
fn a_corrupt_lock_is_reported_and_never_taken_over() {
    let t = TempDir::new("corrupt");
    let cell = t.0.join("store/preview/pr-1");
    std::fs::create_dir_all(&cell).unwrap();
    std::fs::write(cell.join("lock.json"), "{\"holder\": \"x\", \"expiresAt\": \"whenever\"}").unwrap();
    let s = format!("dir:{}", t.0.join("store").display());
    let (code, env) = json(&t.0, &["lock", "acquire", "--scope", "pr-1", "--store", &s], &[]);
    assert_eq!((code, env["error"]["code"].as_str()), (1, Some("LOCK_CORRUPT")));
    let (code, env) = json(&t.0, &["lock", "status", "--scope", "pr-1", "--store", &s], &[]);
    assert_eq!((code, env["error"]["code"].as_str()), (1, Some("LOCK_CORRUPT")));
    assert_eq!(
        std::fs::read_to_string(cell.join("lock.json")).unwrap(),
        "{\"holder\": \"x\", \"expiresAt\": \"whenever\"}"
    );
}

#[test]
fn the_default_store_is_dot_baton_at_the_repository_root() {
    let t = TempDir::new("default");
    let repo = t.0.join("repo");
    std::fs::create_dir_all(repo.join("sub")).unwrap();
    assert!(Command::new("git").args(["init", "-q"]).current_dir(&repo).status().unwrap().success());
    let (code, env) = json(&repo.join("sub"), &["lock", "acquire", "--scope", "pr-1", "--holder", "a"], &[]);
    assert_eq!(code, 0, "{env}");
    assert!(repo.join(".baton/preview/pr-1/lock.json").exists());
    let (_, env) = json(&t.0, &["lock", "acquire", "--scope", "pr-1", "--holder", "a"], &[]);
    assert_eq!(env["store"], format!("dir:{}/.baton", t.0.display()), "outside a repository: the current directory");
}

#[test]
fn usage_errors_exit_2_with_an_envelope() {
    let t = TempDir::new("usage");
    for args in [
        &["lock", "acquire", "--scope", "pr-1", "--ttl", "5"][..],
        &["lock", "acquire", "--scope", "../etc", "--store", "dir:x"],
        &["lock", "acquire", "--scope", "pr-1", "--store", "s3://bucket"],
        &["lock", "release", "--scope", "pr-1", "--store", "dir:x"],
        &["scope", "--branch", "x", "--pr", "seven"],
        &["frobnicate"],
    ] {
        let (code, env) = json(&t.0, args, &[]);
        assert_eq!((code, env["error"]["code"].as_str()), (2, Some("USAGE")), "{args:?}: {env}");
    }
}

#[test]
fn eight_processes_race_to_take_over_an_expired_lock_and_exactly_one_wins() {
    // (The race on a fresh scope runs against every store in the store corpus, `store_corpus.rs`.)
    let t = TempDir::new("race");
    let s = t.store();
    let (code, _) =
        json(&t.0, &["lock", "acquire", "--scope", "pr-1", "--holder", "crashed", "--ttl", "10ms", "--store", &s], &[]);
    assert_eq!(code, 0);
    std::thread::sleep(std::time::Duration::from_millis(20));
    let winner = common::race_for_lock(&t.0, &s, "pr-1", 8, "expired lock");
    assert_eq!(winner["preempted"]["holder"], "crashed");
}

/// A cell mutex left by a process that died unreaped (a zombie: its parent has not waited for it, which in a
/// container whose PID 1 reaps nothing lasts forever) is broken like any dead owner's, not waited for.
#[test]
fn a_mutex_left_by_a_zombie_is_broken() {
    let t = TempDir::new("cli-zombie-mutex");
    // A child this test never waits for: once it exits it stays a zombie, with its pid and start time.
    let mut child = Command::new("true").spawn().unwrap();
    let pid = child.id();
    let stat_of = || std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let state = |stat: &str| stat[stat.rfind(')').unwrap() + 1..].split_whitespace().next().unwrap().to_owned();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while state(&stat_of()) != "Z" {
        assert!(std::time::Instant::now() < deadline, "the child never became a zombie");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let stat = stat_of();
    let start = stat[stat.rfind(')').unwrap() + 1..].split_whitespace().nth(19).unwrap().to_owned();
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap().trim().to_owned();
    let cell = t.0.join("store/preview/pr-1");
    std::fs::create_dir_all(&cell).unwrap();
    let held = serde_json::json!({ "pid": pid, "start": start, "host": host, "token": "0000000000000000" });
    std::fs::write(cell.join("lock.mutex"), format!("{held}\n")).unwrap();
    let started = std::time::Instant::now();
    let out = t
        .baton(&["lock", "acquire", "--scope", "pr-1", "--holder", "h", "--json"])
        .env("BATON_MUTEX_WAIT_MS", "5000")
        .output()
        .unwrap();
    let env: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(env["ok"], true, "{env}");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(4),
        "broken at once, not waited for: {:?}",
        started.elapsed()
    );
    assert!(!cell.join("lock.mutex").exists(), "the zombie's mutex is gone");
    child.wait().unwrap();
}
