//! The native run machine for the run journeys ([`super::journey`]): the journey's JSON steps read as the
//! machine's own types (serde), with the native core's operations for the journey's store.

use super::journey::RunApi;
use serde_json::{Value, json};

/// The native run machine of a journey (one at a time; `create` replaces it).
#[derive(Default)]
pub(crate) struct NativeRun(Option<baton_core::run::RunMachine>);

impl NativeRun {
    fn machine(&mut self) -> Result<&mut baton_core::run::RunMachine, String> {
        self.0.as_mut().ok_or_else(|| "INTERNAL".to_owned())
    }
}

fn code(e: baton_core::CoreError) -> String {
    e.code.as_str().to_owned()
}

/// A journey value as the machine's type `T`; `INTERNAL` when it is not one (as a binding refuses it).
fn typed<T: serde::de::DeserializeOwned>(value: Value) -> Result<T, String> {
    serde_json::from_value(value).map_err(|_| "INTERNAL".to_owned())
}

impl RunApi for NativeRun {
    fn transact(&mut self, _: Option<u64>, op: &str, request: &Value) -> Result<Value, Value> {
        match baton_core::api::invoke(op, &request.to_string()) {
            Ok(text) => {
                serde_json::from_str(&text).map_err(|e| json!({ "code": "INTERNAL", "message": e.to_string() }))
            }
            Err(e) => {
                let mut error = e.to_json();
                if let Some(obj) = error.as_object_mut() {
                    obj.remove("hint");
                }
                Err(error)
            }
        }
    }
    fn create(&mut self, config: &Value) -> Result<String, String> {
        let m = baton_core::run::RunMachine::new(typed(config.clone())?).map_err(code)?;
        let holder = m.holder().to_owned();
        self.0 = Some(m);
        Ok(holder)
    }
    fn start(&mut self, now: u64) -> Result<(), String> {
        self.machine()?.start(now).map_err(code)
    }
    fn work_ended(&mut self, end: &Value, now: u64) -> Result<(), String> {
        let end = typed(end.clone())?;
        self.machine()?.work_ended(end, now).map_err(code)
    }
    fn signal(&mut self, signal: &str, now: u64) -> Result<(), String> {
        let signal = typed(Value::String(signal.to_owned()))?;
        self.machine()?.signal(signal, now);
        Ok(())
    }
    fn timeout(&mut self, now: u64) -> Result<(), String> {
        self.machine()?.handle_timeout(now);
        Ok(())
    }
    fn store_result(&mut self, id: u64, outcome: &Value, now: u64) -> Result<(), String> {
        let outcome = typed(outcome.clone())?;
        self.machine()?.handle_store_result(id, outcome, now).map_err(code)
    }
    fn poll_action(&mut self) -> Result<Option<Value>, String> {
        let action = self.machine()?.poll_action();
        action.map(|a| serde_json::to_value(a).map_err(|_| "INTERNAL".to_owned())).transpose()
    }
    fn poll_timeout(&mut self) -> Result<Option<u64>, String> {
        Ok(self.machine()?.poll_timeout())
    }
}
