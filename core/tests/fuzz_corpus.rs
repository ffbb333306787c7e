//! The fuzz targets on stable Rust: every body of `fuzz_bodies` (the same code `cargo fuzz` runs) over its
//! committed corpus `fuzz/corpus/<target>/`, then over seeded mutations of that corpus (bit flips, byte
//! edits, inserted tokens that matter to the parsers, splices, truncations) and random bytes.
//!
//! `BATON_FUZZ_CASES` mutated inputs per target (default 2000), from `BATON_FUZZ_SEED` (default 0);
//! `BATON_FUZZ_TARGET` runs one target. A failing input is written to `target/fuzz-failures/<target>-<case>`
//! (add it to the corpus once fixed) and the test fails naming it. Each target prints
//! `fuzz_corpus: <target> <corpus files> corpus + <cases> mutated = <executions> executions`.

mod fuzz_bodies;
#[path = "fuzz_bodies/inputs.rs"]
mod inputs;
#[allow(dead_code)]
#[path = "sim/rng.rs"]
mod rng;

use inputs::{corpus, mutate};
use rng::Rng;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

/// A failure of one target: the case and the file the input was written to.
#[derive(Debug)]
struct Failure {
    case: String,
    saved: PathBuf,
    message: String,
}

/// Runs `body` on the corpus and `cases` mutations; the number of executions, or the first failure.
fn run_target(
    target: &str,
    body: fn(&[u8]),
    corpus: &[(String, Vec<u8>)],
    cases: u64,
    seed: u64,
    stream: u64,
) -> Result<u64, Failure> {
    let mut rng = Rng::new(seed, stream);
    let mut runs = 0;
    let inputs = corpus.iter().map(|(name, data)| (name.clone(), data.clone()));
    let mutated = (0..cases).map(|i| (format!("mutation-{seed}-{i}"), mutate(&mut rng, corpus)));
    for (case, data) in inputs.chain(mutated) {
        if let Err(panic) = catch_unwind(AssertUnwindSafe(|| body(&data))) {
            let message = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                .unwrap_or_default();
            let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/fuzz-failures");
            let saved = dir.join(format!("{target}-{case}"));
            let _ = std::fs::create_dir_all(&dir);
            let _ = std::fs::write(&saved, &data);
            return Err(Failure { case, saved, message });
        }
        runs += 1;
    }
    Ok(runs)
}

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.trim().parse().ok()).unwrap_or(default)
}

#[test]
fn every_target_over_its_corpus_and_mutations() {
    let cases = env_u64("BATON_FUZZ_CASES", 2000);
    let seed = env_u64("BATON_FUZZ_SEED", 0);
    let only = std::env::var("BATON_FUZZ_TARGET").ok().filter(|t| !t.is_empty());
    let mut failures = Vec::new();
    for (stream, (target, body)) in fuzz_bodies::TARGETS.iter().enumerate() {
        if only.as_deref().is_some_and(|o| o != *target) {
            continue;
        }
        let corpus = corpus(target);
        assert!(corpus.len() >= 10, "the corpus of {target} has {} files; it needs real seeds", corpus.len());
        match run_target(target, *body, &corpus, cases, seed, stream as u64) {
            Ok(runs) => println!("fuzz_corpus: {target} {} corpus + {cases} mutated = {runs} executions", corpus.len()),
            Err(f) => failures.push(format!(
                "{target}: case {} failed ({}); input saved to {}",
                f.case,
                f.message,
                f.saved.display()
            )),
        }
    }
    assert!(failures.is_empty(), "fuzz targets failed:\n{}", failures.join("\n"));
}

#[test]
fn every_target_has_a_corpus_and_a_cargo_fuzz_binary() {
    let fuzz = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz");
    let manifest = std::fs::read_to_string(fuzz.join("Cargo.toml")).expect("fuzz/Cargo.toml");
    for (target, _) in fuzz_bodies::TARGETS {
        assert!(fuzz.join("corpus").join(target).is_dir(), "fuzz/corpus/{target}");
        let source = std::fs::read_to_string(fuzz.join("fuzz_targets").join(format!("{target}.rs")))
            .unwrap_or_else(|e| panic!("fuzz/fuzz_targets/{target}.rs: {e}"));
        assert!(source.contains(&format!("bodies::{target}(")), "fuzz/fuzz_targets/{target}.rs calls its body");
        assert!(manifest.contains(&format!("name = \"{target}\"")), "fuzz/Cargo.toml declares {target}");
    }
}

/// Negative control: the runner finds and reports an input that breaks a property, and saves it.
#[test]
fn the_runner_catches_a_broken_property() {
    fn broken(data: &[u8]) {
        assert!(!data.windows(2).any(|w| w == b".."), "found `..`");
    }
    let corpus = vec![("seed".to_owned(), b"pr-1".to_vec())];
    let failure = run_target("control", broken, &corpus, 5000, 0, 99).expect_err("a `..` is found by mutation");
    assert!(failure.message.contains("found `..`"), "{failure:?}");
    let saved = std::fs::read(&failure.saved).expect("the failing input is saved");
    assert!(saved.windows(2).any(|w| w == b".."));
    assert_eq!(run_target("control", broken, &corpus, 0, 0, 99).ok(), Some(1), "the corpus alone passes");
}

/// The shared ref rule check refuses what git refuses (the full comparison with `git check-ref-format` is
/// in `properties.rs`).
#[test]
fn the_ref_rule_check_refuses_bad_refs() {
    for bad in [
        "refs/heads/a..b",
        "refs/heads/.a",
        "refs/heads/a.lock",
        "refs/heads/a.",
        "refs/heads/a b",
        "refs/heads/a@{b",
        "@",
        "refs//x",
        "x",
    ] {
        assert!(fuzz_bodies::check_ref_format(bad).is_err(), "{bad:?}");
    }
    assert_eq!(fuzz_bodies::check_ref_format("refs/heads/baton-receipts/preview/=2e2e"), Ok(()));
}
