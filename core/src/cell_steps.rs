//! `cell-steps`: several of the core's cell transactions applied in order to one snapshot and committed as one
//! change set, so that a run's grant and checkpoint receipt (or its final receipt and release, or a handover's
//! lock and rewrite) cost one compare-and-swap of the cell instead of one each.
//!
//! Call it exactly like the single operations (the host loads the cell, passes it with `nowMs`, commits the
//! answer's `changes` only if the cell is unchanged, reloads and asks again on a conflict): the store contract
//! stays one compare-and-swap per cell. Each step sees the cell as the steps before it left it, so every
//! fence check is made against exactly what will be committed; a step that refuses refuses the whole batch
//! (its own error, unchanged) and nothing is committed.

use crate::cell::{Cell, Change};
use crate::error::CoreError;
use crate::time::UnixMs;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

/// The operations a batch may contain: the cell transactions of a run and its handover.
pub const STEP_OPS: [&str; 6] = ["lock-acquire", "lock-release", "run-begin", "run-finish", "destroy-plan", "handover"];

/// One step of a batch: core operation `op` with its request (without `cell` and `nowMs`).
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CellStep {
    /// One of [`STEP_OPS`].
    pub op: String,
    /// The request, as for the operation alone, without `cell` and `nowMs`.
    pub request: Value,
    /// Fence this step with the batch's grant: `epoch` becomes the epoch the latest `lock-acquire` step before
    /// it granted, and a `run-begin` gets `lockPreempted`, the holder of the expired lock that grant replaced.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub from_grant: bool,
}

/// `cell-steps`: `{cell, nowMs, steps: [CellStep]}`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StepsRequest {
    cell: Cell,
    now_ms: UnixMs,
    steps: Vec<CellStep>,
}

/// Runs the steps on one snapshot: `{changes, answers}`, `answers[i]` being step `i`'s answer without its
/// `changes`, and `changes` the one change set that takes the loaded cell to where the last step left it
/// (a file written and deleted again within the batch is not touched). The first refusal is the batch's.
///
/// `invoke` decides one step (`crate::api::invoke`, passed in so this module does not depend on the one that
/// dispatches to it).
pub fn run(req: StepsRequest, invoke: impl Fn(&str, &str) -> Result<String, CoreError>) -> Result<Value, CoreError> {
    if req.steps.is_empty() {
        return Err(CoreError::internal("cell-steps needs at least one step"));
    }
    let loaded = req.cell.files.clone();
    let mut cell = req.cell;
    let mut answers = Vec::with_capacity(req.steps.len());
    // Files in the order of their last change: a batch writes the lock before the receipt, as the steps do.
    let mut touched: Vec<String> = Vec::new();
    let mut grant: Option<(Value, Value)> = None;
    for step in req.steps {
        if !STEP_OPS.contains(&step.op.as_str()) {
            return Err(CoreError::internal(format!(
                "cell-steps cannot run `{}`; it runs {}",
                step.op,
                STEP_OPS.join(", ")
            )));
        }
        let Value::Object(mut request) = step.request else {
            return Err(CoreError::internal(format!("the request of step `{}` is not an object", step.op)));
        };
        if step.from_grant {
            let Some((epoch, preempted)) = &grant else {
                return Err(CoreError::internal(format!("step `{}` is fenced by a grant that no step made", step.op)));
            };
            request.insert("epoch".into(), epoch.clone());
            if step.op == "run-begin" {
                request.insert("lockPreempted".into(), preempted.clone());
            }
        }
        request.insert("cell".into(), serde_json::to_value(&cell).unwrap_or(Value::Null));
        request.insert("nowMs".into(), json!(req.now_ms));
        let text = invoke(&step.op, &Value::Object(request).to_string())?;
        let mut answer: Map<String, Value> = serde_json::from_str(&text)
            .map_err(|e| CoreError::internal(format!("step `{}` answered invalid JSON: {e}", step.op)))?;
        let changes: Vec<Change> = match answer.remove("changes") {
            Some(c) => serde_json::from_value(c)
                .map_err(|e| CoreError::internal(format!("step `{}` answered invalid changes: {e}", step.op)))?,
            None => Vec::new(),
        };
        for change in &changes {
            let file = match change {
                Change::Write { file, .. } | Change::Delete { file } => file,
            };
            touched.retain(|f| f != file);
            touched.push(file.clone());
        }
        cell.apply(&changes);
        if step.op == "lock-acquire" {
            let epoch = answer.get("lock").and_then(|l| l.get("epoch")).cloned().unwrap_or(Value::Null);
            let preempted = answer.get("preempted").and_then(|p| p.get("holder")).cloned().unwrap_or(Value::Null);
            grant = Some((epoch, preempted));
        }
        answers.push(Value::Object(answer));
    }
    let changes: Vec<Change> = touched
        .into_iter()
        .filter_map(|file| match (loaded.get(&file), cell.files.get(&file)) {
            (before, Some(after)) if before != Some(after) => Some(Change::Write { content: after.clone(), file }),
            (Some(_), None) => Some(Change::Delete { file }),
            _ => None,
        })
        .collect();
    Ok(json!({ "changes": changes, "answers": answers }))
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: UnixMs = 1_791_633_600_000;

    fn steps(cell: &Cell, steps: Value) -> Result<Value, CoreError> {
        let req = json!({ "cell": cell, "nowMs": NOW, "steps": steps });
        run(serde_json::from_value(req).unwrap(), crate::api::invoke)
    }

    fn cell() -> Cell {
        Cell { env: "preview".into(), scope: "pr-1".into(), ..Cell::default() }
    }

    fn begin() -> Value {
        json!({ "holder": "a", "context": { "env": "preview", "scope": "pr-1" }, "hashKey": "k" })
    }

    #[test]
    fn a_grant_and_a_checkpoint_commit_together_fenced_by_the_grant() {
        let answer = steps(
            &cell(),
            json!([
                { "op": "lock-acquire", "request": { "holder": "a", "ttlMs": 60000 } },
                { "op": "run-begin", "request": begin(), "fromGrant": true },
            ]),
        )
        .unwrap();
        assert_eq!(answer["answers"][0]["lock"]["epoch"], 1);
        let files: Vec<&str> =
            answer["changes"].as_array().unwrap().iter().map(|c| c["file"].as_str().unwrap()).collect();
        // The lock first, then the receipt (the run's own file and `latest.json`), as the steps wrote them.
        assert_eq!((&files[..2], files.last()), (&["epoch.json", "lock.json"][..], Some(&"latest.json")));
        let receipt: Value =
            serde_json::from_str(answer["changes"][files.len() - 1]["content"].as_str().unwrap()).unwrap();
        // A checkpoint says `failed` until the final receipt replaces it (a crashed run failed).
        assert_eq!((receipt["epoch"].clone(), receipt["status"].clone()), (json!(1), json!("failed")));
    }

    #[test]
    fn a_refused_step_refuses_the_batch_and_a_lock_written_and_deleted_is_not_touched() {
        let mut c = cell();
        c.files.insert("latest.json".into(), "{not json".into());
        let refused = steps(
            &c,
            json!([
                { "op": "lock-acquire", "request": { "holder": "a", "ttlMs": 60000 } },
                { "op": "run-begin", "request": begin(), "fromGrant": true },
            ]),
        );
        assert_eq!(refused.unwrap_err().code.as_str(), "RECEIPT_CORRUPT");
        let answer = steps(
            &cell(),
            json!([
                { "op": "lock-acquire", "request": { "holder": "h", "ttlMs": 60000 } },
                { "op": "lock-release", "request": { "holder": "h" }, "fromGrant": true },
            ]),
        )
        .unwrap();
        assert_eq!(
            answer["changes"],
            json!([{ "op": "write", "file": "epoch.json", "content": "{\n  \"epoch\": 1\n}\n" }])
        );
        assert_eq!(answer["answers"][1]["released"], true);
    }

    #[test]
    fn only_the_run_steps_and_only_after_a_grant() {
        let nested = steps(&cell(), json!([{ "op": "cell-steps", "request": {} }]));
        assert_eq!(nested.unwrap_err().code.as_str(), "INTERNAL");
        let ungranted = steps(&cell(), json!([{ "op": "run-begin", "request": begin(), "fromGrant": true }]));
        assert_eq!(ungranted.unwrap_err().code.as_str(), "INTERNAL");
        assert_eq!(steps(&cell(), json!([])).unwrap_err().code.as_str(), "INTERNAL");
    }
}
