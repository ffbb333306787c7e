//! What a run ends with: the facts it gathered, and the one verdict (exit code, data or error) every host
//! reports the same way.

use super::action::{HostSignal, Verdict, WorkEnd};
use super::config::{Checked, Job};
use crate::error::{CoreError, ErrorCode};
use serde_json::{Map, Value, json};

/// What the run learnt on its way; the verdict is decided from these alone.
#[derive(Clone, Debug, Default)]
pub(crate) struct Facts {
    pub(crate) lock: Value,
    pub(crate) epoch: u64,
    pub(crate) preempted: Value,
    /// The `LOCK_LOST` error, once the lease was lost or the holder's deadline passed.
    pub(crate) lost: Option<Value>,
    /// Why the run could not get going (acquire failed, the checkpoint was refused).
    pub(crate) failure: Option<Value>,
    /// The final receipt could not be written for another reason than a lost lease.
    pub(crate) receipt_error: Option<Value>,
    pub(crate) work: Option<WorkEnd>,
    /// The run-finish answer, once it landed.
    pub(crate) finished: Option<Map<String, Value>>,
    pub(crate) handed_over: u64,
    pub(crate) released: bool,
    /// A plain acquire: the lock stays held.
    pub(crate) keep_lock: bool,
    /// The host gave the run up before the work started (a wait given up).
    pub(crate) given_up: bool,
    /// Manual mode: released while the work ran, without a final receipt.
    pub(crate) released_early: bool,
    pub(crate) warnings: Vec<String>,
    context: Value,
}

impl Facts {
    pub(crate) fn new(cfg: &Checked) -> Self {
        let context = match &cfg.object {
            Some(identity) => json!({ "env": cfg.lease.env, "scope": cfg.lease.scope, "object": identity }),
            None => serde_json::to_value(&cfg.context).unwrap_or(Value::Null),
        };
        Self { context, ..Self::default() }
    }

    /// What `finish` resolves with in Node's manual mode.
    pub(crate) fn finished_outcome(&self) -> Map<String, Value> {
        let f = self.finished.clone().unwrap_or_default();
        let mut out = Map::new();
        out.insert("status".into(), f.get("status").cloned().unwrap_or(Value::Null));
        out.insert("unresolved".into(), f.get("unresolved").cloned().unwrap_or_else(|| json!([])));
        out.insert("receipt".into(), f.get("receipt").cloned().unwrap_or(Value::Null));
        out.insert("handedOver".into(), json!(self.handed_over));
        out.insert("warnings".into(), json!(self.warnings));
        out
    }

    fn fields(&self, cfg: &Checked) -> Map<String, Value> {
        let mut m = Map::new();
        if cfg.job == Job::Acquire {
            m.insert("holder".into(), json!(cfg.lease.holder));
            m.insert("lock".into(), self.lock.clone());
            m.insert("preempted".into(), self.preempted.clone());
            return m;
        }
        let receipt = self.finished.as_ref().map_or(Value::Null, |f| {
            let r = f.get("receipt").cloned().unwrap_or(Value::Null);
            json!({ "runId": r.get("runId"), "status": f.get("status"), "ledger": r.get("ledger") })
        });
        m.insert("context".into(), self.context.clone());
        m.insert("holder".into(), json!(cfg.lease.holder));
        m.insert("lock".into(), self.lock.clone());
        m.insert("preempted".into(), self.preempted.clone());
        m.insert("exitCode".into(), self.work.as_ref().map_or(Value::Null, |w| json!(w.exit_code())));
        m.insert("released".into(), json!(self.released));
        m.insert("receipt".into(), receipt);
        m.insert("handedOver".into(), json!(self.handed_over));
        m.insert("warnings".into(), json!(self.warnings));
        m
    }
}

fn code_exit(error: &Value) -> u8 {
    let code = error.get("code").and_then(Value::as_str).and_then(ErrorCode::parse);
    code.unwrap_or(ErrorCode::Internal).exit_code()
}

fn with_fields(mut error: Value, fields: &Map<String, Value>) -> Value {
    if let Some(obj) = error.as_object_mut() {
        for (k, v) in fields {
            obj.entry(k.clone()).or_insert_with(|| v.clone());
        }
    }
    error
}

fn fail(error: Value, exit: u8, fields: Map<String, Value>) -> Verdict {
    let exit = if exit == 0 { 1 } else { exit };
    Verdict { exit, ok: false, error: Some(with_fields(error, &fields)), fields }
}

/// The verdict, in this order: a run that never got going (its error; a cancel before the work is
/// `INTERRUPTED`), a lost lease (`LOCK_LOST`), a cancel (`INTERRUPTED`, 128 + the first signal), a failed
/// command (`COMMAND_FAILED`, its own code), a final receipt that did not land, a destroy that left intents
/// (`INTENT_UNRESOLVED`) or resources (`COMMAND_FAILED`); else success.
pub(crate) fn decide(cfg: &Checked, facts: &Facts, cancel: Option<HostSignal>) -> Verdict {
    let fields = facts.fields(cfg);
    let label = cfg.lease.label();
    if facts.work.is_none() && !facts.keep_lock {
        if let Some(sig) = cancel {
            let e = CoreError::new(
                ErrorCode::Interrupted,
                format!("baton was interrupted by {} before the command started; nothing ran.", sig.name()),
            );
            return Verdict { exit: 128 + sig.number(), ok: false, error: Some(e.to_json()), fields: Map::new() };
        }
        if let Some(e) = facts.lost.clone().or_else(|| facts.failure.clone()) {
            let exit = code_exit(&e);
            return Verdict { exit, ok: false, error: Some(e), fields: Map::new() };
        }
        if facts.released_early {
            let e = CoreError::new(
                ErrorCode::Interrupted,
                format!(
                    "The run on {label} was released before it finished; its checkpoint receipt stays for the next run."
                ),
            );
            return fail(e.to_json(), 1, fields);
        }
        if facts.given_up || cfg.job != Job::Acquire {
            let e = CoreError::new(
                ErrorCode::Interrupted,
                format!("The run on {label} was given up before it started; nothing ran."),
            );
            return Verdict { exit: 1, ok: false, error: Some(e.to_json()), fields: Map::new() };
        }
    }
    if cfg.job == Job::Acquire {
        return Verdict { exit: 0, ok: true, error: None, fields };
    }
    if let Some(lost) = facts.lost.clone() {
        let exit = code_exit(&lost);
        return fail(lost, exit, fields);
    }
    if let Some(sig) = cancel {
        let receipt = if cfg.job.has_receipt() { ", the receipt says `cancelled`" } else { "" };
        let released = if facts.released { " and the lease is released" } else { "" };
        let e = CoreError::new(
            ErrorCode::Interrupted,
            format!("The run on {label} was cancelled by {}: the command was stopped{receipt}{released}.", sig.name()),
        );
        return fail(e.to_json(), 128 + sig.number(), fields);
    }
    if let Some(work) = &facts.work
        && work != &(WorkEnd::Exited { code: 0 })
    {
        let n = work.exit_code();
        let message = match work {
            WorkEnd::Exited { code } => {
                format!("the command exited with {code}; the lease was held throughout and is released.")
            }
            WorkEnd::Signalled { signal } => {
                format!("the command was killed by signal {signal}; the lease was held throughout and is released.")
            }
            WorkEnd::NotStarted { message } => format!("{message}; nothing ran and the lease is released."),
        };
        let e = CoreError::new(ErrorCode::CommandFailed, message);
        return fail(e.to_json(), u8::try_from(n).unwrap_or(1), fields);
    }
    if let Some(e) = facts.receipt_error.clone() {
        let exit = code_exit(&e);
        return fail(e, exit, fields);
    }
    if cfg.job == Job::Destroy {
        let finished = facts.finished.clone().unwrap_or_default();
        let unresolved = finished.get("unresolved").and_then(Value::as_array).cloned().unwrap_or_default();
        if !unresolved.is_empty() {
            let e = unresolved_error(&cfg.lease.env, &cfg.lease.scope, &unresolved);
            return fail(e.to_json(), ErrorCode::IntentUnresolved.exit_code(), fields);
        }
        if finished.get("status").and_then(Value::as_str) != Some("complete") {
            let left =
                finished.get("receipt").and_then(|r| r.get("ledger")).and_then(Value::as_array).map_or(0, Vec::len);
            let e = CoreError::new(
                ErrorCode::CommandFailed,
                format!(
                    "the destroy command exited 0 but {left} resource(s) were not reported deleted (`baton ledger forget`); they stay in the ledger."
                ),
            );
            return fail(e.to_json(), 1, fields);
        }
    }
    Verdict { exit: 0, ok: true, error: None, fields }
}

/// `INTENT_UNRESOLVED` for the intents a destroy left: an interrupted run may have created them, and nothing
/// is dropped on a guess.
pub fn unresolved_error(env: &str, scope: &str, unresolved: &[Value]) -> CoreError {
    let keys: Vec<String> = unresolved
        .iter()
        .map(|r| {
            let field = |k: &str| r.get(k).and_then(Value::as_str).unwrap_or("?").to_owned();
            format!("{}:{}", field("adapter"), field("key"))
        })
        .collect();
    CoreError::new(
        ErrorCode::IntentUnresolved,
        format!(
            "An interrupted run on {env}/{scope} may have created {} but the destroy did not resolve it (delete it if it exists, then `baton ledger forget`). It stays in the ledger; nothing was dropped on a guess.",
            keys.join(", ")
        ),
    )
    .with("unresolved", Value::Array(unresolved.to_vec()))
}
