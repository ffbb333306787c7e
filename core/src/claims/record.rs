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
/// The claim format this baton writes.
pub const CLAIM_VERSION: u64 = 1;

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
    /// Fields this version does not know, kept.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ClaimRecord {
    /// The change that stores it.
    pub fn change(&self) -> Change {
        Change::Write { file: CLAIM_FILE.into(), content: to_file_json(self) }
    }
}

/// The claim of the cell, if any. An unreadable one is `RECEIPT_CORRUPT` (an ownership record baton never
/// overwrites on a guess).
pub fn read_claim(cell: &Cell) -> Result<Option<ClaimRecord>, CoreError> {
    let Some(text) = cell.file(CLAIM_FILE) else {
        return Ok(None);
    };
    let record: ClaimRecord = serde_json::from_str(text).map_err(|e| {
        CoreError::new(
            ErrorCode::ReceiptCorrupt,
            format!(
                "The ownership claim {}/{}/{CLAIM_FILE} cannot be read ({e}). baton never overwrites an ownership record it cannot read: inspect it, and delete it only if no scope should own that resource.",
                cell.env, cell.scope
            ),
        )
        .with("environment", cell.env.clone())
        .with("scope", cell.scope.clone())
    })?;
    if record.version > CLAIM_VERSION {
        return Err(CoreError::new(
            ErrorCode::ReceiptVersion,
            format!(
                "The ownership claim {}/{}/{CLAIM_FILE} has version {}; this baton reads up to {CLAIM_VERSION}. Upgrade baton.",
                cell.env, cell.scope, record.version
            ),
        ));
    }
    Ok(Some(record))
}
