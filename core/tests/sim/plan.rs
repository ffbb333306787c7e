//! What one schedule contains, drawn from its seed: timings, holders, clocks and faults.

use super::rng::Rng;

/// A delay distribution: uniform in `0..=max`, except `slow_permille` of the time uniform in `0..=slow_max`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Latency {
    pub(crate) max: u64,
    pub(crate) slow_permille: u64,
    pub(crate) slow_max: u64,
}

impl Latency {
    pub(crate) const fn fixed_max(max: u64) -> Self {
        Self { max, slow_permille: 0, slow_max: 0 }
    }

    pub(crate) fn sample(&self, rng: &mut Rng) -> u64 {
        if self.slow_permille > 0 && rng.chance(self.slow_permille) {
            rng.range(0, self.slow_max)
        } else {
            rng.range(0, self.max)
        }
    }

    fn bound(&self) -> u64 {
        if self.slow_permille > 0 { self.max.max(self.slow_max) } else { self.max }
    }
}

impl HolderPlan {
    /// Its wall clock minus the true time at virtual time `t`.
    pub(crate) fn skew_at(&self, t: u64) -> i64 {
        self.skew_steps.iter().take_while(|(at, _)| *at <= t).last().map_or(self.skew, |s| s.1)
    }
}

/// One holder: a process that runs one lease.
#[derive(Clone, Debug)]
pub(crate) struct HolderPlan {
    /// The holder name written into the lock (a re-run of a job may reuse its predecessor's).
    pub(crate) name: String,
    /// Virtual time at which it calls `acquire`.
    pub(crate) start: u64,
    /// Its wall clock minus the true time (ms), from the start.
    pub(crate) skew: i64,
    /// `(at, skew)`: its wall clock is stepped (as NTP does, forwards or backwards) to a new skew at `at`.
    pub(crate) skew_steps: Vec<(u64, i64)>,
    /// Its monotonic clock minus the virtual time (monotonic clocks have arbitrary origins).
    pub(crate) mono_off: u64,
    pub(crate) wait: bool,
    pub(crate) poll: u64,
    pub(crate) wait_timeout: u64,
    /// How long it works after `acquired` before calling `release`.
    pub(crate) work: u64,
    /// Period of its fenced-write attempts while it works.
    pub(crate) write_every: u64,
    /// Delay between `must-stop`/`lost` and the host's `release` call.
    pub(crate) stop_delay: u64,
    /// When its process dies (no release, nothing more), if ever.
    pub(crate) crash_at: Option<u64>,
    /// `(start, duration)` of its freezes.
    pub(crate) pauses: Vec<(u64, u64)>,
    /// When the user cancels it (the host calls `release` whatever the state), if ever.
    pub(crate) cancel_at: Option<u64>,
}

/// A deliberate defect in the simulated host or store, to prove that the invariant checks can fail.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Sabotage {
    /// None: the real thing.
    None,
    /// The store accepts fenced writes without `check_fence` (I1 or I3 must catch it).
    UnfencedWrites,
    /// The store loses `epoch.json` with every release (I2 must catch the repeated epoch).
    ForgetEpochs,
    /// The host never schedules the machine's wake-ups (I6 must catch the holder that never finishes).
    NoWakeups,
}

/// One schedule.
#[derive(Clone, Debug)]
pub(crate) struct Plan {
    pub(crate) seed: u64,
    pub(crate) ttl: u64,
    pub(crate) margin_ms: Option<u64>,
    pub(crate) renew_every_ms: Option<u64>,
    /// The effective margin (`margin_ms` or TTL/5).
    pub(crate) margin: u64,
    /// No crashes, pauses, lost replies or slow stores: the liveness checks of I6 apply.
    pub(crate) calm: bool,
    /// Store request: send -> commit, and commit -> delivery of the reply.
    pub(crate) commit_lat: Latency,
    pub(crate) deliver_lat: Latency,
    /// Fenced write: token checked -> write commits.
    pub(crate) write_lat: Latency,
    /// Per store request: the reply is lost (half of them after the commit, half without committing).
    pub(crate) lost_permille: u64,
    /// Per store transaction: the host read its wall clock when it loaded the cell, earlier than the commit
    /// (only when the cell did not change in between, as compare-and-swap guarantees).
    pub(crate) stale_permille: u64,
    pub(crate) holders: Vec<HolderPlan>,
    /// Whether I4 is checked (the control run turns it off to show that fencing holds without it).
    pub(crate) check_i4: bool,
    /// Whether I4g is checked: the work may go on for `graceMs` after must-stop/lost, and still no two
    /// holders work at once (the lease doc promises this for clocks up to half the margin apart).
    pub(crate) check_grace: bool,
    /// Virtual time by which every holder must have finished (I6).
    pub(crate) horizon: u64,
    pub(crate) sabotage: Sabotage,
    /// Whether the known deviations (I7: release during an acquire that fails; I4g: a full grace period
    /// after a stop that came late, on thawing from a freeze) fail the schedule instead of being counted.
    pub(crate) strict: bool,
}

impl Plan {
    /// The schedule of `seed`, with clock skews the lease tolerates (|skew_a - skew_b| <= margin).
    pub(crate) fn generate(seed: u64) -> Self {
        let mut rng = Rng::new(seed, 1);
        let ttl = rng.pick(&[900, 900, 900, 600, 1500]);
        let margin_ms = match rng.below(10) {
            0 => Some(ttl / 10),
            1 => Some(ttl / 3),
            _ => None,
        };
        let margin = margin_ms.unwrap_or(ttl / 5);
        let calm = rng.chance(200);
        let renew_every_ms = if rng.chance(150) {
            // Anywhere the validation allows, but in calm schedules leave room for the store's latency.
            let hi = if calm { (ttl - margin) / 2 } else { ttl - margin - 1 };
            Some(rng.range(ttl / 10, hi))
        } else {
            None
        };

        let (commit_lat, deliver_lat, write_lat, lost_permille) = if calm {
            (Latency::fixed_max(20), Latency::fixed_max(20), Latency::fixed_max(20), 0)
        } else {
            let slow = |rng: &mut Rng| Latency {
                max: rng.pick(&[0, 2, 5, 30, 120, 300]),
                slow_permille: rng.pick(&[0, 20, 60, 150]),
                slow_max: rng.range(ttl / 3, ttl * 5 / 2),
            };
            let lost = if rng.chance(300) { 0 } else { rng.range(10, 250) };
            (slow(&mut rng), slow(&mut rng), slow(&mut rng), lost)
        };
        let stale_permille = rng.pick(&[0, 0, 100, 500]);

        // Skews: |skew| <= margin/2, so two holders differ by at most the margin (the documented tolerance).
        let half = (margin / 2) as i64;
        let skew_mode = rng.below(10);
        // Sometimes waiting holders poll densely, to land right at the moment a lock expires.
        let dense_poll = rng.chance(150);
        let poll_lo = if rng.chance(300) { 1 } else { 3 };
        let n = rng.range(2, 5) as usize;
        let mut holders = Vec::with_capacity(n);
        for i in 0..n {
            let skew = match skew_mode {
                0 => 0,
                1..=5 => rng.irange(-(half - 1), half - 1),
                6..=8 => rng.pick(&[-(half - 1), half - 1]),
                _ => rng.pick(&[-half, half]),
            };
            let start = if rng.chance(500) { 0 } else { rng.range(0, 3 * ttl) };
            let wait = rng.chance(600);
            let poll = if dense_poll { rng.range(poll_lo, 30) } else { rng.range(60, 400) };
            let work = rng.range(ttl / 8, 2 * ttl);
            let mut h = HolderPlan {
                name: format!("run-{i}"),
                start,
                skew,
                skew_steps: Vec::new(),
                mono_off: rng.range(0, 1 << 40),
                wait,
                poll,
                wait_timeout: rng.range(ttl / 2, 6 * ttl),
                work,
                write_every: rng.range(20, 200),
                stop_delay: rng.range(0, 50),
                crash_at: None,
                pauses: Vec::new(),
                cancel_at: None,
            };
            if skew_mode != 0 && rng.chance(200) {
                let mut at = 0;
                for _ in 0..rng.range(1, 3) {
                    at += rng.range(1, 2 * ttl);
                    h.skew_steps.push((at, rng.irange(-half, half)));
                }
            }
            if rng.chance(120) {
                h.cancel_at = Some((start + rng.range(0, 5 * ttl)).saturating_sub(ttl));
            }
            if !calm {
                if rng.chance(150) {
                    h.crash_at = Some(start + rng.range(0, 4 * ttl));
                }
                if rng.chance(400) {
                    for _ in 0..rng.range(1, 2) {
                        let at = start + rng.range(0, 4 * ttl);
                        let renew = renew_every_ms.unwrap_or(ttl / 3);
                        let dur = match rng.below(10) {
                            0..=4 => rng.range(20, renew),
                            5..=7 => rng.range(renew, ttl),
                            _ => rng.range(ttl, 3 * ttl),
                        };
                        h.pauses.push((at, dur));
                    }
                }
            }
            holders.push(h);
        }
        if n >= 3 && rng.chance(100) {
            // A re-run of the first job under the same holder name: only the epoch tells them apart.
            holders[n - 1].name = holders[0].name.clone();
        }
        if calm {
            // Long enough for every other holder to come and go: then every waiting holder must get the lock.
            let all: u64 = holders.iter().map(|h| h.work + 2 * h.poll + 200).sum::<u64>() + 4 * ttl;
            for h in &mut holders {
                h.wait_timeout = all;
            }
        }

        let mut plan = Self {
            seed,
            ttl,
            margin_ms,
            renew_every_ms,
            margin,
            calm,
            commit_lat,
            deliver_lat,
            write_lat,
            lost_permille,
            stale_permille,
            holders,
            check_i4: true,
            check_grace: false,
            horizon: 0,
            sabotage: Sabotage::None,
            strict: false,
        };
        plan.horizon = plan.compute_horizon();
        plan
    }

    /// A deliberately broken schedule: the holders' wall clocks disagree by more than the TTL, far beyond
    /// the margin. Holders then take over live locks; only the fence keeps the writes apart.
    pub(crate) fn control(seed: u64, check_i4: bool) -> Self {
        let mut plan = Self::generate(seed);
        let mut rng = Rng::new(seed, 3);
        let ttl = plan.ttl as i64;
        for (i, h) in plan.holders.iter_mut().enumerate() {
            h.skew = if i % 2 == 0 { 0 } else { ttl + rng.irange(1, ttl) };
            h.skew_steps.clear();
            h.wait = true;
        }
        plan.calm = false;
        plan.check_i4 = check_i4;
        plan.horizon = plan.compute_horizon();
        plan
    }

    /// A schedule aimed at the edge of the clock tolerance: holders' wall clocks differ by `margin + excess`
    /// ms (alternating `-margin/2` and `margin/2 + excess`), the store answers within 0-2 ms, every holder
    /// waits and polls every 1-5 ms, and holders freeze, so that takeovers land on the very millisecond the
    /// lock expires. With `excess == 0` I4 must hold; with `excess >= 1` it can be violated.
    pub(crate) fn edge(seed: u64, excess: i64) -> Self {
        let mut plan = Self::generate(seed);
        let mut rng = Rng::new(seed, 4);
        let half = (plan.margin / 2) as i64;
        let lat = Latency::fixed_max(rng.pick(&[0, 0, 1, 2]));
        (plan.commit_lat, plan.deliver_lat) = (lat, lat);
        plan.calm = false;
        for (i, h) in plan.holders.iter_mut().enumerate() {
            h.skew = if i % 2 == 0 { -half } else { plan.margin as i64 - half + excess };
            h.skew_steps.clear();
            h.wait = true;
            h.poll = rng.range(1, 5);
            h.wait_timeout = rng.range(plan.ttl, 3 * plan.ttl);
            h.crash_at = None;
            if rng.chance(500) {
                h.pauses = vec![(h.start + rng.range(0, plan.ttl), rng.range(plan.ttl, 2 * plan.ttl))];
            }
        }
        plan.horizon = plan.compute_horizon();
        plan
    }

    /// The schedule of `seed` with wall clocks at most half the margin apart, checking I4g.
    pub(crate) fn grace(seed: u64) -> Self {
        let mut plan = Self::generate(seed);
        for h in &mut plan.holders {
            h.skew /= 2;
            for step in &mut h.skew_steps {
                step.1 /= 2;
            }
        }
        plan.check_grace = true;
        plan
    }

    /// The schedule of `seed` run with a defect.
    pub(crate) fn sabotaged(seed: u64, sabotage: Sabotage) -> Self {
        Self { sabotage, ..Self::generate(seed) }
    }

    /// A generous bound on when everything is over: every holder waits, works, stops and releases in turn,
    /// with every pause and the slowest store on every step.
    fn compute_horizon(&self) -> u64 {
        let lat = self.commit_lat.bound() + self.deliver_lat.bound() + self.write_lat.bound();
        let per_holder: u64 = self
            .holders
            .iter()
            .map(|h| {
                let pauses: u64 = h.pauses.iter().map(|p| p.1).sum::<u64>() + h.cancel_at.unwrap_or(0);
                h.wait_timeout + h.work + h.stop_delay + pauses + 10 * lat + 2 * self.ttl + 2_000
            })
            .sum();
        let last_start = self
            .holders
            .iter()
            .map(|h| h.start.max(h.pauses.iter().map(|p| p.0).max().unwrap_or(0)))
            .max()
            .unwrap_or(0);
        last_start + per_holder
    }
}
