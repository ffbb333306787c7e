//! What the run machine asks of its host, and what the host tells it.

use crate::lease::LeaseEvent;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// A cell other than the run's own (the predecessor's, for the handover).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CellRef {
    /// Environment.
    pub env: String,
    /// Scope.
    pub scope: String,
}

/// A signal for the work (the command's process group; in Node, the lease's `AbortSignal`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum WorkSignal {
    /// SIGINT: forwarded as it came.
    Interrupt,
    /// SIGTERM: stop now, cleanly.
    Terminate,
    /// SIGKILL of the whole group. A host that cannot kill its work (Node's callback) reports it ended.
    Kill,
}

/// A cancel signal the host process received.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum HostSignal {
    /// SIGINT.
    Interrupt,
    /// SIGTERM.
    Terminate,
}

impl HostSignal {
    /// The POSIX signal number (2, 15): the exit code of a cancelled run is 128 plus it.
    pub const fn number(self) -> u8 {
        match self {
            Self::Interrupt => 2,
            Self::Terminate => 15,
        }
    }

    /// The signal's name.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Interrupt => "SIGINT",
            Self::Terminate => "SIGTERM",
        }
    }
}

/// How the work ended, as the host saw it.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum WorkEnd {
    /// It exited with `code` (a Node callback: 0 when it resolved, 1 when it threw).
    Exited {
        /// The exit code.
        code: i32,
    },
    /// A signal ended it (after [`WorkSignal::Kill`] a host that cannot kill reports 9).
    Signalled {
        /// The signal number.
        signal: i32,
    },
    /// It could not be started at all (the shell's 127).
    NotStarted {
        /// Why, for people (e.g. "cannot start `deploy.sh`: No such file or directory").
        message: String,
    },
}

impl WorkEnd {
    /// The exit code to report: the code, 128 + signal, or 127.
    pub fn exit_code(&self) -> i32 {
        match self {
            Self::Exited { code } => *code,
            Self::Signalled { signal } => 128 + signal,
            Self::NotStarted { .. } => 127,
        }
    }
}

/// What the host must do next. Drain [`super::RunMachine::poll_action`] after every call.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum RunAction {
    /// One cell transaction on `cell` (the run's own cell when `null`): load it, call core operation `op`
    /// with `request` plus `cell` and `nowMs`, commit the changes, report `{"ok": answer}` or
    /// `{"error": {...}}` with `id`.
    Store {
        /// Correlates the result.
        id: u64,
        /// The cell; `None` for the run's own.
        #[serde(skip_serializing_if = "Option::is_none")]
        cell: Option<CellRef>,
        /// The core operation.
        op: &'static str,
        /// The request without `cell` and `nowMs`.
        request: Value,
        /// The instant (host monotonic ms) by which the host gives up on it: it kills what still runs and
        /// reports the store's failure (`STORE_CONTENDED`). The store budget, bounded by the lease.
        #[serde(rename = "deadlineMs")]
        deadline_ms: u64,
    },
    /// A read-only transaction: load `cell` without creating or writing anything (a cell that does not
    /// exist is empty), call `op` with `request` plus `cell` and `nowMs`, report the answer with `id`.
    Read {
        /// Correlates the result.
        id: u64,
        /// The cell.
        cell: CellRef,
        /// The core operation.
        op: &'static str,
        /// The request without `cell` and `nowMs`.
        request: Value,
        /// As for `store`.
        #[serde(rename = "deadlineMs")]
        deadline_ms: u64,
    },
    /// Start the work (spawn the command in a process group of its own; call the callback) with these
    /// variables exported, and report [`super::RunMachine::work_ended`] when it ends.
    StartWork {
        /// `BATON_ENV`, `BATON_SCOPE`, `BATON_HOLDER`, `BATON_EPOCH` (the host adds `BATON_STORE`).
        env: BTreeMap<String, String>,
        /// The epoch the work's fenced writes use.
        epoch: u64,
        /// For a destroy: what to delete, newest first (the command gets it as JSON on stdin).
        #[serde(skip_serializing_if = "Option::is_none")]
        delete: Option<Vec<Value>>,
        /// How to name what is locked, for the host's "running ..." line.
        label: String,
    },
    /// Send the work a signal.
    Signal {
        /// Which.
        signal: WorkSignal,
    },
    /// A progress line for people (stderr).
    Note {
        /// The line.
        text: String,
    },
    /// A warning for people (stderr); also listed in the verdict's `warnings`.
    Warning {
        /// The line.
        text: String,
    },
    /// A lease event, for hosts that report them to their callers (`onEvent`, `onWait`).
    Lease {
        /// The event.
        event: LeaseEvent,
    },
    /// The final receipt landed (and the handover ran) after [`super::RunMachine::finish`]: the lease is
    /// still held until [`super::RunMachine::release`].
    Finished {
        /// The run-finish facts: `status`, `unresolved`, `receipt`, `handedOver`, `warnings`.
        outcome: Map<String, Value>,
    },
    /// The run is over (the lease released, or never taken). Nothing else follows.
    Done {
        /// What to report.
        verdict: Verdict,
    },
}

/// The outcome of a run: the exit code, and either the envelope's data (`error` is `None`) or the error,
/// with `fields` added to its details.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Verdict {
    /// The process exit code: 0, the code's exit (1, 2, 3), the command's own code, 127, or 128 + signal.
    pub exit: u8,
    /// Whether the run succeeded (`exit == 0`).
    pub ok: bool,
    /// The error (`{code, message, hint?, ...details}`), when not ok.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<Value>,
    /// The run's facts: `context`, `holder`, `lock`, `preempted`, `exitCode`, `released`, `receipt`,
    /// `warnings` (for an acquire: `lock`, `preempted`, `holder`).
    pub fields: Map<String, Value>,
}
