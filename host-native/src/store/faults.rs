//! Test-only store faults and the dir store's journal, for the torture harness (`torture/`). Debug builds
//! only (a release build reads none of these variables); each is off unless its variable is set, and none
//! changes what a store decides or commits:
//!
//! - `BATON_TEST_STORE_DELAY_MS=N`: every dir store transaction sleeps a random 0..=N ms while it holds the
//!   cell mutex, between loading the cell and committing (a slow store).
//! - `BATON_TEST_LOST_REPLY=P` (0 to 1): after a transaction committed, the host reports an error with
//!   probability P, as if the store's reply had been lost on the way back (the write happened; the caller
//!   does not know).
//! - `BATON_TEST_JOURNAL=FILE` (created 0600): every committed dir store transaction appends one JSON line to
//!   FILE with the cell's state files after the commit, while the cell mutex is still held, so the journal of
//!   a cell is its history in commit order (`{"cell":"env/dir","pid":..,"atMs":..,"files":{"lock.json":..}}`).
//!   A writer killed between its commit and its line leaves a gap: the next transaction on the cell sees
//!   that the state it loaded is not the last one journaled (kept in the cell's `.journal-last`) and first
//!   journals what it loaded, marked `"gap": true` (the state that commit left, so no state is missing).
//! - `BATON_TEST_UNSAFE_NO_MUTEX=1`: the dir store skips its cell mutex. This breaks the store on purpose:
//!   the harness's negative control (`torture.mjs --sabotage`) must then find violations.
//! - `BATON_TEST_FAULT_LOG=FILE`: each injected lost reply appends a line `lost-reply <pid> <holder>` to FILE
//!   (the holder of the lock in the lost answer, or `-`).
//!
//! The Node package reads the same variables (`host-node/js/faults.cjs`).

use super::mutex::random_hex;
use crate::error::HostError;
use serde_json::{Map, Value, json};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

/// The faults this process was started with.
#[derive(Debug, Default)]
pub struct Faults {
    delay_ms: u64,
    lost_reply: f64,
    journal: Option<PathBuf>,
    no_mutex: bool,
    fault_log: Option<PathBuf>,
}

/// The faults of this process, read from the environment once (none in a release build).
pub fn faults() -> &'static Faults {
    static FAULTS: OnceLock<Faults> = OnceLock::new();
    FAULTS.get_or_init(|| if cfg!(debug_assertions) { from_env() } else { Faults::default() })
}

fn from_env() -> Faults {
    let path = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    Faults {
        delay_ms: std::env::var("BATON_TEST_STORE_DELAY_MS").ok().and_then(|v| v.trim().parse().ok()).unwrap_or(0),
        lost_reply: std::env::var("BATON_TEST_LOST_REPLY")
            .ok()
            .and_then(|v| v.trim().parse::<f64>().ok())
            .filter(|p| (0.0..=1.0).contains(p))
            .unwrap_or(0.0),
        journal: path("BATON_TEST_JOURNAL"),
        no_mutex: std::env::var("BATON_TEST_UNSAFE_NO_MUTEX").is_ok_and(|v| v == "1"),
        fault_log: path("BATON_TEST_FAULT_LOG"),
    }
}

/// A uniform random number in `0..n` (`n > 0`), from the OS.
fn below(n: u64) -> u64 {
    u64::from_str_radix(&random_hex(8), 16).unwrap_or(0) % n
}

/// Appends `line` to `path` (created 0600) in one write.
fn append(path: &Path, line: &str) -> std::io::Result<()> {
    std::fs::OpenOptions::new().create(true).append(true).mode(0o600).open(path)?.write_all(line.as_bytes())
}

impl Faults {
    /// Whether the dir store must skip its cell mutex (the sabotage that the harness must catch).
    pub fn unsafe_no_mutex(&self) -> bool {
        self.no_mutex
    }

    /// Whether commits are journaled (`BATON_TEST_JOURNAL`).
    pub fn journaling(&self) -> bool {
        self.journal.is_some()
    }

    /// Sleeps a random part of the configured delay (a slow store). Call while holding the cell mutex.
    pub fn slow_store(&self) {
        if self.delay_ms > 0 {
            std::thread::sleep(Duration::from_millis(below(self.delay_ms + 1)));
        }
    }

    /// Turns a committed transaction's answer into a lost reply, with the configured probability.
    pub fn reply(&self, answer: Result<Value, HostError>) -> Result<Value, HostError> {
        let committed =
            answer.as_ref().is_ok_and(|a| a.get("changes").and_then(Value::as_array).is_some_and(|c| !c.is_empty()));
        if !committed || self.lost_reply <= 0.0 || (below(1_000_000) as f64) >= self.lost_reply * 1_000_000.0 {
            return answer;
        }
        if let (Some(log), Ok(a)) = (&self.fault_log, &answer) {
            let holder = a["lock"]["holder"].as_str().unwrap_or("-");
            let _ = append(log, &format!("lost-reply {} {holder}\n", std::process::id()));
        }
        Err(HostError::internal(
            "the store's reply was lost after it committed (test fault BATON_TEST_LOST_REPLY); retry the operation",
        )
        .with("testFault", "lost-reply"))
    }

    /// Journals the state a transaction loaded if it is not the last state journaled for the cell (a writer
    /// died between its commit and its journal line). Call holding the mutex, before deciding.
    pub fn journal_loaded(&self, cell: &str, dir: &Path, loaded: &Map<String, Value>, names: &[String]) {
        let files: Map<String, Value> =
            names.iter().map(|n| (n.clone(), loaded.get(n).cloned().unwrap_or(Value::Null))).collect();
        let last = std::fs::read(dir.join(".journal-last")).ok().and_then(|b| serde_json::from_slice::<Value>(&b).ok());
        let empty = files.values().all(Value::is_null);
        if last.as_ref() != Some(&Value::Object(files.clone())) && !(last.is_none() && empty) {
            self.write_line(cell, dir, files, true);
        }
    }

    /// Appends the cell's state after a commit to the journal. Call after the commit, holding the mutex.
    pub fn journal_committed(&self, cell: &str, dir: &Path, names: &[String]) {
        let files: Map<String, Value> = names
            .iter()
            .map(|n| {
                let text = std::fs::read(dir.join(n)).ok().map(|b| String::from_utf8_lossy(&b).into_owned());
                (n.clone(), text.map_or(Value::Null, Value::from))
            })
            .collect();
        self.write_line(cell, dir, files, false);
    }

    /// One journal line, then the cell's `.journal-last`. A failure panics: a journal with a hole would make
    /// the harness report violations that did not happen, and this only runs under the harness.
    fn write_line(&self, cell: &str, dir: &Path, files: Map<String, Value>, gap: bool) {
        let Some(path) = &self.journal else { return };
        let mut line = json!({ "cell": cell, "pid": std::process::id(), "atMs": super::dir::now_ms(), "files": files });
        if gap {
            line["gap"] = json!(true);
        }
        let written = append(path, &format!("{line}\n"))
            .and_then(|()| std::fs::write(dir.join(".journal-last"), line["files"].to_string()));
        if let Err(e) = written {
            panic!("cannot write the test journal {}: {e}", path.display());
        }
    }
}
