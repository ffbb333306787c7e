//! The per-cell mutex of the dir store (`lock.mutex`), exactly as `docs/dir-store.md` specifies, so the
//! Node package and this binary exclude each other on the same files.
//!
//! Taken by `link(2)` of a fully written temp file; names its owner by pid and process start time; broken
//! only when that process no longer exists, never by age alone (a paused owner is still alive).

use crate::error::HostError;
use serde_json::{Value, json};
use std::io::ErrorKind;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// A held cell mutex; released on drop if its content is still ours.
pub struct CellMutex {
    path: PathBuf,
    content: String,
}

impl CellMutex {
    /// Takes the mutex at `path` (the cell's `lock.mutex`), waiting up to `bound` while a live process
    /// holds it (then `STORE_CONTENDED`). `env/scope` names the cell in the timeout error.
    pub fn take(path: &Path, env: &str, scope: &str, bound: Duration) -> Result<Self, HostError> {
        let token = random_hex(8);
        let pid = std::process::id();
        let content =
            format!("{}\n", json!({ "pid": pid, "start": process_start(pid), "host": hostname(), "token": token }));
        let tmp = path.with_file_name(format!("lock.mutex.{pid}.{token}.tmp"));
        let written = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)
            .and_then(|mut f| std::io::Write::write_all(&mut f, content.as_bytes()));
        written.map_err(|e| HostError::io(format!("cannot write {}", tmp.display()), &e))?;
        let started = Instant::now();
        let mut spins = 0u32;
        let result = loop {
            match std::fs::hard_link(&tmp, path) {
                Ok(()) => {
                    break Ok(Self { path: path.to_owned(), content: content.clone() });
                }
                Err(e) if e.kind() == ErrorKind::AlreadyExists => {}
                Err(e) => {
                    break Err(HostError::io(format!("cannot create {}", path.display()), &e));
                }
            }
            let holder = match std::fs::read_to_string(path) {
                Err(e) if e.kind() == ErrorKind::NotFound => continue,
                Err(e) => break Err(HostError::io(format!("cannot read {}", path.display()), &e)),
                Ok(text) => text,
            };
            let parsed: Option<Value> = serde_json::from_str(&holder).ok();
            let owner_pid = parsed.as_ref().and_then(|v| v.get("pid")).and_then(Value::as_u64);
            if owner_gone(parsed.as_ref()) {
                break_mutex(path, &holder, &token);
                continue;
            }
            if started.elapsed() >= bound {
                break Err(HostError::new(
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
                .with("holderPid", owner_pid.map_or(Value::Null, Value::from)));
            }
            let base = f64::from((2 + spins).min(25));
            spins += 1;
            let jitter = 0.5 + f64::from(random_u32() % 1000) / 1000.0;
            std::thread::sleep(Duration::from_micros((base * jitter * 1000.0) as u64));
        };
        let _ = std::fs::remove_file(&tmp);
        result
    }
}

impl Drop for CellMutex {
    fn drop(&mut self) {
        if std::fs::read_to_string(&self.path).is_ok_and(|c| c == self.content) {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// Whether the mutex owner described by `content` no longer exists (see the protocol).
fn owner_gone(content: Option<&Value>) -> bool {
    let Some(v) = content else { return true };
    let Some(pid) = v.get("pid").and_then(Value::as_u64).and_then(|p| u32::try_from(p).ok()).filter(|p| *p > 0) else {
        return true;
    };
    if v.get("host").and_then(Value::as_str).is_some_and(|h| h != hostname()) {
        return false;
    }
    match v.get("start").and_then(Value::as_str) {
        Some(start) if Path::new("/proc/self/stat").exists() => process_start(pid).as_deref() != Some(start),
        _ => !process_alive(pid),
    }
}

fn break_mutex(path: &Path, judged: &str, token: &str) {
    let tomb = path.with_file_name(format!("lock.mutex.{token}.tomb"));
    if std::fs::rename(path, &tomb).is_err() {
        return;
    }
    if std::fs::read_to_string(&tomb).is_ok_and(|c| c != judged) {
        let _ = std::fs::hard_link(&tomb, path);
    }
    let _ = std::fs::remove_file(&tomb);
}

/// Field 22 of `/proc/<pid>/stat` (start time in clock ticks since boot), or `None` without `/proc` and for
/// a process that has exited: a zombie (state `Z` or `X`), which stays listed until its parent reaps it, and
/// forever where PID 1 does not reap orphans (many containers), holds nothing any more.
fn process_start(pid: u32) -> Option<String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after_comm = &stat[stat.rfind(')')? + 1..];
    // Fields after the comm start at field 3 (the state); field 22 is the 20th of them.
    let mut fields = after_comm.split_whitespace();
    if matches!(fields.next(), Some("Z" | "X")) {
        return None;
    }
    fields.nth(18).map(str::to_owned)
}

fn process_alive(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return false;
    };
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

/// `n` random bytes from the OS as hex (falls back to time and pid where /dev/urandom is missing).
pub fn random_hex(n: usize) -> String {
    let mut buf = vec![0u8; n];
    let ok = std::fs::File::open("/dev/urandom").and_then(|mut f| std::io::Read::read_exact(&mut f, &mut buf)).is_ok();
    if !ok {
        let seed = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
        for (i, b) in buf.iter_mut().enumerate() {
            *b = (seed >> ((i % 16) * 8)) as u8 ^ (std::process::id() as u8).wrapping_mul(i as u8 + 1);
        }
    }
    buf.iter().map(|b| format!("{b:02x}")).collect()
}

fn random_u32() -> u32 {
    u32::from_str_radix(&random_hex(4), 16).unwrap_or(7)
}
