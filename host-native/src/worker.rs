//! The store worker of a run: store transactions run one at a time on a dedicated thread with its own
//! instance of the component, so a renewal and a receipt write of one run never interleave in the store
//! (they queue in order), each ended by its deadline.
//!
//! The worker only loads and commits: the decision on each snapshot is the run machine's (`apply`), which
//! lives on the run's loop, so the worker asks the loop for it ([`Apply`]) and waits for the answer.

use crate::engine::{CoreComponent, cell_of, change_json, wit};
use crate::error::HostError;
use crate::store::Store;
use serde_json::{Value, json};
use std::time::Instant;
use tokio::sync::mpsc;

/// Store outcomes as the worker sends them: the action's id and how it ended.
pub(crate) type Results = mpsc::UnboundedReceiver<(u64, Result<(), HostError>)>;

/// The run machine's decisions the worker asks the loop for.
pub(crate) type Applies = mpsc::UnboundedReceiver<Apply>;

/// What the loop answers an [`Apply`] with: the changes to commit, or the machine's refusal.
pub(crate) type Decision = Result<Result<Vec<wit::types::Change>, wit::types::Error>, HostError>;

/// "Decide store action `id` on this snapshot": the loop calls the machine's `apply` and answers on `reply`.
pub(crate) struct Apply {
    pub(crate) id: u64,
    pub(crate) cell: wit::types::Cell,
    /// The wall clock the store read for this attempt.
    pub(crate) now_ms: i64,
    pub(crate) reply: std::sync::mpsc::SyncSender<Decision>,
}

/// One store transaction (or read) for the worker.
pub(crate) struct Job {
    pub(crate) id: u64,
    pub(crate) env: String,
    pub(crate) scope: String,
    pub(crate) read: bool,
    /// When the store must have given up (the machine's `deadlineMs`): what still runs then is killed.
    pub(crate) deadline: Option<Instant>,
}

/// Starts the worker thread over `store`: jobs go in, decisions are asked for and outcomes come out, in
/// the jobs' order.
pub(crate) fn spawn(store: Store) -> Result<(std::sync::mpsc::Sender<Job>, Applies, Results), HostError> {
    let (jobs, job_rx) = std::sync::mpsc::channel::<Job>();
    let (apply_tx, applies) = mpsc::unbounded_channel();
    let (result_tx, results) = mpsc::unbounded_channel();
    std::thread::Builder::new()
        .name("baton-store".into())
        .spawn(move || {
            let mut worker_core = CoreComponent::load();
            for job in job_rx {
                let outcome = match worker_core.as_mut() {
                    Ok(core) => transact(core, &store, &job, &apply_tx),
                    Err(e) => Err(e.clone()),
                };
                if result_tx.send((job.id, outcome)).is_err() {
                    break;
                }
            }
        })
        .map_err(|e| HostError::io("cannot start the store worker", &e))?;
    Ok((jobs, applies, results))
}

/// Runs one store action as a cell transaction (or a read), asking the loop for the decision on every
/// snapshot the store loads.
fn transact(
    core: &mut CoreComponent,
    store: &Store,
    job: &Job,
    applies: &mpsc::UnboundedSender<Apply>,
) -> Result<(), HostError> {
    let decide = |_: &mut CoreComponent, cell: Value, now_ms: i64| -> Result<Value, HostError> {
        let (reply, answer) = std::sync::mpsc::sync_channel(1);
        let gone = || HostError::internal("the run's loop stopped while its store worker waited for a decision");
        applies.send(Apply { id: job.id, cell: cell_of(&cell), now_ms, reply }).map_err(|_| gone())?;
        match answer.recv().map_err(|_| gone())?? {
            Ok(changes) => Ok(json!({ "changes": changes.iter().map(change_json).collect::<Vec<_>>() })),
            Err(refused) => Err(crate::engine::from_wit(refused)),
        }
    };
    if job.read {
        store.read(core, &job.env, &job.scope, decide).map(drop)
    } else {
        store.transact_until(core, &job.env, &job.scope, job.deadline, decide).map(drop)
    }
}
