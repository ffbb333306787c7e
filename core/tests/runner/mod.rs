//! The conformance-corpus runner shared by the Rust runners (`tests/scenarios/README.md` is the format).
//!
//! [`run`] takes a scenario and an `invoke` function (the native core, or the component in wasmtime) and
//! returns the transcript and every failure; nothing is written to disk. Include it from another crate's
//! test with `#[path = ".../core/tests/runner/mod.rs"] mod runner;`.

use serde_json::{Value, json};
use std::path::{Path, PathBuf};

/// The corpus directory of this repository.
pub(crate) fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/scenarios")
}

/// One corpus file: its name and its parsed document (or why it does not parse).
pub(crate) type Loaded = (String, Result<Value, String>);

/// What a runner calls: `(op, request JSON)` -> the answer's JSON text, or the error code.
pub(crate) type Invoke<'a> = dyn FnMut(&str, &str) -> Result<String, String> + 'a;

/// Every `*.json` file of `dir`, sorted by name.
pub(crate) fn load(dir: &Path) -> Result<Vec<Loaded>, String> {
    let entries = std::fs::read_dir(dir).map_err(|e| format!("cannot list {}: {e}", dir.display()))?;
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    Ok(files
        .into_iter()
        .map(|p| {
            let name = p.file_name().map_or_else(String::new, |n| n.to_string_lossy().into_owned());
            let doc = std::fs::read_to_string(&p)
                .map_err(|e| e.to_string())
                .and_then(|t| serde_json::from_str::<Value>(&t).map_err(|e| format!("not valid JSON: {e}")));
            (name, doc)
        })
        .collect())
}

/// What running one scenario gave.
#[derive(Debug, Default)]
pub(crate) struct Outcome {
    /// `[{op, ok: answer} | {op, error: code}]`, one entry per step that ran.
    pub(crate) transcript: Vec<Value>,
    /// One diff-like message per failed step (or malformed scenario), prefixed with file and step index.
    pub(crate) failures: Vec<String>,
}

/// Ops whose request takes the current cell.
fn takes_cell(op: &str) -> bool {
    op.starts_with("lock-") || op == "fence-check"
}

/// Runs the scenario `doc` of `file`. `invoke(op, request)` answers the JSON text or the error code.
pub(crate) fn run(file: &str, doc: &Value, invoke: &mut Invoke<'_>) -> Outcome {
    let mut out = Outcome::default();
    let fail = |out: &mut Outcome, at: &str, msg: String| out.failures.push(format!("{file} {at}: {msg}"));
    let Some(obj) = doc.as_object() else {
        fail(&mut out, "scenario", "not a JSON object".into());
        return out;
    };
    if let Some(k) = obj.keys().find(|k| !["name", "description", "cell", "steps"].contains(&k.as_str())) {
        fail(&mut out, "scenario", format!("unknown key `{k}`"));
    }
    if !obj.get("name").is_some_and(Value::is_string) {
        fail(&mut out, "scenario", "no string `name`".into());
    }
    let steps = match obj.get("steps").and_then(Value::as_array) {
        Some(s) if !s.is_empty() => s,
        _ => {
            fail(&mut out, "scenario", "`steps` must be a non-empty array".into());
            return out;
        }
    };
    let mut cell = obj.get("cell").cloned();
    for (i, step) in steps.iter().enumerate() {
        let op = step.get("op").and_then(Value::as_str).unwrap_or("");
        let at = format!("step {i} ({op})");
        if let Some(k) = step
            .as_object()
            .and_then(|s| s.keys().find(|k| !["op", "input", "expect", "expectError"].contains(&k.as_str())))
        {
            fail(&mut out, &at, format!("unknown key `{k}`"));
        }
        let (expect, expect_error) = (step.get("expect"), step.get("expectError"));
        if op.is_empty() || expect.is_some() == expect_error.is_some() || expect_error.is_some_and(|e| !e.is_string()) {
            fail(
                &mut out,
                &at,
                "a step needs a string `op` and exactly one of `expect` / `expectError` (a string)".into(),
            );
            continue;
        }
        let expect_error = expect_error.and_then(Value::as_str);
        let mut input = step.get("input").cloned().unwrap_or_else(|| json!({}));
        if takes_cell(op)
            && let (Some(req), Some(c)) = (input.as_object_mut(), &cell)
            && !req.contains_key("cell")
        {
            req.insert("cell".into(), c.clone());
        }
        let result = invoke(op, &input.to_string())
            .map(|text| serde_json::from_str::<Value>(&text).unwrap_or(Value::String(text)));
        out.transcript.push(match &result {
            Ok(answer) => json!({ "op": op, "ok": answer }),
            Err(code) => json!({ "op": op, "error": code }),
        });
        match (&result, expect, expect_error) {
            (Ok(answer), Some(want), _) => {
                let mut diffs = Vec::new();
                mismatches("$", want, answer, &mut diffs);
                if !diffs.is_empty() {
                    fail(&mut out, &at, format!("answer differs\n{}\n  answer: {answer}", diffs.join("\n")));
                }
            }
            (Err(code), _, Some(want)) if code == want => {}
            (Err(code), _, want) => fail(
                &mut out,
                &at,
                format!(
                    "\n  - expected {}\n  + got error {code}",
                    want.map_or_else(|| "an answer".to_owned(), |w| format!("error {w}"))
                ),
            ),
            (Ok(answer), _, Some(want)) => {
                fail(&mut out, &at, format!("\n  - expected error {want}\n  + got answer {answer}"))
            }
            (Ok(_), None, None) => {}
        }
        if let (Ok(answer), Some(c)) = (&result, cell.as_mut()) {
            apply(c, answer.get("changes"));
        }
    }
    out
}

/// Applies an answer's `changes` to the cell, as a store commits them.
fn apply(cell: &mut Value, changes: Option<&Value>) {
    let Some(obj) = cell.as_object_mut() else {
        return;
    };
    let files = obj.entry("files").or_insert_with(|| json!({}));
    for change in changes.and_then(Value::as_array).into_iter().flatten() {
        let (Some(files), Some(file)) = (files.as_object_mut(), change.get("file").and_then(Value::as_str)) else {
            continue;
        };
        match change.get("op").and_then(Value::as_str) {
            Some("write") => {
                files.insert(file.to_owned(), change.get("content").cloned().unwrap_or(Value::Null));
            }
            Some("delete") => {
                files.remove(file);
            }
            _ => {}
        }
    }
}

/// Subset match: every key of an expected object present and matching, arrays of equal length matched
/// element by element, scalars equal. Pushes one `- expected / + actual` line pair per mismatch.
pub(crate) fn mismatches(path: &str, want: &Value, got: &Value, out: &mut Vec<String>) {
    match (want, got) {
        (Value::Object(w), Value::Object(g)) => {
            for (k, wv) in w {
                match g.get(k) {
                    Some(gv) => mismatches(&format!("{path}.{k}"), wv, gv, out),
                    None => out.push(format!("  {path}.{k}\n    - expected {wv}\n    + missing")),
                }
            }
        }
        (Value::Array(w), Value::Array(g)) if w.len() == g.len() => {
            for (i, (wv, gv)) in w.iter().zip(g).enumerate() {
                mismatches(&format!("{path}[{i}]"), wv, gv, out);
            }
        }
        _ if want == got => {}
        _ => out.push(format!("  {path}\n    - expected {want}\n    + actual   {got}")),
    }
}
