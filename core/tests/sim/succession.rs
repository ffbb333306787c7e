//! Succession schedules: runs of three scopes of one environment, each on its own lease, recording what
//! they own, and the handover from a branch scope to its pull request (DESIGN.md §9: "after succession
//! each resource has exactly one owner").
//!
//! The scopes are `branch-feat-x` (context branch `feat/x`), its PR scope `pr-7` (branch `feat/x`, PR 7) and
//! the unrelated `pr-8` (branch `feat/y`, PR 8, whose predecessor `branch-feat-y` never has a receipt). Each
//! schedule has 3-5 runs, at least one per scope. A run is a host and its adapter: it takes its scope's
//! lease through a `LeaseMachine` (renewals, must-stop, release), then calls the ownership operations as
//! cell transactions, each with the store's latency before the commit and before the reply:
//! - an apply run: the PR run first reads the predecessor's `latest.json` (a separate read, so it may be
//!   stale by the time `run-begin` commits) and, as `host-native` does, passes it only when there is one;
//!   `run-begin`; then 1-3 actions on keys drawn from a pool of 2-5 shared by all scopes: *create* (list
//!   every scope's `latest.json`, `ledger-check change=true` against that listing with the predecessor
//!   `succession` names; on `OWNED_BY_OTHER_SCOPE` skip, on an own intent claim it with `ledger-record`, on
//!   an owned entry do nothing, else `ledger-intend`, the provider's create, `ledger-record`), *rely* (on a
//!   resource that exists: list, `ledger-check change=false`, which records a foreign one as `adopted`) or
//!   *forget* (delete one its receipt lists as owned or intended, then `ledger-forget`); then `run-finish`
//!   (succeeded unless a step failed, the lease was stopped or the command fails) and, after a successful
//!   PR run with a predecessor, the handover as `host-native` does it: `lock-acquire` of the predecessor's
//!   cell as `handover-<runId>` (60 s, no wait; `LOCK_HELD`: skipped, the next PR run retries), `handover`
//!   fenced by that lock with `successorLedger` = the PR's final ledger, `lock-release`; then the release;
//! - a destroy run (any scope, sometimes): `run-begin destroy=true`, `destroy-plan`, delete and
//!   `ledger-forget` each resource, `run-finish`.
//!
//! The provider is modelled per key: a resource exists from its create (an upsert, just before
//! `ledger-record`) until a delete (just before `ledger-forget`).
//!
//! Faults: store latency (sometimes beyond the TTL), lost replies (committed or not: the step fails, the
//! run finishes as failed), slow provider calls between steps, freezes (sometimes beyond the TTL: the lease
//! is taken over and the frozen run's later writes are refused), crashes (anywhere, or right after an
//! intent landed, leaving it), clock skew within the lease margin. On must-stop or lost the host kills the
//! adapter (an operation already sent still commits), writes `run-finish` as failed, and releases. An
//! adapter that thaws from a freeze may act before its host does: a provider create it then makes after its
//! lease ended ("zombie") is fenced by nothing; it is counted, and a resource it leaves without owner is not
//! held against S2.
//!
//! Invariants (a failure names the invariant, the seed and a trace; positions `#n` count receipt writes):
//! - S1 exactly one owner. Whenever a scope starts listing a resource as owned (`baton` or `intent`) while
//!   another scope lists it too, it must be allowed: the PR creating or inheriting what its predecessor
//!   lists (pending until a handover); a *blind* race, where the creating run's `ledger-check` read a
//!   listing taken before the other scope's claim (check and intent are transactions on different cells,
//!   so nothing excludes two scopes; counted); a PR inheriting what its predecessor already shared with
//!   another scope (counted). A create whose listing already showed the other claim fails S1: the branch
//!   re-creating what it handed over, the unrelated scope creating what another scope owned first (it may
//!   rely on it: `adopted`). After every committed handover the branch lists none of the identities handed
//!   over; then and at the end every resource listed by two scopes is one of the allowed pairs.
//! - S2 nothing lost. A resource a handover takes out of the branch is owned afterwards (by the PR, or by
//!   the other party of a blind race), unless it no longer exists (the PR deleted it); at the end every
//!   resource that exists is owned by some scope (intents left by crashed runs count). Known deviation
//!   (core, counted; `strict` fails it): `handover` also takes out what the PR only *adopted*. A PR whose
//!   predecessor created a resource after the PR read it, relied on by another scope, records it as
//!   `adopted` from that scope; the handover then removes the branch's entry and nobody owns it.
//! - S3 fenced. Every receipt write that lands (any scope, handover included) was made by the run (or
//!   handover holder) that holds the cell's lock at that epoch, checked against `lock.json` in the same
//!   transaction, and the receipt names that holder as `runId` and that epoch.
//!
//! The operations are called through their Rust functions (`lock::*`, `ownership::*`), not the JSON
//! surface, so that 100,000 schedules stay fast; the scenario corpus covers the JSON layer.

use super::plan::Latency;
use super::rng::Rng;
use super::world::Failure;
use baton_core::CoreError;
use baton_core::cell::{Cell, Change};
use baton_core::lease::{Action, LeaseConfig, LeaseEvent, LeaseMachine, StoreResult};
use baton_core::lock;
use baton_core::ownership::{self, EntryOrIdentity, OtherScope, Resource, RunContext};
use serde_json::{Map, Value, json};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::fmt;

pub(crate) const S1: &str = "S1 exactly one owner";
pub(crate) const S2: &str = "S2 nothing lost";
pub(crate) const S3: &str = "S3 fenced receipt writes";
pub(crate) const LIVE: &str = "liveness (every run ends before the horizon)";
pub(crate) const HOST: &str = "host contract (the core refused a call made by the contract)";

/// The true wall-clock time at virtual time 0 (2026-10-10T12:00:00Z).
const WALL0: i64 = 1_791_633_600_000;
const ENV: &str = "preview";
const LATEST: &str = "latest.json";
pub(crate) const SCOPES: [&str; 3] = ["branch-feat-x", "pr-7", "pr-8"];
const BRANCH: usize = 0;
const PR7: usize = 1;
const PR8: usize = 2;
/// The handover lock's TTL (the host's: 60 s, no renewal).
const HANDOVER_TTL: u64 = 60_000;
pub(crate) const MAX_KEYS: usize = 5;
const TRACE_LEN: usize = 300;
const TRACE_SHOWN: usize = 150;
const EVENT_LIMIT: u64 = 200_000;

/// Ledger entry kinds, per scope and key.
const NONE: u8 = 0;
const OWNED: u8 = 1;
const INTENT: u8 = 2;
const ADOPTED: u8 = 3;

fn owns(kind: u8) -> bool {
    kind == OWNED || kind == INTENT
}

/// A deliberate defect, to prove that the checks can fail.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Sabotage {
    None,
    /// The store drops the handover's write while answering success (S1 must catch the branch still
    /// listing what the PR took over).
    SkipHandoverRemoval,
    /// The host passes the predecessor's ledger (as it read it) as `successorLedger` (S2 must catch what
    /// the PR never owned leaving the branch).
    HandOverPredecessorLedger,
    /// The store does not check fences: the adapter's writes carry whatever lock is current (S3).
    ForgedFence,
    /// The adapter creates what `ledger-check` refused with `OWNED_BY_OTHER_SCOPE` (S1 must catch the
    /// second owner).
    IgnoreRefusal,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Act {
    Create(u8),
    Rely(u8),
    Forget,
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
    /// The command fails (run-finish succeeded=false, no handover).
    pub(crate) fails: bool,
    /// Delay between must-stop/lost and the host's run-finish.
    pub(crate) stop_delay: u64,
    pub(crate) crash_at: Option<u64>,
    /// Crashes as soon as its first intent is acknowledged (the provider create never happens).
    pub(crate) crash_after_intend: bool,
    pub(crate) pause: Option<(u64, u64)>,
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
    pub(crate) runs: Vec<RunPlan>,
    pub(crate) sabotage: Sabotage,
    /// Whether the known deviation (see `Counters::adopted_handovers`) fails the schedule.
    pub(crate) strict: bool,
    /// Whether blind races (two owners that neither check could see) fail the schedule, to show one.
    pub(crate) strict_races: bool,
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
                pause: None,
            };
            if !calm {
                if rng.chance(100) {
                    run.crash_at = Some(start + rng.range(0, 4 * ttl));
                }
                run.crash_after_intend = rng.chance(80);
                if rng.chance(200) {
                    let dur = match rng.below(10) {
                        0..=4 => rng.range(20, ttl / 3),
                        5..=7 => rng.range(ttl / 3, ttl),
                        _ => rng.range(ttl, 3 * ttl),
                    };
                    run.pause = Some((start + rng.range(0, 3 * ttl), dur));
                }
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
            runs,
            sabotage: Sabotage::None,
            strict: false,
            strict_races: false,
            horizon: 0,
        };
        plan.horizon = plan.compute_horizon();
        plan
    }

    pub(crate) fn sabotaged(seed: u64, sabotage: Sabotage) -> Self {
        Self { sabotage, ..Self::generate(seed) }
    }

    /// A generous bound: every run waits its whole timeout (or an orphaned handover lock), then does every
    /// step at the slowest store, one after the other.
    fn compute_horizon(&self) -> u64 {
        let bound = |l: &Latency| if l.slow_permille > 0 { l.max.max(l.slow_max) } else { l.max };
        let step = bound(&self.commit_lat) + bound(&self.deliver_lat) + bound(&self.think);
        let last = self.runs.iter().map(|r| r.start + r.pause.map_or(0, |p| p.0)).max().unwrap_or(0);
        let per_run: u64 = self
            .runs
            .iter()
            .map(|r| r.wait_timeout.max(HANDOVER_TTL) + r.pause.map_or(0, |p| p.1) + 40 * step + 4 * self.ttl + 2_000)
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
    pub(crate) handover_attempts: u64,
    pub(crate) handovers: u64,
    pub(crate) handovers_empty: u64,
    pub(crate) handovers_busy: u64,
    pub(crate) handovers_refused: u64,
    pub(crate) handovers_failed: u64,
    pub(crate) moved: u64,
    pub(crate) inherited: u64,
    pub(crate) pending_pairs: u64,
    pub(crate) create_races: u64,
    pub(crate) inherited_doubles: u64,
    pub(crate) phantom_moves: u64,
    pub(crate) intents_left: u64,
    pub(crate) lost_replies: u64,
    pub(crate) failed_commits: u64,
    pub(crate) pauses: u64,
    pub(crate) crashes: u64,
    pub(crate) crashes_after_intent: u64,
    pub(crate) zombie_creates: u64,
    pub(crate) zombie_orphans: u64,
    /// Known deviation (core): a handover took out of the branch a resource the PR had only adopted (its
    /// `successorLedger` lists it as `adopted`), and no scope owns it any more. Fails when strict.
    pub(crate) adopted_handovers: u64,
    pub(crate) first_adopted_handover_seed: u64,
    /// The first seed that showed a blind create race, an inherited double (`u64::MAX`: none).
    pub(crate) first_race_seed: u64,
    pub(crate) first_inherited_double_seed: u64,
}

impl Counters {
    pub(crate) fn new() -> Self {
        Self {
            first_race_seed: u64::MAX,
            first_inherited_double_seed: u64::MAX,
            first_adopted_handover_seed: u64::MAX,
            ..Self::default()
        }
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
            handover_attempts,
            handovers,
            handovers_empty,
            handovers_busy,
            handovers_refused,
            handovers_failed,
            moved,
            inherited,
            pending_pairs,
            create_races,
            inherited_doubles,
            phantom_moves,
            intents_left,
            lost_replies,
            failed_commits,
            pauses,
            crashes,
            crashes_after_intent,
            zombie_creates,
            zombie_orphans,
            adopted_handovers
        );
        self.first_race_seed = self.first_race_seed.min(o.first_race_seed);
        self.first_adopted_handover_seed = self.first_adopted_handover_seed.min(o.first_adopted_handover_seed);
        self.first_inherited_double_seed = self.first_inherited_double_seed.min(o.first_inherited_double_seed);
    }
}

/// A job operation: an ownership transaction on a cell, or a read.
#[derive(Clone, Debug)]
enum Req {
    /// The predecessor's `latest.json`.
    ReadPredecessor,
    /// Every scope's `latest.json` (the host's `store.list`).
    List,
    Begin,
    DestroyPlan,
    Check {
        key: u8,
        change: bool,
    },
    Intend(u8),
    Record(u8),
    Forget(u8),
    Finish {
        succeeded: bool,
    },
    HandoverAcquire,
    Handover {
        ledger: Vec<EntryOrIdentity>,
        keys: Vec<u8>,
    },
    HandoverRelease,
}

impl Req {
    fn name(&self) -> &'static str {
        match self {
            Self::ReadPredecessor => "read predecessor",
            Self::List => "list",
            Self::Begin => "run-begin",
            Self::DestroyPlan => "destroy-plan",
            Self::Check { change: true, .. } => "ledger-check change",
            Self::Check { change: false, .. } => "ledger-check rely",
            Self::Intend(_) => "ledger-intend",
            Self::Record(_) => "ledger-record",
            Self::Forget(_) => "ledger-forget",
            Self::Finish { .. } => "run-finish",
            Self::HandoverAcquire => "lock-acquire (handover)",
            Self::Handover { .. } => "handover",
            Self::HandoverRelease => "lock-release (handover)",
        }
    }

    fn key(&self) -> Option<u8> {
        match self {
            Self::Check { key, .. } | Self::Intend(key) | Self::Record(key) | Self::Forget(key) => Some(*key),
            _ => None,
        }
    }
}

#[derive(Debug)]
enum Reply {
    Text(Option<String>),
    List(Vec<OtherScope>, u64),
    Written { receipt: Value, facts: Map<String, Value>, seq: u64 },
    Lock(u64),
    Unit,
}

type Outcome = Result<Reply, &'static str>;

/// What a writing operation answers: its changes, the receipt as stored, and the other facts.
type Changed = (Vec<Change>, Value, Map<String, Value>);

enum Ev {
    Start(usize),
    Wake(usize, u64),
    LeaseCommit { r: usize, id: u64, op: &'static str, request: Value },
    LeaseDeliver { r: usize, id: u64, result: StoreResult },
    Step(usize),
    JobCommit { r: usize, id: u64, req: Req },
    JobReply { r: usize, id: u64, name: &'static str, outcome: Outcome },
    PauseStart(usize, u64),
    PauseEnd(usize),
    Crash(usize),
}

/// Where a run's program is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Pc {
    Idle,
    ReadPredecessor,
    Begin,
    DestroyPlan,
    /// Action `i`: list, then check, intend, record; or forget.
    Act(usize, Stage),
    DestroyForget(usize),
    Finish,
    HandoverAcquire,
    Handover,
    HandoverRelease,
    Release,
    Over,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stage {
    List,
    Check,
    Intend,
    Record,
    Forget,
}

impl Pc {
    /// The adapter's part, which the host kills on must-stop/lost.
    fn is_body(self) -> bool {
        matches!(self, Self::DestroyPlan | Self::Act(..) | Self::DestroyForget(_))
    }

    fn before_begin(self) -> bool {
        matches!(self, Self::ReadPredecessor | Self::Begin)
    }
}

struct Run {
    name: String,
    m: LeaseMachine,
    crashed: bool,
    paused_until: u64,
    lease_out: Option<u64>,
    wake_at: Option<u64>,
    wake_gen: u64,
    epoch: u64,
    stopped: bool,
    failed: bool,
    pc: Pc,
    /// The job operation in flight (its reply is ignored once the host killed the adapter).
    awaiting: Option<u64>,
    step_pending: bool,
    pred_text: Option<String>,
    list: Vec<OtherScope>,
    /// The commit sequence number at which the listing was taken (`ledger-check`'s view of other scopes).
    list_seq: u64,
    /// The run's own ledger as its last write answered it.
    view: [u8; MAX_KEYS],
    forget_key: u8,
    delete: Vec<u8>,
    /// The final receipt's ledger (what the PR owns now) and the sequence number of its commit.
    final_ledger: Value,
    finish_seq: u64,
    finish_succeeded: bool,
    handover_holder: String,
    handover_epoch: u64,
    intents_sent: u32,
    over: bool,
}

#[derive(Clone, Copy)]
enum What {
    Start,
    LeaseSend(&'static str),
    LeaseCommit { op: &'static str, result: &'static str, epoch: u64, fault: &'static str },
    LeaseEvent(&'static str, u64),
    JobSend(&'static str, Option<u8>),
    JobCommit { op: &'static str, cell: usize, result: &'static str, fault: &'static str, ledger: u16, seq: u64 },
    JobReply(&'static str, &'static str),
    Decide(&'static str, Option<u8>),
    Crash,
    Pause(u64),
    Thaw,
    Deferred,
}

#[derive(Clone, Copy)]
struct Tr {
    t: u64,
    r: usize,
    scope: usize,
    what: What,
}

fn ledger_str(enc: u16) -> String {
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

impl fmt::Display for Tr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "t={:>6} run-{} ({}) ", self.t, self.r, SCOPES[self.scope])?;
        let key = |k: Option<u8>| k.map(|k| format!(" k{k}")).unwrap_or_default();
        match self.what {
            What::Start => write!(f, "acquire()"),
            What::LeaseSend(op) => write!(f, "lease sends {op}"),
            What::LeaseCommit { op, result, epoch, fault } => {
                write!(f, "store commits lease {op}: {result}")?;
                if epoch > 0 {
                    write!(f, " epoch {epoch}")?;
                }
                if !fault.is_empty() {
                    write!(f, " [{fault}]")?;
                }
                Ok(())
            }
            What::LeaseEvent(kind, epoch) if epoch > 0 => write!(f, "event {kind} (epoch {epoch})"),
            What::LeaseEvent(kind, _) => write!(f, "event {kind}"),
            What::JobSend(op, k) => write!(f, "sends {op}{}", key(k)),
            What::JobCommit { op, cell, result, fault, ledger, seq } => {
                write!(f, "store commits {op} on {}: {result}", SCOPES[cell])?;
                if seq > 0 {
                    write!(f, " #{seq}, ledger now {}", ledger_str(ledger))?;
                }
                if !fault.is_empty() {
                    write!(f, " [{fault}]")?;
                }
                Ok(())
            }
            What::JobReply(op, result) => write!(f, "receives {op}: {result}"),
            What::Decide(what, k) => write!(f, "{what}{}", key(k)),
            What::Crash => write!(f, "CRASHES"),
            What::Pause(until) => write!(f, "freezes until t={until}"),
            What::Thaw => write!(f, "thaws"),
            What::Deferred => write!(f, "(frozen: event deferred)"),
        }
    }
}

struct World<'p> {
    plan: &'p SuccessionPlan,
    rng: Rng,
    now: u64,
    seq: u64,
    heap: BinaryHeap<Reverse<(u64, u64)>>,
    slab: Vec<Option<Ev>>,
    cells: [Cell; 3],
    runs: Vec<Run>,
    /// Commit sequence number of the last receipt write (any cell).
    commits: u64,
    /// Per scope and key: the entry kind, since when (commit number) it has been listed as owned, and
    /// which scopes it was allowed to share it with when that began (bit per scope).
    kinds: [[u8; MAX_KEYS]; 3],
    since: [[u64; MAX_KEYS]; 3],
    excuse: [[u8; MAX_KEYS]; 3],
    /// Per scope and key: its last create/intent/record (commit number).
    claimed_by: [[u64; MAX_KEYS]; 3],
    /// Per key: whether the resource exists at the provider (an upsert: created before `ledger-record`,
    /// deleted before `ledger-forget`).
    exists: [bool; MAX_KEYS],
    /// Per key: the resource that exists was created by an adapter whose lease had ended (a frozen process
    /// that thawed before the host could kill it). Such a provider call is not fenced by anything.
    zombie: [bool; MAX_KEYS],
    /// Per key: the resource was left without an owner by a handover of an adopted entry (the known
    /// deviation, counted when not strict).
    disowned: [bool; MAX_KEYS],
    trace: VecDeque<Tr>,
    c: Counters,
}

fn resource(key: u8) -> Resource {
    Resource {
        adapter: "fake".into(),
        key: format!("k{key}"),
        provider: Value::Object(Map::new()),
        op: None,
        label: None,
        parent: None,
    }
}

fn context(scope: usize) -> RunContext {
    let (branch, pr) = match scope {
        BRANCH => ("feat/x", None),
        PR7 => ("feat/x", Some(7)),
        _ => ("feat/y", Some(8)),
    };
    RunContext { env: ENV.into(), scope: SCOPES[scope].into(), branch: Some(branch.into()), sha: None, pr }
}

/// The predecessor a host finds by `succession` (`branch-feat-y` for pr-8 does not exist).
fn predecessor(scope: usize) -> Option<&'static str> {
    match scope {
        PR7 => Some(SCOPES[BRANCH]),
        PR8 => Some("branch-feat-y"),
        _ => None,
    }
}

fn key_of(entry: &Value) -> Option<usize> {
    let k: usize = entry.get("key")?.as_str()?.strip_prefix('k')?.parse().ok()?;
    (k < MAX_KEYS).then_some(k)
}

/// Entry kinds per key of a receipt (as JSON).
fn kinds_of(receipt: &Value) -> [u8; MAX_KEYS] {
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

fn encode(kinds: &[u8; MAX_KEYS]) -> u16 {
    kinds.iter().enumerate().fold(0, |acc, (k, v)| acc | (u16::from(*v) << (2 * k)))
}

fn code(e: &CoreError) -> &'static str {
    e.code.as_str()
}

/// Runs one succession schedule.
pub(crate) fn run(plan: &SuccessionPlan) -> Result<Counters, Failure> {
    let mut w = World {
        plan,
        rng: Rng::new(plan.seed, 22),
        now: 0,
        seq: 0,
        heap: BinaryHeap::new(),
        slab: Vec::new(),
        cells: SCOPES.map(|s| Cell { env: ENV.into(), scope: s.into(), ..Cell::default() }),
        runs: Vec::with_capacity(plan.runs.len()),
        commits: 0,
        kinds: [[NONE; MAX_KEYS]; 3],
        since: [[0; MAX_KEYS]; 3],
        excuse: [[0; MAX_KEYS]; 3],
        claimed_by: [[0; MAX_KEYS]; 3],
        exists: [false; MAX_KEYS],
        zombie: [false; MAX_KEYS],
        disowned: [false; MAX_KEYS],
        trace: VecDeque::with_capacity(TRACE_LEN),
        c: Counters { schedules: 1, calm_schedules: u64::from(plan.calm), ..Counters::new() },
    };
    for (i, rp) in plan.runs.iter().enumerate() {
        let name = format!("{}-{i}", if rp.destroy { "destroy" } else { "run" });
        let mut cfg = LeaseConfig::new(ENV, SCOPES[rp.scope], &name);
        cfg.unique_holder = true;
        cfg.ttl_ms = plan.ttl;
        cfg.wait = rp.wait;
        cfg.poll_ms = rp.poll;
        cfg.wait_timeout_ms = rp.wait_timeout;
        let m = match LeaseMachine::new(cfg) {
            Ok(m) => m,
            Err(e) => return Err(w.fail(HOST, format!("run-{i}: the plan's lease configuration is invalid: {e}"))),
        };
        w.runs.push(Run {
            handover_holder: format!("handover-{name}"),
            name,
            m,
            crashed: false,
            paused_until: 0,
            lease_out: None,
            wake_at: None,
            wake_gen: 0,
            epoch: 0,
            stopped: false,
            failed: false,
            pc: Pc::Idle,
            awaiting: None,
            step_pending: false,
            pred_text: None,
            list: Vec::new(),
            list_seq: 0,
            view: [NONE; MAX_KEYS],
            forget_key: 0,
            delete: Vec::new(),
            final_ledger: Value::Null,
            finish_seq: 0,
            finish_succeeded: false,
            handover_epoch: 0,
            intents_sent: 0,
            over: false,
        });
        w.c.runs += 1;
        w.c.destroy_runs += u64::from(rp.destroy);
    }
    w.run()?;
    Ok(w.c)
}

impl World<'_> {
    fn push(&mut self, at: u64, ev: Ev) {
        self.heap.push(Reverse((at, self.seq)));
        self.slab.push(Some(ev));
        self.seq += 1;
    }

    fn note(&mut self, r: usize, what: What) {
        if self.trace.len() == TRACE_LEN {
            self.trace.pop_front();
        }
        let scope = self.plan.runs[r].scope;
        self.trace.push_back(Tr { t: self.now, r, scope, what });
    }

    fn fail(&self, invariant: &'static str, detail: String) -> Failure {
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

    fn frozen(&self, r: usize) -> bool {
        self.now < self.runs[r].paused_until
    }

    fn mono(&self, r: usize) -> u64 {
        self.now + self.plan.runs[r].mono_off
    }

    fn wall(&self, r: usize) -> i64 {
        WALL0 + self.now as i64 + self.plan.runs[r].skew
    }

    fn run(&mut self) -> Result<(), Failure> {
        for r in 0..self.runs.len() {
            let rp = &self.plan.runs[r];
            let (start, crash, pause) = (rp.start, rp.crash_at, rp.pause);
            self.push(start, Ev::Start(r));
            if let Some(at) = crash {
                self.push(at, Ev::Crash(r));
            }
            if let Some((at, dur)) = pause {
                self.push(at, Ev::PauseStart(r, dur));
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

    fn defer(&mut self, r: usize, ev: Ev) {
        let until = self.runs[r].paused_until;
        self.note(r, What::Deferred);
        self.push(until, ev);
    }

    fn step(&mut self, ev: Ev) -> Result<(), Failure> {
        match ev {
            Ev::Start(r) => {
                if self.runs[r].crashed {
                    return Ok(());
                }
                if self.frozen(r) {
                    self.defer(r, ev);
                    return Ok(());
                }
                self.note(r, What::Start);
                let mono = self.mono(r);
                if let Err(e) = self.runs[r].m.acquire(mono) {
                    return Err(self.fail(HOST, format!("run-{r}: acquire: {e}")));
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
            Ev::LeaseCommit { r, id, op, request } => self.lease_commit(r, id, op, &request),
            Ev::LeaseDeliver { r, id, result } => {
                if self.runs[r].crashed {
                    return Ok(());
                }
                if self.frozen(r) {
                    self.defer(r, Ev::LeaseDeliver { r, id, result });
                    return Ok(());
                }
                if self.runs[r].lease_out != Some(id) {
                    return Err(self.fail(HOST, format!("run-{r}: a lease reply to #{id} that is not in flight")));
                }
                self.runs[r].lease_out = None;
                let mono = self.mono(r);
                if let Err(e) = self.runs[r].m.handle_store_result(id, result, mono) {
                    return Err(self.fail(HOST, format!("run-{r}: handle_store_result(#{id}): {e}")));
                }
                self.after_call(r)
            }
            Ev::Step(r) => {
                self.runs[r].step_pending = false;
                if self.runs[r].crashed || self.runs[r].over {
                    return Ok(());
                }
                if self.frozen(r) {
                    self.runs[r].step_pending = true;
                    self.defer(r, ev);
                    return Ok(());
                }
                self.advance(r)
            }
            Ev::JobCommit { r, id, req } => self.job_commit(r, id, req),
            Ev::JobReply { r, id, name, outcome } => {
                if self.runs[r].crashed {
                    return Ok(());
                }
                if self.frozen(r) {
                    self.defer(r, Ev::JobReply { r, id, name, outcome });
                    return Ok(());
                }
                if self.runs[r].awaiting != Some(id) {
                    // The host killed the adapter that sent it.
                    return Ok(());
                }
                self.runs[r].awaiting = None;
                let label = match &outcome {
                    Ok(_) => "ok",
                    Err(code) => code,
                };
                self.note(r, What::JobReply(name, label));
                self.on_reply(r, outcome)
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

    fn crash(&mut self, r: usize) {
        if !self.runs[r].crashed {
            self.runs[r].crashed = true;
            self.c.crashes += 1;
            self.note(r, What::Crash);
        }
    }

    /// The host contract after every machine call: drain `poll_action()`, schedule `poll_timeout()`.
    fn after_call(&mut self, r: usize) -> Result<(), Failure> {
        while let Some(action) = self.runs[r].m.poll_action() {
            match action {
                Action::Store { id, op, request, .. } => {
                    if let Some(prev) = self.runs[r].lease_out {
                        return Err(self.fail(HOST, format!("run-{r}: lease request #{id} while #{prev} in flight")));
                    }
                    self.runs[r].lease_out = Some(id);
                    self.c.store_requests += 1;
                    let at = self.now + self.plan.commit_lat.sample(&mut self.rng);
                    self.note(r, What::LeaseSend(op));
                    self.push(at, Ev::LeaseCommit { r, id, op, request });
                }
                Action::Event { event } => self.on_event(r, &event)?,
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

    fn on_event(&mut self, r: usize, event: &LeaseEvent) -> Result<(), Failure> {
        match event {
            LeaseEvent::Acquired { epoch, .. } => {
                self.note(r, What::LeaseEvent("acquired", *epoch));
                let run = &mut self.runs[r];
                run.epoch = *epoch;
                run.pc = if self.plan.runs[r].scope == PR7 && !self.plan.runs[r].destroy {
                    Pc::ReadPredecessor
                } else {
                    Pc::Begin
                };
                self.schedule_step(r, 0);
            }
            LeaseEvent::Lost { .. } | LeaseEvent::MustStop { .. } => {
                let kind = if matches!(event, LeaseEvent::Lost { .. }) { "lost" } else { "must-stop" };
                self.note(r, What::LeaseEvent(kind, 0));
                self.c.stops += 1;
                let run = &mut self.runs[r];
                if !run.stopped {
                    run.stopped = true;
                    // The host kills the adapter: a reply to what it sent no longer matters.
                    if run.pc.is_body() || run.pc.before_begin() {
                        run.awaiting = None;
                        let delay = self.plan.runs[r].stop_delay;
                        self.schedule_step(r, delay);
                    }
                }
            }
            LeaseEvent::AcquireFailed { .. } => {
                self.note(r, What::LeaseEvent("acquire-failed", 0));
                self.c.acquire_failed += 1;
                self.runs[r].over = true;
            }
            LeaseEvent::Released { .. } | LeaseEvent::ReleaseFailed { .. } => {
                self.note(r, What::LeaseEvent("released", 0));
                self.runs[r].over = true;
            }
            LeaseEvent::Waiting { .. } | LeaseEvent::Renewed { .. } | LeaseEvent::RenewFailed { .. } => {}
        }
        Ok(())
    }

    fn schedule_step(&mut self, r: usize, after: u64) {
        if !self.runs[r].step_pending {
            self.runs[r].step_pending = true;
            self.push(self.now + after, Ev::Step(r));
        }
    }

    fn fault(&mut self) -> (bool, bool) {
        if self.plan.lost_permille > 0 && self.rng.chance(self.plan.lost_permille) {
            if self.rng.chance(500) { (true, true) } else { (false, true) }
        } else {
            (true, false)
        }
    }

    fn lease_commit(&mut self, r: usize, id: u64, op: &'static str, request: &Value) -> Result<(), Failure> {
        let (commit, lost) = self.fault();
        let deliver_at = self.now + self.plan.deliver_lat.sample(&mut self.rng);
        let mut result = StoreResult::Error(err_map("STORE_CONTENDED", "not committed"));
        let mut label = "not committed";
        let mut epoch = 0;
        if commit {
            let s = self.plan.runs[r].scope;
            let now_ms = self.wall(r);
            let holder = request["holder"].as_str().unwrap_or_default();
            let answer = match op {
                "lock-acquire" => lock::acquire(&self.cells[s], holder, self.plan.ttl, now_ms).map(|g| {
                    self.c.grants += 1;
                    self.c.takeovers += u64::from(g.preempted.is_some());
                    epoch = g.lock.epoch;
                    (g.changes, json!({ "lock": g.lock.to_value(), "preempted": g.preempted.map(|p| p.to_value()) }))
                }),
                "lock-renew" => {
                    let e = request["epoch"].as_u64().unwrap_or(0);
                    lock::renew(&self.cells[s], holder, e, self.plan.ttl, now_ms)
                        .map(|g| (g.changes, json!({ "lock": g.lock.to_value(), "preempted": null })))
                }
                "lock-release" => {
                    let rel = lock::release(&self.cells[s], holder, request["epoch"].as_u64());
                    Ok((rel.changes, json!({ "released": rel.released })))
                }
                other => return Err(self.fail(HOST, format!("run-{r}: unexpected lease operation {other}"))),
            };
            match answer {
                Ok((changes, answer)) => {
                    self.cells[s].apply(&changes);
                    result = StoreResult::Ok(answer);
                    label = "ok";
                }
                Err(e) => {
                    label = code(&e);
                    let Value::Object(map) = e.to_json() else { unreachable!("errors are objects") };
                    result = StoreResult::Error(map);
                }
            }
        }
        let fault = if lost && commit { "reply lost" } else { "" };
        if lost {
            self.c.lost_replies += u64::from(commit);
            self.c.failed_commits += u64::from(!commit);
            result = StoreResult::Error(err_map("INTERNAL", "reply lost"));
        }
        self.note(r, What::LeaseCommit { op, result: label, epoch, fault });
        self.push(deliver_at, Ev::LeaseDeliver { r, id, result });
        Ok(())
    }

    fn send(&mut self, r: usize, req: Req) {
        self.c.store_requests += 1;
        let id = self.seq;
        self.runs[r].awaiting = Some(id);
        self.note(r, What::JobSend(req.name(), req.key()));
        let at = self.now + self.plan.commit_lat.sample(&mut self.rng);
        self.push(at, Ev::JobCommit { r, id, req });
    }

    /// Runs the program from its current point until it sends an operation or ends.
    fn advance(&mut self, r: usize) -> Result<(), Failure> {
        if self.runs[r].awaiting.is_some() {
            return Ok(());
        }
        let plan = self.plan;
        loop {
            let rp = &plan.runs[r];
            let run = &mut self.runs[r];
            if run.stopped && run.pc.before_begin() {
                run.pc = Pc::Release;
            }
            if run.stopped && run.pc.is_body() {
                run.failed = true;
                run.pc = Pc::Finish;
            }
            match run.pc {
                Pc::Idle | Pc::Over => return Ok(()),
                Pc::ReadPredecessor => {
                    self.send(r, Req::ReadPredecessor);
                    return Ok(());
                }
                Pc::Begin => {
                    self.send(r, Req::Begin);
                    return Ok(());
                }
                Pc::DestroyPlan => {
                    self.send(r, Req::DestroyPlan);
                    return Ok(());
                }
                Pc::Act(i, stage) => {
                    let Some(&act) = rp.acts.get(i) else {
                        run.pc = Pc::Finish;
                        continue;
                    };
                    let req = match (act, stage) {
                        (Act::Forget, _) => {
                            let listed: Vec<u8> = (0..MAX_KEYS as u8).filter(|k| owns(run.view[*k as usize])).collect();
                            if listed.is_empty() {
                                run.pc = Pc::Act(i + 1, Stage::List);
                                continue;
                            }
                            let k = listed[self.rng.below(listed.len() as u64) as usize];
                            let run = &mut self.runs[r];
                            run.forget_key = k;
                            run.pc = Pc::Act(i, Stage::Forget);
                            // Deleted at the provider, then forgotten.
                            self.exists[usize::from(k)] = false;
                            self.zombie[usize::from(k)] = false;
                            self.disowned[usize::from(k)] = false;
                            Req::Forget(k)
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
                            run.pc = Pc::Act(i, Stage::Record);
                            continue;
                        }
                        (Act::Rely(k), Stage::List) if run.view[usize::from(k)] != NONE => {
                            run.pc = Pc::Act(i + 1, Stage::List);
                            continue;
                        }
                        (_, Stage::List) => Req::List,
                        (Act::Create(k), Stage::Check) => Req::Check { key: k, change: true },
                        (Act::Rely(k), Stage::Check) => Req::Check { key: k, change: false },
                        (Act::Create(k), Stage::Intend) => Req::Intend(k),
                        (Act::Create(k), Stage::Record) => {
                            // The provider's create (an upsert) happened before the record; by a zombie
                            // when the adapter's lease had already ended.
                            let zombie = self.runs[r].m.fencing_token(self.mono(r)).is_none();
                            self.exists[usize::from(k)] = true;
                            self.zombie[usize::from(k)] = zombie;
                            self.disowned[usize::from(k)] = false;
                            self.c.zombie_creates += u64::from(zombie);
                            Req::Record(k)
                        }
                        (act, stage) => {
                            return Err(self.fail(HOST, format!("run-{r}: no step for {act:?} at {stage:?}")));
                        }
                    };
                    self.send(r, req);
                    return Ok(());
                }
                Pc::DestroyForget(i) => {
                    let Some(&k) = run.delete.get(i) else {
                        run.pc = Pc::Finish;
                        continue;
                    };
                    self.exists[usize::from(k)] = false;
                    self.zombie[usize::from(k)] = false;
                    self.disowned[usize::from(k)] = false;
                    self.send(r, Req::Forget(k));
                    return Ok(());
                }
                Pc::Finish => {
                    let succeeded = !run.failed && !run.stopped && !rp.fails;
                    run.finish_succeeded = succeeded;
                    self.send(r, Req::Finish { succeeded });
                    return Ok(());
                }
                Pc::HandoverAcquire => {
                    self.c.handover_attempts += 1;
                    self.send(r, Req::HandoverAcquire);
                    return Ok(());
                }
                Pc::Handover => {
                    let ledger_value = match self.plan.sabotage {
                        Sabotage::HandOverPredecessorLedger => run
                            .pred_text
                            .as_deref()
                            .and_then(|t| serde_json::from_str::<Value>(t).ok())
                            .map(|v| v["ledger"].clone())
                            .unwrap_or(Value::Array(Vec::new())),
                        _ => run.final_ledger.clone(),
                    };
                    // What the handover takes over: the PR's owned entries (an adopted one stays the branch's).
                    let keys: Vec<u8> = ledger_value
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter(|e| e["createdBy"] != "adopted")
                        .filter_map(key_of)
                        .map(|k| k as u8)
                        .collect();
                    let ledger: Vec<EntryOrIdentity> = match serde_json::from_value(ledger_value) {
                        Ok(l) => l,
                        Err(e) => return Err(self.fail(HOST, format!("run-{r}: the final ledger does not parse: {e}"))),
                    };
                    self.send(r, Req::Handover { ledger, keys });
                    return Ok(());
                }
                Pc::HandoverRelease => {
                    self.send(r, Req::HandoverRelease);
                    return Ok(());
                }
                Pc::Release => {
                    run.pc = Pc::Over;
                    let mono = self.mono(r);
                    self.runs[r].m.release(mono);
                    return self.after_call(r);
                }
            }
        }
    }

    /// What the run does with a reply.
    fn on_reply(&mut self, r: usize, outcome: Outcome) -> Result<(), Failure> {
        let plan = self.plan;
        let rp = &plan.runs[r];
        let pc = self.runs[r].pc;
        let fail = |run: &mut Run| {
            run.failed = true;
            run.pc = Pc::Finish;
        };
        let next = |i: usize| Pc::Act(i + 1, Stage::List);
        match (pc, outcome) {
            (Pc::ReadPredecessor, Ok(Reply::Text(text))) => {
                let run = &mut self.runs[r];
                run.pred_text = text;
                run.pc = Pc::Begin;
            }
            (Pc::Begin, Ok(Reply::Written { receipt, .. })) => {
                let run = &mut self.runs[r];
                run.view = kinds_of(&receipt);
                run.pc = if rp.destroy { Pc::DestroyPlan } else { Pc::Act(0, Stage::List) };
            }
            (Pc::ReadPredecessor | Pc::Begin, _) => {
                // The host could not start the run: it releases without a final receipt.
                let run = &mut self.runs[r];
                run.failed = true;
                run.pc = Pc::Release;
            }
            (Pc::DestroyPlan, Ok(Reply::Written { facts, .. })) => {
                let run = &mut self.runs[r];
                run.delete = facts
                    .get("delete")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(key_of)
                    .map(|k| k as u8)
                    .collect();
                run.pc = Pc::DestroyForget(0);
            }
            (Pc::DestroyForget(i), Ok(Reply::Written { receipt, .. })) => {
                let run = &mut self.runs[r];
                run.view = kinds_of(&receipt);
                run.pc = Pc::DestroyForget(i + 1);
            }
            (Pc::Act(i, Stage::List), Ok(Reply::List(list, seq))) => {
                let run = &mut self.runs[r];
                run.list = list;
                run.list_seq = seq;
                run.pc = Pc::Act(i, Stage::Check);
            }
            (Pc::Act(i, Stage::Check), Ok(Reply::Written { receipt, facts, .. })) => {
                let create = matches!(rp.acts[i], Act::Create(_));
                let run = &mut self.runs[r];
                if !receipt.is_null() {
                    run.view = kinds_of(&receipt);
                }
                let relation = facts.get("relation").and_then(Value::as_str).unwrap_or("?");
                let created_by = facts.get("createdBy").and_then(Value::as_str).unwrap_or("");
                run.pc = match (create, relation, created_by) {
                    (false, ..) => next(i),
                    (true, "none", _) => Pc::Act(i, Stage::Intend),
                    (true, "own" | "inherited", "intent") => {
                        // An intent left by a crashed run: the adapter resolves it and records it.
                        self.c.intents_claimed += 1;
                        Pc::Act(i, Stage::Record)
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
                run.pc = Pc::Act(i, Stage::Record);
                if rp.crash_after_intend && run.intents_sent == 1 {
                    self.c.crashes_after_intent += 1;
                    self.crash(r);
                    return Ok(());
                }
            }
            (Pc::Act(i, Stage::Record | Stage::Forget), Ok(Reply::Written { receipt, .. })) => {
                let run = &mut self.runs[r];
                run.view = kinds_of(&receipt);
                run.pc = next(i);
            }
            (Pc::Act(..) | Pc::DestroyPlan | Pc::DestroyForget(_), _) => fail(&mut self.runs[r]),
            (Pc::Finish, Ok(Reply::Written { receipt, seq, .. })) => {
                // As host-native: after a successful run whose final receipt landed, hand over.
                let run = &mut self.runs[r];
                run.final_ledger = receipt["ledger"].clone();
                run.finish_seq = seq;
                let handover = rp.scope == PR7 && !rp.destroy && run.finish_succeeded && run.pred_text.is_some();
                run.pc = if handover { Pc::HandoverAcquire } else { Pc::Release };
            }
            (Pc::Finish, _) => self.runs[r].pc = Pc::Release,
            (Pc::HandoverAcquire, Ok(Reply::Lock(epoch))) => {
                let run = &mut self.runs[r];
                run.handover_epoch = epoch;
                run.pc = Pc::Handover;
            }
            (Pc::HandoverAcquire, Err(code)) => {
                if code == "LOCK_HELD" {
                    self.c.handovers_busy += 1;
                } else {
                    self.c.handovers_failed += 1;
                }
                self.runs[r].pc = Pc::Release;
            }
            (Pc::Handover, result) => {
                match result {
                    Ok(_) => {}
                    Err("LOCK_LOST") => self.c.handovers_refused += 1,
                    Err(_) => self.c.handovers_failed += 1,
                }
                self.runs[r].pc = Pc::HandoverRelease;
            }
            (Pc::HandoverRelease, _) => self.runs[r].pc = Pc::Release,
            (pc, outcome) => {
                return Err(self.fail(HOST, format!("run-{r}: unexpected reply at {pc:?}: {outcome:?}")));
            }
        }
        let think = self.plan.think.sample(&mut self.rng);
        self.schedule_step(r, think);
        Ok(())
    }

    /// A job operation reaching the store: executed as one cell transaction (or read) at its commit time.
    fn job_commit(&mut self, r: usize, id: u64, req: Req) -> Result<(), Failure> {
        let (commit, lost) = self.fault();
        let deliver_at = self.now + self.plan.deliver_lat.sample(&mut self.rng);
        let name = req.name();
        let mut outcome = Err("STORE_CONTENDED");
        if commit {
            outcome = self.exec(r, &req)?;
        }
        if lost {
            self.c.lost_replies += u64::from(commit);
            self.c.failed_commits += u64::from(!commit);
            if !commit {
                let cell = self.cell_of(r, &req);
                self.note(r, What::JobCommit { op: name, cell, result: "not committed", fault: "", ledger: 0, seq: 0 });
            }
            outcome = Err("INTERNAL");
        }
        self.push(deliver_at, Ev::JobReply { r, id, name, outcome });
        Ok(())
    }

    fn cell_of(&self, r: usize, req: &Req) -> usize {
        match req {
            Req::ReadPredecessor | Req::HandoverAcquire | Req::Handover { .. } | Req::HandoverRelease => BRANCH,
            _ => self.plan.runs[r].scope,
        }
    }

    fn exec(&mut self, r: usize, req: &Req) -> Result<Outcome, Failure> {
        let now_ms = self.wall(r);
        let scope = self.plan.runs[r].scope;
        let c = self.cell_of(r, req);
        let name = req.name();
        let note = |w: &mut Self, result: &'static str| {
            w.note(r, What::JobCommit { op: name, cell: c, result, fault: "", ledger: 0, seq: 0 })
        };
        match req {
            Req::ReadPredecessor => {
                let text = self.cells[BRANCH].file(LATEST).map(str::to_owned);
                note(self, "read");
                return Ok(Ok(Reply::Text(text)));
            }
            Req::List => {
                let list = (0..3)
                    .map(|s| OtherScope {
                        scope: SCOPES[s].into(),
                        text: self.cells[s].file(LATEST).map(str::to_owned),
                    })
                    .collect();
                note(self, "read");
                return Ok(Ok(Reply::List(list, self.commits)));
            }
            Req::HandoverAcquire => {
                let holder = &self.runs[r].handover_holder;
                return Ok(match lock::acquire(&self.cells[BRANCH], holder, HANDOVER_TTL, now_ms) {
                    Ok(g) => {
                        self.cells[BRANCH].apply(&g.changes);
                        self.c.grants += 1;
                        self.c.takeovers += u64::from(g.preempted.is_some());
                        note(self, "granted");
                        Ok(Reply::Lock(g.lock.epoch))
                    }
                    Err(e) => {
                        note(self, code(&e));
                        Err(code(&e))
                    }
                });
            }
            Req::HandoverRelease => {
                let run = &self.runs[r];
                let rel = lock::release(&self.cells[BRANCH], &run.handover_holder, Some(run.handover_epoch));
                self.cells[BRANCH].apply(&rel.changes);
                note(self, if rel.released { "released" } else { "nothing to release" });
                return Ok(Ok(Reply::Unit));
            }
            _ => {}
        }

        // A fenced receipt operation. The fence the request carries (forged by the sabotage).
        let handover = matches!(req, Req::Handover { .. });
        let run = &self.runs[r];
        let (mut holder, mut epoch) =
            if handover { (run.handover_holder.clone(), run.handover_epoch) } else { (run.name.clone(), run.epoch) };
        if self.plan.sabotage == Sabotage::ForgedFence
            && !handover
            && let Ok(Some(l)) = lock::parse_lock(&self.cells[c])
        {
            (holder, epoch) = (l.holder, l.epoch);
        }
        let plan = self.plan;
        let cell = &self.cells[c];
        let rp = &plan.runs[r];
        let answer: Result<Changed, CoreError> =
            match req {
                Req::Begin => {
                    // As host-native: only a predecessor with a receipt takes part (`branch-feat-y` has none).
                    let pred = match (scope, rp.destroy, &run.pred_text) {
                        (PR7, false, Some(text)) => {
                            Some(OtherScope { scope: SCOPES[BRANCH].into(), text: Some(text.clone()) })
                        }
                        _ => None,
                    };
                    ownership::run_begin(
                        cell,
                        &holder,
                        epoch,
                        now_ms,
                        &context(scope),
                        "",
                        None,
                        None,
                        rp.destroy,
                        pred.as_ref(),
                    )
                    .map(|w| (w.changes, w.receipt, w.facts))
                }
                Req::DestroyPlan => {
                    ownership::destroy_plan(cell, &holder, epoch, now_ms).map(|w| (w.changes, w.receipt, w.facts))
                }
                Req::Intend(k) => ownership::intend(cell, &holder, epoch, now_ms, &resource(*k))
                    .map(|w| (w.changes, w.receipt, w.facts)),
                Req::Record(k) => {
                    let id = format!("id-{r}-{k}-{}", self.commits + 1);
                    ownership::record(cell, &holder, epoch, now_ms, &resource(*k), &id)
                        .map(|w| (w.changes, w.receipt, w.facts))
                }
                Req::Forget(k) => ownership::forget(cell, &holder, epoch, now_ms, &resource(*k))
                    .map(|w| (w.changes, w.receipt, w.facts)),
                Req::Check { key, change } => ownership::check(
                    cell,
                    Some((&holder, epoch)),
                    now_ms,
                    &resource(*key),
                    *change,
                    &run.list,
                    predecessor(scope),
                )
                .and_then(|mut v| {
                    let changes: Vec<Change> = serde_json::from_value(v["changes"].take())
                        .map_err(|e| CoreError::internal(format!("check changes: {e}")))?;
                    let receipt = v.get_mut("receipt").map(Value::take).unwrap_or(Value::Null);
                    let Value::Object(facts) = v else { return Err(CoreError::internal("check answer")) };
                    Ok((changes, receipt, facts))
                }),
                Req::Finish { succeeded } => ownership::run_finish(cell, &holder, epoch, now_ms, *succeeded, None)
                    .map(|w| (w.changes, w.receipt, w.facts)),
                Req::Handover { ledger, .. } => ownership::handover(cell, &holder, epoch, now_ms, SCOPES[PR7], ledger)
                    .map(|w| (w.changes, w.receipt, w.facts)),
                _ => unreachable!("reads and handover locks are handled above"),
            };
        let (changes, receipt, facts) = match answer {
            Ok(a) => a,
            Err(e) => {
                let code = code(&e);
                if code == "INTERNAL" || code == "USAGE" {
                    return Err(self.fail(HOST, format!("run-{r}: {name} answered {code}: {e}")));
                }
                self.c.writes_refused += u64::from(code == "LOCK_LOST");
                note(self, code);
                return Ok(Err(code));
            }
        };
        let before_branch = self.kinds[BRANCH];
        let mut seq = 0;
        if !changes.is_empty() {
            seq = self.observe_write(r, c, req, &changes, &receipt)?;
        } else {
            note(self, "ok (nothing to write)");
        }
        match req {
            Req::Check { change: false, .. } if facts.get("adopted") == Some(&Value::Bool(true)) => {
                self.c.adoptions += 1;
            }
            Req::Finish { .. } => {
                if receipt["status"] == "complete" {
                    self.c.finished_ok += 1;
                } else {
                    self.c.finished_failed += 1;
                }
            }
            Req::Begin => self.c.inherited += facts.get("inherited").and_then(Value::as_u64).unwrap_or(0),
            Req::Handover { keys, .. } => {
                let before = before_branch;
                let moved = facts.get("moved").and_then(Value::as_u64).unwrap_or(0);
                if moved == 0 {
                    self.c.handovers_empty += 1;
                } else {
                    self.c.handovers += 1;
                    self.c.moved += moved;
                }
                self.check_handed_over(r, keys, &before)?;
                self.check_pairs("after a committed handover")?;
            }
            _ => {}
        }
        Ok(Ok(Reply::Written { receipt, facts, seq }))
    }

    /// A receipt write landing: S3 against the lock in the same transaction, then the ownership bookkeeping
    /// (S1 claims, S2 moves). Returns the commit's sequence number.
    fn observe_write(
        &mut self,
        r: usize,
        c: usize,
        req: &Req,
        changes: &[Change],
        receipt: &Value,
    ) -> Result<u64, Failure> {
        self.commits += 1;
        let seq = self.commits;
        self.c.receipt_writes += 1;
        let handover = matches!(req, Req::Handover { .. });
        let run = &self.runs[r];
        let (sender, sender_epoch) =
            if handover { (&run.handover_holder, run.handover_epoch) } else { (&run.name, run.epoch) };
        let lock = lock::parse_lock(&self.cells[c]).ok().flatten();
        let ok = lock.as_ref().is_some_and(|l| &l.holder == sender && l.epoch == sender_epoch);
        if !ok {
            let held = lock.map_or_else(|| "no lock".to_owned(), |l| format!("{} at epoch {}", l.holder, l.epoch));
            let detail = format!(
                "{} of run-{r} ({sender} at epoch {sender_epoch}) landed on {} while the lock is {held}",
                req.name(),
                SCOPES[c]
            );
            return Err(self.fail(S3, detail));
        }
        let writes_latest = changes.iter().any(|ch| matches!(ch, Change::Write { file, .. } if file == LATEST));
        if writes_latest {
            let run_id = receipt["runId"].as_str().unwrap_or_default();
            if run_id != sender {
                let detail = format!("{} of run-{r} wrote a receipt of `{run_id}` under {sender}'s lock", req.name());
                return Err(self.fail(S3, detail));
            }
            let recorded = receipt["epoch"].as_u64();
            if recorded != Some(sender_epoch) {
                let detail = format!(
                    "{} of run-{r} at epoch {sender_epoch} wrote a receipt with epoch {recorded:?}",
                    req.name()
                );
                return Err(self.fail(S3, detail));
            }
        }
        let skip_write = handover && self.plan.sabotage == Sabotage::SkipHandoverRemoval;
        if !skip_write {
            self.cells[c].apply(changes);
        }
        let old = self.kinds[c];
        let new = if skip_write { old } else { kinds_of(receipt) };
        self.kinds[c] = new;
        self.note(r, What::JobCommit { op: req.name(), cell: c, result: "ok", fault: "", ledger: encode(&new), seq });
        let create = matches!(req, Req::Intend(_) | Req::Record(_));
        match req {
            Req::Intend(_) => self.c.intents += 1,
            Req::Record(_) => self.c.records += 1,
            _ => {}
        }
        for k in 0..usize::from(self.plan.keys) {
            let (was, is) = (owns(old[k]), owns(new[k]));
            if is && create && req.key() == Some(k as u8) {
                self.claimed_by[c][k] = seq;
            }
            if is && !was {
                self.claim(r, c, k, req, seq)?;
            }
            if was && !is {
                match req {
                    Req::Forget(f) if usize::from(*f) == k => self.c.forgets += 1,
                    Req::Handover { .. } => {}
                    _ => {
                        let detail = format!(
                            "k{k} (listed as {}) left the ledger of {} by {} of run-{r}",
                            ["", "baton", "intent", ""][usize::from(old[k])],
                            SCOPES[c],
                            req.name()
                        );
                        return Err(self.fail(S2, detail));
                    }
                }
            }
        }
        Ok(seq)
    }

    /// Scope `c` starts listing key `k` as owned: S1 against every other scope that lists it.
    #[allow(clippy::needless_range_loop)] // `t` indexes several per-scope tables.
    fn claim(&mut self, r: usize, c: usize, k: usize, req: &Req, seq: u64) -> Result<(), Failure> {
        self.since[c][k] = seq;
        self.excuse[c][k] = 0;
        let create = matches!(req, Req::Intend(_) | Req::Record(_)) && req.key() == Some(k as u8);
        let inherit = matches!(req, Req::Begin) && c == PR7;
        if !create && !inherit {
            let detail = format!("k{k} became owned by {} through {} of run-{r}", SCOPES[c], req.name());
            return Err(self.fail(S1, detail));
        }
        for t in 0..3 {
            if t == c || !owns(self.kinds[t][k]) {
                continue;
            }
            if c == PR7 && t == BRANCH {
                // The PR created or inherited what its predecessor lists: pending until a handover.
                self.c.pending_pairs += 1;
            } else if inherit {
                // The predecessor shared it with `t` already (a race counted when it began).
                self.c.inherited_doubles += 1;
                self.c.first_inherited_double_seed = self.c.first_inherited_double_seed.min(self.plan.seed);
            } else {
                let evidence = self.runs[r].list_seq;
                let seen = self.since[t][k] <= evidence;
                if seen || self.plan.strict_races {
                    let (name, scope, other, since) = (req.name(), SCOPES[c], SCOPES[t], self.since[t][k]);
                    let detail = if seen {
                        format!(
                            "{name} of run-{r} made {scope} list k{k} (#{seq}), whose ledger-check read a listing (#{evidence}) in which {other} already listed it (since #{since})"
                        )
                    } else {
                        format!(
                            "blind create race (failed because BATON_SIM_SUCCESSION_STRICT=2): {name} of run-{r} made {scope} list k{k} (#{seq}); its ledger-check read a listing (#{evidence}) taken before {other} claimed it (#{since})"
                        )
                    };
                    return Err(self.fail(S1, detail));
                }
                // Blind: the check's listing was taken before the other scope's claim.
                self.c.create_races += 1;
                self.c.first_race_seed = self.c.first_race_seed.min(self.plan.seed);
            }
            self.excuse[c][k] |= 1 << t;
        }
        Ok(())
    }

    /// After a committed handover: the branch lists none of what was handed over (S1), and what left the
    /// branch is owned by the PR, unless the PR deleted it since its final receipt (S2).
    #[allow(clippy::needless_range_loop)] // `k` indexes several per-key tables.
    fn check_handed_over(&mut self, r: usize, keys: &[u8], before: &[u8; MAX_KEYS]) -> Result<(), Failure> {
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
                // The known deviation: `handover` moves what the successor only adopted.
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
    fn check_pairs(&self, when: &str) -> Result<(), Failure> {
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

    /// At the end: every run ended, S1 pairs, and S2: what was created and not forgotten is owned by someone.
    fn check_end(&mut self) -> Result<(), Failure> {
        for (i, run) in self.runs.iter().enumerate() {
            if !run.crashed && !run.m.is_finished() {
                return Err(self.fail(LIVE, format!("run-{i} never finished (at {:?})", run.pc)));
            }
        }
        self.check_pairs("at the end")?;
        for k in 0..usize::from(self.plan.keys) {
            let owned = (0..3).any(|s| owns(self.kinds[s][k]));
            if self.exists[k] && self.zombie[k] && !owned {
                // Created by a zombie after its successor resolved the intent: outside what fencing covers.
                self.c.zombie_orphans += 1;
            } else if self.exists[k] && self.disowned[k] && !owned {
                // Left without an owner by the known deviation (counted at the handover).
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

fn err_map(code: &str, message: &str) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("code".into(), code.into());
    m.insert("message".into(), message.into());
    m
}
