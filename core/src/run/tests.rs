//! Unit tests of the run machine against an in-memory store that runs the real cell transactions.

use super::*;
use crate::cell::{Cell, Change};
use crate::lease::StoreResult;
use serde_json::{Value, json};
use std::collections::BTreeMap;

const WALL0: i64 = 1_791_633_600_000;
const RANDOM: &str = "0123456789abcdef0123456789abcdef0123456789";

/// An in-memory store and a host that carries out every action at once (or holds store replies back).
struct World {
    cells: BTreeMap<(String, String), Cell>,
    now: u64,
    /// Every action, in order.
    log: Vec<RunAction>,
    /// Actions not yet carried out when `hold` is set.
    held: Vec<RunAction>,
    hold: bool,
    work_running: bool,
    verdict: Option<Verdict>,
    /// Carry out store and read actions through the typed loop (`apply`, `handle_store_outcome`).
    typed: bool,
}

impl World {
    fn new() -> Self {
        Self {
            cells: BTreeMap::new(),
            now: 0,
            log: Vec::new(),
            held: Vec::new(),
            hold: false,
            work_running: false,
            verdict: None,
            typed: false,
        }
    }

    /// One store or read action through the typed loop: the machine decides on the snapshot, the store
    /// commits what it returns.
    fn transact_typed(&mut self, m: &mut RunMachine, id: u64, env: &str, scope: &str, write: bool) {
        let wall = WALL0 + i64::try_from(self.now).unwrap();
        let cell = self.cell(env, scope).clone();
        let outcome = crate::api::run_apply(m, id, &cell, wall).map(|changes| {
            if write {
                self.cell(env, scope).apply(&changes);
            }
        });
        m.handle_store_outcome(id, outcome, self.now).unwrap();
    }

    fn cell(&mut self, env: &str, scope: &str) -> &mut Cell {
        self.cells.entry((env.into(), scope.into())).or_insert_with(|| Cell {
            env: env.into(),
            scope: scope.into(),
            ..Cell::default()
        })
    }

    fn file(&self, env: &str, scope: &str, file: &str) -> Option<String> {
        self.cells.get(&(env.into(), scope.into())).and_then(|c| c.file(file)).map(str::to_owned)
    }

    fn receipt(&self, env: &str, scope: &str) -> Value {
        self.file(env, scope, "latest.json").map_or(Value::Null, |t| serde_json::from_str(&t).unwrap())
    }

    /// Runs one transaction of `op` on the cell as a store would.
    fn transact(&mut self, env: &str, scope: &str, op: &str, mut request: Value, write: bool) -> StoreResult {
        let wall = WALL0 + i64::try_from(self.now).unwrap();
        let cell = self.cell(env, scope).clone();
        request["cell"] = serde_json::to_value(&cell).unwrap();
        request["nowMs"] = json!(wall);
        match crate::api::invoke(op, &request.to_string()) {
            Ok(text) => {
                let answer: Value = serde_json::from_str(&text).unwrap();
                if write && let Some(changes) = answer.get("changes") {
                    let changes: Vec<Change> = serde_json::from_value(changes.clone()).unwrap();
                    self.cell(env, scope).apply(&changes);
                }
                StoreResult::Ok(answer)
            }
            Err(e) => StoreResult::Error(e.to_json().as_object().cloned().unwrap()),
        }
    }

    /// Drains the machine and carries out its actions until it is quiet.
    fn pump(&mut self, m: &mut RunMachine) {
        loop {
            let mut acted = false;
            while let Some(a) = if self.typed { m.poll_action_for_apply() } else { m.poll_action() } {
                acted = true;
                let mut logged = a.clone();
                // The typed poll keeps the request in the machine: the log shows it as the JSON poll would.
                if let RunAction::Store { id, request, .. } | RunAction::Read { id, request, .. } = &mut logged
                    && let Some(flight) = m.in_flight.get(id)
                {
                    request.clone_from(&flight.request);
                }
                self.log.push(logged);
                if self.hold && matches!(a, RunAction::Store { .. } | RunAction::Read { .. }) {
                    self.held.push(a);
                    continue;
                }
                self.carry_out(m, a);
            }
            if !acted {
                return;
            }
        }
    }

    fn carry_out(&mut self, m: &mut RunMachine, a: RunAction) {
        let (env, scope) = (m.env().to_owned(), m.scope().to_owned());
        match a {
            RunAction::Store { id, cell, .. } if self.typed => {
                let (e, s) = cell.map_or((env, scope), |c| (c.env, c.scope));
                self.transact_typed(m, id, &e, &s, true);
            }
            RunAction::Read { id, cell, .. } if self.typed => self.transact_typed(m, id, &cell.env, &cell.scope, false),
            RunAction::Store { id, cell, op, request, .. } => {
                let (e, s) = cell.map_or((env, scope), |c| (c.env, c.scope));
                let r = self.transact(&e, &s, op, request, true);
                m.handle_store_result(id, r, self.now).unwrap();
            }
            RunAction::Read { id, cell, op, request, .. } => {
                let r = self.transact(&cell.env, &cell.scope, op, request, false);
                m.handle_store_result(id, r, self.now).unwrap();
            }
            RunAction::StartWork { .. } => self.work_running = true,
            RunAction::Done { verdict } => self.verdict = Some(verdict),
            _ => {}
        }
    }

    /// Releases the held store actions (in order).
    fn release_held(&mut self, m: &mut RunMachine) {
        self.hold = false;
        for a in std::mem::take(&mut self.held) {
            self.carry_out(m, a);
        }
        self.pump(m);
    }

    /// Advances the clock to `t`, waking the machine at every timeout on the way.
    fn advance(&mut self, m: &mut RunMachine, t: u64) {
        while let Some(at) = m.poll_timeout().filter(|at| *at <= t) {
            self.now = self.now.max(at);
            m.handle_timeout(self.now);
            self.pump(m);
        }
        self.now = t;
    }

    fn end_work(&mut self, m: &mut RunMachine, end: WorkEnd) {
        assert!(self.work_running, "the work was not running");
        self.work_running = false;
        m.work_ended(end, self.now).unwrap();
        self.pump(m);
    }

    /// The store transactions, in order: an op, or the ops of one `cell-steps` batch joined by `+`.
    fn ops(&self) -> Vec<String> {
        let joined = |request: &Value| {
            let steps = request["steps"].as_array().cloned().unwrap_or_default();
            steps.iter().map(|s| s["op"].as_str().unwrap_or_default().to_owned()).collect::<Vec<_>>().join("+")
        };
        self.log
            .iter()
            .filter_map(|a| match a {
                RunAction::Store { op: "cell-steps", request, .. } => Some(joined(request)),
                RunAction::Store { op, .. } => Some((*op).to_owned()),
                _ => None,
            })
            .collect()
    }

    fn signals(&self) -> Vec<WorkSignal> {
        self.log
            .iter()
            .filter_map(|a| if let RunAction::Signal { signal } = a { Some(*signal) } else { None })
            .collect()
    }

    fn verdict(&self) -> &Verdict {
        self.verdict.as_ref().expect("the run is done")
    }
}

fn config(job: &str, scope: &str, extra: Value) -> RunConfig {
    let branch = if let Some(b) = scope.strip_prefix("branch-") { b.to_owned() } else { "feat-x".to_owned() };
    let pr = scope.strip_prefix("pr-").map(|n| n.parse::<u64>().unwrap());
    let mut c = json!({
        "job": job,
        "context": { "env": "preview", "scope": scope, "branch": branch, "sha": "abc1234", "pr": pr },
        "random": RANDOM,
        "ttlMs": 9_000,
    });
    for (k, v) in extra.as_object().cloned().unwrap_or_default() {
        c[k] = v;
    }
    serde_json::from_value(c).unwrap()
}

fn started(w: &mut World, cfg: RunConfig) -> RunMachine {
    let mut m = RunMachine::new(cfg).unwrap();
    m.start(w.now).unwrap();
    w.pump(&mut m);
    m
}

#[test]
fn a_run_checkpoints_works_finishes_and_releases() {
    let mut w = World::new();
    let mut m = started(&mut w, config("run", "branch-feat-x", json!({})));
    assert!(w.work_running);
    let start = w
        .log
        .iter()
        .find_map(|a| if let RunAction::StartWork { env, epoch, .. } = a { Some((env.clone(), *epoch)) } else { None });
    let (env, epoch) = start.unwrap();
    assert_eq!(env["BATON_HOLDER"], "run-01234567");
    assert_eq!(env["BATON_EPOCH"], "1");
    assert_eq!(epoch, 1);
    assert_eq!(w.receipt("preview", "branch-feat-x")["inProgress"], true, "the checkpoint lands before the work");
    assert_eq!(w.receipt("preview", "branch-feat-x")["hashKey"], "89abcdef0123456789abcdef01234567");
    w.end_work(&mut m, WorkEnd::Exited { code: 0 });
    // Two writes of the run's cell: the grant with the checkpoint, the final receipt with the release.
    assert_eq!(w.ops(), ["lock-acquire+run-begin", "run-finish+lock-release"]);
    let v = w.verdict();
    assert_eq!((v.exit, v.ok), (0, true), "{v:?}");
    assert_eq!(v.fields["receipt"]["status"], "complete");
    assert_eq!(v.fields["released"], true);
    assert_eq!(w.file("preview", "branch-feat-x", "lock.json"), None);
    assert!(m.is_finished());
}

#[test]
fn a_failing_command_keeps_its_code_and_the_receipt_says_failed() {
    let mut w = World::new();
    let mut m = started(&mut w, config("run", "branch-feat-x", json!({})));
    w.end_work(&mut m, WorkEnd::Exited { code: 3 });
    let v = w.verdict();
    assert_eq!(v.exit, 3);
    assert_eq!(v.error.as_ref().unwrap()["code"], "COMMAND_FAILED");
    assert_eq!(w.receipt("preview", "branch-feat-x")["status"], "failed");
    let mut w = World::new();
    let mut m = started(&mut w, config("run", "branch-feat-x", json!({})));
    w.end_work(&mut m, WorkEnd::NotStarted { message: "cannot start `nope`".into() });
    assert_eq!(w.verdict().exit, 127);
}

#[test]
fn production_needs_an_approver_before_any_lock() {
    let mut c = config("run", "main", json!({}));
    c.context.as_mut().unwrap().env = "Production".into();
    let e = RunMachine::new(c.clone()).unwrap_err();
    assert_eq!(e.code.as_str(), "ENV_NOT_APPROVED");
    c.approved_by = Some("alice".into());
    let mut w = World::new();
    let mut m = RunMachine::new(c).unwrap();
    m.start(0).unwrap();
    w.pump(&mut m);
    assert_eq!(w.receipt("Production", "main")["approvedBy"], "alice");
}

#[test]
fn a_runner_cancellation_kills_within_the_grace_then_records_cancelled_and_releases() {
    let mut w = World::new();
    let mut m = started(&mut w, config("run", "branch-feat-x", json!({ "cancelGraceMs": 5_000 })));
    w.now = 1_000;
    m.signal(HostSignal::Interrupt, w.now);
    w.pump(&mut m);
    assert_eq!(w.signals(), [WorkSignal::Interrupt]);
    // The command ignores everything: SIGTERM half-way through the grace, SIGKILL at its end.
    w.advance(&mut m, 3_600);
    assert_eq!(w.signals(), [WorkSignal::Interrupt, WorkSignal::Terminate]);
    assert!(!w.ops().iter().any(|o| o.contains("lock-release")), "never released while the command may run");
    w.advance(&mut m, 6_000);
    assert_eq!(w.signals(), [WorkSignal::Interrupt, WorkSignal::Terminate, WorkSignal::Kill]);
    assert!(!w.ops().iter().any(|o| o.contains("lock-release")), "released only once the command is reaped");
    w.end_work(&mut m, WorkEnd::Signalled { signal: 9 });
    let v = w.verdict();
    assert_eq!(v.exit, 130);
    assert_eq!(v.error.as_ref().unwrap()["code"], "INTERRUPTED");
    assert_eq!(w.receipt("preview", "branch-feat-x")["status"], "cancelled");
    assert_eq!(w.file("preview", "branch-feat-x", "lock.json"), None);
}

#[test]
fn sigterm_or_a_second_sigint_is_forwarded_as_sigterm_at_once() {
    let mut w = World::new();
    let mut m = started(&mut w, config("run", "branch-feat-x", json!({})));
    m.signal(HostSignal::Interrupt, 10);
    m.signal(HostSignal::Interrupt, 20);
    w.pump(&mut m);
    assert_eq!(w.signals(), [WorkSignal::Interrupt, WorkSignal::Terminate]);
    w.end_work(&mut m, WorkEnd::Exited { code: 0 });
    // A command that exits 0 after a cancel still counts as cancelled: no handover, no success.
    assert_eq!(w.receipt("preview", "branch-feat-x")["status"], "cancelled");
    assert_eq!(w.verdict().exit, 130);

    let mut w = World::new();
    let mut m = started(&mut w, config("run", "branch-feat-x", json!({})));
    m.signal(HostSignal::Terminate, 10);
    w.pump(&mut m);
    assert_eq!(w.signals(), [WorkSignal::Terminate]);
    w.end_work(&mut m, WorkEnd::Signalled { signal: 15 });
    assert_eq!(w.verdict().exit, 143);
}

#[test]
fn a_signal_while_waiting_ends_the_wait_without_running_anything() {
    let mut w = World::new();
    let other =
        w.transact("preview", "branch-feat-x", "lock-acquire", json!({ "holder": "other", "ttlMs": 60_000 }), true);
    assert!(matches!(other, StoreResult::Ok(_)));
    let mut m = started(&mut w, config("run", "branch-feat-x", json!({ "wait": true, "pollMs": 500 })));
    w.advance(&mut m, 1_200);
    assert!(w.log.iter().any(|a| matches!(a, RunAction::Note { text } if text.starts_with("waiting for preview/branch-feat-x: held by other"))));
    m.signal(HostSignal::Terminate, w.now);
    w.pump(&mut m);
    let v = w.verdict();
    assert_eq!(v.exit, 143);
    assert_eq!(v.error.as_ref().unwrap()["code"], "INTERRUPTED");
    assert!(!w.log.iter().any(|a| matches!(a, RunAction::StartWork { .. })));
}

#[test]
fn a_signal_during_the_checkpoint_releases_before_any_work() {
    let mut w = World::new();
    w.hold = true;
    let mut m = RunMachine::new(config("run", "branch-feat-x", json!({}))).unwrap();
    m.start(0).unwrap();
    w.pump(&mut m); // the grant with the checkpoint is held
    m.signal(HostSignal::Interrupt, 5);
    w.release_held(&mut m);
    assert!(!w.work_running);
    assert!(!w.log.iter().any(|a| matches!(a, RunAction::StartWork { .. })));
    assert_eq!(w.verdict().exit, 130);
    assert_eq!(w.file("preview", "branch-feat-x", "lock.json"), None);
    assert_eq!(w.ops(), ["lock-acquire+run-begin", "lock-release"]);

    // A pull request's run reads its head branch's receipt under its lock, then writes the checkpoint: a
    // signal while that read is out releases before anything else is written.
    let mut w = World::new();
    w.hold = true;
    let mut m = RunMachine::new(config("run", "pr-7", json!({}))).unwrap();
    m.start(0).unwrap();
    w.pump(&mut m);
    let grant = w.held.remove(0);
    w.hold = false;
    w.carry_out(&mut m, grant);
    w.hold = true;
    w.pump(&mut m);
    assert!(matches!(w.held.as_slice(), [RunAction::Read { .. }]), "{:?}", w.held);
    m.signal(HostSignal::Interrupt, 5);
    w.release_held(&mut m);
    assert_eq!(w.verdict().exit, 130);
    assert_eq!(w.ops(), ["lock-acquire", "lock-release"]);
    assert_eq!(w.receipt("preview", "pr-7"), Value::Null, "no checkpoint");
}

#[test]
fn a_corrupt_receipt_refuses_the_grant_with_it_so_nothing_is_locked() {
    let mut w = World::new();
    w.cell("preview", "branch-feat-x").files.insert("latest.json".into(), "{not json".into());
    let m = started(&mut w, config("run", "branch-feat-x", json!({})));
    assert!(m.is_finished());
    let v = w.verdict();
    assert_eq!((v.exit, v.error.as_ref().unwrap()["code"].as_str()), (1, Some("RECEIPT_CORRUPT")), "{v:?}");
    assert_eq!(w.ops(), ["lock-acquire+run-begin"]);
    assert_eq!(w.file("preview", "branch-feat-x", "lock.json"), None);
    assert_eq!(w.file("preview", "branch-feat-x", "latest.json").as_deref(), Some("{not json"), "kept as it was");
}

#[test]
fn a_lost_lease_stops_the_command_and_the_run_ends_lock_lost() {
    let mut w = World::new();
    let mut m = started(&mut w, config("run", "branch-feat-x", json!({})));
    // Someone breaks the lock: the next renewal is refused.
    let broke = w.transact(
        "preview",
        "branch-feat-x",
        "lock-break",
        json!({ "holder": "breaker", "ttlMs": 60_000, "reason": "test" }),
        true,
    );
    assert!(matches!(broke, StoreResult::Ok(_)));
    w.advance(&mut m, 3_100);
    assert_eq!(w.signals(), [WorkSignal::Terminate]);
    w.advance(&mut m, 9_000);
    assert_eq!(w.signals(), [WorkSignal::Terminate, WorkSignal::Kill]);
    w.end_work(&mut m, WorkEnd::Signalled { signal: 9 });
    let v = w.verdict();
    assert_eq!(v.exit, 3);
    assert_eq!(v.error.as_ref().unwrap()["code"], "LOCK_LOST");
    assert_eq!(
        serde_json::from_str::<Value>(&w.file("preview", "branch-feat-x", "lock.json").unwrap()).unwrap()["holder"],
        "breaker"
    );
}

fn record(w: &mut World, scope: &str, holder: &str, epoch: u64, key: &str, intent_only: bool) {
    let res = json!({ "adapter": "vercel", "key": key });
    let op = if intent_only { "ledger-intend" } else { "ledger-record" };
    let r = w.transact(
        "preview",
        scope,
        op,
        json!({ "holder": holder, "epoch": epoch, "resource": res, "id": "id-1" }),
        true,
    );
    assert!(matches!(r, StoreResult::Ok(_)), "{r:?}");
}

#[test]
fn a_destroy_with_leftovers_or_intents_fails_the_same_way_everywhere() {
    for (intent, code) in [(false, "COMMAND_FAILED"), (true, "INTENT_UNRESOLVED")] {
        let mut w = World::new();
        let mut m = started(&mut w, config("run", "branch-feat-x", json!({})));
        record(&mut w, "branch-feat-x", "run-01234567", 1, "env:A", intent);
        w.end_work(&mut m, WorkEnd::Exited { code: 0 });
        assert!(w.verdict().ok);
        let mut w2 = World { cells: std::mem::take(&mut w.cells), ..World::new() };
        let mut d = started(&mut w2, config("destroy", "branch-feat-x", json!({})));
        let delete =
            w2.log.iter().find_map(|a| if let RunAction::StartWork { delete, .. } = a { delete.clone() } else { None });
        assert_eq!(delete.unwrap().len(), 1);
        w2.end_work(&mut d, WorkEnd::Exited { code: 0 });
        let v = w2.verdict();
        assert_eq!((v.exit, v.error.as_ref().unwrap()["code"].as_str()), (1, Some(code)), "{v:?}");
        assert_eq!(v.fields["receipt"]["status"], "failed");
    }
}

#[test]
fn a_pull_request_inherits_and_takes_over_after_success() {
    // The JSON loop (the host runs the named operation) and the typed one (the machine decides) alike.
    for typed in [false, true] {
        let mut w = World { typed, ..World::new() };
        let mut b = started(&mut w, config("run", "branch-feat-x", json!({})));
        record(&mut w, "branch-feat-x", "run-01234567", 1, "env:A", false);
        w.end_work(&mut b, WorkEnd::Exited { code: 0 });
        let mut w2 = World { cells: std::mem::take(&mut w.cells), typed, ..World::new() };
        let mut p = started(&mut w2, config("run", "pr-7", json!({})));
        assert!(w2.log.iter().any(|a| matches!(a, RunAction::Read { cell, .. } if cell.scope == "branch-feat-x")));
        assert!(
            w2.log.iter().any(|a| matches!(a, RunAction::Warning { text } if text.starts_with("Inherited 1 resource")))
        );
        w2.end_work(&mut p, WorkEnd::Exited { code: 0 });
        assert_eq!(
            w2.ops(),
            [
                "lock-acquire",
                "run-begin",
                "run-finish",
                "lock-acquire+handover",
                "claim-move",
                "lock-release",
                "lock-release"
            ]
        );
        let v = w2.verdict();
        assert!(v.ok, "{v:?}");
        assert_eq!(v.fields["handedOver"], 1);
        // The claim of what was handed over names the pull request now.
        let (env, scope) = crate::claims::claim_cell("preview", "vercel", &json!({}), "env:A");
        let claim: Value = serde_json::from_str(&w2.file(&env, &scope, "claim.json").unwrap()).unwrap();
        assert_eq!((claim["scope"].as_str(), claim["epoch"].as_u64()), (Some("pr-7"), Some(1)), "{claim}");
        let branch = w2.receipt("preview", "branch-feat-x");
        assert_eq!(branch["supersededBy"], "pr-7");
        assert_eq!(branch["ledger"].as_array().map(Vec::len), Some(0));
        assert_eq!(w2.file("preview", "branch-feat-x", "lock.json"), None, "the handover released its lock");
    }
}

#[test]
fn a_busy_predecessor_is_a_warning_and_a_failed_run_hands_nothing_over() {
    let mut w = World::new();
    let mut b = started(&mut w, config("run", "branch-feat-x", json!({})));
    record(&mut w, "branch-feat-x", "run-01234567", 1, "env:A", false);
    w.end_work(&mut b, WorkEnd::Exited { code: 0 });
    let busy =
        w.transact("preview", "branch-feat-x", "lock-acquire", json!({ "holder": "someone", "ttlMs": 60_000 }), true);
    assert!(matches!(busy, StoreResult::Ok(_)));
    let mut w2 = World { cells: std::mem::take(&mut w.cells), ..World::new() };
    let mut p = started(&mut w2, config("run", "pr-7", json!({})));
    w2.end_work(&mut p, WorkEnd::Exited { code: 0 });
    let v = w2.verdict();
    assert!(v.ok);
    assert!(
        v.fields["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w.as_str().unwrap().starts_with("Scope `branch-feat-x` is busy"))
    );
    let mut w3 = World { cells: std::mem::take(&mut w2.cells), ..World::new() };
    let mut p = started(&mut w3, config("run", "pr-7", json!({ "holder": "second" })));
    w3.end_work(&mut p, WorkEnd::Exited { code: 1 });
    assert!(!w3.ops().iter().any(|o| o.contains("handover")));
}

#[test]
fn an_object_lease_and_a_plain_acquire() {
    let mut w = World::new();
    let cfg: RunConfig =
        serde_json::from_value(json!({ "job": "object", "object": { "identity": "auth0:t:c:abc" }, "random": RANDOM }))
            .unwrap();
    let mut m = started(&mut w, cfg);
    assert!(w.work_running);
    w.end_work(&mut m, WorkEnd::Exited { code: 0 });
    assert_eq!(w.ops(), ["lock-acquire", "lock-release"]);
    assert!(w.verdict().ok);
    assert_eq!(w.verdict().fields["context"]["object"], "auth0:t:c:abc");

    let mut w = World::new();
    let m = started(&mut w, config("acquire", "branch-feat-x", json!({ "holder": "me" })));
    let v = w.verdict();
    assert!(v.ok);
    assert_eq!(v.fields["holder"], "me");
    assert_eq!(v.fields["lock"]["epoch"], 1);
    assert!(m.is_finished());
    assert!(w.file("preview", "branch-feat-x", "lock.json").is_some(), "a plain acquire keeps the lock");
}

#[test]
fn manual_finish_keeps_the_lease_until_release() {
    let mut w = World::new();
    let mut m = started(&mut w, config("run", "branch-feat-x", json!({})));
    assert!(m.fencing_token(w.now).is_some());
    m.finish(true, w.now).unwrap();
    w.pump(&mut m);
    let outcome =
        w.log.iter().find_map(|a| if let RunAction::Finished { outcome } = a { Some(outcome.clone()) } else { None });
    assert_eq!(outcome.unwrap()["status"], "complete");
    assert!(w.file("preview", "branch-feat-x", "lock.json").is_some());
    assert!(m.finish(true, w.now).is_err(), "a finished run is not open");
    m.release(w.now);
    w.pump(&mut m);
    assert!(w.verdict().ok);
    assert_eq!(w.file("preview", "branch-feat-x", "lock.json"), None);
}

#[test]
fn bad_configuration_is_refused_up_front() {
    let mut c = config("run", "branch-feat-x", json!({}));
    c.random = "xyz".into();
    assert_eq!(RunMachine::new(c).unwrap_err().code.as_str(), "INTERNAL");
    let c = config("run", "branch-feat-x", json!({ "ttlMs": 0 }));
    assert_eq!(RunMachine::new(c).unwrap_err().code.as_str(), "USAGE");
    let mut c = config("run", "branch-feat-x", json!({}));
    c.context.as_mut().unwrap().env = "_locks".into();
    assert_eq!(RunMachine::new(c).unwrap_err().code.as_str(), "USAGE");
    let bad: Result<RunConfig, _> = serde_json::from_value(json!({ "job": "run", "random": RANDOM, "bogus": 1 }));
    assert!(bad.is_err(), "unknown keys are refused");
}

#[test]
fn manual_finish_after_a_lost_lease_says_why_and_writes_nothing() {
    let mut w = World::new();
    let mut m = started(&mut w, config("run", "branch-feat-x", json!({})));
    let broke = w.transact(
        "preview",
        "branch-feat-x",
        "lock-break",
        json!({ "holder": "breaker", "ttlMs": 60_000, "reason": "test" }),
        true,
    );
    assert!(matches!(broke, StoreResult::Ok(_)));
    w.advance(&mut m, 3_100);
    let before = w.ops().len();
    m.finish(true, w.now).unwrap();
    w.pump(&mut m);
    let outcome =
        w.log.iter().find_map(|a| if let RunAction::Finished { outcome } = a { Some(outcome.clone()) } else { None });
    assert_eq!(outcome.unwrap()["error"]["code"], "LOCK_LOST");
    assert_eq!(w.ops().len(), before, "nothing written after the loss");
    assert_eq!(w.receipt("preview", "branch-feat-x")["inProgress"], true, "the checkpoint stays");
}

#[test]
fn a_manual_release_without_finish_says_the_run_did_not_finish() {
    let mut w = World::new();
    let mut m = started(&mut w, config("run", "branch-feat-x", json!({})));
    m.release(w.now);
    w.pump(&mut m);
    let v = w.verdict();
    assert!(v.error.as_ref().unwrap()["message"].as_str().unwrap().contains("released before it finished"), "{v:?}");
}

#[test]
fn a_signal_after_the_work_ended_does_not_change_the_verdict() {
    let mut w = World::new();
    w.hold = true;
    let mut m = RunMachine::new(config("run", "branch-feat-x", json!({}))).unwrap();
    m.start(0).unwrap();
    w.pump(&mut m);
    w.release_held(&mut m);
    assert!(w.work_running);
    w.hold = true;
    w.end_work(&mut m, WorkEnd::Exited { code: 0 });
    // run-finish is in flight when the runner's SIGTERM comes.
    m.signal(HostSignal::Terminate, w.now);
    w.release_held(&mut m);
    let v = w.verdict();
    assert!(v.ok, "{v:?}");
    assert_eq!(w.receipt("preview", "branch-feat-x")["status"], "complete");
}

#[test]
fn a_pull_request_reads_its_branch_under_its_lock_after_a_wait() {
    let mut w = World::new();
    let mut b = started(&mut w, config("run", "branch-feat-x", json!({})));
    record(&mut w, "branch-feat-x", "run-01234567", 1, "env:A", false);
    w.end_work(&mut b, WorkEnd::Exited { code: 0 });
    let mut w2 = World { cells: std::mem::take(&mut w.cells), ..World::new() };
    let held = w2.transact("preview", "pr-7", "lock-acquire", json!({ "holder": "other", "ttlMs": 60_000 }), true);
    assert!(matches!(held, StoreResult::Ok(_)));
    let mut p = started(&mut w2, config("run", "pr-7", json!({ "wait": true, "pollMs": 500 })));
    assert_eq!(w2.ops(), ["lock-acquire"], "refused: the lock is held");
    // While it waits, the branch forgets what it would have inherited, and the other holder leaves.
    let res = json!({ "adapter": "vercel", "key": "env:A" });
    for (op, request) in [
        ("lock-acquire", json!({ "holder": "b2", "ttlMs": 60_000 })),
        ("ledger-forget", json!({ "holder": "b2", "epoch": 2, "resource": res })),
        ("lock-release", json!({ "holder": "b2" })),
    ] {
        assert!(matches!(w2.transact("preview", "branch-feat-x", op, request, true), StoreResult::Ok(_)), "{op}");
    }
    assert!(matches!(
        w2.transact("preview", "pr-7", "lock-release", json!({ "holder": "other" }), true),
        StoreResult::Ok(_)
    ));
    w2.advance(&mut p, 600);
    assert!(w2.work_running);
    assert_eq!(w2.ops(), ["lock-acquire", "lock-acquire", "run-begin"]);
    let reads = w2.log.iter().filter(|a| matches!(a, RunAction::Read { .. })).count();
    assert_eq!(reads, 1, "read once, under the lock");
    assert_eq!(w2.receipt("preview", "pr-7")["ledger"], json!([]), "nothing stale inherited");
    w2.end_work(&mut p, WorkEnd::Exited { code: 0 });
    assert!(w2.verdict().ok);
}

#[test]
fn the_typed_loop_refuses_what_no_action_asked_for() {
    let mut w = World { hold: true, typed: true, ..World::new() };
    let mut m = started(&mut w, config("run", "branch-feat-x", json!({})));
    let Some(RunAction::Store { id, .. }) = w.held.first().cloned() else { panic!("the grant is in flight") };
    let own = w.cell("preview", "branch-feat-x").clone();
    let other = w.cell("preview", "branch-other").clone();
    let code = |r: Result<Vec<Change>, crate::CoreError>| r.map_err(|e| e.code.as_str()).err();
    assert_eq!(code(crate::api::run_apply(&mut m, id + 100, &own, WALL0)), Some("INTERNAL"), "an id not in flight");
    assert_eq!(code(crate::api::run_apply(&mut m, id, &other, WALL0)), Some("INTERNAL"), "another cell's snapshot");
    // An outcome reported without its apply is an unknown outcome for the machine, never a landed write.
    m.handle_store_outcome(id, Ok(()), w.now).unwrap();
    w.pump(&mut m);
    assert_eq!(w.file("preview", "branch-feat-x", "lock.json"), None);
    assert!(!w.work_running, "no work without a grant");
}
