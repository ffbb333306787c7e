//! Parsing, validation and migration of receipts.

use super::ledger::ReadEntry;
use super::{LedgerEntry, RECEIPT_VERSION, Receipt};
use crate::error::{CoreError, ErrorCode};
use serde::Deserialize;
use serde::de::value::{MapAccessDeserializer, SeqAccessDeserializer};
use serde::de::{MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value, json};

/// Parses the receipt text read at `place` (for messages).
///
/// - not JSON, no numeric `version`, a version that is not an integer >= 1, no `lines` object, `scope` or
///   `environment` string; for version 2 no `ledger` array, `history` array or `hashKey` string; a ledger
///   entry without string `adapter`, `key` and `createdBy`: `RECEIPT_CORRUPT`;
/// - a version above 2: `RECEIPT_VERSION`;
/// - version 1: migrated (ledger built from the lines' resources, `hashKey` `""`).
pub fn parse_receipt(text: &str, place: &str) -> Result<Receipt, CoreError> {
    // serde_json (built with `raw_value`) reads an object whose first key is its private token
    // `$serde_json::private::RawValue` as raw JSON wherever a `Value` is read; the one-pass visitors read
    // that key as a field. A text in which the key could be spelt (literally, or through `\u` escapes) is
    // read the way it always was, so every receipt reads exactly as before.
    if text.contains("RawValue") || text.contains("\\u") {
        return parse_via_value(text, place);
    }
    let corrupt = |why: &str| corrupt(place, why);
    let read: ReadReceipt = serde_json::from_str(text).map_err(|e| corrupt(&format!("not valid JSON ({e})")))?;
    let Some(doc) = read.doc else { return Err(corrupt("not a JSON object")) };
    if check_fields(&doc, place)? == 1 {
        return Ok(migrate_v1(doc));
    }
    let Some(Ledger::Entries { entries: ledger, fault }) = read.ledger else {
        return Err(corrupt("no `ledger` array"));
    };
    match fault {
        None => Ok(Receipt { doc, ledger }),
        Some((i, None)) => Err(corrupt(&format!("ledger entry {i} lacks a string adapter, key or createdBy"))),
        Some((i, Some(e))) => Err(corrupt(&format!("ledger entry {i}: {e}"))),
    }
}

/// The receipt read as a whole `Value`, then each entry's map: the parser before the one-pass read, and
/// still the one for a text in which serde_json's private raw-value key could occur (see [`parse_receipt`]).
fn parse_via_value(text: &str, place: &str) -> Result<Receipt, CoreError> {
    let corrupt = |why: &str| corrupt(place, why);
    let value: Value = serde_json::from_str(text).map_err(|e| corrupt(&format!("not valid JSON ({e})")))?;
    let Value::Object(mut doc) = value else { return Err(corrupt("not a JSON object")) };
    if check_fields(&doc, place)? == 1 {
        return Ok(migrate_v1(doc));
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

/// `RECEIPT_CORRUPT` for the receipt at `place`, saying `why`.
fn corrupt(place: &str, why: &str) -> CoreError {
    CoreError::new(
        ErrorCode::ReceiptCorrupt,
        format!("The receipt at {place} cannot be read: {why}. baton keeps it as it is and will not overwrite it; repair or move it by hand."),
    )
    .with("where", place)
}

/// The checks of a receipt's fields but its ledger, in the order both parsers make them: its version (1 or
/// 2), or the refusal (`RECEIPT_VERSION` for a newer one, else `RECEIPT_CORRUPT`). A version-1 receipt is
/// checked only as far as its migration needs.
fn check_fields(doc: &Map<String, Value>, place: &str) -> Result<u8, CoreError> {
    let corrupt = |why: &str| corrupt(place, why);
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
        return Ok(1);
    }
    if !doc.get("history").is_some_and(Value::is_array) {
        return Err(corrupt("no `history` array"));
    }
    if !doc.get("hashKey").is_some_and(Value::is_string) {
        return Err(corrupt("no string `hashKey`"));
    }
    Ok(2)
}

/// A receipt read in one pass: every field as a `Value` (errors as reading the whole text as a `Value`
/// gives) except the ledger, whose entries are read straight into [`LedgerEntry`] (a ledger may hold
/// 100,000: no map per entry). `ledger` keeps its place in `doc` as `null`, as [`Receipt`] wants it.
struct ReadReceipt {
    /// `None`: the text is JSON but not an object.
    doc: Option<Map<String, Value>>,
    /// The last `ledger` field, if any.
    ledger: Option<Ledger>,
}

/// A `ledger` field as read.
enum Ledger {
    /// An array: its entries up to the first element that is not one, and that element's index and why
    /// (`None`: it lacks a string adapter, key or createdBy; `Some`: what [`LedgerEntry::from_fields`]
    /// refused). The elements after it are read (the text must be valid JSON) but not kept.
    Entries { entries: Vec<LedgerEntry>, fault: Option<(usize, Option<String>)> },
    /// Anything else.
    Other,
}

impl<'de> Deserialize<'de> for ReadReceipt {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ReceiptVisitor)
    }
}

impl<'de> Deserialize<'de> for Ledger {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(LedgerVisitor)
    }
}

/// A visitor that reads whatever it is given as a `Value` reads it and answers `$other` for anything but
/// what its `visit_map` / `visit_seq` handle.
macro_rules! read_others {
    ($other:expr) => {
        fn visit_bool<E: serde::de::Error>(self, _: bool) -> Result<Self::Value, E> {
            Ok($other)
        }
        fn visit_i64<E: serde::de::Error>(self, _: i64) -> Result<Self::Value, E> {
            Ok($other)
        }
        fn visit_u64<E: serde::de::Error>(self, _: u64) -> Result<Self::Value, E> {
            Ok($other)
        }
        fn visit_f64<E: serde::de::Error>(self, _: f64) -> Result<Self::Value, E> {
            Ok($other)
        }
        fn visit_str<E: serde::de::Error>(self, _: &str) -> Result<Self::Value, E> {
            Ok($other)
        }
        fn visit_unit<E: serde::de::Error>(self) -> Result<Self::Value, E> {
            Ok($other)
        }
        fn visit_none<E: serde::de::Error>(self) -> Result<Self::Value, E> {
            Ok($other)
        }
        fn visit_some<D: serde::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
            d.deserialize_any(self)
        }
    };
}

struct ReceiptVisitor;

impl<'de> Visitor<'de> for ReceiptVisitor {
    type Value = ReadReceipt;
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<ReadReceipt, A::Error> {
        let mut doc = Map::new();
        let mut ledger = None;
        while let Some(key) = m.next_key::<String>()? {
            if key == "ledger" {
                ledger = Some(m.next_value::<Ledger>()?);
                doc.insert(key, Value::Null);
            } else {
                let value: Value = m.next_value()?;
                doc.insert(key, value);
            }
        }
        Ok(ReadReceipt { doc: Some(doc), ledger })
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<ReadReceipt, A::Error> {
        Value::deserialize(SeqAccessDeserializer::new(seq))?;
        Ok(ReadReceipt { doc: None, ledger: None })
    }
    read_others!(ReadReceipt { doc: None, ledger: None });
}

struct LedgerVisitor;

impl<'de> Visitor<'de> for LedgerVisitor {
    type Value = Ledger;
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Ledger, A::Error> {
        let mut entries = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        let mut fault = None;
        let mut i = 0;
        while let Some(entry) = seq.next_element::<ReadEntry>()? {
            if fault.is_none() {
                match entry {
                    ReadEntry::Fields(f) if f.has_identity_strings() => match LedgerEntry::from_fields(f) {
                        Ok(e) => entries.push(e),
                        Err(e) => fault = Some((i, Some(e))),
                    },
                    _ => fault = Some((i, None)),
                }
            }
            i += 1;
        }
        Ok(Ledger::Entries { entries, fault })
    }
    fn visit_map<A: MapAccess<'de>>(self, m: A) -> Result<Ledger, A::Error> {
        Value::deserialize(MapAccessDeserializer::new(m))?;
        Ok(Ledger::Other)
    }
    read_others!(Ledger::Other);
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
    fn the_one_pass_parser_reads_as_the_value_parser_did() {
        let e = r#"{"adapter":"a","key":"k","createdBy":"baton"}"#;
        let ledgers = [
            "[]".to_owned(),
            format!("[{e}]"),
            format!(
                r#"[{e},{{"z":1,"adapter":"v","provider":{{"t":[1,{{"b":2,"a":1}}]}},"key":"k\u0041\n","id":"i","hash":"h","label":"l","createdBy":"intent","line":"x","parent":"p","inheritedFrom":"b","a":[1]}}]"#
            ),
            r#"[{"adapter":"a","key":"k","createdBy":"baton","label":null,"parent":null,"provider":null}]"#.to_owned(),
            r#"[{"adapter":"a\"\\\n\t/\/","key":"k\r\b\f","createdBy":"baton","x":{"y\n":"z\""}}]"#.to_owned(),
            r#"[{"adapter":"a","key":"k","createdBy":"baton","adapter":"b","x":1,"x":2,"y":3}]"#.to_owned(),
            r#"[{"adapter":"a","key":"k","createdBy":"baton","adapter":1}]"#.to_owned(),
            r#"[{"adapter":1,"key":"k","createdBy":"baton","adapter":"a"}]"#.to_owned(),
            format!(r#"[{e},{{"adapter":"a","key":"k","createdBy":"baton","id":1}}]"#),
            format!(r#"[{e},{{"adapter":"a","key":"k","createdBy":"baton","op":null}}]"#),
            format!(r#"[{e},{{"adapter":"a","key":"k","createdBy":"baton","label":2}}]"#),
            format!(r#"[{e},{{"adapter":"a","key":"k"}}]"#),
            format!(r#"[{e},"a string",{{"adapter":"a"}}]"#),
            format!(r#"[{e},[1,2],{e}]"#),
            format!(r#"[{e},null,1,true,2.5,-3]"#),
            format!(r#"[{e},{{"adapter":"a","key":"k","createdBy":"baton","id":1}},{{"adapter":1}}]"#),
            format!("[{e},{}{}]", "[".repeat(140), "]".repeat(140)),
            format!("[{e},{}1{}]", "[".repeat(120), "]".repeat(120)),
            r#"{"not":"an array"}"#.to_owned(),
            "null".to_owned(),
            r#""text""#.to_owned(),
            format!("[{e},]"),
            format!("[{e}"),
            format!(r#"[{e},{{"adapter":"a\ud800","key":"k","createdBy":"baton"}}]"#),
        ];
        let mut texts: Vec<String> = Vec::new();
        for ledger in &ledgers {
            texts.push(v2(ledger));
            // The ledger named twice: the last one counts, in the first one's place.
            texts.push(format!(
                r#"{{"version":2,"ledger":[{e}],"environment":"preview","scope":"pr-1","lines":{{}},"ledger":{ledger},"history":[],"hashKey":""}}"#
            ));
            texts.push(format!(r#"{{"version":1,"environment":"e","scope":"s","lines":{{}},"ledger":{ledger}}}"#));
            texts.push(format!(r#"{{"version":3,"ledger":{ledger}}}"#));
            texts.push(format!(r#"{{"version":2,"environment":"e","scope":"s","lines":{{}},"ledger":{ledger}}}"#));
        }
        for other in [
            "",
            "{",
            "[]",
            "[1,2",
            "1",
            "\"s\"",
            "null",
            "true",
            r#"{"version":"2"}"#,
            r#"{"version":2.5}"#,
            r#"{"version":0,"lines":{},"scope":"s","environment":"e"}"#,
            "{} x",
            r#"{"a":1,"a":2}"#,
            &format!("{}{}", "[".repeat(200), "]".repeat(200)),
            r#"{"version":2,"environment":"e","scope":"s","lines":{},"history":[],"hashKey":""}"#,
        ] {
            texts.push(other.to_owned());
        }
        for text in &texts {
            let (new, old) = (parse_receipt(text, "p"), parse_via_value(text, "p"));
            assert_eq!(new, old, "{text}");
            if let Ok(r) = new {
                assert_eq!(serde_json::to_string(&r).unwrap(), serde_json::to_string(&old.unwrap()).unwrap());
            }
        }
    }

    /// serde_json's private raw-value key (literal or spelt with `\u` escapes) reads as it always did:
    /// first in an object it must hold a string of JSON, which is read in the object's place.
    #[test]
    fn serde_jsons_raw_value_key_reads_as_it_always_did() {
        let body = r#""version":2,"runId":"run-1","environment":"e","scope":"s","lines":{},"ledger":[],"history":[],"hashKey":"""#;
        let code = |text: &str| parse_receipt(text, "p").err().map(|e| e.code);
        assert_eq!(code(&format!(r#"{{"$serde_json::private::RawValue":1,{body}}}"#)), Some(ErrorCode::ReceiptCorrupt));
        assert_eq!(
            code(&format!(r#"{{"\u0024serde_json::private::RawValue":1,{body}}}"#)),
            Some(ErrorCode::ReceiptCorrupt)
        );
        let entry = r#"{"$serde_json::private::RawValue":1,"adapter":"a","key":"k","createdBy":"baton"}"#;
        let with_entry = format!("{{{}}}", body.replace(r#""ledger":[]"#, &format!(r#""ledger":[{entry}]"#)));
        assert_eq!(code(&with_entry), Some(ErrorCode::ReceiptCorrupt));
        let inner = format!("{{{body}}}");
        let wrapped = serde_json::json!({ "$serde_json::private::RawValue": inner }).to_string();
        assert!(parse_receipt(&inner, "p").is_ok());
        assert_eq!(parse_receipt(&wrapped, "p"), parse_receipt(&inner, "p"));
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
