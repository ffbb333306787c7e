//! The run machine inside the component (the WIT `runs.run` resource): thin typed calls for the run driver.

use super::bindings::exports::baton::core::runs as wr;
use super::{CoreComponent, WitError, from_wit, wasm_error, wit};
use crate::error::HostError;
use serde_json::Value;
use wasmtime::component::ResourceAny;

/// A run's configuration with nothing set but the job, the host's randomness and whether to wait.
pub fn run_config(job: wr::Job, random: String, wait: bool) -> wr::RunConfig {
    wr::RunConfig {
        job,
        context: None,
        object: None,
        holder: None,
        random,
        approved_by: None,
        ttl_ms: None,
        margin_ms: None,
        renew_every_ms: None,
        wait,
        wait_timeout_ms: None,
        poll_ms: None,
        store_budget_ms: None,
        cancel_grace_ms: None,
    }
}

/// The run context of a detected context (`stores.detect-context`'s answer, as the envelope shows it).
pub fn run_context(context: &Value) -> wr::RunContext {
    let text = |k: &str| context.get(k).and_then(Value::as_str).map(str::to_owned);
    wr::RunContext {
        env: text("env").unwrap_or_default(),
        scope: text("scope").unwrap_or_default(),
        branch: text("branch"),
        sha: text("sha"),
        pr: context.get("pr").and_then(Value::as_u64),
    }
}

/// A change the core decided, in the JSON spelling the stores commit (`{op: write, file, content}`,
/// `{op: delete, file}`).
pub fn change_json(change: &wit::types::Change) -> Value {
    match change {
        wit::types::Change::Write(f) => serde_json::json!({ "op": "write", "file": f.name, "content": f.content }),
        wit::types::Change::Delete(file) => serde_json::json!({ "op": "delete", "file": file }),
    }
}

/// A run machine living inside the component. Drop it with [`CoreComponent::run_drop`].
#[derive(Debug)]
pub struct RunRef(ResourceAny);

impl CoreComponent {
    /// Creates a run machine. Refuses with `ENV_NOT_APPROVED`, `USAGE` or `INTERNAL` before anything is
    /// locked.
    pub fn run_create(&mut self, config: &wr::RunConfig) -> Result<RunRef, HostError> {
        let r = self.core.baton_core_runs().run();
        r.call_create(&mut self.store, config).map_err(wasm_error)?.map_err(from_wit).map(RunRef)
    }

    /// The holder name of the run's lock.
    pub fn run_holder(&mut self, r: &RunRef) -> Result<String, HostError> {
        self.core.baton_core_runs().run().call_holder(&mut self.store, r.0).map_err(wasm_error)
    }

    /// The run's own cell: environment and scope.
    pub fn run_cell(&mut self, r: &RunRef) -> Result<(String, String), HostError> {
        let run = self.core.baton_core_runs().run();
        let env = run.call_env(&mut self.store, r.0).map_err(wasm_error)?;
        let scope = run.call_scope(&mut self.store, r.0).map_err(wasm_error)?;
        Ok((env, scope))
    }

    /// Starts the run.
    pub fn run_start(&mut self, r: &RunRef, now: u64) -> Result<(), HostError> {
        let run = self.core.baton_core_runs().run();
        run.call_start(&mut self.store, r.0, now).map_err(wasm_error)?.map_err(from_wit)
    }

    /// Reports how the work ended.
    pub fn run_work_ended(&mut self, r: &RunRef, end: &wr::WorkEnd, now: u64) -> Result<(), HostError> {
        let run = self.core.baton_core_runs().run();
        run.call_work_ended(&mut self.store, r.0, end, now).map_err(wasm_error)?.map_err(from_wit)
    }

    /// Reports a cancel signal.
    pub fn run_signal(&mut self, r: &RunRef, signal: wr::HostSignal, now: u64) -> Result<(), HostError> {
        self.core.baton_core_runs().run().call_signal(&mut self.store, r.0, signal, now).map_err(wasm_error)
    }

    /// Manual mode: the final receipt and the handover, keeping the lease until [`Self::run_release`].
    pub fn run_finish(&mut self, r: &RunRef, succeeded: bool, now: u64) -> Result<(), HostError> {
        let run = self.core.baton_core_runs().run();
        run.call_finish(&mut self.store, r.0, succeeded, now).map_err(wasm_error)?.map_err(from_wit)
    }

    /// Ends the run early, or after [`Self::run_finish`].
    pub fn run_release(&mut self, r: &RunRef, now: u64) -> Result<(), HostError> {
        self.core.baton_core_runs().run().call_release(&mut self.store, r.0, now).map_err(wasm_error)
    }

    /// The epoch to fence writes with while the lease is safely held.
    pub fn run_fencing_token(&mut self, r: &RunRef, now: u64) -> Result<Option<u64>, HostError> {
        self.core.baton_core_runs().run().call_fencing_token(&mut self.store, r.0, now).map_err(wasm_error)
    }

    /// Wakes the machine.
    pub fn run_timeout(&mut self, r: &RunRef, now: u64) -> Result<(), HostError> {
        self.core.baton_core_runs().run().call_handle_timeout(&mut self.store, r.0, now).map_err(wasm_error)
    }

    /// The changes store action `id` makes on `cell` at wall-clock `now_ms`, or its refusal (report that
    /// very error as the outcome).
    pub fn run_apply(
        &mut self,
        r: &RunRef,
        id: u64,
        cell: &wit::types::Cell,
        now_ms: i64,
    ) -> Result<Result<Vec<wit::types::Change>, WitError>, HostError> {
        self.core.baton_core_runs().run().call_apply(&mut self.store, r.0, id, cell, now_ms).map_err(wasm_error)
    }

    /// Reports how store action `id` ended.
    pub fn run_store_outcome(
        &mut self,
        r: &RunRef,
        id: u64,
        outcome: Result<(), &WitError>,
        now: u64,
    ) -> Result<(), HostError> {
        let run = self.core.baton_core_runs().run();
        run.call_handle_store_outcome(&mut self.store, r.0, id, outcome, now).map_err(wasm_error)?.map_err(from_wit)
    }

    /// The next action.
    pub fn run_poll_action(&mut self, r: &RunRef) -> Result<Option<wr::RunAction>, HostError> {
        self.core.baton_core_runs().run().call_poll_action(&mut self.store, r.0).map_err(wasm_error)
    }

    /// What store action `id` will decide (for logs and tests).
    pub fn run_describe(&mut self, r: &RunRef, id: u64) -> Result<Option<wr::Description>, HostError> {
        self.core.baton_core_runs().run().call_describe(&mut self.store, r.0, id).map_err(wasm_error)
    }

    /// When to wake the machine next.
    pub fn run_poll_timeout(&mut self, r: &RunRef) -> Result<Option<u64>, HostError> {
        self.core.baton_core_runs().run().call_poll_timeout(&mut self.store, r.0).map_err(wasm_error)
    }

    /// Frees the machine inside the component.
    pub fn run_drop(&mut self, r: RunRef) -> Result<(), HostError> {
        r.0.resource_drop(&mut self.store).map_err(wasm_error)
    }
}
