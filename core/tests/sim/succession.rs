//! Succession schedules: runs of three scopes of one environment, each a real [`RunMachine`] driven by a
//! simulated host on a simulated store and clock, with a simulated command (the adapter) recording what it
//! owns, and the machine's handover from a branch scope to its pull request (DESIGN.md §9: "after
//! succession each resource has exactly one owner").
//!
//! The scopes are `branch-feat-x` (context branch `feat/x`), its PR scope `pr-7` (branch `feat/x`, PR 7) and
//! the unrelated `pr-8` (branch `feat/y`, PR 8, whose predecessor `branch-feat-y` never has a receipt). Each
//! schedule has 3-5 runs, at least one per scope (a run or, sometimes, a destroy). Everything a run decides
//! is the machine's (`baton_core::run`): the lease, the predecessor's receipt read, `run-begin`,
//! `destroy-plan`, when to start the command, stopping it (SIGTERM, then SIGKILL after the grace) when the
//! lease is lost or the run is cancelled, `run-finish`, the handover under the predecessor's lock, the
//! release and the verdict. The host (`succession_host.rs`) only carries the machine's actions out, as
//! `host-native` does: `store`/`read` actions become cell transactions on the simulated store (through
//! `api::invoke`, the hosts' path), each with the store's latency before the commit and before the reply
//! and sometimes a lost reply (committed or not); `start-work` starts the adapter with the exported holder
//! and epoch; `signal` signals it; its exit is reported with `work_ended`; `done` ends the run.
//!
//! The store holds the scope cells and one claim cell per key of the pool (`_claims/<hash>`,
//! `claims::claim_cell(ENV, "fake", {}, "k<n>")`), with the same latency, lost replies and crashes: the
//! machine's `claim-move` after a handover and the adapter's claim transactions run on them.
//!
//! The adapter is the command's part, unchanged from a real command calling `baton ledger ...`: 1-3
//! actions on keys drawn from a pool of 2-5 shared by all scopes, each a fenced ledger call made with the
//! epoch the machine exported: *create*, *rely* or *forget*.
//! - *create*: list every scope's `latest.json`, `ledger-check change=true` against that listing with the
//!   predecessor `succession` names (on `OWNED_BY_OTHER_SCOPE` skip; on an owned entry do nothing; on an
//!   own intent left by a crashed run go straight to the record below); then `baton ledger intend`: a
//!   `claim-take` on the key's claim cell, whose needs it satisfies and asks again, each a store round trip
//!   with no think time between (`others`: a fresh listing; `facts`: a read of the claiming scope's cell,
//!   `claim-facts`), at most 8 takes (then `STORE_CONTENDED`, the step fails), as `host-native`'s
//!   `claim::take` does; `OWNED_BY_OTHER_SCOPE` from it is a refusal like the check's (skip); then
//!   `ledger-intend`. Then the provider's create, and `baton ledger record`: `claim-take` again (normally
//!   `held`: one round trip; a refusal fails the step) and `ledger-record`. Not modelled: the read-only
//!   take that `ledger check --change` also makes (it decides nothing the take after it does not).
//! - *rely* (on a resource that exists): list, `ledger-check change=false`, which records a foreign one as
//!   `adopted`; no claim (adoption claims nothing).
//! - *forget*: delete one its receipt lists, then `ledger-forget`, then `claim-free`.
//!
//! A destroy's adapter deletes, forgets and frees each resource of the machine's delete list. It exits 0,
//! or 1 when a step failed or the command fails by plan. On SIGINT/SIGTERM it stops after a delay, unless
//! it traps them (then only the machine's SIGKILL ends it); a call it already sent still commits.
//!
//! The provider is modelled per key: a resource exists from its create (an upsert, just before
//! `ledger-record`) until a delete (just before `ledger-forget`).
//!
//! Faults: store latency (sometimes beyond the TTL), lost replies, slow provider calls between steps,
//! freezes of a run's host (sometimes beyond the TTL: the lease is taken over and the frozen run's later
//! writes are refused), crashes (the machine is dropped mid-flight, its command dies with it; anywhere,
//! right after an intent landed, leaving it, or between a claim and its intent, leaving a claim that is
//! stale once the scope's lock moves on), clock skew within the lease margin, and cancellation (SIGINT
//! or SIGTERM to the host, sometimes followed by SIGTERM as CI runners do; mostly while the command runs,
//! sometimes before it started). An adapter that thaws from a freeze may act before its host does: a
//! provider create it then makes after its lease ended ("zombie") is fenced by nothing; it is counted, and
//! a resource it leaves without owner is not held against S2.
//!
//! Invariants (a failure names the invariant, the seed and a trace; positions `#n` count receipt writes):
//! - S1 exactly one owner. Whenever a scope starts listing a resource as owned (`baton` or `intent`) while
//!   another scope lists it too, it must be the one allowed pair: the PR creating or inheriting what its
//!   predecessor lists, or the branch re-creating what the PR holds a copy of inherited from the branch
//!   (`inheritedFrom`: run-begin copied a receipt read before the branch forgot it; the core reads such a
//!   copy as the branch's while the branch lists it); pending until a handover. Anything else fails,
//!   blind races included (the
//!   creating run's `ledger-check` read a listing taken before the other scope's intent: the claim must
//!   refuse one of them; `Sabotage::NoClaims` shows these), and so does a PR inheriting what another scope
//!   owns. After every committed handover the branch lists none of the identities handed over; then and
//!   at the end every resource listed by two scopes is the allowed pair. On the claims, after every
//!   receipt or claim write: a claim that names a scope whose ledger does not list the key (the claimer
//!   is about to write its intent, or died before it) coexists with no other scope's ledger owning the
//!   key, except for two states of the claim naming the branch while the PR owns the key: the claim
//!   *lags* (the branch's ledger lost the key by a handover to the PR, or by its own forget while the PR
//!   lists its inherited copy, and nothing wrote the claim since: the machine's `claim-move` or the
//!   adapter's `claim-free` is on its way, or failed, and then the claim is stale, the branch's lock
//!   having moved on, and the PR's next take moves it), or the PR's entry is a copy inherited from the
//!   branch, which the branch is re-creating (the allowed pair above follows).
//! - S2 nothing lost. A resource a handover takes out of the branch is owned afterwards (by the PR, or by
//!   the other party of a blind race), unless it no longer exists (the PR deleted it); at the end every
//!   resource that exists is owned by some scope (intents left by crashed runs count).
//! - S3 fenced. Every receipt write that lands (any scope, the machine's and the adapter's, handover
//!   included) was made by the run (or handover holder) that holds the cell's lock at that epoch, checked
//!   against `lock.json` in the same transaction, and the receipt names that holder and that epoch.
//! - C1 no release while the work runs: the machine sends its lease's `lock-release` (and ends with `done`)
//!   only once its command has stopped.
//! - C2 a cancelled run ends cancelled: a signal before the command started means it never starts and the
//!   verdict is `INTERRUPTED` (128 + signal); a signal while it runs ends with `INTERRUPTED` (or `LOCK_LOST`
//!   when the lease was lost too), a final receipt that lands says `cancelled`, and the command is stopped
//!   within the cancel grace of the first signal (unless the host froze meanwhile). Known deviation
//!   (machine, counted; `strict_cancel` fails it): a signal after the command ended, before `done`, still
//!   makes the verdict "cancelled ..., the receipt says `cancelled`" although the receipt says otherwise.
//! - C3 the work stops within the grace after a lost lease: a command running when its lease is lost (or
//!   must stop) has ended `graceMs` later (the machine sends SIGTERM, then SIGKILL), unless its host froze.
//!   (The lease simulation's I4g assumes exactly this of a host; here the real machine is held to it.)
//! - liveness: every run that did not crash ends (`done`) before the horizon.
//! - host contract: the machine never refuses a call made by the contract, asks for at most one lease
//!   request and one run step at a time, and says nothing after `done`.

use super::plan::Latency;
use super::rng::Rng;
use super::succession_host::World;
use super::world::Failure;
use baton_core::run::HostSignal;

pub(crate) const S1: &str = "S1 exactly one owner";
pub(crate) const S2: &str = "S2 nothing lost";
pub(crate) const S3: &str = "S3 fenced receipt writes";
pub(crate) const C1: &str = "C1 no release while the work runs";
pub(crate) const C2: &str = "C2 a cancelled run ends cancelled";
pub(crate) const C3: &str = "C3 the work stops within the grace after a lost lease";
pub(crate) const LIVE: &str = "liveness (every run ends before the horizon)";
pub(crate) const HOST: &str = "host contract (the machine refused a call made by the contract, or broke it)";

/// The true wall-clock time at virtual time 0 (2026-10-10T12:00:00Z).
pub(crate) const WALL0: i64 = 1_791_633_600_000;
pub(crate) const ENV: &str = "preview";
pub(crate) const LATEST: &str = "latest.json";
pub(crate) const SCOPES: [&str; 3] = ["branch-feat-x", "pr-7", "pr-8"];
/// Every cell of the store: the three scopes, and `pr-8`'s predecessor, which never runs (read only).
pub(crate) const CELLS: [&str; 4] = ["branch-feat-x", "pr-7", "pr-8", "branch-feat-y"];
pub(crate) const BRANCH: usize = 0;
pub(crate) const PR7: usize = 1;
pub(crate) const PR8: usize = 2;
pub(crate) const MAX_KEYS: usize = 5;
/// The claim cells (`_claims/<hash>`, one per key of the pool) follow the scope cells: key `k`'s is
/// `cells[CLAIM0 + k]`.
pub(crate) const CLAIM0: usize = CELLS.len();
/// Every cell of the simulated store.
pub(crate) const ALL_CELLS: usize = CLAIM0 + MAX_KEYS;

/// How a trace names cell `c`.
pub(crate) fn cell_name(c: usize) -> String {
    match CELLS.get(c) {
        Some(s) => (*s).to_owned(),
        None => format!("_claims(k{})", c - CLAIM0),
    }
}

/// A deliberate defect, to prove that the checks can fail.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Sabotage {
    None,
    /// The store drops the handover's write while answering success (S1 must catch the branch still
    /// listing what the PR took over).
    SkipHandoverRemoval,
    /// The host passes the predecessor's ledger (all it lists when the handover commits) as `successorLedger`
    /// instead of the PR's final ledger (S2 must catch what the PR never owned leaving the branch).
    HandOverPredecessorLedger,
    /// The store does not check fences: every fenced write carries whatever lock is current (S3).
    ForgedFence,
    /// The adapter creates what `ledger-check` refused with `OWNED_BY_OTHER_SCOPE` (S1 must catch the
    /// second owner).
    IgnoreRefusal,
    /// The host reports the command ended as soon as it signals it, without waiting for it to exit (C1 must
    /// catch the release while it still runs).
    ReportExitOnSignal,
    /// The host does not pass cancel signals on to the machine (C2 must catch the run that ends otherwise).
    DropCancel,
    /// The host carries out the machine's SIGKILL a TTL late (C3, or C2 for a cancel, must catch the
    /// command that outlives its grace).
    LateKill,
    /// The adapter skips `claim-take` (before the intent and before the record): only the check's listing
    /// stands between two scopes creating one key at once (S1 must catch the blind race's second owner).
    NoClaims,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Act {
    Create(u8),
    Rely(u8),
    Forget,
}

/// Signals to a run's host: the first `after` ms after the command started (or, `before_work`, after the
/// run started), and sometimes a SIGTERM `then` ms later (a CI runner's sequence).
#[derive(Clone, Copy, Debug)]
pub(crate) struct CancelPlan {
    pub(crate) before_work: bool,
    pub(crate) after: u64,
    pub(crate) first: HostSignal,
    pub(crate) then: Option<u64>,
}

#[derive(Clone, Debug)]
pub(crate) struct RunPlan {
    pub(crate) scope: usize,
    pub(crate) destroy: bool,
    pub(crate) start: u64,
    /// Wall clock minus true time (within +-margin/2).
    pub(crate) skew: i64,
    pub(crate) mono_off: u64,
    pub(crate) wait: bool,
    pub(crate) poll: u64,
    pub(crate) wait_timeout: u64,
    pub(crate) acts: Vec<Act>,
    /// The command fails (exits 1: run-finish not succeeded, no handover).
    pub(crate) fails: bool,
    /// Delay between a SIGINT/SIGTERM and the command's exit (unless it traps them).
    pub(crate) stop_delay: u64,
    pub(crate) crash_at: Option<u64>,
    /// Crashes as soon as its first intent is acknowledged (the provider create never happens).
    pub(crate) crash_after_intend: bool,
    /// Crashes as soon as its first claim is acknowledged (taken or re-stamped), before its intent.
    pub(crate) crash_after_claim: bool,
    pub(crate) pause: Option<(u64, u64)>,
    /// The command traps SIGINT and SIGTERM: only SIGKILL ends it early.
    pub(crate) traps: bool,
    pub(crate) cancel: Option<CancelPlan>,
}

#[derive(Clone, Debug)]
pub(crate) struct SuccessionPlan {
    pub(crate) seed: u64,
    pub(crate) ttl: u64,
    pub(crate) calm: bool,
    pub(crate) keys: u8,
    pub(crate) commit_lat: Latency,
    pub(crate) deliver_lat: Latency,
    /// The adapter's work between two store calls (the provider's create, deciding, ...).
    pub(crate) think: Latency,
    pub(crate) lost_permille: u64,
    /// The machine's `cancelGraceMs`: first cancel signal to SIGKILL.
    pub(crate) cancel_grace: u64,
    pub(crate) runs: Vec<RunPlan>,
    pub(crate) sabotage: Sabotage,
    /// Whether the (fixed) deviation of a handover that takes out what the PR only adopted fails the
    /// schedule (default) or is counted (`BATON_SIM_SUCCESSION_STRICT=0`).
    pub(crate) strict: bool,
    /// Whether the known deviation of a late cancel (see `Counters::late_cancel_verdicts`) fails the schedule.
    pub(crate) strict_cancel: bool,
    pub(crate) horizon: u64,
}

impl SuccessionPlan {
    pub(crate) fn generate(seed: u64) -> Self {
        let mut rng = Rng::new(seed, 21);
        let ttl = rng.pick(&[600, 900, 900, 1500]);
        // The lease's default margin: skews within +-margin/2 keep two hosts within the tolerance.
        let margin = ttl / 5;
        let calm = rng.chance(200);
        let lat = |rng: &mut Rng| {
            if calm {
                Latency::fixed_max(10)
            } else {
                Latency {
                    max: rng.pick(&[0, 2, 10, 40, 120]),
                    slow_permille: rng.pick(&[0, 0, 20, 80]),
                    slow_max: rng.range(ttl / 3, 2 * ttl),
                }
            }
        };
        let commit_lat = lat(&mut rng);
        let deliver_lat = lat(&mut rng);
        let think = if calm {
            Latency::fixed_max(20)
        } else {
            Latency {
                max: rng.pick(&[0, 10, 50, 150]),
                slow_permille: rng.pick(&[0, 30, 100]),
                slow_max: rng.range(ttl / 2, 2 * ttl),
            }
        };
        let lost_permille = if calm || rng.chance(400) { 0 } else { rng.range(5, 50) };
        let keys = rng.range(2, MAX_KEYS as u64) as u8;
        let half = (margin / 2) as i64;
        let n = rng.range(3, 5) as usize;
        // The cancellation faults draw from their own stream: the rest of a seed's schedule stays as it was.
        let mut crng = Rng::new(seed, 23);
        let mut krng = Rng::new(seed, 24);
        let cancel_grace = crng.range(ttl / 4, 2 * ttl);
        let mut runs = Vec::with_capacity(n);
        for i in 0..n {
            let scope = if i < 3 { i } else { rng.pick(&[BRANCH, PR7, PR7, PR8]) };
            let start = match (i, scope) {
                (0..=2, BRANCH) => rng.range(0, 2 * ttl),
                (0..=2, _) => rng.range(0, 3 * ttl),
                _ => rng.range(ttl, 6 * ttl),
            };
            let acts = (0..rng.range(1, 3))
                .map(|_| match rng.below(10) {
                    0..=5 => Act::Create(rng.below(u64::from(keys)) as u8),
                    6..=7 => Act::Rely(rng.below(u64::from(keys)) as u8),
                    _ => Act::Forget,
                })
                .collect();
            let mut run = RunPlan {
                scope,
                destroy: rng.chance(100),
                start,
                skew: rng.irange(-half, half),
                mono_off: rng.range(0, 1 << 40),
                wait: rng.chance(850),
                poll: rng.range(50, 300),
                wait_timeout: if calm { 40 * ttl } else { rng.range(2 * ttl, 8 * ttl) },
                acts,
                fails: rng.chance(60),
                stop_delay: rng.range(0, 50),
                crash_at: None,
                crash_after_intend: false,
                crash_after_claim: false,
                pause: None,
                traps: crng.chance(300),
                cancel: None,
            };
            if !calm {
                if rng.chance(100) {
                    run.crash_at = Some(start + rng.range(0, 4 * ttl));
                }
                run.crash_after_intend = rng.chance(80);
                // From its own stream, so that the rest of a seed's schedule stays as it was.
                run.crash_after_claim = krng.chance(60);
                if rng.chance(200) {
                    let dur = match rng.below(10) {
                        0..=4 => rng.range(20, ttl / 3),
                        5..=7 => rng.range(ttl / 3, ttl),
                        _ => rng.range(ttl, 3 * ttl),
                    };
                    run.pause = Some((start + rng.range(0, 3 * ttl), dur));
                }
            }
            if crng.chance(150) {
                let before_work = crng.chance(150);
                run.cancel = Some(CancelPlan {
                    before_work,
                    after: if before_work { crng.range(0, ttl) } else { crng.range(0, 300) },
                    first: if crng.chance(600) { HostSignal::Interrupt } else { HostSignal::Terminate },
                    then: crng.chance(500).then(|| crng.range(0, cancel_grace)),
                });
            }
            runs.push(run);
        }
        let mut plan = Self {
            seed,
            ttl,
            calm,
            keys,
            commit_lat,
            deliver_lat,
            think,
            lost_permille,
            cancel_grace,
            runs,
            sabotage: Sabotage::None,
            strict: false,
            strict_cancel: false,
            horizon: 0,
        };
        plan.horizon = plan.compute_horizon();
        plan
    }

    pub(crate) fn sabotaged(seed: u64, sabotage: Sabotage) -> Self {
        Self { sabotage, ..Self::generate(seed) }
    }

    /// A generous bound: every run waits its whole timeout (or an orphaned handover lock), then does every
    /// step at the slowest store, one after the other, is cancelled and killed at the end of the grace.
    fn compute_horizon(&self) -> u64 {
        let bound = |l: &Latency| if l.slow_permille > 0 { l.max.max(l.slow_max) } else { l.max };
        let step = bound(&self.commit_lat) + bound(&self.deliver_lat) + bound(&self.think);
        let last = self.runs.iter().map(|r| r.start + r.pause.map_or(0, |p| p.0)).max().unwrap_or(0);
        let per_run: u64 = self
            .runs
            .iter()
            .map(|r| {
                let cancel = r.cancel.map_or(0, |c| c.after + c.then.unwrap_or(0) + self.cancel_grace);
                r.wait_timeout + r.pause.map_or(0, |p| p.1) + cancel + 40 * step + 6 * self.ttl + 2_000
            })
            .sum();
        last + per_run
    }
}

/// What happened, summed over schedules.
#[derive(Clone, Debug, Default)]
pub(crate) struct Counters {
    pub(crate) schedules: u64,
    pub(crate) calm_schedules: u64,
    pub(crate) events: u64,
    pub(crate) store_requests: u64,
    pub(crate) runs: u64,
    pub(crate) destroy_runs: u64,
    pub(crate) grants: u64,
    pub(crate) takeovers: u64,
    pub(crate) acquire_failed: u64,
    pub(crate) stops: u64,
    pub(crate) receipt_writes: u64,
    pub(crate) writes_refused: u64,
    pub(crate) intents: u64,
    pub(crate) records: u64,
    pub(crate) intents_claimed: u64,
    pub(crate) forgets: u64,
    pub(crate) refused_creates: u64,
    pub(crate) adoptions: u64,
    pub(crate) finished_ok: u64,
    pub(crate) finished_failed: u64,
    pub(crate) finished_cancelled: u64,
    pub(crate) handover_attempts: u64,
    pub(crate) handovers: u64,
    pub(crate) handovers_empty: u64,
    pub(crate) handovers_busy: u64,
    pub(crate) handovers_refused: u64,
    pub(crate) handovers_failed: u64,
    pub(crate) moved: u64,
    pub(crate) inherited: u64,
    pub(crate) pending_pairs: u64,
    pub(crate) phantom_moves: u64,
    /// `claim-take` decisions: taken (no claim before), taken from a stale claim, re-stamped (the scope's
    /// own claim at another epoch), held (already this run's), inherited (the predecessor's); refusals
    /// (`OWNED_BY_OTHER_SCOPE`): by another scope's ledger, by a live claim whose scope does not list it yet;
    /// the needs answered (a listing, a claimer's facts); takes given up after 8 rounds (`STORE_CONTENDED`).
    pub(crate) claims_taken: u64,
    pub(crate) stale_claims_taken: u64,
    pub(crate) claims_restamped: u64,
    pub(crate) claims_held: u64,
    pub(crate) claims_inherited: u64,
    pub(crate) refused_by_ledger: u64,
    pub(crate) refused_by_live_claim: u64,
    pub(crate) claim_listings: u64,
    pub(crate) claim_facts_read: u64,
    pub(crate) takes_contended: u64,
    /// `claim-free` after a forget: freed, left (not this scope's, or already gone).
    pub(crate) claims_freed: u64,
    pub(crate) frees_noop: u64,
    /// The machine's `claim-move` after a handover: moved, left (a third scope's claim), failed (no reply).
    pub(crate) claims_moved: u64,
    pub(crate) claim_moves_left: u64,
    pub(crate) claim_moves_failed: u64,
    /// Observations of a claim still naming the branch after a handover gave its ledger entry to the PR
    /// (allowed until the claim is written again; see `succession_checks.rs`).
    pub(crate) lagging_claims_seen: u64,
    /// Observations of a claim naming the branch (about to re-create a key it forgot) while the PR lists a
    /// copy of it inherited from the branch.
    pub(crate) claims_beside_copies: u64,
    /// Observations of the PR holding the claim of what it inherits while the branch still lists it.
    pub(crate) claims_of_inherited: u64,
    pub(crate) crashes_after_claim: u64,
    pub(crate) intents_left: u64,
    pub(crate) lost_replies: u64,
    pub(crate) failed_commits: u64,
    pub(crate) pauses: u64,
    pub(crate) crashes: u64,
    pub(crate) crashes_after_intent: u64,
    pub(crate) zombie_creates: u64,
    pub(crate) zombie_orphans: u64,
    /// Works started; stop signals (SIGINT/SIGTERM) and SIGKILLs the machine sent them; stop signals a
    /// trapping command ignored.
    pub(crate) works: u64,
    pub(crate) work_stops: u64,
    pub(crate) kills: u64,
    pub(crate) trapped: u64,
    /// Leases lost (or that had to stop) while the command ran.
    pub(crate) stops_mid_work: u64,
    /// Cancels: the first signal came before the command started, while it ran, after it ended.
    pub(crate) cancels_before_work: u64,
    pub(crate) cancels_mid_work: u64,
    pub(crate) cancels_after_work: u64,
    /// Verdicts: ok, `INTERRUPTED`, `LOCK_LOST`, `COMMAND_FAILED`, anything else.
    pub(crate) verdicts_ok: u64,
    pub(crate) verdicts_interrupted: u64,
    pub(crate) verdicts_lost: u64,
    pub(crate) verdicts_failed: u64,
    pub(crate) verdicts_other: u64,
    /// The fixed deviation (core): a handover took out of the branch a resource the PR had only adopted,
    /// and no scope owns it any more. Counted when not strict.
    pub(crate) adopted_handovers: u64,
    pub(crate) first_adopted_handover_seed: u64,
    /// Known deviation (machine): a signal that came after the command ended (while the final receipt,
    /// the handover or the release was on its way) made the verdict `INTERRUPTED` ("... the receipt says
    /// `cancelled`") although the final receipt says `complete` or `failed`. Fails when `strict_cancel`.
    pub(crate) late_cancel_verdicts: u64,
    pub(crate) first_late_cancel_seed: u64,
}

impl Counters {
    pub(crate) fn new() -> Self {
        Self { first_adopted_handover_seed: u64::MAX, first_late_cancel_seed: u64::MAX, ..Self::default() }
    }

    pub(crate) fn add(&mut self, o: &Self) {
        macro_rules! sum {
            ($($f:ident),*) => { $( self.$f += o.$f; )* };
        }
        sum!(
            schedules,
            calm_schedules,
            events,
            store_requests,
            runs,
            destroy_runs,
            grants,
            takeovers,
            acquire_failed,
            stops,
            receipt_writes,
            writes_refused,
            intents,
            records,
            intents_claimed,
            forgets,
            refused_creates,
            adoptions,
            finished_ok,
            finished_failed,
            finished_cancelled,
            handover_attempts,
            handovers,
            handovers_empty,
            handovers_busy,
            handovers_refused,
            handovers_failed,
            moved,
            inherited,
            pending_pairs,
            phantom_moves,
            claims_taken,
            stale_claims_taken,
            claims_restamped,
            claims_held,
            claims_inherited,
            refused_by_ledger,
            refused_by_live_claim,
            claim_listings,
            claim_facts_read,
            takes_contended,
            claims_freed,
            frees_noop,
            claims_moved,
            claim_moves_left,
            claim_moves_failed,
            lagging_claims_seen,
            claims_beside_copies,
            claims_of_inherited,
            crashes_after_claim,
            intents_left,
            lost_replies,
            failed_commits,
            pauses,
            crashes,
            crashes_after_intent,
            zombie_creates,
            zombie_orphans,
            works,
            work_stops,
            kills,
            trapped,
            stops_mid_work,
            cancels_before_work,
            cancels_mid_work,
            cancels_after_work,
            verdicts_ok,
            verdicts_interrupted,
            verdicts_lost,
            verdicts_failed,
            verdicts_other,
            adopted_handovers,
            late_cancel_verdicts
        );
        self.first_late_cancel_seed = self.first_late_cancel_seed.min(o.first_late_cancel_seed);
        self.first_adopted_handover_seed = self.first_adopted_handover_seed.min(o.first_adopted_handover_seed);
    }
}

/// Runs one succession schedule.
pub(crate) fn run(plan: &SuccessionPlan) -> Result<Counters, Failure> {
    let mut w = World::new(plan)?;
    w.run()?;
    Ok(w.c)
}
