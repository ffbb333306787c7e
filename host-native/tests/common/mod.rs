//! Helpers shared by the CLI process tests: a temp dir with a store, running `baton` with a clean
//! environment, and reading envelopes.

#![allow(dead_code, unreachable_pub)] // each test binary uses a different subset; `pub` for the test crates

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
        let mut all = args.to_vec();
        // Before `--`: what follows is the command's own arguments.
        let at = all.iter().position(|a| *a == "--").unwrap_or(all.len());
        all.insert(at, "--json");
        let out = self.baton(&all).output().unwrap();
        let env = envelope(&out);
        let code = out.status.code().expect("exited");
        assert_eq!(env["ok"] == true, code == 0, "ok iff exit 0: {env}\n{}", String::from_utf8_lossy(&out.stderr));
        (code, env)
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

/// `baton args` in `cwd` with only PATH, HOME and the compile cache variables from the test runner.
pub fn command(cwd: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(BATON);
    cmd.current_dir(cwd).env_clear().args(args);
    for key in ["PATH", "HOME", "BATON_CACHE_DIR", "XDG_CACHE_HOME"] {
        if let Some(v) = std::env::var_os(key) {
            cmd.env(key, v);
        }
    }
    cmd
}

/// The one envelope a `--json` command printed.
pub fn envelope(out: &Output) -> Value {
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(stdout.lines().count(), 1, "exactly one envelope line, got {stdout:?}");
    serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"))
}
