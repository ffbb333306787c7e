//! Helpers shared by the CLI process tests: a temp dir with a store, running `baton` with a clean
//! environment, and reading envelopes.

#![allow(dead_code, unreachable_pub)] // each test binary uses a different subset; `pub` for the test crates

pub mod etcd;

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The binary under test.
pub const BATON: &str = env!("CARGO_BIN_EXE_baton");

/// A fresh directory under the system temp dir (removed on drop) with a dir store in `store/`.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(name: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("baton-test-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Self(dir)
    }

    /// The store spec of `store/`.
    pub fn store(&self) -> String {
        format!("dir:{}", self.0.join("store").display())
    }

    /// A `baton` command in this dir, with a clean environment and `BATON_STORE` set.
    pub fn baton(&self, args: &[&str]) -> Command {
        let mut cmd = command(&self.0, args);
        cmd.env("BATON_STORE", self.store());
        cmd
    }

    /// Runs `baton args --json`; returns (exit code, envelope), checking `ok` iff exit 0.
    pub fn json(&self, args: &[&str]) -> (i32, Value) {
        json_in(&self.0, &self.store(), args)
    }

    /// The parsed `latest.json` of `env/scope` in the store.
    pub fn receipt(&self, env: &str, scope: &str) -> Value {
        let path = self.0.join("store").join(env).join(scope).join("latest.json");
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display())))
            .unwrap()
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Gives `cmd` PATH, HOME and the compile cache variables from the test runner (those that are set), for a
/// command whose environment was cleared.
pub fn pass_env(cmd: &mut Command) -> &mut Command {
    for key in ["PATH", "HOME", "BATON_CACHE_DIR", "XDG_CACHE_HOME"] {
        if let Some(v) = std::env::var_os(key) {
            cmd.env(key, v);
        }
    }
    cmd
}

/// `baton args` in `cwd` with only PATH, HOME and the compile cache variables from the test runner.
pub fn command(cwd: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(BATON);
    pass_env(cmd.current_dir(cwd).env_clear().args(args));
    cmd
}

/// `args` with `--json` added before `--` (what follows `--` is the command's own arguments), or at the end.
pub fn with_json<'a>(args: &[&'a str]) -> Vec<&'a str> {
    let mut all = args.to_vec();
    let at = all.iter().position(|a| *a == "--").unwrap_or(all.len());
    all.insert(at, "--json");
    all
}

/// Runs `baton args --json` in `cwd` on `store`; returns (exit code, envelope), checking `ok` iff exit 0.
/// `--json` goes before `--`: what follows is the command's own arguments.
pub fn json_in(cwd: &Path, store: &str, args: &[&str]) -> (i32, Value) {
    let out = command(cwd, &with_json(args)).env("BATON_STORE", store).output().unwrap();
    let env = envelope(&out);
    let code = out.status.code().expect("exited");
    assert_eq!(env["ok"] == true, code == 0, "ok iff exit 0: {env}\n{}", String::from_utf8_lossy(&out.stderr));
    (code, env)
}

/// The one envelope a `--json` command printed.
pub fn envelope(out: &Output) -> Value {
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(stdout.lines().count(), 1, "exactly one envelope line, got {stdout:?}");
    serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"))
}

/// A temp dir with a bare git remote `remote.git` used as the store (`git:file://...`).
pub struct GitTemp {
    pub t: TempDir,
}

impl GitTemp {
    pub fn new(name: &str) -> Self {
        let t = TempDir::new(&format!("git-{name}"));
        git(&t.0, &["init", "-q", "--bare", "remote.git"]);
        Self { t }
    }

    /// The bare remote.
    pub fn remote(&self) -> PathBuf {
        self.t.0.join("remote.git")
    }

    /// The store spec of the remote.
    pub fn store(&self) -> String {
        format!("git:file://{}", self.remote().display())
    }

    /// A `baton` command in `cwd` with `BATON_STORE` set to the remote.
    pub fn baton_in(&self, cwd: &Path, args: &[&str]) -> Command {
        let mut cmd = command(cwd, args);
        cmd.env("BATON_STORE", self.store());
        cmd
    }

    /// Runs `baton args --json` in the temp dir; returns (exit code, envelope), checking `ok` iff exit 0.
    pub fn json(&self, args: &[&str]) -> (i32, Value) {
        json_in(&self.t.0, &self.store(), args)
    }

    /// The text of `path` on the remote's ref `refs/heads/baton-receipts/<cell ref>`, if any.
    pub fn file(&self, cell_ref: &str, path: &str) -> Option<String> {
        let out = Command::new("git")
            .arg("--git-dir")
            .arg(self.remote())
            .args(["show", &format!("refs/heads/baton-receipts/{cell_ref}:{path}")])
            .output()
            .unwrap();
        out.status.success().then(|| String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// The parsed `latest.json` of `env/scope` (plain names) on the remote.
    pub fn receipt(&self, env: &str, scope: &str) -> Value {
        let text = self
            .file(&format!("{env}/{scope}"), &format!("{env}/{scope}/latest.json"))
            .unwrap_or_else(|| panic!("no receipt for {env}/{scope}"));
        serde_json::from_str(&text).unwrap()
    }

    /// The commit subjects of a cell ref, oldest first.
    pub fn log(&self, cell_ref: &str) -> Vec<String> {
        let out = git_out(
            &self.t.0,
            &[
                "--git-dir",
                "remote.git",
                "log",
                "--reverse",
                "--format=%s",
                &format!("refs/heads/baton-receipts/{cell_ref}"),
            ],
        );
        out.lines().map(str::to_owned).collect()
    }

    /// Installs `script` as the remote's `pre-receive` hook (executable); returns the hook's path, so that a
    /// test can remove it once the remote should accept again.
    pub fn pre_receive(&self, script: &str) -> PathBuf {
        let hook = self.remote().join("hooks/pre-receive");
        std::fs::write(&hook, script).unwrap();
        std::fs::set_permissions(&hook, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        hook
    }

    /// Installs a `pre-receive` hook refusing every push whose new commit's subject matches `pattern` (a
    /// `grep` pattern), printing `message` to stderr; returns the hook's path.
    pub fn refuse_subjects(&self, pattern: &str, message: &str) -> PathBuf {
        self.pre_receive(&format!(
            "#!/bin/sh\nwhile read old new ref; do\n  if git log -1 --format=%s \"$new\" | grep -q '{pattern}'; then echo '{message}' >&2; exit 1; fi\ndone\n"
        ))
    }

    /// The refs of the remote.
    pub fn refs(&self) -> Vec<String> {
        git_out(&self.t.0, &["--git-dir", "remote.git", "for-each-ref", "--format=%(refname)"])
            .lines()
            .map(str::to_owned)
            .collect()
    }
}

/// Runs `git args` in `cwd`, asserting success.
pub fn git(cwd: &Path, args: &[&str]) {
    let out = Command::new("git").current_dir(cwd).args(args).output().unwrap();
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

/// Runs `git args` in `cwd` and returns its stdout, asserting success.
pub fn git_out(cwd: &Path, args: &[&str]) -> String {
    let out = Command::new("git").current_dir(cwd).args(args).output().unwrap();
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The arguments of a fenced ledger write on `preview/pr-1`: `ledger record --scope pr-1 --adapter a --key
/// <key> --id <id> --holder h --epoch <epoch>`.
pub const fn ledger_record<'a>(key: &'a str, id: &'a str, epoch: &'a str) -> [&'a str; 14] {
    [
        "ledger",
        "record",
        "--scope",
        "pr-1",
        "--adapter",
        "a",
        "--key",
        key,
        "--id",
        id,
        "--holder",
        "h",
        "--epoch",
        epoch,
    ]
}

/// Polls `f` every 20 ms until it returns true; fails the test naming `what` once `limit` has passed.
pub fn wait_for(what: &str, limit: std::time::Duration, mut f: impl FnMut() -> bool) {
    let start = std::time::Instant::now();
    while !f() {
        assert!(start.elapsed() < limit, "timed out waiting for {what}");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// `sh -c` script text running `baton` commands (`baton ` replaced by the binary under test).
pub fn sh(script: &str) -> String {
    script.replace("baton ", &format!("{BATON} "))
}

/// `key:createdBy` of every ledger entry.
pub fn ledger_keys(ledger: &Value) -> Vec<String> {
    ledger
        .as_array()
        .unwrap()
        .iter()
        .map(|e| format!("{}:{}", e["key"].as_str().unwrap(), e["createdBy"].as_str().unwrap()))
        .collect()
}

/// A destroy command that records its stdin in `<dir>/list.json` and forgets every resource it was given.
pub fn forget_all(dir: &Path) -> String {
    sh(&format!(
        "cat > {l}; python3 -c 'import json,sys; [print(r[\"adapter\"], r[\"key\"]) for r in json.load(open(sys.argv[1]))]' {l} | while read a k; do baton ledger forget --adapter $a --key $k || exit 1; done",
        l = dir.join("list.json").display()
    ))
}

/// The keys the last `forget_all` command was given, in order.
pub fn given(dir: &Path) -> Vec<String> {
    let v: Value = serde_json::from_str(&std::fs::read_to_string(dir.join("list.json")).unwrap()).unwrap();
    v.as_array().unwrap().iter().map(|r| r["key"].as_str().unwrap().to_owned()).collect()
}

/// The succession journey of the ownership issue, on any store: `json` runs `baton ... --json`, `receipt`
/// reads a scope's stored `latest.json`, `dir` is where the destroy command keeps its list.
pub fn succession_journey(dir: &Path, json: &dyn Fn(&[&str]) -> (i32, Value), receipt: &dyn Fn(&str, &str) -> Value) {
    let record = sh(
        "baton ledger intend --adapter vercel --key env:A && baton ledger record --adapter vercel --key env:A --id v1 && baton ledger record --adapter vercel --key env:B --id v2",
    );
    let (code, env) = json(&["run", "--branch", "feat/search", "--", "sh", "-c", &record]);
    assert_eq!(code, 0, "{env}");
    assert_eq!(ledger_keys(&receipt("preview", "branch-feat-search")["ledger"]), ["env:A:baton", "env:B:baton"]);

    let (code, env) = json(&["run", "--branch", "feat/search", "--pr", "42", "--", "true"]);
    assert_eq!(code, 0, "{env}");
    let warning = env["warnings"][0].as_str().unwrap();
    assert!(warning.starts_with("Inherited 2 resources from scope `branch-feat-search`"), "{warning}");
    let branch = receipt("preview", "branch-feat-search");
    assert_eq!(branch["supersededBy"], "pr-42");
    assert_eq!(branch["ledger"], serde_json::json!([]));
    assert_eq!(ledger_keys(&receipt("preview", "pr-42")["ledger"]), ["env:A:baton", "env:B:baton"]);
    let (_, status) = json(&["status", "--branch", "feat/search", "--pr", "42"]);
    assert_eq!(status["owns"].as_array().unwrap().len(), 2, "{status}");
    assert_eq!(status["inherited"], serde_json::json!([]));

    let forget = forget_all(dir);
    let (code, _) = json(&["destroy", "--branch", "feat/search", "--", "sh", "-c", &forget]);
    assert_eq!(code, 0);
    assert!(given(dir).is_empty(), "destroying the branch scope deletes nothing");
    let (code, env) = json(&["destroy", "--branch", "feat/search", "--pr", "42", "--", "sh", "-c", &forget]);
    assert_eq!(code, 0, "{env}");
    assert_eq!(given(dir), ["env:B", "env:A"], "newest first");
    let pr = receipt("preview", "pr-42");
    assert_eq!(
        (pr["destroy"].clone(), pr["status"].clone(), pr["ledger"].clone()),
        (serde_json::json!(true), serde_json::json!("complete"), serde_json::json!([]))
    );
}

/// `n` simultaneous `baton lock acquire` processes on `scope`: asserts that exactly one wins and every other
/// gets `LOCK_HELD` naming the winner (exit 3). Returns the winner's envelope.
pub fn race_for_lock(cwd: &Path, store: &str, scope: &str, n: usize, label: &str) -> Value {
    let children: Vec<_> = (0..n)
        .map(|i| {
            command(cwd, &["lock", "acquire", "--scope", scope, "--holder", &format!("h{i}"), "--json"])
                .env("BATON_STORE", store)
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    let results: Vec<(i32, Value)> = children
        .into_iter()
        .map(|c| {
            let out = c.wait_with_output().unwrap();
            (out.status.code().unwrap(), envelope(&out))
        })
        .collect();
    let winners: Vec<&Value> = results.iter().filter(|(c, _)| *c == 0).map(|(_, e)| e).collect();
    assert_eq!(winners.len(), 1, "{label}: {results:?}");
    for (code, env) in &results {
        if *code != 0 {
            assert_eq!((*code, env["error"]["code"].as_str()), (3, Some("LOCK_HELD")), "{label}");
            assert_eq!(
                env["error"]["lock"]["holder"], winners[0]["lock"]["holder"],
                "{label}: losers see the real holder"
            );
        }
    }
    winners[0].clone()
}
