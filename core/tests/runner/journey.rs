//! Run journeys (`tests/scenarios/run-*.json`, README "Run journeys"): a run machine driven step by step
//! by a host that keeps an in-memory store and a virtual clock, as every real host drives it.
//!
//! [`run`] takes a journey and the run machine behind one binding ([`RunApi`], which also carries out that
//! binding's core operations for the store), and returns the transcript and every failure. The host here
//! decides nothing: it carries out the machine's store and read actions on its cell map (holding some back
//! or failing them when the journey says so), moves the clock, and reports the work's end and signals. It
//! also checks the guarantees a host can see: no lock released and no `done` while the work may run, no
//! signal for work that is not running, no second `start-work`, nothing after `done`, and a journey that
//! ends with the run done and nothing pending.

use super::mismatches;
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;

/// The wall clock (Unix ms) at monotonic time 0: the `nowMs` of a transaction is this plus the clock.
pub(crate) const WALL0: u64 = 1_791_633_600_000;

/// Step kinds and the keys each may carry besides `do`, `why`, `expect` and `expectError`.
const STEPS: [(&str, &[&str]); 7] = [
    ("create", &["config"]),
    ("start", &[]),
    ("store", &["hold", "fail"]),
    ("advance", &["to"]),
    ("work-ended", &["end"]),
    ("signal", &["signal"]),
    ("outside", &["cell", "op", "input"]),
];

/// The run machine behind one of the bindings, and that binding's core operations. Errors are the
/// refusal's code.
pub(crate) trait RunApi {
    /// One core operation for the journey's store: the answer, or the error object `{code, message,
    /// ...details}` without `hint` (it follows from the code), so that every binding feeds the machine the
    /// same.
    ///
    /// `id`: the store action the transaction carries out, when it is one (a binding on the typed loop
    /// decides it with `apply` and reports it in [`Self::store_result`]).
    fn transact(&mut self, id: Option<u64>, op: &str, request: &Value) -> Result<Value, Value>;
    /// Creates the journey's (next) run from its configuration and answers its holder name.
    fn create(&mut self, config: &Value) -> Result<String, String>;
    /// `start`.
    fn start(&mut self, now: u64) -> Result<(), String>;
    /// `work_ended` with the end as JSON (`{"kind":"exited","code":0}`, ...).
    fn work_ended(&mut self, end: &Value, now: u64) -> Result<(), String>;
    /// `signal` by name (`interrupt`, `terminate`).
    fn signal(&mut self, signal: &str, now: u64) -> Result<(), String>;
    /// `handle_timeout`.
    fn timeout(&mut self, now: u64) -> Result<(), String>;
    /// `handle_store_result` with `{"ok": answer}` or `{"error": {...}}`.
    fn store_result(&mut self, id: u64, outcome: &Value, now: u64) -> Result<(), String>;
    /// The next action, parsed.
    fn poll_action(&mut self) -> Result<Option<Value>, String>;
    /// `poll_timeout`.
    fn poll_timeout(&mut self) -> Result<Option<u64>, String>;
}

/// Whether `doc` is a run journey (it has `journey` where a scenario has `steps`).
pub(crate) fn is_journey(doc: &Value) -> bool {
    doc.get("journey").is_some()
}

/// Where the work is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Work {
    Idle,
    Running,
    Ended,
}

/// A failed step: a refusal by the binding (matched against `expectError`), or a broken journey or
/// guarantee (always a failure).
enum StepError {
    Code(String),
    Bad(String),
}

impl From<String> for StepError {
    fn from(code: String) -> Self {
        Self::Code(code)
    }
}

/// The host: the store, the clock and what it knows of the current run.
struct Host<'a> {
    api: &'a mut dyn RunApi,
    /// `env/scope` -> file -> content.
    cells: BTreeMap<String, BTreeMap<String, String>>,
    now: u64,
    /// The current run's own cell, once created.
    own: Option<(String, String)>,
    /// Store and read actions not carried out yet, in the order they came.
    pending: Vec<Value>,
    work: Work,
    done: bool,
}

/// Runs the journey `doc` of `file` through `api`. Stops at the first broken step (a malformed step or a
/// broken guarantee); a mismatch is reported and the journey goes on.
pub(crate) fn run(file: &str, doc: &Value, api: &mut dyn RunApi) -> super::Outcome {
    let mut out = super::Outcome::default();
    let fail = |out: &mut super::Outcome, at: &str, msg: String| out.failures.push(format!("{file} {at}: {msg}"));
    let Some(obj) = doc.as_object() else {
        fail(&mut out, "journey", "not a JSON object".into());
        return out;
    };
    if let Some(k) = obj.keys().find(|k| !["name", "description", "journey"].contains(&k.as_str())) {
        fail(&mut out, "journey", format!("unknown key `{k}`"));
    }
    if !obj.get("name").is_some_and(Value::is_string) {
        fail(&mut out, "journey", "no string `name`".into());
    }
    let steps = match obj.get("journey").and_then(Value::as_array) {
        Some(s) if !s.is_empty() => s,
        _ => {
            fail(&mut out, "journey", "`journey` must be a non-empty array".into());
            return out;
        }
    };
    let mut host =
        Host { api, cells: BTreeMap::new(), now: 0, own: None, pending: Vec::new(), work: Work::Idle, done: false };
    for (i, step) in steps.iter().enumerate() {
        let kind = step.get("do").and_then(Value::as_str).unwrap_or("");
        let at = format!("step {i} ({kind})");
        let Some((_, keys)) = STEPS.iter().find(|(k, _)| *k == kind) else {
            fail(&mut out, &at, format!("`do` must be one of {:?}", STEPS.map(|(k, _)| k)));
            break;
        };
        let allowed = |k: &str| ["do", "why", "expect", "expectError"].contains(&k) || keys.contains(&k);
        if let Some(k) = step.as_object().and_then(|s| s.keys().find(|k| !allowed(k))) {
            fail(&mut out, &at, format!("unknown key `{k}`"));
        }
        let (expect, expect_error) = (step.get("expect"), step.get("expectError"));
        if expect.is_some() == expect_error.is_some() || expect_error.is_some_and(|e| !e.is_string()) {
            fail(&mut out, &at, "a step needs exactly one of `expect` / `expectError` (a string)".into());
            break;
        }
        let result = host.step(kind, step);
        out.transcript.push(match &result {
            Ok(answer) => json!({ "do": kind, "ok": answer }),
            Err(StepError::Code(code)) => json!({ "do": kind, "error": code }),
            Err(StepError::Bad(msg)) => json!({ "do": kind, "broken": msg }),
        });
        match (result, expect, expect_error.and_then(Value::as_str)) {
            (Err(StepError::Bad(msg)), _, _) => {
                fail(&mut out, &at, msg);
                break;
            }
            (Ok(answer), Some(want), _) => {
                let got = with_absent_files(want, answer);
                let mut diffs = Vec::new();
                mismatches("$", want, &got, &mut diffs);
                if !diffs.is_empty() {
                    fail(&mut out, &at, format!("answer differs\n{}\n  answer: {got:#}", diffs.join("\n")));
                }
            }
            (Err(StepError::Code(code)), _, Some(want)) if code == want => {}
            (Err(StepError::Code(code)), _, want) => fail(
                &mut out,
                &at,
                format!(
                    "\n  - expected {}\n  + got error {code}",
                    want.map_or("an answer".into(), |w| format!("error {w}"))
                ),
            ),
            (Ok(answer), _, Some(want)) => {
                fail(&mut out, &at, format!("\n  - expected error {want}\n  + got {answer}"))
            }
            (Ok(_), None, None) => {}
        }
    }
    if out.failures.is_empty()
        && let Some(problem) = host.unfinished()
    {
        fail(&mut out, "end", problem);
    }
    out
}

impl Host<'_> {
    fn step(&mut self, kind: &str, step: &Value) -> Result<Value, StepError> {
        let mut actions = Vec::new();
        let mut results = None;
        match kind {
            "create" => return self.create(step.get("config").unwrap_or(&Value::Null)),
            "outside" => return self.outside(step),
            "start" => {
                self.need_run()?;
                self.api.start(self.now)?;
            }
            "store" => results = Some(self.carry_out(step, &mut actions)?),
            "advance" => self.advance(step, &mut actions)?,
            "work-ended" => {
                self.need_run()?;
                if self.work != Work::Running {
                    return Err(StepError::Bad("work-ended, but no work is running".into()));
                }
                self.api.work_ended(step.get("end").unwrap_or(&Value::Null), self.now)?;
                self.work = Work::Ended;
            }
            "signal" => {
                self.need_run()?;
                self.api.signal(step.get("signal").and_then(Value::as_str).unwrap_or(""), self.now)?;
            }
            _ => return Err(StepError::Bad(format!("no step kind `{kind}`"))),
        }
        self.drain(&mut actions)?;
        let mut answer = json!({ "actions": actions, "timeout": self.api.poll_timeout()? });
        if let Some(results) = results {
            answer["results"] = Value::Array(results);
        }
        answer["cells"] = self.snapshot();
        Ok(answer)
    }

    fn need_run(&self) -> Result<(), StepError> {
        if self.own.is_none() {
            return Err(StepError::Bad("no run was created".into()));
        }
        Ok(())
    }

    /// Creates the next run (the previous one must be done); answers `{holder}`.
    fn create(&mut self, config: &Value) -> Result<Value, StepError> {
        if self.own.is_some() && !self.done {
            return Err(StepError::Bad("a run is created while the previous one is not done".into()));
        }
        if let Some(problem) = self.unfinished() {
            return Err(StepError::Bad(problem));
        }
        let holder = self.api.create(config)?;
        let own = match config.get("object") {
            Some(object) => {
                let cell = self.api.transact(None, "parent-cell", object).map_err(|e| StepError::Bad(e.to_string()))?;
                (str_of(&cell, "env"), str_of(&cell, "scope"))
            }
            None => {
                let ctx = config.get("context").unwrap_or(&Value::Null);
                (str_of(ctx, "env"), str_of(ctx, "scope"))
            }
        };
        self.own = Some(own);
        self.work = Work::Idle;
        self.done = false;
        Ok(json!({ "holder": holder }))
    }

    /// Someone else's transaction (a breaker, another run, the work's own fenced writes) on `cell`.
    fn outside(&mut self, step: &Value) -> Result<Value, StepError> {
        let cell = step.get("cell").and_then(Value::as_str).unwrap_or("");
        let Some((env, scope)) = cell.split_once('/') else {
            return Err(StepError::Bad(format!("`cell` must be \"env/scope\", got {cell:?}")));
        };
        let op = step.get("op").and_then(Value::as_str).unwrap_or("");
        let input = step.get("input").cloned().unwrap_or_else(|| json!({}));
        match self.transaction(None, env, scope, op, input, true) {
            Ok(mut answer) => {
                if let Some(a) = answer.as_object_mut() {
                    a.remove("changes");
                }
                Ok(json!({ "answer": answer, "cells": self.snapshot() }))
            }
            Err(e) => Err(StepError::Code(str_of(&e, "code"))),
        }
    }

    /// One transaction of `op` on `env/scope`: the cell and `nowMs` added to the request, the changes
    /// committed when `write`. A cell that does not exist is empty (and a read creates nothing).
    fn transaction(
        &mut self,
        id: Option<u64>,
        env: &str,
        scope: &str,
        op: &str,
        mut request: Value,
        write: bool,
    ) -> Result<Value, Value> {
        let key = format!("{env}/{scope}");
        let files = self.cells.get(&key).cloned().unwrap_or_default();
        if let Some(r) = request.as_object_mut() {
            r.insert("cell".into(), json!({ "env": env, "scope": scope, "files": files }));
            r.insert("nowMs".into(), json!(WALL0 + self.now));
        }
        let answer = self.api.transact(id, op, &request)?;
        if write {
            let files = self.cells.entry(key.clone()).or_default();
            for change in answer.get("changes").and_then(Value::as_array).into_iter().flatten() {
                let file = str_of(change, "file");
                match change.get("op").and_then(Value::as_str) {
                    Some("write") => {
                        files.insert(file, str_of(change, "content"));
                    }
                    Some("delete") => {
                        files.remove(&file);
                    }
                    _ => {}
                }
            }
            if files.is_empty() {
                self.cells.remove(&key);
            }
        }
        Ok(answer)
    }

    /// Carries out the pending store and read actions in order, and those that follow from their answers,
    /// until only held ones are left. Answers `[{id, op, error?}]`.
    fn carry_out(&mut self, step: &Value, actions: &mut Vec<Value>) -> Result<Vec<Value>, StepError> {
        self.need_run()?;
        let hold = step.get("hold").and_then(Value::as_array).cloned().unwrap_or_default();
        let fail = step.get("fail").and_then(Value::as_object).cloned().unwrap_or_default();
        let named = |a: &Value, name: &Value| match name {
            Value::String(op) => name_of(a) == *op,
            Value::Number(id) => a.get("id").and_then(Value::as_u64) == id.as_u64(),
            _ => false,
        };
        let mut results = Vec::new();
        while let Some(pos) = self.pending.iter().position(|a| !hold.iter().any(|h| named(a, h))) {
            let action = self.pending.remove(pos);
            let id = action.get("id").and_then(Value::as_u64).unwrap_or(0);
            let op = str_of(&action, "op");
            let name = name_of(&action);
            let failure = fail.get(&name).or_else(|| fail.get(&id.to_string()));
            let outcome = match failure {
                Some(error) => Err(error.clone()),
                None => {
                    let (env, scope) = match action.get("cell") {
                        Some(c) => (str_of(c, "env"), str_of(c, "scope")),
                        None => self.own.clone().unwrap_or_default(),
                    };
                    let write = action.get("type").and_then(Value::as_str) == Some("store");
                    let request = action.get("request").cloned().unwrap_or_else(|| json!({}));
                    self.transaction(Some(id), &env, &scope, &op, request, write)
                }
            };
            let (outcome, result) = match outcome {
                Ok(answer) => (json!({ "ok": answer }), json!({ "id": id, "op": name })),
                Err(e) => {
                    let code = str_of(&e, "code");
                    (json!({ "error": with_hint(e) }), json!({ "id": id, "op": name, "error": code }))
                }
            };
            results.push(result);
            self.api.store_result(id, &outcome, self.now)?;
            self.drain(actions)?;
        }
        if results.is_empty() {
            return Err(StepError::Bad(
                "nothing to carry out: no store or read action is pending (or all are held)".into(),
            ));
        }
        Ok(results)
    }

    /// Moves the clock to `to`, waking the machine at every timeout on the way (at the time it is due).
    fn advance(&mut self, step: &Value, actions: &mut Vec<Value>) -> Result<(), StepError> {
        self.need_run()?;
        let to = step.get("to").and_then(Value::as_u64).ok_or_else(|| StepError::Bad("`to` must be ms".into()))?;
        if to < self.now {
            return Err(StepError::Bad(format!("the clock goes back from {} to {to}", self.now)));
        }
        for _ in 0..10_000 {
            match self.api.poll_timeout()? {
                Some(at) if at <= to => {
                    self.now = self.now.max(at);
                    self.api.timeout(self.now)?;
                    self.drain(actions)?;
                }
                _ => {
                    self.now = to;
                    return Ok(());
                }
            }
        }
        Err(StepError::Bad(format!("the machine keeps asking to be woken before {to} (at {})", self.now)))
    }

    /// Polls every action, checking what a host can check, and keeps the store and read actions pending.
    fn drain(&mut self, actions: &mut Vec<Value>) -> Result<(), StepError> {
        while let Some(action) = self.api.poll_action()? {
            let kind = str_of(&action, "type");
            let bad = |m: &str| Err(StepError::Bad(format!("{m}: {action}")));
            if self.done {
                return bad("an action after `done`");
            }
            let running = self.work == Work::Running;
            match kind.as_str() {
                "store" | "read" => {
                    if running
                        && action.get("cell").is_none()
                        && name_of(&action).split('+').any(|o| o == "lock-release")
                    {
                        return bad("the lock is released while the work may still run");
                    }
                    self.pending.push(action.clone());
                }
                "start-work" if self.work != Work::Idle => return bad("the work is started twice"),
                "start-work" => self.work = Work::Running,
                "signal" if !running => return bad("a signal for work that is not running"),
                "done" if running => return bad("the run is done while the work may still run"),
                "done" => self.done = true,
                _ => {}
            }
            actions.push(action);
        }
        Ok(())
    }

    /// Why the journey cannot end here, if it cannot: a run not done, actions pending, the work running.
    fn unfinished(&self) -> Option<String> {
        if self.own.is_some() && !self.done {
            return Some("the run is not done (a journey ends with `done`)".into());
        }
        if !self.pending.is_empty() {
            return Some(format!("{} store action(s) still pending", self.pending.len()));
        }
        None
    }

    /// Every cell with files: `env/scope` -> file -> content (parsed when it is JSON).
    fn snapshot(&self) -> Value {
        let cells = self.cells.iter().map(|(key, files)| {
            let files: Map<String, Value> = files
                .iter()
                .map(|(f, text)| {
                    (f.clone(), serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.clone())))
                })
                .collect();
            (key.clone(), Value::Object(files))
        });
        Value::Object(cells.collect())
    }
}

/// An error object as the core spells it (with its code's hint): what a binding on the typed loop reports
/// becomes exactly that, so every binding feeds the machine the same.
fn with_hint(e: Value) -> Value {
    match e {
        Value::Object(obj) => baton_core::CoreError::from_json(obj).to_json(),
        other => other,
    }
}

fn str_of(v: &Value, key: &str) -> String {
    v.get(key).and_then(Value::as_str).unwrap_or_default().to_owned()
}

/// The answer with `null` for every cell or file `want` expects as `null` and the store does not have, so
/// that `null` in `expect.cells` means "absent".
fn with_absent_files(want: &Value, mut got: Value) -> Value {
    let (Some(want), Some(got_cells)) =
        (want.get("cells").and_then(Value::as_object), got.get_mut("cells").and_then(Value::as_object_mut))
    else {
        return got;
    };
    for (cell, files) in want {
        match files.as_object() {
            None => {
                got_cells.entry(cell.clone()).or_insert(Value::Null);
            }
            Some(files) => {
                if let Some(have) = got_cells.get_mut(cell).and_then(Value::as_object_mut) {
                    for (f, _) in files.iter().filter(|(_, v)| v.is_null()) {
                        have.entry(f.clone()).or_insert(Value::Null);
                    }
                }
            }
        }
    }
    got
}

/// How a journey names a store action: its op, or for a `cell-steps` batch its steps' ops joined by `+`.
fn name_of(action: &Value) -> String {
    let op = str_of(action, "op");
    if op != "cell-steps" {
        return op;
    }
    let steps = action.get("request").and_then(|r| r.get("steps")).and_then(Value::as_array);
    steps.map(|s| s.iter().map(|s| str_of(s, "op")).collect::<Vec<_>>().join("+")).unwrap_or(op)
}
