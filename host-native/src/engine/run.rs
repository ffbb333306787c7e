//! The run machine inside the component (the WIT `run` resource): thin typed calls for the run driver.

use super::{CoreComponent, from_wit, wasm_error};
use crate::error::HostError;
use serde_json::Value;
use wasmtime::component::ResourceAny;

/// A run machine living inside the component. Drop it with [`CoreComponent::run_drop`].
#[derive(Debug)]
pub struct RunRef(ResourceAny);

impl CoreComponent {
    /// Creates a run machine from its configuration (`baton_core::run::RunConfig` as JSON). Refuses with
    /// `ENV_NOT_APPROVED`, `USAGE` or `INTERNAL` before anything is locked.
    pub fn run_create(&mut self, config: &Value) -> Result<RunRef, HostError> {
        let d = self.core.baton_core_decisions();
        let r = d.run().call_create(&mut self.store, &config.to_string()).map_err(wasm_error)?.map_err(from_wit)?;
        Ok(RunRef(r))
    }

    /// The holder name of the run's lock.
    pub fn run_holder(&mut self, r: &RunRef) -> Result<String, HostError> {
        self.core.baton_core_decisions().run().call_holder(&mut self.store, r.0).map_err(wasm_error)
    }

    /// The run's own cell: environment and scope.
    pub fn run_cell(&mut self, r: &RunRef) -> Result<(String, String), HostError> {
        let d = self.core.baton_core_decisions();
        let env = d.run().call_env(&mut self.store, r.0).map_err(wasm_error)?;
        let scope = d.run().call_scope(&mut self.store, r.0).map_err(wasm_error)?;
        Ok((env, scope))
    }

    /// Starts the run.
    pub fn run_start(&mut self, r: &RunRef, now: u64) -> Result<(), HostError> {
        let d = self.core.baton_core_decisions();
        d.run().call_start(&mut self.store, r.0, now).map_err(wasm_error)?.map_err(from_wit)
    }

    /// Reports how the work ended (`baton_core::run::WorkEnd` as JSON).
    pub fn run_work_ended(&mut self, r: &RunRef, end: &Value, now: u64) -> Result<(), HostError> {
        let d = self.core.baton_core_decisions();
        d.run().call_work_ended(&mut self.store, r.0, &end.to_string(), now).map_err(wasm_error)?.map_err(from_wit)
    }

    /// Reports a cancel signal (`interrupt`, `terminate`).
    pub fn run_signal(&mut self, r: &RunRef, signal: &str, now: u64) -> Result<(), HostError> {
        let d = self.core.baton_core_decisions();
        d.run().call_signal(&mut self.store, r.0, signal, now).map_err(wasm_error)?.map_err(from_wit)
    }

    /// Manual mode: the final receipt and the handover, keeping the lease until [`Self::run_release`].
    pub fn run_finish(&mut self, r: &RunRef, succeeded: bool, now: u64) -> Result<(), HostError> {
        let d = self.core.baton_core_decisions();
        d.run().call_finish(&mut self.store, r.0, succeeded, now).map_err(wasm_error)?.map_err(from_wit)
    }

    /// Ends the run early, or after [`Self::run_finish`].
    pub fn run_release(&mut self, r: &RunRef, now: u64) -> Result<(), HostError> {
        self.core.baton_core_decisions().run().call_release(&mut self.store, r.0, now).map_err(wasm_error)
    }

    /// The epoch to fence writes with while the lease is safely held.
    pub fn run_fencing_token(&mut self, r: &RunRef, now: u64) -> Result<Option<u64>, HostError> {
        self.core.baton_core_decisions().run().call_fencing_token(&mut self.store, r.0, now).map_err(wasm_error)
    }

    /// Wakes the machine.
    pub fn run_timeout(&mut self, r: &RunRef, now: u64) -> Result<(), HostError> {
        self.core.baton_core_decisions().run().call_handle_timeout(&mut self.store, r.0, now).map_err(wasm_error)
    }

    /// Reports the outcome of store request `id`: `{"ok": answer}` or `{"error": {...}}`.
    pub fn run_store_result(&mut self, r: &RunRef, id: u64, outcome: &Value, now: u64) -> Result<(), HostError> {
        let d = self.core.baton_core_decisions();
        d.run()
            .call_handle_store_result(&mut self.store, r.0, id, &outcome.to_string(), now)
            .map_err(wasm_error)?
            .map_err(from_wit)
    }

    /// The next action, parsed.
    pub fn run_poll_action(&mut self, r: &RunRef) -> Result<Option<Value>, HostError> {
        let action =
            self.core.baton_core_decisions().run().call_poll_action(&mut self.store, r.0).map_err(wasm_error)?;
        action
            .map(|a| {
                serde_json::from_str(&a).map_err(|e| HostError::internal(format!("invalid action from the core: {e}")))
            })
            .transpose()
    }

    /// When to wake the machine next.
    pub fn run_poll_timeout(&mut self, r: &RunRef) -> Result<Option<u64>, HostError> {
        self.core.baton_core_decisions().run().call_poll_timeout(&mut self.store, r.0).map_err(wasm_error)
    }

    /// Frees the machine inside the component.
    pub fn run_drop(&mut self, r: RunRef) -> Result<(), HostError> {
        r.0.resource_drop(&mut self.store).map_err(wasm_error)
    }
}
