//! Security through the real `baton` CLI: store files readable by the owner only, credentials never
//! printed on any error path that involves a remote, approval that no flag or variable combination can
//! bypass, and parent-object identities carrying a secret refused without echoing it.

mod common;

use common::{BATON, GitTemp, TempDir, command, envelope, git_out, ledger_record, pass_env, wait_for, with_json};
use serde_json::Value;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

/// `baton args` under `umask 022` (what most shells and CI runners have), with `vars`.
fn with_umask(cwd: &Path, args: &[&str], vars: &[(&str, &str)]) -> Output {
    let mut all = vec!["-c", "umask 022 && exec \"$@\"", "sh", BATON];
    all.extend_from_slice(args);
    let mut sh = Command::new("sh");
    pass_env(sh.current_dir(cwd).env_clear().args(&all)).envs(vars.iter().copied());
    sh.output().unwrap()
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap_or_else(|e| panic!("{}: {e}", path.display())).permissions().mode() & 0o777
}

/// Every path under `root` with its mode (directories included, `root` excluded).
fn modes(root: &Path) -> Vec<(String, u32)> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_owned()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap().map(Result::unwrap) {
            let p = e.path();
            out.push((p.strip_prefix(root).unwrap().display().to_string(), mode(&p)));
            if e.file_type().unwrap().is_dir() {
                stack.push(p);
            }
        }
    }
    out.sort();
    out
}

#[test]
fn dir_store_files_are_0600_and_directories_0700_under_umask_022() {
    let t = TempDir::new("sec-modes");
    let store = t.store();
    let record = format!("{BATON} ledger record --adapter a --key k --id 1 && echo x | {BATON} write state.txt");
    let out = with_umask(&t.0, &["run", "--scope", "pr-1", "--", "sh", "-c", &record], &[("BATON_STORE", &store)]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let out = with_umask(&t.0, &["lock", "acquire", "--scope", "pr-2", "--holder", "h"], &[("BATON_STORE", &store)]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let all = modes(&t.0.join("store"));
    let files: Vec<&str> = all.iter().map(|(p, _)| p.as_str()).collect();
    for expected in
        ["preview/pr-1/latest.json", "preview/pr-1/epoch.json", "preview/pr-1/state.txt", "preview/pr-2/lock.json"]
    {
        assert!(files.contains(&expected), "{expected} in {files:?}");
    }
    for (path, m) in &all {
        let dir = t.0.join("store").join(path).is_dir();
        assert_eq!(*m, if dir { 0o700 } else { 0o600 }, "{path}: {m:o} ({all:?})");
    }
    assert_eq!(mode(&t.0.join("store")), 0o700, "the store root it created too");
}

/// `(pid, start)` of this test process, as the mutex protocol names an owner.
fn own_pid_and_start() -> (u32, String) {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    let after = &stat[stat.rfind(')').unwrap() + 1..];
    (std::process::id(), after.split_whitespace().nth(19).unwrap().to_owned())
}

#[test]
fn the_cell_mutex_is_created_0600_under_umask_022() {
    let t = TempDir::new("sec-mutex");
    let cell = t.0.join("store/preview/pr-1");
    std::fs::create_dir_all(&cell).unwrap();
    // A mutex owned by this (live) test process: baton waits with its own mutex file written and ready.
    let (pid, start) = own_pid_and_start();
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap().trim().to_owned();
    let held = serde_json::json!({ "pid": pid, "start": start, "host": host, "token": "0000000000000000" });
    std::fs::write(cell.join("lock.mutex"), format!("{held}\n")).unwrap();
    let mut sh = Command::new("sh");
    pass_env(sh.current_dir(&t.0).env_clear())
        .env("BATON_STORE", t.store())
        .env("BATON_MUTEX_WAIT_MS", "3000")
        .args(["-c", "umask 022 && exec \"$0\" lock acquire --scope pr-1 --holder h --json", BATON])
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let child = sh.spawn().unwrap();
    let mut tmp = None;
    wait_for("baton's mutex file", Duration::from_secs(20), || {
        tmp = std::fs::read_dir(&cell).unwrap().map(|e| e.unwrap().path()).find(|p| {
            p.file_name().unwrap().to_string_lossy().starts_with("lock.mutex.")
                && p.extension().is_some_and(|x| x == "tmp")
        });
        tmp.is_some()
    });
    // The temp file is the inode that becomes `lock.mutex` (link(2)), so this is the mutex's mode.
    assert_eq!(mode(tmp.as_ref().unwrap()), 0o600);
    let out = child.wait_with_output().unwrap();
    assert_eq!(envelope(&out)["error"]["code"], "STORE_CONTENDED", "a live owner's mutex is never broken");
}

#[test]
fn git_working_clones_are_0700_and_kept_receipts_0600() {
    let g = GitTemp::new("sec-clone");
    let tmp = g.t.0.join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let listing = g.t.0.join("clones.txt");
    let script = format!("stat -c '%a %n' {}/baton-git-* > {}", tmp.display(), listing.display());
    let store = g.store();
    let tmp_s = tmp.display().to_string();
    let vars = [("BATON_STORE", store.as_str()), ("TMPDIR", tmp_s.as_str())];
    let out = with_umask(&g.t.0, &["run", "--scope", "pr-1", "--", "sh", "-c", &script], &vars);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = std::fs::read_to_string(&listing).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(!lines.is_empty() && lines.iter().all(|l| l.starts_with("700 ")), "{text}");
    assert_eq!(std::fs::read_dir(&tmp).unwrap().count(), 0, "the clone is removed on exit");
    // A receipt the remote refused is kept locally, owner only.
    g.refuse_subjects("^receipt", "frozen");
    let out = with_umask(&g.t.0, &["run", "--scope", "pr-9", "--json", "--", "true"], &vars);
    let env = envelope(&out);
    assert_eq!(env["error"]["code"], "STORE_REJECTED", "{env}");
    let kept = g.t.0.join(".baton/unpushed");
    let all = modes(&kept);
    assert!(all.iter().any(|(p, _)| p.ends_with(".json")), "{all:?}");
    for (path, m) in &all {
        let dir = kept.join(path).is_dir();
        assert_eq!(*m, if dir { 0o700 } else { 0o600 }, "{path}: {m:o}");
    }
}

// --- credentials ------------------------------------------------------------------------------------------

const SECRET: &str = "s3cr3t-t0ken";

/// Runs `baton args` (with and without `--json`) on `store`, asserting that neither stdout nor stderr
/// names the secret and that it fails with `code`. Returns the JSON envelope.
fn never_shows(cwd: &Path, store: &str, args: &[&str], vars: &[(&str, &str)], code: &str) -> Value {
    let mut envelope_seen = Value::Null;
    for json in [true, false] {
        let all = if json { with_json(args) } else { args.to_vec() };
        let mut cmd = command(cwd, &all);
        cmd.env("BATON_STORE", store).env("BATON_STORE_BUDGET_MS", "3000");
        for (k, v) in vars {
            cmd.env(k, v);
        }
        let out = cmd.output().unwrap();
        let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(!text.contains(SECRET), "{args:?}: the credential was printed: {text}");
        assert!(text.contains(code), "{args:?}: expected {code}: {text}");
        assert_ne!(out.status.code(), Some(0), "{args:?}: {text}");
        if json {
            envelope_seen = envelope(&out);
        }
    }
    envelope_seen
}

/// The commands that reach a remote: a fetch, a push, an ls-remote.
fn remote_commands() -> Vec<Vec<&'static str>> {
    vec![
        vec!["lock", "acquire", "--scope", "pr-1", "--holder", "h"],
        vec!["run", "--scope", "pr-1", "--", "true"],
        ledger_record("k", "1", "1").to_vec(),
        vec!["status", "--scope", "pr-1"],
        vec!["receipt", "list", "--scope", "pr-1"],
    ]
}

/// A one-file HTTP server answering every request with `status` (401 asks for Basic credentials).
struct Http(std::process::Child, u16);

impl Http {
    fn start(status: u16) -> Self {
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let script = r#"
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        code = int(sys.argv[2])
        self.send_response(code)
        if code == 401:
            self.send_header('WWW-Authenticate', 'Basic realm="r"')
        self.send_header('Content-Length', '0')
        self.end_headers()
    do_POST = do_GET
    def log_message(self, *a):
        pass
http.server.HTTPServer(('127.0.0.1', int(sys.argv[1])), H).serve_forever()
"#;
        let child = Command::new("python3")
            .args(["-c", script, &port.to_string(), &status.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("python3 runs (the test's HTTP server)");
        wait_for("the HTTP server", Duration::from_secs(10), || {
            std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
        });
        Self(child, port)
    }
}

impl Drop for Http {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// An ssh that refuses the key the way OpenSSH does, naming the user (and with it the password git passed
/// along in it), so that nothing of ssh's stderr may reach the output unredacted.
const FAKE_SSH: &str = "f() { echo \"$1: Permission denied (publickey).\" >&2; exit 255; }; f";

#[test]
fn credentials_never_show_when_the_remote_cannot_be_reached_or_refuses_them() {
    let t = TempDir::new("sec-creds-net");
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let (not_found, unauthorized) = (Http::start(404), Http::start(401));
    let stores = [
        ("connection refused", format!("git:http://user:{SECRET}@127.0.0.1:{closed}/r.git")),
        ("unknown host", format!("git:https://x-access-token:{SECRET}@no-such-host.invalid/r.git")),
        ("404", format!("git:http://user:{SECRET}@127.0.0.1:{}/r.git", not_found.1)),
        ("401", format!("git:http://user:{SECRET}@127.0.0.1:{}/r.git", unauthorized.1)),
        ("ssh refusing the key", format!("git:ssh://user:{SECRET}@127.0.0.1:{closed}/r.git")),
    ];
    // In parallel: a failed acquire retries its release for 1.4 s before it reports.
    std::thread::scope(|s| {
        for (what, store) in &stores {
            for args in remote_commands() {
                let cwd = &t.0;
                s.spawn(move || {
                    let env = never_shows(cwd, store, &args, &[("GIT_SSH_COMMAND", FAKE_SSH)], "STORE_PERMISSION");
                    assert!(env["error"]["remote"].as_str().unwrap().contains("[REDACTED]"), "{what} {args:?}: {env}");
                });
            }
        }
    });
    assert!(!t.0.join(".baton").exists(), "nothing kept: nothing was decided");
}

/// A git remote reached through a URL carrying credentials: git rewrites it (`url.<file>.insteadOf`, from a
/// config file named by `GIT_CONFIG_GLOBAL`) to the local bare repository, so every path that needs a
/// working remote (a rejected push, a fenced refusal, corrupt content) is exercised with the credential in
/// the store spec.
fn credential_remote(g: &GitTemp) -> (String, String) {
    let url = format!("https://ci:{SECRET}@git.example.invalid/org/repo.git");
    let config = g.t.0.join("gitconfig");
    std::fs::write(&config, format!("[url \"file://{}\"]\n\tinsteadOf = {url}\n", g.remote().display())).unwrap();
    (format!("git:{url}"), config.display().to_string())
}

#[test]
fn credentials_never_show_on_push_refusals_fencing_corrupt_content_or_bad_ref_names() {
    let g = GitTemp::new("sec-creds-push");
    let (store, config) = credential_remote(&g);
    let vars = [("GIT_CONFIG_GLOBAL", config.as_str())];
    let ok = |args: &[&str]| {
        let mut all = args.to_vec();
        all.push("--json");
        let out = command(&g.t.0, &all).env("BATON_STORE", &store).env("GIT_CONFIG_GLOBAL", &config).output().unwrap();
        let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(!text.contains(SECRET), "{text}");
        assert_eq!(out.status.code(), Some(0), "{args:?}: {text}");
        envelope(&out)
    };
    let env = ok(&["lock", "acquire", "--scope", "pr-1", "--holder", "h", "--ttl", "1h"]);
    assert_eq!(env["store"], "git:https://[REDACTED]@git.example.invalid/org/repo.git");
    let epoch = env["lock"]["epoch"].to_string();
    // Held by someone else.
    never_shows(&g.t.0, &store, &["lock", "acquire", "--scope", "pr-1", "--holder", "other"], &vars, "LOCK_HELD");
    // A fenced refusal: the wrong epoch.
    never_shows(&g.t.0, &store, &ledger_record("k", "1", "999"), &vars, "LOCK_LOST");
    // A rejected push (pre-receive hook), with the receipt kept locally.
    let hook =
        g.pre_receive(&format!("#!/bin/sh\necho 'denied for https://ci:{SECRET}@git.example.invalid' >&2\nexit 1\n"));
    let env = never_shows(&g.t.0, &store, &ledger_record("k", "1", &epoch), &vars, "STORE_REJECTED");
    assert!(env["error"]["message"].as_str().unwrap().contains("[REDACTED]"), "{env}");
    never_shows(&g.t.0, &store, &["run", "--scope", "pr-2", "--", "true"], &vars, "STORE_REJECTED");
    std::fs::remove_file(&hook).unwrap();
    // Corrupt content on the ref: an unreadable lock.
    let tip = git_out(&g.t.0, &["--git-dir", "remote.git", "rev-parse", "refs/heads/baton-receipts/preview/pr-1"]);
    let blob = {
        let mut child = Command::new("git")
            .current_dir(&g.t.0)
            .args(["--git-dir", "remote.git", "hash-object", "-w", "--stdin"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        std::io::Write::write_all(
            child.stdin.as_mut().unwrap(),
            format!("{{\"holder\": \"https://u:{SECRET}@x\"").as_bytes(),
        )
        .unwrap();
        drop(child.stdin.take());
        String::from_utf8(child.wait_with_output().unwrap().stdout).unwrap().trim().to_owned()
    };
    let index = g.t.0.join("idx");
    let gi = |args: &[&str]| {
        let out = Command::new("git")
            .current_dir(&g.t.0)
            .env("GIT_INDEX_FILE", &index)
            .args(["--git-dir", "remote.git"])
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap().trim().to_owned()
    };
    gi(&["read-tree", tip.trim()]);
    gi(&["update-index", "--add", "--cacheinfo", &format!("100644,{blob},preview/pr-1/lock.json")]);
    let tree = gi(&["write-tree"]);
    let commit =
        gi(&["-c", "user.name=t", "-c", "user.email=t@t", "commit-tree", &tree, "-p", tip.trim(), "-m", "corrupt"]);
    gi(&["update-ref", "refs/heads/baton-receipts/preview/pr-1", &commit]);
    for args in [
        &["lock", "acquire", "--scope", "pr-1", "--holder", "x"][..],
        &["lock", "status", "--scope", "pr-1"],
        &["run", "--scope", "pr-1", "--", "true"],
    ] {
        never_shows(&g.t.0, &store, args, &vars, "LOCK_CORRUPT");
    }
    // A bad ref name: an invalid prefix is refused before git runs.
    let bad = [("GIT_CONFIG_GLOBAL", config.as_str()), ("BATON_GIT_PREFIX", "bad..prefix")];
    never_shows(&g.t.0, &store, &["lock", "acquire", "--scope", "pr-3", "--holder", "h"], &bad, "USAGE");
    // Contention until the budget runs out: another writer keeps moving the ref (simulated by a hook that
    // says the ref moved).
    g.pre_receive("#!/bin/sh\necho 'error: cannot lock ref: is at 0000 but expected 1111' >&2\nexit 1\n");
    let budget = [("GIT_CONFIG_GLOBAL", config.as_str()), ("BATON_STORE_BUDGET_MS", "300")];
    never_shows(&g.t.0, &store, &["lock", "acquire", "--scope", "pr-4", "--holder", "h"], &budget, "STORE_");
}

// --- approval ---------------------------------------------------------------------------------------------

/// The environment the CLI resolves: `--env`, then `BATON_CTX_ENV`, then `BATON_ENV`, then preview.
fn resolved(flag: Option<&str>, ctx: Option<&str>, var: Option<&str>) -> String {
    flag.or(ctx).or(var).unwrap_or("preview").to_owned()
}

/// Names under `root` that are a spelling of production, with the files under them.
fn production_files(root: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(root) else { return Vec::new() };
    let mut found = Vec::new();
    for e in entries.map(Result::unwrap) {
        if e.file_name().to_string_lossy().eq_ignore_ascii_case("production") {
            let mut stack = vec![e.path()];
            while let Some(d) = stack.pop() {
                for f in std::fs::read_dir(&d).unwrap().map(Result::unwrap) {
                    if f.file_type().unwrap().is_dir() {
                        stack.push(f.path());
                    } else {
                        found.push(f.path().display().to_string());
                    }
                }
            }
        }
    }
    found
}

#[test]
fn no_flag_or_variable_combination_gets_a_production_lock_or_write_without_approval() {
    let t = TempDir::new("sec-approval");
    let flags = [None, Some("production"), Some("Production"), Some("preview")];
    let ctx_vars = [None, Some("production"), Some("staging")];
    let env_vars = [None, Some("PRODUCTION"), Some("preview")];
    // Blank in every way; a blank flag also beats an approver in the variable.
    let blanks: [(Option<&str>, Option<&str>); 5] =
        [(None, None), (Some(""), None), (Some("   "), None), (None, Some(" \t")), (Some(""), Some("alice"))];
    let commands = ["run", "destroy", "lock acquire", "lock break"];
    let marker = t.0.join("ran");
    let mut n = 0;
    let (mut refused, mut allowed) = (0, 0);
    for flag in flags {
        for ctx in ctx_vars {
            for var in env_vars {
                n += 1;
                let (by_flag, by_var) = blanks[n % blanks.len()];
                let which = commands[n % commands.len()];
                let scope = format!("s{n}");
                let mut args: Vec<&str> = which.split(' ').collect();
                args.extend(["--scope", &scope]);
                if let Some(f) = flag {
                    args.extend(["--env", f]);
                }
                if let Some(b) = by_flag {
                    args.extend(["--approved-by", b]);
                }
                if which == "lock break" {
                    args.extend(["--reason", "test"]);
                }
                let touch = format!("touch {}", marker.display());
                if which == "run" || which == "destroy" {
                    args.extend(["--json", "--", "sh", "-c", &touch]);
                } else {
                    args.push("--json");
                }
                let mut cmd = t.baton(&args);
                for (k, v) in [("BATON_CTX_ENV", ctx), ("BATON_ENV", var), ("BATON_APPROVED_BY", by_var)] {
                    if let Some(v) = v {
                        cmd.env(k, v);
                    }
                }
                let out = cmd.output().unwrap();
                let env = envelope(&out);
                let target = resolved(flag, ctx, var);
                let case = format!(
                    "{which} --env {flag:?} BATON_CTX_ENV {ctx:?} BATON_ENV {var:?} approver {by_flag:?}/{by_var:?}: {env}"
                );
                if target.eq_ignore_ascii_case("production") {
                    refused += 1;
                    assert_eq!(
                        (out.status.code(), env["error"]["code"].as_str()),
                        (Some(2), Some("ENV_NOT_APPROVED")),
                        "{case}"
                    );
                    assert!(!marker.exists(), "{case}: the command ran");
                    assert!(production_files(&t.0.join("store")).is_empty(), "{case}");
                } else {
                    allowed += 1;
                    assert_eq!(out.status.code(), Some(0), "{case}");
                    let _ = std::fs::remove_file(&marker);
                }
            }
        }
    }
    assert!(refused >= 20 && allowed >= 10, "{refused} refused, {allowed} allowed");
    // The fenced writes have no lock to write under: refused, nothing written.
    // `<command> --env <env> --scope main <middle> --holder h --epoch 1 --json`.
    let fenced = |command: &[&'static str], env: &'static str, middle: &[&'static str]| {
        [command, &["--env", env, "--scope", "main"], middle, &["--holder", "h", "--epoch", "1", "--json"]].concat()
    };
    for args in [
        fenced(&["ledger", "record"], "production", &["--adapter", "a", "--key", "k", "--id", "1"]),
        fenced(&["ledger", "intend"], "Production", &["--adapter", "a", "--key", "k"]),
        fenced(&["lock", "renew"], "production", &[]),
    ] {
        let out = t.baton(&args).output().unwrap();
        assert_eq!(
            (out.status.code(), envelope(&out)["error"]["code"].as_str()),
            (Some(3), Some("LOCK_LOST")),
            "{args:?}"
        );
    }
    let out = t.baton(&fenced(&["write", "f.txt"], "production", &[])).stdin(Stdio::null()).output().unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", String::from_utf8_lossy(&out.stdout));
    assert!(production_files(&t.0.join("store")).is_empty());
    // With an approver, production works and records who approved.
    let out = t
        .baton(&["run", "--env", "production", "--scope", "main", "--json", "--", "true"])
        .env("BATON_APPROVED_BY", " alice ")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stdout));
    assert_eq!(t.receipt("production", "main")["approvedBy"], "alice");
    let out = t
        .baton(&["lock", "acquire", "--env", "production", "--scope", "x", "--approved-by", "bob", "--json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stdout));
}

// --- parent objects ---------------------------------------------------------------------------------------

#[test]
fn a_parent_object_identity_carrying_a_secret_is_refused_without_echoing_it() {
    let t = TempDir::new("sec-parent");
    let identity = format!("auth0:tenant:client:{SECRET}");
    let marker = t.0.join("ran");
    let touch = format!("touch {}", marker.display());
    for (flags, vars) in [
        (vec!["--secret-env", "AUTH0_TOKEN"], vec![("AUTH0_TOKEN", SECRET)]),
        (vec![], vec![("BATON_SECRET_VARS", "OTHER, AUTH0_TOKEN"), ("AUTH0_TOKEN", SECRET)]),
    ] {
        for json in [true, false] {
            let mut args = vec!["lock-object", identity.as_str()];
            args.extend(flags.iter().copied());
            if json {
                args.push("--json");
            }
            args.extend(["--", "sh", "-c", &touch]);
            let mut cmd = t.baton(&args);
            for (k, v) in &vars {
                cmd.env(k, v);
            }
            let out = cmd.output().unwrap();
            let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
            assert_eq!(out.status.code(), Some(2), "{text}");
            assert!(text.contains("USAGE") && text.contains("contains a secret value"), "{text}");
            assert!(!text.contains(SECRET), "the secret was echoed: {text}");
        }
    }
    assert!(!marker.exists() && !t.0.join("store").exists(), "nothing ran, nothing was locked");
    // The same identity without the secret named as one is a plain object lease.
    let out =
        t.baton(&["lock-object", "auth0:tenant:client:abc", "--json", "--", "sh", "-c", &touch]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stdout));
    assert!(marker.exists());
}
