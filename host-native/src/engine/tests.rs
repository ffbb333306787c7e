//! The embedded core loads on every CPU of its architecture, and a refused artifact falls back to an
//! in-memory compile that says why.

use super::{COMPILER, COMPONENT, CoreComponent, PRECOMPILED, config, load_embedded};
use wasmtime::{Config, Engine};

/// An engine whose host reports no optional CPU feature at all: the oldest CPU of the architecture
/// (x86-64 with SSE2 only, ARMv8.0 without LSE). It compiles for the baseline ISA itself.
#[allow(unsafe_code)]
fn oldest_cpu_engine() -> Engine {
    let mut config: Config = config::precompile(env!("BATON_TARGET")).expect("the build target is known");
    // SAFETY: reporting fewer features than the CPU has is conservative: only code needing none of them runs.
    unsafe { config.detect_host_feature(|_| Some(false)) };
    Engine::new(&config).expect("a baseline engine")
}

fn answers(engine: &Engine, component: &wasmtime::component::Component) -> String {
    let mut core = CoreComponent::instantiate(engine, component).expect("instantiates");
    core.scope_for("feat/search", None, None).expect("decides")
}

#[test]
fn the_embedded_core_loads_here_without_a_compile() {
    assert!(!PRECOMPILED.is_empty(), "build.rs precompiled the core for this target");
    let engine = Engine::new(&config::run()).unwrap();
    let (component, refused) = load_embedded(&engine, PRECOMPILED, COMPONENT, COMPILER).unwrap();
    assert_eq!(refused, None);
    assert_eq!(answers(&engine, &component), "branch-feat-search");
}

#[test]
fn the_embedded_core_needs_no_cpu_feature() {
    let engine = oldest_cpu_engine();
    let (component, refused) = load_embedded(&engine, PRECOMPILED, COMPONENT, COMPILER).unwrap();
    assert_eq!(refused, None, "the baseline artifact loads on a CPU without any optional feature");
    assert_eq!(answers(&engine, &component), "branch-feat-search");
}

/// A component with one core module and no exports: compiles in milliseconds even in a debug build.
fn tiny() -> Vec<u8> {
    wat::parse_str("(component (core module (func (export \"f\") (result i32) i32.const 7)))").expect("valid WAT")
}

#[test]
fn an_artifact_for_cpu_features_this_cpu_lacks_is_compiled_in_memory_instead() {
    // The control: what a build compiled for the build machine's own CPU would have embedded (the settings,
    // not the code, decide whether wasmtime takes it, so a tiny component stands in for the core).
    let native = Engine::new(&config::run()).unwrap().precompile_component(&tiny()).unwrap();
    let (_, refused) = load_embedded(&oldest_cpu_engine(), &native, &tiny(), COMPILER).expect("compiles in memory");
    if cfg!(target_arch = "x86_64") {
        // Every x86-64 machine that runs these tests has SSE3 at least, which the native artifact then uses.
        let why = refused.expect("refused on a CPU without the features");
        assert!(why.starts_with("the core compiled into this binary cannot run here ("), "{why}");
        assert!(why.contains("compiled it in memory instead"), "{why}");
        assert!(!why.contains('\n'), "one line: {why}");
    }
}

#[test]
fn a_damaged_or_missing_artifact_is_compiled_in_memory_instead() {
    let engine = Engine::new(&config::run()).unwrap();
    let (component, refused) = load_embedded(&engine, &[0xCC; 4096], COMPONENT, COMPILER).unwrap();
    let why = refused.expect("wasmtime refuses bytes that are no artifact");
    assert!(why.starts_with("the core compiled into this binary cannot run here ("), "{why}");
    assert!(!why.contains('\n'), "one line: {why}");
    assert_eq!(answers(&engine, &component), "branch-feat-search", "the core compiled in memory answers");

    let (_, refused) = load_embedded(&engine, &[], &tiny(), COMPILER).expect("compiles in memory");
    assert!(refused.expect("no artifact").contains("carries no precompiled core"));
}

#[cfg(target_os = "linux")]
#[test]
fn the_embedded_core_runs_in_place_from_the_binary() {
    let (engine, component) = super::in_place::load().expect("wasmtime accepts the core in the binary's text");
    assert_eq!(answers(&engine, &component), "branch-feat-search");
}

#[test]
fn without_a_compiler_a_refused_artifact_is_an_error_that_names_the_fix() {
    let engine = Engine::new(&config::run()).unwrap();
    for artifact in [&[][..], &[0xCC; 4096][..]] {
        let e = load_embedded(&engine, artifact, &tiny(), None).map(|_| ()).expect_err("no compiler, no core");
        assert_eq!(e.code, "INTERNAL");
        assert!(e.message.contains("--features compiler"), "{}", e.message);
    }
    // The embedded artifact itself needs none.
    assert!(load_embedded(&engine, PRECOMPILED, COMPONENT, None).is_ok());
}
