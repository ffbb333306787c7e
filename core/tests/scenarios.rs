//! Runs the conformance corpus (`tests/scenarios/*.json`) against the native core.

mod runner;

use baton_core::api::invoke;

#[test]
fn conformance_corpus() {
    let files = runner::load(&runner::corpus_dir()).unwrap_or_else(|e| panic!("{e}"));
    assert!(!files.is_empty(), "no scenarios found in {}", runner::corpus_dir().display());
    let mut failures = Vec::new();
    let mut steps = 0;
    for (file, doc) in &files {
        let doc = match doc {
            Ok(doc) => doc,
            Err(e) => {
                failures.push(format!("{file}: {e}"));
                continue;
            }
        };
        if runner::journey::is_journey(doc) {
            let mut run = runner::journey::NativeRun::default();
            let outcome = runner::journey::run(file, doc, &mut run);
            runner::write_transcript(file, "native", &outcome.transcript);
            steps += outcome.transcript.len();
            failures.extend(outcome.failures);
            continue;
        }
        let mut lease = runner::NativeLease::default();
        let mut native = |op: &str, input: &str| {
            if op.starts_with("lease-") {
                runner::lease_step(&mut lease, op, input)
            } else {
                invoke(op, input).map_err(|e| e.code.as_str().to_owned())
            }
        };
        let outcome = runner::run(file, doc, &mut native);
        steps += outcome.transcript.len();
        failures.extend(outcome.failures);
    }
    assert!(
        failures.is_empty(),
        "{} failure(s) in {} scenario file(s):\n\n{}",
        failures.len(),
        files.len(),
        failures.join("\n\n")
    );
    eprintln!("{} scenario files, {steps} steps passed", files.len());
}

/// The runner itself: a wrong expectation, a wrong error and a malformed step are all reported.
#[test]
fn runner_reports_every_failure() {
    let doc = serde_json::json!({"name": "self-test", "steps": [
        {"op": "scope-for", "input": {"branch": "main"}, "expect": {"scope": "main"}},
        {"op": "scope-for", "input": {"branch": "main"}, "expect": {"scope": "pr-1"}},
        {"op": "cell-path", "input": {"env": "a b", "scope": "x"}, "expectError": "LOCK_HELD"},
        {"op": "cell-path", "input": {"env": "e", "scope": "x"}, "expect": {"dir": "e/x"}, "expectError": "USAGE"},
        {"op": "cell-files", "expect": ["lock.json"]},
    ]});
    let mut native = |op: &str, input: &str| invoke(op, input).map_err(|e| e.code.as_str().to_owned());
    let outcome = runner::run("self-test.json", &doc, &mut native);
    let steps: Vec<&str> = outcome.failures.iter().map(|f| f.split(':').next().unwrap_or("")).collect();
    assert_eq!(
        steps,
        [
            "self-test.json step 1 (scope-for)",
            "self-test.json step 2 (cell-path)",
            "self-test.json step 3 (cell-path)",
            "self-test.json step 4 (cell-files)"
        ],
        "{outcome:#?}"
    );
    assert_eq!(outcome.transcript.len(), 4, "the malformed step does not run");
    assert_eq!(outcome.transcript[2], serde_json::json!({"op": "cell-path", "error": "USAGE"}));
}
