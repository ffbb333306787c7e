//! The host loop of a run (`baton_core::run`): carries out the run machine's actions, nothing else. Shared
//! by `baton run`, `baton destroy`, `baton lock-object` and `baton lock acquire`.
//!
//! Store requests run on the store worker (`worker`), so a slow store never blocks the loop: timers, signals
//! and the command's exit are still seen.

use crate::engine::{CoreComponent, RunRef};
use crate::error::HostError;
use crate::output::note;
use crate::store::Store;
use crate::work::{Running, Work};
use crate::worker::{Job, Results};
use serde_json::{Map, Value, json};
use std::time::Instant;
use tokio::signal::unix::{SignalKind, signal};

/// The run's verdict as the machine decided it.
pub struct Verdict {
    /// The exit code the machine chose; `None` when the loop itself failed (the error's code decides).
    pub exit: Option<u8>,
    /// The error, when the run failed.
    pub error: Option<HostError>,
    /// The run's facts (the envelope's data when it succeeded).
    pub fields: Map<String, Value>,
}

/// Runs the machine made from `config` over `store` until it is done, carrying out `work` when it says so
/// (none for a plain acquire). Returns the core and the verdict; any failure of the loop itself kills the
/// work first and is reported as the verdict's error.
pub async fn drive(
    mut core: CoreComponent,
    store: Store,
    config: &Value,
    work: Option<Work>,
) -> (CoreComponent, Verdict) {
    // The store's budget bounds every store request of the run (`storeBudgetMs`).
    let mut config = config.clone();
    if let Some(budget) = store.budget_ms() {
        config["storeBudgetMs"] = budget.into();
    }
    let run = match core.run_create(&config) {
        Ok(run) => run,
        Err(e) => return (core, Verdict { exit: None, error: Some(e), fields: Map::new() }),
    };
    let mut lp = Loop { core, run: Some(run), started: Instant::now(), running: None, work, jobs: None };
    let verdict = match lp.go(store).await {
        Ok(v) => v,
        Err(e) => {
            if let Some(r) = &lp.running {
                r.signal("kill");
            }
            Verdict { exit: None, error: Some(e), fields: Map::new() }
        }
    };
    if let Some(run) = lp.run.take() {
        let _ = lp.core.run_drop(run);
    }
    (lp.core, verdict)
}

struct Loop {
    core: CoreComponent,
    run: Option<RunRef>,
    started: Instant,
    running: Option<Running>,
    work: Option<Work>,
    jobs: Option<std::sync::mpsc::Sender<Job>>,
}

impl Loop {
    fn now(&self) -> u64 {
        u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// Calls the run machine.
    fn call<T>(&mut self, f: impl FnOnce(&mut CoreComponent, &RunRef) -> Result<T, HostError>) -> Result<T, HostError> {
        let run = self.run.as_ref().ok_or_else(|| HostError::internal("the run machine is gone"))?;
        f(&mut self.core, run)
    }

    async fn go(&mut self, store: Store) -> Result<Verdict, HostError> {
        let (Ok(mut sigint), Ok(mut sigterm)) = (signal(SignalKind::interrupt()), signal(SignalKind::terminate()))
        else {
            return Err(HostError::internal("cannot install signal handlers"));
        };
        let (mut results, env, scope) = self.start_worker(store)?;
        let now = self.now();
        self.call(|core, run| core.run_start(run, now))?;
        loop {
            if let Some(verdict) = self.drain(&env, &scope).await? {
                return Ok(verdict);
            }
            let started = self.started;
            let wake = self.call(|core, run| core.run_poll_timeout(run))?;
            let wake = wake.map(|at| started + std::time::Duration::from_millis(at));
            let exited = async {
                match self.running.as_mut() {
                    Some(r) => r.wait().await,
                    None => std::future::pending().await,
                }
            };
            enum Wake {
                Exited(Value),
                Result(u64, Value),
                Timeout,
                Signal(&'static str),
            }
            let woke = tokio::select! {
                end = exited => Wake::Exited(end),
                Some((id, outcome)) = results.recv() => Wake::Result(id, outcome),
                () = sleep_until(wake) => Wake::Timeout,
                _ = sigint.recv() => Wake::Signal("interrupt"),
                _ = sigterm.recv() => Wake::Signal("terminate"),
            };
            let now = self.now();
            match woke {
                Wake::Exited(end) => {
                    self.running = None;
                    self.call(|core, run| core.run_work_ended(run, &end, now))?;
                }
                Wake::Result(id, outcome) => self.call(|core, run| core.run_store_result(run, id, &outcome, now))?,
                Wake::Timeout => self.call(|core, run| core.run_timeout(run, now))?,
                Wake::Signal(sig) => self.call(|core, run| core.run_signal(run, sig, now))?,
            }
        }
    }

    /// Carries out every pending action; the verdict once the machine is done.
    async fn drain(&mut self, env: &str, scope: &str) -> Result<Option<Verdict>, HostError> {
        loop {
            let Some(action) = self.call(|core, run| core.run_poll_action(run))? else { return Ok(None) };
            match action["type"].as_str() {
                Some(kind @ ("store" | "read")) => {
                    let cell = &action["cell"];
                    let field = |k: &str, d: &str| cell[k].as_str().unwrap_or(d).to_owned();
                    let job = Job {
                        id: action["id"].as_u64().unwrap_or_default(),
                        op: action["op"].as_str().unwrap_or_default().to_owned(),
                        request: action["request"].clone(),
                        env: field("env", env),
                        scope: field("scope", scope),
                        read: kind == "read",
                        deadline: action["deadlineMs"]
                            .as_u64()
                            .map(|at| self.started + std::time::Duration::from_millis(at)),
                    };
                    let jobs = self.jobs.as_ref().ok_or_else(|| HostError::internal("the store worker stopped"))?;
                    jobs.send(job).map_err(|_| HostError::internal("the store worker stopped"))?;
                }
                Some("start-work") => self.start_work(&action).await?,
                Some("signal") => {
                    if let Some(r) = &self.running {
                        r.signal(action["signal"].as_str().unwrap_or("kill"));
                    }
                }
                Some("note" | "warning") => note(action["text"].as_str().unwrap_or_default()),
                Some("done") => return Ok(Some(verdict_of(&action["verdict"]))),
                _ => {} // lease events and `finished` are for hosts that report them
            }
        }
    }

    async fn start_work(&mut self, action: &Value) -> Result<(), HostError> {
        let env = serde_json::from_value(action["env"].clone()).unwrap_or_default();
        let label = action["label"].as_str().unwrap_or_default();
        let epoch = action["epoch"].as_u64().unwrap_or_default();
        let delete = action.get("delete");
        let started = match &self.work {
            Some(work) => work.start(&env, delete, label, epoch).await,
            None => Err(HostError::internal("the run machine started work where there is none")),
        };
        match started {
            Ok(r) => self.running = Some(r),
            Err(e) => {
                let now = self.now();
                let end = json!({ "kind": "not-started", "message": e.message });
                self.call(|core, run| core.run_work_ended(run, &end, now))?;
            }
        }
        Ok(())
    }

    /// Starts the store worker; returns its results channel and the run's own cell.
    fn start_worker(&mut self, store: Store) -> Result<(Results, String, String), HostError> {
        let (jobs, results) = crate::worker::spawn(store)?;
        self.jobs = Some(jobs);
        let (env, scope) = self.call(|core, run| core.run_cell(run))?;
        Ok((results, env, scope))
    }
}

fn verdict_of(v: &Value) -> Verdict {
    let error = v["error"].as_object().map(|e| HostError::from_json(e.clone()));
    let fields = v["fields"].as_object().cloned().unwrap_or_default();
    Verdict { exit: Some(v["exit"].as_u64().and_then(|e| u8::try_from(e).ok()).unwrap_or(1)), error, fields }
}

/// Sleeps until `at`, or forever without one.
pub(crate) async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(tokio::time::Instant::from_std(at)).await,
        None => std::future::pending().await,
    }
}
