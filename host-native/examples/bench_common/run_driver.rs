//! A whole run driven over cells in memory, natively ([`RunMachine`]) or through the component's run
//! resource, timing the `apply` of one receipt step. The component decides the receipt steps (inheritance,
//! handover) only inside `runs.run`, so that is where both sides are measured, on the same path.

use baton_core::run::{RunConfig, RunMachine, WorkEnd};
use baton_core::typed::{RunAction, run_poll_action};
use baton_native::engine::wit::runs as wr;
use baton_native::engine::{CoreComponent, RunRef, cell_of, change_json, run_config, run_context};
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;
use std::time::Instant;

/// What a run asks for, on either side.
enum Act {
    Store { id: u64, scope: String, read: bool },
    StartWork,
    Done,
    Other,
}

/// One side of the comparison: a run to drive.
trait Side {
    fn poll(&mut self) -> Option<Act>;
    fn op(&mut self, id: u64) -> String;
    /// The changes as JSON (`{"op": "write", ...}`), or `Err` with the refusal kept for [`Side::outcome`].
    fn apply(&mut self, id: u64, cell: &Value) -> Result<Vec<Value>, ()>;
    fn outcome(&mut self, id: u64, ok: bool);
    fn work_ended(&mut self);
}

/// A pull request's run (`pr-1` of branch `big`, so its predecessor is `branch-big`).
fn config_json() -> Value {
    json!({ "job": "run", "context": { "env": "preview", "scope": "pr-1", "branch": "big", "pr": 1 },
            "random": "0123456789abcdef0123456789abcdef0123456789" })
}

struct Native(RunMachine, Option<baton_core::CoreError>);

impl Side for Native {
    fn poll(&mut self) -> Option<Act> {
        Some(match run_poll_action(&mut self.0)? {
            RunAction::Store(s) => Act::Store { id: s.id, scope: s.scope, read: s.read },
            RunAction::StartWork(_) => Act::StartWork,
            RunAction::Done(_) => Act::Done,
            _ => Act::Other,
        })
    }
    fn op(&mut self, id: u64) -> String {
        self.0.describe(id).map(|(op, _)| op.to_owned()).unwrap_or_default()
    }
    fn apply(&mut self, id: u64, cell: &Value) -> Result<Vec<Value>, ()> {
        let cell = serde_json::from_value(cell.clone()).expect("a cell");
        match baton_core::api::run_apply(&mut self.0, id, &cell, 0) {
            Ok(changes) => Ok(changes.iter().map(|c| serde_json::to_value(c).expect("a change")).collect()),
            Err(e) => {
                self.1 = Some(e);
                Err(())
            }
        }
    }
    fn outcome(&mut self, id: u64, ok: bool) {
        let outcome = if ok { Ok(()) } else { Err(self.1.take().expect("the refusal")) };
        self.0.handle_store_outcome(id, outcome, 1).expect("takes the outcome");
    }
    fn work_ended(&mut self) {
        self.0.work_ended(WorkEnd::Exited { code: 0 }, 2).expect("takes the end");
    }
}

struct Component<'a>(&'a mut CoreComponent, RunRef, Option<baton_native::engine::wit::types::Error>);

impl Side for Component<'_> {
    fn poll(&mut self) -> Option<Act> {
        Some(match self.0.run_poll_action(&self.1).expect("polls")? {
            wr::RunAction::Store(s) => Act::Store { id: s.id, scope: s.scope, read: s.read },
            wr::RunAction::StartWork(_) => Act::StartWork,
            wr::RunAction::Done(_) => Act::Done,
            _ => Act::Other,
        })
    }
    fn op(&mut self, id: u64) -> String {
        self.0.run_describe(&self.1, id).expect("describes").map(|d| d.op).unwrap_or_default()
    }
    fn apply(&mut self, id: u64, cell: &Value) -> Result<Vec<Value>, ()> {
        match self.0.run_apply(&self.1, id, &cell_of(cell), 0).expect("no trap") {
            Ok(changes) => Ok(changes.iter().map(change_json).collect()),
            Err(e) => {
                self.2 = Some(e);
                Err(())
            }
        }
    }
    fn outcome(&mut self, id: u64, ok: bool) {
        let refusal = self.2.take();
        let outcome = if ok { Ok(()) } else { Err(refusal.as_ref().expect("the refusal")) };
        self.0.run_store_outcome(&self.1, id, outcome, 1).expect("takes the outcome");
    }
    fn work_ended(&mut self) {
        self.0.run_work_ended(&self.1, &wr::WorkEnd::Exited(0), 2).expect("takes the end");
    }
}

/// Drives the run on `cells` (scope -> files), committing every change, up to the `apply` whose operation
/// and cell are `timed`, and answers its time in ms.
fn drive(side: &mut dyn Side, mut cells: BTreeMap<String, Map<String, Value>>, timed: (&str, &str)) -> f64 {
    let mut seen = Vec::new();
    while let Some(act) = side.poll() {
        match act {
            Act::Store { id, scope, read } => {
                let files = cells.entry(scope.clone()).or_default();
                let cell = json!({ "env": "preview", "scope": scope, "files": files });
                let op = side.op(id);
                let t = Instant::now();
                let answer = side.apply(id, &cell);
                if (op.as_str(), scope.as_str()) == timed {
                    // What follows (the handover's claim moves, the release) is not measured.
                    return t.elapsed().as_secs_f64() * 1e3;
                }
                seen.push(format!("{op} on {scope}"));
                if let (Ok(changes), false) = (&answer, read) {
                    for c in changes {
                        let file = c["file"].as_str().unwrap_or_default().to_owned();
                        match c["op"].as_str() {
                            Some("write") => files.insert(file, c["content"].clone()),
                            _ => files.remove(&file),
                        };
                    }
                }
                side.outcome(id, answer.is_ok());
            }
            Act::StartWork => side.work_ended(),
            Act::Done => break,
            Act::Other => {}
        }
    }
    panic!("the run made no `{}` step on {}, only {seen:?}", timed.0, timed.1)
}

/// The median of 5 runs of a receipt step (`run-begin`: the inheritance, on the run's own cell; `handover`:
/// the predecessor's rewrite, which the run batches with its lock and release on `branch-big` as one
/// `cell-steps`) with the predecessor `branch-big` holding `pred_text` as its receipt, through the
/// component and natively.
pub(crate) fn component_and_native(core: &mut CoreComponent, pred_text: &str, step: &str) -> (f64, f64) {
    let timed = if step == "handover" { ("cell-steps", "branch-big") } else { (step, "pr-1") };
    let cells = || {
        let mut pred = Map::new();
        pred.insert("latest.json".into(), pred_text.into());
        BTreeMap::from([("branch-big".to_owned(), pred)])
    };
    let config: RunConfig = serde_json::from_value(config_json()).expect("a run configuration");
    let native = median(|| {
        let mut run = RunMachine::new(config.clone()).expect("a run");
        run.start(0).expect("starts");
        drive(&mut Native(run, None), cells(), timed)
    });
    let component = median(|| {
        let mut typed = run_config(wr::Job::Run, config_json()["random"].as_str().unwrap_or_default().into(), false);
        typed.context = Some(run_context(&config_json()["context"]));
        let run = core.run_create(&typed).expect("a run");
        core.run_start(&run, 0).expect("starts");
        let mut side = Component(core, run, None);
        let took = drive(&mut side, cells(), timed);
        let Component(core, run, _) = side;
        core.run_drop(run).expect("drops");
        took
    });
    (component, native)
}

fn median(mut f: impl FnMut() -> f64) -> f64 {
    let mut s: Vec<f64> = (0..5).map(|_| f()).collect();
    s.sort_by(f64::total_cmp);
    s[2]
}
