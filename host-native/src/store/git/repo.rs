//! The private working clone of a git store and the `git` invocations on it. A bare repository in a
//! directory only the user can read (created like `mkdtemp`), removed when the last handle goes or, at the
//! latest, when the process exits normally.

use crate::error::HostError;
use std::io::{ErrorKind, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;

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

/// What one `git` process did.
pub(super) struct Ran {
    pub(super) ok: bool,
    pub(super) code: i32,
    pub(super) stdout: Vec<u8>,
    /// stderr (and for pushes stdout too), lossily decoded.
    pub(super) stderr: String,
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
        let answer = core.invoke("git-env", &serde_json::json!({}))?;
        let strings = |v: &serde_json::Value| -> Vec<String> {
            v.as_array().into_iter().flatten().filter_map(|s| s.as_str().map(str::to_owned)).collect()
        };
        let set = answer["set"].as_object().into_iter().flatten();
        let set = set.filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_owned()))).collect();
        Ok(Self { remove: strings(&answer["remove"]), set })
    }
}

/// A bare working clone owned by one store instance.
pub(super) struct Repo {
    dir: PathBuf,
    env: GitEnv,
}

impl Repo {
    /// Creates a fresh clone directory `baton-git-<hash of remote>-<random>` (mode 0700) under the temp dir.
    pub(super) fn create(remote: &str, extra_config: &str, env: GitEnv) -> Result<Self, HostError> {
        use std::os::unix::fs::DirBuilderExt;
        let base = std::env::temp_dir();
        let hash = fnv(remote.as_bytes());
        let mut tries = 0;
        let dir = loop {
            let dir = base.join(format!("baton-git-{hash:012x}-{}", super::super::mutex::random_hex(4)));
            match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
                Ok(()) => break dir,
                Err(e) if e.kind() == ErrorKind::AlreadyExists && tries < 16 => tries += 1,
                Err(e) => {
                    return Err(HostError::io(format!("cannot create a working clone in {}", base.display()), &e));
                }
            }
        };
        register(&dir);
        let repo = Self { dir, env };
        let ran = repo.run(&["init", "-q", "--bare"], None)?;
        if !ran.ok {
            return Err(HostError::internal(format!("git init failed: {}", ran.stderr.trim())));
        }
        if !extra_config.is_empty() {
            let path = repo.dir.join("config");
            let appended = std::fs::OpenOptions::new().append(true).open(&path).and_then(|mut f| {
                f.write_all(b"\n")?;
                f.write_all(extra_config.as_bytes())
            });
            appended.map_err(|e| HostError::io(format!("cannot write {}", path.display()), &e))?;
        }
        Ok(repo)
    }

    /// Runs `git args` in the clone with `stdin`.
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
            .stderr(Stdio::piped());
        // The core's `git-env`: nothing of the caller's repository, no prompt, untranslated messages.
        for var in &self.env.remove {
            cmd.env_remove(var);
        }
        cmd.envs(self.env.set.iter().map(|(k, v)| (k, v)));
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
        let mut stdout = Vec::new();
        if let Some(mut p) = child.stdout.take() {
            let _ = p.read_to_end(&mut stdout);
        }
        let status = child.wait().map_err(|e| HostError::io("git did not finish", &e))?;
        if let Some(w) = writer {
            let _ = w.join();
        }
        let stderr = String::from_utf8_lossy(&err_reader.join().unwrap_or_default()).into_owned();
        Ok(Ran { ok: status.success(), code: status.code().unwrap_or(-1), stdout, stderr })
    }

    /// `git fetch` of `refspecs` from `remote` (shallow). On success the first fetched commit is in
    /// `FETCH_HEAD`; see [`Self::fetch_head`].
    pub(super) fn fetch(&self, remote: &str, refspecs: &[String]) -> Result<Ran, HostError> {
        let mut args = vec!["fetch", "-q", "--no-tags", "--depth=1", remote];
        args.extend(refspecs.iter().map(String::as_str));
        self.run(&args, None)
    }

    /// The commit of the first line of `FETCH_HEAD`.
    pub(super) fn fetch_head(&self) -> Option<String> {
        let text = std::fs::read_to_string(self.dir.join("FETCH_HEAD")).ok()?;
        let oid = text.split_whitespace().next()?;
        oid.chars().all(|c| c.is_ascii_hexdigit()).then(|| oid.to_owned())
    }

    /// Reads objects named `rev:path` with one `git cat-file --batch`; `None` for a missing one.
    pub(super) fn cat(&self, specs: &[String]) -> Result<Vec<Option<Vec<u8>>>, HostError> {
        if specs.is_empty() {
            return Ok(Vec::new());
        }
        let input: String = specs.iter().map(|s| format!("{s}\n")).collect();
        let ran = self.run(&["cat-file", "--batch"], Some(input.into_bytes()))?;
        if !ran.ok {
            return Err(HostError::internal(format!("git cat-file failed: {}", ran.stderr.trim())));
        }
        let out = ran.stdout;
        let mut at = 0;
        let mut objects = Vec::with_capacity(specs.len());
        for _ in specs {
            let end = out[at..].iter().position(|&b| b == b'\n').map(|i| at + i);
            let Some(end) = end else {
                return Err(HostError::internal("git cat-file answered less than asked"));
            };
            let header = String::from_utf8_lossy(&out[at..end]).into_owned();
            at = end + 1;
            let mut parts = header.split(' ');
            let (_, kind, size) = (parts.next(), parts.next(), parts.next().and_then(|s| s.parse::<usize>().ok()));
            match (kind, size) {
                (Some("blob" | "tree" | "commit" | "tag"), Some(size)) if at + size <= out.len() => {
                    objects.push((kind == Some("blob")).then(|| out[at..at + size].to_vec()));
                    at += size + 1;
                }
                _ => objects.push(None), // `<spec> missing` (or ambiguous)
            }
        }
        Ok(objects)
    }

    /// Builds a commit with one `git fast-import`: on `parent` (or, without one, on a new root commit
    /// holding only `README.md` with message `root_message`), setting `README.md` and applying `files`
    /// (`(path, Some(content))` writes, `(path, None)` deletes). Returns the new commit.
    pub(super) fn commit(
        &self,
        parent: Option<&str>,
        readme: &str,
        root_message: &str,
        files: &[(String, Option<String>)],
        message: &str,
    ) -> Result<String, HostError> {
        fn data(s: &mut Vec<u8>, text: &str) {
            s.extend_from_slice(format!("data {}\n", text.len()).as_bytes());
            s.extend_from_slice(text.as_bytes());
            s.push(b'\n');
        }
        let mut s = Vec::new();
        s.extend_from_slice(b"reset refs/baton/new\n");
        let from = match parent {
            Some(p) => format!("from {p}\n"),
            None => {
                s.extend_from_slice(b"commit refs/baton/new\nmark :1\ncommitter baton <baton@localhost> now\n");
                data(&mut s, root_message);
                s.extend_from_slice(b"M 100644 inline README.md\n");
                data(&mut s, readme);
                "from :1\n".to_owned()
            }
        };
        s.extend_from_slice(b"commit refs/baton/new\nmark :2\ncommitter baton <baton@localhost> now\n");
        data(&mut s, message);
        s.extend_from_slice(from.as_bytes());
        s.extend_from_slice(b"M 100644 inline README.md\n");
        data(&mut s, readme);
        for (path, content) in files {
            match content {
                Some(text) => {
                    s.extend_from_slice(format!("M 100644 inline {path}\n").as_bytes());
                    data(&mut s, text);
                }
                None => s.extend_from_slice(format!("D {path}\n").as_bytes()),
            }
        }
        s.extend_from_slice(b"get-mark :2\n");
        let ran = self.run(&["fast-import", "--quiet", "--force", "--date-format=now"], Some(s))?;
        let oid = String::from_utf8_lossy(&ran.stdout).trim().to_owned();
        if !ran.ok || oid.is_empty() {
            return Err(HostError::internal(format!("git fast-import failed: {}", ran.stderr.trim())));
        }
        Ok(oid)
    }

    /// Pushes `commit` to `reference` at `remote` only if the remote ref is still `expected` (absent for
    /// `None`): the compare-and-swap. stdout and stderr are returned together for classification.
    pub(super) fn push(
        &self,
        remote: &str,
        commit: &str,
        reference: &str,
        expected: Option<&str>,
    ) -> Result<Ran, HostError> {
        let lease = format!("--force-with-lease={reference}:{}", expected.unwrap_or_default());
        let refspec = format!("{commit}:{reference}");
        let mut ran = self.run(&["push", "-q", "--no-verify", &lease, remote, &refspec], None)?;
        let out = String::from_utf8_lossy(&ran.stdout).into_owned();
        ran.stderr = format!("{out}{}", ran.stderr);
        Ok(ran)
    }

    /// `git ls-remote remote pattern`: `(oid, ref)` pairs, or the failed run.
    pub(super) fn ls_remote(
        &self,
        remote: &str,
        pattern: &str,
    ) -> Result<Result<Vec<(String, String)>, Ran>, HostError> {
        let ran = self.run(&["ls-remote", remote, pattern], None)?;
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

/// FNV-1a, 48 bits: names the clone directory after the remote without revealing it.
fn fnv(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h & 0xffff_ffff_ffff
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
        let quote = |s: &str| s.replace('\\', "\\\\").replace('"', "\\\"");
        config.push_str(&format!("[http \"{}\"]\n\textraheader = \"{}\"\n", quote(url), quote(value)));
    }
    config
}
