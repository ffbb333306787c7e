//! The private working clone of a git store and the `git` invocations on it. A bare repository in a
//! directory only the user can read, named by the core after its process (`git-clone-name`: pid and start
//! time), removed when the last handle goes or, at the latest, when the process exits normally; a later
//! process removes the clones of processes killed before they could ([`sweep`]).
//!
//! Every git process runs in its own process group with a deadline: when it passes, the whole group
//! (git, its `git-remote-*` helper, ssh) is killed and the run reports `timed_out`.

use crate::engine::wit::stores::{ProcessFact, StaleClones};
use crate::error::HostError;
use std::io::{ErrorKind, Read, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Clones not yet removed, so that an exit that skips destructors (the store worker thread may still hold
/// a handle when `main` returns) still removes them.
static LIVE: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

extern "C" fn remove_live_clones() {
    let dirs = std::mem::take(&mut *LIVE.lock().unwrap_or_else(std::sync::PoisonError::into_inner));
    for dir in dirs {
        let _ = std::fs::remove_dir_all(dir);
    }
}

fn register(dir: &Path) {
    static AT_EXIT: std::sync::Once = std::sync::Once::new();
    AT_EXIT.call_once(|| {
        #[allow(unsafe_code)]
        // SAFETY: registers a plain `extern "C"` function without arguments; it only touches a static.
        unsafe {
            libc::atexit(remove_live_clones);
        }
    });
    LIVE.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(dir.to_owned());
}

/// The name of the store's remote in the clone's config (see [`Repo::create`]; not `origin`, which a user's global
/// config may already name).
const REMOTE: &str = "baton";

/// `text` as the inside of a double-quoted git config value.
fn config_quote(text: &str) -> String {
    text.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

/// What one `git` process did.
pub(super) struct Ran {
    pub(super) ok: bool,
    pub(super) code: i32,
    pub(super) stdout: Vec<u8>,
    /// stderr (and for pushes stdout too), lossily decoded.
    pub(super) stderr: String,
    /// The deadline passed and the process group was killed.
    pub(super) timed_out: bool,
}

/// The environment of every `git` a store runs, as the core's `git-env` operation gives it: the variables
/// to remove (those that point git at the caller's repository) and the ones to set.
#[derive(Clone, Debug, Default)]
pub struct GitEnv {
    /// Removed from the inherited environment.
    pub remove: Vec<String>,
    /// Set, in order.
    pub set: Vec<(String, String)>,
}

impl GitEnv {
    /// Asks the core (`git-env`).
    pub fn from_core(core: &mut crate::engine::CoreComponent) -> Result<Self, HostError> {
        let answer = core.git_env()?;
        Ok(Self { remove: answer.remove, set: answer.set.into_iter().map(|v| (v.name, v.value)).collect() })
    }
}

/// A bare working clone owned by one store instance.
pub(super) struct Repo {
    dir: PathBuf,
    env: GitEnv,
    /// When the current store operation's git processes must have finished (see [`Self::set_deadline`]).
    deadline: std::cell::Cell<Option<Instant>>,
}

impl Repo {
    /// Creates a fresh clone directory (mode 0700) under the temp dir, named `name(random)` (the core's
    /// `git-clone-name`), and initialises it by `deadline` with `remote` as its remote [`REMOTE`] and `extra_config`
    /// (git config text) in its own config file: the remote URL, which may carry credentials, is never on a
    /// command line, where any user of the machine could read it (`ps`, `/proc/<pid>/cmdline`). `env` is
    /// the core's `git-env`.
    pub(super) fn create(
        name: &mut dyn FnMut(&str) -> Result<String, HostError>,
        remote: &str,
        extra_config: &str,
        env: GitEnv,
        deadline: Option<Instant>,
    ) -> Result<Self, HostError> {
        use std::os::unix::fs::DirBuilderExt;
        let base = std::env::temp_dir();
        let mut tries = 0;
        let dir = loop {
            let dir = base.join(name(&crate::random::hex(4)?)?);
            match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
                Ok(()) => break dir,
                Err(e) if e.kind() == ErrorKind::AlreadyExists && tries < 16 => tries += 1,
                Err(e) => {
                    return Err(HostError::io(format!("cannot create a working clone in {}", base.display()), &e));
                }
            }
        };
        register(&dir);
        let repo = Self { dir, env, deadline: std::cell::Cell::new(deadline) };
        // No template: a throwaway clone needs none of the sample hooks `init` would copy (a third of its time).
        let ran = repo.run(&["init", "-q", "--bare", "--template="], None)?;
        if ran.timed_out {
            return Err(late("git init"));
        }
        if !ran.ok {
            return Err(HostError::internal(format!("git init failed: {}", ran.stderr.trim())));
        }
        let path = repo.dir.join("config");
        let config = format!("\n[remote \"{REMOTE}\"]\n\turl = \"{}\"\n{extra_config}", config_quote(remote));
        let appended =
            std::fs::OpenOptions::new().append(true).open(&path).and_then(|mut f| f.write_all(config.as_bytes()));
        appended.map_err(|e| HostError::io(format!("cannot write {}", path.display()), &e))?;
        Ok(repo)
    }

    /// Sets the deadline of the git processes that follow (`None`: none).
    pub(super) fn set_deadline(&self, deadline: Option<Instant>) {
        self.deadline.set(deadline);
    }

    /// Runs `git args` in the clone with `stdin`, killed with its process group at the deadline.
    pub(super) fn run(&self, args: &[&str], stdin: Option<Vec<u8>>) -> Result<Ran, HostError> {
        let mut cmd = Command::new("git");
        // No background maintenance in a throwaway clone; fast-import keeps its small pack (no unpacking).
        cmd.args(["-c", "user.name=baton", "-c", "user.email=baton@localhost", "-c", "commit.gpgsign=false"])
            .args(["-c", "gc.auto=0", "-c", "maintenance.auto=false", "-c", "fastimport.unpackLimit=0"])
            .arg("--git-dir")
            .arg(&self.dir)
            .args(args)
            .stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // Its own process group, so that a deadline kills git's helpers (git-remote-http, ssh) too.
            .process_group(0);
        // The core's `git-env`: nothing of the caller's repository, no prompt, untranslated messages.
        for var in &self.env.remove {
            cmd.env_remove(var);
        }
        cmd.envs(self.env.set.iter().map(|(k, v)| (k, v)));
        // Out of baton's process group, git would outlive a baton killed with its group (a CI runner's
        // cancel): it dies with the thread that started it instead.
        #[cfg(target_os = "linux")]
        #[allow(unsafe_code)]
        // SAFETY: the closure runs in the forked child before exec and only calls prctl(2), which is
        // async-signal-safe; it touches no memory of the parent.
        unsafe {
            cmd.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }
        let mut child = cmd.spawn().map_err(|e| HostError::io("cannot run git (is it installed?)", &e))?;
        let writer = match (stdin, child.stdin.take()) {
            (Some(bytes), Some(mut pipe)) => Some(std::thread::spawn(move || {
                let _ = pipe.write_all(&bytes);
            })),
            _ => None,
        };
        let mut stderr_pipe = child.stderr.take();
        let err_reader = std::thread::spawn(move || {
            let mut buf = Vec::new();
            if let Some(p) = stderr_pipe.as_mut() {
                let _ = p.read_to_end(&mut buf);
            }
            buf
        });
        let mut stdout_pipe = child.stdout.take();
        let out_reader = std::thread::spawn(move || {
            let mut buf = Vec::new();
            if let Some(p) = stdout_pipe.as_mut() {
                let _ = p.read_to_end(&mut buf);
            }
            buf
        });
        let pid = child.id();
        let (done_tx, done) = std::sync::mpsc::channel();
        std::thread::spawn(move || drop(done_tx.send(child.wait())));
        let remaining = self.deadline.get().map(|d| d.saturating_duration_since(Instant::now()));
        let (status, timed_out) = match remaining {
            None => (done.recv().ok(), false),
            Some(left) => match done.recv_timeout(left) {
                Ok(status) => (Some(status), false),
                Err(_) => {
                    kill_group(pid);
                    (done.recv().ok(), true)
                }
            },
        };
        let status = status
            .unwrap_or_else(|| Err(std::io::Error::other("the waiting thread ended")))
            .map_err(|e| HostError::io("git did not finish", &e))?;
        // A helper that left the group may still hold a pipe: never wait for it past a short grace.
        let grace = Duration::from_millis(if timed_out { 200 } else { 5_000 });
        let stdout = join_within(out_reader, grace);
        if let Some(w) = writer
            && !timed_out
        {
            let _ = w.join();
        }
        let stderr = String::from_utf8_lossy(&join_within(err_reader, grace)).into_owned();
        Ok(Ran { ok: status.success() && !timed_out, code: status.code().unwrap_or(-1), stdout, stderr, timed_out })
    }

    /// `git fetch` of `refspecs` from the remote (shallow). On success the first fetched commit is in
    /// `FETCH_HEAD`; see [`Self::fetch_head`].
    pub(super) fn fetch(&self, refspecs: &[String]) -> Result<Ran, HostError> {
        let mut args = vec!["fetch", "-q", "--no-tags", "--depth=1", REMOTE];
        args.extend(refspecs.iter().map(String::as_str));
        self.run(&args, None)
    }

    /// The commit of the first line of `FETCH_HEAD`.
    pub(super) fn fetch_head(&self) -> Option<String> {
        let text = std::fs::read_to_string(self.dir.join("FETCH_HEAD")).ok()?;
        let oid = text.split_whitespace().next()?;
        oid.chars().all(|c| c.is_ascii_hexdigit()).then(|| oid.to_owned())
    }

    /// The output of one `git cat-file --batch` for objects named `rev:path` (the core parses it:
    /// `git-cat-parse`).
    pub(super) fn cat(&self, specs: &[String]) -> Result<Vec<u8>, HostError> {
        let input: String = specs.iter().map(|s| format!("{s}\n")).collect();
        let ran = self.run(&["cat-file", "--batch"], Some(input.into_bytes()))?;
        if ran.timed_out {
            return Err(late("git cat-file"));
        }
        if !ran.ok {
            return Err(HostError::internal(format!("git cat-file failed: {}", ran.stderr.trim())));
        }
        Ok(ran.stdout)
    }

    /// Builds a commit with one `git fast-import` of `stream` (the core's `git-commit`). Returns the new
    /// commit.
    pub(super) fn commit(&self, stream: &str) -> Result<String, HostError> {
        let ran =
            self.run(&["fast-import", "--quiet", "--force", "--date-format=now"], Some(stream.as_bytes().to_vec()))?;
        if ran.timed_out {
            return Err(late("git fast-import"));
        }
        let oid = String::from_utf8_lossy(&ran.stdout).trim().to_owned();
        if !ran.ok || oid.is_empty() {
            return Err(HostError::internal(format!("git fast-import failed: {}", ran.stderr.trim())));
        }
        Ok(oid)
    }

    /// Pushes `commit` to `reference` at the remote only if the remote ref is still `expected` (absent for
    /// `None`): the compare-and-swap. stdout and stderr are returned together for classification.
    pub(super) fn push(&self, commit: &str, reference: &str, expected: Option<&str>) -> Result<Ran, HostError> {
        let lease = format!("--force-with-lease={reference}:{}", expected.unwrap_or_default());
        let refspec = format!("{commit}:{reference}");
        let mut ran = self.run(&["push", "-q", "--no-verify", &lease, REMOTE, &refspec], None)?;
        let out = String::from_utf8_lossy(&ran.stdout).into_owned();
        ran.stderr = format!("{out}{}", ran.stderr);
        Ok(ran)
    }

    /// `git ls-remote <the remote> pattern`: `(oid, ref)` pairs, or the failed run.
    pub(super) fn ls_remote(&self, pattern: &str) -> Result<Result<Vec<(String, String)>, Ran>, HostError> {
        let ran = self.run(&["ls-remote", REMOTE, pattern], None)?;
        if !ran.ok {
            return Ok(Err(ran));
        }
        let text = String::from_utf8_lossy(&ran.stdout);
        Ok(Ok(text
            .lines()
            .filter_map(|l| l.split_once('\t'))
            .map(|(oid, name)| (oid.trim().to_owned(), name.trim().to_owned()))
            .collect()))
    }
}

impl Drop for Repo {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
        LIVE.lock().unwrap_or_else(std::sync::PoisonError::into_inner).retain(|d| d != &self.dir);
    }
}

/// A local git step killed at the deadline (`timedOut`: the store turns it into the core's timeout error).
fn late(what: &str) -> HostError {
    HostError::internal(format!("{what} did not finish by the store operation's deadline")).with("timedOut", true)
}

/// SIGKILL to the process group `pid` leads (git and every helper it started).
fn kill_group(pid: u32) {
    if let Ok(pid) = libc::pid_t::try_from(pid) {
        #[allow(unsafe_code)]
        // SAFETY: kill(2) with a negative pid signals the process group we created for this git; no memory
        // is involved.
        unsafe {
            libc::kill(-pid, libc::SIGKILL);
        }
    }
}

/// The bytes a reader thread collected, or what it has not: nothing, if it does not finish within `grace`.
fn join_within(reader: std::thread::JoinHandle<Vec<u8>>, grace: Duration) -> Vec<u8> {
    let until = Instant::now() + grace;
    while !reader.is_finished() {
        if Instant::now() >= until {
            return Vec::new();
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    reader.join().unwrap_or_default()
}

/// The core's `git-stale-clones` (names, looked-up processes) as the sweep calls it; `None` when it failed.
pub(super) type StaleVerdict<'a> = dyn FnMut(&[String], Option<&[ProcessFact]>) -> Option<StaleClones> + 'a;

/// Removes the clones in the temp dir whose process no longer exists (the core's `git-stale-clones`:
/// pid and start time, a zombie counts as gone); clones of live processes, and directories the core does
/// not recognise as clones, stay. Best effort: a clone that cannot be removed is left.
pub(super) fn sweep(stale: &mut StaleVerdict<'_>) {
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else { return };
    let names: Vec<String> = entries
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.starts_with("baton-git-"))
        .collect();
    if names.is_empty() {
        return;
    }
    let Some(asked) = stale(&names, None) else { return };
    let processes: Vec<ProcessFact> =
        asked.pids.into_iter().map(|pid| ProcessFact { pid, start: crate::store::process::start_time(pid) }).collect();
    let Some(answer) = stale(&names, Some(&processes)) else { return };
    for name in answer.stale.into_iter().flatten() {
        let _ = std::fs::remove_dir_all(std::env::temp_dir().join(name));
    }
}

/// The `http.<url>.extraheader` settings of the repository in the current directory (how CI checkouts,
/// e.g. `actions/checkout`, authenticate), as git config text for the private clone. Written to the clone's
/// config file, never passed on a command line.
pub(super) fn inherited_auth_config() -> String {
    let Ok(out) = Command::new("git")
        .args(["config", "--get-regexp", r"^http\..*\.extraheader$"])
        .env("GIT_TERMINAL_PROMPT", "0")
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
    else {
        return String::new();
    };
    let text = String::from_utf8_lossy(&out.stdout);
    let mut config = String::new();
    for line in text.lines() {
        let Some((key, value)) = line.split_once(' ') else { continue };
        let Some(url) = key.strip_prefix("http.").and_then(|k| k.strip_suffix(".extraheader")) else { continue };
        config.push_str(&format!("[http \"{}\"]\n\textraheader = \"{}\"\n", config_quote(url), config_quote(value)));
    }
    config
}
