//! One schedule: holders driving `LeaseMachine`s against a fake store, on a virtual clock, with the
//! invariants checked as the history unfolds.

use super::plan::{HolderPlan, Plan, Sabotage};
use super::rng::Rng;
use baton_core::api;
use baton_core::cell::{Cell, Change, EPOCH_FILE, LOCK_FILE};
use baton_core::lease::{Action, LeaseConfig, LeaseEvent, LeaseMachine, StoreResult};
use baton_core::lock;
use serde_json::{Map, Value, json};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::fmt;

/// The true wall-clock time at virtual time 0 (2026-10-10T12:00:00Z).
const WALL0: i64 = 1_791_633_600_000;
/// Events kept for the report: the last `TRACE_SHOWN` of all, and the holders the failure names further back.
const TRACE_LEN: usize = 400;
const TRACE_SHOWN: usize = 30;
const TRACE_PER_HOLDER: usize = 15;
/// Events at one virtual millisecond beyond which the schedule is said to spin.
const SPIN_LIMIT: u32 = 20_000;

pub(crate) const I1: &str = "I1 one writer per epoch";
pub(crate) const I2: &str = "I2 epochs strictly increase";
pub(crate) const I3: &str = "I3 no write after takeover";
pub(crate) const I4: &str = "I4 no overlapping validity";
pub(crate) const I5: &str = "I5 paced";
pub(crate) const I6: &str = "I6 liveness";
pub(crate) const I4G: &str = "I4g no overlapping work, grace included";
pub(crate) const I7: &str = "I7 release() ends the lease with released or release-failed";
pub(crate) const CONTRACT: &str = "host contract (the machine refused a call made by the contract)";

/// What happened, summed over schedules.
#[derive(Clone, Debug)]
pub(crate) struct Counters {
    pub(crate) schedules: u64,
    pub(crate) calm_schedules: u64,
    pub(crate) events: u64,
    pub(crate) store_requests: u64,
    pub(crate) grants: u64,
    pub(crate) takeovers: u64,
    pub(crate) orphaned_grants: u64,
    pub(crate) writes_accepted: u64,
    pub(crate) writes_refused: u64,
    pub(crate) writes_refused_after_takeover: u64,
    pub(crate) acquired: u64,
    pub(crate) waiting: u64,
    pub(crate) acquire_failed: u64,
    pub(crate) renewed: u64,
    pub(crate) renew_failed: u64,
    pub(crate) must_stop: u64,
    pub(crate) lost: u64,
    pub(crate) released: u64,
    pub(crate) release_failed: u64,
    pub(crate) lost_replies: u64,
    pub(crate) failed_commits: u64,
    pub(crate) stale_clock_reads: u64,
    pub(crate) pauses: u64,
    pub(crate) crashes: u64,
    pub(crate) max_epoch: u64,
    /// Handovers of the fencing token from one holder to another (the next token started after one ended).
    pub(crate) handovers: u64,
    /// The smallest gap between one holder's token ending and another's starting (ms; `u64::MAX` if none).
    pub(crate) min_handover_gap: u64,
    /// Handovers with a gap of at most 5 ms.
    pub(crate) close_handovers: u64,
    /// Handovers to a holder whose grant took an expired lock over, and the smallest gap among them.
    pub(crate) takeover_handovers: u64,
    pub(crate) min_takeover_gap: u64,
    /// Leases where `release()` was called during the acquire and that ended with `acquire-failed` (I7).
    pub(crate) release_ended_acquire_failed: u64,
    /// Stops (must-stop/lost) after which a holder whose work had started got a grace period (I4g runs).
    pub(crate) graces: u64,
    /// Grace periods after a stop that came late (on thawing from a freeze) overlapping another holder's
    /// work (I4g known deviation).
    pub(crate) late_graces_overlapping: u64,
}

impl Default for Counters {
    fn default() -> Self {
        Self {
            schedules: 0,
            calm_schedules: 0,
            events: 0,
            store_requests: 0,
            grants: 0,
            takeovers: 0,
            orphaned_grants: 0,
            writes_accepted: 0,
            writes_refused: 0,
            writes_refused_after_takeover: 0,
            acquired: 0,
            waiting: 0,
            acquire_failed: 0,
            renewed: 0,
            renew_failed: 0,
            must_stop: 0,
            lost: 0,
            released: 0,
            release_failed: 0,
            lost_replies: 0,
            failed_commits: 0,
            stale_clock_reads: 0,
            pauses: 0,
            crashes: 0,
            max_epoch: 0,
            handovers: 0,
            min_handover_gap: u64::MAX,
            close_handovers: 0,
            takeover_handovers: 0,
            min_takeover_gap: u64::MAX,
            release_ended_acquire_failed: 0,
            graces: 0,
            late_graces_overlapping: 0,
        }
    }
}

impl Counters {
    pub(crate) fn add(&mut self, o: &Self) {
        self.schedules += o.schedules;
        self.calm_schedules += o.calm_schedules;
        self.events += o.events;
        self.store_requests += o.store_requests;
        self.grants += o.grants;
        self.takeovers += o.takeovers;
        self.orphaned_grants += o.orphaned_grants;
        self.writes_accepted += o.writes_accepted;
        self.writes_refused += o.writes_refused;
        self.writes_refused_after_takeover += o.writes_refused_after_takeover;
        self.acquired += o.acquired;
        self.waiting += o.waiting;
        self.acquire_failed += o.acquire_failed;
        self.renewed += o.renewed;
        self.renew_failed += o.renew_failed;
        self.must_stop += o.must_stop;
        self.lost += o.lost;
        self.released += o.released;
        self.release_failed += o.release_failed;
        self.lost_replies += o.lost_replies;
        self.failed_commits += o.failed_commits;
        self.stale_clock_reads += o.stale_clock_reads;
        self.pauses += o.pauses;
        self.crashes += o.crashes;
        self.max_epoch = self.max_epoch.max(o.max_epoch);
        self.handovers += o.handovers;
        self.min_handover_gap = self.min_handover_gap.min(o.min_handover_gap);
        self.close_handovers += o.close_handovers;
        self.takeover_handovers += o.takeover_handovers;
        self.min_takeover_gap = self.min_takeover_gap.min(o.min_takeover_gap);
        self.release_ended_acquire_failed += o.release_ended_acquire_failed;
        self.graces += o.graces;
        self.late_graces_overlapping += o.late_graces_overlapping;
    }
}

/// A violated invariant, with what is needed to understand and rerun it.
#[derive(Debug)]
pub(crate) struct Failure {
    pub(crate) invariant: &'static str,
    pub(crate) detail: String,
    pub(crate) trace: Vec<String>,
    pub(crate) plan: String,
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "invariant violated: {}", self.invariant)?;
        writeln!(f, "  {}", self.detail)?;
        writeln!(f, "plan: {}", self.plan)?;
        writeln!(f, "trace (t = virtual ms; wall = the committing holder's wall clock - 2026-10-10T12:00:00Z):")?;
        for line in &self.trace {
            writeln!(f, "  {line}")?;
        }
        Ok(())
    }
}

enum Ev {
    Start(usize),
    Wake(usize, u64),
    Commit { h: usize, id: u64, op: &'static str, request: Value, sent: u64 },
    Deliver { h: usize, id: u64, result: StoreResult },
    Work(usize),
    WriteCommit { h: usize, epoch: u64, sent: u64 },
    PauseStart(usize, u64),
    PauseEnd(usize),
    Crash(usize),
    UserRelease(usize),
}

/// One line of the trace, formatted only when a failure is reported.
#[derive(Clone, Debug)]
enum What {
    Start,
    Wake,
    Send {
        id: u64,
        op: &'static str,
        commit_at: u64,
    },
    Commit {
        id: u64,
        op: &'static str,
        now_ms: Option<i64>,
        result: &'static str,
        epoch: Option<u64>,
        fault: &'static str,
    },
    Deliver {
        id: u64,
        result: &'static str,
    },
    Event {
        kind: &'static str,
        epoch: Option<u64>,
    },
    WriteSend {
        epoch: u64,
        commit_at: u64,
    },
    WriteCommit {
        epoch: u64,
        sent: u64,
        accepted: bool,
        lock: Option<(String, u64)>,
    },
    PauseStart {
        until: u64,
    },
    PauseEnd,
    Crash,
    Release,
    Deferred,
}

#[derive(Clone, Debug)]
struct Tr {
    t: u64,
    h: usize,
    what: What,
}

impl fmt::Display for Tr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "t={:>6} run-{} ", self.t, self.h)?;
        match &self.what {
            What::Start => write!(f, "acquire()"),
            What::Wake => write!(f, "handle_timeout()"),
            What::Send { id, op, commit_at } => write!(f, "sends #{id} {op} (commits at t={commit_at})"),
            What::Commit { id, op, now_ms, result, epoch, fault } => {
                match now_ms {
                    Some(ms) => write!(f, "store commits #{id} {op} at wall {}: {result}", ms - WALL0)?,
                    None => write!(f, "store fails #{id} {op}: {result}")?,
                }
                if let Some(e) = epoch {
                    write!(f, " epoch {e}")?;
                }
                if !fault.is_empty() {
                    write!(f, " [{fault}]")?;
                }
                Ok(())
            }
            What::Deliver { id, result } => write!(f, "receives #{id}: {result}"),
            What::Event { kind, epoch } => match epoch {
                Some(e) => write!(f, "event {kind} (epoch {e})"),
                None => write!(f, "event {kind}"),
            },
            What::WriteSend { epoch, commit_at } => {
                write!(f, "fenced write at epoch {epoch} sent (commits at t={commit_at})")
            }
            What::WriteCommit { epoch, sent, accepted, lock } => {
                let verdict = if *accepted { "ACCEPTED" } else { "refused" };
                write!(f, "fenced write at epoch {epoch} (sent t={sent}) {verdict}; lock: ")?;
                match lock {
                    Some((holder, e)) => write!(f, "{holder} epoch {e}"),
                    None => write!(f, "none"),
                }
            }
            What::PauseStart { until } => write!(f, "freezes until t={until}"),
            What::PauseEnd => write!(f, "thaws"),
            What::Crash => write!(f, "CRASHES"),
            What::Release => write!(f, "release()"),
            What::Deferred => write!(f, "(frozen: event deferred)"),
        }
    }
}

struct Holder {
    name: String,
    m: LeaseMachine,
    crashed: bool,
    paused_until: u64,
    outstanding: Option<u64>,
    wake_at: Option<u64>,
    wake_gen: u64,
    acquired: bool,
    release_scheduled: bool,
    release_called: bool,
    released_lock: bool,
    stopped: bool,
    /// Until when its work may still run after must-stop/lost (`graceMs` after the first of them).
    grace_end: Option<u64>,
    /// Whether its first stop came as it thawed from a freeze, and whether its grace then overlapped
    /// another holder's work (counted once).
    stop_on_thaw: bool,
    late_grace_overlapped: bool,
    /// Whether its work started: the host starts it on `acquired` only if the token is valid then.
    worked: bool,
    /// The event that ended the lease.
    ended_with: Option<&'static str>,
    /// Whether `release()` was called before the lease had ended, and whether an acquire was in flight then.
    cancelled_live: bool,
    cancelled_acquiring: bool,
    /// The token seen at the last sample: `(epoch, last virtual time it was seen)`.
    token: Option<(u64, u64)>,
    /// When this holder's last token ended (virtual time).
    token_ended: Option<u64>,
}

enum Fault {
    None,
    LostAfterCommit,
    NotCommitted,
}

struct World<'p> {
    plan: &'p Plan,
    rng: Rng,
    now: u64,
    seq: u64,
    heap: BinaryHeap<Reverse<(u64, u64)>>,
    slab: Vec<Option<Ev>>,
    cell: Cell,
    cell_changed_at: Option<u64>,
    holders: Vec<Holder>,
    max_grant: u64,
    /// Epoch -> the holder the store granted it to, and whether that grant took an expired lock over.
    granted_to: Vec<Option<usize>>,
    takeover_at: Vec<bool>,
    /// Epoch -> the holder whose fenced writes were accepted at it.
    writer_of: Vec<Option<usize>>,
    trace: VecDeque<Tr>,
    c: Counters,
    spin_at: u64,
    spin: u32,
}

/// Runs the schedule of `plan`.
pub(crate) fn run(plan: &Plan) -> Result<Counters, Failure> {
    let holders = plan
        .holders
        .iter()
        .map(|hp| {
            let name = hp.name.clone();
            let mut cfg = LeaseConfig::new("preview", "pr-1", &name);
            // Plans reuse names on purpose; a lease may release by name only when its name is its own.
            cfg.unique_holder = plan.holders.iter().filter(|other| other.name == name).count() == 1;
            cfg.ttl_ms = plan.ttl;
            cfg.margin_ms = plan.margin_ms;
            cfg.renew_every_ms = plan.renew_every_ms;
            cfg.wait = hp.wait;
            cfg.poll_ms = hp.poll;
            cfg.wait_timeout_ms = hp.wait_timeout;
            let m = LeaseMachine::new(cfg).map_err(|e| format!("{name}: {e}"))?;
            Ok(Holder {
                name,
                m,
                crashed: false,
                paused_until: 0,
                outstanding: None,
                wake_at: None,
                wake_gen: 0,
                acquired: false,
                release_scheduled: false,
                release_called: false,
                released_lock: false,
                stopped: false,
                grace_end: None,
                stop_on_thaw: false,
                late_grace_overlapped: false,
                worked: false,
                ended_with: None,
                cancelled_live: false,
                cancelled_acquiring: false,
                token: None,
                token_ended: None,
            })
        })
        .collect::<Result<Vec<_>, String>>();
    let mut w = World {
        plan,
        rng: Rng::new(plan.seed, 2),
        now: 0,
        seq: 0,
        heap: BinaryHeap::new(),
        slab: Vec::new(),
        cell: Cell { env: "preview".into(), scope: "pr-1".into(), ..Cell::default() },
        cell_changed_at: None,
        holders: Vec::new(),
        max_grant: 0,
        granted_to: vec![None],
        takeover_at: vec![false],
        writer_of: vec![None],
        trace: VecDeque::with_capacity(TRACE_LEN),
        c: Counters { schedules: 1, calm_schedules: u64::from(plan.calm), ..Counters::default() },
        spin_at: 0,
        spin: 0,
    };
    match holders {
        Ok(h) => w.holders = h,
        Err(e) => return Err(w.fail(CONTRACT, format!("the plan's configuration is invalid: {e}"))),
    }
    w.run()?;
    Ok(w.c)
}

impl World<'_> {
    fn hp(&self, h: usize) -> &HolderPlan {
        &self.plan.holders[h]
    }

    fn mono(&self, h: usize) -> u64 {
        self.now + self.hp(h).mono_off
    }

    fn push(&mut self, at: u64, ev: Ev) {
        self.heap.push(Reverse((at, self.seq)));
        self.slab.push(Some(ev));
        self.seq += 1;
    }

    fn note(&mut self, h: usize, what: What) {
        if self.trace.len() == TRACE_LEN {
            self.trace.pop_front();
        }
        self.trace.push_back(Tr { t: self.now, h, what });
    }

    /// The failure with its trace: the last events of all holders, preceded by the earlier events of the
    /// holders the detail names (`run-N`).
    fn fail(&self, invariant: &'static str, detail: String) -> Failure {
        let named: Vec<usize> = detail
            .match_indices("run-")
            .filter_map(|(i, _)| detail[i + 4..].chars().next()?.to_digit(10))
            .map(|d| d as usize)
            .collect();
        let split = self.trace.len().saturating_sub(TRACE_SHOWN);
        let mut trace = Vec::new();
        let mut earlier: Vec<&Tr> = self.trace.iter().take(split).filter(|t| named.contains(&t.h)).collect();
        if !earlier.is_empty() {
            earlier.drain(..earlier.len().saturating_sub(TRACE_PER_HOLDER * named.len().max(1)));
            trace.push("(earlier events of the holders named above)".to_owned());
            trace.extend(earlier.iter().map(ToString::to_string));
            trace.push("(last events of all holders)".to_owned());
        }
        trace.extend(self.trace.iter().skip(split).map(ToString::to_string));
        Failure { invariant, detail, trace, plan: format!("{:?}", self.plan) }
    }

    fn run(&mut self) -> Result<(), Failure> {
        for h in 0..self.holders.len() {
            let hp = self.hp(h).clone();
            self.push(hp.start, Ev::Start(h));
            if let Some(at) = hp.crash_at {
                self.push(at, Ev::Crash(h));
            }
            if let Some(at) = hp.cancel_at {
                self.push(at, Ev::UserRelease(h));
            }
            for (at, dur) in hp.pauses {
                self.push(at, Ev::PauseStart(h, dur));
            }
        }
        while let Some(Reverse((t, seq))) = self.heap.pop() {
            if t > self.plan.horizon {
                return Err(self.fail(
                    I6,
                    format!("the schedule did not end by the horizon t={} (events still due)", self.plan.horizon),
                ));
            }
            if t == self.spin_at {
                self.spin += 1;
                if self.spin > SPIN_LIMIT {
                    return Err(self.fail(I6, format!("more than {SPIN_LIMIT} events at t={t}: a host would spin")));
                }
            } else {
                (self.spin_at, self.spin) = (t, 0);
            }
            self.now = t;
            self.c.events += 1;
            // INVARIANT: every seq in the heap has its event in the slab, taken exactly once.
            let ev = self.slab[seq as usize].take().expect("event taken twice");
            self.step(ev)?;
            if self.plan.check_grace {
                self.check_grace()?;
            }
            if self.plan.check_i4 {
                self.check_validity()?;
                self.track_handovers();
            }
        }
        self.check_end()
    }

    fn frozen(&self, h: usize) -> bool {
        self.now < self.holders[h].paused_until
    }

    /// Puts a holder's event back until its process thaws.
    fn defer(&mut self, h: usize, ev: Ev) {
        let until = self.holders[h].paused_until;
        self.note(h, What::Deferred);
        self.push(until, ev);
    }

    fn step(&mut self, ev: Ev) -> Result<(), Failure> {
        match ev {
            Ev::Start(h) => {
                if self.holders[h].crashed || self.holders[h].release_called {
                    // Dead, or cancelled before it started: the host never starts the lease.
                    return Ok(());
                }
                if self.frozen(h) {
                    self.defer(h, ev);
                    return Ok(());
                }
                self.note(h, What::Start);
                let mono = self.mono(h);
                if let Err(e) = self.holders[h].m.acquire(mono) {
                    return Err(self.fail(CONTRACT, format!("run-{h}: acquire: {e}")));
                }
                self.after_call(h)
            }
            Ev::Wake(h, generation) => {
                let hs = &mut self.holders[h];
                if generation != hs.wake_gen {
                    return Ok(());
                }
                hs.wake_at = None;
                if hs.crashed || self.frozen(h) {
                    // A frozen process wakes when it thaws (PauseEnd).
                    return Ok(());
                }
                self.note(h, What::Wake);
                let mono = self.mono(h);
                self.holders[h].m.handle_timeout(mono);
                self.after_call(h)
            }
            Ev::Commit { h, id, op, request, sent } => self.commit(h, id, op, request, sent),
            Ev::Deliver { h, id, result } => {
                if self.holders[h].crashed {
                    return Ok(());
                }
                if self.frozen(h) {
                    self.defer(h, Ev::Deliver { h, id, result });
                    return Ok(());
                }
                let label = match &result {
                    StoreResult::Ok(_) => "ok",
                    StoreResult::Error(e) => code_of(e),
                };
                self.note(h, What::Deliver { id, result: label });
                let hs = &mut self.holders[h];
                if hs.outstanding != Some(id) {
                    let o = hs.outstanding;
                    return Err(self.fail(I5, format!("run-{h}: reply to #{id} while the request in flight is {o:?}")));
                }
                hs.outstanding = None;
                let mono = self.mono(h);
                if let Err(e) = self.holders[h].m.handle_store_result(id, result, mono) {
                    return Err(self.fail(CONTRACT, format!("run-{h}: handle_store_result(#{id}): {e}")));
                }
                self.after_call(h)
            }
            Ev::Work(h) => {
                let hs = &self.holders[h];
                if hs.crashed || hs.release_called || hs.m.is_finished() {
                    return Ok(());
                }
                if self.frozen(h) {
                    self.defer(h, ev);
                    return Ok(());
                }
                if let Some(epoch) = hs.m.fencing_token(self.mono(h)) {
                    let commit_at = self.now + self.plan.write_lat.sample(&mut self.rng);
                    self.note(h, What::WriteSend { epoch, commit_at });
                    self.push(commit_at, Ev::WriteCommit { h, epoch, sent: self.now });
                }
                let every = self.hp(h).write_every;
                self.push(self.now + every, Ev::Work(h));
                Ok(())
            }
            Ev::WriteCommit { h, epoch, sent } => self.write_commit(h, epoch, sent),
            Ev::PauseStart(h, dur) => {
                if self.holders[h].crashed {
                    return Ok(());
                }
                let until = self.holders[h].paused_until.max(self.now + dur);
                self.holders[h].paused_until = until;
                self.c.pauses += 1;
                self.note(h, What::PauseStart { until });
                // On thawing, the timer fires before or after the replies that arrived meanwhile.
                let jitter = self.rng.below(2);
                self.push(until + jitter, Ev::PauseEnd(h));
                Ok(())
            }
            Ev::PauseEnd(h) => {
                if self.holders[h].crashed || self.frozen(h) {
                    return Ok(());
                }
                // The host's sleep returns late: it reads the clock and wakes the machine.
                self.note(h, What::PauseEnd);
                self.holders[h].wake_at = None;
                let mono = self.mono(h);
                self.holders[h].m.handle_timeout(mono);
                self.after_call(h)
            }
            Ev::Crash(h) => {
                if !self.holders[h].crashed {
                    self.holders[h].crashed = true;
                    self.c.crashes += 1;
                    self.note(h, What::Crash);
                }
                Ok(())
            }
            Ev::UserRelease(h) => {
                if self.holders[h].crashed {
                    return Ok(());
                }
                if self.frozen(h) {
                    self.defer(h, ev);
                    return Ok(());
                }
                self.note(h, What::Release);
                let hs = &mut self.holders[h];
                hs.release_called = true;
                hs.cancelled_live |= !hs.m.is_finished();
                hs.cancelled_acquiring |= !hs.acquired && hs.outstanding.is_some();
                let mono = self.mono(h);
                self.holders[h].m.release(mono);
                self.after_call(h)
            }
        }
    }

    /// The host contract after every call: drain `poll_action()` to `None`, then schedule `poll_timeout()`.
    fn after_call(&mut self, h: usize) -> Result<(), Failure> {
        while let Some(action) = self.holders[h].m.poll_action() {
            match action {
                Action::Store { id, op, request, .. } => {
                    if let Some(prev) = self.holders[h].outstanding {
                        return Err(self.fail(
                            I5,
                            format!("run-{h} sent store request #{id} ({op}) while #{prev} was still in flight"),
                        ));
                    }
                    self.holders[h].outstanding = Some(id);
                    self.c.store_requests += 1;
                    let commit_at = self.now + self.plan.commit_lat.sample(&mut self.rng);
                    self.note(h, What::Send { id, op, commit_at });
                    self.push(commit_at, Ev::Commit { h, id, op, request, sent: self.now });
                }
                Action::Event { event } => self.on_event(h, &event)?,
            }
        }
        let off = self.hp(h).mono_off;
        let now = self.now;
        if self.plan.sabotage == Sabotage::NoWakeups {
            return Ok(());
        }
        let hs = &mut self.holders[h];
        match hs.m.poll_timeout() {
            Some(at) => {
                let at = at.saturating_sub(off).max(now);
                if hs.wake_at != Some(at) {
                    hs.wake_gen += 1;
                    hs.wake_at = Some(at);
                    let generation = hs.wake_gen;
                    self.push(at, Ev::Wake(h, generation));
                }
            }
            None => {
                if hs.wake_at.take().is_some() {
                    hs.wake_gen += 1;
                }
            }
        }
        Ok(())
    }

    fn schedule_release(&mut self, h: usize, after: u64) {
        if !self.holders[h].release_scheduled {
            self.holders[h].release_scheduled = true;
            self.push(self.now + after, Ev::UserRelease(h));
        }
    }

    fn on_event(&mut self, h: usize, event: &LeaseEvent) -> Result<(), Failure> {
        let (kind, epoch) = match event {
            LeaseEvent::Acquired { epoch, .. } => {
                self.c.acquired += 1;
                let token = self.holders[h].m.fencing_token(self.mono(h));
                self.holders[h].acquired = true;
                self.holders[h].worked = token.is_some();
                let granted = self.granted_to.get(*epoch as usize).copied().flatten();
                if granted != Some(h) {
                    return Err(self.fail(
                        I1,
                        format!("run-{h} was told it holds epoch {epoch}, which the store granted to {granted:?}"),
                    ));
                }
                let work = self.hp(h).work;
                self.schedule_release(h, work);
                self.push(self.now, Ev::Work(h));
                ("acquired", Some(*epoch))
            }
            LeaseEvent::Waiting { .. } => {
                self.c.waiting += 1;
                ("waiting", None)
            }
            LeaseEvent::Renewed { .. } => {
                self.c.renewed += 1;
                ("renewed", None)
            }
            LeaseEvent::RenewFailed { .. } => {
                self.c.renew_failed += 1;
                ("renew-failed", None)
            }
            LeaseEvent::Lost { grace_ms, .. } | LeaseEvent::MustStop { grace_ms, .. } => {
                let lost = matches!(event, LeaseEvent::Lost { .. });
                let now = self.now;
                let hs = &mut self.holders[h];
                if hs.grace_end.is_none() {
                    hs.grace_end = Some(now + grace_ms);
                    self.c.graces += u64::from(hs.worked);
                    hs.stop_on_thaw = hs.paused_until > 0 && (hs.paused_until..=hs.paused_until + 1).contains(&now);
                }
                if lost {
                    self.c.lost += 1;
                } else {
                    self.c.must_stop += 1;
                }
                self.holders[h].stopped = true;
                // The host stops the work, then releases. Checking I4g, the work takes its whole grace.
                let delay = if self.plan.check_grace { *grace_ms } else { self.hp(h).stop_delay };
                self.schedule_release(h, delay);
                (if lost { "lost" } else { "must-stop" }, None)
            }
            LeaseEvent::Released { released } => {
                self.c.released += 1;
                self.holders[h].released_lock = *released;
                (if *released { "released (lock removed)" } else { "released (nothing to remove)" }, None)
            }
            LeaseEvent::ReleaseFailed { .. } => {
                self.c.release_failed += 1;
                ("release-failed", None)
            }
            LeaseEvent::AcquireFailed { .. } => {
                self.c.acquire_failed += 1;
                ("acquire-failed", None)
            }
        };
        if matches!(
            event,
            LeaseEvent::Released { .. } | LeaseEvent::ReleaseFailed { .. } | LeaseEvent::AcquireFailed { .. }
        ) {
            self.holders[h].ended_with = Some(kind);
        }
        self.note(h, What::Event { kind, epoch });
        Ok(())
    }

    /// Executes a store request as one cell transaction at its commit time.
    fn commit(&mut self, h: usize, id: u64, op: &'static str, request: Value, sent: u64) -> Result<(), Failure> {
        let fault = if self.plan.lost_permille > 0 && self.rng.chance(self.plan.lost_permille) {
            if self.rng.chance(500) { Fault::LostAfterCommit } else { Fault::NotCommitted }
        } else {
            Fault::None
        };
        let deliver_at = self.now + self.plan.deliver_lat.sample(&mut self.rng);

        let (result, now_ms, label, epoch, fault_label) = match fault {
            Fault::NotCommitted => {
                self.c.failed_commits += 1;
                let error = if self.rng.chance(500) {
                    error("INTERNAL", "reply lost")
                } else {
                    error("STORE_CONTENDED", "the store kept losing compare-and-swap races")
                };
                (StoreResult::Error(error), None, "not committed", None, "")
            }
            Fault::None | Fault::LostAfterCommit => {
                // The host read its wall clock when it loaded the cell; if the cell changed since, the
                // compare-and-swap failed and it loaded (and read the clock) again.
                let mut read_at = self.now;
                if self.plan.stale_permille > 0 && self.rng.chance(self.plan.stale_permille) {
                    let at = self.rng.range(sent, self.now);
                    if self.cell_changed_at.is_none_or(|c| c < at) && at < self.now {
                        read_at = at;
                        self.c.stale_clock_reads += 1;
                    }
                }
                let now_ms = WALL0 + read_at as i64 + self.hp(h).skew_at(read_at);
                let (result, label, epoch) = self.transact(h, op, request, now_ms)?;
                match fault {
                    Fault::LostAfterCommit => {
                        self.c.lost_replies += 1;
                        if op == "lock-acquire" && matches!(result, StoreResult::Ok(_)) {
                            self.c.orphaned_grants += 1;
                        }
                        (StoreResult::Error(error("INTERNAL", "reply lost")), Some(now_ms), label, epoch, "reply lost")
                    }
                    _ => (result, Some(now_ms), label, epoch, ""),
                }
            }
        };
        self.note(h, What::Commit { id, op, now_ms, result: label, epoch, fault: fault_label });
        self.push(deliver_at, Ev::Deliver { h, id, result });
        Ok(())
    }

    /// `invoke(op, request + {cell, nowMs})`, applying the changes on success; checks I2 on grants.
    fn transact(
        &mut self,
        h: usize,
        op: &'static str,
        mut request: Value,
        now_ms: i64,
    ) -> Result<(StoreResult, &'static str, Option<u64>), Failure> {
        let Some(obj) = request.as_object_mut() else {
            return Err(self.fail(CONTRACT, format!("run-{h}: {op} request is not an object: {request}")));
        };
        obj.insert("cell".into(), serde_json::to_value(&self.cell).unwrap_or(Value::Null));
        obj.insert("nowMs".into(), json!(now_ms));
        let input = request.to_string();
        let answer = match api::invoke(op, &input) {
            Ok(text) => text,
            Err(e) => {
                let code = e.code.as_str();
                if code == "INTERNAL" {
                    return Err(self.fail(CONTRACT, format!("run-{h}: {op} answered INTERNAL: {e}")));
                }
                let Value::Object(map) = e.to_json() else { unreachable!("errors are objects") };
                return Ok((StoreResult::Error(map), code, None));
            }
        };
        let mut answer: Value = match serde_json::from_str(&answer) {
            Ok(v) => v,
            Err(e) => return Err(self.fail(CONTRACT, format!("{op} answer is not JSON ({e}): {answer}"))),
        };
        let changes: Vec<Change> = match answer.get_mut("changes").map(Value::take).map(serde_json::from_value) {
            Some(Ok(c)) => c,
            Some(Err(e)) => return Err(self.fail(CONTRACT, format!("{op} changes do not parse: {e}"))),
            None => Vec::new(),
        };
        if !changes.is_empty() {
            self.cell.apply(&changes);
            self.cell_changed_at = Some(self.now);
            if op == "lock-release" && self.plan.sabotage == Sabotage::ForgetEpochs {
                self.cell.files.remove(EPOCH_FILE);
            }
        }
        let mut epoch = None;
        if op == "lock-acquire" {
            let e = answer["lock"]["epoch"].as_u64().unwrap_or(0);
            epoch = Some(e);
            self.grant(h, e, &changes, &answer)?;
        }
        // The answer as the host reports it (hosts pass the whole answer back; `changes` was consumed).
        Ok((StoreResult::Ok(answer), "ok", epoch))
    }

    /// A committed acquire: I2 against every earlier grant, and what the store now records.
    fn grant(&mut self, h: usize, epoch: u64, changes: &[Change], answer: &Value) -> Result<(), Failure> {
        let written = changes.iter().find_map(|c| match c {
            Change::Write { file, content } if file == LOCK_FILE => {
                serde_json::from_str::<Value>(content).ok()?.get("epoch")?.as_u64()
            }
            _ => None,
        });
        let recorded =
            self.cell.file(EPOCH_FILE).and_then(|t| serde_json::from_str::<Value>(t).ok()?.get("epoch")?.as_u64());
        if written != Some(epoch) || recorded != Some(epoch) {
            return Err(self.fail(
                I2,
                format!(
                    "run-{h}'s grant answers epoch {epoch} but lock.json was written with {written:?} and epoch.json holds {recorded:?}"
                ),
            ));
        }
        if epoch <= self.max_grant {
            return Err(self.fail(
                I2,
                format!("run-{h} was granted epoch {epoch}, not above the highest earlier grant {}", self.max_grant),
            ));
        }
        self.max_grant = epoch;
        self.c.grants += 1;
        self.c.max_epoch = self.c.max_epoch.max(epoch);
        let takeover = !answer["preempted"].is_null();
        self.c.takeovers += u64::from(takeover);
        let i = epoch as usize;
        if self.granted_to.len() <= i {
            self.granted_to.resize(i + 1, None);
            self.takeover_at.resize(i + 1, false);
        }
        self.granted_to[i] = Some(h);
        self.takeover_at[i] = takeover;
        Ok(())
    }

    /// A fenced write reaching the store: `check_fence` inside the transaction; I1 and I3 on acceptance.
    fn write_commit(&mut self, h: usize, epoch: u64, sent: u64) -> Result<(), Failure> {
        let name = &self.holders[h].name;
        let accepted =
            lock::check_fence(&self.cell, name, epoch).is_ok() || self.plan.sabotage == Sabotage::UnfencedWrites;
        let current = lock::parse_lock(&self.cell).ok().flatten().map(|l| (l.holder, l.epoch));
        self.note(h, What::WriteCommit { epoch, sent, accepted, lock: current });
        if !accepted {
            self.c.writes_refused += 1;
            if self.max_grant > epoch {
                self.c.writes_refused_after_takeover += 1;
            }
            return Ok(());
        }
        self.c.writes_accepted += 1;
        self.cell_changed_at = Some(self.now);
        let i = epoch as usize;
        if self.writer_of.len() <= i {
            self.writer_of.resize(i + 1, None);
        }
        let granted = self.granted_to.get(i).copied().flatten();
        match self.writer_of[i] {
            Some(other) if other != h => {
                return Err(self
                    .fail(I1, format!("writes at epoch {epoch} were accepted from run-{other} and now from run-{h}")));
            }
            _ => self.writer_of[i] = Some(h),
        }
        if granted != Some(h) {
            return Err(self.fail(
                I1,
                format!("a write of run-{h} at epoch {epoch} was accepted, but that epoch was granted to {granted:?}"),
            ));
        }
        if epoch < self.max_grant {
            return Err(self.fail(
                I3,
                format!(
                    "a write of run-{h} at epoch {epoch} (sent t={sent}) was accepted after epoch {} was granted",
                    self.max_grant
                ),
            ));
        }
        Ok(())
    }

    /// I4: at this instant at most one live holder has a fencing token.
    fn check_validity(&self) -> Result<(), Failure> {
        let mut first: Option<(usize, u64)> = None;
        for (i, hs) in self.holders.iter().enumerate() {
            if hs.crashed {
                continue;
            }
            if let Some(e) = hs.m.fencing_token(self.mono(i)) {
                if let Some((j, ej)) = first {
                    return Err(self.fail(
                        I4,
                        format!(
                            "at t={} run-{j} (epoch {ej}, skew {} ms) and run-{i} (epoch {e}, skew {} ms) both hold a fencing token (margin {} ms)",
                            self.now,
                            self.hp(j).skew_at(self.now),
                            self.hp(i).skew_at(self.now),
                            self.plan.margin
                        ),
                    ));
                }
                first = Some((i, e));
            }
        }
        Ok(())
    }

    /// I4g: at this instant at most one live holder works: has a token, or is within the grace period
    /// after its first must-stop/lost (the host kills the work at its end). Unless strict, a grace period
    /// after a stop that came late (as the holder thawed from a freeze) is counted, not failed.
    fn check_grace(&mut self) -> Result<(), Failure> {
        let now = self.now;
        let mut working = Vec::new();
        for (i, hs) in self.holders.iter().enumerate() {
            if hs.crashed {
                continue;
            }
            let token = hs.m.fencing_token(self.mono(i)).is_some();
            let grace = hs.worked && hs.grace_end.is_some_and(|end| now < end) && !hs.release_called;
            if token || grace {
                working.push((i, token));
            }
        }
        if working.len() < 2 {
            return Ok(());
        }
        let late = |w: &Self, (i, token): (usize, bool)| !token && w.holders[i].stop_on_thaw;
        if !self.plan.strict && working.iter().any(|&x| late(self, x)) {
            for &(i, token) in &working {
                if late(self, (i, token)) && !self.holders[i].late_grace_overlapped {
                    self.holders[i].late_grace_overlapped = true;
                    self.c.late_graces_overlapping += 1;
                }
            }
            working.retain(|&x| !late(self, x));
            if working.len() < 2 {
                return Ok(());
            }
        }
        let describe = |w: &Self, (i, token): (usize, bool)| {
            let how = match (token, w.holders[i].stop_on_thaw) {
                (true, _) => "its token",
                (false, false) => "the grace after its stop",
                (false, true) => "the grace after its stop, which came as it thawed from a freeze",
            };
            format!("run-{i} works ({how}; skew {} ms)", w.hp(i).skew_at(now))
        };
        let detail = format!(
            "at t={now} {} and {} (margin {} ms)",
            describe(self, working[0]),
            describe(self, working[1]),
            self.plan.margin
        );
        Err(self.fail(I4G, detail))
    }

    /// Measures how close the token handovers come: when a holder's token ends (found to the millisecond:
    /// the token is a pure function of time until the next call) and when the next one starts.
    fn track_handovers(&mut self) {
        let now = self.now;
        let mut started = Vec::new();
        for i in 0..self.holders.len() {
            let hs = &self.holders[i];
            let off = self.hp(i).mono_off;
            let token = if hs.crashed { None } else { hs.m.fencing_token(now + off) };
            match (hs.token, token) {
                (Some((e0, _)), Some(e)) if e0 == e => self.holders[i].token = Some((e, now)),
                (Some((_, seen)), _) => {
                    // Ended in (seen, now]: by time alone if the state still grants it at `seen`.
                    let end = if !hs.crashed && hs.m.fencing_token(seen + off).is_some() {
                        let (mut lo, mut hi) = (seen, now);
                        while hi - lo > 1 {
                            let mid = lo + (hi - lo) / 2;
                            if hs.m.fencing_token(mid + off).is_some() { lo = mid } else { hi = mid }
                        }
                        hi
                    } else {
                        now
                    };
                    let hs = &mut self.holders[i];
                    hs.token_ended = Some(end);
                    hs.token = token.map(|e| (e, now));
                    if let Some(e) = token {
                        started.push((i, e));
                    }
                }
                (None, Some(e)) => {
                    self.holders[i].token = Some((e, now));
                    started.push((i, e));
                }
                (None, None) => {}
            }
        }
        for (i, epoch) in started {
            let previous =
                self.holders.iter().enumerate().filter(|(j, _)| *j != i).filter_map(|(_, h)| h.token_ended).max();
            if let Some(end) = previous {
                let gap = now.saturating_sub(end);
                self.c.handovers += 1;
                self.c.min_handover_gap = self.c.min_handover_gap.min(gap);
                if gap <= 5 {
                    self.c.close_handovers += 1;
                }
                if self.takeover_at.get(epoch as usize).copied().unwrap_or(false) {
                    self.c.takeover_handovers += 1;
                    self.c.min_takeover_gap = self.c.min_takeover_gap.min(gap);
                }
            }
        }
    }

    /// I6 once the queue is empty: every live machine finished; in calm schedules, waiting holders got the
    /// lock, nobody was stopped, and every holder that got the lock removed it.
    fn check_end(&mut self) -> Result<(), Failure> {
        let mut deviations = 0;
        for (i, hs) in self.holders.iter().enumerate() {
            if hs.crashed {
                continue;
            }
            if !hs.m.is_finished() {
                return Err(self.fail(
                    I6,
                    format!("run-{i} never finished: nothing more was due (poll_timeout {:?})", hs.m.poll_timeout()),
                ));
            }
            if hs.cancelled_live && !matches!(hs.ended_with, Some(k) if k.starts_with("release")) {
                // Known deviation (reported, see sim.rs): release() while the acquire is in flight, and the
                // acquire then fails: the machine ends with acquire-failed. Fatal only in strict mode.
                let known = hs.cancelled_acquiring && hs.ended_with == Some("acquire-failed");
                if known && !self.plan.strict {
                    deviations += 1;
                } else {
                    return Err(self.fail(
                        I7,
                        format!(
                            "run-{i}: release() was called {} and the lease ended with {:?}",
                            if hs.cancelled_acquiring { "while its acquire was in flight" } else { "" },
                            hs.ended_with
                        ),
                    ));
                }
            }
            if !self.plan.calm {
                continue;
            }
            if self.hp(i).wait && !hs.acquired && !hs.release_called {
                return Err(self.fail(
                    I6,
                    format!(
                        "calm schedule: run-{i} waited (timeout {} ms) and never got the lock",
                        self.hp(i).wait_timeout
                    ),
                ));
            }
            if hs.stopped {
                return Err(self.fail(I6, format!("calm schedule: run-{i} was stopped (must-stop or lost)")));
            }
            if hs.acquired && !hs.released_lock {
                return Err(self.fail(I6, format!("calm schedule: run-{i} held the lock and did not remove it")));
            }
        }
        self.c.release_ended_acquire_failed += deviations;
        Ok(())
    }
}

fn error(code: &str, message: &str) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("code".into(), code.into());
    m.insert("message".into(), message.into());
    m
}

fn code_of(e: &Map<String, Value>) -> &'static str {
    match e.get("code").and_then(Value::as_str) {
        Some("LOCK_HELD") => "LOCK_HELD",
        Some("LOCK_LOST") => "LOCK_LOST",
        Some("INTERNAL") => "INTERNAL",
        Some("STORE_CONTENDED") => "STORE_CONTENDED",
        Some(_) => "error",
        None => "error without code",
    }
}
