//! The simulated world of the succession schedules: an event queue on a virtual clock, the store (every
//! request one cell transaction at its commit time, `succession_store.rs`) and the hosts that carry out
//! each `RunMachine`'s actions, one loop each. The commands are in `succession_command.rs`, the checks on
//! what lands in `succession_checks.rs`.

use super::rng::Rng;
use super::succession::{
    ALL_CELLS, BRANCH, CELLS, CLAIM0, Counters, ENV, HOST, LATEST, LIVE, MAX_KEYS, PR7, SCOPES, Sabotage,
    SuccessionPlan, WALL0, cell_name,
};
use super::succession_checks::{ADOPTED, NONE, encode, key_of, ledger_str};
use super::succession_command::{ChangeState, Outcome, Pc};
use super::world::Failure;
use baton_core::CoreError;
use baton_core::cell::{Cell, Change};
use baton_core::claims;
use baton_core::lease::{LeaseEvent, StoreResult};
use baton_core::lock;
use baton_core::ownership::{OtherScope, RunContext};
use baton_core::run::{CellRef, HostSignal, Job, RunAction, RunConfig, RunMachine, Verdict, WorkEnd, WorkSignal};
use serde_json::{Map, Value, json};
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, VecDeque};
use std::fmt;

const TRACE_LEN: usize = 300;
const TRACE_SHOWN: usize = 150;
const EVENT_LIMIT: u64 = 200_000;

/// A store operation of the adapter (the command's own `baton ledger ...` calls), or one the machine
/// asked for, as the checks name it.
#[derive(Clone, Debug)]
pub(crate) enum Op {
    Check {
        key: u8,
        change: bool,
    },
    Intend(u8),
    Record(u8),
    Forget(u8),
    /// An action of the run's ownership change machine for the key: a load (`claim-take`, `claim-facts`,
    /// `claim-free`, the fenced ledger write or check) or a listing (`load` none); `id` is the machine's.
    Change {
        key: u8,
        id: u64,
        name: &'static str,
        load: Option<baton_core::claims::Load>,
    },
    Begin,
    DestroyPlan,
    Finish,
    /// The handover, and the keys its `successorLedger` takes over (owned entries, not adopted ones).
    Handover {
        keys: Vec<u8>,
    },
}

impl Op {
    pub(crate) fn name(&self) -> &'static str {
        match self {
            Self::Check { change: true, .. } => "ledger-check change",
            Self::Check { change: false, .. } => "ledger-check rely",
            Self::Intend(_) => "ledger-intend",
            Self::Record(_) => "ledger-record",
            Self::Forget(_) => "ledger-forget",
            Self::Change { name, .. } => name,
            Self::Begin => "run-begin",
            Self::DestroyPlan => "destroy-plan",
            Self::Finish => "run-finish",
            Self::Handover { .. } => "handover",
        }
    }

    pub(crate) fn key(&self) -> Option<u8> {
        match self {
            Self::Check { key, .. }
            | Self::Intend(key)
            | Self::Record(key)
            | Self::Forget(key)
            | Self::Change { key, .. } => Some(*key),
            _ => None,
        }
    }
}

/// Which of the machine's requests: the lease's, a run step (a write), or a read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Lease,
    Step,
    Read,
}

pub(crate) enum Ev {
    Start(usize),
    Wake(usize, u64),
    Commit {
        r: usize,
        id: u64,
        cell: usize,
        op: &'static str,
        request: Value,
        kind: Kind,
    },
    Deliver {
        r: usize,
        id: u64,
        op: &'static str,
        result: StoreResult,
    },
    WorkStep(usize),
    WorkCommit {
        r: usize,
        id: u64,
        op: Op,
    },
    WorkReply {
        r: usize,
        id: u64,
        name: &'static str,
        outcome: Outcome,
    },
    /// The command exits after a stop signal.
    WorkStop(usize, i32),
    /// The host sees the command's exit.
    WorkExit(usize, WorkEnd),
    /// The host process receives a cancel signal.
    Cancel(usize, HostSignal),
    /// The machine's SIGKILL, carried out late (`Sabotage::LateKill`).
    LateKill(usize),
    PauseStart(usize, u64),
    PauseEnd(usize),
    Crash(usize),
}

/// The command's process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Work {
    NotStarted,
    Running,
    /// Signalled; exits after its stop delay.
    Stopping,
    Ended,
}

/// When the first cancel signal reached the machine: before the command started, while it ran (its exit
/// not yet reported), after it ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Moment {
    Before,
    During,
    After,
}

pub(crate) struct Run {
    pub(crate) m: RunMachine,
    pub(crate) crashed: bool,
    pub(crate) paused_until: u64,
    pub(crate) wake_at: Option<u64>,
    pub(crate) wake_gen: u64,
    /// The machine's requests in flight.
    pub(crate) inflight: BTreeMap<u64, Kind>,
    pub(crate) verdict: Option<Verdict>,
    /// The final receipt's status, once `run-finish` landed.
    pub(crate) receipt_status: Option<String>,
    /// The first cancel signal the machine got: which, when, at what point of the run.
    pub(crate) first_signal: Option<(HostSignal, u64, Moment)>,
    pub(crate) work_ended_at: Option<u64>,
    /// When the lease was first lost (or must stop) while the command ran, and the grace it was given.
    pub(crate) stop_at: Option<(u64, u64)>,
    // The adapter.
    pub(crate) work: Work,
    /// The host reported the command's exit (or is about to: the event is queued).
    pub(crate) exit_reported: bool,
    pub(crate) exit_delivered: bool,
    /// `BATON_HOLDER` and `BATON_EPOCH` as the machine exported them.
    pub(crate) fence: (String, u64),
    pub(crate) pc: Pc,
    pub(crate) awaiting: Option<u64>,
    pub(crate) step_pending: bool,
    pub(crate) list: Vec<OtherScope>,
    /// The commit sequence number at which the listing was taken (`ledger-check`'s view of other scopes).
    pub(crate) list_seq: u64,
    /// The run's own ledger as its last write answered it.
    pub(crate) view: [u8; MAX_KEYS],
    pub(crate) delete: Vec<u8>,
    pub(crate) intents_sent: u32,
    pub(crate) claims_sent: u32,
    /// The `baton ledger` call in progress (the ownership change machine).
    pub(crate) change: ChangeState,
    pub(crate) failed: bool,
}

#[derive(Clone)]
pub(crate) enum What {
    Start,
    Send(&'static str, usize),
    Commit { op: &'static str, cell: usize, result: &'static str, fault: &'static str, ledger: u16, seq: u64 },
    Reply(&'static str, &'static str),
    LeaseEvent(&'static str, u64),
    StartWork(u64),
    WorkSend(&'static str, Option<u8>),
    WorkReply(&'static str, &'static str),
    Decide(&'static str, Option<u8>),
    Signal(WorkSignal, &'static str),
    WorkExit(i32),
    HostSignal(HostSignal),
    Done(u8, String),
    Crash,
    Pause(u64),
    Thaw,
    Deferred,
}

#[derive(Clone)]
pub(crate) struct Tr {
    t: u64,
    r: usize,
    scope: usize,
    what: What,
}

impl fmt::Display for Tr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "t={:>6} run-{} ({}) ", self.t, self.r, SCOPES[self.scope])?;
        let key = |k: Option<u8>| k.map(|k| format!(" k{k}")).unwrap_or_default();
        match &self.what {
            What::Start => write!(f, "start()"),
            What::Send(op, cell) => write!(f, "machine sends {op} on {}", cell_name(*cell)),
            What::Commit { op, cell, result, fault, ledger, seq } => {
                write!(f, "store commits {op} on {}: {result}", cell_name(*cell))?;
                if *seq > 0 {
                    write!(f, " #{seq}, ledger now {}", ledger_str(*ledger))?;
                }
                if !fault.is_empty() {
                    write!(f, " [{fault}]")?;
                }
                Ok(())
            }
            What::Reply(op, result) => write!(f, "machine receives {op}: {result}"),
            What::LeaseEvent(kind, epoch) if *epoch > 0 => write!(f, "lease event {kind} (epoch {epoch})"),
            What::LeaseEvent(kind, _) => write!(f, "lease event {kind}"),
            What::StartWork(epoch) => write!(f, "start-work: the command starts (epoch {epoch})"),
            What::WorkSend(op, k) => write!(f, "command sends {op}{}", key(*k)),
            What::WorkReply(op, result) => write!(f, "command receives {op}: {result}"),
            What::Decide(what, k) => write!(f, "command {what}{}", key(*k)),
            What::Signal(sig, effect) => write!(f, "machine signals the command {sig:?}: {effect}"),
            What::WorkExit(code) => write!(f, "the command exits ({code})"),
            What::HostSignal(sig) => write!(f, "the host receives {}", sig.name()),
            What::Done(exit, code) => write!(f, "done: exit {exit} {code}"),
            What::Crash => write!(f, "CRASHES (the machine is dropped, the command dies)"),
            What::Pause(until) => write!(f, "freezes until t={until}"),
            What::Thaw => write!(f, "thaws"),
            What::Deferred => write!(f, "(frozen: event deferred)"),
        }
    }
}

pub(crate) struct World<'p> {
    pub(crate) plan: &'p SuccessionPlan,
    pub(crate) rng: Rng,
    pub(crate) now: u64,
    pub(crate) seq: u64,
    pub(crate) heap: BinaryHeap<Reverse<(u64, u64)>>,
    pub(crate) slab: Vec<Option<Ev>>,
    /// The scope cells ([`CELLS`]), then one claim cell per key (`CLAIM0 + k`).
    pub(crate) cells: Vec<Cell>,
    /// Per key: the scope its claim names (`None`: no claim), and whether that claim lags: its scope's
    /// ledger stopped listing the key (handover, forget) and the claim was not written since.
    pub(crate) claim_of: [Option<usize>; MAX_KEYS],
    pub(crate) lagging: [bool; MAX_KEYS],
    pub(crate) runs: Vec<Run>,
    /// Commit sequence number of the last receipt write (any cell).
    pub(crate) commits: u64,
    /// Per scope and key: the entry kind, since when (commit number) it has been listed as owned, and
    /// which scopes it was allowed to share it with when that began (bit per scope).
    pub(crate) kinds: [[u8; MAX_KEYS]; 3],
    pub(crate) since: [[u64; MAX_KEYS]; 3],
    pub(crate) excuse: [[u8; MAX_KEYS]; 3],
    /// Per scope and key: the entry is a copy inherited from the branch (`inheritedFrom`).
    pub(crate) copies: [[bool; MAX_KEYS]; 3],
    /// Per scope and key: its last create/intent/record (commit number).
    pub(crate) claimed_by: [[u64; MAX_KEYS]; 3],
    /// Per key: whether the resource exists at the provider (an upsert: created before `ledger-record`,
    /// deleted before `ledger-forget`).
    pub(crate) exists: [bool; MAX_KEYS],
    /// Per key: the resource that exists was created by an adapter whose lease had ended (a frozen process
    /// that thawed before the host could kill it). Such a provider call is not fenced by anything.
    pub(crate) zombie: [bool; MAX_KEYS],
    /// Per key: left without an owner by a handover of an adopted entry (counted when not strict).
    pub(crate) disowned: [bool; MAX_KEYS],
    pub(crate) trace: VecDeque<Tr>,
    pub(crate) c: Counters,
}

fn context(scope: usize) -> RunContext {
    let (branch, pr) = match scope {
        BRANCH => ("feat/x", None),
        PR7 => ("feat/x", Some(7)),
        _ => ("feat/y", Some(8)),
    };
    RunContext { env: ENV.into(), scope: SCOPES[scope].into(), branch: Some(branch.into()), sha: None, pr }
}

fn err_map(code: &str, message: &str) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("code".into(), code.into());
    m.insert("message".into(), message.into());
    m
}

fn code_of(e: &Map<String, Value>) -> &'static str {
    let code = e.get("code").and_then(Value::as_str).unwrap_or("?");
    baton_core::ErrorCode::parse(code).map_or("?", |c| c.as_str())
}

impl<'p> World<'p> {
    pub(crate) fn new(plan: &'p SuccessionPlan) -> Result<Self, Failure> {
        let mut w = World {
            plan,
            rng: Rng::new(plan.seed, 22),
            now: 0,
            seq: 0,
            heap: BinaryHeap::new(),
            slab: Vec::new(),
            cells: (0..ALL_CELLS)
                .map(|c| match CELLS.get(c) {
                    Some(s) => Cell { env: ENV.into(), scope: (*s).into(), ..Cell::default() },
                    None => {
                        let key = super::succession_command::resource((c - CLAIM0) as u8);
                        let (env, scope) = claims::claim_cell(ENV, &key.adapter, &key.provider, &key.key);
                        Cell { env, scope, ..Cell::default() }
                    }
                })
                .collect(),
            claim_of: [None; MAX_KEYS],
            lagging: [false; MAX_KEYS],
            runs: Vec::with_capacity(plan.runs.len()),
            commits: 0,
            kinds: [[NONE; MAX_KEYS]; 3],
            since: [[0; MAX_KEYS]; 3],
            excuse: [[0; MAX_KEYS]; 3],
            copies: [[false; MAX_KEYS]; 3],
            claimed_by: [[0; MAX_KEYS]; 3],
            exists: [false; MAX_KEYS],
            zombie: [false; MAX_KEYS],
            disowned: [false; MAX_KEYS],
            trace: VecDeque::with_capacity(TRACE_LEN),
            c: Counters { schedules: 1, calm_schedules: u64::from(plan.calm), ..Counters::new() },
        };
        for (i, rp) in plan.runs.iter().enumerate() {
            // The machine names the holder from the host's randomness: `run-0000000<i>`, `destroy-...`.
            let config = RunConfig {
                job: if rp.destroy { Job::Destroy } else { Job::Run },
                context: Some(context(rp.scope)),
                object: None,
                holder: None,
                random: format!("{i:08x}{:032x}", plan.seed),
                approved_by: None,
                ttl_ms: Some(plan.ttl),
                margin_ms: None,
                renew_every_ms: None,
                wait: rp.wait,
                wait_timeout_ms: Some(rp.wait_timeout),
                poll_ms: Some(rp.poll),
                cancel_grace_ms: Some(plan.cancel_grace),
                // The simulated store answers late instead of timing out: no deadline is enforced here.
                store_budget_ms: None,
            };
            let m = match RunMachine::new(config) {
                Ok(m) => m,
                Err(e) => return Err(w.fail(HOST, format!("run-{i}: the plan's run configuration is refused: {e}"))),
            };
            w.runs.push(Run {
                m,
                crashed: false,
                paused_until: 0,
                wake_at: None,
                wake_gen: 0,
                inflight: BTreeMap::new(),
                verdict: None,
                receipt_status: None,
                first_signal: None,
                work_ended_at: None,
                stop_at: None,
                work: Work::NotStarted,
                exit_reported: false,
                exit_delivered: false,
                fence: (String::new(), 0),
                pc: Pc::Idle,
                awaiting: None,
                step_pending: false,
                list: Vec::new(),
                list_seq: 0,
                view: [NONE; MAX_KEYS],
                delete: Vec::new(),
                intents_sent: 0,
                claims_sent: 0,
                change: ChangeState::default(),
                failed: false,
            });
            w.c.runs += 1;
            w.c.destroy_runs += u64::from(rp.destroy);
        }
        Ok(w)
    }

    pub(crate) fn push(&mut self, at: u64, ev: Ev) {
        self.heap.push(Reverse((at, self.seq)));
        self.slab.push(Some(ev));
        self.seq += 1;
    }

    pub(crate) fn note(&mut self, r: usize, what: What) {
        if self.trace.len() == TRACE_LEN {
            self.trace.pop_front();
        }
        let scope = self.plan.runs[r].scope;
        self.trace.push_back(Tr { t: self.now, r, scope, what });
    }

    pub(crate) fn fail(&self, invariant: &'static str, detail: String) -> Failure {
        let mut trace: Vec<String> = Vec::new();
        let skip = self.trace.len().saturating_sub(TRACE_SHOWN);
        if skip > 0 {
            trace.push(format!("({skip} earlier events not shown)"));
        }
        trace.extend(self.trace.iter().skip(skip).map(ToString::to_string));
        let scopes: Vec<String> =
            (0..3).map(|s| format!("{}: {}", SCOPES[s], ledger_str(encode(&self.kinds[s])))).collect();
        trace.push(format!("ledgers at t={}: {}", self.now, scopes.join("; ")));
        Failure { invariant, detail, trace, plan: format!("{:?}", self.plan) }
    }

    pub(crate) fn frozen(&self, r: usize) -> bool {
        self.now < self.runs[r].paused_until
    }

    pub(crate) fn mono(&self, r: usize) -> u64 {
        self.now + self.plan.runs[r].mono_off
    }

    pub(crate) fn wall(&self, r: usize) -> i64 {
        WALL0 + self.now as i64 + self.plan.runs[r].skew
    }

    pub(crate) fn run(&mut self) -> Result<(), Failure> {
        for r in 0..self.runs.len() {
            let rp = &self.plan.runs[r];
            let (start, crash, pause, cancel) = (rp.start, rp.crash_at, rp.pause, rp.cancel);
            self.push(start, Ev::Start(r));
            if let Some(at) = crash {
                self.push(at, Ev::Crash(r));
            }
            if let Some((at, dur)) = pause {
                self.push(at, Ev::PauseStart(r, dur));
            }
            if let Some(c) = cancel.filter(|c| c.before_work) {
                self.schedule_cancel(r, start + c.after);
            }
        }
        while let Some(Reverse((t, seq))) = self.heap.pop() {
            if t > self.plan.horizon {
                return Err(self.fail(LIVE, format!("events still due after the horizon t={}", self.plan.horizon)));
            }
            self.c.events += 1;
            if self.c.events > EVENT_LIMIT {
                return Err(self.fail(LIVE, format!("more than {EVENT_LIMIT} events: a host would spin")));
            }
            self.now = t;
            // INVARIANT: every seq in the heap has its event in the slab, taken exactly once.
            let ev = self.slab[seq as usize].take().expect("event taken twice");
            self.step(ev)?;
        }
        self.check_end()
    }

    /// The run's cancel signals, the first at `at`.
    pub(crate) fn schedule_cancel(&mut self, r: usize, at: u64) {
        if let Some(c) = self.plan.runs[r].cancel {
            self.push(at, Ev::Cancel(r, c.first));
            if let Some(then) = c.then {
                self.push(at + then, Ev::Cancel(r, HostSignal::Terminate));
            }
        }
    }

    pub(crate) fn defer(&mut self, r: usize, ev: Ev) {
        let until = self.runs[r].paused_until;
        self.note(r, What::Deferred);
        self.push(until, ev);
    }

    /// Whether the event for run `r` is dropped (crashed) or deferred (frozen).
    pub(crate) fn held_back(&mut self, r: usize, ev: Ev) -> Option<Ev> {
        if self.runs[r].crashed {
            return None;
        }
        if self.frozen(r) {
            self.defer(r, ev);
            return None;
        }
        Some(ev)
    }

    pub(crate) fn step(&mut self, ev: Ev) -> Result<(), Failure> {
        match ev {
            Ev::Start(r) => {
                if self.held_back(r, Ev::Start(r)).is_none() {
                    return Ok(());
                }
                self.note(r, What::Start);
                let mono = self.mono(r);
                if let Err(e) = self.runs[r].m.start(mono) {
                    return Err(self.fail(HOST, format!("run-{r}: start: {e}")));
                }
                self.after_call(r)
            }
            Ev::Wake(r, generation) => {
                let run = &mut self.runs[r];
                if generation != run.wake_gen {
                    return Ok(());
                }
                run.wake_at = None;
                if run.crashed || self.frozen(r) {
                    return Ok(());
                }
                let mono = self.mono(r);
                self.runs[r].m.handle_timeout(mono);
                self.after_call(r)
            }
            Ev::Commit { r, id, cell, op, request, kind } => self.commit(r, id, cell, op, request, kind),
            Ev::Deliver { r, id, op, result } => {
                let Some(Ev::Deliver { r, id, op, result }) = self.held_back(r, Ev::Deliver { r, id, op, result })
                else {
                    return Ok(());
                };
                if self.runs[r].inflight.remove(&id).is_none() {
                    return Err(self.fail(HOST, format!("run-{r}: a reply to #{id} that is not in flight")));
                }
                let label = match &result {
                    StoreResult::Ok(_) => "ok",
                    StoreResult::Error(e) => code_of(e),
                };
                self.note(r, What::Reply(op, label));
                let mono = self.mono(r);
                if let Err(e) = self.runs[r].m.handle_store_result(id, result, mono) {
                    return Err(self.fail(HOST, format!("run-{r}: handle_store_result(#{id}): {e}")));
                }
                self.after_call(r)
            }
            Ev::WorkStep(r) => {
                self.runs[r].step_pending = false;
                if self.runs[r].crashed || self.runs[r].work != Work::Running {
                    return Ok(());
                }
                if self.frozen(r) {
                    self.runs[r].step_pending = true;
                    self.defer(r, ev);
                    return Ok(());
                }
                self.advance(r)
            }
            Ev::WorkCommit { r, id, op } => self.work_commit(r, id, op),
            Ev::WorkReply { r, id, name, outcome } => {
                let Some(Ev::WorkReply { r, id, name, outcome }) =
                    self.held_back(r, Ev::WorkReply { r, id, name, outcome })
                else {
                    return Ok(());
                };
                if self.runs[r].awaiting != Some(id) || self.runs[r].work != Work::Running {
                    // The command was stopped or killed after it sent it.
                    return Ok(());
                }
                self.runs[r].awaiting = None;
                let label = match &outcome {
                    Ok(_) => "ok",
                    Err(code) => code,
                };
                self.note(r, What::WorkReply(name, label));
                self.on_reply(r, outcome)
            }
            Ev::WorkStop(r, signal) => {
                if self.held_back(r, Ev::WorkStop(r, signal)).is_none() {
                    return Ok(());
                }
                if self.runs[r].work == Work::Stopping {
                    self.exit_work(r, WorkEnd::Signalled { signal });
                }
                Ok(())
            }
            Ev::WorkExit(r, end) => {
                let Some(Ev::WorkExit(r, end)) = self.held_back(r, Ev::WorkExit(r, end)) else {
                    return Ok(());
                };
                self.runs[r].exit_delivered = true;
                let mono = self.mono(r);
                if let Err(e) = self.runs[r].m.work_ended(end, mono) {
                    return Err(self.fail(HOST, format!("run-{r}: work_ended: {e}")));
                }
                self.after_call(r)
            }
            Ev::Cancel(r, sig) => {
                if self.held_back(r, Ev::Cancel(r, sig)).is_none() || self.runs[r].verdict.is_some() {
                    // After `done` the host process has exited: nobody gets the signal.
                    return Ok(());
                }
                self.note(r, What::HostSignal(sig));
                let run = &mut self.runs[r];
                if run.first_signal.is_none() {
                    let moment = match run.work {
                        Work::NotStarted => Moment::Before,
                        _ if !run.exit_delivered => Moment::During,
                        _ => Moment::After,
                    };
                    run.first_signal = Some((sig, self.now, moment));
                    match moment {
                        Moment::Before => self.c.cancels_before_work += 1,
                        Moment::During => self.c.cancels_mid_work += 1,
                        Moment::After => self.c.cancels_after_work += 1,
                    }
                }
                if self.plan.sabotage == Sabotage::DropCancel {
                    return Ok(());
                }
                let mono = self.mono(r);
                self.runs[r].m.signal(sig, mono);
                self.after_call(r)
            }
            Ev::LateKill(r) => {
                if self.held_back(r, Ev::LateKill(r)).is_some()
                    && matches!(self.runs[r].work, Work::Running | Work::Stopping)
                {
                    self.exit_work(r, WorkEnd::Signalled { signal: 9 });
                }
                Ok(())
            }
            Ev::PauseStart(r, dur) => {
                if self.runs[r].crashed {
                    return Ok(());
                }
                let until = self.runs[r].paused_until.max(self.now + dur);
                self.runs[r].paused_until = until;
                self.c.pauses += 1;
                self.note(r, What::Pause(until));
                let jitter = self.rng.below(2);
                self.push(until + jitter, Ev::PauseEnd(r));
                Ok(())
            }
            Ev::PauseEnd(r) => {
                if self.runs[r].crashed || self.frozen(r) {
                    return Ok(());
                }
                self.note(r, What::Thaw);
                self.runs[r].wake_at = None;
                let mono = self.mono(r);
                self.runs[r].m.handle_timeout(mono);
                self.after_call(r)
            }
            Ev::Crash(r) => {
                self.crash(r);
                Ok(())
            }
        }
    }

    pub(crate) fn crash(&mut self, r: usize) {
        if !self.runs[r].crashed && self.runs[r].verdict.is_none() {
            self.runs[r].crashed = true;
            self.c.crashes += 1;
            self.note(r, What::Crash);
        }
    }

    /// The host contract after every machine call: carry out every action `poll_action()` gives, then
    /// schedule `poll_timeout()`.
    pub(crate) fn after_call(&mut self, r: usize) -> Result<(), Failure> {
        while let Some(action) = self.runs[r].m.poll_action() {
            if self.runs[r].verdict.is_some() {
                return Err(self.fail(HOST, format!("run-{r}: {action:?} after done")));
            }
            match action {
                RunAction::Store { id, cell, op, request, .. } => {
                    let own = cell.is_none();
                    let c = self.cell_index(r, cell.as_ref())?;
                    // The lease's requests (a batch on the run's own cell is the lease's, widened).
                    let lease = op.starts_with("lock-") || op == "cell-steps";
                    let kind = if own && lease { Kind::Lease } else { Kind::Step };
                    self.send(r, id, c, op, request, kind)?;
                }
                RunAction::Read { id, cell, op, request, .. } => {
                    let c = self.cell_index(r, Some(&cell))?;
                    self.send(r, id, c, op, request, Kind::Read)?;
                }
                RunAction::StartWork { env, epoch, delete, .. } => self.start_work(r, &env, epoch, delete)?,
                RunAction::Signal { signal } => self.signal_work(r, signal),
                RunAction::Lease { event } => self.on_lease_event(r, &event),
                RunAction::Note { .. } | RunAction::Warning { .. } => {}
                RunAction::Finished { .. } => {
                    return Err(self.fail(HOST, format!("run-{r}: `finished` without `finish` (manual mode)")));
                }
                RunAction::Done { verdict } => self.on_done(r, verdict)?,
            }
        }
        let off = self.plan.runs[r].mono_off;
        let now = self.now;
        let run = &mut self.runs[r];
        match run.m.poll_timeout() {
            Some(at) => {
                let at = at.saturating_sub(off).max(now);
                if run.wake_at != Some(at) {
                    run.wake_gen += 1;
                    run.wake_at = Some(at);
                    let generation = run.wake_gen;
                    self.push(at, Ev::Wake(r, generation));
                }
            }
            None => {
                if run.wake_at.take().is_some() {
                    run.wake_gen += 1;
                }
            }
        }
        Ok(())
    }

    pub(crate) fn cell_index(&self, r: usize, cell: Option<&CellRef>) -> Result<usize, Failure> {
        let Some(cell) = cell else { return Ok(self.plan.runs[r].scope) };
        let found = if cell.env == ENV {
            CELLS.iter().position(|s| *s == cell.scope)
        } else {
            (CLAIM0..ALL_CELLS).find(|&c| self.cells[c].env == cell.env && self.cells[c].scope == cell.scope)
        };
        match found {
            Some(c) => Ok(c),
            None => Err(self.fail(HOST, format!("run-{r}: a request for cell {}/{}", cell.env, cell.scope))),
        }
    }

    pub(crate) fn on_lease_event(&mut self, r: usize, event: &LeaseEvent) {
        match event {
            LeaseEvent::Acquired { epoch, .. } => self.note(r, What::LeaseEvent("acquired", *epoch)),
            LeaseEvent::Lost { grace_ms, .. } | LeaseEvent::MustStop { grace_ms, .. } => {
                let kind = if matches!(event, LeaseEvent::Lost { .. }) { "lost" } else { "must-stop" };
                self.note(r, What::LeaseEvent(kind, 0));
                self.c.stops += 1;
                let run = &mut self.runs[r];
                if matches!(run.work, Work::Running | Work::Stopping) && run.stop_at.is_none() {
                    run.stop_at = Some((self.now, *grace_ms));
                    self.c.stops_mid_work += 1;
                }
            }
            LeaseEvent::AcquireFailed { .. } => {
                self.note(r, What::LeaseEvent("acquire-failed", 0));
                self.c.acquire_failed += 1;
            }
            LeaseEvent::Released { .. } | LeaseEvent::ReleaseFailed { .. } => {
                self.note(r, What::LeaseEvent("released", 0));
            }
            LeaseEvent::Waiting { .. } | LeaseEvent::Renewed { .. } | LeaseEvent::RenewFailed { .. } => {}
        }
    }

    /// A machine request leaves the host: paced (one lease request, one run step at a time), and never the
    /// lease's release while the command runs (C1).
    pub(crate) fn send(
        &mut self,
        r: usize,
        id: u64,
        c: usize,
        op: &'static str,
        request: Value,
        kind: Kind,
    ) -> Result<(), Failure> {
        if c == CLAIM0 - 1 && kind != Kind::Read {
            return Err(self.fail(HOST, format!("run-{r}: {op} on {}, which never ran", cell_name(c))));
        }
        let busy = self.runs[r].inflight.values().any(|k| (*k == Kind::Lease) == (kind == Kind::Lease));
        if busy {
            return Err(self.fail(HOST, format!("run-{r}: {op} (#{id}) while another {kind:?} request is in flight")));
        }
        let ops = step_ops(op, &request);
        if kind == Kind::Lease && ops.contains(&"lock-release") {
            self.check_no_release_while_working(r)?;
        }
        if ops.first() == Some(&"lock-acquire") && kind == Kind::Step {
            self.c.handover_attempts += 1;
        }
        self.runs[r].inflight.insert(id, kind);
        self.c.store_requests += 1;
        self.note(r, What::Send(op, c));
        let at = self.now + self.plan.commit_lat.sample(&mut self.rng);
        self.push(at, Ev::Commit { r, id, cell: c, op, request, kind });
        Ok(())
    }

    /// Whether the store commits and whether the reply is lost.
    pub(crate) fn fault(&mut self) -> (bool, bool) {
        if self.plan.lost_permille > 0 && self.rng.chance(self.plan.lost_permille) {
            if self.rng.chance(500) { (true, true) } else { (false, true) }
        } else {
            (true, false)
        }
    }

    /// One transaction of `op` on cell `c` as a store runs it, with the committing host's wall clock.
    pub(crate) fn invoke(&self, r: usize, c: usize, op: &str, request: &Value) -> Result<Value, CoreError> {
        super::succession_store::transact(&self.cells[c], op, request, self.wall(r))
    }

    /// A machine request reaching the store: executed as one cell transaction (or read) at its commit time.
    pub(crate) fn commit(
        &mut self,
        r: usize,
        id: u64,
        c: usize,
        op: &'static str,
        request: Value,
        kind: Kind,
    ) -> Result<(), Failure> {
        let (commit, lost) = self.fault();
        let deliver_at = self.now + self.plan.deliver_lat.sample(&mut self.rng);
        let mut result = StoreResult::Error(err_map("STORE_CONTENDED", "not committed"));
        if commit {
            result = self.exec(r, c, op, request, kind)?;
        } else {
            self.note(r, What::Commit { op, cell: c, result: "not committed", fault: "", ledger: 0, seq: 0 });
        }
        if lost {
            self.c.lost_replies += u64::from(commit);
            self.c.failed_commits += u64::from(!commit);
            // The machine sees the handover fail (counted above when the store refused it).
            let handover_op = op == "handover" || (matches!(op, "lock-acquire" | "cell-steps") && kind == Kind::Step);
            self.c.handovers_failed += u64::from(handover_op && (!commit || matches!(result, StoreResult::Ok(_))));
            self.c.claim_moves_failed += u64::from(op == "claim-move");
            if commit {
                self.note(r, What::Commit { op, cell: c, result: "(reply lost)", fault: "", ledger: 0, seq: 0 });
            }
            result = StoreResult::Error(err_map("INTERNAL", "reply lost"));
        }
        self.push(deliver_at, Ev::Deliver { r, id, op, result });
        Ok(())
    }

    pub(crate) fn exec(
        &mut self,
        r: usize,
        c: usize,
        op: &'static str,
        request: Value,
        kind: Kind,
    ) -> Result<StoreResult, Failure> {
        let note = |w: &mut Self, result: &'static str| {
            w.note(r, What::Commit { op, cell: c, result, fault: "", ledger: 0, seq: 0 });
        };
        if kind == Kind::Read {
            let answer = match self.invoke(r, c, op, &request) {
                Ok(a) => a,
                Err(e) => return Err(self.fail(HOST, format!("run-{r}: read {op} answered {}: {e}", e.code.as_str()))),
            };
            note(self, "read");
            return Ok(StoreResult::Ok(answer));
        }
        if op == "cell-steps" {
            return self.exec_steps(r, c, &request, kind);
        }
        let mut request = request;
        if op == "handover" && self.plan.sabotage == Sabotage::HandOverPredecessorLedger {
            // The defect: everything the predecessor lists now is handed over, not what the PR owns.
            let pred = self.cells[c].file(LATEST).and_then(|t| serde_json::from_str::<Value>(t).ok());
            request["successorLedger"] = pred.map_or_else(|| json!([]), |v| v["ledger"].clone());
        }
        let sender =
            (request["holder"].as_str().unwrap_or_default().to_owned(), request["epoch"].as_u64().unwrap_or(0));
        let receipt_op = match op {
            "run-begin" => Some(Op::Begin),
            "destroy-plan" => Some(Op::DestroyPlan),
            "run-finish" => Some(Op::Finish),
            "handover" => {
                // What the handover takes over: the PR's owned entries (an adopted one stays the branch's).
                let keys = request["successorLedger"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter(|e| e["createdBy"] != "adopted")
                    .filter_map(key_of)
                    .map(|k| k as u8)
                    .collect();
                Some(Op::Handover { keys })
            }
            _ => None,
        };
        if self.plan.sabotage == Sabotage::ForgedFence
            && matches!(receipt_op, Some(Op::Begin | Op::DestroyPlan | Op::Finish))
            && let Ok(Some(l)) = lock::parse_lock(&self.cells[c])
        {
            request["holder"] = json!(l.holder);
            request["epoch"] = json!(l.epoch);
        }
        let answer = match self.invoke(r, c, op, &request) {
            Ok(a) => a,
            Err(e) => {
                let code = e.code.as_str();
                if code == "INTERNAL" || code == "USAGE" {
                    return Err(self.fail(HOST, format!("run-{r}: {op} on {} answered {code}: {e}", cell_name(c))));
                }
                self.c.writes_refused += u64::from(receipt_op.is_some() && code == "LOCK_LOST");
                match (op, kind) {
                    ("lock-acquire", Kind::Step) if code == "LOCK_HELD" => self.c.handovers_busy += 1,
                    ("lock-acquire", Kind::Step) => self.c.handovers_failed += 1,
                    ("handover", _) if code == "LOCK_LOST" => self.c.handovers_refused += 1,
                    ("handover", _) => self.c.handovers_failed += 1,
                    _ => {}
                }
                note(self, code);
                let Value::Object(map) = e.to_json() else { unreachable!("errors are objects") };
                return Ok(StoreResult::Error(map));
            }
        };
        let changes: Vec<Change> = match serde_json::from_value(answer.get("changes").cloned().unwrap_or(json!([]))) {
            Ok(ch) => ch,
            Err(e) => return Err(self.fail(HOST, format!("run-{r}: the changes of {op} do not parse: {e}"))),
        };
        let Some(receipt_op) = receipt_op else {
            // The lease's and the handover's lock operations.
            self.cells[c].apply(&changes);
            if op == "claim-move" {
                let moved = answer["moved"] == json!(true);
                self.c.claims_moved += u64::from(moved);
                self.c.claim_moves_left += u64::from(!moved);
                if !changes.is_empty() {
                    note(self, "ok");
                    return self.claim_landed(c).map(|()| StoreResult::Ok(answer));
                }
            }
            if op == "lock-acquire" {
                self.c.grants += 1;
                self.c.takeovers += u64::from(!answer["preempted"].is_null());
            }
            note(self, "ok");
            return Ok(StoreResult::Ok(answer));
        };
        let receipt = answer.get("receipt").cloned().unwrap_or(Value::Null);
        let before_branch = self.kinds[BRANCH];
        if changes.is_empty() {
            note(self, "ok (nothing to write)");
        } else {
            self.observe_write(r, c, &receipt_op, &changes, &receipt, (&sender.0, sender.1))?;
        }
        match &receipt_op {
            Op::Finish => {
                let status = receipt["status"].as_str().unwrap_or_default();
                match status {
                    "complete" => self.c.finished_ok += 1,
                    "cancelled" => self.c.finished_cancelled += 1,
                    _ => self.c.finished_failed += 1,
                }
                self.runs[r].receipt_status = Some(status.to_owned());
            }
            Op::Begin => self.c.inherited += answer.get("inherited").and_then(Value::as_u64).unwrap_or(0),
            Op::Handover { keys } => {
                let moved = answer.get("moved").and_then(Value::as_u64).unwrap_or(0);
                if moved == 0 {
                    self.c.handovers_empty += 1;
                } else {
                    self.c.handovers += 1;
                    self.c.moved += moved;
                }
                self.check_handed_over(r, keys, &before_branch)?;
                self.check_pairs("after a committed handover")?;
            }
            _ => {}
        }
        Ok(StoreResult::Ok(answer))
    }

    /// A `cell-steps` batch as a store runs it: its steps in order on the cell, each observed as the step alone
    /// would be, fenced by the batch's grant as `baton_core::cell_steps` fences them. Nothing else runs in
    /// between (one transaction); a step refused after an earlier one changed the cell would need the
    /// earlier changes undone, which the core's batches never ask for (their refusals come first or not at
    /// all), so the simulation fails then rather than model it.
    pub(crate) fn exec_steps(
        &mut self,
        r: usize,
        c: usize,
        request: &Value,
        kind: Kind,
    ) -> Result<StoreResult, Failure> {
        let before = self.cells[c].clone();
        let mut answers = Vec::new();
        let mut grant: Option<(Value, Value)> = None;
        let steps = request["steps"].as_array().cloned().unwrap_or_default();
        for step in &steps {
            let Some(op) = STEP_OPS.iter().copied().find(|o| step["op"].as_str() == Some(*o)) else {
                return Err(self.fail(HOST, format!("run-{r}: a batch step {}", step["op"])));
            };
            let mut req = step["request"].clone();
            if step["fromGrant"] == json!(true) {
                let Some((epoch, preempted)) = &grant else {
                    return Err(self.fail(HOST, format!("run-{r}: batch step {op} fenced by no grant")));
                };
                req["epoch"] = epoch.clone();
                if op == "run-begin" {
                    req["lockPreempted"] = preempted.clone();
                }
            }
            match self.exec(r, c, op, req, kind)? {
                StoreResult::Ok(mut answer) => {
                    if op == "lock-acquire" {
                        grant = Some((answer["lock"]["epoch"].clone(), answer["preempted"]["holder"].clone()));
                    }
                    if let Some(o) = answer.as_object_mut() {
                        o.remove("changes");
                    }
                    answers.push(answer);
                }
                StoreResult::Error(e) => {
                    if self.cells[c] != before {
                        let detail = format!("run-{r}: batch step {op} refused after an earlier step changed the cell");
                        return Err(self.fail(HOST, detail));
                    }
                    return Ok(StoreResult::Error(e));
                }
            }
        }
        Ok(StoreResult::Ok(json!({ "answers": answers })))
    }

    /// The machine's `done`: one verdict, after the command stopped (C1), cancelled when cancelled (C2).
    pub(crate) fn on_done(&mut self, r: usize, verdict: Verdict) -> Result<(), Failure> {
        let code = verdict.error.as_ref().and_then(|e| e.get("code")).and_then(Value::as_str).unwrap_or("");
        self.note(r, What::Done(verdict.exit, code.to_owned()));
        match code {
            "" if verdict.ok => self.c.verdicts_ok += 1,
            "INTERRUPTED" => self.c.verdicts_interrupted += 1,
            "LOCK_LOST" => self.c.verdicts_lost += 1,
            "COMMAND_FAILED" => self.c.verdicts_failed += 1,
            _ => self.c.verdicts_other += 1,
        }
        self.runs[r].verdict = Some(verdict);
        self.check_no_release_while_working(r)?;
        self.check_cancelled(r)?;
        self.check_stopped_in_grace(r)?;
        self.count_late_cancel(r);
        Ok(())
    }

    /// Records a landed receipt write in the trace.
    pub(crate) fn note_write(&mut self, r: usize, op: &'static str, cell: usize, ledger: u16, seq: u64) {
        self.note(r, What::Commit { op, cell, result: "ok", fault: "", ledger, seq });
    }

    /// How a trace names a ledger entry kind.
    pub(crate) fn kind_label(kind: u8) -> &'static str {
        ["", "baton", "intent", "adopted"][usize::from(kind.min(ADOPTED))]
    }
}

/// What `cell-steps` may run (`baton_core::cell_steps::STEP_OPS`), as the names the trace keeps.
const STEP_OPS: [&str; 6] = baton_core::cell_steps::STEP_OPS;

/// The core operations a request runs: its op, or a batch's steps.
fn step_ops(op: &'static str, request: &Value) -> Vec<&'static str> {
    if op != "cell-steps" {
        return vec![op];
    }
    let steps = request["steps"].as_array().cloned().unwrap_or_default();
    steps.iter().filter_map(|s| STEP_OPS.iter().copied().find(|o| s["op"].as_str() == Some(*o))).collect()
}
