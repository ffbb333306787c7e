//! The succession invariants (S1-S3, C1, C2, liveness), checked as writes land and when runs end. See
//! `succession.rs` for what each promises.

use super::succession::{BRANCH, C1, C2, C3, CLAIM0, HOST, LATEST, LIVE, MAX_KEYS, PR7, PR8, S1, S2, S3, SCOPES};
use super::succession_host::{Moment, Op, Work, World};
use super::world::Failure;
use baton_core::cell::Change;
use baton_core::claims;
use baton_core::lock;
use serde_json::Value;

/// Ledger entry kinds, per scope and key.
pub(crate) const NONE: u8 = 0;
pub(crate) const OWNED: u8 = 1;
pub(crate) const INTENT: u8 = 2;
pub(crate) const ADOPTED: u8 = 3;

pub(crate) fn owns(kind: u8) -> bool {
    kind == OWNED || kind == INTENT
}

pub(crate) fn ledger_str(enc: u16) -> String {
    let mut s = String::from("[");
    for k in 0..MAX_KEYS {
        let kind = (enc >> (2 * k)) & 3;
        if kind != 0 {
            if s.len() > 1 {
                s.push(' ');
            }
            let tag = ["", "baton", "intent", "adopted"][kind as usize];
            s.push_str(&format!("k{k}:{tag}"));
        }
    }
    s.push(']');
    s
}

pub(crate) fn key_of(entry: &Value) -> Option<usize> {
    let k: usize = entry.get("key")?.as_str()?.strip_prefix('k')?.parse().ok()?;
    (k < MAX_KEYS).then_some(k)
}

/// Entry kinds per key of a receipt (as JSON).
pub(crate) fn kinds_of(receipt: &Value) -> [u8; MAX_KEYS] {
    let mut out = [NONE; MAX_KEYS];
    for e in receipt.get("ledger").and_then(Value::as_array).into_iter().flatten() {
        if let Some(k) = key_of(e) {
            out[k] = match e.get("createdBy").and_then(Value::as_str) {
                Some("adopted") => ADOPTED,
                Some("intent") => INTENT,
                _ => OWNED,
            };
        }
    }
    out
}

/// Per key: whether the receipt lists it as a copy inherited from the branch (`inheritedFrom`).
pub(crate) fn inherited_of(receipt: &Value) -> [bool; MAX_KEYS] {
    let mut out = [false; MAX_KEYS];
    for e in receipt.get("ledger").and_then(Value::as_array).into_iter().flatten() {
        if let Some(k) = key_of(e) {
            out[k] = e.get("inheritedFrom").and_then(Value::as_str) == Some(SCOPES[BRANCH]);
        }
    }
    out
}

pub(crate) fn encode(kinds: &[u8; MAX_KEYS]) -> u16 {
    kinds.iter().enumerate().fold(0, |acc, (k, v)| acc | (u16::from(*v) << (2 * k)))
}

impl World<'_> {
    /// A receipt write landing on cell `c`, sent by `sender` (holder, epoch): S3 against the lock in the
    /// same transaction, then the ownership bookkeeping (S1 claims, S2 moves), then the write.
    pub(crate) fn observe_write(
        &mut self,
        r: usize,
        c: usize,
        op: &Op,
        changes: &[Change],
        receipt: &Value,
        sender: (&str, u64),
    ) -> Result<u64, Failure> {
        self.commits += 1;
        let seq = self.commits;
        self.c.receipt_writes += 1;
        let (holder, epoch) = sender;
        let lock = lock::parse_lock(&self.cells[c]).ok().flatten();
        let ok = lock.as_ref().is_some_and(|l| l.holder == holder && l.epoch == epoch);
        if !ok {
            let held = lock.map_or_else(|| "no lock".to_owned(), |l| format!("{} at epoch {}", l.holder, l.epoch));
            let detail = format!(
                "{} of run-{r} ({holder} at epoch {epoch}) landed on {} while the lock is {held}",
                op.name(),
                SCOPES[c]
            );
            return Err(self.fail(S3, detail));
        }
        let writes_latest = changes.iter().any(|ch| matches!(ch, Change::Write { file, .. } if file == LATEST));
        if writes_latest {
            let run_id = receipt["runId"].as_str().unwrap_or_default();
            if run_id != holder {
                let detail = format!("{} of run-{r} wrote a receipt of `{run_id}` under {holder}'s lock", op.name());
                return Err(self.fail(S3, detail));
            }
            let recorded = receipt["epoch"].as_u64();
            if recorded != Some(epoch) {
                let detail =
                    format!("{} of run-{r} at epoch {epoch} wrote a receipt with epoch {recorded:?}", op.name());
                return Err(self.fail(S3, detail));
            }
        }
        let handover = matches!(op, Op::Handover { .. });
        let skip_write = handover && self.plan.sabotage == super::succession::Sabotage::SkipHandoverRemoval;
        if !skip_write {
            self.cells[c].apply(changes);
        }
        let old = self.kinds[c];
        let new = if skip_write { old } else { kinds_of(receipt) };
        self.kinds[c] = new;
        if !skip_write {
            self.copies[c] = inherited_of(receipt);
        }
        self.note_write(r, op.name(), c, encode(&new), seq);
        let create = matches!(op, Op::Intend(_) | Op::Record(_));
        match op {
            Op::Intend(_) => self.c.intents += 1,
            Op::Record(_) => self.c.records += 1,
            _ => {}
        }
        for k in 0..usize::from(self.plan.keys) {
            let (was, is) = (owns(old[k]), owns(new[k]));
            if is && create && op.key() == Some(k as u8) {
                self.claimed_by[c][k] = seq;
            }
            if was && !is && self.claim_of[k] == Some(c) {
                // The claim's own scope stopped listing it: the handover's `claim-move` (under the same
                // lock) or the forget's `claim-free` follows; until then the claim lags.
                self.lagging[k] = matches!(op, Op::Handover { .. } | Op::Forget(_));
            }
            if is && !was {
                self.claim(r, c, k, op, seq)?;
            }
            if was && !is {
                match op {
                    Op::Forget(f) if usize::from(*f) == k => self.c.forgets += 1,
                    Op::Handover { .. } => {}
                    _ => {
                        let detail = format!(
                            "k{k} (listed as {}) left the ledger of {} by {} of run-{r}",
                            Self::kind_label(old[k]),
                            SCOPES[c],
                            op.name()
                        );
                        return Err(self.fail(S2, detail));
                    }
                }
            }
        }
        self.check_claims("after a receipt write")?;
        Ok(seq)
    }

    /// A write landed on claim cell `c`: the claim it names now, then the claim check.
    pub(crate) fn claim_landed(&mut self, c: usize) -> Result<(), Failure> {
        let k = c - CLAIM0;
        let scope = match claims::read_claim(&self.cells[c]) {
            Ok(Some(claim)) => match SCOPES.iter().position(|s| *s == claim.scope) {
                Some(s) => Some(s),
                None => return Err(self.fail(HOST, format!("the claim of k{k} names `{}`", claim.scope))),
            },
            Ok(None) => None,
            Err(e) => return Err(self.fail(HOST, format!("the claim of k{k} does not read: {e}"))),
        };
        self.claim_of[k] = scope;
        self.lagging[k] = false;
        self.check_claims("after a claim write")
    }

    /// S1 on the claims: a claim names a scope whose ledger does not list the key only while no other
    /// scope's ledger owns it (the claimer is about to write its intent, or died before it), except for
    /// the lag the protocol has between a ledger write and the claim write that follows it on another
    /// cell: the branch's ledger lost the key (a handover gave it to the PR, or the branch forgot it while
    /// the PR still lists its inherited copy) and the claim was not written since (the machine's
    /// `claim-move` or the adapter's `claim-free` is on its way, or failed: the claim is then stale and
    /// the PR's next take moves it).
    #[allow(clippy::needless_range_loop)] // `t` indexes several per-scope tables.
    pub(crate) fn check_claims(&mut self, when: &str) -> Result<(), Failure> {
        for k in 0..usize::from(self.plan.keys) {
            let Some(s) = self.claim_of[k] else { continue };
            if owns(self.kinds[s][k]) {
                continue;
            }
            for t in 0..3 {
                if t == s || !owns(self.kinds[t][k]) {
                    continue;
                }
                if s == BRANCH && t == PR7 && self.lagging[k] {
                    self.c.lagging_claims_seen += 1;
                    continue;
                }
                if s == PR7 && t == BRANCH {
                    // The PR took the claim of what it inherits (`claim-take` answered `inherited`) and is about
                    // to change it: the branch still lists it (the pending pair), and while the PR holds the
                    // claim the branch cannot forget and re-create it (simulation seed 108852).
                    self.c.claims_of_inherited += 1;
                    continue;
                }
                if s == BRANCH && t == PR7 && self.copies[PR7][k] {
                    // The PR's copy of what the branch listed, while the branch re-creates it (the pair
                    // that follows is the pending one): the PR's copy is the branch's by the core's rule.
                    self.c.claims_beside_copies += 1;
                    continue;
                }
                let detail = format!(
                    "{when}: the claim of k{k} names {}, whose ledger does not list it, while {} owns it (since #{})",
                    SCOPES[s], SCOPES[t], self.since[t][k]
                );
                return Err(self.fail(S1, detail));
            }
        }
        Ok(())
    }

    /// Scope `c` starts listing key `k` as owned: S1 against every other scope that lists it.
    #[allow(clippy::needless_range_loop)] // `t` indexes several per-scope tables.
    fn claim(&mut self, r: usize, c: usize, k: usize, op: &Op, seq: u64) -> Result<(), Failure> {
        self.since[c][k] = seq;
        self.excuse[c][k] = 0;
        let create = matches!(op, Op::Intend(_) | Op::Record(_)) && op.key() == Some(k as u8);
        let inherit = matches!(op, Op::Begin) && c == PR7;
        if !create && !inherit {
            let detail = format!("k{k} became owned by {} through {} of run-{r}", SCOPES[c], op.name());
            return Err(self.fail(S1, detail));
        }
        for t in 0..3 {
            if t == c || !owns(self.kinds[t][k]) {
                continue;
            }
            // The PR created or inherited what its predecessor lists, or the branch lists what the PR holds
            // a copy of (inherited from a receipt read before the branch forgot it): pending until a
            // handover. The core's rule reads the PR's copy as the branch's while the branch lists it.
            if (c == PR7 && t == BRANCH) || (c == BRANCH && t == PR7 && self.copies[PR7][k]) {
                self.c.pending_pairs += 1;
                self.excuse[c][k] |= 1 << t;
                continue;
            }
            let (name, scope, other, since) = (op.name(), SCOPES[c], SCOPES[t], self.since[t][k]);
            let detail = if inherit {
                format!(
                    "run-begin of run-{r} made {scope} inherit k{k} (#{seq}) from {}, while {other} owns it (since #{since})",
                    SCOPES[BRANCH]
                )
            } else {
                let evidence = self.runs[r].list_seq;
                let how = if since <= evidence {
                    "already listed it"
                } else {
                    "did not list it yet (a blind race: the claim must refuse one of them)"
                };
                format!(
                    "{name} of run-{r} made {scope} list k{k} (#{seq}) while {other} owns it (since #{since}); the listing its ledger-check read (#{evidence}) {how}"
                )
            };
            return Err(self.fail(S1, detail));
        }
        Ok(())
    }

    /// After a committed handover: the branch lists none of what was handed over (S1), and what left the
    /// branch is owned by the PR, unless the PR deleted it since its final receipt (S2).
    #[allow(clippy::needless_range_loop)] // `k` indexes several per-key tables.
    pub(crate) fn check_handed_over(&mut self, r: usize, keys: &[u8], before: &[u8; MAX_KEYS]) -> Result<(), Failure> {
        for &k in keys {
            let k = usize::from(k);
            if self.kinds[BRANCH][k] != NONE {
                let detail = format!(
                    "after the handover of run-{r} committed, {} still lists k{k}, which {} took over",
                    SCOPES[BRANCH], SCOPES[PR7]
                );
                return Err(self.fail(S1, detail));
            }
        }
        for k in 0..usize::from(self.plan.keys) {
            // Keys the branch owned before this commit and no longer lists.
            if !owns(before[k]) || self.kinds[BRANCH][k] != NONE {
                continue;
            }
            let pr = self.kinds[PR7][k];
            if owns(pr) {
                continue;
            }
            if owns(self.kinds[PR8][k]) {
                // A double from a blind race: the other owner remains.
                continue;
            }
            if !self.exists[k] || self.zombie[k] {
                // The PR deleted it (the branch's entry was for that resource), or nobody created it.
                self.c.phantom_moves += 1;
                continue;
            }
            if pr == ADOPTED && !self.plan.strict {
                // The (fixed) deviation: `handover` moved what the successor only adopted.
                self.c.adopted_handovers += 1;
                self.c.first_adopted_handover_seed = self.c.first_adopted_handover_seed.min(self.plan.seed);
                self.disowned[k] = true;
                continue;
            }
            let how = if pr == ADOPTED { "lists it only as adopted" } else { "does not list it" };
            let detail = format!(
                "the handover of run-{r} took k{k} (claimed by {} at #{}) out of {}, and {} {how}: the resource exists and nobody owns it",
                SCOPES[BRANCH], self.claimed_by[BRANCH][k], SCOPES[BRANCH], SCOPES[PR7]
            );
            return Err(self.fail(S2, detail));
        }
        Ok(())
    }

    /// S1 at a checkpoint: every resource listed as owned by two scopes is a pair allowed when it began.
    pub(crate) fn check_pairs(&self, when: &str) -> Result<(), Failure> {
        for k in 0..usize::from(self.plan.keys) {
            for a in 0..3 {
                for b in a + 1..3 {
                    if !(owns(self.kinds[a][k]) && owns(self.kinds[b][k])) {
                        continue;
                    }
                    let (later, earlier) = if self.since[a][k] > self.since[b][k] { (a, b) } else { (b, a) };
                    if self.excuse[later][k] & (1 << earlier) == 0 {
                        let detail = format!(
                            "{when}: {} (since #{}) and {} (since #{}) both own k{k}",
                            SCOPES[earlier], self.since[earlier][k], SCOPES[later], self.since[later][k]
                        );
                        return Err(self.fail(S1, detail));
                    }
                }
            }
        }
        Ok(())
    }

    /// C1: the machine releases its lease (or ends) only once the command's process has ended.
    pub(crate) fn check_no_release_while_working(&self, r: usize) -> Result<(), Failure> {
        let work = self.runs[r].work;
        if matches!(work, Work::Running | Work::Stopping) {
            let what = if self.runs[r].verdict.is_some() { "ended (done)" } else { "released its lease" };
            let detail = format!("run-{r} {what} while its command is still running ({work:?})");
            return Err(self.fail(C1, detail));
        }
        Ok(())
    }

    /// C2, before the work: a run cancelled before its command started never starts it.
    pub(crate) fn check_not_started_after_cancel(&self, r: usize) -> Result<(), Failure> {
        if let Some((sig, at, Moment::Before)) = self.runs[r].first_signal {
            let detail = format!("run-{r} started its command after {} at t={at}", sig.name());
            return Err(self.fail(C2, detail));
        }
        Ok(())
    }

    /// C2 at `done`: a cancelled run's verdict is `INTERRUPTED` with 128 + the first signal (`LOCK_LOST`
    /// when the lease was lost too, once the command ran), its final receipt (if it landed) says
    /// `cancelled`, and the command stopped within the grace.
    pub(crate) fn check_cancelled(&self, r: usize) -> Result<(), Failure> {
        let run = &self.runs[r];
        let Some((sig, at, moment)) = run.first_signal else { return Ok(()) };
        let Some(verdict) = &run.verdict else { return Ok(()) };
        let code = verdict.error.as_ref().and_then(|e| e.get("code")).and_then(Value::as_str).unwrap_or("");
        let interrupted = code == "INTERRUPTED" && verdict.exit == 128 + sig.number();
        let fail = |why: String| Err(self.fail(C2, format!("run-{r}, cancelled by {} at t={at}: {why}", sig.name())));
        match moment {
            Moment::Before if !interrupted => {
                fail(format!("the verdict is exit {} {code:?}, not INTERRUPTED", verdict.exit))
            }
            Moment::During if !interrupted && code != "LOCK_LOST" => {
                fail(format!("the verdict is exit {} {code:?}, not INTERRUPTED or LOCK_LOST", verdict.exit))
            }
            Moment::During if run.receipt_status.as_deref().is_some_and(|s| s != "cancelled") => {
                fail(format!("the final receipt says {:?}", run.receipt_status))
            }
            Moment::During => {
                let ended = run.work_ended_at.unwrap_or(u64::MAX);
                let rp = &self.plan.runs[r];
                let froze = rp.pause.is_some_and(|(p, d)| p <= at + self.plan.cancel_grace && p + d >= at);
                if ended > at + self.plan.cancel_grace && !froze {
                    return fail(format!(
                        "the command ended at t={ended}, after the grace of {} ms",
                        self.plan.cancel_grace
                    ));
                }
                Ok(())
            }
            Moment::After if interrupted && run.receipt_status.as_deref().is_some_and(|s| s != "cancelled") => {
                // Known deviation (machine, counted; `strict_cancel` fails it): a signal after the command
                // ended but before `done` still turns the verdict into "cancelled ..., the receipt says
                // `cancelled`", while the final receipt (already written) says otherwise.
                if self.plan.strict_cancel {
                    return fail(format!(
                        "the command had ended; the verdict says {:?} but the final receipt says {:?}",
                        verdict.error.as_ref().and_then(|e| e.get("message")),
                        run.receipt_status
                    ));
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// Counts the known deviation of [`Self::check_cancelled`] (a late signal's verdict contradicting the
    /// receipt), once per run.
    pub(crate) fn count_late_cancel(&mut self, r: usize) {
        let run = &self.runs[r];
        let late = matches!(run.first_signal, Some((_, _, Moment::After)));
        let code = run.verdict.as_ref().and_then(|v| v.error.as_ref()).and_then(|e| e.get("code"));
        if late
            && code.and_then(Value::as_str) == Some("INTERRUPTED")
            && run.receipt_status.as_deref().is_some_and(|s| s != "cancelled")
        {
            self.c.late_cancel_verdicts += 1;
            self.c.first_late_cancel_seed = self.c.first_late_cancel_seed.min(self.plan.seed);
        }
    }

    /// C3 at `done`: a command that ran when the lease was lost (or had to stop) ended within the grace the
    /// lease gave (the machine kills it then), unless its host froze meanwhile (a freeze that begins on the
    /// very millisecond of the kill counts: its event may come before the machine's timer).
    pub(crate) fn check_stopped_in_grace(&self, r: usize) -> Result<(), Failure> {
        let run = &self.runs[r];
        let Some((at, grace)) = run.stop_at else { return Ok(()) };
        let ended = run.work_ended_at.unwrap_or(u64::MAX);
        let froze = self.plan.runs[r].pause.is_some_and(|(p, d)| p <= at + grace && p + d >= at);
        if ended > at + grace && !froze {
            let detail = format!(
                "run-{r}'s lease stopped at t={at} with a grace of {grace} ms, and its command ended at t={ended}"
            );
            return Err(self.fail(C3, detail));
        }
        Ok(())
    }

    /// At the end: every run ended, S1 pairs, and S2: what was created and not forgotten is owned by someone.
    pub(crate) fn check_end(&mut self) -> Result<(), Failure> {
        for (i, run) in self.runs.iter().enumerate() {
            if !run.crashed && (!run.m.is_finished() || run.verdict.is_none()) {
                return Err(self.fail(LIVE, format!("run-{i} never ended (command {:?})", run.work)));
            }
        }
        self.check_pairs("at the end")?;
        for k in 0..usize::from(self.plan.keys) {
            let owned = (0..3).any(|s| owns(self.kinds[s][k]));
            if self.exists[k] && self.zombie[k] && !owned {
                // Created by a zombie after its successor resolved the intent: outside what fencing covers.
                self.c.zombie_orphans += 1;
            } else if self.exists[k] && self.disowned[k] && !owned {
                // Left without an owner by the (fixed) deviation (counted at the handover).
            } else if self.exists[k] && !owned {
                let claims: Vec<String> = (0..3).map(|s| format!("{} #{}", SCOPES[s], self.claimed_by[s][k])).collect();
                let detail =
                    format!("k{k} exists at the end and no scope owns it (last claims: {})", claims.join(", "));
                return Err(self.fail(S2, detail));
            }
            self.c.intents_left += (0..3).filter(|&s| self.kinds[s][k] == INTENT).count() as u64;
        }
        Ok(())
    }
}
