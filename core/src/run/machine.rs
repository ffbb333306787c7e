//! The run state machine. See the module doc of [`crate::run`] for the contract.

use super::action::{CellRef, HostSignal, RunAction, Verdict, WorkEnd, WorkSignal};
use super::config::{Checked, RunConfig};
use super::verdict::{self, Facts};
use crate::error::CoreError;
use crate::lease::{Action, LeaseEvent, LeaseMachine, Mono, StoreResult};
use crate::time::human_ms;
use serde_json::{Value, json};
use std::collections::{BTreeMap, VecDeque};

/// Where the run is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Phase {
    Idle,
    Acquiring,
    /// The checkpoint receipt (and a destroy's plan) is being written; the work has not started.
    Beginning,
    /// The work runs; waiting for `work_ended` (or, in Node's manual mode, `finish`/`release`).
    Working,
    /// The final receipt and the handover are being written.
    Finishing,
    /// Finished by `finish`; the lease stays held until `release`.
    Held,
    Releasing,
    Done,
}

/// The run's own store step in flight (at most one at a time; the lease's requests are separate).
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Step {
    ReadPredecessor,
    RunBegin,
    DestroyPlan,
    RunFinish,
    /// The handover's lock and rewrite of the predecessor's receipt, one transaction of its cell.
    Handover,
    /// The handed-over claims still to move (the first is in flight), under the handover's lock.
    ClaimMove {
        epoch: Value,
        rest: Vec<Value>,
    },
    HandoverRelease,
}

/// A lease request that carries run steps in the same transaction of the run's cell (`cell-steps`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Batch {
    /// The grant with the checkpoint receipt (and a destroy's plan).
    Open,
    /// The final receipt with the release.
    Close,
}

/// What comes after the final receipt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Then {
    Release,
    Hold,
}

/// A store or read action the host polled and has not reported yet: its cell and its decision.
#[derive(Clone, Debug)]
pub(super) struct InFlight {
    pub(super) cell: CellRef,
    pub(super) op: &'static str,
    pub(super) request: Value,
    /// The answer of the latest [`RunMachine::apply`], reported by [`RunMachine::handle_store_outcome`].
    pub(super) answer: Option<Value>,
}

/// A cancel in progress.
#[derive(Clone, Copy, Debug)]
pub(super) struct Cancel {
    pub(super) first: HostSignal,
    pub(super) count: u32,
}

/// One run of a scope (or a parent object, or a plain acquire) from approval to verdict. See [`crate::run`].
#[derive(Debug)]
pub struct RunMachine {
    pub(super) cfg: Checked,
    pub(super) lease: LeaseMachine,
    pub(super) phase: Phase,
    pub(super) next_id: u64,
    /// Run action id -> lease machine request id.
    pub(super) lease_ids: BTreeMap<u64, u64>,
    pub(super) step: Option<(u64, Step)>,
    /// The lease request in flight that carries run steps, if any.
    pub(super) batch: Option<(u64, Batch)>,
    /// The answers of the run steps the grant carried (`run-begin`, then a destroy's `destroy-plan`), until
    /// the machine moves on with them.
    pub(super) opened: VecDeque<Value>,
    /// The final receipt's request (fenced) and its deadline, waiting to go out with the release.
    pub(super) pending_finish: Option<(Value, Mono)>,
    pub(super) then: Then,
    pub(super) actions: VecDeque<RunAction>,
    pub(super) facts: Facts,
    /// The predecessor scope (a PR's head branch) and whether it has a receipt to inherit from.
    pub(super) predecessor: Option<String>,
    pub(super) predecessor_text: Option<String>,
    pub(super) cancel: Option<Cancel>,
    pub(super) term_at: Option<Mono>,
    pub(super) kill_at: Option<Mono>,
    /// The host's clock at the latest call: the run's own store steps get their deadline from it.
    pub(super) now: Mono,
    /// Store and read actions polled and not reported yet (the typed loop, [`Self::apply`]).
    pub(super) in_flight: BTreeMap<u64, InFlight>,
}

impl RunMachine {
    /// Creates an idle machine. Refuses before anything is locked: `ENV_NOT_APPROVED` for production
    /// without an approver, `USAGE` for a bad name or timing, `INTERNAL` for a host that passed no randomness.
    pub fn new(config: RunConfig) -> Result<Self, CoreError> {
        let cfg = config.check()?;
        let lease = LeaseMachine::new(cfg.lease.clone())?;
        let facts = Facts::new(&cfg);
        Ok(Self {
            cfg,
            lease,
            phase: Phase::Idle,
            next_id: 1,
            lease_ids: BTreeMap::new(),
            step: None,
            batch: None,
            opened: VecDeque::new(),
            pending_finish: None,
            then: Then::Release,
            actions: VecDeque::new(),
            facts,
            predecessor: None,
            predecessor_text: None,
            cancel: None,
            term_at: None,
            kill_at: None,
            now: 0,
            in_flight: BTreeMap::new(),
        })
    }

    /// The predecessor scope whose receipt this run inherits from (a PR's head branch with a receipt), once
    /// the run has begun.
    pub fn predecessor(&self) -> Option<&str> {
        self.predecessor.as_deref().filter(|_| self.predecessor_text.is_some())
    }

    /// The holder name the run's lock is written under.
    pub fn holder(&self) -> &str {
        &self.cfg.lease.holder
    }

    /// The environment of the run's own cell (for a parent object: `_locks`).
    pub fn env(&self) -> &str {
        &self.cfg.lease.env
    }

    /// The scope of the run's own cell (for a parent object: the 32-hex cell name).
    pub fn scope(&self) -> &str {
        &self.cfg.lease.scope
    }

    /// Starts the run: acquires the lease (waiting if configured). Call once; again is `INTERNAL`.
    pub fn start(&mut self, now: Mono) -> Result<(), CoreError> {
        self.now = self.now.max(now);
        if self.phase != Phase::Idle {
            return Err(CoreError::internal("start called twice on one run"));
        }
        self.phase = Phase::Acquiring;
        self.note(format!("{}; acquiring the lease as {}", self.cfg.lease.label(), self.holder()));
        self.lease.acquire(now)?;
        self.pump(now);
        Ok(())
    }

    /// The work ended (after `start-work`). The machine writes the final receipt (`complete` only when it
    /// exited 0 with the lease held throughout and no cancel), hands over after a successful run, releases,
    /// and ends with `done`. `INTERNAL` when no work was started.
    pub fn work_ended(&mut self, end: WorkEnd, now: Mono) -> Result<(), CoreError> {
        self.now = self.now.max(now);
        if self.phase != Phase::Working || self.facts.work.is_some() {
            return Err(CoreError::internal("work-ended without work running"));
        }
        self.term_at = None;
        self.kill_at = None;
        if let WorkEnd::NotStarted { message } = &end {
            self.note(message.clone());
        }
        let succeeded = end == WorkEnd::Exited { code: 0 } && self.facts.lost.is_none() && self.cancel.is_none();
        self.facts.work = Some(end);
        self.finish_receipt(succeeded, Then::Release, now);
        Ok(())
    }

    /// Node's manual mode: writes the final receipt (`complete` when `succeeded`) and hands over, keeping the
    /// lease; ends with `finished` (whose outcome has `error` when the receipt did not land: the run is then
    /// still open and `finish` may be called again). `USAGE` when the run is not open.
    pub fn finish(&mut self, succeeded: bool, now: Mono) -> Result<(), CoreError> {
        self.now = self.now.max(now);
        if self.phase != Phase::Working || !self.cfg.job.has_receipt() || self.facts.work.is_some() {
            return Err(CoreError::usage(format!(
                "the run on {} is not open: its receipt is final or it never started",
                self.cfg.lease.label()
            )));
        }
        self.facts.work = Some(WorkEnd::Exited { code: if succeeded { 0 } else { 1 } });
        let succeeded = succeeded && self.facts.lost.is_none() && self.cancel.is_none();
        self.finish_receipt(succeeded, Then::Hold, now);
        Ok(())
    }

    /// Ends the run early or after `finish`: gives up a wait, or releases the lease. Without a final receipt
    /// the checkpoint stays (as after a crash: the next run continues from it). No-op once finishing.
    pub fn release(&mut self, now: Mono) {
        self.now = self.now.max(now);
        match self.phase {
            Phase::Idle => self.done(now),
            Phase::Acquiring => {
                self.facts.given_up = true;
                self.lease.release(now);
                self.pump(now);
            }
            Phase::Working | Phase::Held => {
                if self.facts.work.is_none() {
                    self.facts.released_early = true;
                }
                self.begin_release(now);
            }
            Phase::Beginning => self.facts.given_up = true,
            Phase::Finishing | Phase::Releasing | Phase::Done => {}
        }
    }

    /// The host process received a cancel signal. While waiting: stop waiting and end (`INTERRUPTED`,
    /// 128 + signal). While the work runs: a first SIGINT is forwarded as SIGINT, a SIGTERM or a second SIGINT
    /// as SIGTERM (and SIGTERM follows by itself half-way through the grace); at the end of the grace the
    /// work's group is killed. Then the receipt says `cancelled` and the lease is released: the lock is never
    /// released while the work may still run.
    pub fn signal(&mut self, sig: HostSignal, now: Mono) {
        self.now = self.now.max(now);
        // Once the work has ended the run is finishing as it ended: a late signal changes nothing (the
        // receipt being written says how the work ended; the release follows as always). Before the work
        // started, a signal always ends the run `INTERRUPTED`, even one that comes while it is releasing.
        if self.phase == Phase::Done {
            return;
        }
        if self.facts.work.is_some() {
            self.note(format!("{}: the command has ended; finishing the run (receipt and release) first", sig.name()));
            return;
        }
        let first = self.cancel.is_none();
        let cancel = self.cancel.get_or_insert(Cancel { first: sig, count: 0 });
        cancel.count += 1;
        let count = cancel.count;
        match self.phase {
            Phase::Idle => self.done(now),
            Phase::Acquiring => {
                if first {
                    self.note(format!("{}: giving up the lease before anything ran", sig.name()));
                    self.lease.release(now);
                    self.pump(now);
                }
            }
            Phase::Working => {
                let grace = self.cfg.cancel_grace_ms;
                if first {
                    self.kill_at = Some(self.kill_at.map_or(now + grace, |k| k.min(now + grace)));
                    self.note(format!(
                        "{}: cancelling; the command gets {} to stop, then it is killed, the receipt says `cancelled` and the lease is released",
                        sig.name(),
                        human_ms(grace)
                    ));
                }
                if sig == HostSignal::Interrupt && count == 1 {
                    self.term_at = Some(now + grace / 2);
                    self.work_signal(WorkSignal::Interrupt);
                } else {
                    self.term_at = None;
                    self.work_signal(WorkSignal::Terminate);
                }
            }
            Phase::Beginning => {
                if first {
                    self.note(format!(
                        "{}: the run is starting; it stops before the command starts and releases the lease",
                        sig.name()
                    ));
                }
            }
            Phase::Finishing | Phase::Held | Phase::Releasing | Phase::Done => {}
        }
    }

    /// Wakes the machine at (or after) `poll_timeout`. Spurious calls are no-ops.
    pub fn handle_timeout(&mut self, now: Mono) {
        self.now = self.now.max(now);
        if self.phase == Phase::Working && self.facts.work.is_none() {
            if self.term_at.is_some_and(|t| now >= t) {
                self.term_at = None;
                self.work_signal(WorkSignal::Terminate);
            }
            if self.kill_at.is_some_and(|t| now >= t) {
                self.kill_at = None;
                self.term_at = None;
                self.work_signal(WorkSignal::Kill);
            }
        }
        self.lease.handle_timeout(now);
        self.pump(now);
    }

    /// Reports the outcome of store or read request `id`. An id not in flight is `INTERNAL`.
    pub fn handle_store_result(&mut self, id: u64, result: StoreResult, now: Mono) -> Result<(), CoreError> {
        self.now = self.now.max(now);
        self.in_flight.remove(&id);
        if let Some(lease_id) = self.lease_ids.remove(&id) {
            let result = match self.batch.take() {
                Some((batch_id, batch)) if batch_id == id => self.unbatch(batch, result, now),
                other => {
                    self.batch = other;
                    result
                }
            };
            self.lease.handle_store_result(lease_id, result, now)?;
            self.pump(now);
            return Ok(());
        }
        match self.step.take() {
            Some((step_id, step)) if step_id == id => {
                self.on_step(step, result, now);
                self.pump(now);
                Ok(())
            }
            other => {
                self.step = other;
                Err(CoreError::internal(format!("store result for request {id}, which is not in flight")))
            }
        }
    }

    /// The next action, if any. Drain until `None` after every call.
    #[must_use]
    pub fn poll_action(&mut self) -> Option<RunAction> {
        self.actions.pop_front()
    }

    /// When to call `handle_timeout` next, if ever. Changes after every call.
    #[must_use]
    pub fn poll_timeout(&self) -> Option<Mono> {
        if self.phase == Phase::Done {
            return None;
        }
        [self.lease.poll_timeout(), self.term_at, self.kill_at].into_iter().flatten().min()
    }

    /// The epoch to fence writes with while the lease is safely held (see
    /// [`LeaseMachine::fencing_token`]); `None` before the run began and after it ended.
    pub fn fencing_token(&self, now: Mono) -> Option<u64> {
        match self.phase {
            Phase::Beginning | Phase::Working | Phase::Finishing | Phase::Held => self.lease.fencing_token(now),
            _ => None,
        }
    }

    /// The latest instant a store operation the host starts at `now` for this run (a fenced write of the
    /// work's own) may run until: see [`LeaseMachine::store_deadline`].
    pub fn store_deadline(&self, now: Mono) -> Mono {
        self.lease.store_deadline(now)
    }

    /// Whether the run is over (`done` was emitted).
    pub fn is_finished(&self) -> bool {
        self.phase == Phase::Done
    }

    // --- internals ---

    pub(super) fn id(&mut self) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        id
    }

    pub(super) fn note(&mut self, text: String) {
        self.actions.push_back(RunAction::Note { text });
    }

    pub(super) fn warn(&mut self, text: String) {
        self.facts.warnings.push(text.clone());
        self.actions.push_back(RunAction::Warning { text });
    }

    pub(super) fn work_signal(&mut self, signal: WorkSignal) {
        self.actions.push_back(RunAction::Signal { signal });
    }

    pub(super) fn epoch(&self) -> u64 {
        self.facts.epoch
    }

    pub(super) fn own_step(&mut self, step: Step, op: &'static str, request: Value) {
        self.store_step(step, None, op, request);
    }

    pub(super) fn store_step(&mut self, step: Step, cell: Option<CellRef>, op: &'static str, mut request: Value) {
        let id = self.id();
        if cell.is_none() {
            request["holder"] = json!(self.holder());
            request["epoch"] = json!(self.epoch());
        }
        self.step = Some((id, step));
        let deadline_ms = self.lease.store_deadline(self.now);
        self.actions.push_back(RunAction::Store { id, cell, op, request, deadline_ms });
    }

    /// Moves the lease machine's actions out, answering its events, until it has nothing more to say.
    pub(super) fn pump(&mut self, now: Mono) {
        while let Some(action) = self.lease.poll_action() {
            match action {
                Action::Store { id: lease_id, op, request, deadline_ms } => {
                    let id = self.id();
                    self.lease_ids.insert(id, lease_id);
                    let (op, request, deadline_ms) = self.piggyback(id, op, request, deadline_ms);
                    self.actions.push_back(RunAction::Store { id, cell: None, op, request, deadline_ms });
                }
                Action::Event { event } => self.on_lease_event(event, now),
            }
        }
    }

    pub(super) fn on_lease_event(&mut self, event: LeaseEvent, now: Mono) {
        self.actions.push_back(RunAction::Lease { event: event.clone() });
        match event {
            LeaseEvent::Acquired { lock, epoch, preempted, warning } => {
                self.facts.lock = lock;
                self.facts.epoch = epoch;
                self.facts.preempted = preempted;
                if let Some(w) = warning {
                    self.warn(w);
                }
                if self.phase == Phase::Acquiring {
                    if self.cancel.is_some() || self.facts.given_up {
                        // Given up while the attempt was in flight: the lease releases next by itself.
                        self.phase = Phase::Releasing;
                    } else {
                        self.begin(now);
                    }
                }
            }
            LeaseEvent::Waiting { holder, expires_at, waited_ms, remaining_ms } => self.note(format!(
                "waiting for {}: held by {holder} until {expires_at} (waited {}, giving up in {})",
                self.cfg.lease.label(),
                human_ms(waited_ms),
                human_ms(remaining_ms)
            )),
            LeaseEvent::Renewed { lock } => self.facts.lock = lock,
            LeaseEvent::RenewFailed { error } => {
                let why = error.get("message").and_then(Value::as_str).unwrap_or("unknown error").to_owned();
                self.note(format!("renewing the lease failed ({why}); retrying"));
            }
            LeaseEvent::Lost { error, grace_ms } | LeaseEvent::MustStop { error, grace_ms } => {
                self.on_lost(error, grace_ms, now);
            }
            LeaseEvent::Released { released } => {
                if self.pending_finish.take().is_some() {
                    self.note("The final receipt is not written: the lease was lost; the checkpoint receipt stays for the next run.".to_owned());
                }
                self.facts.released = released;
                self.done(now);
            }
            LeaseEvent::ReleaseFailed { warning, .. } => {
                self.warn(warning);
                self.done(now);
            }
            LeaseEvent::AcquireFailed { error } => {
                self.facts.failure.get_or_insert(error);
                self.done(now);
            }
        }
    }

    pub(super) fn on_lost(&mut self, error: Value, grace_ms: u64, now: Mono) {
        if self.facts.lost.is_none() {
            self.facts.lost = Some(error.clone());
        }
        if self.phase == Phase::Working && self.facts.work.is_none() {
            let msg = error.get("message").and_then(Value::as_str).unwrap_or("The lease was lost.");
            self.note(format!("{msg} Stopping the command (SIGTERM, then SIGKILL)."));
            self.work_signal(WorkSignal::Terminate);
            self.term_at = None;
            let at = now + grace_ms;
            self.kill_at = Some(self.kill_at.map_or(at, |k| k.min(at)));
        }
    }

    pub(super) fn begin_release(&mut self, now: Mono) {
        if self.phase == Phase::Releasing || self.phase == Phase::Done {
            return;
        }
        self.phase = Phase::Releasing;
        self.lease.release(now);
        self.pump(now);
    }

    pub(super) fn done(&mut self, _now: Mono) {
        if self.phase == Phase::Done {
            return;
        }
        self.phase = Phase::Done;
        self.term_at = None;
        self.kill_at = None;
        let verdict: Verdict = verdict::decide(&self.cfg, &self.facts, self.cancel.map(|c| c.first));
        self.actions.push_back(RunAction::Done { verdict });
    }
}
