//! The configuration, actions and answer of one ownership change ([`super::ChangeMachine`]).

use crate::error::CoreError;
use crate::ownership::Resource;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// One ledger change of a run's scope: what `baton ledger intend|record|forget|check` and the npm
/// package's `lease.intend|record|forget|check` make.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ChangeConfig {
    /// The run's environment.
    pub env: String,
    /// The run's scope.
    pub scope: String,
    /// The run's holder (the fence). Required for intend, record and forget; a check without it only reads.
    #[serde(default)]
    pub holder: Option<String>,
    /// The run's epoch (the fence), with `holder`.
    #[serde(default)]
    pub epoch: Option<u64>,
    /// The scope's predecessor (`succession`), whose resources it inherits.
    #[serde(default)]
    pub predecessor: Option<String>,
    /// The resource.
    pub resource: Resource,
    /// What to do.
    pub op: ChangeOp,
    /// `record` only: the marker an entry that becomes owned is written with (`BATON_CREATED_BY`).
    #[serde(default)]
    pub owned_marker: Option<String>,
}

/// The change.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase", deny_unknown_fields)]
pub enum ChangeOp {
    /// A write-ahead intent before a create: the claim first, then the fenced intent.
    Intend,
    /// The resource exists with provider id `id`: the claim first, then the fenced record.
    Record {
        /// The provider id.
        id: String,
    },
    /// The resource is gone: the fenced forget, then the claim is freed.
    Forget,
    /// May the run rely on it (`change` false: a foreign one is recorded as adopted when fenced), or
    /// create or change it (`change` true: the ledger check and a read-only take of the claim)?
    Check {
        /// Create or change, not only rely on.
        change: bool,
    },
}

impl ChangeOp {
    /// The fenced ledger operation of the change (`ledger-intend`, ...), as the JSON surface names it.
    pub fn ledger_op(&self) -> &'static str {
        match self {
            Self::Intend => "ledger-intend",
            Self::Record { .. } => "ledger-record",
            Self::Forget => "ledger-forget",
            Self::Check { .. } => "ledger-check",
        }
    }
}

/// A cell to load and decide on (see [`super::ChangeMachine::apply`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Load {
    /// Correlates `apply` and the outcome.
    pub id: u64,
    /// The cell.
    pub env: String,
    /// The cell.
    pub scope: String,
    /// `true`: a transaction (the changes `apply` returns are committed with one compare-and-swap, and
    /// `apply` is called again on the new snapshot after a conflict); `false`: a read (no lock, nothing is
    /// written; `apply` returns no changes).
    pub write: bool,
}

/// What the host does next.
#[derive(Clone, Debug, PartialEq)]
pub enum ChangeAction {
    /// Load a cell, call `apply`, commit or read, then report with `handle_outcome`.
    Load(Load),
    /// List the scopes of `env` with their `latest.json` text and report with `handle_listing`.
    List {
        /// Correlates the listing.
        id: u64,
        /// The environment.
        env: String,
    },
    /// The change is over.
    Done(ChangeAnswer),
    /// The change was refused or failed (`OWNED_BY_OTHER_SCOPE`, `LOCK_LOST`, `STORE_CONTENDED`, the
    /// store's error, ...); a claim this change took was given back first.
    Failed(CoreError),
}

/// What a change answers.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ChangeAnswer {
    /// How the claim was got (intend, record, a check with `change`): `held`, `taken`, `restamped` or
    /// `inherited`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub claim: Option<String>,
    /// The run's receipt after the write (intend, record, forget, an adopting check): open schema.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub receipt: Option<Value>,
    /// forget: whether the ledger listed the resource.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub forgotten: Option<bool>,
    /// check: `own`, `inherited`, `foreign` or `none`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub relation: Option<String>,
    /// check: the owning scope of a foreign resource.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    /// check: how the run's own entry was written (`baton`, `intent`, `adopted`, ...).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub created_by: Option<String>,
    /// check: the foreign resource was recorded as adopted.
    pub adopted: bool,
    /// What to tell people (e.g. a claim that could not be freed after a forget).
    pub warnings: Vec<String>,
}

/// The resource as the JSON requests carry it (every field it has).
pub(crate) fn resource_json(r: &Resource) -> Value {
    let mut v = r.to_value();
    for (k, field) in [("op", &r.op), ("label", &r.label), ("parent", &r.parent)] {
        if let Some(s) = field {
            v[k] = json!(s);
        }
    }
    v
}
