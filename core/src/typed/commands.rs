//! The small decisions of baton's commands outside a run, typed: what the WIT interface `commands`
//! (`wit/commands.wit`) carries, as Rust types, and the functions that answer them.
//!
//! Each request is the serde type `api::invoke` reads and each answer serialises to exactly the JSON the
//! operation answered before it was typed, so the JSON operations (the npm package's), the conformance
//! corpus and the typed calls cannot drift. The rest of the interface's answers are typed where they are
//! decided: [`crate::stores::spec::StoreSpec`], [`crate::ownership::ScopeStatus`],
//! [`crate::ownership::Approval`], [`crate::command_line::CommandLineAnswer`].

use crate::cell::Cell;
use crate::error::CoreError;
use crate::ownership::{self, OtherScope};
use crate::time::UnixMs;
use serde::{Deserialize, Serialize};

/// `succession`: `{scope, branch?, pr?, ttlMs?}`.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SuccessionRequest {
    /// The run's scope.
    pub scope: String,
    /// Its branch (a pull request's head branch).
    #[serde(default)]
    pub branch: Option<String>,
    /// Its pull request.
    #[serde(default)]
    pub pr: Option<u64>,
    /// The run's lease TTL, which bounds the handover's lock (`handoverTtlMs`).
    #[serde(default)]
    pub ttl_ms: Option<u64>,
}

/// `{predecessor, handoverTtlMs}`: the scope a run inherits from, and how long its handover may hold the
/// predecessor's lock.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Succession {
    /// `branch-<head>` for a pull request scope on a branch, else none.
    pub predecessor: Option<String>,
    /// 60 s, or the run's TTL when shorter.
    pub handover_ttl_ms: u64,
}

/// The predecessor of `r.scope` and the TTL of the handover's lock on it. Never fails.
pub fn succession(r: &SuccessionRequest) -> Succession {
    Succession {
        predecessor: ownership::predecessor_of(&r.scope, r.branch.as_deref(), r.pr),
        handover_ttl_ms: ownership::handover_ttl_ms(r.ttl_ms),
    }
}

/// `parent-cell`: `{identity, secrets?}`.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ParentCellRequest {
    /// The parent object's identity (`auth0:tenant:client:abc`).
    pub identity: String,
    /// Values that must not appear in it (credentials of the process).
    #[serde(default)]
    pub secrets: Vec<String>,
}

/// `{env: "_locks", scope: <32 hex>, label}`: the lock cell of a parent object.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ParentCell {
    /// Always `_locks`.
    pub env: String,
    /// The first 32 hex digits of sha256(identity).
    pub scope: String,
    /// How messages name the cell: `parent object <identity>`.
    pub label: String,
}

/// The cell of the parent object `r.identity`; `USAGE` for an empty identity or one carrying a secret.
pub fn parent_cell(r: &ParentCellRequest) -> Result<ParentCell, CoreError> {
    let (env, scope) = ownership::parent_cell(&r.identity, &r.secrets)?;
    Ok(ParentCell { env, scope, label: format!("parent object {}", r.identity) })
}

/// `approval`: `{env, approvedBy?}`.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ApprovalRequest {
    /// The environment the run writes to.
    pub env: String,
    /// Who approved it.
    #[serde(default)]
    pub approved_by: Option<String>,
}

/// `scope-status`: `{cell, nowMs, others, predecessor?}`.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StatusRequest {
    /// The scope's cell.
    pub cell: Cell,
    /// Wall clock (lock expiry).
    pub now_ms: UnixMs,
    /// The other scopes of the environment with their `latest.json`.
    #[serde(default)]
    pub others: Vec<OtherScope>,
    /// The scope's predecessor (`succession`).
    #[serde(default)]
    pub predecessor: Option<String>,
}

/// `receipt-parse`: `{text, place}`.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReceiptParseRequest {
    /// The receipt file's text.
    pub text: String,
    /// Where it was read (`env/scope/latest.json`), for the refusal's message.
    pub place: String,
}

/// The receipt in `text`, validated (version 1 migrated), as JSON text: its body is open by design (baton
/// keeps the fields it does not know). `RECEIPT_CORRUPT` / `RECEIPT_VERSION` naming `place`.
pub fn receipt_parse(text: &str, place: &str) -> Result<String, CoreError> {
    let receipt = crate::receipt::parse_receipt(text, place)?;
    serde_json::to_string(&receipt.to_value()).map_err(|e| CoreError::internal(e.to_string()))
}
