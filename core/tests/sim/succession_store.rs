//! The simulated store's transactions for the run machine's operations, called through their Rust functions
//! so that 100,000 schedules stay fast (the JSON layer is the scenario corpus's, and `api::invoke` serves
//! any other operation). Each request is read into a mirror of `api.rs`'s request with
//! `deny_unknown_fields` and without the `cell` and `nowMs` the store adds, so a field the machine starts
//! sending fails the schedule (host contract) instead of being dropped here; answers are the functions'
//! results as `api::invoke` serialises them.

use baton_core::cell::Cell;
use baton_core::ownership::{self, EntryOrIdentity, OtherScope, RunContext};
use baton_core::{CoreError, api, lock};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Acquire {
    holder: String,
    ttl_ms: u64,
    #[serde(default)]
    label: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Renew {
    holder: String,
    epoch: u64,
    ttl_ms: u64,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Release {
    holder: String,
    #[serde(default)]
    epoch: Option<u64>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Begin {
    holder: String,
    epoch: u64,
    context: RunContext,
    #[serde(default)]
    hash_key: String,
    #[serde(default)]
    lock_preempted: Option<String>,
    #[serde(default)]
    approved_by: Option<String>,
    #[serde(default)]
    destroy: bool,
    #[serde(default)]
    predecessor: Option<OtherScope>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Finish {
    holder: String,
    epoch: u64,
    succeeded: bool,
    #[serde(default)]
    cancelled: bool,
    #[serde(default)]
    sha: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Fenced {
    holder: String,
    epoch: u64,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Handover {
    holder: String,
    epoch: u64,
    successor: String,
    successor_ledger: Vec<EntryOrIdentity>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct File {
    file: String,
}

fn parse<T: DeserializeOwned>(op: &str, request: &Value) -> Result<T, CoreError> {
    T::deserialize(request).map_err(|e| CoreError::internal(format!("invalid request for `{op}`: {e}")))
}

fn answer<T: serde::Serialize>(result: Result<T, CoreError>) -> Result<Value, CoreError> {
    result.and_then(|a| serde_json::to_value(a).map_err(|e| CoreError::internal(format!("answer: {e}"))))
}

/// Runs `op` with `request` (the machine's, without `cell` and `nowMs`) on `cell` at wall time `now_ms`, as
/// one transaction: the answer (with its `changes`, not applied) or the refusal.
pub(crate) fn transact(cell: &Cell, op: &str, request: &Value, now_ms: i64) -> Result<Value, CoreError> {
    match op {
        "lock-acquire" => {
            let r: Acquire = parse(op, request)?;
            let cell = Cell { label: r.label.or(cell.label.clone()), ..cell.clone() };
            answer(lock::acquire(&cell, &r.holder, r.ttl_ms, now_ms))
        }
        "lock-renew" => {
            let r: Renew = parse(op, request)?;
            answer(lock::renew(cell, &r.holder, r.epoch, r.ttl_ms, now_ms))
        }
        "lock-release" => {
            let r: Release = parse(op, request)?;
            answer(Ok(lock::release(cell, &r.holder, r.epoch)))
        }
        "run-begin" => {
            let r: Begin = parse(op, request)?;
            answer(ownership::run_begin(
                cell,
                &r.holder,
                r.epoch,
                now_ms,
                &r.context,
                &r.hash_key,
                r.lock_preempted.as_deref(),
                r.approved_by.as_deref(),
                r.destroy,
                r.predecessor.as_ref(),
            ))
        }
        "run-finish" => {
            let r: Finish = parse(op, request)?;
            answer(ownership::run_finish(cell, &r.holder, r.epoch, now_ms, r.succeeded, r.cancelled, r.sha.as_deref()))
        }
        "destroy-plan" => {
            let r: Fenced = parse(op, request)?;
            answer(ownership::destroy_plan(cell, &r.holder, r.epoch, now_ms))
        }
        "handover" => {
            let r: Handover = parse(op, request)?;
            answer(ownership::handover(cell, &r.holder, r.epoch, now_ms, &r.successor, &r.successor_ledger))
        }
        "cell-file" => {
            let r: File = parse(op, request)?;
            Ok(json!({ "text": cell.file(&r.file) }))
        }
        _ => {
            let mut input = request.clone();
            input["cell"] = serde_json::to_value(cell).map_err(|e| CoreError::internal(format!("cell: {e}")))?;
            input["nowMs"] = json!(now_ms);
            let text = api::invoke(op, &input.to_string())?;
            serde_json::from_str(&text).map_err(|e| CoreError::internal(format!("answer of `{op}`: {e}")))
        }
    }
}
