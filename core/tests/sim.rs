//! Deterministic simulation of lease holders contending for one cell (DESIGN.md §9).
//!
//! Each schedule is drawn from its seed (`sim/plan.rs`): 2-5 holders, each driving its own `LeaseMachine`
//! by the host contract (one call, drain `poll_action()`, schedule `poll_timeout()`), on a virtual clock
//! (`sim/world.rs`, an event queue ordered by time and sequence). The fake store executes every request as
//! a cell transaction at its commit time: `api::invoke(op, request + {cell, nowMs})` with the committing
//! holder's wall clock, then applies the changes. Faults: store latency before the commit and before the
//! reply (sometimes beyond the renewal period and the TTL), lost replies (committed or not), wall clocks
//! read at load time (stale by the commit, when the cell did not change meanwhile), clock steps, freezes
//! (sometimes longer than the TTL; requests already sent still commit), crashes, late starts, waiting
//! holders, cancels (`release()` at any time), a re-run reusing a holder name, and fenced writes that
//! reach the store long after their token was checked. Per-holder wall-clock skew is within +-margin/2,
//! so two holders differ by at most the margin; 20% of schedules are "calm" (no crash, freeze or lost
//! reply, a fast store) and also get the liveness checks.
//!
//! Invariants, checked over the whole history (a failure names the invariant, the seed and a trace):
//! - I1 one writer per epoch: accepted fenced writes at an epoch come from one holder, the one the store
//!   granted that epoch to (and a holder told `acquired` at epoch e was granted e by the store).
//! - I2 epochs strictly increase: every committed grant (observed from the store's changes, lock.json and
//!   epoch.json) is above every earlier one, also after releases deleted lock.json.
//! - I3 no write after takeover: no fenced write at an epoch below the highest granted is accepted.
//! - I4 no overlapping validity: at every event time at most one non-crashed holder has a fencing token
//!   (frozen holders count: the token is a pure function of time).
//! - I5 paced: a machine never has two store requests in flight (tracked by id).
//! - I6 liveness: the schedule ends before a horizon and every machine that did not crash finishes; in
//!   calm schedules every waiting holder gets the lock, nobody is stopped, and every lock taken is removed.
//! - I7 release() ends the lease with `released` or `release-failed`, as the lease module documents, also
//!   when the acquire it interrupted fails.
//!
//! Tests: `simulation` (`BATON_SIM_SCHEDULES`, default 2000, from `BATON_SIM_SEED`, default 0; prints its
//! counters); `control_broken_clocks` (clocks more than the TTL apart: I4 must fail, the fence must still
//! keep I1-I3); `tolerance_is_exactly_the_margin` (clocks exactly the margin apart pass with takeovers at
//! the last millisecond; one millisecond more fails I4); `checkers_catch_sabotage` (a store or host with a
//! known defect is caught by the invariant it breaks).
//!
//! Succession (`sim/succession.rs`, `sim/succession_host.rs`, `sim/succession_checks.rs`,
//! `sim/succession_store.rs`): a branch scope, its PR scope and an unrelated PR scope, each with runs that
//! are real `RunMachine`s (`baton_core::run`) driven by a simulated host: `store`/`read` actions go to the
//! simulated store (latency, lost replies), `start-work` starts a simulated command that records what it
//! owns with fenced ledger calls at the exported epoch (claims taken before intents and records, intents,
//! records, forgets and the claims freed after them, adoptions, refused creates, destroy runs) on a store
//! that also holds a claim cell per key, `signal` stops or kills it, `done` ends the run; crashes drop the machine,
//! freezes delay its host, cancels signal it (mostly while the command runs). Invariants S1 exactly one
//! owner, S2 nothing lost, S3 fenced receipt writes, C1 no release while the work runs, C2 a cancelled run
//! ends cancelled, C3 the work stops within the grace after a lost lease, liveness and the host contract.
//! Tests: `succession_simulation` (same variables; two owners of any kind fail S1, blind races included;
//! `BATON_SIM_SUCCESSION_STRICT=0` only counts the fixed adopted-handover deviation; `BATON_SIM_CANCEL_STRICT=0`
//! only counts a late signal's verdict against the receipt, fixed in the machine, so it fails by default); `succession_checkers_catch_sabotage`
//! (each invariant's control: see the test).

#[path = "sim/plan.rs"]
mod plan;
#[path = "sim/rng.rs"]
mod rng;
#[path = "sim/succession.rs"]
mod succession;
#[path = "sim/succession_checks.rs"]
mod succession_checks;
#[path = "sim/succession_command.rs"]
mod succession_command;
#[path = "sim/succession_host.rs"]
mod succession_host;
#[path = "sim/succession_store.rs"]
mod succession_store;
#[path = "sim/world.rs"]
mod world;

use plan::{Plan, Sabotage};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use world::{Counters, Failure};

fn env_u64(name: &str, default: u64) -> u64 {
    match std::env::var(name) {
        Ok(v) => v.trim().replace('_', "").parse().unwrap_or_else(|_| panic!("{name}={v:?} is not a number")),
        Err(_) => default,
    }
}

/// Runs the seeds `first..first + count` on every core with `run`. Returns the counters summed with `add`
/// (starting from `fresh()`) and the failure of the lowest failing seed (every lower seed has run and passed,
/// so the report does not depend on threads).
fn run_seeds<C: Send>(
    first: u64,
    count: u64,
    fresh: impl Fn() -> C + Sync,
    add: impl Fn(&mut C, &C) + Sync,
    run: impl Fn(u64) -> Result<C, Failure> + Sync,
) -> (C, Option<(u64, Failure)>) {
    let next = AtomicU64::new(first);
    let stop = AtomicU64::new(u64::MAX);
    let end = first.saturating_add(count);
    let total = Mutex::new(fresh());
    let failed: Mutex<Option<(u64, Failure)>> = Mutex::new(None);
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get()).min(16);
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                let mut mine = fresh();
                loop {
                    let seed = next.fetch_add(1, Ordering::Relaxed);
                    if seed >= end || seed > stop.load(Ordering::Relaxed) {
                        break;
                    }
                    match run(seed) {
                        Ok(c) => add(&mut mine, &c),
                        Err(f) => {
                            stop.fetch_min(seed, Ordering::Relaxed);
                            let mut slot = failed.lock().unwrap_or_else(|e| e.into_inner());
                            if slot.as_ref().is_none_or(|(s, _)| seed < *s) {
                                *slot = Some((seed, f));
                            }
                        }
                    }
                }
                add(&mut total.lock().unwrap_or_else(|e| e.into_inner()), &mine);
            });
        }
    });
    (total.into_inner().unwrap_or_else(|e| e.into_inner()), failed.into_inner().unwrap_or_else(|e| e.into_inner()))
}

/// Runs the lease schedules `first..first + count` (see [`run_seeds`]).
fn run_many(first: u64, count: u64, make: impl Fn(u64) -> Plan + Sync) -> (Counters, Option<(u64, Failure)>) {
    run_seeds(first, count, Counters::default, Counters::add, |seed| world::run(&make(seed)))
}

fn ms(v: u64) -> String {
    if v == u64::MAX { "n/a".into() } else { format!("{v} ms") }
}

fn report(c: &Counters) -> String {
    format!(
        "{} schedules ({} calm), {} events, {} store requests\n\
         grants {} (takeovers {}, orphaned by a lost reply {}), highest epoch {}\n\
         fenced writes accepted {}, refused {} (of which after a takeover {})\n\
         acquired {}, waiting {}, acquire-failed {}, renewed {}, renew-failed {}\n\
         must-stop {}, lost {}, released {}, release-failed {}\n\
         token handovers {} (closest gap {}, {} within 5 ms; after a takeover {}, closest gap {})\n\
         release() during an acquire that then failed, ended with acquire-failed (I7 known deviation): {}\n\
         faults: lost replies {}, failed commits {}, stale clock reads {}, freezes {}, crashes {}",
        c.schedules,
        c.calm_schedules,
        c.events,
        c.store_requests,
        c.grants,
        c.takeovers,
        c.orphaned_grants,
        c.max_epoch,
        c.writes_accepted,
        c.writes_refused,
        c.writes_refused_after_takeover,
        c.acquired,
        c.waiting,
        c.acquire_failed,
        c.renewed,
        c.renew_failed,
        c.must_stop,
        c.lost,
        c.released,
        c.release_failed,
        c.handovers,
        ms(c.min_handover_gap),
        c.close_handovers,
        c.takeover_handovers,
        ms(c.min_takeover_gap),
        c.release_ended_acquire_failed,
        c.lost_replies,
        c.failed_commits,
        c.stale_clock_reads,
        c.pauses,
        c.crashes,
    )
}

#[test]
fn simulation() {
    let count = env_u64("BATON_SIM_SCHEDULES", 2_000);
    let first = env_u64("BATON_SIM_SEED", 0);
    let started = std::time::Instant::now();
    // Both deviations this used to count were fixed in the core; `BATON_SIM_STRICT=0` only counts them.
    let strict = env_u64("BATON_SIM_STRICT", 1) != 0;
    let (c, failed) = run_many(first, count, |seed| Plan { strict, ..Plan::generate(seed) });
    if let Some((seed, f)) = failed {
        let msg =
            format!("simulation failed: seed {seed} (rerun with BATON_SIM_SEED={seed} BATON_SIM_SCHEDULES=1)\n{f}");
        panic!("{msg}");
    }
    eprintln!("simulation: seeds {first}..{} in {:.1?}\n{}", first + count, started.elapsed(), report(&c));
    if count >= 500 {
        // A simulation that never exercises a takeover or a refused write proves nothing.
        let exercised = [
            ("grants", c.grants),
            ("takeovers", c.takeovers),
            ("fenced writes accepted", c.writes_accepted),
            ("fenced writes refused", c.writes_refused),
            ("fenced writes refused after a takeover", c.writes_refused_after_takeover),
            ("must-stop events", c.must_stop),
            ("lost events", c.lost),
            ("lost replies", c.lost_replies),
            ("stale clock reads", c.stale_clock_reads),
            ("freezes", c.pauses),
            ("crashes", c.crashes),
            ("calm schedules", c.calm_schedules),
        ];
        for (what, n) in exercised {
            assert!(n > 0, "no {what} in {count} schedules: the simulation does not exercise its faults");
        }
    }
}

/// The control: holders whose wall clocks differ by more than the TTL. I4 must catch the overlap (the
/// checker can fail), and with I4 off the store's fence must still keep I1, I2, I3 and I5.
#[test]
fn control_broken_clocks() {
    let mut found = None;
    for seed in 0..1_000 {
        match world::run(&Plan::control(seed, true)) {
            Ok(_) => {}
            Err(f) if f.invariant == world::I4 => {
                found = Some((seed, f));
                break;
            }
            Err(f) => panic!("control seed {seed} failed on something other than I4:\n{f}"),
        }
    }
    let (seed, f) = found.expect("skew beyond the TTL never produced two holders with a token: I4 cannot fail");
    eprintln!("control: seed {seed} violates I4 as expected: {}", f.detail);

    let (c, failed) = run_many(0, 1_000, |seed| Plan::control(seed, false));
    if let Some((seed, f)) = failed {
        panic!("control (I4 off) seed {seed}: fencing must hold whatever the clocks say\n{f}");
    }
    eprintln!("control (I4 off):\n{}", report(&c));
    assert!(c.takeovers > 0 && c.writes_refused_after_takeover > 0 && c.lost > 0, "{c:?}");
}

/// Each invariant check can fail: a host or store with a known defect is caught by the invariant it breaks.
/// (I4 is shown by the control above; I5 is about the machine's own output and cannot be provoked from
/// outside it.)
#[test]
fn checkers_catch_sabotage() {
    let cases = [
        (Sabotage::UnfencedWrites, &[world::I1, world::I3][..]),
        (Sabotage::ForgetEpochs, &[world::I2][..]),
        (Sabotage::NoWakeups, &[world::I6][..]),
    ];
    for (sabotage, expected) in cases {
        let caught = (0..2_000).find_map(|seed| world::run(&Plan::sabotaged(seed, sabotage)).err().map(|f| (seed, f)));
        let Some((seed, f)) = caught else { panic!("{sabotage:?} was never caught in 2000 schedules") };
        assert!(
            expected.contains(&f.invariant),
            "{sabotage:?} (seed {seed}) was reported as the wrong invariant:\n{f}"
        );
        eprintln!("{sabotage:?}: caught at seed {seed} by {}: {}", f.invariant, f.detail);
    }
}

/// The clock tolerance is exactly the margin: with wall clocks `margin` apart, schedules aimed at the edge
/// take locks over on the very millisecond the previous holder's token ends (gap 0) and I4 holds; one
/// millisecond more and I4 fails.
#[test]
fn tolerance_is_exactly_the_margin() {
    let (c, failed) = run_many(0, 300, |seed| Plan::edge(seed, 0));
    if let Some((seed, f)) = failed {
        panic!(
            "edge schedule {seed} with clocks exactly `margin` apart failed (rerun with Plan::edge({seed}, 0))\n{f}"
        );
    }
    eprintln!("edge (clocks margin apart):\n{}", report(&c));
    assert_eq!(c.min_takeover_gap, 0, "the edge schedules never took a lock over at the last millisecond");

    let caught = (0..2_000).find_map(|seed| world::run(&Plan::edge(seed, 1)).err().map(|f| (seed, f)));
    let Some((seed, f)) = caught else { panic!("clocks margin + 1 ms apart never violated I4 in 2000 edge schedules") };
    assert_eq!(f.invariant, world::I4, "edge seed {seed} (margin + 1 ms):\n{f}");
    eprintln!("edge (clocks margin + 1 ms apart): seed {seed} violates I4 as expected: {}", f.detail);
}

/// I4g: with wall clocks at most half the margin apart, the work may run on for `graceMs` after
/// must-stop/lost (the host kills it then, and releases after) and still no two holders work at once.
/// A stop that comes late (the holder thaws from a freeze past its deadline) gets only what is left of the
/// grace, so this holds too.
#[test]
fn grace_period() {
    let count = env_u64("BATON_SIM_SCHEDULES", 2_000);
    let first = env_u64("BATON_SIM_SEED", 0);
    // Both deviations this used to count were fixed in the core; `BATON_SIM_STRICT=0` only counts them.
    let strict = env_u64("BATON_SIM_STRICT", 1) != 0;
    let (c, failed) = run_many(first, count, |seed| Plan { strict, ..Plan::grace(seed) });
    if let Some((seed, f)) = failed {
        panic!("grace simulation failed: seed {seed} (rerun with BATON_SIM_SEED={seed} BATON_SIM_SCHEDULES=1)\n{f}");
    }
    eprintln!(
        "grace (clocks at most margin/2 apart): {} schedules, {} grace periods after work had started; {} of them \
         after a stop that came late (on thawing from a freeze) overlapped another holder's work (I4g known deviation)",
        c.schedules, c.graces, c.late_graces_overlapping
    );
    if count >= 500 {
        assert!(c.graces > 0, "no grace period was exercised");
    }
}

/// Runs the succession schedules `first..first + count` (see [`run_seeds`]).
fn run_many_succession(
    first: u64,
    count: u64,
    make: impl Fn(u64) -> succession::SuccessionPlan + Sync,
) -> (succession::Counters, Option<(u64, Failure)>) {
    run_seeds(first, count, succession::Counters::new, succession::Counters::add, |seed| succession::run(&make(seed)))
}

fn seed_or_none(s: u64) -> String {
    if s == u64::MAX { "none".into() } else { format!("first at seed {s}") }
}

fn succession_report(c: &succession::Counters) -> String {
    format!(
        "{} schedules ({} calm), {} events, {} store requests, {} runs ({} destroy)\n\
         lease grants {} (takeovers {}), acquire-failed {}, must-stop/lost {}\n\
         receipt writes landed {}, refused by the fence {}\n\
         intents {}, records {}, intents claimed {}, forgets {}, refused creates (OWNED_BY_OTHER_SCOPE) {}, adoptions {}\n\
         final receipts complete {}, failed {}, cancelled {}; entries inherited {}\n\
         handovers attempted {}: moved {} entries in {}, nothing to move {}, busy (LOCK_HELD) {}, fenced out {}, failed {}; \
         already deleted by the PR {}\n\
         two owners allowed: pending PR/branch {}; claims lagging behind a handover or forget (seen) {}, claims of the branch beside the PR's inherited copy (seen) {}, claims the PR took of what it inherits (seen) {}\n\
         claim-take: taken {}, stale claims taken {}, re-stamped {}, held {}, inherited {}; refused (OWNED_BY_OTHER_SCOPE) by a ledger {}, by a live claim {}; \
         listings for it {}, claimers' facts read {}, given up (STORE_CONTENDED) {}\n\
         claim-free: freed {}, nothing to free {}; claim-move: moved {}, left (a third scope's) {}, no reply {}\n\
         intents left at the end {}\n\
         commands started {}: stop signals {} (ignored by a trapping command {}), SIGKILLs {}; leases lost while one ran {}\n\
         cancels: before the command {}, while it ran {}, after it ended {}\n\
         verdicts: ok {}, INTERRUPTED {}, LOCK_LOST {}, COMMAND_FAILED {}, other {}\n\
         faults: lost replies {}, failed commits {}, freezes {}, crashes {} (right after an intent {}, between a claim and its intent {})\n\
         provider creates by an adapter whose lease had ended (unfenced) {}, leaving a resource nobody owns {}\n\
         KNOWN DEVIATION (core): handovers that took out of the branch a resource the PR only adopted, leaving it without owner: {} ({})\n\
         KNOWN DEVIATION (run machine): a signal after the command ended turned the verdict into INTERRUPTED (\"the receipt says `cancelled`\") against the final receipt: {} ({})",
        c.schedules,
        c.calm_schedules,
        c.events,
        c.store_requests,
        c.runs,
        c.destroy_runs,
        c.grants,
        c.takeovers,
        c.acquire_failed,
        c.stops,
        c.receipt_writes,
        c.writes_refused,
        c.intents,
        c.records,
        c.intents_claimed,
        c.forgets,
        c.refused_creates,
        c.adoptions,
        c.finished_ok,
        c.finished_failed,
        c.finished_cancelled,
        c.inherited,
        c.handover_attempts,
        c.moved,
        c.handovers,
        c.handovers_empty,
        c.handovers_busy,
        c.handovers_refused,
        c.handovers_failed,
        c.phantom_moves,
        c.pending_pairs,
        c.lagging_claims_seen,
        c.claims_beside_copies,
        c.claims_of_inherited,
        c.claims_taken,
        c.stale_claims_taken,
        c.claims_restamped,
        c.claims_held,
        c.claims_inherited,
        c.refused_by_ledger,
        c.refused_by_live_claim,
        c.claim_listings,
        c.claim_facts_read,
        c.takes_contended,
        c.claims_freed,
        c.frees_noop,
        c.claims_moved,
        c.claim_moves_left,
        c.claim_moves_failed,
        c.intents_left,
        c.works,
        c.work_stops,
        c.trapped,
        c.kills,
        c.stops_mid_work,
        c.cancels_before_work,
        c.cancels_mid_work,
        c.cancels_after_work,
        c.verdicts_ok,
        c.verdicts_interrupted,
        c.verdicts_lost,
        c.verdicts_failed,
        c.verdicts_other,
        c.lost_replies,
        c.failed_commits,
        c.pauses,
        c.crashes,
        c.crashes_after_intent,
        c.crashes_after_claim,
        c.zombie_creates,
        c.zombie_orphans,
        c.adopted_handovers,
        seed_or_none(c.first_adopted_handover_seed),
        c.late_cancel_verdicts,
        seed_or_none(c.first_late_cancel_seed),
    )
}

/// S1-S3, C1, C2 over succession schedules: a branch scope, its PR scope and an unrelated PR scope, each with
/// runs (`RunMachine`s) that take their lease, whose commands record what they own, that are cancelled, and
/// (the PR) hand the branch's resources over.
#[test]
fn succession_simulation() {
    let count = env_u64("BATON_SIM_SCHEDULES", 2_000);
    let first = env_u64("BATON_SIM_SEED", 0);
    let started = std::time::Instant::now();
    // `BATON_SIM_SUCCESSION_STRICT=0` only counts a handover of an adopted entry (fixed in the core, so it
    // fails by default). Two owners of any kind (blind races included) always fail S1.
    // `BATON_SIM_CANCEL_STRICT=0` only counts a late signal's verdict against the receipt (fixed in the run
    // machine, so it fails by default).
    let strict = env_u64("BATON_SIM_SUCCESSION_STRICT", 1) != 0;
    let strict_cancel = env_u64("BATON_SIM_CANCEL_STRICT", 1) != 0;
    let (c, failed) = run_many_succession(first, count, |seed| succession::SuccessionPlan {
        strict,
        strict_cancel,
        ..succession::SuccessionPlan::generate(seed)
    });
    if let Some((seed, f)) = failed {
        panic!(
            "succession simulation failed: seed {seed} (rerun with BATON_SIM_SEED={seed} BATON_SIM_SCHEDULES=1)\n{f}"
        );
    }
    eprintln!("succession: seeds {first}..{} in {:.1?}\n{}", first + count, started.elapsed(), succession_report(&c));
    if count >= 500 {
        let exercised = [
            ("takeovers", c.takeovers),
            ("handovers that moved something", c.handovers),
            ("busy handovers", c.handovers_busy),
            ("adoptions", c.adoptions),
            ("refused creates", c.refused_creates),
            ("intents claimed", c.intents_claimed),
            ("forgets", c.forgets),
            ("writes refused by the fence", c.writes_refused),
            ("pending PR/branch pairs", c.pending_pairs),
            ("intents left at the end", c.intents_left),
            ("crashes right after an intent", c.crashes_after_intent),
            ("crashes between a claim and its intent", c.crashes_after_claim),
            ("claims taken", c.claims_taken),
            ("stale claims taken", c.stale_claims_taken),
            ("claims re-stamped", c.claims_restamped),
            ("creates refused by a live claim", c.refused_by_live_claim),
            ("claims freed", c.claims_freed),
            ("claims moved by a handover", c.claims_moved),
            ("lost replies", c.lost_replies),
            ("freezes", c.pauses),
            ("cancels before the command started", c.cancels_before_work),
            ("cancels while the command ran", c.cancels_mid_work),
            ("final receipts that say cancelled", c.finished_cancelled),
            ("stop signals a command trapped", c.trapped),
            ("SIGKILLs", c.kills),
            ("leases lost while the command ran", c.stops_mid_work),
            ("LOCK_LOST verdicts", c.verdicts_lost),
        ];
        for (what, n) in exercised {
            assert!(n > 0, "no {what} in {count} succession schedules: the simulation does not exercise it");
        }
    }
}

/// The succession checks can fail: a store, host or command with a known defect is caught by the invariant
/// it breaks. S1: a handover whose removal is dropped, and an adapter that creates what `ledger-check`
/// refused; S2: a host that hands over the predecessor's ledger; S3: unchecked fences; C1: a host that
/// reports the command ended when it only signalled it; C2: a host that drops cancel signals; C3: a host
/// that carries out SIGKILL late; S1 again: an adapter that takes no claims (two scopes own one key).
#[test]
fn succession_checkers_catch_sabotage() {
    use succession::Sabotage;
    let cases = [
        (Sabotage::SkipHandoverRemoval, &[succession::S1][..]),
        (Sabotage::HandOverPredecessorLedger, &[succession::S2][..]),
        (Sabotage::ForgedFence, &[succession::S3][..]),
        (Sabotage::IgnoreRefusal, &[succession::S1][..]),
        (Sabotage::ReportExitOnSignal, &[succession::C1][..]),
        (Sabotage::DropCancel, &[succession::C2][..]),
        (Sabotage::LateKill, &[succession::C3, succession::C2][..]),
        (Sabotage::NoClaims, &[succession::S1][..]),
    ];
    for (sabotage, expected) in cases {
        let caught = (0..5_000).find_map(|seed| {
            succession::run(&succession::SuccessionPlan::sabotaged(seed, sabotage)).err().map(|f| (seed, f))
        });
        let Some((seed, f)) = caught else { panic!("{sabotage:?} was never caught in 5000 succession schedules") };
        assert!(
            expected.contains(&f.invariant),
            "{sabotage:?} (seed {seed}) was reported as the wrong invariant:\n{f}"
        );
        eprintln!("{sabotage:?}: caught at seed {seed} by {}: {}", f.invariant, f.detail);
    }
}

/// A window the random schedules reach too rarely to rely on (a zombie adapter's take between a newer run's
/// take and its intent), played directly on the claim transactions: a run of `pr-8` at epoch 1 whose lease
/// was taken over (its writes fenced out) must not re-stamp the claim that `pr-8`'s run at epoch 2 took,
/// or `pr-9` would judge that claim stale (the lock moved on from epoch 1, the ledger lists nothing yet),
/// take it, and both scopes would own the key once epoch 2's intent lands.
#[test]
fn succession_claim_of_an_older_epoch_stays() {
    use baton_core::cell::{Cell, Change};
    use baton_core::claims::{self, ClaimFacts, TakeRequest};
    use baton_core::ownership::OtherScope;
    let res = succession_command::resource(0);
    let (env, scope) = claims::claim_cell("preview", &res.adapter, &res.provider, &res.key);
    let mut cell = Cell { env, scope, ..Cell::default() };
    let others = vec![OtherScope { scope: "pr-8".into(), text: None }, OtherScope { scope: "pr-9".into(), text: None }];
    // Each take lists after the claim cell's generation it saw (here: the cell as it is).
    let request = |scope: &str, epoch: u64, facts: Option<ClaimFacts>, listed_at: u64| TakeRequest {
        env: "preview".into(),
        scope: scope.into(),
        holder: format!("run-{scope}-{epoch}"),
        epoch,
        resource: res.clone(),
        predecessor: None,
        others: Some(others.clone()),
        listed_at: Some(listed_at),
        facts,
        dry_run: false,
    };
    let taken = claims::take(&cell, 0, &request("pr-8", 2, None, 0)).expect("the first claim");
    assert_eq!(taken["outcome"], "taken", "{taken}");
    let changes: Vec<Change> = serde_json::from_value(taken["changes"].clone()).expect("changes");
    cell.apply(&changes);
    // pr-8's cell as both takers read it: the lock at epoch 2, the intent of epoch 2 not landed yet.
    let facts = |claim_epoch| Some(ClaimFacts { scope: "pr-8".into(), claim_epoch, lock_epoch: Some(2), lists: false });
    let zombie = claims::take(&cell, 0, &request("pr-8", 1, facts(2), 1));
    let code = zombie.as_ref().map(|v| v["outcome"].to_string()).map_err(|e| e.code.as_str());
    assert_eq!(code, Err("LOCK_LOST"), "epoch 1 of pr-8 took back the claim of epoch 2");
    let claim = claims::read_claim(&cell).expect("claim").expect("a claim");
    assert_eq!((claim.scope.as_str(), claim.epoch), ("pr-8", 2));
    let other = claims::take(&cell, 0, &request("pr-9", 1, facts(2), 1));
    assert_eq!(other.map_err(|e| e.code.as_str()).err(), Some("OWNED_BY_OTHER_SCOPE"), "pr-9 took a live claim");
}
