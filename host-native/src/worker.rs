//! The store worker of a run: store requests run one at a time on a dedicated thread with its own instance
//! of the component, so a renewal and a receipt write of one run never interleave in the store (they queue
//! in order), each ended by its deadline.

use crate::engine::CoreComponent;
use crate::error::HostError;
use crate::store::Store;
use serde_json::{Value, json};
use std::time::Instant;
use tokio::sync::mpsc;

/// Store results as the worker sends them: request id and `{"ok"|"error": ...}`.
pub(crate) type Results = mpsc::UnboundedReceiver<(u64, Value)>;

/// One store transaction (or read) for the worker.
pub(crate) struct Job {
    pub(crate) id: u64,
    pub(crate) op: String,
    pub(crate) request: Value,
    pub(crate) env: String,
    pub(crate) scope: String,
    pub(crate) read: bool,
    /// When the store must have given up (the machine's `deadlineMs`): what still runs then is killed.
    pub(crate) deadline: Option<Instant>,
}

/// Starts the worker thread over `store`: jobs go in, results come out in the same order.
pub(crate) fn spawn(store: Store) -> Result<(std::sync::mpsc::Sender<Job>, Results), HostError> {
    let (jobs, job_rx) = std::sync::mpsc::channel::<Job>();
    let (result_tx, results) = mpsc::unbounded_channel();
    std::thread::Builder::new()
        .name("baton-store".into())
        .spawn(move || {
            let mut worker_core = CoreComponent::load();
            for job in job_rx {
                let outcome = match worker_core.as_mut() {
                    Ok(core) => transact(core, &store, &job),
                    Err(e) => json!({ "error": e.to_json() }),
                };
                if result_tx.send((job.id, outcome)).is_err() {
                    break;
                }
            }
        })
        .map_err(|e| HostError::io("cannot start the store worker", &e))?;
    Ok((jobs, results))
}

/// Runs one store request as a cell transaction (or a read) and returns `{"ok": answer}` or `{"error": ...}`.
fn transact(core: &mut CoreComponent, store: &Store, job: &Job) -> Value {
    let f = |core: &mut CoreComponent, cell: Value, now: i64| {
        if job.op == "cell-file" {
            // A read-only look at another cell (the run machine reads its predecessor's receipt): typed.
            let file = job.request.get("file").and_then(Value::as_str).unwrap_or_default();
            return core.cell_file(&crate::engine::cell_of(&cell), file).map(|text| json!({ "text": text }));
        }
        let mut request = job.request.clone();
        request["cell"] = cell;
        request["nowMs"] = now.into();
        core.invoke(&job.op, &request)
    };
    let result = if job.read {
        store.read(core, &job.env, &job.scope, f)
    } else {
        store.transact_until(core, &job.env, &job.scope, job.deadline, f)
    };
    match result {
        Ok(answer) => json!({ "ok": answer }),
        Err(e) => json!({ "error": e.to_json() }),
    }
}
