//! The run's own store steps, in order: the checkpoint (with the predecessor's receipt read first, and a
//! destroy's plan), the start of the work, the final receipt, the handover under the predecessor's lock.
//! Each answer moves the run on; see [`super::machine`] for the machine around them.

use super::action::{CellRef, RunAction};
use super::config::Job;
use super::machine::{Phase, RunMachine, Step, Then};
use crate::error::ErrorCode;
use crate::lease::{Mono, StoreResult};
use crate::ownership::handover_ttl_ms;
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;

impl RunMachine {
    /// After the grant: the checkpoint receipt (with the predecessor's receipt read first), then the work.
    pub(super) fn begin(&mut self, now: Mono) {
        self.phase = Phase::Beginning;
        match self.cfg.job {
            Job::Acquire => {
                self.facts.keep_lock = true;
                self.done(now);
            }
            Job::Object => self.start_work(None),
            // The grant carried the checkpoint (`batch`): its answer is here. A pull request's grant went out
            // alone: it reads its head branch's receipt under the lock, then writes the checkpoint.
            Job::Run | Job::Destroy => match self.opened.pop_front() {
                Some(answer) => self.on_step(Step::RunBegin, StoreResult::Ok(answer), now),
                None if self.read_predecessor() => {}
                None => {
                    let request = self.run_begin_request();
                    self.own_step(Step::RunBegin, "run-begin", request);
                }
            },
        }
    }

    pub(super) fn start_work(&mut self, delete: Option<Vec<Value>>) {
        self.phase = Phase::Working;
        let epoch = self.epoch();
        let mut env = BTreeMap::new();
        env.insert("BATON_ENV".to_owned(), self.cfg.lease.env.clone());
        env.insert("BATON_SCOPE".to_owned(), self.cfg.lease.scope.clone());
        env.insert("BATON_HOLDER".to_owned(), self.holder().to_owned());
        env.insert("BATON_EPOCH".to_owned(), epoch.to_string());
        let label = self.cfg.lease.label();
        self.actions.push_back(RunAction::StartWork { env, epoch, delete, label });
    }

    /// Whether the beginning must stop before the work starts (lost, cancelled, given up).
    pub(super) fn stop_beginning(&self) -> bool {
        self.facts.lost.is_some() || self.cancel.is_some() || self.facts.given_up
    }

    pub(super) fn on_step(&mut self, step: Step, result: StoreResult, now: Mono) {
        match (step, result) {
            (Step::ReadPredecessor, StoreResult::Ok(answer)) => {
                self.predecessor_text = answer.get("text").and_then(Value::as_str).map(str::to_owned);
                if self.stop_beginning() {
                    return self.begin_release(now);
                }
                let request = self.run_begin_request();
                self.own_step(Step::RunBegin, "run-begin", request);
            }
            (Step::RunBegin, StoreResult::Ok(answer)) => {
                for w in strings(&answer, "warnings") {
                    self.warn(w);
                }
                if self.stop_beginning() {
                    return self.begin_release(now);
                }
                if self.cfg.job == Job::Destroy {
                    match self.opened.pop_front() {
                        Some(plan) => self.on_step(Step::DestroyPlan, StoreResult::Ok(plan), now),
                        None => self.own_step(Step::DestroyPlan, "destroy-plan", json!({})),
                    }
                } else {
                    self.start_work(None);
                }
            }
            (Step::DestroyPlan, StoreResult::Ok(answer)) => {
                let delete = answer.get("delete").and_then(Value::as_array).cloned().unwrap_or_default();
                let adopted = answer.get("adoptedForgotten").and_then(Value::as_u64).unwrap_or(0);
                self.note(format!("{} resource(s) to delete; {adopted} adopted one(s) forgotten", delete.len()));
                if self.stop_beginning() {
                    return self.begin_release(now);
                }
                self.start_work(Some(delete));
            }
            (Step::ReadPredecessor | Step::RunBegin | Step::DestroyPlan, StoreResult::Error(e)) => {
                self.facts.failure.get_or_insert(Value::Object(e));
                self.begin_release(now);
            }
            (Step::RunFinish, result) => self.on_finished(result, now),
            (Step::Handover, result) => {
                let pred = self.predecessor.clone().unwrap_or_default();
                match result {
                    StoreResult::Ok(answer) => {
                        let answers = answer.get("answers").and_then(Value::as_array).cloned().unwrap_or_default();
                        let field = |i: usize| answers.get(i).cloned().unwrap_or(Value::Null);
                        let (grant, h) = (field(0), field(1));
                        let epoch = grant.get("lock").and_then(|l| l.get("epoch")).cloned().unwrap_or(Value::Null);
                        let moved = h.get("moved").and_then(Value::as_u64).unwrap_or(0);
                        self.facts.handed_over = moved;
                        self.note(format!(
                            "handed over {moved} resource(s) of scope `{pred}` to `{}`",
                            self.cfg.lease.scope
                        ));
                        let claims = h.get("movedResources").and_then(Value::as_array).cloned().unwrap_or_default();
                        self.move_claims(epoch, claims);
                    }
                    // Nothing landed (the lock and the rewrite are one transaction): nothing to release.
                    StoreResult::Error(e) => {
                        self.handover_failed(&pred, &e);
                        self.after_finish(now);
                    }
                }
            }
            (Step::ClaimMove { epoch, rest }, result) => {
                if let StoreResult::Error(e) = result {
                    // The handover landed; the claim still names the branch, whose ledger no longer lists it:
                    // the successor's ledger owns it (claims rule 1) and its next claim moves it.
                    let why = e.get("message").and_then(Value::as_str).unwrap_or("unknown error");
                    self.warn(format!("Could not move an ownership claim to `{}`: {why}", self.cfg.lease.scope));
                }
                self.move_claims(epoch, rest);
            }
            (Step::HandoverRelease, _) => self.after_finish(now),
        }
    }

    pub(super) fn finish_receipt(&mut self, succeeded: bool, then: Then, now: Mono) {
        self.then = then;
        if !self.cfg.job.has_receipt() {
            return self.begin_release(now);
        }
        if let Some(lost) = self.facts.lost.clone() {
            // Past the holder's deadline (or after the store said the lock is gone) nothing more is written:
            // the checkpoint stays, as after a crash, and the next run continues from it (DESIGN §7.4).
            self.note("The final receipt is not written: the lease was lost or past its deadline; the checkpoint receipt stays for the next run.".to_owned());
            if then == Then::Hold {
                return self.finished_with_error(lost, Phase::Held);
            }
            return self.begin_release(now);
        }
        self.phase = Phase::Finishing;
        let cancelled = self.cancel.is_some();
        let mut request = json!({ "succeeded": succeeded, "cancelled": cancelled, "sha": self.cfg.context.sha });
        if then == Then::Release && !self.handover_may_follow(succeeded) {
            // Nothing comes between the final receipt and the release: they go out together (`batch`),
            // fenced and bounded as the receipt alone would be.
            request["holder"] = json!(self.holder());
            request["epoch"] = json!(self.epoch());
            self.pending_finish = Some((request, self.lease.store_deadline(now)));
            return self.begin_release(now);
        }
        self.own_step(Step::RunFinish, "run-finish", request);
    }

    pub(super) fn on_finished(&mut self, result: StoreResult, now: Mono) {
        match result {
            StoreResult::Ok(answer) => {
                let complete = answer.get("status").and_then(Value::as_str) == Some("complete");
                self.facts.finished = Some(answer.as_object().cloned().unwrap_or_default());
                if complete && self.cfg.job == Job::Run && self.predecessor_text.is_some() {
                    return self.send_handover();
                }
            }
            // Refused by the fence: the lease was taken (or the ref deleted); the run ends with LOCK_LOST.
            StoreResult::Error(e) if e.get("code").and_then(Value::as_str) == Some(ErrorCode::LockLost.as_str()) => {
                if self.facts.lost.is_none() {
                    self.facts.lost = Some(Value::Object(e.clone()));
                }
                if self.then == Then::Hold {
                    return self.finished_with_error(Value::Object(e), Phase::Held);
                }
            }
            // The work is done but not recorded (e.g. STORE_REJECTED): the run fails with that error, so CI
            // does not report a success whose record is missing.
            StoreResult::Error(e) => {
                if self.then == Then::Hold {
                    // Nothing landed: the run is still open (a retry may finish it).
                    self.facts.work = None;
                    return self.finished_with_error(Value::Object(e), Phase::Working);
                }
                if self.facts.lost.is_none() {
                    let why = e.get("message").and_then(Value::as_str).unwrap_or("unknown error").to_owned();
                    self.warn(format!("Could not write the final receipt: {why}"));
                    self.facts.receipt_error = Some(Value::Object(e));
                }
            }
        }
        self.after_finish(now);
    }

    /// Manual mode: `finish` ends with `error` (the receipt did not land); the run goes on in `phase`.
    pub(super) fn finished_with_error(&mut self, error: Value, phase: Phase) {
        self.phase = phase;
        let mut outcome = Map::new();
        outcome.insert("error".into(), error);
        self.actions.push_back(RunAction::Finished { outcome });
    }

    /// The handover: the predecessor's lock and the rewrite of its receipt, in one transaction of its cell
    /// (`cell-steps`); the claims move next, under that lock, which is released last.
    pub(super) fn send_handover(&mut self) {
        let holder = self.handover_holder();
        let ledger = self
            .facts
            .finished
            .as_ref()
            .and_then(|f| f.get("receipt"))
            .and_then(|r| r.get("ledger"))
            .cloned()
            .unwrap_or_else(|| json!([]));
        let lock = json!({ "holder": holder, "ttlMs": handover_ttl_ms(self.cfg.ttl_given) });
        let handover = json!({ "holder": holder, "successor": self.cfg.lease.scope, "successorLedger": ledger });
        let steps = json!([
            { "op": "lock-acquire", "request": lock },
            { "op": "handover", "request": handover, "fromGrant": true },
        ]);
        let cell = self.predecessor_cell();
        self.store_step(Step::Handover, cell, "cell-steps", json!({ "steps": steps }));
    }

    /// The next handed-over claim to move to this run's scope (`claim-move`), or, when none is left, the
    /// release of the handover's lock.
    pub(super) fn move_claims(&mut self, epoch: Value, mut claims: Vec<Value>) {
        if claims.is_empty() {
            let holder = self.handover_holder();
            let cell = self.predecessor_cell();
            return self.store_step(
                Step::HandoverRelease,
                cell,
                "lock-release",
                json!({ "holder": holder, "epoch": epoch }),
            );
        }
        let resource = claims.remove(0);
        let env = self.cfg.lease.env.clone();
        let text = |k: &str| resource.get(k).and_then(Value::as_str).unwrap_or_default().to_owned();
        let provider = resource.get("provider").cloned().unwrap_or_else(|| json!({}));
        let (claims_env, scope) = crate::claims::claim_cell(&env, &text("adapter"), &provider, &text("key"));
        let request = json!({
            "env": env,
            "from": self.predecessor.clone().unwrap_or_default(),
            "to": self.cfg.lease.scope,
            "holder": self.holder(),
            "epoch": self.epoch(),
            "resource": resource,
        });
        let cell = Some(CellRef { env: claims_env, scope });
        self.store_step(Step::ClaimMove { epoch, rest: claims }, cell, "claim-move", request);
    }

    pub(super) fn handover_failed(&mut self, pred: &str, e: &Map<String, Value>) {
        let scope = self.cfg.lease.scope.clone();
        if e.get("code").and_then(Value::as_str) == Some(ErrorCode::LockHeld.as_str()) {
            self.warn(format!(
                "Scope `{pred}` is busy; its resources will be handed over to `{scope}` on the next run."
            ));
        } else {
            let why = e.get("message").and_then(Value::as_str).unwrap_or("unknown error");
            self.warn(format!("Could not hand over the resources of scope `{pred}`: {why}"));
        }
    }

    pub(super) fn handover_holder(&self) -> String {
        format!("handover-{}", self.holder())
    }

    pub(super) fn predecessor_cell(&self) -> Option<CellRef> {
        let scope = self.predecessor.clone().unwrap_or_default();
        Some(CellRef { env: self.cfg.lease.env.clone(), scope })
    }

    pub(super) fn after_finish(&mut self, now: Mono) {
        if self.then == Then::Hold {
            self.phase = Phase::Held;
            let outcome = self.facts.finished_outcome();
            self.actions.push_back(RunAction::Finished { outcome });
        } else {
            self.begin_release(now);
        }
    }
}

fn strings(v: &Value, key: &str) -> Vec<String> {
    v.get(key)
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).map(str::to_owned).collect())
        .unwrap_or_default()
}
