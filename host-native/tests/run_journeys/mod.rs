//! The component's `run` resource for the run journeys (`core/tests/runner/journey.rs` drives it), with the
//! component's operations for the journey's store.

use crate::runner::journey::RunApi;
use baton_native::engine::{CoreComponent, RunRef};
use baton_native::error::HostError;
use serde_json::Value;

/// The run machine of a journey inside the component. Drop it with [`ComponentRun::close`].
pub(crate) struct ComponentRun<'a> {
    pub(crate) core: &'a mut CoreComponent,
    run: Option<RunRef>,
}

fn code(e: HostError) -> String {
    e.code
}

impl<'a> ComponentRun<'a> {
    pub(crate) fn new(core: &'a mut CoreComponent) -> Self {
        Self { core, run: None }
    }

    fn parts(&mut self) -> Result<(&mut CoreComponent, &RunRef), String> {
        let run = self.run.as_ref().ok_or_else(|| "INTERNAL".to_owned())?;
        Ok((self.core, run))
    }

    /// Frees the journey's run inside the component.
    pub(crate) fn close(&mut self) -> Result<(), HostError> {
        self.run.take().map_or(Ok(()), |r| self.core.run_drop(r))
    }
}

impl RunApi for ComponentRun<'_> {
    fn transact(&mut self, op: &str, request: &Value) -> Result<Value, Value> {
        let typed = crate::typed_stores::answer(self.core, op, &request.to_string())
            .or_else(|| crate::typed_commands::answer(self.core, op, &request.to_string()));
        if let Some(answer) = typed {
            let answer =
                answer.and_then(|text| serde_json::from_str(&text).map_err(|e| HostError::internal(e.to_string())));
            return answer.map_err(|e| e.to_json());
        }
        self.core.invoke(op, request).map_err(|e| e.to_json())
    }
    fn create(&mut self, config: &Value) -> Result<String, String> {
        let run = self.core.run_create(config).map_err(code)?;
        let holder = self.core.run_holder(&run).map_err(code)?;
        self.close().map_err(code)?;
        self.run = Some(run);
        Ok(holder)
    }
    fn start(&mut self, now: u64) -> Result<(), String> {
        let (core, r) = self.parts()?;
        core.run_start(r, now).map_err(code)
    }
    fn work_ended(&mut self, end: &Value, now: u64) -> Result<(), String> {
        let (core, r) = self.parts()?;
        core.run_work_ended(r, end, now).map_err(code)
    }
    fn signal(&mut self, signal: &str, now: u64) -> Result<(), String> {
        let (core, r) = self.parts()?;
        core.run_signal(r, signal, now).map_err(code)
    }
    fn timeout(&mut self, now: u64) -> Result<(), String> {
        let (core, r) = self.parts()?;
        core.run_timeout(r, now).map_err(code)
    }
    fn store_result(&mut self, id: u64, outcome: &Value, now: u64) -> Result<(), String> {
        let (core, r) = self.parts()?;
        core.run_store_result(r, id, outcome, now).map_err(code)
    }
    fn poll_action(&mut self) -> Result<Option<Value>, String> {
        let (core, r) = self.parts()?;
        core.run_poll_action(r).map_err(code)
    }
    fn poll_timeout(&mut self) -> Result<Option<u64>, String> {
        let (core, r) = self.parts()?;
        core.run_poll_timeout(r).map_err(code)
    }
}
