//! The per-cell mutex of the dir store (`lock.mutex`), exactly as `docs/dir-store.md` specifies, so the
//! Node package, this binary and the original tool exclude each other on the same files.
//!
//! Taken by `link(2)` of a fully written temp file; names its owner by pid and process start time and says
//! when it was last known held (`at`, refreshed while held, which the original needs to see it as live).
//! The core's `mutex-verdict` judges a mutex in the way from the facts gathered here; a stale one is broken
//! only by the one contender that created its break claim exclusively, and only if it still holds exactly
//! the content judged stale, so no number of contenders can remove a fresh owner's mutex. Never by age.

use crate::engine::CoreComponent;
use crate::engine::wit::stores as ws;
use crate::error::HostError;
use serde_json::Value;
use std::io::ErrorKind;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// How deep a breaker follows break claims left by breakers that died while breaking.
const MAX_CLAIM_DEPTH: u32 = 8;

/// A held cell mutex: its `at` is refreshed by a thread while held; released on drop if its content is
/// still ours.
pub struct CellMutex {
    path: PathBuf,
    held: Arc<Held>,
    refresher: Option<std::thread::JoinHandle<()>>,
}

/// What the holder and its refresh thread share.
struct Held {
    /// The mutex content as last written by us.
    content: Mutex<String>,
    /// Set on release: the refresh thread stops.
    stop: Mutex<bool>,
    wake: Condvar,
}

impl CellMutex {
    /// Takes the mutex at `path` (the cell's `lock.mutex`), waiting up to `bound` while a live process holds
    /// it (then `STORE_CONTENDED`) and breaking it when the core judges its owner gone. `env`/`scope` name
    /// the cell in the timeout error.
    pub fn take(
        core: &mut CoreComponent,
        path: &Path,
        env: &str,
        scope: &str,
        bound: Duration,
    ) -> Result<Self, HostError> {
        let token = crate::random::hex(8)?;
        let pid = std::process::id();
        let owner = ws::MutexOwner {
            pid,
            stat: read_stat(pid),
            host: hostname(),
            token: token.clone(),
            now_ms: crate::clock::now_ms(),
        };
        let own = core.mutex_content(&owner)?;
        let content = own.content;
        let refresh = Duration::from_millis(own.refresh_ms);
        let tmp = path.with_file_name(format!("lock.mutex.{pid}.{token}.tmp"));
        write_new(&tmp, &content).map_err(|e| HostError::io(format!("cannot write {}", tmp.display()), &e))?;
        let result = Self::link_in(core, path, &tmp, env, scope, bound);
        let _ = std::fs::remove_file(&tmp);
        result?;
        let held = Arc::new(Held { content: Mutex::new(content), stop: Mutex::new(false), wake: Condvar::new() });
        let refresher = {
            let (held, path) = (Arc::clone(&held), path.to_owned());
            let tmp = path.with_file_name(format!("lock.mutex.{pid}.{token}.at.tmp"));
            std::thread::Builder::new()
                .name("baton-mutex-at".into())
                .spawn(move || refresh_loop(&held, &path, &tmp, refresh))
        };
        Ok(Self { path: path.to_owned(), held, refresher: refresher.ok() })
    }

    fn link_in(
        core: &mut CoreComponent,
        path: &Path,
        tmp: &Path,
        env: &str,
        scope: &str,
        bound: Duration,
    ) -> Result<(), HostError> {
        let started = Instant::now();
        let mut spins = 0u32;
        loop {
            match std::fs::hard_link(tmp, path) {
                Ok(()) => return Ok(()),
                Err(e) if e.kind() == ErrorKind::AlreadyExists => {}
                Err(e) => return Err(HostError::io(format!("cannot create {}", path.display()), &e)),
            }
            let holder = match std::fs::read_to_string(path) {
                Err(e) if e.kind() == ErrorKind::NotFound => continue,
                Err(e) => return Err(HostError::io(format!("cannot read {}", path.display()), &e)),
                Ok(text) => text,
            };
            let verdict = judge(core, &holder)?;
            if verdict.verdict != ws::Verdict::Live {
                break_stale(core, path, &holder, &verdict, tmp, 0)?;
                continue;
            }
            if started.elapsed() >= bound {
                let owner_pid = verdict.pid;
                return Err(HostError::new(
                    "STORE_CONTENDED",
                    format!(
                        "Timed out after {} s waiting for the mutex of {env}/{scope} ({}), held by pid {}.",
                        bound.as_secs_f64(),
                        path.display(),
                        owner_pid.map_or_else(|| "?".to_owned(), |p| p.to_string())
                    ),
                )
                .with("environment", env)
                .with("scope", scope)
                .with("path", path.display().to_string())
                .with("holderPid", owner_pid));
            }
            let base = f64::from((2 + spins).min(25));
            spins += 1;
            let jitter = 0.5 + crate::random::unit()?;
            std::thread::sleep(Duration::from_micros((base * jitter * 1000.0) as u64));
        }
    }
}

impl Drop for CellMutex {
    fn drop(&mut self) {
        *self.held.stop.lock().unwrap_or_else(PoisonError::into_inner) = true;
        self.held.wake.notify_all();
        if let Some(t) = self.refresher.take() {
            let _ = t.join();
        }
        let ours = self.held.content.lock().unwrap_or_else(PoisonError::into_inner);
        if std::fs::read_to_string(&self.path).is_ok_and(|c| c == *ours) {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// Rewrites `at` of our mutex every `every` until released, if the file still holds our content.
fn refresh_loop(held: &Held, path: &Path, tmp: &Path, every: Duration) {
    let mut stop = held.stop.lock().unwrap_or_else(PoisonError::into_inner);
    loop {
        // Checked before waiting too: a release may come before this thread first waits.
        if *stop {
            return;
        }
        let (guard, _) = held.wake.wait_timeout(stop, every).unwrap_or_else(PoisonError::into_inner);
        stop = guard;
        if *stop {
            return;
        }
        let mut ours = held.content.lock().unwrap_or_else(PoisonError::into_inner);
        if !std::fs::read_to_string(path).is_ok_and(|c| c == *ours) {
            return; // not ours any more: nothing to keep fresh
        }
        let Ok(mut v) = serde_json::from_str::<Value>(&ours) else { return };
        v["at"] = crate::clock::now_ms().into();
        let fresh = format!("{v}\n");
        let _ = std::fs::remove_file(tmp);
        if write_new(tmp, &fresh).and_then(|()| std::fs::rename(tmp, path)).is_ok() {
            *ours = fresh;
        } else {
            let _ = std::fs::remove_file(tmp);
        }
    }
}

/// The core's verdict on mutex (or claim) content `text`, from the facts about the pid it names.
fn judge(core: &mut CoreComponent, text: &str) -> Result<ws::MutexJudgement, HostError> {
    let pid = serde_json::from_str::<Value>(text)
        .ok()
        .and_then(|v| v.get("pid").and_then(Value::as_u64))
        .and_then(|p| u32::try_from(p).ok())
        .filter(|p| *p > 0);
    let owner = pid.map(|p| ws::OwnerFacts { pid: u64::from(p), stat: read_stat(p), alive: process_alive(p) });
    core.mutex_verdict(text, &hostname(), Path::new("/proc/self/stat").exists(), owner.as_ref())
}

/// Removes `target` only if it still holds `judged` (judged stale in `verdict`), and only as the one
/// breaker that created the claim the verdict names; a claim left by a breaker that died is broken the
/// same way, up to [`MAX_CLAIM_DEPTH`]. A live breaker's claim means someone else is at it: return.
fn break_stale(
    core: &mut CoreComponent,
    target: &Path,
    judged: &str,
    verdict: &ws::MutexJudgement,
    tmp: &Path,
    depth: u32,
) -> Result<(), HostError> {
    let Some(claim) = Some(&verdict.claim).filter(|c| !c.contains('/')).map(|c| target.with_file_name(c)) else {
        return Err(HostError::internal(format!("mutex-verdict answered the claim {:?}", verdict.claim)));
    };
    match std::fs::hard_link(tmp, &claim) {
        Ok(()) => {
            if std::fs::read_to_string(target).is_ok_and(|c| c == judged) {
                let _ = std::fs::remove_file(target);
            }
            let mine = std::fs::read_to_string(tmp).ok();
            if mine.is_some() && std::fs::read_to_string(&claim).ok() == mine {
                let _ = std::fs::remove_file(&claim);
            }
            Ok(())
        }
        Err(e) if e.kind() == ErrorKind::AlreadyExists => {
            let Ok(other) = std::fs::read_to_string(&claim) else { return Ok(()) };
            let theirs = judge(core, &other)?;
            if theirs.verdict != ws::Verdict::Live && depth < MAX_CLAIM_DEPTH {
                break_stale(core, &claim, &other, &theirs, tmp, depth + 1)?;
            }
            Ok(())
        }
        Err(e) => Err(HostError::io(format!("cannot create {}", claim.display()), &e)),
    }
}

/// Creates `path` (owner only) holding `text`; fails if it exists.
fn write_new(path: &Path, text: &str) -> std::io::Result<()> {
    let mut f = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(path)?;
    std::io::Write::write_all(&mut f, text.as_bytes())
}

/// The text of `/proc/<pid>/stat`, if it exists.
fn read_stat(pid: u32) -> Option<String> {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()
}

/// Whether `kill(pid, 0)` says the process exists (anything but `ESRCH`).
pub fn process_alive(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return false;
    };
    if pid <= 0 {
        return false;
    }
    #[allow(unsafe_code)]
    // SAFETY: kill with signal 0 only checks whether the process exists; it sends nothing.
    let rc = unsafe { libc::kill(pid, 0) };
    rc == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_owned())
        .or_else(|_| std::env::var("HOSTNAME"))
        .unwrap_or_default()
}
