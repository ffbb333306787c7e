//! The component's `run` resource for the run journeys (`core/tests/runner/journey.rs` drives it) on the
//! typed loop: the journey's store actions are decided by the resource's `apply` and reported with
//! `handle-store-outcome`. Its typed actions are shown in the JSON spelling of the native machine's (with
//! the operation and request `describe` gives), so both transcripts compare byte for byte.

use crate::convert;
use crate::runner::journey::RunApi;
use baton_core::CoreError;
use baton_native::engine::wit::runs as wr;
use baton_native::engine::{CoreComponent, RunRef, cell_of, change_json};
use baton_native::error::HostError;
use serde_json::{Value, json};

/// The run machine of a journey inside the component. Drop it with [`ComponentRun::close`].
pub(crate) struct ComponentRun<'a> {
    pub(crate) core: &'a mut CoreComponent,
    run: Option<RunRef>,
    /// The run's own cell (its store actions name it; the native spelling leaves it out).
    own: (String, String),
}

fn code(e: HostError) -> String {
    e.code
}

fn bad(e: impl std::fmt::Display) -> String {
    format!("INTERNAL: {e}")
}

impl<'a> ComponentRun<'a> {
    pub(crate) fn new(core: &'a mut CoreComponent) -> Self {
        Self { core, run: None, own: Default::default() }
    }

    fn parts(&mut self) -> Result<(&mut CoreComponent, &RunRef), String> {
        let run = self.run.as_ref().ok_or_else(|| "INTERNAL".to_owned())?;
        Ok((self.core, run))
    }

    /// Frees the journey's run inside the component.
    pub(crate) fn close(&mut self) -> Result<(), HostError> {
        self.run.take().map_or(Ok(()), |r| self.core.run_drop(r))
    }

    /// A typed action in the native machine's JSON spelling.
    fn spelled(&mut self, action: wr::RunAction) -> Result<Value, String> {
        Ok(match action {
            wr::RunAction::Store(a) => {
                let (core, r) = self.parts()?;
                let d = core.run_describe(r, a.id).map_err(code)?.ok_or_else(|| bad("no description"))?;
                let request: Value = serde_json::from_str(&d.request).map_err(bad)?;
                let mut v = json!({ "type": if a.read { "read" } else { "store" }, "id": a.id, "op": d.op,
                                    "request": request, "deadlineMs": a.deadline_ms });
                if a.read || (a.env.as_str(), a.scope.as_str()) != (self.own.0.as_str(), self.own.1.as_str()) {
                    v["cell"] = json!({ "env": a.env, "scope": a.scope });
                }
                v
            }
            wr::RunAction::StartWork(w) => {
                let env: serde_json::Map<String, Value> = w.env.into_iter().map(|(k, v)| (k, v.into())).collect();
                let mut v = json!({ "type": "start-work", "env": env, "epoch": w.epoch, "label": w.label });
                if let Some(delete) = w.delete {
                    let entries: Result<Vec<Value>, _> = delete.iter().map(|e| serde_json::from_str(e)).collect();
                    v["delete"] = Value::Array(entries.map_err(bad)?);
                }
                v
            }
            wr::RunAction::Signal(s) => {
                let name = match s {
                    wr::WorkSignal::Interrupt => "interrupt",
                    wr::WorkSignal::Terminate => "terminate",
                    wr::WorkSignal::Kill => "kill",
                };
                json!({ "type": "signal", "signal": name })
            }
            wr::RunAction::Note(text) => json!({ "type": "note", "text": text }),
            wr::RunAction::Warning(text) => json!({ "type": "warning", "text": text }),
            wr::RunAction::Lease(e) => {
                json!({ "type": "lease", "event": serde_json::to_value(convert::lease_event_back(e)).map_err(bad)? })
            }
            wr::RunAction::Finished(outcome) => {
                json!({ "type": "finished", "outcome": serde_json::from_str::<Value>(&outcome).map_err(bad)? })
            }
            wr::RunAction::Done(v) => {
                let mut verdict = json!({ "exit": v.exit, "ok": v.ok,
                                          "fields": serde_json::from_str::<Value>(&v.fields).map_err(bad)? });
                if let Some(e) = v.error {
                    verdict["error"] = serde_json::from_str(&e.json).map_err(bad)?;
                }
                json!({ "type": "done", "verdict": verdict })
            }
        })
    }
}

/// The error object the journey feeds back (without `hint`, as every binding does).
fn error_object(e: &baton_native::engine::wit::types::Error) -> Value {
    let mut v: Value = serde_json::from_str(&e.json).unwrap_or_else(|_| json!({ "code": "INTERNAL" }));
    if let Some(obj) = v.as_object_mut() {
        obj.remove("hint");
    }
    v
}

impl RunApi for ComponentRun<'_> {
    fn transact(&mut self, id: Option<u64>, op: &str, request: &Value) -> Result<Value, Value> {
        if let Some(id) = id {
            // A store action of the run: the resource decides it on the snapshot.
            let (core, r) = self.parts().map_err(|e| json!({ "code": e }))?;
            let cell = cell_of(&request["cell"]);
            let now = request["nowMs"].as_i64().unwrap_or_default();
            return match core.run_apply(r, id, &cell, now).map_err(|e| e.to_json())? {
                Ok(changes) => Ok(json!({ "changes": changes.iter().map(change_json).collect::<Vec<_>>() })),
                Err(refused) => Err(error_object(&refused)),
            };
        }
        let typed = crate::typed_stores::answer(self.core, op, &request.to_string())
            .or_else(|| crate::typed_commands::answer(self.core, op, &request.to_string()));
        if let Some(answer) = typed {
            let answer =
                answer.and_then(|text| serde_json::from_str(&text).map_err(|e| HostError::internal(e.to_string())));
            return answer.map_err(|e| e.to_json());
        }
        Err(HostError::internal(format!("the component has no function for `{op}`")).to_json())
    }
    fn create(&mut self, config: &Value) -> Result<String, String> {
        let config: baton_core::run::RunConfig = serde_json::from_value(config.clone()).map_err(|_| "INTERNAL")?;
        let run = self.core.run_create(&convert::run_config_out(config)).map_err(code)?;
        let holder = self.core.run_holder(&run).map_err(code)?;
        self.own = self.core.run_cell(&run).map_err(code)?;
        self.close().map_err(code)?;
        self.run = Some(run);
        Ok(holder)
    }
    fn start(&mut self, now: u64) -> Result<(), String> {
        let (core, r) = self.parts()?;
        core.run_start(r, now).map_err(code)
    }
    fn work_ended(&mut self, end: &Value, now: u64) -> Result<(), String> {
        let end: baton_core::run::WorkEnd = serde_json::from_value(end.clone()).map_err(|_| "INTERNAL")?;
        let (core, r) = self.parts()?;
        core.run_work_ended(r, &convert::work_end_out(end), now).map_err(code)
    }
    fn signal(&mut self, signal: &str, now: u64) -> Result<(), String> {
        let signal = match signal {
            "interrupt" => wr::HostSignal::Interrupt,
            "terminate" => wr::HostSignal::Terminate,
            _ => return Err("INTERNAL".into()),
        };
        let (core, r) = self.parts()?;
        core.run_signal(r, signal, now).map_err(code)
    }
    fn timeout(&mut self, now: u64) -> Result<(), String> {
        let (core, r) = self.parts()?;
        core.run_timeout(r, now).map_err(code)
    }
    fn store_result(&mut self, id: u64, outcome: &Value, now: u64) -> Result<(), String> {
        let failed =
            outcome.get("error").and_then(Value::as_object).map(|e| convert::error(CoreError::from_json(e.clone())));
        let (core, r) = self.parts()?;
        core.run_store_outcome(r, id, failed.as_ref().map_or(Ok(()), Err), now).map_err(code)
    }
    fn poll_action(&mut self) -> Result<Option<Value>, String> {
        let (core, r) = self.parts()?;
        let action = core.run_poll_action(r).map_err(code)?;
        action.map(|a| self.spelled(a)).transpose()
    }
    fn poll_timeout(&mut self) -> Result<Option<u64>, String> {
        let (core, r) = self.parts()?;
        core.run_poll_timeout(r).map_err(code)
    }
}
