//! Test-only store faults and the dir store's journal, for the torture harness (`torture/`). Each is off
//! unless its environment variable is set, and none of them changes what a store decides or commits:
//!
//! - `BATON_TEST_STORE_DELAY_MS=N`: every dir store transaction sleeps a random 0..=N ms while it holds the
//!   cell mutex, between loading the cell and committing (a slow store).
//! - `BATON_TEST_LOST_REPLY=P` (0 to 1): after a transaction committed, the host reports an error with
//!   probability P, as if the store's reply had been lost on the way back (the write happened; the caller
//!   does not know).
//! - `BATON_TEST_JOURNAL=FILE`: every committed dir store transaction appends one JSON line to FILE with
//!   the cell's state files after the commit, while the cell mutex is still held, so the journal of a cell
//!   is its history in commit order (`{"cell":"env/dir","pid":..,"atMs":..,"files":{"lock.json":..}}`).
//! - `BATON_TEST_UNSAFE_NO_MUTEX=1`: the dir store skips its cell mutex. This breaks the store on purpose:
//!   the harness's negative control (`torture.mjs --sabotage`) must then find violations.
//! - `BATON_TEST_FAULT_LOG=FILE`: each injected lost reply appends a line `lost-reply <pid>` to FILE.
//!
//! The Node package reads the same variables (`host-node/js/faults.cjs`).

use super::mutex::random_hex;
use crate::error::HostError;
use serde_json::{Map, Value, json};
use std::io::Write;
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
}

/// The faults of this process, read from the environment once.
pub fn faults() -> &'static Faults {
    static FAULTS: OnceLock<Faults> = OnceLock::new();
    FAULTS.get_or_init(|| Faults {
        delay_ms: std::env::var("BATON_TEST_STORE_DELAY_MS").ok().and_then(|v| v.trim().parse().ok()).unwrap_or(0),
        lost_reply: std::env::var("BATON_TEST_LOST_REPLY")
            .ok()
            .and_then(|v| v.trim().parse::<f64>().ok())
            .filter(|p| (0.0..=1.0).contains(p))
            .unwrap_or(0.0),
        journal: std::env::var_os("BATON_TEST_JOURNAL").filter(|v| !v.is_empty()).map(PathBuf::from),
        no_mutex: std::env::var("BATON_TEST_UNSAFE_NO_MUTEX").is_ok_and(|v| v == "1"),
    })
}

/// A uniform random number in `0..n` (`n > 0`), from the OS.
fn below(n: u64) -> u64 {
    u64::from_str_radix(&random_hex(8), 16).unwrap_or(0) % n
}

impl Faults {
    /// Whether the dir store must skip its cell mutex (the sabotage that the harness must catch).
    pub fn unsafe_no_mutex(&self) -> bool {
        self.no_mutex
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
        if committed && self.lost_reply > 0.0 && (below(1_000_000) as f64) < self.lost_reply * 1_000_000.0 {
            self.log_fault("lost-reply");
            return Err(HostError::internal(
                "the store's reply was lost after it committed (test fault BATON_TEST_LOST_REPLY); retry the operation",
            )
            .with("testFault", "lost-reply"));
        }
        answer
    }

    /// Notes an injected fault in `BATON_TEST_FAULT_LOG`, if set (one line: the fault and the pid).
    fn log_fault(&self, fault: &str) {
        if let Some(path) = std::env::var_os("BATON_TEST_FAULT_LOG").filter(|v| !v.is_empty()) {
            let line = format!("{fault} {}\n", std::process::id());
            let _ = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .and_then(|mut f| f.write_all(line.as_bytes()));
        }
    }

    /// Appends the cell's state after a commit to the journal. Call after the commit, holding the mutex.
    pub fn journal(&self, cell: &str, dir: &Path, files: &[String]) -> Result<(), HostError> {
        let Some(path) = &self.journal else { return Ok(()) };
        let mut state = Map::new();
        for name in files {
            let text = std::fs::read(dir.join(name)).ok().map(|b| String::from_utf8_lossy(&b).into_owned());
            state.insert(name.clone(), text.map_or(Value::Null, Value::from));
        }
        let line = json!({ "cell": cell, "pid": std::process::id(), "atMs": super::dir::now_ms(), "files": state });
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|e| HostError::io(format!("cannot open the journal {}", path.display()), &e))?;
        f.write_all(format!("{line}\n").as_bytes())
            .map_err(|e| HostError::io(format!("cannot append to the journal {}", path.display()), &e))
    }
}
