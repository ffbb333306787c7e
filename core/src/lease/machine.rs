//! The lease state machine. See the module doc of [`crate::lease`] for the contract.

use super::config::{LeaseConfig, RELEASE_RETRY_MS, Timing};
use crate::error::{CoreError, ErrorCode};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use std::collections::VecDeque;

/// Milliseconds on the host's monotonic clock.
pub type Mono = u64;

/// What the host must do next.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum Action {
    /// Perform one cell transaction: call core operation `op` with `request` plus `cell` and `nowMs`, commit
    /// its changes, and report the outcome with `id` through `handle_store_result`.
    Store {
        /// Correlates the result.
        id: u64,
        /// The core operation (`lock-acquire`, `lock-renew`, `lock-release`).
        op: &'static str,
        /// The request without `cell` and `nowMs`.
        request: Value,
        /// The instant (host monotonic ms) by which the host must have given up on this request: it kills
        /// what still runs then and reports the store's failure (`STORE_CONTENDED`). See
        /// [`LeaseMachine::store_deadline`].
        #[serde(rename = "deadlineMs")]
        deadline_ms: Mono,
    },
    /// Something happened that the host reports or acts on.
    Event {
        /// The event.
        event: LeaseEvent,
    },
}

/// Events of a lease.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum LeaseEvent {
    /// The lock is ours. `warning` is set when an expired lock was taken over.
    Acquired {
        /// The lock as stored.
        lock: Value,
        /// The epoch (fencing token).
        epoch: u64,
        /// The expired lock this grant replaced, or `null`.
        preempted: Value,
        /// "Took over an expired lock held by H since T." when `preempted` is set.
        #[serde(skip_serializing_if = "Option::is_none")]
        warning: Option<String>,
    },
    /// Waiting for another holder's lock; emitted after every attempt that found it held.
    Waiting {
        /// Who holds it.
        holder: String,
        /// Until when (their `expiresAt`).
        #[serde(rename = "expiresAt")]
        expires_at: String,
        /// How long this holder has waited so far.
        #[serde(rename = "waitedMs")]
        waited_ms: u64,
        /// How long it will still wait at most.
        #[serde(rename = "remainingMs")]
        remaining_ms: u64,
    },
    /// A renewal landed.
    Renewed {
        /// The lock as stored.
        lock: Value,
    },
    /// A renewal failed for another reason than loss; the next one is scheduled as usual.
    RenewFailed {
        /// The store's error.
        error: Value,
    },
    /// The store says another holder has the lock (or nobody does): stop at once, write nothing more.
    Lost {
        /// The `LOCK_LOST` error.
        error: Value,
        /// How long the host may let its work shut down before killing it (same bound as `must-stop`).
        #[serde(rename = "graceMs")]
        grace_ms: u64,
    },
    /// The holder's own deadline was reached: stop before the lock could be taken over.
    MustStop {
        /// The `LOCK_LOST` error explaining why.
        error: Value,
        /// How long the host may let its work shut down before killing it: until half a margin past the
        /// holder's deadline (0 when a pause already carried it past that), so the work ends before the
        /// lock could expire for others even with clock skew up to half the margin.
        #[serde(rename = "graceMs")]
        grace_ms: u64,
    },
    /// The lease is over. `released` says whether a lock of ours was removed from the store.
    Released {
        /// Whether the store removed our lock.
        released: bool,
    },
    /// The release failed after every retry; the lock stays until it expires.
    ReleaseFailed {
        /// What to tell people.
        warning: String,
        /// The last error.
        error: Value,
    },
    /// The lease could not be acquired (`LOCK_HELD` after the wait, `LOCK_CORRUPT`, a store failure). After a
    /// failure that may have landed anyway (`INTERNAL`: a lost reply looks like that), the machine first
    /// releases by holder name, and the error says `releasedOwnLock` (whether the release's last attempt
    /// found and removed a lock of ours) or, when every attempt failed, `releaseWarning`.
    AcquireFailed {
        /// The error, to print with its code.
        error: Value,
    },
}

/// The outcome of a store request, as hosts report it: `{"ok": answer}` or `{"error": {code, ...}}`.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub enum StoreResult {
    /// The transaction committed (or was a no-op); the core's answer.
    Ok(Value),
    /// The transaction was refused or failed; the error object (`code`, `message`, details).
    Error(Map<String, Value>),
}

impl From<&crate::error::CoreError> for StoreResult {
    /// The report of a refused or failed store request: the error's JSON object (code, message, details).
    fn from(e: &crate::error::CoreError) -> Self {
        match e.to_json() {
            Value::Object(obj) => Self::Error(obj),
            _ => Self::Error(Map::new()),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Acquire { sent_at: Mono },
    Renew { sent_at: Mono },
    Release { attempt: usize },
}

#[derive(Clone, Debug, PartialEq)]
enum State {
    Idle,
    /// Acquiring; `next_poll` is set while waiting for the next attempt.
    Acquiring {
        started: Mono,
        next_poll: Option<Mono>,
    },
    Held(Held),
    /// Releasing; `next_try` is set while waiting for a retry. `then` is the acquire error to end with
    /// when this is the clean-up after an acquire whose outcome is unknown (see [`acquire_outcome_unknown`]).
    Releasing {
        lock: Value,
        next_try: Option<(Mono, usize)>,
        then: Option<Value>,
        /// When the release began: all of its attempts end within one store budget from then.
        since: Mono,
    },
    Finished,
}

#[derive(Clone, Debug, PartialEq)]
struct Held {
    lock: Value,
    epoch: u64,
    /// `sent_at + ttl - margin` of the last successful acquire or renewal.
    valid_until: Mono,
    next_renew: Option<Mono>,
    stop_sent: bool,
    lost: bool,
}

/// The holder's side of one lease. See [`crate::lease`].
#[derive(Clone, Debug)]
pub struct LeaseMachine {
    cfg: LeaseConfig,
    timing: Timing,
    state: State,
    in_flight: Option<(u64, Kind)>,
    next_id: u64,
    release_pending: bool,
    actions: VecDeque<Action>,
}

impl LeaseMachine {
    /// Creates an idle machine; `USAGE` for a configuration that fails [`LeaseConfig::validate`].
    pub fn new(cfg: LeaseConfig) -> Result<Self, CoreError> {
        let timing = cfg.validate()?;
        Ok(Self {
            cfg,
            timing,
            state: State::Idle,
            in_flight: None,
            next_id: 1,
            release_pending: false,
            actions: VecDeque::new(),
        })
    }

    /// The validated timing.
    pub fn timing(&self) -> Timing {
        self.timing
    }

    /// Starts acquiring. Call once; a second call is `INTERNAL` (API misuse).
    pub fn acquire(&mut self, now: Mono) -> Result<(), CoreError> {
        if self.state != State::Idle {
            return Err(CoreError::internal("acquire called twice on one lease"));
        }
        self.state = State::Acquiring { started: now, next_poll: None };
        self.send(Kind::Acquire { sent_at: now }, now);
        Ok(())
    }

    /// Ends the lease: releases the lock if held (after any request in flight settles), cancels a wait.
    /// Always ends with a `released` or `release-failed` event. Calling it again is a no-op.
    pub fn release(&mut self, now: Mono) {
        self.release_pending = true;
        self.advance(now);
    }

    /// Wakes the machine at (or after) the time `poll_timeout` gave. Spurious calls are no-ops.
    pub fn handle_timeout(&mut self, now: Mono) {
        self.advance(now);
    }

    /// Reports the outcome of store request `id`. An id that is not the one in flight is `INTERNAL`.
    pub fn handle_store_result(&mut self, id: u64, result: StoreResult, now: Mono) -> Result<(), CoreError> {
        let kind = match self.in_flight {
            Some((in_flight, kind)) if in_flight == id => kind,
            _ => return Err(CoreError::internal(format!("store result for request {id}, which is not in flight"))),
        };
        self.in_flight = None;
        match kind {
            Kind::Acquire { sent_at } => self.on_acquired(result, sent_at, now),
            Kind::Renew { sent_at } => self.on_renewed(result, sent_at, now),
            Kind::Release { attempt } => self.on_released(result, attempt, now),
        }
        self.advance(now);
        Ok(())
    }

    /// The next action for the host, if any. Drain until `None` after every call.
    #[must_use]
    pub fn poll_action(&mut self) -> Option<Action> {
        self.actions.pop_front()
    }

    /// When to call `handle_timeout` next, if ever. Changes after every call.
    #[must_use]
    pub fn poll_timeout(&self) -> Option<Mono> {
        let idle = self.in_flight.is_none();
        match &self.state {
            State::Acquiring { next_poll, .. } => next_poll.filter(|_| idle),
            State::Held(h) => {
                let deadline = (!h.stop_sent && !h.lost).then_some(h.valid_until);
                let renew = h.next_renew.filter(|_| idle);
                [deadline, renew].into_iter().flatten().min()
            }
            State::Releasing { next_try, .. } => next_try.filter(|_| idle).map(|(at, _)| at),
            State::Idle | State::Finished => None,
        }
    }

    /// The epoch to fence writes with, while the lease is safely held at `now`: acquired, not lost, and
    /// before the holder's deadline. `None` otherwise. The store's fence check stays authoritative.
    pub fn fencing_token(&self, now: Mono) -> Option<u64> {
        match &self.state {
            State::Held(h) if !h.lost && !h.stop_sent && now < h.valid_until => Some(h.epoch),
            _ => None,
        }
    }

    /// The latest instant a store operation of this lease's holder started at `now` may run until: one store
    /// budget (`storeBudgetMs`), and while the lock is held never past half a margin after the holder's own
    /// deadline (when its work has been stopped and the lock is about to expire for others); while
    /// releasing, within one budget from when the release began, all retries included. Hosts pass it to the
    /// store for their own fenced writes; the machine's own requests carry theirs (`deadlineMs`; a renewal
    /// never runs past the holder's deadline, after which it cannot help).
    pub fn store_deadline(&self, now: Mono) -> Mono {
        let budget = now.saturating_add(self.cfg.store_budget());
        match &self.state {
            State::Held(h) if !h.lost => budget.min(h.valid_until + self.timing.margin / 2),
            State::Releasing { since, .. } => budget.min(since.saturating_add(self.cfg.store_budget())),
            _ => budget,
        }
    }

    /// Whether the lease is over (released, failed to acquire, or release failed).
    pub fn is_finished(&self) -> bool {
        self.state == State::Finished
    }

    fn send(&mut self, kind: Kind, now: Mono) {
        let id = self.next_id;
        self.next_id += 1;
        self.in_flight = Some((id, kind));
        let holder = self.cfg.holder.clone();
        let (op, request) = match (kind, &self.state) {
            (Kind::Acquire { .. }, _) => {
                let mut request = json!({ "holder": holder, "ttlMs": self.timing.ttl });
                if let Some(label) = &self.cfg.label {
                    request["label"] = json!(label);
                }
                ("lock-acquire", request)
            }
            (Kind::Renew { .. }, State::Held(h)) => {
                ("lock-renew", json!({ "holder": holder, "epoch": h.epoch, "ttlMs": self.timing.ttl }))
            }
            (Kind::Release { .. }, State::Releasing { lock, .. }) => (
                "lock-release",
                json!({ "holder": holder, "epoch": lock.get("epoch").cloned().unwrap_or(Value::Null) }),
            ),
            // INVARIANT: renewals are only sent while held, releases only while releasing.
            _ => ("lock-read", json!({})),
        };
        let deadline_ms = match (kind, &self.state) {
            (Kind::Renew { .. }, State::Held(h)) => self.store_deadline(now).min(h.valid_until),
            _ => self.store_deadline(now),
        };
        self.actions.push_back(Action::Store { id, op, request, deadline_ms });
    }

    fn event(&mut self, event: LeaseEvent) {
        self.actions.push_back(Action::Event { event });
    }

    fn finish(&mut self, event: LeaseEvent) {
        self.state = State::Finished;
        self.event(event);
    }

    /// Everything time or a pending release makes due, in one place.
    fn advance(&mut self, now: Mono) {
        if self.in_flight.is_some() {
            self.check_deadline(now);
            return;
        }
        match &mut self.state {
            State::Acquiring { next_poll, .. } => {
                if self.release_pending {
                    // Waiting between attempts: nothing of ours is in the store.
                    self.finish(LeaseEvent::Released { released: false });
                } else if next_poll.is_some_and(|at| now >= at) {
                    *next_poll = None;
                    self.send(Kind::Acquire { sent_at: now }, now);
                }
            }
            State::Held(h) => {
                if self.release_pending {
                    if h.lost {
                        self.finish(LeaseEvent::Released { released: false });
                    } else {
                        let lock = h.lock.clone();
                        self.state = State::Releasing { lock, next_try: None, then: None, since: now };
                        self.send(Kind::Release { attempt: 0 }, now);
                    }
                    return;
                }
                self.check_deadline(now);
                if let State::Held(h) = &mut self.state
                    && !h.lost
                    && h.next_renew.is_some_and(|at| now >= at)
                {
                    h.next_renew = None;
                    self.send(Kind::Renew { sent_at: now }, now);
                }
            }
            State::Releasing { next_try, .. } => {
                if let Some((at, attempt)) = *next_try
                    && now >= at
                {
                    *next_try = None;
                    self.send(Kind::Release { attempt }, now);
                }
            }
            State::Idle | State::Finished => {
                if self.release_pending && self.state == State::Idle {
                    self.finish(LeaseEvent::Released { released: false });
                }
            }
        }
    }

    fn check_deadline(&mut self, now: Mono) {
        let label = self.cfg.label();
        if let State::Held(h) = &mut self.state
            && !h.stop_sent
            && !h.lost
            && now >= h.valid_until
        {
            h.stop_sent = true;
            let error = CoreError::new(
                ErrorCode::LockLost,
                format!(
                    "This run stopped: the lease on {label} was about to expire because renewals were not getting through. It stopped without writing further; if another run takes over, its receipt is authoritative."
                ),
            )
            .with("holder", self.cfg.holder.clone())
            .with("epoch", h.epoch)
            .with("current", Value::Null);
            let grace_ms = (h.valid_until + self.timing.margin / 2).saturating_sub(now);
            self.event(LeaseEvent::MustStop { error: error.to_json(), grace_ms });
        }
    }

    fn on_acquired(&mut self, result: StoreResult, sent_at: Mono, now: Mono) {
        let State::Acquiring { started, .. } = self.state else { return };
        match result {
            StoreResult::Ok(answer) => {
                let lock = answer.get("lock").cloned().unwrap_or(Value::Null);
                let epoch = lock.get("epoch").and_then(Value::as_u64).unwrap_or(0);
                let preempted = answer.get("preempted").cloned().unwrap_or(Value::Null);
                let warning = preempted.get("holder").and_then(Value::as_str).map(|holder| {
                    let since = preempted.get("acquiredAt").and_then(Value::as_str).unwrap_or("an unknown time");
                    format!("Took over an expired lock held by {holder} since {since}.")
                });
                self.state = State::Held(Held {
                    lock: lock.clone(),
                    epoch,
                    valid_until: sent_at + self.timing.ttl - self.timing.margin,
                    next_renew: Some(now + self.timing.renew_every),
                    stop_sent: false,
                    lost: false,
                });
                self.event(LeaseEvent::Acquired { lock, epoch, preempted, warning });
            }
            StoreResult::Error(error) => {
                let held = error.get("code").and_then(Value::as_str) == Some(ErrorCode::LockHeld.as_str());
                let deadline = self.timing.wait_timeout.map(|t| started + t);
                match deadline {
                    Some(deadline) if held && now < deadline && !self.release_pending => {
                        let lock = error.get("lock").cloned().unwrap_or(Value::Null);
                        let field = |k: &str| lock.get(k).and_then(Value::as_str).unwrap_or("?").to_owned();
                        self.state =
                            State::Acquiring { started, next_poll: Some((now + self.timing.poll).min(deadline)) };
                        self.event(LeaseEvent::Waiting {
                            holder: field("holder"),
                            expires_at: field("expiresAt"),
                            waited_ms: now - started,
                            remaining_ms: deadline - now,
                        });
                    }
                    _ if self.release_pending => {
                        if self.cfg.unique_holder && acquire_outcome_unknown(&error) {
                            // The attempt may have landed: release what may be ours before ending.
                            self.clean_up(None, now);
                        } else {
                            // The caller already asked to stop: nothing of ours is in the store.
                            self.finish(LeaseEvent::Released { released: false });
                        }
                    }
                    _ => {
                        let unknown = self.cfg.unique_holder && acquire_outcome_unknown(&error);
                        let mut error = Value::Object(error);
                        if held && let Some(t) = self.timing.wait_timeout {
                            error["waitedMs"] = json!(now.saturating_sub(started));
                            error["message"] = json!(format!(
                                "{} Gave up after waiting {} s (--wait-timeout).",
                                error["message"].as_str().unwrap_or_default(),
                                t / 1000
                            ));
                        }
                        if unknown {
                            // The attempt may have landed (a lost reply): release what may be ours, then
                            // report the failure, rather than leave a lock nobody runs under for a TTL.
                            self.clean_up(Some(error), now);
                        } else {
                            self.finish(LeaseEvent::AcquireFailed { error });
                        }
                    }
                }
            }
        }
    }

    /// Releases by holder alone (no epoch: whatever epoch an attempt whose reply was lost may have been
    /// granted), then ends with `then` as `acquire-failed`, or with `released` when it is `None` or `release()`
    /// was called meanwhile. Only with [`LeaseConfig::unique_holder`]: a lock under the name is then ours.
    fn clean_up(&mut self, then: Option<Value>, now: Mono) {
        let lock = json!({ "holder": self.cfg.holder, "epoch": null });
        self.state = State::Releasing { lock, next_try: None, then, since: now };
        self.send(Kind::Release { attempt: 0 }, now);
    }

    fn on_renewed(&mut self, result: StoreResult, sent_at: Mono, now: Mono) {
        let renew_every = self.timing.renew_every;
        let half_margin = self.timing.margin / 2;
        let valid_for = self.timing.ttl - self.timing.margin;
        let State::Held(h) = &mut self.state else { return };
        match result {
            StoreResult::Ok(answer) => {
                h.lock = answer.get("lock").cloned().unwrap_or(Value::Null);
                h.valid_until = h.valid_until.max(sent_at + valid_for);
                h.next_renew = Some(now + renew_every);
                let lock = h.lock.clone();
                self.event(LeaseEvent::Renewed { lock });
            }
            StoreResult::Error(error) if error.get("code").and_then(Value::as_str) == Some("LOCK_LOST") => {
                h.lost = true;
                h.next_renew = None;
                // The work ends by the same instant as after must-stop, never later: half a margin past
                // the holder's own deadline (which may already be past after a pause).
                let grace_ms = (h.valid_until + half_margin).saturating_sub(now);
                self.event(LeaseEvent::Lost { error: Value::Object(error), grace_ms });
            }
            StoreResult::Error(error) => {
                h.next_renew = Some(now + renew_every);
                self.event(LeaseEvent::RenewFailed { error: Value::Object(error) });
            }
        }
    }

    fn on_released(&mut self, result: StoreResult, attempt: usize, now: Mono) {
        let budget = self.cfg.store_budget();
        let State::Releasing { lock, next_try, then, since } = &mut self.state else { return };
        // Retries end with the release's budget: one that could not start before it is not made.
        let retry_at = RELEASE_RETRY_MS.get(attempt).map(|d| now + d).filter(|at| *at < since.saturating_add(budget));
        match result {
            StoreResult::Ok(answer) => {
                let released = answer.get("released").and_then(Value::as_bool).unwrap_or(false);
                // A release() asked for meanwhile makes this the end of a release, as it promises.
                match then.take().filter(|_| !self.release_pending) {
                    Some(mut error) => {
                        error["releasedOwnLock"] = json!(released);
                        self.finish(LeaseEvent::AcquireFailed { error });
                    }
                    None => self.finish(LeaseEvent::Released { released }),
                }
            }
            StoreResult::Error(error) => match retry_at {
                Some(at) => *next_try = Some((at, attempt + 1)),
                None => {
                    let why = error.get("message").and_then(Value::as_str).unwrap_or("unknown error").to_owned();
                    let warning = match lock.get("expiresAt").and_then(Value::as_str) {
                        Some(until) => format!(
                            "Could not release the lock for {} ({why}); it stays held until about {until}, and runs on this scope get LOCK_HELD until then.",
                            self.cfg.label()
                        ),
                        None => format!(
                            "Could not release the lock for {} ({why}); if an earlier attempt to acquire it landed, it stays held for up to the TTL, and runs on this scope get LOCK_HELD until then.",
                            self.cfg.label()
                        ),
                    };
                    let event = match then.take().filter(|_| !self.release_pending) {
                        Some(mut acquire_error) => {
                            let message = acquire_error["message"].as_str().unwrap_or_default().to_owned();
                            acquire_error["message"] = json!(format!("{message} {warning}"));
                            acquire_error["releaseWarning"] = json!(warning);
                            LeaseEvent::AcquireFailed { error: acquire_error }
                        }
                        None => LeaseEvent::ReleaseFailed { warning, error: Value::Object(error) },
                    };
                    self.finish(event);
                }
            },
        }
    }
}

/// Whether a failed acquire may still have landed in the store: only an `INTERNAL` failure (an I/O error or
/// a reply lost after the commit look alike). Every other code says what happened before anything was
/// written: a refusal the core decided (`LOCK_HELD`, `LOCK_CORRUPT`, `USAGE`), or a store that committed
/// nothing (`STORE_CONTENDED`: no mutex or every push refused; `STORE_PERMISSION`: no access;
/// `STORE_REJECTED`: a hook or a full disk refused the write).
fn acquire_outcome_unknown(error: &Map<String, Value>) -> bool {
    let code = error.get("code").and_then(Value::as_str);
    code.is_none_or(|c| c == ErrorCode::Internal.as_str())
}
