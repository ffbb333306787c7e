//! The simulated command of a succession run (the adapter): what it does between `start-work` and its
//! exit, with the holder and epoch the machine exported, and how it takes the machine's signals. Its
//! ledger calls are the command's own (`baton ledger ...` in a real command), made through their Rust
//! functions.

use super::succession::{Act, BRANCH, CLAIM0, ENV, HOST, LATEST, MAX_KEYS, PR7, PR8, SCOPES, Sabotage};
use super::succession_checks::{INTENT, NONE, OWNED, key_of, kinds_of, owns};
use super::succession_host::{Ev, Op, What, Work, World};
use super::world::Failure;
use baton_core::CoreError;
use baton_core::cell::Change;
use baton_core::claims::{self, ClaimFacts, TakeRequest};
use baton_core::lock;
use baton_core::ownership::{self, OtherScope, Resource};
use baton_core::run::{WorkEnd, WorkSignal};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

#[derive(Debug)]
pub(crate) enum Reply {
    List(Vec<OtherScope>, u64),
    Written {
        receipt: Value,
        facts: Map<String, Value>,
    },
    /// `claim-take` needs something first.
    Need(Need),
    /// `claim-take` decided (`held`, `taken`, `restamped`, `inherited`).
    Taken(&'static str),
    /// `claim-facts` read.
    Facts(ClaimFacts),
    /// `claim-free` ran.
    Freed,
}

/// What a `claim-take` in progress sends next: the take itself, the listing it needs, or a read of the
/// claiming scope's cell (scope index, claim epoch).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum Need {
    #[default]
    Take,
    /// The listing, asked for at this generation of the claim cell.
    Others(u64),
    /// The claimer's cell, the claim epoch, and whether the core asked to read it with this run's scope as
    /// `pending` (it lists the key itself).
    Facts(usize, u64, bool),
}

/// A `claim-take` in progress, as the CLI's `claim::take` loop keeps it: the needs answered so far and the
/// takes sent (at most [`MAX_TAKES`], then `STORE_CONTENDED`).
#[derive(Clone, Debug, Default)]
pub(crate) struct TakeState {
    pub(crate) others: Option<Vec<OtherScope>>,
    /// The claim cell's generation the listing was asked for at.
    pub(crate) listed_at: Option<u64>,
    pub(crate) facts: Option<ClaimFacts>,
    pub(crate) need: Need,
    pub(crate) takes: u8,
}

/// The CLI's (and Node's) `MAX_ROUNDS`.
const MAX_TAKES: u8 = 8;

pub(crate) type Outcome = Result<Reply, &'static str>;

/// Where the adapter's program is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Pc {
    Idle,
    /// Action `i`: list, then check, claim, intend, claim, record; or forget, free.
    Act(usize, Stage),
    DestroyForget(usize),
    /// The claim of the destroy's `i`-th resource goes after its forget.
    DestroyFree(usize),
    Exit,
    Over,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Stage {
    List,
    Check,
    /// `claim-take` with its needs: before the intent (`record` false, the `baton ledger intend`), or
    /// before the record (the `baton ledger record`, after the provider's create).
    Take {
        record: bool,
    },
    Intend,
    Record,
    Forget(u8),
    Free(u8),
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
            match run.pc {
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
                    let op = match (act, stage) {
                        (Act::Forget, Stage::Free(k)) => Op::Free(k),
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
                            Op::Forget(k)
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
                        (_, Stage::List) => Op::List,
                        (Act::Create(k), Stage::Check) => Op::Check { key: k, change: true },
                        (Act::Rely(k), Stage::Check) => Op::Check { key: k, change: false },
                        (Act::Create(k), Stage::Take { record }) => {
                            if record && run.take.need == Need::Take && run.take.takes == 0 {
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
                            match run.take.need {
                                Need::Take if run.take.takes >= MAX_TAKES => {
                                    // The claim kept changing: `STORE_CONTENDED`, the step failed.
                                    run.take = TakeState::default();
                                    run.failed = true;
                                    run.pc = Pc::Exit;
                                    self.c.takes_contended += 1;
                                    continue;
                                }
                                Need::Take => {
                                    run.take.takes += 1;
                                    Op::Take(k)
                                }
                                Need::Others(_) => Op::List,
                                Need::Facts(scope, epoch, pending) => Op::Facts(k, scope, epoch, pending),
                            }
                        }
                        (Act::Create(k), Stage::Intend) => Op::Intend(k),
                        (Act::Create(k), Stage::Record) => Op::Record(k),
                        (act, stage) => {
                            return Err(self.fail(HOST, format!("run-{r}: no step for {act:?} at {stage:?}")));
                        }
                    };
                    self.work_send(r, op);
                    return Ok(());
                }
                Pc::DestroyForget(i) => {
                    let Some(&k) = run.delete.get(i) else {
                        run.pc = Pc::Exit;
                        continue;
                    };
                    self.exists[usize::from(k)] = false;
                    self.zombie[usize::from(k)] = false;
                    self.disowned[usize::from(k)] = false;
                    self.work_send(r, Op::Forget(k));
                    return Ok(());
                }
                Pc::DestroyFree(i) => {
                    let k = run.delete[i];
                    self.work_send(r, Op::Free(k));
                    return Ok(());
                }
            }
        }
    }

    /// What the command does with a reply.
    pub(crate) fn on_reply(&mut self, r: usize, outcome: Outcome) -> Result<(), Failure> {
        let plan = self.plan;
        let rp = &plan.runs[r];
        let pc = self.runs[r].pc;
        let next = |i: usize| Pc::Act(i + 1, Stage::List);
        match (pc, outcome) {
            (Pc::DestroyForget(i), Ok(Reply::Written { receipt, .. })) => {
                let run = &mut self.runs[r];
                run.view = kinds_of(&receipt);
                run.pc = Pc::DestroyFree(i);
            }
            (Pc::DestroyFree(i), Ok(Reply::Freed)) => self.runs[r].pc = Pc::DestroyForget(i + 1),
            // A take's need, and its answer: the next round goes out at once (one `baton ledger` call).
            (Pc::Act(_, Stage::Take { .. }), Ok(Reply::Need(need))) => {
                self.runs[r].take.need = need;
                return self.advance(r);
            }
            (Pc::Act(_, Stage::Take { .. }), Ok(Reply::List(list, _))) => {
                self.c.claim_listings += 1;
                let take = &mut self.runs[r].take;
                take.others = Some(list);
                take.listed_at = match take.need {
                    Need::Others(generation) => Some(generation),
                    _ => None,
                };
                take.need = Need::Take;
                return self.advance(r);
            }
            (Pc::Act(_, Stage::Take { .. }), Ok(Reply::Facts(facts))) => {
                self.c.claim_facts_read += 1;
                let take = &mut self.runs[r].take;
                take.facts = Some(facts);
                // The listing a stale judgement relies on is read after the claimer's facts (the hosts'
                // loops do the same): one read before them can miss a pull request's inherited copy
                // written since (simulation seed 33496).
                take.others = None;
                take.listed_at = None;
                take.need = Need::Take;
                return self.advance(r);
            }
            (Pc::Act(i, Stage::Take { record }), Ok(Reply::Taken(outcome))) => {
                let run = &mut self.runs[r];
                run.take = TakeState::default();
                if record {
                    run.pc = Pc::Act(i, Stage::Record);
                } else {
                    run.pc = Pc::Act(i, Stage::Intend);
                    run.claims_sent += 1;
                    if rp.crash_after_claim && run.claims_sent == 1 && matches!(outcome, "taken" | "restamped") {
                        // Killed between the claim and the intent: the claim is stale once the lock moves on.
                        self.c.crashes_after_claim += 1;
                        self.crash(r);
                        return Ok(());
                    }
                }
            }
            (Pc::Act(i, Stage::Take { record }), Err("OWNED_BY_OTHER_SCOPE")) => {
                let k = match rp.acts[i] {
                    Act::Create(k) | Act::Rely(k) => Some(k),
                    Act::Forget => None,
                };
                let run = &mut self.runs[r];
                run.take = TakeState::default();
                if self.plan.sabotage == Sabotage::IgnoreRefusal {
                    run.pc = Pc::Act(i, if record { Stage::Record } else { Stage::Intend });
                    self.note(r, What::Decide("creates anyway", k));
                } else if record {
                    // `baton ledger record` refused: the command fails (its intent stays for a later run).
                    run.failed = true;
                    run.pc = Pc::Exit;
                } else {
                    run.pc = next(i);
                    self.note(r, What::Decide("skips the create of", k));
                }
            }
            (Pc::Act(i, Stage::List), Ok(Reply::List(list, seq))) => {
                let run = &mut self.runs[r];
                run.list = list;
                run.list_seq = seq;
                run.pc = Pc::Act(i, Stage::Check);
            }
            (Pc::Act(i, Stage::Check), Ok(Reply::Written { receipt, facts })) => {
                let create = matches!(rp.acts[i], Act::Create(_));
                let run = &mut self.runs[r];
                if !receipt.is_null() {
                    run.view = kinds_of(&receipt);
                }
                let relation = facts.get("relation").and_then(Value::as_str).unwrap_or("?");
                let created_by = facts.get("createdBy").and_then(Value::as_str).unwrap_or("");
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
                        let detail = format!("run-{r}: ledger-check change=true answered relation {other:?}");
                        return Err(self.fail(HOST, detail));
                    }
                };
            }
            (Pc::Act(i, Stage::Check), Err("OWNED_BY_OTHER_SCOPE")) => {
                self.c.refused_creates += 1;
                let k = match rp.acts[i] {
                    Act::Create(k) | Act::Rely(k) => Some(k),
                    Act::Forget => None,
                };
                if self.plan.sabotage == Sabotage::IgnoreRefusal {
                    self.note(r, What::Decide("creates anyway", k));
                    self.runs[r].pc = Pc::Act(i, Stage::Intend);
                } else {
                    self.note(r, What::Decide("skips the create of", k));
                    self.runs[r].pc = next(i);
                }
            }
            (Pc::Act(i, Stage::Intend), Ok(Reply::Written { receipt, .. })) => {
                let run = &mut self.runs[r];
                run.view = kinds_of(&receipt);
                run.intents_sent += 1;
                run.pc = Pc::Act(i, Stage::Take { record: true });
                if rp.crash_after_intend && run.intents_sent == 1 {
                    self.c.crashes_after_intent += 1;
                    self.crash(r);
                    return Ok(());
                }
            }
            (Pc::Act(i, Stage::Record), Ok(Reply::Written { receipt, .. })) => {
                let run = &mut self.runs[r];
                run.view = kinds_of(&receipt);
                run.pc = next(i);
            }
            (Pc::Act(i, Stage::Forget(k)), Ok(Reply::Written { receipt, .. })) => {
                let run = &mut self.runs[r];
                run.view = kinds_of(&receipt);
                run.pc = Pc::Act(i, Stage::Free(k));
            }
            (Pc::Act(i, Stage::Free(_)), Ok(Reply::Freed)) => self.runs[r].pc = next(i),
            // A step failed: the command exits 1.
            (Pc::Act(..) | Pc::DestroyForget(_) | Pc::DestroyFree(_), _) => {
                let run = &mut self.runs[r];
                run.take = TakeState::default();
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

    /// The command's ledger calls, through their Rust functions (the JSON layer is the corpus's), fenced with
    /// the holder and epoch the machine exported.
    pub(crate) fn work_exec(&mut self, r: usize, op: &Op) -> Result<Outcome, Failure> {
        let now_ms = self.wall(r);
        let scope = self.plan.runs[r].scope;
        let name = op.name();
        if let Op::List = op {
            let list = (0..3)
                .map(|s| OtherScope { scope: SCOPES[s].into(), text: self.cells[s].file(LATEST).map(str::to_owned) })
                .collect();
            self.note(r, What::Commit { op: name, cell: scope, result: "read", fault: "", ledger: 0, seq: 0 });
            return Ok(Ok(Reply::List(list, self.commits)));
        }
        let (mut holder, mut epoch) = self.runs[r].fence.clone();
        let sender = (holder.clone(), epoch);
        if let Op::Take(_) | Op::Facts(..) | Op::Free(_) = op {
            return self.claim_exec(r, op, now_ms, sender);
        }
        if self.plan.sabotage == Sabotage::ForgedFence
            && let Ok(Some(l)) = lock::parse_lock(&self.cells[scope])
        {
            (holder, epoch) = (l.holder, l.epoch);
        }
        let cell = &self.cells[scope];
        let answer = match op {
            Op::Intend(k) => ownership::intend(cell, &holder, epoch, now_ms, &resource(*k))
                .map(|w| (w.changes.clone(), w.receipt_value(), w.facts)),
            Op::Record(k) => {
                let id = format!("id-{r}-{k}-{}", self.commits + 1);
                ownership::record(cell, &holder, epoch, now_ms, &resource(*k), &id, None)
                    .map(|w| (w.changes.clone(), w.receipt_value(), w.facts))
            }
            Op::Forget(k) => ownership::forget(cell, &holder, epoch, now_ms, &resource(*k))
                .map(|w| (w.changes.clone(), w.receipt_value(), w.facts)),
            Op::Check { key, change } => ownership::check(
                cell,
                Some((&holder, epoch)),
                now_ms,
                &resource(*key),
                *change,
                &self.runs[r].list,
                predecessor(scope),
            )
            .and_then(|mut v| {
                let changes: Vec<Change> = serde_json::from_value(v["changes"].take())
                    .map_err(|e| CoreError::internal(format!("check changes: {e}")))?;
                let receipt = v.get_mut("receipt").map(Value::take).unwrap_or(Value::Null);
                let Value::Object(facts) = v else { return Err(CoreError::internal("check answer")) };
                Ok((changes, receipt, facts))
            }),
            _ => return Err(self.fail(HOST, format!("run-{r}: the command does not send {name}"))),
        };
        let (changes, receipt, facts) = match answer {
            Ok(a) => a,
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
        if changes.is_empty() {
            self.note(
                r,
                What::Commit { op: name, cell: scope, result: "ok (nothing to write)", fault: "", ledger: 0, seq: 0 },
            );
        } else {
            self.observe_write(r, scope, op, &changes, &receipt, (&sender.0, sender.1))?;
        }
        if matches!(op, Op::Check { change: false, .. }) && facts.get("adopted") == Some(&Value::Bool(true)) {
            self.c.adoptions += 1;
        }
        Ok(Ok(Reply::Written { receipt, facts }))
    }
}

impl World<'_> {
    /// The adapter's claim calls (`claim-take`, `claim-facts`, `claim-free`), through their Rust functions,
    /// as the run (`sender`: the exported holder and epoch) makes them.
    fn claim_exec(&mut self, r: usize, op: &Op, now_ms: i64, sender: (String, u64)) -> Result<Outcome, Failure> {
        let scope = self.plan.runs[r].scope;
        let name = op.name();
        let fail = |w: &Self, e: CoreError| w.fail(HOST, format!("run-{r}: {name} answered {}: {e}", e.code.as_str()));
        match *op {
            Op::Facts(k, s, epoch, pending) => {
                let pending = pending.then_some(SCOPES[scope]);
                let facts = claims::facts(&self.cells[s], &resource(k), epoch, pending).map_err(|e| fail(self, e))?;
                self.note(r, What::Commit { op: name, cell: s, result: "read", fault: "", ledger: 0, seq: 0 });
                Ok(Ok(Reply::Facts(facts)))
            }
            Op::Free(k) => {
                let c = CLAIM0 + usize::from(k);
                let answer = claims::free(&self.cells[c], now_ms, ENV, SCOPES[scope], sender.1, &resource(k), false)
                    .map_err(|e| fail(self, e))?;
                let freed = answer["freed"] == Value::Bool(true);
                self.c.claims_freed += u64::from(freed);
                self.c.frees_noop += u64::from(!freed);
                let result = if freed { "freed" } else { "ok (not this run's claim)" };
                self.apply_claim(r, c, name, &answer, result)?;
                Ok(Ok(Reply::Freed))
            }
            Op::Take(k) => {
                let c = CLAIM0 + usize::from(k);
                let take = std::mem::take(&mut self.runs[r].take);
                let request = TakeRequest {
                    env: ENV.into(),
                    scope: SCOPES[scope].into(),
                    holder: sender.0,
                    epoch: sender.1,
                    resource: resource(k),
                    predecessor: predecessor(scope).map(str::to_owned),
                    others: take.others,
                    listed_at: take.listed_at,
                    facts: take.facts,
                    dry_run: false,
                };
                let answer = claims::take(&self.cells[c], now_ms, &request);
                self.runs[r].take =
                    TakeState { others: request.others, listed_at: request.listed_at, facts: request.facts, ..take };
                let answer = match answer {
                    Ok(a) => a,
                    Err(e) if e.code.as_str() == "OWNED_BY_OTHER_SCOPE" => {
                        let live = e.details.contains_key("claimEpoch");
                        self.c.refused_by_live_claim += u64::from(live);
                        self.c.refused_by_ledger += u64::from(!live);
                        let result = if live { "OWNED_BY_OTHER_SCOPE (a live claim)" } else { "OWNED_BY_OTHER_SCOPE" };
                        self.note(r, What::Commit { op: name, cell: c, result, fault: "", ledger: 0, seq: 0 });
                        return Ok(Err("OWNED_BY_OTHER_SCOPE"));
                    }
                    // A newer run of this scope claimed it: this run's lease was taken over (as a fenced write's).
                    Err(e) if e.code.as_str() == "LOCK_LOST" => {
                        self.c.writes_refused += 1;
                        self.note(
                            r,
                            What::Commit { op: name, cell: c, result: "LOCK_LOST", fault: "", ledger: 0, seq: 0 },
                        );
                        return Ok(Err("LOCK_LOST"));
                    }
                    Err(e) => return Err(fail(self, e)),
                };
                if let Some(need) = answer.get("need") {
                    let need = match need["type"].as_str() {
                        Some("others") => Need::Others(need["generation"].as_u64().unwrap_or(0)),
                        Some("facts") => {
                            let owner = need["cell"]["scope"].as_str().unwrap_or_default();
                            let Some(s) = SCOPES.iter().position(|x| *x == owner) else {
                                return Err(self.fail(HOST, format!("run-{r}: claim-take needs facts of {need}")));
                            };
                            let pending = need["request"]["pending"].as_str() == Some(SCOPES[scope]);
                            Need::Facts(s, need["request"]["claimEpoch"].as_u64().unwrap_or(0), pending)
                        }
                        _ => return Err(self.fail(HOST, format!("run-{r}: claim-take needs {need}"))),
                    };
                    let result =
                        if matches!(need, Need::Others(_)) { "needs the listing" } else { "needs the claimer's facts" };
                    self.note(r, What::Commit { op: name, cell: c, result, fault: "", ledger: 0, seq: 0 });
                    return Ok(Ok(Reply::Need(need)));
                }
                let stale = answer["claim"].get("takenFrom").is_some();
                let outcome = match answer["outcome"].as_str() {
                    Some("held") => "held",
                    Some("taken") => "taken",
                    Some("restamped") => "restamped",
                    Some("inherited") => "inherited",
                    other => return Err(self.fail(HOST, format!("run-{r}: claim-take decided {other:?}"))),
                };
                let counter = match outcome {
                    "held" => &mut self.c.claims_held,
                    "taken" if stale => &mut self.c.stale_claims_taken,
                    "taken" => &mut self.c.claims_taken,
                    "restamped" => &mut self.c.claims_restamped,
                    _ => &mut self.c.claims_inherited,
                };
                *counter += 1;
                let result = if stale { "taken (a stale claim)" } else { outcome };
                self.apply_claim(r, c, name, &answer, result)?;
                Ok(Ok(Reply::Taken(outcome)))
            }
            _ => Err(self.fail(HOST, format!("run-{r}: {name} is not a claim call"))),
        }
    }

    /// Applies a claim transaction's `changes` to claim cell `c` (one compare-and-swap at this commit).
    fn apply_claim(
        &mut self,
        r: usize,
        c: usize,
        name: &'static str,
        answer: &Value,
        result: &'static str,
    ) -> Result<(), Failure> {
        let changes: Vec<Change> = match serde_json::from_value(answer["changes"].clone()) {
            Ok(ch) => ch,
            Err(e) => return Err(self.fail(HOST, format!("run-{r}: the changes of {name} do not parse: {e}"))),
        };
        self.note(r, What::Commit { op: name, cell: c, result, fault: "", ledger: 0, seq: 0 });
        if changes.is_empty() {
            return Ok(());
        }
        self.cells[c].apply(&changes);
        self.claim_landed(c)
    }
}
