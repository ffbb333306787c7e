//! wasm-bindgen bindings of the baton core for the npm package. Type conversions only: the JS layer
//! (`host-node/js/core.cjs`) calls [`invoke`] with an operation name and the request as JSON text and gets
//! the answer as JSON text (V8's JSON beats building objects across the boundary), deciding with the same
//! `baton_core::api` operations as the component and the native runner; the lease and run machines take
//! and give plain objects (serde-wasm-bindgen).

use wasm_bindgen::prelude::*;

mod request;

/// Runs one core operation. On a refusal it throws an `Error` whose `code` is the stable error code and
/// whose `json` is the whole error object (`{"code","message","hint"?,...details}`) as JSON text.
#[wasm_bindgen]
pub fn invoke(op: &str, request: &str) -> Result<String, JsValue> {
    baton_core::api::invoke(op, request).map_err(core_error)
}

/// The scope of a run on `branch` (`decisions.scope-for`): names in, the scope out, no object in between.
/// `pr` is read as `JSON.stringify` writes it (a non-finite number is `null`); one that is not a whole
/// number >= 0 throws `INTERNAL`, as `invoke('scope-for', ...)` does.
#[wasm_bindgen(js_name = scopeFor)]
pub fn scope_for(branch: &str, pr: Option<f64>, default_branch: Option<String>) -> Result<String, JsValue> {
    let pr = match pr.filter(|n| n.is_finite()) {
        None => None,
        Some(n) if n >= 0.0 && n.fract() == 0.0 && n <= 9_007_199_254_740_992.0 => Some(n as u64),
        Some(n) => {
            let e = baton_core::CoreError::internal(format!(
                "invalid request for `scope-for`: pr must be a whole number >= 0, got {n}"
            ));
            return Err(core_error(e.with("op", "scope-for")));
        }
    };
    Ok(baton_core::scope::scope_for(branch, pr, default_branch.as_deref()))
}

/// The holder's side of one lease (`baton_core::lease`). Times are the host's monotonic clock in whole
/// milliseconds (`Math.floor(performance.now())`); actions and results are plain objects
/// (serde-wasm-bindgen), no JSON text.
#[wasm_bindgen]
pub struct Lease(baton_core::lease::LeaseMachine);

fn core_error(e: baton_core::CoreError) -> JsValue {
    // Setting properties on a fresh Error object cannot fail.
    let err = js_sys::Error::new(&e.message);
    let _ = js_sys::Reflect::set(&err, &"code".into(), &e.code.as_str().into());
    let _ = js_sys::Reflect::set(&err, &"json".into(), &e.to_json().to_string().into());
    err.into()
}

/// `value` as a plain JS object (maps as objects, integers as numbers), as `JSON.parse` of its JSON would
/// give it.
fn to_js<T: serde::Serialize>(value: &T) -> Result<JsValue, JsValue> {
    value
        .serialize(&serde_wasm_bindgen::Serializer::json_compatible())
        .map_err(|e| core_error(baton_core::CoreError::internal(format!("an answer did not convert: {e}"))))
}

/// A JS number as whole milliseconds: finite, integral and within 0..=2^53.
/// `value` (a plain object, read as `JSON.stringify` would write it) as the core's type `T`; `INTERNAL`
/// naming `what` when it is not one.
fn typed<T: serde::de::DeserializeOwned>(what: &str, value: &JsValue) -> Result<T, JsValue> {
    let bad = |e: String| core_error(baton_core::CoreError::internal(format!("invalid {what}: {e}")));
    let json = request::json_of(value).map_err(bad)?;
    serde_json::from_value(json).map_err(|e| bad(e.to_string()))
}

fn ms(now: f64) -> Result<u64, JsValue> {
    if now.is_finite() && now >= 0.0 && now.fract() == 0.0 && now <= 9_007_199_254_740_992.0 {
        Ok(now as u64)
    } else {
        Err(core_error(baton_core::CoreError::internal(format!("time must be whole milliseconds >= 0, got {now}"))))
    }
}

#[wasm_bindgen]
impl Lease {
    /// Creates a lease machine from its JSON configuration; throws USAGE for inconsistent timing.
    #[wasm_bindgen(constructor)]
    pub fn new(config: &str) -> Result<Self, JsValue> {
        baton_core::api::lease_new(config).map(Self).map_err(core_error)
    }
    /// Starts acquiring (once).
    pub fn acquire(&mut self, now: f64) -> Result<(), JsValue> {
        self.0.acquire(ms(now)?).map_err(core_error)
    }
    /// Ends the lease.
    pub fn release(&mut self, now: f64) -> Result<(), JsValue> {
        self.0.release(ms(now)?);
        Ok(())
    }
    /// Wakes the machine.
    #[wasm_bindgen(js_name = handleTimeout)]
    pub fn handle_timeout(&mut self, now: f64) -> Result<(), JsValue> {
        self.0.handle_timeout(ms(now)?);
        Ok(())
    }
    /// Reports the outcome of store request `id`: `{ok: answer}` or `{error: {code, message, ...}}`, a plain
    /// object.
    #[wasm_bindgen(js_name = handleStoreResult)]
    pub fn handle_store_result(&mut self, id: f64, result: JsValue, now: f64) -> Result<(), JsValue> {
        let result: serde_json::Value = serde_wasm_bindgen::from_value(result)
            .map_err(|e| core_error(baton_core::CoreError::internal(format!("invalid store result: {e}"))))?;
        baton_core::api::lease_store_value(&mut self.0, ms(id)?, result, ms(now)?).map_err(core_error)
    }
    /// The next action as a plain object (`baton_core::typed::LeaseAction`: `{type: "store", id, op, request,
    /// deadlineMs}` or `{type: "event", event: {kind, ...}}`), or `undefined`.
    #[wasm_bindgen(js_name = pollAction)]
    pub fn poll_action(&mut self) -> Result<JsValue, JsValue> {
        match baton_core::typed::lease_poll_action(&mut self.0) {
            None => Ok(JsValue::UNDEFINED),
            Some(action) => to_js(&action),
        }
    }
    /// When to call `handleTimeout` next, or `undefined`.
    #[wasm_bindgen(js_name = pollTimeout)]
    pub fn poll_timeout(&self) -> Option<f64> {
        self.0.poll_timeout().map(|t| t as f64)
    }
    /// The epoch to fence writes with while the lease is safely held at `now`, or `undefined`.
    #[wasm_bindgen(js_name = fencingToken)]
    pub fn fencing_token(&self, now: f64) -> Result<Option<f64>, JsValue> {
        Ok(self.0.fencing_token(ms(now)?).map(|t| t as f64))
    }
    /// The latest instant a store operation started at `now` may run until (the store budget, bounded by
    /// the lease while held or released).
    #[wasm_bindgen(js_name = storeDeadline)]
    pub fn store_deadline(&self, now: f64) -> Result<f64, JsValue> {
        Ok(self.0.store_deadline(ms(now)?) as f64)
    }
    /// Whether the lease is over.
    #[wasm_bindgen(js_name = isFinished)]
    pub fn is_finished(&self) -> bool {
        self.0.is_finished()
    }
}

/// One run from approval to verdict (`baton_core::run`). Times are the host's monotonic clock in whole
/// milliseconds; the configuration, results, work ends and actions are plain objects (serde-wasm-bindgen),
/// no JSON text.
#[wasm_bindgen]
pub struct Run(baton_core::run::RunMachine);

#[wasm_bindgen]
impl Run {
    /// Creates a run machine from its configuration (`baton_core::run::RunConfig`, a plain object read as
    /// `JSON.stringify` would write it); throws ENV_NOT_APPROVED, USAGE or INTERNAL.
    #[wasm_bindgen(constructor)]
    pub fn new(config: JsValue) -> Result<Self, JsValue> {
        let config = typed::<baton_core::run::RunConfig>("run configuration", &config)?;
        baton_core::run::RunMachine::new(config).map(Self).map_err(core_error)
    }
    /// The holder name of the run's lock.
    #[wasm_bindgen(getter)]
    pub fn holder(&self) -> String {
        self.0.holder().to_owned()
    }
    /// The environment of the run's own cell.
    #[wasm_bindgen(getter)]
    pub fn env(&self) -> String {
        self.0.env().to_owned()
    }
    /// The scope of the run's own cell.
    #[wasm_bindgen(getter)]
    pub fn scope(&self) -> String {
        self.0.scope().to_owned()
    }
    /// Starts the run (once).
    pub fn start(&mut self, now: f64) -> Result<(), JsValue> {
        self.0.start(ms(now)?).map_err(core_error)
    }
    /// The work ended: `{kind: "exited", code}`, `{kind: "signalled", signal}` or `{kind: "not-started",
    /// message}`.
    #[wasm_bindgen(js_name = workEnded)]
    pub fn work_ended(&mut self, end: JsValue, now: f64) -> Result<(), JsValue> {
        let end = typed::<baton_core::run::WorkEnd>("work end", &end)?;
        self.0.work_ended(end, ms(now)?).map_err(core_error)
    }
    /// A cancel signal reached the process: `interrupt` or `terminate`.
    pub fn signal(&mut self, signal: &str, now: f64) -> Result<(), JsValue> {
        let signal = typed::<baton_core::run::HostSignal>("signal", &JsValue::from_str(signal))?;
        self.0.signal(signal, ms(now)?);
        Ok(())
    }
    /// Manual mode: the final receipt and the handover, keeping the lease.
    pub fn finish(&mut self, succeeded: bool, now: f64) -> Result<(), JsValue> {
        self.0.finish(succeeded, ms(now)?).map_err(core_error)
    }
    /// Ends the run early or after `finish`.
    pub fn release(&mut self, now: f64) -> Result<(), JsValue> {
        self.0.release(ms(now)?);
        Ok(())
    }
    /// Wakes the machine.
    #[wasm_bindgen(js_name = handleTimeout)]
    pub fn handle_timeout(&mut self, now: f64) -> Result<(), JsValue> {
        self.0.handle_timeout(ms(now)?);
        Ok(())
    }
    /// Reports the outcome of store or read request `id`: `{ok: answer}` or `{error: {code, message, ...}}`,
    /// a plain object.
    #[wasm_bindgen(js_name = handleStoreResult)]
    pub fn handle_store_result(&mut self, id: f64, result: JsValue, now: f64) -> Result<(), JsValue> {
        let result = typed::<baton_core::lease::StoreResult>("store result", &result)?;
        self.0.handle_store_result(ms(id)?, result, ms(now)?).map_err(core_error)
    }
    /// The next action as a plain object (`baton_core::run::RunAction`: `{type: "store", id, cell?, op,
    /// request, deadlineMs}`, `{type: "start-work", ...}`, ..., `{type: "done", verdict}`), or `undefined`.
    #[wasm_bindgen(js_name = pollAction)]
    pub fn poll_action(&mut self) -> Result<JsValue, JsValue> {
        match self.0.poll_action() {
            None => Ok(JsValue::UNDEFINED),
            Some(action) => to_js(&action),
        }
    }
    /// When to call `handleTimeout` next, or `undefined`.
    #[wasm_bindgen(js_name = pollTimeout)]
    pub fn poll_timeout(&self) -> Option<f64> {
        self.0.poll_timeout().map(|t| t as f64)
    }
    /// The epoch to fence writes with while the lease is safely held at `now`, or `undefined`.
    #[wasm_bindgen(js_name = fencingToken)]
    pub fn fencing_token(&self, now: f64) -> Result<Option<f64>, JsValue> {
        Ok(self.0.fencing_token(ms(now)?).map(|t| t as f64))
    }
    /// The latest instant a store operation started at `now` may run until (a fenced write of the work).
    #[wasm_bindgen(js_name = storeDeadline)]
    pub fn store_deadline(&self, now: f64) -> Result<f64, JsValue> {
        Ok(self.0.store_deadline(ms(now)?) as f64)
    }
    /// Whether the run is over.
    #[wasm_bindgen(js_name = isFinished)]
    pub fn is_finished(&self) -> bool {
        self.0.is_finished()
    }
}

/// One ownership change (`baton_core::claims::ChangeMachine`): a ledger change with its claim, the protocol
/// decided in the core. The JS loop (`js/claim.cjs`) carries out its actions on the package's stores, which
/// run core operations by name: a load comes with the operation and request that decide it
/// (`store.transact(cell, op, request)`), and its answer is reported back. Plain objects both ways.
#[wasm_bindgen]
pub struct Ownership(baton_core::claims::ChangeMachine);

fn from_js<T: serde::de::DeserializeOwned>(what: &str, value: &JsValue) -> Result<T, JsValue> {
    let json =
        request::json_of(value).map_err(|e| core_error(baton_core::CoreError::internal(format!("{what}: {e}"))))?;
    serde_json::from_value(json)
        .map_err(|e| core_error(baton_core::CoreError::usage(format!("{what} is not valid: {e}"))))
}

/// `{ok: value}` or `{error: {code, message, ...details}}` as the core's result.
fn outcome_of(value: &JsValue) -> Result<Result<serde_json::Value, baton_core::CoreError>, JsValue> {
    let mut v =
        request::json_of(value).map_err(|e| core_error(baton_core::CoreError::internal(format!("an outcome: {e}"))))?;
    match v.get_mut("error").map(serde_json::Value::take) {
        Some(serde_json::Value::Object(e)) => Ok(Err(baton_core::CoreError::from_json(e))),
        _ => Ok(Ok(v.get_mut("ok").map(serde_json::Value::take).unwrap_or_default())),
    }
}

#[wasm_bindgen]
impl Ownership {
    /// Creates the change from `{env, scope, holder?, epoch?, predecessor?, resource, op: {type: intend |
    /// record (id) | forget | check (change)}, ownedMarker?}`; throws USAGE for a bad one.
    #[wasm_bindgen(constructor)]
    pub fn new(config: JsValue) -> Result<Self, JsValue> {
        let config: baton_core::claims::ChangeConfig = from_js("the ownership change", &config)?;
        baton_core::claims::ChangeMachine::new(config).map(Self).map_err(core_error)
    }
    /// The next action, or `undefined`: `{type: 'load', id, env, scope, write, op, request}`, `{type:
    /// 'list', id, env}`, `{type: 'done', answer}` or `{type: 'failed', error}` (the error object).
    #[wasm_bindgen(js_name = pollAction)]
    pub fn poll_action(&mut self) -> Result<JsValue, JsValue> {
        use baton_core::claims::ChangeAction;
        use serde_json::json;
        let action = match self.0.poll_action() {
            None => return Ok(JsValue::UNDEFINED),
            Some(ChangeAction::Load(l)) => {
                let (op, request) = self.0.json_request(l.id).map_err(core_error)?;
                json!({ "type": "load", "id": l.id, "env": l.env, "scope": l.scope, "write": l.write, "op": op, "request": request })
            }
            Some(ChangeAction::List { id, env }) => json!({ "type": "list", "id": id, "env": env }),
            Some(ChangeAction::Done(answer)) => json!({ "type": "done", "answer": answer }),
            Some(ChangeAction::Failed(e)) => json!({ "type": "failed", "error": e.to_json() }),
        };
        to_js(&action)
    }
    /// Reports load `id`: `{ok: the operation's answer}` or `{error}`.
    #[wasm_bindgen(js_name = handleAnswer)]
    pub fn handle_answer(&mut self, id: f64, outcome: JsValue) -> Result<(), JsValue> {
        let outcome = outcome_of(&outcome)?;
        self.0.handle_answer(ms(id)?, outcome).map_err(core_error)
    }
    /// Reports listing `id`: `{ok: [{scope, text}]}` or `{error}`.
    #[wasm_bindgen(js_name = handleListing)]
    pub fn handle_listing(&mut self, id: f64, outcome: JsValue) -> Result<(), JsValue> {
        let listing = outcome_of(&outcome)?.and_then(|v| {
            serde_json::from_value(v).map_err(|e| baton_core::CoreError::internal(format!("a listing: {e}")))
        });
        self.0.handle_listing(ms(id)?, listing).map_err(core_error)
    }
}
