//! Ledger entries: what a scope owns, what it relies on, and what it is about to create.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// How an entry came into the ledger.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CreatedBy {
    /// Created (or claimed) by this scope: destroyed with it. Written `baton`; the original's `sponson` reads
    /// the same.
    Owned,
    /// Relied on, not owned: destroy only forgets it.
    Adopted,
    /// A write-ahead intent: a create is (or was) in flight; it may or may not exist.
    Intent,
}

impl CreatedBy {
    /// Reads the `createdBy` field (`baton`, `sponson`, `adopted`, `intent`).
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "baton" | "sponson" => Some(Self::Owned),
            "adopted" => Some(Self::Adopted),
            "intent" => Some(Self::Intent),
            _ => None,
        }
    }

    /// The spelling baton writes.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Owned => "baton",
            Self::Adopted => "adopted",
            Self::Intent => "intent",
        }
    }
}

/// The spelling an owned entry is written with: `baton` unless `setting` (`BATON_CREATED_BY`, as the host
/// read it; blank is unset) names the original tool's `sponson`, which the original counts as its own for
/// apply and destroy and baton reads exactly as `baton`. Anything else is `USAGE`.
pub fn owned_marker(setting: Option<&str>) -> Result<&'static str, crate::CoreError> {
    match setting.map(str::trim).filter(|s| !s.is_empty()) {
        None | Some("baton") => Ok("baton"),
        Some("sponson") => Ok("sponson"),
        Some(other) => Err(crate::CoreError::usage(format!(
            "BATON_CREATED_BY must be `baton` (the default) or `sponson` (the original tool's marker, for stores shared with it), not `{other}`"
        ))),
    }
}

/// One ledger entry (original field names; unknown fields kept in `extra`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LedgerEntry {
    /// The adapter (provider kind), e.g. `vercel`.
    pub adapter: String,
    /// The operation that manages it (informational).
    #[serde(default)]
    pub op: String,
    /// The provider block: part of the identity.
    #[serde(default = "empty_object")]
    pub provider: Value,
    /// The resource key within the adapter.
    pub key: String,
    /// The provider's id; `""` for an intent.
    #[serde(default)]
    pub id: String,
    /// The original's keyed content hash; `""` where baton recorded or inherited the entry.
    #[serde(default)]
    pub hash: String,
    /// A human label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// `baton` (owned), `adopted` or `intent` (the original's `sponson` is read as owned).
    pub created_by: String,
    /// The line that manages it (informational in baton).
    #[serde(default)]
    pub line: String,
    /// The parent object it lives in, when writes to it take a parent-object lock.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
    /// Fields baton does not know.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

fn empty_object() -> Value {
    Value::Object(Map::new())
}

impl LedgerEntry {
    /// Reads an entry from its JSON object exactly as the derived `Deserialize` does (the same defaults, a
    /// string field that is not a string refused, unknown fields kept in order in `extra`), without serde's
    /// buffering of a flattened map: a receipt's ledger may hold 100,000 entries. Call it on each entry of
    /// a parsed receipt; the error says which field is wrong.
    pub fn from_map(mut m: Map<String, Value>) -> Result<Self, String> {
        fn text(m: &mut Map<String, Value>, key: &str, required: bool) -> Result<String, String> {
            match m.shift_remove(key) {
                Some(Value::String(s)) => Ok(s),
                None if !required => Ok(String::new()),
                None => Err(format!("missing field `{key}`")),
                Some(other) => Err(format!("invalid type for `{key}`: {other}, expected a string")),
            }
        }
        fn optional(m: &mut Map<String, Value>, key: &str) -> Result<Option<String>, String> {
            match m.shift_remove(key) {
                Some(Value::String(s)) => Ok(Some(s)),
                None | Some(Value::Null) => Ok(None),
                Some(other) => Err(format!("invalid type for `{key}`: {other}, expected a string or null")),
            }
        }
        let adapter = text(&mut m, "adapter", true)?;
        let op = text(&mut m, "op", false)?;
        let provider = m.shift_remove("provider").unwrap_or_else(empty_object);
        let key = text(&mut m, "key", true)?;
        let id = text(&mut m, "id", false)?;
        let hash = text(&mut m, "hash", false)?;
        let label = optional(&mut m, "label")?;
        let created_by = text(&mut m, "createdBy", true)?;
        let line = text(&mut m, "line", false)?;
        let parent = optional(&mut m, "parent")?;
        Ok(Self { adapter, op, provider, key, id, hash, label, created_by, line, parent, extra: m })
    }

    /// `adapter | canonical JSON of provider | key`: what makes two entries the same resource.
    pub fn identity(&self) -> String {
        identity(&self.adapter, &self.provider, &self.key)
    }

    /// How the entry came in; unknown spellings count as owned (never dropped, never adopted by accident).
    pub fn created_by(&self) -> CreatedBy {
        CreatedBy::parse(&self.created_by).unwrap_or(CreatedBy::Owned)
    }

    /// The resource as hosts name it.
    pub fn to_ref(&self) -> ResourceRef {
        ResourceRef {
            adapter: self.adapter.clone(),
            key: self.key.clone(),
            provider: self.provider.clone(),
            id: self.id.clone(),
            // As written: `sponson` stays `sponson` (both mean owned here).
            created_by: self.created_by.clone(),
        }
    }
}

/// A resource as commands and events name it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceRef {
    /// The adapter.
    pub adapter: String,
    /// The key.
    pub key: String,
    /// The provider block.
    pub provider: Value,
    /// The provider id (`""` for an intent).
    pub id: String,
    /// As written in the ledger: `baton` or `sponson` (owned), `adopted` or `intent`.
    pub created_by: String,
}

/// The identity of a resource: `adapter | canonical JSON of provider | key`.
pub fn identity(adapter: &str, provider: &Value, key: &str) -> String {
    format!("{adapter}|{}|{key}", canonical_json(provider))
}

/// JSON with object keys sorted recursively and no whitespace.
pub fn canonical_json(v: &Value) -> String {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            let parts: Vec<String> =
                keys.into_iter().map(|k| format!("{}:{}", Value::String(k.clone()), canonical_json(&m[k]))).collect();
            format!("{{{}}}", parts.join(","))
        }
        Value::Array(a) => format!("[{}]", a.iter().map(canonical_json).collect::<Vec<_>>().join(",")),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn from_map_reads_as_the_derived_deserializer_does() {
        let entries = [
            json!({"adapter": "v", "key": "k", "createdBy": "baton"}),
            json!({"z": 1, "adapter": "v", "provider": {"t": 1}, "key": "k", "id": "i", "hash": "h", "label": "l",
                   "createdBy": "intent", "line": "x", "parent": "p", "inheritedFrom": "b", "a": [1]}),
            json!({"adapter": "v", "key": "k", "createdBy": "baton", "label": null, "parent": null, "provider": null}),
        ];
        for e in entries {
            let derived: LedgerEntry = serde_json::from_value(e.clone()).unwrap();
            let Value::Object(m) = e else { unreachable!() };
            let manual = LedgerEntry::from_map(m).unwrap();
            assert_eq!(manual, derived);
            assert_eq!(serde_json::to_string(&manual).unwrap(), serde_json::to_string(&derived).unwrap());
        }
        for bad in [
            json!({"adapter": "v", "key": "k", "createdBy": "baton", "id": 1}),
            json!({"adapter": "v", "key": "k", "createdBy": "baton", "op": null}),
            json!({"adapter": "v", "key": "k", "createdBy": "baton", "label": 2}),
            json!({"adapter": "v", "key": "k"}),
        ] {
            assert!(serde_json::from_value::<LedgerEntry>(bad.clone()).is_err(), "{bad}");
            let Value::Object(m) = bad else { unreachable!() };
            assert!(LedgerEntry::from_map(m).is_err());
        }
    }

    #[test]
    fn identity_is_canonical() {
        assert_eq!(
            identity("v", &json!({"b": 1, "a": {"d": [1, {"z": 0, "y": 1}], "c": "x"}}), "k"),
            "v|{\"a\":{\"c\":\"x\",\"d\":[1,{\"y\":1,\"z\":0}]},\"b\":1}|k"
        );
        assert_eq!(identity("v", &json!({}), "k"), "v|{}|k");
    }
}
