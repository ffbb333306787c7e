//! The simulated command of a succession run (the adapter): what it does between `start-work` and its
//! exit, with the holder and epoch the machine exported, and how it takes the machine's signals. Its
//! ledger calls are the command's own `baton ledger check|intend|record|forget`, each driving THE
//! ownership change machine (`claims::ChangeMachine`) as the CLI and the npm package do.

use super::succession::{Act, BRANCH, CLAIM0, ENV, HOST, LATEST, MAX_KEYS, PR7, PR8, SCOPES, Sabotage};
use super::succession_checks::{INTENT, NONE, OWNED, key_of, kinds_of, owns};
use super::succession_host::{Ev, Op, What, Work, World};
use super::world::Failure;
use baton_core::cell::Change;
use baton_core::claims::{self, ChangeAction, ChangeAnswer, ChangeConfig, ChangeMachine, ChangeOp, Load};
use baton_core::lock;
use baton_core::ownership::{self, OtherScope, Resource};
use baton_core::run::{WorkEnd, WorkSignal};
use baton_core::{CoreError, ErrorCode};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

#[derive(Debug)]
pub(crate) enum Reply {
    List(Vec<OtherScope>, u64),
    Written {
        receipt: Value,
    },
    /// A load of the ownership change machine committed (or was read).
    Applied,
}

/// The command's `baton ledger ...` call in progress: THE ownership change machine (`claims::ChangeMachine`,
/// what the CLI and the npm package drive), the action in flight, and what its take wrote last.
#[derive(Clone, Debug, Default)]
pub(crate) struct ChangeState {
    pub(crate) m: Option<ChangeMachine>,
    /// The machine's id of the action in flight, and whether it is a listing.
    pub(crate) in_flight: Option<(u64, bool)>,
    /// The last claim the take wrote replaced another (`takenFrom`).
    pub(crate) taken_from: bool,
}

pub(crate) type Outcome = Result<Reply, &'static str>;

/// Where the adapter's program is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Pc {
    Idle,
    /// Action `i`: check (list and `ledger check`), intend (with its claim), create, record (with its
    /// claim); or forget (with the free).
    Act(usize, Stage),
    /// The destroy's `baton ledger forget` of its `i`-th resource (the free follows inside it).
    DestroyForget(usize),
    Exit,
    Over,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Stage {
    /// Planning from the run's own receipt.
    List,
    /// `baton ledger check` (the machine: list, the check, a read-only take when it creates).
    Check,
    /// `baton ledger intend` (`record` false) or, after the provider's create, `baton ledger record`: the
    /// machine's take with its needs, then the fenced write (and the give-back when it is refused).
    Take {
        record: bool,
    },
    /// Sabotage only: the fenced intent or record without the machine (no claim).
    Intend,
    Record,
    /// `baton ledger forget` (the machine: the fenced forget, then the free).
    Forget(u8),
}

pub(crate) fn resource(key: u8) -> Resource {
    Resource {
        adapter: "fake".into(),
        key: format!("k{key}"),
        provider: Value::Object(Map::new()),
        op: None,
        label: None,
        parent: None,
    }
}

/// The predecessor the command finds by `succession` (`branch-feat-y` for pr-8 does not exist).
fn predecessor(scope: usize) -> Option<&'static str> {
    match scope {
        PR7 => Some(SCOPES[BRANCH]),
        PR8 => Some("branch-feat-y"),
        _ => None,
    }
}

impl World<'_> {
    /// `start-work`: the command starts with the holder and epoch the machine exported, and its receipt as
    /// the machine's `run-begin` left it.
    pub(crate) fn start_work(
        &mut self,
        r: usize,
        env: &BTreeMap<String, String>,
        epoch: u64,
        delete: Option<Vec<Value>>,
    ) -> Result<(), Failure> {
        self.note(r, What::StartWork(epoch));
        self.check_not_started_after_cancel(r)?;
        let holder = env.get("BATON_HOLDER").cloned().unwrap_or_default();
        if env.get("BATON_EPOCH") != Some(&epoch.to_string()) || holder != self.runs[r].m.holder() {
            return Err(self.fail(HOST, format!("run-{r}: start-work exports {env:?} for epoch {epoch}")));
        }
        if self.runs[r].work != Work::NotStarted {
            return Err(self.fail(HOST, format!("run-{r}: start-work twice")));
        }
        self.c.works += 1;
        let scope = self.plan.runs[r].scope;
        let view = self.cells[scope].file(LATEST).and_then(|t| serde_json::from_str::<Value>(t).ok());
        let run = &mut self.runs[r];
        run.fence = (holder, epoch);
        run.work = Work::Running;
        run.view = view.as_ref().map_or([NONE; MAX_KEYS], kinds_of);
        run.pc = match delete {
            Some(list) => {
                run.delete = list.iter().filter_map(key_of).map(|k| k as u8).collect();
                Pc::DestroyForget(0)
            }
            None => Pc::Act(0, Stage::List),
        };
        if let Some(c) = self.plan.runs[r].cancel.filter(|c| !c.before_work) {
            self.schedule_cancel(r, self.now + c.after);
        }
        let think = self.plan.think.sample(&mut self.rng);
        self.schedule_step(r, think);
        Ok(())
    }

    /// The machine's `signal`: SIGKILL ends the command now; SIGINT/SIGTERM after its stop delay, unless it
    /// traps them.
    pub(crate) fn signal_work(&mut self, r: usize, signal: WorkSignal) {
        let work = self.runs[r].work;
        if !matches!(work, Work::Running | Work::Stopping) {
            self.note(r, What::Signal(signal, "it has already exited"));
            return;
        }
        if signal == WorkSignal::Kill && self.plan.sabotage == Sabotage::LateKill {
            self.note(r, What::Signal(signal, "put off (sabotage)"));
            self.push(self.now + self.plan.ttl, Ev::LateKill(r));
            return;
        }
        if signal == WorkSignal::Kill {
            self.c.kills += 1;
            self.note(r, What::Signal(signal, "killed"));
            self.exit_work(r, WorkEnd::Signalled { signal: 9 });
            return;
        }
        self.c.work_stops += 1;
        let number = if signal == WorkSignal::Interrupt { 2 } else { 15 };
        if self.plan.sabotage == Sabotage::ReportExitOnSignal && !self.runs[r].exit_reported {
            // The defect: the host tells the machine the command ended without waiting for it.
            self.runs[r].exit_reported = true;
            self.push(self.now, Ev::WorkExit(r, WorkEnd::Signalled { signal: number }));
        }
        if self.plan.runs[r].traps {
            self.c.trapped += 1;
            self.note(r, What::Signal(signal, "trapped and ignored"));
        } else if work == Work::Running {
            self.note(r, What::Signal(signal, "stopping"));
            self.runs[r].work = Work::Stopping;
            self.runs[r].awaiting = None;
            let delay = self.plan.runs[r].stop_delay;
            self.push(self.now + delay, Ev::WorkStop(r, number));
        }
    }

    /// The command's process ends: the host sees it (`work_ended`) as soon as its host runs.
    pub(crate) fn exit_work(&mut self, r: usize, end: WorkEnd) {
        self.note(r, What::WorkExit(end.exit_code()));
        let run = &mut self.runs[r];
        run.work = Work::Ended;
        run.work_ended_at = Some(self.now);
        run.awaiting = None;
        run.pc = Pc::Over;
        if !run.exit_reported {
            run.exit_reported = true;
            self.push(self.now, Ev::WorkExit(r, end));
        }
    }

    pub(crate) fn schedule_step(&mut self, r: usize, after: u64) {
        if !self.runs[r].step_pending {
            self.runs[r].step_pending = true;
            self.push(self.now + after, Ev::WorkStep(r));
        }
    }

    pub(crate) fn work_send(&mut self, r: usize, op: Op) {
        self.c.store_requests += 1;
        let id = self.seq;
        self.runs[r].awaiting = Some(id);
        self.note(r, What::WorkSend(op.name(), op.key()));
        let at = self.now + self.plan.commit_lat.sample(&mut self.rng);
        self.push(at, Ev::WorkCommit { r, id, op });
    }

    /// Runs the command's program from its current point until it sends an operation or exits.
    pub(crate) fn advance(&mut self, r: usize) -> Result<(), Failure> {
        if self.runs[r].awaiting.is_some() || self.runs[r].work != Work::Running {
            return Ok(());
        }
        let plan = self.plan;
        loop {
            let rp = &plan.runs[r];
            let run = &mut self.runs[r];
            let op = match run.pc {
                Pc::Idle | Pc::Over => return Ok(()),
                Pc::Exit => {
                    let code = i32::from(run.failed || rp.fails);
                    self.exit_work(r, WorkEnd::Exited { code });
                    return Ok(());
                }
                Pc::Act(i, stage) => {
                    let Some(&act) = rp.acts.get(i) else {
                        run.pc = Pc::Exit;
                        continue;
                    };
                    match (act, stage) {
                        (Act::Forget, Stage::Forget(k)) => self.change_step(r, k, ChangeOp::Forget)?,
                        (Act::Forget, _) => {
                            let listed: Vec<u8> = (0..MAX_KEYS as u8).filter(|k| owns(run.view[*k as usize])).collect();
                            if listed.is_empty() {
                                run.pc = Pc::Act(i + 1, Stage::List);
                                continue;
                            }
                            let k = listed[self.rng.below(listed.len() as u64) as usize];
                            self.runs[r].pc = Pc::Act(i, Stage::Forget(k));
                            // Deleted at the provider, then forgotten.
                            self.exists[usize::from(k)] = false;
                            self.zombie[usize::from(k)] = false;
                            self.disowned[usize::from(k)] = false;
                            continue;
                        }
                        (Act::Rely(k), Stage::List) if !self.exists[usize::from(k)] => {
                            // Nothing to rely on: the resource does not exist (any more).
                            run.pc = Pc::Act(i + 1, Stage::List);
                            self.note(r, What::Decide("finds nothing to rely on:", Some(k)));
                            continue;
                        }
                        // The adapter plans from its own receipt first: what it lists needs no check.
                        (Act::Create(k), Stage::List) if run.view[usize::from(k)] == OWNED => {
                            run.pc = Pc::Act(i + 1, Stage::List);
                            continue;
                        }
                        (Act::Create(k), Stage::List) if run.view[usize::from(k)] == INTENT => {
                            // An intent left by a crashed run: resolve it (create if missing) and record it.
                            self.c.intents_claimed += 1;
                            run.pc = Pc::Act(i, Stage::Take { record: true });
                            continue;
                        }
                        (Act::Rely(k), Stage::List) if run.view[usize::from(k)] != NONE => {
                            run.pc = Pc::Act(i + 1, Stage::List);
                            continue;
                        }
                        (_, Stage::List) => {
                            run.pc = Pc::Act(i, Stage::Check);
                            continue;
                        }
                        (Act::Create(k), Stage::Check) => self.change_step(r, k, ChangeOp::Check { change: true })?,
                        (Act::Rely(k), Stage::Check) => self.change_step(r, k, ChangeOp::Check { change: false })?,
                        (Act::Create(k), Stage::Take { record }) => {
                            if record && run.change.m.is_none() {
                                // The provider's create (an upsert) comes before `baton ledger record`; by
                                // a zombie when the adapter's lease had already ended.
                                let zombie = self.runs[r].m.fencing_token(self.mono(r)).is_none();
                                self.exists[usize::from(k)] = true;
                                self.zombie[usize::from(k)] = zombie;
                                self.disowned[usize::from(k)] = false;
                                self.c.zombie_creates += u64::from(zombie);
                            }
                            let run = &mut self.runs[r];
                            if plan.sabotage == Sabotage::NoClaims {
                                run.pc = Pc::Act(i, if record { Stage::Record } else { Stage::Intend });
                                continue;
                            }
                            let op = if record {
                                ChangeOp::Record { id: format!("id-{r}-{k}-{}", self.commits + 1) }
                            } else {
                                ChangeOp::Intend
                            };
                            self.change_step(r, k, op)?
                        }
                        (Act::Create(k), Stage::Intend) => Some(Op::Intend(k)),
                        (Act::Create(k), Stage::Record) => Some(Op::Record(k)),
                        (act, stage) => {
                            return Err(self.fail(HOST, format!("run-{r}: no step for {act:?} at {stage:?}")));
                        }
                    }
                }
                Pc::DestroyForget(i) => {
                    let Some(&k) = run.delete.get(i) else {
                        run.pc = Pc::Exit;
                        continue;
                    };
                    if run.change.m.is_none() {
                        self.exists[usize::from(k)] = false;
                        self.zombie[usize::from(k)] = false;
                        self.disowned[usize::from(k)] = false;
                    }
                    self.change_step(r, k, ChangeOp::Forget)?
                }
            };
            match op {
                Some(op) => {
                    self.work_send(r, op);
                    return Ok(());
                }
                // The change ended (its end is handled): the command goes on after thinking.
                None => {
                    if !self.runs[r].crashed {
                        let think = self.plan.think.sample(&mut self.rng);
                        self.schedule_step(r, think);
                    }
                    return Ok(());
                }
            }
        }
    }

    /// The next store operation of the run's `baton ledger` call for key `k` (its machine created with `op`
    /// on the first call), or `None` when it ended (handled by [`Self::change_ended`]).
    fn change_step(&mut self, r: usize, k: u8, op: ChangeOp) -> Result<Option<Op>, Failure> {
        let scope = self.plan.runs[r].scope;
        if self.runs[r].change.m.is_none() {
            let (mut holder, mut epoch) = self.runs[r].fence.clone();
            if self.plan.sabotage == Sabotage::ForgedFence
                && let Ok(Some(l)) = lock::parse_lock(&self.cells[scope])
            {
                (holder, epoch) = (l.holder, l.epoch);
            }
            let config = ChangeConfig {
                env: ENV.into(),
                scope: SCOPES[scope].into(),
                holder: Some(holder),
                epoch: Some(epoch),
                predecessor: predecessor(scope).map(str::to_owned),
                resource: resource(k),
                op,
                owned_marker: None,
            };
            let m = ChangeMachine::new(config).map_err(|e| self.fail(HOST, format!("run-{r}: the change: {e}")))?;
            self.runs[r].change.m = Some(m);
        }
        let change = &mut self.runs[r].change;
        let Some(m) = change.m.as_mut() else { return Ok(None) };
        match m.poll_action() {
            Some(ChangeAction::Load(load)) => {
                let name = m.operation(load.id).unwrap_or("?");
                change.in_flight = Some((load.id, false));
                Ok(Some(Op::Change { key: k, id: load.id, name, load: Some(load) }))
            }
            Some(ChangeAction::List { id, .. }) => {
                change.in_flight = Some((id, true));
                Ok(Some(Op::Change { key: k, id, name: "list", load: None }))
            }
            Some(ChangeAction::Done(answer)) => {
                self.runs[r].change = ChangeState::default();
                self.change_ended(r, Ok(answer))?;
                Ok(None)
            }
            Some(ChangeAction::Failed(e)) => {
                self.runs[r].change = ChangeState::default();
                self.change_ended(r, Err(e))?;
                Ok(None)
            }
            None => Err(self.fail(HOST, format!("run-{r}: the ownership change has no action"))),
        }
    }

    /// A `baton ledger` call ended: what the adapter does with its answer.
    fn change_ended(&mut self, r: usize, outcome: Result<ChangeAnswer, CoreError>) -> Result<(), Failure> {
        let plan = self.plan;
        let rp = &plan.runs[r];
        let pc = self.runs[r].pc;
        let next = |i: usize| Pc::Act(i + 1, Stage::List);
        let key = |i: usize| match rp.acts[i] {
            Act::Create(k) | Act::Rely(k) => Some(k),
            Act::Forget => None,
        };
        let code = outcome.as_ref().err().map(|e| e.code.as_str());
        if let Err(e) = &outcome
            && code == Some("STORE_CONTENDED")
            && e.message.contains("kept changing")
        {
            // The claim kept changing: `STORE_CONTENDED`, the step failed.
            self.c.takes_contended += 1;
        }
        match (pc, outcome) {
            (Pc::DestroyForget(i), Ok(a)) => {
                let run = &mut self.runs[r];
                run.view = kinds_of(a.receipt.as_ref().unwrap_or(&Value::Null));
                run.pc = Pc::DestroyForget(i + 1);
            }
            (Pc::Act(i, Stage::Check), Ok(a)) => {
                let create = matches!(rp.acts[i], Act::Create(_));
                self.c.adoptions += u64::from(!create && a.adopted);
                let run = &mut self.runs[r];
                if let Some(receipt) = &a.receipt {
                    run.view = kinds_of(receipt);
                }
                let relation = a.relation.as_deref().unwrap_or("?");
                let created_by = a.created_by.as_deref().unwrap_or("");
                run.pc = match (create, relation, created_by) {
                    (false, ..) => next(i),
                    (true, "none", _) => Pc::Act(i, Stage::Take { record: false }),
                    (true, "own" | "inherited", "intent") => {
                        // An intent left by a crashed run: the adapter resolves it and records it.
                        self.c.intents_claimed += 1;
                        Pc::Act(i, Stage::Take { record: true })
                    }
                    (true, "own" | "inherited", _) => next(i),
                    (true, other, _) => {
                        let detail = format!("run-{r}: ledger check --change answered relation {other:?}");
                        return Err(self.fail(HOST, detail));
                    }
                };
            }
            (Pc::Act(i, Stage::Check), Err(_)) if code == Some("OWNED_BY_OTHER_SCOPE") => {
                self.c.refused_creates += 1;
                if self.plan.sabotage == Sabotage::IgnoreRefusal {
                    self.note(r, What::Decide("creates anyway", key(i)));
                    self.runs[r].pc = Pc::Act(i, Stage::Intend);
                } else {
                    self.note(r, What::Decide("skips the create of", key(i)));
                    self.runs[r].pc = next(i);
                }
            }
            (Pc::Act(i, Stage::Take { record }), Ok(a)) => {
                let run = &mut self.runs[r];
                run.view = kinds_of(a.receipt.as_ref().unwrap_or(&Value::Null));
                if record {
                    run.pc = next(i);
                } else {
                    run.intents_sent += 1;
                    run.pc = Pc::Act(i, Stage::Take { record: true });
                    if rp.crash_after_intend && run.intents_sent == 1 {
                        self.c.crashes_after_intent += 1;
                        self.crash(r);
                    }
                }
            }
            (Pc::Act(i, Stage::Take { record }), Err(_)) if code == Some("OWNED_BY_OTHER_SCOPE") => {
                let run = &mut self.runs[r];
                if self.plan.sabotage == Sabotage::IgnoreRefusal {
                    run.pc = Pc::Act(i, if record { Stage::Record } else { Stage::Intend });
                    self.note(r, What::Decide("creates anyway", key(i)));
                } else if record {
                    // `baton ledger record` refused: the command fails (its intent stays for a later run).
                    run.failed = true;
                    run.pc = Pc::Exit;
                } else {
                    run.pc = next(i);
                    self.note(r, What::Decide("skips the create of", key(i)));
                }
            }
            (Pc::Act(i, Stage::Forget(_)), Ok(a)) => {
                let run = &mut self.runs[r];
                run.view = kinds_of(a.receipt.as_ref().unwrap_or(&Value::Null));
                run.pc = next(i);
            }
            // A step failed: the command exits 1.
            (Pc::Act(..) | Pc::DestroyForget(_), Err(_)) => {
                let run = &mut self.runs[r];
                run.failed = true;
                run.pc = Pc::Exit;
            }
            (pc, outcome) => {
                return Err(self.fail(HOST, format!("run-{r}: the change ended at {pc:?}: {outcome:?}")));
            }
        }
        Ok(())
    }

    /// What the command does with a reply.
    pub(crate) fn on_reply(&mut self, r: usize, outcome: Outcome) -> Result<(), Failure> {
        if self.runs[r].change.in_flight.is_some() {
            return self.on_change_reply(r, outcome);
        }
        let pc = self.runs[r].pc;
        let next = |i: usize| Pc::Act(i + 1, Stage::List);
        match (pc, outcome) {
            (Pc::Act(i, Stage::Intend), Ok(Reply::Written { receipt, .. })) => {
                let run = &mut self.runs[r];
                run.view = kinds_of(&receipt);
                run.pc = Pc::Act(i, Stage::Take { record: true });
            }
            (Pc::Act(i, Stage::Record), Ok(Reply::Written { receipt, .. })) => {
                let run = &mut self.runs[r];
                run.view = kinds_of(&receipt);
                run.pc = next(i);
            }
            // A step failed: the command exits 1.
            (Pc::Act(..), Err(_)) => {
                let run = &mut self.runs[r];
                run.failed = true;
                run.pc = Pc::Exit;
            }
            (pc, outcome) => {
                return Err(self.fail(HOST, format!("run-{r}: unexpected reply at {pc:?}: {outcome:?}")));
            }
        }
        let think = self.plan.think.sample(&mut self.rng);
        self.schedule_step(r, think);
        Ok(())
    }

    /// A reply to the machine's action: reported to it, and its next action goes out at once (one
    /// `baton ledger` call). A take that just decided `taken`/`restamped` before the intent may be where
    /// the command is killed.
    fn on_change_reply(&mut self, r: usize, outcome: Outcome) -> Result<(), Failure> {
        let change = &mut self.runs[r].change;
        let (Some((id, list)), Some(m)) = (change.in_flight.take(), change.m.as_mut()) else {
            return Err(self.fail(HOST, format!("run-{r}: a change reply without a change")));
        };
        let claimed_before = m.claimed();
        let error = |code: &'static str| CoreError::new(ErrorCode::parse(code).unwrap_or(ErrorCode::Internal), code);
        let reported = match outcome {
            Ok(Reply::List(listing, seq)) if list => {
                let check = matches!(self.runs[r].pc, Pc::Act(_, Stage::Check));
                let run = &mut self.runs[r];
                if check {
                    run.list.clone_from(&listing);
                    run.list_seq = seq;
                } else {
                    self.c.claim_listings += 1;
                }
                let m = self.runs[r].change.m.as_mut().expect("the machine");
                m.handle_listing(id, Ok(listing))
            }
            Ok(Reply::Applied) if !list => m.handle_outcome(id, Ok(())),
            Err(code) if list => m.handle_listing(id, Err(error(code))),
            Err(code) => m.handle_outcome(id, Err(error(code))),
            Ok(other) => return Err(self.fail(HOST, format!("run-{r}: a change got {other:?}"))),
        };
        if let Err(e) = reported {
            return Err(self.fail(HOST, format!("run-{r}: the change refused its outcome: {e}")));
        }
        let claimed = self.runs[r].change.m.as_ref().and_then(ChangeMachine::claimed);
        if claimed_before.is_none()
            && let Some(outcome) = claimed
        {
            let stale = self.runs[r].change.taken_from;
            let counter = match outcome {
                "held" => &mut self.c.claims_held,
                "taken" if stale => &mut self.c.stale_claims_taken,
                "taken" => &mut self.c.claims_taken,
                "restamped" => &mut self.c.claims_restamped,
                _ => &mut self.c.claims_inherited,
            };
            *counter += 1;
            let rp = &self.plan.runs[r];
            let run = &mut self.runs[r];
            if matches!(run.pc, Pc::Act(_, Stage::Take { record: false })) {
                run.claims_sent += 1;
                if rp.crash_after_claim && run.claims_sent == 1 && matches!(outcome, "taken" | "restamped") {
                    // Killed between the claim and the intent: the claim is stale once the lock moves on.
                    self.c.crashes_after_claim += 1;
                    self.runs[r].change = ChangeState::default();
                    self.crash(r);
                    return Ok(());
                }
            }
        }
        self.advance(r)
    }

    /// A command's operation reaching the store: executed as one cell transaction at its commit time.
    pub(crate) fn work_commit(&mut self, r: usize, id: u64, op: Op) -> Result<(), Failure> {
        let (commit, lost) = self.fault();
        let deliver_at = self.now + self.plan.deliver_lat.sample(&mut self.rng);
        let name = op.name();
        let mut outcome = Err("STORE_CONTENDED");
        if commit {
            outcome = self.work_exec(r, &op)?;
        }
        if lost {
            self.c.lost_replies += u64::from(commit);
            self.c.failed_commits += u64::from(!commit);
            if !commit {
                let cell = self.plan.runs[r].scope;
                self.note(r, What::Commit { op: name, cell, result: "not committed", fault: "", ledger: 0, seq: 0 });
            }
            outcome = Err("INTERNAL");
        }
        self.push(deliver_at, Ev::WorkReply { r, id, name, outcome });
        Ok(())
    }

    /// The command's operations: the machine's loads and listings, and (sabotage) its direct ledger calls
    /// through their Rust functions, fenced with the holder and epoch the machine exported.
    pub(crate) fn work_exec(&mut self, r: usize, op: &Op) -> Result<Outcome, Failure> {
        let now_ms = self.wall(r);
        let scope = self.plan.runs[r].scope;
        let name = op.name();
        let (mut holder, mut epoch) = self.runs[r].fence.clone();
        let sender = (holder.clone(), epoch);
        let cell = &self.cells[scope];
        let written = match op {
            Op::Change { load: None, .. } => {
                let list = (0..3)
                    .map(|s| OtherScope {
                        scope: SCOPES[s].into(),
                        text: self.cells[s].file(LATEST).map(str::to_owned),
                    })
                    .collect();
                self.note(r, What::Commit { op: name, cell: scope, result: "read", fault: "", ledger: 0, seq: 0 });
                return Ok(Ok(Reply::List(list, self.commits)));
            }
            Op::Change { key, id, load: Some(load), .. } => {
                return self.change_exec(r, *key, *id, load, now_ms, sender);
            }
            Op::Intend(k) | Op::Record(k) => {
                if self.plan.sabotage == Sabotage::ForgedFence
                    && let Ok(Some(l)) = lock::parse_lock(cell)
                {
                    (holder, epoch) = (l.holder, l.epoch);
                }
                let id = format!("id-{r}-{k}-{}", self.commits + 1);
                match op {
                    Op::Intend(_) => ownership::intend(cell, &holder, epoch, now_ms, &resource(*k)),
                    _ => ownership::record(cell, &holder, epoch, now_ms, &resource(*k), &id, None),
                }
            }
            _ => return Err(self.fail(HOST, format!("run-{r}: the command does not send {name}"))),
        };
        let w = match written {
            Ok(w) => w,
            Err(e) => {
                let code = e.code.as_str();
                if code == "INTERNAL" || code == "USAGE" {
                    return Err(self.fail(HOST, format!("run-{r}: {name} answered {code}: {e}")));
                }
                self.c.writes_refused += u64::from(code == "LOCK_LOST");
                self.note(r, What::Commit { op: name, cell: scope, result: code, fault: "", ledger: 0, seq: 0 });
                return Ok(Err(code));
            }
        };
        let receipt = w.receipt_value();
        self.observe_write(r, scope, op, &w.changes, &receipt, (&sender.0, sender.1))?;
        Ok(Ok(Reply::Written { receipt }))
    }

    /// One load of the run's ownership change machine: `apply` on the cell as it is at this commit, its
    /// changes committed in the same step (one compare-and-swap), through the checks of what lands.
    fn change_exec(
        &mut self,
        r: usize,
        k: u8,
        id: u64,
        load: &Load,
        now_ms: i64,
        sender: (String, u64),
    ) -> Result<Outcome, Failure> {
        let scope = self.plan.runs[r].scope;
        let claim = load.env == claims::CLAIMS_ENV;
        let c = if claim {
            CLAIM0 + usize::from(k)
        } else {
            match SCOPES.iter().position(|s| *s == load.scope) {
                Some(c) => c,
                None => return Err(self.fail(HOST, format!("run-{r}: the change loads {}/{}", load.env, load.scope))),
            }
        };
        let Some(m) = self.runs[r].change.m.as_mut() else {
            return Err(self.fail(HOST, format!("run-{r}: a load without a change")));
        };
        let name = m.operation(id).unwrap_or("?");
        let op_kind = m.config_op().clone();
        let applied = m.apply(id, &self.cells[c], now_ms);
        let changes = match applied {
            Ok(changes) => changes,
            Err(e) => {
                let code = e.code.as_str();
                if code == "INTERNAL" || code == "USAGE" {
                    return Err(self.fail(HOST, format!("run-{r}: {name} answered {code}: {e}")));
                }
                self.c.writes_refused += u64::from(code == "LOCK_LOST");
                let live = e.details.contains_key("claimEpoch");
                if name == "claim-take" && code == "OWNED_BY_OTHER_SCOPE" {
                    self.c.refused_by_live_claim += u64::from(live);
                    self.c.refused_by_ledger += u64::from(!live);
                }
                let result = if live { "OWNED_BY_OTHER_SCOPE (a live claim)" } else { code };
                self.note(r, What::Commit { op: name, cell: c, result, fault: "", ledger: 0, seq: 0 });
                return Ok(Err(code));
            }
        };
        if !load.write && !changes.is_empty() {
            return Err(self.fail(HOST, format!("run-{r}: the read {name} answered changes")));
        }
        if name == "claim-facts" {
            self.c.claim_facts_read += 1;
        }
        if claim {
            let written = changes.iter().find_map(|ch| match ch {
                Change::Write { content, .. } => serde_json::from_str::<Value>(content).ok(),
                Change::Delete { .. } => None,
            });
            if name == "claim-take" {
                self.runs[r].change.taken_from = written.as_ref().is_some_and(|w| w.get("takenFrom").is_some());
            }
            if name == "claim-free" {
                let freed = !changes.is_empty();
                self.c.claims_freed += u64::from(freed);
                self.c.frees_noop += u64::from(!freed);
            }
            let result = if changes.is_empty() { "ok (nothing to write)" } else { "written" };
            self.note(r, What::Commit { op: name, cell: c, result, fault: "", ledger: 0, seq: 0 });
            if !changes.is_empty() {
                self.cells[c].apply(&changes);
                self.claim_landed(c)?;
            }
            return Ok(Ok(Reply::Applied));
        }
        if changes.is_empty() {
            let result = if load.write { "ok (nothing to write)" } else { "read" };
            self.note(r, What::Commit { op: name, cell: c, result, fault: "", ledger: 0, seq: 0 });
            return Ok(Ok(Reply::Applied));
        }
        if c != scope {
            return Err(self.fail(HOST, format!("run-{r}: the change wrote {}", SCOPES[c])));
        }
        let op = match op_kind {
            ChangeOp::Intend => Op::Intend(k),
            ChangeOp::Record { .. } => Op::Record(k),
            ChangeOp::Forget => Op::Forget(k),
            ChangeOp::Check { change } => Op::Check { key: k, change },
        };
        let receipt = changes
            .iter()
            .find_map(|ch| match ch {
                Change::Write { file, content } if file == LATEST => serde_json::from_str::<Value>(content).ok(),
                _ => None,
            })
            .unwrap_or(Value::Null);
        self.observe_write(r, scope, &op, &changes, &receipt, (&sender.0, sender.1))?;
        Ok(Ok(Reply::Applied))
    }
}
