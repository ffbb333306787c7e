//! The typed `commands` interface of the core component (`wit/commands.wit`): the small decisions the CLI's
//! commands make outside a run. Each method returns the component's answer in its generated WIT type; a
//! refusal is a [`HostError`] with the core's code and details.

use super::bindings::exports::baton::core::commands as wc;
use super::bindings::exports::baton::core::locks as wl;
use super::bindings::exports::baton::core::types::Cell;
use super::{CoreComponent, change_json, from_wit, lock_json, wasm_error};
use crate::error::HostError;
use serde_json::{Value, json};

impl CoreComponent {
    /// Which store a command uses; `USAGE` for a spec or variable that does not parse.
    pub fn store_spec(&mut self, request: &wc::StoreRequest) -> Result<wc::StoreChoice, HostError> {
        let c = self.core.baton_core_commands();
        c.call_store_spec(&mut self.store, request).map_err(wasm_error)?.map_err(from_wit)
    }

    /// What the words after `command` say (for hosts without a parser; the CLI has clap); `USAGE` for a
    /// wrong word.
    pub fn command_line(
        &mut self,
        command: &str,
        argv: &[String],
        vars: &[wc::Variable],
    ) -> Result<wc::CommandLineAnswer, HostError> {
        let c = self.core.baton_core_commands();
        c.call_command_line(&mut self.store, command, argv, vars).map_err(wasm_error)?.map_err(from_wit)
    }

    /// The scope a run of `scope` inherits from, and the TTL of the handover's lock on it.
    pub fn succession(
        &mut self,
        scope: &str,
        branch: Option<&str>,
        pr: Option<u64>,
        ttl_ms: Option<u64>,
    ) -> Result<wc::Inheritance, HostError> {
        let c = self.core.baton_core_commands();
        c.call_succession(&mut self.store, scope, branch, pr, ttl_ms).map_err(wasm_error)
    }

    /// The lock cell of a parent object; `USAGE` for an empty identity or one carrying a secret.
    pub fn parent_cell(&mut self, identity: &str, secrets: &[String]) -> Result<wc::ParentObjectCell, HostError> {
        let c = self.core.baton_core_commands();
        c.call_parent_cell(&mut self.store, identity, secrets).map_err(wasm_error)?.map_err(from_wit)
    }

    /// Whether a run writing to `env` needs an approver; `ENV_NOT_APPROVED` for production without one.
    pub fn approval(&mut self, env: &str, approved_by: Option<&str>) -> Result<wc::ApprovalVerdict, HostError> {
        let c = self.core.baton_core_commands();
        c.call_approval(&mut self.store, env, approved_by).map_err(wasm_error)?.map_err(from_wit)
    }

    /// What `baton status` shows about the scope of `cell` at wall-clock `now_ms`.
    pub fn scope_status(
        &mut self,
        cell: &Cell,
        now_ms: i64,
        others: &[wc::OtherScope],
        predecessor: Option<&str>,
    ) -> Result<wc::ScopeReport, HostError> {
        let c = self.core.baton_core_commands();
        c.call_scope_status(&mut self.store, cell, now_ms, others, predecessor).map_err(wasm_error)?.map_err(from_wit)
    }

    /// The fenced write of data file `file` on the snapshot `cell` (as the stores load it), through
    /// `locks.apply`: the `{changes, lock}` the stores commit. `LOCK_LOST` (nothing written) unless `holder`
    /// holds the lock at `epoch`; `USAGE` for a name that is not a data file name.
    pub fn fenced_write(
        &mut self,
        cell: &Value,
        now_ms: i64,
        request: wl::FencedWriteRequest,
    ) -> Result<Value, HostError> {
        let op = wl::LockOp::FencedWrite(request);
        match self.lock_decide(cell, now_ms, &op)? {
            wl::LockAnswer::Grant(g) => Ok(json!({
                "changes": g.changes.iter().map(change_json).collect::<Vec<_>>(),
                "lock": lock_json(&g.lock),
            })),
            _ => Err(HostError::internal("the core answered a fenced write with something other than a grant")),
        }
    }

    /// The receipt in `text`, validated, as JSON text; `RECEIPT_CORRUPT` / `RECEIPT_VERSION` naming `place`.
    pub fn receipt_parse(&mut self, text: &str, place: &str) -> Result<String, HostError> {
        let c = self.core.baton_core_commands();
        c.call_receipt_parse(&mut self.store, text, place).map_err(wasm_error)?.map_err(from_wit)
    }
}

/// JSON text of an open-schema value (a provider block, a receipt's summary) as its value; text that is
/// not JSON (the core never answers it) as a JSON string.
fn open_json(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_owned()))
}

fn resource_json(r: &wc::ResourceRef) -> Value {
    json!({ "adapter": r.adapter, "key": r.key, "provider": open_json(&r.provider), "id": r.id, "createdBy": r.created_by })
}

/// A scope report as the core's `scope-status` spells it in JSON, for `baton status --json` and
/// `baton ledger list --json`.
pub fn scope_report_json(s: &wc::ScopeReport) -> Value {
    let lock = s.lock.as_ref().map_or(Value::Null, |l| {
        let mut v = lock_json(&l.lock);
        v["expired"] = l.expired.into();
        v
    });
    let lock_state = match s.lock_state {
        wc::LockState::None => "none",
        wc::LockState::Expired => "expired",
        wc::LockState::Live => "live",
    };
    let refs = |list: &[wc::ResourceRef]| list.iter().map(resource_json).collect::<Vec<_>>();
    let conflicts: Vec<Value> =
        s.conflicts.iter().map(|c| json!({ "resource": resource_json(&c.resource), "scopes": c.scopes })).collect();
    json!({
        "lock": lock,
        "lockState": lock_state,
        "receipt": s.receipt.as_deref().map_or(Value::Null, open_json),
        "owns": refs(&s.owns),
        "inherited": refs(&s.inherited),
        "predecessor": s.predecessor,
        "handoverPending": s.handover_pending,
        "foreignCount": s.foreign_count,
        "conflicts": conflicts,
        "warnings": s.warnings,
    })
}
