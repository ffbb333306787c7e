//! Test-only store faults and the dir store's journal, for the torture harness (`torture/`) and the fault
//! tests: a wrapper store compiled only with the cargo feature `test-faults` (`cargo build --release
//! --features test-faults`). A build without the feature has none of this code and reads none of these
//! variables. Each is off unless its variable is set, and none changes what the store under the wrapper
//! decides or commits:
//!
//! - `BATON_TEST_STORE_DELAY_MS=N`: every dir store transaction sleeps a random 0..=N ms while it holds the
//!   cell mutex, between deciding and committing (a slow store).
//! - `BATON_TEST_LOST_REPLY=P` (0 to 1): after a transaction committed, the host reports an error with
//!   probability P, as if the store's reply had been lost on the way back (the write happened; the caller
//!   does not know).
//! - `BATON_TEST_JOURNAL=FILE` (created 0600): every committed dir store transaction appends one JSON line to
//!   FILE with the cell's state files after the commit, while the cell mutex is still held, so the journal of
//!   a cell is its history in commit order (`{"cell":"env/dir","pid":..,"atMs":..,"files":{"lock.json":..}}`).
//!   A writer killed between its commit and its line leaves a gap: the next transaction on the cell sees
//!   that the state it loaded is not the last one journaled (kept in the cell's `.journal-last`) and first
//!   journals what it loaded, marked `"gap": true` (the state that commit left, so no state is missing).
//! - `BATON_TEST_UNSAFE_NO_MUTEX=1`: the dir store's decisions are made on a snapshot read before the cell
//!   mutex was taken, so the mutex protects nothing (two writers decide on the same state and both commit).
//!   This breaks the store on purpose: the harness's negative control (`torture.mjs --sabotage`) must then
//!   find violations.
//! - `BATON_TEST_FAULT_LOG=FILE`: each injected lost reply appends a line `lost-reply <pid> <holder>` to FILE
//!   (the holder of the lock in the lost answer, or `-`).
//!
//! The Node package's test support reads the same variables (`host-node/test-support/faults.cjs`).

use super::dir::DirStore;
use crate::engine::CoreComponent;
use crate::error::HostError;
use serde_json::{Map, Value, json};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The faults a process was started with (`BATON_TEST_*`). A store with faults is `Store::Faulty`, which
/// calls [`Self::transact_dir`] for a dir store and [`Self::reply`] after every transaction.
#[derive(Clone, Debug, Default)]
pub struct Faults {
    delay_ms: u64,
    lost_reply: f64,
    journal: Option<PathBuf>,
    no_mutex: bool,
    fault_log: Option<PathBuf>,
}

impl Faults {
    /// The faults of the environment, or `None` when no `BATON_TEST_*` fault is set.
    pub fn from_env() -> Option<Self> {
        let path = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from);
        let faults = Self {
            delay_ms: std::env::var("BATON_TEST_STORE_DELAY_MS").ok().and_then(|v| v.trim().parse().ok()).unwrap_or(0),
            lost_reply: std::env::var("BATON_TEST_LOST_REPLY")
                .ok()
                .and_then(|v| v.trim().parse::<f64>().ok())
                .filter(|p| (0.0..=1.0).contains(p))
                .unwrap_or(0.0),
            journal: path("BATON_TEST_JOURNAL"),
            no_mutex: std::env::var("BATON_TEST_UNSAFE_NO_MUTEX").is_ok_and(|v| v == "1"),
            fault_log: path("BATON_TEST_FAULT_LOG"),
        };
        let any = faults.delay_ms > 0 || faults.lost_reply > 0.0 || faults.journal.is_some() || faults.no_mutex;
        any.then_some(faults)
    }
}

/// A uniform random number in `0..n` (`n > 0`), from the OS. Panics without one: only the harness runs this.
fn below(n: u64) -> u64 {
    let unit = crate::random::unit().unwrap_or_else(|e| panic!("{e}"));
    ((unit * n as f64) as u64).min(n - 1)
}

/// Appends `line` to `path` (created 0600) in one write.
fn append(path: &Path, line: &str) -> std::io::Result<()> {
    std::fs::OpenOptions::new().create(true).append(true).mode(0o600).open(path)?.write_all(line.as_bytes())
}

impl Faults {
    /// [`DirStore::transact`] with the journal, the slow store and the sabotaged mutex inside it.
    pub fn transact_dir(
        &self,
        store: &DirStore,
        core: &mut CoreComponent,
        env: &str,
        scope: &str,
        mut decide: impl FnMut(&mut CoreComponent, Value, i64) -> Result<Value, HostError>,
    ) -> Result<Value, HostError> {
        let dir = store.cell_dir(core, env, scope)?;
        let label = dir.strip_prefix(store.root()).unwrap_or(&dir).display().to_string();
        let names = core.cell_files()?;
        // The sabotage: every decision is made on what the cell held before the mutex was taken.
        let stale = if self.no_mutex { Some(store.read(core, env, scope, |_, cell, _| Ok(cell))?) } else { None };
        let journaling = self.journal.is_some();
        store.transact_observed(
            core,
            env,
            scope,
            |core, cell, now| {
                if journaling {
                    let loaded = cell["files"].as_object().cloned().unwrap_or_default();
                    self.journal_loaded(&label, &dir, &loaded, &names);
                }
                let answer = decide(core, stale.clone().unwrap_or(cell), now);
                self.slow_store();
                answer
            },
            |dir, _| {
                if journaling {
                    self.journal_committed(&label, dir, &names);
                }
            },
        )
    }

    /// Sleeps a random part of the configured delay (a slow store). Called holding the cell mutex.
    fn slow_store(&self) {
        if self.delay_ms > 0 {
            std::thread::sleep(Duration::from_millis(below(self.delay_ms + 1)));
        }
    }

    /// Turns a committed transaction's answer into a lost reply, with the configured probability.
    pub fn reply(&self, answer: Result<Value, HostError>) -> Result<Value, HostError> {
        let p = self.lost_reply;
        let committed =
            answer.as_ref().is_ok_and(|a| a.get("changes").and_then(Value::as_array).is_some_and(|c| !c.is_empty()));
        if !committed || p <= 0.0 || (below(1_000_000) as f64) >= p * 1_000_000.0 {
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
    /// died between its commit and its journal line). Called holding the mutex, before deciding.
    fn journal_loaded(&self, cell: &str, dir: &Path, loaded: &Map<String, Value>, names: &[String]) {
        let files: Map<String, Value> =
            names.iter().map(|n| (n.clone(), loaded.get(n).cloned().unwrap_or(Value::Null))).collect();
        let last = std::fs::read(dir.join(".journal-last")).ok().and_then(|b| serde_json::from_slice::<Value>(&b).ok());
        let empty = files.values().all(Value::is_null);
        if last.as_ref() != Some(&Value::Object(files.clone())) && !(last.is_none() && empty) {
            self.write_line(cell, dir, files, true);
        }
    }

    /// Appends the cell's state after a commit to the journal. Called after the commit, holding the mutex.
    fn journal_committed(&self, cell: &str, dir: &Path, names: &[String]) {
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
        let mut line =
            json!({ "cell": cell, "pid": std::process::id(), "atMs": crate::clock::now_ms(), "files": files });
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
