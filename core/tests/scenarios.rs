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
        let mut native = |op: &str, input: &str| invoke(op, input).map_err(|e| e.code.as_str().to_owned());
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
