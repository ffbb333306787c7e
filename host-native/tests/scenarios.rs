//! Runs the conformance corpus (`tests/scenarios/*.json`) through the core component in wasmtime, and
//! checks that its transcript equals the native core's, step for step. The `etcd-*` steps go through the
//! component's typed `etcd` interface (the corpus's JSON converted through the core's types), the `stores`
//! and `commands` operations through theirs (`typed_stores`, `typed_commands`).

mod run_journeys;
#[path = "../../core/tests/runner/mod.rs"]
mod runner;
mod typed_commands;
mod typed_stores;

use baton_core::typed::{LeaseAction, LockAnswer, LockOp};
use baton_native::engine::{CoreComponent, LeaseRef};
use baton_native::error::HostError;
use std::collections::BTreeMap;

mod convert;

/// The core's etcd types to and from the component's `etcd` interface.
#[allow(dead_code, unreachable_pub)]
mod etcd_convert {
    use baton_native::engine::wit::etcd as e;
    include!("../../component/src/etcd_convert.rs");
}

/// An `etcd-*` step through the component's typed `etcd` interface: the corpus's JSON request as WIT records
/// (read through the core's types), the answer back as the JSON the core's operation answers.
fn etcd_step(core: &mut CoreComponent, op: &str, input: &str) -> Result<String, String> {
    use baton_core::stores::etcd::{Kv, Outcome};
    use baton_native::engine::wit::etcd as e;
    use serde_json::Value;
    let bad = || "INTERNAL".to_owned();
    let v: Value = serde_json::from_str(input).map_err(|_| bad())?;
    let text = |k: &str| v[k].as_str().map(str::to_owned).ok_or_else(bad);
    fn typed<T: serde::de::DeserializeOwned>(v: &serde_json::Value, k: &str) -> Result<T, String> {
        serde_json::from_value(v[k].clone()).map_err(|_| "INTERNAL".to_owned())
    }
    let answer = match op {
        "etcd-keys" => {
            let request = e::KeysRequest { prefix: text("prefix")?, env: text("env")?, scope: text("scope").ok() };
            serde_json::to_value(etcd_convert::cell_keys_back(core.etcd_keys(&request).map_err(code)?))
        }
        "etcd-txn" => {
            let revisions: BTreeMap<String, i64> = typed(&v, "revisions")?;
            let changes: Vec<baton_core::cell::Change> = typed(&v, "changes")?;
            let request = e::TxnRequest {
                cell: text("cell")?,
                revisions: revisions
                    .into_iter()
                    .map(|(file, mod_revision)| e::FileRevision { file, mod_revision })
                    .collect(),
                changes: changes.into_iter().map(convert::change).collect(),
            };
            serde_json::to_value(etcd_convert::transaction_back(core.etcd_txn(&request).map_err(code)?))
        }
        "etcd-list" => {
            let kvs: Vec<Kv> = typed(&v, "kvs")?;
            let request = e::ListRequest {
                env: text("env")?,
                range: text("range")?,
                kvs: kvs.into_iter().map(etcd_convert::kv).collect(),
            };
            serde_json::to_value(etcd_convert::listing_back(core.etcd_list(&request).map_err(code)?))
        }
        "etcd-retry" => {
            let outcome: Outcome = typed(&v, "outcome")?;
            let request = e::RetryRequest {
                what: text("what")?,
                endpoint: text("endpoint")?,
                endpoints: typed(&v, "endpoints")?,
                outcome: etcd_convert::outcome(outcome),
                code: v["code"].as_u64().and_then(|c| u32::try_from(c).ok()),
                detail: text("detail").unwrap_or_default(),
                attempts: typed(&v, "attempts")?,
                elapsed_ms: typed(&v, "elapsedMs")?,
                budget_ms: typed(&v, "budgetMs")?,
                random: typed(&v, "random")?,
            };
            serde_json::to_value(etcd_convert::retry_decision_back(core.etcd_retry(&request).map_err(code)?))
        }
        _ => return Err(bad()),
    };
    answer.map(|a| a.to_string()).map_err(|_| bad())
}

/// The component's typed `lease` resource for the `lease-*` steps, driven with the corpus's JSON spellings
/// (converted through the core's types): the transcript must equal the native machine's.
struct ComponentLease<'a> {
    core: &'a mut CoreComponent,
    lease: Option<LeaseRef>,
    /// The operation of each store request in flight: a JSON answer is read as the answer to it.
    in_flight: BTreeMap<u64, LockOp>,
}

fn code(e: HostError) -> String {
    e.code
}

impl ComponentLease<'_> {
    fn parts(&mut self) -> Result<(&mut CoreComponent, &LeaseRef), String> {
        let lease = self.lease.as_ref().ok_or_else(|| "INTERNAL".to_owned())?;
        Ok((self.core, lease))
    }
}

impl runner::LeaseApi for ComponentLease<'_> {
    fn create(&mut self, config: &str) -> Result<(), String> {
        let config = serde_json::from_str(config).map_err(|_| "INTERNAL".to_owned())?;
        self.lease = Some(self.core.lease_create(&convert::lease_config_out(config)).map_err(code)?);
        Ok(())
    }
    fn acquire(&mut self, now: u64) -> Result<(), String> {
        let (core, l) = self.parts()?;
        core.lease_acquire(l, now).map_err(code)
    }
    fn release(&mut self, now: u64) -> Result<(), String> {
        let (core, l) = self.parts()?;
        core.lease_release(l, now).map_err(code)
    }
    fn timeout(&mut self, now: u64) -> Result<(), String> {
        let (core, l) = self.parts()?;
        core.lease_timeout(l, now).map_err(code)
    }
    fn store_result(&mut self, id: u64, outcome: &str, now: u64) -> Result<(), String> {
        let outcome: serde_json::Value = serde_json::from_str(outcome).map_err(|_| "INTERNAL".to_owned())?;
        let op = self.in_flight.remove(&id);
        let outcome = match (outcome.get("ok"), outcome.get("error"), op) {
            (Some(answer), None, Some(op)) => {
                Ok(convert::lock_answer(LockAnswer::from_json(&op, answer.clone()).map_err(|e| e.code.to_string())?))
            }
            (None, Some(serde_json::Value::Object(error)), _) => {
                Err(convert::error(baton_core::CoreError::from_json(error.clone())))
            }
            // An answer to a request that is not in flight: the machine refuses the id (INTERNAL).
            (Some(_), None, None) => Err(convert::error(baton_core::CoreError::internal("not in flight"))),
            _ => return Err("INTERNAL".to_owned()),
        };
        let (core, l) = self.parts()?;
        core.lease_store_result(l, id, &outcome, now).map_err(code)
    }
    fn poll_action(&mut self) -> Result<Option<String>, String> {
        let (core, l) = self.parts()?;
        let Some(action) = core.lease_poll_action(l).map_err(code)? else { return Ok(None) };
        let action = convert::lease_action_back(action);
        if let LeaseAction::Store(request) = &action {
            self.in_flight.insert(request.id, request.op.clone());
        }
        Ok(Some(serde_json::to_string(&action).map_err(|_| "INTERNAL".to_owned())?))
    }
    fn poll_timeout(&mut self) -> Result<Option<u64>, String> {
        let (core, l) = self.parts()?;
        core.lease_poll_timeout(l).map_err(code)
    }
    fn token(&mut self, now: u64) -> Result<Option<u64>, String> {
        let (core, l) = self.parts()?;
        core.lease_fencing_token(l, now).map_err(code)
    }
}

#[test]
fn conformance_corpus_through_the_component() {
    let files = runner::load(&runner::corpus_dir()).unwrap_or_else(|e| panic!("{e}"));
    assert!(!files.is_empty(), "no scenarios found in {}", runner::corpus_dir().display());
    let mut core = CoreComponent::load().expect("the component loads");
    let mut failures = Vec::new();
    for (file, doc) in &files {
        let Ok(doc) = doc else {
            failures.push(format!("{file}: not valid JSON"));
            continue;
        };
        if runner::journey::is_journey(doc) {
            failures.extend(journey_through_both(&mut core, file, doc));
            continue;
        }
        let mut lease = ComponentLease { core: &mut core, lease: None, in_flight: BTreeMap::new() };
        let mut component = |op: &str, input: &str| {
            if op.starts_with("lease-") {
                return runner::lease_step(&mut lease, op, input);
            }
            if let Some(answer) = typed_stores::call(lease.core, op, input) {
                return answer;
            }
            if let Some(answer) = typed_commands::call(lease.core, op, input) {
                return answer;
            }
            if op.starts_with("etcd-") {
                return etcd_step(lease.core, op, input);
            }
            Err(format!("INTERNAL: the component has no function for `{op}`"))
        };
        let wasm = runner::run(file, doc, &mut component);
        if let Some(l) = lease.lease.take() {
            lease.core.lease_drop(l).expect("drops");
        }
        failures.extend(wasm.failures);
        let mut native_lease = runner::NativeLease::default();
        let mut native = |op: &str, input: &str| {
            if op.starts_with("lease-") {
                return runner::lease_step(&mut native_lease, op, input);
            }
            baton_core::api::invoke(op, input).map_err(|e| e.code.as_str().to_owned())
        };
        let reference = runner::run(file, doc, &mut native);
        if wasm.transcript != reference.transcript {
            failures.push(format!(
                "{file}: the component's transcript differs from the native core's:\n{:#?}\nvs\n{:#?}",
                wasm.transcript, reference.transcript
            ));
        }
    }
    assert!(failures.is_empty(), "{} failure(s):\n\n{}", failures.len(), failures.join("\n\n"));
}

/// Runs a run journey through the component's `run` resource and through the native machine: the
/// failures of both, and a failure when their transcripts differ.
fn journey_through_both(core: &mut CoreComponent, file: &str, doc: &serde_json::Value) -> Vec<String> {
    let mut run = run_journeys::ComponentRun::new(core);
    let wasm = runner::journey::run(file, doc, &mut run);
    let mut failures = wasm.failures;
    if let Err(e) = run.close() {
        failures.push(format!("{file}: the run does not drop: {}", e.message));
    }
    runner::write_transcript(file, "component", &wasm.transcript);
    let reference = runner::journey::run(file, doc, &mut runner::native_run::NativeRun::default());
    if wasm.transcript != reference.transcript {
        let first = wasm.transcript.iter().zip(&reference.transcript).position(|(a, b)| a != b);
        let at = first.unwrap_or_else(|| wasm.transcript.len().min(reference.transcript.len()));
        failures.push(format!(
            "{file}: the component's transcript differs from the native machine's from step {at}:\n{:#}\nvs\n{:#}",
            wasm.transcript.get(at).unwrap_or(&serde_json::Value::Null),
            reference.transcript.get(at).unwrap_or(&serde_json::Value::Null)
        ));
    }
    failures
}
