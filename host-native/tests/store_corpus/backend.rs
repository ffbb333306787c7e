//! The backends of the store corpus, and what the runner does to them behind every handle's back (`put`,
//! `remove`, `peek`, `mutex`, `block-env`): plain files for the dir store, plumbing on the bare remote for
//! the git stores (the remote is a local directory for both `file://` and `git daemon`), `etcdctl` for the
//! etcd store (each case under a key prefix of its own on one etcd).

use baton_native::engine::wit::commands::EtcdVars;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Which store a backend is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Dir,
    GitFile,
    GitDaemon,
    Etcd,
}

impl Kind {
    /// The kind a case's `skip` names: `dir` or `git`.
    pub(crate) fn family(self) -> &'static str {
        match self {
            Self::Dir => "dir",
            Self::GitFile | Self::GitDaemon => "git",
            Self::Etcd => "etcd",
        }
    }
}

/// Where one case's store lives.
pub(crate) struct Location {
    pub(crate) kind: Kind,
    /// The store spec handles open.
    pub(crate) spec: String,
    /// The dir store's root, or the bare remote.
    pub(crate) path: PathBuf,
    /// The etcd store's endpoint and key prefix (`BATON_ETCD_PREFIX`).
    pub(crate) etcd: Option<(String, String)>,
}

/// Where a cell lives: its directory (in a git store: inside the ref's tree) and, for git, its ref.
pub(crate) struct Place {
    pub(crate) dir: String,
    pub(crate) reference: String,
}

const PREFIX: &str = "refs/heads/baton-receipts";

impl Location {
    /// A fresh store for case number `n` under `base` (for git daemon: served at `git://127.0.0.1:port/`;
    /// for etcd: the prefix `/corpus-<pid>-<n>/` on the etcd at `127.0.0.1:port`).
    pub(crate) fn new(kind: Kind, base: &Path, n: usize, port: Option<u16>) -> Self {
        match kind {
            Kind::Dir => {
                let path = base.join(format!("case-{n}")).join("store");
                Self { kind, spec: format!("dir:{}", path.display()), path, etcd: None }
            }
            Kind::Etcd => {
                let endpoint = format!("http://127.0.0.1:{}", port.expect("the etcd port"));
                let prefix = format!("/corpus-{}-{n}/", std::process::id());
                Self { kind, spec: format!("etcd:{endpoint}"), path: base.to_owned(), etcd: Some((endpoint, prefix)) }
            }
            Kind::GitFile | Kind::GitDaemon => {
                let name = format!("remote-{n}.git");
                let path = base.join(&name);
                run_git(&["init", "-q", "--bare"], Some(&path), None, &[]);
                let spec = match port {
                    Some(port) => format!("git:git://127.0.0.1:{port}/{name}"),
                    None => format!("git:file://{}", path.display()),
                };
                Self { kind, spec, path, etcd: None }
            }
        }
    }

    /// The place of `env/scope`, or with `raw`, of the entry `raw` (taken as both the directory name and
    /// the ref segment) in `env`. `paths` is the core's `cell-path` of `env/scope` (or of `env/x` for raw).
    pub(crate) fn place(&self, paths: &Value, raw: Option<&str>) -> Place {
        let (dir, reference) = (paths["dir"].as_str().unwrap_or_default(), paths["ref"].as_str().unwrap_or_default());
        match raw {
            None => Place { dir: dir.to_owned(), reference: format!("{PREFIX}/{reference}") },
            Some(raw) => {
                let env_dir = dir.split('/').next().unwrap_or_default();
                let env_ref = reference.split('/').next().unwrap_or_default();
                Place { dir: format!("{env_dir}/{raw}"), reference: format!("{PREFIX}/{env_ref}/{raw}") }
            }
        }
    }

    /// The `BATON_ETCD_*` variables of `store-spec` for this location (none but for etcd).
    pub(crate) fn etcd_vars(&self) -> Option<EtcdVars> {
        self.etcd.as_ref().map(|(_, prefix)| EtcdVars {
            prefix: Some(prefix.clone()),
            user: None,
            password: None,
            ca: None,
            cert: None,
            key: None,
        })
    }

    /// Writes `files` into the cell at `place`.
    pub(crate) fn put(&self, place: &Place, files: &[(String, Vec<u8>)]) {
        if let Some((endpoint, prefix)) = &self.etcd {
            for (name, bytes) in files {
                etcdctl(endpoint, &["put", &format!("{prefix}{}/{name}", place.dir)], Some(bytes));
            }
            return;
        }
        if self.kind == Kind::Dir {
            let dir = self.path.join(&place.dir);
            std::fs::create_dir_all(&dir).unwrap();
            for (name, bytes) in files {
                std::fs::write(dir.join(name), bytes).unwrap();
            }
            return;
        }
        let index = self.path.join("corpus.index");
        let env = [("GIT_INDEX_FILE", index.to_str().unwrap())];
        let parent = self.tip(&place.reference);
        match &parent {
            Some(tip) => run_git(&["read-tree", tip], Some(&self.path), None, &env),
            None => run_git(&["read-tree", "--empty"], Some(&self.path), None, &env),
        };
        for (name, bytes) in files {
            let blob = run_git(&["hash-object", "-w", "--stdin"], Some(&self.path), Some(bytes), &env);
            let info = format!("100644,{},{}/{name}", blob.trim(), place.dir);
            run_git(&["update-index", "--add", "--cacheinfo", &info], Some(&self.path), None, &env);
        }
        let tree = run_git(&["write-tree"], Some(&self.path), None, &env);
        let mut args = vec!["commit-tree", tree.trim(), "-m", "store corpus: put"];
        if let Some(tip) = &parent {
            args.extend(["-p", tip.as_str()]);
        }
        let commit = run_git(&args, Some(&self.path), None, &env);
        run_git(&["update-ref", &place.reference, commit.trim()], Some(&self.path), None, &[]);
        let _ = std::fs::remove_file(index);
    }

    /// Deletes the cell at `place` (a dir store's directory, a git store's ref).
    pub(crate) fn remove(&self, place: &Place) {
        if let Some((endpoint, prefix)) = &self.etcd {
            etcdctl(endpoint, &["del", "--prefix", &format!("{prefix}{}/", place.dir)], None);
        } else if self.kind == Kind::Dir {
            std::fs::remove_dir_all(self.path.join(&place.dir)).unwrap();
        } else {
            run_git(&["update-ref", "-d", &place.reference], Some(&self.path), None, &[]);
        }
    }

    /// The text of `file` of the cell at `place`, if it exists.
    pub(crate) fn peek(&self, place: &Place, file: &str) -> Option<String> {
        if let Some((endpoint, prefix)) = &self.etcd {
            let key = format!("{prefix}{}/{file}", place.dir);
            // etcdctl prints the value and a newline; nothing for an absent key.
            let out = etcdctl(endpoint, &["get", &key, "--print-value-only"], None);
            return out.strip_suffix('\n').map(str::to_owned);
        }
        if self.kind == Kind::Dir {
            return std::fs::read(self.path.join(&place.dir).join(file))
                .ok()
                .map(|b| String::from_utf8_lossy(&b).into_owned());
        }
        let tip = self.tip(&place.reference)?;
        let out = git_command(&["cat-file", "blob", &format!("{tip}:{}/{file}", place.dir)], Some(&self.path))
            .stderr(Stdio::null())
            .output()
            .unwrap();
        out.status.success().then(|| String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// Dir stores: a plain file where the directory of the env of `place` should be.
    pub(crate) fn block_env(&self, place: &Place) {
        std::fs::create_dir_all(&self.path).unwrap();
        std::fs::write(self.path.join(place.dir.split('/').next().unwrap()), "not a directory\n").unwrap();
    }

    fn tip(&self, reference: &str) -> Option<String> {
        let out = git_command(&["rev-parse", "--verify", "-q", reference], Some(&self.path)).output().unwrap();
        out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
    }
}

/// Runs `etcdctl` on `endpoint` (with `stdin`); panics unless it succeeds; its stdout.
fn etcdctl(endpoint: &str, args: &[&str], stdin: Option<&[u8]>) -> String {
    let mut child = Command::new("etcdctl")
        .args(["--endpoints", endpoint])
        .args(args)
        .env("ETCDCTL_API", "3")
        .stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    if let (Some(bytes), Some(mut pipe)) = (stdin, child.stdin.take()) {
        std::io::Write::write_all(&mut pipe, bytes).unwrap();
    }
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "etcdctl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The content of a `lock.mutex` (docs/dir-store.md) owned by a process that has exited, by this process
/// (alive), or not written by the protocol at all.
pub(crate) fn mutex_content(owner: &str) -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").map(|h| h.trim().to_owned()).unwrap_or_default();
    let pid = match owner {
        "garbage" => return "left by something else\n".to_owned(),
        "live" => std::process::id(),
        "dead" => {
            let mut child = Command::new("true").spawn().unwrap();
            let pid = child.id();
            child.wait().unwrap();
            pid
        }
        other => panic!("unknown mutex owner `{other}`"),
    };
    let start = start_time(pid);
    format!("{}\n", serde_json::json!({ "pid": pid, "start": start, "host": host, "token": "00c0ffee00c0ffee" }))
}

/// Field 22 of `/proc/<pid>/stat`, or `"1"` for a process that is gone (any value: it no longer exists).
fn start_time(pid: u32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().nth(19).map(str::to_owned)))
        .unwrap_or_else(|| "1".to_owned())
}

fn git_command(args: &[&str], git_dir: Option<&Path>) -> Command {
    let mut cmd = Command::new("git");
    cmd.args(["-c", "user.name=corpus", "-c", "user.email=corpus@localhost", "-c", "commit.gpgsign=false"]);
    if let Some(dir) = git_dir {
        cmd.arg("--git-dir").arg(dir);
    }
    cmd.args(args);
    cmd
}

/// Runs git (for `init`, `git_dir` is the repository to create); panics unless it succeeds; its stdout.
fn run_git(args: &[&str], git_dir: Option<&Path>, stdin: Option<&[u8]>, env: &[(&str, &str)]) -> String {
    let mut cmd = if args[0] == "init" {
        let mut c = git_command(args, None);
        c.arg(git_dir.unwrap());
        c
    } else {
        git_command(args, git_dir)
    };
    cmd.envs(env.iter().copied()).stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() });
    let mut child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    if let (Some(bytes), Some(mut pipe)) = (stdin, child.stdin.take()) {
        std::io::Write::write_all(&mut pipe, bytes).unwrap();
    }
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A `git daemon` serving `base` on a loopback port of its own, stopped on drop.
pub(crate) struct Daemon {
    child: std::process::Child,
    pub(crate) port: u16,
}

impl Daemon {
    pub(crate) fn start(base: &Path) -> Self {
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let child = Command::new("git")
            .args(["daemon", "--export-all", "--enable=receive-pack", "--reuseaddr", "--listen=127.0.0.1"])
            .arg(format!("--base-path={}", base.display()))
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let daemon = Self { child, port };
        let started = std::time::Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(started.elapsed() < std::time::Duration::from_secs(10), "git daemon did not start");
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        daemon
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
