//! Fewer round trips: the run's own steps ride in the lease's transactions of the run's cell (`cell-steps`,
//! [`crate::cell_steps`]), so a run costs two writes of its cell: the grant with the checkpoint receipt (and
//! a destroy's plan), and the final receipt with the release.
//!
//! A pull request's run whose head branch may have a receipt is the exception at the start: it reads that
//! receipt under its own lock, as before, and writes the checkpoint (which inherits from it) alone. Read
//! before the lock, the receipt is one round trip (or a whole wait) older when the pull request's work
//! starts, and the simulation shows what that costs: an entry the branch forgot meanwhile is inherited
//! while another scope claims it, or one the branch added meanwhile is missed while the pull request
//! takes its claim (two owners either way).
//!
//! The lease machine stays as it is (its requests, retries and waits); the run machine only widens two of
//! its requests on the way out and splits the answer on the way back. Fencing is unchanged: each step is
//! checked against the snapshot the steps before it produced, and the batch commits as one
//! compare-and-swap, or not at all.

use super::action::{CellRef, RunAction};
use super::config::Job;
use super::machine::{Batch, Phase, RunMachine, Step};
use crate::error::ErrorCode;
use crate::lease::{Mono, StoreResult};
use crate::ownership::predecessor_of;
use serde_json::{Value, json};
use std::collections::VecDeque;

impl RunMachine {
    /// The scope this run inherits from (a pull request's head branch), if any.
    pub(super) fn predecessor_scope(&self) -> Option<String> {
        let ctx = &self.cfg.context;
        (self.cfg.job == Job::Run).then(|| predecessor_of(&ctx.scope, ctx.branch.as_deref(), ctx.pr)).flatten()
    }

    /// A pull request's run, once it holds its lock: asks for its head branch's receipt (`read`), after which
    /// the checkpoint goes out. `false` when the run has no predecessor.
    pub(super) fn read_predecessor(&mut self) -> bool {
        let Some(scope) = self.predecessor_scope() else { return false };
        let ctx = &self.cfg.context;
        let cell = CellRef { env: ctx.env.clone(), scope: scope.clone() };
        self.predecessor = Some(scope);
        let id = self.id();
        self.step = Some((id, Step::ReadPredecessor));
        let request = json!({ "file": crate::receipt::LATEST_FILE });
        let deadline_ms = self.lease.store_deadline(self.now);
        self.actions.push_back(RunAction::Read { id, cell, op: "cell-file", request, deadline_ms });
        true
    }

    /// The `run-begin` request (without the fence: the machine or the batch adds `holder` and `epoch`).
    pub(super) fn run_begin_request(&self) -> Value {
        // Only a predecessor with a receipt takes part: nothing is made for a branch that never ran.
        let predecessor = match (&self.predecessor, &self.predecessor_text) {
            (Some(scope), Some(text)) => json!({ "scope": scope, "text": text }),
            _ => Value::Null,
        };
        json!({
            "context": self.cfg.context,
            "hashKey": self.cfg.hash_key,
            "lockPreempted": self.facts.preempted.get("holder"),
            "approvedBy": self.cfg.approved_by,
            "destroy": self.cfg.job == Job::Destroy,
            "predecessor": predecessor,
        })
    }

    /// Whether a handover may follow the final receipt (a successful pull request run whose head branch
    /// has a receipt): it runs before the release, so the final receipt goes out alone then.
    pub(super) fn handover_may_follow(&self, succeeded: bool) -> bool {
        succeeded && self.cfg.job == Job::Run && self.predecessor_text.is_some()
    }

    /// Widens lease request `id` on its way out: an acquire of a run with a receipt carries the checkpoint
    /// (`run-begin`, fenced by the grant) and a destroy's plan; a release carries the pending final receipt.
    pub(super) fn piggyback(
        &mut self,
        id: u64,
        op: &'static str,
        request: Value,
        deadline_ms: Mono,
    ) -> (&'static str, Value, Mono) {
        match op {
            "lock-acquire"
                if self.phase == Phase::Acquiring
                    && self.cfg.job.has_receipt()
                    && !self.stop_beginning()
                    && self.predecessor_scope().is_none() =>
            {
                let mut begin = self.run_begin_request();
                begin["holder"] = json!(self.holder());
                let mut steps = vec![
                    json!({ "op": op, "request": request }),
                    json!({ "op": "run-begin", "request": begin, "fromGrant": true }),
                ];
                if self.cfg.job == Job::Destroy {
                    let plan = json!({ "holder": self.holder() });
                    steps.push(json!({ "op": "destroy-plan", "request": plan, "fromGrant": true }));
                }
                self.batch = Some((id, Batch::Open));
                ("cell-steps", json!({ "steps": steps }), deadline_ms)
            }
            "lock-release" if self.facts.lost.is_none() => match self.pending_finish.take() {
                Some((finish, finish_deadline)) => {
                    self.batch = Some((id, Batch::Close));
                    let steps = json!([{ "op": "run-finish", "request": finish }, { "op": op, "request": request }]);
                    ("cell-steps", json!({ "steps": steps }), deadline_ms.min(finish_deadline))
                }
                None => (op, request, deadline_ms),
            },
            _ => (op, request, deadline_ms),
        }
    }

    /// Splits the answer of a widened request: the run keeps its steps' answers (the checkpoint's until the
    /// grant's event moves the run on; the final receipt's at once) and returns what the lease gets. A refused
    /// batch committed nothing: an open's refusal is the acquire's (`LOCK_HELD` waits as before; any other
    /// ends the run before anything was locked); a close refused by the fence (`LOCK_LOST`) leaves nothing of
    /// ours to release; a close that failed otherwise is retried by the lease as a plain release.
    pub(super) fn unbatch(&mut self, batch: Batch, result: StoreResult, now: Mono) -> StoreResult {
        match (batch, result) {
            (Batch::Open, StoreResult::Ok(answer)) => {
                let mut answers = answers_of(answer);
                let grant = answers.pop_front().unwrap_or(Value::Null);
                self.opened = answers;
                StoreResult::Ok(grant)
            }
            (Batch::Open, refused) => refused,
            (Batch::Close, StoreResult::Ok(answer)) => {
                let mut answers = answers_of(answer);
                let finish = answers.pop_front().unwrap_or(Value::Null);
                self.on_finished(StoreResult::Ok(finish), now);
                StoreResult::Ok(answers.pop_front().unwrap_or(Value::Null))
            }
            (Batch::Close, StoreResult::Error(e)) => {
                let fenced_out = e.get("code").and_then(Value::as_str) == Some(ErrorCode::LockLost.as_str());
                self.on_finished(StoreResult::Error(e.clone()), now);
                if fenced_out { StoreResult::Ok(json!({ "released": false })) } else { StoreResult::Error(e) }
            }
        }
    }
}

fn answers_of(answer: Value) -> VecDeque<Value> {
    match answer {
        Value::Object(mut o) => match o.remove("answers") {
            Some(Value::Array(a)) => a.into(),
            _ => VecDeque::new(),
        },
        _ => VecDeque::new(),
    }
}
