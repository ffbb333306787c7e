//! The conformance-corpus runner shared by the Rust runners (`tests/scenarios/README.md` is the format).
//!
//! [`run`] takes a scenario and an `invoke` function (the native core, or the component in wasmtime) and
//! returns the transcript and every failure; nothing is written to disk. Include it from another crate's
//! test with `#[path = ".../core/tests/runner/mod.rs"] mod runner;`. Run journeys (files with `journey`
//! instead of `steps`) go through [`journey::run`] instead.

use serde_json::{Value, json};
use std::path::{Path, PathBuf};

pub(crate) mod journey;
pub(crate) mod native_run;

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

/// Writes `transcript` to `$BATON_TRANSCRIPT_DIR/<file stem>.<runner>.json` when that variable is set (to
/// read or diff what a runner saw; the Node runner writes `<stem>.node.json` the same way).
pub(crate) fn write_transcript(file: &str, runner: &str, transcript: &[Value]) {
    let Some(dir) = std::env::var_os("BATON_TRANSCRIPT_DIR") else {
        return;
    };
    let dir = PathBuf::from(dir);
    let stem = file.strip_suffix(".json").unwrap_or(file);
    let text = serde_json::to_string_pretty(transcript).unwrap_or_default() + "\n";
    if let Err(e) =
        std::fs::create_dir_all(&dir).and_then(|()| std::fs::write(dir.join(format!("{stem}.{runner}.json")), text))
    {
        eprintln!("cannot write the transcript of {file} to {}: {e}", dir.display());
    }
}

/// What running one scenario gave.
#[derive(Debug, Default)]
pub(crate) struct Outcome {
    /// `[{op, ok: answer} | {op, error: code}]`, one entry per step that ran.
    pub(crate) transcript: Vec<Value>,
    /// One diff-like message per failed step (or malformed scenario), prefixed with file and step index.
    pub(crate) failures: Vec<String>,
}

/// The ownership ops whose request takes a cell (`succession`, `parent-cell`, `approval`, `receipt-parse`
/// and `scope-names` take none).
const CELL_OPS: [&str; 13] = [
    "fenced-write",
    "claim-take",
    "claim-free",
    "claim-move",
    "run-begin",
    "run-finish",
    "ledger-intend",
    "ledger-record",
    "ledger-forget",
    "ledger-check",
    "handover",
    "destroy-plan",
    "scope-status",
];

/// Ops whose request takes the current cell: `lock-*`, `fence-check` and [`CELL_OPS`] (the lease-* steps
/// never do).
fn takes_cell(op: &str) -> bool {
    op.starts_with("lock-") || op == "fence-check" || CELL_OPS.contains(&op)
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

/// A lease machine behind one of the bindings, for the `lease-*` steps (one lease per scenario).
pub(crate) trait LeaseApi {
    /// `lease-new`: creates the scenario's lease from its JSON configuration.
    fn create(&mut self, config: &str) -> Result<(), String>;
    /// `lease-acquire`.
    fn acquire(&mut self, now: u64) -> Result<(), String>;
    /// `lease-release`.
    fn release(&mut self, now: u64) -> Result<(), String>;
    /// `lease-timeout`.
    fn timeout(&mut self, now: u64) -> Result<(), String>;
    /// `lease-result`.
    fn store_result(&mut self, id: u64, outcome: &str, now: u64) -> Result<(), String>;
    /// The next action as JSON text.
    fn poll_action(&mut self) -> Result<Option<String>, String>;
    /// When to wake the machine.
    fn poll_timeout(&mut self) -> Result<Option<u64>, String>;
    /// `lease-token`.
    fn token(&mut self, now: u64) -> Result<Option<u64>, String>;
}

/// Runs one `lease-*` step: calls the machine, then drains it. Answers `{actions, timeout}` (or `{}` for
/// `lease-new`, `{token}` for `lease-token`) as JSON text; errors by code.
pub(crate) fn lease_step(api: &mut dyn LeaseApi, op: &str, input: &str) -> Result<String, String> {
    let input: Value = serde_json::from_str(input).map_err(|_| "INTERNAL".to_owned())?;
    let num = |k: &str| input.get(k).and_then(Value::as_u64).ok_or_else(|| "INTERNAL".to_owned());
    match op {
        "lease-new" => return api.create(&input.to_string()).map(|()| "{}".to_owned()),
        "lease-token" => return Ok(json!({ "token": api.token(num("now")?)? }).to_string()),
        "lease-acquire" => api.acquire(num("now")?)?,
        "lease-release" => api.release(num("now")?)?,
        "lease-timeout" => api.timeout(num("now")?)?,
        "lease-result" => {
            let outcome = input.get("result").ok_or_else(|| "INTERNAL".to_owned())?.to_string();
            api.store_result(num("id")?, &outcome, num("now")?)?;
        }
        _ => return Err("INTERNAL".into()),
    }
    let mut actions = Vec::new();
    while let Some(a) = api.poll_action()? {
        actions.push(serde_json::from_str::<Value>(&a).map_err(|_| "INTERNAL".to_owned())?);
    }
    Ok(json!({ "actions": actions, "timeout": api.poll_timeout()? }).to_string())
}

/// The native lease machine for the `lease-*` steps.
#[derive(Default)]
pub(crate) struct NativeLease(Option<baton_core::lease::LeaseMachine>);

impl NativeLease {
    fn machine(&mut self) -> Result<&mut baton_core::lease::LeaseMachine, String> {
        self.0.as_mut().ok_or_else(|| "INTERNAL".to_owned())
    }
}

fn code(e: baton_core::CoreError) -> String {
    e.code.as_str().to_owned()
}

impl LeaseApi for NativeLease {
    fn create(&mut self, config: &str) -> Result<(), String> {
        self.0 = Some(baton_core::api::lease_new(config).map_err(code)?);
        Ok(())
    }
    fn acquire(&mut self, now: u64) -> Result<(), String> {
        self.machine()?.acquire(now).map_err(code)
    }
    fn release(&mut self, now: u64) -> Result<(), String> {
        self.machine()?.release(now);
        Ok(())
    }
    fn timeout(&mut self, now: u64) -> Result<(), String> {
        self.machine()?.handle_timeout(now);
        Ok(())
    }
    fn store_result(&mut self, id: u64, outcome: &str, now: u64) -> Result<(), String> {
        baton_core::api::lease_store_result(self.machine()?, id, outcome, now).map_err(code)
    }
    fn poll_action(&mut self) -> Result<Option<String>, String> {
        Ok(baton_core::api::lease_poll_action(self.machine()?))
    }
    fn poll_timeout(&mut self) -> Result<Option<u64>, String> {
        Ok(self.machine()?.poll_timeout())
    }
    fn token(&mut self, now: u64) -> Result<Option<u64>, String> {
        Ok(self.machine()?.fencing_token(now))
    }
}
