//! The host loop of a run (`baton_core::run`): carries out the run machine's actions, nothing else. Shared
//! by `baton run`, `baton destroy`, `baton lock-object` and `baton lock acquire`.
//!
//! Store requests run on the store worker (`worker`), so a slow store never blocks the loop: timers, signals
//! and the command's exit are still seen. The worker asks the loop for the machine's decision on each
//! snapshot it loads (`apply`); the loop never names a core operation.

use crate::engine::wit::runs as wr;
use crate::engine::{CoreComponent, RunRef, from_wit, wit_error};
use crate::error::HostError;
use crate::output::note;
use crate::store::Store;
use crate::work::{Running, Work};
use crate::worker::{Applies, Apply, Job, Results};
use serde_json::{Map, Value};
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
    mut config: wr::RunConfig,
    work: Option<Work>,
) -> (CoreComponent, Verdict) {
    // The store's budget bounds every store request of the run.
    if let Some(budget) = store.budget_ms() {
        config.store_budget_ms = Some(budget);
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
                r.signal(wr::WorkSignal::Kill);
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
        let (mut applies, mut results) = self.start_worker(store)?;
        let now = self.now();
        self.call(|core, run| core.run_start(run, now))?;
        loop {
            if let Some(verdict) = self.drain().await? {
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
                Exited(wr::WorkEnd),
                Apply(Apply),
                Result(u64, Result<(), HostError>),
                Timeout,
                Signal(wr::HostSignal),
            }
            let woke = tokio::select! {
                end = exited => Wake::Exited(end),
                Some(apply) = applies.recv() => Wake::Apply(apply),
                Some((id, outcome)) = results.recv() => Wake::Result(id, outcome),
                () = sleep_until(wake) => Wake::Timeout,
                _ = sigint.recv() => Wake::Signal(wr::HostSignal::Interrupt),
                _ = sigterm.recv() => Wake::Signal(wr::HostSignal::Terminate),
            };
            let now = self.now();
            match woke {
                Wake::Exited(end) => {
                    self.running = None;
                    self.call(|core, run| core.run_work_ended(run, &end, now))?;
                }
                Wake::Apply(Apply { id, cell, now_ms, reply }) => {
                    // The decision is the machine's; a failure of the call itself also ends the loop.
                    let decided = self.call(|core, run| core.run_apply(run, id, &cell, now_ms));
                    let failed = decided.as_ref().err().cloned();
                    let _ = reply.send(decided);
                    if let Some(e) = failed {
                        return Err(e);
                    }
                }
                Wake::Result(id, outcome) => {
                    let failed = outcome.err().map(|e| wit_error(&e));
                    self.call(|core, run| core.run_store_outcome(run, id, failed.as_ref().map_or(Ok(()), Err), now))?;
                }
                Wake::Timeout => self.call(|core, run| core.run_timeout(run, now))?,
                Wake::Signal(sig) => self.call(|core, run| core.run_signal(run, sig, now))?,
            }
        }
    }

    /// Carries out every pending action; the verdict once the machine is done.
    async fn drain(&mut self) -> Result<Option<Verdict>, HostError> {
        loop {
            let Some(action) = self.call(|core, run| core.run_poll_action(run))? else { return Ok(None) };
            match action {
                wr::RunAction::Store(a) => {
                    let job = Job {
                        id: a.id,
                        env: a.env,
                        scope: a.scope,
                        read: a.read,
                        deadline: Some(self.started + std::time::Duration::from_millis(a.deadline_ms)),
                    };
                    let jobs = self.jobs.as_ref().ok_or_else(|| HostError::internal("the store worker stopped"))?;
                    jobs.send(job).map_err(|_| HostError::internal("the store worker stopped"))?;
                }
                wr::RunAction::StartWork(w) => self.start_work(w).await?,
                wr::RunAction::Signal(signal) => {
                    if let Some(r) = &self.running {
                        r.signal(signal);
                    }
                }
                wr::RunAction::Note(text) | wr::RunAction::Warning(text) => note(text),
                wr::RunAction::Done(verdict) => return Ok(Some(verdict_of(verdict))),
                // Lease events and `finished` are for hosts that report them.
                wr::RunAction::Lease(_) | wr::RunAction::Finished(_) => {}
            }
        }
    }

    async fn start_work(&mut self, w: wr::StartWork) -> Result<(), HostError> {
        let env = w.env.into_iter().collect();
        let delete = w.delete.map(|entries| {
            Value::Array(entries.iter().map(|e| serde_json::from_str(e).unwrap_or(Value::Null)).collect())
        });
        let started = match &self.work {
            Some(work) => work.start(&env, delete.as_ref(), &w.label, w.epoch).await,
            None => Err(HostError::internal("the run machine started work where there is none")),
        };
        match started {
            Ok(r) => self.running = Some(r),
            Err(e) => {
                let now = self.now();
                let end = wr::WorkEnd::NotStarted(e.message);
                self.call(|core, run| core.run_work_ended(run, &end, now))?;
            }
        }
        Ok(())
    }

    /// Starts the store worker; returns its channels of decisions asked for and of outcomes.
    fn start_worker(&mut self, store: Store) -> Result<(Applies, Results), HostError> {
        let (jobs, applies, results) = crate::worker::spawn(store)?;
        self.jobs = Some(jobs);
        Ok((applies, results))
    }
}

fn verdict_of(v: wr::Verdict) -> Verdict {
    let fields = match serde_json::from_str(&v.fields) {
        Ok(Value::Object(fields)) => fields,
        _ => Map::new(),
    };
    Verdict { exit: Some(v.exit), error: v.error.map(from_wit), fields }
}

/// Sleeps until `at`, or forever without one.
pub(crate) async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(tokio::time::Instant::from_std(at)).await,
        None => std::future::pending().await,
    }
}
