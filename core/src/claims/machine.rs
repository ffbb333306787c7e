//! The ownership change protocol as a sans-I/O machine: one ledger change of a run's scope, with its claim.
//!
//! Every host (the CLI, the npm package, any component host, the simulation) drives the same machine:
//! 1. take the next action with [`ChangeMachine::poll_action`];
//! 2. [`ChangeAction::Load`]: load the cell and call [`ChangeMachine::apply`] with the snapshot and the wall
//!    clock; commit the changes it returns with one compare-and-swap (`write`) or only read (`!write`), and
//!    report with [`ChangeMachine::handle_outcome`] (the store's error, or the refusal `apply` returned);
//!    a host whose stores take core operation names instead runs [`ChangeMachine::json_request`] and reports
//!    the answer with [`ChangeMachine::handle_answer`];
//! 3. [`ChangeAction::List`]: list the environment and report with [`ChangeMachine::handle_listing`];
//! 4. until [`ChangeAction::Done`] or [`ChangeAction::Failed`].
//!
//! The rules, here only (see `docs/claims.md`): intend and record take the claim first (the needs: the
//! listing, read after the claim cell's `generation`, carried as `listed_at`; the claimer's facts, after
//! which the listing is dropped so a stale claim is judged on a listing newer than them; at most
//! [`MAX_ROUNDS`] takes, then `STORE_CONTENDED`); a fenced write refused after the claim was `taken` gives
//! it back unless the run's own receipt shows the write landed after all; a forget frees the claim after the
//! fenced forget (a failure there is a warning); a check with `change` also asks the claim, read-only.

use super::change::{ChangeAction, ChangeAnswer, ChangeConfig, ChangeOp, Load};
use super::step::{Settled, Step};
use super::take::{ClaimFacts, TakeAnswer, TakeNeed, TakeRequest, facts, free_typed, take_typed};
use super::{claim_cell, steps};
use crate::cell::{Cell, Change};
use crate::error::{CoreError, ErrorCode};
use crate::ownership::OtherScope;
use crate::time::UnixMs;
use serde_json::Value;

/// More takes than this means the claim kept changing while it was read (each round is one read at most).
pub const MAX_ROUNDS: usize = 8;

/// One ownership change in progress (see the module).
#[derive(Clone, Debug)]
pub struct ChangeMachine {
    pub(crate) config: ChangeConfig,
    claim_cell: (String, String),
    next_id: u64,
    in_flight: Option<(u64, Step)>,
    stash: Option<Settled>,
    queued: Option<ChangeAction>,
    /// The take's gathered needs: the listing, the generation it was read after, the claimer's facts.
    pub(crate) others: Option<Vec<OtherScope>>,
    pub(crate) listed_at: Option<u64>,
    pending_generation: Option<u64>,
    pub(crate) facts: Option<ClaimFacts>,
    rounds: usize,
    /// The take only asks (a check with `change`).
    pub(crate) dry: bool,
    /// How the claim was got.
    taken: Option<&'static str>,
    /// The refused write a give-back is for.
    write_error: Option<CoreError>,
    answer: ChangeAnswer,
    over: bool,
}

impl ChangeMachine {
    /// A change; `USAGE` for a bad resource, or intend/record/forget without the fence (holder and epoch).
    /// Its first action is ready at once.
    pub fn new(config: ChangeConfig) -> Result<Self, CoreError> {
        config.resource.validate()?;
        let fenced = config.holder.as_deref().is_some_and(|h| !h.trim().is_empty()) && config.epoch.is_some();
        if !matches!(config.op, ChangeOp::Check { .. }) && !fenced {
            return Err(CoreError::usage(
                "a ledger change is a fenced write: it needs the run's holder and epoch (--holder, --epoch: BATON_HOLDER, BATON_EPOCH inside `baton run`)",
            ));
        }
        let r = &config.resource;
        let claim_cell = claim_cell(&config.env, &r.adapter, &r.provider, &r.key);
        let mut m = Self {
            config,
            claim_cell,
            next_id: 0,
            in_flight: None,
            stash: None,
            queued: None,
            others: None,
            listed_at: None,
            pending_generation: None,
            facts: None,
            rounds: 0,
            dry: false,
            taken: None,
            write_error: None,
            answer: ChangeAnswer::default(),
            over: false,
        };
        match m.config.op {
            ChangeOp::Intend | ChangeOp::Record { .. } => m.start_take(),
            ChangeOp::Forget => m.start(Step::Write),
            ChangeOp::Check { .. } => m.start(Step::CheckList),
        }
        Ok(m)
    }

    /// The next action (one at a time: the next comes after the outcome of this one); `None` while one is
    /// in flight and after `Done`/`Failed` was handed out.
    pub fn poll_action(&mut self) -> Option<ChangeAction> {
        self.queued.take()
    }

    /// The core operation that decides action `id` (`claim-take`, `claim-facts`, `claim-free`,
    /// `ledger-intend`, ..., `list` for a listing): for logs and traces.
    pub fn operation(&self, id: u64) -> Result<&'static str, CoreError> {
        Ok(match self.step_of(id)? {
            Step::Take => "claim-take",
            Step::TakeFacts { .. } | Step::OwnFacts => "claim-facts",
            Step::Free { .. } => "claim-free",
            Step::Write | Step::Check => self.config.op.ledger_op(),
            Step::TakeList | Step::CheckList => "list",
        })
    }

    /// How the claim was got (`held`, `taken`, `restamped`, `inherited`), once the take decided.
    pub fn claimed(&self) -> Option<&'static str> {
        self.taken
    }

    /// The change it makes.
    pub fn config_op(&self) -> &ChangeOp {
        &self.config.op
    }

    /// Whether the change is over (`Done` or `Failed` was queued).
    pub fn is_finished(&self) -> bool {
        self.over
    }

    /// Decides load `id` on `cell` (loaded now, `now` the wall clock): the changes to commit in one
    /// compare-and-swap (none for a read), or the refusal to report back (nothing is committed). Called
    /// again after a conflict, on the new snapshot; the last call counts. `INTERNAL` for an id not in
    /// flight or not a load.
    pub fn apply(&mut self, id: u64, cell: &Cell, now: UnixMs) -> Result<Vec<Change>, CoreError> {
        self.stash = None;
        let step = self.step_of(id)?.clone();
        let (changes, settled) = self.decide(&step, cell, now)?;
        self.stash = Some(settled);
        Ok(changes)
    }

    /// Reports how load `id` ended: committed (or read), or the store's error (a refusal `apply` returned
    /// comes back here too). `INTERNAL` for an id not in flight, or success before any `apply`.
    pub fn handle_outcome(&mut self, id: u64, outcome: Result<(), CoreError>) -> Result<(), CoreError> {
        let step = self.step_of(id)?.clone();
        match outcome {
            Ok(()) => {
                let settled = self.stash.take().ok_or_else(|| {
                    CoreError::internal(format!("ownership change: load {id} reported done before `apply`"))
                })?;
                self.in_flight = None;
                self.settle(step, settled);
            }
            Err(e) => {
                self.in_flight = None;
                self.refused(step, e);
            }
        }
        Ok(())
    }

    /// Reports listing `id`: the environment's scopes with their `latest.json`, or the store's error.
    pub fn handle_listing(&mut self, id: u64, listing: Result<Vec<OtherScope>, CoreError>) -> Result<(), CoreError> {
        let step = self.step_of(id)?.clone();
        self.in_flight = None;
        match listing {
            Ok(list) if step == Step::TakeList => {
                self.others = Some(list);
                self.listed_at = self.pending_generation.take();
                self.start_take();
            }
            Ok(list) => {
                self.others = Some(list);
                self.start(Step::Check);
            }
            Err(e) => self.fail(e),
        }
        Ok(())
    }

    /// For hosts whose stores run core operations by name (the npm package): the operation and request
    /// (without `cell` and `nowMs`) that decide load `id` as [`Self::apply`] would.
    pub fn json_request(&self, id: u64) -> Result<(&'static str, Value), CoreError> {
        let step = self.step_of(id)?;
        steps::json_request(&self.config, self.others.as_deref(), || self.take_request(), step)
    }

    /// [`Self::handle_outcome`] for a host that ran [`Self::json_request`]: the operation's answer, or its error.
    pub fn handle_answer(&mut self, id: u64, answer: Result<Value, CoreError>) -> Result<(), CoreError> {
        let step = self.step_of(id)?.clone();
        self.in_flight = None;
        match answer.and_then(|a| steps::parse_answer(&step, &a)) {
            Ok(settled) => self.settle(step, settled),
            Err(e) => self.refused(step, e),
        }
        Ok(())
    }

    fn step_of(&self, id: u64) -> Result<&Step, CoreError> {
        match &self.in_flight {
            Some((i, step)) if *i == id => Ok(step),
            _ => Err(CoreError::internal(format!("ownership change: {id} is not the action in flight"))),
        }
    }

    /// The claim cell, the run's cell, or the claimer's cell of a step, and whether it writes.
    fn load_of(&self, step: &Step) -> Load {
        let c = &self.config;
        let own = || (c.env.clone(), c.scope.clone());
        let claim = || self.claim_cell.clone();
        let ((env, scope), write) = match step {
            Step::Take => (claim(), !self.dry),
            Step::TakeFacts { scope, .. } => ((c.env.clone(), scope.clone()), false),
            Step::Write => (own(), true),
            Step::Free { .. } => (claim(), true),
            Step::OwnFacts => (own(), false),
            Step::Check => (own(), steps::fence(c).is_some()),
            Step::TakeList | Step::CheckList => (own(), false),
        };
        Load { id: self.next_id, env, scope, write }
    }

    fn start(&mut self, step: Step) {
        self.next_id += 1;
        let action = match step {
            Step::TakeList | Step::CheckList => ChangeAction::List { id: self.next_id, env: self.config.env.clone() },
            _ => ChangeAction::Load(self.load_of(&step)),
        };
        self.in_flight = Some((self.next_id, step));
        self.queued = Some(action);
    }

    fn start_take(&mut self) {
        if self.rounds >= MAX_ROUNDS {
            let r = &self.config.resource;
            self.fail(CoreError::new(
                ErrorCode::StoreContended,
                format!("the ownership claim of {} `{}` kept changing while it was read; try again", r.adapter, r.key),
            ));
            return;
        }
        self.rounds += 1;
        self.start(Step::Take);
    }

    fn done(&mut self) {
        self.over = true;
        self.queued = Some(ChangeAction::Done(std::mem::take(&mut self.answer)));
    }

    fn fail(&mut self, e: CoreError) {
        self.over = true;
        self.queued = Some(ChangeAction::Failed(e));
    }

    /// The typed decision of a load step on its snapshot.
    fn decide(&self, step: &Step, cell: &Cell, now: UnixMs) -> Result<(Vec<Change>, Settled), CoreError> {
        let c = &self.config;
        let res = &c.resource;
        match step {
            Step::Take => match take_typed(cell, now, &self.take_request())? {
                TakeAnswer::Need(need) => Ok((Vec::new(), Settled::Take(Err(need)))),
                TakeAnswer::Decided { outcome, changes, .. } => Ok((changes, Settled::Take(Ok(outcome)))),
            },
            Step::TakeFacts { claim_epoch, pending, .. } => {
                Ok((Vec::new(), Settled::Facts(facts(cell, res, *claim_epoch, pending.as_deref())?)))
            }
            Step::OwnFacts => Ok((Vec::new(), Settled::Facts(facts(cell, res, c.epoch.unwrap_or(0), None)?))),
            Step::Free { give_back } => {
                let (scope, epoch) = (&c.scope, c.epoch.unwrap_or(0));
                let freed = free_typed(cell, now, &c.env, scope, epoch, res, *give_back)?;
                Ok((freed.changes, Settled::Freed))
            }
            Step::Write | Step::Check => steps::ledger(&self.config, self.others.as_deref(), step, cell, now),
            Step::TakeList | Step::CheckList => {
                Err(CoreError::internal("ownership change: a listing is reported with handle_listing"))
            }
        }
    }

    /// The take as the claims rule reads it, with the needs gathered so far.
    pub(crate) fn take_request(&self) -> TakeRequest {
        let c = &self.config;
        TakeRequest {
            env: c.env.clone(),
            scope: c.scope.clone(),
            holder: c.holder.clone().unwrap_or_default(),
            epoch: c.epoch.unwrap_or(0),
            resource: c.resource.clone(),
            predecessor: c.predecessor.clone(),
            others: self.others.clone(),
            listed_at: self.listed_at,
            facts: self.facts.clone(),
            dry_run: self.dry,
        }
    }

    fn settle(&mut self, step: Step, settled: Settled) {
        match (step, settled) {
            (Step::Take, Settled::Take(Err(TakeNeed::Others { generation }))) => {
                self.pending_generation = Some(generation);
                self.start(Step::TakeList);
            }
            (Step::Take, Settled::Take(Err(TakeNeed::Facts { scope, claim_epoch, pending }))) => {
                self.start(Step::TakeFacts { scope, claim_epoch, pending });
            }
            (Step::Take, Settled::Take(Ok(outcome))) => {
                self.taken = Some(outcome);
                self.answer.claim = Some(outcome.to_owned());
                if matches!(self.config.op, ChangeOp::Check { .. }) {
                    self.done();
                } else {
                    self.start(Step::Write);
                }
            }
            (Step::TakeFacts { .. }, Settled::Facts(f)) => {
                self.facts = Some(f);
                // Listed again after the facts: a stale claim is judged on a listing at least as new as the
                // claimer's cell (one read before could miss a pull request's inherited copy written since).
                self.others = None;
                self.listed_at = None;
                self.start_take();
            }
            (Step::Write, Settled::Answer(a)) => {
                self.answer = ChangeAnswer { claim: self.answer.claim.take(), ..a };
                if self.config.op == ChangeOp::Forget {
                    self.start(Step::Free { give_back: false });
                } else {
                    self.done();
                }
            }
            (Step::Check, Settled::Answer(a)) => {
                self.answer = a;
                if self.config.op == (ChangeOp::Check { change: true }) {
                    // A change must also get past the claim (read only here: intend takes it), judged on the
                    // check's listing.
                    self.dry = true;
                    self.start_take();
                } else {
                    self.done();
                }
            }
            (Step::Free { give_back: false }, Settled::Freed) => self.done(),
            (Step::Free { give_back: true }, Settled::Freed) => self.give_up(),
            (Step::OwnFacts, Settled::Facts(f)) if !f.lists => self.start(Step::Free { give_back: true }),
            (Step::OwnFacts, Settled::Facts(_)) => self.give_up(),
            (step, settled) => {
                self.fail(CoreError::internal(format!("ownership change: {step:?} settled as {settled:?}")));
            }
        }
    }

    /// Step `step` was refused or failed with `e`.
    fn refused(&mut self, step: Step, e: CoreError) {
        match step {
            Step::Write if self.taken == Some("taken") => {
                // Refused (LOCK_LOST, RECEIPT_CORRUPT, ...): the claim this change took is given back, so a run
                // that no longer holds its lease leaves nothing behind, unless the write landed after all (a
                // reply lost after the commit, then a retry refused): the run's own receipt is read first. A
                // refusal decided on an unreadable receipt (or a bad request) proves nothing landed.
                let proves_nothing =
                    matches!(e.code, ErrorCode::ReceiptCorrupt | ErrorCode::ReceiptVersion | ErrorCode::Usage);
                self.write_error = Some(e);
                self.start(if proves_nothing { Step::Free { give_back: true } } else { Step::OwnFacts });
            }
            // Best effort: a claim left is stale once the lock moves on.
            Step::OwnFacts | Step::Free { give_back: true } => self.give_up(),
            Step::Free { give_back: false } => {
                // The entry is gone; the claim goes stale by itself once this run's lock moves on.
                let r = &self.config.resource;
                let w = format!("could not free the ownership claim of {}:{}: {}", r.adapter, r.key, e.message);
                self.answer.warnings.push(w);
                self.done();
            }
            _ => self.fail(e),
        }
    }

    /// The give-back is over: the change fails with the write's refusal.
    fn give_up(&mut self) {
        let e = self.write_error.take().unwrap_or_else(|| CoreError::internal("ownership change: no refusal"));
        self.fail(e);
    }
}
