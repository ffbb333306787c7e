//! Receipts: the record of what a scope owns (`latest.json`, and one `<runId>.json` per run).
//!
//! The format is the original tool's version-2 receipt (`reference/sponson-behaviour.md` §2.5) plus `epoch`.
//! Version 1 is migrated in memory; a newer version is `RECEIPT_VERSION`; anything unreadable is
//! `RECEIPT_CORRUPT` and is kept: baton never overwrites or forgets a receipt it cannot read. Fields baton
//! does not know survive every rewrite, in the receipt and in each ledger entry.

mod ledger;
mod parse;

pub(crate) use ledger::ReadEntry;
pub use ledger::{CreatedBy, LedgerEntry, ResourceRef, canonical_json, identity, owned_marker};
pub use parse::parse_receipt;

use crate::cell::{Cell, Change, to_file_json, validate_data_file};
use crate::error::CoreError;
use serde_json::{Map, Value};

/// The receipt file every reader looks at first.
pub use crate::cell::LATEST_FILE;
/// The receipt version this baton writes (and the newest it reads).
pub const RECEIPT_VERSION: u64 = 2;

/// A parsed receipt: every field as read (`doc`), with the ledger parsed out of it.
#[derive(Clone, Debug, PartialEq)]
pub struct Receipt {
    /// All fields in their original order, unknown ones included; `ledger` is a placeholder (`null`) for
    /// the parsed `ledger` below.
    pub doc: Map<String, Value>,
    /// What the scope owns (and relies on), in creation order.
    pub ledger: Vec<LedgerEntry>,
}

impl Receipt {
    /// A string field, or `""`.
    pub fn str(&self, key: &str) -> &str {
        self.doc.get(key).and_then(Value::as_str).unwrap_or_default()
    }

    /// Sets a field.
    pub fn set(&mut self, key: &str, value: impl Into<Value>) {
        self.doc.insert(key.to_owned(), value.into());
    }

    /// The position of the entry with `identity`.
    pub fn position(&self, identity: &str) -> Option<usize> {
        self.ledger.iter().position(|e| e.identity() == identity)
    }

    /// The receipt as JSON, `ledger` in its place.
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or_default()
    }

    /// The changes that store this receipt: `<runId>.json` and `latest.json`, the same content.
    pub fn changes(&self) -> Result<Vec<Change>, CoreError> {
        self.changes_with(to_file_json(self))
    }

    /// [`Self::changes`] for `value`, this receipt's [`Self::to_value`] computed once by the caller.
    pub fn changes_of(&self, value: &Value) -> Result<Vec<Change>, CoreError> {
        self.changes_with(to_file_json(value))
    }

    fn changes_with(&self, content: String) -> Result<Vec<Change>, CoreError> {
        let run_id = self.str("runId");
        validate_data_file(&format!("{run_id}.json"))
            .map_err(|_| CoreError::internal(format!("run id `{run_id}` cannot name a receipt file")))?;
        Ok(vec![
            Change::Write { file: format!("{run_id}.json"), content: content.clone() },
            Change::Write { file: LATEST_FILE.into(), content },
        ])
    }
}

/// The receipt as stored: the fields in their order, `ledger` in its place (appended when the receipt had
/// none), written straight from the parsed entries (no JSON tree in between: a ledger may hold 100,000).
impl serde::Serialize for Receipt {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let has_ledger = self.doc.contains_key("ledger");
        let mut map = s.serialize_map(Some(self.doc.len() + usize::from(!has_ledger)))?;
        for (k, v) in &self.doc {
            if k == "ledger" {
                map.serialize_entry(k, &self.ledger)?;
            } else {
                map.serialize_entry(k, v)?;
            }
        }
        if !has_ledger {
            map.serialize_entry("ledger", &self.ledger)?;
        }
        map.end()
    }
}

/// The receipt of a cell: `Ok(None)` when it has none; `RECEIPT_CORRUPT` / `RECEIPT_VERSION` otherwise.
pub fn read_receipt(cell: &Cell) -> Result<Option<Receipt>, CoreError> {
    cell.file(LATEST_FILE).map(|text| parse_receipt(text, &format!("{}/{LATEST_FILE}", cell.label()))).transpose()
}
