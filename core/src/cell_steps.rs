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
use serde_json::value::RawValue;
use serde_json::{Map, Value};

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

/// The JSON text of a cell operation's request: `request` with `cell` and `nowMs` set (any it has are left
/// out), written straight from the borrowed parts (a receipt's cell, or a handover's ledger, may be tens of
/// megabytes: nothing is copied into a new value first). `INTERNAL` if `request` is not an object.
pub fn request_text(request: &Value, cell: &Cell, now_ms: UnixMs) -> Result<String, CoreError> {
    struct WithCell<'a> {
        request: &'a Map<String, Value>,
        cell: &'a Cell,
        now_ms: UnixMs,
    }
    impl Serialize for WithCell<'_> {
        fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            use serde::ser::SerializeMap;
            let mut map = s.serialize_map(None)?;
            for (k, v) in self.request.iter().filter(|(k, _)| *k != "cell" && *k != "nowMs") {
                map.serialize_entry(k, v)?;
            }
            map.serialize_entry("cell", self.cell)?;
            map.serialize_entry("nowMs", &self.now_ms)?;
            map.end()
        }
    }
    let Value::Object(request) = request else {
        return Err(CoreError::internal("a cell operation's request that is not an object"));
    };
    serde_json::to_string(&WithCell { request, cell, now_ms }).map_err(|e| CoreError::internal(e.to_string()))
}

/// A JSON object whose values stay JSON text, keys in order: a step's answer, carried without building
/// its receipt (up to 100,000 ledger entries) into a tree.
#[derive(Debug, Default)]
pub struct RawObject(Vec<(String, Box<RawValue>)>);

impl RawObject {
    /// Takes the value of `key` out.
    fn remove(&mut self, key: &str) -> Option<Box<RawValue>> {
        let at = self.0.iter().position(|(k, _)| k == key)?;
        Some(self.0.remove(at).1)
    }

    fn get(&self, key: &str) -> Option<&RawValue> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, v)| &**v)
    }
}

impl Serialize for RawObject {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for RawObject {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = RawObject;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut m: A) -> Result<RawObject, A::Error> {
                let mut entries = Vec::new();
                while let Some(entry) = m.next_entry()? {
                    entries.push(entry);
                }
                Ok(RawObject(entries))
            }
        }
        d.deserialize_map(Visit)
    }
}

/// The answer of `cell-steps`.
#[derive(Debug, Serialize)]
pub struct StepsAnswer {
    /// The one change set of the batch.
    pub changes: Vec<Change>,
    /// Each step's answer without its `changes`.
    pub answers: Vec<RawObject>,
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
pub fn run(
    req: StepsRequest,
    invoke: impl Fn(&str, &str) -> Result<String, CoreError>,
) -> Result<StepsAnswer, CoreError> {
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
        let request = Value::Object(request);
        let text = invoke(&step.op, &request_text(&request, &cell, req.now_ms)?)?;
        let invalid = |what: &str, e: serde_json::Error| {
            CoreError::internal(format!("step `{}` answered invalid {what}: {e}", step.op))
        };
        let mut answer: RawObject = serde_json::from_str(&text).map_err(|e| invalid("JSON", e))?;
        let changes: Vec<Change> = match answer.remove("changes") {
            Some(c) => serde_json::from_str(c.get()).map_err(|e| invalid("changes", e))?,
            None => Vec::new(),
        };
        for change in &changes {
            let file = match change {
                Change::Write { file, .. } | Change::Delete { file } => file,
            };
            touched.retain(|f| f != file);
            touched.push(file.clone());
        }
        cell.apply_owned(changes);
        if step.op == "lock-acquire" {
            let field = |key: &str| -> Value {
                answer.get(key).and_then(|raw| serde_json::from_str(raw.get()).ok()).unwrap_or(Value::Null)
            };
            let epoch = field("lock").get("epoch").cloned().unwrap_or(Value::Null);
            let preempted = field("preempted").get("holder").cloned().unwrap_or(Value::Null);
            grant = Some((epoch, preempted));
        }
        answers.push(answer);
    }
    let changes: Vec<Change> = touched
        .into_iter()
        .filter_map(|file| match (loaded.get(&file), cell.files.get(&file)) {
            (before, Some(after)) if before != Some(after) => Some(Change::Write { content: after.clone(), file }),
            (Some(_), None) => Some(Change::Delete { file }),
            _ => None,
        })
        .collect();
    Ok(StepsAnswer { changes, answers })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_request_text_sets_cell_and_now_once_and_keeps_the_rest() {
        let request = json!({ "holder": "run-1", "cell": "stale", "epoch": 3, "nowMs": 1 });
        let text = request_text(&request, &cell(), NOW).unwrap();
        assert_eq!(
            text,
            format!(
                r#"{{"holder":"run-1","epoch":3,"cell":{},"nowMs":{NOW}}}"#,
                serde_json::to_string(&cell()).unwrap()
            )
        );
        assert_eq!(request_text(&json!([1]), &cell(), NOW).unwrap_err().code, crate::error::ErrorCode::Internal);
    }

    #[test]
    fn a_raw_object_keeps_its_keys_in_order_and_its_values_as_written() {
        let text = r#"{"z":{"b":1,"a":[1,2.50]},"a":"x","m":null}"#;
        let raw: RawObject = serde_json::from_str(text).unwrap();
        assert_eq!(serde_json::to_string(&raw).unwrap(), text);
        assert!(serde_json::from_str::<RawObject>("[1]").is_err());
    }

    const NOW: UnixMs = 1_791_633_600_000;

    fn steps(cell: &Cell, steps: Value) -> Result<Value, CoreError> {
        let req = json!({ "cell": cell, "nowMs": NOW, "steps": steps });
        run(serde_json::from_value(req).unwrap(), crate::api::invoke).map(|a| serde_json::to_value(a).unwrap())
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
