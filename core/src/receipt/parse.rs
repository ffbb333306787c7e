//! Parsing, validation and migration of receipts.

use super::{LedgerEntry, RECEIPT_VERSION, Receipt};
use crate::error::{CoreError, ErrorCode};
use serde_json::{Map, Value, json};

/// Parses the receipt text read at `place` (for messages).
///
/// - not JSON, no numeric `version`, a version that is not an integer >= 1, no `lines` object, `scope` or
///   `environment` string; for version 2 no `ledger` array, `history` array or `hashKey` string; a ledger
///   entry without string `adapter`, `key` and `createdBy`: `RECEIPT_CORRUPT`;
/// - a version above 2: `RECEIPT_VERSION`;
/// - version 1: migrated (ledger built from the lines' resources, `hashKey` `""`).
pub fn parse_receipt(text: &str, place: &str) -> Result<Receipt, CoreError> {
    let corrupt = |why: &str| {
        CoreError::new(
            ErrorCode::ReceiptCorrupt,
            format!("The receipt at {place} cannot be read: {why}. baton keeps it as it is and will not overwrite it; repair or move it by hand."),
        )
        .with("where", place)
    };
    let value: Value = serde_json::from_str(text).map_err(|e| corrupt(&format!("not valid JSON ({e})")))?;
    let Value::Object(mut doc) = value else { return Err(corrupt("not a JSON object")) };
    let version = doc.get("version").and_then(Value::as_f64).ok_or_else(|| corrupt("no numeric `version`"))?;
    if version > RECEIPT_VERSION as f64 {
        let raw = doc.get("version").cloned().unwrap_or_default();
        return Err(CoreError::new(
            ErrorCode::ReceiptVersion,
            format!(
                "The receipt at {place} is version {raw}, written by a newer baton; this baton understands versions 1-2. It is kept as it is and nothing was written: upgrade baton to the version that wrote it."
            ),
        )
        .with("where", place)
        .with("version", raw));
    }
    if version.fract() != 0.0 || version < 1.0 {
        return Err(corrupt(&format!("`version` {version} is not 1 or 2")));
    }
    if !doc.get("lines").is_some_and(Value::is_object) {
        return Err(corrupt("no `lines` object"));
    }
    for key in ["scope", "environment"] {
        if !doc.get(key).is_some_and(Value::is_string) {
            return Err(corrupt(&format!("no string `{key}`")));
        }
    }
    if version == 1.0 {
        return Ok(migrate_v1(doc));
    }
    if !doc.get("history").is_some_and(Value::is_array) {
        return Err(corrupt("no `history` array"));
    }
    if !doc.get("hashKey").is_some_and(Value::is_string) {
        return Err(corrupt("no string `hashKey`"));
    }
    let Some(Value::Array(raw)) = doc.get_mut("ledger").map(std::mem::take) else {
        return Err(corrupt("no `ledger` array"));
    };
    let mut ledger = Vec::with_capacity(raw.len());
    for (i, entry) in raw.into_iter().enumerate() {
        let ok = ["adapter", "key", "createdBy"].iter().all(|k| entry.get(k).is_some_and(Value::is_string));
        if !ok {
            return Err(corrupt(&format!("ledger entry {i} lacks a string adapter, key or createdBy")));
        }
        let Value::Object(map) = entry else { return Err(corrupt(&format!("ledger entry {i} is not an object"))) };
        ledger.push(LedgerEntry::from_map(map).map_err(|e| corrupt(&format!("ledger entry {i}: {e}")))?);
    }
    Ok(Receipt { doc, ledger })
}

/// Builds the version-2 view of a version-1 receipt: the ledger from the lines' resources (destroyed and null
/// lines skipped, deduplicated by adapter and key, provider `{}`), history from the context's commit.
fn migrate_v1(mut doc: Map<String, Value>) -> Receipt {
    let mut ledger: Vec<LedgerEntry> = Vec::new();
    let lines = doc.get("lines").and_then(Value::as_object).cloned().unwrap_or_default();
    for (line_id, line) in &lines {
        if line.is_null() || line.get("status").and_then(Value::as_str) == Some("destroyed") {
            continue;
        }
        let adapter = line.get("adapter").and_then(Value::as_str).unwrap_or_default();
        let line_created = line.get("createdBy").and_then(Value::as_str);
        for r in line.get("resources").and_then(Value::as_array).into_iter().flatten() {
            let Some(key) = r.get("key").and_then(Value::as_str) else { continue };
            if ledger.iter().any(|e| e.adapter == adapter && e.key == key) {
                continue;
            }
            let created = r.get("createdBy").and_then(Value::as_str).or(line_created).unwrap_or("adopted");
            ledger.push(LedgerEntry {
                adapter: adapter.to_owned(),
                op: line.get("op").and_then(Value::as_str).unwrap_or_default().to_owned(),
                provider: json!({}),
                key: key.to_owned(),
                id: r.get("id").and_then(Value::as_str).unwrap_or_default().to_owned(),
                hash: r.get("hash").and_then(Value::as_str).unwrap_or_default().to_owned(),
                label: r.get("label").and_then(Value::as_str).map(str::to_owned),
                created_by: created.to_owned(),
                line: line_id.clone(),
                parent: None,
                extra: Map::new(),
            });
        }
    }
    let sha = doc.get("ctx").and_then(|c| c.pointer("/git/sha")).and_then(Value::as_str).map(str::to_owned);
    let at = ["finishedAt", "startedAt"]
        .iter()
        .find_map(|k| doc.get(*k).and_then(Value::as_str).filter(|s| !s.is_empty()))
        .unwrap_or_default()
        .to_owned();
    doc.insert("version".into(), json!(RECEIPT_VERSION));
    // A placeholder keeps the field order stable across a rewrite (see `Receipt::to_value`).
    doc.insert("ledger".into(), Value::Null);
    doc.insert("history".into(), sha.map_or_else(|| json!([]), |sha| json!([{ "sha": sha, "at": at }])));
    doc.insert("hashKey".into(), json!(""));
    Receipt { doc, ledger }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v2(ledger: &str) -> String {
        format!(
            r#"{{"version":2,"runId":"run-1","environment":"preview","scope":"pr-1","status":"complete","lines":{{}},"ledger":{ledger},"history":[],"hashKey":"","custom":{{"keep":true}}}}"#
        )
    }

    #[test]
    fn reads_v2_and_keeps_unknown_fields() {
        let r = parse_receipt(
            &v2(r#"[{"adapter":"a","key":"k","createdBy":"sponson","provider":{"p":1},"id":"i","x":2}]"#),
            "t",
        )
        .unwrap();
        assert_eq!(r.ledger[0].extra["x"], 2);
        let back = r.to_value();
        assert_eq!(back["custom"]["keep"], true);
        assert_eq!(back["ledger"][0]["x"], 2);
        let keys: Vec<&String> = back.as_object().unwrap().keys().collect();
        assert_eq!(keys.iter().position(|k| *k == "ledger"), Some(6), "ledger stays where it was");
    }

    #[test]
    fn refuses_newer_and_corrupt_receipts() {
        assert_eq!(parse_receipt(r#"{"version":3}"#, "t").unwrap_err().code, ErrorCode::ReceiptVersion);
        for bad in [
            "{",
            "[]",
            r#"{"version":"2"}"#,
            r#"{"version":0,"lines":{},"scope":"s","environment":"e"}"#,
            &v2("{}"),
            &v2(r#"[{"adapter":"a"}]"#),
        ] {
            assert_eq!(parse_receipt(bad, "t").unwrap_err().code, ErrorCode::ReceiptCorrupt, "{bad}");
        }
    }

    #[test]
    fn migrates_v1() {
        let v1 = r#"{"version":1,"environment":"preview","scope":"pr-1","startedAt":"s","finishedAt":"f","ctx":{"git":{"sha":"abc"}},
            "lines":{"db":{"adapter":"neon","op":"branch","createdBy":"sponson","resources":[{"key":"b1","id":"x"},{"key":"b1","id":"dup"}]},
                     "gone":{"adapter":"neon","status":"destroyed","resources":[{"key":"b2"}]},"nil":null}}"#;
        let r = parse_receipt(v1, "t").unwrap();
        assert_eq!(r.ledger.len(), 1);
        assert_eq!(
            (r.ledger[0].key.as_str(), r.ledger[0].id.as_str(), r.ledger[0].created_by()),
            ("b1", "x", crate::receipt::CreatedBy::Owned)
        );
        assert_eq!(r.doc["history"], json!([{"sha": "abc", "at": "f"}]));
        assert_eq!(r.doc["version"], 2);
        let again = parse_receipt(&r.to_value().to_string(), "t").unwrap();
        assert_eq!(again, r, "the migration round-trips");
    }
}
