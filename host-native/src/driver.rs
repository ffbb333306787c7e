//! Drives a core lease machine (inside the component) against a store: the host loop of
//! `baton_core::lease`, shared by `baton run` and `baton lock acquire --wait`.
//!
//! Store requests run one at a time on a dedicated worker thread that owns its own instance of the
//! component, so a slow store never blocks the loop, and a renewal and a fenced write of this process never
//! interleave in the store (they queue on the worker, in order).

use crate::engine::{CoreComponent, LeaseRef};
use crate::error::HostError;
use crate::store::Store;
use serde_json::{Value, json};
use std::time::Instant;
use tokio::sync::mpsc;

/// One store transaction for the worker: a lease machine request (answered on the results channel) or a
/// host call on any cell (answered on `reply`).
struct Job {
    id: u64,
    op: String,
    request: Value,
    cell: Option<(String, String)>,
    reply: Option<tokio::sync::oneshot::Sender<Value>>,
    /// When the store must have given up (the machine's `deadlineMs`, or its `store_deadline` for a host
    /// call): a request queued behind a slow one has less time, never more.
    deadline: Option<Instant>,
}

/// The loop state of one lease. Every method that calls the machine returns the events it emitted, after
/// handing its store requests to the worker.
pub struct Driver {
    core: CoreComponent,
    lease: LeaseRef,
    started: Instant,
    jobs: std::sync::mpsc::Sender<Job>,
    results: mpsc::UnboundedReceiver<(u64, Value)>,
}

impl Driver {
    /// Creates the machine from `config` and starts the store worker for the cell `env/scope` of `store`.
    /// On failure (e.g. `USAGE` for inconsistent timing) the core is handed back with the error.
    #[allow(clippy::result_large_err)] // the error hands the core back; it is built once per process
    /// The store's budget bounds every store request of the lease (`storeBudgetMs`).
    pub fn start(mut core: CoreComponent, store: Store, config: &Value) -> Result<Self, (CoreComponent, HostError)> {
        let mut config = config.clone();
        if let Some(budget) = store.budget_ms() {
            config["storeBudgetMs"] = budget.into();
        }
        let config = &config;
        let lease = match core.lease_create(config) {
            Ok(lease) => lease,
            Err(e) => return Err((core, e)),
        };
        let (env, scope) = (config["env"].as_str().unwrap_or_default(), config["scope"].as_str().unwrap_or_default());
        let (env, scope) = (env.to_owned(), scope.to_owned());
        let (jobs, job_rx) = std::sync::mpsc::channel::<Job>();
        let (result_tx, results) = mpsc::unbounded_channel();
        let spawned = std::thread::Builder::new().name("baton-store".into()).spawn(move || {
            let mut worker_core = CoreComponent::load();
            for mut job in job_rx {
                let (env, scope) = job.cell.take().unwrap_or_else(|| (env.clone(), scope.clone()));
                let outcome = match worker_core.as_mut() {
                    Ok(core) => transact(core, &store, &env, &scope, &job),
                    Err(e) => json!({ "error": e.to_json() }),
                };
                // A host call's caller may have gone away; a machine result must be delivered.
                match job.reply.take() {
                    Some(reply) => drop(reply.send(outcome)),
                    None => {
                        if result_tx.send((job.id, outcome)).is_err() {
                            break;
                        }
                    }
                }
            }
        });
        if let Err(e) = spawned {
            return Err((core, HostError::io("cannot start the store worker", &e)));
        }
        Ok(Self { core, lease, started: Instant::now(), jobs, results })
    }

    /// Milliseconds on the monotonic clock since the driver started.
    pub fn now(&self) -> u64 {
        u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// Converts a machine time into a tokio deadline.
    pub fn instant(&self, at: u64) -> tokio::time::Instant {
        tokio::time::Instant::from_std(self.started + std::time::Duration::from_millis(at))
    }

    /// Starts acquiring.
    pub fn acquire(&mut self) -> Result<Vec<Value>, HostError> {
        let now = self.now();
        self.core.lease_acquire(&self.lease, now)?;
        self.drain()
    }

    /// Ends the lease (release, or cancel a wait).
    pub fn release(&mut self) -> Result<Vec<Value>, HostError> {
        let now = self.now();
        self.core.lease_release(&self.lease, now)?;
        self.drain()
    }

    /// Wakes the machine.
    pub fn on_timeout(&mut self) -> Result<Vec<Value>, HostError> {
        let now = self.now();
        self.core.lease_timeout(&self.lease, now)?;
        self.drain()
    }

    /// Feeds a store result.
    pub fn on_result(&mut self, id: u64, outcome: &Value) -> Result<Vec<Value>, HostError> {
        let now = self.now();
        self.core.lease_store_result(&self.lease, id, outcome, now)?;
        self.drain()
    }

    /// The next store result; `None` when the worker is gone.
    pub async fn next_result(&mut self) -> Option<(u64, Value)> {
        self.results.recv().await
    }

    /// When the machine wants to be woken.
    pub fn wake_at(&mut self) -> Result<Option<tokio::time::Instant>, HostError> {
        Ok(self.core.lease_poll_timeout(&self.lease)?.map(|at| self.instant(at)))
    }

    /// Whether the lease is over.
    pub fn is_finished(&mut self) -> Result<bool, HostError> {
        self.core.lease_is_finished(&self.lease)
    }

    /// The fencing token while the lease is safely held.
    pub fn fencing_token(&mut self) -> Result<Option<u64>, HostError> {
        let now = self.now();
        self.core.lease_fencing_token(&self.lease, now)
    }

    /// Runs core operation `op` as one transaction on the cell `env/scope` (the lease's cell when `None`)
    /// on the store worker, in order with the lease's own requests. Answers the core's answer or its error.
    /// Like the lease's own requests, it ends by the lease's `store_deadline`.
    pub async fn call(&mut self, cell: Option<(&str, &str)>, op: &str, request: Value) -> Result<Value, HostError> {
        let (reply, answer) = tokio::sync::oneshot::channel();
        let now = self.now();
        let deadline = self.core.lease_store_deadline(&self.lease, now)?;
        let job = Job {
            id: 0,
            op: op.to_owned(),
            request,
            cell: cell.map(|(e, s)| (e.to_owned(), s.to_owned())),
            reply: Some(reply),
            deadline: Some(self.started + std::time::Duration::from_millis(deadline)),
        };
        self.jobs.send(job).map_err(|_| HostError::internal("the store worker stopped"))?;
        let outcome = answer.await.map_err(|_| HostError::internal("the store worker stopped"))?;
        match outcome.get("error").and_then(Value::as_object) {
            Some(err) => Err(HostError::from_json(err.clone())),
            None => Ok(outcome["ok"].clone()),
        }
    }

    /// The core instance of the loop (for rendering).
    pub fn core(&mut self) -> &mut CoreComponent {
        &mut self.core
    }

    /// Ends the driver and gives its core back (the machine is dropped; a held lock stays in the store).
    pub fn into_core(mut self) -> CoreComponent {
        let _ = self.core.lease_drop(self.lease);
        self.core
    }

    fn drain(&mut self) -> Result<Vec<Value>, HostError> {
        let mut events = Vec::new();
        while let Some(action) = self.core.lease_poll_action(&self.lease)? {
            match action["type"].as_str() {
                Some("store") => {
                    let job = Job {
                        id: action["id"].as_u64().unwrap_or_default(),
                        op: action["op"].as_str().unwrap_or_default().to_owned(),
                        request: action["request"].clone(),
                        cell: None,
                        reply: None,
                        deadline: action["deadlineMs"]
                            .as_u64()
                            .map(|at| self.started + std::time::Duration::from_millis(at)),
                    };
                    self.jobs.send(job).map_err(|_| HostError::internal("the store worker stopped"))?;
                }
                _ => events.push(action["event"].clone()),
            }
        }
        Ok(events)
    }
}

/// Runs one store request as a cell transaction and returns `{"ok": answer}` or `{"error": {...}}`.
fn transact(core: &mut CoreComponent, store: &Store, env: &str, scope: &str, job: &Job) -> Value {
    let result = store.transact_until(core, env, scope, job.deadline, |core, cell, now| {
        let mut request = job.request.clone();
        request["cell"] = cell;
        request["nowMs"] = now.into();
        core.invoke(&job.op, &request)
    });
    match result {
        Ok(answer) => json!({ "ok": answer }),
        Err(e) => json!({ "error": e.to_json() }),
    }
}
