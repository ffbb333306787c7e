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
            let mut run = runner::native_run::NativeRun::default();
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

/// The journey runner itself: a wrong expectation, a wrong error and a malformed step are reported.
#[test]
fn journey_runner_reports_every_failure() {
    let config = serde_json::json!({ "job": "run", "context": { "env": "preview", "scope": "main", "branch": "main" },
        "random": "0123456789abcdef0123456789abcdef0123456789" });
    let doc = serde_json::json!({"name": "self-test", "journey": [
        {"do": "create", "config": config, "expect": {"holder": "run-01234567"}},
        {"do": "start", "expect": {"actions": []}},
        {"do": "store", "expectError": "LOCK_HELD"},
        {"do": "outside", "cell": "no-slash", "op": "lock-read", "expect": {}},
        {"do": "start", "expect": {}},
    ]});
    let outcome = runner::journey::run("self-test.json", &doc, &mut runner::native_run::NativeRun::default());
    let steps: Vec<&str> = outcome.failures.iter().map(|f| f.split(':').next().unwrap_or("")).collect();
    assert_eq!(
        steps,
        ["self-test.json step 1 (start)", "self-test.json step 2 (store)", "self-test.json step 3 (outside)"],
        "{outcome:#?}"
    );
    assert_eq!(outcome.transcript.len(), 4, "nothing runs after a broken step");
}

/// A machine that says what it is scripted to say, to show that the journey runner catches a machine that
/// breaks the guarantees a host can see.
struct Scripted(Vec<Vec<serde_json::Value>>, std::collections::VecDeque<serde_json::Value>);

impl Scripted {
    fn next(&mut self) -> Result<(), String> {
        if !self.0.is_empty() {
            self.1.extend(self.0.remove(0));
        }
        Ok(())
    }
}

impl runner::journey::RunApi for Scripted {
    fn transact(
        &mut self,
        _: Option<u64>,
        _: &str,
        _: &serde_json::Value,
    ) -> Result<serde_json::Value, serde_json::Value> {
        Ok(serde_json::json!({}))
    }
    fn create(&mut self, _: &serde_json::Value) -> Result<String, String> {
        Ok("scripted".into())
    }
    fn start(&mut self, _: u64) -> Result<(), String> {
        self.next()
    }
    fn work_ended(&mut self, _: &serde_json::Value, _: u64) -> Result<(), String> {
        self.next()
    }
    fn signal(&mut self, _: &str, _: u64) -> Result<(), String> {
        self.next()
    }
    fn timeout(&mut self, _: u64) -> Result<(), String> {
        self.next()
    }
    fn store_result(&mut self, _: u64, _: &serde_json::Value, _: u64) -> Result<(), String> {
        self.next()
    }
    fn poll_action(&mut self) -> Result<Option<serde_json::Value>, String> {
        Ok(self.1.pop_front())
    }
    fn poll_timeout(&mut self) -> Result<Option<u64>, String> {
        Ok(None)
    }
}

#[test]
fn journey_runner_catches_a_machine_that_breaks_the_guarantees() {
    use serde_json::json;
    let work = json!({"type": "start-work", "env": {}, "epoch": 1, "label": "x"});
    let release = json!({"type": "store", "id": 1, "op": "lock-release", "request": {}});
    let done = json!({"type": "done", "verdict": {"exit": 0, "ok": true, "fields": {}}});
    let cases = [
        (vec![vec![work.clone(), release]], "the lock is released while the work may still run"),
        (vec![vec![json!({"type": "signal", "signal": "kill"})]], "a signal for work that is not running"),
        (vec![vec![work.clone(), done.clone()]], "the run is done while the work may still run"),
        (vec![vec![done, json!({"type": "note", "text": "late"})]], "an action after `done`"),
        (vec![vec![work.clone(), work]], "the work is started twice"),
        (vec![vec![json!({"type": "store", "id": 1, "op": "lock-acquire", "request": {}})]], "the run is not done"),
    ];
    for (script, want) in cases {
        let doc = json!({"name": "broken machine", "journey": [
            {"do": "create", "config": {"context": {"env": "preview", "scope": "main"}}, "expect": {}},
            {"do": "start", "expect": {}},
        ]});
        let outcome = runner::journey::run("broken.json", &doc, &mut Scripted(script, Default::default()));
        assert!(outcome.failures.iter().any(|f| f.contains(want)), "{want}: {:#?}", outcome.failures);
    }
}
