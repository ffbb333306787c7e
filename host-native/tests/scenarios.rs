//! Runs the conformance corpus (`tests/scenarios/*.json`) through the core component in wasmtime, and
//! checks that its transcript equals the native core's, step for step.

#[path = "../../core/tests/runner/mod.rs"]
mod runner;

use baton_native::engine::CoreComponent;

#[test]
fn conformance_corpus_through_the_component() {
    let files = runner::load(&runner::corpus_dir()).unwrap_or_else(|e| panic!("{e}"));
    assert!(!files.is_empty(), "no scenarios found in {}", runner::corpus_dir().display());
    let mut core = CoreComponent::load().expect("the component loads");
    let mut failures = Vec::new();
    for (file, doc) in &files {
        let Ok(doc) = doc else {
            failures.push(format!("{file}: not valid JSON"));
            continue;
        };
        let mut component = |op: &str, input: &str| {
            let request: serde_json::Value = serde_json::from_str(input).map_err(|_| "INTERNAL".to_owned())?;
            core.invoke(op, &request).map(|v| v.to_string()).map_err(|e| e.code)
        };
        let wasm = runner::run(file, doc, &mut component);
        failures.extend(wasm.failures);
        let mut native =
            |op: &str, input: &str| baton_core::api::invoke(op, input).map_err(|e| e.code.as_str().to_owned());
        let reference = runner::run(file, doc, &mut native);
        if wasm.transcript != reference.transcript {
            failures.push(format!(
                "{file}: the component's transcript differs from the native core's:\n{:#?}\nvs\n{:#?}",
                wasm.transcript, reference.transcript
            ));
        }
    }
    assert!(failures.is_empty(), "{} failure(s):\n\n{}", failures.len(), failures.join("\n\n"));
}
