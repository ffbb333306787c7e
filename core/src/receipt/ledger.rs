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
    pub fn from_map(m: Map<String, Value>) -> Result<Self, String> {
        let mut fields = EntryFields::default();
        for (k, v) in m {
            match FIELDS.iter().position(|f| *f == k) {
                Some(i) => fields.known[i] = Some(v),
                None => {
                    fields.extra.insert(k, v);
                }
            }
        }
        Self::from_fields(fields)
    }

    /// [`Self::from_map`] on the fields as read (the last of a field named twice).
    pub(crate) fn from_fields(f: EntryFields) -> Result<Self, String> {
        fn text(v: Option<Value>, key: &str, required: bool) -> Result<String, String> {
            match v {
                Some(Value::String(s)) => Ok(s),
                None if !required => Ok(String::new()),
                None => Err(format!("missing field `{key}`")),
                Some(other) => Err(format!("invalid type for `{key}`: {other}, expected a string")),
            }
        }
        fn optional(v: Option<Value>, key: &str) -> Result<Option<String>, String> {
            match v {
                Some(Value::String(s)) => Ok(Some(s)),
                None | Some(Value::Null) => Ok(None),
                Some(other) => Err(format!("invalid type for `{key}`: {other}, expected a string or null")),
            }
        }
        let [adapter, op, provider, key, id, hash, label, created_by, line, parent] = f.known;
        let adapter = text(adapter, "adapter", true)?;
        let op = text(op, "op", false)?;
        let provider = provider.unwrap_or_else(empty_object);
        let key = text(key, "key", true)?;
        let id = text(id, "id", false)?;
        let hash = text(hash, "hash", false)?;
        let label = optional(label, "label")?;
        let created_by = text(created_by, "createdBy", true)?;
        let line = text(line, "line", false)?;
        let parent = optional(parent, "parent")?;
        Ok(Self { adapter, op, provider, key, id, hash, label, created_by, line, parent, extra: f.extra })
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

/// The field names of a ledger entry baton knows, in the order [`LedgerEntry::from_fields`] checks them.
const FIELDS: [&str; 10] = ["adapter", "op", "provider", "key", "id", "hash", "label", "createdBy", "line", "parent"];

/// The fields of one ledger entry as read, before their types are checked: the known ones by their index
/// in [`FIELDS`] (the last of a field named twice), the others in order.
#[derive(Debug, Default)]
pub(crate) struct EntryFields {
    known: [Option<Value>; 10],
    extra: Map<String, Value>,
    /// A known field was named twice (the derived deserializer refuses that; a receipt keeps the last).
    pub(crate) duplicate: bool,
}

impl EntryFields {
    /// `adapter`, `key` and `createdBy` are strings (what a receipt's ledger entry needs first).
    pub(crate) fn has_identity_strings(&self) -> bool {
        [0, 3, 7].iter().all(|&i| matches!(self.known[i], Some(Value::String(_))))
    }
}

/// One element of a ledger array read in one pass, straight from the JSON (no map per entry, no key
/// strings for the known fields): an object's fields, a string, or anything else (read and dropped, with
/// the same errors as reading it as a `Value`).
#[derive(Debug)]
// One at a time, consumed as soon as it is read: boxing the fields would cost an allocation per entry.
#[allow(clippy::large_enum_variant)]
pub(crate) enum ReadEntry {
    /// An object.
    Fields(EntryFields),
    /// A string.
    Text(String),
    /// Any other JSON value.
    Other,
}

impl<'de> Deserialize<'de> for ReadEntry {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(EntryVisitor)
    }
}

/// A key of an entry: the index of a known field, or another name.
enum FieldKey {
    Known(usize),
    Other(String),
}

struct FieldKeySeed;

impl<'de> serde::de::DeserializeSeed<'de> for FieldKeySeed {
    type Value = FieldKey;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<FieldKey, D::Error> {
        d.deserialize_str(self)
    }
}

impl serde::de::Visitor<'_> for FieldKeySeed {
    type Value = FieldKey;
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a field name")
    }
    fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<FieldKey, E> {
        Ok(FIELDS.iter().position(|f| *f == s).map_or_else(|| FieldKey::Other(s.to_owned()), FieldKey::Known))
    }
    fn visit_string<E: serde::de::Error>(self, s: String) -> Result<FieldKey, E> {
        Ok(FIELDS.iter().position(|f| *f == s).map_or(FieldKey::Other(s), FieldKey::Known))
    }
}

struct EntryVisitor;

impl<'de> serde::de::Visitor<'de> for EntryVisitor {
    type Value = ReadEntry;
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut m: A) -> Result<ReadEntry, A::Error> {
        let mut f = EntryFields::default();
        while let Some(key) = m.next_key_seed(FieldKeySeed)? {
            let value: Value = m.next_value()?;
            match key {
                FieldKey::Known(i) => f.duplicate |= f.known[i].replace(value).is_some(),
                FieldKey::Other(k) => {
                    f.extra.insert(k, value);
                }
            }
        }
        Ok(ReadEntry::Fields(f))
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, seq: A) -> Result<ReadEntry, A::Error> {
        // Read as a `Value` reads it (the same nesting limit and errors), then dropped.
        Value::deserialize(serde::de::value::SeqAccessDeserializer::new(seq))?;
        Ok(ReadEntry::Other)
    }
    fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<ReadEntry, E> {
        Ok(ReadEntry::Text(s.to_owned()))
    }
    fn visit_string<E: serde::de::Error>(self, s: String) -> Result<ReadEntry, E> {
        Ok(ReadEntry::Text(s))
    }
    fn visit_bool<E: serde::de::Error>(self, _: bool) -> Result<ReadEntry, E> {
        Ok(ReadEntry::Other)
    }
    fn visit_i64<E: serde::de::Error>(self, _: i64) -> Result<ReadEntry, E> {
        Ok(ReadEntry::Other)
    }
    fn visit_u64<E: serde::de::Error>(self, _: u64) -> Result<ReadEntry, E> {
        Ok(ReadEntry::Other)
    }
    fn visit_f64<E: serde::de::Error>(self, _: f64) -> Result<ReadEntry, E> {
        Ok(ReadEntry::Other)
    }
    fn visit_unit<E: serde::de::Error>(self) -> Result<ReadEntry, E> {
        Ok(ReadEntry::Other)
    }
    fn visit_none<E: serde::de::Error>(self) -> Result<ReadEntry, E> {
        Ok(ReadEntry::Other)
    }
    fn visit_some<D: serde::Deserializer<'de>>(self, d: D) -> Result<ReadEntry, D::Error> {
        d.deserialize_any(self)
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
    let mut out = String::with_capacity(adapter.len() + key.len() + 16);
    out.push_str(adapter);
    out.push('|');
    write_canonical(&mut out, provider);
    out.push('|');
    out.push_str(key);
    out
}

/// JSON with object keys sorted recursively and no whitespace.
pub fn canonical_json(v: &Value) -> String {
    let mut out = String::new();
    write_canonical(&mut out, v);
    out
}

/// [`canonical_json`] appended to `out`: one buffer, no text per node (identities are computed for every
/// ledger entry of every receipt a decision reads).
fn write_canonical(out: &mut String, v: &Value) {
    match v {
        Value::Object(m) => {
            out.push('{');
            let mut write = |i: usize, k: &str, v: &Value| {
                if i > 0 {
                    out.push(',');
                }
                write_string(out, k);
                out.push(':');
                write_canonical(out, v);
            };
            // Usually written in order already (a provider block has a key or two): no sorting, no list.
            if m.keys().is_sorted() {
                for (i, (k, v)) in m.iter().enumerate() {
                    write(i, k, v);
                }
            } else {
                let mut keys: Vec<&String> = m.keys().collect();
                keys.sort_unstable();
                for (i, k) in keys.into_iter().enumerate() {
                    write(i, k, &m[k.as_str()]);
                }
            }
            out.push('}');
        }
        Value::Array(a) => {
            out.push('[');
            for (i, item) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(out, item);
            }
            out.push(']');
        }
        Value::String(s) => write_string(out, s),
        other => out.push_str(&other.to_string()),
    }
}

/// `s` as a JSON string literal, as `serde_json` writes it.
fn write_string(out: &mut String, s: &str) {
    if s.bytes().all(|b| b >= 0x20 && b != b'"' && b != b'\\' && b < 0x7f) {
        out.push('"');
        out.push_str(s);
        out.push('"');
    } else {
        out.push_str(&Value::String(s.to_owned()).to_string());
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

    /// The canonical form as it was first written (a string per node), to compare the one-buffer writer with.
    fn canonical_reference(v: &Value) -> String {
        match v {
            Value::Object(m) => {
                let mut keys: Vec<&String> = m.keys().collect();
                keys.sort();
                let parts: Vec<String> = keys
                    .into_iter()
                    .map(|k| format!("{}:{}", Value::String(k.clone()), canonical_reference(&m[k])))
                    .collect();
                format!("{{{}}}", parts.join(","))
            }
            Value::Array(a) => format!("[{}]", a.iter().map(canonical_reference).collect::<Vec<_>>().join(",")),
            other => other.to_string(),
        }
    }

    #[test]
    fn the_canonical_writer_matches_the_reference() {
        let values = [
            json!({}),
            json!({"team": "web", "a": [1, 2.5, null, true], "z": {"y": "x", "b": "\"q\" \\ \n \u{1} é 𝄞 \u{7f}"}}),
            json!([{"b": 1, "a": 2}, "s", -3, 1e300]),
            json!({"ключ": "значение", "": ""}),
        ];
        for v in values {
            assert_eq!(canonical_json(&v), canonical_reference(&v), "{v}");
        }
        assert_eq!(
            identity("a", &json!({"k": "v"}), "key"),
            format!("a|{}|key", canonical_reference(&json!({"k": "v"})))
        );
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
