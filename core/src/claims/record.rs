//! The claim cell and its record.

use crate::cell::{Cell, Change, to_file_json};
use crate::error::{CoreError, ErrorCode};
use crate::receipt::identity;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The environment of the claim cells; reserved, never a run's environment.
pub const CLAIMS_ENV: &str = "_claims";
/// The file of a claim cell.
pub use crate::cell::CLAIM_FILE;
/// The claim format this baton writes: 2 adds the cell's `generation` and the free record (version 1
/// claims read as generation 0).
pub const CLAIM_VERSION: u64 = 2;

/// The claim cell of a resource identity in environment `env`: `(_claims, <32 hex>)`.
pub fn claim_cell(env: &str, adapter: &str, provider: &Value, key: &str) -> (String, String) {
    let id = identity(adapter, provider, key);
    let digest = crate::names::sha256_hex(format!("{env}\n{id}").as_bytes());
    (CLAIMS_ENV.to_owned(), digest[..32].to_owned())
}

/// Who owns one resource identity of one environment.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ClaimRecord {
    /// [`CLAIM_VERSION`].
    pub version: u64,
    /// The environment of the resource.
    pub environment: String,
    /// The identity (`adapter|provider|key`).
    pub identity: String,
    /// The owning scope.
    pub scope: String,
    /// The epoch of the owning scope's lock when it claimed (or re-stamped) it.
    pub epoch: u64,
    /// The holder that claimed it.
    pub holder: String,
    /// When (ISO-8601 UTC).
    pub at: String,
    /// The stale claim this one replaced (`{scope, epoch}`), for the record.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub taken_from: Option<Value>,
    /// How many times the claim cell was written, this write included ([`ClaimState::generation`]).
    #[serde(default)]
    pub generation: u64,
    /// Fields this version does not know, kept.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// What `claim-free` leaves in the claim cell instead of deleting the claim: nobody claims the identity,
/// and the cell's generation goes on counting (a take that listed the environment before a take and a
/// free in between must see that something happened: [`super::take`]).
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct FreeRecord {
    /// [`CLAIM_VERSION`].
    pub version: u64,
    /// The environment of the resource.
    pub environment: String,
    /// The identity (`adapter|provider|key`).
    pub identity: String,
    /// Always `true`: what tells this record from a claim.
    pub free: bool,
    /// The claim it ended (`{scope, epoch}`).
    pub freed_from: Value,
    /// When (ISO-8601 UTC).
    pub at: String,
    /// How many times the claim cell was written, this write included.
    pub generation: u64,
}

impl FreeRecord {
    /// The change that stores it.
    pub fn change(&self) -> Change {
        Change::Write { file: CLAIM_FILE.into(), content: to_file_json(self) }
    }
}

/// What a claim cell holds.
#[derive(Clone, Debug, PartialEq)]
pub enum ClaimState {
    /// Nothing was ever claimed there.
    Never,
    /// A scope claims the identity.
    Claimed(ClaimRecord),
    /// A claim was freed.
    Free(FreeRecord),
}

impl ClaimState {
    /// The live claim, if any.
    pub fn claim(&self) -> Option<&ClaimRecord> {
        match self {
            Self::Claimed(c) => Some(c),
            Self::Never | Self::Free(_) => None,
        }
    }

    /// How many times the cell was written (0: never, or only by a version 1 baton): every write of a claim
    /// or a free record counts one more, so two reads that see the same generation saw no write between.
    pub fn generation(&self) -> u64 {
        match self {
            Self::Never => 0,
            Self::Claimed(c) => c.generation,
            Self::Free(f) => f.generation,
        }
    }
}

impl ClaimRecord {
    /// The change that stores it.
    pub fn change(&self) -> Change {
        Change::Write { file: CLAIM_FILE.into(), content: to_file_json(self) }
    }
}

/// The claim of the cell, if any (a free record is none). An unreadable one is `RECEIPT_CORRUPT` (an
/// ownership record baton never overwrites on a guess).
pub fn read_claim(cell: &Cell) -> Result<Option<ClaimRecord>, CoreError> {
    Ok(read_claim_state(cell)?.claim().cloned())
}

/// What the claim cell holds: nothing, a claim or a free record. Unreadable: `RECEIPT_CORRUPT`; a version
/// above [`CLAIM_VERSION`]: `RECEIPT_VERSION`.
pub fn read_claim_state(cell: &Cell) -> Result<ClaimState, CoreError> {
    let Some(text) = cell.file(CLAIM_FILE) else {
        return Ok(ClaimState::Never);
    };
    let corrupt = |e: String| {
        CoreError::new(
            ErrorCode::ReceiptCorrupt,
            format!(
                "The ownership claim {}/{}/{CLAIM_FILE} cannot be read ({e}). baton never overwrites an ownership record it cannot read: inspect it, and delete it only if no scope should own that resource.",
                cell.env, cell.scope
            ),
        )
        .with("environment", cell.env.clone())
        .with("scope", cell.scope.clone())
    };
    let value: Value = serde_json::from_str(text).map_err(|e| corrupt(e.to_string()))?;
    let version = value.get("version").and_then(Value::as_u64).unwrap_or(0);
    if version > CLAIM_VERSION {
        return Err(CoreError::new(
            ErrorCode::ReceiptVersion,
            format!(
                "The ownership claim {}/{}/{CLAIM_FILE} has version {version}; this baton reads up to {CLAIM_VERSION}. Upgrade baton.",
                cell.env, cell.scope
            ),
        ));
    }
    if value.get("free") == Some(&Value::Bool(true)) {
        return serde_json::from_value(value).map(ClaimState::Free).map_err(|e| corrupt(e.to_string()));
    }
    serde_json::from_value(value).map(ClaimState::Claimed).map_err(|e| corrupt(e.to_string()))
}
